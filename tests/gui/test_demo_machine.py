"""Issue 10, item 5: the demo is a whole machine, diagnosed from its shipped bundle, never from this host.

``rocmdesk --demo`` (and the window with no AMD GPU) shows resources/demo/NAME.machine.tar.gz: the real
engine's findings of that machine, its recorded tuning settings read-only, and fixes as steps only.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from PySide6 import QtWidgets

from rocmdesk.diagnosis.runner import diagnose
from rocmdesk.diagnosis.target import TargetKind
from rocmdesk.fixes.finding_plan import plan_for_finding
from rocmdesk.ui import fix_dialog
from tests.gui.conftest import demo_small
from tests.support.no_process import no_process

pytestmark = pytest.mark.gui

MACHINE = "rx7900xtx-comfyui"
# torch-pinned-by-custom-node: ComfyUI-SUPIR's torch==2.5.1+cu121 is how the CUDA torch got into the venv
FAULTS = {"initramfs-stale", "user-not-in-render-group", "torch-wheel-mismatch", "torch-pinned-by-custom-node"}
# what the real engine finds on each shipped machine (tools/make_demo_machines.py puts these faults there)
# (the node's wrong 11.0.0 override in /etc/environment is not also "not read by vllm.service": handing it to the
# service would be the harmful fix; test_a_wrong_override_is_never_carried_into_the_service)
MACHINE_FAULTS = {MACHINE: FAULTS, "mi300x-node": {"hsa-override-mismatch", "visible-devices-hides-gpus"}}
KERNEL = "6.8.0-51-generic"
LACT = Path(__file__).resolve().parent.parent / "data" / "lact-sysfs" / "rx7900xtx" / "card0" / "device" / "hwmon"


def _lact_watts(name: str) -> float:
    """A power cap value of LACT's real RX 7900 XTX dump (microwatts in sysfs)."""
    return int(next(LACT.glob(f"*/{name}")).read_text().strip("\0\n ")) / 1e6


def _host_strings() -> list[str]:
    """What of this host must never show in the demo: its kernel release, and its host name when it is
    distinctive enough to search for (a two-letter name such as "vm" is checked in the identity only)."""
    uname = os.uname()
    return [s for s in (uname.release, uname.nodename) if len(s) >= 4]


def _contains_token(text: str, word: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(word)}(?![\w.-])", text) is not None


@pytest.fixture(params=sorted(MACHINE_FAULTS))
def demo(request):
    source = demo_small(preroll_s=0, recording=request.param)
    yield source
    source.bundle.close()
    source.backend.close()


def test_every_shipped_machine_is_tested():
    from rocmdesk.telemetry.recording import bundled_recordings, demo_machines

    assert set(demo_machines()) == set(MACHINE_FAULTS)
    assert set(demo_machines()) <= set(bundled_recordings())  # each has telemetry to play


def test_demo_source_reads_the_shipped_machine_not_this_host(demo):
    from rocmdesk.telemetry.recording import demo_machines, machine_path

    name = demo.machine_name
    assert name in demo_machines() and str(machine_path(name)) == demo.bundle.path
    assert not demo.root.is_live and os.path.realpath(demo.root.root) != "/"
    assert demo.root.root == demo.bundle.root.root
    # the machine holds the GPUs its recording plays: telemetry and diagnosis name the same PCI addresses
    from rocmdesk.fixes.tuning_state import PCI_RE

    amdgpu = sorted(p for p in demo.root.listdir("/sys/bus/pci/devices") if PCI_RE.fullmatch(p)
                    and (demo.root.readlink(f"/sys/bus/pci/devices/{p}/driver") or "").endswith("/amdgpu"))
    assert amdgpu == sorted(g.pci for g in demo.backend.recording.gpus)


