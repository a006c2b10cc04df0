"""The CSV export table without a window: union of timestamps, blanks, stored units, no half file."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from rocmdesk.ui import history_csv
from rocmdesk.ui.graph_data import nice_ceiling


def test_columns_share_one_time_column_with_blanks(tmp_path):
    a = history_csv.column("A power_w (W)", np.array([1.0, 2.0, 3.0, 9.0]), np.array([10, 11, np.nan, 99]), 0, 5)
    b = history_csv.column("B power_w (W)", np.array([2.0, 4.0]), np.array([20.5, 21.0]), 0, 5)
    assert list(a.times) == [1.0, 2.0, 3.0]  # the sample after t1 is not exported
    path = tmp_path / "h.csv"
    assert history_csv.write_csv(path, [a, b]) == 4
    rows = list(csv.reader(path.open(newline="")))
    assert rows[0] == ["time_iso", "timestamp", "A power_w (W)", "B power_w (W)"]
    assert [r[1:] for r in rows[1:]] == [["1.000", "10", ""], ["2.000", "11", "20.5"], ["3.000", "", ""],
                                         ["4.000", "", "21"]]
    assert rows[1][0].endswith(".000") and "T" in rows[1][0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.csv"]


def test_no_columns_gives_a_header_only():
    assert list(history_csv.rows([])) == [["time_iso", "timestamp"]]


def test_a_failed_write_leaves_the_folder_as_it_was(tmp_path):
    target = tmp_path / "h.csv"
    target.mkdir()  # the rename fails after every row was written
    col = history_csv.column("x", np.arange(5.0), np.arange(5.0), 0, 10)
    with pytest.raises(OSError):
        history_csv.write_csv(target, [col])
    assert [p.name for p in tmp_path.iterdir()] == ["h.csv"]
    with pytest.raises(OSError):
        history_csv.write_csv(tmp_path / "missing" / "h.csv", [col])


@pytest.mark.parametrize(("value", "want"), [(0.0, 1.0), (-3, 1.0), (math.nan, 1.0), (0.9, 1.0), (1.01, 1.2),
                                             (730, 800), (751, 800), (2050, 2500), (9.5, 10.0)])
def test_nice_ceiling(value, want):
    assert nice_ceiling(value) == pytest.approx(want)
