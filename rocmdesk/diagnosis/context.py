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
        text = self.read("/proc/sys/kernel/osrelease")
        return text.strip() if text else None

    @functools.cached_property
    def cmdline(self) -> str | None:
        text = self.read("/proc/cmdline")
        return text.strip() if text is not None else None

    @functools.cached_property
    def cmdline_args(self) -> list[str]:
        return (self.cmdline or "").split()

    @functools.cached_property
    def loaded_modules(self) -> set[str] | None:
        """Names from /proc/modules; None when it cannot be read."""
        text = self.read("/proc/modules")
        if text is None:
            return None
        return {line.split()[0] for line in text.splitlines() if line.strip()}
