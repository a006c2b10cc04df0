"""Driver checks: is amdgpu bound, loaded, allowed to load, and healthy (sources in resources/checks/driver.yaml)."""

from __future__ import annotations

import gzip
import logging
import re
import shlex
import zlib

from rocmdesk.diagnosis.distro import kernel_arg_steps
from rocmdesk.diagnosis.engine import Failed, Passed, Skipped, check
from rocmdesk.diagnosis.facts import HostFacts
from rocmdesk.diagnosis.kmod_config import (
    cmdline_values,
    module_param,
)
from rocmdesk.diagnosis.model import Evidence, Fix, Severity, SourcedLine
from rocmdesk.diagnosis.secure_boot import (
    DKMS_MOK_CERT,
    SECURE_BOOT_VAR,
    UBUNTU_MOK_CERT,
    parse_mokutil_sb_state,
    parse_mokutil_test_key,
)

log = logging.getLogger(__name__)

AREA = "Driver"
MAX_EVIDENCE = 12

_BLACKLIST_RE = re.compile(r"^blacklist\s+amdgpu\s*$")
_INSTALL_FALSE_RE = re.compile(r"^install\s+amdgpu\s+(?:/usr)?/bin/(?:false|true)\b")
# The rule for amdgpu-blacklisted, on kmod's logical lines (kmod_config.kmod_logical_lines): the SAME patterns as the
# root helper's BLACKLIST_LINE_RE (helper/rocmdesk-helper), so the check offers the one-click fix exactly
# for the lines the helper then comments out. kmod splits words at spaces and tabs only (libkmod-config.c).
_LOGICAL_BLACKLIST_RE = re.compile(r"[ \t]*blacklist[ \t]+amdgpu[ \t]*\r?", re.ASCII)
_LOGICAL_INSTALL_RE = re.compile(
    r"[ \t]*install[ \t]+amdgpu[ \t]+(?:/usr)?/bin/(?:false|true)(?:[^A-Za-z0-9_\r\n][^\r\n]*)?[ \t]*\r?", re.ASCII)
# The files the root helper's modprobe-unblacklist-amdgpu accepts (helper MODPROBE_FILE_RE): any other file
# kmod reads (a *.alias, an odd name) gets the manual steps instead of a button the helper would refuse.
_HELPER_MODPROBE_FILE_RE = re.compile(r"/etc/modprobe\.d/[A-Za-z0-9][A-Za-z0-9._-]{0,99}\.conf")
# "module verification failed: ... tainting kernel" is NOT a refusal: it is logged when an unsigned
# module was loaded because Secure Boot is not enforced (amd/MxGPU-Virtualization#18 dmesg), so it is no evidence here.
# Every wording of a refused module: modprobe/systemd-modules-load print EKEYREJECTED as "Key was rejected by service";
# the kernel's module_sig_check() logs "Loading of unsigned module is rejected" (no signature), "Loading of module
# with unavailable key is rejected" (signed, but the key is in no trusted keyring: a MOK never enrolled) and
# "... unsupported crypto is rejected"; with lockdown (Secure Boot on Fedora/Ubuntu kernels) security/lockdown logs
# "Lockdown: <comm>: unsigned module loading is restricted; see man kernel_lockdown.7" (kernel/module/signing.c,
# security/lockdown/lockdown.c; siderolabs/talos#7174, linux-surface/linux-surface#906, RinCat/RTL88x2BU#114).
_KEY_REJECTED_RE = re.compile(
    r"Key was rejected by service|Loading of unsigned module is rejected|"
    r"Loading of module with unavailable key is rejected|Loading of module with unsupported crypto is rejected|"
    r"Lockdown: [^:]{1,64}: unsigned module loading is restricted|PKCS#7 signature not signed with a trusted key")
SIGNED_TITLE_NOT_ENROLLED = "Secure Boot refuses the DKMS amdgpu driver: the key it is signed with is not enrolled"
SIGNED_TITLE_PENDING = ("Secure Boot refuses the DKMS amdgpu driver: its signing key waits to be enrolled at the "
                        "next boot")
SIGNED_TITLE_UNKNOWN = "Secure Boot refuses the DKMS amdgpu driver, most likely because its signing key is not enrolled"


def evidence(line: SourcedLine) -> Evidence:
    return Evidence(text=line.text, path=line.path, line=line.line)


def facts_of(ctx) -> HostFacts:
    return ctx.facts


