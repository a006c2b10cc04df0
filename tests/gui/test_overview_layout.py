"""Overview layout: few GPUs do not turn the trend into a window-high chart; many GPUs fill the tab."""

from __future__ import annotations

import pytest

from tests.gui.conftest import FakeBackend, fake_source

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
    from rocmdesk.ui.overview_tab import TREND_MAX_HEIGHT

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
