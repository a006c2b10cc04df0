"""Fail a test the moment anything tries to start a process (subprocess, os.exec*/spawn*/fork, QProcess).

Used where the rule is "nothing runs": opening another machine's fix must never start pkexec, the helper
or pip, so every way of starting a process in this interpreter raises and is recorded.
"""

from __future__ import annotations

import os
import subprocess
from contextlib import contextmanager

import pytest


class ProcessStarted(AssertionError):
    pass


@contextmanager
def no_process(monkeypatch: pytest.MonkeyPatch):
    """Within the block, starting any process raises ProcessStarted; yields the list of attempts."""
    attempts: list[str] = []

    def refuse(name):
        def blocked(*args, **kwargs):
            attempts.append(f"{name}{args[:2]!r}")
            raise ProcessStarted(f"a process was started: {name}{args[:2]!r}")
        return blocked

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse("subprocess.Popen"))
    for name in ("execv", "execve", "execvp", "execvpe", "execl", "execlp", "execle", "posix_spawn",
                 "posix_spawnp", "spawnv", "spawnve", "fork", "forkpty", "system", "popen"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, refuse(f"os.{name}"))
    try:
        from PySide6 import QtCore
    except ImportError:
        QtCore = None
    if QtCore is not None:
        monkeypatch.setattr(QtCore.QProcess, "start", refuse("QProcess.start"))
        monkeypatch.setattr(QtCore.QProcess, "startDetached", refuse("QProcess.startDetached"))
    try:
        yield attempts
    finally:
        monkeypatch.undo()
