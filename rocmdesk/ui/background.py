"""The one way the window runs slow work: on a worker thread, with its answer delivered on the GUI thread.

Diagnosis, report building, opening a bundle or root folder and pip fixes take seconds; run on the
GUI thread they would freeze the window. Qt widgets may only be touched from the GUI thread, so the
worker never calls back directly: it emits a signal of a QObject that lives on the GUI thread, and
Qt queues the call there. When the owner widget is destroyed first, its ``Background`` goes with it
and late answers are dropped instead of reaching a deleted widget.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from PySide6 import QtCore

log = logging.getLogger(__name__)


class Background(QtCore.QObject):
    """Runs jobs for one owner; ``busy`` while any of them has not delivered its answer yet."""

    _deliver = QtCore.Signal(object, object)  # (callback, value), emitted on the worker thread

    def __init__(self, parent: QtCore.QObject) -> None:
        super().__init__(parent)
        self._running = 0
        self._deliver.connect(self._on_deliver, QtCore.Qt.ConnectionType.QueuedConnection)

    @property
    def busy(self) -> bool:
        return self._running > 0

    def submit(self, fn: Callable[[], Any], on_done: Callable[[Any], None],
               on_error: Callable[[BaseException], None] | None = None, name: str = "rocmdesk-work") -> None:
        """Run ``fn()`` on a daemon thread; then ``on_done(result)`` or ``on_error(exception)`` on the GUI thread.

        Without ``on_error`` an exception is logged with its traceback and nothing else is called."""
        self._running += 1

        def work() -> None:
            try:
                result = fn()
            except Exception as exc:  # handed to the GUI thread; the thread itself must not die noisily
                if on_error is None:
                    log.exception("background job %s failed", name)
                self._emit(on_error, exc)
                return
            self._emit(on_done, result)

        threading.Thread(target=work, name=name, daemon=True).start()

    def relay(self, callback: Callable[..., None]) -> Callable[..., None]:
        """A function a worker may call (progress, output lines): ``callback(*args)`` then runs on the GUI thread."""
        return lambda *args: self._emit(lambda packed: callback(*packed), args, counts=False)

    def wait_idle(self, timeout_ms: int = 20000) -> bool:
        """Process events until every job has answered; for tests and screenshots."""
        timer = QtCore.QElapsedTimer()
        timer.start()
        while self.busy and timer.elapsed() < timeout_ms:
            QtCore.QCoreApplication.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 50)
            QtCore.QThread.msleep(5)
        return not self.busy

    def _emit(self, callback: Callable[[Any], None] | None, value: Any, counts: bool = True) -> None:
        try:
            self._deliver.emit((callback, counts), value)
        except RuntimeError:  # the owner and this object are gone: nobody is left to tell
            log.debug("a background answer arrived after its window closed")

    def _on_deliver(self, packed: tuple[Callable[[Any], None] | None, bool], value: Any) -> None:
        callback, counts = packed
        if counts:
            self._running -= 1
        if callback is not None:
            callback(value)
