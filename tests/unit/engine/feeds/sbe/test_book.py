# SPDX-License-Identifier: MIT
"""MDP 3.0 MBP books into L2Books: each update action by hand, and the shared v8 capture."""

from __future__ import annotations

import struct

import pytest

from engine.feeds.sbe.book import (
    build_mbp_books,
    check_trades,
    crossed_while_open,
    first_arrivals,
    ready_to_trade_ns,
)
from engine.feeds.sbe.mdp3 import DecodedCapture, decode_capture, decode_payloads
from engine.feeds.sbe.schema import Schema
from engine.feeds.sbe.schema_xml import load_schema
from tests.conftest import SHARED

DATA = SHARED / "data/cme_mdp3_sbe"
V8 = DATA / "schema/Cme.Futures.Mdp3.Sbe.v1.8.xml"
EXAMPLE = DATA / "pcap/Mdp3.Sbe.v1.8__Cme.Mdp3.Sbe.v8.1.Example.pcap"
VOLUME = DATA / "pcap/Mdp3.Sbe.v1.8__MdIncrementalRefreshVolume.37.pcap"

TICK = 2_500_000  # 0.25 in PRICE's 1e-7 units
NEW, CHANGE, DELETE, DELETE_THRU, DELETE_FROM, OVERLAY = range(6)


@pytest.fixture(scope="module")
def v8() -> Schema:
    if not V8.is_file():
        pytest.skip(f"{V8} is not there")
    return load_schema(V8)


def book_message(entries: list[tuple[str, int, int, int, int]], sid: int = 7) -> bytes:
    """An MDIncrementalRefreshBook32 of (type, action, level, price in ticks, size) entries."""
    body = struct.pack("<QB2x", 1_475_000_000_000_000_000, 0x84)  # blockLength 11
    body += struct.pack("<HB", 32, len(entries))
    for seq, (etype, action, level, px, size) in enumerate(entries):
        body += struct.pack(
            "<qiiIiBBc5x", px * TICK, size, sid, seq, 1, level, action, etype.encode()
        )
    body += struct.pack("<H5xB", 24, 0)  # NoOrderIDEntries: none
    header = struct.pack("<HHHH", 11, 32, 1, 8)
    return struct.pack("<H", 2 + len(header) + len(body)) + header + body


def packet(seq: int, *messages: bytes) -> bytes:
    return struct.pack("<IQ", seq, 10**18 + seq) + b"".join(messages)


def top(cap: DecodedCapture, depth: int = 3) -> tuple[list[list[int]], list[list[int]]]:
    b = build_mbp_books(cap, depth=depth, n_levels=64)
    bids, asks = b.books.top(0, depth)
    return bids.tolist(), asks.tolist()


def test_each_update_action_moves_the_levels(v8: Schema) -> None:
    msgs = [
        book_message([("0", NEW, 1, 100, 5), ("0", NEW, 2, 99, 3), ("1", NEW, 1, 102, 4)]),
        book_message([("0", NEW, 1, 101, 1)]),  # inserted on top: 100 and 99 move down
        book_message([("1", NEW, 1, 103, 2), ("1", NEW, 1, 102, 6)]),  # top again
    ]
    cap = decode_payloads([packet(1, *msgs)], v8)
    assert top(cap) == ([[101, 1], [100, 5], [99, 3]], [[102, 6], [103, 2]])
    changes = [
        *msgs,
        book_message([("0", CHANGE, 2, 100, 8)]),
        book_message([("0", DELETE, 1, 101, 0)]),  # 100 and 99 move up
        book_message([("1", OVERLAY, 2, 104, 7)]),  # level 2 (103) becomes 104
    ]
    cap = decode_payloads([packet(1, *changes)], v8)
    assert top(cap) == ([[100, 8], [99, 3]], [[102, 6], [104, 7]])
    cleared = [
        *changes,
        book_message([("0", DELETE_FROM, 1, 100, 0)]),  # the best bid level goes
        book_message([("1", DELETE_THRU, 1, 0, 0)]),  # every offer goes
    ]
    cap = decode_payloads([packet(1, *cleared)], v8)
    assert top(cap) == ([[99, 3]], [])


