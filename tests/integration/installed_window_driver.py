"""Drive every toolbar action and menu entry of the *installed* rocmdesk window (issue 10, item 6).

Run by tests/integration/test_packaging.py, never imported by pytest:

    /usr/bin/python3 -I installed_window_driver.py CONFIG_JSON

CONFIG_JSON holds ``sys_path`` (what the launcher /usr/bin/rocmdesk puts in front of sys.path, read from
the launcher itself), ``out`` (a folder for the files the window writes) and ``root`` (a root folder for
"Open root folder…"). With ``-I`` and that prefix, the modules imported are exactly the launcher's: the
package's own code and vendor folder, and the distribution's python3-* packages for the rest (Debian 12:
platformdirs 2.6, whose missing ``user_pictures_dir`` broke the Screenshot button).

The window opens in demo mode like ``rocmdesk --demo``. The entries are enumerated from the window itself
(its QActions, the menu bar and the toolbar's menus and combo boxes, the plots' context menus), so an
action added later is driven here or reported as having no check. File dialogs return fixed paths in the
out folder. Every entry's effect is checked (a PNG, a CSV with a header and rows, a saved report, the
clipboard, a bundle that reopens, the window switching source); every log record at WARNING or above, every
uncaught exception and every Qt critical message is collected. One JSON object is printed on the last line.
"""

from __future__ import annotations

import faulthandler
import json
import sys

faulthandler.enable()  # a crash in Qt prints where it happened
CONFIG = json.loads(sys.argv[1])
sys.path[:0] = CONFIG["sys_path"]  # exactly what /usr/bin/rocmdesk does before importing rocmdesk

import csv  # noqa: E402
import importlib  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from importlib import metadata  # noqa: E402
from pathlib import Path  # noqa: E402

OUT = Path(CONFIG["out"])
HOME = Path(os.environ["HOME"])
PICTURES = Path(CONFIG["pictures"])
STARTED = time.monotonic()

# -- what went wrong, collected rather than raised (one bad entry must not hide the others) ---------------
failures: list[str] = []
log_records: list[dict] = []
uncaught: list[str] = []
qt_messages: list[dict] = []
checked: list[dict] = []


class Collect(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info:
            text += "\n" + "".join(traceback.format_exception(*record.exc_info))
        log_records.append({"level": record.levelname, "logger": record.name, "message": text})


logging.basicConfig(level=logging.INFO, handlers=[Collect(level=logging.WARNING)])


def _excepthook(kind, value, tb) -> None:
    text = "".join(traceback.format_exception(kind, value, tb))
    uncaught.append(text)
    print(text, file=sys.stderr, flush=True)


sys.excepthook = _excepthook  # PySide6 reports an exception raised in a slot here
threading.excepthook = lambda args: uncaught.append(
    "".join(traceback.format_exception(args.exc_type, args.exc_value, args.exc_traceback)))

from PySide6 import QtCore, QtGui, QtWidgets  # noqa: E402


def _qt_message(kind, _context, message) -> None:
    qt_messages.append({"kind": getattr(kind, "name", str(kind)), "message": message})


QtCore.qInstallMessageHandler(_qt_message)


def check(entry: str, ok: bool, effect: str) -> None:
    print(f"{'ok ' if ok else 'BAD'} {entry}: {effect}", file=sys.stderr, flush=True)
    checked.append({"entry": entry, "ok": bool(ok), "effect": effect})
    if not ok:
        failures.append(f"{entry}: {effect}")


# -- file dialogs and message boxes: fixed answers, every call recorded -----------------------------------
class Dialogs:
    """Stands in for QFileDialog and QMessageBox: the next answer is set before an entry is driven."""

    def __init__(self) -> None:
        self.answer: str | None = None
        self.calls: list[dict] = []

    def _take(self, kind: str, caption: str) -> str:
        self.calls.append({"kind": kind, "caption": caption, "answer": self.answer})
        answer, self.answer = self.answer, None
        if answer is None:
            failures.append(f"unexpected {kind} dialog {caption!r}")
            return ""
        return answer

    def save(self, _parent=None, caption="", _dir="", _filter="", *_a, **_k):
        return self._take("save-file", caption), ""

    def open(self, _parent=None, caption="", _dir="", _filter="", *_a, **_k):
        return self._take("open-file", caption), ""

    def folder(self, _parent=None, caption="", *_a, **_k):
        return self._take("folder", caption)

    def message(self, kind: str):
        def box(_parent=None, title="", text="", *_a, **_k):
            self.calls.append({"kind": kind, "caption": title, "text": text})
            failures.append(f"message box {kind} {title!r}: {text}")
            return QtWidgets.QMessageBox.StandardButton.Cancel
        return staticmethod(box)


DIALOGS = Dialogs()
QtWidgets.QFileDialog.getSaveFileName = staticmethod(DIALOGS.save)
QtWidgets.QFileDialog.getOpenFileName = staticmethod(DIALOGS.open)
QtWidgets.QFileDialog.getExistingDirectory = staticmethod(DIALOGS.folder)
for _kind in ("warning", "critical", "information", "question"):
    setattr(QtWidgets.QMessageBox, _kind, DIALOGS.message(_kind))

from rocmdesk.ui import theme  # noqa: E402
from rocmdesk.ui.app import Controller, make_app  # noqa: E402
from rocmdesk.ui.settings import Settings, settings_path  # noqa: E402
from rocmdesk.ui.sources import startup_source  # noqa: E402

APP = make_app(["rocmdesk"])


def spin(seconds: float = 0.05) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        APP.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 20)
        time.sleep(0.005)


