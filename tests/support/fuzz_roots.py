"""Fuzzing host roots file by file (issue 11, item 3): every sysfs/procfs file the readers use, made hostile.

A *case* is one file of a real-dump root replaced by one *kind* of bad content (empty, binary garbage,
10 MB, 2^70, 5000 digits, NaN, inf, negative, every number in the file 5000 digits long, a folder, a
FIFO, a symlink loop, unreadable, vanished between listing and reading). The case then runs what
``rocmdesk sample --root``, ``diagnose --root`` and ``report --root`` run (their ``run`` functions,
in-process), plus the sysfs backend's process scan, and says what went wrong: an exception, a logged
traceback (a check or the report that swallowed one), a case that took too long or hung (a watchdog
interrupts it), a reading that changed to a number the file did not hold instead of becoming N/A with
a reason.

Which files: every regular file under ``sys/`` and ``proc/`` that a baseline run of the three commands
opens (an audit hook sees every ``open``), on roots built from the LACT dumps (tests/data/lact-sysfs)
and the hand-built Instinct dump, with the attributes the readers know of that the dumps lack planted.
Everything random is seeded; the file list and the kinds are fixed, so a run is the same every time.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import random
import re
import shutil
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rocmdesk.exporter.metrics import SamplingState
from rocmdesk.exporter.service import render
from rocmdesk.fixes.tuning_state import read_tuning_state
from rocmdesk.host import HostRoot
from rocmdesk.telemetry.backends.sysfs import SysfsBackend
from tests.support import scenarios
from tests.support.gpu_metrics_tables import mi300x_table
from tests.support.instinct import instinct_specs
from tests.support.sysfs_tree import GpuSpec, KfdUse, add_kfd_process, build_root, kfd_gpu_ids

SEED = 20261203
HUGE_BYTES = 10 << 20
CASE_TIMEOUT_S = 5.0  # the watchdog interrupts a case after this long (a blocking open of a FIFO)
SLOW_CASE_S = 3.0  # a case slower than this is reported, even if it finished

TWO_POW_70 = str(2 ** 70)  # 1180591620717411303424
KINDS = ("empty", "binary", "huge", "pow70", "digits5000", "nan", "inf", "negative", "long_fields", "directory",
         "fifo", "symlink_loop", "unreadable", "vanished")

# The attribute names the readers open (rocmdesk/telemetry/backends/sysfs.py build_plan and _read_extras,
# discovery.py, ras.py, gpu_metrics.py, pcie.py, kfd_procs.py, fdinfo.py, proc_scan.py, accounts.py), as
# basename patterns: the fuzz roots must make the readers open each of them (test_fuzz_covers_the_readers).
CODE_FILES = (
    # device folder (discovery.py, sysfs.py)
    "vendor", "device", "revision", "subsystem_vendor", "subsystem_device", "uevent", "vbios_version",
    "unique_id", "mem_info_vram_total", "mem_info_vram_used", "mem_info_gtt_total", "mem_info_gtt_used",
    "gpu_busy_percent", "mem_busy_percent", "pp_dpm_sclk", "pp_dpm_mclk", "power_dpm_force_performance_level",
    "pp_power_profile_mode", "gpu_metrics", "current_link_speed", "current_link_width", "max_link_speed",
    "max_link_width", "current_compute_partition", "current_memory_partition",
    # ras.py
    "umc_err_count", "gpu_vram_bad_pages",
    # hwmon (sysfs.py)
    "name", "temp*_input", "temp*_label", "temp*_crit", "temp*_emergency", "power1_input", "power1_average",
    "power1_cap", "power1_cap_min", "power1_cap_max", "power1_cap_default", "freq*_input", "freq*_label",
    "fan1_input", "pwm1", "pwm1_max", "in*_input", "in*_label",
    # KFD topology and per-process folders (discovery.py, kfd_procs.py)
    "properties", "gpu_id", "pasid", "vram_*", "sdma_*", "cu_occupancy", "gpuid",
    # /proc (fdinfo.py, proc_scan.py, accounts.py, discovery.py)
    "comm", "cmdline", "status", "osrelease",
)


# -- roots ------------------------------------------------------------------------------------------------

def _write(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)


def _fdinfo(pdev: str, client: int) -> str:
    """A DRM fdinfo file as amdgpu writes it (Documentation/gpu/drm-usage-stats.rst)."""
    return (f"pos:\t0\nflags:\t02100002\nmnt_id:\t26\ndrm-driver:\tamdgpu\ndrm-client-id:\t{client}\n"
            f"drm-pdev:\t{pdev}\npasid:\t32786\ndrm-memory-vram:\t1048576 KiB\ndrm-memory-gtt: \t2048 KiB\n"
            f"drm-memory-cpu: \t0 KiB\ndrm-engine-gfx:\t123456789 ns\ndrm-engine-compute:\t5000 ns\n")


def _gpu_process(root: Path, pid: int, comm: str, pdev: str) -> None:
    """A process holding the GPU's render node with fdinfo, and a KFD process folder using it."""
    base = root / "proc" / str(pid)
    _write(base / "comm", comm + "\n")
    _write(base / "cmdline", f"/usr/bin/{comm}\0--serve\0".encode())
    _write(base / "status", scenarios.status_text(uid=1000, gid=1000, groups=[44, 992], name=comm))
    (base / "fd").mkdir(parents=True, exist_ok=True)
    _write(base / "fdinfo" / "7", _fdinfo(pdev, 7))
    os.symlink("/dev/dri/renderD128", base / "fd" / "7")
    os.symlink("/dev/kfd", base / "fd" / "8")
    _write(base / "fdinfo" / "8", "pos:\t0\nflags:\t02\nmnt_id:\t26\n")
    uses = {gpu_id: KfdUse(vram=3 << 30, sdma=1500, cu=12, queues=1) for gpu_id in kfd_gpu_ids(root).values()}
    add_kfd_process(root, pid, uses)


