"""Does a demo recording describe its demo machine? (issue 10, item 5: "the demo is a whole machine").

The demo plays a recording (resources/demo/NAME.jsonl.gz, tools/make_demo.py) in Overview, Graphs and
Processes, and reads the machine bundle of the same name (NAME.machine.tar.gz, tools/make_demo_machines.py)
in Diagnosis, Tuning and Report. A support engineer compares the tabs at once: a ComfyUI with one PID and
home folder in Processes and another in Diagnosis tells them the demo is two machines glued together.

:func:`disagreements` lists, in words, every place where the two differ: the GPUs (count, PCI addresses
and identity as discovery reads them from the machine's sysfs), power caps and temperature limits, the
GPU processes (the machine's /proc against the recording: PID, name, command line, user, GPU), and the PIDs
the machine's diagnosis names in its evidence. An empty list means one machine.

Not compared, by design: ``unique_id`` (the capture replaces it by a salted hash, rocmdesk/report/redact.py,
so no recording can carry the bundle's value) and readings the recording marks "not recorded in this demo".
"""

from __future__ import annotations

import re
from typing import Any

from rocmdesk.host import HostRoot
from rocmdesk.telemetry.accounts import parse_passwd, parse_proc_status
from rocmdesk.telemetry.discovery import discover_gpus
from rocmdesk.telemetry.fdinfo import parse_cmdline
from rocmdesk.telemetry.proc_scan import gpu_processes, link_target
from rocmdesk.telemetry.recording import Recording

# GpuInfo fields both sides must agree on (unique_id excluded: see the module docstring)
IDENTITY_FIELDS = ("card", "name", "device_id", "revision_id", "subsystem", "gfx_target", "kind", "driver",
                   "vram_total_bytes", "vbios", "driver_version", "rocm_version", "kfd_node", "render_node")
# per-GPU static values of the recording (recording.static) and the machine's sysfs sample
STATIC_FIELDS = ("power_cap_w", "power_cap_min_w", "power_cap_max_w", "power_cap_default_w",
                 "temperature_crit_c", "temperature_emergency_c", "vram_total_bytes", "gtt_total_bytes")
# how the diagnosis names a process in its evidence, subjects and details
PID_PATTERNS = (re.compile(r"/proc/(\d+)(?:/|$)"), re.compile(r"\b(?:process|pid|PID)\s+(\d+)\b"))


def _as_plain(value: Any) -> Any:
    return value.to_json() if hasattr(value, "to_json") else value


def gpu_disagreements(recording: Recording, root: HostRoot, sample: Any) -> list[str]:
    """The GPUs: the same PCI addresses, one for one, with the same identity and static values."""
    out = []
    machine = {g.pci: g for g in discover_gpus(root)}
    played = {g.pci: g for g in recording.gpus}
    if sorted(machine) != sorted(played):
        return [f"GPUs: the recording plays {sorted(played)}, the machine has {sorted(machine)}"]
    for pci, info in played.items():
        for name in IDENTITY_FIELDS:
            mine, theirs = getattr(info, name), getattr(machine[pci], name)
            if mine != theirs:
                out.append(f"GPU {pci} {name}: recording {mine!r}, machine {theirs!r}")
    by_pci = {g.info.pci: g for g in sample.gpus} if sample is not None else {}
    for info, static in zip(recording.gpus, recording.static, strict=True):
        reading = by_pci.get(info.pci)
        if reading is None:
            out.append(f"GPU {info.pci}: the machine's sysfs gives no reading")
            continue
        for name in STATIC_FIELDS:
            if name not in static or name in static.get("unavailable", {}):
                continue
            mine, theirs = static[name], _as_plain(getattr(reading, name))
            if mine != theirs:
                out.append(f"GPU {info.pci} {name}: recording {mine!r}, machine {theirs!r}")
    return out


def _user_of(root: HostRoot, pid: int) -> str | None:
    """The account name of a machine process, from its status Uid and the machine's own /etc/passwd."""
    status = parse_proc_status(root.try_read_text(f"/proc/{pid}/status") or "")
    if status is None:
        return None
    names = {e.uid: e.name for e in parse_passwd(root.try_read_text("/etc/passwd") or "")}
    return names.get(status.uid, str(status.uid))


def _render_nodes_held(root: HostRoot, pid: int) -> set[str]:
    out = set()
    for fd in root.listdir(f"/proc/{pid}/fd"):
        target = link_target(root, f"/proc/{pid}/fd/{fd}") or ""
        if target.startswith("/dev/dri/renderD"):
            out.add(target.rsplit("/", 1)[-1])
    return out


def process_disagreements(recording: Recording, root: HostRoot) -> list[str]:
    """The processes: the machine's GPU processes are the recording's, each with the same name, command
    line, user and (when it holds a render node) GPU."""
    out = []
    machine = {pid for pid, _comm in gpu_processes(root)}
    played = set(recording.process_info)
    if machine != played:
        out.append(f"GPU processes: the recording has {sorted(played)}, the machine's /proc {sorted(machine)}")
    render_of = {g.pci: g.render_node for g in recording.gpus}
    for pid in sorted(machine & played):
        info = recording.process_info[pid]
        comm = (root.try_read_text(f"/proc/{pid}/comm") or "").strip()
        cmdline = parse_cmdline(root.try_read_text(f"/proc/{pid}/cmdline") or "")
        facts = {"name": comm, "cmdline": cmdline, "user": _user_of(root, pid)}
        for key, theirs in facts.items():
            if info.get(key) != theirs:
                out.append(f"process {pid} {key}: recording {info.get(key)!r}, machine {theirs!r}")
        held = _render_nodes_held(root, pid)
        if held and render_of.get(info.get("pci", "")) not in held:
            out.append(f"process {pid} runs on {info.get('pci')} in the recording, but holds {sorted(held)}")
    return out


def pids_named(diagnosis_json: Any) -> set[int]:
    """Every PID a diagnosis names (evidence paths and texts, subjects, titles, details)."""
    found: set[int] = set()
    text = str(diagnosis_json)
    for pattern in PID_PATTERNS:
        found.update(int(m) for m in pattern.findall(text))
    return found


def diagnosis_disagreements(recording: Recording, diagnosis_json: Any) -> list[str]:
    """PIDs the machine's diagnosis names that the recording does not show (``self`` is not a PID)."""
    missing = sorted(pids_named(diagnosis_json) - set(recording.process_info))
    return [f"the diagnosis names process {pid}, which the recording does not show" for pid in missing]


def disagreements(recording: Recording, root: HostRoot, sample: Any, diagnosis_json: Any) -> list[str]:
    """Everything that tells the recording and its machine apart; empty when they are one machine.

    The kernel is part of the GPU identity (``driver_version`` is the running kernel's release)."""
    return (gpu_disagreements(recording, root, sample) + process_disagreements(recording, root)
            + diagnosis_disagreements(recording, diagnosis_json))
