"""amdgpu drives the GPU, but KFD (ROCm's compute interface) does not list it (issue 12, item 3).

rocminfo then shows only the CPU agent, or fails with "Unable to open /dev/kfd read-write: Cannot allocate memory",
and every ROCm program runs on the CPU. The kernel says why in one line (torvalds/linux
drivers/gpu/drm/amd/amdkfd/kfd_device.c, ``kgd2kfd_probe`` / ``kgd2kfd_device_init``):

- "<ASIC> not supported in kfd" / "GC IP 0b0004 not supported in kfd" (older kernels: "kfd not supported on this
  ASIC", "DID 6fdf is missing in supported_devices"): KFD has no code for the chip. For GCN 1 and most GCN 2 chips it
  never will ("gfx6-and-older aren't supported due to missing HW capabilities", AMD in ROCm/legacy-rocm-build#2232);
  for a chip newer than the kernel a newer kernel adds it (GC 11.0.4 came with Linux 6.2).
- "KFD support on Hawaii is experimental. See modparam exp_hw_support": Hawaii is listed only with
  ``amdgpu.exp_hw_support=1``, and no current ROCm has gfx701 code (ROCm/ROCR-Runtime#74).
- "skipped device 1002:67df, PCI rejects atomics": left to pcie-atomics-missing.

What does work on a GCN 1/2 card is compute outside ROCm: OpenCL through Mesa's rusticl (``RUSTICL_ENABLE=radeonsi``)
and Vulkan compute (ROCm/legacy-rocm-build#1804); both want the amdgpu driver, so ``amdgpu.si_support=1`` /
``cik_support=1`` stay.
"""

from __future__ import annotations

import logging
import re

from rocmdesk.diagnosis.engine import Failed, Passed, Skipped, check
from rocmdesk.diagnosis.facts import HostFacts
from rocmdesk.diagnosis.kernel_log import SourcedLine
from rocmdesk.diagnosis.kmod_config import module_param
from rocmdesk.diagnosis.legacy_asics import BY_NAME, CIK, SI, LegacyAsic, asic_of
from rocmdesk.diagnosis.model import Evidence, Severity
from rocmdesk.diagnosis.pci_kfd import PciDevice

log = logging.getLogger(__name__)

AREA = "Driver"
TOPOLOGY = "/sys/class/kfd/kfd/topology/nodes"

_NOT_IN_KFD_RE = re.compile(r"\b(GC IP [0-9a-fA-F]{6}|[A-Z][A-Z0-9_]{2,})\s+(?:VF\s+)?not supported in kfd")
_OLD_NOT_SUPPORTED_RE = re.compile(r"kfd not supported on this ASIC|DID [0-9a-fA-F]{4} is missing in supported_devices")
_HAWAII_RE = re.compile(r"KFD support on Hawaii is experimental")
_ATOMICS_RE = re.compile(r"skipped device ([0-9a-fA-F]{4}):([0-9a-fA-F]{4}), PCI rejects atomics")

RUSTICL = ("OpenCL through Mesa's rusticl driver (install Mesa's OpenCL package, e.g. `mesa-opencl-icd` on "
           "Debian/Ubuntu or `mesa-libOpenCL` on Fedora, and start programs with `RUSTICL_ENABLE=radeonsi`)")
VULKAN = "Vulkan compute (for LLMs, llama.cpp's Vulkan backend)"


def _ev(line) -> Evidence:
    return Evidence(line.text, line.path, line.line)


def _listed(facts: HostFacts, gpus: list[PciDevice]) -> tuple[list[PciDevice], bool]:
    """(GPUs KFD has no node for, whether the nodes could be joined by PCI address)."""
    nodes = facts.kfd_gpu_nodes
    addresses = {n.pci_address for n in nodes}
    if None in addresses:  # a node without location_id: only the count can be compared
        return (gpus[len(nodes):] if len(nodes) < len(gpus) else []), False
    return [d for d in gpus if d.address not in addresses], True


def _topology_evidence(facts: HostFacts) -> Evidence:
    nodes = facts.kfd_nodes or []
    cpus = [str(n.node_id) for n in nodes if n.gfx is None]
    gpus = [f"{n.node_id} ({n.gfx.target})" for n in nodes if n.gfx is not None]
    text = (f"KFD topology: CPU node(s) {', '.join(cpus) or 'none'}; GPU node(s) {', '.join(gpus) or 'none'}")
    return Evidence(text, TOPOLOGY)


def _param_evidence(facts: HostFacts) -> list[Evidence]:
    out = []
    for module, param in (("amdgpu", "si_support"), ("amdgpu", "cik_support"), ("radeon", "si_support"),
                          ("radeon", "cik_support"), ("amdgpu", "exp_hw_support")):
        value = module_param(facts.cmdline_args, module, param)
        if value is not None:
            out.append(Evidence(f"kernel command line has `{module}.{param}={value}`", "/proc/cmdline", 1))
    return out


def _what_works(asic: LegacyAsic | None) -> str:
    return f"{RUSTICL}, or {VULKAN}" + (
        "; both need the amdgpu driver, so keep amdgpu.si_support=1 / amdgpu.cik_support=1 on the command line"
        if asic is not None and asic.generation in (SI, CIK) else "")


