"""History graphs as SVG text: vector, so they are sharp at any pixel density, and coloured by the caller.

The HTML report inlines them (no image files, nothing fetched); the Report tab draws the same SVG
with QtSvg in the window's theme. One ``<polyline>`` per unbroken run of a GPU's samples (a missing
sample splits the line, it is never drawn as 0), round ticks from :mod:`rocmdesk.report.chart_axes`,
every label a ``<text>`` escaped as XML. Presentation attributes only (no ``<style>``, no CSS), as
the SVG Tiny profile that QtSvg renders supports them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape, quoteattr

import numpy as np

from rocmdesk.report.chart_axes import time_axis, value_axis
from rocmdesk.telemetry.history import downsample_minmax
from rocmdesk.wording import gpu_label

SVG_NS = "http://www.w3.org/2000/svg"

# Line colours: distinct for 8 GPUs, and different shades when printed in grey.
PALETTE: tuple[str, ...] = ("#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#17becf", "#8c564b", "#e377c2")


@dataclass(frozen=True, slots=True)
class ChartStyle:
    """The colours and font a chart is drawn with (``background`` None: transparent, the page shows)."""

    text: str = "#141414"
    muted: str = "#5a5a5a"
    grid: str = "#e1e1e1"
    axis: str = "#5a5a5a"
    background: str | None = "#ffffff"
    series: tuple[str, ...] = PALETTE
    font_family: str = "sans-serif"
    font_px: float = 12.0


LIGHT = ChartStyle()


@dataclass(frozen=True, slots=True)
class Series:
    label: str  # legend text ("card0 · RX 7900 XTX")
    times: np.ndarray  # seconds, any origin
    values: np.ndarray  # NaN = not available


@dataclass(frozen=True, slots=True)
class Chart:
    """What one graph shows, before it is drawn in a size and a style."""

    title: str
    unit: str
    series: tuple[Series, ...]
    y_min: float | None = None
    y_max: float | None = None
    min_span: float | None = None


def _n(value: float) -> str:
    """A coordinate with one decimal (a tenth of a pixel), without "-0" or a trailing ".0"."""
    text = f"{value:.1f}".removesuffix(".0")
    return "0" if text == "-0" else text


def _text_px(text: str, size: float) -> float:
    """An estimate of how wide ``text`` is drawn (no font metrics here): 0.6 em a character, a
    little more than sans-serif fonts average, so estimates err towards room to spare."""
    return len(text) * size * 0.6


def elide(text: str, max_px: float, size: float) -> str:
    """``text`` cut with an ellipsis so it fits ``max_px`` by the estimate above (whole when it fits)."""
    if _text_px(text, size) <= max_px:
        return text
    keep = int(max_px / (size * 0.6)) - 1
    return text[:keep].rstrip() + "…" if keep > 0 else ""


def runs(xs: np.ndarray, ys: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The unbroken stretches of finite points, in order: a NaN (no sample) ends one."""
    ok = np.isfinite(xs) & np.isfinite(ys)
    if not ok.any():
        return []
    edges = np.flatnonzero(np.diff(np.concatenate(([0], ok.astype(np.int8), [0]))))
    return [(xs[a:b], ys[a:b]) for a, b in zip(edges[0::2], edges[1::2], strict=True)]


def _decimate(times: np.ndarray, values: np.ndarray, columns: int) -> tuple[np.ndarray, np.ndarray]:
    """At most two points per pixel column (its min and max: peaks stay), for sorted times; an
    all-NaN column stays NaN, so a gap stays a gap."""
    if len(times) <= 2 * columns or not bool(np.all(np.diff(times) >= 0)):
        return times, values
    return downsample_minmax(times, values, columns)


