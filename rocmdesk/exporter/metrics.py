"""Readings and findings as Prometheus metric families (pure: no I/O, no threads).

Names follow AMD's device-metrics-exporter where it has the same reading, so dashboards written for
it work unchanged (ROCm/device-metrics-exporter, docs/configuration/metricslist.md: the field
``GPU_JUNCTION_TEMPERATURE`` is exported as ``gpu_junction_temperature``, VRAM and GTT in MB,
``gpu_clock`` with a ``clock_type`` label). Everything else is ``rocmdesk_*`` in base units
(seconds, bytes, volts, watts, degrees Celsius), as the Prometheus naming guide asks.

A reading that is N/A is *absent* (never a fake 0); ``rocmdesk_reading_unavailable`` says why.
Labels never carry user names, command lines or host names: GPUs are named by their index, DRM
card, PCI address, gfx target and product name; a finding's subject that is a path under a home
folder loses the user's name.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from rocmdesk.telemetry.model import GpuInfo, GpuSample, Snapshot

MIB = 1 << 20
GPU_LABELS = ("gpu_id", "card", "pci", "gfx_target", "card_model")
MAX_LABEL_CHARS = 160

# (hwmon label in rocmdesk, device-metrics-exporter metric)
AMD_TEMPERATURES = (("edge", "gpu_edge_temperature"), ("junction", "gpu_junction_temperature"),
                    ("mem", "gpu_memory_temperature"))
# (GpuSample field, device-metrics-exporter metric, help, scale)
AMD_SCALARS = (
    ("power_w", "gpu_power_usage", "GPU power usage in Watts", 1.0),
    ("gpu_busy_percent", "gpu_gfx_activity", "Graphics engine usage percentage (0 - 100)", 1.0),
    ("mem_busy_percent", "gpu_umc_activity", "Memory engine usage percentage (0 - 100)", 1.0),
    ("vram_total_bytes", "gpu_total_vram", "Total VRAM available in MB (MiB)", 1 / MIB),
    ("vram_used_bytes", "gpu_used_vram", "Total VRAM memory used in MB (MiB)", 1 / MIB),
    ("gtt_total_bytes", "gpu_total_gtt", "Total GTT memory in MB (MiB)", 1 / MIB),
    ("gtt_used_bytes", "gpu_used_gtt", "Current GTT memory usage in MB (MiB)", 1 / MIB),
)
ROCMDESK_SCALARS = (
    ("power_cap_w", "rocmdesk_gpu_power_cap_watts", "Power cap (hwmon power1_cap)", 1.0),
    ("power_cap_min_w", "rocmdesk_gpu_power_cap_min_watts", "Lowest power cap the driver accepts", 1.0),
    ("power_cap_max_w", "rocmdesk_gpu_power_cap_max_watts", "Highest power cap the driver accepts", 1.0),
    ("power_cap_default_w", "rocmdesk_gpu_power_cap_default_watts", "Power cap the board ships with", 1.0),
    ("vram_used_bytes", "rocmdesk_gpu_vram_used_bytes", "VRAM in use, bytes", 1.0),
    ("vram_total_bytes", "rocmdesk_gpu_vram_total_bytes", "VRAM size, bytes", 1.0),
    ("gtt_used_bytes", "rocmdesk_gpu_gtt_used_bytes", "GTT (system memory mapped for the GPU) in use, bytes", 1.0),
    ("gtt_total_bytes", "rocmdesk_gpu_gtt_total_bytes", "GTT size, bytes", 1.0),
    ("fan_rpm", "rocmdesk_gpu_fan_rpm", "Fan speed, revolutions per minute", 1.0),
    ("fan_percent", "rocmdesk_gpu_fan_percent", "Fan duty, percent of its maximum", 1.0),
    ("voltage_mv", "rocmdesk_gpu_voltage_volts", "Graphics core voltage", 1e-3),
)
CLOCKS = (("sclk_mhz", "system"), ("mclk_mhz", "memory"))
_HOME = re.compile(r"(?<![\w.-])/(?:home|Users|var/home)/[^/\s]+|(?<![\w.-])/root(?=/|$)")


@dataclass(frozen=True, slots=True)
class FindingRow:
    """One finding as the exporter shows it (copied out of the diagnosis, so nothing else is kept)."""

    id: str
    severity: str
    subject: str = ""


@dataclass(slots=True)
class DiagnosisState:
    """The newest diagnosis run: when it ran, how long it took, what it found, or why it failed."""

    finished_at: float | None = None
    duration_s: float | None = None
    findings: list[FindingRow] = field(default_factory=list)
    check_counts: dict[str, int] = field(default_factory=dict)  # status -> number of checks
    error: str | None = None  # the run itself failed (a check's failure is a check status)
    runs: int = 0
    failures: int = 0


@dataclass(slots=True)
class SamplingState:
    """What the sampler last delivered, and the GPUs seen since the exporter started."""

    snapshot: Snapshot | None = None
    seen: dict[str, GpuInfo] = field(default_factory=dict)  # pci -> info (a GPU that vanished stays)
    stale: bool = False
    samples: int = 0
    errors: int = 0
    last_duration_s: float | None = None


def scrub_subject(subject: str | None) -> str:
    """A finding's subject fit for a label: no user name from a home path, bounded length."""
    text = _HOME.sub("~", subject or "")
    return text[:MAX_LABEL_CHARS]


