"""Real public reports of ROCm in containers, rebuilt as container roots (issue 16, item 5).

Each root holds what the reporter's container showed (device listing, groups, environment, /dev/shm,
ROCm versions); what a thread did not show is assumed and said so in the test's docstring. Each test
asserts the finding, its severity, its evidence and that the fix names what solved it in the thread.
Sources were read with the issue search (corpus "issues") on 2026-12-02.
"""

from __future__ import annotations

import io
import os

import pytest

from rocmdesk.diagnosis.model import Severity, Status
from rocmdesk.diagnosis.runner import diagnose
from rocmdesk.host import HostRoot, RecordedRunner
from tests.support.containers import Run, container_root
from tests.support.python_envs import add_gpu_process, make_venv


def render_text_of(report) -> str:
    from rocmdesk.commands.diagnose import Style, render_text

    return render_text(report, Style(io.StringIO(), enabled=False))


def _diagnose(root):
    return diagnose(HostRoot(root), runner=RecordedRunner())


def _finding(report, check_id):
    found = [f for f in report.findings if f.id == check_id]
    assert len(found) == 1, [(f.id, f.title) for f in report.findings]
    return found[0]


def _no_host_actions(report):
    """Inside a container no finding carries an action the app could run (a one-click fix)."""
    for finding in report.findings:
        assert finding.fix is None or finding.fix.action is None, finding


def _steps(finding) -> str:
    return "\n".join(finding.fix.steps)


def test_ollama_6685_started_with_gpus_all_has_no_devices(tmp_path):
    """ollama/ollama#6685 (first comments): RX 7900 XTX, Ubuntu 24.04, ROCm 6.2 on the host; the container
    was started as `docker run --gpus=all ... ollama/ollama:rocm` (no --device), so /dev/kfd and the render
    node are absent inside. rick-github asked for `--device` as in ollama's docs. Assumed: the image's
    ROCm 6.0 (ollama's rocm image of that time, as the reporter says later: 'on the pod it's rocm6.0')."""
    root = container_root(tmp_path / "r", Run(image="ollama/ollama:rocm", devices=(), rocm="6.0.2-115"))
    report = _diagnose(root)
    finding = _finding(report, "container-devices-not-passed")
    assert finding.severity is Severity.ERROR
    where = {(e.path, e.text) for e in finding.evidence}
    assert ("/dev/kfd", "does not exist in the container") in where
    assert ("/.dockerenv", "exists (created by Docker)") in where
    assert any(e.path == "/sys/class/kfd/kfd/topology/nodes" for e in finding.evidence)  # the host has the GPU
    # Docker leaves no image name inside the container (Podman's /run/.containerenv has one)
    assert "`docker run --device=/dev/kfd --device=/dev/dri ... IMAGE`" in _steps(finding)
    # the machine check that would have said "load the module / kernel without KFD" steps aside
    kfd = next(r for r in report.results if r.id == "kfd-missing")
    assert kfd.status is Status.SKIP and "container-devices-not-passed" in kfd.reason
    assert "  inside a Docker container\n" in render_text_of(report)
    _no_host_actions(report)


def test_ollama_6685_rootless_docker_devices_in_a_shifted_group(tmp_path):
    """ollama/ollama#6685 (rtaic-coder, svaningelgem 2024-09-10/12): rootless Docker; inside,
    `crw-rw---- 1 nobody daemon 235, 0 /dev/kfd` and `crw-rw----+ 1 nobody bin 226, 128 renderD128`,
    rocminfo 'Unable to open /dev/kfd read-write: Permission denied'; what worked:
    `docker run --device=/dev/kfd --device=/dev/dri --group-add daemon rocm/pytorch:latest`. The group
    numbers depend on the subgid mapping; the thread's listing has kfd in daemon (1)."""
    root = container_root(tmp_path / "r", Run(rootless=True, device_gid=1, card_gid=1, uid=0, groups=(0,)))
    report = _diagnose(root)
    finding = _finding(report, "container-device-group")
    assert finding.severity is Severity.ERROR
    assert any(e.path == "/dev/kfd" and "daemon" in e.text for e in finding.evidence)
    assert any(e.path == "/proc/self/status" and e.text.startswith("Groups:") for e in finding.evidence)
    assert "--group-add=1" in _steps(finding)  # = --group-add daemon, by number
    assert "keep-groups" not in _steps(finding)  # Docker has no keep-groups
    _no_host_actions(report)


