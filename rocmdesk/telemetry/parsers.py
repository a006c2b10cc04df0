"""Pure parsers for amdgpu sysfs, hwmon and KFD text (no I/O: the backends do the reading).

Every parser is strict. A sysfs file holds exactly one value and a trailing newline; anything
else ('123abc', '', '  ', a negative count, a number wider than 64 bits) is *garbage* and raises
:class:`ValueProblem`, whose message is the reason users see ("garbage value '12ab'"). A value
that parses but cannot be physical raises it too ("out of range value '101'"). Nothing here
ever turns a bad file into 0.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

U64_MAX = (1 << 64) - 1
# 2**64 has 20 digits; a longer run is garbage before int() is even tried, so a hostile file can
# never reach CPython's 4300-digit conversion limit (ValueError "Exceeds the limit", PEP 651's
# int_max_str_digits, CPython gh-95778) nor spend time converting a megabyte of digits.
MAX_INT_DIGITS = 20
_INT_RE = re.compile(r"-?[0-9]+")
_HEX_RE = re.compile(r"0[xX][0-9a-fA-F]+")
_FLOAT_RE = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]{1,3})?")
_SHOWN_CHARS = 24


class ValueProblem(ValueError):
    """A file's content is not a usable value; ``str(exc)`` is the user-facing reason."""


def clean(text: str) -> str:
    """The text up to the first NUL: some dumps (and the kernel's page buffers) are NUL-padded."""
    return text.partition("\x00")[0]


def _shown(text: str) -> str:
    text = clean(text).strip()
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "…"


def garbage(text: str) -> ValueProblem:
    if not clean(text).strip():
        return ValueProblem("empty file")
    return ValueProblem(f"garbage value '{_shown(text)}'")


def out_of_range(text: str) -> ValueProblem:
    return ValueProblem(f"out of range value '{_shown(text)}'")


def parse_int(text: str, *, signed: bool = False, minimum: int | None = None,
              maximum: int | None = None) -> int:
    """One decimal integer. Unsigned unless ``signed``; must fit 64 bits (signed: int64)."""
    body = clean(text).strip()
    if len(body.lstrip("-")) > MAX_INT_DIGITS:
        raise garbage(text)
    if not _INT_RE.fullmatch(body) or (body.startswith("-") and not signed):
        raise garbage(text)
    value = int(body)
    if signed:
        if not -(1 << 63) <= value < (1 << 63):
            raise garbage(text)
    elif value > U64_MAX:
        raise garbage(text)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise out_of_range(text)
    return value


def bounded_int(digits: str, *, base: int = 10) -> int | None:
    """``int(digits, base)`` for a run a regex already matched, or None past 64 bits.

    For parsers whose pattern captures ``[0-9]+`` inside a longer line (DPM rows, fdinfo): the
    length check keeps them clear of CPython's 4300-digit limit and of values no counter holds.
    """
    if len(digits) > (MAX_INT_DIGITS if base == 10 else 16 if base == 16 else 64):
        return None
    value = int(digits, base)
    return value if value <= U64_MAX else None


def parse_float(text: str, *, minimum: float | None = None, maximum: float | None = None) -> float:
    """One finite decimal number ("1.5", "-3", "2e3"); NaN, inf and over-long text are garbage."""
    body = clean(text).strip()
    if len(body) > 64 or not _FLOAT_RE.fullmatch(body):
        raise garbage(text)
    value = float(body)
    if not math.isfinite(value):
        raise ValueProblem(f"garbage value '{_shown(text)}' (not a finite number)")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise out_of_range(text)
    return value


def parse_hex_id(text: str, bits: int = 16) -> int:
    """A PCI id as sysfs writes it ("0x1002")."""
    body = clean(text).strip()
    if len(body) > 2 + 16 or not _HEX_RE.fullmatch(body):
        raise garbage(text)
    value = int(body, 16)
    if value >= 1 << bits:
        raise out_of_range(text)
    return value


