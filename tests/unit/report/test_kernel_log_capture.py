"""A bundle records the kernel-log command output the diagnosis used, so ``diagnose --snapshot`` reads the same
log (journald-only machines have no /var/log/kern.log to copy)."""

from __future__ import annotations

import json

from rocmdesk.diagnosis.runner import diagnose
from rocmdesk.host import CommandResult, CommandRunner, HostRoot, RecordedRunner
from rocmdesk.report.bundle import open_bundle, prepare_bundle
from rocmdesk.report.collect import _commands_json
from tests.support import scenarios as sc

JOURNALCTL = ["/usr/bin/journalctl", "-k", "-b", "0", "--no-pager", "-o", "short-monotonic"]
FIRMWARE = "amdgpu 0000:03:00.0: Direct firmware load for amdgpu/gc_11_0_0_pfp.bin failed with error -2"


def _finding(report, check_id):
    return next(f for f in report.findings if f.id == check_id)


def test_journal_output_travels_in_the_bundle(tmp_path):
    root = sc.clean_workstation(tmp_path / "root")
    (root / "var/log/kern.log").unlink()
    runner = RecordedRunner()
    runner.add(JOURNALCTL, stdout="[    0.0] ws kernel: Linux version 6.8.0-51-generic\n"
                                  f"[    3.9] ws kernel: {FIRMWARE}\n")
    source = _finding(diagnose(HostRoot(root), runner=runner), "firmware-load-failure")
    plan = prepare_bundle(HostRoot(root), runner=RecordedRunner.from_json(runner.to_json()))
    plan.save(tmp_path / "b.tar.gz")
    with open_bundle(tmp_path / "b.tar.gz") as opened:
        with open(opened.root.join("rocmdesk/commands.json"), encoding="utf-8") as fh:
            recorded = json.load(fh)
        assert " ".join(JOURNALCTL) in recorded
        again = _finding(diagnose(opened.root), "firmware-load-failure")  # the bundle's own recordings
    assert again.evidence[0].path == source.evidence[0].path == " ".join(JOURNALCTL) + " (output)"
    assert again.evidence[0].line == source.evidence[0].line == 2
    assert again.evidence[0].text == source.evidence[0].text


def test_live_runner_history_keeps_the_cut_flag():
    # what a live capture records: the runner's history, with the output cap noted
    runner = CommandRunner()
    runner.history.append(CommandResult(JOURNALCTL, None, "[ 3.9] ws kernel: x\n", truncated=True))
    data = _commands_json(runner)
    replay = RecordedRunner.from_json(json.loads(json.dumps(data)))
    result = replay.run(JOURNALCTL)
    assert result.truncated and result.stdout == "[ 3.9] ws kernel: x\n"
