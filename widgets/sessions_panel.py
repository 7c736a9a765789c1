# SPDX-License-Identifier: MIT
"""The sessions panel: state and sequence numbers of every venue link, and its controls.

FIX sessions come from ``SessionStatusChanged``; links of other protocols (OUCH over
SoupBinTCP) from ``VenueLinkChanged``, one row per link, with their own sequence numbers. The
controls act on FIX sessions (``ControlSession``); another protocol's row says so.

Log on, log out, reset and set sequence numbers are one click away but never one *accidental*
click: logout, reset and set-sequence arm first ("Confirm reset?") and act on the second click
within a few seconds, without a modal dialog.
"""

from collections.abc import Sequence
from pathlib import PurePath
from typing import Any, ClassVar

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSpinBox,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from engine.commands import ControlSession
from engine.enums import SessionState
from engine.events import Event, EventRecord, SessionStatusChanged, VenueLinkChanged
from widgets.fmt import fmt_ts_utc

_Index = QModelIndex | QPersistentModelIndex

COLUMNS = ("Session", "State", "Next out", "Next in", "Changed (UTC)", "Dictionary")
STATE_TEXT = {
    SessionState.DISCONNECTED: "Disconnected",
    SessionState.CONNECTING: "Connecting",
    SessionState.LOGON_SENT: "Logon sent",
    SessionState.LOGGED_ON: "Logged on",
    SessionState.LOGOUT_SENT: "Logout sent",
}
#: How long an armed action waits for its confirming click, ms.
ARM_MS = 4000


#: One row: a FIX session's status, or another protocol's link.
LinkRow = SessionStatusChanged | VenueLinkChanged


def dictionary_text(s: SessionStatusChanged) -> str:
    """Return the session's own dictionary files by name, or ``shipped``."""
    names = [PurePath(p).name for p in (s.dictionary, s.app_dictionary) if p]
    return " + ".join(names) or "shipped"


def row_key(s: LinkRow) -> str:
    """Return the row's key: a FIX session id, else ``PROTOCOL detail`` of the link."""
    if isinstance(s, SessionStatusChanged):
        return s.session_id
    return f"{s.protocol} {s.detail or s.venue}"


def row_cells(s: LinkRow) -> tuple[str, ...]:
    """Return the texts of the row's cells, in :data:`COLUMNS` order."""
    if isinstance(s, SessionStatusChanged):
        return (
            s.session_id,
            STATE_TEXT[s.state],
            f"{s.next_sender_seq_num:,}",
            f"{s.next_target_seq_num:,}",
            fmt_ts_utc(s.ts_event),
            dictionary_text(s),
        )
    return (
        row_key(s),
        s.state or ("Logged on" if s.up else "Disconnected"),
        f"{s.next_out:,}" if s.next_out else "",
        f"{s.next_in:,}" if s.next_in else "",
        fmt_ts_utc(s.ts_event),
        s.protocol,
    )


def row_up(s: LinkRow) -> bool:
    """Return whether the row's link is up."""
    return s.state is SessionState.LOGGED_ON if isinstance(s, SessionStatusChanged) else s.up


