"""Which download.pytorch.org ROCm index to reinstall torch from.

Sources (looked up with the search tool; keep in step with pytorch.org when adding rows):
- pytorch.org/get-started/previous-versions: 2.6.0 -> ``whl/rocm6.1`` and ``whl/rocm6.2.4``;
  2.9.0 and 2.9.1 -> ``whl/rocm6.4``.
- pytorch/pytorch.github.io quick-start release map: 2.3.1 -> rocm6.0, 2.4.0 -> rocm6.1 (PR #1683),
  2.5.1 -> rocm6.2 (PR #1880), 2.6.0 -> rocm6.2.4 (PR #1902), 2.8.0 and 2.9.0 -> rocm6.4 (PR #2052).
- gfx1101 (RX 7800/7700 XT) joined the wheels in pytorch/pytorch PR #141667 (Nov 2024, torch 2.6,
  rocm6.2.4); gfx1200/gfx1201 (RDNA4) in PR #148562 (Mar 2025, nightly): rocm6.4 (torch 2.8+)
  is the first stable index certain to hold them.
- ComfyUI's README installs from ``whl/rocm6.4`` (facts S35); always ``--index-url``, never
  ``--extra-index-url`` (comfy-cli PR #379: with both, pip picks PyPI's CUDA torch).
"""

from __future__ import annotations

import re

BASE_URL = "https://download.pytorch.org/whl/"

# Stable ROCm indexes that exist on download.pytorch.org (see the module docstring).
KNOWN_INDEXES: tuple[str, ...] = ("rocm6.0", "rocm6.1", "rocm6.2", "rocm6.2.4", "rocm6.4")
DEFAULT_INDEX = "rocm6.4"

# gfx target -> oldest index whose wheels carry code for it (targets not listed: any index).
MIN_INDEX_FOR_GFX = {
    "gfx1101": "rocm6.2.4",
    "gfx1200": "rocm6.4",
    "gfx1201": "rocm6.4",
}


def _key(index: str) -> tuple[int, ...]:
    return tuple(int(x) for x in index[len("rocm"):].split("."))


def index_url(index: str) -> str:
    return BASE_URL + index


def choose_index(previous_rocm: str | None, gfx_targets: list[str] | tuple[str, ...] = ()) -> tuple[str, str]:
    """(index name, why): keep the ROCm release the env had when that index exists and carries
    the GPUs' targets; otherwise the default index."""
    floor = max((MIN_INDEX_FOR_GFX[g] for g in gfx_targets if g in MIN_INDEX_FOR_GFX), key=_key, default=None)
    if previous_rocm:
        match = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", previous_rocm)
        if match:
            full = f"rocm{previous_rocm}"
            short = f"rocm{match.group(1)}.{match.group(2)}"
            for candidate in (full, short):
                if candidate in KNOWN_INDEXES and (floor is None or _key(candidate) >= _key(floor)):
                    return candidate, f"keeps ROCm {previous_rocm}, which this environment had before"
            if floor is not None and (full in KNOWN_INDEXES or short in KNOWN_INDEXES):
                return floor, f"ROCm {previous_rocm} wheels lack code for {', '.join(gfx_targets)}"
    if floor is not None and _key(floor) > _key(DEFAULT_INDEX):
        return floor, f"the first index with code for {', '.join(gfx_targets)}"
    return DEFAULT_INDEX, "the current stable PyTorch ROCm index"
