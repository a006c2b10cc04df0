"""Read Linux initramfs images without lsinitramfs/lsinitrd/lsinitcpio.

An image is a sequence of segments, each a cpio "newc" (``070701``) or "crc" (``070702``)
archive, either plain or compressed: typically an uncompressed early-microcode archive
(``kernel/x86/microcode/AuthenticAMD.bin``) padded with NUL bytes, then the main archive
compressed with gzip, xz, lzma, zstd, lz4 (frame or the kernel's legacy format), or bzip2.
Compression is detected from magic bytes, like the kernel does.

The reader streams: members are listed while decompressing in bounded chunks, and a member's
bytes are only hashed (or kept, up to a limit) when the caller asks for it. Time, total
decompressed size and member count are bounded, and a truncated or garbage image gives a
partial listing plus a reason instead of an exception.
"""

from __future__ import annotations

import bz2
import hashlib
import logging
import lzma
import os
import stat
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import BinaryIO, Protocol

from rocmdesk.host import open_regular

log = logging.getLogger(__name__)

CHUNK = 1 << 16
NEWC_MAGIC = b"070701"
CRC_MAGIC = b"070702"
HEADER_LEN = 110
TRAILER = "TRAILER!!!"
MAX_NAME = 4096

# Magic bytes -> compression name. Order matters only for prefixes (none overlap here).
COMPRESSION_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip"),
    (b"\x1f\x9e", "gzip"),  # old gzip magic, accepted by the kernel's gunzip
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"\x04\x22\x4d\x18", "lz4-frame"),
    (b"\x02\x21\x4c\x18", "lz4-legacy"),
    (b"BZh", "bzip2"),
    (b"\x5d\x00\x00", "lzma"),
    (b"\x89LZO", "lzo"),
)
UNSUPPORTED = {"lzo": "LZO-compressed images are not supported"}


class InitramfsError(Exception):
    """The image cannot be read at all (missing, unreadable, not an initramfs)."""


@dataclass(frozen=True, slots=True)
class Member:
    """One cpio entry. ``name`` is normalized: no leading ``./`` or ``/``."""

    name: str
    size: int
    mode: int
    mtime: int
    segment: int  # index into InitramfsImage.segments

    @property
    def is_file(self) -> bool:
        return stat.S_ISREG(self.mode)

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.mode)

    @property
    def is_symlink(self) -> bool:
        return stat.S_ISLNK(self.mode)


@dataclass(slots=True)
class Segment:
    offset: int  # byte offset of the segment in the image file
    compression: str  # "none", "gzip", "zstd", ...
    members: int = 0
    complete: bool = False  # reached the TRAILER!!! entry


@dataclass(slots=True)
class MemberData:
    """What was captured of a member the caller asked for."""

    size: int
    sha256: str
    data: bytes | None = None  # kept only when the member fits in the capture limit
    link_target: str | None = None


@dataclass(slots=True)
class InitramfsImage:
    path: str
    size: int
    mtime: float
    segments: list[Segment] = field(default_factory=list)
    members: list[Member] = field(default_factory=list)
    captured: dict[str, MemberData] = field(default_factory=dict)
    problem: str | None = None  # why the listing may be incomplete (truncated, garbage, time-out)

    @property
    def complete(self) -> bool:
        return self.problem is None

    @property
    def compressions(self) -> list[str]:
        return [s.compression for s in self.segments]

    def names(self) -> set[str]:
        return {m.name for m in self.members}

    def find(self, predicate: Callable[[Member], bool]) -> list[Member]:
        return [m for m in self.members if predicate(m)]

    def member(self, name: str) -> Member | None:
        name = normalize_name(name)
        for m in reversed(self.members):  # later segments override earlier ones at unpack time
            if m.name == name:
                return m
        return None


@dataclass(frozen=True, slots=True)
class Limits:
    time_s: float = 10.0
    max_uncompressed: int = 4 << 30  # per image, summed over segments
    max_members: int = 500_000
    capture_bytes: int = 1 << 20  # members asked for are kept in memory up to this size


def normalize_name(name: str) -> str:
    while name.startswith("./"):
        name = name[2:]
    return name.lstrip("/")


def detect_compression(head: bytes) -> str | None:
    """Name of the segment format starting with ``head``, or None for garbage."""
    if head.startswith((NEWC_MAGIC, CRC_MAGIC)):
        return "none"
    for magic, name in COMPRESSION_MAGIC:
        if head.startswith(magic):
            return name
    return None


