# SPDX-License-Identifier: MIT
"""Every message of every venue link, filterable, with a detail pane naming every field.

FIX messages (``FixMessageSeen``) and those of other order-entry protocols
(``VenueMessageSeen``: OUCH, with the protocol's own field names and the bytes in hex) share
the list, the filters, the order chains and the timestamps.

Field names and enum meanings come from a ``describe(tag, value) -> (name, meaning)`` callable
injected by the app (widgets may not import ``engine.fix``). When that callable also has an
``explain_checked(raw, session_id)`` method (:class:`ExplainsMessages`) the detail pane shows
the message as header, body and trailer, repeating groups as a tree of entries, and highlights
every field that fails the session's dictionary's validation, with the reason. The pane also
shows the three timestamps of a message and the gaps between them, and the raw message with
SOH shown as ``|``.

Selecting an order (:meth:`FixInspector.show_chain`) lists every message of its ClOrdID chain
(ClOrdID <11> or OrigClOrdID <41> in the chain) oldest first.

The list keeps its newest :data:`FIX_CAPACITY` messages column-wise (:class:`MessageCodec`):
a 69-byte row of numbers per message and its bytes packed in a
:class:`~widgets.tables.arena.ByteArena`, about 190 bytes a message instead of ~600 for the
event object, a row object and their strings and ints. The message is rebuilt from its bytes
for the rows on screen and the one selected, so every field stays inspectable.

One module: the list's storage, its filters and chains, and the detail pane are one widget's
parts that share the stored rows; the storage itself (arena, codecs' base) is in
``widgets.tables``.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
from PySide6.QtCore import (
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtGui import QBrush, QFont, QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableView,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine.events import (
    Event,
    EventRecord,
    FixMessageSeen,
    SessionStatusChanged,
    VenueMessageSeen,
)
from engine.fix.edit.nodes import FieldNode
from engine.fix.edit.splitting import split_fields
from engine.venues.seen import message_fields
from widgets.empty_state import EmptyState
from widgets.fmt import fmt_duration_ns, fmt_ts_utc
from widgets.monitor.formats import fmt_time
from widgets.tables import Column, DataTableView
from widgets.tables.arena import ByteArena
from widgets.tables.columnar import ColumnarTableModel
from widgets.tables.keys import StringPool
from widgets.tables.model import KeyRole
from widgets.tables.panel import TablePanel

#: Names a field and its value: ``describe(tag, value) -> (field name, enum meaning or "")``.
DescribeField = Callable[[int, bytes], tuple[str, str]]

#: Messages kept on screen; the session's message log keeps them all.
FIX_CAPACITY = 100_000

SOH = b"\x01"


def no_dictionary(tag: int, value: bytes) -> tuple[str, str]:
    """Describe nothing (no dictionary injected): empty name and meaning."""
    return "", ""


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


#: A message in the inspector: FIX, or another venue protocol's.
SeenMessage = FixMessageSeen | VenueMessageSeen
Rows = npt.NDArray[np.void]
_MESSAGE_TYPES = (FixMessageSeen, VenueMessageSeen)


def show_fields(ev: VenueMessageSeen) -> str:
    """Return a non-FIX message as one line: ``Name=value|...``."""
    return "|".join(f"{name}={value}" for name, value, _meaning in message_fields(ev))


def show_hex(raw: bytes) -> str:
    """Return bytes as a hex dump: offset, 16 bytes a line, in groups of 4."""
    lines = []
    for at in range(0, len(raw), 16):
        chunk = raw[at : at + 16].hex()
        groups = " ".join(chunk[i : i + 8] for i in range(0, len(chunk), 8))
        lines.append(f"{at:04x}  {groups}")
    return "\n".join(lines)


def show_raw(ev: SeenMessage) -> str:
    """Return the message as the list shows it (FIX: SOH as ``|``)."""
    return show_soh(ev.raw) if isinstance(ev, FixMessageSeen) else show_fields(ev)


@dataclass(frozen=True, slots=True)
class FixRow:
    """One message in the list (rebuilt from its stored row for the rows shown)."""

    key: int  # arrival number in the list (1, 2, ... again after ``clear``)
    ev: SeenMessage
    client_order_id: str
    orig_client_order_id: str = ""
    #: What the free-text filter searches (FIX: the raw message; others: ``Name=value|...``).
    search: bytes = b""


#: One message as the list keeps it: numbers, indices into the codec's strings, and where its
#: bytes are in the codec's :class:`~widgets.tables.arena.ByteArena` (the raw message, then,
#: for another protocol's message, its ClOrdID and OrigClOrdID in UTF-8). A FIX message's
#: ClOrdID <11> and OrigClOrdID <41> are read from its bytes when shown.
MESSAGE_ROW_DTYPE: Final = np.dtype(
    [
        ("row", "i8"),  # arrival number: the model's key
        ("ts_event", "i8"),  # handled by the engine, ns
        ("ts_created", "i8"),  # built (out) or SendingTime <52> (in), ns
        ("ts_wire", "i8"),  # written to or read from the socket, ns
        ("seq_num", "i8"),  # MsgSeqNum <34>, or the protocol's sequence number
        ("raw_at", "i8"),  # global offset of the bytes in the arena
        ("raw_len", "u4"),  # bytes of the message
        ("session", "u4"),  # index into the strings: the session or link
        ("msg_type", "u4"),  # index into the strings: MsgType <35> (others: "O EnterOrder")
        ("protocol", "u4"),  # index into the strings: "" for FIX, else "OUCH"...
        ("clid_len", "u2"),  # bytes of the ClOrdID after the message (other protocols)
        ("orig_len", "u2"),  # bytes of the OrigClOrdID after that
        ("outbound", "?"),
    ]
)

# Positions of the fields in a row tuple (``ndarray.item()``).
_ROW, _TS_EVENT, _TS_CREATED, _TS_WIRE, _SEQ_NUM, _RAW_AT, _RAW_LEN = range(7)
_SESSION, _MSG_TYPE, _PROTOCOL, _CLID_LEN, _ORIG_LEN, _OUTBOUND = range(7, 13)


class MessageCodec:
    """Messages (``FixMessageSeen``, ``VenueMessageSeen``) to :data:`MESSAGE_ROW_DTYPE` rows.

    Each message gets the next arrival number as its key (dense keys: the model's index stays
    an array, whatever the engine's sequence numbers of the other events in between). The
    bytes go to one arena; chunks of it are freed as the oldest rows leave the model (rows
    leave oldest first: a key forgotten out of order only waits for the older ones).
    """

    dtype: np.dtype[np.void] = MESSAGE_ROW_DTYPE
    key_field = "row"

    def __init__(self) -> None:
        self.strings = StringPool()
        self.arena = ByteArena()
        self._last = 0  # the last arrival number given
        self._low = 1  # the oldest arrival number not forgotten
        self._gone: set[int] = set()  # forgotten numbers above ``_low`` (removed out of order)
        # (first arrival number stored in a chunk, the chunk's first offset), oldest first.
        self._marks: list[tuple[int, int]] = []
        # Fields carried by old journaled venue messages (decoded from the bytes otherwise).
        self._fields: dict[int, tuple[tuple[str, str, str], ...]] = {}

    def key(self, r: FixRow) -> int:
        """Return the next arrival number (each call numbers a new message)."""
        self._last += 1
        return self._last

    def encode(self, r: FixRow) -> tuple[Any, ...]:
        """Return ``r``'s message as a row tuple, numbered by the last :meth:`key`."""
        rows = self.encode_many([r.ev], first=self._last)
        t: tuple[Any, ...] = rows[0].item()
        return t

    def encode_many(self, events: Sequence[SeenMessage], first: int | None = None) -> Rows:
        """Return the rows of ``events``, numbered from the next arrival number on.

        Their bytes are stored now. ``first`` numbers them from there instead (for
        :meth:`encode`, after :meth:`key`).
        """
        n = len(events)
        if first is None:
            first = self._last + 1
            self._last += n
        intern = self.strings.intern
        blobs: list[bytes] = []
        tuples = []
        for i, ev in enumerate(events):
            if isinstance(ev, FixMessageSeen):
                blobs.append(ev.raw)
                proto, clid_n, orig_n = 0, 0, 0
            else:
                clid = ev.client_order_id.encode()
                orig = ev.orig_client_order_id.encode()
                blobs.append(ev.raw + clid + orig)
                proto, clid_n, orig_n = intern(ev.protocol), len(clid), len(orig)
                if ev.fields:
                    self._fields[first + i] = ev.fields
            tuples.append((
                first + i, ev.ts_event, ev.ts_created, ev.ts_wire, ev.seq_num, 0, len(ev.raw),
                intern(ev.session_id), intern(ev.msg_type), proto, clid_n, orig_n, ev.outbound,
            ))  # fmt: skip
        chunks = self.arena.chunks
        rows = np.array(tuples, MESSAGE_ROW_DTYPE)
        at = self.arena.extend(blobs)
        rows["raw_at"] = at
        if self.arena.chunks != chunks or not self._marks:
            # New chunks began in this batch: note the first number stored in each.
            starts = set(self.arena.chunk_starts()[-(self.arena.chunks - chunks or 1) :])
            for i in np.flatnonzero(np.isin(at, list(starts))).tolist():
                self._marks.append((first + i, int(at[i])))
        return rows

    def decode(self, t: tuple[Any, ...]) -> FixRow:
        """Return the list row of a row tuple (the message rebuilt from its bytes)."""
        key = t[_ROW]
        n = t[_RAW_LEN]
        clid_n, orig_n = t[_CLID_LEN], t[_ORIG_LEN]
        blob = self.arena.get(t[_RAW_AT], n + clid_n + orig_n)
        strings = self.strings
        if not t[_PROTOCOL]:
            ev: SeenMessage = FixMessageSeen(
                ts_event=t[_TS_EVENT],
                session_id=strings[t[_SESSION]],
                outbound=t[_OUTBOUND],
                msg_type=strings[t[_MSG_TYPE]],
                seq_num=t[_SEQ_NUM],
                raw=blob,
                ts_created=t[_TS_CREATED],
                ts_wire=t[_TS_WIRE],
            )
            return FixRow(key, ev, field_value(blob, 11), field_value(blob, 41), blob)
        clid = blob[n : n + clid_n].decode(errors="replace")
        orig = blob[n + clid_n :].decode(errors="replace")
        venue = VenueMessageSeen(
            ts_event=t[_TS_EVENT],
            session_id=strings[t[_SESSION]],
            protocol=strings[t[_PROTOCOL]],
            outbound=t[_OUTBOUND],
            msg_type=strings[t[_MSG_TYPE]],
            seq_num=t[_SEQ_NUM],
            raw=blob[:n],
            fields=self._fields.get(key, ()),
            client_order_id=clid,
            orig_client_order_id=orig,
            ts_created=t[_TS_CREATED],
            ts_wire=t[_TS_WIRE],
        )
        return FixRow(key, venue, clid, orig, show_fields(venue).encode("latin-1", "replace"))

    # ------------------------------------------------------------------ a row's fields
    def session(self, t: tuple[Any, ...]) -> str:
        """Return the session (or link) of a row tuple."""
        return self.strings[t[_SESSION]]

    def msg_type(self, t: tuple[Any, ...]) -> str:
        """Return the MsgType of a row tuple."""
        return self.strings[t[_MSG_TYPE]]

    def outbound(self, t: tuple[Any, ...]) -> bool:
        """Return whether the message of a row tuple went out."""
        out: bool = t[_OUTBOUND]
        return out

    def order_ids(self, t: tuple[Any, ...]) -> tuple[str, str]:
        """Return the ClOrdID and OrigClOrdID of a row tuple ("" where none)."""
        n, clid_n, orig_n = t[_RAW_LEN], t[_CLID_LEN], t[_ORIG_LEN]
        if not t[_PROTOCOL]:
            raw = self.arena.get(t[_RAW_AT], n)
            return field_value(raw, 11), field_value(raw, 41)
        ids = self.arena.get(t[_RAW_AT] + n, clid_n + orig_n)
        return ids[:clid_n].decode(errors="replace"), ids[clid_n:].decode(errors="replace")

    def search(self, t: tuple[Any, ...]) -> bytes:
        """Return what the free-text filter searches in a row tuple (see :class:`FixRow`)."""
        if not t[_PROTOCOL]:
            return self.arena.get(t[_RAW_AT], t[_RAW_LEN])
        return self.decode(t).search

    # ------------------------------------------------------------------ rows leaving
    def forget(self, keys: npt.NDArray[np.int64]) -> None:
        """Note that the rows ``keys`` left; free the arena's chunks nobody reads any more."""
        if not keys.shape[0]:
            return
        lo, hi = int(keys.min()), int(keys.max())
        fields = self._fields
        if fields:
            for k in keys.tolist():
                fields.pop(k, None)
        if lo == self._low and hi - lo + 1 == keys.shape[0] and not self._gone:
            self._low = hi + 1  # the usual case: the oldest rows, in one run
        else:
            gone = self._gone
            gone.update(keys.tolist())
            while self._low in gone:
                gone.discard(self._low)
                self._low += 1
        marks = self._marks
        # The chunk of the oldest row kept, and every chunk after it, stay.
        k = next((i for i in range(len(marks) - 1, -1, -1) if marks[i][0] <= self._low), -1)
        if self._low > self._last:
            self.arena.release_below(self.arena.end)
            del marks[: len(marks) - 1]
        elif k > 0:
            self.arena.release_below(marks[k][1])
            del marks[:k]

    def restart(self) -> None:
        """Forget every message and number the next one 1 (the model was cleared)."""
        self.arena.clear()
        self._last, self._low = 0, 1
        self._gone.clear()
        self._marks.clear()
        self._fields.clear()

    @property
    def nbytes(self) -> int:
        """Return the bytes of the arena in use (the rows are the model's)."""
        return self.arena.nbytes


class MessageTableModel(ColumnarTableModel[FixRow]):
    """The message list: a :class:`ColumnarTableModel` over a :class:`MessageCodec`.

    :meth:`clear` also restarts the arrival numbers, so the messages of a list filled anew
    are numbered 1, 2, ... (``row_of(n)`` finds the n-th).
    """

    codec: MessageCodec

    def clear(self) -> None:
        """Remove every row and restart the numbering."""
        super().clear()
        self.codec.restart()


@runtime_checkable
class ExplainsMessages(Protocol):
    """A field describer that also explains whole messages (``engine.fix.edit.describe``)."""

    def __call__(self, tag: int, value: bytes) -> tuple[str, str]:
        """Return a field's name and the meaning of its value."""
        ...

    def explain_checked(
        self, raw: bytes, session_id: str = ""
    ) -> tuple[tuple[FieldNode, ...], str]:
        """Return the message as sections of checked fields, and what it was checked against.

        Groups come as entries; the second item names the dictionaries in words (``""``:
        none, the fields are a flat list).
        """
        ...

    def note_session(self, session_id: str, dictionary: str, app_dictionary: str = "") -> None:
        """Use a session's own dictionary files (the engine's paths) for its messages."""
        ...


def flat_fields(raw: bytes, describe: DescribeField) -> tuple[FieldNode, ...]:
    """Return the fields of ``raw`` as a flat, unchecked list (no dictionary structure)."""
    out = []
    for tag, value in split_fields(raw):
        text = value.decode("latin-1")
        if tag < 0:
            out.append(FieldNode(-1, "", text, problem="not tag=value"))
        else:
            name, meaning = describe(tag, value)
            out.append(FieldNode(tag, name, text, meaning))
    return tuple(out)


def count_problems(nodes: Sequence[FieldNode]) -> int:
    """Return how many fields under ``nodes`` fail validation."""
    return sum((1 if n.problem else 0) + count_problems(n.children) for n in nodes)


def failing_fields(nodes: Sequence[FieldNode]) -> list[str]:
    """Return ``Name <tag>`` of every field under ``nodes`` that fails validation."""
    out = []
    for n in nodes:
        if n.problem:
            out.append(f"{n.name or '?'} <{n.tag}>" if n.tag >= 0 else n.value)
        out += failing_fields(n.children)
    return out


#: Columns of the detail tree.
DETAIL_HEADERS = ("Field", "Tag", "Value", "Meaning", "Check")


class FixFilterModel(QSortFilterProxyModel):
    """Filter messages by session, direction, MsgType, ClOrdID and free text."""

    def __init__(self, source: MessageTableModel, parent: QObject | None = None):
        super().__init__(parent)
        self._source = source
        self.session = ""
        self.direction = ""  # "", "in", "out"
        self.msg_types: frozenset[str] = frozenset()
        self.client_order_id = ""
        self.text = b""
        #: ClOrdIDs of one order's chain; when set, only its messages pass (other filters off).
        self.chain: frozenset[str] = frozenset()
        self.setSourceModel(source)
        self.setSortRole(KeyRole)

    def set_chain(self, chain: frozenset[str]) -> None:
        """Show only the messages of one ClOrdID chain, oldest first (empty: every message)."""
        self.beginFilterChange()
        self.chain = chain
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)
        if chain:
            self.sort(0, Qt.SortOrder.AscendingOrder)
        else:
            self.sort(-1)

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
        if not self.chain and not (
            self.session or self.direction or self.msg_types or self.client_order_id or self.text
        ):
            return True
        # The stored row's fields: no message rebuilt for each of 100,000 rows.
        t = self._source.row_tuple(source_row)
        codec = self._source.codec
        if self.chain:
            clid, orig = codec.order_ids(t)
            return clid in self.chain or orig in self.chain
        if self.session and codec.session(t) != self.session:
            return False
        if self.direction and (self.direction == "out") != codec.outbound(t):
            return False
        if self.msg_types and codec.msg_type(t) not in self.msg_types:
            return False
        if self.client_order_id and self.client_order_id not in codec.order_ids(t)[0]:
            return False
        return not self.text or self.text.lower() in codec.search(t).lower()


