"""Report chart axes: round ticks, distinct labels, a flat line gets a sensible scale, time in s/min/h."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rocmdesk.report.chart_axes import nice_step, nice_ticks, tick_labels, time_axis, value_axis


def _is_round(step: float) -> bool:
    mantissa = step / 10 ** math.floor(math.log10(step))
    return any(math.isclose(mantissa, m) for m in (1, 2, 2.5, 5, 10))


def _check_axis(axis, values) -> None:
    """Properties every y axis must have, whatever the data."""
    assert len(axis.ticks) >= 2
    assert len(set(axis.labels)) == len(axis.labels), axis.labels
    assert len(axis.labels) == len(axis.ticks)
    steps = np.diff(axis.ticks)
    assert np.allclose(steps, steps[0], rtol=1e-6) and steps[0] > 0
    assert _is_round(float(steps[0]))
    assert axis.low <= axis.ticks[0] + 1e-12 and axis.ticks[-1] <= axis.high + 1e-12 * max(1, abs(axis.high))
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    if len(finite):
        assert axis.low <= finite.min() and finite.max() <= axis.high
    for label, tick in zip(axis.labels, axis.ticks, strict=True):
        assert math.isclose(float(label.replace(" ", "")), tick, rel_tol=1e-9, abs_tol=1e-12), (label, tick)


def test_flat_series_gets_whole_ticks_around_it():
    """The bug: a flat 61 °C line was labelled 61, 61.2, 61.5, 61.8 (0.25 steps at one decimal)."""
    axis = value_axis(np.full(100, 61.0), min_span=10)
    _check_axis(axis, [61.0])
    assert axis.labels == ("55", "60", "65", "70")
    default = value_axis(np.full(100, 61.0))  # no chart minimum: a tenth of the value
    _check_axis(default, [61.0])
    assert all("." not in label for label in default.labels) and 4 <= len(default.ticks) <= 7


def test_tiny_variation_of_a_large_value_is_not_zoomed_into_noise():
    axis = value_axis(np.array([61.0001, 61.0002, 61.00015]))
    _check_axis(axis, [61.0001, 61.0002])
    assert all("." not in label for label in axis.labels)


def test_tiny_values_get_enough_decimals_or_scientific():
    axis = value_axis(np.array([1e-6, 1.7e-6, 2e-6]))
    _check_axis(axis, [1e-6, 2e-6])
    assert axis.labels[0] == "1.0e-6" and axis.labels[-1] == "2.0e-6"
    small = value_axis(np.array([0.012, 0.018]))
    _check_axis(small, [0.012, 0.018])
    assert small.labels[1] == "0.014"


def test_huge_values():
    axis = value_axis(np.array([1.2e12, 2.9e12]))
    _check_axis(axis, [1.2e12, 2.9e12])
    assert axis.labels == ("0", "1e12", "2e12", "3e12")
    thousands = value_axis(np.array([12_000.0, 48_000.0]))
    _check_axis(thousands, [12_000.0, 48_000.0])
    assert "20 000" in thousands.labels  # grouped, in the chart font's space


def test_nan_only_and_empty_series_fall_back_to_a_unit_range():
    for values in (np.full(5, np.nan), np.array([]), np.array([np.inf, -np.inf, np.nan])):
        axis = value_axis(values)
        _check_axis(axis, values)
        assert (axis.low, axis.high) == (0.0, 1.0)


def test_single_point():
    axis = value_axis(np.array([42.0]))
    _check_axis(axis, [42.0])
    assert axis.low < 42 < axis.high


def test_flat_zero_never_goes_negative_and_negative_data_is_kept():
    zero = value_axis(np.zeros(10))
    _check_axis(zero, [0.0])
    assert zero.low == 0.0
    negative = value_axis(np.array([-5.0, -4.9]))
    _check_axis(negative, [-5.0, -4.9])
    assert negative.high <= 0


def test_fixed_ends_are_kept_exactly():
    busy = value_axis(np.array([30.0, 60.0]), 0.0, 100.0)
    assert busy.labels == ("0", "25", "50", "75", "100") and (busy.low, busy.high) == (0.0, 100.0)
    power = value_axis(np.full(10, 200.0), 0.0, None, min_span=10)
    _check_axis(power, [200.0])
    assert power.low == 0.0
    idle = value_axis(np.zeros(10), 0.0, None, min_span=10)  # a flat zero with a floor still gets a scale
    _check_axis(idle, [0.0])
    assert idle.high == 10.0


def test_nice_step():
    assert nice_step(0.4) == 0.5
    assert nice_step(0.25) == 0.5  # never 0.25: labels would need two decimals for a one-decimal step
    assert nice_step(25) == 25
    assert nice_step(3) == 5
    assert nice_step(0) == 1.0 and nice_step(math.nan) == 1.0


def test_tick_labels_are_distinct_and_share_decimals():
    assert tick_labels([0.0, 0.5, 1.0]) == ("0", "0.5", "1.0")
    assert tick_labels([61.0, 61.25, 61.5]) == ("61.00", "61.25", "61.50")
    assert tick_labels([-0.0, 1.0]) == ("0", "1")
    assert tick_labels([]) == ()


@pytest.mark.parametrize(("span", "labels"), [
    (2.0, ("0 s", "0.5 s", "1 s", "1.5 s", "2 s")),  # the bug: "0 S 0 S 0 S 1 S 1 S 1 S"
    (0.3, ("0 s", "0.1 s", "0.2 s", "0.3 s")),
    (59.0, ("0 s", "15 s", "30 s", "45 s")),
    (600.0, ("0 min", "2 min", "4 min", "6 min", "8 min", "10 min")),
    (3599.0, ("0 min", "15 min", "30 min", "45 min", "60 min")),
    (86400.0, ("0 h", "6 h", "12 h", "18 h", "24 h")),
])
def test_time_axis_units_and_steps(span, labels):
    axis = time_axis(span)
    assert axis.labels == labels
    assert axis.ticks[0] == 0 and axis.high >= span and axis.ticks[-1] <= axis.high


@pytest.mark.parametrize("span", [0.0, -5.0, math.nan, math.inf, 1e-4, 7.3, 119.9, 180.0, 9000.0, 1e6])
def test_time_axis_never_repeats_a_label(span):
    axis = time_axis(span)
    assert len(axis.ticks) >= 2
    assert len(set(axis.labels)) == len(axis.labels)
    for label in axis.labels:
        number, unit = label.split(" ")
        assert unit in ("s", "min", "h") and float(number) >= 0


def test_nice_ticks():
    assert nice_ticks(0, 100) == [0, 25, 50, 75, 100]
    assert nice_ticks(41.5, 86.2)[0] <= 41.5 and nice_ticks(41.5, 86.2)[-1] >= 86.2
    assert nice_ticks(5, 5)[-1] > 5