# -- decompressing readers ----------------------------------------------------------------------


class _Reader(Protocol):
    def read(self, n: int) -> bytes: ...


class _Decompressor(Protocol):
    """What lzma/bz2/zlib-adapter decompressor objects share (``decompress(data, max_length)``)."""

    @property
    def eof(self) -> bool: ...
    @property
    def needs_input(self) -> bool: ...
    def decompress(self, data: bytes, max_length: int, /) -> bytes: ...


class _Budget:
    """Shared limits of one scan: a deadline and a cap on decompressed bytes."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.deadline = time.monotonic() + limits.time_s
        self.produced = 0

    def charge(self, n: int) -> None:
        self.produced += n
        if self.produced > self.limits.max_uncompressed:
            raise _Stop(f"more than {self.limits.max_uncompressed >> 20} MiB uncompressed; gave up")
        if time.monotonic() > self.deadline:
            raise _Stop(f"reading took longer than {self.limits.time_s:g} s; gave up")


class _Stop(Exception):
    """Stop scanning with a reason (limits, truncation, garbage)."""


class _PlainReader:
    def __init__(self, fh: BinaryIO, budget: _Budget) -> None:
        self.fh = fh
        self.budget = budget

    def read(self, n: int) -> bytes:
        data = self.fh.read(n)
        self.budget.charge(len(data))
        return data


class _StreamReader:
    """Bounded-output reader over a decompressor with ``decompress(data, max_length)``.

    Works for lzma, bz2 and lz4.frame decompressors (needs_input/eof semantics) and for zlib
    through a small adapter. Never produces more than ``n`` bytes per call, so a decompression
    bomb cannot blow up memory.
    """

    def __init__(self, fh: BinaryIO, decompressor: _Decompressor, budget: _Budget) -> None:
        self.fh = fh
        self.d = decompressor
        self.budget = budget
        self.done = False

    def read(self, n: int) -> bytes:
        while not self.done:
            if self.d.eof:
                self.done = True
                break
            data = b""
            if self.d.needs_input:
                data = self.fh.read(CHUNK)
                if not data:
                    raise _Stop("the image is truncated (compressed stream ends early)")
            try:
                out = self.d.decompress(data, n)
            except (OSError, EOFError, ValueError, RuntimeError, lzma.LZMAError, zlib.error) as exc:
                raise _Stop(f"corrupt compressed data ({exc})") from exc
            if out:
                self.budget.charge(len(out))
                return out
        return b""


class _ZlibAdapter:
    """zlib's decompressobj with the needs_input/eof interface of lzma/bz2."""

    def __init__(self) -> None:
        self.z = zlib.decompressobj(wbits=47)  # 32 + 15: gzip or zlib header, auto-detected
        self.tail = b""

    @property
    def eof(self) -> bool:
        return self.z.eof

    @property
    def needs_input(self) -> bool:
        return not self.tail

    def decompress(self, data: bytes, max_length: int) -> bytes:
        out = self.z.decompress(self.tail + data, max_length)
        self.tail = self.z.unconsumed_tail
        return out


class _ZstdReader:
    def __init__(self, fh: BinaryIO, budget: _Budget) -> None:
        import zstandard

        self._error = zstandard.ZstdError
        self.reader = zstandard.ZstdDecompressor().stream_reader(fh, read_size=CHUNK, read_across_frames=False,
                                                                 closefd=False)
        self.budget = budget
        self.fh = fh

    def read(self, n: int) -> bytes:
        try:
            out = self.reader.read(n)
        except self._error as exc:
            raise _Stop(f"corrupt compressed data ({exc})") from exc
        self.budget.charge(len(out))
        return out


