"""Per-process history: bounded in processes and points, exited processes kept then aged out."""

from __future__ import annotations

import math

from rocmdesk.telemetry.model import ProcessUse, Snapshot
from rocmdesk.telemetry.proc_history import ProcessHistory

A, B = "0000:03:00.0", "0000:0a:00.0"


def _snap(t: float, *procs: ProcessUse) -> Snapshot:
    return Snapshot(backend="test", timestamp=t, processes=list(procs))


def _p(pid: int, pci: str = A, vram: int | None = 1 << 30, cu: float | None = 50.0) -> ProcessUse:
    return ProcessUse(pid=pid, pci=pci, name=f"p{pid}", vram_bytes=vram, cu_occupancy_percent=cu)


def test_points_per_process_and_gpu_with_missing_values_as_nan():
    h = ProcessHistory()
    h.feed(_snap(1.0, _p(1), _p(1, B, vram=None, cu=None)))
    h.feed(_snap(2.0, _p(1, vram=2 << 30, cu=75.0), _p(1, B, vram=None, cu=None)))
    track = h.get((1, A))
    assert list(track.times) == [1.0, 2.0]
    assert list(track.vram_bytes) == [1 << 30, 2 << 30] and list(track.compute_percent) == [50.0, 75.0]
    other = h.get((1, B))
    assert all(math.isnan(v) for v in other.vram_bytes) and all(math.isnan(v) for v in other.compute_percent)


def test_points_are_capped_and_times_only_move_forward():
    h = ProcessHistory(max_points=5)
    for t in range(10):
        h.feed(_snap(float(t), _p(7)))
    h.feed(_snap(3.0, _p(7)))  # clock went back: ignored
    h.feed(_snap(9.0, _p(7)))  # the same time again: ignored
    h.feed(_snap(float("nan"), _p(7)))
    assert list(h.get((7, A)).times) == [5.0, 6.0, 7.0, 8.0, 9.0]


def test_exited_process_is_kept_greyed_then_ages_out():
    h = ProcessHistory(keep_gone_s=60)
    h.feed(_snap(0.0, _p(1), _p(2)))
    h.feed(_snap(10.0, _p(2)))
    assert [t.key for t in h.gone()] == [(1, A)] and h.get((1, A)).gone_at == 10.0
    h.feed(_snap(69.0, _p(2)))
    assert h.get((1, A)) is not None  # 59 s gone: still kept
    h.feed(_snap(71.0, _p(2)))
    assert h.get((1, A)) is None and h.get((2, A)) is not None


def test_a_process_that_comes_back_is_live_again():
    h = ProcessHistory()
    h.feed(_snap(0.0, _p(1)))
    h.feed(_snap(1.0))
    h.feed(_snap(2.0, _p(1)))
    track = h.get((1, A))
    assert not track.gone and list(track.times) == [0.0, 2.0]


def test_process_cap_drops_the_longest_gone_first_and_never_one_in_this_sample():
    h = ProcessHistory(max_processes=3)
    h.feed(_snap(0.0, _p(1), _p(2), _p(3)))
    h.feed(_snap(1.0, _p(2), _p(3)))  # 1 exits
    h.feed(_snap(2.0, _p(3)))  # 2 exits
    h.feed(_snap(3.0, _p(3), _p(4)))  # full: the longest gone (1) makes room
    assert set(h.tracks) == {(2, A), (3, A), (4, A)}
    # every tracked process is in this sample: the newcomers are not tracked, nothing live is dropped
    h.feed(_snap(4.0, _p(2), _p(3), _p(4), _p(5), _p(6)))
    assert set(h.tracks) == {(2, A), (3, A), (4, A)}
    assert len(h.tracks) <= 3


def test_thousands_of_short_jobs_stay_within_the_caps():
    h = ProcessHistory(max_processes=16, max_points=10, keep_gone_s=1e9)
    for t in range(2000):
        h.feed(_snap(float(t), _p(10_000 + t), _p(1)))
    assert len(h.tracks) == 16 and (1, A) in h.tracks  # the long-running one survives the churn
    assert all(len(tr.times) <= 10 for tr in h.tracks.values())
