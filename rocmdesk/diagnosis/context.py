"""What checks know about a machine: facts read lazily, once, from a host root.

Every fact comes from files under the root (or recorded command output), so a check behaves the
same on the live machine, a test tree and a support snapshot. Extend this class with more cached
facts rather than reading the same file in several checks.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from rocmdesk.host import CommandRunner, HostReadError, HostRoot, runner_for

log = logging.getLogger(__name__)


@dataclass
class DiagnosisContext:
    root: HostRoot
    runner: CommandRunner | None = None
    python_env_paths: Sequence[str] = ()  # from --python-env (host paths)
    time_budget_s: float = 2.0  # for bounded searches (home folders, Python environments)
    notes: list[str] = field(default_factory=list)  # things the run could not look at, in words

    def __post_init__(self) -> None:
        if self.runner is None:
            self.runner = runner_for(self.root)

    # -- small helpers -------------------------------------------------------------------------
    def read(self, path: str) -> str | None:
        """File text, or None when missing/unreadable (checks decide what that means)."""
        try:
            return self.root.read_text(path)
        except HostReadError:
            return None

    # -- kernel ------------------------------------------------------------------------------
    @functools.cached_property
    def kernel_release(self) -> str | None:
        from rocmdesk.diagnosis.etc_parsers import kernel_release_of

        return kernel_release_of(self.read("/proc/sys/kernel/osrelease"))

    @functools.cached_property
    def cmdline(self) -> str | None:
        text = self.read("/proc/cmdline")
        return text.strip() if text is not None else None

    @functools.cached_property
    def cmdline_args(self) -> list[str]:
        return (self.cmdline or "").split()

    @property
    def loaded_modules(self) -> set[str] | None:
        """Names from /proc/modules; None when it cannot be read (read once, by ``facts``)."""
        return self.facts.proc_modules

    # -- machine facts shared by the driver/permissions/environment/display checks ----------------
    @functools.cached_property
    def facts(self):  # -> rocmdesk.diagnosis.facts.HostFacts (imported lazily: facts imports host)
        from rocmdesk.diagnosis.facts import HostFacts

        return HostFacts(self.root, self.runner, cmdline_args=self.cmdline_args,
                         kernel_release=self.kernel_release)

    @functools.cached_property
    def container(self):  # -> rocmdesk.diagnosis.container.ContainerInfo | None (read once, by ``facts``)
        """The Docker / Podman container this root is, or None on a machine (issue 16)."""
        return self.facts.container

    @property
    def is_wsl(self) -> bool:
        """Under WSL there is no amdgpu sysfs tree and no /dev/kfd: sysfs-based checks skip."""
        return self.facts.is_wsl

    WSL_SKIP_REASON = ("not applicable under WSL: there is no amdgpu sysfs tree or /dev/kfd "
                       "(the GPU is reached through /dev/dxg)")

    # -- initramfs and Python environments (read once; the checks of both areas share them) ------
    @functools.cached_property
    def initramfs(self):  # -> rocmdesk.diagnosis.initramfs.HostInitramfs
        from rocmdesk.diagnosis.initramfs import inspect_host

        return inspect_host(self.root, self.kernel_release)

    @functools.cached_property
    def gpu_samples(self) -> list:  # -> list[rocmdesk.telemetry.model.GpuSample], one reading of each GPU
        """One telemetry sample of every GPU (the hardware checks read counters and link state from it)."""
        from rocmdesk.telemetry.backends.sysfs import SysfsBackend

        backend = SysfsBackend(self.root)
        try:
            return list(backend.sample().gpus)
        finally:
            backend.close()

    @functools.cached_property
    def python_envs(self):  # -> rocmdesk.diagnosis.python_envs.Discovery
        from rocmdesk.diagnosis.python_envs import discover

        return discover(self.root, self.python_env_paths, self.time_budget_s)
