# SPDX-License-Identifier: MIT
"""The Executions list: every fill, newest first, once per (order, ExecID <17>).

The fills are kept column-wise (:class:`~widgets.tables.columnar.ColumnarTableModel`): one
row of :data:`FILL_ROW_DTYPE` per fill, about 140 bytes with its IDs, instead of an
``OrderFilled`` object and its strings (~600 bytes); an ``OrderFilled`` is rebuilt only for
the rows on screen and the selected one.
"""

from collections.abc import Sequence
from typing import Any, ClassVar, Final

import numpy as np
import numpy.typing as npt
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QWidget

from engine.enums import Side
from engine.events import Event, EventRecord, OrderFilled
from widgets.empty_state import EmptyState
from widgets.monitor.context import MonitorContext
from widgets.monitor.formats import SIDE_TEXT, SIDE_TONE, fmt_time
from widgets.tables import Column, DataTableView
from widgets.tables.columnar import ColumnarTableModel
from widgets.tables.keys import IntSet, StringPool
from widgets.tables.panel import TablePanel

#: Fills kept on screen; older ones stay in the engine's journal.
EXECUTIONS_CAPACITY = 200_000


def execution_columns(ctx: MonitorContext) -> tuple[Column[OrderFilled], ...]:
    """Return the Executions columns."""
    f = ctx.formats
    return (
        Column("time", "Time (UTC)", lambda e: fmt_time(e.ts_event), width=125),
        Column("exec_id", "ExecID", lambda e: e.exec_id, width=110),
        Column("client_order_id", "ClOrdID", lambda e: e.client_order_id, width=110),
        Column("strategy", "Strategy", lambda e: ctx.strategy_label(e.strategy_id), width=170),
        Column("symbol", "Instrument", lambda e: e.symbol, width=90),
        Column("side", "Side", lambda e: SIDE_TEXT[e.side], tone=lambda e: SIDE_TONE[e.side],
               width=50),
        Column("qty", "Qty", lambda e: f.qty(e.symbol, e.last_qty_lots), numeric=True, width=70),
        Column("price", "Price", lambda e: f.price(e.symbol, e.last_px_ticks), numeric=True,
               width=90),
        Column("leaves", "Leaves", lambda e: f.qty(e.symbol, e.leaves_qty_lots), numeric=True,
               width=70),
        Column("venue_order_id", "OrderID", lambda e: e.venue_order_id, width=90),
        Column("received", "Received (UTC)", lambda e: fmt_time(e.ts_recv), width=125),
    )  # fmt: skip


FILL_ROW_DTYPE: Final = np.dtype(
    [
        ("row", "i8"),  # the codec's number for the fill (dense: the model's key)
        ("order_id", "i8"),
        ("strategy_id", "i8"),
        ("last_px_ticks", "i8"),  # LastPx <31>
        ("last_qty_lots", "i8"),  # LastQty <32>
        ("leaves_qty_lots", "i8"),  # LeavesQty <151>
        ("ts_event", "i8"),
        ("ts_recv", "i8"),
        ("symbol", "u4"),  # index into the symbols
        ("side", "i1"),  # Side
        # Widened (a copy of the table) by the first longer value, as the blotter's.
        ("client_order_id", "S24"),  # ClOrdID <11>
        ("venue_order_id", "S24"),  # OrderID <37>
        ("exec_id", "S24"),  # ExecID <17>
    ]
)

_SIDES = {int(v): v for v in Side}


class FillCodec:
    """``OrderFilled`` to :data:`FILL_ROW_DTYPE` rows and back.

    Each fill gets the next number as its key (dense keys: the model's index stays an array);
    the view keeps fills unique by (order, ExecID).
    """

    dtype: np.dtype[np.void] = FILL_ROW_DTYPE
    key_field = "row"

    def __init__(self) -> None:
        self.symbols = StringPool()
        self._last = 0

    def key(self, f: OrderFilled) -> int:
        """Return the next row number (each call numbers a new fill)."""
        self._last += 1
        return self._last

    def encode(self, f: OrderFilled) -> tuple[Any, ...]:
        """Return ``f`` as a row tuple, with the number :meth:`key` gave it last."""
        return self.row(self._last, f)

    def row(self, key: int, f: OrderFilled) -> tuple[Any, ...]:
        """Return ``f`` as the row tuple of number ``key``."""
        return (
            key, f.order_id, f.strategy_id, f.last_px_ticks, f.last_qty_lots, f.leaves_qty_lots,
            f.ts_event, f.ts_recv, self.symbols.intern(f.symbol), f.side,
            f.client_order_id.encode(), f.venue_order_id.encode(), f.exec_id.encode(),
        )  # fmt: skip

    def decode(self, row: tuple[Any, ...]) -> OrderFilled:
        """Return the ``OrderFilled`` of a row tuple."""
        (_k, oid, sid, px, qty, leaves, ts_e, ts_r, sym, side, clid, vid, xid) = row
        return OrderFilled(
            ts_event=ts_e,
            order_id=oid,
            client_order_id=clid.decode(errors="replace"),
            venue_order_id=vid.decode(errors="replace"),
            exec_id=xid.decode(errors="replace"),
            strategy_id=sid,
            symbol=self.symbols[sym],
            side=_SIDES[side],
            last_px_ticks=px,
            last_qty_lots=qty,
            leaves_qty_lots=leaves,
            ts_recv=ts_r,
        )

    def forget(self, keys: npt.NDArray[np.int64]) -> None:
        """Keep nothing aside per fill."""


