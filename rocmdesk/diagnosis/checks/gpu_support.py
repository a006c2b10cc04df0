"""Is each GPU one ROCm supports? Answered from the one support table (rocmdesk.diagnosis.rocm_support).

A GPU whose gfx target is not on the list of the installed ROCm release gets an honest finding: what does work on
that card (ROCm release that added it, a same-family override, an older ROCm, a community build, or nothing). Targets
with a known same-family override are left to hsa-override-suggested / hsa-override-mismatch, so each GPU is spoken
of once.
"""

from __future__ import annotations

import logging

from rocmdesk.diagnosis import rocm_support
from rocmdesk.diagnosis.engine import Failed, Passed, Skipped, check
from rocmdesk.diagnosis.facts import HostFacts
from rocmdesk.diagnosis.gpu_code import targets_in_names
from rocmdesk.diagnosis.gpu_select import visible_devices_value
from rocmdesk.diagnosis.model import Evidence, Severity
from rocmdesk.diagnosis.pci_kfd import GpuFact

log = logging.getLogger(__name__)

AREA = "Environment"
ROCM_ROCBLAS = "/opt/rocm/lib/rocblas/library"  # one TensileLibrary_lazy_<gfx>.dat per target it has code for
# the ROCm that ollama bundles and runs (its Dockerfile installs dist/lib/ollama/rocm/rocblas/library; the install
# script unpacks it under /usr/local, distribution packages under /usr)
BUNDLED_ROCBLAS = ("/usr/local/lib/ollama/rocm/rocblas/library", "/usr/lib/ollama/rocm/rocblas/library")
MAX_NAMES = 20000


def gpu_evidence(gpu: GpuFact) -> Evidence:
    assert gpu.gfx is not None
    packed = gpu.gfx.major * 10000 + gpu.gfx.minor * 100 + gpu.gfx.step
    if gpu.kfd_node is not None:
        return Evidence(f"gfx_target_version {packed} ({gpu.gfx.target})",
                        f"/sys/class/kfd/kfd/topology/nodes/{gpu.kfd_node}/properties")
    return Evidence(f"{gpu.pci} is {gpu.gfx.target}")


def describe(gpu: GpuFact) -> str:
    target = gpu.gfx.target if gpu.gfx else "?"
    product = rocm_support.products(target)
    return f"{gpu.pci} ({target}{', ' + product if product else ''})"


def installed_rocm(facts: HostFacts) -> tuple[str | None, str | None, Evidence | None]:
    """(version as installed, table release describing it, evidence); all None without /opt/rocm."""
    version = facts.rocm_version
    if not version:
        return None, None, None
    path = "/opt/rocm/.info/version" if facts.read("/opt/rocm/.info/version") else "/opt"
    return version, rocm_support.release_row_for(version), Evidence(f"ROCm {version}", path)


def still_has_code(row: rocm_support.TargetRow, version: str | None) -> str | None:
    """The newest PyTorch index with code for an unsupported target (``rocm6.3``) when the installed ROCm is no newer
    than it (its libraries are the ones that wheel bundles) or none is installed; None otherwise."""
    if row.torch_last is None or row.torch_first is None:
        return None
    if version is None:
        return row.torch_last
    have = rocm_support.release_key(version)
    last = rocm_support.release_key(row.torch_last[len("rocm"):])
    return row.torch_last if have is not None and last is not None and have[:2] <= last[:2] else None


# AMD's TheRock nightly index for gfx900: named by an AMD engineer (in its v2-staging form) as the workaround for the
# rocm7.2 wheels' missing gfx900 kernels (pytorch/pytorch#179865, naromero77amd; ROCm/TheRock PR #4502); by 2026-09
# users take rocm_sdk_libraries_gfx900 wheels from its v2 form (daimonionnn/amd-vega-rocm-vulkan-llm-toolkit#1).
# Nightlies, not a release.
THEROCK_NIGHTLY = {"gfx900": "https://rocm.nightlies.amd.com/v2/gfx900/"}


