"""Dependency floors: pyproject.toml and the .deb's Depends say the same, and both fit Debian 12.

Debian 12's platformdirs is 2.6, which has no ``user_pictures_dir`` (3.3+): the Screenshot button
raised AttributeError there while the .deb depended on platformdirs unversioned. The floors now
are the versions Debian 12 ships; ``pictures_dir`` works without the newer API.
"""

from __future__ import annotations

import re
import types
from pathlib import Path

import pytest

from rocmdesk import xdg_paths

TOP = Path(__file__).resolve().parents[2]
# PyPI name -> Debian package, for the dependencies the .deb takes from the distribution
DEBIAN_NAMES = {"psutil": "python3-psutil", "pyudev": "python3-pyudev", "pyyaml": "python3-yaml",
                "packaging": "python3-packaging", "platformdirs": "python3-platformdirs",
                "zstandard": "python3-zstandard", "lz4": "python3-lz4",
                "prometheus_client": "python3-prometheus-client"}
# What Debian 12 (bookworm) ships (apt-cache policy on Debian 12); every floor must be at most this.
DEBIAN_12 = {"psutil": "5.9.4", "pyudev": "0.24.0", "pyyaml": "6.0", "packaging": "23.0", "platformdirs": "2.6.0",
             "zstandard": "0.20.0", "lz4": "4.0.2", "prometheus_client": "0.16.0"}
# What Ubuntu 24.04 (noble) ships (packages.ubuntu.com/noble, release pocket); the floors must fit it too.
UBUNTU_24_04 = {"psutil": "5.9.8", "pyudev": "0.24.0", "pyyaml": "6.0.1", "packaging": "24.0", "platformdirs": "4.2.0",
                "zstandard": "0.22.0", "lz4": "4.0.2", "prometheus_client": "0.19.0"}


def _floors() -> dict[str, str]:
    text = (TOP / "pyproject.toml").read_text()
    block = text[text.index("\ndependencies = ["):].split("]", 1)[0]  # tomllib is 3.11+, we support 3.10
    out = {}
    for spec in re.findall(r'^\s*"([^"]+)"', block, re.M):
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*>=\s*([0-9.]+).*", spec)
        assert match, f"dependency without a floor: {spec}"
        out[match.group(1).lower()] = match.group(2)
    return out


def _deb_depends() -> dict[str, str]:
    text = (TOP / "packaging" / "build-deb.sh").read_text()
    line = next(line for line in text.splitlines() if line.startswith("Depends:"))
    return dict(re.findall(r"(python3-[a-z0-9-]+) \(>= ([0-9.]+)\)", line))


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def test_every_distribution_dependency_is_versioned_in_the_deb_like_pyproject():
    floors, depends = _floors(), _deb_depends()
    for pypi, deb in DEBIAN_NAMES.items():
        assert pypi in floors, pypi
        assert deb in depends, f"{deb} has no version in the .deb's Depends"
        assert _version(depends[deb]) == _version(floors[pypi]), (deb, depends[deb], floors[pypi])


@pytest.mark.parametrize(("name", "shipped"), [("Debian 12", DEBIAN_12), ("Ubuntu 24.04", UBUNTU_24_04)])
def test_floors_are_met_by_both_distributions(name, shipped):
    floors = _floors()
    assert set(shipped) == set(DEBIAN_NAMES)
    for pypi, version in shipped.items():
        assert _version(floors[pypi]) <= _version(version), f"{pypi} floor {floors[pypi]} > {name}'s {version}"


def test_every_floor_says_what_each_distribution_ships():
    """A floor without the two distributions' versions beside it was not checked against them."""
    text = (TOP / "pyproject.toml").read_text()
    block = text[text.index("\ndependencies = ["):].split("]", 1)[0]
    for pypi in DEBIAN_NAMES:
        at = next(i for i, line in enumerate(block.splitlines()) if line.strip().lower().startswith(f'"{pypi}'))
        lines = block.splitlines()
        said = lines[at] + " ".join(line for line in lines[max(0, at - 3):at] if line.strip().startswith("#"))
        for distro, shipped in (("Debian 12", DEBIAN_12), ("Ubuntu 24.04", UBUNTU_24_04)):
            assert f"{distro}: {shipped[pypi].split('+')[0]}" in said, f"{pypi}: no '{distro}: {shipped[pypi]}'"


def test_pictures_dir_without_user_pictures_dir_reads_user_dirs(tmp_path, monkeypatch):
    """platformdirs 2.6 (Debian 12): no user_pictures_dir; XDG's user-dirs.dirs is read instead."""
    fake = types.SimpleNamespace(user_config_dir=lambda *a, **k: str(tmp_path / "cfg"))
    monkeypatch.setattr(xdg_paths, "platformdirs", fake)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))
    assert xdg_paths.pictures_dir() == tmp_path  # no user-dirs file: the home folder
    (tmp_path / ".config").mkdir()
    (tmp_path / ".config" / "user-dirs.dirs").write_text(
        '# written by xdg-user-dirs-update\nXDG_DESKTOP_DIR="$HOME/Desktop"\nXDG_PICTURES_DIR="$HOME/Bilder"\n')
    assert xdg_paths.pictures_dir() == tmp_path / "Bilder"
    (tmp_path / ".config" / "user-dirs.dirs").write_text('XDG_PICTURES_DIR="$HOME/"\n')  # "disabled": home
    assert xdg_paths.pictures_dir() == tmp_path
    (tmp_path / ".config" / "user-dirs.dirs").write_bytes(b"\xff\xfe garbage = = \n\x00")
    assert xdg_paths.pictures_dir() == tmp_path


@pytest.mark.parametrize("answer", ["", RuntimeError("broken")])
def test_pictures_dir_with_a_failing_or_empty_platformdirs_is_home(tmp_path, monkeypatch, answer):
    def finder():
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(xdg_paths, "platformdirs", types.SimpleNamespace(user_pictures_dir=finder))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert xdg_paths.pictures_dir() == tmp_path
