# SPDX-License-Identifier: MIT
"""The ITCH books: a hand-made stream with known levels and queues, and random streams
against a plain-Python reference book."""

import random
import struct
from collections import OrderedDict
from typing import Any, cast

import numpy as np
import pytest

from engine.feeds.itch import _kernels as k
from engine.feeds.itch.book import ItchBooks
from engine.feeds.itch.decode import ItchDecodeError
from engine.feeds.itch.moldudp64 import MoldUDP64Stream, pack_payloads
from engine.types import BUY, SELL

TS = 34_200_000_000_000  # 09:30 in ns since midnight


def _py(kernel: object) -> Any:
    """The plain-Python function behind a compiled kernel."""
    return cast(Any, kernel).py_func


def _hdr(t: bytes, loc: int, ts: int = TS) -> bytes:
    return struct.pack(">cHHHI", t, loc, 0, ts >> 32, ts & 0xFFFFFFFF)


def A(ref: int, side: str, shares: int, px: int, loc: int = 1, stock: bytes = b"ZVZZT") -> bytes:
    return _hdr(b"A", loc) + struct.pack(">QcI8sI", ref, side.encode(), shares, stock.ljust(8), px)


def F(ref: int, side: str, shares: int, px: int, loc: int = 1) -> bytes:
    body = struct.pack(">QcI8sI4s", ref, side.encode(), shares, b"ZVZZT   ", px, b"GSCO")
    return _hdr(b"F", loc) + body


def E(ref: int, shares: int, match: int, loc: int = 1) -> bytes:
    return _hdr(b"E", loc) + struct.pack(">QIQ", ref, shares, match)


def C(ref: int, shares: int, match: int, px: int, printable: str = "Y", loc: int = 1) -> bytes:
    return _hdr(b"C", loc) + struct.pack(">QIQcI", ref, shares, match, printable.encode(), px)


def X(ref: int, shares: int, loc: int = 1) -> bytes:
    return _hdr(b"X", loc) + struct.pack(">QI", ref, shares)


def D(ref: int, loc: int = 1) -> bytes:
    return _hdr(b"D", loc) + struct.pack(">Q", ref)


def U(old: int, new: int, shares: int, px: int, loc: int = 1) -> bytes:
    return _hdr(b"U", loc) + struct.pack(">QQII", old, new, shares, px)


def P(ref: int, side: str, shares: int, px: int, match: int, loc: int = 1) -> bytes:
    return _hdr(b"P", loc) + struct.pack(
        ">QcI8sIQ", ref, side.encode(), shares, b"ZVZZT   ", px, match
    )


def Q(shares: int, px: int, match: int, cross: str = "O", loc: int = 1) -> bytes:
    return _hdr(b"Q", loc) + struct.pack(">Q8sIQc", shares, b"ZVZZT   ", px, match, cross.encode())


def H(state: str, reason: bytes, loc: int = 1) -> bytes:
    return _hdr(b"H", loc) + struct.pack(">8scc4s", b"ZVZZT   ", state.encode(), b" ", reason)


def S(code: str) -> bytes:
    return _hdr(b"S", 0) + code.encode()


def raw(*msgs: bytes) -> bytes:
    return b"".join(struct.pack(">H", len(m)) + m for m in msgs)


def _stream() -> bytes:
    return raw(
        S("O"),
        H("T", b"    "),
        A(1, "B", 100, 10_000),
        A(2, "B", 200, 10_000),
        F(3, "B", 300, 9_900),
        A(4, "S", 150, 10_100),
        A(5, "S", 50, 10_100),
        A(6, "S", 500, 10_200),
        A(7, "B", 40, 5_000, loc=2, stock=b"QQQ"),
        E(1, 30, 901),  # partial: 1 keeps its place with 70
        C(4, 150, 902, 10_105, printable="N"),  # full: 4 leaves, 5 is now first
        X(2, 20),  # partial cancel: 180 left
        U(3, 8, 310, 10_000),  # 3 (bid 9900) -> 8 (bid 10000), behind 1 and 2
        D(6),
        D(99),  # unknown refs: counted, never raised
        E(98, 1, 903),
        C(97, 1, 904, 1),
        X(96, 1),
        U(95, 94, 1, 1),
        A(1, "S", 10, 1),  # duplicate ref
        X(5, 60),  # more than left: the order leaves
        A(9, "S", 25, 10_300),
        P(0, "B", 77, 10_050, 905),
        Q(1_000, 10_010, 906),
        H("H", b"LUDP"),
        S("C"),
    )


