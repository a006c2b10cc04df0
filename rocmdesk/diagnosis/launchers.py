"""Launchers that install PyTorch themselves: where they live and which Python environment each one manages.

StabilityMatrix, AUTOMATIC1111/Forge, SD.Next, ComfyUI Desktop/portable and Pinokio run their own ``pip install
torch`` on install, update or repair, so a ROCm wheel put into their environment by hand is replaced at the next
update (LykosAI/StabilityMatrix#1570, #1132; AUTOMATIC1111/stable-diffusion-webui#8808). Detection is by the files
each launcher writes, a bounded number of levels below the home folders; nothing is imported or run.
"""

from __future__ import annotations

import json
import logging
import re
import shlex
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 1 << 20
# The marker files the launcher check reads, relative to a home folder (``*`` is one path level). A support bundle
# must keep these for the check to answer the same there; the collector imports this (rocmdesk/report).
MARKER_FILES: tuple[str, ...] = (
    ".config/StabilityMatrix/settings.json", "*/StabilityMatrix*/settings.json",
    "*/StabilityMatrix*/Data/settings.json",
    "*/StabilityMatrix*/Packages/*/webui-user.sh",
    "*/webui-user.sh", "*/*/webui-user.sh", "*/webui.sh", "*/*/webui.sh",
    "*/installer.py", "*/*/installer.py", "*/modules/rocm.py", "*/*/modules/rocm.py",
    ".config/ComfyUI/config.json", "*/python_embeded/python.exe", "*/*/python_embeded/python.exe",
    "pinokio/config.json", "pinokio/api/*/pinokio.js", "pinokio/api/*/torch.js", ".pinokio/config.json",
)
BUNDLE_PATHS = MARKER_FILES  # the name the other checks' constants use

_TORCH_COMMAND_RE = re.compile(r"^\s*(?:export\s+)?TORCH_COMMAND=(.*)$")


@dataclass(slots=True)
class Launcher:
    kind: str  # "stabilitymatrix", "a1111", "forge", "sdnext", "comfyui-desktop", "comfyui-portable", "pinokio"
    name: str  # in words
    path: str  # host path of its folder
    markers: list[str] = field(default_factory=list)  # host paths that show it
    envs: list[str] = field(default_factory=list)  # host paths of the environments it manages
    torch_command: tuple[str, int, str] | None = None  # (file, line, value) of webui-user.sh TORCH_COMMAND
    preferred_torch: tuple[str, str] | None = None  # (package, StabilityMatrix's torch choice)


def _read(root, path: str) -> str | None:
    try:
        return root.read_text(path, MAX_FILE_BYTES)
    except OSError:
        return None


def parse_torch_command(text: str) -> tuple[int, str] | None:
    """The last uncommented ``TORCH_COMMAND=`` of a webui-user.sh: (line, value without the shell quotes)."""
    found = None
    for number, line in enumerate(text.splitlines(), start=1):
        m = _TORCH_COMMAND_RE.match(line)
        if m:
            raw = m.group(1).strip()
            try:
                words = shlex.split(raw, comments=True)
            except ValueError:
                words = [raw]
            found = (number, " ".join(words))
    return found


def parse_sm_settings(text: str) -> list[tuple[str, str | None, str | None]]:
    """StabilityMatrix settings.json -> (package name, library path, preferred torch) per installed package."""
    try:
        data = json.loads(text)
    except ValueError:
        return []
    packages = data.get("InstalledPackages") if isinstance(data, dict) else None
    out = []
    for item in packages if isinstance(packages, list) else []:
        if not isinstance(item, dict):
            continue
        name = item.get("DisplayName") or item.get("PackageName")
        torch = item.get("PreferredTorchIndex", item.get("PreferredTorchVersion"))
        out.append((str(name) if name else "?", item.get("LibraryPath") if isinstance(item.get("LibraryPath"), str)
                    else None, str(torch) if torch is not None else None))
    return out


def _venv_of(root, folder: str) -> list[str]:
    return [f"{folder}/{n}" for n in ("venv", ".venv") if root.is_file(f"{folder}/{n}/pyvenv.cfg")]


def _children(root, folder: str, limit: int = 64) -> list[str]:
    return [f"{folder}/{n}" for n in sorted(root.listdir(folder))[:limit] if not n.startswith((".", "snap"))]


