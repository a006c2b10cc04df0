"""Findings and check results: the diagnosis engine's output, shared by CLI, UI, fixes and reports.

The JSON form (``to_json``) is the public contract of ``rocmdesk diagnose --json``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class SourcedLine:
    """One line of a file (or command output) with where it came from."""

    path: str
    line: int | None
    text: str



class Status(str, enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"
    ERROR = "error"


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "info": 2}[self.value]


@dataclass(frozen=True, slots=True)
class Evidence:
    """What proves a finding: a file and line, or a value with where it came from."""

    text: str
    path: str | None = None  # host path ("/etc/modprobe.d/blacklist-amdgpu.conf")
    line: int | None = None  # 1-based

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "text": self.text}

    @property
    def where(self) -> str:
        """``path:line``, ``path``, or "" when the evidence is a bare value."""
        return f"{self.path}:{self.line}" if self.path and self.line else (self.path or "")

    def __str__(self) -> str:
        where = self.where
        return f"{where}: {self.text}" if where else self.text

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Evidence:
        return cls(text=data.get("text", ""), path=data.get("path"), line=data.get("line"))


@dataclass(frozen=True, slots=True)
class Fix:
    """How to fix a finding. ``steps`` are for people; ``action`` is what the app can run.

    ``action`` is the argv after the helper's name for a privileged fix
    (``["modprobe-unblacklist-amdgpu", "/etc/modprobe.d/blacklist-amdgpu.conf"]``), or a
    user-level action id with its arguments (``["pip-reinstall-rocm-torch", VENV, INDEX]``).
    """

    id: str
    privileged: bool
    steps: tuple[str, ...] = ()
    action: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "privileged": self.privileged, "steps": list(self.steps)}
        if self.action is not None:
            out["action"] = list(self.action)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Fix:
        action = data.get("action")
        return cls(id=data["id"], privileged=bool(data.get("privileged")), steps=tuple(data.get("steps") or ()),
                   action=tuple(action) if action is not None else None)


@dataclass(slots=True)
class Finding:
    id: str  # the check id that produced it
    severity: Severity
    title: str
    explanation: str
    evidence: list[Evidence] = field(default_factory=list)
    fix: Fix | None = None
    subject: str | None = None  # what it is about when a check fires more than once (a venv, a GPU)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "severity": self.severity.value,
            "title": self.title,
            "explanation": self.explanation,
            "evidence": [e.to_json() for e in self.evidence],
            "fix": self.fix.to_json() if self.fix else None,
        }
        if self.subject is not None:
            out["subject"] = self.subject
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Finding:
        return cls(
            id=data["id"],
            severity=Severity(data["severity"]),
            title=data.get("title", ""),
            explanation=data.get("explanation", ""),
            evidence=[Evidence.from_json(e) for e in data.get("evidence") or []],
            fix=Fix.from_json(data["fix"]) if data.get("fix") else None,
            subject=data.get("subject"),
        )


@dataclass(slots=True)
class CheckResult:
    id: str
    area: str
    title: str
    status: Status
    reason: str = ""
    findings: list[Finding] = field(default_factory=list)
    duration_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "area": self.area, "title": self.title, "status": self.status.value,
                "reason": self.reason}
