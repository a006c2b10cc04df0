"""Screenshots explain their N/A: a mark on each, the reasons listed on the picture (issue 10, item 8)."""

from __future__ import annotations

import pytest
from PySide6 import QtCore, QtGui, QtWidgets

from rocmdesk.ui import theme
from rocmdesk.ui.na_notes import (
    MAX_NOTES,
    NO_REASON,
    NaSpot,
    clean_reason,
    find_na,
    legend_lines,
    mark_of,
    number_notes,
    with_na_notes,
)
from rocmdesk.ui.widgets import ValueLabel
from tests.gui.conftest import demo_small

pytestmark = pytest.mark.gui


def _colours(image: QtGui.QImage, rect: QtCore.QRect) -> set[str]:
    dpr = image.devicePixelRatio()
    r = QtCore.QRect(round(rect.x() * dpr), round(rect.y() * dpr), round(rect.width() * dpr),
                     round(rect.height() * dpr)).intersected(image.rect())
    return {image.pixelColor(x, y).name() for x in range(r.left(), r.right() + 1)
            for y in range(r.top(), r.bottom() + 1)}


def _panel(qtbot, *labels: tuple[str, str]) -> QtWidgets.QWidget:
    box = QtWidgets.QWidget()
    qtbot.addWidget(box)
    lay = QtWidgets.QVBoxLayout(box)
    for text, tip in labels:
        label = QtWidgets.QLabel(text, box)
        label.setToolTip(tip)
        label.setAccessibleName(f"field {lay.count()}")
        lay.addWidget(label)
    box.resize(400, 40 * max(1, len(labels)))
    box.show()
    qtbot.waitExposed(box)
    return box


def test_mark_of_and_clean_reason():
    assert [mark_of(n) for n in (1, 2, 9, 10, 12)] == ["¹", "²", "⁹", "¹⁰", "¹²"]
    assert clean_reason("N/A: not a KFD compute process\nSDMA time: 3 s") == "not a KFD compute process"
    assert clean_reason("  this GPU has no edge sensor ") == "this GPU has no edge sensor"
    assert clean_reason("") == NO_REASON and clean_reason("N/A:") == NO_REASON and clean_reason("\n\n") == NO_REASON


def test_the_same_reason_is_one_note_numbered_in_reading_order():
    spots = [NaSpot(QtCore.QPoint(10, 5), "no fan", "Fan"), NaSpot(QtCore.QPoint(10, 9), "no sensor", "Edge"),
             NaSpot(QtCore.QPoint(300, 5), "no fan", "Fan"), NaSpot(QtCore.QPoint(30, 9), "no sensor", "Mem")]
    notes, numbers = number_notes(spots)
    assert numbers == [1, 2, 1, 2]
    assert [(n.reason, n.what, n.count) for n in notes] == [("no fan", ["Fan"], 2), ("no sensor", ["Edge", "Mem"], 2)]
    assert notes[1].line() == "² Edge, Mem: no sensor"


def test_many_reasons_are_counted_past_the_limit():
    spots = [NaSpot(QtCore.QPoint(0, i), f"reason {i}") for i in range(MAX_NOTES + 3)]
    lines = legend_lines(number_notes(spots)[0])
    assert len(lines) == MAX_NOTES + 1 and lines[-1].startswith("… and 3 more reasons")


def test_a_picture_without_na_is_left_as_grabbed(qtbot):
    box = _panel(qtbot, ("744 W", ""), ("57 °C", "junction"))
    pixmap = box.grab()
    shot = with_na_notes(box, pixmap)
    assert shot.notes == [] and shot.legend_height == 0
    assert shot.image == pixmap.toImage()


@pytest.mark.parametrize("name", ["light", "dark"])
def test_each_na_gets_its_mark_and_the_reasons_a_strip_under_the_picture(qtbot, qapp, name):
    pal = theme.apply(qapp, name)
    try:
        box = _panel(qtbot, ("N/A", "N/A: this GPU has no edge sensor"), ("Gen4 x16 (max N/A)", "no max_link_speed"),
                     ("N/A", "this GPU has no edge sensor"), ("123 W", "a value"))
        pixmap = box.grab()
        shot = with_na_notes(box, pixmap)
        assert [n.reason for n in shot.notes] == ["this GPU has no edge sensor", "no max_link_speed"]
        assert shot.notes[0].count == 2
        dpr = pixmap.devicePixelRatio()
        assert shot.image.width() == pixmap.width()
        assert shot.image.height() == pixmap.height() + round(shot.legend_height * dpr) and shot.legend_height > 30
        # the marks are painted in the info colour right after each N/A (the label's own text has none)
        for spot in find_na(box):
            near = QtCore.QRect(spot.end.x(), spot.end.y() - 2, 14, 14)
            assert pal.info in _colours(shot.image, near), spot
            assert pal.info not in _colours(pixmap.toImage(), near)
        # the legend strip holds text (the title and one line per reason), not an empty band
        strip = QtCore.QRect(0, round(pixmap.height() / dpr) + 1, 400, shot.legend_height - 2)
        colours = _colours(shot.image, strip)
        assert pal.text in colours and pal.info in colours and len(colours) > 5
    finally:
        theme.apply(qapp, "light")


