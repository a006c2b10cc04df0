"""History graphs as PNG files, drawn with numpy and written with zlib: no Qt, no matplotlib.

Reports must render on a headless machine and in the Qt-free core, so this module has its own
small rasterizer: a white canvas, axes with round tick values, one coloured polyline per GPU
(gaps where a GPU was absent), a legend. Text is blended from anti-aliased glyphs of DejaVu Sans
rendered once at development time (:mod:`rocmdesk.report.chart_font`), so labels look like the
rest of the report instead of a pixel font, in upper and lower case.
"""

from __future__ import annotations

import base64
import itertools
import math
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from rocmdesk.wording import gpu_label

# -- font -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Glyph:
    advance: float  # pixels the pen moves on
    left: int  # where the bitmap starts, relative to the pen
    coverage: np.ndarray  # (line height, width) float32 in 0..1


@dataclass(frozen=True, slots=True)
class Font:
    ascent: int
    height: int
    glyphs: dict[str, Glyph]

    def glyph(self, ch: str) -> Glyph:
        return self.glyphs.get(ch) or self.glyphs["?"]

    def width(self, text: str) -> int:
        return math.ceil(sum(self.glyph(ch).advance for ch in text))


@cache
def font(style: str = "regular", scale: int = 1) -> Font:
    """A decoded glyph set: "regular" (labels) or "bold" (titles), at 1x or 2x pixel density."""
    from rocmdesk.report.chart_font import STYLES

    ascent, height, chars, advances, lefts, widths, chunks = STYLES[style if scale == 1 else f"{style}@2x"]
    blob = np.frombuffer(zlib.decompress(base64.b64decode("".join(chunks))), dtype=np.uint8)
    glyphs, pos = {}, 0
    for ch, advance, left, width in zip(chars, advances, lefts, widths, strict=True):
        size = height * width
        coverage = blob[pos:pos + size].reshape(height, width).astype(np.float32) / 255.0
        pos += size
        glyphs[ch] = Glyph(advance / 64.0, left, coverage)
    return Font(ascent, height, glyphs)


# Colours: a palette that stays distinct for 8 GPUs and prints in grey as different shades.
PALETTE: tuple[tuple[int, int, int], ...] = (
    (214, 39, 40), (31, 119, 180), (44, 160, 44), (255, 127, 14),
    (148, 103, 189), (23, 190, 207), (140, 86, 75), (227, 119, 194),
)
WHITE = (255, 255, 255)
BLACK = (20, 20, 20)
GRID = (225, 225, 225)
AXIS = (90, 90, 90)
MUTED = (110, 110, 110)


def text_width(text: str, style: str = "regular", scale: int = 1) -> int:
    return font(style, scale).width(text)


def elide(text: str, max_px: int, style: str = "regular", scale: int = 1) -> str:
    """``text`` cut with an ellipsis so it fits ``max_px`` (whole text when it fits)."""
    f = font(style, scale)
    if f.width(text) <= max_px:
        return text
    while text and f.width(text + "…") > max_px:
        text = text[:-1]
    return (text.rstrip() + "…") if text else ""


