"""HTML and Markdown reports, charts and the CLI commands."""

from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET

import pytest

from rocmdesk.cli import main
from rocmdesk.host import HostRoot
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


def test_report_of_a_root_finds_the_cuda_wheel(root, demo):
    report = build_report(HostRoot(root), history=demo)
    system = dict(report.system)
    assert system["Distribution"] == "Ubuntu 24.04.1 LTS" and system["Kernel"] == "6.8.0-45-generic"
    assert system["ROCm"] == "6.2.4-120" and report.gpus and report.gpus[0]["gfx_target"] == "gfx1100"
    ids = {f["id"] for f in report.findings}
    assert "torch-wheel-mismatch" in ids
    html = render_html(report)
    assert "torch-wheel-mismatch" in html and html.count('<svg class="chart"') == 4
    md = render_markdown(report)
    assert "torch-wheel-mismatch" in md and "| Distribution | Ubuntu 24.04.1 LTS |" in md


def test_html_is_self_contained_and_escaped(demo):
    report = ReportData(0.0, "test <script>", [("Kernel", "6.8 <b>")], [], [], [_finding(1)], history=demo)
    html = render_html(report)
    assert "<script>" not in html and "&lt;script&gt;" in html and "Problem &lt;1&gt;" in html
    assert re.findall(r'(?:src|href)\s*=', html) == []  # nothing to load: the graphs are inline SVG
    assert "http://" not in html and "https://" not in html and "<img" not in html
    charts = re.findall(r"<svg .*?</svg>", html, flags=re.S)
    assert len(charts) == 4
    for chart in charts:  # each is well-formed XML with its text escaped, and the GPU's label in its legend
        root = ET.fromstring(chart)
        assert [g.get("class") for g in root.findall("g")][-1] == "legend"
        assert len(root.findall("g[@class='series']")) == len(demo.gpus)


def test_hostile_gpu_names_are_escaped_in_the_report_graphs(demo):
    hostile = dataclasses.replace(demo.gpus[0], name='<script>alert(1)</script> "XT"')
    recording = dataclasses.replace(demo, gpus=[hostile, *demo.gpus[1:]])
    html = render_html(ReportData(0.0, "test", [], [], [], [], history=recording))
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    for chart in re.findall(r"<svg .*?</svg>", html, flags=re.S):
        labels = [g.get("data-label") for g in ET.fromstring(chart).findall("g[@class='series']")]
        assert labels[0] == f'{hostile.card} · <script>alert(1)</script> "XT"'


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


@pytest.mark.parametrize("command", ["report", "capture"])
@pytest.mark.parametrize("content", [b"", b"\x00\xff garbage", b'{"version": 1, "gpus": "nope"}\n'])
def test_an_unusable_history_file_is_one_line_and_exit_2(tmp_path, capsys, command, content):
    from tests.support.scenarios import clean_workstation

    root = clean_workstation(tmp_path / "root")
    history = tmp_path / "history.jsonl"
    history.write_bytes(content)
    argv = [command, "--root", str(root), "--history", str(history)]
    out = tmp_path / ("out.tar.zst" if command == "capture" else "out.html")
    assert main([*argv, "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"rocmdesk {command}: "), err
    assert not out.exists()
