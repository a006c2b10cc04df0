"""Decoder for amdgpu's binary ``gpu_metrics`` sysfs file (pure: bytes in, readings out).

The file is a C struct chosen by its 4-byte header (``structure_size``, ``format_revision``,
``content_revision``): format 1 for dGPUs (1.4-1.8: Instinct MI300), 2 and 3 for APUs. The layouts
are those of ``struct gpu_metrics_v<F>_<C>`` in the Linux kernel, drivers/gpu/drm/amd/include/
kgd_pp_interface.h (torvalds/linux), laid out with natural C alignment on LP64 little-endian: the
header has no ``packed`` attribute. Only the exact revision is decoded, since the revisions are not
append-only (1.6 moved the energy counter, 1.7 inserted ``mem_max_bandwidth`` before it).

Before filling the table the driver sets every byte to 0xFF (``smu_cmn_init_soft_gpu_metrics`` in
drivers/gpu/drm/amd/pm/swsmu/smu_cmn.h), so an all-ones field is "not supported", never a value.
Units: format 1 temperatures in degrees C, power in W; format 2 temperatures in centi-degrees C,
power in mW (LACT shows 0.585 W for a raw 585 on the Phoenix dump, 25.00 C edge for 2500); format 3
power in mW and activity in percent as the header states. Throttle reasons are the ASIC-independent
bits of ``indep_throttle_status`` (``SMU_THROTTLER_*_BIT`` in drivers/gpu/drm/amd/pm/swsmu/inc/
amdgpu_smu.h); the ASIC-dependent ``throttle_status`` is kept as a raw number only.
"""

from __future__ import annotations

import logging
import re
import struct
from dataclasses import dataclass, field
from typing import TypedDict

log = logging.getLogger(__name__)

MAX_BYTES = 8192  # the largest layout (1.8) is 3,360 bytes; sysfs pads reads to a page
HEADER = struct.Struct("<HBB")
ENERGY_UNIT_J = 15.259e-6  # 1.4-1.8: "Energy (15.259uJ (2^-16) units)"

_WIDTH = {"B": 1, "H": 2, "I": 4, "Q": 8}
_ALL_ONES = {code: (1 << (8 * size)) - 1 for code, size in _WIDTH.items()}

# One field per entry: "name:type" or "name:type*count"; "_" names are padding or skipped blocks.
# Nested XCP statistics (1.6-1.8) are skipped as opaque bytes: "_xcp:bytes=N" (element size x 8).
_V1_0 = """system_clock_counter:Q temperature_edge:H temperature_hotspot:H temperature_mem:H temperature_vrgfx:H
 temperature_vrsoc:H temperature_vrmem:H average_gfx_activity:H average_umc_activity:H average_mm_activity:H
 average_socket_power:H energy_accumulator:I average_gfxclk_frequency:H average_socclk_frequency:H
 average_uclk_frequency:H average_vclk0_frequency:H average_dclk0_frequency:H average_vclk1_frequency:H
 average_dclk1_frequency:H current_gfxclk:H current_socclk:H current_uclk:H current_vclk0:H current_dclk0:H
 current_vclk1:H current_dclk1:H throttle_status:I current_fan_speed:H pcie_link_width:B pcie_link_speed:B"""
_V1_1 = """temperature_edge:H temperature_hotspot:H temperature_mem:H temperature_vrgfx:H temperature_vrsoc:H
 temperature_vrmem:H average_gfx_activity:H average_umc_activity:H average_mm_activity:H average_socket_power:H
 energy_accumulator:Q system_clock_counter:Q average_gfxclk_frequency:H average_socclk_frequency:H
 average_uclk_frequency:H average_vclk0_frequency:H average_dclk0_frequency:H average_vclk1_frequency:H
 average_dclk1_frequency:H current_gfxclk:H current_socclk:H current_uclk:H current_vclk0:H current_dclk0:H
 current_vclk1:H current_dclk1:H throttle_status:I current_fan_speed:H pcie_link_width:H pcie_link_speed:H _:H
 gfx_activity_acc:I mem_activity_acc:I temperature_hbm:H*4"""
