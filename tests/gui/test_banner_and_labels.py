"""The banner never hides its reason under the buttons, says what a root folder holds, and every view
names a GPU the same way."""

from __future__ import annotations

import pytest
from PySide6 import QtGui

from rocmdesk.ui.formatting import gpu_label, short_gpu_name
from tests.gui.conftest import demo_small, make_info
from tests.support.sysfs_tree import GpuSpec, build_root

pytestmark = pytest.mark.gui

LONG = ("No AMD GPU found: /sys/class/drm does not exist (no GPU driver loaded, or a container without "
        "/sys); showing demo data — 8 × AMD Instinct MI300X (gfx942) node running a training job")


def _laid_out(qtbot, window, width):
    window.resize(width, 800)
    qtbot.waitUntil(lambda: window.banner.detail.width() > 0 and window.width() == width, timeout=3000)
    window.centralWidget().layout().activate()
    window.banner.layout().activate()


@pytest.mark.parametrize("width", [1280, 1920, 900])
def test_long_banner_reason_wraps_whole_words_left_of_the_buttons(qtbot, open_window, width):
    session = open_window(demo_small(preroll_s=0))
    banner = session.window.banner
    banner.show_source("demo", LONG)
    _laid_out(qtbot, session.window, width)
    detail = banner.detail
    right = detail.geometry().right()
    assert right < banner.root_button.geometry().left(), "the reason runs under the buttons"
    fm = detail.fontMetrics()
    # every word fits in the label's width once wrapped, and the label is tall enough for all its lines
    rect = fm.boundingRect(0, 0, detail.width(), 10_000, int(detail.alignment()) | 0x1000, LONG)  # TextWordWrap
    assert rect.height() <= detail.height() + 1, (rect.height(), detail.height())
    assert max(fm.horizontalAdvance(w) for w in LONG.split()) <= detail.width()
    assert detail.text() == LONG and detail.toolTip() == LONG
    if width == 900:
        assert detail.height() >= 2 * fm.lineSpacing()  # it really wrapped


def test_root_folder_with_a_gpu_says_so(tmp_path):
    from rocmdesk.ui.sources import root_source

    root = build_root(tmp_path, [GpuSpec("rx6900xt")])
    source = root_source(str(root), "sysfs")
    assert source.mode == "snapshot"
    assert "no AMD GPU" not in source.reason and "1 AMD GPU" in source.reason
    assert "snapshot" in source.reason and str(root) in source.reason
    assert "— card0 · RX 6" in source.reason and "6900 XT" in source.reason


def test_root_folder_without_gpu_says_so(tmp_path):
    from rocmdesk.ui.sources import root_source

    (tmp_path / "sys").mkdir()
    source = root_source(str(tmp_path), "sysfs")
    assert "no AMD GPU found" in source.reason and "snapshot" in source.reason


def test_gpu_label_rules():
    assert short_gpu_name("AMD Instinct MI300X") == "MI300X"
    assert short_gpu_name("AMD Radeon RX 7900 XTX") == "RX 7900 XTX"
    assert short_gpu_name("AMD ") == "AMD "  # nothing left: keep what there was
    assert gpu_label(make_info(3)) == "card3 · RX 7900 XTX"
    assert gpu_label(make_info(3, name="")) == "card3"


def test_same_gpu_label_in_overview_graphs_menu_and_processes(qtbot, open_window):
    session = open_window(demo_small(preroll_s=30))
    qtbot.waitUntil(lambda: session.feed.last_snapshot is not None and not session.feed.loading, timeout=8000)
    window = session.window
    infos = session.feed.gpus
    assert len(infos) == 8
    labels = [gpu_label(i) for i in infos]
    assert labels[0] == "card0 · MI300X"  # the demo machine's first card (tools/make_demo_machines.py)
    overview = window.tab_widgets["overview"]
    qtbot.waitUntil(lambda: len(overview.cards) == 8, timeout=5000)
    assert sorted(c.title.full_text() for c in overview.cards.values()) == sorted(labels)
    graphs = window.tab_widgets["graphs"]
    window.show_tab("graphs")
    qtbot.waitUntil(lambda: len(graphs.curves) > 0, timeout=5000)
    assert graphs.legend_entries[:8] == labels
    shown = graphs.legend.text().replace("&nbsp;", " ")
    assert all(label in shown for label in labels) and "GPU 0" not in shown
    combo = [graphs.gpu_combo.itemText(k) for k in range(graphs.gpu_combo.count())]
    assert all(any(t.startswith(label) for t in combo) for label in labels)
    window._fill_gpu_menu()
    menu = [a.text() for a in window.gpu_menu.actions()]
    assert all(any(t.startswith(label) for t in menu) for label in labels)
    processes = window.tab_widgets["processes"]
    window.show_tab("processes")
    qtbot.waitUntil(lambda: bool(processes.model.gpu_names), timeout=5000)
    assert set(processes.model.gpu_names.values()) == set(labels)


@pytest.mark.parametrize("width", [900, 1280, 1920])
def test_graph_legend_wraps_between_entries_and_is_never_cut(qtbot, open_window, width):
    session = open_window(demo_small(preroll_s=30), size=(width, 800))
    window = session.window
    window.show_tab("graphs")
    graphs = window.tab_widgets["graphs"]
    qtbot.waitUntil(lambda: len(graphs.legend_entries) == 9, timeout=8000)
    qtbot.wait(50)
    legend = graphs.legend
    doc = QtGui.QTextDocument()
    doc.setDefaultFont(legend.font())
    doc.setDocumentMargin(0)
    doc.setHtml(legend.text())
    doc.setTextWidth(legend.contentsRect().width())
    assert doc.size().height() <= legend.height() + 2  # every line of the legend is on screen
    assert legend.geometry().right() <= graphs.controls.width()
    assert "junction" in doc.toPlainText()
