"""Find the Python environments of a host root and read what torch build each one holds.

Nothing here runs an interpreter or imports torch: a snapshot's interpreter must never run,
and importing a broken torch is exactly what crashes. Everything comes from files:
``torch/version.py`` (its ``hip``/``cuda`` fields decide first), the dist-info METADATA
(version, local tag, ``Requires-Dist: nvidia-*``) and ``torch/lib/libamdhip64.so``.

Environments are found without being told: the interpreter of running GPU processes, virtual
environments under ``home/*`` (a ``pyvenv.cfg`` a few levels deep), conda/mamba envs, ComfyUI
installs (``main.py`` beside ``custom_nodes/``) and their venvs, plus explicit paths. The walk is
bounded in depth and time and never follows a symlink (so it cannot leave the home folder).
"""

from __future__ import annotations

import logging
import os
import re
import stat
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from packaging.utils import canonicalize_name

from rocmdesk.diagnosis.etc_parsers import parse_environ
from rocmdesk.diagnosis.facts import HostFacts
from rocmdesk.host import HostReadError, HostRoot, open_regular
from rocmdesk.telemetry.proc_scan import gpu_processes, link_target

log = logging.getLogger(__name__)

MAX_DEPTH = 4
MAX_DIRS = 20_000
METADATA_MAX = 512 << 10
VERSION_PY_MAX = 64 << 10

CONDA_ROOTS = ("anaconda3", "miniconda3", "miniforge3", "mambaforge", ".conda", "micromamba")
# Folders never worth descending into while looking for environments.
SKIP_DIRS = {
    "node_modules", "__pycache__", ".git", ".hg", ".svn", "site-packages", "dist-packages", ".cache",
    ".npm", ".cargo", ".rustup", ".mozilla", ".thunderbird", ".steam", ".wine", ".var", "snap", ".nv",
    ".Trash", ".local/share/Trash", "proc", "models", "output", "input", "temp",
}
# Hidden folders that do hold environments (everything else starting with "." is skipped).
HIDDEN_OK = {".venv", ".conda", ".virtualenvs", ".local", ".pyenv", ".share", "share", ".mamba"}

_HIP_RE = re.compile(r"""^hip(?::\s*Optional\[str\])?\s*=\s*(None|'[^']*'|"[^"]*")""", re.M)
_CUDA_RE = re.compile(r"""^cuda(?::\s*Optional\[str\])?\s*=\s*(None|'[^']*'|"[^"]*")""", re.M)
_VERSION_RE = re.compile(r"""^__version__(?::\s*str)?\s*=\s*('[^']*'|"[^"]*")""", re.M)
_DIST_RE = re.compile(r"^(?P<name>[A-Za-z0-9_.]+?)-(?P<version>[^-]+?)\.(?:dist-info|egg-info)$")


@dataclass(frozen=True, slots=True)
class Line:
    """A line of a file, kept as evidence (host path, 1-based line, text)."""

    path: str
    line: int
    text: str


@dataclass(slots=True)
class TorchInfo:
    """What a site-packages folder says about its torch build."""

    site_packages: str
    version: str | None = None  # METADATA Version (or version.py __version__)
    hip: str | None = None
    cuda: str | None = None
    version_py: str | None = None  # host path, when read
    version_py_lines: list[Line] = field(default_factory=list)  # the hip/cuda/__version__ lines
    version_py_problem: str | None = None
    metadata: str | None = None  # host path of METADATA
    metadata_version_line: Line | None = None
    requires_nvidia: list[Line] = field(default_factory=list)
    bundles_hip_runtime: bool = False  # torch/lib/libamdhip64.so*
    build: str = "unknown"  # "rocm" | "cuda" | "cpu" | "unknown"
    decided_by: str = ""  # which signal decided the build, in words

    @property
    def local_tag(self) -> str | None:
        if self.version and "+" in self.version:
            return self.version.split("+", 1)[1]
        return None

    @property
    def public_version(self) -> str | None:
        return self.version.split("+", 1)[0] if self.version else None

    @property
    def rocm_version(self) -> str | None:
        """ROCm release the build targets: from the ``+rocmX.Y[.Z]`` tag, else the hip field."""
        tag = self.local_tag or ""
        match = re.match(r"rocm(\d+\.\d+(?:\.\d+)?)", tag)
        if match:
            return match.group(1)
        if self.hip:
            match = re.match(r"(\d{1,9})\.(\d{1,9})", self.hip)
            if match:
                return f"{match.group(1)}.{match.group(2)}"
        return None


