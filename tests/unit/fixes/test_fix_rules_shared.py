"""The diagnosis and the root helper decide with the same rules, tested together on the same trees.

- amdgpu-blacklisted offers ``modprobe-unblacklist-amdgpu FILE`` exactly when the helper finds a line to
  comment out, on kmod's logical lines (backslash continuations joined as libkmod does).
- the initramfs checks name a generator (and offer a one-click fix) exactly when the helper picks that
  same generator; both refuse to guess between several.
"""

from __future__ import annotations

import os

import pytest

from rocmdesk.diagnosis.checks import driver
from rocmdesk.diagnosis.initramfs import choose_generator, detect_generators, inspect_host
from rocmdesk.host import HostRoot
from tests.support import scenarios as sc
from tests.unit.fixes.helper_trees import build_host
from tests.unit.fixes.test_helper_actions import KREL, H, apply, make_ctx

TEST_CONF = "/etc/modprobe.d/test.conf"
P = H.DISABLED_PREFIX


def offered(host) -> tuple[bool, list[int]]:
    """(does amdgpu-blacklisted offer the helper fix for TEST_CONF, the line numbers it reports)."""
    result = sc.run_check(host, "amdgpu-blacklisted")
    findings = [f for f in result.findings if f.subject == TEST_CONF]
    if not findings:
        return False, []
    [finding] = findings
    assert finding.fix.action == ("modprobe-unblacklist-amdgpu", TEST_CONF)
    return True, [e.line for e in finding.evidence]


@pytest.mark.parametrize(("text", "lines", "expected"), [
    ("install amdgpu \\\n  /bin/false\n", [1],
     P + "install amdgpu \\\n" + P + "/bin/false\n"),
    ("# x\nblacklist \\\namdgpu\noptions amdgpu dc=1\n", [2],
     "# x\n" + P + "blacklist \\\n" + P + "amdgpu\noptions amdgpu dc=1\n"),
    ("blacklist amd\\\ngpu\n", [1], P + "blacklist amd\\\n" + P + "gpu\n"),  # kmod joins with nothing between
    ("blacklist amdgpu \\\n\ninstall amdgpu /bin/true\n", [1, 3],
     P + "blacklist amdgpu \\\n" + P + "\n" + P + "install amdgpu /bin/true\n"),
    ("install amdgpu \\\n/bin/false", [1], P + "install amdgpu \\\n" + P + "/bin/false"),  # no final newline
    # not blocking amdgpu, for kmod and so for both sides:
    ("# note \\\nblacklist amdgpu\n", [], None),  # the comment swallows the continued line
    ("install amdgpu \\ \n/bin/false\n", [], None),  # a space after the backslash: no continuation
    ("options amdgpu dc=1 \\\n  blacklist amdgpu\n", [], None),  # one logical `options` line
    ("install amdgpu \\\r\n/bin/false\r\n", [], None),  # CRLF: the backslash escapes \r, nothing is joined
    ("blacklist\x0bamdgpu\n", [], None),  # kmod splits words at spaces and tabs only
])
def test_continued_lines_diagnosis_and_helper_agree(tmp_path, text, lines, expected):
    host = build_host(tmp_path / "root")
    conf = host / TEST_CONF.lstrip("/")
    conf.write_text(text)
    os.chmod(conf, 0o644)
    fix_offered, reported = offered(host)
    preview = H.preview_action(make_ctx(host), "modprobe-unblacklist-amdgpu", [TEST_CONF])
    assert fix_offered == preview["ok"] == (expected is not None), preview
    assert reported == lines
    if expected is None:
        assert "nothing to change" in preview["error"]
        return
    result = apply(make_ctx(host), "modprobe-unblacklist-amdgpu", TEST_CONF)
    assert result["ok"] and result["changes"] == preview["changes"]
    assert conf.read_text() == expected, "every physical line of a matching logical line is commented out"
    assert offered(host) == (False, []), "the check is green for this file after the fix"
    assert apply(make_ctx(host), "undo", result["undo_id"])["ok"]
    assert conf.read_text() == text


@pytest.mark.parametrize(("line", "blocks"), [
    ("blacklist amdgpu", True), ("  blacklist\tamdgpu  ", True), ("install amdgpu /usr/bin/false", True),
    ("install amdgpu /bin/true --quiet", True), ("install amdgpu /bin/false;", True), ("blacklist amdgpu\r", True),
    ("blacklist amdgpu2", False), ("blacklist radeon", False), ("install amdgpu /bin/falsey", False),
    ("install amdgpu /sbin/modprobe --ignore-install amdgpu", False), ("# blacklist amdgpu", False),
    ("blacklist\u00a0amdgpu", False),
])
def test_one_line_rule_is_the_same_pattern(line, blocks):
    assert driver.blocks_amdgpu(line) is blocks
    assert bool(H.BLACKLIST_LINE_RE.fullmatch(line)) is blocks


# the line readers themselves are compared on the same files in tests/unit/diagnosis/test_kmod_config.py


# -- B5: which initramfs generator -------------------------------------------------------------------------


