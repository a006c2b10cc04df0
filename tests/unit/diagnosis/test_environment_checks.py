"""Environment checks: overrides and visible-devices variables from every source; WSL."""

from __future__ import annotations

import shutil

import pytest

from rocmdesk.diagnosis.checks.environment import judge_visible
from rocmdesk.diagnosis.etc_parsers import parse_env_assignments, parse_environ, parse_systemd_environment
from rocmdesk.diagnosis.gfx import GfxVersion, parse_override
from rocmdesk.diagnosis.model import Severity, Status
from tests.support import scenarios as sc
from tests.support.instinct import instinct_specs
from tests.support.scenarios import only_finding
from tests.support.sysfs_tree import build_root

MISMATCH = "hsa-override-mismatch"
SUGGESTED = "hsa-override-suggested"
VISIBLE = "visible-devices-hides-gpus"


@pytest.fixture
def root(tmp_path):
    return sc.clean_workstation(tmp_path / "root")


# -- gfx rules ------------------------------------------------------------------------------------


@pytest.mark.parametrize("packed,target", [(110000, "gfx1100"), (90010, "gfx90a"), (90402, "gfx942"),
                                           (100301, "gfx1031"), (90008, "gfx908"), (110003, "gfx1103")])
def test_gfx_decoding(packed, target):
    version = GfxVersion.from_packed(packed)
    assert version.target == target
    assert GfxVersion.from_target(target) == version
    assert GfxVersion.from_packed(0) is None


@pytest.mark.parametrize("value,ok", [("10.3.0", True), ("11.0.0", True), ("9.0.10", True), ("63.255.255", True),
                                      ("64.0.0", False), ("10.256.0", False), ("10.3", False), ("gfx1030", False),
                                      ("10.3.0 ", False), ("10.3.0x", False), ("", False), ("-1.0.0", False)])
def test_override_parsing(value, ok):
    version, problem = parse_override(value)
    assert (version is not None) is ok
    assert (problem is None) is ok


def test_families():
    assert GfxVersion(10, 3, 0).family != GfxVersion(10, 1, 0).family  # RDNA2 vs RDNA1
    assert GfxVersion(9, 0, 10).family != GfxVersion(9, 4, 2).family  # CDNA2 vs CDNA3
    assert GfxVersion(10, 3, 1).family == GfxVersion(10, 3, 0).family


# -- sources ---------------------------------------------------------------------------------------


def test_env_parsers():
    assert parse_environ(b"A=1\0B=x=y\0junk\0") == [("A", "1"), ("B", "x=y")]
    assert parse_env_assignments('export HSA_OVERRIDE_GFX_VERSION="10.3.0" # rx 6700\nX=1\n', True) == [
        (1, "HSA_OVERRIDE_GFX_VERSION", "10.3.0")]
    assert parse_env_assignments('HIP_VISIBLE_DEVICES=""\n#A=1\n', False) == [(1, "HIP_VISIBLE_DEVICES", "")]
    assignments, files = parse_systemd_environment(
        '[Service]\nEnvironment="A=1" "B=two words"\nEnvironmentFile=-/etc/default/ollama\n')
    assert assignments == [(2, "A", "1"), (2, "B", "two words")]
    assert files == [(3, "-/etc/default/ollama")]


def test_override_in_session_on_gfx1100(root):
    sc.session_env(root, HSA_OVERRIDE_GFX_VERSION="10.3.0")
    result = sc.run_check(root, MISMATCH)
    assert result.status is Status.FAIL
    finding = result.findings[0]
    assert finding.severity is Severity.ERROR
    assert finding.evidence[0].path == "/proc/self/environ"
    assert "RDNA2" in finding.explanation and "RDNA3" in finding.explanation
    assert "supported natively" in finding.explanation


def test_native_override_is_harmless(root):
    sc.session_env(root, HSA_OVERRIDE_GFX_VERSION="11.0.0")
    assert sc.run_check(root, MISMATCH).status is Status.PASS


