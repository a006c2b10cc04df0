"""Tuning profiles: named sets of power cap / performance level / power profile, saved as YAML.

Stored one file per profile in the user's config folder (``~/.config/rocmdesk/tuning/NAME.yaml``) and
applied on demand through the helper's tuning actions, one GPU at a time.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from rocmdesk.atomic_file import atomic_write_text
from rocmdesk.fixes.actions import PERFORMANCE_LEVELS
from rocmdesk.xdg_paths import config_dir

log = logging.getLogger(__name__)

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}", re.ASCII)
PCI_RE = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", re.ASCII)


class ProfileError(ValueError):
    pass


@dataclass(slots=True)
class GpuTuning:
    power_cap_w: int | None = None
    performance_level: str | None = None
    power_profile: int | None = None

    def actions(self, pci: str) -> list[tuple[str, ...]]:
        """Helper actions that apply this tuning (power profile implies manual, so it goes after the level)."""
        out: list[tuple[str, ...]] = []
        if self.power_cap_w is not None:
            out.append(("set-power-cap", pci, str(self.power_cap_w)))
        if self.performance_level is not None and self.power_profile is None:
            out.append(("set-performance-level", pci, self.performance_level))
        if self.power_profile is not None:
            out.append(("set-power-profile", pci, str(self.power_profile)))
        return out


@dataclass(slots=True)
class TuningProfile:
    name: str
    gpus: dict[str, GpuTuning] = field(default_factory=dict)  # PCI address -> settings

    def to_yaml(self) -> str:
        data = {"name": self.name, "gpus": {
            pci: {k: v for k, v in (("power_cap_w", t.power_cap_w), ("performance_level", t.performance_level),
                                    ("power_profile", t.power_profile)) if v is not None}
            for pci, t in self.gpus.items()}}
        return yaml.safe_dump(data, sort_keys=False)

    @classmethod
    def from_yaml(cls, text: str) -> TuningProfile:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ProfileError(f"not valid YAML: {exc}") from exc
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            raise ProfileError("a profile needs a name")
        name = data["name"]
        if not NAME_RE.fullmatch(name):
            raise ProfileError(f"bad profile name {name!r}")
        gpus = {}
        for pci, settings in (data.get("gpus") or {}).items():
            if not isinstance(pci, str) or not PCI_RE.fullmatch(pci) or not isinstance(settings, dict):
                raise ProfileError(f"bad GPU entry {pci!r}")
            gpus[pci] = _gpu_tuning(pci, settings)
        return cls(name, gpus)


def _gpu_tuning(pci: str, settings: dict) -> GpuTuning:
    cap, level, profile = settings.get("power_cap_w"), settings.get("performance_level"), settings.get("power_profile")
    if cap is not None and (type(cap) is not int or not 0 < cap < 10000):
        raise ProfileError(f"{pci}: power_cap_w must be whole watts")
    if level is not None and level not in PERFORMANCE_LEVELS:
        raise ProfileError(f"{pci}: unknown performance level {level!r}")
    if profile is not None and (type(profile) is not int or not 0 <= profile < 100):
        raise ProfileError(f"{pci}: power_profile must be a profile number")
    return GpuTuning(cap, level, profile)


def profiles_dir() -> Path:
    return config_dir() / "tuning"


def _file_for(name: str, folder: Path) -> Path:
    if not NAME_RE.fullmatch(name):
        raise ProfileError(f"bad profile name {name!r}")
    return folder / (re.sub(r"[^A-Za-z0-9_.-]", "_", name) + ".yaml")


def save_profile(profile: TuningProfile, folder: Path | None = None) -> Path:
    folder = folder or profiles_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = _file_for(profile.name, folder)
    atomic_write_text(path, profile.to_yaml())
    return path


def load_profiles(folder: Path | None = None) -> list[TuningProfile]:
    """Every readable profile, by name; broken files are logged and skipped."""
    folder = folder or profiles_dir()
    out = []
    for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
        try:
            out.append(TuningProfile.from_yaml(path.read_text(encoding="utf-8")))
        except (OSError, ProfileError) as exc:
            log.warning("skipping tuning profile %s: %s", path, exc)
    return sorted(out, key=lambda p: p.name.lower())


def delete_profile(name: str, folder: Path | None = None) -> None:
    path = _file_for(name, folder or profiles_dir())
    path.unlink(missing_ok=True)
