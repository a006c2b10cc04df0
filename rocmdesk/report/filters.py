"""What may go into a support bundle, and how each kind of file is reduced before it does.

The rule is an allow-list: system configuration, the GPU's sysfs, a few ``/proc`` files, Python
environment metadata and Xorg logs. Process folders, shell history, keys and anything else in a
home folder stay on the machine even when a check happened to look at them.
"""

from __future__ import annotations

import fnmatch
import re

LISTING = "listing"

# (pattern, why, depth): depth -1 = that path only, N = regular files of that folder N levels down.
EXPLICIT: tuple[tuple[str, str, int], ...] = (
    ("/proc/cmdline", "kernel command line (nomodeset, blacklists, iommu)", -1),
    ("/proc/modules", "loaded kernel modules", -1),
    ("/proc/version", "kernel version (WSL detection)", -1),
    ("/proc/sys/kernel/osrelease", "running kernel release", -1),
    ("/proc/self/status", "the user's uid and session groups (filtered)", -1),
    ("/proc/self/environ", "GPU-stack environment variables only (filtered)", -1),
    ("/etc/os-release", "distribution", -1),
    ("/usr/lib/os-release", "distribution", -1),
    ("/etc/passwd", "the user's account (relevant lines only)", -1),
    ("/etc/group", "video/render groups (relevant lines only)", -1),
    ("/etc/environment", "system-wide GPU-stack variables (other lines blanked)", -1),
    ("/etc/modprobe.d", "module options and blacklists", 0),
    ("/usr/lib/modprobe.d", "module options and blacklists", 0),
    ("/lib/modprobe.d", "module options and blacklists", 0),
    ("/run/modprobe.d", "module options and blacklists", 0),
    ("/etc/X11/xorg.conf", "Xorg configuration", -1),
    ("/etc/X11/xorg.conf.d", "Xorg configuration", 0),
    ("/usr/share/X11/xorg.conf.d", "Xorg configuration", 0),
    ("/var/log/Xorg.*.log", "Xorg log", -1),
    ("/home/*/.local/share/xorg/Xorg.*.log", "Xorg log (rootless Xorg)", -1),
    ("/var/lib/dpkg/status", "installed GPU-related packages (other packages removed)", -1),
    ("/opt/rocm/.info/version", "ROCm version", -1),
    ("/opt/rocm-*/.info/version", "ROCm version", -1),
    ("/etc/initramfs-tools/modules", "initramfs configuration", -1),
    ("/etc/dracut.conf.d", "initramfs configuration", 0),
    ("/etc/mkinitcpio.conf", "initramfs configuration", -1),
    ("/etc/udev/rules.d", "device permission rules", 0),
    ("/dev/kfd", "compute device node (mode and group only)", -1),
    ("/dev/dri/*", "render device nodes (mode and group only)", -1),
    ("/dev/dxg", "WSL GPU device node", -1),
    ("/sys/module/amdgpu", "amdgpu module state", 0),
    ("/sys/module/amdgpu/parameters", "amdgpu module parameters", 0),
    ("/sys/class/kfd/kfd/topology", "KFD topology (compute GPUs)", 0),
    ("/sys/class/kfd/kfd/topology/nodes/*", "KFD topology (compute GPUs)", 0),
    ("/sys/class/kfd/kfd/topology/nodes/*/mem_banks", "KFD topology (memory)", 1),
    ("/sys/firmware/efi/efivars/SecureBoot-*", "Secure Boot state", -1),
    ("/usr/share/misc/pci.ids", "GPU names (AMD part only)", -1),
    ("/usr/share/hwdata/pci.ids", "GPU names (AMD part only)", -1),
)

# Never in a bundle, whoever read them.
_DENY = (
    "proc/[0-9]*", "proc/self/*", "proc/thread-self*", "proc/kcore", "proc/kmsg", "proc/kallsyms",
    "etc/shadow*", "etc/gshadow*", "etc/ssh*", "etc/ssl/private*", "etc/sudoers*", "etc/machine-id",
    "etc/NetworkManager/system-connections*", "etc/wpa_supplicant*", "root*", "var/lib/dbus/machine-id",
    "*/.ssh*", "*/.gnupg*", "*_history", "*/.netrc", "*/.aws*", "*/.git-credentials", "*/.pki*",
    "sys/bus/pci/devices/*/vpd", "sys/devices/*/vpd", "boot/*", "tmp*", "var/tmp*",
    # module signing private keys (Ubuntu MOK.priv, DKMS mok.key, any *.key): never, even if a check or a
    # misconfigured mok_certificate= pointed at one
    "*.priv", "*.key",
)
_PROC_SELF_OK = ("proc/self", "proc/self/status", "proc/self/environ")
_PROC_OK = {"proc", "proc/cmdline", "proc/modules", "proc/version", "proc/sys", "proc/sys/kernel",
            "proc/sys/kernel/osrelease", "proc/sys/kernel/tainted", "proc/cpuinfo", "proc/meminfo",
            "proc/iomem", "proc/driver", *_PROC_SELF_OK}