def grub_evidence(facts: HostFacts, word: str) -> list[Evidence]:
    """Lines of /etc/default/grub that put ``word`` on the command line."""
    text = facts.read("/etc/default/grub")
    if not text:
        return []
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("GRUB_CMDLINE_LINUX") and word in line:
            out.append(Evidence(line.strip(), "/etc/default/grub", number))
    return out


def cmdline_evidence(arg: str) -> Evidence:
    return Evidence(f"kernel command line has `{arg}`", "/proc/cmdline", 1)


# -- amdgpu-not-loaded ------------------------------------------------------------------------------


@check("amdgpu-not-loaded", AREA)
def amdgpu_not_loaded(ctx):
    if ctx.is_wsl:
        return Skipped(ctx.WSL_SKIP_REASON)
    facts = facts_of(ctx)
    if facts.pci_devices is None:
        return Skipped("this root has no readable /sys/bus/pci/devices")
    gpus = facts.amd_display_devices
    if not gpus:
        return Passed("no AMD display-class device on the PCI bus")
    unbound = [d for d in gpus if d.driver != "amdgpu"]
    if not unbound:
        return Passed(f"amdgpu drives {len(gpus)} AMD GPU(s)")
    ev = []
    details = []
    for dev in unbound:
        bound = f"bound to {dev.driver}" if dev.driver else "no driver bound"
        ev.append(Evidence(f"[{dev.ids}] class 0x{dev.pci_class or 0:06x}: {bound}", f"{dev.path}/driver"))
        if dev.driver == "radeon":
            details.append(
                f"{dev.address} is driven by the old radeon kernel driver. The kernel gives radeon only "
                "the older GCN 1/2 and pre-GCN generations by default; ROCm does not support those "
                "generations, so compute will not work on this card either way.")
        elif dev.driver == "vfio-pci":
            details.append(f"{dev.address} is bound to vfio-pci (passed through to a virtual machine).")
    ev.extend(evidence(line) for line in facts.amdgpu_loaded_evidence())
    # a GPU deliberately handed to a virtual machine is not a fault on this host
    passthrough = all(d.driver == "vfio-pci" for d in unbound)
    steps = None
    if facts.amdgpu_loaded and any(d.driver is None for d in unbound):
        # loaded but not bound: a blacklist or nomodeset cannot be the cause and `modprobe amdgpu` does nothing
        addresses = ", ".join(d.address for d in unbound if d.driver is None)
        details.append(f"amdgpu is loaded but did not take {addresses}: it either failed to initialise the card "
                       "(missing firmware, an init error) or this kernel does not know the card's device ID.")
        steps = (f"Look for the card in the kernel messages: `sudo dmesg | grep -iE 'amdgpu|{addresses.split(',')[0]}'`"
                 " (\"Fatal error during GPU init\", \"Direct firmware load ... failed\").",
                 "If the card is newer than the kernel, install a newer kernel (Ubuntu: the HWE kernel) and the "
                 "current linux-firmware package, then reboot.",
                 "Check afterwards: `lspci -nnk -d 1002:` must say `Kernel driver in use: amdgpu` for the card.")
    return Failed(evidence=ev, details=" ".join(details) or None, subject=", ".join(d.address for d in unbound),
                  severity=Severity.INFO if passthrough else None, fix_steps=steps)


# -- amdgpu-blacklisted ---------------------------------------------------------------------------------


def blocks_amdgpu(logical: str) -> bool:
    """True for a logical modprobe.d line that stops amdgpu from loading (modprobe.d(5) blacklist/install)."""
    return bool(_LOGICAL_BLACKLIST_RE.fullmatch(logical) or _LOGICAL_INSTALL_RE.fullmatch(logical))


def _blacklist_lines(facts: HostFacts) -> list[SourcedLine]:
    """Logical modprobe.d lines (kmod's reading: facts.modprobe_lines) that stop amdgpu from loading."""
    return [SourcedLine(x.path, x.line, x.text.strip()) for x in facts.modprobe_lines if blocks_amdgpu(x.text)]


def not_in_etc(path: str) -> str:
    """Where a modprobe.d file outside /etc comes from, and how to find its owner."""
    if path.startswith("/run/"):
        return (f"{path} is written at boot by a program (nothing in /run survives a reboot): find which one "
                "creates it.")
    quoted = shlex.quote(path)  # kmod reads *.conf names with spaces; the command must survive a paste
    return (f"{path} belongs to an installed package: find it with `dpkg -S {quoted}` or `rpm -qf {quoted}` "
            "and remove that package.")