def test_malformed_override_in_profile(root):
    sc.export_in_profile(root, "HSA_OVERRIDE_GFX_VERSION", "gfx1030")
    finding = sc.run_check(root, MISMATCH).findings[0]
    ev = finding.evidence[0]
    assert ev.path == f"/home/{sc.USER}/.profile"
    assert (root / ev.path.lstrip("/")).read_text().splitlines()[ev.line - 1].startswith("export HSA_OVERRIDE")
    assert "gfx target name" in finding.explanation
    assert any(".profile" in s for s in finding.fix.steps)


def test_override_in_ollama_unit(root):
    sc.unit_environment(root, "HSA_OVERRIDE_GFX_VERSION", "9.4.2")
    finding = sc.run_check(root, MISMATCH).findings[0]
    assert finding.evidence[0].path == "/etc/systemd/system/ollama.service"
    assert finding.subject == "ollama.service"
    assert any("systemctl" in s for s in finding.fix.steps)


def test_override_in_environment_file_of_unit(root):
    text = (root / "etc/systemd/system/ollama.service").read_text()
    sc.write(root, "/etc/systemd/system/ollama.service",
             text.replace("[Install]", "EnvironmentFile=-/etc/default/ollama\n\n[Install]"))
    sc.write(root, "/etc/default/ollama", "OLLAMA_HOST=0.0.0.0\nHSA_OVERRIDE_GFX_VERSION=10.3.0\n")
    ev = sc.run_check(root, MISMATCH).findings[0].evidence[0]
    assert (ev.path, ev.line) == ("/etc/default/ollama", 2)


def test_override_in_systemd_drop_in(root):
    sc.write(root, "/etc/systemd/system/ollama.service.d/override.conf",
             '[Service]\nEnvironment="HSA_OVERRIDE_GFX_VERSION=10.3"\n')
    finding = sc.run_check(root, MISMATCH).findings[0]
    assert finding.evidence[0].path == "/etc/systemd/system/ollama.service.d/override.conf"
    assert finding.subject == "ollama.service"


