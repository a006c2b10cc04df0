"""SysfsBackend on the real LACT dumps and the hand-built Instinct trees.

Expected numbers were worked out by hand from the dump files (e.g. rx580 ``pwm1`` 35 of
``pwm1_max`` 255 = 13.7 %, ``power1_average`` 41045000 µW = 41.045 W).
"""

from __future__ import annotations

import os
import shutil

import pytest

from rocmdesk.host import HostRoot
from rocmdesk.telemetry.backends.base import Backend
from rocmdesk.telemetry.backends.sysfs import SysfsBackend
from rocmdesk.telemetry.model import SCALAR_METRICS, GpuKind
from tests.support.instinct import instinct_specs
from tests.support.sysfs_tree import LACT_DUMPS, GpuSpec, build_root


@pytest.fixture(scope="module")
def lact(tmp_path_factory):
    root = tmp_path_factory.mktemp("lact")
    build_root(root, [GpuSpec(d, pci=f"0000:{i + 1:02x}:00.0", card=i) for i, d in enumerate(LACT_DUMPS)])
    backend = SysfsBackend(HostRoot(root))
    backend.discover()
    snap = backend.sample()
    return {LACT_DUMPS[int(g.info.card[4:])]: g for g in snap.gpus}, snap


def test_every_dump_samples_without_errors(lact):
    samples, snap = lact
    assert snap.errors == [] and snap.backend == "sysfs"
    assert sorted(samples) == LACT_DUMPS
    for dump, sample in samples.items():
        for key in SCALAR_METRICS:
            if sample.get(key) is None:
                assert key in sample.unavailable, (dump, key)
                assert sample.unavailable[key], (dump, key)
        for key in ("edge", "junction", "mem"):
            assert key in sample.temperature_c or f"temperature_c.{key}" in sample.unavailable, (dump, key)


def test_rx7900xtx(lact):
    s = lact[0]["rx7900xtx"]
    assert s.temperature_c == {"edge": 53.0, "junction": 61.0, "mem": 68.0}
    assert s.temperature_crit_c == {"edge": 100.0, "junction": 110.0, "mem": 108.0}
    assert s.temperature_emergency_c == {"edge": 105.0, "junction": 115.0, "mem": 113.0}
    assert (s.power_w, s.power_cap_w, s.power_cap_min_w, s.power_cap_max_w, s.power_cap_default_w) == (
        68.0, 290.0, 261.0, 333.0, 290.0)
    assert (s.gpu_busy_percent, s.sclk_mhz, s.mclk_mhz) == (3, 31, 1249)
    assert (s.fan_rpm, s.fan_percent, s.voltage_mv) == (0, 0.0, 686.0)
    assert (s.performance_level, s.power_profile) == ("auto", "BOOTUP_DEFAULT")
    # This dump has no mem_info_* files: N/A with a reason, not 0.
    assert s.vram_used_bytes is None and "VRAM" in s.unavailable["vram_used_bytes"]
    assert s.mem_busy_percent is None


def test_rx580(lact):
    s = lact[0]["rx580"]
    assert s.temperature_c == {"edge": 44.0}
    assert s.unavailable["temperature_c.junction"] == "this GPU has no junction sensor"
    assert s.power_w == 41.045 and s.power_cap_min_w == 0.0 and s.power_cap_max_w == 201.0
    assert (s.vram_used_bytes, s.vram_total_bytes) == (536870912, 4294967296)
    assert (s.gtt_used_bytes, s.gtt_total_bytes) == (92377088, 8342712320)
    assert (s.gpu_busy_percent, s.mem_busy_percent) == (11, 2)
    assert (s.sclk_mhz, s.mclk_mhz) == (798, 1750)  # the actual clocks (hwmon freq1_input, freq2_input)
    assert (s.sclk_dpm_mhz, s.mclk_dpm_mhz) == (900, 1750)  # the `*` levels of pp_dpm_*, as rocm-smi shows
    assert (s.fan_rpm, s.fan_percent) == (595, 13.7)
    assert s.power_profile == "3D_FULL_SCREEN"


