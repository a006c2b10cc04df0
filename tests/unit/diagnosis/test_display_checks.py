"""Display check: Xorg configurations and logs that force the wrong DDX."""

from __future__ import annotations

import pytest

from rocmdesk.diagnosis.checks.display import parse_bus_id, parse_xorg_conf, scan_xorg_log
from rocmdesk.diagnosis.model import Severity, Status
from tests.support import scenarios as sc
from tests.support.scenarios import only_finding

XORG = "xorg-driver-conflict"


@pytest.fixture
def root(tmp_path):
    return sc.clean_workstation(tmp_path / "root")


def test_clean_workstation_passes(root):
    # ships 10-amdgpu.conf and radeon's own OutputClass (MatchDriver "radeon"), and a log that loads
    # and unloads fbdev/vesa while probing: none of it is a conflict
    result = sc.run_check(root, XORG)
    assert result.status is Status.PASS


def test_leftover_nvidia_xorg_conf(root):
    sc.xorg_conf(root, "/etc/X11/xorg.conf", "nvidia")
    sc.xorg_log(root, '(EE) Failed to load module "nvidia" (module does not exist, 0)',
                "(EE) No devices detected.", "Fatal server error:", "(EE) no screens found(EE)")
    result = sc.run_check(root, XORG)
    assert result.status is Status.FAIL
    finding = result.findings[0]
    assert finding.severity is Severity.WARNING
    assert (finding.evidence[0].path, finding.evidence[0].line) == ("/etc/X11/xorg.conf", 3)
    assert finding.evidence[0].text == 'Driver "nvidia"'
    assert finding.fix.action == ("xorg-disable-conf", "/etc/X11/xorg.conf") and finding.fix.privileged
    log_lines = [e for e in finding.evidence if e.path == "/var/log/Xorg.0.log"]
    assert any("Failed to load module" in e.text for e in log_lines)
    assert any("no screens found" in e.text for e in log_lines)


def test_nvidia_conf_with_nvidia_gpu_present_is_fine(root):
    sc._pci_device(root, "0000:0b:00.0", 0x10DE, 0x2684, 0x030000, "nvidia")
    sc.xorg_conf(root, "/etc/X11/xorg.conf", "nvidia", extra='\n    BusID "PCI:11:0:0"')
    assert sc.run_check(root, XORG).status is Status.PASS


def test_nvidia_outputclass_for_nvidia_drm_only_is_harmless(root):
    sc.write(root, "/usr/share/X11/xorg.conf.d/10-nvidia.conf",
             'Section "OutputClass"\n    Identifier "nvidia"\n    MatchDriver "nvidia-drm"\n    Driver "nvidia"\n'
             'EndSection\n')
    assert sc.run_check(root, XORG).status is Status.PASS


@pytest.mark.parametrize("driver", ["radeon", "fbdev", "vesa"])
def test_wrong_ddx_on_amdgpu(root, driver):
    path = f"/etc/X11/xorg.conf.d/20-{driver}.conf"
    sc.xorg_conf(root, path, driver)
    finding = sc.run_check(root, XORG).findings[0]
    assert finding.evidence[0].path == path
    assert finding.fix.action == ("xorg-disable-conf", path)
    assert driver in finding.explanation


@pytest.mark.parametrize("driver", ["amdgpu", "modesetting"])
def test_good_ddx(root, driver):
    sc.xorg_conf(root, "/etc/X11/xorg.conf", driver)
    assert sc.run_check(root, XORG).status is Status.PASS


def test_radeon_device_for_another_card_is_fine(root):
    sc._pci_device(root, "0000:0c:00.0", 0x1002, 0x6798, 0x030000, "radeon")  # an old HD 7970 on radeon
    sc.xorg_conf(root, "/etc/X11/xorg.conf", "radeon", extra='\n    BusID "PCI:12:0:0"')
    assert sc.run_check(root, XORG).status is Status.PASS
    sc.xorg_conf(root, "/etc/X11/xorg.conf", "radeon", extra='\n    BusID "PCI:3:0:0"')
    assert sc.run_check(root, XORG).status is Status.FAIL


