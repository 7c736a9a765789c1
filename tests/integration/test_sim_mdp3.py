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
import os
import re
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from engine.bus import MessageBus
from engine.clock import TestClock
from engine.demo import DEMO_LISTINGS
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
        if books.synced and books.last_seq == m.pub.last_seq:
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
            for _ in range(200):  # the gap is declared lost after 1 ms (more under load)
                await asyncio.sleep(0.01)
                if not books.synced:
                    break
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


# ----------------------------------------------------------------------------- as a process

QWCONSOLE = Path(sys.executable).with_name("qwconsole")
CFG = (
    "[DEFAULT]\nConnectionType=acceptor\nNonStopSession=Y\nSocketAcceptPort=0\n"
    "ResetOnLogon=Y\n\n[SESSION]\nBeginString=FIX.4.4\nSenderCompID=S\nTargetCompID=A\n"
)
MDP3_LINE = re.compile(
    r"^sim: MDP 3\.0 incremental on .* and .*; snapshot loop on 239\.255\.63\.3:\d+ on "
    r"127\.0\.0\.1 \(schema 1 v9, SecurityIDs from 100001\)$"
)


@pytest.mark.slow
def test_qwconsole_sim_publishes_mdp3_that_a_late_receiver_syncs_to(tmp_path: Path) -> None:
    a, b = Group("239.255.63.1", free_udp_port()), Group("239.255.63.2", free_udp_port())
    snap = Group("239.255.63.3", free_udp_port())
    cfg = tmp_path / "sim.cfg"
    cfg.write_text(CFG)
    proc = subprocess.Popen(
        [
            str(QWCONSOLE),
            "sim",
            "--cfg",
            str(cfg),
            "--mdp3-feed",
            f"{a.address}:{a.port},{b.address}:{b.port}",
            "--mdp3-snapshot",
            f"{snap.address}:{snap.port}",
            "--mdp3-schema",
            str(SCHEMA),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline().rstrip("\n") for _ in range(2)]
        assert any(MDP3_LINE.match(x) for x in lines), lines
        time.sleep(1.0)  # the market moves before we join
        schema = load_schema(SCHEMA)
        symbols = [x.instrument.symbol for x in DEMO_LISTINGS]  # what the simulator lists
        centres = [x.start_px_ticks for x in DEMO_LISTINGS]
        clock = TestClock(1)
        market = MarketData(symbols, MessageBus(), clock, n_levels=20_000, centres=centres)
        books = Mdp3Books(schema, market, clock)
        for x in DEMO_LISTINGS:
            books.add_instrument(x.instrument)

        async def listen() -> Mdp3Receiver:
            rx = Mdp3Receiver(books, a, b, snap)
            await rx.start()
            await asyncio.sleep(2.0)
            rx.close()
            return rx

        rx = asyncio.run(listen())
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert books.synced
    assert books.stats.recoveries == 1
    assert rx.arbiter.stats.lost_messages == 0
    assert books.stats.messages > 100
    assert books.stats.off_grid == books.stats.bad_levels == books.stats.decode_issues == 0
    for s in symbols:
        sid = books.security_id(s)
        bids, asks = books.levels(sid, BUY), books.levels(sid, SELL)
        assert min(len(bids), len(asks)) >= 5, s  # the books are deep (up to ten levels)
        assert max(len(bids), len(asks)) <= 10, s
        assert bids[0][0] < asks[0][0], s  # never crossed
        assert [p for p, _q, _n in bids] == sorted((p for p, _q, _n in bids), reverse=True)
        assert [p for p, _q, _n in asks] == sorted(p for p, _q, _n in asks)
        # the market-by-order book adds up to the market-by-price one
        by_px: defaultdict[tuple[int, int], int] = defaultdict(int)
        for side, px, qty in books.orders(sid).values():
            by_px[(side, px)] += qty
        assert [(p, q) for p, q, _n in bids] == [(p, by_px[(BUY, p)]) for p, _q, _n in bids]
        assert books.status(sid) == 17
        mb, _ma = market.books.top(market.index[s], 10)
        assert [tuple(r) for r in mb.tolist()] == [(p, q) for p, q, _n in bids]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--mdp3-feed", "239.255.63.1:31001"], "--mdp3-feed needs --mdp3-snapshot"),
        (["--mdp3-schema", "x.xml"], "--mdp3-snapshot and --mdp3-schema need --mdp3-feed"),
        (
            [
                *("--mdp3-feed", "239.255.63.1:31001", "--mdp3-snapshot", "239.255.63.3:31003"),
                *("--mdp3-schema", "/nonexistent/templates.xml"),
            ],
            "MDP 3.0 feed: ",
        ),
        (
            [
                *("--mdp3-feed", "239.255.63.1:31001", "--mdp3-schema", str(SCHEMA)),
                *("--mdp3-snapshot", "239.255.63.3:31003,239.255.63.4:31004"),
            ],
            "--mdp3-snapshot: give one GROUP:PORT",
        ),
        (
            [
                *("--mdp3-feed", "239.255.63.1:31001", "--mdp3-snapshot", "239.255.63.3:31003"),
                *("--mdp3-schema", str(SCHEMA.with_name("Cme.Futures.Mdp3.Sbe.v1.8.xml"))),
            ],
            "(v8) has no template 46: the simulator's MDP 3.0 feed needs schema version 9",
        ),
    ],
)
def test_qwconsole_sim_refuses_mdp3_options_that_do_not_go_together(
    tmp_path: Path, args: list[str], says: str
) -> None:
    cfg = tmp_path / "sim.cfg"
    cfg.write_text(CFG)
    done = subprocess.run(
        [str(QWCONSOLE), "sim", "--cfg", str(cfg), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert says in done.stderr
    assert "Traceback" not in done.stderr
