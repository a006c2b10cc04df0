"""The amdsmi library backend against a fake ``amdsmi`` module with the documented shapes.

Shapes from ROCm/amdsmi docs/reference/amdsmi-py-api.md: dict results with "N/A" for values the
GPU lacks, AmdSmiLibraryException(err_code, get_error_info()) for failed calls.
"""

from __future__ import annotations

import enum
import sys
import types

import pytest

from rocmdesk.host import HostRoot
from rocmdesk.telemetry.backends.amdsmi_lib import NOT_INSTALLED, AmdsmiLibBackend, load_amdsmi
from rocmdesk.telemetry.backends.base import BackendError


class AmdSmiException(Exception):
    pass


class AmdSmiLibraryException(AmdSmiException):
    def __init__(self, err_code: int, info: str) -> None:
        super().__init__(info)
        self.err_code = err_code
        self._info = info

    def get_error_info(self) -> str:
        return self._info


NOT_SUPPORTED = AmdSmiLibraryException(2, "AMDSMI_STATUS_NOT_SUPPORTED - Feature not supported")


class TemperatureType(enum.IntEnum):
    EDGE = 0
    HOTSPOT = 1
    VRAM = 2


class TemperatureMetric(enum.IntEnum):
    CURRENT = 0


class MemoryType(enum.IntEnum):
    VRAM = 0
    VIS_VRAM = 1
    GTT = 2


class ClkType(enum.IntEnum):
    GFX = 0
    MEM = 1


def fake_amdsmi(gpus: dict, init_error: Exception | None = None) -> types.ModuleType:
    """A module mimicking amdsmi; ``gpus`` maps handle → per-call results (exceptions are raised)."""
    mod = types.ModuleType("amdsmi")
    mod.AmdSmiException = AmdSmiException
    mod.AmdSmiLibraryException = AmdSmiLibraryException
    mod.AmdSmiTemperatureType = TemperatureType
    mod.AmdSmiTemperatureMetric = TemperatureMetric
    mod.AmdSmiMemoryType = MemoryType
    mod.AmdSmiClkType = ClkType
    mod.calls = []

    def result(handle, key):
        value = gpus[handle].get(key, NOT_SUPPORTED)
        if isinstance(value, Exception):
            raise value
        return value

    def init(*_):
        mod.calls.append("init")
        if init_error:
            raise init_error

    mod.amdsmi_init = init
    mod.amdsmi_shut_down = lambda: mod.calls.append("shut_down")
    mod.amdsmi_get_processor_handles = lambda: list(gpus)
    mod.amdsmi_get_gpu_device_bdf = lambda h: result(h, "bdf")
    mod.amdsmi_get_gpu_asic_info = lambda h: result(h, "asic")
    mod.amdsmi_get_temp_metric = lambda h, t, m: result(h, ("temp", TemperatureType(t).name))
    mod.amdsmi_get_power_info = lambda h: result(h, "power")
    mod.amdsmi_get_power_cap_info = lambda h: result(h, "cap")
    mod.amdsmi_get_gpu_memory_usage = lambda h, t: result(h, ("used", MemoryType(t).name))
    mod.amdsmi_get_gpu_memory_total = lambda h, t: result(h, ("total", MemoryType(t).name))
    mod.amdsmi_get_gpu_activity = lambda h: result(h, "activity")
    mod.amdsmi_get_clock_info = lambda h, c: result(h, ("clock", ClkType(c).name))
    mod.amdsmi_get_gpu_fan_rpms = lambda h, i: result(h, "fan")
    return mod


MI300X = {
    "bdf": "0000:C6:00.0",
    "asic": {"market_name": "AMD Instinct MI300X", "vendor_id": 0x1002, "device_id": 0x74A1, "rev_id": 0},
    ("temp", "EDGE"): NOT_SUPPORTED,
    ("temp", "HOTSPOT"): 71,
    ("temp", "VRAM"): 52,
    "power": {"socket_power": 612, "current_socket_power": 612, "average_socket_power": "N/A",
              "gfx_voltage": "N/A", "soc_voltage": "N/A", "mem_voltage": "N/A", "power_limit": 750},
    "cap": {"power_cap": 750000000, "default_power_cap": 750000000, "dpm_cap": 2100, "min_power_cap": 0,
            "max_power_cap": 750000000},
    ("used", "VRAM"): 146028888064, ("total", "VRAM"): 206141652992,
    ("used", "GTT"): 18874368, ("total", "GTT"): 270233862144,
    "activity": {"gfx_activity": 97, "umc_activity": 41, "mm_activity": "N/A"},
    ("clock", "GFX"): {"clk": 2100, "min_clk": 500, "max_clk": 2100, "clk_locked": False, "clk_deep_sleep": False},
    ("clock", "MEM"): {"clk": 1300, "min_clk": 900, "max_clk": 1300},
    "fan": NOT_SUPPORTED,
}


@pytest.fixture
def live():
    return HostRoot("/")


def test_not_installed_raises_the_documented_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "amdsmi", None)  # import of a None entry raises ImportError
    with pytest.raises(BackendError, match=f"^{NOT_INSTALLED}$"):
        load_amdsmi()
    with pytest.raises(BackendError, match=NOT_INSTALLED):
        AmdsmiLibBackend(HostRoot("/"))


