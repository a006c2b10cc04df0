"""What the window claims is true: buttons enabled exactly when they work and looking it, the first
window fits the screen, the diagnosis list names checks in words, colours read (issue 10 items 7, 9)."""

from __future__ import annotations

import configparser
from pathlib import Path
from types import SimpleNamespace

import pytest
from PySide6 import QtCore, QtGui, QtWidgets

from rocmdesk.host import HostRoot, RecordedRunner
from rocmdesk.ui import theme
from rocmdesk.ui.diagnosis_tab import DiagnosisTab
from rocmdesk.ui.main_window import default_size
from tests.gui.conftest import demo_small
from tests.support import scenarios as sc

pytestmark = pytest.mark.gui
TOP = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("palette", [theme.LIGHT, theme.DARK], ids=["light", "dark"])
def test_text_contrast_is_at_least_4_5_to_1(palette):
    low = []
    for fg in theme.TEXT_COLOURS:
        for bg in theme.TEXT_BACKGROUNDS:
            ratio = theme.contrast_ratio(getattr(palette, fg), getattr(palette, bg))
            if ratio < 4.5:
                low.append(f"{fg} on {bg}: {ratio:.2f}")
    for fg, bg in theme.TEXT_PAIRS:
        ratio = theme.contrast_ratio(getattr(palette, fg), getattr(palette, bg))
        if ratio < 4.5:
            low.append(f"{fg} on {bg}: {ratio:.2f}")
    assert not low, low