def chart_svg(chart: Chart, width: int = 960, height: int = 300, style: ChartStyle = LIGHT, *,
              xmlns: bool = True, max_points: int | None = None) -> str:
    """The chart as an ``<svg>`` element: title, unit, y axis, time axis from the first sample, legend.

    ``width`` and ``height`` are CSS pixels (the viewBox too, so it scales without blurring).
    ``xmlns`` False leaves out the namespace, which HTML's parser supplies for inline SVG.
    ``max_points`` cuts a run into polylines of that many points that share their ends (the same
    picture): Qt's raster engine strokes one wide antialiased 900-point line about 4x slower than
    the same line in pieces of 9 (eight 900-sample GPUs, four graphs at 2x: 1.4 s against 0.35 s).
    """
    size = style.font_px
    title_px = size * 1.2
    series = chart.series
    all_values = (np.concatenate([np.asarray(s.values, dtype=np.float64) for s in series]) if series
                  else np.array([]))
    has_data = bool(np.isfinite(all_values).any())
    y_axis = value_axis(all_values, chart.y_min, chart.y_max, chart.min_span)
    times = [t[np.isfinite(t)] for t in (np.asarray(s.times, dtype=np.float64) for s in series)]
    times = [t for t in times if len(t)]
    t0 = min(float(t.min()) for t in times) if times else 0.0
    t1 = max(float(t.max()) for t in times) if times else 1.0
    x_axis = time_axis(t1 - t0)
    t1 = t0 + x_axis.high
    lo, hi = y_axis.low, y_axis.high

    line_h = size * 1.4
    legend_rows = max(1, math.ceil(len(series) / 4))
    left = max(48.0, max(_text_px(label, size) for label in y_axis.labels) + 16) if has_data else 24.0
    right = 16.0
    top = 10 + title_px * 1.3 + 6
    bottom = 6 + line_h + 8 + legend_rows * line_h + 4
    plot_w, plot_h = max(1.0, width - left - right), max(1.0, height - top - bottom)

    def to_x(t: np.ndarray) -> np.ndarray:
        return left + (t - t0) / (t1 - t0) * plot_w

    def to_y(v: np.ndarray) -> np.ndarray:
        return top + plot_h - (v - lo) / (hi - lo) * plot_h

    ns = f' xmlns="{SVG_NS}"' if xmlns else ""
    out = [f'<svg{ns} class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           f'role="img" aria-label={quoteattr(chart.title + " graph")} font-family={quoteattr(style.font_family)} '
           f'font-size="{_n(size)}">',
           f"<title>{escape(chart.title)}</title>"]
    if style.background:
        out.append(f'<rect class="background" width="{width}" height="{height}" fill="{style.background}"/>')
    baseline = 10 + title_px
    out.append(f'<text class="title" x="{_n(left)}" y="{_n(baseline)}" font-size="{_n(title_px)}" '
               f'font-weight="bold" fill="{style.text}">{escape(elide(chart.title, plot_w - 80, title_px))}</text>')
    out.append(f'<text class="unit" x="{_n(width - right)}" y="{_n(baseline)}" text-anchor="end" '
               f'fill="{style.muted}">{escape(chart.unit)}</text>')

    grid, labels = [], []
    for tick, label in zip(y_axis.ticks, y_axis.labels, strict=True):
        y = float(to_y(np.float64(tick)))
        grid.append(f'<line x1="{_n(left)}" y1="{_n(y)}" x2="{_n(left + plot_w)}" y2="{_n(y)}"/>')
        if has_data:  # no values: no made-up scale either
            labels.append(f'<text x="{_n(left - 8)}" y="{_n(y + size * 0.35)}" text-anchor="end">'
                          f"{escape(label)}</text>")
    x_labels = []
    for seconds, label in zip(x_axis.ticks, x_axis.labels, strict=True):
        x = float(to_x(np.float64(t0 + seconds)))
        grid.append(f'<line x1="{_n(x)}" y1="{_n(top)}" x2="{_n(x)}" y2="{_n(top + plot_h)}"/>')
        half = _text_px(label, size) / 2
        lx = min(max(left + half, x), width - right - half)
        x_labels.append(f'<text x="{_n(lx)}" y="{_n(top + plot_h + 6 + size)}" text-anchor="middle">'
                        f"{escape(label)}</text>")
    out.append(f'<g class="grid" stroke="{style.grid}" stroke-width="1">{"".join(grid)}</g>')
    out.append(f'<g class="y-labels" fill="{style.muted}">{"".join(labels)}</g>')
    out.append(f'<g class="x-labels" fill="{style.muted}">{"".join(x_labels)}</g>')
    out.append(f'<g class="axes" stroke="{style.axis}" stroke-width="1.5">'
               f'<line x1="{_n(left)}" y1="{_n(top)}" x2="{_n(left)}" y2="{_n(top + plot_h)}"/>'
               f'<line x1="{_n(left)}" y1="{_n(top + plot_h)}" x2="{_n(left + plot_w)}" y2="{_n(top + plot_h)}"/>'
               "</g>")
    if not has_data:
        out.append(f'<text class="no-data" x="{_n(left + plot_w / 2)}" y="{_n(top + plot_h / 2)}" '
                   f'text-anchor="middle" fill="{style.muted}">No data recorded</text>')

    columns = max(1, int(plot_w))
    for i, s in enumerate(series):
        color = style.series[i % len(style.series)]
        t, v = _decimate(np.asarray(s.times, dtype=np.float64), np.asarray(s.values, dtype=np.float64), columns)
        xs, ys = to_x(t), to_y(np.clip(v, lo, hi))  # clip keeps NaN: a fixed 0-100 % range never overflows
        shapes = []
        for rx, ry in runs(xs, ys):
            if len(rx) == 1:  # a lone sample between gaps: a dot, since a one-point line draws nothing
                shapes.append(f'<circle cx="{_n(rx[0])}" cy="{_n(ry[0])}" r="1.5" fill="{color}" stroke="none"/>')
                continue
            step = max(1, (max_points or len(rx)) - 1)
            for start in range(0, len(rx) - 1, step):
                px, py = rx[start:start + step + 1].tolist(), ry[start:start + step + 1].tolist()
                points = " ".join(f"{_n(x)},{_n(y)}" for x, y in zip(px, py, strict=True))
                shapes.append(f'<polyline points="{points}"/>')
        out.append(f'<g class="series" data-label={quoteattr(s.label)} fill="none" stroke="{color}" '
                   f'stroke-width="2" stroke-linejoin="round" stroke-linecap="round">'
                   f"<title>{escape(s.label)}</title>{''.join(shapes)}</g>")

    legend = []
    column_w = plot_w / 4
    for i, s in enumerate(series):
        color = style.series[i % len(style.series)]
        row, col = divmod(i, 4)
        x = left + col * column_w
        y = top + plot_h + 6 + line_h + 8 + row * line_h + size
        legend.append(f'<rect x="{_n(x)}" y="{_n(y - size * 0.6)}" width="16" height="6" fill="{color}"/>'
                      f'<text x="{_n(x + 22)}" y="{_n(y)}">{escape(elide(s.label, column_w - 30, size))}</text>')
    out.append(f'<g class="legend" fill="{style.text}">{"".join(legend)}</g>')
    out.append("</svg>")
    return "".join(out)


