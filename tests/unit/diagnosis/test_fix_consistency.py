"""No finding's fix undoes another finding's fix, on any machine the tests know.

Found on the MI300X demo: hsa-override-mismatch said "remove `HSA_OVERRIDE_GFX_VERSION=11.0.0`" while
env-not-read-by-gpu-program said to add `Environment="HSA_OVERRIDE_GFX_VERSION=11.0.0"` to vllm.service: followed
in order, the second step puts back the fault the first removed, into the GPU program. Each machine here (every
round-trip scenario, all of them at once, both shipped demo machines) is diagnosed and every pair of steps is
compared: a variable value one step removes must not be set by another, and a package one step uninstalls must not
be installed by another.
"""

from __future__ import annotations

import re

import pytest

from rocmdesk.diagnosis.runner import diagnose
from rocmdesk.host import HostRoot
from rocmdesk.report.bundle import open_bundle
from rocmdesk.telemetry.recording import demo_machines, machine_path
from tests.support import scenarios as sc
from tests.unit.report.test_scenarios_round_trip import SCENARIOS

_NAME_VALUE = r"([A-Z][A-Z0-9_]*)=([^`\"'\s]*)"
_REMOVES = re.compile(r"(?:[Rr]emove|[Dd]elete|[Uu]nset|[Cc]omment out)[^.`]*`(?:export )?" + _NAME_VALUE + "`")
_SETS = re.compile(r"(?:Environment=\"|`export |[Ss]et `)" + _NAME_VALUE + r"[`\"]")
_UNINSTALLS = re.compile(r"pip uninstall (?:-y )?([A-Za-z0-9_. -]+?)`")
_INSTALLS = re.compile(r"pip install (?:--upgrade |-U )?([A-Za-z0-9_.=<>+ -]+?)(?: --|`)")


def _steps(report) -> list[tuple[str, str]]:
    out = []
    for f in report.findings:
        fix = f.fix
        for step in (fix.steps if fix is not None else ()):
            out.append((f.id, step))
    return out


def contradictions(steps: list[tuple[str, str]]) -> list[str]:
    removed = {(m.group(1), m.group(2)): fid for fid, step in steps for m in _REMOVES.finditer(step)}
    uninstalled = {name.lower(): fid for fid, step in steps for m in _UNINSTALLS.finditer(step)
                   for name in m.group(1).split()}
    out = []
    for fid, step in steps:
        for m in _SETS.finditer(step):
            key = (m.group(1), m.group(2))
            if key in removed and removed[key] != fid:
                out.append(f"{removed[key]} removes {key[0]}={key[1]}, {fid} sets it: {step[:160]}")
        for m in _INSTALLS.finditer(step):
            for name in m.group(1).split():
                bare = re.split(r"[=<>]", name)[0].lower()
                if bare in uninstalled and uninstalled[bare] != fid:
                    out.append(f"{uninstalled[bare]} uninstalls {bare}, {fid} installs it: {step[:160]}")
    return out


def test_the_detector_sees_the_demo_contradiction():
    steps = [("hsa-override-mismatch", "Edit /etc/environment as root (line 2) and remove "
                                       "`HSA_OVERRIDE_GFX_VERSION=11.0.0`."),
             ("env-not-read-by-gpu-program", "Run `sudo systemctl edit vllm.service` and add these lines under "
                                             '`[Service]`: `Environment="HSA_OVERRIDE_GFX_VERSION=11.0.0"`.'),
             ("pynvml-breaks-rocm-torch", "`pip uninstall -y pynvml nvidia-ml-py`"),
             ("other", "`/venv/bin/python -m pip install pynvml==11.5.0`")]
    found = contradictions(steps)
    assert len(found) == 2 and "HSA_OVERRIDE_GFX_VERSION=11.0.0" in found[0] and "pynvml" in found[1]
    assert contradictions(steps[:1] + steps[2:3]) == []


def _all_at_once(root) -> None:
    for name, make in sorted(SCENARIOS.items()):
        if name not in ("wsl", "kfd-missing", "gpu-unbound", "amdgpu-not-loaded", "secure-boot-blocks-dkms"):
            make(root)  # the ones that take the GPU away would hide the rest


@pytest.mark.parametrize("name", [*sorted(SCENARIOS), "all-at-once"])
def test_no_fix_undoes_another_on_a_scenario(tmp_path, name):
    root = sc.clean_workstation(tmp_path / "root")
    sc.comfyui_process(root)
    (_all_at_once if name == "all-at-once" else SCENARIOS[name])(root)
    report = diagnose(HostRoot(root))
    assert contradictions(_steps(report)) == []


@pytest.mark.parametrize("machine", demo_machines())
def test_no_fix_undoes_another_on_a_demo_machine(machine):
    path = machine_path(machine)
    assert path is not None
    with open_bundle(path) as opened:
        report = diagnose(opened.root, python_envs=opened.python_envs)
    assert report.findings, machine
    assert contradictions(_steps(report)) == []
