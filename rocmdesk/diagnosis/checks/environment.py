"""Environment checks: HSA_OVERRIDE_GFX_VERSION, *_VISIBLE_DEVICES, WSL (sources in resources/checks/environment.yaml).

Variables are looked for where they take effect: this session's environment, /etc/environment,
the user's shell start-up files, systemd units (ollama and friends) and the environments of
processes that have the GPU open. Each finding names the file and line that sets the value.
"""

from __future__ import annotations

import logging
import re

from rocmdesk.diagnosis import rocm_support
from rocmdesk.diagnosis.engine import Failed, Passed, Skipped, check
from rocmdesk.diagnosis.env_settings import EnvSetting
from rocmdesk.diagnosis.facts import HostFacts
from rocmdesk.diagnosis.gfx import (
    PRODUCTS,
    GfxVersion,
    is_supported,
    parse_override,
    suggested_override,
)
from rocmdesk.diagnosis.gpu_select import agent_index, visible_devices_value
from rocmdesk.diagnosis.model import Evidence, Severity
from rocmdesk.diagnosis.override_plan import mixed_plan, right_value
from rocmdesk.diagnosis.pci_kfd import GpuFact

log = logging.getLogger(__name__)

AREA = "Environment"
OVERRIDE = "HSA_OVERRIDE_GFX_VERSION"
_NODE_OVERRIDE_RE = re.compile(rf"^{OVERRIDE}_(\d+)$")
VISIBLE_VARS = ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL")


def setting_evidence(s: EnvSetting) -> Evidence:
    # the scope only when it says more than the path already does ("/home/a/.profile: X=1  (/home/a/.profile)")
    scope = f"  ({s.scope})" if s.scope != s.path else ""
    return Evidence(f"{s.name}={s.value}{scope}", s.path, s.line)


def change_steps(s: EnvSetting, wanted: str | None) -> tuple[str, ...]:
    """Where to change a variable, in words that fit the kind of source."""
    action = f"change it to `{s.name}={wanted}`" if wanted else f"remove `{s.name}={s.value}`"
    if s.path == "/proc/self/environ":
        return (f"{s.name}={s.value} is set in this login session: find where it is set (a shell start-up file "
                "such as ~/.bashrc or ~/.profile, /etc/environment, /etc/profile.d/ or the desktop's "
                f"environment.d) and {action} there.",
                "Log out and log back in (or open a new terminal if it came from a shell start-up file).")
    if s.path.startswith("/proc/"):
        return (f"{s.name}={s.value} is in the environment of {s.scope}: find where that program is "
                f"started (a launcher script, a desktop file or a shell start-up file) and {action} there.",
                "Restart the program.")
    if s.path.startswith("/etc/systemd/") or "/systemd/user/" in s.path or s.scope.endswith(".service"):
        unit = s.scope if s.scope.endswith(".service") else "the service"
        user = "/systemd/user/" in s.path
        # not `systemctl edit`: a drop-in cannot take one variable away, and `NAME=` (set but empty) would
        # itself hide every GPU (ollama/ollama docs/gpu.md: an invalid id such as -1 forces the CPU)
        edit_how = "Edit" if user else "As root, edit"
        systemctl = "systemctl --user" if user else "sudo systemctl"
        if "/systemd/" in s.path:
            where = f"{edit_how} {s.where} and {action} from its Environment= line."
        else:
            where = f"{edit_how} {s.where} (the EnvironmentFile= of {unit}) and {action}."
        return (where, f"Run `{systemctl} daemon-reload && {systemctl} restart {unit}`.")
    if s.path == "/etc/environment":
        return (f"Edit /etc/environment as root (line {s.line}) and {action}.", "Log out and log back in.")
    return (f"Edit {s.where} and {action}.", "Open a new terminal (or log out and in) so it takes effect.")


def _overrides(facts: HostFacts) -> list[EnvSetting]:
    return [s for s in facts.env_settings if s.name == OVERRIDE or _NODE_OVERRIDE_RE.match(s.name)]


# -- hsa-override-mismatch -----------------------------------------------------------------------------


def _gpus_with_gfx(facts: HostFacts) -> list[GpuFact]:
    return [g for g in facts.amd_gpus if g.gfx is not None]


def _gfx(gpu: GpuFact) -> GfxVersion:
    """The gfx version of a GPU taken from :func:`_gpus_with_gfx` (which has one by construction)."""
    assert gpu.gfx is not None
    return gpu.gfx


