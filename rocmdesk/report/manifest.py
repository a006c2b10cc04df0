"""The bundle manifest: every member, why it is there, its size and sha256.

It is the first member of a bundle, so a reader can refuse a lying archive (a member missing, an
extra one, a size or hash that does not match) before it trusts anything else in it, and it is
what the app shows the user before anything is saved ("what will be shared").
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rocmdesk.host import JsonLimitError, loads_json
from rocmdesk.wording import fmt_bytes

FORMAT = "rocmdesk-bundle/1"
MANIFEST_NAME = "rocmdesk/manifest.json"
COMMANDS_NAME = "rocmdesk/commands.json"
HISTORY_NAME = "rocmdesk/history.json"
INITRAMFS_DIR = "rocmdesk/initramfs"


# Field ranges. A bundle rocmdesk wrote is always inside them; anything else is refused, not repaired.
MAX_TIME = 4_102_444_800.0  # 2100-01-01: a capture time past it (or NaN, inf) is hostile
MAX_HISTORY_MINUTES = 7 * 24 * 60.0
MAX_COUNT = (1 << 63) - 1  # sizes and counts fit 64 bits
MAX_TEXT = 4096  # a note, a version, a path: one line of words
MAX_LIST = 10_000  # notes, python environments, redaction kinds


class ManifestError(ValueError):
    """The manifest is missing, malformed or does not describe the archive."""


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT


def _number(raw: dict, key: str, high: float) -> float:
    value = raw.get(key, 0.0)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or not 0 <= value <= high:
        raise ManifestError(f"the manifest's {key!r} is not a number between 0 and {high:g}: refused")
    return float(value)


def _text(raw: dict, key: str, default: str) -> str:
    value = raw.get(key, default)
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        raise ManifestError(f"the manifest's {key!r} is not a short text: refused")
    return value


def _texts(raw: dict, key: str) -> list[str]:
    value = raw.get(key) or []
    if not isinstance(value, list) or len(value) > MAX_LIST or \
            not all(isinstance(v, str) and len(v) <= MAX_TEXT for v in value):
        raise ManifestError(f"the manifest's {key!r} is not a list of short texts: refused")
    return list(value)


def _counts(raw: dict, key: str) -> dict[str, int]:
    value = raw.get(key) or {}
    if not isinstance(value, dict) or len(value) > MAX_LIST or \
            not all(isinstance(k, str) and len(k) <= MAX_TEXT and _count(v) for k, v in value.items()):
        raise ManifestError(f"the manifest's {key!r} is not a table of counts: refused")
    return dict(value)


@dataclass(frozen=True, slots=True)
class Entry:
    path: str  # member name, relative ("sys/class/drm/card1")
    kind: str  # "file", "link" or "dir"
    why: str
    size: int = 0
    sha256: str = ""
    target: str = ""  # link target (relative)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "type": self.kind, "why": self.why}
        if self.kind == "file":
            out["size"] = self.size
            out["sha256"] = self.sha256
        elif self.kind == "link":
            out["target"] = self.target
        return out

    @classmethod
    def from_json(cls, data: Any) -> Entry:
        if not isinstance(data, dict):
            raise ManifestError("a manifest entry is not an object")
        kind = data.get("type")
        path = data.get("path")
        if kind not in ("file", "link", "dir") or not isinstance(path, str) or not path:
            raise ManifestError(f"bad manifest entry {str(data)[:80]!r}")
        size = data.get("size", 0)
        sha = data.get("sha256", "")
        target = data.get("target", "")
        why = data.get("why", "")
        if not isinstance(why, str) or len(why) > MAX_TEXT:
            raise ManifestError(f"manifest entry {path[:80]!r} has no valid reason")
        if kind == "file" and (not _count(size) or not isinstance(sha, str) or len(sha) != 64):
            raise ManifestError(f"manifest entry {path!r} has no valid size and sha256")
        if kind == "link" and (not isinstance(target, str) or not target):
            raise ManifestError(f"manifest entry {path!r} is a link without a target")
        return cls(path, kind, why, size if kind == "file" else 0,
                   sha if kind == "file" else "", target if kind == "link" else "")


def file_entry(path: str, data: bytes, why: str) -> Entry:
    return Entry(path, "file", why, len(data), hashlib.sha256(data).hexdigest())


@dataclass
class Manifest:
    created: float
    rocmdesk_version: str
    entries: list[Entry] = field(default_factory=list)
    history_minutes: float = 0.0
    python_envs: list[str] = field(default_factory=list)  # redacted host paths given to the diagnosis
    redaction: dict[str, int] = field(default_factory=dict)  # counts only, never values
    notes: list[str] = field(default_factory=list)  # what could not be captured, in words
    source: str = "live"  # "live" or "root" (a folder given with --root), never a path

    def by_path(self) -> dict[str, Entry]:
        return {e.path: e for e in self.entries}

    def total_bytes(self) -> int:
        return sum(e.size for e in self.entries)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "created": self.created,
            "rocmdesk_version": self.rocmdesk_version,
            "source": self.source,
            "history_minutes": self.history_minutes,
            "python_envs": list(self.python_envs),
            "redaction": dict(self.redaction),
            "notes": list(self.notes),
            "files": [e.to_json() for e in self.entries],
        }

    def dumps(self) -> bytes:
        return json.dumps(self.to_json(), indent=1, sort_keys=False).encode()

    @classmethod
    def loads(cls, data: bytes) -> Manifest:
        try:
            raw = loads_json(data.decode("utf-8"))
        except JsonLimitError as exc:
            raise ManifestError(f"the manifest is refused: {exc}") from exc
        except (UnicodeDecodeError, ValueError) as exc:
            raise ManifestError(f"the manifest is not valid JSON ({exc})") from exc
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise ManifestError(f"not a {FORMAT} manifest")
        files = raw.get("files")
        if not isinstance(files, list):
            raise ManifestError("the manifest has no file list")
        entries = [Entry.from_json(e) for e in files]
        seen: set[str] = set()
        for entry in entries:
            if entry.path in seen:
                raise ManifestError(f"the manifest lists {entry.path!r} twice")
            seen.add(entry.path)
        return cls(created=_number(raw, "created", MAX_TIME), rocmdesk_version=_text(raw, "rocmdesk_version", "?"),
                   entries=entries, history_minutes=_number(raw, "history_minutes", MAX_HISTORY_MINUTES),
                   python_envs=_texts(raw, "python_envs"), redaction=_counts(raw, "redaction"),
                   notes=_texts(raw, "notes"), source=_text(raw, "source", "?"))


def preview_lines(manifest: Manifest, limit: int | None = None) -> list[str]:
    """What will be shared, grouped by reason: the text the CLI's --dry-run and the UI show."""
    groups: dict[str, list[Entry]] = {}
    for entry in manifest.entries:
        if entry.kind == "dir":
            continue
        groups.setdefault(entry.why, []).append(entry)
    lines = [f"{len([e for e in manifest.entries if e.kind != 'dir'])} files and links, "
             f"{fmt_bytes(manifest.total_bytes())} before compression."]
    if manifest.redaction:
        lines.append("Redactions (kind: replacements):")
        lines.extend(f"  {kind.replace('_', ' ')}: {count}" for kind, count in sorted(manifest.redaction.items()))
    else:
        lines.append("Redactions: none were needed.")
    for why, entries in sorted(groups.items(), key=lambda kv: kv[0]):
        lines.append(f"{why} ({len(entries)}):")
        shown = entries if limit is None else entries[:limit]
        lines.extend(f"  /{e.path}" + (f" -> {e.target}" if e.kind == "link" else f"  ({fmt_bytes(e.size)})")
                     for e in shown)
        if len(shown) < len(entries):
            lines.append(f"  ... and {len(entries) - len(shown)} more")
    lines.extend(f"Note: {n}" for n in manifest.notes)
    return lines


def paths(entries: Iterable[Entry]) -> list[str]:
    return [e.path for e in entries]
