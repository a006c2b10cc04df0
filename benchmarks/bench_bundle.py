"""Support bundle size and open time for a realistic 8-GPU MI300X node with 60 minutes of history.

Prints JSON. Goals (issue 6): bundle < 5 MB, open (validate + unpack + load history) < 2 s.
Run: .venv/bin/python -m benchmarks.bench_bundle
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rocmdesk.host import HostRoot
from rocmdesk.report.bundle import open_bundle, prepare_bundle
from rocmdesk.telemetry.recording import Frame, Recording, load_recording
from tests.support.instinct import instinct_specs
from tests.support.sysfs_tree import build_root
from tests.unit.report.workstation import make_workstation

MINUTES = 60


def hour_of_history() -> Recording:
    """The 15-minute MI300X demo recording, looped to 60 minutes at 1 Hz."""
    demo = load_recording("mi300x-node")
    frames = []
    loop = demo.duration_s
    for n in range(int(MINUTES * 60 / loop) + 1):
        frames.extend(Frame(f.t + n * loop, f.gpus, f.processes) for f in demo.frames)
    frames = [f for f in frames if f.t < MINUTES * 60]
    return Recording(demo.name, demo.gpus, demo.static, frames, demo.interval_s, demo.title, demo.description,
                     False, demo.process_info, {})


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        root = tmp_path / "root"
        build_root(root, instinct_specs(tmp_path / "dumps", "mi300x", 8))
        make_workstation(root, gpus=[])
        history = hour_of_history()
        t0 = time.perf_counter()
        plan = prepare_bundle(HostRoot(root), history=history, minutes=MINUTES)
        prepare_s = time.perf_counter() - t0
        out = tmp_path / "bundle.tar.gz"
        t0 = time.perf_counter()
        size = plan.save(out)
        save_s = time.perf_counter() - t0
        opens = []
        for _ in range(5):
            t0 = time.perf_counter()
            with open_bundle(out) as opened:
                frames = len(opened.history.frames)
                gpus = len(opened.history.gpus)
            opens.append(time.perf_counter() - t0)
        result = {
            "benchmark": "bundle_8gpu_60min",
            "gpus": gpus,
            "history_frames": frames,
            "members": len(plan.members) + 1,
            "uncompressed_bytes": plan.manifest.total_bytes(),
            "bundle_bytes": size,
            "bundle_mb": round(size / 1e6, 3),
            "goal_bundle_mb": 5.0,
            "prepare_s": round(prepare_s, 3),
            "save_s": round(save_s, 3),
            "open_s_median": round(statistics.median(opens), 3),
            "open_s_max": round(max(opens), 3),
            "goal_open_s": 2.0,
        }
        result["ok"] = result["bundle_mb"] < 5.0 and result["open_s_max"] < 2.0
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
