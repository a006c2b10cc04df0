"""The initramfs reader on real-format images: every compression, microcode prefix, bad input."""

from __future__ import annotations

import hashlib
import shutil
import subprocess

import pytest

from rocmdesk.diagnosis import initramfs_image as ir
from tests.support.initramfs_images import (
    KVER,
    Entry,
    build_image,
    compress,
    cpio_newc,
    fake_module,
    main_entries,
    microcode_archive,
    module_file,
)

COMPRESSIONS = ["gzip", "zstd", "xz", "lzma", "lz4", "lz4-frame", "bzip2", "none"]
EXPECTED_KIND = {"lz4": "lz4-legacy"}
AMDGPU = f"usr/lib/modules/{KVER}/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko.zst"


def want_amdgpu(name: str) -> bool | int:
    return ir.MODULE_CAPTURE if ir.module_name_of(name) == "amdgpu" else False


def image_bytes(compression: str = "zstd", microcode: bool = True, **kw) -> bytes:
    module = module_file(fake_module(srcversion="C0FFEE0123456789ABCDEF0"), ".ko.zst")
    modprobe = {"amdgpu.conf": "options amdgpu ppfeaturemask=0xfff7bfff\n"}
    return build_image(main_entries(module=module, modprobe=modprobe), compression, microcode, **kw)


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_lists_microcode_and_main_archive(tmp_path, compression):
    path = tmp_path / "initrd.img"
    path.write_bytes(image_bytes(compression))
    image = ir.read_image(path, want=want_amdgpu)
    assert image.complete, image.problem
    assert image.compressions == ["none", EXPECTED_KIND.get(compression, compression)]
    names = image.names()
    assert "kernel/x86/microcode/AuthenticAMD.bin" in names
    assert AMDGPU in names and "etc/modprobe.d/amdgpu.conf" in names
    assert image.segments[0].complete and image.segments[1].complete
    member = image.member(AMDGPU)
    assert member is not None and member.is_file and member.segment == 1
    captured = image.captured[AMDGPU]
    assert captured.size == member.size
    fp = ir.fingerprint(AMDGPU, captured.data)
    assert fp.modinfo["srcversion"] == "C0FFEE0123456789ABCDEF0"
    assert fp.modinfo["vermagic"].startswith(KVER)
    assert fp.modinfo["name"] == "amdgpu"
    assert image.member("lib").is_symlink


def test_crc_format_without_microcode_and_dot_slash_names(tmp_path):
    path = tmp_path / "initramfs.img"
    entries = main_entries(module=b"\x7fELF tiny")
    path.write_bytes(build_image(entries, "gzip", microcode=False, crc=True, prefix="./"))
    image = ir.read_image(path, want=lambda n: n == AMDGPU)
    assert image.complete and image.compressions == ["gzip"]
    assert AMDGPU in image.names()  # "./" stripped
    assert image.captured[AMDGPU].data == b"\x7fELF tiny"


def test_capture_limit_keeps_hash_only(tmp_path):
    data = bytes(range(256)) * 64
    path = tmp_path / "img"
    path.write_bytes(build_image([Entry("big.bin", data)], "zstd"))
    image = ir.read_image(path, want=lambda n: 100)
    got = image.captured["big.bin"]
    assert got.data is None and got.size == len(data)
    assert got.sha256 == hashlib.sha256(data).hexdigest()


def test_later_member_wins(tmp_path):
    path = tmp_path / "img"
    early = cpio_newc([Entry("etc/x.conf", b"old\n")])
    path.write_bytes(early + b"\x00" * 12 + compress(cpio_newc([Entry("etc/x.conf", b"new\n")]), "gzip"))
    image = ir.read_image(path)
    assert image.member("etc/x.conf").segment == 1 and len(image.segments) == 2


@pytest.mark.skipif(not (shutil.which("cpio") and shutil.which("lz4") and shutil.which("zstd")),
                    reason="needs GNU cpio, lz4 and zstd command-line tools")
@pytest.mark.parametrize("tool", [["lz4", "-q", "-l", "-9"], ["zstd", "-q", "-19"], ["gzip", "-9", "-c"]])
def test_reads_archives_written_by_the_real_tools(tmp_path, tool):
    """GNU cpio -H newc plus the real compressors, exactly as initramfs-tools/mkinitcpio run them."""
    src = tmp_path / "src"
    (src / "usr/lib/modules" / KVER / "kernel").mkdir(parents=True)
    (src / "usr/lib/modules" / KVER / "kernel" / "amdgpu.ko").write_bytes(fake_module())
    (src / "lib").symlink_to("usr/lib")
    names = subprocess.run(["find", "."], cwd=src, capture_output=True, check=True).stdout
    archive = subprocess.run(["cpio", "--quiet", "-o", "-H", "newc"], cwd=src, input=names,
                             capture_output=True, check=True).stdout
    packed = subprocess.run(tool, input=archive, capture_output=True, check=True).stdout
    path = tmp_path / "initrd"
    path.write_bytes(microcode_archive() + packed)
    image = ir.read_image(path, want=want_amdgpu)
    assert image.complete, image.problem
    name = f"usr/lib/modules/{KVER}/kernel/amdgpu.ko"
    assert name in image.names()
    assert ir.fingerprint(name, image.captured[name].data).modinfo["vermagic"].startswith(KVER)


