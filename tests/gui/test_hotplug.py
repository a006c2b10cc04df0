"""Hotplug watcher (Qt-free): udev event meaning, and the rescan fallback on host roots."""

from __future__ import annotations

import logging
import os
import threading

from rocmdesk.host import HostRoot
from rocmdesk.telemetry.discovery import card_identities
from rocmdesk.telemetry.hotplug import HotplugMonitor, classify, list_cards
from tests.support.sysfs_tree import GpuSpec, build_root


def test_classify_drm_uevents():
    assert classify("add", "card1", {}).kind == "added"
    assert classify("remove", "card1", {}).kind == "removed"
    reset = classify("change", "card0", {"WEDGED": "none"})
    assert reset.kind == "reset" and "WEDGED=none" in reset.detail
    wedged = classify("change", "card0", {"WEDGED": "rebind,bus-reset"})
    assert wedged.kind == "wedged" and "rebind,bus-reset" in wedged.detail
    assert classify("change", "card0", {"RESET": "1"}).kind == "reset"
    assert classify("change", "card0", {"HOTPLUG": "1"}) is None  # a monitor, not a GPU
    assert classify("change", "card0-DP-1", {}) is None
    assert classify("add", "renderD128", {}) is None
    assert classify("add", None, {}) is None
    assert classify("bind", "card0", {}) is None


def test_list_cards_skips_connectors_and_missing_trees(tmp_path):
    root = build_root(tmp_path / "r", [GpuSpec("rx6600", pci="0000:03:00.0")])
    os.symlink("card0", root / "sys/class/drm/card0-DP-1")
    assert list_cards(HostRoot(root)) == {"card0"}
    assert list_cards(HostRoot(tmp_path / "empty")) == set()


def test_rescan_fallback_reports_removal_and_return(tmp_path, caplog):
    root = build_root(tmp_path / "r", [GpuSpec("rx6600", pci="0000:03:00.0"), GpuSpec("rx580", pci="0000:04:00.0")])
    events = []
    seen = threading.Event()

    def on_event(event):
        events.append(event)
        seen.set()

    monitor = HotplugMonitor(HostRoot(root), on_event, rescan_interval_s=0.05)
    with caplog.at_level(logging.INFO, logger="rocmdesk.telemetry.hotplug"):
        assert monitor.start() == "rescan"
    assert "rescanning /sys/class/drm every" in caplog.text  # says so in the log
    try:
        link = root / "sys/class/drm/card1"
        target = os.readlink(link)
        link.unlink()
        assert seen.wait(3)
        assert (events[-1].kind, events[-1].card) == ("removed", "card1")
        seen.clear()
        os.symlink(target, link)
        assert seen.wait(3)
        assert (events[-1].kind, events[-1].card) == ("added", "card1")
    finally:
        monitor.stop()
    assert monitor.mode == "stopped"


def test_udev_failure_falls_back_to_rescan(tmp_path, caplog, monkeypatch):
    root = build_root(tmp_path / "r", [GpuSpec("rx6600", pci="0000:03:00.0")])

    def no_netlink():
        raise OSError("netlink socket not permitted")

    monitor = HotplugMonitor(HostRoot(root), lambda e: None, rescan_interval_s=10, use_udev=True)
    monkeypatch.setattr(monitor, "_open_udev", no_netlink)
    with caplog.at_level(logging.INFO, logger="rocmdesk.telemetry.hotplug"):
        assert monitor.start() == "rescan"
    monitor.stop()
    assert "udev monitoring is not possible (netlink socket not permitted)" in caplog.text


def test_a_failing_handler_does_not_stop_the_watcher(tmp_path):
    root = build_root(tmp_path / "r", [GpuSpec("rx6600", pci="0000:03:00.0")])
    calls = []

    def bad(event):
        calls.append(event)
        raise RuntimeError("handler bug")

    monitor = HotplugMonitor(HostRoot(root), bad, rescan_interval_s=60)
    monitor.start()
    (root / "sys/class/drm/card0").unlink()
    assert [e.kind for e in monitor.rescan_once()] == ["removed"]
    monitor.stop()
    assert len(calls) == 1


def test_an_unreadable_drm_folder_is_not_every_gpu_removed(tmp_path, caplog):
    """A transient error listing /sys/class/drm used to read as an empty card list: all GPUs 'removed'."""
    root = build_root(tmp_path / "r", [GpuSpec("rx6600", pci="0000:03:00.0"), GpuSpec("rx580", pci="0000:04:00.0")])
    monitor = HotplugMonitor(HostRoot(root), lambda e: None, rescan_interval_s=10)
    monitor._known = card_identities(HostRoot(root))
    drm = root / "sys/class/drm"
    hidden = root / "sys/class/drm.away"
    drm.rename(hidden)  # what a failing listdir looks like from here
    try:
        with caplog.at_level(logging.WARNING, logger="rocmdesk.telemetry.hotplug"):
            assert monitor.rescan_once() == []
        assert set(monitor._known) == {"card0", "card1"} and "cannot list /sys/class/drm" in caplog.text
    finally:
        hidden.rename(drm)
    # a listable folder with the cards really gone still reports them
    for card in ("card0", "card1"):
        (drm / card).unlink()
    assert sorted(e.card for e in monitor.rescan_once() if e.kind == "removed") == ["card0", "card1"]
