"""Hardware health seen through telemetry: ECC errors and retired VRAM pages, PCIe links below their width.

Both read one sample of every GPU (``ctx.gpu_samples``, the sysfs backend over the same root), so a
snapshot or root folder is judged on its own recorded files.
"""

from __future__ import annotations

import logging
import re

from rocmdesk.diagnosis.engine import Failed, Passed, Skipped, check
from rocmdesk.diagnosis.etc_parsers import parse_int
from rocmdesk.diagnosis.model import Evidence, Severity
from rocmdesk.host import HostReadError
from rocmdesk.telemetry.pcie import parse_speed_gts, parse_width

log = logging.getLogger(__name__)

AREA = "Hardware"
BAD_PAGE_PARAM = "/sys/module/amdgpu/parameters/bad_page_threshold"
NEAR_THRESHOLD = 0.8
BUSY_FOR_LINK_CHECK = 50.0  # percent: a link trains down at idle (ASPM / pp_dpm_pcie), so judge under load


def _name(sample) -> str:
    return f"{sample.info.name} ({sample.info.pci})"


def _device(sample) -> str:
    return f"/sys/bus/pci/devices/{sample.info.pci}"


# amdgpu_ras.c logs every uncorrectable event it handles: "<n> uncorrectable hardware errors detected in <block>
# block" (newer RAS core: "... <n> new uncorrectable ...") and, for the fatal ATHUB interrupt, "uncorrectable hardware
# error(ERREVENT_ATHUB_INTERRUPT) detected!" (ROCm/legacy-rocm-build#1886, MI50). "no uncorrectable hardware errors
# detected in umc block" is the all-clear, so a count above zero is required.
# literal first, so the search over a long log stays fast; the count in front is read from the matching lines only
_UE_LOG_RE = re.compile(r"uncorrectable hardware error(?:s detected in (?:total in )?\w+ block|\(\w+\) detected)")
_UE_COUNT_RE = re.compile(r"(?:^|\s)(no|\d+) (?:new )?uncorrectable hardware errors")
_LOG_PCI_RE = re.compile(r"amdgpu ([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])")
MAX_LOG_LINES = 6


def _logged_uncorrectable(ctx) -> dict[str | None, list[Evidence]]:
    """This boot's kernel-log lines of uncorrectable RAS events, by the GPU's PCI address (None when the line does not
    name one). The log keeps what the counters lose: they start again at zero when the driver reloads or the GPU is
    reset, and a GPU whose RAS sysfs is missing (or left out of a snapshot) has no counters to read at all."""
    facts = getattr(ctx, "facts", None)
    log_ = getattr(facts, "kernel_log", None) if facts is not None and not ctx.is_wsl else None
    if log_ is None:
        return {}
    out: dict[str | None, list[Evidence]] = {}
    for line, _match in log_.grep(_UE_LOG_RE):
        count = _UE_COUNT_RE.search(line.text)
        if count is not None and count.group(1) in ("no", "0"):
            continue  # the all-clear, or a zero count
        pci = _LOG_PCI_RE.search(line.text)
        out.setdefault(pci.group(1) if pci else None, []).append(Evidence(line.text, line.path, line.line))
    return out


def _log_only_outcomes(logged: dict[str | None, list[Evidence]]) -> list:
    """Findings from the kernel log alone, for GPUs without readable RAS counters."""
    outcomes = []
    for pci, lines in logged.items():
        outcomes.append(Failed(
            evidence=lines[:MAX_LOG_LINES], subject=pci, severity=Severity.ERROR,
            details=(f"The kernel log of this boot shows {len(lines)} uncorrectable hardware error event(s)"
                     + (f" on {pci}" if pci else "") + "; this GPU's RAS counters (ras/*_err_count) are not "
                     "readable here, so the log is the record.")))
    return outcomes


