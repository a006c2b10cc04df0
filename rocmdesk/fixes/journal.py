"""What rocmdesk changed: the helper's journal in /var/lib/rocmdesk/journal, read unprivileged.

The helper writes one JSON file per run (mode 0644); the Changes view lists the runs that can still be
undone and offers ``undo UNDO_ID`` for them. A run that never finished ("pending", or a change still
"writing") is shown as interrupted, with what its journal recorded, so the user checks it by hand.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from rocmdesk.fixes.plan import Change, change_from_json
from rocmdesk.host import HostReadError, HostRoot

log = logging.getLogger(__name__)

JOURNAL_DIR = "/var/lib/rocmdesk/journal"
UNDO_ID_RE = re.compile(r"[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}", re.ASCII)
UNDOABLE_STATUSES = ("applied", "pending", "failed")


@dataclass(slots=True)
class JournalEntry:
    undo_id: str
    time: int
    uid: int | None
    action: str
    args: list[str]
    status: str  # applied | pending | failed | rolled-back | undone
    changes: list[Change] = field(default_factory=list)
    undone_by: str | None = None
    error: str | None = None
    change_states: list[str] = field(default_factory=list)  # per change: "done", "writing" or "" (older helper)

    @property
    def can_undo(self) -> bool:
        return self.action not in ("undo", "undo-as-admin") and self.status in UNDOABLE_STATUSES and bool(self.changes)

    @property
    def interrupted(self) -> bool:
        """The run never finished (killed, power loss) or is still running: "pending", or a change still
        "writing". Its journal lists what was recorded; the last /etc change may or may not be on disk."""
        return self.status == "pending" or (self.status not in ("undone", "rolled-back")
                                            and "writing" in self.change_states)

    def summary(self) -> str:
        return f"{self.action} {' '.join(self.args)}".strip()


def entry_from_json(data: dict[str, Any]) -> JournalEntry:
    changes = []
    states = []
    for raw in data.get("changes") or []:
        try:
            changes.append(change_from_json(raw))
        except (KeyError, TypeError, ValueError) as exc:
            log.warning("journal %s: unreadable change (%s)", data.get("undo_id"), exc)
            continue
        states.append(str(raw.get("state") or ""))
    return JournalEntry(
        undo_id=str(data["undo_id"]), time=int(data.get("time") or 0), uid=data.get("uid"),
        action=str(data.get("action", "")), args=[str(a) for a in data.get("args") or []],
        status=str(data.get("status", "")), changes=changes, undone_by=data.get("undone_by"),
        error=data.get("error"), change_states=states,
    )


def list_entries(root: HostRoot | None = None, include_undo_runs: bool = False) -> list[JournalEntry]:
    """Journal entries, newest first; damaged files are skipped with a log line, never a crash."""
    root = root or HostRoot("/")
    entries = []
    for name in root.listdir(JOURNAL_DIR):
        if not name.endswith(".json") or not UNDO_ID_RE.fullmatch(name[:-5]):
            continue
        try:
            data = json.loads(root.read_text(f"{JOURNAL_DIR}/{name}"))
            entry = entry_from_json(data)
        except (HostReadError, ValueError, KeyError, TypeError) as exc:
            log.warning("skipping journal file %s: %s", name, exc)
            continue
        if entry.action in ("undo", "undo-as-admin") and not include_undo_runs:
            continue
        entries.append(entry)
    entries.sort(key=lambda e: (e.time, e.undo_id), reverse=True)
    return entries