class FixInspector(QWidget):
    """The FIX message list with filters and a detail pane.

    Parameters
    ----------
    describe : DescribeField | None
        Names fields and enum values (from the app's FIX dictionary).
    """

    #: Engine event types :meth:`on_events` reads (the workspace hands it only these).
    EVENT_TYPES: ClassVar[tuple[type[Event], ...]] = (
        FixMessageSeen,
        VenueMessageSeen,
        SessionStatusChanged,
    )

    def __init__(self, describe: DescribeField | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.describe = describe or no_dictionary
        self._type_names: dict[str, str] = {}
        self.codec = MessageCodec()
        self.model = MessageTableModel(
            self._columns(), self.codec, newest_first=True, capacity=FIX_CAPACITY, parent=self
        )
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
        self.chain_label = QLabel()
        self.chain_label.setObjectName("fixChain")
        self.chain_label.setProperty("state", "warn")
        self.show_all_button = QPushButton("Show all messages")
        self.show_all_button.setToolTip("Leave the order's chain and show every message")
        self.show_all_button.clicked.connect(lambda: self.show_chain(()))
        tools = QHBoxLayout()
        self._filter_tools: tuple[QWidget, ...] = (
            self.session_combo,
            self.direction_combo,
            self.type_edit,
            self.clordid_edit,
            self.text_edit,
        )
        for tool in self._filter_tools[:-1]:
            tools.addWidget(tool)
        tools.addWidget(self.text_edit, 1)
        tools.addWidget(self.chain_label, 1)
        tools.addWidget(self.show_all_button)
        self.chain_label.hide()
        self.show_all_button.hide()
        #: The ClOrdIDs of the order whose chain is shown (empty: every message).
        self.chain: tuple[str, ...] = ()
        #: ``17=ExecID`` of a report asked for before it arrived (selected when it does).
        self._pending_exec = b""

        self.fields_tree = QTreeWidget()
        self.fields_tree.setObjectName("fixFieldsTree")
        self.fields_tree.setColumnCount(len(DETAIL_HEADERS))
        self.fields_tree.setHeaderLabels(list(DETAIL_HEADERS))
        self.fields_tree.setUniformRowHeights(True)
        self.fields_tree.setAlternatingRowColors(True)
        self.fields_tree.setIndentation(14)
        self.fields_tree.header().setStretchLastSection(True)
        for n, width in enumerate((190, 56, 170, 170)):
            self.fields_tree.setColumnWidth(n, width)
        self.check_label = QLabel()
        self.check_label.setObjectName("fixCheck")
        self.check_label.setWordWrap(True)
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
        fields_and_raw.addWidget(self.fields_tree)
        fields_and_raw.addWidget(raw_box)
        fields_and_raw.setStretchFactor(0, 3)
        fields_and_raw.setStretchFactor(1, 2)
        detail = QWidget()
        dl = QVBoxLayout(detail)
        dl.setContentsMargins(0, 0, 0, 0)
        dl.setSpacing(2)
        dl.addWidget(self.times_label)
        dl.addWidget(self.check_label)
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
        self.current: SeenMessage | None = None
        self.show_message(None)

    def _type_name(self, ev: SeenMessage) -> str:
        msg_type = ev.msg_type
        if isinstance(ev, VenueMessageSeen):
            return msg_type
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
            Column("msg_type", "MsgType", lambda r: self._type_name(r.ev), width=150),
            Column("client_order_id", "ClOrdID", lambda r: r.client_order_id, width=100),
            Column("raw", "Message", lambda r: show_raw(r.ev)),
        )  # fmt: skip

    def on_events(self, batch: Sequence[EventRecord]) -> None:
        """Append the ``FixMessageSeen`` events of a batch; note sessions' dictionary files."""
        if isinstance(self.describe, ExplainsMessages):
            for r in batch:
                ev = r.event
                if isinstance(ev, SessionStatusChanged):
                    self.describe.note_session(ev.session_id, ev.dictionary, ev.app_dictionary)
        messages = [r.event for r in batch if isinstance(r.event, _MESSAGE_TYPES)]
        if not messages:
            return
        for sid in {ev.session_id for ev in messages}:
            if self.session_combo.findData(sid) < 0:
                self.session_combo.addItem(sid, sid)
        self.model.apply_rows(self.codec.encode_many(messages))
        pending = self._pending_exec
        # The needle is ``<SOH>17=ExecID<SOH>``: only a FIX message's bytes can hold it.
        if pending and any(pending in ev.raw for ev in messages if isinstance(ev, FixMessageSeen)):
            self._select_report(pending)

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

    def show_message(self, ev: SeenMessage | None) -> None:
        """Show every field (checked, groups as a tree), the timestamps and the raw text."""
        self.current = ev
        self.fields_tree.clear()
        if ev is None:
            self.times_label.setText("Select a message to read its fields.")
            self.check_label.setText("")
            self.raw_edit.setPlainText("")
            self.copy_button.setEnabled(False)
            return
        if isinstance(ev, VenueMessageSeen):
            self._show_venue_message(ev)
            return
        describe = self.describe if isinstance(self.describe, ExplainsMessages) else None
        if describe is not None:
            nodes, against = describe.explain_checked(ev.raw, ev.session_id)
        else:
            nodes, against = flat_fields(ev.raw, self.describe), ""
        self._fill_tree(nodes)
        problems = count_problems(nodes)
        if describe is None or not against:
            self._set_check("Not checked: no FIX dictionary", "muted")
        elif problems:
            s = "s" if problems != 1 else ""
            names = ", ".join(failing_fields(nodes))
            self._set_check(
                f"⚠ {problems} field{s} fail{'' if s else 's'} validation against {against}: "
                f"{names}",
                "bad",
            )
        else:
            self._set_check(f"✓ Every field passes {against}", "ok")
        wire = "sent" if ev.outbound else "received"
        made = "created" if ev.outbound else "peer sent (52)"
        self.times_label.setText(
            f"{made} {fmt_ts_utc(ev.ts_created, precision=6)}  "
            f"→ +{fmt_duration_ns(ev.ts_wire - ev.ts_created)} → "
            f"{wire} {fmt_ts_utc(ev.ts_wire, precision=6)}  "
            f"→ +{fmt_duration_ns(ev.ts_event - ev.ts_wire)} → "
            f"handled {fmt_ts_utc(ev.ts_event, precision=6)}"
        )
        self.raw_edit.setPlainText(show_soh(ev.raw))
        self.copy_button.setEnabled(True)

    def _show_venue_message(self, ev: VenueMessageSeen) -> None:
        # Another protocol: its fields by the specification's names, its bytes in hex.
        self._fill_tree(
            [FieldNode(-1, name, value, meaning) for name, value, meaning in message_fields(ev)]
        )
        self._set_check(
            f"{ev.protocol}: fields as its specification names them ({len(ev.raw)} bytes)", "muted"
        )
        wire = "sent" if ev.outbound else "received"
        seq = f"sequence number {ev.seq_num:,}  " if ev.seq_num else ""
        self.times_label.setText(
            f"{seq}{wire} {fmt_ts_utc(ev.ts_wire, precision=6)}  "
            f"→ +{fmt_duration_ns(ev.ts_event - ev.ts_wire)} → "
            f"handled {fmt_ts_utc(ev.ts_event, precision=6)}"
        )
        self.raw_edit.setPlainText(show_hex(ev.raw))
        self.copy_button.setEnabled(True)

    def _set_check(self, text: str, state: str) -> None:
        self.check_label.setText(text)
        self.check_label.setProperty("state", state)
        self.check_label.style().unpolish(self.check_label)
        self.check_label.style().polish(self.check_label)

    def _fill_tree(self, nodes: Sequence[FieldNode]) -> None:
        bad = QBrush(self.table.tone_color("bad"))
        muted = QBrush(self.table.tone_color("muted"))
        bold = QFont(self.fields_tree.font())
        bold.setBold(True)

        def add(parent: QTreeWidget | QTreeWidgetItem, node: FieldNode) -> int:
            problem = f"⚠ {node.problem}" if node.problem else ""
            tag = str(node.tag) if node.tag >= 0 else ""
            item = QTreeWidgetItem(parent, [node.name, tag, node.value, node.meaning, problem])
            item.setTextAlignment(1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            below = sum(add(item, child) for child in node.children)
            if node.tag < 0 and node.children:  # a section or a group entry
                item.setFont(0, bold)
                item.setForeground(2, muted)
                if below:
                    item.setText(4, f"⚠ {below} failing below")
                    item.setForeground(4, bad)
            if node.problem:
                for col in range(len(DETAIL_HEADERS)):
                    item.setForeground(col, bad)
                    item.setFont(col, bold)
                    item.setToolTip(col, node.problem)
            return below + (1 if node.problem else 0)

        for node in nodes:
            add(self.fields_tree, node)
        self.fields_tree.expandAll()

    def detail_rows(self) -> list[tuple[int, str, str, str, str, str]]:
        """Return the detail tree top to bottom: ``(depth, tag, name, value, meaning, check)``."""
        out: list[tuple[int, str, str, str, str, str]] = []

        def walk(item: QTreeWidgetItem | None, depth: int) -> None:
            if item is None:
                return
            t = [item.text(c) for c in range(len(DETAIL_HEADERS))]
            out.append((depth, t[1], t[0], t[2], t[3], t[4]))
            for n in range(item.childCount()):
                walk(item.child(n), depth + 1)

        for n in range(self.fields_tree.topLevelItemCount()):
            walk(self.fields_tree.topLevelItem(n), 0)
        return out

    # ------------------------------------------------------------------ order chains
    def show_chain(self, client_order_ids: Sequence[str], title: str = "") -> None:
        """List only the messages of one ClOrdID chain, oldest first (empty: every message).

        ``title`` names the order in the banner (default: the chain itself).
        """
        chain = tuple(dict.fromkeys(c for c in client_order_ids if c))
        self.chain = chain
        self._pending_exec = b""
        for tool in self._filter_tools:
            tool.setVisible(not chain)
        self.chain_label.setVisible(bool(chain))
        self.show_all_button.setVisible(bool(chain))
        self.proxy.set_chain(frozenset(chain))
        if chain:
            n = self.proxy.rowCount()
            ids = " → ".join(chain) if len(chain) <= 3 else f"{len(chain)} ClOrdIDs"
            self.chain_label.setText(
                f"Order {title or chain[-1]} ({ids}): {n:,} message"
                f"{'s' if n != 1 else ''}, oldest first"
            )
            self.chain_label.setToolTip("ClOrdID chain: " + " → ".join(chain))
            if n:
                self.table.selectRow(0)
        else:
            self.table.clearSelection()

    def show_execution(self, client_order_ids: Sequence[str], exec_id: str) -> bool:
        """Show the chain of an order and select the report carrying ExecID <17> ``exec_id``.

        Returns whether the report was found among the messages kept.
        """
        self.show_chain(client_order_ids)
        needle = f"\x0117={exec_id}\x01".encode("latin-1")
        found = self._select_report(needle)
        # Not here yet (the list follows a little later than the executions): select it on
        # arrival.
        self._pending_exec = b"" if found else needle
        return found

    def _select_report(self, needle: bytes) -> bool:
        for r in range(self.proxy.rowCount() - 1, -1, -1):
            row = self.model.record(self.proxy.mapToSource(self.proxy.index(r, 0)).row())
            if needle in row.search:
                self.table.selectRow(r)
                self._pending_exec = b""
                return True
        return False

    def copy_raw(self) -> str:
        """Copy the selected message (SOH as ``|``) to the clipboard; return the text."""
        ev = self.current
        if ev is None:
            text = ""
        elif isinstance(ev, FixMessageSeen):
            text = show_soh(ev.raw)
        else:
            text = show_hex(ev.raw).replace("\n", " ")

        QGuiApplication.clipboard().setText(text)
        return text