def wait_until(condition, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        spin(0.02)
    return bool(condition())


def clean(text: str) -> str:
    return text.replace("&", "")


# -- the entries of a window -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Entry:
    """One thing a user can trigger: where it is (toolbar, menu path, window shortcut, plot menu) and its text."""

    where: str
    name: str

    def label(self) -> str:
        return f"{self.where}: {self.name}"


def popup(menu: QtWidgets.QMenu) -> None:
    """Open and close a menu, as a click would, so menus filled when shown (Demo machine) are complete."""
    menu.popup(QtCore.QPoint(20, 20))
    spin(0.02)
    menu.hide()
    spin(0.01)


def menu_entries(menu: QtWidgets.QMenu, path: list[str]) -> list[Entry]:
    popup(menu)
    out = []
    for action in menu.actions():
        if action.isSeparator() or not action.isVisible():
            continue
        sub = action.menu()
        if sub is not None:
            out += menu_entries(sub, [*path, clean(action.text())])
        else:
            out.append(Entry("menu " + " ▸ ".join(path), clean(action.text())))
    return out


def toolbar_widgets(window) -> list[tuple[QtGui.QAction, QtWidgets.QWidget | None]]:
    return [(action, window.toolbar.widgetForAction(action)) for action in window.toolbar.actions()]


def enumerate_entries(window) -> tuple[list[Entry], list[str]]:
    """Everything triggerable in the window; the second list names QActions found nowhere else."""
    entries: list[Entry] = []
    seen: set[int] = set()
    for top in window.menuBar().actions():
        seen.add(id(top))
        if top.menu() is not None:
            entries += menu_entries(top.menu(), [clean(top.text())])
    for action, widget in toolbar_widgets(window):
        if isinstance(widget, QtWidgets.QToolButton) and widget.menu() is not None:
            entries += menu_entries(widget.menu(), [widget.accessibleName() or "toolbar button"])
        elif isinstance(widget, QtWidgets.QComboBox):
            entries += [Entry("toolbar " + widget.accessibleName(), widget.itemText(i)) for i in range(widget.count())]
        elif isinstance(widget, QtWidgets.QToolButton):
            entries.append(Entry("toolbar", clean(action.text())))
        elif type(widget) in (QtWidgets.QLabel, QtWidgets.QWidget):
            continue  # the title and the spacer: nothing to trigger
        else:
            entries.append(Entry("toolbar widget", type(widget).__name__))
    for action in window.actions():
        entries.append(Entry("window shortcut " + action.shortcut().toString(), clean(action.text())))
    entries.append(Entry("toolbar itself", clean(window.toolbar.toggleViewAction().text())))
    known = {id(window.toolbar.toggleViewAction())}
    for menu in window.findChildren(QtWidgets.QMenu):
        known |= {id(a) for a in menu.actions()} | {id(menu.menuAction())}
    known |= {id(a) for a in window.actions()} | {id(a) for a in window.toolbar.actions()} | seen
    orphans = []
    for action in window.findChildren(QtGui.QAction):
        if id(action) in known or action.isSeparator():
            continue
        parent = action.parent()
        if type(parent).__name__ == "GraphicsScene":  # pyqtgraph's right-click menu of a plot
            entries.append(Entry("plot menu " + plot_name(window, parent), clean(action.text())))
        elif isinstance(parent, QtWidgets.QLineEdit) and action.objectName() == "_q_qlineeditclearaction":
            entries.append(Entry("clear button of " + (parent.accessibleName() or parent.placeholderText()
                                                       or "a search field"), "clear"))
        else:
            orphans.append(f"{type(parent).__name__}/{action.objectName()}/{action.text()!r}")
    return entries, orphans


def plot_name(window, scene) -> str:
    for view in window.findChildren(QtWidgets.QGraphicsView):
        if view.scene() is scene:
            tab = tab_of(window, view)
            return f"{tab} ({view.objectName() or type(view).__name__})"
    return "(not shown)"


def tab_of(window, widget) -> str:
    for key, tab in window.tab_widgets.items():
        if tab is widget or tab.isAncestorOf(widget):
            return key
    return "banner" if window.banner.isAncestorOf(widget) else "window"


# -- finding the live object of an entry (menus are rebuilt when they change) ---------------------------------
def find_action(window, entry: Entry) -> QtGui.QAction | None:
    if entry.where.startswith("menu "):
        path = entry.where[len("menu "):].split(" ▸ ")
        menu = None
        for _action, widget in toolbar_widgets(window):
            if isinstance(widget, QtWidgets.QToolButton) and widget.menu() is not None \
                    and widget.accessibleName() == path[0]:
                menu = widget.menu()
        for top in window.menuBar().actions():
            if clean(top.text()) == path[0]:
                menu = top.menu()
        for step in path[1:]:
            if menu is None:
                return None
            popup(menu)
            menu = next((a.menu() for a in menu.actions() if a.menu() is not None and clean(a.text()) == step), None)
        if menu is None:
            return None
        popup(menu)
        return next((a for a in menu.actions() if clean(a.text()) == entry.name), None)
    if entry.where.startswith("window shortcut"):
        return next((a for a in window.actions() if clean(a.text()) == entry.name), None)
    if entry.where == "toolbar":
        return next((a for a in window.toolbar.actions() if clean(a.text()) == entry.name), None)
    if entry.where == "toolbar itself":
        return window.toolbar.toggleViewAction()
    return None


def pngs() -> set[Path]:
    return set(PICTURES.glob("*.png")) if PICTURES.is_dir() else set()


def ready(window) -> bool:
    widget = window.tabs.currentWidget()
    hook = getattr(widget, "screenshot_ready", None)
    return not callable(hook) or bool(hook())


# -- what each kind of entry must do -----------------------------------------------------------------------------
def drive_show_tab(window, entry: Entry, action: QtGui.QAction) -> None:
    title = entry.name.removeprefix("Show ")
    key = next((k for k, t in window._tab_titles.items() if t == title), None)
    action.trigger()
    spin(0.05)
    check(entry.label(), key is not None and window.current_tab_key() == key,
          f"current tab is {window.current_tab_key()!r}")
    if key is None:
        return
    # the Screenshot button on every tab (the PNG of what that tab shows)
    wait_until(lambda: ready(window), 60)
    before = pngs()
    find_action(window, Entry("toolbar", "Screenshot")).trigger()
    new = sorted(pngs() - before)
    image = QtGui.QImage(str(new[0])) if len(new) == 1 else QtGui.QImage()
    size = window.tabs.currentWidget().size()
    ok = len(new) == 1 and new[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"rocmdesk-{key}-" in new[0].name \
        and not image.isNull() and image.width() >= size.width() and image.height() >= size.height()
    check(f"toolbar: Screenshot of {key}", ok,
          f"{[p.name for p in new]} {image.width()}x{image.height()} for a {size.width()}x{size.height()} tab; "
          f"status bar: {window.statusBar().currentMessage()!r}")


def drive_screenshot(window, entry: Entry, action: QtGui.QAction) -> None:
    before = pngs()
    action.trigger()
    new = sorted(pngs() - before)
    check(entry.label(), len(new) == 1 and new[0].parent == PICTURES and new[0].stat().st_size > 1000,
          f"wrote {[str(p) for p in new]} (XDG_PICTURES_DIR of user-dirs.dirs is {PICTURES})")


def drive_pause(window, entry: Entry, action: QtGui.QAction) -> None:
    window.show_tab("overview")
    spin(0.02)
    disabled_elsewhere = not action.isEnabled()
    window.show_tab("graphs")
    spin(0.02)
    graphs = window.tab_widgets["graphs"]
    was = graphs.paused
    action.trigger()
    paused = graphs.paused
    action.trigger()
    check(entry.label(), disabled_elsewhere and paused != was and graphs.paused == was,
          f"disabled on Overview: {disabled_elsewhere}; on Graphs paused {was} -> {paused} -> {graphs.paused}")


def drive_back_to_live(window, entry: Entry, action: QtGui.QAction) -> None:
    window.show_tab("graphs")
    spin(0.02)
    graphs = window.tab_widgets["graphs"]
    graphs.follow = False  # what dragging the time axis does
    graphs.live_button.show()
    action.trigger()
    spin(0.02)
    check(entry.label(), graphs.follow and not graphs.live_button.isVisible(),
          f"following the newest sample: {graphs.follow}")


def drive_quit(window, entry: Entry, action: QtGui.QAction) -> None:
    path = settings_path()
    before = path.stat().st_mtime_ns if path.exists() else None
    action.trigger()
    spin(0.1)
    saved = path.exists() and path.stat().st_mtime_ns != before
    check(entry.label(), not window.isVisible() and saved and path.is_relative_to(HOME),
          f"window closed: {not window.isVisible()}; settings saved to {path}: {saved}")


def drive_toolbar_toggle(window, entry: Entry, action: QtGui.QAction) -> None:
    action.trigger()
    spin(0.02)
    hidden = not window.toolbar.isVisible()
    action.trigger()
    spin(0.02)
    check(entry.label(), hidden and window.toolbar.isVisible(), f"hidden after one trigger: {hidden}, back after two")


def drive_combo(window, entry: Entry) -> None:
    name = entry.where.removeprefix("toolbar ")
    combo = next(w for _a, w in toolbar_widgets(window)
                 if isinstance(w, QtWidgets.QComboBox) and w.accessibleName() == name)
    index = combo.findText(entry.name)
    previous = combo.currentIndex()
    data = combo.itemData(index)
    if not combo.isEnabled():
        check(entry.label(), window.ctx.feed.frozen and name == "Sample rate",
              f"disabled ({combo.toolTip()!r})")
        return
    combo.setCurrentIndex(index)
    spin(0.02)
    settings, feed = window.ctx.settings, window.ctx.feed
    effects = {"Sample rate": lambda: (settings.rate_hz == data and feed.rate_hz == data, f"rate {feed.rate_hz} Hz"),
               "Temperature unit": lambda: (settings.temp_unit == data, f"unit {settings.temp_unit}"),
               "Theme": lambda: (settings.theme == data and APP.palette() is not None, f"theme {settings.theme}")}
    if name not in effects:
        check(entry.label(), False, "no check for this combo box")
        return
    ok, effect = effects[name]()
    check(entry.label(), ok, effect)
    combo.setCurrentIndex(previous)
    spin(0.02)


def drive_gpu(window, entry: Entry, action: QtGui.QAction) -> None:
    pcis = [g.pci for g in window.ctx.feed.gpus]
    if entry.name == "Show all GPUs":
        window.set_selected_gpus(pcis[:1])
        find_action(window, entry).trigger()
        spin(0.02)
        check(entry.label(), window.ctx.settings.selected_gpus == [] and
              window.gpu_button.text() == f"GPUs ({len(pcis)}/{len(pcis)})", window.gpu_button.text())
        return
    pci = re.search(r"\(([0-9a-f:.]+)\)$", entry.name).group(1)
    action.trigger()  # off
    spin(0.02)
    off = list(window.ctx.settings.selected_gpus)
    find_action(window, entry).trigger()  # on again (the menu was rebuilt)
    spin(0.02)
    check(entry.label(), off == [p for p in pcis if p != pci] and window.ctx.settings.selected_gpus == [],
          f"off: {len(off)} of {len(pcis)} shown; on again: all")


def drive_plot_export(window, entry: Entry) -> None:
    """pyqtgraph's "Export..." lives in the scene's context menu, which only a ViewBox menu shows; rocmdesk
    turns those off (setMenuEnabled(False) in plot_grid and process_plot), so a right-click on the plot
    must open no menu at all (an entry nobody can reach is not one to drive)."""
    from PySide6.QtTest import QTest

    tab = entry.where.removeprefix("plot menu ").split(" ")[0]
    window.show_tab(tab)
    spin(0.1)
    views = [v for v in window.tab_widgets[tab].findChildren(QtWidgets.QGraphicsView)
             if v.isVisible() and "plot menu " + plot_name(window, v.scene()) == entry.where]
    popups = []
    for view in views:
        QTest.mouseClick(view.viewport(), QtCore.Qt.MouseButton.RightButton, QtCore.Qt.KeyboardModifier.NoModifier,
                         view.viewport().rect().center())
        spin(0.05)
        popup = QtWidgets.QApplication.activePopupWidget()
        if popup is not None:
            popups.append([clean(a.text()) for a in popup.actions()])
            popup.hide()
    check(entry.label(), bool(views) and not popups,
          f"right-click on {len(views)} plot(s) opened {popups or 'no menu'}")


def drive_clear(window, entry: Entry) -> None:
    """A search field's clear button (the QLineEdit's own action), clicked where it is drawn."""
    from PySide6.QtTest import QTest

    edits = [e for e in window.findChildren(QtWidgets.QLineEdit) if e.isClearButtonEnabled()
             and e.findChild(QtGui.QAction, "_q_qlineeditclearaction") is not None]
    results = []
    for edit in edits:
        window.show_tab(tab_of(window, edit))
        edit.setText("gpu")
        spin(0.3)  # the button fades in
        buttons = [b for b in edit.findChildren(QtWidgets.QToolButton) if b.isVisible()]
        if buttons:
            QTest.mouseClick(buttons[0], QtCore.Qt.MouseButton.LeftButton)
            spin(0.05)
        results.append(bool(buttons) and edit.text() == "")
    check(entry.label(), bool(results) and all(results), f"{sum(results)} of {len(results)} field(s) emptied")


def drive_demo_menu(window, entry: Entry, action: QtGui.QAction, controller) -> object:
    """The shown demo machine stays (checked); another replaces the window. Returns the new window."""
    current = window.shown_demo()
    if action.isChecked():
        action.trigger()
        spin(0.1)
        check(entry.label(), controller.session.window is window and window.shown_demo() == current,
              f"already shown ({current}): nothing reopened")
        return window
    name = action.objectName().removeprefix("demo-")
    action.trigger()
    switched = wait_until(lambda: controller.session.window is not window, 30)
    new = controller.session.window
    wait_until(lambda: not controller.session.feed.loading, 30)
    check(entry.label(), switched and new.shown_demo() == name and new.isVisible(),
          f"window now shows demo machine {new.shown_demo()!r}: {new.windowTitle()}")
    return new


def drive_settings(window, entry: Entry, action: QtGui.QAction) -> None:
    """Settings ▸ alerts: the two on/off entries flip their setting and back; a throttling delay is chosen."""
    settings = window.ctx.settings
    if entry.where == "menu Settings ▸ Throttling alert":
        previous = settings.alert_throttle_s
        action.trigger()
        spin(0.02)
        chosen = settings.alert_throttle_s
        check(entry.label(), chosen == action.data() and action.isChecked(), f"throttling alert after {chosen} s")
        settings.alert_throttle_s = previous
        return
    field = {"Desktop notifications": "alerts_enabled", "Tray icon with the hottest GPU": "tray_icon"}.get(entry.name)
    if field is None:
        check(entry.label(), False, "no check for this entry: add one to installed_window_driver.py")
        return
    was = getattr(settings, field)
    action.trigger()
    spin(0.02)
    flipped = getattr(settings, field)
    action.trigger()
    spin(0.02)
    check(entry.label(), flipped == (not was) and getattr(settings, field) == was and action.isChecked() == was,
          f"{field}: {was} -> {flipped} -> {getattr(settings, field)}")


def drive_entry(window, entry: Entry, controller) -> object:
    """Trigger one entry and check its effect; returns the window shown afterwards."""
    if entry.where.startswith("toolbar ") and entry.where not in ("toolbar itself", "toolbar widget"):
        drive_combo(window, entry)
        return window
    if entry.where.startswith("plot menu "):
        drive_plot_export(window, entry)
        return window
    if entry.where.startswith("clear button of "):
        drive_clear(window, entry)
        return window
    action = find_action(window, entry)
    if action is None:
        check(entry.label(), False, "not found any more")
        return window
    if not action.isEnabled() and entry.name != "Pause":
        # a disabled entry is only right when it says why (an explanation, like the temperature alert's)
        said = action.toolTip() and action.toolTip() != action.text().replace("&", "")
        check(entry.label(), bool(said) and entry.where.startswith("menu "), f"disabled, says {action.toolTip()!r}")
        return window
    if entry.where.startswith("window shortcut") and entry.name.startswith("Show "):
        drive_show_tab(window, entry, action)
    elif entry.where.startswith("menu GPUs") or entry.where.startswith("menu Choose the GPUs shown"):
        drive_gpu(window, entry, action)
    elif entry.where.startswith("menu Settings"):
        drive_settings(window, entry, action)
    elif entry.where == "menu Help ▸ Demo machine":
        return drive_demo_menu(window, entry, action, controller)
    else:
        handler = {"Screenshot": drive_screenshot, "Pause": drive_pause, "Back to live": drive_back_to_live,
                   "Quit": drive_quit, "Main": drive_toolbar_toggle}.get(entry.name)
        if handler is None:
            check(entry.label(), False, "no check for this entry: add one to installed_window_driver.py")
        else:
            handler(window, entry, action)
    return window


ENTRIES: set[str] = set()


def sweep(window, controller, label: str) -> tuple[list[Entry], object]:
    """Every entry of this window, the ones that replace the window (demo machines, Quit) last."""
    entries, orphans = enumerate_entries(window)
    ENTRIES.update(e.label() for e in entries)
    for orphan in orphans:
        failures.append(f"{label}: a QAction in no menu, toolbar or shortcut list: {orphan}")
    later = [e for e in entries if e.name == "Quit" or e.where == "menu Help ▸ Demo machine"]
    for entry in [e for e in entries if e not in later]:
        window = drive_entry(window, entry, controller)
    for entry in sorted(later, key=lambda e: e.name == "Quit"):
        if entry.name == "Quit":
            continue  # the caller quits the last window
        window = drive_entry(window, entry, controller)
    return entries, window


# -- the tab commands the issue names (buttons, not QActions) -------------------------------------------------------
def button(window, tab: str, text: str) -> QtWidgets.QPushButton:
    host = window.banner if tab == "banner" else window.tab_widgets[tab]
    return next(b for b in host.findChildren(QtWidgets.QPushButton) if b.text() == text)


def export_csv(window, min_rows: int) -> None:
    window.show_tab("graphs")
    spin(0.1)
    path = OUT / "history.csv"
    DIALOGS.answer = str(path)
    button(window, "graphs", "Export CSV…").click()
    spin(0.05)
    rows = list(csv.reader(path.open(newline=""))) if path.is_file() else []
    header = rows[0] if rows else []
    ok = len(rows) - 1 >= min_rows and header and header[0].lower().startswith("time") and \
        all(len(r) == len(header) for r in rows) and any(h.endswith("(°C)") or "temp" in h for h in header)
    check("graphs: Export CSV…", bool(ok), f"{len(rows) - 1 if rows else 0} rows, header {header[:3]}…; "
          f"status bar: {window.statusBar().currentMessage()!r}")


def report_commands(window, stem: str) -> Path:
    """Copy as Markdown, Save report… (HTML and Markdown), Refresh and Capture bundle…; returns the bundle."""
    window.show_tab("report")
    tab = window.tab_widgets["report"]
    wait_until(lambda: tab.report is not None and tab.wait_idle(50), 60)
    button(window, "report", "Copy as Markdown").click()
    clip = QtGui.QGuiApplication.clipboard().text()
    check(f"{stem} report: Copy as Markdown", clip == tab.markdown and clip.startswith("## rocmdesk report"),
          f"clipboard holds {len(clip)} characters: {clip[:40]!r}")
    for suffix, head in ((".html", "<!doctype html"), (".md", "## rocmdesk report")):
        path = OUT / f"{stem}-report{suffix}"
        DIALOGS.answer = str(path)
        button(window, "report", "Save report…").click()
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        check(f"{stem} report: Save report… as {suffix}", text.lower().startswith(head) and len(text) > 500,
              f"{len(text)} characters; status {tab.status.text()!r}")
    before = tab.report
    button(window, "report", "Refresh").click()
    check(f"{stem} report: Refresh", wait_until(lambda: tab.report is not before and tab.wait_idle(50), 60),
          "a new report was built")
    bundle = OUT / f"{stem}-bundle.tar.gz"
    button(window, "report", "Capture bundle…").click()
    wait_until(lambda: tab.preview_dialog is not None and tab.preview_dialog.isVisible(), 60)
    dialog = tab.preview_dialog
    if dialog is None:
        check(f"{stem} report: Capture bundle…", False, f"no preview; status {tab.status.text()!r}")
        return bundle
    DIALOGS.answer = str(bundle)
    box = dialog.findChild(QtWidgets.QDialogButtonBox)
    box.button(QtWidgets.QDialogButtonBox.StandardButton.Save).click()
    spin(0.05)
    from rocmdesk.report.bundle import open_bundle

    try:
        with open_bundle(bundle) as opened:
            reopened = f"reopens with {len(opened.manifest.files)} files" if hasattr(opened.manifest, "files") \
                else "reopens"
            ok = bundle.is_file() and not dialog.isVisible()
    except Exception as exc:
        reopened, ok = f"does not reopen: {exc}", False
    check(f"{stem} report: Capture bundle…", ok, f"{bundle.name} {reopened}; status {tab.status.text()!r}")
    return bundle


def run_diagnosis(window, stem: str) -> dict:
    window.show_tab("diagnosis")
    tab = window.tab_widgets["diagnosis"]
    wait_until(lambda: tab.report is not None and not tab.running, 120)
    before = tab.report
    button(window, "diagnosis", "Run all checks").click()
    done = wait_until(lambda: tab.report is not before and tab.report is not None and not tab.running, 120)
    results = {r.id: (r.status.value, r.reason) for r in tab.report.results} if tab.report else {}
    check(f"{stem} diagnosis: Run all checks", done and len(results) > 20, f"{len(results)} checks ran")
    return {"findings": sorted({f.id for f in tab.report.findings}) if tab.report else [], "results": results}


def switch_by_banner(window, controller, text: str, answer: str, stem: str):
    DIALOGS.answer = answer
    button(window, "banner", text).click()
    switched = wait_until(lambda: controller.session.window is not window, 60)
    new = controller.session.window
    wait_until(lambda: not controller.session.feed.loading and bool(controller.session.feed.latest), 60)
    check(f"banner: {text} ({stem})", switched and new.isVisible(), f"window now: {new.windowTitle()!r}")
    return new


def clipboard() -> str:
    return QtGui.QGuiApplication.clipboard().text()


def select_finding(tab) -> bool:
    """Select the first finding in the Diagnosis tree (areas > checks > findings)."""
    stack = [tab.tree.topLevelItem(i) for i in range(tab.tree.topLevelItemCount())]
    while stack:
        item = stack.pop(0)
        tab.tree.setCurrentItem(item)
        if tab.selected_finding() is not None:
            return True
        stack[:0] = [item.child(i) for i in range(item.childCount())]
    return False


def drive_diagnosis_buttons(window, stem: str) -> None:
    """Copy as text, Copy evidence, Re-run selected, and Fix… (for a demo: the steps dialog, its Copy steps and
    Save as script…, and no Apply)."""
    window.show_tab("diagnosis")
    tab = window.tab_widgets["diagnosis"]
    wait_until(lambda: tab.report is not None and not tab.running, 120)
    button(window, "diagnosis", "Copy as text").click()
    check(f"{stem} diagnosis: Copy as text", clipboard() == tab.as_text() and len(clipboard()) > 200,
          f"clipboard holds {len(clipboard())} characters")
    if not select_finding(tab):
        check(f"{stem} diagnosis: a finding to select", False, "no finding in the tree")
        return
    button(window, "diagnosis", "Copy evidence").click()
    check(f"{stem} diagnosis: Copy evidence", clipboard() == tab.evidence_text() and bool(clipboard()),
          f"clipboard: {clipboard()[:80]!r}")
    rerun: list = []
    tab.checkRerun.connect(rerun.append)
    selected = tab._selected_check_id()
    button(window, "diagnosis", "Re-run selected").click()
    check(f"{stem} diagnosis: Re-run selected", wait_until(lambda: bool(rerun), 60) and rerun[0].id == selected,
          f"re-ran {[r.id for r in rerun]} (selected {selected})")
    fix = button(window, "diagnosis", "Fix…")
    if not fix.isEnabled():
        check(f"{stem} diagnosis: Fix…", bool(fix.toolTip()), f"disabled: {fix.toolTip()!r}")
        return
    fix.click()
    wait_until(lambda: any(d.isVisible() for d in window.findChildren(QtWidgets.QDialog)), 10)
    dialogs = [d for d in window.findChildren(QtWidgets.QDialog) if d.isVisible()]
    dialog = dialogs[0] if dialogs else None
    if dialog is None:
        check(f"{stem} diagnosis: Fix…", False, "no dialog opened")
        return
    texts = {b.text() for b in dialog.findChildren(QtWidgets.QAbstractButton)}
    check(f"{stem} diagnosis: Fix… opens the steps for the demo machine",
          type(dialog).__name__ == "StepsDialog" and not any("Apply" in x for x in texts),
          f"{type(dialog).__name__} {dialog.windowTitle()!r} with buttons {sorted(texts)}")
    copy = next((b for b in dialog.findChildren(QtWidgets.QPushButton) if b.text() == "Copy steps"), None)
    if copy is not None:
        copy.click()
        check(f"{stem} steps dialog: Copy steps", clipboard() == dialog.plan.text(), f"{len(clipboard())} characters")
    save = next((b for b in dialog.findChildren(QtWidgets.QPushButton) if b.text() == "Save as script…"), None)
    if save is not None:
        script = OUT / f"{stem}-fix.sh"
        DIALOGS.answer = str(script)
        save.click()
        text = script.read_text() if script.is_file() else ""
        check(f"{stem} steps dialog: Save as script…", text.startswith("#!") and "set -eu" in text,
              f"{len(text)} characters")
    dialog.reject()
    spin(0.05)


def drive_graph_buttons(window) -> None:
    """Pause, Back to live, Auto Y and One plot per GPU under the graphs."""
    window.show_tab("graphs")
    spin(0.05)
    graphs = window.tab_widgets["graphs"]
    pause = button(window, "graphs", "Pause")
    pause.click()
    paused = graphs.paused and pause.text() == "Resume"
    pause.click()
    check("graphs: Pause", paused and not graphs.paused and pause.text() == "Pause", f"paused {paused}, then resumed")
    graphs.follow = False
    graphs.live_button.show()
    button(window, "graphs", "Back to live").click()
    check("graphs: Back to live", graphs.follow and not graphs.live_button.isVisible(), f"following: {graphs.follow}")
    plot = next(iter(graphs.plots))
    graphs.y_zoomed.add(plot)
    graphs.auto_y_button.show()
    button(window, "graphs", "Auto Y").click()
    spin(0.05)
    check("graphs: Auto Y", not graphs.y_zoomed, f"zoomed plots left: {sorted(graphs.y_zoomed)}")
    layout = window.ctx.settings.graph_layout
    multiples = button(window, "graphs", "One plot per GPU")
    was = multiples.isChecked()
    multiples.click()
    spin(0.1)
    now = window.ctx.settings.graph_layout
    multiples.click()
    spin(0.1)
    check("graphs: One plot per GPU", now == ("overlay" if was else "multiples") and multiples.isChecked() == was,
          f"layout {layout} -> {now} -> {window.ctx.settings.graph_layout}")


def drive_profile_buttons(window) -> None:
    """Save as profile… writes under platformdirs' user_config_dir (Debian's 2.6); Delete removes it again."""
    window.show_tab("tuning")
    spin(0.05)
    tab = window.tab_widgets["tuning"]
    QtWidgets.QInputDialog.getText = staticmethod(lambda *_a, **_k: ("driver profile", True))
    button(window, "tuning", "Save as profile…").click()
    spin(0.05)
    files = sorted((HOME / ".config" / "rocmdesk" / "tuning").glob("*")) if (HOME / ".config").is_dir() else []
    saved = tab.profile_list.findText("driver profile") >= 0
    check("tuning: Save as profile…", saved and bool(files), f"listed: {saved}; files {[f.name for f in files]}")
    if not saved:
        return
    tab.profile_list.setCurrentText("driver profile")
    button(window, "tuning", "Delete").click()
    spin(0.05)
    check("tuning: Delete", tab.profile_list.findText("driver profile") < 0,
          f"profiles left: {[tab.profile_list.itemText(i) for i in range(tab.profile_list.count())]}")


# Buttons driven by this script (the key is tab/text), and the ones it leaves to the GUI tests, with the reason.
# A button in neither is a failure: a new command cannot go unnoticed.
BUTTONS_DRIVEN = {"banner/Open root folder…", "banner/Open snapshot…", "graphs/Export CSV…", "graphs/Pause",
                  "graphs/Back to live", "graphs/Auto Y", "graphs/One plot per GPU", "report/Capture bundle…",
                  "report/Copy as Markdown", "report/Refresh", "report/Save report…", "diagnosis/Run all checks",
                  "diagnosis/Copy as text", "diagnosis/Copy evidence", "diagnosis/Re-run selected", "diagnosis/Fix…",
                  "tuning/Save as profile…", "tuning/Delete"}
BUTTONS_ELSEWHERE = {
    "tuning/Apply…": "changes GPU clocks or power through the helper: disabled off the live machine "
                     "(tests/gui/test_trust_no_apply.py, test_demo_machine.py)",
    "tuning/Reset to defaults…": "the same (tests/gui/test_demo_machine.py)",
    "tuning/Apply profile…": "the same (disabled without a live GPU that may be changed)",
    "tuning/Undo…": "undoes a helper change; none exists here (tests/gui/test_changes_view.py)",
    "tuning/Refresh": "re-reads the helper's journal (tests/gui/test_changes_view.py)",
}


def check_buttons_classified(window) -> list[str]:
    keys = sorted({f"{tab_of(window, b)}/{b.text()}" for b in window.findChildren(QtWidgets.QPushButton)})
    for key in keys:
        if key not in BUTTONS_DRIVEN and key not in BUTTONS_ELSEWHERE:
            failures.append(f"button {key} is neither driven here nor listed in BUTTONS_ELSEWHERE")
    return keys


def modules() -> dict:
    """Where each dependency was imported from, and its version (the app imported most of them already)."""
    dists = {"platformdirs": "platformdirs", "zstandard": "zstandard", "psutil": "psutil", "yaml": "PyYAML",
             "pyudev": "pyudev", "packaging": "packaging", "lz4": "lz4", "prometheus_client": "prometheus_client",
             "PySide6": "PySide6-Essentials", "shiboken6": "shiboken6", "pyqtgraph": "pyqtgraph", "numpy": "numpy",
             "rocmdesk": None}
    out = {}
    for name, dist in dists.items():
        by_app = name in sys.modules
        module = importlib.import_module(name)
        version = getattr(module, "__version__", None)
        if dist is not None:
            try:
                version = metadata.version(dist)
            except metadata.PackageNotFoundError:
                pass
        out[name] = {"file": getattr(module, "__file__", None), "version": str(version), "imported_by_app": by_app}
    return out


def main() -> int:
    settings = Settings.load()
    theme.apply(APP, settings.theme)
    controller = Controller(APP, settings, "auto")
    session = controller.show(startup_source(demo=True))  # what `rocmdesk --demo` opens
    window = session.window
    window.resize(1400, 900)
    loaded = wait_until(lambda: not session.feed.loading and bool(session.feed.latest), 60)
    check("demo window opens", loaded and window.isVisible(), window.windowTitle())
    report: dict = {"windows": []}

    # 1. the demo window (8x MI300X): every entry; Help ▸ Demo machine's other machine last
    report["windows"].append(f"demo {window.shown_demo()}")
    export_csv(window, 10)
    demo_bundle = report_commands(window, "demo")
    sweep(window, controller, "demo window")
    window = controller.session.window

    # 2. the other demo machine (opened from Help ▸ Demo machine): its diagnosis has findings
    report["windows"].append(f"demo {window.shown_demo()}")
    report["demo_diagnosis"] = run_diagnosis(window, "second demo")["findings"]
    check("second demo diagnosis", bool(report["demo_diagnosis"]), f"findings {report['demo_diagnosis']}")
    drive_diagnosis_buttons(window, "second demo")
    drive_graph_buttons(window)
    drive_profile_buttons(window)
    check_buttons_classified(window)

    # 3. the bundle captured above, opened from the banner: a frozen snapshot; every entry again
    window = switch_by_banner(window, controller, "Open snapshot…", str(demo_bundle), "snapshot")
    report["windows"].append(window.windowTitle())
    check("snapshot window is frozen", window.ctx.feed.frozen and window.ctx.mode == "snapshot",
          f"mode {window.ctx.mode}, frozen {window.ctx.feed.frozen}")
    report_commands(window, "snapshot")
    sweep(window, controller, "snapshot window")
    window = controller.session.window

    # 4. a root folder (a workstation with a zstd initramfs: Debian's python3-zstandard reads it)
    window = switch_by_banner(window, controller, "Open root folder…", CONFIG["root"], "root folder")
    report["windows"].append(window.windowTitle())
    diagnosis = run_diagnosis(window, "root folder")
    image_check = diagnosis["results"].get("amdgpu-missing-from-initramfs", ("missing", ""))
    check("root folder diagnosis reads the zstd initramfs", image_check[0] == "pass" and ".ko" in image_check[1],
          f"amdgpu-missing-from-initramfs: {image_check}")
    report["root_findings"] = diagnosis["findings"]
    wait_until(lambda: False, 2.2)  # a root folder is sampled at 1 Hz from when it opened
    export_csv(window, 1)
    sweep(window, controller, "root folder window")
    window = controller.session.window

    pushbuttons = check_buttons_classified(window)
    drive_entry(window, Entry("window shortcut " + QtGui.QKeySequence(QtGui.QKeySequence.StandardKey.Quit)
                              .toString(), "Quit"), controller)
    controller.session.close()
    messages: dict[str, int] = {}
    for m in qt_messages:
        messages[f"{m['kind']}: {m['message']}"] = messages.get(f"{m['kind']}: {m['message']}", 0) + 1
    report.update({"entries": sorted(ENTRIES), "modules": modules(), "sys_path": sys.path, "checked": checked,
                   "failures": failures, "log": log_records, "uncaught": uncaught, "qt_messages": messages,
                   "dialogs": DIALOGS.calls,
                   "buttons": pushbuttons, "seconds": round(time.monotonic() - STARTED, 2)})
    print(json.dumps(report, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
