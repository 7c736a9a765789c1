# SPDX-License-Identifier: MIT
"""The Orders blotter: every order (or only the working ones), one row per order, live.

Rows are keyed by ``order_id`` (stable across cancel/replace chains), so an ``OrderChanged``
updates its row in O(1). "All" and "Working" are two models over the same columns: the working
one drops an order when it can no longer trade, without a filter pass over a million rows.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QButtonGroup, QHBoxLayout, QLabel, QToolButton, QWidget

from engine.enums import OrdType
from engine.events import Event, EventRecord, OrderChanged, OrderView
from widgets.empty_state import EmptyState
from widgets.monitor.context import MonitorContext
from widgets.monitor.formats import (
    ORD_TYPE_TEXT,
    SIDE_TEXT,
    SIDE_TONE,
    STATUS_TEXT,
    STATUS_TONE,
    TIF_TEXT,
    fmt_latency,
    fmt_time,
    is_working,
)
from widgets.tables import Column, DataTableView, KeyedTableModel
from widgets.tables.panel import TablePanel

OrdersModel = KeyedTableModel[int, OrderView]

#: Orders the "All" blotter keeps (memory stays bounded: about 1.5 KB each); beyond that the
#: oldest leave it (they stay in the engine's journal). Working orders stay in "Working".
BLOTTER_CAPACITY = 1_000_000


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


def _order_key(o: OrderView) -> int:
    return o.order_id


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
        self.all_model: OrdersModel = KeyedTableModel(
            columns, _order_key, newest_first=True, capacity=BLOTTER_CAPACITY, parent=self
        )
        self.working_model: OrdersModel = KeyedTableModel(
            columns, _order_key, newest_first=True, parent=self
        )
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
    def model(self) -> OrdersModel:
        """Return the model on screen."""
        return self.working_model if self.working_only else self.all_model

    def selected_orders(self) -> list[OrderView]:
        """Return the selected orders, top to bottom."""
        return [self.model.record(r) for r in self.table.selected_rows()]

    def on_events(self, batch: Sequence[EventRecord]) -> None:
        """Apply the ``OrderChanged`` events of a batch."""
        self.apply_orders([r.event.order for r in batch if isinstance(r.event, OrderChanged)])

    def apply_orders(self, orders: Sequence[OrderView]) -> None:
        """Apply new states of orders (oldest first), one model update per table."""
        if not orders:
            return
        working: list[OrderView] = []
        done: list[int] = []
        latest: dict[int, OrderView] = {}
        for o in orders:
            latest[o.order_id] = o
        known_all, known_working = self.all_model, self.working_model
        for oid, o in latest.items():
            c = self.counts.get(o.strategy_id)
            if c is None:
                c = self.counts[o.strategy_id] = OrderCounts()
            was_working = oid in known_working
            prev = known_all.get(oid)
            if prev is None and not was_working:  # (a working order that left "All" is known)
                c.orders += 1
            now_working = is_working(o.status, o.leaves_qty_lots)
            if now_working:
                working.append(o)
                c.working += not was_working
            else:
                done.append(oid)
                c.working -= was_working
            filled_now = o.leaves_qty_lots == 0 and o.cum_qty_lots > 0
            filled_before = prev is not None and prev.leaves_qty_lots == 0 and prev.cum_qty_lots > 0
            c.filled += filled_now - filled_before
        self.all_model.apply(latest.values())
        self.working_model.apply(working, remove=done)
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
