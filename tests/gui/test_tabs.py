"""Graphs export and read-out, process table sorting, theme switching, the tab registry."""

from __future__ import annotations

import csv

import pytest
from PySide6 import QtCore

from rocmdesk.telemetry.model import ProcessUse
from rocmdesk.ui.processes_tab import SORT_ROLE
from tests.gui.conftest import FakeBackend, fake_source, make_sample

pytestmark = pytest.mark.gui


def _session(qtbot, open_window, manual_factory, backend, ticks=3):
    session = open_window(fake_source(backend), sampler_factory=manual_factory)
    for _ in range(ticks):
        manual_factory.made[0].tick()
        qtbot.wait(5)
    qtbot.waitUntil(lambda: session.feed.last_snapshot is not None, timeout=3000)
    return session


def test_export_visible_history_to_csv(qtbot, open_window, manual_factory, tmp_path):
    backend = FakeBackend(2)
    session = _session(qtbot, open_window, manual_factory, backend, ticks=4)
    graphs = session.window.tab_widgets["graphs"]
    session.window.show_tab("graphs")
    graphs.set_window(60)
    path = tmp_path / "history.csv"
    rows = graphs.export_csv(str(path))
    assert rows == 4
    with open(path, newline="") as fh:
        table = list(csv.reader(fh))
    header = table[0]
    assert header[:2] == ["time_iso", "timestamp"]
    assert f"{backend.infos[0].pci} power_w (W)" in header
    assert f"{backend.infos[1].pci} vram_used_bytes (bytes)" in header
    col = header.index(f"{backend.infos[0].pci} gpu_busy_percent (percent)")
    assert [float(r[col]) for r in table[1:]] == [51.0, 52.0, 53.0, 54.0]  # raw samples, not downsampled
    assert not (tmp_path / "history.csv.part").exists()
    with pytest.raises(OSError):
        graphs.export_csv(str(tmp_path / "missing-folder" / "x.csv"))


def test_readout_shows_na_where_a_gpu_was_missing(qtbot, open_window, manual_factory):
    backend = FakeBackend(2)
    session = _session(qtbot, open_window, manual_factory, backend, ticks=2)
    backend.present.discard(backend.infos[1].pci)
    manual_factory.made[0].tick()
    qtbot.waitUntil(lambda: len(session.feed.latest) == 1, timeout=3000)
    graphs = session.window.tab_widgets["graphs"]
    text = graphs.show_readout("power", session.feed.last_snapshot.timestamp)
    lines = dict(line.split(": ", 1) for line in text.splitlines()[1:])
    assert lines["card0 · RX 7900 XTX power"].endswith(" W") and lines["card1 · RX 7900 XTX power"] == "N/A"


def test_single_gpu_mode_and_user_zoom(qtbot, open_window, manual_factory):
    backend = FakeBackend(3)
    session = _session(qtbot, open_window, manual_factory, backend)
    window = session.window
    window.show_tab("graphs")
    graphs = window.tab_widgets["graphs"]
    graphs.gpu_combo.setCurrentIndex(graphs.gpu_combo.findData(backend.infos[2].pci))
    assert {c.pci for c in graphs.curves} == {backend.infos[2].pci}
    assert session.ctx.settings.graph_mode == "single"
    graphs._on_user_range()  # what a mouse pan/zoom emits
    assert not graphs.follow and graphs.live_button.isVisibleTo(graphs)
    graphs.back_to_live()
    assert graphs.follow and not graphs.live_button.isVisibleTo(graphs)
    graphs.gpu_combo.setCurrentIndex(0)
    assert {c.pci for c in graphs.curves} == {i.pci for i in backend.infos}


