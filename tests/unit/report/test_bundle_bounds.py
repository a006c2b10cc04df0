"""Opening a hostile bundle is bounded (issue 11 item 2): what it writes, what it holds, where links lead,
and every manifest and history field checked by type and range. Each case is refused with one line or
opened with the bad value dropped; nothing is written outside the private folder; never a traceback."""

from __future__ import annotations

import io
import json
import os
import tarfile
from contextlib import redirect_stderr, redirect_stdout

import pytest

from rocmdesk.report import bundle as bundle_mod
from rocmdesk.report.bundle import BundleError, open_bundle
from rocmdesk.telemetry import recording as recording_mod
from tests.support import hostile_bundles as hb
from tests.support.hostile_bundles import open_payload


def _refused(tmp_path, tmp_dir, payload: bytes, match: str) -> str:
    with pytest.raises(BundleError, match=match) as info:
        open_payload(tmp_path, tmp_dir, payload)
    assert list(tmp_dir.iterdir()) == [], "the private folder must be removed after a refusal"
    assert "\n" not in str(info.value)
    return str(info.value)


# -- what opening writes ---------------------------------------------------------------------


def test_gnu_sparse_members_are_refused_before_anything_is_written(tmp_path, tmp_dir, monkeypatch):
    """40 sparse members of 64 MiB in a 47 KB bundle wrote 2.7 GB: the limit counted stored bytes only."""
    written = []
    real = bundle_mod._write_file
    monkeypatch.setattr(bundle_mod, "_write_file", lambda f, n, d: (written.append(len(d)), real(f, n, d)))
    size = 1 << 20  # 1 MiB each here; the real attack's 64 MiB is the member limit
    names = [f"sys/s{i}" for i in range(8)]
    entries = [hb.file_entry(n, hb.sparse_data(size)) for n in names]
    payload = hb.bundle(hb.manifest(entries), [hb.sparse_member(n, size) for n in names])
    assert len(payload) < 2048
    _refused(tmp_path, tmp_dir, payload, "sparse")
    assert sum(written) < 4096, "only the manifest may have been written"


def test_extracted_bytes_are_limited_at_their_real_size(tmp_path, tmp_dir, monkeypatch):
    monkeypatch.setattr(bundle_mod, "OPEN_MAX_EXTRACTED_BYTES", 3000)
    files = {f"etc/f{i}": bytes([i]) * 1000 for i in range(5)}
    message = _refused(tmp_path, tmp_dir, hb.simple_bundle(files), "more than")
    assert "3000" in message or "unpack" in message


# -- where links lead ------------------------------------------------------------------------


def _escaping_chain() -> bytes:
    """Each link lexically inside the bundle; followed by the kernel, the chain leaves it:
    ``d/d/up -> ../..`` is the bundle's own folder, so ``up/../..`` is two levels above it."""
    return hb.simple_bundle({}, dirs=["d", "d/d", "sys", "sys/class", "sys/class/hwmon", "sys/class/hwmon/hwmon0"],
                            links={"d/d/up": "../..", "sys/class/hwmon/hwmon0/temp1_input":
                                   "../../../../d/d/up/../../secret"})


def test_a_chain_of_links_resolving_outside_is_refused(tmp_path, tmp_dir):
    (tmp_path / "secret").write_text("97000\n")  # the analyst's own file, two levels above the folder
    _refused(tmp_path, tmp_dir, _escaping_chain(), "outside the bundle")


def test_links_to_links_inside_the_bundle_still_open(tmp_path, tmp_dir):
    payload = hb.simple_bundle({"sys/real/temp1_input": b"41000\n"}, dirs=["sys", "sys/real", "sys/b"],
                               links={"sys/a": "b/c", "sys/b/c": "../real", "sys/b/d": "c/../real/temp1_input"})
    with open_payload(tmp_path, tmp_dir, payload) as opened:
        assert opened.root.read_text("/sys/a/temp1_input") == "41000\n"


# -- manifest fields -------------------------------------------------------------------------