@dataclass(slots=True)
class PythonEnv:
    path: str  # host path of the environment's root (prefix)
    kind: str  # "venv" | "conda" | "conda-base" | "pyenv" | "system" | "explicit"
    found_by: list[str] = field(default_factory=list)  # how it was found, in words
    site_packages: list[str] = field(default_factory=list)  # host paths
    packages: dict[str, tuple[str, str]] = field(default_factory=dict)  # normalized name -> (version, dist path)
    torch: TorchInfo | None = None
    comfyui: list[str] = field(default_factory=list)  # ComfyUI installs that run with this env
    problem: str | None = None  # why it could not be read fully
    # The interpreter that runs this environment, as found in the root (see find_interpreter); None when
    # none was found, and then no command may name one.
    interpreter: str | None = None
    is_environment: bool = False  # has pyvenv.cfg or conda-meta/: the user-level pip fix accepts it

    def version_of(self, name: str) -> str | None:
        entry = self.packages.get(canonicalize_name(name))
        return entry[0] if entry else None

    @property
    def python(self) -> str | None:
        """The interpreter to name in commands; None when the root holds none (never a guessed path)."""
        return self.interpreter

    @property
    def python_versions(self) -> list[str]:
        """``3.11`` for each ``lib/python3.11/site-packages`` of the environment, in order."""
        out = []
        for site in self.site_packages:
            match = re.search(r"/python(3\.\d+)/(?:site|dist)-packages$", site)
            if match and match.group(1) not in out:
                out.append(match.group(1))
        return out


@dataclass(slots=True)
class ComfyInstall:
    path: str  # host path of the folder holding main.py and custom_nodes/
    env: PythonEnv | None = None
    custom_nodes: list[str] = field(default_factory=list)  # host paths of node folders


@dataclass(slots=True)
class Discovery:
    envs: list[PythonEnv] = field(default_factory=list)
    comfyui: list[ComfyInstall] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what could not be looked at, in words
    elapsed_s: float = 0.0

    def env_at(self, path: str) -> PythonEnv | None:
        for env in self.envs:
            if env.path == path:
                return env
        return None


# -- torch facts from files ----------------------------------------------------------------------


def _literal(value: str) -> str | None:
    return None if value == "None" else value[1:-1]


def parse_version_py(text: str) -> tuple[dict[str, str | None], dict[str, int]]:
    """``hip``/``cuda``/``__version__`` of a torch/version.py, and the line number of each field.

    Handles the annotated form (``hip: Optional[str] = '6.0…'``) and the older unannotated one
    (``hip = '…'``). A field that is absent is absent from the result (not None).
    """
    values: dict[str, str | None] = {}
    lines: dict[str, int] = {}
    for key, regex in (("hip", _HIP_RE), ("cuda", _CUDA_RE), ("__version__", _VERSION_RE)):
        match = regex.search(text)
        if match:
            values[key] = _literal(match.group(1))
            lines[key] = text.count("\n", 0, match.start()) + 1
    return values, lines


def decide_build(hip_known: bool, hip: str | None, cuda: str | None, version: str | None,
                 bundles_hip: bool, requires_nvidia: bool) -> tuple[str, str]:
    """(build, reason): version.py fields first, then the local tag, then the other signals."""
    if hip_known or cuda is not None:
        if hip:
            return "rocm", f"torch/version.py has hip = '{hip}'"
        if cuda:
            return "cuda", f"torch/version.py has cuda = '{cuda}' and no hip"
        if hip_known:
            return "cpu", "torch/version.py has hip = None and cuda = None"
    tag = version.split("+", 1)[1].lower() if version and "+" in version else ""
    if tag.startswith("rocm") or tag.startswith("devrocm"):
        return "rocm", f"version tag +{tag}"
    if re.match(r"cu\d", tag):
        return "cuda", f"version tag +{tag}"
    if tag == "cpu" or tag.startswith("cpu"):
        return "cpu", f"version tag +{tag}"
    if bundles_hip:
        return "rocm", "torch/lib holds libamdhip64.so"
    if requires_nvidia:
        return "cuda", "METADATA requires nvidia-* CUDA packages"
    if version and not tag:
        return "cuda", f"untagged version {version}: PyPI's default Linux torch is a CUDA build"
    return "unknown", f"version {version or '?'} does not tell the build"


