"""Readings from AMD's ``amdsmi`` Python library, used only when it imports.

Written against the documented API (ROCm/amdsmi docs/reference/amdsmi-py-api.md): amdsmi_init,
amdsmi_get_processor_handles, amdsmi_get_gpu_device_bdf, amdsmi_get_temp_metric,
amdsmi_get_power_info, amdsmi_get_power_cap_info, amdsmi_get_gpu_memory_usage/_total,
amdsmi_get_gpu_activity, amdsmi_get_clock_info, amdsmi_shut_down. Every call may raise
AmdSmiLibraryException (``err_code``, ``get_error_info()``) or return "N/A" for a value.
The library reads the live machine only, so it refuses any other host root.
"""

from __future__ import annotations

import importlib
import logging
import math
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from rocmdesk.host import HostRoot
from rocmdesk.telemetry.backends.base import Backend, BackendError
from rocmdesk.telemetry.model import GpuInfo, GpuSample, Snapshot
from rocmdesk.telemetry.smi_parsers import garbage, is_na, normalize_pci

log = logging.getLogger(__name__)

NOT_INSTALLED = "the amdsmi Python library is not installed"
NA = "amdsmi reports N/A"

# (rocmdesk label, AmdSmiTemperatureType member)
TEMPERATURES = (("edge", "EDGE"), ("junction", "HOTSPOT"), ("mem", "VRAM"))


def load_amdsmi() -> ModuleType:
    """Import ``amdsmi`` or raise BackendError saying why."""
    try:
        return importlib.import_module("amdsmi")
    except ImportError:
        raise BackendError(NOT_INSTALLED) from None
    except Exception as exc:  # its import loads libamd_smi.so, which can fail in many ways
        raise BackendError(f"the amdsmi Python library failed to load: {exc}") from None


def describe_error(exc: BaseException) -> str:
    """Words for an amdsmi exception: its error info and code when it has them."""
    info = None
    getter = getattr(exc, "get_error_info", None)
    if callable(getter):
        try:
            info = getter()
        except Exception:
            info = None
    info = info or getattr(exc, "err_info", None) or str(exc) or type(exc).__name__
    code = getattr(exc, "err_code", None)
    return f"amdsmi error: {info}" + (f" (code {code})" if code is not None else "")


