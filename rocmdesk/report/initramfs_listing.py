"""Initramfs *listings*: what a bundle holds instead of a (tens of MB) initramfs image.

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

from rocmdesk.diagnosis.initramfs import (
    InitramfsImage,
    Member,
    MemberData,
    Segment,
    fingerprint,
    module_name_of,
    read_image,
)

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
    image = read_image(real_path, want=lambda n: module_name_of(n) in MODULES)
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
