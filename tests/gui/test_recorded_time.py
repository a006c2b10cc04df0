"""Snapshots are recorded time (issue 10 item 4): a one-sample bundle opens frozen, every view shows the
recording's own time; a root folder is re-read and says so; the title names the kind of source."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest
from PySide6 import QtWidgets

from rocmdesk.host import HostRoot
from rocmdesk.report.bundle import capture, recording_from_snapshots
from rocmdesk.telemetry.backends.sysfs import SysfsBackend
from tests.support.sysfs_tree import GpuSpec, build_root

pytestmark = pytest.mark.gui

RECORDED = time.mktime((2026, 12, 1, 21, 42, 5, 0, 0, -1))  # local time, as the window shows it


def _one_sample_bundle(tmp_path, samples: int = 1):
    root = build_root(tmp_path / "root", [GpuSpec("rx7900xtx", pci="0000:03:00.0")])
    backend = SysfsBackend(HostRoot(str(root)))
    backend.discover()
    snaps = []
    for i in range(samples):
        snap = backend.sample()
        t = RECORDED + 60.0 * i
        snaps.append(replace(snap, timestamp=t, gpus=[replace(g, timestamp=t) for g in snap.gpus]))
    backend.close()
    bundle = tmp_path / "customer.tar.gz"
    capture(str(bundle), str(root), diagnose_fn=lambda *a, **k: None, history=recording_from_snapshots(snaps),
            minutes=600)
    return bundle, root


def _all_text(window) -> str:
    texts = [w.text() for w in window.findChildren(QtWidgets.QLabel)]
    texts += [window.windowTitle(), window.statusBar().currentMessage()]
    return "\n".join(texts)


def test_one_sample_bundle_opens_frozen_at_its_recorded_time(open_window, manual_factory, qtbot, tmp_path):
    from rocmdesk.ui.sources import bundle_source

    bundle, _root = _one_sample_bundle(tmp_path)
    source = bundle_source(str(bundle), "sysfs")
    assert source.frozen and len(source.preload) == 1
    session = open_window(source, sampler_factory=manual_factory)
    window, feed = session.window, session.feed
    qtbot.waitUntil(lambda: feed.last_snapshot is not None and "0000:03:00.0" in feed.latest, timeout=8000)
    qtbot.wait(50)
    assert feed.frozen and feed.sampler is None and manual_factory.made == []  # no sampling ticks
    assert feed.last_snapshot.timestamp == pytest.approx(RECORDED)
    assert feed.age() is None
    assert window.rate_label.text() == "Recorded 2026-12-01 21:42 · 1 sample"
    assert not window.age_label.isVisible() and not window.rate_combo.isEnabled()
    assert "snapshot customer.tar.gz" in window.windowTitle()
    assert "recorded, not sampled" in window.source_label.text()

    overview = window.tab_widgets["overview"]
    window.show_tab("overview")
    assert overview.recorded.isVisible() and "2026-12-01 21:42:05" in overview.recorded.text()

    window.show_tab("graphs")
    graphs = window.tab_widgets["graphs"]
    graphs.redraw()
    t0, t1 = graphs.time_range()
    assert t0 < RECORDED < t1 and t1 - t0 <= 120  # the recording, not the last hour of the viewer's clock
    assert graphs.history_note.isVisible() and "recorded 2026-12-01 21:42 · 1 sample" in graphs.history_note.text()

    report = window.tab_widgets["report"]
    with qtbot.waitSignal(report.report_ready, timeout=60000):
        window.show_tab("report")
    assert report.wait_idle(60000)
    assert "recorded 2026-12-01 21:42 · 1 sample" in report.markdown
    text = _all_text(window) + report.markdown
    for wrong in ("just now", "recorded so far", "grow from the right", "Sampling at", "1 samples"):
        assert wrong not in text, wrong
    qtbot.wait(1200)  # a second later, still nothing ticks
    assert feed.sampler is None and feed.last_snapshot.timestamp == pytest.approx(RECORDED)


def test_longer_bundle_spans_its_own_timestamps(open_window, manual_factory, qtbot, tmp_path):
    from rocmdesk.ui.sources import bundle_source

    bundle, _root = _one_sample_bundle(tmp_path, samples=5)
    session = open_window(bundle_source(str(bundle), "sysfs"), sampler_factory=manual_factory)
    qtbot.waitUntil(lambda: session.window.rate_label.text().startswith("Recorded"), timeout=8000)
    assert session.window.rate_label.text() == "Recorded 2026-12-01 21:42 · 5 samples over 4 min"
    graphs = session.window.tab_widgets["graphs"]
    t0, t1 = graphs.time_range()
    assert t0 <= RECORDED and t1 >= RECORDED + 240 and t1 - t0 < 300


def test_root_folder_is_re_read_and_says_so(open_window, manual_factory, qtbot, tmp_path):
    from rocmdesk.ui.sources import root_source

    root = build_root(tmp_path / "root", [GpuSpec("rx7900xtx", pci="0000:03:00.0")])
    source = root_source(str(root), "sysfs")
    assert not source.frozen
    session = open_window(source, sampler_factory=manual_factory)
    window = session.window
    assert manual_factory.made and manual_factory.made[0].started  # sampled: its files may change
    assert f"root folder {root}" in window.windowTitle()
    assert "re-read" in window.source_label.text()
    assert window.rate_label.text().startswith("Sampling at")
