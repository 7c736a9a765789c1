# SPDX-License-Identifier: MIT
"""The main window: side bar, three workspaces, menus, status bar, persisted layout.

Only the Trade Monitor is built with the window. The Enterprise Manager and the Trade Analyzer
(with their imports: pyqtgraph, h5py, the FIX editors' models, the Analyzer's kernels) are built
the first time they are shown; until then a placeholder holds their place in the stack. Once the
engine runs (its kernels loaded), a worker thread loads what the first frame did not need: the
FIX dictionaries of the message inspector and the lazy workspaces' Qt-free modules, so that
their first showing mostly builds widgets.
"""

import functools
import importlib
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, cast

import shiboken6
from PySide6.QtCore import QByteArray, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QIcon, QKeySequence, QShowEvent
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QMainWindow,
    QMenu,
    QMessageBox,
    QStackedWidget,
    QToolBar,
    QWidget,
)

from app.controller import Controller
from app.paths import resource, state_dir
from app.process import versions
from app.reconcile import ReconcileRunner
from app.relays import RelayMonitor, analyzer_relays
from app.settings import AppSettings
from app.theme import THEMES, apply_theme, load_theme
from engine.client import ClientState
from engine.enums import EngineState, OrdStatus
from engine.events import EngineStateChanged, EventRecord, OrderChanged, OrderFilled
from engine.fix.edit.describe import FieldDescriber
from widgets.empty_state import EmptyState
from widgets.monitor.workspace import MonitorWorkspace
from widgets.reconcile import ReconcileBadge
from widgets.status_bar import StatusIndicators
from widgets.tables.view import DataTableView

if TYPE_CHECKING:
    from analyzer.views.workspace import AnalyzerWorkspace
    from widgets.manager.workspace import ManagerWorkspace

log = logging.getLogger(__name__)

#: Workspace keys in side-bar order; Ctrl+1..3 follow this order.
WORKSPACES = ("monitor", "manager", "analyzer")
#: Side-bar labels, and full titles (menus, window title), known before a workspace is built.
LABELS = {"monitor": "Monitor", "manager": "Manager", "analyzer": "Analyzer"}
TITLES = {"monitor": "Trade Monitor", "manager": "Enterprise Manager", "analyzer": "Trade Analyzer"}
#: Workspaces built the first time they are shown.
LAZY_WORKSPACES = ("manager", "analyzer")
#: A lazy workspace shown before the window is built this long after the window appears (its
#: first frame is painted first, with the workspace's placeholder).
BUILD_AFTER_FIRST_FRAME_MS = 100

#: What ``--open`` takes, by suffix: (workspace, what it is).
OPENERS: dict[str, tuple[str, str]] = {
    ".h5": ("analyzer", "store"),
    ".hdf5": ("analyzer", "store"),
    ".qwj": ("analyzer", "journal"),
    ".cfg": ("manager", "sessions"),
    ".xml": ("manager", "dictionary"),
}
#: Background loading starts when the engine reports that it runs, or this long after the
#: window first showed (an engine that never runs), whichever comes first.
BACKGROUND_LOAD_AFTER_MS = 5000
#: The lazy workspaces' Qt-free modules (Qt modules are imported in the GUI thread only).
PRELOAD_MODULES = (
    "engine.fix.edit.services",
    "analyzer.dataset",
    "analyzer.source",
    "analyzer.overlay",
)


