"""Support bundles: capture a redacted copy of what rocmdesk reads, and open one safely.

A bundle is a ``.tar.gz`` that *is* a host root: ``sys/...``, ``proc/cmdline``, ``etc/...`` exactly
where the real files live, plus ``rocmdesk/manifest.json`` (first member: every member, why it is
there, its size and sha256), ``rocmdesk/commands.json`` (recorded tool outputs, replayed by
:func:`rocmdesk.host.runner_for`), ``rocmdesk/history.json`` (telemetry of the last minutes, in the
recording format of :mod:`rocmdesk.telemetry.recording`, as JSON lines) and
``rocmdesk/initramfs/<image>.list`` (an initramfs listing instead of the image).

What goes in is collected by :mod:`rocmdesk.report.collect` (an allow-list over what rocmdesk
reads) and reduced and scrubbed by :mod:`rocmdesk.report.reduce` and :mod:`rocmdesk.report.redact`
before it is written.

Opening never trusts the archive: members are validated one by one (names, types, links, sizes,
hashes against the manifest, total bytes and count) and written only inside a private temporary
folder that is removed afterwards, also on error.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import logging
import os
import posixpath
import re
import shutil
import tarfile
import tempfile
import time
import weakref
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rocmdesk import __version__
from rocmdesk.host import CommandRunner, HostRoot, runner_for
from rocmdesk.report import reduce, scrub
from rocmdesk.report.collect import RawMember, collect, observe
from rocmdesk.report.manifest import (
    COMMANDS_NAME,
    HISTORY_NAME,
    INITRAMFS_DIR,
    MANIFEST_NAME,
    MAX_HISTORY_MINUTES,
    Entry,
    Manifest,
    ManifestError,
    file_entry,
)
from rocmdesk.report.redact import Redactor, redactor_for

log = logging.getLogger(__name__)

# -- limits -----------------------------------------------------------------------------------
# Twice what capture writes (CAPTURE_MAX_MEMBERS); 20k members open in ~4 s, diagnose in ~7 s
# (benchmarks/hostile_bundle.json), where 100k took over 30 s.
OPEN_MAX_MEMBERS = 20_000
OPEN_MAX_TOTAL_BYTES = 256 << 20  # uncompressed, headers included
# What opening writes, counted at each file's real size: a sparse member stores a few bytes of a
# 64 MiB file, so the stored-bytes limit alone let a 47 KB bundle write 2.7 GB (issue 11).
OPEN_MAX_EXTRACTED_BYTES = 256 << 20
OPEN_MAX_MEMBER_BYTES = 64 << 20
OPEN_MAX_MANIFEST_BYTES = 16 << 20
MAX_NAME_BYTES = 1024


class BundleError(Exception):
    """A bundle cannot be made or opened; the message says why in words."""


# ==============================================================================================
# Capture
# ==============================================================================================


@dataclass
class Member:
    """A bundle member ready to write (redacted name and content)."""

    name: str
    kind: str
    why: str
    data: bytes = b""
    target: str = ""
    mtime: float = 0.0


@dataclass
class CapturePlan:
    """Everything a bundle will hold, in memory: preview it, then save it."""

    manifest: Manifest
    members: list[Member]
    diagnosis: dict | None = None  # findings on the source machine (not stored; for comparison)
    secrets: list[str] = field(default_factory=list)  # replaced strings (tests; never saved)
    redactor: Redactor | None = None  # in memory only: to compare the source's own output with the bundle's

    def redact_json(self, value: Any) -> Any:
        """A JSON value (a diagnosis of the source, say) with the bundle's redaction applied to every string."""
        return value if self.redactor is None else _scrub_strings(value, self.redactor)

    def preview(self, limit: int | None = 20) -> list[str]:
        from rocmdesk.report.manifest import preview_lines

        return preview_lines(self.manifest, limit)

    def save(self, path: str | os.PathLike[str], compresslevel: int = 9) -> int:
        """Write the bundle atomically; returns its size in bytes."""
        path = os.fspath(path)
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".rocmdesk-bundle-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as raw:
                with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=compresslevel,
                                   mtime=int(self.manifest.created)) as gz:
                    with tarfile.open(fileobj=gz, mode="w|", format=tarfile.PAX_FORMAT) as tar:
                        manifest = self.manifest.dumps()
                        _add_member(tar, Member(MANIFEST_NAME, "file", "", manifest, mtime=self.manifest.created))
                        for member in self.members:
                            _add_member(tar, member)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        return os.path.getsize(path)


