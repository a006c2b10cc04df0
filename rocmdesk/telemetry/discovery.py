"""Find every AMD GPU of a host root and say what it is, from sysfs alone (no tools, no root).

A GPU is a ``sys/class/drm/cardN`` entry (connectors such as ``card0-DP-1`` are skipped) whose
``device/vendor`` is 0x1002. Cards bound to ``radeon`` (or to nothing) are listed too, so the
UI and the diagnosis can say "not on amdgpu". The gfx target and KFD node come from
``sys/class/kfd/kfd/topology/nodes/*/properties``, matched by PCI domain and location
(bus << 8 | dev << 3 | fn), which is how the runtime itself pairs them.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass

from rocmdesk.host import HostReadError, HostRoot
from rocmdesk.telemetry import parsers, pciids
from rocmdesk.telemetry.model import GpuInfo, GpuKind

log = logging.getLogger(__name__)

DRM_CLASS = "sys/class/drm"
KFD_NODES = "sys/class/kfd/kfd/topology/nodes"
_CARD_RE = re.compile(r"card[0-9]+")

# LLVM targets that only exist as Instinct (CDNA) parts, and those that only exist as APUs
# (LLVM llvm/docs/AMDGPUUsage.rst processor table; ROCm/rocm-install-on-linux docs/reference/system-requirements.rst).
INSTINCT_TARGETS = frozenset({"gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950"})
APU_TARGETS = frozenset({"gfx801", "gfx902", "gfx909", "gfx90c", "gfx1033", "gfx1035", "gfx1036",
                         "gfx1037", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153"})


@dataclass(frozen=True, slots=True)
class KfdNode:
    node_id: int
    gfx_target_version: int
    render_minor: int | None
    unique_id: int | None


@dataclass(frozen=True, slots=True)
class DiscoveredGpu:
    """A GPU plus where its files are, so the sampler never resolves a path again."""

    info: GpuInfo
    card_path: str  # host path "/sys/class/drm/card1"
    device_path: str  # resolved host path of the PCI device folder
    device_real: str  # the same folder on the analyst's file system
    hwmon_real: str | None  # the amdgpu (or radeon) hwmon folder, analyst side


def discover_gpus(root: HostRoot) -> list[GpuInfo]:
    """Every AMD GPU of ``root``, in DRM card order."""
    return [gpu.info for gpu in discover(root)]


def list_cards(root: HostRoot) -> list[str]:
    """DRM card names ("card0", "card1"), connectors excluded, in numeric order."""
    names = [n for n in root.listdir(DRM_CLASS) if _CARD_RE.fullmatch(n)]
    return sorted(names, key=lambda n: int(n[4:]))


@dataclass(frozen=True, slots=True)
class CardIdentity:
    """What a DRM card name stands for now: its PCI device folder, by path, PCI address and inode.

    A card name alone says little on a rescan: a GPU whose device folder vanished and came back, or a
    different GPU given the same ``cardN``, keeps the name (issue 11, item 5). The folder's (st_dev,
    st_ino) changes when the kernel re-creates it (kernfs gives a new node a new inode), the path and
    the PCI address change with the GPU; ``card_inode`` changes when the driver re-binds (the
    ``drm/cardN`` folder is re-created inside the same device folder). ``inode`` is None while the
    device folder is missing.
    """

    device_path: str | None  # resolved host path of ``cardN/device``
    pci: str | None
    inode: tuple[int, int] | None
    card_inode: tuple[int, int] | None = None

    @property
    def present(self) -> bool:
        return self.inode is not None


def folder_inode(root: HostRoot, host_path: str) -> tuple[int, int] | None:
    """(st_dev, st_ino) of a folder, links resolved inside the root; None when it is missing."""
    try:
        st = os.stat(root.real_path(host_path))
    except (OSError, HostReadError):
        return None
    return st.st_dev, st.st_ino


def card_identity(root: HostRoot, card: str) -> CardIdentity:
    """The identity of ``card`` ("card1") under ``root``; never raises."""
    card_path = f"/{DRM_CLASS}/{card}"
    try:
        device_path = root.resolve_host_path(f"{card_path}/device")
    except HostReadError:  # a symlink loop: no device we could read
        return CardIdentity(None, None, None)
    # the last PCI address on the path: the device folder itself, or, while it is missing (the class link
    # then dangles into it: .../0000:04:00.0/drm/card1/device), the folder the link pointed into
    pci = next((p.lower() for p in reversed(device_path.split("/")) if parsers.PCI_ADDRESS_RE.fullmatch(p)), None)
    return CardIdentity(device_path, pci, folder_inode(root, device_path), folder_inode(root, card_path))


def card_identities(root: HostRoot) -> dict[str, CardIdentity]:
    """:func:`card_identity` of every card of :func:`list_cards`."""
    return {card: card_identity(root, card) for card in list_cards(root)}


def discover(root: HostRoot) -> list[DiscoveredGpu]:
    kfd = read_kfd_nodes(root)
    versions = _versions(root)
    found = []
    for card in list_cards(root):
        try:
            gpu = _discover_card(root, card, kfd, versions)
        except HostReadError as exc:  # symlink loop or similar: skip this card, keep the rest
            log.warning("skipping %s: %s", card, exc)
            continue
        if gpu is not None:
            found.append(gpu)
    return found


def read_kfd_nodes(root: HostRoot) -> dict[tuple[int, int], KfdNode]:
    """GPU nodes of the KFD topology by (domain, location_id); the lowest node id wins."""
    nodes: dict[tuple[int, int], KfdNode] = {}
    ids = sorted((n for n in root.listdir(KFD_NODES) if n.isdigit()), key=int)
    for node in ids:
        text = root.try_read_text(f"{KFD_NODES}/{node}/properties")
        if text is None:
            continue
        props = parsers.parse_kfd_properties(text)
        version = props.get("gfx_target_version", 0)
        if version <= 0 or "location_id" not in props:
            continue  # a CPU node
        key = (props.get("domain", 0), props["location_id"])
        nodes.setdefault(key, KfdNode(int(node), version, props.get("drm_render_minor"),
                                      props.get("unique_id")))
    return nodes


@dataclass(frozen=True, slots=True)
class _Versions:
    module: dict[str, str | None]
    kernel: str | None
    rocm: str | None


def _read_line(root: HostRoot, host_path: str) -> str | None:
    text = root.try_read_text(host_path)
    if text is None:
        return None
    try:
        return parsers.parse_line(text)
    except parsers.ValueProblem:
        return None


def _versions(root: HostRoot) -> _Versions:
    return _Versions(
        module={},
        kernel=_read_line(root, "proc/sys/kernel/osrelease"),
        rocm=_read_line(root, "opt/rocm/.info/version"),
    )


def driver_version(root: HostRoot, driver: str | None, versions: _Versions | None = None) -> str | None:
    """The module's own version (out-of-tree amdgpu-dkms has one), else the kernel release."""
    versions = versions or _versions(root)
    if driver:
        if driver not in versions.module:
            versions.module[driver] = _read_line(root, f"sys/module/{driver}/version")
        if versions.module[driver]:
            return versions.module[driver]
    return versions.kernel


