"""The cheap paint paths draw exactly what the full ones do, and the pre-roll streams into history."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6 import QtCore, QtGui

from tests.gui.conftest import FakeBackend, fake_source, make_info, make_sample

pytestmark = pytest.mark.gui


def _render(widget, region=None):
    img = QtGui.QImage(widget.size(), QtGui.QImage.Format.Format_ARGB32)
    img.fill(QtGui.QColor("#ff00ff"))  # anything not painted shows as magenta
    if region is None:
        widget.render(img)
    else:
        widget.render(img, region.topLeft(), QtGui.QRegion(region))
    return img


def test_card_inner_repaint_matches_full_paint(qtbot):
    from rocmdesk.ui.gpu_card import GpuCard

    card = GpuCard(make_info(1))
    qtbot.addWidget(card)
    card.update_sample(make_sample(make_info(1), 1.0))
    card.resize(420, max(400, card.minimumSizeHint().height()))
    _render(card)  # settles the layout
    full = _render(card)
    inner = QtCore.QRect(40, 60, 200, 80)  # behind values, away from the rounded border
    part = _render(card, inner)
    full = _render(card)
    assert part.size() == full.size()
    for x in range(inner.left(), inner.right(), 7):
        for y in range(inner.top(), inner.bottom(), 5):
            assert part.pixel(x, y) == full.pixel(x, y), (x, y)
    # a region touching the corner still gets the rounded border (corner pixel is not body colour)
    corner = _render(card, QtCore.QRect(0, 0, 30, 30))
    assert corner.pixel(0, 0) == full.pixel(0, 0) and corner.pixel(15, 0) == full.pixel(15, 0)


def test_sparkline_opaque_fill_is_the_blended_colour(qtbot):
    from rocmdesk.ui.widgets import AREA_ALPHA, Sparkline

    spark = Sparkline()
    qtbot.addWidget(spark)
    spark.resize(200, 60)
    values = np.full(50, 0.8)
    spark.set_series(values, None, "#3b82f6", "#e8484f", "#e5e7eb", background="#ffffff")
    assert spark.testAttribute(QtCore.Qt.WidgetAttribute.WA_OpaquePaintEvent)
    img = _render(spark)
    a = AREA_ALPHA / 255.0
    want = tuple(round(c * a + 255 * (1 - a)) for c in (0x3b, 0x82, 0xf6))
    got = QtGui.QColor(img.pixel(100, 50))
    assert (got.red(), got.green(), got.blue()) == want
    above = QtGui.QColor(img.pixel(100, 6))  # above the 0.8 line: the background, not magenta
    assert above.name() == "#ffffff"
    # without a background: translucent as before, the parent shows through
    spark.set_series(values, None, "#3b82f6", "#e8484f", "#e5e7eb")
    assert not spark.testAttribute(QtCore.Qt.WidgetAttribute.WA_OpaquePaintEvent)
    assert spark.fill_color().alpha() == AREA_ALPHA


def test_preroll_is_streamed_into_history_not_listed(qtbot, open_window, manual_factory, monkeypatch):
    from rocmdesk.telemetry.history import History

    backend = FakeBackend(1)
    info = backend.infos[0]
    order = []

    def preroll():
        for i in range(5):
            order.append(("made", i))
            from tests.gui.conftest import snapshot_with
            yield snapshot_with(make_sample(info, 1000.0 + i, i), t=1000.0 + i)

    real_append = History.append_snapshot

    def append(self, snap):
        order.append(("stored", int(snap.timestamp - 1000.0)))
        return real_append(self, snap)

    monkeypatch.setattr(History, "append_snapshot", append)
    source = fake_source(backend)
    source.preload = preroll
    session = open_window(source, sampler_factory=manual_factory)
    qtbot.waitUntil(lambda: not session.feed.loading, timeout=5000)
    made = [i for kind, i in order if kind == "made"]
    assert made == list(range(5))
    # each snapshot is stored before the next one is made: never the whole pre-roll in memory
    assert order[:4] == [("made", 0), ("stored", 0), ("made", 1), ("stored", 1)]


def test_a_feed_stopped_while_loading_stops_the_loader(qtbot, open_window, manual_factory, monkeypatch):
    """Closing the window (or switching source) during a long pre-roll: the loader gives up,
    the old history is not swapped in, no sampler starts, and the heap is not settled for it."""
    import threading

    from rocmdesk.ui import app as app_module
    from tests.gui.conftest import snapshot_with

    backend = FakeBackend(1)
    info = backend.infos[0]
    gate, made = threading.Event(), []
    settled = []
    monkeypatch.setattr(app_module, "settle_heap", lambda: settled.append(True))

    def preroll():
        for i in range(10_000):
            if i == 3:
                gate.wait(5)  # hold the loader until the feed is stopped
            made.append(i)
            yield snapshot_with(make_sample(info, 1000.0 + i, i), t=1000.0 + i)

    source = fake_source(backend)
    source.preload = preroll
    session = open_window(source, sampler_factory=manual_factory)
    feed = session.feed
    qtbot.waitUntil(lambda: len(made) == 3, timeout=5000)
    before = feed.history
    feed.stop()
    gate.set()
    qtbot.waitUntil(lambda: not feed.loading, timeout=5000)
    assert len(made) <= 4  # gave up at the next snapshot, not after all 10 000
    assert feed.history is before and manual_factory.made == []
    assert settled == []


def test_meter_bar_reads_nan_as_not_available(qtbot):
    from rocmdesk.ui.widgets import MeterBar

    bar = MeterBar()
    qtbot.addWidget(bar)
    bar.set_value(0.5, "#3b82f6", "#eceef2")
    assert bar.fraction == 0.5
    bar.set_value(float("nan"), "#3b82f6", "#eceef2")
    assert bar.fraction is None
    bar.set_value(float("inf"), "#3b82f6", "#eceef2")
    assert bar.fraction is None
    bar.set_value(1.7, "#3b82f6", "#eceef2")
    assert bar.fraction == 1.0


def test_value_label_starts_as_na_and_shows_values_bold(qtbot):
    from rocmdesk.ui.widgets import ValueLabel

    label = ValueLabel("888 °F", None, "N/A")
    qtbot.addWidget(label)
    assert label.is_na() and label.text() == "N/A"  # muted italic before the first sample
    width = label.width()
    label.set_value("74 °C", "#b08800")
    assert not label.is_na() and label.color() == "#b08800" and label.width() == width  # fixed size
