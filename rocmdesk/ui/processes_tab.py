"""Processes: who uses which GPU, sortable by any column (numbers sort as numbers).

Rows come from DRM fdinfo and the KFD's per-process folders (telemetry/fdinfo.py merges them).
"Graphics %" is DRM graphics-engine time, which does not count ROCm/HIP work on KFD compute queues;
that work shows in "Compute" (CU occupancy). A missing figure reads N/A with its reason.
"""

from __future__ import annotations

import time

from PySide6 import QtCore, QtGui, QtWidgets

from rocmdesk.telemetry.model import ProcessUse, Snapshot
from rocmdesk.telemetry.proc_history import Key, ProcessHistory
from rocmdesk.ui import theme
from rocmdesk.ui.context import AppContext
from rocmdesk.ui.formatting import NA, fmt_bytes, fmt_percent, gpu_label, is_number
from rocmdesk.ui.process_plot import ProcessPlot

COLUMNS = ("GPU", "PID", "Name", "VRAM", "Graphics %", "Compute", "Command line")
SORT_ROLE = QtCore.Qt.ItemDataRole.UserRole + 1
REFRESH_S = 2.0
NUMERIC = (1, 3, 4, 5)
GPU_PERCENT_COL, COMPUTE_COL, CMDLINE_COL = 4, 5, 6
HEADER_TIPS = {
    GPU_PERCENT_COL: "Graphics-engine busy time from DRM fdinfo (/proc/PID/fdinfo), between two readings.\n"
                     "ROCm/HIP programs (PyTorch…) run on KFD compute queues, which this does not count:\n"
                     "their use is in the Compute column.",
    COMPUTE_COL: "Compute units busy with the process's waves right now, as a share of the GPU's CUs\n"
                 "(KFD: /sys/class/kfd/kfd/proc/PID/stats_<gpu_id>/cu_occupancy; rocm-smi --showpids).\n"
                 "N/A where the kernel or the GPU does not report it.",
    3: "VRAM held on this GPU (DRM fdinfo, or the KFD's vram_<gpu_id> for compute processes)",
}


def fmt_compute(p: ProcessUse) -> str:
    if is_number(p.cu_occupancy_percent):
        return fmt_percent(p.cu_occupancy_percent)
    if is_number(p.cu_occupied):
        return f"{p.cu_occupied} CU"  # the count is known, the GPU's CU total is not
    return NA


def _compute_tip(p: ProcessUse) -> str:
    parts = []
    if is_number(p.cu_occupied):
        parts.append(f"{p.cu_occupied} compute units busy with this process's waves now")
    reason = p.unavailable.get("cu_occupancy_percent") or p.unavailable.get("cu_occupied")
    if not is_number(p.cu_occupancy_percent) and reason:
        parts.append(f"N/A: {reason}" if not is_number(p.cu_occupied) else f"no percentage: {reason}")
    if is_number(p.sdma_us):
        parts.append(f"SDMA (copy engine) time since the process started: {p.sdma_us / 1e6:.3f} s")
    return "\n".join(parts)


def _gpu_percent_tip(p: ProcessUse) -> str | None:
    if "gpu_percent" in p.unavailable and not is_number(p.gpu_percent):
        return f"N/A: {p.unavailable['gpu_percent']}"
    if not is_number(p.gpu_percent):
        return "Graphics % needs two readings over time; it appears on the next sample"
    if "kfd" in p.sources:
        return "Graphics engine only: this process also runs KFD compute queues (see Compute)"
    return None


