"""rocm-smi: every recorded output parses to its numbers; every failure gives a reason, no crash."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from rocmdesk.host import CommandRunner, HostRoot, RecordedRunner
from rocmdesk.telemetry.backends.base import BackendError
from rocmdesk.telemetry.backends.rocm_smi import BASE_ARGS, FULL_ARGS, RocmSmiBackend
from rocmdesk.telemetry.smi_parsers import (
    NOT_REPORTED,
    SECONDARY_DIE,
    ToolOutputError,
    normalize_pci,
    parse_rocm_smi,
    parse_rocm_smi_text,
    rocm_smi_sensor_label,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "tool-output"
ROCM_SMI = "/usr/bin/rocm-smi"


def read(name: str) -> str:
    return (DATA / name).read_text()


def by_id(gpus):
    return {g.tool_id: g for g in gpus}


# -- the facts-file samples ------------------------------------------------------------------

def test_f1_rx7900xtx():
    (gpu,) = parse_rocm_smi(read("F1-rocm-smi-rx7900xtx.json"))
    assert gpu.tool_id == "card0"
    assert gpu.temperature_c == {"edge": 49.0, "junction": 49.0, "mem": 62.0}
    assert gpu.metrics["power_w"] == 19.0
    assert gpu.metrics["gpu_busy_percent"] == 0.0
    assert gpu.metrics["vram_total_bytes"] == 25753026560
    assert gpu.metrics["vram_used_bytes"] == 794341376
    # F1 was taken without --showbus: no PCI address, and the reason for absent keys is given.
    assert gpu.pci is None
    assert gpu.unavailable["fan_rpm"] == NOT_REPORTED


def test_f2_780m_prefers_current_socket_power_and_lowercases_the_bus():
    (gpu,) = parse_rocm_smi(read("F2-rocm-smi-780m.json"))
    assert gpu.pci == "0000:c4:00.0"
    assert gpu.metrics["power_w"] == pytest.approx(7.222)
    assert gpu.temperature_c == {"edge": 31.0}
    assert gpu.unavailable["temperature_c.junction"] == NOT_REPORTED
    assert gpu.unavailable["temperature_c.mem"] == NOT_REPORTED
    assert gpu.metrics["sclk_dpm_mhz"] == 800
    assert gpu.metrics["mclk_dpm_mhz"] == 400
    assert gpu.metrics["gpu_busy_percent"] == 19.0
    assert gpu.metrics["voltage_mv"] == 752.0
    assert gpu.metrics["performance_level"] == "auto"
    assert gpu.name == "Phoenix3"
    assert gpu.device_id == 0x1900
    assert gpu.vbios == "113-PHXGENERIC-001"
    assert gpu.unique_id is None  # "N/A"
    # "GPU Memory Allocated (VRAM%)" is an allocation share, not memory busy.
    assert "mem_busy_percent" not in gpu.metrics


def test_f5_text_mixed_secondary_die_and_current_socket():
    gpus = by_id(parse_rocm_smi_text(read("F5-rocm-smi-text-mixed.txt")))
    assert gpus["card0"].metrics.get("power_w") is None
    assert gpus["card0"].unavailable["power_w"] == SECONDARY_DIE
    assert gpus["card1"].metrics["power_w"] == 4.0
    assert gpus["card2"].metrics["power_w"] == 3.0


def test_f6_text_mi250_secondary_dies():
    gpus = by_id(parse_rocm_smi_text(read("F6-rocm-smi-text-mi250.txt")))
    assert [gpus[c].metrics.get("power_w") for c in ("card0", "card1", "card2", "card3")] == [237.0, None, 230.0, None]
    assert gpus["card3"].unavailable["power_w"] == SECONDARY_DIE


def test_f8_no_driver_is_a_clear_error_despite_exit_0():
    with pytest.raises(ToolOutputError, match="amdgpu driver is not loaded"):
        parse_rocm_smi("", read("F8-rocm-smi-no-driver.stderr"))


@pytest.mark.parametrize("where", ["stdout", "stderr"])
def test_f9_no_json_data(where):
    text = read("F9-rocm-smi-no-json-data.txt")
    args = (text, "") if where == "stdout" else ("", text)
    with pytest.raises(ToolOutputError, match="No JSON data to report"):
        parse_rocm_smi(*args)


# -- recorded and hand-built outputs ---------------------------------------------------------

def test_real_5_2_3_full_output():
    gpus = by_id(parse_rocm_smi(read("rocm-smi-5.2.3-real-rx7800xt-rx6600-full.json")))
    a, b = gpus["card0"], gpus["card1"]
    assert (a.pci, b.pci) == ("0000:03:00.0", "0000:0c:00.0")
    assert a.temperature_c == {"edge": 24.0, "junction": 31.0, "mem": 48.0}  # HBM "N/A" ignored
    assert a.metrics == {
        "power_w": 32.0, "power_cap_w": 236.0, "vram_total_bytes": 17163091968, "vram_used_bytes": 1263222784,
        "gtt_total_bytes": 16777216000, "gtt_used_bytes": 23105536, "gpu_busy_percent": 2.0,
        "mem_busy_percent": 7.0, "sclk_dpm_mhz": 77, "mclk_dpm_mhz": 456, "fan_rpm": 868, "fan_percent": 35.0,
        "voltage_mv": 985.0, "performance_level": "manual",
    }
    assert b.metrics["sclk_dpm_mhz"] == 2605 and b.metrics["power_cap_w"] == 120.0
    assert b.unavailable["fan_rpm"] == NOT_REPORTED
    assert b.unavailable["gtt_used_bytes"] == NOT_REPORTED


def test_mi300x_node_has_no_edge_and_hbm_sensors():
    gpus = parse_rocm_smi(read("rocm-smi-6.x-mi300x-8gpu.json"))
    assert len(gpus) == 8
    assert [g.pci for g in gpus][-3:] == ["0000:a6:00.0", "0000:c6:00.0", "0000:e5:00.0"]
    g7 = gpus[7]
    assert g7.temperature_c == {"junction": 65.0, "mem": 51.0, "hbm0": 50.0, "hbm1": 51.0, "hbm2": 49.0,
                                "hbm3": 52.0}
    assert g7.unavailable["temperature_c.edge"] == NOT_REPORTED
    assert g7.metrics["power_w"] == 649.0
    assert g7.metrics["mem_busy_percent"] == 37.0  # Read/Write Activity, not the "Memory Activity" counter
    assert g7.metrics["gpu_busy_percent"] == 97.0
    assert g7.metrics["vram_total_bytes"] == 206141652992
    assert g7.unavailable["voltage_mv"] == "rocm-smi reports N/A"


def test_mi250x_secondary_die_json():
    gpus = parse_rocm_smi(read("rocm-smi-6.x-mi250x-secondary-die.json"))
    assert [g.metrics.get("power_w") for g in gpus] == [237.0, None, 223.0, None]
    assert gpus[1].unavailable["power_w"] == SECONDARY_DIE
    assert gpus[1].pci == "0000:c6:00.0"


def test_2019_spelling_lowercase_c_and_sensor_mem():
    (gpu,) = parse_rocm_smi(read("rocm-smi-2019-old-spelling.json"))
    assert gpu.temperature_c == {"edge": 45.0, "junction": 50.0, "mem": 52.0}
    assert gpu.metrics["power_w"] == 95.0


def test_warning_lines_before_the_json_are_skipped():
    (gpu,) = parse_rocm_smi(read("rocm-smi-warning-before-json.txt"))
    assert gpu.pci == "0000:03:00.0" and gpu.metrics["power_w"] == 19.0


def test_current_socket_power_wins_over_average():
    out = json.dumps({"card0": {"Average Graphics Package Power (W)": "50.0",
                                "Current Socket Graphics Package Power (W)": "61.5"}})
    (gpu,) = parse_rocm_smi(out)
    assert gpu.metrics["power_w"] == 61.5


def test_average_used_when_current_socket_is_na():
    out = json.dumps({"card0": {"Current Socket Graphics Package Power (W)": "N/A",
                                "Average Graphics Package Power (W)": "48.0"}})
    (gpu,) = parse_rocm_smi(out)
    assert gpu.metrics["power_w"] == 48.0


@pytest.mark.parametrize("raw", ["12ab", "", "-5", "nan", "inf"])
def test_garbage_values_are_reasons_not_numbers(raw):
    out = json.dumps({"card0": {"VRAM Total Used Memory (B)": raw, "Temperature (Sensor edge) (C)": raw,
                                "Average Graphics Package Power (W)": raw}})
    (gpu,) = parse_rocm_smi(out)
    assert gpu.metrics.get("vram_used_bytes") is None
    assert gpu.metrics.get("power_w") is None
    assert gpu.unavailable["vram_used_bytes"] == f"garbage value '{raw}'"
    assert gpu.unavailable["power_w"] == f"garbage value '{raw}'"
    if raw == "-5":  # a sub-zero temperature is physically possible; negative power and bytes are not
        assert gpu.temperature_c == {"edge": -5.0}
    else:
        assert gpu.temperature_c == {}
        assert gpu.unavailable["temperature_c.edge"] == f"garbage value '{raw}'"


def test_power_absent_entirely():
    (gpu,) = parse_rocm_smi(json.dumps({"card0": {"GPU use (%)": "3"}}))
    assert gpu.unavailable["power_w"] == NOT_REPORTED


@pytest.mark.parametrize(("name", "message"), [
    ("rocm-smi-truncated.json", "incomplete JSON"),
    ("rocm-smi-garbage.txt", "did not print JSON"),
    ("F5-rocm-smi-text-mixed.txt", "did not print JSON"),
])
def test_bad_documents(name, message):
    with pytest.raises(ToolOutputError, match=message):
        parse_rocm_smi(read(name))


@pytest.mark.parametrize(("stdout", "message"), [
    ("", "printed nothing"),
    ("   \n", "printed nothing"),
    ("[1, 2]", "unexpected shape"),
    ('{"system": {"Driver version": "6.8"}}', "no GPU"),
    ('{"card0": {"a": 1} x}', "malformed JSON"),
])
def test_degenerate_documents(stdout, message):
    with pytest.raises(ToolOutputError, match=message):
        parse_rocm_smi(stdout)


def test_library_init_failure():
    with pytest.raises(ToolOutputError, match="ROCm SMI returned 8"):
        parse_rocm_smi("", "Exception caught: rsmi_init.\nERROR:root:ROCm SMI returned 8 (the expected value is 0)\n")


def test_sensor_labels_and_pci_normalization():
    assert [rocm_smi_sensor_label(s) for s in ("edge", "junction", "memory", "mem", "HBM 0", "HBM 3")] == [
        "edge", "junction", "mem", "mem", "hbm0", "hbm3"]
    assert normalize_pci("0000:C4:00.0") == "0000:c4:00.0"
    assert normalize_pci("c4:00.0") == "0000:c4:00.0"
    assert normalize_pci("garbage") is None
    assert normalize_pci(None) is None


# -- the backend through a runner ------------------------------------------------------------

def recorded(stdout: str = "", stderr: str = "", returncode: int | None = 0, args=FULL_ARGS, **kw) -> RecordedRunner:
    runner = RecordedRunner()
    runner.add([ROCM_SMI, *args], stdout=stdout, stderr=stderr, returncode=returncode, **kw)
    return runner


def test_backend_samples_recorded_output_and_maps_cards_to_pci(tmp_path):
    runner = recorded(read("rocm-smi-5.2.3-real-rx7800xt-rx6600-full.json"), returncode=2)  # exit code ignored
    backend = RocmSmiBackend(HostRoot(tmp_path), runner)
    infos = backend.discover()
    assert [i.pci for i in infos] == ["0000:03:00.0", "0000:0c:00.0"]
    snap = backend.sample()
    assert snap.backend == "rocm-smi"
    assert snap.by_pci()["0000:0c:00.0"].power_w == 3.0
    assert snap.by_pci()["0000:03:00.0"].source["power_w"] == "rocm-smi"
    assert snap.by_pci()["0000:03:00.0"].to_json()["temperature_c"] == {"edge": 24.0, "junction": 31.0, "mem": 48.0}


def test_backend_finds_the_drm_card_in_the_root(tmp_path):
    drm = tmp_path / "sys" / "bus" / "pci" / "devices" / "0000:c4:00.0" / "drm" / "card3"
    drm.mkdir(parents=True)
    backend = RocmSmiBackend(HostRoot(tmp_path), recorded(read("F2-rocm-smi-780m.json")))
    (info,) = backend.discover()
    assert info.card == "card3" and info.name == "Phoenix3"


def test_backend_without_pci_reports_it(tmp_path):
    backend = RocmSmiBackend(HostRoot(tmp_path), recorded(read("F1-rocm-smi-rx7900xtx.json")))
    snap = backend.sample()
    assert snap.gpus[0].info.pci == "unknown (rocm-smi card0)"
    assert any("no PCI address" in e for e in snap.errors)


def test_backend_no_driver(tmp_path):
    backend = RocmSmiBackend(HostRoot(tmp_path), recorded("", read("F8-rocm-smi-no-driver.stderr"), 0))
    with pytest.raises(BackendError, match="amdgpu driver is not loaded"):
        backend.sample()


def test_backend_recorded_timeout(tmp_path):
    backend = RocmSmiBackend(HostRoot(tmp_path), recorded(timed_out=True, returncode=None, error="timed out"),
                             timeout_s=3)
    with pytest.raises(BackendError, match="rocm-smi did not answer within 3 s"):
        backend.sample()


def test_backend_not_installed(tmp_path):
    with pytest.raises(BackendError, match="rocm-smi is not installed"):
        RocmSmiBackend(HostRoot(tmp_path), RecordedRunner())


def test_backend_falls_back_to_basic_flags(tmp_path):
    runner = recorded("", "usage: rocm-smi ...\nrocm-smi: error: unrecognized arguments: --showvoltage", 2)
    runner.add([ROCM_SMI, *BASE_ARGS], stdout=read("rocm-smi-5.2.3-real-rx7800xt-rx6600-base.json"))
    backend = RocmSmiBackend(HostRoot(tmp_path), runner)
    snap = backend.sample()
    assert backend.args == BASE_ARGS
    assert snap.by_pci()["0000:03:00.0"].vram_used_bytes == 1263222784
    assert snap.by_pci()["0000:03:00.0"].unavailable["fan_rpm"] == NOT_REPORTED


def fake_tool(tmp_path: Path, body: str) -> str:
    script = tmp_path / "rocm-smi"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(0o755)
    return str(script)


def test_hanging_tool_is_killed_at_its_timeout(tmp_path):
    path = fake_tool(tmp_path, "sleep 30")
    backend = RocmSmiBackend(HostRoot(tmp_path), CommandRunner(), timeout_s=0.5, path=path)
    start = time.monotonic()
    with pytest.raises(BackendError, match=r"rocm-smi did not answer within 0\.5 s"):
        backend.sample()
    assert time.monotonic() - start < 5


def test_fake_tool_printing_the_no_driver_message(tmp_path):
    path = fake_tool(tmp_path, "echo 'ERROR:root:Driver not initialized (amdgpu not found in modules)' >&2; exit 0")
    backend = RocmSmiBackend(HostRoot(tmp_path), CommandRunner(), timeout_s=5, path=path)
    with pytest.raises(BackendError, match="driver is not loaded"):
        backend.sample()


def test_tool_that_cannot_start(tmp_path):
    backend = RocmSmiBackend(HostRoot(tmp_path), CommandRunner(), timeout_s=5, path=str(tmp_path / "missing"))
    with pytest.raises(BackendError, match="could not run"):
        backend.sample()


# -- the real Debian rocm-smi on a test tree (tests/integration/test_rocm_smi_oracle.py) ----

KFD_PROPS = {"array_count": "4", "simd_arrays_per_engine": "2", "cu_per_simd_array": "10", "hive_id": "0"}


def _unshare_works() -> str | None:
    if not os.path.exists(ROCM_SMI):
        return "rocm-smi is not installed (apt-get install rocm-smi)"
    if not shutil.which("unshare"):
        return "unshare is missing"
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True,
                           timeout=10, check=False)
    if probe.returncode != 0:
        return f"unshare --mount is not permitted here: {probe.stderr.decode(errors='replace').strip()}"
    return None


@pytest.mark.oracle
def test_real_rocm_smi_output_parses_through_the_backend(tmp_path):
    reason = _unshare_works()
    if reason:
        pytest.skip(reason)
    from tests.support.sysfs_tree import GpuSpec, build_root

    tree = build_root(tmp_path / "tree", [GpuSpec("rx7800xt", pci="0000:03:00.0", extra_props=KFD_PROPS),
                                          GpuSpec("rx6600", pci="0000:0c:00.0", extra_props=KFD_PROPS)])
    device = tree / "sys" / "bus" / "pci" / "devices" / "0000:03:00.0"
    (device / "mem_info_vram_total").write_text("17163091968\n")
    (device / "mem_info_vram_used").write_text("1263222784\n")
    wrapper = tmp_path / "rocm-smi"
    # Private mount namespace only: /sys and /dev/shm are replaced for this process tree alone.
    wrapper.write_text(
        "#!/bin/sh\n"
        f"exec unshare --mount --propagation private -- /bin/sh -c 'mount --bind {tree}/sys /sys && "
        f"mount -t tmpfs -o size=4m,mode=1777 none /dev/shm && exec {ROCM_SMI} \"$@\"' rocm-smi \"$@\"\n")
    wrapper.chmod(0o755)
    backend = RocmSmiBackend(HostRoot(tree), CommandRunner(), timeout_s=20, path=str(wrapper))
    snap = backend.sample()
    by_pci = snap.by_pci()
    assert set(by_pci) == {"0000:03:00.0", "0000:0c:00.0"}
    a = by_pci["0000:03:00.0"]
    hwmon = next((device / "hwmon").glob("hwmon*"))
    assert a.temperature_c["edge"] == pytest.approx(int((hwmon / "temp1_input").read_text()) / 1000, abs=1e-3)
    assert a.power_w == pytest.approx(int((hwmon / "power1_average").read_text()) / 1e6, abs=0.01)
    assert a.vram_used_bytes == 1263222784
    assert a.gpu_busy_percent == int((device / "gpu_busy_percent").read_text())
    assert a.info.card == "card0"  # found in the tree by PCI address


def test_text_after_the_json_is_ignored():
    (gpu,) = parse_rocm_smi(read("F1-rocm-smi-rx7900xtx.json") + "WARNING: 1 GPU is in a low-power state\n")
    assert gpu.metrics["power_w"] == 19.0


def test_key_spellings_of_other_releases():
    """The same readings under the case other rocm-smi releases print them in."""
    text = json.dumps({"card0": {"PCI Bus": "0000:03:00.0", "Fan Speed (%)": "41.2", "Fan RPM": "1650",
                                 "vram Total Memory (B)": "17163091968", "vram Total Used Memory (B)": "5242880",
                                 "GPU Use (%)": "12"}})
    (gpu,) = parse_rocm_smi(text)
    assert gpu.metrics["fan_percent"] == 41.2 and gpu.metrics["fan_rpm"] == 1650
    assert (gpu.metrics["vram_total_bytes"], gpu.metrics["vram_used_bytes"]) == (17163091968, 5242880)
    assert gpu.metrics["gpu_busy_percent"] == 12.0
