# SPDX-License-Identifier: MIT
"""Risk limits: what the engine enforces now, per scope, with what is used of them.

One row per scope — engine-wide, manual orders, each strategy with limits of its own, each
instrument with a price band of its own — and one column per limit. The values are the
engine's, from ``RiskLimitsChanged`` (published at start, on every change and in the snapshot),
never the configuration file's. Where it is cheap the cell also says how much is used: working
orders against "Max open orders" and the largest position against "Max position", both
counted from the order and position events this view sees. The line under the table says who
changed which limits last.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from engine.events import (
    Event,
    EventRecord,
    OrderChanged,
    PositionChanged,
    RiskLimitsChanged,
    StrategyStatusChanged,
)
from widgets.empty_state import EmptyState
from widgets.fmt import fmt_ts_utc
from widgets.monitor.formats import is_working
from widgets.tables import Column, DataTableView, KeyedTableModel
from widgets.tables.panel import TablePanel

#: A scope's key: (engine id, strategy id or None, symbol or "").
ScopeKey = tuple[str, int | None, str]


@dataclass(frozen=True, slots=True)
class LimitsRow:
    """One scope's limits and what is used of them."""

    key: ScopeKey
    scope: str
    limits: RiskLimitsChanged
    open_orders: int | None  # working orders in the scope (None: not counted for it)
    position: tuple[int, str] | None  # largest |position| in lots and its symbol


def _num(v: int | float | None, unit: str = "") -> str:
    if v is None:
        return "off"
    text = f"{v:,.2f}" if isinstance(v, float) and not v.is_integer() else f"{v:,.0f}"
    return f"{text}{unit}"


def _band(r: LimitsRow) -> str:
    lim = r.limits
    parts = []
    if lim.price_band_pct is not None:
        parts.append(f"±{lim.price_band_pct:g}%")
    if lim.price_band_ticks is not None:
        parts.append(f"±{lim.price_band_ticks:,} ticks")
    return ", ".join(parts) or "off"


def _used(used: int | None, limit: int | None) -> str:
    if limit is None:
        return "off"
    return f"{limit:,}" if used is None else f"{used:,} / {limit:,}"


def _use_tone(used: int | None, limit: int | None) -> str:
    if limit is None:
        return "muted"
    if used is None or limit == 0:
        return ""
    if used >= limit:
        return "bad"
    return "warn" if used >= 0.8 * limit else ""


def _off_tone(v: object) -> str:
    return "muted" if v is None else ""


def limits_columns() -> tuple[Column[LimitsRow], ...]:
    """Return the columns of the limits table."""

    def pos(r: LimitsRow) -> int | None:
        return r.position[0] if r.position is not None else None

    def pos_tip(r: LimitsRow) -> str:
        if r.position is None or not r.position[0]:
            return "No open position in this scope"
        return f"Largest position: {r.position[0]:,} lots in {r.position[1]}"

    def band_tip(r: LimitsRow) -> str:
        if r.key[1]:
            return f"{r.key[1]}'s own band: it replaces the engine-wide band for {r.key[1]}"
        return (
            "Farthest a limit price may be from the last trade (else the mid); a manual order "
            "outside it needs a confirmation, a strategy's is refused"
        )

    return (
        Column("scope", "Scope", lambda r: r.scope, width=182,
               tooltip=lambda r: f"changed by {r.limits.actor or 'the engine'}: "
                                 f"{r.limits.change}"),
        Column("max_order_qty", "Max order qty", lambda r: _num(r.limits.max_order_qty_lots),
               numeric=True, tone=lambda r: _off_tone(r.limits.max_order_qty_lots), width=112,
               tooltip=lambda r: "Largest quantity of one order, lots"),
        Column("max_notional", "Max notional", lambda r: _num(r.limits.max_order_notional),
               numeric=True, tone=lambda r: _off_tone(r.limits.max_order_notional), width=100,
               tooltip=lambda r: "Largest price × quantity × multiplier of one order"),
        Column("max_position", "Position / max",
               lambda r: _used(pos(r), r.limits.max_position_lots), numeric=True,
               tone=lambda r: _use_tone(pos(r), r.limits.max_position_lots), width=115,
               tooltip=pos_tip),
        Column("price_band", "Price band", _band, numeric=True,
               tone=lambda r: "" if _band(r) != "off" else "muted", width=98,
               tooltip=band_tip),
        Column("open_orders", "Open / max", lambda r: _used(r.open_orders,
                                                            r.limits.max_open_orders),
               numeric=True, tone=lambda r: _use_tone(r.open_orders, r.limits.max_open_orders),
               width=95, tooltip=lambda r: f"Working orders now: {r.open_orders or 0:,}; most "
                                            "at once: the limit"),
        Column("max_rate", "Orders/s", lambda r: _num(r.limits.max_orders_per_second),
               numeric=True, tone=lambda r: _off_tone(r.limits.max_orders_per_second),
               width=72, tooltip=lambda r: "Most new and replace requests in one second"),
    )  # fmt: skip


def _row_key(r: LimitsRow) -> ScopeKey:
    return r.key


def scope_text(key: ScopeKey, name: Callable[[int], str], *, engine: bool = False) -> str:
    """Return a scope's display name: "Engine-wide", "Manual orders", "mm (20170101)", "CLF7".

    ``engine`` prefixes the engine's id (several engines attached: "ny4-2: Engine-wide").
    """
    eid, sid, sym = key
    if sym:
        text = f"{sym} (instrument)"
    elif sid is None:
        text = "Engine-wide"
    elif sid == 0:
        text = "Manual orders"
    else:
        text = f"{name(sid)} ({sid})"
    return f"{eid}: {text}" if engine and eid else text


