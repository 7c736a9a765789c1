# SPDX-License-Identifier: MIT
"""Example strategies: a market maker with inventory skew, also compiled, and a taker."""

import math
from typing import Any

from engine.enums import OrdStatus, OrdType, Side, TimeInForce
from engine.events import OrderView
from engine.oms.order import TERMINAL
from engine.strategy.base import BookView, Strategy
from engine.strategy.params import Param
from engine.strategy.quoting import (
    ASK_PX,
    ASK_QTY,
    BID_PX,
    BID_QTY,
    MIN_INTERVAL,
    NO_QUOTE,
    WORKING_ASK,
    WORKING_BID,
    QuotingStrategy,
    quote_rule,
)


class MarketMaker(Strategy):
    """Quote one bid and one ask around the mid, skewed against the position.

    The fair price is ``mid - skew_ticks_per_lot * position``; quotes sit ``half_spread_ticks``
    either side of it and move (replace) when the fair price moves by ``requote_ticks``. At
    ``max_position_lots`` the side that would add to the position is pulled.
    """

    name = "market maker"
    params = (
        Param(name="qty_lots", kind=int, default=1, min=1, max=10_000, help="quote size"),
        Param(
            name="half_spread_ticks",
            kind=int,
            default=2,
            min=1,
            max=1_000,
            help="distance of each quote from the fair price",
        ),
        Param(
            name="skew_ticks_per_lot",
            kind=float,
            default=0.5,
            min=0.0,
            max=100.0,
            help="fair price shift per lot of position",
        ),
        Param(
            name="max_position_lots",
            kind=int,
            default=10,
            min=1,
            max=1_000_000,
            help="pull the adding side at this position",
        ),
        Param(
            name="requote_ticks",
            kind=int,
            default=1,
            min=1,
            max=1_000,
            help="move a quote when its target moves this far",
        ),
    )

    def __init__(self, strategy_id: int, symbols: tuple[str, ...] | list[str], **params: object):
        super().__init__(strategy_id, symbols, **params)
        self.quotes: dict[tuple[str, Side], int] = {}  # (symbol, side) -> order_id
        self._working: dict[int, OrderView] = {}

    def targets(self, book: BookView) -> dict[Side, int | None]:
        """Return the wanted bid and ask prices in ticks (``None``: no quote on that side)."""
        bid, ask = book.best_bid(), book.best_ask()
        if bid is None or ask is None:
            return {Side.BUY: None, Side.SELL: None}
        pos = self.position(book.symbol)
        fair = (bid[0] + ask[0]) / 2 - self.p["skew_ticks_per_lot"] * pos
        half = self.p["half_spread_ticks"]
        bid_px, ask_px = math.floor(fair - half), math.ceil(fair + half)
        limit = self.p["max_position_lots"]
        return {
            Side.BUY: bid_px if pos < limit else None,
            Side.SELL: ask_px if pos > -limit else None,
        }

    def on_book(self, book: BookView) -> None:
        """Keep one quote per side at its target."""
        for side, px in self.targets(book).items():
            self._quote(book.symbol, side, px)

    def _quote(self, symbol: str, side: Side, px: int | None) -> None:
        order_id = self.quotes.get((symbol, side))
        order = self._working.get(order_id) if order_id is not None else None
        if order is None:
            if px is not None:
                view = (self.buy if side is Side.BUY else self.sell)(symbol, self.p["qty_lots"], px)
                if view.status is not OrdStatus.REJECTED:
                    self.quotes[(symbol, side)] = view.order_id
                    self._working[view.order_id] = view
            return
        if order.pending:
            return
        if px is None:
            self.cancel(order.order_id)
        elif abs(order.px_ticks - px) >= self.p["requote_ticks"]:
            self.replace(order.order_id, px_ticks=px)

    def on_order(self, order: OrderView) -> None:
        """Track the quotes; forget the ones that are done."""
        if order.status in TERMINAL:
            self._working.pop(order.order_id, None)
            for key, oid in list(self.quotes.items()):
                if oid == order.order_id:
                    del self.quotes[key]
        else:
            self._working[order.order_id] = order

    def on_parameters(self, changed: dict[str, Any]) -> None:
        """Requote at once with the new parameters."""
        for symbol in self.symbols:
            book = self.ctx.book(symbol)
            if book is not None:
                self.on_book(book)


