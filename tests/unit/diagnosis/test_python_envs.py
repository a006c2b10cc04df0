"""Python environment discovery and torch facts from files (no interpreter, no import)."""

from __future__ import annotations

import os

import pytest

from rocmdesk.diagnosis import python_envs as pe
from rocmdesk.host import HostRoot
from tests.support.host_faults import deny_reads
from tests.support.python_envs import (
    VERSION_PY_ANNOTATED,
    VERSION_PY_OLD,
    add_gpu_process,
    dist_info,
    install_torch,
    make_comfyui,
    make_venv,
    site_of,
    write,
)


def discover(root, **kw):
    return pe.discover(HostRoot(root), **kw)


# -- version.py and the build decision ------------------------------------------------------------


def test_parse_real_rocm_version_py():
    text = VERSION_PY_ANNOTATED.format(version="2.3.0.dev20240308+rocm6.0", cuda="None",
                                       hip="'6.0.32830-d62f6a171'")
    values, lines = pe.parse_version_py(text)
    assert values == {"hip": "6.0.32830-d62f6a171", "cuda": None, "__version__": "2.3.0.dev20240308+rocm6.0"}
    assert lines == {"hip": 8, "cuda": 6, "__version__": 4}


def test_parse_old_unannotated_version_py():
    values, _ = pe.parse_version_py(VERSION_PY_OLD.format(version="1.13.1+rocm5.2", cuda="None", hip="'5.2.21151'"))
    assert values["hip"] == "5.2.21151" and values["cuda"] is None


@pytest.mark.parametrize(("args", "build"), [
    ((True, "6.2.4", None, "2.5.1+cu121", False, True), "rocm"),  # hip field wins over everything
    ((True, None, "12.1", "2.5.1+rocm6.2", True, False), "cuda"),  # cuda field wins over the tag
    ((True, None, None, "2.5.1+rocm6.2", True, False), "cpu"),
    ((False, None, None, "2.5.1+rocm6.2", False, False), "rocm"),
    ((False, None, None, "2.9.0+rocmsdk20251202", False, False), "rocm"),
    ((False, None, None, "2.5.1+cu121", False, False), "cuda"),
    ((False, None, None, "2.5.1+cpu", False, False), "cpu"),
    ((False, None, None, "2.8.0a0+gitabc123", True, False), "rocm"),  # TheRock: libamdhip64 says it
    ((False, None, None, "2.8.0a0+gitabc123", False, False), "unknown"),
    ((False, None, None, "2.5.1", False, True), "cuda"),
    ((False, None, None, "2.5.1", False, False), "cuda"),  # untagged PyPI torch
    ((False, None, None, None, False, False), "unknown"),
])
def test_decide_build(args, build):
    assert pe.decide_build(*args)[0] == build


@pytest.mark.parametrize(("kind", "build", "version"), [
    ("rocm", "rocm", "2.5.1+rocm6.2"), ("cuda", "cuda", "2.5.1+cu121"),
    ("cuda-untagged", "cuda", "2.5.1"), ("cpu", "cpu", "2.5.1+cpu"),
])
def test_read_torch_from_a_venv(tmp_path, kind, build, version):
    prefix = make_venv(tmp_path, "home/alice/venv", kind)
    root = HostRoot(tmp_path)
    env = pe.read_env(root, "/home/alice/venv", "venv", "test")
    info = env.torch
    assert info.build == build and info.version == version
    assert info.metadata_version_line.text == f"Version: {version}"
    assert env.site_packages == ["/home/alice/venv/lib/python3.11/site-packages"]
    assert env.version_of("torchvision").startswith("0.20.1")
    if kind == "cuda-untagged":
        assert len(info.requires_nvidia) == 3 and info.requires_nvidia[0].line == 7
    if kind == "rocm":
        assert info.bundles_hip_runtime and info.rocm_version == "6.2" and info.hip.startswith("6.2.")
        assert any(line.text.startswith("hip: Optional[str] = '6.2") for line in info.version_py_lines)
    assert prefix.is_dir()


