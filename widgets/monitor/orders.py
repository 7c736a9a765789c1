# SPDX-License-Identifier: MIT
"""The Orders blotter: every order (or only the working ones), one row per order, live.

Rows are keyed by ``order_id`` (stable across cancel/replace chains), so an ``OrderChanged``
updates its row in O(1). "All" and "Working" are two models over the same columns: the working
one drops an order when it can no longer trade, without a filter pass over a million rows.

"All" stores orders column-wise (:class:`~widgets.tables.columnar.ColumnarTableModel`): one
row of :data:`ORDER_ROW_DTYPE` per order, about 130 bytes with its ClOrdID and OrderID, instead
of an ``OrderView`` object and its strings (~1.5 KB). "Working" keeps only the keys of its
orders and reads their rows from "All" (:class:`~widgets.tables.columnar.SubsetTableModel`).
An ``OrderView`` is rebuilt only for the rows on screen. Orders that already exist in bulk (a
snapshot, a journal) come in as :class:`OrderColumns` through :meth:`OrdersView.load_orders`,
without an object per order.
"""

from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, ClassVar, Final

import numpy as np
import numpy.typing as npt
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QButtonGroup, QHBoxLayout, QLabel, QToolButton, QWidget

from engine.enums import OrdStatus, OrdType, Side, TimeInForce
from engine.events import Event, EventRecord, OrderChanged, OrderView
from widgets.empty_state import EmptyState
from widgets.monitor.context import MonitorContext
from widgets.monitor.formats import (
    ORD_TYPE_TEXT,
    SIDE_TEXT,
    SIDE_TONE,
    STATUS_TEXT,
    STATUS_TONE,
    TERMINAL_STATUSES,
    TIF_TEXT,
    fmt_latency,
    fmt_time,
    is_working,
)
from widgets.tables import Column, DataTableView
from widgets.tables.columnar import ColumnarTableModel, SubsetTableModel
from widgets.tables.keys import StringPool
from widgets.tables.panel import TablePanel

OrdersModel = ColumnarTableModel[OrderView]
WorkingModel = SubsetTableModel[OrderView]
Rows = npt.NDArray[np.void]

#: Orders the "All" blotter keeps (memory stays bounded: about 130 bytes each); beyond that the
#: oldest leave it (they stay in the engine's journal). Working orders stay in "Working".
BLOTTER_CAPACITY = 1_000_000

#: One order as the blotter stores it, and as a bulk load (:class:`OrderColumns`) hands it
#: over. Prices in ticks, quantities in lots, times in ns; enums as their int values;
#: ``symbol``, ``text`` and ``pending`` index string tables; ClOrdID <11> and OrderID <37> are
#: UTF-8 bytes, 24 wide to start with, widened (at least doubled) when a longer one comes.
ORDER_ROW_DTYPE: Final = np.dtype(
    [
        ("order_id", "i8"),
        ("strategy_id", "i8"),
        ("qty_lots", "i8"),  # OrderQty <38>
        ("px_ticks", "i8"),  # Price <44>, 0 for market orders
        ("cum_qty_lots", "i8"),  # CumQty <14>
        ("leaves_qty_lots", "i8"),  # LeavesQty <151>
        ("avg_px_ticks", "f8"),  # AvgPx <6>, in ticks
        ("ts_created", "i8"),
        ("ts_sent", "i8"),
        ("ts_acked", "i8"),
        ("ts_last", "i8"),
        ("symbol", "u4"),  # index into the symbols
        ("text", "u4"),  # index into the texts: Text <58> of the last report
        ("pending", "u4"),  # index into the texts: "", "cancel" or "replace"
        ("side", "i1"),  # Side
        ("ord_type", "i1"),  # OrdType
        ("time_in_force", "i1"),  # TimeInForce
        ("status", "i1"),  # OrdStatus
        # 24 bytes to start with (the engine's ClOrdIDs, "F" + 6 + "-" + a counter, up to 10^16
        # orders; most venues' OrderIDs): a longer one widens the column for every row, a copy
        # of the table on the GUI thread (90 ms at 127,000 orders) that should come early in a
        # day if at all, not when the counter gains a digit.
        # OrigClOrdID <41>: the ClOrdID this one replaced (b"" if none). An order replaced
        # more than once keeps its whole chain in ``OrderCodec.chains`` too.
        ("orig_client_order_id", "S24"),
        ("client_order_id", "S24"),  # ClOrdID <11> in force
        ("venue_order_id", "S24"),  # OrderID <37>, b"" before the venue acknowledged
    ]
)

