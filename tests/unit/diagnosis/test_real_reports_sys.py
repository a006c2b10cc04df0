"""Real public reports, rebuilt as host roots from what the reporters pasted (issue 12, items 6-9, 11-14).

Each case starts from the clean Ubuntu workstation (tests/support/scenarios.py) and changes what the report shows:
kernel release, distribution, packages, DKMS tree and make.log, kernel log lines, command line, WSL, Python
environments, launcher files. The docstring names the report and every detail that had to be assumed. Each case
asserts the finding, its severity, its evidence and that the fix steps are the ones that solved it in the thread.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rocmdesk.diagnosis.model import Severity, Status
from tests.support import scenarios as sc
from tests.support.python_envs import install_torch, make_venv, site_of
from tests.support.reports import assert_metadata_ties, evidence_texts, set_kernel, steps_of
from tests.support.scenarios import only_finding

DEBIAN_OS_RELEASE = ('PRETTY_NAME="Debian GNU/Linux trixie/sid"\nNAME="Debian GNU/Linux"\nVERSION_CODENAME=trixie\n'
                     'ID=debian\n')
CENTOS8_OS_RELEASE = ('NAME="CentOS Stream"\nVERSION="8"\nID="centos"\nID_LIKE="rhel fedora"\nVERSION_ID="8"\n'
                      'PLATFORM_ID="platform:el8"\n')
NEON_OS_RELEASE = ('NAME="KDE neon"\nVERSION="6.4"\nID=neon\nID_LIKE="ubuntu debian"\nVERSION_CODENAME=noble\n'
                   'UBUNTU_CODENAME=noble\n')
MAGEIA_OS_RELEASE = 'NAME="Mageia"\nVERSION="8"\nID=mageia\nID_LIKE="mandriva fedora"\nVERSION_ID=8\n'


@pytest.fixture
def root(tmp_path):
    return sc.clean_workstation(tmp_path / "root")


# -- building a reporter's machine -----------------------------------------------------------------------------


def dkms_tree(root: Path, version: str, make_log: str | None = None, built: tuple[str, ...] = (),
              installed: tuple[str, ...] = (), arch: str = "x86_64") -> None:
    """/var/lib/dkms/amdgpu/<version>: built modules, kernel-<kver>-<arch> links, the last make.log."""
    base = root / "var/lib/dkms/amdgpu" / version
    (base / "source").mkdir(parents=True, exist_ok=True)
    for kver in (*built, *installed):
        sc.write(root, f"/var/lib/dkms/amdgpu/{version}/{kver}/{arch}/module/amdgpu.ko.zst", b"\x28\xb5\x2f\xfd")
    for kver in installed:
        link = root / "var/lib/dkms/amdgpu" / f"kernel-{kver}-{arch}"
        os.symlink(f"{version}/{kver}/{arch}", link)
    if make_log is not None:
        sc.write(root, f"/var/lib/dkms/amdgpu/{version}/build/make.log", make_log)


def dpkg_add(root: Path, name: str, version: str) -> None:
    sc.append(root, "/var/lib/dpkg/status", sc.dpkg_entry(name, version, "all"))


def headers(root: Path, kver: str) -> None:
    (root / "usr/src" / f"linux-headers-{kver}").mkdir(parents=True, exist_ok=True)
    os.symlink(f"/usr/src/linux-headers-{kver}", root / "usr/lib/modules" / kver / "build")


# -- item 6: amdgpu-dkms that did not build or does not fit the kernel ------------------------------------------

DKMS = "amdgpu-dkms-not-built"


def test_rocm_amdgpu_192_hwe_6_14_newer_than_the_6_12_backport(root):
    """ROCm/amdgpu#192: KDE neon (Ubuntu 24.04), HWE kernel 6.14.0-24-generic, amdgpu-dkms 1:6.12.12.60401-2164967.24.04
    (ROCm 6.4.1): "Bad return status for module build", make.log attached (contents assumed: a compile error line).
    Assumed: headers installed, amdgpu (in-tree) loaded for the R9 380, the 6.8 GA kernel still installed with a
    built module. Solved: the kernel is not supported by that release (dup of ROCm/ROCm#4619): a supported kernel
    or a newer amdgpu-dkms."""
    kver = "6.14.0-24-generic"
    set_kernel(root, kver)
    headers(root, kver)
    sc.write(root, "/etc/os-release", NEON_OS_RELEASE)
    dpkg_add(root, "amdgpu-dkms", "1:6.12.12.60401-2164967.24.04")
    dkms_tree(root, "6.12.12-2164967.24.04", installed=("6.8.0-51-generic",), make_log=(
        "DKMS make.log for amdgpu-6.12.12-2164967.24.04 for kernel 6.14.0-24-generic (x86_64)\n"
        "Thu Jul 17 10:00:00 CEST 2025\nmake: Entering directory '/usr/src/linux-headers-6.14.0-24-generic'\n"
        "/var/lib/dkms/amdgpu/6.12.12-2164967.24.04/build/amd/amdgpu/amdgpu_drv.c:123:5: error: implicit "
        "declaration of function 'drm_fbdev_ttm_setup'\nmake[1]: *** [Makefile:1997: .] Error 2\n"))
    finding = only_finding(sc.run_check(root, DKMS))
    assert finding.severity is Severity.WARNING  # the in-tree amdgpu took over
    assert finding.subject == kver
    texts = evidence_texts(finding)
    assert any("amdgpu-dkms (1:6.12.12.60401-2164967.24.04)" in t for t in texts)
    assert any("make.log:1" in t and "for kernel 6.14.0-24-generic" in t for t in texts)
    assert any("error: implicit declaration" in t for t in texts)
    assert "backport of the Linux 6.12 driver (ROCm 6.4.1)" in finding.explanation
    assert "in-tree amdgpu" in finding.explanation
    steps = steps_of(finding)
    assert "Boot a kernel it was built for (6.8.0-51-generic)" in steps
    assert "newer amdgpu-dkms" in steps and "--no-dkms" in steps
    assert "sudo apt purge amdgpu-dkms amdgpu-dkms-firmware" in steps


def test_rocm_3701_kernel_6_8_0_44_with_amdgpu_6_7(root):
    """ROCm/ROCm#3701 (legacy-rocm-build#3701): Ubuntu 22.04, RX 7900 XTX, kernel 6.8.0-44-generic, amdgpu-dkms
    6.7.0-1787201.22.04: "Bad return status for module build on kernel: 6.8.0-44-generic", "dkms autoinstall ...
    failed for amdgpu(10)". Assumed: the previous kernel 6.5.0-45-generic still has the built module, the log's
    first error line. Solved in the thread: stay on the previous kernel until a release supports 6.8.0-44."""
    kver = "6.8.0-44-generic"
    set_kernel(root, kver)
    headers(root, kver)
    dpkg_add(root, "amdgpu-dkms", "1:6.7.0.60102-1787201.22.04")
    dkms_tree(root, "6.7.0-1787201.22.04", installed=("6.5.0-45-generic",), make_log=(
        "DKMS make.log for amdgpu-6.7.0-1787201.22.04 for kernel 6.8.0-44-generic (x86_64)\n"
        "/tmp/amd.f1Tr7ZPd/amd/amdkcl/kcl_drm_gem.c:41:9: error: too few arguments to function\n"))
    sc.unload_amdgpu(root)
    finding = only_finding(sc.run_check(root, DKMS))
    assert finding.severity is Severity.ERROR  # no amdgpu at all
    assert "backport of the Linux 6.7 driver (ROCm 6.1.2)" in finding.explanation
    assert any("too few arguments" in t for t in evidence_texts(finding))
    assert steps_of(finding).startswith("Boot a kernel it was built for (6.5.0-45-generic)")


def test_rocm_3870_ubuntu_24_10_kernel_6_11(root):
    """ROCm/ROCm#3870 (legacy-rocm-build#3870): Ubuntu 24.10, kernel 6.11.0-8-generic, ROCm 6.2.0's amdgpu-dkms:
    build error `macro "__assign_str" passed 2 arguments, but takes just 1`. Assumed: package version
    1:6.8.5.60200-2009582.24.04, no other kernel built. Solved: a kernel the release supports (24.04's 6.8/6.11 HWE
    once a release supports it) or a newer amdgpu-dkms."""
    kver = "6.11.0-8-generic"
    set_kernel(root, kver)
    headers(root, kver)
    dpkg_add(root, "amdgpu-dkms", "1:6.8.5.60200-2009582.24.04")
    dkms_tree(root, "6.8.5-2009582.24.04", make_log=(
        "DKMS make.log for amdgpu-6.8.5-2009582.24.04 for kernel 6.11.0-8-generic (x86_64)\n"
        "./include/trace/events/amdgpu.h:35:42: error: macro \"__assign_str\" passed 2 arguments, but takes just 1\n"))
    finding = only_finding(sc.run_check(root, DKMS))
    assert "Linux 6.8 driver (ROCm 6.2.0)" in finding.explanation and "6.11.0-8-generic is newer" in finding.explanation
    assert any("__assign_str" in t for t in evidence_texts(finding))
    steps = steps_of(finding)
    assert steps.startswith("Boot a kernel this ROCm release supports") and "compatibility-matrix" in steps


def test_rocm_5109_debian_kernel_6_15(root):
    """ROCm/ROCm#5109 (legacy-rocm-build#5109): Debian unstable, kernel 6.15.8; AMD: "kernel 6.15 is currently not
    supported by ROCm ... use a supported kernel version". Assumed: amdgpu-dkms 6.12.12-2164967.24.04 (the Debian
    install used the Ubuntu packages), the make.log error line, kernel release 6.15.8-amd64."""
    kver = "6.15.8-amd64"
    set_kernel(root, kver)
    headers(root, kver)
    sc.write(root, "/etc/os-release", DEBIAN_OS_RELEASE)
    dpkg_add(root, "amdgpu-dkms", "1:6.12.12.60402-2187269.24.04")
    dkms_tree(root, "6.12.12-2187269.24.04", make_log=(
        "DKMS make.log for amdgpu-6.12.12-2187269.24.04 for kernel 6.15.8-amd64 (x86_64)\n"
        "amd/amdgpu/amdgpu_ttm.c:1234:17: error: 'struct ttm_device_funcs' has no member named 'swap_notify'\n"))
    finding = only_finding(sc.run_check(root, DKMS))
    assert "6.15.8-amd64 is newer" in finding.explanation and "use a supported kernel" in finding.explanation
    steps = steps_of(finding)
    assert "Boot a kernel this ROCm release supports" in steps and "sudo apt purge amdgpu-dkms" in steps


def test_rocm_amdgpu_209_mainline_6_18_with_rocm_7_2_dkms(root):
    """ROCm/amdgpu#209: Ubuntu 24.04, mainline 6.18.14-061814-generic (for gfx1151 fixes), amdgpu-dkms
    6.16.13.30300000-2278356.24.04 fails to build. Assumed: the make.log error line, amdgpu in-tree loaded (6.18 has
    gfx1151). The 30300000 field is not a ROCm version, so none is named."""
    kver = "6.18.14-061814-generic"
    set_kernel(root, kver)
    headers(root, kver)
    dpkg_add(root, "amdgpu-dkms", "1:6.16.13.30300000-2278356.24.04")
    dkms_tree(root, "6.16.13-2278356.24.04", make_log=(
        "DKMS make.log for amdgpu-6.16.13-2278356.24.04 for kernel 6.18.14-061814-generic (x86_64)\n"
        "amd/amdkcl/kcl_drm_vblank.c:51:2: error: implicit declaration of function 'drm_vblank_work_init'\n"))
    finding = only_finding(sc.run_check(root, DKMS))
    assert finding.severity is Severity.WARNING
    assert "backport of the Linux 6.16 driver," in finding.explanation and "ROCm 3" not in finding.explanation
    assert "--no-dkms" in steps_of(finding)


def test_rocm_2451_debian_6_6_dma_resv_seq_missing(root):
    """ROCm/ROCm#2451 (legacy-rocm-build#2451): Debian, kernel 6.6.13-amd64, amdgpu-dkms 6.2.4-1683306.22.04 (ROCm
    6.0): "Makefile:52: *** dma_resv->seq is missing. exit....  Stop." AMD: only the kernels in the system
    requirements are supported; wait for 6.1 or use a supported kernel."""
    kver = "6.6.13-amd64"
    set_kernel(root, kver)
    headers(root, kver)
    sc.write(root, "/etc/os-release", DEBIAN_OS_RELEASE)
    dkms_tree(root, "6.2.4-1683306.22.04", make_log=(
        "DKMS make.log for amdgpu-6.2.4-1683306.22.04 for kernel 6.6.13-amd64 (x86_64)\nSat 10 Feb 13:23:07 GMT 2024\n"
        "make: Entering directory '/usr/src/linux-headers-6.6.13-amd64'\n"
        "/var/lib/dkms/amdgpu/6.2.4-1683306.22.04/build/Makefile:52: *** dma_resv->seq is missing. exit....  Stop.\n"
        "make[1]: *** [/usr/src/linux-headers-6.6.13-common/Makefile:1938: /var/lib/dkms/amdgpu/6.2.4-1683306.22.04/"
        "build] Error 2\n"))
    finding = only_finding(sc.run_check(root, DKMS))
    texts = evidence_texts(finding)
    assert any("dma_resv->seq is missing" in t and "make.log:4" in t for t in texts)
    assert "Linux 6.2 driver" in finding.explanation and "6.6.13-amd64 is newer" in finding.explanation
    assert "Boot a kernel this ROCm release supports" in steps_of(finding)


def test_rocm_6193_ubuntu_26_04_kernel_7_no_dkms_works(root):
    """ROCm/ROCm#6193 (legacy-rocm-build#6193): Ubuntu 26.04, kernel 7.0.0-14-generic, amdgpu-install 7.2.1: the
    DKMS build breaks; "this works: amdgpu-install -y --usecase=rocm --no-dkms". Assumed: amdgpu-dkms
    6.16.13-2298541.24.04, the error line, the in-tree amdgpu loaded (Strix Halo gfx1151)."""
    kver = "7.0.0-14-generic"
    set_kernel(root, kver)
    headers(root, kver)
    dkms_tree(root, "6.16.13-2298541.24.04", make_log=(
        "DKMS make.log for amdgpu-6.16.13-2298541.24.04 for kernel 7.0.0-14-generic (x86_64)\n"
        "amd/amdkcl/kcl_mm.c:88:9: error: 'VM_NOHUGEPAGE' undeclared\n"))
    finding = only_finding(sc.run_check(root, DKMS))
    assert "7.0.0-14-generic is newer" in finding.explanation
    assert "`sudo amdgpu-install --usecase=rocm --no-dkms`" in steps_of(finding)


def test_rocm_2155_centos8_older_kernel_is_not_called_too_new(root):
    """ROCm/ROCm#2155 (legacy-rocm-build#2155): CentOS 8 Stream, kernel 4.18.0-490.el8.x86_64, amdgpu-dkms
    5.18.13-1538762.el8: "*** dma_resv->seq is missing., exit.... 中止." AMD: resolved in ROCm 5.5 (a newer
    amdgpu-dkms). The kernel is OLDER than the driver base (RHEL backports), so rocmdesk must not blame a too-new
    kernel, and the remove command is dnf's. Assumed: no dpkg (rpm system)."""
    kver = "4.18.0-490.el8.x86_64"
    set_kernel(root, kver)
    headers(root, kver)
    sc.write(root, "/etc/os-release", CENTOS8_OS_RELEASE)
    dkms_tree(root, "5.18.13-1538762.el8", make_log=(
        "DKMS make.log for amdgpu-5.18.13-1538762.el8 for kernel 4.18.0-490.el8.x86_64 (x86_64)\n"
        "make: ディレクトリ '/usr/src/kernels/4.18.0-490.el8.x86_64' に入ります "
        "/var/lib/dkms/amdgpu/5.18.13-1538762.el8/build/Makefile:16: *** dma_resv->seq is missing., exit.... 中止.\n"))
    finding = only_finding(sc.run_check(root, DKMS))
    assert "is newer" not in finding.explanation
    assert any("dma_resv->seq is missing" in t for t in evidence_texts(finding))
    steps = steps_of(finding)
    assert "newer amdgpu-dkms" in steps and "sudo dnf remove amdgpu-dkms" in steps