def _add_member(tar: tarfile.TarFile, member: Member) -> None:
    info = tarfile.TarInfo(member.name)
    info.mtime = int(member.mtime or 0)
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if member.kind == "dir":
        info.type = tarfile.DIRTYPE
        info.mode = 0o755
        tar.addfile(info)
    elif member.kind == "link":
        info.type = tarfile.SYMTYPE
        info.linkname = member.target
        info.mode = 0o777
        tar.addfile(info)
    else:
        info.size = len(member.data)
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(member.data))


def prepare_bundle(root: HostRoot | str = "/", *, python_envs: Sequence[str] = (), history: Any = None,
                   minutes: float = 10.0, runner: CommandRunner | None = None,
                   diagnose_fn: Callable[..., Any] | None = None, extra_hostnames: Iterable[str] = (),
                   now: float | None = None) -> CapturePlan:
    """Collect, filter and redact everything a bundle of ``root`` holds (nothing is written yet).

    ``history`` is a :class:`rocmdesk.telemetry.recording.Recording` (the window's recent
    telemetry, or the one sample taken here when None); only its last ``minutes`` are kept.
    """
    root = root if isinstance(root, HostRoot) else HostRoot(root)
    now = time.time() if now is None else now
    obs = observe(root, python_envs, runner, diagnose_fn)
    red = redactor_for(root, extra_hostnames)
    col = collect(root, obs)
    # identifiers first, so every text (files, command outputs) gets the same hashes
    for value in sorted(col.identifiers):
        red.add_identifier(value)
    for result in obs.commands.values():
        for value in reduce.identifiers_in_output(result.get("stdout", "")):
            red.add_identifier(value)
    for name in sorted(_log_hostnames(col, obs.commands)):
        red.add_hostname(name)  # the machine's names in its logs, older ones included
    members: list[Member] = []
    for raw in sorted(col.members.values(), key=lambda m: m.path):
        member = _redacted_member(raw, red, col.gids)
        if member is not None:
            members.append(member)
    members.extend(listings_members(col.listings, red))
    if col.modules is not None:
        members.append(modules_member(col.modules, red, now))
    commands = json.dumps(_scrub_strings(obs.commands, red), indent=1, sort_keys=True)
    members.append(Member(COMMANDS_NAME, "file", "recorded outputs of the tools rocmdesk ran",
                          commands.encode(), mtime=now))
    recording = history if history is not None else _recording_of(obs.snapshot)
    kept_minutes = 0.0
    if recording is not None:
        text, kept_minutes = history_text(recording, minutes)
        kept_minutes = min(kept_minutes, MAX_HISTORY_MINUTES)
        members.append(Member(HISTORY_NAME, "file", f"telemetry of the last {kept_minutes:g} minutes",
                              _scrub_history(text, red).encode(), mtime=now))
    members = _dedupe(members)
    members, dropped = _capped(members, CAPTURE_MAX_MEMBERS - 1)  # the manifest is one more
    notes = [red.text(n) for n in (*obs.notes, *col.notes)]
    if dropped:
        notes.append(f"{dropped} files left out: a bundle holds at most {CAPTURE_MAX_MEMBERS} members")
    if col.skipped:
        notes.append(f"{len(col.skipped)} paths read by rocmdesk were left out for privacy "
                     "(process details, shell history, secrets, other files in home folders)")
    entries = [
        file_entry(m.name, m.data, m.why) if m.kind == "file" else Entry(m.name, m.kind, m.why, target=m.target)
        for m in members
    ]
    manifest = Manifest(created=now, rocmdesk_version=__version__, entries=entries,
                        history_minutes=kept_minutes, python_envs=[red.path(p) for p in python_envs],
                        redaction=red.summary(), notes=notes, source="live" if root.is_live else "root")
    return CapturePlan(manifest, members, obs.diagnosis, red.secrets(), red)


def _log_hostnames(col: Any, commands: dict[str, dict]) -> set[str]:
    """Host names in the syslog-style prefixes of the kept logs and of journal output."""
    names: set[str] = set()
    for raw in col.members.values():
        if raw.kind == "file" and raw.path.startswith("var/log/") and raw.data:
            names |= scrub.log_hostnames(raw.data.decode("utf-8", "replace"))
    for result in commands.values():
        names |= scrub.log_hostnames(str(result.get("stdout") or ""))
    return names


