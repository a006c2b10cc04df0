"""The Fix dialog: the helper's exact plan, then Apply through pkexec in a QProcess (never a shell).

Both the preview (``rocmdesk-helper --preview ...``, as the user) and Apply
(``pkexec rocmdesk-helper ...``) run as QProcess with an argv, so the GUI thread never waits.
Cancel (126) and not authorized (127) get plain messages; ``applied`` carries the outcome so the
caller can re-run the related check. User-level fixes (pip in a venv) get :class:`PipFixDialog`,
which runs as the user and never asks for a password.

Every dialog that can run something takes the diagnosis target (required). For anything but the live
machine at ``/`` (a root folder, a snapshot, the demo) the window opens :class:`StepsDialog` instead: the
steps for THAT machine with "Copy steps" and "Save as script…", and no Apply; the Qt-free fix layer refuses
too (rocmdesk.fixes.guard), so no path from here reaches pkexec or the helper for another machine.
"""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Sequence

from PySide6 import QtCore, QtGui, QtWidgets

from rocmdesk.diagnosis.target import DiagnosisTarget, TargetKind, target_for_view
from rocmdesk.fixes import client
from rocmdesk.fixes.action_notes import notes_for, undo_command
from rocmdesk.fixes.actions import HELPER_PATH, PKEXEC_CANDIDATES
from rocmdesk.fixes.finding_plan import FindingPlan, plan_for_finding
from rocmdesk.fixes.guard import NotThisMachine
from rocmdesk.fixes.pip_fix import (
    PipFixError,
    PipReinstall,
    PipRun,
    PipUninstall,
    RollbackRun,
    plan_pip_reinstall,
    plan_pip_uninstall_pynvml,
)
from rocmdesk.fixes.plan import FixPlan, PlanError, plan_from_helper_output
from rocmdesk.fixes.requests import FixRequest, request_for_finding
from rocmdesk.fixes.script import render_script
from rocmdesk.ui.background import Background

log = logging.getLogger(__name__)


def _mono() -> QtGui.QFont:
    font = QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont)
    return font


