"""Pure parsers for rocm-smi and amd-smi output: text in, per-GPU readings out, no I/O.

Both tools drift between releases (key spellings, units, envelopes), exit 0 when they fail and
print warnings around their JSON, so every parser here trusts only the text it is given and
says in words why something could not be read. Sources: ROCm/rocm_smi_lib python_smi_tools/rocm_smi.py (all values
strings, JSON split on ': '), ROCm/amdsmi amdsmi_cli/amdsmi_commands.py and CHANGELOG.md (6.1: "Added units of
measure to JSON output"), and the issues named beside each rule; samples in tests/data/tool-output.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rocmdesk.host import JsonLimitError, check_json_depth
from rocmdesk.telemetry.model import GpuInfo, GpuSample
from rocmdesk.telemetry.parsers import bounded_int


class ToolOutputError(ValueError):
    """The tool's whole output is unusable; the message says why, in words a user understands."""


@dataclass
class ToolGpu:
    """One GPU as a tool reported it, in rocmdesk units (W, bytes, MHz, °C, %).

    ``metrics`` holds scalar metrics by their GpuSample field name; ``unavailable`` holds the
    reasons for metrics the tool was asked for but could not give, by JSON key.
    """

    tool_id: str  # "card0" (rocm-smi's own order) or "0" (amd-smi's gpu index)
    pci: str | None = None
    name: str | None = None
    device_id: int | None = None
    vbios: str | None = None
    unique_id: str | None = None
    temperature_c: dict[str, float] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)

    def value(self, key: str) -> Any:
        """A reading by its JSON key (``power_w``, ``temperature_c.edge``), or None."""
        if key.startswith("temperature_c."):
            return self.temperature_c.get(key.split(".", 1)[1])
        return self.metrics.get(key)

    def keys(self) -> list[str]:
        """JSON keys of every reading present."""
        return [f"temperature_c.{label}" for label in self.temperature_c] + list(self.metrics)

    def mark(self, key: str, reason: str) -> None:
        self.unavailable.setdefault(key, reason)

    def to_sample(self, info: GpuInfo, timestamp: float, source: str) -> GpuSample:
        sample = GpuSample(info=info, timestamp=timestamp)
        sample.temperature_c = dict(self.temperature_c)
        for key, value in self.metrics.items():
            setattr(sample, key, value)
        for key in self.keys():
            sample.source[key] = source
        sample.unavailable = {k: v for k, v in self.unavailable.items() if self.value(k) is None}
        return sample


# -- shared helpers ------------------------------------------------------------------------

_PCI_RE = re.compile(r"^(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])$")


def normalize_pci(text: Any) -> str | None:
    """"0000:C4:00.0" / "c4:00.0" → "0000:c4:00.0"; None for anything that is not a PCI address."""
    if not isinstance(text, str):
        return None
    match = _PCI_RE.match(text.strip())
    if not match:
        return None
    domain, bus, dev, fn = match.groups()
    return f"{int(domain or '0', 16):04x}:{int(bus, 16):02x}:{int(dev, 16):02x}.{fn}"


def is_na(value: Any) -> bool:
    return isinstance(value, str) and value.strip().upper().startswith("N/A")


def _short(value: Any, limit: int = 40) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def garbage(value: Any) -> str:
    return f"garbage value '{_short(value)}'"


def extract_json(text: str, tool: str) -> Any:
    """The JSON document in a tool's stdout, tolerating warning lines printed before it.

    Raises ToolOutputError for empty, non-JSON and truncated output.
    """
    stripped = text.strip()
    if not stripped:
        raise ToolOutputError(f"{tool} printed nothing")
    # Some releases print "WARNING: ..." lines before the document: try each line that opens
    # a JSON object or array at column 0 (nested ones are indented, so never mistaken for it).
    # Text after the document (a trailing warning) is ignored too.
    first_error: tuple[str, json.JSONDecodeError] | None = None
    decoder = json.JSONDecoder()
    for match in re.finditer(r"(?m)^[\[{]", stripped):
        doc = stripped[match.start():]
        try:
            value = decoder.raw_decode(doc)[0]
        except json.JSONDecodeError as error:
            first_error = first_error or (doc, error)
            continue
        except RecursionError:  # a replayed output (a snapshot's commands.json) nested 100 000 deep
            raise ToolOutputError(f"{tool} printed JSON nested too deeply") from None
        except ValueError as error:  # an integer past CPython's 4300-digit limit (issue 11 item 3)
            raise ToolOutputError(f"{tool} printed a number too long to read ({_short(str(error), 60)})") from None
        try:
            check_json_depth(value)
        except JsonLimitError as error:
            raise ToolOutputError(f"{tool} printed {error}") from None
        return value
    if first_error is None:
        raise ToolOutputError(f"{tool} did not print JSON: '{_short(stripped.splitlines()[0], 80)}'")
    doc, exc = first_error
    if exc.pos >= len(doc) - 1 or exc.msg.startswith("Unterminated string"):
        raise ToolOutputError(f"{tool} printed incomplete JSON (cut off after {len(doc)} characters)")
    raise ToolOutputError(f"{tool} printed malformed JSON ({exc.msg} at line {exc.lineno} column {exc.colno})")


