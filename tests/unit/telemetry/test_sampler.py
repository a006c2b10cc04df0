"""The Qt-free sampler: cadence, a hung backend, exceptions, pause/resume, rate changes, clean stop.

Scheduling is driven through ``tick()`` with a fake clock (the worker thread is real); a couple of
tests run the real threads at 10 Hz for a fraction of a second.
"""

from __future__ import annotations

import threading
import time

import pytest

from rocmdesk.telemetry.backends.base import Backend, BackendError
from rocmdesk.telemetry.model import GpuInfo, GpuSample, Snapshot
from rocmdesk.telemetry.sampler import MAX_RATE_HZ, MIN_RATE_HZ, Sampler, SamplerStatus

INFO = GpuInfo(card="card0", pci="0000:03:00.0", name="Test GPU")
WAIT = 2.0  # generous upper bound for thread hand-offs; tests finish far sooner


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class ScriptedBackend(Backend):
    """sample() follows a script: "ok", "hang" (blocks until released), an exception instance."""

    name = "fake"

    def __init__(self, script=None) -> None:
        self.script = list(script or [])
        self.calls = 0
        self.concurrent = 0
        self.max_concurrent = 0
        self.release = threading.Event()
        self.entered = threading.Event()
        self._lock = threading.Lock()

    def discover(self):
        return [INFO]

    def sample(self) -> Snapshot:
        with self._lock:
            self.calls += 1
            self.concurrent += 1
            self.max_concurrent = max(self.max_concurrent, self.concurrent)
            step = self.script.pop(0) if self.script else "ok"
        self.entered.set()
        try:
            if step == "hang":
                assert self.release.wait(WAIT * 2), "test never released the hung backend"
            elif isinstance(step, BaseException):
                raise step
            return Snapshot(backend=self.name, timestamp=float(self.calls),
                            gpus=[GpuSample(info=INFO, timestamp=float(self.calls), power_w=float(self.calls))])
        finally:
            with self._lock:
                self.concurrent -= 1


class Recorder:
    def __init__(self) -> None:
        self.snapshots: list[Snapshot] = []
        self.statuses: list[SamplerStatus] = []
        self.got = threading.Event()

    def on_snapshot(self, snapshot: Snapshot) -> None:
        self.snapshots.append(snapshot)
        self.got.set()

    def on_status(self, status: SamplerStatus) -> None:
        self.statuses.append(status)


@pytest.fixture
def rig():
    """A sampler whose scheduling the test drives with a fake clock."""
    made = []

    def make(script=None, **kwargs):
        clock = FakeClock()
        backend = ScriptedBackend(script)
        rec = Recorder()
        sampler = Sampler(backend, rec.on_snapshot, on_status=rec.on_status, clock=clock,
                          wall_clock=lambda: clock.now + 1_700_000_000.0, **kwargs)
        sampler.start(scheduler=False)
        made.append((sampler, backend))
        return sampler, backend, rec, clock

    yield make
    for sampler, backend in made:
        backend.release.set()
        assert sampler.stop(timeout=WAIT)


def step(sampler: Sampler) -> None:
    """One scheduling step, then wait for the call it may have started."""
    sampler.tick()
    assert sampler.wait_idle(WAIT)


def test_samples_at_the_configured_rate(rig):
    sampler, backend, rec, clock = rig(rate_hz=2.0)
    step(sampler)
    assert backend.calls == 1 and len(rec.snapshots) == 1
    clock.now += 0.25
    step(sampler)
    assert backend.calls == 1  # not due yet
    clock.now += 0.25
    step(sampler)
    assert backend.calls == 2
    assert sampler.status.samples == 2 and sampler.status.state == "running"
    assert sampler.last_snapshot is rec.snapshots[-1]
    assert sampler.status.last_sample_at == pytest.approx(clock.now + 1_700_000_000.0)


def test_hung_backend_goes_stale_and_is_not_called_again(rig):
    sampler, backend, rec, clock = rig(["ok", "hang", "ok"], deadline_s=5.0)
    step(sampler)
    good = sampler.last_snapshot
    clock.now += 1.0
    backend.entered.clear()
    sampler.tick()  # starts the call that hangs
    assert backend.entered.wait(WAIT)
    started = clock.now
    clock.now += 4.9
    sampler.tick()
    assert not sampler.status.stale
    clock.now += 0.2
    sampler.tick()
    status = sampler.status
    assert status.stale and status.state == "stale"
    assert status.stale_since == pytest.approx(started + 1_700_000_000.0)
    assert "no answer" in status.last_error and "stale since" in status.message
    assert any(s.stale for s in rec.statuses)
    for _ in range(20):  # many periods later: still one call in flight, never a second one
        clock.now += 1.0
        sampler.tick()
    assert backend.calls == 2 and backend.max_concurrent == 1
    assert sampler.last_snapshot is good  # the last values are kept (marked stale)
    assert sampler.busy
    backend.release.set()  # the backend answers at last
    assert sampler.wait_idle(WAIT)
    assert not sampler.status.stale and sampler.status.samples == 2
    clock.now += 1.0
    step(sampler)
    assert backend.calls == 3 and len(rec.snapshots) == 3


