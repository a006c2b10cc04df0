"""Real public reports for checks that had none yet (issue 12, item 14), rebuilt as host roots.

Each case starts from the clean Ubuntu workstation (tests/support/scenarios.py via tests/support/reports.py) and puts
in what the reporter pasted: GPUs, packages, Python environments, environment variables, modprobe.d files, kernel
release. The docstring names the report, what had to be assumed and what solved it in the thread. Each case runs the
whole diagnosis and asserts the finding, its severity, its evidence, that the fix steps are the ones that solved it,
and that nothing else fires (the set of non-pass findings is what the report implies).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rocmdesk.diagnosis.model import Severity
from tests.support import scenarios as sc
from tests.support.initramfs_images import (
    build_image,
    image_path_for,
    install_generator,
    install_matching_initramfs,
    main_entries,
)
from tests.support.initramfs_images import write as write_image
from tests.support.python_envs import dist_info, install_torch, make_comfyui, make_venv, site_of, write
from tests.support.reports import (
    Gpu,
    assert_metadata_ties,
    diagnose,
    evidence_texts,
    only,
    reporter_machine,
    set_kernel,
    steps_of,
    without_ollama,
)
from tests.support.sysfs_tree import behind_amd_switch

JAMMY = ('PRETTY_NAME="Ubuntu 22.04.4 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\n'
         'VERSION="22.04.4 LTS (Jammy Jellyfish)"\nID=ubuntu\nID_LIKE=debian\nVERSION_CODENAME=jammy\n'
         'UBUNTU_CODENAME=jammy\n')
BIONIC = ('NAME="Ubuntu"\nVERSION="18.04.1 LTS (Bionic Beaver)"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID="18.04"\n'
          'VERSION_CODENAME=bionic\nUBUNTU_CODENAME=bionic\n')
NAVI31 = 0x744C  # RX 7900 XTX/XT/GRE (gfx1100)


def no_comfyui(root: Path) -> None:
    """The workstation without its ComfyUI and ollama: for reporters whose GPU program is something else."""
    shutil.rmtree(root / "home/alice/ComfyUI")
    without_ollama(root)


def findings_summary(findings: dict) -> dict:
    return {k: [f.title for f in v] for k, v in findings.items()}


# -- pynvml-breaks-rocm-torch -------------------------------------------------------------------------------------

PYNVML = "pynvml-breaks-rocm-torch"
WSL_ENV = "wsl-environment"
ROCM_HSA = "/opt/rocm/lib/libhsa-runtime64.so.1.2"


def test_pytorch_133259_deepspeed_pulled_nvidia_ml_py_into_a_wsl_venv(tmp_path):
    """pytorch/pytorch#133259: training on an AMD GPU in WSL with torch==2.4.0+rocm6.1; `pip3 install deepspeed`
    installed nvidia-ml-py (DeepSpeed's requirements.txt), and then `torch.cuda.device_count()` raised "NameError:
    name 'amdsmi' is not defined". Installing amdsmi from /opt/rocm/share/amd_smi does not work under WSL (the
    reporter); what works is removing the NVML binding (milabench#256, same thread: "uninstall pynvml") or a torch
    with the fix. Assumed: an RX 7900 XTX, ROCm 6.1.3 for WSL, the venv ~/venv on Python 3.10, deepspeed 0.14.5 and
    nvidia-ml-py 12.560.30, and torch/lib's HSA runtime already replaced with /opt/rocm's (training ran before)."""
    root = reporter_machine(tmp_path / "r", [Gpu(110000, NAVI31, dump="rx7900xtx")], rocm="6.1.3")
    no_comfyui(root)
    sc.make_wsl(root)
    sc.write(root, "/opt/rocm/share/amd_smi/pyproject.toml", '[project]\nname = "amdsmi"\n')  # amd-smi-lib is there
    hsa = b"\x7fELF" + b"\0" * 60
    sc.write(root, ROCM_HSA, hsa)
    venv = make_venv(root, "home/alice/venv", "rocm-old", py="3.10", version="2.4.0+rocm6.1",
                     packages={"nvidia-ml-py": "12.560.30"})
    site = site_of(venv, "3.10")
    write(site / "torch/lib/libhsa-runtime64.so", hsa)
    dist_info(site, "deepspeed", "0.14.5", ["hjson", "ninja", "numpy", "nvidia-ml-py", "packaging>=20.0", "psutil",
                                            "py-cpuinfo", "pydantic", "torch", "tqdm"])
    findings = diagnose(root)
    assert set(findings) == {PYNVML, WSL_ENV}, findings_summary(findings)
    finding = findings[PYNVML][0]
    assert finding.severity is Severity.ERROR and finding.title == "pynvml crashes the ROCm torch"
    texts = evidence_texts(finding)
    assert any(t.endswith("nvidia-ml-py 12.560.30 is installed") for t in texts)
    assert any("torch-2.4.0+rocm6.1.dist-info/METADATA:3: Version: 2.4.0+rocm6.1" in t for t in texts)
    assert any("deepspeed-0.14.5.dist-info/METADATA" in t and "Requires-Dist: nvidia-ml-py (deepspeed 0.14.5 pulls "
               "it in)" in t for t in texts), texts
    steps = steps_of(finding)
    assert "`/home/alice/venv/bin/python -m pip uninstall -y nvidia-ml-py`" in steps
    assert "amd_smi" not in steps  # the reporter: installing amdsmi does not work under WSL
    assert finding.fix.action == ("pip-uninstall-pynvml", "/home/alice/venv")
    wsl = findings[WSL_ENV][0]
    assert wsl.severity is Severity.INFO
    assert "/dev/dxg: exists (the WSL GPU paravirtualisation device)" in evidence_texts(wsl)


def test_sdnext_3181_torch_2_4_1_still_crashes_until_pynvml_goes(tmp_path):
    """vladmandic/sdnext#3181: SD.Next on ROCm 6.1 crashed at start with "NameError: name 'amdsmi' is not defined";
    in the thread (Delaunay, 2024-10-03): "Issue is still there for 2.4.1 ... Fix is to uninstall pynvml `pip
    uninstall pynvml nvidia-ml-py -y`". Rebuilt: that machine, SD.Next in ~/automatic with its venv holding
    torch 2.4.1+rocm6.1 beside pynvml and nvidia-ml-py. Assumed: an RX 7900 XTX, ROCm 6.1.3, Python 3.11, pynvml
    11.5.3 and nvidia-ml-py 12.560.30, SD.Next's installer.py naming its repository, ROCm's amd-smi-lib in
    /opt/rocm/share/amd_smi (installing it is the third way out, pytorch/pytorch#133259). SD.Next also gets the
    launcher note (it reinstalls torch on its own terms)."""
    root = reporter_machine(tmp_path / "r", [Gpu(110000, NAVI31, dump="rx7900xtx")], rocm="6.1.3")
    no_comfyui(root)
    sc.write(root, "/home/alice/automatic/launch.py", "import installer\n")
    sc.write(root, "/home/alice/automatic/installer.py", "# https://github.com/vladmandic/automatic\n")
    sc.write(root, "/home/alice/automatic/webui.sh", "#!/usr/bin/env bash\n")
    make_venv(root, "home/alice/automatic/venv", "rocm-old", version="2.4.1+rocm6.1",
              packages={"pynvml": "11.5.3", "nvidia-ml-py": "12.560.30"})
    sc.write(root, "/opt/rocm/share/amd_smi/pyproject.toml", '[project]\nname = "amdsmi"\n')  # ROCm's amd-smi-lib
    findings = diagnose(root)
    assert set(findings) == {PYNVML, "launcher-reinstalls-torch"}, findings_summary(findings)
    finding = findings[PYNVML][0]
    assert finding.severity is Severity.ERROR and finding.subject == "/home/alice/automatic/venv"
    texts = evidence_texts(finding)
    assert any(t.endswith("pynvml 11.5.3 is installed") for t in texts)
    assert any(t.endswith("nvidia-ml-py 12.560.30 is installed") for t in texts)
    assert "predates that fix" in finding.explanation
    assert finding.fix.steps[0] == ("Uninstall it from this environment: `/home/alice/automatic/venv/bin/python -m pip "
                                    "uninstall -y pynvml nvidia-ml-py`.")
    assert finding.fix.steps[-1] == ("Or keep pynvml and install the amdsmi Python package of this machine's ROCm "
                                     "into the environment: `/home/alice/automatic/venv/bin/python -m pip install "
                                     "/opt/rocm/share/amd_smi`.")
    assert findings["launcher-reinstalls-torch"][0].severity is Severity.INFO


