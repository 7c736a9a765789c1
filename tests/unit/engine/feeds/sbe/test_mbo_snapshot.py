# SPDX-License-Identifier: MIT
"""MDP 3.0 order snapshots (SnapshotFullRefreshOrderBook 53) seed the capture's L3 books.

A capture that starts mid-session holds orders added before it began: their events find
nothing (``unknown``). With the snapshot loop captured too, each instrument's book is set from
its snapshot (every chunk, once, however often the loop repeats it) and the incremental
packets the snapshot already holds are left out, so the books equal the simulator's matcher.
The snapshot loop's own packet numbers (from 1 each loop) must not be taken for duplicates of
the incremental packets of the same numbers.
"""

from __future__ import annotations

import pytest

from engine.feeds.sbe.book import first_arrivals, snapshot_packets
from engine.feeds.sbe.encoder import pack_mdp3
from engine.feeds.sbe.mbo import build_l3_books
from engine.feeds.sbe.mdp3 import decode_payloads
from engine.feeds.sbe.schema import Schema
from engine.feeds.sbe.schema_xml import load_schema
from engine.sim.exchange import FlowConfig, SimExchange, SimInstrument
from engine.sim.mdp3_feed import SimMdp3Feed
from tests.conftest import SHARED
from tests.factories import make_instrument

SCHEMA = SHARED / "data/cme_mdp3_sbe/schema/Cme.Futures.Mdp3.Sbe.v1.9.xml"


@pytest.fixture(scope="module")
def schema() -> Schema:
    if not SCHEMA.is_file():
        pytest.skip("the shared CME schemas are absent")
    return load_schema(SCHEMA)


def _market(schema: Schema) -> tuple[SimExchange, SimMdp3Feed]:
    flow = FlowConfig(events_per_second=4_000, volatility_ticks=2.0)
    ex = SimExchange(
        [
            SimInstrument(instrument=make_instrument("ESZ6"), start_px_ticks=20_000, flow=flow),
            SimInstrument(instrument=make_instrument("NQZ6"), start_px_ticks=80_000, flow=flow),
        ],
        seed=4,
    )
    feed = SimMdp3Feed(ex, schema, ts=1)
    ex.order_feed = feed
    ex.seed_books(ts=2)
    return ex, feed


def test_a_mid_session_capture_with_the_snapshot_loop_rebuilds_every_order(
    schema: Schema,
) -> None:
    ex, feed = _market(schema)
    t, seq = 10, 1
    packets: list[bytes] = []
    ex.seed_books(3, levels=30, qty_lots=3)  # deep books: snapshots of several chunks
    for _ in range(2):
        t += 1_000_000
        ex.step(t)
    early = pack_mdp3(feed.take(), 1_472, seq, t)
    seq += len(early)
    loop = pack_mdp3(feed.snapshot(t, seq - 1), 1_472, 1, t)  # as of the last early packet
    for _ in range(60):
        t += 1_000_000
        ex.step(t)
    late = pack_mdp3(feed.take(), 1_472, seq, t)
    # The capture starts 7 packets before the loop's point: two of those arrive after the
    # loop (reordered), which already holds them: they must be left out. The loop's packets
    # are numbered from 1 as CME numbers them, like the capture's first incremental ones.
    first = int.from_bytes(early[-7][:4], "little")
    assert first > 1  # mid-session
    assert len(loop) >= first  # numbers shared by both channels
    packets = early[-7:-2] + loop + early[-2:] + late[:7] + loop + late[7:]
    cap = decode_payloads(packets, schema)
    snap = snapshot_packets(cap)
    assert int(snap.sum()) == 2 * len(loop)
    assert bool(first_arrivals(cap)[~snap].all())  # no incremental packet taken as a copy
    books = build_l3_books(cap, tick_size="0.25")
    skipped = books.events.skipped
    assert skipped["already in the snapshot before it"] > 0
    assert books.unknown == 0
    assert books.duplicates == 0
    for b, sid in enumerate(feed.security_ids):
        got = {int(r[0]): (int(r[1]), int(r[2]), int(r[3])) for r in books.books[sid].resting()}
        assert got == feed.orders(b)
        bids, asks = ex.depth(ex.symbols[b], 100_000)
        assert books.books[sid].best_bid() == bids[0]
        assert books.books[sid].best_ask() == asks[0]
    # without the loop the same capture misses the orders added before it began
    plain = build_l3_books(decode_payloads(early[-7:] + late, schema), tick_size="0.25")
    assert plain.unknown > 0


def test_snapshot_packets_are_not_taken_for_copies_of_incremental_ones(schema: Schema) -> None:
    flow = FlowConfig(events_per_second=4_000)
    ex = SimExchange(
        [SimInstrument(instrument=make_instrument("ESZ6"), start_px_ticks=20_000, flow=flow)],
        seed=9,
    )
    feed = SimMdp3Feed(ex, schema, ts=1)
    ex.order_feed = feed
    # the session's start: the loop (empty books, numbered from 1) comes first, then the
    # incremental channel's first packets, numbered from 1 too
    loop = pack_mdp3(feed.snapshot(1, 0), 1_472, 1, 1)
    ex.seed_books(ts=2, levels=20)
    packets = pack_mdp3(feed.take(), 1_472, 1, 2)
    assert len(packets) >= 2
    assert len(loop) >= 1  # packet 1 on both channels
    cap = decode_payloads(loop + packets, schema)
    assert bool(first_arrivals(cap).all())
    books = build_l3_books(cap, tick_size="0.25")
    resting = {int(r[0]): (int(r[1]), int(r[2]), int(r[3])) for r in books.books[100_001].resting()}
    assert resting == feed.orders(0)
    assert len(resting) == 40
