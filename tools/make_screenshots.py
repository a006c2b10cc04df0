"""Regenerate docs/screenshots/*.png (README and AppStream) with `rocmdesk screenshot`.

The diagnosis picture uses a scenario root with real faults (tests/support/scenarios.py) so it shows
what a finding looks like; the others use the bundled MI300X demo recording.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
OUT = TOP / "docs" / "screenshots"
sys.path.insert(0, str(TOP))


def shoot(tab: str, name: str, *source: str) -> None:
    subprocess.run([sys.executable, "-m", "rocmdesk", "screenshot", *source, "--tab", tab, "--seconds", "3",
                    "--size", "1600x900", "-o", str(OUT / name)], check=True,
                   env={"QT_QPA_PLATFORM": "offscreen", "PATH": "/usr/bin:/bin"})


def main() -> int:
    from tests.support import scenarios as sc

    OUT.mkdir(parents=True, exist_ok=True)
    shoot("overview", "overview.png", "--demo")
    shoot("graphs", "graphs.png", "--demo")
    # issue 14: eight GPUs as one plot each, clocks; the fan on a card that has one (an MI300X has none)
    shoot("graphs", "graphs-clocks.png", "--demo", "--graph-metric", "clocks")
    shoot("graphs", "graphs-fan.png", "--demo", "--demo-recording", "rx7900xtx-comfyui")
    shoot("processes", "processes.png", "--demo", "--demo-recording", "rx7900xtx-comfyui")
    with tempfile.TemporaryDirectory() as tmp:
        root = sc.clean_workstation(Path(tmp))
        sc.add_cmdline(root, "nomodeset")
        sc.export_in_profile(root, "HSA_OVERRIDE_GFX_VERSION", "10.3.0")
        sc.remove_user_from_group(root, "render")
        sc.session_groups(root, [4, 24, 27, 44, 1000])
        shoot("diagnosis", "diagnosis.png", "--root", str(root))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
