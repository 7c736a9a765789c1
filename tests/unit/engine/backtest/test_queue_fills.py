# SPDX-License-Identifier: MIT
"""A resting order fills only after the quantity ahead of it traded or was canceled.

Hand-made streams, replayed through both backtest paths: the generic one (a Python strategy
through the production order manager) and the compiled fast path.
"""

from decimal import Decimal
from typing import Any

import numpy as np
import pytest

from engine.backtest.fast import FastBacktest
from engine.backtest.generic import GenericBacktest
from engine.backtest.models import ConstantLatency
from engine.enums import Side
from engine.events import OrderFilled
from engine.instruments import Instrument
from engine.matching.models import ConservativeQueue, PowerProbQueue
from engine.strategy.base import BookView, Strategy
from engine.strategy.examples import CompiledMarketMaker
from engine.types import (
    BUY,
    L2_EVENT_DTYPE,
    L2_SET,
    L2_TRADE,
    L3_ADD,
    L3_CANCEL,
    L3_EVENT_DTYPE,
    L3_EXECUTE,
    SELL,
)

INST = Instrument(symbol="T", tick_size=Decimal("0.25"))


def l2(rows: list[tuple[int, int, int, int, int]]) -> np.ndarray:
    """Rows ``(ts, kind, side, px, qty)``."""
    a = np.zeros(len(rows), L2_EVENT_DTYPE)
    for i, (ts, kind, side, px, qty) in enumerate(rows):
        a[i] = (ts, px, qty, 0, side, kind)
    return a


def l3(rows: list[tuple[int, int, int, int, int, int]]) -> np.ndarray:
    """Rows ``(ts, action, order_id, side, px, qty)``."""
    a = np.zeros(len(rows), L3_EVENT_DTYPE)
    for i, (ts, action, oid, side, px, qty) in enumerate(rows):
        a[i] = (ts, oid, px, qty, side, action)
    return a


class OneBid(Strategy):
    """Send one buy of 1 lot at 100 once both sides exist; record fills with their time."""

    name = "one bid"

    def __init__(self, strategy_id: int, symbols: list[str], **params: Any) -> None:
        super().__init__(strategy_id, symbols, **params)
        self.sent = False
        self.fills: list[tuple[int, int, int]] = []

    def on_book(self, book: BookView) -> None:
        if not self.sent and book.best_bid() and book.best_ask():
            self.sent = True
            self.buy(book.symbol, 1, 100)

    def on_fill(self, fill: OrderFilled) -> None:
        self.fills.append((self.ctx.now_ns(), fill.last_px_ticks, fill.last_qty_lots))


# Five lots ahead at 100: three trade, then two, and only the next trade reaches us.
L2_TRADES = [
    (1000, L2_SET, BUY, 100, 5),
    (1000, L2_SET, SELL, 102, 5),
    (2000, L2_TRADE, SELL, 100, 3),
    (2000, L2_SET, BUY, 100, 2),
    (3000, L2_TRADE, SELL, 100, 2),
    (3000, L2_SET, BUY, 100, 0),
    (3500, L2_SET, SELL, 102, 6),
    (4000, L2_TRADE, SELL, 100, 1),
    (5000, L2_SET, SELL, 102, 7),
]


@pytest.mark.parametrize("queue", [ConservativeQueue(), PowerProbQueue(3.0)])
def test_generic_l2_fills_only_after_the_quantity_ahead_traded(queue: Any) -> None:
    s = OneBid(1, ["T"])
    GenericBacktest([s], INST, level="l2", queue=queue).run(l2(L2_TRADES))
    assert s.fills == [(4000, 100, 1)]


