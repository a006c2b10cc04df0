"""Issue 10, item 3: the live preview says on which machine, when it takes effect, what can go wrong, how to undo."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rocmdesk.fixes.action_notes import NOTES, notes_for, undo_command
from rocmdesk.fixes.actions import HELPER_ACTIONS, USER_ACTIONS
from rocmdesk.host import HostRoot, RecordedRunner
from tests.support import scenarios as sc
from tests.unit.fixes.test_fixes_ui import make_dialog, rig  # noqa: F401  (the fixture)


def test_every_action_has_its_own_notes():
    for name in (*HELPER_ACTIONS, *USER_ACTIONS):
        notes = notes_for(name)
        assert name in NOTES and notes.takes_effect and notes.risks and notes.undo, name


def test_the_live_preview_names_the_machine_the_moment_and_the_way_back(qtbot, rig):  # noqa: F811
    dialog = make_dialog(rig, ("xorg-disable-conf", "/etc/X11/xorg.conf"), qtbot=qtbot)
    text = dialog.text.toPlainText()
    assert "Rename /etc/X11/xorg.conf" in text  # the helper's exact change
    assert "On: this machine (" in text
    assert "Takes effect: when the X server starts again" in text
    assert "What can go wrong:" in text and "text console" in text
    assert "How to undo:" in text
    with qtbot.waitSignal(dialog.applied, timeout=15000) as blocker:
        dialog.apply_button.click()
    undo_id = blocker.args[0].undo_id
    assert undo_id and undo_command(undo_id) in dialog.message.text()


@pytest.mark.parametrize("mode", ["snapshot", "demo"])
def test_the_diagnosis_tab_offers_steps_for_another_machines_manual_fix(qtbot, tmp_path, mode):
    from rocmdesk.ui.diagnosis_tab import DiagnosisTab
    from tests.gui.test_diagnosis_tab import check_item, run

    root = sc.clean_workstation(tmp_path / "root")
    sc.kernel_log(root, "[drm] Detected VRAM RAM=8176M, BAR=256M")  # small-bar: manual steps only
    ctx = SimpleNamespace(root=HostRoot(root), runner=RecordedRunner(), extras={}, mode=mode, bundle_path=None)
    tab = DiagnosisTab(ctx)
    qtbot.addWidget(tab)
    tab.show()
    run(qtbot, tab)
    tab.tree.setCurrentItem(check_item(tab, "small-bar").child(0))
    assert tab.fix_button.isEnabled() and "nothing is applied here" in tab.fix_hint.text()
    with qtbot.waitSignal(tab.fixRequested, timeout=2000) as blocker:
        tab.fix_button.click()
    assert blocker.args[0].id == "small-bar"
