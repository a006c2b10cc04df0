"""Python and PyTorch checks: wrong torch wheel, custom nodes that would swap it, pynvml crash (pytorch/pytorch#133259).

Everything is read from files (never ``import torch``, never run a snapshot's interpreter). On
ROCm, PyTorch keeps the ``torch.cuda`` API and device "cuda"; the faults here are a CUDA or CPU
wheel where a ROCm wheel belongs, a plugin requirement that makes pip swap it, and pynvml
sending an older ROCm torch down a code path that needs amdsmi.
"""

from __future__ import annotations

import logging
import re
import shlex
import sys

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from rocmdesk.diagnosis import rocm_support
from rocmdesk.diagnosis.engine import Failed, Passed, Skipped, check
from rocmdesk.diagnosis.kernel_driver import VERSION_FILE, DriverLimit, driver_limit
from rocmdesk.diagnosis.model import Evidence, Fix, Severity
from rocmdesk.diagnosis.python_envs import ComfyInstall, Discovery, Line, PythonEnv, machine_gpus
from rocmdesk.diagnosis.torch_index import (
    NO_WHEELS_FOR_GFX,
    DriverTooOld,
    NoSuitableIndex,
    NoWheelForPython,
    choose_index,
    index_url,
    parse_python_version,
    python_range_text,
    reinstall_packages,
)
from rocmdesk.host import HostReadError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 has no TOML reader: pyproject.toml pins are not read there
    tomllib = None

log = logging.getLogger(__name__)

AREA = "Python and PyTorch"
TORCH_FAMILY = ("torch", "torchvision", "torchaudio", "xformers")
REQUIREMENTS_MAX = 256 << 10


def _ev(line: Line) -> Evidence:
    return Evidence(line.text.strip(), line.path, line.line)


def _envs(ctx) -> Discovery:
    return ctx.python_envs


def _notes(discovery: Discovery) -> str:
    return f" ({'; '.join(discovery.notes)})" if discovery.notes else ""


def _torch_envs(discovery: Discovery) -> list[PythonEnv]:
    return [e for e in discovery.envs if e.torch is not None]


def _subject(env: PythonEnv) -> str:
    return env.path


def _torch_evidence(env: PythonEnv) -> list[Evidence]:
    info = env.torch
    assert info is not None
    out = [_ev(line) for line in info.version_py_lines if not line.text.startswith("__version__")]
    if info.version_py_problem:
        out.append(Evidence(info.version_py_problem, f"{info.site_packages}/torch/version.py"))
    if info.metadata_version_line:
        out.append(_ev(info.metadata_version_line))
    out += [_ev(line) for line in info.requires_nvidia[:3]]
    if len(info.requires_nvidia) > 3:
        out.append(Evidence(f"… and {len(info.requires_nvidia) - 3} more nvidia-* requirements", info.metadata))
    if info.bundles_hip_runtime:
        out.append(Evidence("bundles the ROCm runtime (libamdhip64.so)", f"{info.site_packages}/torch/lib"))
    # no "decided by" line: the finding's text says it, and the version.py/METADATA lines above are its proof
    for comfy in env.comfyui:
        out.append(Evidence(f"used by ComfyUI at {comfy}", comfy))
    for how in env.found_by[:2]:
        out.append(Evidence(f"found as {how}", env.path))
    return out


def _previous_rocm(env: PythonEnv) -> str | None:
    """ROCm release the env's other torch packages were built for (``+rocm6.2``), if any."""
    for name in ("torch", "torchvision", "torchaudio"):
        version = env.torch.version if name == "torch" and env.torch else env.version_of(name)
        match = re.search(r"\+rocm(\d+\.\d+(?:\.\d+)?)", version or "")
        if match:
            return match.group(1)
    return None


def env_python(env: PythonEnv) -> tuple[int, int] | None:
    """The environment's CPython (3, 11) from its lib/python3.X folder; None when it does not say."""
    return parse_python_version(env.python_versions[0]) if env.python_versions else None


def pip_command(env: PythonEnv, args: str) -> str:
    """``<interpreter> -m pip <args>``; plain ``python`` (of the activated environment) when the root holds
    no interpreter for it: a path that does not exist is never written into a command."""
    # quoted: environments often live under folders with spaces ("~/AI tools/venv")
    return f"{shlex.quote(env.python) if env.python else 'python'} -m pip {args}"


def reinstall_command(env: PythonEnv, index: str) -> str:
    """The same packages the one-click fix installs (torch_index.reinstall_packages: companions only when present)."""
    packages, _note = reinstall_packages(env.packages, index)
    return pip_command(env, f"install --force-reinstall {' '.join(packages)} --index-url {index_url(index)}")


def _companion_note(env: PythonEnv, index: str) -> str | None:
    return reinstall_packages(env.packages, index)[1]


def _need(targets) -> str:
    return f"{', '.join(targets)} {'needs' if len(targets) == 1 else 'need'}"


