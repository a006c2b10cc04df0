"""End to end: the real helper file, run as root in a private mount namespace over temporary trees.

Inside ``unshare --mount --propagation private`` (and only there) temporary trees are bind-mounted over
/sys, /etc, /var/lib and /var/log, and a folder of harmless recording fakes over /usr/sbin (plus
/usr/bin/gpasswd), so update-initramfs/usermod/gpasswd never touch the real system. Each finding of the
diagnosis that has a safe fix is applied exactly as the app would (its Fix.action), the preview is
compared with what the run did, the check re-runs green, and undo brings back identical bytes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rocmdesk.diagnosis.context import DiagnosisContext
from rocmdesk.diagnosis.engine import registered_checks, run_check
from rocmdesk.diagnosis.metadata import load_metadata
from rocmdesk.diagnosis.model import Status
from rocmdesk.diagnosis.target import live_target
from rocmdesk.fixes import client, requests
from rocmdesk.fixes.actions import HELPER_PATH
from rocmdesk.host import HostRoot
from tests.unit.fixes.helper_trees import GPU_PCI, HELPER_FILE, build_host, load_helper, settle_sysfs, snapshot

UNSHARE = "/usr/bin/unshare"

# Run inside the new namespace only: unshare starts the script after the namespace exists, so a failure to
# unshare means none of these mounts happen. `set -e` (set by each script) stops at the first failed mount.
# $R is the tree whose folders stand in for /sys, /etc, /var/lib, /var/log and the tools the helper calls.
NAMESPACE_MOUNTS = r"""
mount --make-rprivate /
mount --bind "$R/sys" /sys
mount --bind "$R/etc" /etc
mount --bind "$R/var/lib" /var/lib
mount --bind "$R/var/log" /var/log
mount --bind "$R/usr/sbin" /usr/sbin
if [ -e /usr/bin/gpasswd ]; then mount --bind "$R/usr/sbin/gpasswd" /usr/bin/gpasswd; fi
for tool in /usr/bin/dracut /usr/bin/mkinitcpio; do
  if [ -e "$tool" ]; then mount --bind "$R/not-a-tool" "$tool"; fi
done
if [ -e /dev/log ]; then mount --bind "$R/not-a-socket" /dev/log; fi
"""
NAMESPACE_SCRIPT = r"""
set -e
R="$1"; shift
""" + NAMESPACE_MOUNTS + r"""exec /usr/bin/env -i PKEXEC_UID=1000 "$@"
"""

FAKE_GROUP_TOOL = r"""#!/usr/bin/python3 -I
# Harmless stand-in for usermod -a -G G1,G2 USER / gpasswd -d USER G: edits the (bind-mounted) /etc/group.
import sys
args = sys.argv[1:]
with open("/var/lib/rocmdesk/fake-calls.log", "a") as log:
    log.write(" ".join([sys.argv[0]] + args) + "\n")
if args[:2] == ["-a", "-G"]:
    groups, user, add = args[2].split(","), args[3], True
elif args[:1] == ["-d"]:
    groups, user, add = [args[2]], args[1], False
else:
    sys.exit(2)
lines = open("/etc/group").read().splitlines(keepends=True)
out = []
for line in lines:
    parts = line.rstrip("\n").split(":")
    if parts[0] in groups:
        members = [m for m in parts[3].split(",") if m]
        if add and user not in members:
            members.append(user)
        elif not add:
            members = [m for m in members if m != user]
        parts[3] = ",".join(members)
        line = ":".join(parts) + "\n"
    out.append(line)