_V1_2 = _V1_1 + " firmware_timestamp:Q"
_V1_3 = _V1_2 + " voltage_soc:H voltage_gfx:H voltage_mem:H _:H indep_throttle_status:Q"
_MI300_HEAD = """temperature_hotspot:H temperature_mem:H temperature_vrsoc:H curr_socket_power:H
 average_gfx_activity:H average_umc_activity:H"""
_MI300_PCIE = """pcie_link_width:H pcie_link_speed:H xgmi_link_width:H xgmi_link_speed:H gfx_activity_acc:I
 mem_activity_acc:I pcie_bandwidth_acc:Q pcie_bandwidth_inst:Q pcie_l0_to_recov_count_acc:Q
 pcie_replay_count_acc:Q pcie_replay_rover_count_acc:Q"""
_MI300_CLOCKS = "current_gfxclk:H*8 current_socclk:H*4 current_vclk0:H*4 current_dclk0:H*4 current_uclk:H"
_MI300_RESIDENCY = """accumulation_counter:I prochot_residency_acc:I ppt_residency_acc:I socket_thm_residency_acc:I
 vr_thm_residency_acc:I hbm_thm_residency_acc:I gfxclk_lock_status:I"""
_V1_4 = f"""{_MI300_HEAD} vcn_activity:H*4 energy_accumulator:Q system_clock_counter:Q throttle_status:I
 gfxclk_lock_status:I {_MI300_PCIE} xgmi_read_data_acc:Q*8 xgmi_write_data_acc:Q*8 firmware_timestamp:Q
 {_MI300_CLOCKS} _:H"""
_V1_5 = f"""{_MI300_HEAD} vcn_activity:H*4 jpeg_activity:H*32 energy_accumulator:Q system_clock_counter:Q
 throttle_status:I gfxclk_lock_status:I {_MI300_PCIE} pcie_nak_sent_count_acc:I pcie_nak_rcvd_count_acc:I
 xgmi_read_data_acc:Q*8 xgmi_write_data_acc:Q*8 firmware_timestamp:Q {_MI300_CLOCKS} _:H"""
_V1_6 = f"""{_MI300_HEAD} energy_accumulator:Q system_clock_counter:Q {_MI300_RESIDENCY} {_MI300_PCIE}
 pcie_nak_sent_count_acc:I pcie_nak_rcvd_count_acc:I xgmi_read_data_acc:Q*8 xgmi_write_data_acc:Q*8
 firmware_timestamp:Q {_MI300_CLOCKS} num_partition:H _xcp:bytes=1344 pcie_lc_perf_other_end_recovery:I"""
_V1_7_HEAD = f"""{_MI300_HEAD} mem_max_bandwidth:Q energy_accumulator:Q system_clock_counter:Q {_MI300_RESIDENCY}
 {_MI300_PCIE} pcie_nak_sent_count_acc:I pcie_nak_rcvd_count_acc:I xgmi_read_data_acc:Q*8
 xgmi_write_data_acc:Q*8 xgmi_link_status:H*8 _:H firmware_timestamp:Q {_MI300_CLOCKS} num_partition:H"""
_V1_7 = _V1_7_HEAD + " _xcp:bytes=1856 pcie_lc_perf_other_end_recovery:I"
_V1_8 = _V1_7_HEAD + " _xcp:bytes=3008 pcie_lc_perf_other_end_recovery:I"
_APU_CLOCKS = """average_gfxclk_frequency:H average_socclk_frequency:H average_uclk_frequency:H
 average_fclk_frequency:H average_vclk_frequency:H average_dclk_frequency:H current_gfxclk:H current_socclk:H
 current_uclk:H current_fclk:H current_vclk:H current_dclk:H current_coreclk:H*8 current_l3clk:H*2
 throttle_status:I fan_pwm:H"""
