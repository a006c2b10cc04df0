"""GPU programs as they really run: systemd services (their unit, drop-ins, user and groups) and GPU processes.

A variable in ~/.bashrc reaches programs started from an interactive shell only; a systemd service gets the
environment its unit gives it (``Environment=``, ``EnvironmentFile=``, drop-ins in ``<unit>.d/*.conf``), runs as its
``User=`` with that user's groups plus ``SupplementaryGroups=`` (systemd.exec(5)). ollama/ollama#6520 and #8679 (a
variable set where ``ollama serve`` or the service never reads it), NixOS/nixpkgs#332446 (set for the service only,
while the reporter started ``ollama serve`` by hand).

Units are looked for in systemd's system unit path, most specific first (systemd.unit(5)): /etc/systemd/system,
/run/systemd/system, /usr/local/lib/systemd/system, /usr/lib/systemd/system, /lib/systemd/system. A unit is a GPU
service when a process holding the GPU runs in its cgroup (/proc/PID/cgroup "…/ollama.service"), or when its name
is one of the known GPU servers.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from rocmdesk.diagnosis.env_settings import ENV_VAR_NAMES_RE, EnvSetting
from rocmdesk.diagnosis.etc_parsers import parse_env_assignments, parse_environ, systemd_environment_value
from rocmdesk.diagnosis.facts import HostFacts
from rocmdesk.diagnosis.model import SourcedLine
from rocmdesk.host import HostReadError

log = logging.getLogger(__name__)

UNIT_DIRS: tuple[str, ...] = ("/etc/systemd/system", "/run/systemd/system", "/usr/local/lib/systemd/system",
                              "/usr/lib/systemd/system", "/lib/systemd/system")
# Names of GPU servers people run as services (ollama's install script writes ollama.service; distribution packages
# of llama.cpp, LocalAI, ComfyUI and friends use these stems).
KNOWN_GPU_SERVICES = re.compile(r"^(ollama|llama[-_.]?(cpp|server)|local-?ai|comfyui|koboldcpp|vllm|tabbyapi|"
                                r"text-generation-webui|sd-webui|stable-diffusion-webui|sdnext|invokeai|open-webui)"
                                r"[-@.\w]*\.service$", re.IGNORECASE)
MAX_UNIT_FILES = 64
_CGROUP_UNIT_RE = re.compile(r"/([^/]+\.service)(?:/|$)")


@dataclass(slots=True)
class ServiceUnit:
    """A system service as systemd would start it (the merged unit file and drop-ins)."""

    name: str
    files: list[str] = field(default_factory=list)  # main unit first, then drop-ins in the order systemd applies
    env: dict[str, EnvSetting] = field(default_factory=dict)  # what the service's processes get, last wins
    user: SourcedLine | None = None
    group: SourcedLine | None = None
    supplementary: list[tuple[str, SourcedLine]] = field(default_factory=list)
    dynamic_user: SourcedLine | None = None
    exec_start: SourcedLine | None = None
    pids: list[int] = field(default_factory=list)  # GPU processes running in its cgroup

    @property
    def path(self) -> str:
        return self.files[0]

    @property
    def user_name(self) -> str:
        return self.user.text if self.user else "root"


def parse_unit(text: str, path: str, unit: ServiceUnit, read=None) -> None:
    """Apply one unit file or drop-in to ``unit`` (only [Service] keys; an empty assignment resets a list).
    ``read(path) -> str | None`` reads an EnvironmentFile= (through the host root)."""
    section = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        if section != "Service" or "=" not in line:
            continue
        key, value = (part.strip() for part in line.split("=", 1))
        where = SourcedLine(path, number, line)
        if key == "Environment":
            if not value:
                unit.env.clear()
                continue
            for name, val in systemd_environment_value(value):
                unit.env[name] = EnvSetting(name, val, path, number, unit.name)
        elif key == "EnvironmentFile" and value:
            unit.env.update(_environment_file(unit, value, read))
        elif key == "User":
            unit.user = SourcedLine(path, number, value) if value else None
        elif key == "Group":
            unit.group = SourcedLine(path, number, value) if value else None
        elif key == "SupplementaryGroups":
            if not value:
                unit.supplementary.clear()
            unit.supplementary.extend((g, where) for g in value.split())
        elif key == "DynamicUser":
            unit.dynamic_user = where if value.lower() in ("yes", "true", "1", "on") else None
        elif key == "ExecStart" and value:
            unit.exec_start = where


def _environment_file(unit: ServiceUnit, value: str, read) -> dict[str, EnvSetting]:
    path = value.lstrip("-").strip()
    text = read(path) if read and path.startswith("/") else None
    if not text:
        return {}
    return {n: EnvSetting(n, v, path, ln, unit.name) for ln, n, v in parse_env_assignments(text, export_only=False)}


def read_service(facts: HostFacts, name: str) -> ServiceUnit | None:
    """The unit ``name`` as systemd merges it: the first main file in the unit path, then every ``name.d/*.conf``
    drop-in sorted by file name (a name in an earlier folder hides the same name in later ones)."""
    main = next((f"{d}/{name}" for d in UNIT_DIRS if facts.root.is_file(f"{d}/{name}")), None)
    if main is None:
        return None
    drop_ins: dict[str, str] = {}
    for folder in UNIT_DIRS:
        for entry in facts.root.listdir(f"{folder}/{name}.d"):
            if entry.endswith(".conf") and entry not in drop_ins:
                drop_ins[entry] = f"{folder}/{name}.d/{entry}"
    unit = ServiceUnit(name)
    for path in [main, *(drop_ins[k] for k in sorted(drop_ins))]:
        text = facts.read(path)
        if text is None:
            continue
        unit.files.append(path)
        parse_unit(text, path, unit, facts.read)
    return unit if unit.files else None


def unit_of_process(facts: HostFacts, pid: int) -> str | None:
    """The system service a process runs in, from /proc/PID/cgroup ("0::/system.slice/ollama.service"); None for a
    process in a user session (a terminal, a desktop launcher) or a user service."""
    text = facts.read(f"/proc/{pid}/cgroup") or ""
    for line in text.splitlines():
        path = line.rsplit(":", 1)[-1]
        if path.startswith("/user.slice"):
            return None
        match = _CGROUP_UNIT_RE.search(path)
        if match:
            return match.group(1)
    return None


def process_env(facts: HostFacts, pid: int) -> dict[str, str] | None:
    try:
        return dict(parse_environ(facts.root.read_bytes(f"/proc/{pid}/environ")))
    except HostReadError:
        return None


@dataclass(slots=True)
class GpuPrograms:
    services: list[ServiceUnit]
    loose: list[tuple[int, str, str | None]]  # (pid, comm, cgroup unit or None) of GPU processes outside them


def gpu_programs(facts: HostFacts) -> GpuPrograms:
    """The GPU services (known names, or the unit of a process holding the GPU) and the GPU processes that run
    outside any of them. Cached on ``facts``."""
    cached = getattr(facts, "_rocmdesk_gpu_programs", None)
    if cached is not None:
        return cached
    names: list[str] = []
    for folder in UNIT_DIRS:
        for entry in facts.root.listdir(folder)[:4096]:
            if KNOWN_GPU_SERVICES.match(entry) and entry not in names:
                names.append(entry)
    loose: list[tuple[int, str, str | None]] = []
    by_pid: dict[int, str] = {}
    for pid, comm in facts.gpu_processes:
        unit = unit_of_process(facts, pid)
        if unit is not None:
            by_pid[pid] = unit
            if unit not in names:
                names.append(unit)
        else:
            loose.append((pid, comm, None))
    services = []
    for name in names[:MAX_UNIT_FILES]:
        service = read_service(facts, name)
        if service is None:
            continue
        service.pids = [pid for pid, u in by_pid.items() if u == name]
        services.append(service)
    result = GpuPrograms(services, loose)
    facts._rocmdesk_gpu_programs = result  # type: ignore[attr-defined]
    return result


def wanted(name: str) -> bool:
    return bool(ENV_VAR_NAMES_RE.match(name))
