"""One GPU's card on the Overview: the numbers people look at first, meters, a 5-minute trend, details.

Cards are plain labels and painted meters updated only when their text changes, so a refresh of
eight cards costs a few dozen string compares. A card has three densities (roomy to tight) so that
eight of them fit a 1280×800 screen; :class:`rocmdesk.ui.overview_tab.OverviewTab` picks the roomiest
that fits.
"""

from __future__ import annotations

import re
import time

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets

from rocmdesk.telemetry.model import GpuInfo, GpuKind, GpuSample
from rocmdesk.ui import card_details, theme
from rocmdesk.ui.feed import GpuEvent
from rocmdesk.ui.formatting import (
    NA,
    Level,
    fmt_bytes,
    fmt_mhz,
    fmt_percent,
    fmt_rpm,
    fmt_temp,
    fmt_watts,
    fraction_level,
    gpu_label,
    is_number,
    ordered_sensors,
    ratio,
    reason_of,
    temp_level,
)
from rocmdesk.ui.widgets import (
    ElidedLabel,
    MeterBar,
    Sparkline,
    ValueLabel,
    set_text,
    set_tooltip,
)

DEFAULT_SENSORS = ("junction", "edge", "mem")
METRIC_CAPTION_WIDEST = "GPU BUSY"
# An APU's gpu_metrics carries its CPU cores' temperatures too: in the JSON and the exporter, not on a GPU card.
CPU_SENSOR = re.compile(r"core\d+|l3_?\d*")
CARD_RADIUS = 10
TREND_S = 300.0
# A trend taller than this says nothing more; with one or two GPUs the card stops growing there
# instead of drawing a window-high chart (empty until history builds up, and costly to repaint).
TREND_MAX_HEIGHT = 200
TREND_POINTS = 150
# the trend moves two points (4 s) at a time: its repaint (a filled polygon per card) is the largest
# single cost of the Overview, and a 5-minute trend loses nothing by moving every 4 s
TREND_REFRESH_S = 2 * TREND_S / TREND_POINTS
DENSITIES = 3  # GpuCard.set_density
DETAIL_SPACING = 8  # between a detail's caption and its value in the table
FLOW_SPACING = 6  # the same when the details flow on lines
DETAIL_FLOW_GAP = 12  # between two caption/value pairs on one line


def trend_points(values: np.ndarray, expected: int, points: int = TREND_POINTS) -> np.ndarray:
    """The last ``expected`` values as at most ``points`` maxima, left-padded with NaN (no data yet)."""
    values = np.asarray(values, dtype=np.float64)[-expected:] if expected > 0 else np.empty(0)
    if len(values) < expected:
        values = np.concatenate((np.full(expected - len(values), np.nan), values))
    if len(values) > points:
        k = int(np.ceil(len(values) / points))
        pad = (-len(values)) % k
        if pad:
            values = np.concatenate((np.full(pad, np.nan), values))
        with np.errstate(all="ignore"):
            values = np.fmax.reduce(values.reshape(-1, k), axis=1)
    return values


def wrap_items(items: list[str], sep: str, fm: QtGui.QFontMetrics, room: int, line_end: str = "") -> list[str]:
    """Lines of whole items joined by ``sep``, each at most ``room`` px wide where an item allows.

    An item wider than ``room`` breaks between its words; a single word wider than ``room`` gets a line
    of its own (the caller's layout widens). A line broken after an item ends with ``line_end``.
    """
    lines: list[str] = []
    for item in items:
        if fm.horizontalAdvance(item) > room and " " in item:  # too long alone: between its words
            words = wrap_items(item.split(" "), " ", fm, room)
            if lines and fm.horizontalAdvance(lines[-1] + sep + words[0]) <= room:
                lines[-1] += sep + words.pop(0)
            elif lines:
                lines[-1] += line_end
            lines.extend(words)
            continue
        if lines and fm.horizontalAdvance(lines[-1] + sep + item) <= room:
            lines[-1] += sep + item
        elif lines:
            lines[-1] += line_end
            lines.append(item)
        else:
            lines.append(item)
    return lines


