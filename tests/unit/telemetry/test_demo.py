"""Demo recordings, their file format, the replaying backend and the live-or-demo startup choice."""

from __future__ import annotations

import gzip
import importlib.util
import itertools
import json
import statistics
import sys
from pathlib import Path

import pytest

from rocmdesk.host import HostRoot
from rocmdesk.resources import resource_path
from rocmdesk.telemetry.backends.base import BackendError
from rocmdesk.telemetry.backends.demo import RECORDINGS, DemoBackend, amd_cards, choose_startup_source
from rocmdesk.telemetry.model import GpuInfo, GpuKind
from rocmdesk.telemetry.recording import (
    Frame,
    Recording,
    RecordingError,
    bundled_recordings,
    load_recording,
    read_recording,
    write_recording,
)

REPO = Path(__file__).resolve().parents[3]
MI300X_HBM = 206158430208


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def mi300x() -> Recording:
    return load_recording("mi300x-node")


@pytest.fixture(scope="module")
def xtx() -> Recording:
    return load_recording("rx7900xtx-comfyui")


def series(recording: Recording, gpu: int, key: str) -> list:
    out = []
    for i in range(len(recording.frames)):
        sample = recording.gpu_samples(i, 0.0)[gpu]
        out.append(sample.get(key))
    return out


# -- the bundled recordings ------------------------------------------------------------------


def test_bundled_recordings_are_listed_and_small():
    assert sorted(bundled_recordings()) == sorted(RECORDINGS)
    for name in RECORDINGS:
        path = resource_path("demo", f"{name}.jsonl.gz")
        assert path.stat().st_size < 2_000_000
        assert path.read_bytes()[:2] == b"\x1f\x8b"  # gzip


@pytest.mark.parametrize("name", RECORDINGS)
def test_recordings_last_ten_minutes_at_1_hz(name):
    recording = load_recording(name)
    assert recording.duration_s >= 600
    times = recording.times
    assert all(b - a == pytest.approx(1.0) for a, b in itertools.pairwise(times))
    assert recording.demo is True
    snap = recording.snapshot(0, 123.0)
    assert snap.demo is True and snap.backend == "demo"


def test_mi300x_node_identity(mi300x):
    assert len(mi300x.gpus) == 8
    assert len({g.pci for g in mi300x.gpus}) == 8
    assert len({g.card for g in mi300x.gpus}) == 8
    for info in mi300x.gpus:
        assert info.name == "AMD Instinct MI300X"
        assert info.gfx_target == "gfx942"
        assert info.kind is GpuKind.INSTINCT
        assert info.vram_total_bytes == MI300X_HBM


def test_mi300x_has_no_edge_sensor_and_socket_power_only(mi300x):
    for i in range(0, len(mi300x.frames), 37):
        for sample in mi300x.gpu_samples(i, 0.0):
            assert set(sample.temperature_c) == {"junction", "mem"}
            assert sample.unavailable["temperature_c.edge"] == "this GPU has no edge sensor"
            assert sample.power_cap_w == 750.0
            assert sample.power_w is not None and sample.power_w <= 750.0 + 5
            assert sample.vram_total_bytes == MI300X_HBM
            assert sample.fan_rpm is None and "fan_rpm" in sample.unavailable


def test_mi300x_dynamics_load_step_throttle_and_thermal_lag(mi300x):
    power = series(mi300x, 0, "power_w")
    sclk = series(mi300x, 0, "sclk_mhz")
    hbm = series(mi300x, 0, "vram_used_bytes")
    junction = series(mi300x, 0, "temperature_c.junction")
    mem = series(mi300x, 0, "temperature_c.mem")
    # idle start, then the job loads weights into HBM: used memory climbs by > 100 GiB
    assert hbm[0] < 1 << 30
    assert max(hbm) > 150 * (1 << 30)
    # at the power cap the shader clock drops below its 2100 MHz peak
    capped = [s for p, s in zip(power, sclk, strict=True) if p >= 740]
    assert len(capped) > 200
    assert statistics.median(capped) < 2080
    assert min(capped) < 2000
    # first-order lag: temperatures move gradually (no jumps of many degrees per second) ...
    assert max(abs(b - a) for a, b in itertools.pairwise(mem)) <= 3
    # ... yet training heats the junction well above idle
    assert max(junction) - junction[0] > 15
    # small noise: the power reading is not constant while capped
    assert len({p for p in power if p >= 740}) > 3


