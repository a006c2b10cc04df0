"""User-level fixes (pip in a venv, never pkexec) and tuning profiles saved as YAML."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

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
    assert run.after_file is not None and run.rollback is not None


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


# -- a stand-in pip that keeps its packages in a JSON file and serves versions only from their own index ---

FAKE_PIP = """
import json, os, sys
here = os.path.dirname(os.path.dirname(os.path.abspath(sys.argv[0])))
state_path = os.path.join(here, "state.json")
state = json.load(open(state_path))
with open(os.path.join(here, "calls.jsonl"), "a") as log:
    log.write(json.dumps({"argv": sys.argv[1:],
                          "pip_env": {k: v for k, v in os.environ.items() if k.upper().startswith("PIP_")}}) + "\\n")
args = sys.argv[3:]
command = sys.argv[3]
if command == "freeze":
    for name in sorted(state):
        print(name + "==" + state[name])
elif command == "uninstall":
    for name in args[2:]:
        if state.pop(name, None) is None:
            print("WARNING: Skipping " + name + " as it is not installed.")
elif command == "install":
    index = args[args.index("--index-url") + 1]
    pins = [a for a in args if "==" in a]
    if not pins:  # the ROCm reinstall
        state.update({"torch": "2.5.1+rocm6.2", "torchvision": "0.20.1+rocm6.2", "torchaudio": "2.5.1+rocm6.2",
                      "numpy": "2.1.2", "pytorch-triton-rocm": "3.1.0"})
    for pin in pins:
        name, version = pin.split("==")
        tag = version.partition("+")[2]
        serves = index.rstrip("/").endswith("/" + tag) if tag else index == "https://pypi.org/simple"
        if not serves:
            print("ERROR: No matching distribution found for " + pin)
            sys.exit(1)
        state[name] = version