def _invalidate(layout: QtWidgets.QLayout) -> None:
    """Drop the cached sizes of a layout and every layout inside it, so a size asked now is current."""
    layout.invalidate()
    for i in range(layout.count()):
        child = layout.itemAt(i).layout()
        if child is not None:
            _invalidate(child)


def memory_caption(info: GpuInfo) -> str:
    return "HBM" if info.kind is GpuKind.INSTINCT else "VRAM"


class Metric(QtWidgets.QWidget):
    """Caption, value, detail and an optional meter, in two lines (three when the detail needs its own).

    The parts that change every second paint opaquely, and what was last shown is kept here, so an
    unchanged part costs a tuple compare instead of Qt round trips.
    """

    shape_changed = QtCore.Signal()  # the detail moved to or from its own line: the card's height changed

    def __init__(self, caption: str, with_bar: bool, parent: QtWidgets.QWidget | None = None,
                 widest: str = "8888 MHz") -> None:
        super().__init__(parent)
        self.caption = QtWidgets.QLabel(caption.upper(), self)
        self.caption.setObjectName("metricCaption")
        self.value = ValueLabel(widest, self, NA)
        self.detail = ElidedLabel("", self, QtCore.Qt.AlignmentFlag.AlignRight)
        self.detail.setObjectName("metricDetail")
        self.detail.set_on_surface()
        # the same detail wrapped on lines of its own when it does not fit beside the value (_place_detail)
        self.detail_lines = QtWidgets.QLabel("", self)
        self.detail_lines.setObjectName("metricDetail")
        self.detail_lines.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        self.detail_lines.hide()
        self.bar = MeterBar(self) if with_bar else None
        if self.bar is not None:
            self.bar.set_on_surface()
        self.grid = grid = QtWidgets.QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(8)
        grid.setVerticalSpacing(3)
        grid.addWidget(self.caption, 0, 0)
        grid.addWidget(self.value, 0, 1)
        grid.setColumnStretch(2, 1)
        # the widest metric caption, so the values of all five metrics line up
        self.caption_width = self.caption.fontMetrics().horizontalAdvance(METRIC_CAPTION_WIDEST) + 4
        grid.setColumnMinimumWidth(0, self.caption_width)
        grid.addWidget(self.detail, 0, 2)
        grid.addWidget(self.detail_lines, 1, 1, 1, 2)
        if self.bar is not None:
            grid.addWidget(self.bar, 2, 0, 1, 3)
        self.detail_below = False
        self._reserved_lines = 0
        self.setAccessibleName(caption)
        self._description = ""
        self._tooltip = ""

    def detail_text(self) -> str:
        return self.detail.full_text()

    def _place_detail(self, below: bool, width: int | None = None) -> None:
        """The detail beside the value when it fits whole, else wrapped on lines under it (never elided).

        "throttled: power limit (PPT0)" does not fit beside the clock on a 300 px card; cut to
        "throttled: po…" it hid the one thing the line was there to say.

        Once under the value, the detail stays there with the most lines it has needed, until the
        width changes: a GPU throttling on and off every few seconds (a training job at its power cap)
        would otherwise change the card's height each time, and each change is a relayout of the tab.
        """
        below = below or (self.detail_below and width is None)  # sticky while the width stays
        if below:
            room = (self.width() if width is None else width) - self.caption_width - self.grid.horizontalSpacing()
            fm = self.detail_lines.fontMetrics()
            text = self.detail.full_text()
            head, colon, rest = text.partition(": ")  # "throttled since 14:02:11" on a line, then the reasons
            lines = wrap_items([head + ":"], " ", fm, room) if colon and fm.horizontalAdvance(text) > room else []
            lines += wrap_items((rest if lines else text).split(", "), ", ", fm, room, ",")
            set_text(self.detail_lines, "\n".join(lines))
            changed = len(lines) > self._reserved_lines
            if changed:
                self._reserved_lines = len(lines)
                self.detail_lines.setMinimumHeight(len(lines) * fm.lineSpacing())
        else:
            changed = False
        if below == self.detail_below:
            if changed:
                self.shape_changed.emit()
            return
        self.detail_below = below
        self.detail.setVisible(not below)
        self.detail_lines.setVisible(below)
        self.updateGeometry()
        self.shape_changed.emit()

    def detail_fits_beside(self, width: int | None = None) -> bool:
        text = self.detail.full_text()
        if not text:
            return True
        room = (self.width() if width is None else width) - self.caption_width - self.value.width() \
            - 2 * self.grid.horizontalSpacing()
        return self.detail.fontMetrics().horizontalAdvance(text) + 2 <= room

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        width = event.size().width()
        if width == event.oldSize().width():
            return
        self._reserved_lines = 0  # a new width: what fits, and the lines kept, start again
        self.detail_lines.setMinimumHeight(0)
        self._place_detail(not self.detail_fits_beside(width), width)

    def show_value(self, text: str, detail: str = "", tooltip: str = "", color: str | None = None) -> None:
        na = text == NA
        self.value.set_value(text, None if na else color, na)
        if detail != self.detail.full_text():
            self.detail.set_full_text(detail)
            self._place_detail(not self.detail_fits_beside())
        if tooltip != self._tooltip:
            self._tooltip = tooltip
            self.value.setToolTip(tooltip)
            self.caption.setToolTip(tooltip)
        description = f"{text} {detail}".strip() + (f" ({tooltip})" if na and tooltip else "")
        if description != self._description:  # each change is an accessibility event: only real ones
            self._description = description
            self.setAccessibleDescription(description)


