"""Container detection from a root, its bad inputs, and no change at all on a machine (issue 16, items 1, 3)."""

from __future__ import annotations

import os

import pytest

from rocmdesk.diagnosis import engine
from rocmdesk.diagnosis.container import detect, parse_id_map, parse_mountinfo
from rocmdesk.diagnosis.model import Status
from rocmdesk.diagnosis.runner import diagnose
from rocmdesk.host import HostRoot, RecordedRunner
from tests.support import scenarios as sc
from tests.support.containers import CONTAINER_ID, Run, container_root
from tests.unit.report.test_scenarios_round_trip import SCENARIOS


def test_docker_from_dockerenv_cgroup_and_mounts(tmp_path):
    info = detect(HostRoot(container_root(tmp_path / "r", Run())))
    assert info.engine == "docker" and info.rootless is False and info.image is None
    assert {s.path for s in info.signs} == {"/.dockerenv", "/proc/1/cgroup", "/proc/self/mountinfo"}
    assert info.header() == "inside a Docker container"


def test_rootless_podman_from_containerenv(tmp_path):
    info = detect(HostRoot(container_root(tmp_path / "r", Run(engine="podman", rootless=True))))
    assert info.engine == "podman" and info.rootless is True
    assert info.image == "rocm/pytorch:latest" and info.name == "ollama"
    assert "container=podman" in [s.text for s in info.signs]
    assert info.header() == "inside a rootless Podman container · image rocm/pytorch:latest"


@pytest.mark.parametrize("only", ["/.dockerenv", "/run/.containerenv", "/proc/1/cgroup", "/proc/self/mountinfo",
                                  "/proc/1/environ"])
def test_each_sign_alone_is_enough(tmp_path, only):
    root = tmp_path / "r"
    if only == "/.dockerenv":
        sc.write(root, only, "")
    elif only == "/run/.containerenv":
        sc.write(root, only, "")
    elif only == "/proc/1/cgroup":
        sc.write(root, only, f"12:devices:/docker/{CONTAINER_ID}\n11:memory:/docker/{CONTAINER_ID}\n")
    elif only == "/proc/1/environ":
        sc.write(root, only, b"PATH=/bin\0container=podman\0")
    else:
        sc.write(root, only, f"600 500 259:2 /var/lib/docker/containers/{CONTAINER_ID}/hostname /etc/hostname rw - "
                             "ext4 /dev/sda2 rw\n")
    info = detect(HostRoot(root))
    assert info is not None and info.engine in ("docker", "podman")


def test_a_host_that_runs_containers_is_not_one(tmp_path):
    """The host's own PID 1 cgroup, and its mountinfo listing containers' overlay mounts elsewhere."""
    root = sc.clean_workstation(tmp_path / "r")
    sc.write(root, "/proc/1/cgroup", "0::/init.scope\n")
    sc.write(root, "/proc/1/environ", b"HOME=/\0TERM=linux\0")
    sc.write(root, "/proc/self/mountinfo",
             "25 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n"
             f"900 25 0:50 / /var/lib/docker/overlay2/{CONTAINER_ID}/merged rw - overlay overlay "
             "rw,lowerdir=/var/lib/docker/overlay2/l/AB\n"
             f"901 25 259:2 /var/lib/docker/containers/{CONTAINER_ID}/mounts/shm /var/lib/docker/containers/x/shm "
             "rw - tmpfs shm rw,size=65536k\n")
    assert detect(HostRoot(root)) is None


@pytest.mark.parametrize("junk", [b"", b"\xff\xfe\x00garbage\n", b"=" * 100000, b"\0\0\0", b"- - - -\n" * 5000])
def test_garbage_signs_never_crash(tmp_path, junk):
    root = tmp_path / "r"
    for path in ("/proc/1/cgroup", "/proc/1/environ", "/proc/self/mountinfo", "/proc/self/uid_map",
                 "/proc/self/gid_map", "/proc/sys/kernel/overflowgid", "/proc/self/attr/current",
                 "/sys/fs/selinux/enforce"):
        sc.write(root, path, junk)
    sc.write(root, "/run/.containerenv", junk)
    detect(HostRoot(root))
    report = diagnose(HostRoot(root), runner=RecordedRunner())
    assert not [r for r in report.results if r.area == "Container" and r.status is Status.ERROR]


def test_unreadable_folder_and_loop_signs(tmp_path):
    root = tmp_path / "r"
    (root / "run" / ".containerenv").mkdir(parents=True)  # a folder where a file belongs
    (root / "proc" / "1").mkdir(parents=True)
    os.symlink("cgroup", root / "proc" / "1" / "cgroup")  # points at itself
    os.mkfifo(root / "proc" / "1" / "environ")  # would block a plain open()
    assert detect(HostRoot(root)) is None


def test_parsers_ignore_malformed_lines():
    assert parse_id_map("0 0 4294967295\nnot a map\n1 2\n") == ((0, 0, 4294967295),)
    mounts = parse_mountinfo("short line\n1 2 0:1 / /dev/shm rw - tmpfs shm rw,size=2g\n"
                             "3 4 0:2 /a\\040b /mnt\\040x rw - ext4 /dev/sda rw\n")
    assert [m.size_bytes for m in mounts] == [2 << 30, None]
    assert mounts[1].root == "/a b" and mounts[1].mount_point == "/mnt x"


def test_every_machine_scenario_is_diagnosed_as_before(tmp_path, monkeypatch):
    """Done-when of issue 16: on a machine's root (every existing scenario) the container code changes no
    check result and no finding; the container checks all pass."""
    results = {}
    for name in sorted(SCENARIOS):
        root = sc.clean_workstation(tmp_path / name)
        sc.comfyui_process(root)
        SCENARIOS[name](root)
        results[name] = root
    with_container = {n: diagnose(HostRoot(r), runner=RecordedRunner()) for n, r in results.items()}
    monkeypatch.setattr(engine, "_container_of", lambda ctx: None)
    import rocmdesk.diagnosis.in_container as in_container

    monkeypatch.setattr(in_container, "for_container", lambda result, info: result)
    for name, root in results.items():
        report = with_container[name]
        assert "container" not in report.host, name
        mine = [r for r in report.results if r.area == "Container"]
        assert [r.status for r in mine] == [Status.PASS] * len(mine), (name, [(r.id, r.reason) for r in mine])
        plain = diagnose(HostRoot(root), runner=RecordedRunner())
        strip = lambda rep: [(r.id, r.status, r.reason, [f.to_json() for f in r.findings])  # noqa: E731
                             for r in rep.results if r.area != "Container"]
        assert strip(report) == strip(plain), name
