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
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeGuard

from rocmdesk import host
from rocmdesk.atomic_file import atomic_open
from rocmdesk.resources import resource_path
from rocmdesk.telemetry.model import SCALAR_METRICS, GpuInfo, GpuKind, GpuSample, ProcessUse, Snapshot

log = logging.getLogger(__name__)

FORMAT = "rocmdesk-recording"
VERSION = 1
SUFFIX = ".jsonl.gz"
MAX_RECORDING_BYTES = 64 << 20  # uncompressed; a demo recording is a few MB at most
# What a recording may hold (issue 11: 1.4 M frames in a bundle's 3.6 MB history took 9.2 GB and 119 s).
# 24 hours at 1 Hz, the window's longest history; points are GPU readings plus process rows.
MAX_FRAMES = 86_400
MAX_POINTS = 400_000
MAX_GPUS = 64
MAX_TIME_S = 366 * 86_400.0  # a frame's offset from the start
MAX_INTERVAL_S = 3600.0
MAX_EPOCH = 4_102_444_800.0  # 2100-01-01: a start time past it (or NaN, inf) is dropped
MAX_PID = (1 << 31) - 1
MAX_INT = (1 << 63) - 1


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
    merged["unavailable"] = {**_reasons(static.get("unavailable")), **_reasons(dynamic.get("unavailable"))}
    sample = GpuSample.from_json(merged, info=info, timestamp=timestamp)
    sample.source = {"recording": "demo"}
    return sample


_INT_METRICS = frozenset({"vram_used_bytes", "vram_total_bytes", "gtt_used_bytes", "gtt_total_bytes", "sclk_mhz",
                          "mclk_mhz", "sclk_dpm_mhz", "mclk_dpm_mhz", "fan_rpm"})
_TEXT_METRICS = frozenset({"performance_level", "power_profile"})
_TEMPERATURE_MAPS = ("temperature_c", "temperature_crit_c", "temperature_emergency_c")
MAX_CELSIUS = 1000.0


def _reasons(value: Any) -> dict[str, str]:
    """An ``unavailable`` table from untrusted JSON: only text reasons under text keys."""
    if not isinstance(value, dict):
        return {}
    return {k: v[:512] for k, v in list(value.items())[:512] if isinstance(k, str) and isinstance(v, str)}


def _finite(value: object, low: float, high: float) -> TypeGuard[float]:
    """A JSON number (not a bool) within [low, high]; NaN and inf fail the comparison."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and low <= value <= high


def _garbage(value: Any) -> str:
    return f"garbage value {str(value)[:40]!r} in the recording"


def checked_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """A recorded GPU reading with every value of the wrong type or range dropped, the reason noted
    (a string temperature, 2^70 bytes, NaN watts): readers (samples, charts) show N/A, never crash.

    Done once when a recording is read, so every consumer of its frames sees checked values; a
    reading that is already clean (the usual case: 86 400 frames of them) is returned as it is."""
    fixes: dict[str, Any] = {}
    reasons: dict[str, str] = {}
    for key, value in entry.items():
        if value is None:
            continue
        if key in _SCALARS:
            if key in _TEXT_METRICS:
                good = type(value) is str and len(value) <= 64
            elif key in _INT_METRICS:
                good = _finite(value, 0, MAX_INT) and (type(value) is int or value.is_integer())
                if good and type(value) is float:
                    fixes[key] = int(value)
            else:
                good = _finite(value, 0, MAX_INT)
            if not good:
                fixes[key] = None
                reasons[key] = _garbage(value)
        elif key in _TEMPERATURE_MAPS:
            if type(value) is dict and len(value) <= 64 and all(
                    _finite(v, -MAX_CELSIUS, MAX_CELSIUS) for v in value.values()):
                continue
            kept: dict[str, float] = {}
            for label, v in list(value.items())[:64] if isinstance(value, dict) else ():
                if _finite(v, -MAX_CELSIUS, MAX_CELSIUS):
                    kept[label] = float(v)
                elif key == "temperature_c":
                    reasons[f"temperature_c.{label}"] = _garbage(v)
            fixes[key] = kept
    if not fixes and "unavailable" not in entry:
        return entry
    out = {**entry, **fixes}
    if reasons or "unavailable" in entry:
        out["unavailable"] = {**_reasons(entry.get("unavailable")), **reasons}
    return out


_SCALARS = frozenset(SCALAR_METRICS)


def _gpu_info(data: Any) -> GpuInfo:
    """A header's GPU identity checked field by field; a bad optional field is dropped."""
    if not isinstance(data, dict):
        raise TypeError("a GPU's info is not an object")
    kwargs: dict[str, Any] = {}
    for f in fields(GpuInfo):
        if f.name not in data:
            continue
        value = data[f.name]
        if f.name == "kind":
            kwargs["kind"] = GpuKind(value) if value in _KINDS else GpuKind.UNKNOWN
        elif f.name in ("card", "pci", "name"):
            if not isinstance(value, str) or len(value) > 256:
                raise TypeError(f"a GPU's {f.name} is not a short text")
            kwargs[f.name] = value
        elif f.name in _INFO_INTS:
            if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_INT:
                kwargs[f.name] = value
        elif isinstance(value, str) and len(value) <= 256:
            kwargs[f.name] = value
    for required in ("card", "pci", "name"):
        if required not in kwargs:
            raise KeyError(required)
    return GpuInfo(**kwargs)


