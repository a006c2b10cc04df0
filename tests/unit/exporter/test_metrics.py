"""The exposition text from real sampling of built trees: names, units, labels, N/A as absence."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from rocmdesk.diagnosis.model import Severity
from rocmdesk.exporter.metrics import DiagnosisState, FindingRow, SamplingState, scrub_subject
from rocmdesk.exporter.service import render
from rocmdesk.host import HostRoot
from rocmdesk.telemetry.backends.sysfs import SysfsBackend
from tests.support.instinct import instinct_specs
from tests.support.sysfs_tree import build_root


def parse(body: bytes) -> dict[str, list]:
    """metric sample name -> samples (name, labels, value)."""
    out: dict[str, list] = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            out.setdefault(sample.name, []).append(sample)
    return out


@pytest.fixture(scope="module")
def mi300x_root(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("mi300x")
    return build_root(tmp / "tree", instinct_specs(tmp / "dumps", "mi300x", count=8))


def sample_state(root: Path) -> SamplingState:
    snapshot = SysfsBackend(HostRoot(root)).sample()
    return SamplingState(snapshot=snapshot, seen={g.info.pci: g.info for g in snapshot.gpus}, samples=1)


def hwmon_value(root: Path, pci: str, name: str) -> float:
    hwmon = next((root / "sys" / "bus" / "pci" / "devices" / pci / "hwmon").iterdir())
    return int((hwmon / name).read_text()) / 1000


def test_every_gpu_has_the_tree_values_under_amd_names(mi300x_root):
    metrics = parse(render(sample_state(mi300x_root), None))
    junction = {s.labels["pci"]: s.value for s in metrics["gpu_junction_temperature"]}
    assert len(junction) == 8
    for pci, value in junction.items():
        assert value == pytest.approx(hwmon_value(mi300x_root, pci, "temp2_input"))
    power = {s.labels["pci"]: s.value for s in metrics["gpu_power_usage"]}
    for pci, value in power.items():
        assert value == pytest.approx(hwmon_value(mi300x_root, pci, "power1_input") / 1000)
    vram = {s.labels["pci"]: s.value for s in metrics["gpu_used_vram"]}
    for pci, value in vram.items():
        used = int((mi300x_root / "sys" / "bus" / "pci" / "devices" / pci / "mem_info_vram_used").read_text())
        assert value == pytest.approx(used / (1 << 20))
    ids = sorted(int(s.labels["gpu_id"]) for s in metrics["gpu_junction_temperature"])
    assert ids == list(range(8))
    assert {s.labels["gfx_target"] for s in metrics["gpu_junction_temperature"]} == {"gfx942"}
    assert metrics["rocmdesk_gpus"][0].value == 8


def test_na_reading_is_absent_and_explained(mi300x_root):
    metrics = parse(render(sample_state(mi300x_root), None))
    assert "gpu_edge_temperature" not in metrics  # MI300X has no edge sensor: no fake 0
    rows = metrics["rocmdesk_reading_unavailable"]
    reasons = {(s.labels["pci"], s.labels["field"]): s.labels["reason"] for s in rows}
    assert len([k for k in reasons if k[1] == "temperature_c.edge"]) == 8
    assert all(reason for reason in reasons.values())


def test_gpu_that_vanished_is_reported_gone(mi300x_root):
    state = sample_state(mi300x_root)
    gone = state.snapshot.gpus.pop()
    metrics = parse(render(state, None))
    present = {s.labels["pci"]: s.value for s in metrics["rocmdesk_gpu_present"]}
    assert present[gone.info.pci] == 0
    assert sum(present.values()) == 7
    assert gone.info.pci not in {s.labels["pci"] for s in metrics["gpu_junction_temperature"]}


def test_no_sample_yet_still_renders():
    metrics = parse(render(SamplingState(), DiagnosisState()))
    assert metrics["rocmdesk_gpus"][0].value == 0
    assert metrics["rocmdesk_diagnosis_up"][0].value == 0  # not run yet
    assert "rocmdesk_sample_timestamp_seconds" not in metrics


def test_findings_and_counts():
    state = DiagnosisState(finished_at=1_800_000_000.0, duration_s=0.25, runs=1, check_counts={"fail": 2, "pass": 5},
                           findings=[FindingRow("amdgpu-blacklisted", Severity.ERROR.value),
                                     FindingRow("torch-not-rocm", "warning", "/home/alice/ComfyUI/venv")])
    metrics = parse(render(SamplingState(), state))
    rows = {(s.labels["id"], s.labels["severity"], s.labels["subject"]) for s in metrics["rocmdesk_finding"]}
    assert rows == {("amdgpu-blacklisted", "error", ""), ("torch-not-rocm", "warning", "~/ComfyUI/venv")}
    by = {s.labels["severity"]: s.value for s in metrics["rocmdesk_findings"]}
    assert by == {"error": 1, "warning": 1, "info": 0}
    assert metrics["rocmdesk_diagnosis_up"][0].value == 1
    assert metrics["rocmdesk_diagnosis_timestamp_seconds"][0].value == 1_800_000_000.0


def test_failed_diagnosis_is_a_metric_not_a_crash():
    state = DiagnosisState(runs=0, failures=1, error="RuntimeError: boom")
    metrics = parse(render(SamplingState(), state))
    assert metrics["rocmdesk_diagnosis_up"][0].value == 0
    assert metrics["rocmdesk_diagnosis_failures_total"][0].value == 1


@pytest.mark.parametrize(("subject", "expected"), [
    ("/home/alice/venv", "~/venv"),
    ("/var/home/bob/.local/share/ComfyUI", "~/.local/share/ComfyUI"),
    ("/root/env", "~/env"),
    ("/opt/rocm", "/opt/rocm"),
    ("0000:03:00.0", "0000:03:00.0"),
    ("x" * 500, "x" * 160),
    (None, ""),
])
def test_subject_never_carries_a_user_name(subject, expected):
    assert scrub_subject(subject) == expected


def test_hostile_values_do_not_break_the_text(mi300x_root):
    state = sample_state(mi300x_root)
    first = state.snapshot.gpus[0]
    first.power_w = float("nan")
    first.fan_rpm = True  # wrong type from a broken backend: not a number
    first.unavailable["fan_percent"] = 'quote " backslash \\ newline \n end'
    metrics = parse(render(state, None))
    assert first.info.pci not in {s.labels["pci"] for s in metrics["gpu_power_usage"]}
    assert first.info.pci not in {s.labels["pci"] for s in metrics.get("rocmdesk_gpu_fan_rpm", [])}
    rows = metrics["rocmdesk_reading_unavailable"]
    reasons = [s.labels["reason"] for s in rows if s.labels["field"] == "fan_percent"]
    assert 'quote " backslash \\ newline \n end' in reasons


def test_fast_exposition_is_what_prometheus_client_writes(mi300x_root):
    """render_text() must equal the library's generate_latest() byte for byte, hostile labels included."""
    from prometheus_client import CollectorRegistry, generate_latest

    from rocmdesk.exporter.exposition import render_text
    from rocmdesk.exporter.metrics import families

    state = sample_state(mi300x_root)
    state.snapshot.gpus[0].unavailable["fan_rpm"] = 'a "quoted" \\ back\nslash reason'
    diagnosis = DiagnosisState(runs=1, finished_at=1.5, duration_s=0.25, check_counts={"pass": 3},
                               findings=[FindingRow("x", "error", "/home/a/b \"c\"")])
    items = families(state, diagnosis, "1.0")

    class Once:
        def collect(self):
            return iter(items)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Once())
    assert render_text(items) == generate_latest(registry)


