"""The negative list: every bad input is refused with a clear error and changes no file."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest

from tests.unit.fixes.helper_trees import (
    CALLER_UID,
    GPU_PCI,
    HELPER_FILE,
    OTHER_PCI,
    RecordingRunner,
    build_host,
    load_helper,
    snapshot,
)

H = load_helper()
BL = "/etc/modprobe.d/blacklist-amdgpu.conf"


@pytest.fixture
def host(tmp_path):
    return build_host(tmp_path / "root")


def ctx_for(root, uid=CALLER_UID, runner=None):
    return H.Context(str(root), caller_uid=uid, runner=runner or RecordingRunner(), kernel_release="6.8.0-1",
                     use_syslog=False)


BAD_ARGUMENTS = [
    # (id, action, args, words expected in the error)
    ("unknown-action", "rm-rf", ["/"], "unknown action"),
    ("empty-action", "", [], "unknown action"),
    ("action-with-newline", "undo\n", ["x"], "unknown action"),
    ("too-few", "set-power-cap", [GPU_PCI], "takes 2 argument(s), got 1"),
    ("too-many", "reset-tuning", [GPU_PCI, "extra"], "takes 1 argument(s), got 2"),
    ("none-expected", "initramfs-regenerate", ["-k", "all"], "takes 0 argument(s)"),
    ("dotdot", "modprobe-unblacklist-amdgpu", ["/etc/modprobe.d/../shadow"], "invalid FILE"),
    ("dotdot-conf", "modprobe-unblacklist-amdgpu", ["/etc/modprobe.d/../../etc/x.conf"], "invalid FILE"),
    ("usr-lib", "modprobe-unblacklist-amdgpu", ["/usr/lib/modprobe.d/blacklist.conf"], "invalid FILE"),
    ("not-conf", "modprobe-unblacklist-amdgpu", ["/etc/modprobe.d/blacklist-amdgpu"], "invalid FILE"),
    ("subfolder", "xorg-disable-conf", ["/etc/X11/xorg.conf.d/a/b.conf"], "invalid FILE"),
    ("newline", "modprobe-unblacklist-amdgpu", [BL + "\n"], "invalid FILE"),
    ("newline-inside", "set-performance-level", [GPU_PCI, "high\nlow"], "invalid LEVEL"),
    ("nul", "modprobe-unblacklist-amdgpu", ["/etc/modprobe.d/a\x00.conf"], "invalid FILE"),
    ("nul-watts", "set-power-cap", [GPU_PCI, "300\x00"], "invalid WATTS"),
    ("arabic-digits", "set-power-cap", [GPU_PCI, "\u0663\u0660\u0660"], "invalid WATTS"),
    ("fullwidth-digits", "set-power-cap", [GPU_PCI, "\uff13\uff10\uff10"], "invalid WATTS"),
    ("devanagari-index", "set-power-profile", [GPU_PCI, "\u0665"], "invalid INDEX"),
    ("plus-sign", "set-power-cap", [GPU_PCI, "+300"], "invalid WATTS"),
    ("minus-sign", "set-power-cap", [GPU_PCI, "-300"], "invalid WATTS"),
    ("underscore", "set-power-cap", [GPU_PCI, "1_000"], "invalid WATTS"),
    ("leading-space", "set-power-cap", [GPU_PCI, " 300"], "invalid WATTS"),
    ("trailing-space", "set-power-cap", [GPU_PCI, "300 "], "invalid WATTS"),
    ("leading-zero", "set-power-cap", [GPU_PCI, "0300"], "invalid WATTS"),
    ("hex", "set-power-cap", [GPU_PCI, "0x12c"], "invalid WATTS"),
    ("fraction", "set-power-cap", [GPU_PCI, "300.5"], "invalid WATTS"),
    ("overflow", "set-power-cap", [GPU_PCI, "9" * 40], "invalid WATTS"),
    ("overflow-index", "set-power-profile", [GPU_PCI, "18446744073709551617"], "invalid INDEX"),
    ("uppercase-pci", "set-power-cap", ["0000:03:00.0".upper().replace("0000", "000A"), "300"], "invalid PCI"),
    ("pci-path", "reset-tuning", ["0000:03:00.0/../../../etc"], "invalid PCI"),
    ("pci-short", "reset-tuning", ["03:00.0"], "invalid PCI"),
    ("bad-level", "set-performance-level", [GPU_PCI, "turbo"], "invalid LEVEL"),
    ("bad-groups", "add-user-to-groups", ["render,wheel"], "invalid GROUPS"),
    ("dup-groups", "add-user-to-groups", ["video,video"], "invalid GROUPS"),
    ("bad-undo-id", "undo", ["../../etc/shadow"], "invalid UNDO_ID"),
    ("out-of-range-high", "set-power-cap", [GPU_PCI, "400"], "outside this GPU's range"),
    ("out-of-range-low", "set-power-cap", [GPU_PCI, "100"], "outside this GPU's range"),
    ("non-amdgpu", "set-power-cap", [OTHER_PCI, "100"], "not amdgpu"),
    ("no-device", "reset-tuning", ["0000:7f:00.0"], "no PCI device"),
    ("missing-file", "modprobe-unblacklist-amdgpu", ["/etc/modprobe.d/nothing.conf"], "does not exist"),
    ("not-text", "set-power-cap", [GPU_PCI, 300], "not text"),
]


@pytest.mark.parametrize(("action", "args", "words"), [c[1:] for c in BAD_ARGUMENTS], ids=[c[0] for c in BAD_ARGUMENTS])
def test_bad_arguments_change_nothing(host, action, args, words):
    runner = RecordingRunner()
    before = snapshot(host, "etc", "sys")
    result = H.apply_action(ctx_for(host, runner=runner), action, args)
    assert result["ok"] is False
    assert words in result["error"]
    assert snapshot(host, "etc", "sys") == before
    assert runner.calls == []
    assert not (host / "var/lib/rocmdesk/backups").exists() or not any((host / "var/lib/rocmdesk/backups").iterdir())
    assert not (host / "var/lib/rocmdesk/journal").exists()
    assert result["exit_code"] in (1, 2)


def test_error_messages_escape_control_characters(host):
    result = H.apply_action(ctx_for(host), "set-performance-level", [GPU_PCI, "high\nlow"])
    assert "\n" not in result["error"] and "\\n" in result["error"]


def _refused(host, action, args, words):
    before = snapshot(host, "etc", "sys")
    result = H.apply_action(ctx_for(host), action, args)
    assert not result["ok"] and words in result["error"], result
    assert snapshot(host, "etc", "sys") == before


def test_symlinked_target_is_refused(host):
    os.symlink("/etc/shadow", host / "etc/modprobe.d/evil.conf")
    _refused(host, "modprobe-unblacklist-amdgpu", ["/etc/modprobe.d/evil.conf"], "symbolic link")


def test_symlinked_target_inside_root_is_refused(host):
    os.symlink("blacklist-amdgpu.conf", host / "etc/modprobe.d/alias.conf")
    _refused(host, "modprobe-unblacklist-amdgpu", ["/etc/modprobe.d/alias.conf"], "symbolic link")


def test_symlinked_parent_is_refused(host, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (host / "etc/modprobe.d").rename(elsewhere)
    os.symlink(elsewhere, host / "etc/modprobe.d")
    _refused(host, "modprobe-unblacklist-amdgpu", [BL], "is a symbolic link")
    assert (elsewhere / "blacklist-amdgpu.conf").read_text().startswith("# keep")


def test_symlinked_xorg_folder_is_refused(host, tmp_path):
    os.rename(host / "etc/X11/xorg.conf.d", tmp_path / "real.d")
    os.symlink(tmp_path / "real.d", host / "etc/X11/xorg.conf.d")
    _refused(host, "xorg-disable-conf", ["/etc/X11/xorg.conf.d/20-radeon.conf"], "symbolic link")


def test_file_writable_by_others_is_refused(host):
    os.chmod(host / BL.lstrip("/"), 0o666)
    _refused(host, "modprobe-unblacklist-amdgpu", [BL], "writable by every user")


def test_folder_writable_by_others_is_refused(host):
    os.chmod(host / "etc/modprobe.d", 0o777)
    _refused(host, "modprobe-unblacklist-amdgpu", [BL], "writable by every user")


def test_device_that_resolves_outside_sys_devices_is_refused(host, tmp_path):
    fake = tmp_path / "fake-device"
    fake.mkdir()
    os.symlink(host / "sys/bus/pci/drivers/amdgpu", fake / "driver")
    os.symlink(fake, host / "sys/bus/pci/devices/0000:09:00.0")
    _refused(host, "set-performance-level", ["0000:09:00.0", "high"], "does not resolve under /sys/devices")


def test_symlinked_sysfs_attribute_is_not_followed(host, tmp_path):
    level = next(host.glob(f"sys/devices/*/*/{GPU_PCI}/power_dpm_force_performance_level"))
    victim = tmp_path / "victim"
    victim.write_text("auto\n")
    level.unlink()
    os.symlink(victim, level)
    result = H.apply_action(ctx_for(host), "set-performance-level", [GPU_PCI, "high"])
    assert not result["ok"]
    assert victim.read_text() == "auto\n"


def test_missing_pkexec_uid_is_refused(host):
    before = snapshot(host, "etc", "sys")
    result, code = H.cli(["set-performance-level", GPU_PCI, "high"], {}, 0, 0, lambda uid: ctx_for(host, uid))
    assert code == 2 and "PKEXEC_UID is not set" in result["error"]
    assert snapshot(host, "etc", "sys") == before
    assert "PKEXEC_UID" in (host / "var/log/rocmdesk/audit.log").read_text(), "the refusal is audited"


@pytest.mark.parametrize("value", ["", "abc", "-1", "+1000", "\u0661\u0660", "99999999999", "1000\n"])
def test_garbage_pkexec_uid_is_refused(host, value):
    result, code = H.cli(["reset-tuning", GPU_PCI], {"PKEXEC_UID": value}, 0, 0, lambda uid: ctx_for(host, uid))
    assert code == 2 and "PKEXEC_UID" in result["error"]


def test_caller_comes_from_pkexec_uid_only(host):
    seen = []

    def make(uid):
        seen.append(uid)
        return ctx_for(host, uid)

    result, code = H.cli(["add-user-to-groups", "render"], {"PKEXEC_UID": "1000", "USER": "root", "SUDO_UID": "0"},
                         0, 0, make)
    assert code == 0 and result["changes"][0]["user"] == "alice" and seen == [1000]


def test_not_root_without_preview_is_refused(host):
    result, code = H.cli(["reset-tuning", GPU_PCI], {"PKEXEC_UID": "1000"}, 1000, 1000, lambda uid: ctx_for(host))
    assert code == 2 and "must run as root through pkexec" in result["error"]


def test_unprivileged_preview_uses_the_real_uid(host):
    seen = []

    def make(uid):
        seen.append(uid)
        return ctx_for(host, uid)

    result, code = H.cli(["--preview", "add-user-to-groups", "render,video"], {"PKEXEC_UID": "0"}, 1000, 1000, make)
    assert code == 0 and seen == [1000] and result["preview"] is True


@pytest.mark.parametrize(("action", "args"), [(c[1], c[2]) for c in BAD_ARGUMENTS if c[0] != "not-text"])
def test_exit_codes_are_never_pkexecs(host, action, args):
    _result, code = H.cli([action, *args], {"PKEXEC_UID": "1000"}, 0, 0, lambda uid: ctx_for(host, uid))
    assert code not in (0, 126, 127)


def test_real_helper_file_prints_json_and_refuses_non_root(tmp_path):
    """Run the actual file as an unprivileged user (nothing it does can reach the real system)."""
    if os.geteuid() != 0 or not os.path.exists("/usr/bin/setpriv"):
        pytest.skip("needs root and setpriv to drop to an unprivileged user")
    import json

    base = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(HELPER_FILE)]
    env = {"PATH": "/usr/bin:/bin", "PKEXEC_UID": "1000"}
    for argv, code, words in (([], 2, "usage"), (["reset-tuning", GPU_PCI], 2, "must run as root"),
                              (["--preview", "bogus"], 2, "unknown action")):
        proc = subprocess.run(base + argv, capture_output=True, text=True, env=env, timeout=30, cwd="/")
        assert proc.returncode == code, proc.stderr
        assert words in json.loads(proc.stdout)["error"]


def test_helper_is_standalone_stdlib_only():
    source = HELPER_FILE.read_text()
    assert source.splitlines()[0] == "#!/usr/bin/python3 -I"
    assert os.access(HELPER_FILE, os.X_OK)
    tree = ast.parse(source)
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert "rocmdesk" not in imported
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported - set(sys.stdlib_module_names)
    main = source[source.index("def main()"):]
    assert "os.umask(0o022)" in main and 'Context("/"' in main
    assert "environ.get(\"ROOT\")" not in source and "shell=True" not in source
