"""GPU discovery on real LACT dumps, hand-built Instinct trees and odd trees."""

from __future__ import annotations

import os

import pytest

from rocmdesk.host import HostRoot
from rocmdesk.telemetry.discovery import discover, discover_gpus, gpu_kind
from rocmdesk.telemetry.model import GpuKind
from tests.support.instinct import instinct_specs
from tests.support.sysfs_tree import LACT_DUMPS, GpuSpec, build_root

# (dump, PCI device id, gfx target, kind, driver, vbios) read by hand from each dump's uevent,
# vbios_version and the gfx table of ROCm/rocm-install-on-linux docs/reference/system-requirements.rst.
LACT_EXPECTED = {
    "hd7870": (0x6818, None, GpuKind.DISCRETE, "radeon", None),
    "phoenix": (0x15BF, "gfx1103", GpuKind.APU, "amdgpu", "113-PHXGENERIC-001"),
    "r7-240": (0x6617, None, GpuKind.DISCRETE, "amdgpu", "13-C86901_216"),
    "r9-280": (0x679A, None, GpuKind.DISCRETE, "amdgpu", "xxx-xxx-xxx"),
    "rx5500xt": (0x7340, "gfx1012", GpuKind.DISCRETE, "amdgpu", "xxx-xxx-xxx"),
    "rx5700xt": (0x731F, "gfx1010", GpuKind.DISCRETE, "amdgpu", "113-D1990103-O09"),
    "rx580": (0x67DF, "gfx803", GpuKind.DISCRETE, "amdgpu", "113-1E3871U-O4C"),
    "rx6600": (0x73FF, "gfx1032", GpuKind.DISCRETE, "amdgpu", "113-D534-R66E"),
    "rx6900xt": (0x73BF, "gfx1030", GpuKind.DISCRETE, "amdgpu", "113-D4121EXT-CO1"),
    "rx7600s": (0x7480, "gfx1102", GpuKind.DISCRETE, "amdgpu", "113-BRT112125.001"),
    "rx7700s": (0x7480, "gfx1102", GpuKind.DISCRETE, "amdgpu", "113-BRT125778.001"),
    "rx7800xt": (0x747E, "gfx1101", GpuKind.DISCRETE, "amdgpu", "113-EXT90249-100"),
    "rx7900xtx": (0x744C, "gfx1100", GpuKind.DISCRETE, "amdgpu", "113-D70401XT-N11"),
    "rx9070": (0x7550, "gfx1201", GpuKind.DISCRETE, "amdgpu", "113-2E490TX-US2"),
    "vangogh": (0x163F, "gfx1033", GpuKind.APU, "amdgpu", "113-AMDAerithJ-005"),
    "vega56": (0x687F, "gfx900", GpuKind.DISCRETE, "amdgpu", "115-D050PIL-100"),
}


def test_expectations_cover_every_dump():
    assert sorted(LACT_EXPECTED) == LACT_DUMPS


@pytest.fixture(scope="module")
def all_lact(tmp_path_factory):
    root = tmp_path_factory.mktemp("all-lact")
    specs = [GpuSpec(d, pci=f"0000:{i + 1:02x}:00.0", card=i) for i, d in enumerate(LACT_DUMPS)]
    build_root(root, specs)
    return HostRoot(root)


def test_every_lact_dump_is_discovered(all_lact):
    gpus = discover_gpus(all_lact)
    assert [g.card for g in gpus] == [f"card{i}" for i in range(len(LACT_DUMPS))]
    for i, (dump, gpu) in enumerate(zip(LACT_DUMPS, gpus, strict=True)):
        device_id, gfx, kind, driver, vbios = LACT_EXPECTED[dump]
        assert gpu.pci == f"0000:{i + 1:02x}:00.0", dump
        assert gpu.device_id == device_id, dump
        assert gpu.gfx_target == gfx, dump
        assert gpu.kind is kind, dump
        assert gpu.driver == driver, dump
        assert gpu.vbios == vbios, dump
        assert gpu.name and not gpu.name.startswith("AMD GPU 1002"), dump


