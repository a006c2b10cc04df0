"""GPU variables and groups as the running GPU program sees them (issue 12, item 2).

A variable exported in ~/.bashrc, ~/.profile or /etc/environment reaches programs started from a login shell; a
systemd service never reads those files (systemd.exec(5): its environment is the unit's Environment= and
EnvironmentFile=). And a program started by hand (``ollama serve``) never reads its service's unit. Each finding
names the variable, the place it is set, the program that does not see it and the drop-in that fixes it.
"""

from __future__ import annotations

import logging

from rocmdesk.diagnosis import rocm_support
from rocmdesk.diagnosis.checks.environment import VISIBLE_VARS, judge_visible
from rocmdesk.diagnosis.distro import NIXOS_CONFIG, family_key
from rocmdesk.diagnosis.engine import Failed, Passed, Skipped, check
from rocmdesk.diagnosis.env_settings import SHELL_FILES, EnvSetting
from rocmdesk.diagnosis.facts import HostFacts
from rocmdesk.diagnosis.gfx import parse_override
from rocmdesk.diagnosis.model import Evidence, Severity
from rocmdesk.diagnosis.override_plan import OVERRIDE, mixed_plan
from rocmdesk.diagnosis.services import ServiceUnit, gpu_programs, process_env

log = logging.getLogger(__name__)

