"""The file-by-file fuzz of issue 11 item 3, as figures: cases, problems and seconds per root and kind.

The same cases as tests/unit/test_fuzz_sysfs.py (tests/support/fuzz_roots.py: every sysfs/procfs file the
readers open on three real-dump roots, each of 14 kinds, through sample, diagnose, report, the exporter and
the tuning reader), run outside pytest so the CPU time is the fuzz's own. Goal: the whole run well under 60 s
on an idle 2-core machine, no problem in any case. Prints JSON.
Run: .venv/bin/python -m benchmarks.bench_fuzz [--roots workstation,instinct] [--kinds empty,fifo]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support import fuzz_roots as fz

GOAL_S = 60.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--roots", default=",".join(fz.ROOTS), help="comma-separated fuzz roots")
    parser.add_argument("--kinds", default=",".join(fz.KINDS), help="comma-separated kinds")
    args = parser.parse_args(argv)
    roots, kinds = args.roots.split(","), args.kinds.split(",")
    folder = Path(tempfile.mkdtemp(prefix="rocmdesk-fuzz-bench-", dir=fz.scratch_dir()))
    os.chmod(folder, 0o755)
    out: dict = {"roots": {}, "problems": [], "kinds": kinds,
                 "unreadable_as_root": fz.can_deny_reads()[1] or "real (chmod 000, or effective uid nobody as root)"}
    wall = time.perf_counter()
    cpu = time.process_time()
    slowest = (0.0, "")
    try:
        for name in roots:
            root = fz.ROOTS[name](folder / name)
            targets, baseline = fz.fuzz_targets(root)
            per_kind = {}
            for kind in kinds:
                start, cases, skipped = time.perf_counter(), 0, 0
                for target in targets:
                    report = fz.run_case(root, target, kind, baseline,
                                         random.Random(f"{fz.SEED}:{name}:{target.rel}:{kind}"))
                    cases += not report.skipped
                    skipped += report.skipped
                    out["problems"] += [f"{name}/{kind} {target.rel}: {p}" for p in report.problems]
                    if report.seconds > slowest[0]:
                        slowest = (report.seconds, f"{name}/{kind} {target.rel}")
                per_kind[kind] = {"cases": cases, "not_applicable": skipped,
                                  "seconds": round(time.perf_counter() - start, 2)}
            out["roots"][name] = {"files": len(targets), "kinds": per_kind}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    out["cases"] = sum(k["cases"] for r in out["roots"].values() for k in r["kinds"].values())
    out["seconds"] = round(time.perf_counter() - wall, 1)
    out["cpu_seconds"] = round(time.process_time() - cpu, 1)
    out["slowest_case"] = {"seconds": round(slowest[0], 3), "case": slowest[1]}
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    out["load_average"] = round(os.getloadavg()[0], 2)
    out["goal_seconds"] = GOAL_S
    out["meets_goal"] = not out["problems"] and out["cpu_seconds"] < GOAL_S
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0 if out["meets_goal"] else 1


if __name__ == "__main__":
    sys.exit(main())
