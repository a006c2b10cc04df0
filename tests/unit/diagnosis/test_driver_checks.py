"""Driver checks: each fires on its scenario and stays silent on the clean workstation."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from rocmdesk.diagnosis.model import Severity, Status
from rocmdesk.host import HostReadError, HostRoot, ReadFailure, RecordedRunner
from tests.support import scenarios as sc
from tests.support.host_faults import deny_reads
from tests.support.initramfs_images import install_matching_initramfs
from tests.support.scenarios import only_finding


@pytest.fixture
def root(tmp_path):
    return sc.clean_workstation(tmp_path / "root")


# -- amdgpu-not-loaded ---------------------------------------------------------------------------


def test_not_loaded_fires_when_gpu_unbound(root):
    sc.unload_amdgpu(root)
    finding = only_finding(sc.run_check(root, "amdgpu-not-loaded"))
    assert finding.severity is Severity.ERROR
    assert finding.subject == sc.GPU_PCI
    texts = [e.text for e in finding.evidence]
    assert any("1002:744c" in t and "no driver bound" in t for t in texts)
    assert any(t == "amdgpu is not listed" for t in texts)
    assert "0000:03:00.1" not in finding.subject  # the GPU's HDMI audio function is not a GPU


def test_not_loaded_mentions_radeon_binding(root):
    sc.unbind_gpu(root, driver="radeon")
    finding = only_finding(sc.run_check(root, "amdgpu-not-loaded"))
    assert any("bound to radeon" in e.text for e in finding.evidence)
    assert "radeon" in finding.explanation


def test_vfio_passthrough_is_only_info(root):
    sc.unbind_gpu(root, driver="vfio-pci")
    finding = only_finding(sc.run_check(root, "amdgpu-not-loaded"))
    assert finding.severity is Severity.INFO and "vfio-pci" in finding.explanation


def test_not_loaded_silent_on_clean_and_without_amd_gpu(root, tmp_path):
    assert sc.run_check(root, "amdgpu-not-loaded").status is Status.PASS
    bare = tmp_path / "bare"
    (bare / "sys" / "bus" / "pci" / "devices").mkdir(parents=True)
    result = sc.run_check(bare, "amdgpu-not-loaded")
    assert result.status is Status.PASS and "no AMD" in result.reason


def test_not_loaded_skips_without_pci_folder(tmp_path):
    result = sc.run_check(tmp_path, "amdgpu-not-loaded")
    assert result.status is Status.SKIP and "/sys/bus/pci/devices" in result.reason


# -- amdgpu-blacklisted ----------------------------------------------------------------------------


def test_blacklist_in_etc_offers_helper_fix(root):
    sc.unload_amdgpu(root)
    sc.blacklist_amdgpu(root)
    finding = only_finding(sc.run_check(root, "amdgpu-blacklisted"))
    assert finding.severity is Severity.ERROR
    assert finding.evidence[0].path == "/etc/modprobe.d/blacklist-amdgpu.conf"
    assert finding.evidence[0].line == 2
    assert finding.evidence[0].text == "blacklist amdgpu"
    assert finding.fix.privileged
    assert finding.fix.action == ("modprobe-unblacklist-amdgpu", "/etc/modprobe.d/blacklist-amdgpu.conf")
    steps = " ".join(finding.fix.steps)
    assert f"`sudo update-initramfs -u -k {sc.KERNEL}`" in steps  # the running kernel's image, with sudo
    assert steps.count("update-initramfs") == 1


def test_install_false_in_usr_lib_is_manual(root):
    sc.unload_amdgpu(root)
    sc.blacklist_amdgpu(root, "/usr/lib/modprobe.d/amdgpu-off.conf", "install amdgpu /bin/false")
    finding = only_finding(sc.run_check(root, "amdgpu-blacklisted"))
    # /lib is a symlink to /usr/lib in the workstation: reported once, under its first name
    assert finding.evidence[0].path == "/usr/lib/modprobe.d/amdgpu-off.conf"
    assert finding.fix.action is None
    assert "dpkg -S" in " ".join(finding.fix.steps)


def test_same_name_in_etc_masks_usr_lib(root):
    sc.blacklist_amdgpu(root, "/usr/lib/modprobe.d/amdgpu-off.conf", "install amdgpu /bin/true")
    sc.write(root, "/etc/modprobe.d/amdgpu-off.conf", "")
    assert sc.run_check(root, "amdgpu-blacklisted").status is Status.PASS


def test_blacklist_on_cmdline(root):
    sc.unload_amdgpu(root)
    sc.add_cmdline(root, "modprobe.blacklist=nouveau,amdgpu")
    finding = only_finding(sc.run_check(root, "amdgpu-blacklisted"))
    assert finding.evidence[0].path == "/proc/cmdline"
    assert any(e.path == "/etc/default/grub" for e in finding.evidence)
    assert finding.fix.id == "remove-kernel-arg" and finding.fix.action is None
    assert any("update-grub" in s for s in finding.fix.steps)


def test_blacklist_while_loaded_is_a_warning(root):
    sc.blacklist_amdgpu(root)
    finding = only_finding(sc.run_check(root, "amdgpu-blacklisted"))
    assert finding.severity is Severity.WARNING
    assert "loaded right now" in finding.explanation


def test_blacklist_on_a_kubernetes_node_while_loaded_is_left_to_the_gpu_operator(root):
    sc.blacklist_amdgpu(root)
    (root / "var/lib/kubelet").mkdir(parents=True)
    finding = only_finding(sc.run_check(root, "amdgpu-blacklisted"))
    assert finding.severity is Severity.INFO and finding.fix.action is None
    assert finding.fix.steps[0].startswith("If AMD's GPU Operator manages this node, leave the blacklist")
    assert any(e.path == "/var/lib/kubelet" for e in finding.evidence)
    sc.unload_amdgpu(root)  # nothing loaded it: the GPU is dark, but the blacklist may still be the operator's
    finding = only_finding(sc.run_check(root, "amdgpu-blacklisted"))
    assert finding.severity is Severity.ERROR and finding.fix.action is None
    assert "look at the operator's driver pods instead" in finding.explanation
    shutil.rmtree(root / "var/lib/kubelet")  # not a Kubernetes node: the one-click removal again
    assert only_finding(sc.run_check(root, "amdgpu-blacklisted")).fix.action is not None


def test_blacklist_written_after_the_image_says_the_image_loaded_amdgpu(root):
    # the image holds amdgpu and no copy of the newer file: the boot loaded amdgpu from it (ROCm/gpu-operator#330)
    path = sc.blacklist_amdgpu(root)
    image = root / f"boot/initrd.img-{sc.KERNEL}"
    os.utime(path, (image.stat().st_mtime + 600,) * 2)
    details = only_finding(sc.run_check(root, "amdgpu-blacklisted")).explanation.split("\n\n")[-1]
    assert details.startswith("amdgpu is loaded right now because the initramfs loaded it at boot")
    assert "not /etc/modprobe.d/blacklist-amdgpu.conf, which was written after the image was built" in details
    assert "modprobe amdgpu" not in details


def test_blacklist_already_in_the_image_while_loaded_means_an_explicit_modprobe(root):
    sc.blacklist_amdgpu(root)
    install_matching_initramfs(root, sc.KERNEL)  # rebuilt after the line: the image blacklists amdgpu too
    details = only_finding(sc.run_check(root, "amdgpu-blacklisted")).explanation.split("\n\n")[-1]
    assert "something ran `modprobe amdgpu` explicitly" in details and "initramfs" not in details


def test_image_copy_without_the_line_is_named(root):
    sc.blacklist_amdgpu(root, line="options amdgpu ppfeaturemask=0xfff7bfff")
    install_matching_initramfs(root, sc.KERNEL)  # the image's copy of the file has no blacklist line
    sc.blacklist_amdgpu(root)
    details = only_finding(sc.run_check(root, "amdgpu-blacklisted")).explanation.split("\n\n")[-1]
    assert "its copy of /etc/modprobe.d/blacklist-amdgpu.conf does not blacklist it" in details


@pytest.mark.parametrize("line", ["# blacklist amdgpu", "blacklist amdgpu_foo", "blacklist radeon",
                                  "options amdgpu si_support=1",
                                  "install amdgpu /sbin/modprobe --ignore-install amdgpu"])
def test_blacklist_near_misses_do_not_fire(root, line):
    sc.blacklist_amdgpu(root, line=line)
    assert sc.run_check(root, "amdgpu-blacklisted").status is Status.PASS


def test_blacklist_continuation_line(root):
    sc.write(root, "/etc/modprobe.d/x.conf", "install amdgpu \\\n  /bin/false\n")
    finding = only_finding(sc.run_check(root, "amdgpu-blacklisted"))
    assert finding.evidence[0].line == 1


# -- nomodeset ---------------------------------------------------------------------------------------


def test_nomodeset_fires_with_grub_line(root):
    sc.unload_amdgpu(root)
    sc.add_cmdline(root, "nomodeset")
    finding = only_finding(sc.run_check(root, "nomodeset"))
    assert finding.severity is Severity.ERROR
    assert {e.path for e in finding.evidence} == {"/proc/cmdline", "/etc/default/grub"}
    grub = next(e for e in finding.evidence if e.path == "/etc/default/grub")
    assert grub.line == 5 and "nomodeset" in grub.text
    assert any("update-grub" in s for s in finding.fix.steps)


def test_amdgpu_modeset_0_fires(root):
    sc.add_cmdline(root, "amdgpu.modeset=0")
    finding = only_finding(sc.run_check(root, "nomodeset"))
    assert "amdgpu.modeset=0" in finding.evidence[0].text


def test_modeset_1_overrides_nomodeset_when_loaded(root):
    sc.add_cmdline(root, "nomodeset", "amdgpu.modeset=1")
    result = sc.run_check(root, "nomodeset")
    assert result.status is Status.PASS and "overrides" in result.reason


def test_modeset_1_did_not_help_on_this_kernel(root):
    sc.unload_amdgpu(root)
    sc.add_cmdline(root, "nomodeset", "amdgpu.modeset=1")
    finding = only_finding(sc.run_check(root, "nomodeset"))
    assert "newer kernels" in finding.explanation


def test_nomodeset_while_loaded_is_warning(root):
    sc.add_cmdline(root, "nomodeset")
    assert only_finding(sc.run_check(root, "nomodeset")).severity is Severity.WARNING


def test_nomodeset_skips_without_cmdline(root):
    (root / "proc" / "cmdline").unlink()
    result = sc.run_check(root, "nomodeset")
    assert result.status is Status.SKIP and "no such file" in result.reason


def test_fedora_fix_uses_grubby(root):
    sc.write(root, "/etc/os-release", 'NAME="Fedora Linux"\nID=fedora\nVERSION_ID=41\n')
    sc.add_cmdline(root, "nomodeset")
    steps = only_finding(sc.run_check(root, "nomodeset")).fix.steps
    assert any("grubby --update-kernel=ALL --remove-args=nomodeset" in s for s in steps)


# -- secure-boot-blocks-dkms -----------------------------------------------------------------------------


def test_secure_boot_blocks_dkms(root):
    sc.install_dkms_amdgpu(root)
    sc.unload_amdgpu(root)
    sc.kernel_log(root, "modprobe: ERROR: could not insert 'amdgpu': Key was rejected by service")
    finding = only_finding(sc.run_check(root, "secure-boot-blocks-dkms"))
    assert finding.severity is Severity.ERROR
    paths = [e.path for e in finding.evidence]
    assert f"/usr/lib/modules/{sc.KERNEL}/updates/dkms/amdgpu.ko.zst" in paths
    assert any("Key was rejected" in e.text for e in finding.evidence)
    assert "mokutil --import /var/lib/shim-signed/mok/MOK.der" in finding.fix.steps[0]
    assert finding.fix.action is None  # needs a reboot with console interaction


@pytest.mark.parametrize("change,reason", [
    (lambda r: sc.set_secure_boot(r, False), "Secure Boot is off"),
    (lambda r: None, "is loaded"),
])
def test_secure_boot_silent(root, change, reason):
    sc.install_dkms_amdgpu(root)
    change(root)
    result = sc.run_check(root, "secure-boot-blocks-dkms")
    assert result.status is Status.PASS and reason in result.reason


def test_secure_boot_without_dkms_passes(root):
    sc.unload_amdgpu(root)
    result = sc.run_check(root, "secure-boot-blocks-dkms")
    assert result.status is Status.PASS and "in-tree" in result.reason


def test_secure_boot_unreadable_efivar_skips(root, monkeypatch):
    sc.install_dkms_amdgpu(root)
    sc.unload_amdgpu(root)
    deny_reads(monkeypatch, "read_bytes", lambda path: "SecureBoot" in path,
               lambda path: HostReadError(ReadFailure.PERMISSION, path))
    result = sc.run_check(root, "secure-boot-blocks-dkms")
    assert result.status is Status.SKIP and "permission denied" in result.reason


def test_secure_boot_truncated_efivar_skips(root):
    sc.install_dkms_amdgpu(root)
    sc.unload_amdgpu(root)
    sc.write(root, f"/sys/firmware/efi/efivars/{sc.SECURE_BOOT_NAME}", b"\x06\x00")
    assert sc.run_check(root, "secure-boot-blocks-dkms").status is Status.SKIP


# -- amdgpu-pro-leftover ---------------------------------------------------------------------------------


def test_pro_leftover_fires(root):
    sc.install_amdgpu_pro(root)
    finding = only_finding(sc.run_check(root, "amdgpu-pro-leftover"))
    assert finding.severity is Severity.WARNING
    status_lines = (root / "var/lib/dpkg/status").read_text().splitlines()
    for e in finding.evidence:
        if e.path == "/var/lib/dpkg/status":
            assert status_lines[e.line - 1].startswith("Package: ") and "amdgpu-pro" in status_lines[e.line - 1]
    assert any(e.path == "/opt/amdgpu-pro" for e in finding.evidence)
    assert any("amdgpu-install --uninstall" in s for s in finding.fix.steps)


def test_rocm_installer_stack_is_not_a_leftover(root):
    sc.install_dkms_amdgpu(root)  # amdgpu-dkms + amdgpu-core + amdgpu-install: the normal ROCm stack
    result = sc.run_check(root, "amdgpu-pro-leftover")
    assert result.status is Status.PASS


def test_pro_without_rocm_passes(root):
    sc.install_amdgpu_pro(root)
    (root / "opt" / "rocm").unlink()
    import shutil
    shutil.rmtree(root / "opt" / "rocm-6.2.4")
    text = (root / "var/lib/dpkg/status").read_text()
    blocks = [b for b in text.split("\n\n") if b.strip() and "Package: rocm" not in b and "hip-runtime" not in b]
    sc.write(root, "/var/lib/dpkg/status", "\n\n".join(blocks) + "\n\n")
    result = sc.run_check(root, "amdgpu-pro-leftover")
    assert result.status is Status.PASS and "ROCm is not" in result.reason


def test_pro_leftover_from_recorded_rpm(root):
    (root / "var/lib/dpkg/status").unlink()
    runner = RecordedRunner()
    runner.add(["/usr/bin/rpm", "-qa", "--qf", "%{NAME}\n"], stdout="rocm-core\namdgpu-pro-core\nbash\n")
    finding = only_finding(sc.run_check(root, "amdgpu-pro-leftover", runner=runner))
    assert any("amdgpu-pro-core" in e.text for e in finding.evidence)


def test_pro_leftover_skips_without_package_database(root):
    (root / "var/lib/dpkg/status").unlink()
    result = sc.run_check(root, "amdgpu-pro-leftover")
    assert result.status is Status.SKIP and "package database" in result.reason


def test_pro_leftover_from_snapshot_commands_json(root):
    (root / "var/lib/dpkg/status").unlink()
    rec = RecordedRunner()
    rec.add(["/usr/bin/pacman", "-Qq"], stdout="rocm-hip-runtime\namdgpu-pro-oglp\n")
    sc.write(root, "/rocmdesk/commands.json", json.dumps(rec.to_json()))
    from rocmdesk.diagnosis.context import DiagnosisContext
    from rocmdesk.diagnosis.engine import registered_checks, run_checks

    ctx = DiagnosisContext(HostRoot(root))  # runner_for(root) replays the snapshot's recordings
    result = run_checks(ctx, specs=[s for s in registered_checks() if s.id == "amdgpu-pro-leftover"])[0]
    assert result.status is Status.FAIL


# -- kfd-missing ---------------------------------------------------------------------------------------------


def test_kfd_missing_fires(root):
    sc.remove_kfd(root)
    finding = only_finding(sc.run_check(root, "kfd-missing"))
    assert any(e.path == "/dev/kfd" for e in finding.evidence)
    assert any(e.path == "/proc/modules" and e.text == "amdgpu is listed" for e in finding.evidence)


def test_kfd_missing_kernel_without_hsa_and_container(root):
    sc.remove_kfd(root)
    sc.write(root, f"/boot/config-{sc.KERNEL}", "CONFIG_DRM_AMDGPU=m\n# CONFIG_HSA_AMD is not set\n")
    finding = only_finding(sc.run_check(root, "kfd-missing"))
    assert any(e.path == f"/boot/config-{sc.KERNEL}" and e.line == 2 for e in finding.evidence)
    assert "CONFIG_HSA_AMD" in finding.explanation
    # inside a container the run line is the cause: container-devices-not-passed answers (issue 16)
    sc.write(root, "/.dockerenv", "")
    result = sc.run_check(root, "kfd-missing")
    assert result.status is Status.SKIP and "container-devices-not-passed" in result.reason
    devices = only_finding(sc.run_check(root, "container-devices-not-passed"))
    assert "--device=/dev/kfd" in " ".join(devices.fix.steps)


def test_kfd_present_as_regular_file_passes(root):
    sc.write(root, "/dev/kfd", "")
    assert sc.run_check(root, "kfd-missing").status is Status.PASS


def test_kfd_builtin_amdgpu_counts_as_loaded(root):
    sc.remove_kfd(root)
    sc.write(root, "/proc/modules", "nvme 61440 3 - Live 0x0\n")
    (root / "sys/module/amdgpu/initstate").unlink()  # built in: parameters only
    assert sc.run_check(root, "kfd-missing").status is Status.FAIL


def test_kfd_skips_when_not_loaded_or_no_dev(root, tmp_path):
    sc.unload_amdgpu(root)
    assert sc.run_check(root, "kfd-missing").status is Status.SKIP
    assert sc.run_check(tmp_path / "nothing", "kfd-missing").status is Status.SKIP


# -- kernel log checks ---------------------------------------------------------------------------------------


def test_firmware_failure_current_boot_only(root):
    # the clean root's previous boot had a firmware failure: ignored
    assert sc.run_check(root, "firmware-load-failure").status is Status.PASS
    sc.kernel_log(root, "amdgpu 0000:03:00.0: Direct firmware load for amdgpu/gc_11_0_0_mes_2.bin failed "
                        "with error -2")
    finding = only_finding(sc.run_check(root, "firmware-load-failure"))
    assert finding.evidence[0].path == "/var/log/kern.log"
    lines = (root / "var/log/kern.log").read_text().splitlines()
    assert "gc_11_0_0_mes_2.bin" in lines[finding.evidence[0].line - 1]
    assert "amdgpu/gc_11_0_0_mes_2.bin" in finding.explanation


def test_firmware_failure_from_recorded_dmesg(root):
    (root / "var/log/kern.log").unlink()
    runner = RecordedRunner()
    runner.add(["/usr/bin/dmesg"], stdout="[    0.000000] Linux version 6.8.0\n"
               "[    3.1] amdgpu 0000:03:00.0: Direct firmware load for amdgpu/psp_13_0_0_sos.bin "
               "failed with error -2\n")
    finding = only_finding(sc.run_check(root, "firmware-load-failure", runner=runner))
    assert finding.evidence[0].path == "/usr/bin/dmesg (output)" and finding.evidence[0].line == 2


def test_kernel_log_checks_skip_without_log(root):
    (root / "var/log/kern.log").unlink()
    for check_id in ("firmware-load-failure", "pcie-atomics-missing", "small-bar"):
        result = sc.run_check(root, check_id)
        assert result.status is Status.SKIP and "kernel log" in result.reason


def test_kernel_log_unreadable_skips(root):
    os.unlink(root / "var/log/kern.log")
    os.mkdir(root / "var/log/kern.log")  # a folder where the file should be
    assert sc.run_check(root, "pcie-atomics-missing").status is Status.SKIP


def test_pcie_atomics(root):
    assert sc.run_check(root, "pcie-atomics-missing").status is Status.PASS
    sc.kernel_log(root, "kfd kfd: amdgpu: skipped device 1002:67e3, PCI rejects atomics 730<0")
    finding = only_finding(sc.run_check(root, "pcie-atomics-missing"))
    assert "PCI rejects atomics" in finding.evidence[0].text and finding.severity is Severity.ERROR


def test_small_bar(root):
    assert sc.run_check(root, "small-bar").status is Status.PASS  # BAR=32768M on the clean root
    sc.kernel_log(root, "[drm] Detected VRAM RAM=8176M, BAR=256M")
    finding = only_finding(sc.run_check(root, "small-bar"))
    assert finding.severity is Severity.INFO and "BAR=256M" in finding.evidence[0].text


def test_small_bar_without_a_failed_resize_has_no_resize_words(root):
    sc.kernel_log(root, "[drm] Detected VRAM RAM=8176M, BAR=256M",
                  "amdgpu 0000:03:00.0: BAR 2: failed to assign [mem size 0x00200000 64bit pref]")  # not BAR 0
    finding = only_finding(sc.run_check(root, "small-bar"))
    assert len(finding.evidence) == 1 and "tried to enlarge" not in finding.explanation


def test_small_bar_on_small_vram_apu_is_fine(root):
    sc.kernel_log(root, "[drm] Detected VRAM RAM=256M, BAR=256M")
    assert sc.run_check(root, "small-bar").status is Status.PASS


@pytest.mark.parametrize("value,fires", [("0xfff7bfff", False), ("0xffffbfff", False), ("0xffffffff", True),
                                         ("0xfff7ffff", True), ("4294967295", True), ("4294950911", False)])
def test_overdrive_bit_14(root, value, fires):
    sc.set_ppfeaturemask(root, value)
    result = sc.run_check(root, "overdrive-enabled")
    assert result.status is (Status.FAIL if fires else Status.PASS)
    if fires:
        finding = result.findings[0]
        assert finding.severity is Severity.INFO
        assert any(e.path == "/proc/cmdline" for e in finding.evidence)
        assert "PowerPlay" in finding.explanation


def test_overdrive_from_modprobe_options(root):
    sc.set_ppfeaturemask(root, "0xffffffff", on_cmdline=False)
    sc.write(root, "/etc/modprobe.d/amdgpu.conf", "options amdgpu ppfeaturemask=0xffffffff\n")
    finding = only_finding(sc.run_check(root, "overdrive-enabled"))
    assert any(e.path == "/etc/modprobe.d/amdgpu.conf" and e.line == 1 for e in finding.evidence)


def test_overdrive_garbage_and_missing_skip(root):
    sc.write(root, "/sys/module/amdgpu/parameters/ppfeaturemask", "12ab\n")
    assert sc.run_check(root, "overdrive-enabled").status is Status.SKIP
    (root / "sys/module/amdgpu/parameters/ppfeaturemask").unlink()
    assert sc.run_check(root, "overdrive-enabled").status is Status.SKIP


# -- review fixes ------------------------------------------------------------------------------------


def test_not_loaded_fires_for_unbound_instinct_accelerator(root):
    # MI300X/MI325X report PCI class 0x1200 (processing accelerator), not 0x03 (apache/cloudstack#11701)
    sc.unload_amdgpu(root)
    dev = (root / "sys/bus/pci/devices" / sc.GPU_PCI).resolve()
    (dev / "class").write_text("0x120000\n")
    (dev / "device").write_text("0x74a1\n")
    finding = only_finding(sc.run_check(root, "amdgpu-not-loaded"))
    assert finding.severity is Severity.ERROR and finding.subject == sc.GPU_PCI
    assert any("class 0x120000" in e.text for e in finding.evidence)


def test_cmdline_blacklist_fix_keeps_the_other_modules(root):
    sc.unload_amdgpu(root)
    sc.add_cmdline(root, "modprobe.blacklist=amdgpu,nouveau")
    steps = " ".join(only_finding(sc.run_check(root, "amdgpu-blacklisted")).fix.steps)
    assert "replace `modprobe.blacklist=amdgpu,nouveau` with `modprobe.blacklist=nouveau`" in steps
    sc.write(root, "/etc/os-release", 'ID=fedora\nNAME="Fedora Linux"\n')
    steps = only_finding(sc.run_check(root, "amdgpu-blacklisted")).fix.steps
    assert steps[0] == "Run `sudo grubby --update-kernel=ALL --remove-args=modprobe.blacklist=amdgpu,nouveau`."
    assert "--args=modprobe.blacklist=nouveau" in steps[1]


def test_cmdline_blacklist_of_amdgpu_alone_is_removed(root):
    sc.unload_amdgpu(root)
    sc.add_cmdline(root, "module_blacklist=amdgpu")
    steps = " ".join(only_finding(sc.run_check(root, "amdgpu-blacklisted")).fix.steps)
    assert "delete `module_blacklist=amdgpu`" in steps and "replace" not in steps


def test_firmware_failure_on_a_working_gpu_is_a_warning(root):
    # AMD: a missing PSP TA file "is not a requirement for basic ROCm functionality" (legacy-rocm-build#912)
    sc.kernel_log(root, "amdgpu 0000:03:00.0: Direct firmware load for amdgpu/psp_13_0_0_ta.bin failed with error -2")
    finding = only_finding(sc.run_check(root, "firmware-load-failure"))
    assert finding.severity is Severity.WARNING
    assert "initialised anyway" in finding.explanation
    assert finding.fix.steps[0].startswith("Update the firmware package: `sudo apt update")
    assert f"`sudo update-initramfs -u -k {sc.KERNEL}`" in finding.fix.steps[1]


def test_firmware_failure_with_failed_init_is_an_error(root):
    sc.unload_amdgpu(root)
    sc.kernel_log(root, "amdgpu 0000:03:00.0: Direct firmware load for amdgpu/psp_13_0_0_sos.bin failed with error -2",
                  "amdgpu 0000:03:00.0: amdgpu: Fatal error during GPU init")
    finding = only_finding(sc.run_check(root, "firmware-load-failure"))
    assert finding.severity is Severity.ERROR and "initialised anyway" not in finding.explanation
    assert any("Fatal error during GPU init" in e.text for e in finding.evidence)


def test_firmware_error_other_than_enoent_is_not_called_missing(root):
    sc.kernel_log(root, "amdgpu 0000:03:00.0: Direct firmware load for amdgpu/x.bin failed with error -12")
    assert "Error -2" not in only_finding(sc.run_check(root, "firmware-load-failure")).explanation


def test_secure_boot_module_verification_line_is_not_a_refusal(root):
    # "module verification failed ... tainting kernel" means the unsigned module WAS loaded (SB not enforced)
    sc.install_dkms_amdgpu(root)
    sc.unload_amdgpu(root)
    sc.kernel_log(root, "amdkcl: module verification failed: signature and/or required key missing - tainting kernel")
    finding = only_finding(sc.run_check(root, "secure-boot-blocks-dkms"))
    assert not any("verification failed" in e.text for e in finding.evidence)


def test_overdrive_steps_follow_the_distribution_and_name_gfx_dcs(root):
    sc.set_ppfeaturemask(root, "0xffffffff")
    sc.write(root, "/etc/modprobe.d/amdgpu.conf", "options amdgpu ppfeaturemask=0xffffffff\n")
    sc.write(root, "/etc/os-release", 'ID=fedora\nNAME="Fedora Linux"\n')
    shutil.rmtree(root / "etc/initramfs-tools")  # Fedora builds its images with dracut
    (root / "etc/dracut.conf.d").mkdir(parents=True)
    finding = only_finding(sc.run_check(root, "overdrive-enabled"))
    steps = finding.fix.steps
    # kmod's order: the files, then the command line
    assert steps[1] == "Run `sudo grubby --update-kernel=ALL --remove-args=amdgpu.ppfeaturemask=0xffffffff`."
    assert any("/etc/modprobe.d/amdgpu.conf:1" in s for s in steps)
    assert any(f"`sudo dracut -f --kver {sc.KERNEL}`" in s for s in steps)
    assert steps[-1].startswith("Reboot") and sum(s.startswith("Reboot") for s in steps) == 1
    assert "GFX_DCS" in finding.explanation
    assert "To keep OverDrive alone, use `amdgpu.ppfeaturemask=0xfff7ffff`." in finding.explanation
    sc.set_ppfeaturemask(root, "0xfff7ffff")
    assert "GFX_DCS" not in only_finding(sc.run_check(root, "overdrive-enabled")).explanation


def test_overdrive_names_the_amdgpu_clocks_state_it_applies(root):
    sc.set_ppfeaturemask(root, "0xfff7ffff")
    sc.write(root, "/etc/default/amdgpu-custom-state.card0", "OD_SCLK:\n0: 800Mhz\n1: 2000Mhz\nOD_VDDC_CURVE:\n"
                                                             "1: 1422MHz 808mV\nFORCE_POWER_CAP: 270000000\n")
    sc.write(root, "/etc/default/amdgpu-custom-state.card1", "# nothing set\n")  # no keys: not evidence
    finding = only_finding(sc.run_check(root, "overdrive-enabled"))
    state = [e for e in finding.evidence if e.path and "amdgpu-custom-state" in e.path]
    assert [(e.path, e.text) for e in state] == [("/etc/default/amdgpu-custom-state.card0", "amdgpu-clocks applies "
                                                  "this OverDrive state at boot (OD_SCLK, OD_VDDC_CURVE, "
                                                  "FORCE_POWER_CAP)")]
    assert finding.fix.steps[0].startswith("If the GPU crashes or shows artifacts, move the custom state aside first")
    assert "/etc/default/amdgpu-custom-state.card0 /root/amdgpu-clocks.bak/" in finding.fix.steps[0]


def test_missing_microcode_is_never_called_optional(root):
    sc.kernel_log(root, "amdgpu 0000:03:00.0: Direct firmware load for amdgpu/gc_11_0_0_pfp.bin failed with error -2")
    finding = only_finding(sc.run_check(root, "firmware-load-failure"))
    assert finding.severity is Severity.WARNING and "initialised anyway" in finding.explanation
    assert "optional" not in finding.explanation and "_ta.bin" not in finding.explanation


def test_loaded_but_unbound_gpu_gets_steps_for_that_case(root):
    sc.unbind_gpu(root)
    finding = only_finding(sc.run_check(root, "amdgpu-not-loaded"))
    assert "amdgpu is loaded but did not take 0000:03:00.0" in finding.explanation
    assert not any("modprobe amdgpu" in s for s in finding.fix.steps)
    assert finding.evidence[0].text == "[1002:744c] class 0x030000: no driver bound"
    sc.unload_amdgpu(root)
    finding = only_finding(sc.run_check(root, "amdgpu-not-loaded"))
    assert any("modprobe amdgpu" in s for s in finding.fix.steps), "not loaded: the generic steps"


def test_package_file_steps_quote_a_name_with_spaces(root):
    """kmod reads *.conf names with spaces; the shown commands must survive a copy and paste."""
    sc.unload_amdgpu(root)
    sc.blacklist_amdgpu(root, "/usr/lib/modprobe.d/amdgpu off.conf", "blacklist amdgpu")
    finding = only_finding(sc.run_check(root, "amdgpu-blacklisted"))
    steps = " ".join(finding.fix.steps)
    assert "`dpkg -S '/usr/lib/modprobe.d/amdgpu off.conf'`" in steps
    assert "`sudo touch '/etc/modprobe.d/amdgpu off.conf'`" in steps
