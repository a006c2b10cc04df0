"""Which interpreter an environment's commands name: only one that is in the root (venv, conda, pyenv,
system), and no one-click fix when there is none."""

from __future__ import annotations

import os

import pytest

from rocmdesk.diagnosis import engine, torch_index
from rocmdesk.diagnosis import python_envs as pe
from rocmdesk.diagnosis.context import DiagnosisContext
from rocmdesk.diagnosis.metadata import load_metadata
from rocmdesk.host import HostRoot
from tests.support.python_envs import add_gpu_process, make_venv, write
from tests.unit.diagnosis.test_torch_checks import amd_machine

MISMATCH = "torch-wheel-mismatch"
PYNVML = "pynvml-breaks-rocm-torch"


def run(check_id, root):
    ctx = DiagnosisContext(HostRoot(root))
    return engine.run_check(engine._REGISTRY[check_id], ctx, load_metadata())


def only_versioned_interpreter(prefix):
    """A conda env as conda leaves it when the python/python3 links are gone: bin/python3.11 alone."""
    os.unlink(prefix / "bin" / "python")
    (prefix / "bin" / "python3.11").write_bytes(b"\x7fELF")
    (prefix / "bin" / "python3.11-config").write_text("#!/bin/sh\n")


@pytest.mark.parametrize(("names", "versions", "system", "expected"), [
    (["python", "python3", "python3.11"], ["3.11"], False, ["python3", "python", "python3.11"]),
    (["python3.11", "python3.11-config", "pip"], ["3.11"], False, ["python3.11"]),
    (["python3.12", "python3.9", "python3.11"], ["3.11"], False, ["python3.11", "python3.12", "python3.9"]),
    (["python", "python3", "python3.11"], ["3.11"], True, ["python3.11", "python3"]),  # python may be Python 2
    (["pythonw", "python3-config", "ipython"], [], False, []),
    ([], ["3.11"], False, []),
])
def test_interpreter_order(names, versions, system, expected):
    assert pe.interpreter_order(names, versions, system=system) == expected


def test_conda_env_found_by_its_process_names_the_interpreter_it_runs(tmp_path):
    amd_machine(tmp_path)
    prefix = make_venv(tmp_path, "opt/envs/sd", torch="cuda", conda=True)
    only_versioned_interpreter(prefix)
    add_gpu_process(tmp_path, 6200, "/opt/envs/sd/bin/python3.11", ["python3", "serve.py"])
    (env,) = pe.discover(HostRoot(tmp_path)).envs
    assert env.kind == "conda" and env.python == "/opt/envs/sd/bin/python3.11"
    (finding,) = run(MISMATCH, tmp_path).findings
    assert finding.title == "PyTorch is a CUDA build, not a ROCm build" and finding.subject == "/opt/envs/sd"
    assert finding.fix.steps[0].startswith("`/opt/envs/sd/bin/python3.11 -m pip install --force-reinstall")
    assert finding.fix.action == ("pip-reinstall-rocm-torch", "/opt/envs/sd",
                                  torch_index.index_url(torch_index.DEFAULT_INDEX))
    assert "/opt/envs/sd/bin/python " not in " ".join(finding.fix.steps)


def test_conda_env_in_home_without_process_uses_the_versioned_interpreter(tmp_path):
    amd_machine(tmp_path)
    prefix = make_venv(tmp_path, "home/alice/miniconda3/envs/sd", torch="cuda", conda=True)
    only_versioned_interpreter(prefix)
    env = pe.discover(HostRoot(tmp_path)).env_at("/home/alice/miniconda3/envs/sd")
    assert env is not None and env.python == "/home/alice/miniconda3/envs/sd/bin/python3.11"


