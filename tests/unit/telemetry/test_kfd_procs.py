"""KFD per-process readings (sys/class/kfd/kfd/proc) from built trees, including every bad input."""

from __future__ import annotations

import errno
import shutil

import pytest

from rocmdesk import host
from rocmdesk.host import HostRoot
from rocmdesk.telemetry import kfd_procs
from rocmdesk.telemetry.kfd_procs import (
    MISSING_REASONS,
    NO_KFD_PROC,
    gpu_ids_in,
    parse_counter,
    pci_from_location,
    read_kfd_processes,
    read_topology,
)
from rocmdesk.telemetry.parsers import ValueProblem
from tests.support.sysfs_tree import GpuSpec, KfdUse, add_kfd_process, build_root, kfd_gpu_ids, location_id

CU_PROPS = {"simd_count": "192", "simd_per_cu": "2"}  # 96 CUs (RX 7900 XTX)


@pytest.fixture
def tree(tmp_path):
    build_root(tmp_path, [GpuSpec("rx7900xtx", pci="0000:03:00.0", card=0, extra_props=dict(CU_PROPS)),
                          GpuSpec("rx6600", pci="0000:0a:00.0", card=1)])
    return tmp_path


def ids(tree):
    found = kfd_gpu_ids(tree)
    return found["0000:03:00.0"], found["0000:0a:00.0"]


def test_parse_counter():
    assert parse_counter("4096\n") == 4096
    assert parse_counter("0") == 0
    assert parse_counter("12\x00\x00\x00") == 12  # NUL-padded page buffer
    for bad, reason in (("", "empty file"), ("  \n", "empty file"), ("-1", "garbage value '-1'"),
                        ("12ab", "garbage value '12ab'"), ("1.5", "garbage value '1.5'"), ("١٢", "garbage")):
        with pytest.raises(ValueProblem, match=reason):
            parse_counter(bad)


def test_gpu_ids_and_pci_round_trip():
    assert gpu_ids_in(["pasid", "queues", "vram_2111", "sdma_2111", "stats_3222", "vram_x", "counters_9"]) == {
        2111, 3222}
    for pci in ("0000:03:00.0", "0000:c1:1f.7", "0001:0a:00.1"):
        assert pci_from_location(*location_id(pci)) == pci


def test_topology_maps_gpu_id_to_card_and_cu_count(tree):
    big, small = ids(tree)
    topo = read_topology(HostRoot(tree))
    assert set(topo) == {big, small}  # the CPU node (gpu_id 0) is left out
    assert topo[big].pci == "0000:03:00.0" and topo[big].cu_count == 96 and topo[big].node_id == 1
    assert topo[small].pci == "0000:0a:00.0" and topo[small].cu_count is None  # no simd_per_cu


def test_reads_vram_sdma_occupancy_and_queues(tree):
    big, small = ids(tree)
    add_kfd_process(tree, 4242, {big: KfdUse(vram=3 << 30, sdma=1500, cu=24, evicted_ms=7, queues=2),
                                 small: KfdUse(vram=0, sdma=0, cu=None)}, pasid=32770)
    scan = read_kfd_processes(HostRoot(tree))
    assert scan.problem is None
    (proc,) = scan.processes
    assert proc.pid == 4242 and proc.pasid == 32770 and not proc.unavailable
    first, second = proc.gpus
    assert (first.gpu_id, first.pci, first.vram_bytes, first.sdma_us, first.cu_occupied, first.evicted_ms,
            first.queues) == (big, "0000:03:00.0", 3 << 30, 1500, 24, 7, 2)
    assert first.cu_occupancy_percent == 25.0 and first.unavailable == {}
    assert second.cu_occupied is None and second.cu_occupancy_percent is None
    assert second.unavailable["cu_occupied"] == MISSING_REASONS["cu_occupied"]
    assert proc.gpus_in_use == (first,)  # the idle GPU's folder is not use


def test_cu_count_unknown_gives_reason_not_percent(tree):
    _big, small = ids(tree)
    add_kfd_process(tree, 10, {small: KfdUse(cu=5, queues=1)})
    gpu = read_kfd_processes(HostRoot(tree)).processes[0].gpus[0]
    assert gpu.cu_occupied == 5 and gpu.cu_occupancy_percent is None
    assert "CU count is unknown" in gpu.unavailable["cu_occupancy_percent"]


def test_process_holding_nothing_is_listed_on_all_its_gpus(tree):
    big, small = ids(tree)
    add_kfd_process(tree, 11, {big: KfdUse(), small: KfdUse()})
    proc = read_kfd_processes(HostRoot(tree)).processes[0]
    assert [g.gpu_id for g in proc.gpus_in_use] == sorted([big, small])


def test_no_kfd_folder(tmp_path):
    assert read_kfd_processes(HostRoot(tmp_path)) == kfd_procs.KfdScan((), NO_KFD_PROC)


def test_empty_kfd_folder_and_stray_entries(tree):
    (tree / kfd_procs.KFD_PROC).mkdir(parents=True)
    (tree / kfd_procs.KFD_PROC / "README").write_text("not a pid")
    assert read_kfd_processes(HostRoot(tree)) == kfd_procs.KfdScan(())