def test_dkms_without_headers_says_so(root):
    """Not a single report but the step every DKMS thread starts with (ROCm/rocm-install-on-linux
    docs/install/prerequisites.rst): no headers, no build."""
    kver = "6.8.0-52-generic"
    set_kernel(root, kver)
    dkms_tree(root, "6.8.5-2041575.24.04", installed=("6.8.0-51-generic",))
    finding = only_finding(sc.run_check(root, DKMS))
    assert "headers are not installed" in finding.explanation
    assert steps_of(finding).startswith("Install the headers of the running kernel: `sudo apt install "
                                        "linux-headers-$(uname -r)`")


def test_dkms_built_and_installed_passes(root):
    sc.install_dkms_amdgpu(root)
    dkms_tree(root, "6.8.5-2041575.24.04", installed=(sc.KERNEL,))
    assert sc.run_check(root, DKMS).status is Status.PASS


# -- item 7: firmware -----------------------------------------------------------------------------------------

FW = "firmware-load-failure"


def test_firmware_on_root_but_not_in_initramfs_rebuilds_the_image(root):
    """The issue's own report (ROCm/legacy-rocm-build#1357 as summarised in issue 12): amdgpu fails to load a
    firmware file at boot; the file is on the root file system, only the initramfs lacks it. Assumed: RX 7900 XTX,
    the file gc_11_0_0_imu.bin installed after the image was built (so the image lacks it), Fatal error during GPU
    init. Solved: rebuild the initramfs (update-initramfs -u -k <running>) and reboot; no package install."""
    sc.write(root, "/usr/lib/firmware/amdgpu/gc_11_0_0_imu.bin.zst", b"\x28\xb5\x2f\xfd imu")
    sc.unload_amdgpu(root)
    sc.kernel_log(root, "amdgpu 0000:03:00.0: Direct firmware load for amdgpu/gc_11_0_0_imu.bin failed with error -2",
                  "amdgpu 0000:03:00.0: amdgpu: Fatal error during GPU init")
    finding = only_finding(sc.run_check(root, FW))
    assert finding.severity is Severity.ERROR
    assert "does not exist" not in finding.explanation
    assert "on the root file system but not in the initramfs /boot/initrd.img-" in finding.explanation
    texts = evidence_texts(finding)
    assert any(t.startswith("/usr/lib/firmware/amdgpu/gc_11_0_0_imu.bin.zst: exists") for t in texts)
    assert any("is not in the initramfs" in t and f"/boot/initrd.img-{sc.KERNEL}" in t for t in texts)
    assert list(finding.fix.steps) == [f"Regenerate the running kernel's initramfs once: `sudo update-initramfs -u -k "
                                       f"{sc.KERNEL}`.", "Reboot."]


