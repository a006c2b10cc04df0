"""Desktop integration: validators, and the Debian package built, installed, checked and removed.

The package test changes the machine (apt-get install, a system D-Bus and polkitd), so it runs
only in CI (CI=true) or when ROCMDESK_SYSTEM_TESTS=1, and only as root on a Debian-like system.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[2]
PACKAGING = TOP / "packaging"
DESKTOP = PACKAGING / "org.rocmdesk.RocmDesk.desktop"
METAINFO = PACKAGING / "org.rocmdesk.RocmDesk.metainfo.xml"


def _run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, **kw)


@pytest.mark.skipif(shutil.which("desktop-file-validate") is None, reason="desktop-file-utils not installed")
def test_desktop_entry_validates():
    result = _run(["desktop-file-validate", str(DESKTOP)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "error" not in (result.stdout + result.stderr).lower()


@pytest.mark.skipif(shutil.which("appstreamcli") is None, reason="appstream not installed")
def test_metainfo_validates():
    result = _run(["appstreamcli", "validate", "--no-net", str(METAINFO)])
    assert result.returncode == 0, result.stdout + result.stderr


def test_metainfo_names_the_desktop_entry_and_icon():
    root = ET.parse(METAINFO).getroot()
    assert root.findtext("launchable") == DESKTOP.name
    assert root.find("content_rating") is not None and root.find("releases/release") is not None
    desktop = DESKTOP.read_text()
    assert "Icon=rocmdesk" in desktop
    assert (TOP / "resources" / "icons" / "rocmdesk.svg").is_file()
    for size in (16, 32, 48, 128, 256):
        png = TOP / "resources" / "icons" / "hicolor" / f"{size}x{size}" / "apps" / "rocmdesk.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _policy_actions() -> dict[str, str]:
    """Action id -> exec.path annotation of the shipped polkit policy."""
    policies = sorted((PACKAGING / "polkit").glob("*.policy"))
    assert policies, "no polkit policy in packaging/polkit"
    out = {}
    for action in ET.parse(policies[0]).getroot().iter("action"):
        for annotate in action.iter("annotate"):
            if annotate.get("key") == "org.freedesktop.policykit.exec.path":
                out[action.get("id")] = annotate.text.strip()
    return out


SYSTEM_TESTS = os.environ.get("CI") == "true" or os.environ.get("ROCMDESK_SYSTEM_TESTS") == "1"


SYSTEM_BUS = Path("/run/dbus/system_bus_socket")


def _bus_answers() -> bool:
    """True when a daemon listens on the system bus socket (a socket file alone can be stale)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(str(SYSTEM_BUS))
        except OSError:
            return False
    return True


def _polkit_answers() -> bool:
    return _run(["pkaction", "--action-id", "org.freedesktop.policykit.exec"], timeout=30).returncode == 0


def _wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


@pytest.fixture
def system_dbus_and_polkit():
    """A system bus and polkitd for pkaction, started only if none answers; stopped afterwards.

    A machine whose earlier session ended leaves /run/dbus/system_bus_socket behind with no daemon
    (seen in CI: "Could not connect: Connection refused"), so liveness is checked by connecting.
    """
    started = []
    if not _bus_answers():
        SYSTEM_BUS.parent.mkdir(parents=True, exist_ok=True)
        SYSTEM_BUS.unlink(missing_ok=True)
        _run(["dbus-uuidgen", "--ensure"])
        started.append(subprocess.Popen(["dbus-daemon", "--system", "--nofork", "--nopidfile"]))
        assert _wait_for(_bus_answers, 15), "the system D-Bus daemon did not start"
    if not _polkit_answers():
        started.append(subprocess.Popen(["/usr/lib/polkit-1/polkitd", "--no-debug"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        assert _wait_for(_polkit_answers, 30), "polkitd did not answer on the system bus"
    yield
    for proc in reversed(started):
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.skipif(not SYSTEM_TESTS, reason="changes the machine: runs in CI or with ROCMDESK_SYSTEM_TESTS=1")
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("dpkg-deb") is None, reason="needs root and dpkg")
def test_debian_package_installs_runs_and_removes(tmp_path, system_dbus_and_polkit):
    actions = _policy_actions()
    build = _run(["bash", str(PACKAGING / "build-deb.sh"), "--out", str(tmp_path)], timeout=900)
    assert build.returncode == 0, build.stderr[-3000:]
    deb = Path(build.stdout.strip().splitlines()[-1])
    assert deb.is_file()

    install = _run(["apt-get", "install", "-y", "-q", str(deb)], timeout=900,
                   env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    try:
        version = _run(["/usr/bin/rocmdesk", "--version"], timeout=60)
        assert version.returncode == 0 and version.stdout.startswith("rocmdesk "), version.stderr

        # Resources (demo recordings, check metadata) are found in /usr/share/rocmdesk.
        demo = _run(["/usr/bin/rocmdesk", "sample", "--backend", "demo", "--count", "1", "--json"], timeout=60)
        assert demo.returncode == 0, demo.stderr
        assert len(json.loads(demo.stdout.splitlines()[0])["gpus"]) == 8
        shot = tmp_path / "installed.png"
        screenshot = _run(["/usr/bin/rocmdesk", "screenshot", "--demo", "--tab", "overview", "--seconds", "1",
                           "-o", str(shot)], timeout=120, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
        assert screenshot.returncode == 0, screenshot.stderr[-3000:]
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

        helper = Path("/usr/libexec/rocmdesk/rocmdesk-helper")
        st = helper.stat()
        assert st.st_uid == 0 and st.st_mode & 0o7777 == 0o755
        refused = _run([str(helper), "no-such-action"], timeout=60,
                       env={"PKEXEC_UID": "65534", "PATH": "/usr/bin:/bin"})
        assert refused.returncode not in (0, 126, 127)
        answer = json.loads(refused.stdout)
        assert answer["ok"] is False and "action" in answer["error"].lower()

        for action_id, exec_path in actions.items():
            shown = _run(["pkaction", "--action-id", action_id, "--verbose"], timeout=30)
            assert shown.returncode == 0, f"polkit does not know {action_id}: {shown.stderr}"
            assert exec_path in shown.stdout
            assert Path(exec_path).is_file()
        # The app reads the helper's journal as the user; backups of /etc files stay root-only.
        assert Path("/var/lib/rocmdesk").stat().st_mode & 0o777 == 0o755
        assert Path("/var/lib/rocmdesk/backups").stat().st_mode & 0o777 == 0o700
        for path in ("/usr/share/applications/org.rocmdesk.RocmDesk.desktop",
                     "/usr/share/metainfo/org.rocmdesk.RocmDesk.metainfo.xml",
                     "/usr/share/icons/hicolor/scalable/apps/rocmdesk.svg"):
            assert Path(path).is_file(), path
    finally:
        remove = _run(["apt-get", "purge", "-y", "-q", "rocmdesk"], timeout=600,
                      env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    assert remove.returncode == 0, remove.stderr
    assert not Path("/usr/bin/rocmdesk").exists()
    assert not Path("/usr/lib/rocmdesk").exists()
    assert not Path("/usr/libexec/rocmdesk/rocmdesk-helper").exists()
