"""GPU-related environment variables from every place that sets them: this session, the container's main
process, /etc/environment, shell start-up files, systemd units and drop-ins (with EnvironmentFile=), and the
processes that hold the GPU open."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from rocmdesk.diagnosis.etc_parsers import parse_env_assignments, parse_environ, parse_systemd_environment
from rocmdesk.host import HostReadError, HostRoot

ENV_VAR_NAMES_RE = re.compile(
    r"^(HSA_OVERRIDE_GFX_VERSION(?:_\d+)?|ROCR_VISIBLE_DEVICES|HIP_VISIBLE_DEVICES|CUDA_VISIBLE_DEVICES"
    r"|GPU_DEVICE_ORDINAL)$"
)
CONTAINER_MAIN_SCOPE = "the container's main process (PID 1)"
SHELL_FILES: tuple[str, ...] = (".profile", ".bash_profile", ".bashrc", ".zshrc", ".zprofile")


@dataclass(frozen=True, slots=True)
class EnvSetting:
    """An environment variable as set by one source (a process, a file, a systemd unit)."""

    name: str
    value: str
    path: str  # host path of the file that sets it ("/proc/1234/environ", "/etc/environment")
    line: int | None
    scope: str  # "this session", "python3 process 1234", "/etc/environment", "ollama.service" (no parentheses:
    # renderers put a finding's subject in parentheses, so a scope with its own would nest)

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path


def collect(root: HostRoot, homes: Iterable[str], in_container: bool, gpu_processes: Iterable[tuple[int, str]]
            ) -> list[EnvSetting]:
    """GPU-related environment variables from every place that sets them (systemd.exec(5) Environment=, pam_env(8)
    /etc/environment)."""
    out: list[EnvSetting] = []
    out.extend(_process_env(root, "/proc/self/environ", "this session"))
    if in_container:  # what `-e` / `environment:` gave the container's main process
        out.extend(_process_env(root, "/proc/1/environ", CONTAINER_MAIN_SCOPE))
    text = root.try_read_text("/etc/environment")
    if text:
        out.extend(EnvSetting(n, v, "/etc/environment", ln, "/etc/environment")
                   for ln, n, v in parse_env_assignments(text, export_only=False) if _wanted(n))
    for home in homes:
        for name in SHELL_FILES:
            path = f"{home}/{name}"
            text = root.try_read_text(path)
            if text:
                out.extend(EnvSetting(n, v, path, ln, path)
                           for ln, n, v in parse_env_assignments(text, export_only=True) if _wanted(n))
        out.extend(_unit_env(root, f"{home}/.config/systemd/user"))
    out.extend(_unit_env(root, "/etc/systemd/system"))
    for pid, comm in gpu_processes:
        out.extend(_process_env(root, f"/proc/{pid}/environ", f"{comm} process {pid}"))
    return out


def _process_env(root: HostRoot, path: str, scope: str) -> list[EnvSetting]:
    try:
        data = root.read_bytes(path)
    except HostReadError:
        return []
    return [EnvSetting(n, v, path, None, scope) for n, v in parse_environ(data) if _wanted(n)]


def _unit_env(root: HostRoot, folder: str) -> list[EnvSetting]:
    out: list[EnvSetting] = []
    files = [f"{folder}/{n}" for n in root.listdir(folder) if n.endswith(".service")]
    for name in root.listdir(folder):
        if name.endswith(".service.d"):
            drop_ins = root.listdir(f"{folder}/{name}")
            files.extend(f"{folder}/{name}/{c}" for c in drop_ins if c.endswith(".conf"))
    for path in files:
        if not root.is_file(path):
            continue
        text = root.try_read_text(path)
        if not text:
            continue
        unit = path.rsplit("/", 2)[-2][:-2] if path.endswith(".conf") else path.rsplit("/", 1)[-1]
        assignments, env_files = parse_systemd_environment(text)
        out.extend(EnvSetting(n, v, path, ln, unit) for ln, n, v in assignments if _wanted(n))
        for _ln, env_path in env_files:
            env_path = env_path.lstrip("-")
            env_text = root.try_read_text(env_path)
            if env_text:
                out.extend(EnvSetting(n, v, env_path, ln2, unit)
                           for ln2, n, v in parse_env_assignments(env_text, export_only=False) if _wanted(n))
    return out


def _wanted(name: str) -> bool:
    return bool(ENV_VAR_NAMES_RE.match(name))