def test_spot_values_from_dumps(all_lact):
    gpus = {g.card: g for g in discover_gpus(all_lact)}
    vega = gpus[f"card{LACT_DUMPS.index('vega56')}"]
    assert vega.revision_id == 0xC3 and vega.subsystem == "1043:0555"
    assert vega.vram_total_bytes == 8573157376
    # rx6900xt's files are NUL-padded to 4 KiB: still read.
    navi21 = gpus[f"card{LACT_DUMPS.index('rx6900xt')}"]
    assert navi21.vram_total_bytes == 17163091968 and navi21.revision_id == 0xC0
    assert navi21.unique_id == "946d7e1ef9b172dd"
    # No `device` file in the rx7900xtx dump: the id comes from uevent PCI_ID, the subsystem
    # from PCI_SUBSYS_ID.
    xtx = gpus[f"card{LACT_DUMPS.index('rx7900xtx')}"]
    assert xtx.subsystem == "1da2:e471" and xtx.vram_total_bytes is None
    assert xtx.name == "AMD Radeon RX 7900 XT/7900 XTX"


def test_radeon_card_is_listed_not_on_amdgpu(all_lact):
    gpu = discover_gpus(all_lact)[LACT_DUMPS.index("hd7870")]
    assert gpu.driver == "radeon" and not gpu.on_amdgpu
    assert gpu.kfd_node is None and gpu.render_node is None


def test_kfd_node_and_render_node(all_lact):
    gpus = discover_gpus(all_lact)
    # build_root numbers KFD nodes: CPU node 0, then one per amdgpu GPU with a gfx version.
    with_kfd = [g for g in gpus if g.kfd_node is not None]
    assert [g.kfd_node for g in with_kfd] == list(range(1, len(with_kfd) + 1))
    for gpu in gpus:
        if gpu.driver == "amdgpu":
            assert gpu.render_node == f"renderD{128 + int(gpu.card[4:])}"


def test_gfx_matched_by_pci_location_not_by_order(tmp_path):
    # card0 is the 7900 XTX on bus 0x20 and gets KFD node 1; card1 the 6900 XT on bus 0x10.
    build_root(tmp_path, [GpuSpec("rx7900xtx", pci="0000:20:00.0", card=0),
                          GpuSpec("rx6900xt", pci="0000:10:00.0", card=1)])
    # Swap the node folders so node order no longer follows card order.
    nodes = tmp_path / "sys/class/kfd/kfd/topology/nodes"
    os.rename(nodes / "1", nodes / "tmp")
    os.rename(nodes / "2", nodes / "1")
    os.rename(nodes / "tmp", nodes / "2")
    gpus = {g.pci: g for g in discover_gpus(HostRoot(tmp_path))}
    assert gpus["0000:20:00.0"].gfx_target == "gfx1100" and gpus["0000:20:00.0"].kfd_node == 2
    assert gpus["0000:10:00.0"].gfx_target == "gfx1030" and gpus["0000:10:00.0"].kfd_node == 1


def test_instinct_trees(tmp_path):
    specs = (instinct_specs(tmp_path / "d", "mi210", first_bus=0x0C)
             + instinct_specs(tmp_path / "d", "mi250x", first_bus=0x20)
             + instinct_specs(tmp_path / "d", "mi300x", first_bus=0x60))
    build_root(tmp_path / "root", specs)
    gpus = discover_gpus(HostRoot(tmp_path / "root"))
    assert [(g.name, g.gfx_target, g.kind) for g in gpus] == [
        ("AMD Instinct MI210", "gfx90a", GpuKind.INSTINCT),
        ("AMD Instinct MI250X", "gfx90a", GpuKind.INSTINCT),
        ("AMD Instinct MI250X", "gfx90a", GpuKind.INSTINCT),
        ("AMD Instinct MI300X", "gfx942", GpuKind.INSTINCT),
    ]
    assert [g.vram_total_bytes for g in gpus] == [64 << 30, 64 << 30, 64 << 30, 192 << 30]
    assert [g.pci for g in gpus] == ["0000:0c:00.0", "0000:20:00.0", "0000:30:00.0", "0000:60:00.0"]
    assert [g.kfd_node for g in gpus] == [1, 2, 3, 4]


def test_connectors_and_foreign_vendors_are_skipped(tmp_path):
    build_root(tmp_path, [GpuSpec("rx6600", card=0), GpuSpec("rx580", pci="0000:0a:00.0", card=1)])
    drm = tmp_path / "sys/class/drm"
    (drm / "card0-DP-1").mkdir()
    (drm / "card0-DP-1" / "device").mkdir()
    (drm / "card0-DP-1" / "device" / "vendor").write_text("0x1002\n")
    (drm / "version").write_text("drm 1.1.0 20060810\n")
    vendor = HostRoot(tmp_path).real_path("/sys/class/drm/card1/device/vendor")
    with open(vendor, "w") as fh:
        fh.write("0x10de\n")
    assert [g.card for g in discover_gpus(HostRoot(tmp_path))] == ["card0"]


