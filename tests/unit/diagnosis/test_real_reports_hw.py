"""Real public reports for the driver, permission and hardware checks (issue 12, item 14), rebuilt as host roots.

Each case starts from the clean Ubuntu workstation (tests/support/scenarios.py via tests/support/reports.py) and puts
in what the reporter pasted: the GPUs (PCI id, KFD node or none), kernel log lines, groups and device nodes,
distribution and kernel. The docstring names the report and what had to be assumed. Each case runs the whole
diagnosis and asserts the finding, its severity, its evidence, that the fix steps are the ones that solved it in the
thread, and that nothing else fires (the set of non-pass findings is what the report implies).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmdesk.diagnosis.metadata import load_metadata
from rocmdesk.diagnosis.model import Severity, Status
from tests.support import scenarios as sc
from tests.support.initramfs_images import install_matching_initramfs
from tests.support.reports import (
    Gpu,
    diagnose,
    drop_kfd_node,
    evidence_texts,
    only,
    real_report_tests_text,
    reporter_machine,
    set_kernel,
    steps_of,
)

DISCO = ('NAME="Ubuntu"\nVERSION="19.10 (Eoan Ermine)"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID="19.10"\n'
         'VERSION_CODENAME=eoan\nUBUNTU_CODENAME=eoan\n')
BIONIC = ('NAME="Ubuntu"\nVERSION="18.04.1 LTS (Bionic Beaver)"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID="18.04"\n'
          'VERSION_CODENAME=bionic\nUBUNTU_CODENAME=bionic\n')
XENIAL = ('NAME="Ubuntu"\nVERSION="16.04.3 LTS (Xenial Xerus)"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID="16.04"\n'
          'VERSION_CODENAME=xenial\nUBUNTU_CODENAME=xenial\n')
BUSTER = 'PRETTY_NAME="Debian GNU/Linux 10 (buster)"\nNAME="Debian GNU/Linux"\nVERSION_ID="10"\nID=debian\n'
POLARIS10 = 0x67DF  # Ellesmere [Radeon RX 470/480/570/570X/580/580X]


def boot_kernel(root: Path, kver: str) -> None:
    """The reporter's kernel, with the initramfs its generator builds for it (so no stale-image alarm)."""
    set_kernel(root, kver)
    install_matching_initramfs(root, kver)


# -- pcie-atomics-missing -----------------------------------------------------------------------------------------

ATOMICS = "pcie-atomics-missing"


def test_legacy_1214_rx580_on_xeon_x5650(tmp_path):
    """ROCm/legacy-rocm-build#1214: RX 580 [1002:67df] (gfx803) on a Xeon X5650 board; dmesg "amdgpu: skipped device
    1002:67df, PCI rejects atomics". AMD (jlgreathouse): that CPU has no PCIe atomics, which gfx803 needs; a new
    GPU or a new CPU (and mainboard). Assumed: Ubuntu 18.04 with its 5.4 HWE kernel, ROCm 3.7 in /opt, the log
    line's "kfd kfd:" prefix of that kernel, KFD without the GPU's node."""
    root = reporter_machine(tmp_path / "r", [Gpu(80003, POLARIS10)], rocm="3.7.0")
    sc.write(root, "/etc/os-release", BIONIC)
    drop_kfd_node(root)
    sc.kernel_log(root, "kfd kfd: amdgpu: skipped device 1002:67df, PCI rejects atomics 730<0")
    finding = only(diagnose(root), ATOMICS)
    assert finding.severity is Severity.ERROR
    assert finding.evidence[0].path == "/var/log/kern.log"
    assert finding.evidence[0].text.endswith("skipped device 1002:67df, PCI rejects atomics 730<0")
    assert "software cannot add PCIe atomics" in steps_of(finding) and "newer CPU/mainboard" in steps_of(finding)


