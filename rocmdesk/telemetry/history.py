"""Telemetry history in preallocated numpy ring buffers, one set per GPU.

Why this shape: the Graphs tab needs 24 h at 1 Hz for 8+ GPUs inside a 250 MB process budget and
must redraw cheaply. Each GPU owns one float64 timestamp ring and one float32 ring per metric
(NaN = not available / GPU absent), all preallocated, so an append is O(metrics) with no
allocation and a window view is a slice (one copy only when the window wraps the ring end).
8 GPUs x 14 metrics x 86400 points = 8 x (86400 x 8 + 14 x 86400 x 4) bytes, about 44 MB.

float32 keeps ~7 significant digits: byte counts of 192 GiB are stored to within ~16 KiB,
plenty for a graph. The capacity is in points: at 10 Hz the same buffers hold 2.4 h.
Hotplug: a GPU that disappears keeps its history and gets NaN gaps (the graph shows a break);
when it comes back (same PCI address) it continues in the same buffers.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from rocmdesk.telemetry.model import GpuSample, Snapshot
from rocmdesk.telemetry.throttle_spans import ThrottleLog

log = logging.getLogger(__name__)

DEFAULT_CAPACITY = 24 * 3600  # points: 24 h at 1 Hz
DEFAULT_METRICS: tuple[str, ...] = (
    "temperature_c.edge",
    "temperature_c.junction",
    "temperature_c.mem",
    "power_w",
    "power_cap_w",
    "vram_used_bytes",
    "vram_total_bytes",
    "gtt_used_bytes",
    "gpu_busy_percent",
    "mem_busy_percent",
    "sclk_mhz",
    "mclk_mhz",
    "fan_rpm",
    "fan_percent",
)
MAX_EXTRA_METRICS = 8  # other temperature labels seen in samples ("hotspot", "hbm0"...), at most this many


@dataclass(frozen=True, slots=True)
class Window:
    """A view of recent history: ``times`` (float64, oldest first) and one float32 array per metric."""

    times: np.ndarray
    values: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.times)

    def series(self, metric: str) -> tuple[np.ndarray, np.ndarray]:
        return self.times, self.values[metric]


class GpuHistory:
    """The rings of one GPU (keyed by PCI address)."""

    def __init__(self, key: str, capacity: int = DEFAULT_CAPACITY,
                 metrics: Sequence[str] = DEFAULT_METRICS) -> None:
        if capacity < 2:
            raise ValueError("capacity must be at least 2 points")
        self.key = key
        self.capacity = int(capacity)
        self.times = np.full(self.capacity, np.nan, dtype=np.float64)
        self.values: dict[str, np.ndarray] = {}
        for metric in metrics:
            self._add_metric(metric)
        self._base_metrics = len(self.values)
        self._head = 0  # next write position
        self._count = 0
        self.present = True
        self.clock_steps_back = 0  # timestamps that went backwards and were clamped
        self.label = key
        self.throttle = ThrottleLog()  # when it throttled and why (spans, not a ring)
        self.identity: tuple[int | None, str | None] = (None, None)  # (PCI device id, unique_id) it was fed

    # -- writing ---------------------------------------------------------------------------------
    def _add_metric(self, metric: str) -> np.ndarray:
        arr = np.full(self.capacity, np.nan, dtype=np.float32)
        self.values[metric] = arr
        return arr

    def _next_slot(self, timestamp: float) -> int:
        last = self.last_timestamp
        if last is not None and timestamp < last:
            # The wall clock stepped back (NTP, manual change): keep the ring ordered.
            self.clock_steps_back += 1
            timestamp = last
        slot = self._head
        self.times[slot] = timestamp
        self._head = (slot + 1) % self.capacity
        self._count = min(self._count + 1, self.capacity)
        return slot

    def append(self, sample: GpuSample, timestamp: float | None = None) -> None:
        """Store one sample; metrics it lacks (None, N/A) are stored as NaN."""
        slot = self._next_slot(sample.timestamp if timestamp is None else timestamp)
        temps = sample.temperature_c
        for metric, arr in self.values.items():
            if metric.startswith("temperature_c."):
                value = temps.get(metric[14:])
            else:
                value = getattr(sample, metric, None)
            arr[slot] = _as_float(value)
        self.throttle.add(float(self.times[slot]), sample.throttle)
        if len(temps) > 0:
            self._learn_extra_temperatures(temps, slot)
        self.present = True

    def _learn_extra_temperatures(self, temps: dict[str, float], slot: int) -> None:
        for label, value in temps.items():
            metric = f"temperature_c.{label}"
            if metric in self.values:
                continue
            if len(self.values) - self._base_metrics >= MAX_EXTRA_METRICS:
                continue
            log.debug("GPU %s: recording new temperature sensor %r", self.key, label)
            self._add_metric(metric)[slot] = _as_float(value)

    def append_gap(self, timestamp: float) -> None:
        """A point with every metric NaN: the GPU was absent (or its reading failed) then."""
        slot = self._next_slot(timestamp)
        for arr in self.values.values():
            arr[slot] = np.nan
        self.throttle.close(float(self.times[slot]))

    def clear(self) -> None:
        self.times.fill(np.nan)
        for arr in self.values.values():
            arr.fill(np.nan)
        self._head = 0
        self._count = 0
        self.throttle.clear()

    # -- reading ---------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._count

    @property
    def metrics(self) -> list[str]:
        return list(self.values)

    @property
    def nbytes(self) -> int:
        return int(self.times.nbytes + sum(arr.nbytes for arr in self.values.values()))

    @property
    def last_timestamp(self) -> float | None:
        if self._count == 0:
            return None
        return float(self.times[(self._head - 1) % self.capacity])

    @property
    def first_timestamp(self) -> float | None:
        if self._count == 0:
            return None
        return float(self.times[self._start()])

    def _start(self) -> int:
        return 0 if self._count < self.capacity else self._head

    def latest(self, metric: str) -> float:
        """The newest value of ``metric`` (NaN when none)."""
        if self._count == 0 or metric not in self.values:
            return math.nan
        return float(self.values[metric][(self._head - 1) % self.capacity])

    def _window_slices(self, seconds: float | None, now: float | None) -> tuple[slice, ...]:
        """Physical slices (oldest first) covering ``(now - seconds, now]``, or everything."""
        if self._count == 0:
            return ()
        if self._count < self.capacity:
            segments = [(0, self._head)]
        elif self._head == 0:
            segments = [(0, self.capacity)]
        else:
            segments = [(self._head, self.capacity), (0, self._head)]
        if seconds is None:
            return tuple(slice(a, b) for a, b in segments)
        end = self.last_timestamp if now is None else now
        if end is None:
            return ()
        start_time = end - seconds
        out = []
        for a, b in segments:
            seg = self.times[a:b]
            lo = a + int(np.searchsorted(seg, start_time, side="right"))
            hi = a + int(np.searchsorted(seg, end, side="right"))
            if hi > lo:
                out.append(slice(lo, hi))
        return tuple(out)

    def window(self, seconds: float | None = None, now: float | None = None,
               metrics: Iterable[str] | None = None) -> Window:
        """The points of the last ``seconds`` before ``now`` (default: the newest point).

        Zero-copy views when the window does not wrap the ring end; one concatenation otherwise.
        """
        wanted = list(self.values) if metrics is None else [m for m in metrics if m in self.values]
        slices = self._window_slices(seconds, now)
        if not slices:
            empty32 = np.empty(0, dtype=np.float32)
            return Window(np.empty(0, dtype=np.float64), {m: empty32 for m in wanted})
        if len(slices) == 1:
            s = slices[0]
            return Window(self.times[s], {m: self.values[m][s] for m in wanted})
        return Window(np.concatenate([self.times[s] for s in slices]),
                      {m: np.concatenate([self.values[m][s] for s in slices]) for m in wanted})

    def series(self, metric: str, seconds: float | None = None,
               now: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        if metric not in self.values:
            raise KeyError(f"no history of {metric!r} for GPU {self.key}")
        return self.window(seconds, now, (metric,)).series(metric)


class History:
    """Ring buffers for every GPU seen, keyed by PCI address; fed with snapshots."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY, metrics: Sequence[str] = DEFAULT_METRICS) -> None:
        self.capacity = int(capacity)
        self.metrics = tuple(metrics)
        self._gpus: dict[str, GpuHistory] = {}

    @classmethod
    def for_duration(cls, seconds: float, rate_hz: float, metrics: Sequence[str] = DEFAULT_METRICS) -> History:
        return cls(max(2, math.ceil(seconds * rate_hz)), metrics)

    def __contains__(self, key: str) -> bool:
        return key in self._gpus

    def __getitem__(self, key: str) -> GpuHistory:
        return self._gpus[key]

    def keys(self) -> list[str]:
        return list(self._gpus)

    def gpus(self) -> list[GpuHistory]:
        return list(self._gpus.values())

    def add_gpu(self, key: str, label: str | None = None) -> GpuHistory:
        """Allocate a GPU's rings (no-op if it exists); a hotplugged GPU gets fresh buffers."""
        gpu = self._gpus.get(key)
        if gpu is None:
            gpu = GpuHistory(key, self.capacity, self.metrics)
            self._gpus[key] = gpu
        if label:
            gpu.label = label
        return gpu

    def remove_gpu(self, key: str) -> bool:
        """Drop a GPU and free its buffers (a GPU that left for good); False if unknown."""
        return self._gpus.pop(key, None) is not None

    def append_snapshot(self, snapshot: Snapshot) -> None:
        """Append every GPU of the snapshot; known GPUs missing from it get a gap.

        A different GPU at a known PCI address (another device id or unique_id: a board swapped in a
        hotplug slot) starts a history of its own instead of continuing the old one's (issue 11, item 5).
        """
        seen = set()
        for sample in snapshot.gpus:
            key = sample.info.pci
            seen.add(key)
            gpu = self._gpus.get(key)
            identity = (sample.info.device_id, sample.info.unique_id)
            if gpu is not None and not _same_gpu(gpu.identity, identity):
                log.info("GPU %s is a different GPU now (%s, was %s): its history starts afresh",
                         key, identity, gpu.identity)
                self.remove_gpu(key)
                gpu = None
            if gpu is None:
                gpu = self.add_gpu(key, label=sample.info.card)
            gpu.identity = (identity[0] if identity[0] is not None else gpu.identity[0],
                            identity[1] if identity[1] is not None else gpu.identity[1])
            gpu.append(sample, sample.timestamp or snapshot.timestamp)
        for key, gpu in self._gpus.items():
            if key not in seen:
                if gpu.present:
                    log.info("GPU %s missing from a sample: history continues with a gap", key)
                gpu.present = False
                gpu.append_gap(snapshot.timestamp)

    def extend(self, snapshots: Iterable[Snapshot]) -> int:
        """Append many snapshots (a demo pre-roll, a recorded bundle); returns how many."""
        n = 0
        for snapshot in snapshots:
            self.append_snapshot(snapshot)
            n += 1
        return n

    @property
    def nbytes(self) -> int:
        return sum(g.nbytes for g in self._gpus.values())


