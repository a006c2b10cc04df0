"""The long-running exporter: a sampler thread, a diagnosis thread, and a cached ``/metrics`` body.

A scrape never waits on sysfs, a tool or the diagnosis: those run on their own threads and only
swap in new state. The exposition text is rendered from that state at most once per change, on the
first scrape that needs it (a few ms for 8 GPUs), and served from the cache until the next change.
Rendering on every sample instead would cost more than the sample itself when Prometheus scrapes
every 15 s and the sampler runs at 1 Hz (the benchmark measures both). A failing sample or diagnosis
is counted and shown in metrics; it never stops the exporter.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client.exposition import CONTENT_TYPE_LATEST

from rocmdesk import __version__
from rocmdesk.exporter.exposition import render_text
from rocmdesk.exporter.metrics import DiagnosisState, FindingRow, SamplingState, families
from rocmdesk.host import HostRoot
from rocmdesk.telemetry.backends.base import Backend
from rocmdesk.telemetry.model import Snapshot
from rocmdesk.telemetry.sampler import Sampler, SamplerStatus

log = logging.getLogger(__name__)

Diagnose = Callable[[HostRoot], Any]  # returns a DiagnosisReport


def render(sampling: SamplingState, diagnosis: DiagnosisState | None) -> bytes:
    """The Prometheus text exposition of the current state."""
    return render_text(families(sampling, diagnosis, __version__))


def diagnosis_state(report: Any, previous: DiagnosisState, finished_at: float, duration_s: float) -> DiagnosisState:
    """Copy what the metrics need out of a DiagnosisReport."""
    rows = [FindingRow(f.id, f.severity.value, f.subject or "") for f in report.findings]
    return DiagnosisState(finished_at=finished_at, duration_s=duration_s, findings=rows,
                          check_counts=dict(report.counts()), error=None, runs=previous.runs + 1,
                          failures=previous.failures)


class Exporter:
    """Samples ``backend`` every ``interval_s`` and diagnoses ``root`` every ``diagnose_every_s`` (0: never)."""

    def __init__(self, root: HostRoot, backend: Backend, *, interval_s: float = 1.0, diagnose_every_s: float = 600.0,
                 diagnose: Diagnose | None = None) -> None:
        self.root = root
        self.backend = backend
        self.diagnose_every_s = float(diagnose_every_s)
        self._diagnose = diagnose or _default_diagnose
        self._lock = threading.Lock()
        self._sampling = SamplingState()
        self._diagnosis: DiagnosisState | None = DiagnosisState() if self.diagnose_every_s > 0 else None
        self._body = render(self._sampling, self._diagnosis)
        self._dirty = False  # state changed since _body was rendered
        self._render_lock = threading.Lock()  # one render at a time; the state lock is held only to copy
        self._stop = threading.Event()
        self._diagnosis_done = threading.Event()
        self._thread: threading.Thread | None = None
        self.sampler = Sampler(backend, self._on_snapshot, rate_hz=1.0 / interval_s, on_status=self._on_status)

    # -- lifecycle -----------------------------------------------------------------------------------
    def start(self) -> None:
        self.sampler.start()
        if self._diagnosis is not None:
            self._thread = threading.Thread(target=self._diagnosis_loop, name="rocmdesk-exporter-diagnosis",
                                            daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self.sampler.stop(timeout=timeout)
        if self._thread is not None:
            self._thread.join(timeout)
        self.backend.close()

    # -- what a scrape reads ---------------------------------------------------------------------------
    @property
    def body(self) -> bytes:
        """The current exposition; renders if the state changed since the last scrape."""
        if not self._dirty:
            return self._body
        with self._render_lock:
            if self._dirty:  # another scrape may have rendered while this one waited
                with self._lock:
                    sampling, diagnosis = self._sampling, self._diagnosis
                    self._dirty = False
                self._body = render(sampling, diagnosis)
            return self._body

    def wait_for_diagnosis(self, timeout: float) -> bool:
        return self._diagnosis_done.wait(timeout)

    # -- updates -------------------------------------------------------------------------------------
    def _changed(self) -> None:
        self._dirty = True

    def _on_snapshot(self, snapshot: Snapshot) -> None:
        with self._lock:
            seen = dict(self._sampling.seen)
            for sample in snapshot.gpus:
                seen[sample.info.pci] = sample.info
            self._sampling = replace(self._sampling, snapshot=snapshot, seen=seen)
        self._changed()

    def _on_status(self, status: SamplerStatus) -> None:
        """Counters change with every sample, which marks the body stale anyway; mark it here only when
        no sample will come: the backend went stale or failed."""
        with self._lock:
            before = self._sampling
            self._sampling = replace(before, stale=status.stale, samples=status.samples,
                                     errors=status.errors, last_duration_s=status.last_duration_s)
            changed = (before.stale, before.errors) != (status.stale, status.errors)
        if changed:
            self._changed()

    def run_diagnosis_once(self) -> None:
        """One diagnosis; a failure is recorded (``rocmdesk_diagnosis_up 0``), never raised."""
        assert self._diagnosis is not None
        started = time.monotonic()
        try:
            report = self._diagnose(self.root)
        except Exception as exc:  # the engine catches check errors; this is a broken run
            log.exception("diagnosis failed")
            with self._lock:
                previous = self._diagnosis
                self._diagnosis = replace(previous, error=f"{type(exc).__name__}: {exc}",
                                          failures=previous.failures + 1, finished_at=time.time(),
                                          duration_s=time.monotonic() - started)
        else:
            with self._lock:
                self._diagnosis = diagnosis_state(report, self._diagnosis, time.time(), time.monotonic() - started)
        self._changed()
        self._diagnosis_done.set()

    def _diagnosis_loop(self) -> None:
        while not self._stop.is_set():
            self.run_diagnosis_once()
            self._stop.wait(self.diagnose_every_s)


def _default_diagnose(root: HostRoot) -> Any:
    from rocmdesk.diagnosis.runner import diagnose

    return diagnose(root)


class _Handler(BaseHTTPRequestHandler):
    server: MetricsServer

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self._send(200, CONTENT_TYPE_LATEST, self.server.exporter.body)
        elif path == "/":
            self._send(200, "text/html; charset=utf-8",
                       b"<html><body><h1>rocmdesk exporter</h1><p><a href=\"/metrics\">/metrics</a></p></body></html>")
        else:
            self._send(404, "text/plain; charset=utf-8", b"not found: try /metrics\n")

    def _send(self, code: int, content_type: str, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)


class MetricsServer(ThreadingHTTPServer):
    """``GET /metrics`` from an :class:`Exporter`; a thread per connection, so one slow client blocks nobody."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], exporter: Exporter) -> None:
        self.exporter = exporter
        super().__init__(address, _Handler)
