"""The one byte formatter (window, reports, bundle preview): binary units, N/A for what is not a size."""

from __future__ import annotations

import math

import pytest

from rocmdesk.wording import NA, fmt_bytes


@pytest.mark.parametrize(("value", "text"), [
    (0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"), (100 * 1024, "100 KiB"),
    (1023.9 * 1024, "1.0 MiB"),  # never "1024 KiB"
    (307 * 2**20, "307 MiB"), (1.5 * 2**30, "1.5 GiB"), (24 << 30, "24.0 GiB"), (192 << 30, "192 GiB"),
    (99.97 * 2**30, "100 GiB"), (3 << 40, "3.0 TiB"), (5 << 60, "5120 PiB"), (-2048, "-2.0 KiB"),
])
def test_sizes(value, text):
    assert fmt_bytes(value) == text


@pytest.mark.parametrize("value", [None, math.nan, math.inf, -math.inf, True, False, "12", b"1", [1]])
def test_what_is_not_a_size_is_na_never_zero(value):
    assert fmt_bytes(value) == NA
