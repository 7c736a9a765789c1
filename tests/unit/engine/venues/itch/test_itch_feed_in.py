# SPDX-License-Identifier: MIT
"""ITCH market data into the engine's books: the simulator's feed, directly and over multicast."""

import asyncio
import socket

import pytest

from engine.bus import MessageBus
from engine.clock import TestClock
from engine.enums import OrdType, Side, TimeInForce
from engine.events import TradeReported
from engine.feeds.arbiter import MoldUdp64
from engine.feeds.multicast import FeedReceiver, Group, MoldPublisher, open_receiver
from engine.marketdata import MarketData
from engine.sim.exchange import FlowConfig, SimExchange, SimInstrument
from engine.sim.itch_feed import SimItchFeed
from engine.venues.itch.feed import ItchMarketData
from tests.factories import make_instrument

SYMBOLS = ("ESZ6", "NQZ6")


def _exchange() -> SimExchange:
    flow = FlowConfig(events_per_second=3_000, volatility_ticks=2.0)
    return SimExchange(
        [
            SimInstrument(instrument=make_instrument(s), start_px_ticks=px, flow=flow)
            for s, px in zip(SYMBOLS, (20_000, 80_000), strict=True)
        ],
        seed=3,
    )


def _market() -> tuple[MarketData, ItchMarketData, list[TradeReported]]:
    bus = MessageBus()
    trades: list[TradeReported] = []
    bus.subscribe(TradeReported, trades.append)
    md = MarketData(list(SYMBOLS), bus, TestClock(), n_levels=4_000, centres=[20_000, 80_000])
    feed = ItchMarketData(md, TestClock())
    for s in SYMBOLS:
        feed.add_instrument(make_instrument(s))
    return md, feed, trades


def _assert_same(ex: SimExchange, md: MarketData) -> None:
    for s in SYMBOLS:
        bids, asks = ex.depth(s, 50)
        got_b, got_a = md.book(s).top(50)  # type: ignore[union-attr]
        assert [tuple(r) for r in got_b.tolist()] == [(p, q) for p, q in bids if q], s
        assert [tuple(r) for r in got_a.tolist()] == [(p, q) for p, q in asks if q], s


def _trade_a_while(ex: SimExchange, steps: int, t: int, publish: object) -> int:
    for step in range(steps):
        t += 1_000_000
        ex.step(t)
        if step % 25 == 3:
            ex.submit(
                7, f"A{step}", "ESZ6", Side.BUY, 4, 19_995, OrdType.LIMIT, TimeInForce.DAY, ts=t
            )
            ex.replace(7, f"B{step}", f"A{step}", 6, 19_996, ts=t + 1)
            ex.submit(
                8,
                f"X{step}",
                "NQZ6",
                Side.SELL,
                12,
                79_000,
                OrdType.LIMIT,
                TimeInForce.IOC,
                ts=t + 2,
            )
        publish()  # type: ignore[operator]
    return t


def test_the_simulators_feed_builds_the_matchers_books_in_market_data() -> None:
    ex = _exchange()
    sim_feed = SimItchFeed(ex, ts=1)
    ex.order_feed = sim_feed
    md, feed, trades = _market()
    seq = [1]

    def publish() -> None:
        msgs = sim_feed.take()
        if msgs:
            feed.on_packets([MoldUdp64.packet(b"SESSIONAAA", seq[0], msgs)], 0)
            seq[0] += len(msgs)

    ex.seed_books(ts=2)
    _trade_a_while(ex, 300, 10, publish)
    _assert_same(ex, md)
    assert feed.unknown_orders == 0
    assert feed.off_grid == 0
    assert len(trades) == ex.trades  # every aggressive print, as the exchange counted them
    assert feed.messages > 1_000


def test_over_loopback_multicast_with_a_receiver_joining_late() -> None:
    def port() -> int:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])

    a, b = Group("239.255.50.1", port()), Group("239.255.50.2", port())
    try:
        open_receiver(a).close()
    except OSError as e:
        pytest.skip(f"no multicast on loopback here: {e}")
    ex = _exchange()
    sim_feed = SimItchFeed(ex, ts=1)
    ex.order_feed = sim_feed
    md, feed, _trades = _market()

    async def run() -> None:
        pub = MoldPublisher(b"SESSIONBBB", a, b)
        rport = await pub.serve_requests()

        def publish() -> None:
            msgs = sim_feed.take()
            if msgs:
                pub.publish(msgs)

        ex.seed_books(ts=2)
        t = _trade_a_while(ex, 100, 10, publish)  # before anyone listens
        rx = FeedReceiver(
            a, b, feed.on_packets, session=b"SESSIONBBB", recovery=("127.0.0.1", rport)
        )
        rx.arbiter.next_seq = 1
        await rx.start()
        for _ in range(10):
            t = _trade_a_while(ex, 20, t, publish)
            await asyncio.sleep(0.01)
        pub.heartbeat()
        for _ in range(200):
            await asyncio.sleep(0.01)
            if rx.arbiter.next_seq == pub.next_seq and rx.arbiter.gap is None:
                break
        rx.close()
        pub.close()
        assert rx.arbiter.stats.recovered_messages > 0
        assert rx.arbiter.stats.lost_messages == 0

    asyncio.run(run())
    _assert_same(ex, md)
    assert feed.unknown_orders == 0