def test_mi300x_processes(mi300x):
    backend = DemoBackend(mi300x, clock=FakeClock(0.0), start_s=200)
    procs = backend.processes()
    assert len(procs) == 8
    assert {p.pci for p in procs} == {g.pci for g in mi300x.gpus}
    assert all(p.vram_bytes and p.vram_bytes > 100 << 30 for p in procs)


def test_mi300x_ranks_are_kfd_compute_processes_as_a_real_node_shows_them(mi300x):
    """PyTorch works on KFD queues: no gfx-engine GPU % (N/A with the live scan's reason), Compute
    from CU occupancy that follows the GPU's busy %, SDMA time only growing while the job runs."""
    from rocmdesk.telemetry.fdinfo import KFD_ONLY_GPU_PERCENT

    busy_by_frame, compute_by_frame, sdma = [], [], {}
    for i in range(len(mi300x.frames)):
        uses = {p.pci: p for p in mi300x.process_uses(i)}
        for sample in mi300x.gpu_samples(i, 0.0):
            p = uses.get(sample.info.pci)
            if p is None:
                continue
            assert p.sources == ("kfd",)
            assert p.gpu_percent is None and p.unavailable["gpu_percent"] == KFD_ONLY_GPU_PERCENT
            assert p.gtt_bytes is None and p.unavailable["gtt_bytes"]
            assert 0 <= p.cu_occupied <= 304
            assert p.cu_occupancy_percent == round(p.cu_occupied * 100 / 304, 1)
            assert "cu_occupancy_percent" not in p.unavailable
            assert p.cu_occupancy_percent <= sample.gpu_busy_percent + 35  # waves need a busy GPU
            assert p.sdma_us >= sdma.get(p.pid, 0)  # cumulative since the process started
            sdma[p.pid] = p.sdma_us
            busy_by_frame.append(sample.gpu_busy_percent)
            compute_by_frame.append(p.cu_occupancy_percent)
    assert len(sdma) == 8 and min(sdma.values()) > 500_000  # weights and checkpoints copied: > 0.5 s
    busy_pairs = [c for b, c in zip(busy_by_frame, compute_by_frame, strict=True) if b >= 80]
    idle_pairs = [c for b, c in zip(busy_by_frame, compute_by_frame, strict=True) if b <= 10]
    assert statistics.mean(busy_pairs) > 35 and statistics.mean(idle_pairs) < 10
    assert statistics.correlation(busy_by_frame, compute_by_frame) > 0.7


def test_xtx_workstation(xtx):
    assert len(xtx.gpus) == 1
    info = xtx.gpus[0]
    assert info.gfx_target == "gfx1100" and info.kind is GpuKind.DISCRETE
    assert info.vram_total_bytes == 25753026560
    sample = xtx.gpu_samples(0, 0.0)[0]
    assert set(sample.temperature_c) == {"edge", "junction", "mem"}
    assert 290 <= sample.power_cap_w <= 310
    fan = series(xtx, 0, "fan_rpm")
    vram = series(xtx, 0, "vram_used_bytes")
    power = series(xtx, 0, "power_w")
    assert fan[0] == 0 and max(fan) > 1000  # zero-RPM at idle, spins under load
    assert vram[0] < 2 << 30 and max(vram) > 10 << 30 and vram[-1] < 2 << 30  # load, then unload
    assert power[0] < 40 and max(power) >= sample.power_cap_w - 5  # idle, then bursts at the cap
    bursts = sum(1 for a, b in itertools.pairwise(power) if a < 200 <= b)
    assert bursts >= 10  # many sampling bursts, not one long block