_APU_POWER = "average_socket_power:H average_cpu_power:H average_soc_power:H average_gfx_power:H average_core_power:H*8"
_APU_TEMPS = "temperature_gfx:H temperature_soc:H temperature_core:H*8 temperature_l3:H*2"
_V2_0 = f"""system_clock_counter:Q {_APU_TEMPS} average_gfx_activity:H average_mm_activity:H {_APU_POWER}
 {_APU_CLOCKS} _:H"""
_V2_1 = f"""{_APU_TEMPS} average_gfx_activity:H average_mm_activity:H system_clock_counter:Q {_APU_POWER}
 {_APU_CLOCKS} _:H*3"""
_V2_2 = _V2_1 + " indep_throttle_status:Q"
_V2_3 = _V2_2 + """ average_temperature_gfx:H average_temperature_soc:H average_temperature_core:H*8
 average_temperature_l3:H*2"""
_V2_4 = _V2_3 + """ average_cpu_voltage:H average_soc_voltage:H average_gfx_voltage:H average_cpu_current:H
 average_soc_current:H average_gfx_current:H"""
_V3_0 = """temperature_gfx:H temperature_soc:H temperature_core:H*16 temperature_skin:H average_gfx_activity:H
 average_vcn_activity:H average_ipu_activity:H*8 average_core_c0_activity:H*16 average_dram_reads:H
 average_dram_writes:H average_ipu_reads:H average_ipu_writes:H system_clock_counter:Q average_socket_power:I
 average_ipu_power:H average_apu_power:I average_gfx_power:I average_dgpu_power:I average_all_core_power:I
 average_core_power:H*16 average_sys_power:H stapm_power_limit:H current_stapm_power_limit:H
 average_gfxclk_frequency:H average_socclk_frequency:H average_vpeclk_frequency:H average_ipuclk_frequency:H
 average_fclk_frequency:H average_vclk_frequency:H average_uclk_frequency:H average_mpipu_frequency:H
 current_coreclk:H*16 current_core_maxfreq:H current_gfx_maxfreq:H throttle_residency_prochot:I
 throttle_residency_spl:I throttle_residency_fppt:I throttle_residency_sppt:I throttle_residency_thm_core:I
 throttle_residency_thm_gfx:I throttle_residency_thm_soc:I time_filter_alphavalue:I"""

# (format, content) -> (field list, sizeof the C struct). The sizes are the kernel's, a check on the layout.
_TABLES = {
    (1, 0): (_V1_0, 80), (1, 1): (_V1_1, 96), (1, 2): (_V1_2, 104), (1, 3): (_V1_3, 120),
    (1, 4): (_V1_4, 288), (1, 5): (_V1_5, 360), (1, 6): (_V1_6, 1664), (1, 7): (_V1_7, 2208),
    (1, 8): (_V1_8, 3360),
    (2, 0): (_V2_0, 120), (2, 1): (_V2_1, 120), (2, 2): (_V2_2, 128), (2, 3): (_V2_3, 152),
    (2, 4): (_V2_4, 168), (3, 0): (_V3_0, 264),
}

# indep_throttle_status bit -> reason (SMU_THROTTLER_*_BIT, amdgpu_smu.h)
THROTTLE_BITS = {
    0: "power limit (PPT0)", 1: "power limit (PPT1)", 2: "power limit (PPT2)", 3: "power limit (PPT3)",
    4: "power limit (SPL)", 5: "power limit (fast PPT)", 6: "power limit (slow PPT)", 7: "power limit (APU slow PPT)",
    16: "current limit (GFX TDC)", 17: "current limit (SoC TDC)", 18: "current limit (memory TDC)",
    19: "current limit (VDD TDC)", 20: "current limit (CVIP TDC)", 21: "current limit (CPU EDC)",
    22: "current limit (GFX EDC)", 23: "current limit (APCC)",
    32: "thermal (GPU)", 33: "thermal (core)", 34: "thermal (memory)", 35: "thermal (edge)",
    36: "thermal (hotspot)", 37: "thermal (SoC)", 38: "thermal (VR GFX)", 39: "thermal (VR SoC)",
    40: "thermal (VR memory 0)", 41: "thermal (VR memory 1)", 42: "thermal (liquid 0)", 43: "thermal (liquid 1)",
    44: "VR hot (VRHOT0)", 45: "VR hot (VRHOT1)", 46: "PROCHOT (CPU)", 47: "PROCHOT (GFX)",
    56: "power management (PPM)", 57: "reliability (FIT)",
}