def _scrub_strings(value: Any, red: Redactor) -> Any:
    """Every string of a JSON value (keys too: replayed argv keys carry redacted paths, like member
    names) through the redactor, one by one: line-anchored patterns see each output's own lines."""
    if isinstance(value, str):
        return red.text(value)
    if isinstance(value, dict):
        return {red.text(k) if isinstance(k, str) else k: _scrub_strings(v, red) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_strings(v, red) for v in value]
    return value


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _scrub_history(text: str, red: Redactor) -> str:
    """History JSON lines: the header (GPU names, processes, users) scrubbed whole; the frame lines,
    megabytes of numbers, only in their string literals, each distinct literal once."""
    header, sep, frames = text.partition("\n")
    cache: dict[str, str] = {}

    def literal(m: re.Match) -> str:
        value = m.group(0)
        out = cache.get(value)
        if out is None:
            out = cache[value] = red.text(value)
        return out

    return red.text(header) + sep + _JSON_STRING.sub(literal, frames)


CAPTURE_MAX_MEMBERS = 10_000  # every bundle capture writes can be opened (OPEN_MAX_MEMBERS)


def _capped(members: list[Member], limit: int) -> tuple[list[Member], int]:
    """At most ``limit`` members: rocmdesk's own first, then system files, process and home files last
    (a folder sorts before what it holds, so a kept member's folders are kept)."""
    if len(members) <= limit:
        return members, 0

    def rank(m: Member) -> tuple[int, str]:
        top = m.name.split("/", 1)[0]
        return ({"rocmdesk": 0, "proc": 2, "home": 3}.get(top, 1), m.name)

    kept = set(id(m) for m in sorted(members, key=rank)[:limit])
    return [m for m in members if id(m) in kept], len(members) - limit


def capture(output: str | os.PathLike[str], root: HostRoot | str = "/", **kwargs: Any) -> CapturePlan:
    plan = prepare_bundle(root, **kwargs)
    plan.save(output)
    return plan


def _dedupe(members: list[Member]) -> list[Member]:
    seen: dict[str, Member] = {}
    for m in members:
        if m.name in seen and seen[m.name].kind == "dir" and m.kind == "dir":
            continue
        seen[m.name] = m
    # a folder must never sit below a link: drop such members (the link shows the way already)
    links = {m.name for m in seen.values() if m.kind == "link"}
    out = []
    for m in seen.values():
        parents = _parents(m.name)
        if any(p in links for p in parents):
            continue
        out.append(m)
    order = {"dir": 0, "file": 1, "link": 2}
    return sorted(out, key=lambda m: (order[m.kind], m.name))


def _parents(name: str) -> list[str]:
    parts = name.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def _redacted_member(raw: RawMember, red: Redactor, gids: frozenset[int]) -> Member | None:
    name = red.path("/" + raw.path).lstrip("/")
    if raw.kind == "dir":
        return Member(name, "dir", red.text(raw.why))
    if raw.kind == "link":
        target = red.path("/" + raw.target).lstrip("/")
        rel = posixpath.relpath("/" + target, posixpath.dirname("/" + name)) if target else "."
        return Member(name, "link", red.text(raw.why), target=rel)
    data = reduce.transform(raw.path, raw.data, red, gids)
    if data is None:
        return None
    return Member(name, "file", red.text(raw.why), data, mtime=raw.mtime)



def modules_member(records: dict, red: Redactor, now: float) -> Member:
    from rocmdesk.diagnosis.initramfs_listing import MODULES_NAME

    data = dict(records, modules={red.path(p): r for p, r in records["modules"].items()},
                notes=[red.text(n) for n in records["notes"]])
    return Member(MODULES_NAME, "file", "the running kernel's amdgpu modules: size, sha256 and modinfo "
                  "(initramfs-stale compares the image's copy with them)",
                  (json.dumps(data, indent=1, sort_keys=True) + "\n").encode(), mtime=now)


def listings_members(listings: Iterable[tuple[str, str, float]], red: Redactor) -> list[Member]:
    return [Member(f"{INITRAMFS_DIR}/{name}.list", "file",
                   f"listing of /boot/{name} (the image itself is not copied)", red.text(text).encode(),
                   mtime=mtime) for name, text, mtime in listings]