def _generator_known(ctx) -> bool:
    """True when the initramfs generator can be told by the rule the root helper uses too."""
    from rocmdesk.diagnosis.initramfs import choose_generator, detect_generators

    generators = detect_generators(ctx.root)
    if len(generators) == 1:
        return True
    release = ctx.kernel_release
    return bool(generators) and release is not None and choose_generator(ctx.root, generators, release) is not None


@check("amdgpu-blacklisted", AREA)
def amdgpu_blacklisted(ctx):
    if ctx.is_wsl:
        return Skipped(ctx.WSL_SKIP_REASON)
    facts = facts_of(ctx)
    by_file: dict[str, list[SourcedLine]] = {}
    for line in _blacklist_lines(facts):
        by_file.setdefault(line.path, []).append(line)
    outcomes: list = []
    loaded = facts.amdgpu_loaded
    builtin = facts.amdgpu_builtin
    for path, lines in by_file.items():
        only_blacklist = all(_BLACKLIST_RE.match(x.text) for x in lines)
        severity = Severity.WARNING if (loaded and only_blacklist) else None
        details = None
        if severity:
            stale = _image_lacks(ctx, path) if builtin is None else None
            details = (f"amdgpu is loaded right now because the initramfs loaded it at boot: the image holds amdgpu "
                       f"but {stale}, so the blacklist does nothing until the image is rebuilt (see "
                       "initramfs-stale)." if stale else
                       "amdgpu is loaded right now (something ran `modprobe amdgpu` explicitly), but the "
                       "blacklist stops it from loading on its own at the next boot.")
        if builtin is not None:
            severity, details = Severity.INFO, _builtin_blacklist_note(builtin)
        if _HELPER_MODPROBE_FILE_RE.fullmatch(path):
            # the helper comments the lines out AND rebuilds the initramfs, so it is one click only when the
            # shared generator rule names the generator (initramfs.choose_generator)
            fix = Fix("modprobe-unblacklist-amdgpu", True,
                      (f"Comment out the amdgpu line(s) in {path} (a backup is kept).",
                       facts.regenerate_initramfs_step(), "Reboot."),
                      ("modprobe-unblacklist-amdgpu", path) if _generator_known(ctx) else None)
            if fix.action is None:
                details = " ".join(filter(None, [details, "Which tool builds the initramfs could not be told, so "
                                                 "no one-click fix is offered."]))
        elif path.startswith("/etc/modprobe.d/"):
            fix = Fix("modprobe-unblacklist-amdgpu-manual", True,
                      (f"Put a `#` in front of the amdgpu line(s) in {path} (as root; keep a copy of the file).",
                       facts.regenerate_initramfs_step(), "Reboot."))
        else:
            mask = shlex.quote("/etc/modprobe.d/" + path.rsplit("/", 1)[-1])
            steps = [not_in_etc(path) + f" Or mask it: create an empty file with the same name (`sudo touch {mask}`; "
                     "a file in /etc/modprobe.d hides the same name elsewhere).",
                     facts.regenerate_initramfs_step(), "Reboot."]
            fix = Fix("modprobe-unblacklist-amdgpu-manual", True, tuple(steps))
        ev = [evidence(x) for x in lines]
        kubelet = _kubernetes_node(facts)
        if kubelet is not None:
            # AMD's GPU Operator blacklists the inbox amdgpu and has KMM load its own driver from a container
            # (ROCm/gpu-operator PR #121 docs; #330): on such a node the blacklist is wanted, so no removal is offered,
            # and with amdgpu loaded (by the operator) it is no fault at all
            if loaded:
                severity = Severity.INFO
            ev.append(Evidence("exists: this machine is a Kubernetes node", kubelet))
            details = " ".join(filter(None, [details, "This is a Kubernetes node: AMD's GPU Operator blacklists the "
                                             "inbox amdgpu on purpose and loads its own driver, so if the operator "
                                             "manages this node the blacklist is right and must stay"
                                             + ("." if loaded else " (look at the operator's driver pods instead)."
                                                )]))
            fix = Fix(fix.id, fix.privileged,
                      ("If AMD's GPU Operator manages this node, leave the blacklist as it is (the operator loads "
                       "its own amdgpu); otherwise:", *fix.steps), None)
        outcomes.append(Failed(evidence=ev, subject=path, fix=fix, severity=severity, details=details))
    args = facts.cmdline_args
    for key in ("modprobe.blacklist", "module_blacklist"):
        for value in cmdline_values(args, key):
            names = [v.strip() for v in value.split(",")]
            if "amdgpu" in names:
                arg = f"{key}={value}"
                # keep the other modules the user blacklisted (e.g. nouveau): only amdgpu leaves the list
                rest = ",".join(n for n in names if n and n != "amdgpu")
                steps = kernel_arg_steps(facts.distro_key, arg, f"{key}={rest}" if rest else None,
                                                 facts.grub_has(key))
                outcomes.append(Failed(
                    evidence=[cmdline_evidence(arg), *grub_evidence(facts, key)], subject="/proc/cmdline",
                    fix=Fix("remove-kernel-arg", True, tuple(steps)),
                    severity=Severity.INFO if builtin is not None else None,
                    details=_builtin_blacklist_note(builtin) if builtin is not None else None))
    if outcomes:
        return outcomes
    looked = facts.modprobe_dirs
    if not looked and not args:
        return Skipped("no modprobe.d folder and no /proc/cmdline in this root")
    return Passed(f"no amdgpu blacklist in {', '.join(looked) or 'modprobe.d'} or on the command line")