def _number(value: Any) -> float | None:
    """A finite number from a JSON leaf (number or numeric string), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:  # a JSON integer of hundreds of digits: no reading
            return None
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


# -- rocm-smi -------------------------------------------------------------------------------

ROCM_SMI_DRIVER_MISSING = "Driver not initialized"
_ROCM_SMI_TEMP_RE = re.compile(r"^Temperature \(Sensor (?P<sensor>.+?)\) \((?:C|c)\)$")
_ROCM_SMI_MHZ_RE = re.compile(r"\((\d{1,12}(?:\.\d{1,12})?)\s*Mhz\)", re.IGNORECASE)

# rocm-smi sensor names → rocmdesk (hwmon) labels. "mem" is the 2019 spelling (RainbowMiner/RainbowMiner#749).
ROCM_SMI_SENSOR_LABELS = {"edge": "edge", "junction": "junction", "memory": "mem", "mem": "mem"}
# Sensors every GPU has one of; a missing one is worth a reason, HBM ones are not.
_MAIN_SENSORS = ("edge", "junction", "mem")

# Power keys, preferred first: since ROCm 6.0 rocm-smi prints current socket power when the
# GPU has it and falls back to the average (ROCm/rocm_smi_lib python_smi_tools/rocm_smi.py showPower(), from tag
# rocm-6.0.0).
ROCM_SMI_POWER_KEYS = ("Current Socket Graphics Package Power (W)", "Average Graphics Package Power (W)")
NOT_REPORTED = "rocm-smi does not report it"
SECONDARY_DIE = "N/A (secondary die: the primary die reports the whole package)"


def rocm_smi_sensor_label(sensor: str) -> str:
    """"junction" → "junction", "memory"/"mem" → "mem", "HBM 0" → "hbm0"."""
    name = sensor.strip()
    if name in ROCM_SMI_SENSOR_LABELS:
        return ROCM_SMI_SENSOR_LABELS[name]
    return re.sub(r"\s+", "", name).lower()


def check_rocm_smi_failure(stdout: str, stderr: str) -> None:
    """Raise ToolOutputError for rocm-smi's whole-run failures, whatever its exit code said."""
    both = f"{stderr}\n{stdout}"
    if ROCM_SMI_DRIVER_MISSING in both or "amdgpu not found in modules" in both:
        raise ToolOutputError("rocm-smi: the amdgpu driver is not loaded (Driver not initialized)")
    if "No JSON data to report" in both:
        raise ToolOutputError("rocm-smi had no data to report for the requested readings (No JSON data to report)")
    init = re.search(r"ROCm SMI returned (\d+)", both)
    if init and not stdout.strip():
        raise ToolOutputError(f"rocm-smi could not start its library (ROCm SMI returned {init.group(1)})")
    if "unrecognized arguments" in stderr and not stdout.strip():
        raise ToolOutputError(f"rocm-smi rejected its arguments: {_short(stderr.strip().splitlines()[-1], 120)}")


def parse_rocm_smi(stdout: str, stderr: str = "") -> list[ToolGpu]:
    """Parse ``rocm-smi ... --json`` into one ToolGpu per ``cardN`` key (rocm-smi's order)."""
    check_rocm_smi_failure(stdout, stderr)
    data = extract_json(stdout, "rocm-smi")
    if not isinstance(data, dict):
        raise ToolOutputError(f"rocm-smi printed JSON of an unexpected shape ({type(data).__name__}, not an object)")
    gpus = []
    for key in sorted((k for k in data if re.fullmatch(r"card\d{1,9}", k)), key=lambda k: int(k[4:])):
        fields = data[key]
        if isinstance(fields, dict):
            gpus.append(parse_rocm_smi_card(key, fields))
    if not gpus:
        raise ToolOutputError("rocm-smi reported no GPU (no cardN entries in its JSON)")
    return gpus


