"""Report tab preview: missing sizes say N/A like every other view; charts are shown at their logical width."""

from __future__ import annotations

import re

import numpy as np

from rocmdesk.report.charts import Series, line_chart
from rocmdesk.report.data import ReportData


def _report(**kw) -> ReportData:
    base = dict(created=0.0, source="this machine", system=[], gpus=[], telemetry_source=None, checks=[],
                findings=[], processes=[])
    base.update(kw)
    return ReportData(**base)


def test_missing_vram_and_busy_show_the_apps_na():
    from rocmdesk.ui import theme
    from rocmdesk.ui.formatting import NA
    from rocmdesk.ui.report_tab import preview_html

    report = _report(
        gpus=[{"card": "card0", "pci": "0000:03:00.0", "name": "RX 7900 XTX", "gfx_target": "gfx1100",
               "vram_total_bytes": None, "driver": "amdgpu", "kfd_node": None},
              {"card": "card1", "pci": "0000:04:00.0", "name": "RX 7900 XTX", "gfx_target": "gfx1100",
               "vram_total_bytes": 24 << 30, "driver": "amdgpu", "kfd_node": 2}],
        processes=[{"pid": 7, "name": "python", "pci": "0000:03:00.0", "vram_bytes": None, "gpu_percent": None,
                    "cmdline": "python"},
                   {"pid": 8, "name": "python", "pci": "0000:03:00.0", "vram_bytes": "garbage", "gpu_percent": 5.0,
                    "cmdline": "python"}])
    text = preview_html(report, theme.LIGHT, [])
    assert "n/a" not in text.lower().replace(NA.lower(), "")  # no other spelling of N/A anywhere
    cells = re.findall(r"<td>([^<]*)</td>", text)
    assert cells.count(NA) >= 5  # GPU VRAM, KFD node, process VRAM x2, GPU busy
    assert "24.0 GiB" in cells and "5 %" in cells


def test_preview_shows_a_2x_chart_at_its_logical_width(qtbot):
    from rocmdesk.ui import report_tab

    class FakeTab:
        report = _report()
        preview = None

    t = np.arange(10.0)
    png = line_chart([Series("card0", t, t)], "Power", "W", report_tab.CHART_WIDTH, 200, scale=2)
    from PySide6 import QtGui, QtWidgets

    browser = QtWidgets.QTextBrowser()
    qtbot.addWidget(browser)
    tab = FakeTab()
    tab.preview = browser
    tab.charts = [("Power", png)]
    report_tab.ReportTab._render_preview(tab)
    image = browser.document().resource(QtGui.QTextDocument.ResourceType.ImageResource, "rocmdesk-chart-0.png")
    assert isinstance(image, QtGui.QImage) and image.width() == 2 * report_tab.CHART_WIDTH
    assert image.devicePixelRatio() == 2.0