def test_xtx_comfyui_process_is_recorded(xtx):
    uses = [xtx.process_uses(i) for i in range(len(xtx.frames))]
    comfy = [next(p for p in frame if "main.py" in p.cmdline) for frame in uses]
    assert all(p.name == "python3" and "ComfyUI" in p.cmdline for p in comfy)
    assert max(p.vram_bytes for p in comfy) > 8 << 30
    # ComfyUI (PyTorch) works on KFD queues; the RX 7900 XTX has no cu_occupancy counter
    assert all(p.sources == ("kfd",) and p.gpu_percent is None and "KFD" in p.unavailable["gpu_percent"]
               for p in comfy)
    assert all(p.cu_occupancy_percent is None and "cu_occupancy" in p.unavailable["cu_occupancy_percent"]
               for p in comfy)
    assert comfy[-1].sdma_us > comfy[0].sdma_us > 0
    # the desktop's graphics clients are DRM fdinfo rows with a gfx GPU % and no KFD figures
    desktop = [p for frame in uses for p in frame if p.pid != comfy[0].pid]
    assert {p.name for p in desktop} == {"gnome-shell", "Xwayland", "firefox"}
    assert all(p.sources == ("drm-fdinfo",) and p.gpu_percent is not None and p.cu_occupancy_percent is None
               and p.unavailable["cu_occupancy_percent"] == "not a KFD compute process on this GPU"
               for p in desktop)


def test_recordings_loop_without_a_seam(mi300x, xtx):
    for recording in (mi300x, xtx):
        first = recording.gpu_samples(0, 0.0)
        last = recording.gpu_samples(len(recording.frames) - 1, 0.0)
        for a, b in zip(first, last, strict=True):
            for label in a.temperature_c:
                assert abs(a.temperature_c[label] - b.temperature_c[label]) <= 3


def test_generator_reproduces_the_committed_files(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("make_demo", REPO / "tools" / "make_demo.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "make_demo", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    assert module.main([str(tmp_path)]) == 0
    for name in RECORDINGS:
        fresh = (tmp_path / f"{name}.jsonl.gz").read_bytes()
        assert fresh == resource_path("demo", f"{name}.jsonl.gz").read_bytes(), name


# -- the file format ---------------------------------------------------------------------------


def tiny_recording(frames: int = 5, interval: float = 1.0) -> Recording:
    info = GpuInfo(card="card0", pci="0000:03:00.0", name="Test GPU", gfx_target="gfx1100")
    return Recording(
        name="tiny",
        gpus=[info],
        static=[{"power_cap_w": 200.0, "unavailable": {"fan_rpm": "no fan"}}],
        frames=[Frame(t=i * interval, gpus=[{"power_w": 10.0 + i, "temperature_c": {"edge": 40.0 + i}}],
                      processes=[{"pid": 7, "vram_bytes": i}]) for i in range(frames)],
        interval_s=interval,
        process_info={7: {"pci": "0000:03:00.0", "name": "python3", "cmdline": "python3 x.py"}},
        meta={"seed": 1},
    )


def test_write_read_round_trip(tmp_path):
    path = tmp_path / "tiny.jsonl.gz"
    write_recording(path, tiny_recording())
    back = read_recording(path)
    assert back.name == "tiny" and back.duration_s == 5.0 and back.meta == {"seed": 1}
    sample = back.gpu_samples(2, 99.0)[0]
    assert sample.power_w == 12.0 and sample.power_cap_w == 200.0
    assert sample.temperature_c == {"edge": 42.0}
    assert sample.unavailable == {"fan_rpm": "no fan"}
    assert sample.timestamp == 99.0
    proc = back.process_uses(3)[0]
    assert (proc.pid, proc.name, proc.vram_bytes, proc.pci) == (7, "python3", 3, "0000:03:00.0")
    assert not list(tmp_path.glob("*.tmp"))


def test_absent_gpu_in_a_frame(tmp_path):
    recording = tiny_recording()
    recording.frames[2].gpus = [None]
    path = tmp_path / "gone.jsonl.gz"
    write_recording(path, recording)
    assert read_recording(path).snapshot(2, 0.0).gpus == []


def test_plain_json_lines_are_accepted(tmp_path):
    path = tmp_path / "plain.jsonl"
    write_recording(tmp_path / "x.jsonl.gz", tiny_recording())
    path.write_bytes(gzip.decompress((tmp_path / "x.jsonl.gz").read_bytes()))
    assert len(read_recording(path).frames) == 5


def _lines(recording: Recording) -> list[str]:
    from rocmdesk.telemetry.recording import encode_lines

    return list(encode_lines(recording))


@pytest.mark.parametrize("mutate, words", [
    (lambda lines: [], "empty"),
    (lambda lines: ["not json", *lines[1:]], "not JSON"),
    (lambda lines: ["[1, 2]", *lines[1:]], "not a JSON object"),
    (lambda lines: [lines[0].replace("rocmdesk-recording", "other"), *lines[1:]], "not a rocmdesk recording"),
    (lambda lines: [lines[0].replace('"version":1', '"version":99'), *lines[1:]], "unsupported version"),
    (lambda lines: lines[:1], "no samples"),
    (lambda lines: [*lines[:2], lines[1]], "not after"),
    (lambda lines: [*lines[:2], '{"t": 5, "gpus": []}'], "has 0 GPUs"),
    (lambda lines: [*lines[:2], '{"t": 5}'], "bad frame"),
    (lambda lines: [*lines[:2], '{"t": 5, "gpus": [3]}'], "not an object"),
    (lambda lines: [*lines[:2], '{"t": 5, "gpus": [{}], "processes": [{"name": "x"}]}'], "without a pid"),
    (lambda lines: [lines[0].replace('"gpus":[{"info"', '"gpus":[{"nfo"'), *lines[1:]], "bad header"),
])
def test_bad_recordings_are_refused_with_a_reason(tmp_path, mutate, words):
    lines = mutate(_lines(tiny_recording()))
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines))
    with pytest.raises(RecordingError, match=words):
        read_recording(path)


