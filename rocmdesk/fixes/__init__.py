"""Fixes and tuning: plans from the root helper's preview, the pkexec client, user-level pip fixes.

Privileged changes are made only by ``/usr/libexec/rocmdesk/rocmdesk-helper`` run through pkexec;
this package builds its command lines, shows its exact plan (the helper's own ``--preview``) and
maps its results to plain messages. User-level fixes (pip in a virtual environment) never use pkexec.
"""
