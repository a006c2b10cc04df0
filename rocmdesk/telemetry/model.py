"""Typed readings shared by every backend, the sampler, the UI and reports.

A value that cannot be read is ``None`` *and* has a reason in ``unavailable`` under its JSON key
(``"power_w"``, ``"temperature_c.edge"``): the UI shows "N/A" with that reason, never a fake 0.
The JSON produced by :meth:`GpuSample.to_json` is a public contract (``rocmdesk sample --json``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields, replace

TYPE_CHECKING = False  # typing is not imported at run time: `rocmdesk sample` starts faster
if TYPE_CHECKING:
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
    "sclk_mhz",  # the actual clock (hwmon freq1_input or gpu_metrics), not a DPM level
    "mclk_mhz",
    "sclk_dpm_mhz",  # the active (`*`) level of pp_dpm_sclk, what rocm-smi shows as sclk
    "mclk_dpm_mhz",
    "fan_rpm",
    "fan_percent",
    "voltage_mv",
    "performance_level",
    "power_profile",
    "energy_j",
)
# Readings by name (rail, clock domain, sensor); keys are free text from the driver's tables.
MAPPING_METRICS: tuple[str, ...] = ("power_w_by_rail", "clocks_mhz", "voltage_mv_by_rail")


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
    sclk_dpm_mhz: int | None = None
    mclk_dpm_mhz: int | None = None
    fan_rpm: int | None = None
    fan_percent: float | None = None
    voltage_mv: float | None = None
    performance_level: str | None = None
    power_profile: str | None = None
    energy_j: float | None = None  # the energy accumulator (gpu_metrics), joules since it last wrapped
    power_w_by_rail: dict[str, float] = field(default_factory=dict)  # APU rails: "gfx", "soc", "cpu"…
    clocks_mhz: dict[str, float] = field(default_factory=dict)  # "socclk", "uclk", "gfxclk_xcd3"…
    voltage_mv_by_rail: dict[str, float] = field(default_factory=dict)  # "gfx", "soc", "mem", "nb"
    throttle: dict[str, Any] | None = None  # {"active": bool, "reasons": [str, ...]}
    pcie: dict[str, Any] | None = None  # {"speed_gts", "width", "max_speed_gts", "max_width"}
    ras: dict[str, Any] | None = None  # {"blocks": {"umc": {"ue", "ce"}}, "uncorrectable", "correctable", "pages"}
    partition: dict[str, str] | None = None  # {"compute": "SPX", "memory": "NPS1"} (MI300)
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
        for key in MAPPING_METRICS:
            out[key] = dict(getattr(self, key))
        out["throttle"] = None if self.throttle is None else {
            "active": bool(self.throttle.get("active")), "reasons": list(self.throttle.get("reasons") or [])}
        out["pcie"] = None if self.pcie is None else dict(self.pcie)
        out["ras"] = None if self.ras is None else {
            "blocks": {k: dict(v) for k, v in self.ras.get("blocks", {}).items()},
            **{k: v for k, v in self.ras.items() if k != "blocks"}}
        out["partition"] = None if self.partition is None else dict(self.partition)
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
        for key in MAPPING_METRICS:
            setattr(sample, key, _number_map(data.get(key)))
        throttle = data.get("throttle")
        if isinstance(throttle, dict):
            reasons = throttle.get("reasons")
            sample.throttle = {"active": throttle.get("active") is True,
                               "reasons": [str(r) for r in reasons][:64] if isinstance(reasons, list) else []}
        pcie = _number_map(data.get("pcie"))
        sample.pcie = pcie or None
        ras = data.get("ras")
        if isinstance(ras, dict):
            found = ras.get("blocks")
            blocks = found if isinstance(found, dict) else {}
            sample.ras = {"blocks": {str(k): {n: int(c) for n, c in _number_map(v).items()}
                                     for k, v in list(blocks.items())[:64]},
                          **{k: int(v) for k, v in _number_map(ras).items()
                             if k in ("uncorrectable", "correctable")}}
            pages = _number_map(ras.get("pages"))
            if pages:
                sample.ras["pages"] = {k: int(v) for k, v in pages.items()}
        partition = data.get("partition")
        if isinstance(partition, dict):
            sample.partition = {k: v[:16] for k, v in partition.items()
                                if k in ("compute", "memory") and isinstance(v, str)} or None
        sample.unavailable = dict(data.get("unavailable") or {})
        return sample

    def with_info(self, info: GpuInfo) -> GpuSample:
        return replace(self, info=info)


def _number_map(value: Any) -> dict[str, float]:
    """A {name: number} mapping from untrusted JSON: other entries are dropped."""
    if not isinstance(value, dict):
        return {}
    return {str(k): float(v) for k, v in list(value.items())[:256]
            if isinstance(v, int | float) and not isinstance(v, bool) and abs(v) < 1e18}


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