def test_geerlingguy_331_polaris12_mc_missing_everywhere_debian(root):
    """geerlingguy/raspberry-pi-pcie-devices#331: Radeon Pro WX 2100 (Polaris 12) on Raspberry Pi OS (Debian):
    "Direct firmware load for amdgpu/polaris12_mc.bin failed with error -2", "Fatal error during GPU init".
    Assumed: Debian's firmware folder exists without the amdgpu files (firmware-amd-graphics not installed), the
    dracut-less initramfs-tools image. Solved: install firmware-amd-graphics (non-free-firmware)."""
    sc.write(root, "/etc/os-release", DEBIAN_OS_RELEASE.replace("trixie/sid", "12 (bookworm)"))
    shutil.rmtree(root / "usr/lib/firmware/amdgpu")
    (root / "usr/lib/firmware/brcm").mkdir(parents=True)
    sc.unload_amdgpu(root)
    sc.kernel_log(root, "amdgpu 0000:01:00.0: Direct firmware load for amdgpu/polaris12_mc.bin failed with error -2",
                  "amdgpu: mc: Failed to load firmware \"amdgpu/polaris12_mc.bin\"",
                  "amdgpu 0000:01:00.0: amdgpu: Fatal error during GPU init")
    finding = only_finding(sc.run_check(root, FW))
    assert finding.severity is Severity.ERROR
    assert "neither in the firmware folders of the root file system nor in the initramfs" in finding.explanation
    assert any("not found in /usr/lib/firmware, /lib/firmware" in t for t in evidence_texts(finding))
    steps = steps_of(finding)
    assert "sudo apt install firmware-amd-graphics" in steps.splitlines()[0]
    assert "update-initramfs -u -k" in steps.splitlines()[1]