# -- history ---------------------------------------------------------------------------------------


def _recording_of(snapshot: Any) -> Any:
    if snapshot is None or not getattr(snapshot, "gpus", None):
        return None
    return recording_from_snapshots([snapshot])


def recording_from_snapshots(snapshots: Sequence[Any], interval_s: float = 1.0, name: str = "bundle") -> Any:
    """A Recording (non-demo) of telemetry snapshots; GPUs are keyed by PCI address."""
    from rocmdesk.telemetry.recording import Frame, Recording, process_parts

    infos: dict[str, Any] = {}
    for snap in snapshots:
        for sample in snap.gpus:
            infos.setdefault(sample.info.pci, sample.info)
    pcis = list(infos)
    frames = []
    process_info: dict[int, dict] = {}
    start = snapshots[0].timestamp if snapshots else 0.0
    last_t = -1.0
    for snap in snapshots:
        t = round(snap.timestamp - start, 3)
        if t <= last_t:
            continue
        last_t = t
        by_pci = snap.by_pci()
        gpus: list[dict[str, Any] | None] = []
        for pci in pcis:
            sample = by_pci.get(pci)
            if sample is None:
                gpus.append(None)
                continue
            data = sample.to_json()
            for key in ("card", "pci", "name", "gfx_target"):
                data.pop(key, None)
            gpus.append(data)
        procs = []
        for p in getattr(snap, "processes", []) or []:
            info, entry = process_parts(p)  # every ProcessUse field, so the Processes tab reads the same
            process_info.setdefault(p.pid, info)
            procs.append(entry)
        frames.append(Frame(t=t, gpus=gpus, processes=procs))
    return Recording(name=name, gpus=[infos[p] for p in pcis], static=[{} for _ in pcis], frames=frames,
                     interval_s=interval_s, title="captured telemetry", demo=False,
                     process_info=process_info, meta={"start_time": start})


def history_text(recording: Any, minutes: float) -> tuple[str, float]:
    """The recording's last ``minutes`` as recording-format JSON lines; (text, minutes kept)."""
    from rocmdesk.telemetry.recording import MAX_FRAMES, MAX_POINTS, Recording, encode_lines

    frames = recording.frames
    if frames and minutes > 0:
        cutoff = frames[-1].t - minutes * 60.0
        first = next((i for i, f in enumerate(frames) if f.t > cutoff), 0)
        frames = frames[first:]
    points, first = 0, len(frames)  # what opening accepts: the newest frames within its limits
    while first > 0 and len(frames) - first < MAX_FRAMES:
        points += len(frames[first - 1].gpus) + len(frames[first - 1].processes)
        if points > MAX_POINTS:
            break
        first -= 1
    frames = frames[first:]
    if frames and frames[0].t != 0:
        shift = frames[0].t
        from rocmdesk.telemetry.recording import Frame

        frames = [Frame(round(f.t - shift, 3), f.gpus, f.processes) for f in frames]
        meta = dict(recording.meta)
        if "start_time" in meta:
            meta["start_time"] = float(meta["start_time"]) + shift
    else:
        meta = dict(recording.meta)
    trimmed = Recording(name=recording.name, gpus=recording.gpus, static=recording.static, frames=frames,
                        interval_s=recording.interval_s, title=recording.title,
                        description=recording.description, demo=recording.demo,
                        process_info=recording.process_info, meta=meta)
    kept = round((frames[-1].t + recording.interval_s) / 60.0, 2) if frames else 0.0
    return "\n".join(encode_lines(trimmed)) + "\n", kept


# ==============================================================================================
# Opening a bundle
# ==============================================================================================


OPEN_MAX_HEADER_BYTES = 1 << 20  # one PAX or GNU long-name header: capture's are under 4 KB


