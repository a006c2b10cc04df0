"""The window over a fuzzed root (issue 11, item 3: "no traceback from ... the window on any fuzzed input").

Every sysfs file the readers use (tests/support/fuzz_roots.py) is made one kind of bad at once, except
the few that say which GPU it is (without them there is no GPU to show); the window then opens on the
root, every tab is shown, and nothing may log a traceback (pytest-qt fails the test on a Qt-side
exception). Every N/A a card shows must carry its reason. ``vanished`` and ``unreadable`` need the
main thread's listing hook or a dropped uid, which do not fit a window with its own sampler thread;
the per-command fuzz covers them.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import tempfile
from pathlib import Path

import pytest

from rocmdesk.ui.formatting import NA
from tests.support import fuzz_roots as fz

pytestmark = pytest.mark.gui

WINDOW_KINDS = [k for k in fz.KINDS if k not in ("vanished", "unreadable")]
IDENTITY = {"vendor", "device", "class", "uevent", "subsystem_vendor", "subsystem_device", "revision"}


@pytest.fixture(scope="module")
def workstation():
    folder = Path(tempfile.mkdtemp(prefix="rocmdesk-fuzz-window-", dir=fz.scratch_dir()))
    root = fz.workstation_root(folder / "root")
    targets, _baseline = fz.fuzz_targets(root)
    yield root, [t for t in targets if t.rel.startswith("sys/") and t.path.name not in IDENTITY]
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", WINDOW_KINDS)
def test_the_window_over_a_root_whose_every_file_is_bad(qtbot, open_window, workstation, kind):
    from rocmdesk.ui.sources import root_source

    root, targets = workstation
    rng = random.Random(f"{fz.SEED}:window:{kind}")
    with contextlib.ExitStack() as stack, fz.logged_tracebacks() as tracebacks:
        for target in targets:
            if kind == "long_fields" and fz.is_binary(target.path.read_bytes()):
                continue
            stack.enter_context(fz.mutated(target.path, kind, rng))
        assert os.path.lexists(targets[0].path)
        session = open_window(root_source(str(root), "sysfs"))
        qtbot.waitUntil(lambda: session.feed.last_snapshot is not None and not session.feed.loading, timeout=15000)
        window = session.window
        for tab in list(window.tab_widgets):
            window.show_tab(tab)
            qtbot.wait(30)
        overview = window.tab_widgets["overview"]
        qtbot.waitUntil(lambda: len(overview.cards) == 1, timeout=5000)
        qtbot.waitUntil(lambda: all(c.sample is not None for c in overview.cards.values()), timeout=5000)
        for card in overview.cards.values():
            for metric in card.metrics:
                if metric.value.text() == NA:
                    assert metric.value.toolTip(), f"{metric.accessibleName()}: N/A without a reason ({kind})"
        report = window.tab_widgets.get("report")
        if report is not None and hasattr(report, "wait_idle"):
            assert report.wait_idle()
        qtbot.wait(100)
    assert tracebacks == []
