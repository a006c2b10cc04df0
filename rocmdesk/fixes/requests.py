"""From a diagnosis finding to something the app can run: a helper action or a user-level fix."""

from __future__ import annotations

from dataclasses import dataclass

from rocmdesk.diagnosis.model import Finding
from rocmdesk.fixes.actions import check_shape, is_privileged


@dataclass(frozen=True, slots=True)
class FixRequest:
    check_id: str
    title: str
    action: tuple[str, ...]
    privileged: bool
    steps: tuple[str, ...]  # manual steps, shown when the helper is missing or the user prefers them


def request_for_finding(finding: Finding) -> FixRequest | None:
    """The runnable fix of a finding, or None when it only has manual steps (or an unknown action)."""
    fix = finding.fix
    if fix is None or not fix.action:
        return None
    action = tuple(fix.action)
    try:
        check_shape(action)
        privileged = is_privileged(action)
    except ValueError:
        return None
    return FixRequest(finding.id, finding.title, action, privileged, tuple(fix.steps))
