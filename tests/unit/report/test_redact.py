"""Redaction rules: distinctive names go wherever they stand, common-word names only where they can
only be the person or the machine (so ``amdgpu``, ``render:x:992:`` and ``amd-smi`` survive)."""

from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path

import pytest

from rocmdesk.diagnosis.runner import diagnose
from rocmdesk.host import HostRoot
from rocmdesk.report.bundle import open_bundle, prepare_bundle
from rocmdesk.report.collect import access_gids
from rocmdesk.report.redact import Redactor, redactor_for
from rocmdesk.report.reduce import transform
from tests.support import scenarios as sc


def _red(user: str = "alice", host: str | None = "ws-alice-1", system=("render", "video", "sudo")) -> Redactor:
    red = Redactor()
    red.add_system_words(system)
    red.add_user(user, f"/home/{user}")
    if host:
        red.add_hostname(host)
    return red


@pytest.mark.parametrize("text, expected", [
    ("/home/alice/ComfyUI", "/home/user1/ComfyUI"),
    ("/home/alice-data/models", "/home/user1-data/models"),
    ("/home/alice_backup", "/home/user1_backup"),
    ("ssh alice@gpu-box", "ssh user1@gpu-box"),
    ("mail alice@example.org", "mail user@example.invalid"),  # an e-mail address goes whole
    ("ping alice.local", "ping user1.local"),
    ("owner alice render", "owner user1 render"),
    ("/srv/data-alice/x", "/srv/data-user1/x"),
    ("USER=alice", "USER=user1"),
    ("malice alice2 Alicent", "malice alice2 Alicent"),  # other words that only contain the name
    ("ws-alice-1 booted", "host1 booted"),
])
def test_a_distinctive_name_goes_wherever_it_stands_alone(text, expected):
    assert _red().text(text) == expected


@pytest.mark.parametrize("user", ["amd", "gpu", "render", "video", "root"])
def test_a_common_word_user_name_goes_only_where_it_is_the_person(user):
    red = _red(user, host=None)
    keep = [f"{user}gpu", f"lib{user}", f"{user}-smi 1.0", f"{user}_smi", f"{user}:x:992:", f"the {user} group",
            f"kernel/drivers/gpu/drm/{user}/x.ko", user.upper()]
    for text in keep:
        assert red.text(text) == text, text
    replace = {f"/home/{user}/x": "/home/user1/x", f"/home/{user}-data/": "/home/user1-data/",
               f"ssh {user}@box": "ssh user1@box", f"~{user}/bin": "~user1/bin", f"USER={user}\0": "USER=user1\0",
               f"LOGNAME={user}": "LOGNAME=user1", f'{{"user": "{user}"}}': '{"user": "user1"}',
               f'{{"user":"{user}"}}': '{"user":"user1"}', f"{user}.local": "user1.local"}
    for text, expected in replace.items():
        assert red.text(text) == expected, text
    assert user not in red.secrets() and f"/home/{user}" in red.secrets()


def test_amd_inside_a_binary_stays_but_a_distinctive_name_goes():
    assert _red("amd", host=None).binary(b"\0amdgpu\0amd\0/home/amd/x\0") == b"\0amdgpu\0amd\0/home/user1/x\0"
    assert _red().binary(b"\0malice\0alice\0/home/alice/x\0") == b"\0malice\0user1\0/home/user1/x\0"
    assert Redactor().binary(b"\0data") == b"\0data"  # nothing registered: bytes unchanged


def test_hostname_equal_to_the_user_name():
    red = _red("alice", host="alice")
    assert red.text("alice@alice:~$ ls") == "user1@host1:~$ ls"
    assert red.text("USER=alice\0HOSTNAME=alice") == "USER=user1\0HOSTNAME=host1"
    assert red.text("Current Operating System: Linux alice 6.8.0-45-generic") == \
        "Current Operating System: Linux host1 6.8.0-45-generic"
    assert red.text("/home/alice/.bashrc") == "/home/user1/.bashrc"
    assert "alice" not in red.text("alice alice.local alice@alice /home/alice alice-data")


def test_a_common_word_hostname_goes_only_where_it_is_the_machine():
    red = _red("alice", host="gpu")
    assert red.text("Linux gpu 6.8.0-45-generic #45") == "Linux host1 6.8.0-45-generic #45"
    assert red.text("alice@gpu gpu.local HOSTNAME=gpu") == "user1@host1 host1.local HOSTNAME=host1"
    assert red.text("gpu busy 40% on the gpu") == "gpu busy 40% on the gpu"
    assert "gpu" not in red.secrets()
    assert transform("etc/hostname", b"gpu\n", red) == b"host1\n"
    assert transform("proc/sys/kernel/hostname", b"gpu\n", red) == b"host1\n"