def parse_word(text: str) -> str:
    """A one-word state such as ``power_dpm_force_performance_level`` ("auto", "manual")."""
    body = clean(text).strip()
    if not re.fullmatch(r"[A-Za-z0-9_]+", body):
        raise garbage(text)
    return body


# Linux Documentation/gpu/amdgpu/thermal.rst (power_dpm_force_performance_level) plus "perf_determinism"
# (MI200/MI300; drivers/gpu/drm/amd/pm/amdgpu_pm.c).
PERFORMANCE_LEVELS = frozenset({"auto", "low", "high", "manual", "profile_standard", "profile_min_sclk",
                                "profile_min_mclk", "profile_peak", "perf_determinism"})


def parse_performance_level(text: str) -> str:
    """``power_dpm_force_performance_level``: one of the levels the kernel documents."""
    word = clean(text).strip()
    if word not in PERFORMANCE_LEVELS:
        raise garbage(text)
    return word


def parse_line(text: str) -> str:
    """A free-text one-line attribute (vbios_version); empty is garbage."""
    body = clean(text).strip()
    if not body or "\n" in body or "\x00" in body:
        raise garbage(text)
    return body


# -- units ----------------------------------------------------------------------------------

# Temperatures outside this window are not a GPU reading (hwmon uses -273150 as "no value").
TEMP_MIN_MC = -60_000
TEMP_MAX_MC = 250_000


def millidegrees_to_c(text: str) -> float:
    """hwmon temperature (m°C) to °C."""
    value = parse_int(text, signed=True)
    if not TEMP_MIN_MC <= value <= TEMP_MAX_MC:
        raise out_of_range(text)
    return value / 1000.0


# 100 kW: far above any board (MI300X is 750 W), far below a garbage 64-bit number.
POWER_MAX_UW = 100_000_000_000


def microwatts_to_w(text: str) -> float:
    """hwmon power (µW) to W."""
    return parse_int(text, maximum=POWER_MAX_UW) / 1_000_000.0


def hertz_to_mhz(text: str) -> int:
    """hwmon ``freqN_input`` (Hz) to whole MHz."""
    value = parse_int(text, maximum=100_000_000_000)
    return round(value / 1_000_000)


def percent(text: str) -> int:
    """``gpu_busy_percent`` / ``mem_busy_percent``: an integer 0..100."""
    return parse_int(text, maximum=100)


# -- tables ---------------------------------------------------------------------------------

