"""torch-wheel-mismatch, torch-pinned-by-custom-node and pynvml-breaks-rocm-torch on fake roots."""

from __future__ import annotations

import pytest
from packaging.requirements import Requirement

import rocmdesk.diagnosis.checks.python_torch as pt
from rocmdesk.diagnosis import engine, torch_index
from rocmdesk.diagnosis.context import DiagnosisContext
from rocmdesk.diagnosis.metadata import load_metadata
from rocmdesk.diagnosis.model import Severity, Status
from rocmdesk.host import HostRoot
from tests.support.host_faults import deny_reads
from tests.support.python_envs import CRYSTOOLS_REQUIREMENTS, dist_info, make_comfyui, make_venv, site_of, write

MISMATCH = "torch-wheel-mismatch"
PINNED = "torch-pinned-by-custom-node"
PYNVML = "pynvml-breaks-rocm-torch"
COMFY = "home/alice/ComfyUI"
VENV = f"/{COMFY}/venv"


def amd_machine(root, gfx=110000, nvidia=False):
    write(root / "sys/bus/pci/devices/0000:03:00.0/vendor", "0x1002\n")
    write(root / "sys/bus/pci/devices/0000:03:00.0/class", "0x030000\n")
    write(root / "sys/class/kfd/kfd/topology/nodes/1/properties", f"gfx_target_version {gfx}\n")
    if nvidia:
        write(root / "sys/bus/pci/devices/0000:01:00.0/vendor", "0x10de\n")
        write(root / "sys/bus/pci/devices/0000:01:00.0/class", "0x030200\n")


def run(check_id, root, **kw):
    ctx = DiagnosisContext(HostRoot(root), **kw)
    return engine.run_check(engine._REGISTRY[check_id], ctx, load_metadata())


# -- torch-wheel-mismatch ----------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "word"), [("cuda", "a CUDA build"), ("cuda-untagged", "a CUDA build"),
                                            ("cpu", "a CPU-only build")])
def test_mismatch_fires_for_cuda_and_cpu_builds(tmp_path, kind, word):
    amd_machine(tmp_path)
    make_comfyui(tmp_path, COMFY, kind)
    result = run(MISMATCH, tmp_path)
    assert result.status is Status.FAIL
    (finding,) = result.findings
    assert finding.severity is Severity.ERROR and finding.subject == VENV
    assert word in finding.title
    fix = finding.fix
    assert fix.id == "pip-reinstall-rocm-torch" and fix.privileged is False
    default = torch_index.index_url(torch_index.DEFAULT_INDEX)
    assert fix.action == ("pip-reinstall-rocm-torch", VENV, default)
    assert fix.steps[0] == (f"`{VENV}/bin/python -m pip install --force-reinstall torch torchvision torchaudio "
                            f"--index-url {default}`")
    assert not any("--extra-index-url https" in s for s in fix.steps)
    paths = {e.path for e in finding.evidence}
    assert f"{VENV}/lib/python3.11/site-packages/torch/version.py" in paths
    if kind == "cuda-untagged":
        assert any(e.text.startswith("Requires-Dist: nvidia-") for e in finding.evidence)
        assert any("Version: 2.5.1" == e.text for e in finding.evidence)
    text = " ".join([finding.explanation, *fix.steps])
    assert "torch.hip" not in text and "'hip'" not in text.replace("hip = ", "")


def test_rocm_build_passes(tmp_path):
    amd_machine(tmp_path)
    make_comfyui(tmp_path, COMFY, "rocm")
    result = run(MISMATCH, tmp_path)
    assert result.status is Status.PASS and "ROCm 6.2" in result.reason


def test_hip_field_beats_a_misleading_tag(tmp_path):
    amd_machine(tmp_path)
    make_venv(tmp_path, "home/alice/v", "rocm", version="2.5.1+cu121")  # hip field says ROCm
    assert run(MISMATCH, tmp_path).status is Status.PASS


def test_keeps_previous_rocm_index(tmp_path):
    amd_machine(tmp_path)
    prefix = make_venv(tmp_path, "home/alice/v", "cuda", companions=False)
    dist_info(site_of(prefix), "torchvision", "0.19.1+rocm6.1")
    finding = run(MISMATCH, tmp_path).findings[0]
    assert finding.fix.action[2] == "https://download.pytorch.org/whl/rocm6.1"
    assert "keeps ROCm 6.1" in finding.explanation


