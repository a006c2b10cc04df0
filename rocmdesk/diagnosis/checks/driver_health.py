"""Driver health: what the kernel log and amdgpu's parameters say once the driver runs (firmware it could not load,
PCIe atomics, a small BAR, OverDrive). Sources in resources/checks/driver.yaml. Imported right after ``driver`` so
the Driver area lists these checks after the loading ones."""

from __future__ import annotations

import logging
import re
import shlex

from rocmdesk.diagnosis.checks.driver import (
    AREA,
    MAX_EVIDENCE,
    cmdline_evidence,
    evidence,
    facts_of,
    grub_evidence,
    not_in_etc,
)
from rocmdesk.diagnosis.distro import firmware_step, kernel_arg_steps
from rocmdesk.diagnosis.engine import Failed, Passed, Skipped, check
from rocmdesk.diagnosis.etc_parsers import parse_int
from rocmdesk.diagnosis.facts import HostFacts
from rocmdesk.diagnosis.firmware import FIRMWARE_BASES, FirmwarePlace, locate
from rocmdesk.diagnosis.kmod_config import ModuleParam, effective_param, param_eq
from rocmdesk.diagnosis.model import Evidence, Severity

log = logging.getLogger(__name__)

OVERDRIVE_BIT = 0x4000  # PP_OVERDRIVE_MASK, bit 14 (Linux drivers/gpu/drm/amd/include/amd_shared.h)
GFX_DCS_BIT = 0x80000  # PP_GFX_DCS_MASK, bit 19: off in the default 0xfff7bfff (amdgpu_drv.c)
_FIRMWARE_RE = re.compile(r"Direct firmware load for (amdgpu/\S+) failed with error (-?\d+)")
_ATOMICS_RE = re.compile(r"PCI rejects atomics")
# bounded digit runs: a 5000-digit size would make int() raise (CPython's 4300-digit limit, issue 11 item 3)
_BAR_RE = re.compile(r"\[drm\] Detected VRAM RAM=(\d{1,12})M, BAR=(\d{1,12})M")
_BAR_RESIZE_FAILED_RE = re.compile(r"amdgpu ([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]): BAR 0: (?:failed to assign|"
                                   r"no space for) \[mem size (0x[0-9a-f]{1,16}) 64bit pref\]")
_OVERDRIVE_LOG_RE = re.compile(r"amdgpu: Overdrive is enabled")


# -- kernel log checks -------------------------------------------------------------------------------------------


def _kernel_log(ctx):
    facts = facts_of(ctx)
    if ctx.is_wsl:
        return None, Skipped(ctx.WSL_SKIP_REASON)
    log_ = facts.kernel_log
    if log_ is None:
        return None, Skipped("no readable kernel log: " + "; ".join(facts.kernel_log_problems))
    return log_, None


def _log_name(log_) -> str:
    """The kernel log's source as the pass/skip reasons name it (the journal or dmesg command, or the file)."""
    if log_.truncated:
        return f"{log_.source}, cut at the output size limit: later messages were not read"
    return log_.source


_FATAL_INIT_RE = re.compile(r"Fatal error during GPU init|amdgpu_device_ip_init failed")
# PSP trusted-application firmware: "not a requirement for basic ROCm functionality" (ROCm/legacy-rocm-build#912)
_OPTIONAL_FIRMWARE_RE = re.compile(r"_ta\.bin$")


