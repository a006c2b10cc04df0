"""Tuning tab: per GPU power cap, performance level and power profile, applied through the helper.

Only what the GPU reports is offered (rocmdesk.fixes.tuning_state): the cap slider spans
power1_cap_min..max with the default marked; profiles come from the GPU's own table. Apply and Reset
open the Fix dialog (exact preview, then pkexec). Profiles are YAML files in the user's config folder.
Below, the Changes view lists everything rocmdesk changed, with Undo.
"""

from __future__ import annotations

import logging

from PySide6 import QtCore, QtGui, QtWidgets

from rocmdesk.diagnosis.target import DiagnosisTarget, target_for_view
from rocmdesk.fixes import client
from rocmdesk.fixes.tuning_profiles import (
    GpuTuning,
    ProfileError,
    TuningProfile,
    delete_profile,
    load_profiles,
    save_profile,
)
from rocmdesk.fixes.tuning_state import PCI_RE, TuningState, read_tuning_state
from rocmdesk.ui import theme
from rocmdesk.ui.changes_view import ChangesView
from rocmdesk.ui.context import AppContext
from rocmdesk.ui.fix_dialog import FixDialog, install_fix_handler

log = logging.getLogger(__name__)


class MarkedSlider(QtWidgets.QSlider):
    """A horizontal slider that draws a small mark at one value (the GPU's default power cap)."""

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(QtCore.Qt.Orientation.Horizontal, parent)
        self.mark: int | None = None

    def paintEvent(self, event: QtGui.QPaintEvent) -> None:
        super().paintEvent(event)
        if self.mark is None or self.maximum() <= self.minimum():
            return
        option = QtWidgets.QStyleOptionSlider()
        self.initStyleOption(option)
        groove = self.style().subControlRect(QtWidgets.QStyle.ComplexControl.CC_Slider, option,
                                             QtWidgets.QStyle.SubControl.SC_SliderGroove, self)
        handle = self.style().subControlRect(QtWidgets.QStyle.ComplexControl.CC_Slider, option,
                                             QtWidgets.QStyle.SubControl.SC_SliderHandle, self)
        span = groove.width() - handle.width()
        x = groove.x() + handle.width() // 2 + QtWidgets.QStyle.sliderPositionFromValue(
            self.minimum(), self.maximum(), self.mark, span)
        painter = QtGui.QPainter(self)
        # the info colour, not the selection colour: a pale selection blue was 1.3:1 on the light surface
        painter.setPen(QtGui.QPen(QtGui.QColor(theme.current().info), 2))
        painter.drawLine(x, 0, x, self.height())
        painter.end()


