# SPDX-License-Identifier: MIT
"""The simulator's market as CME MDP 3.0 over loopback multicast, and receivers that recover.

A simulated exchange moves; its :class:`~engine.sim.mdp3_feed.SimMdp3Feed` messages go out
on an incremental A/B channel and, every few steps, a snapshot loop
(:class:`~engine.feeds.sbe.live.Mdp3Publisher`). Receivers
(:class:`~engine.feeds.sbe.live.Mdp3Receiver`) join over real sockets: one late, after the
market has moved; one from the start on a channel that loses packets on both feeds. Both
end with every instrument's ten levels a side and its resting orders equal to the
simulator's own, in their own books and in the ``MarketData`` they feed.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from pathlib import Path

import pytest

from engine.bus import MessageBus
from engine.clock import TestClock
from engine.feeds.multicast import Group
from engine.feeds.sbe import load_schema
from engine.feeds.sbe.live import Mdp3Books, Mdp3Publisher, Mdp3Receiver
from engine.marketdata import MarketData
from engine.sim.exchange import FlowConfig, SimExchange, SimInstrument
from engine.sim.mdp3_feed import SimMdp3Feed
from engine.types import BUY, SELL
from tests.conftest import SHARED
from tests.factories import free_udp_port, make_instrument, multicast_or_skip

pytestmark = [pytest.mark.integration]

SCHEMA = SHARED / "data/cme_mdp3_sbe/schema/Cme.Futures.Mdp3.Sbe.v1.9.xml"
SYMBOLS = ("ESZ6", "NQZ6", "CLF7")
STARTS = (20_000, 80_000, 30_000)


@pytest.fixture(scope="module", autouse=True)
def _loopback_multicast() -> None:
    if not Path(SCHEMA).exists():
        pytest.skip(f"{SCHEMA} is not here")
    multicast_or_skip()


class _Market:
    """A simulated exchange, its MDP 3.0 feed and a publisher on fresh groups."""

    def __init__(self, base: int) -> None:
        self.schema = load_schema(SCHEMA)
        flow = FlowConfig(events_per_second=3_000, volatility_ticks=3.0)
        self.instruments = [make_instrument(s) for s in SYMBOLS]
        self.ex = SimExchange(
            [
                SimInstrument(instrument=ins, start_px_ticks=px, flow=flow)
                for ins, px in zip(self.instruments, STARTS, strict=True)
            ],
            seed=5,
        )
        self.feed = SimMdp3Feed(self.ex, self.schema, ts=1)
        self.ex.order_feed = self.feed
        self.ex.seed_books(ts=2)
        self.a = Group(f"239.255.{base}.1", free_udp_port())
        self.b = Group(f"239.255.{base}.2", free_udp_port())
        self.snap = Group(f"239.255.{base}.3", free_udp_port())
        self.pub = Mdp3Publisher(self.a, self.b, self.snap)
        self.t = 10

    def step(self, n: int = 1) -> None:
        for _ in range(n):
            self.t += 1_000_000
            self.ex.step(self.t)
            self.pub.publish(self.feed.take(), self.t)

    def snapshot_loop(self) -> None:
        self.pub.send_snapshot_loop(self.feed.snapshot(self.t, self.pub.last_seq), self.t)

    def receiver(self) -> tuple[Mdp3Books, Mdp3Receiver, MarketData]:
        clock = TestClock(1)
        market = MarketData(list(SYMBOLS), MessageBus(), clock, n_levels=4000, centres=list(STARTS))
        books = Mdp3Books(self.schema, market, clock)
        for ins in self.instruments:
            books.add_instrument(ins)
        rx = Mdp3Receiver(books, self.a, self.b, self.snap, gap_timeout_ns=1_000_000)
        return books, rx, market

    def assert_books_equal(self, books: Mdp3Books, market: MarketData) -> None:
        for i, sym in enumerate(SYMBOLS):
            sid = books.security_id(sym)
            assert sid == self.feed.security_ids[i]
            bids, asks = self.ex.depth(sym, 10)
            assert [(p, q) for p, q, _n in books.levels(sid, BUY)] == bids, sym
            assert [(p, q) for p, q, _n in books.levels(sid, SELL)] == asks, sym
            # the market-by-order book adds up to the simulator's whole depth
            full_b, full_a = self.ex.depth(sym, 100_000)
            by_level: defaultdict[tuple[int, int], int] = defaultdict(int)
            for side, px, qty in books.orders(sid).values():
                by_level[(side, px)] += qty
            assert sorted((p, q) for (s, p), q in by_level.items() if s == BUY) == sorted(full_b)
            assert sorted((p, q) for (s, p), q in by_level.items() if s == SELL) == sorted(full_a)
            # and the MarketData it fed shows the same ten levels
            mb, ma = market.books.top(market.index[sym], 10)
            assert [tuple(r) for r in mb.tolist() if r[1]] == bids, sym
            assert [tuple(r) for r in ma.tolist() if r[1]] == asks, sym


async def _caught_up(m: _Market, books: Mdp3Books, rx: Mdp3Receiver, within_s: float) -> None:
    """Send snapshot loops until the receiver is in sync and has every packet sent."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    while loop.time() < deadline:
        if books.synced and rx.arbiter.next_seq == m.pub.next_seq:
            return
        m.snapshot_loop()
        await asyncio.sleep(0.02)
    raise AssertionError(
        f"not caught up: synced={books.synced}, next {rx.arbiter.next_seq} of "
        f"{m.pub.next_seq}, {books.stats}"
    )


