"""History graphs as PNG files, drawn with numpy and written with zlib: no Qt, no matplotlib.

Reports must render on a headless machine and in the Qt-free core, so this module has its own
tiny rasterizer: a white canvas, axes with tick labels, one coloured polyline per GPU (gaps where
a GPU was absent), a legend, and a 5x7 bitmap font (upper case, digits, a little punctuation).
"""

from __future__ import annotations

import math
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# -- font -------------------------------------------------------------------------------------
# Each glyph is 7 rows of 5 pixels, written as rows of "#" and ".".
_GLYPH_ROWS: dict[str, str] = {
    " ": ".....|.....|.....|.....|.....|.....|.....",
    "0": ".###.|#...#|#..##|#.#.#|##..#|#...#|.###.",
    "1": "..#..|.##..|..#..|..#..|..#..|..#..|.###.",
    "2": ".###.|#...#|....#|...#.|..#..|.#...|#####",
    "3": "####.|....#|....#|.###.|....#|....#|####.",
    "4": "...#.|..##.|.#.#.|#..#.|#####|...#.|...#.",
    "5": "#####|#....|####.|....#|....#|#...#|.###.",
    "6": ".###.|#....|#....|####.|#...#|#...#|.###.",
    "7": "#####|....#|...#.|..#..|.#...|.#...|.#...",
    "8": ".###.|#...#|#...#|.###.|#...#|#...#|.###.",
    "9": ".###.|#...#|#...#|.####|....#|....#|.###.",
    "A": ".###.|#...#|#...#|#####|#...#|#...#|#...#",
    "B": "####.|#...#|#...#|####.|#...#|#...#|####.",
    "C": ".###.|#...#|#....|#....|#....|#...#|.###.",
    "D": "####.|#...#|#...#|#...#|#...#|#...#|####.",
    "E": "#####|#....|#....|####.|#....|#....|#####",
    "F": "#####|#....|#....|####.|#....|#....|#....",
    "G": ".###.|#...#|#....|#.###|#...#|#...#|.####",
    "H": "#...#|#...#|#...#|#####|#...#|#...#|#...#",
    "I": ".###.|..#..|..#..|..#..|..#..|..#..|.###.",
    "J": "..###|...#.|...#.|...#.|...#.|#..#.|.##..",
    "K": "#...#|#..#.|#.#..|##...|#.#..|#..#.|#...#",
    "L": "#....|#....|#....|#....|#....|#....|#####",
    "M": "#...#|##.##|#.#.#|#.#.#|#...#|#...#|#...#",
    "N": "#...#|##..#|#.#.#|#..##|#...#|#...#|#...#",
    "O": ".###.|#...#|#...#|#...#|#...#|#...#|.###.",
    "P": "####.|#...#|#...#|####.|#....|#....|#....",
    "Q": ".###.|#...#|#...#|#...#|#.#.#|#..#.|.##.#",
    "R": "####.|#...#|#...#|####.|#.#..|#..#.|#...#",
    "S": ".####|#....|#....|.###.|....#|....#|####.",
    "T": "#####|..#..|..#..|..#..|..#..|..#..|..#..",
    "U": "#...#|#...#|#...#|#...#|#...#|#...#|.###.",
    "V": "#...#|#...#|#...#|#...#|#...#|.#.#.|..#..",
    "W": "#...#|#...#|#...#|#.#.#|#.#.#|#.#.#|.#.#.",
    "X": "#...#|#...#|.#.#.|..#..|.#.#.|#...#|#...#",
    "Y": "#...#|#...#|.#.#.|..#..|..#..|..#..|..#..",
    "Z": "#####|....#|...#.|..#..|.#...|#....|#####",
    ".": ".....|.....|.....|.....|.....|.##..|.##..",
    ",": ".....|.....|.....|.....|.##..|..#..|.#...",
    ":": ".....|.##..|.##..|.....|.##..|.##..|.....",
    "-": ".....|.....|.....|.###.|.....|.....|.....",
    "+": ".....|..#..|..#..|#####|..#..|..#..|.....",
    "/": "....#|...#.|...#.|..#..|.#...|.#...|#....",
    "%": "##..#|##..#|...#.|..#..|.#...|#..##|#..##",
    "(": "...#.|..#..|.#...|.#...|.#...|..#..|...#.",
    ")": ".#...|..#..|...#.|...#.|...#.|..#..|.#...",
    "_": ".....|.....|.....|.....|.....|.....|#####",
    "=": ".....|.....|#####|.....|#####|.....|.....",
    "'": "..#..|..#..|.#...|.....|.....|.....|.....",
    "#": ".#.#.|.#.#.|#####|.#.#.|#####|.#.#.|.#.#.",
    "?": ".###.|#...#|....#|...#.|..#..|.....|..#..",
    "°": ".##..|#..#.|#..#.|.##..|.....|.....|.....",
    "<": "...#.|..#..|.#...|#....|.#...|..#..|...#.",
    ">": ".#...|..#..|...#.|....#|...#.|..#..|.#...",
}
GLYPH_W, GLYPH_H = 5, 7
_GLYPHS = {ch: np.array([[c == "#" for c in row] for row in rows.split("|")], dtype=bool)
           for ch, rows in _GLYPH_ROWS.items()}