class TuningTab(QtWidgets.QWidget):
    def __init__(self, ctx: AppContext, parent: QtWidgets.QWidget | None = None, dialog_factory=None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        shown = (getattr(ctx, "extras", None) or {}).get("target")  # the window's source (a demo machine's name)
        self.target: DiagnosisTarget = shown if isinstance(shown, DiagnosisTarget) else target_for_view(
            ctx.root, ctx.mode, getattr(ctx, "bundle_path", None))
        self.dialog_factory = dialog_factory or (
            lambda actions, title, parent: FixDialog(actions, title, parent=parent, target=self.target))
        self.state: TuningState | None = None
        self.dialog: QtWidgets.QDialog | None = None

        self.gpu_combo = QtWidgets.QComboBox()
        self.gpu_combo.setAccessibleName("GPU to tune")
        self.gpu_combo.currentIndexChanged.connect(lambda _i: self.refresh_state())
        self.notice = QtWidgets.QLabel()
        self.notice.setWordWrap(True)

        self.cap_slider = MarkedSlider()
        self.cap_slider.setAccessibleName("Power cap in watts")
        self.cap_value = QtWidgets.QLabel()
        self.cap_range = QtWidgets.QLabel()
        self.cap_slider.valueChanged.connect(lambda v: self.cap_value.setText(f"{v} W"))
        self.level_combo = QtWidgets.QComboBox()
        self.level_combo.setAccessibleName("Performance level")
        self.profile_combo = QtWidgets.QComboBox()
        self.profile_combo.setAccessibleName("Power profile")
        self.apply_button = QtWidgets.QPushButton("Apply…")
        self.apply_button.clicked.connect(self.apply)
        self.reset_button = QtWidgets.QPushButton("Reset to defaults…")
        self.reset_button.clicked.connect(self.reset)

        cap_row = QtWidgets.QHBoxLayout()
        cap_row.addWidget(self.cap_slider, 1)
        cap_row.addWidget(self.cap_value)
        form = QtWidgets.QFormLayout()
        form.addRow("GPU", self.gpu_combo)
        form.addRow("Power cap", cap_row)
        form.addRow("", self.cap_range)
        form.addRow("Performance level", self.level_combo)
        form.addRow("Power profile", self.profile_combo)
        buttons = QtWidgets.QHBoxLayout()
        buttons.addWidget(self.apply_button)
        buttons.addWidget(self.reset_button)
        buttons.addStretch(1)

        self.profile_list = QtWidgets.QComboBox()
        self.profile_list.setAccessibleName("Saved tuning profiles")
        self.profile_list.setPlaceholderText("No saved tuning profiles")
        save = QtWidgets.QPushButton("Save as profile…")
        save.clicked.connect(self.save_profile_dialog)
        self.apply_profile_button = QtWidgets.QPushButton("Apply profile…")
        self.apply_profile_button.clicked.connect(self.apply_selected_profile)
        self.delete_profile_button = QtWidgets.QPushButton("Delete")
        self.delete_profile_button.clicked.connect(self.delete_selected_profile)
        profiles_row = QtWidgets.QHBoxLayout()
        profiles_row.addWidget(self.profile_list, 1)
        profiles_row.addWidget(self.apply_profile_button)
        profiles_row.addWidget(self.delete_profile_button)
        profiles_row.addWidget(save)

        self.form = form
        # the controls, or (demo, snapshot, no amdgpu GPU) a plain message saying why and what would enable them
        self.controls = QtWidgets.QWidget()
        controls_layout = QtWidgets.QVBoxLayout(self.controls)
        controls_layout.setContentsMargins(0, 0, 0, 0)
        controls_layout.addWidget(self.notice)
        controls_layout.addLayout(form)
        controls_layout.addLayout(buttons)
        controls_layout.addLayout(profiles_row)
        self.empty_title = QtWidgets.QLabel()
        title_font = self.empty_title.font()
        title_font.setBold(True)
        title_font.setPointSizeF(title_font.pointSizeF() * 1.15)
        self.empty_title.setFont(title_font)
        self.empty_text = QtWidgets.QLabel()
        self.empty_text.setWordWrap(True)
        self.empty_text.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.empty_text.setAccessibleName("Why tuning is not available here")
        self.empty_state = QtWidgets.QWidget()
        empty_layout = QtWidgets.QVBoxLayout(self.empty_state)
        empty_layout.setContentsMargins(8, 8, 8, 8)
        empty_layout.addWidget(self.empty_title)
        empty_layout.addWidget(self.empty_text)
        self.tuning_box = QtWidgets.QGroupBox("Tuning (lost at reboot)")
        box_layout = QtWidgets.QVBoxLayout(self.tuning_box)
        box_layout.addWidget(self.empty_state)
        box_layout.addWidget(self.controls)

        self.changes = ChangesView(ctx.root, self, can_undo=ctx.is_live and ctx.root.is_live, target=self.target)
        self.changes_box = QtWidgets.QGroupBox("Changes made by rocmdesk")
        QtWidgets.QVBoxLayout(self.changes_box).addWidget(self.changes)
        self.changes.refreshed.connect(self._update_stretch)

        # inside a scroll area, so this tab never forces a minimum window size on the others
        content = QtWidgets.QWidget()
        inner = QtWidgets.QVBoxLayout(content)
        self._inner = inner
        inner.addWidget(self.tuning_box)
        inner.addWidget(self.changes_box, 1)
        inner.addStretch(0)
        scroll = QtWidgets.QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        scroll.setWidget(content)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(scroll)

        feed = getattr(ctx, "feed", None)
        if feed is not None and hasattr(feed, "gpus_changed"):
            feed.gpus_changed.connect(lambda _infos: self.refresh_gpus())
        self.refresh_gpus()
        self.refresh_profiles()
        self._update_stretch()
        # the Diagnosis tab lives in the same window: route its fixRequested(finding) to the dialogs
        QtCore.QTimer.singleShot(0, self._connect_diagnosis)

    # -- helpers --------------------------------------------------------------------------------------
    def _connect_diagnosis(self) -> None:
        window = self.window()
        if window is not self:
            install_fix_handler(window)

    def showEvent(self, event: QtGui.QShowEvent) -> None:
        super().showEvent(event)
        self._connect_diagnosis()

    def on_shown(self) -> None:
        self.refresh_state()
        self.changes.refresh()

    def screenshot_ready(self) -> bool:
        """Ready once the selected GPU's settings were read, or the tab says why there are none."""
        return self.state is not None or self.empty_reason() is not None

    @property
    def can_change(self) -> bool:
        return self.ctx.is_live

    @property
    def read_only(self) -> bool:
        """The demo: its machine's recorded settings are shown in the controls, which change nothing."""
        return self.ctx.mode == "demo" and not self.ctx.root.is_live

    def amd_gpus(self) -> list[str]:
        out = []
        for pci in self.ctx.root.listdir("/sys/bus/pci/devices"):
            driver = self.ctx.root.readlink(f"/sys/bus/pci/devices/{pci}/driver") or ""
            if PCI_RE.fullmatch(pci) and driver.rsplit("/", 1)[-1] == "amdgpu":
                out.append(pci)
        return out

    def refresh_gpus(self) -> None:
        current = self.gpu_combo.currentData()
        self.gpu_combo.blockSignals(True)
        self.gpu_combo.clear()
        for pci in self.amd_gpus():
            self.gpu_combo.addItem(pci, pci)
        index = self.gpu_combo.findData(current)
        self.gpu_combo.setCurrentIndex(max(index, 0))
        self.gpu_combo.blockSignals(False)
        self.refresh_state()

    def _update_stretch(self) -> None:
        """An empty Changes list stays a line high; a list with entries takes the room that is left."""
        has_entries = bool(self.changes.entries)
        self._inner.setStretchFactor(self.changes_box, 1 if has_entries else 0)
        self._inner.setStretch(self._inner.count() - 1, 0 if has_entries else 1)

    def _show_empty_state(self, title: str, text: str) -> None:
        self.empty_title.setText(title)
        self.empty_text.setText(text)
        self.empty_state.setVisible(True)
        self.controls.setVisible(False)
        self.tuning_box.setTitle("Tuning")

    def _recorded_settings(self) -> list[str]:
        """One line per GPU of a snapshot: what it was set to (read-only, for support staff)."""
        lines = []
        for pci in self.amd_gpus():
            state = read_tuning_state(self.ctx.root, pci)
            parts = []
            if state.power_cap:
                cap = state.power_cap
                default = f", default {cap.default_w:g} W" if cap.default_w is not None else ""
                parts.append(f"power cap {cap.current_w:g} W ({cap.min_w:g}–{cap.max_w:g} W{default})")
            if state.performance_level:
                parts.append(f"performance level {state.performance_level}")
            if state.active_profile is not None:
                parts.append(f"power profile {state.active_profile} {state.profiles.get(state.active_profile, '')}"
                             .rstrip())
            lines.append(f"{pci}: " + (", ".join(parts) if parts else "no tuning controls"))
        return lines

    def empty_reason(self) -> tuple[str, str] | None:
        """(title, text) when there is nothing to tune here, else None (the controls are shown)."""
        if self.ctx.mode == "demo" and (not self.read_only or self.gpu_combo.count() == 0):
            return ("Tuning is not available in demo mode",
                    "This demo machine holds no GPU driven by amdgpu, so there is nothing to show. Run rocmdesk "
                    "without --demo on a machine with an AMD GPU driven by amdgpu to set its power cap, "
                    "performance level and power profile. Tuning changes only the live machine.")
        if not self.can_change and not self.read_only:
            recorded = self._recorded_settings()
            where = "a support snapshot" if self.ctx.bundle_path else "another root folder"
            text = (f"rocmdesk is showing {where}, not this computer, so tuning is off: it changes only the "
                    "live machine. Run rocmdesk without --root or --open to tune this machine's AMD GPUs.")
            if recorded:
                text += "\n\nSettings recorded here:\n" + "\n".join(recorded)
            else:
                text += "\n\nThis snapshot holds no GPU driven by amdgpu."
            return ("Tuning is not available for a snapshot", text)
        if self.gpu_combo.count() == 0:
            return ("No AMD GPU to tune",
                    "rocmdesk found no GPU driven by the amdgpu kernel driver, so there is nothing to tune. "
                    "Once amdgpu drives a GPU, its power cap, performance level and power profile appear here; "
                    "the Diagnosis tab shows why it does not (for example amdgpu not loaded or blacklisted).")
        return None

    def refresh_state(self) -> None:
        pci = self.gpu_combo.currentData()
        self.state = read_tuning_state(self.ctx.root, pci) if pci and (self.can_change or self.read_only) else None
        state = self.state
        reason = self.empty_reason()
        if reason is not None:
            self._show_empty_state(*reason)
            for widget in (self.apply_button, self.reset_button, self.apply_profile_button):
                widget.setEnabled(False)
            return
        self.empty_state.setVisible(False)
        self.controls.setVisible(True)
        self.tuning_box.setTitle("Tuning (read-only: the demo machine's recorded settings)" if self.read_only
                                 else "Tuning (lost at reboot)")
        notes = list(state.notes) if state else []
        if self.read_only:
            notes.insert(0, f"Read-only: the settings recorded on {self.target.whose()}. Apply is off because "
                            "tuning changes only the live machine; run rocmdesk without --demo on a machine with "
                            "an AMD GPU to tune it.")
        self.notice.setText("\n".join(notes))
        self.notice.setVisible(bool(notes))
        cap = state.power_cap if state else None
        # offer only what this GPU has: rows without a control are hidden, not shown empty
        self.form.setRowVisible(1, cap is not None)
        self.form.setRowVisible(2, cap is not None)
        self.form.setRowVisible(3, bool(state and state.levels))
        self.form.setRowVisible(4, bool(state and state.profiles))
        self.cap_slider.setEnabled(bool(cap and cap.adjustable) and not self.read_only)
        if cap:
            self.cap_slider.setRange(round(cap.min_w), round(cap.max_w))
            self.cap_slider.setValue(round(cap.current_w))
            self.cap_slider.mark = round(cap.default_w) if cap.default_w is not None else None
            default = f" · default {cap.default_w:g} W (marked)" if cap.default_w is not None else ""
            self.cap_range.setText(f"{cap.min_w:g} W to {cap.max_w:g} W{default}")
            self.cap_value.setText(f"{self.cap_slider.value()} W")
        else:
            self.cap_range.setText("not available on this GPU")
            self.cap_value.setText("")
        self.level_combo.clear()
        for level in state.levels if state else ():
            self.level_combo.addItem(level, level)
        if state and state.performance_level:
            self.level_combo.setCurrentIndex(max(self.level_combo.findData(state.performance_level), 0))
        self.level_combo.setEnabled(self.level_combo.count() > 0 and not self.read_only)
        self.profile_combo.clear()
        for index, name in sorted((state.profiles if state else {}).items()):
            self.profile_combo.addItem(f"{index} {name}", index)
        if state and state.active_profile is not None:
            self.profile_combo.setCurrentIndex(max(self.profile_combo.findData(state.active_profile), 0))
        self.profile_combo.setEnabled(self.profile_combo.count() > 0 and not self.read_only)
        usable = bool(state and state.has_controls and self.can_change)
        self.apply_button.setEnabled(usable)
        self.reset_button.setEnabled(usable)
        self.apply_button.setVisible(bool(state and state.has_controls))
        self.reset_button.setVisible(bool(state and state.has_controls))
        self.apply_profile_button.setEnabled(self.can_change and self.profile_list.count() > 0)

    # -- actions --------------------------------------------------------------------------------------
    def pending_tuning(self) -> GpuTuning:
        """The settings in the controls that differ from what the GPU has now."""
        state = self.state
        tuning = GpuTuning()
        if state is None:
            return tuning
        cap = state.power_cap
        if cap and self.cap_slider.isEnabled() and self.cap_slider.value() != round(cap.current_w):
            tuning.power_cap_w = self.cap_slider.value()
        level = self.level_combo.currentData()
        if level and level != state.performance_level:
            tuning.performance_level = level
        profile = self.profile_combo.currentData()
        if profile is not None and profile != state.active_profile:
            tuning.power_profile = profile
        return tuning

    def pending_actions(self) -> list[tuple[str, ...]]:
        return self.pending_tuning().actions(self.state.pci) if self.state else []

    def _run(self, actions: list[tuple[str, ...]], title: str) -> QtWidgets.QDialog | None:
        if not actions:
            QtWidgets.QToolTip.showText(self.apply_button.mapToGlobal(QtCore.QPoint(0, 0)), "Nothing changed.")
            return None
        dialog = self.dialog_factory(actions, title, self)
        dialog.applied.connect(lambda _outcome: (self.refresh_state(), self.changes.refresh()))
        dialog.open()
        self.dialog = dialog
        return dialog

    def apply(self) -> QtWidgets.QDialog | None:
        if not self.state or not self.can_change:  # a demo's recorded settings are shown, never changed
            return None
        return self._run(self.pending_actions(), f"Tune {self.state.pci}")

    def reset(self) -> QtWidgets.QDialog | None:
        if not self.state or not self.can_change:  # a demo's recorded settings are shown, never changed
            return None
        return self._run([("reset-tuning", self.state.pci)], f"Reset {self.state.pci} to its defaults")

    # -- profiles -------------------------------------------------------------------------------------
    def refresh_profiles(self) -> None:
        self.profiles = load_profiles()
        self.profile_list.clear()
        for profile in self.profiles:
            self.profile_list.addItem(profile.name)
        has = bool(self.profiles)
        self.apply_profile_button.setEnabled(has and self.can_change)
        self.delete_profile_button.setEnabled(has)

    def current_settings(self) -> GpuTuning:
        state = self.state
        cap = self.cap_slider.value() if state and state.power_cap and self.cap_slider.isEnabled() else None
        profile = self.profile_combo.currentData()
        level = None if profile is not None else self.level_combo.currentData()
        return GpuTuning(cap, level, profile)

    def save_profile_named(self, name: str) -> TuningProfile | None:
        if not self.state:
            return None
        existing = next((p for p in self.profiles if p.name == name), None)
        profile = existing or TuningProfile(name)
        profile.gpus[self.state.pci] = self.current_settings()
        try:
            save_profile(profile)
        except (OSError, ProfileError) as exc:
            QtWidgets.QMessageBox.warning(self, "Profile not saved", str(exc))
            return None
        self.refresh_profiles()
        self.profile_list.setCurrentText(name)
        return profile

    def save_profile_dialog(self) -> None:
        name, ok = QtWidgets.QInputDialog.getText(self, "Save tuning profile", "Profile name:")
        if ok and name.strip():
            self.save_profile_named(name.strip())

    def selected_profile(self) -> TuningProfile | None:
        name = self.profile_list.currentText()
        return next((p for p in self.profiles if p.name == name), None)

    def apply_selected_profile(self) -> QtWidgets.QDialog | None:
        profile = self.selected_profile()
        if profile is None or not self.can_change:
            return None
        present = set(self.amd_gpus())
        actions = [a for pci, tuning in profile.gpus.items() if pci in present for a in tuning.actions(pci)]
        return self._run(actions, f"Apply tuning profile {profile.name}")

    def delete_selected_profile(self) -> None:
        profile = self.selected_profile()
        if profile is not None:
            delete_profile(profile.name)
            self.refresh_profiles()

    def helper_status(self) -> client.HelperStatus:
        return client.helper_status()
