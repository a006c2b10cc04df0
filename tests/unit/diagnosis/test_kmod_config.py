"""modprobe.d read as kmod reads it (kmod_config.kmod_logical_lines, modprobe_files, module_params), and the
amdgpu ppfeaturemask check on the cases where the old reader (join_continuations plus a regex) disagreed
with kmod. The root helper's own copy of the line reader is fed the same files and must agree."""

from __future__ import annotations

import pytest

from rocmdesk.diagnosis.checks import driver
from rocmdesk.diagnosis.facts import HostFacts
from rocmdesk.diagnosis.kmod_config import effective_param, kmod_logical_lines, parse_kmod_command, parse_module_args
from rocmdesk.diagnosis.model import Status
from rocmdesk.host import HostRoot
from tests.support import scenarios as sc
from tests.unit.fixes.test_helper_actions import H

CONF = "/etc/modprobe.d/amdgpu.conf"
ON = "0xffffffff"  # OverDrive (bit 14) set


@pytest.fixture
def root(tmp_path):
    root = sc.clean_workstation(tmp_path / "root")
    sc.set_ppfeaturemask(root, ON, on_cmdline=False)
    return root


def settings(root) -> list[tuple[str, int | None, str | None]]:
    facts = HostFacts(HostRoot(root))
    return [(p.source.path, p.source.line, p.value) for p in facts.module_params("amdgpu")
            if p.name == "ppfeaturemask"]


def overdrive_lines(root) -> list[tuple[str | None, int | None]]:
    result = sc.run_check(root, "overdrive-enabled")
    assert result.status is Status.FAIL  # the running mask has bit 14 whatever the files say
    return [(e.path, e.line) for e in result.findings[0].evidence if e.path != driver_mask_path()]


def driver_mask_path() -> str:
    return "/sys/module/amdgpu/parameters/ppfeaturemask"


# -- where the old reader and kmod disagreed --------------------------------------------------------------


@pytest.mark.parametrize(("text", "lines"), [
    # kmod joins a continued line with NOTHING in between (the old reader put a space: "ppfeature mask=")
    ("options amdgpu ppfeature\\\nmask=0xffffffff\n", [1]),
    # a space after the backslash: no continuation; line 2 is a bad command kmod ignores (old: joined)
    ("options amdgpu dc=1 \\ \nppfeaturemask=0xffffffff\n", []),
    # CRLF: the backslash escapes "\r", nothing is joined (old: splitlines() joined it)
    ("options amdgpu dc=1 \\\r\nppfeaturemask=0xffffffff\r\n", []),
    # inside quotes it is part of another parameter's value (kernel next_arg); old regex matched
    ('options amdgpu x="a ppfeaturemask=0xffffffff"\n', []),
    # another parameter's name ("\b" matched after the dot)
    ("options amdgpu foo.ppfeaturemask=0xffffffff\n", []),
    # kmod splits words at spaces and tabs only: "options\vamdgpu" is one (unknown) word; old "\s" matched
    ("options\x0bamdgpu ppfeaturemask=0xffffffff\n", []),
    ("options\u00a0amdgpu ppfeaturemask=0xffffffff\n", []),
    # an indented "#" is no comment for kmod but a bad line; ignored either way
    ("  # options amdgpu ppfeaturemask=0xffffffff\n", []),
    # a comment continued by a backslash swallows the next line
    ("# note \\\noptions amdgpu ppfeaturemask=0xffffffff\n", []),
    # several parameters, tabs, a continued line and a module name spelled with a dash
    ("options\tamdgpu\tdc=1 \\\n   ppfeaturemask=0xffffffff  runpm=0\n", [1]),
    ("options amd-gpu ppfeaturemask=0xffffffff\n", []),  # amd_gpu is another module
    ("options amdgpu ppfeaturemask=0xffffffff\0 ignored\n", [1]),
    ("options amdgpu\n", []),  # no parameters: a syntax error kmod skips
])
def test_options_lines_are_read_as_kmod_reads_them(root, text, lines):
    sc.write(root, CONF, text)
    assert [line for _path, line, _value in settings(root)] == lines
    assert overdrive_lines(root) == [(CONF, n) for n in lines]