def test_bad_files(tmp_path, monkeypatch):
    with pytest.raises(RecordingError, match="no recording"):
        read_recording(tmp_path / "missing.jsonl.gz")
    with pytest.raises(RecordingError, match="folder"):
        read_recording(tmp_path)
    garbage = tmp_path / "garbage.jsonl.gz"
    garbage.write_bytes(b"\x1f\x8b\x08\x00garbage garbage")
    with pytest.raises(RecordingError, match="damaged"):
        read_recording(garbage)
    good = tmp_path / "good.jsonl.gz"
    write_recording(good, tiny_recording())
    truncated = tmp_path / "truncated.jsonl.gz"
    truncated.write_bytes(good.read_bytes()[:-20])
    with pytest.raises(RecordingError, match="damaged"):
        read_recording(truncated)
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(RecordingError, match="not text"):
        read_recording(binary)

    def denied(self):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_bytes", denied)
    with pytest.raises(RecordingError, match="Permission denied"):
        read_recording(good)


def test_write_refuses_an_inconsistent_recording(tmp_path):
    recording = tiny_recording()
    recording.frames[1].t = 0.0
    with pytest.raises(RecordingError):
        write_recording(tmp_path / "x.jsonl.gz", recording)
    assert not list(tmp_path.iterdir())


def test_unknown_recording_name():
    with pytest.raises(RecordingError, match="mi300x-node"):
        load_recording("no-such-demo")
    with pytest.raises(BackendError, match="available"):
        DemoBackend("no-such-demo")


# -- the backend --------------------------------------------------------------------------------


def test_replay_follows_recorded_timing():
    clock = FakeClock(500.0)
    backend = DemoBackend(tiny_recording(), clock=clock, wall_clock=lambda: 1_700_000_000.0)
    assert backend.name == "demo" and backend.demo
    assert [g.pci for g in backend.discover()] == ["0000:03:00.0"]
    snap = backend.sample()
    assert snap.demo and snap.backend == "demo"
    assert snap.gpus[0].power_w == 10.0
    assert snap.timestamp == pytest.approx(1_700_000_000.0)
    clock.now += 0.99
    assert backend.sample().gpus[0].power_w == 10.0
    clock.now += 0.02
    later = backend.sample()
    assert later.gpus[0].power_w == 11.0
    assert later.timestamp == pytest.approx(1_700_000_001.01)
    assert later.gpus[0].timestamp == later.timestamp
    assert backend.processes()[0].vram_bytes == 1


