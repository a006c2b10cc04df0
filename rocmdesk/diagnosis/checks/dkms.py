"""amdgpu-dkms that did not build, or does not fit, the running kernel (dkms(8); sources in resources/checks/dkms.yaml).

A failed DKMS build is silent after the install: the kernel then loads its own in-tree amdgpu (or none, when the
in-tree one is missing from a custom kernel), and ROCm runs on a driver the user did not choose. The check reads the
DKMS tree (rocmdesk.diagnosis.dkms), compares the kernel with the driver's upstream base, and offers what solved it
in the reports: a kernel the release supports, a newer amdgpu-dkms, or the in-tree driver without DKMS.
"""

from __future__ import annotations

import logging
import shlex

from rocmdesk.diagnosis.distro import family
from rocmdesk.diagnosis.dkms import (
    DkmsState,
    driver_base,
    kernel_series,
    parse_dkms_status,
    read_tree,
    rocm_release_of_package,
)
from rocmdesk.diagnosis.engine import Failed, Passed, Skipped, check
from rocmdesk.diagnosis.model import Evidence, Severity

log = logging.getLogger(__name__)

AREA = "Driver"
DKMS_STATUS_TIMEOUT_S = 10.0
DKMS_PACKAGES = ["amdgpu-dkms", "rock-dkms"]  # a list, not a tuple: fixes tests read string tuples as actions
MATRIX_URL = "https://rocm.docs.amd.com/en/latest/compatibility/compatibility-matrix.html"


def _package(facts) -> tuple[str, str, int] | None:
    """(name, version, line) of the installed amdgpu-dkms (dpkg), or None."""
    dpkg = facts.dpkg_status or {}
    for name in DKMS_PACKAGES:
        if name in dpkg:
            version, line = dpkg[name]
            return name, version, line
    return None


def _state(ctx) -> DkmsState | None:
    state = read_tree(ctx.root)
    if state is not None:
        return state
    runner = ctx.runner
    program = runner.which("dkms") if runner is not None else None
    if program is None or ctx.root.is_live:
        return None  # live machine without a tree: nothing was ever added (dkms status would say the same)
    result = runner.run([program, "status"], timeout=DKMS_STATUS_TIMEOUT_S, max_output_bytes=1 << 20)
    if not result.ok or "amdgpu" not in result.stdout:
        return None
    state = parse_dkms_status(result.stdout)
    state.source = f"{program} status (output)"
    return state


