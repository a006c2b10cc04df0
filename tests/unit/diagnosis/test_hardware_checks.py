"""ECC errors and PCIe links, judged from one telemetry sample of the root's GPUs."""

from __future__ import annotations

from pathlib import Path

from rocmdesk.diagnosis.model import Severity, Status
from tests.support.instinct import instinct_specs
from tests.support.scenarios import only_finding, run_check
from tests.support.sysfs_tree import GpuSpec, build_root


def _mi300x(tmp_path: Path, count: int = 2) -> tuple[Path, list[Path]]:
    root = build_root(tmp_path / "root", instinct_specs(tmp_path / "dumps", "mi300x", count=count))
    devices = sorted(p.resolve() for p in (root / "sys/bus/pci/devices").iterdir())
    for device in devices:
        (device / "ras").mkdir()
        (device / "ras/umc_err_count").write_text("ue: 0\nce: 0\n")
        (device / "ras/gpu_vram_bad_pages").write_text("")
    return root, devices


def test_no_ras_anywhere_is_skipped(tmp_path):
    root = build_root(tmp_path / "root", [GpuSpec("rx7900xtx", pci="0000:03:00.0", card=0)])
    assert run_check(root, "gpu-ecc-errors").status is Status.SKIP


def test_clean_counters_pass(tmp_path):
    root, _ = _mi300x(tmp_path)
    assert run_check(root, "gpu-ecc-errors").status is Status.PASS


def test_an_uncorrectable_error_is_an_error_on_that_gpu_only(tmp_path):
    root, devices = _mi300x(tmp_path)
    (devices[1] / "ras/umc_err_count").write_text("ue: 3\nce: 12\n")
    finding = only_finding(run_check(root, "gpu-ecc-errors"))
    assert finding.severity is Severity.ERROR and finding.subject == devices[1].name
    assert "3 uncorrectable" in finding.explanation
    assert any(e.path.endswith("/ras/umc_err_count") and "ue 3" in e.text for e in finding.evidence)
    assert any("amd-smi reset" in step for step in finding.fix.steps)


def test_retired_pages_near_the_admins_limit_are_an_error(tmp_path):
    root, devices = _mi300x(tmp_path, count=1)
    (devices[0] / "ras/gpu_vram_bad_pages").write_text("".join(f"0x{n:08x} : 0x00001000 : R\n" for n in range(9)))
    param = root / "sys/module/amdgpu/parameters/bad_page_threshold"
    param.parent.mkdir(parents=True, exist_ok=True)
    param.write_text("10\n")
    finding = only_finding(run_check(root, "gpu-ecc-errors"))
    assert finding.severity is Severity.ERROR and "9 retired pages of the driver's limit of 10" in finding.explanation


def test_corrected_errors_alone_are_information(tmp_path):
    root, devices = _mi300x(tmp_path, count=1)
    (devices[0] / "ras/umc_err_count").write_text("ue: 0\nce: 40\n")
    finding = only_finding(run_check(root, "gpu-ecc-errors"))
    assert finding.severity is Severity.INFO and "40 corrected" in finding.explanation


def _navi21(tmp_path: Path, width: str, speed: str, busy: str) -> Path:
    root = build_root(tmp_path / "root", [GpuSpec("rx6900xt", pci="0000:03:00.0", card=0)])
    device = next((root / "sys/bus/pci/devices").iterdir()).resolve()
    for name, value in (("current_link_width", width), ("current_link_speed", speed), ("gpu_busy_percent", busy)):
        (device / name).unlink()
        (device / name).write_text(value + "\n")
    return root


def test_full_link_passes(tmp_path):
    assert run_check(_navi21(tmp_path, "16", "16.0 GT/s PCIe", "90"), "pcie-link-degraded").status is Status.PASS


def test_a_slow_link_under_load_is_a_warning(tmp_path):
    finding = only_finding(run_check(_navi21(tmp_path, "16", "2.5 GT/s PCIe", "95"), "pcie-link-degraded"))
    assert finding.severity is Severity.WARNING and "x16 at 2.5 GT/s" in finding.explanation
    assert "95 % busy" in finding.explanation and any("riser" in s for s in finding.fix.steps)