def _describe(gpu: GpuFact) -> str:
    product = PRODUCTS.get(gpu.gfx.target) if gpu.gfx else None
    node = f", KFD node {gpu.kfd_node}" if gpu.kfd_node is not None else ""
    return f"{gpu.pci} ({gpu.gfx.target if gpu.gfx else '?'}{', ' + product if product else ''}{node})"


def _right_value(gfx: GfxVersion) -> str | None:
    """What the override should be for this GPU: nothing when it is supported natively, and nothing when no override
    makes it work (its own unsupported version is no fix)."""
    return right_value(gfx)


@check("hsa-override-mismatch", AREA)
def hsa_override_mismatch(ctx):
    facts: HostFacts = ctx.facts
    settings = _overrides(facts)
    if not settings:
        return Passed(f"{OVERRIDE} is not set anywhere rocmdesk looked")
    gpus = [] if ctx.is_wsl else _gpus_with_gfx(facts)
    nodes = {n.node_id: n for n in facts.kfd_nodes or []}
    outcomes: list = []
    fine: list[str] = []
    for s in settings:
        version, problem = parse_override(s.value)
        if version is None:
            outcomes.append((s.name, Failed(evidence=[setting_evidence(s)], subject=s.scope,
                                   details=f"The value is malformed: {problem}. The runtime rejects it "
                                           f"(\"{OVERRIDE} {s.value} is invalid\").",
                                   fix_steps=change_steps(s, None))))
            continue
        m = _NODE_OVERRIDE_RE.match(s.name)
        if m:
            node_id = int(m.group(1))
            if facts.kfd_nodes is not None and not ctx.is_wsl:
                node = nodes.get(node_id)
                if node is None or node.gfx is None:
                    gpu_nodes = ", ".join(_describe(g) for g in gpus) or "none"
                    what = "is a CPU" if node is not None else "does not exist"
                    outcomes.append((s.name, Failed(
                        evidence=[setting_evidence(s)], subject=s.scope,
                        details=f"KFD node {node_id} {what}, so this override does nothing. The number is the "
                                "KFD topology node id: CPU nodes come first, so the first GPU is usually node 1 "
                                f"(GPU nodes here: {gpu_nodes}).",
                        fix_steps=change_steps(s, None))))
                    continue
            targets = [g for g in gpus if g.kfd_node == node_id]
        else:
            node_specific = {int(x.group(1)) for o in settings if o.scope == s.scope
                             and (x := _NODE_OVERRIDE_RE.match(o.name))}
            targets = [g for g in gpus if g.kfd_node not in node_specific]
        if not targets:
            fine.append(f"{s.name}={s.value} ({s.scope}): no GPU gfx target known to compare with")
            continue
        unsafe = _unsafe_finding(facts, s, version, targets)
        if unsafe is not None:
            outcomes.append((s.name, unsafe))
            continue
        wrong = [g for g in targets if g.gfx != version and _gfx(g).family != version.family]
        if not m and wrong and len(wrong) < len(targets):
            # right for some GPUs, wrong for others: never move the value to another GPU's (issue 12, item 1)
            plan = mixed_plan(facts, s.value, version, targets, facts.rocm_version,
                              for_ollama="ollama" in s.scope.lower())
            outcomes.append((s.name, Failed(
                evidence=[setting_evidence(s)], subject=s.scope, severity=Severity.WARNING,
                title=f"{OVERRIDE}={s.value} fits only some of this machine's GPUs",
                details=" ".join(plan.words) or None, fix_steps=plan_steps(s, plan))))
            continue
        if not wrong:
            fine.append(f"{s.name}={s.value} ({s.scope}) is in the family of every GPU it applies to")
            continue
        lines = [_wrong_sentence(facts, s.value, version, group) for group in _by_target(wrong)]
        if not m and len({_gfx(g).family for g in gpus}) > 1:
            lines.append(f"This machine mixes GPU families: use one {OVERRIDE}_<KFD node id> per GPU instead "
                         "of the global variable.")
        right_values = {_right_value(_gfx(g)) for g in wrong}
        wanted = right_values.pop() if len(right_values) == 1 else None
        outcomes.append((s.name, Failed(evidence=[setting_evidence(s)], subject=s.scope, details=" ".join(lines),
                                        fix_steps=change_steps(s, wanted))))
    return merge_by_variable(outcomes) or Passed("; ".join(fine))


