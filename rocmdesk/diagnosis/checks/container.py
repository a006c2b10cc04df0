"""Container checks: the GPU inside Docker / Podman, where the fix is the run line (issue 16, item 2).

Inside a container the kernel, amdgpu and /sys are the host's; what the container adds is which device
nodes it was given, which groups its processes have, its SELinux label, its environment and its
/dev/shm. Each check names the engine found (rocmdesk.diagnosis.container) and gives the run-line
option that fixes it. On a machine (not a container) every check here passes with "not in a container",
except ``container-gpu-users``, which is the host's view of its containers.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from rocmdesk.diagnosis.checks.permissions import status_line
from rocmdesk.diagnosis.container import ContainerInfo, mounts_of, overflow_gid
from rocmdesk.diagnosis.engine import Failed, Passed, Skipped, check
from rocmdesk.diagnosis.facts import DeviceNode, HostFacts
from rocmdesk.diagnosis.kernel_driver import COMPAT_RELEASES, ROCM_RELEASES, dkms_rocm_release, parse_version
from rocmdesk.diagnosis.model import Evidence, Fix, Severity
from rocmdesk.host import HostReadError, ReadFailure
from rocmdesk.telemetry.proc_scan import link_target

log = logging.getLogger(__name__)

AREA = "Container"
NOT_IN_CONTAINER = "not running in a container"
RW = 0o6
# PyTorch's DataLoader workers pass batches through /dev/shm; Docker's default is 64 MiB (docker run
# --shm-size: "Size of /dev/shm ... default 64MB"), too small for them (pytorch/pytorch#5040). ROCm's own
# run lines give 8-16 GiB (ROCm/ROCm-docker#116: --shm-size 16G).
SHM_MIN_BYTES = 1 << 30
SHM_SUGGESTED = "8g"


def _container(ctx) -> ContainerInfo | None:
    return getattr(ctx, "container", None)


def sign_evidence(info: ContainerInfo) -> list[Evidence]:
    return [Evidence(s.text, s.path, s.line) for s in info.signs[:2]]


def run_line(info: ContainerInfo, *options: str) -> str:
    """``docker run --device=/dev/kfd ... IMAGE``: the options, with the image when it is known."""
    return f"`{info.run_command} {' '.join(options)} ... {info.image or 'IMAGE'}`"


# -- devices not passed ------------------------------------------------------------------------------


@check("container-devices-not-passed", AREA)
def container_devices_not_passed(ctx):
    info = _container(ctx)
    if info is None:
        return Passed(NOT_IN_CONTAINER)
    facts: HostFacts = ctx.facts
    kfd = facts.root.exists("/dev/kfd")
    renders = [n for n in facts.root.listdir("/dev/dri") if n.startswith("renderD")]
    if kfd and renders:
        return Passed(f"/dev/kfd and {len(renders)} render node(s) are in the container")
    ev = sign_evidence(info)
    if not kfd:
        ev.append(Evidence("does not exist in the container", "/dev/kfd"))
    if not renders:
        ev.append(Evidence("no renderD* node in the container", "/dev/dri"))
    host_gpus = facts.kfd_gpu_nodes if facts.kfd_nodes is not None else []
    loaded = facts.amdgpu_loaded
    for line in facts.amdgpu_loaded_evidence()[:1]:
        ev.append(Evidence(line.text, line.path, line.line))
    if host_gpus:
        ev.append(Evidence(f"the host's KFD topology lists {len(host_gpus)} GPU node(s)",
                           "/sys/class/kfd/kfd/topology/nodes"))
    options = [o for o, missing in (("--device=/dev/kfd", not kfd), ("--device=/dev/dri", not renders)) if missing]
    details = [f"This is {info.describe()}; a container sees only the device nodes its run line passes in."]
    steps = [f"Start the container again with {run_line(info, *options)} (keep your other options; a running "
             "container cannot gain devices, so recreate it).",
             "With Compose, under the service: `devices: [" + ", ".join(f'"{o.split("=", 1)[1]}"' for o in options)
             + "]`.",
             "`--privileged` also passes every device, but gives the container the whole machine: prefer the "
             "--device options."]
    if info.engine not in ("docker", "podman", None):
        steps.append(f"{info.engine_name} has no run line: give the pod the GPU through its device plugin "
                     "(the AMD GPU device plugin's `amd.com/gpu` resource).")
    if loaded is False:
        details.append("The host's kernel has no amdgpu loaded (the container shares the host's kernel), so the "
                       "host has no /dev/kfd to pass in yet: fix the driver on the host first.")
        steps.insert(0, "On the host (not in the container): load amdgpu and check that `ls -l /dev/kfd /dev/dri` "
                        "shows the devices there.")
    elif kfd and not renders and facts.root.is_dir("/dev/dri"):
        details.append("/dev/dri is here but has no render node: either only card nodes were passed, or the "
                       "host itself has no render node (check `ls /dev/dri` on the host).")
    return Failed(evidence=ev, details=" ".join(details),
                  fix=Fix("container-pass-devices", False, tuple(steps)))


# -- device group not in the container user's groups -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Denied:
    node: DeviceNode
    unmapped: bool  # its group shows as the overflow gid: the host group is not mapped into this namespace


def _opens(node: DeviceNode, uid: int, gids: set[int], in_userns: bool, overflow: int) -> bool:
    if node.mode & RW == RW or uid in node.acl_users:
        return True
    if node.uid == uid and (node.mode >> 6) & RW == RW:
        return True
    if node.gid in gids and (node.mode >> 3) & RW == RW:
        return True
    # root overrides file modes (CAP_DAC_OVERRIDE) only for files whose owner and group are mapped into its
    # user namespace (capable_wrt_inode_uidgid, kernel/capability.c): rootful containers yes, rootless no
    return uid == 0 and (not in_userns or (node.uid != overflow and node.gid != overflow))


@check("container-device-group", AREA)
def container_device_group(ctx):
    info = _container(ctx)
    if info is None:
        return Passed(NOT_IN_CONTAINER)
    facts: HostFacts = ctx.facts
    nodes = facts.device_nodes()
    if not nodes:
        return Skipped("no GPU device node in the container (see container-devices-not-passed)")
    status = facts.self_status
    if status is None:
        return Skipped("the container's user is unknown (/proc/self/status unreadable)")
    overflow = overflow_gid(facts.root)
    gids = set(status.groups or ()) | ({status.gid} if status.gid is not None else set())
    in_userns = bool(info.rootless)
    denied = [_Denied(n, n.gid == overflow) for n in nodes if not _opens(n, status.uid, gids, in_userns, overflow)]
    if not denied:
        return Passed("the container's user may open /dev/kfd and the render nodes")
    ev = sign_evidence(info)
    for item in denied:
        ev.append(Evidence(item.node.describe(facts.group_name(item.node.gid)), item.node.path))
    groups = status_line(facts, "Groups")
    if groups:
        ev.append(groups)
    user = facts.user.name if facts.user else f"uid {status.uid}"
    unmapped = [d for d in denied if d.unmapped]
    mapped = sorted({d.node.gid for d in denied if not d.unmapped})
    steps: list[str] = []
    details = [f"In this {info.describe().removeprefix('a ')}, {user} is not in the group that owns "
               f"{', '.join(sorted({d.node.path for d in denied}))}."]
    if mapped:
        adds = " ".join(f"--group-add={g}" for g in mapped)
        steps.append(f"Start the container with {run_line(info, '--device=/dev/kfd', '--device=/dev/dri', adds)}: "
                     "the number is the group of the device as the container sees it (the host's render/video "
                     "GID); a group name would be looked up in the image, where it may be missing or numbered "
                     "differently.")
        steps.append("With Compose: `group_add: [" + ", ".join(f'"{g}"' for g in mapped) + "]`.")
        for gid in mapped:
            named = facts.group_name(gid)
            for name in ("render", "video"):
                entry = facts.group_by_name(name)
                if entry is not None and entry.gid not in mapped and named is None:
                    details.append(f"The image's /etc/group has {name} as GID {entry.gid}, but the device's "
                                   f"group is {gid}: the names do not match across host and image, the number "
                                   "does.")
                    ev.append(Evidence(f"{entry.name}:x:{entry.gid}:{','.join(entry.members)}", "/etc/group",
                                       entry.line))
                    break
            else:
                continue
            break
    if unmapped:
        details.append(f"The device's group shows as {overflow} (nogroup): the host's group is not mapped into "
                       "this container's user namespace, so no --group-add number can name it.")
        if info.engine == "podman" or (info.engine is None and info.rootless):
            keep = run_line(info, "--device=/dev/kfd", "--device=/dev/dri", "--group-add=keep-groups")
            steps.append(f"Start it with {keep} (rootless Podman with the crun runtime keeps your host groups "
                         "for the container's processes) and no other --group-add.")
            steps.append("On the host, your own user must be in the render and video groups "
                         "(`id` on the host shows them).")
        if info.engine in ("docker", None):
            steps.append("Rootless Docker maps only your subordinate group range: add the host's render and video "
                         "GIDs to your line in the host's /etc/subgid (`sudo usermod --add-subgids GID-GID $USER`), "
                         "restart the rootless daemon (`systemctl --user restart docker`) and start the container "
                         "with --group-add for the GID as it then appears inside; or run the container with the "
                         "rootful daemon.")
    severity = Severity.ERROR
    return Failed(evidence=ev, details=" ".join(details), severity=severity,
                  fix=Fix("container-group-add", False, tuple(steps)))


# -- SELinux ----------------------------------------------------------------------------------------------

_CONFINED_RE = re.compile(r":(container_t|container_init_t|svirt_lxc_net_t|svirt_sandbox_file_t):")


@check("container-selinux-denies", AREA)
def container_selinux_denies(ctx):
    info = _container(ctx)
    if info is None:
        return Passed(NOT_IN_CONTAINER)
    facts: HostFacts = ctx.facts
    label = (facts.read("/proc/self/attr/current") or "").replace("\0", "").strip()
    if not _CONFINED_RE.search(label):
        return Passed("the container is not confined by SELinux" if not label else
                      f"the container's SELinux label ({label[:80]}) is not a confined container type")
    enforce = (facts.read("/sys/fs/selinux/enforce") or "").strip()
    if enforce == "0":
        return Passed("SELinux is permissive")
    ev = [*sign_evidence(info), Evidence(label[:200], "/proc/self/attr/current")]
    if enforce == "1":
        ev.append(Evidence("1 (enforcing)", "/sys/fs/selinux/enforce"))
    boolean = (facts.read("/sys/fs/selinux/booleans/container_use_devices") or "").split()
    denied_stat = []
    for path in ["/dev/kfd"] + [f"/dev/dri/{n}" for n in facts.root.listdir("/dev/dri") if n.startswith("renderD")]:
        try:
            facts.root.stat(path)
        except HostReadError as exc:
            if exc.failure is ReadFailure.PERMISSION:
                denied_stat.append(path)
    if boolean and boolean[0] == "1":
        return Passed("SELinux allows devices in containers (container_use_devices is on)")
    if boolean and boolean[0] == "0":
        ev.append(Evidence(" ".join(boolean), "/sys/fs/selinux/booleans/container_use_devices"))
    for path in denied_stat:
        ev.append(Evidence("permission denied even to stat (an SELinux denial, not the file mode)", path))
    if not denied_stat and not (boolean and boolean[0] == "0"):
        return Passed("the container is SELinux-confined; no denial is visible from inside (the host's audit "
                      "log has any AVC)")
    steps = ("On the host: `sudo setsebool -P container_use_devices=true` lets confined containers use the "
             "devices passed to them; keep SELinux enforcing.",
             f"Or start the container with {run_line(info, '--security-opt=label=disable')}: a trade-off, it "
             "turns SELinux separation off for this container entirely (only the file modes then protect the "
             "host from it).",
             "Check with `sudo ausearch -m avc -ts recent` on the host: a denial names dri_device_t or the kfd "
             "device and container_t.")
    return Failed(evidence=ev, severity=Severity.ERROR if denied_stat else Severity.WARNING,
                  fix=Fix("container-selinux-devices", True, steps))


# -- /dev/shm ---------------------------------------------------------------------------------------------


@check("container-shm-small", AREA)
def container_shm_small(ctx):
    info = _container(ctx)
    if info is None:
        return Passed(NOT_IN_CONTAINER)
    mounts = [m for m in mounts_of(ctx.facts.root) if m.mount_point == "/dev/shm"]
    if not mounts:
        return Skipped("no /dev/shm mount in /proc/self/mountinfo")
    shm = mounts[-1]  # the last mount on a path is the one in effect
    size = shm.size_bytes
    if size is None or size >= SHM_MIN_BYTES:
        return Passed("/dev/shm is " + (f"{size >> 20} MiB" if size else "not size-limited"))
    torch = [e for e in ctx.python_envs.envs if e.torch is not None]
    if not torch:
        return Passed(f"/dev/shm is {size >> 20} MiB, but no PyTorch was found in the container")
    ev = [*sign_evidence(info), Evidence(shm.text[:200], "/proc/self/mountinfo", shm.line),
          Evidence(f"PyTorch {torch[0].torch.version} in {torch[0].path}")]
    return Failed(evidence=ev, subject=shm.mount_point,
                  details=f"/dev/shm is {size >> 20} MiB in this container.",
                  fix=Fix("container-shm-size", False, (
                      f"Start the container with {run_line(info, f'--shm-size={SHM_SUGGESTED}')} "
                      "(ROCm's PyTorch images are run with 8-16 GiB).",
                      f"With Compose: `shm_size: \"{SHM_SUGGESTED}\"` under the service.",
                      "`--ipc=host` also works (the host's /dev/shm), but shares the host's IPC namespace with "
                      "the container: a trade-off.",
                      "Or use fewer DataLoader workers (`num_workers=0` avoids shared memory, slowly).")))


# -- host driver older than the image's ROCm ------------------------------------------------------------

# amdgpu-dkms releases, the ROCm release each ships with, and the +/- 2 releases window of the user/kernel-space
# support matrix: rocmdesk.diagnosis.kernel_driver (sources there). The version file exists only for amdgpu-dkms.
_version = parse_version
_ROCM_RELEASES = ROCM_RELEASES


@check("container-driver-too-old", AREA)
def container_driver_too_old(ctx):
    info = _container(ctx)
    if info is None:
        return Passed(NOT_IN_CONTAINER)
    facts: HostFacts = ctx.facts
    image_rocm = facts.rocm_version
    if not image_rocm:
        return Skipped("no ROCm in the image (/opt/rocm/.info/version)")
    driver = (facts.read("/sys/module/amdgpu/version") or "").strip()
    if not driver:
        return Passed("the host runs the kernel's own amdgpu (no amdgpu-dkms version to compare)")
    image = _version(image_rocm)
    host = dkms_rocm_release(driver)
    if image is None or host is None or image not in _ROCM_RELEASES or host not in _ROCM_RELEASES:
        return Passed(f"host amdgpu-dkms {driver[:40]}, image ROCm {image_rocm[:40]}: no known pairing to compare")
    gap = _ROCM_RELEASES.index(image) - _ROCM_RELEASES.index(host)
    if gap <= COMPAT_RELEASES:
        return Passed(f"host amdgpu-dkms {driver[:40]} (ROCm {host[0]}.{host[1]}) supports the image's ROCm "
                      f"{image_rocm[:40]}")
    ev = [*sign_evidence(info), Evidence(driver[:80], "/sys/module/amdgpu/version"),
          Evidence(image_rocm[:80], "/opt/rocm/.info/version")]
    return Failed(evidence=ev, details=(
        f"The host's amdgpu-dkms {driver} came with ROCm {host[0]}.{host[1]}; the image's ROCm {image_rocm} is "
        f"{gap} releases newer. A container brings its own ROCm user space but uses the host's kernel driver, and "
        f"ROCm supports driver and user space only {COMPAT_RELEASES} releases apart."),
        fix=Fix("container-host-driver", True, (
            f"On the host: update amdgpu-dkms to the release of ROCm {image[0]}.{image[1]} (amdgpu-install from "
            "repo.radeon.com for that release), then reboot the host.",
            f"Or use an image built for ROCm {host[0]}.{host[1]}-{host[0]}.{host[1] + COMPAT_RELEASES} (the "
            "image's tag usually names its ROCm release).")))


# -- host side: which containers use the GPU ------------------------------------------------------------

_CONTAINER_ID_RE = re.compile(r"(?:docker-|libpod-|cri-containerd-|/docker/)([0-9a-f]{12,64})")


@check("container-gpu-users", AREA)
def container_gpu_users(ctx):
    """On the host: processes with the GPU open whose mount namespace differs from ours are containers."""
    if _container(ctx) is not None:
        return Passed("running inside a container (the host's containers are not visible from here)")
    facts: HostFacts = ctx.facts
    own = link_target(facts.root, "/proc/self/ns/mnt") or link_target(facts.root, "/proc/1/ns/mnt")
    users = []
    for pid, comm in facts.gpu_processes:
        cgroup = facts.read(f"/proc/{pid}/cgroup") or ""
        match = _CONTAINER_ID_RE.search(cgroup)
        ns = link_target(facts.root, f"/proc/{pid}/ns/mnt")
        if match or (own and ns and ns != own):
            engine = "Podman" if "libpod" in cgroup else "Docker" if "docker" in cgroup else "a container"
            ident = match.group(1)[:12] if match else (ns or "")
            users.append((pid, comm, engine, ident))
    if not users:
        return Passed("no process in a container has the GPU open")
    ev = [Evidence(f"{comm} (pid {pid}) in {engine} {ident}".rstrip(), f"/proc/{pid}/cgroup")
          for pid, comm, engine, ident in users[:20]]
    return Failed(evidence=ev, severity=Severity.INFO, subject=f"{len(users)} process(es)",
                  details="These containers see the GPU: they were started with /dev/kfd and a render node. "
                          "Their GPU use shows up in the Processes view like any other process.",
                  fix=Fix("container-gpu-users-info", False, (
                      "Nothing to fix. To see a container's run options: `docker inspect --format "
                      "'{{.HostConfig.Devices}} {{.HostConfig.GroupAdd}}' ID` (or `podman inspect`).",)))
