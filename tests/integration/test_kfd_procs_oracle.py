"""Oracle: Debian's real rocm-smi 5.2.3 ``--showpids``/``--showpidgpus`` and rocmdesk's KFD reader agree.

The tree (sys with KFD topology and ``kfd/proc`` folders) is bind-mounted over /sys inside a
private mount namespace (``unshare --mount --propagation private``), like test_rocm_smi_oracle.py;
nothing is mounted outside it. The pids are real ``sleep`` processes started here, because
rocm-smi names processes with ``ps``.

The kernel gives every process a vram_/sdma_/stats_ entry for every GPU it may use
(kfd_init_apertures() in kfd_flat_memory.c makes a per-device record for each KFD device), so the
trees do too. How rocm-smi 5.2.3 counts (rocm_smi_lib: rsmi_compute_process_info_by_pid_get() puts
every topology GPU in the set, GetProcessInfoForPID() in src/rocm_smi_kfd.cc sums over it), and so
what is compared, as measured here:
- "GPU(s)" is the number of GPUs with a queue (``queues/*/gpuid``): rocmdesk's ``queues``;
- VRAM USED and SDMA USED are sums over all the GPU entries (any missing one makes all "unknown");
- CU OCCUPANCY is sum(cu_occupancy) * 100 // sum(CU count) over the GPUs that have the file, with
  CU count = simd_arrays_per_engine * array_count * cu_per_simd_array (rocmdesk: simd_count /
  simd_per_cu, as the ROCm runtime counts CUs; the tree makes both 104). rocmdesk shows it per GPU;
- where no GPU has ``cu_occupancy`` rocm-smi prints 0; rocmdesk says N/A with a reason.
Newer rocm_smi_lib sums over the queued GPUs only; 5.2.3 is what is installed.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from rocmdesk.host import HostRoot
from rocmdesk.telemetry.discovery import discover_gpus
from rocmdesk.telemetry.kfd_procs import read_kfd_processes
from tests.support.instinct import ROCM_SMI_KFD_PROPS
from tests.support.rocm_smi_oracle import require_private_mounts, run_rocm_smi_on
from tests.support.sysfs_tree import GpuSpec, KfdUse, add_kfd_process, build_root, kfd_gpu_ids

pytestmark = pytest.mark.oracle

SLEEP = "/bin/sleep"
CU_PROPS = {**ROCM_SMI_KFD_PROPS, "simd_count": "208", "simd_per_cu": "2"}  # 104 CUs either way
A, B = "0000:03:00.0", "0000:0a:00.0"


def run_in_namespace(tree, args: str) -> str:
    return run_rocm_smi_on(tree, args).stdout


@pytest.fixture(scope="module")
def oracle_available(tmp_path_factory):
    require_private_mounts(tmp_path_factory, SLEEP)


@pytest.fixture
def sleepers():
    procs = [subprocess.Popen([SLEEP, "120"]) for _ in range(4)]
    try:
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.kill()
            p.wait(5)


def test_showpids_and_showpidgpus_match(oracle_available, sleepers, tmp_path):
    build_root(tmp_path, [GpuSpec("rx7900xtx", pci=A, card=0, extra_props=dict(CU_PROPS)),
                          GpuSpec("rx6600", pci=B, card=1, extra_props=dict(CU_PROPS))])
    gid = kfd_gpu_ids(tmp_path)
    busy, one_gpu, no_cu, idle = sleepers
    add_kfd_process(tmp_path, busy, {gid[A]: KfdUse(vram=3 << 30, sdma=1500, cu=26, queues=2),
                                     gid[B]: KfdUse(vram=1 << 20, sdma=25, cu=52, queues=1)}, comm="sleep")
    add_kfd_process(tmp_path, one_gpu, {gid[A]: KfdUse(vram=123456, sdma=7, cu=13, queues=1),
                                        gid[B]: KfdUse(vram=4096, sdma=0, cu=0)}, comm="sleep")
    add_kfd_process(tmp_path, no_cu, {gid[A]: KfdUse(vram=0, sdma=0), gid[B]: KfdUse(vram=4096, sdma=3, queues=1)},
                    comm="sleep")  # GPUs whose driver has no get_cu_occupancy: no cu_occupancy files
    add_kfd_process(tmp_path, idle, {gid[A]: KfdUse(vram=8192), gid[B]: KfdUse()}, comm="sleep")

    text = run_in_namespace(tmp_path, "--showpids --json")
    assert text.strip().startswith("{"), text
    theirs = {int(k[3:]): [v.strip() for v in row.split(",")] for k, row in json.loads(text)["system"].items()}
    ours = read_kfd_processes(HostRoot(tmp_path)).by_pid()
    assert set(theirs) == set(ours) == set(sleepers)

    for pid, (name, ngpus, vram, sdma, cu) in theirs.items():
        gpus = ours[pid].gpus
        assert name == "sleep"
        assert int(ngpus) == sum(1 for g in gpus if g.queues), pid
        assert int(vram) == sum(g.vram_bytes for g in gpus), pid
        assert int(sdma) == sum(g.sdma_us for g in gpus), pid
        reporting = [g for g in gpus if g.cu_occupied is not None]
        if reporting:
            assert int(cu) == sum(g.cu_occupied for g in reporting) * 100 // sum(g.cu_count for g in reporting), pid
        else:
            assert cu == "0" and all(g.cu_occupancy_percent is None for g in gpus)  # rocm-smi's fake 0
            assert all("cu_occupancy" in g.unavailable["cu_occupancy_percent"] for g in gpus)
    # rocmdesk's per-GPU figures behind those sums, and which GPUs it lists the process on
    assert [g.cu_occupancy_percent for g in ours[busy].gpus] == [25.0, 50.0]
    assert [g.pci for g in ours[one_gpu].gpus_in_use] == [A, B]  # B holds 4 KiB: it is used
    assert [g.pci for g in ours[no_cu].gpus_in_use] == [B]
    assert [g.pci for g in ours[idle].gpus_in_use] == [A]

    # --showpidgpus: rocm-smi's device indices are the DRM card order; ours map gpu_id -> PCI -> card.
    listing = run_in_namespace(tmp_path, "--showpidgpus")
    found = {int(pid): {int(i) for i in devices.split()}
             for pid, devices in re.findall(r"PID (\d+) is using \d+ DRM device\(s\):\n([\d ]*)", listing)}
    card_index = {g.pci: int(g.card[4:]) for g in discover_gpus(HostRoot(tmp_path))}
    expected = {pid: {card_index[g.pci] for g in p.gpus if g.queues} for pid, p in ours.items()
                if any(g.queues for g in p.gpus)}
    assert found == expected
    assert expected[busy] == {0, 1} and expected[one_gpu] == {0} and expected[no_cu] == {1}
