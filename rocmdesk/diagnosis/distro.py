"""Distribution families and the commands each one uses, so fix steps name tools that exist there.

One table (:data:`FAMILIES`) answers "how do I install a package, update the firmware, change the kernel command
line and rebuild the initramfs on this machine". The family comes from os-release (``ID``, ``ID_LIKE``,
``VARIANT_ID``) plus ``/run/ostree-booted`` for the image-based Fedora variants (Silverblue, Kinoite, Bazzite,
Bluefin, Aurora), where ``dnf`` and ``grubby`` do not change the booted system and ``rpm-ostree`` does.

Sources for the commands: rpm-ostree(1) ``kargs``/``initramfs``/``install``; Fedora's split of linux-firmware into
``amd-gpu-firmware`` (fedora/linux-firmware.spec since 20230310); Debian's ``firmware-amd-graphics`` (non-free
firmware, firmware-nonfree source package); Arch's ``linux-firmware-amdgpu`` split (archlinux linux-firmware
PKGBUILD, 2025); openSUSE's ``kernel-firmware-amdgpu`` (kernel-firmware.spec split); Mageia's
``kernel-firmware-nonfree`` (Mageia wiki "Nonfree firmware"); NixOS options ``hardware.enableRedistributableFirmware``,
``boot.kernelParams`` and ``boot.initrd.kernelModules`` (nixos/modules, search.nixos.org/options).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

log = logging.getLogger(__name__)

NIXOS_CONFIG = "/etc/nixos/configuration.nix"


@dataclass(frozen=True, slots=True)
class Family:
    key: str  # "debian", "ubuntu", "fedora", "fedora-atomic", "arch", "suse", "mageia", "nixos"
    name: str  # in words, for explanations
    install: str  # a package install command with ``{pkg}``
    firmware_package: str
    update_firmware: str  # the whole step text
    grub_mkconfig: str | None  # the command that regenerates grub.cfg after /etc/default/grub changes
    initramfs_generator: str | None  # the usual generator (None: the image tool does it)
    headers_package: str | None  # kernel headers DKMS needs


FAMILIES: dict[str, Family] = {
    "debian": Family(
        "debian", "Debian", "sudo apt install {pkg}", "firmware-amd-graphics",
        "Install the AMD firmware package (Debian ships it in the non-free-firmware component): "
        "`sudo apt update && sudo apt install firmware-amd-graphics`; a GPU newer than the package needs the one "
        "from backports (`sudo apt install -t $(. /etc/os-release; echo $VERSION_CODENAME)-backports "
        "firmware-amd-graphics`).",
        "sudo update-grub", "initramfs-tools", "linux-headers-$(uname -r)"),
    "ubuntu": Family(
        "ubuntu", "Ubuntu", "sudo apt install {pkg}", "linux-firmware",
        "Update the firmware package: `sudo apt update && sudo apt install linux-firmware`; a GPU newer than the "
        "release needs the HWE kernel and its firmware (`sudo apt install linux-generic-hwe-$(lsb_release -rs)`).",
        "sudo update-grub", "initramfs-tools", "linux-headers-$(uname -r)"),
    "fedora": Family(
        "fedora", "Fedora/RHEL", "sudo dnf install {pkg}", "amd-gpu-firmware",
        "Install or update the AMD firmware package: `sudo dnf install amd-gpu-firmware` (Fedora 38 and later "
        "split it out of linux-firmware; on RHEL and older Fedora it is `sudo dnf upgrade linux-firmware`).",
        "sudo grub2-mkconfig -o /boot/grub2/grub.cfg", "dracut", "kernel-devel-$(uname -r)"),
    "fedora-atomic": Family(
        "fedora-atomic", "an image-based Fedora (Silverblue, Kinoite, Bazzite, Bluefin, Aurora)",
        "sudo rpm-ostree install {pkg}", "amd-gpu-firmware",
        "The firmware comes with the system image: update it with `sudo rpm-ostree upgrade` (Bazzite, Bluefin and "
        "Aurora: `ujust update`) and reboot into the new deployment; `dnf` does not change the booted system.",
        None, None, None),
    "arch": Family(
        "arch", "Arch Linux", "sudo pacman -S {pkg}", "linux-firmware-amdgpu",
        "Update the whole system, firmware included: `sudo pacman -Syu linux-firmware-amdgpu` (since 2025 the AMD "
        "files are in linux-firmware-amdgpu, which linux-firmware pulls in; Arch does not support partial "
        "upgrades).",
        "sudo grub-mkconfig -o /boot/grub/grub.cfg", "mkinitcpio", "linux-headers"),
    "suse": Family(
        "suse", "openSUSE/SLES", "sudo zypper install {pkg}", "kernel-firmware-amdgpu",
        "Install or update the AMD firmware package: `sudo zypper install kernel-firmware-amdgpu` (older releases: "
        "`kernel-firmware`); Tumbleweed updates with `sudo zypper dup`.",
        "sudo grub2-mkconfig -o /boot/grub2/grub.cfg", "dracut", "kernel-default-devel"),
    "mageia": Family(
        "mageia", "Mageia", "sudo urpmi {pkg}", "kernel-firmware-nonfree",
        "Install the non-free firmware package: enable the Nonfree media (`sudo urpmi.update -a` after enabling it "
        "in the Software Media Manager), then `sudo urpmi kernel-firmware-nonfree radeon-firmware`.",
        "sudo grub2-mkconfig -o /boot/grub2/grub.cfg", "dracut", "kernel-desktop-devel-latest"),
    "nixos": Family(
        "nixos", "NixOS", "add `pkgs.{pkg}` to environment.systemPackages", "linux-firmware",
        f"Put `hardware.enableRedistributableFirmware = true;` in {NIXOS_CONFIG} (it adds linux-firmware, the AMD "
        "files included), then `sudo nixos-rebuild switch` and reboot.",
        None, None, None),
}

_ATOMIC_IDS = frozenset({"bazzite", "bluefin", "aurora", "ublue", "secureblue"})
_ATOMIC_VARIANTS = frozenset({"silverblue", "kinoite", "sericea", "onyx", "cosmic-atomic", "atomic",
                              "iot", "coreos"})


def family_key(os_release: dict[str, str], ostree_booted: bool = False) -> str | None:
    """The :data:`FAMILIES` key of a distribution, or None when os-release names none rocmdesk knows."""
    ident = os_release.get("ID", "").lower()
    like = [w.lower() for w in os_release.get("ID_LIKE", "").split()]
    variant = os_release.get("VARIANT_ID", "").lower()
    ids = [ident, *like]
    if ident == "nixos":
        return "nixos"
    if ident == "mageia" or "mageia" in like or ident == "openmandriva":
        return "mageia"  # Mageia's ID_LIKE says "mandriva fedora", but it has neither grubby nor dnf's packages
    if ident in _ATOMIC_IDS or (("fedora" in ids) and (ostree_booted or variant in _ATOMIC_VARIANTS)):
        return "fedora-atomic"
    for word in ids:
        if word in ("ubuntu", "pop", "linuxmint", "elementary", "zorin", "neon"):
            return "ubuntu"
        if word in ("debian", "raspbian", "kali", "devuan"):
            return "debian"
        if word in ("fedora", "rhel", "centos", "rocky", "almalinux", "nobara"):
            return "fedora"
        if word in ("arch", "manjaro", "endeavouros", "cachyos", "garuda"):
            return "arch"
        if word.startswith(("suse", "opensuse", "sles")):
            return "suse"
    return None


def coarse(key: str | None) -> str | None:
    """The older four-way family ("debian", "fedora", "arch", "suse") a key falls under, for code that only
    needs the initramfs generator or the package database; None for image-based and declarative systems."""
    return {"ubuntu": "debian", "debian": "debian", "fedora": "fedora", "mageia": "fedora", "arch": "arch",
            "suse": "suse"}.get(key or "")


def family(key: str | None) -> Family | None:
    return FAMILIES.get(key or "")


def firmware_step(key: str | None) -> str:
    """How to get the distribution's AMD GPU firmware package, or every family's command when unknown."""
    fam = family(key)
    if fam is not None:
        return fam.update_firmware
    return ("Install or update the AMD GPU firmware package of your distribution: `firmware-amd-graphics` (Debian), "
            "`linux-firmware` (Ubuntu), `amd-gpu-firmware` (Fedora), `linux-firmware-amdgpu` (Arch), "
            "`kernel-firmware-amdgpu` (openSUSE), `kernel-firmware-nonfree` (Mageia); image-based systems update "
            "the image (`rpm-ostree upgrade`); NixOS: `hardware.enableRedistributableFirmware = true;`.")


def kernel_arg_steps(key: str | None, arg: str, replacement: str | None = None,
                     grub_has_it: bool | None = None) -> list[str]:
    """How to take ``arg`` off the kernel command line for good (or put ``replacement`` in its place).

    ``grub_has_it`` False means /etc/default/grub was read and does not hold the argument: then no GRUB edit is
    proposed (it would change nothing), and the steps say where else it comes from."""
    if key == "fedora-atomic":
        steps = [f"Run `sudo rpm-ostree kargs --delete={arg}`."]
        if replacement:
            steps.append(f"Then put the rest back: `sudo rpm-ostree kargs --append={replacement}`.")
        return [*steps, "Reboot into the new deployment and check that /proc/cmdline no longer has it."]
    if key == "nixos":
        what = f"replace `\"{arg}\"` with `\"{replacement}\"`" if replacement else f"delete `\"{arg}\"`"
        return [f"In {NIXOS_CONFIG}, {what} in `boot.kernelParams` (editing /boot directly is undone at the next "
                "rebuild).", "Run `sudo nixos-rebuild boot` and reboot."]
    if key == "fedora":  # grubby edits the BLS entries themselves, wherever the argument was put
        steps = [f"Run `sudo grubby --update-kernel=ALL --remove-args={arg}`."]
        if replacement:
            steps.append(f"Then put the rest back: `sudo grubby --update-kernel=ALL --args={replacement}`.")
        return [*steps, "Reboot and check that /proc/cmdline no longer has it."]
    if grub_has_it is False:
        return [f"/etc/default/grub does not have `{arg}`, so editing it changes nothing: the argument comes from "
                "the boot entry you chose (a recovery or \"safe graphics\" entry), was typed at the boot menu, or "
                "is in another boot loader's entry (systemd-boot: the `options` line in /boot/loader/entries/*.conf"
                " or /etc/kernel/cmdline).",
                "Boot the normal entry; if the argument is in a boot entry file, delete it there (as root).",
                "Check after the reboot that /proc/cmdline no longer has it."]
    fam = family(key)
    if replacement:
        edit = (f"Edit /etc/default/grub as root and replace `{arg}` with `{replacement}` in "
                "GRUB_CMDLINE_LINUX_DEFAULT and GRUB_CMDLINE_LINUX.")
    else:
        edit = (f"Edit /etc/default/grub as root and delete `{arg}` from GRUB_CMDLINE_LINUX_DEFAULT "
                "and GRUB_CMDLINE_LINUX.")
    if key == "arch":
        edit += " With systemd-boot, edit the `options` line of the entry in /boot/loader/entries/ instead."
    if fam is not None and fam.grub_mkconfig:
        return [edit, f"Run `{fam.grub_mkconfig}`.", "Reboot and check that /proc/cmdline no longer has it."]
    return [edit, "Regenerate the GRUB configuration: `sudo update-grub` (Debian/Ubuntu), "
            "`sudo grub2-mkconfig -o /boot/grub2/grub.cfg` (Fedora/RHEL, openSUSE, Mageia) or "
            "`sudo grub-mkconfig -o /boot/grub/grub.cfg` (Arch).", "Reboot."]


def initramfs_step_for_image_systems(key: str | None) -> str | None:
    """The initramfs step on systems whose image tool builds it (None elsewhere: the generator step applies)."""
    if key == "fedora-atomic":
        return ("The initramfs comes with the image: `sudo rpm-ostree initramfs --enable` builds a local one "
                "(with /etc's configuration: `sudo rpm-ostree initramfs-etc --track=/etc/modprobe.d/<file>`), then "
                "reboot into the new deployment.")
    if key == "nixos":
        return (f"NixOS builds the initramfs from {NIXOS_CONFIG} (`boot.initrd.kernelModules = [ \"amdgpu\" ];`, "
                "`boot.blacklistedKernelModules`): change it there and run `sudo nixos-rebuild boot`.")
    return None


def distro_family(os_release: dict[str, str]) -> str | None:
    """"debian", "fedora", "arch", "suse" or None: the initramfs generator and package database families.
    Fix steps use the finer key of :func:`family_key` (Ubuntu, Mageia, Fedora Atomic,
    NixOS differ in commands)."""
    return coarse(family_key(os_release))


# -- fix wording that depends on the distribution ----------------------------------------------------


# The generators' own commands, for one kernel: update-initramfs -u alone rebuilds only the NEWEST installed
# kernel's image, so -k names the one wanted (update-initramfs(8)); dracut --kver the same; mkinitcpio -P
# runs every preset (mkinitcpio(8)). The root helper runs the same commands (helper/rocmdesk-helper).
REGENERATE_COMMANDS = {
    "initramfs-tools": "update-initramfs -u -k {kver}",
    "dracut": "dracut -f --kver {kver}",
    "mkinitcpio": "mkinitcpio -P",
}
_FAMILY_GENERATOR = {"debian": "initramfs-tools", "ubuntu": "initramfs-tools", "fedora": "dracut", "suse": "dracut",
                     "mageia": "dracut", "arch": "mkinitcpio"}


def regenerate_command(generator: str, kver: str | None) -> str:
    """The command that rebuilds the image of kernel ``kver`` (``$(uname -r)``, the running one, when unknown),
    with ``sudo`` as every manual root step here says it."""
    return "sudo " + REGENERATE_COMMANDS[generator].format(kver=kver or "$(uname -r)")


def initramfs_regenerate_step(family: str | None, generator: str | None = None, kver: str | None = None) -> str:
    """Regenerate the running kernel's initramfs, once, with the generator the machine uses: the one the
    initramfs inspection detected, else the distribution's usual one; all three when neither is known."""
    generator = generator or _FAMILY_GENERATOR.get(family or "")
    if generator in REGENERATE_COMMANDS:
        return f"Regenerate the running kernel's initramfs once: `{regenerate_command(generator, kver)}`."
    return ("Regenerate the running kernel's initramfs once, with the tool this system uses: "
            f"`{regenerate_command('initramfs-tools', kver)}` (initramfs-tools: Debian, Ubuntu), "
            f"`{regenerate_command('dracut', kver)}` (dracut: Fedora, RHEL, openSUSE) or "
            f"`{regenerate_command('mkinitcpio', kver)}` (mkinitcpio: Arch).")
