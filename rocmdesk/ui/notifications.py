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
from rocmdesk.ui.context import AppContext

log = logging.getLogger(__name__)


class DesktopAlerts(QtCore.QObject):
    """Feeds every live snapshot to an :class:`alerts.AlertEngine` and shows what it returns."""

    delivered = QtCore.Signal(object, object)  # (Alert, None or why it could not be sent), GUI thread

    def __init__(self, ctx: AppContext, parent: QtCore.QObject | None = None, *,
                 send=alerts.send) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self._send = send
        self.engine = alerts.AlertEngine(alerts.AlertRules(
            enabled=bool(ctx.settings.alerts_enabled), throttle_after_s=float(ctx.settings.alert_throttle_s)))
        self.tray: QtWidgets.QSystemTrayIcon | None = None
        if QtWidgets.QSystemTrayIcon.isSystemTrayAvailable():
            app = QtWidgets.QApplication.instance()
            icon = app.windowIcon() if isinstance(app, QtWidgets.QApplication) else QtGui.QIcon()
            self.tray = QtWidgets.QSystemTrayIcon(icon, self)
            self.tray.setToolTip("rocmdesk")
            self.tray.show()
        self.delivered.connect(self._fallback)
        if ctx.is_live and not ctx.feed.frozen:
            ctx.feed.snapshot.connect(self.on_snapshot)

    def on_snapshot(self, snapshot: Snapshot) -> None:
        if self.tray is not None:
            top = alerts.hottest(snapshot)
            self.tray.setToolTip(f"rocmdesk · hottest GPU: {top[0]} {top[1]:.0f} °C" if top else "rocmdesk")
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
