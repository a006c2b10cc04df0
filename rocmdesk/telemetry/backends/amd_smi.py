"""Readings from the amd-smi CLI (``metric --json``), the successor of rocm-smi.

``metric`` numbers GPUs by amd-smi's own index; ``list --json`` (once, at discovery) maps that
index to a PCI address, and ``static --json`` adds the name and power limits when it works.
"""

from __future__ import annotations

import logging

from rocmdesk.host import CommandRunner, HostRoot
from rocmdesk.telemetry.backends.base import BackendError
from rocmdesk.telemetry.backends.tool import DEFAULT_TIMEOUT_S, ToolBackend
from rocmdesk.telemetry.model import GpuInfo
from rocmdesk.telemetry.smi_parsers import (
    ToolGpu,
    parse_amd_smi_list,
    parse_amd_smi_metric,
    parse_amd_smi_static,
)

log = logging.getLogger(__name__)

METRIC_ARGS: tuple[str, ...] = ("metric", "--json")
LIST_ARGS: tuple[str, ...] = ("list", "--json")
STATIC_ARGS: tuple[str, ...] = ("static", "--json")


class AmdSmiBackend(ToolBackend):
    """amd-smi through the command runner."""

    tool = "amd-smi"

    def __init__(self, root: HostRoot | None = None, runner: CommandRunner | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S, path: str | None = None) -> None:
        super().__init__(root, runner, timeout_s, path)
        self._bdf: dict[str, str] | None = None
        self._static: dict[str, ToolGpu] = {}

    def _load_identity(self) -> None:
        """gpu index → PCI address (list), names and limits (static); failures here are not fatal."""
        self._bdf = {}
        try:
            self._bdf = self.parse_or_raise(parse_amd_smi_list, self.run_tool(LIST_ARGS))
        except BackendError as exc:
            log.info("amd-smi list failed (%s); trying static for PCI addresses", exc)
        try:
            self._static = self.parse_or_raise(parse_amd_smi_static, self.run_tool(STATIC_ARGS))
        except BackendError as exc:
            log.info("amd-smi static failed: %s", exc)
            self._static = {}
        for index, static in self._static.items():
            if static.pci and index not in self._bdf:
                self._bdf[index] = static.pci

    def read(self) -> list[ToolGpu]:
        gpus = self.parse_or_raise(parse_amd_smi_metric, self.run_tool(METRIC_ARGS))
        if self._bdf is None or (self._bdf and {g.tool_id for g in gpus} != set(self._bdf)):
            # First reading, or the GPU set changed (hotplug renumbers amd-smi's indexes).
            self._infos = {}
            self._load_identity()
        bdf = self._bdf or {}
        for gpu in gpus:
            gpu.pci = gpu.pci or bdf.get(gpu.tool_id)
            static = self._static.get(gpu.tool_id)
            if static is None:
                continue
            gpu.name = gpu.name or static.name
            gpu.device_id = gpu.device_id if gpu.device_id is not None else static.device_id
            gpu.vbios = gpu.vbios or static.vbios
            for key, value in static.metrics.items():
                if gpu.metrics.get(key) is None:
                    gpu.metrics[key] = value
                    gpu.unavailable.pop(key, None)
        return gpus

    def discover(self) -> list[GpuInfo]:
        self._bdf = None  # re-read the index → PCI map: a hotplug can renumber amd-smi's GPUs
        return super().discover()