def test_generic_l2_cancels_ahead_count_when_the_level_shrinks_below_the_queue() -> None:
    rows = [
        (1000, L2_SET, BUY, 100, 5),
        (1000, L2_SET, SELL, 102, 5),
        (2000, L2_SET, BUY, 100, 2),  # three lots canceled: at most two are ahead now
        (3000, L2_TRADE, SELL, 100, 2),
        (3000, L2_SET, BUY, 100, 0),
        (3500, L2_SET, SELL, 102, 6),
        (4000, L2_TRADE, SELL, 100, 1),
    ]
    s = OneBid(1, ["T"])
    GenericBacktest([s], INST, level="l2", queue=ConservativeQueue()).run(l2(rows))
    assert s.fills == [(4000, 100, 1)]


def test_generic_l2_latency_delays_the_order_and_the_fill_report() -> None:
    # The order reaches the venue 1500 ns after it is sent: after the first trade, so only
    # the two lots left are ahead; the fill is reported 300 ns after it happens.
    s = OneBid(1, ["T"])
    lat = ConstantLatency(feed_ns=0, order_ns=1500, response_ns=300)
    GenericBacktest([s], INST, level="l2", latency=lat).run(l2(L2_TRADES))
    assert s.fills == [(4300, 100, 1)]


# Exact FIFO: ids 1 (3 lots) and 2 (2 lots) are ahead, id 4 joins behind us.
L3_STREAM = [
    (1000, L3_ADD, 1, BUY, 100, 3),
    (1000, L3_ADD, 2, BUY, 100, 2),
    (1000, L3_ADD, 3, SELL, 102, 5),
    (2000, L3_CANCEL, 1, BUY, 100, 0),
    (3000, L3_EXECUTE, 2, BUY, 100, 1),
    (4000, L3_ADD, 4, BUY, 100, 4),
    (5000, L3_EXECUTE, 2, BUY, 100, 1),
    (6000, L3_EXECUTE, 4, BUY, 100, 2),
    (7000, L3_ADD, 5, SELL, 102, 1),
]


def test_generic_l3_fills_when_an_order_behind_executes_after_those_ahead_left() -> None:
    s = OneBid(1, ["T"])
    GenericBacktest([s], INST, level="l3").run(l3(L3_STREAM))
    assert s.fills == [(6000, 100, 1)]


def test_generic_l3_no_fill_while_quantity_is_still_ahead() -> None:
    s = OneBid(1, ["T"])
    GenericBacktest([s], INST, level="l3").run(l3(L3_STREAM[:7]))  # stops before id 4 trades
    assert s.fills == []


def _fast(level: str, ev: np.ndarray) -> np.ndarray:
    mm = CompiledMarketMaker(1, ["T"], half_spread_ticks=1, skew_ticks_per_lot=0.0)
    res = FastBacktest(mm, INST, level=level, queue=ConservativeQueue()).run(ev)  # type: ignore[arg-type]
    return res.fills


def test_fast_l2_bid_fills_only_after_the_quantity_ahead_traded() -> None:
    fills = _fast("l2", l2(L2_TRADES))
    bids = fills[fills["side"] == BUY]
    assert bids["ts"].tolist()[:1] == [4000]
    assert bids["px"].tolist()[:1] == [100]


def test_fast_l3_bid_fills_when_an_order_behind_executes() -> None:
    fills = _fast("l3", l3(L3_STREAM))
    bids = fills[fills["side"] == BUY]
    assert bids["ts"].tolist() == [6000]
    assert len(_fast("l3", l3(L3_STREAM[:7]))) == 0


def test_generic_and_fast_paths_fill_the_market_maker_alike_on_l3() -> None:
    got: list[tuple[int, int]] = []

    class Recording(CompiledMarketMaker):
        def on_fill(self, fill: OrderFilled) -> None:
            got.append((fill.ts_event, fill.last_px_ticks))

    gen = Recording(1, ["T"], half_spread_ticks=1, skew_ticks_per_lot=0.0)
    GenericBacktest([gen], INST, level="l3").run(l3(L3_STREAM))
    fast = _fast("l3", l3(L3_STREAM))
    assert got == list(zip(fast["ts"].tolist(), fast["px"].tolist(), strict=True))
    assert Side(int(fast["side"][0])) is Side.BUY
