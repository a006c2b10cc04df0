"""Realistic host roots for the diagnosis: a clean workstation, and small mutators that break it.

``clean_workstation(tmp)`` builds an Ubuntu 24.04 desktop with an RX 7900 XTX (gfx1100) on the
in-tree amdgpu driver, ROCm 6.2.4 from amdgpu-install (no DKMS), a user ``alice`` in the render
and video groups, Secure Boot on, an Xorg log from a past X session, an ollama service, an
up-to-date initramfs-tools image holding amdgpu, and a ComfyUI whose venv has a ROCm torch
(``comfyui_process`` starts it). On it every check runs and none fires (nothing is skipped for
lack of input). Each mutator changes one thing, the way it goes wrong on real machines, so tests
compose them: ``root = clean_workstation(tmp); blacklist_amdgpu(root)``.

Device nodes are snapshot placeholders (rocmdesk.host.PLACEHOLDER_FORMAT), so the trees work the
same when the tests do not run as root.
"""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

from rocmdesk.host import PLACEHOLDER_FORMAT
from tests.support.initramfs_images import fake_module, install_kernel, install_matching_initramfs
from tests.support.procs import environ_bytes, fake_process
from tests.support.python_envs import install_healthy_comfyui
from tests.support.sysfs_tree import GpuSpec, build_root

KERNEL = "6.8.0-51-generic"
USER = "alice"
UID = 1000
RENDER_GID = 992
VIDEO_GID = 44
GPU_PCI = "0000:03:00.0"
COMFYUI_PID = 5120
COMFYUI = f"/home/{USER}/ComfyUI"
SECURE_BOOT_NAME = "SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"


def write(root: Path, host_path: str, text: str | bytes, mode: int | None = None) -> Path:
    path = root / host_path.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    if mode is not None:
        os.chmod(path, mode)
    return path


def append(root: Path, host_path: str, text: str) -> Path:
    path = root / host_path.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fh.write(text)
    return path


def device_node(root: Path, host_path: str, major: int, minor: int, gid: int, mode: int = 0o660,
                uid: int = 0, acl: bytes | None = None) -> Path:
    """A character device as a snapshot placeholder (what a support bundle holds)."""
    record = {"format": PLACEHOLDER_FORMAT, "type": "char", "mode": f"{mode:04o}", "uid": uid, "gid": gid,
              "owner": None, "group": None, "major": major, "minor": minor,
              "xattrs": {"system.posix_acl_access": acl.hex()} if acl else {}}
    return write(root, host_path, json.dumps(record) + "\n")


def _pci_device(root: Path, address: str, vendor: int, device: int, pci_class: int, driver: str | None) -> None:
    sys_dir = root / "sys"
    dev = sys_dir / "devices" / "pci0000:00" / address
    dev.mkdir(parents=True, exist_ok=True)
    (dev / "vendor").write_text(f"0x{vendor:04x}\n")
    (dev / "device").write_text(f"0x{device:04x}\n")
    (dev / "class").write_text(f"0x{pci_class:06x}\n")
    uevent = f"PCI_CLASS={pci_class:X}\nPCI_ID={vendor:04X}:{device:04X}\nPCI_SLOT_NAME={address}\n"
    if driver:
        uevent = f"DRIVER={driver}\n" + uevent
        drivers = sys_dir / "bus" / "pci" / "drivers" / driver
        drivers.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(drivers, dev), dev / "driver")
    (dev / "uevent").write_text(uevent)
    link = sys_dir / "bus" / "pci" / "devices" / address
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(dev, link.parent), link)


OS_RELEASE = """\
PRETTY_NAME="Ubuntu 24.04.1 LTS"
NAME="Ubuntu"
VERSION_ID="24.04"
VERSION="24.04.1 LTS (Noble Numbat)"
VERSION_CODENAME=noble
ID=ubuntu
ID_LIKE=debian
HOME_URL="https://www.ubuntu.com/"
UBUNTU_CODENAME=noble
"""

