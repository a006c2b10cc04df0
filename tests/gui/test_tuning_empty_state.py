"""Tuning tab: a clear empty state where nothing can be tuned; only the controls a GPU has are shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.app_context import fake_app_context
from tests.support.sysfs_tree import GpuSpec, build_root
from tests.unit.fixes.helper_trees import GPU_PCI, build_host

pytestmark = pytest.mark.gui


def make_tab(qtbot, root: Path, mode: str, bundle: str | None = None):
    from rocmdesk.ui.tuning_tab import TuningTab

    ctx = fake_app_context(root, mode, bundle_path=bundle)
    tab = TuningTab(ctx, dialog_factory=lambda *a: pytest.fail("nothing may open a fix dialog here"))
    qtbot.addWidget(tab)
    tab.resize(1280, 800)
    tab.show()
    return tab


def shows_empty_state(tab) -> bool:
    return tab.empty_state.isVisible() and not tab.controls.isVisible()


def test_demo_mode_says_why_and_what_would_enable_tuning(qtbot, tmp_path):
    root = tmp_path / "demo"
    (root / "sys/bus/pci/devices").mkdir(parents=True)
    tab = make_tab(qtbot, root, "demo")
    assert shows_empty_state(tab)
    assert tab.empty_title.text() == "Tuning is not available in demo mode"
    assert "without --demo" in tab.empty_text.text() and "amdgpu" in tab.empty_text.text()
    assert not tab.apply_button.isEnabled() and tab.apply() is None and tab.reset() is None


def test_snapshot_lists_the_recorded_settings_read_only(qtbot, tmp_path):
    root = build_root(tmp_path / "snap", [GpuSpec("rx6900xt", pci="0000:0c:00.0")])
    tab = make_tab(qtbot, root, "snapshot", bundle=str(tmp_path / "b.tar.zst"))
    assert shows_empty_state(tab)
    assert tab.empty_title.text() == "Tuning is not available for a snapshot"
    text = tab.empty_text.text()
    assert "a support snapshot" in text and "changes only the live machine" in text
    assert "0000:0c:00.0: power cap 289 W (0–332 W, default 289 W), performance level auto" in text
    assert tab.state is None and tab.pending_actions() == []


def test_snapshot_without_gpu(qtbot, tmp_path):
    root = tmp_path / "empty"
    (root / "sys/bus/pci/devices").mkdir(parents=True)
    tab = make_tab(qtbot, root, "snapshot")
    assert shows_empty_state(tab) and "holds no GPU driven by amdgpu" in tab.empty_text.text()
    assert "another root folder" in tab.empty_text.text()


def test_live_machine_without_amdgpu_points_to_the_diagnosis(qtbot, tmp_path):
    root = build_root(tmp_path / "radeon", [GpuSpec("hd7870", pci="0000:0a:00.0")])
    tab = make_tab(qtbot, root, "live")
    assert shows_empty_state(tab)
    assert tab.empty_title.text() == "No AMD GPU to tune"
    assert "Diagnosis tab" in tab.empty_text.text()


def test_live_gpu_shows_only_its_own_controls(qtbot, tmp_path):
    root = build_host(tmp_path / "root")
    tab = make_tab(qtbot, root, "live")
    assert not shows_empty_state(tab) and tab.controls.isVisible()
    assert tab.cap_slider.isVisible() and tab.level_combo.isVisible() and tab.profile_combo.isVisible()
    device = next(root.glob(f"sys/devices/*/*/{GPU_PCI}"))
    (device / "pp_power_profile_mode").unlink()
    for name in ("power1_cap", "power1_cap_min", "power1_cap_max"):
        next(device.glob(f"hwmon/*/{name}")).unlink()
    tab.refresh_state()
    assert not tab.cap_slider.isVisible() and not tab.profile_combo.isVisible(), "no dead slider, no empty combo"
    assert tab.level_combo.isVisible() and tab.level_combo.count() == 8
    assert "does not report a power cap range" in tab.notice.text()
    (device / "power_dpm_force_performance_level").unlink()
    tab.refresh_state()
    assert not tab.level_combo.isVisible() and not tab.apply_button.isVisible()
    assert "no performance level control" in tab.notice.text()


def test_empty_changes_list_does_not_fill_the_tab(qtbot, tmp_path):
    root = tmp_path / "demo"
    (root / "sys/bus/pci/devices").mkdir(parents=True)
    tab = make_tab(qtbot, root, "demo")
    qtbot.waitUntil(lambda: tab.changes_box.height() > 0)
    assert tab.changes.empty.isVisible() and not tab.changes.tree.isVisible()
    assert tab.changes_box.height() < 150, "a one-line message, not a huge empty box"
    assert not tab.changes.undo_button.isVisible(), "nothing to undo, and never from a recording"
