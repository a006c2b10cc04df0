"""Talking to the root helper: is it installed, preview a fix, build the pkexec command, read the result.

Apply always runs ``pkexec /usr/libexec/rocmdesk/rocmdesk-helper ACTION ARG...`` as a plain argv
(never a shell). The UI starts that argv in a QProcess; :func:`outcome_from_exit` turns the exit code
and output into a plain message. pkexec's own codes: 126 = the user dismissed the password dialog,
127 = not authorized (or authentication failed); the helper never uses either (pkexec(1), EXIT STATUS).
"""

from __future__ import annotations

import enum
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rocmdesk.diagnosis.target import DiagnosisTarget
from rocmdesk.fixes.actions import HELPER_PATH, PKEXEC_CANDIDATES, POLKIT_POLICY_NAME, check_shape, is_privileged
from rocmdesk.fixes.guard import require_live
from rocmdesk.fixes.plan import FixPlan, PlanError, parse_helper_json, plan_from_helper_output
from rocmdesk.host import CommandRunner

log = logging.getLogger(__name__)

PKEXEC_DISMISSED = 126
PKEXEC_NOT_AUTHORIZED = 127
PREVIEW_TIMEOUT_S = 30.0
POLKIT_ACTION_DIRS = ("/usr/share/polkit-1/actions",)
# pkexec exits 127 without asking anyone when no polkit agent can ask for the password. Its stderr then
# says "Error creating textual authentication agent: ..." (polkit 121+, no terminal) or "No authentication
# agent found." (older polkit); pkexec prints these untranslated (polkit src/programs/pkexec.c).
NO_AGENT_MARK = "authentication agent"
NO_AGENT_MESSAGE = ("Not authorized: no polkit authentication agent is running, so nobody could be asked for the "
                    "password. Nothing was changed. Start your desktop's polkit agent (for example "
                    "polkit-gnome-authentication-agent-1, lxpolkit or polkit-kde-authentication-agent-1) and "
                    "try again, or follow the manual steps.")

INSTALL_HINT = (
    "The one-click fixes need rocmdesk's small root helper, which a pip install does not include. "
    "Install rocmdesk from your distribution's package (it puts the helper in "
    f"{HELPER_PATH} and the polkit policy in /usr/share/polkit-1/actions/{POLKIT_POLICY_NAME}), "
    "or follow the manual steps below."
)


class Availability(enum.Enum):
    READY = "ready"
    NO_HELPER = "no-helper"
    NO_PKEXEC = "no-pkexec"
    NO_POLICY = "no-policy"


@dataclass(frozen=True, slots=True)
class HelperStatus:
    availability: Availability
    message: str
    pkexec: str | None = None

    @property
    def ready(self) -> bool:
        return self.availability is Availability.READY


def helper_status(root: str = "/", helper_path: str = HELPER_PATH) -> HelperStatus:
    """Whether one-click fixes can run here; the message says what is missing in plain words."""
    def at(path: str) -> str:
        return os.path.join(root, path.lstrip("/"))

    helper = at(helper_path)
    if not (os.path.isfile(helper) and os.access(helper, os.X_OK)):
        return HelperStatus(Availability.NO_HELPER, INSTALL_HINT)
    pkexec = next((p for p in PKEXEC_CANDIDATES if os.path.isfile(at(p)) and os.access(at(p), os.X_OK)), None)
    if pkexec is None:
        return HelperStatus(Availability.NO_PKEXEC, "pkexec is not installed (package polkit or pkexec); "
                            "install it to apply fixes, or follow the manual steps.")
    if not any(os.path.isfile(at(os.path.join(d, POLKIT_POLICY_NAME))) for d in POLKIT_ACTION_DIRS):
        return HelperStatus(Availability.NO_POLICY, f"The polkit policy {POLKIT_POLICY_NAME} is missing, so "
                            "pkexec would not show what the fix does. Reinstall rocmdesk's package.", pkexec)
    return HelperStatus(Availability.READY, "", pkexec)


def pkexec_argv(action: Sequence[str], pkexec: str = PKEXEC_CANDIDATES[0],
                helper_path: str = HELPER_PATH, *, target: DiagnosisTarget) -> list[str]:
    """The exact argv Apply runs; only helper actions, never a user-level fix, only for the live machine
    (``target``; NotThisMachine otherwise)."""
    require_live(target, "the root helper")
    action = list(action)
    check_shape(action)
    if not is_privileged(action):
        raise ValueError(f"{action[0]} is a user-level fix and never runs through pkexec")
    if not os.path.isabs(pkexec) or not os.path.isabs(helper_path):
        raise ValueError("pkexec and the helper must be given by absolute path")
    return [pkexec, helper_path, *action]


def preview_argv(action: Sequence[str], helper_path: str = HELPER_PATH, *, target: DiagnosisTarget) -> list[str]:
    """The helper's read-only plan, run as the user (no pkexec). The helper reads this machine's files, so
    it is asked only for the live machine (``target``; NotThisMachine otherwise)."""
    require_live(target, "the helper's preview")
    action = list(action)
    check_shape(action)
    if not is_privileged(action):
        raise ValueError(f"{action[0]} is not a helper action")
    return [helper_path, "--preview", *action]


