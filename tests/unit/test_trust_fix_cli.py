"""``rocmdesk fix``: the same plans headless; never applied for a root folder or a snapshot (issue 10, item 2)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from rocmdesk.cli import main
from rocmdesk.diagnosis.model import Finding, Fix, Severity
from rocmdesk.diagnosis.target import DiagnosisTarget, TargetKind, live_target, root_target
from rocmdesk.fixes import client
from rocmdesk.fixes.finding_plan import plan_for_finding
from rocmdesk.fixes.script import comment, render_script
from rocmdesk.host import HostRoot
from rocmdesk.report.bundle import prepare_bundle
from tests.support import scenarios as sc
from tests.support.no_process import no_process
from tests.unit.fixes.helper_trees import build_host, snapshot
from tests.unit.fixes.test_fix_rules_shared import TEST_CONF
from tests.unit.fixes.test_helper_actions import H, make_ctx

# (finding id, mutator, kind of change, what the commands must hold)
FIXABLE = {
    "amdgpu-blacklisted": (sc.blacklist_amdgpu, "file", "sed -i -e '2s/^[[:blank:]]*/# disabled by rocmdesk: /'"),
    "xorg-driver-conflict": (lambda r: sc.xorg_conf(r, "/etc/X11/xorg.conf", "nvidia"), "rename",
                             "mv -- /etc/X11/xorg.conf /etc/X11/xorg.conf.rocmdesk-disabled"),
    "user-not-in-render-group": (lambda r: sc.remove_user_from_group(r, "render"), "groups",
                                 "usermod -a -G render,video alice"),
}


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["fix", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _broken(folder: Path) -> Path:
    root = sc.clean_workstation(folder)
    for mutate, _kind, _cmd in FIXABLE.values():
        mutate(root)
    return root


@pytest.fixture
def broken(tmp_path):
    return _broken(tmp_path / "root")


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One broken root and its bundle for the tests that only read them."""
    folder = tmp_path_factory.mktemp("shared")
    root = _broken(folder / "root")
    bundle = folder / "customer.tar.gz"
    prepare_bundle(HostRoot(root), now=1_790_000_000.0).save(bundle)
    return root, bundle


@pytest.mark.parametrize("finding_id", sorted(FIXABLE))
def test_dry_run_on_a_root_folder_names_that_machine_and_its_exact_change(shared, capsys, finding_id):
    broken, _bundle = shared
    _mutate, kind, command = FIXABLE[finding_id]
    code, out, err = run_cli(capsys, finding_id, "--root", str(broken))
    assert code == 0, err
    assert f"For: the machine in the root folder {broken}" in out and sc.KERNEL in out
    assert command in out
    assert "not this machine" in out and "Takes effect:" in out and "How to undo:" in out
    code, out, _err = run_cli(capsys, finding_id, "--root", str(broken), "--json")
    data = json.loads(out)
    assert code == 0
    assert {"finding", "target", "applicable", "steps", "changes"} <= set(data)
    assert data["finding"] == finding_id and data["applicable"] is False
    assert data["target"]["kind"] == "root" and data["target"]["machine"]["kernel"] == sc.KERNEL
    assert data["steps"] and data["changes"][0]["kind"] == kind
    assert data["undo_commands"], "every one-click fix says how to undo it"


@pytest.mark.parametrize("where", ["--root", "--snapshot"])
@pytest.mark.parametrize("finding_id", sorted(FIXABLE))
def test_apply_on_another_machine_exits_2_with_one_line_and_nothing_runs(shared, capsys, monkeypatch, where,
                                                                         finding_id):
    broken, bundle = shared
    before = snapshot(broken, "etc", "home")
    with no_process(monkeypatch) as attempts:
        code, out, err = run_cli(capsys, finding_id, where, str(bundle if where == "--snapshot" else broken),
                                 "--apply")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "--apply refused" in err and "another machine" in err
    assert attempts == []
    assert snapshot(broken, "etc", "home") == before