def test_demo_findings_come_from_the_engine_and_nothing_of_the_host(demo):
    from rocmdesk.report.data import build_report
    from rocmdesk.report.markdown import copy_as_markdown
    from rocmdesk.ui.app import _target_of

    target = _target_of(demo)
    assert target.kind is TargetKind.DEMO and target.source == demo.machine_name and not target.applicable
    report = diagnose(demo.root, runner=demo.runner, python_envs=demo.bundle.python_envs, target=target)
    assert {f.id for f in report.findings} == MACHINE_FAULTS[demo.machine_name]
    assert target.machine.kernel == KERNEL and "Ubuntu 24.04" in (target.machine.distro or "")
    uname = os.uname()
    assert target.machine.hostname != uname.nodename and target.machine.kernel != uname.release
    diagnosis_text = str(report.to_json())
    markdown = copy_as_markdown(build_report(demo.root, diagnosis=report, source="demo machine"))
    assert KERNEL in markdown
    for text in (diagnosis_text, markdown):
        for word in _host_strings():
            assert not _contains_token(text, word), word


def test_every_demo_fix_is_steps_only_and_starts_nothing(demo, monkeypatch):
    from rocmdesk.ui.app import _target_of

    target = _target_of(demo)
    report = diagnose(demo.root, runner=demo.runner, python_envs=demo.bundle.python_envs, target=target)
    fixes = [f for f in report.findings if f.fix is not None]
    assert fixes and {f.id for f in fixes} <= MACHINE_FAULTS[demo.machine_name]
    with no_process(monkeypatch) as attempts:
        for finding in fixes:
            plan = plan_for_finding(finding, target)
            assert not plan.applicable and plan.steps, finding.id
            assert plan.target.kind is TargetKind.DEMO
    assert attempts == []


