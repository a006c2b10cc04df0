"""The Diagnosis tab: every check grouped by area, run in the background, findings explained.

Support staff walk a user through it: a failing check expands to its findings; selecting one shows
the explanation, the evidence (path:line, selectable and copyable) and the fix steps, with a
"Fix…" button that emits :attr:`DiagnosisTab.fixRequested` (the fix dialogs connect to it; see
rocmdesk.ui.fix_dialog.install_fix_handler). Checks run in a worker thread, so the window stays
responsive; results arrive through queued signals.
"""

from __future__ import annotations

import html
import io
import logging
import os
from collections.abc import Callable

from PySide6 import QtCore, QtGui, QtWidgets

from rocmdesk.commands.diagnose import Style, fix_audience, render_text
from rocmdesk.diagnosis.engine import AREAS
from rocmdesk.diagnosis.metadata import check_label
from rocmdesk.diagnosis.model import CheckResult, Finding, Severity, Status
from rocmdesk.ui import theme
from rocmdesk.ui.background import Background
from rocmdesk.ui.context import AppContext

log = logging.getLogger(__name__)

ROLE_KIND = QtCore.Qt.ItemDataRole.UserRole + 1  # "area", "check", "finding"
ROLE_ID = QtCore.Qt.ItemDataRole.UserRole + 2  # check id
ROLE_INDEX = QtCore.Qt.ItemDataRole.UserRole + 3  # finding index within its check

FILTERS = (("All checks", None), ("Problems only", "problems"), ("Errors", Severity.ERROR),
           ("Warnings", Severity.WARNING), ("Info", Severity.INFO))
CHECK_COLUMN_MIN, CHECK_COLUMN_MAX = 200, 340  # px of the check-name column


def _worst(result: CheckResult) -> Severity | None:
    if not result.findings:
        return None
    return min((f.severity for f in result.findings), key=lambda s: s.rank)


def status_color(result: CheckResult | None, palette: theme.Palette) -> str:
    if result is None:
        return palette.muted
    if result.status is Status.PASS:
        return palette.ok
    if result.status is Status.SKIP:
        return palette.muted
    if result.status is Status.ERROR:
        return palette.broken
    return {Severity.ERROR: palette.critical, Severity.WARNING: palette.hot,
            Severity.INFO: palette.info}.get(_worst(result), palette.critical)


STATUS_WORDS = {Status.PASS: "passed", Status.FAIL: "failed", Status.SKIP: "skipped", Status.ERROR: "could not run"}


def result_text(result: CheckResult) -> str:
    """The Result column: a failure counts its findings, a skip says so before its reason (grey), a
    pass shows what was found fine."""
    if result.status is Status.FAIL:
        worst = _worst(result)
        count = len(result.findings)
        return f"{worst.value if worst else 'fail'} · {count} finding{'s' if count != 1 else ''}"
    if result.status is Status.SKIP:
        return f"skipped — {result.reason}" if result.reason else "skipped"
    if result.status is Status.ERROR:
        return f"could not run — {result.reason}" if result.reason else "could not run"
    return result.reason or "passed"


def status_glyph(result: CheckResult | None) -> str:
    if result is None:
        return "…"
    if result.status is Status.FAIL and _worst(result) is Severity.INFO:
        return "i"
    return {Status.PASS: "✓", Status.FAIL: "✕", Status.SKIP: "–", Status.ERROR: "!"}[result.status]


_ICON_CACHE: dict[tuple[str, str, int], QtGui.QIcon] = {}


