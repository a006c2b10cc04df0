"""Every helper action, run in-process on a temporary root: preview == run, undo restores bytes."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from tests.unit.fixes.helper_trees import (
    BLACKLIST_TEXT,
    CALLER_UID,
    GPU_PCI,
    RecordingRunner,
    build_host,
    load_helper,
    settle_sysfs,
    snapshot,
)

H = load_helper()
KREL = "6.8.0-45-generic"
WATCHED = ("etc", "sys")


@pytest.fixture
def host(tmp_path):
    return build_host(tmp_path / "root")


def make_ctx(root, runner=None, uid=CALLER_UID, fault=None):
    return H.Context(str(root), caller_uid=uid, runner=runner or RecordingRunner(), kernel_release=KREL,
                     fault=fault, use_syslog=False)


def apply(ctx, action, *args):
    result = H.apply_action(ctx, action, list(args))
    settle_sysfs(Path(ctx.root))
    return result


def sysfs(root, pci, name):
    hits = list(root.glob(f"sys/devices/*/*/{pci}/{name}")) or list(root.glob(f"sys/devices/*/*/{pci}/hwmon/*/{name}"))
    return hits[0]


SAFE_FIXES = [
    ("modprobe-unblacklist-amdgpu", ["/etc/modprobe.d/blacklist-amdgpu.conf"]),
    ("xorg-disable-conf", ["/etc/X11/xorg.conf"]),
    ("xorg-disable-conf", ["/etc/X11/xorg.conf.d/20-radeon.conf"]),
    ("add-user-to-groups", ["render,video"]),
    ("initramfs-add-amdgpu", []),
    ("set-power-cap", [GPU_PCI, "300"]),
    ("set-performance-level", [GPU_PCI, "high"]),
    ("set-power-profile", [GPU_PCI, "5"]),
]


@pytest.mark.parametrize(("action", "args"), SAFE_FIXES, ids=[a + "-" + "-".join(x)[-12:] for a, x in SAFE_FIXES])
def test_preview_is_exactly_what_runs_and_undo_restores_bytes(host, action, args):
    runner = RecordingRunner()
    ctx = make_ctx(host, runner)
    before = snapshot(host, *WATCHED)
    everything_before = snapshot(host, "etc", "sys", "usr")
    preview = H.preview_action(ctx, action, args)
    assert preview["ok"], preview
    assert snapshot(host, "etc", "sys", "usr") == everything_before
    assert not (host / "var").exists(), "a preview must not write anything"
    assert preview["changes"] and preview["undo"]
    assert runner.calls == []

    result = apply(ctx, action, *args)
    assert result["ok"], result
    assert result["changes"] == preview["changes"]
    assert result["undo_id"]
    if action != "add-user-to-groups":  # usermod is recorded here, not run
        assert snapshot(host, *WATCHED) != before
    commands = [c["argv"] for c in result["changes"] if c["kind"] in ("command", "groups")]
    assert runner.calls == commands

    undo = apply(ctx, "undo", result["undo_id"])
    assert undo["ok"], undo
    assert snapshot(host, *WATCHED) == before
    again = H.apply_action(ctx, "undo", [result["undo_id"]])
    assert not again["ok"] and "already undone" in again["error"]


def test_unblacklist_comments_out_only_the_offending_lines(host):
    ctx = make_ctx(host)
    result = apply(ctx, "modprobe-unblacklist-amdgpu", "/etc/modprobe.d/blacklist-amdgpu.conf")
    text = (host / "etc/modprobe.d/blacklist-amdgpu.conf").read_text()
    assert text == ("# keep the old card quiet\n# disabled by rocmdesk: blacklist amdgpu\n"
                    "options amdgpu si_support=1\n# disabled by rocmdesk: install amdgpu /bin/false\n")
    assert result["changes"][1]["argv"] == ["/usr/sbin/update-initramfs", "-u", "-k", KREL]
    assert "-blacklist amdgpu" in result["changes"][0]["diff"]
    backups = list((host / "var/lib/rocmdesk/backups").rglob("*blacklist-amdgpu.conf"))
    assert [b.read_bytes() for b in backups] == [BLACKLIST_TEXT]
    journal = json.loads((host / f"var/lib/rocmdesk/journal/{result['undo_id']}.json").read_text())
    assert journal["status"] == "applied" and journal["uid"] == CALLER_UID


def test_unblacklist_refuses_a_file_without_blacklist(host):
    result = apply(make_ctx(host), "modprobe-unblacklist-amdgpu", "/etc/modprobe.d/alsa-base.conf")
    assert not result["ok"] and "no line that blacklists amdgpu" in result["error"]


def test_xorg_disable_renames_aside(host):
    result = apply(make_ctx(host), "xorg-disable-conf", "/etc/X11/xorg.conf")
    assert not (host / "etc/X11/xorg.conf").exists()
    assert (host / "etc/X11/xorg.conf.rocmdesk-disabled").read_bytes().startswith(b'Section "Device"')
    assert result["changes"][0]["to"] == "/etc/X11/xorg.conf.rocmdesk-disabled"


@pytest.mark.parametrize(("generator", "config", "expected", "argv"), [
    ("initramfs-tools", "etc/initramfs-tools/modules", b"# List of modules\n# raid1\namdgpu\n",
     ["/usr/sbin/update-initramfs", "-u", "-k", KREL]),
    ("dracut", "etc/dracut.conf.d/amdgpu.conf", b'force_drivers+=" amdgpu "\n',
     ["/usr/bin/dracut", "-f", "--kver", KREL]),
    ("mkinitcpio", "etc/mkinitcpio.conf", b"# vim:set ft=sh\nMODULES=(btrfs amdgpu)\nBINARIES=()\nHOOKS=(base udev)\n",
     ["/usr/bin/mkinitcpio", "-P"]),
])
def test_initramfs_add_per_generator(tmp_path, generator, config, expected, argv):
    host = build_host(tmp_path / "root", generator=generator)
    runner = RecordingRunner()
    ctx = make_ctx(host, runner)
    before = snapshot(host, "etc")
    result = apply(ctx, "initramfs-add-amdgpu")
    assert result["ok"], result
    assert (host / config).read_bytes() == expected
    assert runner.calls == [argv], "the initramfs is rebuilt exactly once"
    again = apply(ctx, "initramfs-add-amdgpu")
    assert again["ok"] and [c["kind"] for c in again["changes"]] == ["command"], "adding twice edits nothing"
    assert apply(ctx, "undo", result["undo_id"])["ok"]
    assert snapshot(host, "etc") == before
    assert runner.calls[-1] == argv, "undo rebuilds the initramfs again"
    regenerate = apply(ctx, "initramfs-regenerate")
    assert regenerate["ok"] and regenerate["undo_id"] is None and runner.calls[-1] == argv


def test_unknown_generator_is_refused_clearly(tmp_path):
    host = build_host(tmp_path / "root", generator="none")
    for action, args in (("initramfs-add-amdgpu", []), ("initramfs-regenerate", []),
                         ("modprobe-unblacklist-amdgpu", ["/etc/modprobe.d/blacklist-amdgpu.conf"])):
        before = snapshot(host, "etc")
        result = apply(make_ctx(host), action, *args)
        assert not result["ok"] and "no supported initramfs generator" in result["error"]
        assert snapshot(host, "etc") == before


def test_two_generators_are_refused(tmp_path):
    host = build_host(tmp_path / "root", generator="initramfs-tools")
    (host / "usr/bin").mkdir(parents=True, exist_ok=True)
    (host / "usr/bin/dracut").write_text("#!/bin/sh\n")
    os.chmod(host / "usr/bin/dracut", 0o755)
    result = apply(make_ctx(host), "initramfs-regenerate")
    assert not result["ok"] and "more than one initramfs generator" in result["error"]


def test_mkinitcpio_line_it_cannot_parse_is_refused(tmp_path):
    host = build_host(tmp_path / "root", generator="mkinitcpio")
    (host / "etc/mkinitcpio.conf").write_text('MODULES=("$(evil)")\n')
    result = apply(make_ctx(host), "initramfs-add-amdgpu")
    assert not result["ok"] and "cannot edit safely" in result["error"]


def test_groups_only_for_the_caller_and_only_missing_ones(host):
    runner = RecordingRunner()
    (host / "etc/group").write_text("video:x:44:alice\nrender:x:105:\n")
    result = apply(make_ctx(host, runner), "add-user-to-groups", "render,video")
    assert runner.calls == [["/usr/sbin/usermod", "-a", "-G", "render", "alice"]]
    (host / "etc/group").write_text("video:x:44:alice\nrender:x:105:alice\n")  # what usermod did
    apply(make_ctx(host, runner), "undo", result["undo_id"])
    assert runner.calls[-1] == ["/usr/bin/gpasswd", "-d", "alice", "render"]
    (host / "etc/group").write_text("video:x:44:alice\nrender:x:105:alice\n")
    nothing = apply(make_ctx(host, runner), "add-user-to-groups", "render,video")
    assert nothing["ok"] and nothing["changes"] == [] and nothing["undo_id"] is None


def test_groups_refused_for_root_unknown_uid_and_missing_group(host):
    assert "caller is root" in apply(make_ctx(host, uid=0), "add-user-to-groups", "render,video")["error"]
    assert "not a local user" in apply(make_ctx(host, uid=4242), "add-user-to-groups", "video")["error"]
    (host / "etc/group").write_text("video:x:44:\n")
    assert "do not exist" in apply(make_ctx(host), "add-user-to-groups", "render,video")["error"]


def test_power_cap_bounds_are_inclusive_and_written_in_microwatts(host):
    ctx = make_ctx(host)
    cap = sysfs(host, GPU_PCI, "power1_cap")
    assert apply(ctx, "set-power-cap", GPU_PCI, "261")["ok"]
    assert cap.read_text() == "261000000\n"
    assert apply(ctx, "set-power-cap", GPU_PCI, "333")["ok"]
    assert cap.read_text() == "333000000\n"
    for watts in ("260", "334", "0"):
        result = apply(ctx, "set-power-cap", GPU_PCI, watts)
        assert not result["ok"] and "outside this GPU's range 261 W to 333 W" in result["error"]
    assert cap.read_text() == "333000000\n", "refused, not clamped"


def test_power_cap_range_is_read_just_before_writing(host):
    """A range change between plan and write (re-read inside perform) still refuses."""
    cap_max = sysfs(host, GPU_PCI, "power1_cap_max")
    ctx = make_ctx(host)
    changes = H.plan_action(ctx, "set-power-cap", (GPU_PCI, "330"))
    cap_max.write_text("300000000\n")
    with pytest.raises(H.HelperError, match="outside"):
        H.perform(ctx, changes[0], H.prepare(ctx, changes[0], "x", 0))
    assert sysfs(host, GPU_PCI, "power1_cap").read_text() == "290000000\n"


def test_reset_power_cap_uses_default_else_the_saved_value(host):
    ctx = make_ctx(host)
    cap = sysfs(host, GPU_PCI, "power1_cap")
    apply(ctx, "set-power-cap", GPU_PCI, "300")
    assert apply(ctx, "reset-power-cap", GPU_PCI)["ok"] and cap.read_text() == "290000000\n"
    sysfs(host, GPU_PCI, "power1_cap_default").unlink()
    cap.write_text("280000000\n")
    apply(ctx, "set-power-cap", GPU_PCI, "300")
    result = apply(ctx, "reset-power-cap", GPU_PCI)
    assert result["ok"] and cap.read_text() == "290000000\n", "the first value rocmdesk replaced"


def test_reset_power_cap_without_default_or_saved_value_refuses(host):
    sysfs(host, GPU_PCI, "power1_cap_default").unlink()
    result = apply(make_ctx(host), "reset-power-cap", GPU_PCI)
    assert not result["ok"] and "no power1_cap_default" in result["error"]


def test_power_profile_sets_manual_first_and_only_offers_the_gpus_table(host):
    ctx = make_ctx(host)
    result = apply(ctx, "set-power-profile", GPU_PCI, "5")
    assert [(c["attribute"], c["old"], c["new"]) for c in result["changes"]] == [
        ("power_dpm_force_performance_level", "auto", "manual"), ("pp_power_profile_mode", "0", "5")]
    assert H.parse_profiles(sysfs(host, GPU_PCI, "pp_power_profile_mode").read_text())[1] == 5
    missing = apply(ctx, "set-power-profile", GPU_PCI, "9")
    assert not missing["ok"] and "has no power profile 9" in missing["error"]
    custom = apply(ctx, "set-power-profile", GPU_PCI, "6")
    assert not custom["ok"] and "CUSTOM" in custom["error"]


def test_reset_tuning_restores_everything(host):
    ctx = make_ctx(host)
    apply(ctx, "set-power-cap", GPU_PCI, "300")
    apply(ctx, "set-power-profile", GPU_PCI, "1")
    result = apply(ctx, "reset-tuning", GPU_PCI)
    assert result["ok"], result
    assert sysfs(host, GPU_PCI, "power1_cap").read_text() == "290000000\n"
    assert sysfs(host, GPU_PCI, "power_dpm_force_performance_level").read_text() == "auto\n"
    assert H.parse_profiles(sysfs(host, GPU_PCI, "pp_power_profile_mode").read_text())[1] == 0
    assert apply(ctx, "reset-tuning", GPU_PCI)["changes"] == []


def test_failure_between_backup_and_rename_leaves_the_original(host):
    target = host / "etc/modprobe.d/blacklist-amdgpu.conf"

    def boom(point, path):
        if point == "before-rename" and str(path).endswith("blacklist-amdgpu.conf") and "backups" not in str(path):
            raise OSError(5, "simulated I/O error")

    runner = RecordingRunner()
    result = apply(make_ctx(host, runner, fault=boom), "modprobe-unblacklist-amdgpu", str(target)[len(str(host)):])
    assert not result["ok"] and "simulated" in result["error"]
    assert target.read_bytes() == BLACKLIST_TEXT
    assert [p.name for p in target.parent.iterdir() if p.name.startswith(".")] == [], "no temporary file left"
    assert list((host / "var/lib/rocmdesk/backups").rglob("*blacklist-amdgpu.conf")), "the backup was taken first"
    assert runner.calls == [], "nothing after the failed step ran"
    journal = [json.loads(p.read_text()) for p in (host / "var/lib/rocmdesk/journal").glob("*.json")]
    assert [j["status"] for j in journal] == ["rolled-back"]


def test_failed_regeneration_rolls_the_file_back(host):
    runner = RecordingRunner(fail="update-initramfs")
    result = apply(make_ctx(host, runner), "modprobe-unblacklist-amdgpu", "/etc/modprobe.d/blacklist-amdgpu.conf")
    assert not result["ok"]
    assert "update-initramfs" in result["error"] and "put back" in result["error"]
    assert (host / "etc/modprobe.d/blacklist-amdgpu.conf").read_bytes() == BLACKLIST_TEXT


def test_undo_refuses_when_the_file_changed_since(host):
    ctx = make_ctx(host)
    result = apply(ctx, "modprobe-unblacklist-amdgpu", "/etc/modprobe.d/blacklist-amdgpu.conf")
    path = host / "etc/modprobe.d/blacklist-amdgpu.conf"
    path.write_text(path.read_text() + "options amdgpu dc=1\n")
    undo = apply(ctx, "undo", result["undo_id"])
    assert not undo["ok"] and "changed after rocmdesk edited it" in undo["error"]
    assert path.read_text().endswith("dc=1\n")


def test_undo_of_unknown_id_and_of_an_undo(host):
    ctx = make_ctx(host)
    assert "no change" in apply(ctx, "undo", "20260101T000000Z-00000000")["error"]
    first = apply(ctx, "set-performance-level", GPU_PCI, "low")
    apply(ctx, "undo", first["undo_id"])
    undo_runs = [p.stem for p in (host / "var/lib/rocmdesk/journal").glob("*.json") if p.stem != first["undo_id"]]
    assert len(undo_runs) == 1
    assert "itself an undo" in apply(ctx, "undo", undo_runs[0])["error"]


def test_lock_serializes_runs(host, monkeypatch):
    import fcntl

    monkeypatch.setattr(H, "LOCK_WAIT_S", 0.2)
    ctx = make_ctx(host)
    H.ensure_state_dir(ctx, H.STATE_DIR)
    fd = os.open(host / "var/lib/rocmdesk/helper.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        result = apply(ctx, "set-performance-level", GPU_PCI, "low")
    finally:
        os.close(fd)
    assert not result["ok"] and "another rocmdesk-helper run" in result["error"]
    assert sysfs(host, GPU_PCI, "power_dpm_force_performance_level").read_text() == "auto\n"


def test_begin_and_end_audit_lines_per_run_and_syslog(host):
    (host / "dev").mkdir()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind(str(host / "dev/log"))
    server.settimeout(2)
    try:
        ctx = H.Context(str(host), caller_uid=CALLER_UID, runner=RecordingRunner(), kernel_release=KREL)
        apply(ctx, "set-power-cap", GPU_PCI, "300")
        apply(ctx, "set-power-cap", GPU_PCI, "9999")
        message = server.recv(65536).decode()
    finally:
        server.close()
    assert message.startswith("<85>rocmdesk-helper[") and '"action": "set-power-cap"' in message
    lines = [json.loads(line) for line in (host / "var/log/rocmdesk/audit.log").read_text().splitlines()]
    assert [line["event"] for line in lines] == ["begin", "end", "begin", "end"]
    assert lines[0]["run"] == lines[1]["run"] != lines[2]["run"] == lines[3]["run"]
    ends = lines[1::2]
    assert [line["result"][:5] for line in ends] == ["ok", "error"]
    assert ends[0]["uid"] == CALLER_UID and ends[0]["args"] == [GPU_PCI, "300"] == lines[0]["args"]
    assert ends[0]["changes"][0]["old"] == "290000000" and ends[0]["changes"][0]["new"] == "300000000"


def test_audit_without_dev_log_never_fails(host):
    assert not (host / "dev/log").exists()
    ctx = H.Context(str(host), caller_uid=CALLER_UID, runner=RecordingRunner(), kernel_release=KREL)
    assert apply(ctx, "set-performance-level", GPU_PCI, "low")["ok"]


def test_state_files_have_safe_modes(host):
    result = apply(make_ctx(host), "modprobe-unblacklist-amdgpu", "/etc/modprobe.d/blacklist-amdgpu.conf")
    assert oct((host / "var/lib/rocmdesk/backups").stat().st_mode & 0o777) == "0o700"
    assert oct((host / f"var/lib/rocmdesk/journal/{result['undo_id']}.json").stat().st_mode & 0o777) == "0o644"
    assert oct((host / "etc/modprobe.d/blacklist-amdgpu.conf").stat().st_mode & 0o777) == "0o644"


@pytest.mark.parametrize(("line", "disabled"), [
    ("blacklist amdgpu\n", True),
    ("  blacklist\tamdgpu  \n", True),
    ("install amdgpu /usr/bin/false\n", True),
    ("install amdgpu /bin/true --quiet\n", True),
    ("install amdgpu /bin/false;\n", True),
    ("blacklist amdgpu2\n", False),
    ("blacklist radeon\n", False),
    ("install amdgpu /sbin/modprobe --ignore-install amdgpu\n", False),
    ("install amdgpu /bin/falsey\n", False),
    ("# blacklist amdgpu\n", False),
])
def test_blacklist_lines_match_the_diagnosis_check(host, line, disabled):
    from rocmdesk.diagnosis.checks import driver

    stripped = line.strip()
    by_check = bool(driver._BLACKLIST_RE.match(stripped) or driver._INSTALL_FALSE_RE.match(stripped))
    assert by_check == disabled, "the helper must change exactly the lines the check reports"
    target = host / "etc/modprobe.d/test.conf"
    target.write_text(line)
    result = apply(make_ctx(host), "modprobe-unblacklist-amdgpu", "/etc/modprobe.d/test.conf")
    assert result["ok"] == disabled, result
    assert target.read_text() == (H.DISABLED_PREFIX + line.lstrip(" \t") if disabled else line)
