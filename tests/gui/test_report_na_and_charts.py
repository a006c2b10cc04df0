"""Report tab preview: missing sizes say N/A like every other view; graphs are the report's SVG drawn by QtSvg
at the screen's density in the theme's colours."""

from __future__ import annotations

import re

import numpy as np

from rocmdesk.report.data import ReportData
from rocmdesk.report.svg_charts import Chart, Series


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


class _FakeTab:
    """What ReportTab._render_preview reads: a report, its charts and the browser to fill."""

    report = _report()

    def __init__(self, browser, charts) -> None:
        self.preview = browser
        self.charts = charts


def _preview_image(qtbot, monkeypatch, ratio: float, dark: bool = False):
    from PySide6 import QtGui, QtWidgets

    from rocmdesk.ui import report_tab, theme

    monkeypatch.setattr(theme, "current", lambda: theme.DARK if dark else theme.LIGHT)
    browser = QtWidgets.QTextBrowser()
    qtbot.addWidget(browser)
    monkeypatch.setattr(browser, "devicePixelRatioF", lambda: ratio)
    t = np.arange(10.0)
    report_tab.ReportTab._render_preview(_FakeTab(browser, [Chart("Power", "W", (Series("card0", t, t),))]))
    image = browser.document().resource(QtGui.QTextDocument.ResourceType.ImageResource, "rocmdesk-chart-0")
    assert isinstance(image, QtGui.QImage)
    assert 'src="rocmdesk-chart-0"' in browser.toHtml()
    return image


def test_preview_draws_the_svg_at_the_screens_density(qtbot, monkeypatch):
    from rocmdesk.ui import report_tab

    sharp = _preview_image(qtbot, monkeypatch, 2.0)
    assert sharp.width() == 2 * report_tab.CHART_WIDTH and sharp.height() == 2 * report_tab.CHART_HEIGHT
    assert sharp.devicePixelRatio() == 2.0
    plain = _preview_image(qtbot, monkeypatch, 1.0)
    assert plain.width() == report_tab.CHART_WIDTH and plain.devicePixelRatio() == 1.0


def _pixels(image) -> np.ndarray:
    from PySide6 import QtGui

    rgba = image.convertToFormat(QtGui.QImage.Format.Format_RGBA8888)
    return np.frombuffer(rgba.constBits(), dtype=np.uint8).reshape(rgba.height(), rgba.width(), 4).copy()


def test_preview_graph_follows_the_theme(qtbot, monkeypatch):
    """Dark theme: light text on no background of its own (the old PNGs were white in the dark theme)."""
    from rocmdesk.ui import theme

    for dark in (False, True):
        pixels = _pixels(_preview_image(qtbot, monkeypatch, 1.0, dark))
        background = pixels[..., 3] == 0
        assert background.mean() > 0.8  # transparent: the tab's own background shows
        ink = pixels[pixels[..., 3] == 255][:, :3].astype(int)
        text = np.array(_rgb(theme.DARK.text if dark else theme.LIGHT.text))
        assert (np.abs(ink - text).sum(axis=1) < 40).sum() > 50  # the title and legend in the theme's text colour
        line = np.array(_rgb(theme.SERIES_COLORS[0]))
        assert (np.abs(ink - line).sum(axis=1) < 40).sum() > 200  # the GPU's line in the Graphs tab's colour


def _rgb(name: str) -> tuple[int, int, int]:
    value = int(name.lstrip("#"), 16)
    return (value >> 16) & 255, (value >> 8) & 255, value & 255


def test_svg_image_of_garbage_is_null(qtbot):
    from rocmdesk.ui.report_tab import svg_image

    assert svg_image("not svg <", 100, 50, 1.0).isNull()
