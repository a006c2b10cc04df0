"""Whose machine a diagnosis describes: the live machine, a root folder, a snapshot bundle, or the demo.

A fix may act only on the machine it was diagnosed on (issue 10, item 1), so every diagnosis result
carries a :class:`DiagnosisTarget` and the fix layer (``rocmdesk.fixes.guard``) refuses to reach pkexec
or the helper for any target but the live machine read at root ``/``. The identity (distribution,
kernel, capture time, host name as the files show it) is what the fix dialog and ``rocmdesk fix`` print
so nobody mistakes a customer's machine for their own.
"""

from __future__ import annotations

import enum
import logging
import os
import time
from dataclasses import dataclass
from typing import Any

from rocmdesk.host import HostReadError, HostRoot

log = logging.getLogger(__name__)

HOSTNAME_FILES = ("/proc/sys/kernel/hostname", "/etc/hostname")
MAX_SHOWN = 80  # identity values come from hostile files: keep them short and printable


class TargetKind(str, enum.Enum):
    LIVE = "live"
    ROOT = "root"
    SNAPSHOT = "snapshot"
    DEMO = "demo"


@dataclass(frozen=True, slots=True)
class MachineIdentity:
    distro: str | None = None
    kernel: str | None = None
    captured: float | None = None  # when the files were read (live, root) or recorded (snapshot)
    hostname: str | None = None  # as the files show it (a bundle's is redacted)

    def to_json(self) -> dict[str, Any]:
        return {"distro": self.distro, "kernel": self.kernel, "captured": self.captured,
                "captured_utc": _utc(self.captured), "hostname": self.hostname}

    def summary(self) -> str:
        """``host ws-17 · Ubuntu 24.04.1 LTS · kernel 6.8.0-51-generic · captured 2026-12-01 21:42 UTC``."""
        parts = [f"host {self.hostname}" if self.hostname else "",
                 self.distro or "", f"kernel {self.kernel}" if self.kernel else "",
                 f"captured {_utc(self.captured)}" if self.captured else ""]
        return " · ".join(p for p in parts if p) or "unknown machine"


@dataclass(frozen=True, slots=True)
class DiagnosisTarget:
    """The machine a diagnosis (and so each of its findings) describes.

    ``root`` is the folder that was read (``/`` for the live machine, the unpacked folder of a bundle);
    ``source`` is what the user named (a bundle's file, a root folder, a demo machine's name).
    """

    kind: TargetKind
    root: str
    machine: MachineIdentity = MachineIdentity()
    source: str = ""

    @property
    def applicable(self) -> bool:
        """True only for the live machine read at ``/``: the one place a fix may run."""
        return self.kind is TargetKind.LIVE and os.path.realpath(self.root) == "/"

    def whose(self) -> str:
        """Whose machine, in words for a dialog heading or a CLI line."""
        if self.kind is TargetKind.LIVE:
            return "this machine"
        if self.kind is TargetKind.SNAPSHOT:
            return f"the machine in the snapshot {os.path.basename(self.source) or self.source}"
        if self.kind is TargetKind.DEMO:
            return f"the demo machine {self.source}" if self.source else "the demo machine"
        return f"the machine in the root folder {self.source or self.root}"

    def describe(self) -> str:
        return f"{self.whose()} ({self.machine.summary()})"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "source": self.source, "root": self.root,
                "applicable": self.applicable, "machine": self.machine.to_json()}


def _utc(ts: float | None) -> str | None:
    if not ts:
        return None
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ts))


def _clean(value: str | None) -> str | None:
    """One printable line, at most MAX_SHOWN characters; None when nothing is left."""
    if value is None:
        return None
    text = "".join(c for c in value.strip().splitlines()[0] if c.isprintable()) if value.strip() else ""
    return text[:MAX_SHOWN] or None


def read_identity(root: HostRoot, captured: float | None = None) -> MachineIdentity:
    """Distribution, kernel and host name as the root's files show them (never this machine's uname)."""
    from rocmdesk.diagnosis.etc_parsers import kernel_release_of, parse_os_release

    def read(path: str) -> str | None:
        try:
            return root.read_text(path, 1 << 16)
        except (HostReadError, OSError, ValueError):
            return None

    os_release = parse_os_release(read("/etc/os-release") or read("/usr/lib/os-release") or "")
    distro = os_release.get("PRETTY_NAME") or " ".join(
        x for x in (os_release.get("NAME"), os_release.get("VERSION_ID")) if x) or None
    hostname = next((h for h in (_clean(read(p)) for p in HOSTNAME_FILES) if h), None)
    return MachineIdentity(_clean(distro), kernel_release_of(read("/proc/sys/kernel/osrelease")), captured,
                           hostname)


def live_target(root: HostRoot | None = None) -> DiagnosisTarget:
    root = root or HostRoot("/")
    return DiagnosisTarget(TargetKind.LIVE, root.root, read_identity(root, time.time()), "/")


def root_target(root: HostRoot | str, source: str | None = None) -> DiagnosisTarget:
    """A root folder; the live machine when the folder is ``/`` itself."""
    host = root if isinstance(root, HostRoot) else HostRoot(root)
    if os.path.realpath(host.root) == "/":
        return live_target(host)
    return DiagnosisTarget(TargetKind.ROOT, host.root, read_identity(host, time.time()), source or host.root)


def snapshot_target(root: HostRoot, bundle_path: str, created: float | None) -> DiagnosisTarget:
    return DiagnosisTarget(TargetKind.SNAPSHOT, root.root, read_identity(root, created), bundle_path)


def demo_target(root: HostRoot, name: str = "", created: float | None = None) -> DiagnosisTarget:
    return DiagnosisTarget(TargetKind.DEMO, root.root, read_identity(root, created), name)


def target_for_bundle(opened: Any) -> DiagnosisTarget:
    """The target of an :class:`rocmdesk.report.bundle.OpenedBundle`."""
    return snapshot_target(opened.root, str(opened.path), getattr(opened, "created", None))


def target_for_view(root: HostRoot, mode: str, bundle_path: str | None = None, created: float | None = None,
                    demo_name: str = "") -> DiagnosisTarget:
    """The target of what a window shows (its mode ``live``/``demo``/``snapshot``).

    Anything but ``live`` at ``/`` is not this machine, whatever its root: the demo runs over ``/`` today
    and must still never reach the helper.
    """
    if mode == "demo":
        return demo_target(root, demo_name, created)
    if mode == "snapshot" and bundle_path:
        return snapshot_target(root, bundle_path, created)
    if mode == "live" and root.is_live:
        return live_target(root)
    return DiagnosisTarget(TargetKind.ROOT, root.root, read_identity(root, time.time()), root.root)
