"""Throttle spans: merged while the reasons stay, split when they change, closed by a gap, bounded."""

from __future__ import annotations

from rocmdesk.telemetry.history import History
from rocmdesk.telemetry.model import GpuInfo, GpuSample, Snapshot
from rocmdesk.telemetry.recording import load_recording
from rocmdesk.telemetry.throttle_spans import ThrottleLog, reasons_of

PPT = {"active": True, "reasons": ["power limit (PPT0)"]}
HOT = {"active": True, "reasons": ["thermal (hotspot)", "power limit (PPT0)"]}
OFF = {"active": False, "reasons": []}


def test_reasons_of_reads_untrusted_shapes():
    assert reasons_of(None) is None and reasons_of("yes") is None  # type: ignore[arg-type]
    assert reasons_of(OFF) == ()
    assert reasons_of({"active": True}) == ("no reason given",)
    assert reasons_of(HOT) == ("power limit (PPT0)", "thermal (hotspot)")


def test_spans_merge_split_and_close():
    log = ThrottleLog()
    for t, state in [(0, OFF), (1, PPT), (2, PPT), (3, PPT), (4, HOT), (5, OFF), (6, OFF), (7, PPT)]:
        log.add(float(t), state)
    spans = [(s.start, s.end, s.reasons, s.open) for s in log.spans]
    assert spans == [(1.0, 4.0, ("power limit (PPT0)",), False),
                     (4.0, 5.0, ("power limit (PPT0)", "thermal (hotspot)"), False),
                     (7.0, 7.0, ("power limit (PPT0)",), True)]
    assert log.active is log.spans[-1]
    log.add(9.0, PPT)
    assert log.spans[-1].end == 9.0
    log.close(10.0)  # the GPU went missing
    assert log.active is None and log.spans[-1].end == 10.0
    log.add(11.0, None)  # unknown again: no span
    assert len(log.spans) == 3 and log.samples_seen == 9


def test_between_returns_overlapping_spans_in_order():
    log = ThrottleLog()
    for t in range(0, 100):
        log.add(float(t), PPT if t % 10 < 3 else OFF)  # spans [0,3], [10,13], ...
    assert [(s.start, s.end) for s in log.between(11.5, 31)] == [(10.0, 13.0), (20.0, 23.0), (30.0, 33.0)]
    assert log.between(4, 9) == []
    assert len(log.between(-1e9, 1e9)) == 10


def test_the_log_is_bounded():
    log = ThrottleLog(max_spans=5)
    for t in range(100):
        log.add(float(t), PPT if t % 2 else OFF)
    assert len(log.spans) == 5 and log.spans[0].start == 91.0


def _sample(t: float, throttle) -> GpuSample:
    return GpuSample(info=GpuInfo(card="card1", pci="0000:03:00.0", name="GPU"), timestamp=t, throttle=throttle)


def test_history_keeps_spans_and_a_missing_gpu_ends_one():
    history = History(capacity=16)
    history.append_snapshot(Snapshot("t", 1.0, [_sample(1.0, PPT)]))
    history.append_snapshot(Snapshot("t", 2.0, [_sample(2.0, PPT)]))
    history.append_snapshot(Snapshot("t", 3.0, []))  # the GPU is away
    gpu = history["0000:03:00.0"]
    assert [(s.start, s.end, s.open) for s in gpu.throttle.spans] == [(1.0, 3.0, False)]
    gpu.clear()
    assert not gpu.throttle.spans


def test_demo_mi300x_throttles_only_at_the_power_cap():
    rec = load_recording("mi300x-node")
    history = History(capacity=len(rec.frames))
    for i, frame in enumerate(rec.frames):
        history.append_snapshot(rec.snapshot(i, frame.t))
    gpu = history[rec.gpus[0].pci]
    spans = list(gpu.throttle.spans)
    assert spans and all(s.reasons == ("power limit (PPT0)",) for s in spans)
    t, power = gpu.series("power_w")
    for span in spans:
        inside = power[(t >= span.start) & (t < span.end)]
        assert inside.min() >= 735  # held at the 750 W cap (regulation noise) while it throttles
