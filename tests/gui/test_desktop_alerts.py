"""Desktop alerts in the window: live snapshots alert (off the GUI thread), snapshots and the demo never."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
from PySide6 import QtCore

from rocmdesk.telemetry.model import GpuInfo, GpuSample, Snapshot
from rocmdesk.ui.notifications import DesktopAlerts
from rocmdesk.ui.settings import Settings

pytestmark = pytest.mark.gui


class Feed(QtCore.QObject):
    snapshot = QtCore.Signal(object)

    def __init__(self, frozen: bool) -> None:
        super().__init__()
        self.frozen = frozen


def _ctx(live: bool):
    return SimpleNamespace(settings=Settings(), is_live=live, feed=Feed(frozen=not live))


def _hot() -> Snapshot:
    info = GpuInfo(card="card0", pci="0000:03:00.0", name="RX 7900 XTX")
    gpu = GpuSample(info=info, timestamp=0.0, temperature_c={"junction": 111.0},
                    temperature_crit_c={"junction": 110.0})
    return Snapshot(backend="sysfs", timestamp=0.0, gpus=[gpu])


def test_a_live_snapshot_over_crit_is_sent_off_the_gui_thread(qtbot):
    sent = []
    ctx = _ctx(live=True)
    alerts = DesktopAlerts(ctx, send=lambda a: sent.append((a, threading.current_thread().name)))
    with qtbot.waitSignal(alerts.delivered, timeout=5000) as blocker:
        ctx.feed.snapshot.emit(_hot())
    alert, why = blocker.args
    assert alert.kind == "over-crit" and why is None
    assert sent[0][1] == "rocmdesk-notify"


def test_a_failed_send_falls_back_and_keeps_going(qtbot):
    ctx = _ctx(live=True)
    alerts = DesktopAlerts(ctx, send=lambda a: (_ for _ in ()).throw(OSError("no bus")))
    with qtbot.waitSignal(alerts.delivered, timeout=5000) as blocker:
        ctx.feed.snapshot.emit(_hot())
    assert "no bus" in blocker.args[1]


def test_a_snapshot_window_never_alerts(qtbot):
    sent = []
    ctx = _ctx(live=False)
    DesktopAlerts(ctx, send=sent.append)
    ctx.feed.snapshot.emit(_hot())
    qtbot.wait(200)
    assert sent == []


def test_alerts_off_in_settings(qtbot):
    sent = []
    ctx = _ctx(live=True)
    ctx.settings.alerts_enabled = False
    DesktopAlerts(ctx, send=sent.append)
    ctx.feed.snapshot.emit(_hot())
    qtbot.wait(200)
    assert sent == []


def test_alert_settings_out_of_range_fall_back_to_defaults():
    odd = Settings(alerts_enabled="yes", alert_throttle_s=10**9).normalized()  # type: ignore[arg-type]
    assert (odd.alerts_enabled, odd.alert_throttle_s) == (True, 30)
    assert Settings(alert_throttle_s=True).normalized().alert_throttle_s == 30  # type: ignore[arg-type]
