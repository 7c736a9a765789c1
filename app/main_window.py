# SPDX-License-Identifier: MIT
"""The main window: side bar, three workspaces, menus, status bar, persisted layout."""

import logging
import platform
from importlib import metadata

from PySide6.QtCore import QByteArray, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QIcon, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QMainWindow,
    QMessageBox,
    QStackedWidget,
    QToolBar,
    QWidget,
)

from analyzer.views.workspace import AnalyzerWorkspace
from app.controller import Controller
from app.fix_describe import FieldDescriber
from app.paths import resource
from app.settings import AppSettings
from app.theme import THEMES, apply_theme, load_theme
from widgets.manager.workspace import ManagerWorkspace
from widgets.monitor.workspace import MonitorWorkspace
from widgets.status_bar import StatusIndicators

log = logging.getLogger(__name__)

#: Workspace keys in side-bar order; Ctrl+1..3 follow this order.
WORKSPACES = ("monitor", "manager", "analyzer")

_VERSION_PACKAGES = (
    "qwconsole",
    "PySide6-Essentials",
    "pyqtgraph",
    "qasync",
    "numpy",
    "numba",
    "h5py",
    "simplefix",
)


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def versions() -> list[tuple[str, str]]:
    """Return ``(component, version)`` pairs for the About box and ``--version``."""
    from PySide6 import QtCore

    pairs = [(p, _version(p)) for p in _VERSION_PACKAGES]
    pairs.insert(1, ("Python", platform.python_version()))
    pairs.insert(2, ("Qt", QtCore.qVersion()))
    return pairs


