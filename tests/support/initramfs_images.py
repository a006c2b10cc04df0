"""Build real-format initramfs images (and the host files around them) for the tests.

Images are what the three generators produce: an uncompressed early-microcode cpio archive
(``kernel/x86/microcode/AuthenticAMD.bin``) padded with NULs, then the main cpio "newc" archive
compressed with gzip, zstd, xz, lz4 (legacy ``-l`` like the kernel, or frame), bzip2 or lzma.
Modules are small fake ELF files with a real ``.modinfo`` string table, so the reader's
vermagic/srcversion extraction is exercised. Everything stays in the kilobytes.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
from dataclasses import dataclass
from pathlib import Path

import lz4.block
import lz4.frame
import zstandard

KVER = "6.8.0-45-generic"
MTIME = 1_700_000_000
IN_TREE = "kernel/drivers/gpu/drm/amd/amdgpu"
DKMS = "updates/dkms"


@dataclass
class Entry:
    name: str
    data: bytes = b""
    mode: int = 0o100644
    mtime: int = MTIME

    @classmethod
    def dir(cls, name: str) -> Entry:
        return cls(name, b"", 0o040755)

    @classmethod
    def link(cls, name: str, target: str) -> Entry:
        return cls(name, target.encode(), 0o120777)


def cpio_newc(entries: list[Entry], crc: bool = False, prefix: str = "") -> bytes:
    """A cpio archive in "newc" (070701) or "crc" (070702) format, with the trailer."""
    out = bytearray()
    ino = 1000
    for entry in [*entries, Entry("TRAILER!!!", b"", 0)]:
        name = entry.name if entry.name == "TRAILER!!!" else prefix + entry.name
        raw_name = name.encode() + b"\x00"
        check = sum(entry.data) & 0xFFFFFFFF if crc else 0
        fields = [ino, entry.mode, 0, 0, 1, entry.mtime, len(entry.data), 0, 0, 0, 0, len(raw_name), check]
        out += (b"070702" if crc else b"070701") + b"".join(b"%08X" % f for f in fields)
        out += raw_name
        out += b"\x00" * ((-len(out)) % 4)
        out += entry.data
        out += b"\x00" * ((-len(out)) % 4)
        ino += 1
    return bytes(out)


def lz4_legacy(data: bytes) -> bytes:
    """The kernel's legacy lz4 format, as written by ``lz4 -l``."""
    out = bytearray(b"\x02\x21\x4c\x18")
    block = 8 << 20
    for i in range(0, len(data), block):
        chunk = lz4.block.compress(data[i:i + block], store_size=False)
        out += len(chunk).to_bytes(4, "little") + chunk
    return bytes(out)


def compress(data: bytes, kind: str) -> bytes:
    if kind == "none":
        return data
    if kind == "gzip":
        return gzip.compress(data, compresslevel=6, mtime=0)
    if kind == "zstd":
        return zstandard.ZstdCompressor(level=3).compress(data)
    if kind == "xz":
        return lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32)
    if kind == "lzma":
        return lzma.compress(data, format=lzma.FORMAT_ALONE)
    if kind == "lz4":
        return lz4_legacy(data)
    if kind == "lz4-frame":
        return lz4.frame.compress(data)
    if kind == "bzip2":
        return bz2.compress(data)
    raise ValueError(kind)


def microcode_archive(pad_to: int = 512) -> bytes:
    """The uncompressed early-microcode archive (AMD), NUL-padded like the generators do."""
    ucode = b"DMA\x00" + bytes(range(256)) * 2
    archive = cpio_newc([
        Entry.dir("kernel"), Entry.dir("kernel/x86"), Entry.dir("kernel/x86/microcode"),
        Entry("kernel/x86/microcode/AuthenticAMD.bin", ucode),
    ])
    return archive + b"\x00" * ((-len(archive)) % pad_to)


def fake_module(name: str = "amdgpu", vermagic: str = f"{KVER} SMP preempt mod_unload modversions ",
                srcversion: str = "0123456789ABCDEF0123456", version: str | None = None, filler: int = 2048) -> bytes:
    """A tiny ELF-looking module with a real .modinfo string table."""
    modinfo = ["license=GPL and additional rights", f"srcversion={srcversion}", f"name={name}",
               f"vermagic={vermagic}"]
    if version:
        modinfo.insert(0, f"version={version}")
    table = b"\x00" + b"\x00".join(s.encode() for s in modinfo) + b"\x00"
    body = bytes((i * 7 + len(name)) % 251 for i in range(filler))
    return b"\x7fELF\x02\x01\x01" + b"\x00" * 57 + body + table + body[:512]


def module_file(ko: bytes, suffix: str) -> bytes:
    """A module's bytes as stored on disk for a file name suffix (.ko, .ko.zst, .ko.xz, .ko.gz)."""
    if suffix == ".ko":
        return ko
    if suffix == ".ko.zst":
        return zstandard.ZstdCompressor(level=3).compress(ko)
    if suffix == ".ko.xz":
        return lzma.compress(ko, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32)
    if suffix == ".ko.gz":
        return gzip.compress(ko, mtime=0)
    raise ValueError(suffix)