def _discover_card(root: HostRoot, card: str, kfd: dict[tuple[int, int], KfdNode],
                   versions: _Versions) -> DiscoveredGpu | None:
    card_path = f"/{DRM_CLASS}/{card}"
    device_path = root.resolve_host_path(f"{card_path}/device")
    vendor_text = root.try_read_text(f"{device_path}/vendor")
    try:
        vendor = parsers.parse_hex_id(vendor_text) if vendor_text is not None else None
    except parsers.ValueProblem:
        vendor = None
    if vendor != pciids.AMD_VENDOR:
        return None
    uevent = parsers.parse_uevent(root.try_read_text(f"{device_path}/uevent") or "")

    pci = os.path.basename(device_path)
    if not parsers.PCI_ADDRESS_RE.fullmatch(pci):
        pci = uevent.get("PCI_SLOT_NAME", "")
    if not parsers.PCI_ADDRESS_RE.fullmatch(pci):
        log.warning("%s: cannot tell its PCI address; skipped", card)
        return None
    pci = pci.lower()

    driver = _driver(root, device_path, uevent)
    device_id, revision, subsystem = _ids(root, device_path, uevent)
    gfx_target = None
    kfd_node = None
    render = _render_node(root, device_path)
    location = parsers.pci_location_id(pci)
    node = kfd.get(location) if location and driver == "amdgpu" else None
    if node is not None:
        gfx_target = parsers.decode_gfx_target_version(node.gfx_target_version)
        kfd_node = node.node_id
        if render is None and node.render_minor:
            render = f"renderD{node.render_minor}"

    vram_total = None
    text = root.try_read_text(f"{device_path}/mem_info_vram_total")
    if text is not None:
        try:
            vram_total = parsers.parse_int(text)
        except parsers.ValueProblem:
            vram_total = None

    unique_id = _read_line(root, f"{device_path}/unique_id")
    info = GpuInfo(
        card=card,
        pci=pci,
        name=pciids.marketing_name(root, device_id, revision),
        device_id=device_id,
        revision_id=revision,
        subsystem=subsystem,
        gfx_target=gfx_target,
        kind=gpu_kind(device_id, gfx_target),
        driver=driver,
        vram_total_bytes=vram_total,
        vbios=_read_line(root, f"{device_path}/vbios_version"),
        driver_version=driver_version(root, driver, versions),
        rocm_version=versions.rocm,
        kfd_node=kfd_node,
        render_node=render,
        unique_id=unique_id,
    )
    device_real = root.real_path(device_path)
    return DiscoveredGpu(info, card_path, device_path, device_real, _hwmon_dir(root, device_path, driver))