PASSWD = f"""\
root:x:0:0:root:/root:/bin/bash
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
syslog:x:102:102::/nonexistent:/usr/sbin/nologin
gdm:x:120:121:Gnome Display Manager:/var/lib/gdm3:/bin/false
ollama:x:996:996::/usr/share/ollama:/bin/false
{USER}:x:{UID}:{UID}:Alice,,,:/home/{USER}:/bin/bash
"""

GROUP = f"""\
root:x:0:
adm:x:4:syslog,{USER}
cdrom:x:24:{USER}
sudo:x:27:{USER}
dip:x:30:{USER}
video:x:{VIDEO_GID}:ollama,{USER}
plugdev:x:46:{USER}
users:x:100:{USER}
lpadmin:x:114:{USER}
gdm:x:121:
render:x:{RENDER_GID}:ollama,{USER}
ollama:x:996:
{USER}:x:{UID}:
"""

DPKG_PACKAGES = [
    ("amdgpu-core", "1:6.2.60204-2070768.24.04", "all"),
    ("amdgpu-install", "6.2.60204-2070768.24.04", "all"),
    ("hip-runtime-amd", "6.2.41134.60204-139~24.04", "amd64"),
    ("linux-firmware", "20240318.git3b128b60-0ubuntu2.6", "amd64"),
    ("linux-image-6.8.0-51-generic", "6.8.0-51.52", "amd64"),
    ("rocm-core", "6.2.4.60204-139~24.04", "amd64"),
    ("rocminfo", "1.0.0.60204-139~24.04", "amd64"),
    ("xserver-xorg-video-amdgpu", "23.0.0-1build1", "amd64"),
    ("xserver-xorg-video-radeon", "1:19.1.0-3build3", "amd64"),
]


def dpkg_entry(name: str, version: str, arch: str = "amd64", status: str = "install ok installed") -> str:
    return (f"Package: {name}\nStatus: {status}\nPriority: optional\nSection: misc\nInstalled-Size: 1234\n"
            f"Maintainer: Someone <someone@example.com>\nArchitecture: {arch}\nVersion: {version}\n"
            f"Description: {name}\n\n")


KERN_LOG_PREVIOUS_BOOT = f"""\
Nov 28 09:00:01 ws kernel: [    0.000000] Linux version 6.8.0-49-generic (buildd@lcy02-amd64-103) (x86_64-linux-gnu-gcc-13 (Ubuntu 13.2.0-23ubuntu4) 13.2.0, GNU ld (GNU Binutils for Ubuntu) 2.42) #49-Ubuntu SMP PREEMPT_DYNAMIC
Nov 28 09:00:03 ws kernel: [    3.910000] amdgpu {GPU_PCI}: Direct firmware load for amdgpu/psp_13_0_0_sos.bin failed with error -2
Nov 28 09:00:03 ws kernel: [    3.910100] amdgpu {GPU_PCI}: amdgpu: Fatal error during GPU init
"""  # noqa: E501  (a previous boot: must be ignored)

KERN_LOG_CURRENT_BOOT = f"""\
Nov 30 08:12:40 ws kernel: [    0.000000] Linux version {KERNEL} (buildd@lcy02-amd64-103) (x86_64-linux-gnu-gcc-13 (Ubuntu 13.2.0-23ubuntu4) 13.2.0, GNU ld (GNU Binutils for Ubuntu) 2.42) #52-Ubuntu SMP PREEMPT_DYNAMIC
Nov 30 08:12:40 ws kernel: [    0.000000] Command line: BOOT_IMAGE=/boot/vmlinuz-{KERNEL} root=UUID=3f1c0e2a-8d7b-4f55-9a0e-1c2b3d4e5f60 ro quiet splash vt.handoff=7
Nov 30 08:12:42 ws kernel: [    3.812345] [drm] amdgpu kernel modesetting enabled.
Nov 30 08:12:42 ws kernel: [    3.830001] amdgpu {GPU_PCI}: amdgpu: Fetched VBIOS from VFCT
Nov 30 08:12:42 ws kernel: [    4.162228] [drm] Detected VRAM RAM=24560M, BAR=32768M
Nov 30 08:12:42 ws kernel: [    4.162230] [drm] RAM width 384bits GDDR6
Nov 30 08:12:43 ws kernel: [    4.901100] amdgpu {GPU_PCI}: amdgpu: SMU is initialized successfully!
Nov 30 08:12:43 ws kernel: [    5.020000] kfd kfd: amdgpu: added device 1002:744c
Nov 30 08:12:43 ws kernel: [    5.100000] [drm] Initialized amdgpu 3.57.0 20150101 for {GPU_PCI} on minor 0
"""  # noqa: E501

