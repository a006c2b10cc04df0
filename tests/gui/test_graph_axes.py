"""The four graphs share one time axis: same range, same width, same ticks; pan and crosshair move all."""

from __future__ import annotations

import pytest

from tests.gui.conftest import demo_small

pytestmark = pytest.mark.gui


def _ticks(plot):
    vb = plot.getViewBox()
    (x0, x1), _ = vb.viewRange()
    return [(round(sp), [round(v) for v in vs]) for sp, vs in plot.getAxis("bottom").tickValues(x0, x1, vb.width())]


@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080), (1000, 700)])
def test_time_axes_have_the_same_range_width_and_ticks(qtbot, open_window, size):
    session = open_window(demo_small(preroll_s=600), size=size)
    window = session.window
    window.show_tab("graphs")
    graphs = window.tab_widgets["graphs"]
    qtbot.waitUntil(lambda: graphs.draw_count > 0 and graphs.plots["temp"].getViewBox().width() > 100, timeout=8000)
    qtbot.wait(50)
    plots = graphs.plots
    widths = [p.getViewBox().width() for p in plots.values()]
    assert max(widths) - min(widths) <= 1.5, widths
    ranges = {tuple(round(v, 3) for v in p.getViewBox().viewRange()[0]) for p in plots.values()}
    assert len(ranges) == 1
    ticks = [_ticks(p) for p in plots.values()]
    assert ticks[0] and all(t == ticks[0] for t in ticks)
    # both columns together use the view's width (nothing cut off on the right)
    right = plots["power"].sceneBoundingRect().right()
    assert right <= graphs.view.viewport().width()
    assert right >= graphs.view.viewport().width() - 40


def test_pan_on_any_plot_moves_all_and_crosshair_spans_all(qtbot, open_window):
    session = open_window(demo_small(preroll_s=600))
    window = session.window
    window.show_tab("graphs")
    graphs = window.tab_widgets["graphs"]
    qtbot.waitUntil(lambda: graphs.draw_count > 0, timeout=8000)
    (x0, x1), _ = graphs.plots["busy"].getViewBox().viewRange()
    graphs.plots["busy"].getViewBox().translateBy(x=-(x1 - x0) / 4)
    for plot in graphs.plots.values():
        (a, b), _ = plot.getViewBox().viewRange()
        assert a == pytest.approx(x0 - (x1 - x0) / 4) and b == pytest.approx(x1 - (x1 - x0) / 4)
    when = (x0 + x1) / 2
    graphs.show_readout("memory", when)
    assert {line.value() for line in graphs.vlines.values()} == {when}
    assert all(line.isVisible() for line in graphs.vlines.values())
