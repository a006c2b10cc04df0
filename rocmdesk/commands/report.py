"""``rocmdesk report``: write an HTML (graphs embedded) or Markdown (for a GitHub issue) report."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import TextIO

from rocmdesk.atomic_file import atomic_write_text
from rocmdesk.commands.history_arg import load_history_arg

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", metavar="FILE", required=True,
                        help="report.html or report.md (the suffix picks the format); - prints Markdown")
    parser.add_argument("--root", metavar="DIR", default=argparse.SUPPRESS,
                        help="report on this folder as the machine's root instead of /")
    parser.add_argument("--snapshot", metavar="FILE", help="report on a support bundle")
    parser.add_argument("--history", metavar="FILE", help="a telemetry recording (.jsonl.gz) for the graphs")
    parser.add_argument("--python-env", metavar="PATH", action="append", default=[], dest="python_envs",
                        help="also check this Python environment (repeatable)")
    parser.add_argument("--format", choices=("html", "md"), help="override the format the suffix implies")


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    from rocmdesk.host import HostRoot
    from rocmdesk.report.bundle import BundleError, open_bundle
    from rocmdesk.report.data import build_report
    from rocmdesk.report.html import render_html
    from rocmdesk.report.markdown import render_markdown

    fmt = args.format or ("html" if args.output.lower().endswith((".html", ".htm")) else "md")
    root_dir = getattr(args, "root", None)
    if root_dir and args.snapshot:
        print("rocmdesk report: use either --root or --snapshot, not both", file=err)
        return 2
    history = None
    if args.history:
        history, refused = load_history_arg(args.history, "report", err)
        if refused is not None:
            return refused
    opened = None
    try:
        if args.snapshot:
            try:
                opened = open_bundle(args.snapshot)
            except BundleError as exc:
                print(f"rocmdesk report: cannot open the snapshot: {exc}", file=err)
                return 2
            root = opened.root
            source = opened.banner().replace(": fixes are disabled", "")
            history = history or opened.history
            envs = args.python_envs or opened.python_envs
        else:
            if root_dir and not os.path.isdir(root_dir):
                print(f"rocmdesk report: {root_dir} is not a folder", file=err)
                return 2
            root = HostRoot(root_dir or "/")
            source = None
            envs = args.python_envs
            if history is None and not root.is_live and os.path.isfile(root.join("rocmdesk/history.json")):
                from rocmdesk.telemetry.recording import RecordingError, read_recording

                try:
                    history = read_recording(root.join("rocmdesk/history.json"))
                except RecordingError as exc:
                    log.warning("ignoring the root's history: %s", exc)
        telemetry_source = f"the recording {os.path.basename(args.history)}" if args.history else None
        report = build_report(root, history=history, source=source, python_envs=envs,
                              telemetry_source=telemetry_source)
        text = render_html(report) if fmt == "html" else render_markdown(report, limit=None)
    finally:
        if opened is not None:
            opened.close()
    if args.output == "-":
        out.write(text)
        return 0
    try:
        atomic_write_text(args.output, text)
    except OSError as exc:
        print(f"rocmdesk report: cannot write {args.output}: {exc.strerror or exc}", file=err)
        return 2
    print(f"wrote {args.output} ({report.headline()})", file=out)
    return 0
