"""The host's initramfs as the kernel will boot it: which generator builds it (initramfs-tools, dracut,
mkinitcpio), which image belongs to the running kernel, and which amdgpu copies it holds compared with the
module the running kernel would load. Images are read by :mod:`rocmdesk.diagnosis.initramfs_image`; a support
snapshot's listing by :mod:`rocmdesk.diagnosis.initramfs_listing`.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from rocmdesk.diagnosis.distro import REGENERATE_COMMANDS
from rocmdesk.diagnosis.initramfs_image import (
    MODULE_CAPTURE,
    MODULE_SUFFIXES,
    InitramfsError,
    InitramfsImage,
    Limits,
    Member,
    ModuleFingerprint,
    fingerprint,
    module_name_of,
    read_image,
)
from rocmdesk.diagnosis.initramfs_listing import ListingError, module_info, read_listing, recorded_module
from rocmdesk.host import HostReadError, HostRoot, open_regular

log = logging.getLogger(__name__)

# -- the host: which generator, which image, which module the kernel would load ------------------

GENERATOR_COMMANDS = REGENERATE_COMMANDS  # one table for every step that rebuilds an image (distro.py)
_MODPROBE_PREFIXES = ("etc/modprobe.d/", "usr/lib/modprobe.d/", "lib/modprobe.d/")
_MODULE_PATH_RE = re.compile(r"^(?:usr/)?lib/modules/([^/]+)/(.+)$")
_PRESET_VAR_RE = re.compile(r"""^\s*(\w+)=(?:"([^"]*)"|'([^']*)'|(\S*))""")


@dataclass(slots=True)
class ImageModule:
    """An amdgpu module found in the image."""

    member: Member
    kver: str | None  # the lib/modules/<kver> folder it sits in
    rel: str  # path below lib/modules/<kver>/ ("kernel/drivers/.../amdgpu.ko.zst")
    fingerprint: ModuleFingerprint | None  # None when its bytes were not captured


@dataclass(slots=True)
class LiveModule:
    """The amdgpu module the running kernel would load (``modinfo -F filename amdgpu``)."""

    rel: str  # below lib/modules/<kver>/
    path: str  # host path
    how: str  # "modules.dep" or "search order"
    fingerprint: ModuleFingerprint | None = None
    problem: str | None = None

    @property
    def is_dkms(self) -> bool:
        return self.rel.startswith("updates/")


@dataclass(slots=True)
class HostInitramfs:
    kver: str | None
    generator: str | None = None
    generator_evidence: list[str] = field(default_factory=list)
    image_path: str | None = None  # host path
    tried: list[str] = field(default_factory=list)  # image paths looked at
    image: InitramfsImage | None = None
    problem: str | None = None  # why the image could not be read (skip reason)
    builtin: bool = False  # amdgpu built into the kernel
    live: LiveModule | None = None
    modules: list[ImageModule] = field(default_factory=list)  # amdgpu copies in the image (this kver)

    @property
    def regenerate_command(self) -> str | None:
        if self.generator is None or self.kver is None:
            return None
        return GENERATOR_COMMANDS[self.generator].format(kver=self.kver)


def _module_rel(name: str) -> tuple[str | None, str]:
    match = _MODULE_PATH_RE.match(name)
    if match:
        return match.group(1), match.group(2)
    return None, name


def strip_compression(rel: str) -> str:
    for suffix in (".zst", ".xz", ".gz"):
        if rel.endswith(suffix):
            return rel[: -len(suffix)]
    return rel


def _want(name: str) -> bool | int:
    if module_name_of(name) == "amdgpu":
        return MODULE_CAPTURE
    return name.startswith(_MODPROBE_PREFIXES)


