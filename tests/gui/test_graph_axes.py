"""The four graphs share one time axis: same range, same width, same ticks; pan and crosshair move all."""

from __future__ import annotations

import time

import pytest

from tests.gui.conftest import demo_small

pytestmark = pytest.mark.gui


def _ticks(plot):
    vb = plot.getViewBox()
    (x0, x1), _ = vb.viewRange()
    return [(round(sp), [round(v) for v in vs]) for sp, vs in plot.getAxis("bottom").tickValues(x0, x1, vb.width())]


@pytest.mark.parametrize("layout", ["overlay", "multiples"])
@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080), (1000, 700)])
def test_time_axes_have_the_same_range_width_and_ticks(qtbot, open_window, size, layout):
    session = open_window(demo_small(preroll_s=600), size=size)
    window = session.window
    window.show_tab("graphs")
    graphs = window.tab_widgets["graphs"]
    qtbot.waitUntil(lambda: len(graphs.known) == 8, timeout=8000)
    graphs.set_layout(layout)
    assert len(graphs.plots) == (6 if layout == "overlay" else 8)  # six metrics, or eight GPUs
    first = next(iter(graphs.plots.values()))
    qtbot.waitUntil(lambda: graphs.draw_count > 0 and first.getViewBox().width() > 100, timeout=8000)
    qtbot.wait(50)
    plots = graphs.plots
    widths = [p.getViewBox().width() for p in plots.values()]
    assert max(widths) - min(widths) <= 1.5, widths
    ranges = {tuple(round(v, 3) for v in p.getViewBox().viewRange()[0]) for p in plots.values()}
    assert len(ranges) == 1
    ticks = [_ticks(p) for p in plots.values()]
    assert ticks[0] and all(t == ticks[0] for t in ticks)
    # both columns together use the view's width (nothing cut off on the right)
    right = max(p.sceneBoundingRect().right() for p in plots.values())
    assert right <= graphs.view.viewport().width()
    assert right >= graphs.view.viewport().width() - 40


def test_pan_on_any_plot_moves_all_and_crosshair_spans_all(qtbot, open_window):
    session = open_window(demo_small(preroll_s=600))
    window = session.window
    window.show_tab("graphs")
    graphs = window.tab_widgets["graphs"]
    qtbot.waitUntil(lambda: graphs.draw_count > 0 and len(graphs.known) == 8, timeout=8000)
    graphs.set_layout("overlay")
    (x0, x1), _ = graphs.plots["busy"].getViewBox().viewRange()
    graphs.plots["busy"].getViewBox().translateBy(x=-(x1 - x0) / 4)
    for plot in graphs.plots.values():
        (a, b), _ = plot.getViewBox().viewRange()
        assert a == pytest.approx(x0 - (x1 - x0) / 4) and b == pytest.approx(x1 - (x1 - x0) / 4)
    when = (x0 + x1) / 2
    graphs.show_readout("memory", when)
    assert {line.value() for line in graphs.vlines.values()} == {when}
    assert all(line.isVisible() for line in graphs.vlines.values())


# -- value axes: zoom and pan one plot's values, time stays linked -----------------------------------


def _graphs(qtbot, open_window, manual_factory):
    from tests.gui.conftest import FakeBackend, fake_source

    session = open_window(fake_source(FakeBackend(2)), sampler_factory=manual_factory, size=(1400, 900))
    sampler = manual_factory.made[0]
    for _ in range(3):
        sampler.tick()
    window = session.window
    window.show_tab("graphs")
    graphs = window.tab_widgets["graphs"]
    graphs.set_window(60)
    qtbot.waitUntil(lambda: graphs.draw_count > 0 and graphs.plots["temp"].getViewBox().width() > 100, timeout=8000)
    graphs.redraw()
    return graphs, sampler


def _view_point(graphs, item, where=None):
    """Viewport coordinates of an item's centre (or of a scene point)."""
    scene = item.sceneBoundingRect().center() if where is None else where
    return graphs.view.mapFromScene(scene)


def _wheel(graphs, item, steps=1, where=None):
    from PySide6 import QtCore, QtGui, QtWidgets

    pos = QtCore.QPointF(_view_point(graphs, item, where))
    glob = QtCore.QPointF(graphs.view.viewport().mapToGlobal(pos.toPoint()))
    event = QtGui.QWheelEvent(pos, glob, QtCore.QPoint(0, 0), QtCore.QPoint(0, 120 * steps),
                              QtCore.Qt.MouseButton.NoButton, QtCore.Qt.KeyboardModifier.NoModifier,
                              QtCore.Qt.ScrollPhase.NoScrollPhase, False)
    QtWidgets.QApplication.sendEvent(graphs.view.viewport(), event)


