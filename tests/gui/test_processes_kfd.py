"""Processes tab with KFD compute processes: own Compute column, N/A with reasons, one row per pid and GPU."""

from __future__ import annotations

import os

import pytest
from PySide6 import QtCore

from rocmdesk.host import HostRoot
from rocmdesk.telemetry.backends.sysfs import SysfsBackend
from rocmdesk.telemetry.model import ProcessUse
from rocmdesk.ui.processes_tab import COLUMNS, COMPUTE_COL, GPU_PERCENT_COL, SORT_ROLE, ProcessModel
from tests.gui.conftest import fake_source
from tests.support.sysfs_tree import GpuSpec, KfdUse, add_kfd_process, build_root, kfd_gpu_ids

pytestmark = pytest.mark.gui

A, B = "0000:03:00.0", "0000:0a:00.0"
GIB = 1 << 30
TIP = QtCore.Qt.ItemDataRole.ToolTipRole


def _drm_client(root, pid: int, comm: str, cmdline: str, *, fd: int, client_id: int, vram_kib: int) -> None:
    """A process with one amdgpu DRM file on card A (what /proc/PID/fdinfo shows for a graphics client)."""
    proc = root / "proc" / str(pid)
    (proc / "fdinfo").mkdir(parents=True)
    (proc / "comm").write_text(f"{comm}\n")
    (proc / "cmdline").write_bytes(cmdline.encode() + b"\x00")
    (proc / "fdinfo" / str(fd)).write_text(f"drm-driver:\tamdgpu\ndrm-client-id:\t{client_id}\n"
                                           f"drm-pdev:\t{A}\ndrm-memory-vram:\t{vram_kib} KiB\n"
                                           "drm-engine-gfx:\t5 ns\n")


def _tree(root):
    build_root(root, [GpuSpec("rx7900xtx", pci=A, card=0, extra_props={"simd_per_cu": "2"}),
                      GpuSpec("rx6600", pci=B, card=1)])  # rx6600 node: no simd_per_cu, CU total unknown
    gid = kfd_gpu_ids(root)
    # Xorg: a DRM client only.
    _drm_client(root, 1200, "Xorg", "/usr/lib/xorg/Xorg", fd=9, client_id=1, vram_kib=262144)
    # A training job: KFD only, busy on A, 12 CUs busy on B.
    add_kfd_process(root, 4242, {gid[A]: KfdUse(vram=20 * GIB, sdma=2_500_000, cu=72, queues=4),
                                 gid[B]: KfdUse(vram=GIB, cu=12, queues=1)},
                    comm="python3", cmdline=["python3", "train.py"])
    # Both: Xorg-style DRM client and a KFD queue on A.
    _drm_client(root, 777, "blender", "blender", fd=5, client_id=2, vram_kib=1048576)
    add_kfd_process(root, 777, {gid[A]: KfdUse(vram=512 << 20, cu=None, queues=1)})
    return root


def _session(qtbot, open_window, manual_factory, root):
    backend = SysfsBackend(HostRoot(root))
    session = open_window(fake_source(backend), sampler_factory=manual_factory)
    manual_factory.made[0].tick()
    qtbot.waitUntil(lambda: session.feed.last_snapshot is not None, timeout=3000)
    session.window.show_tab("processes")
    return session