def test_missing_or_unreadable_version_py_falls_back_to_tag(tmp_path, monkeypatch):
    make_venv(tmp_path, "v", "rocm", version_py=False)
    env = pe.read_env(HostRoot(tmp_path), "/v", "venv", "test")
    assert env.torch.build == "rocm" and "no such file" in env.torch.version_py_problem
    make_venv(tmp_path, "w", "cuda")
    deny_reads(monkeypatch, "read_text", lambda path: path.endswith("version.py"))
    env = pe.read_env(HostRoot(tmp_path), "/w", "venv", "test")
    assert env.torch.build == "cuda" and "permission denied" in env.torch.version_py_problem
    assert env.torch.decided_by == "version tag +cu121"


def test_garbage_version_py_and_metadata(tmp_path):
    prefix = make_venv(tmp_path, "v", "rocm")
    write(site_of(prefix) / "torch" / "version.py", b"\xff\xfe garbage \x00")
    write(next(site_of(prefix).glob("torch-*.dist-info")) / "METADATA", b"\x00\x01binary")
    env = pe.read_env(HostRoot(tmp_path), "/v", "venv", "test")
    assert env.torch.build == "rocm"  # from the dist-info folder name tag
    assert env.torch.version_py_problem == "torch/version.py has no hip/cuda fields"


def test_no_torch_and_no_site_packages(tmp_path):
    make_venv(tmp_path, "v", None)
    assert pe.read_env(HostRoot(tmp_path), "/v", "venv", "t").torch is None
    (tmp_path / "empty").mkdir()
    env = pe.read_env(HostRoot(tmp_path), "/empty", "explicit", "t")
    assert env.problem == "no lib/python3*/site-packages folder" and env.torch is None


# -- discovery ------------------------------------------------------------------------------------


def test_finds_venvs_conda_and_comfyui(tmp_path):
    make_venv(tmp_path, "home/alice/projects/sd/venv", "rocm")
    make_venv(tmp_path, "home/alice/.venv", "cpu")
    make_venv(tmp_path, "home/alice/miniconda3", None, conda=True)
    make_venv(tmp_path, "home/alice/miniconda3/envs/comfy", "cuda", conda=True)
    make_venv(tmp_path, "home/bob/mambaforge/envs/ml", "rocm", conda=True)
    make_comfyui(tmp_path, "home/alice/ComfyUI", "rocm")
    result = discover(tmp_path)
    by_path = {e.path: e for e in result.envs}
    assert set(by_path) == {
        "/home/alice/projects/sd/venv", "/home/alice/.venv", "/home/alice/miniconda3",
        "/home/alice/miniconda3/envs/comfy", "/home/bob/mambaforge/envs/ml", "/home/alice/ComfyUI/venv"}
    assert by_path["/home/alice/miniconda3"].kind == "conda-base"
    assert by_path["/home/alice/miniconda3/envs/comfy"].torch.build == "cuda"
    (comfy,) = result.comfyui
    assert comfy.path == "/home/alice/ComfyUI" and comfy.env is by_path["/home/alice/ComfyUI/venv"]
    assert by_path["/home/alice/ComfyUI/venv"].comfyui == ["/home/alice/ComfyUI"]


def test_depth_limit_and_skipped_folders(tmp_path):
    make_venv(tmp_path, "home/alice/a/b/c/venv", "rocm")  # depth 4: found
    make_venv(tmp_path, "home/alice/a/b/c/d/venv", "rocm")  # depth 5: too deep
    make_venv(tmp_path, "home/alice/.cache/x/venv", "rocm")  # hidden cache: skipped
    make_venv(tmp_path, "home/alice/node_modules/venv", "rocm")
    paths = {e.path for e in discover(tmp_path).envs}
    assert paths == {"/home/alice/a/b/c/venv"}


def test_never_follows_symlinks_out_of_home(tmp_path):
    make_venv(tmp_path, "opt/elsewhere/venv", "cuda")
    make_venv(tmp_path, "home/alice/real", "rocm")
    (tmp_path / "home/alice/link-out").symlink_to("/opt/elsewhere")
    (tmp_path / "home/alice/link-abs").symlink_to(tmp_path / "opt/elsewhere")
    (tmp_path / "home/alice/loop").symlink_to("/home/alice")
    paths = {e.path for e in discover(tmp_path).envs}
    assert paths == {"/home/alice/real"}