def test_fix_apply_on_a_demo_machine_exits_2_and_dry_run_shows_its_steps(capsys, monkeypatch):
    import json

    from rocmdesk.cli import main

    with no_process(monkeypatch) as attempts:
        code = main(["fix", "user-not-in-render-group", "--demo", MACHINE, "--apply"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == "" and "demo machine is not this machine" in captured.err
    assert attempts == []
    code = main(["fix", "user-not-in-render-group", "--demo", MACHINE, "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["applicable"] is False and data["target"]["kind"] == "demo"
    assert data["target"]["machine"]["kernel"] == KERNEL
    assert any("usermod" in step for step in data["steps"])


def test_demo_window_diagnoses_the_machine_and_offers_only_steps(open_window, qtbot, monkeypatch, tmp_path):
    session = open_window(demo_small(preroll_s=0, recording=MACHINE))
    window = session.window
    assert window.show_tab("diagnosis")
    tab = window.tab_widgets["diagnosis"]
    qtbot.waitUntil(lambda: tab.report is not None and not tab.running, timeout=30000)
    assert {f.id for f in tab.report.findings} == FAULTS
    assert tab.report.target.kind is TargetKind.DEMO
    tab._show_summary()
    assert tab.detail.toPlainText().splitlines()[0] == f"The demo machine ({MACHINE})"

    shown: list[QtWidgets.QDialog] = []
    monkeypatch.setattr(fix_dialog.StepsDialog, "open", lambda self: shown.append(self))
    monkeypatch.setattr(fix_dialog, "open_fix_for_request",
                        lambda *a, **k: pytest.fail("a runnable fix dialog was built for the demo machine"))
    with no_process(monkeypatch) as attempts:
        for finding in tab.report.findings:
            tab.fixRequested.emit(finding)
            dialog = shown[-1]
            qtbot.addWidget(dialog)
            assert "Apply" not in [b.text() for b in dialog.buttons.buttons()]
            assert not dialog.plan.applicable and MACHINE in dialog.notice.text()
    assert len(shown) == len(FAULTS) and attempts == []


def test_demo_tuning_shows_the_recorded_sysfs_read_only(open_window, qtbot):
    session = open_window(demo_small(preroll_s=0, recording=MACHINE))
    window = session.window
    assert window.show_tab("tuning")
    tab = window.tab_widgets["tuning"]
    tab.refresh_gpus()
    assert [tab.gpu_combo.itemData(i) for i in range(tab.gpu_combo.count())] == ["0000:03:00.0"]
    assert not tab.controls.isHidden() and tab.empty_state.isHidden(), tab.empty_title.text()
    assert tab.state is not None and tab.state.power_cap is not None
    # the values of LACT's real RX 7900 XTX dump, as the demo machine recorded them
    assert tab.cap_slider.value() == round(_lact_watts("power1_cap"))
    assert (tab.cap_slider.minimum(), tab.cap_slider.maximum()) == (round(_lact_watts("power1_cap_min")),
                                                                     round(_lact_watts("power1_cap_max")))
    profiles = [tab.profile_combo.itemText(i) for i in range(tab.profile_combo.count())]
    assert "5 COMPUTE" in profiles and tab.profile_combo.currentText() == "0 BOOTUP_DEFAULT"
    assert not tab.apply_button.isEnabled() and not tab.reset_button.isEnabled()
    assert not tab.cap_slider.isEnabled() and not tab.profile_combo.isEnabled()
    assert "Read-only" in tab.notice.text() and MACHINE in tab.notice.text()
    assert tab.tuning_box.title().startswith("Tuning (read-only")


def test_help_menu_switches_demo_machines(open_window, qtbot, monkeypatch):
    """Help ▸ Demo machine lists every shipped machine; choosing one opens it through the controller."""
    from rocmdesk.telemetry.recording import demo_machines
    from rocmdesk.ui import app as app_module
    from rocmdesk.ui.settings import Settings

    controller = app_module.Controller(QtWidgets.QApplication.instance(), Settings(), "auto")
    session = open_window(demo_small(preroll_s=0, recording=MACHINE), switch_source=controller.switch)
    window = session.window
    menus = {a.text().replace("&", ""): a.menu() for a in window.menuBar().actions()}
    assert "Help" in menus
    demo_menu = window.demo_menu
    assert demo_menu in [a.menu() for a in menus["Help"].actions()]
    window._fill_demo_menu()
    actions = {a.objectName(): a for a in demo_menu.actions()}
    assert set(actions) == {f"demo-{name}" for name in demo_machines()}
    assert actions[f"demo-{MACHINE}"].isChecked() and actions[f"demo-{MACHINE}"].text() != MACHINE  # its title
    others = [a for name, a in actions.items() if name != f"demo-{MACHINE}"]
    switched: list[tuple[str, str]] = []
    monkeypatch.setattr(controller, "switch", lambda kind, path: switched.append((kind, path)))
    window.switch_source = controller.switch
    actions[f"demo-{MACHINE}"].trigger()  # the one shown: nothing to open
    assert switched == []
    for action in others:
        action.trigger()
    assert switched == [("demo", a.objectName().removeprefix("demo-")) for a in others]


def test_switching_to_a_demo_machine_builds_its_source(qtbot, monkeypatch):
    """Controller.switch("demo", NAME) opens that machine's bundle in a worker thread (never this host)."""
    from rocmdesk.ui import app as app_module
    from rocmdesk.ui.settings import Settings

    controller = app_module.Controller(QtWidgets.QApplication.instance(), Settings(), "auto")
    shown: list = []
    monkeypatch.setattr(controller, "_show", lambda result: shown.append(result))
    controller.switch("demo", MACHINE)
    qtbot.waitUntil(lambda: bool(shown), timeout=15000)
    source = shown[0]
    try:
        assert source.mode == "demo" and source.machine_name == MACHINE and not source.root.is_live
    finally:
        source.bundle.close()
        source.backend.close()
    controller.switch("demo", "no-such-demo")
    qtbot.waitUntil(lambda: len(shown) == 2, timeout=15000)
    assert isinstance(shown[1], Exception)  # an unknown name is refused, not shown over this host


def test_mi300x_node_tuning_shows_its_eight_gpus_read_only(open_window, qtbot):
    """The default demo: the 8x MI300X node's power cap (750 W, tests/support/instinct.py) and profiles."""
    session = open_window(demo_small(preroll_s=0))
    tab = session.window.tab_widgets["tuning"]
    assert session.window.show_tab("tuning")
    tab.refresh_gpus()
    assert tab.gpu_combo.count() == 8 and tab.state is not None and tab.state.power_cap is not None
    assert tab.cap_slider.value() == 750 and tab.cap_slider.maximum() == 750
    assert not tab.apply_button.isEnabled() and not tab.cap_slider.isEnabled()
