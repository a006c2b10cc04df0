"""Colours and the style sheet for light and dark themes (``system`` follows the desktop)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from PySide6 import QtCore, QtGui, QtWidgets

from rocmdesk.resources import resource_path
from rocmdesk.ui.formatting import Level

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Palette:
    name: str
    window: str
    surface: str  # cards, plots
    surface_alt: str  # chips, meter troughs
    border: str
    text: str
    muted: str
    accent: str
    ok: str
    warm: str
    hot: str
    critical: str
    banner_bg: str
    banner_text: str
    grid: str
    busy: str  # load is not an alarm: calm colours for busy and power history
    power: str
    info: str  # "info" findings, as text
    selection: str  # selected rows and text: never the error colour (a selected finding read as an alarm)
    selection_text: str
    on_critical: str  # text on a critical-coloured chip
    focus: str  # keyboard focus ring
    broken: str  # a check that could not run (not a finding: a colour of its own, purple)

    def level(self, level: Level) -> str:
        return {
            Level.OK: self.ok, Level.WARM: self.warm, Level.HOT: self.hot,
            Level.CRITICAL: self.critical, Level.UNKNOWN: self.muted,
        }[level]


# Every colour that is drawn as text reaches 4.5:1 (WCAG 2.x AA) on window, surface and surface_alt;
# tests/gui/test_theme_contrast.py computes it from these values.
LIGHT = Palette(
    name="light", window="#f3f4f7", surface="#ffffff", surface_alt="#eceef2", border="#dadde4",
    text="#1d2129", muted="#5d6370", accent="#d7263d", ok="#146c31", warm="#735900", hot="#9a4a00",
    critical="#c01f2b", banner_bg="#fff4d6", banner_text="#5c4400", grid="#e4e6eb",
    busy="#3b82f6", power="#d97706", info="#1d4ed8", selection="#cfe3ff", selection_text="#1d2129",
    on_critical="#ffffff", focus="#1d4ed8", broken="#7e22ce",
)
DARK = Palette(
    name="dark", window="#17191e", surface="#21242b", surface_alt="#2c3039", border="#343843",
    text="#e7e9ee", muted="#9ea5b3", accent="#ff5a66", ok="#3fb950", warm="#d9b43a", hot="#f0883e",
    critical="#ff6b6b", banner_bg="#3a3120", banner_text="#f5dea3", grid="#2d313a",
    busy="#60a5fa", power="#fbbf24", info="#7cb4ff", selection="#2f4a73", selection_text="#f2f4f8",
    on_critical="#17191e", focus="#7cb4ff", broken="#c084fc",
)

# Colours drawn as text, and the backgrounds they are drawn on (the contrast test walks these).
TEXT_COLOURS = ("text", "muted", "ok", "warm", "hot", "critical", "info", "broken")
TEXT_BACKGROUNDS = ("window", "surface", "surface_alt")
TEXT_PAIRS = (("banner_text", "banner_bg"), ("selection_text", "selection"), ("on_critical", "critical"))


def relative_luminance(colour: str) -> float:
    """WCAG 2.x relative luminance of ``#rrggbb``."""
    value = colour.lstrip("#")
    channels = [int(value[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_ratio(a: str, b: str) -> float:
    """WCAG contrast ratio of two colours (1 to 21)."""
    high, low = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)

ON_LIGHT, ON_DARK = "#111318", "#ffffff"


def ink_on(colour: str) -> str:
    """Black-ish or white, whichever reads better on ``colour`` (a glyph on a status disc: a white "–" on
    the dark theme's light grey disc was 2.4:1, under WCAG's 3:1 for graphics)."""
    return ON_LIGHT if contrast_ratio(ON_LIGHT, colour) >= contrast_ratio(ON_DARK, colour) else ON_DARK


# One colour per GPU, distinguishable on both backgrounds (the order users see in the legend).
SERIES_COLORS = ("#e8484f", "#3b82f6", "#22a06b", "#f59e0b", "#a855f7", "#06b6d4", "#ec4899", "#84cc16",
                 "#f97316", "#6366f1", "#14b8a6", "#eab308")
# Per-GPU mode: one colour per temperature sensor.
SENSOR_COLORS = {"junction": "#e8484f", "edge": "#f59e0b", "mem": "#3b82f6"}
SENSOR_STYLES = {"junction": QtCore.Qt.PenStyle.SolidLine, "edge": QtCore.Qt.PenStyle.DashLine,
                 "mem": QtCore.Qt.PenStyle.DotLine}


def series_color(index: int) -> str:
    return SERIES_COLORS[index % len(SERIES_COLORS)]


def system_prefers_dark(app: QtGui.QGuiApplication | None = None) -> bool:
    app = app or QtGui.QGuiApplication.instance()
    if app is None:
        return False
    try:
        return app.styleHints().colorScheme() == QtCore.Qt.ColorScheme.Dark
    except AttributeError:  # Qt < 6.5
        return app.palette().color(QtGui.QPalette.ColorRole.Window).lightness() < 128


def resolve(theme: str) -> Palette:
    if theme == "dark":
        return DARK
    if theme == "light":
        return LIGHT
    return DARK if system_prefers_dark() else LIGHT


def style_sheet(palette: Palette) -> str:
    """resources/styles/app.qss with ``@name@`` tokens replaced by the palette's colours."""
    path = resource_path("styles", "app.qss")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        log.warning("theme: cannot read %s (%s); using the platform style", path, exc)
        return ""
    for key, value in palette.__dict__.items():
        text = text.replace(f"@{key}@", value)
    return text


_current: Palette = LIGHT


def current() -> Palette:
    """The palette last applied (widgets that paint themselves ask for it)."""
    return _current


def apply(app: QtWidgets.QApplication, theme: str) -> Palette:
    global _current
    palette = resolve(theme)
    _current = palette
    app.setStyle("Fusion")
    qp = QtGui.QPalette()
    role = QtGui.QPalette.ColorRole
    qp.setColor(role.Window, QtGui.QColor(palette.window))
    qp.setColor(role.WindowText, QtGui.QColor(palette.text))
    qp.setColor(role.Base, QtGui.QColor(palette.surface))
    qp.setColor(role.AlternateBase, QtGui.QColor(palette.surface_alt))
    qp.setColor(role.Text, QtGui.QColor(palette.text))
    qp.setColor(role.Button, QtGui.QColor(palette.surface))
    qp.setColor(role.ButtonText, QtGui.QColor(palette.text))
    qp.setColor(role.ToolTipBase, QtGui.QColor(palette.surface))
    qp.setColor(role.ToolTipText, QtGui.QColor(palette.text))
    for group in (QtGui.QPalette.ColorGroup.Active, QtGui.QPalette.ColorGroup.Inactive):
        qp.setColor(group, role.Highlight, QtGui.QColor(palette.selection))
        qp.setColor(group, role.HighlightedText, QtGui.QColor(palette.selection_text))
    qp.setColor(role.PlaceholderText, QtGui.QColor(palette.muted))
    disabled = QtGui.QPalette.ColorGroup.Disabled
    for disabled_role in (role.Text, role.ButtonText, role.WindowText):
        qp.setColor(disabled, disabled_role, QtGui.QColor(palette.muted))
    qp.setColor(disabled, role.Button, QtGui.QColor(palette.window))
    app.setPalette(qp)
    app.setStyleSheet(style_sheet(palette))
    return palette
