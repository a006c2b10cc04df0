"""The report as one self-contained HTML file: inline CSS, graphs as inline SVG, no script.

It must open anywhere (a support mailbox, an air-gapped lab), so it loads nothing from outside:
no fonts, no scripts, no images at all. Every value from the machine is escaped (the SVG text too).
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable

from rocmdesk.report.data import PROCESS_USE_HEADERS, ReportData, process_use_texts, window_text
from rocmdesk.report.finding_view import FindingView, finding_view
from rocmdesk.report.svg_charts import chart_svg, history_charts
from rocmdesk.wording import NA, fmt_bytes

CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1000px;color:#1b1b1b}
h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;margin:6px 0 12px;width:100%}th,td{text-align:left;padding:4px 8px;
border-bottom:1px solid #e6e6e6;vertical-align:top}th{background:#f5f5f5}
.meta{color:#555}.finding{border-left:5px solid #999;padding:6px 12px;margin:12px 0;background:#fafafa}
.error{border-color:#d62728}.warning{border-color:#ff7f0e}.info{border-color:#1f77b4}
.sev{font-weight:600;text-transform:uppercase;font-size:12px;letter-spacing:.05em}
code{background:#f0f0f0;padding:1px 4px;border-radius:3px;font-size:13px}
svg.chart{display:block;max-width:100%;height:auto;margin:8px 0 16px;border:1px solid #eee}
.note{background:#fff6d6;border:1px solid #e8d48a;padding:6px 10px;border-radius:4px}
.pass{color:#2c7a2c}.fail{color:#d62728}.skip{color:#777}.errorstatus{color:#d62728}
"""


def _e(value: object) -> str:
    return html.escape(str(value if value is not None else NA), quote=True)


def _table(header: list[str], rows: list[list[object]], classes: list[str] | None = None) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = []
    for i, row in enumerate(rows):
        cls = f' class="{_e(classes[i])}"' if classes else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{_e(v)}</td>" for v in row) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def finding_body(view: FindingView, code: Callable[[str], str], where: Callable[[str], str]) -> list[str]:
    """A finding's paragraphs, evidence and fix steps as HTML. ``code`` and ``where`` mark up text that is
    already escaped: this file and the Report tab's Qt rich text style them differently."""
    parts = [f"<p>{_e(paragraph)}</p>" for paragraph in view.paragraphs]
    if view.evidence:
        items = "".join(f"<li>{where(_e(ev.where)) if ev.where else ''}{code(_e(ev.text))}</li>"
                        for ev in view.evidence)
        parts.append(f"<p><b>Evidence</b></p><ul>{items}</ul>")
    if view.fix_steps:
        steps = "".join(f"<li>{_e(s)}</li>" for s in view.fix_steps)
        parts.append(f"<p><b>{_e(view.fix_heading)}</b></p><ol>{steps}</ol>")
    return parts


def render_html(report: ReportData, chart_width: int = 960) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(report.created))
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        f"<title>rocmdesk report: {_e(report.headline())}</title><style>{CSS}</style></head><body>",
        "<h1>rocmdesk report</h1>",
        f'<p class="meta">{_e(report.headline())} {_e(report.provenance())} Generated {_e(when)} by '
        f"rocmdesk {_e(report.version)}.</p>",
        "<h2>System</h2>", _table(["Item", "Value"], [[k, v] for k, v in report.system]),
    ]
    if report.gpus:
        parts += ["<h2>GPUs</h2>", _table(
            ["Card", "PCI", "Name", "gfx", "VRAM", "Driver", "KFD node"],
            [[g.get("card"), g.get("pci"), g.get("name"), g.get("gfx_target"), fmt_bytes(g.get("vram_total_bytes")),
              g.get("driver") or "none", g.get("kfd_node")] for g in report.gpus])]
    parts.append(f"<h2>Findings ({len(report.findings)})</h2>")
    if not report.findings:
        parts.append("<p>No check found a problem.</p>")
    for f in report.findings:
        sev = f.get("severity", "info")
        subject = f" — {_e(f['subject'])}" if f.get("subject") else ""
        parts.append(f'<div class="finding {_e(sev)}"><div class="sev">{_e(sev)}</div>'
                     f"<h3>{_e(f.get('title'))}{subject} <code>{_e(f.get('id'))}</code></h3>")
        parts += finding_body(finding_view(f), code=lambda text: f"<code>{text}</code>",
                              where=lambda text: f"<code>{text}</code>: ")
        parts.append("</div>")
    if report.checks:
        status_class = {"pass": "pass", "fail": "fail", "skip": "skip", "error": "errorstatus"}
        parts += [f"<details><summary>All {len(report.checks)} checks</summary>",
                  _table(["Check", "Area", "Status", "Reason"],
                         [[c.get("id"), c.get("area"), c.get("status"), c.get("reason")] for c in report.checks],
                         [status_class.get(str(c.get("status")), "") for c in report.checks]), "</details>"]
    parts += ["<h2>Telemetry</h2>", f"<p>{_e(window_text(report.history))}.</p>"]
    if report.telemetry_note():
        parts.append(f'<p class="note"><b>{_e(report.telemetry_note())}</b></p>')
    if report.history is not None and report.history.frames:
        parts += [chart_svg(chart, chart_width, 300, xmlns=False) for chart in history_charts(report.history)]
    if report.processes:
        parts += ["<h2>Processes</h2>", _table(
            ["PID", "Name", "GPU", "VRAM", *PROCESS_USE_HEADERS, "Command line"],
            [[p.get("pid"), p.get("name"), p.get("pci"), fmt_bytes(p.get("vram_bytes")), *process_use_texts(p),
              (p.get("cmdline") or "")[:200]] for p in report.processes])]
    if report.notes:
        parts += ["<h2>Notes</h2>", "<ul>" + "".join(f"<li>{_e(n)}</li>" for n in report.notes) + "</ul>"]
    parts.append("</body></html>\n")
    return "\n".join(parts)
