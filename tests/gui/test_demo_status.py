"""The demo's status bar says it replays a recording, never "Sampling at 1 Hz · Last sample: just now"."""

from __future__ import annotations

import time

import pytest

from rocmdesk.wording import demo_replay_text
from tests.gui.conftest import demo_small

pytestmark = pytest.mark.gui
CREATED = 1764625320.0  # tools/make_demo_machines.py: the demo machines' fixed capture time


@pytest.mark.parametrize("machine", ["rx7900xtx-comfyui", "mi300x-node"])
def test_demo_status_bar_names_the_replayed_recording(open_window, qtbot, machine):
    session = open_window(demo_small(preroll_s=0, recording=machine))
    window = session.window
    qtbot.waitUntil(lambda: session.feed.last_snapshot is not None, timeout=10000)
    qtbot.wait(1100)  # the age timer has ticked at least once
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(CREATED))
    assert window.rate_label.text() == f"Demo replay of {machine} · recorded {when}"
    bar = " ".join(w.text() for w in (window.source_label, window.rate_label, window.age_label) if w.isVisible())
    for wrong in ("Sampling at", "just now", "Last sample"):
        assert wrong not in bar, bar
    window.ctx.feed.rate_changed.emit(2.0)  # a rate change does not bring "Sampling at" back
    assert window.rate_label.text().startswith("Demo replay of ")


def test_demo_replay_text_without_a_machine_or_date():
    assert demo_replay_text("", None) == "demo replay of a recording"
    assert demo_replay_text("x", None) == "demo replay of x"
    assert demo_replay_text("x", 0.0) == "demo replay of x"
