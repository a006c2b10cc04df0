"""The default backend: sysfs first, vendor tools fill only what sysfs lacks.

sysfs costs microseconds and never hangs; a tool costs ~180 ms and can hang. So the tools run in
background threads at most once every ``interval_s`` seconds, ``sample()`` never waits for them,
and a filled value says which tool gave it and how old it is (``GpuSample.source``). GPUs are
matched by PCI address, never by the tools' own numbering.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rocmdesk.host import CommandRunner, HostRoot, runner_for
from rocmdesk.telemetry.backends.base import TOOL_TIMEOUT_S, Backend, BackendError
from rocmdesk.telemetry.model import SCALAR_METRICS, GpuInfo, GpuSample, ProcessUse, Snapshot

log = logging.getLogger(__name__)

DEFAULT_INTERVAL_S = 5.0
DEFAULT_MAX_AGE_S = 30.0

BackendSource = Backend | Callable[[], Backend]


@dataclass(frozen=True)
class ToolStatus:
    """What a fill tool last did, for the UI and Snapshot.errors."""

    name: str
    snapshot: Snapshot | None  # latest successful reading
    age_s: float | None  # how old that reading is
    error: str | None  # why the last run failed (None when it worked)
    busy_s: float | None  # how long the current run has been going, when one is going
    disabled: bool = False  # the tool cannot run here at all (not installed, library missing)


class ToolPoller:
    """Runs one backend's ``sample()`` in a daemon thread, at most once every ``interval_s``."""

    def __init__(self, source: BackendSource, name: str, interval_s: float = DEFAULT_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self.interval_s = interval_s
        self._source = source
        self.backend: Backend | None = source if isinstance(source, Backend) else None
        self._clock = clock
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._first = threading.Event()
        self._thread: threading.Thread | None = None
        self._snapshot: Snapshot | None = None
        self._taken_at: float | None = None
        self._error: str | None = None
        self._busy_since: float | None = None
        self._disabled = False
        self._closed = False

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=f"rocmdesk-{self.name}", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        backend = self.backend
        if backend is None:
            try:
                backend = self.backend = self._source()  # type: ignore[operator]
            except BackendError as exc:
                with self._lock:
                    self._error, self._disabled = str(exc), True
                self._first.set()
                return
        try:
            self._poll(backend)
        finally:
            # this thread closes what it uses: stop() may have given up waiting for a slow call
            # (or for the backend being built), and closing a library under a running call is unsafe
            self._close_backend()

    def _poll(self, backend: Backend) -> None:
        while not self._stop.is_set():
            started = self._clock()
            with self._lock:
                self._busy_since = started
            try:
                snapshot = backend.sample()
                with self._lock:
                    self._snapshot, self._taken_at, self._error = snapshot, self._clock(), None
            except BackendError as exc:
                with self._lock:
                    self._error = str(exc)
            except Exception as exc:  # a bug in one tool's parser must not kill sampling
                log.exception("%s failed", self.name)
                with self._lock:
                    self._error = f"{self.name} failed unexpectedly: {exc}"
            finally:
                with self._lock:
                    self._busy_since = None
                self._first.set()
            self._stop.wait(max(0.0, self.interval_s - (self._clock() - started)))

    def status(self) -> ToolStatus:
        now = self._clock()
        with self._lock:
            return ToolStatus(
                name=self.name,
                snapshot=self._snapshot,
                age_s=None if self._taken_at is None else max(0.0, now - self._taken_at),
                error=self._error,
                busy_s=None if self._busy_since is None else max(0.0, now - self._busy_since),
                disabled=self._disabled,
            )

    def wait_first(self, timeout: float) -> bool:
        return self._first.wait(timeout)

    def stop(self, join_s: float = 0.5) -> None:
        """Stop polling. A call still running after ``join_s`` keeps its thread, which closes
        the backend when the call returns; otherwise the backend is closed before this returns."""
        self._stop.set()
        if self._thread is None:
            self._close_backend()  # never started: nobody else will
        elif self._thread is not threading.current_thread():
            self._thread.join(join_s)

    def _close_backend(self) -> None:
        with self._lock:
            backend = None if self._closed else self.backend
            self._closed = True
        if backend is not None:
            try:
                backend.close()
            except Exception:
                log.exception("closing %s failed", self.name)


def _fillable(key: str) -> bool:
    return key in SCALAR_METRICS or key.startswith("temperature_c.")


def fill_gaps(sample: GpuSample, tools: Sequence[ToolStatus], max_age_s: float,
              by_pci: Sequence[dict[str, GpuSample]] | None = None) -> None:
    """Fill the values ``sample`` lacks from the tools' readings of the same PCI address.

    ``by_pci`` (one map per tool, from Snapshot.by_pci) saves rebuilding them for every GPU.
    """
    maps = by_pci if by_pci is not None else [t.snapshot.by_pci() if t.snapshot else {} for t in tools]
    for key in [k for k in sample.unavailable if _fillable(k)]:
        for tool, gpus in zip(tools, maps, strict=True):
            if tool.snapshot is None or tool.age_s is None or tool.age_s > max_age_s:
                continue
            other = gpus.get(sample.info.pci)
            value = other.get(key) if other is not None else None
            if value is None:
                continue
            if key.startswith("temperature_c."):
                sample.temperature_c[key.split(".", 1)[1]] = value
            else:
                setattr(sample, key, value)
            del sample.unavailable[key]
            sample.source[key] = f"{tool.name} ({tool.age_s:.1f} s old)"
            break


class AutoBackend(Backend):
    """sysfs (primary) + rocm-smi / amd-smi / amdsmi filling its gaps from background threads.

    ``extra`` are more fill backends (or factories of them), tried after the detected tools;
    ``primary`` replaces the sysfs backend and ``detect_tools=False`` skips tool detection
    (both for tests and special set-ups).
    """

    name = "auto"

    def __init__(self, root: HostRoot, runner: CommandRunner | None = None,
                 extra: Sequence[BackendSource] | None = None, *, primary: Backend | None = None,
                 detect_tools: bool = True, interval_s: float = DEFAULT_INTERVAL_S,
                 max_age_s: float = DEFAULT_MAX_AGE_S, tool_timeout_s: float = TOOL_TIMEOUT_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.root = root
        self.runner = runner if runner is not None else runner_for(root)
        self.max_age_s = max_age_s
        self.tool_timeout_s = tool_timeout_s
        self._primary_error: str | None = None
        self.primary = primary if primary is not None else self._make_sysfs()
        sources: list[tuple[str, BackendSource]] = self._detect_tools() if detect_tools else []
        for source in extra or []:
            sources.append((str(getattr(source, "name", None) or getattr(source, "__name__", "tool")), source))
        self.pollers = [ToolPoller(src, name, interval_s, clock) for name, src in sources]
        self._started = False
        self._discovered = False

    # -- construction -----------------------------------------------------------------------
    def _make_sysfs(self) -> Backend | None:
        try:
            module = importlib.import_module("rocmdesk.telemetry.backends.sysfs")
            return module.SysfsBackend(self.root)
        except ImportError as exc:
            self._primary_error = f"the sysfs backend is not available ({exc})"
        except BackendError as exc:
            self._primary_error = f"sysfs: {exc}"
        log.warning("%s", self._primary_error)
        return None

    def _detect_tools(self) -> list[tuple[str, BackendSource]]:
        """The fill tools present here, cheapest first. Nothing is run yet, and a tool's backend module
        (with its output parsers) is imported only when the tool is installed."""
        found: list[tuple[str, BackendSource]] = []
        if self.root.is_live and importlib.util.find_spec("amdsmi") is not None:
            from rocmdesk.telemetry.backends.amdsmi_lib import AmdsmiLibBackend

            found.append(("amdsmi", lambda: AmdsmiLibBackend(self.root)))
        for tool, module, name in (("amd-smi", "rocmdesk.telemetry.backends.amd_smi", "AmdSmiBackend"),
                                   ("rocm-smi", "rocmdesk.telemetry.backends.rocm_smi", "RocmSmiBackend")):
            path = self.runner.which(tool)
            if path:
                cls = getattr(importlib.import_module(module), name)
                found.append((tool, cls(self.root, self.runner, self.tool_timeout_s, path)))
        return found

    def _start(self) -> None:
        if not self._started:
            self._started = True
            for poller in self.pollers:
                poller.start()

    # -- Backend ----------------------------------------------------------------------------
    def tool_status(self) -> list[ToolStatus]:
        return [p.status() for p in self.pollers]

    def wait_for_tools(self, timeout_s: float | None = None) -> bool:
        """Block until every tool answered once (for one-shot use such as ``rocmdesk sample``).

        The live sampler never calls this; True when all answered within the time.
        """
        self._start()
        deadline = time.monotonic() + (self.tool_timeout_s + 1.0 if timeout_s is None else timeout_s)
        return all(p.wait_first(max(0.0, deadline - time.monotonic())) for p in self.pollers)

    def discover(self) -> list[GpuInfo]:
        infos = self._discover_primary()
        self._start()
        if infos or not self.pollers:
            return infos
        # No GPU in sysfs (a container without /sys?): wait, boundedly, for the tools' first
        # answers. Only discovery waits; sample() never does.
        deadline = time.monotonic() + self.tool_timeout_s + 1.0
        for poller in self.pollers:
            poller.wait_first(max(0.0, deadline - time.monotonic()))
        tool = self._fallback_tool(self.tool_status())
        return [g.info for g in tool.snapshot.gpus] if tool and tool.snapshot else []

    def _discover_primary(self) -> list[GpuInfo]:
        self._discovered = True
        if self.primary is None:
            return []
        try:
            return self.primary.discover()
        except BackendError as exc:
            self._primary_error = f"{self.primary.name}: {exc}"
            return []

    def _fallback_tool(self, statuses: Sequence[ToolStatus]) -> ToolStatus | None:
        for status in statuses:
            if status.snapshot and status.snapshot.gpus and status.age_s is not None \
                    and status.age_s <= self.max_age_s:
                return status
        return None

    def sample(self) -> Snapshot:
        self._start()
        if not self._discovered:
            self._discover_primary()  # sample() reads the GPUs of the last discover()
        now = time.time()
        errors: list[str] = []
        primary_snap: Snapshot | None = None
        if self.primary is not None:
            try:
                primary_snap = self.primary.sample()
            except BackendError as exc:
                errors.append(f"{self.primary.name}: {exc}")
        elif self._primary_error:
            errors.append(self._primary_error)
        statuses = self.tool_status()
        errors.extend(self._tool_messages(statuses))
        if primary_snap is not None and primary_snap.gpus:
            maps = [s.snapshot.by_pci() if s.snapshot else {} for s in statuses]
            for gpu in primary_snap.gpus:
                fill_gaps(gpu, statuses, self.max_age_s, maps)
            return Snapshot(backend=self.name, timestamp=primary_snap.timestamp, gpus=primary_snap.gpus,
                            processes=primary_snap.processes, errors=[*primary_snap.errors, *errors])
        fallback = self._fallback_tool(statuses)
        if fallback is not None and fallback.snapshot is not None:
            errors.append(f"no GPU found in sysfs; readings come from {fallback.name} "
                          f"({fallback.age_s:.1f} s old)")
            gpus = []
            for gpu in fallback.snapshot.gpus:
                copy = GpuSample.from_json(gpu.to_json(), info=gpu.info, timestamp=gpu.timestamp)
                copy.source = {k: f"{fallback.name} ({fallback.age_s:.1f} s old)" for k in gpu.source}
                gpus.append(copy)
            return Snapshot(backend=self.name, timestamp=now, gpus=gpus, errors=errors)
        if primary_snap is not None:
            return Snapshot(backend=self.name, timestamp=primary_snap.timestamp, gpus=[],
                            processes=primary_snap.processes, errors=[*primary_snap.errors, *errors])
        return Snapshot(backend=self.name, timestamp=now, errors=errors)

    def _tool_messages(self, statuses: Sequence[ToolStatus]) -> list[str]:
        messages = []
        for status in statuses:
            if status.disabled:
                continue  # a tool that is simply not here is not a problem worth showing
            if status.error:
                tail = f"; using its readings from {status.age_s:.0f} s ago" if status.age_s is not None \
                    and status.age_s <= self.max_age_s else ""
                messages.append(f"{status.error}{tail}")
            elif status.snapshot is None and status.busy_s is not None:
                messages.append(f"{status.name} has not answered yet (running for {status.busy_s:.1f} s)")
            if status.age_s is not None and status.age_s > self.max_age_s:
                messages.append(f"{status.name} readings are {status.age_s:.0f} s old; not used")
        return messages

    def processes(self) -> list[ProcessUse]:
        return self.primary.processes() if self.primary is not None else []

    def close(self) -> None:
        for poller in self.pollers:
            poller.stop()
        if self.primary is not None:
            self.primary.close()