def _label(text: object) -> str:
    return str(text if text is not None else "")[:MAX_LABEL_CHARS]


def gpu_labels(info: GpuInfo, index: int) -> list[str]:
    return [str(index), _label(info.card), _label(info.pci), _label(info.gfx_target), _label(info.name)]


def gpu_index(seen: dict[str, GpuInfo]) -> dict[str, int]:
    """A stable ``gpu_id`` per PCI address: the order of the addresses (as rocm-smi and amd-smi number them)."""
    return {pci: n for n, pci in enumerate(sorted(seen))}


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def families(sampling: SamplingState, diagnosis: DiagnosisState | None, version: str) -> list[Metric]:
    """Every metric family for one scrape, from the last sample and the last diagnosis."""
    out: list[Metric] = []
    build = GaugeMetricFamily("rocmdesk_build_info", "rocmdesk version serving these metrics", labels=["version"])
    build.add_metric([version], 1)
    out.append(build)
    out.extend(_sampler_families(sampling))
    snapshot = sampling.snapshot
    index = gpu_index(sampling.seen)
    gpus = snapshot.gpus if snapshot else []
    out.extend(_gpu_families(gpus, index))
    present = GaugeMetricFamily("rocmdesk_gpu_present",
                                "1 while the GPU is found, 0 for a GPU seen earlier that is gone now",
                                labels=list(GPU_LABELS))
    now = {g.info.pci for g in gpus}
    for pci, info in sorted(sampling.seen.items()):
        present.add_metric(gpu_labels(info, index[pci]), 1 if pci in now else 0)
    out.append(present)
    # device-metrics-exporter's gpu_nodes_total is a gauge named like a counter; promtool's lint refuses it.
    nodes = GaugeMetricFamily("rocmdesk_gpus", "GPUs found in the newest sample")
    nodes.add_metric([], len(gpus))
    out.append(nodes)
    if snapshot is not None:
        procs = GaugeMetricFamily("rocmdesk_gpu_processes", "Processes using the GPU (DRM clients and KFD)",
                                  labels=list(GPU_LABELS))
        for sample in gpus:
            count = len({p.pid for p in snapshot.processes if p.pci == sample.info.pci})
            procs.add_metric(gpu_labels(sample.info, index[sample.info.pci]), count)
        out.append(procs)
    if diagnosis is not None:
        out.extend(diagnosis_families(diagnosis))
    return out


def _sampler_families(state: SamplingState) -> Iterable[Metric]:
    stamp = GaugeMetricFamily("rocmdesk_sample_timestamp_seconds", "When the newest sample was taken (Unix time)")
    if state.snapshot is not None:
        stamp.add_metric([], state.snapshot.timestamp)
    yield stamp
    if state.last_duration_s is not None:
        yield GaugeMetricFamily("rocmdesk_sample_duration_seconds", "How long the newest sample took",
                                value=state.last_duration_s)
    yield GaugeMetricFamily("rocmdesk_sampler_stale",
                            "1 while the backend has not answered within its deadline (values are old)",
                            value=1 if state.stale else 0)
    yield CounterMetricFamily("rocmdesk_samples", "Samples taken since the exporter started", value=state.samples)
    yield CounterMetricFamily("rocmdesk_sample_errors", "Samples that failed since the exporter started",
                              value=state.errors)
    errors = len(state.snapshot.errors) if state.snapshot else 0
    yield GaugeMetricFamily("rocmdesk_backend_problems", "Problems the backend reported in the newest sample",
                            value=errors)


