"""Machine facts the driver, permissions, environment and display checks share, read once per run.

Pure parsers (``parse_*``) are separated from the reads so they can be tested on strings; the
:class:`HostFacts` object reads through the host root and caches each fact, so the live machine,
a test tree and a support snapshot all give the same answers. Facts that cannot be read are None
(or empty) and the checks turn that into a "skipped: <reason>".
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shlex
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from rocmdesk.diagnosis.gfx import GfxVersion
from rocmdesk.host import CommandResult, CommandRunner, HostReadError, HostRoot, ReadFailure, RecordedRunner

log = logging.getLogger(__name__)

AMD_VENDOR = 0x1002
NVIDIA_VENDOR = 0x10DE
# PCI base classes of GPUs: 0x03 display controllers, 0x12 processing accelerators. Instinct MI300X /
# MI325X ("Aqua Vanjaram") report class 0x1200, not 0x03 (lspci in apache/cloudstack#11701).
GPU_PCI_CLASSES = (0x03, 0x12)

# Precedence order of kmod's configuration folders: a file name found in an earlier folder hides
# the same name in later ones (modprobe.d(5)).
MODPROBE_DIRS: tuple[str, ...] = (
    "/etc/modprobe.d", "/run/modprobe.d", "/usr/local/lib/modprobe.d", "/usr/lib/modprobe.d",
    "/lib/modprobe.d",
)
SECURE_BOOT_VAR = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
# The DKMS module signing certificate (public half only). DKMS 3.x: "mok_certificate=/var/lib/dkms/mok.pub
# (default: /var/lib/dkms) ... If any of the files specified by mok_signing_key and mok_certificate are
# non-existent, dkms will re-create both files"; /etc/dkms/framework.conf and framework.conf.d/*.conf
# (dell/dkms dkms_framework.conf.in). Ubuntu's DKMS signs with update-secureboot-policy's MOK,
# /var/lib/shim-signed/mok/MOK.der (e.g. JacKeTUs/universal-pidff docs/SIGNING.md; rocm-facts 1e [S19]).
DKMS_FRAMEWORK_CONF = "/etc/dkms/framework.conf"
UBUNTU_MOK_CERT = "/var/lib/shim-signed/mok/MOK.der"
DKMS_MOK_CERT = "/var/lib/dkms/mok.pub"
# A kernel release as uname -r prints it ("6.8.0-51-generic", "6.10.3-arch1-1", "6.6.0+rpt-rpi-v8"). Anything
# else (a doctored snapshot) is "unknown": the value is pasted into commands shown to the user.
_KERNEL_RELEASE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+~-]{0,127}")


def kernel_release_of(text: str | None) -> str | None:
    """/proc/sys/kernel/osrelease's value, or None when missing or not shaped like a release."""
    value = (text or "").strip()
    return value if _KERNEL_RELEASE_RE.fullmatch(value) else None


_MOK_CERT_RE = re.compile(r"^\s*mok_certificate\s*=\s*(\S+)\s*(?:#.*)?$")
MOKUTIL_TIMEOUT_S = 5.0
MOKUTIL_MAX_BYTES = 64 << 10
KERNEL_LOG_FILES: tuple[str, ...] = ("/var/log/kern.log", "/var/log/dmesg")
KERNEL_LOG_MAX_BYTES = 32 << 20
# Without a syslog daemon (Fedora, Arch, openSUSE, many Ubuntu installs) the kernel log is only in the journal
# and the ring buffer. `-k` = kernel messages only, `-b 0` = this boot only, short-monotonic = dmesg-like
# "[seconds since boot]" stamps (journalctl(1)). Commands run on the live root only; a snapshot replays the
# outputs recorded when it was captured (rocmdesk/commands.json).
JOURNALCTL_KERNEL_ARGS: tuple[str, ...] = ("-k", "-b", "0", "--no-pager", "-o", "short-monotonic")
KERNEL_LOG_TOOL_DIRS: tuple[str, ...] = ("/usr/bin", "/bin", "/usr/sbin", "/sbin")
KERNEL_LOG_COMMAND_MAX_BYTES = 8 << 20  # one boot's kernel messages are rarely over 1 MiB; the head matters
JOURNALCTL_TIMEOUT_S = 10.0
DMESG_TIMEOUT_S = 5.0
ENV_VAR_NAMES_RE = re.compile(
    r"^(HSA_OVERRIDE_GFX_VERSION(?:_\d+)?|ROCR_VISIBLE_DEVICES|HIP_VISIBLE_DEVICES|CUDA_VISIBLE_DEVICES"
    r"|GPU_DEVICE_ORDINAL)$"
)
CONTAINER_MAIN_SCOPE = "the container's main process (PID 1)"
SHELL_FILES: tuple[str, ...] = (".profile", ".bash_profile", ".bashrc", ".zshrc", ".zprofile")
PROCESS_SCAN_LIMIT = 4096
PROCESS_SCAN_BUDGET_S = 0.3


# -- records -----------------------------------------------------------------------------------


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


@dataclass(frozen=True, slots=True)
class GroupEntry:
    name: str
    gid: int
    members: tuple[str, ...]
    line: int


@dataclass(frozen=True, slots=True)
class PasswdEntry:
    name: str
    uid: int
    gid: int
    home: str
    line: int


@dataclass(frozen=True, slots=True)
class ProcStatus:
    uid: int
    gid: int | None
    groups: tuple[int, ...] | None  # None when the line is missing
    name: str | None


@dataclass(frozen=True, slots=True)
class SourcedLine:
    """One line of a file (or command output) with where it came from."""

    path: str
    line: int | None
    text: str


@dataclass(frozen=True, slots=True)
class EnvSetting:
    """An environment variable as set by one source (a process, a file, a systemd unit)."""

    name: str
    value: str
    path: str  # host path of the file that sets it ("/proc/1234/environ", "/etc/environment")
    line: int | None
    scope: str  # "this session", "python3 process 1234", "/etc/environment", "ollama.service" (no parentheses:
    # renderers put a finding's subject in parentheses, so a scope with its own would nest)

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path


@dataclass(slots=True)
class KernelLog:
    """This boot's kernel messages and where they came from (evidence cites ``source`` and the line)."""

    source: str  # host path, or "<command line> (output)" for journalctl/dmesg output
    lines: list[tuple[int | None, str]] = field(default_factory=list)  # (line in the source, text)
    truncated: bool = False  # only the first KERNEL_LOG_COMMAND_MAX_BYTES of a command's output were kept
    passed_over: tuple[str, ...] = ()  # why sources preferred to this one were not used

    def grep(self, pattern: re.Pattern[str]) -> list[tuple[SourcedLine, re.Match[str]]]:
        out = []
        for number, text in self.lines:
            m = pattern.search(text)
            if m:
                out.append((SourcedLine(self.source, number, text.strip()), m))
        return out


@dataclass(frozen=True, slots=True)
class DeviceNode:
    path: str  # host path, "/dev/kfd"
    mode: int
    uid: int
    gid: int
    acl_users: frozenset[int] = frozenset()  # uids an access ACL grants read+write

    def describe(self, group_name: str | None) -> str:
        perms = stat.filemode(self.mode)
        return f"{perms} owner uid {self.uid}, group {group_name or self.gid} (gid {self.gid})"


# -- pure parsers ---------------------------------------------------------------------------------


def parse_int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text.strip(), 0)
    except ValueError:
        return None


def parse_key_values(text: str) -> dict[str, str]:
    """KFD ``properties`` style: ``key value`` per line."""
    out = {}
    for line in text.splitlines():
        key, _, value = line.strip().partition(" ")
        if key:
            out[key] = value.strip()
    return out


