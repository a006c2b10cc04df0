"""A finding's JSON form broken into the parts every report renderer shows.

The HTML report, the Markdown report and the Report tab draw a finding differently but say the
same things: the explanation's paragraphs, each piece of evidence with where it was found, and the
fix's steps under a heading that says who runs them. Escaping and the word for a missing value
stay with each renderer.

Who runs a fix is worded once, here (:func:`fix_audience`), for every place that shows it: the
reports, ``rocmdesk diagnose`` and the Diagnosis tab. End users and support staff read the same words.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rocmdesk.diagnosis.model import Evidence

# Who runs a fix's steps. One-click fixes run through pkexec and manual steps say `sudo`: both need an
# administrator's password, so the heading names the rights rather than the tool.
NEEDS_ADMIN = "needs administrator rights"
SOME_STEPS_NEED_ADMIN = "some steps need administrator rights"
AS_YOUR_USER = "as your user"
_ADMIN_STEP_MARKS = ("sudo ", "as root")


def fix_audience(privileged: bool, steps: Iterable[str]) -> str:
    """Who runs the fix. A fix that is not privileged can still have `sudo` steps (a system unit,
    /etc/environment): those are never labelled "as your user"."""
    if privileged:
        return NEEDS_ADMIN
    if any(mark in step for step in steps for mark in _ADMIN_STEP_MARKS):
        return SOME_STEPS_NEED_ADMIN
    return AS_YOUR_USER


def fix_heading(privileged: bool, steps: Iterable[str]) -> str:
    """"Fix (needs administrator rights)", the same heading in every renderer."""
    return f"Fix ({fix_audience(privileged, steps)})"


@dataclass(frozen=True, slots=True)
class EvidenceItem:
    where: str  # "path:line", "path", or "" when the evidence is a bare value
    text: Any  # as recorded; None is left for the renderer to show


@dataclass(frozen=True, slots=True)
class FindingView:
    paragraphs: tuple[str, ...]  # the explanation's non-empty paragraphs, stripped
    evidence: tuple[EvidenceItem, ...]
    fix_heading: str  # fix_heading(): "Fix (needs administrator rights)", "Fix (as your user)", ...
    fix_steps: tuple[str, ...]  # empty: nothing to show under a fix heading


def finding_view(finding: dict[str, Any]) -> FindingView:
    explanation = (finding.get("explanation") or "").strip()
    paragraphs = tuple(p.strip() for p in explanation.split("\n\n") if p.strip())
    evidence = tuple(EvidenceItem(Evidence.from_json(ev).where, ev.get("text")) for ev in finding.get("evidence") or [])
    fix = finding.get("fix") or {}
    steps = tuple(str(step) for step in fix.get("steps") or ())
    return FindingView(paragraphs, evidence, fix_heading(bool(fix.get("privileged")), steps), steps)