XORG_LOG = """\
[    45.123] (--) Log file renamed from "/home/alice/.local/share/xorg/Xorg.pid-2201.log" to "/home/alice/.local/share/xorg/Xorg.0.log"
[    45.124] X.Org X Server 1.21.1.11
[    45.130] (==) Using config directory: "/etc/X11/xorg.conf.d"
[    45.130] (==) Using system config directory "/usr/share/X11/xorg.conf.d"
[    45.140] (II) LoadModule: "amdgpu"
[    45.141] (II) Loading /usr/lib/xorg/modules/drivers/amdgpu_drv.so
[    45.150] (II) LoadModule: "modesetting"
[    45.151] (II) LoadModule: "fbdev"
[    45.152] (II) LoadModule: "vesa"
[    45.160] (II) AMDGPU(0): Creating default Display subsection in Screen section
[    45.170] (II) AMDGPU(0): glamor X acceleration enabled on AMD Radeon RX 7900 XTX (radeonsi, navi31, LLVM 17.0.6, DRM 3.57, 6.8.0-51-generic)
[    45.180] (II) UnloadModule: "modesetting"
[    45.180] (II) UnloadModule: "fbdev"
[    45.180] (II) UnloadModule: "vesa"
[    45.200] (WW) AMDGPU(0): Option "HotplugDriver" is not used
"""  # noqa: E501

AMDGPU_XORG_CONF = """\
Section "OutputClass"
\tIdentifier "AMDgpu"
\tMatchDriver "amdgpu"
\tDriver "amdgpu"
EndSection
"""

RADEON_XORG_CONF = """\
Section "OutputClass"
\tIdentifier "Radeon"
\tMatchDriver "radeon"
\tDriver "radeon"
EndSection
"""

OLLAMA_UNIT = """\
[Unit]
Description=Ollama Service
After=network-online.target

[Service]
ExecStart=/usr/local/bin/ollama serve
User=ollama
Group=ollama
Restart=always
RestartSec=3
Environment="PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
Environment="OLLAMA_HOST=0.0.0.0"

[Install]
WantedBy=default.target
"""

BASHRC = """\
# ~/.bashrc: executed by bash(1) for non-login shells.
case $- in
    *i*) ;;
      *) return;;
esac
HISTCONTROL=ignoreboth
export EDITOR=vim
alias ll='ls -alF'
"""

PROFILE = """\
# ~/.profile: executed by the command interpreter for login shells.
if [ -n "$BASH_VERSION" ]; then
    if [ -f "$HOME/.bashrc" ]; then
        . "$HOME/.bashrc"
    fi
fi
if [ -d "$HOME/.local/bin" ] ; then
    PATH="$HOME/.local/bin:$PATH"
fi
export PATH
"""

PROC_MODULES = """\
amdgpu 19746816 42 - Live 0x0000000000000000
amdxcp 12288 1 amdgpu, Live 0x0000000000000000
drm_exec 12288 1 amdgpu, Live 0x0000000000000000
gpu_sched 61440 1 amdgpu, Live 0x0000000000000000
drm_buddy 20480 1 amdgpu, Live 0x0000000000000000
drm_suballoc_helper 20480 1 amdgpu, Live 0x0000000000000000
drm_ttm_helper 12288 1 amdgpu, Live 0x0000000000000000
ttm 110592 2 amdgpu,drm_ttm_helper, Live 0x0000000000000000
snd_hda_intel 61440 4 - Live 0x0000000000000000
nvme 61440 3 - Live 0x0000000000000000
"""


