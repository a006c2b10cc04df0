"""CheckMeta: the YAML wording as a validated dataclass; every malformed entry is refused with where it is."""

from __future__ import annotations

import pytest

from rocmdesk.diagnosis.metadata import CheckMeta, FixMeta, load_metadata
from rocmdesk.diagnosis.model import Severity

GOOD = {"id": "x", "title": "T", "label": "L", "severity": "error", "explanation": " why \n", "sources": ["s"],
        "fix": {"id": "f", "privileged": True, "steps": ["a", "b"]}}


def test_good_entry():
    meta = CheckMeta.from_mapping(GOOD, "t.yaml")
    assert meta == CheckMeta("x", "T", "L", Severity.ERROR, "why", ("s",), (), FixMeta("f", True, ("a", "b")))


@pytest.mark.parametrize("change, words", [
    ({"title": None}, "title must be non-empty"),
    ({"title": " "}, "title must be non-empty"),
    ({"severity": "fatal"}, "severity must be one of"),
    ({"sources": "one"}, "sources must be a list"),
    ({"reports": [1]}, "reports must be a list"),
    ({"fix": {"id": "f", "privileged": "yes"}}, "privileged must be true or false"),
    ({"fix": {"id": "f", "step": []}}, "fix must be a mapping"),
    ({"fix": ["f"]}, "fix must be a mapping"),
    ({"titel": "typo"}, "unknown key"),
])
def test_bad_entries_are_refused(change, words):
    entry = {**GOOD, **change}
    entry = {k: v for k, v in entry.items() if v is not None}
    with pytest.raises(ValueError, match=words):
        CheckMeta.from_mapping(entry, "t.yaml")


def test_not_a_mapping():
    with pytest.raises(ValueError, match="must be a mapping"):
        CheckMeta.from_mapping(["id", "x"], "t.yaml")


def test_shipped_metadata_is_valid():
    meta = load_metadata()
    assert meta and all(isinstance(m, CheckMeta) and m.id == k for k, m in meta.items())
