"""Report tab: a summary of this machine (or snapshot), and the ways to hand it to someone.

"Capture bundle…" first shows exactly what will be shared (the manifest preview), then asks
where to save; "Save report…" writes HTML (graphs embedded) or Markdown; "Copy as Markdown"
puts text sized for a GitHub issue on the clipboard. The report and the bundle are built off the
GUI thread (the diagnosis can take a second or two).
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets

from rocmdesk.ui.context import AppContext

log = logging.getLogger(__name__)

HISTORY_SECONDS = 60 * 60  # the report and the bundle carry the last hour at most


class ReportTab(QtWidgets.QWidget):
    report_ready = QtCore.Signal()

    def __init__(self, ctx: AppContext, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.report: Any = None
        self.markdown = ""
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rocmdesk-report")
        self._pending: Future | None = None
        self._on_done: Any = None
        self._poll = QtCore.QTimer(self)
        self._poll.setInterval(50)
        self._poll.timeout.connect(self._check_pending)
        self.save_path_provider = self._ask_save_path  # tests replace it
        self.preview_dialog: QtWidgets.QDialog | None = None

        layout = QtWidgets.QVBoxLayout(self)
        self.headline = QtWidgets.QLabel("The report is built when this tab is first shown.")
        font = self.headline.font()
        font.setPointSizeF(font.pointSizeF() * 1.25)
        font.setBold(True)
        self.headline.setFont(font)
        self.headline.setWordWrap(True)
        layout.addWidget(self.headline)
        self.source_label = QtWidgets.QLabel(self._source_text())
        self.source_label.setWordWrap(True)
        layout.addWidget(self.source_label)
        buttons = QtWidgets.QHBoxLayout()
        self.capture_button = QtWidgets.QPushButton("Capture bundle…")
        self.capture_button.setToolTip("Save a redacted support bundle; you see what it holds before saving")
        self.save_button = QtWidgets.QPushButton("Save report…")
        self.copy_button = QtWidgets.QPushButton("Copy as Markdown")
        self.refresh_button = QtWidgets.QPushButton("Refresh")
        for button in (self.capture_button, self.save_button, self.copy_button, self.refresh_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        self.status = QtWidgets.QLabel("")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        self.text = QtWidgets.QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QtWidgets.QPlainTextEdit.LineWrapMode.WidgetWidth)
        mono = QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont)
        self.text.setFont(mono)
        layout.addWidget(self.text, 1)
        self.capture_button.clicked.connect(self.start_capture)
        self.save_button.clicked.connect(self.save_report)
        self.copy_button.clicked.connect(self.copy_markdown)
        self.refresh_button.clicked.connect(self.refresh)
        self._set_busy(False)
        self.destroyed.connect(lambda *_: self._pool.shutdown(wait=False, cancel_futures=True))

    # -- data ------------------------------------------------------------------------------------------
    def _source_text(self) -> str:
        if self.ctx.mode == "snapshot" and self.ctx.bundle_path:
            return f"Source: snapshot {os.path.basename(self.ctx.bundle_path)} ({self.ctx.mode_reason})"
        if self.ctx.mode == "demo":
            return "Source: demo recordings (not a real machine)"
        return f"Source: {'this machine' if self.ctx.root.is_live else self.ctx.root.root}"

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
        if self.report is None and self._pending is None:
            self.refresh()

    def refresh(self) -> None:
        from rocmdesk.report.data import build_report

        recording = self._recording()
        processes = self._processes()
        root = self.ctx.root
        source = self._source_text().removeprefix("Source: ")
        self._run(lambda: build_report(root, history=recording, source=source, processes=processes),
                  self._report_done, "Building the report (running the diagnosis)…")

    def _processes(self) -> list[Any] | None:
        snapshot = getattr(self.ctx.feed, "last_snapshot", None)
        procs = getattr(snapshot, "processes", None)
        return list(procs) if procs else None

    def _report_done(self, report: Any) -> None:
        from rocmdesk.report.markdown import copy_as_markdown

        self.report = report
        self.markdown = copy_as_markdown(report)
        self.headline.setText(report.headline())
        self.text.setPlainText(self.markdown)
        self.status.setText("")
        self.report_ready.emit()

    # -- background work -------------------------------------------------------------------------------
    def _run(self, fn: Any, done: Any, message: str) -> None:
        if self._pending is not None:
            return
        self.status.setText(message)
        self._set_busy(True)
        self._pending = self._pool.submit(fn)
        self._on_done = done
        self._poll.start()

    def _check_pending(self) -> None:
        future = self._pending
        if future is None or not future.done():
            return
        self._poll.stop()
        self._pending = None
        self._set_busy(False)
        try:
            result = future.result()
        except Exception as exc:
            log.exception("report work failed")
            self.status.setText(f"Failed: {type(exc).__name__}: {exc}")
            return
        self._on_done(result)

    def wait_idle(self, timeout_ms: int = 20000) -> bool:
        """Block (processing events) until background work is done; for tests and screenshots."""
        timer = QtCore.QElapsedTimer()
        timer.start()
        while self._pending is not None and timer.elapsed() < timeout_ms:
            QtWidgets.QApplication.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 50)
            self._check_pending()
        return self._pending is None

    def screenshot_ready(self) -> bool:
        return self.report is not None

    def _set_busy(self, busy: bool) -> None:
        for button in (self.capture_button, self.save_button, self.copy_button, self.refresh_button):
            button.setEnabled(not busy and (button in (self.capture_button, self.refresh_button)
                                            or self.report is not None))

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
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, path)
        except OSError as exc:
            self.status.setText(f"Could not save {path}: {exc.strerror or exc}")
            return
        self.status.setText(f"Saved {path}")

    def start_capture(self) -> None:
        from rocmdesk.report.bundle import prepare_bundle

        recording = self._recording()
        root = self.ctx.root
        self._run(lambda: prepare_bundle(root, history=recording, minutes=HISTORY_SECONDS / 60),
                  self.show_preview, "Collecting what a bundle would hold…")

    def show_preview(self, plan: Any) -> QtWidgets.QDialog:
        """What will be shared, before anything is written; Save asks where."""
        dialog = QtWidgets.QDialog(self)
        dialog.setWindowTitle("What this bundle will share")
        layout = QtWidgets.QVBoxLayout(dialog)
        intro = QtWidgets.QLabel("These files go into the bundle, after redaction (host name, user names and "
                                 "home folders replaced; serial numbers hashed; only GPU-related environment "
                                 "variables). Nothing else leaves this machine.")
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
