#!/usr/bin/env python3
"""Build the demo machines shipped in resources/demo/NAME.machine.tar.gz (issue 10, item 5).

A demo machine is a whole host root packed as a support bundle, so ``rocmdesk --demo`` diagnoses it with
the real engine (no canned findings) and its fixes can be walked in dry-run: the target is kind "demo",
which the fix guard (rocmdesk/fixes/guard.py) never lets reach pkexec or the helper.

``rx7900xtx-comfyui``: the Ubuntu 24.04 workstation of tests/support/scenarios.py (RX 7900 XTX, gfx1100,
sysfs from LACT's real rx7900xtx dump) with the faults people hit: a ComfyUI custom node pinned a CUDA
torch into the venv (pip replaced the ROCm build), the user was dropped from the render group, and
amdgpu-dkms was installed without rebuilding the initramfs (the image still holds the in-tree module).

The bundle is written by the real capture (``prepare_bundle``) of that root, so it holds what a customer's
bundle holds, redaction included. Run from the repository root: ``.venv/bin/python tools/make_demo_machines.py``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rocmdesk.host import HostRoot, RecordedRunner  # noqa: E402
from rocmdesk.report.bundle import prepare_bundle  # noqa: E402
from tests.support import scenarios as sc  # noqa: E402
from tests.support.python_envs import install_torch, site_of  # noqa: E402

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


MACHINES = {"rx7900xtx-comfyui": rx7900xtx_comfyui}


def build(name: str, out_dir: Path) -> Path:
    with tempfile.TemporaryDirectory(prefix=f"rocmdesk-demo-{name}-") as tmp:
        root = MACHINES[name](Path(tmp) / "root")
        plan = prepare_bundle(HostRoot(str(root)), runner=RecordedRunner(), now=CREATED)
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