def test_rocm_docker_116_rocm_terminal_user_only_in_video(tmp_path):
    """ROCm/ROCm-docker#116: `docker run --device=/dev/kfd --device=/dev/dri --group-add video ...
    rocm/rocm-terminal`; inside, `groups` = `rocm-user sudo video`, rocminfo 'Permission denied'. The
    thread is open; the fix shown by ROCm-docker PR #93 is adding the render group whose GID the devices
    have (109 there). Assumed: the host's render GID 109 and rocm-user uid 1000."""
    root = container_root(tmp_path / "r", Run(image="rocm/rocm-terminal:latest", device_gid=109, uid=1000,
                                              groups=(1000, 27, 44),
                                              passwd_extra="rocm-user:x:1000:1000::/home/rocm-user:/bin/bash\n",
                                              group_extra="rocm-user:x:1000:\n"))
    report = _diagnose(root)
    finding = _finding(report, "container-device-group")
    assert {e.path for e in finding.evidence} >= {"/dev/kfd", "/dev/dri/renderD128", "/proc/self/status"}
    assert "--group-add=109" in _steps(finding)
    # the machine's group check would have offered `usermod` on the image's /etc/group: it steps aside
    for check_id in ("user-not-in-render-group", "group-not-active-in-session"):
        result = next(r for r in report.results if r.id == check_id)
        assert result.status is Status.SKIP and "container-device-group" in result.reason
    _no_host_actions(report)


def test_rocm_docker_pr93_working_run_line_fires_nothing(tmp_path):
    """ROCm/ROCm-docker PR #93's test: `docker run -u 1000 --device=/dev/kfd --device=/dev/dri --group-add video
    --group-add render` with the image's render group at GID 109 = the devices' group: rocminfo lists
    gfx90a. Same root as #116, with the render group added: no container finding."""
    root = container_root(tmp_path / "r", Run(gpu="rx6900xt", device_gid=109, uid=1000, groups=(1000, 44, 109),
                                              group_extra="render:x:109:\n"))
    report = _diagnose(root)
    assert [f.id for f in report.findings if f.id.startswith("container-")] == []


def test_firstbober_4_rootless_podman_devices_in_nogroup(tmp_path):
    """Firstbober/rocm-pytorch-gfx803-docker#4: `podman run --device=/dev/kfd --device=/dev/dri
    --group-add=video ...`; rocminfo 'root is not member of "nogroup" group' and 'Permission denied':
    rootless Podman shows the unmapped host group as nogroup. The maintainer: the container never has
    more rights than the host user, who must be in video/render. Podman's documented way to hand the
    host groups through is `--group-add keep-groups` (crun). Assumed: gfx803 host (RX 580)."""
    root = container_root(tmp_path / "r", Run(engine="podman", rootless=True, gpu="rx580", device_gid=65534,
                                              card_gid=65534, image="localhost/rocm-pytorch-gfx803"))
    report = _diagnose(root)
    finding = _finding(report, "container-device-group")
    assert any(e.path == "/run/.containerenv" for e in finding.evidence)
    assert "nogroup" in finding.explanation
    steps = _steps(finding)
    assert "`podman run --device=/dev/kfd --device=/dev/dri --group-add=keep-groups" in steps
    assert "render and video groups" in steps  # the host user's side, as the maintainer said
    assert "inside a rootless Podman container" in render_text_of(report)
    _no_host_actions(report)


def test_legacy_1549_rootless_docker_unmapped_groups(tmp_path):
    """ROCm/legacy-rocm-build#1549: rootless Docker with rocm/pytorch; rocminfo 'Permission denied' and
    'root is not member of "video" group'. serhii-nakon's working answer: add the host's render and video
    GIDs (44, 105) to /etc/subgid, then use the shifted groups inside. Inside, the unmapped groups show as
    65534 (assumed: the listing before the subgid change was not posted)."""
    root = container_root(tmp_path / "r", Run(rootless=True, device_gid=65534, card_gid=65534))
    report = _diagnose(root)
    finding = _finding(report, "container-device-group")
    steps = _steps(finding)
    assert "/etc/subgid" in steps and "keep-groups" not in steps
    assert finding.fix.action is None