class ProcessModel(QtCore.QAbstractTableModel):
    def __init__(self, parent: QtCore.QObject | None = None) -> None:
        super().__init__(parent)
        self.rows: list[ProcessUse] = []
        self.gpu_names: dict[str, str] = {}  # pci -> "0 · card1"
        self.gpu_order: dict[str, int] = {}  # pci -> position, so GPU 10 sorts after GPU 9
        self.gone: dict[Key, float] = {}  # (pid, pci) of exited processes still shown -> when they exited

    def rowCount(self, parent=QtCore.QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QtCore.QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=QtCore.Qt.ItemDataRole.DisplayRole):
        if orientation != QtCore.Qt.Orientation.Horizontal:
            return None
        if role == QtCore.Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        if role == QtCore.Qt.ItemDataRole.ToolTipRole:
            return HEADER_TIPS.get(section)
        if role == QtCore.Qt.ItemDataRole.TextAlignmentRole and section in NUMERIC:
            return int(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
        return None

    def data(self, index, role=QtCore.Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        p = self.rows[index.row()]
        col = index.column()
        if role == QtCore.Qt.ItemDataRole.DisplayRole:
            return (
                self.gpu_names.get(p.pci, p.pci), str(p.pid), p.name,
                fmt_bytes(p.vram_bytes), fmt_percent(p.gpu_percent), fmt_compute(p), p.cmdline,
            )[col]
        if role == SORT_ROLE:
            compute = p.cu_occupancy_percent if is_number(p.cu_occupancy_percent) else -1.0
            values = (self.gpu_order.get(p.pci, 1 << 20) * 100_000_000 + p.pid, p.pid, p.name.lower(),
                      p.vram_bytes if is_number(p.vram_bytes) else -1.0,
                      p.gpu_percent if is_number(p.gpu_percent) else -1.0, compute, p.cmdline)
            return values[col]
        gone_at = self.gone.get((p.pid, p.pci))
        if role == QtCore.Qt.ItemDataRole.ForegroundRole and gone_at is not None:
            return QtGui.QColor(theme.current().muted)
        if role == QtCore.Qt.ItemDataRole.ToolTipRole:
            if gone_at is not None:
                return (f"Exited at {time.strftime('%H:%M:%S', time.localtime(gone_at))}: its last reading, "
                        "greyed; select it to see its history until that ages out")
            if col == 0 and "gpu" in p.unavailable:
                return p.unavailable["gpu"]
            if col == GPU_PERCENT_COL:
                return _gpu_percent_tip(p)
            if col == COMPUTE_COL:
                return _compute_tip(p) or None
            if col == 3 and not is_number(p.vram_bytes):
                return p.unavailable.get("vram_bytes", "this process's VRAM use is not reported")
            if col == CMDLINE_COL:
                return p.cmdline
        if role == QtCore.Qt.ItemDataRole.TextAlignmentRole and col in NUMERIC:
            return int(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
        return None

    def set_rows(self, rows: list[ProcessUse], gpu_names: dict[str, str],
                 gone: dict[Key, float] | None = None) -> None:
        key_new = [(p.pid, p.pci) for p in rows]
        key_old = [(p.pid, p.pci) for p in self.rows]
        self.gone = dict(gone or {})
        self.gpu_names = gpu_names
        self.gpu_order = {pci: n for n, pci in enumerate(gpu_names)}
        if key_new == key_old:
            self.rows = list(rows)
            if rows:
                self.dataChanged.emit(self.index(0, 0), self.index(len(rows) - 1, len(COLUMNS) - 1))
            return
        self.beginResetModel()
        self.rows = list(rows)
        self.endResetModel()


class ProcessesTab(QtWidgets.QWidget):
    def __init__(self, ctx: AppContext, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.setAccessibleName("Processes")
        self.model = ProcessModel(self)
        self.proxy = QtCore.QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(SORT_ROLE)
        self.proxy.setFilterKeyColumn(-1)
        self.proxy.setFilterCaseSensitivity(QtCore.Qt.CaseSensitivity.CaseInsensitive)

        self.filter = QtWidgets.QLineEdit(self)
        self.filter.setPlaceholderText("Filter by name, PID or command line")
        self.filter.setAccessibleName("Filter processes")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self.proxy.setFilterFixedString)
        self.summary = QtWidgets.QLabel("", self)
        self.summary.setObjectName("metricDetail")

        self.table = QtWidgets.QTableView(self)
        self.table.setModel(self.proxy)
        self.table.setAccessibleName("Processes using the GPUs")
        self.table.setSortingEnabled(True)
        # by GPU: rows keep their place from one sample to the next (VRAM ties would shuffle)
        self.table.sortByColumn(0, QtCore.Qt.SortOrder.AscendingOrder)
        self.table.setAlternatingRowColors(True)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setShowGrid(False)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        self.table.setTextElideMode(QtCore.Qt.TextElideMode.ElideMiddle)
        header = self.table.horizontalHeader()
        header.setStretchLastSection(True)
        header.setHighlightSections(False)
        fm = self.fontMetrics()
        bold = QtGui.QFont(header.font())
        bold.setWeight(QtGui.QFont.Weight.DemiBold)  # the style sheet's section font (font-weight: 600)
        titles = QtGui.QFontMetrics(bold)
        widest = ("0 · card10 · MI300X", "9999999", "python3.12-worker", "188.8 GiB", "100 %", "12 CU")
        for col, sample in enumerate(widest):
            # wide enough for the values and for the title with its sort arrow
            header.resizeSection(col, max(fm.horizontalAdvance(sample), titles.horizontalAdvance(COLUMNS[col])) + 36)
        header.setDefaultAlignment(QtCore.Qt.AlignmentFlag.AlignLeft | QtCore.Qt.AlignmentFlag.AlignVCenter)

        self.empty = QtWidgets.QLabel("", self)
        self.empty.setObjectName("emptyState")
        self.empty.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        self.empty.setWordWrap(True)
        self.empty.hide()

        top = QtWidgets.QHBoxLayout()
        top.setContentsMargins(14, 10, 14, 6)
        top.addWidget(self.filter, 2)
        top.addStretch(1)
        top.addWidget(self.summary)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addLayout(top)
        lay.addWidget(self.table, 1)
        lay.addWidget(self.empty, 1)
        self.history = ProcessHistory()
        self.selected: Key | None = None
        self.plot = ProcessPlot(self)
        lay.addWidget(self.plot)
        self.table.selectionModel().currentRowChanged.connect(self._on_current)
        self._pending: Snapshot | None = None
        self._shown_any = False  # a sample has been applied to the table
        self._last_apply = -1e9
        self._timer = QtCore.QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._apply_if_visible)
        ctx.feed.snapshot.connect(self.on_snapshot)
        if ctx.feed.last_snapshot is not None:
            self._pending = ctx.feed.last_snapshot

    def on_snapshot(self, snapshot: Snapshot) -> None:
        """Refresh at most every 2 s (per-process figures are read that often on a live machine)."""
        self.history.feed(snapshot)  # hidden or not: the history is there when the tab is opened
        self._pending = snapshot
        if not self.isVisible() or self._timer.isActive():
            return
        wait = self._last_apply + REFRESH_S - time.monotonic()
        if wait <= 0:
            self._apply()
        else:
            self._timer.start(int(wait * 1000))

    def _apply_if_visible(self) -> None:
        if self.isVisible() and self._pending is not None:
            self._apply()

    # -- Tab --------------------------------------------------------------------------------------------
    def on_shown(self) -> None:
        """Nothing more: showEvent already applies the latest sample."""

    def screenshot_ready(self) -> bool:
        """Ready when the table shows a sample and none waits (the feed's latest may still be on its way)."""
        return self._pending is None and (self._shown_any or self.ctx.feed.last_snapshot is None)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._pending is None:
            self._pending = self.ctx.feed.last_snapshot
        self._apply()

    def _apply(self) -> None:
        self._last_apply = time.monotonic()
        snapshot, self._pending = self._pending, None
        if snapshot is None:
            if self.model.rowCount() == 0:
                self._show_empty("Waiting for the first sample…")
            return
        self._shown_any = True
        names = {}
        for g in snapshot.gpus:
            names[g.info.pci] = gpu_label(g.info)
        rows = list(snapshot.processes)
        live = {(p.pid, p.pci) for p in rows}
        gone = {t.key: t.gone_at for t in self.history.gone() if t.key not in live and t.gone_at is not None}
        self.model.set_rows(rows + [self.history.tracks[k].last for k in gone], names, gone)
        self._reselect()
        self._show_selected()
        total_vram = sum(p.vram_bytes for p in rows if is_number(p.vram_bytes))
        count = len({p.pid for p in rows})  # a process on two GPUs has two rows
        self.summary.setText(f"{count} process{'es' if count != 1 else ''} · {fmt_bytes(total_vram)} VRAM"
                             if rows else "")
        if rows or gone:
            self.empty.hide()
            self.table.show()
        elif snapshot.gpus:
            self._show_empty("No process is using a GPU right now.\n"
                             "Processes appear here when they open a GPU (read from /proc/*/fdinfo)\n"
                             "or run ROCm compute work (read from /sys/class/kfd/kfd/proc).")
        else:
            self._show_empty("No GPU to show processes for.")

    # -- the selected process's history ----------------------------------------------------------------
    def _on_current(self, current: QtCore.QModelIndex, _previous: QtCore.QModelIndex) -> None:
        source = self.proxy.mapToSource(current)
        if source.isValid() and source.row() < len(self.model.rows):
            p = self.model.rows[source.row()]
            self.selected = (p.pid, p.pci)
        self._show_selected()

    def _reselect(self) -> None:
        """Keep the selected process selected when the model resets (a process came or went)."""
        if self.selected is None:
            return
        for row, p in enumerate(self.model.rows):
            if (p.pid, p.pci) == self.selected:
                index = self.proxy.mapFromSource(self.model.index(row, 0))
                if index.isValid() and self.table.currentIndex().row() != index.row():
                    self.table.selectionModel().blockSignals(True)
                    self.table.setCurrentIndex(index)
                    self.table.selectionModel().blockSignals(False)
                    self.table.viewport().update()
                return

    def _show_selected(self) -> None:
        track = self.history.get(self.selected) if self.selected is not None else None
        label = self.model.gpu_names.get(track.key[1], track.key[1]) if track is not None else ""
        self.plot.show_track(track, label)

    def _show_empty(self, text: str) -> None:
        self.empty.setText(text)
        self.table.hide()
        self.empty.show()


__all__ = ["NA", "ProcessesTab"]
