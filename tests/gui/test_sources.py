"""Opening other sources: a support bundle, and switching from the banner without a restart."""

from __future__ import annotations

import pytest

from rocmdesk.ui.settings import Settings
from tests.support.sysfs_tree import GpuSpec, build_root

pytestmark = pytest.mark.gui


def test_bundle_opens_as_snapshot_with_its_history(qtbot, open_window, tmp_path):
    from rocmdesk.report.bundle import capture
    from rocmdesk.ui.sources import bundle_source

    root = build_root(tmp_path / "root", [GpuSpec("rx7900xtx", pci="0000:03:00.0")])
    bundle = tmp_path / "support.tar.gz"
    capture(str(bundle), str(root), diagnose_fn=lambda *a, **k: None)
    source = bundle_source(str(bundle), "sysfs")
    assert source.mode == "snapshot" and "Snapshot support.tar.gz" in source.reason
    session = open_window(source)
    qtbot.waitUntil(lambda: session.feed.last_snapshot is not None and not session.feed.loading, timeout=8000)
    assert session.window.banner.isVisible() and "Snapshot" in session.window.banner.title.text()
    assert "0000:03:00.0" in session.feed.history
    folder = source.bundle.folder
    session.window.close()
    session.close()
    import os

    assert not os.path.exists(folder)  # the unpacked bundle is removed when the window goes


def test_open_root_folder_from_the_banner_replaces_the_session(qtbot, tmp_path):
    from rocmdesk.ui.app import Controller, make_app
    from rocmdesk.ui.sources import demo_source

    app = make_app()
    controller = Controller(app, Settings(), "sysfs")
    first = controller.show(demo_source("test", recording="rx7900xtx-comfyui", preroll_s=0))
    qtbot.addWidget(first.window)
    assert first.window.banner.title.text().startswith("Demo data")
    root = build_root(tmp_path / "root", [GpuSpec("rx6600", pci="0000:0a:00.0")])
    first.window.switch_source("root", str(root))
    qtbot.waitUntil(lambda: controller.session is not first, timeout=8000)
    second = controller.session
    qtbot.addWidget(second.window)
    assert second.ctx.mode == "snapshot" and str(root) in second.ctx.mode_reason
    qtbot.waitUntil(lambda: "0000:0a:00.0" in second.feed.latest, timeout=8000)
    assert not first.window.isVisible()
    # a folder that cannot be opened: a message, and the current session stays
    from PySide6 import QtWidgets

    shown = []
    original = QtWidgets.QMessageBox.warning
    QtWidgets.QMessageBox.warning = lambda *a, **k: shown.append(a[2])
    try:
        second.window.switch_source("bundle", str(tmp_path / "missing.tar.gz"))
        qtbot.waitUntil(lambda: bool(shown), timeout=8000)
    finally:
        QtWidgets.QMessageBox.warning = original
    assert "no bundle at" in shown[0] and controller.session is second
    second.window.close()
    second.close()


def test_demo_preroll_in_chunks_equals_one_preroll():
    from rocmdesk.telemetry.backends.demo import DemoBackend
    from rocmdesk.ui.sources import preroll_in_chunks

    backend = DemoBackend("rx7900xtx-comfyui")
    chunked = list(preroll_in_chunks(backend, 2500, chunk_s=700))
    whole = backend.preroll(2500)
    assert len(chunked) == len(whole)
    assert [s.timestamp for s in chunked] == pytest.approx([s.timestamp for s in whole], abs=0.05)
    assert [s.gpus[0].power_w for s in chunked] == [s.gpus[0].power_w for s in whole]
