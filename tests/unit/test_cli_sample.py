"""`rocmdesk sample`: table and JSON output, --watch, exit codes, N/A with reasons."""

from __future__ import annotations

import json

import pytest

from rocmdesk import cli
from rocmdesk.commands import sample as sample_cmd
from rocmdesk.telemetry.backends.base import Backend, BackendError
from rocmdesk.telemetry.model import GpuInfo, GpuKind, GpuSample, ProcessUse, Snapshot

INFO = GpuInfo(card="card1", pci="0000:03:00.0", name="AMD Radeon RX 7900 XTX", gfx_target="gfx1100",
               kind=GpuKind.DISCRETE, vram_total_bytes=25753026560)
# The sample of issue 2 item 8, field by field.
ISSUE_KEYS = ["card", "pci", "name", "gfx_target", "temperature_c", "power_w", "power_cap_w", "power_cap_min_w",
              "power_cap_max_w", "vram_used_bytes", "vram_total_bytes", "gtt_used_bytes", "gtt_total_bytes",
              "gpu_busy_percent", "mem_busy_percent", "sclk_mhz", "mclk_mhz", "fan_rpm", "fan_percent",
              "performance_level", "unavailable"]


def full_sample(t: float = 1764460000.0) -> GpuSample:
    return GpuSample(
        info=INFO, timestamp=t, temperature_c={"edge": 53.0, "junction": 61.0, "mem": 68.0},
        power_w=68.0, power_cap_w=290.0, power_cap_min_w=0.0, power_cap_max_w=327.0,
        vram_used_bytes=1263222784, vram_total_bytes=25753026560, gtt_used_bytes=0, gtt_total_bytes=0,
        gpu_busy_percent=3, mem_busy_percent=0, sclk_mhz=1269, mclk_mhz=1249, fan_rpm=0, fan_percent=0.0,
        performance_level="auto",
    )


class FakeBackend(Backend):
    name = "fake"

    def __init__(self, gpus=None, samples=None, discover_error=None) -> None:
        self.gpus = [INFO] if gpus is None else gpus
        self.samples = list(samples or [])
        self.discover_error = discover_error
        self.closed = False
        self.calls = 0

    def discover(self):
        if self.discover_error:
            raise self.discover_error
        return self.gpus

    def sample(self):
        self.calls += 1
        item = self.samples.pop(0) if self.samples else Snapshot("fake", 1764460000.0, [full_sample()])
        if isinstance(item, BaseException):
            raise item
        return item

    def close(self):
        self.closed = True


@pytest.fixture
def fake(monkeypatch):
    """Install a fake backend; returns a dict that records what make_backend was asked."""
    seen: dict = {}

    def install(backend: Backend | BaseException):
        def make(name, root, recording=None):
            seen.update(name=name, root=root.root, recording=recording)
            if isinstance(backend, BaseException):
                raise backend
            return backend

        monkeypatch.setattr(sample_cmd, "make_backend", make)
        return seen

    return install


@pytest.fixture
def no_sleep(monkeypatch):
    slept: list[float] = []
    monkeypatch.setattr(sample_cmd, "sleep", slept.append)
    return slept


