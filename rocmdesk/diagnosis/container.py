"""Is this root a Docker / Podman container, and which engine made it? (issue 16, item 1)

Everything is read from files under the root, so ``--root`` folders and snapshots of a container are
recognised as well as the live one. The signs, strongest first:

* ``/run/.containerenv``: written by Podman (and Buildah) into every container; it holds
  ``engine="podman-<version>"``, ``name=``, ``image=`` and ``rootless=1`` (containers/podman,
  docs/source/markdown/podman-run.1.md.in, "--privileged" / ".containerenv").
* ``/.dockerenv``: an empty file Docker's daemon creates at the container's root (moby/moby,
  daemon/initlayer).
* ``container=`` in PID 1's environment: Podman sets ``container=podman``, systemd-nspawn
  ``container=systemd-nspawn``, LXC ``container=lxc`` (systemd's CONTAINER_INTERFACE.md).
* ``/proc/1/cgroup`` naming ``docker-<id>.scope`` / ``/docker/<id>`` / ``libpod-<id>`` / ``/kubepods``
  (cgroup v1 and v2 without a private cgroup namespace).
* ``/proc/self/mountinfo``: ``/etc/hostname`` or ``/etc/resolv.conf`` bind-mounted from
  ``.../docker/containers/<id>/`` or ``.../overlay-containers/<id>/userdata/``, or the root itself an
  overlay whose lower dirs live in ``/var/lib/docker`` or ``containers/storage``.

A host that merely *runs* containers shows none of these for its own PID 1 and its own root mount.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

from rocmdesk.host import HostReadError, HostRoot
from rocmdesk.telemetry.parsers import bounded_int

log = logging.getLogger(__name__)

ENGINES = ("docker", "podman")
ENGINE_NAMES = {"docker": "Docker", "podman": "Podman", "kubernetes": "Kubernetes", "lxc": "LXC",
                "systemd-nspawn": "systemd-nspawn", "containerd": "containerd"}
OVERFLOW_ID = 65534  # kernel.overflowgid default: an id not mapped into this user namespace shows as it
MAX_LINES = 2000  # mountinfo of a busy container: lines read at most

# The files detection and the container checks read; the bundle allow-list takes them in
# (rocmdesk.report.filters) so a container's snapshot is diagnosed the same as the container itself.
CONTAINER_CAPTURE: tuple[tuple[str, str], ...] = (
    ("/.dockerenv", "Docker container marker"),
    ("/run/.containerenv", "Podman container marker (engine, rootless)"),
    ("/proc/1/cgroup", "container engine (cgroup of PID 1)"),
    ("/proc/1/environ", "container= and GPU-stack variables of the container's main process (filtered)"),
    ("/proc/self/mountinfo", "container root, /dev/shm size (other mounts removed)"),
    ("/proc/self/uid_map", "user namespace (rootless container)"),
    ("/proc/self/gid_map", "user namespace (rootless container)"),
    ("/proc/self/attr/current", "SELinux label of the process (container_t)"),
    ("/proc/sys/kernel/overflowgid", "group id of unmapped groups in a user namespace"),
    ("/sys/fs/selinux/enforce", "SELinux enforcing"),
    ("/sys/fs/selinux/booleans/container_use_devices", "SELinux boolean for devices in containers"),
)

_CGROUP_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("podman", re.compile(r"libpod-(?:conmon-)?[0-9a-f]{12,64}|/libpod_parent/")),
    ("docker", re.compile(r"docker-[0-9a-f]{12,64}\.scope|/docker/[0-9a-f]{12,64}")),
    ("kubernetes", re.compile(r"/kubepods")),
    ("containerd", re.compile(r"cri-containerd-[0-9a-f]{12,64}")),
    ("lxc", re.compile(r"/lxc(?:\.payload)?[./]")),
)
_MOUNT_SOURCE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("podman", re.compile(r"/overlay-containers/[0-9a-f]{12,64}/userdata/|containers/storage/")),
    ("docker", re.compile(r"/docker/containers/[0-9a-f]{12,64}/|/var/lib/docker/")),
)
_BIND_TARGETS = frozenset({"/etc/hostname", "/etc/resolv.conf", "/etc/hosts", "/run/.containerenv"})


@dataclass(frozen=True, slots=True)
class Sign:
    """One reason to believe this is a container: where it was read and what it said."""

    path: str
    line: int | None
    text: str


@dataclass(frozen=True, slots=True)
class Mount:
    """One /proc/self/mountinfo line, the fields the checks need."""

    line: int
    root: str  # the path inside the mounted file system (field 4)
    mount_point: str  # field 5
    fstype: str
    source: str
    super_options: str  # "rw,size=65536k" for a tmpfs

    @property
    def size_bytes(self) -> int | None:
        """A tmpfs ``size=`` option in bytes (k/m/g suffixes as mount(8) writes them)."""
        match = re.search(r"(?:^|,)size=(\d{1,20})([kmgKMG]?)(?:,|$)", self.super_options)
        if not match:
            return None
        scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[match.group(2).lower()]
        return int(match.group(1)) * scale

    @property
    def text(self) -> str:
        return f"{self.root} {self.mount_point} - {self.fstype} {self.source} {self.super_options}"


@dataclass(frozen=True, slots=True)
class ContainerInfo:
    engine: str | None  # "docker", "podman", "kubernetes", "lxc", ... ; None when only "a container" is known
    rootless: bool | None  # a user namespace maps the container's root to an ordinary host user
    signs: tuple[Sign, ...] = ()
    name: str | None = None  # Podman's name= / image= from /run/.containerenv
    image: str | None = None
    id_map: tuple[tuple[int, int, int], ...] = field(default=())  # /proc/self/gid_map rows

    @property
    def engine_name(self) -> str:
        return ENGINE_NAMES.get(self.engine or "", "")

    @property
    def run_command(self) -> str:
        """``docker run`` / ``podman run``; the Docker form when the engine is not one of the two
        (Kubernetes and LXC have no run line: the checks say so)."""
        return "podman run" if self.engine == "podman" else "docker run"

    def describe(self) -> str:
        """"a rootless Podman container" / "a Docker container" / "a container"."""
        rootless = "rootless " if self.rootless else ""
        return f"a {rootless}{self.engine_name} container".replace("  ", " ") if self.engine_name else \
            f"a {rootless}container"

    def header(self) -> str:
        """The diagnosis header line: ``inside a Docker container`` (with the image when known)."""
        text = f"inside {self.describe()}"
        if self.image:
            text += f" · image {self.image}"
        return text

    def to_json(self) -> dict[str, Any]:
        return {"engine": self.engine, "rootless": self.rootless, "name": self.name, "image": self.image,
                "header": self.header(),
                "signs": [{"path": s.path, "line": s.line, "text": s.text} for s in self.signs]}


# -- pure parsers ------------------------------------------------------------------------------------


def parse_containerenv(text: str) -> dict[str, str]:
    """``key="value"`` lines of /run/.containerenv (empty for rootful containers without --privileged)."""
    out = {}
    for line in text.splitlines()[:200]:
        key, sep, value = line.partition("=")
        if sep and re.fullmatch(r"[a-z_]{1,32}", key.strip()):
            out[key.strip()] = value.strip().strip('"')[:200]
    return out


def parse_mountinfo(text: str) -> list[Mount]:
    """Lines of /proc/<pid>/mountinfo (proc(5)); malformed ones are left out."""
    out = []
    for number, line in enumerate(text.splitlines()[:MAX_LINES], start=1):
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 2:
            continue
        out.append(Mount(number, _unescape(fields[3]), _unescape(fields[4]), tail[0], tail[1],
                         tail[2] if len(tail) > 2 else ""))
    return out


def _unescape(path: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes (\\040)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)


def parse_id_map(text: str) -> tuple[tuple[int, int, int], ...]:
    """/proc/<pid>/uid_map or gid_map rows: (inside, outside, count)."""
    rows: list[tuple[int, int, int]] = []
    for line in text.splitlines()[:340]:
        parts = line.split()
        if len(parts) == 3 and all(p.isascii() and p.isdigit() for p in parts):
            inside, outside, count = (bounded_int(p) for p in parts)  # past 64 bits: garbage, not a ValueError
            if inside is not None and outside is not None and count is not None:
                rows.append((inside, outside, count))
    return tuple(rows)


def is_identity_map(rows: tuple[tuple[int, int, int], ...]) -> bool:
    """The initial user namespace maps every id to itself: ``0 0 4294967295``."""
    return rows == ((0, 0, 4294967295),)


def cgroup_engine(text: str) -> tuple[str, int, str] | None:
    """(engine, line, text) of the first /proc/1/cgroup line naming a container engine."""
    for number, line in enumerate(text.splitlines()[:200], start=1):
        for engine, pattern in _CGROUP_PATTERNS:
            if pattern.search(line):
                return engine, number, line.strip()[:200]
    return None


def mount_engine(mounts: list[Mount]) -> tuple[str, Mount] | None:
    """The engine that made this mount namespace: bind mounts of /etc/hostname etc. from a container's
    folder, or an overlay root with the engine's storage as lower dirs."""
    for mount in mounts:
        if mount.mount_point in _BIND_TARGETS:
            for engine, pattern in _MOUNT_SOURCE_PATTERNS:
                if pattern.search(mount.root):
                    return engine, mount
    for mount in mounts:
        if mount.mount_point == "/" and mount.fstype == "overlay":
            for engine, pattern in _MOUNT_SOURCE_PATTERNS:
                if pattern.search(mount.super_options):
                    return engine, mount
    return None


