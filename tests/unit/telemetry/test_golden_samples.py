"""Golden ``rocmdesk sample --json`` output for every real LACT dump, like LACT's own snapshot tests.

A change to what any dump reads as (a value, a name, an N/A reason) shows up here as a diff to
review. When the change is intended, rewrite the files and review them in ``git diff``::

    ROCMDESK_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/unit/telemetry/test_golden_samples.py

Only the time of the sample is left out; everything else is compared exactly.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

import pytest

from rocmdesk.cli import main
from tests.support.sysfs_tree import DATA, LACT_DUMPS, GpuSpec, build_root

GOLDEN = DATA / "golden" / "sample"
UPDATE = os.environ.get("ROCMDESK_UPDATE_GOLDEN") == "1"


def _sample_json(root: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["sample", "--root", str(root), "--backend", "sysfs", "--json"]) == 0
    data = json.loads(capsys.readouterr().out.splitlines()[0])
    data.pop("timestamp")
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("dump", LACT_DUMPS)
def test_sample_of_each_real_dump_matches_its_golden_file(tmp_path, capsys, dump):
    build_root(tmp_path, [GpuSpec(dump, card=0)])
    got = _sample_json(tmp_path, capsys)
    golden = GOLDEN / f"{dump}.json"
    if UPDATE:
        golden.write_text(got)
    assert golden.is_file(), f"no golden file for {dump}: run with ROCMDESK_UPDATE_GOLDEN=1 and review it"
    want = golden.read_text()
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), f"golden/{dump}.json",
                                            "now"))
        pytest.fail(f"`sample --json` of {dump} changed; if intended, update the golden files "
                    f"(ROCMDESK_UPDATE_GOLDEN=1) and review:\n{diff}")


def test_every_golden_file_belongs_to_a_dump():
    assert sorted(p.stem for p in GOLDEN.glob("*.json")) == sorted(LACT_DUMPS)
