"""Render the real window offscreen and save a tab as PNG (``rocmdesk screenshot``)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from PySide6 import QtCore, QtGui, QtWidgets

from rocmdesk.atomic_file import atomic_write_bytes
from rocmdesk.ui import theme
from rocmdesk.ui.app import make_app, open_session
from rocmdesk.ui.na_notes import with_na_notes
from rocmdesk.ui.settings import Settings
from rocmdesk.ui.sources import demo_source, startup_source
from rocmdesk.ui.tabs import Tab

READY_TIMEOUT_S = 20.0


@dataclass
class ScreenshotResult:
    path: str
    width: int
    height: int
    tab: str
    mode: str
    na_notes: list[str] = field(default_factory=list)  # the reasons listed under the picture, one per line


def pump(app: QtWidgets.QApplication, seconds: float, until=None) -> bool:
    """Run the event loop for ``seconds`` (or until ``until()`` is true); True if ``until`` was met."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 50)
        if until is not None and until():
            return True
        time.sleep(0.01)
    return until is not None and until()


def render_screenshot(output: str, tab: str = "overview", seconds: float = 3.0, size: tuple[int, int] = (1920, 1080),
                      theme_name: str = "light", demo: bool = False, root: str | None = None,
                      open_bundle: str | None = None, backend: str = "auto",
                      recording: str | None = None, graph_metric: str | None = None) -> ScreenshotResult:
    app = make_app()
    settings = Settings(theme=theme_name)
    if graph_metric is not None:
        settings.graph_metric = graph_metric
    theme.apply(app, theme_name)
    if demo:
        source = demo_source("Demo mode (--demo)", recording=recording)
    else:
        source = startup_source(root=root, open_bundle=open_bundle, backend=backend)
    session = open_session(source, settings, hotplug=False)
    window = session.window
    window.save_settings_on_close = False  # these throw-away settings must not replace the user's
    try:
        if not window.show_tab(tab):
            built = ", ".join(window.tab_widgets)
            raise ValueError(f"this build has no {tab!r} tab (available: {built})")
        window.resize(*size)
        window.show()
        feed = session.feed
        pump(app, READY_TIMEOUT_S, until=lambda: not feed.loading and feed.last_snapshot is not None)
        start = time.monotonic()
        pump(app, max(0.0, seconds))
        widget = window.tabs.currentWidget()
        if isinstance(widget, Tab):
            pump(app, max(0.0, READY_TIMEOUT_S - (time.monotonic() - start)), until=widget.screenshot_ready)
        # let any coalesced redraw land before grabbing
        redraw = getattr(widget, "redraw", None)
        if callable(redraw):
            redraw()
        focused = app.focusWidget()
        if focused is not None:  # the start-up focus ring on the first toolbar control reads as a selection
            focused.clearFocus()
        pump(app, 0.2)
        pixmap: QtGui.QPixmap = window.grab()
        shot = with_na_notes(window, pixmap)  # each N/A marked, its reason listed under the picture
        image = shot.image
        data = QtCore.QByteArray()
        buffer = QtCore.QBuffer(data)
        buffer.open(QtCore.QIODevice.OpenModeFlag.WriteOnly)
        if not image.save(buffer, "PNG"):
            raise OSError(f"cannot encode the screenshot for {output}")
        atomic_write_bytes(output, bytes(data.data()))
        return ScreenshotResult(os.path.abspath(output), image.width(), image.height(), tab, source.mode,
                                [note.line() for note in shot.notes])
    finally:
        window.close()
        session.close()
