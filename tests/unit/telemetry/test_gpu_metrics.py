"""gpu_metrics decoding: real dumps against LACT's own snapshot values, and a synthetic table for every
revision in the kernel header, laid out by ctypes (the C compiler's rules, computed independently)."""

from __future__ import annotations

import ctypes
import struct
from pathlib import Path

import pytest

from rocmdesk.host import HostRoot
from rocmdesk.telemetry import gpu_metrics
from rocmdesk.telemetry.backends.sysfs import SysfsBackend
from rocmdesk.telemetry.gpu_metrics import REVISIONS, GpuMetricsError, decode, layout
from tests.support.gpu_metrics_tables import ctypes_struct, synthetic_table
from tests.support.sysfs_tree import GpuSpec, build_root

DUMPS = Path(__file__).resolve().parents[2] / "data" / "lact-sysfs"

# What LACT's test snapshots show for the same dumps (ilya-zlobintsev/LACT,
# lact-daemon/src/tests/snapshots/lact_daemon__tests__amd__<dump>.snap: stats.temps.*.current for the
# display-only sensors, stats.clockspeed.sensors, stats.voltage.sensors, stats.power.sensors).
LACT = {
    "rx6900xt": {"temps": {"vrgfx": 49, "vrsoc": 49, "vrmem": 51}, "clocks": {"socclk": 800, "uclk": 1000},
                 "volts": {"soc": 818, "mem": 1356}},
    "rx7800xt": {"temps": {"vrgfx": 34, "vrsoc": 32, "vrmem": 34},
                 "clocks": {"socclk": 750, "uclk": 456, "vclk0": 25, "dclk0": 25, "vclk1": 25, "dclk1": 25,
                            "gfxclk": 2011},
                 "volts": {"soc": 768, "mem": 704}},
    "rx9070": {"temps": {"vrgfx": 46, "vrsoc": 49, "vrmem": 54},
               "clocks": {"socclk": 1200, "uclk": 1124, "vclk0": 25, "dclk0": 25, "vclk1": 25, "dclk1": 25,
                          "gfxclk": 900},
               "volts": {"soc": 842, "mem": 1345}},
    # LACT lists no VR sensors here (the table holds 0 for them) and VCLK1 25 where the table has 0.
    "rx7600s": {"temps": {}, "clocks": {"socclk": 711, "uclk": 96, "vclk0": 25, "dclk0": 25},
                "volts": {"soc": 727, "mem": 687}},
}


def _table(dump: str) -> bytes:
    return next((DUMPS / dump).glob("card*/device/gpu_metrics")).read_bytes()


@pytest.mark.parametrize("dump", sorted(LACT))
def test_real_dgpu_tables_decode_to_lacts_values(dump):
    metrics = decode(_table(dump))
    expected = LACT[dump]
    assert metrics.revision == "1.3"
    assert {k: v for k, v in metrics.temperature_c.items() if k.startswith("vr")} == expected["temps"]
    for clock, value in expected["clocks"].items():
        assert metrics.clocks_mhz[clock] == value, clock
    for rail, value in expected["volts"].items():
        assert metrics.voltage_mv_by_rail[rail] == value, rail


def test_phoenix_apu_table_decodes_to_lacts_values():
    metrics = decode(_table("phoenix"))
    assert metrics.revision == "2.1"
    assert metrics.power_w_by_rail == {"gfx": 0.585, "soc": 0.743}  # LACT stats.power.sensors
    assert int(metrics.temperature_c["soc"]) == 27  # LACT: 27.0 (it drops the hundredths)
    assert metrics.temperature_c["gfx"] == 25.0  # = hwmon's edge in the same dump
    assert "gfx_busy_percent" in metrics.unavailable and metrics.gfx_busy_percent is None
    assert metrics.throttle == {"active": False, "reasons": [], "indep_status": None, "status": 0}