# -- torch-pinned-by-custom-node ----------------------------------------------------------------------------------

PINNED = "torch-pinned-by-custom-node"
WHEEL = "torch-wheel-mismatch"
# MrForExample/ComfyUI-AnimateAnyone-Evolved requirements.txt at the time of the report (xformers last, unpinned)
ANIMATE_ANYONE_REQUIREMENTS = (
    "accelerate\nclip @ https://github.com/openai/CLIP/archive/d50d76daa670286dd6cacf3bcd80b5e4823fc8e1.zip\n"
    "diffusers>=0.25.1\neinops\ngradio\ngradio_client\nimageio\nimageio-ffmpeg\nnumpy\nomegaconf\nopen-clip-torch\n"
    "opencv-contrib-python\nopencv-python\nPillow\nscikit-image\nscikit-learn\nscipy\ntorchdiffeq\ntorchmetrics\n"
    "torchsde\ntransformers\nxformers\n")


def animate_anyone_machine(tmp: Path) -> Path:
    """ricperry's machine in MrForExample/ComfyUI-AnimateAnyone-Evolved#22 before the node's requirements ran."""
    root = reporter_machine(tmp / "r", [Gpu(110000, NAVI31, dump="rx7900xtx")], rocm="5.7.1")
    no_comfyui(root)
    comfy = make_comfyui(root, "home/alice/ComfyUI", "rocm", py="3.10", version="2.2.0+rocm5.7", companions=False,
                         nodes={"ComfyUI-AnimateAnyone-Evolved": {"requirements.txt": ANIMATE_ANYONE_REQUIREMENTS}})
    dist_info(site_of(comfy / "venv", "3.10"), "torchvision", "0.17.0+rocm5.7")
    return root


def test_animateanyone_22_xformers_line_would_swap_the_rocm_torch(tmp_path):
    """MrForExample/ComfyUI-AnimateAnyone-Evolved#22 "Breaks a ROCm venv": installing the node's requirements
    replaced the ROCm torch; chiragkrishna in the thread: "Your requirements file has xformers. Which forces reinstall
    of nvidia torch and torchvision". Rebuilt before the install: the node's requirements.txt (xformers on line 22,
    unpinned) beside a ROCm torch. Assumed: an RX 7900 XTX, torch 2.2.0+rocm5.7 (the rocm5.7 index the reporter
    reinstalled from), Python 3.10, xformers not yet installed. rocmdesk must warn before pip runs and say how to
    install the node's requirements without swapping torch."""
    findings = diagnose(animate_anyone_machine(tmp_path))
    finding = only(findings, PINNED)
    assert finding.severity is Severity.WARNING
    assert finding.subject == "/home/alice/ComfyUI/custom_nodes/ComfyUI-AnimateAnyone-Evolved"
    requirement = finding.evidence[0]
    assert (requirement.path, requirement.line) == (
        "/home/alice/ComfyUI/custom_nodes/ComfyUI-AnimateAnyone-Evolved/requirements.txt", 22)
    assert requirement.text.startswith("xformers: pip would fetch xformers from PyPI")
    assert "torch 2.2.0+rocm5.7" in evidence_texts(finding)[-1]
    steps = steps_of(finding)
    assert "torch==2.2.0+rocm5.7 torchvision==0.17.0+rocm5.7" in steps
    assert "-c ~/rocm-torch-constraints.txt" in steps


def test_animateanyone_22_after_the_install_the_fix_is_the_threads_reinstall(tmp_path):
    """The same machine after `pip install -r requirements.txt`: PyPI's xformers 0.0.23.post1 pulled its torch==2.1.2
    (a CUDA build, no local tag). What the reporter did: `pip uninstall torch torchvision && pip install torch
    torchvision --index-url https://download.pytorch.org/whl/rocm5.7`; rocmdesk's fix is that reinstall from a ROCm
    index with --index-url. The node check stays quiet on a CUDA torch (torch-wheel-mismatch speaks)."""
    root = animate_anyone_machine(tmp_path)
    site = site_of(root / "home/alice/ComfyUI/venv", "3.10")
    install_torch(site, "cuda-untagged", version="2.1.2")
    dist_info(site, "xformers", "0.0.23.post1", ["numpy", "torch==2.1.2"])
    finding = only(diagnose(root), WHEEL)
    assert finding.severity is Severity.ERROR and finding.title == "PyTorch is a CUDA build, not a ROCm build"
    assert any(t.endswith("torch-2.1.2.dist-info/METADATA:3: Version: 2.1.2") for t in evidence_texts(finding))
    steps = steps_of(finding)
    assert "-m pip install --force-reinstall torch torchvision torchaudio --index-url " \
           "https://download.pytorch.org/whl/rocm" in steps


