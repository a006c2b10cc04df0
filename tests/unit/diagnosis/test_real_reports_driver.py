"""The kernel driver sets the newest PyTorch ROCm index (issue 12: "no harmful or impossible fix"), and an old GCN5 card
with no ROCm installed is advice, not a warning. Real reports rebuilt as host roots (tests/support/reports.py).

PyTorch's ROCm wheels bundle their ROCm user space but use the host's amdgpu/KFD; AMD supports a kernel driver with
user space +/- 2 releases from it (user/kernel-space support matrix; rocmdesk.diagnosis.kernel_driver). So the index a
reinstall uses is capped by a loaded amdgpu-dkms, not by /opt/rocm (which the wheel does not use).
"""

from __future__ import annotations

import pytest

from rocmdesk.diagnosis import kernel_driver as kd
from rocmdesk.diagnosis import torch_index as ti
from rocmdesk.diagnosis.metadata import load_metadata
from rocmdesk.diagnosis.model import Severity, Status
from tests.support import scenarios as sc
from tests.support.reports import Gpu, diagnose, evidence_texts, only, reporter_machine, steps_of
from tests.support.sysfs_tree import GpuSpec, build_root
from tests.unit.diagnosis.test_real_reports_gpu import comfy_env

WHEEL = "torch-wheel-mismatch"
UNSUPPORTED = "gpu-not-supported-by-rocm"
SUGGESTED = "hsa-override-suggested"


def load_dkms(root, version: str) -> None:
    """amdgpu-dkms ``version`` is the loaded amdgpu (its module writes /sys/module/amdgpu/version)."""
    sc.write(root, "/sys/module/amdgpu/version", version + "\n")


# -- kernel_driver: the table and the +/- 2 window ----------------------------------------------------------------


@pytest.mark.parametrize(("text", "rocm", "newest"), [
    ("6.2.4", (5, 7), (6, 1)),  # KMD 5.7.x: tested with user space 5.5.x-6.1.x (docs-6.3.0 matrix)
    ("6.3.6\n", (6, 0), (6, 2)),  # KMD 6.0.x: 5.6.x-6.2.x
    ("6.7.0", (6, 1), (6, 3)),  # KMD 6.1.x: 5.7.x-6.3.x
    ("6.8.5", (6, 2), (6, 4)),
    ("6.12.12", (6, 4), (7, 1)),
    ("6.14.14", (7, 0), (7, 2)),
])
def test_dkms_version_gives_rocm_and_newest_user_space(text, rocm, newest):
    limit = kd.driver_limit(text)
    assert limit is not None and (limit.rocm, limit.newest) == (rocm, newest)


@pytest.mark.parametrize("text", [None, "", "garbage", "6", "6.16.6", "30.10", "6.5.1"])
def test_no_limit_without_a_known_or_older_dkms(text):
    assert kd.driver_limit(text) is None  # in-tree (no file), unreadable, newer than the table, between rows


def test_dkms_older_than_the_table_supports_no_index():
    limit = kd.driver_limit("5.18.13")
    assert limit is not None and limit.newest is None and limit.rocm_text == "before 5.7"
    with pytest.raises(ti.DriverTooOld) as raised:
        ti.choose_index(None, ["gfx1030"], driver=limit)
    assert raised.value.need is None


