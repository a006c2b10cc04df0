"""``rocmdesk fix FINDING_ID``: a finding's fix, headless, for the machine it was diagnosed on.

``--dry-run`` (the default) prints the exact change (diff, commands, sysfs writes), the machine it is for,
when it takes effect, what can go wrong and how to undo it. For the live machine with the helper installed
the change is the helper's own ``--preview``; for a root folder (``--root``) or a snapshot (``--snapshot``)
it is worked out from that machine's files and nothing runs. ``--apply`` exists only for the live machine
and goes through pkexec and the helper like the window (preview first, backup, undo id) or, for a
user-level fix, runs pip as the user; with ``--root``/``--snapshot`` it exits 2 before anything runs.

Exit codes: 0 shown or applied (or nothing to fix), 1 refused or failed, 2 could not run.
``--json`` prints ``{"finding", "target": {"kind", "machine", ...}, "applicable", "steps", "changes", ...}``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any, TextIO

log = logging.getLogger(__name__)

EXIT_OK, EXIT_REFUSED, EXIT_CANNOT_RUN = 0, 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("finding", metavar="FINDING_ID", help="the id of a finding (as `rocmdesk diagnose` shows it)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--root", metavar="DIR", default=argparse.SUPPRESS,
                       help="a root folder of another machine (steps only: never applied here)")
    where.add_argument("--snapshot", metavar="BUNDLE", help="a support bundle (steps only: never applied here)")
    where.add_argument("--demo", metavar="NAME", nargs="?", const="", default=None,
                       help="a shipped demo machine (steps only), e.g. rx7900xtx-comfyui")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="show the exact change and write nothing (default)")
    mode.add_argument("--apply", action="store_true", help="apply it on this machine (pkexec and the helper)")
    parser.add_argument("--subject", metavar="S", help="which one, when the check fires more than once "
                        "(a file, a user, a Python environment)")
    parser.add_argument("--python-env", metavar="PATH", action="append", default=[], dest="python_envs",
                        help="also check this Python environment (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the plan (and outcome) as JSON")


def demo_machine_path(name: str) -> str | None:
    """The shipped bundle of a demo machine (resources/demo/NAME.machine.tar.gz), None when not shipped."""
    from rocmdesk.telemetry.backends.demo import DEFAULT_RECORDING
    from rocmdesk.telemetry.recording import machine_path

    found = machine_path(name or DEFAULT_RECORDING)
    return str(found) if found is not None else None


def demo_name(path: str) -> str:
    import os

    from rocmdesk.telemetry.recording import MACHINE_SUFFIX

    return os.path.basename(path).removesuffix(MACHINE_SUFFIX)


def _fail(err: TextIO, message: str, code: int = EXIT_CANNOT_RUN) -> int:
    print(f"rocmdesk fix: {message}", file=err)
    return code


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    root_dir = getattr(args, "root", None)
    snapshot = getattr(args, "snapshot", None)
    demo = getattr(args, "demo", None)
    if getattr(args, "apply", False) and demo is not None:
        return _fail(err, "--apply refused: the demo machine is not this machine; its fixes are shown as steps "
                          "only (drop --apply)")
    if getattr(args, "apply", False) and (root_dir or snapshot):
        where = f"the root folder {root_dir}" if root_dir else f"the snapshot {snapshot}"
        return _fail(err, f"--apply refused: {where} is another machine; a fix runs only on the machine it acts "
                          "on (drop --apply to see the steps, or run rocmdesk fix --apply on that machine)")
    from rocmdesk.diagnosis.engine import registered_checks

    check_id = args.finding
    specs = [s for s in registered_checks() if s.id == check_id]
    if not specs:
        return _fail(err, f"no check is called {check_id!r} (see `rocmdesk diagnose` for the ids)")
    opened = None
    if demo is not None:
        snapshot = demo_machine_path(demo)
        if snapshot is None:
            return _fail(err, f"no demo machine {demo or 'mi300x-node (the default)'!r} is shipped with this build")
    try:
        if snapshot:
            from rocmdesk.diagnosis.target import target_for_bundle
            from rocmdesk.report.bundle import BundleError, open_bundle

            try:
                opened = open_bundle(snapshot)
            except BundleError as exc:
                return _fail(err, f"cannot open the snapshot: {exc}")
            root, target = opened.root, target_for_bundle(opened)
            if demo is not None:
                from rocmdesk.diagnosis.target import demo_target

                target = demo_target(opened.root, demo_name(snapshot), opened.created)
            envs = list(args.python_envs or opened.python_envs)
        else:
            import os

            from rocmdesk.diagnosis.target import root_target
            from rocmdesk.host import HostRoot

            folder = root_dir or "/"
            if not os.path.isdir(folder):
                return _fail(err, f"{folder} is not a folder")
            root = HostRoot(folder)
            target = root_target(root)
            envs = list(args.python_envs)
        return _fix(args, root, target, envs, specs, out, err)
    finally:
        if opened is not None:
            opened.close()


def _fix(args: argparse.Namespace, root: Any, target: Any, envs: list[str], specs: list, out: TextIO,
         err: TextIO) -> int:
    from rocmdesk.diagnosis.runner import diagnose
    from rocmdesk.fixes.finding_plan import plan_for_finding

    try:
        report = diagnose(root, python_envs=envs, specs=specs, target=target)
    except Exception as exc:  # the engine catches check errors; this is a broken run
        log.exception("diagnosis failed")
        return _fail(err, f"the diagnosis could not run: {type(exc).__name__}: {exc}")
    result = report.results[0]
    findings = result.findings
    if args.subject is not None:
        findings = [f for f in findings if f.subject == args.subject]
    if not findings:
        why = (f"no finding {args.finding} about {args.subject!r}" if args.subject is not None and result.findings
               else f"{args.finding} does not fire ({result.status.value}: {result.reason or 'no reason given'})")
        if args.json:
            _json(out, {"finding": args.finding, "target": target.to_json(), "applicable": False, "steps": [],
                        "changes": [], "message": f"{why}: nothing to fix"})
        else:
            out.write(f"{why} on {target.describe()}: nothing to fix.\n")
        return EXIT_REFUSED if args.subject is not None and result.findings else EXIT_OK
    if len(findings) > 1:
        subjects = ", ".join(repr(f.subject) for f in findings)
        return _fail(err, f"{args.finding} fires {len(findings)} times; choose one with --subject ({subjects})")
    finding = findings[0]
    plan = plan_for_finding(finding, target)
    live_changes = _live_preview(plan, err) if plan.applicable else None
    if isinstance(live_changes, int):
        return live_changes
    data = plan.to_json()
    if live_changes is not None:
        data["changes"], data["undo_plan"], data["changes_from"] = live_changes
    else:
        data["changes_from"] = "worked out from that machine's files (nothing was run)"
    if not args.apply:
        if args.json:
            _json(out, data)
        else:
            out.write(_text(plan, data))
        return EXIT_OK
    return _apply(plan, data, args, out, err)


def _live_preview(plan: Any, err: TextIO) -> tuple[list, list, str] | int | None:
    """For the live machine: the helper's exact plan (None when the helper is not installed: then the plan
    worked out here is shown); an exit code when the helper refuses."""
    from rocmdesk.fixes import client
    from rocmdesk.fixes.plan import PlanError

    if not plan.privileged:
        return None
    status = client.helper_status()
    if not status.ready:
        plan.problems.append(status.message)
        return None
    try:
        helper_plan = client.preview(plan.action, target=plan.target)
    except PlanError as exc:
        return _fail(err, f"the helper will not make this change: {exc}", EXIT_REFUSED)
    return list(helper_plan.raw), list(helper_plan.undo), "the helper's --preview on this machine"


_CONTROL = {c: "?" for c in (*range(0, 9), *range(11, 32), 0x7F, *range(0x80, 0xA0))}


def _printable(text: str) -> str:
    """Text from another machine's files (paths, diffs) without terminal control characters (an ESC in a file
    name must not recolour or rewrite the admin's terminal); newlines and tabs stay."""
    return text.translate(_CONTROL)


