"""The one seam between rocmdesk and the machine it looks at.

Every read of the host goes through a :class:`HostRoot`: the live machine is ``HostRoot("/")``;
tests, the demo and support snapshots are other folders laid out like ``/``. Symlinks inside a root
are resolved *inside* it (like a chroot), so a snapshot can never make us read the analyst's own
``/sys``. Commands go through a :class:`CommandRunner` (absolute paths, ``shell=False``, a timeout,
the whole process group killed on time-out) or a :class:`RecordedRunner` that replays outputs.
"""

from __future__ import annotations

import enum
import errno
import json
import logging
import os
import stat as _stat
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field

TYPE_CHECKING = False  # typing is not imported at run time: `rocmdesk sample` starts faster
if TYPE_CHECKING:
    import subprocess
    from typing import Any, BinaryIO

log = logging.getLogger(__name__)

MAX_SYMLINKS = 40
DEFAULT_MAX_BYTES = 1 << 20


class ReadFailure(enum.Enum):
    """Why a file could not be read; ``value`` is the wording users see."""

    MISSING = "no such file"
    PERMISSION = "unreadable (permission denied)"
    GONE = "device gone (ENODEV)"
    IS_DIRECTORY = "a directory where a file was expected"
    NOT_REGULAR = "not a regular file (a FIFO, socket or device)"
    LOOP = "symlink loop"
    TOO_LARGE = "file too large"
    IO = "I/O error"
    ESCAPES = "path escapes the host root"


_ERRNO_FAILURE = {
    errno.ENOENT: ReadFailure.MISSING,
    errno.ENOTDIR: ReadFailure.MISSING,
    errno.EACCES: ReadFailure.PERMISSION,
    errno.EPERM: ReadFailure.PERMISSION,
    errno.ENODEV: ReadFailure.GONE,
    errno.ENXIO: ReadFailure.GONE,
    errno.ESHUTDOWN: ReadFailure.GONE,
    errno.EISDIR: ReadFailure.IS_DIRECTORY,
    errno.ELOOP: ReadFailure.LOOP,
}


class HostReadError(OSError):
    """A read of the host failed; ``failure`` says why in words a user understands."""

    def __init__(self, failure: ReadFailure, path: str, detail: str = "") -> None:
        super().__init__(failure.value if not detail else f"{failure.value}: {detail}")
        self.failure = failure
        self.path = path

    @classmethod
    def from_oserror(cls, exc: OSError, path: str) -> HostReadError:
        failure = _ERRNO_FAILURE.get(exc.errno or 0, ReadFailure.IO)
        return cls(failure, path, "" if failure is not ReadFailure.IO else str(exc.strerror or exc))


