"""The tabs of the main window, in order, and how to add one.

To add a tab, write ``rocmdesk/ui/<name>_tab.py`` with a ``QWidget`` subclass taking
``(ctx: AppContext, parent=None)`` and add a line to :data:`TAB_FACTORIES`::

    TabSpec("diagnosis", "Diagnosis", "rocmdesk.ui.diagnosis_tab", "DiagnosisTab"),

A tab whose module does not exist yet is skipped (features land one issue at a time; the
window never shows an empty placeholder). Shortcuts are Ctrl+1, Ctrl+2... in this order.
A tab may define ``on_shown()`` (called when it becomes the current tab) and
``screenshot_ready() -> bool`` (the screenshot command waits for it). At run time,
``MainWindow.add_tab(widget, title, key)`` adds any widget as a tab.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from collections.abc import Callable
from dataclasses import dataclass

from PySide6 import QtWidgets

from rocmdesk.ui.context import AppContext

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TabSpec:
    key: str  # stable id: settings, `rocmdesk screenshot --tab KEY`
    title: str
    module: str
    factory: str  # a class or function in the module: factory(ctx, parent) -> QWidget


TAB_FACTORIES: tuple[TabSpec, ...] = (
    TabSpec("overview", "Overview", "rocmdesk.ui.overview_tab", "OverviewTab"),
    TabSpec("graphs", "Graphs", "rocmdesk.ui.graphs_tab", "GraphsTab"),
    TabSpec("processes", "Processes", "rocmdesk.ui.processes_tab", "ProcessesTab"),
    TabSpec("diagnosis", "Diagnosis", "rocmdesk.ui.diagnosis_tab", "DiagnosisTab"),
    TabSpec("tuning", "Tuning", "rocmdesk.ui.tuning_tab", "TuningTab"),
    TabSpec("report", "Report", "rocmdesk.ui.report_tab", "ReportTab"),
)


def available_tabs(specs: tuple[TabSpec, ...] = TAB_FACTORIES) -> list[TabSpec]:
    """The specs whose module is installed."""
    out = []
    for spec in specs:
        try:
            found = importlib.util.find_spec(spec.module) is not None
        except (ImportError, ValueError):
            found = False
        if found:
            out.append(spec)
    return out


def load_factory(spec: TabSpec) -> Callable[[AppContext, QtWidgets.QWidget | None], QtWidgets.QWidget]:
    return getattr(importlib.import_module(spec.module), spec.factory)


def tab_keys() -> list[str]:
    """Keys accepted by ``rocmdesk screenshot --tab`` (all known, built or not)."""
    return [spec.key for spec in TAB_FACTORIES]