def read_torch(root: HostRoot, site: str, packages: dict[str, tuple[str, str]]) -> TorchInfo | None:
    """Torch facts of one site-packages folder (host path), or None when torch is absent."""
    has_pkg = root.is_dir(f"{site}/torch")
    dist = packages.get("torch")
    if not has_pkg and dist is None:
        return None
    info = TorchInfo(site)
    if dist is not None:
        info.version = dist[0]
        meta_path = f"{dist[1]}/METADATA"
        if dist[1].endswith(".egg-info"):
            meta_path = f"{dist[1]}/PKG-INFO"
        try:
            for number, line in _read_head_lines(root, meta_path, METADATA_MAX):
                if line.startswith("Version:"):
                    info.version = line.split(":", 1)[1].strip() or info.version
                    info.metadata_version_line = Line(meta_path, number, line)
                elif line.startswith("Requires-Dist:") and re.match(r"Requires-Dist:\s*nvidia[-_]", line, re.I):
                    info.requires_nvidia.append(Line(meta_path, number, line))
                elif not line.strip():
                    break  # the headers end at the first blank line; the long description follows
            info.metadata = meta_path
        except HostReadError as exc:
            log.debug("cannot read %s: %s", meta_path, exc)
    version_py = f"{site}/torch/version.py"
    hip_known = False
    try:
        text = root.read_text(version_py, VERSION_PY_MAX)
        values, numbers = parse_version_py(text)
        info.version_py = version_py
        all_lines = text.splitlines()
        for key in ("__version__", "cuda", "hip"):
            if key in numbers:
                info.version_py_lines.append(Line(version_py, numbers[key], all_lines[numbers[key] - 1]))
        hip_known = "hip" in values
        info.hip = values.get("hip")
        info.cuda = values.get("cuda")
        if not info.version and values.get("__version__"):
            info.version = values["__version__"]
        if not values:
            info.version_py_problem = "torch/version.py has no hip/cuda fields"
    except HostReadError as exc:
        info.version_py_problem = f"torch/version.py {exc}"
    info.bundles_hip_runtime = any(n.startswith("libamdhip64.so") for n in root.listdir(f"{site}/torch/lib"))
    info.build, info.decided_by = decide_build(hip_known, info.hip, info.cuda, info.version,
                                               info.bundles_hip_runtime, bool(info.requires_nvidia))
    return info


def _read_head_lines(root: HostRoot, path: str, max_bytes: int) -> Iterable[tuple[int, str]]:
    """Numbered lines of the first ``max_bytes`` of a file (METADATA can carry a long README)."""
    try:
        with open_regular(root.real_path(path)) as fh:  # a FIFO there must not block the diagnosis
            text = fh.read(max_bytes).decode("utf-8", "replace")
    except HostReadError:
        raise
    except OSError as exc:
        raise HostReadError.from_oserror(exc, path) from exc
    return enumerate(text.splitlines(), start=1)


def list_packages(root: HostRoot, site: str) -> dict[str, tuple[str, str]]:
    """Installed distributions of a site-packages folder from the dist-info folder names alone."""
    out: dict[str, tuple[str, str]] = {}
    for name in root.listdir(site):
        match = _DIST_RE.match(name)
        if match:
            key = canonicalize_name(match.group("name"))
            out.setdefault(key, (match.group("version"), f"{site}/{name}"))
    return out


def site_packages_of(root: HostRoot, prefix: str) -> list[str]:
    """``lib/python3*/site-packages`` (and lib64) of an environment prefix, host paths."""
    found: list[str] = []
    seen: set[str] = set()
    for lib in ("lib", "lib64"):
        for pydir in root.glob(f"{prefix}/{lib}", "python3*"):
            for sub in ("site-packages", "dist-packages"):
                candidate = f"{pydir}/{sub}"
                if not root.is_dir(candidate):
                    continue
                try:
                    real = os.path.realpath(root.real_path(candidate))
                except HostReadError:
                    continue
                if real not in seen:
                    seen.add(real)
                    found.append(candidate)
    return found