def test_the_laptop_table_reports_a_throttle_reason_lact_does_not_show():
    """rx7600s: indep_throttle_status has bit 36 (SMU_THROTTLER_TEMP_HOTSPOT_BIT) set at 54 C hotspot;
    LACT's snapshot lists no throttling. rocmdesk shows what the driver reports."""
    metrics = decode(_table("rx7600s"))
    assert metrics.throttle["active"] is True and metrics.throttle["reasons"] == ["thermal (hotspot)"]
    assert metrics.unavailable["temperature_c.vrgfx"] == gpu_metrics.NO_SENSOR


# -- synthetic tables: every revision ---------------------------------------------------------------

@pytest.mark.parametrize("revision", sorted(REVISIONS))
def test_layout_size_is_the_c_layout(revision):
    assert layout(revision).fmt.size == ctypes.sizeof(ctypes_struct(revision)) == gpu_metrics._TABLES[revision][1]


@pytest.mark.parametrize("revision", [r for r in sorted(REVISIONS) if r[0] == 1 and r[1] <= 3])
def test_dgpu_revisions(revision):
    values = {"temperature_edge": 40, "temperature_hotspot": 55, "current_socclk": 1000, "current_fan_speed": 1500,
              "average_socket_power": 120, "throttle_status": 0}
    if revision >= (1, 1):
        values["temperature_hbm"] = [61, 62, 63, 64]
    if revision == (1, 3):
        values.update(voltage_gfx=900, indep_throttle_status=(1 << 0) | (1 << 36) | (1 << 47) | (1 << 60))
    metrics = decode(synthetic_table(revision, **values))
    assert metrics.temperature_c["edge"] == 40 and metrics.temperature_c["junction"] == 55
    assert "temperature_c.vrgfx" in metrics.unavailable  # left all-ones: not supported, with the reason
    assert metrics.clocks_mhz["socclk"] == 1000 and metrics.fan_rpm == 1500 and metrics.power_w == 120
    if revision >= (1, 1):
        assert [metrics.temperature_c[f"hbm{n}"] for n in range(4)] == [61, 62, 63, 64]
    if revision == (1, 3):
        assert metrics.voltage_mv_by_rail == {"gfx": 900}
        assert metrics.throttle["reasons"] == ["power limit (PPT0)", "thermal (hotspot)", "PROCHOT (GFX)", "bit 60"]
    else:
        assert metrics.throttle["active"] is False


@pytest.mark.parametrize("revision", [(1, 4), (1, 5), (1, 6), (1, 7), (1, 8)])
def test_instinct_revisions_have_per_xcd_clocks_and_energy(revision):
    data = synthetic_table(revision, temperature_hotspot=71, temperature_mem=60, curr_socket_power=550,
                      current_gfxclk=[2100, 2090, 0xFFFF, 2080, 2100, 2100, 2100, 2100],
                      current_uclk=1300, energy_accumulator=65536 * 1000,
                      pcie_link_width=16, pcie_link_speed=320)
    metrics = decode(data)
    assert metrics.temperature_c == {"junction": 71, "mem": 60}
    assert metrics.power_w == 550 and metrics.clocks_mhz["uclk"] == 1300
    assert metrics.clocks_mhz["gfxclk_xcd0"] == 2100 and "gfxclk_xcd7" not in metrics.clocks_mhz  # 7 of 8 valid
    assert metrics.clocks_mhz["gfxclk"] == 2100
    assert metrics.energy_j == pytest.approx(1000.0, rel=1e-3)  # 15.259 uJ units
    assert (metrics.pcie_width, metrics.pcie_speed_gts) == (16, 32.0)


@pytest.mark.parametrize("revision", [(2, 0), (2, 1), (2, 2), (2, 3), (2, 4), (3, 0)])
def test_apu_revisions(revision):
    values = {"temperature_gfx": 4550, "temperature_soc": 4725, "average_gfx_power": 5000,
              "average_gfxclk_frequency": 600}
    if revision[0] == 2:
        values.update(average_soc_power=1200, current_gfxclk=1800, average_socket_power=15000)
    else:
        values.update(average_apu_power=21000, average_socket_power=25000)
    if revision >= (2, 2):
        values["indep_throttle_status"] = 1 << 5
    if revision == (2, 4):
        values.update(average_gfx_voltage=850, average_gfx_activity=4250)
    metrics = decode(synthetic_table(revision, **values))
    assert metrics.temperature_c["gfx"] == 45.5 and metrics.temperature_c["soc"] == 47.25
    assert metrics.power_w_by_rail["gfx"] == 5.0
    if revision[0] == 2:
        assert metrics.power_w == 15.0 and metrics.clocks_mhz["gfxclk"] == 1800  # current over average
    else:
        assert metrics.power_w == 25.0 and metrics.power_w_by_rail["apu"] == 21.0
        assert metrics.clocks_mhz["gfxclk"] == 600
    if (2, 2) <= revision < (3, 0):
        assert metrics.throttle["reasons"] == ["power limit (fast PPT)"]
    if revision == (2, 4):
        assert metrics.voltage_mv_by_rail == {"gfx": 850} and metrics.gfx_busy_percent == 42.5


