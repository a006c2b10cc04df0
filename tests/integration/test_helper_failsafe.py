"""The helper tells the truth under failure: each way it used to lie (issue 11, "Why"), reproduced for real.

The real helper file runs as root in a private mount namespace over temporary trees (the same set-up as
test_helper_e2e.py). Failures are real where the kernel can make them: a 4 KiB tmpfs over the journal or
audit folder fills the disk, a FIFO sits in place of a sysfs attribute or the audit log, the helper is
SIGKILLed while its rebuild runs. Where a fault cannot be made from outside (EIO from a disk, a kill
between writing a temporary file and renaming it) the helper's own code runs through its ``cli`` with a
fault hook, still as root in the namespace.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.integration.test_helper_e2e import NAMESPACE_MOUNTS, UNSHARE, namespace_host
from tests.unit.fixes.helper_trees import GPU_PCI, settle_sysfs

STATE = "var/lib/rocmdesk"
JOURNAL = "/var/lib/rocmdesk/journal"
AUDIT_DIR = "/var/log/rocmdesk"

# As test_helper_e2e's script, plus: $2 the caller's uid; $3 "DIR:SIZE" for a small tmpfs over DIR (filled
# from the tree's DIR, copied back after the run, because the tmpfs ends with the namespace).
SCRIPT = r"""
set -e
R="$1"; CALLER="$2"; TMPFS="$3"; shift 3
""" + NAMESPACE_MOUNTS + r"""if [ -z "$TMPFS" ]; then exec /usr/bin/env -i PKEXEC_UID="$CALLER" "$@"; fi
DIR="${TMPFS%%:*}"
mount -t tmpfs -o "size=${TMPFS#*:},mode=0755" rocmdesk-test "$DIR"
cp -a "$R$DIR/." "$DIR/"
set +e
/usr/bin/env -i PKEXEC_UID="$CALLER" "$@"
rc=$?
rm -f "$R$DIR"/*
cp -a "$DIR/." "$R$DIR/"
exit $rc
"""

# The helper's own cli() with a fault hook: at the nth time (and after) ``point`` is reached for a path
# containing ``needle``, raise EIO or SIGKILL the process.
FAULTED = r"""
import errno, importlib.machinery, importlib.util, json, os, signal, sys
path, point, needle, nth, mode, *argv = sys.argv[1:]
loader = importlib.machinery.SourceFileLoader("rocmdesk_helper", path)
H = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
loader.exec_module(H)
hits = 0
def fault(where, real_path):
    global hits
    if where != point or needle not in real_path:
        return
    hits += 1
    if hits < int(nth):
        return
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    raise OSError(errno.EIO, os.strerror(errno.EIO), real_path)
os.umask(0o022)
make = lambda uid: H.Context("/", caller_uid=uid, fault=fault)  # noqa: E731
result, code = H.cli(argv, os.environ, os.geteuid(), os.getuid(), make)
print(json.dumps(result, sort_keys=True))
sys.exit(code)
"""


@pytest.fixture
def host(tmp_path):
    root = namespace_host(tmp_path)
    (root / STATE / "journal").mkdir()
    (root / "var/log/rocmdesk").mkdir(mode=0o750)
    return root


def _argv(root: Path, uid: int, tmpfs: str, program: list[str]) -> list[str]:
    return [UNSHARE, "--mount", "--propagation", "private", "/bin/sh", "-c", SCRIPT, "ns", str(root), str(uid),
            tmpfs, *program]


def run(root: Path, *action: str, uid: int = 1000, tmpfs: str = "", timeout: float = 60) -> tuple[dict, int]:
    """The real helper file, as root in the namespace; (JSON answer, exit code)."""
    return _finish(root, subprocess.run(_argv(root, uid, tmpfs, [str(root / "helper/rocmdesk-helper"), *action]),
                                        capture_output=True, text=True, timeout=timeout))


def run_faulted(root: Path, point: str, needle: str, nth: int, mode: str, *action: str) -> tuple[dict | None, int]:
    program = ["/usr/bin/python3", "-I", "-c", FAULTED, str(root / "helper/rocmdesk-helper"), point, needle,
               str(nth), mode, *action]
    proc = subprocess.run(_argv(root, 1000, "", program), capture_output=True, text=True, timeout=60)
    if mode == "kill":
        assert proc.returncode == -signal.SIGKILL or proc.returncode == 128 + signal.SIGKILL, proc
        return None, proc.returncode
    return _finish(root, proc)


def _finish(root: Path, proc: subprocess.CompletedProcess) -> tuple[dict, int]:
    assert proc.stdout.strip(), f"no JSON from the helper: {proc.stderr}"
    settle_sysfs(root)
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.returncode


def attr(root: Path, name: str) -> Path:
    device = f"sys/devices/*/*/{GPU_PCI}"
    hits = list(root.glob(f"{device}/{name}")) or list(root.glob(f"{device}/hwmon/*/{name}"))
    return hits[0]


