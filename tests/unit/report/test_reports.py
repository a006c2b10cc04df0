"""HTML and Markdown reports, charts and the CLI commands."""

from __future__ import annotations

import base64
import re

import numpy as np
import pytest

from rocmdesk.cli import main
from rocmdesk.host import HostRoot
from rocmdesk.report.charts import Series, decode_png_rgb, history_charts, line_chart, nice_ticks
from rocmdesk.report.data import ReportData, build_report
from rocmdesk.report.html import render_html
from rocmdesk.report.markdown import GITHUB_ISSUE_LIMIT, copy_as_markdown, render_markdown
from rocmdesk.telemetry.recording import load_recording
from tests.unit.report.workstation import make_workstation


@pytest.fixture(scope="module")
def demo():
    return load_recording("rx7900xtx-comfyui")


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return make_workstation(tmp_path_factory.mktemp("ws") / "root", comfy_torch="cuda")


def _finding(i: int, evidence: int = 1) -> dict:
    return {"id": f"check-{i}", "severity": "warning", "title": f"Problem <{i}> | pipe",
            "explanation": "Something *odd*\n\nSecond paragraph.",
            "evidence": [{"path": "/etc/x.conf", "line": n + 1, "text": f"line `{n}` <b>"} for n in range(evidence)],
            "fix": {"id": "f", "privileged": True, "steps": ["Do <this>.", "Then that."]}}


def test_chart_png_has_data_axes_and_legend():
    t = np.arange(600, dtype=float)
    series = [Series("card0 A", t, 50 + 10 * np.sin(t / 50)), Series("card1 B", t, np.where(t > 300, np.nan, 70.0))]
    png = line_chart(series, "Temperature", "°C", 800, 260)
    pixels = decode_png_rgb(png)
    assert pixels.shape == (260, 800, 3)
    red = np.all(pixels == (214, 39, 40), axis=2)
    blue = np.all(pixels == (31, 119, 180), axis=2)
    assert red[:200].sum() > 500 and blue[:200].sum() > 200  # both lines drawn in the plot area
    # the second GPU's line stops where its data does (gap, not a fake value)
    plot_cols_blue = np.nonzero(blue[:200].any(axis=0))[0]
    assert plot_cols_blue.max() < 800 * 0.6
    dark = np.all(pixels < 100, axis=2)
    assert dark[:, :80].sum() > 100  # tick labels on the y axis


def test_chart_without_data_says_so():
    png = line_chart([Series("card0", np.array([0.0, 1.0]), np.array([np.nan, np.nan]))], "Power", "W")
    assert decode_png_rgb(png).std() > 1  # text, not a blank image


def test_nice_ticks():
    assert nice_ticks(0, 100) == [0, 25, 50, 75, 100]
    assert nice_ticks(41.5, 86.2)[0] <= 41.5 and nice_ticks(41.5, 86.2)[-1] >= 86.2
    assert nice_ticks(5, 5)[-1] > 5


def test_history_charts_of_a_recording(demo):
    charts = history_charts(demo)
    assert [t.split(" (")[0] for t, _ in charts] == ["Temperature", "Power", "GPU busy", "VRAM used"]
    for _title, png in charts:
        assert decode_png_rgb(png).std() > 5


def test_report_of_a_root_finds_the_cuda_wheel(root, demo):
    report = build_report(HostRoot(root), history=demo)
    system = dict(report.system)
    assert system["Distribution"] == "Ubuntu 24.04.1 LTS" and system["Kernel"] == "6.8.0-45-generic"
    assert system["ROCm"] == "6.2.4-120" and report.gpus and report.gpus[0]["gfx_target"] == "gfx1100"
    ids = {f["id"] for f in report.findings}
    assert "torch-wheel-mismatch" in ids
    html = render_html(report)
    assert "torch-wheel-mismatch" in html and html.count('src="data:image/png;base64,') == 4
    md = render_markdown(report)
    assert "torch-wheel-mismatch" in md and "| Distribution | Ubuntu 24.04.1 LTS |" in md


def test_html_is_self_contained_and_escaped(demo):
    report = ReportData(0.0, "test <script>", [("Kernel", "6.8 <b>")], [], [], [_finding(1)], history=demo)
    html = render_html(report)
    assert "<script>" not in html and "&lt;script&gt;" in html and "Problem &lt;1&gt;" in html
    for url in re.findall(r'(?:src|href)="([^"]+)"', html):
        assert url.startswith("data:image/png;base64,")
        base64.b64decode(url.split(",", 1)[1], validate=True)
    assert "http://" not in html and "https://" not in html


def test_markdown_is_valid_and_folds_long_parts():
    markdown_it = pytest.importorskip("markdown_it")
    report = ReportData(0.0, "test", [("Kernel", "6.8 | x")], [], [{"id": "a", "area": "Driver", "status": "pass",
                                                                     "reason": "ok"}], [_finding(1, 8), _finding(2)])
    md = render_markdown(report)
    tokens = markdown_it.MarkdownIt("commonmark").enable("table").parse(md)
    tables = [t for t in tokens if t.type == "table_open"]
    assert len(tables) >= 2  # system and checks tables parse as tables despite the pipe in a value
    assert md.count("<details>") == md.count("</details>") == 2  # evidence (8 items) and the check list
    rendered = markdown_it.MarkdownIt("commonmark").enable("table").render(md)
    assert "<b>" not in rendered.replace("<b>Evidence", "")  # machine text never becomes HTML