class TempReadout(QtWidgets.QWidget):
    """One temperature sensor: small name above a coloured value."""

    def __init__(self, sensor: str, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.sensor = sensor
        self.name = QtWidgets.QLabel(sensor.capitalize(), self)
        self.name.setObjectName("metricDetail")
        self.value = ValueLabel("888 °F", self, NA)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(self.name)
        lay.addWidget(self.value)
        self.setAccessibleName(f"{sensor} temperature")
        self._shown: tuple[str, str | None, str] = (NA, None, "")

    def show_reading(self, text: str, color: str | None, tip: str) -> None:
        if (text, color, tip) == self._shown:
            return
        old_tip = self._shown[2]
        self._shown = (text, color, tip)
        na = text == NA
        self.value.set_value(text, None if na else color, na)
        if tip != old_tip:
            self.value.setToolTip(tip)
            self.name.setToolTip(tip)
        self.setAccessibleDescription(f"{text} ({tip})")


class GpuCard(QtWidgets.QFrame):
    """One GPU. Three densities, so eight cards fit a 1280x800 window without scrolling (issue 14):

    0. roomy: details as a caption/value table, the 5-minute trend;
    1. tight spacing, no TEMPERATURE heading, the subtitle beside the title where it fits, details as
       caption/value pairs flowing on a few lines;
    2. as 1 without the trend (the Graphs tab has the history).
    The Overview picks the roomiest density at which every card fits its share of the height.
    """

    shape_changed = QtCore.Signal()  # the card's minimum height may have changed

    def __init__(self, info: GpuInfo, unit: str = "C", parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("gpuCard")
        self.info = info
        self.unit = unit
        self.sample: GpuSample | None = None
        self.state = "ok"
        self.events: list[GpuEvent] = []
        self.trend_at = -1e9
        self.setAccessibleName(f"GPU {info.name} at {info.pci}")

        self.title = ElidedLabel(gpu_label(info), self)
        self.title.setObjectName("cardTitle")
        self.subtitle = ElidedLabel("", self)
        self.subtitle.setObjectName("cardSubtitle")
        self.state_chip = QtWidgets.QLabel("", self)
        self.state_chip.setObjectName("chip")
        self.state_chip.hide()
        self.event_chip = QtWidgets.QLabel("", self)
        self.event_chip.setObjectName("eventChip")
        self.event_chip.hide()

        self.head = head = QtWidgets.QGridLayout()
        head.setContentsMargins(0, 0, 0, 0)
        head.setHorizontalSpacing(6)
        head.setVerticalSpacing(0)
        self.head_merged: bool | None = None
        self._place_head(False)

        self.temp_caption = QtWidgets.QLabel("TEMPERATURE", self)
        self.temp_caption.setObjectName("metricCaption")
        self.temp_row = QtWidgets.QHBoxLayout()
        self.temp_row.setContentsMargins(0, 0, 0, 0)
        self.temp_row.setSpacing(18)
        self.temps: dict[str, TempReadout] = {}

        self.power = Metric("Power", True, self, "888 W")
        self.memory = Metric(memory_caption(info), True, self, "88.8 GiB")
        self.busy = Metric("GPU busy", True, self, "100 %")
        self.clocks = Metric("Clocks", False, self, "8888 MHz")
        self.fan = Metric("Fan", False, self, "8888 RPM")
        self.metrics = [self.power, self.memory, self.busy, self.clocks, self.fan]
        for metric in self.metrics:
            metric.shape_changed.connect(self.shape_changed)

        self.outer = outer = QtWidgets.QVBoxLayout(self)
        outer.setContentsMargins(14, 12, 14, 12)
        outer.setSpacing(8)
        outer.addLayout(head)
        temp_box = QtWidgets.QVBoxLayout()
        temp_box.setSpacing(2)
        temp_box.addWidget(self.temp_caption)
        temp_box.addLayout(self.temp_row)
        outer.addLayout(temp_box)
        self.grid = QtWidgets.QGridLayout()
        self.grid.setHorizontalSpacing(24)
        self.grid.setVerticalSpacing(10)
        outer.addLayout(self.grid)
        # PCIe, voltage, VBIOS, performance level, profile: word-wrapped, so nothing clips on a narrow card
        self.details = QtWidgets.QGridLayout()
        self.details.setHorizontalSpacing(DETAIL_SPACING)
        self.details.setVerticalSpacing(1)
        self.detail_rows: dict[str, tuple[QtWidgets.QLabel, QtWidgets.QLabel]] = {}
        self._details_shown: list[tuple[str, str, str]] = []
        self.details_key: tuple = ()
        outer.addLayout(self.details)
        # the same caption/value labels flowing on as few lines as fit, at density 1 and 2 (_place_details)
        self.details_flow = QtWidgets.QVBoxLayout()
        self.details_flow.setSpacing(1)
        outer.addLayout(self.details_flow)
        self.trend_caption = QtWidgets.QLabel("", self)
        self.trend_caption.setObjectName("metricCaption")
        self.trend = Sparkline(self)
        self.trend.setMaximumHeight(TREND_MAX_HEIGHT)
        self.trend.setAccessibleName("Last 5 minutes of GPU busy and power")
        self.trend_gap = QtWidgets.QSpacerItem(0, 4, QtWidgets.QSizePolicy.Policy.Minimum,
                                               QtWidgets.QSizePolicy.Policy.Fixed)
        outer.addItem(self.trend_gap)
        outer.addWidget(self.trend_caption)
        outer.addWidget(self.trend, 1)
        self.density = 0
        self._columns = 0
        self._relayout(1)
        self.set_info(info)
        self._ensure_temps(DEFAULT_SENSORS)

    def paintEvent(self, event) -> None:
        """The card's rounded box, painted directly (the style-sheet version costs more per repaint).

        Most repaints are the small regions behind changed values, well inside the box: those get a
        plain fill (an antialiased rounded-rect path is rasterised whole, however small the clip).
        """
        pal = theme.current()
        inner = self.rect().adjusted(CARD_RADIUS, CARD_RADIUS, -CARD_RADIUS, -CARD_RADIUS)
        if inner.contains(event.region().boundingRect()):
            p = QtGui.QPainter(self)
            for rect in event.region():
                p.fillRect(rect, QtGui.QColor(pal.surface))
            return
        border = {"stale": pal.warm, "gone": pal.critical}.get(self.state, pal.border)
        p = QtGui.QPainter(self)
        p.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
        pen = QtGui.QPen(QtGui.QColor(border), 1)
        if self.state == "gone":
            pen.setStyle(QtCore.Qt.PenStyle.DashLine)
        p.setPen(pen)
        p.setBrush(QtGui.QColor(pal.surface))
        p.drawRoundedRect(QtCore.QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5), CARD_RADIUS, CARD_RADIUS)

    # -- structure -------------------------------------------------------------------------------
    def _relayout(self, columns: int) -> None:
        if columns == self._columns:
            return
        self._columns = columns
        for m in self.metrics:
            self.grid.removeWidget(m)
        for i, m in enumerate(self.metrics):
            self.grid.addWidget(m, i // columns, i % columns)
        for c in range(2):
            self.grid.setColumnStretch(c, 1 if c < columns else 0)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._relayout(2 if event.size().width() >= 620 else 1)
        self._place_details(event.size().width())
        self._fit_head(event.size().width())

    def _place_head(self, merged: bool) -> bool:
        """Title and subtitle on two lines, or on one ("card1 · MI300X  gfx942 · 0000:05:00.0") when the
        card is dense and both fit whole beside the chips."""
        if merged == self.head_merged:
            return False
        self.head_merged = merged
        for widget in (self.title, self.subtitle, self.event_chip, self.state_chip):
            self.head.removeWidget(widget)
        bottom = QtCore.Qt.AlignmentFlag.AlignBottom
        self.head.addWidget(self.title, 0, 0)
        if merged:
            self.head.addWidget(self.subtitle, 0, 1, bottom)
            self.head.setColumnMinimumWidth(0, self.title.sizeHint().width())
        else:
            self.head.addWidget(self.subtitle, 1, 0, 1, 4)
            self.head.setColumnMinimumWidth(0, 0)
        self.head.addWidget(self.event_chip, 0, 2)
        self.head.addWidget(self.state_chip, 0, 3)
        self.head.setColumnStretch(0, 0 if merged else 1)
        self.head.setColumnStretch(1, 1 if merged else 0)
        return True

    def _head_fits_one_line(self, width: int) -> bool:
        margins = self.outer.contentsMargins()
        chips = sum(c.sizeHint().width() + self.head.horizontalSpacing()
                    for c in (self.event_chip, self.state_chip) if not c.isHidden())
        need = self.title.sizeHint().width() + self.head.horizontalSpacing() + self.subtitle.sizeHint().width() + chips
        return need <= width - margins.left() - margins.right()

    def _fit_head(self, width: int | None = None) -> bool:
        """True when the head changed lines (the card's height changed)."""
        width = self.width() if width is None else width
        return self._place_head(self.density >= 1 and self._head_fits_one_line(width))

    def set_density(self, level: int) -> None:
        """0 roomy, 1 tight with details as lines, 2 as 1 without the trend (see the class docstring)."""
        level = max(0, min(DENSITIES - 1, level))
        if level == self.density:
            return
        was_hidden = self.density >= 2
        self.density = level
        compact = level >= 1
        self.outer.setContentsMargins(14, 8 if compact else 12, 14, 8 if compact else 12)
        self.outer.setSpacing(4 if compact else 8)
        self.grid.setVerticalSpacing(5 if compact else 10)
        self.trend_gap.changeSize(0, 0 if compact else 4, QtWidgets.QSizePolicy.Policy.Minimum,
                                  QtWidgets.QSizePolicy.Policy.Fixed)
        self.temp_caption.setVisible(not compact)  # "Junction 74 °C" says what it is without the heading
        self._place_details(self.width())
        self._fit_head()
        self.trend_caption.setVisible(level < 2)
        self.trend.setVisible(level < 2)
        if was_hidden and level < 2:
            self.trend_at = -1e9  # it was not kept up to date while hidden
        _invalidate(self.outer)

    def needed_height(self) -> int:
        """The least height this card needs at its current density."""
        _invalidate(self.outer)
        return self.minimumSizeHint().height()

    def _ensure_temps(self, sensors) -> None:
        wanted = ordered_sensors(set(sensors))
        if list(self.temps) == wanted:
            return
        for widget in self.temps.values():
            self.temp_row.removeWidget(widget)
            widget.deleteLater()
        self.temps = {}
        for sensor in wanted:
            readout = TempReadout(sensor, self)
            self.temps[sensor] = readout
            self.temp_row.addWidget(readout)
        self.temp_row.addStretch(1)

    def set_info(self, info: GpuInfo) -> None:
        self.info = info
        self.title.set_full_text(gpu_label(info))
        parts = [p for p in (info.gfx_target, info.pci) if p]
        if not info.on_amdgpu and info.driver:
            parts.append(f"driver: {info.driver} (not amdgpu)")
        self.subtitle.set_full_text(" · ".join(parts))
        if self.head_merged is not None and self._fit_head():  # a new name may not fit beside the address
            self.shape_changed.emit()

    def set_unit(self, unit: str) -> None:
        if unit != self.unit:
            self.unit = unit
            if self.sample is not None:
                self.update_sample(self.sample)

    # -- state ---------------------------------------------------------------------------------------
    def set_state(self, state: str, detail: str = "") -> None:
        """"ok", "stale" (backend not answering) or "gone" (GPU no longer present)."""
        if state != self.state:
            self.update()
        self.state = state  # paintEvent draws the border for it (no style-sheet rule depends on it)
        text = {"ok": "", "stale": "STALE", "gone": "REMOVED"}.get(state, state.upper())
        set_text(self.state_chip, text)
        set_tooltip(self.state_chip, detail)
        self.state_chip.setVisible(bool(text))
        if self._fit_head():
            self.shape_changed.emit()
        for widget in (*self.metrics, *self.temps.values()):
            widget.setEnabled(state != "gone")

    def add_event(self, event: GpuEvent) -> None:
        self.events.append(event)
        del self.events[:-20]
        label = {"reset": "GPU RESET", "wedged": "WEDGED", "removed": "REMOVED", "added": "RE-ADDED"}.get(
            event.kind, event.kind.upper())
        stamp = time.strftime("%H:%M:%S", time.localtime(event.timestamp))
        set_text(self.event_chip, f"{label} {stamp}")
        history = "\n".join(
            f"{time.strftime('%H:%M:%S', time.localtime(e.timestamp))}  {e.detail}" for e in self.events[-8:])
        set_tooltip(self.event_chip, history)
        self.event_chip.setAccessibleName(f"GPU event: {event.detail}")
        self.event_chip.show()
        if self._fit_head():
            self.shape_changed.emit()

    # -- values ---------------------------------------------------------------------------------------
    def wants_trend(self) -> bool:
        return self.trend.isVisible() and self.trend.height() >= 28

    def update_trend(self, busy: np.ndarray, power_frac: np.ndarray) -> None:
        pal = theme.current()
        busy_color, power_color = pal.busy, pal.power
        caption = (f"LAST 5 MIN · <span style='color:{busy_color}'>■</span> BUSY "
                   f"<span style='color:{power_color}'>━</span> POWER / CAP")
        set_text(self.trend_caption, caption)
        self.trend.set_series(busy / 100.0, power_frac, busy_color, power_color, pal.grid, background=pal.surface)

    def _show_details(self, s: GpuSample) -> None:
        shown = card_details.rows(s)
        if shown == self._details_shown:  # the usual tick: these facts rarely change
            return
        self._details_shown = shown
        for caption, text, tip in shown:
            labels = self.detail_rows.get(caption)
            if labels is None:
                name, value = QtWidgets.QLabel(caption.upper(), self), QtWidgets.QLabel("", self)
                name.setObjectName("metricCaption")
                value.setObjectName("metricDetail")
                value.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
                value.setAccessibleName(caption)
                labels = self.detail_rows[caption] = (name, value)
            name, value = labels
            set_text(value, text)  # only when it changed: a relabel relayouts the card
            set_tooltip(value, tip)
            set_tooltip(name, tip)
            value.setAccessibleDescription(f"{text} ({tip})")
        self._place_details(self.width())  # a text changed width: its place is decided again
        self.shape_changed.emit()

    def _pair_width(self, caption: str) -> int:
        name, value = self.detail_rows[caption]
        return name.sizeHint().width() + FLOW_SPACING + value.fontMetrics().horizontalAdvance(value.text()) + 2

    def _detail_pairs_for(self, width: int) -> int:
        """Two pairs to a row only where both fit whole beside each other (none is ever elided)."""
        if not self.detail_rows:
            return 1
        names = max(n.sizeHint().width() for n, _ in self.detail_rows.values())
        values = max(v.fontMetrics().horizontalAdvance(v.text()) for _, v in self.detail_rows.values())
        margins = self.layout().contentsMargins()
        room = width - margins.left() - margins.right()
        return 2 if room >= 2 * (names + values + 2 * self.details.horizontalSpacing()) + 16 else 1

    def _flow_rows(self, width: int) -> list[list[str]]:
        """Captions on each line of the flowing details: whole pairs, as many as fit a line.

        The read values first, the N/A ones after them: short "VOLTAGE N/A" pairs pack together, so
        an Instinct card (most details N/A) needs two lines instead of three.
        """
        margins = self.layout().contentsMargins()
        room = width - margins.left() - margins.right()
        rows: list[list[str]] = []
        used = 0
        order = sorted(self.detail_rows, key=lambda c: self.detail_rows[c][1].text() == NA)  # stable
        for caption in order:
            need = self._pair_width(caption)
            if rows and used + DETAIL_FLOW_GAP + need <= room:
                rows[-1].append(caption)
                used += DETAIL_FLOW_GAP + need
            else:
                rows.append([caption])
                used = need
        return rows

    def _place_details(self, width: int) -> None:
        """A caption/value table (density 0; two pairs a row on a wide card) or pairs flowing on lines.

        The same labels in both, so each N/A keeps its own reason in its tooltip (and its footnote on
        a screenshot). Nothing moves unless the arrangement changes.
        """
        if self.density == 0:
            key: tuple = ("table", self._detail_pairs_for(width), tuple(self.detail_rows))
        else:
            key = ("flow", tuple(tuple(row) for row in self._flow_rows(width)))
        if key == self.details_key:
            return
        self.details_key = key
        for name, value in self.detail_rows.values():
            self.details.removeWidget(name)
            self.details.removeWidget(value)
        while self.details_flow.count():
            row = self.details_flow.takeAt(0).layout()
            if row is not None:
                while row.count():
                    row.takeAt(0)
                row.deleteLater()
        if key[0] == "table":
            pairs = key[1]
            for i, (name, value) in enumerate(self.detail_rows.values()):
                row, col = divmod(i, pairs)
                self.details.addWidget(name, row, 2 * col)
                self.details.addWidget(value, row, 2 * col + 1)
            for c in range(4):
                self.details.setColumnStretch(c, 1 if c % 2 and c // 2 < pairs else 0)
            return
        for captions in key[1]:
            line = QtWidgets.QHBoxLayout()
            line.setSpacing(FLOW_SPACING)
            for n, caption in enumerate(captions):
                if n:
                    line.addSpacing(DETAIL_FLOW_GAP - FLOW_SPACING)
                name, value = self.detail_rows[caption]
                line.addWidget(name)
                line.addWidget(value)
            line.addStretch(1)
            self.details_flow.addLayout(line)

    def update_sample(self, s: GpuSample, throttled_since: float | None = None) -> None:
        """Show ``s``; ``throttled_since`` is when the running throttle span began (the feed's history)."""
        self.sample = s
        self._show_details(s)
        pal = theme.current()
        if s.info != self.info:
            self.set_info(s.info)
        na = s.unavailable
        sensors = set(s.temperature_c) | {k.split(".", 1)[1] for k in na if k.startswith("temperature_c.")}
        self._ensure_temps({x for x in sensors if not CPU_SENSOR.fullmatch(x)} or DEFAULT_SENSORS)
        for sensor, readout in self.temps.items():
            value = s.temperature_c.get(sensor)
            crit = s.temperature_crit_c.get(sensor)
            text = fmt_temp(value, self.unit)
            if text == NA:
                tip = reason_of(na, f"temperature_c.{sensor}")
            elif is_number(crit):
                tip = f"{sensor}: critical at {fmt_temp(crit, self.unit)} on this GPU"
                emergency = s.temperature_emergency_c.get(sensor)
                if is_number(emergency):
                    tip += f", emergency shutdown at {fmt_temp(emergency, self.unit)}"
            else:
                tip = f"{sensor}: this GPU reports no critical limit"
            level = temp_level(value, crit)
            readout.show_reading(text, pal.level(level) if level is not Level.UNKNOWN else None, tip)

        # power against cap
        frac = ratio(s.power_w, s.power_cap_w)
        if is_number(s.power_w):
            detail = f"of {fmt_watts(s.power_cap_w)} cap" if is_number(s.power_cap_w) else "cap N/A"
            tip = "" if is_number(s.power_cap_w) else f"power cap: {reason_of(na, 'power_cap_w')}"
            self.power.show_value(fmt_watts(s.power_w), detail, tip)
        else:
            self.power.show_value(NA, "", reason_of(na, "power_w"))
        # at the cap is normal under load (the firmware limits clocks), not an alarm: amber at most
        power_level = Level.UNKNOWN if frac is None else Level.WARM if frac >= 0.95 else Level.OK
        self.power.bar.set_value(frac, pal.level(power_level), pal.surface_alt)

        # memory
        total = s.vram_total_bytes if is_number(s.vram_total_bytes) else self.info.vram_total_bytes
        frac = ratio(s.vram_used_bytes, total)
        if is_number(s.vram_used_bytes):
            detail = f"of {fmt_bytes(total)}" if is_number(total) else ""
            if frac is not None:
                detail += f" · {frac * 100:.0f} %"
            if is_number(s.gtt_used_bytes) and self.info.kind is GpuKind.APU:
                detail += f" · GTT {fmt_bytes(s.gtt_used_bytes)}"
            self.memory.show_value(fmt_bytes(s.vram_used_bytes), detail)
        else:
            self.memory.show_value(NA, "", reason_of(na, "vram_used_bytes"))
        self.memory.bar.set_value(frac, pal.level(fraction_level(frac)) if frac is not None else pal.muted,
                                  pal.surface_alt)

        # busy
        busy = s.gpu_busy_percent
        if is_number(busy):
            mem = s.mem_busy_percent
            detail = f"mem {fmt_percent(mem)}" if is_number(mem) else ""
            self.busy.show_value(fmt_percent(busy), detail,
                                 "" if is_number(mem) else f"memory busy: {reason_of(na, 'mem_busy_percent')}")
            self.busy.bar.set_value(busy / 100.0, pal.busy, pal.surface_alt)
        else:
            self.busy.show_value(NA, "", reason_of(na, "gpu_busy_percent"))
            self.busy.bar.set_value(None, pal.muted, pal.surface_alt)

        # clocks: the actual clock; where the GPU reports none, its active DPM level, said as such
        sclk, sclk_level = (s.sclk_mhz, "") if is_number(s.sclk_mhz) else (s.sclk_dpm_mhz, " (DPM level)")
        mclk, mclk_level = (s.mclk_mhz, "") if is_number(s.mclk_mhz) else (s.mclk_dpm_mhz, " level")
        if is_number(sclk):
            detail = f"mem {fmt_mhz(mclk)}{mclk_level}" if is_number(mclk) else ""
            tip = "" if is_number(mclk) else f"memory clock: {reason_of(na, 'mclk_mhz')}"
            if sclk_level:
                tip = f"actual clock: {reason_of(na, 'sclk_mhz')}; shown: the active DPM level. {tip}".strip()
            throttle = s.throttle or {}
            if throttle.get("active"):  # the driver's own reasons (gpu_metrics), not a guess from the clock
                reasons = ", ".join(throttle.get("reasons") or []) or "no reason given"
                since = ""
                if is_number(throttled_since):  # from the history's throttle log: right after a tab switch too
                    since = f" since {time.strftime('%H:%M:%S', time.localtime(throttled_since))}"
                detail = f"throttled{since}: {reasons}"
                tip = f"The driver reports throttling{since}: {reasons}. {tip}".strip()
            self.clocks.show_value(fmt_mhz(sclk) + sclk_level.replace(" (DPM level)", " lvl"), detail, tip,
                                   pal.warm if throttle.get("active") else None)
        else:
            self.clocks.show_value(NA, "", reason_of(na, "sclk_mhz"))

        # fan
        if is_number(s.fan_rpm) or is_number(s.fan_percent):
            value = fmt_rpm(s.fan_rpm) if is_number(s.fan_rpm) else fmt_percent(s.fan_percent)
            detail = fmt_percent(s.fan_percent) if is_number(s.fan_rpm) and is_number(s.fan_percent) else ""
            self.fan.show_value(value, detail)
        else:
            self.fan.show_value(NA, "", reason_of(na, "fan_rpm", "fan_percent"))
