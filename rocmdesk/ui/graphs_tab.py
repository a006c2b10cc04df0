"""Graphs: temperature, power (with cap), VRAM/HBM (with total) and GPU busy over time.

Cheap by construction (the window must cost ~1 % of a core at 1 Hz with 8 GPUs):
- the tab redraws only while visible and not paused, at most once per frame, and no more often
  than it takes the time axis to move by one pixel (a 1 h window scrolls a pixel every few
  seconds, so new samples in between would not change the picture);
- each curve gets at most two points per pixel column (min/max bins, ``graph_data``);
- caps and totals are step lines redrawn only when they change;
- curve items are created once per GPU/sensor and reused; no antialiasing; fixed y ranges.

Pan and zoom: inside a plot, drag and wheel move the shared time axis (all four plots follow);
over a plot's value axis, the wheel zooms and a drag pans (right-drag zooms) that plot's values
only. A zoomed value axis stays put while live data scrolls, until "Auto Y" (or a double-click on
that axis) hands it back to the automatic range. Neither costs a data redraw: the curves do not
depend on the value range.
"""

from __future__ import annotations

import html
import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from rocmdesk.telemetry.model import GpuInfo, GpuKind
from rocmdesk.ui import theme
from rocmdesk.ui.context import AppContext
from rocmdesk.ui.feed import GpuEvent
from rocmdesk.ui.formatting import GIB, c_to_unit, fmt_window, gpu_label, ordered_sensors
from rocmdesk.ui.graph_data import fmt_span, minmax_decimate, nearest_index, nice_ceiling, steps
from rocmdesk.ui.history_csv import UNITS, column, write_csv
from rocmdesk.ui.plot_items import GraphViewBox, GridLines, TimeAxis, ValueAxis
from rocmdesk.ui.settings import GRAPH_WINDOWS_S
from rocmdesk.ui.widgets import set_text

log = logging.getLogger(__name__)

PLOTS = ("temp", "power", "memory", "busy")
FRAME_S = 1.0 / 60.0
MAX_REDRAW_HZ = 5.0  # a live graph does not look smoother above this, and each frame costs ~15-25 ms


