# SPDX-License-Identifier: MIT
"""Logs and alerts, live: a level filter, a search box and an unread-alerts count.

The engine's stream carries ``Alert`` events and state changes worth a line (sessions, the
kill switch, strategies, refused or rejected orders); :func:`log_entries` turns a batch into
:class:`LogEntry` rows. The console adds its own lines (a refused command) with
:meth:`LogView.add_local`.

The engine folds repeated alerts of one cause into one aggregate (``Alert.aggregate``,
``count``): its updates replace the aggregate's line, which moves to the top and shows "×N",
and it counts as one unread alert however often it repeats.

The lines are kept column-wise (:class:`LogCodec`): a 52-byte row per line, its text packed in
a :class:`~widgets.tables.arena.ByteArena`; a :class:`LogEntry` is rebuilt for the rows shown.
"""

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import numpy as np
import numpy.typing as npt
from PySide6.QtCore import (
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Signal,
)
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLineEdit, QToolButton, QWidget

from engine.enums import AlertLevel, EngineState, KillLevel, OrdStatus, SessionState
from engine.events import (
    Alert,
    EngineStateChanged,
    Event,
    EventRecord,
    KillSwitchChanged,
    LogRecorded,
    OrderChanged,
    SessionStatusChanged,
    StrategyStatusChanged,
    VenueLinkChanged,
)
from widgets.empty_state import EmptyState
from widgets.monitor.formats import fmt_time
from widgets.tables import Column, DataTableView
from widgets.tables.arena import ByteArena
from widgets.tables.columnar import ColumnarTableModel
from widgets.tables.keys import StringPool
from widgets.tables.panel import TablePanel

#: Levels below INFO, for the console's own chatter.
DEBUG = 10

#: Level names shown in the table.
LEVEL_NAMES = {DEBUG: "DEBUG", 20: "INFO", 30: "WARNING", 40: "ERROR", 50: "CRITICAL"}
#: Tone of each level.
LEVEL_TONES = {30: "warn", 40: "bad", 50: "bad"}
#: Level filter choices: (label, minimum level).
LEVEL_FILTERS = (
    ("All levels", 0),
    ("Info and above", int(AlertLevel.INFO)),
    ("Warnings and above", int(AlertLevel.WARNING)),
    ("Errors and above", int(AlertLevel.ERROR)),
    ("Critical only", int(AlertLevel.CRITICAL)),
)
#: Entries at or above this level count as unread alerts until the trader looks.
UNREAD_LEVEL = int(AlertLevel.WARNING)
#: Lines kept on screen.
LOG_CAPACITY = 50_000


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One line of the log: when, how bad, from where, what."""

    key: int  # engine sequence number (of an alert aggregate's first), negative: console's own
    ts_ns: int
    level: int
    source: str
    text: str
    count: int = 1  # occurrences of an aggregated alert
    ts_first: int = 0  # first occurrence of an aggregated alert (0: ts_ns)

    @property
    def shown(self) -> str:
        """Return the message as the table shows it ("×N" first for a repeated alert)."""
        return f"×{self.count:,}  {self.text}" if self.count > 1 else self.text

    @property
    def tip(self) -> str:
        """Return the message's tooltip (with the span of a repeated alert)."""
        if self.count <= 1:
            return self.text
        span = f"{fmt_time(self.ts_first or self.ts_ns)} – {fmt_time(self.ts_ns)} UTC"
        return f"{self.count:,} times, {span}; the latest:\n{self.text}"


#: One line as the log keeps it: numbers, the source's index into the codec's strings, and
#: where its text is (UTF-8) in the codec's :class:`~widgets.tables.arena.ByteArena`.
LOG_ROW_DTYPE: Final = np.dtype(
    [
        ("key", "i8"),  # LogEntry.key: the model's key
        ("ts_ns", "i8"),
        ("ts_first", "i8"),
        ("count", "i8"),
        ("text_at", "i8"),  # global offset of the text in the arena
        ("text_len", "u4"),
        ("level", "i4"),
        ("source", "u4"),  # index into the strings
    ]
)

# Positions of the fields in a row tuple.
_KEY, _TS, _TS_FIRST, _COUNT, _TEXT_AT, _TEXT_LEN, _LEVEL, _SOURCE = range(8)