# -- visible-devices-hides-gpus -----------------------------------------------------------------------------------

VISIBLE = "visible-devices-hides-gpus"


def test_swarmui_565_rocr_and_hip_both_1_leave_no_gpu(tmp_path):
    """mcmonkeyprojects/SwarmUI#565: SwarmUI started its backend with `ROCR_VISIBLE_DEVICES=1` and
    `HIP_VISIBLE_DEVICES=1`; on "a machine with n gfx908 gpus and z gfx1030 gpus" HIP indexes the GPUs ROCR left,
    so index 1 is out of range and `torch.cuda.is_available()` is False. The reporter's fix: set only
    ROCR_VISIBLE_DEVICES. Assumed: one MI100 (gfx908) and one RX 6800 XT (gfx1030), ROCm 6.2.4, the backend a python3
    process holding /dev/kfd with both variables in its environment."""
    root = reporter_machine(tmp_path / "r", [Gpu(90008, 0x738C, pci_class=0x038000),
                                             Gpu(100300, 0x73BF, pci="0000:0a:00.0")], rocm="6.2.4")
    without_ollama(root)
    sc.gpu_process(root, 6100, "python3", {"PATH": "/usr/bin", "ROCR_VISIBLE_DEVICES": "1",
                                           "HIP_VISIBLE_DEVICES": "1"})
    finding = only(diagnose(root), VISIBLE)
    assert finding.severity is Severity.ERROR and finding.title == "HIP_VISIBLE_DEVICES hides GPUs"
    assert str(finding.evidence[0]) == "/proc/6100/environ: HIP_VISIBLE_DEVICES=1  (python3 process 6100)"
    assert "index 1 is out of range: only 1 GPU(s) are available to it (0..0), so no GPU is left " \
           "(ROCR_VISIBLE_DEVICES in the same place already narrowed them to 1)" in finding.explanation
    assert "remove `HIP_VISIBLE_DEVICES=1`" in finding.fix.steps[0]
    assert "ROCR_VISIBLE_DEVICES" not in finding.fix.steps[0]  # the reporter's fix: keep ROCR, drop HIP


# -- amdgpu-pro-leftover ------------------------------------------------------------------------------------------

PRO = "amdgpu-pro-leftover"


def pro_machine(tmp: Path, kver: str, pro: str, gpu: Gpu, rocm: str, rocm_packages: list[tuple[str, str, str]]) -> Path:
    """Ubuntu 18.04 with the amdgpu-pro stack ``pro`` (its amdgpu-dkms built for ``kver``) and some ROCm packages."""
    root = reporter_machine(tmp / "r", [gpu], rocm=rocm)
    no_comfyui(root)
    sc.write(root, "/etc/os-release", BIONIC)
    set_kernel(root, kver)
    sc.write(root, f"/usr/lib/modules/{kver}/updates/dkms/amdgpu.ko", b"\x7fELF")
    sc.write(root, f"/usr/lib/modules/{kver}/modules.dep", "updates/dkms/amdgpu.ko: kernel/drivers/gpu/drm/drm.ko\n")
    install_matching_initramfs(root, kver)
    packages = [("amdgpu-pro", pro, "amd64"), ("amdgpu-pro-core", pro, "all"), ("amdgpu-dkms", pro, "all"),
                ("amdgpu-core", pro, "all"), ("libgl1-amdgpu-pro-glx", pro, "amd64"), *rocm_packages]
    sc.write(root, "/var/lib/dpkg/status", "".join(sc.dpkg_entry(*p) for p in packages))
    (root / "opt/amdgpu-pro/bin").mkdir(parents=True)
    return root


def test_legacy_551_amdgpu_pro_18_30_then_rocm_dkms(tmp_path):
    """ROCm/legacy-rocm-build#551: "After installing amdgpu-pro 18.30-641594 on fresh Ubuntu 18.04", `apt install
    rocm-dkms` fails: "trying to overwrite '/usr/share/dkms/modules_to_force_install/amdgpu', which is also in package
    amdgpu-dkms 18.30-641594". AMD (jlgreathouse): rocm-dkms brings its own amdgpu, amdgpu-pro comes with its own; the
    way out in the thread is `amdgpu-pro-uninstall`, then ROCm alone. Assumed: RX 580 (gfx803), kernel
    4.15.0-34-generic with amdgpu-pro's DKMS module built, the ROCm 1.9 packages that did unpack (hsa-rocr-dev,
    rocminfo), amdgpu-pro's packages amdgpu-pro/-core/libgl1-amdgpu-pro-glx and /opt/amdgpu-pro."""
    root = pro_machine(tmp_path, "4.15.0-34-generic", "18.30-641594", Gpu(80003, 0x67DF, dump="rx580"), "1.9.0",
                       [("hsa-rocr-dev", "1.1.9-8-g1d35ea7", "amd64"), ("rocminfo", "1.0.0", "amd64")])
    findings = diagnose(root)
    finding = findings[PRO][0]
    assert finding.severity is Severity.WARNING
    texts = evidence_texts(finding)
    assert "/var/lib/dpkg/status:1: Package: amdgpu-pro (18.30-641594) installed" in texts
    assert any("libgl1-amdgpu-pro-glx (18.30-641594)" in t for t in texts)
    assert "/opt/amdgpu-pro: folder exists" in texts
    assert not any("amdgpu-dkms" in t for t in texts)  # ROCm's own installer stack is not the leftover
    assert "`sudo amdgpu-pro-uninstall`" in finding.fix.steps[0]
    assert PRO in findings and not {k for k in findings if k.startswith(("amdgpu-dkms", "initramfs"))}, \
        findings_summary(findings)


def test_legacy_860_radeon_vii_amdgpu_pro_19_20_then_rocm(tmp_path):
    """ROCm/legacy-rocm-build#860: Radeon VII on Ubuntu 18.04; "./amdgpu-pro-install -y --opencl=pal" first, then
    ROCm 2.6 per its instructions: "trying to overwrite '/usr/share/dkms/modules_to_force_install/amdgpu', which is
    also in package amdgpu-dkms 19.20-812932"; the reporter dug "a hole deep enough that I cannot uninstall". Solved
    the way AMD says for #551: remove the amdgpu-pro stack, then install ROCm alone. Assumed: kernel
    4.18.0-25-generic (18.04 HWE) with amdgpu-pro's DKMS module built, the ROCm 2.6 packages that unpacked
    (rocm-device-libs, rocm-smi, rocr_debug_agent) and amdgpu-pro's usual packages."""
    root = pro_machine(tmp_path, "4.18.0-25-generic", "19.20-812932", Gpu(90006, 0x66AF), "2.6.0",
                       [("rocm-device-libs", "0.0.1", "amd64"), ("rocm-smi", "1.0.0-157-g8d290c1", "amd64"),
                        ("rocr_debug_agent", "1.0.0", "amd64")])
    finding = diagnose(root)[PRO][0]
    assert finding.severity is Severity.WARNING
    assert "/var/lib/dpkg/status:1: Package: amdgpu-pro (19.20-812932) installed" in evidence_texts(finding)
    steps = steps_of(finding)
    assert "amdgpu-pro-uninstall" in steps and "Reinstall ROCm alone" in steps


