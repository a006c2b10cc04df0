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
# one notification for several GPUs with the same event in one sample: "8 × MI300X are throttling"
GROUP_VERB = {"over-crit": "are at or over a critical temperature", "throttling": "are throttling",
              "gpu-gone": "disappeared", "ecc-uncorrectable": "have new uncorrectable ECC errors"}
MAX_GROUP_LINES = 8
_URGENCY_ORDER = ("low", "normal", "critical")


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
    gpu: str = ""  # which GPU, short ("card3, 0000:46:00.0"): the line naming it when alerts are grouped
    detail: str = ""  # what happened to it, without its name: the rest of that line


def gpu_words(info) -> str:
    """"card3, 0000:46:00.0": eight MI300X share one name, so a notification names the card and address."""
    return ", ".join(p for p in (info.card, info.pci) if p) or info.name


def group_alerts(found: list[Alert]) -> list[Alert]:
    """One alert per kind: several GPUs with the same event in one sample are one notification.

    A node whose eight GPUs reach their power cap together showed eight identical pop-ups
    "AMD Instinct MI300X is throttling" that did not say which GPU was which.
    """
    by_kind: dict[str, list[Alert]] = {}
    for alert in found:
        by_kind.setdefault(alert.kind, []).append(alert)
    out = []
    for kind, group in by_kind.items():
        if len(group) == 1:
            out.append(group[0])
            continue
        names = {a.summary.split(" (", 1)[0] for a in group if " (" in a.summary}
        who = f"{len(group)} × {names.pop()}" if len(names) == 1 else f"{len(group)} GPUs"
        details = {a.detail for a in group}
        shown = group[:MAX_GROUP_LINES]
        if len(details) == 1:  # the same on all: name them, then say it once
            said = group[0].detail
            more = f"; … and {len(group) - len(shown)} more" if len(group) > len(shown) else ""
            lines = ["; ".join(a.gpu for a in shown) + more,
                     said[:1].upper() + said[1:]]
        else:
            lines = [f"{a.gpu}: {a.detail}" for a in shown]
            if len(group) > len(shown):
                lines.append(f"… and {len(group) - len(shown)} more")
        urgency = max((a.urgency for a in group), key=lambda u: _URGENCY_ORDER.index(u) if u in _URGENCY_ORDER else 1)
        out.append(Alert(kind, ",".join(a.pci for a in group), f"{who} {GROUP_VERB.get(kind, kind)}",
                         "\n".join(line for line in lines if line), urgency, who, group[0].detail))
    return out


@dataclass(slots=True)
class _GpuState:
    name: str
    card: str = ""
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
            state = self._gpus.setdefault(gpu.info.pci, _GpuState(gpu.info.name, gpu.info.card))
            out.extend(self._check_gpu(gpu, state, now))
        for pci in sorted(set(self._gpus) - present):
            state = self._gpus.pop(pci)
            who = ", ".join(p for p in (state.card, pci) if p)
            detail = "no longer found. Check the kernel log (dmesg) for a GPU reset or a PCIe error."
            out.extend(self._maybe(now, Alert("gpu-gone", pci, f"{state.name} ({who}) disappeared",
                                              f"{state.name} is {detail}", "critical", who, detail)))
        return group_alerts(out)

    def _check_gpu(self, gpu: GpuSample, state: _GpuState, now: float) -> list[Alert]:
        out: list[Alert] = []
        pci, who = gpu.info.pci, gpu_words(gpu.info)
        name = f"{gpu.info.name} ({who})"
        hot = [(sensor, value, gpu.temperature_crit_c[sensor]) for sensor, value in sorted(gpu.temperature_c.items())
               if sensor in gpu.temperature_crit_c and value >= gpu.temperature_crit_c[sensor]]
        if hot:
            sensor, value, crit = hot[0]
            detail = (f"{sensor} at {value:.0f} °C, at or over its critical limit of {crit:.0f} °C. The driver "
                      "slows the GPU down and may shut it off; check its cooling.")
            out.extend(self._maybe(now, Alert("over-crit", pci, f"{name}: {sensor} at {value:.0f} °C",
                                              f"At or over its critical limit of {crit:.0f} °C. The driver slows "
                                              "the GPU down and may shut it off; check its cooling.", "critical",
                                              who, detail)))
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
                detail = f"for {lasted:.0f} s: {reasons}."
                out.extend(self._maybe(now, Alert("throttling", pci, f"{name} is throttling",
                                                  f"For {lasted:.0f} s: {reasons}.", "normal", who, detail)))
        count = (gpu.ras or {}).get("uncorrectable")
        if isinstance(count, int):
            if state.uncorrectable is not None and count > state.uncorrectable:
                new = count - state.uncorrectable
                out.extend(self._maybe(now, Alert(
                    "ecc-uncorrectable", pci, f"{name}: {new} new uncorrectable ECC error(s)",
                    f"{count} since the driver loaded. Work on this GPU may have failed; see the Diagnosis tab.",
                    "critical", who, f"{new} new, {count} since the driver loaded. Work on it may have failed; "
                                     "see the Diagnosis tab.")))
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
