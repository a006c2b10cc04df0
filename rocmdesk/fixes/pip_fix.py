"""User-level fix: reinstall a ROCm build of torch into one Python environment, as the user.

``pip-reinstall-rocm-torch ENV INDEX_URL`` runs ``<ENV>/bin/python -m pip install --force-reinstall
torch torchvision torchaudio --index-url INDEX_URL`` with the user's own rights (never pkexec: the
environment belongs to the user, facts section 7). ``pip freeze`` is saved first so the previous set of
packages can be restored; output streams line by line; cancel stops the whole process group.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import platformdirs

log = logging.getLogger(__name__)

PACKAGES = ("torch", "torchvision", "torchaudio")
# PyTorch's ROCm wheel indexes: https://download.pytorch.org/whl/rocmX.Y (stable) and
# https://download.pytorch.org/whl/nightly/rocmX.Y (nightly), per pytorch.org's install selector.
INDEX_URL_RE = re.compile(r"https://download\.pytorch\.org/whl/(nightly/)?rocm[0-9]{1,2}\.[0-9]{1,2}(\.[0-9]{1,2})?/?",
                          re.ASCII)
FREEZE_TIMEOUT_S = 120.0


class PipFixError(Exception):
    """The fix cannot start; the message says why in plain words."""


@dataclass(frozen=True, slots=True)
class PipReinstall:
    env: Path
    index_url: str
    python: Path

    @property
    def argv(self) -> list[str]:
        return [str(self.python), "-m", "pip", "install", "--force-reinstall", *PACKAGES,
                "--index-url", self.index_url]

    @property
    def freeze_argv(self) -> list[str]:
        return [str(self.python), "-m", "pip", "freeze", "--all"]

    def rollback_argv(self, freeze_file: Path) -> list[str]:
        """Put back exactly the saved versions (from PyPI or the indexes they came from)."""
        return [str(self.python), "-m", "pip", "install", "--force-reinstall", "--no-deps", "-r", str(freeze_file)]

    def describe(self) -> str:
        return ("Runs as you (no administrator password):\n  " + " ".join(self.argv)
                + "\nThe current package list (pip freeze) is saved first so it can be restored.")


def plan_pip_reinstall(env: str | os.PathLike[str], index_url: str) -> PipReinstall:
    """Check the environment and index; raises PipFixError with a plain reason."""
    env_path = Path(env)
    if not env_path.is_absolute():
        raise PipFixError(f"the environment path must be absolute: {env}")
    if not INDEX_URL_RE.fullmatch(index_url):
        raise PipFixError(f"not a PyTorch ROCm wheel index: {index_url!r}")
    if not (env_path / "pyvenv.cfg").is_file() and not (env_path / "conda-meta").is_dir():
        raise PipFixError(f"{env_path} is not a virtual or conda environment; rocmdesk changes only "
                          "environments, never the system's Python")
    for name in ("bin/python3", "bin/python"):
        python = env_path / name
        if python.is_file() and os.access(python, os.X_OK):
            return PipReinstall(env_path, index_url, python)
    raise PipFixError(f"{env_path} has no bin/python")


def rollback_dir() -> Path:
    return Path(platformdirs.user_state_dir("rocmdesk")) / "pip-rollback"


class PipRun:
    """One run: freeze, then reinstall, streaming lines to ``on_line``; ``cancel()`` from any thread."""

    def __init__(self, plan: PipReinstall, on_line: Callable[[str], None] | None = None,
                 save_dir: Path | None = None) -> None:
        if os.path.basename(plan.argv[0]) in ("pkexec", "sudo", "su"):
            raise PipFixError("a user-level fix never runs as root")
        self.plan = plan
        self.on_line = on_line or (lambda line: None)
        self.save_dir = save_dir or rollback_dir()
        self.freeze_file: Path | None = None
        self.returncode: int | None = None
        self.cancelled = False
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def save_freeze(self) -> Path:
        result = subprocess.run(self.plan.freeze_argv, capture_output=True, text=True, timeout=FREEZE_TIMEOUT_S,
                                shell=False, stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            raise PipFixError("pip freeze failed, so there would be no way back; nothing was changed: "
                              + (result.stderr.strip().splitlines() or ["no output"])[-1])
        self.save_dir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        name = re.sub(r"[^A-Za-z0-9._-]", "_", self.plan.env.name or "env")
        path = self.save_dir / f"{stamp}-{name}.txt"
        path.write_text(f"# pip freeze of {self.plan.env} before rocmdesk reinstalled torch\n" + result.stdout,
                        encoding="utf-8")
        self.freeze_file = path
        self.on_line(f"Saved the current package list to {path}")
        return path

    def run(self) -> int:
        """Blocking; run it off the GUI thread. Returns pip's exit code (or -SIGTERM when cancelled)."""
        self.save_freeze()
        with self._lock:
            if self.cancelled:
                return -signal.SIGTERM
            self.on_line("$ " + " ".join(self.plan.argv))
            self._proc = subprocess.Popen(
                self.plan.argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                text=True, bufsize=1, shell=False, start_new_session=True,
                env={**os.environ, "PIP_NO_INPUT": "1", "PYTHONUNBUFFERED": "1"},
            )
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self.on_line(line.rstrip("\n"))
        self.returncode = self._proc.wait()
        return self.returncode

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