@pytest.mark.parametrize("fields", [
    {"redaction": ["ip", 3]}, {"redaction": {"ip": 2 ** 70}}, {"redaction": {"ip": -1}},
    {"created": float("nan")}, {"created": float("inf")}, {"created": 1e300}, {"created": 2 ** 70},
    {"created": -5.0}, {"created": "yesterday"}, {"created": [1]}, {"history_minutes": float("nan")},
    {"history_minutes": 1e308}, {"notes": "one string"}, {"notes": [1, None]}, {"python_envs": {"a": 1}},
    {"rocmdesk_version": {"x": 1}}, {"source": ["live"]},
])
def test_manifest_fields_are_checked_by_type_and_range(tmp_path, tmp_dir, fields):
    payload = hb.simple_bundle({"proc/cmdline": b"quiet\n"}, dirs=["proc"], **fields)
    path = tmp_path / "b.tar.gz"
    path.write_bytes(payload)
    try:
        opened = open_bundle(path, tmp_dir=str(tmp_dir))
    except BundleError as exc:
        assert "\n" not in str(exc) and "manifest" in str(exc)
        assert list(tmp_dir.iterdir()) == []
        return
    with opened:  # opened: every field is of its type and range
        m = opened.manifest
        assert isinstance(m.created, float) and 0 <= m.created < 4102444800
        assert all(isinstance(k, str) and isinstance(v, int) and 0 <= v < 2 ** 63 for k, v in m.redaction.items())
        assert isinstance(m.history_minutes, float) and 0 <= m.history_minutes <= 7 * 24 * 60
        assert all(isinstance(n, str) for n in m.notes) and all(isinstance(e, str) for e in m.python_envs)
        assert isinstance(m.rocmdesk_version, str) and isinstance(m.source, str)
        assert opened.banner()


@pytest.mark.parametrize("entry", [
    {"path": "proc/cmdline", "type": "file", "size": 2 ** 70, "sha256": "0" * 64},
    {"path": "proc/cmdline", "type": "file", "size": 6.0, "sha256": "0" * 64},
    {"path": "proc/cmdline", "type": "file", "size": True, "sha256": "0" * 64},
    {"path": ["proc"], "type": "file", "size": 6, "sha256": "0" * 64},
    {"path": "proc/cmdline", "type": "link", "target": 5},
])
def test_manifest_entries_beyond_range_are_refused(tmp_path, tmp_dir, entry):
    payload = hb.bundle(hb.manifest([entry]), [hb.file_member("proc/cmdline", b"quiet\n")])
    _refused(tmp_path, tmp_dir, payload, "manifest|refused")


# -- history ---------------------------------------------------------------------------------


def _history_bundle(history: bytes) -> bytes:
    return hb.simple_bundle({hb.HISTORY: history}, dirs=["rocmdesk"])


def test_history_frames_are_limited_with_a_message_naming_the_limit(tmp_path, tmp_dir, monkeypatch):
    monkeypatch.setattr(recording_mod, "MAX_FRAMES", 50)
    with open_payload(tmp_path, tmp_dir, _history_bundle(hb.history_lines(51))) as opened:
        assert opened.history is None
        assert "50" in opened.history_error and "frames" in opened.history_error
    with open_payload(tmp_path, tmp_dir, _history_bundle(hb.history_lines(50))) as opened:
        assert len(opened.history.frames) == 50


def test_history_points_are_limited(tmp_path, tmp_dir, monkeypatch):
    monkeypatch.setattr(recording_mod, "MAX_POINTS", 100)
    with open_payload(tmp_path, tmp_dir, _history_bundle(hb.history_lines(30, gpus=4))) as opened:
        assert opened.history is None and "100" in opened.history_error


def test_history_gpus_are_limited(tmp_path, tmp_dir):
    payload = _history_bundle(hb.history_lines(1, gpus=recording_mod.MAX_GPUS + 1))
    with open_payload(tmp_path, tmp_dir, payload) as opened:
        assert opened.history is None and str(recording_mod.MAX_GPUS) in opened.history_error


@pytest.mark.parametrize("t", ["NaN", "Infinity", "-Infinity", "1e300", str(2 ** 70), '"12"', "null"])
def test_history_times_must_be_finite_and_sane(tmp_path, tmp_dir, t):
    lines = hb.history_lines(2).decode().splitlines()
    lines[2] = lines[2].replace('"t":1', f'"t":{t}', 1)
    with open_payload(tmp_path, tmp_dir, _history_bundle(("\n".join(lines) + "\n").encode())) as opened:
        assert opened.history is None and "time" in opened.history_error


@pytest.mark.parametrize("header", [{"interval_s": float("nan")}, {"interval_s": 1e300}, {"interval_s": "1"},
                                    {"start_time": float("inf")}, {"start_time": "x"}, {"start_time": 2 ** 70},
                                    {"gpus": [{"info": {"card": ["x"], "pci": 1, "name": None}}]},
                                    {"gpus": [{"info": {"card": "c", "pci": "p", "name": "n", "kind": "alien"}}]},
                                    {"gpus": [{"info": {"card": "c", "pci": "p", "name": "n", "device_id": 2 ** 70}}]},
                                    {"process_info": {"x": {}}}, {"process_info": {str(2 ** 70): {}}},
                                    {"process_info": [1]}])