KUBERNETES_MARKERS = ("/var/lib/kubelet", "/etc/kubernetes")


def _kubernetes_node(facts: HostFacts) -> str | None:
    """The folder that shows this machine is a Kubernetes node (kubelet's state or config), or None."""
    return next((path for path in KUBERNETES_MARKERS if facts.root.is_dir(path)), None)


def _image_lacks(ctx, path: str) -> str | None:
    """Why the running kernel's initramfs does not carry the blacklist in ``path`` although it holds amdgpu (words for
    the details), or None when it does, or cannot be told. An image built before the line was written loads amdgpu at
    boot whatever /etc/modprobe.d now says: Ubuntu 22.04 kept loading a freshly blacklisted amdgpu until
    `update-initramfs -u` (ROCm/gpu-operator#330)."""
    if not path.startswith("/etc/modprobe.d/"):
        return None
    try:
        info = ctx.initramfs
    except Exception:  # the image only shapes the words here; initramfs-stale reports on it itself
        log.debug("initramfs unreadable for the blacklist wording", exc_info=True)
        return None
    image = getattr(info, "image", None)
    if image is None or not info.modules:
        return None
    member = path.lstrip("/")
    copy = image.captured.get(member)
    if copy is not None and copy.data is not None:
        lines = copy.data.decode("utf-8", "replace").splitlines()
        return None if any(blocks_amdgpu(ln) for ln in lines) else f"its copy of {path} does not blacklist it"
    if image.member(member) is not None:
        return None  # a listing without bytes: initramfs-stale compares size and time
    try:
        newer = ctx.root.stat(path).st_mtime > image.mtime
    except OSError:
        return None
    return f"not {path}, which was written after the image was built" if newer else None


def _builtin_blacklist_note(builtin: SourcedLine) -> str:
    # modprobe.blacklist= and modprobe.d are read by kmod's modprobe, which never loads a built-in driver;
    # module_blacklist= is checked by the kernel's module loader only (kernel-parameters.rst: "Do not load a
    # comma-separated list of modules"); initcall_blacklist= is the switch for built-in code ("Useful for
    # debugging built-in modules and initcalls"); amdgpu's init function is amdgpu_init (amdgpu_drv.c).
    return (f"amdgpu is built into this kernel ({builtin.path}:{builtin.line} lists {builtin.text}), and a "
            "blacklist does not reach a built-in driver: modprobe.d lines, modprobe.blacklist= and "
            "module_blacklist= act on loadable modules only, so amdgpu still starts (a built-in driver is "
            "switched off with `initcall_blacklist=amdgpu_init` on the kernel command line). The line does "
            "nothing on this kernel, but it stops amdgpu on a kernel that has it as a module.")


# -- nomodeset ----------------------------------------------------------------------------------------------


