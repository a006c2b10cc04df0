"""The primary telemetry source: amdgpu sysfs and hwmon files, read directly.

Speed is the point (an 8-GPU node must sample in well under a millisecond), so all path work
happens once in :meth:`SysfsBackend.discover`: the hwmon folder is found, temperature labels
are read, every file that exists is resolved to its real path, and the values that never change
while the driver is bound (crit/emergency limits, power-cap range, VRAM/GTT totals, pwm1_max)
are read there too. A sample then only opens the live files, with one ``os.open``/``os.read``
each. A missing sensor is decided at discovery and reported with its reason every sample.

Nothing here raises for one bad file or a vanished GPU: the reading becomes ``None`` with a
reason in ``unavailable``; a GPU whose device folder disappears is reported in
``Snapshot.errors`` and the card list is re-read on the next sample.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from collections.abc import Callable

from rocmdesk import host
from rocmdesk.host import HostReadError, HostRoot
from rocmdesk.telemetry import gpu_metrics, parsers, pcie, pciids, ras
from rocmdesk.telemetry.backends.base import Backend
from rocmdesk.telemetry.discovery import DRM_CLASS, DiscoveredGpu, discover, list_cards
from rocmdesk.telemetry.model import GpuInfo, GpuSample, ProcessUse, Snapshot

TYPE_CHECKING = False  # typing is not imported at run time: `rocmdesk sample` starts faster
if TYPE_CHECKING:
    from typing import Any

log = logging.getLogger(__name__)

STANDARD_TEMPS = ("edge", "junction", "mem")
GONE_REASON = "device gone (GPU removed)"
# RAS (ECC) counters and partition modes change rarely: read every few seconds, not every sample (on an
# 8-GPU MI300X node they were a fifth of a sample's cost); a new uncorrectable error still alerts within this
RAS_INTERVAL_S = 5.0
_GONE_ERRNOS = (errno.ENOENT, errno.ENODEV, errno.ENXIO, errno.ENOTDIR)


def _reason(exc: OSError) -> str:
    if isinstance(exc, HostReadError):
        return exc.failure.value
    return HostReadError.from_oserror(exc, "").failure.value


class _Probe:
    """One live file: where it is, how to parse it, where the value goes."""

    __slots__ = ("fallback", "key", "label", "parse", "path")

    def __init__(self, key: str, path: str, parse: Callable[[str], Any], label: str | None = None,
                 fallback: _Probe | None = None) -> None:
        self.key = key
        self.path = path
        self.parse = parse
        self.label = label  # set for temperature_c entries
        self.fallback = fallback  # read when this one yields None or fails (pp_dpm_* → freqN_input)


class _Plan:
    """Everything decided at discovery for one GPU."""

    __slots__ = ("device_real", "gpu_metrics_path", "info", "missing", "pcie_max", "pcie_paths", "probes",
                 "ras_at", "ras_read", "static_temps", "static_values", "voltage_rails")

    def __init__(self, gpu: DiscoveredGpu) -> None:
        self.info: GpuInfo = gpu.info
        self.device_real = gpu.device_real
        self.gpu_metrics_path: str | None = None
        self.pcie_paths: tuple[str, str] | None = None  # current_link_speed, current_link_width
        self.pcie_max: dict[str, Any] = {}
        self.voltage_rails: list[tuple[str, str]] = []  # (rail, hwmon in*_input path)
        self.probes: list[_Probe] = []
        self.missing: dict[str, str] = {}  # key -> reason, the same every sample
        self.static_values: dict[str, Any] = {}
        self.static_temps: dict[str, dict[str, float]] = {"temperature_crit_c": {}, "temperature_emergency_c": {}}
        self.ras_read: tuple | None = None  # the last read_ras() result, reused for RAS_INTERVAL_S
        self.ras_at = -1e18


def _list_files(folder: str | None) -> set[str]:
    if folder is None:
        return set()
    try:
        return set(os.listdir(folder))
    except OSError:
        return set()


def _read_static(path: str, parse: Callable[[str], Any]) -> tuple[Any, str | None]:
    try:
        return parse(host.read_fd_text(path)), None
    except parsers.ValueProblem as exc:
        return None, str(exc)
    except OSError as exc:
        return None, _reason(exc)


def _fan_percent_parser(pwm_max: int) -> Callable[[str], float]:
    def parse(text: str) -> float:
        pwm = parsers.parse_int(text, maximum=pwm_max)
        return round(pwm * 100.0 / pwm_max, 1)

    return parse


_LABEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-. ")


def _parse_label(text: str) -> str:
    """An hwmon ``*_label``: amdgpu writes one short word ("edge", "junction", "vddgfx", "PPT"); binary or
    long text, or a number, is garbage, not a sensor name (it would become a reading's key)."""
    label = parsers.parse_line(text)
    if len(label) > 32 or not label[0].isalpha() or not set(label) <= _LABEL_CHARS:
        raise parsers.garbage(text)
    return label


def _label_and_reason(hwmon: str | None, files: set[str], name: str) -> tuple[str | None, str | None]:
    """(label, None), (None, None) when there is no such file, or (None, why it cannot be used)."""
    if hwmon is None or name not in files:
        return None, None
    try:
        return _parse_label(host.read_fd_text(os.path.join(hwmon, name))), None
    except parsers.ValueProblem as exc:
        return None, f"{name}: {exc}"
    except OSError as exc:
        return None, f"{name}: {_reason(exc)}"


def _label(hwmon: str | None, files: set[str], name: str) -> str | None:
    return _label_and_reason(hwmon, files, name)[0]


def build_plan(gpu: DiscoveredGpu) -> _Plan:
    """Decide, once, which files a sample of ``gpu`` reads and which readings are absent."""
    plan = _Plan(gpu)
    info = gpu.info
    dev = gpu.device_real
    dev_files = _list_files(dev)
    hw = gpu.hwmon_real or ""  # "" = no hwmon folder: hw_files is empty, so nothing joins onto it
    hw_files = _list_files(gpu.hwmon_real)
    on_amdgpu = info.driver == "amdgpu"
    not_amdgpu = f"not on amdgpu ({info.driver} driver)" if info.driver else "not bound to a driver"

    def absent(key: str, what: str, from_device: bool = True) -> None:
        if from_device and not on_amdgpu:
            plan.missing[key] = not_amdgpu
        elif not from_device and not hw:
            plan.missing[key] = not_amdgpu if not on_amdgpu else "no hwmon sensors for this GPU"
        else:
            plan.missing[key] = f"this GPU has no {what}"

    def dev_probe(key: str, name: str, parse: Callable[[str], Any], what: str) -> None:
        if name in dev_files:
            plan.probes.append(_Probe(key, os.path.join(dev, name), parse))
        else:
            absent(key, what)

    def dev_static(key: str, name: str, parse: Callable[[str], Any], what: str) -> None:
        if name in dev_files:
            value, reason = _read_static(os.path.join(dev, name), parse)
            if reason:
                plan.missing[key] = reason
            else:
                plan.static_values[key] = value
        else:
            absent(key, what)

    # -- temperatures, by label ---------------------------------------------------------------
    seen: set[str] = set()
    numbers = sorted(int(n[4:-6]) for n in hw_files
                     if n.startswith("temp") and n.endswith("_input") and n[4:-6].isdigit())
    bad_labels: list[str] = []  # a label that exists but cannot be read: its sensor's name is unknown
    for n in numbers:
        label, why = _label_and_reason(hw, hw_files, f"temp{n}_label")
        if why:
            bad_labels.append(why)
        label = label or f"temp{n}"
        if label in seen:
            label = f"temp{n}"
        seen.add(label)
        plan.probes.append(_Probe(f"temperature_c.{label}", os.path.join(hw, f"temp{n}_input"),
                                  parsers.millidegrees_to_c, label=label))
        for suffix, bucket in (("crit", "temperature_crit_c"), ("emergency", "temperature_emergency_c")):
            name = f"temp{n}_{suffix}"
            if name in hw_files:
                value, reason = _read_static(os.path.join(hw, name), parsers.millidegrees_to_c)
                if reason:
                    plan.missing[f"{bucket}.{label}"] = reason
                else:
                    plan.static_temps[bucket][label] = value
    for label in STANDARD_TEMPS:
        if label not in seen:
            absent(f"temperature_c.{label}", f"{label} sensor", from_device=False)
            if bad_labels:  # it may be the sensor whose label is unreadable: say so, not "no such sensor"
                why = f"no sensor labelled {label} ({'; '.join(bad_labels)})"
                plan.missing[f"temperature_c.{label}"] = why
                plan.missing[f"temperature_crit_c.{label}"] = why
                plan.missing[f"temperature_emergency_c.{label}"] = why

    # -- power --------------------------------------------------------------------------------
    secondary = (not any(n.startswith("power1_") for n in hw_files) and bool(hw)
                 and info.device_id in pciids.MULTI_DIE_IDS)
    power_missing = ("secondary die: the board power is reported by the primary die" if secondary
                     else None)
    if "power1_input" in hw_files:
        plan.probes.append(_Probe("power_w", os.path.join(hw, "power1_input"), parsers.microwatts_to_w))
    elif "power1_average" in hw_files:
        plan.probes.append(_Probe("power_w", os.path.join(hw, "power1_average"), parsers.microwatts_to_w))
    elif power_missing:
        plan.missing["power_w"] = power_missing
    else:
        absent("power_w", "power sensor (power1_input or power1_average)", from_device=False)
    cap_keys = (("power_cap_w", "power1_cap"), ("power_cap_min_w", "power1_cap_min"),
                ("power_cap_max_w", "power1_cap_max"), ("power_cap_default_w", "power1_cap_default"))
    for key, name in cap_keys:
        if name in hw_files:
            if key == "power_cap_w":
                plan.probes.append(_Probe(key, os.path.join(hw, name), parsers.microwatts_to_w))
            else:
                value, reason = _read_static(os.path.join(hw, name), parsers.microwatts_to_w)
                if reason:
                    plan.missing[key] = reason
                else:
                    plan.static_values[key] = value
        elif power_missing:
            plan.missing[key] = power_missing
        else:
            absent(key, name.replace("power1_", "power ").replace("_", " "), from_device=False)

    # -- memory and activity ----------------------------------------------------------------------
    dev_probe("vram_used_bytes", "mem_info_vram_used", parsers.parse_int, "VRAM counter (mem_info_vram_used)")
    dev_static("vram_total_bytes", "mem_info_vram_total", parsers.parse_int, "VRAM counter (mem_info_vram_total)")
    dev_probe("gtt_used_bytes", "mem_info_gtt_used", parsers.parse_int, "GTT counter (mem_info_gtt_used)")
    dev_static("gtt_total_bytes", "mem_info_gtt_total", parsers.parse_int, "GTT counter (mem_info_gtt_total)")
    dev_probe("gpu_busy_percent", "gpu_busy_percent", parsers.percent, "busy counter (gpu_busy_percent)")
    dev_probe("mem_busy_percent", "mem_busy_percent", parsers.percent, "memory busy counter (mem_busy_percent)")

    # -- clocks: the actual clock from hwmon freqN_input by label (gpu_metrics fills in at sample
    # time where hwmon has none); the `*` level of pp_dpm_* separately, as rocm-smi shows it ----------
    freq = {}
    for name in hw_files:
        if name.startswith("freq") and name.endswith("_input"):
            freq_label = _label(hw, hw_files, name.replace("_input", "_label"))
            if freq_label:
                freq[freq_label] = os.path.join(hw, name)
    for key, table, label in (("sclk", "pp_dpm_sclk", "sclk"), ("mclk", "pp_dpm_mclk", "mclk")):
        if label in freq:
            plan.probes.append(_Probe(f"{key}_mhz", freq[label], parsers.hertz_to_mhz))
        elif on_amdgpu:
            plan.missing[f"{key}_mhz"] = f"this GPU reports no actual {label} clock (hwmon freq*_input)"
        else:
            plan.missing[f"{key}_mhz"] = not_amdgpu
        if table in dev_files:
            plan.probes.append(_Probe(f"{key}_dpm_mhz", os.path.join(dev, table), parsers.active_dpm_mhz))
        else:
            absent(f"{key}_dpm_mhz", f"{label} DPM table ({table})")

    # -- fan and voltage --------------------------------------------------------------------------
    if "fan1_input" in hw_files:
        plan.probes.append(_Probe("fan_rpm", os.path.join(hw, "fan1_input"),
                                  lambda t: parsers.parse_int(t, maximum=100_000)))
    else:
        absent("fan_rpm", "fan speed sensor (fan1_input)", from_device=False)
    if "pwm1" in hw_files:
        pwm_max, reason = (255, None)
        if "pwm1_max" in hw_files:  # hwmon ABI: pwm is 0..255 unless pwm1_max says otherwise
            pwm_max, reason = _read_static(os.path.join(hw, "pwm1_max"),
                                           lambda t: parsers.parse_int(t, minimum=1, maximum=65535))
        if reason:
            plan.missing["fan_percent"] = f"pwm1_max: {reason}"
        else:
            plan.probes.append(_Probe("fan_percent", os.path.join(hw, "pwm1"), _fan_percent_parser(pwm_max)))
    else:
        absent("fan_percent", "fan control (pwm1)", from_device=False)
    # every in*_label once: vddgfx -> "gfx" (also the voltage_mv reading), vddnb -> "nb" (APUs); one that exists
    # but cannot be read is the reason its rail and, when no vddgfx is found, the voltage are N/A
    rails: list[tuple[str, str]] = []  # (label, in*_input name)
    rail_labels: list[str] = []
    for name in sorted(hw_files):
        if name.startswith("in") and name.endswith("_label"):
            label, why = _label_and_reason(hw, hw_files, name)
            if why:
                rail_labels.append(why)
            elif label and name.replace("_label", "_input") in hw_files:
                rails.append((label, name.replace("_label", "_input")))
    volt = next((candidate for label, candidate in rails if label == "vddgfx"), None)
    if volt is None and "in0_input" in hw_files and "in0_label" not in hw_files:
        volt = "in0_input"  # MI300X: in0 without a label is still vddgfx
    if volt:
        plan.probes.append(_Probe("voltage_mv", os.path.join(hw, volt),
                                  lambda t: float(parsers.parse_int(t, maximum=10_000))))
    elif rail_labels:
        plan.missing["voltage_mv"] = f"no rail labelled vddgfx ({'; '.join(rail_labels)})"
    else:
        absent("voltage_mv", "graphics voltage sensor (vddgfx)", from_device=False)
    if rail_labels:
        plan.missing["voltage_mv_by_rail"] = f"rails not named: {'; '.join(rail_labels)}"
    for label, candidate in rails:
        if label.startswith("vdd"):
            plan.voltage_rails.append((label[3:] or label, os.path.join(hw, candidate)))

    # -- gpu_metrics and the PCIe link ------------------------------------------------------------
    if "gpu_metrics" in dev_files:
        plan.gpu_metrics_path = os.path.join(dev, "gpu_metrics")
    if "current_link_speed" in dev_files and "current_link_width" in dev_files:
        plan.pcie_paths = (os.path.join(dev, "current_link_speed"), os.path.join(dev, "current_link_width"))
        for key, name, parse in (("max_speed_gts", "max_link_speed", pcie.parse_speed_gts),
                                 ("max_width", "max_link_width", pcie.parse_width)):
            if name in dev_files:
                value, reason = _read_static(os.path.join(dev, name), parse)
                plan.pcie_max[key] = value
                if reason is None and value is None:
                    reason = f"{name}: unknown or garbage value"
                if reason:
                    plan.missing[f"pcie.{key}"] = reason
    else:
        absent("pcie", "PCIe link attributes (current_link_speed)")

    # -- power states ---------------------------------------------------------------------------
    dev_probe("performance_level", "power_dpm_force_performance_level", parsers.parse_performance_level,
              "performance level (power_dpm_force_performance_level)")
    dev_probe("power_profile", "pp_power_profile_mode", parsers.active_power_profile,
              "power profiles (pp_power_profile_mode)")
    return plan


class SysfsBackend(Backend):
    """Readings straight from ``sys/class/drm/card*/device`` and its hwmon folder."""

    name = "sysfs"

    def __init__(self, root: HostRoot) -> None:
        self.root = root
        self._plans: list[_Plan] = []
        self._cards: list[str] | None = None
        self._identity: list[tuple[tuple[int, int] | None, ...]] = []  # per card: its folders' inodes
        self._drm_real: str | None = None
        self._pending_errors: list[str] = []
        self._fdinfo: Any = None  # FdinfoScanner, made on the first processes() call

    # -- discovery ----------------------------------------------------------------------------------
    def discover(self) -> list[GpuInfo]:
        try:
            self._drm_real = self.root.real_path(DRM_CLASS)
        except HostReadError:
            self._drm_real = None
        self._cards = list_cards(self.root)
        self._identity = self._identities(self._cards)
        self._plans = [build_plan(gpu) for gpu in discover(self.root)]
        return [plan.info for plan in self._plans]

    def _identities(self, cards: list[str]) -> list[tuple[tuple[int, int] | None, ...]]:
        """The inodes of each card's ``drm/cardN`` and device folders (None: missing).

        A card name is no identity (issue 11, item 5): a GPU whose device folder vanished and came back,
        a re-bound driver or another GPU under the same ``cardN`` keeps the name but not these inodes.
        One ``stat`` each, the kernel following the class links: this only detects a change (which
        makes discovery, whose paths are resolved inside the root, run again) and reads nothing.
        """
        out: list[tuple[tuple[int, int] | None, ...]] = []
        for card in cards:
            pair: list[tuple[int, int] | None] = []
            for path in (f"{self._drm_real}/{card}", f"{self._drm_real}/{card}/device"):
                try:
                    st = os.stat(path)
                    pair.append((st.st_dev, st.st_ino))
                except (OSError, ValueError):
                    pair.append(None)
            out.append(tuple(pair))
        return out

    def _cards_changed(self) -> bool:
        if self._cards is None or self._drm_real is None:
            return True
        try:
            names = os.listdir(self._drm_real)
        except OSError:
            return bool(self._cards)
        cards = [n for n in names if n.startswith("card") and n[4:].isdigit()]
        if len(cards) != len(self._cards):
            return True
        if sorted(cards, key=lambda n: int(n[4:])) != self._cards:
            return True
        return self._identities(self._cards) != self._identity

    # -- sampling --------------------------------------------------------------------------------
    def sample(self) -> Snapshot:
        errors = self._pending_errors
        self._pending_errors = []
        if self._cards_changed():
            before = {p.info.pci for p in self._plans}
            self.discover()
            after = {p.info.pci for p in self._plans}
            errors.extend(f"GPU {pci} was removed" for pci in sorted(before - after))
        now = time.time()
        gpus = []
        gone = []
        for plan in self._plans:
            sample = self._sample_gpu(plan, now)
            if sample is None:
                gone.append(plan)
                errors.append(f"GPU {plan.info.pci} was removed")
                sample = _gone_sample(plan, now)
            gpus.append(sample)
        if gone:
            self._plans = [p for p in self._plans if p not in gone]
            self._cards = None  # re-discover on the next sample
        return Snapshot(backend=self.name, timestamp=now, gpus=gpus, errors=errors)

    def _sample_gpu(self, plan: _Plan, now: float) -> GpuSample | None:
        """One GPU's reading, or None when its device folder has disappeared."""
        read = host.read_fd_text
        sample = GpuSample(info=plan.info, timestamp=now)
        temps = sample.temperature_c
        unavailable = sample.unavailable
        for probe in plan.probes:
            value = None
            reason = None
            current: _Probe | None = probe
            while current is not None:
                try:
                    value = current.parse(read(current.path))
                except parsers.ValueProblem as exc:
                    reason = reason or str(exc)
                except OSError as exc:
                    if exc.errno in _GONE_ERRNOS and not os.path.isdir(plan.device_real):
                        return None
                    reason = reason or _reason(exc)
                if value is not None:
                    break
                if reason is None and current.parse is parsers.active_dpm_mhz:
                    reason = "no active level marked in the table"
                current = current.fallback
            if value is None:
                unavailable[probe.key] = reason or "not available"
            elif probe.label is not None:
                temps[probe.label] = value
            else:
                setattr(sample, probe.key, value)
        for key, value in plan.static_values.items():
            setattr(sample, key, value)
        sample.temperature_crit_c.update(plan.static_temps["temperature_crit_c"])
        sample.temperature_emergency_c.update(plan.static_temps["temperature_emergency_c"])
        for key, reason in plan.missing.items():
            unavailable.setdefault(key, reason)
        _read_extras(plan, sample)
        return sample

    # -- processes --------------------------------------------------------------------------------
    def processes(self) -> list[ProcessUse]:
        if self._fdinfo is None:
            # imported here: `rocmdesk sample` reads no processes, and fdinfo + KFD + accounts cost
            # a tenth of its start-up
            from rocmdesk.telemetry.fdinfo import FdinfoScanner

            self._fdinfo = FdinfoScanner(self.root)
        return self._fdinfo.scan()


def _read_extras(plan: _Plan, sample: GpuSample) -> None:
    """gpu_metrics, voltage rails, the PCIe link, RAS counters: readings beside the per-file probes."""
    if plan.info.on_amdgpu:
        now = time.monotonic()
        if plan.ras_read is None or now - plan.ras_at >= RAS_INTERVAL_S:
            plan.ras_read, plan.ras_at = ras.read_ras(plan.device_real), now
        found, partition, reasons = plan.ras_read
        sample.ras = None if found is None else {k: ({n: dict(c) for n, c in v.items()} if k == "blocks" else
                                                     dict(v) if isinstance(v, dict) else v) for k, v in found.items()}
        sample.partition = None if partition is None else dict(partition)
        for key, reason in reasons.items():
            sample.unavailable.setdefault(key, reason)
    for rail, path in plan.voltage_rails:
        try:
            sample.voltage_mv_by_rail[rail] = float(parsers.parse_int(host.read_fd_text(path), maximum=10_000))
        except (OSError, parsers.ValueProblem) as exc:
            sample.unavailable[f"voltage_mv_by_rail.{rail}"] = _reason(exc) if isinstance(exc, OSError) else str(exc)
    if plan.pcie_paths is not None:
        link: dict[str, Any] = {}
        for key, path, parse in (("speed_gts", plan.pcie_paths[0], pcie.parse_speed_gts),
                                 ("width", plan.pcie_paths[1], pcie.parse_width)):
            try:
                link[key] = parse(host.read_fd_text(path))
            except OSError as exc:
                link[key] = None
                sample.unavailable[f"pcie.{key}"] = f"{os.path.basename(path)}: {_reason(exc)}"
            else:
                if link[key] is None:  # "Unknown" while the link is down, or garbage
                    sample.unavailable[f"pcie.{key}"] = f"{os.path.basename(path)}: unknown or garbage value"
        if link["speed_gts"] is None and link["width"] is None:
            sample.unavailable["pcie"] = "; ".join(sample.unavailable.pop(f"pcie.{k}") for k in ("speed_gts", "width"))
        else:
            sample.pcie = {**link, **plan.pcie_max}
    if plan.gpu_metrics_path is None:
        reason = "this GPU has no gpu_metrics table" if plan.info.on_amdgpu else "not on amdgpu"
    else:
        try:
            apply_gpu_metrics(sample, gpu_metrics.decode(
                host.read_fd_bytes(plan.gpu_metrics_path, gpu_metrics.MAX_BYTES)))
            return
        except OSError as exc:
            reason = f"gpu_metrics: {_reason(exc)}"
        except gpu_metrics.GpuMetricsError as exc:
            reason = f"gpu_metrics: {exc}"
    for key in ("throttle", "energy_j"):
        sample.unavailable.setdefault(key, reason)
    if plan.gpu_metrics_path is not None:  # the table exists but failed: its per-rail/clock readings are N/A too
        for key in ("clocks_mhz", "power_w_by_rail", "temperature_c"):
            sample.unavailable.setdefault(key, reason)


def apply_gpu_metrics(sample: GpuSample, metrics: gpu_metrics.GpuMetrics) -> None:
    """Merge a decoded table into a sample; hwmon's own readings win where both have one."""
    for key, value in metrics.temperature_c.items():
        if key not in sample.temperature_c:
            sample.temperature_c[key] = value
            sample.unavailable.pop(f"temperature_c.{key}", None)
            sample.source[f"temperature_c.{key}"] = "gpu_metrics"
    # A sensor the board does not have (vrgfx on a laptop, all ones or 0 in the table) is simply absent:
    # only the three standard sensors are listed as N/A, and hwmon has already said why for those.
    sample.power_w_by_rail.update(metrics.power_w_by_rail)
    sample.clocks_mhz.update(metrics.clocks_mhz)
    for rail, value in metrics.voltage_mv_by_rail.items():
        sample.voltage_mv_by_rail.setdefault(rail, value)
    for key, clock in (("sclk_mhz", "gfxclk"), ("mclk_mhz", "uclk")):
        if getattr(sample, key) is None and metrics.clocks_mhz.get(clock):
            setattr(sample, key, int(metrics.clocks_mhz[clock]))
            sample.unavailable.pop(key, None)
            sample.source[key] = "gpu_metrics"
    if metrics.energy_j is not None:
        sample.energy_j = metrics.energy_j
    else:
        sample.unavailable["energy_j"] = f"gpu_metrics {metrics.revision} gives no energy counter with a unit"
    if metrics.throttle is not None:
        sample.throttle = {"active": metrics.throttle["active"], "reasons": list(metrics.throttle["reasons"])}
    else:
        sample.unavailable["throttle"] = metrics.unavailable.get("throttle", "not reported")


def _gone_sample(plan: _Plan, now: float) -> GpuSample:
    sample = GpuSample(info=plan.info, timestamp=now)
    for probe in plan.probes:
        sample.unavailable[probe.key] = GONE_REASON
    for key in plan.static_values:
        sample.unavailable[key] = GONE_REASON
    for key in plan.missing:
        sample.unavailable.setdefault(key, GONE_REASON)
    return sample