def test_legacy_1798_kfd_missing_in_a_rocm_pytorch_container(tmp_path):
    """ROCm/legacy-rocm-build#1798: rocm5.2_ubuntu20.04_py3.7_pytorch_1.11.0_navi21 on a 6900 XT (Arch host);
    inside, rocminfo 'ROCk module is loaded' then 'Unable to open /dev/kfd read-write: No such file or
    directory'. The answer that worked (for Apptainer's --containall) was to bind /dev/kfd and /dev/dri;
    for Docker that is --device. Assumed: Docker (the reporter's prompt is root@<container id>)."""
    root = container_root(tmp_path / "r", Run(gpu="rx6900xt", devices=(), rocm="5.2.0-65",
                                              image="rocm/pytorch:rocm5.2_ubuntu20.04_py3.7_pytorch_1.11.0_navi21"))
    report = _diagnose(root)
    finding = _finding(report, "container-devices-not-passed")
    assert any(e.path == "/proc/modules" for e in finding.evidence)  # 'ROCk module is loaded': the host's amdgpu
    assert "--device=/dev/kfd --device=/dev/dri" in _steps(finding)
    assert not [f for f in report.findings if f.id == "amdgpu-not-loaded"]


def test_ollama_2870_rx6650_needs_the_override_on_the_run_line(tmp_path):
    """ollama/ollama#2870: RX 6650 (gfx1032, Navi 23 like the RX 6600 dump) crashing in ollama:0.1.27-rocm;
    solved with `docker run -d -e HSA_OVERRIDE_GFX_VERSION=10.3.0 --device /dev/kfd --device /dev/dri ...`."""
    root = container_root(tmp_path / "r", Run(gpu="rx6600", image="ollama/ollama:0.1.27-rocm", rocm="6.0.0-91"))
    report = _diagnose(root)
    finding = _finding(report, "hsa-override-suggested")
    assert any("gfx1032" in e.text for e in finding.evidence)
    steps = _steps(finding)
    assert "`docker run -e HSA_OVERRIDE_GFX_VERSION=10.3.0 ... IMAGE`" in steps
    assert "~/.profile" not in steps and "systemctl" not in steps  # host-shell advice does not reach a container
    _no_host_actions(report)