def _text(plan: Any, data: dict, applying: bool = False) -> str:
    return _printable(_plain(plan, data, applying))


def _plain(plan: Any, data: dict, applying: bool = False) -> str:
    lines = [plan.text(), ""]
    if data.get("undo_plan"):
        lines.append("The window's Undo (and `rocmdesk fix` after an apply) would:")
        lines += [f"- {step}" for step in data["undo_plan"]]
    if applying:
        lines.append("Applying…")
    elif plan.applicable:
        lines.append("This is the live machine: run again with --apply to make the change "
                     + ("(asks for the administrator password)." if plan.privileged else "(runs as you)."))
    else:
        lines.append(plan.why_not_applicable)
    return "\n".join(lines) + "\n"


def _json(out: TextIO, data: dict) -> None:
    json.dump(data, out, indent=2, sort_keys=False)
    out.write("\n")


def _apply(plan: Any, data: dict, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from rocmdesk.fixes.guard import NotThisMachine

    if not plan.applicable:
        return _fail(err, plan.why_not_applicable or "this fix cannot be applied here")
    if not args.json:
        out.write(_text(plan, data, applying=True))
        out.flush()
    try:
        if plan.privileged:
            code, result = _apply_helper(plan, err)
        else:
            code, result = _apply_pip(plan, out if not args.json else err)
    except NotThisMachine as exc:
        return _fail(err, str(exc), EXIT_REFUSED)
    if args.json:
        _json(out, {**data, "outcome": result})
    else:
        out.write(result["message"] + "\n")
    return code


def _apply_helper(plan: Any, err: TextIO) -> tuple[int, dict]:
    from rocmdesk.fixes import client
    from rocmdesk.fixes.action_notes import undo_command

    status = client.helper_status()
    if not status.ready:
        return EXIT_REFUSED, {"kind": "not-installed", "message": status.message}
    outcome = client.apply_in_terminal(plan.action, target=plan.target, pkexec=status.pkexec or
                                       client.PKEXEC_CANDIDATES[0])
    message = outcome.message + (f" Undo id {outcome.undo_id}: in the window Tuning → Changes → Undo, or from any "
                                 f"terminal or text console: {undo_command(outcome.undo_id)}"
                                 if outcome.undo_id else "")
    return (EXIT_OK if outcome.ok else EXIT_REFUSED,
            {"kind": outcome.kind.value, "message": message, "undo_id": outcome.undo_id, "changes": outcome.changes})


def _apply_pip(plan: Any, stream: TextIO) -> tuple[int, dict]:
    from rocmdesk.fixes.pip_fix import PipFixError, PipRun, plan_pip_reinstall, plan_pip_uninstall_pynvml

    action = plan.action
    try:
        pip_plan = (plan_pip_uninstall_pynvml(action[1]) if action[0] == "pip-uninstall-pynvml"
                    else plan_pip_reinstall(action[1], action[2]))
        def echo(line: str) -> None:
            stream.write(line + "\n")
            stream.flush()

        run = PipRun(pip_plan, echo, target=plan.target)
        code = run.run()
    except (PipFixError, OSError) as exc:
        return EXIT_REFUSED, {"kind": "refused", "message": str(exc)}
    saved = f" The previous package list is saved in {run.freeze_file}." if run.freeze_file else ""
    rollback = run.rollback.describe() if run.rollback is not None else ""
    if code == 0:
        return EXIT_OK, {"kind": "done", "message": f"Done.{saved}\n{rollback}".rstrip(),
                         "freeze_file": str(run.freeze_file)}
    return EXIT_REFUSED, {"kind": "failed", "message": f"pip failed (exit code {code}).{saved}\n{rollback}".rstrip(),
                          "freeze_file": str(run.freeze_file)}