class AmdsmiLibBackend(Backend):
    """The amdsmi library; one init per backend, shut down on close()."""

    name = "amdsmi"

    def __init__(self, root: HostRoot | None = None, module: ModuleType | None = None) -> None:
        if root is not None and not root.is_live:
            raise BackendError("the amdsmi library reads only the live machine, not a host root")
        self.lib = module if module is not None else load_amdsmi()
        self._errors: tuple[type[BaseException], ...] = tuple(
            e for e in (getattr(self.lib, "AmdSmiException", None),) if isinstance(e, type)
        ) or (Exception,)
        try:
            self.lib.amdsmi_init()
        except self._errors as exc:
            raise BackendError(f"amdsmi could not start ({describe_error(exc)}); is the amdgpu driver loaded?") \
                from None
        self._open = True
        self._gpus: list[tuple[Any, GpuInfo]] = []

    # -- calls --------------------------------------------------------------------------------
    def _call(self, fn_name: str, *args: Any) -> tuple[Any, str | None]:
        """(result, None) or (None, reason) for one library call."""
        fn: Callable | None = getattr(self.lib, fn_name, None)
        if fn is None:
            return None, f"this amdsmi version has no {fn_name}"
        try:
            return fn(*args), None
        except self._errors as exc:
            return None, describe_error(exc)

    def _enum(self, enum_name: str, member: str) -> Any:
        enum = getattr(self.lib, enum_name, None)
        return getattr(enum, member, None) if enum is not None else None

    # -- Backend ------------------------------------------------------------------------------
    def discover(self) -> list[GpuInfo]:
        handles, why = self._call("amdsmi_get_processor_handles")
        if why:
            raise BackendError(f"amdsmi could not list GPUs ({why})")
        self._gpus = []
        for index, handle in enumerate(handles or []):
            bdf, _ = self._call("amdsmi_get_gpu_device_bdf", handle)
            pci = normalize_pci(bdf) or f"unknown (amdsmi {index})"
            asic, _ = self._call("amdsmi_get_gpu_asic_info", handle)
            asic = asic if isinstance(asic, dict) else {}
            device_id = asic.get("device_id")
            device_id = device_id if isinstance(device_id, int) and not isinstance(device_id, bool) else None
            name = asic.get("market_name")
            if not isinstance(name, str) or not name.strip() or is_na(name):
                name = f"AMD GPU 1002:{device_id:04x}" if device_id is not None else "AMD GPU"
            self._gpus.append((handle, GpuInfo(card=f"amdsmi {index}", pci=pci, name=name.strip(),
                                               device_id=device_id, driver="amdgpu")))
        return [info for _, info in self._gpus]

    def sample(self) -> Snapshot:
        if not self._open:
            raise BackendError("the amdsmi backend was closed")
        if not self._gpus:
            self.discover()
        now = time.time()
        snapshot = Snapshot(backend=self.name, timestamp=now)
        for handle, info in self._gpus:
            snapshot.gpus.append(self._sample_one(handle, info, now))
        return snapshot

    def close(self) -> None:
        if self._open:
            self._open = False
            _, why = self._call("amdsmi_shut_down")
            if why:
                log.info("amdsmi_shut_down failed: %s", why)

    # -- one GPU --------------------------------------------------------------------------------
    def _sample_one(self, handle: Any, info: GpuInfo, now: float) -> GpuSample:
        sample = GpuSample(info=info, timestamp=now)

        def put(key: str, value: float | None, reason: str | None, as_int: bool = False) -> None:
            if value is None:
                sample.mark_unavailable(key, reason or NA)
            else:
                setattr(sample, key, round(value) if as_int else value)
                sample.source[key] = self.name

        current = self._enum("AmdSmiTemperatureMetric", "CURRENT")
        for label, member in TEMPERATURES:
            raw, why = self._call("amdsmi_get_temp_metric", handle, self._enum("AmdSmiTemperatureType", member),
                                  current)
            value, why = _number(raw, why)
            if value is not None:
                # The docs say millidegrees, but amd-smi prints the value as °C and AMD's own Go
                # shim multiplies it by 1000 "to maintain backward compatibility": it is °C.
                # A value above 1000 can only be millidegrees.
                sample.temperature_c[label] = value / 1000 if value > 1000 else value
                sample.source[f"temperature_c.{label}"] = self.name
            else:
                sample.mark_unavailable(f"temperature_c.{label}", why or NA)

        power, why = self._call("amdsmi_get_power_info", handle)
        value, reason = _first(power, why, ("socket_power", "current_socket_power", "average_socket_power"))
        put("power_w", value, reason)
        value, reason = _first(power, why, ("gfx_voltage",))
        put("voltage_mv", value, reason)

        caps, why = self._call("amdsmi_get_power_cap_info", handle)
        for key, field in (("power_cap_w", "power_cap"), ("power_cap_min_w", "min_power_cap"),
                           ("power_cap_max_w", "max_power_cap"), ("power_cap_default_w", "default_power_cap")):
            value, reason = _first(caps, why, (field,))
            # Documented in µW; very old releases returned W (no GPU cap is below 10 mW).
            put(key, None if value is None else (value / 1e6 if value >= 10000 else value), reason)

        vram = self._enum("AmdSmiMemoryType", "VRAM")
        gtt = self._enum("AmdSmiMemoryType", "GTT")
        for key, fn, mem_type in (("vram_used_bytes", "amdsmi_get_gpu_memory_usage", vram),
                                  ("vram_total_bytes", "amdsmi_get_gpu_memory_total", vram),
                                  ("gtt_used_bytes", "amdsmi_get_gpu_memory_usage", gtt),
                                  ("gtt_total_bytes", "amdsmi_get_gpu_memory_total", gtt)):
            raw, why = self._call(fn, handle, mem_type)
            value, why = _number(raw, why)
            put(key, value, why, as_int=True)

        activity, why = self._call("amdsmi_get_gpu_activity", handle)
        for key, field in (("gpu_busy_percent", "gfx_activity"), ("mem_busy_percent", "umc_activity")):
            value, reason = _first(activity, why, (field,))
            if value is not None and value > 100:  # UINT16_MAX and friends mean "not supported"
                value, reason = None, "amdsmi: not supported on this GPU"
            put(key, value, reason)

        for key, member in (("sclk_mhz", "GFX"), ("mclk_mhz", "MEM")):
            clock, why = self._call("amdsmi_get_clock_info", handle, self._enum("AmdSmiClkType", member))
            value, reason = _first(clock, why, ("clk", "cur_clk"))
            put(key, value, reason, as_int=True)

        raw, why = self._call("amdsmi_get_gpu_fan_rpms", handle, 0)
        value, why = _number(raw, why)
        put("fan_rpm", value, why, as_int=True)
        return sample


def _number(raw: Any, why: str | None) -> tuple[float | None, str | None]:
    """A finite, non-negative number from a library result, or the reason it is not one."""
    if why:
        return None, why
    if raw is None or is_na(raw):
        return None, NA
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return None, garbage(raw)
    if not math.isfinite(raw) or raw < 0:
        return None, garbage(raw)
    return float(raw), None


def _first(result: Any, why: str | None, fields: tuple[str, ...]) -> tuple[float | None, str | None]:
    """The first usable numeric field of a dict result."""
    if why:
        return None, why
    if not isinstance(result, dict):
        return None, garbage(result)
    reason = None
    for field in fields:
        if field in result:
            value, field_reason = _number(result[field], None)
            if value is not None:
                return value, None
            reason = reason or field_reason
    return None, reason or "amdsmi does not report it"
