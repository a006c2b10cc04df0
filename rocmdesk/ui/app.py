"""Start the window: ``rocmdesk`` (no subcommand) calls :func:`run_gui`.

:func:`open_session` builds everything for one data source (feed, context, window) and is
shared by the GUI, ``rocmdesk screenshot``, the tests and the benchmark.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets

from rocmdesk.resources import resource_path
from rocmdesk.telemetry.history import History
from rocmdesk.telemetry.hotplug import HotplugMonitor
from rocmdesk.ui import theme
from rocmdesk.ui.background import Background
from rocmdesk.ui.context import AppContext
from rocmdesk.ui.feed import SampleFeed, SamplerFactory, default_sampler_factory
from rocmdesk.ui.main_window import MainWindow
from rocmdesk.ui.settings import Settings
from rocmdesk.ui.sources import Source, bundle_source, demo_source, root_source, startup_source

log = logging.getLogger(__name__)

# packaging/org.rocmdesk.RocmDesk.desktop: Wayland compositors match the window's app id to it (icon, name)
DESKTOP_FILE_NAME = "org.rocmdesk.RocmDesk"


def fixed_mmap_threshold(nbytes: int = 256 * 1024) -> None:
    """Keep glibc from raising its mmap threshold after big arrays are freed.

    Graph redraws make short-lived arrays of a few hundred KiB; with the default dynamic
    threshold they end up in the heap and fragment it, which cost ~20 MB of resident memory
    with 24 h of history. Fixed, they are mmapped and returned on free. No-op off glibc.
    """
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(-3, int(nbytes))  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        pass


class GuiThreadCollector(QtCore.QObject):
    """Python's cyclic garbage collector, run on the GUI thread only (automatic collection is off).

    Automatic collection runs in whichever thread happens to allocate past a threshold: the demo's
    pre-roll loader, the report or diagnosis worker. There it freed Qt wrappers caught in reference
    cycles (pyqtgraph plot menus dropped by a Graphs rebuild after choosing GPUs), so ~QObject ran off
    the GUI thread (QWidget::removeAction from the pre-roll thread, seen in gdb) and corrupted the heap:
    the window crashed when the demo machine was switched next (tests/integration/test_packaging.py
    drives exactly that). pyqtgraph ships the same remedy (pyqtgraph/util/garbage_collector.py).
    """

    def __init__(self, parent: QtCore.QObject, interval_ms: int = 1000) -> None:
        super().__init__(parent)
        gc.disable()
        self.timer = QtCore.QTimer(self)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self.check)
        self.timer.start()

    def check(self) -> int:
        """Collect the oldest generation whose count passed its threshold, as automatic GC would."""
        counts, thresholds = gc.get_count(), gc.get_threshold()
        for generation in (2, 1, 0):
            if counts[generation] > thresholds[generation]:
                return gc.collect(generation)
        return 0


def make_app(argv: list[str] | None = None) -> QtWidgets.QApplication:
    """The QApplication (created once), crisp at fractional and 2x scaling; garbage is collected on
    its thread only (:class:`GuiThreadCollector`)."""
    app = QtWidgets.QApplication.instance()
    if app is None:
        fixed_mmap_threshold()
        QtGui.QGuiApplication.setHighDpiScaleFactorRoundingPolicy(
            QtCore.Qt.HighDpiScaleFactorRoundingPolicy.PassThrough)
        app = QtWidgets.QApplication(argv or ["rocmdesk"])
    if app.findChild(GuiThreadCollector) is None:
        GuiThreadCollector(app)
    app.setApplicationName("rocmdesk")
    app.setOrganizationName("rocmdesk")
    app.setDesktopFileName(DESKTOP_FILE_NAME)
    icon_file = resource_path("icons", "rocmdesk.svg")
    if icon_file.is_file():
        app.setWindowIcon(QtGui.QIcon(str(icon_file)))
    return app  # type: ignore[return-value]


@dataclass
class Session:
    source: Source
    ctx: AppContext
    feed: SampleFeed
    window: MainWindow

    def close(self) -> None:
        self.feed.stop()
        try:
            self.source.backend.close()
        except Exception:
            log.exception("closing the backend failed")
        if self.source.bundle is not None:
            self.source.bundle.close()


def _target_of(source: Source) -> Any:
    """The diagnosis target of what the window shows; a bundle's with its capture time and host name."""
    from rocmdesk.diagnosis.target import demo_target, target_for_bundle, target_for_view

    if source.mode == "snapshot" and source.bundle is not None:
        return target_for_bundle(source.bundle)
    if source.mode == "demo" and source.bundle is not None:  # a shipped demo machine
        return demo_target(source.bundle.root, source.machine_name, getattr(source.bundle, "created", None))
    return target_for_view(source.root, source.mode, source.bundle_path)


