"""Hotplug by identity (issue 11, item 5): a rescan compares what each card name stands for, not only the name.

A GPU whose device folder vanishes and returns (same inode after a rename back, or a new one when it is
re-created) is rediscovered within one rescan; another GPU given the same ``cardN`` is not taken for the
old one, and its history is its own.
"""

from __future__ import annotations

import os
import shutil

from rocmdesk.host import HostRoot
from rocmdesk.telemetry.backends.sysfs import SysfsBackend
from rocmdesk.telemetry.discovery import card_identities, card_identity
from rocmdesk.telemetry.history import History
from rocmdesk.telemetry.hotplug import HotplugMonitor
from rocmdesk.telemetry.model import GpuInfo, GpuSample, Snapshot
from tests.support.sysfs_tree import GpuSpec, build_root


def _two_gpus(tmp_path):
    root = build_root(tmp_path / "r", [GpuSpec("rx6600", pci="0000:03:00.0", card=0),
                                       GpuSpec("rx580", pci="0000:04:00.0", card=1)])
    return root, (root / "sys/class/drm/card1/device").resolve()


def _monitor(root):
    monitor = HotplugMonitor(HostRoot(root), lambda event: None, rescan_interval_s=60)
    monitor._known = card_identities(HostRoot(root))
    return monitor


def _events(monitor):
    return [(e.kind, e.card, e.detail) for e in monitor.rescan_once()]


def test_identity_names_the_device_folder_its_pci_address_and_inodes(tmp_path):
    root, device = _two_gpus(tmp_path)
    identity = card_identity(HostRoot(root), "card1")
    assert identity.pci == "0000:04:00.0" and identity.present
    assert identity.device_path == "/" + str(device.relative_to(root))
    assert identity.inode == (device.stat().st_dev, device.stat().st_ino)
    os.rename(device, device.with_name("away"))
    gone = card_identity(HostRoot(root), "card1")
    assert not gone.present and gone.pci == "0000:04:00.0"  # the dangling link still names it


def test_a_folder_recreated_between_two_rescans_is_removed_and_found_again(tmp_path):
    root, device = _two_gpus(tmp_path)
    monitor = _monitor(root)
    copy = device.with_name("copy")
    shutil.copytree(device, copy, symlinks=True)
    shutil.rmtree(device)
    os.rename(copy, device)  # same path and name, a new inode: the kernel re-created the device
    assert _events(monitor) == [("removed", "card1", "card1 was removed (0000:04:00.0)"),
                                ("added", "card1", "card1 came back (0000:04:00.0)")]
    assert _events(monitor) == []  # and then it is known again


def test_a_folder_that_vanishes_and_returns_with_the_same_inode_is_back_in_one_rescan(tmp_path):
    root, device = _two_gpus(tmp_path)
    monitor = _monitor(root)
    away = device.with_name("away")
    os.rename(device, away)  # the card link stays, its device folder is gone
    assert _events(monitor) == [("removed", "card1", "card1 was removed (0000:04:00.0)")]
    assert _events(monitor) == []
    os.rename(away, device)  # back, the same inode
    assert _events(monitor) == [("added", "card1", "card1 came back (0000:04:00.0)")]


def test_another_gpu_under_the_same_card_name_is_not_the_old_one(tmp_path):
    root, _ = _two_gpus(tmp_path)
    build_root(root, [GpuSpec("rx6900xt", pci="0000:0a:00.0", card=2)])
    monitor = _monitor(root)
    link = root / "sys/class/drm/card1"
    target = os.readlink(root / "sys/class/drm/card2")
    (root / "sys/class/drm/card2").unlink()
    link.unlink()
    os.symlink(target, link)  # card1 is now the RX 6900 XT; the RX 580's folder is still there
    assert _events(monitor) == [("removed", "card1", "card1 was removed (0000:04:00.0)"),
                                ("added", "card1", "card1 is now another GPU (was 0000:04:00.0) (0000:0a:00.0)"),
                                ("removed", "card2", "card2 was removed (0000:0a:00.0)")]


def test_names_alone_unchanged_still_reports_nothing(tmp_path):
    root, _ = _two_gpus(tmp_path)
    monitor = _monitor(root)
    assert _events(monitor) == []


# -- the sysfs backend: the same rule at every sample -------------------------------------------------------

