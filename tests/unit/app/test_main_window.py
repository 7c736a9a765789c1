# SPDX-License-Identifier: MIT
"""The main window with a real embedded engine, offscreen."""

import asyncio
import itertools
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QThread
from PySide6.QtGui import QAction, QPalette
from PySide6.QtWidgets import QApplication, QToolButton

from app.controller import Controller
from app.main_window import MainWindow
from app.settings import AppSettings
from engine.client import ClientState
from engine.commands import CommandAck, SetHeartbeatInterval
from engine.embedded import EmbeddedEngineClient
from engine.events import EngineHeartbeat, EventRecord

pytestmark = pytest.mark.gui


@pytest.fixture
def window(qtbot: object, tmp_path: Path) -> Iterator[MainWindow]:
    controller = Controller(EmbeddedEngineClient(heartbeat_interval_ms=20))
    controller.start()
    win = MainWindow(controller, AppSettings(tmp_path / "qwconsole.ini"))
    qtbot.addWidget(win)  # type: ignore[attr-defined]
    win.show()
    qtbot.waitExposed(win)  # type: ignore[attr-defined]
    yield win
    win.shutdown()


def test_workspaces_switch_by_side_bar_click(qtbot: object, window: MainWindow) -> None:
    assert window.current_workspace == "monitor"
    for key in ("analyzer", "manager", "monitor"):
        button = window.sidebar.widgetForAction(window.workspace_actions[key])
        assert isinstance(button, QToolButton)
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
        assert window.current_workspace == key
        assert window.stack.currentWidget() is window.workspaces[key]
        assert button.isChecked()


def test_workspaces_switch_by_ctrl_number(qtbot: object, window: MainWindow) -> None:
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)  # type: ignore[attr-defined]
    for key, digit in (("manager", Qt.Key.Key_2), ("analyzer", Qt.Key.Key_3)):
        qtbot.keyClick(window, digit, Qt.KeyboardModifier.ControlModifier)  # type: ignore[attr-defined]
        assert window.current_workspace == key
    qtbot.keyClick(window, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)  # type: ignore[attr-defined]
    assert window.current_workspace == "monitor"


def test_theme_switch_changes_the_application_palette(window: MainWindow) -> None:
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    window.set_theme("dark")
    dark = app.palette().color(QPalette.ColorRole.Window)
    assert dark.lightness() < 60
    window.theme_actions["light"].trigger()
    light = app.palette().color(QPalette.ColorRole.Window)
    assert light.lightness() > 200
    assert window.theme == "light"
    assert "#0969da" in app.styleSheet()  # the light accent reached the style sheet
    window.toggle_theme()
    assert window.theme == "dark"
    assert app.palette().color(QPalette.ColorRole.Window) == dark


def test_engine_events_reach_the_gui_thread_in_order_and_in_batches(
    qtbot: object, window: MainWindow
) -> None:
    batches: list[list[EventRecord]] = []
    threads: set[object] = set()

    def record(batch: list[EventRecord]) -> None:
        threads.add(QThread.currentThread())
        threads.add(threading.current_thread().name)
        batches.append(batch)

    window.controller.bridge.events_received.connect(record)
    qtbot.waitUntil(lambda: sum(map(len, batches)) >= 5, timeout=5000)  # type: ignore[attr-defined]
    time.sleep(0.3)  # the GUI thread is busy: ~15 heartbeats pile up in the engine queue
    n_before = len(batches)
    qtbot.waitUntil(lambda: len(batches) > n_before, timeout=5000)  # type: ignore[attr-defined]
    assert len(batches[n_before]) >= 8  # delivered together, as one batch
    seqs = [r.seq for b in batches for r in b]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert threads == {QApplication.instance().thread(), "MainThread"}  # type: ignore[union-attr]
    assert len(batches) < len(seqs)
    beats = [r.event for b in batches for r in b if isinstance(r.event, EngineHeartbeat)]
    assert window.status.last_heartbeat == beats[-1]
    assert window.status.clock_label.text().endswith(" UTC")
    assert "running" in window.status.engine_label.text()


