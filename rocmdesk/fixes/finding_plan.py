"""A finding's fix as steps for the machine it was diagnosed on, whichever machine that is.

For the live machine (``target.applicable``) the exact change comes from the root helper's own
``--preview`` (``rocmdesk.fixes.client.preview``); for a root folder, a snapshot or the demo nothing is
run: the change is worked out here from that machine's files (read through its HostRoot), as commands
for its owner to run (``rocmdesk.fixes.script``) and, where a file changes, the diff. The rules are the
helper's (comment out kmod's logical blacklist lines with the same prefix, rename Xorg files to the same
suffix, rebuild with the generator the shared rule picks); tests compare both on the same trees.
"""

from __future__ import annotations

import difflib
import logging
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from rocmdesk.diagnosis.model import Finding
from rocmdesk.diagnosis.target import DiagnosisTarget
from rocmdesk.fixes.action_notes import ActionNotes, notes_for
from rocmdesk.fixes.actions import check_shape, is_privileged
from rocmdesk.host import HostReadError, HostRoot

log = logging.getLogger(__name__)

DISABLED_PREFIX = "# disabled by rocmdesk: "  # helper/rocmdesk-helper DISABLED_PREFIX
DISABLED_SUFFIX = ".rocmdesk-disabled"  # helper/rocmdesk-helper DISABLED_SUFFIX
BACKUP_SUFFIX = ".rocmdesk-backup"  # not *.conf: modprobe and Xorg read only *.conf
MAX_CONFIG_BYTES = 1 << 20
REGENERATE_ARGV = {
    "initramfs-tools": ("update-initramfs", "-u", "-k", "{kver}"),
    "dracut": ("dracut", "-f", "--kver", "{kver}"),
    "mkinitcpio": ("mkinitcpio", "-P"),
}
INITRAMFS_MODULE_LINES = {  # file, line that loads amdgpu from the initramfs (helper: initramfs_module_edit)
    "initramfs-tools": ("/etc/initramfs-tools/modules", "amdgpu"),
    "dracut": ("/etc/dracut.conf.d/amdgpu.conf", 'force_drivers+=" amdgpu "'),
}


@dataclass(frozen=True, slots=True)
class PlannedCommand:
    """One command for the target machine: an argv (never shell text), optionally appending to a file."""

    argv: tuple[str, ...]
    purpose: str
    append_to: str | None = None  # ``>> FILE``: the argv's output is appended to this file
    as_root: bool = True

    def shell(self) -> str:
        line = shlex.join(self.argv)
        return f"{line} >> {shlex.quote(self.append_to)}" if self.append_to else line

    def to_json(self) -> dict[str, Any]:
        return {"kind": "command", "argv": list(self.argv), "purpose": self.purpose, "append_to": self.append_to,
                "as_root": self.as_root, "shell": self.shell()}


