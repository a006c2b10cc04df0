#!/usr/bin/env bash
# docs/screenshots/notification.png: the first two real alerts of the 8x MI300X demo recording, sent by rocmdesk's
# own alerts.send() (gdbus, freedesktop Notifications) to a real notification daemon (Debian's dunst) on a private
# Xvfb screen and session bus; the screen's top-right corner is saved. Needs: xvfb dunst dbus (Debian packages).
set -euo pipefail
top="$(cd "$(dirname "$0")/.." && pwd)"
py="$top/.venv/bin/python"
if [ -z "${DBUS_SESSION_BUS_ADDRESS_PRIVATE:-}" ]; then
  exec env DBUS_SESSION_BUS_ADDRESS_PRIVATE=1 dbus-run-session -- "$0" "$@"
fi
export DISPLAY=:77
Xvfb :77 -screen 0 1280x800x24 -nolisten tcp & xvfb=$!
trap 'kill $xvfb ${daemon:-} 2>/dev/null || true' EXIT
sleep 1
dunst -conf /dev/null >/dev/null 2>&1 & daemon=$!
sleep 1
cd "$top"
"$py" - <<'PY'
import os
from rocmdesk.telemetry.alerts import AlertEngine, AlertRules, send
from rocmdesk.telemetry.backends.demo import DemoBackend

clock = [0.0]
backend = DemoBackend("mi300x-node", clock=lambda: clock[0])  # one recorded second per sample
backend.discover()
engine = AlertEngine(AlertRules(throttle_after_s=10))
sent = 0
for second in range(130):
    clock[0] = float(second)
    for alert in engine.feed(backend.sample(), now=float(second)):
        why = send(alert, env={"DBUS_SESSION_BUS_ADDRESS": os.environ["DBUS_SESSION_BUS_ADDRESS"]})
        print("sent:", alert.summary, "->", why or "delivered")
        sent += 1
    if sent >= 2:
        break
PY
sleep 2
QT_QPA_PLATFORM=xcb "$py" - "$top/docs/screenshots/notification.png" <<'PY'
import sys
from PySide6 import QtWidgets
app = QtWidgets.QApplication(sys.argv[:1])
shot = app.primaryScreen().grabWindow(0).copy(930, 40, 350, 165)
assert shot.save(sys.argv[1]), sys.argv[1]
print(sys.argv[1], shot.width(), shot.height())
PY
