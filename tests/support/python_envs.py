"""Fake Python environments (venvs, conda envs, ComfyUI installs) laid out like real ones.

The torch builds are what pip leaves on disk: ``torch/version.py`` as PyTorch's build writes it
(pytorch/pytorch tools/generate_torch_version.py; a ROCm nightly's file verbatim apart from the values), a dist-info
folder with METADATA, and for ROCm wheels the bundled ``torch/lib/libamdhip64.so``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.support.procs import fake_process

PY = "3.11"

# The real torch/version.py of the ROCm nightly wheel torch 2.3.0.dev20240308+rocm6.0; values are substituted.
VERSION_PY_ANNOTATED = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']
__version__ = '{version}'
debug = False
cuda: Optional[str] = {cuda}
git_version = '55e93013211e3d9a52e259aee5df4f6198a3cdcc'
hip: Optional[str] = {hip}
"""

# Older builds (before the annotations) wrote the same fields without types.
VERSION_PY_OLD = """__version__ = '{version}'
debug = False
cuda = {cuda}
git_version = 'b2f8f7b8e7d7e2a2f1e4b2f8c1d0a9e8f7d6c5b4'
hip = {hip}
"""

NVIDIA_REQUIRES = [
    'nvidia-cuda-nvrtc-cu12==12.4.127; platform_system == "Linux" and platform_machine == "x86_64"',
    'nvidia-cuda-runtime-cu12==12.4.127; platform_system == "Linux" and platform_machine == "x86_64"',
    'nvidia-cudnn-cu12==9.1.0.70; platform_system == "Linux" and platform_machine == "x86_64"',
]

# kind -> (version, cuda field, hip field)
TORCH_BUILDS = {
    "rocm": ("2.5.1+rocm6.2", None, "6.2.41133-dd7f95766"),
    "rocm-old": ("2.4.1+rocm6.1", None, "6.1.40091-a8dbc0c19"),
    "cuda": ("2.5.1+cu121", "12.1", None),
    "cuda-untagged": ("2.5.1", "12.4", None),
    "cpu": ("2.5.1+cpu", None, None),
}


def _q(value: str | None) -> str:
    return "None" if value is None else f"'{value}'"


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        text = text.encode()
    path.write_bytes(text)
    return path


def dist_info(site: Path, name: str, version: str, requires: list[str] | None = None,
              summary: str = "") -> Path:
    folder = site / f"{name.replace('-', '_')}-{version}.dist-info"
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}", f"Summary: {summary or name}"]
    lines += [f"Requires-Dist: {r}" for r in requires or []]
    write(folder / "METADATA", "\n".join(lines) + "\n\n# " + name + "\n\nLong description.\n")
    write(folder / "RECORD", "")
    return folder


def install_torch(site: Path, kind: str = "rocm", version: str | None = None, *, annotated: bool = True,
                  version_py: bool = True, hip_lib: bool | None = None, requires_nvidia: bool | None = None,
                  companions: bool = True) -> None:
    """A torch build of ``kind`` (see TORCH_BUILDS) plus matching torchvision/torchaudio. Like pip, it
    first removes a torch already there (files and dist-info), so a ROCm venv can be turned into a
    CUDA one the way a bad reinstall does it."""
    default_version, cuda, hip = TORCH_BUILDS[kind]
    shutil.rmtree(site / "torch", ignore_errors=True)
    for old in site.glob("torch*.dist-info"):  # torch, torchvision, torchaudio
        if old.name.split("-", 1)[0] in ("torch", "torchvision", "torchaudio"):
            shutil.rmtree(old)
    version = version or default_version
    if version_py:
        template = VERSION_PY_ANNOTATED if annotated else VERSION_PY_OLD
        write(site / "torch" / "version.py", template.format(version=version, cuda=_q(cuda), hip=_q(hip)))
    write(site / "torch" / "__init__.py", "# torch\n")
    is_rocm = kind.startswith("rocm")
    if hip_lib if hip_lib is not None else is_rocm:
        write(site / "torch" / "lib" / "libamdhip64.so", b"\x7fELF")
    if requires_nvidia is None:
        requires_nvidia = kind == "cuda-untagged"
    dist_info(site, "torch", version, ["filelock", "typing-extensions>=4.8.0"] +
              (NVIDIA_REQUIRES if requires_nvidia else []))
    if companions:
        tag = version.split("+", 1)[1] if "+" in version else None
        dist_info(site, "torchvision", "0.20.1" + (f"+{tag}" if tag else ""))
        dist_info(site, "torchaudio", "2.5.1" + (f"+{tag}" if tag else ""))