def test_a_late_joiner_recovers_from_the_snapshot_loop_and_follows_the_market() -> None:
    async def run() -> tuple[_Market, Mdp3Books, Mdp3Receiver, MarketData]:
        m = _Market(61)
        m.step(200)  # the market moves before anyone listens
        books, rx, market = m.receiver()
        try:
            await rx.start()
            assert books.wants_snapshots
            assert rx.snapshot_joins == 1
            for _ in range(100):  # buffered: no snapshot loop yet
                m.step()
                await asyncio.sleep(0.001)
            assert not books.synced
            assert books.stats.packets > 50
            # the loop's snapshots include every buffered packet: none may be applied again
            await _caught_up(m, books, rx, 10.0)
            m.assert_books_equal(books, market)
            for k in range(100):  # then it follows the incremental feed alone
                m.step()
                if k % 25 == 10:
                    m.snapshot_loop()  # (ignored: in sync)
                await asyncio.sleep(0.001)
            await _caught_up(m, books, rx, 10.0)
        finally:
            rx.close()
            m.pub.close()
        return m, books, rx, market

    m, books, rx, market = asyncio.run(run())
    assert books.stats.recoveries == 1
    assert books.stats.snapshots_used == len(SYMBOLS)
    assert rx.arbiter.stats.lost_messages == 0
    assert books.stats.messages > 1_000
    assert books.stats.off_grid == books.stats.bad_levels == books.stats.decode_issues == 0
    assert rx.arbiter.stats.duplicates[1] > 0  # feed B's copies were dropped as such
    m.assert_books_equal(books, market)
    assert {books.status(sid) for sid in m.feed.security_ids} == {17}  # ReadyToTrade


def test_a_receiver_that_loses_packets_on_both_feeds_recovers_each_time() -> None:
    lost = {seq for seq in range(60, 350) if seq % 45 == 0} | {301, 302, 303}

    async def run() -> tuple[_Market, Mdp3Books, Mdp3Receiver, MarketData]:
        m = _Market(62)
        books, rx, market = m.receiver()
        try:
            await rx.start()
            m.pub.drop = lambda feed, seq: seq in lost or (feed == 1 and seq % 7 == 0)
            m.step()
            await asyncio.sleep(0.01)
            for k in range(300):
                m.step()
                if k % 10 == 5:
                    m.snapshot_loop()
                await asyncio.sleep(0.002)
            assert m.pub.last_seq > 350, "the drops above must fall inside the run"
            await _caught_up(m, books, rx, 10.0)
            # a last loss: the packets after it are buffered and all in the next loop's snapshots
            last = m.pub.next_seq
            lost.add(last)
            m.step(20)
            await asyncio.sleep(0.05)
            assert not books.synced
            m.pub.drop = None
            await _caught_up(m, books, rx, 10.0)
        finally:
            rx.close()
            m.pub.close()
        return m, books, rx, market

    m, books, rx, market = asyncio.run(run())
    st = rx.arbiter.stats
    assert st.lost_messages >= len(lost)  # each declared lost (no feed had it)
    assert books.stats.recoveries >= 2  # the start, and after the losses
    assert rx.snapshot_joins >= 2  # the loop is joined to recover, left in between
    assert st.duplicates[0] + st.duplicates[1] > 0
    m.assert_books_equal(books, market)
