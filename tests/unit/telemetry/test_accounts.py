"""The one passwd/group/status parser (telemetry.accounts) on the lines real files hold and on bad ones."""

from __future__ import annotations

from rocmdesk.telemetry.accounts import PasswdEntry, parse_group, parse_id, parse_passwd, parse_proc_status

# Debian 12's base-passwd lines plus a person, a comment, a short line and ids int() would take
PASSWD = """root:x:0:0:root:/root:/bin/bash
# a comment:x:5:5:x:/x:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
ollama:x:998:998::/usr/share/ollama:/bin/false
alice:x:1000:1000:Alice,,,:/home/alice:/bin/bash
short:x:1001:1001
plus:x:+1002:1002::/home/plus:/bin/sh
neg:x:-1:1003::/home/neg:/bin/sh
arabic:x:١٢:1004::/home/arabic:/bin/sh
badgid:x:1005:users::/home/badgid:/bin/sh
"""


def test_passwd_keeps_numeric_uids_only():
    entries = parse_passwd(PASSWD)
    assert [(e.name, e.uid, e.gid, e.home, e.line) for e in entries] == [
        ("root", 0, 0, "/root", 1), ("nobody", 65534, 65534, "/nonexistent", 3),
        ("ollama", 998, 998, "/usr/share/ollama", 4), ("alice", 1000, 1000, "/home/alice", 5),
        ("badgid", 1005, None, "/home/badgid", 10),
    ]
    assert isinstance(entries[0], PasswdEntry)


def test_group_members_and_bad_lines():
    text = "video:x:44:alice,bob\nrender:x:992:\n#x:x:1:\nbroken:x:abc:alice\nshort:x:5\n"
    assert [(g.name, g.gid, g.members, g.line) for g in parse_group(text)] == [
        ("video", 44, ("alice", "bob"), 1), ("render", 992, (), 2)]


def test_proc_status_ids():
    text = ("Name:\tollama\nUmask:\t0022\nUid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\n"
            "Groups:\t4 24 27 44 992 1000 \n")
    status = parse_proc_status(text)
    assert status is not None
    assert (status.uid, status.gid, status.groups, status.name) == (1000, 1000, (4, 24, 27, 44, 992, 1000), "ollama")


def test_proc_status_bad_input():
    assert parse_proc_status("") is None
    assert parse_proc_status("Name:\tx\nUid:\n") is None
    assert parse_proc_status("Uid:\tabc 1 1 1\n") is None
    status = parse_proc_status("Uid:\t0 0 0 0\nGroups:\t1 x 3\n")
    assert status is not None and status.uid == 0 and status.gid is None and status.groups is None
    assert parse_proc_status("Uid:\t0 0 0 0\nGroups:\t\n").groups == ()


def test_parse_id_is_ascii_digits_only():
    assert [parse_id(t) for t in ("0", " 42 ", "+1", "-1", "١٢", "", "1e3")] == [0, 42, None, None, None, None, None]
