"""User settings persisted as JSON in the XDG config folder (``~/.config/rocmdesk/settings.json``).

Qt-free on purpose: the file is plain JSON so support staff can read it, and a damaged file
falls back to defaults value by value instead of stopping the window from opening.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from rocmdesk.atomic_file import atomic_write_text
from rocmdesk.xdg_paths import config_dir

log = logging.getLogger(__name__)

RATE_MIN_HZ = 0.25
RATE_MAX_HZ = 10.0
GRAPH_WINDOWS_S: tuple[int, ...] = (60, 300, 900, 3600, 6 * 3600, 24 * 3600)
THEMES = ("system", "light", "dark")
TEMP_UNITS = ("C", "F")
GRAPH_MODES = ("overlay", "single")
GRAPH_LAYOUTS = ("auto", "overlay", "multiples")  # auto: one plot per GPU above four GPUs (graph_specs)
GRAPH_METRICS = ("temp", "power", "memory", "busy", "clocks", "fan")


def settings_path() -> Path:
    return config_dir() / "settings.json"


@dataclass
class Settings:
    rate_hz: float = 1.0
    temp_unit: str = "C"
    theme: str = "system"
    geometry: str = ""  # QMainWindow.saveGeometry() as hex; empty = default size
    window_state: str = ""
    selected_gpus: list[str] = field(default_factory=list)  # PCI addresses shown; empty = all
    graph_window_s: int = 3600
    graph_mode: str = "overlay"  # all selected GPUs on one set of axes, or one GPU ("single")
    graph_gpu: str = ""  # PCI address shown in "single" mode
    graph_layout: str = "auto"  # all GPUs overlaid per metric, or one plot per GPU ("multiples")
    graph_metric: str = "temp"  # the metric the small multiples show
    last_tab: str = "overview"
    alerts_enabled: bool = True  # desktop notifications: over crit, throttling, GPU gone, ECC errors
    alert_throttle_s: int = 30  # throttling must last this long before it alerts
    tray_icon: bool = True  # the hottest GPU's temperature in the system tray, where there is one

    # -- validation ---------------------------------------------------------------------------
    def normalized(self) -> Settings:
        """A copy with every out-of-range value replaced by its default (and a log line)."""
        default = Settings()
        out = Settings(**asdict(self))
        try:
            rate = float(out.rate_hz)
            if not (RATE_MIN_HZ <= rate <= RATE_MAX_HZ):
                raise ValueError(rate)
            out.rate_hz = rate
        except (TypeError, ValueError, OverflowError):  # OverflowError: an integer too big for a float
            log.warning("settings: sample rate %r out of range %.2f-%.0f Hz; using %.0f Hz",
                        self.rate_hz, RATE_MIN_HZ, RATE_MAX_HZ, default.rate_hz)
            out.rate_hz = default.rate_hz
        for name, allowed in (("temp_unit", TEMP_UNITS), ("theme", THEMES), ("graph_mode", GRAPH_MODES),
                              ("graph_layout", GRAPH_LAYOUTS), ("graph_metric", GRAPH_METRICS)):
            if getattr(out, name) not in allowed:
                log.warning("settings: %s=%r is not one of %s; using %r", name, getattr(out, name),
                            allowed, getattr(default, name))
                setattr(out, name, getattr(default, name))
        if out.graph_window_s not in GRAPH_WINDOWS_S:
            log.warning("settings: graph window %r s is not offered; using %d s", out.graph_window_s,
                        default.graph_window_s)
            out.graph_window_s = default.graph_window_s
        if not isinstance(out.selected_gpus, list) or not all(isinstance(p, str) for p in out.selected_gpus):
            out.selected_gpus = []
        for name in ("alerts_enabled", "tray_icon"):
            if not isinstance(getattr(out, name), bool):
                setattr(out, name, getattr(default, name))
        if isinstance(out.alert_throttle_s, bool) or not isinstance(out.alert_throttle_s, int) \
                or not 1 <= out.alert_throttle_s <= 3600:
            out.alert_throttle_s = default.alert_throttle_s
        for name in ("geometry", "window_state", "graph_gpu", "last_tab"):
            if not isinstance(getattr(out, name), str):
                setattr(out, name, getattr(default, name))
        return out

    # -- persistence --------------------------------------------------------------------------
    @classmethod
    def load(cls, path: Path | None = None) -> Settings:
        path = path or settings_path()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls()
        except (OSError, ValueError, RecursionError) as exc:  # RecursionError: JSON nested too deep
            log.warning("settings: cannot read %s (%s); using defaults", path, exc)
            return cls()
        if not isinstance(data, dict):
            log.warning("settings: %s does not hold an object; using defaults", path)
            return cls()
        known = {f.name for f in fields(cls)}
        raw = cls(**{k: v for k, v in data.items() if k in known})
        return raw.normalized()

    def save(self, path: Path | None = None) -> bool:
        """Write atomically (temp file + rename) so a crash never leaves half a file."""
        path = path or settings_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # 0600 as before: the user's own settings (a folder of recordings, window layout)
            atomic_write_text(path, json.dumps(asdict(self.normalized()), indent=2, sort_keys=True) + "\n", 0o600)
        except OSError as exc:
            log.warning("settings: cannot save %s: %s", path, exc)
            return False
        return True
