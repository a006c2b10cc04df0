"""No host fixes from inside a container (issue 16, item 3).

A container shares the host's kernel, amdgpu, boot files, Secure Boot and device groups. A finding whose
fix changes those (modprobe.d, the initramfs, the kernel command line, MOK, the host's /etc/group, Xorg)
cannot be fixed from inside: :func:`for_container` rewrites it to say so and gives the steps as text for
the host, with no action the app could run. Environment-variable fixes become the run line's ``-e``.
Checks of the machine that a container check answers better (``kfd-missing``, the group checks, which
would read the image's /etc/group) step aside for it.
"""

from __future__ import annotations

import dataclasses
import logging
import re

from rocmdesk.diagnosis.container import ContainerInfo
from rocmdesk.diagnosis.model import CheckResult, Finding, Fix, Status

log = logging.getLogger(__name__)

# Fixes that work inside the container itself: the container's own Python environments, and the
# container checks (whose steps are already run lines or say "on the host").
IN_CONTAINER_FIXES = frozenset({"pip-reinstall-rocm-torch", "pip-constrain-torch", "pip-uninstall-pynvml"})
ENV_FIXES = frozenset({"set-hsa-override", "correct-hsa-override", "correct-visible-devices"})
# machine checks a container check replaces inside a container
SUPERSEDED = {
    "kfd-missing": "container-devices-not-passed",
    "user-not-in-render-group": "container-device-group",
    "group-not-active-in-session": "container-device-group",
}
_ASSIGNMENT_RE = re.compile(r"`([A-Z_][A-Z0-9_]*)=([^`\s]*)`")
_PROCESS_ENV = ("/proc/1/environ", "/proc/self/environ")


def for_container(result: CheckResult, info: ContainerInfo | None) -> CheckResult:
    """``result`` as it must read inside ``info``'s container (unchanged when ``info`` is None)."""
    if info is None or result.id.startswith("container-"):
        return result
    if result.id in SUPERSEDED and result.status in (Status.FAIL, Status.PASS):
        return dataclasses.replace(
            result, status=Status.SKIP, findings=[],
            reason=f"inside {info.describe()}: answered by {SUPERSEDED[result.id]} (the devices and groups come "
                   "from the run line, not from this image's files)")
    if not result.findings:
        return result
    return dataclasses.replace(result, findings=[_finding(f, info) for f in result.findings])


def _finding(finding: Finding, info: ContainerInfo) -> Finding:
    fix = finding.fix
    if fix is None or fix.id in IN_CONTAINER_FIXES:
        return finding
    if fix.id in ENV_FIXES:
        env_fix = _env_fix(finding, fix, info)
        if env_fix is not None:
            return dataclasses.replace(finding, fix=env_fix)
    steps = (f"This runs inside {info.describe()}, which shares the host's kernel, driver, boot files and groups: "
             "this fix belongs on the host, not in the container. On the host:",
             *fix.steps,
             "Then restart the container.")
    explanation = (f"{finding.explanation}\n\nSeen from inside {info.describe()}: the cause is on the host, so the "
                   "steps below are for the host; nothing here can be run from the container.")
    return dataclasses.replace(finding, explanation=explanation,
                               fix=Fix(f"host-{fix.id}", fix.privileged, steps, None))


def _env_fix(finding: Finding, fix: Fix, info: ContainerInfo) -> Fix | None:
    """An environment fix as run-line options, when the variable is (or must be) in the container's
    environment rather than in a file of the image."""
    files = [e.path for e in finding.evidence if e.path and e.path.startswith("/") and "=" in e.text
             and not e.path.startswith(_PROCESS_ENV)]
    if files:
        return None  # set by a file inside the container (an image's /etc/environment): edit it there
    text = " ".join(fix.steps)
    match = _ASSIGNMENT_RE.search(text)
    if match is None:
        return None
    name, value = match.groups()
    remove = f"remove `{name}=" in text
    run = info.run_command
    if remove:
        steps = (f"{name} comes from the container's environment (its run line, an --env-file or the image's ENV): "
                 f"start the container without `-e {name}=...` (with Compose, drop it from `environment:`).",
                 f"If the image sets it, override it: `{run} -e {name}= ...` does not unset it, so rebuild the image "
                 "without that ENV line or pick another tag.")
    else:
        steps = (f"Start the container with `{run} -e {name}={value} ... {info.image or 'IMAGE'}` (with Compose: "
                 f"`environment:` / `{name}: \"{value}\"`). A variable set on the host does not reach a container: "
                 "only -e, --env-file or the image's ENV do.",
                 "Recreate the container so the new environment takes effect.")
    return Fix(f"container-env-{fix.id}", False, steps, None)
