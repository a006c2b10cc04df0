"""Where rocmdesk keeps the user's own files: the XDG base directories, decided in one place.

``~/.config/rocmdesk`` holds what the user chose (settings, tuning profiles); ``~/.local/state/rocmdesk``
what the app keeps for undo (pip package lists before a fix); screenshots go to the XDG pictures folder.
Each honours ``XDG_CONFIG_HOME`` / ``XDG_STATE_HOME`` through platformdirs.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import platformdirs

log = logging.getLogger(__name__)

APP = "rocmdesk"


def state_dir() -> Path:
    return Path(platformdirs.user_state_dir(APP, appauthor=False))


def config_dir() -> Path:
    return Path(platformdirs.user_config_dir(APP, appauthor=False))


def pictures_dir() -> Path:
    """Where screenshots go by default: the XDG pictures folder, else the home folder.

    ``platformdirs.user_pictures_dir`` exists only from platformdirs 3.3; Debian 12 ships 2.6, where
    the Screenshot button raised AttributeError. Without it, ``XDG_PICTURES_DIR`` from
    ``~/.config/user-dirs.dirs`` (what xdg-user-dirs writes) is read here the same way.
    """
    home = Path(os.path.expanduser("~"))
    finder = getattr(platformdirs, "user_pictures_dir", None)
    if callable(finder):
        try:
            found = finder()
        except Exception as exc:  # a broken user-dirs file must not stop a screenshot
            log.warning("platformdirs cannot find the pictures folder: %s", exc)
            found = ""
        return Path(found) if found else home
    return _xdg_user_dir("XDG_PICTURES_DIR", home) or home


def _xdg_user_dir(key: str, home: Path) -> Path | None:
    """One entry of ``$XDG_CONFIG_HOME/user-dirs.dirs`` (lines like ``XDG_PICTURES_DIR="$HOME/Pictures"``)."""
    config = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    try:
        text = (config / "user-dirs.dirs").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        name, sep, value = line.strip().partition("=")
        if sep and name.strip() == key:
            value = value.strip().strip('"')
            if value.startswith("$HOME"):
                value = str(home) + value[len("$HOME"):]
            if value.startswith("/") and value.rstrip("/") != str(home):
                return Path(value)
    return None


