"""Overview card details: PCIe link, voltage, VBIOS, performance level and profile, N/A with reasons."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rocmdesk.host import HostRoot
from rocmdesk.telemetry.backends.sysfs import SysfsBackend
from rocmdesk.telemetry.model import GpuSample
from rocmdesk.ui import card_details
from rocmdesk.ui.formatting import NA
from tests.gui.conftest import FakeBackend, fake_source, make_info, make_sample
from tests.support.sysfs_tree import GpuSpec, build_root


def _real(tmp_path, dump: str) -> GpuSample:
    root = build_root(tmp_path / dump, [GpuSpec(dump, card=1)])
    backend = SysfsBackend(HostRoot(root))
    backend.discover()
    return backend.sample().gpus[0]


def test_vega56_dump_shows_every_detail(tmp_path):
    rows = {caption: (text, tip) for caption, text, tip in card_details.rows(_real(tmp_path, "vega56"))}
    # read by hand from tests/data/lact-sysfs/vega56: 8.0 GT/s x16 now and max, in0 762 mV, auto, BOOTUP_DEFAULT
    assert rows["PCIe"][0] == "Gen3 x16 (max)"
    assert rows["Voltage"][0] == "762 mV"
    assert rows["Perf level"][0] == "auto"
    assert rows["Profile"][0] == "BOOTUP_DEFAULT"
    assert rows["VBIOS"][0] == "115-D050PIL-100"


def test_radeon_dump_says_why_each_is_missing(tmp_path):
    rows = {caption: (text, tip) for caption, text, tip in card_details.rows(_real(tmp_path, "hd7870"))}
    assert rows["PCIe"][0] == "Gen3 x1 (max N/A)" and "not reported" in rows["PCIe"][1]
    for caption in ("Voltage", "Perf level", "Profile", "VBIOS"):
        text, tip = rows[caption]
        assert text == NA and tip and tip != "this backend did not report it", caption
    assert "radeon" in rows["VBIOS"][1]


def _sample(**kw) -> GpuSample:
    return replace(make_sample(make_info(0), 0.0), **kw)


def test_link_below_its_maximum_says_it_may_be_idle():
    _caption, text, tip = card_details.pcie_row(
        _sample(pcie={"speed_gts": 2.5, "width": 4.0, "max_speed_gts": 32.0, "max_width": 16.0}))
    assert text == "Gen1 x4 of max Gen5 x16"
    assert "idle" in tip and "riser" in tip


def test_unknown_rate_and_missing_link():
    assert card_details.fmt_link(20.0, 8) == "20 GT/s x8"  # not a PCIe generation's rate: said as is
    assert card_details.fmt_link(None, None) is None
    missing = _sample(pcie=None, unavailable={"pcie": "no PCIe link attributes (current_link_speed)"})
    assert card_details.pcie_row(missing) == ("PCIe", NA, "no PCIe link attributes (current_link_speed)")
    # a boolean is not a width, a NaN is not a speed
    assert card_details.fmt_link(float("nan"), True) is None


def test_voltage_by_rail_without_the_core_voltage():
    _, text, _ = card_details.voltage_row(_sample(voltage_mv=None, voltage_mv_by_rail={"soc": 780.0, "gfx": 850.0}))
    assert text == "gfx 850 mV · soc 780 mV"
    _, text, _ = card_details.voltage_row(_sample(voltage_mv=850.0, voltage_mv_by_rail={"gfx": 850.0, "soc": 780.0}))
    assert text == "850 mV · soc 780 mV"


@pytest.mark.gui
@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080)])
def test_details_are_on_every_card_and_not_clipped(qtbot, open_window, manual_factory, size):
    def sample(info, t, i):
        s = make_sample(info, t, i)
        s.pcie = {"speed_gts": 16.0, "width": 8.0, "max_speed_gts": 32.0, "max_width": 16.0}
        s.voltage_mv, s.performance_level, s.power_profile = 1050.0, "auto", "3D_FULL_SCREEN"
        return s

    backend = FakeBackend(8, sample_fn=sample)
    backend.infos = [replace(i, vbios="113-D70401XT-N11") for i in backend.infos]
    session = open_window(fake_source(backend), sampler_factory=manual_factory, size=size)
    session.window.show_tab("overview")
    overview = session.window.tab_widgets["overview"]
    manual_factory.made[0].tick()
    qtbot.waitUntil(lambda: len(overview.cards) == 8 and all(c.sample for c in overview.cards.values()),
                    timeout=3000)
    qtbot.wait(30)
    for card in overview.cards.values():
        shown = {caption: value for caption, (_, value) in card.detail_rows.items()}
        assert shown["PCIe"].text() == "Gen4 x8 of max Gen5 x16"
        assert shown["Profile"].text() == "3D_FULL_SCREEN" and shown["VBIOS"].text() == "113-D70401XT-N11"
        for caption, value in shown.items():
            needed = value.fontMetrics().horizontalAdvance(value.text())
            assert value.isVisible() and value.width() >= needed, (caption, value.width(), needed, size)
            assert card.rect().contains(value.geometry()), caption