def test_choose_index_is_capped_by_the_driver():
    limit = kd.driver_limit("6.2.4")
    index, why = ti.choose_index(None, ["gfx1030"], driver=limit)
    assert index == "rocm6.1" and "amdgpu-dkms 6.2.4 of ROCm 5.7" in why and "up to 6.1" in why
    assert ti.choose_index("6.0", ["gfx1030"], driver=limit)[0] == "rocm6.0"  # already inside: kept
    assert ti.choose_index(None, ["gfx1030"], driver=kd.driver_limit("6.14.14"))[0] == "rocm7.2"  # no cut
    # the GPU needs rocm6.2.4 or newer (gfx1101): no index is both new enough for it and old enough for the driver
    with pytest.raises(ti.DriverTooOld) as raised:
        ti.choose_index(None, ["gfx1101"], driver=limit)
    assert raised.value.need == "rocm6.2.4" and raised.value.what == ("gfx1101",)
    # a fix that needs a newer index than the driver allows
    with pytest.raises(ti.DriverTooOld):
        ti.choose_index(None, ["gfx1030"], minimum=("rocm6.4", "x"), driver=limit)
    # Python 3.8 has wheels on rocm6.0/6.1 only: the nearest allowed one under the cap
    assert ti.choose_index(None, ["gfx1030"], python=(3, 8), driver=limit)[0] == "rocm6.1"
    assert ti.choose_index(None, ["gfx1030"], python=(3, 14), driver=kd.driver_limit("6.8.5"))[0] == "rocm6.4"


# -- torch-wheel-mismatch on machines with an old ROCm ---------------------------------------------------------


def wheel_finding(root, expected=frozenset({WHEEL, SUGGESTED})):
    """The torch-wheel-mismatch finding, with nothing but ``expected`` raised (the RX 6750 XT's override note)."""
    findings = diagnose(root)
    assert set(findings) == set(expected), {k: [f.title for f in v] for k, v in findings.items()}
    return findings[WHEEL][0]


def comfyui_2058(tmp_path):
    """Comfy-Org/ComfyUI#2058 (Ubuntu 22.04, RX 6750 XT, a custom node left PyPI's CUDA torch: "Found no NVIDIA driver";
    solved by reinstalling torch, torchvision, torchaudio from the ROCm index), with ROCm 5.7.1 under /opt as that test
    assumes (tests/unit/diagnosis/test_real_reports_gpu.py)."""
    root = reporter_machine(tmp_path / "r", [Gpu(100301, 0x73DF)], rocm="5.7.1")
    comfy_env(root, "cuda-untagged", "2.1.1", py="3.10")
    return root


def test_comfyui_2058_with_rocm_5_7_amdgpu_dkms_gets_the_index_its_driver_supports(tmp_path):
    """The same machine when ROCm 5.7.1 came with its amdgpu-dkms (6.2.4; amdgpu-install installs it by default on
    Ubuntu): the reinstall goes to rocm6.1, the newest user space AMD tests with KMD 5.7.x, not to rocm7.2."""
    root = comfyui_2058(tmp_path)
    load_dkms(root, "6.2.4")
    findings = diagnose(root)
    assert set(findings) == {WHEEL, SUGGESTED}, {k: [f.title for f in v] for k, v in findings.items()}
    finding = findings[WHEEL][0]
    assert finding.severity is Severity.ERROR
    assert ("/sys/module/amdgpu/version: amdgpu-dkms 6.2.4 is loaded (ROCm 5.7; AMD supports user space up to ROCm "
            "6.1 on it)") in evidence_texts(finding)
    steps = steps_of(finding)
    assert ("--force-reinstall torch torchvision torchaudio --index-url https://download.pytorch.org/whl/rocm6.1"
            in steps)
    assert "rocm7.2" not in steps
    assert "support matrix" in finding.explanation
    assert finding.fix.action is not None and finding.fix.action[-1].endswith("/whl/rocm6.1")  # safe: inside the window


def test_comfyui_2058_with_the_kernel_amdgpu_keeps_the_default_and_says_opt_rocm_is_not_used(tmp_path):
    """No amdgpu-dkms (no /sys/module/amdgpu/version): the wheel brings its ROCm, /opt/rocm 5.7.1 does not matter (AMD:
    "Since the wheels already contain the ROCm 6.0.0, you don't need to install ROCm", pytorch/pytorch#118457)."""
    root = comfyui_2058(tmp_path)
    finding = wheel_finding(root)
    assert "--index-url https://download.pytorch.org/whl/rocm7.2" in steps_of(finding)
    assert "the ROCm 5.7.1-1 installed under /opt is not used by it and need not match" in finding.explanation
    assert not any("amdgpu-dkms" in t for t in evidence_texts(finding))