def preview(action: Sequence[str], runner: CommandRunner | None = None,
            helper_path: str = HELPER_PATH, *, target: DiagnosisTarget) -> FixPlan:
    """Ask the helper (unprivileged) what the fix would change right now on the live machine.
    Raises PlanError, or NotThisMachine for any other target (before anything runs)."""
    argv = preview_argv(action, helper_path, target=target)
    runner = runner or CommandRunner(default_timeout=PREVIEW_TIMEOUT_S)
    result = runner.run(argv, timeout=PREVIEW_TIMEOUT_S)
    if result.error:
        raise PlanError(f"could not ask the helper for a preview: {result.error}")
    return plan_from_helper_output(tuple(action), result.stdout)


class OutcomeKind(enum.Enum):
    DONE = "done"
    DISMISSED = "dismissed"
    NOT_AUTHORIZED = "not-authorized"
    REFUSED = "refused"  # the helper said no (validation, unsafe file, out of range)
    FAILED = "failed"  # it tried and something broke (rolled back where it could)


@dataclass(slots=True)
class Outcome:
    kind: OutcomeKind
    message: str
    undo_id: str | None = None
    changes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.kind is OutcomeKind.DONE


def outcome_from_exit(exit_code: int | None, stdout: str, stderr: str = "") -> Outcome:
    """Plain words for how an Apply ended."""
    if exit_code == PKEXEC_DISMISSED:
        return Outcome(OutcomeKind.DISMISSED, "Cancelled: the password dialog was closed, so nothing was changed.")
    if exit_code == PKEXEC_NOT_AUTHORIZED and NO_AGENT_MARK in (stderr or ""):
        return Outcome(OutcomeKind.NOT_AUTHORIZED, NO_AGENT_MESSAGE)
    if exit_code == PKEXEC_NOT_AUTHORIZED:
        return Outcome(OutcomeKind.NOT_AUTHORIZED,
                       "Not authorized: the password was not accepted or your account may not make this change. "
                       "Nothing was changed. Ask an administrator, or follow the manual steps.")
    try:
        data = parse_helper_json(stdout)
    except PlanError:
        detail = (stderr or "").strip().splitlines()[-1:] or ["no output"]
        return Outcome(OutcomeKind.FAILED, f"The helper did not report a result (exit code {exit_code}): {detail[0]}")
    warnings = [str(w) for w in data.get("warnings") or [] if isinstance(w, str)]
    if data.get("ok") and exit_code == 0:
        changes = data.get("changes") or []
        message = "Done." if changes else "Nothing needed changing."
        if warnings:  # the change is made; bookkeeping after it failed, and the user should know
            message += " Warning: " + " ".join(w[:1].upper() + w[1:] + "." for w in warnings)
        return Outcome(OutcomeKind.DONE, message, data.get("undo_id"), changes)
    error = str(data.get("error") or f"the helper failed (exit code {exit_code})")
    kind = OutcomeKind.REFUSED if exit_code == 2 or error.startswith("refusing") else OutcomeKind.FAILED
    # an undo id on a failure means a change stayed in place (roll-back failed): keep the way back
    return Outcome(kind, error[:1].upper() + error[1:], data.get("undo_id"), data.get("changes") or [])


APPLY_TIMEOUT_S = 1800.0  # the password prompt plus an initramfs rebuild (the helper allows it 900 s)
NO_TTY_HINT = ("From a terminal without a desktop session, pkexec asks for the password itself only when it "
               "runs on a terminal (stdin a tty); start rocmdesk fix from an interactive terminal, or run "
               "`pkttyagent --process $$ &` in that shell first.")


_APPLY_ENV_KEEP = ("DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "TERM")


def _apply_env() -> dict[str, str]:
    """What pkexec needs to find the session's agent (or the terminal); nothing else passes."""
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
    env.update({k: v for k, v in os.environ.items() if k in _APPLY_ENV_KEEP})
    return env


def apply_in_terminal(action: Sequence[str], *, target: DiagnosisTarget, pkexec: str = PKEXEC_CANDIDATES[0],
                      helper_path: str = HELPER_PATH, timeout: float = APPLY_TIMEOUT_S) -> Outcome:
    """``rocmdesk fix --apply``: run ``pkexec helper ACTION...`` in the caller's terminal and read the outcome.

    Not through CommandRunner: that starts a new session, which has no controlling terminal, and pkexec's
    own text agent (polkit's PolkitAgentTextListener) asks for the password on the controlling terminal.
    Still an argv by absolute path, no shell, a timeout; stdout and stderr are read for the helper's JSON.
    """
    import subprocess

    argv = pkexec_argv(action, pkexec, helper_path, target=target)
    try:
        proc = subprocess.run(argv, shell=False, capture_output=True, text=True, timeout=timeout, env=_apply_env())
    except subprocess.TimeoutExpired:
        return Outcome(OutcomeKind.FAILED, f"pkexec did not finish within {timeout:g} s; check "
                       "/var/log/rocmdesk/audit.log for what the helper did")
    except OSError as exc:
        return Outcome(OutcomeKind.FAILED, f"could not start {argv[0]}: {exc.strerror or exc}")
    outcome = outcome_from_exit(proc.returncode, proc.stdout, proc.stderr)
    if outcome.kind is OutcomeKind.NOT_AUTHORIZED and NO_AGENT_MARK in (proc.stderr or ""):
        outcome.message = f"{outcome.message} {NO_TTY_HINT}"
    return outcome
