"""Alerts reach a real session D-Bus: a private dbus-daemon and a notification server stub that records
what it received (tests/support/notification_server.py); both are started here and stopped after."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocmdesk.telemetry.alerts import Alert, send

pytest.importorskip("dbus_next")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def session_bus(tmp_path):
    if not (shutil.which("dbus-daemon") and shutil.which("gdbus")):
        pytest.skip("dbus-daemon and gdbus are needed (the README's test command installs them)")
    daemon = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address"],
                              stdout=subprocess.PIPE, text=True)
    address = daemon.stdout.readline().strip()
    env = {**os.environ, "DBUS_SESSION_BUS_ADDRESS": address}
    received = tmp_path / "received.jsonl"
    server = subprocess.Popen([sys.executable, "-m", "tests.support.notification_server", str(received)],
                              cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "ready"
        yield address, received
    finally:
        for proc in (server, daemon):
            proc.terminate()
            proc.wait(10)


def _records(path: Path, count: int, timeout: float = 10.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            lines = path.read_text().splitlines()
            if len(lines) >= count:
                return [json.loads(line) for line in lines]
        time.sleep(0.05)
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_an_alert_is_delivered_with_its_text_and_urgency(session_bus):
    address, received = session_bus
    alert = Alert("over-crit", "0000:03:00.0", "AMD Radeon RX 7900 XTX: junction at 111 °C",
                  "At or over its critical limit of 110 °C; it's \\hot\\ 'here'.", "critical")
    assert send(alert, env={"DBUS_SESSION_BUS_ADDRESS": address}) is None
    (record,) = _records(received, 1)
    assert record["app_name"] == "rocmdesk" and record["summary"] == alert.summary and record["body"] == alert.body
    assert record["hints"]["urgency"] == 2 and record["hints"]["desktop-entry"] == "org.rocmdesk.RocmDesk"


def test_no_bus_is_a_reason_not_a_hang(tmp_path):
    started = time.monotonic()
    why = send(Alert("gpu-gone", "0000:03:00.0", "gone", "gone"),
               env={"DBUS_SESSION_BUS_ADDRESS": f"unix:path={tmp_path}/nothing-here"})
    assert why and time.monotonic() - started < 10


def test_the_mi300x_node_at_its_power_cap_alerts_once_per_sample_naming_each_gpu(session_bus):
    """The shipped 8x MI300X recording through the real rules and gdbus to the stub (issue 14, item 6):
    GPUs that pass the throttling delay in the same sample are one pop-up saying which GPUs they are
    (they were identical "AMD Instinct MI300X is throttling" pop-ups, one per GPU)."""
    import re

    from rocmdesk.telemetry.alerts import AlertEngine, AlertRules
    from rocmdesk.telemetry.backends.demo import DemoBackend

    address, received = session_bus
    clock = [0.0]
    backend = DemoBackend("mi300x-node", clock=lambda: clock[0])  # one recorded second per sample
    infos = {i.pci: i for i in backend.discover()}
    # at the cap the SMU throttles in bursts of 10-28 s (eval and checkpoint pauses), so 10 s, not 30
    engine = AlertEngine(AlertRules(throttle_after_s=10))
    sent = []
    for second in range(130):
        clock[0] = float(second)
        alerts = engine.feed(backend.sample(), now=float(second))
        assert len(alerts) <= 1  # one kind of event here: at most one notification per sample
        for alert in alerts:
            sent.append(alert)
            assert send(alert, env={"DBUS_SESSION_BUS_ADDRESS": address}) is None
    records = _records(received, len(sent))
    assert len(records) == len(sent) >= 2
    grouped = 0
    for alert, record in zip(sent, records, strict=True):
        assert record["summary"] == alert.summary and record["body"] == alert.body
        assert record["app_icon"] == "dialog-warning" and record["hints"]["urgency"] == 1
        pcis = alert.pci.split(",")
        named = re.findall(r"(card\d+), ([0-9a-f:.]+)", record["summary"] + "\n" + record["body"])
        assert named == [(infos[p].card, p) for p in pcis]  # every GPU by card and address, none twice
        assert record["body"].endswith("s: power limit (PPT0).")
        if len(pcis) > 1:
            grouped += 1
            assert record["summary"] == f"{len(pcis)} × AMD Instinct MI300X are throttling"
    assert grouped >= 1
