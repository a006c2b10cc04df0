"""mypy over the Qt-free packages ([tool.mypy] in pyproject.toml), as part of the suite.

In the suite rather than only in scripts/test.sh so that a type error shows up wherever the unit
tests are run, the same way a failing test does.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(300)
def test_mypy_passes_on_the_qt_free_packages():
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO,  # its cache: .mypy_cache (git-ignored)
                          capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "Success: no issues found" in proc.stdout
