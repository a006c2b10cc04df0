"""RAS counters, retired pages and partitions: parsers on the kernel's formats, the backend on a tree."""

from __future__ import annotations

import os

import pytest

from rocmdesk.host import HostRoot
from rocmdesk.telemetry.backends.sysfs import SysfsBackend
from rocmdesk.telemetry.model import GpuSample
from rocmdesk.telemetry.ras import parse_bad_pages, parse_err_count, parse_partition
from tests.support.instinct import instinct_specs
from tests.support.sysfs_tree import build_root


def test_err_count_lines():
    assert parse_err_count("ue: 2\nce: 17\n") == {"ue": 2, "ce": 17}
    assert parse_err_count("") == {}
    assert parse_err_count("ue: " + "9" * 5000) == {}  # over 64 bits: not a count
    assert parse_err_count("ue: -1\nce: x\nbogus\n") == {}


def test_bad_pages_by_state():
    text = "0x00000001 : 0x00001000 : R\n0x00000a2b : 0x00001000 : P\n0x000000ff : 0x00001000 : R\ngarbage\n"
    assert parse_bad_pages(text) == {"retired": 2, "pending": 1, "failed": 0}
    assert parse_bad_pages("") == {"retired": 0, "pending": 0, "failed": 0}


@pytest.mark.parametrize(("text", "value"), [("SPX\n", "SPX"), ("NPS4", "NPS4"), ("", None),
                                             ("$(reboot)", None), ("x" * 100, None)])
def test_partition_names(text, value):
    assert parse_partition(text) == value


def _mi300x(tmp_path):
    build_root(tmp_path / "root", instinct_specs(tmp_path / "dumps", "mi300x", count=1))
    device = next((tmp_path / "root/sys/bus/pci/devices").iterdir()).resolve()
    return device


def test_the_backend_reads_counters_pages_and_partitions(tmp_path):
    device = _mi300x(tmp_path)
    (device / "ras").mkdir()
    (device / "ras/umc_err_count").write_text("ue: 1\nce: 5\n")
    (device / "ras/gfx_err_count").write_text("ue: 0\nce: 2\n")
    (device / "ras/gpu_vram_bad_pages").write_text("0x00000001 : 0x00001000 : R\n")
    (device / "current_compute_partition").write_text("CPX\n")
    (device / "current_memory_partition").write_text("NPS4\n")
    sample = SysfsBackend(HostRoot(tmp_path / "root")).sample().gpus[0]
    assert sample.ras == {"blocks": {"gfx": {"ue": 0, "ce": 2}, "umc": {"ue": 1, "ce": 5}},
                          "uncorrectable": 1, "correctable": 7, "pages": {"retired": 1, "pending": 0, "failed": 0}}
    assert sample.partition == {"compute": "CPX", "memory": "NPS4"}
    again = GpuSample.from_json(sample.to_json(), info=sample.info)  # a bundle keeps them
    assert again.ras == sample.ras and again.partition == sample.partition


def test_no_ras_folder_is_na_with_a_reason(tmp_path):
    device = _mi300x(tmp_path)
    assert not (device / "ras").exists()
    sample = SysfsBackend(HostRoot(tmp_path / "root")).sample().gpus[0]
    assert sample.ras is None and "no ras folder" in sample.unavailable["ras"]


def test_an_unreadable_counter_is_skipped_with_its_reason(tmp_path):
    device = _mi300x(tmp_path)
    (device / "ras").mkdir()
    os.mkfifo(device / "ras/umc_err_count")  # a FIFO: refused without blocking
    (device / "ras/sdma_err_count").mkdir()  # a folder where a file should be
    sample = SysfsBackend(HostRoot(tmp_path / "root")).sample().gpus[0]
    assert sample.ras["blocks"] == {}
    assert "uncorrectable" not in sample.ras  # no counter read: N/A, not a fake 0 (issue 11 item 3)
    assert sample.unavailable["ras.umc"] == "not a regular file (a FIFO, socket or device)"
    assert "ras.sdma" in sample.unavailable and "ras.uncorrectable" in sample.unavailable


@pytest.mark.parametrize("ras", [5, "x", {"blocks": [1]}, {"blocks": {"umc": {"ue": "lots"}}, "uncorrectable": 1e300}])
def test_hostile_json_never_crashes(ras):
    data = {"card": "card0", "pci": "0000:01:00.0", "ras": ras, "partition": {"compute": ["SPX"]}}
    sample = GpuSample.from_json(data)
    assert sample.ras is None or isinstance(sample.ras["blocks"], dict)


@pytest.mark.parametrize(("text", "speed"), [("16.0 GT/s PCIe\n", 16.0), ("8 GT/s", 8.0), ("Unknown\n", None),
                                             ("", None), ("9" * 5000 + " GT/s", None), ("2.5 GT/s PCIe\x00\x00", 2.5)])
def test_link_speed_text(text, speed):
    from rocmdesk.telemetry.pcie import parse_speed_gts

    assert parse_speed_gts(text) == speed


@pytest.mark.parametrize(("text", "width"), [("16\n", 16), ("16\n\x00\x00", 16), ("0", None), ("64", None),
                                             ("x16", None), ("", None), ("1" * 5000, None)])
def test_link_width_text(text, width):
    from rocmdesk.telemetry.pcie import parse_width

    assert parse_width(text) == width


def test_counters_are_read_again_after_the_interval_not_every_sample(tmp_path, monkeypatch):
    from rocmdesk.telemetry.backends import sysfs

    device = _mi300x(tmp_path)
    (device / "ras").mkdir()
    (device / "ras/umc_err_count").write_text("ue: 0\nce: 1\n")
    clock = [1000.0]
    monkeypatch.setattr(sysfs.time, "monotonic", lambda: clock[0])
    backend = SysfsBackend(HostRoot(tmp_path / "root"))
    first = backend.sample().gpus[0]
    assert first.ras["uncorrectable"] == 0
    (device / "ras/umc_err_count").write_text("ue: 2\nce: 1\n")
    clock[0] += sysfs.RAS_INTERVAL_S / 2
    second = backend.sample().gpus[0]
    assert second.ras["uncorrectable"] == 0  # within the interval: the last reading
    second.ras["blocks"]["umc"]["ue"] = 99  # each sample has its own copy
    clock[0] += sysfs.RAS_INTERVAL_S
    third = backend.sample().gpus[0]
    assert third.ras["uncorrectable"] == 2 and third.ras["blocks"]["umc"] == {"ue": 2, "ce": 1}
    assert first.ras["blocks"]["umc"]["ue"] == 0