def test_grml_165_renoir_firmware_package_too_old(root):
    """grml/grml#165: Debian-based grml, Renoir APU (Ryzen 4750U): firmware-amd-graphics 20190717-2 predates
    Renoir (added in 20200421-1). Assumed: the failing file renoir_sdma.bin and that the log shows the failure
    (the report saw a hang). Solved: a newer firmware-amd-graphics."""
    sc.write(root, "/etc/os-release", DEBIAN_OS_RELEASE)
    sc.unload_amdgpu(root)
    sc.kernel_log(root, "amdgpu 0000:07:00.0: Direct firmware load for amdgpu/renoir_sdma.bin failed with error -2",
                  "amdgpu 0000:07:00.0: amdgpu: Fatal error during GPU init")
    finding = only_finding(sc.run_check(root, FW))
    first = finding.fix.steps[0]
    assert "firmware-amd-graphics" in first and "backports" in first


def test_legacy_912_vega20_ta_is_optional(root):
    """ROCm/legacy-rocm-build#912: 2x Radeon VII, Ubuntu 19.10: "Direct firmware load for amdgpu/vega20_ta.bin
    failed with error -2"; AMD: not a requirement for basic ROCm functionality. The GPU works: a warning, and
    the explanation says ROCm does not need it."""
    sc.kernel_log(root, "amdgpu 0000:19:00.0: Direct firmware load for amdgpu/vega20_ta.bin failed with error -2",
                  "amdgpu 0000:19:00.0: psp v11.0: Failed to load firmware \"amdgpu/vega20_ta.bin\"")
    finding = only_finding(sc.run_check(root, FW))
    assert finding.severity is Severity.WARNING and "ROCm does not need" in finding.explanation


def test_firmware_not_looked_at_is_never_called_absent(root):
    """A support snapshot without /lib/firmware: rocmdesk must not claim the file is missing (issue 12 item 7)."""
    shutil.rmtree(root / "usr/lib/firmware")
    sc.unload_amdgpu(root)
    sc.kernel_log(root, "amdgpu 0000:03:00.0: Direct firmware load for amdgpu/gc_11_0_0_pfp.bin failed with error -2",
                  "amdgpu 0000:03:00.0: amdgpu: Fatal error during GPU init")
    finding = only_finding(sc.run_check(root, FW))
    assert "could not look at the firmware folders" in finding.explanation
    assert "neither" not in finding.explanation
    assert finding.fix.steps[0].startswith("Check whether the file exists")


# -- item 11: boot entries --------------------------------------------------------------------------------------


