"""``rocmdesk sample``: print GPU readings as a table or as JSON (one object per sample).

Exit codes: 0 readings printed, 1 no GPU found, 2 the backend could not run (message on stderr).
The JSON is :meth:`Snapshot.to_json`, a public contract: keep its names.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import time
from collections.abc import Callable

from rocmdesk.host import HostRoot
from rocmdesk.telemetry.backends.base import Backend, BackendError
from rocmdesk.telemetry.model import GpuSample, ProcessUse, Snapshot

TYPE_CHECKING = False  # typing is not imported at run time: `rocmdesk sample` starts faster
if TYPE_CHECKING:
    from typing import Any, TextIO, TypeGuard

log = logging.getLogger(__name__)

BACKENDS = ("auto", "sysfs", "rocm-smi", "amd-smi", "amdsmi", "demo")
EXIT_OK, EXIT_NO_GPU, EXIT_BACKEND = 0, 1, 2
GIB = 1 << 30

# Injectable for tests: they replace these with fakes (no real sleeping, no real backends).
sleep: Callable[[float], None] = time.sleep


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS: `rocmdesk --root X sample` and `rocmdesk sample --root X` both work.
    parser.add_argument("--root", metavar="DIR", default=argparse.SUPPRESS,
                        help="read this folder as the machine's root instead of /")
    parser.add_argument("--backend", choices=BACKENDS, default=argparse.SUPPRESS,
                        help="where readings come from (default: auto)")
    parser.add_argument("--recording", metavar="NAME",
                        help="with --backend demo: which recording (mi300x-node, rx7900xtx-comfyui, or a file)")
    parser.add_argument("--json", action="store_true", help="print one JSON object per sample")
    parser.add_argument("--watch", metavar="SECONDS", type=_positive_float,
                        help="sample again every SECONDS until Ctrl-C")
    parser.add_argument("--count", metavar="N", type=_positive_int,
                        help="with --watch: stop after N samples")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def make_backend(name: str, root: HostRoot, recording: str | None = None) -> Backend:
    """The backend to sample; raises BackendError with the reason it cannot run."""
    if name == "demo":
        from rocmdesk.telemetry.backends.demo import DEFAULT_RECORDING, DemoBackend

        # Start where the wall clock points in the loop, so repeated runs move on like a live GPU.
        return DemoBackend(recording or DEFAULT_RECORDING, start_s=time.time())
    from rocmdesk.telemetry.backends.factory import make_backend as factory

    return factory(name, root)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    root_dir = getattr(args, "root", None) or "/"
    name = getattr(args, "backend", None) or "auto"
    recording = getattr(args, "recording", None)
    if recording and name != "demo":
        print("rocmdesk sample: --recording needs --backend demo", file=err)
        return EXIT_BACKEND
    if not HostRoot(root_dir).is_dir("/"):
        print(f"rocmdesk sample: the root folder {root_dir} does not exist", file=err)
        return EXIT_BACKEND
    try:
        backend = make_backend(name, HostRoot(root_dir), recording)
    except BackendError as exc:
        print(f"rocmdesk sample: the {name} backend cannot run: {exc}", file=err)
        return EXIT_BACKEND
    try:
        return _sample_loop(backend, args, out, err)
    finally:
        try:
            backend.close()
        except Exception as exc:  # closing must not hide the result
            log.debug("closing %s failed: %s", name, exc)


def _sample_loop(backend: Backend, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        gpus = backend.discover()
    except BackendError as exc:
        print(f"rocmdesk sample: the {backend.name} backend cannot run: {exc}", file=err)
        return EXIT_BACKEND
    if not gpus:
        print(f"rocmdesk sample: no AMD GPU found (backend {backend.name})", file=err)
        return EXIT_NO_GPU
    watch = getattr(args, "watch", None)
    count = getattr(args, "count", None)
    taken = 0
    try:
        while True:
            try:
                snapshot = backend.sample()
            except BackendError as exc:
                print(f"rocmdesk sample: the {backend.name} backend failed: {exc}", file=err)
                if watch is None:
                    return EXIT_BACKEND
                snapshot = None
            if snapshot is not None:
                if not snapshot.gpus and watch is None:
                    _print_errors(snapshot, err)
                    print(f"rocmdesk sample: no AMD GPU found (backend {backend.name})", file=err)
                    return EXIT_NO_GPU
                if args.json:
                    out.write(json.dumps(snapshot.to_json(), separators=(", ", ": ")) + "\n")
                else:
                    if taken:
                        out.write("\n")
                    out.write(format_table(snapshot))
                    _print_errors(snapshot, err)
                out.flush()
            taken += 1
            if watch is None or (count is not None and taken >= count):
                return EXIT_OK
            sleep(watch)
    except KeyboardInterrupt:
        return EXIT_OK  # Ctrl-C is how --watch ends


def _print_errors(snapshot: Snapshot, err: TextIO) -> None:
    for problem in snapshot.errors:
        print(f"rocmdesk sample: {problem}", file=err)


# -- the table ----------------------------------------------------------------------------------

COLUMNS = ("CARD", "PCI", "NAME", "GFX", "EDGE", "JUNC", "MEM", "POWER/CAP", "VRAM USED/TOTAL", "BUSY",
           "SCLK/MCLK", "FAN")
# Human words for the JSON keys in footnotes.
KEY_WORDS = {
    "temperature_c.edge": "edge temperature",
    "temperature_c.junction": "junction temperature",
    "temperature_c.mem": "memory temperature",
    "power_w": "power",
    "power_cap_w": "power cap",
    "vram_used_bytes": "VRAM used",
    "vram_total_bytes": "VRAM total",
    "gpu_busy_percent": "GPU busy",
    "sclk_mhz": "shader clock",
    "mclk_mhz": "memory clock",
    "fan_rpm": "fan speed",
    "fan_percent": "fan duty",
}


class _Notes:
    """Numbered footnotes, one per distinct (metric, reason), listing the cards it applies to."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str], tuple[int, list[str]]] = {}

    def mark(self, sample: GpuSample, key: str) -> str:
        reason = sample.unavailable.get(key)
        if reason is None:
            reason = "not reported by this backend"
        entry = self.entries.get((key, reason))
        if entry is None:
            entry = (len(self.entries) + 1, [])
            self.entries[(key, reason)] = entry
        if sample.info.card not in entry[1]:
            entry[1].append(sample.info.card)
        return f"N/A[{entry[0]}]"

    def lines(self) -> list[str]:
        out = []
        for (key, reason), (number, cards) in self.entries.items():
            what = KEY_WORDS.get(key, key)
            out.append(f"[{number}] {what} on {_card_list(cards)}: {reason}")
        return out