def test_no_interpreter_at_all_means_no_command_path_and_no_one_click_fix(tmp_path):
    amd_machine(tmp_path)
    prefix = make_venv(tmp_path, "home/alice/miniconda3/envs/sd", torch="cuda", conda=True)
    os.unlink(prefix / "bin" / "python")
    (prefix / "bin" / "python3.11-config").write_text("#!/bin/sh\n")  # a tool, not an interpreter
    (finding,) = run(MISMATCH, tmp_path).findings
    assert finding.fix.action is None
    steps = " ".join(finding.fix.steps)
    assert "No Python interpreter was found in /home/alice/miniconda3/envs/sd/bin" in steps
    assert "/envs/sd/bin/python" not in steps.replace("/envs/sd/bin (", "")
    assert "`python -m pip install --force-reinstall torch" in steps


def test_activated_venv_process_without_an_interpreter_in_the_tree_is_not_trusted(tmp_path):
    """VIRTUAL_ENV gives a prefix, not proof that <prefix>/bin/python exists."""
    amd_machine(tmp_path)
    prefix = make_venv(tmp_path, "srv/app/venv", torch="cuda")
    os.unlink(prefix / "bin" / "python")
    add_gpu_process(tmp_path, 7000, "/usr/bin/python3.11", ["python", "app.py"])
    write(tmp_path / "proc/7000/environ", b"VIRTUAL_ENV=/srv/app/venv\0")
    env = pe.discover(HostRoot(tmp_path)).env_at("/srv/app/venv")
    assert env is not None and env.python is None


def test_pyenv_version_gets_its_interpreter_but_no_one_click_fix(tmp_path):
    amd_machine(tmp_path)
    prefix = tmp_path / "home/alice/.pyenv/versions/3.11.9"
    make_venv(tmp_path, "home/alice/.pyenv/versions/3.11.9", torch="cuda")
    os.unlink(prefix / "pyvenv.cfg")  # a pyenv install is a whole CPython, not a venv
    os.unlink(prefix / "bin" / "python")
    for name in ("python3.11", "python3"):
        (prefix / "bin" / name).write_bytes(b"\x7fELF")
    python = "/home/alice/.pyenv/versions/3.11.9/bin/python3.11"
    add_gpu_process(tmp_path, 7100, python, [python, "train.py"])
    env = pe.discover(HostRoot(tmp_path)).env_at("/home/alice/.pyenv/versions/3.11.9")
    assert env is not None and env.kind == "pyenv" and env.python == python
    (finding,) = run(MISMATCH, tmp_path).findings
    assert finding.fix.action is None and "not a virtual or conda environment" in finding.explanation
    assert finding.fix.steps[0].startswith(f"`{python} -m pip install")


def test_system_python_is_python3_never_a_missing_bin_python(tmp_path):
    amd_machine(tmp_path)
    write(tmp_path / "usr/bin/python3.11", b"\x7fELF")
    os.symlink("python3.11", tmp_path / "usr/bin/python3")
    site = tmp_path / "usr/lib/python3.11/site-packages"
    site.mkdir(parents=True)
    add_gpu_process(tmp_path, 7200, "/usr/bin/python3.11", ["/usr/bin/python3", "x.py"])
    env = pe.discover(HostRoot(tmp_path)).env_at("/usr")
    assert env is not None and env.kind == "system" and env.python == "/usr/bin/python3"


def test_pynvml_steps_use_the_found_interpreter_and_the_fix_once(tmp_path):
    amd_machine(tmp_path)
    prefix = make_venv(tmp_path, "home/alice/miniconda3/envs/sd", torch="rocm-old", conda=True,
                       packages={"pynvml": "11.5.0"})
    only_versioned_interpreter(prefix)
    (finding,) = run(PYNVML, tmp_path).findings
    assert finding.title == "pynvml crashes the ROCm torch"
    assert finding.fix.steps[0] == ("Uninstall it from this environment: "
                                    "`/home/alice/miniconda3/envs/sd/bin/python3.11 -m pip uninstall -y pynvml`.")
    # the explanation names the fixed releases; the finding's own words do not repeat them
    assert finding.explanation.count("2.5") == 1 and "#132990" not in finding.explanation