def status_icon(glyph: str, color: str, size: int = 16) -> QtGui.QIcon:
    """A filled circle with a glyph: readable in both themes, without icon files."""
    key = (glyph, color, size)
    if key not in _ICON_CACHE:
        ratio = 2
        pixmap = QtGui.QPixmap(size * ratio, size * ratio)
        pixmap.setDevicePixelRatio(ratio)
        pixmap.fill(QtCore.Qt.GlobalColor.transparent)
        painter = QtGui.QPainter(pixmap)
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
        painter.setPen(QtCore.Qt.PenStyle.NoPen)
        painter.setBrush(QtGui.QColor(color))
        painter.drawEllipse(QtCore.QRectF(1, 1, size - 2, size - 2))
        font = painter.font()
        font.setBold(True)
        font.setPixelSize(int(size * 0.68))
        painter.setFont(font)
        painter.setPen(QtGui.QColor(theme.ink_on(color)))  # the glyph tells pass/fail/skip apart: it must read
        painter.drawText(QtCore.QRectF(0, 0, size, size), QtCore.Qt.AlignmentFlag.AlignCenter, glyph)
        painter.end()
        _ICON_CACHE[key] = QtGui.QIcon(pixmap)
    return _ICON_CACHE[key]


def subject_heading(ctx: AppContext) -> str:
    """What the diagnosis describes, in the banner's terms: this machine, a snapshot, a root folder or the
    demo machine (whose checks run on its shipped bundle, never on this computer)."""
    root = getattr(ctx, "root", None)
    bundle = getattr(ctx, "bundle_path", None)
    if getattr(ctx, "mode", "") == "demo":
        target = (getattr(ctx, "extras", None) or {}).get("target")
        name = getattr(target, "source", "")
        return f"The demo machine ({name})" if name else "The demo machine"
    if getattr(ctx, "mode", "") == "snapshot" and bundle:
        return f"This snapshot ({os.path.basename(bundle)})"
    if root is not None and not root.is_live:
        return f"This root folder ({root.root})"
    return "This machine"


