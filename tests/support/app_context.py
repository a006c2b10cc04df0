"""The one fake :class:`~rocmdesk.ui.context.AppContext` for tests of a single tab or dialog.

A real AppContext (so a tab sees the same fields and properties as in the window) with a feed that
only carries the signals tabs connect to; the window's own feed is tested through ``open_session``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6 import QtCore

from rocmdesk.host import HostRoot, RecordedRunner
from rocmdesk.ui.context import AppContext
from rocmdesk.ui.settings import Settings


class QuietFeed(QtCore.QObject):
    """A feed that never samples: its signals exist, nothing is emitted unless a test does it."""

    snapshot = QtCore.Signal(object)
    gpus_changed = QtCore.Signal(object)
    stale_changed = QtCore.Signal(bool, str)
    gpu_event = QtCore.Signal(object)

    def __init__(self, frozen: bool = False) -> None:
        super().__init__()
        self.frozen = frozen
        self.last_snapshot = None
        self.latest: dict[str, Any] = {}
        self.gpus: list[Any] = []


def fake_app_context(root: str | Path = "/", mode: str = "live", *, mode_reason: str = "test",
                     bundle_path: str | None = None, settings: Settings | None = None, runner: Any = None,
                     feed: Any = None, extras: dict[str, Any] | None = None) -> AppContext:
    return AppContext(root=HostRoot(root), runner=runner if runner is not None else RecordedRunner(), mode=mode,
                      mode_reason=mode_reason, backend_name="sysfs", settings=settings or Settings(),
                      feed=feed if feed is not None else QuietFeed(frozen=mode != "live"), bundle_path=bundle_path,
                      extras=extras if extras is not None else {})
