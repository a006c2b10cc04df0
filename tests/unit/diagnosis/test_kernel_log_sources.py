"""Where the kernel-log checks read this boot's kernel messages: log files, else ``journalctl -k -b 0``,
else ``dmesg``; commands only for the live machine, recorded outputs for a snapshot or --root folder."""

from __future__ import annotations

import json
import os
import stat
import time

import pytest

from rocmdesk.diagnosis import kernel_log as kernel_log_mod
from rocmdesk.diagnosis.facts import HostFacts
from rocmdesk.diagnosis.model import Status
from rocmdesk.host import CommandRunner, HostRoot, RecordedRunner
from tests.support import scenarios as sc
from tests.support.scenarios import only_finding

JOURNALCTL = ["/usr/bin/journalctl", "-k", "-b", "0", "--no-pager", "-o", "short-monotonic"]
JOURNAL_SOURCE = " ".join(JOURNALCTL) + " (output)"
FIRMWARE = "amdgpu 0000:03:00.0: Direct firmware load for amdgpu/gc_11_0_0_pfp.bin failed with error -2"
ATOMICS = "kfd kfd: amdgpu: skipped device 1002:744c, PCI rejects atomics 730<0"
JOURNAL = (
    "-- Boot 0f3c2a1b9d8e4f6a8b7c6d5e4f3a2b1c --\n"
    "[    0.000000] ws kernel: Linux version 6.8.0-51-generic (buildd@lcy02) #52-Ubuntu SMP\n"
    "[    3.812345] ws kernel: [drm] amdgpu kernel modesetting enabled.\n"
    f"[    3.910000] ws kernel: {FIRMWARE}\n"
)
DENIED_HINT = ("Hint: You are currently not seeing messages from other users and the system.\n"
               "      Users in groups 'adm', 'systemd-journal' can see all messages.\n"
               "      Pass -q to turn off this notice.\n")
DMESG_REFUSED = "dmesg: read kernel buffer failed: Operation not permitted\n"


@pytest.fixture
def root(tmp_path):
    """The clean workstation as a journald-only system: no /var/log/kern.log, no /var/log/dmesg."""
    root = sc.clean_workstation(tmp_path / "root")
    (root / "var/log/kern.log").unlink()
    assert not (root / "var/log/dmesg").exists()
    return root


def journal_runner(stdout=JOURNAL, **kwargs) -> RecordedRunner:
    runner = RecordedRunner()
    runner.add(JOURNALCTL, stdout=stdout, **kwargs)
    return runner


# -- the journal ---------------------------------------------------------------------------------------------


def test_journal_is_read_when_there_is_no_log_file(root):
    runner = journal_runner()
    finding = only_finding(sc.run_check(root, "firmware-load-failure", runner=runner))
    ev = finding.evidence[0]
    assert ev.path == JOURNAL_SOURCE  # the evidence names the command that gave the line
    assert JOURNAL.splitlines()[ev.line - 1].endswith(FIRMWARE) and ev.line == 4
    assert [r.argv for r in runner.history] == [JOURNALCTL]  # dmesg not needed


def test_journal_preferred_over_dmesg_and_passes_name_it(root):
    runner = journal_runner(stdout=JOURNAL.replace(FIRMWARE, "[drm] Detected VRAM RAM=24560M, BAR=32768M"))
    runner.add(["/usr/bin/dmesg"], stdout=f"[    0.0] Linux version 6.8.0\n[    3.9] {FIRMWARE}\n")
    result = sc.run_check(root, "firmware-load-failure", runner=runner)
    assert result.status is Status.PASS and JOURNAL_SOURCE in result.reason
    log_ = HostFacts(HostRoot(root), runner).kernel_log
    assert log_.passed_over == ("/var/log/kern.log: no such file", "/var/log/dmesg: no such file")


def test_log_file_still_comes_first(tmp_path):
    root = sc.clean_workstation(tmp_path / "root")
    sc.kernel_log(root, ATOMICS)
    runner = journal_runner()
    finding = only_finding(sc.run_check(root, "pcie-atomics-missing", runner=runner))
    assert finding.evidence[0].path == "/var/log/kern.log"
    assert runner.history == type(runner.history)(maxlen=runner.history.maxlen)  # journalctl never ran


def test_rotated_log_file_gives_way_to_the_journal_and_is_the_last_resort(tmp_path):
    root = sc.clean_workstation(tmp_path / "root")
    # logrotate moved this boot's start to kern.log.1: the file has no "Linux version" banner
    sc.write(root, "/var/log/kern.log", f"Nov 30 10:00:00 ws kernel: [ 7200.1] {ATOMICS}\n")
    finding = only_finding(sc.run_check(root, "firmware-load-failure", runner=journal_runner()))
    assert finding.evidence[0].path == JOURNAL_SOURCE
    # no journal, no dmesg: the rotated file is better than nothing
    result = sc.run_check(root, "pcie-atomics-missing", runner=RecordedRunner())
    assert only_finding(result).evidence[0].path == "/var/log/kern.log"