def workstation_root(tmp: Path) -> Path:
    """The diagnosis' clean workstation (RX 7900 XTX dump) with ComfyUI and a GPU process running, plus the
    device attributes the LACT dump lacks (mem_info_*, unique_id, PCIe maxima), so every reader runs."""
    root = scenarios.clean_workstation(tmp)
    scenarios.comfyui_process(root)
    device = root / "sys" / "bus" / "pci" / "devices" / scenarios.GPU_PCI
    for name, text in {"mem_info_vram_total": f"{24 << 30}\n", "mem_info_vram_used": f"{5 << 30}\n",
                       "mem_info_gtt_total": f"{32 << 30}\n", "mem_info_gtt_used": f"{1 << 30}\n",
                       "mem_busy_percent": "12\n", "unique_id": "5a17c0de0000f00d\n", "revision": "0xc8\n",
                       "subsystem_vendor": "0x1002\n", "subsystem_device": "0x0e3b\n",
                       "max_link_speed": "32.0 GT/s PCIe\n", "max_link_width": "16\n"}.items():
        if not (device / name).exists():
            _write(device / name, text)
    _gpu_process(root, 4242, "llama-server", scenarios.GPU_PCI)
    return root


def instinct_root(tmp: Path) -> Path:
    """One MI300X (hand-built dump) with a gpu_metrics table, RAS counters, partition modes and a process."""
    root = tmp
    root.mkdir(parents=True, exist_ok=True)
    specs = instinct_specs(tmp / "dumps", "mi300x", 1)
    build_root(root / "r", specs)
    shutil.rmtree(tmp / "dumps")
    root = root / "r"
    pci = specs[0].pci
    assert pci is not None
    device = root / "sys" / "bus" / "pci" / "devices" / pci
    _write(device / "gpu_metrics", mi300x_table())
    _write(device / "ras" / "umc_err_count", "ue: 0\nce: 3\n")
    _write(device / "ras" / "gfx_err_count", "ue: 0\nce: 0\n")
    _write(device / "ras" / "gpu_vram_bad_pages", "0x00000001 : 0x00001000 : R\n0x00000002 : 0x00001000 : P\n")
    _write(device / "current_compute_partition", "SPX\n")
    _write(device / "current_memory_partition", "NPS1\n")
    _write(device / "current_link_speed", "32.0 GT/s PCIe\n")
    _write(device / "current_link_width", "16\n")
    _write(device / "max_link_speed", "32.0 GT/s PCIe\n")
    _write(device / "max_link_width", "16\n")
    _write(root / "proc" / "sys" / "kernel" / "osrelease", "6.8.0-51-generic\n")
    _gpu_process(root, 777, "python3", pci)
    return root


