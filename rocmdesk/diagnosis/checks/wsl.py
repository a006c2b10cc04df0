"""ROCm under WSL 2 as AMD supports it: release, Windows driver, the WSL PyTorch wheels and the HSA runtime swap.

A ROCm torch that works on Linux fails under WSL ("torch.cuda.is_available() is False", hipErrorNoDevice) when its
bundled libhsa-runtime64.so has no WSL (/dev/dxg) support; AMD's guide replaces it with /opt/rocm's. The table and
its sources are rocmdesk.diagnosis.wsl_support.
"""

from __future__ import annotations

import logging
import shlex

from rocmdesk.diagnosis.engine import Failed, Passed, check
from rocmdesk.diagnosis.model import Evidence, Severity
from rocmdesk.diagnosis.wsl_support import GUIDE, HSA_SWAP, WSL_RELEASES, is_amd_wsl_wheel, newest_for, release

log = logging.getLogger(__name__)

AREA = "Environment"
ROCM_HSA = "/opt/rocm/lib/libhsa-runtime64.so.1.2"
# a list, not a tuple: the fixes tests read string tuples as actions
DISTRO_HSA_PACKAGES = ["libhsa-runtime64-1", "libhsakmt1"]


def _size(root, path: str) -> int | None:
    try:
        return root.stat(path).st_size
    except OSError:
        return None


def _bundled_hsa(root, site: str) -> list[str]:
    folder = f"{site}/torch/lib"
    return [f"{folder}/{n}" for n in sorted(root.listdir(folder)) if n.startswith("libhsa-runtime64.so")]


@check("wsl-rocm-support", AREA)
def wsl_rocm_support(ctx):
    facts = ctx.facts
    if not facts.is_wsl:
        return Passed("not running under WSL")
    rocm = facts.rocm_version
    row = release(rocm)
    outcomes: list = []
    dpkg = facts.dpkg_status or {}
    shadows = [(n, dpkg[n]) for n in DISTRO_HSA_PACKAGES if n in dpkg]
    if shadows:
        outcomes.append(Failed(
            evidence=[Evidence(f"Package: {n} ({v}) installed", "/var/lib/dpkg/status", line)
                      for n, (v, line) in shadows],
            subject="/usr/lib/x86_64-linux-gnu", severity=Severity.WARNING,
            title="The distribution's old HSA runtime shadows the WSL-capable one",
            explanation=("The distribution's libhsa-runtime64/libhsakmt packages put an HSA runtime without WSL "
                         "support into /usr/lib/x86_64-linux-gnu, which the loader finds before /opt/rocm/lib: ROCm "
                         "then reports \"ROCk module is NOT loaded\" under WSL."),
            fix_steps=(f"Remove them: `sudo apt remove {' '.join(n for n, _ in shadows)}`.",
                       "Check with `rocminfo` that the GPU agent is listed.")))
    if rocm is None:
        outcomes.append(Failed(
            evidence=[Evidence(e.text, e.path, e.line) for e in facts.wsl_evidence],
            subject="/opt/rocm", severity=Severity.INFO, title="ROCm for WSL is not installed",
            explanation=("This is WSL 2 and there is no /opt/rocm. ROCm under WSL is its own release train "
                         f"({', '.join(r.rocm for r in WSL_RELEASES)} so far) installed with `amdgpu-install "
                         "--usecase=wsl,rocm --no-dkms`, on a Windows driver AMD names per release."),
            fix_steps=_install_steps(WSL_RELEASES[-1])))
        return outcomes
    rocm_ev = Evidence(f"ROCm {rocm}", "/opt/rocm/.info/version", 1)
    target = row or newest_for(rocm) or WSL_RELEASES[-1]
    if row is None:
        outcomes.append(Failed(
            evidence=[rocm_ev], subject="/opt/rocm", severity=Severity.WARNING,
            title=f"ROCm {rocm} has no WSL release",
            explanation=(f"AMD publishes ROCm for WSL only for some releases ({', '.join(r.rocm for r in WSL_RELEASES)}"
                         f" in rocmdesk's table); {rocm} is not one of them, so the WSL runtime and PyTorch wheels "
                         f"may not exist for it. The nearest WSL release is {target.rocm} ({target.source})."),
            fix_steps=_install_steps(target)))
    for env in ctx.python_envs.envs:
        torch = env.torch
        if torch is None or torch.build != "rocm":
            continue
        outcomes.extend(_torch_outcomes(ctx, env, torch, target, rocm_ev))
    if not outcomes:
        return Passed(f"ROCm {rocm} is a WSL release (Windows driver: {target.driver}) and no ROCm torch here "
                      "bundles an HSA runtime without WSL support")
    return outcomes


