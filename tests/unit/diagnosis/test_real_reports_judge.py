"""Real public reports that issue 12 does not list, rebuilt the way tests/unit/diagnosis/test_real_reports_*.py rebuild
theirs, as the outside judge of issue 12's first "Done when" item.

None of these reports was in a check's ``reports:`` or in another test when this file was written; each was picked
from a public thread where the reporter pasted enough to rebuild the machine. Each case starts from the clean Ubuntu
workstation (tests/support/reports.py) and puts in what was pasted; the docstring names the report, what was pasted,
what had to be assumed, and what solved it in the thread. Each runs the whole diagnosis and asserts the finding, its
severity, the fix, and that nothing else fires (no false alarm).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rocmdesk.diagnosis.metadata import load_metadata
from rocmdesk.diagnosis.model import Severity
from tests.support import scenarios as sc
from tests.support.python_envs import make_venv
from tests.support.reports import Gpu, diagnose, evidence_texts, only, reporter_machine, steps_of, without_ollama
from tests.support.rocm_libs import tensile_folder

NOT_READ = "env-not-read-by-gpu-program"
GROUP = "user-not-in-render-group"
JAMMY = ('NAME="Ubuntu"\nVERSION="22.04.4 LTS (Jammy Jellyfish)"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID="22.04"\n'
         'VERSION_CODENAME=jammy\nUBUNTU_CODENAME=jammy\n')
BUSTER = ('PRETTY_NAME="Debian GNU/Linux 10 (buster)"\nNAME="Debian GNU/Linux"\nVERSION_ID="10"\nID=debian\n'
          'VERSION_CODENAME=buster\n')


def titles(findings: dict) -> dict:
    return {k: [f.title for f in v] for k, v in findings.items()}


def in_service(root: Path, pid: int = 2345, unit: str = "ollama.service") -> None:
    """The ollama process runs in the unit's cgroup (the install script's ollama.service started it)."""
    sc.write(root, f"/proc/{pid}/cgroup", f"0::/system.slice/{unit}\n")


# -- variables set where ollama never reads them ---------------------------------------------------------------


def test_ollama_6152_rx_6700m_override_in_bashrc_never_reaches_the_service(tmp_path):
    """ollama/ollama#6152: Ubuntu 22.04 laptop (MSI Delta 15), RX 6700M 10 GB that "runs fine" for stable diffusion;
    ollama uses only the CPU. Pasted: "AMD ROCm setup in .bashrc: export HSA_OVERRIDE_GFX_VERSION=10.3.0, export
    HIP_VISIBLE_DEVICES=0", and `journalctl -u ollama` (ollama runs as the install script's service). The reporter
    concluded the override "doesn't help"; ollama's docs (docs/faq.md "Setting environment variables on Linux") say
    a variable for the server goes into the service with `systemctl edit ollama.service`, which is what the same
    fault's thread ollama/ollama#8679 confirmed worked. Assumed: PCI id 1002:73DF (Navi 22, gfx1031), ROCm 6.1.3
    under /opt, the ollama process in the unit's cgroup, the rest the workstation's.
    Expected: one finding per variable, "set in ~/.bashrc, but ollama.service does not read it", with the drop-in
    that carries the same value; no finding that ROCm does not support gfx1031 (the override covers it)."""
    root = reporter_machine(tmp_path / "r", [Gpu(100301, 0x73DF)], rocm="6.1.3")
    sc.write(root, "/etc/os-release", JAMMY)
    sc.append(root, "/home/alice/.bashrc", "export HSA_OVERRIDE_GFX_VERSION=10.3.0\nexport HIP_VISIBLE_DEVICES=0\n")
    in_service(root)
    findings = diagnose(root)
    assert set(findings) == {NOT_READ}, titles(findings)
    by_title = {f.title: f for f in findings[NOT_READ]}
    assert set(by_title) == {"HSA_OVERRIDE_GFX_VERSION is set in ~/.bashrc, but ollama.service does not read it",
                             "HIP_VISIBLE_DEVICES is set in ~/.bashrc, but ollama.service does not read it"}
    override = by_title["HSA_OVERRIDE_GFX_VERSION is set in ~/.bashrc, but ollama.service does not read it"]
    assert override.severity is Severity.ERROR
    assert any(t.startswith("/home/alice/.bashrc:") and t.endswith("HSA_OVERRIDE_GFX_VERSION=10.3.0")
               for t in evidence_texts(override))
    steps = steps_of(override)
    assert "sudo systemctl edit ollama.service" in steps and 'Environment="HSA_OVERRIDE_GFX_VERSION=10.3.0"' in steps
    assert "sudo systemctl restart ollama.service" in steps


def test_ollama_8772_rx_6750_unit_edited_but_the_running_service_is_the_old_one(tmp_path):
    """ollama/ollama#8772 ("ollama run on AMD 6750 GPU. (solved)"): the reporter added
    Environment="HSA_OVERRIDE_GFX_VERSION=10.3.0" to ollama.service and restarted it, but the log still says
    "amdgpu is not supported ... gpu_type=gfx1031" and "no compatible amdgpu devices detected": the running server
    never got the variable (had it, ollama logs "skipping rocm gfx compatibility check"). systemd reads an edited
    unit file only after `systemctl daemon-reload` (systemctl(1), daemon-reload), so the restart reused the old
    unit. Assumed: the line in /etc/systemd/system/ollama.service itself, the running process without it (what the
    log shows), PCI id 1002:73DF, ROCm 6.2.4. Expected: the variable is in the unit but not in the running service,
    fix: daemon-reload then restart."""
    root = reporter_machine(tmp_path / "r", [Gpu(100301, 0x73DF)])
    sc.unit_environment(root, "HSA_OVERRIDE_GFX_VERSION", "10.3.0")
    in_service(root)
    finding = only(diagnose(root), NOT_READ)
    assert finding.severity is Severity.ERROR
    assert finding.title == ("HSA_OVERRIDE_GFX_VERSION was set for ollama.service after it started: the running "
                             "service does not have it")
    ev = evidence_texts(finding)
    assert any(t.startswith("/etc/systemd/system/ollama.service:") and "HSA_OVERRIDE_GFX_VERSION=10.3.0" in t
               for t in ev)
    assert "/proc/2345/environ: the running ollama.service process 2345 has no HSA_OVERRIDE_GFX_VERSION" in ev
    assert "daemon-reload" in steps_of(finding) and "sudo systemctl restart ollama.service" in steps_of(finding)


# -- permissions -------------------------------------------------------------------------------------------------


def test_rocm_documentation_39_kfd_is_render_and_the_user_is_only_in_video(tmp_path):
    """RadeonOpenCompute/ROCm_Documentation#39: Debian buster (testing), kernel 4.19.0-5-amd64, ROCm from AMD's apt
    repository with rock-dkms; /dev/kfd ended up owned by group `render` (systemd/udev 241), the guide only added the
    user to `video`, and rocminfo failed as the user but worked as root. Solved by the reporter: the user in the
    render group (or a udev rule). Assumed: a Vega 64 (1002:687F, gfx900), the user alice in video only (render's
    member list without alice, the session's groups without 992), no ollama service, ROCm 2.5 under /opt (older than
    rocmdesk's support table, so that check skips), the workstation's in-tree driver in place of rock-dkms.
    Expected: the group finding as an error, with `usermod -a -G render` and a new login."""
    root = reporter_machine(tmp_path / "r", [Gpu(90000, 0x687F)], rocm="2.5.0")
    sc.write(root, "/etc/os-release", BUSTER)
    sc.remove_user_from_group(root, "render")
    sc.session_groups(root, [4, 24, 27, 30, sc.VIDEO_GID, 46, 100, sc.UID])
    without_ollama(root)
    finding = only(diagnose(root), GROUP)
    assert finding.severity is Severity.ERROR
    ev = evidence_texts(finding)
    assert "/dev/kfd: crw-rw---- owner uid 0, group render (gid 992)" in ev
    steps = steps_of(finding)
    assert "sudo usermod -a -G render" in steps and "Log out and log back in" in steps
    assert finding.fix.action is not None and "render" in finding.fix.action[1]


# -- PyTorch builds that cannot use the GPU ---------------------------------------------------------------------

WHEEL = "torch-wheel-mismatch"
NOCODE = "torch-no-code-for-gpu"
UNSUPPORTED = "gpu-not-supported-by-rocm"
LAUNCHER = "launcher-reinstalls-torch"
# PYTORCH_ROCM_ARCH of the rocm5.x manywheel builds (pytorch/builder manywheel/build_rocm.sh of 2022-2023): the
# bundled rocBLAS carries Tensile libraries for these only; pytorch/pytorch#96964's reporter found no gfx1100 one
ROCM5_WHEEL_TARGETS = ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx1030"]


def webui_env(root: Path, torch: str, version: str, py: str = "3.10",
              rel: str = "home/alice/stable-diffusion-webui/venv", targets: list[str] | None = None,
              conda: bool = False) -> Path:
    """The reporter's Python environment in place of the workstation's ComfyUI (and no ollama service)."""
    shutil.rmtree(root / "home/alice/ComfyUI")
    without_ollama(root)
    env = make_venv(root, rel, torch, py=py, version=version, conda=conda)
    if targets is not None:
        tensile_folder(env / f"lib/python{py}/site-packages/torch/lib/rocblas/library", targets)
    return env


def test_a1111_10358_rx_570_cuda_torch_gets_no_reinstall_that_cannot_help(tmp_path):
    """AUTOMATIC1111/stable-diffusion-webui#10358: Ubuntu 22.04, i5-10500 + RX 570 8 GB (the title says RX 580
    2048SP), launched with TORCH_COMMAND='pip install torch torchvision --extra-index-url
    https://download.pytorch.org/whl/rocm5.1.1' python launch.py --no-half; "Torch is not able to use GPU"; rocminfo
    sees the GPU. With --extra-index-url pip takes PyPI's higher-versioned CUDA torch (comfy-cli PR #379), in May 2023
    torch 2.0.1. What works (AMD in ROCm/legacy-rocm-build#1471: gfx8 is no longer supported; Firstbober/
    rocm-pytorch-gfx803-docker#5): no official ROCm wheel has gfx803 code, only community gfx803 builds. rocmdesk used
    to offer a one-click reinstall from whl/rocm7.2, which swaps "no NVIDIA driver" for "hipErrorNoBinaryForGpu":
    an impossible fix, now gone. Assumed: PCI id 1002:67DF (Polaris 10, gfx803), torch 2.0.1 from PyPI with its
    nvidia-* requirements in the webui's venv on Python 3.10, no ROCm under /opt (the thread shows rocminfo but not
    which release), no ollama."""
    root = reporter_machine(tmp_path / "r", [Gpu(80003, 0x67DF)], rocm=None)
    sc.write(root, "/etc/os-release", JAMMY)
    webui_env(root, "cuda-untagged", "2.0.1")
    findings = diagnose(root)
    assert set(findings) == {WHEEL, UNSUPPORTED}, titles(findings)
    wheel = findings[WHEEL][0]
    assert wheel.severity is Severity.ERROR and wheel.title == "PyTorch is a CUDA build, not a ROCm build"
    assert wheel.fix.action is None  # no one-click reinstall from an index without gfx803 code
    steps = steps_of(wheel)
    assert "--index-url https://download.pytorch.org/whl/rocm" not in steps
    assert "What works on gfx803" in steps and "community gfx803 builds" in steps
    assert "does not help this GPU" in steps
    unsupported = findings[UNSUPPORTED][0]
    assert unsupported.severity is Severity.WARNING and unsupported.title == "ROCm does not support gfx803"


def test_a1111_10358_the_rocm_5_1_1_wheel_it_meant_has_no_gfx803_code_either(tmp_path):
    """AUTOMATIC1111/stable-diffusion-webui#10358 had pip honoured the ROCm index (what the reporter meant): torch
    1.12.1+rocm5.1.1, whose bundled rocBLAS has no gfx803 library. Expected: "no code for gfx803" with what works
    and no reinstall (every index lacks it). Assumed as above, the wheel's targets ROCM5_WHEEL_TARGETS."""
    root = reporter_machine(tmp_path / "r", [Gpu(80003, 0x67DF)], rocm=None)
    sc.write(root, "/etc/os-release", JAMMY)
    webui_env(root, "rocm", "1.12.1+rocm5.1.1", targets=ROCM5_WHEEL_TARGETS)
    findings = diagnose(root)
    assert set(findings) == {NOCODE, UNSUPPORTED}, titles(findings)
    nocode = findings[NOCODE][0]
    assert nocode.severity is Severity.ERROR and nocode.title == "The installed PyTorch has no code for gfx803"
    assert nocode.fix is None or nocode.fix.action is None
    every_step = "\n".join(steps_of(f) for fs in findings.values() for f in fs if f.fix)
    assert "--index-url https://download.pytorch.org/whl/rocm" not in every_step


