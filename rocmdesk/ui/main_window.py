"""The main window: toolbar, a banner when not showing this machine, tabs and a status bar."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

from PySide6 import QtCore, QtGui, QtWidgets

from rocmdesk import __version__
from rocmdesk.ui import theme
from rocmdesk.ui.context import AppContext
from rocmdesk.ui.formatting import fmt_age, gpu_label
from rocmdesk.ui.notifications import DesktopAlerts
from rocmdesk.ui.tabs import TAB_FACTORIES, Tab, load_factory
from rocmdesk.ui.widgets import set_text
from rocmdesk.xdg_paths import pictures_dir

log = logging.getLogger(__name__)

RATES_HZ = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0)
STATE_VERSION = 1  # QMainWindow.saveState version: bump when toolbars/docks change incompatibly
MIN_VISIBLE_PX = (160, 80)  # this much of a restored window, top edge included, must be on a screen


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def decode_hex(text: str) -> QtCore.QByteArray | None:
    """Saved geometry/state as bytes; None for empty or malformed hex (QByteArray.fromHex skips
    bad digits silently and would hand Qt a shifted, meaningless blob)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        return None
    return QtCore.QByteArray(raw) if raw else None


def fit_on_screen(rect: QtCore.QRect, screens: list[QtCore.QRect], fallback: QtCore.QRect) -> QtCore.QRect:
    """``rect`` if enough of it (its top edge included, to grab it) lies on one of ``screens``;
    otherwise the same size, shrunk to fit, centred on ``fallback``."""
    min_w, min_h = MIN_VISIBLE_PX
    for area in screens:
        seen = rect.intersected(area)
        top_visible = area.top() <= rect.top() <= area.bottom() - min_h
        if top_visible and seen.width() >= min(min_w, rect.width()) and seen.height() >= min(min_h, rect.height()):
            if rect.width() <= area.width() and rect.height() <= area.height():
                return QtCore.QRect(rect)
            fallback = area  # on this screen, but larger than it: shrink in place
            break
    width = min(rect.width(), fallback.width())
    height = min(rect.height(), fallback.height())
    placed = QtCore.QRect(0, 0, width, height)
    placed.moveCenter(fallback.center())
    return placed


DEFAULT_SIZE = (1440, 900)
FRAME_ALLOWANCE = (16, 40)  # window-manager borders and title bar around the client area


def default_size(area: QtCore.QRect | None) -> QtCore.QSize:
    """The first window: 1440x900, or what fits the screen's available area (panels and docks taken
    off), frame included; on a 1280x800 screen the whole window is usable."""
    width, height = DEFAULT_SIZE
    if area is not None and area.width() > 0 and area.height() > 0:
        width = min(width, area.width() - FRAME_ALLOWANCE[0])
        height = min(height, area.height() - FRAME_ALLOWANCE[1])
    return QtCore.QSize(max(640, width), max(480, height))


def source_kind_text(ctx: AppContext) -> str:
    """"this machine", "demo data", "snapshot NAME" or "root folder DIR"."""
    if ctx.mode == "demo":
        return "demo data (not this machine)"
    if ctx.mode == "snapshot" and ctx.bundle_path:
        return f"snapshot {os.path.basename(ctx.bundle_path)} (recorded)"
    if ctx.mode == "snapshot" or not ctx.root.is_live:
        return f"root folder {ctx.root.root} (re-read)"
    return "this machine"


