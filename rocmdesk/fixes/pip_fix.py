"""User-level fixes in one Python environment, run as the user (never pkexec: the environment is theirs).

- ``pip-reinstall-rocm-torch ENV INDEX_URL``: ``<ENV>/bin/python -m pip install --force-reinstall torch
  [torchvision] [torchaudio] --index-url INDEX_URL`` (a PyTorch ROCm index, never --extra-index-url). The
  companions come only when the environment already has them (its dist-info folders), and torchaudio never
  from an index newer than its last release's (torch_index.reinstall_packages, the rule the diagnosis names).
- ``pip-uninstall-pynvml ENV``: ``<ENV>/bin/python -m pip uninstall -y pynvml nvidia-ml-py``.

Both save ``pip freeze`` first (and again afterwards), stream pip's output line by line, and stop the
whole process group on cancel. The two freezes give the rollback: exactly the packages the fix touched
or changed go back, each from the index its version came from (the local tag ``+rocm6.2`` / ``+cu121`` /
``+cpu`` names the PyTorch index; untagged versions come from PyPI), with ``--index-url`` only. pip runs
with no PIP_* variables and no configuration file, so a user's ``extra-index-url`` cannot add PyPI's
higher-versioned CUDA torch behind our back (Comfy-Org/comfy-cli PR #379).
"""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rocmdesk.diagnosis.python_envs import interpreter_order, list_packages, site_packages_of
from rocmdesk.diagnosis.target import DiagnosisTarget
from rocmdesk.diagnosis.torch_index import index_for_rocm_tag, reinstall_packages
from rocmdesk.fixes.guard import require_live
from rocmdesk.host import HostReadError, HostRoot
from rocmdesk.xdg_paths import state_dir

log = logging.getLogger(__name__)

PACKAGES = ("torch", "torchvision", "torchaudio")  # the most a reinstall touches
PYNVML_PACKAGES = ("pynvml", "nvidia-ml-py")
# PyTorch's ROCm wheel indexes: https://download.pytorch.org/whl/rocmX.Y (stable) and
# https://download.pytorch.org/whl/nightly/rocmX.Y (nightly), per pytorch.org's install selector.
INDEX_URL_RE = re.compile(r"https://download\.pytorch\.org/whl/(nightly/)?rocm[0-9]{1,2}\.[0-9]{1,2}(\.[0-9]{1,2})?/?",
                          re.ASCII)
PYTORCH_WHL = "https://download.pytorch.org/whl"
PYPI_INDEX = "https://pypi.org/simple"
# Local version tags PyTorch publishes per index: +rocm6.2 (also +rocm5.4.2) -> whl/rocm6.2, +rocm7.14.0 ->
# whl/rocm7.14 (only indexes that exist: torch_index.index_for_rocm_tag), +cu121 -> whl/cu121, +cpu -> whl/cpu; a
# .devYYYYMMDD version lives on the nightly index of the same tag.
ROCM_TAG_RE = re.compile(r"rocm[0-9]{1,2}(?:\.[0-9]{1,5}){1,2}", re.ASCII)
LOCAL_TAG_RE = re.compile(r"cu[0-9]{2,3}|cpu", re.ASCII)
FREEZE_LINE_RE = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)", re.ASCII)
FREEZE_TIMEOUT_S = 120.0


class PipFixError(Exception):
    """The fix cannot start; the message says why in plain words."""