def test_alias_files_count_and_dot_files_and_folders_do_not(root):
    sc.write(root, "/etc/modprobe.d/tuning.alias", "options amdgpu ppfeaturemask=0xffffffff\n")
    sc.write(root, "/etc/modprobe.d/.hidden.conf", "options amdgpu ppfeaturemask=0xfffd7000\n")
    sc.write(root, "/etc/modprobe.d/dir.conf/x.conf", "options amdgpu ppfeaturemask=0x1\n")
    sc.write(root, "/etc/modprobe.d/notes.txt", "options amdgpu ppfeaturemask=0x2\n")
    assert settings(root) == [("/etc/modprobe.d/tuning.alias", 1, ON)]


def test_order_is_by_file_name_across_folders_and_the_last_one_counts(root):
    sc.write(root, "/usr/lib/modprobe.d/10-vendor.conf", "options amdgpu ppfeaturemask=0xfff7bfff\n")
    sc.write(root, "/etc/modprobe.d/20-tuning.conf", "options amdgpu dc=1 ppfeaturemask=0xffffffff\n")
    sc.write(root, "/run/modprobe.d/30-boot.conf", "options amdgpu ppfeaturemask=0xfffffffe\n")
    sc.write(root, "/lib/modprobe.d/40-old.conf", "options amdgpu ppfeaturemask=0xfffffffd\n")
    facts = HostFacts(HostRoot(root))
    assert [p.rsplit("/", 1)[-1] for p in facts.modprobe_files if "ppfeaturemask" in (facts.read(p) or "")] == [
        "10-vendor.conf", "20-tuning.conf", "30-boot.conf", "40-old.conf"]
    assert [v for _p, _l, v in settings(root)] == ["0xfff7bfff", ON, "0xfffffffe", "0xfffffffd"]
    # merged /usr (/lib -> usr/lib): kmod reads that folder once, under its first name
    assert (root / "lib").is_symlink()
    assert effective_param(facts.module_params("amdgpu"), "ppfeaturemask").source.path == (
        "/usr/lib/modprobe.d/40-old.conf")
    # the kernel command line comes after every file (kmod_config_parse_kcmdline runs last)
    sc.add_cmdline(root, "amdgpu.ppfeaturemask=0xfff7ffff")
    winner = effective_param(HostFacts(HostRoot(root)).module_params("amdgpu"), "ppfeaturemask")
    assert winner.on_cmdline and winner.value == "0xfff7ffff"
    finding = sc.run_check(root, "overdrive-enabled").findings[0]
    assert "5 ppfeaturemask settings and the last one counts: `0xfff7ffff` from the kernel command line" in (
        finding.explanation)


def test_a_file_in_etc_hides_the_same_name_in_later_folders(root):
    sc.write(root, "/usr/lib/modprobe.d/amdgpu.conf", "options amdgpu ppfeaturemask=0xffffffff\n")
    sc.write(root, "/etc/modprobe.d/amdgpu.conf", "options amdgpu dc=1\n")
    sc.write(root, "/run/modprobe.d/amdgpu.conf", "options amdgpu ppfeaturemask=0xffffffff\n")
    assert settings(root) == []
    (root / "etc/modprobe.d/amdgpu.conf").unlink()
    assert settings(root) == [("/run/modprobe.d/amdgpu.conf", 1, ON)]  # /run comes before /usr/lib


def test_package_file_setting_gets_mask_steps_not_an_edit_of_usr(root):
    sc.write(root, "/usr/lib/modprobe.d/amdgpu-oc.conf", "options amdgpu ppfeaturemask=0xffffffff\n")
    steps = sc.run_check(root, "overdrive-enabled").findings[0].fix.steps
    assert "belongs to an installed package" in steps[0] and "/etc/modprobe.d/amdgpu-oc.conf" in steps[0]
    assert any(f"`sudo update-initramfs -u -k {sc.KERNEL}`" in s for s in steps)


