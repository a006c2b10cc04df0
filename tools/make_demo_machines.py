#!/usr/bin/env python3
"""Build the demo machines shipped in resources/demo/NAME.machine.tar.gz (issue 10, item 5).

A demo machine is a whole host root packed as a support bundle, so ``rocmdesk --demo`` diagnoses it with
the real engine (no canned findings) and its fixes can be walked in dry-run: the target is kind "demo",
which the fix guard (rocmdesk/fixes/guard.py) never lets reach pkexec or the helper.

``rx7900xtx-comfyui``: the Ubuntu 24.04 workstation of tests/support/scenarios.py (RX 7900 XTX, gfx1100,
sysfs from LACT's real rx7900xtx dump) with the faults people hit: a ComfyUI custom node pinned a CUDA
torch into the venv (pip replaced the ROCm build), the user was dropped from the render group, and
amdgpu-dkms was installed without rebuilding the initramfs (the image still holds the in-tree module).

``mi300x-node``: the same Ubuntu 24.04 base turned into the 8-GPU node of the mi300x-node recording: eight
MI300X (gfx942, KFD 90402) in the style of tests/support/instinct.py at the recording's PCI addresses, two CPU
NUMA nodes, no desktop, the training job's /opt/venv with a ROCm torch running on every GPU. Its faults are
the ones multi-user nodes collect (ROCm's GPU-isolation and HSA_OVERRIDE_GFX_VERSION semantics, see
https://rocm.docs.amd.com/en/latest/conceptual/gpu-isolation.html and ROCT's topology code): a tutorial's
``HSA_OVERRIDE_GFX_VERSION=11.0.0`` (an RDNA3 ISA) left in /etc/environment, which on gfx942 makes ROCm
load the wrong code objects; and a vLLM service whose unit numbers the GPUs from 1
(``HIP_VISIBLE_DEVICES=8`` on a node whose indices are 0-7), so the service sees no GPU at all.

The bundle is written by the real capture (``prepare_bundle``) of that root, so it holds what a customer's
bundle holds, redaction included. Run from the repository root: ``.venv/bin/python tools/make_demo_machines.py``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import shutil  # noqa: E402

from rocmdesk.host import HostRoot, RecordedRunner  # noqa: E402
from rocmdesk.report.bundle import prepare_bundle  # noqa: E402
from tests.support import scenarios as sc  # noqa: E402
from tests.support.instinct import ROCM_SMI_KFD_PROPS, write_dump  # noqa: E402
from tests.support.python_envs import add_gpu_process, install_torch, make_venv, site_of  # noqa: E402
from tests.support.sysfs_tree import GpuSpec, build_root  # noqa: E402

SUFFIX = ".machine.tar.gz"
CREATED = 1764625320.0  # 2025-12-01 21:42 UTC: a fixed capture time, so rebuilding gives the same bundle


def rx7900xtx_comfyui(root: Path) -> Path:
    sc.clean_workstation(root)
    comfy = root / "home" / sc.USER / "ComfyUI"
    # a custom node pinning torch to a CUDA wheel: ComfyUI-Manager's pip install replaced the ROCm build
    sc.write(root, f"{sc.COMFYUI}/custom_nodes/ComfyUI-SUPIR/requirements.txt",
             "torch==2.5.1+cu121\n--extra-index-url https://download.pytorch.org/whl/cu121\nopen-clip-torch>=2.24.0\n"
             "omegaconf\nsafetensors\n")
    sc.write(root, f"{sc.COMFYUI}/custom_nodes/ComfyUI-SUPIR/__init__.py", "NODE_CLASS_MAPPINGS = {}\n")
    install_torch(site_of(comfy / "venv"), "cuda")
    sc.comfyui_process(root)
    sc.remove_user_from_group(root, "render")
    sc.install_dkms_amdgpu(root)
    return root


# the PCI addresses of the mi300x-node recording (resources/demo/mi300x-node.jsonl.gz), so the Tuning tab and
# the telemetry name the same GPUs
MI300X_PCI = ("0000:05:00.0", "0000:26:00.0", "0000:46:00.0", "0000:65:00.0",
              "0000:85:00.0", "0000:a6:00.0", "0000:c6:00.0", "0000:e5:00.0")
TRAIN_PID = 51200
VLLM_UNIT = """\
[Unit]
Description=vLLM OpenAI-compatible server
After=network-online.target

[Service]
User=vllm
Group=vllm
SupplementaryGroups=render video
ExecStart=/opt/venv/bin/python -m vllm.entrypoints.openai.api_server --model /models/llama-3-8b --port 8000
Environment="HIP_VISIBLE_DEVICES=8"
Restart=on-failure

