"""The selected process's VRAM and compute over time, under the Processes table.

Two small pyqtgraph plots sharing a time axis: VRAM (GiB) and compute (KFD CU occupancy) with
graphics-engine time beside it. Fed from :class:`rocmdesk.telemetry.proc_history.ProcessHistory`;
a process that has exited is drawn grey and dashed until its history ages out.
"""

from __future__ import annotations

import time

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from rocmdesk.telemetry.proc_history import ProcessTrack
from rocmdesk.ui import theme

GIB = float(1 << 30)
PLOT_HEIGHT = 150


class ProcessPlot(QtWidgets.QWidget):
    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("History of the selected process")
        self.title = QtWidgets.QLabel("", self)
        self.title.setObjectName("metricCaption")
        self.note = QtWidgets.QLabel("", self)
        self.note.setObjectName("metricDetail")
        self.note.setWordWrap(True)
        self.vram = self._plot("VRAM", "GiB")
        self.compute = self._plot("Compute / graphics", "%")
        self.compute.setXLink(self.vram)
        self.compute.setYRange(0, 100, padding=0.02)
        self.vram_curve = self.vram.plot([], [])
        self.compute_curve = self.compute.plot([], [])
        self.graphics_curve = self.compute.plot([], [])
        self.shown: tuple = ()
        self.gone = False
        plots = QtWidgets.QHBoxLayout()
        plots.setSpacing(12)
        plots.addWidget(self.vram, 1)
        plots.addWidget(self.compute, 1)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(14, 6, 14, 10)
        lay.setSpacing(4)
        head = QtWidgets.QHBoxLayout()
        head.addWidget(self.title)
        head.addStretch(1)
        head.addWidget(self.note, 2)
        lay.addLayout(head)
        lay.addLayout(plots)
        self.show_track(None)

    def _plot(self, title: str, unit: str) -> pg.PlotWidget:
        pal = theme.current()
        plot = pg.PlotWidget(background=pal.surface, axisItems={"bottom": pg.DateAxisItem(orientation="bottom")})
        plot.setFixedHeight(PLOT_HEIGHT)
        plot.setMenuEnabled(False)
        plot.setMouseEnabled(x=False, y=False)
        plot.hideButtons()
        plot.setTitle(f"<span style='color:{pal.muted}'>{title} ({unit})</span>", size="9pt")
        plot.showGrid(x=True, y=True, alpha=0.25)
        for name in ("left", "bottom"):
            axis = plot.getAxis(name)
            axis.setPen(pg.mkPen(pal.border))
            axis.setTextPen(pg.mkPen(pal.muted))
        plot.setAccessibleName(f"{title} of the selected process over time")
        return plot

    def _show_axes(self, shown: bool) -> None:
        """Axes only with a process drawn: empty plots showed made-up ticks ("00.250", "0.2 … 0.8 GiB")."""
        for plot in (self.vram, self.compute):
            item = plot.getPlotItem()
            for name in ("left", "bottom"):
                item.showAxis(name, shown)
            item.showGrid(x=shown, y=shown, alpha=0.25)

    def _pen(self, color: str, gone: bool):
        width = 2 * max(1.0, float(self.devicePixelRatioF()))  # HiDPI: as thick as on the Graphs tab
        style = QtCore.Qt.PenStyle.DashLine if gone else QtCore.Qt.PenStyle.SolidLine
        return pg.mkPen(theme.current().muted if gone else color, width=width, style=style)

    def show_track(self, track: ProcessTrack | None, label: str = "") -> None:
        """Draw ``track`` (None: say how to pick one); redraws only when it gained points or changed."""
        pal = theme.current()
        key = None if track is None else (track.key, len(track.times), track.times[-1] if track.times else 0.0,
                                          track.gone_at, pal.name)
        if key == self.shown and key is not None:
            return
        self.shown = key or ()
        if track is None or not track.times:
            self.title.setText("PROCESS HISTORY")
            self.note.setText("Select a process to see its VRAM and compute use over time.")
            for curve in (self.vram_curve, self.compute_curve, self.graphics_curve):
                curve.setData([], [])
            self._show_axes(False)
            self.gone = False
            return
        self._show_axes(True)
        self.gone = track.gone
        t = np.fromiter(track.times, dtype=np.float64)
        vram = np.fromiter(track.vram_bytes, dtype=np.float64) / GIB
        compute = np.fromiter(track.compute_percent, dtype=np.float64)
        graphics = np.fromiter(track.graphics_percent, dtype=np.float64)
        self.vram_curve.setData(t, vram, pen=self._pen(pal.accent, self.gone), connect="finite")
        self.compute_curve.setData(t, compute, pen=self._pen(pal.busy, self.gone), connect="finite")
        self.graphics_curve.setData(t, graphics, pen=self._pen(pal.power, self.gone), connect="finite")
        self.title.setText(f"PROCESS HISTORY · PID {track.key[0]} {track.last.name} · {label}".rstrip(" ·"))
        parts = [f"<span style='color:{pal.busy}'>━</span> compute (CU occupancy)",
                 f"<span style='color:{pal.power}'>━</span> graphics engine"]
        missing = [what for what, values in (("VRAM", vram), ("compute", compute), ("graphics", graphics))
                   if not np.isfinite(values).any()]
        if missing:
            parts.append("not reported for this process: " + ", ".join(missing))
        if self.gone:
            stamp = time.strftime("%H:%M:%S", time.localtime(track.gone_at))
            parts.insert(0, f"<b>exited at {stamp}</b> (kept for a while, greyed)")
        self.note.setText(" · ".join(parts))
        top = np.nanmax(vram) if np.isfinite(vram).any() else 1.0
        self.vram.setYRange(0, max(float(top) * 1.1, 0.01), padding=0)  # from 0: a 0.3 GiB wobble is not a leak
        self.vram.setXRange(float(t[0]), float(t[-1]) if len(t) > 1 else float(t[0]) + 1, padding=0.02)