def _by_target(gpus: list[GpuFact]) -> list[list[GpuFact]]:
    """The GPUs grouped by gfx target, in the order their first member appears: identical GPUs get one sentence."""
    groups: dict[str, list[GpuFact]] = {}
    for g in gpus:
        groups.setdefault(g.gfx.target if g.gfx else "?", []).append(g)
    return list(groups.values())


def _numbers(values: list[int]) -> str:
    """0, 1, 2, 3, 5 -> "0–3, 5": runs of consecutive numbers as ranges."""
    runs: list[list[int]] = []
    for v in sorted(set(values)):
        if runs and v == runs[-1][-1] + 1:
            runs[-1].append(v)
        else:
            runs.append([v])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}–{r[-1]}" if len(r) > 2 else f"{r[0]}, {r[1]}"
                     for r in runs)


def _wrong_sentence(facts: HostFacts, value: str, version: GfxVersion, group: list[GpuFact]) -> str:
    """Why ``value`` is wrong for the GPUs of one gfx target: one sentence for the group, not one per GPU (eight
    identical MI300X would otherwise read the same sentence eight times)."""
    gfx = group[0].gfx
    assert gfx is not None
    right = _right_value(gfx)
    one = len(group) == 1
    if right is not None:
        advice = f"the right value is {right}"
    elif is_supported(gfx.target):
        advice = ("it is supported natively and needs no override" if one
                  else "they are supported natively and need no override")
    else:
        advice = f"no override makes ROCm work on {'it' if one else 'them'} (see gpu-not-supported-by-rocm)"
    if one:
        return f"{value} is {version.family}, but GPU {_describe(group[0])} is {gfx.family}; {advice}."
    product = PRODUCTS.get(gfx.target)
    indices = [agent_index(facts, g) for g in group]
    nodes = [g.kfd_node for g in group]
    if all(i is not None for i in indices) and all(n is not None for n in nodes):
        who = (f"GPUs {_numbers([i for i in indices if i is not None])} ({gfx.target}"
               f"{', ' + product if product else ''}; KFD nodes {_numbers([n for n in nodes if n is not None])})")
    else:
        who = f"{len(group)} GPUs ({gfx.target}{', ' + product if product else ''}: {', '.join(g.pci for g in group)})"
    return f"{value} is {version.family}, but {who} are {gfx.family}; {advice}."


def _unsafe_finding(facts: HostFacts, s: EnvSetting, version: GfxVersion, targets: list[GpuFact]) -> Failed | None:
    """A same-family value known to hang or fault one of the GPUs it applies to (11.0.0 on a gfx1103:
    ROCm/TheRock#1184), which the family rule alone calls fine."""
    if "ollama" in s.scope.lower():
        # Ollama's own 780M guide (ollama/ollama PR #5426) and field reports (Crosstalk-Solutions/project-nomad
        # PR #1134: 11.0.0 "restores full GPU offload") say it runs there; the hangs are PyTorch's
        return None
    value = version.override_string
    hit = [(g, why) for g in targets if g.gfx and (why := rocm_support.unsafe_override(g.gfx.target, value))]
    if not hit:
        return None
    gpu, why = hit[0]
    assert gpu.gfx is not None
    row = rocm_support.row_of(gpu.gfx.target)
    works = row.what_works if row else ""
    steps = [*change_steps(s, None)]
    others = [g for g in targets if g not in [h for h, _ in hit]]
    if others:
        hide = visible_devices_value(facts, others)
        keep = ", ".join(_describe(g) for g in others)
        steps.append(f"If {keep} needs {s.name}={s.value}, set it for that GPU only "
                     f"(`{s.name}_<KFD node id>`, ROCm {rocm_support.PER_NODE_OVERRIDE_SINCE} or newer)"
                     + (f", or hide {gpu.gfx.target} from ROCm programs with `ROCR_VISIBLE_DEVICES={hide[0]}` "
                        f"({hide[1]})" if hide else "") + ".")
    if works:
        steps.append(f"What works on {gpu.gfx.target}: {works}.")
    return Failed(evidence=[setting_evidence(s)], subject=s.scope, severity=Severity.WARNING,
                  title=f"{s.name}={s.value} can hang {gpu.gfx.target}",
                  details=f"{s.name}={s.value} makes GPU {_describe(gpu)} run {version.target} code, and {why}.",
                  fix_steps=tuple(steps))