# -- initramfs-stale (and the blacklist it hides) -----------------------------------------------------------------

STALE = "initramfs-stale"
BLACKLIST = "amdgpu-blacklisted"


def test_gpu_operator_330_blacklist_written_after_the_image_is_ignored_on_22_04(tmp_path):
    """ROCm/gpu-operator#330 (wonkyooh): on Ubuntu 22.04.4, `echo 'blacklist amdgpu' >>
    /etc/modprobe.d/blacklist-amdgpu.conf` and a reboot did not blacklist amdgpu: "it requires the users to run `sudo
    update-initramfs -u` for the changes to be applied"; after that and a reboot it was blacklisted. The image held
    amdgpu and the old modprobe.d, so the boot loaded amdgpu from it. Assumed: an RX 7900 XTX (the thread is about
    MI-series nodes; the GPU does not change the mechanism), kernel 6.8.0-51 (22.04 HWE), the file written an hour
    after the image was built, the node a Kubernetes node (/var/lib/kubelet). On a GPU Operator node the blacklist is
    intended (the operator loads its own driver): the blacklist finding must not claim "something ran modprobe", must
    not offer to remove the blacklist, and is information only."""
    root = sc.clean_workstation(tmp_path / "r")
    sc.write(root, "/etc/os-release", JAMMY)
    (root / "var/lib/kubelet").mkdir(parents=True)
    path = sc.write(root, "/etc/modprobe.d/blacklist-amdgpu.conf", "blacklist amdgpu\n")
    image = root / f"boot/initrd.img-{sc.KERNEL}"
    os.utime(path, (image.stat().st_mtime + 3600,) * 2)
    findings = diagnose(root)
    assert set(findings) == {STALE, BLACKLIST}, findings_summary(findings)
    stale = findings[STALE][0]
    assert stale.severity is Severity.WARNING
    assert any(t.startswith("/etc/modprobe.d/blacklist-amdgpu.conf: mentions amdgpu and was modified")
               and t.endswith("the image has no copy of it") for t in evidence_texts(stale))
    assert stale.fix.steps[0] == ("Regenerate the running kernel's initramfs once: `sudo update-initramfs -u -k "
                                  "6.8.0-51-generic`.")
    assert stale.fix.action == ("initramfs-regenerate",)
    blacklist = findings[BLACKLIST][0]
    assert blacklist.severity is Severity.INFO and blacklist.fix.action is None
    details = blacklist.explanation.split("\n\n")[-1]
    assert details.startswith("amdgpu is loaded right now because the initramfs loaded it at boot")
    assert "see initramfs-stale" in details and "modprobe amdgpu" not in details
    assert "AMD's GPU Operator blacklists the inbox amdgpu on purpose" in details
    assert blacklist.fix.steps[0].startswith("If AMD's GPU Operator manages this node, leave the blacklist")


# -- gpu-ecc-errors ----------------------------------------------------------------------------------------------

ECC = "gpu-ecc-errors"


def dkms_boot(root: Path, kver: str, version: str) -> None:
    """Boot ``kver`` with amdgpu-dkms ``version`` built and installed for it (and the image rebuilt after it)."""
    set_kernel(root, kver)
    sc.write(root, f"/usr/lib/modules/{kver}/updates/dkms/amdgpu.ko", b"\x7fELF")
    sc.write(root, f"/usr/lib/modules/{kver}/modules.dep", "updates/dkms/amdgpu.ko: kernel/drivers/gpu/drm/drm.ko\n")
    sc.append(root, "/var/lib/dpkg/status", sc.dpkg_entry("amdgpu-dkms", f"1:{version}", "all"))
    install_matching_initramfs(root, kver)


def test_legacy_1886_mi50_uncorrectable_athub_interrupt_in_dmesg(tmp_path):
    """ROCm/legacy-rocm-build#1886: a Supermicro AS-4124GS-TNR node running an MI100 and an MI210 fine; its MI50
    "stopped working", dmesg: "amdgpu 0000:e3:00.0: amdgpu: uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT)
    detected!", then "GPU reset begin!" (Ubuntu 22.04, kernel 5.15.0-57-generic, amdgpu-dkms 5.18.2.22.40).
    The thread has no fix; AMD's advice for such a line (#1552, kentrussell): reseat and power-cycle, then the
    vendor. rocmdesk must name the MI50 alone, from the log, since no RAS counters were pasted. Assumed: the MI210 at
    03:00.0 and the MI100 at 43:00.0, ROCm 5.4.2, Secure Boot off (a server with DKMS loaded), no ras/ sysfs in the
    rebuilt tree."""
    root = reporter_machine(tmp_path / "r", [Gpu(90010, 0x740F, pci_class=0x038000),
                                             Gpu(90008, 0x738C, pci="0000:43:00.0", pci_class=0x038000),
                                             Gpu(90006, 0x66A1, pci="0000:e3:00.0", pci_class=0x038000)],
                           rocm="5.4.2")
    no_comfyui(root)
    sc.write(root, "/etc/os-release", JAMMY)
    sc.set_secure_boot(root, False)
    dkms_boot(root, "5.15.0-57-generic", "5.18.2.22.40-1504718.22.04")
    sc.write(root, "/var/log/kern.log", (root / "var/log/kern.log").read_text().replace(sc.KERNEL,
                                                                                         "5.15.0-57-generic"))
    sc.kernel_log(root, "amdgpu 0000:e3:00.0: amdgpu: MEM ECC is active.",
                  "amdgpu 0000:e3:00.0: amdgpu: SRAM ECC is active.",
                  "amdgpu 0000:e3:00.0: amdgpu: uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!",
                  "amdgpu 0000:e3:00.0: amdgpu: GPU reset begin!",
                  "[drm] UVD VCPU state may lost due to RAS ERREVENT_ATHUB_INTERRUPT")
    finding = only(diagnose(root), ECC)
    assert finding.severity is Severity.ERROR and finding.subject == "0000:e3:00.0"
    assert [e.text.split("] ", 1)[-1] for e in finding.evidence] == [
        "amdgpu 0000:e3:00.0: amdgpu: uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!"]
    assert finding.evidence[0].path == "/var/log/kern.log"
    steps = steps_of(finding)
    assert "stop new work on this GPU" in steps and "reseat the card" in steps and "(RMA)" in steps