def test_contrast_ratio_matches_wcag_reference_values():
    assert theme.contrast_ratio("#000000", "#ffffff") == pytest.approx(21.0)
    assert theme.contrast_ratio("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # the classic near miss
    assert theme.contrast_ratio("#ffffff", "#ffffff") == pytest.approx(1.0)


@pytest.mark.parametrize("name", ["light", "dark"])
def test_selection_is_not_the_error_colour_and_focus_shows(qapp, name):
    palette = theme.apply(qapp, name)
    try:
        qp = qapp.palette()
        highlight = qp.color(QtGui.QPalette.ColorRole.Highlight).name()
        assert highlight == palette.selection
        assert highlight not in (palette.critical, palette.accent, palette.hot)
        sheet = qapp.styleSheet()
        assert "QPushButton:focus" in sheet and palette.focus in sheet
        assert "QPushButton:disabled" in sheet
        disabled = qp.color(QtGui.QPalette.ColorGroup.Disabled, QtGui.QPalette.ColorRole.ButtonText).name()
        assert disabled == palette.muted != palette.text
    finally:
        theme.apply(qapp, "light")


@pytest.mark.parametrize("name", ["light", "dark"])
def test_a_disabled_button_looks_different_from_an_enabled_one(qtbot, qapp, name):
    theme.apply(qapp, name)
    try:
        box = QtWidgets.QWidget()
        qtbot.addWidget(box)
        lay = QtWidgets.QHBoxLayout(box)
        on, off = QtWidgets.QPushButton("Save report…"), QtWidgets.QPushButton("Save report…")
        off.setEnabled(False)
        lay.addWidget(on)
        lay.addWidget(off)
        box.show()
        qtbot.waitExposed(box)
        a, b = on.grab().toImage(), off.grab().toImage()
        assert a.size() == b.size()

        def text_colours(image):
            return {image.pixelColor(x, y).name() for x in range(image.width()) for y in range(image.height())}

        pal = theme.current()
        assert pal.text in text_colours(a) and pal.text not in text_colours(b)
        assert pal.muted in text_colours(b)
    finally:
        theme.apply(qapp, "light")


@pytest.mark.parametrize(("w", "h"), [(1280, 800), (1366, 768), (1280, 720), (1920, 1080)])
def test_first_window_fits_the_available_area(w, h):
    area = QtCore.QRect(0, 0, w, h - 32)  # a panel takes 32 px
    size = default_size(area)
    assert size.width() <= w and size.height() <= h - 32 - 30
    assert size.width() >= min(1440, w - 16) - 1


def test_window_minimum_size_fits_1280x800(open_window):
    session = open_window(demo_small(preroll_s=0.0))
    hint = session.window.minimumSizeHint()
    assert hint.width() <= 1264 and hint.height() <= 730, hint


def test_desktop_file_name_is_the_shipped_desktop_entry(qapp):
    from rocmdesk.ui.app import make_app

    app = make_app()
    desktop = TOP / "packaging" / f"{app.desktopFileName()}.desktop"
    assert app.desktopFileName() == "org.rocmdesk.RocmDesk" and desktop.is_file()
    entry = configparser.ConfigParser(interpolation=None)
    entry.read(desktop)
    assert entry["Desktop Entry"]["Exec"].split()[0] == "rocmdesk"


def _broken_tab(qtbot, tmp_path):
    root = sc.clean_workstation(tmp_path / "root")
    sc.blacklist_amdgpu(root)
    sc.kernel_log(root, "[drm] Detected VRAM RAM=8176M, BAR=256M")
    tab = DiagnosisTab(SimpleNamespace(root=HostRoot(root), runner=RecordedRunner(), extras={}))
    qtbot.addWidget(tab)
    tab.resize(1280, 700)
    tab.show()
    with qtbot.waitSignal(tab.diagnosisFinished, timeout=30000):
        tab.run_all()
    return tab


def test_diagnosis_list_shows_short_titles_and_distinct_statuses(qtbot, tmp_path):
    from rocmdesk.diagnosis.metadata import load_metadata
    from rocmdesk.diagnosis.model import Status

    tab = _broken_tab(qtbot, tmp_path)
    statuses = {r.id: r.status for r in tab.report.results}
    assert {Status.PASS, Status.FAIL}.issubset(set(statuses.values()))
    meta = load_metadata()
    for check_id, item in tab._check_items.items():
        label = item.text(0)
        assert label != check_id and label == meta[check_id].label, (check_id, label)
        assert len(label) <= 34
    failing = tab._check_items["amdgpu-blacklisted"]
    passing = next(tab._check_items[c] for c, s in statuses.items() if s is Status.PASS)
    skipped = [tab._check_items[c] for c, s in statuses.items() if s is Status.SKIP]
    assert failing.text(1).startswith(("error", "warning")) and "finding" in failing.text(1)
    assert not passing.text(1).startswith("skipped")
    muted = QtGui.QColor(theme.current().muted)
    for item in skipped:
        assert item.text(1).startswith("skipped")
        assert item.foreground(0).color() == muted
    assert passing.foreground(0).color() != muted
    # the three glyphs differ: pass, fail and skip are not told apart by colour alone
    images = {s: tab._check_items[c].icon(0).pixmap(16, 16).toImage() for c, s in statuses.items()}
    assert images[Status.PASS] != images[Status.FAIL]
    if Status.SKIP in images:
        assert images[Status.SKIP] not in (images[Status.PASS], images[Status.FAIL])


def test_fix_button_is_disabled_with_a_reason(qtbot, tmp_path):
    tab = _broken_tab(qtbot, tmp_path)
    tab.tree.setCurrentItem(tab._check_items["nomodeset"])  # a passing check
    assert not tab.fix_button.isEnabled()
    assert "No fix" in tab.fix_hint.text() and tab.fix_button.toolTip() == tab.fix_hint.text()
    tab.tree.setCurrentItem(tab._check_items["small-bar"].child(0))  # manual steps only
    assert not tab.fix_button.isEnabled() and "no automatic fix" in tab.fix_hint.text()
    tab.tree.setCurrentItem(tab._check_items["amdgpu-blacklisted"].child(0))
    assert tab.fix_button.isEnabled() and tab.fix_button.toolTip()


def test_report_buttons_work_after_the_first_build(open_window, qtbot, tmp_path):
    session = open_window(demo_small(preroll_s=30.0))
    window = session.window
    tab = window.tab_widgets["report"]
    assert not tab.save_button.isEnabled() and not tab.copy_button.isEnabled()
    assert tab.save_button.toolTip()  # says why
    qtbot.waitUntil(lambda: not window.ctx.feed.loading, timeout=20000)
    with qtbot.waitSignal(tab.report_ready, timeout=60000):
        window.show_tab("report")  # the first build
    assert tab.wait_idle(60000)
    assert tab.report is not None
    assert tab.save_button.isEnabled() and tab.copy_button.isEnabled()
    tab.copy_button.click()
    assert QtGui.QGuiApplication.clipboard().text() == tab.markdown
    path = tmp_path / "first.md"
    tab.save_path_provider = lambda *_a: str(path)
    tab.save_button.click()
    assert path.read_text().startswith("#")
