"""``rocmdesk``: the GUI with no subcommand, headless work with one.

Each subcommand lives in ``rocmdesk/commands/<name>.py`` with ``add_arguments(parser)`` and
``run(args) -> int``. Only the module of the command being run is imported (its arguments are added
to the parser then; the others are listed by name and help line), so ``rocmdesk sample`` never loads
Qt and a one-shot command does not pay for the imports of the other six.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence

from rocmdesk import __version__

# name -> (module, one-line help). Order is the order of ``rocmdesk --help``.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "sample": ("rocmdesk.commands.sample", "print GPU readings (table or JSON)"),
    "diagnose": ("rocmdesk.commands.diagnose", "check the ROCm setup and explain what is wrong"),
    "screenshot": ("rocmdesk.ui.screenshot_command", "save a PNG of a window tab, rendered offscreen"),
    "capture": ("rocmdesk.commands.capture", "save a redacted support bundle"),
    "fix": ("rocmdesk.commands.fix", "show (or apply, on this machine only) the fix of one finding"),
    "report": ("rocmdesk.commands.report", "write an HTML or Markdown report"),
    "exporter": ("rocmdesk.commands.exporter", "serve GPU readings and findings to Prometheus"),
}


# top-level options that take a value: the token after them is not a command name
_VALUE_OPTIONS = ("--root", "--open", "--backend")


def command_in(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv``, found without parsing (so only its module is imported)."""
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token == "--":
            return None
        elif token.startswith("-"):
            skip = token in _VALUE_OPTIONS
        else:
            return token if token in SUBCOMMANDS else None
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The full parser (every command's arguments) without ``argv``; with it, only its command's."""
    wanted = None if argv is None else command_in(argv)
    parser = argparse.ArgumentParser(
        prog="rocmdesk",
        description="Live AMD GPU telemetry and a diagnosis of the ROCm setup. "
        "With no command, opens the window.",
    )
    parser.add_argument("--version", action="version", version=f"rocmdesk {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output")
    add_gui_arguments(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in SUBCOMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        sub_parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output")
        if argv is None or name == wanted:
            importlib.import_module(module).add_arguments(sub_parser)
    return parser


def add_gui_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("window")
    group.add_argument("--root", metavar="DIR", help="read this folder as the machine's root instead of /")
    group.add_argument("--demo", action="store_true", help="show the bundled demo recordings")
    group.add_argument("--open", metavar="BUNDLE", dest="open_bundle", help="open a support bundle")
    group.add_argument("--backend", default="auto", help="auto, sysfs, rocm-smi, amd-smi, amdsmi or demo")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv).parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose, 2),
        format="%(levelname)s %(name)s: %(message)s",
    )
    if args.command is None:
        from rocmdesk.ui.display_check import no_display_message

        if (message := no_display_message(os.environ)) is not None:  # not Qt's xcb abort (issue 10, item 11)
            print(message, file=sys.stderr)
            return 2
        try:
            from rocmdesk.ui.app import run_gui
        except ImportError as exc:
            print(f"rocmdesk: the window cannot start ({exc}). "
                  "Headless commands still work: rocmdesk --help", file=sys.stderr)
            return 2
        return run_gui(args)
    module = importlib.import_module(SUBCOMMANDS[args.command][0])
    try:
        return int(module.run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
