"""Build host roots with a realistic /sys from flat GPU dumps (LACT's or hand-built Instinct ones).

Real sysfs is a web of symlinks: ``class/drm/cardN`` points into ``devices/pci.../BDF/drm/cardN``,
whose ``device`` link points back to the PCI device folder. The real rocm-smi reads those links to
learn the PCI address, so the trees here have them too (relative, so they work both in place and
bind-mounted over /sys).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.procs import fake_process

DATA = Path(__file__).resolve().parent.parent / "data"
LACT = DATA / "lact-sysfs"
LACT_DUMPS = sorted(p.name for p in LACT.iterdir() if p.is_dir())


@dataclass
class GpuSpec:
    """One GPU to place in a tree: a dump folder (``cardN/device/...``) at a PCI address."""

    dump: str | Path  # name under tests/data/lact-sysfs, or a path to a dump folder
    pci: str | None = None  # default: the dump's PCI_SLOT_NAME
    card: int | None = None  # DRM card number; default: next free
    driver: str | None = None  # default: the dump's DRIVER
    kfd: bool = True  # give it a KFD topology node when bound to amdgpu
    gfx_target_version: int | None = None  # KFD packed version when the dump has no kfd folder
    extra_props: dict[str, str] = field(default_factory=dict)  # more KFD properties lines

    def dump_dir(self) -> Path:
        path = Path(self.dump)
        return path if path.is_absolute() else LACT / str(self.dump)


def parse_uevent(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            out[key] = value
    return out


def device_dir_of(dump: Path) -> Path:
    cards = sorted(dump.glob("card*/device"))
    if not cards:
        raise FileNotFoundError(f"{dump} has no card*/device folder")
    return cards[0]


# gfx_target_version for the LACT dumps without a kfd folder (Linux drivers/gpu/drm/amd/amdkfd/kfd_device.c
# gfx_target_version values).
# The GCN 1 cards (r9-280, r7-240: gfx6) have no KFD support, so they get no node.
LACT_GFX_TARGET = {
    "rx7900xtx": 110000, "rx7800xt": 110001, "rx7700s": 110002, "rx7600s": 110002,
    "rx6900xt": 100300, "rx6600": 100302, "rx5700xt": 100100, "rx5500xt": 100102,
    "vega56": 90000, "rx580": 80003, "rx9070": 120001,
    "vangogh": 100303, "phoenix": 110003,
}


def build_root(root: Path, gpus: list[GpuSpec], *, amdgpu_live: bool = True,
               cpu_nodes: int = 1) -> Path:
    """Create ``root/sys`` holding the given GPUs; returns ``root``.

    KFD node ids: CPU nodes first (``cpu_nodes`` of them), then one node per amdgpu GPU in order,
    which is what the kernel does on a one-socket machine.
    """
    sys_dir = root / "sys"
    (sys_dir / "class" / "drm").mkdir(parents=True, exist_ok=True)
    (sys_dir / "bus" / "pci" / "devices").mkdir(parents=True, exist_ok=True)
    topology = sys_dir / "class" / "kfd" / "kfd" / "topology" / "nodes"
    used_cards = {int(p.name[4:]) for p in (sys_dir / "class" / "drm").glob("card[0-9]*") if p.name[4:].isdigit()}
    node_id = _next_node(topology, cpu_nodes)
    for spec in gpus:
        dump = spec.dump_dir()
        src_device = device_dir_of(dump)
        uevent = parse_uevent((src_device / "uevent").read_text()) if (src_device / "uevent").exists() else {}
        pci = spec.pci or uevent.get("PCI_SLOT_NAME", "0000:03:00.0")
        driver = spec.driver or uevent.get("DRIVER", "amdgpu")
        card = spec.card if spec.card is not None else _next_card(used_cards)
        used_cards.add(card)
        bus_port = f"0000:00:{(int(pci.split(':')[1], 16) % 0x1f) or 1:02x}.0"
        device_rel = Path("devices") / "pci0000:00" / bus_port / pci
        device = sys_dir / device_rel
        shutil.copytree(src_device, device, symlinks=False, dirs_exist_ok=True)
        _make_writable(device)
        if "PCI_SLOT_NAME" in uevent and spec.pci:
            text = (device / "uevent").read_text().replace(uevent["PCI_SLOT_NAME"], pci)
            (device / "uevent").write_text(text)
        drm_card = device / "drm" / f"card{card}"
        drm_card.mkdir(parents=True, exist_ok=True)
        _symlink(drm_card / "device", "../../../" + pci)
        (drm_card / "dev").write_text(f"226:{card}\n")
        if driver == "amdgpu":
            render = device / "drm" / f"renderD{128 + card}"
            render.mkdir(exist_ok=True)
            _symlink(render / "device", "../../../" + pci)
            _symlink(sys_dir / "class" / "drm" / f"renderD{128 + card}",
                     os.path.relpath(render, sys_dir / "class" / "drm"))
        _symlink(sys_dir / "class" / "drm" / f"card{card}", os.path.relpath(drm_card, sys_dir / "class" / "drm"))
        pci_devices = sys_dir / "bus" / "pci" / "devices"
        _symlink(pci_devices / pci, os.path.relpath(device, pci_devices))
        drivers = sys_dir / "bus" / "pci" / "drivers" / driver
        drivers.mkdir(parents=True, exist_ok=True)
        _symlink(device / "driver", os.path.relpath(drivers, device))
        _symlink(drivers / pci, os.path.relpath(device, drivers))
        hwmon_class = sys_dir / "class" / "hwmon"
        hwmon_class.mkdir(parents=True, exist_ok=True)
        for hwmon in sorted((device / "hwmon").glob("hwmon*")):
            if not (hwmon_class / hwmon.name).exists():
                _symlink(hwmon_class / hwmon.name, os.path.relpath(hwmon, hwmon_class))
        version = spec.gfx_target_version or _dump_gfx_version(dump) or LACT_GFX_TARGET.get(str(spec.dump))
        if driver == "amdgpu" and spec.kfd and version:
            _write_kfd_gpu_node(topology / str(node_id), pci, version, 128 + card, node_id, spec.extra_props)
            node_id += 1
    if cpu_nodes:
        for n in range(cpu_nodes):
            if not (topology / str(n)).exists():
                _write_kfd_cpu_node(topology / str(n))
    module = sys_dir / "module" / "amdgpu"
    if amdgpu_live and any((s.driver or "amdgpu") == "amdgpu" for s in gpus):
        module.mkdir(parents=True, exist_ok=True)
        (module / "initstate").write_text("live\n")
        (module / "parameters").mkdir(exist_ok=True)
    return root


def _next_card(used: set[int]) -> int:
    n = 0
    while n in used:
        n += 1
    return n


def _next_node(topology: Path, cpu_nodes: int) -> int:
    existing = [int(p.name) for p in topology.glob("*") if p.name.isdigit()] if topology.exists() else []
    return max([*existing, cpu_nodes - 1]) + 1


def _dump_gfx_version(dump: Path) -> int | None:
    for props in sorted(dump.glob("kfd/topology/nodes/*/properties")):
        for line in props.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "gfx_target_version" and value.strip() not in ("", "0"):
                return int(value)
    return None


def location_id(pci: str) -> tuple[int, int]:
    """(domain, location_id) of a PCI address as KFD writes them: bus << 8 | dev << 3 | fn."""
    domain, bus, devfn = pci.split(":")
    dev, fn = devfn.split(".")
    return int(domain, 16), (int(bus, 16) << 8) | (int(dev, 16) << 3) | int(fn, 16)


def _write_kfd_gpu_node(node: Path, pci: str, gfx_version: int, render_minor: int, node_id: int,
                        extra: dict[str, str]) -> None:
    node.mkdir(parents=True, exist_ok=True)
    (node / "io_links").mkdir(exist_ok=True)
    (node / "mem_banks").mkdir(exist_ok=True)
    domain, loc = location_id(pci)
    props = {
        "cpu_cores_count": "0", "simd_count": "192", "gfx_target_version": str(gfx_version),
        "vendor_id": "4098", "device_id": "0", "location_id": str(loc), "domain": str(domain),
        "drm_render_minor": str(render_minor), "unique_id": "0", **extra,
    }
    (node / "properties").write_text("".join(f"{k} {v}\n" for k, v in props.items()))
    (node / "gpu_id").write_text(f"{1000 + node_id * 1111}\n")
    (node / "name").write_text("gpu\n")


def _write_kfd_cpu_node(node: Path) -> None:
    node.mkdir(parents=True, exist_ok=True)
    (node / "io_links").mkdir(exist_ok=True)
    (node / "properties").write_text(
        "cpu_cores_count 16\nsimd_count 0\ngfx_target_version 0\nvendor_id 0\nlocation_id 0\ndomain 0\n"
    )
    (node / "gpu_id").write_text("0\n")
    (node / "name").write_text("\n")


def _symlink(link: Path, target: str) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.exists():
        if link.is_dir() and not link.is_symlink():
            shutil.rmtree(link)
        else:
            link.unlink()
    os.symlink(target, link)


def _make_writable(path: Path) -> None:
    for dirpath, _dirnames, filenames in os.walk(path):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            full = os.path.join(dirpath, name)
            if not os.path.islink(full):
                os.chmod(full, 0o644)


# -- KFD per-process folders (sys/class/kfd/kfd/proc/<pid>/), as drivers/gpu/drm/amd/amdkfd/kfd_process.c
# writes them: pasid, vram_<gpu_id> (bytes), sdma_<gpu_id> (microseconds), stats_<gpu_id>/{evicted_ms,
# cu_occupancy (CUs busy)}, queues/<queue id>/gpuid.

def kfd_gpu_ids(root: Path) -> dict[str, int]:
    """gpu_id of each GPU node of a built tree, by PCI address."""
    out = {}
    for node in sorted((root / "sys" / "class" / "kfd" / "kfd" / "topology" / "nodes").glob("*")):
        gpu_id = int((node / "gpu_id").read_text())
        if gpu_id:
            props = dict(line.split(" ", 1) for line in (node / "properties").read_text().splitlines() if " " in line)
            loc, domain = int(props["location_id"]), int(props["domain"])
            out[f"{domain:04x}:{loc >> 8:02x}:{loc >> 3 & 0x1f:02x}.{loc & 7}"] = gpu_id
    return out


@dataclass
class KfdUse:
    """One process's use of one GPU; None leaves that file out (an older kernel, another GPU)."""

    vram: int | None = 0
    sdma: int | None = 0
    cu: int | None = None
    evicted_ms: int | None = 0
    queues: int = 0