@check("firmware-load-failure", AREA)
def firmware_load_failure(ctx):
    log_, skipped = _kernel_log(ctx)
    if skipped:
        return skipped
    hits = log_.grep(_FIRMWARE_RE)
    if not hits:
        return Passed(f"no amdgpu firmware load failure in {_log_name(log_)}")
    facts = facts_of(ctx)
    files = sorted({m.group(1) for _line, m in hits})
    places = _firmware_places(ctx, files)
    details = [f"Firmware file(s) the driver could not load: {', '.join(files)}."]
    fatal = log_.grep(_FATAL_INIT_RE)
    unbound = [d for d in facts.amd_display_devices if d.driver != "amdgpu"]
    severity = None
    if not fatal and not unbound:
        # Some firmware is optional: amdgpu logs the failed load and carries on (AMD on vega20_ta.bin,
        # the PSP trusted-application firmware: "not a requirement for basic ROCm functionality",
        # ROCm/legacy-rocm-build#912). Without a failed init it is a warning, not the cause of a dead GPU.
        severity = Severity.WARNING
        details.append("This boot's log has no \"Fatal error during GPU init\" and amdgpu drives every AMD GPU, "
                       "so the GPU initialised anyway.")
        if all(_OPTIONAL_FIRMWARE_RE.search(name) for name in files):
            details.append("The missing file is PSP trusted-application firmware (*_ta.bin), which ROCm does not "
                           "need. Updating the firmware package still removes the message.")
        else:
            # only *_ta.bin is known to be optional: never call a microcode file (gc_*_pfp.bin, ...) optional
            details.append("rocmdesk cannot tell whether the GPU runs with reduced function without it: update "
                           "the firmware package so the driver finds every file it asks for.")
    evidence_lines = [line for line, _m in hits[:MAX_EVIDENCE]] + [line for line, _m in fatal[:2]]
    ev = [evidence(line) for line in evidence_lines]
    states = {p.state for p in places}
    steps: list[str] = []
    for place in places:
        ev.extend(_place_evidence(place))
    image = ctx.initramfs.image_path
    if states & {"root-only"}:
        names = ", ".join(p.name for p in places if p.state == "root-only")
        details.append(f"{names} is on the root file system but not in the initramfs {image}: amdgpu starts from "
                       "the initramfs, before the root file system is mounted, so it finds only the image's copy. "
                       "The image was built before the firmware was installed or updated.")
        steps += [facts.regenerate_initramfs_step(), "Reboot."]
    if "root" in states:
        names = ", ".join(p.name for p in places if p.state == "root")
        why = ctx.initramfs.problem or "no image was read"
        details.append(f"{names} is on the root file system; whether the initramfs holds it could not be checked "
                       f"({why}). If amdgpu starts from the initramfs, an image built before the firmware was "
                       "installed lacks it.")
        steps += [s for s in (facts.regenerate_initramfs_step(), "Reboot.") if s not in steps]
    if "nowhere" in states:
        names = ", ".join(p.name for p in places if p.state == "nowhere")
        details.append(f"{names} is neither in the firmware folders of the root file system nor in the "
                       "initramfs: the firmware package is missing or older than the GPU.")
        steps = [firmware_step(facts.distro_key) + " Newer GPUs may also need a newer kernel, or amdgpu-dkms, "
                 "which ships amdgpu-dkms-firmware.", facts.regenerate_initramfs_step(), "Reboot."] + [
                     s for s in steps if s not in (facts.regenerate_initramfs_step(), "Reboot.")]
    if states & {"both", "image-only"} and not steps:
        details.append("The file is there now (on the root file system and in the initramfs): it was installed "
                       "after this boot, so the driver found nothing at boot time.")
        steps = ["Reboot: the next boot loads the firmware that is installed now.",
                 "If the message comes back, reinstall the firmware package: " + firmware_step(facts.distro_key)]
    if "unknown" in states:
        names = ", ".join(p.name for p in places if p.state == "unknown")
        details.append(f"rocmdesk could not look at the firmware folders (/lib/firmware is not in this root), so "
                       f"it cannot tell whether {names} is installed: check with `ls /lib/firmware/amdgpu/`.")
        if not steps:
            steps = [f"Check whether the file exists: `ls -l /lib/firmware/{files[0]}*`.",
                     "If it does not: " + firmware_step(facts.distro_key),
                     "If it does, rebuild the initramfs so it holds the file: " + facts.regenerate_initramfs_step(),
                     "Reboot."]
    return Failed(evidence=ev, details=" ".join(details), severity=severity, fix_steps=tuple(steps) or None)


def _firmware_places(ctx, files: list[str]) -> list[FirmwarePlace]:
    info = ctx.initramfs
    image = info.image if info.image is not None and info.image.complete else None
    return [locate(ctx.root, name, ctx.kernel_release, image, info.image_path) for name in files]


def _place_evidence(place: FirmwarePlace) -> list[Evidence]:
    out = [Evidence("exists on the root file system", path) for path in (place.on_root or ())]
    if place.on_root == ():
        out.append(Evidence(f"not found in {', '.join(FIRMWARE_BASES)} (also looked for .zst/.xz)",
                            f"/lib/firmware/{place.name}"))
    if place.in_image is True:
        out.append(Evidence(f"in the initramfs as {place.image_member}", place.image_path))
    elif place.in_image is False:
        out.append(Evidence(f"{place.name} is not in the initramfs", place.image_path))
    return out


@check("pcie-atomics-missing", AREA)
def pcie_atomics_missing(ctx):
    log_, skipped = _kernel_log(ctx)
    if skipped:
        return skipped
    hits = log_.grep(_ATOMICS_RE)
    if not hits:
        return Passed(f"no \"PCI rejects atomics\" in {_log_name(log_)}")
    return Failed(evidence=[evidence(line) for line, _m in hits[:MAX_EVIDENCE]])