def audit(root: Path) -> list[dict]:
    log = root / "var/log/rocmdesk/audit.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def journal(root: Path, undo_id: str) -> dict:
    return json.loads((root / STATE / "journal" / f"{undo_id}.json").read_text())


def fake_calls(root: Path) -> list[str]:
    log = root / STATE / "fake-calls.log"
    return log.read_text().splitlines() if log.exists() else []


# -- after the change: success with the undo id and a warning, never "failed" -----------------------------------


@pytest.mark.parametrize("action", [("set-power-cap", GPU_PCI, "300"), ("initramfs-add-amdgpu",)])
def test_full_disk_at_the_final_journal_save_reports_success_with_the_undo_id(host, action):
    """A 4 KiB tmpfs over the journal: the record written ahead fits, no later save does (ENOSPC)."""
    modules = host / "etc/initramfs-tools/modules"
    before = (attr(host, "power1_cap").read_text(), modules.read_bytes())
    done, code = run(host, *action, tmpfs=f"{JOURNAL}:4k")
    assert code == 0 and done["ok"] and done["undo_id"], done
    assert any("journal entry could not be marked finished" in w and done["undo_id"] in w for w in done["warnings"])
    entry = journal(host, done["undo_id"])
    assert entry["status"] == "pending" and all(c["state"] == "writing" for c in entry["changes"]), \
        "what reached the disk is the record written before the change"
    if action[0] == "set-power-cap":
        assert attr(host, "power1_cap").read_text() == "300000000\n"
    else:
        assert modules.read_text().endswith("amdgpu\n") and len(fake_calls(host)) == 1
    assert audit(host)[-1]["result"] == "ok" and audit(host)[-1]["warnings"]

    undone, code = run(host, "undo", done["undo_id"])
    assert code == 0 and undone["ok"], undone
    assert (attr(host, "power1_cap").read_text(), modules.read_bytes()) == before


def test_eio_at_the_final_journal_save_reports_success_with_the_undo_id(host):
    """Every journal save after the record written ahead fails with EIO (a disk going bad mid-run)."""
    done, code = run_faulted(host, "before-rename", JOURNAL + "/", 2, "eio", "set-performance-level", GPU_PCI, "high")
    assert code == 0 and done["ok"] and done["undo_id"], done
    assert any("Input/output error" in w for w in done["warnings"])
    assert attr(host, "power_dpm_force_performance_level").read_text() == "high\n"
    assert journal(host, done["undo_id"])["changes"][0]["state"] == "writing"
    undone, code = run(host, "undo", done["undo_id"])
    assert code == 0 and undone["ok"] and attr(host, "power_dpm_force_performance_level").read_text() == "auto\n"


def test_no_room_for_the_journal_before_the_change_refuses_and_changes_nothing(host):
    (host / STATE / "journal/filler").write_bytes(b"\0" * 4096)
    refused, code = run(host, "set-power-cap", GPU_PCI, "300", tmpfs=f"{JOURNAL}:4k")
    assert code == 1 and not refused["ok"] and "nothing was changed" in refused["error"], refused
    assert "undo_id" not in refused
    assert attr(host, "power1_cap").read_text() == "290000000\n"


def test_symlinked_tuning_originals_reports_success_with_a_warning(host, tmp_path):
    victim = tmp_path / "victim.json"
    victim.write_text('{"planted": true}\n')
    originals = host / STATE / "tuning-originals.json"
    originals.symlink_to(victim)
    done, code = run(host, "set-power-cap", GPU_PCI, "300")
    assert code == 0 and done["ok"] and done["undo_id"], done
    assert any("tuning-originals.json could not be updated" in w for w in done["warnings"])
    assert attr(host, "power1_cap").read_text() == "300000000\n"
    assert originals.is_symlink() and victim.read_text() == '{"planted": true}\n', "never written through"
    assert journal(host, done["undo_id"])["status"] == "applied"
    undone, code = run(host, "undo", done["undo_id"])
    assert code == 0 and undone["ok"] and attr(host, "power1_cap").read_text() == "290000000\n"