def _conflict_steps(env: PythonEnv, conflict: NoSuitableIndex) -> tuple[str, ...]:
    """Manual steps when no single index serves every GPU: one environment per GPU (group)."""
    old, new = ", ".join(conflict.old), ", ".join(conflict.new)
    return tuple(filter(None, (
        no_interpreter_step(env),
        f"Decide which GPU this environment is for. For {old}: "
        f"`{reinstall_command(env, conflict.ceiling)}`. For {new}: `{reinstall_command(env, conflict.floor)}`.",
        "For the other GPU, make a second environment (`python3 -m venv <folder>`) and install torch there from "
        "its index with the same command, run with that environment's python.",
        "Start each program with only its GPU visible: `ROCR_VISIBLE_DEVICES=N`, N being that GPU's place among "
        "the GPU agents rocminfo lists (from 0); otherwise torch meets the GPU its wheel has no code for.",
        "Use --index-url (not --extra-index-url): with both, pip prefers PyPI's higher-versioned CUDA build.",
    )))


def no_interpreter_step(env: PythonEnv) -> str | None:
    """The step that says no interpreter was found (so the commands use the activated ``python``), or None."""
    if env.python is not None:
        return None
    where = "/usr/bin" if env.kind == "system" else f"{env.path}/bin"
    return (f"No Python interpreter was found in {where} (rocmdesk looked for python3, python and python3.X), so "
            "there is no one-click fix and the commands below say plain `python`: activate this environment the way "
            "its program is started (for conda: `conda activate` with its name or path), check that "
            f"`python -c 'import sys; print(sys.prefix)'` prints {env.path}, then run them in that shell.")


def _user_fix_action(env: PythonEnv, action: tuple[str, ...]) -> tuple[str, ...] | None:
    """The one-click action, only where rocmdesk.fixes.pip_fix accepts it: a virtual or conda environment
    (pyvenv.cfg or conda-meta/) with an interpreter in the root."""
    if env.kind == "system" or not env.is_environment or env.python is None:
        return None
    return action


# -- torch-wheel-mismatch ----------------------------------------------------------------------------


def host_driver_limit(ctx) -> DriverLimit | None:
    """The running amdgpu-dkms's user-space limit (rocmdesk.diagnosis.kernel_driver); None for the kernel's own amdgpu
    (no version file) or a driver newer than the table."""
    facts = getattr(ctx, "facts", None)
    if facts is not None:
        text = facts.read(VERSION_FILE)
    else:
        try:
            text = ctx.root.read_text(VERSION_FILE, 4096)
        except HostReadError:
            text = None
    return driver_limit(text)


def driver_evidence(limit: DriverLimit) -> Evidence:
    newest = f"user space up to ROCm {limit.newest_text}" if limit.newest_text else "no current ROCm user space"
    return Evidence(f"amdgpu-dkms {limit.version} is loaded (ROCm {limit.rocm_text}; AMD supports {newest} on it)",
                    VERSION_FILE)


def update_driver_step(limit: DriverLimit, need: str | None) -> str:
    """Update the kernel driver before a newer wheel (as container-driver-too-old says it for images). amdgpu-install's
    use case "dkms (to only install the kernel mode driver)" (ROCm install docs, amdgpu-installer pages)."""
    release = f"ROCm {need[len('rocm'):]} or newer" if need else "a current ROCm release"
    return (f"Update the kernel driver first: amdgpu-dkms {limit.version} (ROCm {limit.rocm_text}) is too old for the "
            f"wheel this environment needs. Install the amdgpu-install package of {release} from repo.radeon.com and "
            "update amdgpu-dkms with it (`sudo amdgpu-install --usecase=dkms`), then reboot; or, when the "
            "distribution kernel is new enough for this GPU, remove amdgpu-dkms to use the kernel's own amdgpu.")


def _works(target: str) -> str:
    row = rocm_support.row_of(target)
    return row.what_works if row and row.what_works else "no PyTorch ROCm wheel carries it"


def no_wheel_targets(gfx_targets) -> list[str]:
    """The GPUs' targets when no PyTorch ROCm index rocmdesk knows has code for any of them and none has a
    same-family override (rocmdesk.diagnosis.rocm_support's table); else [] (some GPU a wheel can serve)."""
    targets = sorted(set(gfx_targets))
    if targets and all(t in NO_WHEELS_FOR_GFX and not rocm_support.same_family_override(t) for t in targets):
        return targets
    return []