class _BoundedTarInfo(tarfile.TarInfo):
    """A tar header whose extended header (PAX, GNU long name) is refused before tarfile reads it whole:
    a 200 MiB PAX comment held 640 MB of memory while it was parsed."""

    def _proc_member(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        if self.type in (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE, tarfile.GNUTYPE_LONGNAME,
                         tarfile.GNUTYPE_LONGLINK) and self.size > OPEN_MAX_HEADER_BYTES:
            raise BundleError(f"a member has an extended header of {self.size} bytes (more than "
                              f"{OPEN_MAX_HEADER_BYTES >> 20} MiB): refused")
        return super()._proc_member(tarfile_)  # type: ignore[misc]  # CPython's private hook, not in typeshed


class _CountingReader(io.RawIOBase):
    """A read-only stream that refuses to give more than ``limit`` bytes (decompression bombs)."""

    def __init__(self, inner: Any, limit: int) -> None:
        self.inner = inner
        self.limit = limit
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.inner.read(len(buffer))
        self.count += len(data)
        if self.count > self.limit:
            raise BundleError(f"the bundle unpacks to more than {self.limit >> 20} MiB: refused "
                              "(damaged, or a decompression bomb)")
        buffer[: len(data)] = data
        return len(data)


@dataclass
class OpenedBundle:
    """A bundle unpacked into a private folder: a HostRoot plus its manifest and history.

    Use as a context manager (or call :meth:`close`): the folder is removed afterwards.
    """

    path: str
    folder: str
    manifest: Manifest
    root: HostRoot = field(init=False)

    def __post_init__(self) -> None:
        self.root = HostRoot(self.folder)
        self._finalizer = weakref.finalize(self, shutil.rmtree, self.folder, True)
        self._history: Any = None
        self._history_error: str | None = None

    def __enter__(self) -> OpenedBundle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._finalizer()

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    @property
    def created(self) -> float:
        return self.manifest.created

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    @property
    def python_envs(self) -> list[str]:
        return list(self.manifest.python_envs)

    def banner(self) -> str:
        """What the window and reports say about where the data comes from."""
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.created))
        return f"Snapshot {self.name}, captured {when}: fixes are disabled"

    def runner(self) -> CommandRunner:
        return runner_for(self.root)

    @property
    def history(self) -> Any:
        """The recorded telemetry (a Recording), or None when the bundle has none or it is damaged."""
        if self._history is None and self._history_error is None:
            path = os.path.join(self.folder, HISTORY_NAME)
            if os.path.isfile(path):
                from rocmdesk.telemetry.recording import RecordingError, read_recording

                try:
                    self._history = read_recording(path)
                except RecordingError as exc:
                    self._history_error = str(exc)
                except (ArithmeticError, LookupError, TypeError, ValueError) as exc:  # a check missed: no crash
                    log.warning("the bundle's history cannot be read", exc_info=True)
                    self._history_error = f"the bundle's history is damaged ({type(exc).__name__})"
            else:
                self._history_error = "this bundle holds no telemetry history"
        return self._history

    @property
    def history_error(self) -> str | None:
        _ = self.history
        return self._history_error


def open_bundle(path: str | os.PathLike[str], tmp_dir: str | None = None) -> OpenedBundle:
    """Validate and unpack a bundle into a private temporary folder.

    Raises BundleError with a clear message on anything suspicious; nothing is written outside
    the private folder, and the folder is removed when opening fails.
    """
    path = os.fspath(path)
    try:
        raw = open(path, "rb")
    except FileNotFoundError:
        raise BundleError(f"no bundle at {path}") from None
    except IsADirectoryError:
        raise BundleError(f"{path} is a folder, not a bundle") from None
    except OSError as exc:
        raise BundleError(f"cannot read {path}: {exc.strerror or exc}") from exc
    folder = os.path.realpath(tempfile.mkdtemp(prefix="rocmdesk-bundle-", dir=tmp_dir))
    os.chmod(folder, 0o700)
    try:
        with raw:
            manifest = _unpack(raw, folder)
    except BundleError:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    except ManifestError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise BundleError(f"{os.path.basename(path)}: {exc}") from exc
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile, OSError, ValueError) as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise BundleError(f"{os.path.basename(path)} is damaged or truncated ({type(exc).__name__}: {exc})"
                          ) from exc
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return OpenedBundle(path, folder, manifest)


_BAD_NAME = re.compile(r"[\x00-\x1f\\]")


