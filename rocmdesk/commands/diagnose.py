"""``rocmdesk diagnose``: check the ROCm setup and explain what is wrong, with evidence and fixes.

Exit codes: 0 no error findings, 1 error findings, 2 the diagnosis could not run. ``--json``
prints :meth:`DiagnosisReport.to_json` (a public contract: keep its names).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from typing import TextIO

from rocmdesk.diagnosis.model import CheckResult, Finding, Severity, Status
from rocmdesk.report.finding_view import NEEDS_ADMIN, fix_heading
from rocmdesk.report.finding_view import fix_audience as audience

log = logging.getLogger(__name__)

EXIT_OK, EXIT_ERRORS, EXIT_CANNOT_RUN = 0, 1, 2

MARKS = {Status.PASS: "✔", Status.FAIL: "✘", Status.SKIP: "–", Status.ERROR: "!"}
ASCII_MARKS = {Status.PASS: "ok", Status.FAIL: "FAIL", Status.SKIP: "skip", Status.ERROR: "ERR"}
COLOURS = {"pass": "32", "fail": "31", "skip": "90", "error": "35", "error-sev": "31;1", "warning": "33",
           "info": "36", "bold": "1", "dim": "2"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", metavar="DIR", default=argparse.SUPPRESS,
                        help="read this folder as the machine's root instead of /")
    parser.add_argument("--python-env", metavar="PATH", action="append", default=[], dest="python_envs",
                        help="also check this Python environment (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--snapshot", metavar="FILE", help="diagnose a support bundle instead of this machine")


class Style:
    """ANSI colour when writing to a terminal and NO_COLOR is not set."""

    def __init__(self, stream: TextIO, enabled: bool | None = None) -> None:
        if enabled is None:
            enabled = bool(getattr(stream, "isatty", lambda: False)()) and "NO_COLOR" not in os.environ
        self.enabled = enabled
        encoding = (getattr(stream, "encoding", None) or "").lower()
        self.unicode = "utf" in encoding

    def __call__(self, text: str, colour: str) -> str:
        if not self.enabled:
            return text
        return f"\033[{COLOURS[colour]}m{text}\033[0m"

    def mark(self, status: Status) -> str:
        return (MARKS if self.unicode else ASCII_MARKS)[status]


def render_text(report, style: Style) -> str:
    """The human report: host, checks by area with marks, then each finding in full."""
    host = report.host
    lines = [style("rocmdesk diagnosis", "bold")]
    lines.append(f"  kernel {host.get('kernel') or 'unknown'} · {host.get('distro') or 'unknown distribution'}"
                 f" · ROCm {host.get('rocm') or 'not found'}")
    container = host.get("container")
    if isinstance(container, dict) and container.get("header"):
        lines.append(f"  {container['header']}")
    gpus = host.get("gpus") or []
    for gpu in gpus:
        name = gpu.get("name") or "AMD GPU"
        extra = ", ".join(str(x) for x in (gpu.get("gfx_target"), gpu.get("driver") or "no driver") if x)
        lines.append(f"  GPU {gpu.get('pci', '?')}: {name} ({extra})")
    if not gpus:
        lines.append("  no AMD GPU found")
    for area, results in report.by_area():
        lines.append("")
        lines.append(style(area, "bold"))
        for result in results:
            mark = style(style.mark(result.status), result.status.value)
            reason = f" — {result.reason}" if result.reason else ""
            text = f"  {mark} {result.id}"
            lines.append(text + (style(reason, "dim") if result.status is not Status.FAIL else reason))
    findings = sorted(report.findings, key=lambda f: f.severity.rank)
    if findings:
        lines.append("")
        lines.append(style(f"Findings ({len(findings)})", "bold"))
        for finding in findings:
            lines.extend(render_finding(finding, style))
    counts = report.counts()
    lines.append("")
    sev = {s: sum(1 for f in report.findings if f.severity is s) for s in Severity}
    lines.append(f"{len(report.results)} checks: {counts['pass']} passed, {counts['fail']} failed, "
                 f"{counts['skip']} skipped, {counts['error']} errors · findings: {sev[Severity.ERROR]} error, "
                 f"{sev[Severity.WARNING]} warning, {sev[Severity.INFO]} info")
    return "\n".join(lines) + "\n"


def render_finding(finding: Finding, style: Style) -> list[str]:
    colour = "error-sev" if finding.severity is Severity.ERROR else finding.severity.value
    subject = f" ({finding.subject})" if finding.subject else ""
    lines = ["", style(f"[{finding.severity.value.upper()}] {finding.title}{subject}", colour) + f"  [{finding.id}]"]
    for paragraph in finding.explanation.split("\n\n"):
        lines.extend(_wrap(paragraph.strip(), "    "))
    if finding.evidence:
        lines.append("    Evidence:")
        lines.extend(f"      {e}" for e in finding.evidence)
    if finding.fix and finding.fix.steps:
        lines.append(f"    {fix_heading(finding.fix.privileged, finding.fix.steps)}:")
        lines.extend(f"      {n}. {step}" for n, step in enumerate(finding.fix.steps, start=1))
    return lines


def fix_audience(finding: Finding) -> str:
    """Who runs the finding's fix, in the reports' words (rocmdesk.report.finding_view.fix_audience)."""
    fix = finding.fix
    if fix is None:
        return NEEDS_ADMIN
    return audience(fix.privileged, fix.steps)


def _wrap(text: str, indent: str, width: int = 100) -> list[str]:
    import textwrap

    return textwrap.wrap(" ".join(text.split()), width=width, initial_indent=indent, subsequent_indent=indent) or []


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    from rocmdesk.diagnosis.runner import diagnose

    root = getattr(args, "root", None) or "/"
    snapshot = getattr(args, "snapshot", None)
    python_envs = list(getattr(args, "python_envs", None) or [])
    opened = None
    target = None
    if snapshot:
        if getattr(args, "root", None):
            print("rocmdesk diagnose: use either --root or --snapshot, not both", file=err)
            return EXIT_CANNOT_RUN
        from rocmdesk.report.bundle import BundleError, open_bundle  # only for --snapshot: keeps diagnose's start light
        try:
            opened = open_bundle(snapshot)
        except BundleError as exc:
            print(f"rocmdesk diagnose: cannot open the snapshot: {exc}", file=err)
            return EXIT_CANNOT_RUN
        root = opened.root
        from rocmdesk.diagnosis.target import target_for_bundle

        target = target_for_bundle(opened)
        python_envs = python_envs or list(getattr(opened, "python_envs", []) or [])
    elif not os.path.isdir(root):
        print(f"rocmdesk diagnose: {root} is not a folder", file=err)
        return EXIT_CANNOT_RUN
    try:
        report = diagnose(root, python_envs=python_envs, target=target)
    except Exception as exc:  # the engine catches check errors; this is a broken run
        log.exception("diagnosis failed")
        print(f"rocmdesk diagnose: the diagnosis could not run: {type(exc).__name__}: {exc}", file=err)
        return EXIT_CANNOT_RUN
    finally:
        if opened is not None:
            opened.close()
    if getattr(args, "json", False):
        json.dump(report.to_json(), out, indent=2)
        out.write("\n")
    else:
        out.write(render_text(report, Style(out)))
    return report.exit_code


def result_line(result: CheckResult) -> str:
    """One check as plain text (the Diagnosis tab's copy-as-text uses the same words)."""
    reason = f" — {result.reason}" if result.reason else ""
    return f"{ASCII_MARKS[result.status]:>4}  {result.title} [{result.id}]{reason}"