# Colours: a palette that stays distinct for 8 GPUs and prints in grey as different shades.
PALETTE: tuple[tuple[int, int, int], ...] = (
    (214, 39, 40), (31, 119, 180), (44, 160, 44), (255, 127, 14),
    (148, 103, 189), (23, 190, 207), (140, 86, 75), (227, 119, 194),
)
WHITE = (255, 255, 255)
BLACK = (20, 20, 20)
GRID = (225, 225, 225)
AXIS = (90, 90, 90)


def text_width(text: str, scale: int = 2) -> int:
    return len(text) * (GLYPH_W + 1) * scale


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

    def text(self, x: int, y: int, text: str, color: tuple[int, int, int] = BLACK, scale: int = 2) -> None:
        """Draw ``text`` with its top-left corner at (x, y); unknown characters show as '?'."""
        for i, ch in enumerate(text.upper()):
            glyph = _GLYPHS.get(ch, _GLYPHS["?"])
            big = np.kron(glyph, np.ones((scale, scale), dtype=bool))
            gx = x + i * (GLYPH_W + 1) * scale
            _h, _w = big.shape
            ys, xs = np.nonzero(big)
            ys, xs = ys + y, xs + gx
            keep = (xs >= 0) & (xs < self.width) & (ys >= 0) & (ys < self.height)
            self.pixels[ys[keep], xs[keep]] = color

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