def _gpu_families(gpus: Sequence[GpuSample], index: dict[str, int]) -> Iterable[Metric]:
    labelled = [(gpu_labels(g.info, index[g.info.pci]), g) for g in gpus]
    names = list(GPU_LABELS)
    for sensor, metric in AMD_TEMPERATURES:
        family = GaugeMetricFamily(metric, f"{sensor.capitalize()} temperature value in Celsius", labels=names)
        for labels, sample in labelled:
            value = _finite(sample.temperature_c.get(sensor))
            if value is not None:
                family.add_metric(labels, value)
        yield family
    for key, metric, help_text, scale in AMD_SCALARS + ROCMDESK_SCALARS:
        family = GaugeMetricFamily(metric, help_text, labels=names)
        for labels, sample in labelled:
            value = _finite(getattr(sample, key))
            if value is not None:
                family.add_metric(labels, value * scale)
        yield family
    free = GaugeMetricFamily("gpu_free_vram", "Total VRAM memory free in MB (MiB)", labels=names)
    for labels, sample in labelled:
        total, used = _finite(sample.vram_total_bytes), _finite(sample.vram_used_bytes)
        if total is not None and used is not None:
            free.add_metric(labels, max(0.0, total - used) / MIB)
    yield free
    clock = GaugeMetricFamily("gpu_clock", "Clock of the GPU in MHz", labels=[*names, "clock_type"])
    for labels, sample in labelled:
        for key, kind in CLOCKS:
            value = _finite(getattr(sample, key))
            if value is not None:
                clock.add_metric([*labels, kind], value)
    yield clock
    yield from _sensor_families(labelled, names)
    yield from _state_families(labelled, names)
    yield from _health_families(labelled, names)
    missing = GaugeMetricFamily("rocmdesk_reading_unavailable", "1 for each reading that is N/A, with the reason",
                                labels=[*names, "field", "reason"])
    for labels, sample in labelled:
        for key, reason in sorted(sample.unavailable.items()):
            missing.add_metric([*labels, _label(key), _label(reason)], 1)
    yield missing


def _sensor_families(labelled: list[tuple[list[str], GpuSample]], names: list[str]) -> Iterable[Metric]:
    tables = (("rocmdesk_gpu_temperature_celsius", "Temperature of each hwmon sensor", "temperature_c"),
              ("rocmdesk_gpu_temperature_crit_celsius", "Critical limit of each sensor", "temperature_crit_c"),
              ("rocmdesk_gpu_temperature_emergency_celsius", "Emergency (shutdown) limit of each sensor",
               "temperature_emergency_c"))
    for metric, help_text, attribute in tables:
        family = GaugeMetricFamily(metric, help_text, labels=[*names, "sensor"])
        for labels, sample in labelled:
            for sensor, raw in sorted(getattr(sample, attribute).items()):
                value = _finite(raw)
                if value is not None:
                    family.add_metric([*labels, _label(sensor)], value)
        yield family


def _state_families(labelled: list[tuple[list[str], GpuSample]], names: list[str]) -> Iterable[Metric]:
    level = GaugeMetricFamily("rocmdesk_gpu_performance_level", "power_dpm_force_performance_level (1 = current)",
                              labels=[*names, "level"])
    profile = GaugeMetricFamily("rocmdesk_gpu_power_profile", "Active pp_power_profile_mode (1 = current)",
                                labels=[*names, "profile"])
    for labels, sample in labelled:
        if sample.performance_level:
            level.add_metric([*labels, _label(sample.performance_level)], 1)
        if sample.power_profile:
            profile.add_metric([*labels, _label(sample.power_profile)], 1)
    yield level
    yield profile


def _by_name(metric: str, help_text: str, label: str, attribute: str, scale: float,
             labelled: list[tuple[list[str], GpuSample]], names: list[str]) -> Metric:
    """One series per key of a {name: value} reading (power by rail, clocks by domain, voltages)."""
    family = GaugeMetricFamily(metric, help_text, labels=[*names, label])
    for labels, sample in labelled:
        for key, raw in sorted(getattr(sample, attribute).items()):
            value = _finite(raw)
            if value is not None:
                family.add_metric([*labels, _label(key)], value * scale)
    return family


