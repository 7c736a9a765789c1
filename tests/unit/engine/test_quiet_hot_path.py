# SPDX-License-Identifier: MIT
"""The trading path builds no log record and no event that nobody would receive."""

import logging
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import numpy as np
import pytest

from engine.bus import MessageBus
from engine.clock import LiveClock
from engine.enums import Side
from engine.events import BookUpdated, OrderChanged, TradeReported
from engine.instruments import Instrument
from engine.marketdata import MarketData
from engine.oms.router import OrderRouter
from engine.types import BUY, L2_EVENT_DTYPE, L2_SET, L2_TRADE, SELL
from engine.venues.fix.adapter import FixVenue
from tests.factories import fix_pair

ES = Instrument(symbol="ESZ6", tick_size=Decimal("0.25"), multiplier=Decimal(50))


class CountingBus(MessageBus):
    """A bus that counts what is published (delivered or not)."""

    __slots__ = ("published",)

    def __init__(self) -> None:
        super().__init__()
        self.published: list[type[Any]] = []

    def publish(self, msg: object) -> None:
        self.published.append(type(msg))
        super().publish(msg)


@pytest.fixture
def records() -> Iterator[list[logging.LogRecord]]:
    """Every LogRecord built in the test, at any level, whatever the handlers."""
    made: list[logging.LogRecord] = []
    factory = logging.getLogRecordFactory()

    def counting(*args: Any, **kw: Any) -> logging.LogRecord:
        record = factory(*args, **kw)
        made.append(record)
        return record

    root = logging.getLogger()
    old = root.level
    root.setLevel(logging.DEBUG)  # everything enabled: a record not built was never asked for
    logging.setLogRecordFactory(counting)
    try:
        yield made
    finally:
        logging.setLogRecordFactory(factory)
        root.setLevel(old)


def trading_path(bus: MessageBus) -> tuple[MarketData, OrderRouter, list[bytes]]:
    """Market data and an order router sending over a logged-on FIX session into a list."""
    clock = LiveClock()
    venue = FixVenue(clock)
    ours, _theirs, out = fix_pair(venue, clock)
    venue.bind(ours)
    router = OrderRouter(bus, clock)
    venue.route(ES, router.add_instrument(ES, venue))
    market = MarketData(["ESZ6"], bus, clock, n_levels=256, centres=[24_000])
    return market, router, out


def run_path(market: MarketData, router: OrderRouter, n: int) -> None:
    rows = np.zeros(3, L2_EVENT_DTYPE)
    rows["px"], rows["side"], rows["kind"] = (23_999, 24_001, 24_001), (BUY, SELL, SELL), (
        L2_SET, L2_SET, L2_TRADE,
    )  # fmt: skip
    for i in range(n):
        rows["qty"] = (5 + i % 3, 7, 1)
        market.apply(rows[:2] if i % 2 else rows)  # the small-batch path
        market.apply(np.repeat(rows, 20))  # the batch path
        router.send(
            symbol="ESZ6",
            strategy_id=1,
            side=Side.BUY if i % 2 else Side.SELL,
            qty_lots=1,
            px_ticks=24_000 + i % 7,
        )


def test_nothing_is_built_when_nobody_listens(records: list[logging.LogRecord]) -> None:
    bus = CountingBus()
    market, router, out = trading_path(bus)
    records.clear()  # the logon logged (session level): counted from the first tick on
    run_path(market, router, 200)
    assert len(out) == 200  # the orders did go out
    assert market.last_trade_px["ESZ6"] == 24_001  # trades still seen
    assert bus.published == []
    assert records == []


@pytest.mark.parametrize("event", [BookUpdated, TradeReported, OrderChanged])
def test_a_listener_gets_its_events(records: list[logging.LogRecord], event: type[Any]) -> None:
    bus = CountingBus()
    market, router, _ = trading_path(bus)
    got: list[object] = []
    handler: Callable[[Any], None] = got.append
    bus.subscribe(event, handler)
    records.clear()
    run_path(market, router, 10)
    assert got
    assert all(type(e) is event for e in got)
    assert set(bus.published) == {event}
    assert records == []