def detect_generators(root: HostRoot) -> list[tuple[str, list[str]]]:
    """Generators present on the host, each with the files that show it, most specific first."""
    found = []
    evidence = []
    if root.is_dir("/etc/initramfs-tools"):
        evidence = ["/etc/initramfs-tools/"]
        for tool in ("/usr/sbin/update-initramfs", "/sbin/update-initramfs"):
            if root.is_file(tool):
                evidence.append(tool)
                break
        status = _dpkg_installed(root, "initramfs-tools")
        if status:
            evidence.append(status)
        if len(evidence) > 1:
            found.append(("initramfs-tools", evidence))
    evidence = [p for p in ("/etc/dracut.conf", "/etc/dracut.conf.d/") if root.exists(p.rstrip("/"))]
    if evidence:
        found.append(("dracut", evidence))
    if root.is_file("/etc/mkinitcpio.conf"):
        found.append(("mkinitcpio", ["/etc/mkinitcpio.conf"]))
    return found


def generator_images(root: HostRoot, generator: str, kver: str) -> list[str]:
    """The image ``generator`` itself names for kernel ``kver`` (update-initramfs(8), dracut(8), mkinitcpio(8)
    presets), used to choose between several installed generators: initrd.img-<kver>, initramfs-<kver>.img, a preset's
    image."""
    if generator == "initramfs-tools":
        return [f"/boot/initrd.img-{kver}"]
    if generator == "dracut":
        return [f"/boot/initramfs-{kver}.img"]
    images = []
    for preset in root.glob("/etc/mkinitcpio.d", "*.preset"):
        image = parse_preset(_try_text(root, preset) or "").get("default_image") or ""
        if not re.fullmatch(r"/boot/[A-Za-z0-9._+-]{1,200}", image):  # the helper accepts only these too
            image = f"/boot/initramfs-{preset.rsplit('/', 1)[-1][: -len('.preset')]}.img"
        images.append(image)
    return images


_GENERATOR_SETUP = {
    "initramfs-tools": ("/etc/initramfs-tools",),
    "dracut": ("/etc/dracut.conf", "/etc/dracut.conf.d"),
    "mkinitcpio": ("/etc/mkinitcpio.conf",),
}


def choose_generator(root: HostRoot, generators: list[tuple[str, list[str]]], kver: str
                     ) -> tuple[str, list[str]] | None:
    """The generator that builds this machine's image, or None when that cannot be told.

    The same rule as the root helper's detect_generator (helper/rocmdesk-helper), so the one-click
    fix is offered exactly when the helper will run it: one generator installed -> that one. Several (Ubuntu
    with initramfs-tools plus dracut-core) -> keep those whose configuration exists AND whose image for
    the running kernel exists in /boot (initramfs-tools: initrd.img-<kver>; dracut: initramfs-<kver>.img;
    mkinitcpio: a preset's image); exactly one left -> that one; otherwise None (no guessing).
    """
    if len(generators) == 1:
        return generators[0]
    def has_image(name: str) -> bool:
        return any(root.exists(p) or _listing_of(root, p) is not None for p in generator_images(root, name, kver))

    confirmed = [g for g in generators
                 if any(root.exists(p) for p in _GENERATOR_SETUP.get(g[0], ())) and has_image(g[0])]
    return confirmed[0] if len(confirmed) == 1 else None


def _dpkg_installed(root: HostRoot, package: str) -> str | None:
    try:
        text = root.read_text("/var/lib/dpkg/status", 64 << 20)
    except OSError:
        return None
    block = re.search(rf"^Package: {re.escape(package)}\n(?:.+\n)*?Status: (.+)$", text, re.M)
    if block and block.group(1).strip().endswith(" installed"):
        return f"/var/lib/dpkg/status: {package} installed"
    return None


def kernel_image_version(root: HostRoot, path: str) -> str | None:
    """Release string in an x86 bzImage header (``HdrS`` at 0x202, version pointer at 0x20E)."""
    try:
        with open_regular(root.real_path(path)) as fh:  # never a FIFO or a device
            head = fh.read(0x10000)
    except (OSError, HostReadError):
        return None
    if len(head) < 0x210 or head[0x202:0x206] != b"HdrS":
        return None
    pointer = int.from_bytes(head[0x20E:0x210], "little") + 0x200
    end = head.find(b"\x00", pointer, pointer + 256)
    if pointer >= len(head) or end < 0:
        return None
    text = head[pointer:end].decode("ascii", "replace")
    return text.split()[0] if text.strip() else None


