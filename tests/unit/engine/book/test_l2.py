# SPDX-License-Identifier: MIT
"""L2 books: kernels (compiled and ``.py_func``) against a plain-Python reference model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.book import _kernels as k
from engine.book.l2 import L2Books
from engine.types import (
    BUY,
    L2_CLEAR,
    L2_EVENT_DTYPE,
    L2_NSTATE,
    L2_SET,
    L2_TRADE,
    L2S_ASK,
    L2S_BASE,
    L2S_BID,
    L2S_DROPPED,
    L2S_RECENTRES,
    L2S_TS,
    SELL,
)


class RefL2:
    """Dict-of-levels model of the windowed L2 books (same rules, no arrays)."""

    def __init__(self, n_books: int, n: int, centre: int) -> None:
        self.n = n
        self.base = [centre - n // 2] * n_books
        self.lv: list[list[dict[int, int]]] = [[{}, {}] for _ in range(n_books)]
        self.dropped = [0] * n_books
        self.recentres = [0] * n_books

    def recentre(self, b: int, new_base: int) -> None:
        if new_base == self.base[b]:
            return
        for side in self.lv[b]:
            for px in list(side):
                if not new_base <= px < new_base + self.n:
                    del side[px]
                    self.dropped[b] += 1
        self.base[b] = new_base
        self.recentres[b] += 1

    def set(self, b: int, si: int, px: int, v: int) -> int:
        i = px - self.base[b]
        if not 0 <= i < self.n:
            if v == 0:
                return 0
            deep = (
                (i < 0 and bool(self.lv[b][0]))
                if si == 0
                else (i >= self.n and bool(self.lv[b][1]))
            )
            if deep:
                self.dropped[b] += 1
                return -1
            self.recentre(b, px - self.n // 2)
        prev = self.lv[b][si].get(px, 0)
        if v:
            self.lv[b][si][px] = v
        else:
            self.lv[b][si].pop(px, None)
        return prev

    def clear(self, b: int) -> None:
        self.lv[b] = [{}, {}]

    def dense(self, b: int) -> np.ndarray:
        out = np.zeros((2, self.n), np.int64)
        for si in range(2):
            for px, v in self.lv[b][si].items():
                out[si, px - self.base[b]] = v
        return out

    def best(self, b: int) -> tuple[int, int]:
        bids, asks = self.lv[b]
        bb = max(bids) - self.base[b] if bids else -1
        ba = min(asks) - self.base[b] if asks else self.n
        return bb, ba


def _check_same(q: np.ndarray, stt: np.ndarray, ref: RefL2) -> None:
    for b in range(q.shape[0]):
        np.testing.assert_array_equal(q[b], ref.dense(b), err_msg=f"book {b}")
        assert stt[b, L2S_BASE] == ref.base[b]
        assert (stt[b, L2S_BID], stt[b, L2S_ASK]) == ref.best(b)
        assert stt[b, L2S_DROPPED] == ref.dropped[b]
        assert stt[b, L2S_RECENTRES] == ref.recentres[b]


_event = st.tuples(
    st.integers(0, 2),  # book
    st.sampled_from([BUY, SELL]),
    st.integers(70, 130),  # px
    st.sampled_from([0, 0, 1, 2, 5, 9]),  # qty (0 deletes)
    st.sampled_from([L2_SET] * 12 + [L2_TRADE, L2_CLEAR]),
)

_APPLY: dict[str, Callable[..., Any]] = {"jit": k.l2_apply, "py": k.l2_apply.py_func}


@pytest.mark.parametrize("mode", ["jit", "py"])
@settings(max_examples=120, deadline=None)
@given(events=st.lists(_event, max_size=80), n=st.integers(4, 24), centre=st.integers(90, 110))
def test_l2_kernel_matches_reference(
    mode: str, events: list[tuple[int, int, int, int, int]], n: int, centre: int
) -> None:
    q = np.zeros((3, 2, n), np.int64)
    stt = np.zeros((3, L2_NSTATE), np.int64)
    stt[:, L2S_BASE] = centre - n // 2
    stt[:, L2S_BID] = -1
    stt[:, L2S_ASK] = n
    ref = RefL2(3, n, centre)
    apply = _APPLY[mode]
    for b, side, px, qty, kind in events:
        ev = np.zeros(1, L2_EVENT_DTYPE)
        ev[0] = (7, px, qty, b, side, kind)
        apply(q, stt, ev)
        if kind == L2_SET:
            ref.set(b, 0 if side == BUY else 1, px, qty)
        elif kind == L2_CLEAR:
            ref.clear(b)
        _check_same(q, stt, ref)


@pytest.mark.parametrize("fn", [k.l2_set, k.l2_set.py_func])
def test_l2_set_returns_previous_size_or_minus_one_when_dropped(fn: Callable[..., int]) -> None:
    q = np.zeros((1, 2, 10), np.int64)
    stt = np.zeros((1, L2_NSTATE), np.int64)
    stt[0, L2S_BID] = -1
    stt[0, L2S_ASK] = 10
    assert fn(q, stt, 0, 0, 5, 3) == 0
    assert fn(q, stt, 0, 0, 5, 4) == 3
    assert fn(q, stt, 0, 0, -50, 4) == -1  # deep bid below the window: dropped
    assert stt[0, L2S_DROPPED] == 1
    assert fn(q, stt, 0, 1, 30, 2) == 0  # ask above while no ask: re-centre on 30
    assert stt[0, L2S_BASE] == 25
    assert stt[0, L2S_BID] == -1  # the bid at 5 fell out of the window
    assert stt[0, L2S_ASK] == 5


@pytest.mark.parametrize("mode", ["jit", "py"])
@settings(max_examples=60, deadline=None)
@given(
    levels=st.lists(
        st.tuples(st.sampled_from([BUY, SELL]), st.integers(0, 400), st.integers(0, 9)),
        max_size=60,
    ),
    n=st.integers(4, 64),
)
def test_l2_snapshot_centres_on_mid_and_keeps_window(
    mode: str, levels: list[tuple[int, int, int]], n: int
) -> None:
    fn = k.l2_snapshot if mode == "jit" else k.l2_snapshot.py_func
    q = np.zeros((1, 2, n), np.int64)
    stt = np.zeros((1, L2_NSTATE), np.int64)
    side = np.array([s for s, _, _ in levels], np.int8)
    px = np.array([p for _, p, _ in levels], np.int64)
    qty = np.array([v for _, _, v in levels], np.int64)
    kept = fn(q, stt, 0, side, px, qty)
    live = {(s, p): v for s, p, v in levels if v > 0}  # later rows win, as in the kernel
    bids = [p for (s, p) in live if s == BUY]
    asks = [p for (s, p) in live if s == SELL]
    if not live:
        assert kept == 0
        return
    centre = (max(bids) + min(asks)) >> 1 if bids and asks else (max(bids) if bids else min(asks))
    base = centre - n // 2
    assert stt[0, L2S_BASE] == base
    expect = np.zeros((2, n), np.int64)
    for (s, p), v in live.items():
        if base <= p < base + n:
            expect[0 if s == BUY else 1, p - base] = v
    np.testing.assert_array_equal(q[0], expect)


def test_l2_books_wrapper_best_depth_top_and_views() -> None:
    books = L2Books(2, 50, centre=1000)
    books.apply_levels(1, [BUY, BUY, SELL, SELL], [999, 997, 1001, 1004], [5, 6, 7, 8])
    assert books.best_bid(1) == (999, 5)
    assert books.best_ask(1) == (1001, 7)
    assert books.best_bid(0) is None
    assert books.depth_at(1, BUY, 997) == 6
    assert books.depth_at(1, SELL, 5000) == 0
    bids, asks = books.top(1, 3)
    assert bids.tolist() == [[999, 5], [997, 6]]
    assert asks.tolist() == [[1001, 7], [1004, 8]]
    with pytest.raises(ValueError, match="read-only"):
        books.levels[0, 0, 0] = 1
    books.apply_levels(1, [BUY], [999], [0])
    assert books.best_bid(1) == (997, 6)
    books.clear(1)
    assert books.best_ask(1) is None


def test_l2_books_walk_away_recentres_and_keeps_the_touch() -> None:
    books = L2Books(1, 20, centre=100)
    for p in range(100, 400):  # the market walks up one tick at a time
        books.apply_levels(0, [SELL, BUY, SELL, BUY], [p, p, p + 1, p - 1], [0, 1, 1, 0])
        assert books.best_bid(0) == (p, 1)
        assert books.best_ask(0) == (p + 1, 1)
    assert books.recentres(0) > 10
    lo, hi = books.window(0)
    assert lo <= 399 < hi


def test_l2_books_memory_for_600_instruments_of_2000_levels() -> None:
    books = L2Books(600, 2000)
    assert books.nbytes <= 100 * 1024 * 1024
    assert books.levels.shape == (600, 2, 2000)


def test_l2_books_reject_bad_input_naming_field_and_value() -> None:
    books = L2Books(2, 10)
    ev = np.zeros(3, L2_EVENT_DTYPE)
    ev["side"] = BUY
    ev["book"] = [0, 1, 2]
    with pytest.raises(ValueError, match=r"events\[2\]\.book: must be in \[0, 2\), got 2"):
        books.apply(ev)
    ev["book"] = 0
    ev["side"][1] = 3
    with pytest.raises(
        ValueError, match=r"events\[1\]\.side: must be BUY \(1\) or SELL \(-1\), got 3"
    ):
        books.apply(ev)
    ev["side"][1] = SELL
    ev["qty"][0] = -1
    with pytest.raises(ValueError, match=r"events\[0\]\.qty: must be >= 0, got -1"):
        books.apply(ev)
    with pytest.raises(ValueError, match="dtype must be L2_EVENT_DTYPE"):
        books.apply(np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="book: must be in"):
        books.best_bid(5)
    with pytest.raises(ValueError, match="n_levels: must be >= 2, got 1"):
        L2Books(1, 1)


@pytest.mark.parametrize("fn", [k.l2_check, k.l2_check.py_func])
def test_l2_check_finds_the_first_bad_row(fn: Callable[..., int]) -> None:
    ev = np.zeros(4, L2_EVENT_DTYPE)
    ev["side"] = [BUY, SELL, BUY, SELL]
    ev["kind"] = [L2_SET, L2_TRADE, L2_SET, L2_CLEAR]
    assert fn(ev, 1) == -1
    ev["side"][3] = 0  # a clear needs no side
    assert fn(ev, 1) == -1
    ev["qty"][2] = -1
    assert fn(ev, 1) == 2
    ev["book"][1] = 1
    assert fn(ev, 1) == 1
    assert fn(ev, 2) == 2


@pytest.mark.parametrize("mode", ["jit", "py"])
def test_l2_bbo_path_equals_plain_path_and_records_the_touch(mode: str) -> None:
    rng = np.random.default_rng(5)
    n = 300
    ev = np.zeros(n, L2_EVENT_DTYPE)
    ev["book"] = rng.integers(0, 2, n)
    ev["side"] = rng.choice([BUY, SELL], n)
    ev["px"] = rng.integers(80, 120, n)
    ev["qty"] = rng.choice([0, 0, 1, 3], n)
    ev["kind"] = rng.choice([L2_SET] * 8 + [L2_TRADE], n)
    q1 = np.zeros((2, 2, 16), np.int64)
    s1 = np.zeros((2, L2_NSTATE), np.int64)
    s1[:, L2S_BASE] = 92
    s1[:, L2S_BID] = -1
    s1[:, L2S_ASK] = 16
    q2, s2 = q1.copy(), s1.copy()
    bbo = np.zeros((n, 4), np.int64)
    (k.l2_apply if mode == "jit" else k.l2_apply.py_func)(q1, s1, ev)
    fn = k.l2_apply_bbo if mode == "jit" else k.l2_apply_bbo.py_func
    bad = ev.copy()
    bad["qty"][n // 2] = -1
    assert fn(q2, s2, bad, bbo, 2) == -1 - n // 2  # checked first: nothing applied
    np.testing.assert_array_equal(q2, np.zeros_like(q2))
    assert fn(q2, s2, ev, bbo, 2) == n
    np.testing.assert_array_equal(q1, q2)
    np.testing.assert_array_equal(s1, s2)
    b = int(ev["book"][-1])
    bb, ba = int(s2[b, L2S_BID]), int(s2[b, L2S_ASK])
    assert bbo[-1, 0] == (s2[b, L2S_BASE] + bb if bb >= 0 else 0)
    assert bbo[-1, 2] == (s2[b, L2S_BASE] + ba if ba < 16 else 0)


def _fresh(books: int, n: int, centre: int) -> tuple[np.ndarray, np.ndarray]:
    q = np.zeros((books, 2, n), np.int64)
    stt = np.zeros((books, L2_NSTATE), np.int64)
    stt[:, L2S_BASE] = centre - n // 2
    stt[:, L2S_BID] = -1
    stt[:, L2S_ASK] = n
    return q, stt


@pytest.mark.parametrize("mode", ["jit", "py"])
@settings(max_examples=120, deadline=None)
@given(events=st.lists(_event, max_size=120), n=st.integers(4, 24), centre=st.integers(90, 110))
def test_l2_kernels_apply_a_whole_stream_in_one_call_like_the_reference(
    mode: str, events: list[tuple[int, int, int, int, int]], n: int, centre: int
) -> None:
    # One call over rows of three books interleaved: the current book's state is kept in
    # locals and must be written back when the book changes, around recentres and clears.
    ev = np.zeros(len(events), L2_EVENT_DTYPE)
    for r, (b, side, px, qty, kind) in enumerate(events):
        ev[r] = (1000 + r, px, qty, b, side, kind)
    ref = RefL2(3, n, centre)
    touches = []
    for b, side, px, qty, kind in events:
        if kind == L2_SET:
            ref.set(b, 0 if side == BUY else 1, px, qty)
        elif kind == L2_CLEAR:
            ref.clear(b)
        bb, ba = ref.best(b)
        dense = ref.dense(b)
        touches.append(
            (
                ref.base[b] + bb if bb >= 0 else 0,
                dense[0, bb] if bb >= 0 else 0,
                ref.base[b] + ba if ba < n else 0,
                dense[1, ba] if ba < n else 0,
            )
        )
    last_ts = {b: 1000 + r for r, (b, *_rest) in enumerate(events)}
    py = mode == "py"
    q, stt = _fresh(3, n, centre)
    (k.l2_apply.py_func if py else k.l2_apply)(q, stt, ev)
    _check_same(q, stt, ref)
    for b in range(3):
        assert stt[b, L2S_TS] == last_ts.get(b, 0)
    q2, st2 = _fresh(3, n, centre)
    out = np.zeros((len(events), 4), np.int64)
    assert (k.l2_apply_bbo.py_func if py else k.l2_apply_bbo)(q2, st2, ev, out, 3) == len(ev)
    _check_same(q2, st2, ref)
    assert [tuple(r) for r in out.tolist()] == touches
    # Book 0's rows alone, on a single book (l2_apply's one-book loop).
    rows = ev[ev["book"] == 0]
    ref1 = RefL2(1, n, centre)
    for r in rows:
        if r["kind"] == L2_SET:
            ref1.set(0, 0 if r["side"] == BUY else 1, int(r["px"]), int(r["qty"]))
        elif r["kind"] == L2_CLEAR:
            ref1.clear(0)
    q1, st1 = _fresh(1, n, centre)
    (k.l2_apply.py_func if py else k.l2_apply)(q1, st1, rows)
    _check_same(q1, st1, ref1)
    assert st1[0, L2S_TS] == (rows["ts"][-1] if len(rows) else 0)
    # Book 0's level sets alone, as columns.
    sets = [(side, px, qty) for b, side, px, qty, kind in events if b == 0 and kind == L2_SET]
    ref0 = RefL2(1, n, centre)
    for side, px, qty in sets:
        ref0.set(0, 0 if side == BUY else 1, px, qty)
    q3, st3 = _fresh(1, n, centre)
    cols = np.array([[px, qty, side] for side, px, qty in sets], np.int64).reshape(-1, 3)
    (k.l2_apply_one.py_func if py else k.l2_apply_one)(
        q3, st3, cols[:, 0].copy(), cols[:, 1].copy(), cols[:, 2].astype(np.int8)
    )
    _check_same(q3, st3, ref0)
