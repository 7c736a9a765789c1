# SPDX-License-Identifier: MIT
"""L3 book: kernels (compiled and ``.py_func``) against a plain-Python FIFO model."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.book import _kernels as k
from engine.book.l3 import L3Arrays, L3Book
from engine.types import (
    BUY,
    ID_EMPTY,
    L3_ADD,
    L3_CANCEL,
    L3_CLEAR,
    L3_EVENT_DTYPE,
    L3_EXECUTE,
    L3_MODIFY,
    L3S_ASK,
    L3S_BID,
    L3S_DUPLICATE,
    L3S_NORDERS,
    L3S_UNKNOWN,
    LV_CNT,
    LV_HEAD,
    LV_QTY,
    OR_ID,
    OR_NEXT,
    OR_QTY,
    PRIO_DEFAULT,
    PRIO_LOSE_ON_DECREASE,
    PRIO_LOSE_ON_INCREASE,
    PRIO_LOSE_ON_PRICE,
    SELL,
)

PX_MIN = 100
N_LEVELS = 12


class RefL3:
    """Market-by-order model: a dict of orders and a list per level in FIFO order."""

    def __init__(self, policy: int) -> None:
        self.policy = policy
        self.orders: dict[int, list[int]] = {}  # id -> [side, px, qty]
        self.fifo: dict[tuple[int, int], list[int]] = {}
        self.unknown = 0
        self.duplicates = 0

    def _unlink(self, oid: int) -> None:
        side, px, _ = self.orders[oid]
        self.fifo[(side, px)].remove(oid)

    def _link(self, oid: int) -> None:
        side, px, _ = self.orders[oid]
        self.fifo.setdefault((side, px), []).append(oid)

    def apply(self, action: int, oid: int, side: int, px: int, qty: int) -> None:
        if action == L3_ADD:
            if oid in self.orders:
                self.duplicates += 1
                return
            self.orders[oid] = [side, px, qty]
            self._link(oid)
            return
        if action == L3_CLEAR:
            self.orders.clear()
            self.fifo.clear()
            return
        if oid not in self.orders:
            self.unknown += 1
            return
        o = self.orders[oid]
        if action == L3_MODIFY:
            if qty <= 0:
                self._unlink(oid)
                del self.orders[oid]
                return
            requeue = (
                px != o[1]
                or (qty > o[2] and self.policy & PRIO_LOSE_ON_INCREASE)
                or (qty < o[2] and self.policy & PRIO_LOSE_ON_DECREASE)
            )
            if requeue:
                self._unlink(oid)
                o[1], o[2] = px, qty
                self._link(oid)
            else:
                o[2] = qty
            return
        left = o[2] - qty if (action == L3_EXECUTE or qty > 0) else 0
        if left <= 0:
            self._unlink(oid)
            del self.orders[oid]
        else:
            o[2] = left

    def best(self) -> tuple[int, int]:
        bids = [px for (s, px), ids in self.fifo.items() if s == BUY and ids]
        asks = [px for (s, px), ids in self.fifo.items() if s == SELL and ids]
        bb = max(bids) - PX_MIN if bids else -1
        ba = min(asks) - PX_MIN if asks else N_LEVELS
        return bb, ba


def _walk(a: L3Arrays, si: int, i: int) -> list[tuple[int, int]]:
    out = []
    slot = a.lv[si, i, LV_HEAD]
    while slot >= 0:
        out.append((int(a.o[slot, OR_ID]), int(a.o[slot, OR_QTY])))
        slot = a.o[slot, OR_NEXT]
    return out


def _check_same(a: L3Arrays, ref: RefL3) -> None:
    for si, side in ((0, BUY), (1, SELL)):
        for i in range(N_LEVELS):
            got = _walk(a, si, i)
            ids = ref.fifo.get((side, PX_MIN + i), [])
            want = [(oid, ref.orders[oid][2]) for oid in ids]
            assert got == want, (side, PX_MIN + i)
            assert a.lv[si, i, LV_QTY] == sum(q for _, q in want)
            assert a.lv[si, i, LV_CNT] == len(want)
    assert (a.st[L3S_BID], a.st[L3S_ASK]) == ref.best()
    assert a.st[L3S_NORDERS] == len(ref.orders)
    assert a.st[L3S_UNKNOWN] == ref.unknown
    assert a.st[L3S_DUPLICATE] == ref.duplicates
    assert int(np.count_nonzero(a.keys != ID_EMPTY)) == len(ref.orders)
    for oid in ref.orders:
        slot = k.l3_lookup(a.keys, a.vals, oid)
        assert slot >= 0
        assert a.o[slot, OR_ID] == oid


_ID_SPACES = {
    "dense": list(range(12)),
    "sparse": [(j << 40) | 7 for j in range(6)] + [(j << 17) - 3 for j in range(6)],
    "negative": [-j - 1 for j in range(12)],
}

_op = st.tuples(
    st.sampled_from(
        [L3_ADD] * 5 + [L3_MODIFY] * 2 + [L3_CANCEL] * 2 + [L3_EXECUTE] * 2 + [L3_CLEAR]
    ),
    st.integers(0, 11),
    st.sampled_from([BUY, SELL]),
    st.integers(PX_MIN, PX_MIN + N_LEVELS - 1),
    st.integers(-1, 6),
)


@pytest.mark.parametrize("mode", ["jit", "py"])
@settings(max_examples=120, deadline=None)
@given(
    ops=st.lists(_op, max_size=70),
    space=st.sampled_from(sorted(_ID_SPACES)),
    policy=st.sampled_from(
        [PRIO_DEFAULT, PRIO_DEFAULT | PRIO_LOSE_ON_DECREASE, PRIO_LOSE_ON_PRICE]
    ),
)
def test_l3_kernel_matches_reference(
    mode: str, ops: list[tuple[int, int, int, int, int]], space: str, policy: int
) -> None:
    a = L3Arrays(PX_MIN, N_LEVELS, 80, policy)
    ref = RefL3(policy)
    fn = k.l3_apply if mode == "jit" else k.l3_apply.py_func
    ids = _ID_SPACES[space]
    for action, j, side, px, qty in ops:
        if action in (L3_ADD, L3_EXECUTE) and qty <= 0:
            qty = 1
        ev = np.zeros(1, L3_EVENT_DTYPE)
        ev[0] = (1, ids[j], px, qty, side, action)
        fn(a.o, a.lv, a.st, a.keys, a.vals, a.free, ev)
        ref.apply(action, ids[j], side, px, qty)
        _check_same(a, ref)


@pytest.mark.parametrize("fn", [k.l3_qty_ahead, k.l3_qty_ahead.py_func])
def test_qty_ahead_is_fifo_sum(fn: object) -> None:
    book = L3Book(PX_MIN, N_LEVELS, 8)
    ev = np.zeros(4, L3_EVENT_DTYPE)
    ev["action"] = L3_ADD
    ev["order_id"] = [1, 2, 3, 4]
    ev["side"] = BUY
    ev["px"] = [105, 105, 105, 104]
    ev["qty"] = [3, 4, 5, 6]
    book.apply(ev)
    assert book.qty_ahead(1) == 0
    assert book.qty_ahead(2) == 3
    assert book.qty_ahead(3) == 7
    assert book.qty_ahead(4) == 0
    # size increase of order 1 sends it behind 3 (CME rule)
    mod = np.zeros(1, L3_EVENT_DTYPE)
    mod[0] = (2, 1, 105, 10, BUY, L3_MODIFY)
    book.apply(mod)
    assert book.fifo_ids(BUY, 105) == [2, 3, 1]
    assert book.qty_ahead(1) == 9
    # a decrease keeps the place
    mod[0] = (3, 2, 105, 1, BUY, L3_MODIFY)
    book.apply(mod)
    assert book.fifo_ids(BUY, 105) == [2, 3, 1]
    assert book.qty_ahead(1) == 6


def test_l3_book_grows_and_keeps_every_order() -> None:
    book = L3Book(0, 1000, capacity=2)
    n = 500
    ev = np.zeros(n, L3_EVENT_DTYPE)
    ev["action"] = L3_ADD
    ev["order_id"] = np.arange(n) * 7919 + (1 << 50)
    ev["side"] = np.where(np.arange(n) % 2 == 0, BUY, SELL)
    ev["px"] = np.where(ev["side"] == BUY, 400 - np.arange(n) % 50, 500 + np.arange(n) % 50)
    ev["qty"] = 1 + np.arange(n) % 7
    book.apply(ev)
    assert book.n_orders == n
    assert book.arrays.capacity >= n
    rest = book.resting()
    assert sorted(rest[:, 0].tolist()) == sorted(ev["order_id"].tolist())
    ask_px = int(ev["px"][ev["side"] == SELL].min())
    assert book.best_bid() == (400, int(ev["qty"][ev["px"] == 400].sum()))
    assert book.best_ask() == (ask_px, int(ev["qty"][ev["px"] == ask_px].sum()))
    assert not book.is_crossed()
    cancel = ev.copy()
    cancel["action"] = L3_CANCEL
    cancel["qty"] = 0
    book.apply(cancel)
    assert book.n_orders == 0
    assert book.best_bid() is None
    assert book.unknown == 0


def test_l3_book_records_are_cache_line_aligned() -> None:
    book = L3Book(0, 10, 100)
    assert book.arrays.o.ctypes.data % 64 == 0
    assert book.arrays.o.strides == (64, 8)


def test_l3_book_counts_unknown_and_duplicate_ids() -> None:
    book = L3Book(0, 10, 4)
    ev = np.zeros(3, L3_EVENT_DTYPE)
    ev[0] = (1, 5, 3, 2, BUY, L3_ADD)
    ev[1] = (2, 5, 3, 2, BUY, L3_ADD)
    ev[2] = (3, 6, 3, 2, BUY, L3_CANCEL)
    book.apply(ev)
    assert (book.unknown, book.duplicates, book.n_orders) == (1, 1, 1)
    assert book.order(5) == (BUY, 3, 2)
    assert book.order(6) is None
    with pytest.raises(KeyError, match="order_id: 6 is not resting"):
        book.qty_ahead(6)


def test_l3_book_rejects_bad_input_naming_field_and_value() -> None:
    book = L3Book(100, 10, 4)
    ev = np.zeros(2, L3_EVENT_DTYPE)
    ev[0] = (1, 5, 103, 2, BUY, L3_ADD)
    ev[1] = (1, 6, 110, 2, BUY, L3_ADD)
    with pytest.raises(ValueError, match=r"events\[1\]\.px: must be in \[100, 110\), got 110"):
        book.apply(ev)
    ev[1] = (1, 6, 105, 0, BUY, L3_ADD)
    with pytest.raises(ValueError, match=r"events\[1\]\.qty: must be > 0 on an add, got 0"):
        book.apply(ev)
    ev[1] = (1, 6, 105, 1, 0, L3_ADD)
    with pytest.raises(ValueError, match=r"events\[1\]\.side: must be BUY or SELL, got 0"):
        book.apply(ev)
    ev[1] = (1, 6, 105, 1, BUY, 9)
    with pytest.raises(ValueError, match=r"events\[1\]\.action"):
        book.apply(ev)
    assert book.n_orders == 0  # nothing applied
    with pytest.raises(ValueError, match="policy"):
        L3Book(0, 10, 4, policy=99)


@pytest.mark.parametrize("fn", [k.l3_check, k.l3_check.py_func])
def test_l3_check_finds_the_first_bad_row(fn: object) -> None:
    ev = np.zeros(3, L3_EVENT_DTYPE)
    ev[0] = (1, 5, 103, 2, BUY, L3_ADD)
    ev[1] = (2, 5, 0, 1, 0, L3_EXECUTE)  # side and price do not matter on an execute
    ev[2] = (3, 5, 104, 0, 0, L3_MODIFY)
    assert fn(ev, 100, 110) == -1  # type: ignore[operator]
    ev[2]["px"] = 110
    assert fn(ev, 100, 110) == 2  # type: ignore[operator]
    ev[1]["qty"] = 0
    assert fn(ev, 100, 110) == 1  # type: ignore[operator]
    ev[0]["order_id"] = ID_EMPTY
    assert fn(ev, 100, 110) == 0  # type: ignore[operator]


@pytest.mark.parametrize("mode", ["jit", "py"])
def test_l3_bbo_path_equals_flat_path_and_records_the_touch(mode: str) -> None:
    rng = np.random.default_rng(11)
    n = 400
    ev = np.zeros(n, L3_EVENT_DTYPE)
    ev["action"] = rng.choice([L3_ADD, L3_ADD, L3_MODIFY, L3_CANCEL, L3_EXECUTE], n)
    ev["order_id"] = rng.integers(0, 40, n) * (1 << 33)
    ev["side"] = rng.choice([BUY, SELL], n)
    ev["px"] = rng.integers(PX_MIN, PX_MIN + N_LEVELS, n)
    ev["qty"] = rng.integers(1, 5, n)
    a = L3Arrays(PX_MIN, N_LEVELS, 64, PRIO_DEFAULT)
    b = L3Arrays(PX_MIN, N_LEVELS, 64, PRIO_DEFAULT)
    flat = k.l3_apply if mode == "jit" else k.l3_apply.py_func
    with_bbo = k.l3_apply_bbo if mode == "jit" else k.l3_apply_bbo.py_func
    bbo = np.zeros((n, 4), np.int64)
    for i in range(n):
        flat(a.o, a.lv, a.st, a.keys, a.vals, a.free, ev[i : i + 1])
        with_bbo(b.o, b.lv, b.st, b.keys, b.vals, b.free, ev[i : i + 1], bbo[i : i + 1])
        bb, ba = int(a.st[L3S_BID]), int(a.st[L3S_ASK])
        want = [
            PX_MIN + bb if bb >= 0 else 0,
            int(a.lv[0, bb, LV_QTY]) if bb >= 0 else 0,
            PX_MIN + ba if ba < N_LEVELS else 0,
            int(a.lv[1, ba, LV_QTY]) if ba < N_LEVELS else 0,
        ]
        assert bbo[i].tolist() == want
    np.testing.assert_array_equal(a.lv, b.lv)
    np.testing.assert_array_equal(a.st, b.st)
    np.testing.assert_array_equal(a.keys, b.keys)
