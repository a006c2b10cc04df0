"""When to tell the user about a GPU without the window in front (pure: snapshots in, alerts out).

Four events are worth an interruption: a temperature at or over its own critical limit (hwmon
``tempN_crit``), throttling that lasts longer than ``throttle_after_s``, a GPU that disappears (reset,
fell off the bus, driver unbound), and a growing count of uncorrectable ECC errors. Each alert is
rate-limited per GPU and kind (``cooldown_s``), so a GPU sitting at its limit does not flood the
desktop; an event that clears and comes back after the cooldown alerts again.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from rocmdesk.host import CommandRunner
from rocmdesk.telemetry.model import GpuSample, Snapshot

log = logging.getLogger(__name__)

KINDS = ("over-crit", "throttling", "gpu-gone", "ecc-uncorrectable")


@dataclass(frozen=True, slots=True)
class AlertRules:
    enabled: bool = True
    throttle_after_s: float = 30.0
    cooldown_s: float = 300.0


@dataclass(frozen=True, slots=True)
class Alert:
    kind: str  # one of KINDS
    pci: str
    summary: str
    body: str
    urgency: str = "normal"  # "critical" for over-crit, gone and ECC (freedesktop Notifications urgency)


@dataclass(slots=True)
class _GpuState:
    name: str
    throttled_since: float | None = None
    uncorrectable: int | None = None


@dataclass
class AlertEngine:
    """Feed it every snapshot; it returns the alerts to show now."""

    rules: AlertRules = field(default_factory=AlertRules)
    _gpus: dict[str, _GpuState] = field(default_factory=dict)
    _last: dict[tuple[str, str], float] = field(default_factory=dict)  # (kind, pci) -> when last shown

    def feed(self, snapshot: Snapshot, now: float) -> list[Alert]:
        if not self.rules.enabled:
            return []
        out: list[Alert] = []
        present = set()
        for gpu in snapshot.gpus:
            if gpu.unavailable.get("power_w", "").startswith("device gone"):
                continue  # the backend's stand-in for a GPU that just vanished: handled below
            present.add(gpu.info.pci)
            state = self._gpus.setdefault(gpu.info.pci, _GpuState(gpu.info.name))
            out.extend(self._check_gpu(gpu, state, now))
        for pci in sorted(set(self._gpus) - present):
            state = self._gpus.pop(pci)
            out.extend(self._maybe(now, Alert("gpu-gone", pci, f"GPU {pci} disappeared",
                                              f"{state.name} is no longer found. Check the kernel log (dmesg) "
                                              "for a GPU reset or a PCIe error.", "critical")))
        return out

    def _check_gpu(self, gpu: GpuSample, state: _GpuState, now: float) -> list[Alert]:
        out: list[Alert] = []
        pci, name = gpu.info.pci, gpu.info.name
        hot = [(sensor, value, gpu.temperature_crit_c[sensor]) for sensor, value in sorted(gpu.temperature_c.items())
               if sensor in gpu.temperature_crit_c and value >= gpu.temperature_crit_c[sensor]]
        if hot:
            sensor, value, crit = hot[0]
            out.extend(self._maybe(now, Alert("over-crit", pci, f"{name}: {sensor} at {value:.0f} °C",
                                              f"At or over its critical limit of {crit:.0f} °C. The driver slows "
                                              "the GPU down and may shut it off; check its cooling.", "critical")))
        throttle = gpu.throttle or {}
        throttling = bool(throttle.get("active"))
        if not throttling:
            state.throttled_since = None
        else:
            if state.throttled_since is None:
                state.throttled_since = now
            lasted = now - state.throttled_since
            if lasted >= self.rules.throttle_after_s:
                reasons = ", ".join(throttle.get("reasons") or []) or "no reason given"
                out.extend(self._maybe(now, Alert("throttling", pci, f"{name} is throttling",
                                                  f"For {lasted:.0f} s: {reasons}.")))
        count = (gpu.ras or {}).get("uncorrectable")
        if isinstance(count, int):
            if state.uncorrectable is not None and count > state.uncorrectable:
                out.extend(self._maybe(now, Alert(
                    "ecc-uncorrectable", pci, f"{name}: {count - state.uncorrectable} new uncorrectable ECC error(s)",
                    f"{count} since the driver loaded. Work on this GPU may have failed; see the Diagnosis tab.",
                    "critical")))
            state.uncorrectable = count
        return out

    def _maybe(self, now: float, alert: Alert) -> list[Alert]:
        key = (alert.kind, alert.pci)
        last = self._last.get(key)
        if last is not None and now - last < self.rules.cooldown_s:
            return []
        self._last[key] = now
        log.info("alert %s on %s: %s", alert.kind, alert.pci, alert.summary)
        return [alert]


def hottest(snapshot: Snapshot) -> tuple[str, float] | None:
    """(GPU name, °C) of the hottest sensor across GPUs, for the tray icon; None without readings."""
    best: tuple[str, float] | None = None
    for gpu in snapshot.gpus:
        for value in gpu.temperature_c.values():
            if best is None or value > best[1]:
                best = (gpu.info.name, value)
    return best


# -- delivery: the freedesktop Notifications service on the session bus ----------------------------
# org.freedesktop.Notifications.Notify(app_name s, replaces_id u, app_icon s, summary s, body s,
# actions as, hints a{sv}, expire_timeout i) (specifications.freedesktop.org/notification-spec), sent
# with GLib's gdbus tool through the command runner: no D-Bus library in the product, a timeout on a
# bus that does not answer, and the call recorded like every other command.
NOTIFY_TIMEOUT_S = 3.0
SESSION_ENV = ("DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "HOME")  # how gdbus finds the session bus
_URGENCY = {"low": 0, "normal": 1, "critical": 2}


def _gvariant_text(text: str) -> str:
    """A GVariant string literal (gdbus parses every argument as GVariant text)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def notify_argv(gdbus: str, alert: Alert, expire_ms: int = 15000) -> list[str]:
    return [gdbus, "call", "--session", "--timeout", str(int(NOTIFY_TIMEOUT_S)),
            "--dest", "org.freedesktop.Notifications", "--object-path", "/org/freedesktop/Notifications",
            "--method", "org.freedesktop.Notifications.Notify",
            "'rocmdesk'", "0", "'dialog-warning'", _gvariant_text(alert.summary), _gvariant_text(alert.body), "[]",
            f"{{'urgency': <byte {_URGENCY.get(alert.urgency, 1)}>, 'desktop-entry': <'org.rocmdesk.RocmDesk'>}}",
            str(int(expire_ms))]


def send(alert: Alert, runner: CommandRunner | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """Show ``alert`` as a desktop notification; None when delivered, else why not (in words)."""
    if runner is None:
        base = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
        session = {k: v for k, v in os.environ.items() if k in SESSION_ENV}
        runner = CommandRunner(default_timeout=NOTIFY_TIMEOUT_S + 1, env={**base, **session, **(env or {})})
    gdbus = runner.which("gdbus")
    if gdbus is None:
        return "gdbus is not installed (Debian/Ubuntu: libglib2.0-bin)"
    result = runner.run(notify_argv(gdbus, alert), timeout=NOTIFY_TIMEOUT_S + 1)
    if result.ok:
        return None
    return (result.error or result.stderr.strip() or f"gdbus exited {result.returncode}")[:300]
