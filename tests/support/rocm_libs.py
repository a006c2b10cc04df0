"""ROCm library files laid out as real wheels leave them: rocBLAS Tensile folders and libtorch_hip.so offload bundles.

- ``torch/lib/rocblas/library/TensileLibrary_lazy_<gfx>.dat`` plus per-target code objects, as the rocm7.2 wheel's
  listing in pytorch/pytorch#179865 shows; TheRock's ``_rocm_sdk_libraries_<family>/lib/rocblas/library``.
- ``libtorch_hip.so``: a 64-bit ELF whose ``.hip_fatbin`` section holds clang offload bundles
  (``__CLANG_OFFLOAD_BUNDLE__``, entry count, then offset/size/id-length/id per entry; LLVM
  clang/docs/ClangOffloadBundler.rst), or compressed ones (``CCOB`` header).
"""

from __future__ import annotations

import struct
from pathlib import Path


def tensile_folder(folder: Path, targets: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "TensileLibrary_fallback.dat").write_bytes(b"\x82\xa4")
    for gfx in targets:
        (folder / f"TensileLibrary_lazy_{gfx}.dat").write_bytes(b"\x82\xa4lazy")
        (folder / f"Kernels.so-000-{gfx}.hsaco").write_bytes(b"\x7fELF")
        (folder / f"TensileLibrary_Type_HH_Contraction_l_Ailk_Bljk_Cijk_Dijk_{gfx}.co").write_bytes(b"\x7fELF")
    return folder


def offload_bundle(targets: list[str]) -> bytes:
    ids = [b"host-x86_64-unknown-linux-gnu-"] + [f"hipv4-amdgcn-amd-amdhsa--{g}".encode() for g in targets]
    header = b"__CLANG_OFFLOAD_BUNDLE__" + struct.pack("<Q", len(ids))
    entries = b"".join(struct.pack("<QQQ", 0, 0, len(i)) + i for i in ids)
    return header + entries + b"\0" * 64


def compressed_bundle() -> bytes:
    return b"CCOB" + struct.pack("<HHIQQ", 2, 1, 4096, 8192, 0x1234) + b"\x28\xb5\x2f\xfd" + b"\x11" * 200


def elf_with_fatbin(path: Path, fatbin: bytes, padding: int = 0) -> Path:
    """A minimal ELF64 with sections null, .shstrtab, .hip_fatbin (``padding`` zero bytes before the bundles)."""
    shstrtab = b"\0.shstrtab\0.hip_fatbin\0"
    body = b"\0" * padding + fatbin
    str_off = 64
    fat_off = str_off + len(shstrtab)
    sh_off = fat_off + len(body)
    header = bytearray(64)
    header[:16] = b"\x7fELF\x02\x01\x01" + b"\0" * 9
    struct.pack_into("<HHI", header, 16, 3, 0x3E, 1)
    struct.pack_into("<Q", header, 0x28, sh_off)
    struct.pack_into("<HHHHHH", header, 0x34, 64, 0, 0, 64, 3, 1)

    def section(name: int, kind: int, offset: int, size: int) -> bytes:
        return struct.pack("<IIQQQQIIQQ", name, kind, 0, 0, offset, size, 0, 0, 1, 0)

    table = section(0, 0, 0, 0) + section(1, 3, str_off, len(shstrtab)) + section(11, 1, fat_off, len(body))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(header) + shstrtab + body + table)
    return path