class FixDialog(QtWidgets.QDialog):
    """Preview helper action(s), then apply them in order. ``applied(Outcome)`` fires when Apply ends.

    ``action`` is one argv (``("set-power-cap", PCI, "250")``) or a list of them (tuning applies a
    power cap and a profile together: one preview, one Apply, stopping at the first failure).
    """

    applied = QtCore.Signal(object)
    previewed = QtCore.Signal(object)  # list[FixPlan] or PlanError

    def __init__(self, action: Sequence[str] | Sequence[Sequence[str]], title: str = "", steps: Sequence[str] = (),
                 status: client.HelperStatus | None = None, helper_path: str = HELPER_PATH,
                 pkexec: str | None = None, parent: QtWidgets.QWidget | None = None, *,
                 target: DiagnosisTarget) -> None:
        super().__init__(parent)
        self.target = target
        if action and not isinstance(action[0], str):
            self.actions = [tuple(a) for a in action]
        else:
            self.actions = [tuple(action)]
        self.action = self.actions[0]
        self.plans: list[FixPlan] = []
        self.outcomes: list[client.Outcome] = []
        self.steps = tuple(steps)
        self.status = status if status is not None else client.helper_status()
        self.helper_path = helper_path
        self.pkexec = pkexec or self.status.pkexec or PKEXEC_CANDIDATES[0]
        self.plan: FixPlan | None = None
        self._queue: list[tuple[str, ...]] = []
        self.outcome: client.Outcome | None = None
        self._process: QtCore.QProcess | None = None
        self.setWindowTitle(title or "Fix")
        self.setMinimumSize(640, 420)

        self.heading = QtWidgets.QLabel(title or "; ".join(" ".join(a) for a in self.actions))
        self.heading.setWordWrap(True)
        font = self.heading.font()
        font.setBold(True)
        self.heading.setFont(font)
        self.text = QtWidgets.QPlainTextEdit(readOnly=True)
        self.text.setFont(_mono())
        self.text.setAccessibleName("What this fix will change")
        self.message = QtWidgets.QLabel()
        self.message.setWordWrap(True)
        self.message.setAccessibleName("Result")
        self.buttons = QtWidgets.QDialogButtonBox()
        self.apply_button = self.buttons.addButton("Apply", QtWidgets.QDialogButtonBox.ButtonRole.AcceptRole)
        self.apply_button.setEnabled(False)
        self.close_button = self.buttons.addButton(QtWidgets.QDialogButtonBox.StandardButton.Close)
        self.apply_button.clicked.connect(self.apply)
        self.close_button.clicked.connect(self.reject)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self.heading)
        layout.addWidget(self.text, 1)
        layout.addWidget(self.message)
        layout.addWidget(self.buttons)

        if not (isinstance(target, DiagnosisTarget) and target.applicable):
            self.apply_button.setVisible(False)
            self._show_manual(str(NotThisMachine(target, "this fix")))
        elif not self.status.ready:
            self._show_manual(self.status.message)
        else:
            self.text.setPlainText("Asking the helper what this fix would change…")
            QtCore.QTimer.singleShot(0, self.start_preview)

    # -- preview ------------------------------------------------------------------------------------
    def _show_manual(self, why: str) -> None:
        lines = [why, ""]
        if self.steps:
            lines.append("Manual steps:")
            lines.extend(f"{n}. {s}" for n, s in enumerate(self.steps, start=1))
        self.text.setPlainText("\n".join(lines))
        self.apply_button.setEnabled(False)

    def start_preview(self) -> None:
        """Ask the helper for the plan of the next action (one QProcess at a time)."""
        action = self.actions[len(self.plans)]
        try:
            argv = client.preview_argv(action, self.helper_path, target=self.target)
        except (ValueError, NotThisMachine) as exc:
            self._preview_failed(PlanError(str(exc)))
            return
        proc = QtCore.QProcess(self)
        proc.setProgram(argv[0])
        proc.setArguments(argv[1:])
        proc.finished.connect(lambda code, status, p=proc, a=action: self._preview_done(p, a))
        proc.errorOccurred.connect(lambda err, p=proc: self._process_error(p, err, preview=True))
        self._process = proc
        proc.start()

    def _preview_done(self, proc: QtCore.QProcess, action: tuple[str, ...]) -> None:
        stdout = bytes(proc.readAllStandardOutput().data()).decode("utf-8", "replace")
        try:
            self.plans.append(plan_from_helper_output(action, stdout))
        except PlanError as exc:
            self._preview_failed(exc)
            return
        if len(self.plans) < len(self.actions):
            self.start_preview()
            return
        self.plan = self.plans[0]
        if len(self.plans) == 1:
            text = self.plan.text()
        else:
            text = "\n\n".join(f"[{' '.join(p.action)}]\n{p.text()}" for p in self.plans)
        self.text.setPlainText(text + "\n\n" + self._admin_notes())
        pending = [p for p in self.plans if not p.is_empty]
        self.apply_button.setEnabled(bool(pending))
        if not pending:
            self.message.setText("Nothing to do.")
        self.previewed.emit(list(self.plans))

    def _admin_notes(self) -> str:
        """On which machine, when it takes effect, what can go wrong, how to undo (issue 10, item 3)."""
        lines = [f"On: {self.target.describe()}"]
        for name in dict.fromkeys(a[0] for a in self.actions if a):
            lines += notes_for(name).lines()
        return "\n".join(lines)

    def _preview_failed(self, exc: PlanError) -> None:
        self._show_manual(f"The helper will not make this change: {exc}")
        self.message.setText(str(exc))
        self.previewed.emit(exc)

    def _process_error(self, proc: QtCore.QProcess, error, preview: bool) -> None:
        if error != QtCore.QProcess.ProcessError.FailedToStart:
            return
        text = f"Could not start {proc.program()}: {proc.errorString()}"
        if preview:
            self._preview_failed(PlanError(text))
        else:
            self._finish(client.Outcome(client.OutcomeKind.FAILED, text))

    # -- apply ------------------------------------------------------------------------------------------
    def apply(self) -> None:
        """Run the actions whose plan changes something, one pkexec at a time."""
        self._queue = [p.action for p in self.plans if not p.is_empty]
        if not self._queue:
            return
        self.outcomes = []
        self.apply_button.setEnabled(False)
        self.message.setText("Waiting for the administrator password…")
        self._apply_next()

    def _apply_next(self) -> None:
        action = self._queue.pop(0)
        try:
            argv = client.pkexec_argv(action, self.pkexec, self.helper_path, target=self.target)
        except (ValueError, NotThisMachine) as exc:
            self._finish(client.Outcome(client.OutcomeKind.REFUSED, str(exc)))
            return
        proc = QtCore.QProcess(self)
        proc.setProgram(argv[0])
        proc.setArguments(argv[1:])
        proc.finished.connect(lambda code, status, p=proc: self._apply_done(p, code, status))
        proc.errorOccurred.connect(lambda err, p=proc: self._process_error(p, err, preview=False))
        self._process = proc
        proc.start()

    def _apply_done(self, proc: QtCore.QProcess, code: int, status) -> None:
        stdout = bytes(proc.readAllStandardOutput().data()).decode("utf-8", "replace")
        stderr = bytes(proc.readAllStandardError().data()).decode("utf-8", "replace")
        crashed = status == QtCore.QProcess.ExitStatus.CrashExit
        outcome = client.outcome_from_exit(None if crashed else code, stdout, stderr)
        self.outcomes.append(outcome)
        if outcome.ok and self._queue:
            self._apply_next()
            return
        self._finish(outcome)

    def _finish(self, outcome: client.Outcome) -> None:
        self.outcome = outcome
        self._queue = []
        ids = [o.undo_id for o in self.outcomes if o.undo_id] or ([outcome.undo_id] if outcome.undo_id else [])
        suffix = (f" (undo id {', '.join(ids)}; from a text console too: "
                  + "; ".join(f"`{undo_command(i)}`" for i in ids) + ")") if ids else ""
        self.message.setText(outcome.message + suffix)
        self.apply_button.setEnabled(outcome.kind is client.OutcomeKind.DISMISSED and len(self.outcomes) <= 1)
        self.applied.emit(outcome)

    def wait_for_process(self, timeout_ms: int = 10000) -> bool:
        """For tests and shutdown: let the running preview/apply finish."""
        return self._process is None or self._process.waitForFinished(timeout_ms)


