# SPDX-License-Identifier: MIT
"""Fast start: lazy workspaces, their kept layouts, and the engine started behind the window."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QByteArray, Qt
from PySide6.QtWidgets import QApplication, QDockWidget

from analyzer.views.workspace import AnalyzerWorkspace
from app.controller import Controller
from app.main_window import LAZY_WORKSPACES, MainWindow, WorkspacePlaceholder
from app.process import seconds_since_process_start
from app.settings import AppSettings
from engine.client import ClientState
from engine.core import Engine
from engine.embedded import EmbeddedEngineClient
from widgets.manager.workspace import ManagerWorkspace

pytestmark = pytest.mark.gui


def make_window(qtbot: object, ini: Path, controller: Controller | None = None) -> MainWindow:
    if controller is None:
        controller = Controller(EmbeddedEngineClient(heartbeat_interval_ms=50))
        controller.start()
    win = MainWindow(controller, AppSettings(ini))
    qtbot.addWidget(win)  # type: ignore[attr-defined]
    win.show()
    qtbot.waitExposed(win)  # type: ignore[attr-defined]
    return win


def state(controller: Controller) -> ClientState:
    """Return the client's state (a call: mypy would narrow a repeated attribute read)."""
    return controller.client.state


@pytest.fixture
def window(qtbot: object, tmp_path: Path) -> Iterator[MainWindow]:
    win = make_window(qtbot, tmp_path / "qwconsole.ini")
    yield win
    win.shutdown()


def test_only_the_monitor_is_built_with_the_window(window: MainWindow) -> None:
    assert window.is_built("monitor")
    for key in LAZY_WORKSPACES:
        assert not window.is_built(key)
        assert isinstance(window.workspaces[key], WorkspacePlaceholder)
    assert window.stack.count() == 3
    assert window.findChildren(ManagerWorkspace) == []
    assert window.findChildren(AnalyzerWorkspace) == []


def test_ctrl_number_builds_a_lazy_workspace_once_and_shows_it(
    qtbot: object, window: MainWindow
) -> None:
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)  # type: ignore[attr-defined]
    placeholder = window.workspaces["analyzer"]
    qtbot.keyClick(window, Qt.Key.Key_3, Qt.KeyboardModifier.ControlModifier)  # type: ignore[attr-defined]
    analyzer = window.workspaces["analyzer"]
    assert isinstance(analyzer, AnalyzerWorkspace)
    assert window.current_workspace == "analyzer"
    assert window.stack.currentWidget() is analyzer
    assert window.stack.indexOf(placeholder) == -1  # replaced, not added
    assert window.stack.count() == 3
    assert window.windowTitle() == "qwconsole — Trade Analyzer"
    qtbot.keyClick(window, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)  # type: ignore[attr-defined]
    qtbot.keyClick(window, Qt.Key.Key_3, Qt.KeyboardModifier.ControlModifier)  # type: ignore[attr-defined]
    assert window.workspaces["analyzer"] is analyzer  # built once
    assert not window.is_built("manager")


def test_workspace_of_the_last_session_is_built_after_the_first_frame(
    qtbot: object, tmp_path: Path
) -> None:
    ini = tmp_path / "qwconsole.ini"
    settings = AppSettings(ini)
    settings.workspace = "analyzer"
    settings.sync()
    controller = Controller(EmbeddedEngineClient(heartbeat_interval_ms=50))
    controller.start()
    window = MainWindow(controller, AppSettings(ini))
    qtbot.addWidget(window)  # type: ignore[attr-defined]
    try:
        assert window.current_workspace == "analyzer"
        assert not window.is_built("analyzer")  # the window appears first, with the placeholder
        window.show()
        qtbot.waitUntil(lambda: window.is_built("analyzer"), timeout=10_000)  # type: ignore[attr-defined]
        assert window.stack.currentWidget() is window.analyzer
        assert not window.is_built("manager")
    finally:
        window.shutdown()


def test_the_workspace_properties_build_on_first_use(window: MainWindow) -> None:
    manager = window.manager
    assert isinstance(manager, ManagerWorkspace)
    assert window.is_built("manager")
    assert window.current_workspace == "monitor"  # built, not shown
    assert window.stack.currentWidget() is window.monitor
    assert window.manager is manager
    with pytest.raises(ValueError, match="unknown workspace 'ladder'"):
        window.workspace("ladder")


