"""amd-smi: both envelopes, value/unit and bare leaves, "N/A" values and sections, failures."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from rocmdesk.host import CommandRunner, HostRoot, RecordedRunner
from rocmdesk.telemetry.backends.amd_smi import LIST_ARGS, METRIC_ARGS, STATIC_ARGS, AmdSmiBackend
from rocmdesk.telemetry.backends.base import BackendError
from rocmdesk.telemetry.smi_parsers import (
    AMD_SMI_NA,
    AMD_SMI_NOT_REPORTED,
    ToolOutputError,
    amd_smi_leaf,
    parse_amd_smi_list,
    parse_amd_smi_metric,
    parse_amd_smi_static,
    parse_amd_smi_text,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "tool-output"
AMD_SMI = "/opt/rocm/bin/amd-smi"
MB = 1048576


def read(name: str) -> str:
    return (DATA / name).read_text()


def test_f10_power_value_unit_leaves():
    (gpu,) = parse_amd_smi_metric(read("F10-amd-smi-metric-power.json"))
    assert gpu.tool_id == "0"
    assert gpu.metrics == {"power_w": 10.0, "voltage_mv": 6.0}
    assert gpu.unavailable["temperature_c.junction"] == AMD_SMI_NOT_REPORTED
    assert gpu.unavailable["vram_used_bytes"] == AMD_SMI_NOT_REPORTED


def test_f11_usage_w7700():
    (gpu,) = parse_amd_smi_metric(read("F11-amd-smi-metric-usage-w7700.json"))
    assert gpu.metrics["gpu_busy_percent"] == 42.0
    assert gpu.metrics["mem_busy_percent"] == 1.0


def test_f12_na_everywhere_including_whole_sections():
    (gpu,) = parse_amd_smi_metric(read("F12-amd-smi-metric-no-data.json"))
    assert gpu.metrics == {}
    assert gpu.temperature_c == {}
    assert gpu.unavailable["gpu_busy_percent"] == AMD_SMI_NA  # "usage": "N/A"
    assert gpu.unavailable["mem_busy_percent"] == AMD_SMI_NA
    assert gpu.unavailable["power_w"] == AMD_SMI_NA
    assert gpu.unavailable["sclk_mhz"] == AMD_SMI_NA
    assert gpu.unavailable["mclk_mhz"] == AMD_SMI_NOT_REPORTED


def test_f14_human_output():
    (gpu,) = parse_amd_smi_text(read("F14-amd-smi-text.txt"))
    assert gpu.metrics == {"gpu_busy_percent": 0.0, "mem_busy_percent": 1.0, "power_w": 20.0, "voltage_mv": 780.0,
                           "sclk_mhz": 14}


def test_6_0_bare_values_in_default_units():
    (gpu,) = parse_amd_smi_metric(read("amd-smi-6.0-metric-bare.json"))
    assert gpu.temperature_c == {"edge": 53.0, "junction": 61.0, "mem": 68.0}
    assert gpu.metrics["power_w"] == 35.0
    assert gpu.metrics["vram_total_bytes"] == 24560 * MB
    assert gpu.metrics["vram_used_bytes"] == 1204 * MB
    assert gpu.metrics["sclk_mhz"] == 1269 and gpu.metrics["mclk_mhz"] == 1249
    assert gpu.metrics["fan_rpm"] == 0 and gpu.metrics["fan_percent"] == 0.0
    assert gpu.metrics["gpu_busy_percent"] == 12.0
    assert gpu.metrics["performance_level"] == "auto"


def test_7_x_envelope_with_hotspot_as_junction():
    gpus = parse_amd_smi_metric(read("amd-smi-7.x-metric-envelope.json"))
    assert [g.tool_id for g in gpus] == ["0", "1"]
    g0, g1 = gpus
    assert g0.temperature_c == {"junction": 71.0, "mem": 52.0}
    assert g0.unavailable["temperature_c.edge"] == AMD_SMI_NA
    assert g0.metrics["vram_used_bytes"] == 140233 * MB
    assert g0.metrics["gtt_total_bytes"] == 257715 * MB
    assert g0.metrics["power_w"] == 612.0
    assert g0.unavailable["voltage_mv"] == AMD_SMI_NA
    assert g1.unavailable["fan_rpm"] == AMD_SMI_NA  # "fan": "N/A"
    assert g1.unavailable["gtt_used_bytes"] == AMD_SMI_NOT_REPORTED


def test_list_and_static():
    assert parse_amd_smi_list(read("amd-smi-list.json")) == {"0": "0000:05:00.0", "1": "0000:26:00.0"}
    static = parse_amd_smi_static(read("amd-smi-static.json"))
    assert static["1"].pci == "0000:26:00.0"
    assert static["1"].name == "AMD Instinct MI300X"
    assert static["1"].device_id == 0x74A1
    assert static["0"].metrics == {"power_cap_max_w": 750.0, "power_cap_min_w": 0.0, "power_cap_w": 750.0}
    assert static["0"].vbios == "022.040.003.043.000001"


@pytest.mark.parametrize(("leaf", "kind", "bare", "expected"), [
    ({"value": 512, "unit": "MB"}, "B", "MB", (512 * MB, None)),
    ({"value": 2, "unit": "GB"}, "B", "MB", (2 << 30, None)),
    ({"value": 15000, "unit": "mW"}, "W", "W", (15.0, None)),
    ({"value": 1.2, "unit": "GHz"}, "MHz", "MHz", (1200.0, None)),
    (300, "W", "W", (300.0, None)),
    ("45 C", "C", "C", (45.0, None)),
    ("N/A", "W", "W", (None, AMD_SMI_NA)),
    ({"value": "N/A", "unit": "W"}, "W", "W", (None, AMD_SMI_NA)),
    ({"value": 3, "unit": "furlongs"}, "W", "W", (None, "unknown unit 'furlongs'")),
    ("12ab", "W", "W", (None, "garbage value '12ab'")),
    (True, "W", "W", (None, "garbage value 'True'")),
    ({"unit": "W"}, "W", "W", (None, 'garbage value \'{"unit": "W"}\'')),
])
def test_leaves(leaf, kind, bare, expected):
    assert amd_smi_leaf(leaf, kind, bare) == expected


def test_negative_values_are_rejected():
    out = json.dumps([{"gpu": 0, "power": {"socket_power": {"value": -3, "unit": "W"}}}])
    (gpu,) = parse_amd_smi_metric(out)
    assert "power_w" not in gpu.metrics and gpu.unavailable["power_w"] == "negative value -3"


def test_single_gpu_object_is_accepted():
    (gpu,) = parse_amd_smi_metric(json.dumps({"gpu": 3, "power": {"socket_power": 7}}))
    assert gpu.tool_id == "3" and gpu.metrics["power_w"] == 7.0


@pytest.mark.parametrize(("stdout", "stderr", "message"), [
    ("", read("amd-smi-no-driver.stderr"), "driver is not loaded"),
    ("", read("amd-smi-no-devices.stderr"), "found no GPU"),
    ("", "", "printed nothing"),
    ("[]", "", "no GPU"),
    ('{"gpu_data": "N/A"}', "", "unexpected shape"),
    ("Segmentation fault", "", "did not print JSON"),
    (read("amd-smi-7.x-metric-envelope.json")[:500], "", "incomplete JSON"),
])
def test_failures(stdout, stderr, message):
    with pytest.raises(ToolOutputError, match=message):
        parse_amd_smi_metric(stdout, stderr)


# -- backend ----------------------------------------------------------------------------------

def runner_with(metric: str, listing: str | None = None, static: str | None = None, **kw) -> RecordedRunner:
    runner = RecordedRunner()
    runner.add([AMD_SMI, *METRIC_ARGS], stdout=metric, **kw)
    if listing is not None:
        runner.add([AMD_SMI, *LIST_ARGS], stdout=listing)
    if static is not None:
        runner.add([AMD_SMI, *STATIC_ARGS], stdout=static)
    return runner


def test_backend_maps_gpu_index_to_pci_with_list_and_static(tmp_path):
    runner = runner_with(read("amd-smi-7.x-metric-envelope.json"), read("amd-smi-list.json"),
                         read("amd-smi-static.json"))
    backend = AmdSmiBackend(HostRoot(tmp_path), runner)
    infos = backend.discover()
    assert [(i.pci, i.name) for i in infos] == [("0000:05:00.0", "AMD Instinct MI300X"),
                                                ("0000:26:00.0", "AMD Instinct MI300X")]
    snap = backend.sample()
    s1 = snap.by_pci()["0000:26:00.0"]
    assert s1.power_w == 598.0 and s1.power_cap_w == 750.0
    assert s1.vram_used_bytes == 139871 * MB
    assert s1.temperature_c == {"junction": 69.0, "mem": 50.0}
    assert s1.source["temperature_c.junction"] == "amd-smi"
    assert "power_cap_w" not in s1.unavailable


def test_backend_static_alone_gives_pci_when_list_fails(tmp_path):
    runner = runner_with(read("amd-smi-7.x-metric-envelope.json"), "garbage", read("amd-smi-static.json"))
    snap = AmdSmiBackend(HostRoot(tmp_path), runner).sample()
    assert set(snap.by_pci()) == {"0000:05:00.0", "0000:26:00.0"}


def test_backend_without_list_or_static_still_samples(tmp_path):
    snap = AmdSmiBackend(HostRoot(tmp_path), runner_with(read("amd-smi-6.0-metric-bare.json"))).sample()
    (gpu,) = snap.gpus
    assert gpu.info.pci == "unknown (amd-smi 0)"
    assert gpu.power_w == 35.0
    assert any("no PCI address" in e for e in snap.errors)


def test_backend_driver_missing(tmp_path):
    runner = runner_with("", stderr=read("amd-smi-no-driver.stderr"), returncode=0)
    with pytest.raises(BackendError, match="driver is not loaded"):
        AmdSmiBackend(HostRoot(tmp_path), runner).sample()


def test_backend_hang_killed(tmp_path):
    script = tmp_path / "amd-smi"
    script.write_text("#!/bin/sh\nsleep 30\n")
    script.chmod(0o755)
    backend = AmdSmiBackend(HostRoot(tmp_path), CommandRunner(), timeout_s=0.5, path=str(script))
    start = time.monotonic()
    with pytest.raises(BackendError, match=r"amd-smi did not answer within 0\.5 s"):
        backend.sample()
    assert time.monotonic() - start < 5


def test_backend_not_installed(tmp_path):
    with pytest.raises(BackendError, match="amd-smi is not installed"):
        AmdSmiBackend(HostRoot(tmp_path), RecordedRunner())


def test_backend_reloads_the_pci_map_when_the_gpu_set_changes(tmp_path):
    two = read("amd-smi-7.x-metric-envelope.json")
    runner = runner_with(two, read("amd-smi-list.json"))
    backend = AmdSmiBackend(HostRoot(tmp_path), runner)
    assert set(backend.sample().by_pci()) == {"0000:05:00.0", "0000:26:00.0"}
    # GPU 0 unplugged: amd-smi renumbers the remaining GPU as 0.
    one = json.loads(two)
    one["gpu_data"] = one["gpu_data"][1:]
    one["gpu_data"][0]["gpu"] = 0
    runner.add([AMD_SMI, *METRIC_ARGS], stdout=json.dumps(one))
    runner.add([AMD_SMI, *LIST_ARGS], stdout=json.dumps([{"gpu": 0, "bdf": "0000:26:00.0"}]))
    (gpu,) = backend.sample().gpus
    assert gpu.info.pci == "0000:26:00.0" and gpu.power_w == 598.0
