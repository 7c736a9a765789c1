# SPDX-License-Identifier: MIT
"""The demo on the simulator's ITCH feed: market data over loopback multicast, orders over FIX.

The engine's books come only from ITCH 5.0 over MoldUDP64 (A and B groups, re-requests): they
equal the simulator's own books, and the demo's market maker, which quotes from them, trades.
"""

import asyncio

import pytest

from engine.clock import LiveClock
from engine.core import Engine
from engine.demo import DemoItchFeed, SimPump, build_demo
from engine.events import OrderFilled
from engine.feeds.multicast import Group, open_receiver

pytestmark = [pytest.mark.integration]


def test_the_demo_quotes_and_trades_on_market_data_from_the_itch_feed() -> None:
    try:
        open_receiver(Group("239.255.77.9", 40_999)).close()
    except OSError as e:
        pytest.skip(f"no multicast on loopback here: {e}")

    async def run() -> None:
        engine = Engine(LiveClock(), engine_id="itch-demo")
        desk = build_demo(engine, market_data="itch")
        feed = next(c for c in engine.components if isinstance(c, DemoItchFeed))
        pump = next(c for c in engine.components if isinstance(c, SimPump))
        fills: list[OrderFilled] = []
        engine.bus.subscribe(OrderFilled, fills.append)
        task = asyncio.get_running_loop().create_task(engine.run())
        try:
            async with asyncio.timeout(20):
                while len(fills) < 3:  # noqa: ASYNC110  (the engine runs on this loop)
                    await asyncio.sleep(0.05)
            pump.interval_s = 3600.0  # the participants stop after their current step
            market = desk.market
            assert market is not None

            def books() -> tuple[list[object], list[object]]:
                ours, theirs = [], []
                for symbol in market.symbols:
                    bids, asks = pump.exchange.depth(symbol, 20)
                    got_b, got_a = market.book(symbol).top(20)  # type: ignore[union-attr]
                    ours.append(
                        ([tuple(r) for r in got_b.tolist()], [tuple(r) for r in got_a.tolist()])
                    )
                    theirs.append(([(p, q) for p, q in bids if q], [(p, q) for p, q in asks if q]))
                return ours, theirs

            # The market maker still re-quotes over FIX while its orders are answered: compare
            # at a quiet moment, every message published and received.
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 10
            while True:
                await asyncio.sleep(0.05)
                feed.flush()
                await asyncio.sleep(0.02)
                arb = feed.receiver.arbiter
                caught_up = arb.next_seq == feed.publisher.next_seq and arb.gap is None
                ours, theirs = books()
                if (caught_up and ours == theirs) or loop.time() > deadline:
                    break
            assert ours == theirs
            assert feed.market_data.unknown_orders == 0
            assert feed.receiver.arbiter.stats.lost_messages == 0
        finally:
            engine.request_stop()
            await task

    asyncio.run(run())