class _Lz4LegacyReader:
    """The kernel's legacy lz4 format (``lz4 -l``): magic, then blocks of <=8 MiB output,
    each preceded by its compressed size (little-endian u32); ends at EOF or a new magic."""

    MAGIC = 0x184C2102
    BLOCK = 8 << 20

    def __init__(self, fh: BinaryIO, budget: _Budget) -> None:
        import lz4.block

        self._decompress = lz4.block.decompress
        self.fh = fh
        self.budget = budget
        self.fh.read(4)  # magic
        self.buf = b""
        self.pos = 0
        self.done = False

    def read(self, n: int) -> bytes:
        while self.pos >= len(self.buf):
            if self.done:
                return b""
            size_bytes = self.fh.read(4)
            if len(size_bytes) < 4:
                self.done = True
                return b""
            size = int.from_bytes(size_bytes, "little")
            if size == self.MAGIC:
                continue  # concatenated legacy streams
            if size == 0 or size > self.BLOCK + (self.BLOCK >> 7) + 64:
                self.done = True  # not a block header: padding or the end of the stream
                return b""
            block = self.fh.read(size)
            if len(block) < size:
                raise _Stop("the image is truncated (lz4 block ends early)")
            try:
                self.buf = self._decompress(block, uncompressed_size=self.BLOCK)
            except Exception as exc:  # lz4.block.LZ4BlockError is not exported consistently
                raise _Stop(f"corrupt compressed data ({exc})") from exc
            self.pos = 0
            self.budget.charge(len(self.buf))
        out = self.buf[self.pos:self.pos + n]
        self.pos += len(out)
        return out


def _open_segment_reader(fh: BinaryIO, compression: str, budget: _Budget) -> _Reader:
    if compression == "none":
        return _PlainReader(fh, budget)
    if compression == "gzip":
        return _StreamReader(fh, _ZlibAdapter(), budget)
    if compression == "xz":
        return _StreamReader(fh, lzma.LZMADecompressor(format=lzma.FORMAT_XZ), budget)
    if compression == "lzma":
        return _StreamReader(fh, lzma.LZMADecompressor(format=lzma.FORMAT_ALONE), budget)
    if compression == "bzip2":
        return _StreamReader(fh, bz2.BZ2Decompressor(), budget)
    if compression == "zstd":
        return _ZstdReader(fh, budget)
    if compression == "lz4-frame":
        import lz4.frame

        return _StreamReader(fh, lz4.frame.LZ4FrameDecompressor(), budget)
    if compression == "lz4-legacy":
        return _Lz4LegacyReader(fh, budget)
    raise _Stop(UNSUPPORTED.get(compression, f"unsupported compression {compression}"))


class _Cursor:
    """Exact reads and skips over a reader, tracking the offset for cpio's 4-byte alignment."""

    def __init__(self, reader: _Reader) -> None:
        self.reader = reader
        self.offset = 0
        self.pending = b""

    def read_exact(self, n: int, what: str) -> bytes:
        parts = [self.pending[:n]]
        got = len(parts[0])
        self.pending = self.pending[n:]
        while got < n:
            chunk = self.reader.read(max(CHUNK, n - got))
            if not chunk:
                raise _Stop(f"the image is truncated (in {what})")
            take = chunk[:n - got]
            parts.append(take)
            got += len(take)
            self.pending = chunk[len(take):]
        self.offset += n
        return b"".join(parts)

    def iter_exact(self, n: int, what: str) -> Iterable[bytes]:
        """Yield ``n`` bytes in chunks (member data) without holding them all."""
        left = n
        while left > 0:
            if self.pending:
                chunk, self.pending = self.pending[:left], self.pending[left:]
            else:
                chunk = self.reader.read(min(CHUNK * 4, left))
                if not chunk:
                    raise _Stop(f"the image is truncated (in {what})")
                if len(chunk) > left:
                    chunk, self.pending = chunk[:left], chunk[left:]
            left -= len(chunk)
            self.offset += len(chunk)
            yield chunk

    def align4(self, what: str) -> None:
        pad = (-self.offset) % 4
        if pad:
            self.read_exact(pad, what)


# -- cpio parsing -------------------------------------------------------------------------------


def _parse_header(raw: bytes) -> dict[str, int]:
    if raw[:6] not in (NEWC_MAGIC, CRC_MAGIC):
        raise _Stop(f"garbage where a cpio header was expected ({raw[:6]!r})")
    fields = ("ino", "mode", "uid", "gid", "nlink", "mtime", "filesize", "devmajor", "devminor",
              "rdevmajor", "rdevminor", "namesize", "check")
    out = {}
    for i, name in enumerate(fields):
        text = raw[6 + 8 * i:14 + 8 * i]
        try:
            out[name] = int(text, 16)
        except ValueError as exc:
            raise _Stop(f"garbage in a cpio header field {name} ({text!r})") from exc
    return out