def test_rx7800xt_on_rocm_5_7_dkms_updates_the_driver_before_any_wheel(tmp_path):
    """gfx1101 has kernels only in the rocm6.2.4 and newer wheels, which AMD does not support on KMD 5.7.x: no one-click
    reinstall (it would put ROCm 6.2+ user space on a 5.7 driver); the driver goes first, then the reinstall."""
    root = reporter_machine(tmp_path / "r", [Gpu(110001, 0x747E)], rocm="5.7.1")
    comfy_env(root, "cuda-untagged", "2.1.1", py="3.10")
    load_dkms(root, "6.2.4")
    finding = wheel_finding(root, {WHEEL, UNSUPPORTED})  # gfx1101 joined ROCm's list in 6.4.1
    assert finding.fix.action is None
    assert "no one-click reinstall" in finding.explanation and "gfx1101 needs rocm6.2.4 or newer" in finding.explanation
    steps = finding.fix.steps
    assert steps[0].startswith("Update the kernel driver first: amdgpu-dkms 6.2.4 (ROCm 5.7)")
    # the driver of the release the reinstall below uses (rocm7.2), so the two steps agree
    assert "ROCm 7.2 or newer" in steps[0] and "`sudo amdgpu-install --usecase=dkms`" in steps[0]
    assert finding.explanation.count("amdgpu-dkms 6.2.4") == 1
    assert "then reboot" in steps[0]
    assert "--index-url https://download.pytorch.org/whl/rocm7.2" in steps[1]


def test_dkms_older_than_rocm_5_7_gets_no_reinstall(tmp_path):
    root = comfyui_2058(tmp_path)
    load_dkms(root, "5.18.13")
    finding = wheel_finding(root)
    assert finding.fix.action is None
    assert "supports user space up to no release rocmdesk installs wheels for" in finding.explanation
    assert finding.fix.steps[0].startswith("Update the kernel driver first: amdgpu-dkms 5.18.13 (ROCm before 5.7)")
    assert "ROCm 7.2 or newer" in finding.fix.steps[0]  # the release of the reinstall step that follows


def test_bad_version_file_is_no_limit(tmp_path):
    root = comfyui_2058(tmp_path)
    sc.write(root, "/sys/module/amdgpu/version", "\x00\xff not a version\n")
    finding = wheel_finding(root)
    assert "/whl/rocm7.2" in steps_of(finding) and finding.fix.action is not None


# -- gpu-not-supported-by-rocm on a Vega 56 (gfx900) --------------------------------------------------------------


def vega56(tmp_path, rocm):
    """The real LACT Vega 56 dump (tests/data/lact-sysfs/vega56) as the workstation's GPU."""
    root = reporter_machine(tmp_path / "r", [Gpu(90000, 0x687F, dump="vega56")], rocm=rocm)
    return root


def test_vega56_lact_dump_alone_is_gfx900(tmp_path):
    build_root(tmp_path / "t", [GpuSpec("vega56", card=0)])
    props = (tmp_path / "t/sys/class/kfd/kfd/topology/nodes/1/properties").read_text()
    assert "gfx_target_version 90000" in props


def test_vega56_without_rocm_is_advice_not_a_warning(tmp_path):
    """A Vega 56/64 with no ROCm installed: nothing is broken. What works (sources): PyTorch's wheels up to rocm6.3
    bundle ROCm libraries with gfx900 kernels (torch 2.7.0+rocm6.3 runs rocBLAS, rocRAND and MIOpen on a gfx900:
    daimonionnn/amd-vega-rocm-vulkan-llm-toolkit#1); the 2.12+rocm7.2 wheels abort on a Vega 56 (pytorch/pytorch#179865)
    where AMD points to TheRock's gfx900 nightly wheels."""
    root = vega56(tmp_path, None)
    finding = only(diagnose(root), UNSUPPORTED)
    assert finding.severity is Severity.INFO
    assert finding.title == "gfx900 is off ROCm's support list; PyTorch's rocm6.3 wheels still run it"
    assert "No ROCm is installed, so nothing on this machine is broken by it" in finding.explanation
    assert evidence_texts(finding) == ["/sys/class/kfd/kfd/topology/nodes/1/properties: gfx_target_version 90000 "
                                       "(gfx900)"]
    steps = steps_of(finding)
    assert "`python -m pip install torch torchvision --index-url https://download.pytorch.org/whl/rocm6.3`" in steps
    assert "newer than 6.3" in steps
    assert "https://rocm.nightlies.amd.com/v2/gfx900/" in steps
    assert "HSA_OVERRIDE_GFX_VERSION" not in steps  # no override is known to run gfx900