def test_hand_made_stream_gives_the_expected_levels_queues_and_counters() -> None:
    b = ItchBooks(capacity=2, level_capacity=2)  # grows on the way
    assert b.apply_raw(_stream()) == 26
    assert b.levels(1, BUY).tolist() == [[10_000, 70 + 180 + 310, 3]]
    assert b.queue(1, BUY, 10_000).tolist() == [[1, 70], [2, 180], [8, 310]]
    assert b.levels(1, SELL).tolist() == [[10_300, 25, 1]]
    assert b.queue(1, SELL, 10_100).shape == (0, 2)
    assert b.levels(2, BUY).tolist() == [[5_000, 40, 1]]
    assert b.best_bid(1) == (10_000, 560)
    assert b.best_ask(1) == (10_300, 25)
    assert b.order(8) == (1, BUY, 10_000, 310)
    assert b.order(3) is None
    assert b.order(4) is None
    assert (b.n_orders, b.n_levels, b.orders_of(1), b.orders_of(2)) == (5, 3, 4, 1)
    c = b.counters()
    assert c.unknown == {"E": 1, "C": 1, "X": 1, "D": 1, "U": 1}
    assert (c.duplicate_adds, c.over_cancels, c.over_executions) == (1, 1, 0)
    assert b.check() == []
    assert b.crossed_stocks().tolist() == []
    assert b.symbol(1) == "ZVZZT"
    assert b.symbol(2) == "QQQ"


def test_trades_actions_and_system_events_are_kept() -> None:
    b = ItchBooks()
    b.apply_raw(_stream())
    t = b.trades
    assert [chr(x) for x in t["kind"]] == ["E", "C", "P", "Q"]
    assert t["price"].tolist() == [10_000, 10_105, 10_050, 10_010]
    assert t["shares"].tolist() == [30, 150, 77, 1_000]
    assert t["match_number"].tolist() == [901, 902, 905, 906]
    assert t["side"].tolist() == [BUY, SELL, BUY, 0]
    assert t["order_reference_number"].tolist() == [1, 4, 0, 0]
    assert [chr(x) for x in t["printable"]] == ["Y", "N", "Y", "Y"]
    assert chr(t["cross_type"][3]) == "O"
    assert t["seq"].tolist() == [10, 11, 23, 24]
    assert b.volume(1) == 30 + 77 + 1_000  # the C was not printable
    a = b.trading_actions
    assert [chr(x) for x in a["trading_state"]] == ["T", "H"]
    assert a["reason"].view("S4").tolist() == [b"    ", b"LUDP"]
    assert b.trading_state(1) == "H"
    assert b.trading_reason(1) == "LUDP"
    assert b.trading_state(2) == ""
    assert [chr(x) for x in b.system_events["event_code"]] == ["O", "C"]
    assert b.last_system_event == "C"
    assert b.counts() == {
        "A": 8,
        "C": 2,
        "D": 2,
        "E": 2,
        "F": 1,
        "H": 2,
        "P": 1,
        "Q": 1,
        "S": 2,
        "U": 2,
        "X": 3,
    }


