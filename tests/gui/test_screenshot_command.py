"""``rocmdesk screenshot`` renders the real window offscreen into a PNG of the asked size."""

from __future__ import annotations

import argparse
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from rocmdesk.ui.screenshot_command import parse_scale, parse_seconds, parse_size

REPO = Path(__file__).resolve().parents[2]


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def _run(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run([sys.executable, "-m", "rocmdesk", "screenshot", *args], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=120)


def test_demo_screenshot_has_requested_size(tmp_path):
    out = tmp_path / "graphs.png"
    proc = _run("--demo", "--tab", "graphs", "--seconds", "0.5", "--size", "900x640", "-o", str(out),
                tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert png_size(out) == (900, 640)
    assert out.stat().st_size > 20_000  # a real picture, not an empty frame
    assert "graphs" in proc.stdout and "demo" in proc.stdout


def test_root_screenshot_of_a_lact_tree(tmp_path):
    from tests.support.sysfs_tree import GpuSpec, build_root

    root = build_root(tmp_path / "root", [GpuSpec("rx7900xtx")])
    out = tmp_path / "overview.png"
    proc = _run("--root", str(root), "--tab", "overview", "--seconds", "0", "--size", "800x600", "-o", str(out),
                tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    width, height = png_size(out)
    # LACT's dump lacks some readings: their reasons are listed in a strip under the 800x600 window
    assert width == 800 and height > 600 and "N/A reason" in proc.stdout, proc.stdout


def test_missing_output_folder_is_a_clear_error(tmp_path):
    proc = _run("--demo", "-o", str(tmp_path / "nope" / "x.png"), tmp_path=tmp_path)
    assert proc.returncode == 2 and "does not exist" in proc.stderr


@pytest.mark.parametrize("text", ["", "1920", "axb", "10x10", "99999x2", "1920x1080x3"])
def test_bad_sizes_are_refused(text):
    with pytest.raises(argparse.ArgumentTypeError):
        parse_size(text)


def test_sizes_and_numbers_parse():
    assert parse_size("1280x800") == (1280, 800)
    assert parse_size(" 1920 X 1080 ") == (1920, 1080)
    assert parse_seconds("2.5") == 2.5
    assert parse_scale("2") == 2.0
    for bad in ("-1", "x", "99999"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_seconds(bad)
    for bad in ("0", "9", "two"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_scale(bad)


def test_scale_2_renders_at_twice_the_pixels(tmp_path):
    """At device pixel ratio 2 everything is drawn at full resolution: the PNG has 4x the pixels."""
    sizes = []
    for scale in ("1", "2"):
        out = tmp_path / f"processes-{scale}.png"
        proc = _run("--demo", "--demo-recording", "rx7900xtx-comfyui", "--tab", "processes", "--seconds", "0",
                    "--size", "640x480", "--scale", scale, "-o", str(out), tmp_path=tmp_path)
        assert proc.returncode == 0, proc.stderr
        sizes.append(png_size(out))
    # the window, and the strip of N/A reasons under it, both drawn at twice the pixels
    assert sizes[0][0] == 640 and sizes[0][1] >= 480
    assert sizes[1] == (2 * sizes[0][0], 2 * sizes[0][1])


def test_graph_metric_choices_match_the_settings_and_a_wrong_one_is_refused():
    from rocmdesk.ui.screenshot_command import GRAPH_METRICS, add_arguments
    from rocmdesk.ui.settings import GRAPH_METRICS as SETTINGS_METRICS

    assert GRAPH_METRICS == SETTINGS_METRICS  # the command's own copy (it imports no Qt) stays in step
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert parser.parse_args(["--graph-metric", "fan", "-o", "x.png"]).graph_metric == "fan"
    assert parser.parse_args(["-o", "x.png"]).graph_metric is None
    with pytest.raises(SystemExit):
        parser.parse_args(["--graph-metric", "voltage", "-o", "x.png"])


def test_graphs_screenshot_of_the_clocks_as_one_plot_per_gpu(tmp_path):
    """The Done-when picture of issue 14: 8 MI300X as small multiples of the clocks (own process, as above)."""
    out = tmp_path / "clocks.png"
    proc = _run("--demo", "--demo-recording", "mi300x-node", "--tab", "graphs", "--graph-metric", "clocks",
                "--seconds", "0", "--size", "1280x800", "-o", str(out), tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    width, height = png_size(out)
    assert width == 1280 and height >= 800


def test_the_graph_metric_setting_gives_eight_clock_plots(qtbot, open_window):
    """What --graph-metric sets (Settings.graph_metric) is what the Graphs tab draws for 8 GPUs."""
    from rocmdesk.ui.settings import Settings
    from tests.gui.conftest import demo_small

    session = open_window(demo_small(preroll_s=0, recording="mi300x-node"), Settings(graph_metric="clocks"),
                          size=(1280, 800))
    graphs = session.window.tab_widgets["graphs"]
    session.window.show_tab("graphs")
    qtbot.waitUntil(lambda: len(session.feed.gpus) == 8 and len(graphs.plots) == 8, timeout=10000)
    assert graphs.multiples()
    assert all("Clocks" in plot.titleLabel.text for plot in graphs.plots.values())
