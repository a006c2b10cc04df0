"""The Graphs tab's grid of plots: layout, shared time axis, crosshair, notes and throttle shading.

The tab (graphs_tab.py) decides *what* is drawn; this decides *where*: it builds one plot per
:class:`PlotSpec` in a grid of equal columns, keeps every plot on the same time range (linked X),
carries each plot's decorations (grid lines, crosshair line, "no data" note, throttle bands) and
the floating read-out, and hides the read-out when the mouse leaves the plots.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from rocmdesk.ui import theme
from rocmdesk.ui.plot_items import GraphViewBox, GridLines, ThrottleBands, TimeAxis, ValueAxis

log = logging.getLogger(__name__)

AXIS_WIDTH = 48
INNER_AXIS_WIDTH = 8  # small multiples: plots right of the first column show no values


@dataclass(frozen=True, slots=True)
class PlotSpec:
    id: str
    title: str
    unit: str
    x_values: bool = True  # tick labels on the time axis (small multiples: the bottom row only)
    y_values: bool = True  # tick labels on the value axis (small multiples: the left column only)


def title_html(text: str) -> str:
    return f"<span style='font-weight:600'>{text}</span>"


class PlotGrid(QtCore.QObject):
    """Plots in rows x columns inside one GraphicsLayoutWidget, rebuilt when the layout changes."""

    def __init__(self, parent: QtWidgets.QWidget, on_user_range: Callable[[str, int], None],
                 on_auto_y: Callable[[str], None]) -> None:
        super().__init__(parent)
        self._on_user_range = on_user_range
        self._on_auto_y = on_auto_y
        self.view = pg.GraphicsLayoutWidget(parent)
        self.view.setAccessibleName("History graphs")
        self.view.ci.setContentsMargins(8, 8, 12, 8)
        self.view.ci.setSpacing(10)
        self.view.installEventFilter(self)
        self.view.viewport().installEventFilter(self)
        self.plots: dict[str, pg.PlotItem] = {}
        self.specs: dict[str, PlotSpec] = {}
        self.grids: dict[str, GridLines] = {}
        self.vlines: dict[str, pg.InfiniteLine] = {}
        self.notes: dict[str, pg.TextItem] = {}
        self.bands: dict[str, ThrottleBands] = {}
        self.cols = 1
        self._syncing_x = False
        pal = theme.current()
        self.tip = pg.TextItem("", color=pal.text, fill=pg.mkBrush(pal.surface + "e8"),
                               border=pg.mkPen(pal.border), anchor=(0, 0))
        self.tip.setZValue(1000)
        self.tip.hide()
        self.tip_plot: str | None = None

    # -- building ----------------------------------------------------------------------------------
    def build(self, specs: list[PlotSpec], cols: int) -> None:
        """Replace all plots by these, ``cols`` to a row (cheap enough: only on a layout change)."""
        self.hide_cursor()
        if self.tip_plot is not None and self.tip_plot in self.plots:
            self.plots[self.tip_plot].removeItem(self.tip)
        self.tip_plot = None
        self.view.ci.clear()
        self.plots, self.specs, self.grids, self.vlines, self.notes, self.bands = {}, {}, {}, {}, {}, {}
        self.cols = max(1, cols)
        pal = theme.current()
        for i, spec in enumerate(specs):
            self._add_plot(spec, i // self.cols, i % self.cols, pal)
        layout = self.view.ci.layout
        rows = math.ceil(len(specs) / self.cols) if specs else 0
        for col in range(self.cols):
            layout.setColumnStretchFactor(col, 1)
            layout.setColumnPreferredWidth(col, 10)
        for row in range(rows):
            layout.setRowStretchFactor(row, 1)
        self.equal_columns(self.view.width())

    def _add_plot(self, spec: PlotSpec, row: int, col: int, pal: theme.Palette) -> None:
        value_axis = ValueAxis(orientation="left")
        value_axis.setToolTip("Scroll to zoom the values, drag to move them; double-click for automatic range")
        value_axis.double_clicked.connect(lambda pid=spec.id: self._on_auto_y(pid))
        plot = self.view.addPlot(row=row, col=col, viewBox=GraphViewBox(),
                                 axisItems={"bottom": TimeAxis(orientation="bottom"), "left": value_axis})
        plot.setTitle(title_html(spec.title), color=pal.text, size="10pt")
        plot.setLabel("left", units=None, text=spec.unit)
        plot.setMenuEnabled(False)
        plot.hideButtons()
        vb = plot.getViewBox()
        vb.disableAutoRange()
        vb.setLimits(minXRange=10, minYRange=0.5)
        vb.user_range.connect(lambda axis, pid=spec.id: self._on_user_range(pid, axis))
        for axis in ("left", "bottom"):
            ax = plot.getAxis(axis)
            ax.setPen(pg.mkPen(pal.border))
            ax.setTextPen(pg.mkPen(pal.muted))
        plot.getAxis("left").setWidth(AXIS_WIDTH)
        if not spec.y_values:
            plot.getAxis("left").setStyle(showValues=False)
            plot.setLabel("left", units=None, text="")
            plot.getAxis("left").setWidth(INNER_AXIS_WIDTH)  # shared axes: values on the left column
        if not spec.x_values:
            plot.getAxis("bottom").setStyle(showValues=False)
            plot.getAxis("bottom").setHeight(6)
        # linked by value, not with setXLink: pyqtgraph aligns views that overlap on screen by pixel
        # (same seconds per pixel), so a plot one pixel narrower showed a range seconds shorter
        vb.sigXRangeChanged.connect(self._sync_x)
        grid = GridLines(plot, pal.grid)
        plot.addItem(grid, ignoreBounds=True)
        band = ThrottleBands(plot, pal.warm)
        plot.addItem(band, ignoreBounds=True)
        line = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen(pal.muted, style=QtCore.Qt.PenStyle.DashLine))
        line.hide()
        plot.addItem(line, ignoreBounds=True)
        # a plot with nothing to draw says why (the sensor's N/A reason) instead of showing bare axes
        note = pg.TextItem("", color=pal.muted, anchor=(0.5, 0.5))
        note.setZValue(500)
        note.hide()
        plot.addItem(note, ignoreBounds=True)
        vb.sigRangeChanged.connect(lambda *_a, pid=spec.id: self.place_note(pid))
        self.plots[spec.id], self.specs[spec.id] = plot, spec
        self.grids[spec.id], self.bands[spec.id], self.vlines[spec.id], self.notes[spec.id] = grid, band, line, note

    def first(self) -> pg.PlotItem | None:
        return next(iter(self.plots.values()), None)

    # -- geometry -----------------------------------------------------------------------------------
    def eventFilter(self, obj: QtCore.QObject, event: QtCore.QEvent) -> bool:
        kind = event.type()
        if obj is self.view and kind == QtCore.QEvent.Type.Resize:
            self.equal_columns(event.size().width())
        elif kind == QtCore.QEvent.Type.Leave:
            self.hide_cursor()  # the read-out must not stay behind when the mouse is elsewhere
        return super().eventFilter(obj, event)

    def equal_columns(self, width: int) -> None:
        """Fixed column widths that give every plot the same data width: stretch factors alone left
        columns ~100 px apart (slack is shared by size hints), so the linked time axes spread the
        same range over different widths. The first column also holds the value labels that small
        multiples leave off the others, so it is wider by that much."""
        layout = self.view.ci.layout
        left, _top, right, _bottom = layout.getContentsMargins()
        gaps = max(0.0, layout.horizontalSpacing()) * (self.cols - 1)
        inner = any(not s.y_values for s in self.specs.values())
        extra = AXIS_WIDTH - INNER_AXIS_WIDTH if inner else 0
        column = max(100.0, math.floor((width - left - right - gaps - extra) / self.cols))
        for col in range(self.cols):
            layout.setColumnFixedWidth(col, column + (extra if col == 0 else 0))

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

    # -- notes and the crosshair ------------------------------------------------------------------------
    def set_note(self, pid: str, text: str) -> None:
        note = self.notes[pid]
        if note.toPlainText() != text:
            note.setText(text)
        note.setVisible(bool(text))
        if text:
            self.place_note(pid)

    def place_note(self, pid: str) -> None:
        note = self.notes.get(pid)
        if note is not None and note.isVisible():
            (x0, x1), (y0, y1) = self.plots[pid].getViewBox().viewRange()
            note.setPos((x0 + x1) / 2, (y0 + y1) / 2)

    def hovered(self, pos: QtCore.QPointF) -> str | None:
        for pid, plot in self.plots.items():
            if plot.getViewBox().sceneBoundingRect().contains(pos):
                return pid
        return None

    def show_cursor(self, pid: str, when: float, text: str) -> None:
        for line in self.vlines.values():
            line.setPos(when)
            line.show()
        target = self.plots[pid]
        if self.tip_plot != pid:
            if self.tip_plot is not None and self.tip_plot in self.plots:
                self.plots[self.tip_plot].removeItem(self.tip)
            target.addItem(self.tip, ignoreBounds=True)
            self.tip_plot = pid
        self.tip.setText(text)
        (x0, x1), (_y0, y1) = target.getViewBox().viewRange()
        self.tip.setAnchor((0, 0) if when < (x0 + x1) / 2 else (1, 0))
        self.tip.setPos(when, y1)
        self.tip.show()

    def hide_cursor(self) -> None:
        for line in self.vlines.values():
            line.hide()
        self.tip.hide()

    @property
    def cursor_shown(self) -> bool:
        return self.tip.isVisible()

    # -- theme ------------------------------------------------------------------------------------------
    def apply_theme(self) -> None:
        pal = theme.current()
        self.view.setBackground(pal.surface)
        for pid, plot in self.plots.items():
            for axis in ("left", "bottom"):
                ax = plot.getAxis(axis)
                ax.setPen(pg.mkPen(pal.border))
                ax.setTextPen(pg.mkPen(pal.muted))
            self.grids[pid].set_color(pal.grid)
            self.bands[pid].set_color(pal.warm)
            self.vlines[pid].setPen(pg.mkPen(pal.muted, style=QtCore.Qt.PenStyle.DashLine))
            plot.setTitle(plot.titleLabel.text, color=pal.text, size="10pt")
            self.notes[pid].setColor(pal.muted)
        self.tip.fill = pg.mkBrush(pal.surface + "e8")
        self.tip.border = pg.mkPen(pal.border)
        self.tip.setColor(pal.text)