# -- pcie-link-degraded -------------------------------------------------------------------------------------------

PCIE = "pcie-link-degraded"


def test_lact_334_rx_7800_xt_slot_link_is_on_the_cards_switch(tmp_path):
    """ilya-zlobintsev/LACT#334: RX 7800 XT (Gentoo, linux 6.8.9); `grep . /sys/class/drm/card*/device/*_link_*`
    reads 16.0 GT/s x16 current and max, while LACT shows "8.0 GT/s PCIe x16". The maintainer: "On RDNA GPUs the
    correct link speed isn't shown on the GPU device itself, but on a separate 'upstream' PCI device" (the card's
    switch, [1002:1478]/[1002:1479]). rocmdesk read the GPU's own files and called the link full; now it reads the
    upstream port. Assumed: the workstation's Ubuntu in place of Gentoo, gfx1101 [1002:747e] at 03:00.0 behind the
    switch at 01:00.0/02:00.0, ROCm 6.4.1, the upstream port's maximum 16 GT/s x16, the GPU idle (3 % busy).
    Idle links train down, so this is information with "check again under load", not an alarm."""
    root = reporter_machine(tmp_path / "r", [Gpu(110001, 0x747E)], rocm="6.4.1")
    behind_amd_switch(root, "0000:03:00.0", "0000:01:00.0", "0000:02:00.0",
                      link={"current_link_width": "16", "max_link_width": "16",
                            "current_link_speed": "8.0 GT/s PCIe", "max_link_speed": "16.0 GT/s PCIe"},
                      internal={"current_link_width": "16", "max_link_width": "16",
                                "current_link_speed": "16.0 GT/s PCIe", "max_link_speed": "16.0 GT/s PCIe",
                                "gpu_busy_percent": "3"})
    finding = only(diagnose(root), PCIE)
    assert finding.severity is Severity.INFO
    assert finding.title == "The PCIe link is below its maximum while the GPU is idle"
    upstream = next(e.path for e in finding.evidence if e.text == "8 GT/s PCIe")
    assert upstream == "/sys/devices/pci0000:00/0000:00:03.0/0000:01:00.0/current_link_speed"
    assert "runs its link x16 at 8 GT/s (it can do x16 at 16 GT/s) while 3 % busy" in finding.explanation
    assert finding.fix.steps == ("Run a GPU job, then `rocmdesk diagnose` (or read current_link_speed) while it "
                                 "runs.",)


NOBLE = ('PRETTY_NAME="Ubuntu 24.04 LTS"\nNAME="Ubuntu"\nVERSION_ID="24.04"\nID=ubuntu\nID_LIKE=debian\n'
         'VERSION_CODENAME=noble\nUBUNTU_CODENAME=noble\n')


def test_cpu_x_335_rx_6700_xt_on_an_x470_board_is_limited_by_the_platform(tmp_path):
    """TheTumultuousUnicornOfDarkness/CPU-X#335: RX 6700 XT on an ASRock X470 Master SLI with a Ryzen 5 2600X (Ubuntu
    24.04); CPU-X said "PCIe Gen4x16 (current)", the kernel: "pci 0000:0c:00.0: 126.016 Gb/s available PCIe bandwidth,
    limited by 8.0 GT/s PCIe x16 link at 0000:00:03.1 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)". The
    maintainer: Zen 1 and X470 only do PCIe 3.0, so the card runs Gen3 x16 and the tool was wrong. rocmdesk must read
    the same truth (information: the platform's limit, no repair to offer). Assumed: the GPU [1002:73df] (gfx1031)
    at 03:00.0 with that log line rewritten to it, behind its switch at 01:00.0/02:00.0 whose upstream port reads
    8 GT/s x16 of 16 GT/s x16, the root port 00:03.1 at most 8 GT/s x16, ROCm 6.2.4, the GPU idle."""
    root = reporter_machine(tmp_path / "r", [Gpu(100301, 0x73DF)], rocm="6.2.4")
    sc.write(root, "/etc/os-release", NOBLE)
    behind_amd_switch(root, "0000:03:00.0", "0000:01:00.0", "0000:02:00.0",
                      link={"current_link_width": "16", "max_link_width": "16",
                            "current_link_speed": "8.0 GT/s PCIe", "max_link_speed": "16.0 GT/s PCIe"},
                      internal={"current_link_width": "16", "max_link_width": "16",
                                "current_link_speed": "16.0 GT/s PCIe", "max_link_speed": "16.0 GT/s PCIe",
                                "gpu_busy_percent": "0"})
    port = root / "sys/devices/pci0000:00/0000:00:03.1"
    port.mkdir(parents=True)
    (port / "max_link_speed").write_text("8.0 GT/s PCIe\n")
    (port / "max_link_width").write_text("16\n")
    (root / "sys/bus/pci/devices/0000:00:03.1").symlink_to("../../../devices/pci0000:00/0000:00:03.1")
    sc.kernel_log(root, "pci 0000:03:00.0: 126.016 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x16 link "
                        "at 0000:00:03.1 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)")
    findings = diagnose(root)
    assert set(findings) == {PCIE, "hsa-override-suggested"}, findings_summary(findings)
    finding = findings[PCIE][0]
    assert finding.severity is Severity.INFO
    assert finding.title == "The slot's PCIe link is slower than the GPU could use"
    assert finding.evidence[0].text.endswith("limited by 8.0 GT/s PCIe x16 link at 0000:00:03.1 (capable of 252.048 "
                                             "Gb/s with 16.0 GT/s PCIe x16 link)")
    assert "/sys/bus/pci/devices/0000:00:03.1/max_link_speed: 8 GT/s PCIe" in evidence_texts(finding)
    assert any(e.path == "/sys/devices/pci0000:00/0000:00:03.0/0000:01:00.0/current_link_speed"
               for e in finding.evidence)  # the card's link as it runs, beside the kernel's verdict
    assert "the port it hangs off (0000:00:03.1) can do at most x16 at 8 GT/s" in finding.explanation
    assert "not a fault" in finding.explanation
    assert findings["hsa-override-suggested"][0].severity is Severity.INFO  # gfx1031: the usual 10.3.0 note


# -- small-bar ----------------------------------------------------------------------------------------------------

