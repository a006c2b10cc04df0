"""``rocmdesk screenshot``: render the real window offscreen and save one tab as a PNG.

For bug reports and documentation: ``rocmdesk screenshot --demo --tab graphs -o graphs.png``.
The window samples for ``--seconds`` first (the demo pre-rolls an hour of history, so graphs
are full at once). Qt is imported only when this command runs.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from collections.abc import Callable

log = logging.getLogger(__name__)

TABS = ("overview", "graphs", "processes", "diagnosis", "tuning", "report")
GRAPH_METRICS = ("temp", "power", "memory", "busy", "clocks", "fan")  # ui.settings.GRAPH_METRICS (no Qt here)
MAX_SIDE = 8192


def parse_size(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"\s*(\d{2,5})\s*[xX×]\s*(\d{2,5})\s*", text or "")
    if not match:
        raise argparse.ArgumentTypeError(f"size must look like 1920x1080, got {text!r}")
    width, height = int(match.group(1)), int(match.group(2))
    if not (320 <= width <= MAX_SIDE and 240 <= height <= MAX_SIDE):
        raise argparse.ArgumentTypeError(f"size {width}x{height} is outside 320x240 .. {MAX_SIDE}x{MAX_SIDE}")
    return width, height


def _number_between(what: str, low: float, high: float) -> Callable[[str], float]:
    """An argparse type: a number from ``low`` to ``high``, or a message naming ``what`` was wrong."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a number, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{what} must be between {low:g} and {high:g}")
        return value

    return parse


parse_seconds = _number_between("seconds", 0, 3600)
parse_scale = _number_between("scale", 0.5, 4)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--demo", action="store_true", help="show the bundled demo recording")
    source.add_argument("--root", metavar="DIR", help="read this folder as the machine's root")
    source.add_argument("--open", metavar="BUNDLE", dest="open_bundle", help="open a support bundle")
    parser.add_argument("--backend", default="auto", help="auto, sysfs, rocm-smi, amd-smi, amdsmi or demo")
    parser.add_argument("--tab", default="overview", choices=TABS, help="which tab to save (default: overview)")
    parser.add_argument("--seconds", type=parse_seconds, default=3.0, metavar="N",
                        help="sample this long before saving (default: 3)")
    parser.add_argument("--size", type=parse_size, default=(1920, 1080), metavar="WxH",
                        help="window size in logical pixels (default: 1920x1080); the PNG is taller by the strip "
                             "listing the reasons of any N/A shown")
    parser.add_argument("--scale", type=parse_scale, default=None, metavar="F",
                        help="device pixel ratio, e.g. 2 for a HiDPI picture (the PNG is F times larger)")
    parser.add_argument("--theme", choices=("system", "light", "dark"), default="light",
                        help="colour theme (default: light)")
    parser.add_argument("--demo-recording", metavar="NAME", default=None,
                        help="demo recording to show (mi300x-node or rx7900xtx-comfyui)")
    parser.add_argument("--graph-metric", choices=GRAPH_METRICS, default=None,
                        help="the metric of the Graphs tab's one-plot-per-GPU view (default: temp)")
    parser.add_argument("-o", "--output", required=True, metavar="PNG", help="where to write the PNG")


def run(args: argparse.Namespace) -> int:
    out_dir = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(out_dir):
        print(f"rocmdesk screenshot: folder {out_dir} does not exist", file=sys.stderr)
        return 2
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    if args.scale is not None:
        os.environ["QT_SCALE_FACTOR"] = f"{args.scale:g}"
    try:
        from rocmdesk.ui.screenshot import render_screenshot
    except ImportError as exc:
        print(f"rocmdesk screenshot: the window cannot start ({exc})", file=sys.stderr)
        return 2
    try:
        result = render_screenshot(
            output=args.output, tab=args.tab, seconds=args.seconds, size=args.size, theme_name=args.theme,
            demo=args.demo or args.backend == "demo", root=args.root, open_bundle=args.open_bundle,
            backend=args.backend, recording=args.demo_recording, graph_metric=args.graph_metric,
        )
    except Exception as exc:  # a clear line, not a traceback, for a wrong --root or bundle
        log.debug("screenshot failed", exc_info=True)
        print(f"rocmdesk screenshot: {exc}", file=sys.stderr)
        return 1
    notes = len(result.na_notes)
    listed = f", {notes} N/A reason{'s' if notes != 1 else ''} listed under the picture" if notes else ""
    print(f"{result.path} ({result.width}x{result.height} px, tab {result.tab}, {result.mode} data{listed})")
    return 0
