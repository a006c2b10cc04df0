"""Fixtures shared by the bundle-opening tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def tmp_dir(tmp_path):
    """The private folder a bundle is opened into (its parent is checked for stray writes)."""
    folder = tmp_path / "private"
    folder.mkdir()
    return folder
