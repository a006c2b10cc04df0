"""The bad-input matrix: nothing crashes, hangs, or reports a number that is not in the files."""

from __future__ import annotations

import errno
import os
import shutil
import threading

import pytest

from rocmdesk import host
from rocmdesk.host import HostRoot
from rocmdesk.telemetry.backends.sysfs import GONE_REASON, SysfsBackend
from rocmdesk.telemetry.discovery import discover_gpus
from tests.support.sysfs_tree import GpuSpec, build_root

# (file relative to the device folder, metric key) on the rx580 dump: every kind of reading.
TARGETS = [
    ("hwmon/hwmon4/temp1_input", "temperature_c.edge"),
    ("hwmon/hwmon4/power1_average", "power_w"),
    ("hwmon/hwmon4/power1_cap", "power_cap_w"),
    ("mem_info_vram_used", "vram_used_bytes"),
    ("mem_info_gtt_used", "gtt_used_bytes"),
    ("gpu_busy_percent", "gpu_busy_percent"),
    ("mem_busy_percent", "mem_busy_percent"),
    ("hwmon/hwmon4/fan1_input", "fan_rpm"),
    ("hwmon/hwmon4/pwm1", "fan_percent"),
    ("hwmon/hwmon4/in0_input", "voltage_mv"),
    ("power_dpm_force_performance_level", "performance_level"),
    ("pp_power_profile_mode", "power_profile"),
]

GARBAGE = [
    ("", "empty file"),
    ("  \n\t\n", "empty file"),
    ("12ab\n", "garbage value '12ab'"),
    ("123abc", "garbage value '123abc'"),
    ("18446744073709551616000\n", "garbage value '18446744073709551616000'"),
    ("nan\n", "garbage value 'nan'"),
]


@pytest.fixture
def rx580(tmp_path):
    build_root(tmp_path, [GpuSpec("rx580", pci="0000:09:00.0", card=0)])
    root = HostRoot(tmp_path)
    return root, root.real_path("/sys/class/drm/card0/device")


def _sample(root):
    backend = SysfsBackend(root)
    backend.discover()
    snap = backend.sample()
    assert len(snap.gpus) == 1
    return snap.gpus[0], snap


def _value(sample, key):
    return sample.get(key)


def _write(device, rel, text):
    with open(os.path.join(device, rel), "w") as fh:
        fh.write(text)


@pytest.mark.parametrize(("rel", "key"), TARGETS)
@pytest.mark.parametrize(("text", "reason"), GARBAGE)
def test_garbage_is_not_a_number(rx580, rel, key, text, reason):
    root, device = rx580
    _write(device, rel, text)
    sample, snap = _sample(root)
    assert _value(sample, key) is None
    assert sample.unavailable[key] == reason
    assert snap.errors == []


@pytest.mark.parametrize(
    ("rel", "key", "text"),
    [
        ("hwmon/hwmon4/power1_average", "power_w", "-41045000\n"),
        ("mem_info_vram_used", "vram_used_bytes", "-1\n"),
        ("gpu_busy_percent", "gpu_busy_percent", "-3\n"),
        ("hwmon/hwmon4/fan1_input", "fan_rpm", "-595\n"),
    ],
)
def test_negative_where_impossible(rx580, rel, key, text):
    root, device = rx580
    _write(device, rel, text)
    sample, _ = _sample(root)
    assert _value(sample, key) is None
    assert sample.unavailable[key] == f"garbage value '{text.strip()}'"


@pytest.mark.parametrize(
    ("rel", "key", "text"),
    [
        ("gpu_busy_percent", "gpu_busy_percent", "101"),
        ("hwmon/hwmon4/temp1_input", "temperature_c.edge", "4294967295000"),
        ("hwmon/hwmon4/temp1_input", "temperature_c.edge", "-273150"),
        ("hwmon/hwmon4/pwm1", "fan_percent", "256"),
        ("hwmon/hwmon4/power1_average", "power_w", "18446744073709551615"),
    ],
)
def test_out_of_range(rx580, rel, key, text):
    root, device = rx580
    _write(device, rel, text)
    sample, _ = _sample(root)
    assert _value(sample, key) is None
    assert sample.unavailable[key] == f"out of range value '{text}'"


