"""Property: any generated bundle, hostile or not, is refused with one line or opened within its limits;
nothing is written outside the private folder; never a traceback (issue 11 item 2).

Bounded: 100 examples, a deadline per example, the database off (the suite must not write to the tree)."""

from __future__ import annotations

import json
import math
import os
import tarfile

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from rocmdesk.report.bundle import BundleError, open_bundle  # noqa: E402
from rocmdesk.report.manifest import HISTORY_NAME  # noqa: E402
from tests.support import hostile_bundles as hb  # noqa: E402

NAMES = st.one_of(
    st.sampled_from(["sys/a", "sys/a/b", "proc/cmdline", "etc/modprobe.d/x.conf", HISTORY_NAME, "rocmdesk",
                     "../x", "/etc/passwd", "a//b", "a/./b", "x\\y", "sys", "d/d/up", "\x00", "", "a" * 2000]),
    st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), min_size=1, max_size=24),
)
TARGETS = st.one_of(st.sampled_from(["..", "../..", "../../..", "/etc/passwd", "a", ".", "sys/a", "d/d/up/../..",
                                     "up/../../secret", "b/c/../../../..", "", "../d/d/up/../../secret"]),
                    st.lists(st.sampled_from(["..", ".", "a", "sys", "up", "d"]), min_size=1, max_size=8)
                    .map("/".join))
KINDS = [tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE, tarfile.BLKTYPE,
         tarfile.FIFOTYPE, tarfile.CONTTYPE, b"x", b"g", b"V", b"Z"]
WEIRD = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2 ** 80), max_value=2 ** 80),
                  st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
                  st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=4), st.integers(), max_size=3))
FRAME_VALUES = st.dictionaries(st.sampled_from(["temperature_c", "power_w", "vram_used_bytes", "unavailable",
                                                "sclk_mhz", "performance_level", "clocks_mhz", "ras", "throttle",
                                                "pcie", "partition"]), WEIRD, max_size=5)


@st.composite
def members(draw):
    """(tar bytes of one member, its manifest entry or None)."""
    name = draw(NAMES)
    kind = draw(st.sampled_from([*KINDS, "sparse", "history"]))
    if kind == "sparse":
        size = draw(st.integers(1, 1 << 16))
        return hb.sparse_member(name, size), hb.file_entry(name, hb.sparse_data(size))
    if kind == "history":
        frame = draw(FRAME_VALUES)
        t = draw(st.one_of(st.just(None), WEIRD))
        data = hb.history_lines(draw(st.integers(1, 4)), gpus=draw(st.integers(1, 3)), frame=frame)
        if t is not None:
            data = data.replace(b'"t":1,', f'"t":{t!r},'.encode(), 1)
        return hb.file_member(name, data), hb.file_entry(name, data)
    if kind in (tarfile.REGTYPE, tarfile.CONTTYPE):
        data = draw(st.binary(max_size=64))
        lie = draw(st.sampled_from([None, "size", "sha", "type"]))
        entry = hb.file_entry(name, data, size=len(data) + 1 if lie == "size" else None,
                              sha="0" * 64 if lie == "sha" else None)
        if lie == "type":
            entry = hb.link_entry(name, "x")
        return hb.file_member(name, data), entry
    target = draw(TARGETS)
    entry = {tarfile.DIRTYPE: hb.dir_entry(name), tarfile.SYMTYPE: hb.link_entry(name, target)}.get(
        kind, hb.file_entry(name, b""))
    try:
        member = hb.special_member(name, kind, target)
    except (ValueError, UnicodeError):
        member = hb.special_member("x", kind, "y")
    return member, (entry if draw(st.booleans()) or kind in (tarfile.DIRTYPE, tarfile.SYMTYPE) else None)


MANIFEST_FIELDS = st.dictionaries(st.sampled_from(["created", "history_minutes", "redaction", "notes", "python_envs",
                                                   "source", "rocmdesk_version"]), WEIRD, max_size=3)


