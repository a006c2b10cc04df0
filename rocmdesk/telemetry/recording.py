"""Recorded telemetry: the demo recordings in ``resources/demo/`` and their file format.

A recording is gzip-compressed JSON lines. The first line is a header::

    {"format": "rocmdesk-recording", "version": 1, "name": "mi300x-node", "title": "...",
     "interval_s": 1.0, "demo": true,
     "gpus": [{"info": <GpuInfo.to_json()>, "static": {<GpuSample JSON keys that never change>}}],
     "process_info": {"<pid>": {"pci": ..., "name": ..., "cmdline": ..., "user": ...}}}

and every further line is one frame, ``t`` seconds after the start::

    {"t": 12.0, "gpus": [{<changing GpuSample JSON keys>}, null, ...],
     "processes": [{"pid": 4711, "vram_bytes": ..., "gtt_bytes": ..., "gpu_percent": ...,
                    "cu_occupancy_percent": ..., "cu_occupied": ..., "sdma_us": ...,
                    "sources": ["kfd"], "unavailable": {"gpu_percent": "<why>"}}]}

A GPU entry of ``null`` means the GPU was absent in that frame (unplugged). Keys use the public
names of :meth:`GpuSample.to_json` and :meth:`ProcessUse.to_json`, so a recording reads like
``rocmdesk sample --json`` output. Static values live in the header to keep files small (a
process's static keys, such as ``sources`` or a ``gpu_percent`` that is always null, may sit in
its ``process_info``); a frame's ``unavailable`` adds to the static one.

Recordings made before the KFD compute figures existed have no ``cu_*``/``sdma_us`` keys: they
load with those figures None and a reason saying so, never 0.
"""

from __future__ import annotations

import gzip
import json
import logging
import math
import os
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocmdesk import host
from rocmdesk.atomic_file import atomic_open
from rocmdesk.resources import resource_path
from rocmdesk.telemetry.model import GpuInfo, GpuSample, ProcessUse, Snapshot

log = logging.getLogger(__name__)

FORMAT = "rocmdesk-recording"
VERSION = 1
SUFFIX = ".jsonl.gz"
MAX_RECORDING_BYTES = 64 << 20  # uncompressed; a demo recording is a few MB at most


class RecordingError(ValueError):
    """A recording cannot be used; the message says why in words."""


@dataclass(slots=True)
class Frame:
    t: float  # seconds since the start of the recording
    gpus: list[dict[str, Any] | None]  # per GPU of the header, None = absent in this frame
    processes: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Recording:
    name: str
    gpus: list[GpuInfo]
    static: list[dict[str, Any]]  # per GPU: JSON keys that never change
    frames: list[Frame]
    interval_s: float = 1.0
    title: str = ""
    description: str = ""
    demo: bool = True
    process_info: dict[int, dict[str, Any]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)  # the rest of the header (generator, seed...)

    @property
    def duration_s(self) -> float:
        """Length of one loop: the last frame lasts one interval."""
        return self.frames[-1].t + self.interval_s if self.frames else 0.0

    @property
    def times(self) -> list[float]:
        return [f.t for f in self.frames]

    def gpu_samples(self, index: int, timestamp: float) -> list[GpuSample]:
        """The GPUs present in frame ``index`` as samples stamped ``timestamp``."""
        frame = self.frames[index]
        out = []
        for info, static, dynamic in zip(self.gpus, self.static, frame.gpus, strict=True):
            if dynamic is None:
                continue
            out.append(sample_from_parts(info, static, dynamic, timestamp))
        return out

    def process_uses(self, index: int) -> list[ProcessUse]:
        return [process_from_parts(self.process_info, entry) for entry in self.frames[index].processes]

    def snapshot(self, index: int, timestamp: float, backend: str = "demo") -> Snapshot:
        return Snapshot(backend=backend, timestamp=timestamp, gpus=self.gpu_samples(index, timestamp),
                        processes=self.process_uses(index), demo=self.demo)


def sample_from_parts(info: GpuInfo, static: dict[str, Any], dynamic: dict[str, Any],
                      timestamp: float) -> GpuSample:
    merged = {**static, **dynamic}
    merged["unavailable"] = {**(static.get("unavailable") or {}), **(dynamic.get("unavailable") or {})}
    sample = GpuSample.from_json(merged, info=info, timestamp=timestamp)
    sample.source = {"recording": "demo"}
    return sample


PROCESS_VALUES = ("vram_bytes", "gtt_bytes", "gpu_percent", "cu_occupancy_percent", "cu_occupied", "sdma_us")
_PROCESS_INTS = frozenset({"vram_bytes", "gtt_bytes", "cu_occupied", "sdma_us"})
NOT_IN_RECORDING = "not in this recording (made before rocmdesk recorded this figure)"
NO_RECORDED_REASON = "not measured when this was recorded"


