"""Permission checks: configured groups (etc/group, passwd) versus this session's (proc/self/status)."""

from __future__ import annotations

import struct

import pytest

from rocmdesk.diagnosis.etc_parsers import parse_posix_acl_users
from rocmdesk.diagnosis.model import Severity, Status
from rocmdesk.telemetry.accounts import parse_proc_status
from tests.support import scenarios as sc

NOT_IN = "user-not-in-render-group"
NOT_ACTIVE = "group-not-active-in-session"
SESSION_WITHOUT_RENDER = [4, 24, 27, 30, sc.VIDEO_GID, 46, 100, 114, sc.UID]


@pytest.fixture
def root(tmp_path):
    return sc.clean_workstation(tmp_path / "root")


def test_clean_workstation_passes_both(root):
    assert sc.run_check(root, NOT_IN).status is Status.PASS
    assert sc.run_check(root, NOT_ACTIVE).status is Status.PASS


def test_user_not_in_render_group(root):
    sc.remove_user_from_group(root, "render")
    sc.session_groups(root, SESSION_WITHOUT_RENDER)
    result = sc.run_check(root, NOT_IN)
    assert result.status is Status.FAIL
    finding = result.findings[0]
    assert finding.severity is Severity.ERROR and finding.subject == sc.USER
    assert finding.fix.action == ("add-user-to-groups", "render,video")
    assert finding.fix.privileged
    paths = {e.path for e in finding.evidence}
    assert {"/dev/kfd", "/dev/dri/renderD128", "/etc/group", "/proc/self/status"} <= paths
    group_ev = next(e for e in finding.evidence if e.path == "/etc/group")
    assert group_ev.text.startswith("render:x:992:")
    assert (root / "etc/group").read_text().splitlines()[group_ev.line - 1].startswith("render:")
    # not configured is not "not active": the other check stays silent
    assert sc.run_check(root, NOT_ACTIVE).status is Status.PASS


def test_configured_but_not_in_session(root):
    sc.session_groups(root, SESSION_WITHOUT_RENDER)
    assert sc.run_check(root, NOT_IN).status is Status.PASS
    result = sc.run_check(root, NOT_ACTIVE)
    assert result.status is Status.FAIL
    finding = result.findings[0]
    assert finding.severity is Severity.WARNING
    assert not finding.fix.privileged and finding.fix.action is None
    assert "log out" in finding.fix.steps[0].lower()
    assert any(e.path == "/proc/self/status" and e.text.startswith("Groups:") for e in finding.evidence)


def test_primary_group_counts_as_configured(root):
    sc.remove_user_from_group(root, "render")
    passwd = (root / "etc/passwd").read_text().replace(f"{sc.USER}:x:{sc.UID}:{sc.UID}:",
                                                        f"{sc.USER}:x:{sc.UID}:{sc.RENDER_GID}:")
    sc.write(root, "/etc/passwd", passwd)
    assert sc.run_check(root, NOT_IN).status is Status.PASS


def test_world_accessible_kfd_needs_no_group(root):
    sc.remove_user_from_group(root, "render")
    sc.session_groups(root, SESSION_WITHOUT_RENDER)
    sc.device_node(root, "/dev/kfd", 238, 0, sc.RENDER_GID, 0o666)
    sc.device_node(root, "/dev/dri/renderD128", 226, 128, sc.RENDER_GID, 0o666)
    assert sc.run_check(root, NOT_IN).status is Status.PASS


def acl(*entries):
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, ident) for tag, perm, ident in entries)


def test_uaccess_acl_grants_render_node(root):
    sc.remove_user_from_group(root, "render")
    sc.session_groups(root, SESSION_WITHOUT_RENDER)
    user_acl = acl((0x01, 6, 0xFFFFFFFF), (0x02, 6, sc.UID), (0x04, 6, 0xFFFFFFFF), (0x10, 6, 0xFFFFFFFF),
                   (0x20, 0, 0xFFFFFFFF))
    sc.device_node(root, "/dev/dri/renderD128", 226, 128, sc.RENDER_GID, 0o660, acl=user_acl)
    result = sc.run_check(root, NOT_IN)
    assert result.status is Status.FAIL
    assert [e.path for e in result.findings[0].evidence if e.path.startswith("/dev")] == ["/dev/kfd"]


def test_acl_parser_respects_mask():
    masked = acl((0x02, 6, 1000), (0x10, 4, 0xFFFFFFFF))
    assert parse_posix_acl_users(masked) == frozenset()
    assert parse_posix_acl_users(acl((0x02, 6, 1000))) == {1000}
    assert parse_posix_acl_users(b"garbage") == frozenset()


