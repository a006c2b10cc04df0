"""The one ROCm support table: per-release lists, the checks and torch_index reading the same rows."""

from __future__ import annotations

import pytest

from rocmdesk.diagnosis import gfx, rocm_support, torch_index
from rocmdesk.diagnosis.model import Severity, Status
from tests.support import scenarios as sc
from tests.support.reports import Gpu, reporter_machine

CHECK = "gpu-not-supported-by-rocm"


def test_table_rows_are_consistent():
    keys = [rocm_support.release_key(r) for r in rocm_support.RELEASES]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    for row in rocm_support.TABLE:
        for release in (row.added, row.deprecated, row.dropped):
            assert release is None or release in rocm_support.RELEASES, row
        for index in (row.torch_first, row.torch_last):
            assert index in (None, "") or index in torch_index.KNOWN_INDEXES, row
        assert gfx.GfxVersion.from_target(row.target) is not None, row
        assert row.sources, row
        if not row.supported_in(None):
            assert row.what_works, f"{row.target}: an unsupported target must say what works"
    assert len(rocm_support.BY_TARGET) == len(rocm_support.TABLE)


@pytest.mark.parametrize(("release", "present", "absent"), [
    ("5.7", {"gfx1100", "gfx1030", "gfx90a", "gfx908", "gfx906"}, {"gfx942", "gfx1101", "gfx1201"}),
    ("6.0", {"gfx942", "gfx906"}, {"gfx1101", "gfx900"}),
    ("6.3", {"gfx906", "gfx1100"}, {"gfx1200", "gfx1201", "gfx1101", "gfx950"}),
    ("6.4.0", {"gfx1100"}, {"gfx906", "gfx1201"}),  # 6.4.0 lists the 6.3 set without gfx906's library
    ("6.4.3", {"gfx1101", "gfx1200", "gfx1201"}, {"gfx906", "gfx950"}),
    ("7.0.2", {"gfx950", "gfx942"}, {"gfx1103", "gfx1151"}),
    ("7.2", {"gfx950", "gfx1201", "gfx1101", "gfx1100", "gfx1030", "gfx942", "gfx90a", "gfx908"},
     {"gfx803", "gfx900", "gfx906", "gfx1010", "gfx1012", "gfx1031", "gfx1102", "gfx1103", "gfx1150", "gfx1151"}),
])
def test_support_per_release(release, present, absent):
    supported = rocm_support.supported_targets(rocm_support.release_row_for(release))
    assert present <= supported
    assert not absent & supported


def test_every_list_reads_the_table():
    # the complaint: gfx803, gfx900, gfx1010, gfx1012, gfx1150 known to one list and not the other
    for target in ("gfx803", "gfx900", "gfx1010", "gfx1012", "gfx1150"):
        assert rocm_support.row_of(target) is not None
        assert not gfx.is_supported(target)
    assert gfx.SUPPORTED_TARGETS == rocm_support.supported_targets()
    assert torch_index.MIN_INDEX_FOR_GFX == rocm_support.torch_min_index()
    assert torch_index.MAX_INDEX_FOR_GFX == rocm_support.torch_max_index()
    assert {"gfx803", "gfx1010", "gfx1012", "gfx90c"} <= torch_index.NO_WHEELS_FOR_GFX
    assert gfx.suggested_override("gfx1031") == "10.3.0" and gfx.suggested_override("gfx1100") is None
    # gfx1101 is supported from 6.4.1: no override suggested there, the 11.0.0 one before
    assert gfx.suggested_override("gfx1101") is None and gfx.suggested_override("gfx1101", "6.2") == "11.0.0"


@pytest.mark.parametrize(("text", "row"), [("6.4.3-120", "6.4.1"), ("6.4.0", "6.4.0"), ("6.2.4", "6.2"),
                                           ("7.2.1", "7.2"), ("8.1.0", "7.2"), ("5.6.1", None), ("junk", None),
                                           ("6.4.43484", "6.4.0"), ("", None)])
def test_release_row_for(text, row):
    assert rocm_support.release_row_for(text) == row


def test_clean_machine_passes(tmp_path):
    result = sc.run_check(sc.clean_workstation(tmp_path / "root"), CHECK)
    assert result.status is Status.PASS and "gfx1100 is supported by ROCm 6.2.4" in result.reason


def test_no_kfd_skips(tmp_path):
    root = sc.clean_workstation(tmp_path / "root")
    sc.unload_amdgpu(root)
    assert sc.run_check(root, CHECK).status is Status.SKIP


def test_release_too_old_for_the_gpu(tmp_path):
    """RX 9070 XT (gfx1201) with ROCm 6.2.4: support starts with 6.4.1."""
    root = reporter_machine(tmp_path / "r", [Gpu(120001, 0x7550)], rocm="6.2.4")
    finding = sc.only_finding(sc.run_check(root, CHECK))
    assert finding.severity is Severity.WARNING
    assert "older than ROCm's support for gfx1201" in finding.title
    assert "6.4.1" in finding.fix.steps[0]
    assert any(e.path == "/opt/rocm/.info/version" for e in finding.evidence)


def test_deprecated_is_info(tmp_path):
    root = reporter_machine(tmp_path / "r", [Gpu(90006, 0x66AF)], rocm="6.2.4")
    finding = sc.only_finding(sc.run_check(root, CHECK))
    assert finding.severity is Severity.INFO and "deprecated" in finding.title and "6.4.0" in finding.explanation


def test_override_targets_are_left_to_the_override_checks(tmp_path):
    root = reporter_machine(tmp_path / "r", [Gpu(100301, 0x73DF)], rocm="6.2.4")
    assert sc.run_check(root, CHECK).status is Status.PASS
    assert sc.run_check(root, "hsa-override-suggested").status is Status.FAIL


def test_unknown_target_is_honest(tmp_path):
    root = reporter_machine(tmp_path / "r", [Gpu(110500 + 9, 0x1234)], rocm=None)
    finding = sc.only_finding(sc.run_check(root, CHECK))
    assert finding.severity is Severity.INFO and "not in rocmdesk's support table" in finding.title


def test_unsupported_igpu_beside_supported_dgpu_is_hidden_by_uuid(tmp_path):
    root = reporter_machine(tmp_path / "r", [Gpu(110000, 0x744C, unique_id=0x1234ABCD5678EF01),
                                             Gpu(90012, 0x1638, pci="0000:0a:00.0")])
    finding = sc.only_finding(sc.run_check(root, CHECK))
    assert finding.subject == "0000:0a:00.0" and "gfx90c" in finding.title
    assert any("ROCR_VISIBLE_DEVICES=GPU-1234abcd5678ef01" in s for s in finding.fix.steps)


def test_hiding_falls_back_to_the_index_without_uuid(tmp_path):
    root = reporter_machine(tmp_path / "r", [Gpu(110000, 0x744C), Gpu(90012, 0x1638, pci="0000:0a:00.0")])
    finding = sc.only_finding(sc.run_check(root, CHECK))
    assert any("ROCR_VISIBLE_DEVICES=0` (by index" in s for s in finding.fix.steps)