def child_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment pip runs with: every PIP_* variable dropped, every pip configuration file skipped.

    pip skips ALL configuration files (global, user, site) when PIP_CONFIG_FILE is os.devnull: see
    pip/_internal/configuration.py, Configuration._load_config_files ("Skipping loading configuration files
    due to environment's PIP_CONFIG_FILE being os.devnull"); checked in pip 26.3, the venv's pip.
    """
    env = {k: v for k, v in (os.environ if base is None else base).items() if not k.upper().startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _find_python(env: str | os.PathLike[str]) -> tuple[Path, Path]:
    env_path = Path(env)
    if not env_path.is_absolute():
        raise PipFixError(f"the environment path must be absolute: {env}")
    if not (env_path / "pyvenv.cfg").is_file() and not (env_path / "conda-meta").is_dir():
        raise PipFixError(f"{env_path} is not a virtual or conda environment; rocmdesk changes only "
                          "environments, never the system's Python")
    # the same choice the diagnosis names in its steps (python_envs.interpreter_order): python3, python, then
    # python3.X (a conda env whose python/python3 links are gone keeps only bin/python3.11)
    bin_dir = env_path / "bin"
    try:
        names = os.listdir(bin_dir)
    except OSError:
        names = []
    versions = sorted({p.name[len("python"):] for p in env_path.glob("lib/python3.*") if p.is_dir()})
    for name in interpreter_order(names, versions):
        python = bin_dir / name
        if python.is_file() and os.access(python, os.X_OK):
            return env_path, python
    raise PipFixError(f"{env_path} has no Python interpreter in bin/ (python3, python or python3.X), so pip cannot "
                      "be run in it")


class _PipPlan:
    """What both pip plans share: the ``pip freeze`` taken before the fix, and the words shown first."""

    __slots__ = ()
    python: Path

    @property
    def argv(self) -> list[str]:
        raise NotImplementedError

    @property
    def freeze_argv(self) -> list[str]:
        return [str(self.python), "-m", "pip", "freeze", "--all"]

    def describe(self) -> str:
        return ("Runs as you (no administrator password):\n  " + " ".join(self.argv)
                + "\nThe current package list (pip freeze) is saved first so it can be restored.")


@dataclass(frozen=True, slots=True)
class PipReinstall(_PipPlan):
    env: Path
    index_url: str
    python: Path
    packages: tuple[str, ...] = ("torch",)
    note: str | None = None  # a companion left out, and what that means

    title = "Reinstall PyTorch for ROCm"
    run_label = "Reinstall"

    @property
    def touched(self) -> tuple[str, ...]:
        return self.packages

    @property
    def argv(self) -> list[str]:
        return [str(self.python), "-m", "pip", "install", "--force-reinstall", *self.packages,
                "--index-url", self.index_url]

    def describe(self) -> str:
        text = _PipPlan.describe(self)
        return f"{text}\nNote: {self.note}." if self.note else text


@dataclass(frozen=True, slots=True)
class PipUninstall(_PipPlan):
    """``pip-uninstall-pynvml ENV``: torch before 2.5 on ROCm crashes when pynvml is importable."""

    env: Path
    python: Path

    title = "Remove pynvml from this environment"
    run_label = "Uninstall"
    touched = PYNVML_PACKAGES

    @property
    def argv(self) -> list[str]:
        return [str(self.python), "-m", "pip", "uninstall", "-y", *PYNVML_PACKAGES]


def plan_pip_uninstall_pynvml(env: str | os.PathLike[str]) -> PipUninstall:
    env_path, python = _find_python(env)
    return PipUninstall(env_path, python)


def plan_pip_reinstall(env: str | os.PathLike[str], index_url: str) -> PipReinstall:
    """Check the environment and index; raises PipFixError with a plain reason."""
    if not Path(env).is_absolute():
        raise PipFixError(f"the environment path must be absolute: {env}")
    if not INDEX_URL_RE.fullmatch(index_url):
        raise PipFixError(f"not a PyTorch ROCm wheel index: {index_url!r}")
    env_path, python = _find_python(env)
    packages, note = reinstall_packages(installed_packages(env_path), index_name(index_url))
    return PipReinstall(env_path, index_url, python, packages, note)


def index_name(index_url: str) -> str:
    """``rocm7.2`` or ``nightly/rocm6.3`` of an accepted index URL."""
    return index_url.removeprefix(PYTORCH_WHL + "/").rstrip("/")


def installed_packages(env_path: Path) -> set[str]:
    """Normalized names of the distributions in the environment's site-packages (dist-info folders), read the
    way the diagnosis reads them; an unreadable folder counts as empty (then only torch is reinstalled)."""
    root = HostRoot("/")
    names: set[str] = set()
    try:
        for site in site_packages_of(root, str(env_path)):
            names |= set(list_packages(root, site))
    except (HostReadError, OSError) as exc:
        log.warning("cannot list the packages of %s: %s", env_path, exc)
    return names


# -- rollback ---------------------------------------------------------------------------------------------


def canonical(name: str) -> str:
    """PEP 503 name normalization (``Torch_Audio`` == ``torch-audio``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_freeze(text: str) -> dict[str, tuple[str, str]]:
    """``pip freeze`` -> {canonical name: (name, version)}; lines that are not ``name==version`` are skipped."""
    out: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        match = FREEZE_LINE_RE.fullmatch(line.strip())
        if match:
            out[canonical(match.group(1))] = (match.group(1), match.group(2))
    return out


def index_for_version(version: str) -> str | None:
    """The index a version can be installed from again, by its local tag; None when no index that exists has it
    (``no_index_reason`` says why): a rollback pins the exact version, which no other index serves."""
    public, plus, local = version.partition("+")
    if not plus:
        return PYPI_INDEX
    if ROCM_TAG_RE.fullmatch(local):
        index = index_for_rocm_tag(local)
        if index is None:
            return None
    elif LOCAL_TAG_RE.fullmatch(local):
        index = local
    else:
        return None
    nightly = "nightly/" if ".dev" in public else ""
    return f"{PYTORCH_WHL}/{nightly}{index}"


def no_index_reason(version: str) -> str:
    local = version.partition("+")[2]
    if ROCM_TAG_RE.fullmatch(local):
        return (f"there is no PyTorch index whl/{local} (a build for ROCm {local[4:]} from elsewhere, e.g. AMD's "
                "repo.radeon.com), and no other index has this exact version")
    return f"no known index for the tag +{local}"


@dataclass(frozen=True, slots=True)
class RollbackStep:
    index_url: str
    pins: tuple[str, ...]  # name==version


@dataclass(slots=True)
class PipRollback:
    """Put back what a user-level fix changed: remove what it added, reinstall what it replaced or removed."""

    python: Path
    steps: list[RollbackStep] = field(default_factory=list)
    remove: tuple[str, ...] = ()
    skipped: list[str] = field(default_factory=list)  # "name==version: why it cannot come back automatically"

    @property
    def is_empty(self) -> bool:
        return not self.steps and not self.remove

    def argvs(self) -> list[list[str]]:
        out = []
        if self.remove:
            out.append([str(self.python), "-m", "pip", "uninstall", "-y", *self.remove])
        for step in self.steps:
            out.append([str(self.python), "-m", "pip", "install", "--force-reinstall", "--no-deps",
                        "--index-url", step.index_url, *step.pins])
        return out

    def describe(self) -> str:
        if self.is_empty and not self.skipped:
            return "Nothing to restore: the package list is the same as before."
        lines = ["Restoring the previous packages runs, as you:"]
        lines += ["  " + " ".join(argv) for argv in self.argvs()]
        if self.skipped:
            lines.append("Not restored automatically (reinstall by hand):")
            lines += [f"  {item}" for item in self.skipped]
        return "\n".join(lines)


def plan_rollback(python: Path, before: str, after: str | None, touched: tuple[str, ...]) -> PipRollback:
    """The rollback from the freeze before and (when it could be taken) the freeze after a fix.

    Restored: the packages the fix works on (``touched``) that were installed before, plus every package
    whose version the fix changed or that it removed, each ``==`` its old version from the index of its
    local tag (+rocmX.Y, +cuXYZ, +cpu: download.pytorch.org/whl/<tag>; untagged: PyPI), ``--no-deps`` so
    nothing else moves. Packages the fix added are uninstalled. Without the after-freeze only ``touched``
    comes back.
    """
    old = parse_freeze(before)
    new = parse_freeze(after) if after is not None else None
    wanted = [canonical(n) for n in touched if canonical(n) in old]
    remove: tuple[str, ...] = ()
    if new is not None:
        wanted += [key for key, (_name, version) in old.items() if new.get(key, (None, None))[1] != version]
        remove = tuple(new[key][0] for key in sorted(new) if key not in old)
    groups: dict[str, list[str]] = {}
    skipped = []
    for key in dict.fromkeys(wanted):
        name, version = old[key]
        index = index_for_version(version)
        if index is None:
            skipped.append(f"{name}=={version}: {no_index_reason(version)}")
            continue
        groups.setdefault(index, []).append(f"{name}=={version}")
    steps = [RollbackStep(index, tuple(pins)) for index, pins in
             sorted(groups.items(), key=lambda item: (item[0] != PYPI_INDEX, item[0]))]
    return PipRollback(python, steps, remove, skipped)


def rollback_dir() -> Path:
    return state_dir() / "pip-rollback"


class _Streamer:
    """Runs commands one at a time, streaming lines to ``on_line``; ``cancel()`` from any thread.

    Only for the live machine: ``target`` is checked when the run is made and again before each process.
    """

    def __init__(self, on_line: Callable[[str], None] | None, target: DiagnosisTarget) -> None:
        self.target = require_live(target, "a pip fix")
        self.on_line = on_line or (lambda line: None)
        self.returncode: int | None = None
        self.cancelled = False
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def _stream(self, argv: list[str]) -> int:
        require_live(self.target, "a pip fix")
        if os.path.basename(argv[0]) in ("pkexec", "sudo", "su"):
            raise PipFixError("a user-level fix never runs as root")
        with self._lock:
            if self.cancelled:
                return -signal.SIGTERM
            self.on_line("$ " + " ".join(argv))
            self._proc = subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                text=True, bufsize=1, shell=False, start_new_session=True, env=child_env())
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self.on_line(line.rstrip("\n"))
        return self._proc.wait()

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass


class PipRun(_Streamer):
    """One fix run: freeze, the fix (streamed), freeze again; ``rollback`` is then ready. Cancellable."""

    def __init__(self, plan: PipReinstall | PipUninstall, on_line: Callable[[str], None] | None = None,
                 save_dir: Path | None = None, *, target: DiagnosisTarget) -> None:
        if os.path.basename(plan.argv[0]) in ("pkexec", "sudo", "su"):
            raise PipFixError("a user-level fix never runs as root")
        super().__init__(on_line, target)
        self.plan = plan
        self.save_dir = save_dir or rollback_dir()
        self.freeze_file: Path | None = None
        self.after_file: Path | None = None
        self.before_text: str | None = None
        self.rollback: PipRollback | None = None

    def _freeze(self) -> tuple[int, str, str]:
        require_live(self.target, "a pip fix")
        result = subprocess.run(self.plan.freeze_argv, capture_output=True, text=True, timeout=FREEZE_TIMEOUT_S,
                                shell=False, stdin=subprocess.DEVNULL, env=child_env())
        return result.returncode, result.stdout, result.stderr

    def save_freeze(self) -> Path:
        code, out, err = self._freeze()
        if code != 0:
            raise PipFixError("pip freeze failed, so there would be no way back; nothing was changed: "
                              + (err.strip().splitlines() or ["no output"])[-1])
        self.save_dir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        name = re.sub(r"[^A-Za-z0-9._-]", "_", self.plan.env.name or "env")
        path = self.save_dir / f"{stamp}-{name}.txt"
        path.write_text(f"# pip freeze of {self.plan.env} before rocmdesk: {' '.join(self.plan.argv[2:])}\n" + out,
                        encoding="utf-8")
        self.freeze_file, self.before_text = path, out
        self.on_line(f"Saved the current package list to {path}")
        return path

    def _save_after(self) -> str | None:
        try:
            code, out, _err = self._freeze()
        except (OSError, subprocess.SubprocessError) as exc:
            log.warning("pip freeze after the fix failed: %s", exc)
            return None
        if code != 0 or self.freeze_file is None:
            return None
        self.after_file = self.freeze_file.with_name(self.freeze_file.stem + "-after.txt")
        self.after_file.write_text(out, encoding="utf-8")
        return out

    def run(self) -> int:
        """Blocking; run it off the GUI thread. Returns pip's exit code (or -SIGTERM when cancelled)."""
        self.save_freeze()
        self.returncode = self._stream(self.plan.argv)
        if self.returncode == -signal.SIGTERM and self._proc is None:
            return self.returncode  # cancelled before pip started: nothing changed
        after = self._save_after()
        assert self.before_text is not None
        self.rollback = plan_rollback(self.plan.python, self.before_text, after, self.plan.touched)
        return self.returncode


class RollbackRun(_Streamer):
    """Runs a :class:`PipRollback`'s commands in order, streamed; stops at the first failure or on cancel."""

    def __init__(self, rollback: PipRollback, on_line: Callable[[str], None] | None = None, *,
                 target: DiagnosisTarget) -> None:
        super().__init__(on_line, target)
        self.rollback = rollback

    def run(self) -> int:
        for argv in self.rollback.argvs():
            self.returncode = self._stream(argv)
            if self.returncode != 0:
                return self.returncode
        self.returncode = 0
        return 0