def test_a_gfx803_beside_a_gpu_the_wheels_serve_keeps_the_reinstall(tmp_path):
    """The no-reinstall rule is for machines where no GPU can get code from a PyTorch ROCm wheel: with an RX 7900 XTX
    beside the RX 570, the reinstall serves the 7900 XTX and stays (one-click)."""
    root = reporter_machine(tmp_path / "r", [Gpu(110000, 0x744C), Gpu(80003, 0x67DF, pci="0000:0a:00.0")], rocm=None)
    webui_env(root, "cuda-untagged", "2.0.1")
    wheel = diagnose(root)[WHEEL][0]
    assert wheel.fix.action is not None and "--index-url https://download.pytorch.org/whl/rocm" in steps_of(wheel)


def test_a1111_7459_rx_7900_xtx_rocm_5_2_wheel_has_no_gfx1100(tmp_path):
    """AUTOMATIC1111/stable-diffusion-webui#7459: fresh Ubuntu 22.04.1, RX 7900 XTX, webui-user.sh with
    TORCH_COMMAND="pip install torch torchvision --extra-index-url https://download.pytorch.org/whl/rocm5.2"; the
    installer "successfully installs ROCm torch" (1.13.1+rocm5.2 outranks PyPI's 1.13.1 by its local tag), then
    "AssertionError: Torch is not able to use GPU"; adding the user to render and video did not help. The rocm5.2
    wheels have no gfx1100 code (AMD in pytorch/pytorch#96964: Navi31 not yet supported by that ROCm); PyTorch's
    wheels carry gfx1100 from ROCm 5.5 on, and ComfyUI's README installs from whl/rocm7.2. Assumed: PCI id 1002:744C,
    the venv on Python 3.10, the wheel's targets ROCM5_WHEEL_TARGETS, no ROCm under /opt, no ollama.
    Expected: "no code for gfx1100", reinstall from an index with gfx1100; no group finding (the user is in both)."""
    root = reporter_machine(tmp_path / "r", [Gpu(110000, 0x744C)], rocm=None)
    sc.write(root, "/etc/os-release", JAMMY)
    webui_env(root, "rocm", "1.13.1+rocm5.2", targets=ROCM5_WHEEL_TARGETS)
    finding = only(diagnose(root), NOCODE)
    assert finding.severity is Severity.ERROR and finding.title == "The installed PyTorch has no code for gfx1100"
    assert any("rocBLAS Tensile library has code for gfx1030, gfx900, gfx906, gfx908, gfx90a" in t
               for t in evidence_texts(finding))
    assert "--force-reinstall torch torchvision torchaudio --index-url https://download.pytorch.org/whl/rocm7.2" \
        in steps_of(finding)
    assert finding.fix.action == ("pip-reinstall-rocm-torch", "/home/alice/stable-diffusion-webui/venv",
                                  "https://download.pytorch.org/whl/rocm7.2")