class PipFixDialog(QtWidgets.QDialog):
    """A user-level pip fix in one environment, as the user: output streams in, Cancel stops it.

    ``pip-reinstall-rocm-torch ENV INDEX`` (``index_url`` given) or ``pip-uninstall-pynvml ENV``
    (``uninstall_pynvml=True``). After the run, "Restore previous packages" puts back what it changed
    (see rocmdesk.fixes.pip_fix.plan_rollback), also streamed and cancellable.
    """

    finished_run = QtCore.Signal(object)
    restored = QtCore.Signal(object)

    def __init__(self, env: str, index_url: str | None = None, parent: QtWidgets.QWidget | None = None,
                 uninstall_pynvml: bool = False, *, target: DiagnosisTarget) -> None:
        super().__init__(parent)
        self.target = target
        self.setMinimumSize(640, 420)
        self.text = QtWidgets.QPlainTextEdit(readOnly=True)
        self.text.setFont(_mono())
        self.message = QtWidgets.QLabel()
        self.message.setWordWrap(True)
        self.buttons = QtWidgets.QDialogButtonBox()
        self.run_button = self.buttons.addButton("Run", QtWidgets.QDialogButtonBox.ButtonRole.AcceptRole)
        self.restore_button = self.buttons.addButton("Restore previous packages",
                                                     QtWidgets.QDialogButtonBox.ButtonRole.ActionRole)
        self.restore_button.setVisible(False)
        self.cancel_button = self.buttons.addButton(QtWidgets.QDialogButtonBox.StandardButton.Cancel)
        self.cancel_button.clicked.connect(self.cancel)
        self.run_button.clicked.connect(self.start)
        self.restore_button.clicked.connect(self.restore)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self.text, 1)
        layout.addWidget(self.message)
        layout.addWidget(self.buttons)
        self._work = Background(self)
        self._line = self._work.relay(self.text.appendPlainText)  # pip's output, from the worker thread
        self.run: PipRun | None = None
        self.rollback_run: RollbackRun | None = None
        self.plan: PipReinstall | PipUninstall | None
        try:
            if not (isinstance(target, DiagnosisTarget) and target.applicable):
                raise NotThisMachine(target, "this pip fix")  # env is a path on ANOTHER machine: never look here
            self.plan = plan_pip_uninstall_pynvml(env) if uninstall_pynvml else plan_pip_reinstall(env, index_url or "")
        except (PipFixError, NotThisMachine) as exc:
            self.plan = None
            self.setWindowTitle("Remove pynvml" if uninstall_pynvml else "Reinstall PyTorch for ROCm")
            self.text.setPlainText(str(exc))
            self.run_button.setEnabled(False)
            self.run_button.setVisible(isinstance(exc, PipFixError))
            return
        self.setWindowTitle(self.plan.title)
        self.run_button.setText(self.plan.run_label)
        self.text.setPlainText(self.plan.describe())

    def _busy(self) -> bool:
        return self._work.busy

    @staticmethod
    def _as_text(exc: BaseException) -> str:
        """What a failed run says in the dialog: the known failures as they are, anything else with its type."""
        if isinstance(exc, (PipFixError, NotThisMachine, OSError, subprocess.SubprocessError)):
            return str(exc)
        log.error("the pip fix failed unexpectedly: %s", exc, exc_info=exc)
        return f"{type(exc).__name__}: {exc}"

    def start(self, save_dir=None) -> None:
        if self.plan is None or self._busy():
            return
        self.run_button.setEnabled(False)
        run = self.run = PipRun(self.plan, self._line, save_dir=save_dir, target=self.target)
        self._work.submit(run.run, self._done, lambda exc: self._done(self._as_text(exc)), name="pip-fix")

    def restore(self) -> None:
        """Put back the packages the run changed (only after a run, never while one is going)."""
        rollback = self.run.rollback if self.run is not None else None
        if rollback is None or rollback.is_empty or self._busy():
            return
        self.restore_button.setEnabled(False)
        self.cancel_button.setText("Cancel")
        self.message.setText("Restoring the previous packages…")
        back = self.rollback_run = RollbackRun(rollback, self._line, target=self.target)
        self._work.submit(back.run, self._restored, lambda exc: self._restored(self._as_text(exc)),
                          name="pip-rollback")

    def cancel(self) -> None:
        if self._busy():
            running = self.rollback_run if self.rollback_run is not None else self.run
            if running is not None:
                running.cancel()
            self.message.setText("Stopping…")
        else:
            self.reject()

    def _done(self, result) -> None:
        saved = self.run.freeze_file if self.run else None
        if isinstance(result, str):
            self.message.setText(result)
        elif self.run is not None and self.run.cancelled:
            self.message.setText(f"Cancelled. The previous package list is saved in {saved}.")
        elif result == 0:
            self.message.setText("Done. Restart the program that uses this environment.")
        else:
            self.message.setText(f"pip failed (exit code {result}). The previous package list is saved in {saved}.")
        rollback = self.run.rollback if self.run is not None else None
        if rollback is not None and not (rollback.is_empty and not rollback.skipped):
            self.text.appendPlainText("\n" + rollback.describe())
            self.restore_button.setVisible(True)
            self.restore_button.setEnabled(not rollback.is_empty)
        self.cancel_button.setText("Close")
        self.finished_run.emit(result)

    def _restored(self, result) -> None:
        if isinstance(result, str):
            self.message.setText(result)
        elif self.rollback_run is not None and self.rollback_run.cancelled:
            self.message.setText("Restoring was cancelled; the environment may be half restored. "
                                 f"The previous package list is in {self.run.freeze_file if self.run else '?'}.")
        elif result == 0:
            self.message.setText("Restored the previous packages.")
        else:
            self.message.setText(f"Restoring failed (pip exit code {result}); see the output above.")
        self.cancel_button.setText("Close")
        self.restored.emit(result)