def test_passwd_and_group_name_fields_of_a_user_called_render(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "proc/self").mkdir(parents=True)
    passwd = "root:x:0:0:root:/root:/bin/bash\nrender:x:1000:1000:Render Person,,,:/home/render:/bin/bash\n"
    group = "root:x:0:\nvideo:x:44:render\nrender:x:992:render,syslog\nrender2:x:1000:\n"
    (tmp_path / "etc/passwd").write_text(passwd)
    (tmp_path / "etc/group").write_text(group.replace("render2", "render"))  # the private group, gid 1000
    (tmp_path / "proc/self/status").write_text("Uid:\t1000\t1000\t1000\t1000\nGroups:\t44 992 1000\n")
    root = HostRoot(tmp_path)
    red = redactor_for(root)
    assert red.users == {"render": "user1"} and red.is_common("render")
    assert transform("etc/passwd", passwd.encode(), red, access_gids(root)).decode().splitlines() == [
        "root:x:0:0::/root:/bin/bash", "user1:x:1000:1000::/home/user1:/bin/bash"]
    lines = transform("etc/group", (tmp_path / "etc/group").read_bytes(), red, access_gids(root)).decode().splitlines()
    assert lines == ["root:x:0:", "video:x:44:user1", "render:x:992:user1,syslog", "user1:x:1000:"]


# -- whole round trips with a person called like a common word -------------------------------------


def _rename_user(root: Path, new: str) -> None:
    """The clean workstation with its user ``alice`` called ``new`` (files, links, folder names)."""
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        for name in filenames + dirnames:
            path = Path(dirpath) / name
            if path.is_symlink():
                target = os.readlink(path)
                if "alice" in target:
                    path.unlink()
                    os.symlink(target.replace("alice", new), path)
            elif path.is_file():
                data = path.read_bytes()
                if b"alice" in data:
                    st = path.stat()
                    path.write_bytes(data.replace(b"alice", new.encode()))
                    os.utime(path, (st.st_atime, st.st_mtime))
            if "alice" in name:
                path.rename(Path(dirpath) / name.replace("alice", new))
    # a system group of that name exists (render, video): the person's private group is called
    # differently, as adduser would have to do it
    group = root / "etc/group"
    lines = group.read_text().splitlines()
    if sum(line.startswith(f"{new}:") for line in lines) > 1:
        group.write_text("".join(("personal:x:1000:" if line == f"{new}:x:1000:" else line) + "\n"
                                 for line in lines))


def _normalized(report, user: str) -> str:
    data = report.to_json()
    text = json.dumps({"checks": data["checks"], "findings": data["findings"]}, sort_keys=True, indent=0)
    # the source says the user's name where the bundle says user1: only in the person's contexts
    text = text.replace(f"/home/{user}", "/home/user1")
    return re.sub(rf"(?<=Add ){user}(?= to the)|(?<=-G render,video ){user}(?=`)|(?<=\"subject\": \"){user}(?=\")"
                  rf"|(?<=\"reason\": \"){user}(?= is configured)"
                  # a failed check's reason ends with its finding's subject: "... use the GPU (alice)"
                  rf"|(?<=the GPU \(){user}(?=\)\")", "user1", text)


@pytest.mark.parametrize("user", ["amd", "render"])
@pytest.mark.parametrize("scenario", ["clean", "user-not-in-render-group"])
def test_round_trip_with_a_common_word_user(tmp_path, user, scenario):
    root = sc.clean_workstation(tmp_path / "root")
    sc.comfyui_process(root)
    if scenario != "clean":  # not in render, and no longer in it in this session either
        sc.remove_user_from_group(root, "render")
        sc.session_groups(root, [27, 44, 1000])
    _rename_user(root, user)
    source = diagnose(HostRoot(root))
    plan = prepare_bundle(HostRoot(root))
    plan.save(tmp_path / "b.tar.gz")
    raw = gzip.decompress((tmp_path / "b.tar.gz").read_bytes())
    assert f"/home/{user}".encode() not in raw and b"amdgpu" in raw and b"render:x:" in raw
    with open_bundle(tmp_path / "b.tar.gz") as opened:
        again = diagnose(opened.root, python_envs=opened.python_envs)
        assert opened.root.read_text("/etc/passwd").splitlines()[-1].startswith("user1:x:1000:")
    assert [(c.id, c.status) for c in again.results] == [(c.id, c.status) for c in source.results]
    assert _normalized(again, user) == _normalized(source, user)
