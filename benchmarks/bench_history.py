"""History ring buffers: memory of 24 h x 8 GPUs, append cost, view + min/max downsample cost; prints JSON.

Goal (issue 3): 24 h of history for 8 GPUs inside a 250 MB process budget, and drawing a 1 h or
24 h window cheap enough to redraw every second. The buffers are filled with the MI300X demo
recording replayed for 24 h (the real data shape), then measured.

Run: ``.venv/bin/python benchmarks/bench_history.py [--hours H] [--pixels N] [--runs N]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil

from rocmdesk.telemetry.backends.demo import DemoBackend
from rocmdesk.telemetry.history import DEFAULT_METRICS, History, downsample_minmax
from rocmdesk.telemetry.model import Snapshot

MIB = 1024 * 1024


def _stats_us(times: list[float]) -> dict:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"median_us": round(statistics.median(ordered) * 1e6, 2), "p95_us": round(p95 * 1e6, 2),
            "runs": len(ordered)}


def _rss() -> int:
    return psutil.Process().memory_info().rss


def recorded_frames() -> list[Snapshot]:
    """One loop of the 8-GPU demo, sampled once per recorded second."""
    clock = [0.0]
    backend = DemoBackend("mi300x-node", clock=lambda: clock[0], wall_clock=lambda: 1.7e9)
    frames = []
    for second in range(int(backend.recording.duration_s)):
        clock[0] = float(second)
        frames.append(backend.sample())
    return frames


def fill(history: History, frames: list[Snapshot], points: int, t0: float) -> list[float]:
    """Append ``points`` snapshots at 1 Hz; returns the cost of each append_snapshot (8 GPUs)."""
    costs = []
    perf = time.perf_counter
    for i in range(points):
        snap = frames[i % len(frames)]
        ts = t0 + i
        snap.timestamp = ts
        for gpu in snap.gpus:
            gpu.timestamp = ts
        start = perf()
        history.append_snapshot(snap)
        costs.append(perf() - start)
    return costs


def bench_window(history: History, seconds: float, pixels: int, runs: int) -> dict:
    """One graph redraw's data work for all 8 GPUs: view of 4 metrics + downsample to pixels."""
    metrics = ("temperature_c.junction", "power_w", "vram_used_bytes", "gpu_busy_percent")
    view_times, total_times = [], []
    points = 0
    for _ in range(runs):
        t_start = time.perf_counter()
        windows = [gpu.window(seconds, metrics=metrics) for gpu in history.gpus()]
        t_view = time.perf_counter()
        for window in windows:
            for metric in metrics:
                x, _y = downsample_minmax(window.times, window.values[metric], pixels)
                points = len(x)
        t_end = time.perf_counter()
        view_times.append(t_view - t_start)
        total_times.append(t_end - t_start)
    return {"window_s": seconds, "points_in_window": len(windows[0]), "points_drawn_per_curve": points,
            "curves": len(windows) * len(metrics), "view": _stats_us(view_times),
            "view_and_downsample": _stats_us(total_times)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, default=24.0, help="history to fill (default 24)")
    parser.add_argument("--pixels", type=int, default=1600, help="plot width in pixels (default 1600)")
    parser.add_argument("--runs", type=int, default=30, help="timed redraws per window (default 30)")
    args = parser.parse_args(argv)

    frames = recorded_frames()
    rss_before = _rss()
    history = History()  # 24 h at 1 Hz
    for gpu in frames[0].gpus:
        history.add_gpu(gpu.info.pci, gpu.info.card)
    rss_allocated = _rss()
    points = int(args.hours * 3600)
    t_fill = time.perf_counter()
    costs = fill(history, frames, points, 1.7e9)
    fill_s = time.perf_counter() - t_fill
    rss_filled = _rss()
    result = {
        "gpus": len(history.keys()),
        "metrics_per_gpu": len(DEFAULT_METRICS),
        "capacity_points": history.capacity,
        "filled_points": points,
        "memory": {
            "buffers_mib": round(history.nbytes / MIB, 2),
            "rss_growth_when_filled_mib": round((rss_filled - rss_before) / MIB, 2),
            "rss_growth_when_allocated_mib": round((rss_allocated - rss_before) / MIB, 2),
            "process_rss_mib": round(rss_filled / MIB, 1),
            "budget_mib": 250,
        },
        "append_snapshot_8_gpus": {**_stats_us(costs), "fill_total_s": round(fill_s, 2)},
        "window_1h": bench_window(history, 3600.0, args.pixels, args.runs),
        "window_24h": bench_window(history, 86400.0, args.pixels, args.runs),
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
