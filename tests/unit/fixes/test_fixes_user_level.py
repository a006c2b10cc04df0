"""User-level fixes (pip in a venv, never pkexec) and tuning profiles saved as YAML."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from rocmdesk.fixes import pip_fix, tuning_profiles
from rocmdesk.fixes.tuning_profiles import GpuTuning, ProfileError, TuningProfile
from tests.support.targets import LIVE

INDEX = "https://download.pytorch.org/whl/rocm6.2"


def fake_env(tmp_path, script_body: str, installed: dict[str, str] | None = None):
    """A venv whose bin/python is a script standing in for pip (records argv, prints lines); ``installed``
    becomes dist-info folders in its site-packages (what the plan reads to pick the packages)."""
    env = tmp_path / "venv"
    (env / "bin").mkdir(parents=True)
    (env / "pyvenv.cfg").write_text("home = /usr/bin\n")
    site = env / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    for name, version in (installed or {}).items():
        (site / f"{name.replace('-', '_')}-{version}.dist-info").mkdir()
    python = env / "bin" / "python3"
    python.write_text(f"#!{sys.executable}\nimport sys, time\n{script_body}\n")
    python.chmod(0o755)
    return env


def test_plan_checks_env_and_index(tmp_path):
    env = fake_env(tmp_path, "pass", {"torch": "2.4.0+cu121", "torchvision": "0.19.0+cu121",
                                      "torchaudio": "2.4.0+cu121"})
    plan = pip_fix.plan_pip_reinstall(env, INDEX)
    assert plan.argv == [str(env / "bin/python3"), "-m", "pip", "install", "--force-reinstall", "torch", "torchvision",
                         "torchaudio", "--index-url", INDEX]
    assert "no administrator password" in plan.describe() and " ".join(plan.argv) in plan.describe()
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
    run = pip_fix.PipRun(pip_fix.plan_pip_reinstall(env, INDEX), lines.append, save_dir=tmp_path / "saved", target=LIVE)
    assert run.run() == 0
    assert run.freeze_file and "torch==2.4.0+cu121" in run.freeze_file.read_text()
    assert lines[0].startswith("Saved the current package list")
    assert lines[1].startswith("$ ") and "--force-reinstall" in lines[1]
    assert lines[-1] == "Successfully installed torch-2.5.1+rocm6.2"
    assert run.after_file is not None and run.rollback is not None


def test_failed_freeze_changes_nothing(tmp_path):
    env = fake_env(tmp_path, "print('boom', file=sys.stderr); sys.exit(1)")
    run = pip_fix.PipRun(pip_fix.plan_pip_reinstall(env, INDEX), save_dir=tmp_path / "saved", target=LIVE)
    with pytest.raises(pip_fix.PipFixError, match="no way back"):
        run.run()
    assert not (tmp_path / "saved").exists()


def test_cancel_stops_the_install(tmp_path):
    env = fake_env(tmp_path, (
        "if sys.argv[3] == 'freeze':\n    sys.exit(0)\n"
        "print('Downloading', flush=True)\ntime.sleep(60)"))
    lines = []
    run = pip_fix.PipRun(pip_fix.plan_pip_reinstall(env, INDEX), lines.append, save_dir=tmp_path / "saved", target=LIVE)
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
    if not pins:  # the ROCm reinstall: the packages named, plus their dependencies
        new = {"torch": "2.5.1+rocm6.2", "torchvision": "0.20.1+rocm6.2", "torchaudio": "2.5.1+rocm6.2"}
        state.update({k: v for k, v in new.items() if k in args})
        state.update({"numpy": "2.1.2", "pytorch-triton-rocm": "3.1.0"})
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

    env = fake_env(tmp_path, FAKE_PIP, packages or BEFORE)
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
    run = pip_fix.PipRun(pip_fix.plan_pip_reinstall(env, INDEX), save_dir=tmp_path / "saved", target=LIVE)
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
    assert pip_fix.RollbackRun(rollback, lines.append, target=LIVE).run() == 0
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
    run = pip_fix.PipRun(pip_fix.plan_pip_reinstall(env, INDEX), save_dir=tmp_path / "saved", target=LIVE)
    run.run()
    pip_fix.RollbackRun(run.rollback, target=LIVE).run()
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
    run = pip_fix.PipRun(plan, lines.append, save_dir=tmp_path / "saved", target=LIVE)
    assert run.run() == 0
    assert lines[0].startswith("Saved the current package list") and "pynvml==11.5.0" in run.freeze_file.read_text()
    assert "pynvml" not in installed(env) and "nvidia-ml-py" not in installed(env)
    assert run.rollback.argvs() == [[str(env / "bin/python3"), "-m", "pip", "install", "--force-reinstall",
                                     "--no-deps", "--index-url", "https://pypi.org/simple", "pynvml==11.5.0",
                                     "nvidia-ml-py==12.535.161"]]
    assert pip_fix.RollbackRun(run.rollback, target=LIVE).run() == 0
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
    assert pip_fix.RollbackRun(bad, target=LIVE).run() == 1
    assert [c["argv"][-1] for c in calls(env)] == ["torch==2.4.0+cu121"], "the second step never ran"


# -- which packages the reinstall names: only what the environment has; torchaudio never past its last index ----


ROCM714 = "https://download.pytorch.org/whl/rocm7.14"


@pytest.mark.parametrize(("installed", "index", "packages"), [
    ({}, INDEX, ["torch"]),
    ({"torch": "2.5.1+cpu"}, INDEX, ["torch"]),
    ({"torch": "2.5.1+cpu", "torchvision": "0.20.1+cpu"}, INDEX, ["torch", "torchvision"]),
    ({"torch": "2.5.1+cpu", "torchaudio": "2.5.1+cpu"}, INDEX, ["torch", "torchaudio"]),
    ({"torch": "2.5.1", "torchvision": "0.20.1", "torchaudio": "2.5.1"}, ROCM714, ["torch", "torchvision"]),
    ({"torchaudio": "2.5.1"}, "https://download.pytorch.org/whl/nightly/rocm7.14", ["torch"]),
    ({"torchaudio": "2.5.1"}, "https://download.pytorch.org/whl/rocm7.2", ["torch", "torchaudio"]),
])
def test_the_plan_reinstalls_only_what_the_env_has(tmp_path, installed, index, packages):
    env = fake_env(tmp_path, "pass", installed)
    plan = pip_fix.plan_pip_reinstall(env, index)
    assert plan.argv[5:] == [*packages, "--index-url", index]
    assert plan.touched == tuple(packages)
    preview = plan.describe()
    assert " ".join(plan.argv) in preview  # the preview shows exactly the command
    left_out = "torchaudio" in installed and "torchaudio" not in packages
    assert ("torchaudio is left out" in preview) is left_out


def test_the_plan_and_the_diagnosis_name_the_same_packages(tmp_path):
    """The command in the finding's steps and the one-click plan come from one rule (torch_index)."""
    from rocmdesk.diagnosis import torch_index

    env = fake_env(tmp_path, "pass", {"torch": "2.5.1", "torchaudio": "2.5.1"})
    for name in ("rocm6.3", "rocm7.2", "rocm7.14"):
        plan = pip_fix.plan_pip_reinstall(env, torch_index.index_url(name))
        assert plan.packages == torch_index.reinstall_packages({"torch", "torchaudio"}, name)[0]


