# SPDX-License-Identifier: MIT
"""The Enterprise Manager workspace: FIX sessions, FIX dictionaries and engine settings.

Three editors in tabs, each over a file in the format the FIX world (or the engine) already
uses: a QuickFIX-style ``.cfg`` (:class:`~widgets.manager.sessions.SessionEditor`), a QuickFIX
XML dictionary (:class:`~widgets.manager.dictionaries.DictionaryEditor`) and the engine's TOML
file (:class:`~widgets.manager.engine_settings.EngineSettingsEditor`). The tool bar opens and
saves them; Undo and Redo act on the visible editor (one ``QUndoStack`` each, in a
``QUndoGroup``). A tab whose file has unsaved changes is marked with ``●``, and closing the
window with unsaved changes asks first.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QShowEvent, QUndoGroup
from PySide6.QtWidgets import (
    QFileDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QTabWidget,
    QToolBar,
    QWidget,
)

from engine.client import EngineClient
from engine.events import EventRecord, SessionStatusChanged
from engine.fix.edit.services import EditorServices
from widgets.empty_state import EmptyState
from widgets.manager.dictionaries import DictionaryEditor
from widgets.manager.engine_settings import EngineSettingsEditor
from widgets.manager.sessions import SessionEditor

#: Tab order.
TABS = ("sessions", "dictionaries", "engine")


class ManagerWorkspace(QMainWindow):
    """Visual editing of QuickFIX-style session files, XML dictionaries and engine settings.

    Parameters
    ----------
    services : EditorServices, optional
        The FIX editing layer (``engine.fix.edit``) as the app configures it; without it the
        workspace shows an empty state.
    client : EngineClient, optional
        The running engine, to apply settings to (session operations, risk limits, strategy
        parameters).
    """

    key = "manager"
    title = "Enterprise Manager"

    def __init__(
        self,
        services: EditorServices | None = None,
        parent: QWidget | None = None,
        *,
        client: EngineClient | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("managerWorkspace")
        self.services = services
        self.client = client
        #: Ask about unsaved changes before the window closes (off only for scripted closing).
        self.ask_on_close = True
        self._filtered: QWidget | None = None
        #: Whether the attached engine's session file was opened (or tried) already.
        self.engine_file_tried = False
        if services is None:
            self.empty = EmptyState(
                "No configuration open",
                "FIX sessions (QuickFIX-style .cfg), FIX data dictionaries (QuickFIX XML) and "
                "engine settings are edited here, validated as you type, and saved in the "
                "formats the FIX world already uses.",
                "The editors need the FIX engine's models, which this build did not provide.",
            )
            self.setCentralWidget(self.empty)
            return
        self.sessions = SessionEditor(services, client=client)
        self.dictionaries = DictionaryEditor(services)
        self.engine_settings = EngineSettingsEditor(client)
        self.tabs = QTabWidget()
        self.tabs.setObjectName("managerTabs")
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.sessions, "Sessions")
        self.tabs.addTab(self.dictionaries, "Dictionaries")
        self.tabs.addTab(self.engine_settings, "Engine settings")
        self.setCentralWidget(self.tabs)
        self.undo_group = QUndoGroup(self)
        self.undo_group.addStack(self.sessions.undo_stack)
        self.undo_group.addStack(self.dictionaries.undo_stack)
        self.undo_group.addStack(self.engine_settings.undo_stack)
        self.tabs.currentChanged.connect(self._on_tab)
        self.sessions.state_changed.connect(self._update_titles)
        self.dictionaries.state_changed.connect(self._update_titles)
        self.dictionaries.open_failed.connect(self._on_open_failed)
        self.engine_settings.state_changed.connect(self._update_titles)
        self._build_toolbar()
        self._on_tab(0)

    def _build_toolbar(self) -> None:
        bar = QToolBar("Manager", self)
        bar.setObjectName("managerToolbar")
        bar.setMovable(False)
        bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, bar)

        def act(text: str, slot: object, shortcut: str = "", name: str = "") -> QAction:
            a = QAction(text, self)
            if shortcut:
                a.setShortcut(QKeySequence(shortcut))
                a.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            if name:
                a.setObjectName(name)
            a.triggered.connect(slot)
            self.addAction(a)
            bar.addAction(a)
            return a

        self.new_action = act("New", self.new_file, "Ctrl+N", "manager_new")
        self.open_action = act("Open…", self.open_file, "Ctrl+O", "manager_open")
        self.save_action = act("Save", self.save, "Ctrl+S", "manager_save")
        self.save_as_action = act("Save as…", self.save_as, "Ctrl+Shift+S", "manager_save_as")
        self.save_overlay_action = act(
            "Save as overlay…", self.save_overlay, "", "manager_save_overlay"
        )
        bar.addSeparator()
        self.undo_action = self.undo_group.createUndoAction(self, "Undo")
        self.undo_action.setShortcut(QKeySequence.StandardKey.Undo)
        self.undo_action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.redo_action = self.undo_group.createRedoAction(self, "Redo")
        self.redo_action.setShortcut(QKeySequence.StandardKey.Redo)
        self.redo_action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        for a in (self.undo_action, self.redo_action):
            self.addAction(a)
            bar.addAction(a)
        bar.addSeparator()
        self.file_label = QLabel()
        self.file_label.setObjectName("managerFile")
        self.file_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        bar.addWidget(self.file_label)

    # ------------------------------------------------------------------ state
    @property
    def current(self) -> str:
        """Return the visible tab's key (``sessions``, ``dictionaries`` or ``engine``)."""
        return TABS[self.tabs.currentIndex()]

    def unsaved(self) -> list[str]:
        """Return a description of every file with unsaved changes."""
        out = []
        if self.sessions.modified:
            out.append(f"session file {self.sessions.file_name}")
        if self.dictionaries.modified:
            out.append(f"dictionary {self.dictionaries.file_name}")
        if self.engine_settings.modified:
            out.append(f"engine settings {self.engine_settings.file_name}")
        return out

    def _on_tab(self, index: int) -> None:
        stacks = [
            self.sessions.undo_stack,
            self.dictionaries.undo_stack,
            self.engine_settings.undo_stack,
        ]
        if 0 <= index < len(stacks):
            self.undo_group.setActiveStack(stacks[index])
        self._update_titles()

    def _update_titles(self) -> None:
        names = {
            0: ("Sessions", self.sessions.file_name, self.sessions.modified),
            1: ("Dictionaries", self.dictionaries.file_name, self.dictionaries.modified),
            2: (
                "Engine settings",
                self.engine_settings.file_name,
                self.engine_settings.modified,
            ),
        }
        for i, (label, name, modified) in names.items():
            text = f"{label} — {name}" if name else label
            self.tabs.setTabText(i, text + (" ●" if modified else ""))
        label, name, modified = names[self.tabs.currentIndex()]
        self.file_label.setText(
            f"   {name}  ·  unsaved changes" if modified else (f"   {name}" if name else "")
        )
        self.save_overlay_action.setVisible(self.current == "dictionaries")
        self.new_action.setVisible(self.current != "dictionaries")

    # ------------------------------------------------------------------ files
    def new_file(self) -> None:
        """Start a new session or engine settings file (asks where it will be saved)."""
        if self.current == "dictionaries":
            return
        editor = self.sessions if self.current == "sessions" else self.engine_settings
        if not self._discard_ok(editor.modified):
            return
        name = "sessions.cfg" if self.current == "sessions" else "engine.toml"
        path, _ = QFileDialog.getSaveFileName(self, "New file", name)
        if path:
            editor.new_file(path)

    def open_file(self) -> None:
        """Open a file into the visible editor."""
        filters = {
            "sessions": ("Open session file", "Session settings (*.cfg *.ini);;All files (*)"),
            "dictionaries": ("Open dictionary", "QuickFIX dictionaries (*.xml);;All files (*)"),
            "engine": ("Open engine settings", "TOML (*.toml);;All files (*)"),
        }
        title, pattern = filters[self.current]
        path, _ = QFileDialog.getOpenFileName(self, title, "", pattern)
        if not path:
            return
        if self.current == "dictionaries":
            if self._discard_ok(self.dictionaries.modified):
                self.dictionaries.open_in_background(path)
            return
        self.open_path(path)

    def follow_engine(self, batch: list[EventRecord]) -> None:
        """Open the running engine's session file once, when no session file is open yet."""
        if self.engine_file_tried or self.services is None or self.sessions.cfg is not None:
            return
        for record in batch:
            ev = record.event
            if isinstance(ev, SessionStatusChanged) and ev.settings_file:
                self.engine_file_tried = True
                if Path(ev.settings_file).is_file():
                    try:
                        self.sessions.open_file(ev.settings_file)
                    except (OSError, ValueError) as e:  # the user opens another one
                        self.statusBar().showMessage(
                            f"the engine's session file {ev.settings_file}: {e}", 8000
                        )
                return

    def open_path(self, path: str | Path) -> bool:
        """Open ``path`` in the visible editor; show the error (file, line, key) if it fails."""
        editor = self._editor()
        if not self._discard_ok(editor.modified):
            return False
        try:
            editor.open_file(path)
        except (OSError, ValueError) as e:
            self._error(f"Cannot open {path}", str(e))
            return False
        self.tabs.currentWidget().setFocus()
        return True

    def save(self) -> bool:
        """Save the visible editor's file where it came from."""
        try:
            if self.current == "sessions" and self.sessions.cfg is not None:
                self.sessions.save()
            elif self.current == "dictionaries" and self.dictionaries.ed is not None:
                return self.save_as()
            elif self.current == "engine" and self.engine_settings.path is not None:
                self.engine_settings.save()
        except (OSError, ValueError) as e:
            self._error("Cannot save", str(e))
            return False
        return True

    def save_as(self) -> bool:
        """Save the visible editor's file under a new name (dictionaries: the full XML)."""
        editor = self._editor()
        name = getattr(editor, "file_name", "") or "untitled"
        path, _ = QFileDialog.getSaveFileName(self, "Save as", name)
        if not path:
            return False
        try:
            if self.current == "dictionaries":
                self.dictionaries.save_full(path)
            elif self.current == "sessions":
                self.sessions.save(path)
            else:
                self.engine_settings.save(path)
        except (OSError, ValueError) as e:
            self._error(f"Cannot save {path}", str(e))
            return False
        return True

    def save_overlay(self) -> bool:
        """Save the dictionary's changes as an overlay over its base."""
        if self.dictionaries.ed is None:
            return False
        stem = Path(self.dictionaries.file_name).stem
        path, _ = QFileDialog.getSaveFileName(
            self, "Save as overlay", f"{stem}-overlay.xml", "*.xml"
        )
        if not path:
            return False
        try:
            self.dictionaries.save_overlay(path)
        except (OSError, ValueError) as e:
            self._error(f"Cannot save {path}", str(e))
            return False
        return True

    def _on_open_failed(self, path: str, reason: str) -> None:
        self._error(f"Cannot open {path}", reason)

    def _editor(self) -> SessionEditor | DictionaryEditor | EngineSettingsEditor:
        editors: dict[str, SessionEditor | DictionaryEditor | EngineSettingsEditor] = {
            "sessions": self.sessions,
            "dictionaries": self.dictionaries,
            "engine": self.engine_settings,
        }
        return editors[self.current]

    def _error(self, title: str, text: str) -> None:
        box = QMessageBox(
            QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.Ok, self
        )
        box.setObjectName("managerError")
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()

    def _discard_ok(self, modified: bool) -> bool:
        if not modified:
            return True
        answer = QMessageBox.question(
            self,
            "Unsaved changes",
            "The open file has unsaved changes. Discard them?",
            QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Cancel,
        )
        return answer == QMessageBox.StandardButton.Discard

    # ------------------------------------------------------------------ closing
    def confirm_close(self) -> bool:
        """Ask what to do with unsaved changes; return whether closing may go on."""
        if self.services is None or not self.ask_on_close:
            return True
        pending = self.unsaved()
        if not pending:
            return True
        box = QMessageBox(self)
        box.setObjectName("managerUnsaved")
        box.setIcon(QMessageBox.Icon.Warning)
        box.setWindowTitle("Unsaved changes")
        box.setText("Unsaved changes in the Enterprise Manager:\n• " + "\n• ".join(pending))
        box.setInformativeText("Save them before closing?")
        box.setStandardButtons(
            QMessageBox.StandardButton.SaveAll
            | QMessageBox.StandardButton.Discard
            | QMessageBox.StandardButton.Cancel
        )
        box.setDefaultButton(QMessageBox.StandardButton.SaveAll)
        answer = box.exec()
        if answer == QMessageBox.StandardButton.Cancel:
            return False
        if answer == QMessageBox.StandardButton.SaveAll:
            return self._save_all()
        return True

    def _save_all(self) -> bool:
        try:
            if self.sessions.modified:
                self.sessions.save()
            if self.dictionaries.modified:
                self.tabs.setCurrentWidget(self.dictionaries)
                if not self.save_as():
                    return False
            if self.engine_settings.modified:
                self.engine_settings.save()
        except (OSError, ValueError) as e:
            self._error("Cannot save", str(e))
            return False
        return True

    def showEvent(self, event: QShowEvent) -> None:
        """Watch the top-level window's close, to confirm unsaved changes first."""
        super().showEvent(event)
        top = self.window()
        if top is not self and top is not self._filtered:
            if self._filtered is not None:
                self._filtered.removeEventFilter(self)
            top.installEventFilter(self)
            self._filtered = top

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Stop the window from closing when the user cancels over unsaved changes."""
        closing = watched is self._filtered and event.type() == QEvent.Type.Close
        if closing and not self.confirm_close():
            event.ignore()
            return True
        return super().eventFilter(watched, event)

    def closeEvent(self, event: QCloseEvent) -> None:
        """Confirm unsaved changes when the workspace itself is the window."""
        if self.confirm_close():
            event.accept()
        else:
            event.ignore()