def merge_by_variable(named: list[tuple[str, Failed]]) -> list[Failed]:
    """One finding per variable and verdict: every place that sets it is evidence, each place's step is kept."""
    merged: dict[tuple[str, str | None, str | None], Failed] = {}
    for name, failed in named:
        key = (name, failed.title, failed.details)
        if key not in merged:
            merged[key] = failed
            continue
        first = merged[key]
        first.evidence.extend(e for e in failed.evidence if e not in first.evidence)
        first.fix_steps = tuple(dict.fromkeys((*(first.fix_steps or ()), *(failed.fix_steps or ()))))
        if failed.subject != first.subject:
            first.subject = f"{name}, set in {len(first.evidence)} places"
    return list(merged.values())


def plan_steps(s: EnvSetting, plan) -> tuple[str, ...]:
    """Where and what to set for a mixed-family plan, in the place the variable is set now."""
    lines = [f"{n}={v}" for n, v in plan.set_vars]
    if not lines:
        return change_steps(s, None)
    unit = s.scope if s.scope.endswith(".service") else None
    if unit:
        body = " and ".join(f'`Environment="{line}"`' for line in lines)
        steps = [f"Run `sudo systemctl edit {unit}` and add under [Service] {body}"
                 + ("" if plan.keep_global else f" (and remove {s.name}={s.value} from {s.where})") + ".",
                 f"Run `sudo systemctl restart {unit}`."]
        return tuple(steps)
    if s.path.startswith("/proc/"):
        return (f"Where {s.scope} is started, set " + " and ".join(f"`{x}`" for x in lines)
                + ("" if plan.keep_global else f" instead of {s.name}={s.value}") + ".", "Restart the program.")
    export = "; ".join(f"export {line}" for line in lines)
    return (f"Edit {s.where} and add `{export}`" + ("" if plan.keep_global else f" in place of {s.name}={s.value}")
            + ".", "Open a new terminal (or log out and in) so it takes effect.")


# -- hsa-override-suggested ---------------------------------------------------------------------------------


def _override_steps(facts: HostFacts, assignments: list[tuple[str, str]]) -> tuple[str, ...]:
    """Where to set ``assignments``: in each GPU service's unit when the machine runs one (a service never reads
    ~/.profile: systemd.exec(5); the fault of ollama/ollama#6152 and #8679), else for programs started from a login
    shell. Never a service the machine does not have."""
    from rocmdesk.diagnosis.checks.gpu_programs import drop_in_steps  # it imports this module
    from rocmdesk.diagnosis.services import gpu_programs

    services = gpu_programs(facts).services
    names = " and ".join(f"`{n}={v}`" for n, v in assignments)
    steps: list[str] = [f"Set {names} for the program that uses the GPU"
                        + (f": {', '.join(u.name for u in services)} reads it only from its unit." if services
                           else ".")]
    for unit in services:
        steps += drop_in_steps(facts, unit, assignments)
    exports = " ".join(f"{n}={v}" for n, v in assignments)
    lines = " ".join(f'`Environment="{n}={v}"`' for n, v in assignments)
    shell = f"`export {exports}` in ~/.profile, then log in again and start the program from a new shell"
    steps.append(f"For GPU programs you start yourself (not {', '.join(u.name for u in services)}): {shell}."
                 if services else f"For a program started from a login shell: {shell}; for a systemd service, "
                 f"{lines} in its unit instead (`sudo systemctl edit <unit>`), which is all a service reads.")
    if any(n.startswith(OVERRIDE) for n, _ in assignments):
        steps.append("If the program then crashes with a memory access fault, remove the variable: not every part of "
                     "a family runs the other part's code.")
    return tuple(steps)


def _runs_rocm(gpu: GpuFact) -> bool:
    """ROCm code runs on it: natively, or with its own same-family override."""
    target = _gfx(gpu).target
    return is_supported(target) or suggested_override(target) is not None


