"""Alerts without the window in front: desktop notifications and a tray icon showing the hottest GPU.

Only the live machine alerts (a snapshot or the demo is someone else's past). Rules are Qt-free
(rocmdesk/telemetry/alerts.py); delivery goes through the freedesktop Notifications service on the
session bus, off the GUI thread, with the tray's own balloon as the fallback when there is no bus.
"""

from __future__ import annotations

import logging
import threading
import time

from PySide6 import QtCore, QtGui, QtWidgets

from rocmdesk.telemetry import alerts
from rocmdesk.telemetry.model import Snapshot
from rocmdesk.ui import theme
from rocmdesk.ui.context import AppContext
from rocmdesk.ui.formatting import Level, c_to_unit, is_number, temp_level
from rocmdesk.ui.overview_tab import CPU_SENSOR

TRAY_PX = 64  # drawn at this size; the tray scales it to its own (22-48 px on common desktops)


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
        self.engine = alerts.AlertEngine(alerts.AlertRules(
            enabled=bool(ctx.settings.alerts_enabled), throttle_after_s=float(ctx.settings.alert_throttle_s)))
        self.tray: QtWidgets.QSystemTrayIcon | None = None
        self._tray_shown: tuple[str, Level] | None = None
        if tray_available is None:
            tray_available = QtWidgets.QSystemTrayIcon.isSystemTrayAvailable()
        # only where a tray exists (no tray: no icon at all), only when the setting is on
        live = ctx.is_live and not ctx.feed.frozen  # a snapshot's or the demo's temperatures are not now
        if tray_available and live and getattr(ctx.settings, "tray_icon", True):
            self.tray = QtWidgets.QSystemTrayIcon(QtGui.QIcon(tray_pixmap("?", Level.UNKNOWN)), self)
            self.tray.setToolTip("rocmdesk")
            self.tray.setContextMenu(self._tray_menu())
            self.tray.show()
        self.delivered.connect(self._fallback)
        if ctx.is_live and not ctx.feed.frozen:
            ctx.feed.snapshot.connect(self.on_snapshot)

    def _tray_menu(self) -> QtWidgets.QMenu:
        menu = QtWidgets.QMenu()
        self._menu = menu  # a context menu needs an owner that outlives this call
        notify = menu.addAction("Desktop notifications")
        notify.setCheckable(True)
        notify.setChecked(bool(self.ctx.settings.alerts_enabled))
        notify.toggled.connect(self.set_alerts_enabled)
        hide = menu.addAction("Hide this icon")
        hide.setToolTip("Turns the tray icon off (settings: tray_icon); it comes back when set on")
        hide.triggered.connect(lambda: self.set_tray_enabled(False))
        return menu

    def set_alerts_enabled(self, on: bool) -> None:
        self.ctx.settings.alerts_enabled = bool(on)
        self.engine.rules = alerts.AlertRules(enabled=bool(on), throttle_after_s=self.engine.rules.throttle_after_s,
                                              cooldown_s=self.engine.rules.cooldown_s)

    def set_tray_enabled(self, on: bool) -> None:
        """Off: the icon goes now and stays off (saved with the settings); on takes effect here too."""
        self.ctx.settings.tray_icon = bool(on)
        if not on and self.tray is not None:
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
            threading.Thread(target=self._deliver, args=(alert,), name="rocmdesk-notify", daemon=True).start()

    def _deliver(self, alert: alerts.Alert) -> None:
        try:
            why = self._send(alert)
        except Exception as exc:  # a broken bus must never reach the sampler or the GUI
            why = f"{type(exc).__name__}: {exc}"
        self.delivered.emit(alert, why)

    def _fallback(self, alert: alerts.Alert, why: str | None) -> None:
        if why is None:
            return
        log.info("desktop notification not sent (%s); using the tray", why)
        if self.tray is not None:
            self.tray.showMessage(alert.summary, alert.body, QtWidgets.QSystemTrayIcon.MessageIcon.Warning, 15000)
