"""Qt-free periodic sampling off the GUI thread.

A :class:`Sampler` calls ``backend.sample()`` in its own worker thread at 0.25-10 Hz and hands
each snapshot to a callback (the window wraps it in a Qt signal). Two threads:

* the *scheduler* decides when to sample and watches the call in flight: one that runs past the
  deadline makes the sampler *stale* ("stale since T"), the last values stay marked stale, and no
  second call of the hung backend is started (the stuck call keeps its thread; when it returns,
  sampling resumes by itself);
* the *worker* makes the calls, one at a time.

Exceptions from the backend (and from the callbacks) are reported and sampling goes on.
``tick()`` is the scheduler's whole decision step, so tests can drive it with a fake clock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from rocmdesk.telemetry.backends.base import Backend, BackendError
from rocmdesk.telemetry.model import Snapshot

log = logging.getLogger(__name__)

MIN_RATE_HZ = 0.25
MAX_RATE_HZ = 10.0
DEFAULT_DEADLINE_S = 5.0
MAX_WAIT_S = 0.5  # the scheduler re-checks at least this often (stop, rate changes, deadline)


@dataclass(frozen=True, slots=True)
class SamplerStatus:
    """What the status bar shows. Times are wall-clock seconds (``time.time()`` scale)."""

    state: str  # "idle" (not started), "running", "paused", "stale", "stopped"
    rate_hz: float
    stale: bool = False
    stale_since: float | None = None  # when the call that has not returned started
    last_sample_at: float | None = None  # wall time the last good snapshot arrived
    last_error: str | None = None  # the newest failure, in words (cleared by a good sample)
    last_duration_s: float | None = None
    samples: int = 0
    errors: int = 0
    backend: str = "?"

    @property
    def message(self) -> str:
        if self.stale and self.stale_since is not None:
            stamp = time.strftime("%H:%M:%S", time.localtime(self.stale_since))
            return f"{self.backend}: no answer, values stale since {stamp}"
        if self.last_error:
            return f"{self.backend}: {self.last_error}"
        return f"{self.backend}: {self.state}, {self.rate_hz:g} Hz"


def check_rate(rate_hz: float) -> float:
    rate = float(rate_hz)
    if not MIN_RATE_HZ <= rate <= MAX_RATE_HZ:
        raise ValueError(f"sample rate must be between {MIN_RATE_HZ:g} and {MAX_RATE_HZ:g} Hz, got {rate_hz!r}")
    return rate


class Sampler:
    """Periodic ``backend.sample()`` in a worker thread, with hang detection.

    ``on_snapshot(snapshot)`` and ``on_status(status)`` are called from the worker or scheduler
    thread, never from the caller's thread: a GUI must forward them to its own thread.
    """

    def __init__(self, backend: Backend, on_snapshot: Callable[[Snapshot], None], *, rate_hz: float = 1.0,
                 deadline_s: float = DEFAULT_DEADLINE_S, on_status: Callable[[SamplerStatus], None] | None = None,
                 clock: Callable[[], float] = time.monotonic, wall_clock: Callable[[], float] = time.time) -> None:
        if not deadline_s > 0:
            raise ValueError("deadline must be above 0 s")
        self.backend = backend
        self._on_snapshot = on_snapshot
        self._on_status = on_status
        self._clock = clock
        self._wall = wall_clock
        self._deadline = float(deadline_s)
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)  # notified when a call finishes
        self._wake = threading.Event()  # wakes the scheduler early
        self._request = threading.Event()  # asks the worker for one call
        self._stop = threading.Event()
        self._status = SamplerStatus(state="idle", rate_hz=check_rate(rate_hz), backend=backend.name)
        self._period = 1.0 / self._status.rate_hz
        self._paused = False
        self._started = False
        self._in_flight = False
        self._call_started = 0.0  # clock() when the call in flight began
        self._next_due = 0.0  # clock() of the next call
        self._last_snapshot: Snapshot | None = None
        self._scheduler: threading.Thread | None = None
        self._worker: threading.Thread | None = None

    # -- control -----------------------------------------------------------------------------------
    def start(self, scheduler: bool = True) -> None:
        """Start sampling now. ``scheduler=False`` starts only the worker: the caller drives tick()."""
        with self._lock:
            if self._started:
                raise RuntimeError("sampler already started")
            self._started = True
            self._next_due = self._clock()
            self._status = replace(self._status, state=self._state(stale=False))
        self._worker = threading.Thread(target=self._work, name="rocmdesk-sample-call", daemon=True)
        self._worker.start()
        if scheduler:
            self._scheduler = threading.Thread(target=self._schedule, name="rocmdesk-sampler", daemon=True)
            self._scheduler.start()
        self._emit_status()

    def stop(self, timeout: float = 2.0) -> bool:
        """Stop and join both threads. False if a hung backend call kept its thread alive
        (the thread is a daemon: it will not keep the process from exiting)."""
        self._stop.set()
        self._wake.set()
        self._request.set()
        deadline = time.monotonic() + timeout
        joined = True
        for thread in (self._scheduler, self._worker):
            if thread is not None and thread is not threading.current_thread():  # stop() from a callback
                thread.join(max(0.0, deadline - time.monotonic()))
                joined = joined and not thread.is_alive()
        with self._lock:
            self._status = replace(self._status, state=self._state(self._status.stale))
        if not joined:
            log.warning("sampler stopped, but a %s call is still running (left behind)", self.backend.name)
        self._emit_status()
        return joined

    def pause(self) -> None:
        with self._lock:
            self._paused = True
            self._status = replace(self._status, state=self._state(self._status.stale))
        self._emit_status()

    def resume(self) -> None:
        with self._lock:
            self._paused = False
            self._next_due = self._clock()
            self._status = replace(self._status, state=self._state(self._status.stale))
        self._wake.set()
        self._emit_status()

    def set_rate(self, rate_hz: float) -> None:
        rate = check_rate(rate_hz)
        with self._lock:
            self._period = 1.0 / rate
            self._status = replace(self._status, rate_hz=rate)
            if self._status.samples or self._status.errors or self._in_flight:
                self._next_due = min(self._next_due, self._call_started + self._period)
        self._wake.set()
        self._emit_status()

    # -- state ---------------------------------------------------------------------------------------
    @property
    def status(self) -> SamplerStatus:
        with self._lock:
            return self._status

    @property
    def last_snapshot(self) -> Snapshot | None:
        """The newest good snapshot (still shown, marked stale, while the backend hangs)."""
        with self._lock:
            return self._last_snapshot

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def busy(self) -> bool:
        with self._lock:
            return self._in_flight

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no call is in flight (tests, shutdown); False on time-out."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._in_flight, timeout)

    # -- scheduling ----------------------------------------------------------------------------------
    def tick(self) -> float:
        """One scheduling step at ``clock()``; returns seconds until the next step is useful."""
        now = self._clock()
        went_stale = False
        with self._lock:
            if self._stop.is_set() or not self._started:
                return MAX_WAIT_S
            if self._in_flight:
                overdue = now - self._call_started - self._deadline
                if overdue >= 0 and not self._status.stale:
                    since = self._wall() - (now - self._call_started)
                    self._status = replace(self._status, state="stale", stale=True, stale_since=since,
                                           last_error=f"no answer for {now - self._call_started:.1f} s "
                                                      f"(deadline {self._deadline:g} s)")
                    went_stale = True
                wait = MAX_WAIT_S if overdue >= 0 else min(MAX_WAIT_S, -overdue)
            elif self._paused:
                wait = MAX_WAIT_S
            elif now >= self._next_due:
                self._in_flight = True
                self._call_started = now
                # Keep the cadence; when late (a slow call, a pause) start afresh from now.
                self._next_due += self._period
                if self._next_due <= now:
                    self._next_due = now + self._period
                self._request.set()
                wait = min(MAX_WAIT_S, self._deadline, self._period)
            else:
                wait = min(MAX_WAIT_S, self._next_due - now)
        if went_stale:
            log.warning("%s has not answered for %.1f s: values marked stale", self.backend.name, self._deadline)
            self._emit_status()
        return max(0.0, wait)

    def _schedule(self) -> None:
        while not self._stop.is_set():
            try:
                wait = self.tick()
            except Exception:  # a bug here must not kill sampling silently
                log.exception("sampler scheduling step failed")
                wait = MAX_WAIT_S
            self._wake.wait(wait)
            self._wake.clear()

    # -- calls ---------------------------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            self._request.wait()
            self._request.clear()
            if self._stop.is_set():
                return
            self._call_once()

    def _call_once(self) -> None:
        started = self._clock()
        snapshot: Snapshot | None = None
        error: str | None = None
        try:
            snapshot = self.backend.sample()
        except BackendError as exc:
            error = str(exc) or type(exc).__name__
        except Exception as exc:  # a backend bug must not end sampling
            log.exception("%s sample failed", self.backend.name)
            error = f"{type(exc).__name__}: {exc}"
        duration = self._clock() - started
        with self._idle:
            self._in_flight = False
            status = self._status
            if status.stale:
                log.info("%s answered again after %.1f s", self.backend.name, duration)
            if snapshot is not None:
                self._last_snapshot = snapshot
                self._status = replace(status, state=self._state(stale=False), stale=False, stale_since=None,
                                       last_sample_at=self._wall(), last_error=None, last_duration_s=duration,
                                       samples=status.samples + 1)
            else:
                # The values on screen are now older than they claim: mark them stale too.
                since = status.stale_since if status.stale_since is not None else self._wall() - duration
                self._status = replace(status, state=self._state(stale=True), stale=True, stale_since=since,
                                       last_error=error, last_duration_s=duration, errors=status.errors + 1)
            self._idle.notify_all()
        self._wake.set()
        if self._stop.is_set():
            return
        if snapshot is not None:
            try:
                self._on_snapshot(snapshot)
            except Exception:
                log.exception("snapshot callback failed")
        self._emit_status()

    def _state(self, stale: bool) -> str:
        """The state word for the status bar (call with the lock held)."""
        if self._stop.is_set():
            return "stopped"
        if not self._started:
            return "idle"
        if stale:
            return "stale"
        return "paused" if self._paused else "running"

    def _emit_status(self) -> None:
        if self._on_status is None:
            return
        try:
            self._on_status(self.status)
        except Exception:
            log.exception("status callback failed")