class Banner(QtWidgets.QFrame):
    """"You are not looking at this machine": demo data or a snapshot, with ways out."""

    open_root = QtCore.Signal()
    open_snapshot = QtCore.Signal()

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("banner")
        self.setAccessibleName("Data source notice")
        self.icon = QtWidgets.QLabel("●", self)
        self.title = QtWidgets.QLabel("", self)
        self.title.setStyleSheet("font-weight: 600;")
        # a long reason ("no AMD GPU found: /sys/class/drm does not exist (...); showing demo data — ...")
        # wraps at word boundaries onto more lines instead of running under the buttons
        self.detail = QtWidgets.QLabel("", self)
        self.detail.setWordWrap(True)
        self.detail.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        self.detail.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        policy = QtWidgets.QSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.detail.setSizePolicy(policy)
        self.root_button = QtWidgets.QPushButton("Open root folder…", self)
        self.root_button.setAccessibleName("Open root folder")
        self.root_button.clicked.connect(self.open_root)
        self.snapshot_button = QtWidgets.QPushButton("Open snapshot…", self)
        self.snapshot_button.setAccessibleName("Open snapshot")
        self.snapshot_button.clicked.connect(self.open_snapshot)
        row = QtWidgets.QHBoxLayout(self)
        row.setContentsMargins(14, 6, 14, 6)
        row.setSpacing(10)
        row.addWidget(self.icon, 0, QtCore.Qt.AlignmentFlag.AlignVCenter)
        row.addWidget(self.title, 0, QtCore.Qt.AlignmentFlag.AlignVCenter)
        row.addWidget(self.detail, 1)
        row.addWidget(self.root_button, 0, QtCore.Qt.AlignmentFlag.AlignVCenter)
        row.addWidget(self.snapshot_button, 0, QtCore.Qt.AlignmentFlag.AlignVCenter)

    def show_source(self, mode: str, reason: str) -> None:
        if mode == "live":
            self.hide()
            return
        title = "Demo data — not this machine" if mode == "demo" else "Snapshot — not this machine"
        self.title.setText(title)
        self.detail.setText(reason)
        self.detail.setToolTip(reason)
        self.setAccessibleDescription(f"{title}. {reason}")
        self.show()