def test_stale_log_file_is_not_this_boot(tmp_path):
    root = sc.clean_workstation(tmp_path / "root")
    sc.kernel_log(root, ATOMICS)  # a previous boot's messages, in a file nothing writes any more
    boot = time.time()
    os.utime(root / "var/log/kern.log", (boot - 86400, boot - 86400))
    sc.write(root, "/proc/stat", f"cpu  1 2 3 4\nbtime {int(boot)}\nprocesses 100\n")
    result = sc.run_check(root, "pcie-atomics-missing", runner=journal_runner())
    assert result.status is Status.PASS and JOURNAL_SOURCE in result.reason
    facts = HostFacts(HostRoot(root), RecordedRunner())
    assert facts.kernel_log is None
    assert any("before this boot" in p for p in facts.kernel_log_problems)


# -- bad journal output ------------------------------------------------------------------------------------


def test_journalctl_missing_falls_back_to_dmesg(root):
    runner = RecordedRunner()
    runner.add(["/usr/bin/dmesg"], stdout=f"[    0.000000] Linux version 6.8.0\n[    3.9] {FIRMWARE}\n")
    finding = only_finding(sc.run_check(root, "firmware-load-failure", runner=runner))
    assert finding.evidence[0].path == "/usr/bin/dmesg (output)" and finding.evidence[0].line == 2
    assert "journalctl: no output recorded in this snapshot" in HostFacts(HostRoot(root), runner).kernel_log.passed_over


def test_journalctl_not_installed_on_the_live_machine():
    class NoTools(CommandRunner):
        def which(self, name, search=()):
            return None

    log_, why = kernel_log_mod.from_command(HostRoot("/"), NoTools(), "journalctl")
    assert log_ is None and why == "journalctl: not installed"


def test_journalctl_hang_and_dmesg_refused_skip_with_reasons(root):
    sc.write(root, "/proc/sys/kernel/dmesg_restrict", "1\n")
    runner = journal_runner(stdout="", returncode=None, timed_out=True, error="timed out after 10 s and was killed")
    runner.add(["/usr/bin/dmesg"], stderr=DMESG_REFUSED, returncode=1)
    for check_id in ("firmware-load-failure", "pcie-atomics-missing", "small-bar"):
        result = sc.run_check(root, check_id, runner=runner)
        assert result.status is Status.SKIP, result
        assert "journalctl: timed out after 10 s" in result.reason
        assert "dmesg: refused (kernel.dmesg_restrict = 1" in result.reason
        assert "/var/log/kern.log: no such file" in result.reason


def test_journal_permission_refused(root):
    runner = journal_runner(stdout="-- No entries --\n", stderr=DENIED_HINT)
    runner.add(["/usr/bin/dmesg"], stderr=DMESG_REFUSED, returncode=1)
    result = sc.run_check(root, "firmware-load-failure", runner=runner)
    assert result.status is Status.SKIP
    assert "journalctl: refused: this user may not read the system journal" in result.reason
    assert "systemd-journal" in result.reason
    assert "dmesg: refused" in result.reason and "dmesg_restrict = 1" not in result.reason  # not shown: unknown
    # journalctl that opened no file at all
    lines, why = kernel_log_mod.parse_journal_output(
        "", "No journal files were opened due to insufficient permissions.\n", 1)
    assert lines is None and why.startswith("refused")


def test_empty_journal_and_empty_dmesg(root):
    runner = journal_runner(stdout="-- No entries --\n")
    runner.add(["/usr/bin/dmesg"], stdout="")
    result = sc.run_check(root, "pcie-atomics-missing", runner=runner)
    assert result.status is Status.SKIP
    assert "journalctl: no kernel messages for this boot" in result.reason
    assert "dmesg: printed nothing" in result.reason


def test_journalctl_failure_exit_status(root):
    runner = journal_runner(stdout="", stderr="Failed to look up boot 0: No such boot ID in journal\n", returncode=1)
    result = sc.run_check(root, "small-bar", runner=runner)
    assert result.status is Status.SKIP
    assert "journalctl: exited with status 1 (Failed to look up boot 0: No such boot ID in journal)" in result.reason


def test_non_utf8_journal_output(root):
    # the live runner decodes with errors="replace" (U+FFFD); a recording may also hold a lone surrogate
    stdout = JOURNAL.replace("modesetting enabled.", "modesetting \ufffd\ufffd enabled \udcff.")
    finding = only_finding(sc.run_check(root, "firmware-load-failure", runner=journal_runner(stdout=stdout)))
    assert finding.evidence[0].line == 4
    json.dumps(finding.to_json())  # the finding still serialises