def test_index_for_rdna4_skips_too_old_previous_index(tmp_path):
    amd_machine(tmp_path, gfx=120001)
    prefix = make_venv(tmp_path, "home/alice/v", "cpu", companions=False)
    dist_info(site_of(prefix), "torchaudio", "2.4.1+rocm6.1")
    assert run(MISMATCH, tmp_path).findings[0].fix.action[2].endswith("/rocm6.4")


@pytest.mark.parametrize(("previous", "gfx", "index"), [
    (None, [], "rocm7.2"), ("6.2", ["gfx1100"], "rocm6.2"), ("6.2.4", [], "rocm6.2.4"),
    ("6.1", ["gfx1101"], "rocm6.2.4"), ("6.0", ["gfx1201"], "rocm6.4"), ("5.7", [], "rocm7.2"),
    ("6.2.41133", [], "rocm6.2"),
])
def test_choose_index(previous, gfx, index):
    assert torch_index.choose_index(previous, gfx)[0] == index


def test_mismatch_skips_without_amd_with_nvidia_or_without_envs(tmp_path):
    make_comfyui(tmp_path, COMFY, "cuda")
    assert "cannot tell which GPUs" in run(MISMATCH, tmp_path).reason
    amd_machine(tmp_path, nvidia=True)
    assert "NVIDIA GPU is present" in run(MISMATCH, tmp_path).reason
    other = tmp_path / "other"
    amd_machine(other)
    assert "no Python environment with torch" in run(MISMATCH, other).reason
    nv = tmp_path / "nv"
    write(nv / "sys/bus/pci/devices/0000:01:00.0/vendor", "0x10de\n")
    write(nv / "sys/bus/pci/devices/0000:01:00.0/class", "0x030000\n")
    assert run(MISMATCH, nv).reason == "no AMD GPU on this machine"


def test_explicit_env_and_every_env_reported(tmp_path):
    amd_machine(tmp_path)
    make_venv(tmp_path, "srv/a", "cpu")
    make_venv(tmp_path, "home/bob/b", "cuda")
    result = run(MISMATCH, tmp_path, python_env_paths=["/srv/a"])
    assert sorted(f.subject for f in result.findings) == ["/home/bob/b", "/srv/a"]


# -- torch-pinned-by-custom-node ---------------------------------------------------------------------


def pinned(tmp_path, requirements=None, pyproject=None, packages=None, torch="rocm", **kw):
    amd_machine(tmp_path)
    files = {}
    if requirements is not None:
        files["requirements.txt"] = requirements
    if pyproject is not None:
        files["pyproject.toml"] = pyproject
    make_comfyui(tmp_path, COMFY, torch, nodes={"some-node": files}, packages=packages, **kw)
    return run(PINNED, tmp_path)


@pytest.mark.parametrize("requirements", [
    "torch\ntorchvision\n",  # unpinned: pip keeps the ROCm build
    "torch==2.5.1\n",  # PEP 440: ==2.5.1 matches 2.5.1+rocm6.2
    "torch>=2.1,<2.6\ntorchvision>=0.19\n",
    CRYSTOOLS_REQUIREMENTS,
    "torch==2.9.0; sys_platform == 'win32'\n",  # marker false on Linux
    "# torch==2.6.0\n-r other.txt\n--extra-index-url https://download.pytorch.org/whl/cu121\nnumpy<2\nnot a req ===\n",
])
def test_harmless_requirements_pass(tmp_path, requirements):
    result = pinned(tmp_path, requirements)
    assert result.status is Status.PASS, [e.text for f in result.findings for e in f.evidence]