def test_throttle_ecc_link_and_gpu_metrics_readings(tmp_path):
    import shutil
    import subprocess

    def values(body: bytes, name: str) -> list[float]:
        return [s.value for s in parse(body).get(name, [])]

    root = build_root(tmp_path / "root", instinct_specs(tmp_path / "dumps", "mi300x", count=1))
    device = next((root / "sys/bus/pci/devices").iterdir()).resolve()
    (device / "ras").mkdir()
    (device / "ras/umc_err_count").write_text("ue: 2\nce: 9\n")
    (device / "ras/gpu_vram_bad_pages").write_text("0x00000001 : 0x00001000 : R\n")
    backend = SysfsBackend(HostRoot(root))
    snapshot = backend.sample()
    gpu = snapshot.gpus[0]
    gpu.throttle = {"active": True, "reasons": ["thermal (hotspot)"]}
    gpu.clocks_mhz = {"uclk": 1300.0, "gfxclk_xcd0": 2100.0}
    body = render(SamplingState(snapshot=snapshot, seen={gpu.info.pci: gpu.info}), None)
    assert values(body, "gpu_ecc_uncorrect_total") == [2] and values(body, "gpu_ecc_correct_total") == [9]
    assert values(body, "rocmdesk_gpu_vram_bad_pages") == [0, 0, 1]  # failed, pending, retired
    assert values(body, "rocmdesk_gpu_throttled") == [1] and values(body, "rocmdesk_gpu_throttle_reason") == [1]
    assert sorted(values(body, "rocmdesk_gpu_clock_hertz")) == [1.3e9, 2.1e9]
    if shutil.which("promtool"):
        lint = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True, timeout=30)
        assert lint.returncode == 0, lint.stdout + lint.stderr