def test_a_value_label_na_takes_its_tooltip_and_a_hidden_one_is_left_out(qtbot):
    box = QtWidgets.QWidget()
    qtbot.addWidget(box)
    lay = QtWidgets.QVBoxLayout(box)
    shown, hidden = ValueLabel("888 °C", box, "N/A"), ValueLabel("888 °C", box, "N/A")
    shown.set_value("N/A", na=True)
    shown.setToolTip("no fan on this GPU (passively cooled)")
    shown.setAccessibleName("fan")
    hidden.setToolTip("never shown")
    lay.addWidget(shown)
    lay.addWidget(hidden)
    hidden.hide()
    box.show()
    qtbot.waitExposed(box)
    spots = find_na(box)
    assert [(s.reason, s.what) for s in spots] == [("no fan on this GPU (passively cooled)", "Fan")]


def test_a_multi_line_label_is_left_unmarked(qtbot):
    """A mark at the end of a one-line width would land in the wrong place on a crosshair readout."""
    box = _panel(qtbot, ("card1: 61 °C\ncard2: N/A", "x"), ("N/A", "one line"))
    assert [s.reason for s in find_na(box)] == ["one line"]


def test_an_na_scrolled_out_of_sight_is_not_noted(qtbot):
    area = QtWidgets.QScrollArea()
    qtbot.addWidget(area)
    body = QtWidgets.QWidget()
    lay = QtWidgets.QVBoxLayout(body)
    top = QtWidgets.QLabel("N/A", body)
    top.setToolTip("on screen")
    lay.addWidget(top)
    lay.addSpacing(2000)
    below = QtWidgets.QLabel("N/A", body)
    below.setToolTip("below the fold")
    lay.addWidget(below)
    area.setWidget(body)
    area.resize(300, 200)
    area.show()
    qtbot.waitExposed(area)
    assert [s.reason for s in find_na(area)] == ["on screen"]


def test_demo_overview_screenshot_lists_the_reasons_once_per_reason(open_window, qtbot):
    session = open_window(demo_small(preroll_s=0, recording="mi300x-node"), size=(1920, 1080))
    window = session.window
    qtbot.waitUntil(lambda: session.feed.last_snapshot is not None, timeout=10000)
    window.show_tab("overview")
    # 8 MI300X, four N/A each: edge sensor, fan, and voltage and profile (not recorded in this demo); the cap's
    # minimum is the demo machine's power1_cap_min
    qtbot.waitUntil(lambda: len(find_na(window)) >= 8 * 4, timeout=10000)
    pixmap = window.grab()
    shot = with_na_notes(window, pixmap)
    reasons = [n.reason for n in shot.notes]
    assert "this GPU has no edge sensor" in reasons and any("fan" in r for r in reasons)
    assert len(reasons) == len(set(reasons)) <= 6  # one note per reason, not one per GPU
    edge = next(n for n in shot.notes if n.reason == "this GPU has no edge sensor")
    assert edge.count == 8 and edge.what == ["Edge temperature"]
    assert shot.image.height() > pixmap.height()


def test_processes_table_cells_are_noted_with_their_column(open_window, qtbot):
    session = open_window(demo_small(preroll_s=0, recording="rx7900xtx-comfyui"), size=(1280, 800))
    window = session.window
    window.show_tab("processes")
    tab = window.tab_widgets["processes"]
    qtbot.waitUntil(lambda: any(s.what == "Compute" for s in find_na(tab)), timeout=15000)
    notes, _ = number_notes(find_na(tab))
    assert all(n.reason != NO_REASON and not n.reason.startswith("N/A") for n in notes)
    assert {"Compute"} <= {w for n in notes for w in n.what}


def test_toolbar_screenshot_saves_the_notes(open_window, qtbot, tmp_path):
    session = open_window(demo_small(preroll_s=0, recording="mi300x-node"), size=(1600, 1000))
    window = session.window
    qtbot.waitUntil(lambda: len(find_na(window.tabs.currentWidget())) >= 8, timeout=10000)
    path = window.save_screenshot(str(tmp_path / "shot.png"))
    assert path is not None
    saved = QtGui.QImage(path)
    tab = window.tabs.currentWidget()
    assert saved.width() == tab.grab().width() and saved.height() > tab.grab().height()


def test_rocmdesk_screenshot_puts_the_legend_on_the_png(tmp_path):
    """The command (its own process: it owns the QApplication) saves the window with the strip under it."""
    from tests.gui.test_screenshot_command import _run, png_size

    out = tmp_path / "overview.png"
    proc = _run("--demo", "--demo-recording", "mi300x-node", "--seconds", "0", "--size", "1280x800", "--theme", "dark",
                "-o", str(out), tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    width, height = png_size(out)
    assert width == 1280 and height > 800
    assert "N/A reasons listed under the picture" in proc.stdout, proc.stdout
