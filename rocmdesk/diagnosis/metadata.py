"""Check metadata (title, severity, explanation, fix steps, sources) from resources/checks/*.yaml.

Kept out of code so support staff can review the wording of every check in one place.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from pathlib import Path

import yaml

from rocmdesk.diagnosis.model import Severity
from rocmdesk.resources import resource_path

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FixMeta:
    """A finding's default fix: the action id (rocmdesk.fixes), whether it needs root, the manual steps."""

    id: str
    privileged: bool = False
    steps: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CheckMeta:
    """One check's reviewed wording. Built by :meth:`from_mapping`, which refuses a missing or mistyped field
    and any unknown key, so a typo in the YAML fails the test run instead of showing a default."""

    id: str
    title: str
    label: str
    severity: Severity
    explanation: str
    sources: tuple[str, ...]
    reports: tuple[str, ...] = ()
    fix: FixMeta | None = None

    @classmethod
    def from_mapping(cls, entry: object, where: str) -> CheckMeta:
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: a check entry must be a mapping, not {type(entry).__name__}")
        unknown = set(entry) - _KEYS
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {sorted(unknown)} in check {entry.get('id')!r}")
        check_id = _text(entry, "id", where)
        where = f"{where}: check {check_id!r}"
        try:
            severity = Severity(_text(entry, "severity", where))
        except ValueError as exc:
            raise ValueError(f"{where}: severity must be one of {[s.value for s in Severity]}") from exc
        fix = entry.get("fix")
        fix_meta = None
        if fix is not None:
            if not isinstance(fix, dict) or set(fix) - {"id", "privileged", "steps"}:
                raise ValueError(f"{where}: fix must be a mapping of id, privileged, steps")
            privileged = fix.get("privileged", False)
            if not isinstance(privileged, bool):
                raise ValueError(f"{where}: fix.privileged must be true or false")
            fix_meta = FixMeta(_text(fix, "id", where), privileged, _texts(fix, "steps", where))
        return cls(check_id, _text(entry, "title", where), _text(entry, "label", where), severity,
                   _text(entry, "explanation", where).strip(), _texts(entry, "sources", where),
                   _texts(entry, "reports", where), fix_meta)


_KEYS = frozenset(f for f in CheckMeta.__dataclass_fields__)


def _text(entry: dict[str, object], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: {key} must be non-empty text")
    return value


def _texts(entry: dict[str, object], key: str, where: str) -> tuple[str, ...]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where}: {key} must be a list of text")
    return tuple(value)


@functools.lru_cache(maxsize=1)
def load_metadata() -> dict[str, CheckMeta]:
    """Every check's metadata by id. Each YAML file holds a list of mappings with an ``id``."""
    out: dict[str, CheckMeta] = {}
    for path in sorted(Path(resource_path("checks")).glob("*.yaml")):
        entries = yaml.safe_load(path.read_text(encoding="utf-8")) or []
        if not isinstance(entries, list):
            raise ValueError(f"{path.name}: expected a list of checks")
        for entry in entries:
            meta = CheckMeta.from_mapping(entry, path.name)
            if meta.id in out:
                raise ValueError(f"check {meta.id!r} described twice ({path.name})")
            out[meta.id] = meta
    return out


def check_label(check_id: str, fallback: str = "") -> str:
    """The short, neutral name of a check (``label`` in its YAML) for lists that show it whatever its
    status; a title states the problem ("amdgpu is blacklisted"), which reads wrong beside a pass."""
    try:
        meta = load_metadata().get(check_id)
        label = meta.label if meta is not None else None
    except (OSError, ValueError, yaml.YAMLError) as exc:
        log.warning("check metadata unreadable: %s", exc)
        label = None
    return str(label) if label else (fallback or check_id)
