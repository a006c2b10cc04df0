"""Permission checks: can this user open /dev/kfd and the render nodes (ROCm/rocm-install-on-linux
docs/install/prerequisites.rst; ROCm/rocminfo#41)?

"Configured" membership comes from /etc/group plus the primary gid in /etc/passwd; the session's
groups come from the ``Groups:`` line of /proc/self/status (a support snapshot carries its own).
A group added with usermod only reaches new login sessions, hence two checks with two fixes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from rocmdesk.diagnosis.engine import Failed, Passed, Skipped, check
from rocmdesk.diagnosis.facts import DeviceNode, HostFacts
from rocmdesk.diagnosis.model import Evidence, Fix, Severity

log = logging.getLogger(__name__)

AREA = "Permissions"
RW = 0o6
# the groups ROCm's docs add users to (ROCm/rocm-install-on-linux docs/install/prerequisites.rst)
ROCM_GROUPS = ("render", "video")
FIRST_USER_GID = 1000  # below: system groups (login.defs SYS_GID_MAX 999)


@dataclass(frozen=True, slots=True)
class _Denied:
    node: DeviceNode
    group: str | None
    group_rw: bool  # the group bits give read+write (so joining the group would help)


@dataclass(slots=True)
class _Access:
    """Devices this user cannot open read-write, split by why."""

    not_configured: list[_Denied]
    not_in_session: list[_Denied]
    user_name: str
    session_known: bool
    # open through a group this session has but /etc/group no longer gives the user: lost at the next login
    session_only: list[_Denied] = field(default_factory=list)


def _can_open_without_group(node: DeviceNode, uid: int) -> bool:
    if uid == 0:
        return True
    if node.uid == uid and (node.mode >> 6) & RW == RW:
        return True
    if node.mode & RW == RW:
        return True
    return uid in node.acl_users


def _analyse(ctx) -> _Access | Skipped | Passed:
    if ctx.is_wsl:
        return Skipped(ctx.WSL_SKIP_REASON)
    facts: HostFacts = ctx.facts
    status = facts.self_status
    if status is None:
        _text, why = facts.read_reason("/proc/self/status")
        return Skipped(f"the user is unknown: {why or '/proc/self/status has no Uid line'}")
    if status.uid == 0:
        return Passed("running as root")
    if not facts.root.is_dir("/dev"):
        return Skipped("this root has no /dev folder")
    nodes = facts.device_nodes()
    if not nodes:
        return Skipped("no /dev/kfd or /dev/dri/renderD* to check")
    if facts.groups is None:
        _text, why = facts.read_reason("/etc/group")
        return Skipped(f"groups unknown: {why}")
    session = set(status.groups or ()) | ({status.gid} if status.gid is not None else set())
    user = facts.user
    configured = facts.configured_gids(user) if user is not None else None
    access = _Access([], [], user.name if user else f"uid {status.uid}", status.groups is not None)
    unknown_user = False
    for node in nodes:
        if _can_open_without_group(node, status.uid):
            continue
        group_rw = (node.mode >> 3) & RW == RW
        denied = _Denied(node, facts.group_name(node.gid), group_rw)
        if group_rw and status.groups is not None and node.gid in session:
            if configured is not None and node.gid not in configured:
                access.session_only.append(denied)
            continue
        if configured is None:
            unknown_user = True
        elif node.gid in configured and group_rw:
            access.not_in_session.append(denied)
        else:
            access.not_configured.append(denied)
    if unknown_user and not access.not_configured and not access.not_in_session:
        return Skipped(f"uid {status.uid} is not in /etc/passwd (a directory-service account?)")
    return access


def _node_evidence(facts: HostFacts, denied: _Denied) -> list[Evidence]:
    ev = [Evidence(denied.node.describe(denied.group), denied.node.path)]
    if denied.group:
        entry = facts.group_by_name(denied.group)
        if entry is not None:
            ev.append(Evidence(f"{entry.name}:x:{entry.gid}:{','.join(entry.members)}", "/etc/group", entry.line))
    return ev


def status_line(facts: HostFacts, key: str) -> Evidence | None:
    """The ``key:`` line of /proc/self/status (Groups, Uid…) as evidence, or None."""
    text = facts.read("/proc/self/status") or ""
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith(key + ":"):
            return Evidence(line.strip(), "/proc/self/status", number)
    return None


def _denied_evidence(facts: HostFacts, denied: list[_Denied], status_key: str) -> list[Evidence]:
    """Each denied node's evidence (once), then the /proc/self/status line that shows the user's side."""
    ev: list[Evidence] = []
    for item in denied:
        ev.extend(e for e in _node_evidence(facts, item) if e not in ev)
    status = status_line(facts, status_key)
    if status:
        ev.append(status)
    return ev


@check("user-not-in-render-group", AREA)
def user_not_in_render_group(ctx):
    access = _analyse(ctx)
    if not isinstance(access, _Access):
        return access
    facts: HostFacts = ctx.facts
    if not access.not_configured and access.session_only:
        # never "configured" when /etc/group no longer lists the user: this session works, the next one will not
        groups = sorted({d.group or str(d.node.gid) for d in access.session_only})
        return Failed(
            evidence=_denied_evidence(facts, access.session_only, "Groups"), subject=access.user_name,
            severity=Severity.WARNING, fix=_add_groups_fix(facts, access.user_name, groups),
            details=(f"This session still has {', '.join(groups)}, but /etc/group no longer lists "
                     f"{access.user_name} there: the GPU stops working at the next login (unless a directory "
                     "service such as LDAP or SSSD provides the membership)."))
    if not access.not_configured:
        return Passed(f"{access.user_name} is configured in the groups of /dev/kfd and the render nodes")
    ev = _denied_evidence(facts, access.not_configured, "Uid")
    no_group_rw = [d for d in access.not_configured if not d.group_rw]
    if no_group_rw:
        paths = ", ".join(d.node.path for d in no_group_rw)
        return Failed(
            evidence=ev, subject=access.user_name,
            details=(f"The group of {paths} has no read/write permission, so joining a group does not help: "
                     "a udev rule has to change the mode or group."),
            fix=_udev_fix(facts))
    # root or another system group (gid below 1000) that is not render/video: joining it would give
    # far more than the GPU (root's group owns system files), so the device's group is what is wrong.
    system = [d for d in access.not_configured if d.group not in ROCM_GROUPS and d.node.gid < FIRST_USER_GID]
    if system:
        paths = ", ".join(f"{d.node.path} (group {d.group or d.node.gid})" for d in system)
        return Failed(
            evidence=ev, subject=access.user_name,
            details=(f"{paths} belongs to a system group, not to render or video: do not add your account to "
                     "it (that would give access to much more than the GPU). A udev rule should give the "
                     "device to the render group, as ROCm's install guide does."),
            fix=_udev_fix(facts))
    missing = sorted({d.group or str(d.node.gid) for d in access.not_configured})
    return Failed(evidence=ev, subject=access.user_name, fix=_add_groups_fix(facts, access.user_name, missing),
                  details=f"Missing group(s): {', '.join(missing)}.")


def _add_groups_fix(facts: HostFacts, user_name: str, missing: list[str]) -> Fix:
    """usermod through the helper when the groups are ROCm's render/video, by hand otherwise."""
    wanted = [g for g in ROCM_GROUPS if facts.group_by_name(g) is not None]
    if wanted and set(missing) <= set(wanted):
        groups = ",".join(wanted)
        return Fix("add-user-to-groups", True, (
            f"Add {user_name} to the {' and '.join(wanted)} groups: `sudo usermod -a -G {groups} {user_name}`.",
            "Log out and log back in (or reboot): group changes only reach new login sessions."),
            ("add-user-to-groups", groups))
    return Fix("add-user-to-groups-manual", True, (
        f"Add {user_name} to the group(s) {', '.join(missing)}: `sudo usermod -a -G {','.join(missing)} "
        f"{user_name}`.",
        "Log out and log back in (or reboot)."))