def test_apus(lact):
    phoenix = lact[0]["phoenix"]
    assert phoenix.power_w == 3.142  # power1_input preferred over power1_average (3.103)
    assert (phoenix.vram_used_bytes, phoenix.gtt_total_bytes) == (1272893440, 31433977856)
    assert (phoenix.sclk_mhz, phoenix.mclk_mhz, phoenix.voltage_mv) == (800, 400, 814.0)
    assert phoenix.fan_rpm is None and "fan" in phoenix.unavailable["fan_rpm"]
    vangogh = lact[0]["vangogh"]
    assert vangogh.power_w == 4.057 and vangogh.mclk_dpm_mhz == 687
    assert vangogh.mclk_mhz is None and "actual mclk" in vangogh.unavailable["mclk_mhz"]
    assert vangogh.power_profile is None
    assert vangogh.unavailable["power_profile"] == "no active profile marked in the table"


def test_clock_fallback_and_other_layouts(lact):
    r7 = lact[0]["r7-240"]  # empty pp_dpm_* tables: freq1_input/freq2_input by label
    assert (r7.sclk_mhz, r7.mclk_mhz, r7.fan_percent) == (400, 1150, 40.4)
    rx7600s = lact[0]["rx7600s"]
    assert (rx7600s.power_profile, rx7600s.performance_level) == ("VR", "manual")
    navi21 = lact[0]["rx6900xt"]  # NUL-padded files
    # hwmon's three sensors, and the voltage regulators' from gpu_metrics 1.3 (LACT shows the same 49/49/51)
    assert navi21.temperature_c == {"edge": 56.0, "junction": 59.0, "mem": 54.0,
                                    "vrgfx": 49.0, "vrsoc": 49.0, "vrmem": 51.0}
    assert (navi21.vram_used_bytes, navi21.gpu_busy_percent, navi21.mem_busy_percent) == (668274688, 3, 0)
    rx9070 = lact[0]["rx9070"]
    assert (rx9070.sclk_mhz, rx9070.mclk_mhz, rx9070.fan_rpm, rx9070.fan_percent) == (900, 1124, 1944, 45.9)
    assert rx9070.sclk_dpm_mhz == 789  # LACT: gpu_clockspeed 900, the active power state 789 MHz
    assert rx9070.power_cap_w == 200.0 and rx9070.power_cap_default_w == 220.0


def test_radeon_card(lact):
    s = lact[0]["hd7870"]
    assert s.temperature_c == {"temp1": 27.0}  # no temp1_label: named after the file
    assert s.fan_percent == 20.0
    assert s.unavailable["vram_used_bytes"] == "not on amdgpu (radeon driver)"
    assert s.unavailable["gpu_busy_percent"] == "not on amdgpu (radeon driver)"


def test_json_contract(lact):
    data = lact[1].to_json()
    gpu = next(g for g in data["gpus"] if g["name"] == "AMD Radeon RX 7900 XT/7900 XTX")
    assert gpu["gfx_target"] == "gfx1100" and gpu["temperature_c"]["junction"] == 61.0
    assert gpu["vram_used_bytes"] is None and "vram_used_bytes" in gpu["unavailable"]


def _instinct_root(tmp_path, model, count=1):
    build_root(tmp_path / "root", instinct_specs(tmp_path / "dumps", model, count))
    backend = SysfsBackend(HostRoot(tmp_path / "root"))
    backend.discover()
    return backend


