"""Fix plans: the helper's exact changes (file diffs, sysfs writes, commands) as typed data.

The helper computes a plan with the same function for ``--preview`` and for the real run, so what
the preview dialog shows from a :class:`FixPlan` is what Apply will do.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FileChange:
    path: str
    op: str  # modify | create | delete
    diff: str
    old_sha256: str | None = None
    new_sha256: str | None = None

    def describe(self) -> str:
        verb = {"modify": "Edit", "create": "Create", "delete": "Delete"}.get(self.op, self.op)
        return f"{verb} {self.path}"


@dataclass(frozen=True, slots=True)
class RenameChange:
    path: str
    to: str

    def describe(self) -> str:
        return f"Rename {self.path} to {self.to}"


@dataclass(frozen=True, slots=True)
class SysfsChange:
    path: str
    pci: str
    attribute: str
    old: str
    new: str

    def describe(self) -> str:
        if self.attribute == "power1_cap":
            return f"Set the power cap of {self.pci} from {_watts(self.old)} to {_watts(self.new)} ({self.path})"
        return f"Write {self.new!r} to {self.path} (now {self.old!r})"


@dataclass(frozen=True, slots=True)
class CommandChange:
    argv: tuple[str, ...]
    purpose: str = ""

    def describe(self) -> str:
        return f"Run {' '.join(self.argv)}" + (f"  ({self.purpose})" if self.purpose else "")


@dataclass(frozen=True, slots=True)
class GroupChange:
    user: str
    groups: tuple[str, ...]
    commands: tuple[tuple[str, ...], ...]
    remove: bool = False

    def describe(self) -> str:
        what = "Remove" if self.remove else "Add"
        prep = "from" if self.remove else "to"
        runs = "; ".join(" ".join(c) for c in self.commands)
        return f"{what} user {self.user} {prep} {', '.join(self.groups)} (runs {runs})"


Change = FileChange | RenameChange | SysfsChange | CommandChange | GroupChange


def _watts(microwatts: str) -> str:
    try:
        return f"{int(microwatts) / 1e6:g} W"
    except ValueError:
        return microwatts


def change_from_json(data: dict[str, Any]) -> Change:
    kind = data.get("kind")
    if kind == "file":
        return FileChange(data["path"], data["op"], data.get("diff", ""), data.get("old_sha256"),
                          data.get("new_sha256"))
    if kind == "rename":
        return RenameChange(data["path"], data["to"])
    if kind == "sysfs":
        return SysfsChange(data["path"], data["pci"], data["attribute"], str(data["old"]), str(data["new"]))
    if kind == "command":
        return CommandChange(tuple(data["argv"]), data.get("purpose", ""))
    if kind == "groups":
        return GroupChange(data["user"], tuple(data["groups"]), (tuple(data["argv"]),))
    if kind == "ungroup":
        return GroupChange(data["user"], tuple(data["groups"]), tuple(tuple(a) for a in data["argv_list"]), True)
    raise ValueError(f"unknown change kind {kind!r}")


@dataclass(slots=True)
class FixPlan:
    """What one helper action will do now (``changes``) and what undo will restore (``undo``)."""

    action: tuple[str, ...]
    changes: list[Change] = field(default_factory=list)
    undo: list[str] = field(default_factory=list)
    raw: list[dict[str, Any]] = field(default_factory=list)  # the helper's JSON, for comparisons

    @property
    def is_empty(self) -> bool:
        return not self.changes

    def text(self) -> str:
        """Plain text for the preview dialog and reports: every change, every diff, the undo."""
        if self.is_empty:
            return "Nothing to change: the system already looks the way this fix would make it."
        lines = ["This will:"]
        for number, change in enumerate(self.changes, start=1):
            lines.append(f"{number}. {change.describe()}")
            if isinstance(change, FileChange) and change.diff:
                lines.extend("     " + line for line in change.diff.splitlines())
        if self.undo:
            lines.append("")
            lines.append("Undo will:")
            lines.extend(f"- {step}" for step in self.undo)
        return "\n".join(lines)


class PlanError(Exception):
    """The helper refused to plan (``message`` is its own explanation) or answered nonsense."""


def plan_from_helper_output(action: tuple[str, ...], stdout: str) -> FixPlan:
    """Parse ``rocmdesk-helper --preview`` output; raises PlanError with the helper's reason."""
    data = parse_helper_json(stdout)
    if not data.get("ok"):
        raise PlanError(str(data.get("error") or "the helper refused without a reason"))
    raw = data.get("changes") or []
    try:
        changes = [change_from_json(c) for c in raw]
    except (KeyError, TypeError, ValueError) as exc:
        raise PlanError(f"the helper's plan could not be read ({exc})") from exc
    return FixPlan(tuple(action), changes, [str(s) for s in data.get("undo") or []], list(raw))


def parse_helper_json(stdout: str) -> dict[str, Any]:
    """The helper's one JSON object (last non-empty line); PlanError when there is none."""
    for line in reversed((stdout or "").strip().splitlines()):
        line = line.strip()
        if not line:
            continue
        try:
            data = json.loads(line)
        except ValueError:
            break
        if isinstance(data, dict):
            return data
        break
    raise PlanError("the helper printed no result (is it installed correctly?)")