def test_history_header_fields_are_checked(tmp_path, tmp_dir, header):
    with open_payload(tmp_path, tmp_dir, _history_bundle(hb.history_lines(3, header=header))) as opened:
        rec = opened.history
        if rec is None:
            assert opened.history_error
            return
        start = rec.meta.get("start_time", 0.0)
        assert isinstance(start, float | int) and 0 <= start < 4102444800
        assert 0 < rec.interval_s <= 3600
        for info in rec.gpus:
            assert isinstance(info.card, str) and isinstance(info.pci, str) and isinstance(info.name, str)
            assert info.device_id is None or 0 <= info.device_id < 2 ** 63
        rec.snapshot(0, 0.0)


@pytest.mark.parametrize("frame", [
    {"temperature_c": {"edge": "hot"}}, {"temperature_c": {"edge": float("nan")}}, {"temperature_c": [1]},
    {"temperature_c": {"edge": 2 ** 70}}, {"unavailable": 5}, {"unavailable": {"power_w": 5}},
    {"power_w": "lots"}, {"power_w": 2 ** 70}, {"vram_used_bytes": 2 ** 64}, {"vram_used_bytes": -1},
    {"vram_used_bytes": 1.5e300}, {"sclk_mhz": True}, {"performance_level": 7}, {"clocks_mhz": {"x": "1"}},
    {"throttle": {"active": 1, "reasons": "r"}}, {"ras": {"blocks": {"umc": {"ue": 2 ** 70}}}},
    {"ras": {"blocks": [1], "uncorrectable": "x", "pages": 5}}, {"pcie": {"width": 2 ** 80}},
    {"partition": {"compute": 5}},
])
def test_history_values_are_checked_by_type_and_range(tmp_path, tmp_dir, frame):
    with open_payload(tmp_path, tmp_dir, _history_bundle(hb.history_lines(2, frame=frame))) as opened:
        rec = opened.history
        assert rec is not None, opened.history_error
        sample = rec.snapshot(1, 0.0).gpus[0]
        for value in sample.temperature_c.values():
            assert isinstance(value, float) and abs(value) < 1e6
        for key in ("power_w", "vram_used_bytes", "sclk_mhz"):
            value = getattr(sample, key)
            assert value is None or (isinstance(value, int | float) and not isinstance(value, bool)
                                     and 0 <= value < 2 ** 63)
        assert sample.performance_level is None or isinstance(sample.performance_level, str)
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in sample.unavailable.items())
        json.dumps(sample.to_json(), allow_nan=False)


def test_process_rows_beyond_range_are_dropped(tmp_path, tmp_dir):
    lines = hb.history_lines(2).decode().splitlines()
    row = {"pid": 2 ** 70, "vram_bytes": 5}
    lines[2] = lines[2][:-1] + ',"processes":[' + json.dumps(row) + ',{"pid":7,"name":["x"],"pci":5}]}'
    with open_payload(tmp_path, tmp_dir, _history_bundle(("\n".join(lines) + "\n").encode())) as opened:
        rec = opened.history
        if rec is None:
            assert opened.history_error
            return
        procs = rec.process_uses(1)
        assert all(0 < p.pid < 2 ** 31 and isinstance(p.name, str) and isinstance(p.pci, str) for p in procs)


# -- the commands ----------------------------------------------------------------------------


def _run(argv: list[str]) -> tuple[int, str, str]:
    from rocmdesk.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