def apu_and_radeon_root(tmp: Path) -> Path:
    """A Steam Deck APU (Van Gogh: power1_input and power1_average, a vddnb rail, its own KFD dump) beside an
    HD 7870 on the old radeon driver (a hwmon without labels, no amdgpu files), from the LACT dumps."""
    root = build_root(tmp, [GpuSpec("vangogh", pci="0000:04:00.0", card=0), GpuSpec("hd7870", card=1)])
    _write(root / "proc" / "sys" / "kernel" / "osrelease", "6.8.0-51-generic\n")
    _gpu_process(root, 3131, "steam", "0000:04:00.0")
    return root


ROOTS: dict[str, Callable[[Path], Path]] = {"workstation": workstation_root, "instinct": instinct_root,
                                            "apu_radeon": apu_and_radeon_root}


# -- running the commands -------------------------------------------------------------------------------

class CaseTimeout(BaseException):
    """Raised in the main thread by the watchdog when a case runs past CASE_TIMEOUT_S. A BaseException, so
    the product's own ``except Exception`` (diagnose, report) cannot swallow it and block again."""


@contextlib.contextmanager
def watchdog(seconds: float) -> Iterator[None]:
    """Interrupt the main thread after ``seconds``: a blocking open() or read() gets EINTR and the handler
    raises CaseTimeout (PEP 475 retries a system call only when the handler returns). SIGUSR1, not SIGALRM,
    so pytest-timeout's own alarm is left alone."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_signal(signum, frame):
        raise CaseTimeout(f"still running after {seconds:g} s")

    previous = signal.signal(signal.SIGUSR1, on_signal)
    main = threading.main_thread().ident
    assert main is not None
    timer = threading.Timer(seconds, signal.pthread_kill, (main, signal.SIGUSR1))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, previous)


class _Tracebacks(logging.Handler):
    """Collects log records that carry a traceback or are errors: a swallowed crash is still a crash."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or record.levelno >= logging.ERROR:
            exc = record.exc_info[1] if record.exc_info else None
            self.records.append(f"{record.name}: {record.getMessage()}"
                                + (f" ({type(exc).__name__}: {exc})" if exc else ""))


@contextlib.contextmanager
def logged_tracebacks() -> Iterator[list[str]]:
    handler = _Tracebacks()
    logger = logging.getLogger("rocmdesk")
    logger.addHandler(handler)
    try:
        yield handler.records
    finally:
        logger.removeHandler(handler)


@dataclass
class RunResult:
    """What one run of the commands over a root produced."""

    samples: dict[str, dict] = field(default_factory=dict)  # pci -> flattened sample readings
    unavailable: dict[str, dict[str, str]] = field(default_factory=dict)  # pci -> key -> reason
    sample_exit: int | None = None
    diagnose_exit: int | None = None
    check_errors: list[str] = field(default_factory=list)  # checks that ended in ERROR (a crash inside)
    processes: int = 0
    sources: dict[str, dict[str, str]] = field(default_factory=dict)  # pci -> key -> backend that supplied it
    series: dict[str, float] = field(default_factory=dict)  # the exporter's series -> value
    problems: list[str] = field(default_factory=list)


def flatten(value, prefix: str = "") -> dict[str, object]:
    """{"pcie": {"width": 16}} -> {"pcie.width": 16}; lists are kept whole."""
    out: dict[str, object] = {}
    if isinstance(value, dict):
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}{key}."))
    else:
        out[prefix[:-1]] = value
    return out


_IDENTITY = ("card", "pci", "name", "gfx_target")


