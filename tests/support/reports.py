"""Reporters' machines from public issue threads, rebuilt as host roots.

``reporter_machine`` starts from the clean Ubuntu workstation (tests/support/scenarios.py) and puts in the GPUs, the
ROCm release and the files the reporter pasted. What a thread does not show (distribution details, user name, the
rest of /etc) is the workstation's, and each test's docstring says which details it had to assume.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from tests.support import scenarios as sc
from tests.support.sysfs_tree import GpuSpec, build_root


@dataclass
class Gpu:
    gfx: int  # KFD gfx_target_version, e.g. 100301
    device_id: int  # PCI device id
    pci: str = sc.GPU_PCI
    unique_id: int = 0  # KFD unique_id: 0 = the driver exposes no UUID
    dump: str = "rx6900xt"  # which real sysfs dump lends the rest of the device folder
    pci_class: int = 0x030000
    extra: dict[str, str] = field(default_factory=dict)


def reporter_machine(tmp: Path, gpus: list[Gpu], rocm: str | None = "6.2.4") -> Path:
    """The workstation with ``gpus`` (the first takes the workstation GPU's place) and ROCm ``rocm`` in /opt (None: no
    /opt/rocm at all)."""
    root = sc.clean_workstation(tmp)
    first, rest = gpus[0], gpus[1:]
    _retarget_first(root, first)
    for gpu in rest:
        build_root(root, [GpuSpec(gpu.dump, pci=gpu.pci, gfx_target_version=gpu.gfx,
                                  extra_props={"unique_id": str(gpu.unique_id), **gpu.extra})], cpu_nodes=1)
        dev = (root / "sys" / "bus" / "pci" / "devices" / gpu.pci).resolve()
        (dev / "class").write_text(f"0x{gpu.pci_class:06x}\n")
        (dev / "device").write_text(f"0x{gpu.device_id:04x}\n")
    set_rocm(root, rocm)
    return root


def _retarget_first(root: Path, gpu: Gpu) -> None:
    nodes = root / "sys" / "class" / "kfd" / "kfd" / "topology" / "nodes"
    for props in nodes.glob("*/properties"):
        lines = props.read_text().splitlines()
        if "gfx_target_version 0" in lines:
            continue
        values = dict(ln.split(" ", 1) for ln in lines if " " in ln)
        values.update({"gfx_target_version": str(gpu.gfx), "unique_id": str(gpu.unique_id), **gpu.extra})
        props.write_text("".join(f"{k} {v}\n" for k, v in values.items()))
    dev = (root / "sys" / "bus" / "pci" / "devices" / sc.GPU_PCI).resolve()
    (dev / "device").write_text(f"0x{gpu.device_id:04x}\n")
    (dev / "class").write_text(f"0x{gpu.pci_class:06x}\n")


def set_rocm(root: Path, version: str | None) -> None:
    """/opt/rocm -> /opt/rocm-<version> holding .info/version (the layout amdgpu-install leaves), or no ROCm."""
    opt = root / "opt"
    link = opt / "rocm"
    if link.is_symlink() or link.exists():
        link.unlink()
    for old in opt.glob("rocm-*"):
        shutil.rmtree(old)
    if version is None:
        return
    sc.write(root, f"/opt/rocm-{version}/.info/version", f"{version}-1\n")
    os.symlink(f"rocm-{version}", link)


def set_kernel(root: Path, kver: str) -> None:
    """Boot ``kver`` instead of the workstation's kernel: release, /proc/version, modules folder, image, config."""
    sc.write(root, "/proc/sys/kernel/osrelease", kver + "\n")
    sc.write(root, "/proc/version", f"Linux version {kver} (builder@host) (gcc) #1 SMP PREEMPT_DYNAMIC\n")
    old = root / "usr/lib/modules" / sc.KERNEL
    if old.exists():
        old.rename(root / "usr/lib/modules" / kver)
    for name in (f"initrd.img-{sc.KERNEL}", f"config-{sc.KERNEL}"):
        path = root / "boot" / name
        if path.exists():
            path.rename(root / "boot" / name.replace(sc.KERNEL, kver))
    cmdline = (root / "proc/cmdline").read_text().replace(sc.KERNEL, kver)
    sc.write(root, "/proc/cmdline", cmdline)


def without_ollama(root: Path) -> None:
    """No ollama.service and no ollama process: for reporters whose GPU program is something else."""
    (root / "etc/systemd/system/ollama.service").unlink()
    shutil.rmtree(root / "proc/2345")


def drop_kfd_node(root: Path, pci: str = sc.GPU_PCI) -> None:
    """Remove the KFD topology node of the GPU at ``pci``: amdgpu drives it, but KFD did not add it."""
    from tests.support.sysfs_tree import location_id

    domain, loc = location_id(pci)
    nodes = root / "sys" / "class" / "kfd" / "kfd" / "topology" / "nodes"
    for props in nodes.glob("*/properties"):
        values = dict(ln.split(" ", 1) for ln in props.read_text().splitlines() if " " in ln)
        if values.get("gfx_target_version", "0") != "0" and int(values.get("location_id", "-1")) == loc \
                and int(values.get("domain", "0")) == domain:
            shutil.rmtree(props.parent)


def diagnose(root: Path) -> dict[str, list]:
    """The full diagnosis of ``root``: check id -> its findings, for every check that did not pass or skip."""
    from rocmdesk.diagnosis.context import DiagnosisContext
    from rocmdesk.diagnosis.engine import run_checks
    from rocmdesk.diagnosis.model import Status
    from rocmdesk.host import HostRoot, RecordedRunner

    results = run_checks(DiagnosisContext(HostRoot(root), runner=RecordedRunner()))
    return {r.id: r.findings for r in results if r.status not in (Status.PASS, Status.SKIP)}


def only(findings: dict, check_id: str):
    """The one finding of ``check_id``, asserting no other check raised anything (a false alarm)."""
    assert set(findings) == {check_id}, {k: [f.title for f in v] for k, v in findings.items()}
    assert len(findings[check_id]) == 1, findings[check_id]
    return findings[check_id][0]


def steps_of(finding) -> str:
    """The fix steps as one text, for substring assertions."""
    return "\n".join(finding.fix.steps)


def evidence_texts(finding) -> list[str]:
    """Each piece of evidence as the text the user reads."""
    return [str(e) for e in finding.evidence]


def real_report_tests_text() -> str:
    """Every real-report test file's text (tests/unit/diagnosis/test_real_reports_*.py): a report a check's metadata
    lists must be rebuilt in one of them, not necessarily in the file of that check's other reports."""
    folder = Path(__file__).resolve().parents[1] / "unit" / "diagnosis"
    return "\n".join(p.read_text() for p in sorted(folder.glob("test_real_reports_*.py")))


def assert_metadata_ties(check_id: str, tested: tuple[str, ...]) -> None:
    """The check's metadata lists every report ``tested`` rebuilds, and every report it lists is rebuilt in one of
    the real-report test files (a docstring names it)."""
    from rocmdesk.diagnosis.metadata import load_metadata

    listed = load_metadata()[check_id].reports
    joined = " ".join(listed)
    for report in tested:
        assert report in joined, (check_id, report)
    text = real_report_tests_text()
    for entry in listed:
        assert entry.split(":", 1)[0].split(" (")[0] in text, entry
