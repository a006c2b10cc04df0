"""The MI300X demo carries the GPU's own temperature limits, and the Overview colours against them."""

from __future__ import annotations

import pytest

from rocmdesk.telemetry.recording import load_recording
from rocmdesk.ui import theme
from rocmdesk.ui.formatting import Level, temp_level
from tests.gui.conftest import demo_small

pytestmark = pytest.mark.gui


def test_mi300x_recording_has_junction_and_mem_limits_only():
    recording = load_recording("mi300x-node")
    for sample in recording.gpu_samples(0, 0.0):
        # GC 9.4.3 exposes temp2 (junction) and temp3 (mem) crit/emergency, nothing for edge
        assert set(sample.temperature_crit_c) == {"junction", "mem"}
        assert set(sample.temperature_emergency_c) == {"junction", "mem"}
        for sensor in ("junction", "mem"):
            assert sample.temperature_crit_c[sensor] < sample.temperature_emergency_c[sensor]
        assert "edge" not in sample.temperature_c


def test_mi300x_temperatures_stay_below_the_limits_but_not_far_below():
    """Training at the power cap warms the GPUs towards (not past) their throttle limits."""
    recording = load_recording("mi300x-node")
    hottest = {"junction": 0.0, "mem": 0.0}
    for index in range(len(recording.frames)):
        for sample in recording.gpu_samples(index, 0.0):
            for sensor in hottest:
                hottest[sensor] = max(hottest[sensor], sample.temperature_c[sensor])
            crit = sample.temperature_crit_c
    for sensor, value in hottest.items():
        assert 0 < crit[sensor] - value <= 30, (sensor, value, crit[sensor])


def test_overview_colours_mi300x_temperatures_against_its_limits(qtbot, open_window):
    session = open_window(demo_small(preroll_s=60))
    overview = session.window.tab_widgets["overview"]
    qtbot.waitUntil(lambda: len(overview.cards) == 8, timeout=8000)
    card = next(iter(overview.cards.values()))
    qtbot.waitUntil(lambda: card.sample is not None, timeout=5000)
    sample = card.sample
    pal = theme.current()
    for sensor in ("junction", "mem"):
        readout = card.temps[sensor]
        tip = readout.value.toolTip()
        assert f"critical at {sample.temperature_crit_c[sensor]:.0f}" in tip and "emergency shutdown at" in tip
        level = temp_level(sample.temperature_c[sensor], sample.temperature_crit_c[sensor])
        assert level is not Level.UNKNOWN
        assert readout.value.color() == pal.level(level)