def parse_preset(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        match = _PRESET_VAR_RE.match(line)
        if match:
            out[match.group(1)] = next(g for g in match.groups()[1:] if g is not None)
    return out


def image_candidates(root: HostRoot, generator: str, kver: str) -> tuple[list[str], str | None]:
    """Image paths to try for the running kernel, and a note when the choice is uncertain."""
    if generator == "initramfs-tools":
        return [f"/boot/initrd.img-{kver}"], None
    if generator == "dracut":  # Debian/Ubuntu's dracut keeps the initrd.img-<kver> name
        return [f"/boot/initramfs-{kver}.img", f"/boot/initrd.img-{kver}"], None
    # mkinitcpio: the preset of the kernel package that ships this release.
    pkgbase = None
    for moddir in (f"/usr/lib/modules/{kver}", f"/lib/modules/{kver}"):
        text = _try_text(root, f"{moddir}/pkgbase")
        if text and text.strip():
            pkgbase = text.strip()
            break
    presets = root.glob("/etc/mkinitcpio.d", "*.preset")
    chosen = None
    if pkgbase:
        chosen = f"/etc/mkinitcpio.d/{pkgbase}.preset"
        if not root.is_file(chosen):
            return [f"/boot/initramfs-{pkgbase}.img"], None
    else:
        for preset in presets:
            values = parse_preset(_try_text(root, preset) or "")
            if values.get("ALL_kver") and kernel_image_version(root, values["ALL_kver"]) == kver:
                chosen = preset
                break
        if chosen is None and len(presets) == 1:
            chosen = presets[0]
    if chosen is not None:
        values = parse_preset(_try_text(root, chosen) or "")
        image = values.get("default_image")
        if image:
            return [image], None
        name = chosen.rsplit("/", 1)[-1][: -len(".preset")]
        return [f"/boot/initramfs-{name}.img"], None
    images = [p for p in root.glob("/boot", "initramfs-linux*.img") if "-fallback" not in p]
    if len(images) == 1:
        return images, None
    return [], (f"cannot tell which of {', '.join(images)} belongs to kernel {kver}" if images
                else "no mkinitcpio preset or /boot/initramfs-linux*.img found")


def _try_text(root: HostRoot, path: str) -> str | None:
    try:
        return root.read_text(path)
    except OSError:
        return None


def live_amdgpu(root: HostRoot, kver: str) -> tuple[bool, LiveModule | None]:
    """(built in?, the module file the kernel would load) for the running kernel."""
    moddir = f"/lib/modules/{kver}"
    builtin = _try_text(root, f"{moddir}/modules.builtin") or ""
    if any(module_name_of(line.strip()) == "amdgpu" for line in builtin.splitlines()):
        return True, None
    live = None
    dep = _try_text_big(root, f"{moddir}/modules.dep")
    if dep:
        for line in dep.splitlines():
            path = line.split(":", 1)[0].strip()
            if module_name_of(path) == "amdgpu":
                live = LiveModule(path, f"{moddir}/{path}", "modules.dep")
                break
    if live is None:  # depmod's default search order: updates/ before the in-tree kernel/ folder
        for folder in ("updates/dkms", "updates", "extra", "kernel/drivers/gpu/drm/amd/amdgpu"):
            for suffix in MODULE_SUFFIXES:
                rel = f"{folder}/amdgpu{suffix}"
                if root.is_file(f"{moddir}/{rel}"):
                    live = LiveModule(rel, f"{moddir}/{rel}", "search order")
                    break
            if live:
                break
    if live is not None:
        live.fingerprint = _recorded_module(root, live.path)  # a support snapshot's record, if any
    if live is not None and live.fingerprint is None:
        try:
            data = root.read_bytes(live.path, MODULE_CAPTURE)
            live.fingerprint = fingerprint(live.path, data)
        except OSError as exc:
            live.problem = str(exc)
    return False, live


def _recorded_module(root: HostRoot, host_path: str) -> ModuleFingerprint | None:
    """A snapshot keeps large module files as a record, not the bytes (rocmdesk/diagnosis/initramfs_listing.py)."""
    if root.is_live:
        return None
    return recorded_module(root, host_path)


def _try_text_big(root: HostRoot, path: str) -> str | None:
    try:
        return root.read_text(path, 64 << 20)
    except OSError:
        return None


def inspect_host(root: HostRoot, kver: str | None, limits: Limits | None = None) -> HostInitramfs:
    """Everything the initramfs checks need, read once: generator, image, module copies."""
    info = HostInitramfs(kver)
    if not kver:
        info.problem = "the running kernel's release is unknown (/proc/sys/kernel/osrelease)"
        return info
    info.builtin, info.live = live_amdgpu(root, kver)
    generators = detect_generators(root)
    chosen = choose_generator(root, generators, kver) if generators else None
    # several generators and no single one confirmed: still read an image for the checks, but name no
    # generator, so no one-click fix is offered (the helper refuses to guess too)
    ambiguous = bool(generators) and chosen is None
    note = None
    candidates_by_generator: list[tuple[str | None, list[str]]] = [chosen] if chosen else list(generators)
    for generator, evidence in candidates_by_generator or [(None, [])]:
        if generator is None:
            candidates = [f"/boot/initrd.img-{kver}", f"/boot/initramfs-{kver}.img"]
        else:
            candidates, note = image_candidates(root, generator, kver)
        info.tried += [c for c in candidates if c not in info.tried]
        existing = [c for c in candidates if root.exists(c) or _listing_of(root, c) is not None]
        if existing:
            if not ambiguous:
                info.generator, info.generator_evidence = generator, evidence
            info.image_path = existing[0]
            break
    else:
        if chosen:
            info.generator, info.generator_evidence = chosen
        tried = ", ".join(info.tried)
        info.problem = note or (f"no initramfs image for kernel {kver} ({tried})" if tried
                                else f"no initramfs image for kernel {kver}")
        return info
    module_info: dict[str, dict[str, str]] = {}
    try:
        listing = None if root.exists(info.image_path) else _listing_of(root, info.image_path)
        if listing is not None:  # a support snapshot: the bundle holds a listing, not the image
            info.image, module_info = _read_listing(root, listing, info.image_path)
        else:
            info.image = read_image(root.real_path(info.image_path), want=_want, limits=limits)
    except InitramfsError as exc:
        info.problem = f"{info.image_path}: {exc}"
        return info
    except OSError as exc:
        info.problem = f"{info.image_path}: {exc}"
        return info
    for member in info.image.members:
        if not member.is_file or module_name_of(member.name) != "amdgpu":
            continue
        member_kver, rel = _module_rel(member.name)
        if member_kver not in (None, kver):
            continue
        captured = info.image.captured.get(member.name)
        fp = None
        if captured is not None:
            if captured.data is not None:
                fp = fingerprint(member.name, captured.data)
            else:
                fp = ModuleFingerprint(member.name, captured.size, captured.sha256,
                                       module_info.get(member.name, {}))
        info.modules.append(ImageModule(member, member_kver, rel, fp))
    return info


def _listing_of(root: HostRoot, image_host_path: str) -> str | None:
    """Host path of a snapshot's listing of ``image_host_path`` (rocmdesk/diagnosis/initramfs_listing.py)."""
    if root.is_live:
        return None
    path = f"/rocmdesk/initramfs/{image_host_path.rsplit('/', 1)[-1]}.list"
    return path if root.is_file(path) else None


def _read_listing(root: HostRoot, listing: str, image_host_path: str
                  ) -> tuple[InitramfsImage, dict[str, dict[str, str]]]:
    try:
        text = root.read_text(listing, 64 << 20)
        image = read_listing(text, image_host_path)
    except (OSError, ListingError) as exc:
        raise InitramfsError(f"its listing {listing}: {exc}") from exc
    return image, module_info(text)
