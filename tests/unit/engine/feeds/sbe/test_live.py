# SPDX-License-Identifier: MIT
"""MDP 3.0 live books (:class:`Mdp3Books`, sans-IO) on the simulator's MDP 3.0 feed.

The simulator's :class:`~engine.sim.mdp3_feed.SimMdp3Feed` is the channel: its incremental
packets and snapshot loops are handed to the books as a receiver would (in order, with
losses, late). The books must equal the matcher's own (ten levels a side, and every resting
order), whether they followed from the first packet, joined late, or lost packets; a snapshot
older than the buffered packets must not be used; statuses per instrument and per
SecurityGroup must reach the right instruments.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from engine.bus import MessageBus
from engine.clock import TestClock
from engine.enums import OrdType, Side, TimeInForce
from engine.events import TradeReported
from engine.feeds.sbe.encoder import pack_mdp3
from engine.feeds.sbe.live import Mdp3Books
from engine.feeds.sbe.schema import Schema
from engine.feeds.sbe.schema_xml import load_schema
from engine.marketdata import MarketData
from engine.sim.exchange import FlowConfig, SimExchange, SimInstrument
from engine.sim.mdp3_feed import PRE_OPEN, READY_TO_TRADE, TRADING_HALT, SimMdp3Feed
from engine.types import BUY, SELL
from tests.conftest import SHARED
from tests.factories import make_instrument

SCHEMA = SHARED / "data/cme_mdp3_sbe/schema/Cme.Futures.Mdp3.Sbe.v1.9.xml"
SYMBOLS = ("ESZ6", "NQZ6")
LIMIT, DAY, IOC = OrdType.LIMIT, TimeInForce.DAY, TimeInForce.IOC


@pytest.fixture(scope="module")
def schema() -> Schema:
    if not SCHEMA.is_file():
        pytest.skip("the shared CME schemas are absent")
    return load_schema(SCHEMA)


class _Channel:
    """A simulated market and its MDP 3.0 packets, numbered as a publisher numbers them."""

    def __init__(self, schema: Schema, groups: dict[str, str] | None = None) -> None:
        flow = FlowConfig(events_per_second=4_000, volatility_ticks=2.0)
        self.instruments = [make_instrument(s) for s in SYMBOLS]
        self.ex = SimExchange(
            [
                SimInstrument(instrument=self.instruments[0], start_px_ticks=20_000, flow=flow),
                SimInstrument(instrument=self.instruments[1], start_px_ticks=80_000, flow=flow),
            ],
            seed=11,
        )
        self.feed = SimMdp3Feed(self.ex, schema, ts=1, groups=groups)
        self.ex.order_feed = self.feed
        self.ex.seed_books(ts=2)
        self.seq = 1
        self.t = 10
        self.step_n = 0

    def run(self, steps: int) -> list[bytes]:
        for _ in range(steps):
            self.t += 1_000_000
            self.step_n += 1
            self.ex.step(self.t)
            if self.step_n % 20 == 5:  # a client rests, replaces, takes
                n = self.step_n
                self.ex.submit(7, f"A{n}", "ESZ6", Side.BUY, 4, 19_990, LIMIT, DAY, ts=self.t)
                self.ex.replace(7, f"B{n}", f"A{n}", 6, 19_991, ts=self.t + 1)
                self.ex.submit(8, f"X{n}", "NQZ6", Side.SELL, 9, 79_000, LIMIT, IOC, ts=self.t)
        return self.packets(self.feed.take())

    def packets(self, messages: list[bytes]) -> list[bytes]:
        out = pack_mdp3(messages, 1_472, self.seq, self.t)
        self.seq += len(out)
        return out

    def snapshot(self) -> list[bytes]:
        """One pass of the snapshot loop as of the last packet made."""
        return pack_mdp3(self.feed.snapshot(self.t, self.seq - 1), 1_472, 1, self.t)

    def books(self, schema: Schema, **kw: object) -> Mdp3Books:
        b = Mdp3Books(schema, **kw)  # type: ignore[arg-type]
        for ins in self.instruments:
            b.add_instrument(ins)
        return b

    def assert_equal(self, books: Mdp3Books) -> None:
        assert books.synced
        for i, sym in enumerate(SYMBOLS):
            sid = books.security_id(sym)
            bids, asks = self.ex.depth(sym, 10)
            assert [(p, q) for p, q, _n in books.levels(sid, BUY)] == bids, sym
            assert [(p, q) for p, q, _n in books.levels(sid, SELL)] == asks, sym
            full_b, full_a = self.ex.depth(sym, 100_000)
            lv: defaultdict[tuple[int, int], int] = defaultdict(int)
            for side, px, qty in books.orders(sid).values():
                lv[(side, px)] += qty
            assert sorted((p, q) for (s, p), q in lv.items() if s == BUY) == sorted(full_b)
            assert sorted((p, q) for (s, p), q in lv.items() if s == SELL) == sorted(full_a)
            assert books.orders(sid) == self.feed.orders(i)


def test_books_from_the_first_packet_equal_the_matchers(schema: Schema) -> None:
    ch = _Channel(schema)
    clock = TestClock(5)
    bus = MessageBus()
    trades: list[TradeReported] = []
    bus.subscribe(TradeReported, trades.append)
    market = MarketData(list(SYMBOLS), bus, clock, n_levels=4000, centres=[20_000, 80_000])
    books = ch.books(schema, market=market, clock=clock, from_start=True)
    assert books.synced
    assert not books.wants_snapshots
    for _ in range(8):
        books.on_packets(ch.run(25))
        ch.assert_equal(books)
        for sym in SYMBOLS:  # the MarketData fed shows the same ten levels
            bids, asks = ch.ex.depth(sym, 10)
            mb, ma = market.books.top(market.index[sym], 10)
            assert [tuple(r) for r in mb.tolist() if r[1]] == bids
            assert [tuple(r) for r in ma.tolist() if r[1]] == asks
    st = books.stats
    assert st.messages > 2_000
    assert st.recoveries == 0
    assert st.off_grid == st.bad_levels == st.decode_issues == st.skipped_entries == 0
    assert len(trades) > 20
    assert all(t.qty_lots > 0 for t in trades)
    assert {t.symbol for t in trades} == set(SYMBOLS)


def test_a_late_joiner_waits_for_a_snapshot_that_covers_its_buffer(schema: Schema) -> None:
    ch = _Channel(schema)
    books = ch.books(schema)
    early = ch.run(40)
    old_loop = ch.snapshot()  # as of a packet before the ones the joiner will buffer
    ch.run(10)  # missed
    books.on_packets(ch.run(30))
    assert not books.synced
    assert books.wants_snapshots
    books.on_snapshot_packets(old_loop)
    assert not books.synced  # too old: packets between it and the buffer were never seen
    assert books.stats.stale_snapshots == len(SYMBOLS)
    books.on_packets(ch.run(30))
    books.on_snapshot_packets(ch.snapshot()[::-1])  # any order: 53 chunks before their 52
    ch.assert_equal(books)
    books.on_packets(ch.run(50))
    ch.assert_equal(books)
    assert books.stats.recoveries == 1
    assert books.stats.skipped_entries > 0  # buffered entries the snapshot already held
    assert early  # (what came before the join was never handed over)


def test_after_lost_packets_the_books_recover_from_the_next_loop(schema: Schema) -> None:
    ch = _Channel(schema)
    books = ch.books(schema, from_start=True)
    books.on_packets(ch.run(60))
    pk = ch.run(40)
    books.on_packets(pk[:5])
    books.on_lost(4)  # pk[5:9] never came on either feed
    assert books.wants_snapshots
    books.on_packets(pk[9:])
    loop = ch.snapshot()
    later = ch.run(20)
    books.on_packets(later[:3])  # some packets after the loop's point come before it ...
    books.on_snapshot_packets(loop[: len(loop) // 2])
    assert not books.synced  # half a loop: not every instrument yet
    books.on_snapshot_packets(loop[len(loop) // 2 :])
    books.on_packets(later[3:])  # ... and the rest after
    ch.assert_equal(books)
    books.on_snapshot_packets(ch.snapshot())  # in sync: the loop is ignored
    books.on_packets(ch.run(30))
    ch.assert_equal(books)


def test_a_snapshot_without_all_its_order_chunks_is_not_used(schema: Schema) -> None:
    ch = _Channel(schema)
    books = ch.books(schema)
    mbp_only = ch.books(schema, mbo=False)  # market by price needs no order chunks
    pk = ch.run(40)
    books.on_packets(pk)
    mbp_only.on_packets(pk)
    msgs = ch.feed.snapshot(ch.t, ch.seq - 1)
    # the loop: a definition per instrument, then each one's 52 and its 53 chunks
    n = len(SYMBOLS)
    chunks = -(-len(ch.feed.orders(0)) // 30)
    assert chunks > 1  # the book is deep enough for several chunks
    cut = msgs[: n + chunks] + msgs[n + chunks + 1 :]  # its last chunk lost
    loop = pack_mdp3(cut, 1_472, 1, ch.t)
    books.on_snapshot_packets(loop)
    mbp_only.on_snapshot_packets(loop)
    assert not books.synced
    assert mbp_only.synced
    books.on_snapshot_packets(ch.snapshot())
    ch.assert_equal(books)
    for i, sym in enumerate(SYMBOLS):
        bids, _asks = ch.ex.depth(sym, 10)
        sid = ch.feed.security_ids[i]
        assert [(p, q) for p, q, _n in mbp_only.levels(sid, BUY)] == bids
        assert mbp_only.orders(sid) == {}


def test_security_status_reaches_instruments_by_id_and_by_group(schema: Schema) -> None:
    ch = _Channel(schema, groups={"ESZ6": "ES", "NQZ6": "ES"})
    seen: list[tuple[int, int, int]] = []
    books = ch.books(schema, from_start=True, on_status=lambda *a: seen.append(a))
    books.on_packets(ch.run(5))
    es, nq = ch.feed.security_ids
    assert books.status(es) == books.status(nq) == READY_TO_TRADE
    ch.feed.security_status(ch.t, TRADING_HALT, group="ES")
    books.on_packets(ch.packets(ch.feed.take()))
    assert books.status(es) == books.status(nq) == TRADING_HALT
    ch.feed.security_status(ch.t + 5, PRE_OPEN, symbol="NQZ6")
    books.on_packets(ch.packets(ch.feed.take()))
    assert (books.status(es), books.status(nq)) == (TRADING_HALT, PRE_OPEN)
    assert seen[-3:] == [
        (es, TRADING_HALT, ch.t),
        (nq, TRADING_HALT, ch.t),
        (nq, PRE_OPEN, ch.t + 5),
    ]
    assert books.status_log[-1] == (ch.t + 5, nq, PRE_OPEN)
    # a late joiner learns the statuses from the snapshots
    late = ch.books(schema)
    late.on_packets(ch.run(3))
    late.on_snapshot_packets(ch.snapshot())
    assert (late.status(es), late.status(nq)) == (TRADING_HALT, PRE_OPEN)
    with pytest.raises(ValueError, match="no instrument is in SecurityGroup 'ZZ'"):
        ch.feed.security_status(1, TRADING_HALT, group="ZZ")
    with pytest.raises(KeyError, match="'XX' is not listed"):
        ch.feed.security_status(1, TRADING_HALT, symbol="XX")


def test_a_full_buffer_keeps_the_newest_packets_and_needs_a_newer_snapshot(
    schema: Schema,
) -> None:
    ch = _Channel(schema)
    books = ch.books(schema, max_buffer=10)
    books.on_packets(ch.run(5))
    early_loop = ch.snapshot()  # covers what is buffered now ...
    pk = ch.run(40)
    assert len(pk) > 10
    books.on_packets(pk)  # ... but the buffer keeps only the last ten packets
    assert books.stats.dropped_buffered > 0
    books.on_snapshot_packets(early_loop)
    assert not books.synced
    assert books.stats.stale_snapshots == len(SYMBOLS)
    books.on_snapshot_packets(ch.snapshot())
    ch.assert_equal(books)
    with pytest.raises(ValueError, match="max_buffer: must be >= 1"):
        Mdp3Books(schema, max_buffer=0)


def test_live_books_on_the_real_v8_capture_equal_the_compiled_capture_books() -> None:
    """The v8 capture as a live channel: every book as :func:`build_mbp_books` builds it.

    Two implementations of CME's level rules (a numba kernel over the whole capture, and the
    live books entry by entry) on 10,000 real packets that start mid-session, A and B copies
    arbitrated by the same rule (the first of each MsgSeqNum).
    """
    from decimal import Decimal

    from engine.feeds.pcap import udp_payloads
    from engine.feeds.sbe.book import build_mbp_books, first_arrivals
    from engine.feeds.sbe.mdp3 import decode_capture
    from engine.instruments import Instrument

    data = SHARED / "data/cme_mdp3_sbe"
    capture = data / "pcap/Mdp3.Sbe.v1.8__Cme.Mdp3.Sbe.v8.1.Example.pcap"
    v8 = data / "schema/Cme.Futures.Mdp3.Sbe.v1.8.xml"
    if not (capture.is_file() and v8.is_file()):
        pytest.skip("the shared CME capture is absent")
    cap = decode_capture(capture, v8)
    want = build_mbp_books(cap)
    books = Mdp3Books(cap.schema, from_start=True)
    for b, sid in enumerate(want.security_ids.tolist()):
        tick = Decimal(int(want.ticks[b])).scaleb(-7)  # v8 prices: PRICENULL, 10^-7
        books.add_security(sid, Instrument(symbol=f"S{sid}", tick_size=tick))
    payloads = udp_payloads(capture)
    keep = first_arrivals(cap)
    by_seq = [i for i in np.argsort(cap.packets["seq"], kind="stable").tolist() if keep[i]]
    for i in range(0, len(by_seq), 100):
        books.on_packets([payloads[j] for j in by_seq[i : i + 100]])
    assert books.stats.messages == 5_057  # one copy of each
    assert books.stats.bad_levels == books.stats.off_grid == books.stats.decode_issues == 0
    assert len(want.security_ids) == 39
    for b, sid in enumerate(want.security_ids.tolist()):
        wb, wa = want.books.top(b, 10)
        assert [(p, q) for p, q, _n in books.levels(sid, BUY)] == [
            tuple(r) for r in wb.tolist() if r[1]
        ], sid
        assert [(p, q) for p, q, _n in books.levels(sid, SELL)] == [
            tuple(r) for r in wa.tolist() if r[1]
        ], sid


def test_packets_that_do_not_decode_are_counted_and_said_not_applied(
    schema: Schema, caplog: pytest.LogCaptureFixture
) -> None:
    ch = _Channel(schema)
    books = ch.books(schema, from_start=True)
    books.on_packets(ch.run(10))
    ch.assert_equal(books)
    good = ch.run(5)
    bad_template = good[0][:14] + b"\xff\x7f" + good[0][16:]  # MsgSize kept, templateId 0x7fff
    cut = good[1][:30]  # a message cut off
    with caplog.at_level("WARNING", logger="engine.feeds.sbe.live"):
        books.on_packets([bad_template, cut, *good[2:]])
    assert books.stats.decode_issues >= 2
    assert "MDP 3.0 incremental feed:" in caplog.text
    assert "templateId" in caplog.text or "cut off" in caplog.text
    late = ch.books(schema)
    late.on_packets(ch.run(3))
    late.on_snapshot_packets([b"\x01\x00\x00\x00" + bytes(8) + b"\x05\x00\xff"])
    assert not late.synced
    assert late.stats.decode_issues == 1


def test_instruments_the_feed_cannot_price_are_refused_when_added(schema: Schema) -> None:
    from decimal import Decimal

    from engine.instruments import Instrument

    books = Mdp3Books(schema)
    fine = Instrument(symbol="X", tick_size=Decimal("0.0000000001"))
    with pytest.raises(ValueError, match=r"X: tick 1E-10 is finer than MDP 3.0's 10\^-9"):
        books.add_instrument(fine)
    with pytest.raises(ValueError, match="X: tick"):
        books.add_security(5, fine)
    with pytest.raises(ValueError, match="depth: must be >= 1"):
        Mdp3Books(schema, depth=0)