[Install]
WantedBy=multi-user.target
"""


def mi300x_node(root: Path) -> Path:
    sc.clean_workstation(root)
    # the node has no RX 7900 XTX, no desktop and no ComfyUI: rebuild /sys with eight MI300X
    shutil.rmtree(root / "sys")
    dumps = Path(tempfile.mkdtemp(prefix="rocmdesk-mi300x-"))
    try:
        specs = [GpuSpec(write_dump(dumps / f"gpu{i}", "mi300x", index=i, pci=pci), pci=pci, card=i,
                         extra_props=dict(ROCM_SMI_KFD_PROPS)) for i, pci in enumerate(MI300X_PCI)]
        build_root(root, specs, cpu_nodes=2)
    finally:
        shutil.rmtree(dumps, ignore_errors=True)
    for pci in MI300X_PCI:  # PCIe 5.0 x16, as the recording's links run
        device = (root / "sys" / "bus" / "pci" / "devices" / pci).resolve()
        for name, value in (("current_link_speed", "32.0 GT/s PCIe"), ("max_link_speed", "32.0 GT/s PCIe"),
                            ("current_link_width", "16"), ("max_link_width", "16")):
            (device / name).write_text(value + "\n")
    sc._pci_device(root, "0000:00:00.0", 0x1022, 0x14D8, 0x060000, None)  # host bridge
    sc._pci_device(root, "0000:01:00.0", 0x144D, 0xA80A, 0x010802, "nvme")
    sc.write(root, "/sys/module/amdgpu/parameters/ppfeaturemask", "0xfff7bfff\n")
    sc.write(root, f"/sys/firmware/efi/efivars/{sc.SECURE_BOOT_NAME}", bytes([6, 0, 0, 0, 1]))
    shutil.rmtree(root / "dev" / "dri")
    for i in range(len(MI300X_PCI)):
        sc.device_node(root, f"/dev/dri/renderD{128 + i}", 226, 128 + i, sc.RENDER_GID, 0o660)
        sc.device_node(root, f"/dev/dri/card{i}", 226, i, sc.VIDEO_GID, 0o660)
    for leftover in ("home/alice/ComfyUI", "home/alice/.local/share/xorg", "proc/2345",
                     "etc/systemd/system/ollama.service", "usr/lib/firmware/amdgpu"):
        path = root / leftover
        shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
    for name in ("gc_9_4_3_mec.bin", "gc_9_4_3_rlc.bin", "psp_13_0_6_sos.bin", "psp_13_0_6_ta.bin",
                 "smu_13_0_6.bin", "sdma_4_4_2.bin", "vcn_4_0_3.bin"):  # linux-firmware's MI300 files
        sc.write(root, f"/usr/lib/firmware/amdgpu/{name}.zst", b"\x28\xb5\x2f\xfd" + name.encode())
    # the training job of the recording: /opt/venv with a ROCm torch, one rank per GPU (rank 0 shown)
    make_venv(root, "opt/venv", "rocm")
    add_gpu_process(root, TRAIN_PID, "/usr/bin/python3.11",
                    ["/opt/venv/bin/python3", "-u", "train.py", "--config", "configs/llama-70b-fsdp.yaml"])
    sc.write(root, f"/proc/{TRAIN_PID}/comm", "pt_main_thread\n")
    # fault 1: an RDNA3 override from a Radeon tutorial, left in the node-wide environment
    sc.append(root, "/etc/environment", 'HSA_OVERRIDE_GFX_VERSION="11.0.0"\n')
    # fault 2: the vLLM service numbers the GPUs from 1, so index 8 is out of range and it sees none
    sc.append(root, "/etc/passwd", "vllm:x:998:998:vLLM:/var/lib/vllm:/usr/sbin/nologin\n")
    sc.append(root, "/etc/group", "vllm:x:998:\n")
    sc.write(root, "/etc/systemd/system/vllm.service", VLLM_UNIT)
    return root


MACHINES = {"rx7900xtx-comfyui": rx7900xtx_comfyui, "mi300x-node": mi300x_node}
PYTHON_ENVS = {"mi300x-node": ("/opt/venv",)}


def build(name: str, out_dir: Path) -> Path:
    with tempfile.TemporaryDirectory(prefix=f"rocmdesk-demo-{name}-") as tmp:
        root = MACHINES[name](Path(tmp) / "root")
        plan = prepare_bundle(HostRoot(str(root)), runner=RecordedRunner(), now=CREATED,
                              python_envs=PYTHON_ENVS.get(name, ()))
        out = out_dir / (name + SUFFIX)
        plan.save(out)
        return out


def main() -> int:
    out_dir = REPO / "resources" / "demo"
    for name in (sys.argv[1:] or list(MACHINES)):
        path = build(name, out_dir)
        print(f"{path.relative_to(REPO)}: {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