@check("torch-wheel-mismatch", AREA)
def torch_wheel_mismatch(ctx):
    gpus = machine_gpus(ctx.root, getattr(ctx, "facts", None))
    if not gpus.readable:
        return Skipped("cannot tell which GPUs this machine has (no readable /sys/bus/pci/devices)")
    if not gpus.amd:
        return Skipped("no AMD GPU on this machine")
    if gpus.nvidia:
        return Skipped("an NVIDIA GPU is present too, so a CUDA build of torch may be intended")
    discovery = _envs(ctx)
    envs = _torch_envs(discovery)
    if not envs:
        return Skipped(f"no Python environment with torch was found{_notes(discovery)}")
    outcomes: list = []
    for env in envs:
        info = env.torch
        assert info is not None
        if info.build not in ("cuda", "cpu"):
            label = f"ROCm {info.rocm_version}" if info.build == "rocm" and info.rocm_version else info.build
            outcomes.append(Passed(f"{env.path}: torch {info.version or '?'} ({label})"))
            continue
        kind = "a CUDA build" if info.build == "cuda" else "a CPU-only build"
        symptom = ("`RuntimeError: Found no NVIDIA driver on your system.`" if info.build == "cuda"
                   else "`AssertionError: Torch not compiled with CUDA enabled`")
        details = (f"torch {info.version or '?'} in {env.path} is {kind} ({info.decided_by}). On this AMD "
                   f"machine it cannot use the GPU; expect {symptom}{'' if symptom.endswith('.`') else '.'} ")
        title = f"PyTorch is {kind}, not a ROCm build"
        python = env_python(env)
        limit = host_driver_limit(ctx)
        evidence = _torch_evidence(env) + ([driver_evidence(limit)] if limit is not None else [])
        steps: tuple[str, ...]
        hopeless = no_wheel_targets(gpus.gfx_targets)
        if hopeless:
            # a ROCm wheel would swap "no NVIDIA driver" for "hipErrorNoBinaryForGpu": no index carries code for
            # any of this machine's GPUs and no same-family override exists (gfx803: AUTOMATIC1111#10358)
            works = tuple(f"What works on {t}: {_works(t)}." for t in hopeless)
            details += (f"A ROCm build from PyTorch's indexes would not help either: none has code for "
                        f"{', '.join(hopeless)} and no same-family override exists, so rocmdesk offers no reinstall "
                        f"(see the finding that ROCm does not support {', '.join(hopeless)}). {' '.join(works)}")
            steps = (*works,
                     "Reinstalling torch from https://download.pytorch.org/whl/rocm* does not help this GPU: those "
                     "wheels have no code for it and stop with \"hipErrorNoBinaryForGpu\".")
            outcomes.append(Failed(evidence=evidence, subject=_subject(env), details=details, title=title,
                                   fix=Fix("pip-reinstall-rocm-torch", False, steps, None)))
            continue
        try:
            index, why = choose_index(_previous_rocm(env), gpus.gfx_targets, python=python, driver=limit)
        except DriverTooOld as old_driver:
            # every index that would serve brings ROCm user space newer than AMD supports on this driver: a one-click
            # reinstall would put a wheel on it that may not see the GPU at all; the driver goes first
            why_not = str(old_driver)
            details += (f"{why_not[0].upper()}{why_not[1:]}. PyTorch's ROCm wheels bring their own ROCm user space but "
                        "use this driver, so rocmdesk offers no one-click reinstall: update the driver first.")
            after: str | None
            try:
                after, _why = choose_index(_previous_rocm(env), gpus.gfx_targets, python=python)
            except (NoWheelForPython, NoSuitableIndex):
                after = old_driver.need
            steps = tuple(filter(None, (
                # the driver of the wheel's own release supports it (+/- 2 releases either side)
                update_driver_step(old_driver.limit, after or old_driver.need),
                no_interpreter_step(env),
                f"Then reinstall torch: `{reinstall_command(env, after)}`." if after else None,
                "Use --index-url (not --extra-index-url): with both, pip prefers PyPI's higher-versioned CUDA "
                "build.")))
            outcomes.append(Failed(evidence=evidence, subject=_subject(env), details=details, title=title,
                                   fix=Fix("pip-reinstall-rocm-torch", False, steps, None)))
            continue
        except NoWheelForPython as no_wheel:
            # an index without a wheel for this Python makes pip fail ("No matching distribution found"): no one-click
            # reinstall into this environment, a new one with a Python the index has wheels for
            details += (f"PyTorch's ROCm indexes have no torch wheel for this environment's Python "
                        f"{no_wheel.python[0]}.{no_wheel.python[1]} ({no_wheel.index} needs "
                        f"{python_range_text(no_wheel.index)}), so reinstalling into it can only fail and rocmdesk "
                        "offers no one-click fix: make a new environment with a newer Python.")
            steps = (f"Create a new environment with a Python {no_wheel.index} has wheels for "
                     f"({python_range_text(no_wheel.index)}), e.g. `python3.11 -m venv <folder>` (install python3.11 "
                     "from the distribution, or use conda/uv/pyenv to get one).",
                     f"Install torch there: `<folder>/bin/python -m pip install torch --index-url "
                     f"{index_url(no_wheel.index)}` (add torchvision/torchaudio if the program needs them), then "
                     "install the program's other requirements into it.",
                     "Use --index-url (not --extra-index-url): with both, pip prefers PyPI's higher-versioned CUDA "
                     "build.")
            outcomes.append(Failed(evidence=evidence, subject=_subject(env), details=details,
                                   title=title, fix=Fix("pip-reinstall-rocm-torch", False, steps, None)))
            continue
        except NoSuitableIndex as conflict:
            # no index serves every GPU: a one-click reinstall would leave one of them without code
            details += (f"No single PyTorch ROCm index serves this machine's GPUs: {_need(conflict.old)} "
                        f"{conflict.ceiling} or older, {_need(conflict.new)} {conflict.floor} or "
                        "newer. So rocmdesk offers no one-click fix: decide which GPU this environment is for, "
                        "and give the other GPU its own environment.")
            steps = _conflict_steps(env, conflict)
            if env.kind == "system":
                steps = ("This torch is installed in the system Python; create one virtual environment per GPU and "
                         f"install torch there with --index-url: from {index_url(conflict.ceiling)} for "
                         f"{', '.join(conflict.old)}, from {index_url(conflict.floor)} for {', '.join(conflict.new)}.",
                         steps[-2])
            outcomes.append(Failed(evidence=evidence, subject=_subject(env), details=details,
                                   title=title, fix=Fix("pip-reinstall-rocm-torch", False, steps, None)))
            continue
        details += f"Reinstall from PyTorch's ROCm index ({index}: {why})."
        host_rocm = getattr(getattr(ctx, "facts", None), "rocm_version", None)
        if limit is None and host_rocm and not index.startswith(f"rocm{'.'.join(host_rocm.split('.')[:2])}"):
            details += (f" The wheel brings its own ROCm user space, so the ROCm {host_rocm[:20]} installed under /opt "
                        "is not used by it and need not match.")
        note = _companion_note(env, index)
        if note:
            details += f" {note}."
        steps = tuple(filter(None, (
            no_interpreter_step(env),
            f"`{reinstall_command(env, index)}`",
            "Use --index-url (not --extra-index-url): with both, pip prefers PyPI's higher-versioned CUDA build.",
            f"Check afterwards: torch/version.py in {info.site_packages}/torch must show hip set to a "
            "version string and cuda = None.")))
        if env.kind == "system":
            steps = ("This torch is installed in the system Python; create a virtual environment and install torch "
                     f"there from {index_url(index)} with --index-url.",)
        elif env.python is not None and not env.is_environment:
            details += (f" {env.path} is a whole Python installation ({env.kind}), not a virtual or conda "
                        "environment, so rocmdesk offers no one-click fix: run the command yourself.")
        fix = Fix("pip-reinstall-rocm-torch", False, steps,
                  _user_fix_action(env, ("pip-reinstall-rocm-torch", env.path, index_url(index))))
        # the subject names the environment; the title does not repeat it (renderers show both)
        outcomes.append(Failed(evidence=evidence, subject=_subject(env), details=details, title=title,
                               fix=fix))
    return outcomes