def test_package_file_gets_manual_fix(root):
    sc.write(root, "/usr/share/X11/xorg.conf.d/99-force.conf",
             'Section "OutputClass"\n  Identifier "x"\n  MatchDriver "amdgpu"\n  Driver "fbdev"\nEndSection\n')
    finding = sc.run_check(root, XORG).findings[0]
    assert finding.fix.action is None and "dpkg -S" in finding.fix.steps[0]


def test_commented_driver_line_is_ignored(root):
    sc.write(root, "/etc/X11/xorg.conf", 'Section "Device"\n  Identifier "c"\n  # Driver "nvidia"\nEndSection\n')
    assert sc.run_check(root, XORG).status is Status.PASS


def test_fbdev_fallback_in_rootless_log(root):
    # no configuration forces a driver: with amdgpu loaded the fallback line is from another boot, no finding
    sc.xorg_log(root, "(II) FBDEV(0): using default device",
                path=f"/home/{sc.USER}/.local/share/xorg/Xorg.0.log")
    assert sc.run_check(root, XORG).status is Status.PASS
    # without amdgpu it is the Driver finding's consequence: information that points there, nothing to edit in X
    sc.unload_amdgpu(root)
    finding = only_finding(sc.run_check(root, XORG))
    assert finding.severity is Severity.INFO
    assert finding.evidence[0].path == f"/home/{sc.USER}/.local/share/xorg/Xorg.0.log"
    assert not finding.fix.privileged and "amdgpu-not-loaded" in finding.fix.steps[0]
    assert "nothing to change in the Xorg configuration" in finding.explanation


def test_no_x_at_all_skips(root):
    import shutil

    shutil.rmtree(root / "usr/share/X11")
    shutil.rmtree(root / "etc/X11")
    (root / f"home/{sc.USER}/.local/share/xorg/Xorg.0.log").unlink()
    result = sc.run_check(root, XORG)
    assert result.status is Status.SKIP and "Wayland" in result.reason


def test_unreadable_config_is_not_a_crash(root):
    (root / "etc/X11/xorg.conf").mkdir(parents=True)  # a folder where the file should be
    assert sc.run_check(root, XORG).status is Status.PASS


def test_parse_xorg_conf():
    text = ('# comment\nsection "device"\n  identifier "a # b"\n  DRIVER "Radeon" # forced\n  BusID "PCI:1@2:0:0"\n'
            'EndSection\nSection "OutputClass"\n  MatchDriver "amdgpu|radeon"\n  Driver "amdgpu"\nEndSection\n'
            'Driver "stray"\n')
    sections = parse_xorg_conf(text, "/x")
    assert [(s.kind.lower(), s.driver, s.driver_line) for s in sections] == [("device", "radeon", 4),
                                                                             ("outputclass", "amdgpu", 9)]
    assert sections[1].match_driver == ["amdgpu", "radeon"]
    assert parse_bus_id(sections[0].bus_id) == (2, 1, 0, 0)
    assert parse_bus_id("garbage") is None


def test_scan_xorg_log_kinds():
    hits = scan_xorg_log('[1] (EE) Failed to load module "nvidia" (x)\n[2] (II) VESA(0): VESA BIOS\n[3] ok\n', "/l")
    assert [(h.line, h.kind) for h in hits] == [(1, "nvidia-missing"), (2, "fallback")]


def test_fix_step_names_the_file_the_helper_creates(root):
    import re
    from pathlib import Path

    sc.xorg_conf(root, "/etc/X11/xorg.conf", "nvidia")
    finding = sc.run_check(root, "xorg-driver-conflict").findings[0]
    helper = (Path(__file__).resolve().parents[3] / "helper" / "rocmdesk-helper").read_text()
    suffix = re.search(r'^DISABLED_SUFFIX = "([^"]+)"', helper, re.M).group(1)
    assert f"/etc/X11/xorg.conf{suffix}" in finding.fix.steps[0] and ".bak" not in finding.fix.steps[0]
