"""Desktop integration: validators, and the Debian package built, installed, checked and removed.

The package tests change the machine (apt-get install, a system D-Bus and polkitd, a throw-away user
and a temporary polkit rule), so they run only in CI (CI=true) or when ROCMDESK_SYSTEM_TESTS=1, and
only as root on a Debian-like system. The package is built and installed once for this module
(``installed_package``) and purged when its last test ends.

The pkexec tests run the app's own client code (rocmdesk.fixes.client from the installed package) as
an unprivileged user, through the real setuid pkexec and polkitd, for a request that changes nothing:
``reset-power-cap`` of a PCI address no machine has, which the helper refuses after authorization.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import secrets
import shutil
import signal
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
only_system = pytest.mark.skipif(not SYSTEM_TESTS,
                                 reason="changes the machine: runs in CI or with ROCMDESK_SYSTEM_TESTS=1")
only_root_dpkg = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("dpkg-deb") is None,
                                    reason="needs root and dpkg")


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


@pytest.fixture(scope="module")
def system_dbus_and_polkit():
    """A system bus and polkitd for pkaction and pkexec, started only if none answers; stopped afterwards.

    A machine whose earlier session ended leaves /run/dbus/system_bus_socket behind with no daemon
    (seen in CI: "Could not connect: Connection refused"), so liveness is checked by connecting.
    """
    started = []
    own_bus = False
    if not _bus_answers():
        SYSTEM_BUS.parent.mkdir(parents=True, exist_ok=True)
        SYSTEM_BUS.unlink(missing_ok=True)
        _run(["dbus-uuidgen", "--ensure"])
        started.append(subprocess.Popen(["dbus-daemon", "--system", "--nofork", "--nopidfile"]))
        own_bus = True
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
            proc.wait(timeout=5)
    if own_bus and not _bus_answers():
        SYSTEM_BUS.unlink(missing_ok=True)  # the daemon leaves its socket behind: the stale file seen in CI


APT_ENV = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}


@pytest.fixture(scope="module")
def installed_package(tmp_path_factory, system_dbus_and_polkit):
    """The .deb built from this checkout, installed once for the module; purged (and checked gone) at the end."""
    out = tmp_path_factory.mktemp("deb")
    build = _run(["bash", str(PACKAGING / "build-deb.sh"), "--out", str(out)], timeout=900)
    assert build.returncode == 0, build.stderr[-3000:]
    deb = Path(build.stdout.strip().splitlines()[-1])
    assert deb.is_file()
    install = _run(["apt-get", "install", "-y", "-q", str(deb)], timeout=900, env=APT_ENV)
    try:
        assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
        yield deb
    finally:
        remove = _run(["apt-get", "purge", "-y", "-q", "rocmdesk"], timeout=600, env=APT_ENV)
    assert remove.returncode == 0, remove.stderr
    for gone in ("/usr/bin/rocmdesk", "/usr/lib/rocmdesk", "/usr/libexec/rocmdesk/rocmdesk-helper",
                 "/var/lib/rocmdesk", "/var/log/rocmdesk"):
        assert not Path(gone).exists(), f"{gone} is left after purge"


@only_system
@only_root_dpkg
def test_debian_package_installs_and_runs(tmp_path, installed_package):
    actions = _policy_actions()
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

    helper = Path(HELPER)
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


# -- pkexec, for real, as an unprivileged user ----------------------------------------------------------------

HELPER = "/usr/libexec/rocmdesk/rocmdesk-helper"
PKEXEC = "/usr/bin/pkexec"
AUDIT_LOG = Path("/var/log/rocmdesk/audit.log")
RULES_DIR = Path("/etc/polkit-1/rules.d")
# A well-formed PCI address in a domain no machine has: the helper refuses it ("no PCI device") after
# pkexec has authorized the run, so nothing on this machine is touched.
PROBE_PCI = "ffff:ff:1f.7"
PROBE = ("reset-power-cap", PROBE_PCI)
PROBE_POLKIT_ID = "org.rocmdesk.helper.reset-power-cap"
# shadow-utils rewrites these backups on useradd/userdel; they are put back so no trace of the user stays.
ETC_BACKUPS = tuple(Path(f"/etc/{name}-") for name in ("passwd", "group", "shadow", "gshadow"))

# Runs as the throw-away user with the installed app's code, exactly like the launcher's sys.path, and does
# what the Fix dialog does on Apply: helper_status(), pkexec_argv(), run that argv (no shell), then
# outcome_from_exit(). Prints one JSON object; a traceback would fail the test.
CLIENT_APPLY = r"""
import json, os, subprocess, sys
sys.path[:0] = ["/usr/lib/rocmdesk/vendor", "/usr/lib/rocmdesk"]
from rocmdesk.diagnosis.target import live_target
from rocmdesk.fixes import client
status = client.helper_status()
argv = client.pkexec_argv(sys.argv[1:], status.pkexec or client.PKEXEC_CANDIDATES[0], target=live_target())
proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
outcome = client.outcome_from_exit(proc.returncode, proc.stdout, proc.stderr)
print(json.dumps({"uid": os.getuid(), "client": client.__file__, "ready": status.ready, "argv": argv,
                  "exit_code": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr,
                  "kind": outcome.kind.value, "message": outcome.message}))