def test_vega56_with_rocm_6_2_is_advice_too(tmp_path):
    root = vega56(tmp_path, "6.2.4")
    finding = only(diagnose(root), UNSUPPORTED)
    assert finding.severity is Severity.INFO
    assert "The installed ROCm 6.2.4-1 still has gfx900 code in its libraries, unofficially" in finding.explanation
    assert "/opt/rocm/.info/version: ROCm 6.2.4-1" in evidence_texts(finding)


def test_vega56_with_rocm_6_4_1_stays_a_warning(tmp_path):
    """ROCm 6.4's libraries lack gfx900/gfx906 kernels (ROCm/legacy-rocm-build#4625; pytorch/pytorch#179865)."""
    root = vega56(tmp_path, "6.4.1")
    finding = only(diagnose(root), UNSUPPORTED)
    assert finding.severity is Severity.WARNING and finding.title == "ROCm does not support gfx900"


def test_radeon_vii_without_rocm_is_advice_and_with_rocm_6_4_a_warning(tmp_path):
    root = reporter_machine(tmp_path / "a", [Gpu(90006, 0x66AF)], rocm=None)
    finding = only(diagnose(root), UNSUPPORTED)
    assert finding.severity is Severity.INFO and "rocm6.3" in finding.title
    assert "rocm.nightlies" not in steps_of(finding)  # TheRock's index is named for gfx900 only
    root = reporter_machine(tmp_path / "b", [Gpu(90006, 0x66AF)], rocm="6.4.0")
    assert sc.run_check(root, UNSUPPORTED).status is Status.FAIL
    finding = only(diagnose(root), UNSUPPORTED)
    assert finding.severity is Severity.WARNING


def test_metadata_lists_the_reports_tested_here():
    listed = " ".join(load_metadata()[UNSUPPORTED].reports)
    assert "daimonionnn/amd-vega-rocm-vulkan-llm-toolkit#1" in listed and "pytorch/pytorch#179865" in listed
    assert "pytorch/pytorch#118457" in " ".join(load_metadata()[WHEEL].sources)


# -- the other places that name an index: torch-no-code-for-gpu, pynvml's upgrade step ------------------------------

NOCODE = "torch-no-code-for-gpu"


def vega56_rocm72_wheel(tmp_path):
    """pytorch/pytorch#179865 as rebuilt in test_real_reports_gpu: Vega 56, torch 2.12.0.dev20260408+rocm7.2 whose
    bundled rocBLAS has no gfx900 Tensile library, ROCm 6.4.1 under /opt."""
    from tests.support.rocm_libs import tensile_folder

    root = reporter_machine(tmp_path / "r", [Gpu(90000, 0x687F)], rocm="6.4.1")
    venv = comfy_env(root, "rocm", "2.12.0.dev20260408+rocm7.2", py="3.12")
    tensile_folder(venv / "lib/python3.12/site-packages/torch/lib/rocblas/library",
                   ["gfx908", "gfx1030", "gfx90a", "gfx1100", "gfx1201", "gfx1101", "gfx1151", "gfx942", "gfx950",
                    "gfx1200", "gfx1150", "gfx1102"])
    return root