# -- bad input ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("data", "why"), [
    (b"", "shorter than the 4-byte header"),
    (b"\x78\x00\x01", "shorter than the 4-byte header"),
    (struct.pack("<HBB", 120, 9, 9) + bytes(116), "revision 9.9 is not one"),
    (struct.pack("<HBB", 4000, 1, 3) + bytes(116), "says 4000 bytes"),
    (struct.pack("<HBB", 120, 1, 3) + bytes(50), "needs 120 bytes, the file has 54"),
    (bytes(range(256)) * 16, "revision 2.3 says 256 bytes"),  # binary noise: its header is inconsistent
])
def test_bad_tables_are_refused_with_a_reason(data, why):
    with pytest.raises(GpuMetricsError, match=why):
        decode(data)


def test_a_page_padded_read_decodes():
    assert decode(_table("rx6900xt")).revision == "1.3"  # the dump's file is the 4096-byte page


@pytest.mark.parametrize("content", [b"", b"garbage", b"\xff" * 9000])
def test_the_backend_says_why_when_the_table_is_bad(tmp_path, content):
    build_root(tmp_path, [GpuSpec("rx9070", pci="0000:03:00.0", card=0)])
    path = next((tmp_path / "sys").rglob("gpu_metrics"))
    path.unlink()
    path.write_bytes(content)
    sample = SysfsBackend(HostRoot(tmp_path)).sample().gpus[0]
    assert sample.throttle is None and sample.unavailable["throttle"].startswith("gpu_metrics:")
    assert sample.temperature_c["edge"] == 48.0  # hwmon still reads
    assert sample.sclk_mhz == 900  # freq1_input


def test_the_backend_merges_the_table(tmp_path):
    build_root(tmp_path, [GpuSpec("rx9070", pci="0000:03:00.0", card=0)])
    sample = SysfsBackend(HostRoot(tmp_path)).sample().gpus[0]
    assert sample.temperature_c == {"edge": 48.0, "junction": 52.0, "mem": 72.0,
                                    "vrgfx": 46.0, "vrsoc": 49.0, "vrmem": 54.0}
    assert sample.clocks_mhz["socclk"] == 1200 and sample.voltage_mv_by_rail["mem"] == 1345
    assert sample.voltage_mv_by_rail["gfx"] == 790  # hwmon in0 (vddgfx) wins over the table
    assert sample.throttle == {"active": False, "reasons": []}
    assert sample.pcie == {"speed_gts": 32.0, "width": 16}  # this dump has no max_link_* files
    data = sample.to_json()
    assert data["throttle"] == {"active": False, "reasons": []} and data["clocks_mhz"]["uclk"] == 1124


@pytest.mark.parametrize("revision", gpu_metrics.REVISIONS)
def test_the_used_fields_unpack_is_the_full_unpack_restricted(revision):
    """The fast path unpacks only the fields read, skipping the rest: same values as the whole struct."""
    import random

    table = gpu_metrics.layout(revision)
    rng = random.Random(sum(revision))
    for _ in range(5):
        data = bytes(rng.getrandbits(8) for _ in range(table.fmt.size))
        full = table.fmt.unpack_from(data)
        assert table.used_fmt.unpack_from(data) == tuple(full[i] for i, _, _ in table.used)
    assert table.used_names == tuple(n for _, n, _ in table.used) and table.used_fmt.size <= table.fmt.size