def run_commands(root: Path, *, sample: bool = True, diagnosis: bool = True,
                 report: tuple[str, ...] = ("md", "html"), before: Callable[[], None] | None = None) -> RunResult:
    """``rocmdesk sample --root R --backend sysfs [--json]``, the backend's process scan, ``rocmdesk diagnose
    --root R --json`` and ``rocmdesk report --root R -o -`` (in each of the ``report`` formats), in-process."""
    from rocmdesk.commands import diagnose as diagnose_cmd
    from rocmdesk.commands import report as report_cmd
    from rocmdesk.commands import sample as sample_cmd

    result = RunResult()
    host_root = HostRoot(root)

    def step(name: str, fn: Callable[[], None]) -> None:
        if before is not None:
            before()  # each command sees the case afresh (a vanished file is listed again, then gone)
        try:
            fn()
        except CaseTimeout:
            raise
        except BaseException as exc:
            result.problems.append(f"{name}: {type(exc).__name__}: {exc}")

    def sample_json() -> None:
        out, err = io.StringIO(), io.StringIO()
        args = argparse.Namespace(root=str(root), backend="sysfs", recording=None, json=True, watch=None, count=None)
        result.sample_exit = sample_cmd.run(args, out, err)
        for line in out.getvalue().splitlines():
            for gpu in json.loads(line)["gpus"]:
                unavailable = gpu.pop("unavailable")
                result.unavailable[gpu["pci"]] = unavailable
                result.samples[gpu["pci"]] = {k: v for k, v in flatten(gpu).items() if k not in _IDENTITY}

    def table_and_processes() -> None:
        backend = SysfsBackend(host_root)
        backend.discover()
        backend.sample()
        snapshot = backend.sample()
        sample_cmd.format_table(snapshot)  # what `rocmdesk sample` prints without --json
        for gpu in snapshot.gpus:
            result.sources[gpu.info.pci] = dict(gpu.source)
        for gpu in snapshot.gpus:  # what the Tuning tab and `rocmdesk fix` read of each GPU's controls
            read_tuning_state(host_root, gpu.info.pci)
        # what `rocmdesk exporter --root R` serves for this sample (the diagnosis has its own step)
        state = SamplingState(snapshot=snapshot, seen={g.info.pci: g.info for g in snapshot.gpus}, samples=1)
        for line in render(state, None).decode().split("\n"):  # the text format's only line break
            if line and not line.startswith("#"):
                series, _, value = line.rpartition(" ")
                result.series[series] = float(value)
        result.processes = len(backend.processes())
        result.processes = len(backend.processes())  # the second scan computes rates from the first

    def diagnose() -> None:
        out = io.StringIO()
        args = argparse.Namespace(root=str(root), snapshot=None, python_envs=[], json=True)
        result.diagnose_exit = diagnose_cmd.run(args, out, io.StringIO())
        if result.diagnose_exit == 2:
            result.problems.append("diagnose: exit 2 (could not run)")
            return
        for check in json.loads(out.getvalue())["checks"]:
            if check.get("status") == "error":
                result.check_errors.append(f"{check['id']}: {check.get('reason')}")

    def report_in(fmt: str) -> Callable[[], None]:
        def run() -> None:
            out = io.StringIO()
            args = argparse.Namespace(root=str(root), snapshot=None, history=None, python_envs=[], format=fmt,
                                      output="-")
            code = report_cmd.run(args, out, io.StringIO())
            if code != 0:
                result.problems.append(f"report {fmt}: exit {code}")
            if "Traceback (most recent call last)" in out.getvalue():
                result.problems.append(f"report {fmt}: a traceback in the report")
        return run

    with logged_tracebacks() as records:
        if sample:
            step("sample --json", sample_json)
            step("sample table, processes", table_and_processes)
        if diagnosis:
            step("diagnose", diagnose)
        for fmt in report:
            step(f"report {fmt}", report_in(fmt))
    result.problems.extend(f"logged: {r}" for r in records)
    return result


# -- tracing which files are read ------------------------------------------------------------------------

class _Trace:
    """Paths opened and folders listed while ``active`` (a process-wide audit hook cannot be removed, so it
    is installed once and switched on and off)."""

    active: set[str] | None = None
    installed = False

    @classmethod
    def hook(cls, event: str, args: tuple) -> None:
        if cls.active is None or event not in ("open", "os.listdir", "os.scandir"):
            return
        path = args[0] if args else None
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if isinstance(path, str):
            cls.active.add(("L:" if event != "open" else "O:") + os.path.abspath(path))


@contextlib.contextmanager
def traced() -> Iterator[set[str]]:
    if not _Trace.installed:
        sys.addaudithook(_Trace.hook)
        _Trace.installed = True
    seen: set[str] = set()
    _Trace.active = seen
    try:
        yield seen
    finally:
        _Trace.active = None