@check("nomodeset", AREA)
def nomodeset(ctx):
    if ctx.is_wsl:
        return Skipped(ctx.WSL_SKIP_REASON)
    facts = facts_of(ctx)
    text, why = facts.read_reason("/proc/cmdline")
    if text is None:
        return Skipped(why or "/proc/cmdline unreadable")
    args = facts.cmdline_args
    modeset = module_param(args, "amdgpu", "modeset")
    has_nomodeset = "nomodeset" in args
    loaded = facts.amdgpu_loaded
    family = facts.distro_key
    recovery = recovery_entry_args(args)
    if modeset == "0":
        arg = "amdgpu.modeset=0"
        return Failed(evidence=[cmdline_evidence(arg), *grub_evidence(facts, "amdgpu.modeset")],
                      fix=Fix("remove-kernel-arg", True, tuple(kernel_arg_steps(
                          family, arg, grub_has_it=facts.grub_has("amdgpu.modeset=0")))))
    if not has_nomodeset:
        return Passed("neither nomodeset nor amdgpu.modeset=0 on the command line")
    grub_ev = grub_evidence(facts, "nomodeset")
    ev = [cmdline_evidence("nomodeset"), *grub_ev]
    if recovery and not grub_ev:
        # the recovery entry adds `recovery nomodeset` itself (Ubuntu's 10_linux): nothing to edit, boot the other one
        return Failed(evidence=[*ev, *(cmdline_evidence(a) for a in recovery)], fix=Fix(
            "boot-normal-entry", False, _recovery_steps(facts)), title=RECOVERY_TITLE,
            explanation=RECOVERY_EXPLANATION.format(args=" ".join(recovery)),
            severity=Severity.WARNING if loaded else None)
    fix = Fix("remove-kernel-arg", True, tuple(kernel_arg_steps(
        family, "nomodeset", grub_has_it=facts.grub_has("nomodeset"))))
    if modeset == "1":
        if loaded is False:
            return Failed(evidence=[*ev, cmdline_evidence("amdgpu.modeset=1")], fix=fix,
                          details="amdgpu.modeset=1 overrides nomodeset only on newer kernels; on this "
                                  "one amdgpu did not load.")
        return Passed("nomodeset is set, but amdgpu.modeset=1 overrides it and amdgpu is loaded")
    if loaded:
        return Failed(evidence=ev, fix=fix, severity=Severity.WARNING,
                      details="amdgpu is loaded anyway on this kernel, but nomodeset still turns off "
                              "display drivers and should not be there.")
    return Failed(evidence=ev, fix=fix)


RECOVERY_ARGS = ("recovery", "single", "emergency", "rescue", "systemd.unit=rescue.target",
                 "systemd.unit=emergency.target")
RECOVERY_TITLE = "You booted the recovery entry, which turns the GPU driver off"
RECOVERY_EXPLANATION = (
    "The kernel command line has `{args}` and `nomodeset`: this boot was started from the boot menu's recovery "
    "(\"Advanced options\", \"recovery mode\", \"single user\") entry, which adds `nomodeset` on purpose so a "
    "broken graphics setup can be repaired. With `nomodeset` amdgpu does not load, so there is no /dev/kfd and no GPU "
    "compute in this boot. /etc/default/grub does not have `nomodeset`, so there is nothing to remove: the normal "
    "entry boots without it.")


def recovery_entry_args(args: list[str]) -> list[str]:
    """The words on the command line that mark a recovery/single-user boot (Ubuntu's and Debian's GRUB recovery
    entry adds ``recovery nomodeset``; Fedora's rescue entry and ``single``/``systemd.unit=rescue.target``)."""
    return [a for a in args if a in RECOVERY_ARGS or a == "S" or a == "1"]


def _recovery_steps(facts: HostFacts) -> tuple[str, ...]:
    steps = ["Reboot and choose the normal entry in the boot menu (not \"recovery mode\" under \"Advanced "
             "options\")."]
    text = facts.read("/etc/default/grub") or ""
    if "GRUB_DEFAULT=saved" in text.replace('"', "") or "GRUB_SAVEDEFAULT=true" in text.replace('"', ""):
        steps.append("This GRUB starts the entry chosen last time (GRUB_DEFAULT=saved): pick the normal entry once "
                     "and it stays the default.")
    steps.append("Check after the reboot that /proc/cmdline has neither `recovery` nor `nomodeset`.")
    return tuple(steps)


# -- secure-boot-blocks-dkms --------------------------------------------------------------------------------


