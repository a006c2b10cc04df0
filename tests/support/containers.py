"""Container roots: what a process inside a Docker / Podman container sees, built as a folder.

The host's kernel shows through (/proc/modules, /sys with the GPU and its KFD topology, the kernel
release); the image supplies /etc (its own passwd and group), /opt/rocm and its Python; the run line
decides /dev (which device nodes, with the host's numeric group), PID 1's environment, /dev/shm's size
and, for rootless engines, the id maps. Device nodes are snapshot placeholders, so the trees read the same
when the tests run as root.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tests.support.scenarios import PROC_MODULES, device_node, environ_bytes, status_text, write
from tests.support.sysfs_tree import GpuSpec, build_root

CONTAINER_ID = "4f1a9c3e7b2d" + "0" * 52
HOST_KERNEL = "6.8.0-45-generic"
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

UBUNTU_IMAGE_GROUP = """\
root:x:0:
daemon:x:1:
bin:x:2:
sys:x:3:
adm:x:4:
tty:x:5:
sudo:x:27:
video:x:44:
plugdev:x:46:
users:x:100:
nogroup:x:65534:
"""
UBUNTU_IMAGE_PASSWD = """\
root:x:0:0:root:/root:/bin/bash
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
"""


@dataclass
class Run:
    """How the container was started (what its run line and the image gave it)."""

    engine: str = "docker"  # "docker" | "podman"
    rootless: bool = False
    image: str = "rocm/pytorch:latest"
    gpu: str = "rx7900xtx"
    gfx_target_version: int | None = None
    devices: tuple[str, ...] = ("/dev/kfd", "/dev/dri")  # what --device passed
    device_gid: int = 992  # the devices' group as the container sees it
    device_mode: int = 0o660
    card_gid: int | None = 44
    uid: int = 0
    groups: tuple[int, ...] = (0,)  # the container process's groups (Groups: of /proc/self/status)
    passwd_extra: str = ""
    group_extra: str = ""
    env: dict[str, str] = field(default_factory=dict)  # -e options (PID 1's environment)
    shm_bytes: int | None = 64 << 20  # Docker's default; None: --ipc=host (the host's tmpfs, no small size)
    rocm: str | None = "6.2.4-139"
    host_dkms: str | None = None  # /sys/module/amdgpu/version (amdgpu-dkms on the host)
    selinux_label: str | None = None
    selinux_enforce: str | None = None
    container_use_devices: str | None = None
    host_amdgpu_loaded: bool = True


def container_root(tmp: Path | str, run: Run | None = None) -> Path:
    run = run or Run()
    root = Path(tmp)
    root.mkdir(parents=True, exist_ok=True)
    build_root(root, [GpuSpec(run.gpu, pci="0000:03:00.0", card=0, gfx_target_version=run.gfx_target_version)],
               amdgpu_live=run.host_amdgpu_loaded)
    write(root, "/proc/modules", PROC_MODULES if run.host_amdgpu_loaded else "nvme 61440 3 - Live 0x0\n")
    write(root, "/proc/sys/kernel/osrelease", HOST_KERNEL + "\n")
    write(root, "/proc/version", f"Linux version {HOST_KERNEL} (buildd@lcy02-amd64-017) #45-Ubuntu SMP\n")
    write(root, "/proc/cmdline", f"BOOT_IMAGE=/boot/vmlinuz-{HOST_KERNEL} root=/dev/nvme0n1p2 ro quiet splash\n")
    write(root, "/etc/os-release", 'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\nID=ubuntu\n'
                                   "ID_LIKE=debian\n")
    write(root, "/etc/passwd", UBUNTU_IMAGE_PASSWD + run.passwd_extra)
    write(root, "/etc/group", UBUNTU_IMAGE_GROUP + run.group_extra)
    write(root, "/proc/self/status", status_text(uid=run.uid, gid=run.groups[0] if run.groups else run.uid,
                                                 groups=list(run.groups), name="rocmdesk"))
    env = {"PATH": IMAGE_PATH, "HOSTNAME": CONTAINER_ID[:12], "HOME": "/root", **run.env}
    if run.engine == "podman":
        env = {"container": "podman", **env}
    write(root, "/proc/1/environ", environ_bytes(env))
    write(root, "/proc/self/environ", environ_bytes(env))
    if run.engine == "docker":
        write(root, "/.dockerenv", "")
        write(root, "/proc/1/cgroup", f"0::/system.slice/docker-{CONTAINER_ID}.scope\n" if not run.rootless else
              f"0::/user.slice/user-1000.slice/user@1000.service/app.slice/docker.service/docker-{CONTAINER_ID}.scope\n")
        store = "/var/lib/docker" if not run.rootless else "/home/user1/.local/share/docker"
        binds = f"{store}/containers/{CONTAINER_ID}"
        lower = f"{store}/overlay2/l/ABCDEF:{store}/overlay2/l/GHIJKL"
    else:
        write(root, "/run/.containerenv", f'engine="podman-4.9.3"\nname="ollama"\nid="{CONTAINER_ID}"\n'
                                          f'image="{run.image}"\nimageid="9f2c"\nrootless={int(run.rootless)}\n'
                                          "graphRootMounted=1\n")
        write(root, "/proc/1/cgroup", f"0::/user.slice/user-1000.slice/user@1000.service/user.slice/"
                                      f"libpod-{CONTAINER_ID}.scope/container\n")
        store = "/home/user1/.local/share/containers/storage" if run.rootless else "/var/lib/containers/storage"
        binds = f"{store}/overlay-containers/{CONTAINER_ID}/userdata"
        lower = f"{store}/overlay/l/ABCDEF"
    shm = (f"1210 1199 0:330 / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs shm rw,size={run.shm_bytes >> 10}k\n"
           if run.shm_bytes is not None else
           "1210 1199 0:26 / /dev/shm rw,nosuid,nodev - tmpfs tmpfs rw,inode64\n")
    write(root, "/proc/self/mountinfo",
          f"1197 1100 0:325 / / rw,relatime master:545 - overlay overlay rw,lowerdir={lower},upperdir={store}/x/diff\n"
          "1198 1197 0:328 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n"
          "1199 1197 0:329 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755,inode64\n"
          + shm +
          f"1220 1197 259:2 {binds}/resolv.conf /etc/resolv.conf rw,relatime - ext4 /dev/nvme0n1p2 rw\n"
          f"1221 1197 259:2 {binds}/hostname /etc/hostname rw,relatime - ext4 /dev/nvme0n1p2 rw\n")
    if run.rootless:
        write(root, "/proc/self/uid_map", "         0       1000          1\n         1     100000      65536\n")
        write(root, "/proc/self/gid_map", "         0       1000          1\n         1     100000      65536\n")
    else:
        write(root, "/proc/self/uid_map", "         0          0 4294967295\n")
        write(root, "/proc/self/gid_map", "         0          0 4294967295\n")
    write(root, "/proc/sys/kernel/overflowgid", "65534\n")
    if "/dev/kfd" in run.devices:
        device_node(root, "/dev/kfd", 235, 0, run.device_gid, run.device_mode, uid=65534 if run.rootless else 0)
    if "/dev/dri" in run.devices:
        device_node(root, "/dev/dri/renderD128", 226, 128, run.device_gid, run.device_mode,
                    uid=65534 if run.rootless else 0)
        if run.card_gid is not None:
            device_node(root, "/dev/dri/card0", 226, 0, run.card_gid, 0o660, uid=65534 if run.rootless else 0)
    (root / "dev").mkdir(exist_ok=True)
    if run.rocm:
        write(root, "/opt/rocm/.info/version", run.rocm + "\n")
    if run.host_dkms:
        write(root, "/sys/module/amdgpu/version", run.host_dkms + "\n")
    if run.selinux_label:
        write(root, "/proc/self/attr/current", run.selinux_label + "\0")
    if run.selinux_enforce is not None:
        write(root, "/sys/fs/selinux/enforce", run.selinux_enforce)
    if run.container_use_devices is not None:
        write(root, "/sys/fs/selinux/booleans/container_use_devices", run.container_use_devices)
    return root