def test_process_table_sorts_numbers_as_numbers(qtbot, open_window, manual_factory):
    class ProcBackend(FakeBackend):
        def sample(self):
            snap = super().sample()
            pci = self.infos[0].pci
            snap.processes = [
                ProcessUse(pid=900, pci=pci, name="python3", cmdline="python3 main.py", vram_bytes=9 * 2**30,
                           gpu_percent=80.0),
                ProcessUse(pid=10000, pci=pci, name="Xorg", cmdline="/usr/lib/xorg/Xorg", vram_bytes=200 * 2**20,
                           gpu_percent=None),
                ProcessUse(pid=42, pci=pci, name="ollama", cmdline="ollama serve", vram_bytes=12 * 2**30,
                           gpu_percent=5.0),
            ]
            return snap

    session = _session(qtbot, open_window, manual_factory, ProcBackend(1), ticks=1)
    session.window.show_tab("processes")
    tab = session.window.tab_widgets["processes"]
    qtbot.waitUntil(lambda: tab.proxy.rowCount() == 3, timeout=3000)

    def column(col):
        return [tab.proxy.index(r, col).data() for r in range(tab.proxy.rowCount())]

    tab.table.sortByColumn(1, QtCore.Qt.SortOrder.AscendingOrder)
    assert column(1) == ["42", "900", "10000"]  # not "10000" < "42"
    tab.table.sortByColumn(3, QtCore.Qt.SortOrder.DescendingOrder)
    assert column(2) == ["ollama", "python3", "Xorg"]
    assert column(4)[2] == "N/A"  # GPU % unknown on the first reading: N/A, not 0 %
    assert tab.proxy.index(2, 4).data(SORT_ROLE) == -1.0
    tab.filter.setText("serve")
    assert column(2) == ["ollama"]
    assert "3 processes" in tab.summary.text()


def test_theme_switch_recolours_without_losing_data(qtbot, open_window, manual_factory):
    from rocmdesk.ui import theme

    session = _session(qtbot, open_window, manual_factory, FakeBackend(1))
    window = session.window
    window.theme_combo.setCurrentIndex(window.theme_combo.findData("dark"))
    assert theme.current().name == "dark" and session.ctx.settings.theme == "dark"
    graphs = window.tab_widgets["graphs"]
    assert graphs.curves and graphs.grids["temp"].pen.color().name() == theme.DARK.grid
    window.theme_combo.setCurrentIndex(window.theme_combo.findData("light"))
    assert theme.current().name == "light"


def test_every_built_in_tab_is_a_tab_and_add_tab_gives_shortcuts(qtbot, open_window, manual_factory):
    from PySide6 import QtWidgets

    from rocmdesk.ui.tabs import TAB_FACTORIES, Tab

    session = _session(qtbot, open_window, manual_factory, FakeBackend(1), ticks=1)
    window = session.window
    assert list(window.tab_widgets) == [spec.key for spec in TAB_FACTORIES]
    for key, widget in window.tab_widgets.items():
        assert isinstance(widget, Tab), f"the {key} tab lacks on_shown/screenshot_ready"
        window.show_tab(key)
        qtbot.waitUntil(widget.screenshot_ready, timeout=10_000)
    extra = QtWidgets.QLabel("extra")
    index = window.add_tab(extra, "Extra", "extra")
    assert window.tabs.widget(index) is extra and "Ctrl+" in window.tabs.tabToolTip(index)
    assert window.show_tab("extra") and window.current_tab_key() == "extra"
    assert not window.show_tab("missing")
    assert not isinstance(extra, Tab)  # a plain widget: the window calls no Tab method on it
    assert not window.pause_action.isEnabled()  # nothing to pause on this tab
    window.show_tab("graphs")
    assert window.pause_action.isEnabled()
    window.pause_action.trigger()
    assert window.tab_widgets["graphs"].paused


def test_broken_tab_does_not_stop_the_window(qtbot, open_window, manual_factory, monkeypatch):
    import rocmdesk.ui.main_window as mw
    from rocmdesk.ui.tabs import TAB_FACTORIES, TabSpec

    broken = TabSpec("broken", "Broken", "rocmdesk.ui.formatting", "no_such_factory")
    monkeypatch.setattr(mw, "TAB_FACTORIES", (*TAB_FACTORIES[:1], broken))
    session = _session(qtbot, open_window, manual_factory, FakeBackend(1), ticks=1)
    assert list(session.window.tab_widgets) == ["overview"]
    assert "broken" in session.window.tab_errors


def test_sample_with_unknown_sensor_label_gets_its_own_readout(qtbot, open_window, manual_factory):
    def sample_fn(info, t, i):
        s = make_sample(info, t, i)
        s.temperature_c["hotspot2"] = 77.0
        return s

    session = _session(qtbot, open_window, manual_factory, FakeBackend(1, sample_fn), ticks=1)
    card = next(iter(session.window.tab_widgets["overview"].cards.values()))
    qtbot.waitUntil(lambda: "hotspot2" in card.temps, timeout=3000)
    assert list(card.temps) == ["junction", "edge", "mem", "hotspot2"]
    assert card.temps["hotspot2"].value.text() == "77 °C"
