"""What a GPU lets the user tune right now, read (unprivileged) from its sysfs through a HostRoot.

The Tuning tab offers only what this returns: the power cap range from power1_cap_min/max (default
from power1_cap_default), the performance levels when the control exists, and the power profiles of the
GPU's own pp_power_profile_mode table (CUSTOM left out: it needs parameters rocmdesk does not set).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from rocmdesk.fixes.actions import PERFORMANCE_LEVELS
from rocmdesk.host import HostReadError, HostRoot
from rocmdesk.telemetry import parsers
from rocmdesk.telemetry.parsers import parse_power_profiles

log = logging.getLogger(__name__)

PCI_RE = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", re.ASCII)


@dataclass(slots=True)
class PowerCap:
    current_w: float
    min_w: float
    max_w: float
    default_w: float | None

    @property
    def adjustable(self) -> bool:
        return self.max_w > self.min_w


@dataclass(slots=True)
class TuningState:
    pci: str
    power_cap: PowerCap | None = None
    performance_level: str | None = None
    levels: tuple[str, ...] = ()
    profiles: dict[int, str] = field(default_factory=dict)  # offered profiles only
    active_profile: int | None = None
    notes: list[str] = field(default_factory=list)  # why something is not offered

    @property
    def has_controls(self) -> bool:
        return bool(self.power_cap or self.levels or self.profiles)


def parse_profiles(text: str) -> tuple[dict[int, str], int | None]:
    """(index -> name, active index) of a ``pp_power_profile_mode`` table, every layout the kernel prints
    (telemetry's :func:`~rocmdesk.telemetry.parsers.parse_power_profiles`, so the tab and the charts agree)."""
    profiles = parse_power_profiles(text)
    return {p.index: p.name for p in profiles}, next((p.index for p in profiles if p.active), None)


def _read(root: HostRoot, path: str) -> str | None:
    try:
        return root.read_text(path).replace("\x00", "").strip()
    except HostReadError:
        return None


def _microwatts(text: str | None) -> float | None:
    """hwmon µW as W; None for anything but plain digits within the power range the sampler accepts (a 5000-digit
    value made int() raise and took the Tuning tab down: issue 11 item 3)."""
    if text is None or not text.isascii() or not text.isdigit():
        return None
    value = parsers.bounded_int(text)
    return None if value is None or value > parsers.POWER_MAX_UW else value / 1e6


def _hwmon(root: HostRoot, device: str) -> str | None:
    for path in root.glob(f"{device}/hwmon", "hwmon*"):
        if _read(root, f"{path}/name") == "amdgpu":
            return path
    return None


def read_tuning_state(root: HostRoot, pci: str) -> TuningState:
    if not PCI_RE.fullmatch(pci):
        raise ValueError(f"not a PCI address: {pci!r}")
    device = f"/sys/bus/pci/devices/{pci}"
    state = TuningState(pci)
    driver = root.readlink(f"{device}/driver") or ""
    if driver.rsplit("/", 1)[-1] != "amdgpu":
        state.notes.append("This GPU is not driven by amdgpu, so rocmdesk cannot tune it.")
        return state
    hwmon = _hwmon(root, device)
    if hwmon:
        cap = _microwatts(_read(root, f"{hwmon}/power1_cap"))
        low = _microwatts(_read(root, f"{hwmon}/power1_cap_min"))
        high = _microwatts(_read(root, f"{hwmon}/power1_cap_max"))
        default = _microwatts(_read(root, f"{hwmon}/power1_cap_default"))
        if cap is not None and low is not None and high is not None:
            state.power_cap = PowerCap(cap, low, high, default)
            if not state.power_cap.adjustable:
                state.notes.append(f"The power cap is fixed at {high:g} W on this GPU.")
        else:
            state.notes.append("This GPU does not report a power cap range.")
    level = _read(root, f"{device}/power_dpm_force_performance_level")
    if level is not None:
        state.performance_level = level
        state.levels = PERFORMANCE_LEVELS
    else:
        state.notes.append("This GPU has no performance level control.")
    table_text = _read(root, f"{device}/pp_power_profile_mode")
    if table_text is not None:
        table, active = parse_profiles(table_text)
        state.profiles = {i: n for i, n in table.items() if n != "CUSTOM"}
        state.active_profile = active
        if not table:
            state.notes.append("The power profile table could not be read.")
    else:
        state.notes.append("This GPU has no power profiles.")
    return state
