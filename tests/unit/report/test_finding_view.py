"""The parts of a finding every report renderer shows (HTML, Markdown, the Report tab)."""

import io

from rocmdesk.report.finding_view import EvidenceItem, FindingView, finding_view


def test_paragraphs_evidence_and_privileged_fix() -> None:
    view = finding_view({
        "explanation": "  First one.\n\n \n\nSecond\nline.  ",
        "evidence": [{"path": "/etc/x.conf", "line": 4, "text": "blacklist amdgpu"},
                     {"path": "/sys/y", "line": None, "text": "3"},
                     {"path": None, "line": 7, "text": None}],
        "fix": {"privileged": True, "steps": ["Comment out the line."]},
    })
    assert view == FindingView(
        ("First one.", "Second\nline."),
        (EvidenceItem("/etc/x.conf:4", "blacklist amdgpu"), EvidenceItem("/sys/y", "3"), EvidenceItem("", None)),
        "Fix (needs administrator rights)", ("Comment out the line.",))


def test_user_level_fix_and_missing_parts() -> None:
    assert finding_view({"fix": {"privileged": False, "steps": ["pip uninstall -y pynvml"]}}).fix_heading == (
        "Fix (as your user)")
    empty = finding_view({"explanation": None, "evidence": None, "fix": None})
    assert empty == FindingView((), (), "Fix (as your user)", ())
    assert finding_view({"fix": {"privileged": True}}).fix_steps == ()


def test_finding_body_escapes_before_the_renderer_marks_up() -> None:
    from rocmdesk.report.html import finding_body

    view = finding_view({"explanation": "a < b", "evidence": [{"path": "/x&y", "line": 2, "text": "<t>"},
                                                               {"text": None}],
                         "fix": {"privileged": True, "steps": ["run <it>"]}})
    body = "".join(finding_body(view, code=lambda t: f"[{t}]", where=lambda t: f"({t}) "))
    assert body == ("<p>a &lt; b</p><p><b>Evidence</b></p><ul><li>(/x&amp;y:2) [&lt;t&gt;]</li><li>[N/A]</li></ul>"
                    "<p><b>Fix (needs administrator rights)</b></p><ol><li>run &lt;it&gt;</li></ol>")


def test_sudo_steps_in_a_user_level_fix_are_never_as_your_user() -> None:
    """The report says what `rocmdesk diagnose` and the Diagnosis tab say (one wording, finding_view)."""
    from rocmdesk.commands.diagnose import Style, render_finding
    from rocmdesk.diagnosis.model import Finding, Fix, Severity

    for privileged, steps, heading in [
        (True, ["Comment out the line."], "Fix (needs administrator rights)"),
        (False, ["Run `sudo systemctl edit ollama`."], "Fix (some steps need administrator rights)"),
        (False, ["Edit /etc/environment as root."], "Fix (some steps need administrator rights)"),
        (False, ["Run `pip uninstall -y pynvml`."], "Fix (as your user)"),
    ]:
        assert finding_view({"fix": {"privileged": privileged, "steps": steps}}).fix_heading == heading
        finding = Finding("x", Severity.WARNING, "T", "Why.", fix=Fix("x", privileged, tuple(steps)))
        assert f"    {heading}:" in render_finding(finding, Style(io.StringIO(), enabled=False))