SMALL_BAR = "small-bar"
PRO_DUO = 0x67C4  # Radeon Pro Duo (Polaris 10), two GPUs of 16 GiB per board


def test_amdgpu_78_radeon_pro_duos_left_with_256_mb_bars(tmp_path):
    """ROCm/amdgpu#78: five Radeon Pro Duo (Polaris) on a Gigabyte MZ31 with an EPYC 7551P: "a bunch of amdgpu
    0000:69:00.0: BAR 0: failed to assign [mem size 0x400000000 64bit pref]", then "BAR 0: assigned [mem
    0x2bfb0000000-0x2bfbfffffff 64bit pref]" (256 MB); rocminfo lists all 14 nodes, "everything does work, just in
    this compromised state". AMD (fxkamd): the driver tries to resize the BAR, which fails on multi-GPU systems for
    lack of PCI resources; the GPU works with the 256 MB BAR, and ROCm then disables direct CPU and peer access to
    VRAM. rocmdesk: information, the failed resize named, the firmware's Above 4G Decoding as the way. Assumed: one
    board of the five (its two GPUs at 68:00.0 and 69:00.0, 16 GiB each: "Detected VRAM RAM=16384M, BAR=256M" for
    both), the workstation's Ubuntu and ROCm 2.4 in place of the reporter's Fedora 30 and "all manor of distros"."""
    root = reporter_machine(tmp_path / "r", [Gpu(80003, PRO_DUO), Gpu(80003, PRO_DUO, pci="0000:69:00.0")],
                            rocm="2.4.0")
    without_ollama(root)
    sc.kernel_log(root, "amdgpu 0000:69:00.0: BAR 0: failed to assign [mem size 0x400000000 64bit pref]",
                  "amdgpu 0000:69:00.0: BAR 0: assigned [mem 0x2bfb0000000-0x2bfbfffffff 64bit pref]",
                  "[drm] Detected VRAM RAM=16384M, BAR=256M",
                  "amdgpu 0000:03:00.0: BAR 0: failed to assign [mem size 0x400000000 64bit pref]",
                  "[drm] Detected VRAM RAM=16384M, BAR=256M")
    finding = only(diagnose(root), SMALL_BAR)
    assert finding.severity is Severity.INFO
    texts = [e.text.split("] ", 1)[-1] for e in finding.evidence]
    assert texts.count("[drm] Detected VRAM RAM=16384M, BAR=256M") == 2
    assert "amdgpu 0000:69:00.0: BAR 0: failed to assign [mem size 0x400000000 64bit pref]" in texts
    assert ("amdgpu tried to enlarge BAR 0 to 16384 MiB on 0000:03:00.0, 0000:69:00.0, and the PCI bus had no free "
            "address range that large") in finding.explanation
    assert "peer-to-peer access to VRAM" in finding.explanation
    assert "Above 4G Decoding" in steps_of(finding)


# -- overdrive-enabled --------------------------------------------------------------------------------------------

OVERDRIVE = "overdrive-enabled"
MINT = ('NAME="Linux Mint"\nVERSION="20.1 (Ulyssa)"\nID=linuxmint\nID_LIKE=ubuntu\nVERSION_ID="20.1"\n'
        'UBUNTU_CODENAME=focal\n')


def test_amdgpu_clocks_27_vega_undervolt_crashes_until_ppfeaturemask_goes(tmp_path):
    """sibradzic/amdgpu-clocks#27: Linux Mint, 5.11 xanmod kernel, a Vega 56 flashed to 64 undervolted with
    amdgpu-clocks; with `amdgpu.ppfeaturemask=0xffffffff` in GRUB it now "immediately crashes with artifacting" at
    start-up. The only way back: boot recovery mode and remove amdgpu.ppfeaturemask=0xffffffff from GRUB, which
    stops the custom state from being applied. Assumed: the kernel release 5.11.1-xanmod1, GRUB's
    GRUB_CMDLINE_LINUX_DEFAULT="quiet splash amdgpu.ppfeaturemask=0xffffffff", amdgpu-clocks' state file with the
    OD_VDDC_CURVE undervolt and a memory clock, no ROCm installed (gfx900 then gets its own support note)."""
    root = reporter_machine(tmp_path / "r", [Gpu(90000, 0x687F, dump="vega56")], rocm=None)
    no_comfyui(root)
    sc.write(root, "/etc/os-release", MINT)
    set_kernel(root, "5.11.1-xanmod1")
    install_matching_initramfs(root, "5.11.1-xanmod1")
    sc.set_ppfeaturemask(root, "0xffffffff")
    grub = (root / "etc/default/grub").read_text().replace(
        'GRUB_CMDLINE_LINUX_DEFAULT="quiet splash"',
        'GRUB_CMDLINE_LINUX_DEFAULT="quiet splash amdgpu.ppfeaturemask=0xffffffff"')
    sc.write(root, "/etc/default/grub", grub)
    sc.write(root, "/etc/default/amdgpu-custom-state.card0", "OD_SCLK:\n7: 1630MHz\nOD_MCLK:\n3: 1100MHz\n"
                                                             "OD_VDDC_CURVE:\n2: 1630MHz 1000mV\n")
    findings = diagnose(root)
    assert set(findings) == {OVERDRIVE, "gpu-not-supported-by-rocm"}, findings_summary(findings)
    finding = findings[OVERDRIVE][0]
    assert finding.severity is Severity.INFO
    assert evidence_texts(finding)[:3] == [
        "/sys/module/amdgpu/parameters/ppfeaturemask:1: ppfeaturemask = 0xffffffff (bit 14, OverDrive, is set)",
        "/proc/cmdline:1: kernel command line has `amdgpu.ppfeaturemask=0xffffffff`",
        '/etc/default/grub:5: GRUB_CMDLINE_LINUX_DEFAULT="quiet splash amdgpu.ppfeaturemask=0xffffffff"']
    assert ("/etc/default/amdgpu-custom-state.card0: amdgpu-clocks applies this OverDrive state at boot (OD_SCLK, "
            "OD_MCLK, OD_VDDC_CURVE)") in evidence_texts(finding)
    assert "they are the first suspect" in finding.explanation
    steps = steps_of(finding)
    assert "delete `amdgpu.ppfeaturemask=0xffffffff` from GRUB_CMDLINE_LINUX_DEFAULT" in steps  # what solved it
    assert "`sudo update-grub`" in steps
    assert finding.fix.steps[0].startswith("If the GPU crashes or shows artifacts, move the custom state aside")


# -- amdgpu-not-loaded --------------------------------------------------------------------------------------------

NOT_LOADED = "amdgpu-not-loaded"
SB = "secure-boot-blocks-dkms"