@check("small-bar", AREA)
def small_bar(ctx):
    log_, skipped = _kernel_log(ctx)
    if skipped:
        return skipped
    hits = log_.grep(_BAR_RE)
    if not hits:
        return Skipped(f"no \"Detected VRAM RAM=..., BAR=...\" line in {_log_name(log_)}")
    small = [(line, m) for line, m in hits if int(m.group(2)) < int(m.group(1)) and int(m.group(2)) <= 256]
    if not small:
        return Passed("every GPU maps its whole VRAM (large BAR)")
    ev = [evidence(line) for line, _m in small[:MAX_EVIDENCE]]
    # amdgpu tries to resize BAR 0 to the VRAM size and falls back to the small window when the PCI core finds no
    # room for it; "that doesn't always work, especially on multi-GPU systems, due to lack of PCI resources"
    # (fxkamd, ROCm/amdgpu#78)
    failed = log_.grep(_BAR_RESIZE_FAILED_RE)
    details = None
    if failed:
        ev += [evidence(line) for line, _m in failed][:max(0, MAX_EVIDENCE - len(ev))]
        sizes = sorted({int(m.group(2), 16) >> 20 for _line, m in failed})
        gpus = sorted({m.group(1) for _line, m in failed})
        details = (f"amdgpu tried to enlarge BAR 0 to {', '.join(f'{s} MiB' for s in sizes)} on {', '.join(gpus)}, "
                   "and the PCI bus had no free address range that large, so the small window stayed. With several "
                   "GPUs this is the usual cause: the firmware must place the BARs above 4 GB (\"Above 4G "
                   "Decoding\") with room for all of them.")
    return Failed(evidence=ev, details=details)


@check("overdrive-enabled", AREA)
def overdrive_enabled(ctx):
    if ctx.is_wsl:
        return Skipped(ctx.WSL_SKIP_REASON)
    facts = facts_of(ctx)
    path = "/sys/module/amdgpu/parameters/ppfeaturemask"
    if facts.ppfeaturemask is None:
        text, why = facts.read_reason(path)
        if text is not None:
            return Skipped(f"{path}: cannot parse {text.strip()!r}")
        return Skipped(why or f"{path} unreadable")
    mask = facts.ppfeaturemask
    if not mask & OVERDRIVE_BIT:
        return Passed(f"ppfeaturemask 0x{mask:08x}: OverDrive (bit 14) off")
    ev = [Evidence(f"ppfeaturemask = 0x{mask:08x} (bit 14, OverDrive, is set)", path, 1)]
    family = facts.distro_key
    # every ppfeaturemask= modprobe hands amdgpu, in kmod's order; the last one counts (facts.module_params)
    settings = [p for p in facts.module_params("amdgpu") if param_eq(p.name, "ppfeaturemask")]
    steps: list[str] = []
    for setting in settings:
        ev.append(_setting_evidence(setting))
        if setting.on_cmdline:
            ev.extend(grub_evidence(facts, "ppfeaturemask"))
            # one reboot, at the end
            steps += kernel_arg_steps(family, setting.source.text,
                                             grub_has_it=facts.grub_has(setting.source.text))[:-1]
        elif setting.source.path.startswith("/etc/modprobe.d/"):
            steps.append(f"Delete `ppfeaturemask={setting.value}` from the `options amdgpu` line "
                         f"{setting.source.path}:{setting.source.line} (as root).")
        else:
            name = setting.source.path.rsplit("/", 1)[-1]
            steps.append(not_in_etc(setting.source.path) + f" Or copy it to /etc/modprobe.d/{name} (a file "
                         f"there hides the same name) and delete `ppfeaturemask={setting.value}` from the copy "
                         "(as root).")
    ev = _unique(ev)
    steps = list(dict.fromkeys(steps))  # two settings on one line, or on the command line: each step once
    if any(not s.on_cmdline for s in settings):
        steps.append(facts.regenerate_initramfs_step())
    details = []
    builtin = facts.amdgpu_builtin
    if builtin is not None:
        # module_params() leaves modprobe.d out for a built-in amdgpu: show the lines that look like settings
        ignored = [line for line in facts.module_options_lines("amdgpu")
                   if "ppfeaturemask" in line.text.replace("-", "_")]
        ev.extend(Evidence(f"{line.text.strip()} (not applied: amdgpu is built in)", line.path, line.line)
                  for line in ignored)
        ev.append(evidence(builtin))
        details.append(f"amdgpu is built into this kernel ({builtin.path} lists it), so it takes its options only "
                       "from the kernel command line (amdgpu.ppfeaturemask=): /etc/modprobe.d and the initramfs "
                       "play no part" + (", and the options line(s) shown there do nothing." if ignored else "."))
    if not settings:
        steps = _overdrive_unknown_source_steps(facts, builtin is not None)
        details.append("No ppfeaturemask setting is in modprobe.d or on this boot's kernel command line now"
                       + (", the only place a built-in amdgpu reads it from" if builtin is not None else "")
                       + ": " + ("rocmdesk cannot tell where it comes from (the kernel may have been started with "
                                 "other arguments than its boot loader entry shows now)."
                                 if builtin is not None else
                                 "it was removed after amdgpu loaded, or the initramfs still holds an older "
                                 "modprobe.d copy (see initramfs-stale); rebuilding the image and rebooting brings "
                                 "the default back."))
    winner = effective_param(settings, "ppfeaturemask")
    if len(settings) > 1 and winner is not None:
        details.append(f"amdgpu gets {len(settings)} ppfeaturemask settings and the last one counts: "
                       f"`{winner.value}` from {_where(winner)}. Remove all of them, or the one before takes over.")
    if winner is not None and parse_int(winner.value) not in (None, mask):
        details.append(f"The mask in use (0x{mask:08x}) is not the configured `{winner.value}`: the configuration "
                       "changed since amdgpu was loaded (it takes effect after the initramfs is rebuilt and the "
                       "machine restarts), or the initramfs still holds an older copy.")
    if facts.kernel_log is not None:
        ev.extend(evidence(line) for line, _m in facts.kernel_log.grep(_OVERDRIVE_LOG_RE)[:2])
    if mask & GFX_DCS_BIT:
        details.append(f"0x{mask:08x} also sets bit 19 (GFX_DCS), which the kernel leaves off by default as "
                       "experimental: a mask like 0xffffffff turns on more than OverDrive. To keep OverDrive alone, "
                       f"use `amdgpu.ppfeaturemask=0x{mask & ~GFX_DCS_BIT:08x}`.")
    states = _tuning_states(facts)
    if states:
        # amdgpu-clocks writes these OverDrive clocks and voltages at every boot; an unstable undervolt then crashes
        # the GPU right after start-up until OverDrive is off (sibradzic/amdgpu-clocks#27)
        ev.extend(Evidence(f"amdgpu-clocks applies this OverDrive state at boot ({', '.join(keys)})", path)
                  for path, keys in states)
        details.append("amdgpu-clocks applies the custom clocks and voltages shown at every boot; if the GPU has "
                       "crashed, hung or shown artifacts since they were set, they are the first suspect, and "
                       "turning OverDrive off stops them from being applied.")
        names = " ".join(shlex.quote(path) for path, _keys in states)
        steps.insert(0, f"If the GPU crashes or shows artifacts, move the custom state aside first (`sudo mkdir -p "
                        f"/root/amdgpu-clocks.bak && sudo mv {names} /root/amdgpu-clocks.bak/`) and reboot; put "
                        "it back with stable values later.")
    if steps:
        steps.append("Reboot. Leave it on if you use the tuning controls and do not need to file driver bug reports.")
    return Failed(evidence=ev, details=" ".join(details) or None, fix_steps=tuple(steps) if steps else None)