def test_static_files_with_garbage(rx580):
    root, device = rx580
    _write(device, "hwmon/hwmon4/temp1_crit", "hot\n")
    _write(device, "mem_info_vram_total", "")
    _write(device, "hwmon/hwmon4/pwm1_max", "0\n")
    _write(device, "hwmon/hwmon4/power1_cap_max", "123abc")
    sample, _ = _sample(root)
    assert sample.temperature_crit_c == {} and sample.unavailable["temperature_crit_c.edge"] == "garbage value 'hot'"
    assert sample.vram_total_bytes is None and sample.unavailable["vram_total_bytes"] == "empty file"
    assert sample.fan_percent is None and "out of range value '0'" in sample.unavailable["fan_percent"]
    assert sample.power_cap_max_w is None and sample.unavailable["power_cap_max_w"] == "garbage value '123abc'"
    assert sample.temperature_c == {"edge": 44.0}  # the rest still reads


def test_garbage_clock_tables_and_sensors_each_say_why(rx580):
    root, device = rx580
    _write(device, "pp_dpm_sclk", "this is not a table\n")
    _write(device, "pp_dpm_mclk", "0: 300Mhz\n1: 1000Mhz\n")  # no `*`
    _write(device, "hwmon/hwmon4/freq2_input", "-7\n")
    sample, _ = _sample(root)
    assert sample.sclk_mhz == 798  # the actual clock: freq1_input 798080000 Hz
    assert sample.sclk_dpm_mhz is None and "garbage" in sample.unavailable["sclk_dpm_mhz"]
    assert sample.mclk_mhz is None and sample.unavailable["mclk_mhz"] == "garbage value '-7'"
    assert sample.mclk_dpm_mhz is None
    assert sample.unavailable["mclk_dpm_mhz"] == "no active level marked in the table"


def _failing_read(monkeypatch, suffix, error_no):
    real = host.read_fd_text

    def read(path, max_bytes=host.DEFAULT_MAX_BYTES):
        if path.endswith(suffix):
            raise OSError(error_no, os.strerror(error_no), path)
        return real(path, max_bytes)

    monkeypatch.setattr(host, "read_fd_text", read)


@pytest.mark.parametrize(
    ("error_no", "reason"),
    [(errno.EACCES, "unreadable (permission denied)"), (errno.EPERM, "unreadable (permission denied)"),
     (errno.ENODEV, "device gone (ENODEV)"), (errno.EIO, "I/O error")],
)
def test_read_errors(rx580, monkeypatch, error_no, reason):
    root, _ = rx580
    backend = SysfsBackend(root)
    backend.discover()
    _failing_read(monkeypatch, "/gpu_busy_percent", error_no)
    _failing_read(monkeypatch, "/temp1_input", error_no)
    snap = backend.sample()
    sample = snap.gpus[0]
    assert sample.gpu_busy_percent is None and sample.unavailable["gpu_busy_percent"] == reason
    assert sample.temperature_c == {} and sample.unavailable["temperature_c.edge"] == reason
    assert sample.power_w == 41.045 and snap.errors == []


def test_unreadable_at_discovery(rx580, monkeypatch):
    root, _ = rx580
    _failing_read(monkeypatch, "/mem_info_vram_total", errno.EACCES)
    sample, _ = _sample(root)
    assert sample.vram_total_bytes is None
    assert sample.unavailable["vram_total_bytes"] == "unreadable (permission denied)"
    assert discover_gpus(root)[0].vram_total_bytes is None


def test_directory_where_a_file_should_be(rx580):
    root, device = rx580
    backend = SysfsBackend(root)
    backend.discover()
    os.unlink(os.path.join(device, "gpu_busy_percent"))
    os.mkdir(os.path.join(device, "gpu_busy_percent"))
    sample = backend.sample().gpus[0]
    assert sample.gpu_busy_percent is None
    assert sample.unavailable["gpu_busy_percent"] == "a directory where a file was expected"
    # ... and the same when it is already a directory at discovery.
    sample, _ = _sample(root)
    assert sample.unavailable["gpu_busy_percent"] == "a directory where a file was expected"


