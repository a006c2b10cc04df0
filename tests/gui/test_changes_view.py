"""Changes view: a helper run that never finished is shown as interrupted, with what its journal knows."""

from __future__ import annotations

import os

import pytest

from rocmdesk.fixes import journal
from rocmdesk.host import HostRoot
from tests.unit.fixes.helper_trees import build_host
from tests.unit.fixes.test_helper_actions import H, make_ctx

pytestmark = pytest.mark.gui
BLACKLIST = "/etc/modprobe.d/blacklist-amdgpu.conf"


def crashed_run(host):
    """A real helper run killed right after it replaced the file (journal: pending, change still writing)."""
    target = os.path.realpath(host / BLACKLIST.lstrip("/"))

    def crash(point, path):
        if point == "after-rename" and os.path.realpath(path) == target:
            raise SystemExit("simulated crash")

    with pytest.raises(SystemExit):
        H.apply_action(make_ctx(host, fault=crash), "modprobe-unblacklist-amdgpu", [BLACKLIST])


@pytest.fixture
def host(tmp_path):
    host = build_host(tmp_path / "root")
    crashed_run(host)
    H.apply_action(make_ctx(host), "set-performance-level", ["0000:03:00.0", "low"])
    return host


def test_journal_entry_knows_it_was_interrupted(host):
    entries = {e.action: e for e in journal.list_entries(HostRoot(host))}
    crashed, fine = entries["modprobe-unblacklist-amdgpu"], entries["set-performance-level"]
    assert crashed.interrupted and crashed.status == "pending" and crashed.change_states == ["writing", "writing"]
    assert not fine.interrupted and fine.status == "applied"
    assert not journal.entry_from_json({"undo_id": "x", "status": "undone",
                                        "changes": [{"kind": "rename", "path": "/a", "to": "/b",
                                                     "state": "writing"}]}).interrupted


def test_interrupted_run_is_shown_as_check_by_hand(qtbot, host):
    from rocmdesk.ui.changes_view import INTERRUPTED, ChangesView

    view = ChangesView(HostRoot(host), can_undo=True)
    qtbot.addWidget(view)
    items = {view.tree.topLevelItem(i).text(1).split()[0]: view.tree.topLevelItem(i)
             for i in range(view.tree.topLevelItemCount())}
    crashed, fine = items["modprobe-unblacklist-amdgpu"], items["set-performance-level"]
    assert crashed.text(2) == INTERRUPTED == "interrupted — check by hand"
    assert fine.text(2) == "applied"
    child = crashed.child(0).text(1)
    assert child.startswith(f"Edit {BLACKLIST}") and "may be the old or the new content" in child

    view.tree.setCurrentItem(crashed)
    assert view.undo_button.text() == "Undo recorded changes…" and view.undo_button.isEnabled()
    assert view.detail.isVisibleTo(view) and "Check those files by hand" in view.detail.text()
    view.tree.setCurrentItem(fine)
    assert view.undo_button.text() == "Undo…" and not view.detail.isVisibleTo(view)


def test_interrupted_run_without_recorded_changes(qtbot, tmp_path):
    from rocmdesk.ui.changes_view import ChangesView

    host = build_host(tmp_path / "root")
    folder = host / "var/lib/rocmdesk/journal"
    folder.mkdir(parents=True)
    (folder / "20260101T000000Z-0000abcd.json").write_text(
        '{"undo_id": "20260101T000000Z-0000abcd", "time": 1, "action": "initramfs-add-amdgpu", "args": [],'
        ' "status": "pending", "changes": []}')
    view = ChangesView(HostRoot(host), can_undo=True)
    qtbot.addWidget(view)
    item = view.tree.topLevelItem(0)
    assert item.text(2) == "interrupted — check by hand"
    assert item.child(0).text(1) == "nothing was recorded as changed"
    view.tree.setCurrentItem(item)
    assert not view.undo_button.isEnabled(), "nothing recorded: nothing to undo"