class LogCodec:
    """``LogEntry`` to :data:`LOG_ROW_DTYPE` rows and back; texts packed in one arena.

    A row's text is appended when it is encoded; :meth:`release` frees the arena's chunks
    below the lowest offset the rows kept still use (rows leave oldest first, so those are
    the texts of rows that left).
    """

    dtype: np.dtype[np.void] = LOG_ROW_DTYPE
    key_field = "key"

    def __init__(self) -> None:
        self.sources = StringPool()
        self.arena = ByteArena()

    def key(self, e: LogEntry) -> int:
        """Return the row key: the entry's key."""
        return e.key

    def encode(self, e: LogEntry) -> tuple[Any, ...]:
        """Return ``e`` as a row tuple (its text stored now)."""
        text = e.text.encode()
        return (
            e.key,
            e.ts_ns,
            e.ts_first,
            e.count,
            self.arena.append(text),
            len(text),
            e.level,
            self.sources.intern(e.source),
        )

    def decode(self, t: tuple[Any, ...]) -> LogEntry:
        """Return the ``LogEntry`` of a row tuple."""
        return LogEntry(
            t[_KEY],
            t[_TS],
            t[_LEVEL],
            self.sources[t[_SOURCE]],
            self.text(t),
            t[_COUNT],
            t[_TS_FIRST],
        )

    def text(self, t: tuple[Any, ...]) -> str:
        """Return the text of a row tuple."""
        return self.arena.get(t[_TEXT_AT], t[_TEXT_LEN]).decode(errors="replace")

    def level(self, t: tuple[Any, ...]) -> int:
        """Return the level of a row tuple."""
        level: int = t[_LEVEL]
        return level

    def source(self, t: tuple[Any, ...]) -> str:
        """Return the source of a row tuple."""
        return self.sources[t[_SOURCE]]

    def forget(self, keys: npt.NDArray[np.int64]) -> None:
        """Keep nothing aside per row (texts go with :meth:`release`)."""

    def release(self, rows: npt.NDArray[np.void]) -> None:
        """Free the texts of rows that left: those below the lowest text of ``rows`` (all kept).

        (The lowest, not the oldest row's: a row updated in place got a new text.)
        """
        if rows.shape[0]:
            self.arena.release_below(int(rows["text_at"].min()))
        else:
            self.arena.clear()


def _level_name(level: int) -> str:
    return LEVEL_NAMES.get(level, str(level))


def _entry_of(record: EventRecord) -> LogEntry | None:
    ev, seq = record.event, record.seq
    if type(ev) is OrderChanged and not (
        ev.order.status is OrdStatus.REJECTED or ev.change.startswith("refused")
    ):
        return None  # the common case first: an order changed, nothing to log
    if isinstance(ev, Alert):
        return LogEntry(
            ev.aggregate or seq,
            ev.ts_event,
            int(ev.level),
            ev.source,
            ev.text,
            ev.count,
            ev.ts_first,
        )
    if isinstance(ev, LogRecorded):
        return LogEntry(seq, ev.ts_event, ev.level, ev.source, ev.text)
    if isinstance(ev, KillSwitchChanged):
        level = AlertLevel.WARNING if ev.level is KillLevel.OFF else AlertLevel.CRITICAL
        name = ev.level.name.replace("_", " ").lower()
        text = f"kill switch {'released' if ev.level is KillLevel.OFF else name} by {ev.actor}"
        return LogEntry(seq, ev.ts_event, int(level), "kill switch", f"{text}: {ev.reason}")
    if isinstance(ev, SessionStatusChanged):
        level = AlertLevel.WARNING if ev.state is SessionState.DISCONNECTED else AlertLevel.INFO
        text = (
            f"{ev.session_id} {ev.state.name.replace('_', ' ').lower()} "
            f"(next out {ev.next_sender_seq_num}, in {ev.next_target_seq_num})"
        )
        return LogEntry(seq, ev.ts_event, int(level), "fix", f"{text} {ev.text}".strip())
    if isinstance(ev, VenueLinkChanged) and ev.protocol != "FIX":  # FIX: SessionStatusChanged
        level = AlertLevel.INFO if ev.up else AlertLevel.WARNING
        state = ev.state or ("up" if ev.up else "down")
        numbers = f" (next out {ev.next_out}, in {ev.next_in})" if ev.next_out or ev.next_in else ""
        text = f"{ev.protocol} {ev.detail or ev.venue} {state.lower()}{numbers}"
        return LogEntry(seq, ev.ts_event, int(level), ev.protocol.lower(), text)
    if isinstance(ev, StrategyStatusChanged):
        failed = ev.change.startswith("failed")
        level = AlertLevel.ERROR if failed else AlertLevel.INFO
        return LogEntry(seq, ev.ts_event, int(level), ev.name, f"strategy {ev.change}")
    if isinstance(ev, EngineStateChanged):
        level = AlertLevel.ERROR if ev.state is EngineState.FAILED else AlertLevel.INFO
        text = f"engine {ev.engine_id} {ev.state.name.lower()}"
        return LogEntry(seq, ev.ts_event, int(level), "engine", f"{text} {ev.reason}".strip())
    if isinstance(ev, OrderChanged):
        o = ev.order
        if o.status is OrdStatus.REJECTED or ev.change.startswith("refused"):
            what = "rejected" if o.status is OrdStatus.REJECTED else ev.change
            return LogEntry(
                seq,
                ev.ts_event,
                int(AlertLevel.WARNING),
                "oms",
                f"order {o.client_order_id} {o.symbol} {what}: {o.text}".rstrip(": "),
            )
    return None


