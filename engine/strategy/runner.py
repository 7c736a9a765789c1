# SPDX-License-Identifier: MIT
"""Run many strategies at once on the engine: dispatch events, drive their lifecycle.

:class:`StrategyRunner` subscribes to the engine bus and hands each strategy the events that
concern it: its own orders and fills (in every state), market data for its symbols and its
timer (while running). A strategy whose handler raises is stopped, its orders are canceled and
an alert says why — one broken strategy never takes the engine down.

Every level of the kill switch halts every strategy that is not stopped, in the same call that
engages it (``StrategyState.HALTED``: a pause the switch imposed). Releasing the switch resumes
nothing; an explicit start does, and is refused while the switch is engaged. A halted
strategy's orders are refused before they exist and counted (one alert, not one per order).
"""

from collections.abc import Callable, Mapping
from typing import Any

from engine.bus import MessageBus
from engine.clock import Clock
from engine.enums import AlertLevel, KillLevel, OrdStatus, OrdType, Side, StrategyState, TimeInForce
from engine.events import (
    ALERTED,
    Alert,
    BookUpdated,
    KillSwitchChanged,
    OrderChanged,
    OrderFilled,
    OrderView,
    StrategyStatusChanged,
    TradeReported,
)
from engine.fastlog import get_log
from engine.instruments import Instrument
from engine.oms.router import OrderRouter
from engine.strategy.base import BookView, Strategy

log = get_log(__name__)

#: Cause of the alert counting orders of halted strategies refused while the switch is off.
HALTED_REFUSALS = "strategies halted by the kill switch"

_OFF = KillLevel.OFF
_RUNNING = StrategyState.RUNNING
_STOPPED = StrategyState.STOPPED


