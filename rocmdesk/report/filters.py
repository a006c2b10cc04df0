"""What may go into a support bundle, and how each kind of file is reduced before it does.

The rule is an allow-list: system configuration, the GPU's sysfs, a few ``/proc`` files, Python
environment metadata and Xorg logs. Process folders, shell history, keys and anything else in a
home folder stay on the machine even when a check happened to look at them.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterable

from rocmdesk.host import HostRoot
from rocmdesk.report.redact import Redactor, keep_env_name, parse_passwd, status_ids

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
    "INSTALLER", "main.py", "Xorg.*.log", ".profile", ".bashrc", ".bash_profile", ".zshrc", ".zprofile",
    "*.json",  # conda-meta package records
    "environment.d", "*.conf",
)
SHELL_RC = frozenset({".profile", ".bashrc", ".bash_profile", ".zshrc", ".zprofile"})
# sysfs names never read from a GPU folder (mmap windows, write-only triggers, the vital product data)
_SYSFS_SKIP = re.compile(r"^(resource\d*(_wc)?|rom|config|remove|rescan|reset|vpd|new_id|remove_id|bind|unbind|"
                         r"driver_override|d3cold_allowed|broken_parity_status|msi_bus|enable)$")
_RELEVANT_PACKAGE = re.compile(
    r"^(.*amdgpu.*|rocm.*|hip.*|hsa.*|rocminfo|rocm-smi.*|amd-smi.*|amdsmi.*|miopen.*|rocblas.*|rccl.*|"
    r"comgr|.*rocm.*|linux-image-.*|linux-headers-.*|linux-modules-.*|linux-firmware.*|firmware-amd.*|"
    r"xserver-xorg-video-.*|xserver-xorg-core|libdrm-amdgpu.*|mesa-.*|libgl1-mesa-dri|dkms|"
    r"nvidia.*|libnvidia.*|python3-torch.*|initramfs-tools|dracut|mkinitcpio|mokutil|shim-signed)$"
)


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


def account_names(root: HostRoot, uid: int, gid: int) -> tuple[str | None, str | None]:
    """Names of a uid and gid in the root's own passwd/group (never the analyst's)."""
    owner = next((n for n, u, _h in parse_passwd(root.try_read_text("/etc/passwd") or "") if u == uid), None)
    group = None
    for line in (root.try_read_text("/etc/group") or "").splitlines():
        parts = line.split(":")
        if len(parts) >= 3 and parts[2] == str(gid):
            group = parts[0]
            break
    return owner, group


# -- content transforms ---------------------------------------------------------------------------


def module_name(path: str) -> str | None:
    """``amdgpu`` for ``.../amdgpu.ko.zst``; None when the file is not a kernel module."""
    base = path.rsplit("/", 1)[-1]
    for suffix in (".ko", ".ko.zst", ".ko.xz", ".ko.gz"):
        if base.endswith(suffix):
            return base[: -len(suffix)].replace("-", "_")
    return None


# Command-line options whose value is a secret (ComfyUI --api-key, servers' --token ...).
_SECRET_OPTION = re.compile(r"^(-{1,2}[\w-]*(?:key|token|secret|passw(?:or)?d|pass|auth|credential)[\w-]*)"
                            r"(=.*)?$", re.IGNORECASE)
SECRET_VALUE = "<redacted>"


def cmdline_args(data: bytes, red: Redactor) -> bytes:
    """A ``/proc/<pid>/cmdline`` (NUL-separated argv) with secret option values removed and home
    folders, user names and hostnames replaced; the argument count and order stay the same."""
    if not data:
        return b""  # a kernel thread or a zombie: no command line
    args = data.split(b"\0")
    trailing = args[-1] == b""
    if trailing:
        args = args[:-1]
    out: list[str] = []
    hide_next = False
    for raw in args:
        arg = raw.decode("utf-8", "replace")
        if hide_next and not arg.startswith("-"):
            out.append(SECRET_VALUE)
            hide_next = False
            continue
        hide_next = False
        match = _SECRET_OPTION.match(arg)
        if match:
            if match.group(2) is not None:
                arg = f"{match.group(1)}={SECRET_VALUE}"
            else:
                hide_next = True
        out.append(red.text(arg))
    return "\0".join(out).encode() + (b"\0" if trailing else b"")


def transform(path: str, data: bytes, red: Redactor, root: HostRoot) -> bytes | None:
    """The bundle's copy of a host file (``path`` without leading slash), reduced and redacted."""
    name = path.rsplit("/", 1)[-1]
    if re.fullmatch(r"proc/(self|\d+)/environ", path):
        return red.environ(data).encode()
    if re.fullmatch(r"proc/\d+/cmdline", path):
        return cmdline_args(data, red)
    if re.fullmatch(r"proc/(self|\d+)/status", path):
        keep = ("Name:", "Uid:", "Gid:", "Groups:", "Umask:")  # other lines blanked: line numbers stay
        text = "".join((line if line.startswith(keep) else "") + "\n" for line in _text(data).splitlines())
        return red.text(text).encode()
    if path == "etc/passwd":
        return _passwd_lines(_text(data), red).encode()
    if path == "etc/group":
        return _group_lines(_text(data), root, red).encode()
    if path in ("etc/hostname", "proc/sys/kernel/hostname") and _text(data).strip():
        return b"host1\n"
    if path == "var/lib/dpkg/status":
        return red.text(dpkg_relevant(_text(data))).encode()
    if reduced(path):
        return modules_dep_relevant(_text(data)).encode()
    if path in ("usr/share/misc/pci.ids", "usr/share/hwdata/pci.ids"):
        return pci_ids_amd(_text(data)).encode()
    if path == "etc/environment" or (path.startswith("home/") and name in SHELL_RC) \
            or path.startswith("etc/profile.d/"):
        return red.text(env_lines_only(_text(data))).encode()
    if path.startswith("home/") and not home_file_ok(path):
        return None
    if name in ("serial_number", "unique_id"):
        value = _text(data).strip()
        return (red.ids.get(value, red.text(value)) + "\n").encode() if value else data
    if b"\0" in data[:4096] or not _is_utf8(data):
        return _redact_binary(data, red)
    return red.text(_text(data)).encode()


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _redact_binary(data: bytes, red: Redactor) -> bytes:
    return red.binary(data)