@pytest.mark.parametrize(("requirements", "line", "severity"), [
    ("numpy\ntorch>=2.6\n", 2, Severity.ERROR),
    ("torch==2.4.1\n", 1, Severity.ERROR),
    ("torch==2.5.1+cu121\n", 1, Severity.ERROR),
    ("torchvision==0.21.0  # needs new ops\n", 1, Severity.ERROR),
    ("xformers\n", 1, Severity.WARNING),
    ("xformers==0.0.28.post3\n", 1, Severity.WARNING),
])
def test_replacing_requirements_fire(tmp_path, requirements, line, severity):
    result = pinned(tmp_path, requirements)
    assert result.status is Status.FAIL
    (finding,) = result.findings
    assert finding.severity is severity
    node = f"/{COMFY}/custom_nodes/some-node"
    assert finding.subject == node
    (ev,) = [e for e in finding.evidence if e.path == f"{node}/requirements.txt"]
    assert ev.line == line
    fix = finding.fix
    assert fix.privileged is False and fix.id == "pip-constrain-torch"
    steps = " ".join(fix.steps)
    assert "torch==2.5.1+rocm6.2" in steps and "-c ~/rocm-torch-constraints.txt" in steps
    assert "sed" not in steps and "Leave the node's files unchanged" in steps


def test_installed_xformers_that_satisfies_is_harmless(tmp_path):
    assert pinned(tmp_path, "xformers>=0.0.27\n", packages={"xformers": "0.0.28.post3"}).status is Status.PASS


def test_missing_companion_is_a_warning(tmp_path):
    result = pinned(tmp_path, "torchaudio\n", companions=False)
    assert result.findings[0].severity is Severity.WARNING
    assert "may replace" in result.findings[0].evidence[0].text


def test_pyproject_dependencies_with_lines(tmp_path):
    pyproject = ('[project]\nname = "node"\nversion = "1.0"\ndependencies = [\n  "numpy",\n'
                 '  "torch>=2.7.0",\n]\n\n[tool.comfy]\nPublisherId = "x"\n')
    result = pinned(tmp_path, None, pyproject)
    (ev,) = [e for e in result.findings[0].evidence if e.path.endswith("pyproject.toml")]
    assert ev.line == 6 and ev.text.startswith("torch>=2.7.0")


def test_garbage_pyproject_and_unreadable_requirements(tmp_path, monkeypatch):
    result = pinned(tmp_path, None, "[project\ndependencies = [torch>=9")
    assert result.status is Status.PASS
    deny_reads(monkeypatch, "read_text", lambda path: path.endswith("requirements.txt"))
    other = tmp_path / "b"
    assert pinned(other, "torch>=2.6\n").status is Status.PASS  # unreadable: nothing proven


def test_pinned_skips(tmp_path):
    assert "no ComfyUI install" in run(PINNED, tmp_path).reason
    assert "not a ROCm build" in pinned(tmp_path / "a", "torch>=2.6\n", torch="cuda").reason
    make_comfyui(tmp_path / "b", COMFY, venv=None, nodes={"n": {"requirements.txt": "torch>=2.6\n"}})
    assert "environment or torch was not found" in run(PINNED, tmp_path / "b").reason


# -- the swap already happened: the node that asked for the CUDA/CPU torch is named ------------------


@pytest.mark.parametrize(("torch", "requirements", "word", "lines"), [
    ("cuda", "torch==2.5.1+cu121\n--extra-index-url https://download.pytorch.org/whl/cu121\nomegaconf\n", "CUDA",
     [1, 2]),
    ("cuda", "torch==2.3.1+cu121\n", "CUDA", [1]),
    ("cuda", "-i https://download.pytorch.org/whl/cu124  # fast\ntorch>=2.4\n", "CUDA", [1]),
    ("cuda", "--index-url=https://download.pytorch.org/whl/nightly/cu126\ntorchvision\n", "CUDA", [1]),
    ("cpu", "torch==2.5.1+cpu\n", "CPU-only", [1]),
    ("cuda-untagged", "torchaudio==2.5.1+cu121\n", "CUDA", [1]),
])
def test_node_that_asked_for_the_cuda_torch_is_named(tmp_path, torch, requirements, word, lines):
    result = pinned(tmp_path, requirements, torch=torch)
    assert result.status is Status.FAIL, result.reason
    (finding,) = result.findings
    node = f"/{COMFY}/custom_nodes/some-node"
    assert finding.subject == node and finding.severity is Severity.ERROR
    assert finding.title == f"A ComfyUI custom node asks for a {word} build of torch"
    assert [e.line for e in finding.evidence if e.path == f"{node}/requirements.txt"] == lines
    assert "already a" in finding.explanation and "torch-wheel-mismatch" in finding.explanation
    steps = " ".join(finding.fix.steps)
    assert finding.fix.id == "pip-constrain-torch" and not finding.fix.privileged
    assert "torch-wheel-mismatch" in finding.fix.steps[0]  # the ROCm torch comes back first
    assert "pip freeze | grep -E '^(torch|torchvision|torchaudio)=='" in steps
    assert f"-r {node}/requirements.txt -c ~/rocm-torch-constraints.txt" in steps
    assert "+cu121" not in steps.split("freeze")[0]  # never a constraint on the CUDA version


