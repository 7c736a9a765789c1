# SPDX-License-Identifier: MIT
"""Route orders to the order manager of their instrument; hold the kill switch.

One :class:`OrderRouter` per engine owns the shared :class:`engine.oms.risk.RiskChecker` and an
:class:`engine.oms.manager.OrderManager` per instrument. Strategies, the console's order ticket
and the kill switch all go through it.
"""

import itertools
from collections.abc import Callable, Iterable, Iterator

from engine.alerts import RefusalCounter
from engine.bus import MessageBus
from engine.clock import Clock
from engine.enums import AlertLevel, KillLevel, OrdType, Side, TimeInForce
from engine.events import ALERTED, Alert, KillSwitchChanged
from engine.fastlog import get_log
from engine.instruments import Instrument
from engine.oms.manager import OrderManager
from engine.oms.order import Order
from engine.oms.request import OrderRequest
from engine.oms.risk import RiskChecker, RiskLimits
from engine.oms.stp import SelfTradePrevention
from engine.oms.venue import Venue

log = get_log(__name__)


class OrderRouter:
    """Every order manager of the engine, the shared risk checker and the kill switch.

    Parameters
    ----------
    bus : MessageBus
        Where order events, alerts and kill-switch changes are published.
    clock : Clock
        Time source.
    global_limits : RiskLimits | None
        Engine-wide limits (per-strategy limits are set on :attr:`risk`).
    """

    def __init__(
        self, bus: MessageBus, clock: Clock, global_limits: RiskLimits | None = None
    ) -> None:
        self.bus = bus
        self.clock = clock
        self.risk = RiskChecker(clock, global_limits, reference_px=self._reference_px)
        self.managers: dict[str, OrderManager] = {}
        self._reference: dict[str, int] = {}
        #: Reference price when no trade was reported yet (e.g. the mid of the market data).
        self.reference_fallback: Callable[[str], int | None] | None = None
        # Order ids: the counter's own __next__ (no Python frame per order), handed to every
        # order manager and replaced in all of them by continue_order_ids_after().
        self._next_order_id: Callable[[], int] = itertools.count(1).__next__
        #: Orders the kill switch refused before they existed, per level since it was set.
        self.refusals = RefusalCounter(bus, clock, "kill switch")
        self._kill_since = 0
        #: Self-trade prevention of every order manager (``engine.oms.stp``).
        self.stp = SelfTradePrevention()
        self.stp.attach(bus, clock)

    # ------------------------------------------------------------------ set-up
    def add_instrument(
        self, instrument: Instrument, venue: Venue, *, security_desc: str = ""
    ) -> OrderManager:
        """Create the order manager of ``instrument`` on ``venue`` and return it."""
        if instrument.symbol in self.managers:
            raise ValueError(f"instrument {instrument.symbol!r} is already routed")
        manager = OrderManager(
            instrument,
            venue,
            self.bus,
            self.clock,
            self.risk,
            security_desc=security_desc,
            next_order_id=self._next_order_id,
        )
        manager.stp = self.stp
        self.managers[instrument.symbol] = manager
        return manager

    def continue_order_ids_after(self, last_order_id: int) -> None:
        """Give new orders ids above ``last_order_id`` (orders restored from a journal)."""
        self._next_order_id = itertools.count(last_order_id + 1).__next__
        for manager in self.managers.values():
            manager.use_order_ids(self._next_order_id)

    def manager(self, symbol: str) -> OrderManager:
        """Return the order manager of ``symbol``; ``KeyError`` naming it if not routed."""
        try:
            return self.managers[symbol]
        except KeyError:
            raise KeyError(
                f"no order manager for {symbol!r}; routed: {', '.join(self.managers) or 'none'}"
            ) from None

    def find(self, order_id: int) -> tuple[Order, OrderManager] | None:
        """Return an order by its engine-wide id and the manager that owns it, or ``None``."""
        for manager in self.managers.values():
            order = manager.lookup(order_id)  # open, or done and still in the archive
            if order is not None:
                return order, manager
        return None

    def set_reference_px(self, symbol: str, px_ticks: int) -> None:
        """Record the reference price (last trade, else the touch) for the price band."""
        self._reference[symbol] = px_ticks

    def _reference_px(self, symbol: str) -> int | None:
        px = self._reference.get(symbol)
        if px is None and self.reference_fallback is not None:
            px = self.reference_fallback(symbol)
        return px

    # ------------------------------------------------------------------ orders
    def send(
        self,
        symbol: str,
        side: Side,
        qty_lots: int,
        px_ticks: int = 0,
        ord_type: OrdType = OrdType.LIMIT,
        time_in_force: TimeInForce = TimeInForce.DAY,
        strategy_id: int = 0,
        client_order_id: str | None = None,
        *,
        band_override: bool = False,
    ) -> Order:
        """Send one order: the fields of an :class:`OrderRequest`, as :meth:`OrderManager.send`.

        The fields may be given by keyword (as callers here do) or in this order;
        ``band_override``, which skips a check, by keyword only. (A keyword-only field left
        out costs a lookup by name per call: ~400 instructions per order of the four with
        defaults that a usual call leaves out; issue 25.)
        """
        manager = self.managers.get(symbol)
        if manager is None:
            manager = self.manager(symbol)  # raises, naming the symbol
        # manager.send(...) with these keywords, through its positional entry.
        return manager._send_new(
            side,
            qty_lots,
            px_ticks,
            ord_type,
            time_in_force,
            strategy_id,
            client_order_id,
            band_override,
            False,
        )

    def submit(self, request: OrderRequest) -> Order:
        """Send ``request`` to the order manager of its symbol."""
        return self.manager(request.symbol).submit(request)

    def send_many(self, requests: Iterable[OrderRequest]) -> list[Order]:
        """Send a portfolio of orders over several instruments in one call."""
        return [self.submit(r) for r in requests]

    def working(self, strategy_id: int | None = None) -> Iterator[Order]:
        """Iterate over working orders of every instrument (of one strategy, or all)."""
        for manager in self.managers.values():
            yield from manager.working(strategy_id)

    def cancel_all(self, strategy_id: int | None = None, symbol: str | None = None) -> int:
        """Cancel every working order (of a strategy, of an instrument); return the count."""
        managers = [self.manager(symbol)] if symbol else list(self.managers.values())
        return sum(m.cancel_all(strategy_id) for m in managers)

    def flatten(self, strategy_id: int | None = None, symbol: str | None = None) -> list[Order]:
        """Cancel working orders and close positions with market orders; return those orders.

        Flattening reduces risk, so it is exempt from the kill switch's block on new orders
        (it is what the kill switch's top level does).
        """
        self.cancel_all(strategy_id, symbol)
        orders = []
        symbols = [symbol] if symbol else list(self.managers)
        for sym in symbols:
            manager = self.manager(sym)
            for sid in self._strategies_with_position(sym, strategy_id):
                pos = self.risk.position(sym, sid)
                side = Side.SELL if pos > 0 else Side.BUY
                orders.append(
                    manager.send(
                        strategy_id=sid,
                        side=side,
                        qty_lots=abs(pos),
                        ord_type=OrdType.MARKET,
                        time_in_force=TimeInForce.IOC,
                        risk_exempt=True,
                    )
                )
        return orders

    def _strategies_with_position(self, symbol: str, strategy_id: int | None) -> list[int]:
        ids = self.risk.strategies_with_position(symbol)
        return [s for s in ids if strategy_id is None or s == strategy_id]

    # ------------------------------------------------------------------ kill switch
    @property
    def kill_level(self) -> KillLevel:
        """Return the kill switch's level."""
        return self.risk.kill_level

    def blocked(self, strategy_id: int, symbol: str) -> str | None:
        """Return why the kill switch refuses a new order now (and count it), else ``None``.

        Asked before an order exists (the console's ticket, strategies), so a refused order
        never reaches the blotter: the refusals add up in one alert per level, "kill switch
        BLOCK_NEW: 14,564 orders refused since 10:31:02 UTC".
        """
        level = self.risk.kill_level
        if level is KillLevel.OFF:
            return None
        who = "manual" if strategy_id == 0 else f"strategy {strategy_id}"
        self.refusals.refuse(
            f"kill switch {level.name}", detail=f"last: {symbol}, {who}", since_ns=self._kill_since
        )
        return f"kill switch is at {level.name}: new orders are blocked"

    def kill(self, level: KillLevel, *, actor: str, reason: str) -> int:
        """Set the kill switch and carry out its level; return how many orders it touched.

        ``BLOCK_NEW`` refuses new orders; ``CANCEL_ALL`` also cancels every working order;
        ``FLATTEN`` also closes every position. ``OFF`` releases it. Every call is published
        (and so journaled) with who pulled it and why; the strategy runner halts every
        strategy on that event (:class:`engine.strategy.runner.StrategyRunner`), before the
        switch cancels anything.
        """
        if level is not self.risk.kill_level:
            self.refusals.reset()
            self._kill_since = self.clock.now_ns()
        self.risk.kill_level = level
        self.bus.publish(
            KillSwitchChanged(ts_event=self.clock.now_ns(), level=level, actor=actor, reason=reason)
        )
        self.bus.publish(
            Alert(
                ts_event=self.clock.now_ns(),
                level=AlertLevel.CRITICAL if level else AlertLevel.WARNING,
                source="kill switch",
                text=f"kill switch set to {level.name} by {actor}: {reason}",
            )
        )
        log.warning("kill switch set to %s by %s: %s", level.name, actor, reason, extra=ALERTED)
        touched = 0
        if level >= KillLevel.CANCEL_ALL:
            touched += self.cancel_all()
        if level >= KillLevel.FLATTEN:
            touched += len(self.flatten())
        return touched