@pytest.mark.parametrize("error, words", [
    (RuntimeError("sysfs exploded"), "RuntimeError: sysfs exploded"),
    (BackendError("amdgpu not loaded"), "amdgpu not loaded"),
    (OSError(19, "No such device"), "No such device"),
])
def test_exceptions_are_reported_and_sampling_goes_on(rig, error, words):
    sampler, _backend, rec, clock = rig(["ok", error, "ok"])
    step(sampler)
    clock.now += 1.0
    step(sampler)
    status = sampler.status
    assert status.errors == 1 and words in status.last_error
    assert status.stale and status.state == "stale"  # the values shown are old now
    assert len(rec.snapshots) == 1
    clock.now += 1.0
    step(sampler)
    status = sampler.status
    assert status.errors == 1 and status.samples == 2
    assert status.last_error is None and not status.stale and status.state == "running"


def test_pause_and_resume(rig):
    sampler, backend, _rec, clock = rig()
    step(sampler)
    sampler.pause()
    assert sampler.status.state == "paused" and sampler.paused
    for _ in range(5):
        clock.now += 1.0
        step(sampler)
    assert backend.calls == 1
    sampler.resume()
    assert sampler.status.state == "running"
    step(sampler)  # resuming samples at once, without waiting a period
    assert backend.calls == 2


def test_rate_change(rig):
    sampler, backend, _rec, clock = rig(rate_hz=MIN_RATE_HZ)
    step(sampler)
    clock.now += 1.0
    step(sampler)
    assert backend.calls == 1  # 0.25 Hz: next call 4 s later
    sampler.set_rate(MAX_RATE_HZ)
    assert sampler.status.rate_hz == 10.0
    step(sampler)  # already overdue at the new rate
    assert backend.calls == 2
    clock.now += 0.05
    step(sampler)
    assert backend.calls == 2
    clock.now += 0.06
    step(sampler)
    assert backend.calls == 3


@pytest.mark.parametrize("rate", [0, 0.2, 10.5, -1, float("nan")])
def test_rates_outside_the_range_are_refused(rate):
    backend = ScriptedBackend()
    with pytest.raises(ValueError):
        Sampler(backend, lambda s: None, rate_hz=rate)
    sampler = Sampler(backend, lambda s: None)
    with pytest.raises(ValueError):
        sampler.set_rate(rate)
    with pytest.raises(ValueError):
        Sampler(backend, lambda s: None, deadline_s=0)


def test_a_failing_callback_does_not_stop_sampling(rig):
    clock = FakeClock()
    backend = ScriptedBackend()
    calls = []

    def bad_callback(snapshot):
        calls.append(snapshot)
        raise ValueError("GUI bug")

    sampler = Sampler(backend, bad_callback, on_status=lambda s: 1 / 0, clock=clock)
    sampler.start(scheduler=False)
    try:
        step(sampler)
        clock.now += 1.0
        step(sampler)
        assert len(calls) == 2 and sampler.status.samples == 2
    finally:
        assert sampler.stop(WAIT)


def test_start_twice_is_refused_and_stop_before_start_is_fine():
    sampler = Sampler(ScriptedBackend(), lambda s: None)
    assert sampler.stop(timeout=0.1) is True
    other = Sampler(ScriptedBackend(), lambda s: None)
    other.start(scheduler=False)
    try:
        with pytest.raises(RuntimeError):
            other.start()
    finally:
        assert other.stop(WAIT)


# -- the real threads -------------------------------------------------------------------------------


def test_threads_sample_and_stop_cleanly():
    backend = ScriptedBackend()
    rec = Recorder()
    sampler = Sampler(backend, rec.on_snapshot, rate_hz=10.0)
    before = {t.name for t in threading.enumerate()}
    sampler.start()
    deadline = time.monotonic() + WAIT
    while len(rec.snapshots) < 3 and time.monotonic() < deadline:
        rec.got.wait(0.05)
        rec.got.clear()
    assert len(rec.snapshots) >= 3
    assert [s.gpus[0].power_w for s in rec.snapshots[:3]] == [1.0, 2.0, 3.0]
    t0 = time.monotonic()
    assert sampler.stop(timeout=1.0) is True
    assert time.monotonic() - t0 < 0.6
    assert sampler.status.state == "stopped"
    assert {t.name for t in threading.enumerate()} - before == set()
    calls = backend.calls
    time.sleep(0.15)
    assert backend.calls == calls  # nothing runs after stop


def test_threads_detect_a_hang_and_leave_it_behind_on_stop():
    backend = ScriptedBackend(["hang"])
    rec = Recorder()
    stale = threading.Event()
    sampler = Sampler(backend, rec.on_snapshot, rate_hz=10.0, deadline_s=0.15,
                      on_status=lambda s: stale.set() if s.stale else None)
    sampler.start()
    try:
        assert stale.wait(WAIT)
        time.sleep(0.1)  # a few more periods pass
        assert backend.calls == 1 and backend.max_concurrent == 1
        t0 = time.monotonic()
        assert sampler.stop(timeout=0.2) is False  # the hung call keeps its (daemon) thread
        assert time.monotonic() - t0 < 0.5
    finally:
        backend.release.set()
    assert sampler.wait_idle(WAIT)
    assert rec.snapshots == []  # an answer after stop is not delivered


def test_stop_from_inside_a_callback():
    backend = ScriptedBackend()
    done = threading.Event()
    results = []

    def stop_now(snapshot):
        results.append(sampler.stop(timeout=0.5))
        done.set()

    sampler = Sampler(backend, stop_now, rate_hz=10.0)
    sampler.start()
    assert done.wait(WAIT)
    assert results == [True] and sampler.status.state == "stopped"
    assert sampler.wait_idle(WAIT)
