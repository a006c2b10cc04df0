"""The diagnosis engine: runs registered checks over a host root and collects findings.

A check is a small function ``fn(ctx) -> Outcome | list[Outcome]`` registered with
:func:`check`. It returns :class:`Passed`, :class:`Skipped` or one or more :class:`Failed`;
the engine adds the metadata (title, severity, explanation, fix steps, sources) from
``resources/checks/*.yaml`` and turns any exception into an ``error`` result, so one broken check
never stops the run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from rocmdesk.diagnosis.metadata import CheckMeta, load_metadata
from rocmdesk.diagnosis.model import CheckResult, Evidence, Finding, Fix, Severity, Status

log = logging.getLogger(__name__)

# Areas in the order the Diagnosis tab and the text report show them.
AREAS: tuple[str, ...] = ("Driver", "Hardware", "Permissions", "Environment", "Python and PyTorch", "Container",
                         "Display")


@dataclass(slots=True)
class Passed:
    reason: str = ""


@dataclass(slots=True)
class Skipped:
    reason: str


@dataclass(slots=True)
class Failed:
    """A check fired. Text fields override the YAML metadata for this one finding."""

    evidence: list[Evidence] = field(default_factory=list)
    subject: str | None = None
    explanation: str | None = None  # replaces the metadata explanation (use ``details`` to add)
    details: str | None = None  # appended to the metadata explanation
    title: str | None = None
    severity: Severity | None = None
    fix: Fix | None = None  # a concrete fix (with action/arguments) for this finding
    fix_steps: tuple[str, ...] | None = None  # concrete manual steps, replacing the YAML ones


Outcome = Passed | Skipped | Failed
CheckFn = Callable[[Any], "Outcome | list[Outcome]"]


@dataclass(slots=True)
class CheckSpec:
    id: str
    area: str
    fn: CheckFn
    order: int


_REGISTRY: dict[str, CheckSpec] = {}


def check(check_id: str, area: str) -> Callable[[CheckFn], CheckFn]:
    """Register a check function under a stable id (used by JSON, tests and fixes)."""
    if area not in AREAS:
        raise ValueError(f"unknown area {area!r}")

    def register(fn: CheckFn) -> CheckFn:
        if check_id in _REGISTRY and _REGISTRY[check_id].fn is not fn:
            raise ValueError(f"check id {check_id!r} registered twice")
        _REGISTRY[check_id] = CheckSpec(check_id, area, fn, len(_REGISTRY))
        return fn

    return register


def registered_checks() -> list[CheckSpec]:
    """All checks, by area then registration order (importing the checks package registers them)."""
    import rocmdesk.diagnosis.checks  # noqa: F401  (registers every check module)

    return sorted(_REGISTRY.values(), key=lambda s: (AREAS.index(s.area), s.order))


def run_check(spec: CheckSpec, ctx: Any, metadata: dict[str, CheckMeta]) -> CheckResult:
    meta = metadata.get(spec.id)
    title = meta.title if meta is not None else spec.id
    start = time.perf_counter()
    try:
        outcome = spec.fn(ctx)
    except Exception as exc:  # a check must never take the run down
        log.exception("check %s failed", spec.id)
        return CheckResult(spec.id, spec.area, title, Status.ERROR, f"{type(exc).__name__}: {exc}",
                           duration_s=time.perf_counter() - start)
    outcomes = outcome if isinstance(outcome, list) else [outcome]
    failed = [o for o in outcomes if isinstance(o, Failed)]
    elapsed = time.perf_counter() - start
    if failed:
        findings = [_finding(spec.id, f, meta) for f in failed]
        # each finding once, with what it is about: titles do not repeat their subject, so the check's one-line
        # reason names it ("PyTorch is a CUDA build, not a ROCm build (/opt/envs/sd)")
        reason = "; ".join(dict.fromkeys(
            f"{f.title} ({f.subject})" if f.subject and f.subject not in f.title else f.title for f in findings))
        return CheckResult(spec.id, spec.area, title, Status.FAIL, reason, findings, elapsed)
    skipped = [o for o in outcomes if isinstance(o, Skipped)]
    if skipped and len(skipped) == len(outcomes):
        return CheckResult(spec.id, spec.area, title, Status.SKIP, skipped[0].reason, duration_s=elapsed)
    reasons = [o.reason for o in outcomes if isinstance(o, Passed) and o.reason]
    return CheckResult(spec.id, spec.area, title, Status.PASS, "; ".join(reasons), duration_s=elapsed)


def _finding(check_id: str, failed: Failed, meta: CheckMeta | None) -> Finding:
    """A failure as a finding: what the check says, else its reviewed wording (no YAML entry: a warning)."""
    explanation = failed.explanation or (meta.explanation if meta is not None else "")
    if failed.details:
        explanation = f"{explanation}\n\n{failed.details}" if explanation else failed.details
    fix = failed.fix
    fix_meta = meta.fix if meta is not None else None
    if fix is None and fix_meta is not None:
        fix = Fix(id=fix_meta.id, privileged=fix_meta.privileged, steps=tuple(failed.fix_steps or fix_meta.steps))
    elif fix is not None and not fix.steps and fix_meta is not None:
        fix = Fix(fix.id, fix.privileged, tuple(failed.fix_steps or fix_meta.steps), fix.action)
    return Finding(
        id=check_id,
        severity=failed.severity or (meta.severity if meta is not None else Severity.WARNING),
        title=failed.title or (meta.title if meta is not None else check_id),
        explanation=explanation,
        evidence=list(failed.evidence),
        fix=fix,
        subject=failed.subject,
    )


def run_checks(ctx: Any, specs: Iterable[CheckSpec] | None = None,
               metadata: dict[str, CheckMeta] | None = None,
               progress: Callable[[CheckResult, int, int], None] | None = None) -> list[CheckResult]:
    """Run checks in order; ``progress(result, index, total)`` is called after each one."""
    from rocmdesk.diagnosis.in_container import for_container

    specs = list(specs) if specs is not None else registered_checks()
    metadata = metadata if metadata is not None else load_metadata()
    container = _container_of(ctx)
    results = []
    for index, spec in enumerate(specs):
        # inside a container, host-side fixes become text for the host before anyone sees the result
        result = for_container(run_check(spec, ctx, metadata), container)
        results.append(result)
        if progress is not None:
            progress(result, index, len(specs))
    return results


def _container_of(ctx: Any) -> Any:
    """The container the context's root is (None on a machine, or when detection itself fails)."""
    try:
        return getattr(ctx, "container", None)
    except Exception:  # detection reads hostile files: a failure means "no container known", never a crash
        log.exception("container detection failed")
        return None
