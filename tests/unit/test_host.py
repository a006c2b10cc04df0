"""The host-root seam: reads stay inside the root, failures carry reasons, commands are bounded."""

from __future__ import annotations

import os
import time

import pytest

from rocmdesk.host import CommandRunner, HostReadError, HostRoot, ReadFailure, RecordedRunner, runner_for


@pytest.fixture
def root(tmp_path):
    (tmp_path / "sys" / "a").mkdir(parents=True)
    (tmp_path / "sys" / "a" / "value").write_text("42\n")
    return tmp_path


def test_reads_inside_root(root):
    host = HostRoot(root)
    assert host.read_text("/sys/a/value") == "42\n"
    assert host.read_text("sys/a/value") == "42\n"
    assert host.listdir("/sys/a") == ["value"]
    assert not host.is_live


def test_absolute_symlink_is_rerooted(root):
    os.symlink("/sys/a", root / "sys" / "link")
    host = HostRoot(root)
    assert host.read_text("/sys/link/value") == "42\n"
    assert host.real_path("/sys/link/value") == str(root / "sys" / "a" / "value")


def test_dotdot_cannot_escape_root(root):
    os.symlink("../../../../../../etc", root / "sys" / "escape")
    host = HostRoot(root)
    assert host.resolve_host_path("/sys/escape/passwd") == "/etc/passwd"
    with pytest.raises(HostReadError) as err:
        host.read_text("/sys/escape/passwd")
    assert err.value.failure is ReadFailure.MISSING


def test_symlink_loop_is_reported(root):
    os.symlink("loop2", root / "sys" / "loop1")
    os.symlink("loop1", root / "sys" / "loop2")
    with pytest.raises(HostReadError) as err:
        HostRoot(root).read_text("/sys/loop1")
    assert err.value.failure is ReadFailure.LOOP
    assert not HostRoot(root).exists("/sys/loop1")


@pytest.mark.parametrize(
    ("setup", "failure"),
    [
        (lambda p: None, ReadFailure.MISSING),
        (lambda p: p.mkdir(), ReadFailure.IS_DIRECTORY),
    ],
)
def test_read_failures(root, setup, failure):
    target = root / "sys" / "x"
    setup(target)
    with pytest.raises(HostReadError) as err:
        HostRoot(root).read_text("/sys/x")
    assert err.value.failure is failure
    assert err.value.path == "/sys/x"


def test_unreadable_file(root, monkeypatch):
    target = root / "sys" / "secret"
    target.write_text("1")

    def deny(path, flags, *a):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "open", deny)
    with pytest.raises(HostReadError) as err:
        HostRoot(root).read_text("/sys/secret")
    assert err.value.failure is ReadFailure.PERMISSION


def test_vanished_device(root, monkeypatch):
    target = root / "sys" / "gone"
    target.write_text("1")

    def gone(fd, n):
        raise OSError(19, "No such device")

    monkeypatch.setattr(os, "read", gone)
    with pytest.raises(HostReadError) as err:
        HostRoot(root).read_text("/sys/gone")
    assert err.value.failure is ReadFailure.GONE
    assert "ENODEV" in str(err.value)


def test_too_large(root):
    (root / "big").write_bytes(b"x" * 5000)
    with pytest.raises(HostReadError) as err:
        HostRoot(root).read_text("/big", max_bytes=1000)
    assert err.value.failure is ReadFailure.TOO_LARGE


def test_runner_requires_absolute_path():
    with pytest.raises(ValueError):
        CommandRunner().run(["true"])