def test_the_same_stream_split_anywhere_gives_the_same_books() -> None:
    data = _stream()
    whole = ItchBooks()
    whole.apply_raw(data)
    msgs, off = [], 0
    while off < len(data):
        ln = struct.unpack_from(">H", data, off)[0]
        msgs.append(data[off : off + 2 + ln])
        off += 2 + ln
    parts = ItchBooks(capacity=1, level_capacity=1)
    parts.apply_raw(b"".join(msgs[:3]))
    parts.apply_raw(b"".join(msgs[3:11]))
    parts.apply_raw(b"".join(msgs[11:]))
    for side in (BUY, SELL):
        assert parts.levels(1, side).tolist() == whole.levels(1, side).tolist()
    assert parts.queue(1, BUY, 10_000).tolist() == whole.queue(1, BUY, 10_000).tolist()
    assert len(parts.trades) == len(whole.trades) > 0
    assert parts.trades.tolist() == whole.trades.tolist()


def test_moldudp64_packets_with_a_duplicate_apply_each_message_once() -> None:
    def pkt(seq: int, *msgs: bytes) -> bytes:
        body = b"".join(struct.pack(">H", len(m)) + m for m in msgs)
        return b"S" * 10 + struct.pack(">QH", seq, len(msgs)) + body

    pk = [pkt(1, A(1, "B", 100, 10_000), A(2, "B", 50, 10_000)), pkt(3, X(1, 10))]
    pk = [pk[0], pk[1], pk[1], pkt(4, E(2, 50, 7))]
    stream = MoldUDP64Stream()
    packed = pack_payloads(pk)
    batch = stream.feed(packed)
    assert batch.keep.tolist() == [1, 1, 1, 0, 1]
    assert batch.decoded.n_messages == 4
    b = ItchBooks()
    assert b.apply_batch(batch) == 4
    assert b.queue(1, BUY, 10_000).tolist() == [[1, 90]]  # the cancel applied once
    assert b.trades["seq"].tolist() == [4]
    assert b.counters().unknown == {"E": 0, "C": 0, "X": 0, "D": 0, "U": 0}
    every = ItchBooks()
    every.apply_packets(*packed)  # no tracking: the repeated cancel applies twice
    assert every.queue(1, BUY, 10_000).tolist() == [[1, 80]]


def test_bad_message_keeps_the_books_of_what_came_before() -> None:
    b = ItchBooks()
    data = raw(A(1, "B", 100, 10_000), A(2, "B", 50, 10_000)) + struct.pack(">H", 5) + b"Zxxxx"
    with pytest.raises(ItchDecodeError, match=r"byte 76 \(message 3\): type byte 90") as e:
        b.apply_raw(data, source="day.itch")
    assert "the 2 messages before it were applied to the books" in str(e.value)
    assert b.queue(1, BUY, 10_000).tolist() == [[1, 100], [2, 50]]


def test_bad_arguments_are_named() -> None:
    b = ItchBooks()
    with pytest.raises(ValueError, match="side: must be BUY"):
        b.levels(1, 0)
    with pytest.raises(ValueError, match="stock_locate: must be in"):
        b.levels(70_000, BUY)
    with pytest.raises(ValueError, match="capacity"):
        ItchBooks(capacity=0)


# --------------------------------------------------------------- random streams vs reference
class RefBooks:
    """A plain-Python book: dict of orders, an OrderedDict FIFO per level."""

    def __init__(self) -> None:
        self.orders: dict[int, list[int]] = {}  # ref -> [stock, side, px, qty]
        self.levels: dict[tuple[int, int, int], OrderedDict[int, None]] = {}

    def add(self, ref: int, stock: int, side: int, px: int, qty: int) -> None:
        self.orders[ref] = [stock, side, px, qty]
        self.levels.setdefault((stock, side, px), OrderedDict())[ref] = None

    def remove(self, ref: int) -> None:
        stock, side, px, _ = self.orders.pop(ref)
        q = self.levels[(stock, side, px)]
        del q[ref]
        if not q:
            del self.levels[(stock, side, px)]

    def reduce(self, ref: int, n: int) -> None:
        if n >= self.orders[ref][3]:
            self.remove(ref)
        else:
            self.orders[ref][3] -= n

    def side_levels(self, stock: int, side: int) -> list[list[int]]:
        rows = [
            [px, sum(self.orders[r][3] for r in q), len(q)]
            for (s, sd, px), q in self.levels.items()
            if s == stock and sd == side
        ]
        return sorted(rows, reverse=side == BUY)