def read_fd_text(real_path: str, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """Read a (sysfs) file at an already-resolved real path; raises OSError.

    sysfs attributes must be read with few syscalls (a sample reads hundreds of them), and a
    file may vanish or start failing with ENODEV at any time.
    """
    return read_fd_bytes(real_path, max_bytes).decode("utf-8", errors="replace")


def read_fd_bytes(real_path: str, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The bytes of a file at an already-resolved real path; raises OSError (HostReadError TOO_LARGE,
    NOT_REGULAR)."""
    # O_NONBLOCK: a FIFO planted in a snapshot tree must not block the sampler (regular and sysfs files
    # ignore the flag). Only regular files are read: sysfs attributes and procfs files are S_IFREG, so a
    # FIFO, socket or device in their place is refused with that reason instead of reading as an empty
    # file or as whatever the device streams. The check costs an fstat, so it is made only where such a
    # file shows: an empty read (a FIFO without a writer) or one past 64 KiB (a device); a sample reads
    # hundreds of small files and never pays it.
    fd = os.open(real_path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        chunks = []
        size = 0
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                if not size:
                    _refuse_irregular(fd, real_path)
                break
            if not size and len(chunk) == 65536:
                _refuse_irregular(fd, real_path)
            size += len(chunk)
            if size > max_bytes:
                raise HostReadError(ReadFailure.TOO_LARGE, real_path, f"over {max_bytes} bytes")
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def open_regular(real_path: str) -> BinaryIO:
    """A binary file object for an already-resolved path, only if it is a regular file.

    For readers that seek or read a head (initramfs images, wheel METADATA, library blobs): a plain
    ``open()`` of a FIFO planted in a snapshot or --root folder blocks until a writer comes, forever.
    Opened non-blocking (ignored by regular files), refused with HostReadError NOT_REGULAR otherwise.
    """
    fd = os.open(real_path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        _refuse_irregular(fd, real_path)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def _refuse_irregular(fd: int, real_path: str) -> None:
    mode = os.fstat(fd).st_mode
    if not _stat.S_ISREG(mode):
        raise HostReadError(ReadFailure.IS_DIRECTORY if _stat.S_ISDIR(mode) else ReadFailure.NOT_REGULAR, real_path)


# Nothing rocmdesk writes nests deeper than ~8; a snapshot or bundle nesting past this is hostile.
MAX_JSON_DEPTH = 64


class JsonLimitError(ValueError):
    """JSON refused for its shape (nesting), not its syntax; ``str(exc)`` is the user-facing reason."""


def loads_json(data: str | bytes, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` for untrusted text: deep nesting is a :class:`JsonLimitError`, never a RecursionError.

    CPython's decoder recurses once per level and raises RecursionError near 1000 levels (a
    200k-deep manifest); a shallower but still absurd depth would make every recursive walk of
    the result (redaction, scrubbing) fail later instead, so the depth is checked here, once.
    Syntax errors stay ``json.JSONDecodeError`` (a ValueError), as do integers past CPython's
    4300-digit limit.
    """
    if data.count("[") + data.count("{") <= max_depth if isinstance(data, str) else False:
        return json.loads(data)  # cannot nest deeper than it has brackets: no walk (86 400 history lines)
    try:
        value = json.loads(data)
    except RecursionError:
        raise JsonLimitError(f"JSON nested too deeply (over {max_depth} levels)") from None
    check_json_depth(value, max_depth)
    return value


def check_json_depth(value: Any, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise :class:`JsonLimitError` when a decoded document nests deeper than ``max_depth`` (an iterative
    walk: the check itself cannot hit the recursion limit)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            raise JsonLimitError(f"JSON nested too deeply (over {max_depth} levels)")
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))


class HostRoot:
    """A machine's file tree seen through a root folder (default ``/``).

    Paths given to the methods are host paths ("/sys/class/drm" or "sys/class/drm"); the
    ``real_*`` helpers return paths on the analyst's file system for fast repeated reads.
    """

    def __init__(self, root: str | os.PathLike[str] = "/") -> None:
        self.root = os.path.abspath(os.fspath(root))
        self.is_live = self.root == "/"

    def __repr__(self) -> str:
        return f"HostRoot({self.root!r})"

    # -- path resolution -------------------------------------------------------------------
    def join(self, host_path: str | os.PathLike[str]) -> str:
        """The analyst-side path of ``host_path`` without resolving symlinks."""
        rel = os.fspath(host_path).lstrip("/")
        return os.path.join(self.root, rel) if rel else self.root

    def real_path(self, host_path: str | os.PathLike[str]) -> str:
        """Resolve symlinks of ``host_path`` inside the root; returns an analyst-side path.

        Absolute link targets are re-rooted; ``..`` stops at the root. Missing components are
        kept as they are (the later open reports MISSING). Raises HostReadError(LOOP).
        """
        if self.is_live:
            return os.path.realpath(os.fspath(host_path))
        return self.join(self.resolve_host_path(host_path))

    def resolve_host_path(self, host_path: str | os.PathLike[str]) -> str:
        """Resolve symlinks inside the root and return the resulting *host* path."""
        pending = [p for p in os.fspath(host_path).split("/") if p]
        pending.reverse()
        parts: list[str] = []
        links = 0
        base = self.root.rstrip("/")  # the analyst-side path of ``parts``, kept in step with it
        while pending:
            name = pending.pop()
            if name == ".":
                continue
            if name == "..":
                if parts:
                    parts.pop()
                    base = self.root.rstrip("/") + "".join("/" + p for p in parts)
                continue
            candidate = f"{base}/{name}"
            try:
                target = os.readlink(candidate)
            except OSError:
                parts.append(name)
                base = candidate
                continue
            links += 1
            if links > MAX_SYMLINKS:
                raise HostReadError(ReadFailure.LOOP, "/" + "/".join([*parts, name]))
            if target.startswith("/"):
                parts = []
                base = self.root.rstrip("/")
            extra = [p for p in target.split("/") if p]
            pending.extend(reversed(extra))
        return "/" + "/".join(parts)

    # -- reads -------------------------------------------------------------------------------
    def read_text(self, host_path: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES) -> str:
        """Whole file as text; raises HostReadError with a user-facing reason."""
        path = os.fspath(host_path)
        try:
            return read_fd_text(self.real_path(path), max_bytes)
        except HostReadError as exc:
            exc.path = path
            raise
        except OSError as exc:
            raise HostReadError.from_oserror(exc, path) from exc

    def read_bytes(self, host_path: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
        path = os.fspath(host_path)
        try:
            return read_fd_bytes(self.real_path(path), max_bytes)  # non-blocking: a FIFO must not hang us
        except HostReadError as exc:
            exc.path = path
            raise
        except OSError as exc:
            raise HostReadError.from_oserror(exc, path) from exc

    def try_read_text(self, host_path: str | os.PathLike[str]) -> str | None:
        """The file's text, or None when it cannot be read for any reason."""
        try:
            return self.read_text(host_path)
        except HostReadError:
            return None

    def read_lines(self, host_path: str | os.PathLike[str]) -> Iterator[tuple[int, str]]:
        """(1-based line number, line) pairs, for evidence that cites file and line."""
        yield from enumerate(self.read_text(host_path).splitlines(), start=1)

    def listdir(self, host_path: str | os.PathLike[str]) -> list[str]:
        """Sorted entries of a folder; [] when it is missing or unreadable."""
        try:
            return sorted(os.listdir(self.real_path(host_path)))
        except (OSError, HostReadError):
            return []

    def exists(self, host_path: str | os.PathLike[str]) -> bool:
        try:
            return os.path.lexists(self.real_path(host_path))
        except HostReadError:
            return False

    def is_dir(self, host_path: str | os.PathLike[str]) -> bool:
        try:
            return os.path.isdir(self.real_path(host_path))
        except HostReadError:
            return False

    def is_file(self, host_path: str | os.PathLike[str]) -> bool:
        try:
            return os.path.isfile(self.real_path(host_path))
        except HostReadError:
            return False

    def stat(self, host_path: str | os.PathLike[str]) -> os.stat_result:
        """``os.stat`` inside the root. In a snapshot a device placeholder under /dev (see
        :func:`device_placeholder_stat`) stats as the device it stands for."""
        path = os.fspath(host_path)
        try:
            result = os.stat(self.real_path(path))
        except HostReadError:
            raise
        except OSError as exc:
            raise HostReadError.from_oserror(exc, path) from exc
        if not self.is_live and _stat.S_ISREG(result.st_mode) and result.st_size <= PLACEHOLDER_MAX_BYTES:
            host = "/" + os.fspath(path).lstrip("/")
            if host.startswith("/dev/"):
                fake = device_placeholder_stat(self.real_path(path), result)
                if fake is not None:
                    return fake
        return result

    def getxattr(self, host_path: str | os.PathLike[str], name: str) -> bytes | None:
        """An extended attribute (``system.posix_acl_access``), or None when absent/unreadable.

        In a snapshot a device placeholder carries the device's attributes in its record.
        """
        path = os.fspath(host_path)
        try:
            real = self.real_path(path)
        except HostReadError:
            return None
        if not self.is_live and ("/" + path.lstrip("/")).startswith("/dev/"):
            record = _placeholder_record(real) if os.path.isfile(real) else None
            if record is not None:
                value = (record.get("xattrs") or {}).get(name)
                try:
                    return bytes.fromhex(value) if isinstance(value, str) else None
                except ValueError:
                    return None
        try:
            return os.getxattr(real, name)
        except (OSError, AttributeError):
            return None

    def readlink(self, host_path: str | os.PathLike[str]) -> str | None:
        """The raw target of a symlink (host terms), or None if it is not a link."""
        try:
            return os.readlink(self.join(host_path))
        except OSError:
            return None

    def glob(self, host_dir: str, pattern: str) -> list[str]:
        """Host paths of entries of ``host_dir`` matching a shell pattern, sorted."""
        import fnmatch

        base = host_dir.rstrip("/") or ""
        return [f"{base}/{name}" for name in self.listdir(host_dir) if fnmatch.fnmatch(name, pattern)]


# -- device placeholders ---------------------------------------------------------------------
# A snapshot never holds device files: /dev/kfd and /dev/dri/* are small JSON records of the
# node's type, mode and owner. HostRoot.stat() turns them back into a stat result, so a check
# that looks at a device's group and mode works the same on the live machine and a snapshot.

PLACEHOLDER_FORMAT = "rocmdesk-device-placeholder/1"
PLACEHOLDER_MAX_BYTES = 4096


# The file types a /dev entry can have and a placeholder records (issue 10: a root folder's /dev/kfd stand-in may
# be a regular file, a FIFO or a socket; its mode, owner and group must survive a capture like a device's).
_PLACEHOLDER_TYPES = {"char": _stat.S_IFCHR, "block": _stat.S_IFBLK, "file": _stat.S_IFREG, "fifo": _stat.S_IFIFO,
                      "socket": _stat.S_IFSOCK}
_PLACEHOLDER_TESTS = (("char", _stat.S_ISCHR), ("block", _stat.S_ISBLK), ("file", _stat.S_ISREG),
                      ("fifo", _stat.S_ISFIFO), ("socket", _stat.S_ISSOCK))


def device_placeholder_json(st: os.stat_result, owner: str | None = None, group: str | None = None,
                            xattrs: Mapping[str, bytes] | None = None) -> dict:
    """The placeholder record of a device node (``owner``/``group`` names are informational).

    ``xattrs`` keeps e.g. ``system.posix_acl_access`` (logind's uaccess ACL), hex-encoded.
    """
    kind = next((name for name, test in _PLACEHOLDER_TESTS if test(st.st_mode)), "other")
    return {"format": PLACEHOLDER_FORMAT, "type": kind, "mode": f"{_stat.S_IMODE(st.st_mode):04o}",
            "uid": st.st_uid, "gid": st.st_gid, "owner": owner, "group": group,
            "major": os.major(st.st_rdev), "minor": os.minor(st.st_rdev),
            "xattrs": {k: v.hex() for k, v in (xattrs or {}).items()}}


def _placeholder_record(real_path: str) -> dict | None:
    try:
        with open(real_path, "rb") as fh:
            data = json.loads(fh.read(PLACEHOLDER_MAX_BYTES))
    except (OSError, ValueError, RecursionError):  # RecursionError: garbage nested too deep
        return None
    return data if isinstance(data, dict) and data.get("format") == PLACEHOLDER_FORMAT else None


def device_placeholder_stat(real_path: str, file_stat: os.stat_result) -> os.stat_result | None:
    """The stat of the device a placeholder file stands for, or None when it is no placeholder."""
    data = _placeholder_record(real_path)
    if data is None:
        return None
    try:
        kind = _PLACEHOLDER_TYPES[data["type"]]
        mode = kind | (int(data["mode"], 8) & 0o7777)
        rdev = os.makedev(int(data["major"]), int(data["minor"]))
        uid, gid = int(data["uid"]), int(data["gid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    values = list(file_stat)
    values[0], values[3], values[4], values[5], values[6] = mode, 1, uid, gid, 0
    fake = os.stat_result(values, {"st_rdev": rdev})
    return fake


# -- commands ------------------------------------------------------------------------------


@dataclass
class CommandResult:
    """What a command did. ``error`` is set when it could not run or was killed."""

    argv: list[str]
    returncode: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    duration_s: float = 0.0
    error: str | None = None
    truncated: bool = False  # stdout was cut at the caller's max_output_bytes (the process was then killed)

    @property
    def ok(self) -> bool:
        """Ran to completion with status 0 (tools like rocm-smi exit 0 on failure: check output)."""
        return self.error is None and not self.timed_out and self.returncode == 0

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping) -> CommandResult:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


# Results a runner keeps (bundles record them): the telemetry's tool pollers run rocm-smi/amd-smi
# through the window's runner every few seconds for as long as it is open, so an unbounded list grew
# by their whole output forever. A diagnosis runs far fewer distinct commands than this.
HISTORY_LIMIT = 256

COMMAND_SEARCH_DIRS = ("/opt/rocm/bin", "/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin")


class CommandRunner:
    """Runs host commands: absolute paths only, no shell, a timeout, a minimal environment.

    A command that outlives its timeout has its whole process group killed, so a hung
    ``rocm-smi`` never stalls whoever called it for longer than the timeout.
    """

    def __init__(self, default_timeout: float = 10.0, env: Mapping[str, str] | None = None) -> None:
        self.default_timeout = default_timeout
        self.env = dict(env) if env is not None else {
            "PATH": "/usr/bin:/bin:/usr/sbin:/sbin",
            "LC_ALL": "C.UTF-8",
            "LANG": "C.UTF-8",
        }
        self.history: deque[CommandResult] = deque(maxlen=HISTORY_LIMIT)  # newest last

    def which(self, name: str, search: Sequence[str] = COMMAND_SEARCH_DIRS) -> str | None:
        """Absolute path of an executable named ``name`` on the live machine, or None."""
        for folder in search:
            candidate = os.path.join(folder, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
        return None

    def run(self, argv: Sequence[str], timeout: float | None = None, stdin: str | None = None,
            max_output_bytes: int | None = None) -> CommandResult:
        """Run ``argv``. With ``max_output_bytes``, only that much of stdout (and of stderr) is kept: a
        command that writes more is killed once it has, and its result says ``truncated``."""
        argv = [str(a) for a in argv]
        if not argv or not os.path.isabs(argv[0]):
            raise ValueError(f"commands must be given by absolute path, got {argv[:1]!r}")
        limit = self.default_timeout if timeout is None else timeout
        start = time.monotonic()
        import subprocess  # here: most processes that read the host never start a command

        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                shell=False,
                env=self.env,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            result = CommandResult(argv, None, error=f"could not start: {exc.strerror or exc}")
            self.history.append(result)
            return result
        if max_output_bytes is not None:
            result = _run_capped(proc, argv, limit, stdin, max_output_bytes, start)
            self.history.append(result)
            return result
        try:
            out, err = proc.communicate(None if stdin is None else stdin.encode("utf-8"), timeout=limit)
            result = CommandResult(argv, proc.returncode, _decode(out), _decode(err),
                                   duration_s=time.monotonic() - start)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, err = proc.communicate()
            result = CommandResult(argv, None, _decode(out), _decode(err), timed_out=True,
                                   duration_s=time.monotonic() - start,
                                   error=f"timed out after {limit:g} s and was killed")
            log.warning("%s timed out after %.1f s", argv[0], limit)
        self.history.append(result)
        return result


def _run_capped(proc: subprocess.Popen, argv: list[str], limit: float, stdin: str | None, cap: int,
                start: float) -> CommandResult:
    """Read a started process' output keeping at most ``cap`` bytes of each stream; the process group is
    killed when stdout goes past the cap (a huge journal) or the time is up, so memory and time stay bounded."""
    import selectors
    import subprocess

    if proc.stdin is not None:
        try:
            proc.stdin.write((stdin or "").encode("utf-8"))
            proc.stdin.close()
        except OSError:
            pass
    chunks: dict[int, list[bytes]] = {proc.stdout.fileno(): [], proc.stderr.fileno(): []}  # type: ignore[union-attr]
    sizes = dict.fromkeys(chunks, 0)
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()  # type: ignore[union-attr]
    truncated = timed_out = False
    deadline = start + limit
    with selectors.DefaultSelector() as sel:
        for stream in (proc.stdout, proc.stderr):
            sel.register(stream, selectors.EVENT_READ)  # type: ignore[arg-type]
        while sel.get_map() and not truncated:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            for key, _events in sel.select(remaining):
                data = os.read(key.fd, 65536)
                if not data:
                    sel.unregister(key.fileobj)
                    continue
                room = cap - sizes[key.fd]
                if room > 0:
                    chunks[key.fd].append(data[:room])
                sizes[key.fd] += len(data)
                if key.fd == out_fd and sizes[key.fd] > cap:
                    truncated = True
    if truncated or timed_out:
        _kill_group(proc)
    for stream in (proc.stdout, proc.stderr):
        stream.close()  # type: ignore[union-attr]
    try:
        returncode = proc.wait(timeout=max(0.1, deadline - time.monotonic()) if not (truncated or timed_out) else 5)
    except subprocess.TimeoutExpired:  # output closed but the process lingers past the time limit
        _kill_group(proc)
        returncode, timed_out = proc.wait(), True
    out = _decode(b"".join(chunks[out_fd]))
    err = _decode(b"".join(chunks[err_fd]))
    if timed_out:
        log.warning("%s timed out after %.1f s", argv[0], limit)
        return CommandResult(argv, None, out, err, timed_out=True, duration_s=time.monotonic() - start,
                             error=f"timed out after {limit:g} s and was killed", truncated=truncated)
    return CommandResult(argv, None if truncated else returncode, out, err, duration_s=time.monotonic() - start,
                         truncated=truncated)


def _decode(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")


def _kill_group(proc: subprocess.Popen) -> None:
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


@dataclass
class RecordedRunner(CommandRunner):
    """Replays recorded command results: tests, demo mode and support snapshots.

    Keys are the argv joined by single spaces. A command with no recording "is not installed",
    which is exactly what a snapshot of a machine without that tool should look like.
    """

    recordings: dict[str, CommandResult] = field(default_factory=dict)
    default_timeout: float = 10.0

    def __post_init__(self) -> None:
        self.history = deque(maxlen=HISTORY_LIMIT)
        self.env = {}

    @staticmethod
    def key(argv: Sequence[str]) -> str:
        return " ".join(str(a) for a in argv)

    def add(self, argv: Sequence[str], stdout: str = "", stderr: str = "", returncode: int | None = 0,
            timed_out: bool = False, error: str | None = None) -> None:
        self.recordings[self.key(argv)] = CommandResult(list(map(str, argv)), returncode, stdout, stderr,
                                                        timed_out=timed_out, error=error)

    def which(self, name: str, search: Sequence[str] = COMMAND_SEARCH_DIRS) -> str | None:
        for key in self.recordings:
            program = key.split(" ", 1)[0]
            if os.path.basename(program) == name:
                return program
        return None

    def run(self, argv: Sequence[str], timeout: float | None = None, stdin: str | None = None,
            max_output_bytes: int | None = None) -> CommandResult:
        argv = [str(a) for a in argv]
        recorded = self.recordings.get(self.key(argv))
        if recorded is None:
            result = CommandResult(argv, None, error="not recorded (tool not available)")
        else:
            result = CommandResult(**{**asdict(recorded), "argv": argv})
            if max_output_bytes is not None and len(result.stdout.encode("utf-8", "surrogatepass")) > max_output_bytes:
                cut = result.stdout.encode("utf-8", "surrogatepass")[:max_output_bytes]
                result.stdout, result.returncode, result.truncated = _decode(cut), None, True
        self.history.append(result)
        return result

    def to_json(self) -> dict:
        return {k: v.to_json() for k, v in self.recordings.items()}

    @classmethod
    def from_json(cls, data: Mapping) -> RecordedRunner:
        if not isinstance(data, Mapping):
            raise ValueError(f"command recordings must be a JSON object, not {type(data).__name__}")
        return cls({k: CommandResult.from_json(v) for k, v in data.items()})

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> RecordedRunner:
        with open(path, encoding="utf-8") as fh:
            return cls.from_json(json.load(fh))


def runner_for(root: HostRoot) -> CommandRunner:
    """The live runner for the live machine; otherwise the root's recorded outputs, if any.

    A snapshot carries its tool outputs in ``rocmdesk/commands.json`` inside the root.
    """
    if root.is_live:
        return CommandRunner()
    recorded = root.join("rocmdesk/commands.json")  # a str: pathlib costs a sample a few ms to import
    if os.path.isfile(recorded):
        try:
            return RecordedRunner.load(recorded)
        except (OSError, ValueError, TypeError, KeyError, RecursionError) as exc:  # Recursion: JSON too deep
            log.warning("ignoring unreadable command recordings %s: %s", recorded, exc)
    return RecordedRunner()