def _cards(snapshot):
    return [(g.info.card, g.info.pci, g.info.name) for g in snapshot.gpus]


def test_backend_finds_a_gpu_whose_folder_returned_at_the_next_sample(tmp_path):
    root, device = _two_gpus(tmp_path)
    backend = SysfsBackend(HostRoot(root))
    backend.discover()
    away = device.with_name("away")
    os.rename(device, away)
    gone = backend.sample()
    assert "GPU 0000:04:00.0 was removed" in gone.errors
    assert [g.info.pci for g in backend.sample().gpus] == ["0000:03:00.0"]  # card1 listed, no device
    os.rename(away, device)  # the card name never left /sys/class/drm: only the identity says it is back
    back = backend.sample()
    assert [g.info.pci for g in back.gpus] == ["0000:03:00.0", "0000:04:00.0"]
    assert back.gpus[1].temperature_c  # read from the returned folder


def test_backend_rereads_a_recreated_folder_whose_hwmon_moved(tmp_path):
    root, device = _two_gpus(tmp_path)
    backend = SysfsBackend(HostRoot(root))
    backend.discover()
    assert backend.sample().gpus[1].temperature_c
    copy = device.with_name("copy")
    shutil.copytree(device, copy, symlinks=True)
    hwmon = next((copy / "hwmon").iterdir())
    os.rename(hwmon, hwmon.with_name("hwmon99"))  # a re-probed device gets a new hwmon number
    shutil.rmtree(device)
    os.rename(copy, device)
    sample = backend.sample().gpus[1]
    assert sample.temperature_c, sample.unavailable  # the new plan reads hwmon99, not the vanished hwmon


def test_backend_does_not_take_another_gpu_at_the_same_card_for_the_old_one(tmp_path):
    root, _ = _two_gpus(tmp_path)
    build_root(root, [GpuSpec("rx6900xt", pci="0000:0a:00.0", card=2)])
    backend = SysfsBackend(HostRoot(root))
    backend.discover()
    before = _cards(backend.sample())
    link, other = root / "sys/class/drm/card1", root / "sys/class/drm/card2"
    old_target, new_target = os.readlink(link), os.readlink(other)
    link.unlink()
    os.symlink(new_target, link)  # card1 -> the RX 6900 XT
    other.unlink()
    os.symlink(old_target, other)  # card2 -> the RX 580 (the names swapped, both folders stayed)
    after = _cards(backend.sample())
    assert {c[0]: c[1] for c in before} == {"card0": "0000:03:00.0", "card1": "0000:04:00.0", "card2": "0000:0a:00.0"}
    assert {c[0]: c[1] for c in after} == {"card0": "0000:03:00.0", "card1": "0000:0a:00.0", "card2": "0000:04:00.0"}
    assert {c[1]: c[2] for c in after} == {c[1]: c[2] for c in before}  # each name stays with its GPU


# -- history: another GPU at a known address starts afresh ------------------------------------------------

def _snapshot(t, pci, device_id, unique_id, temp):
    info = GpuInfo(card="card1", pci=pci, name="GPU", device_id=device_id, unique_id=unique_id)
    sample = GpuSample(info=info, timestamp=t, temperature_c={"edge": temp})
    return Snapshot(backend="sysfs", timestamp=t, gpus=[sample])


def test_history_of_another_gpu_at_the_same_address_is_its_own():
    history = History(capacity=16)
    for t in range(3):
        history.append_snapshot(_snapshot(100.0 + t, "0000:04:00.0", 0x67DF, None, 50.0))
    assert len(history["0000:04:00.0"]) == 3
    history.append_snapshot(_snapshot(110.0, "0000:04:00.0", 0x67DF, "abc", 51.0))  # same GPU, id learnt
    assert len(history["0000:04:00.0"]) == 4
    history.append_snapshot(_snapshot(120.0, "0000:04:00.0", 0x73BF, None, 70.0))  # another board in the slot
    assert len(history["0000:04:00.0"]) == 1
    history.append_snapshot(_snapshot(121.0, "0000:04:00.0", 0x73BF, "def", 71.0))
    history.append_snapshot(_snapshot(122.0, "0000:04:00.0", 0x73BF, "xyz", 72.0))  # unique_id differs: another
    assert len(history["0000:04:00.0"]) == 1