def test_m_bab_45_recovery_entry_nomodeset(root):
    """M-Bab/linux-kernel-amdgpu-binaries#45: Ubuntu 16.04, Vega 64; the Xorg log's kernel command line is
    `BOOT_IMAGE=/boot/vmlinuz-4.15.1+ root=UUID=... ro recovery nomodeset` (the recovery entry). Assumed: amdgpu not
    loaded in that boot, an X log with the vesa fallback and no xorg.conf. Expected: "you booted the recovery entry",
    no GRUB edit (the file has no nomodeset), no Xorg conflict warning."""
    sc.write(root, "/proc/cmdline", "BOOT_IMAGE=/boot/vmlinuz-6.8.0-51-generic root=UUID=f29236b0-bb51-4912-915b-"
                                    "e3a83ab5c557 ro recovery nomodeset\n")
    sc.unload_amdgpu(root)
    sc.xorg_log(root, "(II) VESA(0): initializing int10")
    finding = only_finding(sc.run_check(root, "nomodeset"))
    assert finding.title.startswith("You booted the recovery entry")
    assert finding.severity is Severity.ERROR
    assert any(e.text == "kernel command line has `recovery`" for e in finding.evidence)
    assert not any(e.path == "/etc/default/grub" for e in finding.evidence)
    assert "/etc/default/grub" not in steps_of(finding) and "update-grub" not in steps_of(finding)
    assert finding.fix.steps[0].startswith("Reboot and choose the normal entry")
    xorg = only_finding(sc.run_check(root, "xorg-driver-conflict"))
    assert xorg.severity is Severity.INFO and "nomodeset" in xorg.fix.steps[0]


def test_nomodeset_not_in_grub_file_gives_no_grub_edit(root):
    """Issue 12's case: nomodeset on the command line, /etc/default/grub without it: no "delete it from GRUB"."""
    sc.write(root, "/proc/cmdline", (root / "proc/cmdline").read_text().strip() + " nomodeset\n")
    sc.unload_amdgpu(root)
    steps = steps_of(only_finding(sc.run_check(root, "nomodeset")))
    assert "does not have `nomodeset`, so editing it changes nothing" in steps and "update-grub" not in steps


# -- item 12: Secure Boot ---------------------------------------------------------------------------------------

SB = "secure-boot-blocks-dkms"


def test_rocm_4328_ubuntu_24_10_secure_boot_blocks_signed_dkms(root):
    """ROCm/ROCm#4328 (legacy-rocm-build#4328): Ubuntu 24.10, kernel 6.11.0-14-generic, amdgpu loaded twice after the
    install, then never after a reboot: Secure Boot kept the DKMS module out. Solved: turn Secure Boot off (the
    reporter), or enrol the MOK. Assumed: DKMS signed the module with Ubuntu's MOK (MOK.der exists), mokutil not
    recorded, and the kernel's wording "Loading of module with unavailable key is rejected"."""
    kver = "6.11.0-14-generic"
    set_kernel(root, kver)
    sc.install_dkms_amdgpu(root)
    dkms_dir = root / "usr/lib/modules" / sc.KERNEL
    if dkms_dir.exists():
        shutil.rmtree(dkms_dir)
    sc.write(root, f"/usr/lib/modules/{kver}/updates/dkms/amdgpu.ko.zst", b"\x28\xb5\x2f\xfd")
    sc.unload_amdgpu(root)
    sc.kernel_log(root, "Loading of module with unavailable key is rejected")
    finding = only_finding(sc.run_check(root, SB))
    assert finding.title == "Secure Boot refuses the DKMS amdgpu driver: the key it is signed with is not enrolled"
    assert "unsigned" not in finding.title
    assert any("Loading of module with unavailable key is rejected" in e.text for e in finding.evidence)
    steps = steps_of(finding)
    assert "sudo mokutil --import /var/lib/shim-signed/mok/MOK.der" in steps
    assert "turn Secure Boot off" in steps


@pytest.mark.parametrize("line", [
    "Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7",
    "Lockdown: systemd-udevd: unsigned module loading is restricted; see man kernel_lockdown.7",
    "systemd-modules-load[512]: Failed to insert module 'amdgpu': Key was rejected by service",
    "Loading of unsigned module is rejected",
])
def test_every_refusal_wording_is_evidence(root, line):
    """Wordings from RinCat/RTL88x2BU-Linux-Driver#114, fastoe/RTL8812BU#27 (lockdown), dkms-project/dkms#347."""
    sc.install_dkms_amdgpu(root)
    sc.unload_amdgpu(root)
    sc.kernel_log(root, line)
    finding = only_finding(sc.run_check(root, SB))
    assert any(e.text.endswith(line.split("] ")[-1]) for e in finding.evidence)


def test_refusal_line_stands_in_for_unreadable_secure_boot_state(root):
    """A snapshot without efivars: the refusal line alone shows signatures are enforced."""
    sc.install_dkms_amdgpu(root)
    sc.unload_amdgpu(root)
    shutil.rmtree(root / "sys/firmware")
    sc.kernel_log(root, "Loading of module with unavailable key is rejected")
    finding = only_finding(sc.run_check(root, SB))
    assert any("enforces module signatures" in e.text for e in finding.evidence)


# -- item 8: WSL ------------------------------------------------------------------------------------------------

WSL = "wsl-rocm-support"


def wsl_root(root: Path, rocm: str) -> Path:
    sc.make_wsl(root)
    sc.write(root, "/opt/rocm-6.2.4/.info/version", rocm + "\n")
    return root


def comfy_site(root: Path) -> Path:
    return site_of(root / "home/alice/ComfyUI/venv")


def bundle_hsa(site: Path, size: int = 4096) -> None:
    sc.write(site.parent.parent.parent, str((site / "torch/lib/libhsa-runtime64.so").relative_to(
        site.parent.parent.parent)), b"\x7fELF" + b"\0" * size)


