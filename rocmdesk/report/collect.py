"""Collection for support bundles: which host files go in, read from the source root.

What goes in is *derived*, not hand-listed: capture runs GPU discovery, one sample and the whole
diagnosis over a :class:`RecordingRoot` that notes every path they touch, and adds the short explicit
list of :data:`rocmdesk.report.filters.EXPLICIT` (GPU sysfs folders, configuration folders) so a
support engineer sees the same machine even where a check did not look. Every path passes the
allow-list of :func:`rocmdesk.report.filters.allowed`; nothing here changes content (that is
:mod:`rocmdesk.report.reduce` and :mod:`rocmdesk.report.redact`).
"""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import posixpath
import re
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rocmdesk.diagnosis.initramfs_listing import list_image_lines, module_records
from rocmdesk.diagnosis.runner import diagnose
from rocmdesk.host import (
    DEFAULT_MAX_BYTES,
    CommandResult,
    CommandRunner,
    HostReadError,
    HostRoot,
    RecordedRunner,
    device_placeholder_json,
    runner_for,
)
from rocmdesk.report import filters
from rocmdesk.report.redact import KFD_ID_KEYS, SERIAL_FILE_NAMES
from rocmdesk.telemetry import proc_scan
from rocmdesk.telemetry.accounts import parse_group, parse_passwd, parse_proc_status
from rocmdesk.telemetry.backends.sysfs import SysfsBackend

log = logging.getLogger(__name__)

CAPTURE_MAX_FILE_BYTES = 2 << 20  # a larger file is left out (noted in the manifest)
CAPTURE_MAX_LIST_ENTRIES = 5000  # names kept from one listed folder
MAX_WALK_LINKS = 40
COPY, STAND_IN = "copy", "stand-in"
COMFYUI_FILES = frozenset({"requirements.txt", "pyproject.toml"})  # checks.python_torch._node_requirements
# what the Python environment readers open inside an environment (python_envs, torch metadata)
PYTHON_ENV_FILES = frozenset({"pyvenv.cfg", "METADATA", "PKG-INFO", "version.py", "top_level.txt", "INSTALLER"})


# ==============================================================================================
# Recording what the app reads
# ==============================================================================================


class RecordingRoot(HostRoot):
    """A HostRoot that notes every host path read, listed or looked at, with the current reason."""

    def __init__(self, root: str | os.PathLike[str] = "/") -> None:
        super().__init__(root)
        self.accesses: dict[str, tuple[set[str], list[str]]] = {}  # path -> (kinds, [reason])
        self.reason = "read by rocmdesk"
        self.pending: list[str] = []  # paths whose reason is decided later (per check)

    def note(self, host_path: str | os.PathLike[str], kind: str) -> None:
        path = posixpath.normpath("/" + os.fspath(host_path).lstrip("/"))
        entry = self.accesses.get(path)
        if entry is None:
            self.accesses[path] = ({kind}, [self.reason])
            self.pending.append(path)
        else:
            entry[0].add(kind)

    def assign_pending(self, reason: str) -> None:
        """Give the paths noted since the last call the reason ``reason`` (``read by check X``)."""
        for path in self.pending:
            self.accesses[path][1][0] = reason
        self.pending = []

    def join(self, host_path):
        self.note(host_path, "touch")
        return super().join(host_path)

    def resolve_host_path(self, host_path):
        self.note(host_path, "touch")
        return super().resolve_host_path(host_path)

    def real_path(self, host_path):
        self.note(host_path, "touch")
        return super().real_path(host_path)

    def read_text(self, host_path, max_bytes=DEFAULT_MAX_BYTES):
        self.note(host_path, "read")
        return super().read_text(host_path, max_bytes)

    def read_bytes(self, host_path, max_bytes=DEFAULT_MAX_BYTES):
        self.note(host_path, "read")
        return super().read_bytes(host_path, max_bytes)

    def listdir(self, host_path):
        self.note(host_path, "list")
        return super().listdir(host_path)

    def stat(self, host_path):
        self.note(host_path, "stat")
        return super().stat(host_path)

    def exists(self, host_path):
        self.note(host_path, "stat")
        return super().exists(host_path)

    def is_dir(self, host_path):
        self.note(host_path, "stat")
        return super().is_dir(host_path)

    def is_file(self, host_path):
        self.note(host_path, "stat")
        return super().is_file(host_path)

    def readlink(self, host_path):
        self.note(host_path, "link")
        return super().readlink(host_path)


