"""Write a file so that readers see the old content or the new one, never a half-written file.

The one implementation of write-to-temporary-and-rename for the app (the privileged helper keeps its
own: it is stdlib-only and standalone on purpose).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal, overload


@overload
def atomic_open(path: str | os.PathLike[str], text: Literal[False] = False,
                mode: int = 0o644) -> contextlib.AbstractContextManager[IO[bytes]]: ...
@overload
def atomic_open(path: str | os.PathLike[str], text: Literal[True],
                mode: int = 0o644) -> contextlib.AbstractContextManager[IO[str]]: ...
@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], text: bool = False, mode: int = 0o644) -> Iterator[IO[Any]]:
    """A file to write ``path``'s new content to, streamed; renamed over ``path`` when the block ends.

    The temporary file lives in the same folder (a rename across file systems is not atomic), is
    flushed to disk before the rename, and is removed when anything fails, so a full disk or an
    exception in the block leaves the old file and no temporary behind. Text is UTF-8.
    """
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with (os.fdopen(fd, "w", encoding="utf-8", newline="") if text else os.fdopen(fd, "wb")) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` atomically (see :func:`atomic_open`)."""
    with atomic_open(path, mode=mode) as handle:
        handle.write(data)


def atomic_write_text(path: str | os.PathLike[str], text: str, mode: int = 0o644) -> None:
    """Replace ``path`` with ``text`` (UTF-8) atomically (see :func:`atomic_open`)."""
    with atomic_open(path, True, mode) as handle:
        handle.write(text)
