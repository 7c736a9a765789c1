# SPDX-License-Identifier: MIT
"""The session editor: a QuickFIX-style ``.cfg`` file as sessions, forms and plain words.

Layout, left to right: the sections of the file (``[DEFAULT]`` first, then each session with
its error count); the selected section as a grouped form (identity, schedule, behaviour,
validation and dictionaries, connection, storage and logging, TLS, misc — every known key) or
as raw text; and what the settings mean: the file's problems (file, line, key, reason), the
schedule in plain words, what the sequence-number settings will do, the outcome of a
test logon and, with an engine attached, the engine's answer to reloading the session.

In the form each key shows where its value comes from: set in this section, inherited from
``[DEFAULT]`` (shown as the placeholder, in grey), or the engine's default. Clearing a field
removes the key from the section, so that it inherits again. Every change is one undo step;
the raw text view follows the form and the form follows the raw text.

*New session* asks for the keys a session needs (:class:`~widgets.manager.new_session.
NewSessionDialog`). *Apply to engine: reload session* saves the file and sends
``ReloadSession``: the running engine re-reads the session from the file it was started from
and restarts it, or refuses (naming file, line and key) and keeps it running.

Why one long module: it is one editor, :class:`SessionEditor`; the section list, the form of
:class:`KeyRow` s, the raw text and the explanations all follow the same :class:`CfgEditor` and undo
stack, and most of the length is keeping those views in step with each other.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Protocol

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QTextCursor, QTextFormat, QUndoStack
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QTextEdit,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from engine.client import EngineClient
from engine.commands import CommandAck, CommandResult, ReloadSession
from engine.fix.edit.cfgeditor import CfgEditor, CfgProblem, Section
from engine.fix.edit.keys import KeyInfo
from engine.fix.edit.logon import LogonOutcome
from engine.fix.edit.services import EditorServices
from widgets.empty_state import EmptyState
from widgets.manager.new_session import NewSessionDialog
from widgets.manager.undo import RAW_TEXT_ID, SnapshotCommand
from widgets.relay import thread_relay

#: Template of a new file.
NEW_FILE = """\
# FIX session settings (QuickFIX format), created with qwconsole.
# Keys in [DEFAULT] apply to every [SESSION] unless the session sets them itself.
[DEFAULT]
ConnectionType=initiator
HeartBtInt=30
StartTime=00:00:00
EndTime=00:00:00
SocketNodelay=Y
UseDataDictionary=Y
"""

#: Keys shown even when nothing sets them (the rest appear with "Show every key" or a filter).
ESSENTIAL = frozenset(
    k.upper()
    for k in (
        "BeginString",
        "SenderCompID",
        "TargetCompID",
        "ConnectionType",
        "DefaultApplVerID",
        "StartTime",
        "EndTime",
        "StartDay",
        "EndDay",
        "Weekdays",
        "TimeZone",
        "HeartBtInt",
        "ResetOnLogon",
        "ResetOnLogout",
        "ResetOnDisconnect",
        "DataDictionary",
        "TransportDataDictionary",
        "AppDataDictionary",
        "SocketConnectHost",
        "SocketConnectPort",
        "SocketAcceptHost",
        "SocketAcceptPort",
        "FileStorePath",
        "FileLogPath",
    )
)

#: Width of the key names column in the form, in pixels (the longest key fits).
LABEL_WIDTH = 250

_ERROR = QColor("#e5534b")
_WARN = QColor("#c69026")
_SOURCE_TEXT = {"session": "set here", "default": "from [DEFAULT]", "engine": "engine default"}


class RowEdited(Protocol):
    """Callback of a form row: ``on_edit(row, clear=False)``."""

    def __call__(self, row: KeyRow, clear: bool = False) -> None:
        """Handle an edit of ``row`` (``clear``: remove the key from the section)."""
        ...


class KeyRow:
    """The widgets of one key in the form."""

    def __init__(self, info: KeyInfo, on_edit: RowEdited) -> None:
        self.info = info
        self.has_problem = False
        self.label = QLabel(info.name)
        self.label.setToolTip(f"{info.name}: {info.doc}")
        # One label width for every group, so that the editors line up down the whole form.
        self.label.setMinimumWidth(LABEL_WIDTH)
        self.label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.combo: QComboBox | None = None
        self.line: QLineEdit | None = None
        if info.kind in ("bool", "choice"):
            combo = QComboBox()
            combo.setObjectName(f"key_{info.name}")
            combo.addItem("")
            combo.addItems(list(info.choices))
            combo.activated.connect(lambda _i: on_edit(self))
            combo.setMinimumWidth(140)
            self.combo = combo
            editor: QWidget = combo
        else:
            line = QLineEdit()
            line.setObjectName(f"key_{info.name}")
            if info.kind == "secret":
                line.setEchoMode(QLineEdit.EchoMode.PasswordEchoOnEdit)
            line.editingFinished.connect(lambda: on_edit(self))
            self.line = line
            editor = line
        editor.setToolTip(info.doc)
        self.editor = editor
        self.source = QLabel()
        self.source.setMinimumWidth(104)
        self.reset = QToolButton()
        self.reset.setText("↺")
        self.reset.setToolTip("Remove this key from the section (inherit the value again)")
        self.reset.setAutoRaise(True)
        self.reset.clicked.connect(lambda: on_edit(self, clear=True))
        self.problem = QLabel()
        self.problem.setWordWrap(True)
        self.problem.setProperty("state", "bad")
        self.problem.setVisible(False)
        self.widget = QWidget()
        row = QHBoxLayout(self.widget)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(editor, 1)
        row.addWidget(self.source)
        row.addWidget(self.reset)

    def value(self) -> str:
        """Return what the user entered (``""`` = not set in this section)."""
        if self.combo is not None:
            return self.combo.currentText() if self.combo.currentIndex() > 0 else ""
        assert self.line is not None
        return self.line.text().strip()

    def show(self, own: str | None, effective: str | None, source: str, in_default: bool) -> None:
        """Display a key's own value, or the inherited one as a grey placeholder."""
        shown_source = "set here" if own is not None else _SOURCE_TEXT[source]
        if in_default and own is None:
            shown_source = "engine default" if effective else "not set"
        if own is None and source == "engine" and not effective:
            shown_source = "not set"
        self.source.setText(shown_source)
        self.source.setProperty("state", "" if own is not None else "muted")
        self.source.style().unpolish(self.source)
        self.source.style().polish(self.source)
        self.reset.setEnabled(own is not None)
        if self.combo is not None:
            self.combo.blockSignals(True)
            inherit = f"inherit: {effective}" if effective else "(not set)"
            self.combo.setItemText(0, inherit)
            idx = self.combo.findText(own) if own is not None else 0
            if own is not None and idx < 0:
                self.combo.addItem(own)
                idx = self.combo.count() - 1
            self.combo.setCurrentIndex(max(idx, 0))
            self.combo.blockSignals(False)
        else:
            assert self.line is not None
            self.line.blockSignals(True)
            self.line.setText(own or "")
            self.line.setPlaceholderText(effective or "")
            self.line.blockSignals(False)

    def set_problems(self, problems: list[CfgProblem]) -> None:
        """Show the key's problems under it (red for errors, amber for warnings)."""
        self.has_problem = bool(problems)
        if not problems:
            self.problem.setVisible(False)
            return
        worst = "error" if any(p.severity == "error" for p in problems) else "warning"
        self.problem.setText("\n".join(f"line {p.line}: {p.reason}" for p in problems))
        self.problem.setProperty("state", "bad" if worst == "error" else "warn")
        self.problem.style().unpolish(self.problem)
        self.problem.style().polish(self.problem)
        self.problem.setVisible(True)


