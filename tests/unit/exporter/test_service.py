"""The running exporter: a scrape never waits on the diagnosis or the backend; failures are metrics."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from rocmdesk.exporter.service import Exporter, MetricsServer
from rocmdesk.host import HostRoot
from rocmdesk.telemetry.backends.base import Backend, BackendError
from rocmdesk.telemetry.backends.sysfs import SysfsBackend
from rocmdesk.telemetry.model import Snapshot
from tests.support.instinct import instinct_specs
from tests.support.sysfs_tree import build_root


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("mi300x")
    return build_root(tmp / "tree", instinct_specs(tmp / "dumps", "mi300x", count=2))


class FakeReport:
    def __init__(self, findings):
        self.findings = findings

    def counts(self):
        return {"pass": 1, "fail": len(self.findings)}


class FakeFinding:
    def __init__(self, check_id, severity):
        from rocmdesk.diagnosis.model import Severity

        self.id, self.severity, self.subject = check_id, Severity(severity), None


def values(body: bytes, name: str) -> list[float]:
    return [s.value for f in text_string_to_metric_families(body.decode()) for s in f.samples if s.name == name]


def wait_until(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def serve():
    started = []

    def start(exporter: Exporter) -> str:
        server = MetricsServer(("127.0.0.1", 0), exporter)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        exporter.start()
        started.append((server, exporter))
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server, exporter in started:
        server.shutdown()
        server.server_close()
        exporter.stop()


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read()


def test_scrape_answers_while_a_diagnosis_is_running(tree, serve):
    release = threading.Event()
    entered = threading.Event()

    def slow_diagnose(root):
        entered.set()
        release.wait(10)
        return FakeReport([FakeFinding("amdgpu-blacklisted", "error")])

    exporter = Exporter(HostRoot(tree), SysfsBackend(HostRoot(tree)), interval_s=0.1, diagnose=slow_diagnose)
    base = serve(exporter)
    assert entered.wait(5)
    assert wait_until(lambda: values(get(base + "/metrics"), "rocmdesk_gpus") == [2.0])
    body = get(base + "/metrics")  # answered although the diagnosis has not returned
    assert values(body, "rocmdesk_finding") == []
    release.set()
    assert exporter.wait_for_diagnosis(5)
    assert wait_until(lambda: values(get(base + "/metrics"), "rocmdesk_finding") == [1.0])


def test_a_diagnosis_that_raises_is_counted_and_serving_goes_on(tree, serve):
    def broken(root):
        raise RuntimeError("a check crashed the engine")

    exporter = Exporter(HostRoot(tree), SysfsBackend(HostRoot(tree)), interval_s=0.1, diagnose=broken)
    base = serve(exporter)
    assert exporter.wait_for_diagnosis(5)
    body = get(base + "/metrics")
    assert values(body, "rocmdesk_diagnosis_up") == [0.0]
    assert values(body, "rocmdesk_diagnosis_failures_total") == [1.0]
    assert wait_until(lambda: values(get(base + "/metrics"), "rocmdesk_gpus") == [2.0])


class FailingBackend(Backend):
    name = "failing"

    def discover(self):
        return []

    def sample(self) -> Snapshot:
        raise BackendError("sysfs vanished")


class HangingBackend(Backend):
    name = "hanging"

    def __init__(self):
        self.release = threading.Event()

    def discover(self):
        return []

    def sample(self) -> Snapshot:
        self.release.wait(10)
        return Snapshot(backend=self.name, timestamp=time.time())


def test_backend_errors_are_counted(tree, serve):
    exporter = Exporter(HostRoot(tree), FailingBackend(), interval_s=0.1, diagnose_every_s=0)
    base = serve(exporter)
    assert wait_until(lambda: (values(get(base + "/metrics"), "rocmdesk_sample_errors_total") or [0])[0] >= 2)
    assert "rocmdesk_finding" not in get(base + "/metrics").decode()  # diagnosis off: no diagnosis metrics


def test_a_hung_backend_marks_values_stale_and_scrapes_still_answer(tree, serve):
    backend = HangingBackend()
    exporter = Exporter(HostRoot(tree), backend, interval_s=0.1, diagnose_every_s=0)
    exporter.sampler._deadline = 0.3  # the sampler's hang detection, shortened for the test
    base = serve(exporter)
    try:
        assert wait_until(lambda: values(get(base + "/metrics"), "rocmdesk_sampler_stale") == [1.0])
    finally:
        backend.release.set()


def test_unknown_path_is_404(tree, serve):
    exporter = Exporter(HostRoot(tree), SysfsBackend(HostRoot(tree)), interval_s=0.1, diagnose_every_s=0)
    base = serve(exporter)
    with pytest.raises(urllib.error.HTTPError) as info:
        get(base + "/secret")
    assert info.value.code == 404
    assert b"/metrics" in get(base + "/")


def test_body_is_rendered_once_per_change_and_shows_the_newest_sample(tree, monkeypatch):
    import rocmdesk.exporter.service as service

    renders = []
    real_render = service.render
    monkeypatch.setattr(service, "render", lambda *a: renders.append(1) or real_render(*a))
    backend = SysfsBackend(HostRoot(tree))
    exporter = Exporter(HostRoot(tree), backend, interval_s=1.0, diagnose_every_s=0)
    try:
        renders.clear()
        first = backend.sample()
        exporter._on_snapshot(first)
        exporter._on_snapshot(first)  # two samples between scrapes: one render, at the scrape
        assert renders == []
        body = exporter.body
        assert exporter.body is body and len(renders) == 1  # served from the cache until the next change
        assert values(body, "gpu_junction_temperature")

        hot = replace(first, timestamp=first.timestamp + 1, gpus=[
            replace(g, temperature_c={**g.temperature_c, "junction": 99.5}) for g in first.gpus])
        exporter._on_snapshot(hot)
        assert set(values(exporter.body, "gpu_junction_temperature")) == {99.5}
        assert len(renders) == 2
    finally:
        backend.close()