# The fields the readings come from; the rest (XGMI and PCIe counters, per-engine activity, timestamps…)
# are unpacked but not looked at, which keeps a decode near the cost of the unpack itself.
_USED_PATTERN = (
    r"(temperature_(edge|hotspot|mem|vrgfx|vrsoc|vrmem|hbm\d|gfx|soc|core\d+|skin)"
    r"|(average|curr)_socket_power|average_(cpu|soc|gfx|apu|dgpu|all_core|ipu|sys)_power"
    r"|average_(gfx|umc)_activity|current_fan_speed|pcie_link_(width|speed)|energy_accumulator"
    r"|(current|average)_(gfx|soc|u|f|v|d)clk\d*(_frequency)?|current_(vclk|dclk)0\d|current_(gfxclk|socclk)\d"
    r"|voltage_(gfx|soc|mem)|average_(cpu|soc|gfx)_voltage|(indep_)?throttle_status)")


@dataclass(frozen=True, slots=True)
class Layout:
    fmt: struct.Struct
    names: tuple[str, ...]  # one per unpacked value ("temperature_hbm0" for an array element)
    sentinels: tuple[int, ...]  # the all-ones "not supported" value of each field's width
    used: tuple[tuple[int, str, int], ...] = ()  # (index in the unpacked values, name, sentinel) read
    # the used fields alone, the bytes between them skipped: a decode unpacks ~30 values, not ~400
    used_fmt: struct.Struct | None = None
    used_names: tuple[str, ...] = ()
    used_sentinels: tuple[int, ...] = ()


def _build(spec: str, expected_size: int) -> Layout:
    """The struct format of a field list with natural alignment (as a C compiler lays it out)."""
    fmt, names, sentinels, places = ["<HBB"], [], [], []  # places: (offset, struct code) per value
    offset, max_align = 4, 4 if expected_size else 1
    for item in spec.split():
        name, kind = item.split(":")
        if kind.startswith("bytes="):  # skipped nested structs: 8-byte aligned (they hold uint64_t)
            pad = -offset % 8
            size = int(kind[6:])
            fmt.append(f"{pad + size}x")
            offset += pad + size
            max_align = 8
            continue
        code, _, count_text = kind.partition("*")
        count, width = int(count_text or 1), _WIDTH[code]
        pad = -offset % width
        if pad:
            fmt.append(f"{pad}x")
        max_align = max(max_align, width)
        fmt.append(f"{count}{code}" if count > 1 else code)
        offset += pad + width * count
        for n in range(count):
            names.append(f"{name}{n}" if count > 1 else name)
            sentinels.append(_ALL_ONES[code])
            places.append((offset - width * (count - n), code))
    tail = -offset % max_align
    if tail:
        fmt.append(f"{tail}x")
    wanted = re.compile(_USED_PATTERN)  # compiled here, not at import: `rocmdesk sample` pays for it once
    used = tuple((n + 3, name, none) for n, (name, none) in enumerate(zip(names, sentinels, strict=True))
                 if wanted.fullmatch(name))
    used_fmt, at = ["<"], 0
    for index, _name, _none in used:
        where, code = places[index - 3]
        used_fmt.append(f"{where - at}x{code}" if where > at else code)
        at = where + _WIDTH[code]
    layout = Layout(struct.Struct("".join(fmt)), tuple(names), tuple(sentinels), used,
                    struct.Struct("".join(used_fmt)), tuple(n for _, n, _ in used), tuple(x for _, _, x in used))
    if layout.fmt.size != expected_size:
        raise AssertionError(f"gpu_metrics layout is {layout.fmt.size} bytes, the kernel's is {expected_size}")
    return layout


