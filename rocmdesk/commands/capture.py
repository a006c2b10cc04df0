"""``rocmdesk capture``: save a redacted support bundle (a .tar.gz that is a host root).

``--dry-run`` prints what would be shared and writes nothing. ``--minutes`` bounds the telemetry
history kept; ``--record SECONDS`` samples the GPUs for that long first (the command line has no
running history of its own; the window passes its own), ``--history FILE`` takes a recording.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from typing import TextIO

from rocmdesk.commands.history_arg import load_history_arg

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", metavar="FILE", help="where to write the bundle (.tar.gz)")
    parser.add_argument("--root", metavar="DIR", default=argparse.SUPPRESS,
                        help="capture this folder as the machine's root instead of /")
    parser.add_argument("--minutes", type=float, default=10.0, help="telemetry history to keep (default 10)")
    parser.add_argument("--record", type=float, default=0.0, metavar="SECONDS",
                        help="sample the GPUs for this long before capturing (default: one sample)")
    parser.add_argument("--history", metavar="FILE",
                        help="a telemetry recording (.jsonl.gz, or a demo name) to include")
    parser.add_argument("--python-env", metavar="PATH", action="append", default=[], dest="python_envs",
                        help="also capture this Python environment's torch metadata (repeatable)")
    parser.add_argument("--dry-run", action="store_true", help="print what would be shared; write nothing")


def _record(root, seconds: float):
    from rocmdesk.report.bundle import recording_from_snapshots
    from rocmdesk.telemetry.backends.sysfs import SysfsBackend

    backend = SysfsBackend(root)
    backend.discover()
    snapshots = []
    end = time.monotonic() + seconds
    while True:
        snapshots.append(backend.sample())
        if time.monotonic() >= end:
            break
        time.sleep(1.0)
    backend.close()
    return recording_from_snapshots(snapshots) if snapshots and snapshots[0].gpus else None


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    from rocmdesk.host import HostRoot
    from rocmdesk.report.bundle import BundleError, prepare_bundle

    root_dir = getattr(args, "root", None) or "/"
    if not os.path.isdir(root_dir):
        print(f"rocmdesk capture: {root_dir} is not a folder", file=err)
        return 2
    if not args.output and not args.dry_run:
        print("rocmdesk capture: say where to write the bundle with -o FILE (or use --dry-run)", file=err)
        return 2
    root = HostRoot(root_dir)
    history = None
    if args.history:
        history, refused = load_history_arg(args.history, "capture", err)
        if refused is not None:
            return refused
    elif args.record > 0:
        try:
            history = _record(root, args.record)
        except Exception as exc:  # no backend, no GPU: the bundle is still worth having
            print(f"rocmdesk capture: could not record telemetry ({exc}); continuing without", file=err)
    try:
        plan = prepare_bundle(root, python_envs=args.python_envs, history=history, minutes=args.minutes)
    except (OSError, BundleError) as exc:
        print(f"rocmdesk capture: {exc}", file=err)
        return 2
    if args.dry_run:
        out.write("\n".join(plan.preview(limit=None)) + "\n")
        return 0
    try:
        size = plan.save(args.output)
    except OSError as exc:
        print(f"rocmdesk capture: cannot write {args.output}: {exc.strerror or exc}", file=err)
        return 2
    files = sum(1 for e in plan.manifest.entries if e.kind == "file")
    print(f"wrote {args.output} ({size / 1024:.0f} KiB, {files} files; redacted). "
          f"Open it with: rocmdesk --open {args.output}", file=out)
    return 0