def _torch_outcomes(ctx, env, torch, target, rocm_ev) -> list:
    root = ctx.root
    bundled = _bundled_hsa(root, torch.site_packages)
    rocm_size = _size(root, ROCM_HSA)
    swapped = bool(bundled) and rocm_size is not None and all(_size(root, p) == rocm_size for p in bundled)
    amd_row = is_amd_wsl_wheel(torch.version)
    ev = [Evidence(f"torch {torch.version}", torch.metadata or torch.site_packages), rocm_ev]
    if bundled and not swapped:
        ev += [Evidence("bundled HSA runtime (no WSL support)" + (
            f"; {ROCM_HSA} is {rocm_size} bytes, this one {_size(root, p)}" if rocm_size is not None else ""), p)
            for p in bundled[:3]]
        steps = []
        if amd_row is None:
            steps.append(_wheel_step(target, env))
        steps += [f"Replace the wheel's HSA runtime with the WSL one from /opt/rocm: `{_swap(torch)}` (AMD's WSL "
                  "PyTorch guide does this after every torch install).",
                  "Check: `python3 -c 'import torch; print(torch.cuda.is_available())'` prints True."]
        where = "AMD's WSL wheel" if amd_row else ("a pytorch.org/PyPI ROCm wheel, not AMD's WSL wheel for ROCm "
                                                   f"{target.rocm}")
        return [Failed(evidence=ev, subject=env.path,
                       title="PyTorch's bundled HSA runtime has no WSL support, so it finds no GPU",
                       explanation=(f"torch {torch.version} in {env.path} is {where}, and its torch/lib holds its own "
                                    "libhsa-runtime64.so, which talks to /dev/kfd; WSL has only /dev/dxg, so "
                                    "torch.cuda.is_available() is False (hipErrorNoDevice) even when rocminfo lists "
                                    f"the GPU. Windows driver for ROCm {target.rocm}: {target.driver}. GPUs AMD "
                                    f"lists for it: {target.gpus}."),
                       fix_steps=tuple(steps))]
    if amd_row is None and not swapped:
        return [Failed(evidence=ev, subject=env.path, severity=Severity.WARNING,
                       title="PyTorch is not AMD's WSL build",
                       explanation=(f"torch {torch.version} in {env.path} is not one of AMD's WSL wheels (ROCm "
                                    f"{target.rocm}: torch {target.torch} from {target.wheels}); under WSL only "
                                    "AMD's wheels, or a wheel whose HSA runtime was replaced with /opt/rocm's, find "
                                    "the GPU."),
                       fix_steps=(_wheel_step(target, env), f"Then: `{_swap(torch)}`."))]
    return []


def _swap(torch) -> str:
    return HSA_SWAP.format(lib=shlex.quote(f"{torch.site_packages}/torch/lib"))


def _wheel_step(target, env) -> str:
    py = env.python_versions[0] if env.python_versions else None
    tag = f"cp{py.replace('.', '')}" if py else None
    note = "" if tag is None or tag in target.pythons else (
        f" (those wheels were published for {', '.join(target.pythons)}; this environment is Python {py}: make one "
        f"with a matching Python)")
    pip = shlex.quote(f"{env.path}/bin/python") + " -m pip"
    return (f"Install AMD's WSL wheels for ROCm {target.rocm} into {env.path}: `{pip} uninstall -y torch torchvision "
            f"pytorch-triton-rocm`, then `{pip} install torch=={target.torch} {target.companions} -f "
            f"{target.wheels}`{note}. AMD's guide: {GUIDE}.")


def _install_steps(target) -> tuple[str, ...]:
    return (f"On Windows install the driver AMD names for ROCm {target.rocm}: {target.driver}.",
            f"In WSL install ROCm {target.rocm} for WSL: the amdgpu-install package of {target.rocm} from "
            "repo.radeon.com, then `sudo amdgpu-install -y --usecase=wsl,rocm --no-dkms`.",
            "Check with `rocminfo` that the GPU agent is listed.")
