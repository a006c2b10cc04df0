"""The helper's journal: written before /etc changes, interrupted runs undo cleanly, backup paths checked."""

from __future__ import annotations

import json
import os

import pytest

from tests.unit.fixes.helper_trees import BLACKLIST_TEXT, XORG_TEXT, RecordingRunner, build_host, snapshot
from tests.unit.fixes.test_helper_actions import H, apply, make_ctx

BLACKLIST = "/etc/modprobe.d/blacklist-amdgpu.conf"


@pytest.fixture
def host(tmp_path):
    return build_host(tmp_path / "root")


def journal_entries(host):
    return [json.loads(p.read_text()) for p in sorted((host / "var/lib/rocmdesk/journal").glob("*.json"))]


def crash_at(point, real_path):
    """A fault hook that kills the run (SystemExit: nothing catches it, like a power loss) at one point."""
    def fault(where, path):
        if where == point and os.path.realpath(path) == os.path.realpath(real_path):
            raise SystemExit(f"simulated crash at {point}")
    return fault


def test_crash_after_the_rename_leaves_a_journal_that_names_the_backup(host):
    target = host / BLACKLIST.lstrip("/")
    before = snapshot(host, "etc")
    runner = RecordingRunner()
    with pytest.raises(SystemExit):
        H.apply_action(make_ctx(host, runner, fault=crash_at("after-rename", target)),
                       "modprobe-unblacklist-amdgpu", [BLACKLIST])
    assert target.read_bytes() != BLACKLIST_TEXT, "the new file reached /etc before the crash"
    assert runner.calls == [], "the crash came before the initramfs rebuild"
    [entry] = journal_entries(host)
    assert entry["status"] == "pending"
    [record, rebuild] = entry["changes"]
    assert rebuild["kind"] == "command" and rebuild["state"] == "writing", "written ahead, never run"
    assert record["path"] == BLACKLIST and record["state"] == "writing"
    backup = host / record["_backup_host"].lstrip("/")
    assert record["_backup_host"].startswith(f"/var/lib/rocmdesk/backups/{entry['undo_id']}/")
    assert backup.read_bytes() == BLACKLIST_TEXT

    undo = apply(make_ctx(host), "undo", entry["undo_id"])
    assert undo["ok"], undo
    assert target.read_bytes() == BLACKLIST_TEXT
    assert snapshot(host, "etc") == before
    assert {e["undo_id"]: e["status"] for e in journal_entries(host)}[entry["undo_id"]] == "undone"


def test_crash_before_the_write_undoes_to_nothing(host):
    """A record still "writing" whose file holds the old bytes: undo accepts it and changes nothing."""
    target = host / BLACKLIST.lstrip("/")
    before = snapshot(host, "etc")
    with pytest.raises(SystemExit):
        H.apply_action(make_ctx(host, fault=crash_at("before-rename", target)), "modprobe-unblacklist-amdgpu",
                       [BLACKLIST])
    assert target.read_bytes() == BLACKLIST_TEXT
    [entry] = journal_entries(host)
    assert entry["changes"][0]["state"] == "writing"
    preview = H.preview_action(make_ctx(host), "undo", [entry["undo_id"]])
    assert preview["ok"] and preview["changes"] == [], "nothing to restore, so no rebuild either"
    assert apply(make_ctx(host), "undo", entry["undo_id"])["ok"]
    assert snapshot(host, "etc") == before


def test_interrupted_record_refuses_when_the_file_changed_since(host):
    target = host / BLACKLIST.lstrip("/")
    with pytest.raises(SystemExit):
        H.apply_action(make_ctx(host, fault=crash_at("after-rename", target)), "modprobe-unblacklist-amdgpu",
                       [BLACKLIST])
    target.write_bytes(b"options amdgpu dc=1\n")
    [entry] = journal_entries(host)
    undo = apply(make_ctx(host), "undo", entry["undo_id"])
    assert not undo["ok"] and "changed after rocmdesk edited it" in undo["error"]
    assert target.read_bytes() == b"options amdgpu dc=1\n"


def test_crash_after_a_rename_aside_is_journalled(host):
    xorg = host / "etc/X11/xorg.conf"
    with pytest.raises(SystemExit):
        H.apply_action(make_ctx(host, fault=crash_at("after-rename", str(xorg) + H.DISABLED_SUFFIX)),
                       "xorg-disable-conf", ["/etc/X11/xorg.conf"])
    assert not xorg.exists()
    [entry] = journal_entries(host)
    assert [(c["kind"], c["state"]) for c in entry["changes"]] == [("rename", "writing")]
    assert apply(make_ctx(host), "undo", entry["undo_id"])["ok"]
    assert xorg.read_bytes() == XORG_TEXT


