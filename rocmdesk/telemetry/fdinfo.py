"""Per-process GPU use from DRM fdinfo (``proc/PID/fdinfo/FD``), the way amdgpu_top and nvtop do it.

The kernel's DRM usage stats ("drm-usage-stats" in the kernel docs) print, for each open DRM
file: ``drm-driver``, ``drm-pdev`` (the PCI address), ``drm-client-id`` (one per DRM file, shared
by every fd duplicated or inherited from it), memory per region (``drm-memory-vram: 1024 KiB``;
newer kernels also ``drm-resident-vram``/``drm-total-vram``; unit-less means bytes) and busy time
per engine (``drm-engine-gfx: 123456 ns``). GPU % is the growth of ``drm-engine-gfx`` between
two scans divided by the wall time between them, so the first scan has no percentage.

Processes come and go during a scan and other users' fdinfo is unreadable: such entries are
skipped, never guessed.

DRM engine time does not include work that ROCm programs submit through KFD user-mode queues, so
the scan also reads the KFD's per-process folders (:mod:`rocmdesk.telemetry.kfd_procs`) and merges
them by (pid, GPU): a compute process with no DRM client still gets a row (name and command line
from ``proc/PID``), a process in both is listed once, and its compute use is CU occupancy (a
separate figure, never folded into the gfx-engine GPU %).
"""

from __future__ import annotations

import functools
import logging
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from rocmdesk import host
from rocmdesk.host import HostReadError, HostRoot
from rocmdesk.telemetry import kfd_procs
from rocmdesk.telemetry.accounts import parse_proc_status
from rocmdesk.telemetry.kfd_procs import KfdProcessGpu, KfdScan
from rocmdesk.telemetry.model import ProcessUse
from rocmdesk.telemetry.parsers import PCI_ADDRESS_RE, ValueProblem, clean, garbage

log = logging.getLogger(__name__)

_UNITS = {"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
_MEMORY_RE = re.compile(r"([0-9]{1,20})\s*(KiB|MiB|GiB|B)?")
_NS_RE = re.compile(r"([0-9]{1,20})\s*ns")
VRAM_KEYS = ("drm-memory-vram", "drm-resident-vram", "drm-total-vram")
GTT_KEYS = ("drm-memory-gtt", "drm-resident-gtt", "drm-total-gtt")
GFX_ENGINE_KEY = "drm-engine-gfx"
SOURCE_DRM, SOURCE_KFD = "drm-fdinfo", "kfd"
KFD_ONLY_GPU_PERCENT = ("no DRM fdinfo for this process: its GPU work goes through KFD compute queues, "
                        "which DRM engine time does not count (see CU occupancy)")
NOT_KFD = "not a KFD compute process on this GPU"
KFD_ONLY_GTT = "not reported by the KFD (no DRM fdinfo for this process)"


@dataclass(frozen=True, slots=True)
class DrmClient:
    """One DRM client (open render node) as one fdinfo file shows it."""

    pdev: str
    client_id: str
    vram_bytes: int | None
    gtt_bytes: int | None
    gfx_ns: int | None


def parse_memory(value: str) -> int:
    """A fdinfo memory amount ("1024 KiB", "5 MiB", "4096") in bytes."""
    match = _MEMORY_RE.fullmatch(value.strip())
    if not match:
        raise garbage(value)
    return int(match.group(1)) * _UNITS[match.group(2) or ""]


def parse_ns(value: str) -> int:
    match = _NS_RE.fullmatch(value.strip())
    if not match:
        raise garbage(value)
    return int(match.group(1))


def parse_fdinfo(text: str) -> DrmClient | None:
    """The amdgpu DRM client an fdinfo file describes, or None (not DRM, not amdgpu, incomplete)."""
    fields: dict[str, str] = {}
    for line in clean(text).splitlines():
        key, sep, value = line.partition(":")
        if sep and key.startswith("drm-"):
            fields[key.strip()] = value.strip()
    if fields.get("drm-driver") != "amdgpu":
        return None
    pdev = fields.get("drm-pdev", "").lower()
    client = fields.get("drm-client-id", "")
    if not PCI_ADDRESS_RE.fullmatch(pdev) or not client.isdigit():
        return None

    def first(keys: tuple[str, ...], parse: Callable[[str], int]) -> int | None:
        for key in keys:
            if key in fields:
                try:
                    return parse(fields[key])
                except ValueProblem:
                    return None
        return None

    return DrmClient(pdev, client, first(VRAM_KEYS, parse_memory), first(GTT_KEYS, parse_memory),
                     first((GFX_ENGINE_KEY,), parse_ns))


def parse_cmdline(data: str) -> str:
    """``proc/PID/cmdline`` (NUL-separated arguments) as one line."""
    return " ".join(part for part in data.split("\x00") if part)



@functools.lru_cache(maxsize=512)
def user_name(uid: int) -> str:
    """The account name of ``uid`` (its number when unknown); cached, because the lookup may go to
    LDAP/SSSD and runs for every GPU process on each scan."""
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)

