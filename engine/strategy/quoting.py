# SPDX-License-Identifier: MIT
"""Quoting strategies: a compiled rule that runs live, in the generic and in the fast backtest.

A :class:`QuotingStrategy` keeps at most one limit order (a *quote*) on each side of one
instrument. What it quotes is decided by a **rule**, a plain Python function compiled by numba
and marked with :func:`quote_rule`::

    @quote_rule
    def rule(now, bid, ask, position, quotes, params, state):
        ...  # write the wanted quotes into quotes[BID_PX], quotes[BID_QTY], ...
        return 0  # or a local time at which to be called again even if nothing changed

=============  ================  ===========================================================
argument       type              meaning
=============  ================  ===========================================================
``now``        int64             the strategy's local time, ns
``bid``        int64             best bid, ticks (the rule only runs on a two-sided book)
``ask``        int64             best ask, ticks
``position``   int64             the strategy's position as it knows it (fills reach it after
                                 the response latency), lots
``quotes``     int64[QUOTES_N]   in: ``quotes[WORKING_BID]``, ``quotes[WORKING_ASK]``, the
                                 prices of the working quotes (:data:`NO_QUOTE`: none);
                                 out: ``quotes[BID_PX]``, ``quotes[BID_QTY]``,
                                 ``quotes[ASK_PX]``, ``quotes[ASK_QTY]`` (quantity 0: no
                                 quote on that side); the out slots are 0 on entry
``params``     float64[]         the strategy's own parameters (:attr:`Strategy.params`
                                 without ``min_interval_ms``), in declaration order
``state``      float64[]         :attr:`QuotingStrategy.state_size` numbers kept between
                                 calls (zeros at the start of a run)
return         int64             a local time at which the rule wants to run again even if
                                 nothing changed (0: not needed)
=============  ================  ===========================================================

The same framework carries the rule's answer out everywhere, which is why one strategy gives
the same fills on the generic path (:meth:`QuotingStrategy.on_book`, through the order
manager, as live) and on the fast path (:func:`engine.backtest._kernels.quote_decide`, inside
the compiled replay loop):

* The rule runs after a venue update that leaves a two-sided book, at most once every
  ``min_interval_ms``, and only when the touch changed, when something happened to the
  strategy's orders (an answer or a fill reached it) or when the time it returned has come.
* Per side: no working quote and a quantity → a new DAY limit order; a working quote and
  quantity 0 → cancel; a working quote at another price → replace (the price; the open size
  stays). A side that waits for the venue's answer to a cancel or replace ignores the rule
  until the answer arrives (a new order may be replaced before it is acknowledged).

The rule must be a pure function of its arguments (and ``state``): no Python objects, no I/O.
numba compiles it twice, as a Python-callable function (live and generic path) and as a C
callback (fast path); both are cached on disk next to the rule's file.
"""

import functools
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from engine import jit
from engine.enums import Side
from engine.events import OrderFilled, OrderView
from engine.oms.order import TERMINAL
from engine.strategy.base import BookView, Strategy
from engine.strategy.params import Param

#: A side without a working quote (in ``quotes[WORKING_BID]`` / ``quotes[WORKING_ASK]``).
NO_QUOTE = int(np.iinfo(np.int64).min)
WORKING_BID = 0
WORKING_ASK = 1
BID_PX = 2
BID_QTY = 3
ASK_PX = 4
ASK_QTY = 5
QUOTES_N = 8

#: The C signature of a compiled rule (numba types).
RULE_SIGNATURE = "int64(int64, int64, int64, int64, int64[::1], float64[::1], float64[::1])"

_NEVER = int(np.iinfo(np.int64).max)

#: The framework's own parameter, shared by every quoting strategy.
MIN_INTERVAL = Param(
    name="min_interval_ms",
    kind=float,
    default=0.0,
    min=0.0,
    max=60_000.0,
    help="run the rule at most this often (0: after every update)",
)


class QuoteRule:
    """A quoting rule, compiled on first use for the generic path and for the fast path."""

    def __init__(self, fn: Callable[..., int]) -> None:
        self.py_func = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self._jit: Any = None
        self._cfunc: Any = None

    @property
    def jit(self) -> Callable[..., int]:
        """The rule compiled as a numba function (called from Python)."""
        if self._jit is None:
            self._jit = jit.function(self.py_func)
        return self._jit  # type: ignore[no-any-return]

    @property
    def cfunc(self) -> Any:
        """The rule compiled as a C callback of :data:`RULE_SIGNATURE` (called by kernels)."""
        if self._cfunc is None:
            self._cfunc = jit.cfunc(self.py_func, RULE_SIGNATURE)
        return self._cfunc

    def __call__(self, *args: Any) -> int:
        """Run the compiled rule."""
        return int(self.jit(*args))

    def __repr__(self) -> str:
        return f"<quote rule {self.py_func.__module__}.{self.py_func.__qualname__}>"


def quote_rule(fn: Callable[..., int]) -> QuoteRule:
    """Mark ``fn`` as a quoting rule (see the module docstring for its arguments)."""
    return QuoteRule(fn)