# -- the interpreter of an environment -------------------------------------------------------------

_INTERPRETER_NAME_RE = re.compile(r"python(?:3(?:\.\d+)?)?")


def interpreter_order(names: Iterable[str], versions: Sequence[str] = (), system: bool = False) -> list[str]:
    """The interpreter names of a ``bin`` folder, best first, as the real layouts provide them.

    venv (``python -m venv``) links ``python``, ``python3`` and ``python3.X``; conda and mamba envs ship
    ``python3.X`` and link ``python``/``python3`` to it (an env can lose the links); pyenv versions hold
    all three; the system's ``/usr/bin`` has ``python3`` and ``python3.X`` and ``python`` only with
    python-is-python3 (on old systems ``python`` is Python 2, so there ``python3`` comes first and
    ``python`` never). ``python3.X-config`` and other tools are not interpreters.
    """
    present = [n for n in names if _INTERPRETER_NAME_RE.fullmatch(n)]
    generic = ["python3"] if system else ["python3", "python"]
    exact = [f"python{v}" for v in versions]
    others = sorted((n for n in present if n.startswith("python3.") and n not in exact),
                    key=lambda n: tuple(int(x) for x in n[len("python"):].split(".")), reverse=True)
    order = [*generic, *exact, *others] if not system else [*exact, *generic, *others]
    return [n for n in dict.fromkeys(order) if n in present]


def _interpreter_present(root: HostRoot, path: str) -> bool:
    """The file, or a link named like it, is in the root. A link counts even when its target is not in
    the root: a venv's bin/python points at the base interpreter, which a support snapshot does not hold."""
    return root.readlink(path) is not None or root.is_file(path)


def find_interpreter(root: HostRoot, env: PythonEnv, running: Sequence[str] = ()) -> str | None:
    """The interpreter of ``env`` that exists in the root: one a running process of the environment was
    started from (``running``, from /proc/<pid>/exe or an absolute argv[0]: proof it exists), else the
    best of ``<prefix>/bin`` (:func:`interpreter_order`). None when the root holds none."""
    bin_dir = "/usr/bin" if env.kind == "system" else f"{env.path}/bin"
    for path in running:
        if path.rsplit("/", 1)[0] == bin_dir and _INTERPRETER_NAME_RE.fullmatch(path.rsplit("/", 1)[-1]):
            return path
    names = [n for n in ("python3", "python") if _interpreter_present(root, f"{bin_dir}/{n}")]
    listed = root.listdir(bin_dir)
    for name in interpreter_order({*names, *listed}, env.python_versions, system=env.kind == "system"):
        if _interpreter_present(root, f"{bin_dir}/{name}"):
            return f"{bin_dir}/{name}"
    return None


def read_env(root: HostRoot, prefix: str, kind: str, found_by: str) -> PythonEnv:
    env = PythonEnv(prefix, kind, [found_by])
    env.is_environment = _is_venv(root, prefix) or _is_conda(root, prefix)
    env.site_packages = site_packages_of(root, prefix)
    if kind == "system":
        for extra in ("/usr/lib/python3/dist-packages", "/usr/local/lib/python3/dist-packages"):
            if root.is_dir(extra):
                env.site_packages.append(extra)
        for pydir in root.glob("/usr/local/lib", "python3*"):
            if root.is_dir(f"{pydir}/dist-packages"):
                env.site_packages.append(f"{pydir}/dist-packages")
    if not env.site_packages:
        env.problem = "no lib/python3*/site-packages folder"
        return env
    for site in env.site_packages:
        packages = list_packages(root, site)
        for key, value in packages.items():
            env.packages.setdefault(key, value)
        if env.torch is None:
            env.torch = read_torch(root, site, packages)
    return env


# -- discovery -----------------------------------------------------------------------------------


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + max(0.0, seconds)
        self.hit = False

    def expired(self) -> bool:
        if time.monotonic() > self.end:
            self.hit = True
        return self.hit


