"""Graphs: temperature, power (with cap), VRAM/HBM (with total), GPU busy, actual clocks and fan over
time, with throttling shaded behind the lines.

Two layouts (graph_specs.py): all GPUs overlaid on one plot per metric, or small multiples, one
plot per GPU for one metric on shared axes (the default above four GPUs: eight overlaid lines
hide each other). Either way every plot shares one time axis.

Cheap by construction (the window must cost ~1 % of a core at 1 Hz with 8 GPUs):
- the tab redraws only while visible and not paused, at most once per frame, and no more often
  than it takes the time axis to move by one pixel (a 1 h window scrolls a pixel every few
  seconds, so new samples in between would not change the picture);
- each curve gets at most two points per pixel column (min/max bins, ``graph_data``);
- caps, totals and throttle spans are redrawn only when they change;
- curve items are created once per GPU/sensor and reused; no antialiasing; fixed y ranges.

Line widths follow the screen's device pixel ratio (a 1-pixel cosmetic pen is a hairline on a
HiDPI screen). Pan and zoom: inside a plot, drag and wheel move the shared time axis; over a
plot's value axis, the wheel zooms and a drag pans that plot's values only, until "Auto Y" (or a
double-click on that axis). Neither costs a data redraw: curves do not depend on the value range.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from rocmdesk.telemetry.model import GpuInfo, GpuKind
from rocmdesk.ui import graph_specs, theme
from rocmdesk.ui.context import AppContext
from rocmdesk.ui.feed import GpuEvent
from rocmdesk.ui.formatting import GIB, c_to_unit, fmt_window, gpu_label, ordered_sensors
from rocmdesk.ui.graph_controls import GraphControls
from rocmdesk.ui.graph_data import fmt_span, minmax_decimate, nearest_index, nice_ceiling, steps
from rocmdesk.ui.graph_specs import METRICS, ORDER, metric_of, plot_id
from rocmdesk.ui.history_csv import UNITS, column, write_csv
from rocmdesk.ui.plot_grid import PlotGrid, PlotSpec
from rocmdesk.ui.widgets import set_text

log = logging.getLogger(__name__)

PLOTS = ORDER
FRAME_S = 1.0 / 60.0
MAX_REDRAW_HZ = 5.0  # a live graph does not look smoother above this, and each frame costs ~15-25 ms
MAX_EVENTS = 50  # event markers kept (a GPU that keeps resetting)
Dash = QtCore.Qt.PenStyle


@dataclass
class Curve:
    """One drawn line: which series it shows, on which plot, and how to scale it."""

    item: pg.PlotCurveItem
    plot: str  # the plot's id: the metric, or "metric@pci" in small multiples
    pci: str
    key: str
    label: str
    step: bool = False  # a level (cap/total): drawn from its change points
    scale: float = 1.0
    temp: bool = False
    last_sig: tuple = field(default_factory=tuple)

    @property
    def metric(self) -> str:
        return metric_of(self.plot)


class GraphsTab(QtWidgets.QWidget):
    def __init__(self, ctx: AppContext, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.setAccessibleName("Graphs")
        self.settings = ctx.settings
        self.paused = False
        self.follow = True
        self.curves: list[Curve] = []
        self.markers: list[pg.InfiniteLine] = []
        self.events: list[GpuEvent] = []
        self._dirty = True
        self._last_draw = 0.0
        self._draw_count = 0
        self._x_range: tuple[float, float] = (0.0, 1.0)
        self._y_ranges: dict[str, tuple[float, float]] = {}
        self.y_zoomed: set[str] = set()  # plots whose value range the user set (not auto)
        self._setting_range = False
        self._gpu_signature: tuple = ()
        self._layout_key: tuple = ()
        self.known: dict[str, GpuInfo] = {}
        self._sensors: dict[str, set[str]] = {}
        self.line_scale = 1.0  # device pixel ratio the pens were made for

        pal = theme.current()
        pg.setConfigOptions(antialias=False, useOpenGL=False, background=pal.surface, foreground=pal.muted)

        self.controls = GraphControls(self.settings.graph_window_s, self)
        c = self.controls
        self.gpu_combo, self.window_combo, self.pause_button = c.gpu_combo, c.window_combo, c.pause_button
        self.live_button, self.auto_y_button, self.history_note = c.live_button, c.auto_y_button, c.history_note
        self.multiples_button, self.metric_combo, self.legend = c.multiples_button, c.metric_combo, c.legend
        self.export_button = c.export_button
        self.gpu_combo.currentIndexChanged.connect(self._on_gpu_combo)
        self.window_combo.currentIndexChanged.connect(self._on_window_combo)
        self.pause_button.toggled.connect(self.set_paused)
        self.live_button.clicked.connect(self.back_to_live)
        self.auto_y_button.clicked.connect(lambda: self.auto_y())
        self.export_button.clicked.connect(self._export_dialog)
        self.multiples_button.toggled.connect(self._on_multiples_button)
        self.metric_combo.setCurrentIndex(max(0, self.metric_combo.findData(self.settings.graph_metric)))
        self.metric_combo.currentIndexChanged.connect(self._on_metric_combo)

        self.grid = PlotGrid(self, self._on_user_range, self.auto_y)
        self.view = self.grid.view
        self._mouse_proxy = pg.SignalProxy(self.view.scene().sigMouseMoved, rateLimit=30, slot=self._on_mouse)

        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(self.controls)
        lay.addWidget(self.view, 1)

        self._timer = QtCore.QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.redraw)

        feed = ctx.feed
        feed.snapshot.connect(self._on_snapshot)
        feed.gpus_changed.connect(self._on_gpus_changed)
        feed.gpu_event.connect(self._on_event)
        self.rebuild()
        self._on_gpus_changed(feed.gpus)
        for event in feed.events:
            self._on_event(event)

    # -- what the grid shows ---------------------------------------------------------------------------
    @property
    def plots(self) -> dict[str, pg.PlotItem]:
        return self.grid.plots

    @property
    def vlines(self) -> dict[str, pg.InfiniteLine]:
        return self.grid.vlines

    @property
    def grids(self):
        return self.grid.grids

    @property
    def empty_notes(self) -> dict[str, pg.TextItem]:
        return self.grid.notes

    @property
    def tip(self) -> pg.TextItem:
        return self.grid.tip

    @property
    def legend_entries(self) -> list[str]:
        return self.controls.legend_entries

    def multiples(self) -> bool:
        """One plot per GPU (small multiples) rather than all GPUs overlaid per metric."""
        if self.settings.graph_mode == "single" and self.settings.graph_gpu:
            return False
        return graph_specs.use_multiples(self.settings.graph_layout, len(self.shown_gpus()))

    def _plot_specs(self, infos: list[GpuInfo]) -> tuple[list[PlotSpec], int]:
        temp_unit = "°" + self.settings.temp_unit
        if self.multiples():
            metric = METRICS[self.settings.graph_metric]
            _rows, cols = graph_specs.grid_shape(len(infos))
            specs = []
            for n, info in enumerate(infos):
                title = f"{gpu_label(info)} · {self._metric_title(metric.name, [info])}"
                specs.append(PlotSpec(plot_id(metric.name, info.pci), title,
                                      temp_unit if metric.name == "temp" else metric.unit,
                                      x_values=n + cols >= len(infos),  # the lowest plot of its column
                                      y_values=n % cols == 0))
            return specs, cols
        specs = [PlotSpec(m, self._metric_title(m, infos), temp_unit if m == "temp" else METRICS[m].unit)
                 for m in ORDER]
        return specs, 2

    @staticmethod
    def _metric_title(metric: str, infos: list[GpuInfo]) -> str:
        if metric == "memory" and infos and all(i.kind is GpuKind.INSTINCT for i in infos):
            return "HBM used"
        return METRICS[metric].title

    def _build_plots(self, infos: list[GpuInfo]) -> None:
        """(Re)create the plots when the layout, the GPUs shown or the metric change; else keep them."""
        specs, cols = self._plot_specs(infos)
        key = (tuple((s.id, s.title, s.x_values, s.y_values) for s in specs), cols)  # units: set_unit
        if key == self._layout_key:
            return
        for curve in self.curves:
            if curve.plot in self.plots:
                self.plots[curve.plot].removeItem(curve.item)
        self.curves = []
        self._layout_key = key
        self.grid.build(specs, cols)
        self.y_zoomed = {p for p in self.y_zoomed if p in self.plots}
        self.auto_y_button.setVisible(bool(self.y_zoomed))
        self._y_ranges = {}
        self._x_range = (0.0, 1.0)
        self._set_fixed_ranges()
        self.markers = []
        for event in self.events:
            self._add_markers(event)
        multiples = self.multiples()
        self.metric_combo.setVisible(multiples)
        self.multiples_button.blockSignals(True)
        self.multiples_button.setChecked(multiples)
        self.multiples_button.blockSignals(False)
        self.multiples_button.setVisible(len(self.shown_gpus()) > 1)

    # -- controls ------------------------------------------------------------------------------------
    def _fill_gpu_combo(self, infos: list[GpuInfo]) -> None:
        self.gpu_combo.blockSignals(True)
        self.gpu_combo.clear()
        self.gpu_combo.addItem("All GPUs", "")
        for info in infos:
            self.gpu_combo.addItem(f"{gpu_label(info)} ({info.pci})", info.pci)
        wanted = self.settings.graph_gpu if self.settings.graph_mode == "single" else ""
        index = max(0, self.gpu_combo.findData(wanted))
        self.gpu_combo.setCurrentIndex(index)
        self.gpu_combo.blockSignals(False)

    def _on_gpu_combo(self, index: int) -> None:
        pci = self.gpu_combo.itemData(index) or ""
        self.settings.graph_mode = "single" if pci else "overlay"
        self.settings.graph_gpu = pci
        self.rebuild()

    def _on_multiples_button(self, checked: bool) -> None:
        self.set_layout("multiples" if checked else "overlay")

    def set_layout(self, layout: str) -> None:
        """"overlay", "multiples" or "auto" (small multiples above four GPUs)."""
        self.settings.graph_layout = layout
        self.rebuild()

    def _on_metric_combo(self, index: int) -> None:
        self.set_metric(str(self.metric_combo.itemData(index)))

    def set_metric(self, metric: str) -> None:
        """The metric the small multiples show."""
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}")
        self.settings.graph_metric = metric
        index = self.metric_combo.findData(metric)
        if index != self.metric_combo.currentIndex():
            self.metric_combo.blockSignals(True)
            self.metric_combo.setCurrentIndex(index)
            self.metric_combo.blockSignals(False)
        self.rebuild()

    def _on_window_combo(self, index: int) -> None:
        self.set_window(int(self.window_combo.itemData(index)))

    def set_window(self, seconds: int) -> None:
        self.settings.graph_window_s = int(seconds)
        index = self.window_combo.findData(int(seconds))
        if index >= 0 and index != self.window_combo.currentIndex():
            self.window_combo.setCurrentIndex(index)
        self.follow = True
        self.live_button.hide()
        self.request_redraw(force=True)

    def set_paused(self, paused: bool) -> None:
        self.paused = bool(paused)
        if self.pause_button.isChecked() != self.paused:
            self.pause_button.setChecked(self.paused)
        self.pause_button.setText("Resume" if self.paused else "Pause")
        if not self.paused:
            self.request_redraw(force=True)

    def toggle_pause(self) -> None:
        self.set_paused(not self.paused)

    def set_unit(self, unit: str) -> None:
        """°C/°F changed (settings already hold it): relabel the axes and redraw in the new unit."""
        for pid, spec in self.grid.specs.items():
            if metric_of(pid) == "temp" and spec.y_values:
                self.plots[pid].setLabel("left", units=None, text="°" + unit)
        for pid in [p for p in self.plots if metric_of(p) == "temp"]:
            self.auto_y(pid)  # a value zoom in the old unit means nothing in the new one

    def back_to_live(self) -> None:
        self.follow = True
        self.live_button.hide()
        self.request_redraw(force=True)

    def _on_user_range(self, plot: str = "", axis: int = 0) -> None:
        """A mouse gesture moved ``plot``'s time (axis 0: all plots follow) or values (axis 1)."""
        if self._setting_range:
            return
        if axis == 1:
            # values only: nothing to redraw (curves do not depend on the value range); the time
            # axis keeps following live data
            self.y_zoomed.add(plot)
            self.auto_y_button.show()
            return
        self.follow = False
        self.live_button.show()
        self.request_redraw(force=True)

    def auto_y(self, plot: str | None = None) -> None:
        """Hand one plot's value axis (or all of them) back to the automatic range."""
        names = [plot] if plot else list(self.y_zoomed)
        for name in names:
            self.y_zoomed.discard(name)
            self._y_ranges.pop(name, None)
        self._set_fixed_ranges()
        self.auto_y_button.setVisible(bool(self.y_zoomed))
        self.request_redraw(force=True)

    def _set_fixed_ranges(self) -> None:
        """Percent plots (busy, fan) always show 0-100 unless zoomed."""
        self._setting_range = True
        try:
            for pid, plot in self.plots.items():
                if METRICS[metric_of(pid)].y_range == "percent" and pid not in self.y_zoomed \
                        and self._y_ranges.get(pid) != (0, 100):
                    plot.setYRange(0, 100, padding=0.02)
                    self._y_ranges[pid] = (0, 100)
        finally:
            self._setting_range = False

    # -- GPUs and curves ------------------------------------------------------------------------------
    def _on_gpus_changed(self, infos: list[GpuInfo]) -> None:
        """GPUs seen in this session stay on the graphs after they vanish (their line stops)."""
        for info in infos:
            self.known[info.pci] = info
        signature = tuple((i.pci, i.name) for i in self.known.values())
        if signature == self._gpu_signature:
            return
        self._gpu_signature = signature
        self._fill_gpu_combo(list(self.known.values()))
        self.rebuild()

    def shown_gpus(self) -> list[GpuInfo]:
        infos = list(self.known.values())
        if self.settings.graph_mode == "single" and self.settings.graph_gpu:
            return [i for i in infos if i.pci == self.settings.graph_gpu] or infos[:1]
        selected = self.settings.selected_gpus
        return [i for i in infos if not selected or i.pci in selected]

    def _sensors_of(self, pci: str) -> list[str]:
        """Sensors this GPU reports now (MI300X has no edge sensor: no empty edge curve)."""
        sample = self.ctx.feed.latest.get(pci)
        if sample is not None and sample.temperature_c:
            self._sensors[pci] = set(sample.temperature_c)  # remembered while the GPU is away
        return ordered_sensors(self._sensors.get(pci, set()))

    def _color_index(self, pci: str) -> int:
        return next((n for n, i in enumerate(self.known.values()) if i.pci == pci), 0)

    def pen(self, color: str, width: float = 1.0, style: QtCore.Qt.PenStyle = Dash.SolidLine) -> QtGui.QPen:
        """A cosmetic pen ``width`` logical pixels wide: scaled by the device pixel ratio."""
        return pg.mkPen(color, width=width * self.line_scale, style=style)

    def rebuild(self) -> None:
        """Create the curve items for the GPUs shown (only when GPUs, layout or mode change)."""
        self.line_scale = max(1.0, float(self.devicePixelRatioF()))
        infos = self.shown_gpus()
        self._build_plots(infos)
        for curve in self.curves:
            if curve.plot in self.plots:
                self.plots[curve.plot].removeItem(curve.item)
        self.curves = []
        pal = theme.current()
        single = len(infos) == 1  # one GPU: colour by sensor, whatever the mode
        multiples = self.multiples()
        wanted = {metric_of(p) for p in self.plots}
        for info in infos:
            color = theme.series_color(self._color_index(info.pci))
            tag = gpu_label(info)

            def where(metric: str, pci: str = info.pci) -> str | None:
                if metric not in wanted:
                    return None
                return plot_id(metric, pci) if multiples else metric

            if where("temp"):
                for sensor in self._sensors_of(info.pci):
                    if single:
                        pen = self.pen(theme.SENSOR_COLORS.get(sensor, pal.muted), 1.5)
                    else:
                        pen = self.pen(color, 1, theme.SENSOR_STYLES.get(sensor, Dash.SolidLine))
                    self._add(where("temp"), info.pci, f"temperature_c.{sensor}", f"{tag} {sensor}", pen, temp=True)
            main = self.pen(color, 1.5 if single or multiples else 1)
            level = self.pen(color if not single else pal.muted, 1, Dash.DashLine)
            mem = "HBM" if info.kind is GpuKind.INSTINCT else "VRAM"
            for metric, key, label, pen, extra in (
                ("power", "power_w", "power", main, {}),
                ("power", "power_cap_w", "cap", level, {"step": True}),
                ("memory", "vram_used_bytes", mem, main, {"scale": 1.0 / GIB}),
                ("memory", "vram_total_bytes", "total", level, {"step": True, "scale": 1.0 / GIB}),
                ("busy", "gpu_busy_percent", "busy", main, {}),
                ("clocks", "sclk_mhz", "sclk", main, {}),
                ("clocks", "mclk_mhz", "mclk", self.pen(color, 1, Dash.DashLine), {}),
                ("fan", "fan_percent", "fan", main, {}),
            ):
                target = where(metric)
                if target:
                    self._add(target, info.pci, key, f"{tag} {label}", pen, **extra)
        self._rebuild_legend(infos, single)
        for curve in self.curves:
            curve.last_sig = ()
        for band in self.grid.bands.values():
            band.set_spans([])
        self.request_redraw(force=True)

    def _add(self, plot: str, pci: str, key: str, label: str, pen: QtGui.QPen, step: bool = False,
             scale: float = 1.0, temp: bool = False) -> None:
        item = pg.PlotCurveItem(pen=pen, antialias=False, connect="finite", skipFiniteCheck=True)
        item.setZValue(0 if step else 1)
        self.plots[plot].addItem(item)
        self.curves.append(Curve(item, plot, pci, key, label, step=step, scale=scale, temp=temp))

    def _rebuild_legend(self, infos: list[GpuInfo], single: bool) -> None:
        pal = theme.current()
        entries: list[tuple[str | None, str]] = []
        if single and infos:
            for sensor in self._sensors_of(infos[0].pci):
                entries.append((theme.SENSOR_COLORS.get(sensor, pal.muted), sensor))
            entries.append((pal.muted, "- - cap / total / mclk   ▮ throttling (shaded)"))
        else:
            for info in infos:
                entries.append((theme.series_color(self._color_index(info.pci)), gpu_label(info)))
            sensors = sorted({s for i in infos for s in self._sensors_of(i.pci)},
                             key=lambda s: ordered_sensors([s, "junction", "edge", "mem"]).index(s))
            styles = {"junction": "——", "edge": "- -", "mem": "···"}
            metrics = {metric_of(p) for p in self.plots}
            keys = []
            if "temp" in metrics:
                keys.extend(f"{styles.get(s, '—')} {s}" for s in sensors)
            if metrics & {"power", "memory"}:
                keys.append("- - cap / total")
            if "clocks" in metrics:
                keys.append("—— sclk  - - mclk")
            keys.append("▮ throttling (shaded)")
            entries.append((None, "   ".join(keys)))
        self.controls.set_legend(entries, pal.muted)

    def apply_theme(self) -> None:
        """Re-colour after a theme change (curves are rebuilt with the new palette)."""
        self.grid.apply_theme()
        self.rebuild()

    def changeEvent(self, event: QtCore.QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QtCore.QEvent.Type.DevicePixelRatioChange \
                and max(1.0, float(self.devicePixelRatioF())) != self.line_scale:
            self.rebuild()  # moved to a screen with another scale: pens for its pixels

    # -- drawing ----------------------------------------------------------------------------------------
    def _on_snapshot(self, _snapshot) -> None:
        self._dirty = True
        self.request_redraw()

    def plot_width_px(self) -> int:
        first = self.grid.first()
        width = int(first.getViewBox().width()) if first is not None else 0
        return max(50, width or 600)

    def min_interval_s(self) -> float:
        """Redraw at most 5 times a second, and no more often than the time axis moves by one pixel."""
        return max(FRAME_S, 1.0 / MAX_REDRAW_HZ, 0.95 * self.settings.graph_window_s / self.plot_width_px())

    def request_redraw(self, force: bool = False) -> None:
        if force:
            self._dirty = True
        if not self.isVisible() or (self.paused and not force):
            return
        if self._timer.isActive():
            if force:
                self._timer.start(0)
            return
        wait = 0.0 if force else self._last_draw + self.min_interval_s() - time.monotonic()
        self._timer.start(max(0, int(wait * 1000)))

    # -- Tab --------------------------------------------------------------------------------------------
    def on_shown(self) -> None:
        """Nothing more: showEvent already redraws with what arrived while hidden."""

    def screenshot_ready(self) -> bool:
        """Ready when no coalesced redraw is waiting (the plots show the latest samples)."""
        return not self._timer.isActive()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if max(1.0, float(self.devicePixelRatioF())) != self.line_scale:
            self.rebuild()
        self.request_redraw(force=True)

    def time_range(self) -> tuple[float, float]:
        if self.follow:
            recorded = getattr(self.ctx.feed, "recorded", None)
            if getattr(self.ctx.feed, "frozen", False) and recorded is not None:
                # a recording spans its own timestamps: first to last sample (a minute for one sample)
                first, last, _count = recorded
                span = last - first
                pad = max(1.0, span * 0.02)
                return (first - pad, last + pad) if span > 0 else (last - 30.0, last + 30.0)
            newest = self._newest_time()
            return newest - self.settings.graph_window_s, newest
        plot = self.grid.first()
        if plot is None:
            return self._x_range
        rng = plot.getViewBox().viewRange()[0]
        return float(rng[0]), float(rng[1])

    def _newest_time(self) -> float:
        snap = self.ctx.feed.last_snapshot
        return float(snap.timestamp) if snap is not None else time.time()

    def series(self, pci: str, key: str, t0: float | None = None,
               t1: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Recorded (times, values) of one metric, limited to [t0, t1] plus a little margin."""
        history = self.ctx.history
        empty = (np.empty(0), np.empty(0))
        if pci not in history:
            return empty
        gpu = history[pci]
        if key not in gpu.values:
            return empty
        if t0 is None or t1 is None:
            return gpu.series(key)
        margin = 2.0 / max(self.ctx.feed.rate_hz, 0.01) + 1.0
        return gpu.series(key, seconds=(t1 - t0) + 2 * margin, now=t1 + margin)

    def throttle_spans(self, pci: str, t0: float, t1: float):
        history = self.ctx.history
        return history[pci].throttle.between(t0, t1) if pci in history else []

    def redraw(self) -> None:
        """Draw the visible window once (called by the coalescing timer)."""
        if not self.isVisible():
            return
        self._last_draw = time.monotonic()
        self._dirty = False
        self._draw_count += 1
        t0, t1 = self.time_range()
        bins = max(16, self.plot_width_px())
        gap = max(5.0, 5.0 / max(self.ctx.feed.rate_hz, 0.01))
        fahrenheit = self.settings.temp_unit == "F"
        extents: dict[str, list[float]] = {name: [math.inf, -math.inf] for name in self.plots}
        drawn: set[str] = set()  # plots with at least one finite value on a main (not step) curve
        for curve in self.curves:
            if curve.step:
                t, y = self.series(curve.pci, curve.key, t0, t1)
                x, v = steps(t, y)
                # the left end may move (older points leave the window) without a redraw: the
                # line drawn earlier still starts before the window
                sig = (tuple(v[::2].tolist()), tuple(x[1:-1].tolist())) if len(v) < 64 else (len(v), float(x[-2]))
                if sig != curve.last_sig:
                    curve.last_sig = sig
                    curve.item.setData(x, v * curve.scale, connect="finite", skipFiniteCheck=True)
                v = v[np.isfinite(v)]
                if len(v):
                    extents[curve.plot][1] = max(extents[curve.plot][1], float(v.max()) * curve.scale)
                continue
            t, y = self.series(curve.pci, curve.key, t0, t1)
            x, v = minmax_decimate(t, y, t0, t1, bins, gap)
            if curve.scale != 1.0:
                v = v * curve.scale
            if curve.temp and fahrenheit:
                v = c_to_unit(v, "F")
            curve.item.setData(x, v, connect="finite", skipFiniteCheck=True)
            finite = v[np.isfinite(v)]
            if len(finite):
                drawn.add(curve.plot)
                ext = extents[curve.plot]
                ext[0] = min(ext[0], float(finite.min()))
                ext[1] = max(ext[1], float(finite.max()))
        self._draw_throttle(t0, t1)
        self._apply_ranges(t0, t1, extents)
        self._update_notes(t1, drawn)

    def _draw_throttle(self, t0: float, t1: float) -> None:
        """Shade each plot where one of its GPUs throttled (overlaid: any GPU shown)."""
        pcis: dict[str, set[str]] = {}
        for curve in self.curves:
            pcis.setdefault(curve.plot, set()).add(curve.pci)
        cache: dict[str, list[tuple[float, float]]] = {}
        # a GPU at its power cap flaps in and out every few seconds (each training step's sync dip):
        # spans closer than a few pixels or samples show as one, not as a picket fence
        join_s = max(3.0 * (t1 - t0) / self.plot_width_px(), 5.0 / max(self.ctx.feed.rate_hz, 0.01))
        for pid, band in self.grid.bands.items():
            spans: list[tuple[float, float]] = []
            for pci in sorted(pcis.get(pid, ())):
                if pci not in cache:
                    cache[pci] = [(s.start, s.end) for s in self.throttle_spans(pci, t0, t1)]
                spans.extend(cache[pci])
            band.set_spans(merge_spans(sorted(spans), join_s))

    def _update_notes(self, t1: float, drawn: set[str]) -> None:
        """Per-plot "no data" notes with the reason, and how much history there is so far."""
        latest = self.ctx.feed.latest
        for name in self.plots:
            curves = [c for c in self.curves if c.plot == name and not c.step]
            text = ""
            if curves and name not in drawn:
                reasons = sorted({latest[c.pci].unavailable[c.key] for c in curves
                                  if c.pci in latest and c.key in latest[c.pci].unavailable})
                text = "No data: " + "; ".join(reasons) if reasons else "No samples in this time range"
            self.grid.set_note(name, text)
        note = ""
        if getattr(self.ctx.feed, "frozen", False):
            note = recorded_note(self.ctx.feed)
        elif self.follow:
            history = self.ctx.history
            firsts = [history[p].first_timestamp for p in {c.pci for c in self.curves} if p in history]
            firsts = [f for f in firsts if f is not None]
            window = self.settings.graph_window_s
            if firsts and t1 - min(firsts) < 0.25 * window:
                note = (f"{fmt_span(t1 - min(firsts))} recorded so far of the {fmt_window(window)} "
                        "window: lines grow from the right")
        set_text(self.history_note, note)
        self.history_note.setVisible(bool(note))

    def _apply_ranges(self, t0: float, t1: float, extents: dict[str, list[float]]) -> None:
        """Automatic value ranges; in small multiples one range for all plots (shared axes)."""
        self._setting_range = True
        try:
            first = self.grid.first()
            if self.follow and (t0, t1) != self._x_range and first is not None:
                self._x_range = (t0, t1)
                first.setXRange(t0, t1, padding=0)
            if self.multiples():
                lo = min((e[0] for e in extents.values()), default=math.inf)
                hi = max((e[1] for e in extents.values()), default=-math.inf)
                extents = {pid: [lo, hi] for pid in extents}
            for pid, (lo, hi) in extents.items():
                policy = METRICS[metric_of(pid)].y_range
                if pid in self.y_zoomed or policy == "percent" or not math.isfinite(hi):
                    continue  # the user's zoom stays until Auto Y; percent plots are fixed
                if policy == "temp":
                    lo = math.floor((lo - 5) / 10) * 10 if math.isfinite(lo) else 0
                    hi = math.ceil((hi + 5) / 10) * 10
                else:
                    lo, hi = 0.0, nice_ceiling(hi * 1.05)
                if (lo, hi) != self._y_ranges.get(pid):
                    self._y_ranges[pid] = (lo, hi)
                    self.plots[pid].setYRange(lo, hi, padding=0)
        finally:
            self._setting_range = False

    # -- events ------------------------------------------------------------------------------------------
    def _on_event(self, event: GpuEvent) -> None:
        self.events = [*self.events, event][-MAX_EVENTS:]
        self._add_markers(event)
        per_event = max(1, len(self.plots))
        excess = len(self.markers) - per_event * MAX_EVENTS
        for line in self.markers[:max(0, excess)]:
            # through the plot: a ViewBox.removeItem() left the line in PlotItem.items for good
            plot = next((p for p in self.plots.values() if line in p.items), None)
            if plot is not None:
                plot.removeItem(line)
        self.markers = self.markers[max(0, excess):]

    def _add_markers(self, event: GpuEvent) -> None:
        pal = theme.current()
        color = pal.critical if event.kind in ("reset", "wedged", "removed") else pal.ok
        stamp = time.strftime("%H:%M:%S", time.localtime(event.timestamp))
        who = event.card or event.pci or "GPU"
        for n, plot in enumerate(self.plots.values()):
            line = pg.InfiniteLine(event.timestamp, angle=90, movable=False,
                                   pen=self.pen(color, 1, Dash.DashDotLine),
                                   label=f"{who} {event.kind}" if n == 0 else None,
                                   labelOpts={"position": 0.92, "color": color, "movable": False})
            line.setToolTip(f"{stamp} {event.detail}")
            plot.addItem(line, ignoreBounds=True)
            self.markers.append(line)

    # -- crosshair --------------------------------------------------------------------------------------------
    def _on_mouse(self, args) -> None:
        pos = args[0]
        hovered = self.grid.hovered(pos)
        if hovered is None:
            self.grid.hide_cursor()
            return
        point = self.plots[hovered].getViewBox().mapSceneToView(pos)
        self.show_readout(hovered, point.x(), point.y())

    def readout_text(self, plot: str, when: float) -> str:
        lines = [time.strftime("%H:%M:%S", time.localtime(when))]
        metric = metric_of(plot)
        unit = "°" + self.settings.temp_unit if metric == "temp" else METRICS[metric].unit
        near = max(5.0, 3.0 / max(self.ctx.feed.rate_hz, 0.01))
        pcis: list[str] = []
        for curve in self.curves:
            if curve.plot != plot:
                continue
            if curve.pci not in pcis:
                pcis.append(curve.pci)
            t, y = self.series(curve.pci, curve.key, when - 60, when + 60)
            i = nearest_index(t, when)
            if i is None or abs(t[i] - when) > near:
                value = "N/A"
            else:
                v = float(y[i]) * curve.scale
                if curve.temp:
                    v = c_to_unit(v, self.settings.temp_unit)
                digits = 1 if metric == "memory" else 0
                value = f"{v:.{digits}f} {unit}" if math.isfinite(v) else "N/A"
            lines.append(f"{curve.label}: {value}")
        for pci in pcis:  # why the clocks are down: the driver's throttle reasons at that moment
            for span in self.throttle_spans(pci, when, when):
                info = self.known.get(pci)
                who = gpu_label(info) if info is not None else pci
                since = time.strftime("%H:%M:%S", time.localtime(span.start))
                lines.append(f"⚠ {who} throttled since {since}: {', '.join(span.reasons)}")
        return "\n".join(lines)

    def show_readout(self, plot: str, when: float, y: float | None = None) -> str:
        text = self.readout_text(plot, when)
        self.grid.show_cursor(plot, when, text)
        return text

    # -- export ------------------------------------------------------------------------------------------------
    def _export_dialog(self) -> None:
        name = time.strftime("rocmdesk-history-%Y%m%d-%H%M%S.csv")
        path, _ = QtWidgets.QFileDialog.getSaveFileName(self, "Export visible history", name, "CSV files (*.csv)")
        if path:
            try:
                rows = self.export_csv(path)
            except OSError as exc:
                QtWidgets.QMessageBox.warning(self, "Export failed", f"Could not write {path}:\n{exc}")
                return
            window = self.window()
            if hasattr(window, "statusBar"):
                window.statusBar().showMessage(f"Exported {rows} rows to {path}", 6000)

    def export_csv(self, path: str) -> int:
        """Write the raw (not downsampled) samples of the visible time range; returns the row count."""
        t0, t1 = self.time_range()
        columns = []
        for curve in self.curves:
            t, y = self.series(curve.pci, curve.key, t0, t1)
            columns.append(column(f"{curve.pci} {curve.key} ({UNITS[curve.metric]})", t, y, t0, t1))
        return write_csv(path, columns)

    @property
    def draw_count(self) -> int:
        return self._draw_count


def merge_spans(spans: list[tuple[float, float]], join_s: float) -> list[tuple[float, float]]:
    """Sorted (start, end) spans with gaps up to ``join_s`` joined into one."""
    out: list[tuple[float, float]] = []
    for start, end in spans:
        if out and start - out[-1][1] <= join_s:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def recorded_note(feed) -> str:
    """A recording's graphs say what they show: "Snapshot recorded 2026-12-01 21:42 · 1 sample"."""
    return f"Snapshot {feed.recorded_text()} (nothing is sampled now)"

