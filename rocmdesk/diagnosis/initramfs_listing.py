"""Initramfs *listings*: what a bundle holds instead of a (tens of MB) initramfs image.

``rocmdesk/initramfs/modules.json`` records the installed amdgpu module files of the running
kernel (size, sha256, modinfo): a bundle leaves out files over 2 MiB and real amdgpu modules are
3-4 MiB compressed, 20+ MiB plain, so ``initramfs-stale`` compares the image's copy with this
record (:func:`recorded_module`) instead of the file. Such a module is a short stand-in text in the
bundle (:func:`standin`), so listings of its folder still show it.

``rocmdesk/initramfs/<image name>.list`` is JSON lines: a header, then one line per cpio member
(name, size, mode, mtime, segment); kernel-module members named in ``MODULES`` also carry their
sha256 and modinfo, so a check comparing the initramfs copy of amdgpu with the installed one
still can. :func:`read_listing` rebuilds an :class:`InitramfsImage` the checks use unchanged;
:func:`listing_path` says where a snapshot keeps the listing of a given image.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable

from rocmdesk.diagnosis.initramfs_image import (
    MODULE_CAPTURE,
    MODULE_SUFFIXES,
    InitramfsImage,
    Member,
    MemberData,
    ModuleFingerprint,
    Segment,
    fingerprint,
    module_name_of,
    read_image,
)
from rocmdesk.host import HostReadError, HostRoot

FORMAT = "rocmdesk-initramfs-listing/1"
LISTING_DIR = "rocmdesk/initramfs"
MODULES = frozenset({"amdgpu", "amdkcl", "amdttm", "amd_sched", "amdxcp"})
MAX_LISTING_BYTES = 32 << 20


class ListingError(ValueError):
    """A listing file is damaged."""


def listing_path(image_host_path: str) -> str:
    """Host path of the listing a snapshot holds for ``/boot/<image>``."""
    return f"/{LISTING_DIR}/{os.path.basename(image_host_path)}.list"


def list_image_lines(real_path: str, host_path: str) -> Iterable[str]:
    """Read an image (analyst-side path) and yield its listing as JSON lines."""
    # the same capture size as the check reading the image itself (the default one is far
    # smaller than a real amdgpu module, which would then be listed without its sha256)
    image = read_image(real_path, want=lambda n: MODULE_CAPTURE if module_name_of(n) in MODULES else 0)
    yield json.dumps({"format": FORMAT, "image": host_path, "size": image.size, "mtime": image.mtime,
                      "segments": [[s.offset, s.compression, s.members, s.complete] for s in image.segments],
                      "problem": image.problem}, separators=(",", ":"))
    for m in image.members:
        line: dict = {"n": m.name, "s": m.size, "m": m.mode, "t": m.mtime, "g": m.segment}
        captured = image.captured.get(m.name)
        if captured is not None:
            line["sha256"] = captured.sha256
            if captured.link_target is not None:
                line["link"] = captured.link_target
            if captured.data is not None and module_name_of(m.name):
                line["modinfo"] = fingerprint(m.name, captured.data).modinfo
        yield json.dumps(line, separators=(",", ":"))


def read_listing(text: str, real_path: str = "") -> InitramfsImage:
    """An InitramfsImage (no member bytes) from a listing; raises ListingError when damaged.

    Module members keep their sha256 in ``captured[name]`` and their modinfo in
    ``image.module_info[name]`` (an attribute added here, absent on images read from bytes).
    """
    lines = text.splitlines()
    try:
        header = json.loads(lines[0]) if lines else None
    except ValueError as exc:
        raise ListingError(f"the initramfs listing is not JSON ({exc})") from exc
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ListingError("not a rocmdesk initramfs listing")
    try:
        image = InitramfsImage(real_path or str(header.get("image", "")), int(header.get("size", 0)),
                               float(header.get("mtime", 0.0)))
        image.segments = [Segment(int(o), str(c), int(n), bool(done)) for o, c, n, done in header.get("segments", [])]
        image.problem = header.get("problem")
        number = 1
        for number, line in enumerate(lines[1:], start=2):  # noqa: B007  (named in the error)
            if not line.strip():
                continue
            d = json.loads(line)
            member = Member(str(d["n"]), int(d["s"]), int(d["m"]), int(d["t"]), int(d["g"]))
            image.members.append(member)
            if "sha256" in d:
                image.captured[member.name] = MemberData(member.size, str(d["sha256"]), None, d.get("link"))
    except (ValueError, KeyError, TypeError) as exc:
        raise ListingError(f"the initramfs listing is damaged near line {number}") from exc
    return image


def module_info(text: str) -> dict[str, dict[str, str]]:
    """modinfo (``srcversion``, ``vermagic``...) of the module members of a listing, by name."""
    out = {}
    for line in text.splitlines()[1:]:
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if isinstance(d, dict) and isinstance(d.get("modinfo"), dict):
            out[str(d["n"])] = {str(k): str(v) for k, v in d["modinfo"].items()}
    return out


# -- the installed amdgpu modules of the running kernel ----------------------------------------------

MODULES_NAME = f"{LISTING_DIR}/modules.json"
MODULES_FORMAT = "rocmdesk-module-records/1"
MAX_MODULE_RECORDS = 64
# where depmod looks, in its default order (the diagnosis' live_amdgpu search order)
MODULE_FOLDERS = ("updates/dkms", "updates", "extra", "kernel/drivers/gpu/drm/amd/amdgpu")
STANDIN_HEADER = b"rocmdesk stand-in: kernel module left out of this bundle\n"


def module_candidates(root: HostRoot, kver: str) -> list[str]:
    """Host paths of the amdgpu module files the kernel ``kver`` could load (modules.dep first)."""
    moddir = f"/lib/modules/{kver}"
    out: list[str] = []
    dep = _read(root, f"{moddir}/modules.dep", 64 << 20) or ""
    for line in dep.splitlines():
        path = line.split(":", 1)[0].strip()
        if path and module_name_of(path) in MODULES:
            out.append(f"{moddir}/{path}")
    for folder in MODULE_FOLDERS:
        for name in root.listdir(f"{moddir}/{folder}"):
            if module_name_of(name) in MODULES and name.endswith(MODULE_SUFFIXES):
                out.append(f"{moddir}/{folder}/{name}")
    seen: set[str] = set()
    unique = []
    for path in out:
        if path not in seen:
            seen.add(path)
            unique.append(path)
    return unique[:MAX_MODULE_RECORDS]


def module_records(root: HostRoot, kver: str | None) -> dict:
    """The record a bundle keeps of the running kernel's amdgpu modules (JSON-ready)."""
    records: dict[str, dict] = {}
    notes: list[str] = []
    for path in module_candidates(root, kver) if kver else []:
        try:
            real = root.resolve_host_path(path)
            data = root.read_bytes(path, MODULE_CAPTURE)
            mtime = root.stat(path).st_mtime
        except (HostReadError, OSError) as exc:
            notes.append(f"{path}: {exc}")
            continue
        fp = fingerprint(path, data)
        records[real] = {"size": fp.size, "sha256": fp.sha256, "modinfo": fp.modinfo, "mtime": mtime}
    return {"format": MODULES_FORMAT, "kernel": kver, "modules": records, "notes": notes}