@dataclass
class Observation:
    """What one run of discovery, sampling and diagnosis over the source root showed."""

    accesses: dict[str, tuple[set[str], list[str]]]
    commands: dict[str, dict]  # RecordedRunner JSON
    diagnosis: dict | None = None  # the diagnosis JSON (findings on the source machine)
    snapshot: Any = None  # telemetry Snapshot of the one sample, when the backend exists
    notes: list[str] = field(default_factory=list)


def observe(root: HostRoot, python_envs: Sequence[str] = (), runner: CommandRunner | None = None,
            diagnose_fn: Callable[..., Any] | None = None) -> Observation:
    """Run discovery, one sample and the diagnosis on ``root``, noting every path they read."""
    rec = RecordingRoot(root.root)
    notes: list[str] = []
    runner = runner if runner is not None else runner_for(root)
    snapshot = None
    rec.reason = "read by GPU discovery and the sysfs backend"
    try:
        backend = SysfsBackend(rec)
        backend.discover()
        snapshot = backend.sample()
        try:
            snapshot.processes = backend.processes()
        except Exception as exc:  # per-process use is optional
            log.info("processes not captured: %s", exc)
        backend.close()
    except Exception as exc:  # (a bundle of a broken machine is the point)
        notes.append(f"sampling failed: {type(exc).__name__}: {exc}")
    rec.assign_pending("read by GPU discovery and the sysfs backend")
    diagnosis = None
    if diagnose_fn is None:
        diagnose_fn = diagnosis_function()
    if diagnose_fn is not None:
        rec.reason = "read by the diagnosis"

        def progress(result: Any, *_rest: Any) -> None:
            check_id = getattr(result, "id", None)
            rec.assign_pending(f"read by check {check_id}" if check_id else "read by the diagnosis")

        try:
            report = diagnose_fn(rec, runner=runner, python_envs=tuple(python_envs), progress=progress)
            diagnosis = report.to_json() if hasattr(report, "to_json") else report
        except Exception as exc:
            log.exception("diagnosis failed during capture")
            notes.append(f"the diagnosis failed during capture: {type(exc).__name__}: {exc}")
        rec.assign_pending("read by the diagnosis (finding Python environments and facts)")
    return Observation(rec.accesses, _commands_json(runner), diagnosis, snapshot, notes)


def diagnosis_function() -> Callable[..., Any]:
    """The diagnosis a capture runs (tests pass their own ``diagnose_fn`` instead)."""
    return diagnose


def _commands_json(runner: CommandRunner) -> dict[str, dict]:
    out: dict[str, dict] = {}
    if isinstance(runner, RecordedRunner):
        out.update(runner.to_json())
    for result in runner.history:
        if result.error and "not recorded" in result.error:
            continue
        out[RecordedRunner.key(result.argv)] = CommandResult.to_json(result)
    return out


# ==============================================================================================
# Building members from the source root
# ==============================================================================================


@dataclass
class RawMember:
    """A member in source terms (host path), before redaction."""

    path: str  # host path without the leading "/"
    kind: str  # "file", "link", "dir"
    why: str
    data: bytes = b""
    target: str = ""  # link: the resolved host path of the target (absolute)
    mtime: float = 0.0


