# SPDX-License-Identifier: MIT
"""Queue position of own orders: exact in L3, modelled in L2 (compiled and ``.py_func``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.book import _kernels as bk
from engine.book.l2 import L2Books
from engine.book.l3 import L3Book
from engine.matching import _kernels as k
from engine.matching.models import ConservativeQueue, LogProbQueue, PowerProbQueue, QueueModel
from engine.matching.queue import L2QueuePositions, L3QueuePositions
from engine.types import (
    BUY,
    L2_EVENT_DTYPE,
    L2_SET,
    L2_TRADE,
    L3_ADD,
    L3_CANCEL,
    L3_EVENT_DTYPE,
    L3_EXECUTE,
    L3_MODIFY,
    OWN_ACTIVE,
    SELL,
)

PX_MIN = 100
N = 8


def _l3_run(mode: str, t: L3QueuePositions, ev: np.ndarray) -> np.ndarray:
    if mode == "jit":
        return t.apply(ev)
    t._book.validate(ev)
    t._room_for_fills()
    pos = 0
    while pos < len(ev):
        a = t._book.arrays
        args = (a.o, a.lv, a.st, a.keys, a.vals, a.free, ev, pos, t._own[: t._n], t._act, t._rs)
        pos = k.l3_replay_own.py_func(*args, t._ox, t._fills)
        if pos < len(ev):
            a.grow()
    return t._take_fills()


_l3_op = st.tuples(
    st.sampled_from([L3_ADD] * 4 + [L3_MODIFY, L3_CANCEL, L3_EXECUTE, L3_EXECUTE]),
    st.integers(0, 9),
    st.sampled_from([BUY, SELL]),
    st.integers(PX_MIN, PX_MIN + N - 1),
    st.integers(1, 5),
)


@pytest.mark.parametrize("mode", ["jit", "py"])
@settings(max_examples=100, deadline=None)
@given(
    ops=st.lists(_l3_op, min_size=1, max_size=60),
    own=st.lists(
        st.tuples(
            st.integers(0, 59),
            st.sampled_from([BUY, SELL]),
            st.integers(PX_MIN, PX_MIN + N - 1),
            st.integers(1, 6),
        ),
        max_size=4,
    ),
)
def test_l3_ahead_is_exact_and_fills_account_for_quantity(
    mode: str, ops: list[tuple[int, int, int, int, int]], own: list[tuple[int, int, int, int]]
) -> None:
    book = L3Book(PX_MIN, N, 16)
    t = L3QueuePositions(book)
    for n, (at, sd, px, q) in enumerate(sorted(own)):
        t.add(1000 + n, sd, px, q, ts=at)
    filled: dict[int, int] = {}
    for i, (act, oid, sd, px, q) in enumerate(ops):
        ev = np.zeros(1, L3_EVENT_DTYPE)
        ev[0] = (i, oid, px, q, sd, act)
        for f in _l3_run(mode, t, ev):
            assert f["liquidity"] in (1, 2)
            filled[int(f["order_id"])] = filled.get(int(f["order_id"]), 0) + int(f["qty"])
        a = book.arrays
        for r in t.orders:
            if r["status"] == OWN_ACTIVE:
                si = 0 if r["side"] == BUY else 1
                exact = bk.l3_qty_ahead(a.o, a.lv, si, int(r["px"]) - PX_MIN, int(r["seq"]))
                assert r["ahead"] == exact
    for r in t.orders:
        assert filled.get(int(r["order_id"]), 0) + int(r["leaves"]) == int(r["qty"])


def test_l3_own_order_fills_only_after_the_queue_ahead() -> None:
    book = L3Book(PX_MIN, N, 16)
    t = L3QueuePositions(book)
    ev = np.zeros(2, L3_EVENT_DTYPE)
    ev[0] = (1, 1, 104, 5, BUY, L3_ADD)
    ev[1] = (2, 2, 104, 3, BUY, L3_ADD)
    t.apply(ev)
    t.add(99, BUY, 104, 4, ts=3)
    ev = np.zeros(4, L3_EVENT_DTYPE)
    ev[0] = (3, 3, 104, 2, BUY, L3_ADD)  # joins behind the own order
    ev[1] = (4, 2, 104, 0, BUY, L3_CANCEL)  # 3 lots ahead leave
    ev[2] = (5, 1, 104, 5, BUY, L3_EXECUTE)  # the head trades: own is first now
    ev[3] = (6, 3, 104, 2, BUY, L3_EXECUTE)  # an order behind trades: own got it first
    fills = t.apply(ev[:1])
    assert t.status(99) == "active"
    assert t.ahead(99) == 8.0
    fills = t.apply(ev[1:3])
    assert len(fills) == 0
    assert t.ahead(99) == 0.0
    fills = t.apply(ev[3:])
    assert fills["qty"].tolist() == [2]
    assert t.leaves(99) == 2
    ex = np.zeros(1, L3_EVENT_DTYPE)
    ex[0] = (7, 3, 103, 1, BUY, L3_ADD)
    t.apply(ex)
    ex[0] = (8, 3, 103, 1, BUY, L3_EXECUTE)  # a trade below the own bid: traded through
    fills = t.apply(ex)
    assert fills["qty"].tolist() == [2]
    assert t.status(99) == "filled"


# ------------------------------------------------------------------------------- L2 models
class RefQueue:
    """The L2 queue-model formulas in plain Python floats, for one own order."""

    def __init__(self, model: QueueModel, ahead: float) -> None:
        self.code, self.param = model.code
        self.ahead = ahead
        self.pending = 0.0

    def prob(self, front: float, back: float) -> float:
        if self.code == 1:
            fb, ff = max(back, 0.0) ** self.param, max(front, 0.0) ** self.param
        elif self.code == 2:
            fb, ff = math.log1p(max(back, 0.0)), math.log1p(max(front, 0.0))
        else:
            return 1.0
        return 1.0 if fb + ff <= 0 else fb / (fb + ff)

    def depth(self, prev: int, new: int) -> None:
        chg = float(prev - new) - self.pending
        self.pending = 0.0
        if chg <= 0:
            self.ahead = min(self.ahead, float(new))
            return
        front = self.ahead
        back = float(prev) - front
        p = self.prob(front, back)
        est = front - (1.0 - p) * chg + min(back - p * chg, 0.0)
        self.ahead = max(min(est, float(new)), 0.0)

    def trade(self, qty: int, leaves: int) -> int:
        self.ahead -= qty
        self.pending += qty
        if self.ahead < 0:
            x = min(leaves, int(-self.ahead + 1e-9))
            self.ahead = 0.0
            return x
        return 0


_MODELS = [ConservativeQueue(), PowerProbQueue(2.0), PowerProbQueue(3.0), LogProbQueue()]


def _l2_run(mode: str, t: L2QueuePositions, ev: np.ndarray) -> np.ndarray:
    if mode == "jit":
        return t.apply(ev)
    t._books.validate(ev)
    t._room_for_fills()
    code, param = t._model.code
    args = (t._books._q, t._books._st, ev, 0, t._own[: t._n], t._act, t._rs, t._ox)
    pos = k.l2_replay_own.py_func(*args, t._fills, code, param)
    assert pos == len(ev)
    return t._take_fills()


@pytest.mark.parametrize("mode", ["jit", "py"])
@settings(max_examples=100, deadline=None)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just(L2_SET), st.integers(0, 30)),  # new size of the own level
            st.tuples(st.just(L2_TRADE), st.integers(1, 6)),  # sell trade at the own price
        ),
        max_size=40,
    ),
    start=st.integers(0, 20),
    qty=st.integers(1, 10),
    model=st.sampled_from(_MODELS),
)
def test_l2_queue_models_match_reference(
    mode: str, steps: list[tuple[int, int]], start: int, qty: int, model: QueueModel
) -> None:
    books = L2Books(1, 64, centre=100)
    books.apply_levels(0, [BUY, SELL], [100, 105], [start or 1, 50])
    level = start or 1
    t = L2QueuePositions(books, model)
    t.add(7, 0, BUY, 100, qty, ts=0)
    ref: RefQueue | None = None
    leaves = qty
    for i, (kind, v) in enumerate(steps):
        ev = np.zeros(1, L2_EVENT_DTYPE)
        ev[0] = (i, 100, v, 0, BUY if kind == L2_SET else SELL, kind)
        fills = _l2_run(mode, t, ev)
        if ref is None:
            ref = RefQueue(model, float(level))  # the order arrives with the first event
        if kind == L2_SET:
            ref.depth(level, v)
            level = v
            assert fills.shape[0] == 0
        elif leaves > 0:
            x = ref.trade(v, leaves)
            leaves -= x
            assert int(fills["qty"].sum()) == x
        if leaves > 0:
            assert t.ahead(7) == pytest.approx(ref.ahead, abs=1e-9)
            assert t.ahead(7) >= 0.0
        assert t.leaves(7) == leaves


def test_l2_conservative_advances_on_trades_only() -> None:
    books = L2Books(1, 64, centre=100)
    books.apply_levels(0, [BUY, SELL], [100, 102], [10, 5])
    t = L2QueuePositions(books, ConservativeQueue())
    t.add(1, 0, BUY, 100, 3, ts=0)
    ev = np.zeros(5, L2_EVENT_DTYPE)
    ev[0] = (1, 100, 13, 0, BUY, L2_SET)  # joins behind: no change
    ev[1] = (2, 100, 9, 0, BUY, L2_SET)  # 4 canceled: 3 from behind, then 1 from the front
    ev[2] = (3, 100, 9, 0, SELL, L2_TRADE)  # 9 traded: exactly the queue ahead
    ev[3] = (4, 100, 2, 0, SELL, L2_TRADE)  # 2 more: the own order gets them
    ev[4] = (5, 99, 1, 0, SELL, L2_TRADE)  # a trade below the bid: the rest fills
    assert t.apply(ev[:1]).shape[0] == 0
    assert t.ahead(1) == 10.0
    assert t.apply(ev[1:2]).shape[0] == 0
    assert t.ahead(1) == 9.0
    assert t.apply(ev[2:3]).shape[0] == 0
    assert t.ahead(1) == 0.0
    f = t.apply(ev[3:4])
    assert f["qty"].tolist() == [2]
    f = t.apply(ev[4:])
    assert f["qty"].tolist() == [1]
    assert t.status(1) == "filled"


def test_l2_probabilistic_models_move_ahead_on_cancels() -> None:
    for model in (PowerProbQueue(3.0), LogProbQueue()):
        books = L2Books(1, 64, centre=100)
        books.apply_levels(0, [BUY, SELL], [100, 102], [10, 5])
        t = L2QueuePositions(books, model)
        t.add(1, 0, BUY, 100, 3, ts=0)
        ev = np.zeros(2, L2_EVENT_DTYPE)
        ev[0] = (1, 100, 20, 0, BUY, L2_SET)  # 10 join behind
        ev[1] = (2, 100, 14, 0, BUY, L2_SET)  # 6 cancel: split between front and back
        t.apply(ev)
        assert 4.0 <= t.ahead(1) < 10.0


def test_l2_cancel_and_marketable_arrival() -> None:
    books = L2Books(1, 64, centre=100)
    books.apply_levels(0, [BUY, SELL], [100, 102], [10, 5])
    t = L2QueuePositions(books)
    t.add(1, 0, BUY, 100, 3, ts=1)
    t.add(2, 0, BUY, 102, 3, ts=1)  # crosses the ask: fills as taker at 102
    t.cancel(1, ts=5)
    ev = np.zeros(3, L2_EVENT_DTYPE)
    ev[0] = (1, 101, 1, 0, BUY, L2_SET)
    ev[1] = (6, 100, 30, 0, SELL, L2_TRADE)
    fills = t.apply(ev[:2])
    assert fills["px"].tolist() == [102]
    assert t.status(1) == "canceled"
    with pytest.raises(ValueError, match="ts: own orders must arrive in time order"):
        t.add(3, 0, BUY, 100, 1, ts=0)
    with pytest.raises(ValueError, match="order_id: 2 was already added"):
        t.add(2, 0, BUY, 100, 1, ts=9)


@pytest.mark.parametrize("mode", ["jit", "py"])
def test_l2_replay_updates_the_books_exactly_like_the_book_kernel(mode: str) -> None:
    rng = np.random.default_rng(9)
    n = 400
    ev = np.zeros(n, L2_EVENT_DTYPE)
    ev["ts"] = np.arange(n)
    ev["book"] = rng.integers(0, 2, n)
    ev["side"] = rng.choice([BUY, SELL], n)
    ev["px"] = rng.integers(70, 130, n)  # beyond the 32-level window: re-centres and drops
    ev["qty"] = rng.choice([0, 0, 1, 4], n)
    ev["kind"] = rng.choice([L2_SET] * 6 + [L2_TRADE], n)
    plain = L2Books(2, 32, centre=100)
    plain.apply(ev)
    books = L2Books(2, 32, centre=100)
    t = L2QueuePositions(books, PowerProbQueue(2.0))
    for j in range(20):
        t.add(j, j % 2, BUY if j % 3 else SELL, 95 + j % 10, 2, ts=j * 20)
    fills = _l2_run(mode, t, ev)
    np.testing.assert_array_equal(books.levels, plain.levels)
    np.testing.assert_array_equal(books.state, plain.state)
    own = t.orders
    assert int(fills["qty"].sum()) == int((own["qty"] - own["leaves"]).sum())


@pytest.mark.parametrize("mode", ["jit", "py"])
def test_l3_replay_updates_the_book_exactly_like_the_book_kernel(mode: str) -> None:
    rng = np.random.default_rng(4)
    n = 500
    ev = np.zeros(n, L3_EVENT_DTYPE)
    ev["ts"] = np.arange(n)
    ev["action"] = rng.choice([L3_ADD, L3_ADD, L3_MODIFY, L3_CANCEL, L3_EXECUTE], n)
    ev["order_id"] = rng.integers(0, 60, n) * 7919
    ev["side"] = rng.choice([BUY, SELL], n)
    ev["px"] = rng.integers(PX_MIN, PX_MIN + N, n)
    ev["qty"] = rng.integers(0, 5, n)
    ev["qty"][(ev["action"] == L3_ADD) | (ev["action"] == L3_EXECUTE)] += 1
    plain = L3Book(PX_MIN, N, 4)
    plain.apply(ev)
    book = L3Book(PX_MIN, N, 4)
    t = L3QueuePositions(book)
    for j in range(30):
        t.add(10_000 + j, BUY if j % 2 else SELL, PX_MIN + j % N, 3, ts=j * 15)
    fills = _l3_run(mode, t, ev)
    assert book.resting().tolist() == plain.resting().tolist()
    np.testing.assert_array_equal(book.levels[:, :, 2:], plain.levels[:, :, 2:])
    assert (book.unknown, book.duplicates) == (plain.unknown, plain.duplicates)
    own = t.orders
    assert int(fills["qty"].sum()) == int((own["qty"] - own["leaves"]).sum())
    for side in (BUY, SELL):
        for px in range(PX_MIN, PX_MIN + N):
            assert book.fifo_ids(side, px) == plain.fifo_ids(side, px)