def status_text(uid: int = UID, gid: int = UID, groups: list[int] | None = None, name: str = "rocmdesk") -> str:
    groups = [4, 24, 27, 30, VIDEO_GID, 46, 100, 114, RENDER_GID, UID] if groups is None else groups
    return (f"Name:\t{name}\nUmask:\t0002\nState:\tR (running)\nTgid:\t4242\nPid:\t4242\nPPid:\t4100\n"
            f"Uid:\t{uid}\t{uid}\t{uid}\t{uid}\nGid:\t{gid}\t{gid}\t{gid}\t{gid}\nFDSize:\t64\n"
            f"Groups:\t{' '.join(str(g) for g in groups)} \nVmPeak:\t  123456 kB\n")


SESSION_ENV = {
    "SHELL": "/bin/bash", "PWD": f"/home/{USER}", "LOGNAME": USER, "XDG_SESSION_TYPE": "wayland",
    "HOME": f"/home/{USER}", "LANG": "en_US.UTF-8", "USER": USER, "DISPLAY": ":0",
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/snap/bin",
}


def clean_workstation(tmp: Path | str) -> Path:
    """Ubuntu 24.04, RX 7900 XTX on in-tree amdgpu, ROCm 6.2.4: nothing is wrong."""
    root = Path(tmp)
    root.mkdir(parents=True, exist_ok=True)
    build_root(root, [GpuSpec("rx7900xtx", pci=GPU_PCI, card=0)], cpu_nodes=1)
    _pci_device(root, "0000:00:00.0", 0x1022, 0x14D8, 0x060000, None)  # host bridge
    _pci_device(root, "0000:03:00.1", 0x1002, 0xAB30, 0x040300, "snd_hda_intel")  # the GPU's HDMI audio
    _pci_device(root, "0000:01:00.0", 0x144D, 0xA80A, 0x010802, "nvme")
    gpu_dev = root / "sys" / "bus" / "pci" / "devices" / GPU_PCI
    (gpu_dev / "class").write_text("0x030000\n")
    (gpu_dev / "device").write_text("0x744c\n")
    write(root, "/sys/module/amdgpu/parameters/ppfeaturemask", "0xfff7bfff\n")
    write(root, f"/sys/firmware/efi/efivars/{SECURE_BOOT_NAME}", bytes([6, 0, 0, 0, 1]))
    # /proc
    write(root, "/proc/cmdline", f"BOOT_IMAGE=/boot/vmlinuz-{KERNEL} root=UUID=3f1c0e2a-8d7b-4f55-9a0e-1c2b3d4e5f60 "
                                 "ro quiet splash vt.handoff=7\n")
    write(root, "/proc/sys/kernel/osrelease", KERNEL + "\n")
    write(root, "/proc/version", f"Linux version {KERNEL} (buildd@lcy02-amd64-103) (x86_64-linux-gnu-gcc-13 "
                                 "(Ubuntu 13.2.0-23ubuntu4) 13.2.0) #52-Ubuntu SMP PREEMPT_DYNAMIC\n")
    write(root, "/proc/modules", PROC_MODULES)
    write(root, "/proc/self/status", status_text())
    write(root, "/proc/self/environ", environ_bytes(SESSION_ENV))
    gpu_process(root, 2345, "ollama", {"PATH": "/usr/local/bin:/usr/bin", "OLLAMA_HOST": "0.0.0.0", "HOME":
                                       "/usr/share/ollama"})
    # /etc
    write(root, "/etc/os-release", OS_RELEASE)
    write(root, "/etc/passwd", PASSWD)
    write(root, "/etc/group", GROUP)
    write(root, "/etc/environment", 'PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/snap/bin"\n')
    write(root, "/etc/default/grub", 'GRUB_DEFAULT=0\nGRUB_TIMEOUT_STYLE=hidden\nGRUB_TIMEOUT=0\n'
                                     'GRUB_DISTRIBUTOR=`( . /etc/os-release; echo ${NAME:-Ubuntu} ) 2>/dev/null || '
                                     'echo Ubuntu`\nGRUB_CMDLINE_LINUX_DEFAULT="quiet splash"\nGRUB_CMDLINE_LINUX=""\n')
    write(root, "/etc/modprobe.d/blacklist.conf", "# This file lists modules which will not be loaded\n"
                                                  "blacklist evbug\nblacklist usbmouse\nblacklist usbkbd\n"
                                                  "blacklist eepro100\nblacklist de4x5\n"
                                                  "# Autoloading old radeon framebuffers breaks amdgpu\n")
    write(root, "/etc/modprobe.d/blacklist-framebuffer.conf", "blacklist aty128fb\nblacklist atyfb\n"
                                                              "blacklist radeonfb\nblacklist cirrusfb\n")
    write(root, "/etc/modprobe.d/alsa-base.conf", "options snd-pcsp index=-2\noptions snd-usb-audio index=-2\n")
    write(root, "/usr/lib/modprobe.d/systemd.conf", "options bonding max_bonds=0\noptions dummy numdummies=0\n")
    write(root, "/etc/systemd/system/ollama.service", OLLAMA_UNIT)
    write(root, "/etc/apt/sources.list.d/amdgpu.list",
          "deb https://repo.radeon.com/amdgpu/6.2.4/ubuntu noble main\n")
    write(root, "/etc/apt/sources.list.d/rocm.list",
          "deb [arch=amd64] https://repo.radeon.com/rocm/apt/6.2.4 noble main\n")
    # home
    write(root, f"/home/{USER}/.bashrc", BASHRC)
    write(root, f"/home/{USER}/.profile", PROFILE)
    write(root, f"/home/{USER}/.local/share/xorg/Xorg.0.log", XORG_LOG)
    # /dev
    device_node(root, "/dev/kfd", 238, 0, RENDER_GID, 0o660)
    device_node(root, "/dev/dri/renderD128", 226, 128, RENDER_GID, 0o660)
    device_node(root, "/dev/dri/card0", 226, 0, VIDEO_GID, 0o660)
    # packages, modules, logs, X
    write(root, "/var/lib/dpkg/status", "".join(dpkg_entry(*p) for p in DPKG_PACKAGES))
    write(root, "/opt/rocm-6.2.4/.info/version", "6.2.4-139\n")
    os.symlink("rocm-6.2.4", root / "opt" / "rocm")
    # the in-tree module (with a real .modinfo), modules.dep and modules.builtin; lib -> usr/lib
    install_kernel(root, KERNEL, module=fake_module(vermagic=f"{KERNEL} SMP preempt mod_unload modversions "))
    write(root, f"/boot/config-{KERNEL}", "CONFIG_DRM_AMDGPU=m\nCONFIG_HSA_AMD=y\nCONFIG_HSA_AMD_SVM=y\n")
    write(root, "/var/log/kern.log", KERN_LOG_PREVIOUS_BOOT + KERN_LOG_CURRENT_BOOT, mode=0o640)
    write(root, "/usr/share/X11/xorg.conf.d/10-amdgpu.conf", AMDGPU_XORG_CONF)
    write(root, "/usr/share/X11/xorg.conf.d/10-radeon.conf", RADEON_XORG_CONF)
    write(root, "/usr/share/X11/xorg.conf.d/40-libinput.conf",
          'Section "InputClass"\n\tIdentifier "libinput pointer catchall"\n\tMatchIsPointer "on"\n'
          '\tDriver "libinput"\nEndSection\n')
    (root / "etc" / "X11" / "xorg.conf.d").mkdir(parents=True, exist_ok=True)
    # the initramfs-tools image update-initramfs would build now (amdgpu and modprobe.d copied), and a
    # ComfyUI with a ROCm torch venv (found by the home-folder walk; comfyui_process() adds its running
    # process), so the initramfs and PyTorch checks run and pass here instead of skipping
    for name in GFX1100_FIRMWARE:  # linux-firmware's files for the RX 7900 XTX (zstd-compressed, as Ubuntu ships)
        write(root, f"/usr/lib/firmware/amdgpu/{name}.zst", b"\x28\xb5\x2f\xfd" + name.encode())
    install_matching_initramfs(root, KERNEL)
    install_healthy_comfyui(root, USER, pid=None)
    return root


