"""The slower-changing facts under an Overview card: PCIe link, voltage, VBIOS, performance level, profile.

Pure (no Qt): a sample in, (caption, text, tooltip) rows out, each N/A with the backend's reason when
missing. These were read and written to JSON but shown nowhere in the window (issue 14).
"""

from __future__ import annotations

from rocmdesk.telemetry.model import GpuSample
from rocmdesk.ui.formatting import NA, is_number, reason_of

# PCIe generation by per-lane rate (PCI-SIG base specifications 1.0-6.0: 2.5, 5, 8, 16, 32, 64 GT/s)
PCIE_GENERATIONS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
LINK_BELOW_MAX_TIP = ("Below the link's maximum. At idle this is normal (the link trains down to save "
                      "power); under load it means the slot, a riser or a BIOS setting limits the GPU.")


def fmt_link(speed_gts: object, width: object) -> str | None:
    """16.0, 16 -> "Gen4 x16"; an unknown rate shows as GT/s; None when neither is known."""
    parts = []
    if is_number(speed_gts):
        gen = PCIE_GENERATIONS.get(float(speed_gts))  # type: ignore[arg-type]
        parts.append(f"Gen{gen}" if gen else f"{float(speed_gts):g} GT/s")  # type: ignore[arg-type]
    if is_number(width):
        parts.append(f"x{int(width)}")  # type: ignore[call-overload]
    return " ".join(parts) or None


def pcie_row(s: GpuSample) -> tuple[str, str, str]:
    pcie = s.pcie or {}
    now = fmt_link(pcie.get("speed_gts"), pcie.get("width"))
    if now is None:
        return "PCIe", NA, reason_of(s.unavailable, "pcie")
    top = fmt_link(pcie.get("max_speed_gts"), pcie.get("max_width"))
    tip = f"Link now: {now} (current_link_speed/width)"
    if top is None:
        return "PCIe", f"{now} (max N/A)", f"{tip}; the maximum is not reported (no max_link_speed/width)"
    tip += f"; maximum: {top} (max_link_speed/width)"
    below = any(is_number(pcie.get(a)) and is_number(pcie.get(b)) and pcie[a] < pcie[b]
                for a, b in (("speed_gts", "max_speed_gts"), ("width", "max_width")))
    if below:
        return "PCIe", f"{now} of max {top}", f"{LINK_BELOW_MAX_TIP}\n{tip}"
    return "PCIe", f"{now} (max)", tip


def voltage_row(s: GpuSample) -> tuple[str, str, str]:
    rails = {k: v for k, v in s.voltage_mv_by_rail.items() if is_number(v)}
    if is_number(s.voltage_mv):
        others = [f"{k} {v:.0f}" for k, v in sorted(rails.items()) if k != "gfx"]
        text = f"{s.voltage_mv:.0f} mV" + (f" · {' '.join(others)} mV" if others else "")
        return "Voltage", text, "graphics core voltage (hwmon in0_input, vddgfx)"
    if rails:
        return "Voltage", " · ".join(f"{k} {v:.0f} mV" for k, v in sorted(rails.items())), \
            "voltage by rail (gpu_metrics or hwmon in*_input)"
    return "Voltage", NA, reason_of(s.unavailable, "voltage_mv")


def rows(s: GpuSample) -> list[tuple[str, str, str]]:
    """The details rows of one card, in display order."""
    vbios = s.info.vbios
    level = s.performance_level
    profile = s.power_profile
    return [
        pcie_row(s),
        voltage_row(s),
        ("Perf level", level, "power_dpm_force_performance_level: auto lets the driver pick clocks")
        if level else ("Perf level", NA, reason_of(s.unavailable, "performance_level")),
        ("Profile", profile, "the active power profile (pp_power_profile_mode)")
        if profile else ("Profile", NA, reason_of(s.unavailable, "power_profile")),
        ("VBIOS", vbios, "video BIOS version (vbios_version)")
        if vbios else ("VBIOS", NA, _vbios_reason(s)),
    ]


def _vbios_reason(s: GpuSample) -> str:
    if "vbios" in s.unavailable:
        return s.unavailable["vbios"]
    if s.info.driver and not s.info.on_amdgpu:
        return f"not on amdgpu ({s.info.driver} driver): vbios_version is an amdgpu file"
    return "this GPU or backend reports no VBIOS version (vbios_version)"
