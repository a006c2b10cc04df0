"""The exporter against the real thing: Debian's prometheus, promtool and prometheus-node-exporter.

Everything runs on 127.0.0.1 on ports picked free, and is stopped after the test (even on failure).
A Prometheus server scrapes two exporters every second: one on an 8× MI300X tree and one on a
workstation whose amdgpu is blacklisted. Through the HTTP API the test asserts that every GPU's
junction temperature, power and VRAM series carry the tree's values, that the blacklist finding is
a ``rocmdesk_finding`` series, that every panel of the Grafana dashboard returns data, and that the
alerting rules load. The textfile mode is scraped through the real node exporter.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocmdesk.diagnosis.runner import diagnose
from tests.support import scenarios
from tests.support.instinct import instinct_specs
from tests.support.sysfs_tree import build_root

REPO = Path(__file__).resolve().parents[2]
PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"
NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"
RULES = REPO / "packaging" / "prometheus" / "rocmdesk-alerts.yml"
DASHBOARD = REPO / "packaging" / "grafana" / "rocmdesk-dashboard.json"
UNIT = REPO / "packaging" / "systemd" / "rocmdesk-exporter.service"

def need(*tools: str) -> None:
    for tool in tools:
        if not os.access(tool, os.X_OK):
            pytest.skip(f"{tool} is not installed (the README's test command installs prometheus and "
                        "prometheus-node-exporter)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get(url: str, timeout: float = 5) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read()


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except OSError:
            pass
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


class Processes:
    """Started processes, all stopped at the end."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.running: list[subprocess.Popen] = []

    def start(self, name: str, argv: list[str], **kw) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "wb")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, **kw)
        self.running.append(proc)
        return proc

    def stop(self) -> None:
        for proc in reversed(self.running):
            proc.terminate()
        for proc in self.running:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


@pytest.fixture
def procs(tmp_path) -> Iterator[Processes]:
    logs = tmp_path / "logs"
    logs.mkdir()
    started = Processes(logs)
    try:
        yield started
    finally:
        started.stop()
        for log in sorted(logs.iterdir()):
            sys.stderr.write(f"--- {log.name} (tail)\n{log.read_text(errors='replace')[-2000:]}\n")


def start_exporter(procs: Processes, name: str, root: Path) -> str:
    port = free_port()
    argv = [sys.executable, "-m", "rocmdesk", "exporter", "--root", str(root), "--listen", f"127.0.0.1:{port}",
            "--interval", "0.5", "--diagnose-every", "600"]
    procs.start(name, argv, cwd=REPO)
    address = f"127.0.0.1:{port}"
    wait_for(lambda: b"rocmdesk_gpus" in get(f"http://{address}/metrics"), 30, f"exporter {name}")
    return address


def query(base: str, expr: str) -> list[dict]:
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    answer = json.loads(get(url))
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


def hwmon_value(root: Path, pci: str, name: str) -> float:
    hwmon = next((root / "sys" / "bus" / "pci" / "devices" / pci / "hwmon").iterdir())
    return int((hwmon / name).read_text())


@pytest.fixture
def node_roots(tmp_path) -> tuple[Path, Path]:
    mi300x = build_root(tmp_path / "mi300x", instinct_specs(tmp_path / "dumps", "mi300x", count=8))
    broken = scenarios.clean_workstation(tmp_path / "blacklisted")
    scenarios.blacklist_amdgpu(broken)
    scenarios.unload_amdgpu(broken)
    return mi300x, broken


