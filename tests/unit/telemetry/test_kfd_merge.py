"""DRM fdinfo rows and KFD compute processes merged into one process list (one row per pid and GPU)."""

from __future__ import annotations

import json

import pytest

from rocmdesk.host import HostRoot
from rocmdesk.telemetry import fdinfo
from rocmdesk.telemetry.backends.sysfs import SysfsBackend
from rocmdesk.telemetry.fdinfo import FdinfoScanner, merge_kfd
from rocmdesk.telemetry.kfd_procs import NO_KFD_PROC, read_kfd_processes
from rocmdesk.telemetry.model import ProcessUse
from tests.support.sysfs_tree import GpuSpec, KfdUse, add_kfd_process, build_root, kfd_gpu_ids

A, B = "0000:03:00.0", "0000:0a:00.0"
GIB = 1 << 30


def drm_client(root, pid, comm, pdev, client, vram_kib, gfx_ns=0):
    base = root / "proc" / str(pid)
    (base / "fdinfo").mkdir(parents=True, exist_ok=True)
    (base / "fd").mkdir(exist_ok=True)
    (base / "comm").write_text(comm + "\n")
    (base / "cmdline").write_bytes(comm.encode() + b"\x00--flag\x00")
    fd = str(len(list((base / "fdinfo").iterdir())) + 3)
    (base / "fdinfo" / fd).write_text(
        f"drm-driver:\tamdgpu\ndrm-client-id:\t{client}\ndrm-pdev:\t{pdev}\n"
        f"drm-memory-vram:\t{vram_kib} KiB\ndrm-memory-gtt:\t64 KiB\ndrm-engine-gfx:\t{gfx_ns} ns\n")


@pytest.fixture
def tree(tmp_path):
    build_root(tmp_path, [GpuSpec("rx7900xtx", pci=A, card=0, extra_props={"simd_per_cu": "2"}),
                          GpuSpec("rx6600", pci=B, card=1, extra_props={"simd_count": "56", "simd_per_cu": "2"})])
    return tmp_path


def rows_by_key(uses):
    keys = [(u.pid, u.pci) for u in uses]
    assert len(keys) == len(set(keys)), "a (pid, GPU) pair listed twice"
    return dict(zip(keys, uses, strict=True))


def test_kfd_only_process_appears_with_name_and_compute_use(tree):
    gid = kfd_gpu_ids(tree)
    add_kfd_process(tree, 4242, {gid[A]: KfdUse(vram=20 * GIB, sdma=900, cu=48, queues=3), gid[B]: KfdUse()},
                    comm="python3", cmdline=["python3", "train.py", "--epochs", "3"])
    (row,) = FdinfoScanner(HostRoot(tree)).scan()  # the idle B folder is not a row
    assert (row.pid, row.pci, row.name, row.cmdline) == (4242, A, "python3", "python3 train.py --epochs 3")
    assert row.vram_bytes == 20 * GIB and row.cu_occupied == 48 and row.cu_occupancy_percent == 50.0
    assert row.sdma_us == 900 and row.sources == ("kfd",)
    assert row.gpu_percent is None and "KFD compute queues" in row.unavailable["gpu_percent"]
    assert row.gtt_bytes is None and row.unavailable["gtt_bytes"]
    json.dumps(row.to_json())  # stays JSON-serialisable (rocmdesk sample --json)


def test_process_in_both_is_listed_once(tree):
    gid = kfd_gpu_ids(tree)
    drm_client(tree, 100, "ollama", A, 7, vram_kib=4 * 1024 * 1024)  # 4 GiB via the render node
    add_kfd_process(tree, 100, {gid[A]: KfdUse(vram=3 * GIB, cu=12, queues=1)})
    rows = rows_by_key(FdinfoScanner(HostRoot(tree)).scan())
    assert list(rows) == [(100, A)]
    row = rows[(100, A)]
    assert row.sources == ("drm-fdinfo", "kfd")
    assert row.vram_bytes == 4 * GIB  # the larger reading; fdinfo already holds the KFD buffers
    assert row.gtt_bytes == 64 * 1024 and row.cu_occupancy_percent == 12.5
    assert "gpu_percent" not in row.unavailable  # a DRM row: None only until the second scan


def test_kfd_larger_vram_wins(tree):
    gid = kfd_gpu_ids(tree)
    drm_client(tree, 101, "hip", A, 1, vram_kib=1024)
    add_kfd_process(tree, 101, {gid[A]: KfdUse(vram=2 * GIB, queues=1)})
    (row,) = FdinfoScanner(HostRoot(tree)).scan()
    assert row.vram_bytes == 2 * GIB


def test_drm_and_kfd_on_different_gpus_give_two_rows(tree):
    gid = kfd_gpu_ids(tree)
    drm_client(tree, 200, "blender", A, 3, vram_kib=1024)
    add_kfd_process(tree, 200, {gid[A]: KfdUse(), gid[B]: KfdUse(vram=GIB, cu=7, queues=1)})
    rows = rows_by_key(FdinfoScanner(HostRoot(tree)).scan())
    assert list(rows) == [(200, A), (200, B)]
    assert rows[(200, A)].sources == ("drm-fdinfo", "kfd") and rows[(200, A)].cu_occupied is None
    assert rows[(200, B)].name == "blender" and rows[(200, B)].cu_occupancy_percent == 25.0


