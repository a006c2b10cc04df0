"""Oracle: the real Debian rocm-smi 5.2.3 and rocmdesk's sysfs backend read the same trees alike.

rocm-smi reads /sys only, so each tree is bind-mounted over /sys inside a private mount
namespace (``unshare --mount --propagation private``), with a private tmpfs on /dev/shm for
its mutex files (a stale rocm_smi_cardN file there costs a 5 s wait and an error). Nothing is mounted outside that
namespace.

What rocm-smi 5.2.3 cannot be compared on, and why:
- power on GPUs that have ``power1_input``: 5.2.3 only knows ``power1_average`` (newer rocm-smi
  prefers the socket power, like rocmdesk);
- dumps it refuses to start on (no ``in0_label``: r7-240, r9-280, MI300X; NUL-padded labels:
  rx6900xt) and the radeon-bound hd7870.
"""

from __future__ import annotations

import json
import os

import pytest

from rocmdesk.host import HostRoot
from rocmdesk.telemetry.backends.sysfs import SysfsBackend
from tests.support.instinct import ROCM_SMI_KFD_PROPS, instinct_specs
from tests.support.rocm_smi_oracle import require_private_mounts, run_rocm_smi_on
from tests.support.sysfs_tree import GpuSpec, build_root

pytestmark = pytest.mark.oracle

ACCEPTED_DUMPS = ["phoenix", "rx5500xt", "rx5700xt", "rx580", "rx6600", "rx7600s", "rx7700s", "rx7800xt",
                  "rx7900xtx", "rx9070", "vangogh", "vega56"]
TEMP_KEYS = {"edge": "Temperature (Sensor edge) (C)", "junction": "Temperature (Sensor junction) (C)",
             "mem": "Temperature (Sensor memory) (C)"}


def run_rocm_smi(tree) -> tuple[dict | None, str]:
    """rocm-smi's JSON for ``tree``, or None + why."""
    result = run_rocm_smi_on(tree, "--showtemp --showpower --showmeminfo vram --showuse --showbus --json")
    text = result.stdout.strip()
    if not text.startswith("{"):
        return None, (result.error or "") + result.stderr[-300:]
    return json.loads(text), ""


@pytest.fixture(scope="module")
def oracle_available(tmp_path_factory):
    require_private_mounts(tmp_path_factory)


def _compare(tree, *, expect_gpus: int) -> None:
    smi, why = run_rocm_smi(tree)
    assert smi is not None, f"rocm-smi refused the tree: {why}"
    backend = SysfsBackend(HostRoot(tree))
    backend.discover()
    ours = backend.sample().by_pci()
    cards = {v["PCI Bus"].lower(): v for k, v in smi.items() if k.startswith("card")}
    assert len(cards) == expect_gpus
    assert set(cards) <= set(ours)
    for pci, theirs in cards.items():
        mine = ours[pci]
        for label, key in TEMP_KEYS.items():
            value = theirs.get(key, "N/A")
            if value == "N/A":
                assert label not in mine.temperature_c, (pci, label)
            else:
                assert mine.temperature_c[label] == pytest.approx(float(value), abs=0.001), (pci, label)
        hwmon = HostRoot(tree).real_path(f"/sys/bus/pci/devices/{pci}")
        has_input = any(os.path.exists(p) for p in _glob_hwmon(hwmon, "power1_input"))
        power = theirs.get("Average Graphics Package Power (W)")
        if not has_input:
            if power is None or power.startswith("N/A"):
                assert mine.power_w is None or mine.power_w == 0.0, pci  # rocm-smi drops a 0 W reading
            else:
                assert mine.power_w == pytest.approx(float(power), abs=0.01), pci
        if "VRAM Total Memory (B)" in theirs:
            assert mine.vram_total_bytes == int(theirs["VRAM Total Memory (B)"]), pci
            assert mine.vram_used_bytes == int(theirs["VRAM Total Used Memory (B)"]), pci
        else:
            assert mine.vram_total_bytes is None, pci
        use = theirs.get("GPU use (%)", "N/A")
        assert mine.gpu_busy_percent == (None if use == "N/A" else int(use)), pci


