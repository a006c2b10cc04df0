"""Screenshots explain their N/A: a footnote mark on each N/A and the reasons listed on the picture.

In the window an N/A carries its reason in a tooltip; a PNG in a bug report has no tooltips, so a bare
N/A there reads as a fault of rocmdesk (issue 10, item 8). :func:`with_na_notes` finds every N/A the
grabbed widget shows (value labels, detail labels, table cells), numbers the distinct reasons in reading
order (the same reason on eight GPUs is one note), draws the mark after each N/A and adds a strip under
the picture listing "¹ reason (what)". The window itself is not changed: marks are painted on the image.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from PySide6 import QtCore, QtGui, QtWidgets

from rocmdesk.ui import theme
from rocmdesk.ui.formatting import NA

log = logging.getLogger(__name__)

SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
NO_REASON = "no reason was given by the backend"
MAX_NOTES = 12  # more distinct reasons than this: the rest are counted, not listed
MAX_WHAT = 4  # fields named per note
PAD = 10
CELL_PADDING = 8  # QTableView::item { padding: 0 8px } (resources/styles/app.qss)


def mark_of(number: int) -> str:
    """The footnote mark of note ``number`` (1-based): ¹, ², … ¹².."""
    return str(number).translate(SUPERSCRIPT)


@dataclass
class NaSpot:
    """One N/A on the picture: where its text ends (in the grabbed widget's coordinates), why, and what."""

    end: QtCore.QPoint  # the top-right corner of the text holding the N/A: the mark goes there
    reason: str
    what: str = ""


@dataclass
class NaNote:
    number: int
    reason: str
    what: list[str] = field(default_factory=list)
    count: int = 0

    @property
    def mark(self) -> str:
        return mark_of(self.number)

    def line(self) -> str:
        """"¹ Edge temperature: this GPU has no edge sensor": the field first, as the reader looks it up."""
        shown = ", ".join(self.what[:MAX_WHAT]) + (", …" if len(self.what) > MAX_WHAT else "")
        return f"{self.mark} {shown}: {self.reason}" if shown else f"{self.mark} {self.reason}"


def clean_reason(tip: str) -> str:
    """A tooltip as a note: its first line, without a leading "N/A:" (the mark says that)."""
    first = (tip or "").strip().splitlines()[0].strip() if (tip or "").strip() else ""
    if first.upper().startswith("N/A:"):
        first = first[4:].strip()
    return first or NO_REASON


def _what_of(widget: QtWidgets.QWidget) -> str:
    """The field a widget shows, in words: its accessible name or its parent's ("edge temperature", "Fan")."""
    for w in (widget, widget.parentWidget()):
        name = w.accessibleName() if w is not None else ""
        if name and NA not in name:
            return name[:1].upper() + name[1:]
    return ""


def _text_end(rect: QtCore.QRect, fm: QtGui.QFontMetrics, text: str, upto: int,
              alignment: QtCore.Qt.AlignmentFlag, padding: int = 0) -> QtCore.QPoint:
    """The top-right corner of ``text[:upto]`` drawn in ``rect`` with ``alignment`` (one line): where a
    mark after it goes."""
    align = QtCore.Qt.AlignmentFlag
    full = fm.horizontalAdvance(text)
    inner = rect.adjusted(padding, 0, -padding, 0)
    if alignment & align.AlignRight:
        left = inner.right() + 1 - full
    elif alignment & align.AlignHCenter:
        left = inner.left() + (inner.width() - full) // 2
    else:
        left = inner.left()
    if alignment & align.AlignTop:
        top = inner.top()
    elif alignment & align.AlignBottom:
        top = inner.bottom() + 1 - fm.height()
    else:
        top = inner.top() + (inner.height() - fm.height()) // 2
    return QtCore.QPoint(left + fm.horizontalAdvance(text[:upto]), top)


def _label_spot(widget: QtWidgets.QWidget, grabbed: QtWidgets.QWidget) -> NaSpot | None:
    """An N/A in a label-like widget (ValueLabel, QLabel, ElidedLabel), or None when it shows none."""
    from rocmdesk.ui.widgets import ElidedLabel, ValueLabel

    align = QtCore.Qt.AlignmentFlag
    if isinstance(widget, ValueLabel):
        if not widget.is_na():
            return None
        text, font = widget.text(), QtGui.QFont(widget.font())
        font.setItalic(True)
        alignment, tip = align.AlignLeft | align.AlignVCenter, widget.toolTip()
    elif isinstance(widget, ElidedLabel):
        text, font, alignment = widget._shown, widget.font(), widget._alignment | align.AlignVCenter
        # its own tooltip is the elided text in full; the reason sits on the metric's value beside it
        value = getattr(widget.parentWidget(), "value", None)
        tip = value.toolTip() if isinstance(value, QtWidgets.QWidget) else ""
    elif isinstance(widget, QtWidgets.QLabel) and widget.textFormat() != QtCore.Qt.TextFormat.RichText:
        text, font, alignment, tip = widget.text(), widget.font(), widget.alignment(), widget.toolTip()
        if "\n" in text or (widget.wordWrap()
                             and widget.fontMetrics().horizontalAdvance(text) > widget.contentsRect().width()):
            return None  # several lines (the graphs' crosshair readout): where its N/A ends is not one line's end
    else:
        return None
    if NA not in text:
        return None
    rect = widget.contentsRect() if isinstance(widget, QtWidgets.QLabel) else widget.rect()
    fm = QtGui.QFontMetrics(font)
    end = _text_end(rect, fm, text, len(text), alignment)  # after the text: "(max N/A)¹", not over the ")"
    if not widget.visibleRegion().contains(QtCore.QPoint(max(0, end.x() - 2), end.y() + fm.height() // 2)):
        return None  # scrolled out of sight (a card below the fold): not on the picture
    return NaSpot(widget.mapTo(grabbed, end), clean_reason(tip), _what_of(widget))


def _view_spots(view: QtWidgets.QAbstractItemView, grabbed: QtWidgets.QWidget) -> list[NaSpot]:
    """The N/A cells a table or tree shows in its visible part (the reason is the cell's tooltip)."""
    model = view.model()
    if model is None:
        return []
    role = QtCore.Qt.ItemDataRole
    viewport = view.viewport()
    visible = viewport.rect()
    # the style's own text margin inside a cell comes on top of the sheet's padding
    padding = CELL_PADDING + view.style().pixelMetric(QtWidgets.QStyle.PixelMetric.PM_FocusFrameHMargin, None, view) + 1
    spots: list[NaSpot] = []

    def walk(parent: QtCore.QModelIndex) -> None:
        for row in range(model.rowCount(parent)):
            for col in range(model.columnCount(parent)):
                index = model.index(row, col, parent)
                text = model.data(index, role.DisplayRole)
                rect = view.visualRect(index)
                if isinstance(text, str) and NA in text and rect.intersects(visible):
                    font = model.data(index, role.FontRole)
                    fm = QtGui.QFontMetrics(font if isinstance(font, QtGui.QFont) else view.font())
                    raw = model.data(index, role.TextAlignmentRole)
                    alignment = QtCore.Qt.AlignmentFlag(int(raw)) if raw is not None else \
                        QtCore.Qt.AlignmentFlag.AlignLeft | QtCore.Qt.AlignmentFlag.AlignVCenter
                    end = _text_end(rect, fm, text, len(text), alignment, padding)
                    header = model.headerData(col, QtCore.Qt.Orientation.Horizontal, role.DisplayRole)
                    tip = str(model.data(index, role.ToolTipRole) or "")
                    spots.append(NaSpot(viewport.mapTo(grabbed, end), clean_reason(tip), str(header or "")))
                if col == 0 and model.hasChildren(index) and isinstance(view, QtWidgets.QTreeView) \
                        and view.isExpanded(index):
                    walk(index)

    walk(QtCore.QModelIndex())
    return spots


def find_na(grabbed: QtWidgets.QWidget) -> list[NaSpot]:
    """Every N/A ``grabbed`` shows, in reading order (top to bottom, then left to right)."""
    spots: list[NaSpot] = []
    for widget in grabbed.findChildren(QtWidgets.QWidget):
        if not widget.isVisibleTo(grabbed) or widget.width() <= 0:
            continue
        if isinstance(widget, QtWidgets.QHeaderView):
            continue  # it shares its table's model: the cells are walked once, by the table
        if isinstance(widget, QtWidgets.QAbstractItemView):
            spots += _view_spots(widget, grabbed)
            continue
        spot = _label_spot(widget, grabbed)
        if spot is not None and grabbed.rect().contains(spot.end - QtCore.QPoint(1, 0)):
            spots.append(spot)
    spots.sort(key=lambda s: (s.end.y(), s.end.x()))
    return spots


def number_notes(spots: list[NaSpot]) -> tuple[list[NaNote], list[int]]:
    """The distinct reasons as numbered notes (first seen, first numbered) and each spot's note number."""
    notes: dict[str, NaNote] = {}
    numbers = []
    for spot in spots:
        note = notes.get(spot.reason)
        if note is None:
            note = notes[spot.reason] = NaNote(len(notes) + 1, spot.reason)
        note.count += 1
        if spot.what and spot.what not in note.what:
            note.what.append(spot.what)
        numbers.append(note.number)
    return list(notes.values()), numbers


@dataclass
class AnnotatedShot:
    image: QtGui.QImage
    notes: list[NaNote]
    legend_height: int  # logical pixels added under the picture (0: no N/A, the picture as grabbed)


def legend_lines(notes: list[NaNote]) -> list[str]:
    lines = [note.line() for note in notes[:MAX_NOTES]]
    if len(notes) > MAX_NOTES:
        lines.append(f"… and {len(notes) - MAX_NOTES} more reasons (hover an N/A in the window to read it)")
    return lines


LEGEND_TITLE = "N/A: why a reading is not shown"


def with_na_notes(grabbed: QtWidgets.QWidget, pixmap: QtGui.QPixmap) -> AnnotatedShot:
    """``pixmap`` (a grab of ``grabbed``) with a mark on each N/A and the numbered reasons under it."""
    spots = find_na(grabbed)
    if not spots:
        return AnnotatedShot(pixmap.toImage(), [], 0)
    notes, numbers = number_notes(spots)
    pal = theme.current()
    dpr = pixmap.devicePixelRatio() or 1.0
    width = round(pixmap.width() / dpr)
    height = round(pixmap.height() / dpr)
    body = QtGui.QFont(grabbed.font())
    title_font = QtGui.QFont(body)
    title_font.setWeight(QtGui.QFont.Weight.DemiBold)
    mark_font = QtGui.QFont(body)
    mark_font.setWeight(QtGui.QFont.Weight.Bold)
    legend_mark_font = QtGui.QFont(mark_font)  # superscript digits are small: larger in the legend
    legend_mark_font.setPointSizeF(body.pointSizeF() * 1.4 if body.pointSizeF() > 0 else 13.0)
    fm = QtGui.QFontMetrics(body)
    lines = legend_lines(notes)
    line_h = fm.height() + 2
    legend_h = PAD + line_h * (len(lines) + 1) + PAD

    image = QtGui.QImage(round(width * dpr), round((height + legend_h) * dpr), QtGui.QImage.Format.Format_ARGB32)
    image.setDevicePixelRatio(dpr)
    image.fill(QtGui.QColor(pal.surface))
    p = QtGui.QPainter(image)
    try:
        p.setRenderHint(QtGui.QPainter.RenderHint.TextAntialiasing, True)
        p.drawPixmap(0, 0, pixmap)
        # the marks: the note's number in superscript digits right after each N/A, in the info colour
        p.setFont(mark_font)
        p.setPen(QtGui.QColor(pal.info))
        mfm = QtGui.QFontMetrics(mark_font)
        for spot, number in zip(spots, numbers, strict=True):
            text = mark_of(number)
            box = QtCore.QRect(spot.end.x() + 1, spot.end.y() - 2, mfm.horizontalAdvance(text) + 2, mfm.height())
            p.drawText(box, int(QtCore.Qt.AlignmentFlag.AlignLeft | QtCore.Qt.AlignmentFlag.AlignTop), text)
        # the legend strip under the picture
        top = height
        p.setPen(QtGui.QColor(pal.border))
        p.drawLine(0, top, width, top)
        p.setFont(title_font)
        p.setPen(QtGui.QColor(pal.text))
        y = top + PAD
        flags = int(QtCore.Qt.AlignmentFlag.AlignLeft | QtCore.Qt.AlignmentFlag.AlignVCenter)
        p.drawText(QtCore.QRect(PAD + 4, y, width - 2 * PAD, line_h), flags, LEGEND_TITLE)
        p.setFont(body)
        for line in lines:
            y += line_h
            shown = fm.elidedText(line, QtCore.Qt.TextElideMode.ElideRight, width - 2 * PAD - 8)
            mark, _, rest = shown.partition(" ")
            p.setFont(legend_mark_font)
            p.setPen(QtGui.QColor(pal.info))
            p.drawText(QtCore.QRect(PAD + 4, y, 24, line_h), flags, mark)
            p.setFont(body)
            p.setPen(QtGui.QColor(pal.text))
            p.drawText(QtCore.QRect(PAD + 4 + 24, y, width - 2 * PAD - 28, line_h), flags, rest)
    finally:
        p.end()
    log.debug("screenshot: %d N/A with %d reasons noted", len(spots), len(notes))
    return AnnotatedShot(image, notes, legend_h)