def _is_venv(root: HostRoot, path: str) -> bool:
    return root.is_file(f"{path}/pyvenv.cfg")


def _is_conda(root: HostRoot, path: str) -> bool:
    return root.is_dir(f"{path}/conda-meta")


def _is_comfyui(entries: set[str], path: str, root: HostRoot) -> bool:
    return "main.py" in entries and "custom_nodes" in entries and root.is_dir(f"{path}/custom_nodes")


def prefix_of_interpreter(root: HostRoot, interpreter: str) -> tuple[str, str] | None:
    """(environment prefix, kind) for an interpreter path such as ``/home/u/venv/bin/python3``."""
    if not interpreter.startswith("/"):
        return None
    parent = interpreter.rsplit("/", 1)[0]
    if not parent.endswith("/bin"):
        return None
    prefix = parent[: -len("/bin")] or "/"
    if _is_venv(root, prefix):
        return prefix, "venv"
    if _is_conda(root, prefix):
        return prefix, "conda"
    if prefix in ("/usr", "/usr/local", "/"):
        return "/usr", "system"
    if re.search(r"/\.pyenv/versions/[^/]+$", prefix):
        return prefix, "pyenv"  # a pyenv-built CPython: a whole installation, neither venv nor conda
    if site_packages_of(root, prefix):
        return prefix, "venv"
    return None


def gpu_process_interpreters(root: HostRoot, deadline: _Deadline) -> list[tuple[int, str, list[str]]]:
    """(pid, interpreter path, argv) of running Python processes holding /dev/kfd or a render node."""
    out = []
    for pid, _comm in gpu_processes(root):  # the one bounded scan of /proc (telemetry.proc_scan)
        if deadline.expired():
            break
        exe = link_target(root, f"/proc/{pid}/exe")
        argv: list[str] = []
        cmdline = None
        try:
            cmdline = root.read_bytes(f"/proc/{pid}/cmdline", 64 << 10)
        except HostReadError:
            pass
        if cmdline:
            argv = [a.decode("utf-8", "replace") for a in cmdline.split(b"\x00") if a]
        if exe and exe.endswith(" (deleted)"):
            exe = exe[: -len(" (deleted)")]
        launched = argv[0] if argv else ""
        if not any(_is_python(p) for p in (exe or "", launched)):
            continue
        out.append((pid, _process_interpreter(root, pid, exe, launched), argv))
    return out


def _is_python(path: str) -> bool:
    return bool(re.match(r"python[0-9.]*$", path.rsplit("/", 1)[-1]))


def _process_interpreter(root: HostRoot, pid: int, exe: str | None, launched: str) -> str:
    """The interpreter path that names the process' environment.

    /proc/<pid>/exe is the *resolved* binary: a venv's bin/python is a symlink to the base
    interpreter, so exe says /usr/bin/python3.11 for every venv. What was launched (argv[0]) or the
    VIRTUAL_ENV / CONDA_PREFIX of the process' environment keep the venv.
    """
    if launched.startswith("/") and _is_python(launched):
        return launched
    try:
        environ = dict(parse_environ(root.read_bytes(f"/proc/{pid}/environ", 1 << 20)))
    except HostReadError:
        environ = {}
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = environ.get(var, "").rstrip("/")
        if prefix.startswith("/") and (_is_venv(root, prefix) or _is_conda(root, prefix)):
            return f"{prefix}/bin/python"
    return exe or launched