HOSTILE = {
    "sparse": lambda: hb.bundle(hb.manifest([hb.file_entry("sys/s", hb.sparse_data(4096))]),
                                [hb.sparse_member("sys/s", 4096)]),
    "link-chain": _escaping_chain,
    "redaction-list": lambda: hb.simple_bundle({"proc/cmdline": b"q\n"}, dirs=["proc"], redaction=["x"]),
    "created-nan": lambda: hb.simple_bundle({"proc/cmdline": b"q\n"}, dirs=["proc"], created=float("nan")),
    "fifo": lambda: hb.bundle(hb.manifest([hb.file_entry("dev/kfd", b"")]),
                              [hb.special_member("dev/kfd", tarfile.FIFOTYPE)]),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
@pytest.mark.parametrize("command", ["diagnose", "report"])
def test_commands_refuse_a_hostile_bundle_with_exit_2_and_one_line(tmp_path, monkeypatch, case, command):
    private = tmp_path / "private"
    private.mkdir()
    monkeypatch.setenv("TMPDIR", str(private))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    path = tmp_path / "b.tar.gz"
    path.write_bytes(HOSTILE[case]())
    (tmp_path / "secret").write_text("97000\n")
    argv = [command, "--snapshot", str(path)] + (["-o", str(tmp_path / "r.md")] if command == "report" else [])
    code, out, err = _run(argv)
    assert code == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.tar.gz", "private", "secret"]
    assert list(private.iterdir()) == []


def test_report_of_a_bundle_with_a_garbage_history_does_not_crash(tmp_path):
    frame = {"temperature_c": {"edge": "hot"}, "unavailable": 5, "power_w": "x", "vram_used_bytes": 2 ** 70}
    path = tmp_path / "b.tar.gz"
    path.write_bytes(_history_bundle(hb.history_lines(5, frame=frame)))
    code, _out, err = _run(["report", "--snapshot", str(path), "-o", str(tmp_path / "r.md")])
    assert code == 0, err
    assert os.path.getsize(tmp_path / "r.md") > 0


def test_capture_keeps_only_the_history_opening_accepts(monkeypatch):
    from rocmdesk.report.bundle import history_text
    from rocmdesk.telemetry.recording import parse_lines

    rec = parse_lines(hb.history_lines(100, gpus=2).decode().splitlines(), "h")
    monkeypatch.setattr(recording_mod, "MAX_POINTS", 40)
    text, _minutes = history_text(rec, minutes=1e6)
    back = parse_lines(text.splitlines(), "h")
    assert len(back.frames) == 20 and back.frames[-1].t == 19.0


def test_history_past_the_real_frame_limit_is_dropped_quickly(tmp_path, tmp_dir):
    """The issue's 1.4 M frames: reading stops at the limit (86 400) with a message naming it."""
    import time

    head = hb.history_lines(1).decode().splitlines()[0]
    body = "\n".join(f'{{"t":{t},"gpus":[{{}}]}}' for t in range(recording_mod.MAX_FRAMES + 1))
    with open_payload(tmp_path, tmp_dir, _history_bundle((head + "\n" + body + "\n").encode())) as opened:
        t0 = time.perf_counter()
        assert opened.history is None and "more than 86400 frames" in opened.history_error
        assert time.perf_counter() - t0 < 20


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_the_window_gets_one_line_for_a_hostile_bundle(tmp_path, monkeypatch, case):
    """``rocmdesk --open B``: the source fails with one line, which run_gui shows on the demo banner."""
    from rocmdesk.ui.sources import startup_source

    private = tmp_path / "private"
    private.mkdir()
    monkeypatch.setattr(__import__("tempfile"), "tempdir", str(private))
    path = tmp_path / "b.tar.gz"
    path.write_bytes(HOSTILE[case]())
    with pytest.raises(BundleError) as info:
        startup_source(open_bundle=str(path), backend="sysfs")
    assert "\n" not in str(info.value)
    assert list(private.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["b.tar.gz", "private"]


def test_the_window_opens_a_bundle_with_a_garbage_history_with_na_values(tmp_path):
    from rocmdesk.ui.sources import bundle_source

    frame = {"temperature_c": {"edge": "hot", "junction": 50.0}, "unavailable": 5, "power_w": float("nan"),
             "vram_used_bytes": 2 ** 70}
    path = tmp_path / "b.tar.gz"
    path.write_bytes(_history_bundle(hb.history_lines(3, frame=frame)))
    source = bundle_source(str(path), "sysfs")
    try:
        sample = source.preload[-1].gpus[0]
        assert sample.temperature_c == {"junction": 50.0} and "temperature_c.edge" in sample.unavailable
        assert sample.power_w is None and sample.vram_used_bytes is None and "garbage" in sample.unavailable["power_w"]
    finally:
        source.bundle.close()


@pytest.mark.parametrize("kind", [tarfile.XHDTYPE, tarfile.GNUTYPE_LONGNAME])
def test_a_huge_extended_header_is_refused_before_it_is_read(tmp_path, tmp_dir, kind):
    size = bundle_mod.OPEN_MAX_HEADER_BYTES + 1
    info = tarfile.TarInfo("././@LongLink" if kind == tarfile.GNUTYPE_LONGNAME else "././@PaxHeader")
    info.type, info.size = kind, size
    header = info.tobuf(tarfile.GNU_FORMAT if kind == tarfile.GNUTYPE_LONGNAME else tarfile.USTAR_FORMAT)
    payload = hb.bundle(hb.manifest([hb.file_entry("proc/x", b"1")]),
                        [header + b"a" * size + bytes(-size % 512), hb.file_member("proc/x", b"1")])
    _refused(tmp_path, tmp_dir, payload, "extended header")