def test_unreadable_or_missing_site_packages_reinstalls_only_torch(tmp_path, monkeypatch):
    import os
    import shutil

    env = fake_env(tmp_path, "pass", {"torchvision": "0.20.1"})
    real_listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda p: (_ for _ in ()).throw(PermissionError(13, "denied", p))
                        if str(p).endswith("site-packages") else real_listdir(p))
    assert pip_fix.plan_pip_reinstall(env, INDEX).packages == ("torch",)  # EACCES: nothing proven present
    monkeypatch.undo()
    assert pip_fix.plan_pip_reinstall(env, INDEX).packages == ("torch", "torchvision")
    shutil.rmtree(env / "lib")
    assert pip_fix.plan_pip_reinstall(env, INDEX).packages == ("torch",)


@pytest.mark.parametrize(("version", "index"), [
    ("2.14.0+rocm7.14.0", "https://download.pytorch.org/whl/rocm7.14"),
    ("2.12.0+rocm7.2", "https://download.pytorch.org/whl/rocm7.2"),
    ("2.6.0+rocm6.2.4", "https://download.pytorch.org/whl/rocm6.2.4"),
    ("2.3.0+rocm6.2.3", None),  # AMD's repo.radeon.com build: whl/rocm6.2.3 does not exist
    ("2.4.0+rocm6.5", None), ("2.4.0+rocm7.3.0", None), ("2.0.0+rocm5.0", None),
])
def test_rocm_tags_map_only_to_indexes_that_exist(version, index):
    assert pip_fix.index_for_version(version) == index


def test_a_version_from_no_index_is_left_for_the_user_with_the_reason():
    before = "torch==2.3.0+rocm6.2.3\ntorchvision==0.18.0+rocm6.2.3\nnumpy==1.26.4\n"
    after = "torch==2.5.1+rocm6.2\nnumpy==1.26.4\n"
    plan = pip_fix.plan_rollback(Path("/v/bin/python"), before, after, ("torch",))
    assert plan.steps == []  # nothing pinned to an index that cannot serve it
    assert plan.skipped == [
        f"{name}: there is no PyTorch index whl/rocm6.2.3 (a build for ROCm 6.2.3 from elsewhere, e.g. AMD's "
        "repo.radeon.com), and no other index has this exact version"
        for name in ("torch==2.3.0+rocm6.2.3", "torchvision==0.18.0+rocm6.2.3")]
    assert "reinstall by hand" in plan.describe()