GFX1100_FIRMWARE = ("gc_11_0_0_pfp.bin", "gc_11_0_0_me.bin", "gc_11_0_0_mec.bin", "gc_11_0_0_mes_2.bin",
                    "gc_11_0_0_rlc.bin", "psp_13_0_0_sos.bin", "smu_13_0_0.bin", "dcn_3_2_0_dmcub.bin",
                    "sdma_6_0_0.bin", "vcn_4_0_0.bin")


# -- mutators: each breaks one thing ---------------------------------------------------------------


def gpu_process(root: Path, pid: int, comm: str, env: dict[str, str], device: str = "/dev/kfd") -> Path:
    """A running process that holds the GPU open (fd 5 -> ``device``)."""
    return fake_process(root, pid, comm=comm, env=env, fds={0: "/dev/null", 5: device})


def comfyui_process(root: Path, pid: int = COMFYUI_PID, activated: bool = False) -> Path:
    """The clean root's ComfyUI running on the GPU, as /proc really shows it: ``exe`` is the resolved
    base interpreter (the venv's bin/python is a symlink to it); argv[0] is the venv's python, or plain
    ``python`` when started from an activated venv (then only VIRTUAL_ENV in its environment names it)."""
    venv = f"{COMFYUI}/venv"
    argv = ["python" if activated else f"{venv}/bin/python", f"{COMFYUI}/main.py", "--listen"]
    return fake_process(root, pid, comm="python", argv=argv, env={**SESSION_ENV, "VIRTUAL_ENV": venv},
                        exe="/usr/bin/python3.11", fds={5: "/dev/kfd"})