def test_rocm_3470_wsl_pytorch_nightly_instead_of_amd_wheel(root):
    """ROCm/ROCm#3470 (legacy-rocm-build#3470): WSL Ubuntu 22.04, RX 7900 XTX, ROCm 6.1.3, rocminfo works,
    torch.cuda.is_available() False with torch 2.5.0.dev20240802+rocm6.1. AMD (schung-amd): reinstall per the WSL
    guide: PyTorch 2.1.2+rocm6.1.3 and the WSL build of Adrenalin 24.6.1. Assumed: the env is ComfyUI's venv, the
    nightly wheel bundles its libhsa-runtime64.so (pytorch.org wheels do)."""
    wsl_root(root, "6.1.3-122")
    install_torch(comfy_site(root), "rocm", "2.5.0.dev20240802+rocm6.1")
    bundle_hsa(comfy_site(root))
    finding = only_finding(sc.run_check(root, WSL))
    assert finding.severity is Severity.ERROR
    assert finding.title == "PyTorch's bundled HSA runtime has no WSL support, so it finds no GPU"
    assert "Adrenalin 24.6.1 for WSL 2" in finding.explanation and "not AMD's WSL wheel" in finding.explanation
    texts = evidence_texts(finding)
    assert any("torch 2.5.0.dev20240802+rocm6.1" in t for t in texts)
    assert any("torch/lib/libhsa-runtime64.so" in t and "no WSL support" in t for t in texts)
    steps = steps_of(finding)
    assert "pip install torch==2.1.2" in steps and "repo.radeon.com/rocm/manylinux/rocm-rel-6.1.3/" in steps
    assert "rm libhsa-runtime64.so* && cp /opt/rocm/lib/libhsa-runtime64.so.1.2 libhsa-runtime64.so" in steps


def test_rocm_hip_3710_wsl_pytorch_org_rocm6_2_wheel(root):
    """ROCm/hip#3710: WSL; torch from download.pytorch.org/whl/rocm6.2 gives hipErrorNoDevice; the fix was AMD's
    torch-2.3.0+rocm6.2.3 (rocm-rel-6.2.3) and the libhsa swap. Assumed: ROCm 6.2.3 for WSL installed, torch
    2.5.1+rocm6.2, Python 3.10 venv (AMD's cp310 wheels)."""
    wsl_root(root, "6.2.3-66")
    prefix = make_venv(root, "home/alice/hipenv", "rocm", py="3.10")
    bundle_hsa(site_of(prefix, "3.10"))
    outcome = sc.run_check(root, WSL)
    finding = next(f for f in outcome.findings if f.subject == "/home/alice/hipenv")
    steps = steps_of(finding)
    assert "pip install torch==2.3.0" in steps and "rocm-rel-6.2.3/" in steps and "cp310" not in steps
    assert "cp /opt/rocm/lib/libhsa-runtime64.so.1.2" in steps


def test_rocm_3563_rocm_6_2_0_has_no_wsl_release(root):
    """ROCm/ROCm#3563 (legacy-rocm-build#3563): "ROCM6.2 does not support WSL2"; later "ROCm 6.2.3 for WSL2 ... is
    OK now" with Adrenalin 24.10.1. Assumed: ROCm 6.2.0 installed, no torch yet (ComfyUI venv removed)."""
    wsl_root(root, "6.2.0-66")
    shutil.rmtree(root / "home/alice/ComfyUI/venv")
    finding = only_finding(sc.run_check(root, WSL))
    assert finding.title == "ROCm 6.2.0-66 has no WSL release" and finding.severity is Severity.WARNING
    assert "nearest WSL release is 6.2.3" in finding.explanation
    assert "Adrenalin 24.10.1" in finding.fix.steps[0]
    assert any(e.path == "/opt/rocm/.info/version" for e in finding.evidence)


def test_rocm_4749_wsl_rocm_6_4_use_6_3_4_wheels(root):
    """ROCm/ROCm#4749 (legacy-rocm-build#4749): PyTorch under WSL with ROCm 6.4 does not work; what worked: ROCm
    6.3.4 ("very important to get this one and not 6.4") and torch-2.4.0+rocm6.3.4 from rocm-rel-6.3.4. Assumed:
    ROCm 6.4.0, torch 2.7.0+rocm6.3 from pytorch.org in a Python 3.12 venv."""
    wsl_root(root, "6.4.0-47")
    prefix = make_venv(root, "home/alice/tts", "rocm", version="2.7.0+rocm6.3", py="3.12")
    bundle_hsa(site_of(prefix, "3.12"))
    result = sc.run_check(root, WSL)
    titles = {f.title: f for f in result.findings}
    release = titles["ROCm 6.4.0-47 has no WSL release"]
    assert "6.3.4" in release.fix.steps[1] and "Adrenalin 25.3.1" in release.fix.steps[0]
    torch = next(f for f in result.findings if f.subject == "/home/alice/tts")
    assert "torch==2.4.0" in steps_of(torch) and "rocm-rel-6.3.4/" in steps_of(torch)


def test_kohya_2810_wsl_torch_rocm6_0(root):
    """bmaltais/kohya_ss#2810: WSL, 7900 XTX, Adrenalin 24.8.1, "Torch 2.3.0+rocm6.0", "Torch reports GPU not
    available". Assumed: ROCm 6.1.3 for WSL (the only release then), torch bundling its HSA runtime."""
    wsl_root(root, "6.1.3-122")
    install_torch(comfy_site(root), "rocm", "2.3.0+rocm6.0")
    bundle_hsa(comfy_site(root))
    finding = only_finding(sc.run_check(root, WSL))
    assert finding.severity is Severity.ERROR and "torch==2.1.2" in steps_of(finding)


def test_rocm_3571_swapped_hsa_runtime_is_no_false_alarm(root):
    """ROCm/ROCm#3571 / #3624: newer pytorch.org wheels work under WSL once libhsa-runtime64.so is replaced with
    /opt/rocm's (AMD's guide). Assumed: the swap was done (same size as /opt/rocm's), ROCm 6.1.3."""
    wsl_root(root, "6.1.3-122")
    install_torch(comfy_site(root), "rocm", "2.4.1+rocm6.1")
    bundle_hsa(comfy_site(root), 8192)
    sc.write(root, "/opt/rocm-6.2.4/lib/libhsa-runtime64.so.1.2", b"\x7fELF" + b"\0" * 8192)
    assert sc.run_check(root, WSL).status is Status.PASS


