"""The Graphs tab's control bar: GPUs shown, layout, metric, time window, pause, export, legend.

Widgets only; the tab connects them (graphs_tab.py). The legend has a row of its own and wraps
between entries: eight "card1 · MI300X" entries and the line-style key do not fit next to the
controls at 1280 px.
"""

from __future__ import annotations

import html

from PySide6 import QtCore, QtWidgets

from rocmdesk.ui.formatting import fmt_window
from rocmdesk.ui.graph_specs import METRICS, ORDER
from rocmdesk.ui.settings import GRAPH_WINDOWS_S


class GraphControls(QtWidgets.QFrame):
    def __init__(self, window_s: int, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("graphControls")
        outer = QtWidgets.QVBoxLayout(self)
        outer.setContentsMargins(12, 6, 12, 6)
        outer.setSpacing(4)
        row = QtWidgets.QHBoxLayout()
        row.setSpacing(8)
        outer.addLayout(row)

        self.gpu_combo = QtWidgets.QComboBox(self)
        self.gpu_combo.setAccessibleName("GPUs shown in the graphs")
        self.gpu_combo.setSizeAdjustPolicy(
            QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.gpu_combo.setMinimumContentsLength(18)

        self.multiples_button = QtWidgets.QPushButton("One plot per GPU", self)
        self.multiples_button.setCheckable(True)
        self.multiples_button.setAccessibleName("One plot per GPU")
        self.multiples_button.setToolTip("Small multiples: one plot per GPU on shared axes, or all GPUs "
                                         "overlaid on one plot per metric (default above four GPUs)")

        self.metric_combo = QtWidgets.QComboBox(self)
        self.metric_combo.setAccessibleName("Metric shown per GPU")
        for name in ORDER:
            self.metric_combo.addItem(METRICS[name].title, name)

        self.window_combo = QtWidgets.QComboBox(self)
        self.window_combo.setAccessibleName("Time window")
        for seconds in GRAPH_WINDOWS_S:
            self.window_combo.addItem(f"Last {fmt_window(seconds)}", seconds)
        self.window_combo.setCurrentIndex(GRAPH_WINDOWS_S.index(window_s))

        self.pause_button = QtWidgets.QPushButton("Pause", self)
        self.pause_button.setCheckable(True)
        self.pause_button.setAccessibleName("Pause graphs")
        self.pause_button.setToolTip("Pause or resume the graphs (Space); samples are still recorded")

        self.live_button = QtWidgets.QPushButton("Back to live", self)
        self.live_button.setAccessibleName("Back to live")
        self.live_button.setToolTip("Follow the newest samples again (End)")
        self.live_button.hide()

        self.auto_y_button = QtWidgets.QPushButton("Auto Y", self)
        self.auto_y_button.setAccessibleName("Automatic value range")
        self.auto_y_button.setToolTip("Give zoomed value axes their automatic range again")
        self.auto_y_button.hide()

        # right after start (or on a static root folder) a 1 h window holds a few seconds of data:
        # the lines are a few pixels at the right edge, so say so instead of looking broken
        self.history_note = QtWidgets.QLabel(self)
        self.history_note.setObjectName("historyNote")
        self.history_note.setAccessibleName("Recorded history")
        self.history_note.hide()

        self.export_button = QtWidgets.QPushButton("Export CSV…", self)
        self.export_button.setAccessibleName("Export visible history to CSV")

        self.legend = QtWidgets.QLabel(self)
        self.legend.setObjectName("legendItem")
        self.legend.setAccessibleName("Graph legend")
        self.legend.setWordWrap(True)
        self.legend.setTextFormat(QtCore.Qt.TextFormat.RichText)
        policy = QtWidgets.QSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.legend.setSizePolicy(policy)
        self.legend_entries: list[str] = []

        shown = QtWidgets.QLabel("Show", self)
        shown.setBuddy(self.gpu_combo)
        row.addWidget(shown)
        row.addWidget(self.gpu_combo)
        row.addWidget(self.multiples_button)
        row.addWidget(self.metric_combo)
        row.addWidget(self.window_combo)
        row.addWidget(self.pause_button)
        row.addWidget(self.live_button)
        row.addWidget(self.auto_y_button)
        row.addWidget(self.history_note)
        row.addStretch(1)
        row.addWidget(self.export_button)
        outer.addWidget(self.legend)

    def set_legend(self, entries: list[tuple[str | None, str]], muted: str) -> None:
        """Colour swatch + text per entry (``None`` colour: a muted key such as line styles)."""
        self.legend_entries = [text for _color, text in entries]
        parts = []
        for color, text in entries:
            shown = html.escape(text).replace(" ", "&nbsp;")  # wrap between entries, never inside one
            if color is None:
                parts.append(f"<span style='color:{muted}'>{shown}</span>")
            else:
                parts.append(f"<span style='color:{color}; font-size:13pt'>■</span>&nbsp;{shown}")
        self.legend.setText("&nbsp;&nbsp; ".join(parts))
        self.legend.setVisible(bool(parts))