@dataclass(slots=True)
class FindingPlan:
    """What fixing ``finding`` means on ``target``: the steps in words, the commands, the changes."""

    finding: Finding
    target: DiagnosisTarget
    action: tuple[str, ...] | None
    privileged: bool
    steps: tuple[str, ...]
    notes: ActionNotes
    commands: list[PlannedCommand] = field(default_factory=list)
    undo_commands: list[PlannedCommand] = field(default_factory=list)  # work from a text console too
    changes: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # why some change could not be worked out

    @property
    def applicable(self) -> bool:
        """Whether rocmdesk itself may run this fix (live machine at / and a runnable action)."""
        return self.target.applicable and self.action is not None

    @property
    def why_not_applicable(self) -> str:
        if not self.target.applicable:
            return (f"These steps are for {self.target.whose()}, not this machine: rocmdesk does not apply them "
                    "here. Copy them or save them as a script for that machine's administrator.")
        if self.action is None:
            return "This fix has manual steps only."
        return ""

    def to_json(self) -> dict[str, Any]:
        return {"finding": self.finding.id, "subject": self.finding.subject, "title": self.finding.title,
                "target": self.target.to_json(), "applicable": self.applicable,
                "action": list(self.action) if self.action else None, "privileged": self.privileged,
                "steps": list(self.steps), "changes": self.changes,
                "commands": [c.to_json() for c in self.commands],
                "undo_commands": [c.to_json() for c in self.undo_commands],
                "takes_effect": self.notes.takes_effect, "risks": list(self.notes.risks), "undo": self.notes.undo,
                "problems": self.problems}

    def text(self) -> str:
        """Plain text for the steps dialog, ``rocmdesk fix`` and "Copy steps"."""
        lines = [f"Fix: {self.finding.title}" + (f" ({self.finding.subject})" if self.finding.subject else ""),
                 f"For: {self.target.describe()}", ""]
        if self.steps:
            lines.append("Steps:")
            lines += [f"{n}. {step}" for n, step in enumerate(self.steps, start=1)]
        for change in self.changes:
            if change.get("kind") == "file" and change.get("diff"):
                lines += ["", f"Change to {change['path']}:"]
                lines += ["    " + line for line in change["diff"].splitlines()]
        if self.commands:
            who = "as root" if any(c.as_root for c in self.commands) else "as the user who owns the environment"
            lines += ["", f"Commands ({who}, on that machine):"]
            lines += [f"    {c.shell()}" for c in self.commands]
        if self.problems:
            lines += [""] + [f"Note: {p}" for p in self.problems]
        lines += ["", *self.notes.lines()]
        if self.undo_commands:
            lines.append("Undo commands (they work from a text console, Ctrl+Alt+F3, too):")
            lines += [f"    {c.shell()}" for c in self.undo_commands]
        return "\n".join(lines)


def plan_for_finding(finding: Finding, target: DiagnosisTarget) -> FindingPlan:
    """The fix of ``finding`` for ``target``, read-only: nothing runs, nothing is written."""
    fix = finding.fix
    steps = tuple(fix.steps) if fix else ()
    action = _runnable(fix.action if fix else None)
    name = action[0] if action else (fix.id if fix else None)
    privileged = is_privileged(action) if action else bool(fix and fix.privileged)
    plan = FindingPlan(finding, target, action, privileged, steps, notes_for(name))
    if action is None:
        return plan
    root = HostRoot(target.root)
    try:
        _BUILDERS[action[0]](plan, root, action[1:])
    except (HostReadError, OSError, ValueError) as exc:
        plan.problems.append(f"the exact change could not be worked out from that machine's files: {exc}")
    return plan


def _runnable(action: tuple[str, ...] | None) -> tuple[str, ...] | None:
    if not action:
        return None
    try:
        check_shape(action)
    except ValueError:
        return None
    return tuple(action) if action[0] in _BUILDERS else None


# -- per action (host paths in arguments were validated by check_shape's counts and the helper patterns) ------


def _read(root: HostRoot, path: str) -> str | None:
    try:
        return root.read_bytes(path, MAX_CONFIG_BYTES).decode("utf-8", "surrogateescape")
    except HostReadError:
        return None


def _diff(path: str, old: str | None, new: str) -> str:
    return "\n".join(difflib.unified_diff((old or "").splitlines(), new.splitlines(), fromfile="a" + path,
                                          tofile="b" + path, lineterm=""))


def _file_change(path: str, old: str | None, new: str) -> dict[str, Any]:
    return {"kind": "file", "path": path, "op": "create" if old is None else "modify", "diff": _diff(path, old, new)}


def _kernel(plan: FindingPlan) -> str | None:
    return plan.target.machine.kernel


def _generator(root: HostRoot, kver: str | None) -> str | None:
    from rocmdesk.diagnosis.initramfs import choose_generator, detect_generators

    generators = detect_generators(root)
    chosen = choose_generator(root, generators, kver or "") if generators else None
    return chosen[0] if chosen else None