def _scan_cpio(cursor: _Cursor, segment: Segment, index: int, image: InitramfsImage,
               want: Callable[[str], bool | int], limits: Limits) -> None:
    while True:
        header = _parse_header(cursor.read_exact(HEADER_LEN, "a cpio header"))
        namesize = header["namesize"]
        if namesize == 0 or namesize > MAX_NAME:
            raise _Stop(f"garbage cpio entry (name size {namesize})")
        raw_name = cursor.read_exact(namesize, "a cpio file name")
        cursor.align4("cpio name padding")
        name = raw_name.rstrip(b"\x00").decode("utf-8", errors="surrogateescape")
        size = header["filesize"]
        if name == TRAILER:
            segment.complete = True
            return
        member = Member(normalize_name(name), size, header["mode"], header["mtime"], index)
        wanted = want(member.name) if member.name else 0
        if wanted:
            digest = hashlib.sha256()
            keep = size <= (limits.capture_bytes if wanted is True else int(wanted))
            parts: list[bytes] = []
            for chunk in cursor.iter_exact(size, member.name):
                digest.update(chunk)
                if keep:
                    parts.append(chunk)
            data = b"".join(parts) if keep else None
            link = data.decode("utf-8", "surrogateescape") if member.is_symlink and data is not None else None
            image.captured[member.name] = MemberData(size, digest.hexdigest(), data, link)
        else:
            for _ in cursor.iter_exact(size, member.name):
                pass
        cursor.align4("cpio data padding")
        if member.name:
            image.members.append(member)
            segment.members += 1
            if len(image.members) > limits.max_members:
                raise _Stop(f"more than {limits.max_members} entries; gave up")


def _skip_nul_padding(fh: BinaryIO) -> bytes:
    """Skip NUL padding between segments; returns the next bytes (up to 8) or b"" at EOF."""
    while True:
        block = fh.read(CHUNK)
        if not block:
            return b""
        stripped = block.lstrip(b"\x00")
        if stripped:
            fh.seek(-len(stripped), os.SEEK_CUR)
            return fh.read(8)
    # unreachable


def read_image(path: str | os.PathLike[str], want: Callable[[str], bool | int] | None = None,
               limits: Limits | None = None) -> InitramfsImage:
    """List an image's members; hash the members ``want(name)`` selects and keep their bytes.

    ``want`` returns False/0 (skip), True (keep up to ``limits.capture_bytes``) or a byte limit.

    Raises InitramfsError only when the file cannot be opened or does not start like an
    initramfs; anything later (truncation, garbage, limits) leaves ``image.problem`` set.
    """
    limits = limits or Limits()
    want = want or (lambda _name: False)
    path = os.fspath(path)
    try:
        fh = open_regular(path)  # a FIFO in place of the image must not block the diagnosis
    except OSError as exc:
        raise InitramfsError(_os_reason(exc)) from exc
    with fh:
        try:
            st = os.fstat(fh.fileno())
            head = fh.read(8)
        except OSError as exc:
            raise InitramfsError(_os_reason(exc)) from exc
        if not head:
            raise InitramfsError("the image is empty")
        first = detect_compression(head)
        if first is None:
            raise InitramfsError(f"not an initramfs image (starts with {head[:6].hex(' ')})")
        image = InitramfsImage(path, st.st_size, st.st_mtime)
        budget = _Budget(limits)
        fh.seek(0)
        offset = 0
        try:
            while True:
                compression = detect_compression(head)
                if compression is None:
                    raise _Stop(f"garbage after segment {len(image.segments)} at byte {offset}")
                segment = Segment(offset, compression)
                image.segments.append(segment)
                fh.seek(offset)
                reader = _open_segment_reader(fh, compression, budget)
                cursor = _Cursor(reader)
                _scan_cpio(cursor, segment, len(image.segments) - 1, image, want, limits)
                if compression != "none":
                    break  # the kernel treats everything after a compressed archive as more of it
                # Uncompressed: continue after this archive (plus its NUL padding).
                offset += cursor.offset
                fh.seek(offset)
                head = _skip_nul_padding(fh)
                if not head:
                    break
                offset = fh.tell() - len(head)
        except _Stop as stop:
            image.problem = str(stop)
        except OSError as exc:
            image.problem = f"read error: {_os_reason(exc)}"
        except MemoryError:
            image.problem = "out of memory while reading"
    if image.problem is None and all(m.name in (".", "kernel") or m.name.startswith("kernel/") for m in image.members):
        image.problem = "the image holds only an early-microcode archive: its main archive is missing (truncated?)"
    return image