def test_runner_runs_and_captures():
    result = CommandRunner().run(["/bin/sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (result.returncode, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert not result.ok


def test_runner_kills_hung_tool_and_its_children():
    start = time.monotonic()
    result = CommandRunner().run(["/bin/sh", "-c", "sleep 30 & sleep 30"], timeout=0.5)
    assert result.timed_out and result.error and "timed out" in result.error
    assert time.monotonic() - start < 5


def test_runner_missing_program():
    result = CommandRunner().run(["/nonexistent/rocm-smi"])
    assert result.error and result.error.startswith("could not start")


def test_recorded_runner_round_trip(tmp_path):
    rec = RecordedRunner()
    rec.add(["/usr/bin/rocm-smi", "--json"], stdout="{}")
    assert rec.which("rocm-smi") == "/usr/bin/rocm-smi"
    assert rec.run(["/usr/bin/rocm-smi", "--json"]).stdout == "{}"
    assert rec.run(["/usr/bin/amd-smi"]).error
    (tmp_path / "rocmdesk").mkdir()
    import json

    (tmp_path / "rocmdesk" / "commands.json").write_text(json.dumps(rec.to_json()))
    replay = runner_for(HostRoot(tmp_path))
    assert isinstance(replay, RecordedRunner)
    assert replay.run(["/usr/bin/rocm-smi", "--json"]).stdout == "{}"


def test_runner_feeds_text_on_stdin():
    # run(stdin=...) takes text like every other field of a CommandResult; the pipe is bytes
    result = CommandRunner().run(["/bin/cat"], stdin="héllo\n")
    assert result.ok and result.stdout == "héllo\n"


def test_runner_history_is_bounded(monkeypatch):
    # the window's runner also serves the tool pollers (rocm-smi every few seconds, for days)
    import rocmdesk.host as host

    monkeypatch.setattr(host, "HISTORY_LIMIT", 5)
    live = CommandRunner()
    for n in range(8):
        live.run(["/bin/sh", "-c", f"echo {n}"])
    assert [r.stdout for r in live.history] == [f"{n}\n" for n in range(3, 8)]
    recorded = RecordedRunner()
    recorded.add(["/usr/bin/rocm-smi", "--json"], stdout="{}")
    for _ in range(8):
        recorded.run(["/usr/bin/rocm-smi", "--json"])
    recorded.run(["/usr/bin/amd-smi"])
    assert len(recorded.history) == 5 and recorded.history[-1].error


@pytest.mark.parametrize("content", ['[]', '"text"', '{"/usr/bin/rocm-smi": []}', '{"/usr/bin/rocm-smi": {"x": 1}}',
                                     '[' * 5000])
def test_garbage_command_recordings_are_ignored(tmp_path, content):
    # a snapshot is untrusted input: a damaged commands.json means "no recordings", never a crash
    (tmp_path / "rocmdesk").mkdir()
    (tmp_path / "rocmdesk" / "commands.json").write_text(content)
    runner = runner_for(HostRoot(tmp_path))
    assert isinstance(runner, RecordedRunner)
    assert runner.recordings == {}
    assert runner.run(["/usr/bin/rocm-smi"]).error == "not recorded (tool not available)"


def test_read_bytes_of_a_fifo_in_a_snapshot_does_not_block(tmp_path):
    # read_text already opens non-blocking; read_bytes (cmdline, environ, module files) must too
    import threading

    (tmp_path / "proc" / "42").mkdir(parents=True)
    os.mkfifo(tmp_path / "proc" / "42" / "environ")
    root = HostRoot(tmp_path)
    done: list[object] = []

    def read() -> None:
        try:
            done.append(root.read_bytes("/proc/42/environ"))
        except HostReadError as exc:
            done.append(exc)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(3)
    if worker.is_alive():  # unblock the stuck open() so the thread can end
        fd = os.open(tmp_path / "proc" / "42" / "environ", os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
    assert len(done) == 1 and isinstance(done[0], HostReadError)  # refused at once, not read as empty
    assert done[0].failure is ReadFailure.NOT_REGULAR


def test_a_placeholder_nested_too_deep_is_just_a_file(tmp_path):
    # /dev/kfd in a snapshot is a small JSON record; garbage there must not crash stat()/getxattr()
    import stat as stat_mod

    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "kfd").write_text("[" * 4000)
    root = HostRoot(tmp_path)
    assert stat_mod.S_ISREG(root.stat("/dev/kfd").st_mode)
    assert root.getxattr("/dev/kfd", "system.posix_acl_access") is None


def test_a_device_in_place_of_a_file_is_refused_not_streamed():
    """/dev/zero would give 1 MiB of zeros before the size limit: it is refused at the first full chunk."""
    from rocmdesk.host import read_fd_bytes

    with pytest.raises(HostReadError) as caught:
        read_fd_bytes("/dev/zero")
    assert caught.value.failure is ReadFailure.NOT_REGULAR


def test_a_large_regular_file_is_still_read(tmp_path):
    from rocmdesk.host import read_fd_bytes

    (tmp_path / "big").write_bytes(b"7" * 200_000)
    assert read_fd_bytes(str(tmp_path / "big")) == b"7" * 200_000


def test_open_regular_refuses_a_fifo_at_once_and_opens_files(tmp_path):
    """Readers that seek or read a head (initramfs, METADATA) used a plain open(): a FIFO blocked them forever."""
    from rocmdesk.host import open_regular

    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(HostReadError) as caught:
        open_regular(str(tmp_path / "fifo"))
    assert caught.value.failure is ReadFailure.NOT_REGULAR
    (tmp_path / "file").write_bytes(b"abc")
    with open_regular(str(tmp_path / "file")) as fh:
        fh.seek(1)
        assert fh.read() == b"bc"
