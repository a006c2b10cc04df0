"""RAS (ECC) counters, retired VRAM pages and partition modes of Instinct GPUs, from sysfs.

Formats are the kernel's (drivers/gpu/drm/amd/amdgpu/amdgpu_ras.c, its DOC comments "AMDGPU RAS
sysfs Error Count Interface" and "AMDGPU RAS sysfs gpu_vram_bad_pages Interface"):
``ras/<block>_err_count`` holds lines ``ue: N`` and ``ce: N`` (uncorrectable, correctable);
``ras/gpu_vram_bad_pages`` one line per retired page, ``0x<pfn> : 0x<size> : <flag>`` with flag
R (reserved: retired), P (pending) or F (failed to reserve). Partition modes are
``current_compute_partition`` (SPX, DPX, QPX, CPX…) and ``current_memory_partition`` (NPS1, NPS4…)
in the device folder (amdgpu_xcp / amdgpu_gmc on MI300). Parsers are pure; ``read_ras`` does the I/O.
"""

from __future__ import annotations

import errno
import os
import re

from rocmdesk import host

TYPE_CHECKING = False  # typing is not imported at run time: `rocmdesk sample` starts faster
if TYPE_CHECKING:
    from typing import Any

MAX_COUNT = (1 << 63) - 1
MAX_BAD_PAGE_BYTES = 1 << 20  # ~35 bytes a line: far more pages than any threshold allows
_COUNT = re.compile(r"^\s*(ue|ce|de)\s*:\s*(\d{1,19})\s*$")
_PAGE = re.compile(r"^\s*0x[0-9a-fA-F]{1,16}\s*:\s*0x[0-9a-fA-F]{1,16}\s*:\s*([RPF])\s*$")
_PARTITION = re.compile(r"^[A-Z0-9]{2,8}$")


def parse_err_count(text: str) -> dict[str, int]:
    """ "ue: 0\\nce: 3\\n" -> {"ue": 0, "ce": 3}; lines of another shape are ignored."""
    out: dict[str, int] = {}
    for line in text.splitlines()[:8]:
        match = _COUNT.match(line)
        if match and int(match.group(2)) <= MAX_COUNT:
            out[match.group(1)] = int(match.group(2))
    return out


def parse_bad_pages(text: str) -> dict[str, int] | None:
    """Retired pages by state: {"retired": R lines, "pending": P, "failed": F}.

    Lines of another shape are skipped, but a file of nothing else is None: garbage must not read as
    "no retired pages". An empty file is no page at all (the kernel prints nothing for an empty table).
    """
    counts = {"retired": 0, "pending": 0, "failed": 0}
    names = {"R": "retired", "P": "pending", "F": "failed"}
    matched = garbage = 0
    for line in text.partition("\x00")[0].splitlines():
        match = _PAGE.match(line)
        if match:
            counts[names[match.group(1)]] += 1
            matched += 1
        elif line.strip():
            garbage += 1
    return None if garbage and not matched else counts


def parse_partition(text: str) -> str | None:
    value = text.strip().strip("\x00")
    return value if _PARTITION.match(value) else None


def _shown(text: str) -> str:
    text = text.partition("\x00")[0].strip()
    return "empty file" if not text else f"garbage value '{text[:24]}{'…' if len(text) > 24 else ''}'"


def _os_reason(exc: OSError) -> str:
    return exc.failure.value if isinstance(exc, host.HostReadError) else \
        host.HostReadError.from_oserror(exc, "").failure.value


def read_ras(device_real: str) -> tuple[dict[str, Any] | None, dict[str, str] | None, dict[str, str]]:
    """(ras, partition, unavailable) for one device folder; (None, None, reasons) where it has neither."""
    unavailable: dict[str, str] = {}
    ras: dict[str, Any] | None = None
    folder = os.path.join(device_real, "ras")
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        names = []
        unavailable["ras"] = "this GPU reports no RAS (ECC) counters (no ras folder)"
    if names:
        blocks: dict[str, dict[str, int]] = {}
        for name in names:
            if name.endswith("_err_count"):
                try:
                    text = host.read_fd_text(os.path.join(folder, name))
                except OSError as exc:
                    unavailable[f"ras.{name[:-10]}"] = _os_reason(exc)
                    continue
                counts = parse_err_count(text)
                if counts:
                    blocks[name[:-10]] = counts
                else:
                    unavailable[f"ras.{name[:-10]}"] = f"{name}: {_shown(text)}"
        ras = {"blocks": blocks}
        # A total over the blocks that could be read is a lower bound: kept when it counts errors, but
        # a 0 that only means "the counter with the errors was unreadable" is N/A, never a fake 0.
        partial = [k for k in unavailable if k.startswith("ras.")]
        for key, letter in (("uncorrectable", "ue"), ("correctable", "ce")):
            total = sum(c.get(letter, 0) for c in blocks.values())
            if partial and total == 0:  # absent, like every N/A reading
                unavailable[f"ras.{key}"] = f"{len(partial)} of the error counters could not be read"
            else:
                ras[key] = total
        if "gpu_vram_bad_pages" in names:
            try:
                text = host.read_fd_text(os.path.join(folder, "gpu_vram_bad_pages"), MAX_BAD_PAGE_BYTES)
            except OSError as exc:
                unavailable["ras.pages"] = _os_reason(exc)
            else:
                pages = parse_bad_pages(text)
                if pages is None:
                    unavailable["ras.pages"] = f"gpu_vram_bad_pages: {_shown(text)}"
                else:
                    ras["pages"] = pages
    partition: dict[str, str] | None = None
    for key, name in (("compute", "current_compute_partition"), ("memory", "current_memory_partition")):
        try:
            text = host.read_fd_text(os.path.join(device_real, name))
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR):  # present but unreadable: say why
                unavailable[f"partition.{key}"] = f"{name}: {_os_reason(exc)}"
            continue
        value = parse_partition(text)
        if value:
            partition = {**(partition or {}), key: value}
        else:
            unavailable[f"partition.{key}"] = f"{name}: {_shown(text)}"
    if partition is not None:  # one mode read, the other not: say which is missing
        for key, name in (("compute", "current_compute_partition"), ("memory", "current_memory_partition")):
            if key not in partition:
                unavailable.setdefault(f"partition.{key}", f"{name}: no such file")
    elif not any(k.startswith("partition.") for k in unavailable):
        unavailable["partition"] = "this GPU has no partition modes (current_compute_partition)"
    return ras, partition, unavailable
