"""With no display, ``rocmdesk`` and ``scripts/run.sh`` say so in one line and exit 2 (issue 10, item 11)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rocmdesk.ui.display_check import NO_DISPLAY_MESSAGE, has_display, no_display_message

TOP = Path(__file__).resolve().parents[2]
NO_DISPLAY = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent", "LANG": "C.UTF-8"}


@pytest.mark.parametrize(("env", "expected"), [
    ({}, False),
    ({"DISPLAY": ""}, False),
    ({"DISPLAY": "  ", "WAYLAND_DISPLAY": ""}, False),
    ({"DISPLAY": ":0"}, True),
    ({"WAYLAND_DISPLAY": "wayland-0"}, True),
    ({"QT_QPA_PLATFORM": "offscreen"}, True),
    ({"QT_QPA_PLATFORM": "vnc:size=1280x800"}, True),
    ({"QT_QPA_PLATFORM": "xcb"}, False),  # asks for X11, and there is none: Qt would abort
    ({"QT_QPA_PLATFORM": "wayland;xcb"}, False),
    ({"QT_QPA_PLATFORM": "wayland;offscreen"}, True),
    ({"QT_QPA_PLATFORM": "xcb", "DISPLAY": ":1"}, True),
])
def test_has_display(env, expected):
    assert has_display(env) is expected
    assert (no_display_message(env) is None) is expected


def _run_cli(argv: list[str], env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess:
    code = ("import sys; from rocmdesk.cli import main; rc = main(sys.argv[1:]); "
            "print('qt-loaded' if 'PySide6' in sys.modules else 'no-qt'); sys.exit(rc)")
    return subprocess.run([sys.executable, "-c", code, *argv], env={**env, "PYTHONPATH": str(TOP)},
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("argv", [[], ["--demo"], ["--root", "/nonexistent"]])
def test_window_without_display_prints_one_line_and_exits_2_before_qt_loads(argv, tmp_path):
    done = _run_cli(argv, NO_DISPLAY, tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == NO_DISPLAY_MESSAGE  # one line, no Qt abort, no traceback
    assert "rocmdesk diagnose" in done.stderr and "rocmdesk sample" in done.stderr
    assert done.stdout.strip() == "no-qt"


def test_headless_commands_still_run_without_display(tmp_path):
    done = _run_cli(["sample", "--backend", "demo", "--json"], NO_DISPLAY, tmp_path)
    assert done.returncode == 0, done.stderr
    assert NO_DISPLAY_MESSAGE not in done.stderr and '"gpus"' in done.stdout


def _sandbox_path(tmp_path: Path) -> tuple[Path, Path]:
    """A PATH with only the tools run.sh needs before its display check, and traps for every installer:
    if the check failed, the trap would record the call instead of installing anything."""
    bin_dir, marker = tmp_path / "bin", tmp_path / "installer-called"
    bin_dir.mkdir()
    for tool in ("bash", "sed", "dirname", "cat", "tail", "id", "rm", "env", "ls", "grep"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    for trap in ("apt-get", "apt", "dpkg", "dpkg-deb", "dpkg-query", "sudo", "python3", "pip", "rocmdesk"):
        script = bin_dir / trap
        script.write_text(f"#!/bin/sh\necho {trap} \"$@\" >> {marker}\nexit 97\n")
        script.chmod(0o755)
    return bin_dir, marker


@pytest.mark.parametrize("argv", [[], ["--demo"]])
def test_run_sh_without_display_says_so_in_one_line_and_installs_nothing(argv, tmp_path):
    bin_dir, marker = _sandbox_path(tmp_path)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "TMPDIR": str(tmp_path), "LANG": "C.UTF-8"}
    done = subprocess.run([str(bin_dir / "bash"), str(TOP / "scripts" / "run.sh"), *argv], env=env,
                          capture_output=True, text=True, timeout=30)
    assert not marker.exists(), marker.read_text()
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert len(lines) == 1 and "no display" in lines[0] and "rocmdesk diagnose" in lines[0], lines


def test_run_sh_with_a_display_goes_on_to_install(tmp_path):
    """The other side of the check: with DISPLAY set it does not stop there (it reaches the installer,
    here a trap), so the test above proves the check and not a broken script."""
    bin_dir, marker = _sandbox_path(tmp_path)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "TMPDIR": str(tmp_path), "LANG": "C.UTF-8",
           "DISPLAY": ":99"}
    done = subprocess.run([str(bin_dir / "bash"), str(TOP / "scripts" / "run.sh")], env=env,
                          capture_output=True, text=True, timeout=30)
    assert "no display" not in done.stdout + done.stderr
    assert done.returncode != 0 and marker.exists()  # stopped by a trap, never by the display check