def _walk_home(root: HostRoot, home: str, deadline: _Deadline, max_depth: int,
               counter: list[int]) -> Iterable[tuple[str, str]]:
    """Yield (kind, host path) for venvs, conda prefixes and ComfyUI installs under one home.

    Uses lstat-only scandir on the analyst side; a symlinked folder is followed only when it
    resolves (inside the root) to a folder of the same home, so the walk never leaves it.
    """
    stack: list[tuple[str, int]] = [(home, 0)]
    visited: set[str] = set()
    while stack:
        path, depth = stack.pop()
        if deadline.expired() or counter[0] >= MAX_DIRS:
            return
        if path in visited:
            continue
        visited.add(path)
        counter[0] += 1
        try:
            with os.scandir(root.join(path)) as it:
                entries = {e.name: e for e in it}
        except OSError:
            continue
        names = set(entries)
        if "pyvenv.cfg" in names:
            yield "venv", path
            continue  # an environment's insides hold no other environment
        if "conda-meta" in names and _is_dir_entry(entries["conda-meta"]):
            yield "conda", path
            envs = entries.get("envs")
            if envs is not None and _is_dir_entry(envs):
                stack.append((f"{path}/envs", depth + 1 if depth + 1 <= max_depth else max_depth))
            continue
        if "main.py" in names and "custom_nodes" in names and _is_dir_entry(entries["custom_nodes"]):
            yield "comfyui", path
        if depth >= max_depth:
            continue
        for name in sorted(names, reverse=True):
            entry = entries[name]
            if name in SKIP_DIRS or (name.startswith(".") and name not in HIDDEN_OK):
                continue
            if name == "custom_nodes":
                continue  # node folders hold code, not environments; listed separately
            if _is_dir_entry(entry):
                stack.append((f"{path}/{name}", depth + 1))
            elif entry.is_symlink():
                target = _link_inside(root, f"{path}/{name}", home)
                if target is not None:
                    stack.append((target, depth + 1))


def _link_inside(root: HostRoot, host_path: str, home: str) -> str | None:
    """The folder a symlink points to, resolved inside the root, when it stays in ``home``."""
    try:
        target = root.resolve_host_path(host_path)
    except HostReadError:
        return None
    if not target.startswith(home + "/") or not root.is_dir(target):
        return None
    return target