class FdinfoScanner:
    """Scans ``proc`` for amdgpu clients; keeps the previous busy times to compute GPU %."""

    def __init__(self, root: HostRoot, clock: Callable[[], int] = time.monotonic_ns, *, kfd: bool = True) -> None:
        self.root = root
        self.clock = clock
        self.kfd = kfd  # also read sys/class/kfd/kfd/proc (compute processes)
        self._previous: dict[tuple[str, str], tuple[int, int]] = {}  # (pdev, client) -> (ns, t)
        self.skipped_unreadable = 0
        self.kfd_problem: str | None = None  # why the last scan could not list KFD processes

    def _proc(self) -> str | None:
        try:
            return self.root.real_path("proc")
        except HostReadError:
            return None

    def scan(self) -> list[ProcessUse]:
        """Every (process, GPU) pair from DRM fdinfo and the KFD, one row each, by pid and GPU."""
        rows = self._scan_drm()
        if not self.kfd:
            return rows
        scan = kfd_procs.read_kfd_processes(self.root)
        self.kfd_problem = scan.problem
        return merge_kfd(rows, scan, self._describe)

    def _describe(self, pid: int) -> tuple[str, str, str | None] | None:
        """(name, command line, user) of a process from ``proc/PID``; None once it has ended."""
        proc = self._proc()
        base = os.path.join(proc, str(pid)) if proc is not None else None
        try:
            if base is None:
                raise FileNotFoundError(pid)
            name = clean(host.read_fd_text(os.path.join(base, "comm"))).strip()
        except OSError:
            if self.root.is_live and (base is None or not os.path.isdir(base)):
                return None  # the process ended during the scan
            return f"pid {pid}", "", None  # a snapshot without proc/PID, or comm unreadable
        try:
            cmdline = parse_cmdline(host.read_fd_text(os.path.join(base, "cmdline")))
        except OSError:
            cmdline = ""
        return name or f"pid {pid}", cmdline, self._user(proc, str(pid)) if proc is not None else None

    def _scan_drm(self) -> list[ProcessUse]:
        proc = self._proc()
        if proc is None:
            return []
        try:
            pids = sorted((n for n in os.listdir(proc) if n.isdigit()), key=int)
        except OSError:
            return []
        now = self.clock()
        seen: set[tuple[str, str]] = set()
        current: dict[tuple[str, str], tuple[int, int]] = {}
        out: list[ProcessUse] = []
        self.skipped_unreadable = 0
        for pid in pids:
            clients = self._clients_of(proc, pid)
            if not clients:
                continue
            mine = []
            for client in clients:  # one DRM file seen through several fds/processes counts once
                key = (client.pdev, client.client_id)
                if key not in seen:
                    seen.add(key)
                    mine.append(client)
            if not mine:
                continue
            try:
                name = clean(host.read_fd_text(os.path.join(proc, pid, "comm"))).strip()
            except OSError:
                continue  # the process ended during the scan
            try:
                cmdline = parse_cmdline(host.read_fd_text(os.path.join(proc, pid, "cmdline")))
            except OSError:
                cmdline = ""
            user = self._user(proc, pid)
            by_gpu: dict[str, list[DrmClient]] = {}
            for client in mine:
                by_gpu.setdefault(client.pdev, []).append(client)
            for pdev, group in sorted(by_gpu.items()):
                out.append(ProcessUse(
                    pid=int(pid), pci=pdev, name=name or f"pid {pid}", cmdline=cmdline,
                    vram_bytes=_total(c.vram_bytes for c in group),
                    gtt_bytes=_total(c.gtt_bytes for c in group),
                    gpu_percent=self._percent(group, now, current),
                    user=user, sources=(SOURCE_DRM,),
                ))
        self._previous = current
        return out

    def _clients_of(self, proc: str, pid: str) -> list[DrmClient]:
        fdinfo = os.path.join(proc, pid, "fdinfo")
        try:
            fds = os.listdir(fdinfo)
        except OSError:
            return []  # gone, or not ours to read
        clients = []
        fd_dir = os.path.join(proc, pid, "fd")
        for fd in fds:
            try:
                target = os.readlink(os.path.join(fd_dir, fd))
            except OSError:
                target = None  # unreadable link (or a snapshot without fd links): look at fdinfo
            if target is not None and not target.startswith("/dev/dri/"):
                continue
            try:
                text = host.read_fd_text(os.path.join(fdinfo, fd), max_bytes=64 << 10)
            except OSError as exc:
                if isinstance(exc, HostReadError) or exc.errno not in (2, 3):  # ENOENT/ESRCH: fd closed
                    self.skipped_unreadable += 1
                continue
            client = parse_fdinfo(text)
            if client is not None:
                clients.append(client)
        return clients

    def _percent(self, group: list[DrmClient], now: int,
                 current: dict[tuple[str, str], tuple[int, int]]) -> float | None:
        """Sum over the process's clients of gfx busy time / wall time; None without a baseline."""
        share = 0.0
        complete = True
        for client in group:
            if client.gfx_ns is None:
                complete = False
                continue
            key = (client.pdev, client.client_id)
            current[key] = (client.gfx_ns, now)
            before = self._previous.get(key)
            if before is None or client.gfx_ns < before[0] or now <= before[1]:
                complete = False  # new client (or a reused id): no baseline yet
                continue
            share += (client.gfx_ns - before[0]) / (now - before[1])
        if not complete:
            return None
        return round(min(share * 100.0, 100.0), 1)

    def _user(self, proc: str, pid: str) -> str | None:
        if not self.root.is_live:
            return None
        try:
            status = host.read_fd_text(os.path.join(proc, pid, "status"))
        except OSError:
            return None
        ids = parse_proc_status(status)
        return user_name(ids.uid) if ids is not None else None


