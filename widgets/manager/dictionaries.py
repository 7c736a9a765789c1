# SPDX-License-Identifier: MIT
"""The dictionary editor: a QuickFIX XML data dictionary, browsed, changed, checked and saved.

Left: the dictionary as a tree (header and trailer, messages with their repeating groups,
components with theirs, fields), filtered by a search box that also matches MsgTypes
(``35=D``), tags and enum values. Centre: the selected item: the members of a message, component
or group (each marked required or optional, and fields can be added or removed), or a field with
its enum values. Right: a new custom field (tag >= 5000, type, values, optionally added to a
message straight away); the differences against the base dictionary; a pasted FIX message
checked field by field against the edited dictionary; and the tags of a FIX log file that the
dictionary does not know, with sample values, ready to add.

Edits are undoable (one step each). The result is saved either as a complete QuickFIX XML
dictionary or as an overlay over the base (``docs/fix-dictionary-overlay.md``).

Why one long module: it is one editor, :class:`DictionaryEditor`; its tree, member tables and
side panes all read and change the same edited dictionary through one undo stack
(snapshot commands), so they are one class rather than panels passing the document around.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QFont, QUndoStack
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QSplitter,
    QStackedWidget,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine.fix.edit import dicteditor
from engine.fix.edit.dicteditor import Node
from engine.fix.edit.logscan import LogScan
from engine.fix.edit.services import EditorServices
from widgets.empty_state import EmptyState
from widgets.manager.undo import SnapshotCommand
from widgets.relay import thread_relay

_ERROR = QColor("#e5534b")
_WARN = QColor("#c69026")
_OK = QColor("#3fb950")
_ROLE = Qt.ItemDataRole.UserRole


def _item(text: str, *, align_right: bool = False, editable: bool = False) -> QTableWidgetItem:
    it = QTableWidgetItem(text)
    flags = it.flags() & ~Qt.ItemFlag.ItemIsEditable
    if editable:
        flags |= Qt.ItemFlag.ItemIsEditable
    it.setFlags(flags)
    if align_right:
        it.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return it


def _table(headers: list[str]) -> QTableWidget:
    t = QTableWidget(0, len(headers))
    t.setHorizontalHeaderLabels(headers)
    t.verticalHeader().setVisible(False)
    t.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    t.setAlternatingRowColors(True)
    t.horizontalHeader().setStretchLastSection(True)
    t.verticalHeader().setDefaultSectionSize(22)
    return t


def _cell(table: QTableWidget, row: int, col: int) -> str:
    it = table.item(row, col)
    return it.text().strip() if it is not None else ""


class DictionaryEditor(QWidget):
    """Edit a QuickFIX XML dictionary.

    Parameters
    ----------
    services : EditorServices
        Engine-side models.

    Signals
    -------
    state_changed()
        Opened, edited, saved or undone (title and modified marker may change).
    """

    state_changed = Signal()
    #: A background open failed: ``(path, reason naming file, line and element)``.
    open_failed = Signal(str, str)

    def __init__(self, services: EditorServices, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("dictionaryEditor")
        self.services = services
        self.ed: dicteditor.DictionaryEditor | None = None
        self.saved_spec: object = None
        self.path: tuple[str, ...] = ()
        self.field_name = ""
        self.undo_stack = QUndoStack(self)
        self.undo_stack.indexChanged.connect(self._on_index_changed)
        self.last_scan: LogScan | None = None
        self._scan_cancel = threading.Event()
        self.loading = False
        self._build()
        self._show_empty(True)

    # ------------------------------------------------------------------ building
    def _build(self) -> None:
        self.empty = EmptyState(
            "No dictionary open",
            "Open a QuickFIX XML data dictionary (FIX 4.0 to 5.0 SP2, FIXT 1.1) to browse its "
            "messages, components, groups and fields, add custom fields and enum values, check "
            "messages against it, and save it whole or as an overlay.",
            "File ▸ Open dictionary… — the shipped ones are in resources/fix/",
        )
        self.search = QLineEdit()
        self.search.setObjectName("dictSearch")
        self.search.setPlaceholderText("Search: name, 35=D, tag, enum value")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(lambda _t: self._fill_tree())
        self.tree = QTreeWidget()
        self.tree.setObjectName("dictTree")
        self.tree.setHeaderLabels(["Name", "Key", "Details"])
        self.tree.setUniformRowHeights(True)
        header = self.tree.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(0, 215)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.tree.currentItemChanged.connect(self._on_tree_current)
        self.tree.itemExpanded.connect(self._on_item_expanded)
        self._pending_fields: list[Node] = []
        self._fields_top: QTreeWidgetItem | None = None
        left = QWidget()
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        lv.addWidget(self.search)
        lv.addWidget(self.tree, 1)

        # Centre: members of a message/component/group, or a field's values.
        self.title = QLabel()
        f = QFont(self.title.font())
        f.setPointSizeF(f.pointSizeF() * 1.2)
        f.setBold(True)
        self.title.setFont(f)
        self.subtitle = QLabel()
        self.subtitle.setProperty("state", "muted")
        self.subtitle.setWordWrap(True)
        self.members = _table(["Kind", "Name", "Tag", "Type", "Required"])
        self.members.setObjectName("dictMembers")
        self.members.itemChanged.connect(self._on_member_changed)
        hh = self.members.horizontalHeader()
        hh.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        hh.setStretchLastSection(False)
        self.add_member_name = QComboBox()
        self.add_member_name.setEditable(True)
        self.add_member_name.setObjectName("addMemberName")
        self.add_member_name.setMinimumWidth(220)
        self.add_member_required = QCheckBox("required")
        self.add_member_button = QPushButton("Add field")
        self.add_member_button.clicked.connect(self._on_add_member)
        self.remove_member_button = QPushButton("Remove selected")
        self.remove_member_button.clicked.connect(self._on_remove_member)
        members_page = QWidget()
        mv = QVBoxLayout(members_page)
        mv.setContentsMargins(0, 0, 0, 0)
        mv.addWidget(self.members, 1)
        row = QHBoxLayout()
        row.addWidget(QLabel("Add"))
        row.addWidget(self.add_member_name, 1)
        row.addWidget(self.add_member_required)
        row.addWidget(self.add_member_button)
        row.addStretch(1)
        row.addWidget(self.remove_member_button)
        mv.addLayout(row)

        self.enums = _table(["Value", "Description"])
        self.enums.setObjectName("dictEnums")
        self.enums.setEditTriggers(QAbstractItemView.EditTrigger.AllEditTriggers)
        self.add_enum_button = QPushButton("Add value")
        self.add_enum_button.clicked.connect(self._on_add_enum_row)
        self.remove_enum_button = QPushButton("Remove value")
        self.remove_enum_button.clicked.connect(self._on_remove_enum_row)
        self.apply_enums_button = QPushButton("Apply values")
        self.apply_enums_button.setObjectName("applyEnums")
        self.apply_enums_button.clicked.connect(self._on_apply_enums)
        field_page = QWidget()
        fv = QVBoxLayout(field_page)
        fv.setContentsMargins(0, 0, 0, 0)
        fv.addWidget(self.enums, 1)
        er = QHBoxLayout()
        er.addWidget(self.add_enum_button)
        er.addWidget(self.remove_enum_button)
        er.addStretch(1)
        er.addWidget(self.apply_enums_button)
        fv.addLayout(er)
        self.overview = EmptyState("", "")
        self.pages = QStackedWidget()
        self.pages.addWidget(self.overview)
        self.pages.addWidget(members_page)
        self.pages.addWidget(field_page)
        self.status = QLabel()
        self.status.setObjectName("dictStatus")
        self.status.setWordWrap(True)
        center = QWidget()
        cv = QVBoxLayout(center)
        cv.setContentsMargins(0, 0, 0, 0)
        cv.addWidget(self.title)
        cv.addWidget(self.subtitle)
        cv.addWidget(self.pages, 1)
        cv.addWidget(self.status)

        self.side = QTabWidget()
        self.side.addTab(self._build_new_field(), "New field")
        self.side.addTab(self._build_diff(), "Differences")
        self.side.addTab(self._build_check(), "Check a message")
        self.side.addTab(self._build_scan(), "Unknown tags in a log")
        self.side.currentChanged.connect(self._on_side_tab)

        self.splitter = QSplitter()
        self.splitter.addWidget(left)
        self.splitter.addWidget(center)
        self.splitter.addWidget(self.side)
        self.splitter.setSizes([400, 560, 780])
        outer = QVBoxLayout(self)
        outer.setContentsMargins(6, 6, 6, 6)
        outer.addWidget(self.empty)
        outer.addWidget(self.splitter, 1)

    def _build_new_field(self) -> QWidget:
        page = QWidget()
        form = QFormLayout(page)
        self.nf_tag = QSpinBox()
        self.nf_tag.setObjectName("newFieldTag")
        self.nf_tag.setRange(5000, 99_999)
        self.nf_name = QLineEdit()
        self.nf_name.setObjectName("newFieldName")
        self.nf_name.setPlaceholderText("VenueTag")
        self.nf_type = QComboBox()
        self.nf_type.setObjectName("newFieldType")
        self.nf_type.addItems(list(self.services.field_types()))
        self.nf_enums = QPlainTextEdit()
        self.nf_enums.setObjectName("newFieldEnums")
        self.nf_enums.setPlaceholderText("Optional values, one per line: A=AGGRESSIVE")
        self.nf_enums.setMaximumHeight(110)
        self.nf_message = QComboBox()
        self.nf_message.setObjectName("newFieldMessage")
        self.nf_required = QCheckBox("required there")
        self.nf_add = QPushButton("Add field")
        self.nf_add.setObjectName("newFieldAdd")
        self.nf_add.clicked.connect(self._on_new_field)
        hint = QLabel("User-defined fields use tags 5000 and above.")
        hint.setProperty("state", "muted")
        form.addRow("Tag", self.nf_tag)
        form.addRow("Name", self.nf_name)
        form.addRow("Type", self.nf_type)
        form.addRow("Values", self.nf_enums)
        form.addRow("Add to message", self.nf_message)
        form.addRow("", self.nf_required)
        form.addRow("", self.nf_add)
        form.addRow("", hint)
        return page

    def _build_diff(self) -> QWidget:
        self.diff_list = QListWidget()
        self.diff_list.setObjectName("dictDiff")
        return self.diff_list

    def _build_check(self) -> QWidget:
        page = QWidget()
        v = QVBoxLayout(page)
        v.setContentsMargins(0, 0, 0, 0)
        self.check_input = QPlainTextEdit()
        self.check_input.setObjectName("checkInput")
        self.check_input.setPlaceholderText(
            "Paste a FIX message (SOH, | or ^A between fields; a log line's timestamp is skipped)"
        )
        self.check_input.setMaximumHeight(90)
        self.check_button = QPushButton("Check against the edited dictionary")
        self.check_button.setObjectName("checkButton")
        self.check_button.clicked.connect(self.check_message)
        self.check_summary = QLabel()
        self.check_summary.setObjectName("checkSummary")
        self.check_table = _table(["#", "Tag", "Name", "Value", "Meaning", "Result"])
        self.check_table.setObjectName("checkTable")
        v.addWidget(self.check_input)
        h = QHBoxLayout()
        h.addWidget(self.check_button)
        h.addWidget(self.check_summary, 1)
        v.addLayout(h)
        v.addWidget(self.check_table, 1)
        return page

    def _build_scan(self) -> QWidget:
        page = QWidget()
        v = QVBoxLayout(page)
        v.setContentsMargins(0, 0, 0, 0)
        self.scan_path = QLineEdit()
        self.scan_path.setObjectName("scanPath")
        self.scan_path.setPlaceholderText("FIX log file (one message per line)")
        self.scan_button = QPushButton("Scan")
        self.scan_button.setObjectName("scanButton")
        self.scan_button.clicked.connect(lambda: self.scan_log(self.scan_path.text().strip()))
        self.scan_path.returnPressed.connect(self.scan_button.click)
        self.scan_browse = QPushButton("Browse…")
        self.scan_browse.clicked.connect(self._on_scan_browse)
        self.scan_cancel = QPushButton("Cancel")
        self.scan_cancel.clicked.connect(self._scan_cancel.set)
        self.scan_cancel.setEnabled(False)
        self.scan_progress = QProgressBar()
        self.scan_progress.setRange(0, 0)
        self.scan_progress.setVisible(False)
        self.scan_summary = QLabel("Scan a log to list the tags this dictionary does not know.")
        self.scan_summary.setObjectName("scanSummary")
        self.scan_summary.setWordWrap(True)
        self.scan_table = _table(["Tag", "Seen", "Samples", "In MsgTypes", "Type", "Name"])
        self.scan_table.setObjectName("scanTable")
        self.scan_add = QPushButton("Add selected tags as fields")
        self.scan_add.setObjectName("scanAdd")
        self.scan_add.clicked.connect(self._on_scan_add)
        h = QHBoxLayout()
        h.addWidget(self.scan_path, 1)
        h.addWidget(self.scan_browse)
        h.addWidget(self.scan_button)
        h.addWidget(self.scan_cancel)
        v.addLayout(h)
        v.addWidget(self.scan_progress)
        v.addWidget(self.scan_summary)
        v.addWidget(self.scan_table, 1)
        v.addWidget(self.scan_add, 0, Qt.AlignmentFlag.AlignRight)
        return page

    def _show_empty(self, empty: bool) -> None:
        self.empty.setVisible(empty)
        self.splitter.setVisible(not empty)

    def _on_index_changed(self, _index: int) -> None:
        self.state_changed.emit()

    # ------------------------------------------------------------------ files
    @property
    def modified(self) -> bool:
        """Whether the dictionary changed since it was opened or last saved."""
        return self.ed is not None and self.ed.spec is not self.saved_spec

    @property
    def file_name(self) -> str:
        """Return the open dictionary's file name (``""`` when none)."""
        return Path(self.ed.source).name if self.ed is not None else ""

    def open_file(self, path: str | Path) -> None:
        """Open a dictionary; raises ValueError (file, line, element) or OSError."""
        self._set_editor(self.services.open_dictionary(path))

    def open_in_background(self, path: str | Path) -> None:
        """Parse a dictionary in a worker thread (FIX 5.0 SP2 takes half a second), then show it.

        :attr:`open_failed` reports an error; the editor keeps what it had until then.
        """
        self.loading = True
        self._say(f"Loading {path}…", "muted")
        services, relay, me = self.services, thread_relay(), weakref.ref(self)

        def work() -> None:
            try:
                result: object = services.open_dictionary(path)
            except (OSError, ValueError) as e:
                result = e
            relay.post(me, "_on_opened", str(path), result)

        threading.Thread(target=work, name="fix-dictionary-open", daemon=True).start()

    def _on_opened(self, path: str, result: object) -> None:
        self.loading = False
        if not isinstance(result, dicteditor.DictionaryEditor):
            self._say(f"Cannot open {path}: {result}", "bad")
            self.open_failed.emit(path, str(result))
            return
        self._set_editor(result)

    def _set_editor(self, ed: dicteditor.DictionaryEditor) -> None:
        self.ed = ed
        self.saved_spec = ed.spec
        self.undo_stack.clear()
        self.path = ()
        self.field_name = ""
        self._show_empty(False)
        self.status.setText("")
        self.refresh()
        self.state_changed.emit()

    def save_full(self, path: str | Path) -> Path:
        """Save the edited dictionary as a complete QuickFIX XML file."""
        assert self.ed is not None
        target = self.ed.save_full(path)
        self.saved_spec = self.ed.spec
        self.undo_stack.setClean()
        self._say(f"Saved the full dictionary to {target}", "ok")
        self.state_changed.emit()
        return target

    def save_overlay(self, path: str | Path) -> Path:
        """Save the changes as an overlay over the base; raises ValueError for removals."""
        assert self.ed is not None
        target = self.ed.save_overlay(path)
        self.saved_spec = self.ed.spec
        self.undo_stack.setClean()
        self._say(f"Saved the changes as an overlay to {target}", "ok")
        self.state_changed.emit()
        return target

    # ------------------------------------------------------------------ edits (undoable)
    def _restore(self, spec: object) -> None:
        assert self.ed is not None
        self.ed.restore(spec)
        self.refresh()
        self.state_changed.emit()

    def _edit(self, label: str, change: Callable[[], object]) -> bool:
        """Run ``change()`` as one undo step; show its error instead when it fails."""
        assert self.ed is not None
        before = self.ed.spec
        try:
            change()
        except ValueError as e:
            self._say(f"{label}: {e}", "bad")
            return False
        after = self.ed.spec
        self.undo_stack.push(SnapshotCommand(label, before, after, self._restore))
        self._say(label, "ok")
        return True

    def add_field(
        self,
        tag: int,
        name: str,
        type_: str,
        enums: dict[str, str] | None = None,
        message: str = "",
        *,
        required: bool = False,
    ) -> bool:
        """Define a custom field, optionally adding it to message ``message`` (MsgType)."""
        ed = self.ed
        assert ed is not None

        def change() -> None:
            ed.add_field(tag, name, type_, enums)
            if message:
                ed.add_member(("message", message), name, required=required)

        where = f" to {message}" if message else ""
        return self._edit(f"Add field {name} ({tag}){where}", change)

    def add_member(self, path: tuple[str, ...], name: str, *, required: bool) -> bool:
        """Add field ``name`` to the members at ``path``."""
        ed = self.ed
        assert ed is not None
        return self._edit(
            f"Add {name} to {' / '.join(path[1:]) or path[0]}",
            lambda: ed.add_member(path, name, required=required),
        )

    def set_required(self, path: tuple[str, ...], name: str, *, required: bool) -> bool:
        """Mark a member required or optional."""
        ed = self.ed
        assert ed is not None
        word = "required" if required else "optional"
        return self._edit(
            f"Make {name} {word}", lambda: ed.set_required(path, name, required=required)
        )

    def set_enums(self, field_name: str, enums: dict[str, str]) -> bool:
        """Replace the enum values of a field."""
        ed = self.ed
        assert ed is not None
        return self._edit(f"Edit values of {field_name}", lambda: ed.set_enums(field_name, enums))

    def _on_new_field(self) -> None:
        enums: dict[str, str] = {}
        for raw in self.nf_enums.toPlainText().splitlines():
            if not raw.strip():
                continue
            value, eq, desc = raw.partition("=")
            if not eq:
                self._say(f"Values: {raw!r} is not value=DESCRIPTION", "bad")
                return
            enums[value.strip()] = desc.strip()
        msg = self.nf_message.currentData(_ROLE) or ""
        if self.add_field(
            self.nf_tag.value(),
            self.nf_name.text().strip(),
            self.nf_type.currentText(),
            enums,
            str(msg),
            required=self.nf_required.isChecked(),
        ):
            self.nf_name.clear()
            self.nf_enums.clear()
            self.nf_tag.setValue(self.nf_tag.value() + 1)

    def _on_add_member(self) -> None:
        if self.path:
            self.add_member(
                self.path,
                self.add_member_name.currentText().strip(),
                required=self.add_member_required.isChecked(),
            )

    def _on_remove_member(self) -> None:
        ed = self.ed
        if ed is None or not self.path:
            return
        rows = sorted({i.row() for i in self.members.selectedIndexes()})
        names = [_cell(self.members, r, 1) for r in rows]
        if not names:
            return

        def change() -> None:
            for n in names:
                ed.remove_member(self.path, n)

        self._edit(f"Remove {', '.join(names)}", change)

    def _on_member_changed(self, item: QTableWidgetItem) -> None:
        if item.column() != 4 or not self.path or self._filling:
            return
        name = _cell(self.members, item.row(), 1)
        self.set_required(self.path, name, required=item.checkState() == Qt.CheckState.Checked)

    def _on_add_enum_row(self) -> None:
        r = self.enums.rowCount()
        self.enums.insertRow(r)
        self.enums.setItem(r, 0, _item("", editable=True))
        self.enums.setItem(r, 1, _item("", editable=True))
        self.enums.setCurrentCell(r, 0)

    def _on_remove_enum_row(self) -> None:
        for r in sorted({i.row() for i in self.enums.selectedIndexes()}, reverse=True):
            self.enums.removeRow(r)

    def _on_apply_enums(self) -> None:
        if not self.field_name:
            return
        enums: dict[str, str] = {}
        for r in range(self.enums.rowCount()):
            v, d = self.enums.item(r, 0), self.enums.item(r, 1)
            value = v.text().strip() if v else ""
            desc = d.text().strip() if d else ""
            if value or desc:
                enums[value] = desc
        self.set_enums(self.field_name, enums)

    # ------------------------------------------------------------------ views
    _filling = False
    _diff: list[str] | None = None

    def _say(self, text: str, state: str) -> None:
        self.status.setText(text)
        self.status.setProperty("state", state)
        self.status.style().unpolish(self.status)
        self.status.style().polish(self.status)

    def refresh(self) -> None:
        """Re-read everything from the model (after an edit, undo or open)."""
        ed = self.ed
        if ed is None:
            return
        self._diff = None
        self._fill_tree()
        self._show_selection()
        if self.side.currentWidget() is self.diff_list:
            self._refresh_diff()
        current = self.nf_message.currentData(_ROLE)
        self.nf_message.clear()
        self.nf_message.addItem("(none)", "")
        for n in ed.nodes():
            if n.kind == "message":
                self.nf_message.addItem(f"{n.name} (35={n.key})", n.key)
        idx = self.nf_message.findData(current) if current else 0
        self.nf_message.setCurrentIndex(max(idx, 0))
        names = sorted(n.name for n in ed.nodes() if n.kind == "field")
        text = self.add_member_name.currentText()
        self.add_member_name.clear()
        self.add_member_name.addItems(names)
        self.add_member_name.setEditText(text)

    def _changes(self) -> list[str]:
        # The diff walks the whole dictionary (tens of ms for FIX 5.0 SP2): computed when shown.
        if self._diff is None:
            self._diff = self.ed.diff() if self.ed is not None else []
        return self._diff

    def _refresh_diff(self) -> None:
        self.diff_list.clear()
        for line in self._changes():
            it = QListWidgetItem(line)
            it.setForeground(_OK if line.startswith("+") else _ERROR if line[0] == "-" else _WARN)
            self.diff_list.addItem(it)
        if not self.diff_list.count():
            self.diff_list.addItem("No differences: the dictionary is as loaded.")

    def _on_side_tab(self, _index: int) -> None:
        if self.side.currentWidget() is self.diff_list:
            self._refresh_diff()

    def _fill_tree(self) -> None:
        ed = self.ed
        if ed is None:
            return
        needle = self.search.text()
        nodes = ed.search(needle)
        self.tree.blockSignals(True)
        self.tree.clear()
        tops: dict[str, QTreeWidgetItem] = {}
        labels = {
            "header": "Header and trailer",
            "trailer": "Header and trailer",
            "message": "Messages",
            "component": "Components",
            "group": "",
            "field": "Fields",
        }
        by_path: dict[tuple[str, ...], QTreeWidgetItem] = {}
        counts: dict[str, int] = {}
        # Thousands of fields (FIX 5.0 SP2) make the tree slow to build: without a search,
        # the Fields branch gets its items when it is first expanded.
        lazy = not needle.strip()
        self._pending_fields = []
        for n in nodes:
            label = labels[n.kind]
            if lazy and n.kind == "field":
                counts[label] = counts.get(label, 0) + 1
                self._pending_fields.append(n)
                if label not in tops:
                    self._top(tops, label).addChild(QTreeWidgetItem(["…"]))
                continue
            if n.kind == "group":
                parent = by_path.get(n.path[:-1])
                if parent is None:
                    label = "Groups"
                    parent = tops.get(label) or self._top(tops, label)
            else:
                parent = tops.get(label) or self._top(tops, label)
            counts[label] = counts.get(label, 0) + 1
            item = QTreeWidgetItem([n.name, self._key_text(n), n.detail])
            item.setData(0, _ROLE, (n.kind, n.path, n.name))
            item.setToolTip(0, f"{n.name}: {n.detail}")
            parent.addChild(item)
            if n.path:
                by_path[n.path] = item
        for label, top in tops.items():
            top.setText(1, str(counts.get(label, 0)))
            top.setExpanded(bool(needle.strip()) or label == "Header and trailer")
        self._fields_top = tops.get("Fields")
        self.tree.blockSignals(False)
        self._reselect()

    def _on_item_expanded(self, item: QTreeWidgetItem) -> None:
        if item is self._fields_top:
            self._populate_fields()

    def _populate_fields(self) -> None:
        top = self._fields_top
        if top is None or not self._pending_fields:
            return
        pending, self._pending_fields = self._pending_fields, []
        top.takeChildren()
        items = []
        for n in pending:
            item = QTreeWidgetItem([n.name, self._key_text(n), n.detail])
            item.setData(0, _ROLE, (n.kind, n.path, n.name))
            items.append(item)
        top.addChildren(items)

    def _top(self, tops: dict[str, QTreeWidgetItem], label: str) -> QTreeWidgetItem:
        top = QTreeWidgetItem([label])
        f = top.font(0)
        f.setBold(True)
        top.setFont(0, f)
        top.setFlags(top.flags() & ~Qt.ItemFlag.ItemIsSelectable)
        self.tree.addTopLevelItem(top)
        tops[label] = top
        return top

    @staticmethod
    def _key_text(n: Node) -> str:
        if n.kind == "message":
            return f"35={n.key}"
        if n.kind == "field":
            return n.key
        return ""

    def _reselect(self) -> None:
        want = self.path or (("field",) if self.field_name else ())
        if not want:
            return
        if self.field_name:
            self._populate_fields()
        it = self._find_item(self.path, self.field_name)
        if it is not None:
            self.tree.blockSignals(True)
            self.tree.setCurrentItem(it)
            self.tree.blockSignals(False)

    def _find_item(self, path: tuple[str, ...], field: str) -> QTreeWidgetItem | None:
        stack = [self.tree.topLevelItem(i) for i in range(self.tree.topLevelItemCount())]
        while stack:
            it = stack.pop()
            if it is None:
                continue
            data = it.data(0, _ROLE)
            if data:
                kind, p, name = data
                if (path and tuple(p) == path) or (not path and kind == "field" and name == field):
                    return it
            stack.extend(it.child(i) for i in range(it.childCount()))
        return None

    def select(self, kind: str, path: tuple[str, ...] = (), name: str = "") -> None:
        """Show a message/component/group/header/trailer (by path) or a field (by name)."""
        self.path = path if kind != "field" else ()
        self.field_name = name if kind == "field" else ""
        self._reselect()
        self._show_selection()

    def _path_title(self, path: tuple[str, ...]) -> str:
        ed = self.ed
        assert ed is not None
        if path[0] == "message":
            name = next(
                (n.name for n in ed.nodes() if n.kind == "message" and n.key == path[1]), path[1]
            )
            head = f"{name} (35={path[1]})"
        elif path[0] == "component":
            head = f"Component {path[1]}"
        else:
            return path[0].capitalize() + "".join(f" / group {g}" for g in path[1:])
        groups = path[2:]
        return f"Group {groups[-1]} in {head}" if groups else head

    def _on_tree_current(self, current: QTreeWidgetItem | None, _prev: object) -> None:
        data = current.data(0, _ROLE) if current is not None else None
        if not data:
            return
        kind, path, name = data
        self.select(kind, tuple(path), name)

    def _show_selection(self) -> None:
        ed = self.ed
        if ed is None:
            return
        if self.path:
            try:
                rows = ed.member_rows(self.path)
            except ValueError:
                self.path = ()
                self.pages.setCurrentIndex(0)
                return
            self.title.setText(self._path_title(self.path))
            req = sum(1 for r in rows if r[2])
            self.subtitle.setText(
                f"{len(rows)} members, {req} required. Tick "
                "Required to make a member mandatory; new fields go at the end."
            )
            self._filling = True
            self.members.setRowCount(len(rows))
            for r, (kind, name, required, tag, type_) in enumerate(rows):
                self.members.setItem(r, 0, _item(kind))
                self.members.setItem(r, 1, _item(name))
                self.members.setItem(r, 2, _item(str(tag) if tag >= 0 else "", align_right=True))
                self.members.setItem(r, 3, _item(type_))
                check = _item("")
                check.setFlags(check.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                check.setCheckState(Qt.CheckState.Checked if required else Qt.CheckState.Unchecked)
                self.members.setItem(r, 4, check)
            self._filling = False
            self.members.resizeColumnsToContents()
            self.members.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
            self.pages.setCurrentIndex(1)
            return
        if self.field_name:
            fd = ed.field(self.field_name)
            if fd is None:
                self.field_name = ""
                self.pages.setCurrentIndex(0)
                return
            self.title.setText(f"{fd.name}  ({fd.tag})")
            kind = "user-defined" if fd.tag >= 5000 else "standard"
            self.subtitle.setText(
                f"Type {fd.type}, {kind} field. "
                + (
                    f"{len(fd.enums)} allowed values; edit them and Apply."
                    if fd.enums
                    else "Free-form: add values to restrict it."
                )
            )
            self.enums.setRowCount(len(fd.enums))
            for r, (value, desc) in enumerate(fd.enums.items()):
                self.enums.setItem(r, 0, _item(value, editable=True))
                self.enums.setItem(r, 1, _item(desc, editable=True))
            self.enums.resizeColumnToContents(0)
            self.pages.setCurrentIndex(2)
            return
        self.title.setText(Path(ed.source).name)
        self.subtitle.setText("")
        counts: dict[str, int] = {}
        for n in ed.nodes():
            counts[n.kind] = counts.get(n.kind, 0) + 1
        changes = len(self._changes())
        self.overview.title_label.setText(
            f"{counts.get('message', 0)} messages · {counts.get('component', 0)} components · "
            f"{counts.get('group', 0)} groups · {counts.get('field', 0)} fields"
        )
        self.overview.body_label.setText(
            "Select a message, component or group on the left to see its members and mark them "
            "required or optional, or a field to edit its values. Search by name, MsgType "
            "(35=D), tag or enum value."
        )
        self.overview.hint_label.setText(
            f"{changes} change{'s' if changes != 1 else ''} against the file as loaded."
            if changes
            else "No changes yet."
        )
        self.overview.hint_label.setVisible(True)
        self.pages.setCurrentIndex(0)

    # ------------------------------------------------------------------ checking
    def check_message(self) -> None:
        """Check the pasted message against the edited dictionary and fill the table."""
        ed = self.ed
        if ed is None:
            return
        rows = ed.check_message(self.check_input.toPlainText())
        self.check_table.setRowCount(len(rows))
        errors = warnings = 0
        for r, row in enumerate(rows):
            result = "ok" if row.status == "ok" else row.note
            cells = [
                _item(str(row.position), align_right=True),
                _item(str(row.tag) if row.tag >= 0 else "?", align_right=True),
                _item(row.name or "(unknown)"),
                _item(row.value),
                _item(row.meaning),
                _item(("✔ " if row.status == "ok" else "✖ ") + result),
            ]
            color = _OK if row.status == "ok" else _ERROR if row.status == "error" else _WARN
            cells[5].setForeground(color)
            errors += row.status == "error"
            warnings += row.status == "warning"
            for c, cell in enumerate(cells):
                self.check_table.setItem(r, c, cell)
        self.check_table.resizeColumnsToContents()
        for c in (3, 4):  # long values and enum names: keep the Result column in view
            self.check_table.setColumnWidth(c, min(self.check_table.columnWidth(c), 200))
        if not rows:
            self.check_summary.setText("Nothing to check: paste a message first.")
            state = "muted"
        elif errors:
            self.check_summary.setText(f"{len(rows)} fields: {errors} rejected, see Result.")
            state = "bad"
        else:
            extra = f", {warnings} warnings" if warnings else ""
            self.check_summary.setText(f"{len(rows)} fields: the dictionary accepts it{extra}.")
            state = "ok"
        self.check_summary.setProperty("state", state)
        self.check_summary.style().unpolish(self.check_summary)
        self.check_summary.style().polish(self.check_summary)

    # ------------------------------------------------------------------ log scan
    def scan_log(self, path: str) -> None:
        """Scan a FIX log in a worker thread (progress shown, cancellable)."""
        ed = self.ed
        if ed is None or not path:
            return
        self._scan_cancel.clear()
        self.scan_button.setEnabled(False)
        self.scan_cancel.setEnabled(True)
        self.scan_progress.setVisible(True)
        self.scan_summary.setText(f"Reading {path}…")
        services, cancel = self.services, self._scan_cancel
        relay, me = thread_relay(), weakref.ref(self)

        def progress(percent: int) -> None:
            relay.post(me, "_on_scan_progress", percent)

        def work() -> None:
            try:
                result: object = services.scan_log(path, ed, progress, cancel.is_set)
            except (OSError, ValueError) as e:
                result = e
            relay.post(me, "_on_scan_done", result)

        threading.Thread(target=work, name="fix-log-scan", daemon=True).start()

    def _on_scan_browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "FIX log to scan", "", "Logs (*.log *.txt *.messages);;All files (*)"
        )
        if path:
            self.scan_path.setText(path)
            self.scan_log(path)

    def _on_scan_progress(self, lines: int) -> None:
        self.scan_summary.setText(f"{lines:,} lines read…")

    def _on_scan_done(self, result: object) -> None:
        self.scan_button.setEnabled(True)
        self.scan_cancel.setEnabled(False)
        self.scan_progress.setVisible(False)
        if not isinstance(result, LogScan):
            self.scan_summary.setText(f"Cannot scan: {result}")
            return
        scan = result
        self.last_scan = scan
        stopped = " (cancelled)" if scan.cancelled else ""
        self.scan_summary.setText(
            f"{scan.messages:,} messages in {scan.lines:,} lines{stopped}: "
            f"{len(scan.unknown)} tags this dictionary does not know. Check the names and "
            "types, select rows, then add them."
        )
        self.scan_table.setRowCount(len(scan.unknown))
        for r, u in enumerate(scan.unknown):
            cells = [
                _item(str(u.tag), align_right=True),
                _item(f"{u.count:,}", align_right=True),
                _item(", ".join(u.samples)),
                _item(", ".join(u.msg_types)),
                _item(u.guessed_type, editable=True),
                _item(u.suggested_name, editable=True),
            ]
            for c, cell in enumerate(cells):
                self.scan_table.setItem(r, c, cell)
        self.scan_table.resizeColumnsToContents()

    def _on_scan_add(self) -> None:
        ed = self.ed
        if ed is None:
            return
        rows = sorted({i.row() for i in self.scan_table.selectedIndexes()})
        picks = [
            (
                int(_cell(self.scan_table, r, 0)),
                _cell(self.scan_table, r, 5),
                _cell(self.scan_table, r, 4),
            )
            for r in rows
        ]
        if not picks:
            self._say("Select the rows to add first.", "bad")
            return

        def change() -> None:
            for tag, name, type_ in picks:
                ed.add_field(tag, name, type_, custom_only=False)

        if self._edit(f"Add {len(picks)} fields from the log", change):
            for r in reversed(rows):
                self.scan_table.removeRow(r)
