"""Decide what the window shows (this machine, the demo, a root folder or a bundle) and build it.

Runs before the window exists (or in a worker thread when the user opens another source), so
its file reads never block the GUI thread.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from rocmdesk.host import CommandRunner, HostRoot, runner_for
from rocmdesk.telemetry.backends.base import Backend, BackendError
from rocmdesk.telemetry.model import Snapshot
from rocmdesk.ui.formatting import gpu_label

log = logging.getLogger(__name__)

DEMO_PREROLL_S = 3600.0
# Where in each recording the window opens: under load, so the first look shows a working machine.
DEMO_START_S = {"mi300x-node": 200.0, "rx7900xtx-comfyui": 240.0}


@dataclass
class Source:
    mode: str  # "live", "demo", "snapshot"
    reason: str  # why, in words (shown in the banner / log)
    root: HostRoot
    runner: CommandRunner
    backend: Backend
    backend_name: str
    # past samples to show at once, or a function computing them (run off the GUI thread)
    preload: list[Snapshot] | Callable[[], Iterable[Snapshot]] = field(default_factory=list)
    bundle: Any = None  # an OpenedBundle kept open while shown
    bundle_path: str | None = None
    warnings: list[str] = field(default_factory=list)
    # recorded time: shown as recorded, never sampled again (a bundle); a root folder is re-read
    frozen: bool = False
    machine_name: str = ""  # the demo machine shown (a name in resources/demo), "" for any other source


def demo_source(reason: str, recording: str | None = None, preroll_s: float = DEMO_PREROLL_S) -> Source:
    """The demo: a shipped recording's telemetry over the shipped demo machine of the same name.

    Diagnosis, Report and Tuning read the machine's bundle (resources/demo/NAME.machine.tar.gz), never
    this computer's ``/``: the demo must show its faults and nothing of the host it runs on.
    """
    from rocmdesk.telemetry.backends.demo import DEFAULT_RECORDING, DemoBackend

    name = recording or os.environ.get("ROCMDESK_DEMO") or DEFAULT_RECORDING
    backend = DemoBackend(name, start_s=DEMO_START_S.get(str(name), 0.0))
    # the pre-roll (an hour of 8 GPUs: ~0.3 s) is computed in the feed's loader thread, after the
    # window has painted; sampling starts after it, so the two never run at once
    preload = (lambda: preroll_in_chunks(backend, preroll_s)) if preroll_s > 0 else []
    title = getattr(backend.recording, "title", "") or name
    machine_name = os.path.basename(str(name)).removesuffix(".jsonl.gz")
    machine = open_demo_machine(machine_name)
    warnings = [] if machine.path else [f"No demo machine is shipped for {name}: Diagnosis, Report and Tuning "
                                        "show an empty machine"]
    return Source("demo", f"{reason} — {title}" if reason else title, machine.root, machine.runner(),
                  backend, "demo", preload, bundle=machine, warnings=warnings, machine_name=machine_name)


class EmptyMachine:
    """Stands in for a demo machine this build does not ship: an empty folder, removed on close (the
    demo never falls back to reading this computer)."""

    path = ""
    created: float | None = None

    def __init__(self) -> None:
        import tempfile

        self.folder = tempfile.mkdtemp(prefix="rocmdesk-demo-empty-")
        self.root = HostRoot(self.folder)

    def runner(self) -> CommandRunner:
        return runner_for(self.root)

    def close(self) -> None:
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)


def open_demo_machine(name: str) -> Any:
    """The opened bundle of the demo machine ``name`` (an OpenedBundle), or an :class:`EmptyMachine`."""
    from rocmdesk.report.bundle import BundleError, open_bundle
    from rocmdesk.telemetry.recording import machine_path

    path = machine_path(name)
    if path is None:
        log.warning("no demo machine %r is shipped; the demo shows an empty machine", name)
        return EmptyMachine()
    try:
        return open_bundle(path)
    except (BundleError, OSError) as exc:
        log.warning("the demo machine %s cannot be opened (%s); the demo shows an empty machine", path, exc)
        return EmptyMachine()


def preroll_in_chunks(backend: Any, seconds: float, chunk_s: float = 3600.0) -> Iterator[Snapshot]:
    """The demo's past ``seconds``, oldest first, an hour at a time (24 h of 8 GPUs as one list
    would be ~700 000 objects, most of a 250 MB budget, only to be thrown away)."""
    now = time.monotonic()  # the DemoBackend's clock (we built it with the default one)
    last = -math.inf
    chunks = max(1, math.ceil(seconds / chunk_s))
    for k in reversed(range(chunks)):
        span = min(chunk_s, seconds - k * chunk_s)
        for snap in backend.preroll(span, now=now - k * chunk_s):
            if snap.timestamp > last:  # a frame on a chunk boundary comes once
                last = snap.timestamp
                yield snap


def root_source(root_dir: str, backend_name: str = "auto") -> Source:
    from rocmdesk.telemetry.backends.demo import choose_startup_source
    from rocmdesk.telemetry.backends.factory import make_backend

    root = HostRoot(root_dir)
    runner = runner_for(root)
    _mode, reason = choose_startup_source(root)
    backend = make_backend(backend_name, root, runner)
    mode = "live" if root.is_live else "snapshot"
    if mode == "snapshot":
        reason = root_folder_reason(root.root, backend)
    return Source(mode, reason, root, runner, backend, backend.name)


def root_folder_reason(where: str, backend: Backend) -> str:
    """What the banner says about a root folder: read like a snapshot (files copied from some machine,
    not this one's live state), with the GPUs the backend actually finds in it.

    Counted from the backend's discovery, not from a bare vendor-file probe: dumps pad sysfs files
    with NULs, which such a probe took for "no AMD GPU" on a folder holding one.
    """
    try:
        infos = backend.discover()
    except BackendError as exc:
        return f"Root folder {where}, read like a snapshot (not this machine's live state): its GPUs " \
               f"cannot be read ({exc})"
    if not infos:
        return f"Root folder {where}, read like a snapshot (not this machine's live state): no AMD GPU found in it"
    count = f"{len(infos)} AMD GPU" + ("s" if len(infos) != 1 else "")
    return (f"Root folder {where}, read like a snapshot (not this machine's live state): {count} — "
            + ", ".join(gpu_label(i) for i in infos))



def bundle_source(path: str, backend_name: str = "auto") -> Source:
    from rocmdesk.report.bundle import open_bundle
    from rocmdesk.telemetry.backends.factory import make_backend

    bundle = open_bundle(path)
    runner = bundle.runner()
    backend = make_backend(backend_name, bundle.root, runner)
    preload: list[Snapshot] = recorded_snapshots(bundle, backend)
    warnings = [bundle.history_error] if bundle.history_error and bundle.history is None else []
    return Source("snapshot", bundle.banner(), bundle.root, runner, backend, backend.name, preload,
                  bundle=bundle, bundle_path=path, warnings=warnings, frozen=True)


def recorded_snapshots(bundle: Any, backend: Backend) -> list[Snapshot]:
    """What a bundle recorded, at its own timestamps: its telemetry history, or else one reading of
    the files it holds, stamped with the capture time (never the viewer's clock)."""
    recording = bundle.history
    if recording is not None and recording.frames:
        start = float(recording.meta.get("start_time", 0.0) or 0.0) or float(bundle.created or 0.0)
        return [recording.snapshot(i, start + f.t, backend=backend.name) for i, f in enumerate(recording.frames)]
    try:
        backend.discover()
        snapshot = backend.sample()
    except Exception as exc:  # a bundle of a broken machine still opens: diagnosis and report work
        log.warning("the bundle's GPU files cannot be read: %s", exc)
        return []
    stamp = float(bundle.created or 0.0) or snapshot.timestamp
    snapshot.timestamp = stamp
    for sample in snapshot.gpus:
        sample.timestamp = stamp
    return [snapshot]


def startup_source(root: str | None = None, demo: bool = False, open_bundle: str | None = None,
                   backend: str = "auto") -> Source:
    """What ``rocmdesk`` opens with these arguments; falls back to the demo when nothing works."""
    backend = backend or "auto"
    if demo or backend == "demo":
        return demo_source("Demo mode (--demo)")
    if open_bundle:
        return bundle_source(open_bundle, backend)
    if root and os.path.abspath(root) != "/":
        return root_source(root, backend)
    from rocmdesk.telemetry.backends.demo import choose_startup_source

    mode, reason = choose_startup_source(HostRoot("/"))
    if mode == "demo":
        log.warning("%s", reason)
        return demo_source(reason[:1].upper() + reason[1:])
    try:
        return root_source("/", backend)
    except BackendError as exc:
        log.warning("the %s backend cannot start (%s); showing demo data", backend, exc)
        return demo_source(f"The {backend} backend cannot start ({exc})")
