# SPDX-License-Identifier: MIT
"""Render the application icon (resources/icons/qwconsole.svg) into the PNG sizes desktops use.

    QT_QPA_PLATFORM=offscreen .venv/bin/python packaging/render_icons.py

Writes ``resources/icons/hicolor/<n>x<n>/apps/qwconsole.png`` (the freedesktop icon-theme
layout, copied as is into the bundle's ``share/icons``). Run it after editing the SVG; the PNGs
are kept in the repository so a build needs no rendering.
"""

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

ICONS = Path(__file__).resolve().parent.parent / "resources" / "icons"
NAME = "qwconsole"
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def render(svg: Path, size: int) -> QImage:
    """Return ``svg`` drawn on a transparent ``size`` x ``size`` image."""
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"render_icons: {svg} is not a valid SVG")
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    return image


def main(svg: Path = ICONS / f"{NAME}.svg", out: Path = ICONS / "hicolor") -> int:
    _app = QGuiApplication.instance() or QGuiApplication([])
    for size in SIZES:
        path = out / f"{size}x{size}" / "apps" / f"{NAME}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        if not render(svg, size).save(str(path)):
            raise SystemExit(f"render_icons: cannot write {path}")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*(Path(a) for a in sys.argv[1:3])))