json.dump(state, open(state_path, "w"))
"""

BEFORE = {"torch": "2.4.0+cu121", "torchvision": "0.19.0+cu121", "torchaudio": "2.4.0+cu121", "numpy": "1.26.4",
          "nvidia-cudnn-cu12": "9.1.0.70", "requests": "2.32.3", "pynvml": "11.5.0", "nvidia-ml-py": "12.535.161"}


def pip_env(tmp_path, packages=None):
    import json

    env = fake_env(tmp_path, FAKE_PIP)
    (env / "state.json").write_text(json.dumps(packages or BEFORE))
    return env


def calls(env):
    import json

    return [json.loads(line) for line in (env / "calls.jsonl").read_text().splitlines()]


def installed(env):
    import json

    return json.loads((env / "state.json").read_text())


@pytest.mark.parametrize(("version", "index"), [
    ("2.5.1+rocm6.2", "https://download.pytorch.org/whl/rocm6.2"),
    ("2.0.1+rocm5.4.2", "https://download.pytorch.org/whl/rocm5.4.2"),
    ("2.4.0+cu121", "https://download.pytorch.org/whl/cu121"),
    ("2.4.0+cu118", "https://download.pytorch.org/whl/cu118"),
    ("2.4.0+cpu", "https://download.pytorch.org/whl/cpu"),
    ("2.6.0.dev20241020+rocm6.2", "https://download.pytorch.org/whl/nightly/rocm6.2"),
    ("2.5.1", "https://pypi.org/simple"),
    ("1.0+local.build", None), ("2.4.0+cpu.cxx11.abi", None), ("2.4.0+rocm", None),
])
def test_index_from_the_local_tag(version, index):
    assert pip_fix.index_for_version(version) == index


def test_rollback_restores_the_old_builds_from_their_own_index(tmp_path):
    env = pip_env(tmp_path)
    run = pip_fix.PipRun(pip_fix.plan_pip_reinstall(env, INDEX), save_dir=tmp_path / "saved")
    assert run.run() == 0
    assert installed(env)["torch"] == "2.5.1+rocm6.2"
    rollback = run.rollback
    python = str(env / "bin/python3")
    assert rollback.argvs() == [
        [python, "-m", "pip", "uninstall", "-y", "pytorch-triton-rocm"],
        [python, "-m", "pip", "install", "--force-reinstall", "--no-deps", "--index-url", "https://pypi.org/simple",
         "numpy==1.26.4"],
        [python, "-m", "pip", "install", "--force-reinstall", "--no-deps", "--index-url",
         "https://download.pytorch.org/whl/cu121", "torch==2.4.0+cu121", "torchvision==0.19.0+cu121",
         "torchaudio==2.4.0+cu121"],
    ]
    lines = []
    assert pip_fix.RollbackRun(rollback, lines.append).run() == 0
    assert installed(env) == BEFORE, "exactly the packages of the saved freeze"
    assert all("--extra-index-url" not in c["argv"] for c in calls(env))
    assert "$ " + " ".join(rollback.argvs()[-1]) in lines


def test_rollback_without_an_after_freeze_restores_the_fixed_packages(tmp_path):
    before = "torch==2.4.0+cpu\ntorchvision==0.19.0+cpu\nweird==1.0+corp\nnumpy==1.26.4\n-e git+https://x/y#egg=z\n"
    plan = pip_fix.plan_rollback(Path("/v/bin/python"), before, None, (*pip_fix.PACKAGES, "weird"))
    assert plan.remove == ()
    assert [(s.index_url, s.pins) for s in plan.steps] == [
        ("https://download.pytorch.org/whl/cpu", ("torch==2.4.0+cpu", "torchvision==0.19.0+cpu"))]
    assert plan.skipped == ["weird==1.0+corp: no known index for the tag +corp"]
    assert "reinstall by hand" in plan.describe()
    same = pip_fix.plan_rollback(Path("/v/bin/python"), "a==1\n", "a==1\n", pip_fix.PACKAGES)
    assert same.is_empty and "Nothing to restore" in same.describe()


def test_pip_runs_without_pip_variables_or_config_files(tmp_path, monkeypatch):
    import os

    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "https://pypi.org/simple")
    monkeypatch.setenv("PIP_INDEX_URL", "https://mirror.example/simple")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(tmp_path / "pip.conf"))
    monkeypatch.setenv("pip_no_deps", "1")
    env = pip_env(tmp_path)
    run = pip_fix.PipRun(pip_fix.plan_pip_reinstall(env, INDEX), save_dir=tmp_path / "saved")
    run.run()
    pip_fix.RollbackRun(run.rollback).run()
    recorded = calls(env)
    assert len(recorded) >= 4  # freeze, install, freeze, rollback
    assert all(c["pip_env"] == {"PIP_CONFIG_FILE": os.devnull} for c in recorded), recorded


def test_child_env_keeps_the_rest(monkeypatch):
    import os

    env = pip_fix.child_env({"HOME": "/home/a", "PATH": "/usr/bin", "PIP_TARGET": "/tmp/x", "Pip_User": "1"})
    assert env == {"HOME": "/home/a", "PATH": "/usr/bin", "PIP_CONFIG_FILE": os.devnull, "PYTHONUNBUFFERED": "1"}


def test_pynvml_uninstall_runs_as_the_user_and_rolls_back(tmp_path):
    env = pip_env(tmp_path)
    plan = pip_fix.plan_pip_uninstall_pynvml(env)
    assert plan.argv == [str(env / "bin/python3"), "-m", "pip", "uninstall", "-y", "pynvml", "nvidia-ml-py"]
    assert "no administrator password" in plan.describe()
    lines = []
    run = pip_fix.PipRun(plan, lines.append, save_dir=tmp_path / "saved")
    assert run.run() == 0
    assert lines[0].startswith("Saved the current package list") and "pynvml==11.5.0" in run.freeze_file.read_text()
    assert "pynvml" not in installed(env) and "nvidia-ml-py" not in installed(env)
    assert run.rollback.argvs() == [[str(env / "bin/python3"), "-m", "pip", "install", "--force-reinstall",
                                     "--no-deps", "--index-url", "https://pypi.org/simple", "pynvml==11.5.0",
                                     "nvidia-ml-py==12.535.161"]]
    assert pip_fix.RollbackRun(run.rollback).run() == 0
    assert installed(env) == BEFORE
    with pytest.raises(pip_fix.PipFixError, match="not a virtual or conda environment"):
        pip_fix.plan_pip_uninstall_pynvml(tmp_path / "nothing")
    with pytest.raises(pip_fix.PipFixError, match="absolute"):
        pip_fix.plan_pip_uninstall_pynvml("venv")


def test_rollback_stops_at_the_first_failure(tmp_path):
    env = pip_env(tmp_path, {"torch": "2.4.0+cu121"})
    pypi = "https://pypi.org/simple"
    bad = pip_fix.PipRollback(env / "bin/python3", [pip_fix.RollbackStep(pypi, ("torch==2.4.0+cu121",)),
                                                    pip_fix.RollbackStep(pypi, ("numpy==1.0",))])
    assert pip_fix.RollbackRun(bad).run() == 1
    assert [c["argv"][-1] for c in calls(env)] == ["torch==2.4.0+cu121"], "the second step never ran"