class SessionEditor(QWidget):
    """Edit a QuickFIX-style ``.cfg`` file.

    Parameters
    ----------
    services : EditorServices
        Engine-side models and previews.
    client : EngineClient, optional
        The running engine, whose sessions *Apply to engine* reloads.

    Signals
    -------
    state_changed()
        The file was opened, edited, saved or undone (title and modified marker may change).
    """

    state_changed = Signal()

    def __init__(
        self,
        services: EditorServices,
        parent: QWidget | None = None,
        *,
        client: EngineClient | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("sessionEditor")
        self.services = services
        self.client = client
        #: The engine's last answer to a reload (a CommandResult or the exception), if any.
        self.last_reload: object | None = None
        self.new_dialog: NewSessionDialog | None = None
        self.cfg: CfgEditor | None = None
        self.undo_stack = QUndoStack(self)
        self.undo_stack.cleanChanged.connect(self._on_clean_changed)
        self.section = -1
        self.rows: dict[str, KeyRow] = {}
        self.extra_rows: dict[str, QLineEdit] = {}
        self.last_outcome: LogonOutcome | None = None
        self._raw_timer = QTimer(self)
        self._raw_timer.setSingleShot(True)
        self._raw_timer.setInterval(500)
        self._raw_timer.timeout.connect(self._commit_raw)
        self._build()
        self._show_empty(True)

    # ------------------------------------------------------------------ building
    def _build(self) -> None:
        self.empty = EmptyState(
            "No session file open",
            "Open a QuickFIX-style .cfg file (QuickFIX, QuickFIX/J, QuickFIX/n and qwconsole "
            "files all work) or start a new one. Saving an unchanged file writes it back byte "
            "for byte, comments included.",
            "File ▸ Open session file… (Ctrl+O) or New session file",
        )
        # Left: sections.
        self.sections_list = QListWidget()
        self.sections_list.setObjectName("sessionList")
        self.sections_list.setSpacing(3)
        self.sections_list.currentRowChanged.connect(self._on_section_selected)
        self.new_button = QPushButton("New session")
        self.new_button.setToolTip("Add a [SESSION]: role, BeginString, CompIDs and address")
        self.new_button.clicked.connect(self.ask_new_session)
        self.clone_button = QPushButton("Clone")
        self.clone_button.clicked.connect(self.clone_session)
        self.delete_button = QPushButton("Delete")
        self.delete_button.clicked.connect(self.delete_section)
        left = QWidget()
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        title = QLabel("Sections")
        title.setProperty("state", "muted")
        lv.addWidget(title)
        lv.addWidget(self.sections_list, 1)
        buttons = QHBoxLayout()
        for b in (self.new_button, self.clone_button, self.delete_button):
            buttons.addWidget(b)
        lv.addLayout(buttons)

        # Centre: form and raw text.
        self.filter_edit = QLineEdit()
        self.filter_edit.setPlaceholderText("Filter keys (name or meaning)")
        self.filter_edit.setClearButtonEnabled(True)
        self.filter_edit.textChanged.connect(lambda _t: self._apply_visibility())
        self.all_keys = QCheckBox("Show every key")
        self.all_keys.toggled.connect(lambda _c: self._apply_visibility())
        self.section_title = QLabel()
        self.section_title.setObjectName("sectionTitle")
        f = QFont(self.section_title.font())
        f.setPointSizeF(f.pointSizeF() * 1.2)
        f.setBold(True)
        self.section_title.setFont(f)
        form_host = QWidget()
        self.form_layout = QVBoxLayout(form_host)
        self.form_layout.setContentsMargins(4, 4, 12, 4)
        self.groups: dict[str, tuple[QGroupBox, QFormLayout]] = {}
        for group, names in self.services.key_groups():
            box = QGroupBox(group)
            form = QFormLayout(box)
            form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
            form.setLabelAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            for name in names:
                info = self.services.key_info(name)
                if info is None:
                    continue
                row = KeyRow(info, self._on_row_edit)
                self.rows[info.name.upper()] = row
                form.addRow(row.label, row.widget)
                form.addRow("", row.problem)
            self.groups[group] = (box, form)
            self.form_layout.addWidget(box)
        self.extra_box = QGroupBox("Other keys in this section (kept as written)")
        self.extra_form = QFormLayout(self.extra_box)
        self.form_layout.addWidget(self.extra_box)
        self.form_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(form_host)
        self.form_scroll = scroll
        form_page = QWidget()
        fv = QVBoxLayout(form_page)
        fv.setContentsMargins(0, 0, 0, 0)
        head = QHBoxLayout()
        head.addWidget(self.section_title, 1)
        head.addWidget(self.filter_edit, 1)
        head.addWidget(self.all_keys)
        fv.addLayout(head)
        fv.addWidget(scroll, 1)
        self.raw = QPlainTextEdit()
        self.raw.setObjectName("cfgRaw")
        mono = QFont("DejaVu Sans Mono")
        mono.setStyleHint(QFont.StyleHint.Monospace)
        self.raw.setFont(mono)
        self.raw.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.raw.textChanged.connect(self._raw_timer.start)
        self.center_tabs = QTabWidget()
        self.center_tabs.addTab(form_page, "Form")
        self.center_tabs.addTab(self.raw, "Raw text")

        # Right: meaning.
        self.problems_list = QListWidget()
        self.problems_list.setObjectName("problemsList")
        self.problems_list.setWordWrap(True)
        self.problems_list.setMinimumHeight(40)
        self.problems_list.setSpacing(2)
        self.problems_list.itemActivated.connect(self._on_problem_activated)
        self.problems_list.itemClicked.connect(self._on_problem_activated)
        self.schedule_label = QLabel()
        self.schedule_label.setObjectName("schedulePreview")
        self.schedule_label.setWordWrap(True)
        self.schedule_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.reset_label = QLabel()
        self.reset_label.setObjectName("resetExplanation")
        self.reset_label.setWordWrap(True)
        self.test_button = QPushButton("Test connection")
        self.test_button.setObjectName("testConnection")
        self.test_button.setToolTip(
            "Connect and log on with this session's settings (fresh sequence numbers, the "
            "session's store is not touched), then log out"
        )
        self.test_button.clicked.connect(self.test_connection)
        self.test_label = QLabel("Not tested.")
        self.test_label.setObjectName("testOutcome")
        self.test_label.setWordWrap(True)
        self.test_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.test_detail = QLabel()
        self.test_detail.setObjectName("testDetail")
        self.test_detail.setWordWrap(True)
        self.test_detail.setProperty("state", "muted")
        self.test_detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # The file: which engine it is written for, where its relative paths start.
        self.dialect_combo = QComboBox()
        self.dialect_combo.setObjectName("dialect")
        for name, shown in self.services.dialects().items():
            self.dialect_combo.addItem(shown, name)
        self.dialect_combo.setToolTip(
            "The engine this file is written for: its rules apply (QuickFIX/Go: no StartTime/"
            "EndTime means always in session, UseDataDictionary is not read). Choosing one "
            "writes a '# dialect: …' comment, which every engine ignores."
        )
        self.dialect_combo.activated.connect(self._on_dialect_chosen)
        self.dialect_note = QLabel()
        self.dialect_note.setProperty("state", "muted")
        self.base_label = QLabel()
        self.base_label.setObjectName("baseDir")
        self.base_label.setWordWrap(True)
        self.base_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.base_button = QPushButton("Change…")
        self.base_button.setToolTip(
            "Relative paths (dictionaries, store and log folders) are resolved from the folder "
            "the engine that reads the file runs in: QuickFIX resolves them from its working "
            "directory, qwconsole from the file's folder"
        )
        self.base_button.clicked.connect(self.ask_base_dir)
        fbox = QGroupBox("File")
        fform = QFormLayout(fbox)
        drow = QHBoxLayout()
        drow.addWidget(self.dialect_combo)
        drow.addWidget(self.dialect_note, 1)
        fform.addRow("Dialect", drow)
        brow = QHBoxLayout()
        brow.addWidget(self.base_label, 1)
        brow.addWidget(self.base_button)
        fform.addRow("Paths from", brow)
        right = QWidget()
        rv = QVBoxLayout(right)
        rv.setContentsMargins(0, 0, 0, 0)
        pbox = QGroupBox("Problems")
        pl = QVBoxLayout(pbox)
        pl.addWidget(self.problems_list)
        sbox = QGroupBox("Schedule")
        sl = QVBoxLayout(sbox)
        sl.addWidget(self.schedule_label)
        rbox = QGroupBox("Sequence numbers")
        rl = QVBoxLayout(rbox)
        rl.addWidget(self.reset_label)
        tbox = QGroupBox("Connection")
        tl = QVBoxLayout(tbox)
        tl.addWidget(self.test_button, 0, Qt.AlignmentFlag.AlignLeft)
        tl.addWidget(self.test_label)
        tl.addWidget(self.test_detail)
        self.reload_button = QPushButton("Apply to engine: reload session")
        self.reload_button.setObjectName("reloadSession")
        self.reload_button.setToolTip(
            "Save the file, then ask the running engine to re-read this session from the file "
            "it was started from and restart it (log out, log on again as scheduled). A file "
            "with errors is refused and the session keeps running."
        )
        self.reload_button.clicked.connect(self.reload_session)
        self.reload_label = QLabel()
        self.reload_label.setObjectName("reloadOutcome")
        self.reload_label.setWordWrap(True)
        self.reload_label.setTextFormat(Qt.TextFormat.RichText)
        self.reload_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        ebox = QGroupBox("Running engine")
        el = QVBoxLayout(ebox)
        el.addWidget(self.reload_button, 0, Qt.AlignmentFlag.AlignLeft)
        el.addWidget(self.reload_label)
        for box in (fbox, pbox, sbox, rbox, tbox, ebox):
            rv.addWidget(box)
        rv.addStretch(1)
        right_scroll = QScrollArea()
        right_scroll.setWidgetResizable(True)
        right_scroll.setWidget(right)

        self.splitter = QSplitter()
        self.splitter.addWidget(left)
        self.splitter.addWidget(self.center_tabs)
        self.splitter.addWidget(right_scroll)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 3)
        self.splitter.setStretchFactor(2, 2)
        self.splitter.setSizes([260, 760, 520])
        outer = QVBoxLayout(self)
        outer.setContentsMargins(6, 6, 6, 6)
        outer.addWidget(self.empty)
        outer.addWidget(self.splitter, 1)

    def _show_empty(self, empty: bool) -> None:
        self.empty.setVisible(empty)
        self.splitter.setVisible(not empty)

    def _on_clean_changed(self, _clean: bool) -> None:
        self.state_changed.emit()

    # ------------------------------------------------------------------ files
    @property
    def modified(self) -> bool:
        """Whether the open file has unsaved changes."""
        return self.cfg is not None and self.cfg.modified

    @property
    def file_name(self) -> str:
        """Return the open file's name (``""`` when none)."""
        return Path(self.cfg.source).name if self.cfg is not None else ""

    def open_file(self, path: str | Path) -> None:
        """Open ``path``; raises OSError if it cannot be read."""
        self._set_cfg(self.services.open_cfg(path))

    def new_file(self, path: str | Path) -> None:
        """Start a new file that will be saved to ``path``."""
        self._set_cfg(self.services.new_cfg(NEW_FILE, str(path)))

    def _set_cfg(self, cfg: CfgEditor) -> None:
        self.cfg = cfg
        self.undo_stack.clear()
        self.last_outcome = None
        self.test_label.setText("Not tested.")
        self.test_detail.setText("")
        self._show_empty(False)
        self.section = -1
        self.refresh()
        self.state_changed.emit()

    def save(self, path: str | Path | None = None) -> Path:
        """Write the file (to ``path``, else where it came from); raises OSError."""
        assert self.cfg is not None
        self._commit_raw()
        target = self.cfg.save(path)
        self.undo_stack.setClean()
        self.refresh()
        self.state_changed.emit()
        return target

    # ------------------------------------------------------------------ edits (undoable)
    def _apply_text(self, text: str) -> None:
        assert self.cfg is not None
        if self.cfg.text() != text:
            self.cfg.set_text(text)
        self.refresh()
        self.state_changed.emit()

    def _push(self, label: str, before: str, merge_id: int = -1) -> None:
        assert self.cfg is not None
        after = self.cfg.text()
        if after == before:
            return
        self.undo_stack.push(SnapshotCommand(label, before, after, self._apply_text, merge_id))

    def set_dialect(self, dialect: str) -> None:
        """State the file's dialect (one undo step); its problems are checked again."""
        assert self.cfg is not None
        before = self.cfg.text()
        self.cfg.set_dialect(dialect)
        self._push(f"Dialect {self.services.dialects().get(dialect, dialect)}", before)

    def _on_dialect_chosen(self, index: int) -> None:
        name = self.dialect_combo.itemData(index)
        if self.cfg is not None and isinstance(name, str) and name != self.cfg.dialect:
            self.set_dialect(name)

    def set_base_dir(self, folder: str | Path) -> None:
        """Resolve the file's relative paths from ``folder`` (not saved in the file)."""
        assert self.cfg is not None
        self.cfg.set_base_dir(folder)
        self.refresh(keep_raw=True)

    def ask_base_dir(self) -> None:
        """Ask for the folder relative paths start from."""
        if self.cfg is None:
            return
        folder = QFileDialog.getExistingDirectory(
            self, "Resolve relative paths from", str(self.cfg.base_dir)
        )
        if folder:
            self.set_base_dir(folder)

    def set_value(self, section: int, key: str, value: str) -> None:
        """Set ``key`` in ``section`` (``""`` removes it: the value is inherited again)."""
        assert self.cfg is not None
        before = self.cfg.text()
        if value == "":
            self.cfg.remove(section, key)
            label = f"Clear {key}"
        else:
            self.cfg.set(section, key, value)
            label = f"Set {key} = {value}"
        self._push(label, before)

    def ask_new_session(self) -> NewSessionDialog | None:
        """Open the *New session* dialog (prefilled from the selected session); add on OK."""
        if self.cfg is None:
            return None
        dialog = NewSessionDialog(self.cfg, self.services, self.section, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.accepted.connect(lambda: self.new_session(dialog.values()))
        self.new_dialog = dialog
        dialog.open()
        return dialog

    def new_session(self, values: dict[str, str] | None = None) -> int:
        """Add a ``[SESSION]`` (with ``values``, or a starting point to fill in) and select it."""
        assert self.cfg is not None
        if values is None:
            n = len(self.cfg.session_sections()) + 1
            values = {"BeginString": "FIX.4.4", "SenderCompID": "ME", "TargetCompID": f"NEW{n}"}
        before = self.cfg.text()
        index = self.cfg.add_session(values)
        self._push("New session", before)
        self.select_section(index)
        return index

    def clone_session(self) -> None:
        """Append a copy of the selected session and select it."""
        if self.cfg is None or self.section not in self.cfg.session_sections():
            return
        before = self.cfg.text()
        index = self.cfg.clone_session(self.section)
        self._push(f"Clone {self.cfg.title(self.section)}", before)
        self.select_section(index)

    def delete_section(self) -> None:
        """Delete the selected section (with the comment just above it)."""
        if self.cfg is None or self.section < 0:
            return
        before = self.cfg.text()
        label = f"Delete {self.cfg.title(self.section)}"
        self.cfg.delete_section(self.section)
        self._push(label, before)
        self.select_section(max(0, self.section - 1))

    def _on_row_edit(self, row: KeyRow, clear: bool = False) -> None:
        if self.cfg is None or self.section < 0:
            return
        value = "" if clear else row.value()
        own = self.cfg.get(self.section, row.info.name)
        if (own or "") == value:
            return
        self.set_value(self.section, row.info.name, value)

    def _on_extra_edit(self, key: str, line: QLineEdit) -> None:
        if self.cfg is None or self.section < 0:
            return
        if (self.cfg.get(self.section, key) or "") != line.text().strip():
            self.set_value(self.section, key, line.text().strip())

    def _commit_raw(self) -> None:
        self._raw_timer.stop()
        if self.cfg is None:
            return
        text = self.raw.toPlainText()
        current = self.cfg.text()
        # The view shows LF; keep the file's own line endings when only LF/CRLF differ.
        if text == current.replace("\r\n", "\n"):
            return
        if "\r\n" in current:
            text = text.replace("\n", "\r\n")
        before = current
        self.cfg.set_text(text)
        self._push("Edit raw text", before, RAW_TEXT_ID)
        self.refresh(keep_raw=True)
        self.state_changed.emit()

    # ------------------------------------------------------------------ views
    def select_section(self, index: int) -> None:
        """Show section ``index`` (``[DEFAULT]`` counts) in the form."""
        if 0 <= index < self.sections_list.count():
            self.sections_list.setCurrentRow(index)
        self._on_section_selected(self.sections_list.currentRow())

    def _on_section_selected(self, index: int) -> None:
        if self.cfg is None:
            return
        self.section = index
        self._refresh_form()
        self._refresh_meaning()

    def refresh(self, keep_raw: bool = False) -> None:
        """Re-read everything from the model (after an edit, undo, open or save)."""
        cfg = self.cfg
        if cfg is None:
            return
        problems = cfg.problems()
        by_section: dict[int, list[CfgProblem]] = {}
        for p in problems:
            by_section.setdefault(p.section, []).append(p)
        self.sections_list.blockSignals(True)
        self.sections_list.clear()
        for s in cfg.sections():
            self.sections_list.addItem(self._section_item(cfg, s, by_section.get(s.index, [])))
        count = self.sections_list.count()
        if self.section < 0 or self.section >= count:
            sessions = cfg.session_sections()
            self.section = sessions[0] if sessions else (0 if count else -1)
        if self.section >= 0:
            self.sections_list.setCurrentRow(self.section)
        self.sections_list.blockSignals(False)

        self.problems_list.clear()
        for p in problems:
            key = f"{p.key}: " if p.key else ""
            item = QListWidgetItem(f"{Path(p.source).name}:{p.line}  {key}{p.reason}")
            item.setForeground(_ERROR if p.severity == "error" else _WARN)
            item.setData(Qt.ItemDataRole.UserRole, (p.section, p.key, p.line))
            item.setToolTip(f"{p.severity}: {p.source}:{p.line}: {key}{p.reason}")
            self.problems_list.addItem(item)
        if not problems:
            self.problems_list.addItem(
                QListWidgetItem("No problems: the engine accepts this file.")
            )

        i = self.dialect_combo.findData(cfg.dialect)
        self.dialect_combo.setCurrentIndex(max(i, 0))
        self.dialect_note.setText(cfg.dialect_source())
        self.base_label.setText(str(cfg.base_dir))
        if not keep_raw:
            self._set_raw(cfg.text())
        self._mark_raw_lines(problems)
        self._refresh_form()
        self._refresh_meaning()
        self.clone_button.setEnabled(self.section in cfg.session_sections())
        self.delete_button.setEnabled(self.section >= 0)

    @staticmethod
    def _section_item(cfg: CfgEditor, s: Section, ps: list[CfgProblem]) -> QListWidgetItem:
        errors = sum(1 for p in ps if p.severity == "error")
        warnings = len(ps) - errors
        label = cfg.title(s.index)
        if s.session >= 0:
            role = cfg.effective(s.index, "ConnectionType")[0] or "?"
            key = "SocketConnect" if role == "initiator" else "SocketAccept"
            host = cfg.effective(s.index, f"{key}Host")[0] or ""
            port = cfg.effective(s.index, f"{key}Port")[0] or "?"
            label += f"\n    {role}  {host + ':' if host else 'port '}{port}"
        else:
            label += f"\n    {len(cfg.keys(s.index))} keys"
        marks = []
        if errors:
            marks.append(f"{errors} error{'s' if errors > 1 else ''}")
        if warnings:
            marks.append(f"{warnings} warning{'s' if warnings > 1 else ''}")
        item = QListWidgetItem(label + (f"\n    {', '.join(marks)}" if marks else ""))
        if errors:
            item.setForeground(_ERROR)
        item.setToolTip(f"line {s.line}")
        return item

    def _set_raw(self, text: str) -> None:
        shown = text.replace("\r\n", "\n")
        if self.raw.toPlainText() == shown:
            return
        pos = self.raw.textCursor().position()
        bar = self.raw.verticalScrollBar().value()
        self.raw.blockSignals(True)
        self.raw.setPlainText(shown)
        self.raw.blockSignals(False)
        cursor = self.raw.textCursor()
        cursor.setPosition(min(pos, len(shown)))
        self.raw.setTextCursor(cursor)
        self.raw.verticalScrollBar().setValue(bar)

    def _mark_raw_lines(self, problems: Sequence[CfgProblem]) -> None:
        marks = []
        doc = self.raw.document()
        for p in problems:
            block = doc.findBlockByNumber(p.line - 1)
            if not block.isValid():
                continue
            sel = QTextEdit.ExtraSelection()
            color = QColor(_ERROR if p.severity == "error" else _WARN)
            color.setAlpha(60)
            sel.format.setBackground(color)
            sel.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
            sel.format.setToolTip(f"{p.key}: {p.reason}" if p.key else p.reason)
            cursor = QTextCursor(block)
            sel.cursor = cursor
            marks.append(sel)
        self.raw.setExtraSelections(marks)

    def _refresh_form(self) -> None:
        cfg = self.cfg
        if cfg is None or self.section < 0:
            return
        sections = cfg.sections()
        if self.section >= len(sections):
            return
        sec = sections[self.section]
        in_default = sec.name.upper() == "DEFAULT"
        self.section_title.setText(
            f"{cfg.title(sec.index)}   ·   line {sec.line}"
            + ("   ·   inherited by every session" if in_default else "")
        )
        problems: dict[str, list[CfgProblem]] = {}
        for p in cfg.problems():
            if p.section == sec.index and p.key:
                problems.setdefault(p.key.upper(), []).append(p)
        for up, row in self.rows.items():
            own = cfg.get(sec.index, row.info.name)
            if in_default:
                effective = own if own is not None else (row.info.default or None)
                source = "session" if own is not None else "engine"
            else:
                effective, source = cfg.effective(sec.index, row.info.name)
            row.show(own, effective, source, in_default)
            row.set_problems(problems.get(up, []))
        # Keys the form has no row for (fail-over hosts, AppDataDictionary.<v>, custom keys).
        while self.extra_form.rowCount():
            self.extra_form.removeRow(0)
        self.extra_rows = {}
        for name, value, line in cfg.keys(sec.index):
            if name.upper() in self.rows:
                continue
            edit = QLineEdit(value)
            edit.setObjectName(f"extra_{name}")
            edit.setToolTip(f"line {line}")
            edit.editingFinished.connect(lambda n=name, e=edit: self._on_extra_edit(n, e))
            self.extra_form.addRow(name, edit)
            self.extra_rows[name] = edit
        self._apply_visibility()

    def _apply_visibility(self) -> None:
        cfg = self.cfg
        if cfg is None or self.section < 0:
            return
        needle = self.filter_edit.text().strip().lower()
        show_all = self.all_keys.isChecked()
        for _group, (box, form) in self.groups.items():
            visible = 0
            for up, row in self.rows.items():
                if row.info.group != _group:
                    continue
                _value, source = cfg.effective(self.section, row.info.name)
                is_set = source != "engine" or cfg.get(self.section, row.info.name) is not None
                if needle:
                    show = needle in row.info.name.lower() or needle in row.info.doc.lower()
                else:
                    show = show_all or is_set or up in ESSENTIAL or row.has_problem
                form.setRowVisible(row.label, show)
                form.setRowVisible(row.problem, show and row.has_problem)
                visible += int(show)
            box.setVisible(visible > 0)
        self.extra_box.setVisible(bool(self.extra_rows))

    def _refresh_meaning(self) -> None:
        cfg = self.cfg
        if cfg is None:
            return
        sessions = cfg.session_sections()
        self.test_button.setEnabled(False)
        self._update_reload(self.section in sessions)
        if self.section not in sessions:
            self.schedule_label.setText(
                "Select a session to see its schedule: [DEFAULT] values apply to every "
                "session that does not set them."
            )
            self.reset_label.setText("")
            return
        settings = cfg.session_settings(self.section)
        if settings is None:
            self.schedule_label.setText("Fix this session's errors to see its schedule.")
            self.reset_label.setText("Fix this session's errors to see what they will do.")
            return
        lines = self.services.schedule_preview(settings, self.services.now_ns())
        self.schedule_label.setText(_html_lines(lines))
        self.reset_label.setText(_html_lines(self.services.reset_explanation(settings)))
        is_initiator = (cfg.effective(self.section, "ConnectionType")[0] or "") == "initiator"
        self.test_button.setEnabled(is_initiator and not self._testing)
        if not is_initiator:
            self.test_button.setToolTip("Acceptor sessions wait for the counterparty to connect")

    _testing = False

    def _on_problem_activated(self, item: QListWidgetItem) -> None:
        data = item.data(Qt.ItemDataRole.UserRole)
        if not data:
            return
        section, key, _line = data
        if section >= 0 and section != self.section:
            self.select_section(section)
        row = self.rows.get(str(key).upper())
        if row is not None:
            self.center_tabs.setCurrentIndex(0)
            self.form_scroll.ensureWidgetVisible(row.editor)
            row.editor.setFocus()

    # ------------------------------------------------------------------ test connection
    def test_connection(self) -> None:
        """Log on with the selected session's settings in a worker thread; show the outcome."""
        cfg = self.cfg
        if cfg is None or self._testing:
            return
        settings = cfg.session_settings(self.section)
        if settings is None:
            self.test_label.setText("Fix this session's errors first.")
            return
        host = cfg.effective(self.section, "SocketConnectHost")[0]
        port = cfg.effective(self.section, "SocketConnectPort")[0]
        self._testing = True
        self.test_button.setEnabled(False)
        self.test_label.setProperty("state", "muted")
        self.test_label.setText(f"Connecting to {host}:{port} and logging on…")
        base = cfg.base_dir
        services, relay, me = self.services, thread_relay(), weakref.ref(self)

        def work() -> None:
            try:
                outcome: object = services.test_logon(settings, base, 5.0)
            except Exception as e:  # any failure is the outcome to show
                outcome = e
            relay.post(me, "_on_logon_done", outcome)

        threading.Thread(target=work, name="fix-test-logon", daemon=True).start()

    def _on_logon_done(self, outcome: object) -> None:
        self._testing = False
        if isinstance(outcome, Exception):
            self.test_label.setProperty("state", "bad")
            self.test_label.setText(f"Test failed: {outcome}")
        elif isinstance(outcome, LogonOutcome):
            result = outcome
            self.last_outcome = result
            self.test_label.setProperty("state", "ok" if result.ok else "bad")
            detail = ""
            if result.sent:
                detail += f"<br>Sent <tt>{_escape(result.sent[0])}</tt>"
            if result.received:
                detail += f"<br>Received <tt>{_escape(result.received[0])}</tt>"
            if not result.ok and result.events:
                detail += f"<br>{_escape(result.events[-1])}"
            self.test_label.setText(
                ("✔ " if result.ok else "✖ ") + _escape(result.summary) + detail
            )
        self.test_label.style().unpolish(self.test_label)
        self.test_label.style().polish(self.test_label)
        self._refresh_meaning()

    # ------------------------------------------------------------------ reload in the engine
    def _update_reload(self, is_session: bool) -> None:
        attached = self.client is not None
        self.reload_button.setEnabled(attached and is_session and not self._reloading)
        if self.reload_label.text():
            return
        if self.client is None:
            self.reload_button.setToolTip("No engine attached: attach one to reload its sessions")
            self._show_reload("muted", "No engine attached: changes only go to the file.")
        else:
            self._show_reload(
                "muted",
                f"Attached to engine “{_escape(self.client.name)}”: reloading saves this file, "
                "then the engine re-reads the session from the file it was started from.",
            )

    _reloading = False

    def reload_session(self) -> Future[CommandResult] | None:
        """Save the file, then ask the engine to reload the selected session from its file."""
        cfg = self.cfg
        if cfg is None or self.section not in cfg.session_sections():
            return None
        sid = cfg.title(self.section)
        if self.client is None:
            self._on_reload_done(sid, RuntimeError("no engine attached"))
            return None
        if cfg.modified:
            try:
                self.save()
            except OSError as e:
                self._on_reload_done(sid, e)
                return None
        self._reloading = True
        self.reload_button.setEnabled(False)
        self._show_reload("muted", f"⟳ Asking the engine to reload {_escape(sid)}…")
        future = self.client.send(ReloadSession(session_id=sid))
        relay, me = thread_relay(), weakref.ref(self)

        def done(f: Future[CommandResult]) -> None:
            try:
                answer: object = f.result()
            except Exception as e:  # the answer shown is whatever went wrong
                answer = e
            relay.post(me, "_on_reload_done", sid, answer)

        future.add_done_callback(done)
        return future

    def _on_reload_done(self, sid: str, answer: object) -> None:
        self._reloading = False
        self.last_reload = answer
        if isinstance(answer, CommandAck):
            text = f"✔ {_escape(sid)} {_parts(answer.detail)}"
            read = _file_read(answer.detail)
            if read is not None and self.cfg is not None and not _same_file(read, self.cfg.source):
                text += (
                    f"<br>⚠ The engine read {_escape(read)}, not {_escape(self.cfg.source)} "
                    "saved here: edit the engine's own file for the change to apply."
                )
            self._show_reload("ok", text)
        elif isinstance(answer, Exception):
            self._show_reload("bad", f"✖ Reload of {_escape(sid)} failed: {_escape(str(answer))}")
        else:
            reason = getattr(answer, "reason", str(answer))
            self._show_reload(
                "bad", f"✖ The engine refused to reload {_escape(sid)}:<br>{_parts(reason)}"
            )
        self._refresh_meaning()

    def _show_reload(self, state: str, html: str) -> None:
        self.reload_label.setProperty("state", state)
        self.reload_label.setText(html)
        self.reload_label.style().unpolish(self.reload_label)
        self.reload_label.style().polish(self.reload_label)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _file_read(detail: str) -> str | None:
    # "reloaded from /path/sessions.cfg ([SESSION] at line 10): ..." (engine.venues.fix.link).
    head, sep, _rest = detail.partition(" ([SESSION] at line ")
    if not sep or not head.startswith("reloaded from "):
        return None
    return head.removeprefix("reloaded from ")


def _same_file(a: str, b: str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return a == b


def _parts(answer: str) -> str:
    # The engine joins the parts of an answer (changes, problems, outcome) with "; ".
    return "<br>".join(_escape(part) for part in answer.split("; "))


def _html_lines(lines: list[str]) -> str:
    out = []
    for line in lines:
        esc = _escape(line)
        if line.startswith("  "):
            out.append(f"<tt>&nbsp;&nbsp;{esc.strip()}</tt>")
        else:
            out.append(esc)
    return "<br>".join(out)
