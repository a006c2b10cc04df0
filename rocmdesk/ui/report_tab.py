"""Report tab: a summary of this machine (or snapshot), and the ways to hand it to someone.

The tab says where each part comes from: in demo mode the telemetry and processes are a demo
recording while the system summary and the diagnosis are of *this* computer, and both the panel
at the top and every exported format say so. The report is shown rendered (findings as cards,
tables, the graphs the HTML export embeds, drawn from the same SVG by QtSvg in the window's theme and
at the screen's pixel density); the Markdown tab shows exactly what "Copy" gives.

"Capture bundle…" first shows exactly what will be shared (the manifest preview), then asks
where to save; "Save report…" writes HTML (graphs embedded) or Markdown; "Copy as Markdown"
puts text sized for a GitHub issue on the clipboard. The report and the bundle are built off the
GUI thread (the diagnosis can take a second or two).
"""

from __future__ import annotations

import html
import logging
import os
from dataclasses import dataclass
from typing import Any

from PySide6 import QtCore, QtGui, QtSvg, QtWidgets

from rocmdesk.atomic_file import atomic_write_text
from rocmdesk.report.svg_charts import Chart, ChartStyle, chart_svg, history_charts
from rocmdesk.ui import theme
from rocmdesk.ui.background import Background
from rocmdesk.ui.context import AppContext
from rocmdesk.ui.formatting import NA, fmt_bytes

log = logging.getLogger(__name__)

HISTORY_SECONDS = 60 * 60  # the report and the bundle carry the last hour at most
CHART_WIDTH = 900
CHART_HEIGHT = 260
CHART_PIECE_POINTS = 9  # polylines in pieces: QtSvg draws them 4x faster (see chart_svg)


@dataclass(frozen=True)
class Provenance:
    """Where the report's parts come from, in words (``telemetry`` None: the same as ``system``)."""

    system: str
    telemetry: str | None = None
    telemetry_elsewhere: bool = False  # the telemetry is not of the machine diagnosed (demo, recording)


def provenance_of(ctx: AppContext) -> Provenance:
    if ctx.mode == "snapshot" and ctx.bundle_path:
        name = os.path.basename(ctx.bundle_path)
        reason = ctx.mode_reason.replace(": fixes are disabled", "").strip()
        return Provenance(reason if name in reason else f"snapshot {name}" + (f" ({reason})" if reason else ""))
    if ctx.mode == "snapshot":
        return Provenance(ctx.mode_reason or f"root folder {ctx.root.root}")
    if ctx.mode == "demo":
        title = ctx.mode_reason.split(" — ", 1)[-1].strip().removesuffix("(demo recording)").strip()
        target = (getattr(ctx, "extras", None) or {}).get("target")
        name = getattr(target, "source", "") or title or "bundled demo"
        system = f"demo machine {name} (not this machine)"
        return Provenance(system, f"demo recording: {title or 'bundled demo'} (not this machine)", True)
    return Provenance("this machine" if ctx.root.is_live else f"root folder {ctx.root.root}")