# -- undo only by the user who made the change, or explicitly as an administrator ----------------------------------


def test_undo_by_another_user_is_refused_and_undo_as_admin_is_the_override(host):
    level = attr(host, "power_dpm_force_performance_level")
    done, _ = run(host, "set-performance-level", GPU_PCI, "high", uid=1000)
    assert done["ok"] and level.read_text() == "high\n"
    refused, code = run(host, "undo", done["undo_id"], uid=1001)
    assert code == 1 and "made by user id 1000" in refused["error"] and "undo-as-admin" in refused["error"], refused
    assert level.read_text() == "high\n" and journal(host, done["undo_id"])["status"] == "applied"
    undone, code = run(host, "undo-as-admin", done["undo_id"], uid=1001)
    assert code == 0 and undone["ok"], undone
    assert level.read_text() == "auto\n"
    entry = journal(host, done["undo_id"])
    assert entry["status"] == "undone" and entry["undone_by_uid"] == 1001
    assert [(a["event"], a["action"], a["uid"]) for a in audit(host)[-2:]] == [
        ("begin", "undo-as-admin", 1001), ("end", "undo-as-admin", 1001)]


# -- the rebuild lock outlives a killed helper ----------------------------------------------------------------

BLOCKING_REBUILD = r"""#!/bin/sh
# Fake update-initramfs: says when it starts and ends, notices a second copy running beside it, and waits
# for the test's release file (at most about 30 s).
S=/var/lib/rocmdesk
mkdir "$S/rebuild-running" 2>/dev/null || echo OVERLAP >> "$S/rebuild.log"
echo "start $$" >> "$S/rebuild.log"
i=0
while [ ! -e "$S/release" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
echo "end $$" >> "$S/rebuild.log"
rmdir "$S/rebuild-running"
"""


