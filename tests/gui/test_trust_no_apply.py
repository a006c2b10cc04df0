"""Issue 10 "done when": no path from a root folder, a snapshot or the demo reaches pkexec or the helper.

Every scenario root of the round-trip tests is opened as a root folder and as its bundle; every finding's
fix is triggered the way the window does it (``install_fix_handler`` -> ``open_fix_for_finding``). Each
opens the steps dialog for THAT machine (Copy steps, Save as script…) with no Apply, and nothing starts a
process. Even the runnable dialogs, built by hand with such a target, refuse without a process.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from PySide6 import QtCore, QtWidgets

from rocmdesk.diagnosis.runner import diagnose
from rocmdesk.diagnosis.target import target_for_bundle
from rocmdesk.host import HostRoot
from rocmdesk.report.bundle import open_bundle, prepare_bundle
from rocmdesk.ui import fix_dialog
from tests.support import scenarios as sc
from tests.support.no_process import no_process
from tests.unit.report.test_scenarios_round_trip import SCENARIOS

pytestmark = pytest.mark.gui


class _Window(QtWidgets.QWidget):
    """What install_fix_handler needs of a window: its source (ctx) and a Diagnosis tab with a report."""

    def __init__(self, root: HostRoot, mode: str, bundle_path: str | None, report) -> None:
        super().__init__()
        self.ctx = type("Ctx", (), {"root": root, "mode": mode, "bundle_path": bundle_path, "extras": {}})()
        self.diagnosis = _Diagnosis(report)
        self.tab_widgets = {"diagnosis": self.diagnosis}


class _Diagnosis(QtWidgets.QWidget):
    fixRequested = QtCore.Signal(object)

    def __init__(self, report) -> None:
        super().__init__()
        self.report = report


def _no_runnable_dialog(monkeypatch):
    """Record every dialog the handler opens; fail if a runnable one is even built."""
    shown: list[QtWidgets.QDialog] = []
    monkeypatch.setattr(fix_dialog.StepsDialog, "open", lambda self: shown.append(self))

    def refuse(*args, **kwargs):
        raise AssertionError("a runnable fix dialog was built for another machine")

    monkeypatch.setattr(fix_dialog, "open_fix_for_request", refuse)
    return shown


def _trigger_every_fix(qtbot, monkeypatch, window: _Window, tmp_path: Path) -> int:
    qtbot.addWidget(window)
    shown = _no_runnable_dialog(monkeypatch)
    assert fix_dialog.install_fix_handler(window)
    findings = [f for f in window.diagnosis.report.findings if f.fix is not None]
    tmp_path.mkdir(parents=True, exist_ok=True)
    with no_process(monkeypatch) as attempts:
        for number, finding in enumerate(findings):
            before = len(shown)
            window.diagnosis.fixRequested.emit(finding)
            assert len(shown) == before + 1, finding.id
            dialog = shown[-1]
            qtbot.addWidget(dialog)
            texts = [b.text() for b in dialog.buttons.buttons()]
            assert "Apply" not in texts and "Copy steps" in texts and "Save as script…" in texts, texts
            assert not dialog.plan.applicable and "not this machine" in dialog.notice.text()
            dialog.copy_steps()
            assert QtWidgets.QApplication.clipboard().text() == dialog.plan.text()
            saved = dialog.save_script(str(tmp_path / f"{number}-{finding.id}.sh"))
            assert saved and Path(saved).read_text().startswith("#!/bin/sh")
        assert attempts == []
    return len(findings)


@pytest.fixture(scope="module")
def scenario_sources(tmp_path_factory):
    """(name, root, bundle) for every scenario, built and captured once."""
    out = []
    for name in sorted(SCENARIOS):
        folder = tmp_path_factory.mktemp(name)
        root = sc.clean_workstation(folder / "root")
        sc.comfyui_process(root, activated=name == "comfyui-activated-venv")
        SCENARIOS[name](root)
        bundle = folder / "b.tar.gz"
        prepare_bundle(HostRoot(root)).save(bundle)
        out.append((name, root, bundle))
    return out


def test_every_scenario_root_and_its_bundle_offers_steps_never_apply(qtbot, monkeypatch, scenario_sources, tmp_path):
    fixes = 0
    for name, root, bundle in scenario_sources:
        host = HostRoot(root)
        report = diagnose(host)
        fixes += _trigger_every_fix(qtbot, monkeypatch, _Window(host, "snapshot", None, report), tmp_path / name)
        with open_bundle(bundle) as opened:
            report = diagnose(opened.root, python_envs=opened.python_envs, target=target_for_bundle(opened))
            window = _Window(opened.root, "snapshot", str(bundle), report)
            fixes += _trigger_every_fix(qtbot, monkeypatch, window, tmp_path / (name + "-bundle"))
        monkeypatch.undo()
    assert fixes >= 20, "the scenarios hold findings with fixes of every kind"


def test_a_demo_window_over_this_machines_root_offers_steps_only(qtbot, monkeypatch, scenario_sources, tmp_path):
    """The demo reads / today; its findings are still not this machine's to fix."""
    _name, root, _bundle = next(s for s in scenario_sources if s[0] == "amdgpu-blacklisted")
    report = diagnose(HostRoot(root))
    assert _trigger_every_fix(qtbot, monkeypatch, _Window(HostRoot("/"), "demo", None, report), tmp_path) >= 1