def _os_reason(exc: OSError) -> str:
    import errno

    if exc.errno in (errno.EACCES, errno.EPERM):
        return "unreadable (permission denied)"
    if exc.errno == errno.ENOENT:
        return "no such file"
    if exc.errno == errno.EISDIR:
        return "a directory where a file was expected"
    return str(exc.strerror or exc)


# -- kernel modules ---------------------------------------------------------------------------

MODULE_SUFFIXES = (".ko", ".ko.zst", ".ko.xz", ".ko.gz")


def module_name_of(path: str) -> str | None:
    """``amdgpu`` for ``.../amdgpu.ko.zst``; None when the path is not a kernel module."""
    base = path.rsplit("/", 1)[-1]
    for suffix in MODULE_SUFFIXES:
        if base.endswith(suffix):
            return base[: -len(suffix)].replace("-", "_")
    return None


MODINFO_KEYS = (b"vermagic", b"srcversion", b"version", b"name")
MODULE_MAX_UNCOMPRESSED = 512 << 20


def _module_chunks(name: str, data: bytes) -> Iterable[bytes]:
    """The uncompressed ``.ko`` bytes of a (possibly .zst/.xz/.gz) module file, in chunks."""
    import io

    if not name.endswith((".zst", ".xz", ".gz")):
        yield data
        return
    budget = _Budget(Limits(time_s=30.0, max_uncompressed=MODULE_MAX_UNCOMPRESSED))
    fh = io.BytesIO(data)
    if name.endswith(".zst"):
        reader: _Reader = _ZstdReader(fh, budget)
    elif name.endswith(".xz"):
        reader = _StreamReader(fh, lzma.LZMADecompressor(), budget)
    else:
        reader = _StreamReader(fh, _ZlibAdapter(), budget)
    while True:
        chunk = reader.read(CHUNK * 4)
        if not chunk:
            return
        yield chunk


def parse_modinfo(chunks: Iterable[bytes]) -> dict[str, str]:
    """``vermagic``/``srcversion``/``version``/``name`` of a module's .modinfo section.

    The section is a run of NUL-terminated ``key=value`` strings; finding them by their
    NUL-prefixed key is enough (no ELF parsing, any architecture) and works on a stream with a
    small carry-over, so a 30 MB module is never held whole.
    """
    out: dict[str, str] = {}
    carry = b""
    for chunk in chunks:
        window = carry + chunk
        for key in MODINFO_KEYS:
            k = key.decode()
            if k in out:
                continue
            marker = b"\x00" + key + b"="
            at = window.find(marker)
            if at < 0:
                continue
            start = at + len(marker)
            end = window.find(b"\x00", start, start + 512)
            if end < 0:
                continue  # value continues in the next chunk: found again via the carry-over
            out[k] = window[start:end].decode("utf-8", errors="replace")
        if len(out) == len(MODINFO_KEYS):
            break
        carry = window[-600:]
    return out


@dataclass(frozen=True, slots=True)
class ModuleFingerprint:
    path: str
    size: int
    sha256: str
    modinfo: dict[str, str]

    def same_module(self, other: ModuleFingerprint) -> bool | None:
        """True/False when it can be told, None when neither bytes nor modinfo decide."""
        if self.sha256 == other.sha256:
            return True
        a, b = self.modinfo, other.modinfo
        if a.get("srcversion") and b.get("srcversion"):
            return a["srcversion"] == b["srcversion"] and a.get("vermagic") == b.get("vermagic")
        return None


def fingerprint(path: str, data: bytes) -> ModuleFingerprint:
    """Hash plus modinfo of a module file's bytes (modinfo empty when it cannot be decoded)."""
    try:
        modinfo = parse_modinfo(_module_chunks(path, data))
    except Exception as exc:  # corrupt compressed module (_Stop too): compare by bytes only
        log.debug("cannot decode module %s: %s", path, exc)
        modinfo = {}
    return ModuleFingerprint(path, len(data), hashlib.sha256(data).hexdigest(), modinfo)


# What a module member's bytes are captured up to (the amdgpu copies are hashed and fingerprinted).
MODULE_CAPTURE = 64 << 20
