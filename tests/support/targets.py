"""Diagnosis targets for tests: the live machine (the only one a fix may run on)."""

from __future__ import annotations

from rocmdesk.diagnosis.target import live_target

LIVE = live_target()