class Collector:
    """Materializes host paths of the source root as raw members, links included."""

    def __init__(self, root: HostRoot) -> None:
        self.root = root
        self.members: dict[str, RawMember] = {}
        self.notes: list[str] = []
        self.skipped: set[str] = set()
        self.identifiers: set[str] = set()
        self.gpu_pids = gpu_processes(root)
        self._kinds: dict[tuple[str, str], bool] = {}  # (kind, folder) -> is a ComfyUI install / an env

    def allowed(self, path: str) -> bool:
        return filters.allowed(path, self.gpu_pids)

    # -- path walking ----------------------------------------------------------------------------
    def _src(self, parts: Sequence[str]) -> str:
        return os.path.join(self.root.root, *parts)

    def resolve(self, host_path: str, why: str, record_links: bool = True) -> str | None:
        """Walk ``host_path`` inside the root, adding every symlink passed; returns the real host path."""
        pending = [p for p in host_path.split("/") if p and p != "."]
        pending.reverse()
        parts: list[str] = []
        links = 0
        while pending:
            name = pending.pop()
            if name == "..":
                if parts:
                    parts.pop()
                continue
            if parts == ["proc"] and name == "self":  # kept as a folder, never as a link to a pid
                parts.append(name)
                continue
            src = self._src([*parts, name])
            try:
                target = os.readlink(src)
            except OSError:
                parts.append(name)
                continue
            links += 1
            if links > MAX_WALK_LINKS:
                return None
            base = [] if target.startswith("/") else list(parts)
            resolved = _lexical("/".join([*base, target])) if not target.startswith("/") else _lexical(target)
            link_path = "/".join([*parts, name])
            if (record_links and self.allowed(link_path) and link_path not in self.members
                    and _link_ok(link_path, resolved)):
                self.members[link_path] = RawMember(link_path, "link", why, target=resolved)
            pending.extend(reversed([p for p in resolved.split("/") if p]))
            parts = []
        return "/".join(parts)

    def add_link(self, host_path: str, why: str) -> None:
        """Keep a symbolic link (and the links on its way) without copying what it points to.

        ``/proc/<pid>/exe`` names the interpreter a GPU process runs; the diagnosis only reads the
        link (HostRoot.readlink / resolve_host_path), so the binary itself never enters the bundle.
        """
        self.resolve(host_path, why)
        parent = host_path.strip("/").rsplit("/", 1)[0]
        if parent and self.allowed(parent):
            self._add_parents(parent + "/x", why)

    def add_path(self, host_path: str, why: str, kinds: Iterable[str] = ("read",)) -> None:
        kinds = set(kinds)
        if _PROCESS_LINK.match(host_path.strip("/")):
            self.add_link(host_path, why)  # what a process runs or holds open: the link, never the target
            return
        real = self.resolve(host_path, why)
        if real is None or real == "":
            return
        if not self.allowed(real):
            if real not in self.skipped:
                self.skipped.add(real)
            return
        src = self._src([real])
        try:
            st = os.lstat(src)
        except OSError:
            return
        self._add_parents(real, why)
        if stat.S_ISDIR(st.st_mode):
            self._add_dir(real, why)
            # Python-environment walkers scan home folders with os.scandir(root.join(...)): a
            # folder touched there was listed, so keep its names too.
            if "list" in kinds or ("touch" in kinds and real.startswith("home/")):
                self.add_listing(real, why)
        elif real.startswith("dev/"):
            self._add_dev_entry(real, why)
        elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
            self._add_device(real, st, why)
        elif stat.S_ISREG(st.st_mode):
            self._add_file(real, st, why)

    def _add_parents(self, real: str, why: str) -> None:
        parts = real.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            self._add_dir("/".join(parts[:i]), why)

    def _add_dir(self, real: str, why: str) -> None:
        if real and real not in self.members:
            self.members[real] = RawMember(real, "dir", why)

    def add_listing(self, real: str, why: str) -> None:
        """Keep the names in a listed folder: subfolders as folders, links as links."""
        src = self._src([real])
        try:
            names = sorted(os.listdir(src))[:CAPTURE_MAX_LIST_ENTRIES]
        except OSError:
            return
        for name in names:
            child = f"{real}/{name}"
            if not self.allowed(child) or child in self.members:
                continue
            try:
                st = os.lstat(self._src([child]))
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                self.resolve(child, f"{why} (folder listing)")
            elif stat.S_ISDIR(st.st_mode):
                self._add_dir(child, f"{why} (folder listing)")
            elif stat.S_ISREG(st.st_mode) and child.startswith("home/") and filters.home_file_ok(child):
                self._add_file(child, st, f"{why} (folder listing)")  # pyvenv.cfg, main.py: metadata

    def _add_dev_entry(self, real: str, why: str) -> None:
        """Any /dev entry (a device, or a root folder's stand-in: a regular file, a FIFO, a socket, a placeholder)
        becomes a placeholder with its type, mode, owner and group, read the way the diagnosis reads it
        (HostRoot.stat decodes a placeholder), so a bundle's diagnosis sees what the source's did (issue 10)."""
        try:
            st = self.root.stat("/" + real)
        except HostReadError:
            return
        self._add_device(real, st, why)

    def home_file_need(self, real: str) -> str | None:
        """Why a file in a home folder goes in (COPY or STAND_IN), or None: it stays home.

        Home folders are personal: a file goes in only when a check reads it in its place, the
        shell profile and rootless Xorg log at their fixed paths, a Python environment's metadata
        inside the environment, and a ComfyUI install's own requirements.txt and pyproject.toml
        and those of its custom nodes (not every such file under home: other projects stay).
        """
        if not filters.home_file_ok(real):
            return None
        parts = real.split("/")
        name = parts[-1]
        if name in filters.SHELL_RC or fnmatch.fnmatch(name, "Xorg.*.log") or name.endswith(".conf"):
            return COPY  # filters.home_file_ok placed them (~/.bashrc, .local/share/xorg, environment.d)
        folder = "/".join(parts[:-1])
        if name in COMFYUI_FILES or name == "main.py":
            if self._is_comfyui(folder):
                return STAND_IN if name == "main.py" else COPY
            if name in COMFYUI_FILES and len(parts) >= 3 and parts[-3] == "custom_nodes" \
                    and self._is_comfyui("/".join(parts[:-3])):
                return COPY
        if name in PYTHON_ENV_FILES or name.endswith(".json") or parts[-2].endswith((".dist-info", ".egg-info")):
            if self._in_python_env(parts):
                return COPY if name in PYTHON_ENV_FILES or "conda-meta" in parts else None
        return None

    def _is_comfyui(self, folder: str) -> bool:
        """ComfyUI's own test (python_envs._walk_home): main.py beside a custom_nodes folder."""
        key = ("comfyui", folder)
        if key not in self._kinds:
            src = self._src([folder])
            self._kinds[key] = (os.path.isfile(os.path.join(src, "main.py"))
                                and os.path.isdir(os.path.join(src, "custom_nodes")))
        return self._kinds[key]

    def _in_python_env(self, parts: Sequence[str]) -> bool:
        """Is a path inside a venv (pyvenv.cfg) or conda prefix (conda-meta/) below the home folder?"""
        for end in range(len(parts) - 1, 2, -1):
            folder = "/".join(parts[:end])
            key = ("env", folder)
            if key not in self._kinds:
                src = self._src([folder])
                self._kinds[key] = (os.path.isfile(os.path.join(src, "pyvenv.cfg"))
                                    or os.path.isdir(os.path.join(src, "conda-meta")))
            if self._kinds[key]:
                return True
        return False

    def _add_device(self, real: str, st: os.stat_result, why: str) -> None:
        owner, group = account_names(self.root, st.st_uid, st.st_gid)
        xattrs = {}
        acl = self.root.getxattr("/" + real, "system.posix_acl_access")
        if acl is not None:
            xattrs["system.posix_acl_access"] = acl
        data = (json.dumps(device_placeholder_json(st, owner, group, xattrs), indent=1) + "\n").encode()
        self.members[real] = RawMember(real, "file", f"{why} (device node: mode and owner only)", data,
                                       mtime=st.st_mtime)

    def _add_file(self, real: str, st: os.stat_result, why: str) -> None:
        if real in self.members and self.members[real].kind == "file":
            return
        if real.startswith("home/"):
            need = self.home_file_need(real)
            if need is None:
                self.skipped.add(real)
                return
            if need == STAND_IN:  # only its presence counts (ComfyUI's main.py)
                self.members[real] = RawMember(real, "file", f"{why} (empty stand-in: only its presence is "
                                               "checked)", b"", mtime=st.st_mtime)
                return
        rule = filters.rule_for(real)
        if rule == filters.LISTING:
            return  # initramfs images: listed separately, never copied
        try:
            limit = (filters.REDUCED_MAX_BYTES if real in filters.REDUCED_FILES or filters.reduced(real)
                     else CAPTURE_MAX_FILE_BYTES)
            with open(self._src([real]), "rb") as fh:
                data = fh.read(limit + 1)
        except OSError as exc:
            self.notes.append(f"/{real} could not be read on the source machine ({exc.strerror or exc})")
            return
        if len(data) > limit and filters.module_name(real) is not None and real.startswith(_MODULE_TREES):
            from rocmdesk.diagnosis.initramfs_listing import standin

            self.members[real] = RawMember(real, "file", f"{why} (stand-in: the module's size, sha256 and "
                                           "modinfo are recorded in rocmdesk/initramfs/modules.json)",
                                           standin("/" + real, st.st_size), mtime=st.st_mtime)
            return
        if len(data) > limit:
            self.notes.append(f"/{real} left out: larger than {limit >> 20} MiB")
            return
        if data.startswith(b"\x7fELF") and filters.module_name(real) is None:
            self.notes.append(f"/{real} left out: a program or library, not configuration")
            return
        if os.path.basename(real) in SERIAL_FILE_NAMES:
            value = data.decode("utf-8", "replace").strip()
            if value:
                self.identifiers.add(value)
        if real.endswith("/properties") and "/kfd/" in real:
            for line in data.decode("utf-8", "replace").splitlines():
                key, _, value = line.partition(" ")
                if key in KFD_ID_KEYS and value.strip():
                    self.identifiers.add(value.strip())
        self.members[real] = RawMember(real, "file", why, data, mtime=st.st_mtime)

    # -- explicit paths --------------------------------------------------------------------------
    def expand(self, pattern: str) -> list[str]:
        """Host paths matching a pattern whose components may hold shell wildcards."""
        paths = [""]
        for comp in [p for p in pattern.split("/") if p]:
            nxt = []
            for base in paths:
                if any(c in comp for c in "*?["):
                    for name in self.root.listdir("/" + base):
                        if fnmatch.fnmatch(name, comp):
                            nxt.append(f"{base}/{name}".lstrip("/"))
                else:
                    nxt.append(f"{base}/{comp}".lstrip("/"))
            paths = nxt
        return [p for p in paths if self.root.exists("/" + p)]

    def add_tree(self, host_path: str, why: str, depth: int, name_ok: Callable[[str], bool] = lambda n: True
                 ) -> None:
        """Regular files of a folder (and its subfolders down to ``depth``) through the root."""
        real = self.resolve(host_path, why)
        if real is None:
            return
        src = self._src([real])
        try:
            names = sorted(os.listdir(src))[:CAPTURE_MAX_LIST_ENTRIES]
        except OSError:
            return
        self._add_parents(real + "/x", why)
        for name in names:
            if not name_ok(name):
                continue
            child = f"{real}/{name}"
            try:
                st = os.lstat(self._src([child]))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and st.st_mode & 0o444:
                self.add_path(child, why)
            elif stat.S_ISDIR(st.st_mode) and depth > 0:
                self.add_tree(child, why, depth - 1, name_ok)