def test_legacy_192_msi_970a_two_cards_both_skipped(tmp_path):
    """ROCm/legacy-rocm-build#192: MSI 970A-G46 (AMD 970 chipset, PCIe 2), RX 480/580 cards [1002:67df]; the log
    has "kfd kfd: skipped device 1002:67df, PCI rejects atomics" for each card. AMD (fxkamd): the mainboard does
    not support PCIe atomics, ROCm cannot run; a PCIe 3 mainboard is needed. Assumed: two cards (at 01:00.0 and
    02:00.0), Ubuntu 16.04, ROCm 1.6, neither card in KFD's topology."""
    root = reporter_machine(tmp_path / "r", [Gpu(80003, POLARIS10, pci="0000:01:00.0"),
                                             Gpu(80003, POLARIS10, pci="0000:02:00.0")], rocm="1.6.0")
    sc.write(root, "/etc/os-release", XENIAL)
    drop_kfd_node(root, "0000:01:00.0")
    drop_kfd_node(root, "0000:02:00.0")
    sc.kernel_log(root, "kfd kfd: skipped device 1002:67df, PCI rejects atomics",
                  "[drm] Initialized amdgpu 3.18.0 20150101 for 0000:01:00.0 on minor 0",
                  "kfd kfd: skipped device 1002:67df, PCI rejects atomics",
                  "[drm] Initialized amdgpu 3.18.0 20150101 for 0000:02:00.0 on minor 1")
    finding = only(diagnose(root), ATOMICS)
    assert finding.severity is Severity.ERROR
    skipped = [t for t in evidence_texts(finding) if "PCI rejects atomics" in t]
    assert len(skipped) == 2 and all(t.startswith("/var/log/kern.log:") for t in skipped)
    assert "newer CPU/mainboard" in steps_of(finding)


def test_legacy_364_h270_second_card_on_chipset_slot(tmp_path):
    """ROCm/legacy-rocm-build#364: ASRock H270 board, two RX 570 [1002:67df]; the card in the CPU's x16 slot
    (01:00.0) works, the one behind the chipset's root port 00:1c.0 (02:00.0, x4) is "skipped ... PCI rejects
    atomics". The reporter: the chipset slot lacks atomics; a board whose slots hang off the CPU. Assumed: Ubuntu
    16.04, ROCm 1.7, the first card's KFD node present (gfx803), the second's absent."""
    root = reporter_machine(tmp_path / "r", [Gpu(80003, POLARIS10, pci="0000:01:00.0"),
                                             Gpu(80003, POLARIS10, pci="0000:02:00.0")], rocm="1.7.0")
    sc.write(root, "/etc/os-release", XENIAL)
    drop_kfd_node(root, "0000:02:00.0")
    sc.kernel_log(root, "kfd kfd: added device 1002:67df", "kfd kfd: skipped device 1002:67df, PCI rejects atomics")
    finding = only(diagnose(root), ATOMICS)
    assert [t for t in evidence_texts(finding) if "atomics" in t] == [
        t for t in evidence_texts(finding) if t.endswith("kfd kfd: skipped device 1002:67df, PCI rejects atomics")]
    assert steps_of(finding).startswith("Move the card to an x16 slot wired directly to the CPU")


# -- user-not-in-render-group -----------------------------------------------------------------------------------

GROUPS = "user-not-in-render-group"


