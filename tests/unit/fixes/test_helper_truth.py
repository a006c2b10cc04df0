"""The helper's honesty rules, in-process on temporary roots (the namespace tests run the same for real)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess

import pytest

from rocmdesk.fixes import client, journal
from rocmdesk.host import HostRoot
from tests.unit.fixes.helper_trees import CALLER_UID, GPU_PCI, RecordingRunner, build_host, snapshot
from tests.unit.fixes.test_helper_actions import H, apply, make_ctx, sysfs


@pytest.fixture
def host(tmp_path):
    return build_host(tmp_path / "root")


def audit_lines(host):
    return [json.loads(line) for line in (host / "var/log/rocmdesk/audit.log").read_text().splitlines()]


# -- open_regular ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "symlink", "folder", "socket"])
def test_open_regular_refuses_anything_but_a_regular_file_without_opening_it(tmp_path, kind):
    path = tmp_path / "attr"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        (tmp_path / "real").write_text("1\n")
        path.symlink_to(tmp_path / "real")
    elif kind == "folder":
        path.mkdir()
    else:
        import socket

        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()
    for flags in (os.O_RDONLY, os.O_WRONLY | os.O_TRUNC, os.O_WRONLY | os.O_APPEND | os.O_CREAT):
        with pytest.raises(H.HelperError, match="not a regular file"):
            H.open_regular(str(path), flags)
    if kind == "symlink":
        assert (tmp_path / "real").read_text() == "1\n"


def test_open_regular_refuses_a_file_swapped_after_the_look(tmp_path, monkeypatch):
    """lstat saw one file, open got another (a rename in between): refused, not used."""
    path, other = tmp_path / "attr", tmp_path / "other"
    path.write_text("1\n")
    other.write_text("2\n")
    seen = os.lstat(other)
    monkeypatch.setattr(H.os, "lstat", lambda p: seen)
    with pytest.raises(H.HelperError, match="replaced while rocmdesk opened it"):
        H.open_regular(str(path), os.O_RDONLY)


def test_open_regular_missing_file_is_file_not_found_unless_created(tmp_path):
    with pytest.raises(FileNotFoundError):
        H.open_regular(str(tmp_path / "none"), os.O_RDONLY)
    fd = H.open_regular(str(tmp_path / "new"), os.O_WRONLY | os.O_CREAT, 0o640)
    os.close(fd)
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o640


# -- audit ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["a" * 201, "\udcff" * 5000, "é" * 130_000])
def test_audit_text_is_bounded_and_hashes_the_whole_value(value):
    text = H.audit_text(value)
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    assert len(text) < 400 and text.startswith(value[:200]) and digest in text and str(len(value)) in text
    assert H.audit_text("a" * 200) == "a" * 200


def test_audit_args_keep_eight_then_one_hash_for_the_rest():
    args = [str(i) for i in range(1000)]
    shown = H.audit_args(args)
    assert shown[:8] == args[:8] and len(shown) == 9 and "992 more arguments" in shown[8]
    assert H.audit_args("not a list") == [] and H.audit_args(None) == []


def test_an_over_long_line_keeps_its_identity_and_a_hash(host):
    ctx = make_ctx(host)
    record = {"event": "end", "run": "r1", "action": "undo", "result": "ok",
              "changes": [{"path": "/etc/x" * 100} for _ in range(100)]}
    assert H.write_audit(ctx, record) is None
    [line] = (host / "var/log/rocmdesk/audit.log").read_text().splitlines()
    written = json.loads(line)
    assert len(line) < H.AUDIT_LINE_CHARS and written["run"] == "r1" and "sha256" in written["truncated"]


def test_a_run_with_an_unwritable_audit_log_is_refused_before_it_starts(host):
    (host / "var/log").mkdir(parents=True)
    (host / "var/log/rocmdesk").write_text("a file where the folder should be\n")
    before = snapshot(host, "etc", "sys")
    runner = RecordingRunner()
    result = apply(make_ctx(host, runner), "initramfs-add-amdgpu")
    assert not result["ok"] and result["exit_code"] == 1 and "audit log" in result["error"]
    assert snapshot(host, "etc", "sys") == before and runner.calls == []
    assert not (host / "var/lib/rocmdesk").exists(), "not even the lock was taken"


def test_end_line_failure_after_the_change_is_a_warning(host, monkeypatch):
    real = H.write_audit
    monkeypatch.setattr(H, "write_audit", lambda ctx, rec: "disk full" if rec["event"] == "end" else real(ctx, rec))
    result = apply(make_ctx(host), "set-performance-level", GPU_PCI, "high")
    assert result["ok"] and result["undo_id"] and "end record could not be written (disk full)" in result["warnings"][0]


# -- write-ahead journal, roll-back, the truth in the answer -----------------------------------------------------------


def test_every_record_is_durable_before_the_first_change(host, monkeypatch):
    """Seen from the moment the sysfs write happens: the journal already holds both records and their old values."""
    seen = []
    real = H.write_sysfs

    def watch(path, value):
        [entry] = [json.loads(p.read_text()) for p in (host / "var/lib/rocmdesk/journal").glob("*.json")]
        seen.append([(c["attribute"], c["old"], c["state"]) for c in entry["changes"]])
        real(path, value)

    monkeypatch.setattr(H, "write_sysfs", watch)
    result = apply(make_ctx(host), "set-power-profile", GPU_PCI, "5")
    assert result["ok"]
    assert seen[0] == [("power_dpm_force_performance_level", "auto", "writing"),
                       ("pp_power_profile_mode", "0", "writing")]


def test_failed_roll_back_keeps_the_undo_id_in_the_answer(host, monkeypatch):
    """Second write fails, and writing the first one back fails too: the answer says so and names the undo id."""
    real = H.write_sysfs
    calls = []

    def flaky(path, value):
        calls.append(value)
        if len(calls) > 1:
            raise H.HelperError("the driver refused it")
        real(path, value)

    monkeypatch.setattr(H, "write_sysfs", flaky)
    result = apply(make_ctx(host), "set-power-profile", GPU_PCI, "5")
    assert not result["ok"] and "Rolling back also failed" in result["error"]
    assert result["undo_id"] and result["undo_id"] in result["error"]
    assert json.loads((host / f"var/lib/rocmdesk/journal/{result['undo_id']}.json").read_text())["status"] == "failed"
    outcome = client.outcome_from_exit(1, json.dumps({k: v for k, v in result.items() if k != "exit_code"}))
    assert outcome.undo_id == result["undo_id"], "the app keeps the way back"


def test_clean_roll_back_reports_failure_without_an_undo_id(host, monkeypatch):
    monkeypatch.setattr(H, "write_sysfs", lambda path, value: (_ for _ in ()).throw(H.HelperError("refused")))
    result = apply(make_ctx(host), "set-performance-level", GPU_PCI, "high")
    assert not result["ok"] and "undo_id" not in result
    assert sysfs(host, GPU_PCI, "power_dpm_force_performance_level").read_text() == "auto\n"


def test_a_done_answer_with_warnings_is_shown_with_them():
    stdout = json.dumps({"ok": True, "action": "set-power-cap", "changes": [{"kind": "sysfs"}], "undo_id": "u1",
                         "warnings": ["the change is made, but x"]})
    outcome = client.outcome_from_exit(0, stdout)
    assert outcome.ok and outcome.undo_id == "u1" and outcome.message == "Done. Warning: The change is made, but x."


# -- undo by its own user ----------------------------------------------------------------------------------------------


def test_undo_preview_by_another_user_is_refused_too(host):
    done = apply(make_ctx(host), "set-performance-level", GPU_PCI, "high")
    other = H.preview_action(make_ctx(host, uid=CALLER_UID + 1), "undo", [done["undo_id"]])
    assert not other["ok"] and "undo-as-admin" in other["error"]
    assert H.preview_action(make_ctx(host, uid=CALLER_UID + 1), "undo-as-admin", [done["undo_id"]])["ok"]


@pytest.mark.parametrize("uid", [None, "1000", True, [1000]])
def test_a_journal_entry_without_a_plain_owner_needs_undo_as_admin(host, uid):
    done = apply(make_ctx(host), "set-performance-level", GPU_PCI, "high")
    path = host / f"var/lib/rocmdesk/journal/{done['undo_id']}.json"
    entry = json.loads(path.read_text())
    entry["uid"] = uid
    path.write_text(json.dumps(entry))
    assert "undo-as-admin" in apply(make_ctx(host), "undo", done["undo_id"])["error"]
    assert apply(make_ctx(host), "undo-as-admin", done["undo_id"])["ok"]


def test_an_admin_undo_is_not_undoable_and_not_offered(host):
    done = apply(make_ctx(host), "set-performance-level", GPU_PCI, "high")
    undo = apply(make_ctx(host, uid=CALLER_UID + 1), "undo-as-admin", done["undo_id"])
    assert undo["ok"] and undo["undo_id"] is None
    entries = journal.list_entries(HostRoot(host), include_undo_runs=True)
    [admin_run] = [e for e in entries if e.action == "undo-as-admin"]
    assert not admin_run.can_undo
    assert "itself an undo" in apply(make_ctx(host), "undo-as-admin", admin_run.undo_id)["error"]


def test_undo_of_groups_skips_groups_the_user_is_not_in(host):
    runner = RecordingRunner()
    (host / "etc/group").write_text("video:x:44:\nrender:x:105:\n")
    done = apply(make_ctx(host, runner), "add-user-to-groups", "render,video")
    (host / "etc/group").write_text("video:x:44:\nrender:x:105:alice\n")  # usermod got only as far as render
    assert apply(make_ctx(host, runner), "undo", done["undo_id"])["ok"]
    assert runner.calls[1:] == [["/usr/bin/gpasswd", "-d", "alice", "render"]]


# -- the lock reaches the commands ------------------------------------------------------------------------------------


def test_the_default_runner_hands_the_held_lock_to_the_command(host, tmp_path):
    ctx = H.Context(str(host), caller_uid=CALLER_UID, kernel_release="6.8.0-1", use_syslog=False)
    fd = os.open(tmp_path / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        ctx.held_fds = (fd,)
        result = ctx.runner(["/bin/sh", "-c", f"readlink /proc/self/fd/{fd}"], 10)
        ctx.held_fds = ()
        without = ctx.runner(["/bin/sh", "-c", f"readlink /proc/self/fd/{fd} || echo closed"], 10)
    finally:
        os.close(fd)
    assert result.ok and result.output.strip() == str(tmp_path / "lock")
    assert without.output.strip().endswith("closed")


# -- leftovers ---------------------------------------------------------------------------------------------------


def test_leftover_cleaning_stays_in_real_folders(host, tmp_path):
    """A symlinked backup folder is never entered; a leftover in a real backup folder is removed."""
    ctx = make_ctx(host)
    backups = host / "var/lib/rocmdesk/backups"
    (backups / "20260101T000000Z-0000abcd").mkdir(parents=True)
    inside = backups / "20260101T000000Z-0000abcd/.0-x.conf.rocmdesk-00000000.tmp"
    inside.write_text("")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / ".0-x.conf.rocmdesk-00000000.tmp").write_text("")
    (backups / "20260101T000000Z-0000abce").symlink_to(elsewhere)
    removed = H.clean_leftover_temp_files(ctx)
    assert removed == ["/var/lib/rocmdesk/backups/20260101T000000Z-0000abcd/.0-x.conf.rocmdesk-00000000.tmp"]
    assert not inside.exists() and (elsewhere / ".0-x.conf.rocmdesk-00000000.tmp").exists()


def test_helper_refuses_with_json_when_run_by_the_real_interpreter_on_a_fifo_root(host):
    """The helper file itself, unprivileged --preview, over a FIFO attribute: an answer, not a hang."""
    level = sysfs(host, GPU_PCI, "power_dpm_force_performance_level")
    level.unlink()
    os.mkfifo(level)
    code = ("import importlib.machinery,importlib.util,json,sys;"
            "l=importlib.machinery.SourceFileLoader('h',sys.argv[1]);"
            "m=importlib.util.module_from_spec(importlib.util.spec_from_loader('h',l));l.exec_module(m);"
            "print(json.dumps(m.preview_action(m.Context(sys.argv[2],caller_uid=1000,use_syslog=False),"
            "'set-performance-level',[sys.argv[3],'high'])))")
    proc = subprocess.run(["/usr/bin/python3", "-I", "-c", code, str(H.__file__), str(host), GPU_PCI],
                          capture_output=True, text=True, timeout=30)
    answer = json.loads(proc.stdout)
    assert not answer["ok"] and "is a FIFO" in answer["error"]


def test_a_failed_rebuild_says_the_edit_was_put_back_and_the_rebuild_must_run_again(host):
    blacklist = host / "etc/modprobe.d/blacklist-amdgpu.conf"
    before = blacklist.read_bytes()
    result = apply(make_ctx(host, RecordingRunner(fail="update-initramfs")), "modprobe-unblacklist-amdgpu",
                   "/etc/modprobe.d/blacklist-amdgpu.conf")
    assert not result["ok"] and "undo_id" not in result and blacklist.read_bytes() == before
    assert "Everything already changed was put back" in result["error"]
    assert "rebuild it again (initramfs-regenerate)" in result["error"]