class ReportTab(QtWidgets.QWidget):
    report_ready = QtCore.Signal()

    def __init__(self, ctx: AppContext, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.report: Any = None
        self.markdown = ""
        self._work = Background(self)  # one job at a time: build, or collect for a bundle
        self.save_path_provider = self._ask_save_path  # tests replace it
        self.preview_dialog: QtWidgets.QDialog | None = None

        self.provenance = provenance_of(ctx)
        self.charts: list[Chart] = []
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(12, 10, 12, 10)
        layout.setSpacing(8)
        top = QtWidgets.QHBoxLayout()
        self.headline = QtWidgets.QLabel("The report is built when this tab is first shown.")
        font = self.headline.font()
        font.setPointSizeF(font.pointSizeF() * 1.3)
        font.setBold(True)
        self.headline.setFont(font)
        self.headline.setWordWrap(True)
        top.addWidget(self.headline, 1)
        self.capture_button = QtWidgets.QPushButton("Capture bundle…")
        self.capture_button.setToolTip("Save a redacted support bundle; you see what it holds before saving")
        self.save_button = QtWidgets.QPushButton("Save report…")
        self.save_button.setToolTip("HTML with the graphs embedded, or Markdown")
        self.copy_button = QtWidgets.QPushButton("Copy as Markdown")
        self.copy_button.setToolTip("Text sized for a GitHub issue (long parts folded)")
        self.refresh_button = QtWidgets.QPushButton("Refresh")
        for button in (self.capture_button, self.save_button, self.copy_button, self.refresh_button):
            top.addWidget(button)
        layout.addLayout(top)
        layout.addWidget(self._provenance_panel())
        self.source_label = self.system_source  # the one-line source (kept for callers)
        self.status = QtWidgets.QLabel("")
        self.status.setObjectName("muted")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        self.preview = QtWidgets.QTextBrowser()
        self.preview.setOpenLinks(False)
        self.preview.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        self.preview.document().setDocumentMargin(14)
        self.text = QtWidgets.QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QtWidgets.QPlainTextEdit.LineWrapMode.WidgetWidth)
        mono = QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont)
        self.text.setFont(mono)
        self.views = QtWidgets.QTabWidget()
        self.views.setDocumentMode(True)
        self.views.addTab(self.preview, "Preview")
        self.views.addTab(self.text, "Markdown (what Copy gives)")
        layout.addWidget(self.views, 1)
        self.capture_button.clicked.connect(self.start_capture)
        self.save_button.clicked.connect(self.save_report)
        self.copy_button.clicked.connect(self.copy_markdown)
        self.refresh_button.clicked.connect(self.refresh)
        self._waiting_for_history = False
        snapshot_signal = getattr(ctx.feed, "snapshot", None)
        if snapshot_signal is not None:
            snapshot_signal.connect(self._on_feed_snapshot)
        self._set_busy(False)

    # -- data ------------------------------------------------------------------------------------------
    def _source_text(self) -> str:
        p = self.provenance
        if p.telemetry:
            return f"System and diagnosis: {p.system}. Telemetry and processes: {p.telemetry}."
        return f"Source: {p.system}"

    def _provenance_panel(self) -> QtWidgets.QFrame:
        """Two labelled rows when the telemetry is not of the machine diagnosed, one otherwise."""
        panel = QtWidgets.QFrame()
        panel.setObjectName("gpuCard")  # the theme's card look
        grid = QtWidgets.QGridLayout(panel)
        grid.setContentsMargins(12, 8, 12, 8)
        grid.setHorizontalSpacing(14)
        grid.setVerticalSpacing(4)
        p = self.provenance

        def row(index: int, caption: str, text: str, tip: str) -> QtWidgets.QLabel:
            cap = QtWidgets.QLabel(caption)
            cap.setObjectName("metricCaption")
            value = QtWidgets.QLabel(text)
            value.setObjectName("cardTitle")
            value.setWordWrap(True)
            value.setToolTip(tip)
            grid.addWidget(cap, index, 0, QtCore.Qt.AlignmentFlag.AlignVCenter)
            grid.addWidget(value, index, 1)
            return value

        if p.telemetry:
            self.telemetry_source = row(0, "TELEMETRY & PROCESSES", _capital(p.telemetry),
                                        "The graphs, statistics and process table of this report")
            self.system_source = row(1, "SYSTEM & DIAGNOSIS", _capital(p.system),
                                     "The system summary, GPU list and every check of the diagnosis")
        else:
            self.telemetry_source = None
            self.system_source = row(0, "SOURCE", _capital(p.system),
                                     "System summary, diagnosis, telemetry and processes")
        grid.setColumnStretch(1, 1)
        return panel

    def _recording(self) -> Any:
        from rocmdesk.report.bundle import recording_from_history

        history = self.ctx.history
        feed = self.ctx.feed
        infos = {info.pci: info for info in getattr(feed, "gpus", []) or []}
        infos.update({pci: sample.info for pci, sample in (getattr(feed, "latest", {}) or {}).items()})
        if history is None or not infos:
            return None
        try:
            return recording_from_history(history, infos, HISTORY_SECONDS)
        except Exception:
            log.exception("could not turn the window's history into a recording")
            return None

    def on_shown(self) -> None:
        if self.report is None and not self._work.busy:
            self.refresh()

    def refresh(self) -> None:
        from rocmdesk.report.data import build_report

        recording = self._recording()
        processes = self._processes()
        root = self.ctx.root
        p = self.provenance

        def build() -> tuple[Any, list[Chart]]:
            report = build_report(root, history=recording, source=p.system, processes=processes,
                                  telemetry_source=p.telemetry)
            charts = []
            if report.history is not None and report.history.frames:
                try:
                    charts = history_charts(report.history)
                except Exception:  # the report without graphs is still worth showing
                    log.exception("graphs for the report preview failed")
            return report, charts

        self._run(build, self._report_done, "Building the report (running the diagnosis)…")

    def _processes(self) -> list[Any] | None:
        snapshot = getattr(self.ctx.feed, "last_snapshot", None)
        procs = getattr(snapshot, "processes", None)
        return list(procs) if procs else None

    def _report_done(self, result: Any) -> None:
        from rocmdesk.report.markdown import copy_as_markdown

        report, charts = result if isinstance(result, tuple) else (result, [])
        self.report = report
        self.charts = charts
        self.markdown = copy_as_markdown(report)
        self.headline.setText(report.headline())
        self._color_headline()
        self.text.setPlainText(self.markdown)
        self._render_preview()
        self.status.setText("")
        # built before the first samples arrived (the demo's pre-roll loads in the background):
        # build again once there is telemetry to show
        self._waiting_for_history = report.history is None and (
            self.ctx.mode == "demo" or bool(getattr(self.ctx.feed, "gpus", None)))
        self.report_ready.emit()

    def _on_feed_snapshot(self, *_args: Any) -> None:
        if not self._waiting_for_history or self._work.busy:
            return
        if self._recording() is not None:
            self._waiting_for_history = False
            self.refresh()

    def _color_headline(self) -> None:
        pal = theme.current()
        counts = self.report.counts if self.report is not None else {}
        color = (pal.critical if counts.get("error") else pal.hot if counts.get("warning")
                 else pal.text if counts.get("info") else pal.ok)
        self.headline.setStyleSheet(f"color: {color};" if self.report is not None else "")

    def _render_preview(self) -> None:
        if self.report is None:
            return
        doc = self.preview.document()
        pal = theme.current()
        style = chart_style(pal, self.preview.font().family())
        ratio = max(1.0, self.preview.devicePixelRatioF())  # as many pixels as the screen shows: never soft
        names = []
        for index, chart in enumerate(self.charts):
            name = f"rocmdesk-chart-{index}"
            svg = chart_svg(chart, CHART_WIDTH, CHART_HEIGHT, style, max_points=CHART_PIECE_POINTS)
            image = svg_image(svg, CHART_WIDTH, CHART_HEIGHT, ratio)
            if image.isNull():
                log.warning("the %s graph did not render", chart.title)
                continue
            doc.addResource(QtGui.QTextDocument.ResourceType.ImageResource, QtCore.QUrl(name), image)
            names.append(name)
        scroll = self.preview.verticalScrollBar().value()
        self.preview.setHtml(preview_html(self.report, pal, names))
        self.preview.verticalScrollBar().setValue(scroll)

    def apply_theme(self) -> None:
        self._color_headline()
        self._render_preview()

    # -- background work -------------------------------------------------------------------------------
    def _run(self, fn: Any, done: Any, message: str) -> None:
        if self._work.busy:
            return
        self.status.setText(message)
        self._set_busy(True)

        def finished(result: Any) -> None:
            self._set_busy(False)
            done(result)
            # again after the result is in: computed before it, Save and Copy stayed disabled after the
            # first report was built
            self._set_busy(self._work.busy)

        def failed(exc: BaseException) -> None:
            log.error("report work failed: %s", exc, exc_info=exc)
            self._set_busy(False)
            self.status.setText(f"Failed: {type(exc).__name__}: {exc}")

        self._work.submit(fn, finished, failed, name="rocmdesk-report")

    def wait_idle(self, timeout_ms: int = 20000) -> bool:
        """Block (processing events) until background work is done; for tests and screenshots."""
        return self._work.wait_idle(timeout_ms)

    def screenshot_ready(self) -> bool:
        return self.report is not None and not self._work.busy and not self._waiting_for_history

    def _set_busy(self, busy: bool) -> None:
        """Each button enabled exactly when it would work; a disabled one says why in its tooltip."""
        why = ("Wait: the report is being built" if busy
               else "" if self.report is not None else "The report is built when this tab is first shown")
        for button, tip in ((self.save_button, "HTML with the graphs embedded, or Markdown"),
                            (self.copy_button, "Text sized for a GitHub issue (long parts folded)")):
            button.setEnabled(not busy and self.report is not None)
            button.setToolTip(tip if button.isEnabled() else why)
        for button in (self.capture_button, self.refresh_button):
            button.setEnabled(not busy)

    # -- actions ---------------------------------------------------------------------------------------
    def copy_markdown(self) -> None:
        if not self.markdown:
            return
        QtGui.QGuiApplication.clipboard().setText(self.markdown)
        self.status.setText(f"Copied {len(self.markdown):,} characters of Markdown (fits a GitHub issue).")

    def save_report(self) -> None:
        from rocmdesk.report.html import render_html
        from rocmdesk.report.markdown import render_markdown

        if self.report is None:
            return
        path = self.save_path_provider("Save report", "rocmdesk-report.html",
                                       "HTML report (*.html);;Markdown (*.md)")
        if not path:
            return
        text = render_markdown(self.report, limit=None) if path.lower().endswith(".md") else render_html(self.report)
        try:
            atomic_write_text(path, text)
        except OSError as exc:
            self.status.setText(f"Could not save {path}: {exc.strerror or exc}")
            return
        self.status.setText(f"Saved {path}")

    def start_capture(self) -> None:
        from rocmdesk.report.bundle import prepare_bundle

        # a bundle is one machine: the demo's telemetry never goes into a bundle of this computer
        # (the capture takes one sample of its own GPUs instead)
        recording = None if self.provenance.telemetry_elsewhere else self._recording()
        root = self.ctx.root
        self._run(lambda: prepare_bundle(root, history=recording, minutes=HISTORY_SECONDS / 60),
                  self.show_preview, "Collecting what a bundle would hold…")

    def show_preview(self, plan: Any) -> QtWidgets.QDialog:
        """What will be shared, before anything is written; Save asks where."""
        dialog = QtWidgets.QDialog(self)
        dialog.setWindowTitle("What this bundle will share")
        layout = QtWidgets.QVBoxLayout(dialog)
        text = ("These files go into the bundle, after redaction (host name, user names and home folders "
                "replaced; serial numbers hashed; only GPU-related environment variables). Nothing else leaves "
                "this machine.")
        if self.ctx.mode == "demo":
            text += f" The bundle describes the {self.provenance.system}: its files, not this computer's."
        elif self.provenance.telemetry_elsewhere:
            text += (" The bundle describes this computer: the demo recording's telemetry is not included "
                     "(one sample of this computer's own GPUs is).")
        intro = QtWidgets.QLabel(text)
        intro.setWordWrap(True)
        layout.addWidget(intro)
        preview = QtWidgets.QPlainTextEdit("\n".join(plan.preview(limit=None)))
        preview.setReadOnly(True)
        layout.addWidget(preview, 1)
        box = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Save
                                         | QtWidgets.QDialogButtonBox.StandardButton.Cancel)
        layout.addWidget(box)
        box.accepted.connect(lambda: self._save_bundle(plan, dialog))
        box.rejected.connect(dialog.reject)
        dialog.resize(820, 560)
        self.preview_dialog = dialog
        self.status.setText("")
        dialog.show()
        return dialog

    def _save_bundle(self, plan: Any, dialog: QtWidgets.QDialog) -> None:
        path = self.save_path_provider("Save support bundle", "rocmdesk-bundle.tar.gz", "Bundle (*.tar.gz)")
        if not path:
            return
        try:
            size = plan.save(path)
        except OSError as exc:
            self.status.setText(f"Could not save {path}: {exc.strerror or exc}")
            return
        dialog.accept()
        self.status.setText(f"Saved {path} ({size / 1024:.0f} KiB). Open it with: rocmdesk --open {path}")

    def _ask_save_path(self, title: str, default: str, filters: str) -> str:
        path, _ = QtWidgets.QFileDialog.getSaveFileName(self, title, os.path.join(os.path.expanduser("~"), default),
                                                        filters)
        return path