def parse_os_release(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        try:
            parts = shlex.split(value)
            value = parts[0] if parts else ""
        except ValueError:
            value = value.strip("\"'")
        out[key.strip()] = value
    return out


def distro_family(os_release: dict[str, str]) -> str | None:
    """"debian", "fedora", "arch", "suse" or None: the initramfs generator and package database families.
    Fix steps use the finer key of :func:`rocmdesk.diagnosis.distro.family_key` (Ubuntu, Mageia, Fedora Atomic,
    NixOS differ in commands)."""
    from rocmdesk.diagnosis.distro import coarse, family_key

    return coarse(family_key(os_release))


def parse_group(text: str) -> list[GroupEntry]:
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.strip().split(":")
        if len(parts) < 4 or line.lstrip().startswith("#"):
            continue
        try:
            gid = int(parts[2])
        except ValueError:
            continue
        members = tuple(m.strip() for m in parts[3].split(",") if m.strip())
        out.append(GroupEntry(parts[0], gid, members, number))
    return out


def parse_passwd(text: str) -> list[PasswdEntry]:
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.strip().split(":")
        if len(parts) < 7 or line.lstrip().startswith("#"):
            continue
        try:
            out.append(PasswdEntry(parts[0], int(parts[2]), int(parts[3]), parts[5], number))
        except ValueError:
            continue
    return out


def parse_proc_status(text: str) -> ProcStatus | None:
    """``Uid:``/``Gid:``/``Groups:`` of /proc/<pid>/status; None without a Uid line."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    try:
        uid = int(fields["Uid"].split()[0])
    except (KeyError, IndexError, ValueError):
        return None
    gid = None
    if "Gid" in fields and fields["Gid"].split():
        try:
            gid = int(fields["Gid"].split()[0])
        except ValueError:
            gid = None
    groups = None
    if "Groups" in fields:
        try:
            groups = tuple(int(g) for g in fields["Groups"].split())
        except ValueError:
            groups = None
    return ProcStatus(uid, gid, groups, fields.get("Name"))


def parse_environ(data: bytes) -> list[tuple[str, str]]:
    out = []
    for item in data.split(b"\0"):
        if b"=" not in item:
            continue
        name, value = item.split(b"=", 1)
        out.append((name.decode("utf-8", "replace"), value.decode("utf-8", "replace")))
    return out


_ASSIGN_RE = re.compile(r"^\s*(?:export\s+|declare\s+-x\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_EXPORT_RE = re.compile(r"^\s*(?:export\s+|declare\s+-x\s+)([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def _unquote_shell_value(raw: str) -> str:
    try:
        parts = shlex.split(raw, comments=True)
    except ValueError:
        return raw.strip().strip("\"'")
    return " ".join(parts) if parts else ""


def parse_env_assignments(text: str, export_only: bool) -> list[tuple[int, str, str]]:
    """(line, name, value) of ``NAME=value`` lines (``/etc/environment``) or, with
    ``export_only``, of ``export NAME=value`` lines (shell start-up files)."""
    pattern = _EXPORT_RE if export_only else _ASSIGN_RE
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("#"):
            continue
        m = pattern.match(line)
        if m:
            out.append((number, m.group(1), _unquote_shell_value(m.group(2))))
    return out


def parse_systemd_environment(text: str) -> tuple[list[tuple[int, str, str]], list[tuple[int, str]]]:
    """``Environment=`` assignments and ``EnvironmentFile=`` paths of a unit file or drop-in."""
    assignments: list[tuple[int, str, str]] = []
    files: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith(("#", ";")) or "=" not in stripped:
            continue
        key, value = stripped.split("=", 1)
        key = key.strip()
        if key == "Environment":
            try:
                words = shlex.split(value)
            except ValueError:
                words = value.split()
            for word in words:
                if "=" in word:
                    name, val = word.split("=", 1)
                    assignments.append((number, name, val))
        elif key == "EnvironmentFile" and value.strip():
            files.append((number, value.strip()))
    return assignments, files


# -- modprobe.d, read exactly as kmod reads it ----------------------------------------------------
# Sources (kmod-project/kmod): libkmod/libkmod-config.c kmod_config_new(), conf_files_list(),
# conf_files_filter_out(), conf_files_insert_sorted(), kmod_config_parse(), kmod_config_parse_kcmdline();
# getline_wrapped() (libkmod-util.c / shared/util.c); default_config_paths[] (libkmod.c); the kernel's
# next_arg() (lib/cmdline.c) and parameq() (kernel/params.c). The root helper (helper/rocmdesk-helper,
# stdlib only) keeps its own copy of kmod_logical_lines; tests/unit/diagnosis/test_kmod_config.py feeds the
# same files to both.

# kmod's own separators: strtok_r(line, "\t ") -- not \v, \f, \r or Unicode spaces.
KMOD_SEPARATORS = " \t"
# The kernel's isspace() for module arguments (lib/ctype.c: \t \n \v \f \r and space; 0xa0 never reaches
# it from a UTF-8 file as one byte).
_KERNEL_SPACES = " \t\n\v\f\r"


def kmod_logical_lines(text: str) -> list[tuple[int, str]]:
    """(first physical line number, logical line) as libkmod's getline_wrapped() reads a file, without
    the empty lines and the comments kmod_config_parse() skips.

    A backslash right before "\\n" joins the next physical line with nothing in between; any other
    backslash is dropped and the character after it kept; only "\\n" ends a line (not "\\r", "\\f" or
    Unicode separators); a logical line whose FIRST character is "#" is a comment (an indented "#" is not:
    kmod reports it as a bad line and ignores it). The text is returned unstripped.
    """
    out: list[tuple[int, str]] = []
    buf: list[str] = []
    start = number = 1
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and text[i + 1:i + 2] == "\n":
            number += 1
            i += 2
            continue
        if ch == "\\":
            buf.append(text[i + 1:i + 2])
            i += 2
            continue
        if ch == "\n":
            out.append((start, "".join(buf)))
            buf = []
            number += 1
            start = number
        else:
            buf.append(ch)
        i += 1
    if buf or start != number:
        out.append((start, "".join(buf)))
    return [(n, line) for n, line in out if line and not line.startswith("#")]


def _strtok(text: str, pos: int) -> tuple[str | None, int]:
    """C strtok_r(…, " \\t"): (token or None, where the next call starts)."""
    while pos < len(text) and text[pos] in KMOD_SEPARATORS:
        pos += 1
    if pos >= len(text):
        return None, pos
    end = pos
    while end < len(text) and text[end] not in KMOD_SEPARATORS:
        end += 1
    return text[pos:end], min(end + 1, len(text))


def kmod_underscores(name: str) -> str:
    """kmod's underscores(): "-" becomes "_" in a module name, except inside a [...] pattern."""
    out = []
    in_brackets = False
    for ch in name:
        if ch == "[":
            in_brackets = True
        elif ch == "]":
            in_brackets = False
        out.append("_" if ch == "-" and not in_brackets else ch)
    return "".join(out)


def parse_kmod_command(logical: str) -> tuple[str, str | None, str | None] | None:
    """(command, module name normalised, rest of the line) of one logical modprobe.d line, split as
    kmod_config_parse() does: the command and the module are strtok_r(" \\t") words, the rest is everything
    after the one separator that ends the module name (None when nothing is left). None for a blank line."""
    logical = logical.split("\0", 1)[0]  # a C string: kmod sees nothing after a NUL
    command, pos = _strtok(logical, 0)
    if command is None:
        return None
    module, pos = _strtok(logical, pos)
    rest = logical[pos:] if module is not None and pos < len(logical) else None
    return command, kmod_underscores(module) if module is not None else None, rest


def parse_module_args(text: str) -> list[tuple[int, str, str | None]]:
    """(offset, name, value) of each ``name[=value]`` in a module's argument string, as the kernel's
    parse_args()/next_arg() split it: words end at unquoted whitespace, a double quote toggles quoting,
    quotes around a value (or the whole word) are dropped, and a bare ``--`` ends the arguments.
    Offsets index ``text``; like C, nothing after a NUL is seen."""
    text = text.split("\0", 1)[0]
    out: list[tuple[int, str, str | None]] = []
    n = len(text)
    pos = 0
    while True:
        while pos < n and text[pos] in _KERNEL_SPACES:  # skip_spaces()
            pos += 1
        if pos >= n:
            return out
        start = pos
        quoted = text[pos] == '"'
        args = pos + 1 if quoted else pos
        in_quote = quoted
        i = 0
        equals = 0  # as in C: 0 means "no '=' yet", so a '=' in the first position is no separator
        while args + i < n:
            ch = text[args + i]
            if ch in _KERNEL_SPACES and not in_quote:
                break
            if equals == 0 and ch == "=":
                equals = i
            if ch == '"':
                in_quote = not in_quote
            i += 1
        word = list(text[args:args + i])
        value: str | None = None
        if equals:
            value_start = equals + 1
            if value_start < len(word) and word[value_start] == '"':
                value_start += 1
                if word and word[-1] == '"':
                    word[-1] = "\0"
            if quoted and word and word[-1] == '"':
                word[-1] = "\0"
            value = "".join(word[value_start:]).split("\0", 1)[0]
            name = "".join(word[:equals])
        else:
            if quoted and word and word[-1] == '"':
                word[-1] = "\0"
            name = "".join(word).split("\0", 1)[0]
        if value is None and name == "--":
            return out
        out.append((start, name, value))
        pos = args + i + 1  # next_arg() consumes the separator


def param_eq(a: str, b: str) -> bool:
    """The kernel's parameq(): "-" and "_" are the same in parameter names."""
    return a.replace("-", "_") == b.replace("-", "_")


@dataclass(frozen=True, slots=True)
class ModuleParam:
    """One ``name=value`` a module gets when modprobe loads it, with the line that sets it."""

    name: str
    value: str | None
    source: SourcedLine  # a modprobe.d logical line (text unstripped), or /proc/cmdline with the word

    @property
    def on_cmdline(self) -> bool:
        return self.source.path == "/proc/cmdline"


def _kcmdline_options(args: Iterable[str], module: str) -> list[tuple[str, str]]:
    """(word, its ``param=value`` part) of the kernel command line words kmod_config_parse_kcmdline() hands
    ``module``: the module name ends at the first ".", and a "=" before that dot makes the word no module
    option."""
    out = []
    for arg in args:
        head, dot, param = arg.partition(".")
        if not dot or "=" in head or "=" not in param:
            continue
        if kmod_underscores(head.strip('"')) == module:
            out.append((arg, param))
    return out

def cmdline_values(args: Iterable[str], key: str) -> list[str]:
    """Every value of ``key=value`` on the kernel command line, in order."""
    prefix = key + "="
    return [arg[len(prefix):].strip('"') for arg in args if arg.startswith(prefix)]


def module_param(args: Iterable[str], module: str, param: str) -> str | None:
    """The last ``module.param=`` value on the command line (the kernel applies them in order);
    dashes and underscores are the same in parameter names."""
    wanted = f"{module}.{param}".replace("-", "_")
    value = None
    for arg in args:
        key, sep, val = arg.partition("=")
        if sep and key.replace("-", "_") == wanted:
            value = val.strip('"')
    return value


def parse_posix_acl_users(data: bytes, want: int = 0o6) -> frozenset[int]:
    """uids an access ACL xattr (``system.posix_acl_access``) grants ``want`` permissions to."""
    if len(data) < 4 or int.from_bytes(data[:4], "little") != 2:
        return frozenset()
    users = set()
    mask = 0o7
    entries = []
    for offset in range(4, len(data) - 7, 8):
        tag = int.from_bytes(data[offset:offset + 2], "little")
        perm = int.from_bytes(data[offset + 2:offset + 4], "little")
        ident = int.from_bytes(data[offset + 4:offset + 8], "little")
        entries.append((tag, perm, ident))
        if tag == 0x10:  # ACL_MASK
            mask = perm
    for tag, perm, ident in entries:
        if tag == 0x02 and (perm & mask & want) == want:  # ACL_USER
            users.add(ident)
    return frozenset(users)


def effective_param(params: Iterable[ModuleParam], name: str) -> ModuleParam | None:
    """The setting of ``name`` the module ends up with: the last one (the kernel sets it once per word)."""
    found = None
    for param in params:
        if param_eq(param.name, name):
            found = param
    return found


# -- the facts of one root -------------------------------------------------------------------------


class HostFacts:
    """Facts of one host root, each read on first use and cached for the rest of the run."""

    def __init__(self, root: HostRoot, runner: CommandRunner | None = None,
                 cmdline_args: list[str] | None = None, kernel_release: str | None = None) -> None:
        self.root = root
        self.runner = runner
        self._cmdline_args = cmdline_args
        self._kernel_release = kernel_release

    # -- small helpers ---------------------------------------------------------------------------
    def read(self, path: str) -> str | None:
        try:
            return self.root.read_text(path)
        except HostReadError:
            return None

    def read_reason(self, path: str) -> tuple[str | None, str | None]:
        """(text, None) or (None, "why it could not be read")."""
        try:
            return self.root.read_text(path), None
        except HostReadError as exc:
            return None, f"{path}: {exc.failure.value}"

    @functools.cached_property
    def cmdline_args(self) -> list[str]:
        if self._cmdline_args is not None:
            return self._cmdline_args
        text = self.read("/proc/cmdline")
        return text.split() if text else []

    @functools.cached_property
    def kernel_release(self) -> str | None:
        if self._kernel_release is not None:
            return self._kernel_release
        return kernel_release_of(self.read("/proc/sys/kernel/osrelease"))

    # -- distribution ----------------------------------------------------------------------------
    @functools.cached_property
    def os_release(self) -> dict[str, str]:
        for path in ("/etc/os-release", "/usr/lib/os-release"):
            text = self.read(path)
            if text:
                return parse_os_release(text)
        return {}

    @functools.cached_property
    def distro_family(self) -> str | None:
        return distro_family(self.os_release)

    @functools.cached_property
    def distro_key(self) -> str | None:
        """The fine family (rocmdesk.diagnosis.distro.FAMILIES) whose commands the fix steps name."""
        from rocmdesk.diagnosis.distro import family_key

        return family_key(self.os_release, ostree_booted=self.root.exists("/run/ostree-booted"))

    def grub_has(self, word: str) -> bool | None:
        """Does a GRUB_CMDLINE_LINUX* line of /etc/default/grub hold ``word``? None when there is no such file."""
        text = self.read("/etc/default/grub")
        if text is None:
            return None
        return any(line.lstrip().startswith("GRUB_CMDLINE_LINUX") and word in line.split("=", 1)[-1]
                   for line in text.splitlines())

    @functools.cached_property
    def container(self):  # -> rocmdesk.diagnosis.container.ContainerInfo | None
        from rocmdesk.diagnosis.container import detect

        return detect(self.root)

    @property
    def in_container(self) -> bool:
        return self.container is not None

    # -- WSL ----------------------------------------------------------------------------------------
    @functools.cached_property
    def wsl_evidence(self) -> list[SourcedLine]:
        """Why this looks like WSL (facts 4c [S40]); empty when it does not."""
        out = []
        for path in ("/proc/version", "/proc/sys/kernel/osrelease"):
            text = self.read(path)
            if text and "microsoft" in text.lower():
                out.append(SourcedLine(path, 1, text.strip().splitlines()[0][:200]))
        if self.root.exists("/dev/dxg"):
            out.append(SourcedLine("/dev/dxg", None, "exists (the WSL GPU paravirtualisation device)"))
        return out

    @property
    def is_wsl(self) -> bool:
        return bool(self.wsl_evidence)

    # -- PCI and KFD ----------------------------------------------------------------------------------
    @functools.cached_property
    def pci_devices(self) -> list[PciDevice] | None:
        """Every PCI device; None when the root has no readable sys/bus/pci/devices."""
        base = "/sys/bus/pci/devices"
        if not self.root.is_dir(base):
            return None
        out = []
        for name in self.root.listdir(base):
            path = f"{base}/{name}"
            uevent = {}
            text = self.read(f"{path}/uevent")
            if text:
                uevent = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
            vendor = parse_int(self.read(f"{path}/vendor"))
            device = parse_int(self.read(f"{path}/device"))
            if (vendor is None or device is None) and "PCI_ID" in uevent:
                ven, _, dev = uevent["PCI_ID"].partition(":")
                vendor = vendor if vendor is not None else parse_int("0x" + ven)
                device = device if device is not None else parse_int("0x" + dev)
            pci_class = parse_int(self.read(f"{path}/class"))
            if pci_class is None and "PCI_CLASS" in uevent:
                pci_class = parse_int("0x" + uevent["PCI_CLASS"])
            out.append(PciDevice(name, vendor, device, pci_class, self._bound_driver(path, uevent), path))
        return out

    def _bound_driver(self, device_path: str, uevent: dict[str, str]) -> str | None:
        target = self.root.readlink(f"{device_path}/driver")
        if target is None:
            try:
                target = os.readlink(os.path.join(self.root.real_path(device_path), "driver"))
            except (OSError, HostReadError):
                target = None
        if target:
            return os.path.basename(target.rstrip("/")) or None
        if self.root.exists(f"{device_path}/driver"):
            return None
        return uevent.get("DRIVER") or None

    @functools.cached_property
    def amd_display_devices(self) -> list[PciDevice]:
        """AMD GPUs on the PCI bus: display controllers and Instinct accelerators (class 0x12)."""
        return [d for d in self.pci_devices or [] if d.is_amd_gpu]

    @functools.cached_property
    def has_nvidia_gpu(self) -> bool:
        return any(d.is_nvidia_gpu for d in self.pci_devices or [])

    @functools.cached_property
    def kfd_nodes(self) -> list[KfdNode] | None:
        """KFD topology nodes (CPU and GPU); None when there is no topology folder."""
        base = "/sys/class/kfd/kfd/topology/nodes"
        if not self.root.is_dir(base):
            return None
        out = []
        for name in self.root.listdir(base):
            if not name.isdigit():
                continue
            text = self.read(f"{base}/{name}/properties")
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

    @functools.cached_property
    def kfd_gpu_nodes(self) -> list[KfdNode]:
        return [n for n in self.kfd_nodes or [] if n.gfx is not None]

    @functools.cached_property
    def amd_gpus(self) -> list[GpuFact]:
        """AMD GPUs: PCI display devices joined with KFD nodes; KFD-only GPUs when the root has
        no PCI folder (some snapshots)."""
        nodes_by_pci = {n.pci_address: n for n in self.kfd_gpu_nodes if n.pci_address}
        out = []
        seen = set()
        for dev in self.amd_display_devices:
            node = nodes_by_pci.get(dev.address)
            out.append(GpuFact(dev.address, dev.device, dev.driver, node.gfx if node else None,
                               node.node_id if node else None, node.unique_id if node else None))
            seen.add(dev.address)
        for node in self.kfd_gpu_nodes:
            if node.pci_address not in seen and (node.vendor_id in (None, AMD_VENDOR)):
                out.append(GpuFact(node.pci_address or f"KFD node {node.node_id}", None, "amdgpu", node.gfx,
                                   node.node_id, node.unique_id))
        return out

    # -- amdgpu module ---------------------------------------------------------------------------------
    @functools.cached_property
    def proc_modules(self) -> set[str] | None:
        text = self.read("/proc/modules")
        if text is None:
            return None
        return {line.split()[0] for line in text.splitlines() if line.strip()}

    @functools.cached_property
    def amdgpu_initstate(self) -> str | None:
        text = self.read("/sys/module/amdgpu/initstate")
        return text.strip() if text is not None else None

    @functools.cached_property
    def amdgpu_loaded(self) -> bool | None:
        """True when loaded or built in (facts 1a [S14]); None when nothing says either way."""
        if self.proc_modules is not None and "amdgpu" in self.proc_modules:
            return True
        if self.amdgpu_initstate == "live":
            return True
        if self.amdgpu_initstate is None and self.root.is_dir("/sys/module/amdgpu/parameters"):
            return True  # built in: no initstate, but parameters exist
        if self.proc_modules is not None or self.root.is_dir("/sys/module"):
            return False
        return None

    def amdgpu_loaded_evidence(self) -> list[SourcedLine]:
        out = []
        if self.proc_modules is not None:
            # the text does not repeat the path: every renderer shows "path: text"
            state = "amdgpu is listed" if "amdgpu" in self.proc_modules else "amdgpu is not listed"
            out.append(SourcedLine("/proc/modules", None, state))
        if self.amdgpu_initstate is not None:
            out.append(SourcedLine("/sys/module/amdgpu/initstate", 1, self.amdgpu_initstate))
        elif not self.root.exists("/sys/module/amdgpu"):
            out.append(SourcedLine("/sys/module/amdgpu", None, "missing: amdgpu is neither loaded nor built in"))
        return out

    @functools.cached_property
    def amdgpu_builtin(self) -> SourcedLine | None:
        """Where it shows that amdgpu is built into the running kernel, or None (a module, or unknown).

        ``modules.builtin`` lists every built-in module's would-be path ("kernel/drivers/gpu/drm/amd/amdgpu/
        amdgpu.ko"); the kernel's config (CONFIG_DRM_AMDGPU=y) says the same. A built-in driver is never
        loaded by modprobe (kmod reports "Module amdgpu is builtin" and does nothing), so no modprobe.d
        line (options, blacklist, install) reaches it; only ``amdgpu.<param>=`` on the kernel command line
        does: "Parameters for modules which are built into the kernel need to be specified on the kernel
        command line" (Documentation/admin-guide/kernel-parameters.rst; kmod tools/modprobe.c).
        """
        kver = self.kernel_release
        if not kver:
            return None
        for base in ("/lib/modules", "/usr/lib/modules"):
            path = f"{base}/{kver}/modules.builtin"
            text = self.read(path)
            if text is None:
                continue
            for number, line in enumerate(text.splitlines(), start=1):
                if re.fullmatch(r"(?:\S+/)?amdgpu\.ko", line.strip()):
                    return SourcedLine(path, number, line.strip())
            return None  # the list is there and amdgpu is not in it: a module
        config = f"/boot/config-{kver}"
        for number, line in enumerate((self.read(config) or "").splitlines(), start=1):
            if line.strip() == "CONFIG_DRM_AMDGPU=y":
                return SourcedLine(config, number, line.strip())
        return None

    @functools.cached_property
    def ppfeaturemask(self) -> int | None:
        return parse_int(self.read("/sys/module/amdgpu/parameters/ppfeaturemask"))

    # -- module configuration ---------------------------------------------------------------------------
    @functools.cached_property
    def modprobe_dirs(self) -> list[str]:
        """The modprobe.d folders that exist, in kmod's order, each real folder once
        (/lib -> /usr/lib on merged-/usr systems)."""
        out: list[str] = []
        seen_real: set[str] = set()
        for folder in MODPROBE_DIRS:
            try:
                real_folder = self.root.real_path(folder)
            except HostReadError:
                continue
            if real_folder in seen_real or not self.root.is_dir(folder):
                continue
            seen_real.add(real_folder)
            out.append(folder)
        return out

    @functools.cached_property
    def modprobe_files(self) -> list[str]:
        """The configuration files kmod reads, in its order: every ``*.conf`` and ``*.alias`` of the
        folders (not dot files, not folders), sorted by name as strcmp() does; a name already taken by an
        earlier folder hides the same name in later ones (/etc/modprobe.d/x.conf hides
        /usr/lib/modprobe.d/x.conf), as conf_files_list() and conf_files_insert_sorted() do."""
        chosen: dict[str, str] = {}
        for folder in self.modprobe_dirs:
            for name in self.root.listdir(folder):
                if name in chosen or name.startswith(".") or not name.endswith((".conf", ".alias")):
                    continue
                if self.root.is_dir(f"{folder}/{name}"):
                    continue  # "Directories inside directories are not supported"
                chosen[name] = f"{folder}/{name}"
        return [chosen[name] for name in sorted(chosen, key=os.fsencode)]

    @functools.cached_property
    def modprobe_lines(self) -> list[SourcedLine]:
        """kmod's logical lines of :attr:`modprobe_files`, in its order, comments left out, text unstripped."""
        out = []
        for path in self.modprobe_files:
            text = self.read(path)
            if text:
                out.extend(SourcedLine(path, number, line) for number, line in kmod_logical_lines(text))
        return out

    def module_options_lines(self, module: str) -> list[SourcedLine]:
        """The modprobe.d ``options <module> ...`` lines, in kmod's order (whether or not they apply)."""
        out = []
        for line in self.modprobe_lines:
            parsed = parse_kmod_command(line.text)
            if parsed and parsed[0] == "options" and parsed[1] == module and parsed[2] is not None:
                out.append(line)
        return out

    def module_params(self, module: str) -> list[ModuleParam]:
        """Every parameter ``module`` gets, in order: the ``options`` lines of the files, then ``module.param=``
        words of the kernel command line (kmod parses the command line last). kmod joins them with spaces
        and the kernel applies them left to right, so for a parameter set more than once the LAST one
        counts (see :func:`effective_param`). A built-in amdgpu (:attr:`amdgpu_builtin`) is never loaded
        by modprobe, so it gets the command line words only."""
        pieces: list[tuple[str, SourcedLine]] = []
        builtin = module == "amdgpu" and self.amdgpu_builtin is not None
        for line in [] if builtin else self.module_options_lines(module):
            parsed = parse_kmod_command(line.text)
            assert parsed is not None and parsed[2] is not None
            pieces.append((parsed[2].replace("\t", " "), line))  # kmod_config_add_options()
        for word, param in _kcmdline_options(self.cmdline_args, module):
            pieces.append((param, SourcedLine("/proc/cmdline", 1, word)))
        joined = ""
        starts: list[int] = []
        for text, _line in pieces:
            if joined:
                joined += " "
            starts.append(len(joined))
            joined += text
        out = []
        for offset, name, value in parse_module_args(joined):
            index = max(i for i, start in enumerate(starts) if start <= offset)
            out.append(ModuleParam(name, value, pieces[index][1]))
        return out

    def regenerate_initramfs_step(self) -> str:
        """:func:`initramfs_regenerate_step` for this root: the generator the initramfs inspection picks
        (rocmdesk.diagnosis.initramfs.choose_generator, the rule the root helper uses) and the running kernel."""
        from rocmdesk.diagnosis.distro import initramfs_step_for_image_systems
        from rocmdesk.diagnosis.initramfs import choose_generator, detect_generators

        image_step = initramfs_step_for_image_systems(self.distro_key)
        if image_step is not None:
            return image_step
        kver = self.kernel_release
        generators = detect_generators(self.root)
        chosen = choose_generator(self.root, generators, kver) if generators and kver else None
        if chosen is None and len(generators) == 1:
            chosen = generators[0]
        if chosen is None and len(generators) > 1:  # several and none confirmed: name them all, guess none
            return initramfs_regenerate_step(None, None, kver)
        return initramfs_regenerate_step(self.distro_family, chosen[0] if chosen else None, kver)

    # -- kernel log -------------------------------------------------------------------------------------
    @property
    def kernel_log(self) -> KernelLog | None:
        """The current boot's kernel messages: a log file, else ``journalctl -k -b 0``, else ``dmesg``."""
        return self.kernel_log_search[0]

    @property
    def kernel_log_problems(self) -> list[str]:
        """Why each kernel log source was not used, in words (the skip reason when none was)."""
        return self.kernel_log_search[1]

    @functools.cached_property
    def kernel_log_search(self) -> tuple[KernelLog | None, list[str]]:
        """Try the sources in order of preference; (log or None, why the others were passed over).

        A file counts when it holds this boot's start ("Linux version" banner); one without it was rotated
        since boot (the firmware and BAR lines are in an older file), so the journal or ring buffer comes
        first and the file is the last resort. A file last written before this boot started (btime of
        /proc/stat) is stale (the syslog daemon was removed) and never used."""
        problems: list[str] = []
        fallback: KernelLog | None = None
        boot_time = self._boot_time()  # /proc/stat: the live machine (a snapshot does not carry it)
        for path in KERNEL_LOG_FILES:
            text, exact, why, mtime = self._read_big(path)
            if text is None:
                problems.append(f"{path}: {why}")
                continue
            if boot_time is not None and mtime is not None and mtime < boot_time:
                problems.append(f"{path}: last written before this boot (nothing writes it any more)")
                continue
            if not _BOOT_MARKER.search(text):
                problems.append(f"{path}: does not reach back to this boot's start (rotated since boot)")
                fallback = fallback or KernelLog(path, _current_boot(text, exact))
                continue
            return KernelLog(path, _current_boot(text, exact), passed_over=tuple(problems)), problems
        for tool in ("journalctl", "dmesg"):
            log_, why = self._kernel_log_command(tool)
            if log_ is not None:
                log_.passed_over = tuple(problems)
                return log_, problems
            problems.append(why)
        if fallback is not None:
            fallback.passed_over = tuple(problems)
            return fallback, problems
        return None, problems

    def _kernel_log_command(self, tool: str) -> tuple[KernelLog | None, str]:
        """``journalctl -k -b 0 ...`` or ``dmesg`` output through the runner: (log, "") or (None, why not)."""
        runner = self.runner
        if runner is None:
            return None, f"{tool}: no command runner"
        if not self.root.is_live and not isinstance(runner, RecordedRunner):
            # never mix this machine's journal into another root: a snapshot uses what it recorded
            return None, f"{tool}: not run for a root that is not this machine"
        program = runner.which(tool, KERNEL_LOG_TOOL_DIRS)
        if program is None:
            return None, (f"{tool}: not installed" if self.root.is_live
                          else f"{tool}: no output recorded in this snapshot")
        argv = [program, *JOURNALCTL_KERNEL_ARGS] if tool == "journalctl" else [program]
        timeout = JOURNALCTL_TIMEOUT_S if tool == "journalctl" else DMESG_TIMEOUT_S
        result = runner.run(argv, timeout=timeout, max_output_bytes=KERNEL_LOG_COMMAND_MAX_BYTES)
        source = f"{' '.join(argv)} (output)"
        if tool == "journalctl":
            lines, why = parse_journal_output(result.stdout, result.stderr, result.returncode, result.error,
                                              result.timed_out, result.truncated)
        else:
            lines, why = parse_dmesg_output(result.stdout, result.stderr, result.returncode, result.error,
                                            result.timed_out, result.truncated, self._dmesg_restrict())
        if lines is None:
            return None, f"{tool}: {why}"
        return KernelLog(source, lines, truncated=result.truncated), ""

    def _dmesg_restrict(self) -> str | None:
        text = self.read("/proc/sys/kernel/dmesg_restrict")
        return text.strip() if text is not None else None

    def _boot_time(self) -> float | None:
        """Epoch seconds of this boot (``btime`` of /proc/stat), or None."""
        for line in (self.read("/proc/stat") or "").splitlines():
            words = line.split()
            if len(words) == 2 and words[0] == "btime":
                value = parse_int(words[1])
                # garbage, or a number no float holds (--root folder): no boot time rather than a crash
                return float(value) if value is not None and 0 < value < 1 << 63 else None
        return None

    def _read_big(self, path: str) -> tuple[str | None, bool, str, float | None]:
        """(text, line numbers exact, why not read, mtime); a log over the limit is read from its tail."""
        try:
            real = self.root.real_path(path)
            # O_NONBLOCK and regular files only: a FIFO planted in a snapshot or --root folder would block
            # open() forever, and a device node (a link to /dev/zero) would be read without end
            fd = os.open(real, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as fh:
                st = os.fstat(fh.fileno())
                if not stat.S_ISREG(st.st_mode):
                    return None, False, "not a regular file", None
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                fh.seek(max(0, size - KERNEL_LOG_MAX_BYTES))
                data = fh.read()
        except HostReadError as exc:
            return None, False, exc.failure.value, None
        except OSError as exc:
            return None, False, HostReadError.from_oserror(exc, path).failure.value, None
        exact = size <= KERNEL_LOG_MAX_BYTES
        text = data.decode("utf-8", "replace")
        if not exact:
            text = text.split("\n", 1)[-1]  # drop the cut first line
        return text, exact, "", st.st_mtime

    # -- Secure Boot, DKMS, packages ---------------------------------------------------------------
    @functools.cached_property
    def secure_boot(self) -> tuple[bool | None, str]:
        """(enabled, evidence text). The efivar holds 4 attribute bytes, then one data byte."""
        try:
            data = self.root.read_bytes(SECURE_BOOT_VAR, max_bytes=64)
        except HostReadError as exc:
            if exc.failure is ReadFailure.MISSING:
                if self.root.is_dir("/sys/firmware/efi"):
                    return False, "EFI firmware without a SecureBoot variable"
                if self.root.is_dir("/sys/firmware"):
                    return False, "legacy BIOS boot (no /sys/firmware/efi)"
                return None, "the root has no /sys/firmware"
            return None, f"{SECURE_BOOT_VAR}: {exc.failure.value}"
        if len(data) < 5:
            return None, f"{SECURE_BOOT_VAR}: {len(data)} bytes, expected 5"
        enabled = data[4] == 1
        return enabled, f"SecureBoot variable data byte = {data[4]} ({'enabled' if enabled else 'disabled'})"

    # -- the DKMS signing key (MOK) and mokutil -----------------------------------------------------------
    @functools.cached_property
    def dkms_mok_certificate_setting(self) -> SourcedLine | None:
        """The last ``mok_certificate=`` of /etc/dkms/framework.conf and framework.conf.d/*.conf (DKMS reads
        them in that order; dkms_framework.conf.in), ``$kernelver`` left as it is."""
        files = [DKMS_FRAMEWORK_CONF] + [f"{DKMS_FRAMEWORK_CONF}.d/{n}" for n in
                                         self.root.listdir(f"{DKMS_FRAMEWORK_CONF}.d") if n.endswith(".conf")]
        found = None
        for path in files:
            for number, line in enumerate((self.read(path) or "").splitlines(), start=1):
                m = _MOK_CERT_RE.match(line)
                if m:
                    found = SourcedLine(path, number, m.group(1).strip().strip("\"'"))
        return found if found is not None and found.text else None

    def dkms_mok_candidates(self) -> list[str]:
        """Where DKMS keeps the public half of its signing key, most specific first: the configured path,
        Ubuntu's shim-signed MOK, then DKMS 3.x's default. Only public certificates: the private keys
        (MOK.priv, mok.key) are never touched, so they can never end up in a support bundle."""
        out = []
        setting = self.dkms_mok_certificate_setting
        # a private key named as the certificate (a misconfiguration) is never looked at: not even its name may
        # pull it into a support bundle
        if setting is not None and setting.text.startswith("/") and not setting.text.endswith((".key", ".priv")):
            kver = self.kernel_release or ""
            out.append(setting.text.replace("${kernelver}", kver).replace("$kernelver", kver))
        for path in (UBUNTU_MOK_CERT, DKMS_MOK_CERT):
            if path not in out:
                out.append(path)
        return out

    @functools.cached_property
    def dkms_mok_certificate(self) -> str | None:
        """The DKMS signing certificate that exists in the root, or None (DKMS never made one)."""
        return next((path for path in self.dkms_mok_candidates() if self.root.is_file(path)), None)

    def mokutil(self, *args: str) -> tuple[CommandResult | None, str]:
        """``mokutil <args>`` through the runner (live root) or its recording (snapshot): (result, "") or
        (None, why it could not be asked). Only the read-only --sb-state and --test-key are ever run here;
        enrolling a key (--import) is the user's own step."""
        if args[:1] not in (("--sb-state",), ("--test-key",)):
            raise ValueError(f"mokutil {' '.join(args)} is not a read-only query")
        runner = self.runner
        if runner is None:
            return None, "mokutil: no command runner"
        if not self.root.is_live and not isinstance(runner, RecordedRunner):
            return None, "mokutil: not run for a root that is not this machine"
        program = runner.which("mokutil", KERNEL_LOG_TOOL_DIRS)
        if program is None:
            return None, ("mokutil is not installed" if self.root.is_live
                          else "mokutil output was not recorded in this snapshot")
        result = runner.run([program, *args], timeout=MOKUTIL_TIMEOUT_S, max_output_bytes=MOKUTIL_MAX_BYTES)
        if result.timed_out:
            return None, f"mokutil {args[0]} {result.error or 'timed out'}"
        if result.error:
            return None, ("mokutil output was not recorded in this snapshot" if "not recorded" in result.error
                          else f"mokutil {args[0]}: {result.error}")
        return result, ""

    def dkms_amdgpu_modules(self) -> list[str]:
        """Host paths of DKMS amdgpu modules for the running kernel (facts 1d [S16])."""
        kver = self.kernel_release
        if not kver:
            return []
        out = []
        seen = set()
        for base in ("/usr/lib/modules", "/lib/modules"):
            folder = f"{base}/{kver}/updates/dkms"
            for name in self.root.listdir(folder):
                if re.fullmatch(r"amdgpu\.ko(\.(xz|zst|gz))?", name):
                    try:
                        real = self.root.real_path(f"{folder}/{name}")
                    except HostReadError:
                        continue
                    if real not in seen:
                        seen.add(real)
                        out.append(f"{folder}/{name}")
        return out

    @functools.cached_property
    def dkms_amdgpu_refused(self) -> bool:
        """True when Secure Boot may be refusing the DKMS amdgpu: one exists for the running kernel, Secure Boot is
        on (efivar, else mokutil --sb-state) with shim's validation not turned off, and amdgpu is not loaded: the
        situation secure-boot-blocks-dkms examines. False when any of these is not known to hold. Shared so other
        checks (the initramfs rebuild) can put module signing first without depending on that check."""
        if not self.dkms_amdgpu_modules():
            return False
        enabled, _text = self.secure_boot
        if enabled is False:
            return False
        state, _why = self.mokutil("--sb-state")
        sb_enabled, shim_off = parse_mokutil_sb_state(state.stdout) if state is not None else (None, False)
        if shim_off or not (enabled or sb_enabled):
            return False
        return self.amdgpu_loaded is False

    @functools.cached_property
    def dpkg_status(self) -> dict[str, tuple[str, int]] | None:
        """Installed Debian packages: name -> (version, line of its ``Package:`` field)."""
        text = self.read("/var/lib/dpkg/status")
        if text is None:
            return None
        out: dict[str, tuple[str, int]] = {}
        name, version, status, start = None, "", "", 0
        for number, line in enumerate([*text.splitlines(), ""], start=1):
            if not line.strip():
                if name and status.split()[-1:] == ["installed"]:
                    out[name] = (version, start)
                name, version, status = None, "", ""
                continue
            if line.startswith("Package:"):
                name, start = line.split(":", 1)[1].strip(), number
            elif line.startswith("Version:"):
                version = line.split(":", 1)[1].strip()
            elif line.startswith("Status:"):
                status = line.split(":", 1)[1].strip()
        return out

    def other_package_list(self) -> tuple[str, list[str]] | None:
        """Installed package names from rpm or pacman through the runner (live or recorded)."""
        runner = self.runner
        if runner is None:
            return None
        for tool, argv_tail in (("rpm", ["-qa", "--qf", "%{NAME}\n"]), ("pacman", ["-Qq"])):
            program = runner.which(tool)
            if program is None:
                continue
            if not self.root.is_live and not isinstance(runner, RecordedRunner):
                return None
            result = runner.run([program, *argv_tail], timeout=20)
            if result.ok:
                return " ".join([program, *argv_tail]), [ln.strip() for ln in result.stdout.splitlines() if ln.strip()]
        return None

    @functools.cached_property
    def rocm_version(self) -> str | None:
        text = self.read("/opt/rocm/.info/version")
        if text and text.strip():
            return text.strip().splitlines()[0]
        versions = sorted(n[5:] for n in self.root.listdir("/opt") if n.startswith("rocm-"))
        return versions[-1] if versions else None

    # -- users and groups -----------------------------------------------------------------------------
    @functools.cached_property
    def groups(self) -> list[GroupEntry] | None:
        text = self.read("/etc/group")
        return parse_group(text) if text is not None else None

    @functools.cached_property
    def passwd(self) -> list[PasswdEntry] | None:
        text = self.read("/etc/passwd")
        return parse_passwd(text) if text is not None else None

    @functools.cached_property
    def self_status(self) -> ProcStatus | None:
        text = self.read("/proc/self/status")
        return parse_proc_status(text) if text else None

    @functools.cached_property
    def user(self) -> PasswdEntry | None:
        status = self.self_status
        if status is None or self.passwd is None:
            return None
        return next((p for p in self.passwd if p.uid == status.uid), None)

    def group_name(self, gid: int) -> str | None:
        return next((g.name for g in self.groups or [] if g.gid == gid), None)

    def group_by_name(self, name: str) -> GroupEntry | None:
        return next((g for g in self.groups or [] if g.name == name), None)

    def configured_gids(self, user: PasswdEntry) -> set[int]:
        """The user's groups as configured: primary gid plus every group listing the name."""
        gids = {user.gid}
        gids.update(g.gid for g in self.groups or [] if user.name in g.members)
        return gids

    def device_nodes(self) -> list[DeviceNode]:
        """/dev/kfd and the render nodes that exist in the root, with owner, group and mode."""
        paths = ["/dev/kfd"] + [f"/dev/dri/{n}" for n in self.root.listdir("/dev/dri") if n.startswith("renderD")]
        out = []
        for path in paths:
            try:
                st = self.root.stat(path)
            except HostReadError:
                continue
            acl_data = self.root.getxattr(path, "system.posix_acl_access")
            acl = parse_posix_acl_users(acl_data) if acl_data else frozenset()
            out.append(DeviceNode(path, st.st_mode, st.st_uid, st.st_gid, acl))
        return out

    # -- environment -----------------------------------------------------------------------------------
    @functools.cached_property
    def env_settings(self) -> list[EnvSetting]:
        """GPU-related environment variables from every place that sets them (facts 4b, 4g)."""
        out: list[EnvSetting] = []
        out.extend(self._process_env("/proc/self/environ", "this session"))
        if self.in_container:  # what `-e` / `environment:` gave the container's main process
            out.extend(self._process_env("/proc/1/environ", CONTAINER_MAIN_SCOPE))
        text = self.read("/etc/environment")
        if text:
            out.extend(EnvSetting(n, v, "/etc/environment", ln, "/etc/environment")
                       for ln, n, v in parse_env_assignments(text, export_only=False) if _wanted(n))
        for home in self._homes():
            for name in SHELL_FILES:
                path = f"{home}/{name}"
                text = self.read(path)
                if text:
                    out.extend(EnvSetting(n, v, path, ln, path)
                               for ln, n, v in parse_env_assignments(text, export_only=True) if _wanted(n))
            out.extend(self._unit_env(f"{home}/.config/systemd/user"))
        out.extend(self._unit_env("/etc/systemd/system"))
        for pid, comm in self.gpu_processes:
            out.extend(self._process_env(f"/proc/{pid}/environ", f"{comm} process {pid}"))
        return out

    def _process_env(self, path: str, scope: str) -> list[EnvSetting]:
        try:
            data = self.root.read_bytes(path)
        except HostReadError:
            return []
        return [EnvSetting(n, v, path, None, scope) for n, v in parse_environ(data) if _wanted(n)]

    def _homes(self) -> list[str]:
        user = self.user
        if user is not None and user.home and user.home != "/":
            return [user.home]
        return [f"/home/{n}" for n in self.root.listdir("/home")][:16]

    def _unit_env(self, folder: str) -> list[EnvSetting]:
        out: list[EnvSetting] = []
        files = [f"{folder}/{n}" for n in self.root.listdir(folder) if n.endswith(".service")]
        for name in self.root.listdir(folder):
            if name.endswith(".service.d"):
                drop_ins = self.root.listdir(f"{folder}/{name}")
                files.extend(f"{folder}/{name}/{c}" for c in drop_ins if c.endswith(".conf"))
        for path in files:
            if not self.root.is_file(path):
                continue
            text = self.read(path)
            if not text:
                continue
            unit = path.rsplit("/", 2)[-2][:-2] if path.endswith(".conf") else path.rsplit("/", 1)[-1]
            assignments, env_files = parse_systemd_environment(text)
            out.extend(EnvSetting(n, v, path, ln, unit) for ln, n, v in assignments if _wanted(n))
            for _ln, env_path in env_files:
                env_path = env_path.lstrip("-")
                env_text = self.read(env_path)
                if env_text:
                    out.extend(EnvSetting(n, v, env_path, ln2, unit)
                               for ln2, n, v in parse_env_assignments(env_text, export_only=False) if _wanted(n))
        return out

    @functools.cached_property
    def gpu_processes(self) -> list[tuple[int, str]]:
        """(pid, name) of processes holding /dev/kfd or a render node open; bounded in count and
        time. Other users' processes are unreadable and silently left out."""
        out = []
        start = time.monotonic()
        self_pid = os.getpid() if self.root.is_live else None
        pids = [n for n in self.root.listdir("/proc") if n.isdigit()][:PROCESS_SCAN_LIMIT]
        for name in pids:
            if time.monotonic() - start > PROCESS_SCAN_BUDGET_S:
                log.info("GPU process scan stopped after %.2f s", PROCESS_SCAN_BUDGET_S)
                break
            pid = int(name)
            if pid == self_pid:
                continue
            if holds_gpu(self.root, pid):
                comm = (self.read(f"/proc/{pid}/comm") or "?").strip()
                out.append((pid, comm))
        return out


def link_target(root: HostRoot, host_path: str) -> str | None:
    """A /proc link's target in host terms. The live /proc gives absolute targets; a support
    snapshot stores them relative (``../../../dev/kfd``), resolved here inside the root."""
    target = root.readlink(host_path)
    if target is None or target.startswith("/"):
        return target
    try:
        return root.resolve_host_path(host_path)
    except HostReadError:
        return None


def holds_gpu(root: HostRoot, pid: int) -> bool:
    """Whether process ``pid`` has /dev/kfd or a render node open."""
    fd_dir = f"/proc/{pid}/fd"
    for fd in root.listdir(fd_dir):
        target = link_target(root, f"{fd_dir}/{fd}")
        if target is not None and (target == "/dev/kfd" or target.startswith("/dev/dri/renderD")):
            return True
    return False


def _wanted(name: str) -> bool:
    return bool(ENV_VAR_NAMES_RE.match(name))


_BOOT_MARKER = re.compile(r"\bLinux version \d")
# journalctl's own lines: "-- Boot 0f3c... --", "-- No entries --", "-- Logs begin at ... --" (older versions)
_JOURNAL_META = re.compile(r"^-- .* --$")
# Printed (to stderr) when the user may not read the system journal, so `-k` shows nothing: "Hint: You are
# currently not seeing messages from other users and the system. Users in groups 'adm', 'systemd-journal' can
# see all messages." (systemd/systemd#23018, #7887); "No journal files were opened due to insufficient
# permissions." when no file at all can be opened.
_JOURNAL_DENIED = re.compile(r"not seeing messages|insufficient permissions|Permission denied", re.IGNORECASE)
# util-linux dmesg when the kernel refuses the syslog read: "dmesg: read kernel buffer failed: Operation not
# permitted" (kernel.dmesg_restrict = 1 and no CAP_SYSLOG: Documentation/admin-guide/sysctl/kernel.rst).
_DMESG_DENIED = re.compile(r"Operation not permitted|Permission denied", re.IGNORECASE)


def _command_failure(error: str | None, timed_out: bool, returncode: int | None, stderr: str) -> str:
    if timed_out:
        return error or "timed out and was killed"
    if error:
        return "no output recorded in this snapshot" if "not recorded" in error else error
    first = next((ln.strip() for ln in stderr.splitlines() if ln.strip()), "")
    return f"exited with status {returncode}" + (f" ({first[:160]})" if first else "")


def _numbered_output(stdout: str, truncated: bool) -> list[tuple[int | None, str]]:
    lines = stdout.splitlines()
    if truncated and lines and not stdout.endswith("\n"):
        lines = lines[:-1]  # the cut last line
    return [(number, text) for number, text in enumerate(lines, start=1)]


def parse_journal_output(stdout: str, stderr: str, returncode: int | None, error: str | None = None,
                         timed_out: bool = False, truncated: bool = False
                         ) -> tuple[list[tuple[int | None, str]] | None, str]:
    """(numbered kernel lines, "") of ``journalctl -k -b 0`` output, or (None, why it cannot be used)."""
    if timed_out or (error and not truncated):
        return None, _command_failure(error, timed_out, returncode, stderr)
    numbered = [(n, t) for n, t in _numbered_output(stdout, truncated) if t.strip() and not _JOURNAL_META.match(t)]
    if numbered:
        return numbered, ""
    if _JOURNAL_DENIED.search(stderr):
        return None, ("refused: this user may not read the system journal (root and members of the adm, wheel "
                      "or systemd-journal group may)")
    if returncode not in (0, None):
        return None, _command_failure(error, timed_out, returncode, stderr)
    return None, "no kernel messages for this boot in the journal"


# mokutil's answers (lcp/mokutil src/mokutil.c test_key(), print_skip_message(), print_sb_state()). Its exit
# status for --test-key flipped between versions (0.3: 0 = not enrolled, 1 = enrolled; later: 1 = not enrolled,
# 0 = enrolled or pending), so only the text is read.
_MOK_ENROLLED_RE = re.compile(r" is already enrolled$| is already in db$|is already in the built-in trusted keyring$")
_MOK_PENDING_RE = re.compile(r" is already in the enrollment request$")
_MOK_NOT_ENROLLED_RE = re.compile(r" is not enrolled$")


def parse_mokutil_test_key(stdout: str, stderr: str) -> str | None:
    """"enrolled", "pending" (imported, waiting for MokManager at the next boot), "not-enrolled", or None
    when the output says none of these (a damaged key, an old or odd mokutil)."""
    for line in [*stdout.splitlines(), *stderr.splitlines()]:
        line = line.strip()
        if _MOK_PENDING_RE.search(line):
            return "pending"
        if _MOK_ENROLLED_RE.search(line):
            return "enrolled"
        if _MOK_NOT_ENROLLED_RE.search(line):
            return "not-enrolled"
    return None


def parse_mokutil_sb_state(stdout: str) -> tuple[bool | None, bool]:
    """(Secure Boot enabled, shim's validation turned off) from ``mokutil --sb-state``. "SecureBoot validation
    is disabled in shim" (``mokutil --disable-validation``) makes the kernel treat Secure Boot as off: the EFI
    stub honours MokSBState (linux drivers/firmware/efi/libstub/secureboot.c)."""
    enabled = None
    for line in stdout.splitlines():
        line = line.strip()
        if line == "SecureBoot enabled":
            enabled = True
        elif line == "SecureBoot disabled":
            enabled = False
    return enabled, "SecureBoot validation is disabled in shim" in stdout


def parse_dmesg_output(stdout: str, stderr: str, returncode: int | None, error: str | None = None,
                       timed_out: bool = False, truncated: bool = False, dmesg_restrict: str | None = None
                       ) -> tuple[list[tuple[int | None, str]] | None, str]:
    """(this boot's numbered lines, "") of ``dmesg`` output, or (None, why it cannot be used)."""
    if timed_out or (error and not truncated):
        return None, _command_failure(error, timed_out, returncode, stderr)
    if stdout.strip():
        lines = _current_boot(stdout)
        if truncated and lines and not stdout.endswith("\n"):
            lines = lines[:-1]
        return lines, ""
    if _DMESG_DENIED.search(stderr) or (returncode not in (0, None) and dmesg_restrict == "1"):
        why = "refused"
        if dmesg_restrict == "1":
            why += " (kernel.dmesg_restrict = 1: only root, or a program with CAP_SYSLOG, may read the kernel log)"
        return None, why + "; `sudo rocmdesk diagnose` can read it"
    if returncode not in (0, None):
        return None, _command_failure(error, timed_out, returncode, stderr)
    return None, "printed nothing"


def _current_boot(text: str, exact: bool = True) -> list[tuple[int | None, str]]:
    """Numbered lines from the last "Linux version" banner on (the running boot); no numbers when
    the text is only the tail of the file."""
    lines = text.splitlines()
    start = 0
    for index in range(len(lines) - 1, -1, -1):
        if _BOOT_MARKER.search(lines[index]):
            start = index
            break
    return [(number if exact else None, lines[number - 1]) for number in range(start + 1, len(lines) + 1)]


# -- fix wording that depends on the distribution (facts 1b, 1c) -------------------------------------


# The generators' own commands, for one kernel: update-initramfs -u alone rebuilds only the NEWEST installed
# kernel's image, so -k names the one wanted (update-initramfs(8) [S10]); dracut --kver the same; mkinitcpio -P
# runs every preset (facts 1b). The root helper runs the same commands (helper/rocmdesk-helper).
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


def remove_kernel_arg_steps(family: str | None, arg: str, replacement: str | None = None,
                            grub_has_it: bool | None = None) -> list[str]:
    """How to take ``arg`` off the kernel command line for good (facts 1c), or, with
    ``replacement``, put that in its place (``modprobe.blacklist=nouveau`` when only amdgpu must
    leave a list: the other entries are the user's own choice and stay). ``family`` is a key of
    rocmdesk.diagnosis.distro.FAMILIES (the coarse "debian"/"fedora"/"arch"/"suse" work too)."""
    from rocmdesk.diagnosis.distro import kernel_arg_steps

    return kernel_arg_steps(family, arg, replacement, grub_has_it)
