# SPDX-License-Identifier: MIT
"""The :class:`Strategy` base class and the context it trades through.

A strategy subclasses :class:`Strategy`, declares its parameters (:class:`~.params.Param`),
and reacts in its ``on_*`` handlers. It never talks to a venue, a socket or a clock directly:
everything goes through its :class:`StrategyContext`, which the live engine, the exchange
simulator and the backtester each implement — so the same class runs in all three unchanged.
"""

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol

import numpy as np
import numpy.typing as npt

from engine.enums import OrdType, Side, StrategyState, TimeInForce
from engine.events import OrderFilled, OrderView, TradeReported
from engine.instruments import Instrument
from engine.strategy.params import Param, resolve


class BookView(Protocol):
    """Read-only view of one instrument's L2 book (prices in ticks, quantities in lots)."""

    @property
    def symbol(self) -> str:
        """Return the instrument's symbol."""
        ...

    def best_bid(self) -> tuple[int, int] | None:
        """Return ``(px_ticks, qty_lots)`` of the best bid, or ``None`` if no bid."""
        ...

    def best_ask(self) -> tuple[int, int] | None:
        """Return ``(px_ticks, qty_lots)`` of the best ask, or ``None`` if no ask."""
        ...

    def top(self, depth: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Return bids and asks as ``(depth, 2)`` arrays of (px_ticks, qty_lots), best first."""
        ...


class StrategyContext(Protocol):
    """Everything a strategy may do; implemented live, on the simulator and in the backtester."""

    def now_ns(self) -> int:
        """Return the current time (simulated time in a backtest)."""
        ...

    def instrument(self, symbol: str) -> Instrument:
        """Return the instrument's static data."""
        ...

    def book(self, symbol: str) -> BookView | None:
        """Return the current book of ``symbol`` (``None`` before its first update)."""
        ...

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
        """Send an order; the returned view says ``REJECTED`` and why if risk refused it.

        The arguments are the fields of an ``engine.oms.request.OrderRequest``, keyword-only.
        """
        ...

    def cancel(self, order_id: int) -> bool:
        """Cancel a working order; ``False`` if there is nothing to cancel."""
        ...

    def replace(self, order_id: int, qty_lots: int | None, px_ticks: int | None) -> bool:
        """Change quantity and/or price of a working order; ``False`` if not possible now."""
        ...

    def cancel_all(self, strategy_id: int, symbol: str | None) -> int:
        """Cancel every working order of the strategy (of one symbol); return the count."""
        ...

    def flatten(self, strategy_id: int, symbol: str | None) -> None:
        """Cancel the strategy's orders and close its positions."""
        ...

    def position(self, strategy_id: int, symbol: str) -> int:
        """Return the strategy's net position in lots (signed)."""
        ...

    def working_orders(self, strategy_id: int, symbol: str | None) -> list[OrderView]:
        """Return the strategy's working orders (of one symbol)."""
        ...


class Strategy:
    """Base class of every strategy.

    Parameters
    ----------
    strategy_id : int
        Integer id, e.g. ``20170101``; it tags every order of the strategy.
    symbols : Sequence[str]
        Instruments it trades and receives market data for.
    **params
        Values for the declared :attr:`params` (others take their defaults).

    Notes
    -----
    Handlers run on the engine loop and must return quickly. Order and fill handlers are
    called in every state (a paused strategy keeps its state); market data and timer handlers
    only while running.
    """

    #: Shown in the console and the journal.
    name: ClassVar[str] = "strategy"
    #: Declared parameters, in display order.
    params: ClassVar[tuple[Param, ...]] = ()
    #: Period of :meth:`on_timer` in ms; 0 for none.
    timer_interval_ms: ClassVar[int] = 0

    def __init__(self, strategy_id: int, symbols: Sequence[str], **params: object) -> None:
        if strategy_id <= 0:
            raise ValueError(f"strategy id must be a positive integer, got {strategy_id}")
        if not symbols:
            raise ValueError(f"strategy {strategy_id}: at least one symbol is needed")
        self.strategy_id = strategy_id
        self.symbols = tuple(symbols)
        self.p: dict[str, Any] = resolve(self.params, params, {})
        self.state = StrategyState.STOPPED
        self._ctx: StrategyContext | None = None

    # ------------------------------------------------------------------ wiring
    def attach(self, ctx: StrategyContext) -> None:
        """Give the strategy its context (done by the runner before :meth:`on_start`)."""
        self._ctx = ctx

    @property
    def ctx(self) -> StrategyContext:
        """Return the context; raise if the strategy was never attached to a runner."""
        if self._ctx is None:
            raise RuntimeError(f"strategy {self.strategy_id} is not attached to a runner")
        return self._ctx

    def parameter_values(self) -> tuple[tuple[str, Any], ...]:
        """Return ``(name, value)`` of every declared parameter, in declaration order."""
        return tuple((p.name, self.p[p.name]) for p in self.params)

    def set_parameters(self, values: Mapping[str, object]) -> dict[str, Any]:
        """Check and apply new parameter values; return those that changed."""
        new = resolve(self.params, values, self.p)
        changed = {k: v for k, v in new.items() if self.p.get(k) != v}
        self.p = new
        return changed

    # ------------------------------------------------------------------ handlers
    def on_start(self) -> None:
        """Start (or restart) trading; called once the strategy is running."""

    def on_stop(self) -> None:
        """Finish; the runner has canceled the strategy's orders."""

    def on_book(self, book: BookView) -> None:
        """React to a change of the book of one of :attr:`symbols`."""

    def on_trade(self, trade: TradeReported) -> None:
        """React to a trade printed on the market."""

    def on_order(self, order: OrderView) -> None:
        """React to a change of one of the strategy's orders."""

    def on_fill(self, fill: OrderFilled) -> None:
        """React to a fill of one of the strategy's orders."""

    def on_timer(self, now_ns: int) -> None:
        """Run periodic work (every :attr:`timer_interval_ms`)."""

    def on_parameters(self, changed: dict[str, Any]) -> None:
        """React to parameters changed while running."""

    # ------------------------------------------------------------------ actions
    def buy(
        self,
        symbol: str,
        qty_lots: int,
        px_ticks: int = 0,
        ord_type: OrdType = OrdType.LIMIT,
        time_in_force: TimeInForce = TimeInForce.DAY,
    ) -> OrderView:
        """Send a buy order."""
        return (self._ctx or self.ctx).send(  # (ctx raises if not attached)
            symbol=symbol,
            side=Side.BUY,
            qty_lots=qty_lots,
            px_ticks=px_ticks,
            ord_type=ord_type,
            time_in_force=time_in_force,
            strategy_id=self.strategy_id,
        )

    def sell(
        self,
        symbol: str,
        qty_lots: int,
        px_ticks: int = 0,
        ord_type: OrdType = OrdType.LIMIT,
        time_in_force: TimeInForce = TimeInForce.DAY,
    ) -> OrderView:
        """Send a sell order."""
        return (self._ctx or self.ctx).send(  # (ctx raises if not attached)
            symbol=symbol,
            side=Side.SELL,
            qty_lots=qty_lots,
            px_ticks=px_ticks,
            ord_type=ord_type,
            time_in_force=time_in_force,
            strategy_id=self.strategy_id,
        )

    def cancel(self, order_id: int) -> bool:
        """Cancel one of the strategy's orders."""
        return self.ctx.cancel(order_id)

    def replace(
        self, order_id: int, *, qty_lots: int | None = None, px_ticks: int | None = None
    ) -> bool:
        """Change quantity and/or price of one of the strategy's orders."""
        return self.ctx.replace(order_id, qty_lots, px_ticks)

    def cancel_all(self, symbol: str | None = None) -> int:
        """Cancel all of the strategy's working orders (of one symbol)."""
        return self.ctx.cancel_all(self.strategy_id, symbol)

    def flatten(self, symbol: str | None = None) -> None:
        """Cancel the strategy's orders and close its positions."""
        self.ctx.flatten(self.strategy_id, symbol)

    def position(self, symbol: str) -> int:
        """Return the strategy's net position in ``symbol``, in lots."""
        return (self._ctx or self.ctx).position(self.strategy_id, symbol)

    def working_orders(self, symbol: str | None = None) -> list[OrderView]:
        """Return the strategy's working orders."""
        return self.ctx.working_orders(self.strategy_id, symbol)
