"""What the file-by-file fuzz (tests/unit/test_fuzz_sysfs.py) found: readings that vanished without a reason or
read as a fake 0 when one file was bad. Each is pinned here on its own (issue 11, item 3)."""

from __future__ import annotations

import os

import pytest

from rocmdesk.host import HostRoot
from rocmdesk.telemetry.backends.sysfs import SysfsBackend
from rocmdesk.telemetry.ras import parse_bad_pages
from tests.support.gpu_metrics_tables import mi300x_table
from tests.support.instinct import instinct_specs
from tests.support.sysfs_tree import GpuSpec, build_root


def _mi300x(tmp_path):
    build_root(tmp_path / "root", instinct_specs(tmp_path / "dumps", "mi300x", count=1))
    return next((tmp_path / "root/sys/bus/pci/devices").iterdir()).resolve()


def _sample(tmp_path):
    return SysfsBackend(HostRoot(tmp_path / "root")).sample().gpus[0]


def test_an_unreadable_error_counter_makes_a_zero_total_na_not_zero(tmp_path):
    device = _mi300x(tmp_path)
    (device / "ras").mkdir()
    (device / "ras/umc_err_count").write_bytes(b"\x93\xff\x00garbage")
    (device / "ras/gfx_err_count").write_text("ue: 0\nce: 0\n")
    sample = _sample(tmp_path)
    assert "correctable" not in sample.ras and "uncorrectable" not in sample.ras
    assert sample.unavailable["ras.umc"] == "umc_err_count: garbage value '\ufffd\ufffd'"
    assert sample.unavailable["ras.correctable"] == "1 of the error counters could not be read"
    assert sample.to_json()["ras"]["blocks"] == {"gfx": {"ue": 0, "ce": 0}}


def test_a_total_that_counts_errors_is_kept_when_another_counter_is_unreadable(tmp_path):
    device = _mi300x(tmp_path)
    (device / "ras").mkdir()
    (device / "ras/umc_err_count").write_text("")
    (device / "ras/gfx_err_count").write_text("ue: 2\nce: 0\n")
    sample = _sample(tmp_path)
    assert sample.ras["uncorrectable"] == 2  # at least 2: an alert must still fire
    assert "correctable" not in sample.ras and sample.unavailable["ras.umc"] == "umc_err_count: empty file"


def test_garbage_bad_pages_are_na_but_an_empty_table_is_no_page():
    assert parse_bad_pages("\x01\x02binary\n") is None
    assert parse_bad_pages("") == {"retired": 0, "pending": 0, "failed": 0}  # the kernel prints nothing


def test_bad_pages_garbage_gives_its_reason(tmp_path):
    device = _mi300x(tmp_path)
    (device / "ras").mkdir()
    (device / "ras/gpu_vram_bad_pages").write_text("9" * 5000 + "\n")
    sample = _sample(tmp_path)
    assert "pages" not in sample.ras and sample.unavailable["ras.pages"].startswith("gpu_vram_bad_pages: garbage")


@pytest.mark.parametrize(("content", "reason"), [("", "current_compute_partition: empty file"),
                                                  (None, "current_compute_partition: no such file")])
def test_one_partition_mode_missing_says_which(tmp_path, content, reason):
    device = _mi300x(tmp_path)
    (device / "current_memory_partition").write_text("NPS1\n")
    if content is not None:
        (device / "current_compute_partition").write_text(content)
    sample = _sample(tmp_path)
    assert sample.partition == {"memory": "NPS1"}
    assert sample.unavailable["partition.compute"] == reason


def test_a_garbage_link_speed_is_na_with_a_reason_beside_a_good_width(tmp_path):
    device = _mi300x(tmp_path)
    (device / "current_link_speed").write_text("1180591620717411303424\n")
    (device / "current_link_width").write_text("16\n")
    (device / "max_link_speed").write_text("nan\n")
    (device / "max_link_width").write_text("16\n")
    sample = _sample(tmp_path)
    assert sample.pcie == {"speed_gts": None, "width": 16, "max_speed_gts": None, "max_width": 16}
    assert sample.unavailable["pcie.speed_gts"] == "current_link_speed: unknown or garbage value"
    assert sample.unavailable["pcie.max_speed_gts"] == "max_link_speed: unknown or garbage value"