def gpu_kind(device_id: int | None, gfx_target: str | None) -> GpuKind:
    """Instinct, APU or discrete, from signals that are documented rather than guessed.

    Instinct: a known Instinct PCI id, or a CDNA-only gfx target (gfx908/90a/94x/950).
    APU: a known APU PCI id, or an APU-only gfx target (gfx90c, gfx1035, gfx1103, ...).
    KFD's ``local_mem_size`` or ``cpu_cores_count`` are not used: both vary with firmware and
    kernel (an APU with a BIOS carve-out reports VRAM like a dGPU). Anything else with a PCI id
    is discrete; with no id at all we do not pretend to know.
    """
    if (device_id in pciids.INSTINCT_IDS) or (gfx_target in INSTINCT_TARGETS):
        return GpuKind.INSTINCT
    if (device_id in pciids.APU_IDS) or (gfx_target in APU_TARGETS):
        return GpuKind.APU
    if device_id is None and gfx_target is None:
        return GpuKind.UNKNOWN
    return GpuKind.DISCRETE


def _driver(root: HostRoot, device_path: str, uevent: dict[str, str]) -> str | None:
    link = root.readlink(f"{device_path}/driver")
    if link:
        return os.path.basename(link.rstrip("/")) or None
    return uevent.get("DRIVER") or None


def _ids(root: HostRoot, device_path: str, uevent: dict[str, str]) -> tuple[int | None, int | None, str | None]:
    def hex_file(name: str, bits: int = 16) -> int | None:
        text = root.try_read_text(f"{device_path}/{name}")
        if text is None:
            return None
        try:
            return parsers.parse_hex_id(text, bits)
        except parsers.ValueProblem:
            return None

    device_id = hex_file("device")
    pci_id = re.fullmatch(r"[0-9a-fA-F]{4}:([0-9a-fA-F]{4})", uevent.get("PCI_ID", ""))
    if device_id is None and pci_id:  # 16-bit ids only: a 5000-digit one made a number no report could print
        device_id = int(pci_id.group(1), 16)
    revision = hex_file("revision", 8)
    sub_vendor, sub_device = hex_file("subsystem_vendor"), hex_file("subsystem_device")
    if sub_vendor is not None and sub_device is not None:
        subsystem = f"{sub_vendor:04x}:{sub_device:04x}"
    elif re.fullmatch(r"[0-9a-fA-F]{4}:[0-9a-fA-F]{4}", uevent.get("PCI_SUBSYS_ID", "")):
        subsystem = uevent["PCI_SUBSYS_ID"].lower()
    else:
        subsystem = None
    return device_id, revision, subsystem


def _render_node(root: HostRoot, device_path: str) -> str | None:
    for name in root.listdir(f"{device_path}/drm"):
        if name.startswith("renderD"):
            return name
    return None


def _hwmon_dir(root: HostRoot, device_path: str, driver: str | None) -> str | None:
    """The hwmon folder of the GPU: the one named after its driver, else the only one."""
    folders = [n for n in root.listdir(f"{device_path}/hwmon") if n.startswith("hwmon")]
    fallback = None
    for name in folders:
        host = f"{device_path}/hwmon/{name}"
        label = _read_line(root, f"{host}/name")
        try:
            real = root.real_path(host)
        except HostReadError:
            continue
        if label and label == (driver or "amdgpu"):
            return real
        if label in ("amdgpu", "radeon"):
            fallback = fallback or real
    if fallback is None and len(folders) == 1:
        try:
            return root.real_path(f"{device_path}/hwmon/{folders[0]}")
        except HostReadError:
            return None
    return fallback
