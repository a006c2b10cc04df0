"""Check metadata (title, severity, explanation, fix steps, sources) from resources/checks/*.yaml.

Kept out of code so support staff can review the wording of every check in one place.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path

import yaml

from rocmdesk.resources import resource_path

log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=1)
def load_metadata() -> dict[str, dict]:
    """Every check's metadata by id. Each YAML file holds a list of mappings with an ``id``."""
    out: dict[str, dict] = {}
    for path in sorted(Path(resource_path("checks")).glob("*.yaml")):
        entries = yaml.safe_load(path.read_text(encoding="utf-8")) or []
        for entry in entries:
            if entry["id"] in out:
                raise ValueError(f"check {entry['id']!r} described twice ({path.name})")
            out[entry["id"]] = entry
    return out


def check_label(check_id: str, fallback: str = "") -> str:
    """The short, neutral name of a check (``label`` in its YAML) for lists that show it whatever its
    status; a title states the problem ("amdgpu is blacklisted"), which reads wrong beside a pass."""
    try:
        label = load_metadata().get(check_id, {}).get("label")
    except (OSError, ValueError, yaml.YAMLError) as exc:
        log.warning("check metadata unreadable: %s", exc)
        label = None
    return str(label) if label else (fallback or check_id)
