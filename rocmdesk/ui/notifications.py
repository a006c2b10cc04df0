"""Alerts without the window in front: desktop notifications and a tray icon showing the hottest GPU.

Only the live machine alerts (a snapshot or the demo is someone else's past). Rules are Qt-free
(rocmdesk/telemetry/alerts.py); delivery goes through the freedesktop Notifications service on the
session bus, off the GUI thread, with the tray's own balloon as the fallback when there is no bus.
"""

from __future__ import annotations

import logging
import time

from PySide6 import QtCore, QtGui, QtWidgets

from rocmdesk.telemetry import alerts
from rocmdesk.telemetry.model import Snapshot
from rocmdesk.ui import theme
from rocmdesk.ui.background import Background
from rocmdesk.ui.context import AppContext
from rocmdesk.ui.formatting import Level, c_to_unit, is_number, temp_level
from rocmdesk.ui.gpu_card import CPU_SENSOR

TRAY_PX = 64  # drawn at this size; the tray scales it to its own (22-48 px on common desktops)
# how long throttling must last before it alerts, as offered in Settings (settings.alert_throttle_s: 1-3600)
THROTTLE_CHOICES_S = (10, 30, 60, 300)


def hottest_reading(snapshot: Snapshot) -> tuple[str, str, float, float | None] | None:
    """(GPU name, sensor, °C, that sensor's crit or None) of the hottest sensor across GPUs."""
    best = None
    for gpu in snapshot.gpus:
        for sensor, value in gpu.temperature_c.items():
            if CPU_SENSOR.fullmatch(sensor):
                continue  # an APU's CPU cores (gpu_metrics) are not the GPU's temperature
            if is_number(value) and (best is None or value > best[2]):
                best = (gpu.info.name, sensor, float(value), gpu.temperature_crit_c.get(sensor))
    return best


def tray_text(celsius: float | None, unit: str = "C") -> str:
    """What the icon shows: whole degrees, at most three characters ("?" without a reading)."""
    if not is_number(celsius):
        return "?"
    value = round(c_to_unit(float(celsius), unit))
    return str(value) if -99 <= value <= 999 else "!"


def tray_pixmap(text: str, level: Level) -> QtGui.QPixmap:
    """A rounded badge in the level's colour with the number on it."""
    pal = theme.current()
    fill = pal.muted if level is Level.UNKNOWN else pal.level(level)
    pixmap = QtGui.QPixmap(TRAY_PX, TRAY_PX)
    pixmap.fill(QtCore.Qt.GlobalColor.transparent)
    p = QtGui.QPainter(pixmap)
    p.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
    p.setPen(QtCore.Qt.PenStyle.NoPen)
    p.setBrush(QtGui.QColor(fill))
    p.drawRoundedRect(QtCore.QRectF(2, 2, TRAY_PX - 4, TRAY_PX - 4), 12, 12)
    font = QtGui.QFont()
    font.setBold(True)
    font.setPixelSize(40 if len(text) <= 2 else 28)
    p.setFont(font)
    p.setPen(QtGui.QColor("#ffffff"))
    p.drawText(QtCore.QRect(0, 0, TRAY_PX, TRAY_PX), QtCore.Qt.AlignmentFlag.AlignCenter, text)
    p.end()
    return pixmap

log = logging.getLogger(__name__)


