"""The Report tab: builds a report off the GUI thread, copies Markdown, previews and saves a bundle."""

from __future__ import annotations

import pytest

from rocmdesk.report.bundle import open_bundle
from tests.gui.conftest import demo_small

pytestmark = pytest.mark.gui


def test_report_tab_builds_copies_and_captures(open_window, qtbot, tmp_path):
    from PySide6 import QtGui

    session = open_window(demo_small(preroll_s=60.0))
    window = session.window
    assert window.show_tab("report")
    tab = window.tab_widgets["report"]
    qtbot.waitUntil(lambda: bool(window.ctx.feed.latest), timeout=10000)
    assert tab.wait_idle()  # showing the tab started a build; this one has the feed's history
    with qtbot.waitSignal(tab.report_ready, timeout=30000):
        tab.refresh()
    assert tab.report is not None and "checks" in tab.headline.text()
    assert tab.text.toPlainText().startswith("## rocmdesk report")
    assert "### Telemetry" in tab.markdown and "samples over" in tab.markdown
    tab.copy_button.click()
    assert QtGui.QGuiApplication.clipboard().text() == tab.markdown

    html_path = tmp_path / "r.html"
    tab.save_path_provider = lambda *_a: str(html_path)
    tab.save_button.click()
    assert html_path.read_text().count("data:image/png;base64,") == 4

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
    with open_bundle(bundle_path) as opened:
        assert opened.history is not None and len(opened.history.gpus) >= 1
