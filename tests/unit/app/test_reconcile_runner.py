# SPDX-License-Identifier: MIT
"""The console's reconcile check: worker thread, badge, dialog, menu action, start-up run."""

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMainWindow

import app.reconcile
from app.controller import Controller
from app.main_window import MainWindow
from app.reconcile import ReconcileRunner
from app.settings import AppSettings
from engine.embedded import EmbeddedEngineClient
from engine.enums import EngineState
from engine.events import EngineStateChanged, EventRecord
from engine.reconcile import ReconcileReport
from tests.unit.engine.test_reconcile import StateDir
from widgets.reconcile import ReconcileBadge

pytestmark = pytest.mark.gui


def planted(root: Path) -> Path:
    s = StateDir(root).open()
    s.order(1, "A1")
    s.fill("X1", "A1")
    s.fill("X2", "A1", qty=2, journal=False, seen=False)  # sent by the venue, never received
    return s.close()


@pytest.fixture
def runner(qtbot: object, tmp_path: Path) -> ReconcileRunner:
    window = QMainWindow()
    qtbot.addWidget(window)  # type: ignore[attr-defined]
    badge = ReconcileBadge()
    window.statusBar().addPermanentWidget(badge)
    path = planted(tmp_path / "state")
    return ReconcileRunner(lambda: path, badge, window)


def test_check_runs_on_a_worker_thread_and_updates_badge_and_dialog(
    qtbot: object, runner: ReconcileRunner
) -> None:
    with qtbot.waitSignal(runner.finished, timeout=20_000) as blocker:  # type: ignore[attr-defined]
        assert runner.run()
        assert runner.running  # the GUI thread went on while the worker reads
        assert not runner.run()  # one check at a time
        assert runner.badge.text() == "Reconciling…"
    report = blocker.args[0]
    assert isinstance(report, ReconcileReport)
    assert not runner.running
    assert runner.badge.text() == "Reconcile: 1 difference"

    dialog = runner.open_dialog()
    assert dialog.isVisible()
    assert dialog.verdict.text() == report.verdict()
    assert dialog.fills.item(0, 1).text() == "X2"
    with qtbot.waitSignal(runner.finished, timeout=20_000):  # type: ignore[attr-defined]
        qtbot.mouseClick(dialog.rerun, Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
        assert dialog.verdict.text().startswith("Reconciling ")
    assert dialog.verdict.text() == report.verdict()


def test_check_of_a_directory_without_journal_says_why(qtbot: object, tmp_path: Path) -> None:
    window = QMainWindow()
    qtbot.addWidget(window)  # type: ignore[attr-defined]
    badge = ReconcileBadge()
    runner = ReconcileRunner(lambda: tmp_path / "empty", badge, window)
    with qtbot.waitSignal(runner.finished, timeout=20_000) as blocker:  # type: ignore[attr-defined]
        runner.run()
    assert blocker.args == [f"{tmp_path / 'empty'}: no such directory"]
    assert badge.text() == "Reconcile: failed"
    assert badge.toolTip() == blocker.args[0]
    dialog = runner.open_dialog()
    assert dialog.verdict.text() == f"The check could not run: {blocker.args[0]}"


def test_check_runs_once_after_the_engine_first_runs(
    qtbot: object, runner: ReconcileRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app.reconcile, "STARTUP_DELAY_MS", 10)
    running = EventRecord(
        seq=1, event=EngineStateChanged(ts_event=1, engine_id="e", state=EngineState.RUNNING)
    )
    with qtbot.waitSignal(runner.finished, timeout=20_000):  # type: ignore[attr-defined]
        runner.on_events([running])
    runner.on_events([running])  # a second RUNNING (a reconnect) does not schedule another
    qtbot.wait(100)  # type: ignore[attr-defined]
    assert not runner.running
    assert runner.badge.text() == "Reconcile: 1 difference"


def test_main_window_has_the_badge_and_engine_reconcile_action(
    qtbot: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = planted(tmp_path / "state")
    monkeypatch.setenv("QWCONSOLE_STATE_DIR", str(state))
    controller = Controller(EmbeddedEngineClient(heartbeat_interval_ms=50))
    controller.start()
    win = MainWindow(controller, AppSettings(tmp_path / "qwconsole.ini"))
    qtbot.addWidget(win)  # type: ignore[attr-defined]
    try:
        win.show()
        assert win.reconcile_badge.parent() is not None
        assert win.statusBar().isAncestorOf(win.reconcile_badge)
        engine_menu = next(
            a.menu() for a in win.menuBar().actions() if a.text().replace("&", "") == "Engine"
        )
        action = next(a for a in engine_menu.actions() if a.objectName() == "action_reconcile")
        assert action.text() == "&Reconcile…"
        with qtbot.waitSignal(win.reconciler.finished, timeout=20_000):  # type: ignore[attr-defined]
            action.trigger()
        dialog = win.reconciler.dialog
        assert dialog is not None
        assert dialog.isVisible()
        assert dialog.verdict.text().startswith("1 difference on 2026-12-03")
        assert win.reconcile_badge.text() == "Reconcile: 1 difference"
    finally:
        win.shutdown()