def line_chart(series: Sequence[Series], title: str, unit: str, width: int = 960, height: int = 300,
               y_min: float | None = None, y_max: float | None = None, *, min_span: float | None = None,
               style: ChartStyle = LIGHT) -> str:
    """A chart of ``series`` as standalone SVG text (see :func:`chart_svg`)."""
    return chart_svg(Chart(title, unit, tuple(series), y_min, y_max, min_span), width, height, style)


# -- from recorded telemetry ------------------------------------------------------------------

# (title, unit, how to get a value from a sample's JSON dict, y range)
CHARTS: tuple[tuple[str, str, str, tuple[float | None, float | None]], ...] = (
    ("Temperature", "°C", "temperature", (None, None)),
    ("Power", "W", "power_w", (0.0, None)),
    ("GPU busy", "%", "gpu_busy_percent", (0.0, 100.0)),
    ("VRAM used", "GiB", "vram_used_gib", (0.0, None)),
)
_TEMPERATURE_ORDER = ("junction", "hotspot", "edge", "mem")
# the smallest y span per chart key, so a flat line gets round ticks around it (see value_axis)
MIN_SPAN: dict[str, float] = {"temperature": 10.0, "power_w": 10.0, "vram_used_gib": 1.0}


def _value(merged: dict[str, Any], key: str) -> float:
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


def series_of(recording: Any, key: str) -> list[Series]:
    """One Series per GPU of a Recording for a chart key (see CHARTS); NaN where a frame has no value."""
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


def temperature_label(recording: Any) -> str:
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


def history_charts(recording: Any) -> list[Chart]:
    """The report's graphs of a recording's window: temperature, power, GPU busy and VRAM per GPU."""
    out = []
    for title, unit, key, (y_min, y_max) in CHARTS:
        shown = f"{title} ({temperature_label(recording)})" if key == "temperature" else title
        out.append(Chart(shown, unit, tuple(series_of(recording, key)), y_min, y_max, MIN_SPAN.get(key)))
    return out