_MODULE_TREES = ("lib/modules/", "usr/lib/modules/")
_PROCESS_LINK = re.compile(r"^proc/(\d+|self)/(exe|cwd|root|fd/\d+)$")


def _add_gpu_processes(col: Collector) -> None:
    """What the diagnosis knows of each process holding the GPU open, read or not during capture:
    its name, command line, executable link, GPU-stack environment and its GPU file descriptors
    (facts.gpu_processes, python_envs.gpu_process_interpreters)."""
    for pid in sorted(col.gpu_pids, key=int):
        why = f"process {pid} holds a GPU device open (its name, command line, interpreter, GPU environment)"
        for name in ("comm", "cmdline", "environ", "status"):
            if os.path.lexists(col._src(["proc", pid, name])):
                col.add_path(f"/proc/{pid}/{name}", why)
        if os.path.islink(col._src(["proc", pid, "exe"])):
            col.add_link(f"/proc/{pid}/exe", why)
        try:
            fds = sorted(os.listdir(col._src(["proc", pid, "fd"])))[:1024]
        except OSError:
            continue
        for fd in fds:
            if os.path.islink(col._src(["proc", pid, "fd", fd])):
                col.add_link(f"/proc/{pid}/fd/{fd}", why)  # only GPU device links are kept (_link_ok)