def test_replay_loops_at_the_end():
    clock = FakeClock(0.0)
    backend = DemoBackend(tiny_recording(), clock=clock)
    clock.now = 4.5
    assert backend.sample().gpus[0].power_w == 14.0
    assert backend.loops() == 0
    clock.now = 5.0
    assert backend.sample().gpus[0].power_w == 10.0
    assert backend.loops() == 1
    clock.now = 5 * 7 + 3.2
    assert backend.sample().gpus[0].power_w == 13.0
    assert backend.loops() == 7


def test_speed_and_start_offset():
    clock = FakeClock(0.0)
    backend = DemoBackend(tiny_recording(), speed=4.0, clock=clock, start_s=1.0)
    assert backend.sample().gpus[0].power_w == 11.0
    clock.now = 0.5  # 2 recorded seconds later
    assert backend.sample().gpus[0].power_w == 13.0
    with pytest.raises(ValueError):
        DemoBackend(tiny_recording(), speed=0)


def test_samples_are_independent_copies():
    backend = DemoBackend(tiny_recording(), clock=FakeClock(0.0))
    first = backend.sample()
    first.gpus[0].temperature_c["edge"] = -1.0
    first.gpus[0].unavailable["x"] = "y"
    again = backend.sample()
    assert again.gpus[0].temperature_c == {"edge": 40.0}
    assert "x" not in again.gpus[0].unavailable


def test_preroll_gives_the_last_seconds_oldest_first():
    clock = FakeClock(100.0)
    backend = DemoBackend(tiny_recording(), clock=clock, wall_clock=lambda: 10_000.0)
    clock.now += 3.0  # showing frame 3
    snaps = backend.preroll(2.0)
    assert [s.gpus[0].power_w for s in snaps] == [11.0, 12.0, 13.0]
    assert [s.timestamp for s in snaps] == pytest.approx([10_001.0, 10_002.0, 10_003.0])
    assert all(s.demo for s in snaps)
    assert snaps[-1].gpus[0].power_w == backend.sample().gpus[0].power_w


def test_preroll_wraps_into_the_previous_loop():
    clock = FakeClock(0.0)
    backend = DemoBackend(tiny_recording(), clock=clock, wall_clock=lambda: 0.0)
    clock.now = 1.5  # frame 1, half-way
    snaps = backend.preroll(7.0)
    powers = [s.gpus[0].power_w for s in snaps]
    # frames began to show 0.5, 1.5, ... 6.5 s ago: 1, 0, then the previous loop's 4, 3, 2, 1, 0
    assert powers == [10.0, 11.0, 12.0, 13.0, 14.0, 10.0, 11.0]
    times = [s.timestamp for s in snaps]
    assert times == sorted(times) and times[-1] == pytest.approx(1.0)
    assert backend.preroll(0.0)[0].gpus[0].power_w == 11.0
    with pytest.raises(ValueError):
        backend.preroll(-1)


def test_preroll_at_speed_and_long_windows(mi300x):
    clock = FakeClock(0.0)
    backend = DemoBackend(mi300x, speed=10.0, clock=clock)
    snaps = backend.preroll(60.0)  # 600 recorded seconds in one real minute
    assert 600 <= len(snaps) <= 602
    gaps = {round(b.timestamp - a.timestamp, 6) for a, b in itertools.pairwise(snaps)}
    assert gaps == {0.1}
    long = DemoBackend(mi300x, clock=clock).preroll(3600.0)  # four loops of a 15-minute recording
    assert len(long) == 3601
    assert all(len(s.gpus) == 8 for s in long[::500])


# -- startup choice -----------------------------------------------------------------------------


def make_card(root: Path, name: str, vendor: str) -> None:
    device = root / "sys" / "class" / "drm" / name / "device"
    device.mkdir(parents=True)
    (device / "vendor").write_text(vendor + "\n")