def test_prometheus_scrapes_every_gpu_and_the_finding(tmp_path, procs, node_roots):
    need(PROMETHEUS, PROMTOOL)
    mi300x, broken = node_roots
    node = start_exporter(procs, "exporter-mi300x", mi300x)
    workstation = start_exporter(procs, "exporter-workstation", broken)

    body = get(f"http://{node}/metrics")
    check = subprocess.run([PROMTOOL, "check", "metrics"], input=body, capture_output=True, timeout=30)
    assert check.returncode == 0, check.stdout.decode() + check.stderr.decode()

    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        f"rule_files:\n  - {RULES}\n"
        "scrape_configs:\n  - job_name: rocmdesk\n    static_configs:\n"
        f"      - targets: ['{node}', '{workstation}']\n")
    procs.start("prometheus", [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                               f"--web.listen-address=127.0.0.1:{port}"])
    base = f"http://127.0.0.1:{port}"
    wait_for(lambda: sorted(r["value"][1] for r in query(base, 'up{job="rocmdesk"}')) == ["1", "1"], 60,
             "both targets up")

    def node_series(name: str) -> dict[str, float]:
        return {r["metric"]["pci"]: float(r["value"][1]) for r in query(base, f'{name}{{instance="{node}"}}')}

    wait_for(lambda: len(node_series("gpu_junction_temperature")) == 8, 30, "8 junction series")
    pcis = sorted(p.name for p in (mi300x / "sys" / "bus" / "pci" / "devices").iterdir())
    for pci, value in node_series("gpu_junction_temperature").items():
        assert pci in pcis
        assert value == pytest.approx(hwmon_value(mi300x, pci, "temp2_input") / 1000)
    power = node_series("gpu_power_usage")
    assert len(power) == 8
    for pci, value in power.items():
        assert value == pytest.approx(hwmon_value(mi300x, pci, "power1_input") / 1e6)
    vram = node_series("rocmdesk_gpu_vram_used_bytes")
    assert len(vram) == 8
    for pci, value in vram.items():
        assert value == int((mi300x / "sys" / "bus" / "pci" / "devices" / pci / "mem_info_vram_used").read_text())

    expected = {(f.id, f.severity.value) for f in diagnose(broken).findings}
    assert ("amdgpu-blacklisted", "error") in expected
    findings = wait_for(lambda: query(base, f'rocmdesk_finding{{instance="{workstation}"}}'), 30, "a finding")
    assert {(r["metric"]["id"], r["metric"]["severity"]) for r in findings} == expected
    assert not query(base, f'rocmdesk_finding{{instance="{node}",severity="error"}}')

    rules = json.loads(get(f"{base}/api/v1/rules"))["data"]["groups"]
    assert {rule["name"] for group in rules for rule in group["rules"]} >= {
        "RocmdeskGpuOverCriticalTemperature", "RocmdeskGpuGone", "RocmdeskErrorFinding"}
    assert all(rule["health"] != "err" for group in rules for rule in group["rules"])

    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]
    assert len(exprs) >= 10
    for expr in exprs:
        concrete = expr.replace("$instance", ".+")
        assert query(base, concrete), f"dashboard query returns no data: {expr}"


def test_textfile_mode_through_the_real_node_exporter(tmp_path, procs, node_roots):
    need(NODE_EXPORTER, PROMTOOL)
    mi300x, _ = node_roots
    folder = tmp_path / "textfile"
    folder.mkdir()
    done = subprocess.run([sys.executable, "-m", "rocmdesk", "exporter", "--root", str(mi300x), "--textfile",
                           str(folder), "--once"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert [p.name for p in folder.iterdir()] == ["rocmdesk.prom"]  # no temporary file left
    check = subprocess.run([PROMTOOL, "check", "metrics"], stdin=open(folder / "rocmdesk.prom", "rb"),
                           capture_output=True, timeout=30)
    assert check.returncode == 0, check.stdout.decode() + check.stderr.decode()

    port = free_port()
    procs.start("node-exporter", [NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{port}",
                                  "--collector.disable-defaults", "--collector.textfile",
                                  f"--collector.textfile.directory={folder}"])
    text = wait_for(lambda: get(f"http://127.0.0.1:{port}/metrics").decode(), 30, "node exporter")
    assert "node_textfile_scrape_error 0" in text
    junctions = re.findall(r'^gpu_junction_temperature\{[^}]*pci="([^"]+)"[^}]*\} (\S+)$', text, re.M)
    assert len(junctions) == 8
    for pci, value in junctions:
        assert float(value) == pytest.approx(hwmon_value(mi300x, pci, "temp2_input") / 1000)


def test_systemd_unit_is_valid_and_hardened(tmp_path):
    analyze = shutil.which("systemd-analyze")
    text = UNIT.read_text()
    for option in ("DynamicUser=yes", "SupplementaryGroups=render video", "NoNewPrivileges=yes",
                   "ProtectSystem=strict", "ProtectHome=read-only", "CapabilityBoundingSet=\n"):
        assert option in text
    assert "--listen 127.0.0.1:" in text
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    # verify wants ExecStart to exist: point a copy at a real executable.
    copy = tmp_path / "rocmdesk-exporter.service"
    copy.write_text(text.replace("ExecStart=/usr/bin/rocmdesk", f"ExecStart={sys.executable} -m rocmdesk"))
    result = subprocess.run([analyze, "verify", str(copy)], capture_output=True, text=True, timeout=60)
    problems = [line for line in (result.stdout + result.stderr).splitlines()
                if "rocmdesk-exporter" in line and "Failed to" not in line and "not executable" not in line]
    assert not problems, problems


def test_alert_rules_pass_promtool(tmp_path):
    need(PROMTOOL)
    check = subprocess.run([PROMTOOL, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=30)
    assert check.returncode == 0, check.stdout + check.stderr
    unit = subprocess.run([PROMTOOL, "test", "rules", "rocmdesk-alerts.test.yml"], cwd=RULES.parent,
                          capture_output=True, text=True, timeout=60)
    assert unit.returncode == 0, unit.stdout + unit.stderr