def unload_amdgpu(root: Path) -> None:
    """amdgpu not loaded: no module state, no binding, no KFD, no render node."""
    text = (root / "proc" / "modules").read_text()
    write(root, "/proc/modules", "".join(ln + "\n" for ln in text.splitlines() if "amdgpu" not in ln))
    shutil.rmtree(root / "sys" / "module" / "amdgpu", ignore_errors=True)
    unbind_gpu(root)
    shutil.rmtree(root / "sys" / "class" / "kfd", ignore_errors=True)
    for name in ("kfd", "dri/renderD128"):
        (root / "dev" / name).unlink(missing_ok=True)


def unbind_gpu(root: Path, pci: str = GPU_PCI, driver: str | None = None) -> None:
    """The GPU bound to nothing (or to ``driver``, e.g. radeon)."""
    dev = (root / "sys" / "bus" / "pci" / "devices" / pci).resolve()
    (dev / "driver").unlink(missing_ok=True)
    uevent = dev / "uevent"
    lines = [ln for ln in uevent.read_text().splitlines() if not ln.startswith("DRIVER=")]
    if driver:
        drivers = root / "sys" / "bus" / "pci" / "drivers" / driver
        drivers.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(drivers, dev), dev / "driver")
        lines.insert(0, f"DRIVER={driver}")
    uevent.write_text("\n".join(lines) + "\n")


def blacklist_amdgpu(root: Path, path: str = "/etc/modprobe.d/blacklist-amdgpu.conf",
                     line: str = "blacklist amdgpu") -> Path:
    return write(root, path, f"# added by a guide\n{line}\n")


def add_cmdline(root: Path, *args: str) -> None:
    text = (root / "proc" / "cmdline").read_text().strip()
    write(root, "/proc/cmdline", " ".join([text, *args]) + "\n")
    grub = root / "etc" / "default" / "grub"
    grub.write_text(grub.read_text().replace('"quiet splash"', '"quiet splash ' + " ".join(args) + '"'))