def _hide_igpu(facts: HostFacts, gpu: GpuFact, keep: list[GpuFact], hide: tuple[str, str], suggestion: str,
               ev: list[Evidence]) -> Failed:
    """An unsupported iGPU beside GPUs that run ROCm code: hide it (what ollama does since PR #2195), rather than the
    override that would make it take part in the work the runtimes spread over every visible GPU."""
    target = _gfx(gpu).target
    details = (f"GPU {_describe(gpu)} is an integrated GPU (APU) that ROCm does not support, beside "
               f"{', '.join(_describe(g) for g in keep)}, which can run ROCm code. LLM runtimes spread a model over "
               "every GPU ROCm shows (ollama/ollama#2054, lemonade-sdk/llamacpp-rocm#96, ggml-org/llama.cpp#8618) "
               f"and crash on the iGPU; the same-family override {suggestion} would only make it take part. Hide it "
               f"from ROCm programs: ROCR_VISIBLE_DEVICES={hide[0]} ({hide[1]}), as ollama itself does since "
               "ollama PR #2195.")
    return Failed(evidence=ev, subject=gpu.pci, details=details, severity=Severity.WARNING,
                  title=f"The integrated GPU {target} is not on ROCm's supported list: hide it from ROCm programs",
                  fix_steps=_override_steps(facts, [("ROCR_VISIBLE_DEVICES", hide[0])]))