def test_a1111_7459_webui_user_sh_is_pinned_to_an_index_with_gfx1100_not_to_rocm5_2(tmp_path):
    """AUTOMATIC1111/stable-diffusion-webui#7459 with the reporter's webui-user.sh as pasted (COMMANDLINE_ARGS
    "--precision full --no-half", TORCH_COMMAND "pip install torch torchvision --extra-index-url
    https://download.pytorch.org/whl/rocm5.2"). rocmdesk used to tell the user to pin TORCH_COMMAND to
    `--index-url .../rocm5.2` (the installed wheel's index) and run `--reinstall-torch`: that reinstalls the wheel
    without gfx1100 code, undoing the torch-no-code-for-gpu fix. Expected: the pin names the same index as that fix."""
    root = reporter_machine(tmp_path / "r", [Gpu(110000, 0x744C)], rocm=None)
    sc.write(root, "/etc/os-release", JAMMY)
    webui_env(root, "rocm", "1.13.1+rocm5.2", targets=ROCM5_WHEEL_TARGETS)
    sc.write(root, "/home/alice/stable-diffusion-webui/webui.sh", "#!/usr/bin/env bash\n")
    sc.write(root, "/home/alice/stable-diffusion-webui/launch.py", "from modules import launch_utils\n")
    sc.write(root, "/home/alice/stable-diffusion-webui/webui-user.sh",
             '#!/bin/bash\nexport COMMANDLINE_ARGS="--precision full --no-half"\n'
             'export TORCH_COMMAND="pip install torch torchvision --extra-index-url '
             'https://download.pytorch.org/whl/rocm5.2"\n')
    findings = diagnose(root)
    assert set(findings) == {NOCODE, LAUNCHER}, titles(findings)
    launcher = findings[LAUNCHER][0]
    assert launcher.severity is Severity.WARNING
    assert any(t.endswith("TORCH_COMMAND=pip install torch torchvision --extra-index-url "
                          "https://download.pytorch.org/whl/rocm5.2") for t in evidence_texts(launcher))
    steps = steps_of(launcher)
    assert "--index-url https://download.pytorch.org/whl/rocm7.2" in steps and "whl/rocm5.2" not in steps
    assert "https://download.pytorch.org/whl/rocm7.2" in steps_of(findings[NOCODE][0])  # both fixes agree