def _glob_hwmon(device, name):
    folder = os.path.join(device, "hwmon")
    return [os.path.join(folder, h, name) for h in (os.listdir(folder) if os.path.isdir(folder) else [])]


@pytest.mark.parametrize("dump", ["rx7900xtx", "rx580", "vega56", "phoenix"])
def test_single_lact_dump(oracle_available, tmp_path, dump):
    build_root(tmp_path, [GpuSpec(dump, pci="0000:03:00.0", card=0, extra_props=dict(ROCM_SMI_KFD_PROPS))])
    _compare(tmp_path, expect_gpus=1)


def test_mixed_multi_gpu_tree(oracle_available, tmp_path):
    specs = [GpuSpec(d, pci=f"0000:{0x10 + i:02x}:00.0", card=i, extra_props=dict(ROCM_SMI_KFD_PROPS))
             for i, d in enumerate(ACCEPTED_DUMPS)]
    instinct = instinct_specs(tmp_path / "dumps", "mi210", first_bus=0x40) + instinct_specs(
        tmp_path / "dumps", "mi250x", first_bus=0x60)
    for n, spec in enumerate(instinct):
        spec.card = len(specs) + n
    build_root(tmp_path / "tree", specs + instinct)
    _compare(tmp_path / "tree", expect_gpus=len(specs) + len(instinct))


def test_eight_die_mi250x_node(oracle_available, tmp_path):
    build_root(tmp_path / "tree", instinct_specs(tmp_path / "dumps", "mi250x", count=4))
    _compare(tmp_path / "tree", expect_gpus=8)


def test_mi300x_tree_rocm_smi_cannot_read_but_rocmdesk_can(oracle_available, tmp_path):
    """rocm-smi 5.2.3 fails to start ("ROCm SMI returned 8") without in0_label; the tree is still faithful."""
    build_root(tmp_path / "tree", instinct_specs(tmp_path / "dumps", "mi300x", count=2))
    smi, _why = run_rocm_smi(tmp_path / "tree")
    assert smi is None
    snap = SysfsBackend(HostRoot(tmp_path / "tree")).sample()
    assert len(snap.gpus) == 2
    for gpu in snap.gpus:
        assert set(gpu.temperature_c) == {"junction", "mem"}
        assert gpu.power_w is not None and gpu.vram_total_bytes == 192 << 30
        assert gpu.vram_used_bytes is not None


def test_tree_is_private(oracle_available, tmp_path):
    """The bind mount never leaks: after a run the host's /sys is untouched."""
    build_root(tmp_path, [GpuSpec("rx580", card=0, extra_props=dict(ROCM_SMI_KFD_PROPS))])
    before = sorted(os.listdir("/sys"))
    run_rocm_smi(tmp_path)
    assert sorted(os.listdir("/sys")) == before
    assert not os.path.exists("/sys/class/drm/card0/device/mem_info_vram_used") or os.path.realpath(
        "/sys/class/drm/card0").startswith("/sys/devices")


@pytest.mark.parametrize("dump", ["rx580", "rx7900xtx", "vega56", "phoenix", "rx6600", "rx7800xt"])
def test_dpm_levels_are_what_rocm_smi_calls_the_clocks(oracle_available, tmp_path, dump):
    """rocm-smi's "sclk clock speed" is the active DPM level: rocmdesk's sclk_dpm_mhz, not sclk_mhz
    (the actual clock, which on an idle Vega 56 is far below its lowest level)."""
    build_root(tmp_path, [GpuSpec(dump, pci="0000:03:00.0", card=0, extra_props=dict(ROCM_SMI_KFD_PROPS))])
    result = run_rocm_smi_on(tmp_path, "--showclocks --json")
    theirs = json.loads(result.stdout.strip())["card0"]
    mine = SysfsBackend(HostRoot(tmp_path)).sample().gpus[0]
    for key, name in (("sclk_dpm_mhz", "sclk clock speed:"), ("mclk_dpm_mhz", "mclk clock speed:")):
        assert getattr(mine, key) == int(theirs[name].strip("()").removesuffix("Mhz")), (dump, key)
