"""Which processes hold the GPU open: /proc/<pid>/fd links to /dev/kfd or a DRM render node, read through a
:class:`~rocmdesk.host.HostRoot` (the live /proc, or a snapshot's relative links). Bounded in count and time:
/proc can hold tens of thousands of entries and other users' fd folders are unreadable."""

from __future__ import annotations

import logging
import os
import time

from rocmdesk.host import HostReadError, HostRoot

log = logging.getLogger(__name__)

PROCESS_SCAN_LIMIT = 4096
PROCESS_SCAN_BUDGET_S = 0.3
COMPUTE_DEVICES = ("/dev/kfd", "/dev/dri/renderD")  # what a GPU program opens
ANY_GPU_DEVICE = ("/dev/kfd", "/dev/dri/")  # also the display nodes a compositor holds (support bundles)


def gpu_processes(root: HostRoot, devices: tuple[str, ...] = COMPUTE_DEVICES) -> list[tuple[int, str]]:
    """(pid, name) of processes holding a device under one of ``devices`` open; bounded in count and
    time. Other users' processes are unreadable and silently left out."""
    out = []
    start = time.monotonic()
    self_pid = os.getpid() if root.is_live else None
    pids = [n for n in root.listdir("/proc") if n.isdigit()][:PROCESS_SCAN_LIMIT]
    for name in pids:
        if time.monotonic() - start > PROCESS_SCAN_BUDGET_S:
            log.info("GPU process scan stopped after %.2f s", PROCESS_SCAN_BUDGET_S)
            break
        pid = int(name)
        if pid == self_pid:
            continue
        if holds_gpu(root, pid, devices):
            comm = (root.try_read_text(f"/proc/{pid}/comm") or "?").strip()
            out.append((pid, comm))
    return out


def link_target(root: HostRoot, host_path: str) -> str | None:
    """A /proc link's target in host terms. The live /proc gives absolute targets; a support
    snapshot stores them relative (``../../../dev/kfd``), resolved here inside the root."""
    target = root.readlink(host_path)
    if target is None or target.startswith("/"):
        return target
    try:
        return root.resolve_host_path(host_path)
    except HostReadError:
        return None


def holds_gpu(root: HostRoot, pid: int, devices: tuple[str, ...] = COMPUTE_DEVICES) -> bool:
    """Whether process ``pid`` has a device under one of ``devices`` open (/dev/kfd or a render node by default)."""
    fd_dir = f"/proc/{pid}/fd"
    for fd in root.listdir(fd_dir)[:1024]:
        target = link_target(root, f"{fd_dir}/{fd}")
        if target is not None and target.startswith(devices):
            return True
    return False
