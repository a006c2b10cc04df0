"""Marketing names and kinds of AMD GPUs from their PCI ids.

Order of trust: libdrm's ``amdgpu.ids`` on the host root (device *and* revision id, the table
libdrm's ``amdgpu_get_marketing_name()`` reads and LACT and amd-smi name GPUs by; it tells an
RX 7900 XTX, revision C8, from an RX 7900 XT, revision CC, which share device 744C), then the
built-in revision table, then the machine's ``pci.ids`` (``usr/share/misc/pci.ids`` or
``usr/share/hwdata/pci.ids``: one name per device id), then the built-in device table, then
"AMD GPU 1002:xxxx". The built-in ids were checked against pci.ids entries (e.g.
``740f Aldebaran/MI200 [Instinct MI210]``, ``7408 Aldebaran/MI200 [Instinct MI250X]``,
``74a1 Aqua Vanjaram [Instinct MI300X]``, ``744c Navi 31 [Radeon RX 7900 XT/7900 XTX]``).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from typing import TypeVar

from rocmdesk.host import HostReadError, HostRoot

log = logging.getLogger(__name__)

AMD_VENDOR = 0x1002
PCI_IDS_PATHS = ("usr/share/misc/pci.ids", "usr/share/hwdata/pci.ids")
# libdrm's table (Debian/Ubuntu libdrm-common, Fedora libdrm, Arch libdrm); AMD's own libdrm from
# amdgpu-install (libdrm-amdgpu-common) installs a newer copy under /opt/amdgpu, looked at first.
AMDGPU_IDS_PATHS = ("opt/amdgpu/share/libdrm/amdgpu.ids", "usr/share/libdrm/amdgpu.ids")
MAX_IDS_BYTES = 16 << 20

# (device id, revision id) -> name, for device ids several products share (libdrm data/amdgpu.ids).
BUILTIN_REVISION_NAMES: dict[tuple[int, int], str] = {
    (0x744C, 0xC8): "AMD Radeon RX 7900 XTX",
    (0x744C, 0xCC): "AMD Radeon RX 7900 XT",
    (0x744C, 0xCE): "AMD Radeon RX 7900 GRE",
    (0x744C, 0xCF): "AMD Radeon RX 7900M",
    (0x73BF, 0xC0): "AMD Radeon RX 6900 XT",
    (0x73BF, 0xC1): "AMD Radeon RX 6800 XT",
    (0x73BF, 0xC3): "AMD Radeon RX 6800",
}

# device id -> marketing name (the pci.ids bracket text, prefixed "AMD").
BUILTIN_NAMES: dict[int, str] = {
    # Instinct (CDNA)
    0x738C: "AMD Instinct MI100",
    0x738E: "AMD Instinct MI100",
    0x7408: "AMD Instinct MI250X",
    0x740C: "AMD Instinct MI250X/MI250",
    0x740F: "AMD Instinct MI210",
    0x74A0: "AMD Instinct MI300A",
    0x74A1: "AMD Instinct MI300X",
    0x74A5: "AMD Instinct MI325X",
    # RDNA4 / RDNA3 / RDNA2 / RDNA1
    0x7550: "AMD Radeon RX 9070/9070 XT/9070 GRE",
    0x7551: "AMD Radeon AI PRO R9700",
    0x744C: "AMD Radeon RX 7900 XT/7900 XTX",
    0x7448: "AMD Radeon Pro W7900",
    0x745E: "AMD Radeon Pro W7800",
    0x747E: "AMD Radeon RX 7700 XT/7800 XT",
    0x7480: "AMD Radeon RX 7700S/7600S/7600M XT",
    0x73BF: "AMD Radeon RX 6800/6800 XT/6900 XT",
    0x73AF: "AMD Radeon RX 6900 XT",
    0x73A5: "AMD Radeon RX 6950 XT",
    0x73A3: "AMD Radeon PRO W6800",
    0x73DF: "AMD Radeon RX 6700/6700 XT/6750 XT/6800M/6850M XT",
    0x73FF: "AMD Radeon RX 6600/6600 XT/6600M",
    0x731F: "AMD Radeon RX 5600 OEM/5600 XT/5700/5700 XT",
    0x7340: "AMD Radeon RX 5500/5500M/Pro 5500M",
    # GCN
    0x687F: "AMD Radeon RX Vega 56/64",
    0x67DF: "AMD Radeon RX 470/480/570/570X/580/580X/590",
    0x6617: "AMD Radeon R7 240/340/520",
    0x679A: "AMD Radeon HD 7950/8950 OEM/R9 280",
    0x6818: "AMD Radeon HD 7870 GHz Edition",
    # APUs
    0x15BF: "AMD Radeon 780M/760M/740M Graphics (Phoenix)",
    0x15C8: "AMD Radeon 740M Graphics (Phoenix2)",
    0x163F: "AMD Custom GPU 0405 (Van Gogh, Steam Deck)",
    0x1681: "AMD Radeon 680M (Rembrandt)",
    0x164C: "AMD Radeon Vega (Lucienne)",
    0x1636: "AMD Radeon Vega (Renoir)",
    0x1638: "AMD Radeon Vega (Cezanne)",
    0x15DD: "AMD Radeon Vega (Raven Ridge)",
    0x15D8: "AMD Radeon Vega (Picasso)",
    0x164E: "AMD Radeon Graphics (Raphael)",
    0x1506: "AMD Radeon 610M (Mendocino)",
    0x150E: "AMD Radeon 880M/890M (Strix Point)",
    0x1586: "AMD Radeon 8050S/8060S Graphics (Strix Halo)",
}

INSTINCT_IDS = frozenset({0x738C, 0x738E, 0x7408, 0x740C, 0x740F, 0x74A0, 0x74A1, 0x74A5})
APU_IDS = frozenset({0x15BF, 0x15C8, 0x163F, 0x1681, 0x164C, 0x1636, 0x1638, 0x15DD, 0x15D8,
                     0x164E, 0x1506, 0x150E, 0x1586})
# One board, two GCDs: each die is its own card; only the primary reports board power.
MULTI_DIE_IDS = frozenset({0x7408, 0x740C})

T = TypeVar("T")
_cache: dict[tuple[str, float], dict[int, str]] = {}
_ids_cache: dict[tuple[str, float], dict[tuple[int, int], str]] = {}
_IDS_LINE = re.compile(r"([0-9A-Fa-f]{4}),\s*([0-9A-Fa-f]{2}),\s*(\S.*?)\s*$")


def fallback_name(device_id: int | None) -> str:
    return f"AMD GPU 1002:{device_id:04x}" if device_id is not None else "AMD GPU"


def parse_pci_ids(text: str, vendor: int = AMD_VENDOR) -> dict[int, str]:
    """Device names of one vendor from pci.ids text, as "AMD <bracket text>" when bracketed."""
    names: dict[int, str] = {}
    in_vendor = False
    vendor_hex = f"{vendor:04x}"
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        if not line.startswith("\t"):
            in_vendor = line[:4].lower() == vendor_hex and line[4:5] in (" ", "\t")
            if line.startswith("C "):
                in_vendor = False
            continue
        if not in_vendor or line.startswith("\t\t"):
            continue
        match = re.match(r"\t([0-9a-fA-F]{4})\s+(.+)$", line)
        if not match:
            continue
        raw = match.group(2).strip()
        bracket = re.search(r"\[([^\]]+)\]\s*$", raw)
        names[int(match.group(1), 16)] = "AMD " + (bracket.group(1) if bracket else raw)
    return names


def parse_amdgpu_ids(text: str) -> dict[tuple[int, int], str]:
    """libdrm's ``amdgpu.ids``: ``device_id,<tab>revision_id,<tab>product name`` lines, hex ids.

    Comments (``#``), the version line (``1.0.0``) and lines of another shape are skipped; the first
    entry of a (device, revision) pair wins, as in libdrm's linear search."""
    names: dict[tuple[int, int], str] = {}
    for line in text.splitlines():
        match = _IDS_LINE.fullmatch(line.strip())
        if match and not line.lstrip().startswith("#"):
            names.setdefault((int(match.group(1), 16), int(match.group(2), 16)), match.group(3)[:200])
    return names


def _cached(root: HostRoot, paths: tuple[str, ...], cache: dict[tuple[str, float], T],
            parse: Callable[[str], T]) -> T | None:
    """The parsed first readable file of ``paths`` on ``root``, re-read when its mtime changes."""
    for host_path in paths:
        try:
            real = root.real_path(host_path)
            mtime = os.stat(real).st_mtime
        except (OSError, HostReadError):
            continue
        key = (real, mtime)
        if key not in cache:
            try:
                text = root.read_text(host_path, max_bytes=MAX_IDS_BYTES)
            except HostReadError as exc:
                log.info("cannot read %s: %s", host_path, exc)
                continue
            cache[key] = parse(text)
        return cache[key]
    return None


def _load_pci_ids(root: HostRoot) -> dict[int, str]:
    return _cached(root, PCI_IDS_PATHS, _cache, parse_pci_ids) or {}


def _load_amdgpu_ids(root: HostRoot) -> dict[tuple[int, int], str]:
    return _cached(root, AMDGPU_IDS_PATHS, _ids_cache, parse_amdgpu_ids) or {}


def marketing_name(root: HostRoot, device_id: int | None, revision_id: int | None = None) -> str:
    """The best name for an AMD device (and revision) id on this host root."""
    if device_id is None:
        return fallback_name(None)
    if revision_id is not None:
        key = (device_id, revision_id)
        name = _load_amdgpu_ids(root).get(key) or BUILTIN_REVISION_NAMES.get(key)
        if name:
            return name
    name = _load_pci_ids(root).get(device_id)
    return name or BUILTIN_NAMES.get(device_id) or fallback_name(device_id)
