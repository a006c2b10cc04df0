"""Desktop alerts in the window: live snapshots alert (off the GUI thread), snapshots and the demo never."""

from __future__ import annotations

import threading

import pytest

from rocmdesk.telemetry.model import GpuInfo, GpuSample, Snapshot
from rocmdesk.ui.notifications import DesktopAlerts
from rocmdesk.ui.settings import Settings
from tests.support.app_context import fake_app_context

pytestmark = pytest.mark.gui


def _ctx(live: bool):
    return fake_app_context(mode="live" if live else "snapshot")


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


# -- the tray icon: the hottest GPU's temperature ----------------------------------------------------
def _temps(*gpus: dict[str, float], crit: float = 110.0) -> Snapshot:
    out = []
    for n, temps in enumerate(gpus):
        info = GpuInfo(card=f"card{n}", pci=f"0000:0{n + 3}:00.0", name=f"GPU {n}")
        out.append(GpuSample(info=info, timestamp=0.0, temperature_c=dict(temps),
                             temperature_crit_c={k: crit for k in temps}))
    return Snapshot(backend="sysfs", timestamp=0.0, gpus=out)


def _icon_colour(tray) -> str:
    image = tray.icon().pixmap(64, 64).toImage()
    return image.pixelColor(6, 32).name()  # inside the badge, left of the number


def test_tray_shows_the_hottest_gpu_in_its_level_colour(qtbot):
    from rocmdesk.ui import theme
    from rocmdesk.ui.formatting import Level

    ctx = _ctx(live=True)
    alerts = DesktopAlerts(ctx, send=lambda a: None, tray_available=True)
    assert alerts.tray is not None
    # an APU's CPU core is hotter, but is not a GPU temperature
    alerts.update_tray(_temps({"edge": 45.0, "junction": 62.0}, {"junction": 97.0, "core0": 104.0}))
    assert alerts._tray_shown == ("97", Level.HOT)
    assert "GPU 1, junction 97 °C" in alerts.tray.toolTip() and "critical at 110" in alerts.tray.toolTip()
    assert _icon_colour(alerts.tray) == theme.current().hot
    alerts.update_tray(_temps({"junction": 50.0}))
    assert alerts._tray_shown == ("50", Level.OK) and _icon_colour(alerts.tray) == theme.current().ok
    ctx.settings.temp_unit = "F"
    alerts.update_tray(_temps({"junction": 50.0}))
    assert alerts._tray_shown[0] == "122"
    alerts.update_tray(_temps())  # no GPU, no reading
    assert alerts._tray_shown == ("?", Level.UNKNOWN) and "no GPU temperature" in alerts.tray.toolTip()


def test_tray_only_with_a_tray_live_and_switched_on(qtbot):
    assert DesktopAlerts(_ctx(live=True), send=lambda a: None, tray_available=False).tray is None
    assert DesktopAlerts(_ctx(live=False), send=lambda a: None, tray_available=True).tray is None
    ctx = _ctx(live=True)
    ctx.settings.tray_icon = False
    assert DesktopAlerts(ctx, send=lambda a: None, tray_available=True).tray is None
    ctx.settings.tray_icon = True
    alerts = DesktopAlerts(ctx, send=lambda a: None, tray_available=True)
    actions = {a.text(): a for a in alerts.tray.contextMenu().actions()}
    actions["Desktop notifications"].setChecked(False)
    assert ctx.settings.alerts_enabled is False and not alerts.engine.rules.enabled
    actions["Hide this icon"].trigger()
    assert alerts.tray is None and ctx.settings.tray_icon is False
    alerts.update_tray(_temps({"junction": 50.0}))  # no icon any more: nothing to update, no error


def test_tray_text_bounds():
    from rocmdesk.ui.notifications import tray_text

    assert tray_text(None) == "?" and tray_text(float("nan")) == "?" and tray_text(True) == "?"
    assert tray_text(64.6) == "65" and tray_text(1500.0) == "!" and tray_text(-5.0) == "-5"


