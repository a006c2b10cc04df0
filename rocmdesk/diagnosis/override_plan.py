"""What to set when one global HSA_OVERRIDE_GFX_VERSION meets GPUs of several families.

A global override applies to every GPU agent. When it is right for some GPUs and wrong for others (an RX 6700M
beside a Vega iGPU, an RX 7900 XTX beside an RX 6600), changing it to another GPU's value only moves the breakage
(ollama/ollama#2411, ROCm/ROCm#1306, ROCm/rocm-libraries#5184). What works instead:
- hide the GPU ROCm should not use: ROCR_VISIBLE_DEVICES by agent UUID, else index (rocmdesk.diagnosis.gpu_select);
- or one override per GPU, HSA_OVERRIDE_GFX_VERSION_<KFD node id>, which the runtime reads before the global one
  from ROCm 6.2 on (ROCm/ROCT-Thunk-Interface PR #104; ROCm/legacy-rocm-build#5069). ollama's own GPU discovery
  reads only the global variable (ollama/ollama#8473, #10033), so for ollama hiding is the way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rocmdesk.diagnosis import rocm_support
from rocmdesk.diagnosis.facts import HostFacts
from rocmdesk.diagnosis.gfx import GfxVersion
from rocmdesk.diagnosis.gpu_select import visible_devices_value
from rocmdesk.diagnosis.pci_kfd import GpuFact

OVERRIDE = "HSA_OVERRIDE_GFX_VERSION"


def right_value(gfx: GfxVersion, release: str | None = None) -> str | None:
    """The override this GPU wants: None when supported natively, or when no override of any family works for it
    (never its own unsupported version: that is no fix)."""
    if rocm_support.is_supported(gfx.target, release):
        return None
    return rocm_support.same_family_override(gfx.target)


def fits(version: GfxVersion, gpu: GpuFact) -> bool:
    return gpu.gfx is not None and (gpu.gfx == version or gpu.gfx.family == version.family)


@dataclass(slots=True)
class Plan:
    """For a global override that fits ``fit`` GPUs and not ``misfit`` ones: the variables to set (name, value),
    whether the global one stays, and the words."""

    fit: list[GpuFact]
    misfit: list[GpuFact]
    set_vars: list[tuple[str, str]] = field(default_factory=list)
    keep_global: bool = True
    words: list[str] = field(default_factory=list)


def mixed_plan(facts: HostFacts, value: str, version: GfxVersion, gpus: list[GpuFact],
               rocm_version: str | None, for_ollama: bool = False) -> Plan:
    fit = [g for g in gpus if fits(version, g)]
    misfit = [g for g in gpus if not fits(version, g)]
    plan = Plan(fit, misfit)
    if not fit or not misfit:
        return plan
    release = rocm_support.release_row_for(rocm_version) if rocm_version else None
    per_node_ok = rocm_version is None or (rocm_support.release_key(rocm_version) or (0,)) >= (
        rocm_support.release_key(rocm_support.PER_NODE_OVERRIDE_SINCE) or (0,))
    unusable = [g for g in misfit if g.gfx and right_value(g.gfx, release) is None
                and not rocm_support.is_supported(g.gfx.target, release)]
    hide = visible_devices_value(facts, [g for g in gpus if g not in unusable]) if unusable else None
    if unusable and hide:
        # a GPU no override helps: keep the global value for the others and hide it
        plan.set_vars.append(("ROCR_VISIBLE_DEVICES", hide[0]))
        plan.words.append(f"This machine mixes GPU families: {value} is right for {_names(fit)}; "
                          f"{_names(unusable)} cannot run ROCm code with any "
                          f"override, so hide it with ROCR_VISIBLE_DEVICES={hide[0]} ({hide[1]}) and keep "
                          f"{OVERRIDE}={value}.")
        return plan
    if for_ollama or not per_node_ok:
        keep = visible_devices_value(facts, fit)
        why = ("ollama's GPU discovery reads only the global variable (ollama/ollama#10033)" if for_ollama else
               f"per-GPU overrides need ROCm {rocm_support.PER_NODE_OVERRIDE_SINCE} or newer (ROCm {rocm_version} "
               "is installed)")
        if keep:
            plan.set_vars.append(("ROCR_VISIBLE_DEVICES", keep[0]))
            plan.words.append(f"This machine mixes GPU families: {value} is right for {_names(fit)} and wrong for "
                              f"{_names(misfit)}; {why}, so use the "
                              f"GPU(s) it fits alone: ROCR_VISIBLE_DEVICES={keep[0]} ({keep[1]}), and keep "
                              f"{OVERRIDE}={value}.")
        return plan
    plan.keep_global = False
    for g in gpus:
        if g.kfd_node is None or g.gfx is None:
            continue
        wanted = value if g in fit else right_value(g.gfx, release)
        if wanted and wanted != g.gfx.override_string:
            plan.set_vars.append((f"{OVERRIDE}_{g.kfd_node}", wanted))
    if not plan.set_vars:
        plan.words.append(f"This machine mixes GPU families: {value} is wrong for {_names(misfit)}, and "
                          f"{_names(fit)} is supported natively, so no GPU needs it: remove the variable.")
        return plan
    plan.words.append(f"This machine mixes GPU families: {value} is right for {_names(fit)} and wrong for "
                      f"{_names(misfit)}. Replace the global variable with one override per GPU "
                      "(HSA_OVERRIDE_GFX_VERSION_<KFD node id>, read before the global one from ROCm "
                      f"{rocm_support.PER_NODE_OVERRIDE_SINCE} on): " + ", ".join(f"{n}={v}" for n, v in plan.set_vars)
                      + ".")
    return plan


def _names(gpus: list[GpuFact]) -> str:
    return ", ".join(f"{g.pci} ({g.gfx.target if g.gfx else '?'})" for g in gpus)