"""

RULE = """// Temporary rule of rocmdesk's package test (tests/integration/test_packaging.py); removed when it ends.
polkit.addRule(function(action, subject) {
    if (subject.user == %s && %s.indexOf(action.id) >= 0) {
        return polkit.Result.%s;
    }
});
"""
# pkcheck's exit code for each rule result (0 authorized, 1 not authorized, 2 needs authentication)
PKCHECK_CODE = {"YES": 0, "NO": 1, "AUTH_ADMIN": 2, "AUTH_SELF": 2}


def _as_user(user: str, argv: list[str], timeout: float = 90, input_text: str | None = None
             ) -> subprocess.CompletedProcess:
    """Run argv as user with a clean environment, from /, with no terminal; the whole group is killed on timeout."""
    cmd = ["runuser", "-u", user, "--", "/usr/bin/env", "-i", "PATH=/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/",
           *argv]
    proc = subprocess.Popen(cmd, cwd="/", stdin=subprocess.DEVNULL if input_text is None else subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(input_text, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"{argv} as {user} did not finish in {timeout} s: {out} {err}") from None
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _client_apply(user: str, action: tuple[str, ...]) -> dict:
    run = _as_user(user, ["/usr/bin/python3", "-I", "-c", CLIENT_APPLY, *action])
    assert run.returncode == 0 and run.stderr == "", f"the client failed as {user}: {run.stderr}"
    result = json.loads(run.stdout)
    print(f"as {user}: {' '.join(result['argv'])} -> exit {result['exit_code']}, "
          f"stdout {result['stdout'].strip()!r}, stderr {result['stderr'].strip()!r}; "
          f"app says [{result['kind']}] {result['message']}")
    return result


def _pkcheck(user: str, action_id: str) -> int:
    """polkit's answer for a process of user (the pkcheck process itself), as pkcheck's exit code."""
    return _as_user(user, ["/bin/sh", "-c", f'exec /usr/bin/pkcheck --action-id {action_id} --process "$$"'],
                    timeout=30).returncode


def _audit_records_since(offset: int) -> list[dict]:
    if not AUDIT_LOG.exists():
        return []
    return [json.loads(line) for line in AUDIT_LOG.read_bytes()[offset:].decode().splitlines() if line.strip()]


def _audit_offset() -> int:
    return AUDIT_LOG.stat().st_size if AUDIT_LOG.exists() else 0


def _processes_of(uid: int) -> list[int]:
    pids = []
    for status in Path("/proc").glob("[0-9]*/status"):
        with contextlib.suppress(OSError):
            for line in status.read_text().splitlines():
                if line.startswith("Uid:") and int(line.split()[1]) == uid:
                    pids.append(int(status.parent.name))
    return pids


@pytest.fixture(scope="module")
def throwaway_user(installed_package):
    """A new system user with no home and no login shell; deleted afterwards with every trace in /etc."""
    backups = {path: (path.read_bytes(), path.stat()) for path in ETC_BACKUPS if path.exists()}
    name = "rdpk" + secrets.token_hex(4)
    add = _run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group",
                "--comment", "rocmdesk package test", name], timeout=60)
    try:
        assert add.returncode == 0, add.stderr
        yield pwd.getpwnam(name)
    finally:
        with contextlib.suppress(KeyError):
            for pid in _processes_of(pwd.getpwnam(name).pw_uid):  # only this test's processes run as it
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        delete = _run(["userdel", name], timeout=60) if add.returncode == 0 else None
        for path, (data, st) in backups.items():
            if not path.exists() or path.read_bytes() != data:
                path.write_bytes(data)
                os.chown(path, st.st_uid, st.st_gid)
                os.chmod(path, st.st_mode & 0o7777)
                os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert delete is None or delete.returncode == 0, delete.stderr
    with pytest.raises(KeyError):
        pwd.getpwnam(name)
    for path in (Path("/etc/passwd"), Path("/etc/group"), *ETC_BACKUPS):
        if path.exists():
            assert name not in path.read_text(), f"{name} is left in {path}"


@contextlib.contextmanager
def polkit_rule(user: str, action_ids: list[str], result: str):
    """A JavaScript rule in /etc/polkit-1/rules.d giving user `result` for action_ids; removed on exit.

    polkitd (122 on Debian 12) reloads rules when the folder changes; pkcheck tells when it has.
    """
    baseline = _pkcheck(user, action_ids[0])
    path = RULES_DIR / f"00-rocmdesk-test-{user}.rules"
    assert not path.exists()
    path.write_text(RULE % (json.dumps(user), json.dumps(action_ids), result))
    try:
        path.chmod(0o644)
        assert _wait_for(lambda: _pkcheck(user, action_ids[0]) == PKCHECK_CODE[result], 15), \
            f"polkitd did not load {path}"
        yield path
    finally:
        path.unlink(missing_ok=True)
    assert _wait_for(lambda: _pkcheck(user, action_ids[0]) == baseline, 15), f"polkitd still applies {path}"


@only_system
@only_root_dpkg
def test_pkexec_authorizes_the_apps_helper_run_for_a_user_polkit_allows(installed_package, throwaway_user):
    user, uid = throwaway_user.pw_name, throwaway_user.pw_uid
    assert Path(PKEXEC).stat().st_mode & 0o4000, "pkexec has lost its setuid bit"
    assert not Path("/sys/bus/pci/devices", PROBE_PCI).exists()
    # Only the probe's polkit action is granted: the run that passes proves pkexec chose the action by
    # the policy's exec.path + argv1, and another helper action of the same program stays refused.
    with polkit_rule(user, [PROBE_POLKIT_ID], "YES"):
        offset = _audit_offset()
        result = _client_apply(user, PROBE)
        records = _audit_records_since(offset)
        other = _client_apply(user, ("set-power-cap", PROBE_PCI, "100"))
        assert _audit_records_since(offset) == records, "the helper ran for an action polkit did not grant"

    assert result["uid"] == uid and result["client"].startswith("/usr/lib/rocmdesk/rocmdesk/fixes/client.py")
    assert result["ready"] is True
    assert result["argv"] == [PKEXEC, HELPER, *PROBE]
    assert result["exit_code"] == 1, result  # the helper's own "refused", not pkexec's 126/127
    assert json.loads(result["stdout"]) == {"ok": False, "action": "reset-power-cap",
                                            "error": f"refusing: no PCI device {PROBE_PCI}"}
    assert result["kind"] == "refused" and result["message"] == f"Refusing: no PCI device {PROBE_PCI}"
    # The helper learns who asked only from pkexec's PKEXEC_UID, and writes it to its audit log: a begin
    # line before it does anything, an end line with the result.
    assert [r["event"] for r in records] == ["begin", "end"], records
    begin, end = records
    assert begin["run"] == end["run"] and begin["uid"] == end["uid"] == uid
    assert end["action"] == "reset-power-cap" and begin["args"] == end["args"] == [PROBE_PCI]
    assert end["result"] == f"error: refusing: no PCI device {PROBE_PCI}"
    assert end["changes"] == [] and end["undo_id"] is None
    assert not Path("/var/lib/rocmdesk/journal").exists()  # nothing was planned, so nothing journaled

    assert other["exit_code"] == 127 and other["stdout"] == ""
    assert other["kind"] == "not-authorized"


@only_system
@only_root_dpkg
@pytest.mark.parametrize(("rule", "says"), [
    (None, "the password was not accepted"),  # the policy's own defaults: allow_any is "no"
    ("NO", "the password was not accepted"),
    ("AUTH_ADMIN", "no polkit authentication agent is running"),  # a password is needed, nobody can ask
])
def test_pkexec_refusal_becomes_a_clear_message(installed_package, throwaway_user, rule, says):
    user = throwaway_user.pw_name
    with polkit_rule(user, [PROBE_POLKIT_ID], rule) if rule else contextlib.nullcontext():
        offset = _audit_offset()
        result = _client_apply(user, PROBE)
        assert _audit_records_since(offset) == [], "the helper ran although polkit refused"
    assert result["exit_code"] == 127 and result["stdout"] == ""
    assert result["kind"] == "not-authorized"
    assert result["message"].startswith("Not authorized: ") and says in result["message"]
    assert "Nothing was changed" in result["message"] and "Traceback" not in result["message"]


# The same Apply, with a real polkit agent: pkttyagent registered for this process on a pseudo-terminal
# answers polkit's password prompt (read from stdin, never from argv). pkexec's own terminal agent cannot be
# used: before polkit 124 its answer fails with "No session for cookie" (polkit-org/polkit#423).
CLIENT_APPLY_WITH_AGENT = r"""
import json, os, pty, select, subprocess, sys, termios, threading, time
sys.path[:0] = ["/usr/lib/rocmdesk/vendor", "/usr/lib/rocmdesk"]
from rocmdesk.diagnosis.target import live_target
from rocmdesk.fixes import client
password = sys.stdin.readline().rstrip("\n")
notify_r, notify_w = os.pipe()
os.set_inheritable(notify_w, True)
agent, tty = pty.fork()
if agent == 0:
    os.execv("/usr/bin/pkttyagent", ["pkttyagent", "--process", str(os.getppid()), "--notify-fd", str(notify_w)])
