"""GPU names from libdrm's amdgpu.ids (device and revision), then pci.ids, then the built-in tables.

An RX 7900 XTX and an RX 7900 XT share device id 744C; only the revision (C8 / CC) tells them apart,
which is why LACT and amd-smi name GPUs from amdgpu.ids, and so does rocmdesk.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rocmdesk.host import HostRoot
from rocmdesk.telemetry import pciids
from rocmdesk.telemetry.discovery import discover_gpus
from tests.support.sysfs_tree import GpuSpec, build_root

DEBIAN_AMDGPU_IDS = Path("/usr/share/libdrm/amdgpu.ids")  # Debian's libdrm-common (scripts/test.sh installs it)

# A few lines in libdrm's format (tab after each comma), with its comment header and version line.
IDS = """# List of AMDGPU IDs
#
# Syntax:
# device_id,\trevision_id,\tproduct_name        <-- single tab after comma

1.0.0
744C,\tC8,\tAMD Radeon RX 7900 XTX
744C,\tCC,\tAMD Radeon RX 7900 XT
744c,\tce,\tAMD Radeon RX 7900 GRE
744C,\tC8,\tA later duplicate loses
# 744C,\tC9,\tcommented out
not a line
7FFF,\tZZ,\tbad revision
"""


def _gpu_with_revision(tmp_path: Path, revision: str) -> HostRoot:
    build_root(tmp_path, [GpuSpec("rx7900xtx", card=0)])
    root = HostRoot(tmp_path)
    with open(os.path.join(root.real_path("/sys/class/drm/card0/device"), "revision"), "w") as fh:
        fh.write(revision + "\n")
    return root


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_parser_reads_device_and_revision_and_skips_everything_else():
    names = pciids.parse_amdgpu_ids(IDS)
    assert names == {(0x744C, 0xC8): "AMD Radeon RX 7900 XTX", (0x744C, 0xCC): "AMD Radeon RX 7900 XT",
                     (0x744C, 0xCE): "AMD Radeon RX 7900 GRE"}
    assert pciids.parse_amdgpu_ids("") == {}
    assert pciids.parse_amdgpu_ids("\x00\xff garbage\n" * 1000) == {}


@pytest.mark.parametrize(("revision", "name"), [("0xc8", "AMD Radeon RX 7900 XTX"),
                                                ("0xcc", "AMD Radeon RX 7900 XT"),
                                                ("0xce", "AMD Radeon RX 7900 GRE")])
def test_the_revision_tells_an_xtx_from_an_xt(tmp_path, revision, name):
    root = _gpu_with_revision(tmp_path, revision)
    _write(tmp_path, "usr/share/libdrm/amdgpu.ids", IDS)
    _write(tmp_path, "usr/share/misc/pci.ids", "1002  AMD\n\t744c  Navi 31 [Radeon RX 7900 XT/7900 XTX]\n")
    assert discover_gpus(root)[0].name == name


def test_without_amdgpu_ids_the_built_in_revision_table_then_pci_ids_name_it(tmp_path):
    root = _gpu_with_revision(tmp_path, "0xcc")
    assert discover_gpus(root)[0].name == "AMD Radeon RX 7900 XT"  # built-in (device, revision)
    root = _gpu_with_revision(tmp_path / "b", "0x01")  # a revision nobody lists: one name per device id
    _write(tmp_path / "b", "usr/share/misc/pci.ids", "1002  AMD\n\t744c  Navi 31 [Radeon RX 7900 XT/7900 XTX]\n")
    assert discover_gpus(root)[0].name == "AMD Radeon RX 7900 XT/7900 XTX"


def test_amds_own_libdrm_copy_under_opt_is_read_first(tmp_path):
    root = _gpu_with_revision(tmp_path, "0xc8")
    _write(tmp_path, "usr/share/libdrm/amdgpu.ids", "744C,\tC8,\tolder name\n")
    _write(tmp_path, "opt/amdgpu/share/libdrm/amdgpu.ids", "744C,\tC8,\tAMD Radeon RX 7900 XTX\n")
    assert discover_gpus(root)[0].name == "AMD Radeon RX 7900 XTX"


def test_a_changed_file_is_read_again(tmp_path):
    root = _gpu_with_revision(tmp_path, "0xc8")
    ids = tmp_path / "usr/share/libdrm/amdgpu.ids"
    _write(tmp_path, "usr/share/libdrm/amdgpu.ids", "744C,\tC8,\tfirst\n")
    assert discover_gpus(root)[0].name == "first"
    ids.write_text("744C,\tC8,\tsecond\n")
    os.utime(ids, (1, 1))
    assert discover_gpus(root)[0].name == "second"


@pytest.mark.parametrize("kind", ["directory", "fifo", "huge", "binary", "dangling link"])
def test_a_bad_amdgpu_ids_falls_back_without_an_error(tmp_path, kind):
    root = _gpu_with_revision(tmp_path, "0xc8")
    path = tmp_path / "usr/share/libdrm/amdgpu.ids"
    path.parent.mkdir(parents=True)
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)  # must not block discovery
    elif kind == "huge":
        with open(path, "wb") as fh:
            fh.truncate(pciids.MAX_IDS_BYTES + 1)
    elif kind == "binary":
        path.write_bytes(os.urandom(4096))
    else:
        path.symlink_to("/nonexistent/amdgpu.ids")
    assert discover_gpus(root)[0].name == "AMD Radeon RX 7900 XTX"  # the built-in revision table


@pytest.mark.skipif(not DEBIAN_AMDGPU_IDS.is_file(), reason="libdrm-common is not installed (scripts/test.sh does)")
def test_debians_real_amdgpu_ids_names_the_lact_rx6900xt_dump(tmp_path):
    """The real table of the distribution (libdrm 2.4.114 on Debian 12) and a real dump (revision C0)."""
    build_root(tmp_path, [GpuSpec("rx6900xt", card=0)])
    (tmp_path / "usr/share/libdrm").mkdir(parents=True)
    shutil.copy(DEBIAN_AMDGPU_IDS, tmp_path / "usr/share/libdrm/amdgpu.ids")
    names = pciids.parse_amdgpu_ids(DEBIAN_AMDGPU_IDS.read_text())
    assert len(names) > 300 and names[(0x73BF, 0xC0)] == "AMD Radeon RX 6900 XT"
    gpu = discover_gpus(HostRoot(tmp_path))[0]
    assert (gpu.device_id, gpu.revision_id, gpu.name) == (0x73BF, 0xC0, "AMD Radeon RX 6900 XT")