def add_kfd_process(root: Path, pid: int, uses: dict[int, KfdUse], *, pasid: int | None = 32769,
                    comm: str | None = None, cmdline: list[str] | None = None) -> Path:
    """Write ``sys/class/kfd/kfd/proc/<pid>`` (uses by gpu_id) and, with ``comm``, ``proc/<pid>``."""
    base = root / "sys" / "class" / "kfd" / "kfd" / "proc" / str(pid)
    (base / "queues").mkdir(parents=True, exist_ok=True)
    if pasid is not None:
        (base / "pasid").write_text(f"{pasid}\n")
    queue_id = len(list((base / "queues").iterdir()))
    for gpu_id, use in uses.items():
        if use.vram is not None:
            (base / f"vram_{gpu_id}").write_text(f"{use.vram}\n")
        if use.sdma is not None:
            (base / f"sdma_{gpu_id}").write_text(f"{use.sdma}\n")
        stats = base / f"stats_{gpu_id}"
        stats.mkdir(exist_ok=True)
        if use.evicted_ms is not None:
            (stats / "evicted_ms").write_text(f"{use.evicted_ms}\n")
        if use.cu is not None:
            (stats / "cu_occupancy").write_text(f"{use.cu}\n")
        for _ in range(use.queues):
            queue = base / "queues" / str(queue_id)
            queue.mkdir()
            (queue / "gpuid").write_text(str(gpu_id))
            (queue / "type").write_text("2")
            (queue / "size").write_text("1048576")
            queue_id += 1
    if comm is not None:
        fake_process(root, pid, comm=comm, argv=cmdline if cmdline is not None else [comm])
    return base


