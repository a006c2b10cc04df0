"""GPU processes in a bundle: command line without secrets, the exe link without the program."""

from __future__ import annotations

import os

from rocmdesk.host import HostRoot
from rocmdesk.report.collect import Collector, _add_gpu_processes
from rocmdesk.report.redact import Redactor
from rocmdesk.report.reduce import SECRET_VALUE, cmdline_args


def _red() -> Redactor:
    red = Redactor()
    red.add_user("alice", "/home/alice")
    red.add_hostname("ws-alice-1")
    return red


def _argv(*args: str) -> bytes:
    return b"\0".join(a.encode() for a in args) + b"\0"


def test_secret_option_values_are_removed_and_paths_redacted():
    out = cmdline_args(_argv("/home/alice/venv/bin/python", "main.py", "--api-key", "sk-1", "--TOKEN=abc",
                             "--db-password=hunter2", "--listen", "ws-alice-1", "--auth", "--port", "8188"),
                       _red()).split(b"\0")
    assert out == [b"/home/user1/venv/bin/python", b"main.py", b"--api-key", SECRET_VALUE.encode(),
                   f"--TOKEN={SECRET_VALUE}".encode(), f"--db-password={SECRET_VALUE}".encode(), b"--listen",
                   b"host1", b"--auth", b"--port", b"8188", b""]  # a flag without a value hides nothing


def test_cmdline_without_trailing_nul_or_empty_stays_so():
    assert cmdline_args(b"", _red()) == b""
    assert cmdline_args(b"python3\0--key", _red()) == b"python3\0--key"
    assert cmdline_args(b"\xff\xfe\0", _red()) == "\ufffd\ufffd".encode() + b"\0"  # garbage: decoded, not fatal


def test_gpu_process_links_are_kept_without_their_targets(tmp_path):
    proc = tmp_path / "proc" / "77"
    (proc / "fd").mkdir(parents=True)
    (tmp_path / "usr/bin").mkdir(parents=True)
    (tmp_path / "usr/bin/python3.12").write_bytes(b"\x7fELF" + b"\0" * 100)
    os.symlink("/usr/bin/python3.12", proc / "exe")
    os.symlink("/dev/kfd", proc / "fd" / "4")
    os.symlink("/home/alice/.ssh/id_rsa", proc / "fd" / "9")  # a non-GPU fd: never recorded
    (proc / "cmdline").write_bytes(_argv("python3", "run.py"))
    (proc / "comm").write_text("python3\n")
    col = Collector(HostRoot(tmp_path))
    assert col.gpu_pids == {"77"}
    _add_gpu_processes(col)
    kinds = {p: m.kind for p, m in col.members.items()}
    assert kinds["proc/77/exe"] == "link" and col.members["proc/77/exe"].target == "usr/bin/python3.12"
    assert kinds["proc/77/fd/4"] == "link" and "proc/77/fd/9" not in kinds
    assert kinds["proc/77/cmdline"] == "file" and kinds["proc/77/comm"] == "file"
    assert "usr/bin/python3.12" not in kinds and not any("id_rsa" in p for p in kinds)


def test_a_program_read_by_a_check_is_left_out_with_a_note(tmp_path):
    (tmp_path / "usr/bin").mkdir(parents=True)
    (tmp_path / "usr/bin/tool").write_bytes(b"\x7fELF" + b"\0" * 64)
    col = Collector(HostRoot(tmp_path))
    col.add_path("/usr/bin/tool", "read by check x")
    assert "usr/bin/tool" not in col.members
    assert any("a program or library" in n for n in col.notes)


def test_the_capture_scan_is_the_telemetry_scan_with_display_nodes(tmp_path):
    """One bounded /proc scan (telemetry.proc_scan): a compositor holding only card0 is a GPU process for a
    bundle, and a root folder's relative fd links (as a snapshot stores them) are followed inside the root."""
    from tests.support.procs import fake_process

    fake_process(tmp_path, 10, comm="gnome-shell", fds={3: "/dev/dri/card0"})
    fake_process(tmp_path, 11, comm="python3", fds={4: "../../../dev/kfd"})
    fake_process(tmp_path, 12, comm="bash", fds={0: "/dev/pts/0"})
    (tmp_path / "dev/dri").mkdir(parents=True)
    (tmp_path / "dev/kfd").write_text("")
    (tmp_path / "dev/dri/card0").write_text("")
    assert Collector(HostRoot(tmp_path)).gpu_pids == {"10", "11"}
    from rocmdesk.telemetry.proc_scan import gpu_processes

    assert [pid for pid, _ in gpu_processes(HostRoot(tmp_path))] == [11]  # compute devices only for telemetry
