"""The diagnosis as a whole: metadata of every check, bad roots never crash, the runner's report."""

from __future__ import annotations

import os

import pytest

from rocmdesk.diagnosis.engine import AREAS, registered_checks
from rocmdesk.diagnosis.metadata import load_metadata
from rocmdesk.diagnosis.model import Severity, Status
from rocmdesk.diagnosis.runner import diagnose, rerun
from tests.support import scenarios as sc

MY_CHECKS = (
    "amdgpu-not-loaded", "amdgpu-blacklisted", "nomodeset", "secure-boot-blocks-dkms", "amdgpu-pro-leftover",
    "kfd-missing", "firmware-load-failure", "pcie-atomics-missing", "small-bar", "overdrive-enabled",
    "user-not-in-render-group", "group-not-active-in-session", "hsa-override-mismatch", "hsa-override-suggested",
    "visible-devices-hides-gpus", "wsl-environment", "xorg-driver-conflict",
)
HELPER_ACTIONS = {"modprobe-unblacklist-amdgpu", "xorg-disable-conf", "add-user-to-groups", "initramfs-add-amdgpu",
                  "initramfs-regenerate"}


@pytest.mark.parametrize("check_id", [s.id for s in registered_checks()])
def test_metadata_complete(check_id):
    meta = load_metadata()[check_id]
    assert meta.title and meta.explanation.strip()
    assert isinstance(meta.severity, Severity)
    assert meta.sources and all(isinstance(s, str) and s for s in meta.sources)
    fix = meta.fix
    assert fix is not None and fix.id and isinstance(fix.privileged, bool)
    assert fix.steps and all(isinstance(s, str) and s for s in fix.steps)
    spec = next(s for s in registered_checks() if s.id == check_id)
    assert spec.area in AREAS


def test_metadata_wording_agrees_with_the_facts():
    for check_id in MY_CHECKS:
        text = str(load_metadata()[check_id]).lower()
        assert "torch.hip" not in text and "twice" not in text
        # update-initramfs is always for the running kernel, and only once
        if "update-initramfs" in text:
            assert "-k $(uname -r)" in text
    assert "amdgpu-install --uninstall" in str(load_metadata()["amdgpu-pro-leftover"])


def _scenarios():
    def blacklist(r):
        sc.unload_amdgpu(r)
        sc.blacklist_amdgpu(r)

    def groups(r):
        sc.remove_user_from_group(r, "render")
        sc.session_groups(r, [4, sc.UID])

    def xorg(r):
        sc.xorg_conf(r, "/etc/X11/xorg.conf", "nvidia")

    return [blacklist, groups, xorg, sc.make_wsl]


@pytest.mark.parametrize("mutate", _scenarios())
def test_fix_actions_are_helper_actions(tmp_path, mutate):
    root = sc.clean_workstation(tmp_path / "r")
    mutate(root)
    report = diagnose(root)
    assert report.findings
    for finding in report.findings:
        if finding.fix and finding.fix.action and finding.fix.privileged:
            assert finding.fix.action[0] in HELPER_ACTIONS
            assert all(isinstance(a, str) for a in finding.fix.action)


def test_clean_workstation_fires_nothing(tmp_path):
    report = diagnose(sc.clean_workstation(tmp_path / "r"))
    assert report.findings == []
    assert not [r for r in report.results if r.status in (Status.FAIL, Status.ERROR)]
    # every check has its input on the clean root (initramfs image, ComfyUI venv...): none skips but the
    # hardware checks, whose inputs the real RX 7900 XTX dump lacks (no ras folder, no PCIe link files)
    assert {r.id for r in report.results if r.status is Status.SKIP} == {"gpu-ecc-errors", "pcie-link-degraded"}
    assert {r.id for r in report.results} >= set(MY_CHECKS)
    assert report.exit_code == 0
    assert report.host["kernel"] == sc.KERNEL and report.host["distro"] == "Ubuntu 24.04.1 LTS"
    assert report.host["rocm"] == "6.2.4-139"
    assert [g["pci"] for g in report.host["gpus"]] == [sc.GPU_PCI]


def test_empty_root_skips_with_reasons(tmp_path):
    report = diagnose(tmp_path)
    for r in report.results:
        if r.id in MY_CHECKS:
            assert r.status in (Status.PASS, Status.SKIP), r
            if r.status is Status.SKIP:
                assert r.reason
    assert report.host["gpus"] == []


def test_garbage_root_never_errors(tmp_path):
    root = sc.clean_workstation(tmp_path / "r")
    junk = b"\xff\xfe\x00garbage\x00\n:::\n=\n"
    for path in ("/proc/cmdline", "/proc/modules", "/proc/self/status", "/proc/self/environ", "/etc/group",
                 "/etc/passwd", "/etc/os-release", "/var/lib/dpkg/status", "/var/log/kern.log", "/dev/kfd",
                 "/sys/module/amdgpu/parameters/ppfeaturemask", "/etc/X11/xorg.conf", "/etc/environment",
                 "/sys/class/kfd/kfd/topology/nodes/1/properties", f"/home/{sc.USER}/.profile",
                 f"/sys/firmware/efi/efivars/{sc.SECURE_BOOT_NAME}", "/etc/systemd/system/ollama.service"):
        sc.write(root, path, junk)
    report = diagnose(root)
    errors = [r for r in report.results if r.id in MY_CHECKS and r.status is Status.ERROR]
    assert errors == []


def test_symlink_loops_and_folders_never_error(tmp_path):
    root = sc.clean_workstation(tmp_path / "r")
    for path in ("proc/cmdline", "etc/group", "var/lib/dpkg/status"):
        os.unlink(root / path)
        os.symlink(os.path.basename(path), root / path)  # points at itself
    (root / "etc/modprobe.d/loop.conf").symlink_to("loop.conf")
    report = diagnose(root)
    assert not [r for r in report.results if r.id in MY_CHECKS and r.status is Status.ERROR]


def test_broken_check_is_an_error_result_not_a_crash(tmp_path, monkeypatch):
    from rocmdesk.diagnosis import facts

    def boom(self):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(facts.HostFacts, "dkms_amdgpu_modules", boom)
    report = diagnose(sc.clean_workstation(tmp_path / "r"))
    result = next(r for r in report.results if r.id == "secure-boot-blocks-dkms")
    assert result.status is Status.ERROR and "disk on fire" in result.reason
    assert len(report.results) == len(registered_checks())


def test_progress_and_rerun(tmp_path):
    root = sc.clean_workstation(tmp_path / "r")
    seen = []
    report = diagnose(root, progress=lambda result, index, total: seen.append((result.id, index, total)))
    assert [s[1] for s in seen] == list(range(len(report.results)))
    assert all(s[2] == len(report.results) for s in seen)
    sc.add_cmdline(root, "nomodeset")
    again = rerun(root, "nomodeset")
    assert again.status is Status.FAIL
    report.replace_result(again)
    assert next(r for r in report.results if r.id == "nomodeset").status is Status.FAIL
    assert report.to_json()["findings"][0]["id"] == "nomodeset"


def test_exit_code_follows_error_findings(tmp_path):
    root = sc.clean_workstation(tmp_path / "r")
    sc.kernel_log(root, "[drm] Detected VRAM RAM=8176M, BAR=256M")
    report = diagnose(root)
    assert [f.id for f in report.findings] == ["small-bar"] and report.exit_code == 0
    sc.remove_kfd(root)
    assert diagnose(root).exit_code == 1
