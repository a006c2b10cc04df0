"""The Diagnosis tab's summary names what it diagnosed: this machine, a snapshot, a root folder or the demo machine."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rocmdesk.ui.diagnosis_tab import DiagnosisTab, subject_heading
from tests.support.app_context import fake_app_context

pytestmark = pytest.mark.gui


def _ctx(mode: str, root: str = "/", bundle_path: str | None = None):
    return fake_app_context(root, mode, bundle_path=bundle_path, mode_reason="")


def test_subject_of_each_source(tmp_path):
    assert subject_heading(_ctx("live")) == "This machine"
    # the demo's checks read its shipped machine, never this one (issue 10, item 5)
    assert subject_heading(_ctx("demo")) == "The demo machine"
    folder = tmp_path / "dump"
    folder.mkdir()
    assert subject_heading(_ctx("snapshot", str(folder))) == f"This root folder ({folder})"
    # a bundle is extracted somewhere temporary: the user knows it by its file name
    assert subject_heading(_ctx("snapshot", str(folder), "/home/u/case-42.tar.gz")) == "This snapshot (case-42.tar.gz)"
    demo = _ctx("demo", str(folder))
    demo.extras["target"] = SimpleNamespace(source="rx7900xtx-comfyui")
    assert subject_heading(demo) == "The demo machine (rx7900xtx-comfyui)"


def _summary_heading(qtbot, ctx) -> str:
    tab = DiagnosisTab(ctx)
    qtbot.addWidget(tab)
    with qtbot.waitSignal(tab.diagnosisFinished, timeout=20000):
        tab.run_all()
    tab._show_summary()
    return tab.detail.toPlainText().splitlines()[0]


def test_summary_heading_after_a_run_on_a_root_folder_and_a_snapshot(qtbot, tmp_path):
    from tests.unit.report.workstation import make_workstation

    root = make_workstation(tmp_path / "root")
    assert _summary_heading(qtbot, _ctx("snapshot", str(root))) == f"This root folder ({root})"
    snapshot = _summary_heading(qtbot, _ctx("snapshot", str(root), str(tmp_path / "case-42.tar.gz")))
    assert snapshot == "This snapshot (case-42.tar.gz)"


def test_root_folder_path_is_escaped_in_the_heading(qtbot, tmp_path):
    odd = tmp_path / "<b>dump & co"
    odd.mkdir()
    tab = DiagnosisTab(_ctx("snapshot", str(odd)))
    qtbot.addWidget(tab)
    tab.report = SimpleNamespace(host={}, findings=[])
    tab._show_summary()
    assert tab.detail.toPlainText().splitlines()[0] == f"This root folder ({odd})"
    assert "<b>dump" not in tab.detail.toHtml()