def _link_ok(link_path: str, target: str) -> bool:
    """A process's fd links are kept only when they point at a GPU device."""
    if re.match(r"proc/\d+/fd/", link_path):
        return target.startswith(filters.GPU_DEVICE_PREFIXES)
    return True


def gpu_processes(root: HostRoot) -> frozenset[str]:
    """Pids (as text) of processes holding any GPU device open, display nodes included (the one bounded scan,
    :func:`rocmdesk.telemetry.proc_scan.gpu_processes`)."""
    return frozenset(str(pid) for pid, _comm in proc_scan.gpu_processes(root, proc_scan.ANY_GPU_DEVICE))


def _lexical(path: str) -> str:
    """Normalize a host path lexically, ``..`` stopping at the root; no leading slash."""
    out: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if out:
                out.pop()
        else:
            out.append(part)
    return "/".join(out)



_PADDING = " \t\n\x00"  # sysfs dumps read with a fixed buffer (LACT's) keep NUL padding after the value


def _add_gpu_trees(col: Collector) -> None:
    """Every AMD display device's sysfs folder (plus hwmon and fw_version), bound or not."""
    why = "GPU sysfs folder (what the backends read)"
    devices = col.root.listdir("/sys/bus/pci/devices")
    for bdf in devices:
        base = f"/sys/bus/pci/devices/{bdf}"
        vendor = (col.root.try_read_text(f"{base}/vendor") or "").strip(_PADDING).lower()
        klass = (col.root.try_read_text(f"{base}/class") or "").strip(_PADDING).lower()
        if vendor != "0x1002":
            continue
        if klass and not klass.startswith(("0x03", "0x12")):
            continue  # an AMD audio function or bridge beside the GPU
        if not klass and not col.root.listdir(f"{base}/drm") and not col.root.listdir(f"{base}/hwmon"):
            continue
        col.add_tree(base, why, 0, filters.sysfs_name_ok)
        for sub in ("hwmon", "fw_version"):
            col.add_tree(f"{base}/{sub}", why, 1, filters.sysfs_name_ok)
        col.add_path(f"{base}/driver", why, ("stat",))
        col.add_path(f"{base}/drm", why, ("list",))
        for name in col.root.listdir(f"{base}/drm"):
            col.add_tree(f"{base}/drm/{name}", why, 0, lambda n: n in ("dev", "uevent"))
            col.add_path(f"{base}/drm/{name}/device", why, ("stat",))
    for name in col.root.listdir("/sys/class/drm"):
        col.add_path(f"/sys/class/drm/{name}", "DRM card list", ("stat",))


