"""Size never crashes a parser: over-long numbers, NaN/inf and deep JSON become reasons (issue 11, item 3).

CPython refuses int() of more than 4300 decimal digits with a plain ValueError ("Exceeds the
limit", gh-95778), which the sysfs backend did not catch, and its JSON decoder raises
RecursionError for a document nested ~1000 deep.
"""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import tarfile

import pytest

from rocmdesk import host
from rocmdesk.report.manifest import FORMAT, MANIFEST_NAME, Manifest, ManifestError
from rocmdesk.telemetry import fdinfo, kfd_procs, parsers
from rocmdesk.telemetry.recording import RecordingError, parse_lines

HUGE = "9" * 5000


@pytest.mark.parametrize("text", [HUGE, "-" + HUGE, str(2**70), "1" * 21, HUGE + "\n"])
def test_parse_int_turns_oversize_into_garbage(text):
    with pytest.raises(parsers.ValueProblem, match="garbage value"):
        parsers.parse_int(text, signed=True)


def test_parse_int_keeps_the_full_64_bit_range():
    assert parsers.parse_int(str(parsers.U64_MAX)) == parsers.U64_MAX
    assert parsers.parse_int(str(-(1 << 63)), signed=True) == -(1 << 63)
    with pytest.raises(parsers.ValueProblem, match="garbage"):
        parsers.parse_int(str(parsers.U64_MAX + 1))


@pytest.mark.parametrize("text", ["nan", "NaN", "inf", "-inf", "1e999", "", "1.5.2", HUGE, "0x10"])
def test_parse_float_refuses_non_finite_and_garbage(text):
    with pytest.raises(parsers.ValueProblem):
        parsers.parse_float(text)


def test_parse_float_reads_plain_numbers():
    assert parsers.parse_float("1.5\n") == 1.5
    assert parsers.parse_float("-3") == -3.0
    assert parsers.parse_float("2e3", maximum=5000) == 2000.0
    with pytest.raises(parsers.ValueProblem, match="out of range"):
        parsers.parse_float("2e3", maximum=100)


def test_bounded_int():
    assert parsers.bounded_int("123") == 123
    assert parsers.bounded_int(HUGE) is None
    assert parsers.bounded_int(str(parsers.U64_MAX + 1)) is None
    assert parsers.bounded_int("ff", base=16) == 255


@pytest.mark.parametrize("text", [f"0: {HUGE}Mhz *\n", f"1: {2**70}Mhz *\n"])
def test_dpm_table_with_a_huge_clock_is_garbage(text):
    with pytest.raises(parsers.ValueProblem, match="garbage value"):
        parsers.active_dpm_mhz(text)


def test_power_profiles_with_huge_index_do_not_crash():
    assert parsers.parse_power_profiles(f"{HUGE} BOOTUP_DEFAULT*:\n") == []
    with pytest.raises(parsers.ValueProblem):
        parsers.active_power_profile(f"{HUGE} BOOTUP_DEFAULT*:\n")


def test_hex_id_and_kfd_counter_and_fdinfo_bounded():
    with pytest.raises(parsers.ValueProblem):
        parsers.parse_hex_id("0x" + "f" * 5000)
    with pytest.raises(parsers.ValueProblem):
        kfd_procs.parse_counter(HUGE)
    with pytest.raises(parsers.ValueProblem):
        fdinfo.parse_memory(HUGE + " KiB")
    with pytest.raises(parsers.ValueProblem):
        fdinfo.parse_ns(HUGE + "ns")
    assert parsers.parse_kfd_properties(f"gfx_target_version {HUGE}\nlocation_id 768\n") == {"location_id": 768}


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_loads_json_refuses_deep_nesting_without_recursion_error():
    for depth in (65, 5000, 200_000):
        with pytest.raises(host.JsonLimitError, match="nested too deeply"):
            host.loads_json(_nested(depth))
    assert host.loads_json(_nested(64)) == json.loads(_nested(64))
    assert host.loads_json(b'{"a": [1, {"b": 2}]}') == {"a": [1, {"b": 2}]}
    with pytest.raises(json.JSONDecodeError):
        host.loads_json("{")


def test_manifest_deep_or_huge_int_is_a_manifest_error():
    deep = '{"format": "' + FORMAT + '", "files": ' + _nested(200_000) + "}"
    with pytest.raises(ManifestError, match="nested too deeply"):
        Manifest.loads(deep.encode())
    with pytest.raises(ManifestError, match="not valid JSON"):
        Manifest.loads(('{"format": "' + FORMAT + '", "created": ' + HUGE + ', "files": []}').encode())


def test_recording_line_deep_or_huge_int_is_a_recording_error():
    for line in (_nested(200_000), '{"t": ' + HUGE + "}"):
        with pytest.raises(RecordingError, match="line 1"):
            parse_lines([line], "r")


def test_diagnose_snapshot_with_a_200k_deep_manifest_exits_2_with_one_line(tmp_path):
    manifest = ('{"format": "' + FORMAT + '", "created": 1.0, "files": ' + _nested(200_000) + "}").encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo(MANIFEST_NAME)
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))
    bundle = tmp_path / "deep.tar.gz"
    bundle.write_bytes(gzip.compress(buf.getvalue()))
    proc = subprocess.run([sys.executable, "-m", "rocmdesk", "diagnose", "--snapshot", str(bundle)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "nested too deeply" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
