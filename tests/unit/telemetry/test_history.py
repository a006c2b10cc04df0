"""History ring buffers: append, windows across the ring end, gaps for vanished GPUs, min/max downsampling."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rocmdesk.telemetry.history import (
    DEFAULT_CAPACITY,
    DEFAULT_METRICS,
    MAX_EXTRA_METRICS,
    GpuHistory,
    History,
    downsample_minmax,
)
from rocmdesk.telemetry.model import GpuInfo, GpuSample, Snapshot

A = GpuInfo(card="card0", pci="0000:03:00.0", name="GPU A")
B = GpuInfo(card="card1", pci="0000:43:00.0", name="GPU B")


def sample(info: GpuInfo, t: float, power: float | None = 100.0, **temps: float) -> GpuSample:
    s = GpuSample(info=info, timestamp=t, power_w=power, vram_used_bytes=2 << 30, gpu_busy_percent=50)
    s.temperature_c = dict(temps) if temps else {"edge": 40.0 + t % 7}
    if power is None:
        s.unavailable["power_w"] = "unreadable (permission denied)"
    return s


def snap(t: float, *samples: GpuSample) -> Snapshot:
    return Snapshot(backend="test", timestamp=t, gpus=list(samples))


def test_append_and_read_back():
    gpu = GpuHistory("0000:03:00.0", capacity=100)
    for t in range(10):
        gpu.append(sample(A, 1000.0 + t, power=float(t)))
    assert len(gpu) == 10
    assert gpu.first_timestamp == 1000.0 and gpu.last_timestamp == 1009.0
    times, values = gpu.series("power_w")
    assert times.dtype == np.float64 and values.dtype == np.float32
    assert times.tolist() == [1000.0 + t for t in range(10)]
    assert values.tolist() == [float(t) for t in range(10)]
    assert gpu.latest("power_w") == 9.0
    assert gpu.latest("vram_used_bytes") == float(2 << 30)
    assert math.isnan(gpu.latest("no-such-metric"))


def test_not_available_is_nan_never_zero():
    gpu = GpuHistory("x", capacity=10)
    gpu.append(sample(A, 1.0, power=None, junction=50.0))
    assert math.isnan(gpu.latest("power_w"))
    assert math.isnan(gpu.latest("temperature_c.edge"))  # no edge sensor
    assert gpu.latest("temperature_c.junction") == 50.0
    assert math.isnan(gpu.latest("fan_rpm"))


def test_garbage_values_become_nan():
    gpu = GpuHistory("x", capacity=10)
    s = sample(A, 1.0)
    s.performance_level = "auto"
    s.fan_rpm = "12ab"  # a backend bug must not crash the history
    s.sclk_mhz = True
    gpu.append(s)
    assert math.isnan(gpu.latest("fan_rpm")) and math.isnan(gpu.latest("sclk_mhz"))


def test_window_of_the_last_seconds_is_a_view():
    gpu = GpuHistory("x", capacity=1000)
    for t in range(100):
        gpu.append(sample(A, float(t), power=float(t)))
    times, values = gpu.series("power_w", seconds=10)
    assert times.tolist() == [float(t) for t in range(90, 100)]  # (now - 10, now]
    assert np.shares_memory(values, gpu.values["power_w"])  # no copy
    times, _ = gpu.series("power_w", seconds=10, now=50.0)
    assert times.tolist() == [float(t) for t in range(41, 51)]
    assert len(gpu.window(seconds=5, now=-100.0)) == 0


def test_ring_wraps_and_keeps_the_newest():
    gpu = GpuHistory("x", capacity=10)
    for t in range(25):
        gpu.append(sample(A, float(t), power=float(t)))
    assert len(gpu) == 10
    times, values = gpu.series("power_w")
    assert times.tolist() == [float(t) for t in range(15, 25)]
    assert values.tolist() == [float(t) for t in range(15, 25)]
    # a window straddling the physical end of the ring is stitched in order
    times, values = gpu.series("power_w", seconds=7)
    assert times.tolist() == [float(t) for t in range(18, 25)]
    assert values.tolist() == times.tolist()
    assert gpu.first_timestamp == 15.0
    for t in range(25, 30):  # head lands exactly on 0 after 30 appends
        gpu.append(sample(A, float(t), power=float(t)))
    assert gpu.series("power_w")[0].tolist() == [float(t) for t in range(20, 30)]


def test_time_going_backwards_is_clamped():
    gpu = GpuHistory("x", capacity=10)
    gpu.append(sample(A, 100.0))
    gpu.append(sample(A, 90.0))  # wall clock stepped back
    times, _ = gpu.series("power_w")
    assert times.tolist() == [100.0, 100.0]
    assert gpu.clock_steps_back == 1


def test_new_temperature_labels_are_learned_up_to_a_limit():
    gpu = GpuHistory("x", capacity=10)
    gpu.append(sample(A, 1.0, hotspot=70.0))
    assert gpu.latest("temperature_c.hotspot") == 70.0
    many = {f"hbm{i}": float(i) for i in range(MAX_EXTRA_METRICS + 5)}
    gpu.append(sample(A, 2.0, **many))
    extras = [m for m in gpu.metrics if m not in DEFAULT_METRICS]
    assert len(extras) == MAX_EXTRA_METRICS
    # older points of a metric that appeared later are NaN, not 0
    assert math.isnan(gpu.series("temperature_c.hbm0")[1][0])


def test_gpu_disappears_and_reappears():
    history = History(capacity=100)
    for t in range(5):
        history.append_snapshot(snap(float(t), sample(A, float(t)), sample(B, float(t), power=200.0)))
    assert history.keys() == [A.pci, B.pci]
    for t in range(5, 8):  # B unplugged
        history.append_snapshot(snap(float(t), sample(A, float(t))))
    assert not history[B.pci].present and history[A.pci].present
    for t in range(8, 10):  # B is back at the same PCI address
        history.append_snapshot(snap(float(t), sample(A, float(t)), sample(B, float(t), power=210.0)))
    assert history[B.pci].present
    times, power = history[B.pci].series("power_w")
    assert times.tolist() == [float(t) for t in range(10)]
    assert power[:5].tolist() == [200.0] * 5
    assert np.isnan(power[5:8]).all()  # the gap shows as a break in the line
    assert power[8:].tolist() == [210.0, 210.0]
    assert len(history[A.pci]) == 10


def test_add_and_remove_gpus_at_runtime():
    history = History(capacity=50)
    gpu = history.add_gpu(A.pci, label="card0")
    assert history.add_gpu(A.pci) is gpu and gpu.label == "card0"
    assert A.pci in history and history.nbytes == gpu.nbytes
    history.append_snapshot(snap(1.0, sample(B, 1.0)))
    assert history.keys() == [A.pci, B.pci]
    assert history[B.pci].label == "card1"
    assert math.isnan(history[A.pci].latest("power_w"))  # A never sampled: a gap
    assert history.remove_gpu(A.pci) is True
    assert history.remove_gpu(A.pci) is False
    assert history.keys() == [B.pci]


def test_snapshot_timestamp_is_used_when_sample_has_none():
    history = History(capacity=10)
    s = sample(A, 0.0)
    history.append_snapshot(snap(55.0, s))
    assert history[A.pci].last_timestamp == 55.0


def test_bad_capacity_and_unknown_metric():
    with pytest.raises(ValueError):
        GpuHistory("x", capacity=1)
    with pytest.raises(KeyError):
        GpuHistory("x", capacity=5).series("bogus")
    assert History.for_duration(3600, 10.0).capacity == 36000


def test_memory_of_24h_for_8_gpus_fits_the_budget():
    history = History()
    for n in range(8):
        history.add_gpu(f"0000:{n:02x}:00.0")
    assert history.capacity == DEFAULT_CAPACITY == 86400
    per_gpu = DEFAULT_CAPACITY * (8 + 4 * len(DEFAULT_METRICS))
    assert history.nbytes == 8 * per_gpu
    assert history.nbytes < 60 * 1024 * 1024  # of a 250 MB process budget


def test_clear():
    gpu = GpuHistory("x", capacity=5)
    gpu.append(sample(A, 1.0))
    gpu.clear()
    assert len(gpu) == 0 and gpu.last_timestamp is None and len(gpu.window()) == 0


# -- downsampling -----------------------------------------------------------------------------------


def test_downsample_keeps_extremes_and_bounds_points():
    t = np.arange(10_000, dtype=np.float64)
    v = np.sin(t / 300).astype(np.float32)
    v[4321] = 5.0  # a one-sample spike must survive
    v[7777] = -5.0
    x, y = downsample_minmax(t, v, 500)
    assert len(x) <= 1000 and len(x) == len(y)
    assert y.max() == 5.0 and y.min() == -5.0
    assert np.all(np.diff(x) >= 0)
    assert x[0] == 0.0 and x[-1] == 9999.0


def test_downsample_order_follows_the_trend():
    t = np.arange(100, dtype=np.float64)
    rising = np.arange(100, dtype=np.float32)
    _x, y = downsample_minmax(t, rising, 10)
    assert np.all(np.diff(y) >= 0)
    _x, y = downsample_minmax(t, rising[::-1].copy(), 10)
    assert np.all(np.diff(y) <= 0)


def test_downsample_keeps_gaps_and_ignores_stray_nans():
    t = np.arange(1000, dtype=np.float64)
    v = np.ones(1000, dtype=np.float32)
    v[100:300] = np.nan  # the GPU was gone: whole buckets NaN
    v[555] = np.nan  # one failed reading inside a bucket
    _x, y = downsample_minmax(t, v, 10)
    assert np.isnan(y[2:4]).all()  # bucket 100..199
    assert not np.isnan(y[10:12]).any()  # bucket 500..599 has data besides the NaN


def test_downsample_short_series_unchanged_and_limits():
    t = np.arange(10, dtype=np.float64)
    v = np.arange(10, dtype=np.float32)
    x, y = downsample_minmax(t, v, 100)
    assert x is t and y is v
    long_t = np.arange(1000, dtype=np.float64)
    long_v = np.arange(1000, dtype=np.float32)
    x, y = downsample_minmax(long_t, long_v, 10, t_start=0.0, t_end=499.0)
    assert x.max() <= 499.0 and y.max() == 499.0
    with pytest.raises(ValueError):
        downsample_minmax(t, v[:5], 3)
    with pytest.raises(ValueError):
        downsample_minmax(t, v, 0)
    same = np.full(100, 7.0)
    x, y = downsample_minmax(same, np.arange(100, dtype=np.float32), 5)
    assert x.tolist() == [7.0] and y.tolist() == [99.0]
    empty_t, empty_v = downsample_minmax(long_t, long_v, 10, t_start=5000.0, t_end=6000.0)
    assert len(empty_t) == 0 and len(empty_v) == 0


def test_view_and_downsample_of_a_wrapped_ring():
    gpu = GpuHistory("x", capacity=1000)
    for t in range(2500):
        gpu.append(sample(A, float(t), power=float(t % 100)))
    times, values = gpu.series("power_w", seconds=900)
    x, y = downsample_minmax(times, values, 50)
    assert len(x) <= 100 and y.max() == 99.0 and y.min() == 0.0
