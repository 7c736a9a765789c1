# SPDX-License-Identifier: MIT
"""Render the Monitor with a realistic session in both themes and save the PNGs.

The images go to ``$QWC_SCREENSHOTS`` when set (e.g. ``/tmp/monitor-shots``), else to the
test's temporary folder; look at them after changing a view.
"""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

from app.theme import apply_theme, load_theme
from engine.enums import KillLevel
from tests.unit.widgets.builders import demo_events, records
from widgets.monitor.workspace import MonitorWorkspace

pytestmark = pytest.mark.gui


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    target = os.environ.get("QWC_SCREENSHOTS")
    path = Path(target) if target else tmp_path
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def themed_app(qapp: QApplication) -> Iterator[QApplication]:
    palette, sheet, style = QPalette(qapp.palette()), qapp.styleSheet(), qapp.style().name()
    yield qapp
    qapp.setStyleSheet(sheet)
    qapp.setPalette(palette)
    qapp.setStyle(style)


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_monitor_renders_a_session_in_both_themes(
    qtbot: object, themed_app: QApplication, out_dir: Path, theme: str
) -> None:
    apply_theme(themed_app, load_theme(theme))
    empty = MonitorWorkspace()
    qtbot.addWidget(empty)  # type: ignore[attr-defined]
    empty.resize(1920, 1080)
    empty.show()
    qtbot.waitExposed(empty)  # type: ignore[attr-defined]
    empty.grab().save(str(out_dir / f"monitor-{theme}-empty.png"))

    ws = MonitorWorkspace()
    qtbot.addWidget(ws)  # type: ignore[attr-defined]
    ws.resize(1920, 1080)
    ws.show()
    qtbot.waitExposed(ws)  # type: ignore[attr-defined]
    ws.on_events(records(demo_events()))
    ws.flush()
    ws.orders_view.set_working_only(False)
    ws.orders_view.table.selectRow(3)
    qtbot.wait(50)  # type: ignore[attr-defined]  # let layouts follow the new texts
    image = ws.grab().toImage()
    assert image.width() == 1920
    ws.grab().save(str(out_dir / f"monitor-{theme}.png"))
    # The other tabs of the bottom row.
    ws.logs_dock.raise_()
    ws.kill_switch.press(KillLevel.FLATTEN)  # armed: the button asks for confirmation
    qtbot.wait(20)  # type: ignore[attr-defined]
    ws.grab().save(str(out_dir / f"monitor-{theme}-logs.png"))
    ws.kill_switch.disarm()
    ws.fix_dock.raise_()
    ws.fix_view.table.selectRow(0)
    qtbot.wait(20)  # type: ignore[attr-defined]
    ws.grab().save(str(out_dir / f"monitor-{theme}-fix.png"))
    # A sell cell is drawn in the theme's ask colour (tones reach the cells).
    ask = QColor(load_theme(theme).colors["ask"])
    assert ws.orders_view.table.tone_color("ask") == ask