def test_module_injected_into_sys_modules_is_used(monkeypatch, live):
    mod = fake_amdsmi({"h0": dict(MI300X)})
    monkeypatch.setitem(sys.modules, "amdsmi", mod)
    backend = AmdsmiLibBackend(live)
    (info,) = backend.discover()
    assert info.pci == "0000:c6:00.0" and info.name == "AMD Instinct MI300X" and info.device_id == 0x74A1
    backend.close()
    assert mod.calls == ["init", "shut_down"]


def test_sample_reads_every_documented_call(live):
    backend = AmdsmiLibBackend(live, module=fake_amdsmi({"h0": dict(MI300X)}))
    backend.discover()
    (s,) = backend.sample().gpus
    assert s.temperature_c == {"junction": 71.0, "mem": 52.0}
    assert s.unavailable["temperature_c.edge"] == ("amdsmi error: AMDSMI_STATUS_NOT_SUPPORTED - Feature not "
                                                   "supported (code 2)")
    assert s.power_w == 612.0
    assert s.unavailable["voltage_mv"] == "amdsmi reports N/A"
    assert (s.power_cap_w, s.power_cap_max_w, s.power_cap_min_w, s.power_cap_default_w) == (750.0, 750.0, 0.0, 750.0)
    assert (s.vram_used_bytes, s.vram_total_bytes) == (146028888064, 206141652992)
    assert (s.gtt_used_bytes, s.gtt_total_bytes) == (18874368, 270233862144)
    assert (s.gpu_busy_percent, s.mem_busy_percent) == (97.0, 41.0)
    assert (s.sclk_mhz, s.mclk_mhz) == (2100, 1300)
    assert s.fan_rpm is None and "not supported" in s.unavailable["fan_rpm"].lower()
    assert s.source["power_w"] == "amdsmi"


def test_millidegree_temperatures_are_scaled(live):
    gpu = dict(MI300X)
    gpu[("temp", "HOTSPOT")] = 71500  # what the docs promise, though the library gives °C
    (s,) = AmdsmiLibBackend(live, module=fake_amdsmi({"h0": gpu})).sample().gpus
    assert s.temperature_c["junction"] == 71.5


def test_average_power_when_socket_power_is_na(live):
    gpu = dict(MI300X)
    gpu["power"] = {"socket_power": "N/A", "average_socket_power": 237, "gfx_voltage": 806}
    (s,) = AmdsmiLibBackend(live, module=fake_amdsmi({"h0": gpu})).sample().gpus
    assert s.power_w == 237.0 and s.voltage_mv == 806.0


def test_unsupported_activity_sentinel_and_garbage(live):
    gpu = dict(MI300X)
    gpu["activity"] = {"gfx_activity": 65535, "umc_activity": "busy", "mm_activity": "N/A"}
    gpu[("used", "VRAM")] = -1
    (s,) = AmdsmiLibBackend(live, module=fake_amdsmi({"h0": gpu})).sample().gpus
    assert s.gpu_busy_percent is None and s.unavailable["gpu_busy_percent"] == "amdsmi: not supported on this GPU"
    assert s.unavailable["mem_busy_percent"] == "garbage value 'busy'"
    assert s.unavailable["vram_used_bytes"] == "garbage value '-1'"


def test_gpu_vanishing_mid_sample_gives_reasons_not_a_crash(live):
    gone = AmdSmiLibraryException(8, "AMDSMI_STATUS_NOT_FOUND - Device Not found")
    gpu = {key: gone for key in MI300X}
    gpu["bdf"] = MI300X["bdf"]
    backend = AmdsmiLibBackend(live, module=fake_amdsmi({"h0": dict(MI300X), "h1": gpu}))
    backend.discover()
    s0, s1 = backend.sample().gpus
    assert s0.power_w == 612.0
    assert s1.power_w is None and "Device Not found" in s1.unavailable["power_w"]
    assert s1.temperature_c == {}


def test_init_failure_says_so(live):
    mod = fake_amdsmi({}, init_error=AmdSmiLibraryException(34, "AMDSMI_STATUS_DRIVER_NOT_LOADED"))
    with pytest.raises(BackendError, match=r"amdsmi could not start.*DRIVER_NOT_LOADED.*code 34"):
        AmdsmiLibBackend(live, module=mod)


def test_no_gpus_is_an_empty_snapshot(live):
    backend = AmdsmiLibBackend(live, module=fake_amdsmi({}))
    assert backend.discover() == []
    assert backend.sample().gpus == []


def test_refuses_a_host_root(tmp_path):
    with pytest.raises(BackendError, match="only the live machine"):
        AmdsmiLibBackend(HostRoot(tmp_path), module=fake_amdsmi({}))


def test_closed_backend_and_missing_functions(live):
    mod = fake_amdsmi({"h0": dict(MI300X)})
    del mod.amdsmi_get_clock_info  # an older release
    backend = AmdsmiLibBackend(live, module=mod)
    (s,) = backend.sample().gpus
    assert s.unavailable["sclk_mhz"] == "this amdsmi version has no amdsmi_get_clock_info"
    backend.close()
    backend.close()  # idempotent
    assert mod.calls.count("shut_down") == 1
    with pytest.raises(BackendError, match="closed"):
        backend.sample()