def test_ollama_8473_override_given_with_e_fires_nothing(tmp_path):
    """ollama/ollama#8473: RX 6600 (gfx1032) works with `docker run ... --env HSA_OVERRIDE_GFX_VERSION="10.3.0"
    ollama/ollama:rocm`; the override is in PID 1's environment, so nothing fires."""
    root = container_root(tmp_path / "r", Run(gpu="rx6600", image="ollama/ollama:rocm",
                                              env={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"}))
    report = _diagnose(root)
    assert not [f for f in report.findings if f.id.startswith(("hsa-", "container-"))]


def _pytorch_training(root, pid=1):
    prefix = make_venv(root, "opt/conda/envs/py_3.10", torch="rocm", conda=True, py="3.10")
    os.unlink(prefix / "bin" / "python")
    (prefix / "bin" / "python3.10").write_bytes(b"#!interpreter\n")
    add_gpu_process(root, pid, "/opt/conda/envs/py_3.10/bin/python3.10", ["python", "/opt/project/train.py"])


def test_pytorch_5040_dataloader_bus_error_with_dockers_64m_shm(tmp_path):
    """pytorch/pytorch#5040: 'DataLoader worker (pid 13) is killed by signal: Bus error' with num_workers>0
    inside Docker (/opt/project/train.py, /opt/conda); the answers: `--shm-size` or `--ipc=host`. Rebuilt
    with ROCm's PyTorch image and Docker's default 64 MiB /dev/shm."""
    root = container_root(tmp_path / "r", Run(shm_bytes=64 << 20))
    _pytorch_training(root, pid=7)
    report = _diagnose(root)
    finding = _finding(report, "container-shm-small")
    assert finding.severity is Severity.WARNING
    assert any(e.path == "/proc/self/mountinfo" and "size=65536k" in e.text for e in finding.evidence)
    assert any("PyTorch" in e.text for e in finding.evidence)
    steps = _steps(finding)
    assert "--shm-size=8g" in steps and "--ipc=host" in steps


def test_ipc_host_shm_is_not_small(tmp_path):
    root = container_root(tmp_path / "r", Run(shm_bytes=None))
    _pytorch_training(root, pid=7)
    result = next(r for r in _diagnose(root).results if r.id == "container-shm-small")
    assert result.status is Status.PASS


def test_podman_9706_selinux_label_disable_as_a_trade_off(tmp_path):
    """containers/podman#9706 and containers/container-selinux#269: a confined container (container_t) on an
    enforcing host cannot use a passed device although modes and groups allow it; `--security-opt
    label=disable` made it work (#9706), and the container_use_devices boolean is the policy's switch (#269,
    'getsebool container_use_devices'). Rebuilt with the GPU's nodes; assumed: the boolean readable as off."""
    root = container_root(tmp_path / "r", Run(engine="podman", rootless=False, device_gid=0, uid=0,
                                              selinux_label="system_u:system_r:container_t:s0:c17,c28",
                                              selinux_enforce="1", container_use_devices="0 0"))
    report = _diagnose(root)
    finding = _finding(report, "container-selinux-denies")
    assert any(e.path == "/proc/self/attr/current" and "container_t" in e.text for e in finding.evidence)
    steps = _steps(finding)
    assert "setsebool -P container_use_devices=true" in steps
    assert "--security-opt=label=disable" in steps and "trade-off" in steps
    assert finding.fix.action is None


def test_selinux_boolean_on_passes(tmp_path):
    root = container_root(tmp_path / "r", Run(engine="podman", selinux_label="system_u:system_r:container_t:s0:c1,c2",
                                              selinux_enforce="1", container_use_devices="1 1"))
    result = next(r for r in _diagnose(root).results if r.id == "container-selinux-denies")
    assert result.status is Status.PASS


@pytest.mark.parametrize(("dkms", "rocm", "fires"), [
    ("6.3.6", "6.4.1-120", True),  # ROCm 6.0's driver under a ROCm 6.4 image: 4 releases apart
    ("6.8.5", "6.2.4-139", False),
    ("6.8.5", "6.4.1-120", False),  # 2 apart: inside the window
    ("", "6.4.1-120", False),  # in-tree amdgpu: nothing to compare
])
def test_host_driver_against_the_image_rocm(tmp_path, dkms, rocm, fires):
    """ollama/ollama#3304 logs 'AMD Driver: 6.3.6' (ROCm 6.0's amdgpu-dkms); ROCm supports kernel driver and
    user space +/- 2 releases apart (support matrix)."""
    root = container_root(tmp_path / "r", Run(host_dkms=dkms or None, rocm=rocm))
    result = next(r for r in _diagnose(root).results if r.id == "container-driver-too-old")
    assert (result.status is Status.FAIL) is fires, result
    if fires:
        finding = result.findings[0]
        assert {e.path for e in finding.evidence} >= {"/sys/module/amdgpu/version", "/opt/rocm/.info/version"}
        assert finding.fix.action is None and finding.fix.steps[0].startswith("On the host")


def test_host_fixes_become_text_for_the_host(tmp_path):
    """The host's amdgpu blacklisted (/etc/modprobe.d is the image's, but /proc/cmdline is the host's):
    nomodeset on the host's command line gives a finding whose fix is the host's bootloader; inside the
    container it says so and carries no action."""
    root = container_root(tmp_path / "r", Run(devices=(), host_amdgpu_loaded=False))
    (root / "proc" / "cmdline").write_text("BOOT_IMAGE=/boot/vmlinuz root=/dev/sda2 ro nomodeset\n")
    report = _diagnose(root)
    host_side = [f for f in report.findings if not f.id.startswith("container-")]
    assert host_side, [f.id for f in report.findings]
    for finding in host_side:
        assert finding.fix is not None and finding.fix.action is None
        assert finding.fix.id.startswith("host-")
        assert "belongs on the host" in finding.fix.steps[0]
    devices = _finding(report, "container-devices-not-passed")
    assert devices.fix.steps[0].startswith("On the host")
