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


def has_display(environ: Mapping[str, str]) -> bool:
    """True when Qt has somewhere to show a window: a display variable or a platform plugin is set."""
    return any((environ.get(name) or "").strip() for name in DISPLAY_VARIABLES)


def no_display_message(environ: Mapping[str, str]) -> str | None:
    """The one line to print instead of starting the window, or None when a display is there."""
    if has_display(environ):
        return None
    log.debug("no display: none of %s is set", ", ".join(DISPLAY_VARIABLES))
    return NO_DISPLAY_MESSAGE