# -- torch-pinned-by-custom-node ---------------------------------------------------------------------


def requirement_lines(text: str) -> list[tuple[int, str]]:
    """(line number, requirement string) of a requirements.txt, without comments and options."""
    out = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split(" #", 1)[0].split("\t#", 1)[0].strip()
        if not line or line.startswith(("#", "-", "git+", "http:", "https:", "file:")):
            continue
        out.append((number, line))
    return out


def pyproject_dependencies(text: str) -> list[tuple[int, str]]:
    """(line number, requirement) of [project].dependencies in a pyproject.toml."""
    deps: list[str] = []
    if tomllib is not None:
        try:
            data = tomllib.loads(text)
        except (tomllib.TOMLDecodeError, UnicodeError, ValueError):
            return []
        value = data.get("project", {}).get("dependencies", [])
        deps = [d for d in value if isinstance(d, str)] if isinstance(value, list) else []
    else:  # pragma: no cover - Python 3.10: a plain reading of the array
        match = re.search(r"^\[project\][^\[]*?^dependencies\s*=\s*\[(.*?)\]", text, re.M | re.S)
        deps = re.findall(r"""["']([^"']+)["']""", match.group(1)) if match else []
    lines = text.splitlines()
    out = []
    for dep in deps:
        number = next((i for i, ln in enumerate(lines, start=1) if f'"{dep}"' in ln or f"'{dep}'" in ln), None)
        out.append((number or 0, dep))
    return out


def _installed(env: PythonEnv, name: str) -> str | None:
    if name == "torch" and env.torch is not None:
        return env.torch.version
    return env.version_of(name)


def judge_requirement(req: Requirement, installed: str | None, torch_version: str | None) -> tuple[str, str] | None:
    """(severity, why) when pip acting on ``req`` would replace the ROCm torch; None when harmless.

    PEP 440: ``==2.5.1`` matches ``2.5.1+rocm6.2`` (a specifier without a local label ignores the
    installed local label), so only a requirement the installed version does not satisfy makes pip
    fetch another build, and that build comes from PyPI (CUDA).
    """
    name = canonicalize_name(req.name)
    spec = SpecifierSet(str(req.specifier), prereleases=True)
    if name == "xformers":
        if installed is not None and (not str(spec) or _contains(spec, installed)):
            return None
        return ("warning", "pip would fetch xformers from PyPI, whose wheels require a specific CUDA build of "
                f"torch; unless that is exactly torch {torch_version}, pip replaces the ROCm torch")
    if installed is None:
        if name == "torch":
            return None
        return ("warning", f"{name} is not installed in this environment; pip would fetch it from PyPI, and PyPI's "
                f"{name} requires an exact torch release, which may replace torch {torch_version}")
    if not str(spec):
        return None
    if _contains(spec, installed):
        return None
    target = "torch" if name == "torch" else f"{name} (and the torch it requires)"
    return ("error", f"the installed {name} {installed} does not satisfy `{req}`, so pip would replace {target} "
            "with a build from PyPI (a CUDA build)")