def test_runnable_dialogs_built_by_hand_refuse_another_machine(qtbot, monkeypatch, scenario_sources, tmp_path):
    _name, root, _bundle = next(s for s in scenario_sources if s[0] == "amdgpu-blacklisted")
    report = diagnose(HostRoot(root))
    target = report.target
    ready = fix_dialog.client.HelperStatus(fix_dialog.client.Availability.READY, "", "/usr/bin/pkexec")
    with no_process(monkeypatch) as attempts:
        dialog = fix_dialog.FixDialog(("modprobe-unblacklist-amdgpu", "/etc/modprobe.d/blacklist-amdgpu.conf"),
                                      "t", status=ready, target=target)
        qtbot.addWidget(dialog)
        assert not dialog.apply_button.isVisible() and not dialog.apply_button.isEnabled()
        assert "refusing" in dialog.text.toPlainText()
        dialog.start_preview()  # even when called directly: refused before a QProcess exists
        dialog.plans = [fix_dialog.FixPlan(("initramfs-regenerate",), [object()])]  # as if a preview had run
        dialog.apply()
        assert dialog.outcome is not None and dialog.outcome.kind.value == "refused"
        pip = fix_dialog.PipFixDialog(str(root / "home/alice/ComfyUI/venv"), uninstall_pynvml=True, target=target)
        qtbot.addWidget(pip)
        assert pip.plan is None and not pip.run_button.isEnabled() and not pip.run_button.isVisibleTo(pip)
        pip.start()
        assert pip.run is None
        QtWidgets.QApplication.processEvents()
        assert attempts == []
    assert subprocess.Popen.__init__ is not None  # the guard was lifted again


@pytest.mark.parametrize("kind", ["root folder", "bundle"])
def test_the_real_window_of_a_root_folder_or_bundle_offers_steps_only(qtbot, monkeypatch, scenario_sources, kind):
    """The whole window (its own Diagnosis tab and report): the xorg.conf fix of the issue's walk."""
    from rocmdesk.ui.app import make_app, open_session
    from rocmdesk.ui.settings import Settings
    from rocmdesk.ui.sources import bundle_source, root_source

    _name, root, bundle = next(s for s in scenario_sources if s[0] == "xorg-nvidia")
    make_app()
    source = root_source(str(root)) if kind == "root folder" else bundle_source(str(bundle))
    session = open_session(source, Settings(), hotplug=False)
    window = session.window
    qtbot.addWidget(window)
    try:
        qtbot.waitUntil(lambda: bool(window.property("rocmdeskFixHandler")), timeout=5000)
        diagnosis = window.tab_widgets["diagnosis"]
        if diagnosis.report is None and not diagnosis.running:
            diagnosis.run_all()
        qtbot.waitUntil(lambda: diagnosis.report is not None and not diagnosis.running, timeout=60000)
        finding = next(f for f in diagnosis.report.findings if f.id == "xorg-driver-conflict")
        shown = _no_runnable_dialog(monkeypatch)
        with no_process(monkeypatch) as attempts:
            diagnosis.fixRequested.emit(finding)
            assert attempts == []
        assert len(shown) == 1
        dialog = shown[0]
        qtbot.addWidget(dialog)
        assert dialog.plan.target.kind.value == ("root" if kind == "root folder" else "snapshot")
        assert diagnosis.report.target == dialog.plan.target  # the tab's report knows whose machine it is
        if kind == "bundle":
            assert dialog.plan.target.machine.captured == source.bundle.created
            assert "captured " in dialog.heading.text()
        assert "mv -- /etc/X11/xorg.conf /etc/X11/xorg.conf.rocmdesk-disabled" in dialog.text.toPlainText()
        assert "Apply" not in [b.text() for b in dialog.buttons.buttons()]
    finally:
        window.close()
        session.close()