def test_graphics_only_process_says_why_no_compute_figures(tree):
    drm_client(tree, 300, "Xorg", A, 1, vram_kib=8192)
    add_kfd_process(tree, 301, {kfd_gpu_ids(tree)[B]: KfdUse(vram=1, queues=1)}, comm="hip")
    rows = rows_by_key(FdinfoScanner(HostRoot(tree)).scan())
    xorg = rows[(300, A)]
    assert xorg.cu_occupancy_percent is None and xorg.unavailable["cu_occupancy_percent"] == fdinfo.NOT_KFD


def test_no_kfd_folder_gives_its_reason(tmp_path):
    build_root(tmp_path, [GpuSpec("rx7900xtx", pci=A, card=0)])
    drm_client(tmp_path, 300, "Xorg", A, 1, vram_kib=8192)
    scanner = FdinfoScanner(HostRoot(tmp_path))
    (row,) = scanner.scan()
    assert scanner.kfd_problem == NO_KFD_PROC
    assert row.unavailable["cu_occupancy_percent"] == NO_KFD_PROC and row.unavailable["sdma_us"] == NO_KFD_PROC


def test_kfd_turned_off_reads_only_fdinfo(tree):
    add_kfd_process(tree, 5, {kfd_gpu_ids(tree)[A]: KfdUse(vram=1, queues=1)}, comm="hip")
    assert FdinfoScanner(HostRoot(tree), kfd=False).scan() == []


def test_gpu_id_not_in_topology_still_listed(tree):
    add_kfd_process(tree, 600, {31337: KfdUse(vram=GIB, cu=3, queues=1)}, comm="rccl-test")
    (row,) = FdinfoScanner(HostRoot(tree)).scan()
    assert row.pci == "kfd gpu_id 31337" and row.vram_bytes == GIB
    assert "not in the KFD topology" in row.unavailable["gpu"]
    assert row.cu_occupied == 3 and row.cu_occupancy_percent is None
    assert row.unavailable["cu_occupancy_percent"] == row.unavailable["gpu"]


def test_snapshot_without_proc_entry_names_the_pid(tree):
    add_kfd_process(tree, 700, {kfd_gpu_ids(tree)[A]: KfdUse(vram=GIB, queues=1)})  # no proc/700
    (row,) = FdinfoScanner(HostRoot(tree)).scan()
    assert (row.pid, row.name, row.cmdline) == (700, "pid 700", "")


def test_process_that_ended_is_dropped(tree):
    """On the live machine a KFD folder whose proc/PID is gone belongs to a process that just ended."""
    gid = kfd_gpu_ids(tree)
    add_kfd_process(tree, 800, {gid[A]: KfdUse(vram=GIB, queues=1)})
    add_kfd_process(tree, 801, {gid[A]: KfdUse(vram=GIB, queues=1)})
    scan = read_kfd_processes(HostRoot(tree))
    named = {801: ("hip", "hip", None)}
    rows = merge_kfd([], scan, named.get)
    assert [(r.pid, r.name) for r in rows] == [(801, "hip")]


def test_merge_keeps_drm_rows_untouched_when_kfd_is_empty(tree):
    row = ProcessUse(pid=1, pci=A, name="x", vram_bytes=5, gpu_percent=3.0, sources=("drm-fdinfo",))
    scan = read_kfd_processes(HostRoot(tree))  # kfd/proc missing in this tree
    (out,) = merge_kfd([row], scan, lambda pid: None)
    assert (out.vram_bytes, out.gpu_percent) == (5, 3.0)
    assert out.unavailable["cu_occupied"] == NO_KFD_PROC


def test_sysfs_backend_lists_kfd_processes(tree):
    add_kfd_process(tree, 900, {kfd_gpu_ids(tree)[B]: KfdUse(vram=GIB, cu=28, queues=1)}, comm="pytorch")
    backend = SysfsBackend(HostRoot(tree))
    backend.discover()
    (row,) = backend.processes()
    assert (row.pid, row.pci, row.name, row.cu_occupancy_percent) == (900, B, "pytorch", 100.0)


def test_user_names_are_looked_up_once_per_uid(monkeypatch):
    """The account lookup can go to LDAP/SSSD; it runs for every GPU process on each 2 s scan."""
    import pwd

    from rocmdesk.telemetry import fdinfo

    calls = []

    def getpwuid(uid):
        calls.append(uid)
        if uid == 4242:
            raise KeyError(uid)
        return type("pw", (), {"pw_name": "alice"})()

    fdinfo.user_name.cache_clear()
    monkeypatch.setattr(pwd, "getpwuid", getpwuid)
    try:
        assert [fdinfo.user_name(1000) for _ in range(3)] == ["alice"] * 3
        assert fdinfo.user_name(4242) == "4242"  # unknown uid: its number
        assert calls == [1000, 4242]
    finally:
        fdinfo.user_name.cache_clear()
