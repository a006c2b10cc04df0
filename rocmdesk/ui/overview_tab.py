"""Overview: one card per GPU (:mod:`rocmdesk.ui.gpu_card`), laid out to fit the window.

GPUs that vanish stay as "removed" cards (a GPU falling off the bus is news); they come back to
life when the GPU reappears.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from PySide6 import QtCore, QtWidgets

from rocmdesk.telemetry.model import GpuInfo, Snapshot
from rocmdesk.ui.context import AppContext
from rocmdesk.ui.feed import GpuEvent
from rocmdesk.ui.gpu_card import DENSITIES, TREND_REFRESH_S, TREND_S, GpuCard, trend_points
from rocmdesk.ui.widgets import set_text


class _ScrollArea(QtWidgets.QScrollArea):
    """A scroll area that says when it was resized (not an event filter: those run during teardown)."""

    resized: Callable[[], object] | None = None

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self.resized is not None:
            self.resized()


class OverviewTab(QtWidgets.QWidget):
    def __init__(self, ctx: AppContext, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.setAccessibleName("Overview")
        self.cards: dict[str, GpuCard] = {}
        self.scroll = _ScrollArea(self)
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        self.body = QtWidgets.QWidget()
        self.body.setObjectName("centralArea")
        # opaque: a changed label repaints its card and this body, not every widget behind them
        self.body.setAutoFillBackground(True)
        self.grid = QtWidgets.QGridLayout(self.body)
        self.grid.setContentsMargins(14, 14, 14, 14)
        self.grid.setSpacing(12)
        self.scroll.setWidget(self.body)
        self.empty = QtWidgets.QLabel("Waiting for the first sample…", self.body)
        self.empty.setWordWrap(True)
        self.empty.setObjectName("emptyState")
        self.empty.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        self.grid.addWidget(self.empty, 0, 0)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        # a recording shows its last sample with that sample's time, never "now"
        self.recorded = QtWidgets.QLabel("", self)
        self.recorded.setObjectName("recordedNote")
        self.recorded.setAccessibleName("Recorded sample")
        self.recorded.setVisible(False)
        lay.addWidget(self.recorded)
        lay.addWidget(self.scroll)
        self._pending: Snapshot | None = None
        self._columns = 0
        self._fit_timer = QtCore.QTimer(self)  # one fit per burst of size changes
        self._fit_timer.setSingleShot(True)
        self._fit_timer.setInterval(0)
        self._fit_timer.timeout.connect(self.fit_density)
        # the height to share is the viewport's: it also changes when the recorded-sample line appears
        self.scroll.resized = self._fit_timer.start

        feed = ctx.feed
        feed.snapshot.connect(self.on_snapshot)
        feed.gpus_changed.connect(self.on_gpus_changed)
        feed.stale_changed.connect(self.on_stale)
        feed.gpu_event.connect(self.on_event)
        if feed.gpus:
            self.on_gpus_changed(feed.gpus)
        if feed.last_snapshot is not None:
            self.on_snapshot(feed.last_snapshot)

    # -- GPUs ---------------------------------------------------------------------------------------
    def visible_pcis(self) -> list[str]:
        selected = self.ctx.settings.selected_gpus
        return [pci for pci in self.cards if not selected or pci in selected]

    def on_gpus_changed(self, infos: list[GpuInfo]) -> None:
        present = {i.pci for i in infos}
        for info in infos:
            card = self.cards.get(info.pci)
            if card is None:
                card = GpuCard(info, self.ctx.settings.temp_unit, self.body)
                card.shape_changed.connect(self._fit_timer.start)
                self.cards[info.pci] = card
            elif card.state == "gone":
                card.set_state("ok")
        for pci, card in self.cards.items():
            if pci not in present and card.state != "gone":
                card.set_state("gone", "this GPU is no longer present (removed, or fell off the bus)")
        self._arrange()

    def columns_for(self, count: int) -> int:
        if count <= 1:
            return 1
        if count == 2:
            return 2
        if count <= 4:
            return 2 if self.width() < 1000 else count
        if count <= 8:
            return 4 if self.width() >= 1100 else 3
        return 4

    def _arrange(self) -> None:
        pcis = self.visible_pcis()
        for i in reversed(range(self.grid.count())):
            self.grid.takeAt(i)
        for card in self.cards.values():
            card.setVisible(card.info.pci in pcis)
        self.empty.setVisible(not pcis)
        if not pcis:
            self.grid.addWidget(self.empty, 0, 0)
            return
        cols = self.columns_for(len(pcis))
        self._columns = cols
        for i, pci in enumerate(pcis):
            # top-aligned: a card that reached its largest useful height leaves the rest of its row empty
            self.grid.addWidget(self.cards[pci], i // cols, i % cols, QtCore.Qt.AlignmentFlag.AlignTop)
        rows = (len(pcis) + cols - 1) // cols
        for c in range(8):
            self.grid.setColumnStretch(c, 1 if c < cols else 0)
        for r in range(8):
            self.grid.setRowStretch(r, 1 if r < rows else 0)
        self._fit_timer.start()

    def fit_density(self) -> None:
        """The roomiest card density at which every visible card fits its row's share of the height.

        Eight MI300X cards at 1280x800 scrolled once the cards gained their details (issue 14). With
        more rows than fit even at the densest, the tab scrolls as before.
        """
        cards = [self.cards[pci] for pci in self.visible_pcis()]
        if not cards or not self._columns:
            return
        rows = -(-len(cards) // self._columns)
        margins = self.grid.contentsMargins()
        budget = (self.scroll.viewport().height() - margins.top() - margins.bottom()
                  - self.grid.verticalSpacing() * (rows - 1)) // rows
        hidden = {card for card in cards if card.density >= 2}
        for level in range(DENSITIES):
            for card in cards:
                card.set_density(level)
            if max(card.needed_height() for card in cards) <= budget:
                break
        for card in hidden:
            if card.density < 2 and self.isVisible():  # a trend shown again is drawn at once
                card.trend_at = time.monotonic()
                self._update_trend(card)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self.cards and self.columns_for(len(self.visible_pcis())) != self._columns:
            self._arrange()
        self._fit_timer.start()


    # -- samples -------------------------------------------------------------------------------------
    def on_snapshot(self, snapshot: Snapshot) -> None:
        feed = self.ctx.feed
        if getattr(feed, "frozen", False):
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(snapshot.timestamp))
            set_text(self.recorded, f"Last recorded sample, {stamp} — snapshot {feed.recorded_text()}; "
                                    "nothing is sampled now")
            self.recorded.setVisible(True)
        if not self.isVisible():
            self._pending = snapshot  # refresh on show: a hidden tab costs nothing
            return
        self._apply(snapshot)

    def _apply(self, snapshot: Snapshot, force_trend: bool = False) -> None:
        """Update visible cards; trends move every ``TREND_REFRESH_S``, so they repaint no faster."""
        self._pending = None
        now = time.monotonic()
        if not snapshot.gpus and not self.cards:
            problems = "\n".join(snapshot.errors[:3])
            set_text(self.empty, f"No AMD GPU found.\n{self.ctx.mode_reason}" + (f"\n{problems}" if problems else ""))
        for sample in snapshot.gpus:
            card = self.cards.get(sample.info.pci)
            if card is not None and card.isVisible():
                card.update_sample(sample, self._throttled_since(card.info.pci))
                if card.wants_trend() and (force_trend or now - card.trend_at >= TREND_REFRESH_S):
                    card.trend_at = now
                    self._update_trend(card)

    def _throttled_since(self, pci: str) -> float | None:
        history = self.ctx.feed.history
        span = history[pci].throttle.active if pci in history else None
        return span.start if span is not None else None

    def _update_trend(self, card: GpuCard) -> None:
        history = self.ctx.feed.history
        pci = card.info.pci
        if pci not in history:
            return
        gpu = history[pci]
        window = gpu.window(TREND_S, metrics=("gpu_busy_percent", "power_w", "power_cap_w"))
        expected = max(2, int(TREND_S * self.ctx.feed.rate_hz))
        busy = trend_points(window.values["gpu_busy_percent"], expected)
        with np.errstate(all="ignore"):
            frac = window.values["power_w"].astype(np.float64) / window.values["power_cap_w"]
        card.update_trend(busy, trend_points(frac, expected))

    # -- Tab --------------------------------------------------------------------------------------------
    def on_shown(self) -> None:
        """Nothing more: showEvent already applies the sample that arrived while hidden."""

    def screenshot_ready(self) -> bool:
        """Ready once the card density fit after the last resize has run (else cards may be cut off)."""
        return bool(self.cards) and not self._fit_timer.isActive()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self._fit_timer.start()
        latest = self._pending or self.ctx.feed.last_snapshot
        if latest is not None:
            self._apply(latest, force_trend=True)

    def on_stale(self, stale: bool, reason: str) -> None:
        for card in self.cards.values():
            if card.state != "gone":
                card.set_state("stale" if stale else "ok", reason)

    def on_event(self, event: GpuEvent) -> None:
        card = self.cards.get(event.pci or "")
        if card is None and event.card:
            card = next((c for c in self.cards.values() if c.info.card == event.card), None)
        if card is not None and event.kind not in ("added", "removed"):
            card.add_event(event)

    def set_unit(self, unit: str) -> None:
        for card in self.cards.values():
            card.set_unit(unit)

    def refresh_selection(self) -> None:
        self._arrange()
        if self.ctx.feed.last_snapshot is not None:
            self.on_snapshot(self.ctx.feed.last_snapshot)
