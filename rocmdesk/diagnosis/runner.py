"""One full diagnosis of a host root: host summary, every check's result, and the findings.

Used by ``rocmdesk diagnose``, the Diagnosis tab and reports. ``DiagnosisReport.to_json`` is the
public ``rocmdesk diagnose --json`` contract (issue 4, item 5):
``{"host": {...}, "checks": [{"id", "status", "reason", ...}], "findings": [...]}``.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rocmdesk.diagnosis.context import DiagnosisContext
from rocmdesk.diagnosis.engine import AREAS, CheckSpec, registered_checks, run_checks
from rocmdesk.diagnosis.model import CheckResult, Finding, Severity, Status
from rocmdesk.diagnosis.target import DiagnosisTarget, root_target
from rocmdesk.host import CommandRunner, HostRoot
from rocmdesk.telemetry.discovery import discover_gpus

log = logging.getLogger(__name__)

Progress = Callable[[CheckResult, int, int], None]


@dataclass(slots=True)
class DiagnosisReport:
    host: dict[str, Any]
    results: list[CheckResult]
    notes: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    target: DiagnosisTarget | None = None  # whose machine (fixes run only for the live one)

    @property
    def findings(self) -> list[Finding]:
        return [f for r in self.results for f in r.findings]

    @property
    def has_errors(self) -> bool:
        return any(f.severity is Severity.ERROR for f in self.findings)

    @property
    def exit_code(self) -> int:
        """0: no error findings; 1: error findings (2, could not run, is the caller's)."""
        return 1 if self.has_errors else 0

    def by_area(self) -> list[tuple[str, list[CheckResult]]]:
        return [(area, [r for r in self.results if r.area == area]) for area in AREAS
                if any(r.area == area for r in self.results)]

    def counts(self) -> dict[str, int]:
        out = {s.value: 0 for s in Status}
        for r in self.results:
            out[r.status.value] += 1
        return out

    def replace_result(self, result: CheckResult) -> None:
        """Swap in a re-run of one check (the Diagnosis tab's "re-run")."""
        for index, old in enumerate(self.results):
            if old.id == result.id:
                self.results[index] = result
                return
        self.results.append(result)

    def to_json(self) -> dict[str, Any]:
        out = {
            "host": self.host,
            "checks": [r.to_json() for r in self.results],
            "findings": [f.to_json() for f in self.findings],
        }
        if self.target is not None:
            out["target"] = self.target.to_json()
        return out


def host_summary(ctx: DiagnosisContext) -> dict[str, Any]:
    """Kernel, distribution, ROCm version and the GPUs, as the JSON ``host`` object."""
    facts = ctx.facts
    distro = facts.os_release.get("PRETTY_NAME") or " ".join(
        x for x in (facts.os_release.get("NAME"), facts.os_release.get("VERSION_ID")) if x) or None
    out: dict[str, Any] = {
        "kernel": ctx.kernel_release,
        "distro": distro,
        "rocm": facts.rocm_version,
        "gpus": _gpus_json(ctx),
    }
    if ctx.container is not None:  # only then: a machine's summary stays as it was
        out["container"] = ctx.container.to_json()
    return out


def _gpus_json(ctx: DiagnosisContext) -> list[dict[str, Any]]:
    try:
        gpus = discover_gpus(ctx.root)
        if gpus:
            return [g.to_json() for g in gpus]
    except Exception:  # discovery trouble must not stop the diagnosis
        log.exception("GPU discovery failed; using the diagnosis' own PCI scan")
    return [{"pci": g.pci, "device_id": g.device_id, "driver": g.driver,
             "gfx_target": g.gfx.target if g.gfx else None, "kfd_node": g.kfd_node}
            for g in ctx.facts.amd_gpus]


def make_context(root: str | os.PathLike[str] | HostRoot, runner: CommandRunner | None = None,
                 python_envs: Sequence[str] = ()) -> DiagnosisContext:
    host = root if isinstance(root, HostRoot) else HostRoot(root)
    return DiagnosisContext(host, runner=runner, python_env_paths=tuple(python_envs))


def diagnose(root: str | os.PathLike[str] | HostRoot = "/", runner: CommandRunner | None = None,
             python_envs: Sequence[str] = (), progress: Progress | None = None,
             specs: Sequence[CheckSpec] | None = None, target: DiagnosisTarget | None = None) -> DiagnosisReport:
    """Run every registered check (or ``specs``) over ``root``; never raises for a broken check.

    ``target`` says whose machine this is (a snapshot, the demo); without it the root decides: ``/`` is
    the live machine, any other folder a root folder.
    """
    start = time.perf_counter()
    ctx = make_context(root, runner, python_envs)
    if target is None:
        target = root_target(ctx.root)
    results = run_checks(ctx, specs=specs if specs is not None else registered_checks(), progress=progress)
    try:
        host = host_summary(ctx)
    except Exception as exc:  # the summary is decoration: keep the results
        log.exception("host summary failed")
        host = {"kernel": None, "distro": None, "rocm": None, "gpus": [], "error": str(exc)}
    return DiagnosisReport(host, results, list(ctx.notes), time.perf_counter() - start, target)


def rerun(report_root: str | os.PathLike[str] | HostRoot, check_id: str, runner: CommandRunner | None = None,
          python_envs: Sequence[str] = ()) -> CheckResult:
    """Run one check again on a fresh context (facts re-read)."""
    specs = [s for s in registered_checks() if s.id == check_id]
    if not specs:
        raise KeyError(check_id)
    ctx = make_context(report_root, runner, python_envs)
    return run_checks(ctx, specs=specs)[0]