@dataclass
class Target:
    """One file to fuzz: its path in the root and which commands read it."""

    path: Path  # absolute, a regular file (symlinks resolved)
    rel: str  # relative to the root, for messages
    read_by_diagnosis: bool  # the diagnosis or the report opened it
    listed_by_diagnosis: bool  # ... or listed its folder (a folder or FIFO in its place may change what they do)

    def needs_diagnosis(self, kind: str) -> bool:
        """Whether the case must run diagnose and report too: a content the diagnosis never opens cannot
        change it; a file of another type in a folder it lists might."""
        return self.read_by_diagnosis or (self.listed_by_diagnosis and kind in TYPE_KINDS)


TYPE_KINDS = ("directory", "fifo", "symlink_loop", "unreadable", "vanished")


def fuzz_targets(root: Path) -> tuple[list[Target], RunResult]:
    """The regular files under sys/ and proc/ that a baseline run opens, and that run's result."""
    root = root.resolve()
    with traced() as sample_seen:
        run_commands(root, diagnosis=False, report=())
    with traced() as diag_seen:
        run_commands(root, sample=False)
    baseline = run_commands(root)
    opened = {p[2:] for p in sample_seen | diag_seen if p.startswith("O:")}
    listed_by_diag = {p[2:] for p in diag_seen if p.startswith("L:")}
    opened_by_diag = {p[2:] for p in diag_seen if p.startswith("O:")}
    targets: dict[str, Target] = {}
    for path in sorted(opened):
        real = os.path.realpath(path)
        rel = os.path.relpath(real, root)
        if rel.startswith("..") or rel.split("/")[0] not in ("sys", "proc"):
            continue
        if not os.path.isfile(real) or os.path.islink(real) or rel in targets:
            continue
        read = real in opened_by_diag or path in opened_by_diag
        listed = os.path.dirname(real) in listed_by_diag or os.path.dirname(path) in listed_by_diag
        targets[rel] = Target(Path(real), rel, read, listed)
    return list(targets.values()), baseline


def diagnosis_inputs(root: Path) -> list[Target]:
    """The files outside sys/ and proc/ that diagnose and report open (/etc, logs, package metadata, a
    ComfyUI's requirements, the initramfs image): not telemetry, but read by the same kind of code."""
    root = root.resolve()
    with traced() as seen:
        run_commands(root, sample=False)
    out: dict[str, Target] = {}
    for entry in sorted(seen):
        if not entry.startswith("O:"):
            continue
        real = os.path.realpath(entry[2:])
        rel = os.path.relpath(real, root)
        if rel.startswith("..") or rel.split("/")[0] in ("sys", "proc") or rel in out:
            continue
        if os.path.isfile(real) and not os.path.islink(real):
            out[rel] = Target(Path(real), rel, True, True)
    return list(out.values())


# -- mutations -----------------------------------------------------------------------------------------