def test_wsl_distro_hsa_package_shadows_runtime(root):
    """andweng/wsl-rocm (third-party guide): Ubuntu's libhsa-runtime64-1 shadows /opt/rocm."""
    wsl_root(root, "6.3.4-17")
    shutil.rmtree(root / "home/alice/ComfyUI/venv")
    dpkg_add(root, "libhsa-runtime64-1", "5.7.1-2build1")
    finding = only_finding(sc.run_check(root, WSL))
    assert "sudo apt remove libhsa-runtime64-1" in finding.fix.steps[0]


def test_wsl_check_is_quiet_off_wsl(root):
    assert sc.run_check(root, WSL).status is Status.PASS


# -- item 9: launchers ------------------------------------------------------------------------------------------

LAUNCH = "launcher-reinstalls-torch"


def stability_matrix(root: Path, torch_kind: str, version: str | None = None, preferred: str = "Rocm",
                     data: str = "home/alice/Applications/StabilityMatrix") -> Path:
    settings = ('{"InstalledPackages": [{"Id": "9b1c", "DisplayName": "ComfyUI", "PackageName": "ComfyUI", '
                f'"LibraryPath": "Packages/ComfyUI", "PreferredTorchIndex": "{preferred}"}}], "Theme": "Dark"}}')
    sc.write(root, f"/{data}/settings.json", settings)
    sc.write(root, f"/{data}/Packages/ComfyUI/main.py", "# ComfyUI\n")
    make_venv(root, f"{data}/Packages/ComfyUI/venv", torch_kind, version=version)
    return root / data


def test_stabilitymatrix_1570_update_reinstalls_custom_rocm_torch(root):
    """LykosAI/StabilityMatrix#1570: Linux, Strix Halo (8060S), every ComfyUI update replaces the custom ROCm torch.
    NeuralFault: StabilityMatrix on Linux installs upstream PyTorch 2.10-rocm7.1. Assumed: the portable data folder
    ~/Applications/StabilityMatrix, torch 2.10.0+rocm7.1 now, package torch backend ROCm."""
    data = stability_matrix(root, "rocm", "2.10.0+rocm7.1")
    finding = only_finding(sc.run_check(root, LAUNCH))
    assert finding.severity is Severity.WARNING
    assert finding.title == "StabilityMatrix reinstalls PyTorch on its updates"
    assert "next update may replace it" in finding.explanation
    texts = evidence_texts(finding)
    assert any(t.startswith(f"/{data.relative_to(root)}/settings.json".replace("//", "/")) or "settings.json" in t
               for t in texts)
    assert any("torch 2.10.0+rocm7.1 (rocm build)" in t for t in texts)
    steps = steps_of(finding)
    assert "Python Packages" in steps and "--index-url https://download.pytorch.org/whl/rocm7.1" in steps
    assert "After every package update" in steps


def test_stabilitymatrix_1132_update_left_cpu_torch(root):
    """LykosAI/StabilityMatrix#1132: Arch (AUR 2.13.2): after updating ComfyUI "it has torch+CPU instead of
    torch+rocm"; workaround: Python Packages, remove torch/torchvision/torchaudio, add "torch torchvision
    torchaudio --index-url https://download.pytorch.org/whl/rocm6.2.4". Assumed: data in
    ~/.config/StabilityMatrix, torch 2.6.0+cpu."""
    stability_matrix(root, "cpu", "2.6.0+cpu", data="home/alice/.config/StabilityMatrix")
    finding = only_finding(sc.run_check(root, LAUNCH))
    assert finding.severity is Severity.WARNING
    assert "already replaced the ROCm wheel" in finding.explanation and "torch 2.6.0+cpu" in finding.explanation
    assert "remove torch, torchvision and torchaudio" in finding.fix.steps[0]


def test_comfyui_6649_stabilitymatrix_installed_cuda(root):
    """Comfy-Org/ComfyUI#6649: StabilityMatrix on Linux, ROCm chosen, after an update "RuntimeError: Found no NVIDIA
    driver on your system." Assumed: ~/Applications/StabilityMatrix, PyPI torch 2.6.0 (CUDA, untagged)."""
    stability_matrix(root, "cuda-untagged", "2.6.0")
    finding = only_finding(sc.run_check(root, LAUNCH))
    assert finding.severity is Severity.WARNING and "torch 2.6.0" in finding.explanation
    assert any("(cuda build)" in t for t in evidence_texts(finding))


def webui(root: Path, torch_command: str | None, torch_kind: str, version: str | None = None,
          rel: str = "home/alice/stable-diffusion-webui") -> Path:
    sc.write(root, f"/{rel}/launch.py", "from modules import launch_utils\n")
    sc.write(root, f"/{rel}/webui.sh", "#!/usr/bin/env bash\n")
    user = "#!/bin/bash\n#export COMMANDLINE_ARGS=\"\"\n"
    if torch_command is not None:
        user += f"export TORCH_COMMAND=\"{torch_command}\"\n"
    sc.write(root, f"/{rel}/webui-user.sh", user)
    make_venv(root, f"{rel}/venv", torch_kind, version=version)
    return root / rel


