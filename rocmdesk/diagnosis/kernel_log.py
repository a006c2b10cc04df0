"""This boot's kernel messages: a syslog file, else ``journalctl -k -b 0``, else ``dmesg``, with why each
source preferred to the one used was passed over (the checks' skip reasons)."""

from __future__ import annotations

import logging
import os
import re
import stat
from dataclasses import dataclass, field

from rocmdesk.diagnosis.etc_parsers import parse_int
from rocmdesk.diagnosis.model import SourcedLine
from rocmdesk.host import CommandRunner, HostReadError, HostRoot, RecordedRunner

log = logging.getLogger(__name__)

KERNEL_LOG_FILES: tuple[str, ...] = ("/var/log/kern.log", "/var/log/dmesg")
KERNEL_LOG_MAX_BYTES = 32 << 20
# Without a syslog daemon (Fedora, Arch, openSUSE, many Ubuntu installs) the kernel log is only in the journal
# and the ring buffer. `-k` = kernel messages only, `-b 0` = this boot only, short-monotonic = dmesg-like
# "[seconds since boot]" stamps (journalctl(1)). Commands run on the live root only; a snapshot replays the
# outputs recorded when it was captured (rocmdesk/commands.json).
JOURNALCTL_KERNEL_ARGS: tuple[str, ...] = ("-k", "-b", "0", "--no-pager", "-o", "short-monotonic")
KERNEL_LOG_TOOL_DIRS: tuple[str, ...] = ("/usr/bin", "/bin", "/usr/sbin", "/sbin")
KERNEL_LOG_COMMAND_MAX_BYTES = 8 << 20  # one boot's kernel messages are rarely over 1 MiB; the head matters
JOURNALCTL_TIMEOUT_S = 10.0
DMESG_TIMEOUT_S = 5.0


@dataclass(slots=True)
class KernelLog:
    """This boot's kernel messages and where they came from (evidence cites ``source`` and the line)."""

    source: str  # host path, or "<command line> (output)" for journalctl/dmesg output
    lines: list[tuple[int | None, str]] = field(default_factory=list)  # (line in the source, text)
    truncated: bool = False  # only the first KERNEL_LOG_COMMAND_MAX_BYTES of a command's output were kept
    passed_over: tuple[str, ...] = ()  # why sources preferred to this one were not used

    def grep(self, pattern: re.Pattern[str]) -> list[tuple[SourcedLine, re.Match[str]]]:
        out = []
        for number, text in self.lines:
            m = pattern.search(text)
            if m:
                out.append((SourcedLine(self.source, number, text.strip()), m))
        return out


def search(root: HostRoot, runner: CommandRunner | None) -> tuple[KernelLog | None, list[str]]:
    """Try the sources in order of preference; (log or None, why the others were passed over).

    A file counts when it holds this boot's start ("Linux version" banner); one without it was rotated
    since boot (the firmware and BAR lines are in an older file), so the journal or ring buffer comes
    first and the file is the last resort. A file last written before this boot started (btime of
    /proc/stat) is stale (the syslog daemon was removed) and never used."""
    problems: list[str] = []
    fallback: KernelLog | None = None
    booted = boot_time(root)  # /proc/stat: the live machine (a snapshot does not carry it)
    for path in KERNEL_LOG_FILES:
        text, exact, why, mtime = _read_big(root, path)
        if text is None:
            problems.append(f"{path}: {why}")
            continue
        if booted is not None and mtime is not None and mtime < booted:
            problems.append(f"{path}: last written before this boot (nothing writes it any more)")
            continue
        if not _BOOT_MARKER.search(text):
            problems.append(f"{path}: does not reach back to this boot's start (rotated since boot)")
            fallback = fallback or KernelLog(path, _current_boot(text, exact))
            continue
        return KernelLog(path, _current_boot(text, exact), passed_over=tuple(problems)), problems
    for tool in ("journalctl", "dmesg"):
        log_, why = from_command(root, runner, tool)
        if log_ is not None:
            log_.passed_over = tuple(problems)
            return log_, problems
        problems.append(why)
    if fallback is not None:
        fallback.passed_over = tuple(problems)
        return fallback, problems
    return None, problems


