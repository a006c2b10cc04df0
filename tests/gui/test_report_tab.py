"""The Report tab: builds a report off the GUI thread, copies Markdown, previews and saves a bundle."""

from __future__ import annotations

import pytest

from rocmdesk.report.bundle import open_bundle
from tests.gui.conftest import demo_small
from tests.gui.test_demo_machine import FAULTS
from tests.support.app_context import fake_app_context

pytestmark = pytest.mark.gui


def test_report_tab_builds_copies_and_captures(open_window, qtbot, tmp_path):
    from PySide6 import QtGui

    session = open_window(demo_small(preroll_s=60.0, recording="rx7900xtx-comfyui"))
    window = session.window
    assert window.show_tab("report")
    tab = window.tab_widgets["report"]
    qtbot.waitUntil(lambda: bool(window.ctx.feed.latest), timeout=10000)
    assert tab.wait_idle()  # showing the tab started a build; this one has the feed's history
    with qtbot.waitSignal(tab.report_ready, timeout=30000):
        tab.refresh()
    assert tab.report is not None and "checks" in tab.headline.text()
    assert tab.text.toPlainText().startswith("## rocmdesk report")
    # demo telemetry beside a diagnosis of the demo machine (never this computer): each part says where it is from
    assert tab.telemetry_source.text().startswith("Demo recording: ")
    assert "not this machine" in tab.telemetry_source.text()
    assert tab.system_source.text() == "Demo machine rx7900xtx-comfyui (not this machine)"
    assert "System and diagnosis: demo machine rx7900xtx-comfyui" in tab.markdown
    assert {f["id"] for f in tab.report.findings} == FAULTS  # the demo machine's faults, as Diagnosis shows
    assert "Telemetry and processes: demo recording" in tab.markdown
    assert "Telemetry from demo recording" in tab.markdown  # said again at the telemetry
    preview = tab.preview.toPlainText()
    assert "Findings (" in preview and "Telemetry from demo recording" in preview and "All " in preview
    assert len(tab.charts) == 4
    from PySide6 import QtCore

    image = tab.preview.document().resource(QtGui.QTextDocument.ResourceType.ImageResource,
                                            QtCore.QUrl("rocmdesk-chart-0"))
    assert image is not None and not image.isNull()
    assert "### Telemetry" in tab.markdown and "samples over" in tab.markdown
    tab.copy_button.click()
    assert QtGui.QGuiApplication.clipboard().text() == tab.markdown

    html_path = tmp_path / "r.html"
    tab.save_path_provider = lambda *_a: str(html_path)
    tab.save_button.click()
    saved = html_path.read_text()
    assert saved.count("<svg class=\"chart\"") == 4 and "data:image" not in saved
    assert "System and diagnosis: demo machine" in saved and "Telemetry and processes: demo recording" in saved

    bundle_path = tmp_path / "b.tar.gz"
    tab.save_path_provider = lambda *_a: str(bundle_path)
    tab.capture_button.click()
    assert tab.wait_idle()
    dialog = tab.preview_dialog
    assert dialog is not None and dialog.isVisible() and not bundle_path.exists()  # preview first
    window.grab().save(str(tmp_path / "report-tab.png"))
    from PySide6 import QtWidgets

    box = dialog.findChild(QtWidgets.QDialogButtonBox)
    box.button(QtWidgets.QDialogButtonBox.StandardButton.Save).click()
    assert bundle_path.is_file() and "Saved" in tab.status.text()
    assert "describes the demo machine rx7900xtx-comfyui" in dialog.findChild(QtWidgets.QLabel).text()
    with open_bundle(bundle_path) as opened:  # a bundle of the demo machine's files, not of this computer
        # no demo recording in it: at most one sample the capture read from the demo machine's own sysfs
        assert opened.history is None or len(opened.history.frames) == 1
        assert "Ubuntu 24.04" in opened.root.read_text("/etc/os-release")


def _ctx(mode: str, reason: str, bundle: str | None = None, root: str = "/"):
    return fake_app_context(root, mode, mode_reason=reason, bundle_path=bundle)


def test_provenance_names_each_source_once(tmp_path):
    from rocmdesk.ui.report_tab import provenance_of

    demo = provenance_of(_ctx("demo", "Demo mode (--demo) — 8 × MI300X node (demo recording)"))
    assert demo.telemetry == "demo recording: 8 × MI300X node (not this machine)"
    # the demo diagnoses its shipped machine, never this one
    assert demo.system == "demo machine 8 × MI300X node (not this machine)" and demo.telemetry_elsewhere
    assert provenance_of(_ctx("demo", "")).telemetry == "demo recording: bundled demo (not this machine)"
    snap = provenance_of(_ctx("snapshot", "Snapshot b.tar.gz, captured 2026-01-02 03:04: fixes are disabled",
                              "/x/b.tar.gz"))
    assert snap.system == "Snapshot b.tar.gz, captured 2026-01-02 03:04" and snap.telemetry is None
    assert provenance_of(_ctx("snapshot", "", "/x/b.tar.gz")).system == "snapshot b.tar.gz"
    folder = provenance_of(_ctx("snapshot", f"Root folder {tmp_path}: no GPU", None, str(tmp_path)))
    assert folder.system.startswith("Root folder") and folder.telemetry is None
    assert provenance_of(_ctx("live", "")).system == "this machine"


def test_preview_html_escapes_machine_text_and_colours_findings():
    from rocmdesk.report.data import ReportData
    from rocmdesk.ui import theme
    from rocmdesk.ui.report_tab import preview_html

    report = ReportData(
        created=0.0, source="this machine", system=[("Kernel", "<6.8>")], gpus=[], telemetry_source=None,
        checks=[{"id": "c1", "area": "Driver", "status": "fail", "reason": "r & r"}],
        findings=[{"id": "c1", "severity": "error", "title": "Bad <b>thing</b>", "explanation": "a\n\nb",
                   "evidence": [{"path": "/etc/x", "line": 3, "text": "x=<1>"}],
                   "fix": {"steps": ["do it"], "privileged": True}}],
        processes=[{"pid": 7, "name": "python", "pci": "0000:03:00.0", "vram_bytes": 1 << 30,
                    "gpu_percent": None, "cmdline": "python main.py"}])
    text = preview_html(report, theme.LIGHT, [])
    assert "Bad &lt;b&gt;thing&lt;/b&gt;" in text and "x=&lt;1&gt;" in text and "&lt;6.8&gt;" in text
    assert theme.LIGHT.critical in text and "needs administrator rights" in text
    assert ">N/A<" in text and "n/a" not in text
    assert "/etc/x:3" in text and "Telemetry from" not in text and "<img" not in text