def _wait_for(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _has_lock_file_open(pid: int) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").endswith("/rocmdesk/helper.lock"):
                return True
        except OSError:
            continue
    return False


def test_a_killed_helper_keeps_the_rebuild_locked_until_the_rebuild_ends(host):
    tool = host / "usr/sbin/update-initramfs"
    tool.write_text(BLOCKING_REBUILD)
    log, release = host / STATE / "rebuild.log", host / STATE / "release"
    program = [str(host / "helper/rocmdesk-helper"), "initramfs-regenerate"]
    first = subprocess.Popen(_argv(host, 1000, "", program), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    second = None
    try:
        assert _wait_for(lambda: log.exists() and "start" in log.read_text(), 30), "the first rebuild never started"
        first.kill()  # SIGKILL: the helper (unshare execs sh, which execs it) dies, its rebuild keeps running
        first.wait(timeout=10)
        second = subprocess.Popen(_argv(host, 1000, "", program), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        assert _wait_for(lambda: _has_lock_file_open(second.pid), 30), "the second run never opened the lock"
        # The second helper now tries the lock (every 0.1 s); give it ten chances to start a rebuild.
        assert not _wait_for(lambda: log.read_text().count("start") > 1, 1.0), log.read_text()
        release.write_text("")
        out, err = second.communicate(timeout=60)
    finally:
        release.write_text("")
        for proc in (first, second):
            if proc and proc.poll() is None:
                proc.kill()
                proc.wait()
    result = json.loads(out.strip().splitlines()[-1])
    assert second.returncode == 0 and result["ok"], (result, err)
    events = [line.split()[0] for line in log.read_text().splitlines()]
    assert events == ["start", "end", "start", "end"], log.read_text()


# -- the audit log: bounded lines, and no run without its begin line ---------------------------------------------


def test_audit_lines_are_bounded_and_keep_a_hash_of_what_was_cut(host):
    import hashlib

    huge = "9" * 130_000
    refused, code = run(host, "set-power-cap", GPU_PCI, huge)
    assert code == 2 and not refused["ok"]
    _, code = run(host, "set-power-cap", *([GPU_PCI] * 100))
    assert code == 2
    unknown, code = run(host, "x" * 130_000)
    assert code == 2 and unknown.get("action") is None and len(json.dumps(unknown)) < 2000
    log = (host / "var/log/rocmdesk/audit.log").read_text()
    assert max(len(line) for line in log.splitlines()) < 8000 and len(log) < 6 * 8000
    lines = audit(host)
    assert [a["event"] for a in lines] == ["begin", "end"] * 3
    assert hashlib.sha256(huge.encode()).hexdigest() in lines[0]["args"][1] and lines[0]["args"][0] == GPU_PCI
    assert len(lines[2]["args"]) == 9 and "92 more arguments" in lines[2]["args"][-1]
    assert hashlib.sha256(("x" * 130_000).encode()).hexdigest() in lines[4]["action"]
    assert attr(host, "power1_cap").read_text() == "290000000\n"


@pytest.mark.parametrize("kind", ["symlink", "fifo", "full-disk"])
def test_a_run_whose_audit_record_cannot_be_written_is_refused_before_anything_changes(host, tmp_path, kind):
    log = host / "var/log/rocmdesk/audit.log"
    victim = tmp_path / "victim.log"
    tmpfs = ""
    if kind == "symlink":
        victim.write_text("")
        log.symlink_to(victim)
    elif kind == "fifo":
        os.mkfifo(log)  # the old helper blocked here forever: open(O_WRONLY) waits for a reader
    else:
        (host / "var/log/rocmdesk/filler").write_bytes(b"\0" * 4096)
        tmpfs = f"{AUDIT_DIR}:4k"
    before = attr(host, "power_dpm_force_performance_level").read_text()
    refused, code = run(host, "set-performance-level", GPU_PCI, "high", tmpfs=tmpfs, timeout=30)
    assert code == 1 and not refused["ok"] and "audit log" in refused["error"], refused
    assert "nothing was changed" in refused["error"]
    assert attr(host, "power_dpm_force_performance_level").read_text() == before
    assert not list((host / STATE / "journal").iterdir()), "refused before a journal entry was made"
    assert not victim.exists() or victim.read_text() == ""
    if kind == "full-disk":
        assert not log.exists() or log.read_text() == ""


# -- sysfs opens never block and take regular files only --------------------------------------------------------


@pytest.mark.parametrize(("action", "name"), [
    (("set-performance-level", GPU_PCI, "high"), "power_dpm_force_performance_level"),
    (("set-power-cap", GPU_PCI, "300"), "power1_cap"),
    (("set-power-cap", GPU_PCI, "300"), "power1_cap_max"),
])
def test_a_fifo_in_place_of_a_sysfs_attribute_is_refused_without_hanging(host, action, name):
    fifo = attr(host, name)
    fifo.unlink()
    os.mkfifo(fifo)  # the old helper's open(O_RDONLY) waited for a writer, holding the run lock
    started = time.monotonic()
    refused, code = run(host, *action, timeout=30)
    assert code == 1 and "is a FIFO, not a regular file" in refused["error"], refused
    assert time.monotonic() - started < 30
    fifo.unlink()
    fifo.write_text("290000000\n" if name == "power1_cap" else "auto\n" if "level" in name else "333000000\n")
    done, code = run(host, *action)
    assert code == 0 and done["ok"], "the lock was released"


# -- leftovers of a killed run ------------------------------------------------------------------------------------


def test_temp_files_left_by_a_killed_run_are_removed_by_the_next_run(host, tmp_path):
    folder = host / "etc/modprobe.d"
    blacklist = "/etc/modprobe.d/blacklist-amdgpu.conf"
    # killed between writing the new file's temporary copy and renaming it over the original
    _, code = run_faulted(host, "before-rename", blacklist, 1, "kill", "modprobe-unblacklist-amdgpu", blacklist)
    [leftover] = [p for p in folder.iterdir() if p.name.startswith(".blacklist-amdgpu.conf.rocmdesk-")]
    decoys = {
        "user-owned": folder / ".alsa-base.conf.rocmdesk-0123abcd.tmp",
        "other-name": folder / ".alsa-base.conf.tmp",
        "symlink": folder / ".x.conf.rocmdesk-89abcdef.tmp",
    }
    decoys["user-owned"].write_text("mine\n")
    os.chown(decoys["user-owned"], 1000, 1000)
    decoys["other-name"].write_text("keep\n")
    outside = tmp_path / "outside"
    outside.write_text("keep\n")
    decoys["symlink"].symlink_to(outside)

    done, code = run(host, "set-performance-level", GPU_PCI, "low")
    assert code == 0 and done["ok"], done
    assert not leftover.exists()
    assert done["cleaned"] == [f"/etc/modprobe.d/{leftover.name}"]
    assert audit(host)[-1]["cleaned"] == done["cleaned"]
    assert all(os.path.lexists(p) for p in decoys.values()) and outside.read_text() == "keep\n"
    assert (folder / "blacklist-amdgpu.conf").read_bytes().startswith(b"# keep the old card quiet\nblacklist amdgpu")