SEVERE = ("HSA_OVERRIDE_GFX_VERSION", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")


def session_place(s: EnvSetting) -> str | None:
    """How a login-session-only source is named ("~/.bashrc", "/etc/environment", "this login session"); None for
    a source a service does read (its unit) or a process environment."""
    if s.path == "/proc/self/environ":
        return "this login session"
    if s.path == "/etc/environment":
        return "/etc/environment"
    name = s.path.rsplit("/", 1)[-1]
    if name in SHELL_FILES and (s.path.startswith("/home/") or s.path.startswith("/root/")):
        return f"~/{name}"
    return None


def _unit_evidence(unit: ServiceUnit, name: str) -> list[Evidence]:
    out = []
    if unit.exec_start:
        out.append(Evidence(unit.exec_start.text, unit.exec_start.path, unit.exec_start.line))
    files = ", ".join(unit.files)
    out.append(Evidence(f"{unit.name} sets no {name} (Environment=, EnvironmentFile= and drop-ins read: {files})",
                        unit.path))
    return out


def drop_in_steps(facts: HostFacts, unit: ServiceUnit, assignments: list[tuple[str, str]]) -> tuple[str, ...]:
    """Set ``assignments`` in ``unit`` the way the distribution does it (a systemctl edit drop-in; NixOS: the
    configuration), restart, check. Also used by hsa-override-suggested, so a service gets its own fix."""
    family = family_key(facts.os_release)
    lines = " ".join(f'`Environment="{n}={v}"`' for n, v in assignments)
    if family == "nixos":
        nix = "; ".join(f'{n} = "{v}"' for n, v in assignments)
        override = next((v for n, v in assignments if n == OVERRIDE), None)
        extra = (f' (for ollama, `services.ollama.rocmOverrideGfx = "{override}";` sets it)'
                 if unit.name.startswith("ollama") and override else "")
        return (f"In {NIXOS_CONFIG}, set the service's environment: `systemd.services.{unit.name[:-8]}.environment = "
                f"{{ {nix}; }};`{extra}.", "Run `sudo nixos-rebuild switch`.")
    return (f"Run `sudo systemctl edit {unit.name}` and add these lines under `[Service]`: {lines} "
            "(systemctl edit writes a drop-in, /etc/systemd/system/" + unit.name
            + ".d/override.conf, and reloads systemd).",
            f"Restart the service: `sudo systemctl restart {unit.name}`.",
            f"Check: `systemctl show {unit.name} -p Environment` lists it.")


@check("env-not-read-by-gpu-program", "Environment")
def env_not_read_by_gpu_program(ctx):
    facts: HostFacts = ctx.facts
    programs = gpu_programs(facts)
    if not programs.services and not programs.loose:
        return Skipped("no GPU service (ollama, llama.cpp, ComfyUI...) and no process holding the GPU")
    session: dict[str, list[EnvSetting]] = {}
    for s in facts.env_settings:
        if session_place(s):
            session.setdefault(s.name, []).append(s)
    outcomes: list = []
    fine: list[str] = []
    gpus = [g for g in facts.amd_gpus if g.gfx is not None]
    for unit in programs.services:
        running = [(pid, process_env(facts, pid)) for pid in unit.pids]
        for name, places in session.items():
            if name in unit.env:
                continue
            if any(env is not None and name in env for _pid, env in running):
                continue
            value = places[-1].value
            why = not_worth_carrying(facts, name, value, unit.name)
            if why:  # copying it into the service would break the GPU program it now leaves alone
                fine.append(f"{name}={value} is not in {unit.name}, and should not be: {why}")
                continue
            where = ", ".join(dict.fromkeys(session_place(p) or p.path for p in places))
            ev = [Evidence(f"{p.name}={p.value}", p.path, p.line) for p in places]
            ev += _unit_evidence(unit, name)
            for pid, env in running:
                if env is not None:
                    ev.append(Evidence(f"the running {unit.name} process {pid} has no {name}", f"/proc/{pid}/environ"))
            assignments = [(name, value)]
            details = (f"{name}={value} is set in {where}, which only programs started from a login shell read. "
                       f"{unit.name} is started by systemd, which gives it only its unit's Environment= and "
                       "EnvironmentFile= (systemd.exec(5)), so the GPU program runs without it.")
            version, _problem = parse_override(value) if name == OVERRIDE else (None, None)
            if version is not None and len({g.gfx.family for g in gpus if g.gfx}) > 1:
                plan = mixed_plan(facts, value, version, gpus, facts.rocm_version,
                                  for_ollama=unit.name.startswith("ollama"))
                if plan.fit and plan.misfit:
                    assignments = ([(name, value)] if plan.keep_global else []) + plan.set_vars
                    details += " " + " ".join(plan.words)
            outcomes.append(Failed(
                evidence=ev,  # no subject: the title names the variable, the place and the service
                title=f"{name} is set in {where}, but {unit.name} does not read it",
                severity=Severity.ERROR if name.startswith(SEVERE) else Severity.WARNING,
                details=details, fix_steps=drop_in_steps(facts, unit, assignments)))
    outcomes += _not_restarted(facts, programs)
    outcomes += _hand_started(facts, programs)
    if outcomes:
        return outcomes
    if fine:
        return Passed("; ".join(fine))
    return Passed("every GPU variable set for the session is in the GPU services' units as well"
                  if session else "no GPU variable is set only for login sessions")


def not_worth_carrying(facts: HostFacts, name: str, value: str, program: str) -> str | None:
    """Why a GPU variable's value must not be handed to a GPU program (into its unit, by a restart that applies it,
    or by `export` before starting it by hand): a *_VISIBLE_DEVICES value that hides GPUs (visible-devices-hides-gpus
    reports it), or an HSA_OVERRIDE_GFX_VERSION that is malformed or fits none of the machine's GPUs (another family,
    or known to hang it; hsa-override-mismatch reports it). Carrying it over would break the program the way the
    other finding says it breaks the session."""
    if name in VISIBLE_VARS:
        total = None if facts.kfd_nodes is None else len(facts.kfd_gpu_nodes)
        problem, _kept = judge_visible(value, total)
        return f"{problem} (see visible-devices-hides-gpus)" if problem else None
    targets = [g.gfx for g in facts.amd_gpus if g.gfx is not None]
    if name != OVERRIDE or not targets:
        return None
    version, problem = parse_override(value)
    if version is None:
        return f"the value is malformed ({problem}; see hsa-override-mismatch)"
    # the hangs are PyTorch's: ollama runs 11.0.0 on a 780M (the same exception hsa-override-mismatch makes)
    unsafe_counts = "ollama" not in program.lower()
    fitting = [t for t in targets if (t == version or t.family == version.family)
               and not (unsafe_counts and rocm_support.unsafe_override(t.target, value.strip()))]
    if fitting:
        return None
    return f"{value} fits none of this machine's GPUs (see hsa-override-mismatch: remove it where it is set)"


GPU_PREFIXES = ("HSA_", "ROCR_", "HIP_", "CUDA_", "GPU_")


def _not_restarted(facts: HostFacts, programs) -> list[Failed]:
    """A unit (or drop-in) sets a GPU variable that the service's running process does not have: it was started before
    the change and never restarted (``systemctl edit`` reloads systemd but does not restart; ollama/ollama#6520)."""
    out = []
    for unit in programs.services:
        for pid in unit.pids:
            env = process_env(facts, pid)
            if env is None:
                continue
            for name, s in unit.env.items():
                if not name.startswith(GPU_PREFIXES) or env.get(name) == s.value:
                    continue
                if not_worth_carrying(facts, name, s.value, unit.name):
                    continue  # a restart would apply a value another finding says to remove
                running = f"has {name}={env[name]}" if name in env else f"has no {name}"
                out.append(Failed(
                    evidence=[Evidence(f"{name}={s.value}", s.path, s.line),
                              Evidence(f"the running {unit.name} process {pid} {running}", f"/proc/{pid}/environ")],
                    subject=unit.name, severity=Severity.ERROR if name.startswith(SEVERE) else Severity.WARNING,
                    title=f"{name} was set for {unit.name} after it started: the running service does not have it",
                    details=(f"{s.path} sets {name}={s.value}, but {unit.name}'s running process {pid} {running}: "
                             "it was started before the change, and systemd applies a unit's environment only when "
                             "the service (re)starts."),
                    fix_steps=(f"Restart the service: `sudo systemctl restart {unit.name}` (after `sudo systemctl "
                               "daemon-reload` if the unit file was edited by hand).",
                               f"Check: `systemctl show {unit.name} -p Environment` and the service log list it.")))
    return out


def _hand_started(facts: HostFacts, programs) -> list[Failed]:
    """A GPU process started outside its service (``ollama serve`` by hand) without the variables the unit sets."""
    out = []
    for pid, comm, _unit in programs.loose:
        env = process_env(facts, pid)
        if env is None:
            continue
        for unit in programs.services:
            program = (unit.exec_start.text.split("=", 1)[-1].split() or [""])[0].rsplit("/", 1)[-1] \
                if unit.exec_start else ""
            if not program or comm != program[:15]:
                continue
            missing = [s for n, s in unit.env.items() if n.startswith(GPU_PREFIXES) and n not in env
                       and not not_worth_carrying(facts, n, s.value, unit.name)]
            for s in missing:
                out.append(Failed(
                    evidence=[Evidence(f"{s.name}={s.value}", s.path, s.line),
                              Evidence(f"process {pid} ({comm}) has no {s.name}", f"/proc/{pid}/environ"),
                              Evidence(f"process {pid} runs outside {unit.name} (a login session)",
                                       f"/proc/{pid}/cgroup")],
                    subject=f"{comm} process {pid}", severity=Severity.ERROR if s.name.startswith(SEVERE)
                    else Severity.WARNING,
                    title=f"{s.name} is set for {unit.name}, but {comm} (pid {pid}) was started outside it",
                    details=(f"{unit.name} sets {s.name}={s.value}, but process {pid} was started by hand (for "
                             f"example `{program} serve` in a terminal), so it gets the terminal's environment, not "
                             "the unit's."),
                    fix_steps=(f"Stop the hand-started program and use the service: `sudo systemctl restart "
                               f"{unit.name}`.",
                               f"Or, to run it by hand, set it in that shell first: `export {s.name}={s.value}`.")))
    return out


# -- gpu-service-cannot-open-gpu --------------------------------------------------------------------------------


@check("gpu-service-cannot-open-gpu", "Permissions")
def gpu_service_cannot_open_gpu(ctx):
    facts: HostFacts = ctx.facts
    services = gpu_programs(facts).services
    if not services:
        return Skipped("no GPU service (ollama, llama.cpp, ComfyUI...) in the systemd unit folders")
    nodes = [n for n in facts.device_nodes() if n.path == "/dev/kfd" or n.path.startswith("/dev/dri/renderD")]
    if not nodes or facts.groups is None:
        return Skipped("no /dev/kfd or render node, or no /etc/group, to judge the services' access by")
    outcomes: list = []
    fine = []
    for unit in services:
        user = unit.user_name
        if user == "root" and unit.dynamic_user is None:
            fine.append(f"{unit.name} runs as root")
            continue
        entry = next((p for p in facts.passwd or [] if p.name == user), None)
        if entry is None and unit.dynamic_user is None:
            # not in this root's /etc/passwd (an LDAP user, or names scrubbed in a support snapshot): not judged
            fine.append(f"{unit.name}: its user is not in /etc/passwd, so its groups are unknown")
            continue
        gids: set[int] = set()
        if unit.dynamic_user is None and entry is not None:
            gids = facts.configured_gids(entry)
        for group, _line in unit.supplementary:
            g = facts.group_by_name(group)
            if g:
                gids.add(g.gid)
        uid = entry.uid if entry is not None else None
        blocked = [n for n in nodes if not _may_open(n, uid, gids)]
        if not blocked:
            fine.append(f"{unit.name} ({user}) may open the GPU device nodes")
            continue
        groups = sorted({facts.group_name(n.gid) or str(n.gid) for n in blocked})
        ev = [Evidence(f"{n.path}: {n.describe(facts.group_name(n.gid))}", n.path) for n in blocked[:4]]
        if unit.user:
            ev.append(Evidence(f"User={unit.user.text}", unit.user.path, unit.user.line))
        if unit.dynamic_user:
            ev.append(Evidence(unit.dynamic_user.text, unit.dynamic_user.path, unit.dynamic_user.line))
        for group, line in unit.supplementary:
            ev.append(Evidence(f"SupplementaryGroups: {group}", line.path, line.line))
        if unit.dynamic_user is not None or entry is None:
            steps = (f"Run `sudo systemctl edit {unit.name}` and add under `[Service]`: "
                     f"`SupplementaryGroups={' '.join(groups)}`.", f"Run `sudo systemctl restart {unit.name}`.")
        else:
            steps = (f"Add the service's user to the group(s): `sudo usermod -aG {','.join(groups)} {user}`.",
                     f"Restart the service so it starts with the new groups: `sudo systemctl restart {unit.name}`.")
        outcomes.append(Failed(
            evidence=ev,
            title=f"{unit.name} cannot open the GPU ({user} is not in {', '.join(groups)})",
            details=(f"{unit.name} runs as {user}" + (" (DynamicUser=, so only SupplementaryGroups= count)"
                                                     if unit.dynamic_user else "")
                     + f", which may not open {', '.join(n.path for n in blocked[:3])}: ROCm then finds no GPU and "
                     "the program falls back to the CPU."),
            fix_steps=steps))
    return outcomes or Passed("; ".join(fine))


def _may_open(node, uid: int | None, gids: set[int]) -> bool:
    mode = node.mode
    if uid is not None and uid in node.acl_users:
        return True
    if uid is not None and uid == node.uid and mode & 0o600 == 0o600:
        return True
    if node.gid in gids and mode & 0o060 == 0o060:
        return True
    return mode & 0o006 == 0o006