def test_json_has_exactly_the_public_shape(fake, capsys):
    backend = FakeBackend()
    fake(backend)
    assert cli.main(["sample", "--json"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert len(lines) == 1
    data = json.loads(lines[0])
    assert list(data) == ["backend", "timestamp", "gpus"]
    assert data["backend"] == "fake" and data["timestamp"] == 1764460000.0
    gpu = data["gpus"][0]
    assert all(key in gpu for key in ISSUE_KEYS)
    assert gpu["temperature_c"] == {"edge": 53.0, "junction": 61.0, "mem": 68.0}
    assert gpu["vram_used_bytes"] == 1263222784 and gpu["sclk_mhz"] == 1269
    assert gpu["unavailable"] == {}
    assert backend.closed


def test_table_lists_every_gpu_with_units(fake, capsys):
    fake(FakeBackend())
    assert cli.main(["sample"]) == 0
    out = capsys.readouterr().out
    header, row = out.splitlines()[1:3]
    for column in ("CARD", "PCI", "NAME", "GFX", "EDGE", "JUNC", "MEM", "POWER/CAP", "VRAM", "BUSY",
                   "SCLK/MCLK", "FAN"):
        assert column in header
    for cell in ("card1", "0000:03:00.0", "AMD Radeon RX 7900 XTX", "gfx1100", "53°C", "61°C", "68°C",
                 "68/290 W", "1.2/24.0 GiB", "3%", "1269/1249 MHz", "0 RPM 0%"):
        assert cell in row
    assert "N/A" not in out and "DEMO" not in out


def test_not_available_values_show_reasons_in_footnotes(fake, capsys):
    a = GpuSample(info=INFO, timestamp=1.0, temperature_c={"junction": 61.0, "mem": 60.0})
    a.unavailable = {"temperature_c.edge": "this GPU has no edge sensor",
                     "power_w": "unreadable (permission denied)"}
    other = GpuInfo(card="card2", pci="0000:43:00.0", name="AMD Instinct MI300X", gfx_target="gfx942")
    b = GpuSample(info=other, timestamp=1.0, temperature_c={"junction": 50.0})
    b.unavailable = {"temperature_c.edge": "this GPU has no edge sensor"}
    fake(FakeBackend(gpus=[INFO, other], samples=[Snapshot("fake", 1.0, [a, b])]))
    assert cli.main(["sample"]) == 0
    out = capsys.readouterr().out
    assert "N/A[1]" in out
    assert "edge temperature on card1, card2: this GPU has no edge sensor" in out
    assert "power on card1: unreadable (permission denied)" in out
    # a None without a recorded reason still says something, never a blank or a 0
    assert "not reported by this backend" in out
    assert " 0/" not in out


def test_demo_backend_table_is_labelled(capsys):
    assert cli.main(["sample", "--backend", "demo"]) == 0
    out = capsys.readouterr().out
    assert "DEMO DATA" in out and "backend: demo" in out
    assert out.count("AMD Instinct MI300X") == 8
    assert "edge temperature on card0…card7 (8 GPUs): this GPU has no edge sensor" in out


def test_demo_backend_json_and_recording_choice(capsys):
    assert cli.main(["sample", "--backend", "demo", "--recording", "rx7900xtx-comfyui", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["demo"] is True and data["backend"] == "demo"
    assert data["gpus"][0]["gfx_target"] == "gfx1100"
    assert any("main.py" in p["cmdline"] for p in data["processes"])


def test_watch_prints_one_object_per_line(fake, no_sleep, capsys):
    samples = [Snapshot("fake", float(t), [full_sample(float(t))]) for t in range(3)]
    fake(FakeBackend(samples=samples))
    assert cli.main(["sample", "--json", "--watch", "0.5", "--count", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["timestamp"] for line in lines] == [0.0, 1.0, 2.0]
    assert no_sleep == [0.5, 0.5]


def test_watch_ends_on_ctrl_c(fake, monkeypatch, capsys):
    fake(FakeBackend())
    calls = []

    def interrupted(seconds):
        calls.append(seconds)
        if len(calls) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(sample_cmd, "sleep", interrupted)
    assert cli.main(["sample", "--watch", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("CARD") == 2


def test_watch_survives_a_failing_sample(fake, no_sleep, capsys):
    backend = FakeBackend(samples=[BackendError("rocm-smi timed out after 10 s and was killed"),
                                   Snapshot("fake", 5.0, [full_sample(5.0)])])
    fake(backend)
    assert cli.main(["sample", "--json", "--watch", "1", "--count", "2"]) == 0
    captured = capsys.readouterr()
    assert "timed out" in captured.err
    assert [json.loads(x)["timestamp"] for x in captured.out.splitlines()] == [5.0]


def test_no_gpu_exits_1(fake, capsys):
    fake(FakeBackend(gpus=[]))
    assert cli.main(["sample"]) == 1
    assert "no AMD GPU found" in capsys.readouterr().err


def test_gpu_vanished_before_the_sample_exits_1(fake, capsys):
    fake(FakeBackend(samples=[Snapshot("fake", 1.0, [], errors=["card1: device gone (ENODEV)"])]))
    assert cli.main(["sample", "--json"]) == 1
    err = capsys.readouterr().err
    assert "device gone" in err and "no AMD GPU found" in err


@pytest.mark.parametrize("where", ["make", "discover", "sample"])
def test_backend_that_cannot_run_exits_2(fake, capsys, where):
    error = BackendError("amdgpu not found in modules")
    if where == "make":
        fake(error)
    elif where == "discover":
        fake(FakeBackend(discover_error=error))
    else:
        fake(FakeBackend(samples=[error]))
    assert cli.main(["sample"]) == 2
    captured = capsys.readouterr()
    assert "amdgpu not found in modules" in captured.err and captured.out == ""


def test_snapshot_errors_go_to_stderr(fake, capsys):
    fake(FakeBackend(samples=[Snapshot("fake", 1.0, [full_sample()], errors=["rocm-smi printed no JSON"])]))
    assert cli.main(["sample"]) == 0
    captured = capsys.readouterr()
    assert "rocm-smi printed no JSON" in captured.err and "CARD" in captured.out


def test_processes_are_listed_under_the_table(fake, capsys):
    snap = Snapshot("fake", 1.0, [full_sample()], processes=[
        ProcessUse(pid=4242, pci=INFO.pci, name="python3", cmdline="python3 main.py " + "x" * 100,
                   vram_bytes=8 << 30, gpu_percent=None)])
    fake(FakeBackend(samples=[snap]))
    assert cli.main(["sample"]) == 0
    out = capsys.readouterr().out
    assert "4242" in out and "8.00 GiB" in out and "N/A" in out and "…" in out


@pytest.mark.parametrize("argv", [["--watch", "0"], ["--watch", "-1"], ["--watch", "abc"], ["--watch", "inf"],
                                  ["--count", "0"], ["--count", "x"], ["--backend", "nvidia"]])
def test_bad_arguments_are_refused(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["sample", *argv])
    assert exc.value.code == 2
    assert "error" in capsys.readouterr().err


def test_recording_needs_the_demo_backend(capsys):
    assert cli.main(["sample", "--backend", "sysfs", "--recording", "mi300x-node"]) == 2
    assert "--recording needs --backend demo" in capsys.readouterr().err


def test_unknown_recording_exits_2(capsys):
    assert cli.main(["sample", "--backend", "demo", "--recording", "nope"]) == 2
    assert "no demo recording named 'nope'" in capsys.readouterr().err


def test_missing_root_exits_2(tmp_path, capsys):
    assert cli.main(["sample", "--root", str(tmp_path / "nowhere")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_root_and_backend_reach_the_factory_either_side_of_the_command(fake, tmp_path, capsys):
    seen = fake(FakeBackend())
    assert cli.main(["sample", "--root", str(tmp_path), "--backend", "sysfs"]) == 0
    assert seen == {"name": "sysfs", "root": str(tmp_path), "recording": None}
    assert cli.main(["--root", str(tmp_path), "--backend", "rocm-smi", "sample"]) == 0
    assert seen["name"] == "rocm-smi" and seen["root"] == str(tmp_path)
    assert cli.main(["sample"]) == 0
    assert seen["name"] == "auto" and seen["root"] == "/"


def test_real_sysfs_backend_on_a_lact_tree(tmp_path, capsys):
    from tests.support.sysfs_tree import GpuSpec, build_root

    build_root(tmp_path, [GpuSpec("rx7900xtx")])
    code = cli.main(["sample", "--root", str(tmp_path), "--backend", "sysfs", "--json"])
    captured = capsys.readouterr()
    if code == 2 and "not available in this build" in captured.err:
        pytest.skip("the sysfs backend is not in this build")
    assert code == 0, captured.err
    gpu = json.loads(captured.out)["gpus"][0]
    assert gpu["gfx_target"] == "gfx1100"
    assert gpu["temperature_c"]["edge"] == pytest.approx(float(
        (next((tmp_path / "sys").rglob("hwmon8/temp1_input"))).read_text()) / 1000)
    assert gpu["power_cap_w"] == 290.0


def test_processes_show_compute_like_the_tab_with_numbered_reasons(fake, capsys):
    kfd_reason = "no DRM fdinfo for this process: its GPU work goes through KFD compute queues"
    snap = Snapshot("fake", 1.0, [full_sample()], processes=[
        ProcessUse(pid=51200, pci=INFO.pci, name="pt_main_thread", vram_bytes=150 << 30, cu_occupancy_percent=52.6,
                   cu_occupied=160, sdma_us=10, sources=("kfd",), unavailable={"gpu_percent": kfd_reason}),
        ProcessUse(pid=51201, pci=INFO.pci, name="pt_main_thread", vram_bytes=140 << 30, cu_occupancy_percent=0.0,
                   cu_occupied=0, sources=("kfd",), unavailable={"gpu_percent": kfd_reason}),
        ProcessUse(pid=7, pci=INFO.pci, name="hip_app", vram_bytes=1 << 30, cu_occupied=12, sources=("kfd",),
                   unavailable={"gpu_percent": kfd_reason, "cu_occupancy_percent": "CU count unknown"}),
        ProcessUse(pid=2011, pci=INFO.pci, name="gnome-shell", vram_bytes=1 << 28, gpu_percent=3.0,
                   unavailable={"cu_occupancy_percent": "not a KFD compute process on this GPU"}),
        ProcessUse(pid=9, pci=INFO.pci, name="old", vram_bytes=None, gpu_percent=None),
    ])
    fake(FakeBackend(samples=[snap]))
    assert cli.main(["sample"]) == 0
    out = capsys.readouterr().out
    table = out[out.index("PID"):]
    header, *lines = table.splitlines()
    assert header.split()[:6] == ["PID", "CARD", "VRAM", "GPU", "%", "COMPUTE"]
    by_pid = {line.split()[0]: line.split() for line in lines if line.split() and line.split()[0].isdigit()}
    assert by_pid["51200"][4:6] == ["N/A[1]", "53%"]
    assert by_pid["51201"][4:6] == ["N/A[1]", "0%"]  # a real zero stays 0
    assert by_pid["7"][5] == "12" and by_pid["7"][6] == "CU"  # count known, CU total not
    assert by_pid["2011"][4] == "3%" and by_pid["2011"][5].startswith("N/A[")
    assert all(cell.startswith("N/A[") for cell in by_pid["9"][2:5])  # VRAM, GPU %, COMPUTE ("x.xx GiB" is 2 words)
    notes = [line for line in lines if line.startswith("[")]
    assert any(kfd_reason in n and "3 processes" in n for n in notes)  # one note for the three KFD rows
    assert any("not a KFD compute process" in n and "pid 2011" in n for n in notes)
    assert any("pid 9" in n and "not reported by this backend" in n for n in notes)
    assert any("pid 9" in n and "two readings" in n for n in notes)
    numbers = [int(n[1:n.index("]")]) for n in notes]
    assert numbers == list(range(1, len(numbers) + 1))  # after the GPU table's own notes (none here)


def test_process_notes_continue_the_gpu_table_numbering(fake, capsys):
    sample = full_sample()
    sample.fan_rpm = sample.fan_percent = None
    sample.unavailable["fan_rpm"] = "no fan"
    snap = Snapshot("fake", 1.0, [sample], processes=[ProcessUse(pid=1, pci=INFO.pci, name="x", vram_bytes=1)])
    fake(FakeBackend(samples=[snap]))
    assert cli.main(["sample"]) == 0
    out = capsys.readouterr().out
    assert "[1] fan speed on card" in out and "N/A[2]" in out and "[2] GPU % (graphics engine) of pid 1" in out
    assert "N/A[3]" in out and "[3] compute (CU occupancy) of pid 1: not reported by this backend" in out