class StepsDialog(QtWidgets.QDialog):
    """A fix for another machine (root folder, snapshot, demo): its steps, "Copy steps", "Save as script…".

    Nothing here runs a process: there is no Apply, and the text was worked out from that machine's files
    (rocmdesk.fixes.finding_plan) without the helper.
    """

    saved = QtCore.Signal(str)

    def __init__(self, plan: FindingPlan, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.plan = plan
        self.setWindowTitle(f"Steps for {plan.target.whose()}")
        self.setMinimumSize(640, 420)
        self.heading = QtWidgets.QLabel(f"{plan.finding.title}: steps for {plan.target.describe()}")
        self.heading.setWordWrap(True)
        font = self.heading.font()
        font.setBold(True)
        self.heading.setFont(font)
        self.notice = QtWidgets.QLabel(plan.why_not_applicable)
        self.notice.setWordWrap(True)
        self.text = QtWidgets.QPlainTextEdit(readOnly=True)
        self.text.setFont(_mono())
        self.text.setAccessibleName("Steps for that machine")
        self.text.setPlainText(plan.text())
        self.buttons = QtWidgets.QDialogButtonBox()
        self.copy_button = self.buttons.addButton("Copy steps", QtWidgets.QDialogButtonBox.ButtonRole.ActionRole)
        self.save_button = self.buttons.addButton("Save as script…", QtWidgets.QDialogButtonBox.ButtonRole.ActionRole)
        self.close_button = self.buttons.addButton(QtWidgets.QDialogButtonBox.StandardButton.Close)
        self.copy_button.clicked.connect(self.copy_steps)
        self.save_button.clicked.connect(lambda: self.save_script())
        self.close_button.clicked.connect(self.reject)
        self.message = QtWidgets.QLabel()
        self.message.setWordWrap(True)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self.heading)
        layout.addWidget(self.notice)
        layout.addWidget(self.text, 1)
        layout.addWidget(self.message)
        layout.addWidget(self.buttons)

    def copy_steps(self) -> None:
        QtWidgets.QApplication.clipboard().setText(self.plan.text())
        self.message.setText("Copied the steps.")

    def script_text(self) -> str:
        return render_script(self.plan)

    def save_script(self, path: str | None = None) -> str | None:
        """Write the script (mode 0644: the owner reads it before running it); asks where when ``path`` is None."""
        if path is None:
            name = f"rocmdesk-fix-{self.plan.finding.id}.sh"
            path, _filter = QtWidgets.QFileDialog.getSaveFileName(self, "Save the fix as a script", name,
                                                                  "Shell scripts (*.sh);;All files (*)")
            if not path:
                return None
        try:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(self.script_text())
        except OSError as exc:
            self.message.setText(f"Could not save {path}: {exc.strerror or exc}")
            return None
        self.message.setText(f"Saved {path}. Give it to that machine's administrator; they run it with sh.")
        self.saved.emit(path)
        return path


