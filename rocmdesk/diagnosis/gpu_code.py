"""Which gfx targets an environment's ROCm libraries carry code for, read from their files (no torch import).

A ROCm PyTorch wheel runs only on GPUs whose target its kernels were built for; on any other it fails with
"HIP error: invalid device function", "hipErrorNoBinaryForGpu" or a rocBLAS "Cannot read TensileLibrary.dat ...
for GPU arch : gfx900" abort. Three places say which targets a wheel has, cheapest first:

- rocBLAS's Tensile library folder: one ``TensileLibrary_lazy_<gfx>.dat`` (and ``*_<gfx>.co`` / ``.hsaco``) per
  target. PyTorch's wheels bundle it as ``torch/lib/rocblas/library`` (the listing in pytorch/pytorch#179865); TheRock's
  ``rocm-sdk-libraries-<family>`` wheels as ``_rocm_sdk_libraries_<family>/lib/rocblas/library``, and hipBLASLt as
  ``.../lib/hipblaslt/library/<gfx>`` (ROCm/TheRock#1184: "rocm-sdk targets" gfx1100;gfx1101;gfx1102 on a gfx1103).
- The clang offload bundles in ``torch/lib/libtorch_hip.so``'s ``.hip_fatbin`` section: each bundle starts with
  ``__CLANG_OFFLOAD_BUNDLE__`` and names its entries ``hipv4-amdgcn-amd-amdhsa--gfx1100`` (LLVM
  clang/docs/ClangOffloadBundler.rst). Only the first MAX_FATBIN_BYTES are read, in chunks; compressed bundles
  (``CCOB`` magic) hide their entry names and are reported as such.

Everything is bounded: at most MAX_LISTING names per folder, MAX_FATBIN_BYTES per library.
"""

from __future__ import annotations

import logging
import re
import struct
from dataclasses import dataclass, field

from rocmdesk.host import HostReadError, HostRoot, open_regular

log = logging.getLogger(__name__)

MAX_LISTING = 20000
MAX_FATBIN_BYTES = 8 << 20
CHUNK = 1 << 20
_TARGET_RE = re.compile(r"(?<![0-9a-z])(gfx\d{1,2}[0-9a-f]{2})(?![0-9a-f])")
_BUNDLE_ID_RE = re.compile(rb"hipv4-amdgcn-amd-amdhsa-(?:-|unknown-)(gfx\d{1,2}[0-9a-f]{2})(?![0-9a-f])")
_COMPRESSED_MAGIC = b"CCOB"


@dataclass(slots=True)
class CodeSource:
    path: str  # host path of the folder or library read
    how: str  # "rocBLAS Tensile library", "hipBLASLt library", "offload bundles of libtorch_hip.so"
    targets: frozenset[str]


@dataclass(slots=True)
class CodeTargets:
    """The targets found and where; ``notes`` say what could not be read."""

    sources: list[CodeSource] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def rocblas(self) -> frozenset[str] | None:
        """Targets rocBLAS has kernels for (the library every torch matmul needs); None when no folder was found."""
        found = [s.targets for s in self.sources if s.how.startswith("rocBLAS")]
        return frozenset().union(*found) if found else None

    @property
    def kernels(self) -> frozenset[str] | None:
        """Targets torch's own HIP kernels were built for (the offload bundles); None when not readable."""
        found = [s.targets for s in self.sources if s.how.startswith("offload")]
        return frozenset().union(*found) if found else None


def targets_in_names(names) -> frozenset[str]:
    """gfx targets named by file or folder names ("TensileLibrary_lazy_gfx1100.dat", "gfx942")."""
    out: set[str] = set()
    for name in names:
        out.update(m.group(1) for m in _TARGET_RE.finditer(name))
    return frozenset(out)


def bundle_targets(data: bytes) -> tuple[frozenset[str], bool]:
    """(targets named by offload-bundle entry ids in ``data``, whether compressed bundles were seen)."""
    return frozenset(m.group(1).decode() for m in _BUNDLE_ID_RE.finditer(data)), _COMPRESSED_MAGIC in data


def fatbin_section(header: bytes, read_at) -> tuple[int, int] | None:
    """(offset, size) of the ``.hip_fatbin`` section of a 64-bit little-endian ELF, from its section headers;
    ``read_at(offset, size) -> bytes`` reads the file. None when it is no such ELF or has no such section."""
    if len(header) < 64 or header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", header, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", header, 0x3A)
    if shentsize < 64 or not 0 < shnum <= 4096 or shstrndx >= shnum:
        return None
    table = read_at(shoff, shentsize * shnum)
    if len(table) < shentsize * shnum:
        return None

    def section(i: int) -> tuple[int, int, int]:
        name, _type, _flags, _addr, offset, size = struct.unpack_from("<IIQQQQ", table, i * shentsize)
        return name, offset, size

    _n, str_off, str_size = section(shstrndx)
    names = read_at(str_off, min(str_size, 1 << 20))
    for i in range(shnum):
        name_at, offset, size = section(i)
        end = names.find(b"\0", name_at)
        if names[name_at:end if end >= 0 else None] == b".hip_fatbin":
            return offset, size
    return None


def _listing(root: HostRoot, folder: str) -> list[str]:
    names = root.listdir(folder)
    return names[:MAX_LISTING]


def _read_at(root: HostRoot, path: str):
    def read_at(offset: int, size: int) -> bytes:
        try:
            with open_regular(root.real_path(path)) as f:  # never a FIFO or a device
                f.seek(offset)
                return f.read(size)
        except (OSError, HostReadError):
            return b""
    return read_at


def library_targets(root: HostRoot, site_packages: str) -> CodeTargets:
    """What the ROCm libraries under one site-packages folder were built for."""
    out = CodeTargets()
    folders = [(f"{site_packages}/torch/lib/rocblas/library", "rocBLAS Tensile library"),
               (f"{site_packages}/torch/lib/hipblaslt/library", "hipBLASLt library")]
    for entry in root.listdir(site_packages)[:MAX_LISTING]:
        if entry.startswith("_rocm_sdk_libraries_"):
            base = f"{site_packages}/{entry}/lib"
            folders += [(f"{base}/rocblas/library", "rocBLAS Tensile library (TheRock)"),
                        (f"{base}/hipblaslt/library", "hipBLASLt library (TheRock)")]
    for folder, how in folders:
        if not root.is_dir(folder):
            continue
        names = _listing(root, folder)
        found = targets_in_names(names)
        if found:
            out.sources.append(CodeSource(folder, how, found))
        else:
            out.notes.append(f"{folder} names no gfx target")
    lib = f"{site_packages}/torch/lib/libtorch_hip.so"
    if root.is_file(lib):
        read_at = _read_at(root, lib)
        where = fatbin_section(read_at(0, 64), read_at)
        if where is None:
            out.notes.append(f"{lib} has no readable .hip_fatbin section")
        else:
            offset, size = where
            in_bundles: set[str] = set()
            compressed = False
            for start in range(0, min(size, MAX_FATBIN_BYTES), CHUNK):
                # overlap by 64 bytes so an entry id split between two chunks is still seen
                data = read_at(offset + max(start - 64, 0), min(CHUNK + 64, size - start))
                targets, packed = bundle_targets(data)
                in_bundles |= targets
                compressed = compressed or packed
            if in_bundles:
                out.sources.append(CodeSource(lib, "offload bundles of libtorch_hip.so", frozenset(in_bundles)))
            elif compressed:
                out.notes.append(f"{lib}: its offload bundles are compressed, so their targets are not read")
    return out