def test_huge_journal_is_capped(root, monkeypatch):
    monkeypatch.setattr(kernel_log_mod, "KERNEL_LOG_COMMAND_MAX_BYTES", 64 << 10)
    filler = "".join(f"[  {i:>8}.000000] ws kernel: usb 1-1: reset high-speed USB device number 2\n"
                     for i in range(5000))  # about 370 KiB
    runner = journal_runner(stdout=JOURNAL + filler + f"[ 9999.0] ws kernel: {ATOMICS}\n")
    facts = HostFacts(HostRoot(root), runner)
    log_ = facts.kernel_log
    assert log_.truncated and runner.history[-1].truncated
    assert sum(len(t) + 1 for _n, t in log_.lines) <= (64 << 10)
    assert log_.lines[-1][1].endswith("number 2")  # the cut last line is dropped
    assert only_finding(sc.run_check(root, "firmware-load-failure", runner=runner)).evidence[0].line == 4
    result = sc.run_check(root, "pcie-atomics-missing", runner=runner)  # only in the part that was cut off
    assert result.status is Status.PASS and "cut at the output size limit" in result.reason


# -- live runner: real processes --------------------------------------------------------------------------


class ScriptRunner(CommandRunner):
    """A live runner whose journalctl is a script in a temporary folder."""

    def __init__(self, script: str, tmp_path) -> None:
        super().__init__()
        self.program = tmp_path / "journalctl"
        self.program.write_text("#!/usr/bin/python3\nimport sys, time\n" + script)
        self.program.chmod(self.program.stat().st_mode | stat.S_IXUSR)

    def which(self, name, search=()):
        return str(self.program) if name == "journalctl" else None


def test_live_journalctl_non_utf8_bytes(tmp_path):
    script = ("sys.stdout.buffer.write(b'[    1.0] ws kernel: \\xff\\xfe bad bytes\\n"
              f"[    3.9] ws kernel: {FIRMWARE}\\n')\n")
    log_, why = kernel_log_mod.from_command(HostRoot("/"), ScriptRunner(script, tmp_path), "journalctl")
    assert why == "" and "\ufffd\ufffd bad bytes" in log_.lines[0][1]
    assert log_.lines[1] == (2, f"[    3.9] ws kernel: {FIRMWARE}")


def test_live_journalctl_hang_is_killed(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel_log_mod, "JOURNALCTL_TIMEOUT_S", 0.3)
    started = time.monotonic()
    runner = ScriptRunner("print('[ 1.0] ws kernel: hello', flush=True)\ntime.sleep(30)\n", tmp_path)
    log_, why = kernel_log_mod.from_command(HostRoot("/"), runner, "journalctl")
    assert log_ is None and why.startswith("journalctl: timed out after 0.3 s")
    assert time.monotonic() - started < 5


def test_live_journalctl_huge_output_is_cut_and_killed(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel_log_mod, "KERNEL_LOG_COMMAND_MAX_BYTES", 100_000)
    script = (f"sys.stdout.write('[    3.9] ws kernel: {FIRMWARE}\\n')\n"
              "while True:\n    sys.stdout.write('[ 5.0] ws kernel: spam ' + 'x' * 60 + '\\n')\n")
    started = time.monotonic()
    runner = ScriptRunner(script, tmp_path)
    log_, why = kernel_log_mod.from_command(HostRoot("/"), runner, "journalctl")
    assert why == "" and log_.truncated and FIRMWARE in log_.lines[0][1]
    assert len(runner.history[-1].stdout.encode()) == 100_000
    assert time.monotonic() - started < 5


def test_other_root_never_runs_this_machines_journal(root, tmp_path):
    runner = ScriptRunner(f"print('[ 3.9] ws kernel: {FIRMWARE}')\n", tmp_path)
    facts = HostFacts(HostRoot(root), runner)  # a --root folder with the live runner
    assert facts.kernel_log is None
    assert "journalctl: not run for a root that is not this machine" in facts.kernel_log_problems
    assert len(runner.history) == 0


@pytest.mark.parametrize("stat_text", ["btime \n", "btime\t\n", "btime " + "9" * 400 + "\n", "btime -5\n",
                                       "btime nan\n"])
def test_garbage_btime_in_proc_stat_does_not_crash(tmp_path, stat_text):
    root = sc.clean_workstation(tmp_path / "root")
    sc.kernel_log(root, ATOMICS)
    sc.write(root, "/proc/stat", "cpu  1 2 3 4\n" + stat_text)
    facts = HostFacts(HostRoot(root), RecordedRunner())
    assert facts.kernel_log is not None and facts.kernel_log.source == "/var/log/kern.log"


def test_fifo_planted_as_kern_log_does_not_hang(tmp_path):
    import threading

    root = sc.clean_workstation(tmp_path / "root")
    fifo = root / "var/log/kern.log"
    fifo.unlink()
    os.mkfifo(fifo)
    found = {}
    reader = threading.Thread(target=lambda: found.update(
        log=HostFacts(HostRoot(root), journal_runner()).kernel_log), daemon=True)
    reader.start()
    reader.join(5)
    hung = reader.is_alive()
    if hung:  # release the blocked open() so the thread ends
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        reader.join(5)
    assert not hung, "opening a FIFO as /var/log/kern.log blocked the diagnosis"
    assert found["log"].source == JOURNAL_SOURCE  # the FIFO is no log; the journal is read instead