def test_older_kernel_without_vram_sdma_stats(tree):
    """A pasid-only folder (the first kernels with kfd/proc) gives the process and reasons, not zeros."""
    big, _small = ids(tree)
    add_kfd_process(tree, 12, {big: KfdUse(vram=None, sdma=None, evicted_ms=None, queues=1)})
    proc = read_kfd_processes(HostRoot(tree)).processes[0]
    (gpu,) = proc.gpus
    assert (gpu.vram_bytes, gpu.sdma_us, gpu.cu_occupied, gpu.evicted_ms) == (None, None, None, None)
    assert gpu.unavailable["vram_bytes"] == MISSING_REASONS["vram_bytes"]
    assert gpu.unavailable["sdma_us"] == MISSING_REASONS["sdma_us"]


@pytest.mark.parametrize(("content", "reason"), [("", "empty file"), ("lots\n", "garbage value 'lots'"),
                                                  ("-5\n", "garbage value '-5'")])
def test_empty_and_garbage_values(tree, content, reason):
    big, _small = ids(tree)
    base = add_kfd_process(tree, 13, {big: KfdUse(vram=1, sdma=2, cu=3, queues=1)})
    (base / f"vram_{big}").write_text(content)
    (base / f"stats_{big}" / "cu_occupancy").write_text(content)
    (base / "pasid").write_text(content)
    proc = read_kfd_processes(HostRoot(tree)).processes[0]
    assert proc.pasid is None and proc.unavailable["pasid"] == reason
    gpu = proc.gpus[0]
    assert gpu.vram_bytes is None and gpu.unavailable["vram_bytes"] == reason
    assert gpu.cu_occupied is None and gpu.unavailable["cu_occupied"] == reason
    assert gpu.cu_occupancy_percent is None and gpu.unavailable["cu_occupancy_percent"] == reason
    assert gpu.sdma_us == 2


def test_garbage_queue_gpuid_is_skipped(tree):
    big, _small = ids(tree)
    base = add_kfd_process(tree, 14, {big: KfdUse(vram=4096, queues=1)})
    (base / "queues" / "9").mkdir()
    (base / "queues" / "9" / "gpuid").write_text("xyz")
    gpu = read_kfd_processes(HostRoot(tree)).processes[0].gpus[0]
    assert gpu.queues == 1 and gpu.vram_bytes == 4096


@pytest.mark.parametrize(("err", "reason"), [(errno.EACCES, "unreadable (permission denied)"),
                                             (errno.ENODEV, "device gone (ENODEV)")])
def test_unreadable_files_give_reasons(tree, monkeypatch, err, reason):
    big, _small = ids(tree)
    add_kfd_process(tree, 15, {big: KfdUse(vram=4096, sdma=10, cu=1, queues=1)})
    real = host.read_fd_text

    def failing(path, max_bytes=host.DEFAULT_MAX_BYTES):
        if path.endswith((f"sdma_{big}", "cu_occupancy")):
            raise OSError(err, "nope", path)
        return real(path, max_bytes)

    monkeypatch.setattr(host, "read_fd_text", failing)
    gpu = read_kfd_processes(HostRoot(tree)).processes[0].gpus[0]
    assert gpu.vram_bytes == 4096
    assert gpu.sdma_us is None and gpu.unavailable["sdma_us"] == reason
    assert gpu.cu_occupied is None and gpu.unavailable["cu_occupied"] == reason


@pytest.mark.parametrize("err", [errno.ENOENT, errno.ENODEV])
def test_process_vanishing_mid_read_is_dropped(tree, monkeypatch, err):
    big, _small = ids(tree)
    add_kfd_process(tree, 16, {big: KfdUse(vram=1, queues=1)})
    add_kfd_process(tree, 17, {big: KfdUse(vram=2, queues=1)})
    real = host.read_fd_text

    def vanish(path, max_bytes=host.DEFAULT_MAX_BYTES):
        if path.endswith(f"16/sdma_{big}"):
            shutil.rmtree(tree / kfd_procs.KFD_PROC / "16")  # the process exits between two reads
            raise OSError(err, "gone", path)
        return real(path, max_bytes)

    monkeypatch.setattr(host, "read_fd_text", vanish)
    scan = read_kfd_processes(HostRoot(tree))
    assert [p.pid for p in scan.processes] == [17]


def test_gpu_id_not_in_topology(tree):
    add_kfd_process(tree, 18, {9999: KfdUse(vram=8192, cu=4, queues=1)})
    gpu = read_kfd_processes(HostRoot(tree)).processes[0].gpus[0]
    assert gpu.gpu_id == 9999 and gpu.node is None and gpu.pci is None
    assert gpu.vram_bytes == 8192 and gpu.cu_occupied == 4 and gpu.cu_occupancy_percent is None
    assert "9999 is not in the KFD topology" in gpu.unavailable["gpu"]
    assert gpu.unavailable["cu_occupancy_percent"] == gpu.unavailable["gpu"]


def test_unreadable_topology_node_is_skipped(tree, monkeypatch):
    big, _small = ids(tree)
    (tree / kfd_procs.KFD_NODES / "2" / "gpu_id").write_text("garbage")
    assert set(read_topology(HostRoot(tree))) == {big}
    real = host.read_fd_text

    def denied(path, max_bytes=host.DEFAULT_MAX_BYTES):
        if path.endswith("nodes/1/properties"):
            raise PermissionError(errno.EACCES, "denied", path)
        return real(path, max_bytes)

    monkeypatch.setattr(host, "read_fd_text", denied)
    assert read_topology(HostRoot(tree)) == {}
