# SPDX-License-Identifier: MIT
"""The books of a generated day against a plain-Python reference, message by message.

The reference parses the wire bytes itself (``struct``, not our decoder) and keeps a dict of
orders and an ordered queue per (stock, side, price), with the semantics the books document:
unknown refs, duplicate adds and replaces, over-executions and zero-share adds counted, E, C,
P and Q kept as trades, H and S logged. The day is followed by a tail of such irregular
messages. Every level, every queue, every counter and every trade must be equal, with the
default window of young refs, with a window so small that most orders move to the overflow
records (and the level table starting tiny, so it is rebuilt again and again), and with the
day applied in pieces.
"""

import itertools
import random
import struct
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
import pytest

from engine.feeds.itch import _kernels as k
from engine.feeds.itch.book import ItchBooks
from engine.feeds.itch.generate import generate_bytes
from engine.types import BUY, SELL
from tests.unit.engine.feeds.itch.test_book import A, C, D, E, U, X, _hdr, raw


@dataclass
class Reference:
    """Plain-Python books of every stock and what the feed said besides."""

    orders: dict[int, list[int]] = field(default_factory=dict)  # ref -> [stock, side, px, qty]
    levels: dict[tuple[int, int, int], OrderedDict[int, None]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    trades: list[tuple[int, ...]] = field(default_factory=list)
    volume: dict[int, int] = field(default_factory=dict)
    actions: list[tuple[int, int, int, bytes, int]] = field(default_factory=list)
    events: list[tuple[int, int, int]] = field(default_factory=list)
    symbols: dict[int, bytes] = field(default_factory=dict)

    def _count(self, name: str) -> None:
        self.counters[name] = self.counters.get(name, 0) + 1

    def _add(self, ref: int, stock: int, side: int, px: int, qty: int, dup: str) -> None:
        if qty == 0:
            self._count("zero")
        elif ref in self.orders:
            self._count(dup)
        else:
            self.orders[ref] = [stock, side, px, qty]
            self.levels.setdefault((stock, side, px), OrderedDict())[ref] = None

    def _remove(self, ref: int) -> None:
        stock, side, px, _ = self.orders.pop(ref)
        q = self.levels[(stock, side, px)]
        del q[ref]
        if not q:
            del self.levels[(stock, side, px)]

    def _reduce(self, ref: int, n: int, over: str) -> None:
        left = self.orders[ref][3]
        if n >= left:
            if n > left:
                self._count(over)
            self._remove(ref)
        else:
            self.orders[ref][3] = left - n

    def _trade(self, *row: int) -> None:
        # seq, timestamp, price, shares, match, ref, stock, kind, side, printable, cross
        self.trades.append(row)
        if row[9] != ord("N"):
            self.volume[row[6]] = self.volume.get(row[6], 0) + row[3]

    def apply(self, data: bytes) -> None:  # noqa: C901 (one branch per message type)
        """Apply a raw stream (``u16`` length + message, repeated); seq from 1."""
        p, seq = 0, 0
        while p < len(data):
            (ln,) = struct.unpack_from(">H", data, p)
            m = data[p + 2 : p + 2 + ln]
            p += 2 + ln
            seq += 1
            t = chr(m[0])
            stock = struct.unpack_from(">H", m, 1)[0]
            ts = int.from_bytes(m[5:11], "big")
            self.counts[t] = self.counts.get(t, 0) + 1
            if t in "AF":
                ref, side, qty, sym, px = struct.unpack_from(">Qc I 8s I", m, 11)
                self.symbols.setdefault(stock, sym)
                self._add(ref, stock, 0 if side == b"B" else 1, px, qty, "dup_add")
                continue
            if t in "DUECX":
                (ref,) = struct.unpack_from(">Q", m, 11)
                if ref not in self.orders:
                    self._count("unknown_" + t)
                    continue
                o_stock, o_side, o_px, _ = self.orders[ref]
            if t == "D":
                self._remove(ref)
            elif t == "U":
                new, qty, px = struct.unpack_from(">QII", m, 19)
                self._remove(ref)
                self._add(new, o_stock, o_side, px, qty, "dup_replace")
            elif t in "EC":
                n, match = struct.unpack_from(">IQ", m, 19)
                printable, px = 89, o_px
                if t == "C":
                    printable, px = m[31], struct.unpack_from(">I", m, 32)[0]
                side = BUY if o_side == 0 else SELL
                self._trade(seq, ts, px, n, match, ref, o_stock, ord(t), side, printable, 0)
                self._reduce(ref, n, "over_exec")
            elif t == "X":
                self._reduce(ref, struct.unpack_from(">I", m, 19)[0], "over_cancel")
            elif t == "P":
                ref, side, n, _, px, match = struct.unpack_from(">QcI8sIQ", m, 11)
                s = BUY if side == b"B" else SELL
                self._trade(seq, ts, px, n, match, ref, stock, ord("P"), s, 89, 0)
            elif t == "Q":
                n, _, px, match, cross = struct.unpack_from(">Q8sIQc", m, 11)
                self._trade(seq, ts, px, n, match, 0, stock, ord("Q"), 0, 89, cross[0])
            elif t == "H":
                state, reason = m[19], m[21:25]
                self.actions.append((seq, ts, stock, reason, state))
            elif t == "S":
                self.events.append((seq, ts, m[11]))
            elif t == "R":
                self.symbols[stock] = m[11:19]
            elif t == "B":
                self._count("broken")

    def side_levels(self, stock: int, side: int) -> list[list[int]]:
        """Rows (price, shares, orders) of one side, best first."""
        rows = [
            [px, sum(self.orders[r][3] for r in q), len(q)]
            for (s, sd, px), q in self.levels.items()
            if s == stock and sd == side
        ]
        return sorted(rows, reverse=side == 0)


def _broken(match: int, loc: int = 1) -> bytes:
    return _hdr(b"B", loc) + struct.pack(">Q", match)


def _irregular_tail(ref_book: Reference, seed: int) -> bytes:
    """Messages a clean generated day never holds, about the orders resting at its end."""
    rnd = random.Random(seed)
    live = sorted(ref_book.orders)
    picks = rnd.sample(live, 12)
    stock_of = {r: ref_book.orders[r][0] for r in picks}
    qty_of = {r: ref_book.orders[r][3] for r in picks}
    px_of = {r: ref_book.orders[r][2] for r in picks}
    top = max(live) + 1
    a, b, c, d, e, f, g, h, i, j, k, m = picks
    msgs = [
        D(10**12), E(10**12 + 1, 5, 1), C(10**12 + 2, 5, 2, 100), X(10**12 + 3, 1),
        U(10**12 + 4, top + 50, 100, 10_000),  # unknown refs, each type
        A(a, "B", 100, px_of[a], loc=stock_of[a]),  # a duplicate add
        A(top, "S", 0, 10_000, loc=stock_of[b]),  # zero shares
        E(b, qty_of[b] + 5, 3, loc=stock_of[b]),  # executes more than it has
        X(c, qty_of[c] + 1, loc=stock_of[c]),  # cancels more than it has
        U(d, e, 300, px_of[d] + 100, loc=stock_of[d]),  # the new ref rests already
        U(f, top + 1, 0, px_of[f], loc=stock_of[f]),  # replaced by zero shares
        C(g, 1, 4, px_of[g] + 7, "N", loc=stock_of[g]),  # not printable
        U(h, (1 << 40) + 7, 200, px_of[h], loc=stock_of[h]),  # a ref far beyond the rest
        A(top + 2, "B", 10, px_of[i], loc=stock_of[i]),  # after the jump: an old ref
        D(i, loc=stock_of[i]), E(j, 1, 5, loc=stock_of[j]), X(k, 1, loc=stock_of[k]),
        U(m, top + 3, 50, px_of[m] - 100, loc=stock_of[m]), D(top + 2, loc=stock_of[i]),
        _broken(77),
    ]  # fmt: skip
    return raw(*msgs)


def _day(seed: int) -> tuple[bytes, Reference]:
    data = generate_bytes(400_000, n_stocks=30, seed=seed)
    day_book = Reference()
    day_book.apply(data)
    full = data + _irregular_tail(day_book, seed)
    ref_book = Reference()
    ref_book.apply(full)
    return full, ref_book


def _pieces(data: bytes, n: int, seed: int) -> list[bytes]:
    bounds, p = [0], 0
    while p < len(data):
        p += 2 + struct.unpack_from(">H", data, p)[0]
        bounds.append(p)
    cuts = sorted(random.Random(seed).sample(bounds[1:-1], n - 1))
    edges = [0, *cuts, len(data)]
    return [data[x:y] for x, y in itertools.pairwise(edges)]


def _assert_equal(b: ItchBooks, ref_book: Reference, n_stocks: int) -> None:
    assert b.check() == []
    assert b.counts() == ref_book.counts
    assert b.n_orders == len(ref_book.orders)
    assert b.n_levels == len(ref_book.levels)
    for stock in range(n_stocks + 2):
        for side, code in ((0, BUY), (1, SELL)):
            assert b.levels(stock, code).tolist() == ref_book.side_levels(stock, side)
        assert b.volume(stock) == ref_book.volume.get(stock, 0)
    for (stock, side, px), q in ref_book.levels.items():
        rows = b.queue(stock, BUY if side == 0 else SELL, px)
        assert rows[:, 0].tolist() == list(q)
        assert rows[:, 1].tolist() == [ref_book.orders[r][3] for r in q]
    for r, (stock, side, px, qty) in ref_book.orders.items():
        assert b.order(r) == (stock, BUY if side == 0 else SELL, px, qty)
    c = b.counters()
    got = {f"unknown_{t}": n for t, n in c.unknown.items() if n}
    got |= {
        name: n
        for name, n in (
            ("dup_add", c.duplicate_adds), ("dup_replace", c.duplicate_replaces),
            ("over_exec", c.over_executions), ("over_cancel", c.over_cancels),
            ("zero", c.zero_share_adds), ("broken", c.broken_trades),
        )
        if n
    }  # fmt: skip
    assert got == ref_book.counters
    tr = b.trades
    cols = (
        "seq",
        "timestamp",
        "price",
        "shares",
        "match_number",
        "order_reference_number",
        "stock_locate",
        "kind",
        "side",
        "printable",
        "cross_type",
    )
    assert list(zip(*(tr[col].tolist() for col in cols), strict=True)) == ref_book.trades
    acts = b.trading_actions
    assert [
        (
            int(r["seq"]),
            int(r["timestamp"]),
            int(r["stock_locate"]),
            int(r["reason"]).to_bytes(4, "little"),
            int(r["trading_state"]),
        )
        for r in acts
    ] == ref_book.actions
    ev = b.system_events
    assert (
        list(
            zip(
                ev["seq"].tolist(), ev["timestamp"].tolist(), ev["event_code"].tolist(), strict=True
            )
        )
        == ref_book.events
    )
    for stock, sym in ref_book.symbols.items():
        assert b.symbol(stock) == sym.decode().strip()


@pytest.mark.parametrize(
    ("seed", "window_bits", "capacity", "pieces"),
    [(11, 20, 1 << 16, 1), (12, 6, 4, 1), (13, 3, 4, 7), (14, 0, 16, 3)],
)
def test_a_generated_day_with_irregular_messages_equals_the_reference(
    seed: int, window_bits: int, capacity: int, pieces: int
) -> None:
    data, ref_book = _day(seed)
    # the tail did what it is there for
    assert {"dup_add", "dup_replace", "over_exec", "over_cancel", "zero", "broken"} <= set(
        ref_book.counters
    )
    assert all(ref_book.counters[f"unknown_{t}"] == 1 for t in "DECXU")
    b = ItchBooks(capacity=capacity, level_capacity=capacity, window_bits=window_bits)
    for piece in _pieces(data, pieces, seed):
        b.apply_raw(piece)
    _assert_equal(b, ref_book, 30)
    if window_bits <= 6:  # most resting orders were moved out of the window
        assert int((b._o.rec[1 << window_bits :, 0] > 0).sum()) > b.n_orders // 2
    # removed orders are gone from the books' lookup too
    removed = [r for r in range(1, 2_000) if r not in ref_book.orders]
    assert all(b.order(r) is None for r in removed)


def test_check_finds_an_old_order_its_ref_no_longer_finds() -> None:
    b = ItchBooks(window_bits=2)  # a window of 4 refs: refs 1-4 move to the overflow records
    b.apply_raw(raw(*[A(r, "B", 10 * r, 10_000 + r) for r in range(1, 9)]))
    o = b._o
    moved = [int(s) for s in np.flatnonzero(o.rec[o.window :, k.O_QTY] > 0)]
    assert sorted(int(o.refs[s]) for s in moved) == [1, 2, 3, 4]
    assert b.order(2) == (1, BUY, 10_002, 20)
    assert b.check() == []
    o.refs[moved[0]] += 1_000  # the record no longer names the ref its hash entry holds
    assert any("not found by its ref" in p for p in b.check())
    o.refs[moved[0]] -= 1_000
    assert b.check() == []
    k.ht_put(o.tab, 999, o.window, int(b._st[k.S_OSHIFT]))  # a hash entry of no order
    assert any("refs of no resting order" in p for p in b.check())