# -- the rendered preview (Qt's rich-text subset: tables for layout, no CSS borders on blocks) ---------


def chart_style(pal: theme.Palette, font_family: str) -> ChartStyle:
    """The report graphs in the window's colours: its text, grid and GPU line colours (those of the
    Graphs tab), on no background of their own, so the dark theme shows dark graphs."""
    return ChartStyle(text=pal.text, muted=pal.muted, grid=pal.grid, axis=pal.muted, background=None,
                      series=theme.SERIES_COLORS, font_family=font_family or "sans-serif")


def svg_image(svg: str, width: int, height: int, ratio: float) -> QtGui.QImage:
    """SVG text drawn by QtSvg at ``ratio`` device pixels per logical pixel (a null image if it is not SVG)."""
    renderer = QtSvg.QSvgRenderer(QtCore.QByteArray(svg.encode("utf-8")))
    if not renderer.isValid():
        return QtGui.QImage()
    image = QtGui.QImage(round(width * ratio), round(height * ratio), QtGui.QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(QtCore.Qt.GlobalColor.transparent)
    painter = QtGui.QPainter(image)
    painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
    renderer.render(painter, QtCore.QRectF(0, 0, image.width(), image.height()))
    painter.end()
    image.setDevicePixelRatio(ratio)
    return image


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _e(value: object) -> str:
    return html.escape(str(value if value is not None else NA), quote=True)


def _table(pal: theme.Palette, header: list[str], rows: list[list[str]], widths: list[str] | None = None) -> str:
    """A table with a header row and alternating row shades; cells are HTML already."""
    head = "".join(f'<th align="left" bgcolor="{pal.surface_alt}"'
                   f'{f" width={chr(34)}{widths[i]}{chr(34)}" if widths and widths[i] else ""}>{h}</th>'
                   for i, h in enumerate(header))
    body = []
    for i, row in enumerate(rows):
        shade = f' bgcolor="{pal.window}"' if i % 2 else ""
        body.append(f"<tr{shade}>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>")
    return (f'<table width="100%" cellspacing="0" cellpadding="5" style="margin-bottom: 10px">'
            f"<tr>{head}</tr>{''.join(body)}</table>")


def _severity_color(pal: theme.Palette, severity: str) -> str:
    return {"error": pal.critical, "warning": pal.hot, "info": pal.info}.get(severity, pal.muted)


def _h2(pal: theme.Palette, text: str) -> str:
    return f'<h2 style="color: {pal.text}; margin-top: 18px; margin-bottom: 6px">{text}</h2>'


def preview_html(report: Any, pal: theme.Palette, chart_names: list[str]) -> str:
    """The report for the tab: findings as cards first, then system, GPUs, graphs, processes, checks."""
    from rocmdesk.report.data import PROCESS_USE_HEADERS, process_use_texts, window_text
    from rocmdesk.report.finding_view import finding_view
    from rocmdesk.report.html import finding_body

    code = f'style="font-family: monospace; background-color: {pal.surface_alt}"'
    parts = [f'<body style="color: {pal.text}">']
    parts.append(_h2(pal, f"Findings ({len(report.findings)})"))
    if not report.findings:
        parts.append(f'<p style="color: {pal.ok}">No check found a problem.</p>')
    for f in report.findings:
        sev = str(f.get("severity", "info"))
        color = _severity_color(pal, sev)
        subject = f" — {_e(f['subject'])}" if f.get("subject") else ""
        body = [f'<span style="color: {color}; font-weight: 600">{_e(sev.upper())}</span>&nbsp;&nbsp;'
                f'<b>{_e(f.get("title"))}{subject}</b>&nbsp;&nbsp;<span {code}>{_e(f.get("id"))}</span>']
        body += finding_body(finding_view(f), code=lambda text: f"<span {code}>{text}</span>",
                             where=lambda text: f'<span style="color: {pal.muted}">{text}</span>&nbsp; ')
        parts.append(f'<table width="100%" cellspacing="0" cellpadding="8" style="margin-bottom: 8px">'
                     f'<tr><td width="5" bgcolor="{color}"></td><td bgcolor="{pal.surface_alt}">'
                     f"{''.join(body)}</td></tr></table>")
    parts.append(_h2(pal, "System"))
    parts.append(_table(pal, ["Item", "Value"], [[_e(k), _e(v)] for k, v in report.system], ["22%", ""]))
    if report.gpus:
        parts.append(_h2(pal, f"GPUs ({len(report.gpus)})"))
        parts.append(_table(pal, ["Card", "PCI", "Name", "gfx", "VRAM", "Driver", "KFD node"], [
            [_e(g.get("card")), _e(g.get("pci")), _e(g.get("name")), _e(g.get("gfx_target")),
             _e(fmt_bytes(g.get("vram_total_bytes"))), _e(g.get("driver") or "none"), _e(g.get("kfd_node"))]
            for g in report.gpus]))
    parts.append(_h2(pal, "Telemetry"))
    note = report.telemetry_note()
    if note:
        parts.append(f'<table cellpadding="6" cellspacing="0"><tr><td bgcolor="{pal.banner_bg}" '
                     f'style="color: {pal.banner_text}"><b>{_e(note)}</b></td></tr></table>')
    parts.append(f"<p>{_e(_capital(window_text(report.history)))}.</p>")
    for name in chart_names:
        parts.append(f'<p><img src="{_e(name)}" width="{CHART_WIDTH}"></p>')
    if report.processes:
        parts.append(_h2(pal, f"Processes ({len(report.processes)})"))
        parts.append(_table(pal, ["PID", "Name", "GPU", "VRAM", *PROCESS_USE_HEADERS, "Command line"], [
            [_e(p.get("pid")), _e(p.get("name")), _e(p.get("pci")), _e(fmt_bytes(p.get("vram_bytes"))),
             *(_e(text) for text in process_use_texts(p)),
             f'<span {code}>{_e((p.get("cmdline") or "")[:160])}</span>'] for p in report.processes]))
    if report.checks:
        status_color = {"pass": pal.ok, "fail": pal.critical, "skip": pal.muted, "error": pal.critical}
        parts.append(_h2(pal, f"All {len(report.checks)} checks"))
        parts.append(_table(pal, ["Check", "Area", "Status", "Reason"], [
            [f"<span {code}>{_e(c.get('id'))}</span>", _e(c.get("area")),
             f'<span style="color: {status_color.get(c.get("status"), pal.text)}; font-weight: 600">'
             f'{_e(c.get("status"))}</span>', _e(c.get("reason"))] for c in report.checks], ["24%", "12%", "6%", ""]))
    if report.notes:
        parts.append(_h2(pal, "Notes"))
        parts.append("<ul>" + "".join(f"<li>{_e(n)}</li>" for n in report.notes) + "</ul>")
    parts.append("</body>")
    return "".join(parts)