open("/etc/group", "w").write("".join(out))
"""


def _namespace_works(tmp_path: Path) -> str | None:
    if os.geteuid() != 0:
        return "needs root to create a mount namespace"
    if not os.path.exists(UNSHARE):
        return "unshare is not installed"
    probe = tmp_path / "probe"
    probe.mkdir()
    proc = subprocess.run([UNSHARE, "--mount", "--propagation", "private", "/bin/sh", "-c",
                           f"mount --bind {probe} /mnt && umount /mnt"], capture_output=True, text=True, timeout=20)
    if proc.returncode != 0:
        return f"cannot bind-mount inside a private mount namespace here: {proc.stderr.strip()[:200]}"
    return None


@pytest.fixture
def host(tmp_path):
    return namespace_host(tmp_path)


def namespace_host(tmp_path: Path) -> Path:
    """A host tree ready to be bound over the real folders (skips when namespaces are unavailable)."""
    reason = _namespace_works(tmp_path)
    if reason:
        pytest.skip(reason)
    root = build_host(tmp_path / "root", with_other_gpu=True)
    for tool in ("usermod", "gpasswd"):
        path = root / "usr/sbin" / tool
        path.write_text(FAKE_GROUP_TOOL)
        path.chmod(0o755)
    if os.path.exists("/etc/ld.so.cache"):  # the dynamic linker inside the namespace reads the bound /etc
        shutil.copy2("/etc/ld.so.cache", root / "etc/ld.so.cache")
    # the DDX's own file (xorg/driver/xf86-video-amdgpu conf/10-amdgpu.conf): keeps an Xorg config in place so the
    # check can pass, not skip
    (root / "etc/X11/xorg.conf.d/10-amdgpu.conf").write_text(
        'Section "OutputClass"\n Identifier "AMDgpu"\n MatchDriver "amdgpu"\n Driver "amdgpu"\nEndSection\n')
    (root / "var/lib/rocmdesk").mkdir(parents=True)
    (root / "var/log").mkdir(parents=True)
    (root / "not-a-tool").write_text("")
    (root / "not-a-socket").write_text("")
    (root / "helper").mkdir()
    shutil.copy2(HELPER_FILE, root / "helper/rocmdesk-helper")
    return root


def run_helper(root: Path, *argv: str) -> tuple[dict, int]:
    """The real helper file as root inside the namespace; returns (JSON, exit code)."""
    proc = subprocess.run([UNSHARE, "--mount", "--propagation", "private", "/bin/sh", "-c", NAMESPACE_SCRIPT,
                           "ns", str(root), str(root / "helper/rocmdesk-helper"), *argv],
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip(), f"no JSON from the helper: {proc.stderr}"
    settle_sysfs(root)
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.returncode


def check(root: Path, check_id: str):
    spec = next(s for s in registered_checks() if s.id == check_id)
    return run_check(spec, DiagnosisContext(HostRoot(root)), load_metadata())


def fake_calls(root: Path) -> list[str]:
    log = root / "var/lib/rocmdesk/fake-calls.log"
    return log.read_text().splitlines() if log.exists() else []


def test_findings_fix_recheck_green_and_undo_to_identical_bytes(host):
    before = snapshot(host, "etc", "sys")
    applied = []
    for check_id in ("amdgpu-blacklisted", "xorg-driver-conflict"):
        result = check(host, check_id)
        assert result.status is Status.FAIL
        for finding in result.findings:
            request = requests.request_for_finding(finding)
            assert request and request.privileged
            argv = client.pkexec_argv(request.action, target=live_target())
            assert argv[1] == HELPER_PATH  # what Apply runs; here the same file from the checkout
            preview, code = run_helper(host, "--preview", *request.action)
            assert code == 0 and preview["ok"], preview
            done, code = run_helper(host, *request.action)
            assert code == 0 and done["ok"], done
            assert done["changes"] == preview["changes"], "the preview is exactly what the helper did"
            applied.append(done["undo_id"])
        assert check(host, check_id).status is Status.PASS, f"{check_id} re-checks green"
    release = os.uname().release
    assert fake_calls(host) == [f"/usr/sbin/update-initramfs -u -k {release}"]

    for undo_id in reversed(applied):
        undone, code = run_helper(host, "undo", undo_id)
        assert code == 0 and undone["ok"], undone
    assert snapshot(host, "etc", "sys") == before, "undo restores every byte"
    assert check(host, "amdgpu-blacklisted").status is Status.FAIL
    audit = [json.loads(line) for line in (host / "var/log/rocmdesk/audit.log").read_text().splitlines()]
    assert [a["event"] for a in audit] == ["begin", "end"] * (2 * len(applied)), "a begin and an end line per run"
    assert all(a["uid"] == 1000 for a in audit) and all(a["result"] == "ok" for a in audit[1::2])


def test_groups_initramfs_and_tuning_end_to_end(host):
    before = snapshot(host, "etc", "sys")
    group_line = next(line for line in (host / "etc/group").read_text().splitlines() if line.startswith("render:"))
    steps = [
        ("add-user-to-groups", "render,video"),
        ("initramfs-add-amdgpu",),
        ("set-power-cap", GPU_PCI, "300"),
        ("set-performance-level", GPU_PCI, "high"),
        ("set-power-profile", GPU_PCI, "5"),
    ]
    undo_ids = []
    for action in steps:
        preview, _ = run_helper(host, "--preview", *action)
        done, code = run_helper(host, *action)
        assert code == 0 and done["ok"], done
        assert done["changes"] == preview["changes"]
        undo_ids.append(done["undo_id"])
    assert "render:x:105:bob,alice" in (host / "etc/group").read_text()
    assert (host / "etc/initramfs-tools/modules").read_text().endswith("amdgpu\n")
    cap = next(host.glob(f"sys/devices/*/*/{GPU_PCI}/hwmon/*/power1_cap"))
    assert cap.read_text() == "300000000\n"
    assert load_helper().parse_profiles(next(host.glob(f"sys/devices/*/*/{GPU_PCI}/pp_power_profile_mode"))
                                        .read_text())[1] == 5

    refused, code = run_helper(host, "set-power-cap", GPU_PCI, "400")
    assert code == 1 and "outside this GPU's range" in refused["error"] and cap.read_text() == "300000000\n"
    refused, code = run_helper(host, "modprobe-unblacklist-amdgpu", "/etc/modprobe.d/../shadow")
    assert code == 2 and not refused["ok"]

    for undo_id in reversed(undo_ids):
        undone, code = run_helper(host, "undo", undo_id)
        assert code == 0 and undone["ok"], undone
    assert snapshot(host, "etc", "sys") == before
    assert group_line in (host / "etc/group").read_text().splitlines()
    release = os.uname().release
    assert fake_calls(host) == [
        "/usr/sbin/usermod -a -G render,video alice",
        f"/usr/sbin/update-initramfs -u -k {release}",
        f"/usr/sbin/update-initramfs -u -k {release}",
        "/usr/sbin/gpasswd -d alice render" if not os.path.exists("/usr/bin/gpasswd")
        else "/usr/bin/gpasswd -d alice render",
        "/usr/sbin/gpasswd -d alice video" if not os.path.exists("/usr/bin/gpasswd")
        else "/usr/bin/gpasswd -d alice video",
    ]


def test_the_real_etc_is_untouched(host):
    """Belt and braces: after namespace runs, nothing from the temporary tree shows on the real system."""
    run_helper(host, "xorg-disable-conf", "/etc/X11/xorg.conf")
    assert not os.path.exists("/var/lib/rocmdesk/fake-calls.log")
    assert not os.path.exists("/etc/X11/xorg.conf.rocmdesk-disabled")
    assert not os.path.exists("/etc/modprobe.d/blacklist-amdgpu.conf") or \
        "rocmdesk" not in Path("/etc/modprobe.d/blacklist-amdgpu.conf").read_text()
    with open("/proc/self/mountinfo") as fh:
        assert str(host) not in fh.read(), "no bind mount leaked out of the namespace"
