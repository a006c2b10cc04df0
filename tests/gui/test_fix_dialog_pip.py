"""The user-level pip dialogs: the pynvml finding gets an Apply button, runs as the user, restores on request."""

from __future__ import annotations

import json

import pytest

from rocmdesk.diagnosis.model import Evidence, Finding, Fix, Severity
from rocmdesk.fixes.requests import request_for_finding
from tests.support.targets import LIVE
from tests.unit.fixes.test_fixes_user_level import BEFORE, INDEX, calls, installed, pip_env

pytestmark = pytest.mark.gui


def pynvml_finding(env) -> Finding:
    return Finding("pynvml-breaks-rocm-torch", Severity.ERROR, f"pynvml crashes the ROCm torch in {env}", "why",
                   [Evidence("pynvml 11.5.0 is installed", str(env))],
                   Fix("pip-uninstall-pynvml", False, ("Uninstall it",), ("pip-uninstall-pynvml", str(env))))


def test_pynvml_finding_opens_the_uninstall_dialog_and_restores(qtbot, tmp_path):
    from rocmdesk.ui.fix_dialog import PipFixDialog, open_fix_for_request

    env = pip_env(tmp_path)
    request = request_for_finding(pynvml_finding(env))
    assert request is not None and not request.privileged
    dialog = open_fix_for_request(request, target=LIVE)
    qtbot.addWidget(dialog)
    assert isinstance(dialog, PipFixDialog)
    assert dialog.run_button.text() == "Uninstall" and dialog.run_button.isEnabled()
    assert "pip uninstall -y pynvml nvidia-ml-py" in dialog.text.toPlainText()
    assert "no administrator password" in dialog.text.toPlainText()
    assert not dialog.restore_button.isVisibleTo(dialog)
    with qtbot.waitSignal(dialog.finished_run, timeout=15000) as blocker:
        dialog.start(save_dir=tmp_path / "saved")
    assert blocker.args == [0]
    assert "pynvml" not in installed(env)
    assert "Done." in dialog.message.text()
    assert "pynvml==11.5.0" in dialog.text.toPlainText(), "what Restore would reinstall is shown"
    assert dialog.restore_button.isVisibleTo(dialog) and dialog.restore_button.isEnabled()
    with qtbot.waitSignal(dialog.restored, timeout=15000) as restored:
        dialog.restore_button.click()
    assert restored.args == [0] and installed(env) == BEFORE
    assert "Restored the previous packages." in dialog.message.text()
    assert all(not c["argv"][0].endswith(("pkexec", "sudo")) for c in calls(env))


def test_reinstall_dialog_restores_the_cuda_build_from_its_index(qtbot, tmp_path):
    from rocmdesk.ui.fix_dialog import PipFixDialog

    env = pip_env(tmp_path)
    dialog = PipFixDialog(str(env), INDEX, target=LIVE)
    qtbot.addWidget(dialog)
    assert dialog.run_button.text() == "Reinstall"
    with qtbot.waitSignal(dialog.finished_run, timeout=15000):
        dialog.start(save_dir=tmp_path / "saved")
    assert installed(env)["torch"] == "2.5.1+rocm6.2"
    with qtbot.waitSignal(dialog.restored, timeout=15000):
        dialog.restore()
    assert installed(env) == BEFORE
    last = calls(env)[-1]["argv"]
    assert last[last.index("--index-url") + 1] == "https://download.pytorch.org/whl/cu121"
    saved = json.loads((env / "state.json").read_text())
    assert saved["torch"] == "2.4.0+cu121"


def test_bad_env_disables_the_pynvml_dialog(qtbot, tmp_path):
    from rocmdesk.ui.fix_dialog import PipFixDialog

    dialog = PipFixDialog(str(tmp_path / "nope"), uninstall_pynvml=True, target=LIVE)
    qtbot.addWidget(dialog)
    assert not dialog.run_button.isEnabled() and "not a virtual" in dialog.text.toPlainText()
    dialog.restore()  # nothing ran: nothing to restore, no crash
    assert not dialog.restore_button.isVisibleTo(dialog)
