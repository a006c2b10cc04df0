"""What a careful admin asks before a fix: when it takes effect, what can go wrong, how to undo it.

One entry per fix action (helper and user-level), shown by the fix dialog, the steps dialog, the saved
script and ``rocmdesk fix``. ``undo`` is written for a text console too, since some fixes can leave the
desktop unable to start. Sources for the "takes effect" facts: modprobe.d(5) and the initramfs generators'
manuals (the early boot reads the initramfs copy of /etc/modprobe.d), usermod(8) ("the user ... must log
out and in" for new groups to reach a session), xorg.conf(5) (read when the X server starts).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ActionNotes:
    takes_effect: str
    risks: tuple[str, ...]
    undo: str  # how to undo, by hand (the window also offers its Undo from the Changes list)

    def lines(self) -> list[str]:
        out = [f"Takes effect: {self.takes_effect}"]
        out += [f"What can go wrong: {risk}" for risk in self.risks]
        out.append(f"How to undo: {self.undo}")
        return out


_REBUILD_RISK = ("the initramfs rebuild can fail (a full /boot, a DKMS module that does not build); the old "
                 "image is then kept and the machine boots as before; read the command's output")
_CONSOLE = ("If the desktop does not start afterwards, switch to a text console (Ctrl+Alt+F3), log in and "
            "run the undo there.")

NOTES: dict[str, ActionNotes] = {
    "modprobe-unblacklist-amdgpu": ActionNotes(
        "after the initramfs rebuild and a reboot (amdgpu then loads at boot)",
        ("once amdgpu loads, the display moves to it: if this machine depended on another driver for its "
         "screen (or amdgpu fails on this GPU) the desktop may not start. " + _CONSOLE, _REBUILD_RISK),
        "put the lines back (remove the '# disabled by rocmdesk: ' prefix or restore the backup copy), "
        "rebuild the initramfs with the same command and reboot; in the window: Tuning → Changes → Undo"),
    "xorg-disable-conf": ActionNotes(
        "when the X server starts again: restart the display manager (e.g. `sudo systemctl restart gdm`) "
        "or reboot; log out first, the restart ends the session",
        ("Xorg then picks the driver itself; if the file carried settings this machine needs (a second "
         "screen layout, input options) they are gone too. " + _CONSOLE,),
        "rename the file back (drop the .rocmdesk-disabled suffix) and restart the display manager; in the "
        "window: Tuning → Changes → Undo"),
    "initramfs-add-amdgpu": ActionNotes(
        "at the next boot, from the rebuilt initramfs (nothing changes for ROCm compute until then)",
        ("amdgpu then loads early, before the root file system: on a machine whose firmware files are "
         "missing from the initramfs the screen may stay dark until the boot finishes. " + _CONSOLE,
         _REBUILD_RISK),
        "remove the added line (or file), rebuild the initramfs with the same command and reboot; in the "
        "window: Tuning → Changes → Undo"),
    "initramfs-regenerate": ActionNotes(
        "at the next boot, from the rebuilt initramfs",
        (_REBUILD_RISK,),
        "rebuilding is its own undo: run the command again after reverting whatever you changed in /etc"),
    "add-user-to-groups": ActionNotes(
        "at your next login (log out and back in, or reboot); running programs keep their old groups",
        ("members of render and video can use every GPU on the machine, including reading its memory "
         "through the driver: add only people who should",),
        "`sudo gpasswd -d USER render` (and video), then log out and in; in the window: Tuning → Changes → Undo"),
    "pip-reinstall-rocm-torch": ActionNotes(
        "the next time a program starts in that environment (restart ComfyUI, the notebook kernel, ...)",
        ("a custom node or package that pins a CUDA torch can pull it back at its next install or update",
         "the download is large (several GB) and needs network access to download.pytorch.org"),
        "reinstall the versions saved in the `pip freeze` file (the window's \"Restore previous packages\" "
        "does it from the same file)"),
    "pip-uninstall-pynvml": ActionNotes(
        "the next time a program starts in that environment",
        ("a custom node that imports pynvml directly stops loading (it was asking about NVIDIA GPUs)",),
        "`ENV/bin/python -m pip install pynvml==VERSION` with the version in the saved `pip freeze` file"),
}

_TUNING = ActionNotes(
    "at once, on the running GPU; the kernel forgets it at the next reboot or driver reload",
    ("a power cap below what a workload needs makes it slower, not unstable; a forced performance level keeps "
     "clocks (and fan noise) high while idle",),
    "Reset in the Tuning tab, or reboot")
for _name in ("set-power-cap", "reset-power-cap", "set-performance-level", "set-power-profile", "reset-tuning"):
    NOTES[_name] = _TUNING
NOTES["undo"] = ActionNotes(
    "as the original change did (a reboot, a new login or a display manager restart)",
    ("files changed by hand since the fix are not overwritten: the helper refuses and says which",),
    "apply the original fix again")
NOTES["undo-as-admin"] = ActionNotes(
    "as the original change did (a reboot, a new login or a display manager restart)",
    ("it undoes another user's change: the helper records that an administrator did it",
     "files changed by hand since the fix are not overwritten: the helper refuses and says which"),
    "apply the original fix again")

GENERIC = ActionNotes(
    "as the steps say (most need a reboot or a new login)",
    ("the steps change system configuration: read each one before running it",),
    "keep a copy of every file before you edit it, and put the copy back")


def undo_command(undo_id: str) -> str:
    """The undo of a helper run as one command that works from a text console as well."""
    from rocmdesk.fixes.actions import HELPER_PATH, PKEXEC_CANDIDATES

    return f"{PKEXEC_CANDIDATES[0]} {HELPER_PATH} undo {undo_id}"


def notes_for(action_name: str | None) -> ActionNotes:
    """The notes of a fix action (``Fix.action[0]`` or ``Fix.id``); the generic ones for manual steps."""
    return NOTES.get(action_name or "", GENERIC)