# -- initramfs listings ----------------------------------------------------------------------------


def _initramfs_listings(root: HostRoot, col: Collector) -> list[tuple[str, str, float]]:
    """(image name, listing text, image mtime) of each initramfs image under /boot."""
    out: list[tuple[str, str, float]] = []
    images = [n for n in root.listdir("/boot") if filters.is_initramfs_name(n)]
    if not images:
        return out
    for name in images:
        host = f"/boot/{name}"
        try:
            mtime = root.stat(host).st_mtime
            text = "\n".join(list_image_lines(root.real_path(host), host)) + "\n"
        except Exception as exc:  # a damaged or unreadable image is worth a note, not a failed capture
            col.notes.append(f"{host} could not be listed ({type(exc).__name__}: {exc})")
            continue
        out.append((name, text, mtime))
    return out


def _module_records(root: HostRoot, col: Collector) -> dict | None:
    """The running kernel's amdgpu module files: recorded (size, sha256, modinfo) and each kept as
    a file or, when too large, a stand-in, so ``initramfs-stale`` compares the same things."""
    kver = (root.try_read_text("/proc/sys/kernel/osrelease") or "").strip()
    if not kver or "/" in kver:
        return None

    records = module_records(root, kver)
    if not records["modules"] and not records["notes"]:
        return None
    for path in records["modules"]:
        col.add_path(path, "an amdgpu module the running kernel could load (initramfs checks)")
    col.notes.extend(records["notes"])
    return records


