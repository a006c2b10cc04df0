"""Processes tab: the selected process's VRAM and compute over time; an exited one stays greyed."""

from __future__ import annotations

import time

import numpy as np
import pytest
from PySide6 import QtCore

from rocmdesk.telemetry.backends.base import Backend
from rocmdesk.telemetry.model import ProcessUse, Snapshot
from rocmdesk.ui import theme
from tests.gui.conftest import fake_source, make_info, make_sample

pytestmark = pytest.mark.gui
GIB = 1 << 30


class ProcBackend(Backend):
    name = "fake"

    def __init__(self) -> None:
        self.info = make_info(0)
        self.pids = [100, 200]
        self.t = time.time()

    def discover(self):
        return [self.info]

    def sample(self) -> Snapshot:
        self.t += 2.0
        procs = [ProcessUse(pid=pid, pci=self.info.pci, name=f"job{pid}", vram_bytes=pid * GIB // 100,
                            cu_occupancy_percent=float(pid % 97), gpu_percent=None) for pid in self.pids]
        return Snapshot(backend="fake", timestamp=self.t, gpus=[make_sample(self.info, self.t)], processes=procs)


def test_selected_process_history_then_exit_greyed_then_gone(qtbot, open_window, manual_factory):
    backend = ProcBackend()
    session = open_window(fake_source(backend), sampler_factory=manual_factory, size=(1280, 800))
    session.window.show_tab("processes")
    tab = session.window.tab_widgets["processes"]
    tab.history.keep_gone_s = 5.0
    sampler = manual_factory.made[0]

    def tick():
        sampler.tick()
        tab._last_apply = -1e9  # no 2 s refresh wait in a test
        qtbot.wait(5)
        tab._apply_if_visible()

    for _ in range(4):
        tick()
    def axes() -> list[bool]:
        return [tab.plot.vram.getPlotItem().getAxis(n).isVisible() for n in ("left", "bottom")]

    assert axes() == [False, False]  # nothing selected: no made-up ticks on empty plots
    row = next(r for r in range(tab.proxy.rowCount()) if tab.proxy.index(r, 1).data() == "200")
    tab.table.selectRow(row)
    assert tab.selected == (200, backend.info.pci)
    x, y = tab.plot.vram_curve.getData()
    assert len(x) == 4 and np.allclose(y, 2.0)  # 200 * GiB / 100 = 2 GiB
    assert np.allclose(tab.plot.compute_curve.getData()[1], 200 % 97)
    assert "PID 200" in tab.plot.title.text() and "graphics" in tab.plot.note.text()  # graphics: not reported
    assert axes() == [True, True]

    backend.pids = [100]  # 200 exits
    tick()
    assert tab.plot.gone and "exited" in tab.plot.note.text()
    assert tab.plot.vram_curve.opts["pen"].color().name() == theme.current().muted
    rows = {tab.proxy.index(r, 1).data(): r for r in range(tab.proxy.rowCount())}
    assert set(rows) == {"100", "200"}  # the exited row stays, greyed, still selected
    grey = tab.proxy.index(rows["200"], 2).data(QtCore.Qt.ItemDataRole.ForegroundRole)
    assert grey is not None and grey.name() == theme.current().muted
    assert "Exited" in tab.proxy.index(rows["200"], 2).data(QtCore.Qt.ItemDataRole.ToolTipRole)
    assert tab.proxy.index(rows["100"], 2).data(QtCore.Qt.ItemDataRole.ForegroundRole) is None
    assert tab.summary.text().startswith("1 process ")  # the count is of live processes

    for _ in range(4):  # 8 s later: aged out of the history and the table
        tick()
    assert [tab.proxy.index(r, 1).data() for r in range(tab.proxy.rowCount())] == ["100"]
    assert tab.plot.vram_curve.getData()[0] is None or len(tab.plot.vram_curve.getData()[0]) == 0
    assert "Select a process" in tab.plot.note.text() and axes() == [False, False]