def test_exact_pin_of_the_installed_cuda_torch_says_so(tmp_path):
    result = pinned(tmp_path, "torch==2.5.1+cu121\n", torch="cuda")
    installed = result.findings[0].evidence[-1].text
    assert installed.startswith("installed: torch 2.5.1+cu121, a CUDA build") and "exactly the build" in installed
    other = pinned(tmp_path / "b", "torch==2.3.1+cu118\n", torch="cuda")
    assert "exactly" not in other.findings[0].evidence[-1].text


@pytest.mark.parametrize("requirements", [
    "torch\nnumpy\n",  # an unpinned torch does not say which build
    "torch==2.5.1\n",  # no build label
    "--extra-index-url https://download.pytorch.org/whl/cu121\nnumpy\n",  # an index, but no torch asked for
    "torch==2.5.1+rocm6.2\n--index-url https://download.pytorch.org/whl/rocm6.2\n",  # a ROCm ask is no culprit
    "torch==2.5.1+cu121; sys_platform == 'win32'\n",  # not on Linux
    "# torch==2.5.1+cu121\n",
])
def test_cuda_env_without_a_culprit_node_still_skips(tmp_path, requirements):
    result = pinned(tmp_path, requirements, torch="cuda")
    assert result.status is Status.SKIP and "no custom node asks for a CUDA or CPU build" in result.reason


def test_judge_requirement_pep440():
    assert pt.judge_requirement(Requirement("torch==2.5.1"), "2.5.1+rocm6.2", "2.5.1+rocm6.2") is None
    assert pt.judge_requirement(Requirement("torch>=2.6"), "2.5.1+rocm6.2", "2.5.1+rocm6.2")[0] == "error"
    assert pt.judge_requirement(Requirement("torch>=2.6.0.dev0"), "2.6.0.dev20241112+rocm6.2", "x") is None
    assert pt.judge_requirement(Requirement("torch"), None, None) is None


# -- pynvml-breaks-rocm-torch ------------------------------------------------------------------------


@pytest.mark.parametrize(("version", "expected"), [
    ("2.3.1+rocm6.0", None), ("2.4.0+rocm6.1", "error"), ("2.4.1+rocm6.1", "error"),
    ("2.4.0.dev20240523+rocm6.1", "error"), ("2.5.0.dev20240801+rocm6.1", "warning"),
    ("2.5.0.dev20240901+rocm6.1", None), ("2.5.0+rocm6.2", None), ("2.5.1+rocm6.2", None),
    ("2.6.0+rocm6.2.4", None), ("2.4.0+rocm6.2.1", None), ("2.4.0+rocm6.2.3", None),
    ("2.4.0+rocm6.2", "warning"), ("2.4.1", "error"), ("not-a-version", "warning"), (None, "warning"),
])
def test_pynvml_verdict(version, expected):
    verdict = pt.pynvml_verdict(version)
    assert (verdict[0] if verdict else None) == expected