def test_a_new_level_pushes_the_last_one_out_of_the_book(v8: Schema) -> None:
    msgs = [
        book_message([("0", NEW, 1, 100, 1), ("0", NEW, 2, 99, 1), ("0", NEW, 3, 98, 1)]),
        book_message([("0", NEW, 1, 101, 2)]),  # depth 3: 98 is no longer in the book
    ]
    cap = decode_payloads([packet(1, *msgs)], v8)
    b = build_mbp_books(cap, depth=3, n_levels=64)
    assert b.books.top(0, 5)[0].tolist() == [[101, 2], [100, 1], [99, 1]]
    assert b.books.depth_at(0, 1, 98) == 0


def test_implied_entries_and_b_feed_copies_are_left_out(v8: Schema) -> None:
    outright = book_message([("0", NEW, 1, 100, 5), ("1", NEW, 1, 101, 5)])
    implied = book_message([("E", NEW, 1, 100, 50), ("F", NEW, 1, 101, 50)])
    cap = decode_payloads(
        [packet(1, outright), packet(1, outright), packet(2, implied)],
        v8,
        channels=["A", "B", "A"],
    )
    assert list(first_arrivals(cap)) == [True, False, True]
    b = build_mbp_books(cap, n_levels=64)
    assert (b.entries, b.implied) == (2, 2)
    assert b.books.touch(0) == ((100, 5), (101, 5))  # once, and no implied size


def test_a_book_reset_clears_the_book(v8: Schema) -> None:
    msgs = [
        book_message([("0", NEW, 1, 100, 5), ("1", NEW, 1, 101, 5)]),
        book_message([("J", NEW, 0, 0, 0)]),
        book_message([("1", NEW, 1, 105, 1)]),
    ]
    b = build_mbp_books(decode_payloads([packet(1, *msgs)], v8), n_levels=64)
    assert b.books.touch(0) == (None, (105, 1))
    assert b.ticks[0] == TICK  # the gcd of the prices quoted: 100, 101, 105 ticks of 0.25


@pytest.fixture(scope="module")
def example() -> DecodedCapture:
    if not EXAMPLE.is_file() or not V8.is_file():
        pytest.skip(f"{EXAMPLE} is not there")
    return decode_capture(EXAMPLE, V8)


def test_v8_books_never_cross_once_the_groups_are_open(example: DecodedCapture) -> None:
    b = build_mbp_books(example)
    assert b.security_ids.size == 39
    assert b.entries == 5848
    assert b.implied == 0
    assert b.bad_levels == 0
    assert int(first_arrivals(example).sum()) == 5000  # feeds A and B, each packet once
    open_ns = ready_to_trade_ns(example)
    assert open_ns == 1475013600000951659  # 2016-09-27 22:00:00 UTC: the groups open
    after = b.events["ts"] > open_ns
    assert int(after.sum()) > 5000  # most of the capture is after the open
    assert crossed_while_open(example, b).size == 0
    # in the pre-open, indicative books may lock or cross: they do, then stop at the open
    assert b.crossed.size > 0
    assert (b.events["ts"][b.crossed] <= open_ns).all()
    for i in range(b.security_ids.size):
        bid, ask = b.books.touch(i)
        if bid and ask:
            assert bid[0] < ask[0], b.security_ids[i]


def test_v8_trades_volume_and_rptseq_add_up(example: DecodedCapture) -> None:
    c = check_trades(example)
    assert (c.trades, c.traded, c.instruments) == (63, 218, 39)
    assert c.volume_steps == 51
    assert c.volume_mismatches == 0
    assert c.with_fills == 60
    assert c.fill_mismatches == 0
    assert c.rptseq_gaps == 0


def test_a_capture_with_packets_missing_fails_the_checks() -> None:
    if not VOLUME.is_file() or not V8.is_file():
        pytest.skip(f"{VOLUME} is not there")
    cap = decode_capture(VOLUME, V8)  # only the packets with a Volume message were kept
    assert cap.sequence[0].missing > 4000
    c = check_trades(cap)
    assert c.trades == 0
    assert c.volume_steps == 50
    assert c.volume_mismatches == 50  # volume went up with no trade seen in between
    assert c.rptseq_gaps > 0
    assert int(build_mbp_books(cap).books.levels.min()) >= 0