def find_launchers(root, homes: list[str]) -> list[Launcher]:
    """Every launcher under ``homes`` (two levels deep at most, plus each launcher's known layout)."""
    out: list[Launcher] = []
    for home in homes:
        out += _stability_matrix(root, home)
        folders = _children(root, home)
        for folder in folders + [c for f in folders if root.is_dir(f) for c in _children(root, f, 32)]:
            if not root.is_dir(folder) or "StabilityMatrix" in folder:
                continue
            found = _webui(root, folder) or _portable(root, folder)
            if found is not None:
                out.append(found)
        out += _comfy_desktop(root, home) + _pinokio(root, home)
    return out


def _stability_matrix(root, home: str) -> list[Launcher]:
    out = []
    candidates = [f"{home}/.config/StabilityMatrix"]
    for folder in _children(root, home):
        if "StabilityMatrix" in folder.rsplit("/", 1)[-1]:
            candidates += [folder, f"{folder}/Data"]
        elif root.is_dir(folder):
            candidates += [c for c in _children(root, folder, 32) if "StabilityMatrix" in c.rsplit("/", 1)[-1]]
    for data in candidates:
        settings = f"{data}/settings.json"
        packages = f"{data}/Packages"
        if not (root.is_file(settings) or root.is_dir(packages)):
            continue
        launcher = Launcher("stabilitymatrix", "StabilityMatrix", data,
                            [p for p in (settings, packages) if root.exists(p)])
        prefs = parse_sm_settings(_read(root, settings) or "")
        for package in _children(root, packages, 32):
            launcher.envs += _venv_of(root, package)
        for name, library, torch in prefs:
            if torch is not None and launcher.preferred_torch is None:
                launcher.preferred_torch = (name, torch)
            if library:
                launcher.envs += [e for e in _venv_of(root, f"{data}/{library}") if e not in launcher.envs]
        out.append(launcher)
    return out


def _webui(root, folder: str) -> Launcher | None:
    if not root.is_file(f"{folder}/launch.py"):
        return None
    installer = f"{folder}/installer.py"
    if root.is_file(f"{folder}/modules/rocm.py") or (root.is_file(installer)
                                                      and "vladmandic" in (_read(root, installer) or "")):
        kind, name = "sdnext", "SD.Next"
    elif root.is_file(f"{folder}/webui.sh") or root.is_file(f"{folder}/webui-user.sh"):
        forge = root.is_dir(f"{folder}/modules_forge")
        kind, name = ("forge", "Stable Diffusion WebUI Forge") if forge else ("a1111", "AUTOMATIC1111 WebUI")
    else:
        return None
    launcher = Launcher(kind, name, folder, [f"{folder}/launch.py"], _venv_of(root, folder))
    user = f"{folder}/webui-user.sh"
    if root.is_file(user):
        launcher.markers.append(user)
        parsed = parse_torch_command(_read(root, user) or "")
        if parsed is not None:
            launcher.torch_command = (user, parsed[0], parsed[1])
    return launcher


def _portable(root, folder: str) -> Launcher | None:
    if root.is_dir(f"{folder}/python_embeded") and root.is_dir(f"{folder}/ComfyUI"):
        return Launcher("comfyui-portable", "ComfyUI portable (Windows build)", folder, [f"{folder}/python_embeded"])
    return None


def _comfy_desktop(root, home: str) -> list[Launcher]:
    config = f"{home}/.config/ComfyUI/config.json"
    text = _read(root, config)
    if text is None:
        return []
    launcher = Launcher("comfyui-desktop", "ComfyUI Desktop", f"{home}/.config/ComfyUI", [config])
    try:
        base = json.loads(text).get("basePath")
    except (ValueError, AttributeError):
        base = None
    if isinstance(base, str) and base.startswith("/"):
        launcher.envs = _venv_of(root, base)
    return [launcher]


def _pinokio(root, home: str) -> list[Launcher]:
    out = []
    for base in (f"{home}/pinokio", f"{home}/.pinokio"):
        api = f"{base}/api"
        if not root.is_dir(api):
            continue
        launcher = Launcher("pinokio", "Pinokio", base, [api])
        for app in _children(root, api, 64):
            if root.is_file(f"{app}/torch.js"):
                launcher.markers.append(f"{app}/torch.js")
            launcher.envs += _venv_of(root, app) + _venv_of(root, f"{app}/app")
        out.append(launcher)
    return out
