"""Launchers that undo the ROCm torch fix: their next install/update runs their own ``pip install torch``.

Reinstalling the ROCm wheel by hand (the torch-wheel-mismatch fix) does not last in an environment a launcher
manages: StabilityMatrix re-runs its torch step on package updates (LykosAI/StabilityMatrix#1570, #1132), the
AUTOMATIC1111/Forge launcher installs whatever ``TORCH_COMMAND`` says (with ``--extra-index-url`` pip may take the
CUDA wheel from PyPI: AUTOMATIC1111/stable-diffusion-webui#8808, #16160), SD.Next chooses by its own GPU detection,
ComfyUI Desktop and Pinokio by the GPU chosen at install. This check says which launcher manages which environment
and how to make the ROCm wheel stick in that launcher.
"""

from __future__ import annotations

import logging

from rocmdesk.diagnosis.checks.python_torch import env_python, host_driver_limit, no_wheel_targets
from rocmdesk.diagnosis.engine import Failed, Passed, check
from rocmdesk.diagnosis.launchers import Launcher, find_launchers
from rocmdesk.diagnosis.model import Evidence, Severity
from rocmdesk.diagnosis.python_envs import machine_gpus, read_env
from rocmdesk.diagnosis.torch_index import (
    DriverTooOld,
    NoSuitableIndex,
    NoWheelForPython,
    choose_index,
    index_for_rocm_tag,
    index_url,
)

log = logging.getLogger(__name__)

AREA = "Python and PyTorch"
INDEX_HINT = "https://download.pytorch.org/whl/rocmX.Y (the index the torch-wheel-mismatch finding names)"


def _homes(facts) -> list[str]:
    user = facts.user
    if user is not None and user.home and user.home not in ("/", "/root"):
        return [user.home]
    return [f"/home/{n}" for n in facts.root.listdir("/home")][:16]


@check("launcher-reinstalls-torch", AREA)
def launcher_reinstalls_torch(ctx):
    facts = ctx.facts
    launchers = find_launchers(ctx.root, _homes(facts))
    if not launchers:
        return Passed("no StabilityMatrix, AUTOMATIC1111/Forge, SD.Next, ComfyUI Desktop/portable or Pinokio found")
    outcomes = [o for launcher in launchers if (o := _outcome(ctx, launcher)) is not None]
    if not outcomes:
        names = ", ".join(sorted({launcher.name for launcher in launchers}))
        return Passed(f"{names}: the managed environments have a ROCm torch and the launcher is set to keep it")
    return outcomes


def _outcome(ctx, launcher: Launcher):
    envs = [read_env(ctx.root, path, "venv", f"managed by {launcher.name}") for path in dict.fromkeys(launcher.envs)]
    torches = [(env, env.torch) for env in envs if env.torch is not None]
    ev = [Evidence(f"{launcher.name} files", m) for m in launcher.markers[:3]]
    for env, torch in torches:
        ev.append(Evidence(f"torch {torch.version} ({torch.build} build)", torch.metadata or env.path))
    wrong = [(env, t) for env, t in torches if t.build in ("cuda", "cpu")]
    rocm = [(env, t) for env, t in torches if t.build == "rocm"]
    index = None
    for _env, torch in rocm:
        index = index_for_rocm_tag(torch.local_tag or "") or index
    index = _fitting_index(ctx, index, [env for env, _t in torches])
    url = index_url(index) if index else INDEX_HINT
    if launcher.kind in ("a1111", "forge"):
        return _webui_outcome(launcher, ev, wrong, rocm, url)
    if launcher.kind == "comfyui-portable":
        return Failed(evidence=ev, subject=launcher.path, severity=Severity.INFO,
                      title="ComfyUI portable is a Windows build",
                      explanation=("The ComfyUI portable package (python_embeded) is made for Windows: its embedded "
                                   "Python and torch do not run on Linux, and its updater installs the Windows "
                                   "wheels again. On Linux use a ComfyUI git checkout with its own venv."),
                      fix_steps=("Clone ComfyUI, make a venv, and install torch with `pip install torch torchvision "
                                 f"torchaudio --index-url {url}`, then `pip install -r requirements.txt`.",))
    if not wrong and not rocm:
        return None  # nothing installed yet: the launcher has not had a chance to get it wrong
    # StabilityMatrix's updates replaced hand-installed ROCm wheels in every report (#1570, #1132): a warning always
    severity = Severity.WARNING if wrong or launcher.kind == "stabilitymatrix" else Severity.INFO
    if launcher.preferred_torch is not None:
        ev.append(Evidence(f"{launcher.preferred_torch[0]}: PreferredTorchIndex {launcher.preferred_torch[1]}",
                           f"{launcher.path}/settings.json"))
    state = ("it has already replaced the ROCm wheel: " + ", ".join(f"{e.path} has torch {t.version}" for e, t in wrong)
             if wrong else "the ROCm wheel is in place now, but the launcher's next update may replace it")
    return Failed(evidence=ev, subject=launcher.path, severity=severity,
                  title=f"{launcher.name} reinstalls PyTorch on its updates",
                  explanation=(f"{launcher.name} manages {', '.join(e.path for e in envs) or 'its environments'} and "
                               f"runs its own torch install when it installs or updates a package; {state}. "
                               + STICK_WHY.get(launcher.kind, "")
                               + (f" Its torch backend for {launcher.preferred_torch[0]} is "
                                  f"{launcher.preferred_torch[1]}, not ROCm, so its updates install that build."
                                  if _sm_not_rocm(launcher) and launcher.preferred_torch else "")),
                  fix_steps=STEPS[launcher.kind](url))


