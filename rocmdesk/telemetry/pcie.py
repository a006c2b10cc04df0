"""PCIe link state of a GPU from sysfs (``current_link_speed``/``width``, ``max_link_*``).

The PCI core writes speeds as "16.0 GT/s PCIe" (older kernels: "8 GT/s", or "Unknown" while the
link is down) and widths as a lane count (drivers/pci/pci-sysfs.c). A link in a power-saving state
trains down at idle, so a low current speed alone is not a fault: diagnosis compares under load.
"""

from __future__ import annotations

import re

_SPEED = re.compile(r"^\s*(\d{1,3}(?:\.\d{1,3})?)\s*GT/s")


def parse_speed_gts(text: str) -> float | None:
    """ "16.0 GT/s PCIe" -> 16.0; None for "Unknown" or anything else."""
    match = _SPEED.match(text)
    return float(match.group(1)) if match else None


def parse_width(text: str) -> int | None:
    """ "16" -> 16; None for "0", "Unknown" or garbage (x32 is the widest link the spec has)."""
    text = text.replace("\x00", "").strip()  # some boards' sysfs reads come NUL-padded
    if not text.isdigit() or len(text) > 2:
        return None
    width = int(text)
    return width if 1 <= width <= 32 else None