_LAYOUTS: dict[tuple[int, int], Layout] = {}
REVISIONS: tuple[tuple[int, int], ...] = tuple(_TABLES)


def layout(revision: tuple[int, int]) -> Layout | None:
    """The layout of one revision, built the first time it is needed (a process samples one or two)."""
    found = _LAYOUTS.get(revision)
    if found is None and revision in _TABLES:
        spec, size = _TABLES[revision]
        found = _LAYOUTS[revision] = _build(spec, size)
    return found


class Throttle(TypedDict):
    """Throttling as decoded: named reasons from indep_throttle_status, the raw ASIC status beside."""

    active: bool
    reasons: list[str]
    indep_status: int | None
    status: int | None


@dataclass(slots=True)
class GpuMetrics:
    """What one ``gpu_metrics`` table says. Fields not supported by the GPU are absent from the dicts
    and listed in ``unavailable`` with the reason."""

    revision: str  # "1.3"
    temperature_c: dict[str, float] = field(default_factory=dict)
    power_w: float | None = None  # the socket (package) power
    power_w_by_rail: dict[str, float] = field(default_factory=dict)
    clocks_mhz: dict[str, float] = field(default_factory=dict)
    voltage_mv_by_rail: dict[str, float] = field(default_factory=dict)
    gfx_busy_percent: float | None = None
    mem_busy_percent: float | None = None
    fan_rpm: int | None = None
    pcie_width: int | None = None
    pcie_speed_gts: float | None = None
    energy_j: float | None = None  # the accumulator in joules where the header gives its unit
    energy_raw: int | None = None
    throttle: Throttle | None = None
    unavailable: dict[str, str] = field(default_factory=dict)


class GpuMetricsError(ValueError):
    """The bytes are not a gpu_metrics table this decoder can read; the message says why."""


def decode(data: bytes) -> GpuMetrics:
    """Decode one table; raises :class:`GpuMetricsError` for a short, unknown or inconsistent one."""
    if len(data) < HEADER.size:
        raise GpuMetricsError(f"{len(data)} bytes, shorter than the 4-byte header")
    size, fmt_rev, content_rev = HEADER.unpack_from(data)
    revision = f"{fmt_rev}.{content_rev}"
    table = layout((fmt_rev, content_rev))
    if table is None:
        raise GpuMetricsError(f"revision {revision} is not one this version of rocmdesk knows")
    if size != table.fmt.size:
        raise GpuMetricsError(f"revision {revision} says {size} bytes; that revision is {table.fmt.size}")
    if len(data) < size:
        raise GpuMetricsError(f"revision {revision} needs {size} bytes, the file has {len(data)}")
    raw = table.used_fmt.unpack_from(data)  # type: ignore[union-attr]
    values = {name: v for name, v, none in zip(table.used_names, raw, table.used_sentinels, strict=True)
              if v != none}
    out = GpuMetrics(revision=revision)
    if fmt_rev == 1:
        _format1(values, out, content_rev)
    else:
        _apu(values, out, fmt_rev, content_rev)
    _throttle(values, out)
    return out


NOT_SUPPORTED = "not supported by this GPU (its gpu_metrics field is all ones)"
NO_SENSOR = "gpu_metrics reports 0: no such sensor on this board"