def test_symlink_loop_card_is_skipped(tmp_path):
    build_root(tmp_path, [GpuSpec("rx6600", card=0)])
    drm = tmp_path / "sys/class/drm"
    os.symlink("card7", drm / "card9")
    os.symlink("card9", drm / "card7")
    assert [g.card for g in discover_gpus(HostRoot(tmp_path))] == ["card0"]


def test_empty_root_has_no_gpus(tmp_path):
    assert discover_gpus(HostRoot(tmp_path)) == []


def _write(root, rel, text):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_versions_and_pci_ids_from_the_root(tmp_path):
    build_root(tmp_path, [GpuSpec("rx7900xtx", card=0)])
    root = HostRoot(tmp_path)
    gpu = discover_gpus(root)[0]
    assert gpu.driver_version is None and gpu.rocm_version is None
    _write(tmp_path, "proc/sys/kernel/osrelease", "6.8.0-45-generic\n")
    _write(tmp_path, "opt/rocm/.info/version", "6.2.4-120\n")
    _write(tmp_path, "usr/share/hwdata/pci.ids",
           "# test\n1002  Advanced Micro Devices, Inc. [AMD/ATI]\n"
           "\t744c  Navi 31 [Radeon RX 7900 XT/7900 XTX/7900 GRE/7900M]\n"
           "\t\t1da2 e471  Sapphire Pulse\n10de  NVIDIA Corporation\n\t744c  Not AMD\n")
    gpu = discover_gpus(root)[0]
    assert gpu.driver_version == "6.8.0-45-generic"
    assert gpu.rocm_version == "6.2.4-120"
    assert gpu.name == "AMD Radeon RX 7900 XT/7900 XTX/7900 GRE/7900M"
    # The module's own version (amdgpu-dkms) wins over the kernel release; misc/pci.ids over hwdata.
    _write(tmp_path, "sys/module/amdgpu/version", "6.8.5\n")
    _write(tmp_path, "usr/share/misc/pci.ids", "1002  AMD\n\t744c  Navi 31\n")
    gpu = discover_gpus(root)[0]
    assert gpu.driver_version == "6.8.5"
    assert gpu.name == "AMD Navi 31"


def test_unknown_device_id_gets_a_plain_name(tmp_path):
    build_root(tmp_path, [GpuSpec("rx7900xtx", card=0, gfx_target_version=110000)])
    dev = HostRoot(tmp_path).real_path("/sys/class/drm/card0/device")
    with open(os.path.join(dev, "uevent"), "w") as fh:
        fh.write("DRIVER=amdgpu\nPCI_ID=1002:7FFF\nPCI_SLOT_NAME=0000:03:00.0\n")
    gpu = discover_gpus(HostRoot(tmp_path))[0]
    assert gpu.name == "AMD GPU 1002:7fff"
    assert gpu.kind is GpuKind.DISCRETE  # gfx1100 is not an APU or Instinct target


def test_multiple_kfd_nodes_for_one_device_pick_the_lowest(tmp_path):
    """A partitioned MI300X (CPX) has several KFD nodes at one PCI location."""
    specs = instinct_specs(tmp_path / "d", "mi300x")
    build_root(tmp_path / "root", specs)
    nodes = tmp_path / "root/sys/class/kfd/kfd/topology/nodes"
    (nodes / "2").mkdir()
    (nodes / "2" / "properties").write_text((nodes / "1" / "properties").read_text())
    gpu = discover_gpus(HostRoot(tmp_path / "root"))[0]
    assert gpu.kfd_node == 1


@pytest.mark.parametrize(
    ("device_id", "gfx", "kind"),
    [
        (0x74A1, None, GpuKind.INSTINCT),
        (None, "gfx942", GpuKind.INSTINCT),
        (0x7FFF, "gfx90a", GpuKind.INSTINCT),
        (0x15BF, None, GpuKind.APU),
        (0x7FFF, "gfx1035", GpuKind.APU),
        (0x744C, "gfx1100", GpuKind.DISCRETE),
        (None, None, GpuKind.UNKNOWN),
    ],
)
def test_gpu_kind(device_id, gfx, kind):
    assert gpu_kind(device_id, gfx) is kind


def test_discovered_paths_point_at_the_device(all_lact):
    for gpu in discover(all_lact):
        assert os.path.isdir(gpu.device_real)
        assert gpu.device_path.endswith(gpu.info.pci)
        assert gpu.hwmon_real is not None and os.path.isfile(os.path.join(gpu.hwmon_real, "name"))
