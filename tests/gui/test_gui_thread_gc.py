"""Garbage is collected on the GUI thread only, and a second screenshot in the same second keeps the first.

A cyclic collection started by a worker thread freed Qt wrappers there (~QObject off the GUI thread) and
corrupted the heap: the installed window crashed when the demo machine was switched after choosing GPUs
(tests/integration/test_packaging.py drives that path through the .deb).
"""

from __future__ import annotations

import gc
import threading
import typing

import pytest

pytestmark = pytest.mark.gui


class Cycle:
    """Garbage only the cyclic collector frees; notes the thread it was freed on."""

    freed_on: typing.ClassVar[list[str]] = []

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        Cycle.freed_on.append(threading.current_thread().name)


def test_cycles_made_in_a_worker_are_freed_on_the_gui_thread(qapp):
    from rocmdesk.ui.app import GuiThreadCollector, make_app

    app = make_app()
    collector = app.findChild(GuiThreadCollector)
    assert collector is not None and collector.timer.isActive() and not gc.isenabled()
    Cycle.freed_on.clear()
    thresholds = gc.get_threshold()
    gc.set_threshold(50, 2, 2)  # a worker allocating this much would have collected by itself
    try:
        def work() -> None:
            for _ in range(2000):
                Cycle()
                _ = [[] for _ in range(5)]

        worker = threading.Thread(target=work, name="worker")
        worker.start()
        worker.join()
        assert Cycle.freed_on == []  # nothing was collected in the worker
        assert collector.check() > 0
        gc.collect()
    finally:
        gc.set_threshold(*thresholds)
    assert Cycle.freed_on and set(Cycle.freed_on) == {threading.main_thread().name}


def test_check_collects_nothing_below_the_thresholds(qapp):
    from rocmdesk.ui.app import GuiThreadCollector, make_app

    collector = make_app().findChild(GuiThreadCollector)
    gc.collect()
    thresholds = gc.get_threshold()
    gc.set_threshold(10**6, 10**6, 10**6)
    try:
        Cycle()
        assert collector.check() == 0
    finally:
        gc.set_threshold(*thresholds)
    gc.collect()


def test_a_second_screenshot_in_the_same_second_gets_a_new_name(open_window, tmp_path, monkeypatch):
    from rocmdesk.ui import main_window
    from tests.gui.conftest import demo_small

    monkeypatch.setattr(main_window, "pictures_dir", lambda: tmp_path)
    monkeypatch.setattr(main_window.time, "strftime", lambda fmt, *a: fmt.replace("%Y%m%d-%H%M%S", "20261203-071500"))
    window = open_window(demo_small(preroll_s=0)).window
    first = window.save_screenshot()
    second = window.save_screenshot()
    third = window.save_screenshot()
    assert first == str(tmp_path / f"rocmdesk-{window.current_tab_key()}-20261203-071500.png")
    assert second == first.removesuffix(".png") + "-2.png" and third == first.removesuffix(".png") + "-3.png"
    assert all((tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for name in (first, second, third))
