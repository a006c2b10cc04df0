"""User-level fixes (pip in a venv, never pkexec) and tuning profiles saved as YAML."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from rocmdesk.fixes import pip_fix, tuning_profiles
from rocmdesk.fixes.tuning_profiles import GpuTuning, ProfileError, TuningProfile

INDEX = "https://download.pytorch.org/whl/rocm6.2"


def fake_env(tmp_path, script_body: str):
    """A venv whose bin/python is a script standing in for pip (records argv, prints lines)."""
    env = tmp_path / "venv"
    (env / "bin").mkdir(parents=True)
    (env / "pyvenv.cfg").write_text("home = /usr/bin\n")
    python = env / "bin" / "python3"
    python.write_text(f"#!{sys.executable}\nimport sys, time\n{script_body}\n")
    python.chmod(0o755)
    return env


def test_plan_checks_env_and_index(tmp_path):
    env = fake_env(tmp_path, "pass")
    plan = pip_fix.plan_pip_reinstall(env, INDEX)
    assert plan.argv == [str(env / "bin/python3"), "-m", "pip", "install", "--force-reinstall", "torch", "torchvision",
                         "torchaudio", "--index-url", INDEX]
    assert "no administrator password" in plan.describe()
    for bad_index in ("https://evil.example/whl/rocm6.2", "http://download.pytorch.org/whl/rocm6.2",
                      "https://download.pytorch.org/whl/cu121", INDEX + " --pre"):
        with pytest.raises(pip_fix.PipFixError, match="not a PyTorch ROCm wheel index"):
            pip_fix.plan_pip_reinstall(env, bad_index)
    pip_fix.plan_pip_reinstall(env, "https://download.pytorch.org/whl/nightly/rocm6.3")
    with pytest.raises(pip_fix.PipFixError, match="absolute"):
        pip_fix.plan_pip_reinstall("venv", INDEX)
    with pytest.raises(pip_fix.PipFixError, match="not a virtual or conda environment"):
        pip_fix.plan_pip_reinstall(tmp_path / "nothing", INDEX)


def test_run_saves_freeze_first_and_streams(tmp_path):
    env = fake_env(tmp_path, (
        "if sys.argv[3] == 'freeze':\n    print('torch==2.4.0+cu121')\n    sys.exit(0)\n"
        "print('Collecting torch'); print('Successfully installed torch-2.5.1+rocm6.2'); sys.exit(0)"))
    lines = []
    run = pip_fix.PipRun(pip_fix.plan_pip_reinstall(env, INDEX), lines.append, save_dir=tmp_path / "saved")
    assert run.run() == 0
    assert run.freeze_file and "torch==2.4.0+cu121" in run.freeze_file.read_text()
    assert lines[0].startswith("Saved the current package list")
    assert lines[1].startswith("$ ") and "--force-reinstall" in lines[1]
    assert lines[-1] == "Successfully installed torch-2.5.1+rocm6.2"
    assert run.plan.rollback_argv(run.freeze_file)[-2:] == ["-r", str(run.freeze_file)]


def test_failed_freeze_changes_nothing(tmp_path):
    env = fake_env(tmp_path, "print('boom', file=sys.stderr); sys.exit(1)")
    run = pip_fix.PipRun(pip_fix.plan_pip_reinstall(env, INDEX), save_dir=tmp_path / "saved")
    with pytest.raises(pip_fix.PipFixError, match="no way back"):
        run.run()
    assert not (tmp_path / "saved").exists()


def test_cancel_stops_the_install(tmp_path):
    env = fake_env(tmp_path, (
        "if sys.argv[3] == 'freeze':\n    sys.exit(0)\n"
        "print('Downloading', flush=True)\ntime.sleep(60)"))
    lines = []
    run = pip_fix.PipRun(pip_fix.plan_pip_reinstall(env, INDEX), lines.append, save_dir=tmp_path / "saved")
    thread = threading.Thread(target=run.run)
    start = time.monotonic()
    thread.start()
    while "Downloading" not in lines and time.monotonic() - start < 10:
        time.sleep(0.02)
    run.cancel()
    thread.join(10)
    assert not thread.is_alive() and time.monotonic() - start < 10
    assert run.returncode is not None and run.returncode != 0 and run.cancelled


def test_tuning_profile_roundtrip_and_actions(tmp_path):
    profile = TuningProfile("Quiet compute", {"0000:03:00.0": GpuTuning(250, "auto", 5),
                                              "0000:0b:00.0": GpuTuning(performance_level="low")})
    path = tuning_profiles.save_profile(profile, tmp_path)
    assert path.name == "Quiet_compute.yaml"
    (tmp_path / "broken.yaml").write_text("name: [")
    loaded = tuning_profiles.load_profiles(tmp_path)
    assert loaded == [profile]
    assert profile.gpus["0000:03:00.0"].actions("0000:03:00.0") == [
        ("set-power-cap", "0000:03:00.0", "250"), ("set-power-profile", "0000:03:00.0", "5")]
    assert profile.gpus["0000:0b:00.0"].actions("0000:0b:00.0") == [("set-performance-level", "0000:0b:00.0", "low")]
    tuning_profiles.delete_profile("Quiet compute", tmp_path)
    assert tuning_profiles.load_profiles(tmp_path) == []


def test_profiles_default_to_the_user_config_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert tuning_profiles.profiles_dir() == tmp_path / "rocmdesk" / "tuning"


@pytest.mark.parametrize("text", [
    "name: ../../etc\n", "gpus: {}\n", "name: x\ngpus: {'0000:03:00.0/..': {}}\n",
    "name: x\ngpus: {'0000:03:00.0': {power_cap_w: '250'}}\n",
    "name: x\ngpus: {'0000:03:00.0': {power_cap_w: true}}\n",
    "name: x\ngpus: {'0000:03:00.0': {performance_level: turbo}}\n",
    "name: x\ngpus: {'0000:03:00.0': {power_profile: -1}}\n", "- a list\n", "name: [unclosed\n",
])
def test_bad_profiles_are_refused(text):
    with pytest.raises(ProfileError):
        TuningProfile.from_yaml(text)


def test_every_index_the_diagnosis_can_suggest_is_accepted(tmp_path):
    from rocmdesk.diagnosis import torch_index

    env = fake_env(tmp_path, "pass")
    indexes = {torch_index.DEFAULT_INDEX, *torch_index.KNOWN_INDEXES}
    assert indexes
    for name in indexes:
        assert pip_fix.plan_pip_reinstall(env, torch_index.index_url(name)).index_url.endswith(name)
