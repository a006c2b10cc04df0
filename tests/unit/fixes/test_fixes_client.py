"""App side of fixes: pkexec argv, exit-code mapping, previews from the helper, journal, requests."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import pytest

from rocmdesk.diagnosis.model import Evidence, Finding, Fix, Severity
from rocmdesk.fixes import actions, client, journal, plan, requests
from rocmdesk.host import CommandResult, HostRoot, RecordedRunner
from tests.support.targets import LIVE
from tests.unit.fixes.helper_trees import (
    CALLER_UID,
    GPU_PCI,
    POLICY_FILE,
    RecordingRunner,
    build_host,
    load_helper,
    settle_sysfs,
)

H = load_helper()


def test_policy_is_wellformed_and_matches_the_app_and_the_helper():
    tree = ET.parse(POLICY_FILE)
    found = {}
    for action in tree.getroot().findall("action"):
        notes = {a.get("key"): a.text for a in action.findall("annotate")}
        defaults = action.find("defaults")
        found[action.get("id")] = (notes, {c.tag: c.text for c in defaults})
        assert action.findtext("description") and action.findtext("message")
    assert set(found) == set(actions.POLKIT_ACTION_IDS.values())
    for name, action_id in actions.POLKIT_ACTION_IDS.items():
        notes, defaults = found[action_id]
        assert notes["org.freedesktop.policykit.exec.path"] == actions.HELPER_PATH == H.HELPER_PATH
        assert notes["org.freedesktop.policykit.exec.argv1"] == name, "every action must pin argv1"
        assert defaults == {"allow_any": "no", "allow_inactive": "no", "allow_active": actions.POLKIT_DEFAULTS[name]}
    assert set(actions.HELPER_ACTIONS) == set(H.ACTIONS)
    assert {n: len(p) for n, p in H.ACTIONS.items()} == actions.ARGUMENT_COUNTS
    assert actions.POLKIT_DEFAULTS["set-power-cap"] == "auth_admin_keep"
    assert actions.POLKIT_DEFAULTS["modprobe-unblacklist-amdgpu"] == "auth_admin"
    assert tuple(H.PERFORMANCE_LEVELS) == actions.PERFORMANCE_LEVELS
    assert POLICY_FILE.name == actions.POLKIT_POLICY_NAME


def test_pkexec_argv_is_a_plain_argv_with_absolute_paths():
    argv = client.pkexec_argv(["set-power-cap", GPU_PCI, "250"], target=LIVE)
    assert argv == ["/usr/bin/pkexec", "/usr/libexec/rocmdesk/rocmdesk-helper", "set-power-cap", GPU_PCI, "250"]
    with pytest.raises(ValueError, match="user-level"):
        client.pkexec_argv(["pip-reinstall-rocm-torch", "/home/a/venv", "https://download.pytorch.org/whl/rocm6.2"],
                           target=LIVE)
    with pytest.raises(ValueError, match="unknown"):
        client.pkexec_argv(["rm", "-rf"], target=LIVE)
    with pytest.raises(ValueError, match="takes 2"):
        client.pkexec_argv(["set-power-cap", GPU_PCI], target=LIVE)
    with pytest.raises(ValueError, match="absolute"):
        client.pkexec_argv(["reset-tuning", GPU_PCI], pkexec="pkexec", target=LIVE)


@pytest.mark.parametrize(("code", "stdout", "kind", "words"), [
    (126, "", client.OutcomeKind.DISMISSED, "Cancelled"),
    (127, "", client.OutcomeKind.NOT_AUTHORIZED, "Not authorized"),
    (0, '{"ok": true, "action": "x", "changes": [{"kind": "command"}], "undo_id": "u"}',
     client.OutcomeKind.DONE, "Done"),
    (0, '{"ok": true, "action": "x", "changes": [], "undo_id": null}', client.OutcomeKind.DONE, "Nothing needed"),
    (2, '{"ok": false, "error": "invalid WATTS for set-power-cap"}', client.OutcomeKind.REFUSED, "Invalid WATTS"),
    (1, '{"ok": false, "error": "refusing: /etc/x is a symbolic link"}', client.OutcomeKind.REFUSED, "Refusing"),
    (1, '{"ok": false, "error": "update-initramfs failed"}', client.OutcomeKind.FAILED, "Update-initramfs failed"),
    (1, "Traceback (most recent call last):", client.OutcomeKind.FAILED, "did not report"),
    (None, "", client.OutcomeKind.FAILED, "did not report"),
])
def test_outcomes_in_plain_words(code, stdout, kind, words):
    outcome = client.outcome_from_exit(code, stdout, "")
    assert outcome.kind is kind and words in outcome.message
    assert outcome.ok == (kind is client.OutcomeKind.DONE)


def test_helper_status_reports_what_is_missing(tmp_path):
    assert client.helper_status(str(tmp_path)).availability is client.Availability.NO_HELPER
    assert "pip install" in client.helper_status(str(tmp_path)).message
    helper = tmp_path / "usr/libexec/rocmdesk/rocmdesk-helper"
    helper.parent.mkdir(parents=True)
    helper.write_text("#!/bin/sh\n")
    helper.chmod(0o755)
    assert client.helper_status(str(tmp_path)).availability is client.Availability.NO_PKEXEC
    pkexec = tmp_path / "usr/bin/pkexec"
    pkexec.parent.mkdir(parents=True)
    pkexec.write_text("")
    pkexec.chmod(0o755)
    assert client.helper_status(str(tmp_path)).availability is client.Availability.NO_POLICY
    policy = tmp_path / "usr/share/polkit-1/actions" / actions.POLKIT_POLICY_NAME
    policy.parent.mkdir(parents=True)
    policy.write_text("<policyconfig/>")
    status = client.helper_status(str(tmp_path))
    assert status.ready and status.pkexec == "/usr/bin/pkexec"


class InProcessHelper(RecordedRunner):
    """Runs the helper's own preview in-process on a temporary root (as `--preview` would)."""

    def __init__(self, root):
        super().__init__()
        self.root = root

    def run(self, argv, timeout=None, stdin=None):
        assert argv[0] == actions.HELPER_PATH and argv[1] == "--preview"
        ctx = H.Context(str(self.root), caller_uid=CALLER_UID, runner=RecordingRunner(), kernel_release="6.8.0-1",
                        use_syslog=False)
        result, code = H.cli(argv[1:], {}, 1000, CALLER_UID, lambda uid: ctx)
        return CommandResult(list(argv), code, json.dumps(result))