# Files a home folder may contribute (everything else there is personal).
_HOME_FILES = (
    "pyvenv.cfg", "version.py", "METADATA", "requirements.txt", "pyproject.toml", "top_level.txt",
    "INSTALLER", "PKG-INFO", "main.py", "Xorg.*.log", ".profile", ".bashrc", ".bash_profile", ".zshrc", ".zprofile",
    "*.json",  # conda-meta package records
    "environment.d", "*.conf",
)
SHELL_RC = frozenset({".profile", ".bashrc", ".bash_profile", ".zshrc", ".zprofile"})
# sysfs names never read from a GPU folder (mmap windows, write-only triggers, the vital product data)
_SYSFS_SKIP = re.compile(r"^(resource\d*(_wc)?|rom|config|remove|rescan|reset|vpd|new_id|remove_id|bind|unbind|"
                         r"driver_override|d3cold_allowed|broken_parity_status|msi_bus|enable)$")


_GPU_PROCESS_RE = re.compile(r"^proc/(\d+)(/(comm|cmdline|environ|status|exe|fd|fd/\d+))?$")
GPU_DEVICE_PREFIXES = ("dev/kfd", "dev/dri/")


def allowed(path: str, gpu_pids: frozenset[str] = frozenset()) -> bool:
    """May this host path (without the leading slash) go into a bundle?

    A process folder only when the process holds a GPU device open (``gpu_pids``), and then only
    its name, command line, executable, GPU-stack environment and its GPU file descriptors.
    """
    path = path.strip("/")
    if not path:
        return False
    if path.startswith("proc"):
        match = _GPU_PROCESS_RE.match(path)
        if match:
            return match.group(1) in gpu_pids
        return path in _PROC_OK
    if any(fnmatch.fnmatch(path, pat) for pat in _DENY):
        return False
    if path.startswith("home/"):
        parts = path.split("/")
        if len(parts) <= 2:
            return True
        name = parts[-1]
        hidden = [p for p in parts[2:-1] if p.startswith(".")]
        if hidden and not any(p in (".local", ".venv", ".conda", ".virtualenvs", ".pyenv", ".config")
                              for p in hidden):
            return False
        if ".cache" in parts or ".mozilla" in parts:
            return False
        return True if "." not in name or name.endswith((".dist-info", ".egg-info")) else home_file_ok(path)
    return True


def home_file_ok(path: str) -> bool:
    """For a *file* in a home folder: only metadata files (folders are names only)."""
    parts = path.split("/")
    name = parts[-1]
    if name.endswith(".json"):
        return "conda-meta" in parts
    if name.endswith(".conf"):
        return "environment.d" in parts
    if name in SHELL_RC:
        return len(parts) == 3  # ~/.bashrc, not some project's copy
    return any(fnmatch.fnmatch(name, pat) for pat in _HOME_FILES)


def sysfs_name_ok(name: str) -> bool:
    return not _SYSFS_SKIP.match(name)


def is_initramfs_name(name: str) -> bool:
    return bool(re.match(r"^(initrd\.img|initramfs|initrd)([-.].*)?$", name)) and not name.endswith(
        (".bak", ".old-dkms", ".sig"))


def rule_for(path: str) -> str | None:
    if path.startswith("boot/") and is_initramfs_name(path.rsplit("/", 1)[-1]):
        return LISTING
    return None


def module_name(path: str) -> str | None:
    """``amdgpu`` for ``.../amdgpu.ko.zst``; None when the file is not a kernel module."""
    base = path.rsplit("/", 1)[-1]
    for suffix in (".ko", ".ko.zst", ".ko.xz", ".ko.gz"):
        if base.endswith(suffix):
            return base[: -len(suffix)].replace("-", "_")
    return None


# Files whose reduced copy is small even when the original is large (read up to this size).
REDUCED_FILES = frozenset({"var/lib/dpkg/status", "usr/share/misc/pci.ids", "usr/share/hwdata/pci.ids"})
REDUCED_MAX_BYTES = 64 << 20


def reduced(path: str) -> bool:
    """Files read whole and reduced before they go in (large on real machines)."""
    return bool(_MODULES_DEP.fullmatch(path))


_MODULES_DEP = re.compile(r"(usr/)?lib/modules/[^/]+/modules\.dep")