_DPM_ROW = re.compile(r"^\s*(\w+):\s*([0-9]+)\s*([MG]?Hz)\s*(\*)?\s*$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class DpmLevel:
    level: str  # "0", "1", or "S" (the sleep level on RDNA4)
    mhz: int
    active: bool


def parse_dpm_table(text: str) -> list[DpmLevel]:
    """A ``pp_dpm_sclk``/``pp_dpm_mclk`` table ("1: 2254Mhz *"); [] for an empty file.

    Raises ValueProblem when a non-empty line is not a level row.
    """
    levels = []
    for line in clean(text).splitlines():
        if not line.strip():
            continue
        match = _DPM_ROW.match(line)
        if not match:
            raise garbage(line)
        value = bounded_int(match.group(2))
        if value is None:
            raise garbage(line)
        unit = match.group(3).lower()
        mhz = value * 1000 if unit == "ghz" else (round(value / 1_000_000) if unit == "hz" else value)
        levels.append(DpmLevel(match.group(1), mhz, bool(match.group(4))))
    return levels


def active_dpm_mhz(text: str) -> int | None:
    """The clock of the first level marked ``*`` (the current one), or None if none is marked."""
    for level in parse_dpm_table(text):
        if level.active:
            return level.mhz
    return None


# pp_power_profile_mode layouts (linux drivers/gpu/drm/amd/pm): one row per profile, "%2d %14s%s:" with "*"
# before the colon on the active one (Vega, smu11 navi10_ppt.c / sienna_cichlid_ppt.c, smu13 smu_v13_0_0_ppt.c).
_PROFILE_ROW = re.compile(r"^\s*(\d{1,4})\s+([A-Za-z0-9_]+)\s*(\*?)\s*:")
# Older (Polaris/SMU7) layout: "  1 3D_FULL_SCREEN*   ..." without a colon.
_PROFILE_ROW_OLD = re.compile(r"^\s*(\d{1,4})\s+([A-Z0-9_]+)\s*(\*?)(?:\s|$)")
# smu_v13_0_7 prints "%d %-14s%s" with "* " or "  " after the padded name (kernel source).
_PROFILE_CELL = re.compile(r"\b(\d{1,4}) +([0-9]*[A-Z][A-Z0-9_]*) *(\*)?")


@dataclass(frozen=True, slots=True)
class PowerProfile:
    index: int
    name: str
    active: bool


def parse_power_profiles(text: str) -> list[PowerProfile]:
    """The profile rows of ``pp_power_profile_mode`` (header and per-clock rows are skipped)."""
    rows = []
    lines = clean(text).splitlines()
    first = next((line.strip() for line in lines if line.strip()), "")
    if first[:1].isdigit():
        # SMU 13.0.7 layout (Navi 33): all profiles on the header row, columns below; the
        # active one is followed by "*" (possibly after the name's padding: "4 VR            * ").
        cells = list(_PROFILE_CELL.finditer(first))
        if len(cells) > 1:
            return [PowerProfile(int(m.group(1)), m.group(2), bool(m.group(3))) for m in cells]
    for line in lines:
        match = _PROFILE_ROW.match(line) or _PROFILE_ROW_OLD.match(line)
        if match and not match.group(2).isdigit():
            rows.append(PowerProfile(int(match.group(1)), match.group(2), match.group(3) == "*"))
    return rows


def active_power_profile(text: str) -> str:
    """Name of the row marked ``*``; raises ValueProblem if the table has none."""
    profiles = parse_power_profiles(text)
    for profile in profiles:
        if profile.active:
            return profile.name
    if not profiles:
        raise garbage(text.splitlines()[0] if text.strip() else text)
    raise ValueProblem("no active profile marked in the table")


# -- key/value files --------------------------------------------------------------------------


def parse_kfd_properties(text: str) -> dict[str, int]:
    """A KFD topology ``properties`` file ("key value" lines). Malformed lines are skipped."""
    out: dict[str, int] = {}
    for line in clean(text).splitlines():
        parts = line.split()
        if len(parts) != 2:
            continue
        key, value = parts
        try:
            out[key] = parse_int(value, signed=True)
        except ValueProblem:
            continue
    return out


def parse_uevent(text: str) -> dict[str, str]:
    """A ``uevent`` file ("KEY=value" lines)."""
    out = {}
    for line in clean(text).splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip():
            out[key.strip()] = value.strip()
    return out


def decode_gfx_target_version(value: int) -> str | None:
    """KFD's packed MMmmss to an LLVM target: 90010 → gfx90a, 90402 → gfx942, 110000 → gfx1100.

    The stepping is written as one hex digit (Linux drivers/gpu/drm/amd/amdkfd/kfd_device.c sets 90010 for
    gfx90a); 0 (a CPU node) gives None.
    """
    if value <= 0:
        return None
    major, minor, step = value // 10000, (value // 100) % 100, value % 100
    if step > 15 or minor > 15:
        return None
    return f"gfx{major}{minor:x}{step:x}"


def pci_location_id(pci: str) -> tuple[int, int] | None:
    """(domain, location_id) of "0000:03:00.0" as KFD writes them: bus << 8 | dev << 3 | fn."""
    match = re.fullmatch(r"([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])", pci)
    if not match:
        return None
    domain, bus, dev, fn = (int(g, 16) for g in match.groups())
    return domain, (bus << 8) | (dev << 3) | fn


PCI_ADDRESS_RE = re.compile(r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]")
