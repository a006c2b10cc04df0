"""The Graphs tab's CSV export as plain data: raw samples of several series on one time column.

Qt-free (numpy and the standard library only) so it is tested without a window, and so the
table that the Export button writes is the one the tests read. Each column is one recorded
series (one GPU's metric); rows are the union of their timestamps, blanks where a series has
no sample at that time (a GPU that was away, or polled at another moment).
"""

from __future__ import annotations

import csv
import logging
import math
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rocmdesk.atomic_file import atomic_open

log = logging.getLogger(__name__)

# the unit a metric's raw values are stored in (the CSV keeps stored units, never display units)
UNITS = {"temp": "C", "power": "W", "memory": "bytes", "busy": "percent", "clocks": "MHz", "fan": "percent"}


@dataclass(frozen=True, slots=True)
class Column:
    """One series: its header and its (times, values), already limited to the exported range."""

    name: str
    times: np.ndarray
    values: np.ndarray


def column(name: str, t: np.ndarray, y: np.ndarray, t0: float, t1: float) -> Column:
    """A column holding only the samples inside [t0, t1] (the history hands out a margin too)."""
    t = np.asarray(t, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    mask = (t >= t0) & (t <= t1)
    return Column(name, t[mask], y[mask])


def table(columns: Sequence[Column]) -> tuple[np.ndarray, np.ndarray]:
    """(sorted unique times, rows x columns values with NaN where a column has no sample)."""
    times = np.unique(np.concatenate([c.times for c in columns])) if columns else np.empty(0)
    out = np.full((len(times), len(columns)), np.nan)
    for n, col in enumerate(columns):
        if len(col.times):
            out[np.searchsorted(times, col.times), n] = col.values
    return times, out


def iso_time(when: float) -> str:
    """Local time with milliseconds: ``2026-12-02T14:03:07.250``."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(when)) + f".{int((when % 1) * 1000):03d}"


def rows(columns: Sequence[Column]) -> Iterable[list[str]]:
    """The CSV rows, header first; empty cells where a value is missing."""
    times, values = table(columns)
    yield ["time_iso", "timestamp", *[c.name for c in columns]]
    for r, when in enumerate(times.tolist()):
        yield [iso_time(when), f"{when:.3f}", *["" if math.isnan(v) else f"{v:g}" for v in values[r].tolist()]]


def write_csv(path: str | os.PathLike[str], columns: Sequence[Column]) -> int:
    """Write the table to ``path`` through a temporary file beside it; returns the data row count.

    Streamed row by row (24 h of eight GPUs is ~86 000 rows), renamed over ``path`` only when
    complete, and the temporary file is removed when anything fails (no half file, no leftover).
    """
    target = Path(path)
    count = -1
    with atomic_open(target, True) as fh:
        writer = csv.writer(fh)
        for row in rows(columns):
            writer.writerow(row)
            count += 1
    log.info("exported %d rows of %d series to %s", count, len(columns), target)
    return count
