"""Small painted widgets shared by the tabs (cheap to update, crisp at any scale factor)."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph.functions as fn
from PySide6 import QtCore, QtGui, QtWidgets

from rocmdesk.ui import theme
from rocmdesk.wording import NA


def set_text(label: QtWidgets.QLabel, text: str) -> bool:
    """setText only when it changes: a relabel costs a relayout, and most ticks change nothing."""
    if label.text() == text:
        return False
    label.setText(text)
    return True


def set_tooltip(widget: QtWidgets.QWidget, text: str) -> None:
    if widget.toolTip() != text:
        widget.setToolTip(text)


class MeterBar(QtWidgets.QWidget):
    """A thin horizontal gauge: fraction 0..1 in a colour, or an empty hatched trough for N/A."""

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self._fraction: float | None = None
        self._color_name, self._trough_name = "#3b82f6", "#e5e7eb"
        self._color = QtGui.QColor(self._color_name)
        self._trough = QtGui.QColor(self._trough_name)
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Expanding, QtWidgets.QSizePolicy.Policy.Fixed)
        self._opaque = False

    def set_on_surface(self, on: bool = True) -> None:
        """Paint the theme's surface colour behind the rounded ends: the parent is then not repainted
        under the bar each time it moves (see ``ValueLabel``)."""
        self._opaque = on
        self.setAttribute(QtCore.Qt.WidgetAttribute.WA_OpaquePaintEvent, on)

    def sizeHint(self) -> QtCore.QSize:
        return QtCore.QSize(80, max(5, self.fontMetrics().height() // 3))

    def minimumSizeHint(self) -> QtCore.QSize:
        return QtCore.QSize(20, self.sizeHint().height())

    @property
    def fraction(self) -> float | None:
        return self._fraction

    def set_value(self, fraction: float | None, color: str, trough: str) -> None:
        if fraction is not None:
            fraction = float(fraction)
            # NaN is "unknown": the hatched N/A trough, never an empty bar that reads as 0
            fraction = min(1.0, max(0.0, fraction)) if math.isfinite(fraction) else None
        same_colors = color == self._color_name and trough == self._trough_name
        if same_colors and (fraction == self._fraction or (
                # a repaint below half a pixel of change is invisible: skip it
                fraction is not None and self._fraction is not None
                and abs(fraction - self._fraction) * max(1, self.width()) < 0.5)):
            return
        self._fraction = fraction
        if not same_colors:
            self._color_name, self._trough_name = color, trough
            self._color = QtGui.QColor(color)
            self._trough = QtGui.QColor(trough)
        self.update()

    def paintEvent(self, _event: QtGui.QPaintEvent) -> None:
        p = QtGui.QPainter(self)
        if self._opaque:
            p.fillRect(self.rect(), QtGui.QColor(theme.current().surface))
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


class ElidedLabel(QtWidgets.QWidget):
    """One line of text that shows "…" when too long, painted by itself.

    Unlike a QLabel, changing the text never asks the layout to recompute (a QLabel's setText
    relayouts its whole card, which was most of the Overview's cost). Colour and font come from
    the style sheet like a label's (``color:`` sets the foreground role).
    """

    def __init__(self, text: str = "", parent: QtWidgets.QWidget | None = None,
                 alignment: QtCore.Qt.AlignmentFlag = QtCore.Qt.AlignmentFlag.AlignLeft) -> None:
        super().__init__(parent)
        self._full = ""
        self._shown = ""
        self._alignment = alignment | QtCore.Qt.AlignmentFlag.AlignVCenter
        self._opaque = False
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Fixed)
        self.set_full_text(text)

    def set_on_surface(self, on: bool = True) -> None:
        """Fill with the theme's surface colour (see ``ValueLabel``)."""
        self._opaque = on
        self.setAttribute(QtCore.Qt.WidgetAttribute.WA_OpaquePaintEvent, on)

    def setAlignment(self, alignment: QtCore.Qt.AlignmentFlag) -> None:
        self._alignment = alignment | QtCore.Qt.AlignmentFlag.AlignVCenter
        self.update()

    def text(self) -> str:
        """What is shown (elided)."""
        return self._shown

    def full_text(self) -> str:
        return self._full

    def set_full_text(self, text: str) -> None:
        if text == self._full:
            return
        self._full = text
        self._elide()

    def sizeHint(self) -> QtCore.QSize:
        fm = self.fontMetrics()
        return QtCore.QSize(fm.horizontalAdvance(self._full) + 2, fm.height())

    def minimumSizeHint(self) -> QtCore.QSize:
        return QtCore.QSize(10, self.fontMetrics().height())

    def changeEvent(self, event: QtCore.QEvent) -> None:
        super().changeEvent(event)
        if event.type() in (QtCore.QEvent.Type.FontChange, QtCore.QEvent.Type.StyleChange):
            self.updateGeometry()
            self._elide()

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        shown = self.fontMetrics().elidedText(self._full, QtCore.Qt.TextElideMode.ElideRight, max(10, self.width()))
        tip = self._full if shown != self._full else ""
        if self.toolTip() != tip:
            self.setToolTip(tip)
        if shown != self._shown:
            self._shown = shown
            self.setAccessibleName(self._full)
            self.update()

    def paintEvent(self, _event: QtGui.QPaintEvent) -> None:
        p = QtGui.QPainter(self)
        if self._opaque:
            p.fillRect(self.rect(), QtGui.QColor(theme.current().surface))
        p.setPen(self.palette().color(self.foregroundRole()))
        p.drawText(self.rect(), int(self._alignment), self._shown)


class ValueLabel(QtWidgets.QWidget):
    """A live number: fixed size, painted opaquely on the card surface, colour set directly.

    A QLabel styled per value (``setStyleSheet("color: …")``) re-polishes on each colour change and,
    being transparent, makes Qt repaint its parents under it every second; this paints only itself.
    N/A is shown muted and italic (normal weight); a value semi-bold in the theme's text or level colour.
    """

    def __init__(self, widest: str, parent: QtWidgets.QWidget | None = None, text: str = "") -> None:
        super().__init__(parent)
        self._text = text
        self._color: str | None = None
        self._na = text == NA
        self._widest = widest
        self.setAttribute(QtCore.Qt.WidgetAttribute.WA_OpaquePaintEvent, True)
        self._take_font()

    def _take_font(self) -> None:
        """Bold for values, italic for N/A, both from the widget's font; the fixed size fits ``widest``."""
        self._bold = QtGui.QFont(self.font())
        self._bold.setWeight(QtGui.QFont.Weight.DemiBold)
        self._italic = QtGui.QFont(self.font())
        self._italic.setItalic(True)
        fm = QtGui.QFontMetrics(self._bold)
        self.setFixedSize(fm.horizontalAdvance(self._widest) + 4, fm.height())

    def changeEvent(self, event: QtCore.QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QtCore.QEvent.Type.FontChange:
            self._take_font()
        elif event.type() == QtCore.QEvent.Type.EnabledChange:
            self.update()

    def text(self) -> str:
        return self._text

    def color(self) -> str | None:
        """The colour set for the value (a level colour), None for the theme's text colour."""
        return self._color

    def is_na(self) -> bool:
        return self._na

    def set_value(self, text: str, color: str | None = None, na: bool = False) -> None:
        if (text, color, na) == (self._text, self._color, self._na):
            return
        self._text, self._color, self._na = text, color, na
        self.update()

    def paintEvent(self, _event: QtGui.QPaintEvent) -> None:
        pal = theme.current()
        p = QtGui.QPainter(self)
        p.fillRect(self.rect(), QtGui.QColor(pal.surface))
        muted = self._na or not self.isEnabled()
        p.setPen(QtGui.QColor(pal.muted if muted else self._color or pal.text))
        p.setFont(self._italic if self._na else self._bold)
        p.drawText(self.rect(), int(QtCore.Qt.AlignmentFlag.AlignLeft | QtCore.Qt.AlignmentFlag.AlignVCenter),
                   self._text)


AREA_ALPHA = 70
QWIDGETSIZE_MAX = (1 << 24) - 1  # Qt's "no maximum"


class Sparkline(QtWidgets.QWidget):
    """Recent history of one or two series (0..1 each) as a filled area and a line.

    Polygons are built with numpy when the data or the size changes (at most once per trend
    step), so a paint only replays them.
    """

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self._area: np.ndarray | None = None
        self._line: np.ndarray | None = None
        self._area_color = QtGui.QColor("#3b82f6")
        self._line_color = QtGui.QColor("#e8484f")
        self._grid = QtGui.QColor("#e5e7eb")
        self._background: QtGui.QColor | None = None
        self._fill = self.fill_color()
        self._polys: tuple[list[QtGui.QPolygonF], list[QtGui.QPolygonF], list[QtGui.QPolygonF]] | None = None
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Expanding, QtWidgets.QSizePolicy.Policy.Expanding)
        self.setMinimumHeight(28)

    def sizeHint(self) -> QtCore.QSize:
        """A small strip, or as tall as allowed when a maximum height is set (the Overview's cards)."""
        limit = self.maximumHeight()
        return QtCore.QSize(200, limit if limit < QWIDGETSIZE_MAX else 60)

    def set_series(self, area, line, area_color: str, line_color: str, grid: str,
                   background: str | None = None) -> None:
        """``area``/``line``: sequences of fractions 0..1 (NaN = gap), oldest first, evenly spaced.

        With ``background`` (the colour behind the widget) it paints opaquely: the parent is not
        repainted under it and the area is filled with a pre-blended solid colour (no per-pixel blend).
        """
        self._area = None if area is None else np.asarray(area, dtype=np.float64)
        self._line = None if line is None else np.asarray(line, dtype=np.float64)
        self._area_color = QtGui.QColor(area_color)
        self._line_color = QtGui.QColor(line_color)
        self._grid = QtGui.QColor(grid)
        self._background = None if background is None else QtGui.QColor(background)
        self.setAttribute(QtCore.Qt.WidgetAttribute.WA_OpaquePaintEvent, self._background is not None)
        self._fill = self.fill_color()
        self._polys = None
        self.update()

    def fill_color(self) -> QtGui.QColor:
        """The area's fill: the line colour at ~27 % over the background (blended once per series)."""
        fill = QtGui.QColor(self._area_color)
        if self._background is None:
            fill.setAlpha(AREA_ALPHA)
            return fill
        a = AREA_ALPHA / 255.0
        bg = self._background
        return QtGui.QColor(round(fill.red() * a + bg.red() * (1 - a)), round(fill.green() * a + bg.green() * (1 - a)),
                            round(fill.blue() * a + bg.blue() * (1 - a)))

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        self._polys = None

    def _plot_rect(self) -> QtCore.QRectF:
        return QtCore.QRectF(self.rect()).adjusted(0.5, 2.5, -0.5, -0.5)

    @staticmethod
    def runs(values: np.ndarray, rect: QtCore.QRectF, closed: bool) -> list[QtGui.QPolygonF]:
        """Polygons of the finite runs of ``values`` (a NaN splits them); closed ones reach the baseline."""
        n = len(values)
        if n < 2:
            return []
        xs = rect.left() + np.arange(n) * (rect.width() / (n - 1))
        ys = rect.bottom() - np.clip(values, 0.0, 1.0) * rect.height()
        finite = np.isfinite(values)
        edges = np.flatnonzero(np.diff(np.concatenate(([0], finite.astype(np.int8), [0]))))
        out = []
        for a, b in zip(edges[0::2], edges[1::2], strict=True):
            if b - a < 2:
                continue
            extra = 2 if closed else 0
            poly = fn.create_qpolygonf(b - a + extra)
            arr = fn.ndarray_from_qpolygonf(poly)
            arr[: b - a, 0] = xs[a:b]
            arr[: b - a, 1] = ys[a:b]
            if closed:
                arr[b - a] = (xs[b - 1], rect.bottom())
                arr[b - a + 1] = (xs[a], rect.bottom())
            out.append(poly)
        return out

    def _build(self) -> None:
        rect = self._plot_rect()
        area = self.runs(self._area, rect, True) if self._area is not None else []
        area_lines = self.runs(self._area, rect, False) if self._area is not None else []
        line = self.runs(self._line, rect, False) if self._line is not None else []
        self._polys = (area, area_lines, line)

    def paintEvent(self, _event: QtGui.QPaintEvent) -> None:
        p = QtGui.QPainter(self)
        rect = self._plot_rect()
        if self._background is not None:
            p.fillRect(self.rect(), self._background)
        if self._polys is None:
            self._build()
        area, area_lines, line = self._polys
        # no antialiasing: an antialiased fill of this size costs ~3 ms per card in software
        # rendering; at one repaint every 2 s the pixel steps are not noticeable
        p.setPen(QtCore.Qt.PenStyle.NoPen)
        p.setBrush(self._fill)
        for poly in area:
            p.drawPolygon(poly)
        # grid over the (opaque) fill, where the translucent fill used to let it show through
        p.setPen(QtGui.QPen(self._grid, 1))
        for frac in (0.0, 0.5, 1.0):
            y = rect.bottom() - frac * rect.height()
            p.drawLine(QtCore.QPointF(rect.left(), y), QtCore.QPointF(rect.right(), y))
        p.setBrush(QtCore.Qt.BrushStyle.NoBrush)
        p.setPen(QtGui.QPen(self._area_color, 1))
        for poly in area_lines:
            p.drawPolyline(poly)
        # the 2-px line as two 1-px lines a pixel apart: a thin pen takes Qt's fast line rasteriser,
        # a 2-px pen the general stroker (joins, angles), which was a fifth of the Overview's paint time
        p.setPen(QtGui.QPen(self._line_color, 1))
        for dy in (0.0, -1.0):
            p.translate(0.0, dy)
            for poly in line:
                p.drawPolyline(poly)
