"""Fix dialog, Tuning tab and Changes view, driven through QProcess with stand-ins for pkexec.

The "helper" the dialog runs is a small wrapper around the real helper's own cli() on a temporary
root, so previews and changes are the helper's; "pkexec" is a script that runs it (or exits 126/127).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from PySide6 import QtCore

from rocmdesk.fixes import client
from rocmdesk.host import HostRoot
from tests.support.app_context import fake_app_context
from tests.support.targets import LIVE
from tests.unit.fixes.helper_trees import GPU_PCI, REPO, build_host, load_helper, settle_sysfs

pytestmark = pytest.mark.gui
H = load_helper()

WRAPPER = """#!{python}
import json, sys
sys.path.insert(0, {repo!r})
from tests.unit.fixes.helper_trees import RecordingRunner, load_helper, settle_sysfs
from pathlib import Path
H = load_helper()
preview = sys.argv[1:2] == ["--preview"]
make = lambda uid: H.Context({root!r}, caller_uid=1000, runner=RecordingRunner(), kernel_release="6.8.0-1",
                             use_syslog=False)
result, code = H.cli(sys.argv[1:], {{"PKEXEC_UID": "1000"}}, 1000 if preview else 0, 1000, make)
settle_sysfs(Path({root!r}))
print(json.dumps(result))
sys.exit(code)
"""


def _script(path: Path, text: str) -> str:
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def rig(tmp_path):
    root = build_host(tmp_path / "root")
    helper = _script(tmp_path / "helper", WRAPPER.format(python=sys.executable, repo=str(REPO), root=str(root)))
    pkexec = _script(tmp_path / "pkexec", '#!/bin/sh\nexec "$@"\n')
    dismissed = _script(tmp_path / "pkexec126", "#!/bin/sh\necho 'Request dismissed' >&2\nexit 126\n")
    refused = _script(tmp_path / "pkexec127", "#!/bin/sh\necho 'Not authorized' >&2\nexit 127\n")
    status = client.HelperStatus(client.Availability.READY, "", pkexec)
    return {"root": root, "helper": helper, "pkexec": pkexec, "dismissed": dismissed, "refused": refused,
            "status": status}


def make_dialog(rig, action, pkexec=None, qtbot=None):
    from rocmdesk.ui.fix_dialog import FixDialog

    dialog = FixDialog(action, "Test fix", ("step one",), status=rig["status"], helper_path=rig["helper"],
                       pkexec=pkexec or rig["pkexec"], target=LIVE)
    qtbot.addWidget(dialog)
    with qtbot.waitSignal(dialog.previewed, timeout=15000):
        pass
    return dialog


def cap_file(root):
    return next(root.glob(f"sys/devices/*/*/{GPU_PCI}/hwmon/*/power1_cap"))


def test_dialog_previews_then_applies_exactly_that(qtbot, rig):
    dialog = make_dialog(rig, ("set-power-cap", GPU_PCI, "300"), qtbot=qtbot)
    assert "from 290 W to 300 W" in dialog.text.toPlainText()
    assert "Undo will:" in dialog.text.toPlainText()
    assert dialog.apply_button.isEnabled()
    with qtbot.waitSignal(dialog.applied, timeout=15000) as blocker:
        dialog.apply_button.click()
    outcome = blocker.args[0]
    assert outcome.ok and outcome.undo_id
    assert outcome.changes == dialog.plan.raw
    assert cap_file(rig["root"]).read_text() == "300000000\n"
    assert "Done." in dialog.message.text()


@pytest.mark.parametrize(("which", "words"), [("dismissed", "Cancelled"), ("refused", "Not authorized")])
def test_dialog_plain_messages_for_126_and_127(qtbot, rig, which, words):
    dialog = make_dialog(rig, ("set-power-cap", GPU_PCI, "300"), pkexec=rig[which], qtbot=qtbot)
    with qtbot.waitSignal(dialog.applied, timeout=15000) as blocker:
        dialog.apply_button.click()
    assert blocker.args[0].kind.value == which.replace("refused", "not-authorized")
    assert words in dialog.message.text()
    assert cap_file(rig["root"]).read_text() == "290000000\n"
    assert dialog.apply_button.isEnabled() == (which == "dismissed")


def test_dialog_shows_the_helpers_refusal(qtbot, rig):
    dialog = make_dialog(rig, ("set-power-cap", GPU_PCI, "999"), qtbot=qtbot)
    assert "outside this GPU's range" in dialog.message.text()
    assert not dialog.apply_button.isEnabled()
    assert "step one" in dialog.text.toPlainText()


def test_dialog_without_helper_shows_manual_steps(qtbot):
    from rocmdesk.ui.fix_dialog import FixDialog

    status = client.HelperStatus(client.Availability.NO_HELPER, client.INSTALL_HINT)
    dialog = FixDialog(("initramfs-regenerate",), "Rebuild", ("Run update-initramfs -u -k $(uname -r)",),
                       status=status, target=LIVE)
    qtbot.addWidget(dialog)
    text = dialog.text.toPlainText()
    assert "pip install does not include" in text and "1. Run update-initramfs" in text
    assert not dialog.apply_button.isEnabled()


def test_dialog_applies_several_actions_in_order(qtbot, rig):
    dialog = make_dialog(rig, [("set-power-cap", GPU_PCI, "300"), ("set-power-profile", GPU_PCI, "5")], qtbot=qtbot)
    assert "[set-power-profile" in dialog.text.toPlainText()
    with qtbot.waitSignal(dialog.applied, timeout=20000):
        dialog.apply_button.click()
    assert [o.ok for o in dialog.outcomes] == [True, True]
    table = next(rig["root"].glob(f"sys/devices/*/*/{GPU_PCI}/pp_power_profile_mode")).read_text()
    assert H.parse_profiles(table)[1] == 5


class _StandInDialog(QtCore.QObject):
    """What open_fix_for_request returns, minus the dialog: records each open() in ``opened``."""

    applied = QtCore.Signal(object)

    def __init__(self, opened: list[_StandInDialog]) -> None:
        super().__init__()
        self._opened = opened

    def setAttribute(self, *_a):
        pass

    def open(self):
        self._opened.append(self)


def make_tab(qtbot, rig, mode="live"):
    from rocmdesk.ui.fix_dialog import FixDialog
    from rocmdesk.ui.tuning_tab import TuningTab

    ctx = fake_app_context(rig["root"], mode)

    def factory(actions, title, parent):
        return FixDialog(actions, title, status=rig["status"], helper_path=rig["helper"], pkexec=rig["pkexec"],
                         parent=parent, target=LIVE)

    tab = TuningTab(ctx, dialog_factory=factory)
    tab.changes.dialog_factory = factory
    tab.changes.can_undo = mode == "live"  # the test root stands in for the live machine
    qtbot.addWidget(tab)
    return tab


def test_tuning_tab_offers_only_what_the_gpu_supports(qtbot, rig):
    tab = make_tab(qtbot, rig)
    assert [tab.gpu_combo.itemData(i) for i in range(tab.gpu_combo.count())] == [GPU_PCI], "radeon GPU left out"
    assert (tab.cap_slider.minimum(), tab.cap_slider.maximum(), tab.cap_slider.value()) == (261, 333, 290)
    assert tab.cap_slider.mark == 290 and "default 290 W" in tab.cap_range.text()
    profiles = [tab.profile_combo.itemText(i) for i in range(tab.profile_combo.count())]
    assert "6 CUSTOM" not in profiles and profiles[0] == "0 BOOTUP_DEFAULT" and "7 WINDOW_3D" in profiles
    assert tab.level_combo.currentData() == "auto" and tab.level_combo.count() == 8
    assert tab.pending_actions() == []
    tab.cap_slider.setValue(300)
    tab.profile_combo.setCurrentIndex(tab.profile_combo.findData(5))
    assert tab.pending_actions() == [("set-power-cap", GPU_PCI, "300"), ("set-power-profile", GPU_PCI, "5")]
    dialog = tab.apply()
    with qtbot.waitSignal(dialog.previewed, timeout=15000):
        pass
    with qtbot.waitSignal(dialog.applied, timeout=20000):
        dialog.apply_button.click()
    qtbot.waitUntil(lambda: tab.state.power_cap.current_w == 300, timeout=5000)
    assert tab.state.active_profile == 5 and tab.level_combo.currentData() == "manual"
    assert tab.changes.tree.topLevelItemCount() == 2


def test_tuning_tab_on_a_recording_changes_nothing(qtbot, rig):
    ctx = H.Context(str(rig["root"]), caller_uid=1000, runner=None, kernel_release="6.8.0-1", use_syslog=False)
    H.apply_action(ctx, "xorg-disable-conf", ["/etc/X11/xorg.conf"])
    tab = make_tab(qtbot, rig, mode="demo")
    assert not tab.apply_button.isEnabled() and not tab.reset_button.isEnabled()
    # the demo machine's recorded settings, read-only: nothing opens a dialog, whatever is clicked or called
    assert "changes only the live machine" in tab.notice.text()
    assert not tab.controls.isHidden() and tab.empty_state.isHidden()
    assert tab.state is not None and not tab.cap_slider.isEnabled()
    assert tab.apply() is None and tab.reset() is None and tab.apply_selected_profile() is None
    from rocmdesk.ui.changes_view import ChangesView

    view = ChangesView(HostRoot(rig["root"]))  # a snapshot's journal: listed, never undone from here
    qtbot.addWidget(view)
    view.tree.setCurrentItem(view.tree.topLevelItem(0))
    assert view.tree.topLevelItemCount() == 1 and not view.undo_button.isEnabled()
    assert view.undo_selected() is None


def test_tuning_profiles_save_and_apply(qtbot, rig):
    tab = make_tab(qtbot, rig)
    tab.cap_slider.setValue(280)
    profile = tab.save_profile_named("Quiet")
    assert profile and tab.profile_list.currentText() == "Quiet"
    from rocmdesk.fixes.tuning_profiles import profiles_dir

    text = (profiles_dir() / "Quiet.yaml").read_text()
    assert "power_cap_w: 280" in text and GPU_PCI in text
    dialog = tab.apply_selected_profile()
    with qtbot.waitSignal(dialog.previewed, timeout=15000):
        pass
    with qtbot.waitSignal(dialog.applied, timeout=20000):
        dialog.apply_button.click()
    assert cap_file(rig["root"]).read_text() == "280000000\n"


def test_changes_view_undo(qtbot, rig):
    ctx = H.Context(str(rig["root"]), caller_uid=1000, runner=None, kernel_release="6.8.0-1", use_syslog=False)
    done = H.apply_action(ctx, "xorg-disable-conf", ["/etc/X11/xorg.conf"])
    settle_sysfs(rig["root"])
    tab = make_tab(qtbot, rig)
    view = tab.changes
    assert view.tree.topLevelItemCount() == 1 and not view.undo_button.isEnabled()
    view.tree.setCurrentItem(view.tree.topLevelItem(0).child(0))
    assert view.undo_button.isEnabled()
    dialog = view.undo_selected()
    with qtbot.waitSignal(dialog.previewed, timeout=15000):
        pass
    assert "Rename /etc/X11/xorg.conf.rocmdesk-disabled to /etc/X11/xorg.conf" in dialog.text.toPlainText()
    with qtbot.waitSignal(view.undone, timeout=15000) as blocker:
        dialog.apply_button.click()
    assert blocker.args == [done["undo_id"]]
    assert (rig["root"] / "etc/X11/xorg.conf").exists()
    item = view.tree.topLevelItem(0)
    assert item.text(2) == "undone" and not view.undo_button.isEnabled()


def test_fix_handler_connects_the_diagnosis_tab(qtbot, monkeypatch):
    from PySide6 import QtWidgets

    from rocmdesk.diagnosis.model import Finding, Fix, Severity
    from rocmdesk.ui import fix_dialog

    class Diagnosis(QtWidgets.QWidget):
        fixRequested = QtCore.Signal(object)

    window = QtWidgets.QMainWindow()
    qtbot.addWidget(window)
    window.tab_widgets = {"diagnosis": Diagnosis()}
    window.ctx = type("Ctx", (), {"root": HostRoot("/"), "mode": "live", "bundle_path": None, "extras": {}})()
    opened: list[_StandInDialog] = []
    monkeypatch.setattr(fix_dialog, "open_fix_for_request", lambda request, parent, **kw: _StandInDialog(opened))
    assert fix_dialog.install_fix_handler(window)
    assert fix_dialog.install_fix_handler(window), "idempotent"
    finding = Finding("xorg-driver-conflict", Severity.ERROR, "t", "e",
                      fix=Fix("xorg-disable-conf", True, (), ("xorg-disable-conf", "/etc/X11/xorg.conf")))
    window.tab_widgets["diagnosis"].fixRequested.emit(finding)
    assert len(opened) == 1
    window.tab_widgets["diagnosis"].fixRequested.emit(Finding("x", Severity.INFO, "t", "e"))
    assert len(opened) == 1, "a finding without a runnable fix opens nothing"
    assert not fix_dialog.install_fix_handler(QtWidgets.QWidget())


def test_pip_dialog_streams_and_cancels(qtbot, tmp_path):
    from rocmdesk.ui.fix_dialog import PipFixDialog

    env = tmp_path / "venv"
    (env / "bin").mkdir(parents=True)
    (env / "pyvenv.cfg").write_text("home = /usr/bin\n")
    python = env / "bin/python3"
    python.write_text(f"#!{sys.executable}\nimport sys, time\nif sys.argv[3] == 'freeze':\n    sys.exit(0)\n"
                      "print('Downloading torch', flush=True)\ntime.sleep(60)\n")
    python.chmod(0o755)
    dialog = PipFixDialog(str(env), "https://download.pytorch.org/whl/rocm6.2", target=LIVE)
    qtbot.addWidget(dialog)
    assert "no administrator password" in dialog.text.toPlainText()
    dialog.start(save_dir=tmp_path / "saved")
    qtbot.waitUntil(lambda: "Downloading torch" in dialog.text.toPlainText(), timeout=10000)
    with qtbot.waitSignal(dialog.finished_run, timeout=10000):
        dialog.cancel()
    assert "Cancelled" in dialog.message.text()
    bad = PipFixDialog(str(tmp_path / "nope"), "https://download.pytorch.org/whl/rocm6.2", target=LIVE)
    qtbot.addWidget(bad)
    assert not bad.run_button.isEnabled() and "not a virtual" in bad.text.toPlainText()


def test_outcome_json_roundtrip_is_what_the_dialog_parses(rig):
    ctx = H.Context(str(rig["root"]), caller_uid=1000, runner=None, kernel_release="6.8.0-1", use_syslog=False)
    result = H.apply_action(ctx, "set-performance-level", [GPU_PCI, "low"])
    assert client.outcome_from_exit(0, json.dumps(result)).undo_id == result["undo_id"]


def test_real_window_of_a_snapshot_routes_fixes_to_the_steps_dialog(qtbot, rig, monkeypatch):
    """Issue 10: a root folder shown as a snapshot never opens the runnable fix dialog (it would read and
    change THIS machine); the window opens the steps for that machine instead, with no Apply."""
    from rocmdesk.diagnosis.model import Finding, Fix, Severity
    from rocmdesk.host import RecordedRunner
    from rocmdesk.ui import fix_dialog
    from rocmdesk.ui.app import make_app, open_session
    from rocmdesk.ui.settings import Settings
    from rocmdesk.ui.sources import Source
    from tests.gui.conftest import FakeBackend

    make_app()
    backend = FakeBackend(1)
    session = open_session(Source("snapshot", "test", HostRoot(rig["root"]), RecordedRunner(), backend, backend.name),
                           Settings(), hotplug=False)
    window = session.window
    qtbot.addWidget(window)
    try:
        assert "diagnosis" in window.tab_widgets and "tuning" in window.tab_widgets
        qtbot.waitUntil(lambda: bool(window.property("rocmdeskFixHandler")), timeout=5000)
        opened: list[_StandInDialog] = []
        monkeypatch.setattr(fix_dialog, "open_fix_for_request", lambda request, parent, **kw: _StandInDialog(opened))
        shown: list = []
        monkeypatch.setattr(fix_dialog.StepsDialog, "open", lambda self: shown.append(self))
        diagnosis = window.tab_widgets["diagnosis"]
        finding = Finding("amdgpu-blacklisted", Severity.ERROR, "t", "e", fix=Fix(
            "modprobe-unblacklist-amdgpu", True, ("Comment it out.",),
            ("modprobe-unblacklist-amdgpu", "/etc/modprobe.d/b.conf")))
        diagnosis.fixRequested.emit(finding)
        assert opened == [], "the runnable fix dialog is never built for a snapshot"
        assert len(shown) == 1 and not shown[0].plan.applicable
        assert "not this machine" in shown[0].notice.text()
    finally:
        window.close()
        session.close()