@check("secure-boot-blocks-dkms", AREA)
def secure_boot_blocks_dkms(ctx):
    if ctx.is_wsl:
        return Skipped(ctx.WSL_SKIP_REASON)
    facts = facts_of(ctx)
    if not facts.kernel_release:
        return Skipped("the running kernel release is unknown (/proc/sys/kernel/osrelease)")
    modules = facts.dkms_amdgpu_modules()
    if not modules:
        return Passed(f"no DKMS amdgpu module for {facts.kernel_release} (the in-tree driver is used)")
    enabled, sb_text = facts.secure_boot
    sb_path: str | None = SECURE_BOOT_VAR
    state, state_why = facts.mokutil("--sb-state") if enabled is not False else (None, "")
    sb_enabled, shim_off = parse_mokutil_sb_state(state.stdout) if state is not None else (None, False)
    if enabled is None and sb_enabled is not None and state is not None:  # efivar unreadable: mokutil reads it too
        enabled, sb_text, sb_path = sb_enabled, _first_line(state.stdout), _output_path(state)
    if enabled is None:
        refused = ([line for line, _m in facts.kernel_log.grep(_KEY_REJECTED_RE)[:MAX_EVIDENCE]]
                   if facts.kernel_log is not None and facts.amdgpu_loaded is False else [])
        if not refused:
            return Skipped(f"Secure Boot state unknown: {sb_text}" + (f"; {state_why}" if state_why else ""))
        # the state cannot be read (a snapshot without efivars), but the kernel log shows modules refused for their
        # signature, which only happens when signatures are enforced
        enabled, sb_text, sb_path = True, f"Secure Boot state not readable ({sb_text}); the kernel enforces " \
            "module signatures (see the refusal below)", None
    if not enabled:
        return Passed(f"DKMS amdgpu present; Secure Boot is off ({sb_text})")
    if shim_off:
        return Passed("DKMS amdgpu present; Secure Boot is on but shim's validation is turned off "
                      "(mokutil --sb-state), so the kernel does not demand signed modules")
    loaded = facts.amdgpu_loaded
    if loaded is None:
        return Skipped("cannot tell whether amdgpu is loaded (/proc/modules and /sys/module unreadable)")
    if loaded:
        return Passed("DKMS amdgpu is loaded with Secure Boot on (its signing key is enrolled)")
    ev = [Evidence(f"DKMS amdgpu module for {facts.kernel_release}", m) for m in modules]
    ev.append(Evidence(sb_text, sb_path))
    ev.extend(evidence(x) for x in facts.amdgpu_loaded_evidence())
    rejected = []
    if facts.kernel_log is not None:
        rejected = [line for line, _m in facts.kernel_log.grep(_KEY_REJECTED_RE)[:MAX_EVIDENCE]]
        ev.extend(evidence(line) for line in rejected)
    key = facts.dkms_mok_certificate
    if key is None:
        return _no_signing_key(facts, ev)
    ev.append(Evidence("DKMS signing certificate (public key)", key))
    result, why = facts.mokutil("--test-key", key)
    enrolled = parse_mokutil_test_key(result.stdout, result.stderr) if result is not None else None
    if result is not None:
        ev.append(Evidence(_first_line(result.stdout) or _first_line(result.stderr) or "(no output)",
                           _output_path(result), 1))
    if enrolled == "enrolled":
        details = [f"The DKMS signing key {key} is enrolled, so Secure Boot accepts modules signed with it: "
                   "the missing signature key is probably not why amdgpu is not loaded. Look at the other Driver "
                   "checks (amdgpu-not-loaded, firmware-load-failure) and the kernel log."]
        checks = ["Look for the reason in the kernel messages: `sudo dmesg | grep -iE 'amdgpu|module'`.",
                  "Try loading it and read the error: `sudo modprobe amdgpu`."]
        if rejected:
            details.append("The kernel log still shows a module refused for its signature: this module was "
                           "signed with another key than the enrolled one (a key made again after enrolling).")
            checks.insert(0, "Rebuild the module so DKMS signs it with the enrolled key: reinstall amdgpu-dkms "
                            "(`sudo apt install --reinstall amdgpu-dkms` or `sudo dnf reinstall amdgpu-dkms`), "
                            "then reboot.")
        return Failed(evidence=ev, severity=Severity.WARNING, details=" ".join(details), fix_steps=tuple(checks),
                      title="Secure Boot is on and the DKMS signing key is enrolled, but amdgpu is not loaded")
    if enrolled == "pending":
        return Failed(evidence=ev, title=SIGNED_TITLE_PENDING,
                      details=f"The key {key} was imported and waits to be confirmed at the next "
                      "boot (mokutil --test-key: already in the enrollment request).",
                      fix_steps=("Reboot; in the blue MokManager screen choose \"Enroll MOK\", \"Continue\", "
                                 "\"Yes\" and type the password chosen at `mokutil --import`.",
                                 f"After the reboot `mokutil --test-key {key}` must say it is already enrolled; "
                                 "check `lsmod | grep amdgpu`."))
    steps = _enroll_steps(key)
    if enrolled == "not-enrolled":
        return Failed(evidence=ev, title=SIGNED_TITLE_NOT_ENROLLED,
                      details=f"mokutil confirms that the DKMS signing key {key} is not enrolled, so "
                      "the firmware's Secure Boot refuses the module signed with it.", fix_steps=steps)
    if any("unavailable key" in line.text for line in rejected):
        return Failed(evidence=ev, title=SIGNED_TITLE_NOT_ENROLLED, fix_steps=steps,
                      details=f"The kernel says \"Loading of module with unavailable key is rejected\": the module is "
                              f"signed, but with a key no trusted keyring holds, so the DKMS key {key} was never "
                              "enrolled (or a new key was made after enrolling).")
    unknown = why or "mokutil --test-key gave output rocmdesk does not recognise"
    return Failed(evidence=ev, fix_steps=steps, title=SIGNED_TITLE_UNKNOWN,
                  details=f"Whether the key {key} is enrolled could not be checked ({unknown}): if "
                          f"`mokutil --test-key {key}` says it is already enrolled, the cause is elsewhere.")