def test_follows_symlinks_that_stay_in_home(tmp_path):
    make_comfyui(tmp_path, "home/alice/data/stuff/ComfyUI", "rocm")
    (tmp_path / "home/alice/ComfyUI").symlink_to("data/stuff/ComfyUI")
    (tmp_path / "home/alice/data/stuff/back").symlink_to("/home/alice")  # a loop: visited once
    result = discover(tmp_path, max_depth=1)
    assert [c.path for c in result.comfyui] == ["/home/alice/data/stuff/ComfyUI"]
    assert result.comfyui[0].env.path == "/home/alice/data/stuff/ComfyUI/venv"


def test_time_budget_and_notes(tmp_path):
    make_venv(tmp_path, "home/alice/venv", "rocm")
    result = discover(tmp_path, time_budget_s=0.0)
    assert result.envs == [] and any("stopped after 0 s" in n for n in result.notes)


def test_running_gpu_process_interpreter(tmp_path):
    make_venv(tmp_path, "srv/comfy/env", "cuda")  # outside /home: only the process reveals it
    comfy = make_comfyui(tmp_path, "srv/comfy/ComfyUI", torch=None, venv=None)
    add_gpu_process(tmp_path, 4242, "/srv/comfy/env/bin/python3.11",
                    ["/srv/comfy/env/bin/python3.11", f"/{comfy.relative_to(tmp_path)}/main.py", "--listen"])
    add_gpu_process(tmp_path, 77, "/usr/bin/python3.11", device="")  # no GPU fd: ignored
    result = pe.discover(HostRoot(tmp_path), explicit=["/srv/comfy/ComfyUI"])
    (env,) = result.envs
    assert env.path == "/srv/comfy/env" and "running GPU process 4242" in env.found_by[0]
    assert result.comfyui[0].env is env


def test_process_without_readable_exe_uses_cmdline(tmp_path):
    make_venv(tmp_path, "opt/venv", "rocm")
    add_gpu_process(tmp_path, 10, "/opt/venv/bin/python", ["/opt/venv/bin/python", "x.py"],
                    device="/dev/dri/renderD128", exe_link=False)
    (env,) = discover(tmp_path).envs
    assert env.path == "/opt/venv"


def test_explicit_paths(tmp_path):
    make_venv(tmp_path, "data/envs/a", "rocm")
    make_venv(tmp_path, "data/envs/b", "cpu", conda=True)
    result = pe.discover(HostRoot(tmp_path), explicit=["/data/envs/a", "data/envs/b/bin/python", "/nope"])
    assert [(e.path, e.kind) for e in result.envs] == [("/data/envs/a", "venv"), ("/data/envs/b", "conda")]
    assert "--python-env /nope: no such folder" in result.notes


def test_comfyui_without_venv_is_noted(tmp_path):
    make_comfyui(tmp_path, "home/alice/ComfyUI", venv=None)
    result = discover(tmp_path)
    assert result.comfyui[0].env is None
    assert any("no venv beside it" in n for n in result.notes)


def test_comfyui_dot_venv_and_custom_nodes(tmp_path):
    comfy = make_comfyui(tmp_path, "home/alice/comfy/ComfyUI", venv=".venv",
                         nodes={"ComfyUI-Crystools": {"requirements.txt": "torch\n"}, "node.disabled": {"a": "b"}})
    result = discover(tmp_path)
    assert result.comfyui[0].env.path == "/home/alice/comfy/ComfyUI/.venv"
    assert result.comfyui[0].custom_nodes == ["/home/alice/comfy/ComfyUI/custom_nodes/ComfyUI-Crystools"]
    assert comfy.is_dir()


def test_unreadable_home_and_missing_folders(tmp_path, monkeypatch):
    assert discover(tmp_path).envs == []  # no /home at all
    make_venv(tmp_path, "home/alice/venv", "rocm")
    real_scandir = os.scandir

    def deny(path):
        if str(path).endswith("/home/alice"):
            raise PermissionError(13, "denied")
        return real_scandir(path)

    monkeypatch.setattr(pe.os, "scandir", deny)
    assert [e.path for e in discover(tmp_path).envs] == []


