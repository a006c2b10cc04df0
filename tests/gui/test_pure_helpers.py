"""Formatting, downsampling and settings: the pure parts of the window."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from rocmdesk.ui.formatting import (
    NA,
    Level,
    fmt_age,
    fmt_bytes,
    fmt_mhz,
    fmt_percent,
    fmt_rpm,
    fmt_temp,
    fmt_watts,
    fraction_level,
    ordered_sensors,
    ratio,
    reason_of,
    temp_level,
)
from rocmdesk.ui.graph_data import FAR_FUTURE_S, insert_gaps, minmax_decimate, nearest_index, steps
from rocmdesk.ui.settings import Settings, settings_path


@pytest.mark.parametrize("fmt", [fmt_temp, fmt_watts, fmt_bytes, fmt_percent, fmt_mhz, fmt_rpm])
@pytest.mark.parametrize("value", [None, math.nan, math.inf, "12", True])
def test_unknown_is_never_zero(fmt, value):
    assert fmt(value) == NA


def test_units():
    assert fmt_temp(61.4) == "61 °C" and fmt_temp(100.0, "F") == "212 °F"
    assert fmt_watts(412.3) == "412 W" and fmt_watts(3.25) == "3.2 W"
    assert fmt_bytes(192 * 2**30) == "192 GiB" and fmt_bytes(1.5 * 2**30) == "1.5 GiB"
    assert fmt_bytes(307 * 2**20) == "307 MiB"
    assert fmt_percent(0) == "0 %"  # a real zero stays a zero
    assert fmt_age(None) == "no sample yet" and fmt_age(0.2) == "just now" and fmt_age(30) == "30 s ago"


def test_levels_use_the_gpus_own_limits():
    assert temp_level(70, 110) is Level.OK
    assert temp_level(85, 110) is Level.WARM
    assert temp_level(97, 110) is Level.HOT
    assert temp_level(106, 110) is Level.CRITICAL
    assert temp_level(97, 125) is Level.WARM  # same reading, different GPU limit
    assert temp_level(97, None) is Level.UNKNOWN and temp_level(None, 100) is Level.UNKNOWN
    assert fraction_level(None) is Level.UNKNOWN and fraction_level(0.99) is Level.CRITICAL
    assert ratio(5, 0) is None and ratio(None, 10) is None and ratio(15, 10) == 1.0
    assert reason_of({"b": "why"}, "a", "b") == "why" and reason_of({}, "a")
    assert ordered_sensors({"mem", "hotspot", "junction"}) == ["junction", "mem", "hotspot"]


def test_minmax_keeps_peaks_and_limits_points():
    t = np.arange(0.0, 3600.0)
    y = np.zeros_like(t)
    y[1234] = 99.0  # a one-sample spike must survive
    y[2345] = -5.0
    x, v = minmax_decimate(t, y, 0.0, 3600.0, 100)
    assert len(x) <= 2 * 101 + 2
    assert v.max() == 99.0 and v.min() == -5.0
    assert np.all(np.diff(x) >= 0)


def test_minmax_small_series_pass_through_and_window_slicing():
    t = np.arange(0.0, 100.0)
    y = t * 2
    x, v = minmax_decimate(t, y, 50.0, 60.0, 500)
    assert x[0] == 49.0 and x[-1] == 61.0  # one point either side, so the line reaches the edges
    assert np.array_equal(v, x * 2)
    x, v = minmax_decimate(np.empty(0), np.empty(0), 0, 1, 10)
    assert len(x) == 0


def test_gaps_break_the_line():
    t = np.array([0.0, 1.0, 2.0, 10.0, 11.0])
    x, v = insert_gaps(t, np.ones(5), max_gap_s=3.0)
    assert len(x) == 6 and math.isnan(v[3]) and 2.0 < x[3] < 10.0


def test_steps_keep_only_changes():
    t = np.arange(0.0, 10.0)
    y = np.array([300.0] * 5 + [250.0] * 5)
    x, v = steps(t, y)
    assert list(v) == [300.0, 300.0, 250.0, 250.0]
    assert list(x[:3]) == [0.0, 5.0, 5.0] and x[-1] == 9.0 + FAR_FUTURE_S
    assert len(steps(np.empty(0), np.empty(0))[0]) == 0


def test_nearest_index():
    t = np.array([0.0, 1.0, 2.0])
    assert nearest_index(t, 1.4) == 1 and nearest_index(t, 1.6) == 2 and nearest_index(t, 9) == 2
    assert nearest_index(np.empty(0), 1) is None


def test_settings_round_trip_and_atomic_file():
    s = Settings(rate_hz=5.0, temp_unit="F", theme="dark", selected_gpus=["0000:03:00.0"], graph_window_s=900)
    assert s.save()
    assert Settings.load() == s
    leftovers = [p.name for p in settings_path().parent.iterdir() if p.name != "settings.json"]
    assert leftovers == []


@pytest.mark.parametrize("content", ["", "{not json", "[1, 2]", "null", "\x00\x01"])
def test_damaged_settings_fall_back_to_defaults(content):
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    assert Settings.load() == Settings()


def test_out_of_range_values_are_replaced_one_by_one():
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"rate_hz": 99, "temp_unit": "K", "theme": "neon", "graph_window_s": 7,
                                "selected_gpus": "all", "geometry": 5, "last_tab": "graphs", "unknown": 1}))
    loaded = Settings.load()
    assert loaded == Settings(last_tab="graphs")


def test_unreadable_and_unwritable_settings(tmp_path, monkeypatch):
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.mkdir(exist_ok=True)  # a folder where the file should be
    assert Settings.load() == Settings()
    assert Settings().save() is False  # cannot replace a folder: reported, no exception


@pytest.mark.parametrize("content", ['{"rate_hz": 1' + "0" * 400 + "}",  # an int too big for a float
                                     "[" * 100_000])  # nested past the JSON parser's recursion limit
def test_settings_that_break_the_parser_or_float_fall_back_to_defaults(content):
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    assert Settings.load() == Settings()
