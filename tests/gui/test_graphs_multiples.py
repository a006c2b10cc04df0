"""Graphs: small multiples for many GPUs, clocks and fan plots, throttling shaded with its reasons,
HiDPI line widths, and a read-out that goes when the mouse leaves."""

from __future__ import annotations

import pytest
from PySide6 import QtCore, QtWidgets

from tests.gui.conftest import FakeBackend, demo_small, fake_source, make_sample

pytestmark = pytest.mark.gui

PPT = {"active": True, "reasons": ["power limit (PPT0)"]}


def _ticks(qtbot, session, manual_factory, n):
    stamps = []
    for _ in range(n):
        snap = manual_factory.made[0].tick()
        qtbot.waitUntil(lambda snap=snap: session.feed.last_snapshot is snap, timeout=3000)
        stamps.append(snap.timestamp)
    return stamps


def _demo_graphs(qtbot, open_window, size=(1920, 1080)):
    session = open_window(demo_small(preroll_s=900), size=size)
    session.window.show_tab("graphs")
    graphs = session.window.tab_widgets["graphs"]
    qtbot.waitUntil(lambda: len(graphs.known) == 8 and not session.feed.loading and graphs.draw_count > 0,
                    timeout=8000)
    graphs.set_window(900)
    graphs.redraw()
    return session, graphs


def test_eight_gpus_start_as_small_multiples_on_shared_axes(qtbot, open_window):
    session, graphs = _demo_graphs(qtbot, open_window)
    pcis = [i.pci for i in graphs.known.values()]
    assert graphs.multiples() and list(graphs.plots) == [f"temp@{p}" for p in pcis]
    assert graphs.multiples_button.isChecked() and graphs.metric_combo.isVisibleTo(graphs)
    # each plot holds its own GPU's curves only, in the GPU's colour
    for pid in graphs.plots:
        mine = {c.pci for c in graphs.curves if c.plot == pid}
        assert mine == {pid.split("@")[1]}
    # shared axes: one value range and one time range for all eight
    ranges = {tuple(round(v, 3) for v in p.getViewBox().viewRange()[1]) for p in graphs.plots.values()}
    times = {tuple(round(v, 3) for v in p.getViewBox().viewRange()[0]) for p in graphs.plots.values()}
    assert len(ranges) == 1 and len(times) == 1
    # value labels on the left column only, time labels on the bottom row only (2 rows x 4)
    specs = list(graphs.grid.specs.values())
    assert [s.y_values for s in specs] == [True, False, False, False] * 2
    assert [s.x_values for s in specs] == [False] * 4 + [True] * 4
    # the toggle overlays them again, one plot per metric; the choice is remembered
    graphs.multiples_button.setChecked(False)
    assert list(graphs.plots) == ["temp", "power", "memory", "busy", "clocks", "fan"]
    assert session.ctx.settings.graph_layout == "overlay"
    graphs.multiples_button.setChecked(True)
    graphs.set_metric("clocks")
    assert list(graphs.plots) == [f"clocks@{p}" for p in pcis]
    graphs.redraw()
    keys = {c.key for c in graphs.curves}
    assert keys == {"sclk_mhz", "mclk_mhz"}
    assert all(len(c.item.xData) > 10 for c in graphs.curves)


def test_few_gpus_overlay_with_clocks_and_fan(qtbot, open_window, manual_factory):
    session = open_window(fake_source(FakeBackend(2)), sampler_factory=manual_factory, size=(1280, 800))
    for _ in range(4):
        manual_factory.made[0].tick()
    session.window.show_tab("graphs")
    graphs = session.window.tab_widgets["graphs"]
    graphs.set_window(60)
    qtbot.waitUntil(lambda: graphs.draw_count > 0, timeout=5000)
    graphs.redraw()
    assert not graphs.multiples() and list(graphs.plots) == ["temp", "power", "memory", "busy", "clocks", "fan"]
    by_plot = {}
    for curve in graphs.curves:
        by_plot.setdefault(curve.plot, set()).add(curve.key)
    assert by_plot["clocks"] == {"sclk_mhz", "mclk_mhz"} and by_plot["fan"] == {"fan_percent"}
    sclk = next(c for c in graphs.curves if c.key == "sclk_mhz")
    assert list(sclk.item.yData) == [2000.0] * 4
    assert graphs.plots["fan"].getViewBox().viewRange()[1] == pytest.approx([-2, 102])  # 0-100 %
    assert 2000 < graphs.plots["clocks"].getViewBox().viewRange()[1][1] <= 2500
    text = graphs.show_readout("clocks", session.feed.last_snapshot.timestamp)
    assert "card0 · RX 7900 XTX sclk: 2000 MHz" in text and "mclk: 1250 MHz" in text
    # a single GPU is never small multiples, whatever the setting
    graphs.set_layout("multiples")
    assert len(graphs.plots) == 2
    graphs.gpu_combo.setCurrentIndex(1)
    assert list(graphs.plots) == ["temp", "power", "memory", "busy", "clocks", "fan"]