_TUNING_KEY_RE = re.compile(r"^(OD_[A-Z_]+|FORCE_[A-Z_]+):?", re.M)


def _tuning_states(facts: HostFacts) -> list[tuple[str, list[str]]]:
    """amdgpu-clocks' state files (/etc/default/amdgpu-custom-state.cardN, sibradzic/amdgpu-clocks README) and the
    OverDrive keys each sets."""
    out = []
    for path in facts.root.glob("/etc/default", "amdgpu-custom-state.*"):
        keys = list(dict.fromkeys(_TUNING_KEY_RE.findall(facts.read(path) or "")))
        if keys:
            out.append((path, keys[:6]))
    return out


def _overdrive_unknown_source_steps(facts: HostFacts, builtin: bool) -> list[str]:
    """Steps when the mask in use has OverDrive but no setting is found where amdgpu reads it now."""
    if builtin:
        return ["Check the boot loader entry you start (GRUB: /etc/default/grub and /boot/grub*/grub.cfg; "
                "systemd-boot: /boot/loader/entries/) for `amdgpu.ppfeaturemask=` and remove it there."]
    return [facts.regenerate_initramfs_step()]


def _setting_evidence(setting: ModuleParam) -> Evidence:
    if setting.on_cmdline:
        return cmdline_evidence(setting.source.text)
    return Evidence(setting.source.text.strip(), setting.source.path, setting.source.line)


def _where(setting: ModuleParam) -> str:
    if setting.on_cmdline:
        return "the kernel command line"
    return f"{setting.source.path}:{setting.source.line}"


def _unique(items: list[Evidence]) -> list[Evidence]:
    """Evidence once each (two settings on one line, or two on the command line, cite it once)."""
    seen = set()
    out = []
    for item in items:
        key = (item.text, item.path, item.line)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out
