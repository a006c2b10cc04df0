"""Pure parsers of /etc and /proc files the checks read: os-release(5), KFD ``properties``, environ and
environment files (environment.d(5), systemd.exec(5) Environment=/EnvironmentFile=), POSIX ACL xattrs, the
kernel release. Text in, values out: no reads here, so each is tested on strings."""

from __future__ import annotations

import re
import shlex

# A kernel release as uname -r prints it ("6.8.0-51-generic", "6.10.3-arch1-1", "6.6.0+rpt-rpi-v8"). Anything
# else (a doctored snapshot) is "unknown": the value is pasted into commands shown to the user.
_KERNEL_RELEASE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+~-]{0,127}")


def kernel_release_of(text: str | None) -> str | None:
    """/proc/sys/kernel/osrelease's value, or None when missing or not shaped like a release."""
    value = (text or "").strip()
    return value if _KERNEL_RELEASE_RE.fullmatch(value) else None


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


def systemd_environment_value(value: str) -> list[tuple[str, str]]:
    """(name, value) pairs of one ``Environment=`` value: space-separated, shell-like quotes (systemd.exec(5));
    an unbalanced quote falls back to plain words rather than losing the line."""
    try:
        words = shlex.split(value)
    except ValueError:
        words = value.split()
    return [(word.split("=", 1)[0], word.split("=", 1)[1]) for word in words if "=" in word]


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
            assignments.extend((number, name, val) for name, val in systemd_environment_value(value))
        elif key == "EnvironmentFile" and value.strip():
            files.append((number, value.strip()))
    return assignments, files


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