def test_both_link_files_bad_is_one_pcie_reason(tmp_path):
    device = _mi300x(tmp_path)
    (device / "current_link_speed").mkdir()
    (device / "current_link_width").write_text("")
    sample = _sample(tmp_path)
    assert sample.pcie is None
    assert sample.unavailable["pcie"] == ("current_link_speed: a directory where a file was expected; "
                                          "current_link_width: unknown or garbage value")


def test_a_broken_gpu_metrics_table_says_its_clocks_and_rails_are_na(tmp_path):
    device = _mi300x(tmp_path)
    (device / "gpu_metrics").write_bytes(b"")
    sample = _sample(tmp_path)
    assert sample.clocks_mhz == {}
    for key in ("clocks_mhz", "power_w_by_rail", "temperature_c", "throttle", "energy_j"):
        assert sample.unavailable[key].startswith("gpu_metrics: "), key


def test_a_sensor_filled_in_from_gpu_metrics_says_so(tmp_path):
    device = _mi300x(tmp_path)
    (device / "gpu_metrics").write_bytes(mi300x_table(junction=61))
    (next((device / "hwmon").iterdir()) / "temp2_input").write_text("")  # hwmon junction unreadable
    sample = _sample(tmp_path)
    assert sample.temperature_c["junction"] == 61.0
    assert sample.source["temperature_c.junction"] == "gpu_metrics"


@pytest.mark.parametrize("label", [b"\x93\xff\xfe", b"1180591620717411303424", b"x" * 40, b""])
def test_an_unusable_temperature_label_names_the_sensor_by_number_and_says_why(tmp_path, label):
    build_root(tmp_path / "root", [GpuSpec("rx6600", pci="0000:03:00.0", card=0)])
    hwmon = next((tmp_path / "root/sys/bus/pci/devices/0000:03:00.0/hwmon").iterdir())
    (hwmon / "temp2_label").write_bytes(label)
    sample = _sample(tmp_path)
    assert "junction" not in sample.temperature_c and sample.temperature_c["temp2"] is not None
    why = sample.unavailable["temperature_c.junction"]
    assert why.startswith("no sensor labelled junction (temp2_label: ")
    assert sample.unavailable["temperature_crit_c.junction"] == why
    assert "temp2" in sample.temperature_crit_c


def test_an_unusable_rail_label_is_the_reason_for_the_voltage(tmp_path):
    build_root(tmp_path / "root", [GpuSpec("rx6600", pci="0000:03:00.0", card=0)])
    hwmon = next((tmp_path / "root/sys/bus/pci/devices/0000:03:00.0/hwmon").iterdir())
    os.unlink(hwmon / "in0_label")
    os.mkfifo(hwmon / "in0_label")
    sample = _sample(tmp_path)
    assert sample.voltage_mv is None and sample.voltage_mv_by_rail == {}
    assert sample.unavailable["voltage_mv"] == ("no rail labelled vddgfx (in0_label: not a regular file "
                                                "(a FIFO, socket or device))")
    assert sample.unavailable["voltage_mv_by_rail"].startswith("rails not named: in0_label")


def test_a_5000_digit_uid_in_proc_status_is_no_uid_not_a_crash():
    """Found by the long_fields kind: eight checks failed with "Exceeds the limit (4300 digits)"."""
    from rocmdesk.telemetry.accounts import parse_id, parse_proc_status

    assert parse_id("9" * 5000) is None
    assert parse_id(str(1 << 32)) is None and parse_id(str((1 << 32) - 1)) == (1 << 32) - 1
    assert parse_id("٢") is None and parse_id("1000") == 1000
    status = parse_proc_status(f"Name:\tpython\nUid:\t{'9' * 5000}\t1000\t1000\t1000\nGid:\t1000\n")
    assert status is None  # no readable Uid line


