"""Every sysfs/procfs file the readers use, made hostile, through sample, diagnose and report (issue 11, item 3).

For each root (tests/support/fuzz_roots.py) and each kind of bad content, every file the baseline run
opens is replaced in turn; ``rocmdesk sample/diagnose/report --root`` (their run functions) must not
raise, log a traceback, end a check in ERROR, hang or slow down, and a reading fed by the file must
become N/A with a reason, never another number. Seeded and bounded: the same 2678 cases every run,
each under a watchdog, in well under a minute.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import random
import shutil
import stat
import tempfile
import time
from pathlib import Path

import pytest

from rocmdesk.telemetry import parsers
from tests.support import fuzz_roots as fz

_BUILT: dict[str, tuple[Path, list[fz.Target], fz.RunResult]] = {}


@pytest.fixture(scope="module")
def fuzzed():
    """Roots built once, in a folder ``nobody`` may enter (the ``unreadable`` kind drops to it as root)."""
    folder = Path(tempfile.mkdtemp(prefix="rocmdesk-fuzz-", dir=fz.scratch_dir()))
    os.chmod(folder, 0o755)

    def get(name: str) -> tuple[Path, list[fz.Target], fz.RunResult]:
        if name not in _BUILT:
            root = fz.ROOTS[name](folder / name)
            targets, baseline = fz.fuzz_targets(root)
            assert baseline.problems == [] and baseline.check_errors == [], baseline.problems
            assert baseline.sample_exit == 0 and baseline.processes >= 1
            _BUILT[name] = (root, targets, baseline)
        return _BUILT[name]

    yield get
    _BUILT.clear()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", fz.KINDS)
@pytest.mark.parametrize("root_name", list(fz.ROOTS))
def test_no_file_breaks_sample_diagnose_or_report(fuzzed, root_name, kind, capsys):
    if kind == "unreadable":
        possible, why = fz.can_deny_reads()
        if not possible:
            pytest.skip(why)
    root, targets, baseline = fuzzed(root_name)
    start = time.perf_counter()
    failures = []
    skipped = 0
    for target in targets:
        rng = random.Random(f"{fz.SEED}:{root_name}:{target.rel}:{kind}")
        report = fz.run_case(root, target, kind, baseline, rng)
        failures += [f"{target.rel}: {p}" for p in report.problems]
        skipped += report.skipped
    seconds = time.perf_counter() - start
    with capsys.disabled():
        print(f"\nfuzz {root_name}/{kind}: {len(targets) - skipped} cases ({skipped} binary files n/a), "
              f"{len(failures)} problems, {seconds:.1f} s")
    assert not failures, "\n".join(failures[:40])


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", fz.KINDS)
def test_no_diagnosis_input_breaks_it(fuzzed, kind, capsys):
    """The other files diagnose and report read (/etc, kern.log, dpkg status, ROCm's version file, a ComfyUI's
    requirements and torch METADATA, the initramfs image), each made every kind: long_fields found
    gpu-not-supported-by-rocm raising on /opt/rocm/.info/version and small-bar on a kern.log BAR line, fifo a
    diagnosis blocked for good on a FIFO in place of torch's METADATA (a plain open())."""
    root, _, baseline = fuzzed("workstation")
    targets = fz.diagnosis_inputs(root)
    assert len(targets) >= 20
    if kind == "unreadable" and not fz.can_deny_reads()[0]:
        pytest.skip(fz.can_deny_reads()[1])
    start = time.perf_counter()
    failures = []
    for target in targets:
        report = fz.run_case(root, target, kind, baseline, random.Random(f"{fz.SEED}:{target.rel}:{kind}"))
        failures += [f"{target.rel}: {p}" for p in report.problems]
    with capsys.disabled():
        print(f"\nfuzz diagnosis inputs/{kind}: {len(targets)} cases, {len(failures)} problems, "
              f"{time.perf_counter() - start:.1f} s")
    assert not failures, "\n".join(failures[:40])


def test_fuzz_covers_the_readers(fuzzed):
    """Every attribute the readers open (CODE_FILES, from the code) is among the fuzzed files of some root,
    and the roots' files are many: a reader whose file the roots lack would go unfuzzed."""
    names = {t.path.name for name in fz.ROOTS for t in fuzzed(name)[1]}
    uncovered = [pattern for pattern in fz.CODE_FILES if not fnmatch.filter(names, pattern)]
    assert not uncovered, f"no fuzz root makes the readers open {uncovered}"
    assert all(len(fuzzed(name)[1]) >= 40 for name in fz.ROOTS)


