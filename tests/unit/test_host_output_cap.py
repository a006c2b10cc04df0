"""CommandRunner.run(max_output_bytes=...): bounded memory for tools that may print a lot (the kernel journal)."""

from __future__ import annotations

from rocmdesk.host import CommandRunner, RecordedRunner


def test_capped_run_keeps_exit_status_and_stderr():
    result = CommandRunner().run(["/bin/sh", "-c", "echo out; echo err >&2; exit 3"], max_output_bytes=1000)
    assert (result.returncode, result.stdout, result.stderr, result.truncated) == (3, "out\n", "err\n", False)
    assert result.error is None and not result.ok


def test_capped_run_passes_stdin():
    result = CommandRunner().run(["/bin/cat"], stdin="héllo\n", max_output_bytes=1000)
    assert result.ok and result.stdout == "héllo\n"


def test_capped_run_cuts_and_kills():
    result = CommandRunner().run(["/usr/bin/yes", "spam"], timeout=5, max_output_bytes=10_000)
    assert result.truncated and len(result.stdout) == 10_000 and result.returncode is None
    assert not result.timed_out and result.duration_s < 4


def test_recorded_run_applies_the_cap_in_utf8_bytes():
    runner = RecordedRunner()
    runner.add(["/usr/bin/tool"], stdout="é" * 10)  # 20 bytes
    result = runner.run(["/usr/bin/tool"], max_output_bytes=5)
    assert result.truncated and result.stdout == "éé\ufffd"
    assert not runner.run(["/usr/bin/tool"], max_output_bytes=20).truncated
