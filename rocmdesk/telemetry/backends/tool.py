"""Common ground of the backends that run a vendor CLI (rocm-smi, amd-smi).

A CLI is slow (≈180 ms per rocm-smi query, measured with Debian 12's rocm-smi 5.2.3), can hang, exits 0 when
it fails and numbers GPUs in its own order, so: one runner call per reading with a timeout, failures turned
into BackendError with words a user understands, and every GPU identified by PCI address.
"""

from __future__ import annotations

import abc
import logging
import time
from collections.abc import Sequence

from rocmdesk.host import CommandResult, CommandRunner, HostRoot, runner_for
from rocmdesk.telemetry.backends.base import TOOL_TIMEOUT_S, Backend, BackendError
from rocmdesk.telemetry.model import GpuInfo, Snapshot
from rocmdesk.telemetry.smi_parsers import ToolGpu, ToolOutputError

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = TOOL_TIMEOUT_S


class ToolBackend(Backend):
    """A backend fed by one command-line tool run through a CommandRunner."""

    tool: str = "?"

    def __init__(self, root: HostRoot | None = None, runner: CommandRunner | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S, path: str | None = None) -> None:
        self.root = root if root is not None else HostRoot("/")
        self.runner = runner if runner is not None else runner_for(self.root)
        self.timeout_s = timeout_s
        found = path or self.runner.which(self.tool)
        if not found:
            raise BackendError(f"{self.tool} is not installed")
        self.path: str = found
        self.name = self.tool
        self._infos: dict[str, GpuInfo] = {}

    # -- to implement ------------------------------------------------------------------------
    @abc.abstractmethod
    def read(self) -> list[ToolGpu]:
        """Run the tool once and parse it; raises BackendError."""

    # -- helpers -----------------------------------------------------------------------------
    def run_tool(self, args: Sequence[str]) -> CommandResult:
        """Run the tool with ``args``; a hang or a failure to start becomes BackendError."""
        result = self.runner.run([self.path, *args], timeout=self.timeout_s)
        if result.timed_out:
            raise BackendError(f"{self.tool} did not answer within {self.timeout_s:g} s (killed)")
        if result.error:
            raise BackendError(f"{self.tool} could not run: {result.error}")
        return result

    @staticmethod
    def parse_or_raise(parse, result: CommandResult):
        """Apply a pure parser; its ToolOutputError becomes BackendError. Exit codes are ignored."""
        try:
            return parse(result.stdout, result.stderr)
        except ToolOutputError as exc:
            raise BackendError(str(exc)) from None

    def info_for(self, gpu: ToolGpu) -> GpuInfo:
        """GpuInfo for a tool's GPU: DRM card looked up in the root by PCI address when possible."""
        key = gpu.pci or f"{self.tool}:{gpu.tool_id}"
        known = self._infos.get(key)
        if known is not None:
            return known
        card = None
        if gpu.pci:
            card = next((n for n in self.root.listdir(f"/sys/bus/pci/devices/{gpu.pci}/drm")
                         if n.startswith("card") and n[4:].isdigit()), None)
        name = gpu.name or (f"AMD GPU 1002:{gpu.device_id:04x}" if gpu.device_id is not None else "AMD GPU")
        info = GpuInfo(card=card or f"{self.tool} {gpu.tool_id}",
                       pci=gpu.pci or f"unknown ({self.tool} {gpu.tool_id})",
                       name=name, device_id=gpu.device_id, vbios=gpu.vbios, unique_id=gpu.unique_id,
                       vram_total_bytes=gpu.metrics.get("vram_total_bytes"), driver="amdgpu")
        self._infos[key] = info
        return info

    # -- Backend -------------------------------------------------------------------------------
    def discover(self) -> list[GpuInfo]:
        self._infos = {}
        return [self.info_for(gpu) for gpu in self.read()]

    def sample(self) -> Snapshot:
        gpus = self.read()
        now = time.time()
        snapshot = Snapshot(backend=self.name, timestamp=now)
        for gpu in gpus:
            snapshot.gpus.append(gpu.to_sample(self.info_for(gpu), now, self.tool))
            if not gpu.pci:
                snapshot.errors.append(f"{self.tool} gave no PCI address for its GPU {gpu.tool_id}")
        return snapshot