@st.composite
def bundles(draw):
    drawn = draw(st.lists(members(), max_size=8))
    entries = [e for _m, e in drawn if e is not None]
    fields = draw(MANIFEST_FIELDS)
    fields = {k: v for k, v in fields.items() if not (isinstance(v, float) and math.isnan(v) and k == "files")}
    manifest = hb.manifest(entries, **fields) if draw(st.integers(0, 9)) else draw(st.binary(max_size=40))
    payload = hb.bundle(manifest, [m for m, _e in drawn], compress=draw(st.integers(0, 9)) > 0)
    if draw(st.integers(0, 9)) == 0:
        cut = draw(st.integers(0, len(payload)))
        payload = payload[:cut]
    return payload


@st.composite
def near_valid(draw):
    """Well-formed bundles with one hostile part: link targets, history values, manifest fields."""
    files = {"sys/real/temp1_input": b"41000\n", "proc/cmdline": b"quiet\n"}
    if draw(st.booleans()):
        frame = draw(FRAME_VALUES)
        data = hb.history_lines(draw(st.integers(1, 4)), gpus=draw(st.integers(1, 3)), frame=frame,
                                header=draw(st.dictionaries(st.sampled_from(["interval_s", "start_time", "demo"]),
                                                            WEIRD, max_size=2)))
        t = draw(st.one_of(st.just(None), WEIRD))
        if t is not None:
            data = data.replace(b'"t":0,', f'"t":{t!r},'.encode(), 1)
        files[HISTORY_NAME] = data
    links = {f"sys/l{i}": t for i, t in enumerate(draw(st.lists(TARGETS, max_size=3)))}
    if draw(st.booleans()):
        links["d/d/up"] = "../.."
    fields = draw(st.one_of(st.just({}), MANIFEST_FIELDS))
    return hb.simple_bundle(files, links=links, dirs=["d", "d/d", "proc", "rocmdesk", "sys", "sys/real"], **fields)


@settings(max_examples=100, deadline=2000, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(payload=st.one_of(bundles(), near_valid()))
def test_any_bundle_is_refused_or_opened_within_limits(tmp_path, payload):
    case = tmp_path / f"case{os.urandom(4).hex()}"
    private = case / "private"
    private.mkdir(parents=True)
    (case / "secret").write_text("97000\n")
    path = case / "b.tar.gz"
    path.write_bytes(payload)
    try:
        opened = open_bundle(path, tmp_dir=str(private))
    except BundleError as exc:
        hypothesis.event("refused")
        assert "\n" not in str(exc)
        assert list(private.iterdir()) == []
    else:
        hypothesis.event("opened" + (" with history" if opened.history is not None else ""))
        with opened:
            folder = opened.folder
            for dirpath, dirnames, filenames in os.walk(folder):
                for name in dirnames + filenames:
                    full = os.path.join(dirpath, name)
                    real = os.path.realpath(full)
                    assert real == folder or real.startswith(folder + os.sep), (full, real)
            m = opened.manifest
            assert isinstance(m.created, float) and 0 <= m.created < 4102444800 and opened.banner()
            assert all(isinstance(k, str) and isinstance(v, int) and 0 <= v < 2 ** 63 for k, v in m.redaction.items())
            assert all(isinstance(n, str) for n in m.notes + m.python_envs + [m.source, m.rocmdesk_version])
            assert isinstance(m.history_minutes, float) and math.isfinite(m.history_minutes)
            assert opened.history is not None or opened.history_error
            if opened.history is not None:
                for i in range(len(opened.history.frames)):
                    for sample in opened.history.snapshot(i, 0.0).gpus:
                        json.dumps(sample.to_json(), allow_nan=False)  # every value finite, of its type
        assert list(private.iterdir()) == []
    assert sorted(p.name for p in case.iterdir()) == ["b.tar.gz", "private", "secret"]
    assert (case / "secret").read_text() == "97000\n"
