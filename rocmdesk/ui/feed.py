"""Bridge from the Qt-free sampler (worker thread) to the GUI thread.

The sampler calls :meth:`SampleFeed.deliver` from its own thread; a queued Qt signal hands the
snapshot to the GUI thread, which records it and tells the tabs. Hotplug events arrive the same
way. The GUI thread never reads files or runs commands: re-discovery after a hotplug runs in the
sampler's thread on its next tick (:class:`RediscoveringBackend`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from PySide6 import QtCore

from rocmdesk.telemetry.backends.base import Backend
from rocmdesk.telemetry.hotplug import HotplugEvent, HotplugMonitor
from rocmdesk.telemetry.model import GpuInfo, GpuSample, Snapshot
from rocmdesk.ui.background import Background

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GpuEvent:
    """Something users should see on a GPU's card and graphs (reset, wedge, removal)."""

    pci: str | None
    card: str | None
    kind: str
    detail: str
    timestamp: float


class RediscoveringBackend(Backend):
    """Wraps the real backend for the window, in the sampler's thread.

    Runs ``discover()`` again on the next sample after a hotplug, and attaches per-process use
    (``processes()``, a /proc scan) to snapshots that lack it, at most every few seconds.
    """

    PROCESS_INTERVAL_S = 2.0

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.name = inner.name
        self.demo = getattr(inner, "demo", False)
        self._pending = threading.Event()
        self._procs: list = []
        self._procs_at = -1e9

    def request_discover(self) -> None:
        self._pending.set()

    def discover(self) -> list[GpuInfo]:
        return self.inner.discover()

    def sample(self) -> Snapshot:
        if self._pending.is_set():
            self._pending.clear()
            try:
                self.inner.discover()
            except Exception as exc:
                log.warning("re-discovery after hotplug failed: %s", exc)
        snapshot = self.inner.sample()
        if not snapshot.processes and snapshot.gpus:
            now = time.monotonic()
            if now - self._procs_at >= self.PROCESS_INTERVAL_S:
                self._procs_at = now
                try:
                    self._procs = list(self.inner.processes())
                except Exception as exc:
                    log.warning("per-process use failed: %s", exc)
                    self._procs = []
            snapshot.processes = list(self._procs)
        return snapshot

    def processes(self):
        return self.inner.processes()

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:  # preroll(), scenario names... of the real backend
        return getattr(self.inner, name)


# sampler_factory(backend, rate_hz, on_snapshot, on_status) -> object with start(), stop(), set_rate(hz)
SamplerFactory = Callable[[Backend, float, Callable[[Any], None], Callable[[Any], None]], Any]


def default_sampler_factory(backend: Backend, rate_hz: float, on_snapshot: Callable[[Any], None],
                            on_status: Callable[[Any], None]) -> Any:
    from rocmdesk.telemetry.sampler import Sampler

    return Sampler(backend, on_snapshot, rate_hz=rate_hz, on_status=on_status)