def _is_dir_entry(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def custom_nodes_of(root: HostRoot, comfy: str) -> list[str]:
    out = []
    for name in root.listdir(f"{comfy}/custom_nodes"):
        path = f"{comfy}/custom_nodes/{name}"
        if name.startswith((".", "__")) or name.endswith(".disabled"):
            continue
        try:
            st = os.lstat(root.join(path))
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            out.append(path)
    return out


def discover(root: HostRoot, explicit: Sequence[str] = (), time_budget_s: float = 2.0,
             max_depth: int = MAX_DEPTH) -> Discovery:
    """Every Python environment and ComfyUI install of a host root, within a time budget."""
    start = time.monotonic()
    deadline = _Deadline(time_budget_s)
    result = Discovery()
    by_path: dict[str, PythonEnv] = {}

    def add(prefix: str, kind: str, how: str) -> PythonEnv | None:
        prefix = prefix.rstrip("/") or "/"
        if prefix in by_path:
            if how not in by_path[prefix].found_by:
                by_path[prefix].found_by.append(how)
            return by_path[prefix]
        env = read_env(root, prefix, kind, how)
        by_path[prefix] = env
        result.envs.append(env)
        return env

    for path in explicit:
        host = "/" + path.strip("/")
        is_interpreter = root.readlink(host) is not None or root.is_file(host)  # bin/python is usually a link
        if is_interpreter and host.rsplit("/", 1)[-1].startswith("python"):
            found = prefix_of_interpreter(root, host)
            if found:
                add(found[0], found[1], f"--python-env {path}")
                continue
        if not root.is_dir(host):
            result.notes.append(f"--python-env {path}: no such folder")
            continue
        if root.is_file(f"{host}/main.py") and root.is_dir(f"{host}/custom_nodes"):
            result.comfyui.append(ComfyInstall(host))
            continue
        kind = "venv" if _is_venv(root, host) else "conda" if _is_conda(root, host) else "explicit"
        add(host, kind, f"--python-env {path}")

    comfy_of_process: dict[str, PythonEnv] = {}
    running: dict[str, list[str]] = {}  # prefix -> interpreters its processes were started from
    for pid, interpreter, argv in gpu_process_interpreters(root, deadline):
        found = prefix_of_interpreter(root, interpreter)
        if not found:
            result.notes.append(f"process {pid} runs {interpreter}: its environment was not found")
            continue
        env = add(found[0], found[1], f"running GPU process {pid} ({interpreter})")
        # what the process was started from exists (it runs); a path made up from VIRTUAL_ENV does not count
        exe = (link_target(root, f"/proc/{pid}/exe") or "").removesuffix(" (deleted)")
        started = [p for p in (argv[0] if argv else "", exe) if p.startswith("/") and _is_python(p)]
        if env is not None:
            running.setdefault(env.path, []).extend(p for p in started if p not in running.get(env.path, []))
        for arg in argv[1:3]:
            if arg.endswith("/main.py") and arg.startswith("/") and env is not None:
                comfy_of_process[arg[: -len("/main.py")]] = env

    counter = [0]
    for user in root.listdir("/home"):
        home = f"/home/{user}"
        if deadline.expired():
            break
        if not root.is_dir(home) or root.readlink(home) is not None:
            continue
        for conda_root in CONDA_ROOTS:
            base = f"{home}/{conda_root}"
            if root.readlink(base) is not None:
                continue
            if _is_conda(root, base):
                add(base, "conda-base", f"conda base {base}")
            for name in root.listdir(f"{base}/envs"):
                prefix = f"{base}/envs/{name}"
                if root.readlink(prefix) is None and (_is_conda(root, prefix) or site_packages_of(root, prefix)):
                    add(prefix, "conda", f"conda env {prefix}")
        for kind, path in _walk_home(root, home, deadline, max_depth, counter):
            if kind == "venv":
                add(path, "venv", f"pyvenv.cfg in {path}")
            elif kind == "conda":
                add(path, "conda-base" if root.is_dir(f"{path}/envs") else "conda", f"conda prefix {path}")
            elif kind == "comfyui" and all(c.path != path for c in result.comfyui):
                result.comfyui.append(ComfyInstall(path))
    if counter[0] >= MAX_DIRS:
        result.notes.append(f"stopped looking for Python environments after {MAX_DIRS} folders")

    for comfy in result.comfyui:
        comfy.custom_nodes = custom_nodes_of(root, comfy.path)
        env = comfy_of_process.get(comfy.path)
        if env is None:
            parent = comfy.path.rsplit("/", 1)[0] or "/"
            for candidate in (f"{comfy.path}/venv", f"{comfy.path}/.venv", f"{parent}/venv", f"{parent}/.venv"):
                if root.readlink(candidate) is None and (_is_venv(root, candidate) or
                                                         site_packages_of(root, candidate)):
                    env = add(candidate, "venv", f"venv of ComfyUI {comfy.path}")
                    break
        if env is None:
            result.notes.append(f"ComfyUI at {comfy.path}: no venv beside it and no running process; "
                                "pass its environment with --python-env")
        else:
            comfy.env = env
            if comfy.path not in env.comfyui:
                env.comfyui.append(comfy.path)

    for env in result.envs:
        env.interpreter = find_interpreter(root, env, running.get(env.path, ()))

    if deadline.hit:
        result.notes.append(f"the search for Python environments stopped after {time_budget_s:g} s; "
                            "pass environments with --python-env")
    result.elapsed_s = time.monotonic() - start
    return result


# -- which GPUs the machine has (PCI vendors, KFD gfx targets) --------------------------------------


@dataclass(slots=True)
class MachineGpus:
    readable: bool  # False when the root has no /sys/bus/pci/devices (WSL, partial snapshots)
    amd: list[str] = field(default_factory=list)  # host paths of PCI device folders
    nvidia: list[str] = field(default_factory=list)
    gfx_targets: list[str] = field(default_factory=list)  # from KFD topology, e.g. "gfx1100"


def machine_gpus(root: HostRoot, facts: HostFacts | None = None) -> MachineGpus:
    """The machine's GPUs as the diagnosis' shared :class:`~rocmdesk.diagnosis.facts.HostFacts`
    sees them (one definition of "a GPU" for every check); pass ``facts`` to reuse its cache."""
    facts = facts if facts is not None else HostFacts(root)
    devices = facts.pci_devices or []
    gpus = MachineGpus(readable=bool(devices))
    gpus.amd = [d.path for d in devices if d.is_amd_gpu]
    gpus.nvidia = [d.path for d in devices if d.is_nvidia_gpu]
    for node in facts.kfd_gpu_nodes:
        target = node.gfx.target if node.gfx and node.gfx.minor < 16 and node.gfx.step < 16 else None
        if target and target not in gpus.gfx_targets:
            gpus.gfx_targets.append(target)
    return gpus
