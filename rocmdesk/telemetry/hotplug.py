"""Notice GPUs appearing, vanishing or resetting, without Qt.

On the live machine a pyudev monitor listens to the ``drm`` subsystem. Where that is not
possible (no netlink socket in a container, pyudev missing, or a host root that is not ``/``)
the monitor falls back to listing ``/sys/class/drm`` every few seconds, and says so in the log.

A ``change`` uevent carrying ``WEDGED=<methods>`` is the DRM "device wedged" event (kernel
Documentation/gpu/drm-uapi.rst, "Device wedging", drm_dev_wedged_event(), Linux 6.14+); amdgpu
sends it after a GPU reset, so it is shown to the user as a reset/wedge event on that GPU.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rocmdesk.host import HostReadError, HostRoot
from rocmdesk.telemetry.discovery import CardIdentity, card_identities

log = logging.getLogger(__name__)

CARD_RE = re.compile(r"^card\d+$")
DEFAULT_RESCAN_S = 5.0


@dataclass(frozen=True)
class HotplugEvent:
    """``action`` is add/remove/change; ``kind`` is what it means to the user."""

    action: str
    card: str | None
    kind: str  # "added", "removed", "reset", "wedged", "change"
    detail: str = ""
    timestamp: float = field(default_factory=time.time)
    properties: Mapping[str, str] = field(default_factory=dict)


def classify(action: str, card: str | None, properties: Mapping[str, str]) -> HotplugEvent | None:
    """Turn one drm uevent into an event users care about; None for connector noise."""
    if card is None or not CARD_RE.match(card):
        return None  # renderD*, connectors (card0-DP-1), the drm class itself
    if action == "add":
        return HotplugEvent(action, card, "added", f"{card} appeared", properties=dict(properties))
    if action == "remove":
        return HotplugEvent(action, card, "removed", f"{card} was removed", properties=dict(properties))
    if action == "change":
        wedged = properties.get("WEDGED")
        if wedged is not None:
            if wedged in ("", "none"):
                return HotplugEvent(action, card, "reset", f"{card}: GPU reset (WEDGED={wedged or 'none'})",
                                    properties=dict(properties))
            return HotplugEvent(action, card, "wedged",
                                f"{card}: GPU wedged, recovery needed (WEDGED={wedged})", properties=dict(properties))
        if properties.get("RESET") == "1":
            return HotplugEvent(action, card, "reset", f"{card}: GPU reset", properties=dict(properties))
        if properties.get("HOTPLUG") == "1":
            return None  # a monitor was plugged or unplugged: not a GPU event
        return HotplugEvent(action, card, "change", f"{card} changed", properties=dict(properties))
    return None


def _card_number(card: str) -> int:
    return int(card[4:]) if card[4:].isdigit() else -1


def _at(identity: CardIdentity) -> str:
    return f" ({identity.pci})" if identity.pci else ""


def list_cards(root: HostRoot) -> set[str]:
    """DRM card names (``card0``...) present under the root, without connectors."""
    return {name for name in root.listdir("/sys/class/drm") if CARD_RE.match(name)}


class HotplugMonitor:
    """Calls ``callback(HotplugEvent)`` from its own thread; ``mode`` says how it watches.

    ``use_udev=None`` means "udev on the live machine, rescans elsewhere".
    """

    def __init__(self, root: HostRoot, callback: Callable[[HotplugEvent], None],
                 rescan_interval_s: float = DEFAULT_RESCAN_S, use_udev: bool | None = None) -> None:
        self.root = root
        self.callback = callback
        self.rescan_interval_s = max(0.05, float(rescan_interval_s))
        self.use_udev = root.is_live if use_udev is None else use_udev
        self.mode = "stopped"
        self.reason = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._monitor: Any = None  # a pyudev.Monitor while udev is watched
        self._known: dict[str, CardIdentity] = {}  # card -> what it stood for at the last rescan

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> str:
        """Start watching; returns the mode ("udev" or "rescan")."""
        if self._thread is not None:
            return self.mode
        self._stop.clear()
        target = self._rescan_loop
        if self.use_udev:
            try:
                self._monitor = self._open_udev()
                self.mode = "udev"
                self.reason = "pyudev monitor on the drm subsystem"
                target = self._udev_loop
            except Exception as exc:  # pyudev raises plain OSError/ImportError/DeviceNotFound...
                self.mode = "rescan"
                self.reason = f"udev monitoring is not possible ({exc})"
        else:
            self.mode = "rescan"
            self.reason = "udev events do not apply to a host root other than /"
        if self.mode == "rescan":
            log.info("hotplug: %s; rescanning /sys/class/drm every %.0f s instead",
                     self.reason, self.rescan_interval_s)
            self._known = card_identities(self.root)
        self._thread = threading.Thread(target=target, name="rocmdesk-hotplug", daemon=True)
        self._thread.start()
        return self.mode

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)
        self.mode = "stopped"

    # -- udev --------------------------------------------------------------------------------------
    @staticmethod
    def _open_udev():
        import pyudev

        context = pyudev.Context()
        monitor = pyudev.Monitor.from_netlink(context)
        monitor.filter_by("drm")
        monitor.start()
        return monitor

    def _udev_loop(self) -> None:
        monitor = self._monitor
        while not self._stop.is_set():
            try:
                device = monitor.poll(timeout=0.5)
            except Exception as exc:
                log.warning("hotplug: udev monitor failed (%s); rescanning every %.0f s instead",
                            exc, self.rescan_interval_s)
                self.mode = "rescan"
                self.reason = f"udev monitor failed ({exc})"
                self._known = card_identities(self.root)
                self._rescan_loop()
                return
            if device is None:
                continue
            props = {str(k): str(v) for k, v in device.properties.items()}
            self._emit(classify(device.action or "", device.sys_name, props))

    # -- rescan --------------------------------------------------------------------------------------
    def rescan_once(self) -> list[HotplugEvent]:
        """Compare the cards, by identity, with the last rescan; emits and returns the differences.

        A card counts as present while its device folder exists. One whose folder vanished and came
        back, or that now stands for another GPU (another path, PCI address or inode), is reported as
        removed and added again, so whoever listens rediscovers it within this one rescan.
        """
        now = card_identities(self.root)
        if not now and self._known and not self._drm_listable():
            # an unreadable /sys/class/drm (a transient error) is not "every GPU was removed"
            log.warning("hotplug: cannot list /sys/class/drm; keeping the last card list")
            return []
        before = {c: i for c, i in self._known.items() if i.present}
        after = {c: i for c, i in now.items() if i.present}
        events = []
        for card in sorted(set(before) | set(after), key=_card_number):
            old, new = before.get(card), after.get(card)
            if old == new:
                continue
            if old is not None:
                events.append(HotplugEvent("remove", card, "removed", f"{card} was removed{_at(old)}"))
            if new is not None:
                last = self._known.get(card)  # also a card whose folder was missing at the last rescan
                what = ("appeared" if last is None or last.pci is None else "came back" if last.pci == new.pci
                        else f"is now another GPU (was {last.pci})")
                events.append(HotplugEvent("add", card, "added", f"{card} {what}{_at(new)}"))
        self._known = now
        for event in events:
            self._emit(event)
        return events

    def _drm_listable(self) -> bool:
        try:
            os.listdir(self.root.real_path("/sys/class/drm"))
        except (OSError, HostReadError):
            return False
        return True

    def _rescan_loop(self) -> None:
        while not self._stop.wait(self.rescan_interval_s):
            try:
                self.rescan_once()
            except Exception:  # never let the watcher thread die silently
                log.exception("hotplug: rescan failed")

    def _emit(self, event: HotplugEvent | None) -> None:
        if event is None:
            return
        log.info("hotplug: %s", event.detail)
        try:
            self.callback(event)
        except Exception:
            log.exception("hotplug: event handler failed")
