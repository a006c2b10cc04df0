"""What rocmdesk changed on this machine (the helper's journal), newest first, with Undo."""

from __future__ import annotations

import logging
import time

from PySide6 import QtCore, QtWidgets

from rocmdesk.diagnosis.target import DiagnosisTarget, root_target
from rocmdesk.fixes import journal
from rocmdesk.host import HostRoot
from rocmdesk.ui.fix_dialog import FixDialog

log = logging.getLogger(__name__)


INTERRUPTED = "interrupted — check by hand"
INTERRUPTED_HELP = (
    "This run did not finish: rocmdesk-helper was stopped (or the machine lost power), or it is still running. "
    "The list shows what its journal recorded; a change marked as being written may hold the old or the new "
    "content. Check those files by hand. Undo restores only what was recorded, and refuses a file that "
    "changed since.")


class ChangesView(QtWidgets.QWidget):
    """A list of helper runs; Undo opens the fix dialog for ``undo UNDO_ID`` (preview first)."""

    undone = QtCore.Signal(str)
    refreshed = QtCore.Signal()

    def __init__(self, root: HostRoot | None = None, parent: QtWidgets.QWidget | None = None,
                 dialog_factory=None, can_undo: bool | None = None, target: DiagnosisTarget | None = None) -> None:
        super().__init__(parent)
        self.root = root or HostRoot("/")
        # whose journal this is; the undo dialog refuses (rocmdesk.fixes.guard) for anything but the live machine
        self.target = target if target is not None else root_target(self.root)
        # undo runs the helper on THIS machine: never offer it for a snapshot's or a recording's journal
        self.can_undo = self.root.is_live if can_undo is None else can_undo
        self.dialog_factory = dialog_factory or (
            lambda action, title, parent: FixDialog(action, title, parent=parent, target=self.target))
        self.entries: list[journal.JournalEntry] = []
        self.tree = QtWidgets.QTreeWidget()
        self.tree.setHeaderLabels(["When", "Change", "Status"])
        self.tree.setRootIsDecorated(True)
        header = self.tree.header()  # the Change column takes the room, so the changes below a run are readable
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QtWidgets.QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        self.tree.setAccessibleName("Changes made by rocmdesk")
        self.tree.itemSelectionChanged.connect(self._update_buttons)
        self.empty = QtWidgets.QLabel(
            "rocmdesk has not changed anything on this machine." if self.root.is_live
            else "No changes by rocmdesk are recorded here: this is a recording or snapshot, and rocmdesk changes "
                 "only the live machine.")
        self.empty.setWordWrap(True)
        self.detail = QtWidgets.QLabel()
        self.detail.setWordWrap(True)
        self.detail.setAccessibleName("About the selected change")
        self.detail.setVisible(False)
        self.undo_button = QtWidgets.QPushButton("Undo…")
        self.undo_button.setEnabled(False)
        self.undo_button.clicked.connect(self.undo_selected)
        refresh = QtWidgets.QPushButton("Refresh")
        refresh.clicked.connect(self.refresh)
        buttons = QtWidgets.QHBoxLayout()
        buttons.addWidget(self.undo_button)
        buttons.addWidget(refresh)
        buttons.addStretch(1)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.empty)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.detail)
        layout.addLayout(buttons)
        self.refresh()

    def refresh(self) -> None:
        self.entries = journal.list_entries(self.root)
        self.tree.clear()
        for entry in self.entries:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.time)) if entry.time else "?"
            status = {"applied": "applied", "undone": "undone", "rolled-back": "failed, rolled back",
                      "failed": "failed"}.get(entry.status, entry.status)
            if entry.interrupted:
                status = INTERRUPTED
            item = QtWidgets.QTreeWidgetItem([when, entry.summary(), status])
            item.setData(0, QtCore.Qt.ItemDataRole.UserRole, entry.undo_id)
            states = entry.change_states + [""] * (len(entry.changes) - len(entry.change_states))
            for change, state in zip(entry.changes, states, strict=True):
                text = change.describe()
                if state == "writing" and entry.interrupted:
                    text += " — was being written when the run stopped: may be the old or the new content"
                QtWidgets.QTreeWidgetItem(item, ["", text, ""]).setToolTip(1, text)
            if entry.interrupted and not entry.changes:
                QtWidgets.QTreeWidgetItem(item, ["", "nothing was recorded as changed", ""])
            self.tree.addTopLevelItem(item)
        self.empty.setVisible(not self.entries)
        self.tree.setVisible(bool(self.entries))
        self._update_buttons()
        self.refreshed.emit()

    def selected_entry(self) -> journal.JournalEntry | None:
        item = self.tree.currentItem()
        while item is not None and item.parent() is not None:
            item = item.parent()
        if item is None:
            return None
        undo_id = item.data(0, QtCore.Qt.ItemDataRole.UserRole)
        return next((e for e in self.entries if e.undo_id == undo_id), None)

    def _update_buttons(self) -> None:
        entry = self.selected_entry()
        self.undo_button.setEnabled(bool(self.can_undo and entry and entry.can_undo))
        # a snapshot's journal is never undone from here, and an empty list has nothing to undo
        self.undo_button.setVisible(bool(self.can_undo and self.entries))
        interrupted = bool(entry and entry.interrupted)
        self.undo_button.setText("Undo recorded changes…" if interrupted else "Undo…")
        self.detail.setVisible(interrupted)
        if interrupted:
            self.detail.setText(INTERRUPTED_HELP)

    def undo_selected(self) -> QtWidgets.QDialog | None:
        entry = self.selected_entry()
        if entry is None or not entry.can_undo or not self.can_undo:
            return None
        dialog = self.dialog_factory(("undo", entry.undo_id), f"Undo: {entry.summary()}", self)
        dialog.applied.connect(lambda outcome, uid=entry.undo_id: self._after_undo(outcome, uid))
        dialog.open()
        return dialog

    def _after_undo(self, outcome, undo_id: str) -> None:
        self.refresh()
        if getattr(outcome, "ok", False):
            self.undone.emit(undo_id)
