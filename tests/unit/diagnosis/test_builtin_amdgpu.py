"""amdgpu built into the kernel: modprobe.d never reaches it, only amdgpu.<param>= on the command line does
(kernel-parameters.rst: "Parameters for modules which are built into the kernel need to be specified on the
kernel command line"; kmod's modprobe does nothing for a built-in module)."""

from __future__ import annotations

import pytest

from rocmdesk.diagnosis.facts import HostFacts
from rocmdesk.diagnosis.model import Severity, Status
from rocmdesk.host import HostRoot
from tests.support import scenarios as sc

OVERDRIVE = "overdrive-enabled"
BLACKLIST = "amdgpu-blacklisted"


@pytest.fixture()
def root(tmp_path):
    root = sc.clean_workstation(tmp_path / "root")
    sc.build_amdgpu_in(root)
    return root


def test_builtin_is_read_from_modules_builtin(root, tmp_path):
    facts = HostFacts(HostRoot(root))
    line = facts.amdgpu_builtin
    assert line is not None and line.text == "kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko" and line.line == 2
    assert facts.amdgpu_loaded  # built in: parameters, no initstate
    clean = sc.clean_workstation(tmp_path / "clean")
    assert HostFacts(HostRoot(clean)).amdgpu_builtin is None  # the list exists and holds no amdgpu


def test_config_is_the_fallback_when_modules_builtin_is_missing(root):
    (root / f"usr/lib/modules/{sc.KERNEL}/modules.builtin").unlink()
    line = HostFacts(HostRoot(root)).amdgpu_builtin
    assert line is not None and line.path == f"/boot/config-{sc.KERNEL}" and line.text == "CONFIG_DRM_AMDGPU=y"


def test_modprobe_options_do_not_count_for_a_builtin_amdgpu(root):
    sc.write(root, "/etc/modprobe.d/amdgpu.conf", "options amdgpu ppfeaturemask=0xffffffff\n")
    sc.set_ppfeaturemask(root, "0xffffffff")  # also on the command line: that one is what counts
    facts = HostFacts(HostRoot(root))
    assert [(p.name, p.on_cmdline) for p in facts.module_params("amdgpu")] == [("ppfeaturemask", True)]
    finding = sc.run_check(root, OVERDRIVE).findings[0]
    steps = " ".join(finding.fix.steps)
    assert "/etc/modprobe.d/amdgpu.conf" not in steps and "initramfs" not in steps
    assert "amdgpu.ppfeaturemask=0xffffffff" in steps  # take it off the command line
    assert "built into this kernel" in finding.explanation
    ignored = [e for e in finding.evidence if e.path == "/etc/modprobe.d/amdgpu.conf"]
    assert ignored and "not applied: amdgpu is built in" in ignored[0].text


def test_overdrive_without_any_setting_found(root, tmp_path):
    sc.write(root, "/sys/module/amdgpu/parameters/ppfeaturemask", "0xffffffff\n")
    finding = sc.run_check(root, OVERDRIVE).findings[0]
    steps = " ".join(finding.fix.steps)
    assert "boot loader entry" in steps and "modprobe.d" not in steps and "initramfs" not in steps
    # a loadable amdgpu: the setting can hide in the initramfs' modprobe.d copy, so rebuild it
    module = sc.clean_workstation(tmp_path / "m")
    sc.write(module, "/sys/module/amdgpu/parameters/ppfeaturemask", "0xffffffff\n")
    finding = sc.run_check(module, OVERDRIVE).findings[0]
    assert finding.fix.steps[0] == ("Regenerate the running kernel's initramfs once: "
                                    f"`sudo update-initramfs -u -k {sc.KERNEL}`.")
    assert "initramfs-stale" in finding.explanation


def test_a_blacklist_does_not_stop_a_builtin_amdgpu(root):
    sc.blacklist_amdgpu(root)
    sc.add_cmdline(root, "modprobe.blacklist=amdgpu")
    result = sc.run_check(root, BLACKLIST)
    assert result.status is Status.FAIL and len(result.findings) == 2
    for finding in result.findings:
        assert finding.severity is Severity.INFO
        assert "initcall_blacklist=amdgpu_init" in finding.explanation
        assert "does nothing on this kernel" in finding.explanation


def test_initramfs_checks_skip_a_builtin_amdgpu(root):
    assert "built into kernel" in sc.run_check(root, "initramfs-stale").reason