def _contains(spec: SpecifierSet, version: str) -> bool:
    try:
        return spec.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return True  # an unparsable installed version: do not guess


def _node_requirements(ctx, node: str) -> list[tuple[str, int, str]]:
    out = []
    for name, parse in (("requirements.txt", requirement_lines), ("pyproject.toml", pyproject_dependencies)):
        path = f"{node}/{name}"
        try:
            text = ctx.root.read_text(path, REQUIREMENTS_MAX)
        except HostReadError as exc:
            if exc.failure.name not in ("MISSING",):
                log.debug("cannot read %s: %s", path, exc)
            continue
        out += [(path, number, line) for number, line in parse(text)]
    return out


def _newer_torch_step(env: PythonEnv, gfx_targets, driver: DriverLimit | None = None) -> str:
    """Where another torch release comes from: the index for the env's ROCm release and this machine's GPUs (and no
    newer than the loaded amdgpu-dkms supports)."""
    assert env.torch is not None
    try:
        index, _why = choose_index(env.torch.rocm_version, gfx_targets, python=env_python(env), driver=driver)
    except DriverTooOld as old_driver:
        return (f"If the node really needs another torch release: {old_driver}, so update the kernel driver before "
                "installing one (amdgpu-install's dkms use case, then reboot).")
    except NoWheelForPython as no_wheel:
        return (f"If the node really needs another torch release: this environment's Python has no ROCm torch wheel "
                f"({no_wheel}); it needs a new environment with {python_range_text(no_wheel.index)}.")
    except NoSuitableIndex as conflict:
        return ("If the node really needs another torch release: no single PyTorch ROCm index serves this "
                f"machine's GPUs ({conflict}), so install it from {index_url(conflict.ceiling)} for "
                f"{', '.join(conflict.old)} or from {index_url(conflict.floor)} for {', '.join(conflict.new)}, "
                "in the environment that GPU uses.")
    packages, note = reinstall_packages(env.packages, index)
    command = pip_command(env, f"install --force-reinstall 'torch==<version>' {' '.join(packages[1:])} "
                               f"--index-url {index_url(index)}".replace("  ", " "))
    return ("If the node really needs another torch release, install that release from PyTorch's ROCm index "
            "instead (if this index has it): "
            f"`{command}`." + (f" {note}." if note else ""))


def _pinned_outcomes(ctx, comfy: ComfyInstall) -> list:
    gfx_targets = machine_gpus(ctx.root, getattr(ctx, "facts", None)).gfx_targets
    env = comfy.env
    assert env is not None and env.torch is not None
    torch_version = env.torch.version
    findings = []
    for node in comfy.custom_nodes:
        evidence: list[Evidence] = []
        worst = "warning"
        for path, number, line in _node_requirements(ctx, node):
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            if canonicalize_name(req.name) not in TORCH_FAMILY:
                continue
            if req.marker is not None and not req.marker.evaluate({"sys_platform": "linux", "platform_system": "Linux",
                                                                  "os_name": "posix"}):
                continue
            verdict = judge_requirement(req, _installed(env, canonicalize_name(req.name)), torch_version)
            if verdict is None:
                continue
            severity, why = verdict
            worst = "error" if severity == "error" else worst
            evidence.append(Evidence(f"{line}: {why}", path, number or None))
        if not evidence:
            continue
        node_name = node.rsplit("/", 1)[-1]
        constraints = [f"torch=={torch_version}"] + [f"{n}=={v}" for n in ("torchvision", "torchaudio")
                                                     if (v := env.version_of(n))]
        requirements = shlex.quote(f"{node}/requirements.txt")
        steps = tuple(filter(None, (
            f"Do not run `pip install -r` on {node_name}'s requirements as they are: pip would replace the ROCm "
            "torch. Leave the node's files unchanged.",
            no_interpreter_step(env),
            f"Write the installed versions to a constraints file, e.g. `{constraints_file_command(constraints)}`.",
            "Install the node's requirements under it: "
            f"`{pip_command(env, f'install -r {requirements} -c ~/rocm-torch-constraints.txt')}` "
            "(pip then refuses instead of swapping torch).",
            _newer_torch_step(env, gfx_targets, host_driver_limit(ctx)))))
        evidence.append(Evidence(f"installed: torch {torch_version} ({env.torch.decided_by})",
                                 env.torch.metadata or env.torch.site_packages))
        findings.append(Failed(evidence=evidence, subject=node,
                               severity=Severity.ERROR if worst == "error" else Severity.WARNING,
                               # the subject (the node's folder) names the node: the YAML title stays generic
                               fix=Fix("pip-constrain-torch", False, steps, None)))
    return findings


def constraints_file_command(pins: list[str]) -> str:
    return f"printf '%s\\n' {' '.join(pins)} > ~/rocm-torch-constraints.txt"


# -- the swap already happened: which node asked for the CUDA (or CPU) torch ------------------------