def from_command(root: HostRoot, runner: CommandRunner | None, tool: str) -> tuple[KernelLog | None, str]:
    """``journalctl -k -b 0 ...`` or ``dmesg`` output through the runner: (log, "") or (None, why not)."""
    if runner is None:
        return None, f"{tool}: no command runner"
    if not root.is_live and not isinstance(runner, RecordedRunner):
        # never mix this machine's journal into another root: a snapshot uses what it recorded
        return None, f"{tool}: not run for a root that is not this machine"
    program = runner.which(tool, KERNEL_LOG_TOOL_DIRS)
    if program is None:
        return None, (f"{tool}: not installed" if root.is_live
                      else f"{tool}: no output recorded in this snapshot")
    argv = [program, *JOURNALCTL_KERNEL_ARGS] if tool == "journalctl" else [program]
    timeout = JOURNALCTL_TIMEOUT_S if tool == "journalctl" else DMESG_TIMEOUT_S
    result = runner.run(argv, timeout=timeout, max_output_bytes=KERNEL_LOG_COMMAND_MAX_BYTES)
    source = f"{' '.join(argv)} (output)"
    if tool == "journalctl":
        lines, why = parse_journal_output(result.stdout, result.stderr, result.returncode, result.error,
                                          result.timed_out, result.truncated)
    else:
        lines, why = parse_dmesg_output(result.stdout, result.stderr, result.returncode, result.error,
                                        result.timed_out, result.truncated, _dmesg_restrict(root))
    if lines is None:
        return None, f"{tool}: {why}"
    return KernelLog(source, lines, truncated=result.truncated), ""


def _dmesg_restrict(root: HostRoot) -> str | None:
    text = root.try_read_text("/proc/sys/kernel/dmesg_restrict")
    return text.strip() if text is not None else None


def boot_time(root: HostRoot) -> float | None:
    """Epoch seconds of this boot (``btime`` of /proc/stat), or None."""
    for line in (root.try_read_text("/proc/stat") or "").splitlines():
        words = line.split()
        if len(words) == 2 and words[0] == "btime":
            value = parse_int(words[1])
            # garbage, or a number no float holds (--root folder): no boot time rather than a crash
            return float(value) if value is not None and 0 < value < 1 << 63 else None
    return None


def _read_big(root: HostRoot, path: str) -> tuple[str | None, bool, str, float | None]:
    """(text, line numbers exact, why not read, mtime); a log over the limit is read from its tail."""
    try:
        real = root.real_path(path)
        # O_NONBLOCK and regular files only: a FIFO planted in a snapshot or --root folder would block
        # open() forever, and a device node (a link to /dev/zero) would be read without end
        fd = os.open(real, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                return None, False, "not a regular file", None
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - KERNEL_LOG_MAX_BYTES))
            data = fh.read()
    except HostReadError as exc:
        return None, False, exc.failure.value, None
    except OSError as exc:
        return None, False, HostReadError.from_oserror(exc, path).failure.value, None
    exact = size <= KERNEL_LOG_MAX_BYTES
    text = data.decode("utf-8", "replace")
    if not exact:
        text = text.split("\n", 1)[-1]  # drop the cut first line
    return text, exact, "", st.st_mtime