class SessionsModel(QAbstractTableModel):
    """One row per venue link (FIX: per session id), in order of first appearance."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._rows: list[LinkRow] = []
        self._row_of: dict[str, int] = {}

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        """Return the number of sessions."""
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        """Return the number of columns."""
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        """Return the column titles."""
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def session(self, row: int) -> LinkRow:
        """Return the status of the session (or other link) in ``row``."""
        return self._rows[row]

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """Return the text of a cell."""
        if not index.isValid():
            return None
        s, col = self._rows[index.row()], index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return row_cells(s)[col]
        if role == Qt.ItemDataRole.ToolTipRole and col == 5:
            if not isinstance(s, SessionStatusChanged):
                return f"{s.protocol} link of venue {s.venue}"
            paths = [p for p in (s.dictionary, s.app_dictionary) if p]
            return "\n".join(paths) or "The dictionary shipped for the session's FIX version"
        if (
            role == Qt.ItemDataRole.ToolTipRole
            and col in (2, 3)
            and not isinstance(s, SessionStatusChanged)
        ):
            return ("The next number the engine sends", "The next number the venue sends")[col - 2]
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (2, 3):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ForegroundRole and col == 1:
            return QColor("#3fb950") if row_up(s) else QColor("#d29922")
        return None

    def update(self, events: Sequence[LinkRow]) -> None:
        """Apply status events (the newest per link wins)."""
        for ev in events:
            key = row_key(ev)
            row = self._row_of.get(key)
            if row is None:
                self.beginInsertRows(QModelIndex(), len(self._rows), len(self._rows))
                self._row_of[key] = len(self._rows)
                self._rows.append(ev)
                self.endInsertRows()
            else:
                self._rows[row] = ev
                self.dataChanged.emit(self.index(row, 0), self.index(row, len(COLUMNS) - 1))


class SessionsPanel(QWidget):
    """Table of venue links with log on, log out, reset and set-sequence controls (FIX).

    Signals
    -------
    command_requested(object)
        A :class:`engine.commands.ControlSession` the user confirmed.
    """

    #: Engine event types :meth:`on_events` reads (the workspace hands it only these).
    EVENT_TYPES: ClassVar[tuple[type[Event], ...]] = (SessionStatusChanged, VenueLinkChanged)

    command_requested = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = SessionsModel(self)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.verticalHeader().hide()
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.table.setWordWrap(False)  # one line per session: ids and states stay whole
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.logon = QPushButton("Log on")
        self.logout = QPushButton("Log out")
        self.reset = QPushButton("Reset")
        self.set_seq = QPushButton("Set seq")
        self.out_seq = QSpinBox()
        self.in_seq = QSpinBox()
        for box, name in ((self.out_seq, "out "), (self.in_seq, "in ")):
            box.setRange(1, 2_000_000_000)
            box.setPrefix(name)
        self.logon.clicked.connect(lambda: self._act("logon"))
        self.logout.clicked.connect(lambda: self._arm_or_act("logout", self.logout))
        self.reset.clicked.connect(lambda: self._arm_or_act("reset", self.reset))
        self.set_seq.clicked.connect(lambda: self._arm_or_act("set_seq", self.set_seq))
        self.message = QLabel("")
        self.message.setProperty("state", "muted")
        self._armed: tuple[str, QPushButton] | None = None
        self._link_note = ""  # what the message line says of a selected non-FIX link
        self._disarm = QTimer(self)
        self._disarm.setSingleShot(True)
        self._disarm.timeout.connect(self._reset_arm)
        bar = QHBoxLayout()
        bar.setContentsMargins(4, 2, 4, 2)
        for w in (self.logon, self.logout, self.reset, self.out_seq, self.in_seq, self.set_seq):
            bar.addWidget(w)
        bar.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.table, 1)
        layout.addLayout(bar)
        layout.addWidget(self.message)
        self.table.selectionModel().currentRowChanged.connect(self._on_row)

    def on_events(self, batch: Sequence[EventRecord]) -> None:
        """Apply the session status events of a batch."""
        sessions: list[LinkRow] = [
            r.event
            for r in batch
            if isinstance(r.event, SessionStatusChanged)
            or (isinstance(r.event, VenueLinkChanged) and r.event.protocol != "FIX")
        ]  # a FIX session's VenueLinkChanged says less than its SessionStatusChanged
        if sessions:
            rows = self.model.rowCount()
            self.model.update(sessions)
            if self.model.rowCount() != rows:  # a new session: fit its id and dictionary now
                self.table.resizeColumnsToContents()
            current = self.table.currentIndex()
            if not current.isValid() and self.model.rowCount():
                self.table.selectRow(0)
            elif current.isValid() and not (self.out_seq.hasFocus() or self.in_seq.hasFocus()):
                self._on_row(current, current)  # follow the live numbers unless being edited

    def show_result(self, text: str) -> None:
        """Show the engine's answer to the last command."""
        self.message.setText(text)

    def _on_row(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid():
            s = self.model.session(current.row())
            fix = isinstance(s, SessionStatusChanged)
            for w in (self.logon, self.logout, self.reset, self.out_seq, self.in_seq, self.set_seq):
                w.setEnabled(fix)
            if isinstance(s, SessionStatusChanged):
                self.out_seq.setValue(s.next_sender_seq_num)
                self.in_seq.setValue(s.next_target_seq_num)
                if self.message.text() == self._link_note:
                    self.message.setText("")
            else:
                self._link_note = (
                    f"{s.protocol} link of {s.venue}: it logs in again and resumes its sequence "
                    "numbers by itself (the controls are for FIX sessions)"
                )
                self.message.setText(self._link_note)

    def _selected(self) -> str | None:
        index = self.table.currentIndex()
        if not index.isValid():
            return None
        s = self.model.session(index.row())
        return s.session_id if isinstance(s, SessionStatusChanged) else None

    def _arm_or_act(self, action: str, button: QPushButton) -> None:
        if self._armed is not None and self._armed[0] == action:
            self._reset_arm()
            self._act(action)
            return
        self._reset_arm()
        self._armed = (action, button)
        button.setText(f"Confirm {button.text().lower()}?")
        self._disarm.start(ARM_MS)

    def _reset_arm(self) -> None:
        if self._armed is not None:
            action, button = self._armed
            button.setText({"logout": "Log out", "reset": "Reset", "set_seq": "Set seq"}[action])
        self._armed = None
        self._disarm.stop()

    def _act(self, action: str) -> None:
        session_id = self._selected()
        if session_id is None:
            self.message.setText("Select a session first")
            return
        self.command_requested.emit(
            ControlSession(
                session_id=session_id,
                action=action,
                next_sender_seq_num=self.out_seq.value() if action == "set_seq" else None,
                next_target_seq_num=self.in_seq.value() if action == "set_seq" else None,
            )
        )