def test_therock_438_azure_v710_loads_after_modprobe_and_mok(tmp_path):
    """ROCm/TheRock#438: an Azure NV24ads_v710 VM (Radeon PRO V710) set up per Microsoft's AMD GPU driver guide
    (amdgpu-dkms): "the driver is now loading after `sudo modprobe amdgpu` and enrolling MOK key", its dmesg then
    showing "[drm] amdgpu version: 6.12.12". Rebuilt before that: Secure Boot on (Azure Trusted Launch), the DKMS
    module built and signed with Ubuntu's MOK that is not enrolled, amdgpu not loaded. Assumed: Ubuntu 24.04 with
    kernel 6.8.0-1026-azure, amdgpu-dkms 1:6.12.12.60400 (ROCm 6.4.0), the V710 [1002:7461] (gfx1101) at 03:00.0
    instead of the VM's 0002:00:00.0, no refusal line in the log (none was pasted) and mokutil not recorded."""
    root = reporter_machine(tmp_path / "r", [Gpu(110001, 0x7461)], rocm="6.4.0")
    no_comfyui(root)
    kver = "6.8.0-1026-azure"
    set_kernel(root, kver)
    sc.append(root, "/var/lib/dpkg/status", sc.dpkg_entry("amdgpu-dkms", "1:6.12.12.60400-2147987.24.04", "all"))
    sc.write(root, "/var/lib/shim-signed/mok/MOK.der", b"0\x82\x03")
    sc.write(root, f"/usr/lib/modules/{kver}/updates/dkms/amdgpu.ko.zst", b"\x28\xb5\x2f\xfd")
    sc.write(root, f"/usr/lib/modules/{kver}/modules.dep",
             "updates/dkms/amdgpu.ko.zst: kernel/drivers/gpu/drm/drm_exec.ko.zst\n")
    install_matching_initramfs(root, kver)
    sc.write(root, "/var/log/kern.log", (root / "var/log/kern.log").read_text().replace(sc.KERNEL, kver))
    sc.unload_amdgpu(root)
    findings = diagnose(root)
    assert set(findings) == {NOT_LOADED, SB}, findings_summary(findings)
    not_loaded = findings[NOT_LOADED][0]
    assert not_loaded.severity is Severity.ERROR and not_loaded.subject == "0000:03:00.0"
    assert "/sys/bus/pci/devices/0000:03:00.0/driver: [1002:7461] class 0x030000: no driver bound" in \
        evidence_texts(not_loaded)
    steps = steps_of(not_loaded)
    assert steps.index("Secure Boot") < steps.index("`sudo modprobe amdgpu`")  # the reporter's two steps, in order
    sb = findings[SB][0]
    assert sb.severity is Severity.ERROR
    assert sb.title == "Secure Boot refuses the DKMS amdgpu driver, most likely because its signing key is not enrolled"
    assert "`sudo mokutil --import /var/lib/shim-signed/mok/MOK.der`" in steps_of(sb)


FOCAL = ('NAME="Ubuntu"\nVERSION="20.04.3 LTS (Focal Fossa)"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID="20.04"\n'
         'VERSION_CODENAME=focal\nUBUNTU_CODENAME=focal\n')


def test_amdgpu_115_mi200_rock_dkms_never_added_amdgpu_never_loaded(tmp_path):
    """ROCm/amdgpu#115: an MI200 (gfx90a) with ROCm 4.3; kentrussell (AMD) reads the dmesg: "amdgpu never even tries
    to load. What does dkms status return? If it returns installed ... try sudo modprobe amdgpu"; the reporter:
    `dpkg -l` has rock-dkms and rock-dkms-firmware 1:4.3-59, `dkms status` prints nothing, `modprobe amdgpu` then
    loads the kernel's own amdgpu. rocmdesk must say amdgpu is not bound, that rock-dkms has no module for this
    kernel (never "a backport of Linux 4.3": 4.3 is the ROCm release), and give the modprobe step. Assumed: an
    MI250X [1002:7408], Ubuntu 20.04 with kernel 5.4.0-81-generic and its headers, no DKMS tree at all."""
    root = reporter_machine(tmp_path / "r", [Gpu(90010, 0x7408, pci_class=0x038000)], rocm="4.3.0")
    no_comfyui(root)
    kver = "5.4.0-81-generic"
    set_kernel(root, kver)
    install_matching_initramfs(root, kver)
    sc.write(root, "/etc/os-release", FOCAL)
    (root / "usr/src" / f"linux-headers-{kver}").mkdir(parents=True)
    os.symlink(f"/usr/src/linux-headers-{kver}", root / "usr/lib/modules" / kver / "build")
    sc.append(root, "/var/lib/dpkg/status", sc.dpkg_entry("rock-dkms", "1:4.3-59", "all")
              + sc.dpkg_entry("rock-dkms-firmware", "1:4.3-59", "all"))
    sc.write(root, "/var/log/kern.log", (root / "var/log/kern.log").read_text().replace(sc.KERNEL, kver))
    sc.unload_amdgpu(root)
    findings = diagnose(root)
    assert set(findings) == {NOT_LOADED, "amdgpu-dkms-not-built"}, findings_summary(findings)
    not_loaded = findings[NOT_LOADED][0]
    assert not_loaded.severity is Severity.ERROR
    assert "`sudo modprobe amdgpu`" in steps_of(not_loaded)
    dkms = findings["amdgpu-dkms-not-built"][0]
    assert "/var/lib/dpkg/status:" in evidence_texts(dkms)[0] and "rock-dkms (1:4.3-59) installed" in \
        evidence_texts(dkms)[0]
    assert dkms.explanation.split("\n\n")[-1].startswith("rock-dkms 4.3-59 has no module for the running kernel")
    assert "backport of the Linux 4.3" not in dkms.explanation
    assert "`sudo apt purge rock-dkms rock-dkms-firmware`" in steps_of(dkms)


# -- amdgpu-missing-from-initramfs --------------------------------------------------------------------------------

MISSING = "amdgpu-missing-from-initramfs"
ENDEAVOUR = 'NAME="EndeavourOS"\nPRETTY_NAME="EndeavourOS"\nID="endeavouros"\nID_LIKE="arch"\nBUILD_ID=rolling\n'
OLD_MKINITCPIO = ("MODULES=()\nBINARIES=()\nFILES=()\n"
                  "HOOKS=(base udev autodetect modconf block filesystems keyboard fsck)\n")


