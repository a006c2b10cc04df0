"""Overview layout: few GPUs do not turn the trend into a window-high chart; many GPUs fill the tab."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from tests.gui.conftest import GIB, FakeBackend, fake_source

pytestmark = pytest.mark.gui


def _overview(qtbot, open_window, manual_factory, gpus: int):
    session = open_window(fake_source(FakeBackend(gpus)), sampler_factory=manual_factory, size=(1920, 1080))
    for _ in range(3):
        manual_factory.made[0].tick()
        qtbot.wait(5)
    overview = session.window.tab_widgets["overview"]
    session.window.show_tab("overview")
    qtbot.waitUntil(lambda: len(overview.cards) == gpus and all(c.sample for c in overview.cards.values()),
                    timeout=3000)
    qtbot.wait(20)
    return overview


def test_one_gpu_card_stops_growing_at_the_trend_limit(qtbot, open_window, manual_factory):
    from rocmdesk.ui.gpu_card import TREND_MAX_HEIGHT

    overview = _overview(qtbot, open_window, manual_factory, 1)
    card = next(iter(overview.cards.values()))
    assert card.trend.height() == TREND_MAX_HEIGHT
    viewport = overview.scroll.viewport().height()
    assert card.height() < viewport * 0.7, (card.height(), viewport)
    assert card.geometry().top() < 40  # at the top, not centred in the window


def test_eight_gpus_fill_the_tab_without_scrolling(qtbot, open_window, manual_factory):
    overview = _overview(qtbot, open_window, manual_factory, 8)
    cards = list(overview.cards.values())
    viewport = overview.scroll.viewport().height()
    bottom = max(c.geometry().bottom() for c in cards)
    assert bottom <= overview.body.height() and not overview.scroll.verticalScrollBar().isVisible()
    assert bottom > viewport * 0.8, (bottom, viewport)  # the cards use the height, no band left empty
    assert all(40 <= c.trend.height() for c in cards)


# -- issue 14: eight cards with their details fit 1280x800, and nothing on a card is cut -----------

def _mi300x_like(info, t, i):
    """What the MI300X demo shows: throttled at the cap, no fan or edge sensor, most details N/A."""
    from tests.gui.conftest import make_sample

    s = make_sample(replace(info, name="MI300X", gfx_target="gfx942", vram_total_bytes=192 * GIB), t, i)
    s.temperature_c.pop("edge")
    s.unavailable = {"temperature_c.edge": "no edge sensor on this GPU", "fan_rpm": "passively cooled",
                     "voltage_mv": "no in0_input", "power_profile": "no pp_power_profile_mode",
                     "vbios": "no vbios_version"}
    s.fan_rpm = s.fan_percent = None
    s.power_w, s.power_cap_w = 749.0, 750.0
    s.vram_used_bytes, s.vram_total_bytes = 173 * GIB, 192 * GIB
    s.sclk_mhz = 2032
    s.throttle = {"active": True, "reasons": ["power limit (PPT0)"]}
    s.pcie = {"speed_gts": 32.0, "width": 16.0, "max_speed_gts": 32.0, "max_width": 16.0}
    s.performance_level = "auto"
    return s


def _all_details(info, t, i):
    """Every detail present and long (the layout must wrap them, not cut them)."""
    from tests.gui.conftest import make_sample

    s = make_sample(info, t, i)
    s.pcie = {"speed_gts": 16.0, "width": 8.0, "max_speed_gts": 32.0, "max_width": 16.0}
    s.voltage_mv, s.performance_level, s.power_profile = 1050.0, "auto", "3D_FULL_SCREEN"
    s.throttle = {"active": True, "reasons": ["power limit (PPT0)", "thermal hotspot"]}
    return s


def _fake_overview(qtbot, open_window, manual_factory, sample_fn, size, gpus=8):
    backend = FakeBackend(gpus, sample_fn=sample_fn)
    if sample_fn is not _mi300x_like:
        backend.infos = [replace(i, vbios="113-D70401XT-N11") for i in backend.infos]
    session = open_window(fake_source(backend), sampler_factory=manual_factory, size=size)
    session.window.show_tab("overview")
    overview = session.window.tab_widgets["overview"]
    for _ in range(2):
        manual_factory.made[0].tick()
        qtbot.wait(5)
    qtbot.waitUntil(lambda: len(overview.cards) == gpus and all(c.sample for c in overview.cards.values()),
                    timeout=3000)
    settle(qtbot, overview)
    overview.test_backend = backend
    return overview


def settle(qtbot, overview) -> None:
    """Until the density fit has run and the layouts it changed have been applied (posted events)."""
    from PySide6 import QtWidgets

    qtbot.waitUntil(lambda: not overview._fit_timer.isActive(), timeout=2000)
    for _ in range(5):
        QtWidgets.QApplication.sendPostedEvents()
        QtWidgets.QApplication.processEvents()


def clipped(card) -> list[str]:
    """Every text on a card that is elided, narrower than its text, or outside the card."""
    from PySide6 import QtGui, QtWidgets

    from rocmdesk.ui.widgets import ElidedLabel, ValueLabel

    bad = []
    for widget in card.findChildren(QtWidgets.QWidget):
        if not widget.isVisibleTo(card):
            continue
        where = widget.mapTo(card, widget.rect().topLeft())
        if not card.rect().contains(widget.rect().translated(where)):
            bad.append(f"outside the card: {widget!r}")
        if isinstance(widget, ValueLabel):
            font = QtGui.QFont(widget.font())
            font.setWeight(QtGui.QFont.Weight.DemiBold)
            if font.italic() or widget.is_na():
                font.setItalic(True)
            need = QtGui.QFontMetrics(font).horizontalAdvance(widget.text())
            if need > widget.width():
                bad.append(f"value {widget.text()!r} needs {need} px, has {widget.width()}")
        elif isinstance(widget, ElidedLabel):
            need = widget.fontMetrics().horizontalAdvance(widget.full_text())
            if widget.text() != widget.full_text() or need > widget.width():
                bad.append(f"elided {widget.full_text()!r} as {widget.text()!r} ({need} px > {widget.width()})")
        elif isinstance(widget, QtWidgets.QLabel) and widget.text() and not widget.wordWrap():
            need = widget.sizeHint()  # the text's own extent (rich text and several lines included)
            if need.width() > widget.width() or need.height() > widget.height():
                bad.append(f"label {widget.text()!r} needs {need.width()}x{need.height()}, "
                           f"has {widget.width()}x{widget.height()}")
    return bad


@pytest.mark.parametrize("sample_fn", [_mi300x_like, _all_details], ids=["mi300x", "all-details"])
@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080)], ids=["1280x800", "1920x1080"])
def test_eight_cards_fit_without_scrolling_and_nothing_is_cut(qtbot, open_window, manual_factory, sample_fn, size):
    overview = _fake_overview(qtbot, open_window, manual_factory, sample_fn, size)
    viewport = overview.scroll.viewport().height()
    assert overview.body.height() <= viewport and not overview.scroll.verticalScrollBar().isVisible(), \
        (overview.body.height(), viewport, [c.density for c in overview.cards.values()])
    for card in overview.cards.values():
        assert card.geometry().bottom() < viewport
        assert not clipped(card), clipped(card)
        assert card.clocks.detail_text().startswith("throttled since ")
        assert ": power limit (PPT0)" in card.clocks.detail_text()
    densities = {c.density for c in overview.cards.values()}
    assert len(densities) == 1  # one row never mixes a roomy card with a dense one
    if size == (1920, 1080):
        assert densities == {0}  # the big screen keeps the table of details and the trend
        assert not any(c.head_merged for c in overview.cards.values())  # and the address on its own line
    if sample_fn is _mi300x_like and size == (1280, 800):
        assert densities == {1}  # and the MI300X node keeps its trend even at 1280x800
        card = next(iter(overview.cards.values()))
        assert card.trend.isVisible() and card.trend.height() >= 28
        # the five details flow on two lines, each N/A with its own reason
        assert card.details_key == ("flow", (("PCIe", "Perf level"), ("Voltage", "Profile", "VBIOS")))
        assert card.detail_rows["VBIOS"][1].text() == "N/A"
        assert card.detail_rows["VBIOS"][1].toolTip() == "no vbios_version"
        lines = {card.detail_rows[c][1].y() for c in ("Voltage", "Profile", "VBIOS")}
        assert len(lines) == 1 and min(lines) > card.detail_rows["PCIe"][1].y()


def test_sixteen_gpus_scroll_at_the_densest_rather_than_overlap(qtbot, open_window, manual_factory):
    overview = _fake_overview(qtbot, open_window, manual_factory, _all_details, (1280, 800), gpus=16)
    cards = sorted(overview.cards.values(), key=lambda c: (c.geometry().top(), c.geometry().left()))
    assert {c.density for c in cards} == {2}
    assert overview.scroll.verticalScrollBar().isVisible()
    for above, below in zip(cards[:-4], cards[4:], strict=True):
        assert above.geometry().bottom() < below.geometry().top()
    assert not clipped(cards[-1]), clipped(cards[-1])


def test_a_long_detail_gets_its_own_lines_and_keeps_them_while_the_width_stays(qtbot, open_window, manual_factory):
    overview = _fake_overview(qtbot, open_window, manual_factory, _mi300x_like, (1280, 800))
    card = next(iter(overview.cards.values()))
    clocks = card.clocks

    def since() -> str:  # when the running throttle span began, as the history's throttle log has it
        start = overview._throttled_since(card.info.pci)
        assert start is not None
        return time.strftime("%H:%M:%S", time.localtime(start))

    first = overview.ctx.feed.history[card.info.pci].throttle.spans[0].start
    assert overview._throttled_since(card.info.pci) == first  # the first of the throttled samples
    # too long beside the clock: under it, broken between words, never cut
    assert clocks.detail_below and clocks.detail_lines.text() == f"throttled since {since()}:\npower limit (PPT0)"
    assert clocks.detail_lines.geometry().top() > clocks.value.geometry().bottom()
    sampler = manual_factory.made[0]

    def throttled(*reasons):
        def sample(info, t, i):
            s = _mi300x_like(info, t, i)
            s.throttle = {"active": bool(reasons), "reasons": list(reasons)}
            return s
        overview.test_backend.sample_fn = sample
        sampler.tick()
        settle(qtbot, overview)

    throttled("power limit (PPT0)", "thermal hotspot", "PROCHOT")  # wrapped between reasons, each whole
    assert overview._throttled_since(card.info.pci) > first  # other reasons: a new span
    assert clocks.detail_lines.text().replace("\n", " ") == \
        f"throttled since {since()}: power limit (PPT0), thermal hotspot, PROCHOT"
    assert clocks.detail_lines.text().split("\n") == [f"throttled since {since()}:", "power limit (PPT0),",
                                                      "thermal hotspot, PROCHOT"]  # broken between reasons
    assert not clipped(card), clipped(card)
    height = card.height()
    throttled()
    assert overview._throttled_since(card.info.pci) is None
    # throttling stopped: the short detail stays under the value and the card keeps its height, so a
    # GPU throttling on and off at its power cap does not relayout the tab every few seconds
    assert clocks.detail_below and clocks.detail_lines.text() == "mem 1250 MHz" and card.height() == height
    assert not clipped(card), clipped(card)
    throttled("power limit (PPT0)")
    assert card.height() == height  # and back: still the same height
    throttled()
    overview.window().resize(1920, 1080)  # a new width: the detail is placed afresh, beside the clock
    settle(qtbot, overview)
    assert not clocks.detail_below and clocks.detail_text() == "mem 1250 MHz" and not clocks.detail_lines.isVisible()
    assert clocks.detail.isVisible() and clocks.detail.geometry().top() == 0
    assert not clipped(card), clipped(card)


def test_a_dense_card_puts_the_address_beside_the_name_only_while_both_fit(qtbot, open_window, manual_factory):
    overview = _fake_overview(qtbot, open_window, manual_factory, _mi300x_like, (1280, 800))
    card = next(iter(overview.cards.values()))
    assert card.density >= 1 and card.head_merged
    assert card.subtitle.y() < card.title.geometry().bottom() and card.subtitle.x() > card.title.geometry().right()
    card.set_state("stale", "the backend did not answer")  # a chip joins the line: no room, two lines again
    settle(qtbot, overview)
    assert card.head_merged == card._head_fits_one_line(card.width())  # as the room says, chip included
    if not card.head_merged:
        assert card.subtitle.y() > card.title.geometry().bottom()
    assert not clipped(card), clipped(card)
    card.set_state("ok")
    settle(qtbot, overview)
    assert card.head_merged and not clipped(card)
