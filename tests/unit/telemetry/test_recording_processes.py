"""Process rows in recordings: every ProcessUse field survives write/read; old or damaged entries
load as None with a reason, never as 0."""

from __future__ import annotations

import gzip
import json

import pytest

from rocmdesk.telemetry.model import GpuInfo, ProcessUse
from rocmdesk.telemetry.recording import (
    NO_RECORDED_REASON,
    NOT_IN_RECORDING,
    PROCESS_VALUES,
    Frame,
    Recording,
    process_from_parts,
    process_parts,
    read_recording,
    write_recording,
)

PCI = "0000:05:00.0"
INFO = GpuInfo(card="card1", pci=PCI, name="AMD Instinct MI300X", gfx_target="gfx942")


def kfd_row() -> ProcessUse:
    return ProcessUse(pid=51200, pci=PCI, name="pt_main_thread", cmdline="python3 train.py", user="demo",
                      vram_bytes=150 << 30, cu_occupancy_percent=52.6, cu_occupied=160, sdma_us=1_234_567,
                      sources=("kfd",),
                      unavailable={"gpu_percent": "no DRM fdinfo for this process", "gtt_bytes": "not from the KFD"})


def drm_row() -> ProcessUse:
    return ProcessUse(pid=2011, pci=PCI, name="gnome-shell", cmdline="/usr/bin/gnome-shell", vram_bytes=1 << 28,
                      gtt_bytes=1 << 25, gpu_percent=3.0, sources=("drm-fdinfo",),
                      unavailable={k: "not a KFD compute process on this GPU"
                                   for k in ("cu_occupancy_percent", "cu_occupied", "sdma_us")})


def both_row() -> ProcessUse:
    return ProcessUse(pid=777, pci=PCI, name="blender", vram_bytes=1 << 30, gtt_bytes=0, gpu_percent=0.0,
                      cu_occupancy_percent=0.0, cu_occupied=0, sdma_us=0, sources=("drm-fdinfo", "kfd"))


def recording_of(rows: list[ProcessUse]) -> Recording:
    info, entries = {}, []
    for row in rows:
        static, entry = process_parts(row)
        info.setdefault(row.pid, static)
        entries.append(entry)
    return Recording(name="procs", gpus=[INFO], static=[{}], frames=[Frame(0.0, [{"power_w": 1.0}], entries)],
                     process_info=info, demo=False)


@pytest.mark.parametrize("row", [kfd_row(), drm_row(), both_row()], ids=["kfd", "drm", "drm+kfd"])
def test_every_field_round_trips_through_a_file(tmp_path, row):
    path = tmp_path / "p.jsonl.gz"
    write_recording(path, recording_of([row]))
    back = read_recording(path).process_uses(0)
    assert back == [row]  # dataclass equality: every field, sources and reasons included


def test_zero_stays_zero_and_is_not_confused_with_missing():
    back = process_from_parts({}, process_parts(both_row())[1])
    assert back.cu_occupied == 0 and back.sdma_us == 0 and back.gpu_percent == 0.0
    assert back.unavailable == {}


def test_old_recording_without_compute_fields_loads_with_reasons(tmp_path):
    """A recording written before the KFD figures: the entry has only vram/gtt/gpu %."""
    header = {"format": "rocmdesk-recording", "version": 1, "name": "old", "interval_s": 1.0,
              "gpus": [{"info": INFO.to_json(), "static": {}}],
              "process_info": {"4711": {"pci": PCI, "name": "python3", "cmdline": "python3 x.py", "user": "me"}}}
    frame = {"t": 0.0, "gpus": [{"power_w": 100.0}],
             "processes": [{"pid": 4711, "vram_bytes": 1 << 30, "gtt_bytes": 1 << 20, "gpu_percent": 55.0}]}
    path = tmp_path / "old.jsonl.gz"
    path.write_bytes(gzip.compress(("\n".join(json.dumps(x) for x in (header, frame)) + "\n").encode()))
    (p,) = read_recording(path).process_uses(0)
    assert (p.pid, p.name, p.user, p.vram_bytes, p.gpu_percent) == (4711, "python3", "me", 1 << 30, 55.0)
    for key in ("cu_occupancy_percent", "cu_occupied", "sdma_us"):
        assert getattr(p, key) is None
        assert p.unavailable[key] == NOT_IN_RECORDING
    assert p.sources == ()
    assert "vram_bytes" not in p.unavailable and "gpu_percent" not in p.unavailable


def test_static_keys_in_process_info_and_frame_overrides():
    info = {9: {"pci": PCI, "name": "x", "sources": ["kfd"], "gpu_percent": None,
                "unavailable": {"gpu_percent": "KFD only", "sdma_us": "static reason"}}}
    p = process_from_parts(info, {"pid": 9, "vram_bytes": 5, "cu_occupied": 3, "cu_occupancy_percent": 1.0,
                                  "sdma_us": 10, "gtt_bytes": None, "unavailable": {"gtt_bytes": "frame reason"}})
    assert p.sources == ("kfd",)
    assert p.gpu_percent is None and p.unavailable["gpu_percent"] == "KFD only"
    assert p.sdma_us == 10 and "sdma_us" not in p.unavailable  # a reason only stands for a missing value
    assert p.unavailable["gtt_bytes"] == "frame reason"


def test_null_without_a_reason_gets_one():
    p = process_from_parts({}, {"pid": 1, **dict.fromkeys(PROCESS_VALUES)})
    assert all(getattr(p, k) is None and p.unavailable[k] == NO_RECORDED_REASON for k in PROCESS_VALUES)
    assert (p.pci, p.name, p.cmdline, p.user) == ("?", "?", "", None)


@pytest.mark.parametrize("key,value", [
    ("cu_occupied", "160"), ("cu_occupied", 1.5), ("cu_occupied", -1), ("cu_occupied", True),
    ("sdma_us", float("nan")), ("sdma_us", [1]), ("cu_occupancy_percent", {"v": 1}),
    ("cu_occupancy_percent", float("inf")), ("vram_bytes", "1 GiB"), ("gpu_percent", -5.0),
])
def test_garbage_values_become_none_with_a_reason(key, value):
    p = process_from_parts({}, {"pid": 1, key: value, "unavailable": {key: "an old reason"}})
    assert getattr(p, key) is None
    assert p.unavailable[key].startswith("garbage value")


def test_garbage_sources_unavailable_and_user_are_ignored():
    p = process_from_parts({1: {"sources": "kfd", "unavailable": ["x"], "user": 1000}},
                           {"pid": 1, "sources": None, "unavailable": {"gpu_percent": 5}})
    assert p.sources == () and p.user is None
    assert p.unavailable["gpu_percent"] == NOT_IN_RECORDING  # the non-text reason was dropped
    q = process_from_parts({}, {"pid": 1, "sources": ["kfd", 3]})
    assert q.sources == ("kfd",)


def test_integral_floats_are_accepted_as_counts():
    p = process_from_parts({}, {"pid": 1, "cu_occupied": 12.0, "sdma_us": 3e6})
    assert p.cu_occupied == 12 and isinstance(p.cu_occupied, int) and p.sdma_us == 3_000_000