def test_a_5000_digit_pci_id_in_uevent_is_no_device_id(tmp_path):
    """The radeon HD 7870 dump has no device file: its id comes from uevent, where a 5000-digit hex id made an
    int that `diagnose --json` could not print (ValueError past 4300 digits)."""
    from rocmdesk.telemetry.discovery import discover_gpus

    build_root(tmp_path / "root", [GpuSpec("hd7870", pci="0000:01:00.0", card=0)])
    uevent = tmp_path / "root/sys/bus/pci/devices/0000:01:00.0/uevent"
    uevent.write_text(uevent.read_text().replace("PCI_ID=1002:6818", "PCI_ID=1002:" + "9" * 5000))
    (gpu,) = discover_gpus(HostRoot(tmp_path / "root"))
    assert gpu.device_id is None


def test_an_unreadable_second_rail_label_is_its_rails_reason(tmp_path):
    build_root(tmp_path / "root", [GpuSpec("vangogh", pci="0000:04:00.0", card=0)])
    hwmon = next((tmp_path / "root/sys/bus/pci/devices/0000:04:00.0/hwmon").iterdir())
    (hwmon / "in1_label").write_text("")
    sample = _sample(tmp_path)
    assert "gfx" in sample.voltage_mv_by_rail and "nb" not in sample.voltage_mv_by_rail
    assert sample.voltage_mv is not None  # vddgfx still found
    assert sample.unavailable["voltage_mv_by_rail"] == "rails not named: in1_label: empty file"


@pytest.mark.parametrize("text", ["9" * 5000, str(1 << 70), "1" * 21])
def test_a_huge_power_cap_is_no_tuning_range_not_a_crash(tmp_path, text):
    """Found by the window fuzz: the Tuning tab could not be built (int() past 4300 digits in tuning_state)."""
    from rocmdesk.fixes.tuning_state import read_tuning_state

    build_root(tmp_path / "root", [GpuSpec("rx6600", pci="0000:03:00.0", card=0)])
    hwmon = next((tmp_path / "root/sys/bus/pci/devices/0000:03:00.0/hwmon").iterdir())
    (hwmon / "power1_cap").write_text(text + "\n")
    state = read_tuning_state(HostRoot(tmp_path / "root"), "0000:03:00.0")
    assert state.power_cap is None and "does not report a power cap range" in " ".join(state.notes)


def test_tool_output_numbers_past_64_bits_are_no_readings():
    """rocm-smi/amd-smi output replayed from a root's commands.json is as hostile as its sysfs: a JSON integer of
    400 digits made float() raise OverflowError, a 5000-digit hex id an int no JSON could print."""
    from rocmdesk.telemetry import smi_parsers

    assert smi_parsers._number(10 ** 400) is None and smi_parsers._number(12) == 12.0
    assert smi_parsers._hex_or_none("0x" + "f" * 5000) is None and smi_parsers._hex_or_none("0x744c") == 0x744C
    assert smi_parsers._hex_or_none("9" * 5000) is None and smi_parsers._hex_or_none("29772") == 29772
    assert smi_parsers._hex_or_none("0xzz") is None and smi_parsers._hex_or_none(" ١٢ ") is None


def test_capture_redaction_and_group_reduction_bound_their_numbers():
    """Found by fuzzing capture: a 5000-digit unique_id (redact) or gid in /etc/group (reduce) raised in int()."""
    from rocmdesk.report import redact, reduce

    assert redact._as_int("9" * 5000) is None and redact._as_int("0x" + "f" * 5000) is None
    assert redact._as_int("5a17c0de0000f00d") == 0x5A17C0DE0000F00D and redact._as_int("42") == 42
    text = f"render:x:{'9' * 5000}:alice\nvideo:x:44:alice\n"
    kept = reduce._group_lines(text, frozenset({44}), redact.Redactor())
    assert "video:x:44:" in kept
