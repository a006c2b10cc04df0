"""Graphs that have nothing (or almost nothing) to draw say why instead of showing bare axes."""

from __future__ import annotations

import pytest

from tests.gui.conftest import FakeBackend, fake_source, make_sample

pytestmark = pytest.mark.gui

REASON = "this GPU has no VRAM counter (mem_info_vram_used)"


def _open(qtbot, open_window, manual_factory, sample_fn=None, ticks=3):
    backend = FakeBackend(1, sample_fn)
    session = open_window(fake_source(backend), sampler_factory=manual_factory, size=(1280, 800))
    sampler = manual_factory.made[0]
    for _ in range(ticks):
        sampler.tick()
    session.window.show_tab("graphs")
    graphs = session.window.tab_widgets["graphs"]
    qtbot.waitUntil(lambda: graphs.draw_count > 0, timeout=5000)
    graphs.redraw()
    return graphs, backend, sampler


def test_plot_without_data_shows_the_reason(qtbot, open_window, manual_factory):
    state = {"vram": False}

    def sample_fn(info, t, i):
        s = make_sample(info, t, i)
        if not state["vram"]:
            s.vram_used_bytes = None
            s.unavailable["vram_used_bytes"] = REASON
        return s

    graphs, _backend, sampler = _open(qtbot, open_window, manual_factory, sample_fn)
    note = graphs.empty_notes["memory"]
    assert note.isVisible() and note.toPlainText() == f"No data: {REASON}"
    assert not any(graphs.empty_notes[n].isVisible() for n in ("temp", "power", "busy"))
    # the note sits in the middle of what the plot shows
    (x0, x1), (y0, y1) = graphs.plots["memory"].getViewBox().viewRange()
    assert x0 < note.pos().x() < x1 and y0 < note.pos().y() < y1
    # the counter comes back: the note goes
    state["vram"] = True
    snap = sampler.tick()
    qtbot.waitUntil(lambda: graphs.ctx.feed.last_snapshot is snap, timeout=5000)
    graphs.redraw()  # (the 1 h window redraws only when the time axis moves by a pixel)
    assert not note.isVisible()


def test_short_history_in_a_long_window_is_explained(qtbot, open_window, manual_factory):
    graphs, _backend, _sampler = _open(qtbot, open_window, manual_factory)
    graphs.set_window(3600)
    graphs.redraw()
    assert graphs.history_note.isVisible()
    text = graphs.history_note.text()
    assert "recorded so far" in text and "1 h" in text and " s " in text
    graphs._on_user_range("temp", 0)  # the user pans away from live: the note is about live view
    graphs.redraw()
    assert not graphs.history_note.isVisible()


def test_full_window_has_no_history_note(qtbot, open_window):
    from tests.gui.conftest import demo_small

    session = open_window(demo_small(preroll_s=600))
    session.window.show_tab("graphs")
    graphs = session.window.tab_widgets["graphs"]
    qtbot.waitUntil(lambda: graphs.draw_count > 0 and not session.feed.loading, timeout=8000)
    graphs.set_window(300)
    graphs.redraw()
    assert not graphs.history_note.isVisible()
    assert not any(note.isVisible() for note in graphs.empty_notes.values())
    # overlaid, the fan plot of a passively cooled MI300X says so rather than showing bare axes
    graphs.set_layout("overlay")
    graphs.redraw()
    shown = {name: note.toPlainText() for name, note in graphs.empty_notes.items() if note.isVisible()}
    assert shown == {"fan": "No data: no fan on this GPU (passively cooled)"}


@pytest.mark.parametrize("seconds, text", [(0, "0 s"), (-3, "0 s"), (59.7, "59 s"), (119, "119 s"), (600, "10 min")])
def test_fmt_span(seconds, text):
    from rocmdesk.ui.graph_data import fmt_span

    assert fmt_span(seconds) == text