def test_pynvml_fires_on_old_rocm_torch_with_crystools(tmp_path):
    amd_machine(tmp_path)
    make_comfyui(tmp_path, COMFY, "rocm-old", packages={"pynvml": "11.5.3", "nvidia-ml-py": "12.560.30"},
                 nodes={"ComfyUI-Crystools": {"requirements.txt": CRYSTOOLS_REQUIREMENTS}})
    result = run(PYNVML, tmp_path)
    assert result.status is Status.FAIL
    (finding,) = result.findings
    assert finding.severity is Severity.ERROR and finding.subject == VENV
    assert "NameError: name 'amdsmi' is not defined" in finding.explanation
    texts = [e.text for e in finding.evidence]
    assert "pynvml 11.5.3 is installed" in texts and "nvidia-ml-py 12.560.30 is installed" in texts
    crystools = [e for e in finding.evidence if "Crystools" in e.text]
    assert crystools and crystools[0].line == 5
    fix = finding.fix
    assert fix.privileged is False and fix.action == ("pip-uninstall-pynvml", VENV)
    assert f"`{VENV}/bin/python -m pip uninstall -y pynvml nvidia-ml-py`" in fix.steps[0]
    assert "--index-url https://download.pytorch.org/whl/rocm6.1" in fix.steps[1]


def test_pynvml_names_installed_requirers_within_a_read_budget(tmp_path, monkeypatch):
    amd_machine(tmp_path)
    comfy = make_comfyui(tmp_path, COMFY, "rocm-old", packages={"nvidia-ml-py": "12.560.30"})
    site = site_of(comfy / "venv")
    dist_info(site, "deepspeed", "0.14.5", ["nvidia-ml-py", "torch"])
    dist_info(site, "gpustat", "1.1.1", ['nvidia-ml-py; extra == "nvidia"'])  # an optional extra: not a requirer
    texts = [e.text for e in run(PYNVML, tmp_path).findings[0].evidence]
    assert "Requires-Dist: nvidia-ml-py (deepspeed 0.14.5 pulls it in)" in texts
    assert not any("gpustat" in t for t in texts)
    monkeypatch.setattr(pt, "REQUIRERS_READ_BUDGET", 0)  # nothing may be read: the finding stands without them
    texts = [e.text for e in run(PYNVML, tmp_path).findings[0].evidence]
    assert not any("pulls it in" in t for t in texts) and "nvidia-ml-py 12.560.30 is installed" in texts


def test_pynvml_harmless_cases(tmp_path):
    amd_machine(tmp_path)
    make_comfyui(tmp_path, COMFY, "rocm", packages={"pynvml": "11.5.3"})  # 2.5.1: fixed
    result = run(PYNVML, tmp_path)
    assert result.status is Status.PASS and "#132990" in result.reason
    other = tmp_path / "o"
    make_comfyui(other, COMFY, "rocm-old", packages={"pynvml": "11.5.3", "amdsmi": "24.6.3"})
    assert "amdsmi Python package is installed" in run(PYNVML, other).reason
    none = tmp_path / "n"
    make_comfyui(none, COMFY, "rocm-old")
    assert run(PYNVML, none).status is Status.PASS


def test_pynvml_may_is_a_warning(tmp_path):
    make_venv(tmp_path, "home/alice/v", "rocm", version="2.4.0+rocm6.2", packages={"nvidia-ml-py": "12.0"})
    finding = run(PYNVML, tmp_path).findings[0]
    assert finding.severity is Severity.WARNING and "may crash" in finding.title


def test_pynvml_skips_without_rocm_torch(tmp_path):
    make_venv(tmp_path, "home/alice/v", "cuda", packages={"pynvml": "11.5.3"})
    assert "no Python environment with a ROCm torch" in run(PYNVML, tmp_path).reason


def test_cuda_wheel_finding_says_why_once_and_punctuates_the_error(tmp_path):
    from tests.support import scenarios as sc

    root = sc.clean_workstation(tmp_path / "root")
    make_comfyui(root, f"home/{sc.USER}/ComfyUI", torch="cuda")
    finding = sc.run_check(root, "torch-wheel-mismatch").findings[0]
    assert "`RuntimeError: Found no NVIDIA driver on your system.` Reinstall" in finding.explanation
    assert ".`." not in finding.explanation
    assert not any(e.text.startswith("decided by") for e in finding.evidence)
    assert any(e.path.endswith("torch/version.py") for e in finding.evidence)


# -- the index and packages each step names: GPU limits, conflicts, companions ------------------------


def two_gpus(root, *packed):
    amd_machine(root, gfx=packed[0])
    for node, value in enumerate(packed[1:], start=2):
        write(root / f"sys/class/kfd/kfd/topology/nodes/{node}/properties", f"gfx_target_version {value}\n")