# PyTorch's own indexes for CUDA and CPU wheels (download.pytorch.org/whl/cu121, /whl/cpu, /whl/nightly/cu124)
NON_ROCM_INDEX = re.compile(r"download\.pytorch\.org/whl/(?:nightly/|test/)?(cu\d+|cpu)(?![\w.])")
NON_ROCM_LABEL = re.compile(r"\+(cu\d+|cpu)(?![\w.])")  # a local version label: 2.5.1+cu121, 2.5.1+cpu
INDEX_OPTIONS = ("-i", "--index-url", "--extra-index-url")


def _build_word(label: str) -> str:
    return "CPU-only" if label == "cpu" else "CUDA"


def _index_lines(ctx, node: str) -> list[tuple[str, int, str, str]]:
    """(path, line number, line, cu121|cpu) of the requirements.txt options that send pip to a CUDA or CPU index."""
    path = f"{node}/requirements.txt"
    try:
        text = ctx.root.read_text(path, REQUIREMENTS_MAX)
    except HostReadError:
        return []
    out = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split(" #", 1)[0].strip()
        option = line.split("=", 1)[0].split(None, 1)[0] if line else ""
        match = NON_ROCM_INDEX.search(line)
        if option in INDEX_OPTIONS and match:
            out.append((path, number, line, match.group(1)))
    return out