_SIDES = {int(v): v for v in Side}
_ORD_TYPES = {int(v): v for v in OrdType}
_TIFS = {int(v): v for v in TimeInForce}
_STATUSES = {int(v): v for v in OrdStatus}
_TERMINAL_CODES = np.array(sorted(int(s) for s in TERMINAL_STATUSES), np.int8)


@dataclass(frozen=True, slots=True)
class OrderColumns:
    """Many orders at once, column-wise: what a bulk load hands the blotter.

    Parameters
    ----------
    rows : ndarray of ORDER_ROW_DTYPE
        One row per order, oldest first (byte-string fields of any width); for an order
        listed twice the last row counts.
    symbols : tuple[str, ...]
        ``rows["symbol"]`` indexes these.
    texts : tuple[str, ...]
        ``rows["text"]`` and ``rows["pending"]`` index these.
    chains : Mapping[int, tuple[str, ...]]
        OrigClOrdID <41> chains (oldest first) by ``order_id``, only for replaced orders.
    """

    rows: Rows
    symbols: tuple[str, ...]
    texts: tuple[str, ...] = ("",)
    chains: Mapping[int, tuple[str, ...]] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    @classmethod
    def from_views(cls, views: Iterable[OrderView]) -> "OrderColumns":
        """Return the columns of ``views`` (a producer that holds order objects)."""
        symbols, texts = StringPool(), StringPool()
        codec = OrderCodec(symbols, texts)
        encoded = [codec.encode(o) for o in views]
        return cls(
            _rows_of(encoded, ORDER_ROW_DTYPE), symbols.values(), texts.values(), codec.chains
        )


def _rows_of(encoded: Sequence[tuple[Any, ...]], dtype: np.dtype[np.void]) -> Rows:
    """Return row tuples as an array of ``dtype``, its byte strings widened where too narrow."""
    descr: list[tuple[str, Any]] = []
    wider = False
    for n, name in enumerate(dtype.names or ()):
        t = dtype[name]
        if t.kind == "S" and encoded:
            width = max(map(len, map(itemgetter(n), encoded)))
            if width > t.itemsize:
                t, wider = np.dtype(f"S{width}"), True
        descr.append((name, t))
    return np.array(encoded, np.dtype(descr) if wider else dtype)