_ROCM_SMI_TEXT_RE = re.compile(r"^GPU\[(\d{1,9})\]\s*:\s*(.+?)\s*$")


def rocm_smi_text_fields(text: str) -> dict[str, dict[str, str]]:
    """``GPU[N]\t\t: key: value`` lines of rocm-smi's plain output → the JSON's card → fields.

    rocm-smi builds its JSON by splitting these same lines on ': ' (ROCm/rocm_smi_lib python_smi_tools/rocm_smi.py),
    so the result parses exactly like ``--json`` output. Banner lines and lines without a value are skipped.
    """
    cards: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        match = _ROCM_SMI_TEXT_RE.match(line)
        if not match or ": " not in match.group(2):
            continue
        key, value = match.group(2).split(": ", 1)
        cards.setdefault(f"card{match.group(1)}", {})[key.strip()] = value.strip()
    return cards


def parse_rocm_smi_text(text: str) -> list[ToolGpu]:
    """Parse rocm-smi's plain (non-JSON) output, as pasted in bug reports and support bundles."""
    check_rocm_smi_failure(text, "")
    cards = rocm_smi_text_fields(text)
    if not cards:
        raise ToolOutputError("no 'GPU[N] : key: value' lines in this rocm-smi output")
    return [parse_rocm_smi_card(card, fields) for card, fields in sorted(cards.items(), key=lambda c: int(c[0][4:]))]


def parse_rocm_smi_card(card: str, fields: Mapping[str, Any]) -> ToolGpu:
    """One ``cardN`` object: every value is a string (ROCm/rocm_smi_lib python_smi_tools/rocm_smi.py)."""
    gpu = ToolGpu(tool_id=card)
    gpu.pci = normalize_pci(fields.get("PCI Bus"))
    for name_key in ("Card SKU", "Card series", "Device Name", "Card Series", "Card model"):
        name = fields.get(name_key)
        if isinstance(name, str) and name.strip() and not is_na(name):
            gpu.name = name.strip()
            break
    gpu.device_id = _hex_or_none(fields.get("Device ID"))
    vbios = fields.get("VBIOS version")
    if isinstance(vbios, str) and vbios.strip() and not is_na(vbios):
        gpu.vbios = vbios.strip()
    uid = fields.get("Unique ID")
    if isinstance(uid, str) and uid.strip() and not is_na(uid):
        gpu.unique_id = uid.strip()
    _rocm_smi_temperatures(gpu, fields)
    _rocm_smi_power(gpu, fields)
    _rocm_smi_scalars(gpu, fields)
    return gpu


