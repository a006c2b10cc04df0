"""The demo source: replays a bundled recording with its timing, looping at the end.

Used by ``rocmdesk --demo``, by the window when no AMD GPU is found, and by screenshots. Every
snapshot says ``demo=True`` and comes from backend "demo", so nothing can mistake it for this
machine. Also here: :func:`choose_startup_source`, the window's choice between live and demo.
"""

from __future__ import annotations

import bisect
import logging
import os
import time
from collections.abc import Callable
from dataclasses import replace

from rocmdesk.host import HostRoot
from rocmdesk.telemetry.backends.base import Backend, BackendError
from rocmdesk.telemetry.model import GpuInfo, GpuSample, ProcessUse, Snapshot
from rocmdesk.telemetry.parsers import clean
from rocmdesk.telemetry.recording import Recording, RecordingError, load_recording

log = logging.getLogger(__name__)

DEFAULT_RECORDING = "mi300x-node"
RECORDINGS = ("mi300x-node", "rx7900xtx-comfyui")
AMD_VENDOR = "0x1002"


class DemoBackend(Backend):
    """Replays ``recording`` (a bundled name or a file path) at ``speed`` times real time.

    Position in the recording = (clock() - start) * speed + start_s, modulo its length. Sample
    timestamps are wall-clock seconds derived from ``clock`` (so they advance with a fake clock
    in tests, and stay monotonic on the real machine).
    """

    name = "demo"
    demo = True

    def __init__(self, recording: str | os.PathLike[str] | Recording = DEFAULT_RECORDING, speed: float = 1.0,
                 clock: Callable[[], float] = time.monotonic, *, wall_clock: Callable[[], float] = time.time,
                 start_s: float = 0.0) -> None:
        if not speed > 0:
            raise ValueError(f"speed must be above 0, got {speed!r}")
        if isinstance(recording, Recording):
            self.recording = recording
        else:
            try:
                self.recording = load_recording(recording)
            except RecordingError as exc:
                raise BackendError(str(exc)) from exc
        self.speed = float(speed)
        self._clock = clock
        self._start = clock()
        self._epoch = wall_clock() - self._start  # clock() + epoch = wall time
        self._start_s = float(start_s)
        self._times = self.recording.times
        self._templates: dict[int, list[GpuSample]] = {}

    @property
    def recording_name(self) -> str:
        return self.recording.name

    # -- position ------------------------------------------------------------------------------
    def position(self, now: float | None = None) -> float:
        """Seconds into the (looped) recording at clock time ``now``."""
        now = self._clock() if now is None else now
        return ((now - self._start) * self.speed + self._start_s) % self.recording.duration_s

    def frame_index(self, position: float) -> int:
        """The frame on screen at ``position``: the last one recorded at or before it (before the
        first frame, the last frame of the previous loop is still showing)."""
        return (bisect.bisect_right(self._times, position) - 1) % len(self._times)

    def loops(self, now: float | None = None) -> int:
        """How many times the recording has wrapped around (0 during the first pass)."""
        now = self._clock() if now is None else now
        return int(((now - self._start) * self.speed + self._start_s) // self.recording.duration_s)

    # -- Backend ---------------------------------------------------------------------------------
    def discover(self) -> list[GpuInfo]:
        return list(self.recording.gpus)

    def sample(self) -> Snapshot:
        now = self._clock()
        return self._snapshot(self.frame_index(self.position(now)), now + self._epoch)

    def processes(self) -> list[ProcessUse]:
        return self.recording.process_uses(self.frame_index(self.position()))

    def preroll(self, seconds: float, now: float | None = None) -> list[Snapshot]:
        """The snapshots of the last ``seconds`` of real time, oldest first, as if sampled live.

        Walks back through the looped recording, so a window can start with full graphs. The
        newest returned snapshot holds what ``sample()`` gives at ``now``; each is stamped with
        the moment its frame began to show.
        """
        if seconds < 0:
            raise ValueError("seconds must not be negative")
        now = self._clock() if now is None else now
        duration = self.recording.duration_s
        pos = self.position(now)
        index = self.frame_index(pos)
        if pos < self._times[index]:  # still showing the previous loop's last frame
            pos += duration
        wall_now = now + self._epoch
        # A frame's real-time age = (pos - frame.t) / speed, plus one loop per wrap; it grows
        # strictly with every step back, so the walk ends.
        out: list[Snapshot] = []
        wrap = 0.0
        while True:
            age = (pos - self._times[index] + wrap) / self.speed
            if age > seconds and out:  # the frame showing now is always included
                break
            out.append(self._snapshot(index, wall_now - age))  # stamped when it began to show
            index -= 1
            if index < 0:
                index = len(self._times) - 1
                wrap += duration
        out.reverse()
        return out

    # -- helpers ---------------------------------------------------------------------------------
    def _snapshot(self, index: int, timestamp: float) -> Snapshot:
        templates = self._templates.get(index)
        if templates is None:
            templates = self.recording.gpu_samples(index, 0.0)
            self._templates[index] = templates
        gpus = [replace(g, timestamp=timestamp, temperature_c=dict(g.temperature_c),
                        temperature_crit_c=dict(g.temperature_crit_c),
                        temperature_emergency_c=dict(g.temperature_emergency_c),
                        unavailable=dict(g.unavailable), source=dict(g.source)) for g in templates]
        return Snapshot(backend=self.name, timestamp=timestamp, gpus=gpus,
                        processes=self.recording.process_uses(index), demo=True)


# -- startup choice ------------------------------------------------------------------------------


def amd_cards(root: HostRoot) -> list[str]:
    """DRM cards of ``root`` whose PCI vendor is AMD (connector entries like card0-DP-1 skipped)."""
    cards = []
    for name in root.listdir("/sys/class/drm"):
        if not name.startswith("card") or not name[4:].isdigit():
            continue
        vendor = root.try_read_text(f"/sys/class/drm/{name}/device/vendor")
        if vendor is not None and clean(vendor).strip().lower() == AMD_VENDOR:
            cards.append(name)
    return sorted(cards, key=lambda c: int(c[4:]))


def choose_startup_source(root: HostRoot | str | os.PathLike[str] = "/", live: bool | None = None) -> tuple[str, str]:
    """("live" | "demo", reason in words): what the window shows when nothing was asked for.

    Demo only for the live machine with no AMD GPU; a root folder given on purpose is always
    shown as it is (an empty one gets an explanation there, not a demo). ``live`` overrides
    whether ``root`` counts as this machine (tests use a folder as a stand-in).
    """
    host = root if isinstance(root, HostRoot) else HostRoot(root)
    is_live = host.is_live if live is None else live
    cards = amd_cards(host)
    if cards:
        where = "this machine" if is_live else host.root
        count = f"{len(cards)} AMD GPU" + ("s" if len(cards) != 1 else "")
        return "live", f"found {count} on {where} ({', '.join(cards)})"
    if not is_live:
        return "live", f"showing the root folder {host.root} as asked, although it has no AMD GPU"
    if not host.is_dir("/sys/class/drm"):
        return "demo", ("no AMD GPU found: /sys/class/drm does not exist (no GPU driver loaded, or a "
                        "container without /sys); showing demo data")
    if host.listdir("/sys/class/drm") and not host.is_dir("/sys/module/amdgpu"):
        return "demo", "no AMD GPU found (the amdgpu driver is not loaded); showing demo data"
    return "demo", "no AMD GPU found on this machine; showing demo data"