def _prune_home(col: Collector) -> None:
    """Folders of a home that lead to nothing kept go: the environment walk lists every folder it passes,
    but only the way to an environment or a ComfyUI install (and what is inside them) is needed, and the
    names of other folders say what else the person works on."""
    home_members = [m for m in col.members.values() if m.path.startswith("home/")]
    needed: set[str] = set()
    for m in home_members:
        parts = m.path.split("/")
        if m.kind != "dir" or len(parts) <= 2 or _inside_install(col, parts):
            needed.update("/".join(parts[:i]) for i in range(2, len(parts) + 1))
    for m in home_members:
        if m.kind == "dir" and m.path not in needed:
            del col.members[m.path]
            col.skipped.add(m.path)


def _inside_install(col: Collector, parts: Sequence[str]) -> bool:
    """Is a home folder a Python environment or ComfyUI install, or inside one?"""
    return col._in_python_env([*parts, "x"]) or any(
        col._is_comfyui("/".join(parts[:end])) for end in range(3, len(parts) + 1))


def account_names(root: HostRoot, uid: int, gid: int) -> tuple[str | None, str | None]:
    """Names of a uid and gid in the root's own passwd/group (never the analyst's)."""
    owner = next((p.name for p in parse_passwd(root.try_read_text("/etc/passwd") or "") if p.uid == uid), None)
    group = next((g.name for g in parse_group(root.try_read_text("/etc/group") or "") if g.gid == gid), None)
    return owner, group


def access_gids(root: HostRoot) -> frozenset[int]:
    """The groups that decide GPU access on the source: the user's session and primary groups and
    the groups of /dev/kfd and the DRM nodes (``/etc/group`` keeps their lines)."""
    status = parse_proc_status(root.try_read_text("/proc/self/status") or "")
    gids = set(status.groups or ()) if status is not None else set()
    if status is not None:
        gids.update(p.gid for p in parse_passwd(root.try_read_text("/etc/passwd") or "")
                    if p.uid == status.uid and p.gid is not None)
    for node in ("/dev/kfd", *root.glob("/dev/dri", "renderD*"), *root.glob("/dev/dri", "card*")):
        try:
            gids.add(root.stat(node).st_gid)
        except OSError:
            continue
    return frozenset(gids)


@dataclass
class Collection:
    """The raw members of a bundle and what collecting them found out."""

    members: dict[str, RawMember]
    notes: list[str]
    skipped: set[str]
    identifiers: set[str]
    listings: list[tuple[str, str, float]]
    modules: dict | None
    gids: frozenset[int]


def collect(root: HostRoot, obs: Observation) -> Collection:
    """Every allowed host path the observation touched, the explicit list, the GPU trees and GPU
    processes, plus the initramfs listings and amdgpu module records."""
    col = Collector(root)
    for path, (kinds, reasons) in sorted(obs.accesses.items()):
        if path == "/":
            continue
        col.add_path(path, reasons[0], kinds)
    for pattern, why, depth in filters.EXPLICIT:
        for match in col.expand(pattern):
            if depth < 0:
                col.add_path(match, why)
            else:
                col.add_tree(match, why, depth, filters.sysfs_name_ok)
    _add_gpu_trees(col)
    _add_gpu_processes(col)
    _prune_home(col)
    listings = _initramfs_listings(root, col)
    modules = _module_records(root, col)
    return Collection(col.members, col.notes, col.skipped, col.identifiers, listings, modules, access_gids(root))