def test_gpus_without_a_common_index_get_a_finding_with_manual_steps(tmp_path):
    two_gpus(tmp_path, 90006, 110003)  # MI50 (up to rocm6.3) + Radeon 780M (from rocm7.14)
    make_comfyui(tmp_path, COMFY, "cuda")
    result = run(MISMATCH, tmp_path)
    assert result.status is Status.FAIL  # not an engine error
    (finding,) = result.findings
    assert finding.fix.action is None and finding.fix.privileged is False
    assert "gfx906 needs rocm6.3 or older, gfx1103 needs rocm7.14 or newer" in finding.explanation
    assert "no one-click fix" in finding.explanation
    steps = " ".join(finding.fix.steps)
    assert "--index-url https://download.pytorch.org/whl/rocm6.3" in steps
    assert "--index-url https://download.pytorch.org/whl/rocm7.14" in steps
    assert "ROCR_VISIBLE_DEVICES" in steps and "--extra-index-url https" not in steps
    # torchaudio has no rocm7.14 wheel: that command leaves it out, the rocm6.3 one keeps it
    (choice,) = [s for s in finding.fix.steps if s.startswith("Decide")]
    assert "torch torchvision torchaudio --index-url https://download.pytorch.org/whl/rocm6.3" in choice
    assert "torch torchvision --index-url https://download.pytorch.org/whl/rocm7.14" in choice


def test_conflict_in_the_system_python_names_both_indexes(tmp_path):
    import os

    from tests.support.python_envs import add_gpu_process, install_torch

    two_gpus(tmp_path, 90006, 110003)
    write(tmp_path / "usr/bin/python3.11", b"\x7fELF")
    os.symlink("python3.11", tmp_path / "usr/bin/python3")
    install_torch(tmp_path / "usr/lib/python3.11/site-packages", "cpu")
    add_gpu_process(tmp_path, 7200, "/usr/bin/python3.11", ["/usr/bin/python3", "x.py"])
    (finding,) = [f for f in run(MISMATCH, tmp_path).findings if f.subject == "/usr"]
    steps = " ".join(finding.fix.steps)
    assert "system Python" in steps
    assert "whl/rocm6.3 for gfx906" in steps and "whl/rocm7.14 for gfx1103" in steps
    assert finding.fix.action is None


@pytest.mark.parametrize(("companions", "command"), [
    ({}, "install --force-reinstall torch --index-url"),
    ({"torchvision": "0.20.1+cpu"}, "install --force-reinstall torch torchvision --index-url"),
    ({"torchaudio": "2.5.1+cpu"}, "install --force-reinstall torch torchaudio --index-url"),
])
def test_reinstall_names_only_the_companions_the_env_has(tmp_path, companions, command):
    amd_machine(tmp_path)
    make_venv(tmp_path, "home/alice/v", "cpu", companions=False, packages=companions)
    finding = run(MISMATCH, tmp_path).findings[0]
    (step,) = [s for s in finding.fix.steps if "--force-reinstall" in s]
    assert command in step


def test_torchaudio_is_left_out_where_the_index_has_none(tmp_path):
    amd_machine(tmp_path, gfx=110003)  # only rocm7.14 carries gfx1103
    make_venv(tmp_path, "home/alice/v", "cpu")  # with torchvision and torchaudio
    finding = run(MISMATCH, tmp_path).findings[0]
    assert finding.fix.action[2].endswith("/rocm7.14")
    (step,) = [s for s in finding.fix.steps if "--force-reinstall" in s]
    assert "torch torchvision --index-url https://download.pytorch.org/whl/rocm7.14" in step
    assert "torchaudio is left out" in finding.explanation and "pip uninstall -y torchaudio" in finding.explanation


def test_pinned_node_step_uses_the_gpus_index(tmp_path):
    amd_machine(tmp_path, gfx=120001)  # RDNA4: rocm6.4 or newer, env has rocm6.2
    make_comfyui(tmp_path, COMFY, "rocm", nodes={"n": {"requirements.txt": "torch>=2.6\n"}})
    steps = run(PINNED, tmp_path).findings[0].fix.steps
    (newer,) = [s for s in steps if "really needs another torch release" in s]
    assert "--index-url https://download.pytorch.org/whl/rocm6.4" in newer
    assert "'torch==<version>' torchvision torchaudio --index-url" in newer


