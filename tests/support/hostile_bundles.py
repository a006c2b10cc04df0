"""Hand-made (hostile) bundles: tar members of any type, GNU sparse members, manifests that lie."""

from __future__ import annotations

import gzip
import hashlib
import json
import tarfile
from pathlib import Path
from typing import Any

from rocmdesk.report.bundle import open_bundle
from rocmdesk.report.manifest import FORMAT, HISTORY_NAME, MANIFEST_NAME


def open_payload(tmp_path: Path, tmp_dir: Path, payload: bytes) -> Any:
    """Write ``payload`` as a bundle beside the private folder and open it into that folder."""
    path = tmp_path / "b.tar.gz"
    path.write_bytes(payload)
    return open_bundle(path, tmp_dir=str(tmp_dir))


def manifest(entries: list[dict], **fields: Any) -> bytes:
    data = {"format": FORMAT, "created": 1.7e9, "rocmdesk_version": "t", **fields, "files": entries}
    return json.dumps(data).encode()


def file_entry(name: str, data: bytes, size: int | None = None, sha: str | None = None) -> dict:
    return {"path": name, "type": "file", "why": "t", "size": len(data) if size is None else size,
            "sha256": sha or hashlib.sha256(data).hexdigest()}


def link_entry(name: str, target: str) -> dict:
    return {"path": name, "type": "link", "why": "t", "target": target}


def dir_entry(name: str) -> dict:
    return {"path": name, "type": "dir", "why": "t"}


def file_member(name: str, data: bytes) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 1_700_000_000
    return info.tobuf(tarfile.PAX_FORMAT) + _padded(data)


def special_member(name: str, kind: bytes, linkname: str = "") -> bytes:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    return info.tobuf(tarfile.PAX_FORMAT)


def sparse_member(name: str, real_size: int, tail: bytes = b"\x01") -> bytes:
    """A GNU (old-style, type 'S') sparse member: ``real_size`` bytes of which only ``tail`` is stored."""
    info = tarfile.TarInfo(name)
    info.size = len(tail)
    info.type = tarfile.GNUTYPE_SPARSE
    header = bytearray(info.tobuf(tarfile.GNU_FORMAT))
    header[345:500] = bytes(155)  # the GNU sparse area (atime, ctime, map, realsize) instead of a prefix
    header[386:398] = _octal(real_size - len(tail), 12)  # one data run at the end
    header[398:410] = _octal(len(tail), 12)
    header[483:495] = _octal(real_size, 12)
    header[148:156] = b" " * 8
    header[148:156] = b"%06o\0 " % sum(header)
    return bytes(header) + _padded(tail)


def sparse_data(real_size: int, tail: bytes = b"\x01") -> bytes:
    return bytes(real_size - len(tail)) + tail


def bundle(manifest_bytes: bytes | None, members: list[bytes], compress: bool = True) -> bytes:
    out = b""
    if manifest_bytes is not None:
        out += file_member(MANIFEST_NAME, manifest_bytes)
    out += b"".join(members) + bytes(1024)
    return gzip.compress(out, compresslevel=6) if compress else out


def simple_bundle(files: dict[str, bytes], links: dict[str, str] | None = None, dirs: list[str] = (),
                  **manifest_fields: Any) -> bytes:
    """A well-formed bundle of these files, links and folders (any manifest fields overridden)."""
    links = links or {}
    entries = [dir_entry(d) for d in dirs] + [file_entry(n, d) for n, d in files.items()]
    entries += [link_entry(n, t) for n, t in links.items()]
    members = [special_member(d, tarfile.DIRTYPE) for d in dirs] + [file_member(n, d) for n, d in files.items()]
    members += [special_member(n, tarfile.SYMTYPE, t) for n, t in links.items()]
    return bundle(manifest(entries, **manifest_fields), members)


def history_lines(frames: int, gpus: int = 1, frame: dict | None = None, header: dict | None = None) -> bytes:
    """A recording (JSON lines) of ``frames`` identical frames of ``gpus`` GPUs."""
    head = {"format": "rocmdesk-recording", "version": 1, "name": "h", "interval_s": 1.0, "demo": False,
            "gpus": [{"info": {"card": f"card{i}", "pci": f"0000:0{i}:00.0", "name": "GPU"}, "static": {}}
                     for i in range(gpus)], **(header or {})}
    body = json.dumps(frame if frame is not None else {"temperature_c": {"edge": 40.0}})
    lines = [json.dumps(head)] + [f'{{"t":{t},"gpus":[{",".join([body] * gpus)}]}}' for t in range(frames)]
    return ("\n".join(lines) + "\n").encode()


HISTORY = HISTORY_NAME


def _octal(value: int, width: int) -> bytes:
    return b"%0*o\0" % (width - 1, value)


def _padded(data: bytes) -> bytes:
    return data + bytes(-len(data) % 512)
