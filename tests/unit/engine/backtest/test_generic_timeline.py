# SPDX-License-Identifier: MIT
"""The generic path's timeline: what the strategies see, and when.

The generic backtest hands the strategies a venue update's rows in one step and calls them at
its last row; trades call them only when a strategy handles trades. These tests hold that to a
reference built row by row: the book each ``on_book`` call sees is the book after the rows of
exactly one more update, every trade reaches a strategy that listens (stamped when it is seen),
and listening to trades changes nothing else.
"""

from decimal import Decimal
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from engine.backtest.generic import GenericBacktest
from engine.backtest.models import ConstantLatency
from engine.backtest.rules import market_rules
from engine.backtest.synthetic import random_walk_l2
from engine.book.l2 import L2Books
from engine.events import TradeReported
from engine.instruments import Instrument
from engine.strategy.base import BookView
from engine.strategy.examples import MarketMaker
from engine.types import L2_TRADE

INST = Instrument(symbol="T", tick_size=Decimal("1"))
FEED_NS = 300_000


def updates(seed: int) -> npt.NDArray[np.void]:
    """A random walk whose rows share times in 1 ms buckets: venue updates of several rows."""
    ev = random_walk_l2(6_000, seed=seed, levels=6, p_trade=0.15, gap_ns=250_000.0)
    ev["ts"] = ev["ts"] // 1_000_000 * 1_000_000
    return ev


class Watcher(MarketMaker):
    """The market maker, keeping the touch it was shown at each call."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.seen: list[tuple[Any, Any]] = []

    def on_book(self, book: BookView) -> None:
        self.seen.append((book.best_bid(), book.best_ask()))
        super().on_book(book)


class Listener(Watcher):
    """The same, and it keeps every trade it hears."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.trades: list[tuple[int, int, int]] = []

    def on_trade(self, trade: TradeReported) -> None:
        self.trades.append((trade.ts_event, trade.px_ticks, trade.qty_lots))


def run(cls: type[Watcher], ev: npt.NDArray[np.void], feed: int) -> tuple[Watcher, Any]:
    s = cls(1, ["T"], half_spread_ticks=1, requote_ticks=1)
    lat = ConstantLatency(feed_ns=feed, order_ns=200_000, response_ns=200_000)
    g = GenericBacktest([s], INST, latency=lat).run(ev)
    return s, g


@pytest.mark.parametrize("feed", [0, FEED_NS], ids=["same-book", "feed-latency"])
@pytest.mark.parametrize("seed", [1, 7])
def test_each_book_call_sees_exactly_one_more_update(seed: int, feed: int) -> None:
    ev = updates(seed)
    rules = market_rules(ev, "l2")
    ends = [m for m in np.flatnonzero(rules.group_end).tolist() if m >= rules.live_from]
    assert len(ends) > 1000
    assert len(ends) < ev.shape[0] * 0.8
    s, g = run(Watcher, ev, feed)
    assert g.orders > 5
    assert g.fills > 5
    ref = L2Books(1, 4096, centre=int(ev["px"][0]))
    ref.apply(ev[: rules.live_from])
    want = []
    done = rules.live_from
    for m in ends:
        ref.apply(ev[done : m + 1])
        done = m + 1
        want.append((ref.best_bid(0), ref.best_ask(0)))
    if feed == 0:  # the strategies read the venue's own book, own orders' fills included
        assert len(s.seen) == len(want)
    else:
        assert s.seen == want


def test_trades_reach_a_strategy_that_listens_and_change_nothing_else() -> None:
    ev = updates(3)
    rules = market_rules(ev, "l2")
    plain, g_plain = run(Watcher, ev, FEED_NS)
    ear, g_ear = run(Listener, ev, FEED_NS)
    rows = np.flatnonzero(ev["kind"] == L2_TRADE)
    rows = rows[rows >= rules.live_from]
    assert len(rows) > 500
    assert isinstance(ear, Listener)
    assert ear.trades == [
        (int(ev["ts"][r]) + FEED_NS, int(ev["px"][r]), int(ev["qty"][r])) for r in rows
    ]
    assert ear.seen == plain.seen
    assert (g_ear.orders, g_ear.fills, g_ear.cash_ticks) == (
        g_plain.orders,
        g_plain.fills,
        g_plain.cash_ticks,
    )