@check("amdgpu-dkms-not-built", AREA)
def amdgpu_dkms_not_built(ctx):
    if ctx.is_wsl:
        return Skipped(ctx.WSL_SKIP_REASON)
    facts = ctx.facts
    kver = facts.kernel_release
    if not kver:
        return Skipped("the running kernel release is unknown (/proc/sys/kernel/osrelease)")
    package = _package(facts)
    state = _state(ctx)
    if state is None and package is None:
        return Passed("amdgpu-dkms is not installed (the kernel's own amdgpu driver is used)")
    if state is None:
        state = DkmsState(source="(no DKMS tree)")
    if kver in state.installed or facts.dkms_amdgpu_modules():
        built = state.installed.get(kver, "")
        return Passed(f"DKMS amdgpu {built} is built and installed for {kver}".replace("  ", " "))
    version = _newest(state.versions) or (package[1].split(":", 1)[-1] if package else None)
    ev: list[Evidence] = []
    if package is not None:
        ev.append(Evidence(f"Package: {package[0]} ({package[1]}) installed", "/var/lib/dpkg/status", package[2]))
    for number, line in state.status_lines[:6]:
        ev.append(Evidence(line, state.source, number))
    if state.source == "/var/lib/dkms/amdgpu":
        built_for = sorted(state.built)
        ev.append(Evidence(f"amdgpu {', '.join(state.versions) or '(no version)'} added; built for "
                           f"{', '.join(built_for) or 'no kernel'}; nothing installed for {kver}", state.source))
    logs = [m for m in state.make_logs if m.kernel in (None, kver)]
    for make_log in logs[:2]:
        ev.append(Evidence(f"DKMS make.log for amdgpu-{make_log.version} for kernel {make_log.kernel}", make_log.path,
                           1))
        ev.extend(Evidence(text, make_log.path, number) for number, text in make_log.errors)
    name = package[0] if package else "amdgpu-dkms"
    details: list[str] = [f"{name} {version or ''} has no module for the running kernel {kver}: its build "
                          "failed or was never run for this kernel, so the kernel uses its own in-tree amdgpu "
                          "instead (or none)."]
    headers = [f"/usr/lib/modules/{kver}/build", f"/lib/modules/{kver}/build"]
    no_headers = not any(facts.root.exists(p) for p in headers) and facts.root.is_dir(f"/usr/lib/modules/{kver}")
    base = driver_base(version or "")
    series = kernel_series(kver)
    too_new = base is not None and series is not None and series > base
    rocm = rocm_release_of_package(package[1]) if package else None
    fam = family(facts.distro_key)
    steps: list[str] = []
    if no_headers:
        ev.append(Evidence("does not exist (no kernel headers for the running kernel)", headers[0]))
        details.append("The running kernel's headers are not installed, and DKMS cannot build a module without them.")
        pkg = fam.headers_package if fam and fam.headers_package else "the kernel headers package"
        install = fam.install.format(pkg=pkg) if fam else f"install {pkg}"
        steps += [f"Install the headers of the running kernel: `{install}`.",
                  f"Build the module: `sudo dkms autoinstall -k {shlex.quote(kver)}`, then reboot."]
    if too_new and base is not None:
        details.append(
            f"This amdgpu-dkms is AMD's backport of the Linux {base[0]}.{base[1]} driver"
            + (f" (ROCm {rocm})" if rocm else "")
            + f", and the running kernel {kver} is newer: AMD answers build failures on kernels newer than a "
            f"release supports with \"use a supported kernel\" (the supported kernels per release: {MATRIX_URL}).")
    others = sorted(k for k in state.installed if k != kver) or sorted(k for k in state.built if k != kver)
    if others:
        steps.append(f"Boot a kernel it was built for ({', '.join(others[:3])}): choose it under \"Advanced "
                     "options\" in the boot menu.")
    elif too_new or logs:
        steps.append(f"Boot a kernel this ROCm release supports (listed in {MATRIX_URL}; on Ubuntu the GA or HWE "
                     "kernel of the release), or hold the kernel back until a newer amdgpu-dkms supports it.")
    steps.append("Or install a newer amdgpu-dkms that supports this kernel: the amdgpu-install package of a newer "
                 "ROCm release from repo.radeon.com, then `sudo amdgpu-install --usecase=rocm`.")
    steps.append("Or use the kernel's own amdgpu driver, which needs no DKMS: `sudo amdgpu-install --usecase=rocm "
                 "--no-dkms` (ROCm runs on the in-tree driver), and remove the failed module "
                 f"(`{_remove_command(facts.distro_key, name)}`).")
    loaded = facts.amdgpu_loaded
    severity = None if loaded is False else Severity.WARNING
    if loaded:
        details.append("amdgpu is loaded now: that is the kernel's in-tree driver, not the amdgpu-dkms one.")
    return Failed(evidence=ev, details=" ".join(details), severity=severity, subject=kver, fix_steps=tuple(steps))


def _remove_command(key: str | None, name: str = "amdgpu-dkms") -> str:
    """Remove the DKMS package and its firmware package (rock-dkms and rock-dkms-firmware before ROCm 5)."""
    packages = f"{name} {name}-firmware"
    if key in ("debian", "ubuntu"):
        return f"sudo apt purge {packages}"
    if key in ("fedora", "mageia"):
        return f"sudo dnf remove {packages}"
    if key == "suse":
        return f"sudo zypper remove {packages}"
    return "sudo amdgpu-install --uninstall, then install again with --no-dkms"


def _newest(versions: list[str]) -> str | None:
    def key(v: str) -> tuple:
        return tuple(int(p) if p.isdigit() else 0 for p in v.replace("-", ".").split("."))

    return max(versions, key=key) if versions else None