def test_webui_pin_names_no_index_for_a_gpu_no_index_has_code_for(tmp_path):
    """The RX 570 of AUTOMATIC1111/stable-diffusion-webui#10358 with a webui-user.sh TORCH_COMMAND: no PyTorch ROCm
    index has gfx803 code, so the launcher finding names none (only the placeholder), rather than one that fails."""
    root = reporter_machine(tmp_path / "r", [Gpu(80003, 0x67DF)], rocm=None)
    webui_env(root, "rocm", "1.12.1+rocm5.1.1", targets=ROCM5_WHEEL_TARGETS)
    sc.write(root, "/home/alice/stable-diffusion-webui/webui.sh", "#!/usr/bin/env bash\n")
    sc.write(root, "/home/alice/stable-diffusion-webui/launch.py", "from modules import launch_utils\n")
    sc.write(root, "/home/alice/stable-diffusion-webui/webui-user.sh",
             'export TORCH_COMMAND="pip install torch torchvision --extra-index-url '
             'https://download.pytorch.org/whl/rocm5.1.1"\n')
    steps = steps_of(diagnose(root)[LAUNCHER][0])
    assert "whl/rocmX.Y" in steps and "whl/rocm5.1.1" not in steps


def test_pytorch_96964_7900_xtx_conda_python_3_9_gets_an_index_with_a_3_9_wheel(tmp_path):
    """pytorch/pytorch#96964: Ubuntu 22.04, RX 7900 XTX, torch 2.0.0 from pip in a miniconda env on Python 3.9;
    matmul stops with "rocBLAS error: Cannot read .../torch/lib/rocblas/library/TensileLibrary.dat"; the reporter
    found the bundled rocBLAS has no gfx1100 library; AMD: not yet supported, it comes with the ROCm release that
    supports Navi3x. Today's wheels have gfx1100, but rocm7.2's need Python 3.10 or newer (pytorch/pytorch
    RELEASE.md), so the reinstall must come from the newest index with a 3.9 wheel. Assumed: the wheel
    2.0.0+rocm5.4.2 with ROCM5_WHEEL_TARGETS, the env at /home/alice/miniconda3/envs/pytorch2 (the reporter's
    /home/kali/...), PCI id 1002:744C, no ROCm under /opt, no ollama."""
    root = reporter_machine(tmp_path / "r", [Gpu(110000, 0x744C)], rocm=None)
    sc.write(root, "/etc/os-release", JAMMY)
    webui_env(root, "rocm", "2.0.0+rocm5.4.2", py="3.9", rel="home/alice/miniconda3/envs/pytorch2",
              targets=ROCM5_WHEEL_TARGETS, conda=True)
    finding = only(diagnose(root), NOCODE)
    assert finding.severity is Severity.ERROR and finding.title == "The installed PyTorch has no code for gfx1100"
    assert any(t.endswith("torch/lib/rocblas/library: rocBLAS Tensile library has code for gfx1030, gfx900, gfx906, "
                          "gfx908, gfx90a") for t in evidence_texts(finding))
    assert "--index-url https://download.pytorch.org/whl/rocm6.4" in steps_of(finding)  # rocm6.4: 3.9 to 3.14
    assert finding.fix.action == ("pip-reinstall-rocm-torch", "/home/alice/miniconda3/envs/pytorch2",
                                  "https://download.pytorch.org/whl/rocm6.4")