def test_preview_shows_exactly_what_apply_then_does(tmp_path):
    host = build_host(tmp_path / "root")
    action = ("modprobe-unblacklist-amdgpu", "/etc/modprobe.d/blacklist-amdgpu.conf")
    fix_plan = client.preview(action, InProcessHelper(host), target=LIVE)
    text = fix_plan.text()
    assert "1. Edit /etc/modprobe.d/blacklist-amdgpu.conf" in text
    assert "-blacklist amdgpu" in text and "+# disabled by rocmdesk: blacklist amdgpu" in text
    assert "2. Run /usr/sbin/update-initramfs -u -k 6.8.0-1" in text
    assert "Undo will:" in text and "restore /etc/modprobe.d/blacklist-amdgpu.conf byte for byte" in text
    ctx = H.Context(str(host), caller_uid=CALLER_UID, runner=RecordingRunner(), kernel_release="6.8.0-1",
                    use_syslog=False)
    applied = H.apply_action(ctx, action[0], list(action[1:]))
    outcome = client.outcome_from_exit(0, json.dumps(applied))
    assert outcome.ok and outcome.changes == fix_plan.raw


def test_preview_refusal_carries_the_helpers_reason(tmp_path):
    host = build_host(tmp_path / "root")
    with pytest.raises(plan.PlanError, match="outside this GPU's range"):
        client.preview(("set-power-cap", GPU_PCI, "999"), InProcessHelper(host), target=LIVE)


def test_preview_when_the_helper_cannot_run():
    runner = RecordedRunner()
    with pytest.raises(plan.PlanError, match="could not ask the helper"):
        client.preview(("reset-tuning", GPU_PCI), runner, target=LIVE)
    runner.add([actions.HELPER_PATH, "--preview", "reset-tuning", GPU_PCI], stdout="garbage")
    with pytest.raises(plan.PlanError, match="printed no result"):
        client.preview(("reset-tuning", GPU_PCI), runner, target=LIVE)


def test_sysfs_plan_text_uses_watts(tmp_path):
    host = build_host(tmp_path / "root")
    fix_plan = client.preview(("set-power-cap", GPU_PCI, "300"), InProcessHelper(host), target=LIVE)
    assert "from 290 W to 300 W" in fix_plan.text()
    empty = client.preview(("set-power-cap", GPU_PCI, "290"), InProcessHelper(host), target=LIVE)
    assert empty.is_empty and "Nothing to change" in empty.text()


