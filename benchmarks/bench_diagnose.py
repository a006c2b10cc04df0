"""Cost of one full diagnosis (``rocmdesk diagnose --json``) of a realistic root; prints JSON.

Goal (issue 4): a full diagnosis takes at most 2 s. The root is the clean Ubuntu workstation of
tests/support/scenarios.py made heavier the way busy machines are: four GPUs, a 20 MB kern.log
(several boots), 400 processes (a few holding the GPU), 40 modprobe.d files, and some faults so
findings and evidence are built too. Each run uses a fresh context (nothing cached).

Run: ``.venv/bin/python benchmarks/bench_diagnose.py [--runs N] [--log-mb MB] [--processes N]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rocmdesk.diagnosis.runner import diagnose
from tests.support import scenarios as sc

GOAL_S = 2.0


def build(folder: Path, log_mb: int, processes: int) -> Path:
    root = sc.clean_workstation(folder / "root")
    sc.add_second_gpu(root, "rx7900xtx", "0000:0a:00.0")
    sc.add_second_gpu(root, "rx6600", "0000:0d:00.0")
    sc.add_second_gpu(root, "rx7800xt", "0000:10:00.0")
    line = ("Nov 29 10:00:00 ws kernel: [ 1234.567890] audit: type=1400 audit(1732870000.000:123): "
            'apparmor="DENIED" operation="open" profile="snap.firefox" name="/proc/1/cgroup"\n')
    boot = sc.KERN_LOG_CURRENT_BOOT
    body = line * (log_mb * (1 << 20) // len(line) // 3)
    (root / "var/log/kern.log").write_text((boot + body) * 3)
    for n in range(40):
        sc.write(root, f"/etc/modprobe.d/vendor-{n:02d}.conf", f"options snd_hda_intel power_save={n % 2}\n" * 5)
    for pid in range(3000, 3000 + processes):
        gpu = pid % 50 == 0
        sc.gpu_process(root, pid, "python3" if gpu else "bash", {"HOME": "/home/alice", "LANG": "C.UTF-8"},
                       device="/dev/kfd" if gpu else "/dev/pts/0")
    sc.session_env(root, HIP_VISIBLE_DEVICES="0,7")
    sc.export_in_profile(root, "HSA_OVERRIDE_GFX_VERSION", "10.3.0")
    sc.kernel_log(root, "[drm] Detected VRAM RAM=8176M, BAR=256M")
    return root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--log-mb", type=int, default=20)
    parser.add_argument("--processes", type=int, default=400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rocmdesk-bench-") as tmp:
        root = build(Path(tmp), args.log_mb, args.processes)
        times = []
        report = None
        for _ in range(args.runs):
            start = time.perf_counter()
            report = diagnose(root)
            json.dumps(report.to_json())
            times.append(time.perf_counter() - start)
        slowest = sorted(report.results, key=lambda r: -r.duration_s)[:5]
        result = {
            "benchmark": "diagnose",
            "root": {"gpus": len(report.host["gpus"]), "kern_log_mb": args.log_mb, "processes": args.processes},
            "checks": len(report.results),
            "findings": sorted({f.id for f in report.findings}),
            "median_s": round(statistics.median(times), 4),
            "max_s": round(max(times), 4),
            "runs": len(times),
            "slowest_checks_ms": {r.id: round(r.duration_s * 1000, 2) for r in slowest},
            "goal_s": GOAL_S,
            "ok": max(times) <= GOAL_S,
        }
    print(json.dumps(result, indent=2))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