# -- GPUs ROCm does not support --------------------------------------------------------------------------------

SUGGESTED = "hsa-override-suggested"
ARCH = 'NAME="Arch Linux"\nPRETTY_NAME="Arch Linux"\nID=arch\nBUILD_ID=rolling\n'
NIXOS = 'NAME=NixOS\nID=nixos\nVERSION_ID="24.05"\nPRETTY_NAME="NixOS 24.05 (Uakari)"\n'


def test_ollama_2869_rx_6600_service_gets_the_override_in_its_unit_first(tmp_path):
    """ollama/ollama#2869 ("Ollama doesn't use Radeon RX 6600"): ollama as a service on an RX 6600 (gfx1032, not on
    ROCm's list); a commenter on the official Arch package with an RX 7600 sees the same. What makes it run is the
    same-family override for the server (ollama docs/gpu.md "Overrides": HSA_OVERRIDE_GFX_VERSION="10.3.0"), set
    in the service as docs/faq.md says. rocmdesk used to say "e.g. `export` in ~/.profile" first, which
    ollama.service never reads (the fault of ollama/ollama#6152), and named ollama.service even on machines without
    it. Assumed: Arch, PCI id 1002:73FF (Navi 23), ROCm 6.0.2 under /opt, the service's process in its cgroup,
    nothing set anywhere. Expected: advice (info: nothing is set wrong) whose first place is the service's drop-in."""
    root = reporter_machine(tmp_path / "r", [Gpu(100302, 0x73FF)], rocm="6.0.2")
    sc.write(root, "/etc/os-release", ARCH)
    in_service(root)
    finding = only(diagnose(root), SUGGESTED)
    assert finding.severity is Severity.INFO
    steps = finding.fix.steps
    assert steps[0] == ("Set `HSA_OVERRIDE_GFX_VERSION=10.3.0` for the program that uses the GPU: ollama.service "
                        "reads it only from its unit.")
    assert steps[1].startswith("Run `sudo systemctl edit ollama.service`")
    assert 'Environment="HSA_OVERRIDE_GFX_VERSION=10.3.0"' in steps[1]
    assert "sudo systemctl restart ollama.service" in steps[2]
    profile = [i for i, t in enumerate(steps) if "~/.profile" in t]
    assert profile and profile[0] > 2 and "not ollama.service" in steps[profile[0]]