def test_bridge_never_delivers_faster_than_its_interval(qtbot: object, window: MainWindow) -> None:
    stamps: list[float] = []
    window.controller.bridge.events_received.connect(lambda _b: stamps.append(time.monotonic()))
    result = window.controller.client.send(SetHeartbeatInterval(interval_ms=10)).result(2)
    assert isinstance(result, CommandAck)
    qtbot.waitUntil(lambda: len(stamps) >= 12, timeout=5000)  # type: ignore[attr-defined]
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    assert min(gaps) >= 0.016  # never more than one batch per frame (25 ms interval)


def test_shutdown_stops_the_engine_thread_and_saves_settings(
    window: MainWindow, tmp_path: Path
) -> None:
    thread = window.controller.client.thread  # type: ignore[attr-defined]
    assert thread is not None
    assert thread.is_alive()
    window.show_workspace("analyzer")
    window.close()
    assert not thread.is_alive()
    assert window.controller.client.state is ClientState.DISCONNECTED
    assert "workspace=analyzer" in (tmp_path / "qwconsole.ini").read_text()


def test_status_bar_shows_engine_not_running_after_shutdown(
    qtbot: object, window: MainWindow
) -> None:
    window.shutdown()
    window.status.on_client_state(window.controller.client.state)
    assert "not running" in window.status.engine_label.text()
    assert window.status.engine_label.property("state") == "bad"


async def test_ping_round_trip_from_the_qasync_loop(qloop: object, window: MainWindow) -> None:
    messages: list[str] = []
    window.controller.message.connect(messages.append)
    result = await window.controller.ping()
    assert isinstance(result, CommandAck)
    assert messages
    assert messages[0].startswith("Engine answered ping in ")
    await asyncio.sleep(0)


def test_about_box_lists_versions(window: MainWindow) -> None:
    box = window.show_about()
    text = box.text()
    for component in ("Python", "Qt", "PySide6-Essentials", "numba", "numpy", "h5py"):
        assert component in text
    box.close()


def test_unknown_workspace_is_refused_by_name(window: MainWindow) -> None:
    with pytest.raises(ValueError, match="unknown workspace 'ladder'; choose one of monitor"):
        window.show_workspace("ladder")


def test_geometry_and_dock_layout_persist_between_windows(qtbot: object, tmp_path: Path) -> None:
    ini = tmp_path / "layout.ini"

    def make() -> MainWindow:
        controller = Controller(EmbeddedEngineClient())
        controller.start()
        win = MainWindow(controller, AppSettings(ini))
        qtbot.addWidget(win)  # type: ignore[attr-defined]
        win.show()
        qtbot.waitExposed(win)  # type: ignore[attr-defined]
        return win

    first = make()
    first.resize(781, 733)  # above the smallest size that keeps every dock usable
    first.monitor.events_dock.hide()
    qtbot.waitUntil(lambda: first.size().width() == 781)  # type: ignore[attr-defined]
    first.close()
    second = make()
    try:
        assert (second.width(), second.height()) == (781, 733)
        assert second.monitor.events_dock.isHidden()
    finally:
        second.close()


# ---------------------------------------------------------------- opening files, layout, keys
def _store(path: Path) -> Path:
    from analyzer.synthetic import NS, SyntheticSpec
    from tests.unit.analyzer.conftest import write_synthetic

    write_synthetic(path, "ESZ6", SyntheticSpec(quotes=5_000, start_ns=1_764_576_000 * NS))
    return path


def test_open_paths_charts_the_first_instrument_and_the_store_is_remembered(
    qtbot: object, window: MainWindow, tmp_path: Path
) -> None:
    store = _store(tmp_path / "ticks.h5")
    assert window.open_paths([str(store), str(tmp_path / "notes.txt")]) == ["analyzer"]
    analyzer = window.analyzer
    assert [e.symbol for e in analyzer.browser.entries] == ["ESZ6"]
    qtbot.waitUntil(lambda: len(analyzer.days) == 1, timeout=20_000)  # type: ignore[attr-defined]
    assert analyzer.days[0].symbol == "ESZ6"
    assert window.settings.recent("stores") == [str(store)]
    window.save_settings()
    # The next start opens it again; a store that is gone is forgotten, not an error.
    gone = tmp_path / "gone.h5"
    window.settings.remember("stores", str(gone))
    again = MainWindow(window.controller, AppSettings(tmp_path / "qwconsole.ini"))
    qtbot.addWidget(again)  # type: ignore[attr-defined]
    assert again.settings.recent("stores") == [str(store), str(gone)]
    assert [e.store for e in again.analyzer.browser.entries] == [str(store)]
    assert again.settings.recent("stores") == [str(store)]