def log_entries(batch: Sequence[EventRecord]) -> list[LogEntry]:
    """Return the log lines of a batch of engine events, in order."""
    return [e for r in batch if (e := _entry_of(r)) is not None]


LOG_COLUMNS: tuple[Column[LogEntry], ...] = (
    Column("time", "Time (UTC)", lambda e: fmt_time(e.ts_ns), width=125),
    Column("level", "Level", lambda e: _level_name(e.level),
           tone=lambda e: LEVEL_TONES.get(e.level, ""), width=75),
    Column("source", "Source", lambda e: e.source, width=100),
    Column("text", "Message", lambda e: e.shown, tooltip=lambda e: e.tip),
)  # fmt: skip


class LogFilterModel(QSortFilterProxyModel):
    """Hide entries below a level or not containing a search text (case-insensitive)."""

    def __init__(
        self, source: ColumnarTableModel[LogEntry], codec: LogCodec, parent: QObject | None = None
    ):
        super().__init__(parent)
        self._source = source
        self._codec = codec  # ``source``'s
        self.min_level = 0
        self.search = ""
        self.setSourceModel(source)

    def set_filter(self, min_level: int, search: str) -> None:
        """Show entries at ``min_level`` or above whose text contains ``search``."""
        self.beginFilterChange()
        self.min_level = min_level
        self.search = search.strip().casefold()
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def filterAcceptsRow(
        self, source_row: int, source_parent: QModelIndex | QPersistentModelIndex
    ) -> bool:
        """Return whether a source row passes the level and search filters."""
        if not self.min_level and not self.search:
            return True
        # The stored row's fields: no entry rebuilt for each of 50,000 rows.
        t = self._source.row_tuple(source_row)
        codec = self._codec
        if codec.level(t) < self.min_level:
            return False
        if not self.search:
            return True
        return self.search in codec.text(t).casefold() or self.search in codec.source(t).casefold()