_BOOT_MARKER = re.compile(r"\bLinux version \d")
# journalctl's own lines: "-- Boot 0f3c... --", "-- No entries --", "-- Logs begin at ... --" (older versions)
_JOURNAL_META = re.compile(r"^-- .* --$")
# Printed (to stderr) when the user may not read the system journal, so `-k` shows nothing: "Hint: You are
# currently not seeing messages from other users and the system. Users in groups 'adm', 'systemd-journal' can
# see all messages." (systemd/systemd#23018, #7887); "No journal files were opened due to insufficient
# permissions." when no file at all can be opened.
_JOURNAL_DENIED = re.compile(r"not seeing messages|insufficient permissions|Permission denied", re.IGNORECASE)
# util-linux dmesg when the kernel refuses the syslog read: "dmesg: read kernel buffer failed: Operation not
# permitted" (kernel.dmesg_restrict = 1 and no CAP_SYSLOG: Documentation/admin-guide/sysctl/kernel.rst).
_DMESG_DENIED = re.compile(r"Operation not permitted|Permission denied", re.IGNORECASE)


def _command_failure(error: str | None, timed_out: bool, returncode: int | None, stderr: str) -> str:
    if timed_out:
        return error or "timed out and was killed"
    if error:
        return "no output recorded in this snapshot" if "not recorded" in error else error
    first = next((ln.strip() for ln in stderr.splitlines() if ln.strip()), "")
    return f"exited with status {returncode}" + (f" ({first[:160]})" if first else "")


def _numbered_output(stdout: str, truncated: bool) -> list[tuple[int | None, str]]:
    lines = stdout.splitlines()
    if truncated and lines and not stdout.endswith("\n"):
        lines = lines[:-1]  # the cut last line
    return [(number, text) for number, text in enumerate(lines, start=1)]


def parse_journal_output(stdout: str, stderr: str, returncode: int | None, error: str | None = None,
                         timed_out: bool = False, truncated: bool = False
                         ) -> tuple[list[tuple[int | None, str]] | None, str]:
    """(numbered kernel lines, "") of ``journalctl -k -b 0`` output, or (None, why it cannot be used)."""
    if timed_out or (error and not truncated):
        return None, _command_failure(error, timed_out, returncode, stderr)
    numbered = [(n, t) for n, t in _numbered_output(stdout, truncated) if t.strip() and not _JOURNAL_META.match(t)]
    if numbered:
        return numbered, ""
    if _JOURNAL_DENIED.search(stderr):
        return None, ("refused: this user may not read the system journal (root and members of the adm, wheel "
                      "or systemd-journal group may)")
    if returncode not in (0, None):
        return None, _command_failure(error, timed_out, returncode, stderr)
    return None, "no kernel messages for this boot in the journal"

def parse_dmesg_output(stdout: str, stderr: str, returncode: int | None, error: str | None = None,
                       timed_out: bool = False, truncated: bool = False, dmesg_restrict: str | None = None
                       ) -> tuple[list[tuple[int | None, str]] | None, str]:
    """(this boot's numbered lines, "") of ``dmesg`` output, or (None, why it cannot be used)."""
    if timed_out or (error and not truncated):
        return None, _command_failure(error, timed_out, returncode, stderr)
    if stdout.strip():
        lines = _current_boot(stdout)
        if truncated and lines and not stdout.endswith("\n"):
            lines = lines[:-1]
        return lines, ""
    if _DMESG_DENIED.search(stderr) or (returncode not in (0, None) and dmesg_restrict == "1"):
        why = "refused"
        if dmesg_restrict == "1":
            why += " (kernel.dmesg_restrict = 1: only root, or a program with CAP_SYSLOG, may read the kernel log)"
        return None, why + "; `sudo rocmdesk diagnose` can read it"
    if returncode not in (0, None):
        return None, _command_failure(error, timed_out, returncode, stderr)
    return None, "printed nothing"


def _current_boot(text: str, exact: bool = True) -> list[tuple[int | None, str]]:
    """Numbered lines from the last "Linux version" banner on (the running boot); no numbers when
    the text is only the tail of the file."""
    lines = text.splitlines()
    start = 0
    for index in range(len(lines) - 1, -1, -1):
        if _BOOT_MARKER.search(lines[index]):
            start = index
            break
    return [(number if exact else None, lines[number - 1]) for number in range(start + 1, len(lines) + 1)]