def test_a_slow_link_at_idle_is_only_a_hint(tmp_path):
    finding = only_finding(run_check(_navi21(tmp_path, "16", "2.5 GT/s PCIe", "0"), "pcie-link-degraded"))
    assert finding.severity is Severity.INFO and "may be normal" in finding.explanation


def test_a_quarter_of_the_lanes_is_a_warning_even_at_idle(tmp_path):
    finding = only_finding(run_check(_navi21(tmp_path, "4", "16.0 GT/s PCIe", "0"), "pcie-link-degraded"))
    assert finding.severity is Severity.WARNING and "not a power-saving state" in finding.explanation


def test_garbage_link_files_skip(tmp_path):
    assert run_check(_navi21(tmp_path, "x", "fast", "0"), "pcie-link-degraded").status is Status.SKIP


# -- uncorrectable errors from the kernel log ---------------------------------------------------------------------


def test_logged_uncorrectable_event_without_ras_counters_is_an_error(tmp_path):
    from tests.support import scenarios as sc

    root = sc.clean_workstation(tmp_path / "r")  # an RX 7900 XTX: no ras/ folder
    sc.kernel_log(root, "amdgpu 0000:03:00.0: amdgpu: uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!")
    finding = only_finding(run_check(root, "gpu-ecc-errors"))
    assert finding.severity is Severity.ERROR and finding.subject == "0000:03:00.0"
    assert finding.evidence[0].path == "/var/log/kern.log"
    assert finding.evidence[0].text.endswith("uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!")
    assert "RAS counters (ras/*_err_count) are not readable here" in finding.explanation


def test_the_all_clear_and_zero_counts_are_not_errors(tmp_path):
    from tests.support import scenarios as sc

    root = sc.clean_workstation(tmp_path / "r")
    sc.kernel_log(root, "amdgpu 0000:03:00.0: amdgpu: no uncorrectable hardware errors detected in umc block",
                  "amdgpu 0000:03:00.0: amdgpu: 0 uncorrectable hardware errors detected in umc block",
                  "amdgpu 0000:03:00.0: amdgpu: 5 correctable hardware errors detected in umc block")
    assert run_check(root, "gpu-ecc-errors").status is Status.SKIP


def test_log_shows_what_counters_reset_to_zero_lost(tmp_path):
    from tests.support import scenarios as sc

    root, devices = _mi300x(tmp_path, count=2)
    for name, text in (("proc/sys/kernel/osrelease", sc.KERNEL + "\n"),
                       ("var/log/kern.log", sc.KERN_LOG_CURRENT_BOOT)):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    sc.kernel_log(root, f"amdgpu {devices[1].name}: amdgpu: socket: 0, die: 1, 2 new uncorrectable hardware errors "
                        "detected in umc block")
    finding = only_finding(run_check(root, "gpu-ecc-errors"))
    assert finding.severity is Severity.ERROR and finding.subject == devices[1].name
    assert "counters read zero now" in finding.explanation
    assert any(e.path == "/var/log/kern.log" and "2 new uncorrectable" in e.text for e in finding.evidence)


# -- RDNA cards: the link to the slot is the on-card switch's -----------------------------------------------------


SLOT_X4 = {"current_link_width": "4", "max_link_width": "16", "current_link_speed": "16.0 GT/s PCIe",
           "max_link_speed": "16.0 GT/s PCIe"}
INSIDE = {"current_link_width": "16", "max_link_width": "16", "current_link_speed": "16.0 GT/s PCIe",
          "max_link_speed": "16.0 GT/s PCIe"}


def _behind_switch(tmp_path: Path, link: dict[str, str], busy: str = "95") -> Path:
    from tests.support.sysfs_tree import behind_amd_switch

    root = _navi21(tmp_path, "16", "16.0 GT/s PCIe", busy)
    behind_amd_switch(root, "0000:03:00.0", "0000:01:00.0", "0000:02:00.0", link=link, internal=INSIDE)
    return root


