"""The machine's GPUs as sysfs lists them: PCI devices (vendor, device, class, bound driver) and KFD
topology nodes, joined into the AMD GPUs the checks talk about."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from rocmdesk.diagnosis.etc_parsers import parse_int, parse_key_values
from rocmdesk.diagnosis.gfx import GfxVersion
from rocmdesk.host import HostReadError, HostRoot

AMD_VENDOR = 0x1002
NVIDIA_VENDOR = 0x10DE
# PCI base classes of GPUs: 0x03 display controllers, 0x12 processing accelerators. Instinct MI300X /
# MI325X ("Aqua Vanjaram") report class 0x1200, not 0x03 (lspci in apache/cloudstack#11701).
GPU_PCI_CLASSES = (0x03, 0x12)


@dataclass(frozen=True, slots=True)
class PciDevice:
    address: str  # "0000:03:00.0"
    vendor: int | None
    device: int | None
    pci_class: int | None  # 0x030000
    driver: str | None  # bound kernel driver, None when unbound
    path: str  # host path of the device folder

    @property
    def is_display(self) -> bool:
        return self.pci_class is not None and (self.pci_class >> 16) == 0x03

    @property
    def is_gpu(self) -> bool:
        """A display controller or a processing accelerator (Instinct MI300 class 0x1200)."""
        return self.pci_class is not None and (self.pci_class >> 16) in GPU_PCI_CLASSES

    @property
    def is_amd_gpu(self) -> bool:
        return self.vendor == AMD_VENDOR and self.is_gpu

    @property
    def is_nvidia_gpu(self) -> bool:
        return self.vendor == NVIDIA_VENDOR and self.is_gpu

    @property
    def ids(self) -> str:
        return f"{self.vendor or 0:04x}:{self.device or 0:04x}"


@dataclass(frozen=True, slots=True)
class KfdNode:
    node_id: int
    gfx: GfxVersion | None  # None for a CPU node
    vendor_id: int | None
    domain: int | None
    location_id: int | None
    render_minor: int | None
    path: str
    unique_id: int | None = None  # the ROCr agent UUID is "GPU-" + this in hex; 0 or None: the driver exposes none

    @property
    def pci_address(self) -> str | None:
        if self.location_id is None:
            return None
        loc = self.location_id
        return f"{self.domain or 0:04x}:{loc >> 8:02x}:{(loc >> 3) & 0x1F:02x}.{loc & 0x7:x}"


@dataclass(frozen=True, slots=True)
class GpuFact:
    """An AMD GPU as the checks see it: its PCI device joined with its KFD node (if any)."""

    pci: str
    device_id: int | None
    driver: str | None
    gfx: GfxVersion | None
    kfd_node: int | None
    unique_id: int | None = None  # KFD unique_id (see KfdNode)

    @property
    def label(self) -> str:
        target = f" {self.gfx.target}" if self.gfx else ""
        return f"GPU {self.pci}{target}"


def read_pci_devices(root: HostRoot) -> list[PciDevice] | None:
    """Every PCI device; None when the root has no readable sys/bus/pci/devices."""
    base = "/sys/bus/pci/devices"
    if not root.is_dir(base):
        return None
    out = []
    for name in root.listdir(base):
        path = f"{base}/{name}"
        uevent = {}
        text = root.try_read_text(f"{path}/uevent")
        if text:
            uevent = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
        vendor = parse_int(root.try_read_text(f"{path}/vendor"))
        device = parse_int(root.try_read_text(f"{path}/device"))
        if (vendor is None or device is None) and "PCI_ID" in uevent:
            ven, _, dev = uevent["PCI_ID"].partition(":")
            vendor = vendor if vendor is not None else parse_int("0x" + ven)
            device = device if device is not None else parse_int("0x" + dev)
        pci_class = parse_int(root.try_read_text(f"{path}/class"))
        if pci_class is None and "PCI_CLASS" in uevent:
            pci_class = parse_int("0x" + uevent["PCI_CLASS"])
        out.append(PciDevice(name, vendor, device, pci_class, _bound_driver(root, path, uevent), path))
    return out


def _bound_driver(root: HostRoot, device_path: str, uevent: dict[str, str]) -> str | None:
    target = root.readlink(f"{device_path}/driver")
    if target is None:
        try:
            target = os.readlink(os.path.join(root.real_path(device_path), "driver"))
        except (OSError, HostReadError):
            target = None
    if target:
        return os.path.basename(target.rstrip("/")) or None
    if root.exists(f"{device_path}/driver"):
        return None
    return uevent.get("DRIVER") or None


def read_kfd_nodes(root: HostRoot) -> list[KfdNode] | None:
    """KFD topology nodes (CPU and GPU); None when there is no topology folder."""
    base = "/sys/class/kfd/kfd/topology/nodes"
    if not root.is_dir(base):
        return None
    out = []
    for name in root.listdir(base):
        if not name.isdigit():
            continue
        text = root.try_read_text(f"{base}/{name}/properties")
        if text is None:
            continue
        props = parse_key_values(text)
        packed = parse_int(props.get("gfx_target_version"))
        out.append(KfdNode(
            node_id=int(name),
            gfx=GfxVersion.from_packed(packed) if packed else None,
            vendor_id=parse_int(props.get("vendor_id")),
            domain=parse_int(props.get("domain")),
            location_id=parse_int(props.get("location_id")),
            render_minor=parse_int(props.get("drm_render_minor")),
            path=f"{base}/{name}/properties",
            unique_id=parse_int(props.get("unique_id")),
        ))
    return sorted(out, key=lambda n: n.node_id)


def join_amd_gpus(amd_devices: Iterable[PciDevice], kfd_gpu_nodes: list[KfdNode]) -> list[GpuFact]:
    """AMD GPUs: PCI display devices joined with KFD nodes; KFD-only GPUs when the root has
    no PCI folder (some snapshots)."""
    nodes_by_pci = {n.pci_address: n for n in kfd_gpu_nodes if n.pci_address}
    out = []
    seen = set()
    for dev in amd_devices:
        node = nodes_by_pci.get(dev.address)
        out.append(GpuFact(dev.address, dev.device, dev.driver, node.gfx if node else None,
                           node.node_id if node else None, node.unique_id if node else None))
        seen.add(dev.address)
    for node in kfd_gpu_nodes:
        if node.pci_address not in seen and (node.vendor_id in (None, AMD_VENDOR)):
            out.append(GpuFact(node.pci_address or f"KFD node {node.node_id}", None, "amdgpu", node.gfx,
                               node.node_id, node.unique_id))
    return out