class RiskLimitsView(QWidget):
    """The engine's risk limits per scope, with current usage, and the last change.

    Parameters
    ----------
    strategy_name : Callable[[int], str] | None
        Display name of a strategy id (default: the names this view learns from the stream).
    """

    #: Engine event types :meth:`on_events` reads (the workspace hands it only these).
    EVENT_TYPES: ClassVar[tuple[type[Event], ...]] = (
        RiskLimitsChanged,
        OrderChanged,
        PositionChanged,
        StrategyStatusChanged,
    )

    def __init__(
        self, strategy_name: Callable[[int], str] | None = None, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("riskLimitsView")
        self._names: dict[int, str] = {}
        self._name = strategy_name or (lambda sid: self._names.get(sid, f"#{sid}"))
        #: The engine's limits per scope, as last published.
        self.limits: dict[ScopeKey, RiskLimitsChanged] = {}
        self._working: dict[int, int] = {}  # order id -> strategy id, working orders only
        self._positions: dict[tuple[int, str], int] = {}  # (strategy, symbol) -> lots
        self.model: KeyedTableModel[ScopeKey, LimitsRow] = KeyedTableModel(
            limits_columns(), _row_key, bold=lambda r: r.key[1:] == (None, ""), parent=self
        )
        self.table = DataTableView("riskLimitsTable")
        self.table.setModel(self.model)
        self.table.horizontalHeader().setStretchLastSection(False)
        self.panel = TablePanel(
            self.table,
            EmptyState(
                "No risk limits known yet",
                "The limits the engine enforces appear here when it starts (engine-wide, per "
                "strategy and per instrument), and every change made to them.",
            ),
        )
        self.last_change = QLabel()
        self.last_change.setObjectName("riskLastChange")
        self.last_change.setWordWrap(True)
        self.last_change.setProperty("state", "muted")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 4)
        layout.setSpacing(4)
        layout.addWidget(self.panel, 1)
        row = QHBoxLayout()
        row.setContentsMargins(6, 0, 6, 0)
        row.addWidget(self.last_change, 1)
        layout.addLayout(row)

    # ------------------------------------------------------------------ events
    def on_events(self, batch: Sequence[EventRecord]) -> None:
        """Apply limits, working orders, positions and strategy names of a batch."""
        changed = False
        last: RiskLimitsChanged | None = None
        for r in batch:
            ev = r.event
            if isinstance(ev, RiskLimitsChanged):
                self.limits[(ev.engine_id, ev.strategy_id, ev.symbol)] = ev
                if ev.change not in ("snapshot", "start"):
                    last = ev
                changed = True
            elif isinstance(ev, OrderChanged):
                o = ev.order
                was = o.order_id in self._working
                if is_working(o.status, o.leaves_qty_lots):
                    self._working[o.order_id] = o.strategy_id
                else:
                    self._working.pop(o.order_id, None)
                changed |= was != (o.order_id in self._working)
            elif isinstance(ev, PositionChanged):
                key = (ev.strategy_id, ev.symbol)
                if self._positions.get(key) != ev.qty_lots:
                    self._positions[key] = ev.qty_lots
                    changed = True
            elif isinstance(ev, StrategyStatusChanged) and self._names.get(ev.strategy_id) != (
                ev.name
            ):
                self._names[ev.strategy_id] = ev.name
                changed = True
        if last is not None:
            who = f" by {last.actor}" if last.actor else ""
            scope = scope_text(
                (last.engine_id, last.strategy_id, last.symbol),
                self._name,
                engine=self._several_engines(),
            )
            self.last_change.setText(
                f"Last change {fmt_ts_utc(last.ts_event)}{who} — {scope}: {last.change}"
            )
        if changed and self.limits:
            self.model.apply(self.rows())

    # ------------------------------------------------------------------ rows
    def rows(self) -> list[LimitsRow]:
        """Return one row per scope: engine-wide, manual, strategies, instruments."""

        def order(key: ScopeKey) -> tuple[str, int, int, str]:
            eid, sid, sym = key
            if sym:
                return (eid, 2, 0, sym)
            return (eid, 0, 0, "") if sid is None else (eid, 1, sid, "")

        several = self._several_engines()
        return [self._row(key, several) for key in sorted(self.limits, key=order)]

    def _several_engines(self) -> bool:
        return len({k[0] for k in self.limits}) > 1

    def _row(self, key: ScopeKey, several: bool) -> LimitsRow:
        _eid, sid, sym = key
        scope = scope_text(key, self._name, engine=several)
        if sym:  # an instrument's own band: nothing counted
            return LimitsRow(key, scope, self.limits[key], None, None)
        ids = self._working.values()
        n = sum(1 for s in ids if s == sid) if sid is not None else len(self._working)
        if sid is None:
            net: dict[str, int] = {}
            for (_s, symbol), qty in self._positions.items():
                net[symbol] = net.get(symbol, 0) + qty
        else:
            net = {symbol: q for (s, symbol), q in self._positions.items() if s == sid}
        worst = max(net.items(), key=lambda kv: abs(kv[1]), default=None)
        position = (abs(worst[1]), worst[0]) if worst is not None else (0, "")
        return LimitsRow(key, scope, self.limits[key], n, position)

    def cell(self, scope: tuple[int | None, str] | ScopeKey, column: str) -> str:
        """Return the text of one cell (tests, screenshots).

        A ``(strategy id, symbol)`` scope is looked up in the (only) engine.
        """
        key = scope if len(scope) == 3 else next(k for k in self.limits if k[1:] == scope)
        return self.model.cell_text(self.model.row_of(key), column)
