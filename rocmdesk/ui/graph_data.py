"""Turn recorded series into what a plot can draw cheaply (pure numpy, no Qt).

A 24 h series at 10 Hz is 864 000 points; a plot is ~1000 pixels wide. Drawing more than two
points per pixel column is wasted work, so each pixel-wide bin keeps only its minimum and
maximum (peaks survive, unlike plain subsampling). Bins are aligned to absolute time so the
picture does not shimmer as the window scrolls.
"""

from __future__ import annotations

import math

import numpy as np

from rocmdesk.telemetry.history import downsample_minmax

FAR_FUTURE_S = 10 * 24 * 3600.0


def visible_slice(t: np.ndarray, t0: float, t1: float) -> slice:
    """Indices of samples in [t0, t1] plus one on each side, so lines reach the plot edges."""
    i0 = int(np.searchsorted(t, t0, side="left"))
    i1 = int(np.searchsorted(t, t1, side="right"))
    return slice(max(0, i0 - 1), min(len(t), i1 + 1))


def insert_gaps(t: np.ndarray, y: np.ndarray, max_gap_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Put a NaN where consecutive samples are further apart than ``max_gap_s`` (no line drawn)."""
    if len(t) < 2:
        return t, y
    breaks = np.flatnonzero(np.diff(t) > max_gap_s)
    if len(breaks) == 0:
        return t, y
    at = breaks + 1
    return np.insert(t, at, t[breaks] + max_gap_s / 2), np.insert(y.astype(np.float64, copy=False), at, np.nan)


def minmax_decimate(t: np.ndarray, y: np.ndarray, t0: float, t1: float, bins: int,
                    max_gap_s: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The visible part of (t, y), at most ~2 points per bin, as float64 arrays ready to draw.

    Bucketing is the history's own min/max (searchsorted edges, so temporaries stay the size
    of the output, not of a 24 h series); edges sit on multiples of the bin width.
    """
    sl = visible_slice(t, t0, t1)
    t, y = t[sl], y[sl]
    bins = max(1, int(bins))
    width = (t1 - t0) / bins
    if len(t) > 2 * bins and width > 0:
        start = np.floor(t0 / width) * width
        t, y = downsample_minmax(t, y, bins + 1, t_start=start, t_end=start + (bins + 1) * width)
        if max_gap_s is not None:
            max_gap_s = max(max_gap_s, 2 * width)
    t = np.asarray(t, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if max_gap_s is not None:
        t, y = insert_gaps(t, y, max_gap_s)
    return t, y


def steps(t: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A slowly changing level (power cap, VRAM total) as its change points only.

    The last level is extended far into the future, so the line needs redrawing only when
    the level changes, not on every tick.
    """
    if len(t) == 0:
        return np.empty(0), np.empty(0)
    y = np.asarray(y, dtype=np.float64)
    finite = np.isfinite(y)
    change = np.flatnonzero(np.concatenate(([True], (y[1:] != y[:-1]) & (finite[1:] | finite[:-1]))))
    xs = np.repeat(np.asarray(t, dtype=np.float64)[change], 2)[1:]
    ys = np.repeat(y[change], 2)[:-1]
    xs = np.append(xs, float(t[-1]) + FAR_FUTURE_S)
    ys = np.append(ys, y[change[-1]])
    return xs, ys


def nearest_index(t: np.ndarray, when: float) -> int | None:
    if len(t) == 0:
        return None
    i = int(np.searchsorted(t, when))
    if i >= len(t):
        return len(t) - 1
    if i > 0 and abs(t[i - 1] - when) <= abs(t[i] - when):
        return i - 1
    return i


def fmt_span(seconds: float) -> str:
    """A short recorded span: "12 s", "4 min"."""
    seconds = max(0, int(seconds))
    return f"{seconds} s" if seconds < 120 else f"{seconds // 60} min"


def nice_ceiling(value: float) -> float:
    """Round up to the next of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 or 10 times a power of ten (a tight
    value range whose ticks still land on round numbers)."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if value <= m * exp:
            return m * exp
    return 10 * exp