class OrderCodec:
    """``OrderView`` to :data:`ORDER_ROW_DTYPE` rows and back, for one blotter model.

    Symbols and texts are interned in pools (shared between the blotter's models). A replaced
    order's row holds the ClOrdID it replaced (most chains are one step long: a dict entry,
    a tuple and a string per replaced order cost ~180 bytes); chains of two or more steps are
    kept aside whole, by ``order_id``.
    """

    dtype: np.dtype[np.void] = ORDER_ROW_DTYPE
    key_field = "order_id"

    def __init__(self, symbols: StringPool, texts: StringPool) -> None:
        self.symbols = symbols
        self.texts = texts
        #: OrigClOrdID chains by order id, of orders replaced more than once (and of a bulk
        #: load's orders, as it hands them over).
        self.chains: dict[int, tuple[str, ...]] = {}
        #: Models holding these orders: a chain goes when its order left all of them.
        self.models: tuple[Container[int], ...] = ()

    def key(self, o: OrderView) -> int:
        """Return the row key: ``order_id``."""
        return o.order_id

    def encode(self, o: OrderView) -> tuple[Any, ...]:
        """Return ``o`` as a row tuple (and keep its chain aside)."""
        chain = o.orig_client_order_ids
        if len(chain) > 1:
            self.chains[o.order_id] = chain
        elif self.chains:
            self.chains.pop(o.order_id, None)
        # The pools' dicts directly: this runs for every order event.
        sym = self.symbols._index.get(o.symbol)
        if sym is None:
            sym = self.symbols.intern(o.symbol)
        texts = self.texts._index
        text = texts.get(o.text)
        if text is None:
            text = self.texts.intern(o.text)
        pending = texts.get(o.pending)
        if pending is None:
            pending = self.texts.intern(o.pending)
        return (
            o.order_id, o.strategy_id, o.qty_lots, o.px_ticks, o.cum_qty_lots, o.leaves_qty_lots,
            o.avg_px_ticks, o.ts_created, o.ts_sent, o.ts_acked, o.ts_last, sym, text, pending,
            o.side, o.ord_type, o.time_in_force, o.status,
            chain[-1].encode() if chain else b"", o.client_order_id.encode(),
            o.venue_order_id.encode(),
        )  # fmt: skip

    def decode(self, row: tuple[Any, ...]) -> OrderView:
        """Return the ``OrderView`` of a row tuple."""
        (
            oid,
            sid,
            qty,
            px,
            cum,
            leaves,
            avg,
            ts_c,
            ts_s,
            ts_a,
            ts_l,
            sym,
            text,
            pending,
            side,
            typ,
            tif,
            status,
            orig,
            clid,
            vid,
        ) = row
        texts = self.texts
        chain = self.chains.get(oid)
        if chain is None:
            chain = (orig.decode(errors="replace"),) if orig else ()
        return OrderView(
            order_id=oid,
            client_order_id=clid.decode(errors="replace"),
            orig_client_order_ids=chain,
            venue_order_id=vid.decode(errors="replace"),
            strategy_id=sid,
            symbol=self.symbols[sym],
            side=_SIDES[side],
            ord_type=_ORD_TYPES[typ],
            time_in_force=_TIFS[tif],
            qty_lots=qty,
            px_ticks=px,
            status=_STATUSES[status],
            cum_qty_lots=cum,
            leaves_qty_lots=leaves,
            avg_px_ticks=avg,
            pending=texts[pending],
            text=texts[text],
            ts_created=ts_c,
            ts_sent=ts_s,
            ts_acked=ts_a,
            ts_last=ts_l,
        )

    def forget(self, keys: npt.NDArray[np.int64]) -> None:
        """Drop the chains of orders that left a model and are in none of :attr:`models`."""
        chains, models = self.chains, self.models
        if chains:
            for k in keys.tolist():
                if k in chains and not any(k in m for m in models):
                    del chains[k]

    def take_chains(
        self, ids: npt.NDArray[np.int64], chains: Mapping[int, tuple[str, ...]]
    ) -> None:
        """Keep the chains of the orders ``ids`` of a bulk load (their earlier ones go)."""
        if self.chains:
            have = np.fromiter(self.chains, np.int64, len(self.chains))
            for k in have[np.isin(have, ids)].tolist():
                del self.chains[k]
        if chains:
            keys = np.fromiter(chains, np.int64, len(chains))
            for k in keys[np.isin(keys, ids)].tolist():
                if chains[k]:
                    self.chains[k] = tuple(chains[k])

    def localize(self, cols: OrderColumns) -> Rows:
        """Return ``cols.rows`` with symbol and text indices into this codec's pools."""
        rows = cols.rows.copy()
        rows["symbol"] = self.symbols.remap(cols.symbols)[cols.rows["symbol"]]
        texts = self.texts.remap(cols.texts)
        rows["text"] = texts[cols.rows["text"]]
        rows["pending"] = texts[cols.rows["pending"]]
        return rows