os.close(notify_w)
os.read(notify_r, 1)  # pkttyagent closes the fd once it is registered
status = client.helper_status()
argv = client.pkexec_argv(sys.argv[1:], status.pkexec or client.PKEXEC_CANDIDATES[0], target=live_target())
done = {}
def apply():
    done["proc"] = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
worker = threading.Thread(target=apply)
worker.start()
transcript, answered = b"", False
while worker.is_alive():
    if select.select([tty], [], [], 0.1)[0]:
        try:
            transcript += os.read(tty, 4096)
        except OSError:
            break
    if not answered and transcript.endswith(b"Password: "):
        deadline = time.monotonic() + 5  # answer once echo is off: the agent flushes earlier input
        while termios.tcgetattr(tty)[3] & termios.ECHO and time.monotonic() < deadline:
            time.sleep(0.02)
        os.write(tty, password.encode() + b"\n")
        answered = True
worker.join()
time.sleep(0.2)
while select.select([tty], [], [], 0)[0]:
    try:
        chunk = os.read(tty, 4096)
    except OSError:
        break
    if not chunk:
        break
    transcript += chunk
os.kill(agent, 15)
os.waitpid(agent, 0)
proc = done["proc"]
outcome = client.outcome_from_exit(proc.returncode, proc.stdout, proc.stderr)
print(json.dumps({"argv": argv, "exit_code": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr,
                  "kind": outcome.kind.value, "message": outcome.message, "answered": answered,
                  "agent": transcript.decode(errors="replace")}))
