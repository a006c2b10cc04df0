"""How every scenario's findings read: the title does not repeat the subject, the subject has no parentheses
of its own (renderers put it in parentheses), root commands say `sudo`, and an interpreter named in a step
is in the root."""

from __future__ import annotations

import re

import pytest

from rocmdesk.diagnosis.runner import diagnose
from rocmdesk.host import HostRoot
from tests.support import scenarios as sc
from tests.unit.report.test_scenarios_round_trip import SCENARIOS

_INTERPRETER_RE = re.compile(r"(/[^\s`']+/bin/python[0-9.]*)(?=[\s`])")


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_findings_read_once_and_name_only_real_paths(tmp_path, name):
    root = sc.clean_workstation(tmp_path / "root")
    sc.comfyui_process(root, activated=name == "comfyui-activated-venv")
    SCENARIOS[name](root)
    report = diagnose(HostRoot(root))
    for finding in report.findings:
        if finding.subject:
            assert finding.subject not in finding.title, (finding.title, finding.subject)
            assert "(" not in finding.subject, finding.subject
        steps = finding.fix.steps if finding.fix else ()
        for step in steps:
            assert "as root: `" not in step, step  # a command run as root is written with sudo
            for path in _INTERPRETER_RE.findall(step):
                assert (root / path.lstrip("/")).is_symlink() or (root / path.lstrip("/")).is_file(), step
    for result in report.results:  # a failed check's one line names what each finding is about
        for finding in result.findings:
            if finding.subject:
                assert finding.subject in result.reason
