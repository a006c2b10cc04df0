"""The helper's actions as the app knows them: names, polkit ids, classes, and finding mapping.

Kept in one place so a test can compare them with ``packaging/polkit/org.rocmdesk.helper.policy``
and with the helper's own allow-list.
"""

from __future__ import annotations

HELPER_PATH = "/usr/libexec/rocmdesk/rocmdesk-helper"
PKEXEC_CANDIDATES = ("/usr/bin/pkexec", "/bin/pkexec")
POLKIT_POLICY_NAME = "org.rocmdesk.helper.policy"
POLKIT_PREFIX = "org.rocmdesk.helper."

# sysfs tuning, lost at reboot: polkit auth_admin_keep
TUNING_ACTIONS: tuple[str, ...] = (
    "set-power-cap", "reset-power-cap", "set-performance-level", "set-power-profile", "reset-tuning",
)
# persistent changes in /etc, groups, initramfs, and undo: polkit auth_admin. The helper lets "undo" run only
# for the user who made the change; "undo-as-admin" is the explicit override for anyone else's.
SYSTEM_ACTIONS: tuple[str, ...] = (
    "initramfs-add-amdgpu", "initramfs-regenerate", "modprobe-unblacklist-amdgpu", "xorg-disable-conf",
    "add-user-to-groups", "undo", "undo-as-admin",
)
HELPER_ACTIONS: tuple[str, ...] = TUNING_ACTIONS + SYSTEM_ACTIONS
ARGUMENT_COUNTS: dict[str, int] = {
    "set-power-cap": 2, "reset-power-cap": 1, "set-performance-level": 2, "set-power-profile": 2,
    "reset-tuning": 1, "initramfs-add-amdgpu": 0, "initramfs-regenerate": 0,
    "modprobe-unblacklist-amdgpu": 1, "xorg-disable-conf": 1, "add-user-to-groups": 1, "undo": 1,
    "undo-as-admin": 1,
}
POLKIT_ACTION_IDS: dict[str, str] = {name: POLKIT_PREFIX + name for name in HELPER_ACTIONS}
POLKIT_DEFAULTS: dict[str, str] = {
    **{name: "auth_admin_keep" for name in TUNING_ACTIONS},
    **{name: "auth_admin" for name in SYSTEM_ACTIONS},
}

# user-level fixes: run as the user, never through pkexec (action -> argument count)
USER_ARGUMENT_COUNTS: dict[str, int] = {"pip-reinstall-rocm-torch": 2, "pip-uninstall-pynvml": 1}
USER_ACTIONS: tuple[str, ...] = tuple(USER_ARGUMENT_COUNTS)

PERFORMANCE_LEVELS: tuple[str, ...] = (
    "auto", "low", "high", "manual", "profile_standard", "profile_min_sclk", "profile_min_mclk", "profile_peak",
)


def is_privileged(action: tuple[str, ...] | list[str]) -> bool:
    """True for a helper action (pkexec), False for a user-level one; ValueError for anything else."""
    if not action:
        raise ValueError("empty fix action")
    if action[0] in HELPER_ACTIONS:
        return True
    if action[0] in USER_ACTIONS:
        return False
    raise ValueError(f"unknown fix action {action[0]!r}")


def check_shape(action: tuple[str, ...] | list[str]) -> None:
    """Refuse an action the helper would refuse for its shape (the helper still checks everything)."""
    name = action[0] if action else ""
    if name in ARGUMENT_COUNTS:
        expected = ARGUMENT_COUNTS[name]
    elif name in USER_ARGUMENT_COUNTS:
        expected = USER_ARGUMENT_COUNTS[name]
    else:
        raise ValueError(f"unknown fix action {name!r}")
    if len(action) - 1 != expected:
        raise ValueError(f"{name} takes {expected} argument(s), got {len(action) - 1}")
    if not all(isinstance(a, str) for a in action):
        raise ValueError(f"{name}: arguments must be text")
