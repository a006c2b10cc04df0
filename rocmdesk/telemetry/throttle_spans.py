"""When a GPU throttled, and why: intervals kept beside the history rings, not one value per sample.

Throttling comes as a set of reasons per sample (``GpuSample.throttle``, decoded from gpu_metrics'
``indep_throttle_status``). A graph wants spans ("power limit from 14:02:11 to 14:06:40"), and a
ring of strings per sample would cost far more than the few changes a real GPU makes, so
consecutive samples with the same reasons merge into one span. The log is bounded: the oldest
spans go first (a GPU flapping every second for a day keeps the newest ``max_spans``).

A sample stands for the time until the next one, so a span runs from its first throttled sample to
the first sample that is not (or that has other reasons, or is missing: the GPU was away); while
throttling goes on, it ends at the newest sample.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

MAX_SPANS = 2000  # per GPU: ~200 kB at most


@dataclass(slots=True)
class Span:
    start: float
    end: float
    reasons: tuple[str, ...]
    open: bool = True  # still going at the newest sample


def reasons_of(throttle: dict[str, Any] | None) -> tuple[str, ...] | None:
    """The sorted reasons of an active throttle, () when not throttling, None when unknown."""
    if not isinstance(throttle, dict):
        return None
    if not throttle.get("active"):
        return ()
    reasons = throttle.get("reasons") or ()
    return tuple(sorted({str(r) for r in reasons})) or ("no reason given",)


class ThrottleLog:
    """The throttle spans of one GPU, oldest first."""

    def __init__(self, max_spans: int = MAX_SPANS) -> None:
        self.spans: deque[Span] = deque(maxlen=max(1, int(max_spans)))
        self.samples_seen = 0  # samples that said whether the GPU throttled (known, not None)

    def add(self, timestamp: float, throttle: dict[str, Any] | None) -> None:
        reasons = reasons_of(throttle)
        if reasons is not None:
            self.samples_seen += 1
        last = self.spans[-1] if self.spans else None
        if last is not None and last.open:
            last.end = max(last.end, timestamp)
            if reasons == last.reasons:
                return
            last.open = False
        if reasons:
            self.spans.append(Span(timestamp, timestamp, reasons))

    def close(self, timestamp: float) -> None:
        """The GPU was missing at ``timestamp``: a running span stops there."""
        self.add(timestamp, None)

    def clear(self) -> None:
        self.spans.clear()
        self.samples_seen = 0

    @property
    def active(self) -> Span | None:
        last = self.spans[-1] if self.spans else None
        return last if last is not None and last.open else None

    def between(self, t0: float, t1: float) -> list[Span]:
        """Spans overlapping [t0, t1], oldest first.

        Spans do not overlap and are ordered, so their ends are too: walking back from the newest
        stops at the first that ended before ``t0`` (the graphs look at the newest end mostly).
        """
        out = []
        for span in reversed(self.spans):
            if span.end < t0:
                break
            if span.start <= t1:
                out.append(span)
        out.reverse()
        return out

    def extend(self, items: Iterable[tuple[float, dict[str, Any] | None]]) -> None:
        for timestamp, throttle in items:
            self.add(timestamp, throttle)