def _enroll_steps(key: str) -> tuple[str, ...]:
    # the user's own steps: rocmdesk never runs mokutil --import (the enrolment needs the console at boot)
    return (f"Enrol the DKMS signing key: `sudo mokutil --import {key}` and choose a one-time password.",
            "Reboot; in the blue MokManager screen choose \"Enroll MOK\", \"Continue\", \"Yes\" and type that "
            "password.",
            f"After the reboot `mokutil --test-key {key}` must say it is already enrolled; check "
            "`lsmod | grep amdgpu`.",
            "Alternative without signing: remove amdgpu-dkms and use the distribution's signed in-tree amdgpu "
            "driver.",
            "Or, as the ROCm installation FAQ offers when you prefer not to sign, turn Secure Boot off in the "
            "firmware setup.")


def _no_signing_key(facts: HostFacts, ev: list[Evidence]):
    """Secure Boot on, amdgpu not loaded, and no DKMS signing certificate anywhere: DKMS never signed it."""
    candidates = facts.dkms_mok_candidates()
    setting = facts.dkms_mok_certificate_setting
    if setting is not None:
        ev.append(Evidence(f"mok_certificate={setting.text}", setting.path, setting.line))
    ev.extend(Evidence("does not exist", path) for path in candidates)
    key = candidates[0] if setting is not None else (UBUNTU_MOK_CERT if facts.distro_family == "debian"
                                                      else DKMS_MOK_CERT)
    steps = ("Rebuild amdgpu so DKMS makes a signing key and signs the module: reinstall amdgpu-dkms "
             "(`sudo apt install --reinstall amdgpu-dkms` or `sudo dnf reinstall amdgpu-dkms`). DKMS 3 creates "
             f"{DKMS_MOK_CERT} when it is missing; Ubuntu's DKMS uses {UBUNTU_MOK_CERT} "
             "(`sudo update-secureboot-policy --new-key` makes it).",
             f"Check that the certificate now exists: `ls -l {key}`.",
             *_enroll_steps(key))
    return Failed(evidence=ev, fix_steps=steps,
                  details="There is no DKMS signing certificate on this system, so DKMS never signed the amdgpu "
                          "module, and Secure Boot refuses unsigned modules. (DKMS before version 3 does not sign "
                          "modules at all.)")


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")[:200]


def _output_path(result) -> str:
    return f"{' '.join(result.argv)} (output)"


# -- amdgpu-pro-leftover ------------------------------------------------------------------------------------


def _is_pro_package(name: str) -> bool:
    # amdgpu-core, amdgpu-dkms and amdgpu-install belong to the normal ROCm installer stack
    # (legacy-rocm-build#1748, #1864 install logs); only the *amdgpu-pro* packages are the
    # proprietary stack AMD says not to keep beside ROCm (legacy-rocm-build#1528).
    return "amdgpu-pro" in name


def _is_rocm_package(name: str) -> bool:
    return name.startswith(("rocm", "hip-runtime-amd", "hsa-rocr", "rocminfo"))