def test_override_advice_names_no_service_the_machine_does_not_have(tmp_path):
    """The same RX 6600 with no ollama and no GPU service (a ComfyUI started from a terminal): the steps name no unit
    that does not exist."""
    root = reporter_machine(tmp_path / "r", [Gpu(100302, 0x73FF)], rocm="6.0.2")
    without_ollama(root)
    finding = only(diagnose(root), SUGGESTED)
    steps = steps_of(finding)
    assert "ollama" not in steps
    assert "`export HSA_OVERRIDE_GFX_VERSION=10.3.0` in ~/.profile" in steps and "systemctl edit <unit>" in steps


def test_nixpkgs_308206_rx_580_ollama_service_gets_what_works_on_gfx803(tmp_path):
    """NixOS/nixpkgs#308206: NixOS 24.05 (kernel 6.8.7), services.ollama = { enable = true; acceleration = "rocm"; },
    an RX 580; ollama logs "amdgpu version file missing: /sys/module/amdgpu/version" and uses the CPU, while "ROCm and
    OpenCL work". The version-file line is only ollama's warning; the cause is that ollama's ROCm has no gfx803
    (ollama/ollama#2453 asks for it, still open; AMD ended gfx8 with ROCm 4, ROCm/legacy-rocm-build#1471), so no
    override or setting helps: what works is a build for gfx803 or Vulkan. Assumed: PCI id 1002:67DF, the generated
    ollama.service (DynamicUser, SupplementaryGroups=render) with its process in the unit's cgroup, no ROCm under
    /opt (NixOS keeps it in the store), no ComfyUI. Expected: the gfx803 warning with what works, nothing about the
    version file, no override proposed."""
    root = reporter_machine(tmp_path / "r", [Gpu(80003, 0x67DF)], rocm=None)
    sc.write(root, "/etc/os-release", NIXOS)
    shutil.rmtree(root / "home/alice/ComfyUI")
    sc.write(root, "/etc/systemd/system/ollama.service",
             "[Unit]\nDescription=Server for local large language models\n\n[Service]\n"
             'Environment="HOME=/var/lib/ollama"\nEnvironment="OLLAMA_HOST=127.0.0.1:11434"\n'
             "ExecStart=/nix/store/8bv2k0yfl0l3v3d2sm0c4n1v1c7mbzbm-ollama-0.1.31/bin/ollama serve\n"
             "DynamicUser=true\nSupplementaryGroups=render\n")
    in_service(root)
    finding = only(diagnose(root), UNSUPPORTED)
    assert finding.severity is Severity.WARNING and finding.title == "ROCm does not support gfx803"
    steps = steps_of(finding)
    assert "community gfx803 builds" in steps and "Vulkan" in steps
    assert "HSA_OVERRIDE_GFX_VERSION" not in steps