def standin(host_path: str, size: int) -> bytes:
    """The bytes a bundle holds in place of a module file it leaves out."""
    return STANDIN_HEADER + (f"{host_path}: {size} bytes; its size, sha256 and modinfo are in "
                             f"/{MODULES_NAME}\n").encode()


def recorded_module(root: HostRoot, host_path: str) -> ModuleFingerprint | None:
    """The fingerprint a snapshot recorded for the module file ``host_path`` (None on a live root,
    when the snapshot has no record of it, or when the record is damaged)."""
    if root.is_live:
        return None
    text = _read(root, f"/{MODULES_NAME}", 4 << 20)
    if not text:
        return None
    try:
        data = json.loads(text)
        if data.get("format") != MODULES_FORMAT:
            return None
        real = root.resolve_host_path(host_path)
        record = data["modules"].get(real)
        if record is None:
            return None
        modinfo = record.get("modinfo") or {}
        if not isinstance(modinfo, dict):
            return None
        return ModuleFingerprint(host_path, int(record["size"]), str(record["sha256"]),
                                 {str(k): str(v) for k, v in modinfo.items()})
    except (ValueError, KeyError, TypeError, AttributeError, HostReadError):
        return None


def _read(root: HostRoot, host_path: str, max_bytes: int) -> str | None:
    try:
        return root.read_text(host_path, max_bytes)
    except (HostReadError, OSError):
        return None
