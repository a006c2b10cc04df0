"""A headless screenshot never writes the user's settings.json (theme, last tab, geometry, layout)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

USER_SETTINGS = {
    "rate_hz": 2.0, "temp_unit": "F", "theme": "dark", "geometry": "", "window_state": "",
    "selected_gpus": [], "graph_window_s": 900, "graph_mode": "single", "graph_gpu": "0000:03:00.0",
    "last_tab": "graphs",
}


def _screenshot(config_home: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(config_home)}
    return subprocess.run([sys.executable, "-m", "rocmdesk", "screenshot", "--demo", "--seconds", "0",
                           "--size", "800x600", "-o", str(out), *extra],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=120)


def test_screenshot_leaves_users_settings_byte_identical(tmp_path):
    config = tmp_path / "config"
    settings = config / "rocmdesk" / "settings.json"
    settings.parent.mkdir(parents=True)
    # the user's own formatting (not what Settings.save writes) must survive too
    settings.write_text(json.dumps(USER_SETTINGS) + "\n", encoding="utf-8")
    before = settings.read_bytes()
    before_mtime = settings.stat().st_mtime_ns
    out = tmp_path / "report.png"
    proc = _screenshot(config, out, "--tab", "report", "--theme", "light")
    assert proc.returncode == 0, proc.stderr
    assert out.is_file()
    assert settings.read_bytes() == before
    assert settings.stat().st_mtime_ns == before_mtime
    assert sorted(p.name for p in settings.parent.iterdir()) == ["settings.json"]  # no temp file left


def test_screenshot_creates_no_settings_file(tmp_path):
    config = tmp_path / "config"
    config.mkdir()
    proc = _screenshot(config, tmp_path / "overview.png")
    assert proc.returncode == 0, proc.stderr
    assert not (config / "rocmdesk" / "settings.json").exists()


def test_window_flag_controls_saving(qtbot, tmp_path):
    """The flag is what decides: an interactive window still saves, a flagged one does not."""
    from rocmdesk.ui.app import make_app, open_session
    from rocmdesk.ui.settings import Settings, settings_path
    from rocmdesk.ui.sources import demo_source

    make_app()
    path = settings_path()
    for save in (False, True):
        session = open_session(demo_source("test", recording="rx7900xtx-comfyui", preroll_s=10),
                               Settings(theme="dark", last_tab="processes"), hotplug=False, start=False)
        session.window.save_settings_on_close = save
        session.window.close()
        session.close()
        assert path.exists() is save
    assert json.loads(path.read_text())["theme"] == "dark"