def _fitting_index(ctx, installed: str | None, envs) -> str | None:
    """The index to pin the launcher to: the one torch-wheel-mismatch would choose from the installed wheel's ROCm
    release, the GPUs' targets, the environment's Python and the loaded driver. Pinning the installed wheel's own
    index would reinstall a wheel without code for the GPU (rocm5.2 on an RX 7900 XTX,
    AUTOMATIC1111/stable-diffusion-webui#7459) on the launcher's next torch install. None when no index fits."""
    gpus = machine_gpus(ctx.root, getattr(ctx, "facts", None))
    if not gpus.gfx_targets:
        return installed  # the GPUs' targets are unknown: nothing to judge the installed wheel's index by
    if no_wheel_targets(gpus.gfx_targets):
        return None  # no index has code for them (gfx803...): pin none
    previous = installed[len("rocm"):] if installed else None
    python = env_python(envs[0]) if envs else None
    try:
        return choose_index(previous, gpus.gfx_targets, python=python, driver=host_driver_limit(ctx))[0]
    except (DriverTooOld, NoSuitableIndex, NoWheelForPython):
        return None


def _sm_not_rocm(launcher: Launcher) -> bool:
    return launcher.preferred_torch is not None and "rocm" not in launcher.preferred_torch[1].lower()


def _webui_outcome(launcher: Launcher, ev, wrong, rocm, url):
    command = launcher.torch_command
    user = f"{launcher.path}/webui-user.sh"
    if command is not None:
        ev.insert(0, Evidence(f"TORCH_COMMAND={command[2]}", command[0], command[1]))
    text = command[2] if command else ""
    pinned = "rocm" in text and "--index-url" in text and "--extra-index-url" not in text
    if pinned and not wrong:
        return None
    if not (wrong or rocm or command):
        return None
    problem = []
    if command is None:
        problem.append("webui-user.sh sets no TORCH_COMMAND, so the launcher installs its default torch (a CUDA "
                       "build unless webui.sh recognises the AMD GPU) whenever torch is missing or "
                       "`--reinstall-torch` is given")
    elif "--extra-index-url" in text:
        problem.append("its TORCH_COMMAND uses `--extra-index-url`, so pip also sees PyPI and takes PyPI's newer CUDA "
                       "torch over the ROCm one")
    elif "rocm" not in text:
        problem.append("its TORCH_COMMAND installs no ROCm wheel")
    if wrong:
        problem.append("the venv has " + ", ".join(f"torch {t.version}" for _e, t in wrong) + " now")
    return Failed(evidence=ev, subject=launcher.path, severity=Severity.WARNING if (wrong or command) else
                  Severity.INFO,
                  title=f"{launcher.name} will install a non-ROCm PyTorch again",
                  explanation=(f"{launcher.name} in {launcher.path} installs torch with TORCH_COMMAND from "
                               f"webui-user.sh; " + "; ".join(problem) + "."),
                  fix_steps=(f"In {user}, set `export TORCH_COMMAND=\"pip install torch torchvision --index-url "
                             f"{url}\"` (`--index-url`, not `--extra-index-url`).",
                             f"Remove the wrong wheel and let the launcher install the pinned one: `{launcher.path}"
                             "/venv/bin/pip uninstall -y torch torchvision`, then `./webui.sh --reinstall-torch`."))


STICK_WHY = {
    "stabilitymatrix": ("StabilityMatrix picks the wheel from the package's torch backend setting, and its updates "
                        "have replaced hand-installed ROCm wheels (LykosAI/StabilityMatrix#1570, #1132)."),
    "sdnext": "SD.Next chooses the torch build from its own GPU detection at start.",
    "comfyui-desktop": "ComfyUI Desktop installs torch for the GPU type chosen when it was set up.",
    "pinokio": "Pinokio apps install torch through their torch.js script, which picks the wheel per platform and GPU.",
}

STEPS = {
    "stabilitymatrix": lambda url: (
        "In StabilityMatrix choose the package's ⋮ menu, \"Python Packages\": remove torch, torchvision and "
        f"torchaudio, then add `torch torchvision torchaudio --index-url {url}` (LykosAI/StabilityMatrix#1132).",
        "Set the package's torch backend to ROCm (reinstall or update it with \"ROCm\" chosen), so its next update "
        "installs a ROCm wheel.",
        "After every package update, run rocmdesk's diagnosis again and repeat the first step if torch is not a ROCm "
        "build (LykosAI/StabilityMatrix#1570)."),
    "sdnext": lambda url: (
        "Start SD.Next with `./webui.sh --use-rocm`, so it installs and keeps its ROCm torch.",
        f"To pin one wheel: `export TORCH_COMMAND=\"torch torchvision --index-url {url}\"` before starting it, "
        "with `--reinstall` once."),
    "comfyui-desktop": lambda url: (
        f"Reinstall torch in the Desktop's .venv with `pip install --force-reinstall torch torchvision torchaudio "
        f"--index-url {url}` (its venv's pip).",
        "After each ComfyUI Desktop update, run rocmdesk's diagnosis again: the update may reinstall torch."),
    "pinokio": lambda url: (
        f"In the app's folder under ~/pinokio/api, make torch.js's Linux AMD branch install from `{url}` "
        "(`--index-url`, not `--extra-index-url`).",
        "Run the app's Install or Update again from Pinokio, then check torch with rocmdesk's diagnosis."),
}
