# SPDX-License-Identifier: MIT
"""The Executions list: every fill, newest first, keyed by ExecID <17>."""

from collections.abc import Sequence
from typing import ClassVar

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QWidget

from engine.events import Event, EventRecord, OrderFilled
from widgets.empty_state import EmptyState
from widgets.monitor.context import MonitorContext
from widgets.monitor.formats import SIDE_TEXT, SIDE_TONE, fmt_time
from widgets.tables import Column, DataTableView, KeyedTableModel
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


def _exec_key(e: OrderFilled) -> tuple[int, str]:
    return (e.order_id, e.exec_id)


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
        self.model: KeyedTableModel[tuple[int, str], OrderFilled] = KeyedTableModel(
            execution_columns(ctx),
            _exec_key,
            newest_first=True,
            capacity=EXECUTIONS_CAPACITY,
            parent=self,
        )
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
        """Append the ``OrderFilled`` events of a batch."""
        fills = [r.event for r in batch if isinstance(r.event, OrderFilled)]
        if fills:
            self.fills += len(fills)
            self.model.apply(fills)
            self._update_count()

    def _update_count(self) -> None:
        self.count_label.setText(f"{self.fills:,} fills")
