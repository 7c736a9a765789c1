# SPDX-License-Identifier: MIT
"""The trading desk: order routing, risk, positions and P&L, strategies — one engine component.

:class:`TradingDesk` assembles the order router (one order manager per instrument), the
position book, the strategy runner and the market data it marks positions with, answers the
trading commands (orders, cancel-all, flatten, kill switch, strategy control) and describes its
state as events for new clients.

One class of about 800 lines, kept whole: its parts (restart recovery, command handling, the
periodic marks and depth) all read and write the same router, position book, strategy slots and
instrument index; split into classes they would reach into each other's state.

Why one long module: the parts themselves live in their packages (``engine.oms``,
``engine.portfolio``, ``engine.strategy``); what is here is the one component that wires them,
and its restart recovery, command handling and position events all work on the same router,
position book and runner, so they stay one class.
"""

import asyncio
import contextlib
from collections.abc import Callable
from decimal import Decimal

import numpy as np

from engine.bus import MessageBus
from engine.clock import Clock
from engine.commands import (
    AddStrategy,
    CancelAll,
    CancelOrder,
    Command,
    CommandAck,
    CommandError,
    CommandResult,
    ControlStrategy,
    Flatten,
    ReplaceOrder,
    SetKillSwitch,
    SetRiskLimits,
    SetStrategyParameters,
    SubmitOrder,
)
from engine.core import Engine
from engine.enums import AlertLevel, KillLevel, OrdStatus, OrdType, StrategyState
from engine.events import (
    ALERTED,
    Alert,
    BookUpdated,
    DepthChanged,
    Event,
    InstrumentAdded,
    KillSwitchChanged,
    OrderChanged,
    OrderFilled,
    OrderView,
    OwnQuote,
    PositionChanged,
    RiskLimitsChanged,
    StrategyAdded,
    TradeReported,
    VenueLinkChanged,
)
from engine.fastlog import get_log
from engine.instruments import Instrument
from engine.journal import RecoveredState
from engine.marketdata import MarketData
from engine.oms.manager import ANSWER_TIMEOUT_S
from engine.oms.risk import LIMIT_NAMES, RiskLimits
from engine.oms.router import OrderRouter
from engine.oms.venue import Venue
from engine.portfolio.positions import Position, PositionBook
from engine.strategy.base import BookView, Strategy
from engine.strategy.loader import StrategyLoadError, build_strategy
from engine.strategy.params import ParameterError
from engine.strategy.runner import LiveContext, StrategyRunner
from engine.types import FILL_DTYPE

log = get_log(__name__)

#: Levels per side in depth events, and how often they are published per instrument.
DEPTH_LEVELS = 10
DEPTH_INTERVAL_S = 0.1

#: How long before the journal's last event an order found only in a venue's store may have
#: been sent (the journal writes every few ms; the rest is margin), ns.
UNJOURNALED_WINDOW_NS = 5_000_000_000

#: Strategy slots the position book starts with (slot 0 holds manual orders); it grows on
#: demand, so an engine runs any number of strategies.
INITIAL_STRATEGY_SLOTS = 64
#: Done orders per instrument a new client's snapshot shows (the newest; the journal has all).
SNAPSHOT_DONE_ORDERS = 2_000
#: How often positions are re-marked and strategy timers checked, seconds.
MARK_INTERVAL_S = 0.25
TIMER_INTERVAL_S = 0.01
#: A running strategy's symbol without market data this long after its start: an alert, s.
NO_DATA_ALERT_S = 5.0
#: How often requests are checked for an answer (at most; a short timeout checks more often), s.
ANSWER_CHECK_S = 1.0


