"""Where bundled resources live (a source checkout, an installed wheel, or the Debian package)."""

from __future__ import annotations

import os
from pathlib import Path

_CANDIDATES = (
    Path(__file__).resolve().parent.parent / "resources",  # source checkout / editable install
    Path(__file__).resolve().parent / "_resources",  # wheel (resources copied into the package)
    Path("/usr/share/rocmdesk/resources"),  # Debian package
)


def resources_dir() -> Path:
    override = os.environ.get("ROCMDESK_RESOURCES")
    if override:
        return Path(override)
    for candidate in _CANDIDATES:
        if (candidate / "checks").is_dir():
            return candidate
    return _CANDIDATES[0]


def resource_path(*parts: str) -> Path:
    return resources_dir().joinpath(*parts)
