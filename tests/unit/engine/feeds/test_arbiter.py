# SPDX-License-Identifier: MIT
"""A/B arbitration and gap tracking on packets made here (no sockets)."""

import random

import pytest

from engine.feeds.arbiter import (
    FEED_A,
    FEED_B,
    RECOVERY,
    Arbiter,
    FeedError,
    Mdp3Packets,
    MoldUdp64,
)

S = b"SESSION001"
MOLD = MoldUdp64()


def _msgs(first: int, count: int) -> list[bytes]:
    return [f"m{i}".encode() * (1 + i % 3) for i in range(first, first + count)]


def _pkt(first: int, count: int) -> bytes:
    return MoldUdp64.packet(S, first, _msgs(first, count))


def _delivered(packets: list[bytes]) -> list[bytes]:
    return [m for p in packets for m in MoldUdp64.messages(p)]


def _gap(arb: Arbiter) -> tuple[int, int] | None:
    g = arb.gap
    return None if g is None else (g.first, g.last)


def test_each_message_is_delivered_once_from_whichever_feed_has_it_first() -> None:
    arb = Arbiter(MOLD, next_seq=1)
    out: list[bytes] = []
    packets = [_pkt(1 + 5 * i, 5) for i in range(20)]
    for i, p in enumerate(packets):
        if i % 3 != 0:
            out += arb.on_packet(FEED_A, p, 0)
        if i % 3 != 1:
            out += arb.on_packet(FEED_B, p, 0)
    assert _delivered(out) == _msgs(1, 100)
    assert arb.stats.delivered_messages == 100
    assert arb.stats.gaps == 0
    both = sum(1 for i in range(20) if i % 3 == 2)
    assert sum(arb.stats.duplicates) == both


def test_a_packet_missing_from_both_feeds_is_held_as_a_gap_until_recovery_fills_it() -> None:
    arb = Arbiter(MOLD, next_seq=1, gap_timeout_ns=1_000, retry_ns=10_000)
    out = arb.on_packet(FEED_A, _pkt(1, 4), 0)
    assert arb.on_packet(FEED_A, _pkt(9, 4), 100) == []  # 5..8 missing
    assert arb.on_packet(FEED_B, _pkt(13, 2), 200) == []
    assert _gap(arb) == (5, 8)
    assert arb.due_gaps(500) == []  # not yet: the other feed may still bring it
    [gap] = arb.due_gaps(1_200)
    assert (gap.first, gap.last, gap.requests) == (5, 8, 1)
    assert arb.due_gaps(5_000) == []  # asked already; the retry is not due
    # The retransmission comes back cut differently (two packets), the first overlapping.
    out += arb.on_packet(RECOVERY, _pkt(3, 4), 6_000)  # 3..6: 3, 4 already delivered
    assert _gap(arb) == (7, 8)
    out += arb.on_packet(RECOVERY, _pkt(7, 2), 7_000)
    assert _gap(arb) is None
    assert _delivered(out) == _msgs(1, 14)
    assert arb.stats.recovered_messages == 4
    assert arb.stats.lost_messages == 0
    assert arb.stats.gaps == 1


def test_a_gap_nobody_fills_is_declared_lost_and_delivery_goes_on() -> None:
    arb = Arbiter(MOLD, next_seq=1, gap_timeout_ns=10, retry_ns=10, max_retries=2)
    out = arb.on_packet(FEED_A, _pkt(1, 2), 0)
    out += arb.on_packet(FEED_A, _pkt(6, 3), 1)  # 3..5 missing
    t = 100
    asked = 0
    while arb.gap is not None:
        asked += len(arb.due_gaps(t))
        t += 100
    assert asked == 2
    out += arb.take_released()
    assert _delivered(out) == _msgs(1, 2) + _msgs(6, 3)
    assert arb.stats.lost_messages == 3
    assert arb.next_seq == 9
    assert arb.take_released() == []  # once


def test_a_heartbeat_ahead_of_what_was_received_opens_a_gap() -> None:
    arb = Arbiter(MOLD, next_seq=1)
    arb.on_packet(FEED_A, _pkt(1, 3), 0)
    arb.on_packet(FEED_A, S + (10).to_bytes(8, "big") + b"\x00\x00", 5)  # next to send: 10
    assert _gap(arb) == (4, 9)
    assert not arb.ended
    arb.on_packet(FEED_B, S + (10).to_bytes(8, "big") + b"\xff\xff", 6)  # end of session
    assert arb.ended


def test_held_packets_overflowing_give_up_the_gap() -> None:
    arb = Arbiter(MOLD, next_seq=1, max_pending=3)
    out = arb.on_packet(FEED_A, _pkt(1, 1), 0)
    for s in (3, 4, 5):
        assert arb.on_packet(FEED_A, _pkt(s, 1), 0) == []
    out += arb.on_packet(FEED_A, _pkt(6, 1), 0)  # the fourth held: 2 is given up
    assert _delivered(out) == _msgs(1, 1) + _msgs(3, 4)
    assert arb.stats.lost_messages == 1


def test_random_reordering_and_duplication_on_both_feeds_delivers_everything_in_order() -> None:
    rng = random.Random(7)
    packets = []
    s = 1
    while s < 2_000:
        n = rng.randint(1, 9)
        packets.append(_pkt(s, n))
        s += n
    arrivals = [(f, p) for p in packets for f in (FEED_A, FEED_B) if rng.random() > 0.2]
    # Shuffle locally (a window of 8), as a network reorders.
    for i in range(len(arrivals)):
        j = min(len(arrivals) - 1, i + rng.randint(0, 7))
        arrivals[i], arrivals[j] = arrivals[j], arrivals[i]
    arb = Arbiter(MOLD, next_seq=1)
    out: list[bytes] = []
    for f, p in arrivals:
        out += arb.on_packet(f, p, 0)
    missing = [p for p in packets if all(q is not p for _, q in arrivals)]
    for p in missing:  # recovery brings the rest
        out += arb.on_packet(RECOVERY, p, 0)
    assert _delivered(out) == _msgs(1, s - 1)
    assert arb.gap is None
    assert arb.pending_packets == 0


def test_bad_packets_are_counted_and_dropped() -> None:
    arb = Arbiter(MOLD, next_seq=1)
    assert arb.on_packet(FEED_A, b"short", 0) == []
    assert arb.stats.bad_packets == 1
    cut = _pkt(1, 3)[:-2]
    with pytest.raises(FeedError, match="message 3 of 3"):
        MoldUdp64.messages(cut)


def test_mdp3_packets_are_sequenced_by_their_packet_number() -> None:
    def pkt(seq: int) -> bytes:
        return seq.to_bytes(4, "little") + bytes(8) + b"body"

    arb = Arbiter(Mdp3Packets())
    out = arb.on_packet(FEED_A, pkt(100), 0)
    out += arb.on_packet(FEED_A, pkt(102), 0)
    out += arb.on_packet(FEED_B, pkt(101), 0)
    out += arb.on_packet(FEED_B, pkt(102), 0)
    assert [int.from_bytes(p[:4], "little") for p in out] == [100, 101, 102]
    assert arb.stats.duplicates == [0, 1, 0]
