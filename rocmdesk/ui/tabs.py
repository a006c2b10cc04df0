"""The tabs of the main window, in order, what every tab provides, and how to add one.

To add a tab, write ``rocmdesk/ui/<name>_tab.py`` with a ``QWidget`` subclass taking
``(ctx: AppContext, parent=None)`` that implements :class:`Tab`, and add a line to :data:`TAB_FACTORIES`::

    TabSpec("diagnosis", "Diagnosis", "rocmdesk.ui.diagnosis_tab", "DiagnosisTab"),

Shortcuts are Ctrl+1, Ctrl+2... in this order. At run time, ``MainWindow.add_tab(widget, title, key)``
adds any widget as a tab; the window calls the :class:`Tab` methods only on widgets that have them.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

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


@runtime_checkable
class Tab(Protocol):
    """What the window and the screenshot command ask of every built-in tab."""

    def on_shown(self) -> None:
        """The tab became the current one: refresh what is cheap to refresh, start what waits for it."""

    def screenshot_ready(self) -> bool:
        """Whether a picture now shows the tab's real content (not "running…"): the screenshot waits for it."""


def load_factory(spec: TabSpec) -> Callable[[AppContext, QtWidgets.QWidget | None], QtWidgets.QWidget]:
    return getattr(importlib.import_module(spec.module), spec.factory)


def tab_keys() -> list[str]:
    """Keys accepted by ``rocmdesk screenshot --tab``."""
    return [spec.key for spec in TAB_FACTORIES]
