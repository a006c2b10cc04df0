"""Typed readings shared by every backend, the sampler, the UI and reports.

A value that cannot be read is ``None`` *and* has a reason in ``unavailable`` under its JSON key
(``"power_w"``, ``"temperature_c.edge"``): the UI shows "N/A" with that reason, never a fake 0.
The JSON produced by :meth:`GpuSample.to_json` is a public contract (``rocmdesk sample --json``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields, replace
from typing import Any


class GpuKind(enum.Enum):
    DISCRETE = "discrete"
    APU = "apu"
    INSTINCT = "instinct"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class GpuInfo:
    """What identifies a GPU; does not change between samples."""

    card: str  # DRM card name, "card1"
    pci: str  # "0000:03:00.0"
    name: str  # marketing name, or "AMD GPU 1002:744c" when unknown
    vendor_id: int = 0x1002
    device_id: int | None = None
    revision_id: int | None = None
    subsystem: str | None = None  # "1da2:e471"
    gfx_target: str | None = None  # "gfx1100"
    kind: GpuKind = GpuKind.UNKNOWN
    driver: str | None = None  # "amdgpu", "radeon", or None when unbound
    vram_total_bytes: int | None = None
    vbios: str | None = None
    driver_version: str | None = None  # amdgpu module version, or the kernel release for in-tree
    rocm_version: str | None = None
    kfd_node: int | None = None  # KFD topology node id (what HSA_OVERRIDE_GFX_VERSION_<n> uses)
    render_node: str | None = None  # "renderD128"
    unique_id: str | None = None

    @property
    def on_amdgpu(self) -> bool:
        return self.driver == "amdgpu"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = value.value if isinstance(value, enum.Enum) else value
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GpuInfo:
        kwargs = {f.name: data[f.name] for f in fields(cls) if f.name in data}
        if "kind" in kwargs:
            kwargs["kind"] = GpuKind(kwargs["kind"])
        return cls(**kwargs)


# Scalar metrics of a sample, in JSON order. Names carry their unit.
SCALAR_METRICS: tuple[str, ...] = (
    "power_w",
    "power_cap_w",
    "power_cap_min_w",
    "power_cap_max_w",
    "power_cap_default_w",
    "vram_used_bytes",
    "vram_total_bytes",
    "gtt_used_bytes",
    "gtt_total_bytes",
    "gpu_busy_percent",
    "mem_busy_percent",
    "sclk_mhz",
    "mclk_mhz",
    "fan_rpm",
    "fan_percent",
    "voltage_mv",
    "performance_level",
    "power_profile",
)


@dataclass(slots=True)
class GpuSample:
    """One reading of one GPU. ``None`` = not available; the reason is in ``unavailable``."""

    info: GpuInfo
    timestamp: float
    temperature_c: dict[str, float] = field(default_factory=dict)  # by hwmon label
    temperature_crit_c: dict[str, float] = field(default_factory=dict)
    temperature_emergency_c: dict[str, float] = field(default_factory=dict)
    power_w: float | None = None
    power_cap_w: float | None = None
    power_cap_min_w: float | None = None
    power_cap_max_w: float | None = None
    power_cap_default_w: float | None = None
    vram_used_bytes: int | None = None
    vram_total_bytes: int | None = None
    gtt_used_bytes: int | None = None
    gtt_total_bytes: int | None = None
    gpu_busy_percent: float | None = None
    mem_busy_percent: float | None = None
    sclk_mhz: int | None = None
    mclk_mhz: int | None = None
    fan_rpm: int | None = None
    fan_percent: float | None = None
    voltage_mv: float | None = None
    performance_level: str | None = None
    power_profile: str | None = None
    unavailable: dict[str, str] = field(default_factory=dict)
    source: dict[str, str] = field(default_factory=dict)  # metric -> backend that supplied it

    def mark_unavailable(self, key: str, reason: str) -> None:
        self.unavailable.setdefault(key, reason)

    def get(self, key: str) -> Any:
        """A metric by its JSON key, including ``temperature_c.<label>``."""
        if key.startswith("temperature_c."):
            return self.temperature_c.get(key.split(".", 1)[1])
        return getattr(self, key)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "card": self.info.card,
            "pci": self.info.pci,
            "name": self.info.name,
            "gfx_target": self.info.gfx_target,
            "temperature_c": dict(self.temperature_c),
            "temperature_crit_c": dict(self.temperature_crit_c),
            "temperature_emergency_c": dict(self.temperature_emergency_c),
        }
        for key in SCALAR_METRICS:
            out[key] = getattr(self, key)
        out["unavailable"] = dict(self.unavailable)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any], info: GpuInfo | None = None, timestamp: float = 0.0) -> GpuSample:
        if info is None:
            info = GpuInfo(card=data.get("card", "?"), pci=data.get("pci", "?"),
                           name=data.get("name", "AMD GPU"), gfx_target=data.get("gfx_target"))
        sample = cls(info=info, timestamp=timestamp)
        sample.temperature_c = {k: float(v) for k, v in (data.get("temperature_c") or {}).items()}
        sample.temperature_crit_c = {k: float(v) for k, v in (data.get("temperature_crit_c") or {}).items()}
        sample.temperature_emergency_c = {
            k: float(v) for k, v in (data.get("temperature_emergency_c") or {}).items()
        }
        for key in SCALAR_METRICS:
            if key in data:
                setattr(sample, key, data[key])
        sample.unavailable = dict(data.get("unavailable") or {})
        return sample

    def with_info(self, info: GpuInfo) -> GpuSample:
        return replace(self, info=info)


@dataclass(slots=True)
class ProcessUse:
    """One process's use of one GPU, from DRM fdinfo (or a tool)."""

    pid: int
    pci: str
    name: str
    cmdline: str = ""
    vram_bytes: int | None = None
    gtt_bytes: int | None = None
    gpu_percent: float | None = None  # None on the first sample (needs two readings over time)
    user: str | None = None
    # Compute use from the KFD (telemetry/kfd_procs.py): DRM fdinfo's gpu_percent is graphics-engine
    # time only and does not see work submitted through KFD user-mode queues (ROCm, HIP, PyTorch).
    cu_occupancy_percent: float | None = None  # CUs busy with its waves now / the GPU's CUs
    cu_occupied: int | None = None  # CUs busy with its waves now
    sdma_us: int | None = None  # SDMA (copy engine) time since the process started, microseconds
    sources: tuple[str, ...] = ()  # "drm-fdinfo", "kfd"
    unavailable: dict[str, str] = field(default_factory=dict)  # field name -> why it is None

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(slots=True)
class Snapshot:
    """All GPUs at one moment from one backend (or the merge of several)."""

    backend: str
    timestamp: float
    gpus: list[GpuSample] = field(default_factory=list)
    processes: list[ProcessUse] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # backend-level problems, in words
    demo: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "backend": self.backend,
            "timestamp": self.timestamp,
            "gpus": [g.to_json() for g in self.gpus],
        }
        if self.processes:
            out["processes"] = [p.to_json() for p in self.processes]
        if self.errors:
            out["errors"] = list(self.errors)
        if self.demo:
            out["demo"] = True
        return out

    def by_pci(self) -> dict[str, GpuSample]:
        return {g.info.pci: g for g in self.gpus}