def _passwd_lines(text: str, red: Redactor) -> str:
    """The current user's and root's lines, field by field: the name field gets the placeholder
    even when the name is a common word (a user called ``render``), the rest stays as it is."""
    out = []
    for line in text.splitlines():
        parts = line.split(":")
        if len(parts) < 7:
            out.append("")
            continue
        if parts[0] in red.users or parts[2] == "0":
            parts[0] = red.user(parts[0])
            parts[1] = "x"
            parts[4] = ""  # the full name (GECOS)
            parts[5:] = [red.text(p) for p in parts[5:]]
            out.append(":".join(parts))
        else:
            out.append("")  # blanked, not removed: evidence cites line numbers
    return "".join(f"{line}\n" for line in out)


SYSTEM_GID_MAX = 999
RELEVANT_GROUPS = frozenset({"video", "render", "root", "kfd", "users", "wheel", "sudo", "adm"})


def _group_lines(text: str, root: HostRoot, red: Redactor) -> str:
    """The groups that decide GPU access: video, render, the devices' groups and the user's own;
    a person's name is replaced in the name and member fields only (``render:x:992:user1``)."""
    status = root.try_read_text("/proc/self/status") or ""
    uid, session = status_ids(status)
    gids = set(session)
    for line in (root.try_read_text("/etc/passwd") or "").splitlines():
        parts = line.split(":")
        if len(parts) >= 4 and parts[2] == str(uid) and parts[3].isdigit():
            gids.add(int(parts[3]))
    for node in ("/dev/kfd", *root.glob("/dev/dri", "renderD*"), *root.glob("/dev/dri", "card*")):
        try:
            gids.add(root.stat(node).st_gid)
        except OSError:
            continue
    out = []
    for line in text.splitlines():
        parts = line.split(":")
        if len(parts) >= 4 and (parts[0] in RELEVANT_GROUPS or (parts[2].isdigit() and int(parts[2]) in gids)):
            parts[1] = "x"
            if not (parts[2].isdigit() and int(parts[2]) <= SYSTEM_GID_MAX):
                parts[0] = red.user(parts[0])  # the user's private group; system groups keep their names
            parts[3] = ",".join(red.user(m) for m in parts[3].split(",")) if parts[3] else ""
            out.append(":".join(parts[:4]))
        else:
            out.append("")
    return "".join(f"{line}\n" for line in out)


