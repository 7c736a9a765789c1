# SPDX-License-Identifier: MIT
"""Every FIX message of every session, filterable, with a detail pane naming every field.

Field names and enum meanings come from a ``describe(tag, value) -> (name, meaning)`` callable
injected by the app (widgets may not import ``engine.fix``). The detail pane shows the three
timestamps of a message and the gaps between them, and the raw message with SOH shown as ``|``.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from engine.events import EventRecord, FixMessageSeen
from widgets.empty_state import EmptyState
from widgets.fmt import fmt_duration_ns, fmt_ts_utc
from widgets.monitor.formats import fmt_time
from widgets.tables import Column, DataTableView, KeyedTableModel
from widgets.tables.panel import TablePanel

#: Names a field and its value: ``describe(tag, value) -> (field name, enum meaning or "")``.
DescribeField = Callable[[int, bytes], tuple[str, str]]

#: Messages kept on screen; the session's message log keeps them all.
FIX_CAPACITY = 100_000

SOH = b"\x01"


def no_dictionary(tag: int, value: bytes) -> tuple[str, str]:
    """Describe nothing (no dictionary injected): empty name and meaning."""
    return "", ""


def parse_fields(raw: bytes) -> list[tuple[int, bytes]]:
    """Split a raw message into ``(tag, value)`` pairs; a malformed field gets tag -1."""
    fields: list[tuple[int, bytes]] = []
    for part in raw.split(SOH):
        if not part:
            continue
        tag, sep, value = part.partition(b"=")
        try:
            fields.append((int(tag), value) if sep else (-1, part))
        except ValueError:
            fields.append((-1, part))
    return fields


def field_value(raw: bytes, tag: int) -> str:
    """Return the first value of ``tag`` in ``raw`` as text, or ``""``."""
    needle = SOH + str(tag).encode() + b"="
    start = raw.find(needle)
    if start < 0:
        return ""
    start += len(needle)
    end = raw.find(SOH, start)
    return raw[start : end if end >= 0 else len(raw)].decode("latin-1")


def show_soh(raw: bytes) -> str:
    """Return the message as text with SOH shown as ``|``."""
    return raw.decode("latin-1").replace("\x01", "|")


@dataclass(frozen=True, slots=True)
class FixRow:
    """One message in the list."""

    key: int  # engine sequence number of the event
    ev: FixMessageSeen
    client_order_id: str


class FieldsModel(QAbstractTableModel):
    """Tag, field name, value and meaning of each field of one message."""

    HEADERS = ("Tag", "Field", "Value", "Meaning")

    def __init__(self, describe: DescribeField, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._describe = describe
        self.rows: list[tuple[str, str, str, str]] = []

    def set_message(self, raw: bytes | None) -> None:
        """Show the fields of ``raw`` (``None``: nothing)."""
        self.beginResetModel()
        self.rows = []
        for tag, value in parse_fields(raw or b""):
            name, meaning = self._describe(tag, value) if tag >= 0 else ("", "malformed")
            self.rows.append(
                (str(tag) if tag >= 0 else "?", name, value.decode("latin-1"), meaning)
            )
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        """Return the number of fields."""
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        """Return 4."""
        return 0 if parent.isValid() else 4

    def data(
        self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        """Return a cell's text."""
        if role == Qt.ItemDataRole.DisplayRole:
            return self.rows[index.row()][index.column()]
        if role == Qt.ItemDataRole.TextAlignmentRole and index.column() == 0:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        """Return the column titles."""
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.HEADERS[section]
        return None


class FixFilterModel(QSortFilterProxyModel):
    """Filter messages by session, direction, MsgType, ClOrdID and free text."""

    def __init__(self, source: KeyedTableModel[int, FixRow], parent: QObject | None = None):
        super().__init__(parent)
        self._source = source
        self.session = ""
        self.direction = ""  # "", "in", "out"
        self.msg_types: frozenset[str] = frozenset()
        self.client_order_id = ""
        self.text = b""
        self.setSourceModel(source)

    def set_filter(
        self,
        *,
        session: str = "",
        direction: str = "",
        msg_types: str = "",
        client_order_id: str = "",
        text: str = "",
    ) -> None:
        """Show messages that match every non-empty criterion (MsgTypes comma-separated)."""
        self.beginFilterChange()
        self.session = session
        self.direction = direction
        self.msg_types = frozenset(t.strip() for t in msg_types.split(",") if t.strip())
        self.client_order_id = client_order_id.strip()
        self.text = text.strip().replace("|", "\x01").encode("latin-1", "replace")
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def filterAcceptsRow(
        self, source_row: int, source_parent: QModelIndex | QPersistentModelIndex
    ) -> bool:
        """Return whether a message passes every filter."""
        row = self._source.record(source_row)
        ev = row.ev
        if self.session and ev.session_id != self.session:
            return False
        if self.direction and (self.direction == "out") != ev.outbound:
            return False
        if self.msg_types and ev.msg_type not in self.msg_types:
            return False
        if self.client_order_id and self.client_order_id not in row.client_order_id:
            return False
        return not self.text or self.text.lower() in ev.raw.lower()