def test_throttling_is_shaded_and_explained_in_the_readout(qtbot, open_window, manual_factory):
    def sample_fn(info, t, i):
        s = make_sample(info, t, i)
        s.throttle = PPT if 2 <= i <= 4 and info.card == "card0" else {"active": False, "reasons": []}
        return s

    session = open_window(fake_source(FakeBackend(2, sample_fn)), sampler_factory=manual_factory)
    stamps = _ticks(qtbot, session, manual_factory, 7)
    session.window.show_tab("graphs")
    graphs = session.window.tab_widgets["graphs"]
    graphs.set_window(60)
    graphs.redraw()
    pci0 = graphs.shown_gpus()[0].pci
    spans = list(session.feed.history[pci0].throttle.spans)
    assert len(spans) == 1 and spans[0].reasons == ("power limit (PPT0)",)
    # the sampler's counter i starts where FakeBackend left it: find the throttled samples by time
    assert spans[0].start in stamps and spans[0].end in stamps and spans[0].end > spans[0].start
    for band in graphs.grid.bands.values():  # overlaid: every plot shows it
        assert band.spans == [(spans[0].start, spans[0].end)]
    middle = (spans[0].start + spans[0].end) / 2
    text = graphs.show_readout("power", middle)
    assert "⚠ card0 · RX 7900 XTX throttled since" in text and "power limit (PPT0)" in text
    assert "throttled" not in graphs.readout_text("power", spans[0].end + 0.5)
    # small multiples: only card0's plot is shaded
    graphs.set_layout("multiples")
    graphs.redraw()
    shaded = {pid for pid, band in graphs.grid.bands.items() if band.spans}
    assert shaded == {f"temp@{pci0}"}


def test_line_widths_follow_the_device_pixel_ratio(qtbot, open_window, manual_factory, monkeypatch):
    from rocmdesk.ui.graphs_tab import GraphsTab

    session = open_window(fake_source(FakeBackend(2)), sampler_factory=manual_factory)
    _ticks(qtbot, session, manual_factory, 1)
    graphs = session.window.tab_widgets["graphs"]
    widths = {c.key: c.item.opts["pen"].widthF() for c in graphs.curves}
    assert widths["power_w"] == 1.0
    monkeypatch.setattr(GraphsTab, "devicePixelRatioF", lambda self: 2.0)
    graphs.rebuild()
    assert graphs.line_scale == 2.0
    assert {c.key: c.item.opts["pen"].widthF() for c in graphs.curves} == {k: 2 * w for k, w in widths.items()}
    assert all(c.item.opts["pen"].isCosmetic() for c in graphs.curves)


def test_readout_hides_when_the_mouse_leaves(qtbot, open_window, manual_factory):
    session = open_window(fake_source(FakeBackend(1)), sampler_factory=manual_factory)
    _ticks(qtbot, session, manual_factory, 3)
    session.window.show_tab("graphs")
    graphs = session.window.tab_widgets["graphs"]
    graphs.show_readout("temp", session.feed.last_snapshot.timestamp)
    assert graphs.tip.isVisible() and all(v.isVisible() for v in graphs.vlines.values())
    QtWidgets.QApplication.sendEvent(graphs.view.viewport(), QtCore.QEvent(QtCore.QEvent.Type.Leave))
    assert not graphs.tip.isVisible() and not any(v.isVisible() for v in graphs.vlines.values())