def test_egg_info_and_lib64(tmp_path):
    prefix = tmp_path / "v"
    write(prefix / "pyvenv.cfg", "home = /usr/bin\n")
    site = prefix / "lib64" / "python3.12" / "site-packages"
    install_torch(site, "rocm")
    (site / "weird_name-1.0.egg-info").mkdir()
    dist_info(site, "nvidia-ml-py", "12.560.30")
    env = pe.read_env(HostRoot(tmp_path), "/v", "venv", "t")
    assert env.torch.build == "rocm" and env.version_of("nvidia_ml_py") == "12.560.30"
    assert env.version_of("weird-name") == "1.0"


def test_machine_gpus(tmp_path):
    write(tmp_path / "sys/bus/pci/devices/0000:03:00.0/vendor", "0x1002\n")
    write(tmp_path / "sys/bus/pci/devices/0000:03:00.0/class", "0x030000\n")
    write(tmp_path / "sys/bus/pci/devices/0000:04:00.0/vendor", "0x1002\n")
    write(tmp_path / "sys/bus/pci/devices/0000:04:00.0/class", "0x040300\n")  # HDMI audio
    write(tmp_path / "sys/bus/pci/devices/0000:05:00.0/vendor", "garbage\n")
    write(tmp_path / "sys/class/kfd/kfd/topology/nodes/0/properties", "gfx_target_version 0\n")
    write(tmp_path / "sys/class/kfd/kfd/topology/nodes/1/properties", "cpu_cores_count 0\ngfx_target_version 90010\n")
    write(tmp_path / "sys/class/kfd/kfd/topology/nodes/2/properties", "gfx_target_version 110000\n")
    gpus = pe.machine_gpus(HostRoot(tmp_path))
    assert gpus.readable and gpus.amd == ["/sys/bus/pci/devices/0000:03:00.0"] and not gpus.nvidia
    assert gpus.gfx_targets == ["gfx90a", "gfx1100"]
    assert not pe.machine_gpus(HostRoot(tmp_path / "nothing")).readable


# -- running processes as /proc really shows them (review fixes) -------------------------------------


def test_venv_process_is_its_venv_not_the_system_python(tmp_path):
    """/proc/<pid>/exe is the resolved base interpreter for every venv; argv[0] keeps the venv."""
    from tests.support import scenarios as sc

    root = sc.clean_workstation(tmp_path / "r")
    sc.comfyui_process(root)
    result = pe.discover(HostRoot(root), time_budget_s=5)
    venv = result.env_at(f"{sc.COMFYUI}/venv")
    assert any(f"running GPU process {sc.COMFYUI_PID}" in how for how in venv.found_by)
    assert result.env_at("/usr") is None


def test_activated_venv_process_found_through_virtual_env(tmp_path):
    from tests.support import scenarios as sc

    root = sc.clean_workstation(tmp_path / "r")
    sc.comfyui_process(root, activated=True)  # argv[0] == "python"
    result = pe.discover(HostRoot(root), time_budget_s=5)
    assert any("running GPU process" in how for how in result.env_at(f"{sc.COMFYUI}/venv").found_by)


def test_snapshot_relative_fd_links_still_count(tmp_path):
    """Support bundles store /proc/<pid>/fd/5 -> ../../../dev/kfd (relative)."""
    from rocmdesk.diagnosis.facts import HostFacts
    from rocmdesk.telemetry.proc_scan import holds_gpu
    from tests.support import scenarios as sc

    root = sc.clean_workstation(tmp_path / "r")
    fd = root / "proc/777/fd"
    fd.mkdir(parents=True)
    os.symlink("../../../dev/kfd", fd / "5")
    sc.write(root, "/proc/777/comm", "ollama\n")
    assert holds_gpu(HostRoot(root), 777)
    assert (777, "ollama") in HostFacts(HostRoot(root)).gpu_processes
    os.symlink("../../../dev/null", fd / "6")
    assert not holds_gpu(HostRoot(root), 778)