def test_legacy_2061_rx_6600_koboldai_no_binary_is_the_override_not_a_reinstall(tmp_path):
    """ROCm/legacy-rocm-build#2061: Arch Linux, RX 6600 + i5-8400, ROCm from the AUR (`yay -S rocm-hip-sdk
    rocm-opencl-sdk`), KoboldAI stops with "hipErrorNoBinaryForGpu: Unable to find code object for all current
    devices!". Solved in the thread: `export HSA_OVERRIDE_GFX_VERSION=10.3.0` ("oh wow it actually works"). Assumed:
    PCI id 1002:73FF (gfx1032), ROCm 5.4.3 under /opt, KoboldAI's micromamba env (runtime/envs/koboldai, Python 3.8)
    with torch 1.13.1+rocm5.2 and ROCM5_WHEEL_TARGETS, started from a terminal, no ollama. Expected: the missing-code
    error and the override advice both say HSA_OVERRIDE_GFX_VERSION=10.3.0, in the shell, and no reinstall (no index
    has gfx1032 code; the override runs the gfx1030 code the wheel has)."""
    root = reporter_machine(tmp_path / "r", [Gpu(100302, 0x73FF)], rocm="5.4.3")
    sc.write(root, "/etc/os-release", ARCH)
    webui_env(root, "rocm", "1.13.1+rocm5.2", py="3.8", rel="home/alice/KoboldAI/runtime/envs/koboldai",
              targets=ROCM5_WHEEL_TARGETS, conda=True)
    findings = diagnose(root)
    assert set(findings) == {NOCODE, SUGGESTED}, titles(findings)
    nocode = findings[NOCODE][0]
    assert nocode.severity is Severity.ERROR and nocode.title == "The installed PyTorch has no code for gfx1032"
    assert "`HSA_OVERRIDE_GFX_VERSION=10.3.0`" in steps_of(nocode)
    assert "--index-url" not in steps_of(nocode) and (nocode.fix is None or nocode.fix.action is None)
    advice = findings[SUGGESTED][0]
    assert advice.severity is Severity.INFO
    assert "`export HSA_OVERRIDE_GFX_VERSION=10.3.0` in ~/.profile" in steps_of(advice)
    assert "ollama" not in steps_of(advice)


# -- metadata ties ---------------------------------------------------------------------------------------------

REPORTS_TESTED = {
    NOT_READ: ("ollama/ollama#6152", "ollama/ollama#8772"),
    WHEEL: ("AUTOMATIC1111/stable-diffusion-webui#10358",),
    NOCODE: ("AUTOMATIC1111/stable-diffusion-webui#7459", "pytorch/pytorch#96964", "ROCm/legacy-rocm-build#2061"),
    GROUP: ("RadeonOpenCompute/ROCm_Documentation#39",),
    SUGGESTED: ("ollama/ollama#2869",),
    LAUNCHER: ("AUTOMATIC1111/stable-diffusion-webui#7459",),
    UNSUPPORTED: ("NixOS/nixpkgs#308206",),
}


@pytest.mark.parametrize("check_id", sorted(REPORTS_TESTED))
def test_metadata_lists_the_reports_judged_here(check_id):
    listed = " ".join(load_metadata()[check_id].reports)
    for report in REPORTS_TESTED[check_id]:
        assert f"{report}:" in listed, (check_id, report)