def _random_stream(seed: int, n: int) -> tuple[bytes, RefBooks]:
    rnd = random.Random(seed)
    ref_book = RefBooks()
    msgs: list[bytes] = []
    next_ref = 1
    for _ in range(n):
        live = list(ref_book.orders)
        r = rnd.random()
        if r < 0.4 or not live:
            stock = rnd.randint(1, 3)
            side = BUY if rnd.random() < 0.5 else SELL
            px = 10_000 + rnd.randint(-5, 5) * 100
            qty = rnd.randint(1, 500)
            msgs.append(A(next_ref, "B" if side == BUY else "S", qty, px, loc=stock))
            ref_book.add(next_ref, stock, side, px, qty)
            next_ref += 1
            continue
        ref = rnd.choice(live)
        stock, side, px, qty = ref_book.orders[ref]
        if r < 0.55:
            msgs.append(D(ref, loc=stock))
            ref_book.remove(ref)
        elif r < 0.7:
            n_ = rnd.randint(1, qty)
            msgs.append(E(ref, n_, 1, loc=stock))
            ref_book.reduce(ref, n_)
        elif r < 0.8:
            n_ = rnd.randint(1, qty)
            msgs.append(X(ref, n_, loc=stock))
            ref_book.reduce(ref, n_)
        elif r < 0.9:
            n_ = rnd.randint(1, qty)
            msgs.append(C(ref, n_, 1, px + 1, loc=stock))
            ref_book.reduce(ref, n_)
        else:
            new_px = px + rnd.randint(-2, 2) * 100
            new_qty = rnd.randint(1, 500)
            msgs.append(U(ref, next_ref, new_qty, new_px, loc=stock))
            ref_book.remove(ref)
            ref_book.add(next_ref, stock, side, new_px, new_qty)
            next_ref += 1
    return raw(*msgs), ref_book


@pytest.mark.parametrize(("seed", "window_bits"), [(1, 20), (2, 20), (3, 3), (4, 0)])
def test_random_streams_match_the_reference_book_level_by_level_and_queue_by_queue(
    seed: int, window_bits: int
) -> None:
    # a small window of young refs: most lookups go through the hash of older refs
    data, ref_book = _random_stream(seed, 3_000)
    b = ItchBooks(capacity=4, level_capacity=4, window_bits=window_bits)
    b.apply_raw(data)
    assert b.check() == []
    assert b.n_orders == len(ref_book.orders)
    for stock in (1, 2, 3):
        for side in (BUY, SELL):
            assert b.levels(stock, side).tolist() == ref_book.side_levels(stock, side)
    for (stock, side, px), q in ref_book.levels.items():
        assert b.queue(stock, side, px)[:, 0].tolist() == list(q)
    c = b.counters()
    assert sum(c.unknown.values()) == c.duplicate_adds == c.over_executions == 0


@pytest.mark.parametrize("shift", [58, 63])  # 64 buckets; 2 distinct homes: long runs
def test_hash_table_deletion_keeps_every_other_key_findable(shift: int) -> None:
    rnd = random.Random(5)
    tab = np.full(128, k.HT_EMPTY, np.int64)
    live: dict[int, int] = {}
    for step in range(2_000):
        if live and (len(live) >= 30 or rnd.random() < 0.5):
            key = rnd.choice(list(live))
            _py(k.ht_del)(tab, key, shift)
            del live[key]
        else:
            key = rnd.randint(0, 1 << 40) if rnd.random() < 0.5 else rnd.randint(0, 200)
            if key in live:
                continue
            _py(k.ht_put)(tab, key, step, shift)
            live[key] = step
        for kk, vv in live.items():
            assert k.find_key(tab, kk, shift) == vv
    assert int((tab[0::2] != k.HT_EMPTY).sum()) == len(live)