def test_no_code_reinstall_is_capped_by_an_old_dkms(tmp_path):
    """The same machine with ROCm 5.7's amdgpu-dkms loaded: gfx900's wheels end at rocm6.3, the driver supports up
    to 6.1: the one-click reinstall goes to rocm6.1 (which has gfx900 kernels), with the driver as evidence."""
    root = vega56_rocm72_wheel(tmp_path)
    load_dkms(root, "6.2.4")
    finding = sc.run_check(root, NOCODE).findings[0]
    assert "--index-url https://download.pytorch.org/whl/rocm6.1" in steps_of(finding)
    assert finding.fix.action is not None and finding.fix.action[-1].endswith("/whl/rocm6.1")
    assert any(t.startswith("/sys/module/amdgpu/version: amdgpu-dkms 6.2.4 is loaded") for t in evidence_texts(finding))
    load_dkms(root, "6.7.0")  # ROCm 6.1's driver: up to 6.3, gfx900's own ceiling
    finding = sc.run_check(root, NOCODE).findings[0]
    assert "/whl/rocm6.3" in steps_of(finding)


def test_no_code_for_gfx1101_on_rocm_5_7_dkms_updates_the_driver_first(tmp_path):
    """RX 7800 XT (gfx1101) with torch 2.5.1+rocm6.2, whose wheels lack gfx1101 (added for rocm6.2.4: astral-sh/uv
    #14086), on amdgpu-dkms 6.2.4: rocm6.2.4 and newer are past what AMD supports on KMD 5.7.x, so no one-click."""
    from tests.support.rocm_libs import tensile_folder

    root = reporter_machine(tmp_path / "r", [Gpu(110001, 0x747E)], rocm="5.7.1")
    venv = comfy_env(root, "rocm", "2.5.1+rocm6.2", py="3.11")
    tensile_folder(venv / "lib/python3.11/site-packages/torch/lib/rocblas/library", ["gfx1030", "gfx1100"])
    load_dkms(root, "6.2.4")
    finding = sc.run_check(root, NOCODE).findings[0]
    assert finding.fix is None or finding.fix.action is None
    assert "need a newer kernel driver" in finding.explanation
    steps = steps_of(finding)
    assert "Update the kernel driver first: amdgpu-dkms 6.2.4 (ROCm 5.7)" in steps
    assert "--index-url https://download.pytorch.org/whl/rocm6.2.4" in steps


def test_pynvml_upgrade_step_respects_the_driver(tmp_path):
    from tests.support.python_envs import make_comfyui

    root = reporter_machine(tmp_path / "r", [Gpu(100300, 0x73BF)], rocm="5.7.1")
    import shutil
    shutil.rmtree(root / "home/alice/ComfyUI")
    make_comfyui(root, "home/alice/ComfyUI", "rocm-old", packages={"pynvml": "11.5.3"})
    load_dkms(root, "6.2.4")
    finding = sc.run_check(root, "pynvml-breaks-rocm-torch").findings[0]
    assert "--index-url https://download.pytorch.org/whl/rocm6.1" in steps_of(finding)  # the fix's floor, in the window
    load_dkms(root, "5.18.13")
    finding = sc.run_check(root, "pynvml-breaks-rocm-torch").findings[0]
    assert "Upgrading torch is no way out until the kernel driver is updated" in steps_of(finding)
    assert "download.pytorch.org" not in steps_of(finding)


def test_old_dkms_and_a_python_no_index_has_names_no_index(tmp_path):
    """Issue 12's Python 3.7 environment on an amdgpu-dkms older than ROCm 5.7's: the driver step names no release
    (nothing rocmdesk installs fits), and no reinstall command follows (no index has a 3.7 wheel)."""
    root = sc.clean_workstation(tmp_path / "r")
    comfy_env(root, "cuda", "1.13.1+cu117", py="3.7")
    load_dkms(root, "5.18.13")
    finding = sc.run_check(root, WHEEL).findings[0]
    assert finding.fix.action is None
    assert "a current ROCm release" in finding.fix.steps[0]
    assert "--force-reinstall" not in steps_of(finding)