class FixInspector(QWidget):
    """The FIX message list with filters and a detail pane.

    Parameters
    ----------
    describe : DescribeField | None
        Names fields and enum values (from the app's FIX dictionary).
    """

    def __init__(self, describe: DescribeField | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.describe = describe or no_dictionary
        self._type_names: dict[str, str] = {}
        self.model: KeyedTableModel[int, FixRow] = KeyedTableModel(
            self._columns(), lambda r: r.key, newest_first=True, capacity=FIX_CAPACITY,
            parent=self,
        )  # fmt: skip
        self.proxy = FixFilterModel(self.model, self)
        self.table = DataTableView("fixMessagesTable")
        self.table.setModel(self.proxy)
        for n, col in enumerate(self.model.columns):
            if col.width:
                self.table.setColumnWidth(n, col.width)
        self.table.setSelectionMode(QTableView.SelectionMode.SingleSelection)

        self.session_combo = QComboBox()
        self.session_combo.addItem("All sessions", "")
        self.direction_combo = QComboBox()
        for label, key in (("In and out", ""), ("In", "in"), ("Out", "out")):
            self.direction_combo.addItem(label, key)
        self.type_edit = QLineEdit()
        self.type_edit.setPlaceholderText("MsgType (D,8)")
        self.type_edit.setMaximumWidth(110)
        self.clordid_edit = QLineEdit()
        self.clordid_edit.setPlaceholderText("ClOrdID")
        self.clordid_edit.setMaximumWidth(130)
        self.text_edit = QLineEdit()
        self.text_edit.setPlaceholderText("Text in message (35=D|55=ES)")
        self.text_edit.setClearButtonEnabled(True)
        for combo in (self.session_combo, self.direction_combo):
            combo.currentIndexChanged.connect(self._apply_filter)
        for e in (self.type_edit, self.clordid_edit, self.text_edit):
            e.textChanged.connect(self._apply_filter)
        tools = QHBoxLayout()
        for tool in (self.session_combo, self.direction_combo, self.type_edit, self.clordid_edit):
            tools.addWidget(tool)
        tools.addWidget(self.text_edit, 1)

        self.fields_model = FieldsModel(self.describe, self)
        self.fields_table = DataTableView("fixFieldsTable")
        self.fields_table.setModel(self.fields_model)
        self.fields_table.verticalHeader().hide()
        self.fields_table.verticalHeader().setDefaultSectionSize(20)
        self.fields_table.horizontalHeader().setStretchLastSection(True)
        self.fields_table.horizontalHeader().setSectionResizeMode(
            QHeaderView.ResizeMode.Interactive
        )
        for n, width in enumerate((50, 130, 150)):
            self.fields_table.setColumnWidth(n, width)
        self.times_label = QLabel()
        self.times_label.setObjectName("fixTimes")
        self.times_label.setWordWrap(True)
        self.times_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.raw_edit = QPlainTextEdit()
        self.raw_edit.setObjectName("fixRaw")
        self.raw_edit.setReadOnly(True)
        self.raw_edit.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.copy_button = QPushButton("Copy raw")
        self.copy_button.clicked.connect(self.copy_raw)
        raw_box = QWidget()
        rl = QVBoxLayout(raw_box)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.addWidget(self.raw_edit, 1)
        rl.addWidget(self.copy_button, 0, Qt.AlignmentFlag.AlignRight)
        fields_and_raw = QSplitter(Qt.Orientation.Horizontal)
        fields_and_raw.addWidget(self.fields_table)
        fields_and_raw.addWidget(raw_box)
        fields_and_raw.setStretchFactor(0, 3)
        fields_and_raw.setStretchFactor(1, 2)
        detail = QWidget()
        dl = QVBoxLayout(detail)
        dl.setContentsMargins(0, 0, 0, 0)
        dl.setSpacing(2)
        dl.addWidget(self.times_label)
        dl.addWidget(fields_and_raw, 1)

        self.panel = TablePanel(
            self.table,
            EmptyState(
                "No FIX messages yet",
                "Every message of every FIX session, in and out, appears here with its three "
                "timestamps; select one to read every field.",
            ),
            tools,
            model=self.model,
        )
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setObjectName("fixSplitter")
        splitter.addWidget(self.panel)
        splitter.addWidget(detail)
        splitter.setStretchFactor(0, 1)
        splitter.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)
        self.table.selectionModel().currentRowChanged.connect(self._on_current_changed)
        self.current: FixMessageSeen | None = None
        self.show_message(None)

    def _type_name(self, msg_type: str) -> str:
        name = self._type_names.get(msg_type)
        if name is None:
            name = self.describe(35, msg_type.encode())[1]
            self._type_names[msg_type] = name
        return f"{msg_type} {name}".strip()

    def _columns(self) -> tuple[Column[FixRow], ...]:
        return (
            Column("time", "Time (UTC)", lambda r: fmt_time(r.ev.ts_event),
                   width=125),
            Column("session", "Session", lambda r: r.ev.session_id, width=190),
            Column("dir", "Dir", lambda r: "Out" if r.ev.outbound else "In",
                   tone=lambda r: "muted" if r.ev.outbound else "", width=40),
            Column("seq", "Seq", lambda r: str(r.ev.seq_num), numeric=True, width=60),
            Column("msg_type", "MsgType", lambda r: self._type_name(r.ev.msg_type), width=150),
            Column("client_order_id", "ClOrdID", lambda r: r.client_order_id, width=100),
            Column("raw", "Message", lambda r: show_soh(r.ev.raw)),
        )  # fmt: skip

    def on_events(self, batch: Sequence[EventRecord]) -> None:
        """Append the ``FixMessageSeen`` events of a batch."""
        rows = [
            FixRow(r.seq, r.event, field_value(r.event.raw, 11))
            for r in batch
            if isinstance(r.event, FixMessageSeen)
        ]
        if not rows:
            return
        for row in rows:
            sid = row.ev.session_id
            if self.session_combo.findData(sid) < 0:
                self.session_combo.addItem(sid, sid)
        self.model.apply(rows)

    def set_filter(
        self,
        *,
        session: str = "",
        direction: str = "",
        msg_types: str = "",
        client_order_id: str = "",
        text: str = "",
    ) -> None:
        """Set the filters (as if typed into the bar)."""
        self.session_combo.setCurrentIndex(max(0, self.session_combo.findData(session)))
        self.direction_combo.setCurrentIndex(self.direction_combo.findData(direction))
        self.type_edit.setText(msg_types)
        self.clordid_edit.setText(client_order_id)
        self.text_edit.setText(text)

    def _apply_filter(self) -> None:
        self.proxy.set_filter(
            session=str(self.session_combo.currentData() or ""),
            direction=str(self.direction_combo.currentData() or ""),
            msg_types=self.type_edit.text(),
            client_order_id=self.clordid_edit.text(),
            text=self.text_edit.text(),
        )

    def visible_rows(self) -> list[FixRow]:
        """Return the messages that pass the filters, top to bottom."""
        return [
            self.model.record(self.proxy.mapToSource(self.proxy.index(r, 0)).row())
            for r in range(self.proxy.rowCount())
        ]

    def _on_current_changed(self) -> None:
        index = self.table.currentIndex()
        if not index.isValid():
            self.show_message(None)
            return
        row = self.model.record(self.proxy.mapToSource(index).row())
        self.show_message(row.ev)

    def show_message(self, ev: FixMessageSeen | None) -> None:
        """Show every field, the timestamps and the raw text of ``ev``."""
        self.current = ev
        self.fields_model.set_message(ev.raw if ev else None)
        if ev is None:
            self.times_label.setText("Select a message to read its fields.")
            self.raw_edit.setPlainText("")
            self.copy_button.setEnabled(False)
            return
        wire = "sent" if ev.outbound else "received"
        made = "created" if ev.outbound else "framed"
        self.times_label.setText(
            f"{made} {fmt_ts_utc(ev.ts_created, precision=6)}  "
            f"→ +{fmt_duration_ns(ev.ts_wire - ev.ts_created)} → "
            f"{wire} {fmt_ts_utc(ev.ts_wire, precision=6)}  "
            f"→ +{fmt_duration_ns(ev.ts_event - ev.ts_wire)} → "
            f"handled {fmt_ts_utc(ev.ts_event, precision=6)}"
        )
        self.raw_edit.setPlainText(show_soh(ev.raw))
        self.copy_button.setEnabled(True)

    def copy_raw(self) -> str:
        """Copy the selected message (SOH as ``|``) to the clipboard; return the text."""
        text = show_soh(self.current.raw) if self.current else ""
        QGuiApplication.clipboard().setText(text)
        return text
