# SPDX-License-Identifier: MIT
"""The reconcile dialog and status-bar badge, offscreen, fed with real reports.

The dialog's image goes to ``$QWC_SCREENSHOTS`` when set (``docs/screenshots`` holds the one
the docs show), else to the test's temporary folder.
"""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication, QStatusBar

from app.theme import apply_theme, load_theme
from engine.enums import Side
from engine.reconcile import ReconcileReport, reconcile
from tests.unit.engine.test_reconcile import T0, StateDir, execution_report
from widgets.reconcile import ReconcileBadge, ReconcileDialog

pytestmark = pytest.mark.gui


def _demo_like(root: Path) -> StateDir:
    s = StateDir(root).open()
    s.order(1, "F81769-1", strategy_id=20170101, symbol="ESZ6")
    s.order(2, "F81769-2", strategy_id=20170101, symbol="NQZ6")
    s.order(3, "F81772-1", strategy_id=20170101, symbol="ESZ6")
    s.order(4, "F81772-2", strategy_id=42, symbol="NQZ6")
    return s


def report_with_differences(root: Path) -> ReconcileReport:
    s = _demo_like(root)
    for n in range(1, 6):
        s.fill(f"X{n}", "F81769-1", px_ticks=24000 + n)
    s.fill("X6", "F81769-2", qty=2, px_ticks=86001)
    # After a restart the venue numbers its ExecIDs from X1 again: new fills, not repeats.
    s.fill("X1", "F81772-1", px_ticks=23998)
    s.fill("X2", "F81772-1", px_ticks=23999, journal=False, seen=False)  # never received
    s.fill("X3", "F81772-2", qty=3, px_ticks=86004, strategy_id=7)  # fill names strategy 7
    # The venue resent X1 after the reconnect (PossDupFlag=Y): counted once.
    s.fix_seen(
        execution_report(
            20, "X1", "F81772-1", "ESZ6", Side.BUY, 1, 23998, T0 + 10**9, poss_dup=True
        )
    )
    return reconcile(s.close())


def report_agreeing(root: Path) -> ReconcileReport:
    s = _demo_like(root)
    s.fill("X1", "F81769-1")
    s.fill("X2", "F81769-2", qty=2)
    return reconcile(s.close())


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    target = os.environ.get("QWC_SCREENSHOTS")
    path = Path(target) if target else tmp_path / "shots"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def themed_app(qapp: QApplication) -> Iterator[QApplication]:
    palette, sheet, style = QPalette(qapp.palette()), qapp.styleSheet(), qapp.style().name()
    yield qapp
    qapp.setStyleSheet(sheet)
    qapp.setPalette(palette)
    qapp.setStyle(style)


def test_dialog_shows_rows_and_differing_fills(
    qtbot: object, themed_app: QApplication, tmp_path: Path, out_dir: Path
) -> None:
    apply_theme(themed_app, load_theme("dark"))
    report = report_with_differences(tmp_path / "state")
    dialog = ReconcileDialog()
    qtbot.addWidget(dialog)  # type: ignore[attr-defined]
    dialog.show_report(report)
    dialog.show()
    qtbot.waitExposed(dialog)  # type: ignore[attr-defined]

    assert dialog.verdict.text().startswith("2 differences on 2026-12-03")
    assert dialog.verdict.property("state") == "bad"
    cells = [
        [dialog.rows.item(r, c).text() for c in range(dialog.rows.columnCount())]
        for r in range(dialog.rows.rowCount())
    ]
    session = "FIX.4.4:QWCONSOLE->QWSIM"
    assert [session, "ESZ6", "20170101", "6 / +6", "6 / +6", "7 / +7"] == cells[0][:6]
    assert cells[0][6] == "journal -1 fill -1 lot; recovery -1 fill -1 lot (against the venue)"
    by_strategy = {c[2]: c for c in cells if c[1] == "NQZ6"}
    assert by_strategy["7"][3:6] == ["1 / +3", "1 / +3", "0 / +0"]
    assert by_strategy["42"][3:6] == ["0 / +0", "0 / +0", "1 / +3"]
    fills = [
        [dialog.fills.item(r, c).text() for c in range(dialog.fills.columnCount())]
        for r in range(dialog.fills.rowCount())
    ]
    assert [f[1:4] for f in fills] == [["X2", "F81772-1", "ESZ6"], ["X3", "F81772-2", "NQZ6"]]
    assert fills[0][-1] == "missing in journal, recovery"
    assert fills[1][-1] == "strategy 7 / 42 (journal / venue)"
    assert dialog.fills.isVisible()
    assert dialog.notes.text() == "• 1 resent execution report(s) (PossDupFlag=Y) counted once"
    assert dialog.rows.item(0, 6).foreground().color().name() == "#e5534b"

    dialog.resize(1180, dialog.sizeHint().height())
    qtbot.wait(50)  # type: ignore[attr-defined]
    image = dialog.grab()
    assert image.width() >= 1180
    image.save(str(out_dir / "reconcile.png"))


def test_dialog_for_an_agreeing_day_hides_the_fills_table(qtbot: object, tmp_path: Path) -> None:
    dialog = ReconcileDialog()
    qtbot.addWidget(dialog)  # type: ignore[attr-defined]
    dialog.show()
    dialog.show_report(report_agreeing(tmp_path / "state"))

    assert dialog.verdict.text().startswith("Reconciled 2026-12-03: 2 fills agree")
    assert dialog.verdict.property("state") == "ok"
    assert not dialog.fills.isVisible()
    assert {dialog.rows.item(r, 6).text() for r in range(dialog.rows.rowCount())} == {"agree"}

    dialog.show_error("/nowhere: no such directory")
    assert dialog.verdict.text() == "The check could not run: /nowhere: no such directory"
    assert dialog.rows.rowCount() == 0
    assert dialog.rerun.isEnabled()


def test_dialog_run_again_button_asks_for_a_new_check(qtbot: object) -> None:
    dialog = ReconcileDialog()
    qtbot.addWidget(dialog)  # type: ignore[attr-defined]
    dialog.show()
    with qtbot.waitSignal(dialog.rerun_requested, timeout=1000):  # type: ignore[attr-defined]
        qtbot.mouseClick(dialog.rerun, Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
    dialog.show_running("/state")
    assert not dialog.rerun.isEnabled()
    assert dialog.verdict.text() == "Reconciling /state…"


def test_badge_says_reconciled_or_how_many_differences_and_clicks(
    qtbot: object, tmp_path: Path
) -> None:
    bar = QStatusBar()
    qtbot.addWidget(bar)  # type: ignore[attr-defined]
    badge = ReconcileBadge()
    bar.addPermanentWidget(badge)
    bar.show()
    assert badge.text() == "Reconcile: not run"

    badge.set_report(report_agreeing(tmp_path / "a"))
    assert badge.text() == "Reconciled ✓"
    assert badge.property("state") == "ok"

    badge.set_report(report_with_differences(tmp_path / "b"))
    assert badge.text() == "Reconcile: 2 differences"
    assert badge.property("state") == "bad"
    assert badge.toolTip().startswith("2 differences on 2026-12-03")

    badge.set_error("state: no journal")
    assert (badge.text(), badge.toolTip(), badge.property("state")) == (
        "Reconcile: failed",
        "state: no journal",
        "warn",
    )
    with qtbot.waitSignal(badge.clicked, timeout=1000):  # type: ignore[attr-defined]
        qtbot.mouseClick(badge, Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