def _same_gpu(known: tuple[int | None, str | None], seen: tuple[int | None, str | None]) -> bool:
    """Whether two (device id, unique_id) pairs can be one GPU: only ids both sides know can differ."""
    return all(a is None or b is None or a == b for a, b in zip(known, seen, strict=True))


def downsample_minmax(times: np.ndarray, values: np.ndarray, buckets: int,
                      t_start: float | None = None, t_end: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Reduce a series to at most 2 points per bucket (pixel column), keeping peaks.

    Each bucket yields its minimum and maximum, in the order the trend runs (min first when the
    bucket ends higher than it starts), at the bucket's first and last timestamps, so spikes
    stay visible and the line does not zig-zag. NaN points are ignored unless a whole bucket is
    NaN, which stays NaN (a gap in the line). Series shorter than 2 x buckets come back as given.
    """
    n = len(times)
    if len(values) != n:
        raise ValueError("times and values differ in length")
    if buckets < 1:
        raise ValueError("need at least one bucket")
    if n <= 2 * buckets:
        return times, values
    t0 = float(times[0]) if t_start is None else float(t_start)
    t1 = float(times[-1]) if t_end is None else float(t_end)
    span = t1 - t0
    if not span > 0:
        return times[-1:], values[-1:]
    edges = np.linspace(t0, t1, buckets + 1)
    bounds = np.searchsorted(times, edges, side="left")
    bounds[-1] = np.searchsorted(times, t1, side="right")  # the last bucket includes t_end
    starts, ends = bounds[:-1], bounds[1:]
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    if len(starts) == 0:
        return times[:0], values[:0]
    # reduceat reduces each start up to the next one; that equals the bucket because empty
    # buckets hold no points. Cut the tail so the last bucket stops at t_end.
    inside = values[: ends[-1]]
    with np.errstate(all="ignore"):
        lo = np.fmin.reduceat(inside, starts)
        hi = np.fmax.reduceat(inside, starts)
    first_t = times[starts]
    last_t = times[ends - 1]
    rising = values[ends - 1] >= values[starts]
    out_t = np.empty(2 * len(starts), dtype=np.float64)
    out_v = np.empty(2 * len(starts), dtype=values.dtype)
    out_t[0::2] = first_t
    out_t[1::2] = last_t
    out_v[0::2] = np.where(rising, lo, hi)
    out_v[1::2] = np.where(rising, hi, lo)
    return out_t, out_v


def _as_float(value: object) -> float:
    if value is None or isinstance(value, (str, bool)):
        return math.nan
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan
