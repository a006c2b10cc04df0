"""What the app says when pkexec ends an Apply, fed with pkexec's real stderr.

The stderr texts were recorded from pkexec 122 (Debian 12) by the system test in test_packaging.py,
which also checks them for real; "No authentication agent found." is the older pkexec's wording.
"""

from __future__ import annotations

import pytest

from rocmdesk.fixes import client

NO_TTY_AGENT = ("Error creating textual authentication agent: Error opening current controlling terminal for the "
                "process (`/dev/tty'): No such device or address\n")
NOT_AUTHORIZED = "Error executing command as another user: Not authorized\n\nThis incident has been reported.\n"


@pytest.mark.parametrize("stderr", [NO_TTY_AGENT, "No authentication agent found.\n"])
def test_no_polkit_agent_is_named_as_the_cause(stderr):
    outcome = client.outcome_from_exit(127, "", stderr)
    assert outcome.kind is client.OutcomeKind.NOT_AUTHORIZED and not outcome.ok
    assert "no polkit authentication agent is running" in outcome.message
    assert "password was not accepted" not in outcome.message
    assert "Nothing was changed" in outcome.message


@pytest.mark.parametrize("stderr", [NOT_AUTHORIZED, "", None])
def test_a_refusal_by_polkit_keeps_the_not_authorized_message(stderr):
    outcome = client.outcome_from_exit(127, "", stderr) if stderr is not None else client.outcome_from_exit(127, "")
    assert outcome.kind is client.OutcomeKind.NOT_AUTHORIZED
    assert outcome.message.startswith("Not authorized: the password was not accepted")


def test_the_agent_mark_only_matters_for_pkexec_127():
    # 126 stays "dismissed"; a helper answer that happens to mention an agent is still the helper's answer
    assert client.outcome_from_exit(126, "", NO_TTY_AGENT).kind is client.OutcomeKind.DISMISSED
    helper = '{"ok": false, "action": "reset-power-cap", "error": "refusing: no PCI device ffff:ff:1f.7"}\n'
    outcome = client.outcome_from_exit(1, helper, "authentication agent")
    assert outcome.kind is client.OutcomeKind.REFUSED
    assert outcome.message == "Refusing: no PCI device ffff:ff:1f.7"
