# SPDX-License-Identifier: MIT
"""Positions and P&L per strategy and instrument, per instrument or per strategy, with totals.

The engine publishes ``PositionChanged`` for one (strategy, instrument) after a fill or a new
mark; this view keeps the latest of each and groups them. P&L is in the instrument's currency;
a total over several currencies is only shown when they agree.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QWidget

from engine.events import Event, EventRecord, PositionChanged
from widgets.empty_state import EmptyState
from widgets.monitor.context import MonitorContext
from widgets.monitor.formats import fmt_money, money_tone
from widgets.tables import Column, DataTableView, KeyedTableModel
from widgets.tables.panel import TablePanel

#: Grouping modes in menu order: (key, label).
GROUPINGS = (
    ("strategy_symbol", "Strategy × instrument"),
    ("symbol", "Instrument"),
    ("strategy", "Strategy"),
)

TOTAL_KEY = ("", "", "total")


@dataclass(frozen=True, slots=True)
class PositionRow:
    """One line of the positions table (a position, a group or the totals)."""

    key: tuple[str, str, str]
    strategy: str
    symbol: str
    qty_lots: int | None  # None: not meaningful (several instruments)
    avg_px_ticks: float
    mark_px_ticks: int
    realized: float
    unrealized: float
    fees: float
    currency: str
    is_total: bool = False

    @property
    def total(self) -> float:
        """Return realized + unrealized P&L (before fees)."""
        return self.realized + self.unrealized


def position_columns(ctx: MonitorContext) -> tuple[Column[PositionRow], ...]:
    """Return the positions columns."""
    f = ctx.formats

    def qty(r: PositionRow) -> str:
        return "" if r.qty_lots is None else f.qty(r.symbol, r.qty_lots)

    def qty_tone(r: PositionRow) -> str:
        if not r.qty_lots:
            return "muted"
        return "bid" if r.qty_lots > 0 else "ask"

    def avg(r: PositionRow) -> str:
        return f.avg_price(r.symbol, r.avg_px_ticks) if r.qty_lots else ""

    def mark(r: PositionRow) -> str:
        return f.price(r.symbol, r.mark_px_ticks) if r.mark_px_ticks and r.symbol else ""

    return (
        Column("strategy", "Strategy", lambda r: r.strategy, width=170),
        Column("symbol", "Instrument", lambda r: r.symbol, width=88),
        Column("position", "Position", qty, numeric=True, tone=qty_tone, width=75),
        Column("avg_price", "Avg price", avg, numeric=True, width=105),
        Column("mark", "Mark", mark, numeric=True, width=85),
        Column("total", "Total P&L", lambda r: fmt_money(r.total), numeric=True,
               tone=lambda r: money_tone(r.total), width=100,
               tooltip=lambda r: "Realized + unrealized, before fees"),
        Column("realized", "Realized", lambda r: fmt_money(r.realized), numeric=True,
               tone=lambda r: money_tone(r.realized), width=100),
        Column("unrealized", "Unrealized", lambda r: fmt_money(r.unrealized), numeric=True,
               tone=lambda r: money_tone(r.unrealized), width=100),
        Column("fees", "Fees", lambda r: fmt_money(r.fees), numeric=True, width=65),
        Column("currency", "Ccy", lambda r: r.currency, width=45),
    )  # fmt: skip


def _row_key(r: PositionRow) -> tuple[str, str, str]:
    return r.key


class PositionsView(QWidget):
    """Positions & P&L with a grouping selector and a totals row at the bottom."""

    #: Engine event types :meth:`on_events` reads (the workspace hands it only these).
    EVENT_TYPES: ClassVar[tuple[type[Event], ...]] = (PositionChanged,)

    def __init__(self, ctx: MonitorContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        #: Latest position per (strategy id, symbol).
        self.positions: dict[tuple[int, str], PositionChanged] = {}
        self.model: KeyedTableModel[tuple[str, str, str], PositionRow] = KeyedTableModel(
            position_columns(ctx), _row_key, bold=lambda r: r.is_total, parent=self
        )
        self.table = DataTableView("positionsTable")
        self.table.setModel(self.model)
        self.grouping = QComboBox()
        for key, label in GROUPINGS:
            self.grouping.addItem(label, key)
        self.grouping.setToolTip("Group positions by strategy and instrument, or either")
        self.grouping.currentIndexChanged.connect(self._rebuild)
        tools = QHBoxLayout()
        tools.addWidget(QLabel("Group by"))
        tools.addWidget(self.grouping)
        tools.addStretch(1)
        self.panel = TablePanel(
            self.table,
            EmptyState(
                "No positions yet",
                "Positions and P&L per strategy and instrument appear after the first fill, "
                "marked to the live price.",
            ),
            tools,
        )
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.panel)
        ctx.formats_changed.connect(self._rebuild)

    def set_grouping(self, key: str) -> None:
        """Group by ``strategy_symbol``, ``symbol`` or ``strategy``."""
        self.grouping.setCurrentIndex(self.grouping.findData(key))

    def on_events(self, batch: Sequence[EventRecord]) -> None:
        """Apply the ``PositionChanged`` events of a batch."""
        changed = False
        for r in batch:
            ev = r.event
            if isinstance(ev, PositionChanged):
                self.positions[(ev.strategy_id, ev.symbol)] = ev
                changed = True
        if changed:
            self._update()

    def strategy_pnl(self, strategy_id: int) -> tuple[float, float]:
        """Return (realized, unrealized) P&L of one strategy over its instruments."""
        realized = unrealized = 0.0
        for (sid, _), p in self.positions.items():
            if sid == strategy_id:
                realized += p.realized_pnl
                unrealized += p.unrealized_pnl
        return realized, unrealized

    def rows(self) -> list[PositionRow]:
        """Return the rows for the current grouping, totals last."""
        mode = self.grouping.currentData()
        items = sorted(
            self.positions.values(),
            key=lambda p: (self.ctx.strategy_name(p.strategy_id), p.symbol),
        )
        if mode == "strategy_symbol":
            # One mark per instrument: a flat leg's own mark is only as new as its last trade.
            latest: dict[str, PositionChanged] = {}
            for p in items:
                if p.mark_px_ticks and (
                    p.symbol not in latest or p.ts_event > latest[p.symbol].ts_event
                ):
                    latest[p.symbol] = p
            rows = [self._single(p, latest.get(p.symbol)) for p in items]
        elif mode == "symbol":
            rows = [
                self._group(("", sym, "symbol"), "", sym, [p for p in items if p.symbol == sym])
                for sym in sorted({p.symbol for p in items})
            ]
        else:
            ids = sorted({p.strategy_id for p in items}, key=self.ctx.strategy_name)
            rows = [
                self._group(
                    (str(sid), "", "strategy"),
                    self.ctx.strategy_label(sid),
                    "",
                    [p for p in items if p.strategy_id == sid],
                )
                for sid in ids
            ]
        total = self._group(TOTAL_KEY, "Total", "", items)
        return [*rows, replace(total, is_total=True)]

    def _single(self, p: PositionChanged, newest: PositionChanged | None = None) -> PositionRow:
        fmt = self.ctx.formats.get(p.symbol)
        # A flat leg shows the instrument's newest mark; an open one the mark its P&L is at.
        mark = newest.mark_px_ticks if newest is not None and p.qty_lots == 0 else p.mark_px_ticks
        return PositionRow(
            key=(str(p.strategy_id), p.symbol, "position"),
            strategy=self.ctx.strategy_label(p.strategy_id),
            symbol=p.symbol,
            qty_lots=p.qty_lots,
            avg_px_ticks=p.avg_px_ticks,
            mark_px_ticks=mark,
            realized=p.realized_pnl,
            unrealized=p.unrealized_pnl,
            fees=p.fees,
            currency=fmt.currency if fmt else "",
        )

    def _group(
        self, key: tuple[str, str, str], strategy: str, symbol: str, ps: Iterable[PositionChanged]
    ) -> PositionRow:
        ps = list(ps)
        qty: int | None = None
        avg, mark = 0.0, 0
        if symbol:
            qty = sum(p.qty_lots for p in ps)
            # The net average is defined when every leg points the same way as the net.
            same_way = [p for p in ps if p.qty_lots and (p.qty_lots > 0) == (qty > 0)]
            if qty and len(same_way) == len([p for p in ps if p.qty_lots]):
                avg = sum(p.avg_px_ticks * p.qty_lots for p in ps) / qty
            mark = max((p for p in ps), key=lambda p: p.ts_event).mark_px_ticks if ps else 0
        currencies = {f.currency for p in ps if (f := self.ctx.formats.get(p.symbol)) is not None}
        return PositionRow(
            key=key,
            strategy=strategy,
            symbol=symbol,
            qty_lots=qty,
            avg_px_ticks=avg,
            mark_px_ticks=mark,
            realized=sum(p.realized_pnl for p in ps),
            unrealized=sum(p.unrealized_pnl for p in ps),
            fees=sum(p.fees for p in ps),
            currency=currencies.pop() if len(currencies) == 1 else "",
        )

    def _update(self) -> None:
        rows = self.rows()
        known = all(r.key in self.model for r in rows) and len(rows) == len(self.model)
        if known:
            self.model.apply(rows)  # same rows, new values: updated in place
        else:
            self.model.clear()
            self.model.apply(rows)

    def _rebuild(self) -> None:
        self.model.clear()
        if self.positions:
            self.model.apply(self.rows())
