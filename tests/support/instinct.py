"""Hand-built Instinct sysfs dumps (MI210, MI250X, MI300X), laid out like the LACT dumps.

There is no real MI200/MI300 dump in tests/data, so these are written from the sources below:
- all three are gfx9 CDNA parts (KFD gfx_target_version 90010 = gfx90a, 90402 = gfx942);
- MI200 reports ``power1_average`` only, MI300 ``power1_input`` only (ROCm/pytorch PR #1457);
- MI250X is two dies per board, each its own DRM card; only the primary reports power, the
  secondary has no power files (rocm-smi prints "N/A (Secondary die)", ROCm/rocm_smi_lib#160);
- MI300X has no edge sensor: temp2 = junction, temp3 = mem (Syllo/nvtop#514), no ``in0_label``,
  192 GiB of HBM, no fan.
Values move with ``index`` so multi-GPU tests can tell the GPUs apart.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.sysfs_tree import GpuSpec

GIB = 1 << 30

MODELS = {
    "mi210": {"device": "0x740f", "revision": "0x02", "gfx": 90010, "vram": 64 * GIB,
              "vbios": "113-D67301-063", "cap_w": 300, "cap_max_w": 300, "power": "average",
              "temps": {1: "edge", 2: "junction", 3: "mem"}, "sclk": (500, 1700), "mclk": 1600},
    "mi250x": {"device": "0x7408", "revision": "0x01", "gfx": 90010, "vram": 64 * GIB,
               "vbios": "113-D65201-042", "cap_w": 560, "cap_max_w": 560, "power": "average",
               "temps": {1: "edge", 2: "junction", 3: "mem"}, "sclk": (500, 1700), "mclk": 1600},
    "mi300x": {"device": "0x74a1", "revision": "0x00", "gfx": 90402, "vram": 192 * GIB,
               "vbios": "113-M3000100-102", "cap_w": 750, "cap_max_w": 750, "power": "input",
               "temps": {2: "junction", 3: "mem"}, "sclk": (500, 2100), "mclk": 1300},
}

# KFD properties the real rocm-smi 5.2.3 insists on (KFDNode::Initialize throws without them).
ROCM_SMI_KFD_PROPS = {"hive_id": "0", "simd_arrays_per_engine": "1", "array_count": "8",
                      "cu_per_simd_array": "13"}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def write_dump(dest: Path, model: str, *, index: int = 0, secondary: bool = False,
               pci: str = "0000:03:00.0") -> Path:
    """Write ``dest/card0/device/...`` for one die/GPU of ``model``; returns ``dest``."""
    spec = MODELS[model]
    device = dest / "card0" / "device"
    hwmon = device / "hwmon" / "hwmon0"
    busy = (index * 13 + 7) % 101
    used = (3 + index) * GIB + index * 4096
    files = {
        "vendor": "0x1002\n",
        "device": spec["device"] + "\n",
        "revision": spec["revision"] + "\n",
        "subsystem_vendor": "0x1002\n",
        "subsystem_device": "0x0c34\n",
        "class": "0x038000\n",
        "uevent": (f"DRIVER=amdgpu\nPCI_CLASS=38000\nPCI_ID=1002:{spec['device'][2:].upper()}\n"
                   f"PCI_SUBSYS_ID=1002:0C34\nPCI_SLOT_NAME={pci}\n"),
        "vbios_version": spec["vbios"] + "\n",
        "mem_info_vram_total": f"{spec['vram']}\n",
        "mem_info_vram_used": f"{used}\n",
        "mem_info_vis_vram_total": f"{spec['vram']}\n",
        "mem_info_gtt_total": f"{512 * GIB}\n",
        "mem_info_gtt_used": f"{(index + 1) * 11 * 1048576}\n",
        "gpu_busy_percent": f"{busy}\n",
        "mem_busy_percent": f"{busy // 2}\n",
        "power_dpm_force_performance_level": "auto\n",
        "pp_dpm_sclk": f"0: {spec['sclk'][0]}Mhz\n1: {1100 + index * 10}Mhz *\n2: {spec['sclk'][1]}Mhz\n",
        "pp_dpm_mclk": f"0: 400Mhz\n1: {spec['mclk']}Mhz *\n",
        "unique_id": f"{0x5a17c0de0000 + index:x}\n",
    }
    for name, text in files.items():
        _write(device / name, text)
    _write(hwmon / "name", "amdgpu\n")
    for n, label in spec["temps"].items():
        _write(hwmon / f"temp{n}_input", f"{35000 + n * 4000 + index * 1000 + 125 * n}\n")
        _write(hwmon / f"temp{n}_label", label + "\n")
        _write(hwmon / f"temp{n}_crit", f"{(100 + n * 5) * 1000}\n")
        _write(hwmon / f"temp{n}_emergency", f"{(105 + n * 5) * 1000}\n")
    if spec["power"] == "input":
        _write(hwmon / "in0_input", f"{780 + index}\n")  # MI300X: no in0_label
    else:
        _write(hwmon / "in0_input", f"{806 + index}\n")
        _write(hwmon / "in0_label", "vddgfx\n")
    if not secondary:
        watts = 90 + index * 7.5
        _write(hwmon / f"power1_{spec['power']}", f"{int(watts * 1_000_000) + 123}\n")
        _write(hwmon / "power1_label", "PPT\n")
        _write(hwmon / "power1_cap", f"{spec['cap_w'] * 1_000_000}\n")
        _write(hwmon / "power1_cap_max", f"{spec['cap_max_w'] * 1_000_000}\n")
        _write(hwmon / "power1_cap_min", "0\n")
        _write(hwmon / "power1_cap_default", f"{spec['cap_w'] * 1_000_000}\n")
    _write(dest / "kfd" / "topology" / "nodes" / "1" / "properties",
           f"gfx_target_version {spec['gfx']}\nvendor_id 4098\n")
    return dest


def instinct_specs(tmp: Path, model: str, count: int = 1, *, first_bus: int = 0x0C,
                   rocm_smi_props: bool = True) -> list[GpuSpec]:
    """GpuSpecs for ``count`` boards of ``model`` (MI250X: two dies each, the second secondary)."""
    specs = []
    index = 0
    for board in range(count):
        dies = 2 if model == "mi250x" else 1
        for die in range(dies):
            pci = f"0000:{first_bus + index * 0x10:02x}:00.0"
            dump = write_dump(tmp / f"{model}-{board}-{die}", model, index=index, secondary=die == 1, pci=pci)
            extra = dict(ROCM_SMI_KFD_PROPS) if rocm_smi_props else {}
            specs.append(GpuSpec(dump, pci=pci, extra_props=extra))
            index += 1
    return specs