def test_running_mask_differs_from_the_configured_one(root):
    sc.write(root, CONF, "options amdgpu ppfeaturemask=0xfff7bfff\n")
    finding = sc.run_check(root, "overdrive-enabled").findings[0]
    assert "is not the configured `0xfff7bfff`" in finding.explanation
    sc.write(root, CONF, f"options amdgpu ppfeaturemask={ON}\n")
    assert "is not the configured" not in sc.run_check(root, "overdrive-enabled").findings[0].explanation


# -- the pieces -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "parsed"), [
    ("dc=1 ppfeaturemask=0xffffffff", [("dc", "1"), ("ppfeaturemask", "0xffffffff")]),
    ('  a="x y"\tb ', [("a", "x y"), ("b", None)]),
    ('"c=d e" f=1', [("c", "d e"), ("f", "1")]),
    ("x -- ppfeaturemask=1", [("x", None)]),  # parse_args() stops at a bare "--"
    ("=a=b", [("=a", "b")]),  # C's `equals == 0` means "not found yet"
    ("", []),
])
def test_module_args_split_like_the_kernel(args, parsed):
    assert [(name, value) for _offset, name, value in parse_module_args(args)] == parsed


@pytest.mark.parametrize(("line", "parsed"), [
    ("options amdgpu  ppfeaturemask=1", ("options", "amdgpu", " ppfeaturemask=1")),
    ("options\tamd-gpu\tdc=1", ("options", "amd_gpu", "dc=1")),
    ("options amdgpu ", ("options", "amdgpu", None)),
    ("blacklist amdgpu", ("blacklist", "amdgpu", None)),
    (" \t", None),
])
def test_kmod_command_words(line, parsed):
    assert parse_kmod_command(line) == parsed


# -- the root helper reads the same lines -----------------------------------------------------------------

SAME_FILES = [
    "a\\\nb\nc", "a\\b\\\\c\n", "\\\n\\\n", "x\\", "#c\\\nd\ne\n", "", "\n\n",
    "options amdgpu ppfeature\\\nmask=1\n", "install amdgpu \\ \n/bin/false\n", "blacklist amdgpu \\\r\nx\r\n",
    "  # indented\nblacklist\x0bamdgpu\n", "options amdgpu dc=1 \\\n\n\nblacklist amdgpu\n", "a\fb\nc\x85d\u2028e\n",
]


@pytest.mark.parametrize("text", SAME_FILES)
def test_the_helper_reads_the_same_logical_lines(text):
    helper = [(group[0] + 1, t) for group, t in H.kmod_logical_lines(H.split_newlines(text))
              if t and not t.startswith("#")]
    assert kmod_logical_lines(text) == helper


@pytest.mark.parametrize("text", SAME_FILES)
def test_the_check_and_the_helper_report_the_same_blacklist_lines(tmp_path, text):
    host = sc.clean_workstation(tmp_path / "root")
    sc.write(host, "/etc/modprobe.d/test.conf", text)
    facts = HostFacts(HostRoot(host))
    by_check = [x.line for x in facts.modprobe_lines if x.path == "/etc/modprobe.d/test.conf"
                and driver.blocks_amdgpu(x.text)]
    by_helper = [group[0] + 1 for group, t in H.kmod_logical_lines(H.split_newlines(text))
                 if not t.startswith("#") and H.BLACKLIST_LINE_RE.fullmatch(t)]
    assert by_check == by_helper


def test_one_click_only_for_files_the_helper_accepts(tmp_path):
    assert driver._HELPER_MODPROBE_FILE_RE.pattern == H.MODPROBE_FILE_RE
    host = sc.clean_workstation(tmp_path / "root")
    sc.write(host, "/etc/modprobe.d/gpu.alias", "blacklist amdgpu\n")
    sc.write(host, "/run/modprobe.d/boot.conf", "blacklist amdgpu\n")
    findings = {f.subject: f for f in sc.run_check(host, "amdgpu-blacklisted").findings}
    assert findings["/etc/modprobe.d/gpu.alias"].fix.action is None
    assert "Put a `#` in front" in findings["/etc/modprobe.d/gpu.alias"].fix.steps[0]
    assert "written at boot" in findings["/run/modprobe.d/boot.conf"].fix.steps[0]
    assert "package" not in findings["/run/modprobe.d/boot.conf"].fix.steps[0]