class LogView(QWidget):
    """The log table with its filters and an unread-alerts count.

    Signals
    -------
    unread_changed(int)
        The number of unread alerts (warnings and worse) changed.
    """

    #: Engine event types :meth:`on_events` reads (the workspace hands it only these).
    EVENT_TYPES: ClassVar[tuple[type[Event], ...]] = (
        Alert,
        LogRecorded,
        KillSwitchChanged,
        SessionStatusChanged,
        VenueLinkChanged,
        StrategyStatusChanged,
        EngineStateChanged,
        OrderChanged,
    )

    unread_changed = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.codec = LogCodec()
        # Keys are engine sequence numbers of the few events logged: sparse.
        self.model: ColumnarTableModel[LogEntry] = ColumnarTableModel(
            LOG_COLUMNS,
            self.codec,
            newest_first=True,
            capacity=LOG_CAPACITY,
            sparse_keys=True,
            parent=self,
        )
        self.proxy = LogFilterModel(self.model, self.codec, self)
        self.table = DataTableView("logTable")
        self.table.setModel(self.proxy)
        for n, col in enumerate(LOG_COLUMNS):
            if col.width:
                self.table.setColumnWidth(n, col.width)
        self.level_filter = QComboBox()
        for label, level in LEVEL_FILTERS:
            self.level_filter.addItem(label, level)
        self.level_filter.setToolTip("Show only lines at this level or worse")
        self.search_edit = QLineEdit()
        self.search_edit.setObjectName("logSearch")
        self.search_edit.setPlaceholderText("Search messages and sources (Ctrl+F)")
        self.search_edit.setClearButtonEnabled(True)
        self.unread_button = QToolButton()
        self.unread_button.setObjectName("unreadBadge")
        self.unread_button.setAutoRaise(True)
        self.unread_button.setToolTip("Unread warnings and errors; click to mark them read")
        self.unread_button.clicked.connect(self.mark_read)
        self.level_filter.currentIndexChanged.connect(self._apply_filter)
        self.search_edit.textChanged.connect(self._apply_filter)
        tools = QHBoxLayout()
        tools.addWidget(self.level_filter)
        tools.addWidget(self.search_edit, 1)
        tools.addWidget(self.unread_button)
        self.panel = TablePanel(
            self.table,
            EmptyState(
                "No log lines yet",
                "Alerts from the engine (unknown executions, business rejects, refused "
                "rules), FIX session changes and strategy changes appear here as they happen.",
            ),
            tools,
            model=self.model,
        )
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.panel)
        self._unread = 0
        self._session_state: dict[str, SessionState] = {}
        self._local_keys = itertools.count(-1, -1)
        self._show_unread()

    @property
    def unread(self) -> int:
        """Return the number of unread alerts."""
        return self._unread

    def on_events(self, batch: Sequence[EventRecord]) -> None:
        """Add the log lines of a batch.

        A FIX session is logged when its state changes (not on every sequence-number update);
        a disconnection is a warning only when the session had been logged on.
        """
        kept: list[EventRecord] = []
        for record in batch:
            ev = record.event
            if isinstance(ev, SessionStatusChanged):
                before = self._session_state.get(ev.session_id)
                if before is ev.state:
                    continue
                self._session_state[ev.session_id] = ev.state
                if ev.state is SessionState.DISCONNECTED and before is not SessionState.LOGGED_ON:
                    text = (
                        f"{ev.session_id} disconnected (next out {ev.next_sender_seq_num}, "
                        f"in {ev.next_target_seq_num})"
                    )
                    self.add_entries(
                        [LogEntry(record.seq, ev.ts_event, int(AlertLevel.INFO), "fix", text)]
                    )
                    continue
            kept.append(record)
        self.add_entries(log_entries(kept))

    def add_local(self, level: int, source: str, text: str, ts_ns: int) -> None:
        """Add a line of the console's own (a refused command, a lost link)."""
        self.add_entries([LogEntry(next(self._local_keys), ts_ns, level, source, text)])

    def add_entries(self, entries: Sequence[LogEntry]) -> None:
        """Add lines, newest on top, and count the alerts among them as unread.

        An entry whose key is shown already (an update of an aggregated alert) replaces that
        line and moves it to the top; it is not counted again.
        """
        if not entries:
            return
        latest: dict[int, LogEntry] = {}  # one per key, in the order of its last update
        for e in entries:
            latest.pop(e.key, None)
            latest[e.key] = e
        if len(latest) < len(entries):
            entries = list(latest.values())
        model = self.model
        again = {e.key for e in entries if e.key in model}
        if again:
            model.apply((), remove=again)
        alerts = len({e.key for e in entries if e.level >= UNREAD_LEVEL and e.key not in again})
        model.apply(entries)
        self.codec.release(model.rows())
        if alerts:
            self._unread += alerts
            self._show_unread()
            self.unread_changed.emit(self._unread)

    def mark_read(self) -> None:
        """Mark every alert as read."""
        if self._unread:
            self._unread = 0
            self._show_unread()
            self.unread_changed.emit(0)

    def set_level(self, min_level: int) -> None:
        """Show lines at ``min_level`` or worse."""
        self.level_filter.setCurrentIndex(self.level_filter.findData(min_level))

    def visible_entries(self) -> list[LogEntry]:
        """Return the entries that pass the filters, top to bottom."""
        return [
            self.model.record(self.proxy.mapToSource(self.proxy.index(r, 0)).row())
            for r in range(self.proxy.rowCount())
        ]

    def _apply_filter(self) -> None:
        self.proxy.set_filter(int(self.level_filter.currentData()), self.search_edit.text())

    def _show_unread(self) -> None:
        n = self._unread
        self.unread_button.setText(f"{n:,} unread" if n else "No unread alerts")
        self.unread_button.setProperty("state", "bad" if n else "muted")
        self.unread_button.style().unpolish(self.unread_button)
        self.unread_button.style().polish(self.unread_button)