def _card_list(cards: list[str]) -> str:
    if len(cards) > 2:
        return f"{cards[0]}…{cards[-1]} ({len(cards)} GPUs)"
    return ", ".join(cards)



def _cell(sample: GpuSample, key: str, notes: _Notes, fmt: Callable[[Any], str]) -> str:
    value = sample.get(key)
    if value is None:
        return notes.mark(sample, key)
    return fmt(value)


def _row(sample: GpuSample, notes: _Notes) -> list[str]:
    info = sample.info

    def temp(label: str) -> str:
        return _cell(sample, f"temperature_c.{label}", notes, lambda v: f"{v:.0f}°C")

    power = _cell(sample, "power_w", notes, lambda v: f"{v:.0f}")
    cap = _cell(sample, "power_cap_w", notes, lambda v: f"{v:.0f}")
    vram_total = sample.vram_total_bytes if sample.vram_total_bytes is not None else info.vram_total_bytes
    used = _cell(sample, "vram_used_bytes", notes, lambda v: f"{v / GIB:.1f}")
    if vram_total is None:
        total = notes.mark(sample, "vram_total_bytes")
    else:
        total = f"{vram_total / GIB:.1f}"
    busy = _cell(sample, "gpu_busy_percent", notes, lambda v: f"{v:.0f}%")
    sclk = _cell(sample, "sclk_mhz", notes, lambda v: f"{v:.0f}")
    mclk = _cell(sample, "mclk_mhz", notes, lambda v: f"{v:.0f}")
    if sample.fan_rpm is None and sample.fan_percent is None:
        fan = notes.mark(sample, "fan_rpm")
    else:
        parts = []
        if sample.fan_rpm is not None:
            parts.append(f"{sample.fan_rpm:.0f} RPM")
        if sample.fan_percent is not None:
            parts.append(f"{sample.fan_percent:.0f}%")
        fan = " ".join(parts)
    return [
        info.card, info.pci, info.name, info.gfx_target or "?",
        temp("edge"), temp("junction"), temp("mem"),
        f"{power}/{cap} W", f"{used}/{total} GiB", busy, f"{sclk}/{mclk} MHz", fan,
    ]


