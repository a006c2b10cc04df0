"""The one rule between a finding and root: a fix runs only on the machine it was diagnosed on.

Every function that can start pkexec, the root helper or a user-level pip run takes a
:class:`~rocmdesk.diagnosis.target.DiagnosisTarget` (required, no default) and calls :func:`require_live`
first, so no caller (the window, ``rocmdesk fix``, a test, a future tab) can reach them for a root folder,
a snapshot or the demo by forgetting a check.
"""

from __future__ import annotations

import logging

from rocmdesk.diagnosis.target import DiagnosisTarget

log = logging.getLogger(__name__)


class NotThisMachine(Exception):
    """A fix was asked to run for a machine other than the live one at ``/``."""

    def __init__(self, target: object, what: str = "this fix") -> None:
        self.target = target
        self.what = what
        if isinstance(target, DiagnosisTarget):
            whose = target.whose()
            text = (f"refusing to run {what}: the diagnosis is of {whose}, not of this machine; "
                    "its steps can be copied or saved as a script for that machine instead")
        else:
            text = f"refusing to run {what}: no diagnosis target was given (got {type(target).__name__})"
        super().__init__(text)


def require_live(target: object, what: str = "this fix") -> DiagnosisTarget:
    """Return ``target`` when a fix may run for it; raise :class:`NotThisMachine` otherwise."""
    if not isinstance(target, DiagnosisTarget) or not target.applicable:
        log.warning("refused %s for %r", what, target)
        raise NotThisMachine(target, what)
    return target
