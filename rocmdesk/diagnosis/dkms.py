"""The DKMS state of AMD's out-of-tree amdgpu: which kernels it was built and installed for, and why a build failed.

Read from the DKMS tree, the same files ``dkms status`` reads (dkms(8) "status"; dell/dkms ``dkms.in``):
``/var/lib/dkms/amdgpu/<version>/<kernel>/<arch>/module/amdgpu.ko*`` exists once built, the
``/var/lib/dkms/amdgpu/kernel-<kernel>-<arch>`` link once installed, and ``<version>/build/make.log`` holds the last
build's output ("DKMS make.log for amdgpu-<version> for kernel <kernel> (<arch>)"). A recorded ``dkms status`` output
(support snapshot) is parsed when the tree is not there. Parsers are pure; :func:`read_tree` does the reading.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

DKMS_TREE = "/var/lib/dkms/amdgpu"
MAKE_LOG_MAX_BYTES = 4 << 20
# The tree's names and the build logs: what a support bundle keeps so the check answers the same there
# (the bundle collector imports it; rocmdesk/report).
BUNDLE_PATHS: tuple[str, ...] = (DKMS_TREE, f"{DKMS_TREE}/*/build/make.log", f"{DKMS_TREE}/*/*/*/module",
                                 f"{DKMS_TREE}/kernel-*")
_MODULE_RE = re.compile(r"amdgpu\.ko(\.(xz|zst|gz))?")
_MAKE_LOG_HEAD_RE = re.compile(r"DKMS make\.log for amdgpu-(\S+) for kernel (\S+) \(([^)]+)\)")
# the lines that say why a build stopped: compiler errors, make's "*** ... Stop.", the configure check AMD's
# Makefile aborts with ("*** dma_resv->seq is missing., exit....  Stop.")
_ERROR_LINE_RE = re.compile(r"(?:\berror:|\*\*\*.*(?:Stop\.|exit)|\bError \d+\b|^# exit code: [1-9])")
# new dkms: "amdgpu/6.8.5-2041575.24.04, 6.8.0-51-generic, x86_64: installed"; old: "amdgpu, 4.3-52.el7, 3.10.0, x86_64:
# installed (original_module exists)"; "amdgpu/6.7.0-1787201.22.04: added" (no kernel: source added, nothing built)
_STATUS_RE = re.compile(r"^amdgpu[/,]\s*([^,:\s]+)(?:,\s*([^,:\s]+))?(?:,\s*([^,:\s]+))?:\s*(\w+)")
# three numbers at least: 6.12.12(.60401)-..., 5.18.2.22.40-...; rock-dkms "4.3-59" (ROCm 4.3) and Radeon Software's
# "18.30-641594" are release numbers, not a Linux version (ROCm/amdgpu#115)
_VERSION_BASE_RE = re.compile(r"^(?:\d+:)?(\d{1,9})\.(\d{1,9})\.\d+")
_KERNEL_SERIES_RE = re.compile(r"^(\d{1,9})\.(\d{1,9})")


@dataclass(frozen=True, slots=True)
class MakeLog:
    path: str
    version: str | None
    kernel: str | None
    arch: str | None
    errors: tuple[tuple[int, str], ...]  # (line number, text), the first few


@dataclass(slots=True)
class DkmsState:
    versions: list[str] = field(default_factory=list)
    built: dict[str, list[str]] = field(default_factory=dict)  # kernel -> versions with a built module
    installed: dict[str, str] = field(default_factory=dict)  # kernel -> version whose module is installed
    make_logs: list[MakeLog] = field(default_factory=list)
    source: str = DKMS_TREE  # where the state was read from
    status_lines: list[tuple[int, str]] = field(default_factory=list)  # recorded `dkms status` lines


def parse_make_log(text: str, path: str, max_errors: int = 4) -> MakeLog:
    head = _MAKE_LOG_HEAD_RE.search(text[:2000])
    errors = []
    for number, line in enumerate(text.splitlines(), start=1):
        if _ERROR_LINE_RE.search(line):
            errors.append((number, line.strip()[:300]))
            if len(errors) >= max_errors:
                break
    return MakeLog(path, head.group(1) if head else None, head.group(2) if head else None,
                   head.group(3) if head else None, tuple(errors))


def parse_dkms_status(text: str) -> DkmsState:
    """``dkms status`` output (old and new formats) -> the amdgpu state."""
    state = DkmsState(source="dkms status (output)")
    for number, line in enumerate(text.splitlines(), start=1):
        m = _STATUS_RE.match(line.strip())
        if not m:
            continue
        version, kernel, _arch, status = m.group(1), m.group(2), m.group(3), m.group(4)
        state.status_lines.append((number, line.strip()))
        if version not in state.versions:
            state.versions.append(version)
        if kernel and status in ("built", "installed"):
            state.built.setdefault(kernel, []).append(version)
        if kernel and status == "installed":
            state.installed[kernel] = version
    return state


def read_tree(root) -> DkmsState | None:
    """The amdgpu DKMS tree of ``root``; None when there is none (no amdgpu-dkms ever added)."""
    if not root.is_dir(DKMS_TREE):
        return None
    state = DkmsState()
    for name in sorted(root.listdir(DKMS_TREE)):
        path = f"{DKMS_TREE}/{name}"
        if name.startswith("kernel-"):
            target = root.readlink(path) or ""
            kernel_arch = name[len("kernel-"):]
            # kernel-<kver>-<arch> -> <version>/<kver>/<arch>
            parts = target.strip("/").split("/")
            if len(parts) >= 3:
                state.installed[parts[-2]] = parts[-3]
            else:
                state.installed[kernel_arch.rsplit("-", 1)[0]] = target
            continue
        if not root.is_dir(path) or name in ("original_module",):
            continue
        state.versions.append(name)
        for kernel in root.listdir(path):
            if kernel in ("build", "source"):
                continue
            for arch in root.listdir(f"{path}/{kernel}"):
                if any(_MODULE_RE.fullmatch(n) for n in root.listdir(f"{path}/{kernel}/{arch}/module")):
                    state.built.setdefault(kernel, []).append(name)
        log_path = f"{path}/build/make.log"
        if root.is_file(log_path):
            try:
                text = root.read_text(log_path, MAKE_LOG_MAX_BYTES)
            except OSError as exc:
                log.debug("cannot read %s: %s", log_path, exc)
                continue
            state.make_logs.append(parse_make_log(text, log_path))
    return state


def driver_base(version: str) -> tuple[int, int] | None:
    """The Linux release an amdgpu-dkms version backports (``6.12.12-2164967.24.04`` -> (6, 12)).

    AMD numbers amdgpu-dkms after the upstream driver it carries (ROCm 6.4.1 ships 6.12.12, ROCm 7.2 ships 6.16.13):
    kernels newer than that base are the ones its builds fail on in the reports (ROCm/amdgpu#192, #209). None for a
    version that names no Linux release: rock-dkms (ROCm 1.x-4.x, "4.3-59") and pre-2021 Radeon Software packages
    ("18.30-641594") number themselves after their own release."""
    m = _VERSION_BASE_RE.match(version)
    return (int(m.group(1)), int(m.group(2))) if m else None


def kernel_series(release: str) -> tuple[int, int] | None:
    m = _KERNEL_SERIES_RE.match(release)
    return (int(m.group(1)), int(m.group(2))) if m else None


def rocm_release_of_package(version: str) -> str | None:
    """``1:6.12.12.60401-2164967.24.04`` -> "6.4.1": the ROCm release an amdgpu-dkms package belongs to."""
    m = re.match(r"^(?:\d+:)?\d+\.\d+\.\d+\.(\d)(\d{2})(\d{2})-", version)
    if not m:
        return None
    return f"{int(m.group(1))}.{int(m.group(2))}.{int(m.group(3))}"