def open_fix_for_request(request: FixRequest, parent: QtWidgets.QWidget | None = None, *,
                         target: DiagnosisTarget) -> QtWidgets.QDialog:
    if request.privileged:
        return FixDialog(request.action, request.title, request.steps, parent=parent, target=target)
    if request.action[0] == "pip-uninstall-pynvml":
        return PipFixDialog(request.action[1], parent=parent, uninstall_pynvml=True, target=target)
    _name, env, index = request.action
    return PipFixDialog(env, index, parent, target=target)


def window_target(window: QtWidgets.QWidget, report=None) -> DiagnosisTarget:
    """Whose machine the window's diagnosis describes: the report's own target, checked against what the
    window shows (a demo or snapshot window never yields the live machine, whatever the report says)."""
    ctx = getattr(window, "ctx", None)
    root = getattr(ctx, "root", None)
    mode = getattr(ctx, "mode", None)
    reported = getattr(report, "target", None)
    if root is None or mode is None:
        view = reported if isinstance(reported, DiagnosisTarget) else None
    else:
        extras = getattr(ctx, "extras", {}) or {}
        view = extras.get("target") if isinstance(extras.get("target"), DiagnosisTarget) else None
        view = view or target_for_view(root, mode, getattr(ctx, "bundle_path", None))
    if view is None:  # nothing says whose machine: never this one
        return DiagnosisTarget(TargetKind.ROOT, "", source="an unknown source")
    if not view.applicable:  # the window knows best what it shows (a snapshot, the demo, a root folder)
        return view
    if isinstance(reported, DiagnosisTarget) and not reported.applicable:
        return reported
    return view


def open_fix_for_finding(finding, target: DiagnosisTarget,
                         parent: QtWidgets.QWidget | None = None) -> QtWidgets.QDialog | None:
    """The dialog for a finding's fix: the steps dialog for another machine, else the runnable fix."""
    if not target.applicable:
        if finding.fix is None:
            return None
        return StepsDialog(plan_for_finding(finding, target), parent)
    request = request_for_finding(finding)
    if request is None:
        return None
    return open_fix_for_request(request, parent, target=target)


def install_fix_handler(window: QtWidgets.QWidget) -> bool:
    """Connect the Diagnosis tab's ``fixRequested(finding)`` to the fix dialogs (once per window).

    After a successful fix the tab's ``recheck(check_id)`` runs, when the tab offers it.
    Returns False when the window has no Diagnosis tab with that signal (yet).
    """
    if window.property("rocmdeskFixHandler"):
        return True
    tabs = getattr(window, "tab_widgets", {}) or {}
    diagnosis = tabs.get("diagnosis")
    signal = getattr(diagnosis, "fixRequested", None)
    if signal is None:
        return False

    def on_fix(finding) -> None:
        target = window_target(window, getattr(diagnosis, "report", None))
        dialog = open_fix_for_finding(finding, target, window)
        if dialog is None:
            return

        def done(outcome) -> None:
            ok = getattr(outcome, "ok", outcome == 0)
            recheck = getattr(diagnosis, "recheck", None)
            if ok and callable(recheck):
                recheck(finding.id)

        signal_done = getattr(dialog, "applied", None) or getattr(dialog, "finished_run", None)
        if signal_done is not None:
            signal_done.connect(done)
        dialog.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()

    signal.connect(on_fix)
    window.setProperty("rocmdeskFixHandler", True)
    return True