def test_a1111_8808_extra_index_url_took_pypi_torch(root):
    """AUTOMATIC1111/stable-diffusion-webui#8808: RX 6800 XT, "Torch is not able to use GPU": the TORCH_COMMAND with
    `--extra-index-url .../rocm5.1.1` installed the normal (CUDA) torch. Fix (06kellyjac): uninstall torch
    torchvision, TORCH_COMMAND `pip install torch torchvision --index-url https://download.pytorch.org/whl/rocm5.4.2`.
    Assumed: torch 2.0.0 from PyPI (CUDA, untagged) in venv."""
    folder = webui(root, "pip install torch torchvision --extra-index-url https://download.pytorch.org/whl/rocm5.1.1",
                   "cuda-untagged", "2.0.0")
    finding = only_finding(sc.run_check(root, LAUNCH))
    assert finding.severity is Severity.WARNING
    assert "`--extra-index-url`" in finding.explanation
    assert finding.evidence[0].path == f"/{folder.relative_to(root)}/webui-user.sh" and finding.evidence[0].line == 3
    steps = steps_of(finding)
    assert "export TORCH_COMMAND=\"pip install torch torchvision --index-url" in steps
    assert "pip uninstall -y torch torchvision" in steps and "--reinstall-torch" in steps


def test_a1111_16160_forge_extra_index_url_runs_on_cpu(root):
    """AUTOMATIC1111/stable-diffusion-webui#16160: "SD is not using my amdgpu", launched with
    TORCH_COMMAND='pip install torch torchvision --extra-index-url https://download.pytorch.org/whl/rocm5.1.1'.
    Assumed: the command set in webui-user.sh, PyPI torch 2.1.2 (CUDA) in venv."""
    webui(root, "pip install torch torchvision --extra-index-url https://download.pytorch.org/whl/rocm5.1.1",
          "cuda-untagged", "2.1.2")
    finding = only_finding(sc.run_check(root, LAUNCH))
    assert "will install a non-ROCm PyTorch again" in finding.title and "torch 2.1.2" in finding.explanation


def test_webui_pinned_rocm_index_is_no_false_alarm(root):
    webui(root, "pip install torch torchvision --index-url https://download.pytorch.org/whl/rocm6.2", "rocm")
    assert sc.run_check(root, LAUNCH).status is Status.PASS


# -- item 13: distribution-aware steps ---------------------------------------------------------------------------


@pytest.mark.parametrize(("os_release", "ostree", "expected"), [
    ('ID=bazzite\nID_LIKE="fedora"\nVARIANT_ID=bazzite-gnome\n', True, "sudo rpm-ostree kargs --delete=nomodeset"),
    ('ID=fedora\nVARIANT_ID=silverblue\n', True, "sudo rpm-ostree kargs --delete=nomodeset"),
    ('ID=nixos\n', False, "boot.kernelParams"),
    (MAGEIA_OS_RELEASE, False, "sudo grub2-mkconfig -o /boot/grub2/grub.cfg"),
    ('ID="opensuse-tumbleweed"\nID_LIKE="opensuse suse"\n', False, "sudo grub2-mkconfig -o /boot/grub2/grub.cfg"),
    ('ID=arch\n', False, "sudo grub-mkconfig -o /boot/grub/grub.cfg"),
    ('ID=fedora\n', False, "sudo grubby --update-kernel=ALL --remove-args=nomodeset"),
])
def test_kernel_arg_steps_per_family(root, os_release, ostree, expected):
    sc.write(root, "/etc/os-release", os_release)
    if ostree:
        sc.write(root, "/run/ostree-booted", "")
    sc.add_cmdline(root, "nomodeset")
    sc.unload_amdgpu(root)
    assert expected in steps_of(only_finding(sc.run_check(root, "nomodeset")))


@pytest.mark.parametrize(("os_release", "expected"), [
    ('ID=fedora\nVERSION_ID=40\n', "sudo dnf install amd-gpu-firmware"),
    ('ID=bazzite\nID_LIKE="fedora"\n', "rpm-ostree upgrade"),
    ('ID=arch\n', "linux-firmware-amdgpu"),
    ('ID="opensuse-leap"\nID_LIKE="suse opensuse"\n', "sudo zypper install kernel-firmware-amdgpu"),
    (MAGEIA_OS_RELEASE, "kernel-firmware-nonfree"),
    ('ID=nixos\n', "hardware.enableRedistributableFirmware = true;"),
])
def test_firmware_package_per_family(root, os_release, expected):
    sc.write(root, "/etc/os-release", os_release)
    sc.unload_amdgpu(root)
    sc.kernel_log(root, "amdgpu 0000:03:00.0: Direct firmware load for amdgpu/gc_12_0_1_pfp.bin failed with error -2",
                  "amdgpu 0000:03:00.0: amdgpu: Fatal error during GPU init")
    assert expected in only_finding(sc.run_check(root, FW)).fix.steps[0]


# -- item 14: every check touched here names the reports it was verified against ----------------------------------

REPORTS_TESTED = {
    DKMS: ("ROCm/amdgpu#192", "ROCm/ROCm#3701", "ROCm/ROCm#3870", "ROCm/ROCm#5109", "ROCm/amdgpu#209",
           "ROCm/ROCm#2451", "ROCm/ROCm#6193"),
    WSL: ("ROCm/ROCm#3470", "ROCm/hip#3710", "ROCm/ROCm#3571", "ROCm/ROCm#3563", "ROCm/ROCm#4749",
          "bmaltais/kohya_ss#2810"),
    LAUNCH: ("LykosAI/StabilityMatrix#1570", "LykosAI/StabilityMatrix#1132", "Comfy-Org/ComfyUI#6649",
             "AUTOMATIC1111/stable-diffusion-webui#8808", "AUTOMATIC1111/stable-diffusion-webui#16160"),
    FW: ("ROCm/legacy-rocm-build#1357", "geerlingguy/raspberry-pi-pcie-devices#331", "grml/grml#165",
         "ROCm/legacy-rocm-build#912"),
    "nomodeset": ("M-Bab/linux-kernel-amdgpu-binaries#45",),
    SB: ("ROCm/ROCm#4328",),
}


@pytest.mark.parametrize("check_id", sorted(REPORTS_TESTED))
def test_metadata_lists_the_reports_tested_here(check_id):
    assert_metadata_ties(check_id, REPORTS_TESTED[check_id])