class LiveContext:
    """The :class:`engine.strategy.base.StrategyContext` of the live engine (and simulator).

    ``now_ns()`` is the clock's, ``book(symbol)`` the ``books`` callable given.

    Parameters
    ----------
    router : OrderRouter
        Orders, risk and positions.
    clock : Clock
        Time source.
    books : Callable[[str], BookView | None]
        The current book of a symbol, from the market-data layer.
    """

    def __init__(
        self, router: OrderRouter, clock: Clock, books: Callable[[str], BookView | None]
    ) -> None:
        self.router = router
        self.clock = clock
        #: Strategies halted by the kill switch (the runner keeps it): orders refused at once.
        self.halted: set[int] = set()
        # Asked on every book update: the clock's and the market data's own callables, one
        # call fewer each than methods passing them on.
        self.now_ns: Callable[[], int] = clock.now_ns
        self.book: Callable[[str], BookView | None] = books

    def instrument(self, symbol: str) -> Instrument:
        """Return the routed instrument ``symbol``."""
        return self.router.manager(symbol).instrument

    def send(
        self,
        *,
        symbol: str,
        side: Side,
        qty_lots: int,
        px_ticks: int,
        ord_type: OrdType,
        time_in_force: TimeInForce,
        strategy_id: int,
    ) -> OrderView:
        """Send an order through the router.

        While the kill switch blocks new orders, or the strategy is halted, the order is not
        created: the refusal is counted (one alert for all of them) and the returned view says
        ``REJECTED`` and why, with ``order_id`` 0.
        """
        router = self.router
        if router.risk.kill_level is _OFF and strategy_id not in self.halted:
            # The usual case, router.send() inlined: nothing blocks the order.
            manager = router.managers.get(symbol) or router.manager(symbol)
            # manager.send(...) with these keywords, through its positional entry.
            order = manager._send_new(
                side, qty_lots, px_ticks, ord_type, time_in_force, strategy_id, None, False, False
            )
            # The order manager published every change it made: its last view is the current.
            return order.published or order.view()
        refusal = router.blocked(strategy_id, symbol)
        if refusal is None and strategy_id in self.halted:
            self.router.refusals.refuse(
                HALTED_REFUSALS, detail=f"last: {symbol}, strategy {strategy_id}"
            )
            refusal = f"strategy {strategy_id} is halted by the kill switch: resume it to trade"
        if refusal is not None:
            now = self.clock.now_ns()
            return OrderView(
                order_id=0,
                client_order_id="",
                orig_client_order_ids=(),
                venue_order_id="",
                strategy_id=strategy_id,
                symbol=symbol,
                side=side,
                ord_type=ord_type,
                time_in_force=time_in_force,
                qty_lots=qty_lots,
                px_ticks=px_ticks,
                status=OrdStatus.REJECTED,
                cum_qty_lots=0,
                leaves_qty_lots=0,
                avg_px_ticks=0.0,
                pending="",
                text=refusal,
                ts_created=now,
                ts_sent=0,
                ts_acked=0,
                ts_last=now,
            )
        order = self.router.send(
            symbol=symbol,
            side=side,
            qty_lots=qty_lots,
            px_ticks=px_ticks,
            ord_type=ord_type,
            time_in_force=time_in_force,
            strategy_id=strategy_id,
        )
        # The order manager published every change it made: its last view is the current one.
        return order.published or order.view()

    def cancel(self, order_id: int) -> bool:
        """Cancel order ``order_id``."""
        found = self.router.find(order_id)
        return bool(found and found[1].cancel(found[0]))

    def replace(self, order_id: int, qty_lots: int | None, px_ticks: int | None) -> bool:
        """Replace order ``order_id`` (``False``, counted, for a halted strategy's order)."""
        found = self.router.find(order_id)
        if found is None:
            return False
        order, manager = found
        if order.strategy_id in self.halted:
            self.router.refusals.refuse(
                HALTED_REFUSALS, detail=f"last: replace {order.client_order_id}, {order.symbol}"
            )
            return False
        return manager.replace(order, qty_lots=qty_lots, px_ticks=px_ticks)

    def cancel_all(self, strategy_id: int, symbol: str | None) -> int:
        """Cancel the strategy's working orders."""
        return self.router.cancel_all(strategy_id, symbol)

    def flatten(self, strategy_id: int, symbol: str | None) -> None:
        """Cancel and close the strategy's positions."""
        self.router.flatten(strategy_id, symbol)

    def position(self, strategy_id: int, symbol: str) -> int:
        """Return the strategy's net position in lots."""
        return self.router.risk.position(symbol, strategy_id)

    def working_orders(self, strategy_id: int, symbol: str | None) -> list[OrderView]:
        """Return the strategy's working orders."""
        return [
            o.view()
            for o in self.router.working(strategy_id)
            if symbol is None or o.symbol == symbol
        ]