def test_markdown_fits_a_github_issue():
    report = ReportData(0.0, "test", [], [], [], [_finding(i, 40) for i in range(200)])
    md = copy_as_markdown(report)
    assert len(md) <= GITHUB_ISSUE_LIMIT and "shortened" in md
    assert md.count("<details>") == md.count("</details>")


def test_cli_report_html_and_markdown(root, tmp_path, capsys):
    html_path = tmp_path / "r.html"
    assert main(["report", "--root", str(root), "-o", str(html_path),
                 "--history", "rx7900xtx-comfyui"]) == 0
    assert html_path.read_text().startswith("<!DOCTYPE html>")
    assert "Telemetry and processes: the recording rx7900xtx-comfyui" in html_path.read_text()
    md_path = tmp_path / "r.md"
    assert main(["report", "--root", str(root), "-o", str(md_path)]) == 0
    assert md_path.read_text().startswith("## rocmdesk report")
    assert main(["report", "--root", str(tmp_path / "nope"), "-o", str(md_path)]) == 2
    assert main(["report", "--snapshot", str(tmp_path / "nope.tar.gz"), "-o", str(md_path)]) == 2
    assert "cannot open the snapshot" in capsys.readouterr().err


def test_cli_capture_dry_run_writes_nothing(root, tmp_path, capsys):
    assert main(["capture", "--root", str(root), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "before compression" in out and "/proc/cmdline" in out and "zorana" not in out
    assert list(tmp_path.iterdir()) == []
    assert main(["capture", "--root", str(root)]) == 2


def test_cli_capture_then_diagnose_snapshot(root, tmp_path, capsys):
    bundle = tmp_path / "b.tar.gz"
    assert main(["capture", "--root", str(root), "-o", str(bundle), "--history", "rx7900xtx-comfyui",
                 "--minutes", "5"]) == 0
    capsys.readouterr()
    code_src = main(["diagnose", "--root", str(root), "--json"])
    src = capsys.readouterr().out
    code_dst = main(["diagnose", "--snapshot", str(bundle), "--json"])
    dst = capsys.readouterr().out
    import json

    a, b = json.loads(src), json.loads(dst)
    assert code_src == code_dst
    assert [(c["id"], c["status"]) for c in a["checks"]] == [(c["id"], c["status"]) for c in b["checks"]]
    assert [f["id"] for f in a["findings"]] == [f["id"] for f in b["findings"]]


def test_every_format_says_where_telemetry_and_diagnosis_come_from(demo):
    common = dict(created=0.0, system=[], gpus=[], checks=[], findings=[], history=demo)
    mixed = ReportData(source="this machine", telemetry_source="demo recording: X (not this machine)", **common)
    assert mixed.provenance() == ("System and diagnosis: this machine. "
                                  "Telemetry and processes: demo recording: X (not this machine).")
    for text in (render_markdown(mixed), render_html(mixed)):
        assert "System and diagnosis: this machine" in text and "Telemetry from demo recording: X" in text
    same = ReportData(source="this machine", telemetry_source="this machine", **common)
    plain = ReportData(source="this machine", **common)
    for report in (same, plain):
        assert report.provenance() == "Source: this machine." and report.telemetry_note() is None
        assert "Telemetry from" not in render_markdown(report) and "Telemetry from" not in render_html(report)


def test_reports_show_compute_use_of_rocm_processes():
    """A KFD-only process (a ROCm job): graphics N/A, its CU occupancy under Compute, in both formats."""
    from rocmdesk.report.data import process_use_texts

    rocm_job = {"pid": 4321, "name": "python3", "pci": "0000:03:00.0", "vram_bytes": 8 << 30, "gpu_percent": None,
                "cu_occupancy_percent": 37.4, "cu_occupied": 36, "sources": ["kfd"]}
    desktop = {"pid": 900, "name": "Xorg", "pci": "0000:03:00.0", "vram_bytes": 300 << 20, "gpu_percent": 12.0}
    counted = {"pid": 77, "name": "hipcc-run", "pci": "0000:03:00.0", "cu_occupied": 12}
    assert process_use_texts(rocm_job) == ["N/A", "37 %"]
    assert process_use_texts(desktop) == ["12 %", "N/A"]
    assert process_use_texts(counted) == ["N/A", "12 CU"]
    report = ReportData(0.0, "test", [], [], [], [], processes=[rocm_job, desktop])
    md = render_markdown(report)
    assert "| Graphics % | Compute |" in md.replace("\\", "")
    row = next(line for line in md.splitlines() if "4321" in line)
    assert "N/A" in row and "37 %" in row
    html = render_html(report)
    assert "<th>Compute</th>" in html and "37 %" in html