def _temperature(values: dict[str, int], name: str, key: str, scale: float, out: GpuMetrics) -> None:
    """A temperature into ``out``; 0 means the sensor is not fitted (laptop boards fill 0 for VR sensors)."""
    value = values.get(name)
    if value is None:
        out.unavailable[f"temperature_c.{key}"] = NOT_SUPPORTED
    elif value == 0:
        out.unavailable[f"temperature_c.{key}"] = NO_SENSOR
    else:
        out.temperature_c[key] = value / scale


def _format1(values: dict[str, int], out: GpuMetrics, content: int) -> None:
    temperatures, hbm, dgpu_clocks, dgpu_voltages, xcd_clocks, mi300_clocks = _format1_fields(content)
    for key, name in temperatures:
        _temperature(values, name, key, 1.0, out)
    # only Instinct boards have HBM: no N/A for the others
    out.temperature_c.update({key: float(v) for key, name in hbm if (v := values.get(name))})
    power = values.get("average_socket_power", values.get("curr_socket_power"))
    out.power_w = float(power) if power is not None else None
    out.gfx_busy_percent = _float(values.get("average_gfx_activity"))
    out.mem_busy_percent = _float(values.get("average_umc_activity"))
    out.fan_rpm = values.get("current_fan_speed")
    out.pcie_width = values.get("pcie_link_width")
    speed = values.get("pcie_link_speed")
    out.pcie_speed_gts = speed / 10 if speed else None
    energy = values.get("energy_accumulator")
    out.energy_raw = energy
    if energy is not None and content >= 4:
        out.energy_j = energy * ENERGY_UNIT_J
    clocks = out.clocks_mhz
    if content <= 3:
        for key, current, average in dgpu_clocks:
            value = values.get(current)
            if value is None:
                value = values.get(average)
            if value is not None:
                clocks[key] = float(value)
        out.voltage_mv_by_rail.update({rail: float(v) for rail, name in dgpu_voltages if (v := values.get(name))})
    else:  # MI300: one GFX clock per XCD, several SoC and media clocks
        xcd = [v for name in xcd_clocks if (v := values.get(name))]
        clocks.update({key: float(v) for key, v in zip(_XCD_KEYS, xcd, strict=False)})
        if xcd:
            clocks["gfxclk"] = float(max(xcd))
        clocks.update({key: float(v) for key, name in mi300_clocks if (v := values.get(name))})


def _apu(values: dict[str, int], out: GpuMetrics, fmt: int, content: int) -> None:
    scale = 100.0  # centi-degrees C (2.4 says so; 2.1 equals hwmon's edge on the Phoenix dump)
    _temperature(values, "temperature_gfx", "gfx", scale, out)
    _temperature(values, "temperature_soc", "soc", scale, out)
    for key, name in _CORE_TEMPERATURES[:16 if fmt == 3 else 8]:
        if values.get(name):
            out.temperature_c[key] = values[name] / scale
    if fmt == 3:
        _temperature(values, "temperature_skin", "skin", scale, out)
    rails = {"socket": "average_socket_power", "cpu": "average_cpu_power", "soc": "average_soc_power",
             "gfx": "average_gfx_power", "apu": "average_apu_power", "dgpu": "average_dgpu_power",
             "cores": "average_all_core_power", "ipu": "average_ipu_power", "system": "average_sys_power"}
    for rail, name in rails.items():
        if name in values:
            out.power_w_by_rail[rail] = values[name] / 1000.0
    out.power_w = out.power_w_by_rail.pop("socket", None)
    activity = values.get("average_gfx_activity")
    if fmt == 3 or activity is None:
        out.gfx_busy_percent = _float(activity)  # 3.0: "busy % [0-100]"
    elif content >= 4:
        out.gfx_busy_percent = activity / 100.0  # 2.4: "Utilization (unit: centi)"
    else:  # 2.0-2.3 state no unit, and the Phoenix dump's 79 sits beside a gpu_busy_percent of 0
        out.unavailable["gfx_busy_percent"] = f"gpu_metrics {out.revision} does not state the activity's unit"
    for key, current, average in _APU_CLOCK_NAMES:
        value = values.get(current, values.get(average))
        if value is not None:
            out.clocks_mhz[key] = float(value)
    for rail, name in _APU_VOLTAGES:
        if values.get(name):
            out.voltage_mv_by_rail[rail] = float(values[name])