def _check_name(name: str) -> str:
    if not name or len(name.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
        raise BundleError(f"member name {name[:60]!r} is empty or too long: refused")
    if name.startswith("/"):
        raise BundleError(f"member {name!r} has an absolute path: refused")
    parts = name.rstrip("/").split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise BundleError(f"member {name!r} has an empty, '.' or '..' path component: refused")
    if _BAD_NAME.search(name):
        raise BundleError(f"member {name!r} has control characters or backslashes: refused")
    return name.rstrip("/")


def _check_link(name: str, target: str) -> None:
    if not target or target.startswith("/"):
        raise BundleError(f"link {name!r} points to an absolute path {target!r}: refused")
    if _BAD_NAME.search(target):
        raise BundleError(f"link {name!r} has a strange target: refused")
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
    if joined == ".." or joined.startswith("../") or joined.startswith("/"):
        raise BundleError(f"link {name!r} points outside the bundle ({target!r}): refused")


def _unpack(raw: Any, folder: str) -> Manifest:
    try:
        gz = gzip.GzipFile(fileobj=raw, mode="rb")
        counted = io.BufferedReader(_CountingReader(gz, OPEN_MAX_TOTAL_BYTES), buffer_size=1 << 16)
        tar = tarfile.open(fileobj=counted, mode="r|", tarinfo=_BoundedTarInfo)
    except (tarfile.TarError, gzip.BadGzipFile, OSError, EOFError, zlib.error) as exc:
        raise BundleError(f"damaged or not a bundle: not a readable gzip-compressed tar archive ({exc})") from exc
    manifest: Manifest | None = None
    expected: dict[str, Entry] = {}
    seen: dict[str, str] = {}
    links: list[tuple[str, str]] = []
    mtimes: list[tuple[str, float]] = []
    count = 0
    extracted = 0
    with tar:
        for member in tar:
            count += 1
            if count > OPEN_MAX_MEMBERS:
                raise BundleError(f"the bundle has more than {OPEN_MAX_MEMBERS} members: refused")
            name = _check_name(member.name)
            if name in seen:
                raise BundleError(f"member {name!r} appears twice: refused")
            kind = ("file" if member.isreg() else "dir" if member.isdir() else "link" if member.issym() else
                    "hardlink" if member.islnk() else "device" if (member.ischr() or member.isblk()) else
                    "fifo" if member.isfifo() else "other")
            if member.issparse():  # capture never writes one; its stored size says nothing of its real one
                raise BundleError(f"member {name!r} is a sparse file: bundles hold only plain files, folders "
                                  "and symbolic links; refused")
            if kind in ("hardlink", "device", "fifo", "other"):
                raise BundleError(f"member {name!r} is a {kind}: bundles hold only files, folders and "
                                  "symbolic links; refused")
            if manifest is None:
                if name != MANIFEST_NAME or kind != "file":
                    raise BundleError("the bundle does not start with its manifest "
                                      f"({MANIFEST_NAME}): not a rocmdesk bundle, refused")
                if member.size > OPEN_MAX_MANIFEST_BYTES:
                    raise BundleError("the manifest is implausibly large: refused")
                extracted = _count_extracted(extracted, member.size)
                data = _read_member(tar, member, member.size)
                manifest = Manifest.loads(data)
                expected = manifest.by_path()
                _write_file(folder, name, data)
                seen[name] = "file"
                continue
            entry = expected.get(name)
            if entry is None:
                raise BundleError(f"member {name!r} is not listed in the manifest: refused")
            if entry.kind != kind:
                raise BundleError(f"member {name!r} is a {kind} but the manifest says {entry.kind}: refused")
            seen[name] = kind
            if kind == "dir":
                os.makedirs(os.path.join(folder, name), mode=0o755, exist_ok=True)
            elif kind == "link":
                _check_link(name, member.linkname)
                if member.linkname != entry.target:
                    raise BundleError(f"link {name!r} does not match the manifest: refused")
                links.append((name, member.linkname))
            else:
                if member.size != entry.size:
                    raise BundleError(f"member {name!r} is {member.size} bytes but the manifest says "
                                      f"{entry.size}: refused")
                if member.size > OPEN_MAX_MEMBER_BYTES:
                    raise BundleError(f"member {name!r} is larger than {OPEN_MAX_MEMBER_BYTES >> 20} MiB: refused")
                extracted = _count_extracted(extracted, member.size)
                data = _read_member(tar, member, entry.size)
                if hashlib.sha256(data).hexdigest() != entry.sha256:
                    raise BundleError(f"member {name!r} does not match its sha256 in the manifest: refused")
                _write_file(folder, name, data)
                if isinstance(member.mtime, (int, float)) and 0 <= member.mtime < 1 << 33:
                    mtimes.append((name, float(member.mtime)))
    if manifest is None:
        raise BundleError("the bundle is empty")
    missing = [p for p in expected if p not in seen]
    if missing:
        raise BundleError(f"{len(missing)} files listed in the manifest are missing from the bundle "
                          f"(first: {missing[0]!r}): refused")
    link_names = {n for n, _ in links}
    for name in seen:
        for parent in _parents(name):
            if parent in link_names:
                raise BundleError(f"member {name!r} sits below the link {parent!r}: refused")
            if seen.get(parent) == "file":
                raise BundleError(f"member {name!r} sits below the file {parent!r}: refused")
    for name, target in links:
        full = os.path.join(folder, name)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        os.symlink(target, full)
    for name, target in links:
        _check_resolved(folder, name, target)
    for name, mtime in mtimes:
        os.utime(os.path.join(folder, name), (mtime, mtime), follow_symlinks=False)
    return manifest


def _count_extracted(total: int, size: int) -> int:
    total += size
    if total > OPEN_MAX_EXTRACTED_BYTES:
        raise BundleError(f"the bundle unpacks to more than {OPEN_MAX_EXTRACTED_BYTES} bytes "
                          f"({OPEN_MAX_EXTRACTED_BYTES >> 20} MiB) of files: refused")
    return total


def _check_resolved(folder: str, name: str, target: str) -> None:
    """Every link followed to its end, as the kernel will, must stay inside the folder.

    Each hop being lexically inside is not enough: with ``d/d/up -> ../..`` (the folder itself),
    ``x -> d/d/up/../../secret`` is lexically ``secret`` but really two levels above the folder.
    """
    resolved = os.path.realpath(os.path.join(folder, name))
    if resolved != folder and not resolved.startswith(folder + os.sep):
        raise BundleError(f"link {name!r} ({target!r}), followed to its end, leads outside the bundle: refused")


def _read_member(tar: tarfile.TarFile, member: tarfile.TarInfo, limit: int) -> bytes:
    fh = tar.extractfile(member)
    if fh is None:
        raise BundleError(f"member {member.name!r} cannot be read")
    data = fh.read(limit + 1)
    if len(data) != member.size:
        raise BundleError(f"member {member.name!r} is truncated")
    return data


def _write_file(folder: str, name: str, data: bytes) -> None:
    full = os.path.join(folder, name)
    parent = os.path.dirname(full)
    os.makedirs(parent, mode=0o755, exist_ok=True)
    if os.path.realpath(parent) != os.path.normpath(parent):  # no link may lead out of the folder
        raise BundleError(f"member {name!r} would be written through a link: refused")
    fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def recording_from_history(history: Any, infos: dict[str, Any], seconds: float | None = None,
                           interval_s: float = 1.0) -> Any:
    """A Recording of the window's ring-buffer history (``rocmdesk.telemetry.history.History``).

    ``infos`` maps PCI address to GpuInfo (the feed's latest samples know them). Points of all
    GPUs are put on one time grid of ``interval_s``; a GPU without a point there is absent.
    """
    from rocmdesk.telemetry.recording import Frame, Recording

    keys = [k for k in history.keys() if k in infos]
    windows = {k: history[k].window(seconds) for k in keys}
    grid: dict[int, dict[str, dict]] = {}
    for key, win in windows.items():
        for i, t in enumerate(win.times.tolist()):
            if t != t:  # NaN gap
                continue
            entry: dict[str, Any] = {"temperature_c": {}}
            for metric, values in win.values.items():
                value = float(values[i])
                if value != value:
                    continue
                if metric.startswith("temperature_c."):
                    entry["temperature_c"][metric.split(".", 1)[1]] = value
                else:
                    entry[metric] = value
            grid.setdefault(round(t / interval_s), {})[key] = entry
    if not grid:
        return None
    slots = sorted(grid)
    start = slots[0] * interval_s
    frames = [Frame(round(s * interval_s - start, 3), [grid[s].get(k) for k in keys]) for s in slots]
    return Recording(name="window", gpus=[infos[k] for k in keys], static=[{} for _ in keys], frames=frames,
                     interval_s=interval_s, title="recent telemetry", demo=False, meta={"start_time": start})
