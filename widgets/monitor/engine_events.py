# SPDX-License-Identifier: MIT
"""The engine's event stream as a table: what the engine did, numbered, with its timestamps."""

from collections import deque
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QStackedLayout,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from engine.events import (
    BookUpdated,
    DepthChanged,
    EngineHeartbeat,
    EventRecord,
    FixMessageSeen,
    OrderChanged,
    OrderFilled,
    PositionChanged,
    SessionStatusChanged,
    TradeReported,
)
from widgets.empty_state import EmptyState
from widgets.fmt import fmt_duration_ns
from widgets.monitor.formats import fmt_time
from widgets.tables import DataTableView

_Index = QModelIndex | QPersistentModelIndex

COLUMNS = ("Seq", "Time (UTC)", "Event", "Details")

#: Order flow, market data and FIX traffic: thousands a second, each with a view of its own
#: (blotter, executions, positions, ladder, FIX inspector), so this panel leaves them out.
HIGH_RATE_EVENTS = (
    OrderChanged,
    OrderFilled,
    PositionChanged,
    BookUpdated,
    DepthChanged,
    TradeReported,
    FixMessageSeen,
)


def describe(record: EventRecord) -> str:
    """Return the event's fields (but its timestamp) as ``name=value`` pairs."""
    ev = record.event
    parts = []
    for f in fields(ev):
        if f.name == "ts_event":
            continue
        value = getattr(ev, f.name)
        if value == "":
            continue
        if f.name.endswith("_ns") and isinstance(value, int):
            text = fmt_duration_ns(value)
        elif hasattr(value, "name") and isinstance(value.name, str):
            text = value.name.lower()
        else:
            text = str(value)
        parts.append(f"{f.name}={text}")
    return "  ".join(parts)


#: Rows whose texts stay formatted (a few screens' worth).
_TEXT_CACHE_ROWS = 512


class EngineEventsModel(QAbstractTableModel):
    """The newest ``capacity`` engine events, appended in batches (one insert per batch).

    Heartbeats are left out unless ``show_heartbeats`` is set: they are the status bar's job.
    A FIX session's status is shown when its state changes, not on every sequence number.
    The events are kept as they came (their strings are shared with the other views, such
    as an alert's text with the log) and formatted when shown.
    """

    def __init__(self, capacity: int = 10_000, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.capacity = capacity
        self.show_heartbeats = False
        self._rows: deque[EventRecord] = deque()
        self._texts: dict[int, tuple[str, str, str, str]] = {}  # id(record) -> its cells
        self._session_states: dict[str, object] = {}

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        """Return the number of rows."""
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        """Return the number of columns."""
        return 0 if parent.isValid() else len(COLUMNS)

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """Return the text of a cell (and right alignment for the sequence number)."""
        if not index.isValid():
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return self.row_texts(index.row())[index.column()]
        if role == Qt.ItemDataRole.TextAlignmentRole and index.column() == 0:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def row_texts(self, row: int) -> tuple[str, str, str, str]:
        """Return the cells of ``row``: sequence number, time, event type, details."""
        r = self._rows[row]
        texts = self._texts.get(id(r))
        if texts is None:
            if len(self._texts) >= _TEXT_CACHE_ROWS:
                self._texts.clear()
            texts = (str(r.seq), fmt_time(r.event.ts_event), type(r.event).__name__, describe(r))
            self._texts[id(r)] = texts
        return texts

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        """Return the column titles."""
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def _sequence_only(self, ev: object) -> bool:
        """Return whether ``ev`` only moves a FIX session's sequence numbers (not shown)."""
        if not isinstance(ev, SessionStatusChanged):
            return False
        same = self._session_states.get(ev.session_id) is ev.state
        self._session_states[ev.session_id] = ev.state
        return same

    def append(self, batch: Sequence[EventRecord]) -> int:
        """Append the events of ``batch`` that are shown; return how many rows were added."""
        rows = [
            r
            for r in batch
            if not isinstance(r.event, HIGH_RATE_EVENTS)
            and (self.show_heartbeats or not isinstance(r.event, EngineHeartbeat))
            and not self._sequence_only(r.event)
        ]
        if not rows:
            return 0
        rows = rows[-self.capacity :]
        overflow = len(self._rows) + len(rows) - self.capacity
        if overflow > 0:
            self.beginRemoveRows(QModelIndex(), 0, overflow - 1)
            for _ in range(overflow):
                self._rows.popleft()
            self._texts.clear()  # keyed by id(): a dropped record's id may come back
            self.endRemoveRows()
        first = len(self._rows)
        self.beginInsertRows(QModelIndex(), first, first + len(rows) - 1)
        self._rows.extend(rows)
        self.endInsertRows()
        return len(rows)


class EngineEventsView(QWidget):
    """Table of engine events with a heartbeat toggle and an empty state until the first one."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = EngineEventsModel(parent=self)
        self.table = DataTableView("engineEventsTable")
        self.table.setModel(self.model)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        header.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        for col, width in enumerate((70, 130, 170)):
            self.table.setColumnWidth(col, width)
        self.heartbeats = QCheckBox("Show heartbeats")
        self.heartbeats.toggled.connect(self._on_heartbeats_toggled)
        self.count_label = QLabel()
        self.count_label.setProperty("state", "muted")
        bar = QHBoxLayout()
        bar.setContentsMargins(6, 2, 6, 2)
        bar.addWidget(self.heartbeats)
        bar.addStretch(1)
        bar.addWidget(self.count_label)
        self.empty = EmptyState(
            "No engine events yet",
            "Engine lifecycle changes, FIX session changes, strategy changes and alerts "
            "appear here as the engine reports them (order flow has its own views).",
        )
        self._stack = QStackedLayout()
        self._stack.addWidget(self.empty)
        self._stack.addWidget(self.table)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addLayout(bar)
        layout.addLayout(self._stack)
        self._seen = 0

    def on_events(self, batch: Sequence[EventRecord]) -> None:
        """Append a batch of engine events, keeping the view at the bottom if it was there."""
        self._seen += len(batch)
        sb = self.table.verticalScrollBar()
        at_bottom = sb.value() >= sb.maximum() - 2
        if self.model.append(batch):
            self._stack.setCurrentWidget(self.table)
            if at_bottom:
                self.table.scrollToBottom()
        self.count_label.setText(f"{self._seen:,} events received")

    def _on_heartbeats_toggled(self, checked: bool) -> None:
        self.model.show_heartbeats = checked
