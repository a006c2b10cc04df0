"""Accounts as the C library and the kernel give them: ``/etc/passwd``, ``/etc/group`` (passwd(5), group(5))
and the ids of ``/proc/<pid>/status`` (proc_pid_status(5)). Pure parsers of text, shared by telemetry (process
owners), the diagnosis (GPU access) and support bundles (redaction), so all three read a line the same way."""

from __future__ import annotations

from dataclasses import dataclass

from rocmdesk.telemetry.parsers import bounded_int


@dataclass(frozen=True, slots=True)
class GroupEntry:
    name: str
    gid: int
    members: tuple[str, ...]
    line: int  # 1-based line in the file (evidence cites it)


@dataclass(frozen=True, slots=True)
class PasswdEntry:
    name: str
    uid: int
    gid: int | None  # None when the field is not a number (the entry still names a person to redact)
    home: str
    line: int


@dataclass(frozen=True, slots=True)
class ProcStatus:
    uid: int  # the real uid (first of the four Uid: numbers)
    gid: int | None
    groups: tuple[int, ...] | None  # supplementary groups; None when the line is missing or malformed
    name: str | None


ID_MAX = (1 << 32) - 1  # uid_t/gid_t are 32-bit


def parse_id(text: str) -> int | None:
    """A uid or gid field: ASCII digits only (``int()`` would also take " 12", "+12", "-1" or "١٢"), at most
    32 bits; a longer run is no id (and never reaches int(): past 4300 digits it raises, issue 11 item 3)."""
    text = text.strip()
    if not (text.isascii() and text.isdigit()):
        return None
    value = bounded_int(text)
    return value if value is not None and value <= ID_MAX else None


def parse_group(text: str) -> list[GroupEntry]:
    """``name:password:gid:members`` lines with a numeric gid; comments and short lines skipped."""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.strip().split(":")
        gid = parse_id(parts[2]) if len(parts) >= 4 and not line.lstrip().startswith("#") else None
        if gid is None:
            continue
        members = tuple(m.strip() for m in parts[3].split(",") if m.strip())
        out.append(GroupEntry(parts[0], gid, members, number))
    return out


def parse_passwd(text: str) -> list[PasswdEntry]:
    """``name:password:uid:gid:gecos:home:shell`` lines with a numeric uid; comments and short lines skipped."""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.strip().split(":")
        uid = parse_id(parts[2]) if len(parts) >= 7 and not line.lstrip().startswith("#") else None
        if uid is not None:
            out.append(PasswdEntry(parts[0], uid, parse_id(parts[3]), parts[5], number))
    return out


def group_name(groups: list[GroupEntry], gid: int) -> str | None:
    return next((g.name for g in groups if g.gid == gid), None)


def parse_proc_status(text: str) -> ProcStatus | None:
    """``Name:``/``Uid:``/``Gid:``/``Groups:`` of /proc/<pid>/status; None without a readable Uid line."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    uid = parse_id((fields.get("Uid") or "x").split()[0])
    if uid is None:
        return None
    gid = parse_id((fields.get("Gid") or "x").split()[0])
    groups = None
    if "Groups" in fields:
        ids = [parse_id(g) for g in fields["Groups"].split()]
        groups = None if None in ids else tuple(i for i in ids if i is not None)
    return ProcStatus(uid, gid, groups, fields.get("Name"))