class MainWindow(QMainWindow):
    """The console's window: workspaces switchable from the side bar and with Ctrl+1/2/3.

    Parameters
    ----------
    controller : Controller
        Engine connection and commands.
    settings : AppSettings
        Persisted theme, workspace and layouts (restored here, saved on close).

    Signals
    -------
    closed()
        The window shut down (settings saved, engine stopped) and closed.
    """

    #: Emitted once the window has shut down (settings saved, engine stopped) and closed.
    closed = Signal()

    def __init__(self, controller: Controller, settings: AppSettings) -> None:
        super().__init__()
        self.controller = controller
        self.settings = settings
        self.setObjectName("mainWindow")
        self.setWindowTitle("qwconsole")
        self.setWindowIcon(QIcon(str(resource("icons", "qwconsole.svg"))))
        self.theme = ""
        self._shut_down = False

        self.monitor = MonitorWorkspace(send=controller.client.send, describe=FieldDescriber())
        # The Manager's editors are engine models that widgets may not import: the app hands
        # them over (engine.fix.editors), with the client to apply settings to a running engine.
        from engine.fix.editors import EditorServices

        self.manager = ManagerWorkspace(EditorServices(), client=controller.client)
        from app.paths import state_dir

        self.analyzer = AnalyzerWorkspace(journal_dir=state_dir() / "journal")
        self.workspaces: dict[str, QMainWindow] = {
            "monitor": self.monitor,
            "manager": self.manager,
            "analyzer": self.analyzer,
        }
        self.stack = QStackedWidget()
        for ws in self.workspaces.values():
            self.stack.addWidget(ws)
        self.setCentralWidget(self.stack)

        self.workspace_actions: dict[str, QAction] = {}
        self._build_sidebar()
        from app.engines import EngineConnections

        self.engines = EngineConnections(self, controller.client)
        self.engines.message.connect(self._show_message)
        self._build_menus()
        self.status = StatusIndicators(self.statusBar(), controller.client.name)
        self.status.on_client_state(controller.client.state)

        bridge = controller.bridge
        bridge.events_received.connect(self.status.on_events)
        bridge.events_received.connect(self.monitor.on_events)
        bridge.client_state_changed.connect(self.status.on_client_state)
        controller.message.connect(self._show_message)

        self._restore()

    # ------------------------------------------------------------------ building
    def _build_sidebar(self) -> None:
        bar = QToolBar("Workspaces", self)
        bar.setObjectName("sidebar")
        bar.setMovable(False)
        bar.setFloatable(False)
        bar.setOrientation(Qt.Orientation.Vertical)
        bar.setIconSize(QSize(26, 26))
        bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextUnderIcon)
        bar.toggleViewAction().setEnabled(False)
        self.addToolBar(Qt.ToolBarArea.LeftToolBarArea, bar)
        group = QActionGroup(self)
        group.setExclusive(True)
        labels = {"monitor": "Monitor", "manager": "Manager", "analyzer": "Analyzer"}
        for n, key in enumerate(WORKSPACES, start=1):
            ws = self.workspaces[key]
            action = QAction(QIcon(str(resource("icons", f"{key}.svg"))), labels[key], self)
            action.setObjectName(f"workspace_{key}")
            action.setCheckable(True)
            action.setShortcut(QKeySequence(f"Ctrl+{n}"))
            action.setShortcutContext(Qt.ShortcutContext.ApplicationShortcut)
            action.setToolTip(f"{ws.windowTitle() or getattr(ws, 'title', key)} (Ctrl+{n})")
            action.triggered.connect(lambda _checked=False, k=key: self.show_workspace(k))
            group.addAction(action)
            bar.addAction(action)
            self.workspace_actions[key] = action
        self.sidebar = bar

    def _build_menus(self) -> None:
        menu = self.menuBar()
        file_menu = menu.addMenu("&File")
        quit_action = QAction("&Quit", self)
        quit_action.setObjectName("action_quit")
        quit_action.setShortcut(QKeySequence("Ctrl+Q"))
        quit_action.setShortcutContext(Qt.ShortcutContext.ApplicationShortcut)
        quit_action.setMenuRole(QAction.MenuRole.QuitRole)
        quit_action.triggered.connect(self.close)
        file_menu.addAction(quit_action)

        view_menu = menu.addMenu("&View")
        for key in WORKSPACES:
            action = self.workspace_actions[key]
            titled = QAction(getattr(self.workspaces[key], "title", key), self)
            titled.setShortcut(action.shortcut())
            titled.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)  # the side bar owns it
            titled.triggered.connect(action.trigger)
            view_menu.addAction(titled)
        view_menu.addSeparator()
        theme_menu = view_menu.addMenu("&Theme")
        self.theme_actions: dict[str, QAction] = {}
        theme_group = QActionGroup(self)
        for name in THEMES:
            action = QAction(name.capitalize(), self)
            action.setObjectName(f"theme_{name}")
            action.setCheckable(True)
            action.triggered.connect(lambda _checked=False, n=name: self.set_theme(n))
            theme_group.addAction(action)
            theme_menu.addAction(action)
            self.theme_actions[name] = action
        toggle = QAction("Toggle dark/light", self)
        toggle.setShortcut(QKeySequence("Ctrl+Shift+L"))
        toggle.triggered.connect(self.toggle_theme)
        theme_menu.addSeparator()
        theme_menu.addAction(toggle)
        view_menu.addSeparator()
        events_toggle = self.monitor.events_dock.toggleViewAction()
        events_toggle.setText("Engine events panel")
        view_menu.addAction(events_toggle)

        engine_menu = menu.addMenu("&Engine")
        ping = QAction("&Ping engine", self)
        ping.setObjectName("action_ping")
        ping.setToolTip("Send a command to the engine and show the round-trip time")
        ping.triggered.connect(self.controller.on_ping_requested)
        engine_menu.addAction(ping)
        connect = QAction("&Connect to engine…", self)
        connect.setObjectName("action_connect_engine")
        connect.setToolTip("Attach a remote engine (host, port, token, TLS)")
        connect.setEnabled(self.engines.enabled)
        connect.triggered.connect(self.engines.show_connect_dialog)
        engine_menu.addAction(connect)

        help_menu = menu.addMenu("&Help")
        about = QAction("&About qwconsole", self)
        about.setMenuRole(QAction.MenuRole.AboutRole)
        about.triggered.connect(self.show_about)
        help_menu.addAction(about)

    # ------------------------------------------------------------------ behaviour
    @property
    def current_workspace(self) -> str:
        """Return the key of the visible workspace."""
        current = self.stack.currentWidget()
        return next(k for k, w in self.workspaces.items() if w is current)

    def show_workspace(self, key: str) -> None:
        """Make workspace ``key`` visible (``monitor``, ``manager`` or ``analyzer``)."""
        if key not in self.workspaces:
            raise ValueError(f"unknown workspace {key!r}; choose one of {', '.join(WORKSPACES)}")
        self.stack.setCurrentWidget(self.workspaces[key])
        self.workspace_actions[key].setChecked(True)
        ws = self.workspaces[key]
        self.setWindowTitle(f"qwconsole — {getattr(ws, 'title', key)}")

    def set_theme(self, name: str) -> None:
        """Apply theme ``name`` to the whole application and remember it."""
        theme = load_theme(name)
        app = QApplication.instance()
        assert isinstance(app, QApplication)
        apply_theme(app, theme)
        self.theme = name
        self.theme_actions[name].setChecked(True)
        self.settings.theme = name

    def toggle_theme(self) -> None:
        """Switch between the dark and the light theme."""
        self.set_theme("light" if self.theme == "dark" else "dark")

    def show_about(self) -> QMessageBox:
        """Open the About box (non-blocking) and return it."""
        rows = "".join(f"<tr><td>{k}</td><td>&nbsp;&nbsp;{v}</td></tr>" for k, v in versions())
        box = QMessageBox(self)
        box.setWindowTitle("About qwconsole")
        box.setIconPixmap(QIcon(str(resource("icons", "qwconsole.svg"))).pixmap(56, 56))
        box.setText(
            "<b>qwconsole</b><br>A desktop trading console: Trade Monitor, Enterprise Manager "
            f"and Trade Analyzer over one engine.<br><br><table>{rows}</table>"
        )
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()
        return box

    def _show_message(self, text: str) -> None:
        self.statusBar().showMessage(text, 5000)

    # ------------------------------------------------------------------ persistence
    def _restore(self) -> None:
        self.resize(1400, 860)
        geometry = self.settings.geometry("main/geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        state = self.settings.geometry("main/state")
        if state is not None:
            self.restoreState(state)
        for key, ws in self.workspaces.items():
            ws_state = self.settings.geometry(f"{key}/state")
            if ws_state is not None:
                ws.restoreState(ws_state)
        self.set_theme(self.settings.theme)
        stored = self.settings.workspace
        self.show_workspace(stored if stored in self.workspaces else "monitor")

    def save_settings(self) -> None:
        """Store theme, workspace, geometry and dock layouts."""
        self.settings.workspace = self.current_workspace
        self.settings.set_geometry("main/geometry", QByteArray(self.saveGeometry()))
        self.settings.set_geometry("main/state", QByteArray(self.saveState()))
        for key, ws in self.workspaces.items():
            self.settings.set_geometry(f"{key}/state", QByteArray(ws.saveState()))
        self.settings.sync()

    def shutdown(self) -> None:
        """Save settings and stop the engine; safe to call more than once."""
        if self._shut_down:
            return
        self._shut_down = True
        self.save_settings()
        self.controller.shutdown()

    def closeEvent(self, event: QCloseEvent) -> None:
        """Shut down cleanly (settings saved, engine stopped) and close."""
        self.shutdown()
        event.accept()
        self.closed.emit()


def schedule_close(window: QWidget) -> None:
    """Close ``window`` from the event loop (safe from a signal handler)."""
    QTimer.singleShot(0, window.close)
