"""Per-process compute use from the KFD (ROCm's compute driver): ``sys/class/kfd/kfd/proc/<pid>/``.

ROCm programs (PyTorch, HIP) submit work through KFD user-mode queues, which the DRM fdinfo
engine counters (:mod:`rocmdesk.telemetry.fdinfo`) do not see, so a training job looks idle
there. The KFD keeps its own per-process folder, world-readable (mode 0444), which is what
``rocm-smi --showpids`` reads. What the kernel writes there (drivers/gpu/drm/amd/amdkfd/
kfd_process.c, kfd_priv.h; commit ids from the kernel's git history):

- ``pasid``: the process address space id.
- ``vram_<gpu_id>``: VRAM the process holds on that GPU, in **bytes** (``atomic64`` vram_usage,
  printed with ``%llu``). Added by "drm/amdkfd: Track GPU memory utilization per process"
  (d4566dee, 2020-04-28).
- ``sdma_<gpu_id>``: time the SDMA (copy) engines worked for the process **since it was
  created**, in **microseconds** (a 100 MHz counter divided by SDMA_ACTIVITY_DIVISOR = 100).
  Added by "drm/amdkfd: Track SDMA utilization per process" (32cb59f3, 2020-05-26).
- ``stats_<gpu_id>/evicted_ms``: how long the process's queues were evicted, in ms.
- ``stats_<gpu_id>/cu_occupancy``: **number of compute units** busy with the process's waves
  right now (a snapshot, not a percentage: waves in flight / max waves per CU, rounded up).
  Added by "drm/amd/amdkfd: Surface files in Sysfs ... compute units that are in use" (f2fa07b3,
  2020-09-29); only created when the GPU's kfd2kgd backend implements ``get_cu_occupancy``
  (gfx9 family at first; Aldebaran/MI200 from cff7d3b7, 2022-11-16), so it is often absent.
- ``queues/<queue id>/gpuid``: one folder per user-mode queue.

The entries exist for *every* GPU the process may use, busy or not: kfd_init_apertures()
(kfd_flat_memory.c) creates a per-device record for each KFD device when the process opens
/dev/kfd. So a process counts as using a GPU only when it has a queue, memory, SDMA time or busy
CUs there (:attr:`KfdProcessGpu.in_use`); otherwise every ROCm process would be listed on every GPU.

``<gpu_id>`` is the ``gpu_id`` file of a KFD topology node (``topology/nodes/N/gpu_id``); the
node's ``properties`` give its PCI ``domain``/``location_id`` (how discovery.py pairs nodes and
cards) and its CU count, ``simd_count / simd_per_cu`` (how the ROCm runtime computes
HSA_EXT_AGENT_INFO_COMPUTE_UNIT_COUNT). rocm-smi (rocm_smi_lib src/rocm_smi_kfd.cc) prints one
"CU OCCUPANCY" percent per process, summed over its GPUs; rocmdesk keeps it per GPU. How the two
relate is pinned by tests/integration/test_kfd_procs_oracle.py against rocm-smi 5.2.3.

Every value that cannot be read is None with a reason; a process that ends during the scan is
dropped, never guessed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from rocmdesk.host import HostReadError, HostRoot, ReadFailure
from rocmdesk.telemetry.parsers import MAX_INT_DIGITS, ValueProblem, clean, garbage, parse_kfd_properties

log = logging.getLogger(__name__)

KFD_PROC = "sys/class/kfd/kfd/proc"
KFD_NODES = "sys/class/kfd/kfd/topology/nodes"
_GPU_FILE_RE = re.compile(r"(?:vram|sdma|stats)_([0-9]+)")
_MAX_BYTES = 4096

NO_KFD_PROC = ("no KFD process folder (sys/class/kfd/kfd/proc): amdgpu's KFD is not loaded, "
               "or the kernel is too old to list compute processes")
MISSING_REASONS = {
    "vram_bytes": "this kernel does not report per-process VRAM (no vram_<gpu_id> file)",
    "sdma_us": "this kernel does not report per-process SDMA time (no sdma_<gpu_id> file)",
    "cu_occupied": "this GPU or kernel does not report CU occupancy (no stats_<gpu_id>/cu_occupancy)",
    "evicted_ms": "this kernel does not report eviction time (no stats_<gpu_id>/evicted_ms)",
    "pasid": "no pasid file",
}


@dataclass(frozen=True, slots=True)
class KfdGpuNode:
    """A GPU node of the KFD topology, keyed by its ``gpu_id``."""

    gpu_id: int
    node_id: int
    pci: str | None  # "0000:03:00.0", from domain + location_id
    cu_count: int | None  # simd_count / simd_per_cu


@dataclass(frozen=True, slots=True)
class KfdProcessGpu:
    """One process's use of one GPU as the KFD reports it; None values have a reason."""

    gpu_id: int
    node: KfdGpuNode | None  # None: the gpu_id is not in the topology
    vram_bytes: int | None
    sdma_us: int | None  # cumulative since the process started
    cu_occupied: int | None  # CUs busy with its waves now
    evicted_ms: int | None
    queues: int  # user-mode queues the process has on this GPU
    unavailable: dict[str, str] = field(default_factory=dict)

    @property
    def pci(self) -> str | None:
        return self.node.pci if self.node is not None else None

    @property
    def cu_count(self) -> int | None:
        return self.node.cu_count if self.node is not None else None

    @property
    def cu_occupancy_percent(self) -> float | None:
        if self.cu_occupied is None or not self.cu_count:
            return None
        return round(min(100.0, self.cu_occupied * 100.0 / self.cu_count), 1)

    @property
    def in_use(self) -> bool:
        """The KFD keeps a folder per GPU the runtime opened; only some hold work or memory."""
        return bool(self.queues or self.vram_bytes or self.cu_occupied or self.sdma_us)


