"""Opening hostile bundles, and the largest bundle opening allows: bytes written, peak memory, seconds.

Each case is measured in a fresh process (peak RSS by ``resource.getrusage``): open the bundle, load its
history and build every snapshot the window preloads, then ``rocmdesk diagnose --snapshot`` and
``rocmdesk report --snapshot``. Goals (issue 11 item 2): a hostile case is refused with nothing written
beyond the manifest; the maximal allowed bundle opens in <= 1 GB and <= 30 s.
Run: .venv/bin/python -m benchmarks.bench_hostile_bundle [-o benchmarks/hostile_bundle.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rocmdesk.report import bundle as bundle_mod
from rocmdesk.report.manifest import HISTORY_NAME
from rocmdesk.telemetry import recording as recording_mod
from tests.support import hostile_bundles as hb

MIB = 1 << 20
GOAL_RSS_MB = 1024
GOAL_S = 30.0


def sparse_40x64() -> bytes:
    size = 64 * MIB
    sha = hashlib.sha256(hb.sparse_data(size)).hexdigest()
    names = [f"sys/s{i:02d}" for i in range(40)]
    return hb.bundle(hb.manifest([hb.file_entry(n, b"", size=size, sha=sha) for n in names]),
                     [hb.sparse_member(n, size) for n in names])


def frames_1_4m() -> bytes:
    head = json.dumps({"format": "rocmdesk-recording", "version": 1, "name": "h", "interval_s": 1.0,
                       "gpus": [{"info": {"card": "card0", "pci": "0000:03:00.0", "name": "GPU"}, "static": {}}]})
    body = "\n".join(f'{{"t":{t},"gpus":[{{}}]}}' for t in range(1_400_000))
    return hb.simple_bundle({HISTORY_NAME: (head + "\n" + body + "\n").encode()}, dirs=["rocmdesk"])


def link_chain() -> bytes:
    return hb.simple_bundle({}, dirs=["d", "d/d", "sys"],
                            links={"d/d/up": "../..", "sys/temp1_input": "../d/d/up/../../secret"})


def maximal() -> bytes:
    """Every limit at once: MAX_FRAMES frames of 4 GPUs (+ process rows up to MAX_POINTS) in a history of
    at most the member limit, files up to the extracted-bytes limit."""
    gpus, frames = 4, recording_mod.MAX_FRAMES
    procs_per_frame = (recording_mod.MAX_POINTS - gpus * frames) / frames
    entry = json.dumps({"temperature_c": {"junction": 57.0, "mem": 41.0}, "power_w": 745.0,
                        "vram_used_bytes": 186152992768, "gpu_busy_percent": 100.0, "sclk_mhz": 1959},
                       separators=(",", ":"))
    proc = '{"pid":51200,"vram_bytes":185830871040}'
    head = json.loads(hb.history_lines(1, gpus=gpus).decode().splitlines()[0])
    head["start_time"] = 1.7e9
    lines = [json.dumps(head)]
    owed = 0.0
    for t in range(frames):
        owed += procs_per_frame
        n, owed = int(owed), owed - int(owed)
        extra = f',"processes":[{",".join([proc] * n)}]' if n else ""
        lines.append(f'{{"t":{t},"gpus":[{",".join([entry] * gpus)}]{extra}}}')
    history = ("\n".join(lines) + "\n").encode()
    assert len(history) <= bundle_mod.OPEN_MAX_MEMBER_BYTES, len(history)
    left = bundle_mod.OPEN_MAX_EXTRACTED_BYTES - len(history) - 1 * MIB
    files = {HISTORY_NAME: history}
    for i in range(4):
        size = min(left, bundle_mod.OPEN_MAX_MEMBER_BYTES)
        if size <= 0:
            break
        files[f"var/log/f{i}"] = b"x" * size
        left -= size
    return hb.simple_bundle(files, dirs=["rocmdesk", "var", "var/log"], created=1.7e9)


def many_members() -> bytes:
    n = bundle_mod.OPEN_MAX_MEMBERS - 2  # with the manifest and the folder: the limit
    files = {f"e/{i}": b"1" for i in range(n)}
    return hb.simple_bundle(files, dirs=["e"])


CASES = {"sparse_40x64MiB": sparse_40x64, "history_1.4M_frames": frames_1_4m, "link_chain_outside": link_chain,
         "maximal_allowed": maximal, "members_at_limit": many_members}


def measure(action: str, path: str) -> dict:
    """In this (fresh) process: run ``action`` on the bundle; seconds, peak RSS, bytes written."""
    import resource

    written = {"bytes": 0, "files": 0}
    real_write = bundle_mod._write_file

    def counting(folder: str, name: str, data: bytes) -> None:
        written["bytes"] += len(data)
        written["files"] += 1
        real_write(folder, name, data)

    bundle_mod._write_file = counting
    t0 = time.perf_counter()
    result: dict = {"action": action}
    if action == "open":
        try:
            with bundle_mod.open_bundle(path) as opened:
                rec = opened.history
                result["outcome"] = "opened"
                result["history"] = opened.history_error if rec is None else f"{len(rec.frames)} frames"
                if rec is not None:  # what the window preloads (ui.sources.recorded_snapshots)
                    snaps = [rec.snapshot(i, 1.7e9 + f.t) for i, f in enumerate(rec.frames)]
                    result["snapshots"] = len(snaps)
                    del snaps
        except bundle_mod.BundleError as exc:
            result["outcome"] = f"refused: {exc}"
    else:
        from rocmdesk.cli import main

        out = os.path.join(tempfile.mkdtemp(), "r.md")
        argv = [action, "--snapshot", path] + (["-o", out] if action == "report" else [])
        import contextlib
        import io

        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main(argv)
        result["outcome"] = f"exit {code}" + (f": {err.getvalue().strip()[:200]}" if code == 2 else "")
    result["seconds"] = round(time.perf_counter() - t0, 2)
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    with open("/proc/self/status") as fh:  # this process image's own high-water mark (not the parent's)
        hwm = [line.split()[1] for line in fh if line.startswith("VmHWM:")]
    if hwm:
        result["vm_hwm_mb"] = round(int(hwm[0]) / 1024, 1)
    result["bytes_written"] = written["bytes"]
    result["files_written"] = written["files"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-o", "--output")
    parser.add_argument("--measure", nargs=2, metavar=("ACTION", "BUNDLE"))
    parser.add_argument("--build", nargs=2, metavar=("CASE", "BUNDLE"))
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(*args.measure)))
        return
    if args.build:  # in its own process: the measuring children must not inherit a large parent's RSS
        Path(args.build[1]).write_bytes(CASES[args.build[0]]())
        return
    top = Path(__file__).resolve().parent.parent
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "secret").write_text("97000\n")
        for name in args.cases:
            path = Path(tmp) / f"{name}.tar.gz"
            subprocess.run([sys.executable, "-m", "benchmarks.bench_hostile_bundle", "--build", name, str(path)],
                           check=True, cwd=top, timeout=600)
            for action in ("open", "diagnose", "report"):
                proc = subprocess.run([sys.executable, "-m", "benchmarks.bench_hostile_bundle", "--measure",
                                       action, str(path)], capture_output=True, text=True, timeout=600,
                                      cwd=top,
                                      env={**os.environ, "TMPDIR": tmp, "QT_QPA_PLATFORM": "offscreen"})
                row = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else {
                    "action": action, "outcome": f"crashed: {proc.stderr.strip()[-300:]}"}
                row.update(case=name, bundle_bytes=path.stat().st_size)
                results.append(row)
                print(json.dumps(row), file=sys.stderr)
    report = {
        "benchmark": "hostile_bundles",
        "limits": {"members": bundle_mod.OPEN_MAX_MEMBERS, "stored_bytes": bundle_mod.OPEN_MAX_TOTAL_BYTES,
                   "extracted_bytes": bundle_mod.OPEN_MAX_EXTRACTED_BYTES,
                   "member_bytes": bundle_mod.OPEN_MAX_MEMBER_BYTES, "history_frames": recording_mod.MAX_FRAMES,
                   "history_points": recording_mod.MAX_POINTS, "history_gpus": recording_mod.MAX_GPUS},
        "goal_peak_rss_mb": GOAL_RSS_MB, "goal_seconds": GOAL_S,
        "cases": results,
        "ok": all(r.get("peak_rss_mb", 1e9) <= GOAL_RSS_MB and r.get("seconds", 1e9) <= GOAL_S for r in results),
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.output:
        Path(args.output).write_text(text + "\n")


if __name__ == "__main__":
    main()