def test_legacy_1080_rocminfo_only_as_root_user_in_video(tmp_path):
    """ROCm/legacy-rocm-build#1080: Ubuntu 19.10, kernel 5.3.0-46-generic, rocm-dkms 3.3.0-19, RX 580; rocminfo
    says "xeon is member of video group" and fails with HSA_STATUS_ERROR_OUT_OF_RESOURCES, works with sudo. Fixed
    (jankaltoun, confirmed by others): add the user to both video and render, then restart. Assumed: /dev/kfd and
    renderD128 root:render 0660 (systemd's rule on 19.10), the user (alice) in video only, the DKMS tree not
    rebuilt (the report shows the module loaded)."""
    root = reporter_machine(tmp_path / "r", [Gpu(80003, POLARIS10)], rocm="3.3.0")
    sc.write(root, "/etc/os-release", DISCO)
    boot_kernel(root, "5.3.0-46-generic")
    sc.remove_user_from_group(root, "render")
    sc.session_groups(root, [4, 24, 27, 30, sc.VIDEO_GID, 46, 100, 114, sc.UID])
    finding = only(diagnose(root), GROUPS)
    assert finding.severity is Severity.ERROR and finding.subject == sc.USER
    ev = evidence_texts(finding)
    assert any(t.startswith("/dev/kfd:") and "render" in t for t in ev)
    assert f"/etc/group:11: render:x:{sc.RENDER_GID}:ollama" in ev
    assert f"/proc/self/status:7: Uid:\t{sc.UID}\t{sc.UID}\t{sc.UID}\t{sc.UID}" in ev
    steps = steps_of(finding)
    assert f"sudo usermod -a -G render,video {sc.USER}" in steps
    assert "Log out and log back in (or reboot)" in steps


# -- a ROCm older than the support table is not judged by the newest release ---------------------------------------


def test_rocm_older_than_the_support_table_is_not_called_unsupported(tmp_path):
    """ROCm 3.3 supported gfx803 (AMD ended gfx8 with ROCm 4): judging it by the newest release raised "ROCm does not
    support gfx803" on the reporters' machines of legacy-rocm-build#1080 and #1214. The table starts at 5.7."""
    root = reporter_machine(tmp_path / "r", [Gpu(80003, POLARIS10)], rocm="3.3.0")
    result = sc.run_check(root, "gpu-not-supported-by-rocm")
    assert result.status is Status.SKIP and "older than rocmdesk's support table" in result.reason
    root = reporter_machine(tmp_path / "r2", [Gpu(80003, POLARIS10)], rocm="6.2.4")
    assert sc.run_check(root, "gpu-not-supported-by-rocm").status is Status.FAIL


# -- item 14: every report the metadata lists is rebuilt here ------------------------------------------------------

# -- kfd-missing --------------------------------------------------------------------------------------------------

KFD_MISSING = "kfd-missing"
GENTOO = 'NAME=Gentoo\nID=gentoo\nPRETTY_NAME="Gentoo Linux"\nVERSION_ID="2.8"\n'
TALOS = 'NAME="Talos"\nID=talos\nVERSION_ID=v1.6.4\nPRETTY_NAME="Talos (v1.6.4)"\n'


def no_kfd_kernel(tmp: Path, kver: str, config_line: str | None, where: str = "boot") -> Path:
    """The workstation on kernel ``kver`` built without KFD: no /dev/kfd, no KFD topology, and the kernel's config
    (in /boot or as /proc/config.gz) carrying ``config_line`` for CONFIG_HSA_AMD (None: no such line at all)."""
    import gzip
    import shutil

    root = reporter_machine(tmp / "r", [Gpu(100300, 0x73BF)])
    boot_kernel(root, kver)
    sc.remove_kfd(root)
    shutil.rmtree(root / "sys/class/kfd")
    config = "CONFIG_DRM_AMDGPU=m\nCONFIG_DRM_AMDGPU_USERPTR=y\n" + (config_line + "\n" if config_line else "")
    (root / "boot" / f"config-{kver}").unlink(missing_ok=True)
    if where == "boot":
        sc.write(root, f"/boot/config-{kver}", config)
    else:
        sc.write(root, "/proc/config.gz", gzip.compress(config.encode()))
    return root


