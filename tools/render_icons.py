"""Render resources/icons/rocmdesk.svg to the PNG sizes desktops look for (hicolor theme)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
ICONS = Path(__file__).resolve().parent.parent / "resources" / "icons"


def main() -> int:
    app = QGuiApplication(sys.argv)  # noqa: F841  (QSvgRenderer needs an application)
    renderer = QSvgRenderer(str(ICONS / "rocmdesk.svg"))
    for size in SIZES:
        image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter)
        painter.end()
        out = ICONS / "hicolor" / f"{size}x{size}" / "apps" / "rocmdesk.png"
        out.parent.mkdir(parents=True, exist_ok=True)
        image.save(str(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
