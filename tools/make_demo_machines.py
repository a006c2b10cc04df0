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

import os  # noqa: E402
import shutil  # noqa: E402

from rocmdesk.host import HostRoot, RecordedRunner  # noqa: E402
from rocmdesk.report.bundle import prepare_bundle  # noqa: E402
from tests.support import scenarios as sc  # noqa: E402
from tests.support.instinct import ROCM_SMI_KFD_PROPS, write_dump  # noqa: E402
from tests.support.procs import fake_process  # noqa: E402
from tests.support.python_envs import add_gpu_process, install_torch, make_venv, site_of  # noqa: E402
from tests.support.sysfs_tree import GpuSpec, build_root  # noqa: E402

SUFFIX = ".machine.tar.gz"
CREATED = 1764625320.0  # 2025-12-01 21:42 UTC: a fixed capture time, so rebuilding gives the same bundle


# The processes of the rx7900xtx-comfyui recording (tools/make_demo.py), as this machine's /proc holds them:
# the same PIDs, names and command lines, run by the desktop user (uid 1000, "user1" once the capture redacts
# it), so the Processes tab (the recording) and the Diagnosis tab (this bundle) name the same processes.
COMFY_PID = 48213
COMFY_ARGV = [f"{sc.COMFYUI}/venv/bin/python3", "main.py", "--listen", "127.0.0.1", "--port", "8188"]
DESKTOP_PROCESSES = (  # (pid, comm, argv): DRM clients holding the render node (logind's ACL lets them)
    (2011, "gnome-shell", ["/usr/bin/gnome-shell"]),
    (2290, "Xwayland", ["/usr/bin/Xwayland", ":0", "-rootless", "-noreset", "-accessx", "-core",
                        "-auth", "/run/user/1000/.mutter-Xwaylandauth"]),
    (3120, "firefox", ["/usr/lib/firefox/firefox", "http://127.0.0.1:8188/"]),
)
# RX 7900 XTX identity files LACT's dump lacks (it saved the hwmon and pp_* files): revision C8 is what
# tells an XTX from an XT on device 744C (libdrm data/amdgpu.ids), and 24 GiB as rocm-smi reports it
XTX_REVISION = "0xc8"
XTX_VRAM_TOTAL = 25753026560
XTX_GTT_TOTAL = 32 << 30


def process_status(comm: str, pid: int, uid: int, gid: int) -> str:
    """/proc/PID/status as the kernel writes its first lines: the real, effective, saved and fs ids."""
    return (f"Name:\t{comm}\nUmask:\t0002\nState:\tS (sleeping)\nTgid:\t{pid}\nPid:\t{pid}\nPPid:\t1\n"
            f"Uid:\t{uid}\t{uid}\t{uid}\t{uid}\nGid:\t{gid}\t{gid}\t{gid}\t{gid}\n")


def rx7900xtx_comfyui(root: Path) -> Path:
    sc.clean_workstation(root)
    comfy = root / "home" / sc.USER / "ComfyUI"
    device = (root / "sys" / "bus" / "pci" / "devices" / sc.GPU_PCI).resolve()
    (device / "revision").write_text(XTX_REVISION + "\n")
    (device / "mem_info_vram_total").write_text(f"{XTX_VRAM_TOTAL}\n")
    (device / "mem_info_gtt_total").write_text(f"{XTX_GTT_TOTAL}\n")
    # a custom node pinning torch to a CUDA wheel: ComfyUI-Manager's pip install replaced the ROCm build
    sc.write(root, f"{sc.COMFYUI}/custom_nodes/ComfyUI-SUPIR/requirements.txt",
             "torch==2.5.1+cu121\n--extra-index-url https://download.pytorch.org/whl/cu121\nopen-clip-torch>=2.24.0\n"
             "omegaconf\nsafetensors\n")
    sc.write(root, f"{sc.COMFYUI}/custom_nodes/ComfyUI-SUPIR/__init__.py", "NODE_CLASS_MAPPINGS = {}\n")
    install_torch(site_of(comfy / "venv"), "cuda")
    # ComfyUI as the recording shows it: started from its folder with the venv's python3 (a symlink to the
    # base interpreter, which /proc/PID/exe names), holding /dev/kfd
    venv = f"{sc.COMFYUI}/venv"
    python3 = root / venv.lstrip("/") / "bin" / "python3"
    if not python3.is_symlink():
        python3.symlink_to("python")
    fake_process(root, COMFY_PID, comm="python3", argv=COMFY_ARGV, env={**sc.SESSION_ENV, "VIRTUAL_ENV": venv},
                 exe="/usr/bin/python3.11", fds={0: "/dev/null", 5: "/dev/kfd"})
    sc.write(root, f"/proc/{COMFY_PID}/status", process_status("python3", COMFY_PID, sc.UID, sc.UID))
    for pid, comm, argv in DESKTOP_PROCESSES:
        fake_process(root, pid, comm=comm, argv=argv, fds={0: "/dev/null", 9: "/dev/dri/renderD128"})
        sc.write(root, f"/proc/{pid}/status", process_status(comm, pid, sc.UID, sc.UID))
    # ollama's server is idle (no model loaded): it holds no GPU device, so it is no GPU process
    shutil.rmtree(root / "proc" / "2345")
    sc.remove_user_from_group(root, "render")
    sc.install_dkms_amdgpu(root)
    return root


