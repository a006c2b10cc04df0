"""Report charts as SVG: parsed back with xml.etree, as any SVG reader would see them."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from rocmdesk.report.svg_charts import (
    LIGHT,
    SVG_NS,
    Chart,
    ChartStyle,
    Series,
    chart_svg,
    elide,
    history_charts,
    line_chart,
    runs,
)
from rocmdesk.telemetry.recording import load_recording

NS = {"s": SVG_NS}


def _parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{{{SVG_NS}}}svg"
    return root


def _series_groups(root: ET.Element) -> list[ET.Element]:
    return root.findall("s:g[@class='series']", NS)


def _points(polyline: ET.Element) -> list[tuple[float, float]]:
    return [tuple(map(float, p.split(","))) for p in polyline.get("points", "").split()]


def _texts(root: ET.Element, group: str) -> list[str]:
    return [t.text or "" for t in root.findall(f"s:g[@class='{group}']/s:text", NS)]


def test_one_group_per_gpu_with_every_point_axes_and_legend():
    t = np.arange(600, dtype=float)
    series = [Series("card0 A", t, 50 + 10 * np.sin(t / 50)), Series("card1 B", t, np.full(600, 70.0))]
    root = _parse(line_chart(series, "Temperature", "°C", 800, 260))
    assert (root.get("width"), root.get("height"), root.get("viewBox")) == ("800", "260", "0 0 800 260")
    groups = _series_groups(root)
    assert [g.get("data-label") for g in groups] == ["card0 A", "card1 B"]
    for group in groups:
        lines = group.findall("s:polyline", NS)
        assert len(lines) == 1 and len(_points(lines[0])) == 600  # 600 samples < 2 per pixel: all kept
    assert group.get("stroke") != groups[0].get("stroke")  # two GPUs, two colours
    assert _texts(root, "y-labels") == ["40", "50", "60", "70"]
    assert _texts(root, "x-labels") == ["0 min", "2 min", "4 min", "6 min", "8 min", "10 min"]
    assert _texts(root, "legend") == ["card0 A", "card1 B"]
    title = root.find("s:text[@class='title']", NS)
    unit = root.find("s:text[@class='unit']", NS)
    assert title is not None and title.text == "Temperature" and unit is not None and unit.text == "°C"
    # every point inside the plot: between the axes' ends
    xs = [x for g in groups for line in g.findall("s:polyline", NS) for x, _ in _points(line)]
    ys = [y for g in groups for line in g.findall("s:polyline", NS) for _, y in _points(line)]
    assert 0 < min(xs) < max(xs) < 800 and 0 < min(ys) < max(ys) < 260


def test_missing_samples_split_the_line_never_drop_to_zero():
    t = np.arange(10, dtype=float)
    values = np.array([60, 61, np.nan, np.nan, 62, 63, 64, np.nan, 65, 66], dtype=float)
    root = _parse(line_chart([Series("card0", t, values)], "Temperature", "°C", 400, 200, min_span=10))
    (group,) = _series_groups(root)
    lines = group.findall("s:polyline", NS)
    assert [len(_points(line)) for line in lines] == [2, 3, 2]
    zero_y = float(root.find("s:g[@class='axes']/s:line[2]", NS).get("y1"))
    assert all(y < zero_y - 10 for line in lines for _, y in _points(line))  # no point at the baseline
    # the runs follow each other left to right with room between them: a gap, not a bridge
    ends = [(_points(line)[0][0], _points(line)[-1][0]) for line in lines]
    assert ends[0][1] < ends[1][0] and ends[1][1] < ends[2][0]


def test_a_lone_sample_between_gaps_is_a_dot():
    t = np.arange(5, dtype=float)
    root = _parse(line_chart([Series("card0", t, np.array([np.nan, np.nan, 7.0, np.nan, np.nan]))], "Power", "W"))
    (group,) = _series_groups(root)
    assert group.findall("s:polyline", NS) == [] and len(group.findall("s:circle", NS)) == 1


def test_runs_of_finite_points():
    xs = np.arange(6, dtype=float)
    ys = np.array([1, np.nan, 2, 3, np.inf, 4], dtype=float)
    assert [r[0].tolist() for r in runs(xs, ys)] == [[0.0], [2.0, 3.0], [5.0]]
    assert runs(xs, np.full(6, np.nan)) == []


def test_hostile_names_are_text_not_markup():
    hostile = 'card0 · <script>alert("x")</script> & <b>'
    root = _parse(line_chart([Series(hostile, np.arange(3.0), np.ones(3))], "Power <img src=x>", "W & co"))
    assert _series_groups(root)[0].get("data-label") == hostile
    assert _texts(root, "legend")[0].startswith("card0 · <script>")  # the text, elided, as text
    assert root.find("s:title", NS).text == "Power <img src=x>"
    assert not list(root.iter(f"{{{SVG_NS}}}script")) and not list(root.iter("script"))
    svg = line_chart([Series(hostile, np.arange(3.0), np.ones(3))], "t", "u")
    assert "<script>" not in svg and "&lt;script&gt;" in svg


def test_no_data_says_so_and_invents_no_scale():
    root = _parse(line_chart([Series("card0", np.array([0.0, 1.0]), np.array([np.nan, np.nan]))], "Power", "W"))
    assert root.find("s:text[@class='no-data']", NS).text == "No data recorded"
    assert _texts(root, "y-labels") == []
    assert _series_groups(root)[0].findall("s:polyline", NS) == []
    empty = _parse(line_chart([], "Power", "W"))  # no GPU at all
    assert _series_groups(empty) == [] and empty.find("s:text[@class='no-data']", NS) is not None


def test_flat_two_second_series_is_one_level_line():
    t = np.array([0.0, 1.0, 2.0])
    root = _parse(line_chart([Series("card0 · RX 7900 XTX", t, np.full(3, 61.0))], "Temperature (edge)", "°C",
                             400, 200, min_span=10))
    (line,) = _series_groups(root)[0].findall("s:polyline", NS)
    assert len({y for _, y in _points(line)}) == 1
    assert _texts(root, "y-labels") == ["55", "60", "65", "70"]
    assert _texts(root, "x-labels") == ["0 s", "0.5 s", "1 s", "1.5 s", "2 s"]


def test_fixed_range_clips_and_style_sets_every_colour():
    style = ChartStyle(text="#eeeeee", muted="#aaaaaa", grid="#333333", axis="#999999", background=None,
                       series=("#00ff00",), font_family="Noto Sans")
    t = np.arange(4, dtype=float)
    root = _parse(line_chart([Series("g", t, np.array([-5.0, 50.0, 150.0, 100.0]))], "GPU busy", "%", 400, 200,
                             0.0, 100.0, style=style))
    assert root.find("s:rect[@class='background']", NS) is None  # transparent: the window shows through
    assert root.get("font-family") == "Noto Sans"
    assert root.find("s:text[@class='title']", NS).get("fill") == "#eeeeee"
    assert root.find("s:g[@class='grid']", NS).get("stroke") == "#333333"
    assert _series_groups(root)[0].get("stroke") == "#00ff00"
    ys = [y for _, y in _points(_series_groups(root)[0].find("s:polyline", NS))]
    axes = root.findall("s:g[@class='axes']/s:line", NS)
    top, bottom = float(axes[0].get("y1")), float(axes[0].get("y2"))
    assert ys[0] == bottom and ys[2] == top and ys[3] == top  # -5 and 150 % drawn at the range's ends
    light = _parse(line_chart([], "x", "y"))
    assert light.find("s:rect[@class='background']", NS).get("fill") == LIGHT.background


def test_long_series_are_cut_to_two_points_per_pixel_column_keeping_peaks():
    t = np.arange(20_000, dtype=float)
    values = np.full(20_000, 10.0)
    values[12_345] = 90.0  # one sample spike
    root = _parse(line_chart([Series("g", t, values)], "Power", "W", 600, 200, 0.0, 100.0))
    (line,) = _series_groups(root)[0].findall("s:polyline", NS)
    points = _points(line)
    assert len(points) <= 2 * 600
    top = float(root.findall("s:g[@class='axes']/s:line", NS)[0].get("y1"))
    bottom = float(root.findall("s:g[@class='axes']/s:line", NS)[0].get("y2"))
    assert min(y for _, y in points) == pytest.approx(bottom - 0.9 * (bottom - top), abs=0.1)  # the spike


def test_pieces_draw_the_same_points():
    t = np.arange(50, dtype=float)
    chart = Chart("Power", "W", (Series("g", t, np.sin(t)),))
    whole = _series_groups(_parse(chart_svg(chart)))[0].findall("s:polyline", NS)
    pieces = _series_groups(_parse(chart_svg(chart, max_points=9)))[0].findall("s:polyline", NS)
    assert len(whole) == 1 and len(pieces) == 7
    joined = [p for i, line in enumerate(pieces) for p in _points(line)[(1 if i else 0):]]
    assert joined == _points(whole[0])  # pieces share their end points: one unbroken line


def test_inline_svg_for_html_has_no_namespace_url():
    svg = chart_svg(Chart("Power", "W", ()), xmlns=False)
    assert svg.startswith("<svg ") and "http" not in svg


def test_elide_marks_the_cut():
    assert elide("card1 · MI300X", 500, 12) == "card1 · MI300X"
    cut = elide("card1 · AMD Instinct MI300X with a very long name", 100, 12)
    assert cut.endswith("…") and len(cut) * 12 * 0.6 <= 100
    assert elide("anything", 1, 12) == ""


def test_history_charts_of_a_recording():
    demo = load_recording("mi300x-node")
    charts = history_charts(demo)
    assert [c.title.split(" (")[0] for c in charts] == ["Temperature", "Power", "GPU busy", "VRAM used"]
    for chart in charts:
        root = _parse(chart_svg(chart, 960, 300))
        groups = _series_groups(root)
        assert len(groups) == len(demo.gpus) == 8
        assert all(len(_points(g.find("s:polyline", NS))) == len(demo.frames) for g in groups)
        assert len(_texts(root, "y-labels")) >= 3
