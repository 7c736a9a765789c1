# SPDX-License-Identifier: MIT
"""200 strategies with int64 ids in one engine: each trades, and each keeps its own position.

An engine with the demo's in-process simulator (its participants only: no market maker of
ours, no risk limits) runs on the test's asyncio loop with 200 small strategies, half of them
added while the engine runs (the position book grows on demand; there is no 63-strategy cap).
Every strategy id is above 2^31.
"""

import asyncio

import pytest

from engine.clock import LiveClock
from engine.core import Engine
from engine.demo import DEMO_LISTINGS, SimPump
from engine.desk import TradingDesk
from engine.enums import EngineState, OrdStatus, TimeInForce
from engine.events import EventRecord, OrderFilled, OrderView, PositionChanged
from engine.marketdata import MarketData
from engine.sim.exchange import SimExchange
from engine.strategy.base import BookView, Strategy
from engine.venues.sim.adapter import SimVenue

pytestmark = pytest.mark.integration

N = 200
BASE_ID = 3_000_000_000


class Accumulate(Strategy):
    """Buys until it holds ``qty`` lots: IOC orders across the spread, one at a time."""

    name = "accumulate"

    def __init__(self, strategy_id: int, qty: int) -> None:
        super().__init__(strategy_id, ["ESZ6"])
        self.qty = qty
        self.filled = 0
        self.working = False

    def on_book(self, book: BookView) -> None:
        ask = book.best_ask()
        if self.working or self.filled >= self.qty or ask is None:
            return
        view = self.buy("ESZ6", self.qty - self.filled, ask[0] + 2, time_in_force=TimeInForce.IOC)
        self.working = view.status is not OrdStatus.REJECTED

    def on_order(self, order: OrderView) -> None:
        if order.status in (
            OrdStatus.FILLED,
            OrdStatus.CANCELED,
            OrdStatus.EXPIRED,
            OrdStatus.REJECTED,
        ):
            self.working = False

    def on_fill(self, fill: OrderFilled) -> None:
        self.filled += fill.last_qty_lots


def _qty(i: int) -> int:
    # One side only: opposite orders of one engine would meet the venue's self-trade prevention.
    return i % 3 + 1


def _engine() -> tuple[Engine, TradingDesk]:
    engine = Engine(LiveClock(), engine_id="many")
    loop = asyncio.get_running_loop()
    exchange = SimExchange(DEMO_LISTINGS, seed=5)
    market = MarketData(
        [x.instrument.symbol for x in DEMO_LISTINGS],
        engine.bus,
        engine.clock,
        centres=[x.start_px_ticks for x in DEMO_LISTINGS],
    )
    desk = TradingDesk(engine.bus, engine.clock)
    desk.set_market_data(market)
    venue = SimVenue(exchange, engine.clock, loop.call_soon, name="SIM")
    for listing in DEMO_LISTINGS:
        desk.add_instrument(listing.instrument, venue)
    engine.add_component(desk)
    engine.add_component(SimPump(exchange, venue.deliver, market.apply))
    return engine, desk


async def test_200_strategies_with_int64_ids_keep_their_positions_apart() -> None:
    engine, desk = _engine()
    records: list[EventRecord] = []
    engine.add_sink(records.append)
    strategies = [Accumulate(BASE_ID + i, _qty(i)) for i in range(N)]
    for s in strategies[: N // 2]:
        desk.add_strategy(s, autostart=True)
    task = asyncio.create_task(engine.run())
    loop = asyncio.get_running_loop()

    async def until(pred: object, what: str, timeout_s: float = 30.0) -> None:
        assert callable(pred)
        deadline = loop.time() + timeout_s
        while not pred():
            if loop.time() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            await asyncio.sleep(0.02)

    try:
        await until(lambda: engine.state is EngineState.RUNNING, "the engine")
        for s in strategies[N // 2 :]:  # added to the running engine: the book grows
            desk.add_strategy(s)
            desk.runner.start(s.strategy_id)
        await until(
            lambda: all(s.filled == s.qty and not s.working for s in strategies),
            "every strategy to hold its position",
        )
        await asyncio.sleep(0.1)  # the last position events
    finally:
        engine.request_stop()
        await task

    assert desk.positions is not None
    assert desk.positions.n_strategies >= N + 1
    fills: dict[int, int] = {}
    last_position: dict[int, int] = {}
    for r in records:
        ev = r.event
        if isinstance(ev, OrderFilled) and ev.symbol == "ESZ6":
            fills[ev.strategy_id] = fills.get(ev.strategy_id, 0) + int(ev.side) * ev.last_qty_lots
        elif isinstance(ev, PositionChanged) and ev.symbol == "ESZ6":
            last_position[ev.strategy_id] = ev.qty_lots
    # Each strategy's fills, and only its fills, make its position: in the events clients see
    # (ids carried whole, no int32 truncation) and in the engine's position book.
    assert fills == {s.strategy_id: s.qty for s in strategies}
    assert last_position == fills
    for s in strategies:
        assert desk.position_of(s.strategy_id, "ESZ6").qty == s.qty, s.strategy_id