def open_session(source: Source, settings: Settings, *, sampler_factory: SamplerFactory = default_sampler_factory,
                 history: Any = None, hotplug: bool = True, start: bool = True,
                 switch_source: Callable[[str, str], None] | None = None) -> Session:
    monitor = None
    if hotplug and source.mode != "demo":
        monitor = HotplugMonitor(source.root, lambda _e: None)
    if source.frozen:
        monitor = None  # recorded files do not change
    feed = SampleFeed(source.backend, history if history is not None else History(), sampler_factory,
                      settings.rate_hz, hotplug=monitor, frozen=source.frozen)
    ctx = AppContext(root=source.root, runner=source.runner, mode=source.mode, mode_reason=source.reason,
                     backend_name=source.backend_name, settings=settings, feed=feed,
                     bundle_path=source.bundle_path)
    ctx.extras["target"] = _target_of(source)  # whose machine: fixes run only for the live one (issue 10)
    if getattr(source.bundle, "python_envs", None):  # the environments the bundle's capture was asked to check
        ctx.extras["python_envs"] = tuple(source.bundle.python_envs)
    window = MainWindow(ctx, switch_source=switch_source)
    for warning in source.warnings:
        window.statusBar().showMessage(warning, 10000)
    session = Session(source, ctx, feed, window)
    if start:
        if source.preload:
            def take_preload() -> Iterator:
                pending, source.preload = source.preload, []  # do not keep an hour of objects alive
                # an iterator, not a list: the loader consumes the demo's pre-roll an hour at a time;
                # a list held all 24 h of snapshots (~700 000 objects) at once and left the heap
                # fragmented, ~10 MB of it still resident after the trim
                return iter(pending() if callable(pending) else pending)

            # not for a feed stopped while loading: its history is dropped, and the collection
            # would land in whatever the window is doing next
            feed.loaded.connect(lambda: None if feed.stopped else settle_heap())
            feed.start(preload=take_preload)
        else:
            feed.start()
    return session


def settle_heap() -> None:
    """After the start-up burst (recordings, pre-roll), move surviving objects out of the GC's way.

    The cyclic collector otherwise re-walks hundreds of thousands of long-lived objects every
    few seconds, which showed as CPU spikes of the idle window.
    """
    gc.collect()
    gc.freeze()
    release_free_memory()


def release_free_memory() -> None:
    """Hand memory freed after the pre-roll back to the system (glibc keeps it otherwise)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc: the memory is reused by later allocations anyway


class FirstFrame(QtCore.QObject):
    """Notes when the window has painted for the first time (startup figure, ROCMDESK_FIRST_FRAME_FILE)."""

    def __init__(self, window: QtWidgets.QWidget, started: float) -> None:
        super().__init__(window)
        self.started = started
        self.seconds: float | None = None
        window.installEventFilter(self)

    def eventFilter(self, obj: QtCore.QObject, event: QtCore.QEvent) -> bool:
        if event.type() == QtCore.QEvent.Type.Paint and self.seconds is None:
            QtCore.QTimer.singleShot(0, self._record)
        return False

    def _record(self) -> None:
        if self.seconds is not None:
            return
        painted = time.time()
        self.seconds = painted - self.started
        log.info("first frame painted about %.2f s after the process started", self.seconds)
        target = os.environ.get("ROCMDESK_FIRST_FRAME_FILE")
        if target:  # the wall time of the first frame; the benchmark knows when it spawned us
            try:
                with open(target, "w", encoding="utf-8") as fh:
                    fh.write(f"{painted:.4f}\n")
            except OSError as exc:
                log.warning("cannot write %s: %s", target, exc)


def process_start_time() -> float:
    """When this process started (psutil; the kernel's boot time is whole seconds, so approximate)."""
    try:
        import psutil

        return float(psutil.Process().create_time())
    except Exception:
        return time.time()


class Controller(QtCore.QObject):
    """Owns the current session; opening another root or snapshot replaces it."""

    def __init__(self, app: QtWidgets.QApplication, settings: Settings, backend: str) -> None:
        super().__init__()
        self.app = app
        self.settings = settings
        self.backend = backend
        self.session: Session | None = None
        self._work = Background(self)

    def show(self, source: Source) -> Session:
        self._show(source)
        assert self.session is not None
        return self.session

    def _show(self, result: Any) -> None:
        if isinstance(result, BaseException):
            parent = self.session.window if self.session else None
            QtWidgets.QMessageBox.warning(parent, "Cannot open", str(result))
            return
        old = self.session
        if old is not None:
            old.window.remember()
            old.window.close()
            old.close()
        self.session = open_session(result, self.settings, switch_source=self.switch)
        self.session.window.show()

    def switch(self, kind: str, path: str) -> None:
        """Open a root folder, a bundle or a demo machine (``path`` its name) in a worker thread (file
        reads stay off the GUI thread)."""
        def build() -> Source:
            if kind == "demo":
                return demo_source(f"Demo machine {path}", recording=path)
            if kind == "root":
                return root_source(path, self.backend)
            return bundle_source(path, self.backend)

        def failed(exc: BaseException) -> None:
            log.warning("cannot open %s: %s", path, exc)
            self._show(exc)

        if self.session is not None:
            self.session.window.statusBar().showMessage(f"Opening {path}…")
        self._work.submit(build, self._show, failed, name="rocmdesk-open")


def run_gui(args: Any) -> int:
    started = process_start_time()
    settings = Settings.load()
    app = make_app(sys.argv[:1])
    theme.apply(app, settings.theme)
    try:
        source = startup_source(root=getattr(args, "root", None), demo=bool(getattr(args, "demo", False)),
                                open_bundle=getattr(args, "open_bundle", None),
                                backend=getattr(args, "backend", "auto") or "auto")
    except Exception as exc:
        log.warning("cannot open the requested source (%s); showing demo data", exc)
        source = demo_source(f"Could not open what was asked ({exc})")
    controller = Controller(app, settings, getattr(args, "backend", "auto") or "auto")
    session = controller.show(source)
    FirstFrame(session.window, started)
    code = app.exec()
    if controller.session is not None:
        controller.session.window.remember()
        controller.session.close()
    settings.save()
    return int(code)