def _chain(o: OrderView) -> str:
    return " → ".join((*o.orig_client_order_ids, o.client_order_id))


def _status(o: OrderView) -> str:
    text = STATUS_TEXT.get(o.status, o.status.name)
    return f"{text} ({o.pending} pending)" if o.pending else text


def order_columns(ctx: MonitorContext) -> tuple[Column[OrderView], ...]:
    """Return the blotter's columns, formatting prices and quantities through ``ctx``."""
    f = ctx.formats
    return (
        Column("client_order_id", "ClOrdID", lambda o: o.client_order_id, width=110,
               tooltip=_chain),
        Column("chain", "ClOrdID chain", lambda o: _chain(o) if o.orig_client_order_ids else "",
               width=150, tooltip=_chain),
        Column("strategy", "Strategy", lambda o: ctx.strategy_label(o.strategy_id), width=170),
        Column("symbol", "Instrument", lambda o: o.symbol, width=90),
        Column("side", "Side", lambda o: SIDE_TEXT[o.side], tone=lambda o: SIDE_TONE[o.side],
               width=50),
        Column("type", "Type", lambda o: f"{ORD_TYPE_TEXT[o.ord_type]} {TIF_TEXT[o.time_in_force]}",
               width=80),
        Column("qty", "Qty", lambda o: f.qty(o.symbol, o.qty_lots), numeric=True, width=70),
        Column("price", "Price",
               lambda o: "MKT" if o.ord_type is OrdType.MARKET else f.price(o.symbol, o.px_ticks),
               numeric=True, width=90),
        Column("filled", "Filled", lambda o: f.qty(o.symbol, o.cum_qty_lots), numeric=True,
               width=70),
        Column("leaves", "Leaves", lambda o: f.qty(o.symbol, o.leaves_qty_lots), numeric=True,
               width=70),
        Column("avg_price", "Avg price",
               lambda o: f.avg_price(o.symbol, o.avg_px_ticks) if o.cum_qty_lots else "",
               numeric=True, width=100),
        Column("status", "Status", _status, tone=lambda o: STATUS_TONE.get(o.status, ""),
               width=150),
        Column("created", "Created (UTC)", lambda o: fmt_time(o.ts_created), width=125),
        Column("sent", "Sent (UTC)", lambda o: fmt_time(o.ts_sent), width=125),
        Column("acked", "Acked (UTC)", lambda o: fmt_time(o.ts_acked), width=125),
        Column("latency", "Send→ack", lambda o: fmt_latency(o.ts_sent, o.ts_acked), numeric=True,
               width=80),
        Column("last", "Last (UTC)", lambda o: fmt_time(o.ts_last), width=125),
        Column("venue_order_id", "OrderID", lambda o: o.venue_order_id, width=90),
        Column("text", "Text", lambda o: o.text, width=200, tooltip=lambda o: o.text),
    )  # fmt: skip


@dataclass(slots=True)
class OrderCounts:
    """Orders of one strategy: seen, still working, and fully filled."""

    orders: int = 0
    working: int = 0
    filled: int = 0


