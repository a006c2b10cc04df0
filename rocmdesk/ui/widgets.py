"""Small painted widgets shared by the tabs (cheap to update, crisp at any scale factor)."""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets


def set_text(label: QtWidgets.QLabel, text: str) -> bool:
    """setText only when it changes: a relabel costs a relayout, and most ticks change nothing."""
    if label.text() == text:
        return False
    label.setText(text)
    return True


def set_tooltip(widget: QtWidgets.QWidget, text: str) -> None:
    if widget.toolTip() != text:
        widget.setToolTip(text)


def set_property(widget: QtWidgets.QWidget, name: str, value: object) -> None:
    """Change a style-sheet property and re-polish, only when it changes."""
    if widget.property(name) == value:
        return
    widget.setProperty(name, value)
    style = widget.style()
    style.unpolish(widget)
    style.polish(widget)


class MeterBar(QtWidgets.QWidget):
    """A thin horizontal gauge: fraction 0..1 in a colour, or an empty hatched trough for N/A."""

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self._fraction: float | None = None
        self._color = QtGui.QColor("#3b82f6")
        self._trough = QtGui.QColor("#e5e7eb")
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Expanding, QtWidgets.QSizePolicy.Policy.Fixed)
        self.setAttribute(QtCore.Qt.WidgetAttribute.WA_OpaquePaintEvent, False)

    def sizeHint(self) -> QtCore.QSize:
        return QtCore.QSize(80, max(5, self.fontMetrics().height() // 3))

    def minimumSizeHint(self) -> QtCore.QSize:
        return QtCore.QSize(20, self.sizeHint().height())

    @property
    def fraction(self) -> float | None:
        return self._fraction

    def set_value(self, fraction: float | None, color: str, trough: str) -> None:
        if fraction is not None:
            fraction = min(1.0, max(0.0, float(fraction)))
            # a repaint below half a pixel of change is invisible: skip it
            if self._fraction is not None and abs(fraction - self._fraction) * max(1, self.width()) < 0.5 \
                    and self._color.name() == color:
                return
        if fraction == self._fraction and self._color.name() == color and self._trough.name() == trough:
            return
        self._fraction = fraction
        self._color = QtGui.QColor(color)
        self._trough = QtGui.QColor(trough)
        self.update()

    def paintEvent(self, _event: QtGui.QPaintEvent) -> None:
        p = QtGui.QPainter(self)
        p.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
        rect = QtCore.QRectF(self.rect())
        radius = rect.height() / 2
        p.setPen(QtCore.Qt.PenStyle.NoPen)
        p.setBrush(self._trough)
        p.drawRoundedRect(rect, radius, radius)
        if self._fraction is None:
            p.setBrush(QtGui.QBrush(self._color, QtCore.Qt.BrushStyle.BDiagPattern))
            p.drawRoundedRect(rect, radius, radius)
            return
        if self._fraction > 0:
            fill = QtCore.QRectF(rect)
            fill.setWidth(max(rect.height(), rect.width() * self._fraction))
            p.setBrush(self._color)
            p.drawRoundedRect(fill, radius, radius)


class ElidedLabel(QtWidgets.QLabel):
    """A label that shows "…" instead of widening its parent when the text is too long."""

    def __init__(self, text: str = "", parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self._full = ""
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Preferred)
        self.set_full_text(text)

    def full_text(self) -> str:
        return self._full

    def set_full_text(self, text: str) -> None:
        if text == self._full:
            return
        self._full = text
        self._elide()

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        shown = self.fontMetrics().elidedText(self._full, QtCore.Qt.TextElideMode.ElideRight, max(10, self.width()))
        if shown != self.text():
            self.setText(shown)
        self.setToolTip(self._full if shown != self._full else "")

    def minimumSizeHint(self) -> QtCore.QSize:
        return QtCore.QSize(10, super().minimumSizeHint().height())


class Sparkline(QtWidgets.QWidget):
    """Recent history of one or two series (0..1 each) as a filled area and a line.

    Painted from plain arrays at most once per sample; hidden when there is no room for it.
    """

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self._area = None
        self._line = None
        self._area_color = QtGui.QColor("#3b82f6")
        self._line_color = QtGui.QColor("#e8484f")
        self._grid = QtGui.QColor("#e5e7eb")
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Expanding, QtWidgets.QSizePolicy.Policy.Expanding)
        self.setMinimumHeight(28)

    def sizeHint(self) -> QtCore.QSize:
        return QtCore.QSize(200, 60)

    def set_series(self, area, line, area_color: str, line_color: str, grid: str) -> None:
        """``area``/``line``: sequences of fractions 0..1 (NaN = gap), oldest first, evenly spaced."""
        self._area, self._line = area, line
        self._area_color = QtGui.QColor(area_color)
        self._line_color = QtGui.QColor(line_color)
        self._grid = QtGui.QColor(grid)
        self.update()

    def _points(self, values, rect: QtCore.QRectF) -> list[list[QtCore.QPointF]]:
        """Runs of finite points (a NaN splits the line)."""
        n = len(values)
        runs: list[list[QtCore.QPointF]] = []
        current: list[QtCore.QPointF] = []
        if n < 2:
            return runs
        step = rect.width() / (n - 1)
        for i, v in enumerate(values):
            if v != v:  # NaN
                if len(current) > 1:
                    runs.append(current)
                current = []
                continue
            v = min(1.0, max(0.0, float(v)))
            current.append(QtCore.QPointF(rect.left() + i * step, rect.bottom() - v * rect.height()))
        if len(current) > 1:
            runs.append(current)
        return runs

    def paintEvent(self, _event: QtGui.QPaintEvent) -> None:
        p = QtGui.QPainter(self)
        rect = QtCore.QRectF(self.rect()).adjusted(0.5, 2.5, -0.5, -0.5)
        p.setPen(QtGui.QPen(self._grid, 1))
        for frac in (0.0, 0.5, 1.0):
            y = rect.bottom() - frac * rect.height()
            p.drawLine(QtCore.QPointF(rect.left(), y), QtCore.QPointF(rect.right(), y))
        # no antialiasing: an antialiased fill of this size costs ~3 ms per card in software
        # rendering; at one repaint every 2 s the pixel steps are not noticeable
        if self._area is not None:
            fill = QtGui.QColor(self._area_color)
            fill.setAlpha(70)
            for run in self._points(self._area, rect):
                poly = QtGui.QPolygonF([QtCore.QPointF(run[0].x(), rect.bottom()), *run,
                                        QtCore.QPointF(run[-1].x(), rect.bottom())])
                p.setPen(QtCore.Qt.PenStyle.NoPen)
                p.setBrush(fill)
                p.drawPolygon(poly)
                p.setPen(QtGui.QPen(self._area_color, 1))
                p.setBrush(QtCore.Qt.BrushStyle.NoBrush)
                p.drawPolyline(QtGui.QPolygonF(run))
        if self._line is not None:
            p.setPen(QtGui.QPen(self._line_color, 2))
            for run in self._points(self._line, rect):
                p.drawPolyline(QtGui.QPolygonF(run))