def test_tray_setting_survives_a_damaged_file(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text('{"tray_icon": "yes", "alerts_enabled": 1}')
    loaded = Settings.load(path)
    assert loaded.tray_icon is True and loaded.alerts_enabled is True
    path.write_text('{"tray_icon": false}')
    assert Settings.load(path).tray_icon is False


# -- Settings menu in the window (issue 14, item 6: thresholds and on/off in settings) ----------------
def _menu_actions(menu) -> dict:
    return {a.text(): a for a in menu.actions() if a.text()}


def test_settings_menu_switches_notifications_tray_and_throttle_delay(qtbot):
    from PySide6 import QtWidgets

    ctx = _ctx(live=True)
    owner = QtWidgets.QWidget()
    qtbot.addWidget(owner)
    alerts = DesktopAlerts(ctx, send=lambda a: None, tray_available=True)
    menu = alerts.settings_menu(owner)
    actions = _menu_actions(menu)
    tray = actions["Tray icon with the hottest GPU"]
    notify = actions["Desktop notifications"]
    assert tray.isChecked() and notify.isChecked() and alerts.tray is not None
    tray.trigger()  # off from the window
    assert alerts.tray is None and ctx.settings.tray_icon is False
    tray.trigger()  # and back on: the icon is there again, without a restart
    assert alerts.tray is not None and ctx.settings.tray_icon is True
    _menu_actions(alerts.tray.contextMenu())["Hide this icon"].trigger()  # the tray's own menu agrees
    assert alerts.tray is None and not tray.isChecked() and ctx.settings.tray_icon is False
    notify.trigger()
    assert ctx.settings.alerts_enabled is False and not alerts.engine.rules.enabled
    delays = {a.text(): a for a in alerts.throttle_menu.actions()}
    assert list(delays) == ["after 10 s", "after 30 s", "after 1 min", "after 5 min"]
    assert delays["after 30 s"].isChecked()  # the default
    delays["after 5 min"].trigger()
    assert ctx.settings.alert_throttle_s == 300 and alerts.engine.rules.throttle_after_s == 300.0
    assert not alerts.engine.rules.enabled  # changing the delay does not switch alerts back on
    assert not delays["after 30 s"].isChecked()


def test_settings_menu_keeps_an_odd_saved_delay_and_says_why_nothing_happens_off_live(qtbot):
    ctx = _ctx(live=True)
    ctx.settings.alert_throttle_s = 45  # written by hand in settings.json: offered as it is
    alerts = DesktopAlerts(ctx, send=lambda a: None, tray_available=False)
    checked = [a.text() for a in alerts.throttle_actions.actions() if a.isChecked()]
    assert checked == ["after 45 s"] and alerts.engine.rules.throttle_after_s == 45.0
    alerts.tray_action.setChecked(False)
    alerts.tray_action.setChecked(True)  # no tray on this desktop: the setting is kept, no icon appears
    assert alerts.tray is None and ctx.settings.tray_icon is True
    assert "no system tray" in alerts.tray_action.toolTip()
    demo = DesktopAlerts(_ctx(live=False), send=lambda a: None, tray_available=True)
    demo.tray_action.setChecked(False)
    demo.tray_action.setChecked(True)
    assert demo.tray is None and "Only the live machine" in demo.notify_action.toolTip()


def test_the_window_has_the_settings_menu_before_help(qtbot, open_window, manual_factory):
    from tests.gui.conftest import FakeBackend, fake_source

    session = open_window(fake_source(FakeBackend(1)), sampler_factory=manual_factory)
    titles = [a.text() for a in session.window.menuBar().actions()]
    assert titles[:2] == ["&Settings", "&Help"]
    menu = session.window.menuBar().actions()[0].menu()
    assert "Desktop notifications" in _menu_actions(menu)