def test_journal_is_saved_before_the_file_is_replaced(host):
    """Order: backup, journal naming it, then the write (seen from inside the write)."""
    target = host / BLACKLIST.lstrip("/")
    seen = []

    def look(where, path):
        if where == "before-rename" and os.path.realpath(path) == os.path.realpath(target):
            [entry] = journal_entries(host)
            seen.append([(c.get("path"), c["state"], bool(c.get("_backup_host"))) for c in entry["changes"]])

    result = apply(make_ctx(host, fault=look), "modprobe-unblacklist-amdgpu", BLACKLIST)
    assert result["ok"]
    assert seen == [[(BLACKLIST, "writing", True), (None, "writing", False)]], "the rebuild is written ahead too"
    [entry] = journal_entries(host)
    assert entry["status"] == "applied" and [c["state"] for c in entry["changes"] if c["kind"] == "file"] == ["done"]


# -- B6: backup paths read from the journal -----------------------------------------------------------------


def _tamper(host, undo_id, value):
    path = host / f"var/lib/rocmdesk/journal/{undo_id}.json"
    entry = json.loads(path.read_text())
    entry["changes"][0]["_backup_host"] = value
    path.write_text(json.dumps(entry))


@pytest.mark.parametrize("planted", [
    "/etc/modprobe.d/copy.conf",  # a file outside the backup folder that holds the right bytes
    "/var/lib/rocmdesk/backups/20200101T000000Z-00000000/0-blacklist-amdgpu.conf",  # another run's folder
    "/var/lib/rocmdesk/backups/{id}/../{id}/0-blacklist-amdgpu.conf",
    "/var/lib/rocmdesk/backups/{id}/0-other.conf",  # not named after the file it restores
    "/var/lib/rocmdesk/backups/{id}/0-blacklist-amdgpu.conf\n",
    12,
])
def test_undo_refuses_a_backup_path_outside_the_backup_folder(host, planted):
    result = apply(make_ctx(host), "modprobe-unblacklist-amdgpu", BLACKLIST)
    undo_id = result["undo_id"]
    (host / "etc/modprobe.d/copy.conf").write_bytes(BLACKLIST_TEXT)
    other = host / "var/lib/rocmdesk/backups/20200101T000000Z-00000000"
    other.mkdir(mode=0o700)
    (other / "0-blacklist-amdgpu.conf").write_bytes(BLACKLIST_TEXT)
    (host / f"var/lib/rocmdesk/backups/{undo_id}/0-other.conf").write_bytes(BLACKLIST_TEXT)
    _tamper(host, undo_id, planted.format(id=undo_id) if isinstance(planted, str) else planted)
    before = snapshot(host, "etc")
    undo = apply(make_ctx(host), "undo", undo_id)
    assert not undo["ok"] and "outside rocmdesk's backup folder" in undo["error"]
    assert snapshot(host, "etc") == before


def test_roll_back_checks_the_backup_path_too(host):
    ctx = make_ctx(host)
    (host / "etc/modprobe.d/copy.conf").write_bytes(b"planted\n")
    target = host / BLACKLIST.lstrip("/")
    target.write_bytes(b"changed\n")
    record = {"kind": "file", "path": BLACKLIST, "old_sha256": H.sha256(b"planted\n"),
              "_backup_host": "/etc/modprobe.d/copy.conf", "state": "done"}
    problems = H.roll_back(ctx, "20260101T000000Z-0000abcd", [record])
    assert problems and "outside rocmdesk's backup folder" in problems[0]
    assert target.read_bytes() == b"changed\n"


# -- B7: a new backup folder is fsynced in its parent ----------------------------------------------------------


def test_new_state_folders_are_fsynced_in_their_parent(host, monkeypatch):
    synced = []
    real_fsync_dir = H._fsync_dir
    monkeypatch.setattr(H, "_fsync_dir", lambda path: (synced.append(os.path.realpath(path)), real_fsync_dir(path)))
    result = apply(make_ctx(host), "modprobe-unblacklist-amdgpu", BLACKLIST)
    state = os.path.realpath(host / "var/lib/rocmdesk")
    assert os.path.join(state, "backups") in synced, "backups/ holds the new <id> folder"
    assert state in synced, "/var/lib/rocmdesk holds the new backups/ and journal/ folders"
    assert os.path.realpath(host / "var/lib") in synced
    synced.clear()
    apply(make_ctx(host), "undo", result["undo_id"])
    assert os.path.join(state, "backups") in synced, "the undo run's backup folder is new too"
