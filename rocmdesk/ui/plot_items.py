"""The pyqtgraph pieces the Graphs tab is built from: axes, a view box, grid lines.

Kept apart from the tab (which wires data to them) so each piece is small and testable on its own.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtGui


class TimeAxis(pg.DateAxisItem):
    """Local clock time; the axis is shared by all four plots."""


class GraphViewBox(pg.ViewBox):
    """A view whose mouse gestures move one axis at a time, and say which.

    pyqtgraph's own ``sigRangeChangedManually`` carries the enabled-axes mask after a drag, not
    the axis that moved, so a value zoom could not be told from a time pan (which stops following
    live data). Inside the plot the gestures act on time only, as before; the value axis passes
    ``axis=1`` (pyqtgraph's AxisItem forwards wheel and drag events that way).
    """

    user_range = QtCore.Signal(int)  # 0: time (x) changed by the user, 1: values (y)

    def __init__(self) -> None:
        super().__init__(enableMenu=False)
        self.setMouseEnabled(x=True, y=True)

    def wheelEvent(self, ev, axis=None) -> None:
        axis = 0 if axis is None else axis
        super().wheelEvent(ev, axis)
        if ev.isAccepted():
            self.user_range.emit(axis)

    def mouseDragEvent(self, ev, axis=None) -> None:
        axis = 0 if axis is None else axis
        super().mouseDragEvent(ev, axis)
        self.user_range.emit(axis)


class ValueAxis(pg.AxisItem):
    """The left axis: a double-click returns its plot to the automatic value range."""

    double_clicked = QtCore.Signal()

    def mouseClickEvent(self, event) -> None:
        if event.double() and event.button() == QtCore.Qt.MouseButton.LeftButton:
            event.accept()
            self.double_clicked.emit()
            return
        super().mouseClickEvent(event)


class GridLines(pg.GraphicsObject):
    """Opaque 1-pixel grid lines at the axes' major ticks.

    pyqtgraph's own grid (extended tick lines with alpha, replayed from a QPicture) cost about
    8 ms per axis per frame in software rendering here; this costs a few dozen line draws.
    """

    def __init__(self, plot: pg.PlotItem, color: str) -> None:
        super().__init__()
        self.plot = plot
        self.pen = QtGui.QPen(QtGui.QColor(color))
        self.pen.setCosmetic(True)
        self.pen.setWidth(1)
        self.xs: list[float] = []
        self.ys: list[float] = []
        self.rect = QtCore.QRectF(0, 0, 1, 1)
        self.setZValue(-100)
        plot.getViewBox().sigRangeChanged.connect(self.refresh)

    def set_color(self, color: str) -> None:
        self.pen.setColor(QtGui.QColor(color))
        self.update()

    @staticmethod
    def major(axis: pg.AxisItem, lo: float, hi: float, pixels: float) -> list[float]:
        if not (hi > lo) or pixels <= 0:
            return []
        try:
            levels = axis.tickValues(lo, hi, pixels)
        except Exception:  # an axis that cannot place ticks draws no grid
            return []
        values: list[float] = []
        for _spacing, ticks in levels:
            if len(values) + len(ticks) > max(2, pixels / 45):
                break
            values.extend(float(v) for v in ticks if lo <= v <= hi)
            if len(values) >= 3:
                break
        return values

    def refresh(self, *_args) -> None:
        vb = self.plot.getViewBox()
        (x0, x1), (y0, y1) = vb.viewRange()
        self.prepareGeometryChange()
        self.rect = QtCore.QRectF(x0, y0, x1 - x0, y1 - y0)
        self.xs = self.major(self.plot.getAxis("bottom"), x0, x1, vb.width())
        self.ys = self.major(self.plot.getAxis("left"), y0, y1, vb.height())
        self.update()

    def boundingRect(self) -> QtCore.QRectF:
        return self.rect

    def paint(self, p: QtGui.QPainter, *_args) -> None:
        p.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, False)
        p.setPen(self.pen)
        r = self.rect
        for x in self.xs:
            p.drawLine(QtCore.QPointF(x, r.top()), QtCore.QPointF(x, r.bottom()))
        for y in self.ys:
            p.drawLine(QtCore.QPointF(r.left(), y), QtCore.QPointF(r.right(), y))


class ThrottleBands(pg.GraphicsObject):
    """Shaded time spans (throttling) behind a plot's curves, full height, with a top edge mark.

    One item per plot, a handful of rectangles: drawn in the view's coordinates with an opaque-ish
    fill (no per-pixel work beyond the fill), and only re-set when the spans change.
    """

    def __init__(self, plot: pg.PlotItem, color: str, alpha: int = 36) -> None:
        super().__init__()
        self.plot = plot
        self.spans: list[tuple[float, float]] = []
        self.rect = QtCore.QRectF(0, 0, 1, 1)
        self.setZValue(-50)  # above the grid, below the curves
        self.set_color(color, alpha)
        plot.getViewBox().sigRangeChanged.connect(self._refresh_rect)

    def set_color(self, color: str, alpha: int = 36) -> None:
        fill = QtGui.QColor(color)
        fill.setAlpha(alpha)
        self.brush = QtGui.QBrush(fill)
        self.edge = QtGui.QColor(color)
        self.update()

    def set_spans(self, spans: list[tuple[float, float]]) -> bool:
        """Show these (start, end) spans; False (and no repaint) when they are what is shown."""
        if spans == self.spans:
            return False
        self.spans = list(spans)
        self.update()
        return True

    def _refresh_rect(self, *_args) -> None:
        (x0, x1), (y0, y1) = self.plot.getViewBox().viewRange()
        self.prepareGeometryChange()
        self.rect = QtCore.QRectF(x0, y0, x1 - x0, y1 - y0)

    def boundingRect(self) -> QtCore.QRectF:
        return self.rect

    def paint(self, p: QtGui.QPainter, *_args) -> None:
        if not self.spans:
            return
        r = self.rect
        p.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, False)
        p.setPen(QtCore.Qt.PenStyle.NoPen)
        p.setBrush(self.brush)
        # a span of one sample has no width: at least one device pixel, so it still shows
        px = self.pixelWidth() or 0.0
        for start, end in self.spans:
            if end < r.left() or start > r.right():
                continue
            p.drawRect(QtCore.QRectF(start, r.top(), max(end - start, px), r.height()))
        # a solid band along the top edge: visible even behind busy curves
        pen = QtGui.QPen(self.edge)
        pen.setCosmetic(True)
        pen.setWidthF(3.0 * max(1.0, p.device().devicePixelRatioF() if p.device() else 1.0))
        pen.setCapStyle(QtCore.Qt.PenCapStyle.FlatCap)
        p.setPen(pen)
        top = r.bottom()  # view coordinates: y grows upwards, bottom() is the largest value
        for start, end in self.spans:
            if end < r.left() or start > r.right():
                continue
            p.drawLine(QtCore.QPointF(start, top), QtCore.QPointF(max(end, start + px), top))
