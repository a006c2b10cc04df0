"""auto: sysfs first, tools fill only its gaps by PCI address, from background threads."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import pytest

from rocmdesk.host import CommandRunner, HostRoot, RecordedRunner
from rocmdesk.telemetry.backends.auto import AutoBackend
from rocmdesk.telemetry.backends.base import Backend, BackendError
from rocmdesk.telemetry.backends.factory import BACKEND_NAMES, make_backend
from rocmdesk.telemetry.backends.rocm_smi import FULL_ARGS, RocmSmiBackend
from rocmdesk.telemetry.model import GpuInfo, GpuSample, Snapshot

DATA = Path(__file__).resolve().parents[2] / "data" / "tool-output"
A, B = "0000:03:00.0", "0000:0c:00.0"


def info(pci: str, card: str = "card1") -> GpuInfo:
    return GpuInfo(card=card, pci=pci, name="AMD Radeon RX 7800 XT")


class FakeSysfs(Backend):
    """Edge temperature and VRAM from sysfs; no power, no junction sensor."""

    name = "sysfs"

    def __init__(self, pcis=(A,)) -> None:
        self.pcis = list(pcis)

    def discover(self):
        return [info(p) for p in self.pcis]

    def sample(self):
        snap = Snapshot(backend=self.name, timestamp=time.time())
        for pci in self.pcis:
            s = GpuSample(info=info(pci), timestamp=snap.timestamp)
            s.temperature_c["edge"] = 40.0
            s.vram_used_bytes = 1000
            s.mark_unavailable("power_w", "no power1_input or power1_average")
            s.mark_unavailable("temperature_c.junction", "this GPU has no junction sensor")
            s.mark_unavailable("fan_rpm", "no fan1_input")
            s.mark_unavailable("temperature_crit_c.edge", "no temp1_crit")  # not a fillable key
            snap.gpus.append(s)
        return snap


class FakeTool(Backend):
    """A tool whose readings and failures the test controls."""

    def __init__(self, name="faketool", readings=None, gate: threading.Event | None = None) -> None:
        self.name = name
        self.readings = readings if readings is not None else {A: {"power_w": 55.0, "temperature_c.edge": 99.0,
                                                                     "temperature_c.junction": 61.0}}
        self.gate = gate
        self.calls = 0
        self.fail_with: str | None = None
        self.closed = False

    def discover(self):
        return [info(p, "tool") for p in self.readings]

    def sample(self):
        self.calls += 1
        if self.gate is not None:
            self.gate.wait(10)
        if self.fail_with:
            raise BackendError(self.fail_with)
        snap = Snapshot(backend=self.name, timestamp=time.time())
        for pci, values in self.readings.items():
            s = GpuSample(info=info(pci, "tool"), timestamp=snap.timestamp)
            for key, value in values.items():
                if key.startswith("temperature_c."):
                    s.temperature_c[key.split(".", 1)[1]] = value
                else:
                    setattr(s, key, value)
                s.source[key] = self.name
            snap.gpus.append(s)
        return snap

    def close(self):
        self.closed = True


def make_auto(tmp_path, *tools, primary=None, **kw) -> AutoBackend:
    kw.setdefault("interval_s", 60.0)
    return AutoBackend(HostRoot(tmp_path), RecordedRunner(), list(tools), primary=primary or FakeSysfs(),
                       detect_tools=False, **kw)


def wait_for_tools(auto: AutoBackend, timeout: float = 5.0) -> None:
    auto.sample()  # starts the threads
    for poller in auto.pollers:
        assert poller.wait_first(timeout)


def test_tool_fills_only_what_sysfs_lacks(tmp_path):
    tool = FakeTool()
    auto = make_auto(tmp_path, tool)
    try:
        wait_for_tools(auto)
        (gpu,) = auto.sample().gpus
        assert gpu.power_w == 55.0
        assert gpu.temperature_c == {"edge": 40.0, "junction": 61.0}  # sysfs edge kept, not the tool's 99
        assert gpu.source["power_w"].startswith("faketool (") and gpu.source["power_w"].endswith(" s old)")
        assert "power_w" not in gpu.unavailable and "temperature_c.junction" not in gpu.unavailable
        assert gpu.unavailable["fan_rpm"] == "no fan1_input"  # the tool lacks it too
        assert gpu.unavailable["temperature_crit_c.edge"] == "no temp1_crit"
        assert gpu.vram_used_bytes == 1000
    finally:
        auto.close()
    assert tool.closed


def test_gpus_are_matched_by_pci_not_by_order(tmp_path):
    tool = FakeTool(readings={"0000:99:00.0": {"power_w": 1.0}, B: {"power_w": 22.0}, A: {"power_w": 11.0}})
    auto = make_auto(tmp_path, tool, primary=FakeSysfs((A, B)))
    try:
        wait_for_tools(auto)
        by_pci = auto.sample().by_pci()
        assert (by_pci[A].power_w, by_pci[B].power_w) == (11.0, 22.0)
        assert set(by_pci) == {A, B}
    finally:
        auto.close()


def test_first_tool_with_a_value_wins(tmp_path):
    first = FakeTool("first", {A: {"temperature_c.junction": 61.0}})
    second = FakeTool("second", {A: {"power_w": 70.0, "temperature_c.junction": 99.0}})
    auto = make_auto(tmp_path, first, second)
    try:
        wait_for_tools(auto)
        (gpu,) = auto.sample().gpus
        assert gpu.temperature_c["junction"] == 61.0 and gpu.source["temperature_c.junction"].startswith("first")
        assert gpu.power_w == 70.0 and gpu.source["power_w"].startswith("second")
    finally:
        auto.close()


def test_a_hanging_tool_never_blocks_sample(tmp_path):
    gate = threading.Event()
    auto = make_auto(tmp_path, FakeTool(gate=gate))
    try:
        start = time.monotonic()
        snaps = [auto.sample() for _ in range(20)]
        assert time.monotonic() - start < 1.0
        (gpu,) = snaps[-1].gpus
        assert gpu.power_w is None and gpu.unavailable["power_w"] == "no power1_input or power1_average"
        assert any("faketool has not answered yet (running for" in e for e in snaps[-1].errors)
    finally:
        gate.set()
        auto.close()


def test_a_hanging_real_process_is_killed_and_reported(tmp_path):
    script = tmp_path / "rocm-smi"
    script.write_text("#!/bin/sh\nsleep 30\n")
    script.chmod(0o755)
    tool = RocmSmiBackend(HostRoot(tmp_path), CommandRunner(), timeout_s=0.3, path=str(script))
    auto = make_auto(tmp_path, tool)
    try:
        start = time.monotonic()
        auto.sample()
        assert time.monotonic() - start < 0.5  # sysfs answered while the tool hangs
        assert auto.pollers[0].wait_first(5)
        snap = auto.sample()
        assert "rocm-smi did not answer within 0.3 s (killed)" in snap.errors
        assert snap.gpus[0].temperature_c["edge"] == 40.0
    finally:
        auto.close()


def test_tools_run_at_most_once_per_interval(tmp_path):
    tool = FakeTool()
    auto = make_auto(tmp_path, tool, interval_s=30.0)
    try:
        wait_for_tools(auto)
        for _ in range(50):
            auto.sample()
        assert tool.calls == 1
    finally:
        auto.close()


def test_tools_are_polled_again_after_the_interval(tmp_path):
    tool = FakeTool()
    auto = make_auto(tmp_path, tool, interval_s=0.05)
    try:
        wait_for_tools(auto)
        deadline = time.monotonic() + 5
        while tool.calls < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert tool.calls >= 3
    finally:
        auto.close()


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_staleness_is_reported_and_old_readings_are_dropped(tmp_path):
    clock = Clock()
    tool = FakeTool()
    auto = make_auto(tmp_path, tool, clock=clock, max_age_s=30.0)
    try:
        wait_for_tools(auto)
        clock.now += 12.0
        (gpu,) = auto.sample().gpus
        assert gpu.source["power_w"] == "faketool (12.0 s old)"
        clock.now += 88.0
        snap = auto.sample()
        assert snap.gpus[0].power_w is None
        assert snap.gpus[0].unavailable["power_w"] == "no power1_input or power1_average"
        assert "faketool readings are 100 s old; not used" in snap.errors
    finally:
        auto.close()


def test_a_failing_tool_is_reported_and_its_last_readings_kept(tmp_path):
    clock = Clock()
    tool = FakeTool()
    auto = make_auto(tmp_path, tool, clock=clock, interval_s=0.01)
    try:
        wait_for_tools(auto)
        tool.fail_with = "faketool printed incomplete JSON (cut off after 600 characters)"
        deadline = time.monotonic() + 5
        while auto.tool_status()[0].error is None and time.monotonic() < deadline:
            time.sleep(0.01)
        clock.now += 5.0
        snap = auto.sample()
        assert any(e.startswith("faketool printed incomplete JSON") and e.endswith("using its readings from 5 s ago")
                   for e in snap.errors)
        assert snap.gpus[0].power_w == 55.0
    finally:
        auto.close()


def test_a_tool_that_cannot_be_built_is_silently_skipped(tmp_path):
    def factory():
        raise BackendError("the amdsmi Python library is not installed")

    auto = make_auto(tmp_path, factory)
    try:
        wait_for_tools(auto)
        snap = auto.sample()
        assert snap.errors == []
        assert auto.tool_status()[0].disabled
        assert snap.gpus[0].power_w is None
    finally:
        auto.close()


def test_without_sysfs_gpus_the_tool_gpus_are_used(tmp_path):
    auto = make_auto(tmp_path, FakeTool(readings={B: {"power_w": 22.0}}), primary=FakeSysfs(()))
    try:
        infos = auto.discover()  # waits (boundedly) for the tool: discovery only
        assert [i.pci for i in infos] == [B]
        snap = auto.sample()
        assert snap.backend == "auto"
        assert snap.gpus[0].power_w == 22.0
        assert snap.gpus[0].source["power_w"].startswith("faketool (")
        assert any("no GPU found in sysfs; readings come from faketool" in e for e in snap.errors)
    finally:
        auto.close()


def test_missing_sysfs_module_falls_back_to_tools(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "rocmdesk.telemetry.backends.sysfs", None)
    auto = AutoBackend(HostRoot(tmp_path), RecordedRunner(), [FakeTool()], detect_tools=False)
    try:
        assert auto.primary is None
        assert [i.pci for i in auto.discover()] == [A]
        snap = auto.sample()
        assert snap.gpus[0].power_w == 55.0
        assert any("the sysfs backend is not available" in e for e in snap.errors)
    finally:
        auto.close()


def test_nothing_anywhere_is_an_empty_snapshot_with_reasons(tmp_path):
    tool = FakeTool(readings={})
    tool.fail_with = "rocm-smi: the amdgpu driver is not loaded (Driver not initialized)"
    auto = make_auto(tmp_path, tool, primary=FakeSysfs(()), tool_timeout_s=1.0)
    try:
        assert auto.discover() == []
        snap = auto.sample()
        assert snap.gpus == []
        assert "rocm-smi: the amdgpu driver is not loaded (Driver not initialized)" in snap.errors
    finally:
        auto.close()


def test_detected_rocm_smi_from_recorded_outputs_fills_sysfs_gaps(tmp_path):
    runner = RecordedRunner()
    runner.add(["/usr/bin/rocm-smi", *FULL_ARGS],
               stdout=(DATA / "rocm-smi-5.2.3-real-rx7800xt-rx6600-full.json").read_text())
    auto = AutoBackend(HostRoot(tmp_path), runner, primary=FakeSysfs((A, B)))
    try:
        assert [p.name for p in auto.pollers] == ["rocm-smi"]
        wait_for_tools(auto)
        by_pci = auto.sample().by_pci()
        assert by_pci[A].power_w == 32.0 and by_pci[A].temperature_c["junction"] == 31.0
        assert by_pci[A].fan_rpm == 868
        assert by_pci[B].power_w == 3.0
        assert by_pci[B].fan_rpm is None and by_pci[B].unavailable["fan_rpm"] == "no fan1_input"
        assert by_pci[B].source["power_w"].startswith("rocm-smi (")
    finally:
        auto.close()


# -- factory ----------------------------------------------------------------------------------

def test_factory_names(tmp_path):
    assert BACKEND_NAMES == ("auto", "sysfs", "rocm-smi", "amd-smi", "amdsmi", "demo")
    with pytest.raises(BackendError, match="unknown backend 'nvidia'"):
        make_backend("nvidia", HostRoot(tmp_path))


def test_factory_tool_backends_replay_the_roots_recordings(tmp_path):
    recordings = {" ".join(["/usr/bin/rocm-smi", *FULL_ARGS]): {
        "argv": ["/usr/bin/rocm-smi", *FULL_ARGS], "returncode": 0,
        "stdout": (DATA / "rocm-smi-5.2.3-real-rx7800xt-rx6600-full.json").read_text()}}
    (tmp_path / "rocmdesk").mkdir()
    (tmp_path / "rocmdesk" / "commands.json").write_text(json.dumps(recordings))
    backend = make_backend("rocm-smi", HostRoot(tmp_path))
    assert isinstance(backend.runner, RecordedRunner)
    assert backend.sample().by_pci()[A].power_w == 32.0


def test_factory_tool_missing_in_a_root(tmp_path):
    with pytest.raises(BackendError, match="amd-smi is not installed"):
        make_backend("amd-smi", HostRoot(tmp_path))
    with pytest.raises(BackendError, match="live machine"):
        make_backend("amdsmi", HostRoot(tmp_path))


def test_factory_demo_and_sysfs_missing_modules_are_clear(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "rocmdesk.telemetry.backends.demo", None)
    monkeypatch.setitem(sys.modules, "rocmdesk.telemetry.backends.sysfs", None)
    with pytest.raises(BackendError, match="the demo backend is not available"):
        make_backend("demo", HostRoot(tmp_path))
    with pytest.raises(BackendError, match="the sysfs backend is not available"):
        make_backend("sysfs", HostRoot(tmp_path))


def test_factory_auto(tmp_path):
    backend = make_backend("AUTO", HostRoot(tmp_path))
    try:
        assert isinstance(backend, AutoBackend) and backend.pollers == []  # an empty root has no tools
    finally:
        backend.close()


def test_primary_is_discovered_before_its_first_sample(tmp_path):
    class NeedsDiscover(FakeSysfs):
        discovered = 0

        def discover(self):
            self.discovered += 1
            return super().discover()

        def sample(self):
            if not self.discovered:
                raise AssertionError("sample() before discover()")
            return super().sample()

    primary = NeedsDiscover()
    auto = make_auto(tmp_path, primary=primary)
    try:
        assert auto.sample().gpus[0].info.pci == A
        auto.sample()
        assert primary.discovered == 1
    finally:
        auto.close()


def test_real_sysfs_backend_gaps_are_filled_by_recorded_rocm_smi(tmp_path):
    """sysfs of a tree whose power and fan files are gone; rocm-smi's recorded run still has them."""
    pytest.importorskip("rocmdesk.telemetry.backends.sysfs")
    from tests.support.sysfs_tree import GpuSpec, build_root

    tree = build_root(tmp_path / "tree", [GpuSpec("rx7800xt", pci=A), GpuSpec("rx6600", pci=B)])
    hwmon = next((tree / "sys" / "bus" / "pci" / "devices" / A / "hwmon").glob("hwmon*"))
    for name in ("power1_average", "power1_input", "fan1_input"):
        (hwmon / name).unlink(missing_ok=True)
    runner = RecordedRunner()
    runner.add(["/usr/bin/rocm-smi", *FULL_ARGS],
               stdout=(DATA / "rocm-smi-5.2.3-real-rx7800xt-rx6600-full.json").read_text())
    auto = AutoBackend(HostRoot(tree), runner)
    try:
        assert auto.primary is not None and auto.primary.name == "sysfs"
        assert {i.pci for i in auto.discover()} == {A, B}
        assert auto.pollers[0].wait_first(5)
        by_pci = auto.sample().by_pci()
        a = by_pci[A]
        assert a.power_w == 32.0 and a.source["power_w"].startswith("rocm-smi (")
        assert a.fan_rpm == 868 and a.source["fan_rpm"].startswith("rocm-smi (")
        assert a.temperature_c["edge"] == 24.0 and not a.source.get("temperature_c.edge", "").startswith("rocm-smi")
        assert "power_w" not in a.unavailable
    finally:
        auto.close()