def test_override_in_gpu_process_env(root):
    sc.gpu_process(root, 5150, "python3", {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"}, device="/dev/dri/renderD128")
    finding = sc.run_check(root, MISMATCH).findings[0]
    assert finding.evidence[0].path == "/proc/5150/environ"
    assert finding.subject == "python3 process 5150"


def test_process_without_gpu_is_not_read(root):
    sc.gpu_process(root, 5151, "bash", {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"}, device="/dev/null")
    assert sc.run_check(root, MISMATCH).status is Status.PASS


def test_node_override_on_cpu_node(root):
    sc.session_env(root, HSA_OVERRIDE_GFX_VERSION_0="11.0.0")
    finding = sc.run_check(root, MISMATCH).findings[0]
    assert "KFD node 0 is a CPU" in finding.explanation


def test_node_override_on_gpu_node_is_checked(root):
    sc.session_env(root, HSA_OVERRIDE_GFX_VERSION_1="11.0.0")
    assert sc.run_check(root, MISMATCH).status is Status.PASS
    sc.session_env(root, HSA_OVERRIDE_GFX_VERSION_1="10.3.0")
    assert sc.run_check(root, MISMATCH).status is Status.FAIL
    sc.session_env(root, HSA_OVERRIDE_GFX_VERSION_7="11.0.0")
    assert "does not exist" in sc.run_check(root, MISMATCH).findings[0].explanation


def test_global_override_on_mixed_families(root):
    sc.add_second_gpu(root, "rx6900xt")  # gfx1030 on KFD node 2
    sc.session_env(root, HSA_OVERRIDE_GFX_VERSION="11.0.0")
    finding = sc.run_check(root, MISMATCH).findings[0]
    assert "0000:0a:00.0" in finding.explanation and "mixes GPU families" in finding.explanation


def test_rdna1_with_rdna2_override(root):
    sc.replace_gpu(root, 100100, 0x731F)  # RX 5700 XT, gfx1010
    sc.session_env(root, HSA_OVERRIDE_GFX_VERSION="10.3.0")
    assert "RDNA1" in sc.run_check(root, MISMATCH).findings[0].explanation


def test_same_family_override_on_unsupported_card_passes(root):
    sc.replace_gpu(root, 100301, 0x73DF)  # RX 6700 XT, gfx1031
    sc.session_env(root, HSA_OVERRIDE_GFX_VERSION="10.3.0")
    assert sc.run_check(root, MISMATCH).status is Status.PASS
    assert sc.run_check(root, SUGGESTED).status is Status.PASS


# -- hsa-override-suggested ------------------------------------------------------------------------------


@pytest.mark.parametrize("packed,device,suggestion", [(100301, 0x73DF, "10.3.0"), (100302, 0x73FF, "10.3.0"),
                                                      (110002, 0x7480, "11.0.0")])
def test_override_suggested(root, packed, device, suggestion):
    sc.replace_gpu(root, packed, device)
    result = sc.run_check(root, SUGGESTED)
    assert result.status is Status.FAIL
    finding = result.findings[0]
    assert finding.severity is Severity.INFO
    assert f"HSA_OVERRIDE_GFX_VERSION={suggestion}" in finding.fix.steps[0]
    assert finding.evidence[0].path == "/sys/class/kfd/kfd/topology/nodes/1/properties"


def test_no_override_is_suggested_where_it_hangs_the_gpu(root):
    """gfx1103 (780M): 11.0.0 hung the system in ROCm/TheRock#1184, so it is never proposed."""
    sc.replace_gpu(root, 110003, 0x15BF)
    assert sc.run_check(root, SUGGESTED).status is Status.PASS
    sc.session_env(root, HSA_OVERRIDE_GFX_VERSION="11.0.0")
    finding = only_finding(sc.run_check(root, MISMATCH))
    assert finding.title == "HSA_OVERRIDE_GFX_VERSION=11.0.0 can hang gfx1103"


def test_suggestion_per_node_on_mixed_machine(root):
    sc.add_second_gpu(root, "rx6600")  # gfx1032 on node 2, beside the supported gfx1100
    finding = sc.run_check(root, SUGGESTED).findings[0]
    assert "HSA_OVERRIDE_GFX_VERSION_2=10.3.0" in finding.fix.steps[0]


@pytest.mark.parametrize("packed", [110000, 110001, 100300, 90402, 90010])
def test_supported_targets_get_no_suggestion(root, packed):
    sc.replace_gpu(root, packed, 0x744C)
    assert sc.run_check(root, SUGGESTED).status is Status.PASS


def test_suggestion_skips_without_kfd(root):
    sc.unload_amdgpu(root)
    result = sc.run_check(root, SUGGESTED)
    assert result.status is Status.SKIP and "KFD" in result.reason


# -- visible devices -----------------------------------------------------------------------------------


@pytest.mark.parametrize("value,count,hides", [("-1", 1, True), ("", 1, True), ("0", 1, False), ("1", 1, True),
                                               ("0,1", 2, False), ("0,5", 2, True), ("GPU-4f2a91c3d2b1e0aa", 1, False),
                                               ("abc", 1, True), ("0", None, False), ("3", None, False)])
def test_judge_visible(value, count, hides):
    problem, _kept = judge_visible(value, count)
    assert (problem is not None) is hides


@pytest.mark.parametrize("name", ["ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES",
                                  "GPU_DEVICE_ORDINAL"])
def test_minus_one_hides_all(root, name):
    sc.session_env(root, **{name: "-1"})
    finding = sc.run_check(root, VISIBLE).findings[0]
    assert finding.evidence[0].path == "/proc/self/environ"
    assert "hides every GPU" in finding.explanation


def test_out_of_range_index_in_etc_environment(root):
    sc.write(root, "/etc/environment", (root / "etc/environment").read_text() + 'HIP_VISIBLE_DEVICES="1"\n')
    finding = sc.run_check(root, VISIBLE).findings[0]
    assert (finding.evidence[0].path, finding.evidence[0].line) == ("/etc/environment", 2)
    assert "out of range" in finding.explanation


def test_hip_counts_after_rocr(root):
    sc.add_second_gpu(root, "rx6900xt")
    sc.session_env(root, ROCR_VISIBLE_DEVICES="1", HIP_VISIBLE_DEVICES="1")
    result = sc.run_check(root, VISIBLE)
    assert [f.evidence[0].text.split("=")[0] for f in result.findings] == ["HIP_VISIBLE_DEVICES"]
    sc.session_env(root, ROCR_VISIBLE_DEVICES="1", HIP_VISIBLE_DEVICES="0")
    assert sc.run_check(root, VISIBLE).status is Status.PASS


def test_valid_selection_passes(root):
    sc.session_env(root, HIP_VISIBLE_DEVICES="0")
    assert sc.run_check(root, VISIBLE).status is Status.PASS


# -- WSL ------------------------------------------------------------------------------------------------


def test_wsl_fires_and_sysfs_checks_skip(root):
    assert sc.run_check(root, "wsl-environment").status is Status.PASS
    sc.make_wsl(root)
    finding = sc.run_check(root, "wsl-environment").findings[0]
    assert finding.severity is Severity.INFO
    assert {e.path for e in finding.evidence} >= {"/proc/version", "/dev/dxg"}
    for check_id in ("amdgpu-not-loaded", "amdgpu-blacklisted", "nomodeset", "kfd-missing", "overdrive-enabled",
                     "firmware-load-failure", "user-not-in-render-group", SUGGESTED, "xorg-driver-conflict"):
        result = sc.run_check(root, check_id)
        assert result.status is Status.SKIP, check_id
        assert result.reason.startswith("not applicable under WSL:"), check_id


def test_wsl_still_checks_override_format(root):
    sc.make_wsl(root)
    sc.session_env(root, HSA_OVERRIDE_GFX_VERSION="11")
    assert sc.run_check(root, MISMATCH).status is Status.FAIL
    sc.session_env(root, HSA_OVERRIDE_GFX_VERSION="11.0.0")
    assert sc.run_check(root, MISMATCH).status is Status.PASS


def test_environment_checks_on_empty_root(tmp_path):
    for check_id in (MISMATCH, VISIBLE, "wsl-environment"):
        assert sc.run_check(tmp_path, check_id).status is Status.PASS


# -- wording a support engineer reads ------------------------------------------------------------------


def test_unit_fix_edits_the_line_and_never_suggests_a_drop_in(root):
    """A drop-in cannot take a variable away, and `NAME=` (set but empty) would hide every GPU."""
    sc.unit_environment(root, "ROCR_VISIBLE_DEVICES", "5")
    finding = sc.run_check(root, VISIBLE).findings[0]
    assert finding.fix.steps[0] == ("As root, edit /etc/systemd/system/ollama.service:14 and remove "
                                    "`ROCR_VISIBLE_DEVICES=5` from its Environment= line.")
    assert "systemctl edit" not in " ".join(finding.fix.steps)
    assert finding.explanation.count("is_available() == False") == 1, "said once, in the explanation"


def test_environment_file_of_a_unit_is_named_as_such(root):
    text = (root / "etc/systemd/system/ollama.service").read_text()
    sc.write(root, "/etc/systemd/system/ollama.service",
             text.replace("[Install]", "EnvironmentFile=-/etc/default/ollama\n\n[Install]"))
    sc.write(root, "/etc/default/ollama", "HSA_OVERRIDE_GFX_VERSION=10.3.0\n")
    steps = sc.run_check(root, MISMATCH).findings[0].fix.steps
    assert steps[0] == ("As root, edit /etc/default/ollama:1 (the EnvironmentFile= of ollama.service) and remove "
                        "`HSA_OVERRIDE_GFX_VERSION=10.3.0`.")


def test_session_override_points_at_login_files_and_evidence_names_the_scope_once(root):
    sc.session_env(root, HSA_OVERRIDE_GFX_VERSION="10.3.0")
    finding = sc.run_check(root, MISMATCH).findings[0]
    assert "set in this login session" in finding.fix.steps[0] and "that program" not in finding.fix.steps[0]
    assert "is RDNA3; it is supported natively and needs no override." in finding.explanation
    assert str(finding.evidence[0]) == "/proc/self/environ: HSA_OVERRIDE_GFX_VERSION=10.3.0  (this session)"
    sc.session_env(root)
    sc.export_in_profile(root, "HSA_OVERRIDE_GFX_VERSION", "9.0.0")
    finding = sc.run_check(root, MISMATCH).findings[0]
    assert finding.evidence[0].text == "HSA_OVERRIDE_GFX_VERSION=9.0.0", "the path is not repeated as the scope"
    assert "remove `HSA_OVERRIDE_GFX_VERSION=9.0.0`" in finding.fix.steps[0]


def test_hidden_gpus_count_is_the_machines_not_the_rocr_narrowed_one(root):
    sc.add_second_gpu(root)
    sc.unit_environment(root, "ROCR_VISIBLE_DEVICES", "1")
    text = (root / "etc/systemd/system/ollama.service").read_text()
    sc.write(root, "/etc/systemd/system/ollama.service",
             text.replace("[Install]", "Environment=HIP_VISIBLE_DEVICES=1\n\n[Install]"))
    finding = next(f for f in sc.run_check(root, VISIBLE).findings if "HIP_VISIBLE_DEVICES" in f.title)
    assert "already narrowed them to 1" in finding.explanation
    assert "This machine has 2 GPU(s) in the KFD topology." in finding.explanation


# -- one sentence per gfx target, not per GPU ---------------------------------------------------------------


def _mi300x_node(tmp_path, count: int = 8):
    """The workstation turned into an Instinct node: its /sys holds ``count`` MI300X and nothing else."""
    root = sc.clean_workstation(tmp_path / "root")
    shutil.rmtree(root / "sys")
    return build_root(root, instinct_specs(tmp_path / "dumps", "mi300x", count=count), cpu_nodes=2)


def test_eight_identical_gpus_get_one_sentence(tmp_path):
    root = _mi300x_node(tmp_path)
    sc.append(root, "/etc/environment", 'HSA_OVERRIDE_GFX_VERSION="11.0.0"\n')
    finding = only_finding(sc.run_check(root, MISMATCH))
    assert finding.severity is Severity.ERROR
    text = finding.explanation.split("\n\n")[-1]
    assert text.count("11.0.0 is RDNA3") == 1, text
    assert ("11.0.0 is RDNA3, but GPUs 0–7 (gfx942, Instinct MI300X / MI300A / MI325X; KFD nodes 2–9) are CDNA3; "
            "they are supported natively and need no override.") == text
    assert "remove `HSA_OVERRIDE_GFX_VERSION=11.0.0`" in finding.fix.steps[0]


def test_mixed_targets_get_one_sentence_each(root):
    # two RX 7900 XTX (gfx1100, KFD nodes 1 and 3) and an RX 6900 XT (gfx1030, node 2) with a gfx906 value
    sc.add_second_gpu(root, "rx6900xt", pci="0000:0a:00.0")
    sc.add_second_gpu(root, "rx7900xtx", pci="0000:0d:00.0")
    sc.session_env(root, HSA_OVERRIDE_GFX_VERSION="9.0.6")
    finding = only_finding(sc.run_check(root, MISMATCH))
    text = finding.explanation.split("\n\n")[-1]
    assert text.count("9.0.6 is GCN5") == 2, text
    assert "but GPUs 0, 2 (gfx1100, " in text and "KFD nodes 1, 3) are RDNA3; they are supported natively" in text
    assert "but GPU 0000:0a:00.0 (gfx1030, " in text and "KFD node 2) is RDNA2; it is supported natively" in text
    assert "mixes GPU families" in text


def test_number_ranges():
    from rocmdesk.diagnosis.checks.environment import _numbers

    assert _numbers([3, 0, 1, 2, 5]) == "0–3, 5"
    assert _numbers([1, 3]) == "1, 3"
    assert _numbers([4, 5]) == "4, 5"
    assert _numbers([7]) == "7"


def test_one_environment_value_splitter_for_unit_scans_and_service_units():
    from rocmdesk.diagnosis.etc_parsers import systemd_environment_value
    from rocmdesk.diagnosis.services import ServiceUnit, parse_unit

    assert systemd_environment_value('"HSA_OVERRIDE_GFX_VERSION=10.3.0" ROCR_VISIBLE_DEVICES=0 junk') == [
        ("HSA_OVERRIDE_GFX_VERSION", "10.3.0"), ("ROCR_VISIBLE_DEVICES", "0")]
    assert systemd_environment_value('A="unbalanced B=1') == [("A", '"unbalanced'), ("B", "1")]
    unit = ServiceUnit("ollama.service")
    parse_unit('[Service]\nEnvironment=A="unbalanced B=1\n', "/etc/systemd/system/ollama.service", unit)
    assert {n: s.value for n, s in unit.env.items()} == {"A": '"unbalanced', "B": "1"}