# Files whose reduced copy is small even when the original is large (read up to this size).
REDUCED_FILES = frozenset({"var/lib/dpkg/status", "usr/share/misc/pci.ids", "usr/share/hwdata/pci.ids"})
REDUCED_MAX_BYTES = 64 << 20


def reduced(path: str) -> bool:
    """Files read whole and reduced before they go in (large on real machines)."""
    return bool(_MODULES_DEP.fullmatch(path))


_MODULES_DEP = re.compile(r"(usr/)?lib/modules/[^/]+/modules\.dep")


def modules_dep_relevant(text: str) -> str:
    """``modules.dep`` with the lines of other modules than the GPU's blanked (line numbers stay);
    real ones are about 1 MB, the initramfs check needs the amdgpu line."""
    out = []
    for line in text.split("\n"):
        name = module_name(line.split(":", 1)[0].strip())
        out.append(line if name and (name.startswith(("amd", "drm", "gpu")) or name == "radeon") else "")
    return "\n".join(out)


def dpkg_relevant(text: str) -> str:
    """``/var/lib/dpkg/status`` with every paragraph but those of GPU-related packages blanked.

    Blank lines instead of removed ones keep the line numbers evidence cites.
    """
    out = []
    keep = False
    for line in text.split("\n"):
        if line.startswith("Package:"):
            keep = bool(_RELEVANT_PACKAGE.match(line.split(":", 1)[1].strip()))
        elif not line.strip():
            keep = False
        out.append(line if keep else "")
    return "\n".join(out)


def pci_ids_amd(text: str) -> str:
    """The pci.ids header and the AMD/ATI vendor block (1002) with its devices and subsystems."""
    out = ["# pci.ids reduced by rocmdesk to vendor 1002 (AMD/ATI)"]
    inside = False
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        if not line.startswith("\t"):
            inside = line.startswith("1002 ")
            if line.startswith("C "):
                break
        if inside:
            out.append(line)
    return "\n".join(out) + "\n"


_ENV_LINE = re.compile(r"\b([A-Z_][A-Z0-9_]*)\s*=")


def env_lines_only(text: str) -> str:
    """Blank every line that does not set a GPU-stack variable; line numbers stay the same."""
    out = []
    for line in text.split("\n"):
        names = _ENV_LINE.findall(line)
        out.append(line if names and all(keep_env_name(n) for n in names) else "")
    return "\n".join(out)


_ID_IN_OUTPUT = re.compile(r"(?im)^.*(?:serial(?: number)?|unique ?id)[^:]*:\s*(0x[0-9a-f]+|[0-9a-z-]{6,})\s*$")


def identifiers_in_output(text: str) -> Iterable[str]:
    """Serial numbers and unique ids in tool output (rocm-smi --showserial, --showuniqueid)."""
    for match in _ID_IN_OUTPUT.finditer(text or ""):
        yield match.group(1)
    try:
        data = json.loads(text)
    except (ValueError, TypeError):
        return
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if isinstance(value, (dict, list)):
                    stack.append(value)
                elif isinstance(value, str) and re.search(r"serial|unique", key, re.IGNORECASE):
                    yield value
        elif isinstance(item, list):
            stack.extend(item)