def test_pinned_node_step_with_conflicting_gpus_names_both(tmp_path):
    two_gpus(tmp_path, 90006, 110003)
    make_comfyui(tmp_path, COMFY, "rocm", nodes={"n": {"requirements.txt": "torch>=2.6\n"}})
    result = run(PINNED, tmp_path)
    assert result.status is Status.FAIL
    (newer,) = [s for s in result.findings[0].fix.steps if "really needs another torch release" in s]
    assert "whl/rocm6.3 for gfx906" in newer and "whl/rocm7.14 for gfx1103" in newer


@pytest.mark.parametrize(("gfx", "version", "index"), [
    (90006, "2.4.1+rocm6.0", "rocm6.1"),  # rocm6.0 has no 2.5; gfx906 stops at rocm6.3: the next one, not rocm7.2
    (110000, "2.4.1+rocm6.0", "rocm6.1"),
    (90006, "2.4.1+rocm6.1", "rocm6.1"),
    (110003, "2.4.1+rocm6.1", "rocm7.14"),  # the GPU's floor
])
def test_pynvml_upgrade_index_respects_the_gpus(tmp_path, gfx, version, index):
    amd_machine(tmp_path, gfx=gfx)
    make_venv(tmp_path, "home/alice/v", "rocm", version=version, packages={"pynvml": "11.5.3"})
    finding = run(PYNVML, tmp_path).findings[0]
    (upgrade,) = [s for s in finding.fix.steps if "--upgrade" in s]
    assert upgrade.count("--index-url") == 1
    assert f"--index-url https://download.pytorch.org/whl/{index}`" in upgrade


def test_pynvml_upgrade_with_conflicting_gpus_keeps_the_uninstall(tmp_path):
    two_gpus(tmp_path, 90006, 110003)
    make_venv(tmp_path, "home/alice/v", "rocm", version="2.4.1+rocm6.1", packages={"pynvml": "11.5.3"})
    result = run(PYNVML, tmp_path)
    assert result.status is Status.FAIL
    finding = result.findings[0]
    assert finding.fix.action == ("pip-uninstall-pynvml", "/home/alice/v")
    assert any("Upgrading torch is no way out here" in s for s in finding.fix.steps)
    assert not any("--upgrade" in s for s in finding.fix.steps)


def test_yaml_steps_name_no_stale_index():
    """The YAML steps are the fallback text: they may name only the default index (or none); the findings carry
    the index torch_index chose."""
    import re

    for check_id in (MISMATCH, PINNED, PYNVML):
        steps = " ".join(load_metadata()[check_id].fix.steps)
        named = set(re.findall(r"whl/(?:nightly/)?(rocm[0-9][0-9.]*[0-9])", steps))
        assert named <= {torch_index.DEFAULT_INDEX}, (check_id, named)


def test_every_mismatch_finding_has_its_own_steps(tmp_path):
    """So the engine never falls back to the YAML steps for them."""
    two_gpus(tmp_path, 90006, 110003)
    make_venv(tmp_path, "home/alice/a", "cpu")
    other = tmp_path / "b"
    amd_machine(other)
    make_venv(other, "home/alice/b", "cuda")
    for root in (tmp_path, other):
        for finding in run(MISMATCH, root).findings:
            assert finding.fix.steps and not any("whl/<index>" in s for s in finding.fix.steps)


def test_pip_commands_quote_an_interpreter_path_with_spaces():
    import shlex

    from rocmdesk.diagnosis.checks.python_torch import pip_command, reinstall_command
    from rocmdesk.diagnosis.python_envs import PythonEnv

    env = PythonEnv("/home/ann/AI tools/venv", "venv", interpreter="/home/ann/AI tools/venv/bin/python3")
    words = shlex.split(pip_command(env, "uninstall -y pynvml"))
    assert words == ["/home/ann/AI tools/venv/bin/python3", "-m", "pip", "uninstall", "-y", "pynvml"]
    assert shlex.split(reinstall_command(env, "rocm7.2"))[0] == "/home/ann/AI tools/venv/bin/python3"
