"""The installed ROCm PyTorch has no code for this GPU (issue 12, item 5).

A ROCm wheel carries kernels for a fixed list of gfx targets; on another GPU it fails with "HIP error: invalid device
function", "hipErrorNoBinaryForGpu", a rocBLAS "Cannot read TensileLibrary.dat ... for GPU arch" abort, or a
segfault (ROCm/TheRock#1184: TheRock's gfx110X wheels on a gfx1103; pytorch/pytorch#179865: the rocm7.2 wheel on a
gfx900). rocmdesk.diagnosis.gpu_code reads the targets from the environment's library files; this check compares them
with the machine's GPUs (and a same-family HSA_OVERRIDE_GFX_VERSION set for the programs) and names the PyTorch index
whose wheels do carry the GPU (rocmdesk.diagnosis.torch_index), or what else works when none does.
"""

from __future__ import annotations

import logging

from rocmdesk.diagnosis import rocm_support
from rocmdesk.diagnosis.checks.gpu_support import describe, gpu_evidence
from rocmdesk.diagnosis.checks.python_torch import (
    driver_evidence,
    env_python,
    host_driver_limit,
    no_interpreter_step,
    pip_command,
    update_driver_step,
)
from rocmdesk.diagnosis.engine import Failed, Passed, Skipped, check
from rocmdesk.diagnosis.env_settings import EnvSetting
from rocmdesk.diagnosis.gfx import parse_override
from rocmdesk.diagnosis.gpu_code import CodeTargets, library_targets
from rocmdesk.diagnosis.kernel_driver import DriverLimit
from rocmdesk.diagnosis.model import Evidence, Fix
from rocmdesk.diagnosis.torch_index import (
    DriverTooOld,
    NoSuitableIndex,
    NoWheelForPython,
    choose_index,
    index_url,
    reinstall_packages,
)

log = logging.getLogger(__name__)

AREA = "Python and PyTorch"
OVERRIDE = "HSA_OVERRIDE_GFX_VERSION"


def _code_of(ctx, env) -> CodeTargets:
    out = CodeTargets()
    for site in env.site_packages:
        found = library_targets(ctx.root, site)
        out.sources += found.sources
        out.notes += found.notes
    return out


def _missing(target: str, code: CodeTargets) -> bool:
    """True when a library that was read has no code for ``target``."""
    return any(known is not None and target not in known for known in (code.rocblas, code.kernels))


def _overrides(facts) -> list[tuple[str, EnvSetting]]:
    """(target, setting) of every well-formed global HSA_OVERRIDE_GFX_VERSION set for programs."""
    out = []
    for setting in facts.env_settings:
        if setting.name == OVERRIDE:
            version, _problem = parse_override(setting.value)
            if version is not None:
                out.append((version.target, setting))
    return out