def test_kfd_processes_in_the_table(qtbot, open_window, manual_factory, tmp_path):
    session = _session(qtbot, open_window, manual_factory, _tree(tmp_path))
    tab = session.window.tab_widgets["processes"]
    qtbot.waitUntil(lambda: tab.proxy.rowCount() == 4, timeout=3000)
    tab.table.sortByColumn(1, QtCore.Qt.SortOrder.AscendingOrder)
    rows = [[tab.proxy.index(r, c).data() for c in range(len(COLUMNS))] for r in range(tab.proxy.rowCount())]
    keys = [(r[1], r[0]) for r in rows]
    assert len(set(keys)) == 4  # blender is in DRM and KFD on card0: one row
    by = {(r[1], r[0].split(" · ")[0]): r for r in rows}
    train_a, train_b = by[("4242", "card0")], by[("4242", "card1")]
    assert train_a[2] == "python3" and train_a[COMPUTE_COL] == "75 %" and train_a[GPU_PERCENT_COL] == "N/A"
    assert train_b[COMPUTE_COL] == "12 CU"  # count known, the GPU's CU total is not: no made-up percent
    assert by[("1200", "card0")][COMPUTE_COL] == "N/A"
    assert by[("777", "card0")][COMPUTE_COL] == "N/A" and by[("777", "card0")][3] == "1.0 GiB"

    def tip(pid, card, col):
        for r in range(tab.proxy.rowCount()):
            if tab.proxy.index(r, 1).data() == pid and card in tab.proxy.index(r, 0).data():
                return tab.proxy.index(r, col).data(TIP)
        raise AssertionError((pid, card))

    assert "KFD compute queues" in tip("4242", "card0", GPU_PERCENT_COL)
    assert "SDMA" in tip("4242", "card0", COMPUTE_COL) and "72 compute units" in tip("4242", "card0", COMPUTE_COL)
    assert "CU count is unknown" in tip("4242", "card1", COMPUTE_COL)
    assert "not a KFD compute process" in tip("1200", "card0", COMPUTE_COL)
    assert "cu_occupancy" in tip("777", "card0", COMPUTE_COL)  # the GPU does not report it
    assert "two readings" in tip("777", "card0", GPU_PERCENT_COL)  # a DRM row: first scan has no rate yet
    header = tab.model.headerData(GPU_PERCENT_COL, QtCore.Qt.Orientation.Horizontal, TIP)
    assert "KFD compute queues" in header and "Compute column" in header
    assert "cu_occupancy" in tab.model.headerData(COMPUTE_COL, QtCore.Qt.Orientation.Horizontal, TIP)
    tab.table.sortByColumn(COMPUTE_COL, QtCore.Qt.SortOrder.DescendingOrder)
    assert tab.proxy.index(0, COMPUTE_COL).data() == "75 %"
    assert tab.summary.text().startswith("3 processes · ")  # 4 rows, 3 processes
    shot = os.environ.get("ROCMDESK_KFD_SHOT")
    if shot:  # look at it as a user would: ROCMDESK_KFD_SHOT=/tmp/p.png pytest this file
        tab.grab().save(shot)


def test_compute_cells_model_only(qtbot):
    model = ProcessModel()
    rows = [ProcessUse(pid=1, pci=A, name="a", cu_occupancy_percent=12.5, cu_occupied=12, sources=("kfd",)),
            ProcessUse(pid=2, pci=A, name="b", gpu_percent=40.0, sources=("drm-fdinfo", "kfd"),
                       unavailable={"cu_occupied": "no file", "cu_occupancy_percent": "no file"}),
            ProcessUse(pid=3, pci="kfd gpu_id 99", name="c", cu_occupied=3, sources=("kfd",),
                       unavailable={"gpu": "gpu_id 99 is not in the KFD topology"})]
    model.set_rows(rows, {A: "0 · card0"})
    cell = [[model.index(r, c).data() for c in range(len(COLUMNS))] for r in range(3)]
    assert [c[COMPUTE_COL] for c in cell] == ["12 %", "N/A", "3 CU"]
    assert model.index(0, COMPUTE_COL).data(SORT_ROLE) == 12.5 and model.index(1, COMPUTE_COL).data(SORT_ROLE) == -1
    assert model.index(1, GPU_PERCENT_COL).data(TIP).startswith("Graphics engine only")
    assert model.index(1, COMPUTE_COL).data(TIP) == "N/A: no file"
    assert cell[2][0] == "kfd gpu_id 99" and "not in the KFD topology" in model.index(2, 0).data(TIP)


def test_every_column_title_fits_its_column(qtbot, open_window, manual_factory, tmp_path):
    """Titles are bold in the style sheet: "Graphics %" was cut to "aphics %" in a column sized for "GPU %"."""
    from PySide6 import QtGui

    session = _session(qtbot, open_window, manual_factory, _tree(tmp_path))
    header = session.window.tab_widgets["processes"].table.horizontalHeader()
    bold = QtGui.QFont(header.font())
    bold.setWeight(QtGui.QFont.Weight.DemiBold)
    fm = QtGui.QFontMetrics(bold)
    for col, title in enumerate(COLUMNS[:-1]):  # the last column stretches
        assert header.sectionSize(col) >= fm.horizontalAdvance(title) + 16, title
