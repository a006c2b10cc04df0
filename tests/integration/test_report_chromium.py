"""The HTML report renders in a real browser (Debian's chromium, headless) and shows the inline SVG graphs."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib

import numpy as np
import pytest

from rocmdesk.host import HostRoot
from rocmdesk.report.data import build_report
from rocmdesk.report.html import render_html
from rocmdesk.report.svg_charts import PALETTE
from rocmdesk.telemetry.recording import load_recording
from tests.unit.report.workstation import make_workstation

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def read_png(data: bytes) -> np.ndarray:
    """Decode an 8-bit RGB/RGBA PNG with any row filters (what chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    bpp = 3 if color == 2 else 4
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(height, width * bpp + 1)
    out = np.zeros((height, width * bpp), dtype=np.int32)
    for y in range(height):
        f, row = raw[y, 0], raw[y, 1:].astype(np.int32)
        prev = out[y - 1] if y else np.zeros(width * bpp, dtype=np.int32)
        if f == 0:
            cur = row
        elif f == 2:
            cur = (row + prev) & 0xFF
        else:
            cur = np.zeros_like(row)
            for x in range(width * bpp):
                a = cur[x - bpp] if x >= bpp else 0
                b = prev[x]
                c = prev[x - bpp] if x >= bpp else 0
                if f == 1:
                    pred = a
                elif f == 3:
                    pred = (a + b) // 2
                else:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                cur[x] = (row[x] + pred) & 0xFF
        out[y] = cur
    return out.reshape(height, width, bpp)[:, :, :3].astype(np.uint8)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/test.sh installs it)")
def test_html_report_renders_with_graphs_in_headless_chromium(tmp_path):
    root = make_workstation(tmp_path / "root", comfy_torch="cuda")
    report = build_report(HostRoot(root), history=load_recording("mi300x-node"))
    page = tmp_path / "report.html"
    page.write_text(render_html(report), encoding="utf-8")
    shot = tmp_path / "shot.png"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--hide-scrollbars", f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
           "--window-size=1280,2600", page.as_uri()]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert shot.is_file(), f"chromium wrote no screenshot: {result.stderr[-2000:]}"
    pixels = read_png(shot.read_bytes())
    assert pixels.shape[1] == 1280
    assert pixels.std() > 10, "the screenshot is blank"
    # the graphs' line colours appear in quantity: the inline SVG was drawn
    rgb = [tuple(int(c[i:i + 2], 16) for i in (1, 3, 5)) for c in PALETTE]
    near = lambda color: (np.abs(pixels.astype(int) - color).sum(axis=2) < 30)  # noqa: E731
    counts = [int(near(c).sum()) for c in rgb]
    assert sum(c > 300 for c in counts) >= 6, counts
    rows = np.nonzero(near(rgb[0]).any(axis=1))[0]
    chart_area = pixels[rows.min():rows.max() + 1]
    assert chart_area.std() > 20