@check("amdgpu-pro-leftover", AREA)
def amdgpu_pro_leftover(ctx):
    facts = facts_of(ctx)
    ev: list[Evidence] = []
    rocm = facts.root.is_dir("/opt/rocm") or facts.rocm_version is not None
    dpkg = facts.dpkg_status
    source = None
    if dpkg is not None:
        source = "/var/lib/dpkg/status"
        for name in sorted(dpkg):
            version, line = dpkg[name]
            if _is_pro_package(name):
                ev.append(Evidence(f"Package: {name} ({version}) installed", source, line))
            rocm = rocm or _is_rocm_package(name)
    else:
        other = facts.other_package_list()
        if other is not None:
            source, names = other
            for name in names:
                if _is_pro_package(name):
                    ev.append(Evidence(f"{name} installed", f"{source} (output)"))
                rocm = rocm or _is_rocm_package(name)
    if facts.root.is_dir("/opt/amdgpu-pro"):
        ev.append(Evidence("folder exists", "/opt/amdgpu-pro"))
    for name in facts.root.listdir("/etc/apt/sources.list.d"):
        if "amdgpu-pro" in name:
            ev.append(Evidence(f"APT source {name}", f"/etc/apt/sources.list.d/{name}"))
    if source is None and not ev:
        return Skipped("no package database readable (/var/lib/dpkg/status, or rpm/pacman output)")
    if not ev:
        return Passed("no amdgpu-pro package or folder")
    if not rocm:
        return Passed("amdgpu-pro is installed, but ROCm is not (nothing to conflict with)")
    return Failed(evidence=ev[:MAX_EVIDENCE])


# -- kfd-missing ------------------------------------------------------------------------------------------------


@check("kfd-missing", AREA)
def kfd_missing(ctx):
    if ctx.is_wsl:
        return Skipped(ctx.WSL_SKIP_REASON)
    facts = facts_of(ctx)
    loaded = facts.amdgpu_loaded
    if loaded is None:
        return Skipped("cannot tell whether amdgpu is loaded (/proc/modules and /sys/module unreadable)")
    if not loaded:
        return Skipped("amdgpu is not loaded (see amdgpu-not-loaded)")
    if not facts.root.is_dir("/dev"):
        return Skipped("this root has no /dev folder")
    if facts.root.exists("/dev/kfd"):
        return Passed("/dev/kfd exists")
    ev = [evidence(x) for x in facts.amdgpu_loaded_evidence()]
    ev.append(Evidence("does not exist", "/dev/kfd"))
    details = []
    steps: tuple[str, ...] | None = None
    config, text = kernel_config(facts)
    if config and text is not None:
        lines = text.splitlines()
        hit = next(((n, ln) for n, ln in enumerate(lines, start=1) if ln.startswith("# CONFIG_HSA_AMD is not set")),
                   None)
        absent = hit is None and not any(ln.startswith("CONFIG_HSA_AMD=") for ln in lines) \
            and any(ln.startswith("CONFIG_DRM_AMDGPU=") for ln in lines)
        if hit or absent:
            ev.append(Evidence(hit[1], config, hit[0]) if hit else Evidence("no CONFIG_HSA_AMD line", config))
            details.append("This kernel was built without KFD (CONFIG_HSA_AMD), so amdgpu has no compute "
                           "interface and no ROCm package can add one.")
            # what solved it: the kernel rebuilt with the option (ROCm/legacy-rocm-build#1643 on Gentoo;
            # siderolabs/pkgs PR #893 for Talos, flatcar/scripts PR #4053 for Flatcar)
            steps = ("Rebuild the kernel with `CONFIG_HSA_AMD=y` (menuconfig: Device Drivers > Graphics support > "
                     "AMD GPU > HSA kernel driver for AMD GPU devices; it selects CONFIG_DRM_AMDGPU_USERPTR), "
                     "install it and reboot: /dev/kfd then appears.",
                     "If you did not build this kernel yourself, switch to a kernel of your distribution built with "
                     "CONFIG_HSA_AMD=y, or ask its maintainers to enable it.")
    if facts.in_container:
        details.append("This looks like a container: start it with `--device=/dev/kfd --device=/dev/dri` "
                       "(and the render group) so the GPU devices are passed in.")
    return Failed(evidence=ev, details=" ".join(details) or None, fix_steps=steps)


def kernel_config(facts: HostFacts) -> tuple[str | None, str | None]:
    """(path, text) of the running kernel's build configuration: /boot/config-<release>, else the kernel's own
    /proc/config.gz (CONFIG_IKCONFIG_PROC; Gentoo, Flatcar and Talos kernels have no /boot config). (None, None)
    when neither is readable; a corrupt config.gz is logged and treated as unreadable."""
    kver = facts.kernel_release
    if kver:
        path = f"/boot/config-{kver}"
        text = facts.read(path)
        if text is not None:
            return path, text
    try:
        raw = facts.root.read_bytes("/proc/config.gz")
    except OSError:
        return None, None
    try:
        return "/proc/config.gz", gzip.decompress(raw).decode("utf-8", "replace")
    except (OSError, EOFError, zlib.error) as exc:
        log.info("/proc/config.gz is not a readable gzip file: %s", exc)
        return None, None