# -- charts -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Series:
    label: str  # legend text ("card0 RX 7900 XTX")
    times: np.ndarray  # seconds, any origin
    values: np.ndarray  # NaN = not available


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high] (1, 2, 2.5, 5 x 10^n steps)."""
    if not math.isfinite(low) or not math.isfinite(high):
        return [0.0, 1.0]
    if high <= low:
        high = low + 1.0
    raw = (high - low) / max(1, count - 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.floor(low / step) * step
    ticks = []
    value = first
    while value <= high + step * 0.5 and len(ticks) < 20:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < high:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def _tick_label(value: float) -> str:
    if abs(value) >= 1000:
        return f"{value:,.0f}".replace(",", " ")
    if value == int(value):
        return f"{int(value)}"
    return f"{value:.1f}" if abs(value) >= 1 else f"{value:.2f}"


def _time_label(seconds: float, span: float) -> str:
    if span >= 120:
        minutes = seconds / 60
        return f"{minutes:.0f} MIN" if abs(minutes - round(minutes)) < 1e-6 else f"{minutes:.1f} MIN"
    return f"{seconds:.0f} S"


def line_chart(series: Sequence[Series], title: str, unit: str, width: int = 960, height: int = 300,
               y_min: float | None = None, y_max: float | None = None) -> bytes:
    """A PNG line chart: title, y axis with unit, time axis (minutes from the first sample), legend."""
    canvas = Canvas(width, height)
    scale = 2
    left, right, top, bottom = 86, 16, 40, 44
    legend_rows = max(1, math.ceil(len(series) / 4))
    bottom += (legend_rows - 1) * 18
    plot_w, plot_h = width - left - right, height - top - bottom
    canvas.text(left, 10, title, BLACK, scale)
    finite = [s.values[np.isfinite(s.values)] for s in series]
    all_values = np.concatenate(finite) if finite and any(len(f) for f in finite) else np.array([])
    times = [s.times for s in series if len(s.times)]
    t0 = min(float(t.min()) for t in times) if times else 0.0
    t1 = max(float(t.max()) for t in times) if times else 1.0
    if t1 <= t0:
        t1 = t0 + 1.0
    lo = float(all_values.min()) if len(all_values) else 0.0
    hi = float(all_values.max()) if len(all_values) else 1.0
    lo = y_min if y_min is not None else min(lo, 0.0) if lo >= 0 and lo < hi * 0.5 else lo
    hi = y_max if y_max is not None else hi
    ticks = nice_ticks(lo, hi)
    lo, hi = ticks[0], ticks[-1]
    if hi <= lo:
        hi = lo + 1.0

    def to_x(t: np.ndarray | float) -> np.ndarray | float:
        return left + (np.asarray(t) - t0) / (t1 - t0) * (plot_w - 1)

    def to_y(v: np.ndarray | float) -> np.ndarray | float:
        return top + plot_h - 1 - (np.asarray(v) - lo) / (hi - lo) * (plot_h - 1)

    for tick in ticks:
        y = round(float(to_y(tick)))
        canvas.rect(left, y, left + plot_w, y + 1, GRID)
        label = _tick_label(tick)
        canvas.text(left - 8 - text_width(label, scale), y - GLYPH_H, label, AXIS, scale)
    span = t1 - t0
    for tick in nice_ticks(0.0, span / 60 if span >= 120 else span, 6):
        seconds = tick * 60 if span >= 120 else tick
        if seconds > span + 1e-9:
            continue
        x = round(float(to_x(t0 + seconds)))
        canvas.rect(x, top, x + 1, top + plot_h, GRID)
        label = _time_label(seconds, span)
        lx = min(max(left, x - text_width(label, scale) // 2), width - right - text_width(label, scale))
        canvas.text(lx, top + plot_h + 8, label, AXIS, scale)
    canvas.rect(left, top, left + 2, top + plot_h, AXIS)
    canvas.rect(left, top + plot_h - 1, left + plot_w, top + plot_h + 1, AXIS)
    unit_label = unit.upper()
    canvas.text(width - right - text_width(unit_label, scale), 10, unit_label, AXIS, scale)
    if not len(all_values):
        message = "NO DATA RECORDED"
        canvas.text(left + (plot_w - text_width(message, scale)) // 2, top + plot_h // 2 - 7, message, AXIS, scale)
    for i, s in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        values = np.clip(s.values.astype(np.float64), lo, hi)
        canvas.polyline(to_x(s.times), to_y(values), color, width=2)
    # legend under the time axis, four entries per row
    column_w = (width - left - right) // 4
    for i, s in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        row, col = divmod(i, 4)
        x = left + col * column_w
        y = top + plot_h + 28 + row * 18
        canvas.rect(x, y + 3, x + 16, y + 9, color)
        label = s.label.upper()
        max_chars = max(4, (column_w - 26) // ((GLYPH_W + 1) * scale))
        canvas.text(x + 22, y, label[:max_chars], BLACK, scale)
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
        short = info.name.replace("AMD ", "").replace("Radeon ", "")
        out.append(Series(f"{info.card} {short}", times, values))
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


def history_charts(recording, width: int = 960, height: int = 300) -> list[tuple[str, bytes]]:
    """(title, PNG bytes) for each chart of a recording's window."""
    out = []
    for title, unit, key, (y_min, y_max) in CHARTS:
        series = series_of(recording, key)
        shown = f"{title} ({temperature_label(recording)})" if key == "temperature" else title
        out.append((shown, line_chart(series, shown, unit, width, height, y_min, y_max)))
    return out
