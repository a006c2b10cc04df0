"""Per-process history: each process's VRAM and compute use over time, bounded in memory.

A process is a (pid, GPU) pair, as in the Processes table. Memory is capped twice: at most
``max_processes`` tracked and ``max_points`` kept each (older points drop off), so a machine
starting thousands of short jobs costs the same as one with three. A process that exits keeps its
history (marked gone, for the window to grey out) for ``keep_gone_s``, then ages out; when the cap
is reached the longest-gone goes first, then the longest-idle live one.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from dataclasses import dataclass, field

from rocmdesk.telemetry.model import ProcessUse, Snapshot

log = logging.getLogger(__name__)

Key = tuple[int, str]  # (pid, PCI address)
NAN = math.nan


def _num(value: object) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else NAN  # type: ignore[arg-type]


@dataclass(slots=True)
class ProcessTrack:
    """The points of one process on one GPU; ``gone_at`` is when it was last missing from a sample."""

    key: Key
    last: ProcessUse  # its last reading (name, command line, for the table once it has exited)
    times: deque[float]
    vram_bytes: deque[float]
    compute_percent: deque[float]  # CU occupancy (KFD)
    graphics_percent: deque[float]  # DRM fdinfo graphics-engine time
    seen_at: float = 0.0
    gone_at: float | None = None

    @property
    def gone(self) -> bool:
        return self.gone_at is not None


@dataclass
class ProcessHistory:
    max_processes: int = 64
    max_points: int = 900  # 30 min at one reading per 2 s (how often the window reads processes)
    keep_gone_s: float = 600.0
    tracks: dict[Key, ProcessTrack] = field(default_factory=dict)

    def feed(self, snapshot: Snapshot) -> None:
        """Add one reading per process in ``snapshot``; mark the missing as gone, drop the aged."""
        now = snapshot.timestamp
        if not math.isfinite(now):
            return
        present = {(p.pid, p.pci) for p in snapshot.processes}
        seen: set[Key] = set()
        for p in snapshot.processes:
            key = (p.pid, p.pci)
            if key in seen:
                continue
            seen.add(key)
            track = self.tracks.get(key)
            if track is None:
                if len(self.tracks) >= self.max_processes and not self._evict(present):
                    continue
                track = self.tracks[key] = ProcessTrack(
                    key, p, deque(maxlen=self.max_points), deque(maxlen=self.max_points),
                    deque(maxlen=self.max_points), deque(maxlen=self.max_points))
            elif track.times and now <= track.times[-1]:
                continue  # the clock went back, or the same snapshot twice: times stay increasing
            track.last, track.seen_at, track.gone_at = p, now, None
            track.times.append(now)
            track.vram_bytes.append(_num(p.vram_bytes))
            track.compute_percent.append(_num(p.cu_occupancy_percent))
            track.graphics_percent.append(_num(p.gpu_percent))
        for key, track in list(self.tracks.items()):
            if key in seen:
                continue
            if track.gone_at is None:
                track.gone_at = now
            elif now - track.gone_at > self.keep_gone_s:
                del self.tracks[key]

    def _evict(self, present: set[Key]) -> bool:
        """Make room for one more; False when every tracked process is in this sample (the newcomer waits)."""
        candidates = [t for t in self.tracks.values() if t.key not in present]
        if not candidates:
            return False
        victim = min(candidates, key=lambda t: (not t.gone, t.gone_at if t.gone else t.seen_at))
        log.debug("process history full (%d): dropping pid %d on %s", self.max_processes, *victim.key)
        del self.tracks[victim.key]
        return True

    def get(self, key: Key) -> ProcessTrack | None:
        return self.tracks.get(key)

    def gone(self) -> list[ProcessTrack]:
        return [t for t in self.tracks.values() if t.gone]