def two_generators(tmp_path, images: tuple[str, ...]):
    """initramfs-tools plus dracut installed and configured (Ubuntu with dracut-core); chosen /boot images."""
    host = build_host(tmp_path / "root")
    for program in ("/usr/bin/dracut",):
        path = host / program.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\nexit 0\n")
        os.chmod(path, 0o755)
    (host / "etc/dracut.conf.d").mkdir(mode=0o755)
    (host / "etc/dracut.conf").write_text("# dracut-core\n")
    (host / "boot").mkdir()
    for image in images:
        (host / "boot" / image.format(k=KREL)).write_bytes(b"not an image")
    return host


@pytest.mark.parametrize(("images", "chosen"), [
    (("initrd.img-{k}",), "initramfs-tools"),
    (("initramfs-{k}.img",), "dracut"),
    (("initrd.img-{k}", "initramfs-{k}.img"), None),
    ((), None),
    (("initrd.img-0.0.1-other",), None),  # an image for another kernel does not count
])
def test_generator_choice_is_the_same_on_both_sides(tmp_path, images, chosen):
    host = two_generators(tmp_path, images)
    root = HostRoot(host)
    by_diagnosis = choose_generator(root, detect_generators(root), KREL)
    assert (by_diagnosis[0] if by_diagnosis else None) == chosen
    assert inspect_host(root, KREL).generator == chosen, "the initramfs checks offer a fix only for this one"
    preview = H.preview_action(make_ctx(host), "initramfs-regenerate", [])
    if chosen is None:
        assert not preview["ok"] and "refusing to guess" in preview["error"]
        return
    assert preview["ok"], preview
    program = {"initramfs-tools": "/usr/sbin/update-initramfs", "dracut": "/usr/bin/dracut"}[chosen]
    assert preview["changes"][0]["argv"][0] == program
    added = H.preview_action(make_ctx(host), "initramfs-add-amdgpu", [])
    config = {"initramfs-tools": "/etc/initramfs-tools/modules", "dracut": "/etc/dracut.conf.d/amdgpu.conf"}[chosen]
    assert added["ok"] and added["changes"][0]["path"] == config


def mkinitcpio_beside_dracut(tmp_path):
    """A mkinitcpio host that has dracut installed too, and an empty /etc/mkinitcpio.d."""
    host = build_host(tmp_path / "root", generator="mkinitcpio")
    dracut = host / "usr/bin/dracut"
    dracut.write_text("#!/bin/sh\n")
    os.chmod(dracut, 0o755)
    (host / "etc/dracut.conf.d").mkdir(mode=0o755)
    (host / "etc/mkinitcpio.d").mkdir(mode=0o755)
    return host


def test_mkinitcpio_preset_image_confirms_it(tmp_path):
    host = mkinitcpio_beside_dracut(tmp_path)
    preset = 'PRESETS=(default)\ndefault_image="/boot/initramfs-linux.img"\n'
    (host / "etc/mkinitcpio.d/linux.preset").write_text(preset)
    (host / "boot").mkdir()
    root = HostRoot(host)
    assert choose_generator(root, detect_generators(root), KREL) is None
    assert not H.preview_action(make_ctx(host), "initramfs-regenerate", [])["ok"]
    (host / "boot/initramfs-linux.img").write_bytes(b"x")
    assert choose_generator(root, detect_generators(root), KREL)[0] == "mkinitcpio"
    assert H.preview_action(make_ctx(host), "initramfs-regenerate", [])["changes"][0]["argv"] == [
        "/usr/bin/mkinitcpio", "-P"]


@pytest.mark.parametrize(("images", "one_click"), [(("initrd.img-{k}",), True), ((), False)])
def test_unblacklist_is_one_click_only_when_the_generator_is_known(tmp_path, images, one_click, monkeypatch):
    """The helper's unblacklist also rebuilds the initramfs, so both sides need the same generator answer."""
    host = two_generators(tmp_path, images)
    (host / "proc/sys/kernel").mkdir(parents=True, exist_ok=True)
    (host / "proc/sys/kernel/osrelease").write_text(KREL + "\n")
    [finding] = [f for f in sc.run_check(host, "amdgpu-blacklisted").findings
                 if f.subject == "/etc/modprobe.d/blacklist-amdgpu.conf"]
    preview = H.preview_action(make_ctx(host), "modprobe-unblacklist-amdgpu", ["/etc/modprobe.d/blacklist-amdgpu.conf"])
    assert (finding.fix.action is not None) is preview["ok"] is one_click, preview
    if not one_click:
        assert "no one-click fix" in finding.explanation and finding.fix.steps


def test_preset_image_outside_boot_falls_back_to_the_preset_name_on_both_sides(tmp_path):
    host = mkinitcpio_beside_dracut(tmp_path)
    (host / "etc/mkinitcpio.d/linux-lts.preset").write_text('default_image="/efi/EFI/linux/lts.img"\n')
    (host / "efi/EFI/linux").mkdir(parents=True)
    (host / "efi/EFI/linux/lts.img").write_bytes(b"x")
    root = HostRoot(host)
    assert choose_generator(root, detect_generators(root), KREL) is None
    assert not H.preview_action(make_ctx(host), "initramfs-regenerate", [])["ok"]
    (host / "boot").mkdir()
    (host / "boot/initramfs-linux-lts.img").write_bytes(b"x")
    assert choose_generator(root, detect_generators(root), KREL)[0] == "mkinitcpio"
    assert H.preview_action(make_ctx(host), "initramfs-regenerate", [])["ok"]