def test_wait_for_tools_for_one_shot_use(tmp_path):
    gate = threading.Event()
    auto = make_auto(tmp_path, FakeTool(gate=gate))
    try:
        assert auto.wait_for_tools(0.1) is False
        gate.set()
        assert auto.wait_for_tools(5) is True
        assert auto.sample().gpus[0].power_w == 55.0
    finally:
        auto.close()


# -- a tool's lifetime: closed once, never while its thread is still using it ------------------------


class CloseAware(FakeTool):
    """Notes whether close() came while sample() was still running (a library shut down under a call)."""

    def __init__(self, gate: threading.Event) -> None:
        super().__init__("closeaware", gate=gate)
        self.in_sample = False
        self.closed_during_sample = False
        self.close_calls = 0

    def sample(self):
        self.in_sample = True
        try:
            return super().sample()
        finally:
            self.in_sample = False

    def close(self):
        self.close_calls += 1
        self.closed_during_sample = self.closed_during_sample or self.in_sample
        super().close()


def test_a_tool_busy_at_stop_is_closed_by_its_thread_after_the_call(tmp_path):
    from rocmdesk.telemetry.backends.auto import ToolPoller

    gate = threading.Event()
    tool = CloseAware(gate)
    poller = ToolPoller(tool, tool.name, interval_s=60.0)
    poller.start()
    deadline = time.monotonic() + 5
    while not tool.in_sample and time.monotonic() < deadline:
        time.sleep(0.005)
    assert tool.in_sample
    poller.stop(join_s=0.05)  # the call is still running: it must not be closed under it
    assert not tool.closed_during_sample and tool.close_calls == 0
    gate.set()
    assert poller._thread is not None
    poller._thread.join(5)
    assert tool.close_calls == 1 and not tool.closed_during_sample


def test_a_tool_built_after_stop_is_closed(tmp_path):
    from rocmdesk.telemetry.backends.auto import ToolPoller

    building = threading.Event()
    release = threading.Event()
    built: list[FakeTool] = []

    def slow_factory() -> FakeTool:  # amdsmi_init can take a while
        building.set()
        release.wait(10)
        built.append(FakeTool("slowtool"))
        return built[0]

    poller = ToolPoller(slow_factory, "slowtool", interval_s=60.0)
    poller.start()
    assert building.wait(5)
    poller.stop(join_s=0.05)
    release.set()
    assert poller._thread is not None
    poller._thread.join(5)
    assert built and built[0].closed and built[0].calls == 0


def test_a_stopped_idle_tool_is_closed_once(tmp_path):
    tool = CloseAware(threading.Event())
    tool.gate.set()
    auto = make_auto(tmp_path, tool)
    wait_for_tools(auto)
    auto.close()
    assert tool.close_calls == 1
    auto.close()
    assert tool.close_calls == 1
