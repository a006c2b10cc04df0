"""The status bar: a GPU event stays readable while the same backend error repeats every sample."""

from __future__ import annotations

import pytest

from tests.gui.conftest import FakeBackend, fake_source

pytestmark = pytest.mark.gui


def test_a_gpu_event_is_not_overwritten_by_the_same_backend_error_every_second(qtbot, open_window, manual_factory):
    from dataclasses import replace

    from rocmdesk.telemetry.model import Snapshot
    from rocmdesk.ui.feed import GpuEvent

    backend = FakeBackend(1)
    session = open_window(fake_source(backend), sampler_factory=manual_factory)
    sampler = manual_factory.made[0]
    bar = session.window.statusBar()

    def tick_with_error() -> None:
        snap = backend.sample()
        sampler.on_snapshot(replace(snap, errors=["amd-smi: permission denied"]))

    tick_with_error()
    qtbot.waitUntil(lambda: bar.currentMessage() == "amd-smi: permission denied", timeout=3000)
    session.feed.add_event(GpuEvent("0000:03:00.0", "card0", "wedged", "card0: GPU wedged", 1_700_000_000.0))
    assert "card0: GPU wedged" in bar.currentMessage()
    tick_with_error()
    qtbot.wait(50)
    assert "card0: GPU wedged" in bar.currentMessage()  # the unchanged error is not shown again
    sampler.on_snapshot(Snapshot("fake", 0.0, errors=["rocm-smi did not answer"]))
    qtbot.waitUntil(lambda: bar.currentMessage() == "rocm-smi did not answer", timeout=3000)