def _regenerate(plan: FindingPlan, root: HostRoot) -> None:
    kver = _kernel(plan)
    generator = _generator(root, kver)
    if generator is None:
        plan.problems.append("which tool builds that machine's initramfs could not be told; rebuild it with "
                             "the distribution's tool")
        return
    if generator != "mkinitcpio" and not kver:
        plan.problems.append("that machine's kernel release is unknown; rebuild its initramfs for the running "
                             "kernel (`uname -r`)")
        return
    argv = tuple(a.format(kver=kver) for a in REGENERATE_ARGV[generator])
    plan.commands.append(PlannedCommand(argv, f"rebuild the initramfs ({generator})"))
    plan.changes.append({"kind": "command", "argv": list(argv), "purpose": f"rebuild the initramfs ({generator})"})
    plan.undo_commands.append(PlannedCommand(argv, "rebuild the initramfs again"))


def blacklist_spans(text: str) -> list[list[int]]:
    """0-based physical line numbers of each logical kmod line that stops amdgpu from loading."""
    from rocmdesk.diagnosis.checks.driver import blocks_amdgpu
    from rocmdesk.diagnosis.kmod_config import kmod_logical_lines

    physical = text.split("\n")
    spans = []
    for first, logical in kmod_logical_lines(text):
        if not blocks_amdgpu(logical):
            continue
        span = [first - 1]
        while physical[span[-1]].endswith("\\") and span[-1] + 1 < len(physical):
            span.append(span[-1] + 1)
        spans.append(span)
    return spans


def _unblacklist(plan: FindingPlan, root: HostRoot, args: tuple[str, ...]) -> None:
    (path,) = args
    old = _read(root, path)
    if old is None:
        raise ValueError(f"{path} cannot be read")
    numbers = sorted({n for span in blacklist_spans(old) for n in span})
    if not numbers:
        plan.problems.append(f"{path} holds no line that stops amdgpu any more")
        return
    physical = old.split("\n")
    for n in numbers:  # the helper's edit: leading blanks dropped, then the prefix
        physical[n] = DISABLED_PREFIX + physical[n].lstrip(" \t")
    plan.changes.append(_file_change(path, old, "\n".join(physical)))
    plan.commands.append(PlannedCommand(("cp", "-p", "--", path, path + BACKUP_SUFFIX), "keep a copy of the file"))
    sed = ";".join(f"{n + 1}s/^[[:blank:]]*/{DISABLED_PREFIX}/" for n in numbers)
    plan.commands.append(PlannedCommand(("sed", "-i", "-e", sed, "--", path), "comment out the amdgpu line(s)"))
    plan.undo_commands.append(PlannedCommand(("cp", "-p", "--", path + BACKUP_SUFFIX, path), "put the file back"))
    _regenerate(plan, root)


def _xorg_disable(plan: FindingPlan, root: HostRoot, args: tuple[str, ...]) -> None:
    (path,) = args
    plan.changes.append({"kind": "rename", "path": path, "to": path + DISABLED_SUFFIX})
    plan.commands.append(PlannedCommand(("mv", "--", path, path + DISABLED_SUFFIX),
                                        "move the file aside (Xorg reads only *.conf)"))
    plan.undo_commands += [PlannedCommand(("mv", "--", path + DISABLED_SUFFIX, path), "put the file back"),
                           PlannedCommand(("systemctl", "restart", "display-manager"),
                                          "start the display manager with it (ends the desktop session)")]


def _initramfs_add(plan: FindingPlan, root: HostRoot, args: tuple[str, ...]) -> None:
    generator = _generator(root, _kernel(plan))
    if generator in INITRAMFS_MODULE_LINES:
        path, line = INITRAMFS_MODULE_LINES[generator]
        old = _read(root, path)
        new = (old or "") + ("" if not old or old.endswith("\n") else "\n") + line + "\n"
        plan.changes.append(_file_change(path, old, new))
        if old and not old.endswith("\n"):
            plan.commands.append(PlannedCommand(("echo",), "end the file's last line", path))
        plan.commands.append(PlannedCommand(("printf", "%s\\n", line), "load amdgpu from the initramfs", path))
        if old is None:
            plan.undo_commands.append(PlannedCommand(("rm", "--", path), "remove the file again"))
        else:
            plan.undo_commands.append(PlannedCommand(("sed", "-i", "-e", "$d", "--", path),
                                                     "remove the added last line"))
    elif generator == "mkinitcpio":
        plan.problems.append("add amdgpu to the MODULES array in /etc/mkinitcpio.conf by hand (see the steps)")
    _regenerate(plan, root)