def test_each_kind_really_breaks_the_file(fuzzed):
    """The harness itself: each kind leaves the file in the state it names while a case runs."""
    _, targets, _ = fuzzed("workstation")
    target = next(t for t in targets if t.path.name == "temp1_input")
    rng = random.Random(fz.SEED)

    def open_error() -> int | None:
        try:
            os.close(os.open(target.path, os.O_RDONLY | os.O_NONBLOCK))
        except OSError as exc:
            return exc.errno
        return None

    checks = {
        "empty": lambda: target.path.stat().st_size == 0,
        "binary": lambda: target.path.stat().st_size > 0,
        "huge": lambda: target.path.stat().st_size == fz.HUGE_BYTES,
        "pow70": lambda: target.path.read_text().strip() == "1180591620717411303424",
        "digits5000": lambda: len(target.path.read_text().strip()) == 5000,
        "nan": lambda: target.path.read_text() == "nan\n",
        "inf": lambda: target.path.read_text() == "inf\n",
        "negative": lambda: target.path.read_text() == "-12345\n",
        "long_fields": lambda: target.path.read_text() == "9" * 5000 + "\n",
        "directory": lambda: target.path.is_dir(),
        "fifo": lambda: stat.S_ISFIFO(os.lstat(target.path).st_mode),
        "symlink_loop": lambda: open_error() == errno.ELOOP,
        "unreadable": lambda: open_error() == errno.EACCES,
    }
    original = target.path.read_bytes()
    for kind, check in checks.items():
        if kind == "unreadable" and not fz.can_deny_reads()[0]:
            continue
        with fz.mutated(target.path, kind, rng):
            assert check(), kind
        assert target.path.read_bytes() == original, f"{kind} was not undone"
    with fz.mutated(target.path, "vanished", rng) as again:
        assert target.path.name in os.listdir(target.path.parent)  # listed...
        assert not target.path.exists()  # ...and gone before it is read
        again()
        assert target.path.exists()
    assert target.path.read_bytes() == original


def test_the_harness_catches_a_fake_zero_and_a_crash(fuzzed, monkeypatch):
    """A parser that turned garbage into 0, or raised a plain ValueError, would be reported: the fuzz can fail."""
    root, targets, baseline = fuzzed("workstation")
    target = next(t for t in targets if t.path.name == "gpu_busy_percent")
    real = parsers.percent

    def zero_for_garbage(text: str) -> int:
        try:
            return real(text)
        except parsers.ValueProblem:
            return 0

    monkeypatch.setattr(parsers, "percent", zero_for_garbage)
    fake = fz.run_case(root, target, "empty", baseline, random.Random(1))
    assert any("gpu_busy_percent: 5 -> 0 (not N/A)" in p or "-> 0 (not N/A)" in p for p in fake.problems), fake

    def crash(text: str) -> int:
        raise ValueError("Exceeds the limit (4300 digits) for integer string conversion")

    monkeypatch.setattr(parsers, "percent", crash)
    crashed = fz.run_case(root, target, "digits5000", baseline, random.Random(1))
    assert any("ValueError" in p for p in crashed.problems), crashed


def test_a_blocking_open_is_interrupted_by_the_watchdog(tmp_path):
    """A case that blocks (a plain open() of a FIFO with no writer) ends as CaseTimeout, not a hung suite."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    start = time.perf_counter()
    with pytest.raises(fz.CaseTimeout), fz.watchdog(0.3):
        open(fifo, "rb").close()  # blocks until the watchdog fires
    assert time.perf_counter() - start < 5


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["long_fields", "binary", "fifo", "directory", "symlink_loop"])
def test_capture_over_fuzzed_files(fuzzed, kind, tmp_path):
    """``rocmdesk capture --root`` over a seeded 15 of the files (sysfs, procfs and the diagnosis' other inputs,
    with /etc/group and the GPU's unique_id always among them: long_fields found int() raising in both)."""
    import argparse
    import io

    from rocmdesk.commands import capture

    root, targets, _ = fuzzed("workstation")
    pool = targets + fz.diagnosis_inputs(root)
    chosen = [t for t in pool if t.rel.endswith(("etc/group", "/unique_id"))]
    chosen += random.Random(f"{fz.SEED}:capture:{kind}").sample([t for t in pool if t not in chosen], 13)
    failures = []
    for target in chosen:
        if kind == "long_fields" and fz.is_binary(target.path.read_bytes()):
            continue
        err = io.StringIO()
        args = argparse.Namespace(root=str(root), output=str(tmp_path / "b.tar.gz"), minutes=10.0, record=0.0,
                                  history=None, python_envs=[], dry_run=False)
        try:
            with fz.watchdog(fz.CASE_TIMEOUT_S), fz.mutated(target.path, kind, random.Random(1)), \
                    fz.logged_tracebacks() as tracebacks:
                code = capture.run(args, io.StringIO(), err)
            failures += [f"{target.rel}: exit {code}: {err.getvalue()[:200]}"] if code else []
            failures += [f"{target.rel}: {t}" for t in tracebacks]
        except fz.CaseTimeout:
            failures.append(f"{target.rel}: hung")
        except Exception as exc:
            failures.append(f"{target.rel}: {type(exc).__name__}: {str(exc)[:160]}")
    assert not failures, "\n".join(failures)