def test_a_card_behind_its_own_switch_is_judged_by_the_upstream_port(tmp_path):
    root = _behind_switch(tmp_path, SLOT_X4)
    finding = only_finding(run_check(root, "pcie-link-degraded"))
    assert finding.severity is Severity.WARNING
    upstream = "/sys/devices/pci0000:00/0000:00:03.0/0000:01:00.0"
    assert (finding.evidence[0].path, finding.evidence[0].text) == (f"{upstream}/current_link_width", "4")
    assert "x4 at 16 GT/s; it can do x16 at 16 GT/s" in finding.explanation
    assert any("describe the link inside the card" in e.text for e in finding.evidence)


def test_a_full_slot_link_behind_the_switch_passes(tmp_path):
    assert run_check(_behind_switch(tmp_path, INSIDE), "pcie-link-degraded").status is Status.PASS


def test_a_bridge_that_is_not_amds_switch_is_not_read(tmp_path):
    root = _behind_switch(tmp_path, SLOT_X4)
    for port in ("0000:01:00.0", "0000:01:00.0/0000:02:00.0"):  # a PLX switch on a riser, not the card's own
        (root / f"sys/devices/pci0000:00/0000:00:03.0/{port}/device").write_text("0x8747\n")
        (root / f"sys/devices/pci0000:00/0000:00:03.0/{port}/vendor").write_text("0x10b5\n")
    assert run_check(root, "pcie-link-degraded").status is Status.PASS  # the GPU's own link: x16


# -- the PCI core's "limited by" line -------------------------------------------------------------------------------


def _limited(root: Path, pci: str, speed: str, width: int, port: str, cap: str, cap_width: int) -> None:
    from tests.support import scenarios as sc

    sc.kernel_log(root, f"pci {pci}: 126.016 Gb/s available PCIe bandwidth, limited by {speed} GT/s PCIe x{width} "
                        f"link at {port} (capable of 252.048 Gb/s with {cap} GT/s PCIe x{cap_width} link)")


def _port(root: Path, port: str, speed: str, width: str) -> None:
    folder = root / "sys/devices/pci0000:00" / port
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "max_link_speed").write_text(f"{speed} GT/s PCIe\n")
    (folder / "max_link_width").write_text(width + "\n")
    link = root / "sys/bus/pci/devices" / port
    if not link.exists():
        link.symlink_to(f"../../../devices/pci0000:00/{port}")


def test_a_slot_that_cannot_do_more_is_the_platforms_limit(tmp_path):
    from tests.support import scenarios as sc

    root = sc.clean_workstation(tmp_path / "r")
    _port(root, "0000:00:03.1", "8.0", "16")
    _limited(root, "0000:03:00.0", "8.0", 16, "0000:00:03.1", "16.0", 16)
    finding = only_finding(run_check(root, "pcie-link-degraded"))
    assert finding.severity is Severity.INFO
    assert finding.title == "The slot's PCIe link is slower than the GPU could use"
    assert finding.evidence[0].path == "/var/log/kern.log"
    assert "limited by 8.0 GT/s PCIe x16" in finding.evidence[0].text
    assert ("8 GT/s PCIe", "/sys/bus/pci/devices/0000:00:03.1/max_link_speed") in [
        (e.text, e.path) for e in finding.evidence]
    assert "not a fault" in finding.explanation


def test_a_link_below_both_ends_is_a_warning_even_at_idle(tmp_path):
    from tests.support import scenarios as sc

    root = sc.clean_workstation(tmp_path / "r")
    _port(root, "0000:00:03.1", "16.0", "16")
    _limited(root, "0000:03:00.0", "16.0", 4, "0000:00:03.1", "16.0", 16)
    finding = only_finding(run_check(root, "pcie-link-degraded"))
    assert finding.severity is Severity.WARNING
    assert "trained to x4 at 16 GT/s at 0000:00:03.1, below what the GPU can do (x16 at 16 GT/s) and what that port " \
           "can do (x16 at 16 GT/s)" in finding.explanation
    assert finding.fix.steps[0].startswith("Move the card to a slot wired for x16")


def test_limited_lines_of_other_devices_are_not_the_gpus(tmp_path):
    from tests.support import scenarios as sc

    root = sc.clean_workstation(tmp_path / "r")
    _limited(root, "0000:01:00.0", "8.0", 2, "0000:00:01.2", "16.0", 4)  # the NVMe drive
    assert run_check(root, "pcie-link-degraded").status is Status.SKIP  # the workstation's GPU has no link files