@check("hsa-override-suggested", AREA)
def hsa_override_suggested(ctx):
    if ctx.is_wsl:
        return Skipped(ctx.WSL_SKIP_REASON)
    facts: HostFacts = ctx.facts
    gpus = _gpus_with_gfx(facts)
    if not gpus:
        if facts.kfd_nodes is None:
            return Skipped("no KFD topology in this root (/sys/class/kfd), so the GPUs' gfx targets are unknown")
        return Skipped("no GPU node with a gfx target in the KFD topology")
    settings = _overrides(facts)
    has_global = any(s.name == OVERRIDE for s in settings)
    node_set = {int(m.group(1)) for s in settings if (m := _NODE_OVERRIDE_RE.match(s.name))}
    # a GPU choice already made anywhere is visible-devices-hides-gpus' to judge, not replaced here
    chosen = any(s.name in ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES") for s in facts.env_settings)
    outcomes: list = []
    families = {_gfx(g).family for g in gpus}
    for gpu in gpus:
        gfx = _gfx(gpu)
        target = gfx.target
        suggestion = suggested_override(target)
        if is_supported(target) or suggestion is None:
            continue
        if has_global or gpu.kfd_node in node_set:
            continue
        ev = [Evidence(f"gfx_target_version {gfx.major * 10000 + gfx.minor * 100 + gfx.step} "
                       f"({target})", f"/sys/class/kfd/kfd/topology/nodes/{gpu.kfd_node}/properties")
              if gpu.kfd_node is not None else Evidence(f"{gpu.pci} is {target}")]
        others = [g for g in gpus if g is not gpu]
        runnable = [g for g in others if _runs_rocm(g)]
        if target in rocm_support.APU_TARGETS and runnable:
            if chosen:
                continue  # the GPUs were chosen (the iGPU hidden, as a rule): no override that brings it back
            hide = visible_devices_value(facts, runnable)
            if hide:
                outcomes.append(_hide_igpu(facts, gpu, runnable, hide, suggestion, ev))
                continue
        var = OVERRIDE if len(families) == 1 or gpu.kfd_node is None else f"{OVERRIDE}_{gpu.kfd_node}"
        assignments = [(var, suggestion)]
        details = (f"GPU {_describe(gpu)} is not on ROCm's supported list; the same-family override "
                   f"{suggestion} is what people use for it.")
        if len(families) > 1:
            details += (f" This machine mixes GPU families, so set it only for this GPU's KFD node "
                        f"({var}), not globally.")
        # a global value reaches every GPU: one it hangs (11.0.0 on the 780M beside an RX 7700S,
        # ggml-org/llama.cpp#8618; ROCm/legacy-rocm-build#4557) is hidden beside it, or no global value is proposed
        hurt = [g for g in others if var == OVERRIDE and rocm_support.unsafe_override(_gfx(g).target, suggestion)]
        if hurt:
            keep = visible_devices_value(facts, [gpu] + [g for g in runnable if g not in hurt])
            if keep is None or chosen:
                continue
            assignments.append(("ROCR_VISIBLE_DEVICES", keep[0]))
            details += (f" {suggestion} also reaches {', '.join(_describe(g) for g in hurt)}, where it can hang the "
                        f"GPU, so hide that one in the same place: ROCR_VISIBLE_DEVICES={keep[0]} ({keep[1]}).")
        outcomes.append(Failed(evidence=ev, subject=gpu.pci, details=details,
                               fix_steps=_override_steps(facts, assignments)))
    if outcomes:
        return outcomes
    if has_global or node_set:
        return Passed("an override is already set (see hsa-override-mismatch)")
    return Passed("every GPU's gfx target is supported, or has no known same-family override")


# -- visible-devices-hides-gpus ---------------------------------------------------------------------------------


_UUID_RE = re.compile(r"^GPU-[0-9A-Fa-f]+$")


def judge_visible(value: str, count: int | None) -> tuple[str | None, int | None]:
    """(problem, GPUs left visible) for one *_VISIBLE_DEVICES value; problem None when harmless.

    ``count`` is how many GPUs the variable chooses from (None when unknown). The runtimes stop at
    the first index they cannot use, so everything from there on is dropped.
    """
    text = value.strip()
    if text == "":
        return "it is set but empty, which hides every GPU", 0
    tokens = [t.strip() for t in text.split(",")]
    if tokens == ["-1"]:
        return "-1 hides every GPU (the documented way to force the CPU)", 0
    kept = 0
    for position, token in enumerate(tokens):
        if _UUID_RE.match(token):
            kept += 1
            continue
        try:
            index = int(token)
        except ValueError:
            return (f"'{token}' is not a device index or GPU UUID; it and everything after it are ignored"
                    + (", which hides every GPU" if position == 0 else ""), kept)
        if index < 0:
            return f"{index} is negative; it and everything after it are ignored", kept
        if count is not None and index >= count:
            return (f"index {index} is out of range: only {count} GPU(s) are available to it (0..{count - 1})"
                    + (", so no GPU is left" if kept == 0 else ""), kept)
        kept += 1
    return None, kept


@check("visible-devices-hides-gpus", AREA)
def visible_devices_hides_gpus(ctx):
    facts: HostFacts = ctx.facts
    settings = [s for s in facts.env_settings if s.name in VISIBLE_VARS]
    if not settings:
        return Passed("no *_VISIBLE_DEVICES or GPU_DEVICE_ORDINAL set anywhere rocmdesk looked")
    total = None if (ctx.is_wsl or facts.kfd_nodes is None) else len(facts.kfd_gpu_nodes)
    by_scope: dict[str, list[EnvSetting]] = {}
    for s in settings:
        by_scope.setdefault(s.scope, []).append(s)
    outcomes: list = []
    for group in by_scope.values():
        rocr = [s for s in group if s.name == "ROCR_VISIBLE_DEVICES"]
        after_rocr = total
        for s in rocr:
            problem, kept = judge_visible(s.value, total)
            if problem:
                outcomes.append(_hidden(s, problem, total))
            after_rocr = kept if total is not None else None
        for s in group:
            if s.name == "ROCR_VISIBLE_DEVICES":
                continue
            # HIP_/CUDA_VISIBLE_DEVICES index the GPUs left after ROCR filtering (ROCm docs conceptual/gpu-isolation)
            problem, _kept = judge_visible(s.value, after_rocr)
            if problem:
                if rocr and after_rocr is not None and after_rocr != total:
                    problem += f" (ROCR_VISIBLE_DEVICES in the same place already narrowed them to {after_rocr})"
                outcomes.append(_hidden(s, problem, total))
    if outcomes:
        return outcomes
    return Passed("the visible-devices variables leave GPUs visible"
                  + ("" if total is not None else " (GPU count unknown: only -1 and empty values were judged)"))


def _hidden(s: EnvSetting, problem: str, total: int | None) -> Failed:
    """``total``: the machine's GPUs in the KFD topology (not the count left after ROCR filtering)."""
    gpus = f" This machine has {total} GPU(s) in the KFD topology." if total is not None else ""
    # the explanation already says what PyTorch then reports
    # the title names the variable, the subject where it is set: "ROCR_VISIBLE_DEVICES hides GPUs (ollama.service)"
    return Failed(evidence=[setting_evidence(s)], subject=s.scope, title=f"{s.name} hides GPUs",
                  details=f"{s.name}={s.value!r}: {problem}.{gpus}",
                  fix_steps=change_steps(s, None))


# -- wsl-environment --------------------------------------------------------------------------------------------


@check("wsl-environment", AREA)
def wsl_environment(ctx):
    facts: HostFacts = ctx.facts
    ev = facts.wsl_evidence
    if not ev:
        return Passed("not running under WSL")
    return Failed(evidence=[Evidence(e.text, e.path, e.line) for e in ev])
