"""A finding's fix as a shell script its machine's owner reads and runs (the steps dialog's "Save as script…").

Commands come only from argv lists (:class:`~rocmdesk.fixes.finding_plan.PlannedCommand`), each word
``shlex``-quoted, so nothing read from a root folder or a bundle (file names, user names) can become
shell syntax. Everything else, the steps in words included, is a comment: control characters and line
breaks are replaced first, so a hostile step cannot end its comment line. ``set -eu`` stops at the first
failing command.
"""

from __future__ import annotations

import time

from rocmdesk import __version__
from rocmdesk.fixes.finding_plan import FindingPlan

_CONTROL = {c: " " for c in range(32)} | {0x7F: " ", 0x85: " ", 0x2028: " ", 0x2029: " "}


def comment(text: str) -> str:
    """One ``# ...`` line whatever ``text`` holds."""
    return "# " + str(text).translate(_CONTROL).rstrip()


def render_script(plan: FindingPlan, now: float | None = None) -> str:
    """The whole script (POSIX sh), ending with a newline."""
    as_root = any(c.as_root for c in plan.commands)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(time.time() if now is None else now))
    title = plan.finding.title + (f" ({plan.finding.subject})" if plan.finding.subject else "")
    lines = ["#!/bin/sh", comment(f"rocmdesk {__version__} fix script, written {when}"),
             comment(f"Finding: {title} [{plan.finding.id}]"),
             comment(f"For: {plan.target.describe()}"),
             comment("Read every line before running it. It stops at the first command that fails (set -eu)."),
             "#"]
    if plan.steps:
        lines.append(comment("Steps:"))
        lines += [comment(f"  {n}. {step}") for n, step in enumerate(plan.steps, start=1)]
        lines.append("#")
    lines += [comment(line) for line in plan.notes.lines()]
    for problem in plan.problems:
        lines.append(comment(f"Note: {problem}"))
    if plan.undo_commands:
        lines.append(comment("To undo (these work from a text console, Ctrl+Alt+F3, too):"))
        lines += [comment(f"    {c.shell()}") for c in plan.undo_commands]
    lines += ["", "set -eu", ""]
    if not plan.commands:
        lines += [comment("rocmdesk has no commands for this fix: follow the steps above by hand."), "exit 0", ""]
        return "\n".join(lines)
    if as_root:
        lines += ['if [ "$(id -u)" -ne 0 ]; then',
                  '    echo "run this as root: sudo sh $0" >&2',
                  "    exit 1",
                  "fi", ""]
    else:
        lines += ['if [ "$(id -u)" -eq 0 ]; then',
                  '    echo "run this as the user who owns the environment, not as root" >&2',
                  "    exit 1",
                  "fi", ""]
    for command in plan.commands:
        lines.append(comment(command.purpose))
        lines.append(command.shell())
    lines += ["", 'echo "Done. ' + _effect(plan) + '"', ""]
    return "\n".join(lines)


def _effect(plan: FindingPlan) -> str:
    text = "Takes effect " + plan.notes.takes_effect
    return text.translate(_CONTROL).replace("\\", "").replace('"', "'").replace("$", "").replace("`", "'")