def _health_families(labelled: list[tuple[list[str], GpuSample]], names: list[str]) -> Iterable[Metric]:
    """Throttling, ECC (named like device-metrics-exporter's GPU_ECC_*_TOTAL), PCIe link, gpu_metrics readings."""
    throttled = GaugeMetricFamily("rocmdesk_gpu_throttled", "1 while the driver reports a throttle reason "
                                  "(gpu_metrics indep_throttle_status)", labels=names)
    reason = GaugeMetricFamily("rocmdesk_gpu_throttle_reason", "1 for each active throttle reason",
                               labels=[*names, "reason"])
    uncorrect = CounterMetricFamily("gpu_ecc_uncorrect", "Uncorrectable ECC errors, all blocks", labels=names)
    correct = CounterMetricFamily("gpu_ecc_correct", "Correctable ECC errors, all blocks", labels=names)
    blocks = CounterMetricFamily("rocmdesk_gpu_ecc_errors", "ECC errors by RAS block (ue: uncorrectable, "
                                 "ce: correctable)", labels=[*names, "block", "type"])
    pages = GaugeMetricFamily("rocmdesk_gpu_vram_bad_pages", "VRAM pages by state (retired, pending, failed)",
                              labels=[*names, "state"])
    speed = GaugeMetricFamily("rocmdesk_gpu_pcie_link_speed_gts", "PCIe link speed now, GT/s", labels=names)
    width = GaugeMetricFamily("rocmdesk_gpu_pcie_link_width", "PCIe link width now, lanes", labels=names)
    max_width = GaugeMetricFamily("rocmdesk_gpu_pcie_link_max_width", "Widest PCIe link the GPU supports, lanes",
                                  labels=names)
    energy = CounterMetricFamily("rocmdesk_gpu_energy_joules", "Energy accumulator (gpu_metrics)", labels=names)
    for labels, sample in labelled:
        if sample.throttle is not None:
            throttled.add_metric(labels, 1 if sample.throttle.get("active") else 0)
            for text in sample.throttle.get("reasons") or []:
                reason.add_metric([*labels, _label(text)], 1)
        ras = sample.ras
        if ras is not None:
            for family, key in ((uncorrect, "uncorrectable"), (correct, "correctable")):
                if isinstance(ras.get(key), int):  # absent when a counter could not be read: never a fake 0
                    family.add_metric(labels, ras[key])
            for block, counts in sorted(ras.get("blocks", {}).items()):
                for kind in ("ue", "ce"):
                    if kind in counts:
                        blocks.add_metric([*labels, _label(block), kind], counts[kind])
            for state, count in sorted((ras.get("pages") or {}).items()):
                pages.add_metric([*labels, _label(state)], count)
        link = sample.pcie or {}
        for gauge, key in ((speed, "speed_gts"), (width, "width"), (max_width, "max_width")):
            value = _finite(link.get(key))
            if value is not None:
                gauge.add_metric(labels, value)
        joules = _finite(sample.energy_j)
        if joules is not None:
            energy.add_metric(labels, joules)
    yield from (throttled, reason, uncorrect, correct, blocks, pages, speed, width, max_width, energy)
    yield _by_name("rocmdesk_gpu_rail_power_watts", "Power by rail (APU: gfx, soc, cpu…)", "rail",
                   "power_w_by_rail", 1.0, labelled, names)
    yield _by_name("rocmdesk_gpu_rail_voltage_volts", "Voltage by rail (gfx, soc, mem, nb)", "rail",
                   "voltage_mv_by_rail", 1e-3, labelled, names)
    yield _by_name("rocmdesk_gpu_clock_hertz", "Clock by domain (socclk, uclk, fclk, per-XCD gfxclk…)", "domain",
                   "clocks_mhz", 1e6, labelled, names)


def diagnosis_families(state: DiagnosisState) -> Iterable[Metric]:
    """The diagnosis as metrics: one ``rocmdesk_finding`` series per finding, and when it ran."""
    finding = GaugeMetricFamily("rocmdesk_finding", "1 for each finding of the newest diagnosis",
                                labels=["id", "severity", "subject"])
    seen: set[tuple[str, str, str]] = set()
    for row in state.findings:
        key = (_label(row.id), _label(row.severity), scrub_subject(row.subject))
        if key not in seen:  # two subjects that scrub alike must not make a duplicate series
            seen.add(key)
            finding.add_metric(list(key), 1)
    yield finding
    by_severity = GaugeMetricFamily("rocmdesk_findings", "Findings of the newest diagnosis by severity",
                                    labels=["severity"])
    for severity in ("error", "warning", "info"):
        by_severity.add_metric([severity], sum(1 for r in state.findings if r.severity == severity))
    yield by_severity
    checks = GaugeMetricFamily("rocmdesk_diagnosis_checks", "Checks of the newest diagnosis by status",
                               labels=["status"])
    for status, count in sorted(state.check_counts.items()):
        checks.add_metric([status], count)
    yield checks
    stamp = GaugeMetricFamily("rocmdesk_diagnosis_timestamp_seconds", "When the newest diagnosis finished")
    if state.finished_at is not None:
        stamp.add_metric([], state.finished_at)
    yield stamp
    if state.duration_s is not None:
        yield GaugeMetricFamily("rocmdesk_diagnosis_duration_seconds", "How long the newest diagnosis took",
                                value=state.duration_s)
    yield GaugeMetricFamily("rocmdesk_diagnosis_up", "1 when the newest diagnosis ran, 0 when it could not run",
                            value=0 if state.error else (1 if state.runs else 0))
    yield CounterMetricFamily("rocmdesk_diagnosis_failures", "Diagnosis runs that could not run",
                              value=state.failures)
