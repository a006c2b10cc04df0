"""A support bundle's telemetry history keeps every process figure, so the opened snapshot shows
the same Processes tab (KFD compute use included); bundles made before those figures still open."""

from __future__ import annotations

import pytest

from rocmdesk.host import HostRoot
from rocmdesk.report.bundle import open_bundle, prepare_bundle, recording_from_snapshots
from rocmdesk.telemetry.model import GpuInfo, GpuSample, ProcessUse, Snapshot
from rocmdesk.telemetry.recording import NOT_IN_RECORDING, Frame, Recording
from tests.unit.report.workstation import make_workstation

INFO = GpuInfo(card="card0", pci="0000:03:00.0", name="Radeon RX 7900 XTX")


def rows(t: int) -> list[ProcessUse]:
    kfd = ProcessUse(pid=4242, pci=INFO.pci, name="python3", cmdline="python3 main.py", vram_bytes=(8 << 30) + t,
                     cu_occupancy_percent=37.5, cu_occupied=36 + t, sdma_us=1000 * t, sources=("kfd",),
                     unavailable={"gpu_percent": "no DRM fdinfo for this process", "gtt_bytes": "not from the KFD"})
    drm = ProcessUse(pid=2011, pci=INFO.pci, name="gnome-shell", cmdline="/usr/bin/gnome-shell", vram_bytes=1 << 28,
                     gtt_bytes=1 << 24, gpu_percent=float(t), sources=("drm-fdinfo",),
                     unavailable=dict.fromkeys(("cu_occupancy_percent", "cu_occupied", "sdma_us"),
                                               "not a KFD compute process on this GPU"))
    return [drm, kfd]


def save_and_open(tmp_path, history):
    root = make_workstation(tmp_path / "root")
    out = tmp_path / "b.tar.gz"
    prepare_bundle(HostRoot(root), history=history, minutes=5).save(out)
    return open_bundle(out)


@pytest.fixture(scope="module")
def opened_new(tmp_path_factory):
    snaps = [Snapshot("sysfs", 1000.0 + t, [GpuSample(INFO, 1000.0 + t, power_w=50.0)], processes=rows(t))
             for t in range(5)]
    with save_and_open(tmp_path_factory.mktemp("new"), recording_from_snapshots(snaps)) as opened:
        yield opened


def test_processes_come_back_field_for_field(opened_new):
    history = opened_new.history
    assert history is not None and len(history.frames) == 5
    for i in range(5):
        assert history.process_uses(i) == rows(i)


def test_the_windows_preload_snapshot_shows_the_same_rows(opened_new):
    snap = opened_new.history.snapshot(4, 1004.0, backend="sysfs")
    kfd = next(p for p in snap.processes if p.pid == 4242)
    assert (kfd.cu_occupancy_percent, kfd.cu_occupied, kfd.sdma_us, kfd.sources) == (37.5, 40, 4000, ("kfd",))
    assert kfd.gpu_percent is None and kfd.unavailable["gpu_percent"].startswith("no DRM fdinfo")
    drm = next(p for p in snap.processes if p.pid == 2011)
    assert drm.gpu_percent == 4.0 and drm.cu_occupancy_percent is None
    assert drm.name == "gnome-shell" and drm.cmdline == "/usr/bin/gnome-shell"  # names kept with the rows


def test_an_old_bundle_without_compute_figures_opens_with_reasons(tmp_path):
    """History written by rocmdesk before the KFD figures: only vram/gtt/gpu % per process."""
    old = Recording(name="bundle", gpus=[INFO], static=[{}], demo=False, meta={"start_time": 1000.0},
                    frames=[Frame(0.0, [{"power_w": 50.0}],
                                  [{"pid": 4242, "pci": INFO.pci, "vram_bytes": 8 << 30, "gtt_bytes": None,
                                    "gpu_percent": 12.0}])],
                    process_info={4242: {"pci": INFO.pci, "name": "python3", "cmdline": "python3 main.py",
                                         "user": None}})
    with save_and_open(tmp_path, old) as opened:
        (p,) = opened.history.process_uses(0)
    assert p.vram_bytes == 8 << 30 and p.gpu_percent == 12.0 and p.name == "python3"
    for key in ("cu_occupancy_percent", "cu_occupied", "sdma_us"):
        assert getattr(p, key) is None and p.unavailable[key] == NOT_IN_RECORDING
    assert p.gtt_bytes is None and p.unavailable["gtt_bytes"]