def _mouse(graphs, kind, pos, button, buttons):
    from PySide6 import QtCore, QtGui, QtWidgets

    types = {"press": QtCore.QEvent.Type.MouseButtonPress, "move": QtCore.QEvent.Type.MouseMove,
             "release": QtCore.QEvent.Type.MouseButtonRelease, "double": QtCore.QEvent.Type.MouseButtonDblClick}
    local = QtCore.QPointF(pos)
    glob = QtCore.QPointF(graphs.view.viewport().mapToGlobal(pos))
    event = QtGui.QMouseEvent(types[kind], local, glob, button, buttons, QtCore.Qt.KeyboardModifier.NoModifier)
    QtWidgets.QApplication.sendEvent(graphs.view.viewport(), event)


def _ranges(graphs):
    return {name: [tuple(r) for r in plot.getViewBox().viewRange()] for name, plot in graphs.plots.items()}


def test_wheel_over_the_value_axis_zooms_that_plot_only_and_auto_y_restores_it(qtbot, open_window, manual_factory):
    from PySide6 import QtCore

    graphs, sampler = _graphs(qtbot, open_window, manual_factory)
    assert not graphs.auto_y_button.isVisible()
    before = _ranges(graphs)
    _wheel(graphs, graphs.plots["power"].getAxis("left"), steps=3)
    after = _ranges(graphs)
    (p0, p1), (q0, q1) = before["power"][1], after["power"][1]
    assert (q1 - q0) < (p1 - p0) * 0.95  # zoomed in on the values
    for name in ("temp", "memory", "busy"):
        assert after[name][1] == before[name][1]  # other plots keep their value range
    assert {r[0] for r in after.values()} == {before["temp"][0]}  # time untouched, still shared
    assert graphs.follow and not graphs.live_button.isVisible()
    assert graphs.y_zoomed == {"power"} and graphs.auto_y_button.isVisible()
    # live data keeps scrolling the time axis, but the user's value zoom stays
    draws = graphs.draw_count
    time.sleep(0.02)
    sampler.tick()
    graphs.redraw()
    assert graphs.draw_count > draws
    assert _ranges(graphs)["power"][1] == after["power"][1]
    # Auto Y: back to the range the data asks for
    qtbot.mouseClick(graphs.auto_y_button, QtCore.Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: _ranges(graphs)["power"][1] == before["power"][1], timeout=3000)
    assert not graphs.y_zoomed and not graphs.auto_y_button.isVisible()


def test_wheel_inside_a_plot_zooms_time_on_all_four_and_keeps_values(qtbot, open_window, manual_factory):
    graphs, _ = _graphs(qtbot, open_window, manual_factory)
    before = _ranges(graphs)
    _wheel(graphs, graphs.plots["temp"].getViewBox(), steps=2)
    after = _ranges(graphs)
    (a0, a1), (b0, b1) = before["temp"][0], after["temp"][0]
    assert (b1 - b0) < (a1 - a0)
    assert len({r[0] for r in after.values()}) == 1  # the four time axes stay linked
    assert all(after[n][1] == before[n][1] for n in graphs.plots)
    assert not graphs.follow and graphs.live_button.isVisible() and not graphs.y_zoomed


def test_drag_on_the_value_axis_pans_values_and_double_click_restores(qtbot, open_window, manual_factory):
    from PySide6 import QtCore

    graphs, _ = _graphs(qtbot, open_window, manual_factory)
    before = _ranges(graphs)
    axis = graphs.plots["temp"].getAxis("left")
    start = _view_point(graphs, axis)
    left, none = QtCore.Qt.MouseButton.LeftButton, QtCore.Qt.MouseButton.NoButton
    _mouse(graphs, "press", start, left, left)
    for dy in (10, 20, 40, 60):
        _mouse(graphs, "move", start + QtCore.QPoint(0, dy), none, left)
    _mouse(graphs, "release", start + QtCore.QPoint(0, 60), left, none)
    after = _ranges(graphs)
    (a0, a1), (b0, b1) = before["temp"][1], after["temp"][1]
    assert b0 > a0 and b1 > a1 and (b1 - b0) == pytest.approx(a1 - a0)  # dragged down: shows higher values
    assert after["temp"][0] == before["temp"][0] and graphs.follow
    assert graphs.y_zoomed == {"temp"}
    # a double-click on that axis hands it back to the automatic range
    _mouse(graphs, "press", start, left, left)
    _mouse(graphs, "release", start, left, none)
    _mouse(graphs, "double", start, left, left)
    _mouse(graphs, "release", start, left, none)
    qtbot.waitUntil(lambda: _ranges(graphs)["temp"][1] == before["temp"][1], timeout=3000)
    assert not graphs.y_zoomed


def test_busy_plot_returns_to_0_100(qtbot, open_window, manual_factory):
    graphs, _ = _graphs(qtbot, open_window, manual_factory)
    _wheel(graphs, graphs.plots["busy"].getAxis("left"), steps=-4)  # zoom out
    lo, hi = graphs.plots["busy"].getViewBox().viewRange()[1]
    assert hi - lo > 110
    graphs.auto_y()
    lo, hi = graphs.plots["busy"].getViewBox().viewRange()[1]
    assert lo == pytest.approx(-2) and hi == pytest.approx(102)
