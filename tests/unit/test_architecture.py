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


def test_a_command_imports_only_its_own_module():
    code = (
        "import sys, rocmdesk.cli as c; c.build_parser(['--root', 'diagnose', 'sample', '--json']);"
        "print(sorted(m for m in sys.modules if m.startswith('rocmdesk.commands.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['rocmdesk.commands.sample']"


def test_command_name_is_found_past_options_that_take_values():
    from rocmdesk.cli import command_in

    assert command_in(["--root", "sample", "diagnose", "--json"]) == "diagnose"  # "sample" is --root's value
    assert command_in(["-v", "exporter", "--once"]) == "exporter"
    assert command_in(["--demo"]) is None and command_in(["nonsense"]) is None and command_in([]) is None


def test_sampling_a_root_without_tools_loads_no_tool_parsers(tmp_path):
    """rocm-smi/amd-smi output parsers are imported only where a tool is installed (whole-process cost)."""
    from tests.support.sysfs_tree import GpuSpec, build_root

    build_root(tmp_path, [GpuSpec("rx7900xtx", pci="0000:03:00.0", card=0)])
    code = (
        "import sys, io, contextlib, rocmdesk.cli as c;"
        "contextlib.redirect_stdout(io.StringIO()).__enter__();"
        f"assert c.main(['sample', '--json', '--root', {str(tmp_path)!r}]) == 0;"
        "sys.stdout = sys.__stdout__;"
        "print(sorted(m for m in sys.modules if m.endswith(('smi_parsers', 'amd_smi', 'rocm_smi'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stderr