def _initramfs_regenerate(plan: FindingPlan, root: HostRoot, args: tuple[str, ...]) -> None:
    _regenerate(plan, root)


def _add_groups(plan: FindingPlan, root: HostRoot, args: tuple[str, ...]) -> None:
    (groups,) = args
    user = plan.finding.subject
    if not user or not _USER_NAME.fullmatch(user):
        plan.problems.append("the user to add is not known; replace USER in the command")
        user = "USER"
    argv = ("usermod", "-a", "-G", groups, user)
    plan.commands.append(PlannedCommand(argv, f"add {user} to {groups}"))
    plan.changes.append({"kind": "groups", "user": user, "groups": groups.split(","), "argv": list(argv)})
    plan.undo_commands += [PlannedCommand(("gpasswd", "-d", user, group), f"take {user} out of {group} again")
                           for group in groups.split(",")]


def _python_of(root: HostRoot, env: str) -> str:
    from rocmdesk.diagnosis.python_envs import interpreter_order

    names = root.listdir(f"{env}/bin")
    versions = sorted({n[len("python"):] for n in root.listdir(f"{env}/lib") if n.startswith("python3.")})
    for name in interpreter_order(names, versions):
        return f"{env}/bin/{name}"
    return f"{env}/bin/python3"


def _pip_reinstall(plan: FindingPlan, root: HostRoot, args: tuple[str, ...]) -> None:
    from rocmdesk.diagnosis.python_envs import list_packages, site_packages_of
    from rocmdesk.diagnosis.torch_index import reinstall_packages
    from rocmdesk.fixes.pip_fix import INDEX_URL_RE, index_name

    env, index = args
    if not INDEX_URL_RE.fullmatch(index):
        raise ValueError(f"not a PyTorch ROCm wheel index: {index!r}")
    installed: set[str] = set()
    for site in site_packages_of(root, env):
        installed |= set(list_packages(root, site))
    packages, note = reinstall_packages(installed, index_name(index))
    python = _python_of(root, env)
    _pip_commands(plan, python, ("install", "--force-reinstall", *packages, "--index-url", index))
    if note:
        plan.problems.append(note)


def _pip_uninstall(plan: FindingPlan, root: HostRoot, args: tuple[str, ...]) -> None:
    from rocmdesk.fixes.pip_fix import PYNVML_PACKAGES

    (env,) = args
    _pip_commands(plan, _python_of(root, env), ("uninstall", "-y", *PYNVML_PACKAGES))


def _pip_commands(plan: FindingPlan, python: str, pip_args: tuple[str, ...]) -> None:
    plan.commands.append(PlannedCommand((python, "-m", "pip", "freeze", "--all"),
                                        "save the package list first (for the way back)",
                                        "rocmdesk-pip-freeze-before.txt", as_root=False))
    argv = (python, "-m", "pip", *pip_args)
    plan.commands.append(PlannedCommand(argv, "as the user who owns the environment, never as root",
                                        as_root=False))
    plan.changes.append({"kind": "command", "argv": list(argv), "purpose": "pip, as the environment's owner"})


_USER_NAME = re.compile(r"[a-z_][a-z0-9_.-]{0,31}\$?", re.ASCII)  # the helper's USER_NAME_RE
_BUILDERS = {
    "modprobe-unblacklist-amdgpu": _unblacklist,
    "xorg-disable-conf": _xorg_disable,
    "initramfs-add-amdgpu": _initramfs_add,
    "initramfs-regenerate": _initramfs_regenerate,
    "add-user-to-groups": _add_groups,
    "pip-reinstall-rocm-torch": _pip_reinstall,
    "pip-uninstall-pynvml": _pip_uninstall,
}