class Canvas:
    """An RGB image with the few drawing operations a line chart needs."""

    def __init__(self, width: int, height: int, background: tuple[int, int, int] = WHITE) -> None:
        self.width, self.height = width, height
        self.pixels = np.empty((height, width, 3), dtype=np.uint8)
        self.pixels[:] = background

    def rect(self, x0: int, y0: int, x1: int, y1: int, color: tuple[int, int, int]) -> None:
        """Filled rectangle, corners inclusive-exclusive, clipped to the canvas."""
        x0, x1 = max(0, min(x0, x1)), min(self.width, max(x0, x1))
        y0, y1 = max(0, min(y0, y1)), min(self.height, max(y0, y1))
        if x1 > x0 and y1 > y0:
            self.pixels[y0:y1, x0:x1] = color

    def text(self, x: int, y: int, text: str, color: tuple[int, int, int] = BLACK, style: str = "regular",
             scale: int = 1) -> int:
        """Blend ``text`` with its top-left corner at (x, y); returns its width. Unknown characters show as '?'."""
        f = font(style, scale)
        ink = np.asarray(color, dtype=np.float32)
        pen = float(x)
        for ch in text:
            glyph = f.glyph(ch)
            gx = round(pen) + glyph.left
            h, w = glyph.coverage.shape
            x0, y0 = max(gx, 0), max(y, 0)
            x1, y1 = min(gx + w, self.width), min(y + h, self.height)
            if x1 > x0 and y1 > y0:
                alpha = glyph.coverage[y0 - y:y1 - y, x0 - gx:x1 - gx, None]
                region = self.pixels[y0:y1, x0:x1].astype(np.float32)
                self.pixels[y0:y1, x0:x1] = np.rint(region + (ink - region) * alpha).astype(np.uint8)
            pen += glyph.advance
        return math.ceil(pen - x)

    def polyline(self, xs: np.ndarray, ys: np.ndarray, color: tuple[int, int, int], width: int = 2) -> None:
        """Connect consecutive finite points; a NaN breaks the line (a gap in the data)."""
        xs = np.asarray(xs, dtype=np.float64)
        ys = np.asarray(ys, dtype=np.float64)
        if len(xs) == 0:
            return
        if len(xs) == 1:
            xs, ys = np.repeat(xs, 2), np.repeat(ys, 2)
        x0, y0, x1, y1 = xs[:-1], ys[:-1], xs[1:], ys[1:]
        ok = np.isfinite(x0) & np.isfinite(y0) & np.isfinite(x1) & np.isfinite(y1)
        x0, y0, x1, y1 = x0[ok], y0[ok], x1[ok], y1[ok]
        if len(x0) == 0:
            return
        steps = (np.maximum(np.abs(x1 - x0), np.abs(y1 - y0)).astype(np.int64) + 1)
        steps = np.minimum(steps, 4 * (self.width + self.height))
        index = np.repeat(np.arange(len(steps)), steps)
        starts = np.repeat(np.cumsum(steps) - steps, steps)
        t = (np.arange(int(steps.sum())) - starts) / np.repeat(np.maximum(steps - 1, 1), steps)
        px = np.rint(x0[index] + (x1 - x0)[index] * t).astype(np.int64)
        py = np.rint(y0[index] + (y1 - y0)[index] * t).astype(np.int64)
        for dx in range(-(width // 2), width - width // 2):
            for dy in range(-(width // 2), width - width // 2):
                qx, qy = px + dx, py + dy
                keep = (qx >= 0) & (qx < self.width) & (qy >= 0) & (qy < self.height)
                self.pixels[qy[keep], qx[keep]] = color

    def png(self) -> bytes:
        return encode_png(self.pixels)


def encode_png(pixels: np.ndarray) -> bytes:
    """An RGB uint8 array as PNG bytes (filter 0 on every row, zlib level 9)."""
    height, width, _ = pixels.shape
    rows = np.zeros((height, width * 3 + 1), dtype=np.uint8)
    rows[:, 1:] = pixels.reshape(height, width * 3)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows.tobytes(), 9))
            + chunk(b"IEND", b""))


def decode_png_rgb(data: bytes) -> np.ndarray:
    """Read back a PNG written by :func:`encode_png` (tests; filter 0, RGB 8-bit only)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(height, width * 3 + 1)
    return raw[:, 1:].reshape(height, width, 3)


# -- axes -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Series:
    label: str  # legend text ("card0 · RX 7900 XTX")
    times: np.ndarray  # seconds, any origin
    values: np.ndarray  # NaN = not available


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


# -- charts -----------------------------------------------------------------------------------


def line_chart(series: Sequence[Series], title: str, unit: str, width: int = 960, height: int = 300,
               y_min: float | None = None, y_max: float | None = None, *, min_span: float | None = None,
               scale: int = 1) -> bytes:
    """A PNG line chart: title, y axis with unit, time axis (from the first sample), legend.

    ``width`` and ``height`` are logical pixels; ``scale`` 2 draws everything at twice the density
    (a crisp picture on a HiDPI screen shown at ``width``)."""
    k = 2 if scale >= 2 else 1
    canvas = Canvas(width * k, height * k)
    label_font, title_font = font("regular", k), font("bold", k)
    finite = [np.asarray(s.values, dtype=np.float64) for s in series]
    all_values = np.concatenate(finite) if finite else np.array([])
    has_data = bool(np.isfinite(all_values).any())
    y_axis = value_axis(all_values, y_min, y_max, min_span)
    times = [np.asarray(s.times, dtype=np.float64) for s in series]
    times = [t[np.isfinite(t)] for t in times]
    times = [t for t in times if len(t)]
    t0 = min(float(t.min()) for t in times) if times else 0.0
    t1 = max(float(t.max()) for t in times) if times else 1.0
    x_axis = time_axis(t1 - t0)
    t1 = t0 + x_axis.high
    lo, hi = y_axis.low, y_axis.high

    right = 16 * k
    left = max(48 * k, max(label_font.width(label) for label in y_axis.labels) + 16 * k)
    top = 12 * k + title_font.height + 6 * k
    legend_rows = max(1, math.ceil(len(series) / 4))
    row_h = label_font.height + 4 * k
    bottom = 8 * k + label_font.height + 10 * k + legend_rows * row_h
    plot_w, plot_h = canvas.width - left - right, canvas.height - top - bottom

    def to_x(t: np.ndarray | float) -> np.ndarray | float:
        return left + (np.asarray(t) - t0) / (t1 - t0) * (plot_w - 1)

    def to_y(v: np.ndarray | float) -> np.ndarray | float:
        return top + plot_h - 1 - (np.asarray(v) - lo) / (hi - lo) * (plot_h - 1)

    canvas.text(left, 10 * k, elide(title, plot_w - 80 * k, "bold", k), BLACK, "bold", k)
    unit_w = label_font.width(unit)
    canvas.text(canvas.width - right - unit_w, 10 * k + title_font.ascent - label_font.ascent, unit, MUTED,
                "regular", k)
    digit_middle = label_font.ascent - round(label_font.glyph("0").coverage.any(axis=1).sum() / 2)
    for tick, label in zip(y_axis.ticks, y_axis.labels, strict=True):
        y = round(float(to_y(tick)))
        canvas.rect(left, y, left + plot_w, y + k, GRID)
        if has_data:  # no values: no made-up scale either
            canvas.text(left - 8 * k - label_font.width(label), y - digit_middle, label, AXIS, "regular", k)
    for seconds, label in zip(x_axis.ticks, x_axis.labels, strict=True):
        x = round(float(to_x(t0 + seconds)))
        canvas.rect(x, top, x + k, top + plot_h, GRID)
        w = label_font.width(label)
        lx = min(max(left, x - w // 2), canvas.width - right - w)
        canvas.text(lx, top + plot_h + 6 * k, label, AXIS, "regular", k)
    canvas.rect(left, top, left + 2 * k, top + plot_h, AXIS)
    canvas.rect(left, top + plot_h - k, left + plot_w, top + plot_h + k, AXIS)
    if not has_data:
        message = "No data recorded"
        canvas.text(left + (plot_w - label_font.width(message)) // 2, top + plot_h // 2 - label_font.height // 2,
                    message, MUTED, "regular", k)
    for i, s in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        values = np.clip(np.asarray(s.values, dtype=np.float64), lo, hi)
        canvas.polyline(to_x(np.asarray(s.times, dtype=np.float64)), to_y(values), color, width=2 * k)
    # legend under the time axis, four entries per row
    column_w = plot_w // 4
    for i, s in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        row, col = divmod(i, 4)
        x = left + col * column_w
        y = top + plot_h + 8 * k + label_font.height + 10 * k + row * row_h
        middle = y + digit_middle
        canvas.rect(x, middle - 3 * k, x + 16 * k, middle + 3 * k, color)
        canvas.text(x + 22 * k, y, elide(s.label, column_w - 30 * k, "regular", k), BLACK, "regular", k)
    return canvas.png()


# -- from recorded telemetry ------------------------------------------------------------------

# (title, unit, how to get a value from a sample's JSON dict, y range)
CHARTS: tuple[tuple[str, str, str, tuple[float | None, float | None]], ...] = (
    ("Temperature", "°C", "temperature", (None, None)),
    ("Power", "W", "power_w", (0.0, None)),
    ("GPU busy", "%", "gpu_busy_percent", (0.0, 100.0)),
    ("VRAM used", "GiB", "vram_used_gib", (0.0, None)),
)
_TEMPERATURE_ORDER = ("junction", "hotspot", "edge", "mem")


def _value(merged: dict, key: str) -> float:
    if key == "temperature":
        temps = merged.get("temperature_c") or {}
        for label in _TEMPERATURE_ORDER:
            if temps.get(label) is not None:
                return float(temps[label])
        return float(next(iter(temps.values()))) if temps else math.nan
    if key == "vram_used_gib":
        value = merged.get("vram_used_bytes")
        return float(value) / (1 << 30) if value is not None else math.nan
    value = merged.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


# the smallest y span per chart key, so a flat line gets round ticks around it (see value_axis)
MIN_SPAN: dict[str, float] = {"temperature": 10.0, "power_w": 10.0, "vram_used_gib": 1.0}


def series_of(recording, key: str) -> list[Series]:
    """One Series per GPU of a Recording for a chart key (see CHARTS)."""
    times = np.array([f.t for f in recording.frames], dtype=np.float64)
    out = []
    for index, info in enumerate(recording.gpus):
        static = recording.static[index] if index < len(recording.static) else {}
        values = np.full(len(times), np.nan)
        for i, frame in enumerate(recording.frames):
            dynamic = frame.gpus[index] if index < len(frame.gpus) else None
            if dynamic is None:
                continue
            merged = {**static, **dynamic}
            if "temperature_c" in static and "temperature_c" in dynamic:
                merged["temperature_c"] = {**static["temperature_c"], **dynamic["temperature_c"]}
            values[i] = _value(merged, key)
        out.append(Series(gpu_label(info), times, values))
    return out


def temperature_label(recording) -> str:
    """Which sensor the temperature chart shows (the first GPU's)."""
    if not recording.gpus:
        return "junction"
    for frame in recording.frames:
        entry = frame.gpus[0] if frame.gpus else None
        temps = {**(recording.static[0].get("temperature_c") or {}), **((entry or {}).get("temperature_c") or {})}
        for label in _TEMPERATURE_ORDER:
            if label in temps:
                return label
    return "junction"


def history_charts(recording, width: int = 960, height: int = 300, scale: int = 1) -> list[tuple[str, bytes]]:
    """(title, PNG bytes) for each chart of a recording's window (``scale`` 2: twice the pixels, for HiDPI)."""
    out = []
    for title, unit, key, (y_min, y_max) in CHARTS:
        series = series_of(recording, key)
        shown = f"{title} ({temperature_label(recording)})" if key == "temperature" else title
        out.append((shown, line_chart(series, shown, unit, width, height, y_min, y_max, min_span=MIN_SPAN.get(key),
                                      scale=scale)))
    return out