def with_parents(entries: list[Entry]) -> list[Entry]:
    """Add the directory entries real archives have for every parent folder."""
    seen: set[str] = set()
    out: list[Entry] = []
    for entry in entries:
        parts = entry.name.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            folder = "/".join(parts[:i])
            if folder not in seen:
                seen.add(folder)
                out.append(Entry.dir(folder))
        if entry.mode & 0o170000 == 0o040000:
            if entry.name in seen:
                continue
            seen.add(entry.name)
        out.append(entry)
    return out


def main_entries(kver: str = KVER, *, module: bytes | None = None, module_rel: str = f"{IN_TREE}/amdgpu.ko.zst",
                 modprobe: dict[str, str] | None = None, usrmerge: bool = True,
                 extra: list[Entry] | None = None) -> list[Entry]:
    """The main archive of a typical image: init, busybox-ish bits, some modules, modprobe.d."""
    moddir = f"usr/lib/modules/{kver}" if usrmerge else f"lib/modules/{kver}"
    entries = [
        Entry("init", b"#!/bin/sh\nexec /sbin/init\n", 0o100755),
        Entry("usr/bin/busybox", b"\x7fELF busybox", 0o100755),
        Entry(f"{moddir}/kernel/drivers/nvme/host/nvme.ko.zst", module_file(fake_module("nvme"), ".ko.zst")),
        Entry(f"{moddir}/modules.dep", b"kernel/drivers/nvme/host/nvme.ko.zst:\n"),
    ]
    if usrmerge:
        entries += [Entry.link("lib", "usr/lib"), Entry.link("bin", "usr/bin")]
    if module is not None:
        entries.append(Entry(f"{moddir}/{module_rel}", module))
    for name, text in (modprobe or {}).items():
        entries.append(Entry(f"etc/modprobe.d/{name}", text.encode()))
    entries += extra or []
    return with_parents(entries)


def build_image(entries: list[Entry], compression: str = "zstd", microcode: bool = True, crc: bool = False,
                prefix: str = "") -> bytes:
    main = compress(cpio_newc(entries, crc=crc, prefix=prefix), compression)
    return (microcode_archive() if microcode else b"") + main


# -- whole host roots ---------------------------------------------------------------------------

GENERATORS = ("initramfs-tools", "dracut", "mkinitcpio")


def image_path_for(generator: str, kver: str = KVER, preset: str = "linux") -> str:
    if generator == "initramfs-tools":
        return f"boot/initrd.img-{kver}"
    if generator == "dracut":
        return f"boot/initramfs-{kver}.img"
    if generator == "mkinitcpio":
        return f"boot/initramfs-{preset}.img"
    raise ValueError(generator)


def write(root: Path, rel: str, data: bytes | str, mtime: int | None = None, mode: int | None = None) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    if mode is not None:
        path.chmod(mode)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def install_generator(root: Path, generator: str, kver: str = KVER, preset: str = "linux") -> None:
    """The files that identify a generator (and, for mkinitcpio, its preset and pkgbase)."""
    if generator == "initramfs-tools":
        write(root, "etc/initramfs-tools/initramfs.conf", "MODULES=most\nCOMPRESS=zstd\n")
        write(root, "etc/initramfs-tools/modules", "# List of modules that you want to include in your initramfs.\n")
        write(root, "usr/sbin/update-initramfs", "#!/bin/sh\n", mode=0o755)
    elif generator == "dracut":
        write(root, "etc/dracut.conf", "# dracut configuration\n")
        (root / "etc/dracut.conf.d").mkdir(parents=True, exist_ok=True)
        write(root, "usr/bin/dracut", "#!/bin/bash\n", mode=0o755)
    elif generator == "mkinitcpio":
        write(root, "etc/mkinitcpio.conf", "MODULES=()\nBINARIES=()\nFILES=()\n"
              "HOOKS=(base udev autodetect microcode modconf kms keyboard keymap consolefont block filesystems fsck)\n")
        write(root, f"etc/mkinitcpio.d/{preset}.preset",
              f"# mkinitcpio preset file for the '{preset}' package\n\n"
              f'ALL_kver="/boot/vmlinuz-{preset}"\n\nPRESETS=(\'default\' \'fallback\')\n\n'
              f'default_image="/boot/initramfs-{preset}.img"\n\n'
              f'fallback_image="/boot/initramfs-{preset}-fallback.img"\nfallback_options="-S autodetect"\n')
        write(root, f"usr/lib/modules/{kver}/pkgbase", f"{preset}\n")
    else:
        raise ValueError(generator)


