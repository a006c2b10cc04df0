"""A finding's JSON form broken into the parts every report renderer shows.

The HTML report, the Markdown report and the Report tab draw a finding differently but say the
same things: the explanation's paragraphs, each piece of evidence with where it was found, and the
fix's steps under a heading that says when they need administrator rights. Escaping and the
word for a missing value stay with each renderer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rocmdesk.diagnosis.model import Evidence


@dataclass(frozen=True, slots=True)
class EvidenceItem:
    where: str  # "path:line", "path", or "" when the evidence is a bare value
    text: Any  # as recorded; None is left for the renderer to show


@dataclass(frozen=True, slots=True)
class FindingView:
    paragraphs: tuple[str, ...]  # the explanation's non-empty paragraphs, stripped
    evidence: tuple[EvidenceItem, ...]
    fix_heading: str  # "Fix" or "Fix (needs administrator rights)"
    fix_steps: tuple[str, ...]  # empty: nothing to show under a fix heading


def finding_view(finding: dict[str, Any]) -> FindingView:
    explanation = (finding.get("explanation") or "").strip()
    paragraphs = tuple(p.strip() for p in explanation.split("\n\n") if p.strip())
    evidence = tuple(EvidenceItem(Evidence.from_json(ev).where, ev.get("text")) for ev in finding.get("evidence") or [])
    fix = finding.get("fix") or {}
    heading = "Fix (needs administrator rights)" if fix.get("privileged") else "Fix"
    return FindingView(paragraphs, evidence, heading, tuple(fix.get("steps") or ()))