class DiagnosisTab(QtWidgets.QWidget):
    """Checks by area with status icons; findings with evidence and fixes; re-run, filter, copy."""

    fixRequested = QtCore.Signal(object)  # a Finding whose fix the user asked to apply
    diagnosisFinished = QtCore.Signal(object)  # the DiagnosisReport
    checkRerun = QtCore.Signal(object)  # the new CheckResult

    def __init__(self, ctx: AppContext, parent: QtWidgets.QWidget | None = None,
                 diagnose_fn: Callable | None = None, rerun_fn: Callable | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.report = None
        self.running = False
        self._generation = 0
        self._pending_rerun: set[str] = set()
        self._diagnose_fn = diagnose_fn
        self._rerun_fn = rerun_fn
        self._check_items: dict[str, QtWidgets.QTreeWidgetItem] = {}
        self._area_items: dict[str, QtWidgets.QTreeWidgetItem] = {}
        self._work = Background(self)
        self._build()

    # -- layout ------------------------------------------------------------------------------------
    def _build(self) -> None:
        self.run_button = QtWidgets.QPushButton("Run all checks")
        self.run_button.clicked.connect(self.run_all)
        self.rerun_button = QtWidgets.QPushButton("Re-run selected")
        self.rerun_button.setEnabled(False)
        self.rerun_button.clicked.connect(self.rerun_selected)
        self.filter_box = QtWidgets.QComboBox()
        self.filter_box.setAccessibleName("Filter by severity")
        for label, _value in FILTERS:
            self.filter_box.addItem(label)
        self.filter_box.currentIndexChanged.connect(lambda _i: self._apply_filter())
        self.copy_button = QtWidgets.QPushButton("Copy as text")
        self.copy_button.setEnabled(False)
        self.copy_button.clicked.connect(self.copy_as_text)
        self.progress = QtWidgets.QProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.setTextVisible(True)
        self.progress.hide()
        self.summary = QtWidgets.QLabel("Not run yet")
        self.summary.setObjectName("muted")

        bar = QtWidgets.QHBoxLayout()
        bar.addWidget(self.run_button)
        bar.addWidget(self.rerun_button)
        bar.addSpacing(12)
        bar.addWidget(QtWidgets.QLabel("Show:"))
        bar.addWidget(self.filter_box)
        bar.addWidget(self.copy_button)
        bar.addSpacing(12)
        bar.addWidget(self.progress)
        bar.addWidget(self.summary, 1)

        self.tree = QtWidgets.QTreeWidget()
        self.tree.setColumnCount(2)
        self.tree.setHeaderLabels(["Check", "Result"])
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(False)
        self.tree.header().setSectionResizeMode(0, QtWidgets.QHeaderView.ResizeMode.Interactive)
        self.tree.header().setStretchLastSection(True)
        self.tree.setColumnWidth(0, CHECK_COLUMN_MAX)
        self._check_column_fitted = False  # fitted to the names once, then left to the user
        self.tree.currentItemChanged.connect(lambda cur, _prev: self._show_item(cur))
        self.tree.setAccessibleName("Checks")

        self.detail = QtWidgets.QTextBrowser()
        self.detail.setOpenLinks(False)
        self.detail.setAccessibleName("Details")
        self.detail.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse
                                            | QtCore.Qt.TextInteractionFlag.TextSelectableByKeyboard)
        self.fix_button = QtWidgets.QPushButton("Fix…")
        self.fix_button.setEnabled(False)
        self.fix_button.clicked.connect(self._request_fix)
        self.copy_evidence_button = QtWidgets.QPushButton("Copy evidence")
        self.copy_evidence_button.setEnabled(False)
        self.copy_evidence_button.clicked.connect(self.copy_evidence)
        self.fix_hint = QtWidgets.QLabel("")
        self.fix_hint.setObjectName("muted")
        self.fix_hint.setWordWrap(True)

        right = QtWidgets.QWidget()
        right_lay = QtWidgets.QVBoxLayout(right)
        right_lay.setContentsMargins(0, 0, 0, 0)
        right_lay.addWidget(self.detail, 1)
        buttons = QtWidgets.QHBoxLayout()
        buttons.addWidget(self.fix_button)
        buttons.addWidget(self.copy_evidence_button)
        buttons.addWidget(self.fix_hint, 1)
        right_lay.addLayout(buttons)

        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        split.addWidget(self.tree)
        split.addWidget(right)
        split.setStretchFactor(0, 5)
        split.setStretchFactor(1, 6)

        layout = QtWidgets.QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(split, 1)
        self._show_placeholder()

    # -- running ----------------------------------------------------------------------------------
    def _diagnose(self):
        if self._diagnose_fn is not None:
            return self._diagnose_fn
        from rocmdesk.diagnosis.runner import diagnose

        return diagnose

    def _rerun(self):
        if self._rerun_fn is not None:
            return self._rerun_fn
        from rocmdesk.diagnosis.runner import rerun

        return rerun

    def _python_envs(self) -> tuple[str, ...]:
        return tuple(self.ctx.extras.get("python_envs", ()) if getattr(self.ctx, "extras", None) else ())

    def run_all(self) -> None:
        """Run every check in a worker thread; the tree fills in as results arrive."""
        if self.running:
            return
        self.running = True
        self._generation += 1
        generation = self._generation
        self.run_button.setEnabled(False)
        self.rerun_button.setEnabled(False)
        self.progress.setRange(0, 0)
        self.progress.setValue(0)
        self.progress.setFormat("starting…")
        self.progress.show()
        self.summary.setText("Checking…")
        fn = self._diagnose()
        root, runner, envs = self.ctx.root, self.ctx.runner, self._python_envs()
        progress = self._work.relay(self._on_progress)
        # whose machine the report is of (the window's source): only the engine's own diagnose takes it
        target = (getattr(self.ctx, "extras", None) or {}).get("target") if self._diagnose_fn is None else None
        extra = {"target": target} if target is not None else {}

        def failed(exc: BaseException) -> None:  # the engine catches check errors; this is a broken run
            log.error("diagnosis failed: %s: %s", type(exc).__name__, exc, exc_info=exc)
            self._on_failed(f"{type(exc).__name__}: {exc}", generation)

        self._work.submit(lambda: fn(root, runner=runner, python_envs=envs, progress=progress, **extra),
                          lambda report: self._on_finished(report, generation), failed, name="rocmdesk-diagnosis")

    def recheck(self, check_id: str) -> None:
        """Run one check again (after a fix, or from "Re-run selected")."""
        if self.running or check_id in self._pending_rerun or self.report is None:
            return
        self._pending_rerun.add(check_id)
        item = self._check_items.get(check_id)
        if item is not None:
            item.setIcon(0, status_icon("…", theme.current().muted))
            item.setText(1, "checking again…")
        fn = self._rerun()
        root, runner, envs = self.ctx.root, self.ctx.runner, self._python_envs()
        generation = self._generation

        def failed(exc: BaseException) -> None:
            log.error("re-running %s failed: %s", check_id, exc, exc_info=exc)
            self._on_rerun_done(CheckResult(check_id, self._area_of(check_id), check_id, Status.ERROR,
                                            f"{type(exc).__name__}: {exc}"), generation)

        self._work.submit(lambda: fn(root, check_id, runner=runner, python_envs=envs),
                          lambda result: self._on_rerun_done(result, generation), failed,
                          name=f"rocmdesk-recheck-{check_id}")

    def rerun_selected(self) -> None:
        check_id = self._selected_check_id()
        if check_id:
            self.recheck(check_id)

    def _area_of(self, check_id: str) -> str:
        if self.report is not None:
            for r in self.report.results:
                if r.id == check_id:
                    return r.area
        return AREAS[0]

    # -- results arriving --------------------------------------------------------------------------------
    def _on_progress(self, result: CheckResult, index: int, total: int) -> None:
        if not self.running:
            return
        if self.progress.maximum() != total:
            self.progress.setRange(0, total)
        self.progress.setValue(index + 1)
        self.progress.setFormat(f"{index + 1}/{total}")
        self._set_check(result)

    def _on_finished(self, report, generation: int) -> None:
        if generation != self._generation:
            return
        self.running = False
        self.report = report
        self.progress.hide()
        self.run_button.setEnabled(True)
        self.copy_button.setEnabled(True)
        self._fill(report.results)
        self._update_summary()
        self.rerun_button.setEnabled(self._selected_check_id() is not None)
        self.diagnosisFinished.emit(report)

    def _on_failed(self, message: str, generation: int) -> None:
        if generation != self._generation:
            return
        self.running = False
        self.progress.hide()
        self.run_button.setEnabled(True)
        self.summary.setText("The diagnosis could not run")
        self.detail.setHtml(f"<h3>The diagnosis could not run</h3><p>{html.escape(message)}</p>")

    def _on_rerun_done(self, result: CheckResult, generation: int) -> None:
        self._pending_rerun.discard(result.id)
        if generation != self._generation or self.report is None:
            return
        self.report.replace_result(result)
        selected = self._selected_check_id()
        self._set_check(result)
        self._update_summary()
        self._apply_filter()
        if selected == result.id:
            self.tree.setCurrentItem(self._check_items[result.id])
            self._show_item(self._check_items[result.id])
        self.checkRerun.emit(result)

    # -- the tree ------------------------------------------------------------------------------------------
    def _area_item(self, area: str) -> QtWidgets.QTreeWidgetItem:
        item = self._area_items.get(area)
        if item is None:
            item = QtWidgets.QTreeWidgetItem([area, ""])
            item.setData(0, ROLE_KIND, "area")
            font = item.font(0)
            font.setBold(True)
            item.setFont(0, font)
            item.setFlags(item.flags() & ~QtCore.Qt.ItemFlag.ItemIsSelectable)
            index = sum(1 for a in AREAS[:AREAS.index(area)] if a in self._area_items) if area in AREAS else None
            if index is None:
                self.tree.addTopLevelItem(item)
            else:
                self.tree.insertTopLevelItem(index, item)
            item.setExpanded(True)
            self._area_items[area] = item
        return item

    def _set_check(self, result: CheckResult) -> None:
        item = self._check_items.get(result.id)
        if item is None:
            item = QtWidgets.QTreeWidgetItem()
            item.setData(0, ROLE_KIND, "check")
            item.setData(0, ROLE_ID, result.id)
            self._area_item(result.area).addChild(item)
            self._check_items[result.id] = item
        palette = theme.current()
        item.setIcon(0, status_icon(status_glyph(result), status_color(result, palette)))
        # the short neutral name for every status (ids are for the detail pane and reports)
        item.setText(0, check_label(result.id, result.title))
        item.setToolTip(0, f"{result.title} [{result.id}]")
        item.setText(1, result_text(result))
        item.setToolTip(1, f"{STATUS_WORDS.get(result.status, '')}: {result.reason}" if result.reason
                        else STATUS_WORDS.get(result.status, ""))
        muted = result.status is Status.SKIP
        for column in (0, 1):
            item.setForeground(column, QtGui.QBrush(QtGui.QColor(palette.muted)) if muted else QtGui.QBrush())
        item.takeChildren()
        for index, finding in enumerate(result.findings):
            child = QtWidgets.QTreeWidgetItem([self._finding_label(finding), finding.severity.value])
            child.setData(0, ROLE_KIND, "finding")
            child.setData(0, ROLE_ID, result.id)
            child.setData(0, ROLE_INDEX, index)
            color = {Severity.ERROR: palette.critical, Severity.WARNING: palette.hot,
                     Severity.INFO: palette.info}[finding.severity]
            child.setIcon(0, status_icon({Severity.INFO: "i"}.get(finding.severity, "!"), color, 14))
            item.addChild(child)
        item.setExpanded(bool(result.findings))

    @staticmethod
    def _finding_label(finding: Finding) -> str:
        return finding.subject or (str(finding.evidence[0]) if finding.evidence else finding.title)

    def _fill(self, results: list[CheckResult]) -> None:
        selected = self._selected_check_id()
        self.tree.clear()
        self._check_items.clear()
        self._area_items.clear()
        for result in results:
            self._set_check(result)
        self._apply_filter()
        if not self._check_column_fitted:
            self._fit_check_column()
        first_problem = next((r for r in results if r.status in (Status.FAIL, Status.ERROR)), None)
        target = selected or (first_problem.id if first_problem else None)
        if target and target in self._check_items:
            item = self._check_items[target]
            self.tree.setCurrentItem(item.child(0) if item.childCount() else item)
        else:
            self._show_summary()

    def _fit_check_column(self) -> None:
        """Check names get the width they need (within bounds), the results the rest: a fixed
        340 px column left the results cut to ~220 px at 1280 px while the names used ~200."""
        self._check_column_fitted = True
        needed = self.tree.sizeHintForColumn(0) + 12  # Qt's own measure: indentation, icon, text
        self.tree.setColumnWidth(0, max(CHECK_COLUMN_MIN, min(CHECK_COLUMN_MAX, needed)))

    def _matches(self, result: CheckResult, wanted) -> bool:
        if wanted is None:
            return True
        if wanted == "problems":
            return result.status in (Status.FAIL, Status.ERROR)
        return any(f.severity is wanted for f in result.findings)

    def _apply_filter(self) -> None:
        wanted = FILTERS[self.filter_box.currentIndex()][1]
        results = {r.id: r for r in self.report.results} if self.report else {}
        for check_id, item in self._check_items.items():
            result = results.get(check_id)
            item.setHidden(result is not None and not self._matches(result, wanted))
            for i in range(item.childCount()):
                child = item.child(i)
                finding = result.findings[i] if result and i < len(result.findings) else None
                child.setHidden(isinstance(wanted, Severity) and finding is not None and finding.severity is not wanted)
        for area_item in self._area_items.values():
            area_item.setHidden(all(area_item.child(i).isHidden() for i in range(area_item.childCount())))

    def visible_check_ids(self) -> list[str]:
        return [cid for cid, item in self._check_items.items() if not item.isHidden()
                and not (item.parent() is not None and item.parent().isHidden())]

    def _update_summary(self) -> None:
        if self.report is None:
            return
        findings = self.report.findings
        counts = {s: sum(1 for f in findings if f.severity is s) for s in Severity}
        statuses = self.report.counts()
        parts = [f"{len(self.report.results)} checks", f"{statuses['pass']} passed", f"{statuses['skip']} skipped"]
        if statuses["error"]:
            parts.append(f"{statuses['error']} could not run")
        errors, warnings = counts[Severity.ERROR], counts[Severity.WARNING]
        parts.append(f"{errors} error{'' if errors == 1 else 's'}, {warnings} warning{'' if warnings == 1 else 's'}, "
                     f"{counts[Severity.INFO]} info")
        self.summary.setText(" · ".join(parts))

    # -- details -------------------------------------------------------------------------------------------
    def _selected(self) -> tuple[CheckResult | None, Finding | None]:
        item = self.tree.currentItem()
        if item is None or self.report is None:
            return None, None
        check_id = item.data(0, ROLE_ID)
        result = next((r for r in self.report.results if r.id == check_id), None)
        if result is None:
            return None, None
        if item.data(0, ROLE_KIND) == "finding":
            index = item.data(0, ROLE_INDEX)
            return result, result.findings[index] if index < len(result.findings) else None
        return result, result.findings[0] if len(result.findings) == 1 else None

    def _selected_check_id(self) -> str | None:
        item = self.tree.currentItem()
        return item.data(0, ROLE_ID) if item is not None else None

    def selected_finding(self) -> Finding | None:
        return self._selected()[1]

    def _show_item(self, item: QtWidgets.QTreeWidgetItem | None) -> None:
        self.rerun_button.setEnabled(item is not None and item.data(0, ROLE_ID) is not None and not self.running)
        result, finding = self._selected()
        self._set_fix_state(False, "Select a finding to see whether it has a fix.")
        self.copy_evidence_button.setEnabled(False)
        if result is None:
            if self.report is not None:
                self._show_summary()
            return
        if finding is not None:
            self.detail.setHtml(self._finding_html(result, finding))
            self.copy_evidence_button.setEnabled(bool(finding.evidence))
            runnable = finding.fix is not None and finding.fix.action is not None
            if finding.fix is None:
                self._set_fix_state(False, "No fix: this finding is information only.")
            elif not self._is_this_machine():
                self._set_fix_state(True, "Shows the steps for that machine, to copy or save as a script; "
                                          "nothing is applied here.")
            elif not runnable:
                self._set_fix_state(False, "Manual steps only (no automatic fix): follow them above.")
            elif finding.fix.privileged:
                self._set_fix_state(True, "Shows the exact change first; asks for your password.")
            else:
                self._set_fix_state(True, "Runs as you, without a password; shows its output as it goes.")
            return
        if result.status is Status.FAIL and len(result.findings) > 1:
            self._set_fix_state(False, "Select one of this check's findings to see its fix.")
        else:
            self._set_fix_state(False, f"No fix: this check {STATUS_WORDS.get(result.status, 'ran')}.")
        self.detail.setHtml(self._check_html(result))

    def _set_fix_state(self, enabled: bool, reason: str) -> None:
        """Fix… is enabled exactly when there is a fix to run; when not, the hint beside it says why."""
        self.fix_button.setEnabled(enabled)
        self.fix_hint.setText(reason)
        self.fix_button.setToolTip(reason)

    def _show_placeholder(self) -> None:
        self.detail.setHtml("<h3>Diagnosis</h3><p>rocmdesk checks the amdgpu driver, permissions, the "
                            "environment, Python/PyTorch and the display setup, and explains anything wrong "
                            "with the evidence and a fix.</p><p>Press <b>Run all checks</b>.</p>")

    def _show_summary(self) -> None:
        if self.report is None:
            self._show_placeholder()
            return
        host = self.report.host
        gpus = "".join(f"<li>{html.escape(str(g.get('pci')))}: {html.escape(str(g.get('name') or 'AMD GPU'))} "
                       f"({html.escape(str(g.get('gfx_target') or '?'))}, {html.escape(str(g.get('driver')))})</li>"
                       for g in host.get("gpus") or [])
        problems = [f for f in self.report.findings]
        body = ("<p>No problem found.</p>" if not problems else
                f"<p>{len(problems)} finding(s): select one on the left.</p>")
        self.detail.setHtml(
            f"<h3>{html.escape(subject_heading(self.ctx))}</h3>"
            f"<p>Kernel {html.escape(str(host.get('kernel') or 'unknown'))} · "
            f"{html.escape(str(host.get('distro') or 'unknown distribution'))} · ROCm "
            f"{html.escape(str(host.get('rocm') or 'not found'))}</p><ul>{gpus or '<li>no AMD GPU found</li>'}</ul>"
            + body)

    def _check_html(self, result: CheckResult) -> str:
        palette = theme.current()
        color = status_color(result, palette)
        parts = [f"<h3>{html.escape(result.title)}</h3>",
                 f"<p><span style='color:{color}'><b>{result.status.value.upper()}</b></span> "
                 f"<span style='color:{palette.muted}'>[{html.escape(result.id)}]</span></p>"]
        if result.reason:
            parts.append(f"<p>{html.escape(result.reason)}</p>")
        if len(result.findings) > 1:
            parts.append(f"<p>{len(result.findings)} findings: expand the check and select one.</p>")
        return "".join(parts)

    def _finding_html(self, result: CheckResult, finding: Finding) -> str:
        palette = theme.current()
        color = {Severity.ERROR: palette.critical, Severity.WARNING: palette.hot,
                 Severity.INFO: palette.info}[finding.severity]
        subject = f" — {html.escape(finding.subject)}" if finding.subject else ""
        parts = [f"<h3>{html.escape(finding.title)}{subject}</h3>",
                 f"<p><span style='color:{color}'><b>{finding.severity.value.upper()}</b></span> "
                 f"<span style='color:{palette.muted}'>[{html.escape(finding.id)}]</span></p>"]
        for paragraph in finding.explanation.split("\n\n"):
            parts.append(f"<p>{html.escape(' '.join(paragraph.split()))}</p>")
        if finding.evidence:
            parts.append("<h4>Evidence</h4><pre style='white-space:pre-wrap'>")
            parts.append("\n".join(html.escape(str(e)) for e in finding.evidence))
            parts.append("</pre>")
        if finding.fix and finding.fix.steps:
            # the words of rocmdesk.report.finding_view (also `rocmdesk diagnose` and the reports): a step
            # that needs administrator rights is never labelled "as your user"
            parts.append(f"<h4>Fix ({html.escape(fix_audience(finding))})</h4><ol>")
            parts.extend(f"<li>{_code(step)}</li>" for step in finding.fix.steps)
            parts.append("</ol>")
        return "".join(parts)

    # -- actions -------------------------------------------------------------------------------------------
    def _is_this_machine(self) -> bool:
        """False for a window showing a root folder, a snapshot or the demo (their fixes only get steps). Only
        the button's words: whose machine a fix acts on is decided again by the fix handler and the fix layer."""
        mode = getattr(self.ctx, "mode", None)
        if mode is None:  # a bare context (tests, embedding): no window source to go by
            return True
        return mode == "live" and bool(getattr(getattr(self.ctx, "root", None), "is_live", False))

    def _request_fix(self) -> None:
        finding = self.selected_finding()
        if finding is None or finding.fix is None:
            return
        if finding.fix.action is not None or not self._is_this_machine():
            self.fixRequested.emit(finding)

    def evidence_text(self) -> str:
        finding = self.selected_finding()
        return "\n".join(str(e) for e in finding.evidence) if finding else ""

    def copy_evidence(self) -> None:
        text = self.evidence_text()
        if text:
            QtGui.QGuiApplication.clipboard().setText(text)

    def as_text(self) -> str:
        """The whole result as plain text: the same words as ``rocmdesk diagnose``."""
        if self.report is None:
            return ""
        stream = io.StringIO()
        return render_text(self.report, Style(stream, enabled=False))

    def copy_as_text(self) -> None:
        text = self.as_text()
        if text:
            QtGui.QGuiApplication.clipboard().setText(text)

    # -- window hooks -----------------------------------------------------------------------------------
    def on_shown(self) -> None:
        if self.report is None and not self.running:
            self.run_all()

    def screenshot_ready(self) -> bool:
        return self.report is not None and not self.running and not self._pending_rerun


def _code(step: str) -> str:
    """Escape a fix step and show `backticked` commands in a monospace font."""
    pieces = step.split("`")
    out = []
    for index, piece in enumerate(pieces):
        escaped = html.escape(piece)
        out.append(f"<code>{escaped}</code>" if index % 2 else escaped)
    if len(pieces) % 2 == 0:  # an unmatched backtick: keep it as text
        return html.escape(step)
    return "".join(out)
