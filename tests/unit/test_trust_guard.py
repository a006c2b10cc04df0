"""Issue 10 item 1: nothing reaches pkexec, the helper or pip for a machine other than the live one at /."""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import pytest

from rocmdesk.diagnosis.runner import diagnose
from rocmdesk.diagnosis.target import (
    DiagnosisTarget,
    MachineIdentity,
    TargetKind,
    demo_target,
    live_target,
    read_identity,
    root_target,
    snapshot_target,
    target_for_view,
)
from rocmdesk.fixes import client, pip_fix
from rocmdesk.fixes.guard import NotThisMachine, require_live
from rocmdesk.host import HostRoot
from tests.support import scenarios as sc
from tests.support.no_process import ProcessStarted, no_process

ACTION = ("modprobe-unblacklist-amdgpu", "/etc/modprobe.d/blacklist-amdgpu.conf")


def _others(tmp_path: Path) -> dict[str, object]:
    folder = tmp_path / "customer"
    folder.mkdir(exist_ok=True)
    link = tmp_path / "link-to-customer"
    if not link.exists():
        os.symlink(folder, link)
    return {
        "root folder": root_target(str(folder)),
        "root folder through a link": root_target(str(link)),
        "snapshot": snapshot_target(HostRoot(str(folder)), "/tmp/b.tar.gz", 1.0),
        "demo over /": demo_target(HostRoot("/"), "rx7900xtx-comfyui"),
        "root kind at /": DiagnosisTarget(TargetKind.ROOT, "/"),
        "snapshot kind at /": DiagnosisTarget(TargetKind.SNAPSHOT, "/"),
        "live kind elsewhere": DiagnosisTarget(TargetKind.LIVE, str(folder)),
        "not a target": type("Fake", (), {"applicable": True, "kind": TargetKind.LIVE, "root": "/"})(),
        "None": None,
    }


class _Boom:
    """A runner that fails the test if anything asks it to run."""

    def run(self, *args, **kwargs):
        raise ProcessStarted(f"runner asked to run {args!r}")


def test_only_the_live_machine_at_root_is_applicable(tmp_path):
    assert live_target().applicable
    assert root_target("/").applicable and root_target("/").kind is TargetKind.LIVE
    for name, target in _others(tmp_path).items():
        assert not getattr(target, "applicable", False) or not isinstance(target, DiagnosisTarget), name
        with pytest.raises(NotThisMachine):
            require_live(target)


def test_every_entry_point_to_a_process_demands_a_target():
    for fn in (client.pkexec_argv, client.preview_argv, client.preview, pip_fix.PipRun.__init__,
               pip_fix.RollbackRun.__init__):
        param = inspect.signature(fn).parameters["target"]
        assert param.kind is inspect.Parameter.KEYWORD_ONLY and param.default is inspect.Parameter.empty, fn
    with pytest.raises(TypeError):
        client.pkexec_argv(ACTION)  # type: ignore[call-arg]


def test_no_process_for_any_other_machine(tmp_path, monkeypatch):
    env = tmp_path / "venv"
    (env / "bin").mkdir(parents=True)
    (env / "pyvenv.cfg").write_text("home = /usr/bin\n")
    python = env / "bin" / "python3"
    python.write_text("#!/bin/sh\nexit 0\n")
    python.chmod(0o755)
    plan = pip_fix.plan_pip_uninstall_pynvml(env)
    rollback = pip_fix.PipRollback(python, [pip_fix.RollbackStep(pip_fix.PYPI_INDEX, ("pynvml==11.5.0",))])
    with no_process(monkeypatch) as attempts:
        for target in _others(tmp_path).values():
            with pytest.raises(NotThisMachine):
                client.pkexec_argv(ACTION, target=target)
            with pytest.raises(NotThisMachine):
                client.preview_argv(ACTION, target=target)
            with pytest.raises(NotThisMachine):
                client.preview(ACTION, _Boom(), target=target)
            with pytest.raises(NotThisMachine):
                pip_fix.PipRun(plan, save_dir=tmp_path / "saved", target=target)
            with pytest.raises(NotThisMachine):
                pip_fix.RollbackRun(rollback, target=target)
        assert attempts == []
    assert not (tmp_path / "saved").exists()


def test_a_live_run_whose_target_is_swapped_stops_before_the_next_process(tmp_path, monkeypatch):
    env = tmp_path / "venv"
    (env / "bin").mkdir(parents=True)
    (env / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (env / "bin" / "python3").write_text("#!/bin/sh\nexit 0\n")
    (env / "bin" / "python3").chmod(0o755)
    run = pip_fix.PipRun(pip_fix.plan_pip_uninstall_pynvml(env), save_dir=tmp_path / "s", target=live_target())
    run.target = root_target(str(tmp_path))
    with no_process(monkeypatch) as attempts:
        with pytest.raises(NotThisMachine):
            run.run()
    assert attempts == []


def test_the_live_machine_still_gets_its_argv():
    argv = client.pkexec_argv(ACTION, target=live_target())
    assert argv[-2:] == list(ACTION) and argv[0].endswith("pkexec")


def test_identity_is_read_from_the_roots_files_not_this_machine(tmp_path):
    root = sc.clean_workstation(tmp_path / "root")
    sc.write(root, "/etc/hostname", "ws-17\n")
    identity = read_identity(HostRoot(root), 42.0)
    assert identity.kernel == sc.KERNEL and identity.kernel != os.uname().release
    assert identity.distro and "Ubuntu" in identity.distro
    assert identity.hostname == "ws-17" and identity.captured == 42.0
    report = diagnose(HostRoot(root))
    assert report.target is not None and report.target.kind is TargetKind.ROOT
    assert not report.target.applicable and report.target.machine.kernel == sc.KERNEL
    assert report.to_json()["target"]["machine"]["hostname"] == "ws-17"


@pytest.mark.parametrize("content", [b"", b"\x00\x01\x1b[31m", b"x" * 100_000, b"\xff\xfe\n\n", b"a\nb\n"])
def test_hostile_identity_files_stay_one_short_printable_line(tmp_path, content):
    root = tmp_path / "r"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "hostname").write_bytes(content)
    (root / "etc" / "os-release").write_bytes(b"PRETTY_NAME=" + content + b"\n")
    identity = read_identity(HostRoot(root))
    for value in (identity.hostname, identity.distro):
        assert value is None or (value.isprintable() and len(value) <= 80)


def test_unreadable_and_special_identity_files(tmp_path):
    root = tmp_path / "r"
    (root / "etc").mkdir(parents=True)
    os.mkfifo(root / "etc" / "hostname")  # a FIFO must not block the read
    os.symlink("os-release", root / "etc" / "os-release")  # a loop
    identity = read_identity(HostRoot(root))
    assert identity == MachineIdentity(None, None, None, None)


def test_a_window_view_never_yields_the_live_machine_unless_live_at_root(tmp_path):
    assert target_for_view(HostRoot("/"), "live").applicable
    assert not target_for_view(HostRoot("/"), "demo").applicable
    assert not target_for_view(HostRoot("/"), "snapshot", "/tmp/b.tar.gz").applicable
    assert not target_for_view(HostRoot(str(tmp_path)), "live").applicable
    assert not target_for_view(HostRoot(str(tmp_path)), "snapshot").applicable