def install_dkms_amdgpu(root: Path, version: str = "6.8.5-2041575.24.04") -> Path:
    write(root, "/var/lib/dpkg/status", (root / "var/lib/dpkg/status").read_text()
          + dpkg_entry("amdgpu-dkms", f"1:{version}", "all")
          + dpkg_entry("amdgpu-dkms-firmware", f"1:{version}", "all"))
    write(root, "/var/lib/shim-signed/mok/MOK.der", b"0\x82\x03")
    # dkms runs depmod: modules.dep now names the DKMS module, which the kernel loads before the in-tree one
    write(root, f"/usr/lib/modules/{KERNEL}/modules.dep",
          "updates/dkms/amdgpu.ko.zst: kernel/drivers/gpu/drm/drm_exec.ko.zst\n")
    return write(root, f"/usr/lib/modules/{KERNEL}/updates/dkms/amdgpu.ko.zst", b"\x28\xb5\x2f\xfd")


def set_secure_boot(root: Path, enabled: bool) -> None:
    write(root, f"/sys/firmware/efi/efivars/{SECURE_BOOT_NAME}", bytes([6, 0, 0, 0, 1 if enabled else 0]))


def install_amdgpu_pro(root: Path) -> None:
    write(root, "/var/lib/dpkg/status", (root / "var/lib/dpkg/status").read_text()
          + dpkg_entry("amdgpu-pro-core", "23.40-1781449.22.04", "all")
          + dpkg_entry("vulkan-amdgpu-pro", "23.40-1781449.22.04"))
    (root / "opt" / "amdgpu-pro" / "lib").mkdir(parents=True, exist_ok=True)


def remove_kfd(root: Path) -> None:
    (root / "dev" / "kfd").unlink(missing_ok=True)


def kernel_log(root: Path, *lines: str) -> None:
    stamp = "Nov 30 08:12:44 ws kernel: [    5.300000] "
    append(root, "/var/log/kern.log", "".join(stamp + ln + "\n" for ln in lines))


def set_ppfeaturemask(root: Path, value: str, on_cmdline: bool = True) -> None:
    write(root, "/sys/module/amdgpu/parameters/ppfeaturemask", value + "\n")
    if on_cmdline:
        add_cmdline(root, f"amdgpu.ppfeaturemask={value}")


def remove_user_from_group(root: Path, group: str, user: str = USER) -> None:
    lines = []
    for line in (root / "etc" / "group").read_text().splitlines():
        parts = line.split(":")
        if parts[0] == group:
            parts[3] = ",".join(m for m in parts[3].split(",") if m and m != user)
        lines.append(":".join(parts))
    write(root, "/etc/group", "\n".join(lines) + "\n")


def session_groups(root: Path, groups: list[int]) -> None:
    write(root, "/proc/self/status", status_text(groups=groups))


def session_env(root: Path, **env: str) -> None:
    write(root, "/proc/self/environ", environ_bytes({**SESSION_ENV, **env}))


def export_in_profile(root: Path, name: str, value: str, file: str = ".profile") -> Path:
    return append(root, f"/home/{USER}/{file}", f'export {name}="{value}"\n')


def unit_environment(root: Path, name: str, value: str, unit: str = "ollama.service") -> Path:
    path = root / "etc" / "systemd" / "system" / unit
    text = path.read_text() if path.exists() else OLLAMA_UNIT
    return write(root, f"/etc/systemd/system/{unit}",
                 text.replace("[Install]", f'Environment="{name}={value}"\n\n[Install]'))


def replace_gpu(root: Path, gfx_target_version: int, device_id: int) -> None:
    """Make the GPU another model of the same layout (KFD gfx_target_version and PCI device id)."""
    for props in (root / "sys" / "class" / "kfd" / "kfd" / "topology" / "nodes").glob("*/properties"):
        lines = props.read_text().splitlines()
        if any(ln == "gfx_target_version 0" for ln in lines):
            continue
        props.write_text("".join((f"gfx_target_version {gfx_target_version}" if ln.startswith("gfx_target_version")
                                  else ln) + "\n" for ln in lines))
    dev = (root / "sys" / "bus" / "pci" / "devices" / GPU_PCI).resolve()
    (dev / "device").write_text(f"0x{device_id:04x}\n")