def test_live_machine_with_an_amd_gpu(tmp_path):
    make_card(tmp_path, "card1", "0x1002")
    make_card(tmp_path, "card0", "0x1a03")  # a server's BMC display
    (tmp_path / "sys" / "class" / "drm" / "card1-DP-1").mkdir()
    source, reason = choose_startup_source(tmp_path, live=True)
    assert source == "live"
    assert "1 AMD GPU" in reason and "card1" in reason and "card0" not in reason
    assert amd_cards(HostRoot(tmp_path)) == ["card1"]


def test_nul_padded_vendor_file_counts(tmp_path):
    """Some real dumps pad every sysfs file with NULs to 4 KiB (LACT's rx6900xt)."""
    from tests.support.sysfs_tree import GpuSpec, build_root

    build_root(tmp_path, [GpuSpec("rx6900xt")])
    assert (tmp_path / "sys/class/drm/card0/device/vendor").read_bytes().endswith(b"\x00")
    source, reason = choose_startup_source(tmp_path, live=True)
    assert source == "live" and "1 AMD GPU" in reason


def test_live_machine_without_amd_gpu_opens_the_demo(tmp_path):
    make_card(tmp_path, "card0", "0x10de")
    source, reason = choose_startup_source(tmp_path, live=True)
    assert source == "demo"
    assert "no AMD GPU" in reason and "amdgpu driver is not loaded" in reason


def test_live_machine_without_drm(tmp_path):
    source, reason = choose_startup_source(HostRoot(tmp_path), live=True)
    assert source == "demo"
    assert "/sys/class/drm does not exist" in reason


def test_garbage_vendor_files_do_not_count(tmp_path):
    make_card(tmp_path, "card0", "garbage")
    (tmp_path / "sys" / "module" / "amdgpu").mkdir(parents=True)
    (tmp_path / "sys" / "class" / "drm" / "card2").mkdir()  # no device link at all
    source, reason = choose_startup_source(tmp_path, live=True)
    assert source == "demo" and reason == "no AMD GPU found on this machine; showing demo data"


def test_a_root_folder_given_on_purpose_is_shown_as_is(tmp_path):
    source, reason = choose_startup_source(tmp_path)
    assert source == "live" and str(tmp_path) in reason
    make_card(tmp_path, "card0", "0x1002")
    make_card(tmp_path, "card3", "0x1002")
    assert choose_startup_source(str(tmp_path)) == ("live", f"found 2 AMD GPUs on {tmp_path} (card0, card3)")


def test_json_lines_are_public_names(mi300x):
    line = json.dumps(mi300x.snapshot(300, 1.0).to_json())
    data = json.loads(line)
    assert data["demo"] is True
    assert {"card", "pci", "name", "gfx_target", "temperature_c", "power_w", "power_cap_w", "vram_used_bytes",
            "vram_total_bytes", "gpu_busy_percent", "sclk_mhz", "mclk_mhz", "unavailable"} <= set(data["gpus"][0])


def test_recordings_without_the_demo_flag_are_not_demo_but_replays_are(tmp_path):
    lines = _lines(tiny_recording())
    lines[0] = lines[0].replace('"demo":true,', "")
    path = tmp_path / "captured.jsonl"
    path.write_text("\n".join(lines))
    recording = read_recording(path)
    assert recording.demo is False
    assert recording.snapshot(0, 1.0).demo is False  # a support bundle's history is real data
    assert DemoBackend(recording, clock=FakeClock()).sample().demo is True  # replayed as the demo: labelled


def test_oversized_recordings_are_refused(tmp_path, monkeypatch):
    import rocmdesk.telemetry.recording as recording_module

    gz = tmp_path / "big.jsonl.gz"
    write_recording(gz, tiny_recording(frames=50))
    plain = tmp_path / "big.jsonl"
    plain.write_bytes(gzip.decompress(gz.read_bytes()))
    monkeypatch.setattr(recording_module, "MAX_RECORDING_BYTES", 1000)
    with pytest.raises(RecordingError, match="larger than"):
        read_recording(gz)
    with pytest.raises(RecordingError, match="larger than"):
        read_recording(plain)
