"""The interface every telemetry source implements (sysfs, rocm-smi, amd-smi, amdsmi, demo)."""

from __future__ import annotations

import abc

from rocmdesk.telemetry.model import GpuInfo, ProcessUse, Snapshot

TOOL_TIMEOUT_S = 8.0  # one rocm-smi / amd-smi call; a hung tool is abandoned after this


class BackendError(Exception):
    """The whole backend cannot work (tool missing, driver not loaded); the reason is in words."""


class Backend(abc.ABC):
    """A source of GPU readings. Qt-free, synchronous; the sampler calls it off the GUI thread.

    ``sample()`` must not raise for a single unreadable value or a vanished GPU: such problems
    become ``unavailable`` reasons or ``Snapshot.errors``. It raises BackendError only when the
    backend as a whole cannot produce anything.
    """

    name: str = "?"
    demo: bool = False

    @abc.abstractmethod
    def discover(self) -> list[GpuInfo]:
        """The GPUs this backend sees now (re-run after a hotplug event)."""

    @abc.abstractmethod
    def sample(self) -> Snapshot:
        """One reading of every GPU found by the last ``discover()``."""

    def processes(self) -> list[ProcessUse]:
        """Per-process use; backends that cannot tell return []."""
        return []

    def close(self) -> None:  # noqa: B027  (optional hook, most backends hold nothing)
        """Release resources (library handles, threads)."""