def test_snapshot_dry_run_is_for_the_bundles_machine(shared, capsys):
    _root, bundle = shared
    code, out, err = run_cli(capsys, "xorg-driver-conflict", "--snapshot", str(bundle), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["target"]["kind"] == "snapshot" and data["target"]["source"] == str(bundle)
    assert data["target"]["machine"]["captured"] == 1_790_000_000.0
    assert data["applicable"] is False and data["changes"][0]["kind"] == "rename"


def test_bad_requests(broken, tmp_path, capsys):
    assert run_cli(capsys, "no-such-check", "--root", str(broken))[0] == 2
    assert run_cli(capsys, "amdgpu-blacklisted", "--root", str(tmp_path / "missing"))[0] == 2
    assert run_cli(capsys, "amdgpu-blacklisted", "--snapshot", str(tmp_path / "missing.tar.gz"))[0] == 2
    garbage = tmp_path / "garbage.tar.gz"
    garbage.write_bytes(b"\x1f\x8bnot really")
    assert run_cli(capsys, "amdgpu-blacklisted", "--snapshot", str(garbage))[0] == 2
    code, out, _ = run_cli(capsys, "amdgpu-blacklisted", "--root", str(sc.clean_workstation(tmp_path / "clean")))
    assert code == 0 and "does not fire" in out and "nothing to fix" in out
    code, _, err = run_cli(capsys, "amdgpu-blacklisted", "--root", str(broken), "--subject", "/etc/nope.conf")
    assert code == 1 and err == ""
    with pytest.raises(SystemExit) as both:
        main(["fix", "amdgpu-blacklisted", "--root", str(broken), "--snapshot", "x"])
    assert both.value.code == 2


def test_several_findings_need_a_subject(broken, capsys):
    sc.blacklist_amdgpu(broken, "/etc/modprobe.d/second.conf")
    code, _out, err = run_cli(capsys, "amdgpu-blacklisted", "--root", str(broken))
    assert code == 2 and "--subject" in err and "second.conf" in err
    code, out, _ = run_cli(capsys, "amdgpu-blacklisted", "--root", str(broken), "--subject",
                           "/etc/modprobe.d/second.conf")
    assert code == 0 and "sed -i" in out and "second.conf" in out


@pytest.mark.parametrize(("text", "expected_lines"), [
    ("blacklist amdgpu\n", [1]),
    ("# x\nblacklist \\\namdgpu\noptions amdgpu dc=1\n", [2, 3]),
    ("install amdgpu \\\n  /bin/false\n", [1, 2]),
    ("blacklist amdgpu \\\n\ninstall amdgpu /bin/true\n", [1, 2, 3]),
    ("install amdgpu \\\n/bin/false", [1, 2]),
])
def test_the_diff_worked_out_here_is_the_helpers_diff(tmp_path, text, expected_lines):
    """Steps for another machine use the helper's rule: the same diff as its --preview on the same tree."""
    host = build_host(tmp_path / "root")
    conf = host / TEST_CONF.lstrip("/")
    conf.write_text(text)
    os.chmod(conf, 0o644)
    finding = Finding("amdgpu-blacklisted", Severity.ERROR, "t", "e", subject=TEST_CONF,
                      fix=Fix("x", True, ("s",), ("modprobe-unblacklist-amdgpu", TEST_CONF)))
    plan = plan_for_finding(finding, root_target(str(host)))
    preview = H.preview_action(make_ctx(host), "modprobe-unblacklist-amdgpu", [TEST_CONF])
    assert preview["ok"], preview
    assert plan.changes[0]["diff"] == preview["changes"][0]["diff"]
    sed = next(c for c in plan.commands if c.argv[0] == "sed")
    assert sed.argv[3] == ";".join(f"{n}s/^[[:blank:]]*/# disabled by rocmdesk: /" for n in expected_lines)
    # and GNU sed, run on a copy, makes exactly the helper's new file
    copy = tmp_path / "copy.conf"
    copy.write_text(text)
    subprocess.run(["/usr/bin/sed", "-i", "-e", sed.argv[3], "--", str(copy)], check=True, timeout=10)
    helper_run = H.apply_action(make_ctx(host), "modprobe-unblacklist-amdgpu", [TEST_CONF])
    assert helper_run["ok"] and copy.read_bytes() == conf.read_bytes()


def test_script_is_valid_sh_and_hostile_names_stay_words(tmp_path):
    root = sc.clean_workstation(tmp_path / "root")
    evil = "/etc/X11/xorg.conf.d/$(touch pwned)`id`;x.conf"
    sc.xorg_conf(root, evil, "nvidia")
    finding = Finding("xorg-driver-conflict", Severity.ERROR, "title\nrm -rf /", "e", subject=evil,
                      fix=Fix("xorg-disable-conf", True, ("step one\n; rm -rf / #", "step\rtwo"),
                              ("xorg-disable-conf", evil)))
    script = render_script(plan_for_finding(finding, root_target(str(root))))
    check = subprocess.run(["/bin/sh", "-n"], input=script, text=True, capture_output=True, timeout=10)
    assert check.returncode == 0, check.stderr
    assert "set -eu" in script.splitlines()
    code = [line for line in script.splitlines() if line and not line.lstrip().startswith("#")]
    assert "mv -- '/etc/X11/xorg.conf.d/$(touch pwned)`id`;x.conf' " in script
    assert not any("rm -rf" in line for line in code), "step text never leaves its comment"
    mv = next(line for line in code if line.startswith("mv "))
    assert shlex.split(mv) == ["mv", "--", evil, evil + ".rocmdesk-disabled"]
    assert comment("a\nb\x00c\u2028d") == "# a b c d"


def test_apply_in_terminal_runs_pkexec_only_for_the_live_machine(tmp_path):
    fake = tmp_path / "pkexec"
    fake.write_text('#!/bin/sh\necho \'{"ok": true, "changes": [{"kind": "rename"}], '
                    '"undo_id": "20261202T065000Z-0123abcd"}\'\n')
    fake.chmod(0o755)
    outcome = client.apply_in_terminal(("xorg-disable-conf", "/etc/X11/xorg.conf"), target=live_target(),
                                       pkexec=str(fake))
    assert outcome.ok and outcome.undo_id == "20261202T065000Z-0123abcd"
    for target in (root_target(str(tmp_path)), DiagnosisTarget(TargetKind.DEMO, "/")):
        with pytest.raises(Exception, match="refusing to run"):
            client.apply_in_terminal(("xorg-disable-conf", "/etc/X11/xorg.conf"), target=target, pkexec=str(fake))


def test_no_agent_message_names_the_terminal_way(tmp_path):
    fake = tmp_path / "pkexec"
    fake.write_text("#!/bin/sh\necho 'Error creating textual authentication agent: no tty' >&2\nexit 127\n")
    fake.chmod(0o755)
    outcome = client.apply_in_terminal(("initramfs-regenerate",), target=live_target(), pkexec=str(fake))
    assert outcome.kind is client.OutcomeKind.NOT_AUTHORIZED and "pkttyagent" in outcome.message


def test_fix_is_a_subcommand():
    from rocmdesk.cli import SUBCOMMANDS, build_parser

    assert "fix" in SUBCOMMANDS
    assert build_parser(["fix", "x"]).parse_args(["fix", "some-finding"]).command == "fix"
    assert Path(__file__).exists()


def test_a_manual_only_fix_gives_steps_and_a_script_that_runs_nothing(tmp_path):
    finding = Finding("small-bar", Severity.INFO, "Resizable BAR is off", "e",
                      fix=Fix("enable-rebar", True, ("Enable Resizable BAR in the firmware setup.",)))
    plan = plan_for_finding(finding, root_target(str(tmp_path)))
    assert plan.action is None and not plan.applicable and plan.commands == []
    assert "Enable Resizable BAR" in plan.text()
    script = render_script(plan)
    code = [line for line in script.splitlines() if line and not line.startswith("#")]
    assert code == ["set -eu", "exit 0"]
    assert subprocess.run(["/bin/sh", "-n"], input=script, text=True, timeout=10).returncode == 0


def test_terminal_control_characters_from_another_machine_are_not_printed(tmp_path, capsys):
    root = sc.clean_workstation(tmp_path / "root")
    evil = "/etc/X11/xorg.conf.d/\x1b]0;owned\x07\x1b[2J.conf"
    sc.xorg_conf(root, evil, "nvidia")
    code, out, _err = run_cli(capsys, "xorg-driver-conflict", "--root", str(root), "--subject", evil)
    assert code == 0 and "rocmdesk-disabled" in out
    assert "\x1b" not in out and "\x07" not in out


def test_demo_machine_steps_only(shared, tmp_path, capsys, monkeypatch):
    """``--demo NAME`` opens the shipped demo machine (a bundle in resources/demo) as the demo: steps only."""
    from rocmdesk.resources import resources_dir

    _root, bundle = shared
    resources = tmp_path / "resources"
    (resources / "demo").mkdir(parents=True)
    for name in os.listdir(resources_dir()):
        if name != "demo":
            os.symlink(resources_dir() / name, resources / name)
    for name in os.listdir(resources_dir() / "demo"):
        os.symlink(resources_dir() / "demo" / name, resources / "demo" / name)
    target = resources / "demo" / "test-box.machine.tar.gz"
    if target.is_symlink():
        target.unlink()
    os.symlink(bundle, target)
    monkeypatch.setenv("ROCMDESK_RESOURCES", str(resources))
    code, out, err = run_cli(capsys, "xorg-driver-conflict", "--demo", "test-box", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["target"]["kind"] == "demo" and data["target"]["source"] == "test-box"
    assert data["applicable"] is False and data["changes"][0]["kind"] == "rename"
    with no_process(monkeypatch) as attempts:
        code, out, err = run_cli(capsys, "xorg-driver-conflict", "--demo", "test-box", "--apply")
    assert code == 2 and out == "" and "demo machine is not this machine" in err and attempts == []
    assert run_cli(capsys, "xorg-driver-conflict", "--demo", "no-such-demo")[0] == 2
    assert run_cli(capsys, "xorg-driver-conflict", "--demo", "../../etc/passwd")[0] == 2
