"""Issue 10, item 10: ``diagnose --root R`` and ``diagnose --snapshot capture(R)`` give the same findings.

Capture keeps the mode, owner and group of every /dev entry whatever its file type: a root folder's
/dev/kfd stand-in may be a real device node, a placeholder, a regular file, a FIFO or a socket; before, a
regular file became 0644 root:root in the bundle (a false ``user-not-in-render-group``) and a FIFO or
socket vanished (a false ``kfd-missing``). The scenario roots of tests/unit/report/test_scenarios_round_trip.py
are round-tripped there (in-process); here every other kind of root the tests build goes through the CLI.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from rocmdesk.cli import main
from tests.support import scenarios as sc
from tests.support.instinct import instinct_specs
from tests.support.sysfs_tree import LACT_DUMPS, GpuSpec, build_root
from tests.unit.fixes.helper_trees import build_host
from tests.unit.report.workstation import make_workstation


def _kfd_regular(root: Path, mode: int, gid: int) -> None:
    kfd = root / "dev/kfd"
    kfd.unlink()
    kfd.write_text("")
    os.chown(kfd, 0, gid)
    os.chmod(kfd, mode)


def _kfd_fifo(root: Path) -> None:
    kfd = root / "dev/kfd"
    kfd.unlink()
    os.mkfifo(kfd)
    os.chown(kfd, 0, sc.RENDER_GID)
    os.chmod(kfd, 0o660)


def _kfd_socket(root: Path) -> None:
    kfd = root / "dev/kfd"
    kfd.unlink()
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(kfd))
    os.chown(kfd, 0, sc.RENDER_GID)
    os.chmod(kfd, 0o660)


def _kfd_char_device(root: Path) -> None:
    kfd = root / "dev/kfd"
    kfd.unlink()
    os.mknod(kfd, 0o600 | 0o020000, os.makedev(238, 0))
    os.chown(kfd, 0, sc.RENDER_GID)
    os.chmod(kfd, 0o660)


def _renders_regular(root: Path) -> None:
    for node in (root / "dev/dri").glob("renderD*"):
        node.unlink()
        node.write_text("")
        os.chown(node, 0, sc.VIDEO_GID)  # the render node in video, not render: still the user's group
        os.chmod(node, 0o660)


def _workstation(root: Path) -> None:
    make_workstation(root)


def _helper_host(generator: str):
    return lambda root: build_host(root, generator)


def _lact(dump: str):
    return lambda root: build_root(root, [GpuSpec(dump)])


def _mi300x_node(root: Path) -> None:
    build_root(root, instinct_specs(root.parent / "dumps", "mi300x", 8))


WORKSTATION_VARIANTS = {
    "kfd-regular-file-render-0660": lambda r: _kfd_regular(r, 0o660, sc.RENDER_GID),
    "kfd-regular-file-root-0644": lambda r: _kfd_regular(r, 0o644, 0),  # a real misconfiguration: kept
    "kfd-regular-file-0666": lambda r: _kfd_regular(r, 0o666, 0),
    "kfd-fifo": _kfd_fifo,
    "kfd-socket": _kfd_socket,
    "kfd-char-device": _kfd_char_device,
    "render-nodes-regular-files": _renders_regular,
    "kfd-missing": sc.remove_kfd,
}
OTHER_ROOTS = {
    "report-workstation": _workstation,
    **{f"helper-host-{g}": _helper_host(g) for g in ("initramfs-tools", "dracut", "mkinitcpio")},
    **{f"lact-{d}": _lact(d) for d in LACT_DUMPS},
    "mi300x-8-gpu-node": _mi300x_node,
}


def _diagnose_json(capsys, *argv: str) -> dict:
    code = main(["diagnose", *argv, "--json"])
    out = capsys.readouterr().out
    assert code in (0, 1), out
    data = json.loads(out)
    text = json.dumps({"checks": data["checks"], "findings": data["findings"]}, sort_keys=True)
    # the bundle replaces user names and home folders (user1, ...); compare with the same replacement
    for name in ("alice", "zorana", "tester", "rocmtest"):
        text = text.replace(f"/home/{name}", "/home/user1").replace(name, "user1")
    return json.loads(text)


def _round_trip(capsys, root: Path, bundle: Path) -> tuple[dict, dict]:
    direct = _diagnose_json(capsys, "--root", str(root))
    assert main(["capture", "--root", str(root), "-o", str(bundle)]) == 0, capsys.readouterr().err
    capsys.readouterr()
    return direct, _diagnose_json(capsys, "--snapshot", str(bundle))


def _assert_same(direct: dict, again: dict) -> None:
    assert [(c["id"], c["status"], c["reason"]) for c in again["checks"]] == \
        [(c["id"], c["status"], c["reason"]) for c in direct["checks"]]
    assert again["findings"] == direct["findings"]


@pytest.mark.parametrize("name", sorted(WORKSTATION_VARIANTS))
def test_dev_entries_of_every_type_survive_the_round_trip(tmp_path, capsys, name):
    root = sc.clean_workstation(tmp_path / "root")
    WORKSTATION_VARIANTS[name](root)
    direct, again = _round_trip(capsys, root, tmp_path / "b.tar.gz")
    _assert_same(direct, again)
    ids = {f["id"] for f in direct["findings"]}
    if name in ("kfd-regular-file-render-0660", "kfd-fifo", "kfd-socket", "kfd-char-device"):
        assert "user-not-in-render-group" not in ids and "kfd-missing" not in ids, ids


@pytest.mark.parametrize("name", sorted(OTHER_ROOTS))
def test_every_other_scenario_root_round_trips(tmp_path, capsys, name):
    root = tmp_path / "root"
    root.mkdir()
    OTHER_ROOTS[name](root)
    direct, again = _round_trip(capsys, root, tmp_path / "b.tar.gz")
    _assert_same(direct, again)


def test_the_placeholder_records_the_stand_ins_type_mode_owner_and_group(tmp_path):
    from rocmdesk.host import HostRoot
    from rocmdesk.report.bundle import open_bundle, prepare_bundle

    root = sc.clean_workstation(tmp_path / "root")
    _kfd_regular(root, 0o640, sc.RENDER_GID)
    os.chown(root / "dev/kfd", 7, sc.RENDER_GID)
    prepare_bundle(HostRoot(root)).save(tmp_path / "b.tar.gz")
    with open_bundle(tmp_path / "b.tar.gz") as opened:
        st = opened.root.stat("/dev/kfd")
        record = json.loads((Path(opened.folder) / "dev/kfd").read_text())
    assert (oct(st.st_mode), st.st_uid, st.st_gid) == (oct(0o100640), 7, sc.RENDER_GID)
    assert record["type"] == "file" and record["mode"] == "0640"
