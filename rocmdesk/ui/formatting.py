"""Pure text and colour rules for readings: units, N/A, and temperature levels.

A missing value is always the string "N/A" (with the backend's reason shown elsewhere as a
tooltip); nothing here ever turns ``None`` into 0.
"""

from __future__ import annotations

import enum
import math

# one wording for every surface, defined in the Qt-free core; re-exported here for the tabs
from rocmdesk.wording import NA as NA
from rocmdesk.wording import fmt_bytes as fmt_bytes
from rocmdesk.wording import gpu_label as gpu_label
from rocmdesk.wording import short_gpu_name as short_gpu_name

GIB = 1 << 30


class Level(enum.Enum):
    """How close a reading is to its limit; the theme maps each to a colour."""

    UNKNOWN = "unknown"  # no value, or no limit to compare with
    OK = "ok"
    WARM = "warm"
    HOT = "hot"
    CRITICAL = "critical"


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def c_to_unit(celsius: float, unit: str) -> float:
    return celsius * 9.0 / 5.0 + 32.0 if unit == "F" else celsius


def fmt_temp(celsius: float | None, unit: str = "C") -> str:
    if not is_number(celsius):
        return NA
    return f"{c_to_unit(float(celsius), unit):.0f} °{unit}"


def fmt_watts(watts: float | None) -> str:
    if not is_number(watts):
        return NA
    return f"{watts:.0f} W" if watts >= 10 else f"{watts:.1f} W"


def fmt_percent(value: float | None) -> str:
    return f"{value:.0f} %" if is_number(value) else NA


def fmt_mhz(value: float | None) -> str:
    return f"{value:.0f} MHz" if is_number(value) else NA


def fmt_rpm(value: float | None) -> str:
    return f"{value:.0f} RPM" if is_number(value) else NA


def ratio(used: float | None, total: float | None) -> float | None:
    """used/total clamped to [0, 1], or None when either is unknown or total is not positive."""
    if not is_number(used) or not is_number(total) or total <= 0:
        return None
    return min(1.0, max(0.0, used / total))


def temp_level(celsius: float | None, crit: float | None) -> Level:
    """Colour a temperature against this GPU's own critical limit, not a global number.

    Within 5 °C of crit (or above) is critical, within 15 °C hot, within 30 °C warm.
    """
    if not is_number(celsius) or not is_number(crit):
        return Level.UNKNOWN
    margin = crit - celsius
    if margin <= 5:
        return Level.CRITICAL
    if margin <= 15:
        return Level.HOT
    if margin <= 30:
        return Level.WARM
    return Level.OK


def fraction_level(fraction: float | None) -> Level:
    """Level of a use fraction (power against cap, memory against total)."""
    if fraction is None:
        return Level.UNKNOWN
    if fraction >= 0.98:
        return Level.CRITICAL
    if fraction >= 0.9:
        return Level.HOT
    return Level.OK


def reason_of(unavailable: dict[str, str], *keys: str) -> str:
    """The first reason given for any of ``keys``, or a generic sentence."""
    for key in keys:
        if key in unavailable:
            return unavailable[key]
    return "this backend did not report it"


def fmt_age(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "no sample yet"
    if seconds < 1.5:
        return "just now"
    if seconds < 90:
        return f"{seconds:.0f} s ago"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.1f} h ago"


def fmt_window(seconds: int) -> str:
    if seconds < 3600:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h"


# Temperature sensors in the order users expect; others (hwmon labels we do not know) follow.
SENSOR_ORDER = ("junction", "edge", "mem")


def ordered_sensors(labels: object) -> list[str]:
    known = [s for s in SENSOR_ORDER if s in labels]  # type: ignore[operator]
    return known + sorted(s for s in labels if s not in SENSOR_ORDER)  # type: ignore[union-attr]