def test_journal_lists_what_can_be_undone(tmp_path):
    host = build_host(tmp_path / "root")
    ctx = H.Context(str(host), caller_uid=CALLER_UID, runner=RecordingRunner(), kernel_release="6.8.0-1",
                    use_syslog=False)
    first = H.apply_action(ctx, "set-performance-level", [GPU_PCI, "high"])
    second = H.apply_action(ctx, "xorg-disable-conf", ["/etc/X11/xorg.conf"])
    H.apply_action(ctx, "undo", [first["undo_id"]])
    settle_sysfs(host)
    (host / "var/lib/rocmdesk/journal/20260101T000000Z-deadbeef.json").write_text("{broken")
    (host / "var/lib/rocmdesk/journal/notes.txt").write_text("ignored")
    entries = journal.list_entries(HostRoot(host))
    assert sorted(e.undo_id for e in entries) == sorted([first["undo_id"], second["undo_id"]])
    assert [(e.time, e.undo_id) for e in entries] == sorted(((e.time, e.undo_id) for e in entries), reverse=True)
    by_id = {e.undo_id: e for e in entries}
    assert by_id[first["undo_id"]].status == "undone" and not by_id[first["undo_id"]].can_undo
    assert by_id[second["undo_id"]].can_undo
    assert isinstance(by_id[second["undo_id"]].changes[0], plan.RenameChange)
    assert len(journal.list_entries(HostRoot(host), include_undo_runs=True)) == 3
    assert journal.list_entries(HostRoot(tmp_path / "empty")) == []


def _finding(action):
    return Finding("driver.blacklisted", Severity.ERROR, "amdgpu is blacklisted", "why",
                   [Evidence("blacklist amdgpu", "/etc/modprobe.d/b.conf", 1)],
                   Fix("unblacklist", True, ("edit the file",), action))


def test_requests_from_findings():
    req = requests.request_for_finding(_finding(("modprobe-unblacklist-amdgpu", "/etc/modprobe.d/b.conf")))
    assert req and req.privileged and req.steps == ("edit the file",)
    pip = requests.request_for_finding(_finding(("pip-reinstall-rocm-torch", "/v", "https://x")))
    assert pip and not pip.privileged
    assert requests.request_for_finding(_finding(None)) is None
    assert requests.request_for_finding(_finding(("format-disk",))) is None
    assert requests.request_for_finding(_finding(("xorg-disable-conf",))) is None


def _emitted_actions() -> set[str]:
    """Every action tuple the diagnosis checks can emit (``("name", ...)`` not right after Fix/a call)."""
    import re
    from pathlib import Path

    import rocmdesk.diagnosis.checks as checks

    text = "".join(p.read_text() for p in Path(checks.__file__).parent.glob("*.py"))
    return set(re.findall(r'(?<![A-Za-z_])\(\s*"([a-z][a-z0-9]*(?:-[a-z0-9]+)+)",(?!\s*(?:True|False))', text))


def test_every_action_the_diagnosis_emits_is_runnable():
    emitted = _emitted_actions()
    assert {"modprobe-unblacklist-amdgpu", "pip-reinstall-rocm-torch", "pip-uninstall-pynvml"} <= emitted
    assert emitted <= set(actions.HELPER_ACTIONS + actions.USER_ACTIONS), "a finding would get no Apply button"


def test_pynvml_finding_gets_a_user_level_request():
    req = requests.request_for_finding(_finding(("pip-uninstall-pynvml", "/home/a/venv")))
    assert req is not None and not req.privileged and req.action == ("pip-uninstall-pynvml", "/home/a/venv")
    assert requests.request_for_finding(_finding(("pip-uninstall-pynvml",))) is None
    with pytest.raises(ValueError, match="user-level"):
        client.pkexec_argv(["pip-uninstall-pynvml", "/home/a/venv"], target=LIVE)


def test_no_pkexec_exit_codes_from_the_helper_main(monkeypatch, capsys):
    monkeypatch.setattr(H.sys, "argv", ["rocmdesk-helper"])
    code = H.main()
    assert code == 2 and json.loads(capsys.readouterr().out)["ok"] is False
    assert os.umask(0o022) == 0o022
