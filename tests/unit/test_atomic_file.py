"""The one write-to-temporary-and-rename: readers see the old file or the new one, and nothing is left behind."""

from __future__ import annotations

import os
import stat

import pytest

from rocmdesk.atomic_file import atomic_open, atomic_write_bytes, atomic_write_text


def test_writes_replace_the_file_with_the_given_mode(tmp_path):
    path = tmp_path / "report.html"
    path.write_text("old")
    atomic_write_text(path, "new · ünïcode\n")
    assert path.read_text(encoding="utf-8") == "new · ünïcode\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    atomic_write_bytes(str(path), b"\x00\x01", 0o600)
    assert path.read_bytes() == b"\x00\x01" and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert os.listdir(tmp_path) == ["report.html"]


def test_streamed_text_keeps_newlines_as_written(tmp_path):
    path = tmp_path / "t.csv"
    with atomic_open(path, True) as fh:
        fh.write("a,b\r\n")
        fh.write("1,2\n")
    assert path.read_bytes() == b"a,b\r\n1,2\n"


def test_an_error_in_the_block_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text("old")
    with pytest.raises(RuntimeError), atomic_open(path) as fh:
        fh.write(b"half")
        raise RuntimeError("disk full")
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["settings.json"]
    with pytest.raises(TypeError):
        atomic_write_text(path, b"not text")  # type: ignore[arg-type]
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["settings.json"]


def test_a_missing_folder_or_a_folder_in_the_way_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        atomic_write_text(tmp_path / "missing" / "x.html", "x")
    (tmp_path / "dir").mkdir()
    with pytest.raises(OSError):
        atomic_write_text(tmp_path / "dir", "x")
    assert os.listdir(tmp_path) == ["dir"] and os.listdir(tmp_path / "dir") == []