def _content(kind: str, original: bytes, rng: random.Random) -> bytes | None:
    if kind == "empty":
        return b""
    if kind == "binary":
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 4096)))
    if kind == "huge":
        unit = original or b"1\n"
        return (unit * (HUGE_BYTES // len(unit) + 1))[:HUGE_BYTES]
    if kind == "long_fields":  # the file's own layout, every number in it 5000 digits long ("Uid: 999…")
        return re.sub(rb"[0-9]+", b"9" * 5000, original) if re.search(rb"[0-9]", original) else b"9" * 5000
    return {"pow70": f"{TWO_POW_70}\n", "digits5000": "9" * 5000 + "\n", "nan": "nan\n", "inf": "inf\n",
            "negative": "-12345\n"}.get(kind, "").encode() or None


def can_deny_reads() -> tuple[bool, str]:
    """Whether ``unreadable`` can be made real here: chmod 000 for a normal user; as root (which chmod does not
    stop) by running the case with the effective uid of ``nobody``, which needs CAP_SETUID."""
    if os.geteuid() != 0:
        return True, ""
    try:
        os.seteuid(65534)
        os.seteuid(0)
    except OSError as exc:
        return False, f"running as root without CAP_SETUID ({exc.strerror}): chmod 000 does not deny root"
    return True, ""


@contextlib.contextmanager
def as_nobody(enabled: bool) -> Iterator[None]:
    """Drop the effective uid to nobody (root only) so a mode-000 file is really unreadable; always restored."""
    if not enabled or os.geteuid() != 0:
        yield
        return
    os.setegid(65534)
    os.seteuid(65534)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)


@contextlib.contextmanager
def vanish_after_listing(target: Path) -> Iterator[None]:
    """The file is listed with its folder, then removed before anything reads it: os.listdir/os.scandir of
    its folder return the name and the file is unlinked right after (every later listing lacks it)."""
    folder = os.path.realpath(target.parent)
    real_listdir, real_scandir = os.listdir, os.scandir

    def gone() -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(target)

    def is_folder(path) -> bool:
        try:
            return os.path.realpath(os.fspath(path)) == folder
        except TypeError:
            return False

    def listdir(path="."):
        names = real_listdir(path)
        if is_folder(path):
            gone()
        return names

    class _Entries:
        def __init__(self, entries):
            self._it = iter(entries)

        def __iter__(self):
            return self

        def __next__(self):
            return next(self._it)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def close(self):
            pass

    def scandir(path="."):
        with real_scandir(path) as it:
            entries = list(it)
        if is_folder(path):
            gone()
        return _Entries(entries)

    os.listdir, os.scandir = listdir, scandir
    try:
        yield
    finally:
        os.listdir, os.scandir = real_listdir, real_scandir


@contextlib.contextmanager
def mutated(target: Path, kind: str, rng: random.Random) -> Iterator[Callable[[], None] | None]:
    """``target`` replaced by ``kind`` for the duration; the original file (bytes and mode) put back after.
    Yields what to call before each command (for ``vanished``: put the file back, to be listed and lost again)."""
    original = target.read_bytes()
    mode = stat.S_IMODE(target.stat().st_mode)
    target.unlink()
    try:
        data = _content(kind, original, rng)
        if data is not None:
            target.write_bytes(data)
        elif kind == "directory":
            target.mkdir()
            (target / "value").write_bytes(original)
        elif kind == "fifo":
            os.mkfifo(target)
        elif kind == "symlink_loop":
            os.symlink(target.name, target)
        elif kind == "unreadable":
            target.write_bytes(original)
            os.chmod(target, 0)
        elif kind == "vanished":
            target.write_bytes(original)
        else:
            raise ValueError(kind)
        if kind == "vanished":
            def again() -> None:
                if not target.exists():
                    target.write_bytes(original)
            with vanish_after_listing(target):
                yield again
        else:
            with as_nobody(kind == "unreadable"):
                yield None
    finally:
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()
        target.write_bytes(original)
        os.chmod(target, mode)


# -- judging a case --------------------------------------------------------------------------------------

def _reason_keys(key: str) -> list[str]:
    """The keys of ``unavailable`` that may explain ``key``: itself and its prefixes ("pcie" for
    "pcie.width"), a RAS block's own key ("ras.umc" for "ras.blocks.umc.ce"), and a sensor's for its
    limits ("temperature_c.edge" for "temperature_crit_c.edge": no sensor, no limit)."""
    parts = key.split(".")
    keys = [".".join(parts[:n]) for n in range(len(parts), 0, -1)]
    if parts[:2] == ["ras", "blocks"] and len(parts) > 2:
        keys.append(f"ras.{parts[2]}")
    if parts[0] in ("temperature_crit_c", "temperature_emergency_c") and len(parts) > 1:
        keys.append("temperature_c." + ".".join(parts[1:]))
    return keys


def _has_reason(unavailable: dict[str, str], key: str) -> bool:
    return any(unavailable.get(k) for k in _reason_keys(key))


# Exporter series for which 0 is a state, not a reading: a GPU no longer found, the sampler's own gauges.
EXPORTER_ZERO_OK = ("rocmdesk_gpu_present", "rocmdesk_gpus", "rocmdesk_sampler_", "rocmdesk_up")


# Files whose empty content is a true value, not garbage: the kernel prints nothing for an empty table
# (drivers/gpu/drm/amd/amdgpu/amdgpu_ras.c, amdgpu_ras_sysfs_badpages_read: one line per bad page).
EMPTY_IS_A_VALUE = ("gpu_vram_bad_pages",)


def compare(baseline: RunResult, case: RunResult, kind: str, target_name: str = "") -> list[str]:
    """Readings that changed must be N/A with a reason, never another number (a negative file may give its
    own negative value); a GPU that is no longer found is fine (the file said what it was)."""
    problems: list[str] = []
    if kind == "empty" and target_name in EMPTY_IS_A_VALUE:
        return problems
    for series, value in sorted(case.series.items()):
        # an N/A reading is absent from the exporter, never 0 (README, "Many machines: Prometheus")
        if value == 0 and baseline.series.get(series, 0) != 0 and not series.startswith(EXPORTER_ZERO_OK):
            problems.append(f"exporter: {series} {baseline.series[series]:g} -> 0")
    known = {repr(v) for sample in baseline.samples.values() for v in sample.values()}
    for pci, readings in case.samples.items():
        # values under a key the baseline did not have: a reading renamed by its label file ("nan" for junction)
        renamed = {repr(v) for k, v in readings.items()
                   if v is not None and baseline.samples.get(pci, {}).get(k) is None}
        before = baseline.samples.get(pci)
        if before is None:
            problems.append(f"a GPU {pci} appeared")
            continue
        unavailable = case.unavailable.get(pci, {})
        sources, sources_before = case.sources.get(pci, {}), baseline.sources.get(pci, {})
        for key in sorted(set(before) | set(readings)):
            old, new = before.get(key), readings.get(key)
            if new == old or (new in ({}, []) and old in (None, {}, [])):
                continue
            if new is None or new == {} or new == []:
                # a label file names the reading: a word there ("nan") makes it another sensor, not an N/A one
                relabelled = target_name.endswith("_label") and kind in ("nan", "inf")
                if not _has_reason(unavailable, key) and repr(old) not in renamed and not relabelled:
                    problems.append(f"{pci} {key}: {old!r} -> None without a reason")
            elif sources.get(key) != sources_before.get(key):
                continue  # read from another source instead (gpu_metrics for an unreadable hwmon sensor)
            elif kind == "negative" and isinstance(new, int | float) and new < 0:
                continue  # a signed reading (a temperature) of the file's own negative value
            elif old is None and repr(new) in known:
                continue  # moved under another name (a garbage label: temp1 instead of edge)
            elif isinstance(new, bool) or isinstance(old, bool):
                problems.append(f"{pci} {key}: {old!r} -> {new!r}")
            else:
                problems.append(f"{pci} {key}: {old!r} -> {new!r} (not N/A)")
    return problems


@dataclass
class CaseReport:
    target: str
    kind: str
    seconds: float
    problems: list[str]
    skipped: bool = False  # the kind does not apply to this file (long_fields of a binary table)


def is_binary(data: bytes) -> bool:
    """A binary file (gpu_metrics, pp_table): its numbers are not digits, so long_fields has nothing to stretch."""
    if b"\x00" in data:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def run_case(root: Path, target: Target, kind: str, baseline: RunResult, rng: random.Random) -> CaseReport:
    start = time.perf_counter()
    problems: list[str] = []
    if kind == "long_fields" and is_binary(target.path.read_bytes()):
        return CaseReport(target.rel, kind, 0.0, [], skipped=True)
    try:
        with watchdog(CASE_TIMEOUT_S), mutated(target.path, kind, rng) as before:
            # the diagnosis engine runs once a case, through one of the three commands that run it (seeded):
            # `diagnose --json`, `report -o x.md` or `report -o x.html`; each file meets all three over the kinds
            command = rng.choice(("diagnose", "md", "html")) if target.needs_diagnosis(kind) else None
            result = run_commands(root, diagnosis=command == "diagnose",
                                  report=(command,) if command in ("md", "html") else (), before=before)
        problems += result.problems
        problems += [f"check crashed: {c}" for c in result.check_errors]
        problems += compare(baseline, result, kind, target.path.name)
    except CaseTimeout as exc:
        problems.append(f"hung: {exc}")
    seconds = time.perf_counter() - start
    if seconds > SLOW_CASE_S:
        problems.append(f"slow: {seconds:.1f} s")
    return CaseReport(target.rel, kind, seconds, problems)


def scratch_dir() -> str | None:
    """Where to build the roots: /dev/shm (tmpfs) when there is one, so the ~1.5 GB a run writes (a 10 MB file
    per file fuzzed) never reaches a disk; else the default temporary folder."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None
