"""Where an amdgpu firmware file is: on the root file system, in the initramfs, or nowhere rocmdesk looked.

The kernel's firmware loader searches ``/lib/firmware/updates/<release>``, ``/lib/firmware/updates``,
``/lib/firmware/<release>`` and ``/lib/firmware`` (drivers/base/firmware_loader/main.c ``fw_path``), and with
CONFIG_FW_LOADER_COMPRESS also ``<name>.zst`` / ``<name>.xz``. While amdgpu loads from the initramfs (early KMS)
only the image's copy exists, so "error -2" may mean "not in the initramfs" for a file the root file system has.
A root that has no firmware folder at all (a support snapshot) is "not looked at", never "missing".
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from rocmdesk.host import HostReadError

log = logging.getLogger(__name__)

FIRMWARE_BASES = ("/usr/lib/firmware", "/lib/firmware")
COMPRESSED_SUFFIXES = ("", ".zst", ".xz")
# What a support bundle must keep so these lookups give the same answers on the support side: the names (not the
# contents) of the firmware folder amdgpu reads. The bundle collector imports it (rocmdesk/report).
BUNDLE_PATHS: tuple[str, ...] = ("/usr/lib/firmware/amdgpu", "/lib/firmware/amdgpu",
                                 "/usr/lib/firmware/updates/amdgpu", "/lib/firmware/updates/amdgpu")


@dataclass(frozen=True, slots=True)
class FirmwarePlace:
    name: str  # "amdgpu/gc_11_0_0_pfp.bin" as the kernel log names it
    on_root: tuple[str, ...] | None  # host paths found; None when no firmware folder could be looked at
    in_image: bool | None  # None when no initramfs image was read
    image_path: str | None = None
    image_member: str | None = None

    @property
    def state(self) -> str:
        """"root-only", "both", "nowhere", "image-only", or "unknown" (could not look at the root)."""
        if self.on_root is None:
            return "unknown"
        if self.on_root:
            return "both" if self.in_image else ("root-only" if self.in_image is False else "root")
        return "image-only" if self.in_image else "nowhere"


def firmware_dirs(kver: str | None) -> list[str]:
    """The folders the kernel searches, in its order, for both /lib and /usr/lib."""
    out = []
    for base in FIRMWARE_BASES:
        if kver:
            out.append(f"{base}/updates/{kver}")
        out.append(f"{base}/updates")
        if kver:
            out.append(f"{base}/{kver}")
        out.append(base)
    return out


def locate(root, name: str, kver: str | None, image=None, image_path: str | None = None) -> FirmwarePlace:
    """Look for ``name`` on the root and in ``image`` (an initramfs.InitramfsImage or None)."""
    looked = False
    found: list[str] = []
    seen: set[str] = set()
    for folder in firmware_dirs(kver):
        if not root.is_dir(folder):
            continue
        looked = True
        for suffix in COMPRESSED_SUFFIXES:
            path = f"{folder}/{name}{suffix}"
            if root.exists(path):
                try:
                    real = root.real_path(path)
                except HostReadError:
                    real = path
                if real not in seen:  # /lib -> usr/lib: one file, two names
                    seen.add(real)
                    found.append(path)
    in_image = None
    member = None
    if image is not None:
        in_image = False
        wanted = tuple(f"firmware/{name}{s}" for s in COMPRESSED_SUFFIXES)
        for candidate in sorted(image.names()):
            if candidate.endswith(wanted):
                in_image, member = True, candidate
                break
    return FirmwarePlace(name, tuple(found) if looked else None, in_image, image_path, member)