def make_venv(root: Path, rel: str, torch: str | None = "rocm", *, py: str = PY,
              packages: dict[str, str] | None = None, conda: bool = False, **torch_kw) -> Path:
    """A venv (``pyvenv.cfg``, bin/python symlink) or a conda env (``conda-meta/``) at root/rel."""
    prefix = root / rel.strip("/")
    if conda:
        write(prefix / "conda-meta" / "history", "==> 2024-09-01 <==\n")
    else:
        write(prefix / "pyvenv.cfg", f"home = /usr/bin\ninclude-system-site-packages = false\nversion = {py}.9\n")
    (prefix / "bin").mkdir(parents=True, exist_ok=True)
    if not (prefix / "bin" / "python").is_symlink():
        os.symlink(f"/usr/bin/python{py}", prefix / "bin" / "python")
    site = prefix / "lib" / f"python{py}" / "site-packages"
    site.mkdir(parents=True, exist_ok=True)
    dist_info(site, "pip", "24.2")
    if torch:
        install_torch(site, torch, **torch_kw)
    for name, version in (packages or {}).items():
        dist_info(site, name, version)
    return prefix


def site_of(prefix: Path, py: str = PY) -> Path:
    return prefix / "lib" / f"python{py}" / "site-packages"


def make_comfyui(root: Path, rel: str = "home/alice/ComfyUI", torch: str | None = "rocm",
                 nodes: dict[str, dict[str, str]] | None = None, venv: str | None = "venv",
                 packages: dict[str, str] | None = None, **torch_kw) -> Path:
    """A ComfyUI checkout with custom nodes (``name -> {file name: text}``) and its venv."""
    comfy = root / rel.strip("/")
    write(comfy / "main.py", "import comfy.options\n")
    write(comfy / "requirements.txt", "torch\ntorchsde\ntorchvision\ntorchaudio\nnumpy>=1.25.0\n")
    (comfy / "custom_nodes").mkdir(parents=True, exist_ok=True)
    write(comfy / "custom_nodes" / "example_node.py.example", "# example\n")
    for node, files in (nodes or {}).items():
        for name, text in files.items():
            write(comfy / "custom_nodes" / node / name, text)
        write(comfy / "custom_nodes" / node / "__init__.py", "NODE_CLASS_MAPPINGS = {}\n")
    if venv:
        make_venv(comfy, venv, torch, packages=packages, **torch_kw)
    for folder in ("models/checkpoints", "output", "input"):
        (comfy / folder).mkdir(parents=True, exist_ok=True)
    return comfy


def add_gpu_process(root: Path, pid: int, interpreter: str, argv: list[str] | None = None, *,
                    device: str = "/dev/kfd", exe_link: bool = True) -> None:
    """A running process: proc/<pid>/exe link, cmdline and an fd open on a GPU device."""
    fake_process(root, pid, argv=argv or [interpreter], exe=interpreter if exe_link else None,
                 fds={0: "/dev/null", **({5: device} if device else {})})


CRYSTOOLS_REQUIREMENTS = "deepdiff\ntorch\nnumpy\nPillow>=9.5.0\npynvml\npy-cpuinfo\npyamdgpuinfo\n"


def install_healthy_comfyui(root: Path, user: str = "alice", pid: int | None = 4321) -> Path:
    """A ComfyUI with a ROCm torch venv, harmless custom nodes and (optionally) its running process."""
    comfy = make_comfyui(root, f"home/{user}/ComfyUI", "rocm", nodes={
        "ComfyUI-Manager": {"requirements.txt": "GitPython\nPyGithub\nmatrix-client==0.4.0\ntransformers\n"
                                                "huggingface-hub>0.20\ntyper\nrich\ntoml\nuv\nchardet\n"},
        "ComfyUI-KJNodes": {"requirements.txt": "pillow>=10.3.0\nscipy\ncolor-matcher\nmatplotlib\n"
                                                "huggingface_hub\nmss\nopencv-python\n"},
        "comfyui-videohelpersuite": {"pyproject.toml": '[project]\nname = "comfyui-videohelpersuite"\n'
                                                       'version = "1.4.5"\ndependencies = ["opencv-python",'
                                                       ' "imageio-ffmpeg"]\n'},
        "ComfyUI-Custom-Scripts": {"requirements.txt": "torch\ntorchvision\n"},
    })
    if pid is not None:
        python = f"/home/{user}/ComfyUI/venv/bin/python"
        add_gpu_process(root, pid, python, [python, f"/home/{user}/ComfyUI/main.py", "--listen"])
    return comfy
