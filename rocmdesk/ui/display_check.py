"""Before the window starts: is there a display to open it on? (Qt-free, so it runs before PySide6 loads.)

Without one, Qt's xcb plugin aborts with "could not connect to display" and a core dump, a dozen lines
that do not say what to do instead. rocmdesk says it in one line and exits 2 ("could not run"), pointing
to the commands that need no display (issue 10, item 11). ``scripts/run.sh`` makes the same check before
it installs anything.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

log = logging.getLogger(__name__)

# What Qt uses to find a display: X11 (xcb), Wayland, or a platform plugin chosen by hand
# (offscreen, vnc, eglfs, ... : the user knows what they asked for).
DISPLAY_VARIABLES = ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")

NO_DISPLAY_MESSAGE = (
    "rocmdesk: no display (DISPLAY and WAYLAND_DISPLAY are unset), so the window cannot open here; "
    "without one use 'rocmdesk diagnose', 'rocmdesk sample' or 'rocmdesk screenshot --demo -o out.png'"
)


# platform plugins that need a display server, and the variable that names it
NEEDS_SERVER = {"xcb": "DISPLAY", "wayland": "WAYLAND_DISPLAY", "wayland-egl": "WAYLAND_DISPLAY"}


def has_display(environ: Mapping[str, str]) -> bool:
    """True when Qt has somewhere to show a window: a display server's variable, or a platform plugin that
    needs none (offscreen, vnc, eglfs, ...). ``QT_QPA_PLATFORM=xcb`` without ``DISPLAY`` is still no display."""
    def given(name: str) -> bool:
        return bool((environ.get(name) or "").strip())

    if given("DISPLAY") or given("WAYLAND_DISPLAY"):
        return True
    # "wayland;xcb" lists fallbacks; "vnc:size=1280x800" carries options after the name
    plugins = [p.split(":", 1)[0].strip().lower() for p in (environ.get("QT_QPA_PLATFORM") or "").split(";")]
    return any(p and p not in NEEDS_SERVER for p in plugins)


def no_display_message(environ: Mapping[str, str]) -> str | None:
    """The one line to print instead of starting the window, or None when a display is there."""
    if has_display(environ):
        return None
    log.debug("no display: %s", ", ".join(f"{n}={environ.get(n, '')!r}" for n in DISPLAY_VARIABLES))
    return NO_DISPLAY_MESSAGE