def test_mi300x(tmp_path):
    s = _instinct_root(tmp_path, "mi300x").sample().gpus[0]
    assert s.info.gfx_target == "gfx942" and s.info.kind is GpuKind.INSTINCT
    # temp2_input 43250 (junction), temp3_input 47375 (mem); no temp1 at all.
    assert s.temperature_c == {"junction": 43.25, "mem": 47.375}
    assert s.unavailable["temperature_c.edge"] == "this GPU has no edge sensor"
    assert s.power_w == 90.000123  # power1_input 90000123 µW
    assert s.power_cap_w == 750.0
    assert (s.vram_total_bytes, s.vram_used_bytes) == (192 << 30, 3 << 30)
    assert s.voltage_mv == 780.0  # in0_input without in0_label
    assert s.fan_rpm is None and s.fan_percent is None
    assert (s.sclk_dpm_mhz, s.mclk_dpm_mhz, s.gpu_busy_percent) == (1100, 1300, 7)
    assert s.sclk_mhz is None and "actual sclk" in s.unavailable["sclk_mhz"]  # this tree has no gpu_metrics


def test_mi210(tmp_path):
    s = _instinct_root(tmp_path, "mi210").sample().gpus[0]
    assert s.temperature_c == {"edge": 39.125, "junction": 43.25, "mem": 47.375}
    assert s.power_w == 90.000123  # power1_average only on MI200
    assert s.voltage_mv == 806.0 and s.vram_total_bytes == 64 << 30


def test_mi250x_secondary_die_has_no_power(tmp_path):
    primary, secondary = _instinct_root(tmp_path, "mi250x").sample().gpus
    assert primary.power_w == 90.000123 and primary.power_cap_w == 560.0
    assert secondary.power_w is None and secondary.power_cap_w is None
    assert "secondary die" in secondary.unavailable["power_w"]
    assert secondary.temperature_c["junction"] == 44.25  # the die's own sensors still read


def test_eight_mi300x(tmp_path):
    backend = _instinct_root(tmp_path, "mi300x", count=8)
    snap = backend.sample()
    assert len(snap.gpus) == 8 and snap.errors == []
    by_pci = snap.by_pci()
    for i in range(8):
        s = by_pci[f"0000:{0x0C + i * 0x10:02x}:00.0"]
        assert s.temperature_c["junction"] == 43.25 + i
        assert s.vram_used_bytes == (3 + i) * (1 << 30) + i * 4096
        assert s.info.kfd_node == i + 1


def test_gpu_added_and_removed_between_samples(tmp_path):
    build_root(tmp_path, [GpuSpec("rx6600", pci="0000:03:00.0", card=0)])
    backend = SysfsBackend(HostRoot(tmp_path))
    assert [g.pci for g in backend.discover()] == ["0000:03:00.0"]
    build_root(tmp_path, [GpuSpec("rx580", pci="0000:0a:00.0", card=1)])
    snap = backend.sample()
    assert [g.info.pci for g in snap.gpus] == ["0000:03:00.0", "0000:0a:00.0"]
    # Unplug the first GPU: its folder and class link disappear.
    device = HostRoot(tmp_path).real_path("/sys/class/drm/card0/device")
    os.unlink(tmp_path / "sys/class/drm/card0")
    shutil.rmtree(device)
    snap = backend.sample()
    assert [g.info.pci for g in snap.gpus] == ["0000:0a:00.0"]
    assert snap.errors == ["GPU 0000:03:00.0 was removed"]


def test_sample_without_discover_discovers(tmp_path):
    build_root(tmp_path, [GpuSpec("vega56", card=0)])
    backend = SysfsBackend(HostRoot(tmp_path))
    assert isinstance(backend, Backend)
    assert backend.sample().gpus[0].temperature_c["mem"] == 39.0


def test_no_gpus(tmp_path):
    snap = SysfsBackend(HostRoot(tmp_path)).sample()
    assert snap.gpus == [] and snap.errors == []


def test_power_cap_change_is_seen(tmp_path):
    build_root(tmp_path, [GpuSpec("rx7800xt", card=0)])
    backend = SysfsBackend(HostRoot(tmp_path))
    backend.discover()
    assert backend.sample().gpus[0].power_cap_w == 236.0
    cap = os.path.join(HostRoot(tmp_path).real_path("/sys/class/drm/card0/device/hwmon/hwmon4"), "power1_cap")
    with open(cap, "w") as fh:
        fh.write("250000000\n")
    assert backend.sample().gpus[0].power_cap_w == 250.0