class WorkspacePlaceholder(EmptyState):
    """Holds a lazy workspace's place in the stack until it is first shown."""

    def __init__(self, key: str) -> None:
        super().__init__(TITLES[key], f"Opening the {TITLES[key]}…")
        self.key = key


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
        #: Makes the fill/reject sound (the desktop's bell).
        self.beep: Callable[[], None] = QApplication.beep

        # The dictionaries load once the window is up (_start_background_loading).
        self.describer = FieldDescriber(preload=False)
        self.monitor = MonitorWorkspace(send=controller.client.send, describe=self.describer)
        #: Every workspace by key: the workspace itself once built, its placeholder before.
        self.workspaces: dict[str, QWidget] = {"monitor": self.monitor}
        self.workspaces.update({key: WorkspacePlaceholder(key) for key in LAZY_WORKSPACES})
        self._builders: dict[str, Callable[[], QMainWindow]] = {
            "manager": self._build_manager,
            "analyzer": self._build_analyzer,
        }
        self._background_started = False
        #: Each workspace's dock layout as built, before a stored one was restored.
        self._default_states: dict[str, QByteArray] = {
            "monitor": QByteArray(self.monitor.saveState())
        }
        #: Set once the background loading (see :meth:`_start_background_loading`) is done.
        self.background_loaded = threading.Event()
        self.stack = QStackedWidget()
        for ws in self.workspaces.values():
            self.stack.addWidget(ws)
        self.setCentralWidget(self.stack)

        self.workspace_actions: dict[str, QAction] = {}
        self._build_sidebar()
        from app.engines import EngineConnections

        self.engines = EngineConnections(self, controller.client)
        self.relay_monitor = RelayMonitor.from_settings(settings, self.monitor.relays_view, self)
        self.engines.message.connect(self._show_message)
        self.reconcile_badge = ReconcileBadge()
        self.reconciler = ReconcileRunner(state_dir, self.reconcile_badge, self)
        #: The table the user last clicked in: File ▸ Export writes it.
        self._last_table: DataTableView | None = None
        app = QApplication.instance()
        if isinstance(app, QApplication):
            app.focusChanged.connect(self._on_focus_changed)
        self._build_menus()
        self.status = StatusIndicators(self.statusBar(), controller.client.name)
        self.statusBar().addPermanentWidget(self.reconcile_badge)
        self.status.on_client_state(controller.client.state)

        bridge = controller.bridge
        bridge.events_received.connect(self.status.on_events)
        bridge.events_received.connect(self.monitor.on_events)
        bridge.events_received.connect(self._watch_engine_running)
        bridge.events_received.connect(self._sound_for)
        bridge.events_received.connect(self.reconciler.on_events)
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
        for n, key in enumerate(WORKSPACES, start=1):
            action = QAction(QIcon(str(resource("icons", f"{key}.svg"))), LABELS[key], self)
            action.setObjectName(f"workspace_{key}")
            action.setCheckable(True)
            action.setShortcut(QKeySequence(f"Ctrl+{n}"))
            action.setShortcutContext(Qt.ShortcutContext.ApplicationShortcut)
            action.setToolTip(f"{TITLES[key]} (Ctrl+{n})")
            action.triggered.connect(lambda _checked=False, k=key: self.show_workspace(k))
            group.addAction(action)
            bar.addAction(action)
            self.workspace_actions[key] = action
        self.sidebar = bar

    def _build_menus(self) -> None:
        menu = self.menuBar()
        file_menu = menu.addMenu("&File")
        export = QAction("&Export table to CSV…", self)
        export.setObjectName("action_export_csv")
        export.setShortcut(QKeySequence("Ctrl+E"))
        export.setShortcutContext(Qt.ShortcutContext.ApplicationShortcut)
        export.setToolTip("Write the table you last clicked in to a CSV file (every row)")
        export.triggered.connect(self.export_table)
        file_menu.addAction(export)
        file_menu.addSeparator()
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
            titled = QAction(TITLES[key], self)
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
        reset = QAction("&Reset layout", self)
        reset.setObjectName("action_reset_layout")
        reset.setToolTip("Put every panel of every workspace back where it starts, at 1400×860")
        reset.triggered.connect(self.reset_layout)
        view_menu.addAction(reset)
        self.sound_action = QAction("&Sound on fills and rejects", self)
        self.sound_action.setObjectName("action_sound")
        self.sound_action.setCheckable(True)
        self.sound_action.setChecked(self.settings.sound)
        self.sound_action.toggled.connect(self._set_sound)
        view_menu.addAction(self.sound_action)
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
        detach_menu = engine_menu.addMenu("&Detach engine")
        detach_menu.setObjectName("menu_detach_engine")
        detach_menu.setToolTip("Stop following a remote engine (it keeps running)")
        detach_menu.setEnabled(self.engines.enabled)
        detach_menu.aboutToShow.connect(lambda: self._fill_detach_menu(detach_menu))
        engine_menu.addSeparator()
        reconcile = QAction("&Reconcile…", self)
        reconcile.setObjectName("action_reconcile")
        reconcile.setToolTip(
            "Compare the fills of the journal, of the engine's recovery and of the venue's "
            "reports (qwconsole reconcile)"
        )
        reconcile.triggered.connect(self.reconciler.open_dialog)
        engine_menu.addAction(reconcile)

        help_menu = menu.addMenu("&Help")
        keys = QAction("&Keyboard shortcuts", self)
        keys.setObjectName("action_shortcuts")
        keys.setShortcut(QKeySequence(QKeySequence.StandardKey.HelpContents))  # F1
        keys.setShortcutContext(Qt.ShortcutContext.ApplicationShortcut)
        keys.triggered.connect(self.show_shortcuts)
        help_menu.addAction(keys)
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

    @property
    def manager(self) -> "ManagerWorkspace":
        """Return the Enterprise Manager workspace, building it if it was not shown yet."""
        from widgets.manager.workspace import ManagerWorkspace

        return cast(ManagerWorkspace, self.workspace("manager"))

    @property
    def analyzer(self) -> "AnalyzerWorkspace":
        """Return the Trade Analyzer workspace, building it if it was not shown yet."""
        from analyzer.views.workspace import AnalyzerWorkspace

        return cast(AnalyzerWorkspace, self.workspace("analyzer"))

    def is_built(self, key: str) -> bool:
        """Return whether workspace ``key`` exists (a lazy one is built when first shown)."""
        return not isinstance(self.workspaces[key], WorkspacePlaceholder)

    def workspace(self, key: str) -> QWidget:
        """Return workspace ``key``, building it first if it is still a placeholder."""
        if key not in self.workspaces:
            raise ValueError(f"unknown workspace {key!r}; choose one of {', '.join(WORKSPACES)}")
        placeholder = self.workspaces[key]
        if not isinstance(placeholder, WorkspacePlaceholder):
            return placeholder
        if self.stack.currentWidget() is placeholder and self.isVisible():
            placeholder.repaint()  # "Opening …" stays on screen while the workspace is built
        t0 = time.perf_counter()
        ws = self._builders[key]()
        self._default_states[key] = QByteArray(ws.saveState())
        state = self.settings.geometry(f"{key}/state")
        if state is not None:
            ws.restoreState(state)
        current = self.stack.currentWidget() is placeholder
        self.stack.insertWidget(self.stack.indexOf(placeholder), ws)
        self.workspaces[key] = ws
        if current:
            self.stack.setCurrentWidget(ws)
        self.stack.removeWidget(placeholder)
        placeholder.deleteLater()
        log.info("%s built in %.0f ms", TITLES[key], (time.perf_counter() - t0) * 1e3)
        return ws

    def _build_manager(self) -> QMainWindow:
        # The Manager's editors are the engine's editing layer (engine.fix.edit): the app hands
        # them over, with the client to apply settings to a running engine.
        from engine.fix.edit.services import EditorServices
        from widgets.manager.workspace import ManagerWorkspace

        ws = ManagerWorkspace(EditorServices(), client=self.controller.client)
        # The engine settings page shows the limits the engine enforces: its state now (built
        # lazily, after the engine may have started), then every change from the stream.
        client, settings = self.controller.client, ws.engine_settings
        if client.state is ClientState.CONNECTED:
            try:
                snap = client.snapshot()
            except Exception as e:  # a lost link: the stream's next resync brings the limits
                log.warning("engine snapshot for the Manager failed: %s", e)
            else:
                settings.on_events([EventRecord(snap.seq, ev) for ev in snap.state_events])
        self.controller.bridge.events_received.connect(settings.on_events)
        # The engine's session file opens by default (from its state now, then the stream).
        if client.state is ClientState.CONNECTED:
            try:
                ws.follow_engine([EventRecord(0, ev) for ev in client.snapshot().state_events])
            except Exception as e:  # a lost link: the stream's events bring it
                log.warning("engine snapshot for the Manager's session file failed: %s", e)
        self.controller.bridge.events_received.connect(ws.follow_engine)
        return ws

    def _build_analyzer(self) -> QMainWindow:
        from analyzer.views.workspace import AnalyzerWorkspace

        # The Analyzer follows the engine live through the bridge's batches (never a second
        # drain of the client), starting from the engine's state when it is built. Built before
        # the engine runs (it starts after the window shows), it sees every event from the
        # first: there is no state to read yet.
        client = self.controller.client
        running = client.state is ClientState.CONNECTED
        ws = AnalyzerWorkspace(
            journal_dir=state_dir() / "journal",
            engine_events=self.controller.bridge.events_received,
            engine_name=client.name,
            engine_snapshot=client.snapshot if running else None,
            relays=analyzer_relays(self.settings),
        )
        # Stores and journals opened before are opened again; new ones are remembered.
        settings = self.settings
        for kind, opener in (("stores", ws.open_store), ("journals", ws.load_journal)):
            for path in settings.recent(kind):
                if Path(path).exists():
                    opener(path)
                else:
                    log.info("%s opened last time is gone: %s", kind[:-1], path)
                    settings.forget(kind, path)
        ws.store_opened.connect(lambda path: settings.remember("stores", path))
        ws.journal_opened.connect(lambda path: settings.remember("journals", path))
        if not ws.days:
            ws.chart_first()
        return ws

    def show_workspace(self, key: str) -> None:
        """Make workspace ``key`` visible (``monitor``, ``manager`` or ``analyzer``).

        A lazy workspace is built now; before the window is first shown (the workspace stored
        from the last session, ``--workspace``), right after its first frame instead.
        """
        if key not in self.workspaces:
            raise ValueError(f"unknown workspace {key!r}; choose one of {', '.join(WORKSPACES)}")
        self.stack.setCurrentWidget(self.workspaces[key])
        self.workspace_actions[key].setChecked(True)
        self.setWindowTitle(f"qwconsole — {TITLES[key]}")
        if self.isVisible():
            self._build_shown(key)
        elif not self.is_built(key):
            QTimer.singleShot(BUILD_AFTER_FIRST_FRAME_MS, self, lambda: self._build_shown(key))

    def _build_shown(self, key: str) -> None:
        if self._shut_down:
            return
        try:
            self.workspace(key)
        except Exception as e:  # a broken workspace must not take the console down
            log.exception("cannot build the %s", TITLES[key])
            placeholder = self.workspaces[key]
            if isinstance(placeholder, WorkspacePlaceholder):
                placeholder.body_label.setText(
                    f"The {TITLES[key]} could not be opened: {type(e).__name__}: {e} (details "
                    "in the log)."
                )

    def open_paths(self, paths: list[str]) -> list[str]:
        """Open files where they belong; return the workspace keys that opened something.

        Tick stores (``.h5``, ``.hdf5``) and journals (``.qwj``) go to the Trade Analyzer,
        which charts the first instrument when nothing is charted yet; session files
        (``.cfg``) and dictionaries (``.xml``) to the Enterprise Manager.
        """
        opened: list[str] = []
        for raw in paths:
            kind = OPENERS.get(Path(raw).suffix.lower())
            if kind is None:
                self._show_message(f"{raw}: not a tick store, journal, session file or dictionary")
                continue
            ws_key, what = kind
            if ws_key == "analyzer":
                analyzer = self.analyzer
                if what == "journal":
                    analyzer.load_journal(raw)
                elif analyzer.open_store(raw) and not analyzer.days:
                    analyzer.chart_first()
            else:
                manager = self.manager
                if what == "sessions":
                    manager.tabs.setCurrentWidget(manager.sessions)
                    manager.open_path(raw)
                else:
                    manager.tabs.setCurrentWidget(manager.dictionaries)
                    manager.dictionaries.open_in_background(raw)
            opened.append(ws_key)
        return opened

    def _set_sound(self, on: bool) -> None:
        self.settings.sound = on

    def _sound_for(self, batch: list[EventRecord]) -> None:
        """Sound once for a batch with an own fill or a rejected order (when switched on)."""
        if not self.sound_action.isChecked():
            return
        for record in batch:
            ev = record.event
            if isinstance(ev, OrderFilled) or (
                isinstance(ev, OrderChanged) and ev.order.status is OrdStatus.REJECTED
            ):
                self.beep()
                return

    def _on_focus_changed(self, _old: QWidget | None, new: QWidget | None) -> None:
        # File ▸ Export works on the table the user last clicked in (the menu takes focus).
        w = new
        while w is not None and not isinstance(w, DataTableView):
            w = w.parentWidget()
        if w is not None:
            self._last_table = w

    def export_table(self) -> QFileDialog | None:
        """Ask where to write the table last clicked in as CSV (File ▸ Export, Ctrl+E)."""
        view = self._last_table
        if view is None or not shiboken6.isValid(view) or not view.isVisible():
            self._show_message("Export to CSV: click in a table first, then File ▸ Export")
            return None
        return view.choose_csv_path()

    def reset_layout(self) -> None:
        """Put every built workspace's panels back as built and the window at 1400×860."""
        for key, state in self._default_states.items():
            ws = self.workspaces.get(key)
            if isinstance(ws, QMainWindow):
                ws.restoreState(state)
        if self.isMaximized() or self.isFullScreen():
            self.showNormal()
        self.resize(1400, 860)
        self._show_message("Layout reset")

    def shortcuts(self) -> list[tuple[str, str, str]]:
        """Return (where, action, keys) of every action with a shortcut, menus first."""
        rows: list[tuple[str, str, str]] = []
        seen: set[tuple[str, str]] = set()
        owners: list[tuple[str, QWidget]] = [("Console", self)]
        owners += [(TITLES[k], w) for k, w in self.workspaces.items() if self.is_built(k)]
        for where, owner in owners:
            for action in owner.findChildren(QAction):
                keys = action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
                name = action.text().replace("&", "").rstrip("…").strip()
                if not keys or not name or (name, keys) in seen:
                    continue
                seen.add((name, keys))
                rows.append((where, name, keys))
        return rows

    def show_shortcuts(self) -> QMessageBox:
        """Show every keyboard shortcut of the console and of the workspaces built so far."""
        body = "".join(
            f"<tr><td>{where}</td><td>{name}</td><td><b>{keys}</b></td></tr>"
            for where, name, keys in self.shortcuts()
        )
        box = self._open_box(
            "Keyboard shortcuts",
            "<table cellspacing='6'><tr><th align='left'>Where</th><th align='left'>Action"
            f"</th><th align='left'>Keys</th></tr>{body}</table>",
        )
        box.setObjectName("shortcutsBox")
        return box

    def _open_box(self, title: str, html: str, icon: QIcon | None = None) -> QMessageBox:
        """Open a non-blocking message box with rich text; it deletes itself when closed."""
        box = QMessageBox(self)
        box.setWindowTitle(title)
        if icon is not None:
            box.setIconPixmap(icon.pixmap(56, 56))
        box.setTextFormat(Qt.TextFormat.RichText)
        box.setText(html)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()
        return box

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

    def _fill_detach_menu(self, menu: QMenu) -> None:
        """List the attached remote engines; each detaches after a confirmation."""
        menu.clear()
        names = self.engines.detachable()
        for name in names:
            action = menu.addAction(name)
            action.setObjectName(f"action_detach_{name}")
            action.triggered.connect(functools.partial(self.confirm_detach, name))
        if not names:
            none = menu.addAction("No remote engine attached")
            none.setEnabled(False)

    def confirm_detach(self, name: str, *, ask: bool = True) -> bool:
        """Detach engine ``name`` once the user confirms; return whether it was detached."""
        if ask:
            answer = QMessageBox.question(
                self,
                "Detach engine",
                f"Stop following {name}?\n\nThe engine keeps running with its strategies and "
                "orders; its orders and messages stay here as history. Connect again to follow "
                "it.",
            )
            if answer != QMessageBox.StandardButton.Yes:
                return False
        return self.engines.detach_engine(name)

    def show_about(self) -> QMessageBox:
        """Open the About box (non-blocking) and return it."""
        rows = "".join(f"<tr><td>{k}</td><td>&nbsp;&nbsp;{v}</td></tr>" for k, v in versions())
        return self._open_box(
            "About qwconsole",
            "<b>qwconsole</b><br>A desktop trading console: Trade Monitor, Enterprise Manager "
            f"and Trade Analyzer over one engine.<br><br><table>{rows}</table>",
            QIcon(str(resource("icons", "qwconsole.svg"))),
        )

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
        ws_state = self.settings.geometry("monitor/state")
        if ws_state is not None:
            self.monitor.restoreState(ws_state)
        self.set_theme(self.settings.theme)
        stored = self.settings.workspace
        self.show_workspace(stored if stored in self.workspaces else "monitor")

    def save_settings(self) -> None:
        """Store theme, workspace, geometry and dock layouts."""
        self.settings.workspace = self.current_workspace
        self.settings.set_geometry("main/geometry", QByteArray(self.saveGeometry()))
        self.settings.set_geometry("main/state", QByteArray(self.saveState()))
        for key, ws in self.workspaces.items():
            if isinstance(ws, QMainWindow):  # a workspace never built keeps its stored layout
                self.settings.set_geometry(f"{key}/state", QByteArray(ws.saveState()))
        self.settings.sync()

    def shutdown(self) -> None:
        """Save settings and stop the engine; safe to call more than once."""
        if self._shut_down:
            return
        self._shut_down = True
        self.relay_monitor.close()
        self.save_settings()
        self.controller.shutdown()

    def showEvent(self, event: QShowEvent) -> None:
        """Make sure the background loading happens even if the engine never runs."""
        super().showEvent(event)
        if not self._background_started:
            QTimer.singleShot(BACKGROUND_LOAD_AFTER_MS, self._start_background_loading)

    def _watch_engine_running(self, batch: list[EventRecord]) -> None:
        if self._background_started:
            return
        for record in batch:
            event = record.event
            if isinstance(event, EngineStateChanged) and event.state is EngineState.RUNNING:
                self._start_background_loading()
                return

    def _start_background_loading(self) -> None:
        """Load, on a worker thread, what the first frame did not need (once).

        Python threads share one interpreter lock: this runs after the start, not during it,
        where it would slow every Qt call of the GUI thread.
        """
        if self._background_started or self._shut_down:
            return
        self._background_started = True
        describe, done = self.describer, self.background_loaded

        def load() -> None:
            t0 = time.perf_counter()
            describe(35, b"0")  # the inspector's dictionaries
            for name in PRELOAD_MODULES:
                try:
                    importlib.import_module(name)
                except ImportError as e:  # the workspace will say so when it is built
                    log.warning("cannot preload %s: %s", name, e)
            log.info("background loading done in %.0f ms", (time.perf_counter() - t0) * 1e3)
            done.set()

        threading.Thread(target=load, name="qw-background-load", daemon=True).start()

    def closeEvent(self, event: QCloseEvent) -> None:
        """Shut down cleanly (settings saved, engine stopped) and close."""
        self.shutdown()
        event.accept()
        self.closed.emit()


def schedule_close(window: QWidget) -> None:
    """Close ``window`` from the event loop (safe from a signal handler)."""
    QTimer.singleShot(0, window.close)
