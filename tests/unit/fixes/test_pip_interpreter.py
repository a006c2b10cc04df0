"""The user-level pip fix finds the interpreter the way the diagnosis names it (python3, python, python3.X)."""

from __future__ import annotations

import sys

import pytest

from rocmdesk.fixes import pip_fix

INDEX = "https://download.pytorch.org/whl/rocm6.4"


def interpreter(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{sys.executable}\n")
    path.chmod(0o755)


def conda_env(tmp_path, *names):
    env = tmp_path / "envs" / "sd"
    (env / "conda-meta").mkdir(parents=True)
    (env / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    for name in names:
        interpreter(env / "bin" / name)
    return env


def test_conda_env_with_only_the_versioned_interpreter(tmp_path):
    env = conda_env(tmp_path, "python3.11")
    plan = pip_fix.plan_pip_reinstall(env, INDEX)
    assert plan.python == env / "bin" / "python3.11"
    assert pip_fix.plan_pip_uninstall_pynvml(env).argv[0] == str(env / "bin" / "python3.11")


def test_python3_first_then_python(tmp_path):
    env = conda_env(tmp_path, "python3.11", "python", "python3")
    assert pip_fix.plan_pip_reinstall(env, INDEX).python == env / "bin" / "python3"


def test_no_interpreter_is_refused_with_a_reason(tmp_path):
    env = conda_env(tmp_path)
    interpreter(env / "bin" / "python3.11-config")  # a tool, not an interpreter
    with pytest.raises(pip_fix.PipFixError, match="no Python interpreter in bin/"):
        pip_fix.plan_pip_reinstall(env, INDEX)
    (env / "bin" / "python3").write_text("not executable\n")  # present but not runnable
    with pytest.raises(pip_fix.PipFixError, match="no Python interpreter in bin/"):
        pip_fix.plan_pip_uninstall_pynvml(env)


def test_env_without_bin_folder(tmp_path):
    env = tmp_path / "v"
    env.mkdir()
    (env / "pyvenv.cfg").write_text("home = /usr/bin\n")
    with pytest.raises(pip_fix.PipFixError, match="no Python interpreter"):
        pip_fix.plan_pip_reinstall(env, INDEX)
