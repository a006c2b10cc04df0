"""Scrubbing for support bundles: each kept file reduced to what the checks read, then scrubbed.

Pure functions over bytes and text (no I/O): :func:`transform` picks the reduction for a host path
(passwd and group lines, the GPU packages of dpkg's status, GPU-stack variables of a shell profile,
the AMD block of pci.ids, secret-free process command lines) and passes the rest through the
:class:`rocmdesk.report.redact.Redactor` of the bundle.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from rocmdesk.diagnosis.services import KNOWN_GPU_SERVICES
from rocmdesk.report import scrub
from rocmdesk.report.filters import SHELL_RC, home_file_ok, module_name, reduced
from rocmdesk.report.redact import SERIAL_FILE_NAMES, Redactor, keep_env_name
from rocmdesk.telemetry.accounts import parse_id

_RELEVANT_PACKAGE = re.compile(
    r"^(.*amdgpu.*|rocm.*|hip.*|hsa.*|rocminfo|rocm-smi.*|amd-smi.*|amdsmi.*|miopen.*|rocblas.*|rccl.*|"
    r"comgr|.*rocm.*|linux-image-.*|linux-headers-.*|linux-modules-.*|linux-firmware.*|firmware-amd.*|"
    r"xserver-xorg-video-.*|xserver-xorg-core|libdrm-amdgpu.*|mesa-.*|libgl1-mesa-dri|dkms|"
    r"nvidia.*|libnvidia.*|python3-torch.*|initramfs-tools|dracut|mkinitcpio|mokutil|shim-signed)$"
)


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


def transform(path: str, data: bytes, red: Redactor, gids: frozenset[int] = frozenset()) -> bytes | None:
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
        return _group_lines(_text(data), gids, red).encode()
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
        return red.text(scrub.comments(env_lines_only(_text(data)), red.counts)).encode()
    if path.startswith("home/") and not home_file_ok(path):
        return None
    if name in SERIAL_FILE_NAMES:
        value = _text(data).strip()
        return (red.ids.get(value, red.text(value)) + "\n").encode() if value else data
    if b"\0" in data[:4096] or not _is_utf8(data):
        return _redact_binary(data, red)
    text = _text(data)
    if path.startswith("home/") and name in ("METADATA", "PKG-INFO"):
        text = metadata_headers(text)
    style = comment_style(path)
    if style is not None:
        text = scrub.comments(text, red.counts, trailing=style == TRAILING)
    if name == "pyproject.toml":
        text = scrub.pyproject_people(text, red.counts)
    out = red.text(text)
    if _MODPROBE.match(path):  # the initramfs check compares their size with the image's copies
        out = scrub.same_length_lines(_text(data), out)
    return out.encode()


_MODPROBE = re.compile(r"^((usr/)?lib|etc|run)/modprobe\.d/")


def metadata_headers(text: str) -> str:
    """A package's METADATA/PKG-INFO headers (what python_envs reads); the long description after the
    first blank line is the project's README, not this machine's, and is left out."""
    head, sep, _rest = text.partition("\n\n")
    return head + ("\n" if sep else "")


FULL_LINE, TRAILING = "full-line", "trailing"
# kmod and udev: only a line starting with '#' is a comment (kmod takes a mid-line '#' as an option word)
_FULL_LINE_ONLY = re.compile(r"^((usr/)?lib/modprobe\.d/|etc/modprobe\.d/|run/modprobe\.d/|etc/udev/rules\.d/|"
                             r"(usr/)?lib/udev/rules\.d/|etc/systemd/|(usr/)?lib/systemd/|home/[^/]+/\.config/"
                             r"environment\.d/|etc/initramfs-tools/|etc/modules-load\.d/|etc/modules$)")
_TRAILING_OK = re.compile(r"^(etc/X11/|usr/share/X11/|etc/default/|etc/dracut\.conf|etc/mkinitcpio|"
                          r"home/.*/(requirements[^/]*\.txt|pyproject\.toml)$|home/.*\.(conf|cfg|toml|ini)$)")


def comment_style(path: str) -> str | None:
    """How comments are written in a configuration file the bundle keeps (None: not a config file)."""
    if _FULL_LINE_ONLY.match(path):
        return FULL_LINE
    if _TRAILING_OK.match(path):
        return TRAILING
    return None


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
        if _service_account(parts):
            # ollama, comfyui…: the accounts GPU services run as; system accounts, not people
            parts[1], parts[4] = "x", ""
            out.append(":".join(parts))
        elif parts[0] in red.users or parts[2] == "0":
            parts[0] = red.user(parts[0])
            parts[1] = "x"
            parts[4] = ""  # the full name (GECOS)
            parts[5:] = [red.text(p) for p in parts[5:]]
            out.append(":".join(parts))
        else:
            out.append("")  # blanked, not removed: evidence cites line numbers
    return "".join(f"{line}\n" for line in out)


def _service_account(parts: list[str]) -> bool:
    """A system account named like a GPU server (ollama): its groups decide gpu-service-cannot-open-gpu."""
    uid = parse_id(parts[2])  # bounded: a 5000-digit uid is no uid, not a ValueError
    return (uid is not None and 0 < uid <= SYSTEM_UID_MAX and not parts[5].startswith("/home/")
            and KNOWN_GPU_SERVICES.match(f"{parts[0]}.service") is not None)


SYSTEM_UID_MAX = 999
SYSTEM_GID_MAX = 999
RELEVANT_GROUPS = frozenset({"video", "render", "root", "kfd", "users", "wheel", "sudo", "adm"})


def _group_lines(text: str, gids: frozenset[int], red: Redactor) -> str:
    """The groups that decide GPU access: video, render, the devices' groups and the user's own;
    a person's name is replaced in the name and member fields only (``render:x:992:user1``).
    ``gids`` are the user's and the GPU device nodes' groups (:func:`rocmdesk.report.collect.access_gids`)."""
    out = []
    for line in text.splitlines():
        parts = line.split(":")
        gid = parse_id(parts[2]) if len(parts) >= 4 else None  # bounded: 5000 digits is no gid
        if len(parts) >= 4 and (parts[0] in RELEVANT_GROUPS or gid in gids):
            parts[1] = "x"
            if not (gid is not None and gid <= SYSTEM_GID_MAX):
                parts[0] = red.user(parts[0])  # the user's private group; system groups keep their names
            parts[3] = ",".join(red.user(m) for m in parts[3].split(",")) if parts[3] else ""
            out.append(":".join(parts[:4]))
        else:
            out.append("")
    return "".join(f"{line}\n" for line in out)


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