def _fill_id(order_id: int, exec_id: str) -> int:
    return hash((order_id, exec_id))


class ExecutionsView(QWidget):
    """Fills as they arrive, newest first, with a count.

    Signals
    -------
    execution_selected(object)
        The current row's ``OrderFilled`` (or ``None`` when nothing is selected).
    """

    execution_selected = Signal(object)

    #: Engine event types :meth:`on_events` reads (the workspace hands it only these).
    EVENT_TYPES: ClassVar[tuple[type[Event], ...]] = (OrderFilled,)

    def __init__(self, ctx: MonitorContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.codec = FillCodec()
        self.model: ColumnarTableModel[OrderFilled] = ColumnarTableModel(
            execution_columns(ctx),
            self.codec,
            newest_first=True,
            capacity=EXECUTIONS_CAPACITY,
            parent=self,
        )
        #: (order, ExecID) of the fills kept, hashed: a fill delivered twice is shown once.
        self._seen = IntSet()
        self.model.leaving.append(self._rows_left)
        self.table = DataTableView("executionsTable")
        self.table.setModel(self.model)
        self.count_label = QLabel()
        self.count_label.setProperty("state", "muted")
        self.fills = 0
        tools = QHBoxLayout()
        tools.addStretch(1)
        tools.addWidget(self.count_label)
        self.panel = TablePanel(
            self.table,
            EmptyState(
                "No executions yet",
                "Each fill of an order appears here with its ExecID, price and quantity.",
            ),
            tools,
        )
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.panel)
        ctx.formats_changed.connect(self.model.refresh)
        self.table.selectionModel().currentRowChanged.connect(self._on_current_changed)
        self._update_count()

    def _on_current_changed(self) -> None:
        index = self.table.currentIndex()
        self.execution_selected.emit(self.model.record(index.row()) if index.isValid() else None)

    def on_events(self, batch: Sequence[EventRecord]) -> None:
        """Append the ``OrderFilled`` events of a batch (each (order, ExecID) once)."""
        got = [f for f in (r.event for r in batch) if isinstance(f, OrderFilled)]
        if not got:
            return
        ids = [_fill_id(f.order_id, f.exec_id) for f in got]
        known = self._seen.contains_many(np.array(ids, np.int64)).tolist()
        fills, new = [], set()
        for f, h, old in zip(got, ids, known, strict=True):
            if not old and h not in new:
                new.add(h)
                fills.append(f)
        self._seen.add_many(new)
        if fills:
            self.fills += len(fills)
            codec = self.codec
            items = []
            for f in fills:
                k = codec.key(f)
                items.append((k, codec.row(k, f)))
            self.model.apply_encoded(items)
            self._update_count()

    def row_of_fill(self, order_id: int, exec_id: str) -> int:
        """Return the display row of the fill (order, ExecID), or -1."""
        rows = self.model.rows()
        hit = np.flatnonzero((rows["order_id"] == order_id) & (rows["exec_id"] == exec_id.encode()))
        return self.model.row_of(int(rows["row"][hit[0]])) if hit.shape[0] else -1

    def _rows_left(self, rows: npt.NDArray[np.void]) -> None:
        # The oldest fills dropped past the capacity (or all of them, cleared): forget them.
        ids = rows["order_id"].tolist()
        xids = rows["exec_id"].tolist()
        self._seen.discard_many(
            np.fromiter(
                (_fill_id(o, x.decode(errors="replace")) for o, x in zip(ids, xids, strict=True)),
                np.int64,
                len(ids),
            )
        )

    def _update_count(self) -> None:
        self.count_label.setText(f"{self.fills:,} fills")
