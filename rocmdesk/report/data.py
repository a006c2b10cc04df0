"""What a report says, gathered once from a host root (live, a folder, or an opened bundle).

The HTML and Markdown writers and the Report tab all render this one structure, so they always
agree with each other and with ``rocmdesk diagnose``.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rocmdesk import __version__
from rocmdesk.host import HostRoot
from rocmdesk.report.svg_charts import CHARTS, series_of
from rocmdesk.telemetry.discovery import discover_gpus
from rocmdesk.wording import NA, recorded_text

log = logging.getLogger(__name__)


@dataclass
class ReportData:
    created: float
    source: str  # "this machine", "folder /x", "snapshot b.tar.gz captured 2025-..."
    system: list[tuple[str, str]]  # (label, value)
    gpus: list[dict[str, Any]]  # GpuInfo JSON
    checks: list[dict[str, Any]]
    findings: list[dict[str, Any]]
    history: Any = None  # a Recording, or None
    processes: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    version: str = __version__
    # where the telemetry and processes come from when that is not ``source`` (the demo's recording
    # beside a diagnosis of the analyst's own machine, or a --history file): said in every format
    telemetry_source: str | None = None

    def provenance(self) -> str:
        """One sentence saying where each part of the report comes from."""
        if self.telemetry_source and self.telemetry_source != self.source:
            return (f"System and diagnosis: {self.source}. "
                    f"Telemetry and processes: {self.telemetry_source}.")
        return f"Source: {self.source}."

    def telemetry_note(self) -> str | None:
        """Said again at the graphs, where a reader looks first."""
        if self.telemetry_source and self.telemetry_source != self.source:
            return f"Telemetry from {self.telemetry_source}, not from {self.source}."
        return None

    @property
    def counts(self) -> dict[str, int]:
        out = {"error": 0, "warning": 0, "info": 0}
        for f in self.findings:
            out[f.get("severity", "info")] = out.get(f.get("severity", "info"), 0) + 1
        return out

    def headline(self) -> str:
        c = self.counts
        if not self.findings:
            return f"No problems found ({len(self.checks)} checks)."
        parts = [f"{n} {k}{'s' if n != 1 else ''}" for k, n in c.items() if n]
        return f"{', '.join(parts)} in {len(self.checks)} checks."


def _os_release(root: HostRoot) -> str | None:
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        text = root.try_read_text(path)
        if not text:
            continue
        values = {}
        for line in text.splitlines():
            key, sep, value = line.partition("=")
            if sep:
                values[key.strip()] = value.strip().strip('"').strip("'")
        name = values.get("PRETTY_NAME") or " ".join(filter(None, (values.get("NAME"), values.get("VERSION"))))
        if name:
            return name
    return None


def _first_line(root: HostRoot, path: str) -> str | None:
    text = root.try_read_text(path)
    line = text.strip().splitlines()[0].strip() if text and text.strip() else None
    return line or None


def system_summary(root: HostRoot, gpus: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    kernel = _first_line(root, "/proc/sys/kernel/osrelease")
    amdgpu = _first_line(root, "/sys/module/amdgpu/version")
    if amdgpu is None and root.exists("/sys/module/amdgpu"):
        amdgpu = f"in-tree (kernel {kernel})" if kernel else "in-tree"
    rocm = _first_line(root, "/opt/rocm/.info/version")
    if rocm is None:
        versions = sorted(n for n in root.listdir("/opt") if n.startswith("rocm-"))
        rocm = ", ".join(v.removeprefix("rocm-") for v in versions) or None
    return [
        ("Distribution", _os_release(root) or "unknown (no /etc/os-release)"),
        ("Kernel", kernel or "unknown"),
        ("amdgpu driver", amdgpu or "not loaded"),
        ("ROCm", rocm or "not found in /opt/rocm"),
        ("GPUs", str(len(gpus)) if gpus else "no AMD GPU found"),
    ]


def _gpus(root: HostRoot) -> list[dict[str, Any]]:
    try:
        return [g.to_json() for g in discover_gpus(root)]
    except Exception as exc:  # a report of a broken machine must still be written
        log.warning("GPU discovery failed: %s", exc)
        return []


def processes_of(recording: Any) -> list[dict[str, Any]]:
    """The processes of the last frame of a recording, biggest VRAM first."""
    if recording is None or not recording.frames:
        return []
    try:
        procs = recording.process_uses(len(recording.frames) - 1)
    except Exception:  # damaged process entries: no process table rather than no report
        return []
    rows = [p.to_json() for p in procs]
    return sorted(rows, key=lambda p: -(p.get("vram_bytes") or 0))


def build_report(root: HostRoot, *, diagnosis: Any = None, history: Any = None, source: str | None = None,
                 python_envs: Sequence[str] = (), processes: Sequence[Any] | None = None,
                 now: float | None = None, telemetry_source: str | None = None) -> ReportData:
    """Gather a report of ``root``; runs the diagnosis unless its result is given."""
    from rocmdesk.report.collect import diagnosis_function

    notes: list[str] = []
    if diagnosis is None:
        try:
            result = diagnosis_function()(root, python_envs=tuple(python_envs))
            diagnosis = result.to_json() if hasattr(result, "to_json") else result
        except Exception as exc:
            log.exception("diagnosis failed")
            notes.append(f"the diagnosis could not run: {type(exc).__name__}: {exc}")
            diagnosis = {"checks": [], "findings": []}
    elif hasattr(diagnosis, "to_json"):
        diagnosis = diagnosis.to_json()
    gpus = _gpus(root)
    rows = [p.to_json() if hasattr(p, "to_json") else dict(p) for p in processes] if processes is not None \
        else processes_of(history)
    return ReportData(
        created=time.time() if now is None else now,
        source=source or ("this machine" if root.is_live else f"folder {root.root}"),
        system=system_summary(root, gpus),
        gpus=gpus,
        checks=list(diagnosis.get("checks") or []),
        findings=sorted(diagnosis.get("findings") or [],
                        key=lambda f: {"error": 0, "warning": 1, "info": 2}.get(f.get("severity"), 3)),
        history=history,
        processes=rows,
        notes=notes,
        telemetry_source=telemetry_source,
    )


def history_stats(recording: Any) -> list[tuple[str, str, str, str, str]]:
    """(GPU, metric, min, mean, max) over the recorded window, for text reports."""
    if recording is None or not recording.frames:
        return []
    out = []
    for title, unit, key, _range in CHARTS:
        for s in series_of(recording, key):
            values = [v for v in s.values.tolist() if not math.isnan(v)]
            if not values:
                continue
            fmt = (lambda v: f"{v:.1f}") if unit in ("GiB", "°C") else (lambda v: f"{v:.0f}")
            out.append((s.label, f"{title} ({unit})", fmt(min(values)), fmt(sum(values) / len(values)),
                        fmt(max(values))))
    return out


def window_text(recording: Any) -> str:
    if recording is None or not recording.frames:
        return "no telemetry recorded"
    start = (getattr(recording, "meta", None) or {}).get("start_time")
    if not getattr(recording, "demo", False) and isinstance(start, (int, float)) and start > 0:
        frames = recording.frames  # its own timestamps: when it was recorded, for how long
        return recorded_text(float(start) + frames[0].t, len(frames), frames[-1].t - frames[0].t)
    span = recording.frames[-1].t + recording.interval_s
    minutes = span / 60
    return (f"{len(recording.frames)} samples over {minutes:.1f} minutes"
            if minutes >= 1 else f"{len(recording.frames)} samples over {span:.0f} seconds")


PROCESS_USE_HEADERS = ["Graphics %", "Compute"]


def process_use_texts(process: dict[str, Any]) -> list[str]:
    """A process's graphics-engine share (DRM fdinfo) and compute use (KFD CU occupancy), as the
    Processes tab shows them: a ROCm job has N/A graphics and its figure under Compute."""
    gfx = process.get("gpu_percent")
    cu_percent, cu_count = process.get("cu_occupancy_percent"), process.get("cu_occupied")
    compute = (f"{cu_percent:.0f} %" if isinstance(cu_percent, (int, float))
               else f"{cu_count:.0f} CU" if isinstance(cu_count, (int, float)) else NA)
    return [f"{gfx:.0f} %" if isinstance(gfx, (int, float)) else NA, compute]