class QuotingStrategy(Strategy):
    """A strategy quoting one instrument with a compiled :class:`QuoteRule`.

    Subclasses set :attr:`rule`, declare their parameters with :data:`MIN_INTERVAL` among
    them (``params = (Param(...), ..., MIN_INTERVAL)``; every other parameter is passed to the
    rule as a float, in order) and, when the rule keeps state, :attr:`state_size`. The fast
    backtest runs the rule inside its replay loop; live and in the generic backtest
    :meth:`on_book` runs it through the order manager. Python handlers (``on_fill``,
    ``on_timer``) may be added as on any strategy; in the fast path they run between chunks.
    """

    name: ClassVar[str] = "quoting strategy"
    params: ClassVar[tuple[Param, ...]] = (MIN_INTERVAL,)
    #: The compiled rule.
    rule: ClassVar[QuoteRule]
    #: Length of the rule's ``state`` array.
    state_size: ClassVar[int] = 0

    def __init__(self, strategy_id: int, symbols: Sequence[str], **params: object) -> None:
        if not isinstance(getattr(type(self), "rule", None), QuoteRule):
            raise TypeError(
                f"{type(self).__name__}: a QuotingStrategy needs a `rule` marked with @quote_rule"
            )
        if len(symbols) != 1:
            raise ValueError(
                f"strategy {strategy_id}: a quoting strategy trades one instrument, "
                f"got {len(symbols)} ({', '.join(symbols)})"
            )
        super().__init__(strategy_id, symbols, **params)
        self.rule_state = np.zeros(max(int(self.state_size), 0), np.float64)
        self._quotes = np.zeros(QUOTES_N, np.int64)
        self._params = self.rule_params()  # the interval in ns, then the rule's own
        self._working: dict[Side, OrderView] = {}  # side -> the quote's latest view
        self._asked: dict[Side, int] = {}  # side -> the price last requested
        self._next_call = 0
        self._last_touch = (NO_QUOTE, NO_QUOTE)
        self._dirty = True
        self._wake = 0

    # ------------------------------------------------------------------ the rule's inputs
    def own_params(self) -> tuple[Param, ...]:
        """Return the parameters passed to the rule, in order."""
        return tuple(p for p in self.params if p.name != MIN_INTERVAL.name)

    def rule_params(self) -> npt.NDArray[np.float64]:
        """Return the kernel's parameter vector: the minimum interval in ns, then the own ones."""
        interval = float(self.p.get(MIN_INTERVAL.name, 0.0))
        values = [round(interval * 1e6)] + [float(self.p[p.name]) for p in self.own_params()]
        return np.asarray(values, np.float64)

    # ------------------------------------------------------------------ handlers
    def on_book(self, book: BookView) -> None:
        """Run the rule (under the gates of the module docstring) and carry its answer out."""
        bid, ask = book.best_bid(), book.best_ask()
        if bid is None or ask is None:
            return
        now = self.ctx.now_ns()
        if now < self._next_call:
            return
        interval = int(self._params[0])
        if interval > 0:
            self._next_call = now + interval
        touch = (bid[0], ask[0])
        if touch == self._last_touch and not self._dirty and now < self._wake:
            return
        self._last_touch = touch
        self._dirty = False
        q = self._quotes
        q[:] = 0
        for side, slot in ((Side.BUY, WORKING_BID), (Side.SELL, WORKING_ASK)):
            q[slot] = self._asked[side] if side in self._working else NO_QUOTE
        symbol = book.symbol
        wake = int(
            self.rule.jit(
                now,
                touch[0],
                touch[1],
                self.position(symbol),
                q,
                self._params[1:],
                self.rule_state,
            )
        )
        self._wake = wake if wake > now else _NEVER
        self._carry_out(symbol, Side.BUY, int(q[BID_PX]), int(q[BID_QTY]))
        self._carry_out(symbol, Side.SELL, int(q[ASK_PX]), int(q[ASK_QTY]))

    def _carry_out(self, symbol: str, side: Side, px: int, qty: int) -> None:
        order = self._working.get(side)
        if order is None:
            if qty > 0:
                view = (self.buy if side is Side.BUY else self.sell)(symbol, qty, px)
                if view.status not in TERMINAL:
                    self._working[side] = view
                    self._asked[side] = px
            return
        if order.pending:
            return
        if qty <= 0:
            self.cancel(order.order_id)
        elif px != self._asked[side] and self.replace(order.order_id, px_ticks=px):
            self._asked[side] = px

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Keep the framework's tracking in ``on_order``/``on_fill`` a subclass overrides.

        A subclass may add its own ``on_order``/``on_fill`` without calling ``super()``; the
        quotes are still tracked (the tracking runs first, and twice is harmless).
        """
        super().__init_subclass__(**kwargs)
        for name, track in (("on_order", _track_order), ("on_fill", _track_fill)):
            user = cls.__dict__.get(name)
            if user is None or getattr(user, "_tracks_quotes", False):
                continue
            setattr(cls, name, _with_tracking(user, track))

    def on_order(self, order: OrderView) -> None:
        """Track the quotes; one that is done or answered wakes the rule at the next update."""
        _track_order(self, order)

    def on_fill(self, fill: OrderFilled) -> None:
        """Wake the rule at the next update: the position changed."""
        _track_fill(self, fill)

    def on_parameters(self, changed: dict[str, Any]) -> None:
        """Take the new values; the rule runs at the next update with them."""
        self._params = self.rule_params()
        self._dirty = True
        self._next_call = 0


def _track_order(self: QuotingStrategy, order: OrderView) -> None:
    # The rule wakes for what the fast path wakes for: a quote done, or the answer to a
    # cancel or replace (not the acknowledgement of a new quote, which changes nothing it sees).
    side = Side(order.side)
    mine = self._working.get(side)
    if mine is None or mine.order_id != order.order_id:
        if order.status in TERMINAL:
            self._dirty = True
        return
    if order.status in TERMINAL:
        del self._working[side]
        self._dirty = True
    else:
        if mine.pending and not order.pending:
            self._dirty = True
        self._working[side] = order


def _track_fill(self: QuotingStrategy, fill: OrderFilled) -> None:
    self._dirty = True


def _with_tracking(user: Callable[..., None], track: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(user)
    def handler(self: QuotingStrategy, arg: Any) -> None:
        track(self, arg)
        user(self, arg)

    handler._tracks_quotes = True  # type: ignore[attr-defined]
    return handler
