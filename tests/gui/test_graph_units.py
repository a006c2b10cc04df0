"""The Graphs tab follows the °C/°F choice: axis label, curves and read-out agree."""

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
