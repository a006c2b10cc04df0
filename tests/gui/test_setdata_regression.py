"""PySide6-Essentials 6.12.0 + pyqtgraph 0.14.0 abort the interpreter ("Fatal Python error:
none_dealloc") within seconds of repeated setData on a few dozen curves; 6.11.x is fine.

The load runs in a subprocess, so an abort fails this test instead of killing the test run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"

LOAD = r"""
import sys, time
import numpy as np
from PySide6 import QtWidgets
import pyqtgraph as pg

app = QtWidgets.QApplication(sys.argv[:1])
win = pg.GraphicsLayoutWidget()
win.resize(1200, 800)
plots = [win.addPlot(row=i // 2, col=i % 2) for i in range(4)]
curves = [plots[i % 4].plot(pen=pg.intColor(i, 40)) for i in range(40)]
win.show()
x = np.arange(2000, dtype=float)
rng = np.random.default_rng(1)
end = time.monotonic() + float(sys.argv[1])
n = 0
while time.monotonic() < end:
    for i, c in enumerate(curves):
        c.setData(x, rng.random(2000) + i)
    app.processEvents()
    n += 1
print("frames", n)
win.close()
"""


def test_many_curves_setdata_at_high_rate_exits_cleanly(tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONFAULTHANDLER": "1"}
    proc = subprocess.run([sys.executable, "-c", LOAD, "3"], capture_output=True, text=True, env=env,
                          timeout=120, cwd=tmp_path)
    assert "none_dealloc" not in proc.stderr
    assert proc.returncode == 0, f"interpreter died ({proc.returncode}):\n{proc.stderr[-2000:]}"
    frames = int(proc.stdout.split()[-1])
    assert frames > 5  # it really ran the load


def _pinned(name: str) -> Requirement:
    deps = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["dependencies"]
    for dep in deps:
        req = Requirement(dep)
        if req.name.lower() == name.lower():
            return req
    pytest.fail(f"{name} is not pinned in pyproject.toml")


@pytest.mark.parametrize("dist", ["PySide6-Essentials", "pyqtgraph"])
def test_installed_versions_satisfy_the_pinned_range(dist):
    req = _pinned(dist)
    installed = Version(metadata.version(dist))
    assert req.specifier.contains(installed, prereleases=True), f"{dist} {installed} is outside {req.specifier}"


def test_pin_excludes_the_crashing_release():
    assert not _pinned("PySide6-Essentials").specifier.contains(Version("6.12.0"))
