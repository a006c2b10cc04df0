"""The one builder of fake ``/proc/<pid>`` entries: what a process looks like to rocmdesk's readers.

``comm``, ``cmdline`` (NUL-separated argv), ``environ`` (NUL-separated NAME=value), an ``exe`` link and
open file descriptors as links (``fd/5 -> /dev/kfd`` is how a GPU process shows). Other helpers (GPU
processes of a scenario, a ComfyUI server, a KFD compute process) build on this one.
"""

from __future__ import annotations

import os
from pathlib import Path


def environ_bytes(env: dict[str, str]) -> bytes:
    """``/proc/<pid>/environ``: NAME=value entries, each ended by a NUL."""
    return b"".join(f"{k}={v}".encode() + b"\0" for k, v in env.items())


def fake_process(root: Path, pid: int, *, comm: str | None = None, argv: list[str] | None = None,
                 env: dict[str, str] | None = None, exe: str | None = None,
                 fds: dict[int, str] | None = None) -> Path:
    """Write ``<root>/proc/<pid>``; only what is given is written (a reader must cope with the rest missing)."""
    base = root / "proc" / str(pid)
    base.mkdir(parents=True, exist_ok=True)
    if comm is not None:
        (base / "comm").write_text(comm + "\n")
    if argv is not None:
        (base / "cmdline").write_bytes(b"".join(a.encode() + b"\0" for a in argv))
    if env is not None:
        (base / "environ").write_bytes(environ_bytes(env))
    if exe is not None:
        os.symlink(exe, base / "exe")
    if fds:
        (base / "fd").mkdir(exist_ok=True)
        for number, target in fds.items():
            os.symlink(target, base / "fd" / str(number))
    return base