def _total(values) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def merge_kfd(rows: list[ProcessUse], scan: KfdScan,
              describe: Callable[[int], tuple[str, str, str | None] | None]) -> list[ProcessUse]:
    """DRM fdinfo rows plus the KFD's processes, one row per (pid, GPU), sorted by pid and GPU.

    A process in both keeps its DRM row, which gains the KFD's compute figures. VRAM is the larger
    of the two readings: KFD buffers live in the VM of the render node the runtime opened, so
    fdinfo's ``drm-memory-vram`` normally already includes them and a sum would count them twice.
    ``describe(pid)`` gives (name, command line, user) for a KFD-only process, None if it ended.
    """
    by_key = {(r.pid, r.pci): r for r in rows}
    kfd_pids = set()
    added: list[ProcessUse] = []
    for process in scan.processes:
        kfd_pids.add(process.pid)
        in_use = {g.gpu_id for g in process.gpus_in_use}
        described: tuple[str, str, str | None] | None = None
        for gpu in process.gpus:
            pci = gpu.pci or f"kfd gpu_id {gpu.gpu_id}"
            row = by_key.get((process.pid, pci))
            if row is None:
                if gpu.gpu_id not in in_use:
                    continue
                described = described or describe(process.pid)
                if described is None:
                    break  # ended while we looked
                name, cmdline, user = described
                row = ProcessUse(pid=process.pid, pci=pci, name=name, cmdline=cmdline, user=user, sources=())
                row.unavailable["gpu_percent"] = KFD_ONLY_GPU_PERCENT
                row.unavailable["gtt_bytes"] = KFD_ONLY_GTT
                by_key[(process.pid, pci)] = row
                added.append(row)
            _apply_kfd(row, gpu)
    for row in rows:
        if SOURCE_KFD not in row.sources:
            reason = scan.problem or NOT_KFD
            for key in ("cu_occupancy_percent", "cu_occupied", "sdma_us"):
                row.unavailable.setdefault(key, reason)
    merged = rows + added
    merged.sort(key=lambda r: (r.pid, r.pci))
    return merged


def _apply_kfd(row: ProcessUse, gpu: KfdProcessGpu) -> None:
    row.sources = (*row.sources, SOURCE_KFD)
    if gpu.vram_bytes is not None:
        row.vram_bytes = gpu.vram_bytes if row.vram_bytes is None else max(row.vram_bytes, gpu.vram_bytes)
    row.cu_occupied = gpu.cu_occupied
    row.cu_occupancy_percent = gpu.cu_occupancy_percent
    row.sdma_us = gpu.sdma_us
    for key in ("vram_bytes", "cu_occupied", "cu_occupancy_percent", "sdma_us"):
        if getattr(row, key) is None and key in gpu.unavailable:
            row.unavailable.setdefault(key, gpu.unavailable[key])
    if "gpu" in gpu.unavailable:
        row.unavailable.setdefault("gpu", gpu.unavailable["gpu"])