def _udev_fix(facts: HostFacts) -> Fix:
    """ROCm's udev rule giving /dev/kfd and the render nodes to a group (ROCm/rocm-install-on-linux
    docs/install/prerequisites.rst, 70-amdgpu.rules)."""
    group = "render" if facts.group_by_name("render") is not None or facts.group_by_name("video") is None else "video"
    return Fix("udev-rule-amdgpu", True, (
        f'Create /etc/udev/rules.d/70-amdgpu.rules with `KERNEL=="kfd", GROUP="{group}", MODE="0660"` '
        f'and `SUBSYSTEM=="drm", KERNEL=="renderD*", GROUP="{group}", MODE="0660"`.',
        "Run `sudo udevadm control --reload-rules && sudo udevadm trigger`.",
        f"Add yourself to the {group} group if needed (`sudo usermod -a -G {group} $LOGNAME`), then log out "
        "and back in."))


@check("group-not-active-in-session", AREA)
def group_not_active_in_session(ctx):
    access = _analyse(ctx)
    if not isinstance(access, _Access):
        return access
    if not access.session_known:
        return Skipped("/proc/self/status has no Groups: line")
    facts: HostFacts = ctx.facts
    if not access.not_in_session:
        return Passed("every configured device group is active in this session")
    ev = _denied_evidence(facts, access.not_in_session, "Groups")
    names = sorted({d.group or str(d.node.gid) for d in access.not_in_session})
    return Failed(evidence=ev, subject=access.user_name,
                  details=f"{access.user_name} is a member of {', '.join(names)} in /etc/group, "
                          "but this login session started before that and does not have it.")
