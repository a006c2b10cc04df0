"""What the Graphs tab can plot, and how the plots are laid out (pure: no Qt, tested alone).

Two layouts: *overlaid* (one plot per metric, every GPU on it, colour = GPU) and *small multiples*
(one metric, one plot per GPU, all on the same value range and time axis). Eight overlaid GPUs
are unreadable (the last-drawn line hides the rest), so more than ``MULTIPLES_ABOVE`` GPUs start
as small multiples; the user's choice is kept in the settings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MULTIPLES_ABOVE = 4  # GPUs; above this the default layout is small multiples
LAYOUTS = ("auto", "overlay", "multiples")


@dataclass(frozen=True, slots=True)
class Metric:
    name: str
    title: str
    unit: str  # the axis unit; "temp" uses the settings' °C/°F instead
    y_range: str  # "temp" (rounded to 10 around the data), "zero" (0 to a nice ceiling), "percent" (0-100)


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("temp", "Temperature", "°C", "temp"),
    Metric("power", "Power", "W", "zero"),
    Metric("memory", "VRAM used", "GiB", "zero"),
    Metric("busy", "GPU busy", "%", "percent"),
    Metric("clocks", "Clocks (actual)", "MHz", "zero"),
    Metric("fan", "Fan", "%", "percent"),
)}
ORDER: tuple[str, ...] = tuple(METRICS)


def use_multiples(layout: str, gpus: int) -> bool:
    """Whether ``gpus`` GPUs shown together get one plot each, for the settings' ``layout``."""
    if gpus <= 1:
        return False
    if layout == "multiples":
        return True
    if layout == "overlay":
        return False
    return gpus > MULTIPLES_ABOVE


def grid_shape(count: int, max_cols: int = 4) -> tuple[int, int]:
    """(rows, columns) for ``count`` plots: as square as possible, at most ``max_cols`` wide.

    Eight GPUs are 2 x 4 (wide screens are wider than tall), six metrics 3 x 2 in the overlay.
    """
    if count <= 0:
        return 0, 0
    cols = min(max_cols, max(1, math.ceil(math.sqrt(count * 2))), count)
    rows = math.ceil(count / cols)
    return rows, math.ceil(count / rows)  # 6 GPUs: 2 x 3, not 2 x 4 with two holes


def plot_id(metric: str, pci: str = "") -> str:
    """The key of a plot: the metric alone when overlaid, ``metric@pci`` for a GPU's own plot."""
    return f"{metric}@{pci}" if pci else metric


def metric_of(plot: str) -> str:
    return plot.split("@", 1)[0]
