"""Fakes and helpers for the window tests: a scriptable backend, a hand-driven sampler."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest
import shiboken6

from rocmdesk.host import HostRoot, RecordedRunner
from rocmdesk.telemetry.backends.base import Backend
from rocmdesk.telemetry.model import GpuInfo, GpuKind, GpuSample, Snapshot

pytestmark = pytest.mark.gui

GIB = 1 << 30


def make_info(n: int, kind: GpuKind = GpuKind.DISCRETE, name: str = "AMD Radeon RX 7900 XTX") -> GpuInfo:
    return GpuInfo(card=f"card{n}", pci=f"0000:{3 + n:02x}:00.0", name=name, gfx_target="gfx1100", kind=kind,
                   driver="amdgpu", vram_total_bytes=24 * GIB)


def make_sample(info: GpuInfo, t: float, i: int = 0) -> GpuSample:
    return GpuSample(
        info=info, timestamp=t,
        temperature_c={"edge": 50.0 + i % 7, "junction": 60.0 + i % 9, "mem": 70.0},
        temperature_crit_c={"edge": 100.0, "junction": 110.0, "mem": 108.0},
        power_w=200.0 + (i % 5), power_cap_w=300.0, vram_used_bytes=4 * GIB, vram_total_bytes=24 * GIB,
        gpu_busy_percent=float(50 + i % 50), mem_busy_percent=10.0, sclk_mhz=2000, mclk_mhz=1250,
        fan_rpm=1200, fan_percent=40.0,
    )


class FakeBackend(Backend):
    """GPUs that can vanish, come back, hang or fail, on command."""

    name = "fake"

    def __init__(self, count: int = 2, sample_fn=None) -> None:
        self.infos = [make_info(n) for n in range(count)]
        self.present = {i.pci for i in self.infos}
        self.sample_fn = sample_fn or make_sample
        self.calls = 0
        self.hang = threading.Event()  # set: sample() blocks until release is set
        self.release = threading.Event()
        self.discovered = 0

    def discover(self) -> list[GpuInfo]:
        self.discovered += 1
        return [i for i in self.infos if i.pci in self.present]

    def sample(self) -> Snapshot:
        if self.hang.is_set():
            self.release.wait(30)
        self.calls += 1
        now = time.time()
        gpus = [self.sample_fn(i, now, self.calls) for i in self.infos if i.pci in self.present]
        return Snapshot(backend=self.name, timestamp=now, gpus=gpus)


class ManualSampler:
    """A sampler the test drives: ``tick()`` samples the backend once and delivers it."""

    def __init__(self, backend, rate_hz, on_snapshot, on_status) -> None:
        self.backend, self.rate_hz, self.on_snapshot, self.on_status = backend, rate_hz, on_snapshot, on_status
        self.started = self.stopped = False

    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        self.stopped = True

    def set_rate(self, hz: float) -> None:
        self.rate_hz = hz

    def tick(self) -> Snapshot:
        snap = self.backend.sample()
        self.on_snapshot(snap)
        return snap


@pytest.fixture
def manual_factory():
    made: list[ManualSampler] = []

    def factory(backend, rate_hz, on_snapshot, on_status):
        sampler = ManualSampler(backend, rate_hz, on_snapshot, on_status)
        made.append(sampler)
        return sampler

    factory.made = made
    return factory


def fake_source(backend: Backend, mode: str = "snapshot", reason: str = "test data"):
    from rocmdesk.ui.sources import Source

    root = HostRoot("/nonexistent-test-root")
    return Source(mode, reason, root, RecordedRunner(), backend, backend.name)


@pytest.fixture
def open_window(qtbot):
    """open_window(source, settings=None, **kw) -> Session, closed after the test."""
    from rocmdesk.ui.app import make_app, open_session
    from rocmdesk.ui.settings import Settings

    make_app()
    sessions = []

    def opener(source, settings=None, size=(1600, 1000), **kwargs):
        kwargs.setdefault("hotplug", False)
        session = open_session(source, settings or Settings(), **kwargs)
        qtbot.addWidget(session.window)
        session.window.resize(*size)
        session.window.show()
        sessions.append(session)
        return session

    yield opener
    for session in sessions:
        # a pre-roll still loading would land in a later test (its gc.collect/gc.freeze included)
        qtbot.waitUntil(lambda session=session: not session.feed.loading, timeout=30000)
        if shiboken6.isValid(session.window):  # pytest-qt may have deleted it while we waited
            session.window.close()
        session.close()


def demo_small(preroll_s: float = 120.0, recording: str | None = None):
    from rocmdesk.ui.sources import demo_source

    return demo_source("test", recording=recording, preroll_s=preroll_s)


def snapshot_with(sample: GpuSample, t: float | None = None) -> Snapshot:
    t = time.time() if t is None else t
    return Snapshot(backend="fake", timestamp=t, gpus=[replace(sample, timestamp=t)])