def _fix_for(env, target: str, driver: DriverLimit | None = None) -> tuple[str, tuple[str, ...], Fix | None]:
    """(what the finding says to do, steps, one-click fix or None) for a GPU the wheel lacks; ``driver`` (the loaded
    amdgpu-dkms) caps the index, and when the GPU needs a newer one the driver is updated first (no one-click)."""
    row = rocm_support.row_of(target)
    info = env.torch
    if row is None or not row.has_torch_wheels:
        works = row.what_works if row and row.what_works else "no PyTorch ROCm wheel carries it"
        override = row.override if row else None
        steps = ((f"Set `{OVERRIDE}={override}` for the program (the same-family override; hsa-override-suggested "
                  "says where), so it runs that target's code.",) if override else ()) + (f"What works: {works}.",)
        return f"No PyTorch ROCm index carries {target}. What works: {works}.", steps, None
    try:
        index, why = choose_index(info.rocm_version, [target], python=env_python(env), driver=driver)
    except DriverTooOld as old_driver:
        after = old_driver.need
        reinstall = None
        if after:
            names = " ".join(reinstall_packages(env.packages, after)[0])
            command = pip_command(env, f"install --force-reinstall {names} --index-url {index_url(after)}")
            reinstall = f"Then reinstall torch: `{command}`."
        steps = tuple(filter(None, (update_driver_step(old_driver.limit, after), no_interpreter_step(env), reinstall)))
        return (f"The wheels that carry {target} need a newer kernel driver: {old_driver}.", steps, None)
    except NoWheelForPython as no_wheel:
        return (f"The wheels that carry {target} have no build for this environment's Python ({no_wheel}).",
                (f"Make a new environment with a Python the index supports and install torch there from "
                 f"{index_url(no_wheel.index)}.",), None)
    except NoSuitableIndex as conflict:
        return str(conflict), (f"Install torch from {index_url(conflict.floor)} for {', '.join(conflict.new)}.",), None
    packages, note = reinstall_packages(env.packages, index)
    command = pip_command(env, f"install --force-reinstall {' '.join(packages)} --index-url {index_url(index)}")
    steps = tuple(filter(None, (
        no_interpreter_step(env),
        f"`{command}`" + (f" ({note})" if note else ""),
        "Use --index-url (not --extra-index-url): with both, pip prefers PyPI's higher-versioned CUDA build.",
        f"Check afterwards: the environment's rocBLAS library folder has a TensileLibrary file for {target}.")))
    action = (("pip-reinstall-rocm-torch", env.path, index_url(index))
              if env.is_environment and env.python is not None and env.kind != "system" else None)
    override = f" (or, for now, {OVERRIDE}={row.override}, the same-family override)" if row.override else ""
    return (f"Reinstall torch from PyTorch's {index} index ({why}), whose wheels carry {target}{override}.", steps,
            Fix("pip-reinstall-rocm-torch", False, steps, action))


@check("torch-no-code-for-gpu", AREA)
def torch_no_code_for_gpu(ctx):
    facts = ctx.facts
    gpus = [g for g in facts.amd_gpus if g.gfx is not None]
    if not gpus:
        return Skipped("no GPU with a gfx target in the KFD topology")
    envs = [e for e in ctx.python_envs.envs if e.torch is not None and e.torch.build == "rocm"]
    if not envs:
        return Skipped("no Python environment with a ROCm build of torch")
    overrides = _overrides(facts)
    outcomes: list = []
    for env in envs:
        code = _code_of(ctx, env)
        if code.rocblas is None and code.kernels is None:
            outcomes.append(Passed(f"{env.path}: no ROCm library file names its gfx targets"
                                   + (f" ({'; '.join(code.notes)})" if code.notes else "")))
            continue
        lacking = []
        for gpu in gpus:
            assert gpu.gfx is not None
            target = gpu.gfx.target
            if not _missing(target, code):
                continue
            # an override known to hang this GPU covers nothing (11.0.0 on a gfx1103: ROCm/TheRock#1184)
            covered = [s for t, s in overrides if not _missing(t, code)
                       and not rocm_support.unsafe_override(target, s.value.strip())]
            if covered:
                continue  # runs another target's code through the override (hsa-override-mismatch judges it)
            lacking.append(gpu)
        if not lacking:
            outcomes.append(Passed(f"{env.path}: its ROCm libraries carry every GPU's target"))
            continue
        targets = sorted({g.gfx.target for g in lacking if g.gfx})
        ev = [gpu_evidence(g) for g in lacking]
        for source in code.sources:
            ev.append(Evidence(f"{source.how} has code for {', '.join(sorted(source.targets))}", source.path))
        if env.torch.metadata_version_line:
            line = env.torch.metadata_version_line
            ev.append(Evidence(line.text.strip(), line.path, line.line))
        limit = host_driver_limit(ctx)
        if limit is not None:
            ev.append(driver_evidence(limit))
        advice, steps, fix = _fix_for(env, targets[0], limit)
        details = (f"torch {env.torch.version or '?'} in {env.path} was built without code for "
                   + ", ".join(describe(g) for g in lacking)
                   + ": on it PyTorch fails with \"HIP error: invalid device function\", \"hipErrorNoBinaryForGpu\" or "
                   "a rocBLAS \"Cannot read TensileLibrary.dat\" abort, or crashes. " + advice)
        outcomes.append(Failed(evidence=ev, subject=env.path, details=details,
                               title=f"The installed PyTorch has no code for {', '.join(targets)}",
                               fix=fix, fix_steps=None if fix else steps))
    return outcomes