class DesktopAlerts(QtCore.QObject):
    """Feeds every live snapshot to an :class:`alerts.AlertEngine` and shows what it returns."""

    delivered = QtCore.Signal(object, object)  # (Alert, None or why it could not be sent), GUI thread

    def __init__(self, ctx: AppContext, parent: QtCore.QObject | None = None, *,
                 send=alerts.send, tray_available: bool | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self._send = send
        self._work = Background(self)
        self.engine = alerts.AlertEngine(alerts.AlertRules(
            enabled=bool(ctx.settings.alerts_enabled), throttle_after_s=float(ctx.settings.alert_throttle_s)))
        self.tray: QtWidgets.QSystemTrayIcon | None = None
        self._tray_shown: tuple[str, Level] | None = None
        if tray_available is None:
            tray_available = QtWidgets.QSystemTrayIcon.isSystemTrayAvailable()
        self.tray_available = bool(tray_available)
        self.live = bool(ctx.is_live and not ctx.feed.frozen)  # a snapshot's or the demo's temperatures are not now
        # one action each, in the tray's menu and in the window's Settings menu, so both always agree
        self.notify_action = QtGui.QAction("Desktop notifications", self)
        self.notify_action.setCheckable(True)
        self.notify_action.setChecked(bool(ctx.settings.alerts_enabled))
        self.notify_action.setToolTip("A temperature at its critical limit, long throttling, a GPU gone or "
                                      "new uncorrectable ECC errors (settings: alerts_enabled)")
        self.notify_action.toggled.connect(self.set_alerts_enabled)
        self.tray_action = QtGui.QAction("Tray icon with the hottest GPU", self)
        self.tray_action.setCheckable(True)
        self.tray_action.setChecked(bool(getattr(ctx.settings, "tray_icon", True)))
        self.tray_action.toggled.connect(self.set_tray_enabled)
        self.throttle_actions = QtGui.QActionGroup(self)
        for seconds in sorted({*THROTTLE_CHOICES_S, int(ctx.settings.alert_throttle_s)}):
            action = self.throttle_actions.addAction(f"after {seconds // 60} min" if seconds >= 60 and not seconds % 60
                                                     else f"after {seconds} s")
            action.setCheckable(True)
            action.setData(seconds)
            action.setChecked(seconds == int(ctx.settings.alert_throttle_s))
        self.throttle_actions.triggered.connect(lambda action: self.set_throttle_after(int(action.data())))
        self._explain_availability()
        # only where a tray exists (no tray: no icon at all), only when the setting is on
        if self.tray_action.isChecked():
            self._make_tray()
        self.delivered.connect(self._fallback)
        if ctx.is_live and not ctx.feed.frozen:
            ctx.feed.snapshot.connect(self.on_snapshot)

    def _explain_availability(self) -> None:
        """Say in the menu why an option does nothing here, instead of a switch that seems broken."""
        if not self.live:
            why = "Only the live machine alerts: this window shows a recording or the demo"
            for action in (self.notify_action, self.tray_action, *self.throttle_actions.actions()):
                action.setToolTip(f"{why} (the setting is kept for next time)")
        elif not self.tray_available:
            self.tray_action.setToolTip("This desktop has no system tray (the setting is kept for next time)")

    def _make_tray(self) -> None:
        if self.tray is not None or not (self.tray_available and self.live):
            return
        self.tray = QtWidgets.QSystemTrayIcon(QtGui.QIcon(tray_pixmap("?", Level.UNKNOWN)), self)
        self.tray.setToolTip("rocmdesk")
        self.tray.setContextMenu(self._tray_menu())
        self.tray.show()
        if self.ctx.feed is not None and getattr(self.ctx.feed, "last_snapshot", None) is not None:
            self.update_tray(self.ctx.feed.last_snapshot)

    def _tray_menu(self) -> QtWidgets.QMenu:
        menu = QtWidgets.QMenu()
        self._menu = menu  # a context menu needs an owner that outlives this call
        menu.addAction(self.notify_action)
        hide = menu.addAction("Hide this icon")
        hide.setToolTip("Turns the tray icon off (Settings ▸ Tray icon brings it back)")
        hide.triggered.connect(lambda: self.tray_action.setChecked(False))
        return menu

    def settings_menu(self, parent: QtWidgets.QWidget) -> QtWidgets.QMenu:
        """The window's Settings ▸ alerts: notifications and tray icon on/off, the throttling delay.

        Temperature alerts have no threshold to set: each sensor alerts at its own critical limit
        (hwmon ``tempN_crit``), which differs per GPU and sensor (issue 14, item 6).
        """
        menu = QtWidgets.QMenu("&Settings", parent)
        menu.setToolTipsVisible(True)
        menu.addSection("Alerts")
        menu.addAction(self.notify_action)
        menu.addAction(self.tray_action)
        throttle = menu.addMenu("Throttling alert")
        throttle.setToolTipsVisible(True)
        throttle.addActions(self.throttle_actions.actions())
        self.throttle_menu = throttle
        crit = menu.addAction("Temperature alert: at each sensor's critical limit")
        crit.setEnabled(False)
        crit.setToolTip("The limit the GPU reports (hwmon tempN_crit), so it differs per GPU and sensor")
        return menu

    def set_alerts_enabled(self, on: bool) -> None:
        self.ctx.settings.alerts_enabled = bool(on)
        if self.notify_action.isChecked() != bool(on):
            self.notify_action.setChecked(bool(on))
        self.engine.rules = alerts.AlertRules(enabled=bool(on), throttle_after_s=self.engine.rules.throttle_after_s,
                                              cooldown_s=self.engine.rules.cooldown_s)

    def set_throttle_after(self, seconds: int) -> None:
        """Throttling alerts once it has lasted this long (1 s to 1 h, as the settings file allows)."""
        seconds = max(1, min(3600, int(seconds)))
        self.ctx.settings.alert_throttle_s = seconds
        for action in self.throttle_actions.actions():
            if action.data() == seconds and not action.isChecked():
                action.setChecked(True)
        self.engine.rules = alerts.AlertRules(enabled=self.engine.rules.enabled, throttle_after_s=float(seconds),
                                              cooldown_s=self.engine.rules.cooldown_s)

    def set_tray_enabled(self, on: bool) -> None:
        """Off: the icon goes now and stays off (saved with the settings); on shows it now where it can be."""
        self.ctx.settings.tray_icon = bool(on)
        if self.tray_action.isChecked() != bool(on):
            self.tray_action.setChecked(bool(on))
        if on:
            self._make_tray()
        elif self.tray is not None:
            self.tray.hide()
            self.tray.deleteLater()
            self.tray = None
            self._tray_shown = None

    def update_tray(self, snapshot: Snapshot) -> None:
        if self.tray is None:
            return
        top = hottest_reading(snapshot)
        unit = getattr(self.ctx.settings, "temp_unit", "C")
        if top is None:
            shown, tip = ("?", Level.UNKNOWN), "rocmdesk · no GPU temperature reading"
        else:
            name, sensor, value, crit = top
            shown = (tray_text(value, unit), temp_level(value, crit))
            tip = f"rocmdesk · hottest GPU: {name}, {sensor} {shown[0]} °{unit}"
            if is_number(crit):
                tip += f" (critical at {tray_text(crit, unit)} °{unit})"
        if shown != self._tray_shown:  # a new icon only when the number or its colour changes
            self._tray_shown = shown
            self.tray.setIcon(QtGui.QIcon(tray_pixmap(*shown)))
        if self.tray.toolTip() != tip:
            self.tray.setToolTip(tip)

    def on_snapshot(self, snapshot: Snapshot) -> None:
        self.update_tray(snapshot)
        for alert in self.engine.feed(snapshot, time.monotonic()):
            self._deliver(alert)

    def _deliver(self, alert: alerts.Alert) -> None:
        """Send off the GUI thread (a D-Bus call can hang); ``delivered`` tells how it went."""
        def failed(exc: BaseException) -> None:  # a broken bus must never reach the sampler or the GUI
            self.delivered.emit(alert, f"{type(exc).__name__}: {exc}")

        self._work.submit(lambda: self._send(alert), lambda why: self.delivered.emit(alert, why), failed,
                          name="rocmdesk-notify")

    def _fallback(self, alert: alerts.Alert, why: str | None) -> None:
        if why is None:
            return
        log.info("desktop notification not sent (%s); using the tray", why)
        if self.tray is not None:
            self.tray.showMessage(alert.summary, alert.body, QtWidgets.QSystemTrayIcon.MessageIcon.Warning, 15000)