# -- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_truncated_image_gives_partial_listing_and_reason(tmp_path, compression):
    full = image_bytes(compression)
    path = tmp_path / "img"
    head = len(microcode_archive())
    path.write_bytes(full[: head + (len(full) - head) // 2])
    image = ir.read_image(path, want=want_amdgpu)
    assert not image.complete
    assert "truncated" in image.problem or "corrupt" in image.problem
    assert "kernel/x86/microcode/AuthenticAMD.bin" in image.names()


@pytest.mark.parametrize(("content", "reason"), [
    (b"", "empty"),
    (b"hello world, not an image", "not an initramfs image"),
    (b"\x89LZO\x00\x0d\x0a\x1a", None),
])
def test_not_an_image(tmp_path, content, reason):
    path = tmp_path / "img"
    path.write_bytes(content)
    if reason is None:  # LZO: recognized, not supported: a reason, not a crash
        image = ir.read_image(path)
        assert "LZO" in image.problem
        return
    with pytest.raises(ir.InitramfsError, match=reason):
        ir.read_image(path)


def test_microcode_only_is_incomplete(tmp_path):
    path = tmp_path / "img"
    path.write_bytes(microcode_archive())
    image = ir.read_image(path)
    assert "main archive is missing" in image.problem


def test_garbage_after_microcode(tmp_path):
    path = tmp_path / "img"
    path.write_bytes(microcode_archive() + b"GARBAGE!" * 20)
    image = ir.read_image(path)
    assert "garbage after segment 1" in image.problem
    assert "kernel/x86/microcode/AuthenticAMD.bin" in image.names()


def test_corrupt_compressed_data(tmp_path):
    data = bytearray(image_bytes("gzip"))
    for i in range(600, len(data) - 20, 7):
        data[i] ^= 0x5A
    path = tmp_path / "img"
    path.write_bytes(bytes(data))
    image = ir.read_image(path)
    assert image.problem and ("corrupt" in image.problem or "garbage" in image.problem
                              or "truncated" in image.problem)


def test_garbage_cpio_header(tmp_path):
    path = tmp_path / "img"
    bad = b"070701" + b"ZZZZZZZZ" * 13
    path.write_bytes(bad)
    image = ir.read_image(path)
    assert "garbage in a cpio header" in image.problem


def test_missing_directory_and_unreadable(tmp_path, monkeypatch):
    with pytest.raises(ir.InitramfsError, match="no such file"):
        ir.read_image(tmp_path / "nope")
    with pytest.raises(ir.InitramfsError, match="directory"):
        ir.read_image(tmp_path)
    path = tmp_path / "img"
    path.write_bytes(image_bytes())

    def deny(*_a, **_k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(ir, "open_regular", deny)  # the reader opens through host.open_regular (no FIFO)
    with pytest.raises(ir.InitramfsError, match="permission denied"):
        ir.read_image(path)


def test_limits_stop_bombs_and_slow_reads(tmp_path):
    bomb = tmp_path / "bomb"
    bomb.write_bytes(build_image([Entry("zeros", b"\x00" * (4 << 20))], "zstd"))
    assert bomb.stat().st_size < 10_000
    image = ir.read_image(bomb, limits=ir.Limits(max_uncompressed=1 << 20))
    assert "MiB uncompressed" in image.problem
    slow = ir.read_image(bomb, limits=ir.Limits(time_s=0.0))
    assert "longer than" in slow.problem
    many = tmp_path / "many"
    many.write_bytes(build_image([Entry(f"f{i}") for i in range(50)], "gzip"))
    assert "more than 10 entries" in ir.read_image(many, limits=ir.Limits(max_members=10)).problem


def test_garbage_name_size(tmp_path):
    raw = bytearray(cpio_newc([Entry("x", b"1")]))
    raw[6 + 11 * 8:6 + 12 * 8] = b"%08X" % 999_999
    path = tmp_path / "img"
    path.write_bytes(bytes(raw))
    assert "name size" in ir.read_image(path).problem


# -- module helpers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".ko", ".ko.zst", ".ko.xz", ".ko.gz"])
def test_fingerprint_of_each_module_compression(suffix):
    ko = fake_module(version="6.10.5", srcversion="AAAABBBBCCCCDDDDEEEEFFF")
    fp = ir.fingerprint(f"amdgpu{suffix}", module_file(ko, suffix))
    assert fp.modinfo == {"vermagic": fake_module.__defaults__[1], "srcversion": "AAAABBBBCCCCDDDDEEEEFFF",
                          "version": "6.10.5", "name": "amdgpu"}
    same = ir.fingerprint("amdgpu.ko", ko)
    assert fp.same_module(same) is True
    other = ir.fingerprint("amdgpu.ko", fake_module(srcversion="0000000000000000000000A"))
    assert fp.same_module(other) is False


def test_modinfo_split_across_chunks():
    ko = fake_module(srcversion="SPLITSPLITSPLITSPLIT123")
    at = ko.index(b"srcversion=") + 5
    chunks = [ko[:at], ko[at:]]
    assert ir.parse_modinfo(chunks)["srcversion"] == "SPLITSPLITSPLITSPLIT123"


def test_corrupt_module_compares_by_bytes_only():
    fp = ir.fingerprint("amdgpu.ko.zst", b"\x28\xb5\x2f\xfd garbage")
    assert fp.modinfo == {}
    assert fp.same_module(ir.fingerprint("amdgpu.ko.zst", b"other")) is None


def test_module_name_of():
    assert ir.module_name_of("a/b/amdgpu.ko.zst") == "amdgpu"
    assert ir.module_name_of("amd-gpu.ko") == "amd_gpu"
    assert ir.module_name_of("amdgpu.bin") is None