def test_check_finds_a_corrupted_level_and_a_broken_link() -> None:
    b = ItchBooks()
    b.apply_raw(raw(A(1, "B", 100, 10_000), A(2, "B", 50, 10_000), A(3, "S", 10, 10_100)))
    assert b.check() == []
    lvl = int(b._o.rec[0, k.O_LEVEL])
    b._l.rec[lvl, k.L_QTY] += 1
    assert any("do not add up" in p for p in b.check())
    b._l.rec[lvl, k.L_QTY] -= 1
    b._o.rec[1, k.O_PREV] = 5
    assert any("links are broken" in p for p in b.check())


def test_the_shared_captures_through_the_books_keep_trades_and_count_unknown_refs() -> None:
    from engine.feeds.itch.moldudp64 import decode_packets
    from engine.feeds.pcap import udp_payloads
    from tests.conftest import SHARED

    itch = SHARED / "data/nasdaq_itch_ouch/itch"
    captures = sorted(itch.glob("*.pcap")) if itch.is_dir() else []
    if not captures:
        pytest.skip(f"{itch} is absent")
    payloads = [p for c in captures for p in udp_payloads(c)]
    decoded = decode_packets(payloads)
    books = ItchBooks()
    books.apply_packets(*pack_payloads(payloads))
    assert books.counts() == decoded.counts()
    adds = {int(r) for t in "AF" for r in decoded[t]["order_reference_number"]}
    unknown = books.counters().unknown
    for t in "EXD":
        refs = decoded[t]["order_reference_number"]
        assert unknown[t] == sum(int(r) not in adds for r in refs)
    trades = books.trades
    p, q = decoded["P"], decoded["Q"]
    kept_p = trades[trades["kind"] == ord("P")]
    assert kept_p["price"].tolist() == p["price"].tolist()
    assert kept_p["shares"].tolist() == p["shares"].tolist()
    assert kept_p["match_number"].tolist() == p["match_number"].tolist()
    kept_q = trades[trades["kind"] == ord("Q")]
    assert kept_q["price"].tolist() == q["cross_price"].tolist()
    assert kept_q["shares"].tolist() == q["shares"].tolist()
    assert [chr(c) for c in kept_q["cross_type"]] == [c.decode() for c in q["cross_type"]]
    h = decoded["H"]
    acts = books.trading_actions
    assert acts["stock_locate"].tolist() == h["stock_locate"].tolist()
    assert [chr(c) for c in acts["trading_state"]] == [c.decode() for c in h["trading_state"]]
    assert books.system_events["event_code"].tolist() == [
        ord(c) for c in decoded["S"]["event_code"]
    ]
    assert books.check() == []


def test_refs_far_apart_and_out_of_order_are_all_found() -> None:
    refs = [5, 1 << 40, 7, (1 << 40) + 3, 1 << 35, 6, (1 << 62) + 1, 4]
    b = ItchBooks(window_bits=4)
    b.apply_raw(raw(*[A(r, "B", 10 + i, 10_000 + i) for i, r in enumerate(refs)]))
    assert [b.order(r) for r in refs] == [(1, BUY, 10_000 + i, 10 + i) for i in range(8)]
    b.apply_raw(raw(D(7), X(1 << 40, 4), E((1 << 62) + 1, 16, 1), U(5, 9, 1, 9_000)))
    assert b.order(7) is None
    assert b.order(1 << 40) == (1, BUY, 10_001, 7)
    assert b.order((1 << 62) + 1) is None
    assert b.order(5) is None
    assert b.order(9) == (1, BUY, 9_000, 1)
    assert sum(b.counters().unknown.values()) == 0
    assert b.check() == []
    with pytest.raises(ValueError, match="window_bits"):
        ItchBooks(window_bits=31)
