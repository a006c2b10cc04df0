"""The one lookup of shipped demo machines (resources/demo/NAME.machine.tar.gz): names only, never paths."""

from __future__ import annotations

import pytest

from rocmdesk.telemetry.recording import MACHINE_SUFFIX, demo_dir, demo_machines, machine_path


def test_the_shipped_machines_are_found_by_name():
    assert "rx7900xtx-comfyui" in demo_machines()
    path = machine_path("rx7900xtx-comfyui")
    assert path is not None and path.parent == demo_dir() and path.name == "rx7900xtx-comfyui" + MACHINE_SUFFIX


@pytest.mark.parametrize("name", ["", "no-such-machine", "../demo/rx7900xtx-comfyui", "/etc/passwd",
                                  "rx7900xtx-comfyui/", ".", "..", ".hidden", "rx7900xtx-comfyui.machine.tar.gz"])
def test_anything_but_a_shipped_name_is_not_looked_up(name):
    assert machine_path(name) is None


def test_a_resources_folder_without_demos_has_none(tmp_path, monkeypatch):
    monkeypatch.setenv("ROCMDESK_RESOURCES", str(tmp_path))
    assert demo_machines() == [] and machine_path("rx7900xtx-comfyui") is None