class StrategyRunner:
    """Own the strategies of an engine and deliver their events.

    Parameters
    ----------
    bus : MessageBus
        Engine bus: order, fill and market-data events come from it; strategy status and
        alerts go to it.
    clock : Clock
        Time source (for timers and event timestamps).
    ctx : LiveContext
        What strategies trade through.
    """

    def __init__(self, bus: MessageBus, clock: Clock, ctx: LiveContext) -> None:
        self.bus = bus
        self.clock = clock
        self.ctx = ctx
        self.strategies: dict[int, Strategy] = {}
        # symbol -> the strategies trading it, in the order they were added (a new tuple on
        # each add: a dispatch under way keeps iterating over the one it started with).
        self._of_symbol: dict[str, tuple[Strategy, ...]] = {}
        # Strategies whose on_order is their own (not the base class's no-op), by id.
        self._hears_orders: dict[int, bool] = {}
        self._next_timer: dict[int, int] = {}
        self._halted_from: dict[int, StrategyState] = {}  # state each halted strategy had
        bus.subscribe(KillSwitchChanged, self._on_kill_switch)
        bus.subscribe(OrderChanged, self._on_order_changed)
        # Muted until a strategy with its own on_order comes: until then an order manager
        # builds no view or event for us (if nobody else listens either).
        bus.set_muted(OrderChanged, self._on_order_changed, True)
        bus.subscribe(OrderFilled, self._on_order_filled)
        bus.subscribe(BookUpdated, self._on_book_updated)
        bus.subscribe(TradeReported, self._on_trade)

    # ------------------------------------------------------------------ lifecycle
    def add(self, strategy: Strategy) -> None:
        """Register ``strategy`` (stopped); its id must be unique in the engine."""
        if strategy.strategy_id in self.strategies:
            raise ValueError(f"strategy id {strategy.strategy_id} is already in use")
        strategy.attach(self.ctx)
        self.strategies[strategy.strategy_id] = strategy
        for symbol in dict.fromkeys(strategy.symbols):
            self._of_symbol[symbol] = (*self._of_symbol.get(symbol, ()), strategy)
        own = getattr(type(strategy), "on_order", None) is not Strategy.on_order
        hears = own or "on_order" in getattr(strategy, "__dict__", {})  # (or set on it)
        self._hears_orders[strategy.strategy_id] = hears
        if hears:
            self.bus.set_muted(OrderChanged, self._on_order_changed, False)
        self._publish(strategy, "added")

    def get(self, strategy_id: int) -> Strategy:
        """Return the strategy; ``KeyError`` naming the id if unknown."""
        try:
            return self.strategies[strategy_id]
        except KeyError:
            raise KeyError(f"no strategy with id {strategy_id}") from None

    def start(self, strategy_id: int) -> None:
        """Start (or resume a paused or halted) strategy.

        Raises ``ValueError`` (the reason for the trader) while the kill switch is engaged.
        """
        s = self.get(strategy_id)
        if s.state is StrategyState.RUNNING:
            return
        level = self.ctx.router.kill_level
        if level is not KillLevel.OFF:
            verb = "resumed" if s.state is not StrategyState.STOPPED else "started"
            raise ValueError(
                f"strategy {s.name} ({strategy_id}) not {verb}: the kill switch is at "
                f"{level.name}; release it first, then resume"
            )
        was: StrategyState = s.state
        if was is StrategyState.HALTED:
            was = self._halted_from.pop(strategy_id, StrategyState.STOPPED)
            self.ctx.halted.discard(strategy_id)
        s.state = StrategyState.RUNNING
        self._next_timer[strategy_id] = self.clock.monotonic_ns()
        if was is not StrategyState.STOPPED:
            self._publish(s, "resumed")
            return
        self._publish(s, "started")
        self._call(s, s.on_start)

    def pause(self, strategy_id: int) -> None:
        """Pause: keep the strategy's state, cancel its quotes, stop its market data."""
        s = self.get(strategy_id)
        if s.state is not StrategyState.RUNNING:
            return
        s.state = StrategyState.PAUSED
        self.ctx.cancel_all(strategy_id, None)
        self._publish(s, "paused")

    def stop(self, strategy_id: int, reason: str = "stopped") -> None:
        """Stop: cancel the strategy's orders and call its ``on_stop`` (if it had started)."""
        s = self.get(strategy_id)
        if s.state is StrategyState.STOPPED:
            return
        started = s.state is not StrategyState.HALTED or (
            self._halted_from.pop(strategy_id, StrategyState.STOPPED) is not StrategyState.STOPPED
        )
        self.ctx.halted.discard(strategy_id)
        s.state = StrategyState.STOPPED
        self.ctx.cancel_all(strategy_id, None)
        self._publish(s, reason)
        if started and not reason.startswith("failed"):
            self._call(s, s.on_stop)

    def halt(self, strategy_id: int, change: str) -> bool:
        """Halt a strategy for the kill switch: like a pause, lifted only by :meth:`start`.

        A running or paused strategy's working orders are canceled; a stopped one (a restart
        that keeps it halted) is only marked. Return whether it was not halted before.
        """
        s = self.get(strategy_id)
        if s.state is StrategyState.HALTED:
            return False
        self._halted_from[strategy_id] = s.state
        trading = s.state is not StrategyState.STOPPED
        s.state = StrategyState.HALTED
        self.ctx.halted.add(strategy_id)
        if trading:
            self.ctx.cancel_all(strategy_id, None)
        self._publish(s, change)
        return True

    def halt_all(self, change: str) -> int:
        """Halt every strategy that is running or paused; return how many were halted."""
        trading = (StrategyState.RUNNING, StrategyState.PAUSED)
        return sum(
            self.halt(sid, change) for sid, s in list(self.strategies.items()) if s.state in trading
        )

    def _on_kill_switch(self, event: KillSwitchChanged) -> None:
        if event.level is not KillLevel.OFF:
            self.halt_all(f"halted by kill switch {event.level.name}")

    def stop_all(self) -> None:
        """Stop every strategy (engine shutdown)."""
        for sid in list(self.strategies):
            self.stop(sid)

    def set_parameters(self, strategy_id: int, values: Mapping[str, object]) -> dict[str, Any]:
        """Check and apply parameters; return the changes (``ParameterError`` names the rule)."""
        s = self.get(strategy_id)
        changed = s.set_parameters(values)
        if changed:
            self._publish(s, "parameters")
            if s.state is StrategyState.RUNNING:
                self._call(s, s.on_parameters, changed)
        return changed

    def on_timer(self) -> None:
        """Call due strategy timers; the engine loop calls this often (e.g. every 10 ms)."""
        now = self.clock.monotonic_ns()
        for sid, s in self.strategies.items():
            if s.state is not StrategyState.RUNNING or not s.timer_interval_ms:
                continue
            due = self._next_timer.get(sid, now)
            if now >= due:
                self._next_timer[sid] = max(due + s.timer_interval_ms * 1_000_000, now)
                self._call(s, s.on_timer, self.clock.now_ns())

    # ------------------------------------------------------------------ dispatch
    def _on_order_changed(self, event: OrderChanged) -> None:
        order = event.order
        sid = order.strategy_id
        if not self._hears_orders.get(sid):  # unknown, or on_order is the base's no-op
            return
        s = self.strategies[sid]
        if s.state is not _STOPPED:
            self._call(s, s.on_order, order)

    def _on_order_filled(self, event: OrderFilled) -> None:
        s = self.strategies.get(event.strategy_id)
        if s is not None:
            self._call(s, s.on_fill, event)

    def _on_book_updated(self, event: BookUpdated) -> None:
        book = None
        symbol = event.symbol
        for s in self._of_symbol.get(symbol, ()):
            if s.state is _RUNNING:
                book = book or self.ctx.book(symbol)
                if book is not None:
                    try:  # _call(s, s.on_book, book), inlined
                        s.on_book(book)
                    except Exception as e:
                        self._failed(s, e)

    def _on_trade(self, event: TradeReported) -> None:
        for s in list(self.strategies.values()):
            if s.state is StrategyState.RUNNING and event.symbol in s.symbols:
                self._call(s, s.on_trade, event)

    def _call(self, s: Strategy, handler: Callable[..., None], *args: Any) -> None:
        try:
            handler(*args)
        except Exception as e:
            self._failed(s, e)

    def _failed(self, s: Strategy, e: Exception) -> None:
        # A handler of ``s`` raised ``e``: say so, stop the strategy.
        log.error("strategy %s (%d) failed", s.name, s.strategy_id, exc_info=e, extra=ALERTED)
        text = (
            f"strategy {s.name} ({s.strategy_id}) failed and was stopped: {type(e).__name__}: {e}"
        )
        self.bus.publish(
            Alert(ts_event=self.clock.now_ns(), level=AlertLevel.ERROR, source=s.name, text=text)
        )
        if s.state is not StrategyState.STOPPED:
            self.stop(s.strategy_id, f"failed: {type(e).__name__}: {e}")

    def status_event(self, s: Strategy, change: str) -> StrategyStatusChanged:
        """Return the status event of ``s`` (also used for snapshots)."""
        return StrategyStatusChanged(
            ts_event=self.clock.now_ns(),
            strategy_id=s.strategy_id,
            name=s.name,
            state=s.state,
            parameters=s.parameter_values(),
            change=change,
        )

    def _publish(self, s: Strategy, change: str) -> None:
        self.bus.publish(self.status_event(s, change))