# the PCI addresses of the mi300x-node recording (resources/demo/mi300x-node.jsonl.gz), so the Tuning tab and
# the telemetry name the same GPUs
MI300X_PCI = ("0000:05:00.0", "0000:26:00.0", "0000:46:00.0", "0000:65:00.0",
              "0000:85:00.0", "0000:a6:00.0", "0000:c6:00.0", "0000:e5:00.0")
TRAIN_PID = 51200
TRAIN_ARGV = ["/opt/venv/bin/python3", "-u", "train.py", "--config", "configs/llama-70b-fsdp.yaml"]
# The MI300X temperature limits of the recording (tools/make_demo.py MI300X_CRIT_C / MI300X_EMERGENCY_C, from
# AMD's amd-smi usage guide: slowdown = temp*_crit, shutdown = temp*_emergency), written over the generic
# tests/support/instinct.py values so the machine's hwmon and the recording agree: temp2 junction, temp3 mem
MI300X_HWMON_LIMITS_C = {"temp2_crit": 100, "temp3_crit": 95, "temp2_emergency": 110, "temp3_emergency": 105}
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
        for hwmon in (device / "hwmon").glob("hwmon*"):
            for name, celsius in MI300X_HWMON_LIMITS_C.items():
                (hwmon / name).write_text(f"{celsius * 1000}\n")
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
    # the training job of the recording: /opt/venv with a ROCm torch, one rank per GPU (PID 51200 + k on GPU k,
    # holding /dev/kfd and that GPU's render node), run by the node's user (uid 1000, "user1" in the bundle)
    make_venv(root, "opt/venv", "rocm")
    for k in range(len(MI300X_PCI)):
        pid = TRAIN_PID + k
        add_gpu_process(root, pid, "/usr/bin/python3.11", TRAIN_ARGV)
        os.symlink(f"/dev/dri/renderD{128 + k}", root / "proc" / str(pid) / "fd" / "6")
        sc.write(root, f"/proc/{pid}/comm", "pt_main_thread\n")
        sc.write(root, f"/proc/{pid}/status", process_status("pt_main_thread", pid, sc.UID, sc.UID))
    # fault 1: an RDNA3 override from a Radeon tutorial, left in the node-wide environment
    sc.append(root, "/etc/environment", 'HSA_OVERRIDE_GFX_VERSION="11.0.0"\n')
    # fault 2: the vLLM service numbers the GPUs from 1, so index 8 is out of range and it sees none
    sc.append(root, "/etc/passwd", "vllm:x:998:998:vLLM:/var/lib/vllm:/usr/sbin/nologin\n")
    sc.append(root, "/etc/group", "vllm:x:998:\n")
    sc.write(root, "/etc/systemd/system/vllm.service", VLLM_UNIT)
    return root


MACHINES = {"rx7900xtx-comfyui": rx7900xtx_comfyui, "mi300x-node": mi300x_node}
DAY = 86400.0
INSTALLED_AGE = 30 * DAY  # how long before the capture the machines were set up (every file not in DATED)
# Files whose age tells the machine's story, in seconds before the capture: the workstation's initramfs was
# built after its setup, amdgpu-dkms installed three days ago with no update-initramfs since, so the Diagnosis
# evidence reads in that order (not "image built after the module", nor files newer than the capture).
DATED = {"rx7900xtx-comfyui": {f"boot/initrd.img-{sc.KERNEL}": 20 * DAY,
                               f"usr/lib/modules/{sc.KERNEL}/updates/dkms/amdgpu.ko.zst": 3 * DAY,
                               f"usr/lib/modules/{sc.KERNEL}/modules.dep": 3 * DAY}}
PYTHON_ENVS = {"mi300x-node": ("/opt/venv",)}


def settle_mtimes(root: Path, newest: float) -> None:
    """Move every file's time by one offset so the newest is ``newest``: the tree is written at build time,
    but its files must predate the capture (CREATED), or the Diagnosis tab would show an initramfs
    "modified" a year after the recording it is shown with. One offset for all keeps their order."""
    paths = [Path(d) / n for d, dirs, files in os.walk(root) for n in (*dirs, *files)]
    latest = max(p.lstat().st_mtime for p in paths)
    for path in paths:
        st = path.lstat()
        os.utime(path, (st.st_atime + newest - latest, st.st_mtime + newest - latest), follow_symlinks=False)


def build(name: str, out_dir: Path) -> Path:
    with tempfile.TemporaryDirectory(prefix=f"rocmdesk-demo-{name}-") as tmp:
        root = MACHINES[name](Path(tmp) / "root")
        settle_mtimes(root, CREATED - INSTALLED_AGE)
        for rel, age in DATED.get(name, {}).items():
            os.utime(root / rel, (CREATED - age, CREATED - age), follow_symlinks=False)
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