class SampleFeed(QtCore.QObject):
    snapshot = QtCore.Signal(object)  # Snapshot, on the GUI thread
    gpus_changed = QtCore.Signal(object)  # list[GpuInfo] now present
    stale_changed = QtCore.Signal(bool, str)  # stale?, reason
    gpu_event = QtCore.Signal(object)  # GpuEvent
    rate_changed = QtCore.Signal(float)

    status = QtCore.Signal(object)  # the sampler's SamplerStatus, on the GUI thread

    _incoming = QtCore.Signal(object)
    _hotplug = QtCore.Signal(object)
    _status = QtCore.Signal(object)
    loaded = QtCore.Signal()  # past samples are recorded (or there were none to load)

    def __init__(self, backend: Backend, history: Any, sampler_factory: SamplerFactory = default_sampler_factory,
                 rate_hz: float = 1.0,
                 hotplug: HotplugMonitor | None = None, parent: QtCore.QObject | None = None,
                 frozen: bool = False) -> None:
        super().__init__(parent)
        # a recording (a bundle): its snapshots are shown as recorded and nothing is sampled; no
        # ticks, no "last sample just now", no staleness (the viewer's clock says nothing about it)
        self.frozen = bool(frozen)
        self.recorded: tuple[float, float, int] | None = None  # first, last timestamp, samples
        self.backend = backend if isinstance(backend, RediscoveringBackend) else RediscoveringBackend(backend)
        self.history = history
        self.rate_hz = float(rate_hz)
        self.latest: dict[str, GpuSample] = {}
        self.gpus: list[GpuInfo] = []
        self.last_snapshot: Snapshot | None = None
        self.last_received: float | None = None  # time.monotonic() of the last snapshot
        self.stale = False
        self.stale_reason = ""
        self.events: list[GpuEvent] = []
        self._sampler_factory = sampler_factory
        self.sampler: Any = None
        self.hotplug = hotplug
        self._incoming.connect(self._on_incoming, QtCore.Qt.ConnectionType.QueuedConnection)
        self._hotplug.connect(self._on_hotplug, QtCore.Qt.ConnectionType.QueuedConnection)
        self._status.connect(self._on_status, QtCore.Qt.ConnectionType.QueuedConnection)
        self._work = Background(self)
        self.sampler_status: Any = None
        self.loading = False
        self._stopped = False
        self._stop_loading = threading.Event()  # a stopped feed's loader gives up between snapshots
        self._stale_timer = QtCore.QTimer(self)
        self._stale_timer.setInterval(1000)
        self._stale_timer.timeout.connect(self.check_stale)
        self._started_at = time.monotonic()

    @property
    def backend_name(self) -> str:
        return self.backend.name

    @property
    def is_demo(self) -> bool:
        return bool(self.backend.demo)

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self, preload: Callable[[], Iterable[Snapshot]] | list[Snapshot] | None = None) -> None:
        """Start sampling; with ``preload`` (past snapshots, or a function returning them, run in a
        worker thread so the window paints first), record those before the first live sample."""
        self._started_at = time.monotonic()
        if self.frozen:
            self.preload(list(preload() if callable(preload) else preload or []))
            QtCore.QTimer.singleShot(0, self._show_recorded)
            return
        self._stale_timer.start()
        if preload is None:
            self._start_sampler()
            return
        if isinstance(preload, list):
            self.preload(preload)
            self._start_sampler()
            return
        self.loading = True

        def load() -> tuple[list[Any], Any]:
            history = self._empty_history()
            newest: list[Any] = []
            for snap in preload():  # may be a generator: 24 h never sit in memory at once
                if self._stop_loading.is_set():  # the window moved on (closed, another source)
                    return [], None
                history.append_snapshot(snap)
                newest = [snap]
            return newest, history

        def failed(exc: BaseException) -> None:
            log.warning("could not load past samples: %s", exc)
            self._on_preloaded(([], None))

        self._work.submit(load, self._on_preloaded, failed, name="rocmdesk-preload")

    def _empty_history(self) -> Any:
        """A fresh history like the current one (filled off the GUI thread, then swapped in)."""
        return type(self.history)(self.history.capacity, self.history.metrics)

    def _on_preloaded(self, result: Any) -> None:
        snapshots, history = result
        if history is not None and not self._stopped:
            self.history = history
            if snapshots:
                self._accept_latest(snapshots[-1], emit=False)
                self.gpus_changed.emit(list(self.gpus))
                self.snapshot.emit(snapshots[-1])
        self.loading = False
        self._started_at = time.monotonic()
        self.loaded.emit()
        if not self._stopped:
            self._start_sampler()

    def _start_sampler(self) -> None:
        self.sampler = self._sampler_factory(self.backend, self.rate_hz, self.deliver, self._status.emit)
        self.sampler.start()
        if self.hotplug is not None:
            self.hotplug.callback = self._hotplug.emit
            self.hotplug.start()

    @property
    def stopped(self) -> bool:
        return self._stopped

    def stop(self) -> None:
        self._stopped = True
        self._stop_loading.set()
        self._stale_timer.stop()
        if self.hotplug is not None:
            self.hotplug.stop()
        if self.sampler is not None:
            self.sampler.stop()

    def set_rate(self, hz: float) -> None:
        if self.frozen:
            return  # nothing is sampled
        self.rate_hz = float(hz)
        if self.sampler is not None:
            self.sampler.set_rate(self.rate_hz)
        self.rate_changed.emit(self.rate_hz)

    # -- called from the sampler's thread ----------------------------------------------------------
    def deliver(self, snapshot: Any) -> None:
        """Thread-safe: queue a snapshot for the GUI thread."""
        self._incoming.emit(snapshot)

    # -- GUI thread ----------------------------------------------------------------------------------
    def preload(self, snapshots: list[Snapshot]) -> None:
        """Record past snapshots (demo pre-roll, a bundle's history) before sampling starts."""
        for snap in snapshots:
            self.history.append_snapshot(snap)
        if snapshots:
            self._accept_latest(snapshots[-1], emit=False)
            self.recorded = (float(snapshots[0].timestamp), float(snapshots[-1].timestamp), len(snapshots))

    def _show_recorded(self) -> None:
        """A frozen feed tells the tabs once, after the window exists: these GPUs, this last sample."""
        if self._stopped:
            return
        self.loaded.emit()
        if self.last_snapshot is not None:
            self.gpus_changed.emit(list(self.gpus))
            self.snapshot.emit(self.last_snapshot)

    def recorded_text(self) -> str:
        """"recorded 2026-12-01 21:42 · N samples over M min" of a frozen feed ("" when live)."""
        from rocmdesk.wording import recorded_text

        if not self.frozen:
            return ""
        if self.recorded is None:
            return "nothing recorded (the bundle holds no GPU readings)"
        first, last, count = self.recorded
        return recorded_text(first, count, last - first)

    def _on_incoming(self, snapshot: Any) -> None:
        if not isinstance(snapshot, Snapshot):
            log.warning("sampler delivered %r instead of a Snapshot; ignored", type(snapshot).__name__)
            return
        self.last_received = time.monotonic()
        try:
            self.history.append_snapshot(snapshot)
        except Exception:
            log.exception("could not record a sample")
        self._accept_latest(snapshot, emit=True)
        if self.stale:
            self._set_stale(False, "")

    def _accept_latest(self, snapshot: Snapshot, emit: bool) -> None:
        self.last_snapshot = snapshot
        present = [g.info for g in snapshot.gpus]
        new_latest = {g.info.pci: g for g in snapshot.gpus}
        changed = [i.pci for i in present] != [i.pci for i in self.gpus]
        self.latest = new_latest
        if changed:
            self.gpus = present
            if emit:
                self.gpus_changed.emit(list(present))
        if emit:
            self.snapshot.emit(snapshot)

    def _on_status(self, status: Any) -> None:
        self.sampler_status = status
        if getattr(status, "stale", False):
            self._set_stale(True, f"{status.message}; values shown are stale")
        self.status.emit(status)

    def age(self) -> float | None:
        if self.frozen or self.last_received is None:
            return None
        return time.monotonic() - self.last_received

    def stale_after_s(self) -> float:
        """A sample is late after three periods (at least 3 s: a slow tool is not a hang)."""
        return max(3.0, 3.0 / max(self.rate_hz, 0.01))

    def check_stale(self) -> None:
        if self.loading or self.frozen:
            return
        age = self.age()
        reference = age if age is not None else time.monotonic() - self._started_at
        if reference > self.stale_after_s():
            what = "no sample yet" if age is None else f"last sample {reference:.0f} s ago"
            self._set_stale(True, f"{self.backend_name} is not answering ({what}); values shown are stale")

    def _set_stale(self, stale: bool, reason: str) -> None:
        if stale == self.stale and reason == self.stale_reason:
            return
        if stale and not self.stale:
            log.warning("telemetry stale: %s", reason)
        self.stale, self.stale_reason = stale, reason
        self.stale_changed.emit(stale, reason)

    def _on_hotplug(self, event: HotplugEvent) -> None:
        pci = next((g.pci for g in self.gpus if g.card == event.card), None)
        if event.kind in ("added", "removed"):
            self.backend.request_discover()
        gpu_event = GpuEvent(pci, event.card, event.kind, event.detail, event.timestamp)
        self.add_event(gpu_event)

    def add_event(self, event: GpuEvent) -> None:
        self.events.append(event)
        del self.events[:-200]
        self.gpu_event.emit(event)