def test_group_without_rw_needs_udev_rule(root):
    sc.remove_user_from_group(root, "render")
    sc.session_groups(root, SESSION_WITHOUT_RENDER)
    sc.device_node(root, "/dev/kfd", 238, 0, sc.RENDER_GID, 0o600)
    result = sc.run_check(root, NOT_IN)
    finding = result.findings[0]
    assert finding.fix.id == "udev-rule-amdgpu" and finding.fix.action is None
    assert "70-amdgpu.rules" in finding.fix.steps[0]


def test_old_distro_video_group_only(root):
    text = "".join(ln + "\n" for ln in (root / "etc/group").read_text().splitlines()
                   if not ln.startswith("render:"))
    sc.write(root, "/etc/group", text)
    sc.remove_user_from_group(root, "video")
    sc.device_node(root, "/dev/kfd", 238, 0, sc.VIDEO_GID, 0o660)
    sc.device_node(root, "/dev/dri/renderD128", 226, 128, sc.VIDEO_GID, 0o660)
    sc.session_groups(root, [4, 24, 27, sc.UID])
    finding = sc.run_check(root, NOT_IN).findings[0]
    assert finding.fix.action == ("add-user-to-groups", "video")


def test_custom_group_is_manual(root):
    sc.write(root, "/etc/group", (root / "etc/group").read_text() + "devteam:x:1500:\n")
    sc.device_node(root, "/dev/kfd", 238, 0, 1500, 0o660)
    finding = sc.run_check(root, NOT_IN).findings[0]
    assert finding.fix.action is None and "devteam" in finding.fix.steps[0]


def test_root_user_passes(root):
    sc.write(root, "/proc/self/status", sc.status_text(uid=0, gid=0, groups=[0]))
    assert sc.run_check(root, NOT_IN).reason == "running as root"


@pytest.mark.parametrize("breakage,words", [
    (lambda r: (r / "proc/self/status").unlink(), "no such file"),
    (lambda r: sc.write(r, "/proc/self/status", "garbage\n"), "no Uid line"),
    (lambda r: (r / "etc/group").unlink(), "groups unknown"),
    (lambda r: __import__("shutil").rmtree(r / "dev"), "no /dev folder"),
])
def test_missing_inputs_skip(root, breakage, words):
    breakage(root)
    for check_id in (NOT_IN, NOT_ACTIVE):
        result = sc.run_check(root, check_id)
        assert result.status is Status.SKIP and words in result.reason


def test_directory_service_user_skips(root):
    sc.remove_user_from_group(root, "render")
    sc.session_groups(root, SESSION_WITHOUT_RENDER)
    sc.write(root, "/proc/self/status", sc.status_text(uid=50001, gid=50001, groups=[50001]))
    result = sc.run_check(root, NOT_IN)
    assert result.status is Status.SKIP and "50001" in result.reason


def test_no_groups_line_skips_session_check(root):
    sc.write(root, "/proc/self/status", "Name:\tx\nUid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\n")
    assert sc.run_check(root, NOT_ACTIVE).status is Status.SKIP


def test_parse_proc_status():
    status = parse_proc_status(sc.status_text())
    assert status.uid == sc.UID and sc.RENDER_GID in status.groups
    assert parse_proc_status("Uid:\tx\n") is None
    assert parse_proc_status("Uid:\t5\t5\t5\t5\nGroups:\t\n").groups == ()


def test_device_of_a_system_group_never_suggests_joining_it(root):
    # /dev/kfd left as root:root 0660 (broken udev rules): `usermod -a -G root` would be harmful
    sc.device_node(root, "/dev/kfd", 238, 0, 0, 0o660)
    finding = sc.run_check(root, NOT_IN).findings[0]
    assert finding.fix.id == "udev-rule-amdgpu" and finding.fix.action is None
    steps = " ".join(finding.fix.steps)
    assert "-G root" not in steps and 'GROUP="render"' in steps
    assert "system group" in finding.explanation


def test_membership_only_left_in_this_session_is_not_called_configured(root):
    """/etc/group no longer lists the user in render, but this session still has it: works now, not after the
    next login. The check must not pass with "configured"."""
    sc.remove_user_from_group(root, "render")
    result = sc.run_check(root, NOT_IN)
    assert result.status is Status.FAIL
    finding = result.findings[0]
    assert finding.severity is Severity.WARNING
    assert "no longer lists" in finding.explanation and "next login" in finding.explanation
    assert finding.fix.action == ("add-user-to-groups", "render,video")
    assert any(e.path == "/proc/self/status" and e.text.startswith("Groups:") for e in finding.evidence)
    assert sc.run_check(root, "group-not-active-in-session").status is Status.PASS