class MainWindow(QtWidgets.QMainWindow):
    # False for non-interactive windows (``rocmdesk screenshot``, benchmarks): closing them must
    # never replace the user's settings.json (theme, last tab, geometry, layout) with theirs
    save_settings_on_close: bool = True

    def __init__(self, ctx: AppContext, switch_source: Callable[[str, str], None] | None = None,
                 parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.switch_source = switch_source
        self.setWindowTitle(self._title())
        self.setObjectName("rocmdeskMainWindow")
        self.tab_widgets: dict[str, QtWidgets.QWidget] = {}
        self._tab_titles: dict[str, str] = {}
        self.tab_errors: dict[str, str] = {}

        self._build_toolbar()
        self._build_menus()
        self.banner = Banner(self)
        self.banner.open_root.connect(self.choose_root)
        self.banner.open_snapshot.connect(self.choose_snapshot)
        self.banner.show_source(ctx.mode, ctx.mode_reason)

        self.tabs = QtWidgets.QTabWidget(self)
        self.tabs.setDocumentMode(True)
        self.tabs.setAccessibleName("Views")
        self.tabs.currentChanged.connect(self._on_tab_changed)
        central = QtWidgets.QWidget(self)
        central.setObjectName("centralArea")
        lay = QtWidgets.QVBoxLayout(central)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(self.banner)
        lay.addWidget(self.tabs, 1)
        self.setCentralWidget(central)
        self._build_status()

        for spec in TAB_FACTORIES:
            try:
                widget = load_factory(spec)(ctx, None)
            except Exception as exc:  # one broken tab must not keep the window from opening
                log.exception("the %s tab could not be built", spec.title)
                self.tab_errors[spec.key] = f"{type(exc).__name__}: {exc}"
                continue
            self.add_tab(widget, spec.title, spec.key)

        self._restore()
        ctx.feed.stale_changed.connect(self._on_stale)
        ctx.feed.snapshot.connect(self._on_first_snapshot)
        ctx.feed.rate_changed.connect(lambda _hz: self._update_rate_label())
        ctx.feed.gpus_changed.connect(lambda _infos: self._fill_gpu_menu())
        ctx.feed.gpu_event.connect(self._on_event)
        ctx.feed.loaded.connect(self._update_rate_label)
        if ctx.feed.frozen:
            self.rate_combo.setEnabled(False)
            self.rate_combo.setToolTip("A snapshot is a recording: nothing is sampled")
        self._gpu_menu_filled = False
        self._shown_errors: tuple[str, ...] = ()
        self._age_timer = QtCore.QTimer(self)
        self._age_timer.setInterval(1000)
        self._age_timer.timeout.connect(self._update_age)
        if not ctx.feed.frozen:
            self._age_timer.start()
        self._update_rate_label()
        self._update_age()
        self.alerts = DesktopAlerts(ctx, self)
        self.menuBar().insertMenu(self.menuBar().actions()[0], self.alerts.settings_menu(self))  # before Help

    # -- tabs ------------------------------------------------------------------------------------------
    def add_tab(self, widget: QtWidgets.QWidget, title: str, key: str | None = None,
                shortcut: str | QtGui.QKeySequence | None = None) -> int:
        """Add a tab; it gets Ctrl+<position> (1-9) unless ``shortcut`` says otherwise."""
        key = key or title.lower()
        index = self.tabs.addTab(widget, title)
        widget.setAccessibleName(widget.accessibleName() or title)
        self.tab_widgets[key] = widget
        self._tab_titles[key] = title
        sequence = QtGui.QKeySequence(shortcut) if shortcut else (
            QtGui.QKeySequence(f"Ctrl+{index + 1}") if index < 9 else None)
        if sequence is not None:
            action = QtGui.QAction(f"Show {title}", self)
            action.setShortcut(sequence)
            action.triggered.connect(lambda _=False, w=widget: self.tabs.setCurrentWidget(w))
            self.addAction(action)
            native = sequence.toString(QtGui.QKeySequence.SequenceFormat.NativeText)
            self.tabs.setTabToolTip(index, f"{title} ({native})")
        return index

    def show_tab(self, key: str) -> bool:
        widget = self.tab_widgets.get(key)
        if widget is None:
            return False
        self.tabs.setCurrentWidget(widget)
        return True

    def current_tab_key(self) -> str:
        current = self.tabs.currentWidget()
        return next((k for k, w in self.tab_widgets.items() if w is current), "")

    def _on_tab_changed(self, _index: int) -> None:
        key = self.current_tab_key()
        if key:
            self.ctx.settings.last_tab = key
        widget = self.tabs.currentWidget()
        if isinstance(widget, Tab):
            widget.on_shown()
        self.pause_action.setEnabled(hasattr(widget, "toggle_pause"))

    # -- toolbar ---------------------------------------------------------------------------------------
    def _build_toolbar(self) -> None:
        bar = QtWidgets.QToolBar("Main", self)
        bar.setObjectName("mainToolbar")
        bar.setMovable(False)
        bar.setFloatable(False)
        bar.setToolButtonStyle(QtCore.Qt.ToolButtonStyle.ToolButtonTextOnly)
        bar.setContextMenuPolicy(QtCore.Qt.ContextMenuPolicy.PreventContextMenu)
        self.addToolBar(QtCore.Qt.ToolBarArea.TopToolBarArea, bar)
        self.toolbar = bar
        title = QtWidgets.QLabel(f"rocmdesk <span style='font-weight:400'>{__version__}</span>", bar)
        title.setObjectName("appTitle")
        bar.addWidget(title)
        spacer = QtWidgets.QWidget(bar)
        spacer.setSizePolicy(QtWidgets.QSizePolicy.Policy.Expanding, QtWidgets.QSizePolicy.Policy.Preferred)
        bar.addWidget(spacer)

        self.gpu_button = QtWidgets.QToolButton(bar)
        self.gpu_button.setText("GPUs")
        self.gpu_button.setAccessibleName("Choose the GPUs shown")
        self.gpu_button.setToolTip("Choose the GPUs shown in Overview and Graphs")
        self.gpu_button.setPopupMode(QtWidgets.QToolButton.ToolButtonPopupMode.InstantPopup)
        self.gpu_menu = QtWidgets.QMenu(self.gpu_button)
        self.gpu_button.setMenu(self.gpu_menu)
        bar.addWidget(self.gpu_button)

        self.rate_combo = QtWidgets.QComboBox(bar)
        self.rate_combo.setAccessibleName("Sample rate")
        self.rate_combo.setToolTip("How often the GPUs are read")
        for hz in RATES_HZ:
            self.rate_combo.addItem(f"{hz:g} Hz", hz)
        current = min(range(len(RATES_HZ)), key=lambda i: abs(RATES_HZ[i] - self.ctx.settings.rate_hz))
        self.rate_combo.setCurrentIndex(current)
        self.rate_combo.currentIndexChanged.connect(self._on_rate)
        bar.addWidget(self.rate_combo)

        self.unit_combo = QtWidgets.QComboBox(bar)
        self.unit_combo.setAccessibleName("Temperature unit")
        self.unit_combo.addItem("°C", "C")
        self.unit_combo.addItem("°F", "F")
        self.unit_combo.setCurrentIndex(0 if self.ctx.settings.temp_unit == "C" else 1)
        self.unit_combo.currentIndexChanged.connect(self._on_unit)
        bar.addWidget(self.unit_combo)

        self.theme_combo = QtWidgets.QComboBox(bar)
        self.theme_combo.setAccessibleName("Theme")
        for name, label in (("system", "System theme"), ("light", "Light"), ("dark", "Dark")):
            self.theme_combo.addItem(label, name)
        self.theme_combo.setCurrentIndex(max(0, self.theme_combo.findData(self.ctx.settings.theme)))
        self.theme_combo.currentIndexChanged.connect(self._on_theme)
        bar.addWidget(self.theme_combo)

        self.pause_action = QtGui.QAction("Pause", self)
        self.pause_action.setShortcut(QtGui.QKeySequence(QtCore.Qt.Key.Key_Space))
        self.pause_action.setToolTip("Pause or resume the graphs (Space)")
        self.pause_action.triggered.connect(self.toggle_pause)
        self.addAction(self.pause_action)

        self.screenshot_action = QtGui.QAction("Screenshot", self)
        self.screenshot_action.setShortcut(QtGui.QKeySequence("Ctrl+Shift+S"))
        self.screenshot_action.setToolTip("Save a PNG of the current tab (Ctrl+Shift+S)")
        self.screenshot_action.triggered.connect(lambda: self.save_screenshot())
        bar.addAction(self.screenshot_action)
        for action in bar.actions():
            widget = bar.widgetForAction(action)
            if widget is not None and not widget.accessibleName():
                widget.setAccessibleName(action.text())

        quit_action = QtGui.QAction("Quit", self)
        quit_action.setShortcut(QtGui.QKeySequence.StandardKey.Quit)
        quit_action.triggered.connect(self.close)
        self.addAction(quit_action)
        live_action = QtGui.QAction("Back to live", self)
        live_action.setShortcut(QtGui.QKeySequence(QtCore.Qt.Key.Key_End))
        live_action.triggered.connect(self._back_to_live)
        self.addAction(live_action)

    def _build_menus(self) -> None:
        """Help ▸ Demo machine ▸ …: every shipped demo machine is one click away, not only --demo or
        ROCMDESK_DEMO (issue 10, item 5). Filled when opened, so a live window reads no recording."""
        help_menu = self.menuBar().addMenu("&Help")
        self.demo_menu = help_menu.addMenu("&Demo machine")
        self.demo_menu.setToolTipsVisible(True)
        self.demo_menu.aboutToShow.connect(self._fill_demo_menu)
        self._fill_demo_menu(titles=False)

    def shown_demo(self) -> str:
        """The demo machine this window shows, "" when it shows anything else."""
        if self.ctx.mode != "demo":
            return ""
        return str(getattr((getattr(self.ctx, "extras", None) or {}).get("target"), "source", "") or "")

    def _fill_demo_menu(self, titles: bool = True) -> None:
        from rocmdesk.telemetry.recording import RecordingError, bundled_recordings, demo_machines, load_recording

        self.demo_menu.clear()
        recordings = set(bundled_recordings())
        current = self.shown_demo()
        for name in demo_machines():
            if name not in recordings:  # a machine without telemetry to play is not a demo
                continue
            try:
                title = (load_recording(name).title.removesuffix("(demo recording)").strip() if titles else "") or name
            except RecordingError:
                continue
            action = self.demo_menu.addAction(title)
            action.setObjectName(f"demo-{name}")
            action.setToolTip(f"Open the demo machine {name}: its diagnosis, report and tuning (never this computer)")
            action.setCheckable(True)
            action.setChecked(name == current)
            action.setEnabled(self.switch_source is not None)
            action.triggered.connect(lambda _on=False, n=name: self.open_demo(n))
        if self.demo_menu.isEmpty():
            self.demo_menu.addAction("No demo machines in this build").setEnabled(False)

    def open_demo(self, name: str) -> None:
        if self.switch_source is not None and name != self.shown_demo():
            self.switch_source("demo", name)

    def _fill_gpu_menu(self) -> None:
        self.gpu_menu.clear()
        selected = set(self.ctx.settings.selected_gpus)
        all_action = self.gpu_menu.addAction("Show all GPUs")
        all_action.triggered.connect(lambda: self.set_selected_gpus([]))
        self.gpu_menu.addSeparator()
        for info in self.ctx.feed.gpus:
            action = self.gpu_menu.addAction(f"{gpu_label(info)} ({info.pci})")
            action.setCheckable(True)
            action.setChecked(not selected or info.pci in selected)
            action.toggled.connect(lambda on, pci=info.pci: self._toggle_gpu(pci, on))
        count = len(self.ctx.feed.gpus)
        shown = count if not selected else len([g for g in self.ctx.feed.gpus if g.pci in selected])
        self.gpu_button.setText(f"GPUs ({shown}/{count})" if count else "GPUs")

    def _toggle_gpu(self, pci: str, on: bool) -> None:
        everyone = [g.pci for g in self.ctx.feed.gpus]
        chosen = set(self.ctx.settings.selected_gpus or everyone)
        chosen = chosen | {pci} if on else chosen - {pci}
        if not chosen:
            chosen = set(everyone)  # showing nothing is never what the user meant
        self.set_selected_gpus([] if chosen >= set(everyone) else [p for p in everyone if p in chosen])

    def set_selected_gpus(self, pcis: list[str]) -> None:
        self.ctx.settings.selected_gpus = list(pcis)
        overview = self.tab_widgets.get("overview")
        if overview is not None and hasattr(overview, "refresh_selection"):
            overview.refresh_selection()
        graphs = self.tab_widgets.get("graphs")
        if graphs is not None and hasattr(graphs, "rebuild"):
            graphs.rebuild()
        self._fill_gpu_menu()

    def _on_rate(self, index: int) -> None:
        hz = float(self.rate_combo.itemData(index))
        self.ctx.settings.rate_hz = hz
        self.ctx.feed.set_rate(hz)

    def _on_unit(self, index: int) -> None:
        unit = self.unit_combo.itemData(index)
        self.ctx.settings.temp_unit = unit
        for widget in self.tab_widgets.values():
            hook = getattr(widget, "set_unit", None)
            if callable(hook):
                hook(unit)

    def _on_theme(self, index: int) -> None:
        name = self.theme_combo.itemData(index)
        self.ctx.settings.theme = name
        app = QtWidgets.QApplication.instance()
        if app is not None:
            theme.apply(app, name)
        for widget in self.tab_widgets.values():
            hook = getattr(widget, "apply_theme", None)
            if callable(hook):
                hook()
        if self.ctx.feed.last_snapshot is not None:
            self.ctx.feed.snapshot.emit(self.ctx.feed.last_snapshot)

    def toggle_pause(self) -> None:
        widget = self.tabs.currentWidget()
        if hasattr(widget, "toggle_pause"):
            widget.toggle_pause()

    def _back_to_live(self) -> None:
        widget = self.tabs.currentWidget()
        if hasattr(widget, "back_to_live"):
            widget.back_to_live()

    # -- status bar -----------------------------------------------------------------------------------------
    def _build_status(self) -> None:
        bar = self.statusBar()
        bar.setSizeGripEnabled(False)
        self.source_label = QtWidgets.QLabel("", bar)
        self.source_label.setAccessibleName("Data source")
        self.rate_label = QtWidgets.QLabel("", bar)
        self.rate_label.setAccessibleName("Sample rate")
        self.age_label = QtWidgets.QLabel("", bar)
        self.age_label.setAccessibleName("Last sample")
        self.stale_label = QtWidgets.QLabel("", bar)
        self.stale_label.setObjectName("staleLabel")
        self.stale_label.setAccessibleName("Telemetry problem")
        self.stale_label.hide()
        if self.ctx.feed.frozen:
            mode = "snapshot: recorded, not sampled"
        elif self.ctx.mode == "snapshot":
            mode = "root folder: its files are re-read each sample (they may change)"
        else:
            mode = {"live": "this machine", "demo": "demo recording"}.get(self.ctx.mode, self.ctx.mode)
        self.source_label.setText(f"Backend: {self.ctx.feed.backend_name} · {mode}")
        self.source_label.setToolTip(self.ctx.mode_reason)
        bar.addWidget(self.source_label)
        bar.addWidget(self.stale_label)
        bar.addPermanentWidget(self.rate_label)
        bar.addPermanentWidget(self.age_label)

    def _update_rate_label(self) -> None:
        if self.ctx.feed.frozen:  # the recording's own time, never the viewer's clock
            set_text(self.rate_label, _capital(self.ctx.feed.recorded_text()))
            return
        if self.ctx.mode == "demo":  # a replay of a recording, not sampling (issue 10 demo flaw)
            from rocmdesk.wording import demo_replay_text

            target = (getattr(self.ctx, "extras", None) or {}).get("target")
            captured = getattr(getattr(target, "machine", None), "captured", None)
            set_text(self.rate_label, _capital(demo_replay_text(self.shown_demo(), captured)))
            return
        set_text(self.rate_label, f"Sampling at {self.ctx.feed.rate_hz:g} Hz")

    def _update_age(self) -> None:
        if self.ctx.feed.frozen or self.ctx.mode == "demo":  # no "just now" for a recording
            set_text(self.age_label, "")
            self.age_label.hide()
            return
        age = self.ctx.feed.age()
        set_text(self.age_label, f"Last sample: {fmt_age(age)}")

    def _on_stale(self, stale: bool, reason: str) -> None:
        set_text(self.stale_label, f"⚠ {reason}" if stale else "")
        self.stale_label.setVisible(stale)
        self._update_age()

    def _on_first_snapshot(self, _snapshot) -> None:
        if not self._gpu_menu_filled:
            self._gpu_menu_filled = True
            self._fill_gpu_menu()
        # shown when they change: the same error repeated every sample replaced a GPU event
        # (reset, wedge) in the status bar within a second
        errors = tuple(_snapshot.errors)
        if errors and errors != self._shown_errors:
            self.statusBar().showMessage("; ".join(errors)[:200], 5000)
        self._shown_errors = errors

    def _on_event(self, event) -> None:
        stamp = time.strftime("%H:%M:%S", time.localtime(event.timestamp))
        self.statusBar().showMessage(f"{stamp} {event.detail}", 15000)

    # -- screenshots ----------------------------------------------------------------------------------------
    def grab_tab(self) -> QtGui.QPixmap:
        return self.tabs.currentWidget().grab()

    def default_screenshot_path(self) -> str:
        """A new file in the pictures folder: two screenshots of a tab in the same second get -2, -3…
        (the second one silently replaced the first)."""
        folder = str(pictures_dir())
        key = self.current_tab_key() or "window"
        stem = os.path.join(folder, time.strftime(f"rocmdesk-{key}-%Y%m%d-%H%M%S"))
        path, n = f"{stem}.png", 1
        while os.path.exists(path):
            n += 1
            path = f"{stem}-{n}.png"
        return path

    def save_screenshot(self, path: str | None = None, whole_window: bool = False) -> str | None:
        """Save a PNG of the current tab (or the whole window); returns the path, None on failure."""
        path = path or self.default_screenshot_path()
        from rocmdesk.ui.na_notes import with_na_notes

        shown = self if whole_window else self.tabs.currentWidget()
        image = with_na_notes(shown, shown.grab()).image  # a PNG has no tooltips: N/A reasons go on it
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        except OSError as exc:
            self.statusBar().showMessage(f"Screenshot not saved: {exc}", 8000)
            return None
        if not image.save(path, "PNG"):
            self.statusBar().showMessage(f"Screenshot not saved: cannot write {path}", 8000)
            return None
        self.statusBar().showMessage(f"Screenshot saved to {path}", 8000)
        return path

    # -- other sources --------------------------------------------------------------------------------------
    def choose_root(self) -> None:
        folder = QtWidgets.QFileDialog.getExistingDirectory(self, "Open a root folder (a copy of / with sys/…)")
        if folder and self.switch_source is not None:
            self.switch_source("root", folder)

    def choose_snapshot(self) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(self, "Open a rocmdesk snapshot", "",
                                                        "rocmdesk bundles (*.tar *.tar.* *.rocmdesk);;All files (*)")
        if path and self.switch_source is not None:
            self.switch_source("bundle", path)

    # -- geometry and closing --------------------------------------------------------------------------------
    def _title(self) -> str:
        """The window title names the kind of source, so a task switcher tells a customer's machine
        from this one."""
        return f"rocmdesk — {source_kind_text(self.ctx)}"

    def _restore(self) -> None:
        """Geometry, layout and tab from the settings; anything unusable falls back to the default."""
        s = self.ctx.settings
        geometry = decode_hex(s.geometry)
        restored = geometry is not None and self.restoreGeometry(geometry)
        if s.geometry and not restored:
            log.info("settings: saved window geometry is not usable; opening at the default size")
        if restored:
            self._keep_on_screen()
        else:
            self.resize(default_size(self._available_area()))
        state = decode_hex(s.window_state)
        if state is not None and not self.restoreState(state, STATE_VERSION):
            log.info("settings: saved window layout is from another version; using the default layout")
        if s.window_state and state is None:
            log.info("settings: saved window layout is not valid hex; using the default layout")
        self._enforce_layout()
        if not self.show_tab(s.last_tab):
            self.tabs.setCurrentIndex(0)

    def _enforce_layout(self) -> None:
        """The toolbar is fixed at the top: a layout saved by another build must not hide or move it."""
        if self.toolBarArea(self.toolbar) != QtCore.Qt.ToolBarArea.TopToolBarArea:
            log.info("settings: saved layout moved the toolbar; putting it back at the top")
            self.addToolBar(QtCore.Qt.ToolBarArea.TopToolBarArea, self.toolbar)
        if self.toolbar.isHidden():
            self.toolbar.setVisible(True)

    def _available_area(self) -> QtCore.QRect | None:
        screen = self.screen() or QtGui.QGuiApplication.primaryScreen()
        return screen.availableGeometry() if screen is not None else None

    def _keep_on_screen(self) -> None:
        """A window saved on a monitor that is gone (or a larger one) comes back where it can be seen."""
        screens = [screen.availableGeometry() for screen in QtGui.QGuiApplication.screens()]
        if not screens:
            return
        primary = QtGui.QGuiApplication.primaryScreen()
        fallback = primary.availableGeometry() if primary is not None else screens[0]
        placed = fit_on_screen(self.geometry(), screens, fallback)
        if placed != self.geometry():
            log.info("settings: saved window position %s is off screen; moved to %s",
                     self.geometry().getRect(), placed.getRect())
            self.setGeometry(placed)

    def remember(self) -> None:
        s = self.ctx.settings
        s.geometry = bytes(self.saveGeometry().toHex()).decode("ascii")
        s.window_state = bytes(self.saveState(STATE_VERSION).toHex()).decode("ascii")
        s.last_tab = self.current_tab_key() or s.last_tab

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:
        if self.save_settings_on_close:
            self.remember()
            self.ctx.settings.save()
        self._age_timer.stop()
        self.ctx.feed.stop()
        super().closeEvent(event)