"""


@only_system
@only_root_dpkg
@pytest.mark.skipif(shutil.which("pkttyagent") is None, reason="pkttyagent (polkitd) not installed")
def test_pkexec_asks_a_polkit_agent_for_the_users_password(installed_package, throwaway_user):
    user, uid = throwaway_user.pw_name, throwaway_user.pw_uid
    password = secrets.token_urlsafe(12)
    setpw = subprocess.run(["chpasswd"], input=f"{user}:{password}\n", capture_output=True, text=True, timeout=60)
    assert setpw.returncode == 0, setpw.stderr
    runs = {}
    with polkit_rule(user, [PROBE_POLKIT_ID], "AUTH_SELF"):
        for label, answer in (("right", password), ("wrong", password + "x")):
            offset = _audit_offset()
            run = _as_user(user, ["/usr/bin/python3", "-I", "-c", CLIENT_APPLY_WITH_AGENT, *PROBE],
                           input_text=answer + "\n")
            assert run.returncode == 0 and run.stderr == "", run.stderr
            runs[label] = (json.loads(run.stdout), _audit_records_since(offset))
            result = runs[label][0]
            print(f"{label} password: exit {result['exit_code']}, app says [{result['kind']}] {result['message']}; "
                  f"agent showed {result['agent']!r}")

    right, records = runs["right"]
    assert right["answered"] and "AUTHENTICATING FOR org.rocmdesk.helper.reset-power-cap" in right["agent"]
    assert "Authentication is required to reset the power limit of a GPU" in right["agent"]  # the policy's text
    assert "AUTHENTICATION COMPLETE" in right["agent"]
    assert right["exit_code"] == 1 and json.loads(right["stdout"])["error"] == f"refusing: no PCI device {PROBE_PCI}"
    assert right["kind"] == "refused"
    # One run of the helper: its begin line and its end line, both naming the user who typed the password.
    assert [(r["event"], r["uid"], r["action"]) for r in records] == [("begin", uid, "reset-power-cap"),
                                                                      ("end", uid, "reset-power-cap")], records

    wrong, records = runs["wrong"]
    assert wrong["answered"] and "AUTHENTICATION FAILED" in wrong["agent"]
    assert wrong["exit_code"] == 127 and wrong["stdout"] == "" and records == []
    assert wrong["kind"] == "not-authorized" and "the password was not accepted" in wrong["message"]


# -- the installed window, driven entry by entry with the distribution's Python packages --------------------------

DRIVER = Path(__file__).with_name("installed_window_driver.py")
# What the .deb takes from the distribution (python3-*), and what it vendors; the driver reports where each came from.
DISTRIBUTION_MODULES = {"platformdirs": "python3-platformdirs", "zstandard": "python3-zstandard",
                        "psutil": "python3-psutil", "yaml": "python3-yaml", "pyudev": "python3-pyudev",
                        "packaging": "python3-packaging", "lz4": "python3-lz4",
                        "prometheus_client": "python3-prometheus-client"}
VENDORED_MODULES = ("PySide6", "shiboken6", "pyqtgraph", "numpy")
# Qt's offscreen platform cannot raise a window, grab the keyboard or take size hints: said, harmless.
OFFSCREEN_NOTES = ("This plugin does not support",)


def _launcher_sys_path() -> list[str]:
    """The folders /usr/bin/rocmdesk puts first on sys.path, read from the launcher itself."""
    text = Path("/usr/bin/rocmdesk").read_text()
    assert "exec /usr/bin/python3 -I -c " in text, text
    prefix = re.search(r"sys\.path\[:0\] = (\[[^\]]*\])", text)
    assert prefix, text
    return json.loads(prefix.group(1))


def _distribution_version(package: str) -> str:
    shown = _run(["dpkg-query", "-W", "-f", "${Version}", package], timeout=30)
    assert shown.returncode == 0, f"{package} is not installed: {shown.stderr}"
    return shown.stdout.strip()


@only_system
@only_root_dpkg
def test_installed_window_drives_every_action_with_the_distributions_packages(installed_package, tmp_path):
    """Issue 10, item 6: every toolbar action and menu entry of the installed window, in demo mode, on a bundle
    and on a root folder, with Debian's python3-* packages (platformdirs 2.6 on Debian 12); see the driver."""
    from tests.support.scenarios import clean_workstation

    home, out = tmp_path / "home", tmp_path / "out"
    (home / ".config").mkdir(parents=True)
    out.mkdir()
    # xdg-user-dirs' file: platformdirs 2.6 has no user_pictures_dir, the app reads this instead
    (home / ".config" / "user-dirs.dirs").write_text('XDG_PICTURES_DIR="$HOME/Shots"\n')
    root = clean_workstation(tmp_path / "root")  # its initramfs is zstd-compressed
    prefix = _launcher_sys_path()
    config = {"sys_path": prefix, "out": str(out), "root": str(root), "pictures": str(home / "Shots")}
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "QT_QPA_PLATFORM": "offscreen",
           "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    (tmp_path / "run").mkdir(mode=0o700)
    started = time.monotonic()
    run = _run(["/usr/bin/python3", "-I", str(DRIVER), json.dumps(config)], timeout=240, env=env, cwd="/")
    seconds = time.monotonic() - started
    assert run.returncode == 0 and run.stdout.strip(), f"exit {run.returncode}: {run.stderr[-6000:]}"
    result = json.loads(run.stdout.strip().splitlines()[-1])
    print(f"driver: {len(result['checked'])} checks over {len(result['entries'])} entries of "
          f"{len(result['windows'])} windows in {seconds:.1f} s; windows {result['windows']}")
    print("modules: " + ", ".join(f"{n} {m['version']} ({m['file']})" for n, m in result["modules"].items()))

    # the interpreter saw exactly the launcher's sys.path: its two folders, then the system's own
    system = json.loads(_run(["/usr/bin/python3", "-I", "-c", "import json, sys; print(json.dumps(sys.path))"],
                             timeout=30, env=env, cwd="/").stdout)
    assert result["sys_path"] == prefix + system
    for name, package in DISTRIBUTION_MODULES.items():
        module = result["modules"][name]
        assert module["file"].startswith("/usr/lib/python3/dist-packages/"), (name, module)
        assert _distribution_version(package).startswith(module["version"].split("+")[0]), (name, module)
    for name in VENDORED_MODULES:
        assert result["modules"][name]["file"].startswith("/usr/lib/rocmdesk/vendor/"), result["modules"][name]
    assert result["modules"]["rocmdesk"]["file"] == "/usr/lib/rocmdesk/rocmdesk/__init__.py"
    assert result["modules"]["platformdirs"]["imported_by_app"] and result["modules"]["zstandard"]["imported_by_app"]

    # every entry was driven and did what it says; nothing was logged, raised or reported by Qt as an error
    assert result["failures"] == [], "\n".join(result["failures"])
    assert result["uncaught"] == [], "\n".join(result["uncaught"])
    assert result["log"] == [], result["log"]
    assert not [m for m in result["qt_messages"] if not any(note in m for note in OFFSCREEN_NOTES)], \
        result["qt_messages"]
    assert "Traceback" not in run.stderr, run.stderr[-6000:]
    labels = {c["entry"] for c in result["checked"]}
    assert [label for label in labels if label.startswith("window shortcut") and label.endswith(": Quit")], labels
    for expected in ("toolbar: Screenshot", "graphs: Export CSV…",
                     "demo report: Save report… as .html", "demo report: Save report… as .md",
                     "demo report: Copy as Markdown", "demo report: Capture bundle…",
                     "banner: Open snapshot… (snapshot)", "banner: Open root folder… (root folder)",
                     "root folder diagnosis reads the zstd initramfs"):
        assert expected in labels, f"{expected} was not driven: {sorted(labels)}"
    assert {e for e in result["entries"] if e.startswith("menu Help ▸ Demo machine")}, result["entries"]
    assert {e for e in result["entries"] if e.startswith("toolbar Theme")}, result["entries"]

    # what it left on disk, read back here: a PNG per tab in the XDG pictures folder, CSV, reports, bundles
    shots = sorted((home / "Shots").glob("rocmdesk-*.png"))
    assert {s.name.split("-")[1] for s in shots} >= {"overview", "graphs", "processes", "diagnosis", "tuning",
                                                    "report"}, shots
    assert all(s.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for s in shots)
    rows = (out / "history.csv").read_text().splitlines()
    assert rows[0].startswith("time_iso,timestamp,") and len(rows) >= 2
    assert (out / "demo-report.html").read_text().lower().startswith("<!doctype html")
    assert (out / "demo-report.md").read_text().startswith("## rocmdesk report")
    assert (out / "demo-bundle.tar.gz").stat().st_size > 1000
    assert (home / ".config" / "rocmdesk" / "settings.json").is_file()  # Quit saved the settings
    assert seconds < 120, f"the driver took {seconds:.0f} s"