def _throttle(values: dict[str, int], out: GpuMetrics) -> None:
    indep = values.get("indep_throttle_status")
    status = values.get("throttle_status")
    if indep is None and status is None:
        out.unavailable["throttle"] = "this gpu_metrics revision or GPU reports no throttle status"
        return
    if indep is not None:
        reasons: list[str] = []
        rest = indep
        while rest:
            low = rest & -rest
            bit = low.bit_length() - 1
            reasons.append(THROTTLE_BITS.get(bit, f"bit {bit}"))
            rest ^= low
        out.throttle = {"active": bool(indep), "reasons": reasons, "indep_status": indep, "status": status}
    else:  # only the ASIC-dependent status: whether, not why
        out.throttle = {"active": bool(status), "reasons": [f"ASIC-specific status 0x{status:x}"] if status else [],
                        "indep_status": None, "status": status}


def _float(value: int | None) -> float | None:
    return float(value) if value is not None else None


_ALL_FORMAT1_TEMPERATURES = (
    ("edge", "temperature_edge"), ("junction", "temperature_hotspot"), ("mem", "temperature_mem"),
    ("vrgfx", "temperature_vrgfx"), ("vrsoc", "temperature_vrsoc"), ("vrmem", "temperature_vrmem"),
)
_HBM_TEMPERATURES = tuple((f"hbm{n}", f"temperature_hbm{n}") for n in range(4))
_DGPU_CLOCKS = tuple((k, f"current_{k}", f"average_{k}_frequency")
                     for k in ("gfxclk", "socclk", "uclk", "vclk0", "dclk0", "vclk1", "dclk1"))
_APU_CLOCK_NAMES = tuple((k, f"current_{k}", f"average_{k}_frequency")
                         for k in ("gfxclk", "socclk", "uclk", "fclk", "vclk", "dclk"))
_XCD_CLOCKS = tuple(f"current_gfxclk{n}" for n in range(8))
_XCD_KEYS = tuple(f"gfxclk_xcd{n}" for n in range(8))
_MI300_CLOCK_NAMES = (*((f"{key}_{n}" if n else key, f"current_{key}{n}")
                        for key in ("socclk", "vclk0", "dclk0") for n in range(4)), ("uclk", "current_uclk"))
_CORE_TEMPERATURES = tuple((f"core{n}", f"temperature_core{n}") for n in range(16))
_APU_VOLTAGES = tuple((rail, f"average_{rail}_voltage") for rail in ("cpu", "soc", "gfx"))
_DGPU_VOLTAGES = (("gfx", "voltage_gfx"), ("soc", "voltage_soc"), ("mem", "voltage_mem"))
_FORMAT1_FIELDS: dict[int, tuple] = {}


def _format1_fields(content: int) -> tuple:
    """The fields of each group that a format-1 revision has (1.4+ dropped edge, vrgfx and vrmem…),
    worked out once: a decode then looks up only names its table can hold."""
    found = _FORMAT1_FIELDS.get(content)
    if found is None:
        table = layout((1, content))
        names = set(table.used_names if table is not None else ())
        found = _FORMAT1_FIELDS[content] = (
            tuple((k, n) for k, n in _ALL_FORMAT1_TEMPERATURES if n in names),
            tuple((k, n) for k, n in _HBM_TEMPERATURES if n in names),
            tuple((k, c, a) for k, c, a in _DGPU_CLOCKS if c in names or a in names),
            tuple((k, n) for k, n in _DGPU_VOLTAGES if n in names),
            tuple(n for n in _XCD_CLOCKS if n in names),
            tuple((k, n) for k, n in _MI300_CLOCK_NAMES if n in names),
        )
    return found
