"""Chart axes: round tick values, labels that stay distinct, time in s, min or h.

Pure arithmetic shared by every report chart (see :mod:`rocmdesk.report.svg_charts`): a flat
61 °C line gets ticks 55, 60, 65, 70 rather than 61, 61.2, 61.5, 61.8, and a span of two seconds
is labelled 0 s, 0.5 s, 1 s rather than repeating "0 s".
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Axis:
    """The drawn range of an axis, its tick positions and their labels (distinct, same decimals)."""

    low: float
    high: float
    ticks: tuple[float, ...]
    labels: tuple[str, ...]


def nice_step(raw: float) -> float:
    """The smallest 1, 2 or 5 x 10^n step (2.5 x 10^n from 25 up, whose labels stay whole) >= ``raw``."""
    if not math.isfinite(raw) or raw <= 0:
        return 1.0
    magnitude = 10.0 ** math.floor(math.log10(raw))
    for mantissa in (1.0, 2.0, 2.5, 5.0, 10.0):
        if mantissa == 2.5 and magnitude < 10:
            continue  # 0.25 or 2.5 steps give labels like 61.25 and 63.75
        if mantissa * magnitude >= raw * (1 - 1e-9):
            return mantissa * magnitude
    return 10.0 * magnitude


def _clean(value: float, step: float) -> float:
    """``value`` without float noise from k * step (0.30000000000000004), and never -0."""
    digits = max(0, 3 - math.floor(math.log10(step)))
    return round(value, digits) + 0.0


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values from at or below ``low`` to at or above ``high``, about ``count`` of them."""
    if not math.isfinite(low) or not math.isfinite(high):
        return [0.0, 1.0]
    if high < low:
        low, high = high, low
    if high == low:
        high = low + (abs(low) * 0.1 or 1.0)
    span = high - low
    if not math.isfinite(span):  # near the float limits: just the two ends
        return [low, high]
    step = nice_step(span / max(1, count - 1))
    first = math.floor(low / step + 1e-9)
    last = math.ceil(high / step - 1e-9)
    return [_clean(k * step, step) for k in range(first, last + 1)]


def tick_labels(ticks: Sequence[float]) -> tuple[str, ...]:
    """Labels with the fewest decimals that keep every tick distinct and exact (1e6 and up, or below
    0.001, in scientific notation); zero is always "0"."""
    values = [float(t) for t in ticks]
    if not values:
        return ()
    diffs = [abs(b - a) for a, b in itertools.pairwise(values) if b != a]
    step = min(diffs) if diffs else (abs(values[0]) or 1.0)
    biggest = max(abs(v) for v in values)
    scientific = biggest >= 1e6 or 0 < biggest < 1e-3

    def render(value: float, decimals: int) -> str:
        if value == 0:
            return "0"
        if scientific:
            mantissa, exponent = f"{value:.{decimals}e}".split("e")
            return f"{mantissa}e{int(exponent)}"
        text = f"{value:,.{decimals}f}" if biggest >= 10_000 else f"{value:.{decimals}f}"
        return text.replace(",", " ")

    for decimals in range(0, 16):
        labels = [render(v, decimals) for v in values]
        exact = all(abs(float(label.replace(" ", "")) - v) <= step * 1e-3 for label, v in zip(labels, values,
                                                                                              strict=True))
        if exact and len(set(labels)) == len(labels):
            return tuple(labels)
    return tuple(repr(v) for v in values)


def value_axis(values: np.ndarray, y_min: float | None = None, y_max: float | None = None,
               min_span: float | None = None, count: int = 5) -> Axis:
    """The y axis for ``values`` (NaN and inf ignored): fixed ends where given, a zero baseline when the
    data sits well above zero, and at least ``min_span`` (default: a tenth of the values' size) so a
    flat line gets a few round ticks around it instead of 61, 61.2, 61.5, 61.8."""
    data = np.asarray(values, dtype=np.float64).ravel()
    data = data[np.isfinite(data)]
    if len(data):
        lo, hi = float(data.min()), float(data.max())
        if 0 <= lo < hi * 0.5:
            lo = 0.0
    else:
        lo, hi = 0.0, 1.0
    never_negative = lo >= 0
    if y_min is not None:
        lo = float(y_min)
    if y_max is not None:
        hi = float(y_max)
    if hi < lo:  # the data lies outside a fixed end
        hi, lo = (lo, lo) if y_max is None else (hi, hi)
    span = min_span if min_span is not None and min_span > 0 else (max(abs(lo), abs(hi)) * 0.1 or 1.0)
    if math.isfinite(hi - lo) and hi - lo < span:
        if y_min is not None and y_max is not None:
            hi = lo + span
        elif y_min is not None:
            hi = lo + span
        elif y_max is not None:
            lo = hi - span
        else:
            mid = (lo + hi) / 2
            lo, hi = mid - span / 2, mid + span / 2
            if never_negative and lo < 0:
                lo, hi = 0.0, span
    ticks = nice_ticks(lo, hi, count)
    if y_min is not None:
        ticks = [t for t in ticks if t >= y_min - 1e-9 * max(1.0, abs(y_min))] or [float(y_min)]
    if y_max is not None:
        ticks = [t for t in ticks if t <= y_max + 1e-9 * max(1.0, abs(y_max))] or [float(y_max)]
    low = float(y_min) if y_min is not None else ticks[0]
    high = float(y_max) if y_max is not None else ticks[-1]
    if not high > low:
        high = low + 1.0
    return Axis(low, high, tuple(ticks), tick_labels(ticks))


# time units: (largest span shown in this unit in s, unit seconds, suffix, steps in that unit)
_TIME_UNITS = (
    (180.0, 1.0, "s", (1, 2, 5, 10, 15, 20, 30, 60)),
    (3 * 3600.0, 60.0, "min", (1, 2, 5, 10, 15, 20, 30, 60)),
    (math.inf, 3600.0, "h", (1, 2, 3, 6, 12, 24, 48, 72, 168)),
)


def time_axis(span_s: float, count: int = 6) -> Axis:
    """Ticks from 0 to ``span_s`` seconds in one unit (s under 3 min, min under 3 h, then h), at
    clock-like steps (15 s, 5 min, 6 h), labelled "0 s", "1.5 s", "30 min", "12 h"; never a repeat."""
    if not math.isfinite(span_s) or span_s <= 0:
        span_s = 1.0
    _limit, unit_s, suffix, steps = next(u for u in _TIME_UNITS if span_s < u[0])
    value = span_s / unit_s
    raw = value / max(1, count - 1)
    step = next((float(s) for s in steps if s >= raw * (1 - 1e-9)), None) if raw >= 1 else None
    if step is None:
        step = nice_step(raw)
    # a window recorded as 3599 s of a 60 min view still ends at its "60 min" tick
    ticks = [_clean(k * step, step) for k in range(0, math.floor(value / step + 0.02) + 1)]
    numbers = [label if "." not in label else label.rstrip("0").rstrip(".") for label in tick_labels(ticks)]
    seconds = tuple(t * unit_s for t in ticks)
    return Axis(0.0, float(max(span_s, seconds[-1])), seconds, tuple(f"{n} {suffix}" for n in numbers))