@dataclass(frozen=True, slots=True)
class KfdProcess:
    pid: int
    pasid: int | None
    gpus: tuple[KfdProcessGpu, ...]
    unavailable: dict[str, str] = field(default_factory=dict)

    @property
    def gpus_in_use(self) -> tuple[KfdProcessGpu, ...]:
        """The GPUs it uses; all of them when it holds nothing anywhere (it still opened the KFD)."""
        used = tuple(g for g in self.gpus if g.in_use)
        return used or self.gpus


@dataclass(frozen=True, slots=True)
class KfdScan:
    processes: tuple[KfdProcess, ...]
    problem: str | None = None  # why nothing could be listed at all

    def by_pid(self) -> dict[int, KfdProcess]:
        return {p.pid: p for p in self.processes}


# -- pure parsers --------------------------------------------------------------------------------


def parse_counter(text: str) -> int:
    """A KFD sysfs counter: one unsigned decimal number ("4096\\n")."""
    body = clean(text).strip()
    if not body.isascii() or not body.isdigit() or len(body) > MAX_INT_DIGITS:
        raise garbage(text)
    return int(body)


def gpu_ids_in(names: Iterable[str]) -> set[int]:
    """gpu_ids named by ``vram_<id>``, ``sdma_<id>`` and ``stats_<id>`` entries of a process folder."""
    out = set()
    for name in names:
        match = _GPU_FILE_RE.fullmatch(name)
        if match:
            out.add(int(match.group(1)))
    return out


def pci_from_location(domain: int, location_id: int) -> str:
    """KFD's (domain, bus << 8 | dev << 3 | fn) back to "0000:03:00.0"."""
    return f"{domain:04x}:{location_id >> 8 & 0xFF:02x}:{location_id >> 3 & 0x1F:02x}.{location_id & 7}"


def node_from_properties(node_id: int, gpu_id: int, props: dict[str, int]) -> KfdGpuNode:
    pci = None
    if "location_id" in props and props.get("domain", 0) >= 0 and props["location_id"] >= 0:
        pci = pci_from_location(props.get("domain", 0), props["location_id"])
    simd, per_cu = props.get("simd_count", 0), props.get("simd_per_cu", 0)
    cu_count = simd // per_cu if simd > 0 and per_cu > 0 else None
    return KfdGpuNode(gpu_id, node_id, pci, cu_count or None)


# -- reading ---------------------------------------------------------------------------------------