def _still_runs(gpu: GpuFact, row: rocm_support.TargetRow, last: str, version: str | None,
                when: str) -> tuple[str, str, tuple[str, ...]]:
    target = row.target
    last_release = last[len("rocm"):]
    installed = (f"The installed ROCm {version} still has {target} code in its libraries, unofficially"
                 if version else "No ROCm is installed, so nothing on this machine is broken by it")
    title = f"{target} is off ROCm's support list; PyTorch's {last} wheels still run it"
    details = (f"GPU {describe(gpu)} is {when}. {installed}. PyTorch's ROCm wheels up to {last} bundle ROCm "
               f"{last_release} libraries with {target} kernels and need no ROCm installed; newer wheels and ROCm "
               f"releases lack them (rocBLAS aborts with \"Cannot read ... TensileLibrary.dat ... for GPU arch : "
               f"{target}\"). What works: {row.what_works}.")
    steps = [f"For PyTorch no ROCm install is needed: in a virtual environment run `python -m pip install torch "
             f"torchvision --index-url https://download.pytorch.org/whl/{last}` (its wheels bring their own ROCm "
             f"{last_release}).",
             f"Do not install or upgrade to a ROCm release newer than {last_release}, nor torch from a newer index, "
             "for this GPU: their libraries have no code for it."]
    if target in THEROCK_NIGHTLY:
        steps.append(f"For a newer torch: AMD's TheRock nightly wheels for {target} (`--index-url "
                     f"{THEROCK_NIGHTLY[target]}`; nightlies, expect breakage).")
    return title, details, tuple(steps)