def behind_amd_switch(root: Path, pci: str, upstream: str, downstream: str, *, link: dict[str, str],
                      internal: dict[str, str] | None = None) -> Path:
    """Move the GPU at ``pci`` behind the PCIe switch RDNA 1-3 cards carry (upstream port [1002:1478] at
    ``upstream``, downstream port [1002:1479] at ``downstream``), as lspci shows them. ``link`` holds the upstream
    port's current/max link files (the card's link to the slot); ``internal`` overrides the GPU's own ones (the link
    inside the card, which reads its maximum). Every symlink into or out of the moved folder is rewritten, so the
    tree stays consistent. Returns the upstream port's folder."""
    sys_dir = root / "sys"
    old = (sys_dir / "bus" / "pci" / "devices" / pci).resolve()
    new = old.parent / upstream / downstream / pci
    links = []
    for dirpath, dirnames, filenames in os.walk(sys_dir):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            if path.is_symlink():
                links.append((path, Path(os.path.realpath(path))))
    new.parent.mkdir(parents=True)
    shutil.move(str(old), str(new))

    def moved(p: Path) -> Path:
        return new / p.relative_to(old) if p == old or old in p.parents else p

    for path, target in links:
        where = moved(path)
        if where.is_symlink():
            where.unlink()
        where.symlink_to(os.path.relpath(moved(target), where.parent))
    for folder, device_id in ((new.parent.parent, "0x1478"), (new.parent, "0x1479")):
        (folder / "vendor").write_text("0x1002\n")
        (folder / "device").write_text(device_id + "\n")
        (folder / "class").write_text("0x060400\n")
    for name, value in link.items():
        (new.parent.parent / name).write_text(value + "\n")
    for name, value in (internal or {}).items():
        target = new / name
        if target.is_symlink() or target.exists():
            target.unlink()
        target.write_text(value + "\n")
    return new.parent.parent