def _mapping_at(entry: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """entry[key] when it is a JSON object, else an empty one (tools print a string or null there too)."""
    value = entry.get(key)
    return value if isinstance(value, dict) else {}


def _hex_or_none(value: Any) -> int | None:
    """A PCI id as the tools print it ("0x744c" or "29772"); None past 64 bits (a 5000-digit id made a
    number no report could print, issue 11 item 3)."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if text.lower().startswith("0x"):
        digits = text[2:]
        return bounded_int(digits, base=16) if re.fullmatch(r"[0-9a-fA-F]+", digits) else None
    return bounded_int(text) if text.isascii() and text.isdigit() else None


def _rocm_smi_temperatures(gpu: ToolGpu, fields: Mapping[str, Any]) -> None:
    seen = set()
    for key, value in fields.items():
        match = _ROCM_SMI_TEMP_RE.match(key)
        if not match:
            continue
        label = rocm_smi_sensor_label(match.group("sensor"))
        seen.add(label)
        number = _number(value)
        if number is not None:
            gpu.temperature_c[label] = number
        elif label in _MAIN_SENSORS:
            # rocm-smi 5.x prints "N/A" for a sensor it cannot read; non-HBM GPUs report N/A for
            # every "HBM n" sensor, which is not worth a reason.
            gpu.mark(f"temperature_c.{label}", "rocm-smi reports N/A" if is_na(value) else garbage(value))
    for label in _MAIN_SENSORS:
        if label not in seen:
            # Newer rocm-smi omits unreadable sensors from its JSON entirely (ROCm/rocm_smi_lib
            # python_smi_tools/rocm_smi.py).
            gpu.mark(f"temperature_c.{label}", NOT_REPORTED)


def _rocm_smi_power(gpu: ToolGpu, fields: Mapping[str, Any]) -> None:
    reason = None
    for key in ROCM_SMI_POWER_KEYS:
        if key not in fields:
            continue
        value = fields[key]
        number = _number(value)
        if number is not None and number >= 0:
            gpu.metrics["power_w"] = number
            return
        if reason is None:
            if isinstance(value, str) and "secondary die" in value.lower():
                reason = SECONDARY_DIE
            else:
                reason = "rocm-smi reports N/A" if is_na(value) else garbage(value)
    gpu.mark("power_w", reason or NOT_REPORTED)


# (rocm-smi key, metric, converter). First present key wins for each metric.
def _as_int(value: Any) -> int | None:
    number = _number(value)
    return int(number) if number is not None and number.is_integer() and abs(number) < 2.0 ** 63 else None


def _as_float(value: Any) -> float | None:
    return _number(value)


def _clock(value: Any) -> int | None:
    if not isinstance(value, str):
        return None
    match = _ROCM_SMI_MHZ_RE.search(value)
    return int(float(match.group(1))) if match else None


def _fan_level_percent(value: Any) -> float | None:
    # Plain-text era "Fan Level": "89 (35%)".
    if isinstance(value, str):
        match = re.search(r"\((\d{1,12}(?:\.\d{1,12})?)%\)", value)
        if match:
            return float(match.group(1))
    return None


def _perf_level(value: Any) -> str | None:
    if isinstance(value, str) and value.strip() and not is_na(value) and re.fullmatch(r"[A-Za-z_]+", value.strip()):
        return value.strip().lower()
    return None


_ROCM_SMI_SCALARS: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = (
    ("vram_total_bytes", (("VRAM Total Memory (B)", _as_int),)),
    ("vram_used_bytes", (("VRAM Total Used Memory (B)", _as_int),)),
    ("gtt_total_bytes", (("GTT Total Memory (B)", _as_int),)),
    ("gtt_used_bytes", (("GTT Total Used Memory (B)", _as_int),)),
    ("gpu_busy_percent", (("GPU use (%)", _as_float),)),
    # "Memory Activity" is a coarse-grain counter in newer releases, not a percentage: not used.
    ("mem_busy_percent", (("GPU memory use (%)", _as_float), ("GPU Memory Read/Write Activity (%)", _as_float))),
    ("power_cap_w", (("Max Graphics Package Power (W)", _as_float),)),
    # rocm-smi's "clock speed" is the active pp_dpm_* level (rocm_smi_lib reads the `*` line), not the
    # actual clock: it goes where the sysfs backend puts that level.
    ("sclk_dpm_mhz", (("sclk clock speed:", _clock), ("sclk clock level:", _clock))),
    ("mclk_dpm_mhz", (("mclk clock speed:", _clock), ("mclk clock level:", _clock))),
    ("fan_rpm", (("Fan RPM", _as_int),)),
    ("fan_percent", (("Fan speed (%)", _as_float), ("Fan Level", _fan_level_percent))),
    ("voltage_mv", (("Voltage (mV)", _as_float),)),
    ("performance_level", (("Performance Level", _perf_level),)),
)


def _rocm_smi_scalars(gpu: ToolGpu, fields: Mapping[str, Any]) -> None:
    # Releases differ in case only ("Fan speed (%)" / "Fan Speed (%)", "vram Total Memory (B)" /
    # "VRAM Total Memory (B)"): keys are matched without case.
    folded = {str(key).lower(): value for key, value in fields.items()}
    for metric, candidates in _ROCM_SMI_SCALARS:
        reason = None
        for key, convert in candidates:
            if key.lower() not in folded:
                continue
            raw = folded[key.lower()]
            value = convert(raw)
            if value is not None and not (isinstance(value, int | float) and value < 0):
                gpu.metrics[metric] = value
                reason = None
                break
            if reason is None:
                reason = "rocm-smi reports N/A" if is_na(raw) else garbage(raw)
        else:
            gpu.mark(metric, reason or NOT_REPORTED)


# -- amd-smi --------------------------------------------------------------------------------

AMD_SMI_NOT_REPORTED = "amd-smi does not report it"
AMD_SMI_NA = "amd-smi reports N/A"

# Unit scale factors to rocmdesk's unit per kind (lower-cased unit spellings).
_UNITS: dict[str, dict[str, float]] = {
    "W": {"w": 1.0, "mw": 1e-3, "uw": 1e-6, "µw": 1e-6, "kw": 1e3},
    "B": {"b": 1, "kb": 1024, "kib": 1024, "mb": 1048576, "mib": 1048576, "gb": 1 << 30, "gib": 1 << 30},
    "MHz": {"mhz": 1.0, "ghz": 1e3, "khz": 1e-3, "hz": 1e-6},
    "C": {"c": 1.0, "°c": 1.0, "mc": 1e-3, "millidegrees c": 1e-3},
    "mV": {"mv": 1.0, "v": 1e3},
    "%": {"%": 1.0},
    "RPM": {"rpm": 1.0},
}


def amd_smi_leaf(value: Any, kind: str, bare_unit: str) -> tuple[float | None, str | None]:
    """(number in ``kind`` units, reason) from a ``{"value","unit"}`` leaf or a bare value.

    ``bare_unit`` is the unit of a bare number (ROCm 6.0 printed plain values; ROCm/amdsmi CHANGELOG.md 6.1).
    """
    unit = bare_unit
    if isinstance(value, dict):
        if "value" not in value:
            return None, garbage(json.dumps(value))
        unit = str(value.get("unit") or bare_unit)
        value = value["value"]
    if value is None:
        return None, AMD_SMI_NA
    if is_na(value):
        return None, AMD_SMI_NA
    number = _number(value)
    if number is None:
        # Some releases print "45 C" / "300 W" strings in place of numbers.
        if isinstance(value, str):
            match = re.fullmatch(r"\s*(-?\d{1,20}(?:\.\d{1,20})?)\s+(\S.*?)\s*", value)  # 5000 digits: inf
            if match:
                number, unit = float(match.group(1)), match.group(2)
        if number is None:
            return None, garbage(value)
    scale = _UNITS[kind].get(unit.strip().lower())
    if scale is None:
        return None, f"unknown unit '{_short(unit)}'"
    return number * scale, None


def amd_smi_entries(data: Any) -> list[dict]:
    """The per-GPU dicts of any amd-smi JSON: a plain list, ``{"gpu_data": [...]}`` or one dict."""
    if isinstance(data, dict) and "gpu_data" in data:
        data = data["gpu_data"]
    if isinstance(data, dict) and "gpu" in data:
        data = [data]
    if not isinstance(data, list):
        raise ToolOutputError(f"amd-smi printed JSON of an unexpected shape ({type(data).__name__})")
    return [e for e in data if isinstance(e, dict)]


def check_amd_smi_failure(stdout: str, stderr: str) -> None:
    both = f"{stderr}\n{stdout}"
    if "Driver not loaded" in both or "amdgpu not found in modules" in both:
        raise ToolOutputError("amd-smi: the amdgpu driver is not loaded (Driver not loaded)")
    if "Unable to detect any GPU devices" in both:
        raise ToolOutputError("amd-smi found no GPU (Unable to detect any GPU devices)")
    if "Permission denied" in both and not stdout.strip():
        raise ToolOutputError("amd-smi: permission denied (is the user in the render and video groups?)")


def _gpu_index(entry: Mapping[str, Any], position: int) -> str:
    gpu = entry.get("gpu")
    if isinstance(gpu, int) and not isinstance(gpu, bool):
        return str(gpu)
    if isinstance(gpu, str) and gpu.strip().isdigit():
        return gpu.strip()
    return str(position)


def parse_amd_smi_list(stdout: str, stderr: str = "") -> dict[str, str]:
    """gpu index → PCI address from ``amd-smi list --json`` (or ``static --json``)."""
    check_amd_smi_failure(stdout, stderr)
    out = {}
    for position, entry in enumerate(amd_smi_entries(extract_json(stdout, "amd-smi"))):
        bus = _mapping_at(entry, "bus")
        pci = normalize_pci(entry.get("bdf")) or normalize_pci(bus.get("bdf"))
        if pci:
            out[_gpu_index(entry, position)] = pci
    return out


def parse_amd_smi_static(stdout: str, stderr: str = "") -> dict[str, ToolGpu]:
    """Identity and power limits from ``amd-smi static --json``, by gpu index.

    Limit keys from ROCm/amdsmi amdsmi_cli/amdsmi_commands.py: ``max_power``, ``min_power`` and
    ``socket_power`` (the cap in force; ``current_power`` in older releases).
    """
    check_amd_smi_failure(stdout, stderr)
    out: dict[str, ToolGpu] = {}
    for position, entry in enumerate(amd_smi_entries(extract_json(stdout, "amd-smi"))):
        gpu = ToolGpu(tool_id=_gpu_index(entry, position))
        bus = _mapping_at(entry, "bus")
        gpu.pci = normalize_pci(entry.get("bdf")) or normalize_pci(bus.get("bdf"))
        asic = _mapping_at(entry, "asic")
        name = asic.get("market_name")
        if isinstance(name, str) and name.strip() and not is_na(name):
            gpu.name = name.strip()
        gpu.device_id = _hex_or_none(asic.get("device_id"))
        vbios = _mapping_at(entry, "vbios")
        for vkey in ("version", "vbios_version", "part_number"):
            text = vbios.get(vkey)
            if isinstance(text, str) and text.strip() and not is_na(text):
                gpu.vbios = text.strip()
                break
        limit = entry.get("limit")
        if isinstance(limit, dict):
            for metric, keys in (("power_cap_max_w", ("max_power",)), ("power_cap_min_w", ("min_power",)),
                                 ("power_cap_w", ("socket_power", "current_power"))):
                _amd_leaf_into(gpu, metric, limit, keys, "W", "W")
        out[gpu.tool_id] = gpu
    return out


def _amd_leaf_into(gpu: ToolGpu, metric: str, section: Any, keys: Iterable[str], kind: str, bare_unit: str,
                   as_int: bool = False, section_reason: str | None = None) -> None:
    if section_reason:
        gpu.mark(metric, section_reason)
        return
    if not isinstance(section, dict):
        gpu.mark(metric, AMD_SMI_NOT_REPORTED)
        return
    reason = None
    for key in keys:
        if key not in section:
            continue
        number, why = amd_smi_leaf(section[key], kind, bare_unit)
        if number is not None and number >= 0:
            gpu.metrics[metric] = round(number) if as_int else number
            return
        reason = reason or why or f"negative value {number:g}"
    gpu.mark(metric, reason or AMD_SMI_NOT_REPORTED)


def _section(entry: Mapping[str, Any], name: str) -> tuple[Any, str | None]:
    """A metric section and, when the whole section is "N/A" (F12) or missing, why."""
    if name not in entry:
        return None, AMD_SMI_NOT_REPORTED
    section = entry[name]
    if is_na(section):
        return None, AMD_SMI_NA
    if not isinstance(section, dict):
        return None, garbage(section)
    return section, None


_AMD_SMI_TEMP_LABELS = {"edge": "edge", "hotspot": "junction", "junction": "junction", "mem": "mem",
                        "vram": "mem", "memory": "mem"}


def _amd_smi_temperatures(gpu: ToolGpu, entry: Mapping[str, Any]) -> None:
    section, why = _section(entry, "temperature")
    if why:
        for label in _MAIN_SENSORS:
            gpu.mark(f"temperature_c.{label}", why)
        return
    for key, value in section.items():
        label = _AMD_SMI_TEMP_LABELS.get(key) or re.sub(r"[^a-z0-9]", "", key.lower())
        number, reason = amd_smi_leaf(value, "C", "C")
        if number is not None:
            gpu.temperature_c[label] = number
        elif label in _MAIN_SENSORS:
            gpu.mark(f"temperature_c.{label}", reason or AMD_SMI_NA)
    for label in _MAIN_SENSORS:
        if label not in gpu.temperature_c:
            gpu.mark(f"temperature_c.{label}", AMD_SMI_NOT_REPORTED)


def _amd_smi_clocks(gpu: ToolGpu, entry: Mapping[str, Any]) -> None:
    section, why = _section(entry, "clock")
    for metric, names in (("sclk_mhz", ("gfx_0", "gfx")), ("mclk_mhz", ("mem_0", "mem"))):
        if why:
            gpu.mark(metric, why)
            continue
        domain = next((section[n] for n in names if n in section), None)
        if domain is None:
            gpu.mark(metric, AMD_SMI_NOT_REPORTED)
        elif is_na(domain):
            gpu.mark(metric, AMD_SMI_NA)
        else:
            _amd_leaf_into(gpu, metric, domain, ("clk", "cur_clk", "current_clk"), "MHz", "MHz", as_int=True)


def parse_amd_smi_metric(stdout: str, stderr: str = "") -> list[ToolGpu]:
    """Parse ``amd-smi metric --json`` (6.0 bare values, 6.1+ value/unit leaves, 7.x envelope)."""
    check_amd_smi_failure(stdout, stderr)
    return amd_smi_metric_gpus(amd_smi_entries(extract_json(stdout, "amd-smi")))


_AMD_SMI_TEXT_RE = re.compile(r"^(?P<indent>\s*)(?P<key>[A-Za-z0-9_ ]+?):\s*(?P<value>.*?)\s*$")


def amd_smi_text_entries(text: str) -> list[dict]:
    """amd-smi's human output (``GPU: 0`` then indented ``KEY: value unit``) as JSON-like dicts.

    Keys are lower-cased; ``"20 W"`` stays a string, which amd_smi_leaf reads with its unit.
    """
    entries: list[dict] = []
    stack: list[tuple[int, dict]] = []
    for line in text.splitlines():
        match = _AMD_SMI_TEXT_RE.match(line)
        if not match or line.lstrip().startswith("$"):
            continue
        indent, key, value = len(match.group("indent").expandtabs()), match.group("key").strip().lower(), \
            match.group("value")
        if indent == 0 and key == "gpu":
            number = bounded_int(value) if value.isascii() and value.isdigit() else None
            entry: dict = {"gpu": number if number is not None else value}
            entries.append(entry)
            stack = [(-1, entry)]
            continue
        if not stack:
            continue
        while len(stack) > 1 and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if value:
            parent[key] = value
        else:
            child: dict = {}
            parent[key] = child
            stack.append((indent, child))
    return entries


def parse_amd_smi_text(text: str) -> list[ToolGpu]:
    """Parse ``amd-smi metric`` human output (as pasted in bug reports)."""
    check_amd_smi_failure(text, "")
    return amd_smi_metric_gpus(amd_smi_text_entries(text))


def amd_smi_metric_gpus(entries: list[dict]) -> list[ToolGpu]:
    """ToolGpus from the per-GPU dicts of ``amd-smi metric``."""
    if not entries:
        raise ToolOutputError("amd-smi reported no GPU (empty list)")
    gpus = []
    for position, entry in enumerate(entries):
        gpu = ToolGpu(tool_id=_gpu_index(entry, position))
        bus = _mapping_at(entry, "bus")
        gpu.pci = normalize_pci(entry.get("bdf")) or normalize_pci(bus.get("bdf"))
        _amd_smi_temperatures(gpu, entry)
        power, why = _section(entry, "power")
        _amd_leaf_into(gpu, "power_w", power, ("socket_power", "current_socket_power", "average_socket_power"),
                       "W", "W", section_reason=why)
        _amd_leaf_into(gpu, "voltage_mv", power, ("gfx_voltage",), "mV", "mV", section_reason=why)
        usage, why = _section(entry, "usage")
        _amd_leaf_into(gpu, "gpu_busy_percent", usage, ("gfx_activity",), "%", "%", section_reason=why)
        _amd_leaf_into(gpu, "mem_busy_percent", usage, ("umc_activity",), "%", "%", section_reason=why)
        mem, why = _section(entry, "mem_usage")
        for metric, key in (("vram_total_bytes", "total_vram"), ("vram_used_bytes", "used_vram"),
                            ("gtt_total_bytes", "total_gtt"), ("gtt_used_bytes", "used_gtt")):
            # amd-smi prints memory in MB (bytes // 1048576: ROCm/amdsmi amdsmi_cli/amdsmi_commands.py) with or
            # without a unit.
            _amd_leaf_into(gpu, metric, mem, (key,), "B", "MB", as_int=True, section_reason=why)
        fan, why = _section(entry, "fan")
        _amd_leaf_into(gpu, "fan_rpm", fan, ("rpm",), "RPM", "RPM", as_int=True, section_reason=why)
        _amd_leaf_into(gpu, "fan_percent", fan, ("usage",), "%", "%", section_reason=why)
        _amd_smi_clocks(gpu, entry)
        perf = entry.get("perf_level")
        level = _perf_level(perf.replace("AMDSMI_DEV_PERF_LEVEL_", "") if isinstance(perf, str) else None)
        if level:
            gpu.metrics["performance_level"] = level
        else:
            gpu.mark("performance_level", AMD_SMI_NA if is_na(perf) else AMD_SMI_NOT_REPORTED)
        gpus.append(gpu)
    return gpus