@check("kfd-gpu-not-listed", AREA)
def kfd_gpu_not_listed(ctx):
    if ctx.is_wsl:
        return Skipped(ctx.WSL_SKIP_REASON)
    facts: HostFacts = ctx.facts
    if facts.pci_devices is None:
        return Skipped("this root has no readable /sys/bus/pci/devices")
    gpus = [d for d in facts.amd_display_devices if d.driver == "amdgpu"]
    if not gpus:
        return Skipped("no AMD GPU is driven by amdgpu (see amdgpu-not-loaded)")
    if facts.kfd_nodes is None:
        return Skipped("no KFD topology (/sys/class/kfd) in this root (see kfd-missing)")
    missing, joined = _listed(facts, gpus)
    if not missing:
        return Passed(f"KFD lists every GPU amdgpu drives ({len(gpus)})")
    log_ = facts.kernel_log
    lines: dict[str, list[tuple[SourcedLine, re.Match[str]]]] = {"asic": [], "old": [], "hawaii": [], "atomics": []}
    if log_ is not None:
        for key, pattern in (("asic", _NOT_IN_KFD_RE), ("old", _OLD_NOT_SUPPORTED_RE), ("hawaii", _HAWAII_RE),
                             ("atomics", _ATOMICS_RE)):
            lines[key] = log_.grep(pattern)
    atomics_ids = {int(m.group(2), 16) for _line, m in lines["atomics"]}
    outcomes: list = []
    reasons = []
    any_listed = len(missing) < len(gpus) or bool(facts.kfd_gpu_nodes)
    for dev in missing:
        if dev.device in atomics_ids:
            reasons.append(f"{dev.address}: KFD skipped it because PCIe atomics are missing (see pcie-atomics-missing)")
            continue
        asic = asic_of(dev.device)
        named = [(line, m) for line, m in lines["asic"]]
        if asic is None and len(missing) == 1 and named:
            asic = BY_NAME.get(named[0][1].group(1))
        chip = (f"{asic.name}, {asic.generation}" if asic else f"device {dev.ids}")
        ev = [Evidence(f"[{dev.ids}] driven by amdgpu ({chip})", f"{dev.path}/driver"), _topology_evidence(facts)]
        ev += [_ev(line) for line, _m in named + lines["old"] + lines["hawaii"]][:4]
        ev += _param_evidence(facts)
        severity = Severity.WARNING if any_listed else Severity.ERROR
        where = "" if joined else " (the KFD nodes carry no PCI address, so this is judged by their number)"
        if asic is not None and asic.name == "HAWAII":
            hawaii_line = bool(lines["hawaii"])
            exp = module_param(facts.cmdline_args, "amdgpu", "exp_hw_support")
            title = "KFD leaves out this Hawaii GPU: its support is experimental and off"
            details = (f"{dev.address} is a Hawaii chip ({asic.generation}, {asic.target}). KFD adds Hawaii only "
                       "when amdgpu.exp_hw_support=1 is set" + (" (the kernel log says so)" if hawaii_line else "")
                       + ", and even then no current ROCm release ships gfx701 code: AMD dropped GCN 2 from ROCm "
                       "years ago (ROCm 1.9.2 was the last one reported to work on Hawaii). What works for compute: "
                       f"{_what_works(asic)}.")
            steps: tuple[str, ...] = (f"For compute on this card use {RUSTICL}, or {VULKAN}.",
                     "Only to experiment with KFD on it: add `amdgpu.exp_hw_support=1` to the kernel command line "
                     "(GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub, then `sudo update-grub` or "
                     "`sudo grub2-mkconfig -o /boot/grub2/grub.cfg`) and reboot; current ROCm still has no code "
                     "for it." if exp is None else
                     "amdgpu.exp_hw_support is already set; current ROCm still has no gfx701 code for this card.")
        elif asic is not None and asic.generation in (SI, CIK):
            title = f"ROCm cannot use this {asic.generation.split(' (')[0]} GPU: KFD does not support {asic.name}"
            details = (f"{dev.address} is {asic.name} ({asic.generation}, {asic.target}). amdgpu drives it (for the "
                       "display and Vulkan), but KFD, the kernel part ROCm talks to, has never supported this "
                       "generation: AMD says gfx6 and older lack the hardware features it needs, so no kernel "
                       "option, ROCm release or HSA_OVERRIDE_GFX_VERSION makes it a ROCm GPU. rocminfo shows only "
                       f"the CPU and ROCm programs run on the CPU. What works for compute: {_what_works(asic)}.")
            steps = (f"Use the GPU for compute outside ROCm: {RUSTICL}.", f"Or {VULKAN}.",
                     "For ROCm itself (PyTorch, ollama's ROCm build) the card has to be replaced: RDNA2 (RX 6000) "
                     "or newer is on ROCm's support list.")
        elif named or lines["old"]:
            title = "KFD does not support this GPU in the running kernel"
            details = (f"{dev.address} ({chip}) is driven by amdgpu, but this kernel's KFD has no code for it "
                       f"(the kernel log line below), so ROCm does not see it.{where} A chip newer than the kernel "
                       "gets KFD support in a later kernel (GC 11.0.4 came with Linux 6.2).")
            steps = ("Boot a newer kernel (Ubuntu: the HWE kernel; or ROCm's amdgpu-dkms for your ROCm release), "
                     "then reboot and check `rocminfo` lists a GPU agent.",
                     "If it is an old chip (GCN 1/2), ROCm cannot use it; use Mesa's OpenCL (rusticl) or Vulkan.")
        else:
            title = "KFD did not add this GPU, and the kernel log does not say why"
            details = (f"{dev.address} ({chip}) is driven by amdgpu, but has no node in the KFD topology, so "
                       f"ROCm programs do not see it.{where}"
                       + (" No kernel log was readable." if log_ is None else
                          " The kernel log read has no KFD line for it."))
            steps = ("Look for the reason: `sudo dmesg | grep -i kfd` (\"not supported in kfd\", \"PCI rejects "
                     "atomics\", \"NOT added due to errors\").",)
        outcomes.append(Failed(evidence=ev, subject=dev.address, title=title, details=details, severity=severity,
                               fix_steps=steps))
    if outcomes:
        return outcomes
    return Passed("; ".join(reasons))
