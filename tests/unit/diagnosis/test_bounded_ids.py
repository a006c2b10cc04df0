"""Container detection's numbers stay within 64 bits: a 5000-digit field is garbage, never a ValueError (issue 11
item 3: CPython refuses int() past 4300 digits)."""

from __future__ import annotations

from rocmdesk.diagnosis.container import overflow_gid, parse_id_map, parse_mountinfo
from rocmdesk.host import HostRoot

HUGE = "9" * 5000


def test_id_map_rows_past_64_bits_are_skipped():
    assert parse_id_map(f"0 {HUGE} 1\n0 0 4294967295\n") == ((0, 0, 4294967295),)


def test_overflowgid_of_5000_digits_is_the_default(tmp_path):
    (tmp_path / "proc/sys/kernel").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/overflowgid").write_text(HUGE + "\n")
    assert overflow_gid(HostRoot(tmp_path)) == 65534


def test_tmpfs_size_of_5000_digits_is_unknown():
    line = f"36 25 0:32 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw,size={HUGE}k\n"
    mounts = parse_mountinfo(line)
    assert mounts and mounts[0].size_bytes is None


def test_a_5000_digit_bar_size_in_the_kernel_log_is_no_crash(tmp_path):
    """CPython's int() refuses more than 4300 digits: the small-bar check bounds its digit runs instead."""
    from rocmdesk.diagnosis.model import Status
    from tests.support import scenarios as sc

    root = sc.clean_workstation(tmp_path / "r")
    sc.kernel_log(root, f"[drm] Detected VRAM RAM={HUGE}M, BAR=256M",
                  f"amdgpu 0000:03:00.0: BAR 0: failed to assign [mem size 0x{'f' * 5000} 64bit pref]")
    result = sc.run_check(root, "small-bar")
    assert result.status is not Status.ERROR, result.reason