@check("gpu-not-supported-by-rocm", AREA)
def gpu_not_supported_by_rocm(ctx):
    if ctx.is_wsl:
        return Skipped(ctx.WSL_SKIP_REASON)
    facts: HostFacts = ctx.facts
    gpus = [g for g in facts.amd_gpus if g.gfx is not None]
    if not gpus:
        if facts.kfd_nodes is None:
            return Skipped("no KFD topology in this root (/sys/class/kfd), so the GPUs' gfx targets are unknown")
        return Skipped("no GPU node with a gfx target in the KFD topology (see kfd-gpu-not-listed)")
    version, release, rocm_ev = installed_rocm(facts)
    if version and release is None and rocm_support.release_key(version) is not None:
        # older than the table: judging it by the newest release called gfx803 on ROCm 3.3 unsupported
        # (ROCm/legacy-rocm-build#1080, #1214); the table cannot say what such a release supported
        return Skipped(f"ROCm {version} is older than rocmdesk's support table (ROCm {rocm_support.RELEASES[0]} "
                       "and newer)")
    judged = f"ROCm {version}" if version else f"ROCm {rocm_support.LATEST} (no ROCm installed under /opt)"
    supported = [g for g in gpus if g.gfx and rocm_support.is_supported(g.gfx.target, release)]
    # GPUs ROCm code runs on, natively or with their own same-family override (the RX 7700S beside a 780M,
    # ggml-org/llama.cpp#8618): the ones to keep visible when hiding one it does not run on
    runnable = supported + [g for g in gpus if g.gfx and g not in supported
                            and rocm_support.same_family_override(g.gfx.target)]
    outcomes: list = []
    fine: list[str] = []
    code_in = {folder: targets_in_names(ctx.root.listdir(folder)[:MAX_NAMES])
               for folder in ((ROCM_ROCBLAS,) if version else ()) + BUNDLED_ROCBLAS}
    for gpu in gpus:
        assert gpu.gfx is not None
        target = gpu.gfx.target
        row = rocm_support.row_of(target)
        status = row.status_in(release) if row else "unknown"
        if status == "supported":
            fine.append(f"{target} is supported by {judged}")
            continue
        if row is not None and row.override and status == "never":
            continue  # hsa-override-suggested / hsa-override-mismatch speak of it
        built_for = [folder for folder, targets in code_in.items() if target in targets]
        if built_for:
            # off AMD's list, but the ROCm build in use was made for it: TheRock's gfx1151 ROCm in a Strix Halo
            # toolbox (kyuz0/amd-strix-halo-vllm-toolboxes#6), ollama's bundle on a gfx1150 (ollama/ollama#16690)
            fine.append(f"{target} is not on ROCm's official list, but rocBLAS in {built_for[0]} has code for it")
            continue
        ev = [gpu_evidence(gpu)] + ([rocm_ev] if rocm_ev else [])
        severity = Severity.WARNING
        steps: tuple[str, ...]
        if row is None:  # status "unknown"
            severity = Severity.INFO
            title = f"{target} is not in rocmdesk's support table"
            details = (f"GPU {describe(gpu)} has a gfx target rocmdesk's table does not know. It is not on ROCm's "
                       f"Linux support list of any release up to {rocm_support.LATEST}.")
            steps = ("Check AMD's current ROCm system requirements for this GPU before installing ROCm for it.",)
        elif status == "not yet":
            title = f"{judged} is older than ROCm's support for {target}"
            details = (f"GPU {describe(gpu)} joined ROCm's Linux support list in ROCm {row.added}; the installed "
                       f"{judged} predates it. What works: {row.what_works}.")
            steps = (f"Upgrade ROCm to {row.added} or newer (the amdgpu-install package of that release, then "
                     "`sudo amdgpu-install --usecase=rocm`), or use a PyTorch wheel that bundles a newer ROCm.",)
        elif status == "deprecated":
            severity = Severity.INFO
            title = f"{target} is deprecated in {judged}"
            details = (f"GPU {describe(gpu)} is still supported by {judged}, but deprecated since ROCm "
                       f"{row.deprecated}" + (f" and dropped in ROCm {row.dropped}" if row.dropped else "")
                       + f". What works later: {row.what_works}.")
            steps = ("Stay on a ROCm release that still supports it; do not upgrade past "
                     f"{row.dropped or 'the deprecation'} for this GPU.",)
        else:  # "dropped" or "never"
            when = (f"dropped in ROCm {row.dropped}" if status == "dropped" and row.dropped
                    else "not on ROCm's Linux support list")
            title = f"ROCm does not support {target}"
            details = f"GPU {describe(gpu)} is {when}. What works: {row.what_works}."
            steps = (f"What works on this GPU: {row.what_works}.",)
            last = still_has_code(row, version)
            if last is not None:
                # off the support list, but nothing installed lacks its code: PyTorch's wheels up to ``last`` bundle
                # ROCm libraries built for it and run on it (torch 2.7.0+rocm6.3 on gfx900: daimonionnn/amd-vega-rocm-
                # vulkan-llm-toolkit#1; ROCm 6.0's rocBLAS ships TensileLibrary_lazy_gfx900/gfx906: ROCm/legacy-rocm-
                # build#3015), while ROCm 6.4's rocBLAS lists neither (#4625) and the rocm7.2 wheel aborts on gfx900
                # (pytorch/pytorch#179865): advice, not a fault
                severity = Severity.INFO
                title, details, steps = _still_runs(gpu, row, last, version, when)
        others = [g for g in runnable if g is not gpu]
        if others and status in ("dropped", "never", "unknown"):
            value = visible_devices_value(facts, others)
            # an unsupported GPU left visible makes HIP programs abort for every GPU ("Unable to find code object
            # for all current devices": ROCm/clr hipamd/src/hip_code_object.cpp; ROCm/legacy-rocm-build#2061)
            how = "are supported" if all(g in supported for g in others) else "run ROCm code (with their override)"
            details += (" The machine's other GPU(s) " + ", ".join(describe(g) for g in others) + f" {how}: "
                        "while this one stays visible, HIP programs can abort with \"hipErrorNoBinaryForGpu: Unable to "
                        "find code object for all current devices\".")
            if value:
                steps = (*steps, f"Hide it from ROCm programs: set `ROCR_VISIBLE_DEVICES={value[0]}` ({value[1]}) "
                                 "where the GPU program is started (its systemd unit or launcher).")
        outcomes.append(Failed(evidence=ev, subject=gpu.pci, title=title, details=details, severity=severity,
                               fix_steps=steps))
    return outcomes or Passed("; ".join(dict.fromkeys(fine)) or "every GPU is covered by another check")
