"""``rocmdesk fix --apply`` end to end on the live machine, as root in a private mount namespace.

Inside ``unshare --mount`` only (tests/integration/test_helper_e2e.py's namespace), temporary trees are bound
over /etc, /sys, /var/lib, /var/log and /usr/sbin, the real helper file over /usr/libexec, the polkit policy
over /usr/share/polkit-1/actions and a stand-in pkexec (it only sets PKEXEC_UID, as pkexec does, and runs the
helper) over /usr/bin/pkexec. The CLI then diagnoses "/" (the bound trees), previews with the helper, applies
through "pkexec", and prints the undo id; undo restores identical bytes. The same command with --root on
that tree exits 2 and changes nothing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.integration.test_helper_e2e import NAMESPACE_SCRIPT, UNSHARE, host, run_helper  # noqa: F401
from tests.unit.fixes.helper_trees import HELPER_FILE, REPO, snapshot

EXTRA_MOUNTS = r"""
mount --bind "$R/libexec" /usr/libexec
mount --bind "$R/polkit-actions" /usr/share/polkit-1/actions
mount --bind "$R/fake-pkexec" /usr/bin/pkexec
if [ -f /.dockerenv ]; then mount --bind /dev/null /.dockerenv; fi
"""
# A CI machine may carry Docker's /.dockerenv marker (this one does); the namespace hides it (a character device
# is not the marker file), so the bound trees read as a host and the fix is not sent "to the host" instead.
FAKE_PKEXEC = ('#!/bin/sh\n# stands in for pkexec: the caller is uid 1000, the helper runs as root\n'
               'exec /usr/bin/env PKEXEC_UID=1000 "$@"\n')


def _prepare(root: Path) -> None:
    (root / "libexec/rocmdesk").mkdir(parents=True)
    shutil.copy2(HELPER_FILE, root / "libexec/rocmdesk/rocmdesk-helper")
    (root / "libexec/rocmdesk/rocmdesk-helper").chmod(0o755)
    (root / "polkit-actions").mkdir()
    shutil.copy2(REPO / "packaging/polkit/org.rocmdesk.helper.policy", root / "polkit-actions")
    (root / "fake-pkexec").write_text(FAKE_PKEXEC)
    (root / "fake-pkexec").chmod(0o755)


def _fix_in_namespace(root: Path, *argv: str) -> subprocess.CompletedProcess:
    script = NAMESPACE_SCRIPT.replace('exec /usr/bin/env -i', EXTRA_MOUNTS + 'exec /usr/bin/env -i')
    assert EXTRA_MOUNTS in script
    return subprocess.run([UNSHARE, "--mount", "--propagation", "private", "/bin/sh", "-c", script, "ns", str(root),
                           sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(REPO)!r}); "
                           "from rocmdesk.cli import main; sys.exit(main(sys.argv[1:]))", "fix", *argv],
                          capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)


def test_fix_apply_on_the_live_machine_goes_through_pkexec_and_the_helper(host):  # noqa: F811
    _prepare(host)
    before = snapshot(host, "etc")
    proc = _fix_in_namespace(host, "xorg-driver-conflict", "--subject", "/etc/X11/xorg.conf", "--apply", "--json")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    data = json.loads(proc.stdout)
    assert data["target"]["kind"] == "live" and data["applicable"] is True
    assert data["changes_from"] == "the helper's --preview on this machine"
    [change] = data["changes"]
    assert (change["kind"], change["path"], change["to"]) == ("rename", "/etc/X11/xorg.conf",
                                                              "/etc/X11/xorg.conf.rocmdesk-disabled")
    outcome = data["outcome"]
    assert outcome["kind"] == "done" and outcome["undo_id"]
    assert f"/usr/bin/pkexec /usr/libexec/rocmdesk/rocmdesk-helper undo {outcome['undo_id']}" in outcome["message"]
    assert not (host / "etc/X11/xorg.conf").exists() and (host / "etc/X11/xorg.conf.rocmdesk-disabled").exists()
    undone, code = run_helper(host, "undo", outcome["undo_id"])
    assert code == 0 and undone["ok"], undone
    assert snapshot(host, "etc") == before


def test_fix_apply_with_root_on_the_same_tree_exits_2_and_changes_nothing(host, capsys):  # noqa: F811
    from rocmdesk.cli import main

    before = snapshot(host, "etc", "var")
    code = main(["fix", "xorg-driver-conflict", "--root", str(host), "--subject", "/etc/X11/xorg.conf", "--apply"])
    err = capsys.readouterr().err
    assert code == 2 and "--apply refused" in err
    assert snapshot(host, "etc", "var") == before