@check("gpu-ecc-errors", AREA)
def gpu_ecc_errors(ctx):
    samples = [s for s in ctx.gpu_samples if s.ras is not None]
    logged = _logged_uncorrectable(ctx)
    if not samples:
        if logged:
            return _log_only_outcomes(logged)
        return Skipped("no GPU here reports RAS (ECC) counters: only Instinct and some workstation GPUs have them")
    threshold = _bad_page_threshold(ctx)
    outcomes: list = []
    for sample in samples:
        in_log = logged.pop(sample.info.pci, [])
        ras = sample.ras
        pages = ras.get("pages") or {}
        retired, pending = pages.get("retired", 0), pages.get("pending", 0)
        evidence = [Evidence(f"{block}: ue {c.get('ue', 0)}, ce {c.get('ce', 0)}",
                             f"{_device(sample)}/ras/{block}_err_count")
                    for block, c in sorted(ras.get("blocks", {}).items()) if c.get("ue") or c.get("ce")]
        if retired or pending:
            evidence.append(Evidence(f"{retired} retired, {pending} pending VRAM page(s)",
                                     f"{_device(sample)}/ras/gpu_vram_bad_pages"))
        evidence += in_log[:MAX_LOG_LINES]
        near = threshold is not None and threshold > 0 and retired >= NEAR_THRESHOLD * threshold
        if ras.get("uncorrectable", 0) > 0 or near or in_log:
            parts = []
            if ras.get("uncorrectable", 0):
                parts.append(f"{ras['uncorrectable']} uncorrectable ECC error(s) since the driver loaded")
            elif in_log:
                parts.append(f"the kernel log of this boot shows {len(in_log)} uncorrectable hardware error "
                             "event(s), though the counters read zero now (they start again when the driver "
                             "reloads or the GPU is reset)")
            if near:
                parts.append(f"{retired} retired pages of the driver's limit of {threshold} "
                             f"(amdgpu.bad_page_threshold)")
            outcomes.append(Failed(evidence=evidence, subject=sample.info.pci, severity=Severity.ERROR,
                                   details=f"{_name(sample)}: " + "; ".join(parts) + "."))
        elif retired or pending or ras.get("correctable", 0):
            outcomes.append(Failed(
                evidence=evidence, subject=sample.info.pci, severity=Severity.INFO,
                title="The GPU corrected memory errors or retired VRAM pages",
                explanation=(f"{_name(sample)} counted {ras.get('correctable', 0)} corrected ECC error(s) and has "
                             f"{retired} retired and {pending} pending VRAM page(s). Corrected errors change no "
                             "result; retired pages are taken out of use by the driver. Watch the counts: a "
                             "steady rise, or any uncorrectable error, is when to act."),
                fix_steps=("Record the counts (rocmdesk sample --json, or amd-smi metric --ecc) and compare "
                           "them next week.",)))
    outcomes += _log_only_outcomes(logged)  # log lines of GPUs without counters (or naming none)
    if not outcomes:
        return Passed(f"{len(samples)} GPU(s) report no ECC errors and no retired pages")
    return outcomes


def _bad_page_threshold(ctx) -> int | None:
    """The driver's limit when the admin set one (amdgpu.bad_page_threshold > 0); None otherwise:
    the default lets the driver choose (drivers/gpu/drm/amd/amdgpu/amdgpu_drv.c, MODULE_PARM_DESC)."""
    text = ctx.read(BAD_PAGE_PARAM)
    if text is None:
        return None
    text = text.strip()
    return int(text) if text.isdigit() and len(text) < 10 else None


# The PCIe switch inside RDNA 1-3 cards (lspci: "Navi 10 XL Upstream/Downstream Port of PCI Express Switch
# [1002:1478]/[1002:1479]"): the GPU function sits behind it, so its own current_link_* describe the link inside the
# card, which always reads its maximum. The card's link to the slot is the upstream port's (libdrm_amdgpu_sys
# get_system_pcie_port_sysfs_path, used by amdgpu_top and LACT; ilya-zlobintsev/LACT#334).
AMD_SWITCH_PORTS = (0x1478, 0x1479)
VENDOR_AMD = 0x1002


def _switch_port(ctx, path: str) -> bool:
    return (parse_int(ctx.read(f"{path}/vendor")) == VENDOR_AMD
            and parse_int(ctx.read(f"{path}/device")) in AMD_SWITCH_PORTS)