def _pulled_outcomes(ctx, comfy: ComfyInstall) -> list:
    """The environment already holds a CUDA or CPU torch: the custom nodes whose requirements ask for one.

    A requirement pinning a ``+cu121``/``+cpu`` build of torch (or its companions), or a torch requirement
    beside an index option pointing at PyTorch's CUDA/CPU index, is what ComfyUI-Manager's ``pip install -r``
    turns into the swap (Comfy-Org/comfy-cli PR #379; LykosAI/StabilityMatrix#1132). Named, so reinstalling the ROCm
    build is not undone at the node's next install; torch-wheel-mismatch reports the wrong wheel itself.
    """
    env = comfy.env
    assert env is not None and env.torch is not None
    findings = []
    for node in comfy.custom_nodes:
        pins: list[tuple[str, int, str, str]] = []  # path, line, requirement, label
        family = False
        for path, number, line in _node_requirements(ctx, node):
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            if canonicalize_name(req.name) not in TORCH_FAMILY or (req.marker is not None and not req.marker.evaluate(
                    {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix"})):
                continue
            family = True
            tagged = NON_ROCM_LABEL.search(str(req.specifier))
            if tagged:
                pins.append((path, number, line, tagged.group(1)))
        indexes = _index_lines(ctx, node) if family else []
        if not pins and not indexes:
            continue
        label = (pins or indexes)[0][3]
        word = _build_word(label)
        evidence = [Evidence(f"{line}: asks pip for a {_build_word(lab)} build", path, number or None)
                    for path, number, line, lab in pins]
        evidence += [Evidence(f"{line}: pip takes torch from PyTorch's {_build_word(lab)} index", path, number)
                     for path, number, line, lab in indexes]
        installed = env.torch.version or "unknown version"
        exact = any(canonicalize_name(Requirement(line).name) == "torch" and installed in Requirement(line).specifier
                    for _p, _n, line, _l in pins if installed != "unknown version")
        built = {"cuda": "CUDA", "cpu": "CPU-only"}.get(env.torch.build, env.torch.build)
        evidence.append(Evidence(
            f"installed: torch {installed}, a {built} build ({env.torch.decided_by})"
            + (": exactly the build this node asks for" if exact else ""),
            env.torch.metadata or env.torch.site_packages))
        node_name = node.rsplit("/", 1)[-1]
        requirements = shlex.quote(f"{node}/requirements.txt")
        asked = pins[0][2] if pins else indexes[0][2]
        steps = tuple(filter(None, (
            f"Reinstall the ROCm build of torch in {env.path} first: the steps of the finding torch-wheel-mismatch.",
            no_interpreter_step(env),
            "Then write its versions to a constraints file: `" + pip_command(env, "freeze")
            + " | grep -E '^(torch|torchvision|torchaudio)==' > ~/rocm-torch-constraints.txt`.",
            f"Install {node_name}'s requirements only under it: "
            f"`{pip_command(env, f'install -r {requirements} -c ~/rocm-torch-constraints.txt')}`; pip then refuses "
            f"`{asked}` instead of bringing the {word} torch back. Leave the node's files unchanged; if it fails "
            "without that torch, ask its author for a plain `torch` requirement.")))
        explanation = (
            f"This environment's torch is already a {built} build (see torch-wheel-mismatch), and this custom "
            f"node's requirements ask for a {word} build: a pin with a +{label} label or PyTorch's {word} index. "
            "Installing the node's requirements (ComfyUI-Manager does it at every install and update of the node) "
            "is how pip swaps the ROCm torch out, and it does it again after torch is reinstalled from the ROCm "
            "index, unless pip is held to the ROCm versions with a constraints file. The node's own files stay "
            "as they are.")
        findings.append(Failed(evidence=evidence, subject=node, severity=Severity.ERROR, explanation=explanation,
                               title=f"A ComfyUI custom node asks for a {word} build of torch",
                               fix=Fix("pip-constrain-torch", False, steps, None)))
    return findings


@check("torch-pinned-by-custom-node", AREA)
def torch_pinned_by_custom_node(ctx):
    discovery = _envs(ctx)
    if not discovery.comfyui:
        return Skipped(f"no ComfyUI install was found{_notes(discovery)}")
    outcomes: list = []
    for comfy in discovery.comfyui:
        env = comfy.env
        if env is None or env.torch is None:
            outcomes.append(Skipped(f"{comfy.path}: its Python environment or torch was not found"))
            continue
        if env.torch.build != "rocm":
            # the swap happened already: name the node that asked for it, if one did
            outcomes += _pulled_outcomes(ctx, comfy) or [Skipped(
                f"{comfy.path}: torch is not a ROCm build (see torch-wheel-mismatch), and no custom node asks "
                "for a CUDA or CPU build")]
            continue
        found = _pinned_outcomes(ctx, comfy)
        outcomes += found or [Passed(f"{comfy.path}: no custom node pins torch against {env.torch.version}")]
    return outcomes


# -- pynvml-breaks-rocm-torch ------------------------------------------------------------------------

# pytorch#133259: with pynvml importable, ROCm torch.cuda.device_count() takes the amdsmi path and
# crashes with NameError when amdsmi is not installed. The amdsmi path arrived in the 2.4 cycle
# (2.3.0+rocm6.0 is unaffected: vladmandic/sdnext#3181); reported on 2.4.0+rocm6.1 (#133259) and
# still on 2.4.1 (sdnext#3181, Haidra-Org/horde-worker-reGen#324). Fixed by pytorch PR #132990,
# merged 2024-08-19, before the 2.5 branch cut of 2024-09-09 (PR #135506), so 2.5.0 has it; AMD
# cherry-picked it into its ROCm 6.2.1 builds (ROCm/pytorch PR #1535).
FIX_MERGED = 20240819


def pynvml_verdict(version: str | None) -> tuple[str, str] | None:
    """(severity, words) for a ROCm torch version beside pynvml; None when it is not affected."""
    if not version:
        return ("warning", "its version is unknown, so it may crash")
    public, _, local = version.partition("+")
    try:
        v = Version(public)
    except InvalidVersion:
        return ("warning", f"version {version} is not a PEP 440 version, so it may crash")
    if v < Version("2.4.0.dev0"):
        return None
    if v >= Version("2.5.0rc0"):
        return None
    if v.release[:2] == (2, 5) and v.dev is not None:  # a 2.5.0 nightly
        date = v.dev
        if date >= FIX_MERGED + 1:
            return None
        return ("warning", f"nightly {version} was built before that fix was merged (2024-08-19), so "
                "torch.cuda may crash")
    match = re.match(r"rocm(\d{1,9})\.(\d{1,9})(?:\.(\d{1,9}))?", local)
    if match:
        rocm = tuple(int(x or 0) for x in match.groups())
        if rocm >= (6, 2, 1):
            return None  # AMD's builds for ROCm 6.2.1+ carry the fix (ROCm/pytorch PR #1535)
        if rocm[:2] == (6, 2):
            return ("warning", f"{version} is a 2.4 build for ROCm 6.2 without a patch level, so it cannot be told "
                    "whether it is one of the 6.2.1 builds that carry the fix: torch.cuda may crash")
    # the explanation (YAML) names the fix and the releases that have it: the words here say only where this
    # build stands, so the fixed version is stated once
    return ("error", f"this environment's torch {version} predates that fix")


AMDSMI_PACKAGE = "/opt/rocm/share/amd_smi"  # the amdsmi Python package ROCm ships (AMD SMI docs, "Install the library")


def _amdsmi_step(ctx, env: PythonEnv) -> str | None:
    """The third way out on a native host: with the amdsmi Python package of this ROCm importable, torch's amdsmi path
    works and pynvml can stay (pytorch/pytorch#133259: "fixable by cd /opt/rocm/share/amd_smi && pip3 install";
    not under WSL, where AMD SMI does not run, as that reporter found)."""
    if ctx.is_wsl or not ctx.root.is_dir(AMDSMI_PACKAGE):
        return None
    return ("Or keep pynvml and install the amdsmi Python package of this machine's ROCm into the environment: "
            f"`{pip_command(env, 'install ' + AMDSMI_PACKAGE)}`.")


# rocm6.0's newest torch is 2.4.1 (2.3.x and 2.4.x only); rocm6.1 and later indexes carry 2.5+ (torch_index sources).
FIXED_TORCH = ("rocm6.1", "torch 2.5 or newer (with the pynvml fix)")


def _upgrade_step(env: PythonEnv, gfx_targets, driver: DriverLimit | None = None) -> str:
    """Upgrade torch from an index with the fix that still carries this machine's GPUs and that the loaded amdgpu-dkms
    supports (torch_index decides)."""
    assert env.torch is not None
    try:
        index, _why = choose_index(env.torch.rocm_version, gfx_targets, minimum=FIXED_TORCH, python=env_python(env),
                                   driver=driver)
    except DriverTooOld as old_driver:
        return (f"Upgrading torch is no way out until the kernel driver is updated ({old_driver}): uninstall pynvml "
                "instead.")
    except NoWheelForPython as no_wheel:
        return (f"Upgrading torch in this environment is no way out: its Python has no ROCm torch wheel ({no_wheel}); "
                "uninstall pynvml instead.")
    except NoSuitableIndex as conflict:
        return (f"Upgrading torch is no way out here ({conflict}): uninstall pynvml, or give each GPU its own "
                "environment.")
    packages, note = reinstall_packages(env.packages, index)
    command = pip_command(env, f"install --upgrade {' '.join(packages)} --index-url {index_url(index)}")
    return (f"Or, if a custom node needs pynvml, upgrade torch from the ROCm index instead: `{command}`."
            + (f" {note}." if note else ""))


def _pynvml_dists(env: PythonEnv) -> list[tuple[str, str, str]]:
    out = []
    for name in PYNVML_NAMES:
        entry = env.packages.get(name)
        if entry:
            out.append((name, entry[0], entry[1]))
    return out


_PYNVML_REQ_RE = re.compile(r"^Requires-Dist:\s*(pynvml|nvidia-ml-py3?)\b(.*)$", re.I | re.M)
PYNVML_NAMES = ("pynvml", "nvidia-ml-py", "nvidia-ml-py3")


def _installed_requirers(ctx, env: PythonEnv) -> list[Evidence]:
    """Installed packages whose METADATA requires pynvml unconditionally: what pulled it in (DeepSpeed lists
    nvidia-ml-py in its requirements, pytorch/pytorch#133259). Optional extras are left out: pip installs those only
    when asked for."""
    out = []
    budget = REQUIRERS_READ_BUDGET  # bytes over all METADATA files: a hostile snapshot cannot make this slow
    for name, (version, dist) in sorted(env.packages.items()):
        if name in PYNVML_NAMES or not dist.endswith(".dist-info"):
            continue
        if budget <= 0:
            log.debug("pynvml requirers: read budget spent at %s", name)
            break
        path = f"{dist}/METADATA"
        try:
            text = ctx.root.read_text(path, min(REQUIREMENTS_MAX, budget))
        except HostReadError:
            continue
        budget -= len(text)
        for match in _PYNVML_REQ_RE.finditer(text):
            if "extra" in match.group(2):
                continue
            number = text.count("\n", 0, match.start()) + 1
            out.append(Evidence(f"{match.group(0).strip()} ({name} {version} pulls it in)", path, number))
    return out[:MAX_REQUIRERS]


MAX_REQUIRERS = 8
REQUIRERS_READ_BUDGET = 8 << 20


def _pynvml_requirers(ctx, env: PythonEnv) -> list[Evidence]:
    out = _installed_requirers(ctx, env)
    discovery = _envs(ctx)
    for comfy in discovery.comfyui:
        if comfy.env is not env:
            continue
        for node in comfy.custom_nodes:
            for path, number, line in _node_requirements(ctx, node):
                if re.match(r"(pynvml|nvidia-ml-py3?)\b", line, re.I):
                    out.append(Evidence(f"{line} (custom node {node.rsplit('/', 1)[-1]})", path, number or None))
    return out


@check("pynvml-breaks-rocm-torch", AREA)
def pynvml_breaks_rocm_torch(ctx):
    discovery = _envs(ctx)
    envs = [e for e in _torch_envs(discovery) if e.torch is not None and e.torch.build == "rocm"]
    if not envs:
        return Skipped(f"no Python environment with a ROCm torch was found{_notes(discovery)}")
    outcomes: list = []
    for env in envs:
        info = env.torch
        assert info is not None
        dists = _pynvml_dists(env)
        if not dists:
            outcomes.append(Passed(f"{env.path}: no pynvml / nvidia-ml-py"))
            continue
        if env.version_of("amdsmi"):
            outcomes.append(Passed(f"{env.path}: the amdsmi Python package is installed, so torch's amdsmi path works"))
            continue
        verdict = pynvml_verdict(info.version)
        if verdict is None:
            outcomes.append(Passed(f"{env.path}: torch {info.version} has the fix for pynvml (pytorch PR #132990)"))
            continue
        severity, words = verdict
        evidence = [Evidence(f"{name} {version} is installed", path) for name, version, path in dists]
        if info.metadata_version_line:
            evidence.append(_ev(info.metadata_version_line))
        evidence += _pynvml_requirers(ctx, env)
        names = " ".join(name for name, _v, _p in dists)
        steps = tuple(filter(None, (
            no_interpreter_step(env),
            f"Uninstall it from this environment: `{pip_command(env, 'uninstall -y ' + names)}`.",
            _upgrade_step(env, machine_gpus(ctx.root, getattr(ctx, "facts", None)).gfx_targets,
                          host_driver_limit(ctx)),
            _amdsmi_step(ctx, env))))
        outcomes.append(Failed(
            evidence=evidence, subject=env.path, severity=Severity(severity),
            details=f"{words[0].upper()}{words[1:]}.",
            title="pynvml crashes the ROCm torch" if severity == "error" else "pynvml may crash the ROCm torch",
            fix=Fix("pip-uninstall-pynvml", False, steps,
                    _user_fix_action(env, ("pip-uninstall-pynvml", env.path)))))
    return outcomes