_KINDS = frozenset(k.value for k in GpuKind)
_INFO_INTS = frozenset({"vendor_id", "device_id", "revision_id", "vram_total_bytes", "kfd_node"})


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
        listed = header["gpus"]
        if not isinstance(listed, list) or len(listed) > MAX_GPUS:
            raise TypeError(f"the GPU list is not a list of at most {MAX_GPUS} GPUs")
        gpus = [_gpu_info(g["info"]) for g in listed]
        static = [checked_entry(dict(g.get("static") or {})) for g in listed]
        interval = header.get("interval_s", 1.0)
        process_info = _process_info(header.get("process_info") or {})
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordingError(f"recording {name!r} has a bad header: {exc!r}") from exc
    if not gpus:
        raise RecordingError(f"recording {name!r} lists no GPU")
    if not _finite(interval, 0, MAX_INTERVAL_S) or not interval > 0:
        raise RecordingError(f"recording {name!r} has a bad interval {interval!r}")
    interval = float(interval)
    frames: list[Frame] = []
    points = 0
    for number, line in enumerate(it, start=2):
        if not line.strip():
            continue
        if len(frames) >= MAX_FRAMES:
            raise RecordingError(f"recording {name!r} has more than {MAX_FRAMES} frames (the limit: 24 hours "
                                 "at one reading a second)")
        data = _json_object(line, number, name)
        t = data.get("t")
        if not _finite(t, 0, MAX_TIME_S):
            raise RecordingError(f"recording {name!r} line {number}: the time {str(t)[:40]!r} is not a number "
                                 f"of seconds between 0 and {MAX_TIME_S:g}")
        try:
            frame = Frame(t=float(t), gpus=list(data["gpus"]), processes=list(data.get("processes") or []))
        except (KeyError, TypeError, ValueError) as exc:
            raise RecordingError(f"recording {name!r} line {number}: bad frame ({exc!r})") from exc
        frame.gpus = [checked_entry(g) if isinstance(g, dict) else g for g in frame.gpus]
        points += len(frame.gpus) + len(frame.processes)
        if points > MAX_POINTS:
            raise RecordingError(f"recording {name!r} has more than {MAX_POINTS} points (GPU readings and "
                                 "process rows; the limit)")
        frames.append(frame)
    known = {"format", "version", "name", "title", "description", "demo", "interval_s", "duration_s", "gpus",
             "process_info"}
    recording = Recording(
        name=str(header.get("name") or name), gpus=gpus, static=static, frames=frames, interval_s=interval,
        title=str(header.get("title") or ""), description=str(header.get("description") or ""),
        demo=header.get("demo") is True, process_info=process_info,
        meta={k: v for k, v in header.items() if k not in known},
    )
    start = recording.meta.get("start_time")
    if start is not None and not _finite(start, 0, MAX_EPOCH):
        log.warning("recording %r: ignoring the start time %.40r", name, start)
        del recording.meta["start_time"]
    validate(recording)
    return recording


def _pid(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_PID else None


def _process_info(value: Any) -> dict[int, dict[str, Any]]:
    """The header's static process rows; a row under a key that is not a pid is dropped."""
    if not isinstance(value, dict):
        raise TypeError("process_info is not an object")
    out: dict[int, dict[str, Any]] = {}
    for key, row in value.items():
        pid = _pid(int(key)) if isinstance(key, str) and key.isdigit() and len(key) <= 10 else None
        if pid is not None and isinstance(row, dict):
            out[pid] = dict(row)
    return out


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
            if not isinstance(proc, dict) or _pid(proc.get("pid")) is None:
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


MACHINE_SUFFIX = ".machine.tar.gz"


def demo_machines() -> list[str]:
    """Names of the demo machines shipped in resources/demo (NAME.machine.tar.gz, built by
    tools/make_demo_machines.py): whole hosts packed as support bundles, so the demo diagnoses them and
    never the computer it runs on (issue 10, item 5)."""
    try:
        return sorted(p.name.removesuffix(MACHINE_SUFFIX) for p in demo_dir().iterdir()
                      if p.name.endswith(MACHINE_SUFFIX))
    except OSError:
        return []


def machine_path(name: str) -> Path | None:
    """The shipped bundle of the demo machine ``name``, None when this build has none by that name.

    ``name`` is a name, never a path: "../x" or "/etc/x" is not looked up.
    """
    if not name or name != os.path.basename(name) or name.startswith("."):
        return None
    path = demo_dir() / f"{name}{MACHINE_SUFFIX}"
    return path if path.is_file() else None


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