def slot_link(ctx, pci: str) -> tuple[str, dict] | None:
    """(host path of the card's upstream switch port, its link) for a GPU behind AMD's on-card switch; None for a GPU
    wired to the slot directly (its own link files are the slot link then) or when the files cannot be read."""
    try:
        device = ctx.root.resolve_host_path(f"/sys/bus/pci/devices/{pci}")
    except HostReadError:
        return None
    parts = device.rstrip("/").split("/")
    top = None
    for depth in (1, 2):  # the downstream port above the GPU, then the upstream port above it
        parent = "/".join(parts[:-depth])
        if not parent.startswith("/sys/devices/pci") or not _switch_port(ctx, parent):
            break
        top = parent
    if top is None:
        return None
    link = {"width": parse_width(ctx.read(f"{top}/current_link_width") or ""),
            "max_width": parse_width(ctx.read(f"{top}/max_link_width") or ""),
            "speed_gts": parse_speed_gts(ctx.read(f"{top}/current_link_speed") or ""),
            "max_speed_gts": parse_speed_gts(ctx.read(f"{top}/max_link_speed") or "")}
    if not link["width"] or not link["max_width"]:
        return None
    return top, link


# The PCI core's own verdict, logged when a device is added (drivers/pci/pci.c __pcie_print_link_status): the slowest
# link on the path to the root, so it sees through the card's switch and is not a power-saving state of the moment.
# "pci 0000:0c:00.0: 126.016 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x16 link at 0000:00:03.1 (capable
# of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)" (TheTumultuousUnicornOfDarkness/CPU-X#335, RX 6700 XT on X470)
_BDF = r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]"
_LIMITED_RE = re.compile(r"Gb/s available PCIe bandwidth, limited by ([\d.]+) GT/s PCIe x(\d+) link at (\S+) "
                         r"\(capable of [\d.]+ Gb/s with ([\d.]+) GT/s PCIe x(\d+) link\)")
_LIMITED_DEVICE_RE = re.compile(rf"\b(?:pci|amdgpu) ({_BDF}): [\d.]+ Gb/s available")


def _logged_limits(ctx) -> dict[str, tuple[Evidence, float, int, str, float, int]]:
    """This boot's "limited by" lines of the PCI core, by device address: (line, speed, width, limiting port, capable
    speed, capable width)."""
    facts = getattr(ctx, "facts", None)
    log_ = getattr(facts, "kernel_log", None) if facts is not None and not ctx.is_wsl else None
    if log_ is None:
        return {}
    out: dict[str, tuple[Evidence, float, int, str, float, int]] = {}
    for line, m in log_.grep(_LIMITED_RE):
        device = _LIMITED_DEVICE_RE.search(line.text)
        if device is None:
            continue
        out.setdefault(device.group(1), (Evidence(line.text, line.path, line.line), float(m.group(1)),
                                         int(m.group(2)), m.group(3), float(m.group(4)), int(m.group(5))))
    return out


def _port_max(ctx, port: str) -> tuple[float | None, int | None]:
    base = f"/sys/bus/pci/devices/{port}"
    return (parse_speed_gts(ctx.read(f"{base}/max_link_speed") or ""),
            parse_width(ctx.read(f"{base}/max_link_width") or ""))


def _limited_outcome(ctx, pci: str, name: str, logged, extra: list[Evidence]) -> Failed:
    """The finding for a GPU whose link the kernel logged as limited: the platform's limit (information) when the
    limiting port itself cannot do more, else a link that trained below both ends (a warning)."""
    line, speed, width, port, cap_speed, cap_width = logged
    port_speed, port_width = _port_max(ctx, port)
    evidence = [line, *extra]
    if port_speed is not None:
        evidence.append(Evidence(f"{port_speed:g} GT/s PCIe", f"/sys/bus/pci/devices/{port}/max_link_speed"))
    if port_width is not None:
        evidence.append(Evidence(f"{port_width}", f"/sys/bus/pci/devices/{port}/max_link_width"))
    now, best = f"x{width} at {speed:g} GT/s", f"x{cap_width} at {cap_speed:g} GT/s"
    platform = (port_speed is not None and port_width is not None and (port_speed, port_width) == (speed, width)
                and (port_speed < cap_speed or port_width < cap_width))
    if platform:
        return Failed(
            evidence=evidence, subject=pci, severity=Severity.INFO,
            title="The slot's PCIe link is slower than the GPU could use",
            explanation=(f"{name} can do {best}, but the port it hangs off ({port}) can do at most {now}, and the "
                         "kernel found the link limited there at boot. That is the limit of this CPU, chipset or "
                         "slot, not a fault: moving data to and from the GPU is slower than the card allows, and "
                         "nothing on this slot can change it."),
            fix_steps=(f"If the board has a slot wired to the CPU at {cap_speed:g} GT/s (the board manual says which), "
                       "move the card there; otherwise this is the most this platform can do.",))
    return Failed(
        evidence=evidence, subject=pci, severity=Severity.WARNING,
        details=(f"The kernel found at boot that the link to {name} trained to {now} at {port}, below what the GPU "
                 f"can do ({best})" + (f" and what that port can do (x{port_width} at {port_speed:g} GT/s)"
                                       if port_speed is not None and port_width is not None else "")
                 + ": a slot wired with fewer lanes, a riser or extender, or a lane or generation that failed to "
                 "train."))


