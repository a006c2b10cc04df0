"""Accounts as the C library and the kernel give them: ``/etc/passwd``, ``/etc/group`` (passwd(5), group(5))
and the ids of ``/proc/<pid>/status`` (proc_pid_status(5)). Pure parsers of text, shared by telemetry (process
owners), the diagnosis (GPU access) and support bundles (redaction), so all three read a line the same way."""

from __future__ import annotations

from dataclasses import dataclass


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
