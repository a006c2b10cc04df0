"""Diagnosis tab layout: check names are never cut, and the results get the remaining width."""

from __future__ import annotations

import pytest

from rocmdesk.ui.diagnosis_tab import CHECK_COLUMN_MAX, CHECK_COLUMN_MIN
from tests.gui.test_diagnosis_tab import broken_root, make_tab, run
from tests.support import scenarios as sc

pytestmark = pytest.mark.gui


@pytest.mark.parametrize("broken", [False, True])
def test_check_column_fits_the_names_and_leaves_the_rest_to_results(qtbot, tmp_path, broken):
    root = broken_root(tmp_path) if broken else sc.clean_workstation(tmp_path / "root")
    tab = make_tab(qtbot, root)
    tab.resize(1280, 800)
    run(qtbot, tab)
    width = tab.tree.columnWidth(0)
    assert CHECK_COLUMN_MIN <= width <= CHECK_COLUMN_MAX
    # as wide as the view needs to show every name in full (up to the maximum)
    assert width >= min(CHECK_COLUMN_MAX, tab.tree.sizeHintForColumn(0))
    if not broken:  # check ids only (~200 px): the results get what a fixed 340 px column took
        assert width < CHECK_COLUMN_MAX
    # the user's own width survives the next run
    tab.tree.setColumnWidth(0, 333)
    run(qtbot, tab)
    assert tab.tree.columnWidth(0) == 333