@check("pcie-link-degraded", AREA)
def pcie_link_degraded(ctx):
    samples = [s for s in ctx.gpu_samples if s.pcie and s.pcie.get("width") and s.pcie.get("max_width")]
    logged = _logged_limits(ctx)
    gpus = {d.address for d in ctx.facts.amd_display_devices} if getattr(ctx, "facts", None) else set()
    logged = {pci: v for pci, v in logged.items() if pci in gpus or any(s.info.pci == pci for s in samples)}
    if not samples and not logged:
        return Skipped("no GPU reports both its current and its maximum PCIe link (current_link_*, max_link_*)")
    outcomes: list = []
    for sample in samples:
        link = sample.pcie
        where = _device(sample)
        through_switch = slot_link(ctx, sample.info.pci)
        if through_switch is not None:
            where, link = through_switch
        width, max_width = link["width"], link["max_width"]
        speed, max_speed = link.get("speed_gts"), link.get("max_speed_gts")
        narrow = width < max_width
        slow = speed is not None and max_speed is not None and speed < max_speed
        evidence = [Evidence(f"{width}", f"{where}/current_link_width"),
                    Evidence(f"{max_width}", f"{where}/max_link_width")]
        if speed is not None:
            evidence.append(Evidence(f"{speed:g} GT/s PCIe", f"{where}/current_link_speed"))
        if through_switch is not None:
            evidence.append(Evidence(f"the card's PCIe switch upstream port (the GPU's own link files, "
                                     f"x{sample.pcie['width']}, describe the link inside the card)", where))
        if sample.info.pci in logged:
            # the boot-time verdict of the PCI core decides; the live link files are shown beside it
            outcomes.append(_limited_outcome(ctx, sample.info.pci, _name(sample), logged.pop(sample.info.pci),
                                             evidence if (narrow or slow) else []))
            continue
        if not (narrow or slow):
            continue
        busy = sample.gpu_busy_percent
        loaded = isinstance(busy, int | float) and busy >= BUSY_FOR_LINK_CHECK
        now = f"x{width} at {speed:g} GT/s" if speed is not None else f"x{width}"
        best = f"x{max_width} at {max_speed:g} GT/s" if max_speed is not None else f"x{max_width}"
        if loaded or (narrow and width * 4 <= max_width):
            outcomes.append(Failed(
                evidence=evidence, subject=sample.info.pci, severity=Severity.WARNING,
                details=(f"{_name(sample)} runs its link {now}; it can do {best}"
                         + (f", while {busy:g} % busy." if loaded else
                            ". A link this narrow is not a power-saving state: the card sits in a slot or riser "
                            "with fewer lanes, or a lane failed to train."))))
        else:
            outcomes.append(Failed(
                evidence=evidence, subject=sample.info.pci, severity=Severity.INFO,
                title="The PCIe link is below its maximum while the GPU is idle",
                explanation=(f"{_name(sample)} runs its link {now} (it can do {best}) while "
                             f"{'idle' if busy is None else f'{busy:g} % busy'}. GPUs lower their link speed "
                             "when idle to save power, so this may be normal: check again while a job runs."),
                fix_steps=("Run a GPU job, then `rocmdesk diagnose` (or read current_link_speed) while it runs.",)))
    for pci, limit in sorted(logged.items()):  # GPUs without readable link files
        outcomes.append(_limited_outcome(ctx, pci, f"GPU {pci}", limit, []))
    if not outcomes:
        return Passed(f"{len(samples)} GPU link(s) at their full width and speed")
    return outcomes
