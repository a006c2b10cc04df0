"""The core must stay Qt-free: only rocmdesk/ui imports PySide6 or pyqtgraph."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "rocmdesk"
QT_MODULES = ("PySide6", "pyqtgraph", "shiboken6")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_qt_imports_outside_ui():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if "ui" in path.relative_to(PACKAGE).parts[:1]:
            continue
        bad = {n for n in _imports(path) if n.split(".")[0] in QT_MODULES}
        if bad:
            offenders.append(f"{path.relative_to(PACKAGE.parent)}: {sorted(bad)}")
    assert offenders == []


def test_headless_commands_do_not_load_qt():
    code = (
        "import sys, rocmdesk.cli as c; c.build_parser();"
        "import rocmdesk.telemetry.model, rocmdesk.diagnosis.engine;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6','pyqtgraph','shiboken6')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
