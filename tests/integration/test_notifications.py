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