def environ_value(data: bytes, name: str) -> str | None:
    for item in data.split(b"\0")[:4096]:
        key, sep, value = item.partition(b"=")
        if sep and key == name.encode():
            return value.decode("utf-8", "replace")[:200]
    return None


# -- detection from a root ----------------------------------------------------------------------------


def _read(root: HostRoot, path: str) -> str | None:
    try:
        return root.read_text(path)
    except HostReadError:
        return None


def mounts_of(root: HostRoot) -> list[Mount]:
    text = _read(root, "/proc/self/mountinfo")
    return parse_mountinfo(text) if text else []


def detect(root: HostRoot) -> ContainerInfo | None:
    """The container this root is, or None for a machine (or a root with no sign of one)."""
    signs: list[Sign] = []
    engines: list[str] = []
    rootless: bool | None = None
    name = image = None
    containerenv = _read(root, "/run/.containerenv")
    if containerenv is not None and root.is_file("/run/.containerenv"):
        fields = parse_containerenv(containerenv)
        engine_field = fields.get("engine", "")
        signs.append(Sign("/run/.containerenv", None,
                          f"engine={engine_field}" if engine_field else "exists (written by Podman)"))
        engines.append("podman")
        if fields.get("rootless") in ("0", "1"):
            rootless = fields["rootless"] == "1"
        name, image = fields.get("name") or None, fields.get("image") or None
    if root.is_file("/.dockerenv"):
        signs.append(Sign("/.dockerenv", None, "exists (created by Docker)"))
        engines.append("docker")
    try:
        pid1_env = root.read_bytes("/proc/1/environ")
    except HostReadError:
        pid1_env = b""
    value = environ_value(pid1_env, "container")
    if value:
        signs.append(Sign("/proc/1/environ", None, f"container={value}"))
        engines.append({"oci": "", "docker": "docker"}.get(value, value))
    cgroup = _read(root, "/proc/1/cgroup")
    found = cgroup_engine(cgroup) if cgroup else None
    if found:
        signs.append(Sign("/proc/1/cgroup", found[1], found[2]))
        engines.append(found[0])
    mount = mount_engine(mounts_of(root))
    if mount:
        signs.append(Sign("/proc/self/mountinfo", mount[1].line, mount[1].text[:200]))
        engines.append(mount[0])
    if not signs:
        return None
    gid_map = parse_id_map(_read(root, "/proc/self/gid_map") or "")
    uid_map = parse_id_map(_read(root, "/proc/self/uid_map") or "")
    if rootless is None and uid_map:
        rootless = not is_identity_map(uid_map) and any(inside == 0 and outside != 0
                                                        for inside, outside, _n in uid_map)
    engine = next((e for e in engines if e in ENGINES), None) or next((e for e in engines if e), None)
    return ContainerInfo(engine, rootless, tuple(signs), name, image, gid_map)


def overflow_gid(root: HostRoot) -> int:
    text = (_read(root, "/proc/sys/kernel/overflowgid") or "").strip()
    value = bounded_int(text) if text.isascii() and text.isdigit() else None
    return OVERFLOW_ID if value is None else value