def test_background_loading_starts_once_the_engine_runs(qtbot: object, tmp_path: Path) -> None:
    controller = Controller(EmbeddedEngineClient(heartbeat_interval_ms=50))
    window = make_window(qtbot, tmp_path / "qwconsole.ini", controller)
    try:
        qtbot.wait(300)  # type: ignore[attr-defined]
        assert not window.background_loaded.is_set()  # no engine running yet: nothing loads
        controller.start_in_background()
        qtbot.waitUntil(window.background_loaded.is_set, timeout=15_000)  # type: ignore[attr-defined]
        assert window.describer(35, b"D") == ("MsgType", "New order single")
    finally:
        window.shutdown()


def test_layout_of_a_workspace_never_built_is_kept_and_restored(
    qtbot: object, tmp_path: Path
) -> None:
    ini = tmp_path / "layout.ini"
    first = make_window(qtbot, ini)
    first.show_workspace("analyzer")
    dock = first.analyzer.findChild(QDockWidget, "analyzerBrowserDock")
    assert isinstance(dock, QDockWidget)
    dock.hide()
    first.show_workspace("monitor")
    first.close()
    stored = AppSettings(ini).geometry("analyzer/state")
    assert isinstance(stored, QByteArray)

    second = make_window(qtbot, ini)  # opens on the Monitor: the Analyzer is never built
    assert not second.is_built("analyzer")
    second.close()
    assert AppSettings(ini).geometry("analyzer/state") == stored

    third = make_window(qtbot, ini)
    try:
        third.show_workspace("analyzer")
        restored = third.analyzer.findChild(QDockWidget, "analyzerBrowserDock")
        assert isinstance(restored, QDockWidget)
        assert restored.isHidden()
    finally:
        third.close()


def test_engine_starts_behind_the_shown_window(qtbot: object, tmp_path: Path) -> None:
    controller = Controller(EmbeddedEngineClient(heartbeat_interval_ms=50))
    window = make_window(qtbot, tmp_path / "qwconsole.ini", controller)
    try:
        assert state(controller) is ClientState.IDLE
        assert "not running" in window.status.engine_label.text()
        with qtbot.waitSignal(controller.started, timeout=10_000):  # type: ignore[attr-defined]
            controller.start_in_background()
        assert state(controller) is ClientState.CONNECTED
        qtbot.waitUntil(  # type: ignore[attr-defined]
            lambda: (
                "running" in window.status.engine_label.text()
                and "not running" not in window.status.engine_label.text()
            ),
            timeout=5000,
        )
    finally:
        window.shutdown()
    assert state(controller) is ClientState.DISCONNECTED


def test_engine_that_fails_to_start_reports_why(qtbot: object) -> None:
    def broken(_engine: Engine) -> None:
        raise ValueError("demo.toml line 3: port 99999 is out of range")

    controller = Controller(EmbeddedEngineClient(configure=broken))
    try:
        with qtbot.waitSignal(controller.start_failed, timeout=15_000) as blocker:  # type: ignore[attr-defined]
            controller.start_in_background()
        (reason,) = blocker.args
        assert "port 99999 is out of range" in reason
        assert state(controller) is ClientState.DISCONNECTED
    finally:
        controller.shutdown(timeout_s=2.0)


def test_shutdown_while_the_engine_starts_waits_for_it_and_stops_it(qtbot: object) -> None:
    controller = Controller(EmbeddedEngineClient(heartbeat_interval_ms=50))
    controller.start_in_background()
    controller.shutdown()  # at once: the start is still under way
    assert state(controller) is ClientState.DISCONNECTED
    thread = controller.client.thread  # type: ignore[attr-defined]
    assert thread is None or not thread.is_alive()


def test_process_age_counts_from_the_process_start() -> None:
    age = seconds_since_process_start()
    # This pytest process imported Qt, numpy and the engine before any test ran.
    assert 0.2 < age < 24 * 3600


def test_the_console_s_analyzer_charts_from_the_watched_relays(
    qtbot: object, tmp_path: Path
) -> None:
    ini = tmp_path / "qwconsole.ini"
    settings = AppSettings(ini)
    settings.relays = ["ny4=wss://127.0.0.1:7350", "bad entry"]
    settings.sync()
    win = make_window(qtbot, ini)
    try:
        analyzer = win.analyzer
        assert isinstance(analyzer, AnalyzerWorkspace)
        relays = analyzer.relay_settings
        assert [(c.name, c.port) for c in relays.choices] == [("ny4", 7350)]
        assert len(relays.problems) == 1
        assert str(ini) in relays.hint
    finally:
        win.shutdown()