def add_second_gpu(root: Path, dump: str = "rx6900xt", pci: str = "0000:0a:00.0",
                   gfx_target_version: int | None = None) -> None:
    build_root(root, [GpuSpec(dump, pci=pci, gfx_target_version=gfx_target_version)], cpu_nodes=1)
    dev = (root / "sys" / "bus" / "pci" / "devices" / pci).resolve()
    (dev / "class").write_text("0x030000\n")


def make_wsl(root: Path) -> None:
    """WSL2: a microsoft kernel, /dev/dxg, no amdgpu sysfs or /dev/kfd."""
    release = "6.6.87.2-microsoft-standard-WSL2"
    write(root, "/proc/sys/kernel/osrelease", release + "\n")
    write(root, "/proc/version", f"Linux version {release} (root@439a258ad544) (gcc (GCC) 11.2.0) #1 SMP "
                                 "PREEMPT_DYNAMIC\n")
    shutil.rmtree(root / "sys" / "class" / "kfd", ignore_errors=True)
    shutil.rmtree(root / "sys" / "bus" / "pci", ignore_errors=True)
    shutil.rmtree(root / "sys" / "module" / "amdgpu", ignore_errors=True)
    shutil.rmtree(root / "dev" / "dri", ignore_errors=True)
    (root / "dev" / "kfd").unlink(missing_ok=True)
    device_node(root, "/dev/dxg", 10, 125, 0, 0o666)


def xorg_conf(root: Path, path: str, driver: str, section: str = "Device", extra: str = "") -> Path:
    return write(root, path, textwrap.dedent(f"""\
        Section "{section}"
            Identifier "Card0"
            Driver "{driver}"{extra}
        EndSection
        """))


def xorg_log(root: Path, *lines: str, path: str = "/var/log/Xorg.0.log") -> Path:
    return write(root, path, XORG_LOG.splitlines()[1] + "\n" + "".join(f"[    46.000] {ln}\n" for ln in lines))


# -- running checks on a root ----------------------------------------------------------------------


def run_check(root: Path, check_id: str, runner=None):
    """One registered check's CheckResult on ``root`` (fresh context, metadata from resources/)."""
    from rocmdesk.diagnosis.context import DiagnosisContext
    from rocmdesk.diagnosis.engine import registered_checks, run_checks
    from rocmdesk.host import HostRoot, RecordedRunner

    specs = [s for s in registered_checks() if s.id == check_id]
    assert specs, f"no check {check_id!r}"
    ctx = DiagnosisContext(HostRoot(root), runner=runner if runner is not None else RecordedRunner())
    return run_checks(ctx, specs=specs)[0]


def only_finding(result):
    """The one finding of a failed check (asserting that is what the check produced)."""
    from rocmdesk.diagnosis.model import Status

    assert result.status is Status.FAIL, result
    assert len(result.findings) == 1, result.findings
    return result.findings[0]


def build_amdgpu_in(root: Path) -> None:
    """amdgpu built into the kernel (CONFIG_DRM_AMDGPU=y), as on some custom and embedded kernels: modules.builtin
    lists it, there is no amdgpu.ko and no /proc/modules line, and /sys/module/amdgpu has parameters but no
    initstate (a loadable module's attribute: Linux kernel/module/main.c)."""
    moddir = root / "usr" / "lib" / "modules" / KERNEL
    write(root, f"/usr/lib/modules/{KERNEL}/modules.builtin",
          "kernel/drivers/char/mem.ko\nkernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko\n")
    for module in moddir.rglob("amdgpu.ko*"):
        module.unlink()
    write(root, f"/usr/lib/modules/{KERNEL}/modules.dep", "kernel/drivers/gpu/drm/drm_exec.ko.zst:\n")
    text = (root / "proc" / "modules").read_text()
    write(root, "/proc/modules", "".join(ln + "\n" for ln in text.splitlines() if not ln.startswith("amdgpu ")))
    (root / "sys" / "module" / "amdgpu" / "initstate").unlink(missing_ok=True)
    config = root / "boot" / f"config-{KERNEL}"
    config.write_text(config.read_text().replace("CONFIG_DRM_AMDGPU=m", "CONFIG_DRM_AMDGPU=y"))