def read_topology(root: HostRoot) -> dict[int, KfdGpuNode]:
    """GPU nodes by gpu_id (CPU nodes have gpu_id 0 and are left out); unreadable nodes skipped."""
    nodes: dict[int, KfdGpuNode] = {}
    for name in root.listdir(KFD_NODES):
        if not name.isdigit():
            continue
        try:
            gpu_id = parse_counter(root.read_text(f"{KFD_NODES}/{name}/gpu_id", _MAX_BYTES))
            props = parse_kfd_properties(root.read_text(f"{KFD_NODES}/{name}/properties"))
        except (HostReadError, ValueProblem) as exc:
            log.debug("KFD node %s skipped: %s", name, exc)
            continue
        if gpu_id:
            nodes.setdefault(gpu_id, node_from_properties(int(name), gpu_id, props))
    return nodes


class _Gone(Exception):
    """The process's folder disappeared while we read it (the process ended)."""


class _Reader:
    def __init__(self, root: HostRoot, base: str) -> None:
        self.root = root
        self.base = base

    def counter(self, rel: str, key: str, unavailable: dict[str, str]) -> int | None:
        try:
            text = self.root.read_text(f"{self.base}/{rel}", _MAX_BYTES)
        except HostReadError as exc:
            if exc.failure in (ReadFailure.MISSING, ReadFailure.GONE) and not self.root.is_dir(self.base):
                raise _Gone from exc  # sysfs answers ENOENT or ENODEV once the process has ended
            if exc.failure is ReadFailure.MISSING:
                unavailable[key] = MISSING_REASONS.get(key, exc.failure.value)
            else:
                unavailable[key] = exc.failure.value
            return None
        try:
            return parse_counter(text)
        except ValueProblem as exc:
            unavailable[key] = str(exc)
            return None

    def queue_gpu_ids(self) -> list[int]:
        """gpu_id of each user-mode queue (unreadable or garbage queue files are skipped)."""
        out = []
        for queue in self.root.listdir(f"{self.base}/queues"):
            try:
                out.append(parse_counter(self.root.read_text(f"{self.base}/queues/{queue}/gpuid", _MAX_BYTES)))
            except (HostReadError, ValueProblem):
                continue  # the queue was destroyed during the scan, or a file we cannot use
        return out


def read_process(root: HostRoot, pid: int, topology: dict[int, KfdGpuNode]) -> KfdProcess | None:
    """One process's KFD data, or None when its folder is gone (or vanishes while being read)."""
    base = f"{KFD_PROC}/{pid}"
    names = root.listdir(base)
    if not names and not root.is_dir(base):
        return None
    reader = _Reader(root, base)
    unavailable: dict[str, str] = {}
    try:
        pasid = reader.counter("pasid", "pasid", unavailable)
        queue_ids = reader.queue_gpu_ids()
        gpus = []
        for gpu_id in sorted(gpu_ids_in(names) | set(queue_ids)):
            reasons: dict[str, str] = {}
            node = topology.get(gpu_id)
            if node is None:
                reasons["gpu"] = f"gpu_id {gpu_id} is not in the KFD topology (GPU removed or topology unreadable)"
            vram = reader.counter(f"vram_{gpu_id}", "vram_bytes", reasons)
            sdma = reader.counter(f"sdma_{gpu_id}", "sdma_us", reasons)
            cu = reader.counter(f"stats_{gpu_id}/cu_occupancy", "cu_occupied", reasons)
            evicted = reader.counter(f"stats_{gpu_id}/evicted_ms", "evicted_ms", reasons)
            if cu is not None and (node is None or not node.cu_count):
                reasons["cu_occupancy_percent"] = (
                    "the GPU's CU count is unknown (simd_count/simd_per_cu missing from its KFD properties)"
                    if node is not None else reasons["gpu"])
            elif cu is None:
                reasons["cu_occupancy_percent"] = reasons["cu_occupied"]
            gpus.append(KfdProcessGpu(gpu_id, node, vram, sdma, cu, evicted, queue_ids.count(gpu_id), reasons))
    except _Gone:
        return None
    return KfdProcess(pid, pasid, tuple(gpus), unavailable)


def read_kfd_processes(root: HostRoot, topology: dict[int, KfdGpuNode] | None = None) -> KfdScan:
    """Every process the KFD lists, in pid order."""
    if not root.is_dir(KFD_PROC):
        return KfdScan((), NO_KFD_PROC)
    if topology is None:
        topology = read_topology(root)
    out = []
    for name in root.listdir(KFD_PROC):
        if not name.isdigit():
            continue
        process = read_process(root, int(name), topology)
        if process is not None:
            out.append(process)
    out.sort(key=lambda p: p.pid)
    return KfdScan(tuple(out))