class OrdersView(QWidget):
    """The blotter: All / Working toggle, counts, and the table.

    Parameters
    ----------
    ctx : MonitorContext
        Formats and strategy names.

    Signals
    -------
    order_selected(object)
        The current row's ``OrderView`` (or ``None`` when nothing is selected).
    """

    #: Engine event types :meth:`on_events` reads (the workspace hands it only these).
    EVENT_TYPES: ClassVar[tuple[type[Event], ...]] = (OrderChanged,)

    order_selected = Signal(object)

    def __init__(self, ctx: MonitorContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        columns = order_columns(ctx)
        #: Orders to rows and back, for both models (one encoding per order event).
        self.codec = OrderCodec(StringPool(), StringPool())
        self.all_model: OrdersModel = ColumnarTableModel(
            columns, self.codec, newest_first=True, capacity=BLOTTER_CAPACITY, parent=self
        )
        # "Working" reads its rows from "All" (it keeps its members' keys only).
        self.working_model: WorkingModel = SubsetTableModel(
            columns, self.all_model, newest_first=True, parent=self
        )
        self.codec.models = (self.all_model, self.working_model)
        #: Counts per strategy id, kept as orders change.
        self.counts: dict[int, OrderCounts] = {}
        self.table = DataTableView("ordersTable")
        self.table.setModel(self.working_model)
        self.all_button = QToolButton()
        self.all_button.setText("All")
        self.working_button = QToolButton()
        self.working_button.setText("Working")
        group = QButtonGroup(self)
        for b in (self.working_button, self.all_button):
            b.setCheckable(True)
            b.setAutoRaise(True)
            group.addButton(b)
        self.working_button.setChecked(True)
        self.working_button.setToolTip("Show only orders that can still trade (Ctrl+Shift+W)")
        self.all_button.setToolTip("Show every order of the session (Ctrl+Shift+W)")
        self.all_button.toggled.connect(self._on_mode_toggled)
        self.count_label = QLabel()
        self.count_label.setProperty("state", "muted")
        tools = QHBoxLayout()
        tools.addWidget(self.working_button)
        tools.addWidget(self.all_button)
        tools.addStretch(1)
        tools.addWidget(self.count_label)
        self.panel = TablePanel(
            self.table,
            EmptyState(
                "No orders yet",
                "Every order of every strategy appears here as it is created, sent, "
                "acknowledged, filled, replaced or canceled, newest first.",
                "Send one by hand from the Order ticket (Ctrl+N).",
            ),
            tools,
            model=self.all_model,
        )
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.panel)
        ctx.formats_changed.connect(self._on_formats_changed)
        self.table.selectionModel().currentRowChanged.connect(self._on_current_changed)
        self._update_count()

    @property
    def working_only(self) -> bool:
        """Return whether only working orders are shown."""
        return self.working_button.isChecked()

    def set_working_only(self, working: bool) -> None:
        """Show only working orders (or all)."""
        (self.working_button if working else self.all_button).setChecked(True)

    def toggle_working_only(self) -> None:
        """Switch between all and working orders."""
        self.set_working_only(not self.working_only)

    @property
    def model(self) -> OrdersModel | WorkingModel:
        """Return the model on screen."""
        return self.working_model if self.working_only else self.all_model

    def selected_orders(self) -> list[OrderView]:
        """Return the selected orders, top to bottom."""
        return [self.model.record(r) for r in self.table.selected_rows()]

    def on_events(self, batch: Sequence[EventRecord]) -> None:
        """Apply the ``OrderChanged`` events of a batch."""
        self.apply_orders([r.event.order for r in batch if isinstance(r.event, OrderChanged)])

    def apply_orders(self, orders: Sequence[OrderView]) -> None:
        """Apply new states of orders (oldest first), one model update per table.

        Each order is encoded once into a row; both models take the batch's rows with
        array operations (O(1) per order: a key lookup and a row copy).
        """
        if not orders:
            return
        latest: dict[int, OrderView] = {}
        for o in orders:
            latest[o.order_id] = o
        all_m, working_m = self.all_model, self.working_model
        # Where each order is now, and whether it was filled, looked up in bulk.
        oids = np.fromiter(latest, np.int64, len(latest))
        in_all = all_m.positions(oids)
        was_working = working_m.positions(oids) >= 0
        was_filled = np.zeros(oids.shape[0], bool)
        known = in_all >= 0
        if known.any():
            b = in_all[known]
            was_filled[known] = (all_m.field("leaves_qty_lots")[b] == 0) & (
                all_m.field("cum_qty_lots")[b] > 0
            )
        encode, counts = self.codec.encode, self.counts
        encoded: list[tuple[Any, ...]] = []
        working: list[bool] = []
        for o, a, w, filled_before in zip(
            latest.values(),
            known.tolist(),
            was_working.tolist(),
            was_filled.tolist(),
            strict=True,
        ):
            c = counts.get(o.strategy_id)
            if c is None:
                c = counts[o.strategy_id] = OrderCounts()
            if not a and not w:  # (a working order that left "All" is known)
                c.orders += 1
            encoded.append(encode(o))
            now = is_working(o.status, o.leaves_qty_lots)
            working.append(now)
            c.working += now - w
            c.filled += (o.leaves_qty_lots == 0 and o.cum_qty_lots > 0) - filled_before
        rows = _rows_of(encoded, all_m.dtype)
        now_working = np.array(working, bool)
        all_m.apply_rows(rows)
        working_m.update(oids[now_working], rows[now_working], remove=oids[~now_working])
        self._update_count()

    def load_orders(self, columns: OrderColumns) -> None:
        """Apply many orders' states at once, column-wise (a snapshot, a journal's orders).

        The same as :meth:`apply_orders` with their ``OrderView`` objects, without building them:
        counts, both models and the chains are updated with array operations.
        """
        if not len(columns):
            return
        all_m, working_m, codec = self.all_model, self.working_model, self.codec
        rows = codec.localize(columns)
        ids = rows["order_id"]
        if ids.shape[0] > 1 and not bool((ids[1:] > ids[:-1]).all()):
            # An order listed twice: its last row counts, in the place of its first (as
            # apply_orders does).
            _, first = np.unique(ids, return_index=True)
            _, last = np.unique(ids[::-1], return_index=True)
            rows = rows[(ids.shape[0] - 1 - last)[np.argsort(first)]]
            ids = rows["order_id"]
        status, leaves, cum = rows["status"], rows["leaves_qty_lots"], rows["cum_qty_lots"]
        now_working = ~np.isin(status, _TERMINAL_CODES) & (
            (leaves > 0) | (status == int(OrdStatus.PENDING_NEW))
        )
        b = all_m.positions(ids)
        was_working = working_m.positions(ids) >= 0
        known = b >= 0
        filled_now = (leaves == 0) & (cum > 0)
        filled_before = np.zeros(ids.shape[0], bool)
        if known.any():
            kb = b[known]
            filled_before[known] = (all_m.field("leaves_qty_lots")[kb] == 0) & (
                all_m.field("cum_qty_lots")[kb] > 0
            )
        sids, inverse = np.unique(rows["strategy_id"], return_inverse=True)
        k = sids.shape[0]

        def per_strategy(mask: npt.NDArray[np.bool_]) -> list[int]:
            counts: list[int] = np.bincount(inverse, mask, minlength=k).astype(np.int64).tolist()
            return counts

        new = per_strategy(~known & ~was_working)
        started = per_strategy(now_working & ~was_working)
        stopped = per_strategy(~now_working & was_working)
        filled = per_strategy(filled_now & ~filled_before)
        unfilled = per_strategy(filled_before & ~filled_now)
        for j, sid in enumerate(sids.tolist()):
            c = self.counts.get(sid)
            if c is None:
                c = self.counts[sid] = OrderCounts()
            c.orders += new[j]
            c.working += started[j] - stopped[j]
            c.filled += filled[j] - unfilled[j]
        codec.take_chains(ids, columns.chains)
        all_m.apply_rows(rows)
        working_m.update(ids[now_working], rows[now_working], remove=ids[~now_working])
        self._update_count()

    def _update_count(self) -> None:
        self.count_label.setText(
            f"{len(self.working_model):,} working · {len(self.all_model):,} orders"
        )

    def _on_mode_toggled(self) -> None:
        self.table.setModel(self.model)
        self.table.selectionModel().currentRowChanged.connect(self._on_current_changed)
        self.order_selected.emit(None)

    def _on_current_changed(self) -> None:
        index = self.table.currentIndex()
        self.order_selected.emit(self.model.record(index.row()) if index.isValid() else None)

    def _on_formats_changed(self) -> None:
        self.all_model.refresh()
        self.working_model.refresh()
