"""What checks know about a machine: the root's :class:`~rocmdesk.diagnosis.facts.HostFacts` plus the run's
settings (explicit Python environments, the time budget of bounded searches, notes) and the readings that are
heavier than one file (the initramfs, one telemetry sample, the Python environments), each read once.

Every fact comes from files under the root (or recorded command output), so a check behaves the same on the
live machine, a test tree and a support snapshot. Add cached facts to ``HostFacts`` rather than reading the
same file in several checks.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence

from rocmdesk.diagnosis.facts import HostFacts
from rocmdesk.diagnosis.initramfs import HostInitramfs, inspect_host
from rocmdesk.diagnosis.python_envs import Discovery, discover
from rocmdesk.host import CommandRunner, HostRoot, runner_for
from rocmdesk.telemetry.backends.sysfs import SysfsBackend
from rocmdesk.telemetry.model import GpuSample

log = logging.getLogger(__name__)


class DiagnosisContext(HostFacts):
    """The facts of one diagnosis run. ``runner`` defaults to the root's own (a snapshot replays its
    recordings); ``python_env_paths`` are host paths given with ``--python-env``."""

    WSL_SKIP_REASON = ("not applicable under WSL: there is no amdgpu sysfs tree or /dev/kfd "
                       "(the GPU is reached through /dev/dxg)")

    def __init__(self, root: HostRoot, runner: CommandRunner | None = None, python_env_paths: Sequence[str] = (),
                 time_budget_s: float = 2.0, notes: list[str] | None = None) -> None:
        super().__init__(root, runner if runner is not None else runner_for(root))
        self.python_env_paths = python_env_paths
        self.time_budget_s = time_budget_s  # for bounded searches (home folders, Python environments)
        self.notes: list[str] = notes if notes is not None else []  # what the run could not look at, in words

    @property
    def facts(self) -> HostFacts:
        """The machine facts: this object (checks written as ``ctx.facts.x`` read the same cache)."""
        return self

    @property
    def loaded_modules(self) -> set[str] | None:
        """Names from /proc/modules; None when it cannot be read."""
        return self.proc_modules

    # -- initramfs and Python environments (read once; the checks of both areas share them) ------
    @functools.cached_property
    def initramfs(self) -> HostInitramfs:
        return inspect_host(self.root, self.kernel_release)

    @functools.cached_property
    def gpu_samples(self) -> list[GpuSample]:
        """One telemetry sample of every GPU (the hardware checks read counters and link state from it)."""
        backend = SysfsBackend(self.root)
        try:
            return list(backend.sample().gpus)
        finally:
            backend.close()

    @functools.cached_property
    def python_envs(self) -> Discovery:
        return discover(self.root, self.python_env_paths, self.time_budget_s)