def _process_value(key: str, value: Any) -> tuple[int | float | None, str | None]:
    """A recorded process figure checked for type and range: (value, None) or (None, reason)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return None, f"garbage value {value!r} in the recording"
    if key in _PROCESS_INTS:
        if isinstance(value, float) and not value.is_integer():
            return None, f"garbage value {value!r} in the recording"
        return int(value), None
    return float(value), None


def process_from_parts(process_info: dict[int, dict[str, Any]], entry: dict[str, Any]) -> ProcessUse:
    """One recorded process row; a figure that is missing, null or garbage is None with a reason."""
    pid = int(entry["pid"])
    static = process_info.get(pid, {})
    merged = {**static, **entry, "pid": pid}
    unavailable: dict[str, str] = {}
    for part in (static.get("unavailable"), entry.get("unavailable")):
        if isinstance(part, dict):
            unavailable.update({str(k): v for k, v in part.items() if isinstance(v, str)})
    values: dict[str, Any] = {}
    for key in PROCESS_VALUES:
        if key not in merged:
            values[key] = None
            unavailable.setdefault(key, NOT_IN_RECORDING)
        elif merged[key] is None:
            values[key] = None
            unavailable.setdefault(key, NO_RECORDED_REASON)
        else:
            values[key], problem = _process_value(key, merged[key])
            if problem is not None:
                unavailable[key] = problem
            else:
                unavailable.pop(key, None)  # a reason only stands for a missing value
    sources = merged.get("sources")
    user = merged.get("user")
    return ProcessUse(
        pid=pid,
        pci=str(merged.get("pci", "?")),
        name=str(merged.get("name", "?")),
        cmdline=str(merged.get("cmdline", "")),
        user=user if isinstance(user, str) else None,
        sources=tuple(s for s in sources if isinstance(s, str)) if isinstance(sources, list | tuple) else (),
        unavailable=unavailable,
        **values,
    )


def process_parts(process: ProcessUse) -> tuple[dict[str, Any], dict[str, Any]]:
    """(static info, frame entry) of a process row: what :func:`process_from_parts` rebuilds it from."""
    info = {"pci": process.pci, "name": process.name, "cmdline": process.cmdline, "user": process.user}
    entry: dict[str, Any] = {"pid": process.pid, "pci": process.pci}
    entry.update((key, getattr(process, key)) for key in PROCESS_VALUES)
    if process.sources:
        entry["sources"] = list(process.sources)
    if process.unavailable:
        entry["unavailable"] = dict(process.unavailable)
    return info, entry


# -- writing ---------------------------------------------------------------------------------


def header_of(recording: Recording) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        **recording.meta,
        "name": recording.name,
        "title": recording.title,
        "description": recording.description,
        "demo": recording.demo,
        "interval_s": recording.interval_s,
        "duration_s": recording.duration_s,
        "gpus": [{"info": info.to_json(), "static": static}
                 for info, static in zip(recording.gpus, recording.static, strict=True)],
        "process_info": {str(pid): info for pid, info in sorted(recording.process_info.items())},
    }


def encode_lines(recording: Recording) -> Iterable[str]:
    yield json.dumps(header_of(recording), separators=(",", ":"), sort_keys=False)
    for frame in recording.frames:
        line: dict[str, Any] = {"t": frame.t, "gpus": frame.gpus}
        if frame.processes:
            line["processes"] = frame.processes
        yield json.dumps(line, separators=(",", ":"))


def write_recording(path: str | os.PathLike[str], recording: Recording) -> None:
    """Write atomically (temp file + rename) and reproducibly (gzip mtime 0)."""
    validate(recording)
    with atomic_open(path) as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0,
                                                 compresslevel=9) as gz:
        for line in encode_lines(recording):
            gz.write(line.encode("utf-8") + b"\n")


# -- reading ---------------------------------------------------------------------------------


def parse_lines(lines: Iterable[str], name: str = "?") -> Recording:
    """Build a Recording from decoded JSON lines; raises RecordingError on any inconsistency."""
    it = iter(lines)
    try:
        first = next(it)
    except StopIteration:
        raise RecordingError(f"recording {name!r} is empty") from None
    header = _json_object(first, 1, name)
    if header.get("format") != FORMAT:
        raise RecordingError(f"{name!r} is not a rocmdesk recording (format {header.get('format')!r})")
    if header.get("version") != VERSION:
        raise RecordingError(f"recording {name!r} has unsupported version {header.get('version')!r}")
    try:
        gpus = [GpuInfo.from_json(g["info"]) for g in header["gpus"]]
        static = [dict(g.get("static") or {}) for g in header["gpus"]]
        interval = float(header.get("interval_s", 1.0))
        process_info = {int(pid): dict(v) for pid, v in (header.get("process_info") or {}).items()}
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordingError(f"recording {name!r} has a bad header: {exc!r}") from exc
    if not gpus:
        raise RecordingError(f"recording {name!r} lists no GPU")
    if not interval > 0:
        raise RecordingError(f"recording {name!r} has a bad interval {interval!r}")
    frames = []
    for number, line in enumerate(it, start=2):
        if not line.strip():
            continue
        data = _json_object(line, number, name)
        try:
            frame = Frame(t=float(data["t"]), gpus=list(data["gpus"]), processes=list(data.get("processes") or []))
        except (KeyError, TypeError, ValueError) as exc:
            raise RecordingError(f"recording {name!r} line {number}: bad frame ({exc!r})") from exc
        frames.append(frame)
    known = {"format", "version", "name", "title", "description", "demo", "interval_s", "duration_s", "gpus",
             "process_info"}
    recording = Recording(
        name=str(header.get("name") or name), gpus=gpus, static=static, frames=frames, interval_s=interval,
        title=str(header.get("title") or ""), description=str(header.get("description") or ""),
        demo=header.get("demo") is True, process_info=process_info,
        meta={k: v for k, v in header.items() if k not in known},
    )
    validate(recording)
    return recording


def validate(recording: Recording) -> None:
    name = recording.name
    if not recording.frames:
        raise RecordingError(f"recording {name!r} has no samples")
    if len(recording.static) != len(recording.gpus):
        raise RecordingError(f"recording {name!r}: static values for {len(recording.static)} GPUs, "
                             f"{len(recording.gpus)} GPUs listed")
    previous = None
    for i, frame in enumerate(recording.frames):
        if previous is not None and not frame.t > previous:
            raise RecordingError(f"recording {name!r}: sample {i} at {frame.t} s is not after {previous} s")
        if frame.t < 0:
            raise RecordingError(f"recording {name!r}: sample {i} has a negative time")
        if len(frame.gpus) != len(recording.gpus):
            raise RecordingError(f"recording {name!r}: sample {i} has {len(frame.gpus)} GPUs, "
                                 f"the header lists {len(recording.gpus)}")
        for entry in frame.gpus:
            if entry is not None and not isinstance(entry, dict):
                raise RecordingError(f"recording {name!r}: sample {i} has a GPU entry that is not an object")
        for proc in frame.processes:
            if not isinstance(proc, dict) or not isinstance(proc.get("pid"), int):
                raise RecordingError(f"recording {name!r}: sample {i} has a process without a pid")
        previous = frame.t


def _json_object(line: str, number: int, name: str) -> dict[str, Any]:
    try:
        data = host.loads_json(line)
    except host.JsonLimitError as exc:
        raise RecordingError(f"recording {name!r} line {number} is refused: {exc}") from exc
    except ValueError as exc:
        raise RecordingError(f"recording {name!r} line {number} is not JSON ({getattr(exc, 'msg', exc)})") from exc
    if not isinstance(data, dict):
        raise RecordingError(f"recording {name!r} line {number} is not a JSON object")
    return data


def read_recording(path: str | os.PathLike[str]) -> Recording:
    """Read a recording file (gzip JSON lines; plain JSON lines are accepted too)."""
    path = Path(path)
    name = path.name.removesuffix(SUFFIX)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise RecordingError(f"no recording at {path}") from None
    except IsADirectoryError:
        raise RecordingError(f"{path} is a folder, not a recording") from None
    except OSError as exc:
        raise RecordingError(f"cannot read recording {path}: {exc.strerror or exc}") from exc
    if raw[:2] == b"\x1f\x8b":
        try:
            text = _gunzip(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise RecordingError(f"recording {path} is damaged ({exc})") from exc
    elif len(raw) > MAX_RECORDING_BYTES:
        raise RecordingError(f"recording {path} is larger than {MAX_RECORDING_BYTES >> 20} MB")
    else:
        text = raw
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordingError(f"recording {path} is not text") from exc
    return parse_lines(decoded.splitlines(), name)


def _gunzip(raw: bytes) -> bytes:
    decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = decompressor.decompress(raw, MAX_RECORDING_BYTES)
    if decompressor.unconsumed_tail:
        raise RecordingError(f"recording is larger than {MAX_RECORDING_BYTES >> 20} MB uncompressed")
    if not decompressor.eof:
        raise EOFError("compressed data ends early (truncated file)")
    return out


# -- bundled recordings ------------------------------------------------------------------------


def demo_dir() -> Path:
    return resource_path("demo")


def bundled_recordings() -> list[str]:
    """Names of the recordings shipped in resources/demo."""
    folder = demo_dir()
    try:
        return sorted(p.name.removesuffix(SUFFIX) for p in folder.iterdir() if p.name.endswith(SUFFIX))
    except OSError:
        return []


def recording_path(name_or_path: str | os.PathLike[str]) -> Path:
    """A bundled recording's path by name, or the given path when it names a file."""
    text = os.fspath(name_or_path)
    if os.sep in text or text.endswith(SUFFIX) or text.endswith(".jsonl"):
        return Path(text)
    path = demo_dir() / f"{text}{SUFFIX}"
    if not path.is_file():
        known = ", ".join(bundled_recordings()) or "none installed"
        raise RecordingError(f"no demo recording named {text!r} (available: {known})")
    return path


_CACHE: dict[tuple[str, int, int], Recording] = {}


def load_recording(name_or_path: str | os.PathLike[str]) -> Recording:
    """Read a recording once per process (the demo backend, the window and the CLI share it)."""
    path = recording_path(name_or_path)
    try:
        st = path.stat()
        key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    except OSError:
        return read_recording(path)  # raises the right RecordingError
    cached = _CACHE.get(key)
    if cached is None:
        cached = read_recording(path)
        _CACHE[key] = cached
    return cached