class TradingDesk:
    """Orders, risk, positions and strategies of one engine.

    Parameters
    ----------
    bus : MessageBus
        The engine bus.
    clock : Clock
        The engine clock.
    limits : RiskLimits | None
        Engine-wide risk limits.
    """

    name = "trading"

    def __init__(self, bus: MessageBus, clock: Clock, limits: RiskLimits | None = None) -> None:
        self.bus = bus
        self.clock = clock
        self.router = OrderRouter(bus, clock, limits)
        #: How long a new order, cancel or replace may go unanswered before an alert and a
        #: status request, seconds (``[engine] answer_timeout_ms``; set before the start).
        self.answer_timeout_s = ANSWER_TIMEOUT_S
        self.market: MarketData | None = None
        self.instruments: list[tuple[Instrument, str]] = []
        self.runner = StrategyRunner(bus, clock, LiveContext(self.router, clock, self._book))
        self.positions: PositionBook | None = None
        self._slot: dict[int, int] = {0: 0}
        self._instrument_index: dict[str, int] = {}
        self._marked: dict[tuple[int, int], tuple[int, int]] = {}  # (slot, ins) -> (qty, mark)
        self._tasks: list[asyncio.Task[None]] = []
        self._autostart: list[int] = []
        self._start_alerts: list[str] = []  # found while restoring, raised at start
        self._recovered: RecoveredState | None = None
        self._own_px: dict[int, int] = {}  # order id -> price its queue position is tracked at
        self._depth_dirty: set[str] = set()
        self._engine_id = ""  # the engine's id, known at start (named in RiskLimitsChanged)
        self._published: set[str] = set()  # symbols market data arrived for
        self._running_since: dict[int, int] = {}  # strategy -> first seen running (monotonic)
        self._no_data_told: set[tuple[int, str]] = set()
        bus.subscribe(OrderFilled, self._on_fill)
        bus.subscribe(TradeReported, self._on_trade)
        bus.subscribe(BookUpdated, self._on_book)
        bus.subscribe(OrderChanged, self._on_order)
        bus.subscribe(VenueLinkChanged, self._on_link)

    # ------------------------------------------------------------------ set-up
    def add_instrument(self, instrument: Instrument, venue: Venue) -> None:
        """Trade ``instrument`` on ``venue`` (before the engine starts)."""
        if self.positions is not None:
            raise RuntimeError("instruments must be added before the trading desk starts")
        manager = self.router.add_instrument(instrument, venue)
        self._instrument_index[instrument.symbol] = len(self.instruments)
        self.instruments.append((instrument, venue.name))
        venue.route(instrument, manager)

    def set_market_data(self, market: MarketData) -> None:
        """Mark positions and feed strategies from ``market``."""
        self.market = market
        self.router.reference_fallback = market.reference_px  # before the first trade: the mid

    def add_strategy(self, strategy: Strategy, *, autostart: bool = False) -> None:
        """Add a strategy (stopped; started with the engine when ``autostart``)."""
        self.runner.add(strategy)
        self._slot[strategy.strategy_id] = len(self._slot)
        if self.positions is not None:  # added to a running engine
            self.positions.grow(len(self._slot))
        if autostart:
            self._autostart.append(strategy.strategy_id)

    def restore(self, state: RecoveredState) -> int:
        """Rebuild orders (now) and positions (at start) from a replayed journal.

        Returns the number of orders restored. Call after the instruments were added and
        before the engine starts; :meth:`reconcile` then asks the venue about working orders.
        """
        if self.positions is not None:
            raise RuntimeError("restore before the trading desk starts")
        self._recovered = state
        restored = 0
        # The fills of the orders restored (a day's journal has far more fills than those).
        orders = state.orders
        fills_of: dict[int, list[OrderFilled]] = {}
        for fill in state.fills:
            if fill.order_id in orders:
                fills_of.setdefault(fill.order_id, []).append(fill)
        for view in state.orders.values():
            manager = self.router.managers.get(view.symbol)
            if manager is None:
                log.warning(
                    "journal order %d on %s: instrument no longer traded",
                    view.order_id,
                    view.symbol,
                )
                continue
            manager.restore(view, fills_of.get(view.order_id, ()))
            restored += 1
        last = max(state.last_order_id, max(state.orders, default=0))
        if last:
            self.router.continue_order_ids_after(last)
        if state.kill_switch is not None:
            self.router.risk.kill_level = state.kill_switch.level
        self._readd_strategies(state)
        log.info(
            "restored %d orders and %d fills from the journal", restored, len(state.fill_columns)
        )
        return restored

    def _readd_strategies(self, state: RecoveredState) -> None:
        """Load again the strategies added to the running engine before the restart."""
        for ev in state.added_strategies:
            if ev.strategy_id in self._slot:  # configured now (or already back)
                continue
            try:
                if any(s not in self.router.managers for s in ev.symbols):
                    raise ValueError(f"symbols {', '.join(ev.symbols)}: not all traded here")
                strategy = build_strategy(ev.class_path, ev.strategy_id, ev.symbols, ev.parameters)
            except (StrategyLoadError, ValueError) as e:
                text = (
                    f"strategy {ev.name} ({ev.strategy_id}), added before the restart, "
                    f"was not loaded again: {e}"
                )
                log.error("%s", text)
                self._start_alerts.append(text)  # raised once the engine runs
                continue
            self.add_strategy(strategy, autostart=ev.autostart)
            self.bus.publish(ev)  # journaled again: the next restart finds it in this file too
            log.info(
                "strategy %s (%d) loaded again from %s (added before the restart)",
                strategy.name,
                strategy.strategy_id,
                ev.class_path,
            )

    def _restore_parameters(self, state: RecoveredState) -> None:
        """Set again the parameters changed before the restart, unless the config changed.

        As for risk limits: a strategy whose configured parameters differ from those the
        journal's run added it with keeps the configuration's (a warning says so).
        """
        for sid, (added, last) in state.strategy_parameters.items():
            strategy = self.runner.strategies.get(sid)
            if strategy is None or last is None:
                continue
            now = strategy.parameter_values()
            if now != added:
                log.warning(
                    "strategy %s (%d): its configured parameters changed since the "
                    "journal's run; the configuration's apply",
                    strategy.name,
                    sid,
                )
                continue
            try:
                changed = self.runner.set_parameters(sid, dict(last))
            except (ParameterError, ValueError) as e:
                log.warning(
                    "strategy %s (%d): the journal's parameters do not apply (%s)",
                    strategy.name,
                    sid,
                    e,
                )
                continue
            if changed:
                log.info(
                    "strategy %s (%d) parameters restored from the journal: %s",
                    strategy.name,
                    sid,
                    ", ".join(f"{k}={v}" for k, v in changed.items()),
                )

    def adopt_unjournaled(self, state: RecoveredState) -> int:
        """Adopt the orders venues' stores hold beyond the journal ``state`` (see :meth:`adopt`).

        Asks every venue that keeps its sent messages (``FixVenue.unjournaled_orders``) for new
        orders numbered above the journal's last order and sent since shortly before its last
        event.
        """
        after = max(state.last_order_id, max(state.orders, default=0))
        since = state.ts_last - UNJOURNALED_WINDOW_NS
        venues = {id(m.venue): m.venue for m in self.router.managers.values()}
        views: list[OrderView] = []
        for venue in venues.values():
            find = getattr(venue, "unjournaled_orders", None)
            if find is not None:
                views += find(self._knows, after, since)
        return self.adopt(views)

    def _knows(self, client_order_id: str) -> bool:
        return any(m.get(client_order_id) is not None for m in self.router.managers.values())

    def adopt(self, views: list[OrderView]) -> int:
        """Take in orders the journal lacks but a venue's store has (sent just before a crash).

        Call after :meth:`restore`, before the engine starts. Returns how many were taken in.
        """
        if self.positions is not None:
            raise RuntimeError("adopt orders before the trading desk starts")
        taken = 0
        for view in views:
            manager = self.router.managers.get(view.symbol)
            if manager is None or manager.get(view.client_order_id) is not None:
                continue
            manager.restore(view)
            taken += 1
            log.warning(
                "order %d %s (%s %d %s, strategy %d) was sent but not journaled before the "
                "engine stopped; recovered from the FIX store",
                view.order_id,
                view.client_order_id,
                view.side.name,
                view.qty_lots,
                view.symbol,
                view.strategy_id,
            )
        if taken:
            self.router.continue_order_ids_after(
                max(o.order_id for m in self.router.managers.values() for o in m.orders.values())
            )
        return taken

    def check_unanswered(self) -> int:
        """Alert about requests unanswered for :attr:`answer_timeout_s` and ask their status.

        See :meth:`engine.oms.manager.OrderManager.check_unanswered`; returns how many were
        found now.
        """
        timeout_ns = int(self.answer_timeout_s * 1e9)
        return sum(m.check_unanswered(timeout_ns) for m in self.router.managers.values())

    def reconcile(self, venue: str | None = None) -> int:
        """Ask the venues (or ``venue``) for the status of every working order there.

        Returns how many were asked. Done when a venue's link comes back up
        (:class:`VenueLinkChanged`): what happened to the orders meanwhile is told by the venue.
        """
        n = 0
        for manager in self.router.managers.values():
            if venue is not None and manager.venue.name != venue:
                continue
            for order in list(manager.working()):
                manager.request_status(order)
                n += 1
        return n

    def _on_link(self, ev: VenueLinkChanged) -> None:
        if ev.up:
            self.reconcile(ev.venue)

    def _book(self, symbol: str) -> BookView | None:
        return self.market.book(symbol) if self.market is not None else None

    # ------------------------------------------------------------------ Component
    def start(self, engine: Engine) -> None:
        """Create the position book, announce the instruments, start strategies and timers."""
        if not self.instruments:
            raise RuntimeError("the trading desk has no instruments")
        self.positions = PositionBook(
            max(INITIAL_STRATEGY_SLOTS, len(self._slot)), [i for i, _v in self.instruments]
        )
        self._engine_id = engine.engine_id
        for event in self._instrument_events():
            self.bus.publish(event)
        if self._recovered is not None:
            self._replay(self._recovered)
            self._restore_parameters(self._recovered)
        for text in self._start_alerts:
            self.bus.publish(
                Alert(
                    ts_event=self.clock.now_ns(),
                    level=AlertLevel.ERROR,
                    source="strategy",
                    text=text,
                )
            )
        self._start_alerts.clear()
        self._start_limits()
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._every(TIMER_INTERVAL_S, self.runner.on_timer), name="timers"),
            loop.create_task(self._every(MARK_INTERVAL_S, self.mark_positions), name="marks"),
            loop.create_task(self._every(DEPTH_INTERVAL_S, self.publish_depth), name="depth"),
            loop.create_task(
                self._every(min(ANSWER_CHECK_S, self.answer_timeout_s / 4), self.check_unanswered),
                name="unanswered",
            ),
            loop.create_task(self._every(1.0, self.check_market_data), name="no data"),
        ]
        self._start_strategies()

    def _start_strategies(self) -> None:
        # Strategies halted by the kill switch stay halted across a restart until resumed,
        # and none starts by itself while the switch is engaged.
        halted = self._recovered.halted_strategies if self._recovered is not None else frozenset()
        level = self.router.kill_level
        for sid in self.runner.strategies:
            if sid in halted or (level is not KillLevel.OFF and sid in self._autostart):
                at = f" {level.name}" if level is not KillLevel.OFF else ""
                self.runner.halt(sid, f"halted by kill switch{at} (kept after restart)")
            elif sid in self._autostart:
                self.runner.start(sid)

    def _replay(self, state: RecoveredState) -> None:
        assert self.positions is not None
        for manager in self.router.managers.values():
            for order in (*manager.archive.values(), *manager.orders.values()):
                self.bus.publish(
                    OrderChanged(ts_event=order.ts_last, order=order.view(), change="recovered")
                )
        # A day's fills, booked in one pass (journal order) from the recovered columns.
        cols = state.fill_columns
        ins_of = np.array([self._instrument_index.get(s, -1) for s in cols.symbols], np.int64)
        ins = ins_of[cols.symbol]
        traded = ins >= 0
        sids = cols.strategy_id[traded]
        slot_of = {sid: self._slot.get(sid, 0) for sid in np.unique(sids).tolist()}
        rows = np.zeros(int(traded.sum()), FILL_DTYPE)
        rows["ts"] = cols.ts[traded]
        rows["order_id"] = cols.order_id[traded]
        rows["px"] = cols.px[traded]
        rows["qty"] = cols.qty[traded]
        rows["strategy"] = [slot_of[sid] for sid in sids.tolist()]
        rows["instrument"] = ins[traded]
        rows["side"] = cols.side[traded]
        self.positions.apply(rows)
        for (sid, symbol), lots in cols.positions_by_strategy().items():
            if self._instrument_index.get(symbol) is not None:
                self.router.risk.restore_position(sid, symbol, lots)
        pairs = np.unique(np.column_stack([sids, ins[traded]]), axis=0).tolist()
        for slot, i, sid in sorted((slot_of[sid], i, sid) for sid, i in pairs):
            self._publish_position(slot, i, sid)

    async def prepare_stop(self, within_s: float = 1.5) -> None:
        """Stop the strategies and wait (briefly) for the venue to confirm their cancels."""
        self.runner.stop_all()
        deadline = self.clock.monotonic_ns() + int(within_s * 1e9)
        # Polled: cancels are confirmed by reports arriving on this loop; nothing to wait on.
        while self.clock.monotonic_ns() < deadline and any(  # noqa: ASYNC110
            o.strategy_id in self.runner.strategies for o in self.router.working()
        ):
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        """Stop strategies (their orders are canceled) and the timers."""
        self.runner.stop_all()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _every(self, interval_s: float, fn: Callable[[], object]) -> None:
        while True:
            await asyncio.sleep(interval_s)
            try:
                fn()
            except Exception:
                log.exception("periodic %s failed", getattr(fn, "__name__", fn))

    def state_events(self) -> list[Event]:
        """Describe instruments, orders, positions, strategies and the kill switch as events."""
        now = self.clock.now_ns()
        events: list[Event] = list(self._instrument_events())
        events += [
            OrderChanged(ts_event=o.ts_last, order=o.view(), change="snapshot")
            for m in self.router.managers.values()
            for o in (*reversed(m.archived(SNAPSHOT_DONE_ORDERS)), *m.orders.values())
        ]
        events += self._position_events(only_changed=False)
        events += [self.runner.status_event(s, "snapshot") for s in self.runner.strategies.values()]
        events.append(
            KillSwitchChanged(ts_event=now, level=self.router.kill_level, actor="", reason="")
        )
        events += [
            self._limits_event(sid, sym, lim, actor="", change="snapshot")
            for sid, sym, lim in self.router.risk.scopes()
        ]
        return events

    def _instrument_events(self) -> list[InstrumentAdded]:
        now = self.clock.now_ns()
        return [
            InstrumentAdded(
                ts_event=now,
                symbol=i.symbol,
                tick_size=_dec(i.tick_size),
                lot_size=_dec(i.lot_size),
                multiplier=_dec(i.multiplier),
                currency=i.currency,
                venue=venue,
            )
            for i, venue in self.instruments
        ]

    # ------------------------------------------------------------------ depth ladder
    def _on_book(self, event: BookUpdated) -> None:
        self._depth_dirty.add(event.symbol)
        self._published.add(event.symbol)

    def check_market_data(self) -> int:
        """Warn once per running strategy's symbol without market data; return the alerts.

        A symbol nobody published a book for ``NO_DATA_ALERT_S`` after the strategy started
        (a venue that lists it without data, a feed not subscribed) would leave the strategy
        silently idle.
        """
        now = self.clock.monotonic_ns()
        raised = 0
        for sid, s in self.runner.strategies.items():
            if s.state is not StrategyState.RUNNING:
                continue
            since = self._running_since.setdefault(sid, now)
            if now - since < NO_DATA_ALERT_S * 1e9:
                continue
            for sym in s.symbols:
                if sym in self._published or (sid, sym) in self._no_data_told:
                    continue
                self._no_data_told.add((sid, sym))
                seen = ", ".join(sorted(self._published)) or "none"
                text = (
                    f"strategy {s.name} ({sid}) trades {sym}, but nobody publishes market "
                    f"data for it ({NO_DATA_ALERT_S:g} s since it started; data arrives for: "
                    f"{seen})"
                )
                log.warning("%s", text, extra=ALERTED)
                self.bus.publish(
                    Alert(
                        ts_event=self.clock.now_ns(),
                        level=AlertLevel.WARNING,
                        source="market data",
                        text=text,
                    )
                )
                raised += 1
        return raised

    def _on_order(self, event: OrderChanged) -> None:
        view, market = event.order, self.market
        self._depth_dirty.add(view.symbol)
        if market is None or market.queue is None:
            return
        resting = (
            view.status
            in (
                OrdStatus.NEW,
                OrdStatus.PARTIALLY_FILLED,
                OrdStatus.PENDING_CANCEL,
                OrdStatus.PENDING_REPLACE,
            )
            and view.ord_type is OrdType.LIMIT
            and view.ts_acked > 0
        )
        if not resting or view.leaves_qty_lots <= 0:
            if self._own_px.pop(view.order_id, None) is not None:
                market.remove_own(view.order_id)
        elif self._own_px.get(view.order_id) != view.px_ticks:  # new at the venue, or moved
            self._own_px[view.order_id] = view.px_ticks
            market.add_own(
                view.order_id, view.symbol, view.side, view.px_ticks, view.leaves_qty_lots
            )

    def publish_depth(self) -> None:
        """Publish a DepthChanged for every instrument whose book or own orders changed."""
        market = self.market
        if market is None or not self._depth_dirty:
            return
        dirty, self._depth_dirty = self._depth_dirty, set()
        now = self.clock.now_ns()
        for symbol in sorted(dirty):
            view = market.book(symbol)
            if view is None or symbol not in self.router.managers:
                continue
            bids, asks = view.top(DEPTH_LEVELS)
            own = tuple(
                OwnQuote(
                    order_id=o.order_id,
                    side=o.side,
                    px_ticks=o.px_ticks,
                    leaves_qty_lots=o.leaves_qty_lots,
                    status=o.status,
                    pending=o.pending.kind if o.pending else "",
                    ahead_lots=market.ahead(o.order_id),
                )
                for o in self.router.manager(symbol).working()
                if o.ord_type is OrdType.LIMIT
            )
            self.bus.publish(
                DepthChanged(
                    ts_event=now,
                    symbol=symbol,
                    bids=tuple((int(p), int(q)) for p, q in bids),
                    asks=tuple((int(p), int(q)) for p, q in asks),
                    last_trade_px_ticks=market.last_trade_px.get(symbol, 0),
                    own=own,
                )
            )

    # ------------------------------------------------------------------ positions
    def _on_fill(self, fill: OrderFilled) -> None:
        if self.positions is None:
            return
        slot = self._slot.get(fill.strategy_id, 0)
        ins = self._instrument_index[fill.symbol]
        self.positions.on_fill(
            slot, ins, int(fill.side), fill.last_px_ticks, fill.last_qty_lots, ts=fill.ts_event
        )
        self._publish_position(slot, ins, fill.strategy_id)

    def position_of(self, strategy_id: int, symbol: str) -> Position:
        """Return a strategy's position in one instrument (manual orders: strategy 0).

        Raises
        ------
        KeyError
            For a strategy or instrument the desk does not have, or before it started.
        """
        if self.positions is None:
            raise KeyError("the trading desk has not started: no positions yet")
        slot = self._slot[strategy_id]
        ins = self._instrument_index[symbol]
        mark = self._mark(symbol)
        return self.positions.position(slot, ins, float(mark) if mark else None)

    def _on_trade(self, trade: TradeReported) -> None:
        self.router.set_reference_px(trade.symbol, trade.px_ticks)

    def _mark(self, symbol: str) -> int:
        return self.market.reference_px(symbol) or 0 if self.market is not None else 0

    def _publish_position(self, slot: int, ins: int, strategy_id: int) -> None:
        self.bus.publish(self._position_event(slot, ins, strategy_id))

    def _position_event(self, slot: int, ins: int, strategy_id: int) -> PositionChanged:
        assert self.positions is not None
        symbol = self.instruments[ins][0].symbol
        mark = self._mark(symbol)
        p = self.positions.position(slot, ins, float(mark) if mark else None)
        self._marked[(slot, ins)] = (p.qty, mark)
        return PositionChanged(
            ts_event=self.clock.now_ns(),
            strategy_id=strategy_id,
            symbol=symbol,
            qty_lots=p.qty,
            avg_px_ticks=p.avg_px if p.qty else 0.0,
            mark_px_ticks=mark,
            realized_pnl=p.realized,
            unrealized_pnl=p.unrealized,
            fees=p.fees,
        )

    def _position_events(self, *, only_changed: bool) -> list[PositionChanged]:
        if self.positions is None:
            return []
        out = []
        ids = {slot: sid for sid, slot in self._slot.items()}
        for (slot, ins), (qty, mark) in list(self._marked.items()):
            if only_changed and (qty == 0 or self._mark(self.instruments[ins][0].symbol) == mark):
                continue
            out.append(self._position_event(slot, ins, ids[slot]))
        return out

    def mark_positions(self) -> None:
        """Publish positions whose mark moved since they were last published."""
        for event in self._position_events(only_changed=True):
            self.bus.publish(event)

    # ------------------------------------------------------------------ commands
    def handle(self, command: Command) -> CommandResult | None:  # noqa: C901
        """Answer the trading commands; ``None`` for any other command."""
        now = self.clock.now_ns()

        def ok(detail: str = "") -> CommandAck:
            return CommandAck(command=command, ts_handled=now, detail=detail)

        def err(reason: str) -> CommandError:
            return CommandError(command=command, ts_handled=now, reason=reason)

        try:
            match command:
                case SubmitOrder():
                    blocked = self.router.blocked(command.strategy_id, command.symbol)
                    if blocked is not None:  # one answer, counted; no refused order is made
                        return err(blocked)
                    if command.strategy_id not in self._slot:
                        return err(
                            f"strategy_id {command.strategy_id}: no such strategy in this engine "
                            "(manual orders use 0)"
                        )
                    if command.band_override and command.strategy_id != 0:
                        return err(
                            "band_override: only a manual order (strategy_id 0) may be sent "
                            "outside the price band"
                        )
                    sent = self.router.submit(command)  # a SubmitOrder is an OrderRequest
                    if sent.is_terminal:
                        return err(sent.text)
                    return ok(f"order {sent.order_id} {sent.client_order_id}")
                case CancelOrder(order_id=oid):
                    found = self.router.find(oid)
                    if found is None:
                        return err(f"no order {oid}")
                    order, manager = found
                    if not manager.cancel(order):
                        return err(f"order {oid} is {order.status.name}: nothing to cancel now")
                    return ok(f"cancel sent for {order.client_order_id}")
                case ReplaceOrder(order_id=oid):
                    found = self.router.find(oid)
                    if found is None:
                        return err(f"no order {oid}")
                    order, manager = found
                    if command.band_override and order.strategy_id != 0:
                        return err(
                            f"band_override: order {oid} is strategy {order.strategy_id}'s; only a "
                            "manual order may be moved outside the price band"
                        )
                    if not manager.replace(
                        order,
                        qty_lots=command.qty_lots,
                        px_ticks=command.px_ticks,
                        band_override=command.band_override,
                    ):
                        return err(manager.replace_refused or f"order {oid}: not replaced")
                    return ok(f"replace sent for {order.client_order_id}")
                case CancelAll(strategy_id=sid, symbol=sym):
                    return ok(f"{self.router.cancel_all(sid, sym)} cancels sent")
                case Flatten(strategy_id=sid, symbol=sym):
                    return ok(f"{len(self.router.flatten(sid, sym))} closing orders sent")
                case SetKillSwitch(level=level, reason=reason, actor=actor):
                    n = self.router.kill(level, actor=actor, reason=reason)
                    halted = sum(
                        s.state is StrategyState.HALTED for s in self.runner.strategies.values()
                    )
                    if level is KillLevel.OFF:
                        kept = (
                            "; 1 halted strategy stays halted until resumed"
                            if halted == 1
                            else f"; {halted} halted strategies stay halted until resumed"
                        )
                        return ok(f"kill switch OFF{kept if halted else ''}")
                    return ok(f"kill switch {level.name}: {n} orders touched, {halted} halted")
                case ControlStrategy(strategy_id=sid, action=action):
                    actions = {
                        "start": self.runner.start,
                        "pause": self.runner.pause,
                        "stop": self.runner.stop,
                    }
                    if action not in actions:
                        return err(f"unknown strategy action {action!r}; use start, pause, stop")
                    actions[action](sid)
                    return ok(f"strategy {sid}: {action}")
                case AddStrategy():
                    return ok(self._add_strategy_command(command))
                case SetStrategyParameters(strategy_id=sid, values=values):
                    changed = self.runner.set_parameters(sid, dict(values))
                    return ok(", ".join(f"{k}={v}" for k, v in changed.items()) or "no change")
                case SetRiskLimits():
                    return ok(self._set_risk_limits(command))
        except (KeyError, ValueError, ParameterError) as e:
            return err(str(e.args[0]) if e.args else str(e))
        return None

    def _add_strategy_command(self, command: AddStrategy) -> str:
        """Load ``command``'s class, add the strategy, start it if asked; return the detail."""
        unknown = [s for s in command.symbols if s not in self.router.managers]
        if not command.symbols or unknown:
            raise ValueError(
                f"symbols {', '.join(unknown) or '(none)'}: not traded here; instruments: "
                f"{', '.join(self.router.managers)}"
            )
        if command.strategy_id in self._slot:
            raise ValueError(f"strategy id {command.strategy_id} is already in use")
        strategy = build_strategy(
            command.class_path, command.strategy_id, command.symbols, command.parameters
        )
        self.add_strategy(strategy)
        log.info(
            "strategy %s (%d) added from %s",
            strategy.name,
            strategy.strategy_id,
            command.class_path,
        )
        self.bus.publish(
            StrategyAdded(
                ts_event=self.clock.now_ns(),
                strategy_id=strategy.strategy_id,
                name=strategy.name,
                class_path=command.class_path,
                symbols=tuple(command.symbols),
                parameters=tuple(command.parameters),
                autostart=command.autostart,
            )
        )
        if command.autostart and self.positions is not None:
            self.runner.start(strategy.strategy_id)
        elif command.autostart:
            self._autostart.append(strategy.strategy_id)
        return f"strategy {strategy.name} ({strategy.strategy_id}) added"

    def _set_risk_limits(self, command: SetRiskLimits) -> str:
        sid, sym = command.strategy_id, command.symbol
        if sid is not None and sym is not None:
            raise ValueError("SetRiskLimits: give a strategy_id or a symbol, not both")
        if sym is not None and sym not in self.router.managers:
            raise ValueError(
                f"symbol {sym!r}: not traded here; instruments: {', '.join(self.router.managers)}"
            )
        if sid is not None and sid not in self._slot:
            known = ", ".join(str(s) for s in self._slot)
            raise ValueError(f"strategy_id {sid}: no such strategy (0 is manual orders; {known})")
        risk = self.router.risk
        old = risk.limits(sid, sym)
        new = old.patched({n: getattr(command, n) for n in LIMIT_NAMES}, command.clear)
        risk.set_limits(new, sid, sym)
        change = old.diff(new)
        self.bus.publish(self._limits_event(sid, sym, new, actor=command.actor, change=change))
        return f"{_scope_text(sid, sym)}: {change}"

    def _limits_event(
        self, sid: int | None, sym: str | None, lim: RiskLimits, *, actor: str, change: str
    ) -> RiskLimitsChanged:
        return RiskLimitsChanged(
            ts_event=self.clock.now_ns(),
            engine_id=self._engine_id,
            strategy_id=sid,
            symbol=sym or "",
            actor=actor,
            change=change,
            **{n: getattr(lim, n) for n in LIMIT_NAMES},
        )

    def _start_limits(self) -> None:
        """Publish (and so journal) every scope's limits; restore today's changes on top.

        A limit changed by ``SetRiskLimits`` before a restart is enforced again, unless the
        configuration of that scope changed since the run that journaled it (then the file
        wins, and a warning says so).
        """
        risk = self.router.risk
        configured = {(sid, sym): lim for sid, sym, lim in risk.scopes()}
        for (sid, sym), lim in configured.items():
            self.bus.publish(self._limits_event(sid, sym, lim, actor="config", change="start"))
        journaled = self._recovered.risk_limits if self._recovered is not None else ()
        last: dict[tuple[int | None, str | None], RiskLimitsChanged] = {}
        started: dict[tuple[int | None, str | None], RiskLimits] = {}
        for ev in journaled:
            key = (ev.strategy_id, ev.symbol or None)
            last[key] = ev
            if ev.change == "start":
                started[key] = _limits_of(ev)
        for (sid, sym), ev in last.items():
            now = configured.get((sid, sym), RiskLimits())
            if started.get((sid, sym), RiskLimits()) != now:
                log.warning(
                    "risk limits of %s: the configuration changed since the journal's "
                    "run; its limits apply (%s)",
                    _scope_text(sid, sym),
                    now.describe(),
                )
                continue
            if sym is not None and sym not in self.router.managers:
                continue
            if sid is not None and sid not in self._slot:
                continue
            lim = _limits_of(ev)
            if lim == now:
                continue
            risk.set_limits(lim, sid, sym)
            change = f"restored from the journal: {now.diff(lim)}"
            log.info("risk limits of %s %s", _scope_text(sid, sym), change)
            self.bus.publish(self._limits_event(sid, sym, lim, actor=ev.actor, change=change))


def _limits_of(ev: RiskLimitsChanged) -> RiskLimits:
    return RiskLimits(**{n: getattr(ev, n) for n in LIMIT_NAMES})


def _scope_text(sid: int | None, sym: str | None) -> str:
    if sym is not None:
        return f"instrument {sym}"
    if sid is None:
        return "engine-wide limits"
    return "manual orders" if sid == 0 else f"strategy {sid}"


def _dec(value: Decimal) -> str:
    return format(value.normalize(), "f")
