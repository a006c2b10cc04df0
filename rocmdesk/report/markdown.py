"""The report as GitHub-flavoured Markdown, sized for an issue (long parts folded in <details>).

GitHub strips ``data:`` images, so the telemetry appears as a min/mean/max table; the HTML
report carries the graphs.
"""

from __future__ import annotations

import time

from rocmdesk.report.data import (
    PROCESS_USE_HEADERS,
    ReportData,
    history_stats,
    process_use_texts,
    window_text,
)
from rocmdesk.report.finding_view import EvidenceItem, finding_view
from rocmdesk.wording import NA, fmt_bytes

GITHUB_ISSUE_LIMIT = 65_000  # GitHub refuses issue bodies over 65 536 characters
SEVERITY_MARK = {"error": "🔴 error", "warning": "🟠 warning", "info": "🔵 info"}
MAX_EVIDENCE_INLINE = 3


def cell(value: object) -> str:
    """A table cell: one line, pipes and HTML-special characters escaped."""
    text = str(value if value is not None else NA).replace("\r", " ").replace("\n", " ")
    return escape_inline(text).replace("|", "\\|")


def escape_inline(text: str) -> str:
    """Text that Markdown must not read as HTML or emphasis."""
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("*", "\\*").replace("_", "\\_").replace("`", "\\`").replace("[", "\\[")
            .replace("]", "\\]"))


def code_span(text: str) -> str:
    text = str(text).replace("\n", " ")
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _table(header: list[str], rows: list[list[object]]) -> list[str]:
    out = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    out.extend("| " + " | ".join(cell(v) for v in row) + " |" for row in rows)
    return out


def _details(summary: str, body: list[str]) -> list[str]:
    return [f"<details><summary>{escape_inline(summary)}</summary>", "", *body, "", "</details>"]


def render_markdown(report: ReportData, limit: int | None = GITHUB_ISSUE_LIMIT) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(report.created))
    lines = ["## rocmdesk report", "",
             f"{escape_inline(report.headline())} {escape_inline(report.provenance())} "
             f"Generated {when} by rocmdesk {escape_inline(report.version)}.", ""]
    lines += ["### System", ""]
    lines += _table(["Item", "Value"], [[k, v] for k, v in report.system])
    lines.append("")
    if report.gpus:
        lines += ["### GPUs", ""]
        lines += _table(["Card", "PCI", "Name", "gfx", "VRAM", "Driver", "KFD node"],
                        [[g.get("card"), g.get("pci"), g.get("name"), g.get("gfx_target"),
                          fmt_bytes(g.get("vram_total_bytes")), g.get("driver") or "none", g.get("kfd_node")]
                         for g in report.gpus])
        lines.append("")
    lines += [f"### Findings ({len(report.findings)})", ""]
    if not report.findings:
        lines += ["No check found a problem.", ""]
    for f in report.findings:
        mark = SEVERITY_MARK.get(f.get("severity", ""), f.get("severity", ""))
        subject = f" — {escape_inline(str(f['subject']))}" if f.get("subject") else ""
        lines += [f"#### {mark}: {escape_inline(f.get('title', ''))}{subject} ({code_span(f.get('id', ''))})", ""]
        explanation = (f.get("explanation") or "").strip()
        if explanation:
            lines += [escape_inline(p) for p in explanation.split("\n")] + [""]
        view = finding_view(f)
        evidence = [_evidence(e) for e in view.evidence]
        if evidence:
            if len(evidence) <= MAX_EVIDENCE_INLINE:
                lines += ["Evidence:", "", *evidence, ""]
            else:
                lines += [*_details(f"Evidence ({len(evidence)} items)", evidence), ""]
        if view.fix_steps:
            lines += [f"{view.fix_heading}:", ""]
            lines += [f"{i}. {escape_inline(s)}" for i, s in enumerate(view.fix_steps, 1)] + [""]
    if report.checks:
        rows = [[c.get("id"), c.get("area"), c.get("status"), c.get("reason")] for c in report.checks]
        lines += _details(f"All {len(report.checks)} checks", _table(["Check", "Area", "Status", "Reason"], rows))
        lines.append("")
    stats = history_stats(report.history)
    lines += ["### Telemetry", "", f"{escape_inline(window_text(report.history))}.", ""]
    if report.telemetry_note():
        lines[-1:-1] = [f"**{escape_inline(report.telemetry_note() or '')}**", ""]
    if stats:
        lines += _details("Min / mean / max per GPU", _table(["GPU", "Metric", "Min", "Mean", "Max"],
                                                             [list(r) for r in stats]))
        lines.append("")
    if report.processes:
        rows = [[p.get("pid"), p.get("name"), p.get("pci"), fmt_bytes(p.get("vram_bytes")), *process_use_texts(p)]
                for p in report.processes]
        lines += ["### Processes", "", *_table(["PID", "Name", "GPU", "VRAM", *PROCESS_USE_HEADERS], rows), ""]
    if report.notes:
        lines += ["### Notes", ""] + [f"- {escape_inline(n)}" for n in report.notes] + [""]
    text = "\n".join(lines).rstrip() + "\n"
    if limit is not None and len(text) > limit:
        text = _shrink(text, limit)
    return text


def _evidence(e: EvidenceItem) -> str:
    text = str(e.text or "")
    return f"- {code_span(e.where)}: {code_span(text)}" if e.where else f"- {code_span(text)}"


def _shrink(text: str, limit: int) -> str:
    """Cut at a line boundary outside any open <details>, and say so."""
    note = "\n\n_(report shortened to fit a GitHub issue; attach the HTML report or the bundle for all of it)_\n"
    cut = text[: limit - len(note)]
    cut = cut[: cut.rfind("\n")]
    if cut.count("<details>") > cut.count("</details>"):
        cut += "\n\n</details>"
    return cut + note


def copy_as_markdown(report: ReportData) -> str:
    """The text the Report tab's "Copy as Markdown" button puts on the clipboard."""
    return render_markdown(report, GITHUB_ISSUE_LIMIT)