def test_open_paths_sends_session_files_to_the_manager(window: MainWindow) -> None:
    root = Path(__file__).resolve().parents[3]
    cfg = root / "resources" / "fix" / "sessions.cfg"
    assert window.open_paths([str(cfg)]) == ["manager"]
    manager = window.manager
    assert manager.tabs.currentWidget() is manager.sessions
    assert manager.sessions.cfg is not None
    assert Path(manager.sessions.cfg.source) == cfg


def test_reset_layout_brings_back_hidden_panels(qtbot: object, window: MainWindow) -> None:
    dock = window.monitor.events_dock
    visible = dock.isVisible()
    dock.setVisible(not visible)
    window.resize(900, 600)
    window.reset_layout()
    qtbot.waitUntil(lambda: dock.isVisible() == visible)  # type: ignore[attr-defined]
    assert (window.width(), window.height()) == (1400, 860)


def test_file_export_writes_the_table_last_clicked_in(
    qtbot: object, window: MainWindow, tmp_path: Path
) -> None:
    import csv

    from widgets.tables.view import DataTableView

    action = window.findChild(QAction, "action_export_csv")
    assert action is not None
    assert action.shortcut().toString() == "Ctrl+E"
    action.trigger()  # nothing clicked yet: a word on the status bar, no dialog
    assert "click in a table first" in window.statusBar().currentMessage()
    view = window.monitor.log_view.table
    assert isinstance(view, DataTableView)
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: window._last_table is view)  # type: ignore[attr-defined]
    dialog = window.export_table()
    assert dialog is not None
    target = tmp_path / "log.csv"
    dialog.fileSelected.emit(str(target))
    dialog.close()
    with target.open(newline="") as f:
        rows = list(csv.reader(f))
    model = view.model()
    assert rows[0] == [
        model.headerData(c, Qt.Orientation.Horizontal) for c in range(model.columnCount())
    ]
    assert len(rows) == 1 + model.rowCount()
    assert ("Export table to CSV", "Ctrl+E") in {(n, k) for _w, n, k in window.shortcuts()}


def test_f1_lists_the_keyboard_shortcuts(window: MainWindow) -> None:
    rows = {(name, keys) for _where, name, keys in window.shortcuts()}
    assert ("Quit", "Ctrl+Q") in rows
    assert ("Keyboard shortcuts", "F1") in rows
    assert ("Trade Analyzer", "Ctrl+3") in rows
    box = window.show_shortcuts()
    assert "Ctrl+Shift+L" in box.text()
    box.close()


def test_sound_on_fills_is_off_until_chosen_and_remembered(
    window: MainWindow, tmp_path: Path
) -> None:
    from engine.enums import OrdStatus
    from engine.events import OrderChanged
    from tests.unit.widgets.builders import fill, order

    beeps: list[int] = []
    window.beep = lambda: beeps.append(1)
    o = order(7)
    filled = [EventRecord(1, fill(o, 1, 2))]
    rejected = [
        EventRecord(
            2,
            OrderChanged(
                ts_event=1, order=order(8, status=OrdStatus.REJECTED), change="rejected: limit"
            ),
        )
    ]
    quiet = [EventRecord(3, OrderChanged(ts_event=1, order=o, change="ack"))]
    assert not window.sound_action.isChecked()
    window._sound_for(filled)
    assert beeps == []  # off until chosen
    window.sound_action.setChecked(True)
    for batch in (filled, rejected, quiet, filled + rejected):
        window._sound_for(batch)
    assert beeps == [1, 1, 1]  # a fill, a reject, nothing for an ack, once for a batch
    window.save_settings()
    assert AppSettings(tmp_path / "qwconsole.ini").sound
