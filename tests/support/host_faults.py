"""Reads of a test root that fail: HostRoot.read_text / read_bytes patched to raise for chosen paths."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rocmdesk.host import HostReadError, HostRoot


def permission_denied(path: str) -> HostReadError:
    """What HostRoot raises for a file the user may not read (EACCES)."""
    return HostReadError.from_oserror(PermissionError(13, "denied"), path)


def deny_reads(monkeypatch: pytest.MonkeyPatch, method: str, matches: Callable[[str], bool],
               error: Callable[[str], BaseException] = permission_denied) -> None:
    """``HostRoot.<method>`` ("read_text" or "read_bytes") raises ``error(path)`` where ``matches(path)``;
    every other read goes through."""
    real = getattr(HostRoot, method)

    def deny(self, path, max_bytes=1 << 20):
        if matches(str(path)):
            raise error(str(path))
        return real(self, path, max_bytes)

    monkeypatch.setattr(HostRoot, method, deny)