def install_kernel(root: Path, kver: str = KVER, *, module: bytes | None = None, module_suffix: str = ".ko.zst",
                   dkms_module: bytes | None = None, builtin: bool = False, mtime: int = MTIME) -> dict[str, str]:
    """The running kernel's release and its amdgpu module(s) under usr/lib/modules (lib -> usr/lib)."""
    write(root, "proc/sys/kernel/osrelease", kver + "\n")
    if not (root / "lib").exists():
        (root / "usr/lib").mkdir(parents=True, exist_ok=True)
        (root / "lib").symlink_to("usr/lib")
    moddir = f"usr/lib/modules/{kver}"
    paths = {}
    dep_lines = []
    if module is not None:
        rel = f"{IN_TREE}/amdgpu{module_suffix}"
        write(root, f"{moddir}/{rel}", module_file(module, module_suffix), mtime=mtime)
        paths["in-tree"] = rel
    if dkms_module is not None:
        rel = f"{DKMS}/amdgpu{module_suffix}"
        write(root, f"{moddir}/{rel}", module_file(dkms_module, module_suffix), mtime=mtime)
        paths["dkms"] = rel
    chosen = paths.get("dkms") or paths.get("in-tree")
    if chosen:
        dep_lines.append(f"{chosen}: kernel/drivers/gpu/drm/drm_exec.ko.zst")
    write(root, f"{moddir}/modules.dep", "\n".join(dep_lines) + "\n")
    write(root, f"{moddir}/modules.builtin",
          f"{IN_TREE}/amdgpu.ko\n" if builtin else "kernel/drivers/char/mem.ko\n")
    return paths


def install_amd_gpu(root: Path, vendor: str = "0x1002", bdf: str = "0000:03:00.0", pci_class: str = "0x030000") -> None:
    """A minimal PCI device entry (vendor and class files) for checks that only ask "any AMD GPU?"."""
    write(root, f"sys/bus/pci/devices/{bdf}/vendor", vendor + "\n")
    write(root, f"sys/bus/pci/devices/{bdf}/class", pci_class + "\n")


def make_root(root: Path, generator: str = "initramfs-tools", *, kver: str = KVER, compression: str = "zstd",
              in_image: str | None = "in-tree", image_module: bytes | None = None, live_module: bytes | None = None,
              dkms_module: bytes | None = None, modprobe_live: dict[str, str] | None = None,
              modprobe_image: dict[str, str] | None = None, image_mtime: int = MTIME + 100,
              module_suffix: str = ".ko.zst", microcode: bool = True, gpu: bool = True) -> Path:
    """A host root with one generator, the running kernel, its modules and its initramfs image.

    ``in_image``: "in-tree" or "dkms" (which amdgpu copy the image holds) or None (no amdgpu).
    Returns the image's path.
    """
    live_module = live_module if live_module is not None else fake_module()
    install_generator(root, generator, kver)
    install_kernel(root, kver, module=live_module, module_suffix=module_suffix, dkms_module=dkms_module)
    if gpu:
        install_amd_gpu(root)
    for name, text in (modprobe_live or {}).items():
        write(root, f"etc/modprobe.d/{name}", text, mtime=MTIME)
    module = None
    rel = f"{IN_TREE}/amdgpu{module_suffix}"
    if in_image == "in-tree":
        module = module_file(image_module if image_module is not None else live_module, module_suffix)
    elif in_image == "dkms":
        rel = f"{DKMS}/amdgpu{module_suffix}"
        module = module_file(image_module if image_module is not None else (dkms_module or live_module), module_suffix)
    entries = main_entries(kver, module=module, module_rel=rel,
                           modprobe=modprobe_image if modprobe_image is not None else modprobe_live)
    return write(root, image_path_for(generator, kver), build_image(entries, compression, microcode),
                 mtime=image_mtime)


def install_matching_initramfs(root: Path, kver: str, generator: str = "initramfs-tools",
                               compression: str = "zstd") -> Path:
    """Give an existing root (e.g. scenarios.clean_workstation) the image its generator would build
    now: the amdgpu module the kernel would load (DKMS before in-tree), byte for byte, and copies of
    /etc/modprobe.d; the image is newer than every file it copies."""
    install_generator(root, generator, kver)
    moddir = root / "usr/lib/modules" / kver
    module_rel = None
    for folder in ("updates/dkms", IN_TREE):
        for suffix in (".ko.zst", ".ko.xz", ".ko"):
            if (moddir / folder / f"amdgpu{suffix}").is_file():
                module_rel = f"{folder}/amdgpu{suffix}"
                break
        if module_rel:
            break
    modprobe = {p.name: p.read_text() for p in sorted((root / "etc/modprobe.d").glob("*.conf"))}
    newest = max([p.stat().st_mtime for p in (root / "etc/modprobe.d").glob("*.conf")] + [MTIME])
    # initramfs-tools and dracut copy the firmware the included module names: the root's amdgpu files
    firmware = [Entry(str(p.relative_to(root)), p.read_bytes()) for p in sorted((root / "usr/lib/firmware/amdgpu")
                                                                                .glob("*")) if p.is_file()]
    entries = main_entries(kver, module=(moddir / module_rel).read_bytes() if module_rel else None,
                           module_rel=module_rel or "", modprobe=modprobe, extra=firmware)
    return write(root, image_path_for(generator, kver), build_image(entries, compression), mtime=int(newest) + 60)
