"""The one background-work helper of the window: answers on the GUI thread, errors handed over, none lost."""

from __future__ import annotations

import threading

from PySide6 import QtWidgets

from rocmdesk.ui.background import Background


def test_the_answer_and_progress_arrive_on_the_gui_thread(qtbot):
    owner = QtWidgets.QWidget()
    qtbot.addWidget(owner)
    work = Background(owner)
    gui = threading.get_ident()
    seen: list[tuple[str, object, bool]] = []
    progress = work.relay(lambda i, n: seen.append(("progress", (i, n), threading.get_ident() == gui)))

    def job() -> int:
        assert threading.get_ident() != gui  # really off the GUI thread
        for i in range(3):
            progress(i, 3)
        return 42

    work.submit(job, lambda value: seen.append(("done", value, threading.get_ident() == gui)))
    assert work.busy
    assert work.wait_idle(5000)
    assert seen == [("progress", (0, 3), True), ("progress", (1, 3), True), ("progress", (2, 3), True),
                    ("done", 42, True)]


def test_an_exception_goes_to_on_error_and_the_helper_is_idle_again(qtbot):
    owner = QtWidgets.QWidget()
    qtbot.addWidget(owner)
    work = Background(owner)
    errors: list[BaseException] = []
    done: list[object] = []

    def broken() -> None:
        raise ValueError("disk vanished")

    work.submit(broken, done.append, errors.append)
    work.submit(broken, done.append)  # no on_error: logged, nothing called
    assert work.wait_idle(5000)
    assert done == [] and [str(e) for e in errors] == ["disk vanished"]


def test_an_answer_after_the_owner_is_gone_is_dropped(qtbot):
    owner = QtWidgets.QWidget()
    work = Background(owner)
    release = threading.Event()
    done: list[object] = []
    work.submit(lambda: release.wait(5), done.append)
    owner.deleteLater()
    qtbot.waitUntil(lambda: not _alive(work), timeout=5000)
    release.set()
    qtbot.wait(200)
    assert done == []


def _alive(obj: object) -> bool:
    import shiboken6

    return shiboken6.isValid(obj)