def test_file_vanishing_between_listing_and_reading(rx580):
    root, device = rx580
    backend = SysfsBackend(root)
    backend.discover()
    os.unlink(os.path.join(device, "mem_info_vram_used"))
    os.unlink(os.path.join(device, "hwmon/hwmon4/temp1_input"))
    snap = backend.sample()
    sample = snap.gpus[0]
    assert sample.vram_used_bytes is None and sample.unavailable["vram_used_bytes"] == "no such file"
    assert sample.unavailable["temperature_c.edge"] == "no such file"
    assert snap.errors == []


def test_symlink_loops(rx580):
    root, device = rx580
    backend = SysfsBackend(root)
    backend.discover()
    hwmon = os.path.join(device, "hwmon/hwmon4")
    os.unlink(os.path.join(hwmon, "temp1_input"))
    os.symlink("temp1_input", os.path.join(hwmon, "temp1_input"))
    os.unlink(os.path.join(device, "gpu_busy_percent"))
    os.symlink("loop_b", os.path.join(device, "gpu_busy_percent"))
    os.symlink("gpu_busy_percent", os.path.join(device, "loop_b"))
    sample = backend.sample().gpus[0]
    assert sample.unavailable["temperature_c.edge"] == "symlink loop"
    assert sample.unavailable["gpu_busy_percent"] == "symlink loop"
    sample, _ = _sample(root)  # rediscovered with the loops in place
    assert sample.unavailable["gpu_busy_percent"] == "symlink loop"


def test_fifo_does_not_hang(rx580):
    root, device = rx580
    os.unlink(os.path.join(device, "gpu_busy_percent"))
    os.mkfifo(os.path.join(device, "gpu_busy_percent"))
    result = {}
    worker = threading.Thread(target=lambda: result.update(sample=_sample(root)[0]), daemon=True)
    worker.start()
    worker.join(5)
    assert not worker.is_alive(), "sampling blocked on a FIFO"
    assert result["sample"].gpu_busy_percent is None


def test_gpu_removed_mid_sample(tmp_path, monkeypatch):
    build_root(tmp_path, [GpuSpec("rx580", pci="0000:09:00.0", card=0),
                          GpuSpec("rx6900xt", pci="0000:0c:00.0", card=1)])
    root = HostRoot(tmp_path)
    backend = SysfsBackend(root)
    backend.discover()
    device = root.real_path("/sys/class/drm/card0/device")
    real = host.read_fd_text
    calls = {"n": 0}

    def read(path, max_bytes=host.DEFAULT_MAX_BYTES):
        calls["n"] += 1
        if calls["n"] == 4 and os.path.isdir(device):  # unplugged after three reads of card0
            os.unlink(tmp_path / "sys/class/drm/card0")
            shutil.rmtree(device)
        return real(path, max_bytes)

    monkeypatch.setattr(host, "read_fd_text", read)
    snap = backend.sample()
    assert snap.errors == ["GPU 0000:09:00.0 was removed"]
    gone, other = snap.gpus
    assert gone.info.pci == "0000:09:00.0"
    assert gone.temperature_c == {} and gone.power_w is None and gone.vram_used_bytes is None
    assert gone.unavailable["power_w"] == GONE_REASON
    assert other.temperature_c == {"edge": 56.0, "junction": 59.0, "mem": 54.0,
                                   "vrgfx": 49.0, "vrsoc": 49.0, "vrmem": 51.0}  # the last three: gpu_metrics
    snap = backend.sample()
    assert [g.info.pci for g in snap.gpus] == ["0000:0c:00.0"] and snap.errors == []


def test_enodev_everywhere_keeps_the_gpu(rx580, monkeypatch):
    """A GPU in reset answers ENODEV but its folder is still there: not 'removed'."""
    root, _ = rx580
    backend = SysfsBackend(root)
    backend.discover()

    def read(path, max_bytes=host.DEFAULT_MAX_BYTES):
        raise OSError(errno.ENODEV, "No such device", path)

    monkeypatch.setattr(host, "read_fd_text", read)
    snap = backend.sample()
    assert snap.errors == []
    sample = snap.gpus[0]
    assert sample.power_w is None and sample.unavailable["power_w"] == "device gone (ENODEV)"


def test_huge_file(rx580):
    root, device = rx580
    _write(device, "mem_info_vram_used", "1" * (2 << 20))
    sample, _ = _sample(root)
    assert sample.vram_used_bytes is None
    assert sample.unavailable["vram_used_bytes"].startswith(("file too large", "garbage value"))