def format_table(snapshot: Snapshot) -> str:
    """A readable table: one row per GPU, N/A with numbered reasons below it."""
    notes = _Notes()
    rows = [_row(sample, notes) for sample in snapshot.gpus]
    widths = [max(len(COLUMNS[i]), *(len(r[i]) for r in rows)) if rows else len(COLUMNS[i])
              for i in range(len(COLUMNS))]
    lines = []
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(snapshot.timestamp))
    title = f"{stamp}  backend: {snapshot.backend}"
    if snapshot.demo:
        title += "  — DEMO DATA (a bundled recording, not this machine)"
    lines.append(title)
    lines.append("  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths, strict=True)).rstrip())
    for row in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    if not rows:
        lines.append("(no GPU in this sample)")
    lines.extend(notes.lines())
    if snapshot.processes:
        lines.append("")
        lines.append(format_processes(snapshot, first_note=len(notes.entries) + 1))
    return "\n".join(lines) + "\n"


PROCESS_HEADER = ("PID", "CARD", "VRAM", "GPU %", "COMPUTE", "NAME", "COMMAND")
PROCESS_WORDS = {"vram_bytes": "VRAM", "gpu_percent": "GPU % (graphics engine)",
                 "cu_occupancy_percent": "compute (CU occupancy)"}


class _ProcessNotes:
    """Numbered reasons for the process table's N/A cells, one per distinct (figure, reason)."""

    def __init__(self, first: int) -> None:
        self.first = first
        self.entries: dict[tuple[str, str], tuple[int, list[int]]] = {}

    def mark(self, key: str, reason: str | None, pid: int) -> str:
        reason = reason or "not reported by this backend"
        entry = self.entries.setdefault((key, reason), (self.first + len(self.entries), []))
        if pid not in entry[1]:
            entry[1].append(pid)
        return f"N/A[{entry[0]}]"

    def lines(self) -> list[str]:
        out = []
        for (key, reason), (number, pids) in self.entries.items():
            who = f"pid {pids[0]}" if len(pids) == 1 else f"{len(pids)} processes"
            out.append(f"[{number}] {PROCESS_WORDS.get(key, key)} of {who}: {reason}")
        return out


def _compute_cell(p: ProcessUse, notes: _ProcessNotes) -> str:
    """As the Processes tab shows it: KFD CU occupancy in %, a CU count when the GPU's CU total is
    unknown, else N/A with the reason (a DRM-only process, a GPU without the counter)."""
    if _is_number(p.cu_occupancy_percent):
        return f"{p.cu_occupancy_percent:.0f}%"
    if _is_number(p.cu_occupied):
        return f"{p.cu_occupied} CU"
    reason = p.unavailable.get("cu_occupancy_percent") or p.unavailable.get("cu_occupied")
    return notes.mark("cu_occupancy_percent", reason, p.pid)


def _is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def format_processes(snapshot: Snapshot, first_note: int = 1) -> str:
    """One row per (process, GPU); GPU % is graphics-engine time (DRM fdinfo), COMPUTE is the KFD's
    CU occupancy, which is where ROCm/HIP work shows. N/A cells are numbered with their reasons."""
    cards = {g.info.pci: g.info.card for g in snapshot.gpus}
    notes = _ProcessNotes(first_note)
    rows = []
    for p in sorted(snapshot.processes, key=lambda p: (-(p.vram_bytes or 0), p.pid, p.pci)):
        vram = (f"{p.vram_bytes / GIB:.2f} GiB" if _is_number(p.vram_bytes)
                else notes.mark("vram_bytes", p.unavailable.get("vram_bytes"), p.pid))
        if _is_number(p.gpu_percent):
            busy = f"{p.gpu_percent:.0f}%"
        else:
            busy = notes.mark("gpu_percent", p.unavailable.get("gpu_percent")
                              or "needs two readings over time (shown from the next sample on)", p.pid)
        command = p.cmdline if len(p.cmdline) <= 60 else p.cmdline[:59] + "…"
        rows.append((str(p.pid), cards.get(p.pci, p.pci), vram, busy, _compute_cell(p, notes), p.name, command))
    header = PROCESS_HEADER
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(header, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines += notes.lines()
    return "\n".join(lines)