class Taker(Strategy):
    """Take liquidity when the top of book leans one way.

    Buys ``qty_lots`` at the ask when the bid holds more than ``imbalance`` of the quantity at
    the touch, sells at the bid in the mirror case; IOC orders, at most one per ``cooldown_ms``,
    within ``max_position_lots``.
    """

    name = "taker"
    params = (
        Param(name="qty_lots", kind=int, default=1, min=1, max=10_000, help="order size"),
        Param(
            name="imbalance",
            kind=float,
            default=0.75,
            min=0.5,
            max=1.0,
            help="share of touch quantity on one side that triggers",
        ),
        Param(
            name="max_position_lots",
            kind=int,
            default=5,
            min=1,
            max=1_000_000,
            help="never go beyond this position",
        ),
        Param(
            name="cooldown_ms",
            kind=int,
            default=500,
            min=0,
            max=3_600_000,
            help="minimum time between two orders",
        ),
    )

    def __init__(self, strategy_id: int, symbols: tuple[str, ...] | list[str], **params: object):
        super().__init__(strategy_id, symbols, **params)
        self._last_ns: dict[str, int] = {}

    def on_book(self, book: BookView) -> None:
        """Send an IOC order when the touch is imbalanced enough."""
        bid, ask = book.best_bid(), book.best_ask()
        if bid is None or ask is None or bid[1] + ask[1] == 0:
            return
        ctx = self._ctx or self.ctx  # (ctx raises if not attached)
        p = self.p
        now = ctx.now_ns()
        symbol = book.symbol
        last = self._last_ns.get(symbol)
        if last is not None and now - last < p["cooldown_ms"] * 1_000_000:
            return
        share = bid[1] / (bid[1] + ask[1])
        pos = ctx.position(self.strategy_id, symbol)
        qty, limit, imbalance = p["qty_lots"], p["max_position_lots"], p["imbalance"]
        if share >= imbalance and pos + qty <= limit:
            self.buy(symbol, qty, ask[0], OrdType.LIMIT, TimeInForce.IOC)
        elif share <= 1 - imbalance and pos - qty >= -limit:
            self.sell(symbol, qty, bid[0], OrdType.LIMIT, TimeInForce.IOC)
        else:
            return
        self._last_ns[symbol] = now


@quote_rule
def market_maker_rule(
    now: int, bid: int, ask: int, position: int, quotes: Any, params: Any, state: Any
) -> int:
    """:class:`MarketMaker`'s quoting rule as a compiled :mod:`~engine.strategy.quoting` rule.

    ``params``: quote size, half spread, skew per lot, maximum position, requote distance.
    """
    qty = int(params[0])
    half = params[1]
    skew = params[2]
    limit = params[3]
    requote = params[4]
    fair = (bid + ask) / 2.0 - skew * position
    if position < limit:
        px = math.floor(fair - half)
        have = quotes[WORKING_BID]
        quotes[BID_PX] = have if have != NO_QUOTE and abs(have - px) < requote else px
        quotes[BID_QTY] = qty
    if position > -limit:
        px = math.ceil(fair + half)
        have = quotes[WORKING_ASK]
        quotes[ASK_PX] = have if have != NO_QUOTE and abs(have - px) < requote else px
        quotes[ASK_QTY] = qty
    return 0


class CompiledMarketMaker(QuotingStrategy):
    """:class:`MarketMaker` as a quoting strategy: the same quotes, and a fast-path backtest.

    Its rule (:func:`market_maker_rule`) runs live and in the generic backtest through the
    order manager, and inside the compiled replay loop in the fast backtest, with the same
    fills on both paths. ``min_interval_ms`` throttles how often it acts.
    """

    name = "market maker (compiled)"
    params = (*MarketMaker.params, MIN_INTERVAL)
    rule = market_maker_rule
