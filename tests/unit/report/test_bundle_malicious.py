"""Hostile and damaged bundles: each is refused with a clear message, nothing is left behind."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile

import pytest

from rocmdesk.report import bundle as bundle_mod
from rocmdesk.report.bundle import BundleError, open_bundle
from rocmdesk.report.manifest import FORMAT, MANIFEST_NAME
from tests.support.hostile_bundles import open_payload


def _manifest(entries: list[dict]) -> bytes:
    return json.dumps({"format": FORMAT, "created": 1.0, "rocmdesk_version": "t", "files": entries}).encode()


def _entry(name: str, data: bytes) -> dict:
    return {"path": name, "type": "file", "why": "t", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]], manifest: bytes | None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        if manifest is not None:
            info = tarfile.TarInfo(MANIFEST_NAME)
            info.size = len(manifest)
            tar.addfile(info, io.BytesIO(manifest))
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return gzip.compress(buf.getvalue())


def _file(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _special(name: str, kind: bytes, linkname: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    return info, None


def _good_members() -> tuple[list, list[dict]]:
    data = b"amdgpu 1 0 - Live 0x0\n"
    return [_file("proc/modules", data)], [_entry("proc/modules", data)]




def _refused(tmp_path, tmp_dir, payload: bytes, match: str) -> None:
    with pytest.raises(BundleError, match=match):
        open_payload(tmp_path, tmp_dir, payload)
    assert list(tmp_dir.iterdir()) == [], "the private folder must be removed after a refusal"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.tar.gz", "private"], "nothing written outside"


def test_a_valid_hand_made_bundle_opens(tmp_path, tmp_dir):
    members, entries = _good_members()
    with open_payload(tmp_path, tmp_dir, _tar(members, _manifest(entries))) as opened:
        assert opened.root.read_text("/proc/modules").startswith("amdgpu")
    assert list(tmp_dir.iterdir()) == []


@pytest.mark.parametrize("cut", [10, 200, -30])
def test_truncated_archive(tmp_path, tmp_dir, cut):
    members, entries = _good_members()
    payload = _tar(members, _manifest(entries))
    _refused(tmp_path, tmp_dir, payload[:cut], "damaged|truncated|not a gzip")


def test_garbage_and_empty_files(tmp_path, tmp_dir):
    _refused(tmp_path, tmp_dir, b"this is not an archive at all" * 10, "damaged|not a gzip")
    _refused(tmp_path, tmp_dir, b"", "damaged|empty|not a gzip")
    _refused(tmp_path, tmp_dir, gzip.compress(b"\x00" * 2048), "empty")


def test_corrupt_compressed_stream(tmp_path, tmp_dir):
    members, entries = _good_members()
    payload = bytearray(_tar(members, _manifest(entries)))
    for i in range(20, len(payload) - 10):
        payload[i] ^= 0x5A
    _refused(tmp_path, tmp_dir, bytes(payload), "damaged|refused")


@pytest.mark.parametrize("name", ["../escape", "a/../../escape", "/etc/passwd", "./x/../../y", "a//b", "a\\b"])
def test_bad_member_names(tmp_path, tmp_dir, name):
    data = b"x"
    _refused(tmp_path, tmp_dir, _tar([_file(name, data)], _manifest([_entry(name, data)])), "refused")
    assert not (tmp_path.parent / "escape").exists()


@pytest.mark.parametrize("target", ["/etc/passwd", "../../../../etc", "a/../../..", "../.."])
def test_links_escaping(tmp_path, tmp_dir, target):
    entry = {"path": "sys/x", "type": "link", "why": "t", "target": target}
    _refused(tmp_path, tmp_dir, _tar([_special("sys/x", tarfile.SYMTYPE, target)], _manifest([entry])),
             "points|refused")


def test_hardlink_device_fifo(tmp_path, tmp_dir):
    for kind, word in ((tarfile.LNKTYPE, "hardlink"), (tarfile.CHRTYPE, "device"), (tarfile.BLKTYPE, "device"),
                       (tarfile.FIFOTYPE, "fifo")):
        entry = {"path": "dev/kfd", "type": "file", "why": "t", "size": 0, "sha256": "0" * 64}
        _refused(tmp_path, tmp_dir, _tar([_special("dev/kfd", kind, "proc/modules")], _manifest([entry])), word)


def test_file_written_through_a_link_is_refused(tmp_path, tmp_dir):
    data = b"owned"
    entries = [{"path": "a", "type": "link", "why": "t", "target": "b"}, _entry("a/x", data)]
    members = [_special("a", tarfile.SYMTYPE, "b"), _file("a/x", data)]
    _refused(tmp_path, tmp_dir, _tar(members, _manifest(entries)), "below the link|through a link")


def test_member_larger_than_declared(tmp_path, tmp_dir):
    data = b"x" * 5000
    entry = _entry("proc/modules", b"x" * 10)
    _refused(tmp_path, tmp_dir, _tar([_file("proc/modules", data)], _manifest([entry])), "manifest says 10")


def test_decompression_bomb_total_bytes(tmp_path, tmp_dir, monkeypatch):
    monkeypatch.setattr(bundle_mod, "OPEN_MAX_TOTAL_BYTES", 1 << 20)
    data = b"\0" * (4 << 20)  # 4 MiB of zeros: a few KB compressed
    payload = _tar([_file("proc/modules", data)], _manifest([_entry("proc/modules", data)]))
    assert len(payload) < 64 << 10
    _refused(tmp_path, tmp_dir, payload, "bomb")


def test_huge_member_is_refused_before_reading(tmp_path, tmp_dir, monkeypatch):
    monkeypatch.setattr(bundle_mod, "OPEN_MAX_MEMBER_BYTES", 1000)
    data = b"y" * 2000
    _refused(tmp_path, tmp_dir, _tar([_file("proc/modules", data)], _manifest([_entry("proc/modules", data)])),
             "larger than")


def test_too_many_members(tmp_path, tmp_dir, monkeypatch):
    monkeypatch.setattr(bundle_mod, "OPEN_MAX_MEMBERS", 5)
    members = [_file(f"etc/f{i}", b"z") for i in range(10)]
    entries = [_entry(f"etc/f{i}", b"z") for i in range(10)]
    _refused(tmp_path, tmp_dir, _tar(members, _manifest(entries)), "more than 5 members")


def test_manifest_lies_about_the_hash(tmp_path, tmp_dir):
    entry = _entry("proc/modules", b"honest")
    _refused(tmp_path, tmp_dir, _tar([_file("proc/modules", b"sneaky")], _manifest([entry])), "sha256")


def test_manifest_lists_a_missing_member(tmp_path, tmp_dir):
    members, entries = _good_members()
    entries.append(_entry("proc/cmdline", b"quiet\n"))
    _refused(tmp_path, tmp_dir, _tar(members, _manifest(entries)), "missing")


def test_extra_member_not_in_the_manifest(tmp_path, tmp_dir):
    members, entries = _good_members()
    members.append(_file("home/user1/.ssh/id_rsa", b"key"))
    _refused(tmp_path, tmp_dir, _tar(members, _manifest(entries)), "not listed")


def test_type_and_link_mismatch(tmp_path, tmp_dir):
    entry = {"path": "sys/x", "type": "link", "why": "t", "target": "y"}
    _refused(tmp_path, tmp_dir, _tar([_file("sys/x", b"")], _manifest([entry])), "manifest says link")
    _refused(tmp_path, tmp_dir, _tar([_special("sys/x", tarfile.SYMTYPE, "z")], _manifest([entry])),
             "does not match")


def test_duplicate_member(tmp_path, tmp_dir):
    members, entries = _good_members()
    _refused(tmp_path, tmp_dir, _tar(members + members, _manifest(entries)), "twice")


def test_manifest_missing_first_or_garbage(tmp_path, tmp_dir):
    members, _entries = _good_members()
    _refused(tmp_path, tmp_dir, _tar(members, None), "does not start with its manifest")
    _refused(tmp_path, tmp_dir, _tar(members, b"{not json"), "not valid JSON")
    _refused(tmp_path, tmp_dir, _tar(members, json.dumps({"format": "other"}).encode()), "not a rocmdesk")
    bad_entry = {"format": FORMAT, "files": [{"path": "x", "type": "file", "size": -1, "sha256": "a"}]}
    _refused(tmp_path, tmp_dir, _tar(members, json.dumps(bad_entry).encode()), "valid size")


def test_private_folder_removed_on_unexpected_error(tmp_path, tmp_dir, monkeypatch):
    members, entries = _good_members()

    def boom(*_a, **_k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(bundle_mod, "_write_file", boom)
    path = tmp_path / "b.tar.gz"
    path.write_bytes(_tar(members, _manifest(entries)))
    with pytest.raises(RuntimeError):
        open_bundle(path, tmp_dir=str(tmp_dir))
    assert list(tmp_dir.iterdir()) == []