@dataclass
class Curve:
    """One drawn line: which series it shows and how to scale it."""

    item: pg.PlotCurveItem
    plot: str
    pci: str
    key: str
    label: str
    step: bool = False  # a level (cap/total): drawn from its change points
    scale: float = 1.0
    temp: bool = False
    last_sig: tuple = field(default_factory=tuple)


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
        self._dirty = True
        self._last_draw = 0.0
        self._draw_count = 0
        self._x_range: tuple[float, float] = (0.0, 1.0)
        self._y_ranges: dict[str, tuple[float, float]] = {}
        self.y_zoomed: set[str] = set()  # plots whose value range the user set (not auto)
        self._setting_range = False
        self._syncing_x = False
        self._gpu_signature: tuple = ()
        self.known: dict[str, GpuInfo] = {}
        self._sensors: dict[str, set[str]] = {}

        pal = theme.current()
        pg.setConfigOptions(antialias=False, useOpenGL=False, background=pal.surface, foreground=pal.muted)

        self._build_controls()
        self.view = pg.GraphicsLayoutWidget(self)
        self.view.setAccessibleName("History graphs")
        self.view.ci.setContentsMargins(8, 8, 12, 8)
        self.view.ci.setSpacing(10)
        self.plots: dict[str, pg.PlotItem] = {}
        self.grids: dict[str, GridLines] = {}
        titles = {"temp": "Temperature", "power": "Power", "memory": "VRAM used", "busy": "GPU busy"}
        units = {"temp": "°" + self.settings.temp_unit, "power": "W", "memory": "GiB", "busy": "%"}
        for i, name in enumerate(PLOTS):
            value_axis = ValueAxis(orientation="left")
            value_axis.setToolTip("Scroll to zoom the values, drag to move them; double-click for automatic range")
            value_axis.double_clicked.connect(lambda name=name: self.auto_y(name))
            plot = self.view.addPlot(row=i // 2, col=i % 2, viewBox=GraphViewBox(),
                                     axisItems={"bottom": TimeAxis(orientation="bottom"), "left": value_axis})
            plot.setTitle(f"<span style='font-weight:600'>{titles[name]}</span>", color=pal.text, size="10pt")
            plot.setLabel("left", units=None, text=units[name])
            grid = GridLines(plot, pal.grid)
            plot.addItem(grid, ignoreBounds=True)
            self.grids[name] = grid
            plot.setMenuEnabled(False)
            plot.hideButtons()
            vb = plot.getViewBox()
            vb.disableAutoRange()
            vb.setLimits(minXRange=10, minYRange=0.5)
            vb.user_range.connect(lambda axis, name=name: self._on_user_range(name, axis))
            for axis in ("left", "bottom"):
                ax = plot.getAxis(axis)
                ax.setPen(pg.mkPen(pal.border))
                ax.setTextPen(pg.mkPen(pal.muted))
            plot.getAxis("left").setWidth(48)
            # linked by value, not with setXLink: pyqtgraph aligns views that overlap on screen by pixel
            # (same seconds per pixel), so a plot one pixel narrower showed a range seconds shorter
            vb.sigXRangeChanged.connect(self._sync_x)
            self.plots[name] = plot
        grid = self.view.ci.layout
        for col in (0, 1):
            grid.setColumnStretchFactor(col, 1)
            grid.setColumnPreferredWidth(col, 10)
        for row in (0, 1):
            grid.setRowStretchFactor(row, 1)
        # stretch factors alone left the two columns ~100 px apart (the grid shares out slack by size
        # hints), so the linked time axes spread the same range over different widths and their ticks
        # fell at different places; equal fixed widths, recomputed on resize, keep all four aligned
        self.view.installEventFilter(self)
        self._set_busy_range()

        # crosshair: one vertical line per plot and a floating read-out in the hovered plot
        self.vlines = {}
        for name, plot in self.plots.items():
            line = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen(pal.muted, style=QtCore.Qt.PenStyle.DashLine))
            line.hide()
            plot.addItem(line, ignoreBounds=True)
            self.vlines[name] = line
        self.tip = pg.TextItem("", color=pal.text, fill=pg.mkBrush(pal.surface + "e8"),
                               border=pg.mkPen(pal.border), anchor=(0, 0))
        self.tip.setZValue(1000)
        self.tip.hide()
        self._tip_plot: str | None = None

        # a plot with nothing to draw says why (the sensor's N/A reason) instead of showing bare axes
        self.empty_notes: dict[str, pg.TextItem] = {}
        self._note_texts: dict[str, str] = {}
        for name, plot in self.plots.items():
            note = pg.TextItem("", color=pal.muted, anchor=(0.5, 0.5))
            note.setZValue(500)
            note.hide()
            plot.addItem(note, ignoreBounds=True)
            self.empty_notes[name] = note
            plot.getViewBox().sigRangeChanged.connect(lambda *_a, name=name: self._place_note(name))
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
        self._on_gpus_changed(feed.gpus)
        for event in feed.events:
            self._on_event(event)

    def _sync_x(self, source: pg.ViewBox, x_range: tuple[float, float]) -> None:
        """Give every plot the time range one of them just got (pan, zoom or follow)."""
        if self._syncing_x:
            return
        self._syncing_x = True
        try:
            lo, hi = (float(v) for v in x_range)
            for plot in self.plots.values():
                vb = plot.getViewBox()
                if vb is not source and tuple(vb.viewRange()[0]) != (lo, hi):
                    vb.setXRange(lo, hi, padding=0)
        finally:
            self._syncing_x = False

    def eventFilter(self, obj: QtCore.QObject, event: QtCore.QEvent) -> bool:
        if obj is self.view and event.type() == QtCore.QEvent.Type.Resize:
            self._equal_columns(event.size().width())
        return super().eventFilter(obj, event)

    def _equal_columns(self, width: int) -> None:
        layout = self.view.ci.layout
        left, _top, right, _bottom = layout.getContentsMargins()
        column = max(100.0, math.floor((width - left - right - max(0.0, layout.horizontalSpacing())) / 2.0))
        for col in (0, 1):
            layout.setColumnFixedWidth(col, column)

    # -- controls ------------------------------------------------------------------------------------
    def _build_controls(self) -> None:
        self.controls = QtWidgets.QFrame(self)
        self.controls.setObjectName("graphControls")
        outer = QtWidgets.QVBoxLayout(self.controls)
        outer.setContentsMargins(12, 6, 12, 6)
        outer.setSpacing(4)
        row = QtWidgets.QHBoxLayout()
        row.setSpacing(8)
        outer.addLayout(row)

        self.gpu_combo = QtWidgets.QComboBox(self.controls)
        self.gpu_combo.setAccessibleName("GPUs shown in the graphs")
        self.gpu_combo.setSizeAdjustPolicy(
            QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.gpu_combo.setMinimumContentsLength(18)
        self.gpu_combo.currentIndexChanged.connect(self._on_gpu_combo)

        self.window_combo = QtWidgets.QComboBox(self.controls)
        self.window_combo.setAccessibleName("Time window")
        for seconds in GRAPH_WINDOWS_S:
            self.window_combo.addItem(f"Last {fmt_window(seconds)}", seconds)
        self.window_combo.setCurrentIndex(GRAPH_WINDOWS_S.index(self.settings.graph_window_s))
        self.window_combo.currentIndexChanged.connect(self._on_window_combo)

        self.pause_button = QtWidgets.QPushButton("Pause", self.controls)
        self.pause_button.setCheckable(True)
        self.pause_button.setAccessibleName("Pause graphs")
        self.pause_button.setToolTip("Pause or resume the graphs (Space); samples are still recorded")
        self.pause_button.toggled.connect(self.set_paused)

        self.live_button = QtWidgets.QPushButton("Back to live", self.controls)
        self.live_button.setAccessibleName("Back to live")
        self.live_button.setToolTip("Follow the newest samples again (End)")
        self.live_button.clicked.connect(self.back_to_live)
        self.live_button.hide()

        self.auto_y_button = QtWidgets.QPushButton("Auto Y", self.controls)
        self.auto_y_button.setAccessibleName("Automatic value range")
        self.auto_y_button.setToolTip("Give zoomed value axes their automatic range again")
        self.auto_y_button.clicked.connect(lambda: self.auto_y())
        self.auto_y_button.hide()

        # right after start (or on a static root folder) a 1 h window holds a few seconds of data:
        # the lines are a few pixels at the right edge, so say so instead of looking broken
        self.history_note = QtWidgets.QLabel(self.controls)
        self.history_note.setObjectName("historyNote")
        self.history_note.setAccessibleName("Recorded history")
        self.history_note.hide()

        self.export_button = QtWidgets.QPushButton("Export CSV…", self.controls)
        self.export_button.setAccessibleName("Export visible history to CSV")
        self.export_button.clicked.connect(self._export_dialog)

        # the legend has a row of its own and wraps between entries: eight "card1 · MI300X" entries
        # and the line-style key do not fit next to the controls at 1280 px (they were cut off there)
        self.legend = QtWidgets.QLabel(self.controls)
        self.legend.setObjectName("legendItem")
        self.legend.setAccessibleName("Graph legend")
        self.legend.setWordWrap(True)
        self.legend.setTextFormat(QtCore.Qt.TextFormat.RichText)
        policy = QtWidgets.QSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.legend.setSizePolicy(policy)
        self.legend_entries: list[str] = []

        shown = QtWidgets.QLabel("Show", self.controls)
        shown.setBuddy(self.gpu_combo)
        row.addWidget(shown)
        row.addWidget(self.gpu_combo)
        row.addWidget(self.window_combo)
        row.addWidget(self.pause_button)
        row.addWidget(self.live_button)
        row.addWidget(self.auto_y_button)
        row.addWidget(self.history_note)
        row.addStretch(1)
        row.addWidget(self.export_button)
        outer.addWidget(self.legend)

    def _fill_gpu_combo(self, infos: list[GpuInfo]) -> None:
        self.gpu_combo.blockSignals(True)
        self.gpu_combo.clear()
        self.gpu_combo.addItem("All GPUs overlaid", "")
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
        """°C/°F changed (settings already hold it): relabel the axis and redraw in the new unit."""
        self.plots["temp"].setLabel("left", units=None, text="°" + unit)
        self.auto_y("temp")  # a value zoom in the old unit means nothing in the new one

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
            if name == "busy":
                self._set_busy_range()
        self.auto_y_button.setVisible(bool(self.y_zoomed))
        self.request_redraw(force=True)

    def _set_busy_range(self) -> None:
        self._setting_range = True
        try:
            self.plots["busy"].setYRange(0, 100, padding=0.02)
        finally:
            self._setting_range = False
        self._y_ranges["busy"] = (0, 100)

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

    def rebuild(self) -> None:
        """Create the curve items for the GPUs shown (only when GPUs or the mode change)."""
        for curve in self.curves:
            self.plots[curve.plot].removeItem(curve.item)
        self.curves = []
        pal = theme.current()
        infos = self.shown_gpus()
        single = len(infos) == 1  # one GPU: colour by sensor, whatever the mode
        all_infos = list(self.known.values())
        for info in infos:
            index = next((n for n, i in enumerate(all_infos) if i.pci == info.pci), 0)
            color = theme.series_color(index)
            tag = gpu_label(info)
            for sensor in self._sensors_of(info.pci):
                if single:
                    pen = pg.mkPen(theme.SENSOR_COLORS.get(sensor, pal.muted), width=1.5)
                else:
                    pen = pg.mkPen(color, width=1, style=theme.SENSOR_STYLES.get(sensor, QtCore.Qt.PenStyle.SolidLine))
                self._add("temp", info.pci, f"temperature_c.{sensor}", f"{tag} {sensor}", pen, temp=True)
            main = pg.mkPen(color, width=1.5 if single else 1)
            level = pg.mkPen(color if not single else pal.muted, width=1, style=QtCore.Qt.PenStyle.DashLine)
            self._add("power", info.pci, "power_w", f"{tag} power", main)
            self._add("power", info.pci, "power_cap_w", f"{tag} cap", level, step=True)
            mem = "HBM" if info.kind is GpuKind.INSTINCT else "VRAM"
            self._add("memory", info.pci, "vram_used_bytes", f"{tag} {mem}", main, scale=1.0 / GIB)
            self._add("memory", info.pci, "vram_total_bytes", f"{tag} total", level, step=True, scale=1.0 / GIB)
            self._add("busy", info.pci, "gpu_busy_percent", f"{tag} busy", main)
        mem_title = "HBM used" if infos and all(i.kind is GpuKind.INSTINCT for i in infos) else "VRAM used"
        self.plots["memory"].setTitle(f"<span style='font-weight:600'>{mem_title}</span>", color=pal.text, size="10pt")
        self._rebuild_legend(infos, single)
        self._y_ranges = {"busy": (0, 100)}
        for curve in self.curves:
            curve.last_sig = ()
        self.request_redraw(force=True)

    def _add(self, plot: str, pci: str, key: str, label: str, pen: QtGui.QPen, step: bool = False,
             scale: float = 1.0, temp: bool = False) -> None:
        item = pg.PlotCurveItem(pen=pen, antialias=False, connect="finite", skipFiniteCheck=True)
        item.setZValue(0 if step else 1)
        self.plots[plot].addItem(item)
        self.curves.append(Curve(item, plot, pci, key, label, step=step, scale=scale, temp=temp))

    def _rebuild_legend(self, infos: list[GpuInfo], single: bool) -> None:
        pal = theme.current()
        entries: list[tuple[str, str]] = []
        all_infos = list(self.known.values())
        if single and infos:
            for sensor in self._sensors_of(infos[0].pci):
                entries.append((theme.SENSOR_COLORS.get(sensor, pal.muted), sensor))
            entries.append((pal.muted, "- - cap / total"))
        else:
            for info in infos:
                index = next((n for n, i in enumerate(all_infos) if i.pci == info.pci), 0)
                entries.append((theme.series_color(index), gpu_label(info)))
            sensors = sorted({s for i in infos for s in self._sensors_of(i.pci)},
                             key=lambda s: ordered_sensors([s, "junction", "edge", "mem"]).index(s))
            styles = {"junction": "——", "edge": "- -", "mem": "···"}
            key_text = "   ".join(f"{styles.get(s, '—')} {s}" for s in sensors)
            if key_text:
                entries.append((None, key_text + "   - - cap / total"))
        self.legend_entries = [text for _color, text in entries]
        parts = []
        for color, text in entries:
            shown = html.escape(text).replace(" ", "&nbsp;")  # wrap between entries, never inside one
            if color is None:
                parts.append(f"<span style='color:{pal.muted}'>{shown}</span>")
            else:
                parts.append(f"<span style='color:{color}; font-size:13pt'>■</span>&nbsp;{shown}")
        self.legend.setText("&nbsp;&nbsp; ".join(parts))
        self.legend.setVisible(bool(parts))

    def apply_theme(self) -> None:
        """Re-colour after a theme change (curves are rebuilt with the new palette)."""
        pal = theme.current()
        self.view.setBackground(pal.surface)
        for name, plot in self.plots.items():
            for axis in ("left", "bottom"):
                ax = plot.getAxis(axis)
                ax.setPen(pg.mkPen(pal.border))
                ax.setTextPen(pg.mkPen(pal.muted))
            self.grids[name].set_color(pal.grid)
            title = plot.titleLabel.text
            plot.setTitle(title, color=pal.text, size="10pt")
        self.tip.fill = pg.mkBrush(pal.surface + "e8")
        self.tip.setColor(pal.text)
        for note in self.empty_notes.values():
            note.setColor(pal.muted)
        self.rebuild()

    # -- drawing ----------------------------------------------------------------------------------------
    def _on_snapshot(self, _snapshot) -> None:
        self._dirty = True
        self.request_redraw()

    def plot_width_px(self) -> int:
        return max(50, int(self.plots["temp"].getViewBox().width()) or 600)

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

    def showEvent(self, event) -> None:
        super().showEvent(event)
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
        rng = self.plots["temp"].getViewBox().viewRange()[0]
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
        extents: dict[str, list[float]] = {name: [math.inf, -math.inf] for name in PLOTS}
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
        self._apply_ranges(t0, t1, extents)
        self._update_notes(t1, drawn)

    def _update_notes(self, t1: float, drawn: set[str]) -> None:
        """Per-plot "no data" notes with the reason, and how much history there is so far."""
        latest = self.ctx.feed.latest
        for name in PLOTS:
            curves = [c for c in self.curves if c.plot == name and not c.step]
            text = ""
            if curves and name not in drawn:
                reasons = sorted({latest[c.pci].unavailable[c.key] for c in curves
                                  if c.pci in latest and c.key in latest[c.pci].unavailable})
                text = "No data: " + "; ".join(reasons) if reasons else "No samples in this time range"
            if text != self._note_texts.get(name, ""):
                self._note_texts[name] = text
                self.empty_notes[name].setText(text)
                self.empty_notes[name].setVisible(bool(text))
            if text:
                self._place_note(name)
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

    def _place_note(self, name: str) -> None:
        note = self.empty_notes[name]
        if note.isVisible():
            (x0, x1), (y0, y1) = self.plots[name].getViewBox().viewRange()
            note.setPos((x0 + x1) / 2, (y0 + y1) / 2)

    def _apply_ranges(self, t0: float, t1: float, extents: dict[str, list[float]]) -> None:
        self._setting_range = True
        try:
            if self.follow and (t0, t1) != self._x_range:
                self._x_range = (t0, t1)
                self.plots["temp"].setXRange(t0, t1, padding=0)
            for name in ("temp", "power", "memory"):
                if name in self.y_zoomed:
                    continue  # the user's zoom stays until Auto Y
                lo, hi = extents[name]
                if not math.isfinite(hi):
                    continue
                if name == "temp":
                    lo = math.floor((lo - 5) / 10) * 10 if math.isfinite(lo) else 0
                    hi = math.ceil((hi + 5) / 10) * 10
                else:
                    lo, hi = 0.0, nice_ceiling(hi * 1.05)
                if (lo, hi) != self._y_ranges.get(name):
                    self._y_ranges[name] = (lo, hi)
                    self.plots[name].setYRange(lo, hi, padding=0)
        finally:
            self._setting_range = False

    # -- events ------------------------------------------------------------------------------------------
    def _on_event(self, event: GpuEvent) -> None:
        pal = theme.current()
        color = pal.critical if event.kind in ("reset", "wedged", "removed") else pal.ok
        stamp = time.strftime("%H:%M:%S", time.localtime(event.timestamp))
        who = event.card or event.pci or "GPU"
        for name, plot in self.plots.items():
            line = pg.InfiniteLine(event.timestamp, angle=90, movable=False,
                                   pen=pg.mkPen(color, width=1, style=QtCore.Qt.PenStyle.DashDotLine),
                                   label=f"{who} {event.kind}" if name == "temp" else None,
                                   labelOpts={"position": 0.92, "color": color, "movable": False})
            line.setToolTip(f"{stamp} {event.detail}")
            plot.addItem(line, ignoreBounds=True)
            self.markers.append(line)
        del_count = len(self.markers) - 4 * 50
        for line in self.markers[:max(0, del_count)]:
            # through the plot: a ViewBox.removeItem() left the line in PlotItem.items for good
            plot = next((p for p in self.plots.values() if line in p.items), None)
            if plot is not None:
                plot.removeItem(line)
        self.markers = self.markers[max(0, del_count):]

    # -- crosshair --------------------------------------------------------------------------------------------
    def _on_mouse(self, args) -> None:
        pos = args[0]
        hovered = None
        for name, plot in self.plots.items():
            if plot.sceneBoundingRect().contains(pos) and plot.getViewBox().sceneBoundingRect().contains(pos):
                hovered = name
                break
        if hovered is None:
            for line in self.vlines.values():
                line.hide()
            self.tip.hide()
            return
        vb = self.plots[hovered].getViewBox()
        point = vb.mapSceneToView(pos)
        self.show_readout(hovered, point.x(), point.y())

    def readout_text(self, plot: str, when: float) -> str:
        lines = [time.strftime("%H:%M:%S", time.localtime(when))]
        unit = {"temp": "°" + self.settings.temp_unit, "power": "W", "memory": "GiB", "busy": "%"}[plot]
        for curve in self.curves:
            if curve.plot != plot:
                continue
            t, y = self.series(curve.pci, curve.key, when - 60, when + 60)
            i = nearest_index(t, when)
            if i is None or abs(t[i] - when) > max(5.0, 3.0 / max(self.ctx.feed.rate_hz, 0.01)):
                value = "N/A"
            else:
                v = float(y[i]) * curve.scale
                if curve.temp:
                    v = c_to_unit(v, self.settings.temp_unit)
                value = "N/A" if not math.isfinite(v) else f"{v:.1f} {unit}" if plot == "memory" else f"{v:.0f} {unit}"
            lines.append(f"{curve.label}: {value}")
        return "\n".join(lines)

    def show_readout(self, plot: str, when: float, y: float | None = None) -> str:
        text = self.readout_text(plot, when)
        for line in self.vlines.values():
            line.setPos(when)
            line.show()
        target = self.plots[plot]
        if self._tip_plot != plot:
            if self._tip_plot is not None:
                self.plots[self._tip_plot].removeItem(self.tip)
            target.addItem(self.tip, ignoreBounds=True)
            self._tip_plot = plot
        self.tip.setText(text)
        (x0, x1), (_y0, y1) = target.getViewBox().viewRange()
        left_half = when < (x0 + x1) / 2
        self.tip.setAnchor((0, 0) if left_half else (1, 0))
        self.tip.setPos(when, y1)
        self.tip.show()
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
            columns.append(column(f"{curve.pci} {curve.key} ({UNITS[curve.plot]})", t, y, t0, t1))
        return write_csv(path, columns)

    @property
    def draw_count(self) -> int:
        return self._draw_count


def recorded_note(feed) -> str:
    """A recording's graphs say what they show: "Snapshot recorded 2026-12-01 21:42 · 1 sample"."""
    return f"Snapshot {feed.recorded_text()} (nothing is sampled now)"