def test_sddm_1744_black_login_screen_until_amdgpu_is_in_the_image(tmp_path):
    """sddm/sddm#1744 (clutwo): EndeavourOS, KDE on Wayland, RX 6900 XT, kernel 6.3.9-arch1-1: after the SDDM 0.20
    update a black screen at boot, "fixed on my end by adding amdgpu to early KMS ... my machine boots too fast and
    the gpu driver wasn't quite ready when sddm needs it". Rebuilt: the mkinitcpio image without amdgpu. rocmdesk:
    information (ROCm does not need it), with the mkinitcpio steps that fixed it. Assumed: a mkinitcpio.conf from
    before the kms hook (HOOKS without kms, MODULES=()), the `linux` preset, no ROCm installed."""
    root = reporter_machine(tmp_path / "r", [Gpu(100300, 0x73BF)], rocm=None)
    no_comfyui(root)
    kver = "6.3.9-arch1-1"
    set_kernel(root, kver)
    shutil.rmtree(root / "etc/initramfs-tools")
    (root / "usr/sbin/update-initramfs").unlink()
    for image in (root / "boot").glob("initrd.img-*"):
        image.unlink()
    sc.write(root, "/etc/os-release", ENDEAVOUR)
    install_generator(root, "mkinitcpio", kver)
    sc.write(root, "/etc/mkinitcpio.conf", OLD_MKINITCPIO)
    modprobe = {p.name: p.read_text() for p in sorted((root / "etc/modprobe.d").glob("*.conf"))}
    newest = max(p.stat().st_mtime for p in (root / "etc/modprobe.d").glob("*.conf"))
    write_image(root, image_path_for("mkinitcpio", kver), build_image(main_entries(kver, modprobe=modprobe), "zstd"),
                mtime=int(newest) + 60)
    finding = only(diagnose(root), MISSING)
    assert finding.severity is Severity.INFO and finding.subject == "/boot/initramfs-linux.img"
    assert "/boot/initramfs-linux.img: no amdgpu.ko (.ko, .ko.zst, .ko.xz) under lib/modules/6.3.9-arch1-1/ in " \
           "the image" in evidence_texts(finding)
    assert "built by mkinitcpio (/etc/mkinitcpio.conf)" in evidence_texts(finding)
    assert "the display manager before amdgpu is ready" in finding.explanation
    assert finding.fix.steps[:2] == ("Add amdgpu to the MODULES array in /etc/mkinitcpio.conf, e.g. `MODULES=(amdgpu)` "
                                     "(keep modules already listed).",
                                     "Regenerate the running kernel's initramfs once: `sudo mkinitcpio -P`.")
    assert finding.fix.action == ("initramfs-add-amdgpu",)


# -- group-not-active-in-session ----------------------------------------------------------------------------------

SESSION = "group-not-active-in-session"
EOAN = ('NAME="Ubuntu"\nVERSION="19.10 (Eoan Ermine)"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID="19.10"\n'
        'VERSION_CODENAME=eoan\nUBUNTU_CODENAME=eoan\n')


def test_legacy_1080_after_usermod_before_the_restart(tmp_path):
    """ROCm/legacy-rocm-build#1080, the second half of the thread: rocminfo fails for the user ("xeon is member of
    video group") and works as root; jankaltoun: "Add yourself to both 'video' and 'render' groups and restart your
    computers so that the changes take effect", which others confirmed. Rebuilt right after that `usermod`: /etc/group
    has the user in render, the login session still has video only. rocmdesk must not say "add the user" again but
    "log out and in (or reboot)". Assumed: Ubuntu 19.10 with kernel 5.3.0-46-generic, an RX 580 [1002:67df], ROCm 3.3,
    /dev/kfd and renderD128 root:render 0660 (systemd's rule on 19.10)."""
    root = reporter_machine(tmp_path / "r", [Gpu(80003, 0x67DF)], rocm="3.3.0")
    sc.write(root, "/etc/os-release", EOAN)
    set_kernel(root, "5.3.0-46-generic")
    install_matching_initramfs(root, "5.3.0-46-generic")
    sc.session_groups(root, [4, 24, 27, 30, sc.VIDEO_GID, 46, 100, 114, sc.UID])  # logged in before the usermod
    findings = diagnose(root)
    finding = only(findings, SESSION)
    assert finding.severity is Severity.WARNING and finding.subject == sc.USER
    texts = evidence_texts(finding)
    assert any(t.startswith("/dev/kfd:") and "render" in t for t in texts)
    assert any(t.startswith("/proc/self/status") and "Groups:" in t for t in texts)
    assert "is a member of render in /etc/group, but this login session started before that" in finding.explanation
    steps = steps_of(finding)
    assert "Log out completely and log back in (or reboot)" in steps and "usermod" not in steps


# -- item 14: every check touched here names the reports it was verified against ----------------------------------

REPORTS_TESTED = {
    PYNVML: ("pytorch/pytorch#133259", "vladmandic/sdnext#3181"),
    WSL_ENV: ("pytorch/pytorch#133259",),
    PINNED: ("MrForExample/ComfyUI-AnimateAnyone-Evolved#22",),
    VISIBLE: ("mcmonkeyprojects/SwarmUI#565",),
    PRO: ("ROCm/legacy-rocm-build#551", "ROCm/legacy-rocm-build#860"),
    STALE: ("ROCm/gpu-operator#330",),
    BLACKLIST: ("ROCm/gpu-operator#330",),
    ECC: ("ROCm/legacy-rocm-build#1886",),
    PCIE: ("ilya-zlobintsev/LACT#334", "TheTumultuousUnicornOfDarkness/CPU-X#335"),
    SMALL_BAR: ("ROCm/amdgpu#78",),
    OVERDRIVE: ("sibradzic/amdgpu-clocks#27",),
    NOT_LOADED: ("ROCm/TheRock#438", "ROCm/amdgpu#115"),
    MISSING: ("sddm/sddm#1744",),
    SESSION: ("ROCm/legacy-rocm-build#1080",),
}


@pytest.mark.parametrize("check_id", sorted(REPORTS_TESTED))
def test_metadata_lists_the_reports_tested_here(check_id):
    assert_metadata_ties(check_id, REPORTS_TESTED[check_id])


@pytest.mark.parametrize("version, base", [
    ("1:6.12.12.60401-2164967.24.04", (6, 12)), ("6.12.12-2164967.24.04", (6, 12)),
    ("5.18.2.22.40-1504718.22.04", (5, 18)), ("1:4.3-59", None), ("4.3-59", None), ("18.30-641594", None),
    ("", None), ("garbage", None)])
def test_driver_base_reads_a_linux_release_only_where_the_version_names_one(version, base):
    from rocmdesk.diagnosis.dkms import driver_base

    assert driver_base(version) == base