def test_legacy_1643_gentoo_custom_kernel_without_hsa_amd(tmp_path):
    """ROCm/legacy-rocm-build#1643: Gentoo, custom kernel 5.15.7-gentoo, a custom ROCm build; clinfo finds no device
    and "/dev/kfd no such file or directory": "how do I enable it in my kernel build?". The answer is the kernel's
    HSA driver option, CONFIG_HSA_AMD. Assumed: the config installed as /boot/config-5.15.7-gentoo (`make install`),
    amdgpu a module, the workstation's RX 6900 XT, no ollama change."""
    root = no_kfd_kernel(tmp_path, "5.15.7-gentoo", "# CONFIG_HSA_AMD is not set")
    sc.write(root, "/etc/os-release", GENTOO)
    findings = diagnose(root)
    finding = findings[KFD_MISSING][0]
    assert finding.severity is Severity.ERROR
    assert "/dev/kfd: does not exist" in evidence_texts(finding)
    assert "/boot/config-5.15.7-gentoo:3: # CONFIG_HSA_AMD is not set" in evidence_texts(finding)
    steps = steps_of(finding)
    assert steps.startswith("Rebuild the kernel with `CONFIG_HSA_AMD=y`")
    assert "amdgpu-dkms" not in steps  # no amdgpu-dkms for Gentoo kernels
    assert set(findings) <= {KFD_MISSING, "gpu-not-supported-by-rocm", "kfd-gpu-not-listed"}, \
        {k: [f.title for f in v] for k, v in findings.items()}


def test_siderolabs_307_talos_kernel_config_gz_without_hsa_amd(tmp_path):
    """siderolabs/extensions#307: Talos's kernel had amdgpu but no /dev/kfd; fixed by siderolabs/pkgs PR #893 ("AMD
    KFD support was not enabled in Kconfig": `# CONFIG_HSA_AMD is not set` -> `CONFIG_HSA_AMD=y`). Talos keeps no
    /boot config, so the kernel's /proc/config.gz is read. Assumed: Talos v1.6.4, kernel 6.1.74-talos, the
    workstation's RX 6900 XT, the config reduced to the amdgpu lines."""
    root = no_kfd_kernel(tmp_path, "6.1.74-talos", "# CONFIG_HSA_AMD is not set", where="proc")
    sc.write(root, "/etc/os-release", TALOS)
    finding = diagnose(root)[KFD_MISSING][0]
    assert "/proc/config.gz:3: # CONFIG_HSA_AMD is not set" in evidence_texts(finding)
    assert "CONFIG_HSA_AMD=y" in steps_of(finding)


def test_kfd_missing_config_without_the_option_line_or_corrupt(tmp_path):
    """No CONFIG_HSA_AMD line at all (its dependencies unmet) counts as built without it; a corrupt config.gz is
    unreadable, so the finding keeps the generic steps."""
    root = no_kfd_kernel(tmp_path / "a", "6.1.74-talos", None, where="proc")
    finding = diagnose(root)[KFD_MISSING][0]
    assert "/proc/config.gz: no CONFIG_HSA_AMD line" in evidence_texts(finding)
    root = no_kfd_kernel(tmp_path / "b", "6.1.74-talos", None, where="proc")
    sc.write(root, "/proc/config.gz", b"\x1f\x8bnot really gzip")
    finding = diagnose(root)[KFD_MISSING][0]
    assert not any("CONFIG_HSA_AMD" in t for t in evidence_texts(finding))
    assert "grep CONFIG_HSA_AMD" in steps_of(finding)  # the metadata's generic steps


REPORTS_TESTED = {
    ATOMICS: ("ROCm/legacy-rocm-build#1214", "ROCm/legacy-rocm-build#192", "ROCm/legacy-rocm-build#364"),
    GROUPS: ("ROCm/legacy-rocm-build#1080",),
    KFD_MISSING: ("ROCm/legacy-rocm-build#1643", "siderolabs/extensions#307"),
}


@pytest.mark.parametrize("check_id", sorted(REPORTS_TESTED))
def test_metadata_lists_the_reports_rebuilt_here(check_id):
    listed = [e.split(":", 1)[0] for e in load_metadata()[check_id].reports]
    assert set(REPORTS_TESTED[check_id]) <= set(listed)  # and the rest are rebuilt in another real-report file
    text = real_report_tests_text()
    for report in listed:
        assert f"{report}:" in text, report  # a docstring names it
