"""Every check has a short label: the Diagnosis list shows labels, and a missing one fell back to the raw id."""

from __future__ import annotations

from rocmdesk.diagnosis.metadata import load_metadata


def test_every_check_has_a_short_label_of_its_own():
    meta = load_metadata()
    assert meta
    missing = [check_id for check_id, item in meta.items() if not item.label.strip()]
    assert not missing, missing
    too_long = {check_id: item.label for check_id, item in meta.items() if len(item.label) > 34}
    assert not too_long
    labels = [item.label for item in meta.values()]
    assert len(set(labels)) == len(labels)
