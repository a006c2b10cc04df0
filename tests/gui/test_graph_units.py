"""Graphs tab: the °C/°F choice reaches axis label and curves; a failed CSV export leaves nothing behind."""

from __future__ import annotations

import pytest

from tests.gui.conftest import FakeBackend, fake_source

pytestmark = pytest.mark.gui


def test_switching_to_fahrenheit_relabels_the_temperature_axis(qtbot, open_window, manual_factory):
    session = open_window(fake_source(FakeBackend(1)), sampler_factory=manual_factory)
    window = session.window
    sampler = manual_factory.made[0]
    for _ in range(3):
        sampler.tick()
    window.show_tab("graphs")
    graphs = window.tab_widgets["graphs"]
    axis = graphs.plots["temp"].getAxis("left")
    assert axis.labelText == "°C"

    window.unit_combo.setCurrentIndex(window.unit_combo.findData("F"))
    before = graphs.draw_count
    qtbot.waitUntil(lambda: graphs.draw_count > before, timeout=3000)
    assert axis.labelText == "°F"
    # the curves are in °F too (junction 60-68 °C is 140-154 °F), and so is the value range
    junction = next(c for c in graphs.curves if c.key == "temperature_c.junction")
    _x, y = junction.item.getData()
    assert y is not None and len(y) and 139 <= float(y[-1]) <= 155
    (_lo, hi) = graphs.plots["temp"].getViewBox().viewRange()[1]
    assert hi > 150

    window.unit_combo.setCurrentIndex(window.unit_combo.findData("C"))
    assert axis.labelText == "°C"


def test_a_failed_csv_export_leaves_no_partial_file(qtbot, open_window, manual_factory, tmp_path):
    session = open_window(fake_source(FakeBackend(1)), sampler_factory=manual_factory)
    for _ in range(2):
        manual_factory.made[0].tick()
    session.window.show_tab("graphs")
    graphs = session.window.tab_widgets["graphs"]
    target = tmp_path / "history.csv"
    target.mkdir()  # the final rename fails after the rows were written
    with pytest.raises(OSError):
        graphs.export_csv(str(target))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history.csv"]


def test_old_event_markers_leave_the_plots(qtbot, open_window, manual_factory):
    import time

    from rocmdesk.ui.feed import GpuEvent

    session = open_window(fake_source(FakeBackend(1)), sampler_factory=manual_factory)
    manual_factory.made[0].tick()
    graphs = session.window.tab_widgets["graphs"]
    for n in range(60):  # a GPU that keeps resetting: the newest 50 markers stay
        session.feed.add_event(GpuEvent("0000:03:00.0", "card0", "reset", f"reset {n}", time.time() + n))
    for name, plot in graphs.plots.items():
        markers = [item for item in plot.items if item in graphs.markers]
        stale = [item for item in plot.items if item not in graphs.markers and item is not graphs.vlines[name]
                 and type(item).__name__ == "InfiniteLine"]
        assert len(markers) == 50 and stale == [], name
