# SPDX-License-Identifier: MIT
"""Every hand-inlined copy of a book, matching or queue step leaves the same state (issue 23).

The hot loops of ``engine/book/_kernels.py``, ``engine/matching/_kernels.py`` and
``engine/backtest/_kernels.py`` repeat the steps of a few reference kernels flat (with numba,
helpers called on every event's path cost reference counting), so the copies can drift
apart. Here every copy of a group runs on the same event streams (hypothesis-generated,
hand-made edge cases, and the synthetic market of ``tests/benchmarks/kernels_gen.py``) and
everything it leaves is compared, array by array:

L2 book (``q``, ``st``: levels, window base, best indices, drop/re-centre counters, time)
    ``l2_set``/``l2_clear`` row by row (the complete version, the reference), ``l2_apply``
    (its one-book loop and its many-book loop ``_l2_loop``), ``l2_apply_bbo``,
    ``l2_apply_row``, ``l2_apply_one``, the matching replay ``l2_replay_own`` (no own order),
    and the backtest's ``l2_book_state`` and ``bt_l2_quote`` (these two replay book 0 only:
    :class:`~engine.backtest.fast.FastBacktest` refuses rows of another book).
L3 book (``o``, ``lv``, ``st``, the id table and the free stack, whole)
    ``l3_apply_slow`` row by row (the reference), ``l3_apply``, ``l3_apply_bbo``,
    ``l3_replay_own`` (no own order), ``bt_l3_quote``; and the book the benchmarks'
    generator keeps with the helper kernels while it writes its stream.
Matching (book state and every ``EXEC_EVENT_DTYPE`` row)
    ``match_batch``, whose flat loop handles cancels and plain limit orders, against the
    general helpers ``_new``, ``_cancel`` and ``_replace`` run one command at a time.
Queue position (fills)
    the own-order steps of the backtest loops against those of the matching replays: the
    orders a fast backtest sent, replayed through ``l2_replay_own``/``l3_replay_own``, fill
    at the same times, prices and sizes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.backtest import _kernels as btk
from engine.backtest.fast import FastBacktest, FastResult
from engine.backtest.models import ConstantLatency
from engine.book import _kernels as bk
from engine.book.l2 import L2Books
from engine.book.l3 import L3Arrays
from engine.instruments import Instrument
from engine.matching import _kernels as mk
from engine.matching.models import ConservativeQueue, LogProbQueue, PowerProbQueue, QueueModel
from engine.strategy.examples import CompiledMarketMaker
from engine.strategy.params import Param
from engine.strategy.quoting import (
    ASK_PX,
    ASK_QTY,
    BID_PX,
    BID_QTY,
    MIN_INTERVAL,
    QuotingStrategy,
    quote_rule,
)
from engine.types import (
    ASK_SIDE,
    BID_SIDE,
    BUY,
    CMD_CANCEL,
    CMD_NEW,
    CMD_REPLACE,
    EXEC_EVENT_DTYPE,
    FILL_DTYPE,
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
    L3_ADD,
    L3_CANCEL,
    L3_CLEAR,
    L3_EVENT_DTYPE,
    L3_EXECUTE,
    L3_MODIFY,
    L3S_ASK,
    L3S_BASE,
    L3S_BID,
    L3S_FREE,
    L3S_TS,
    LV_QTY,
    OR_OWNER,
    ORD_LIMIT,
    ORD_MARKET,
    ORDER_CMD_DTYPE,
    OWN_ORDER_DTYPE,
    OWN_PENDING,
    PRIO_DEFAULT,
    SELL,
    STP_CANCEL_BOTH,
    STP_CANCEL_MAKER,
    STP_CANCEL_TAKER,
    STP_NONE,
    TIF_DAY,
    TIF_FOK,
    TIF_GTC,
    TIF_IOC,
)
from tests.benchmarks import kernels_gen as gen

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
Arr = npt.NDArray[np.generic]
Rows = npt.NDArray[np.void]

_NEVER = int(np.iinfo(np.int64).max)
_NO_BID = int(np.iinfo(np.int64).min)
INST = Instrument(symbol="T", tick_size=Decimal("0.25"))

CENTRE = 100  # L2: window centre, ticks
NL = 16  # L2: window levels (hypothesis prices reach well beyond it)
PX_MIN = 100  # L3: price of level 0
N3 = 12  # L3: levels


# ============================================================================ L2 copies
def _l2_arrays(n_books: int, n_levels: int = NL, centre: int = CENTRE) -> tuple[I64, I64]:
    """Fresh L2 arrays laid out as :class:`~engine.book.l2.L2Books` lays them out."""
    q = np.zeros((n_books, 2, n_levels), np.int64)
    s = np.zeros((n_books, L2_NSTATE), np.int64)
    s[:, L2S_BASE] = centre - n_levels // 2
    s[:, L2S_BID] = -1
    s[:, L2S_ASK] = n_levels
    return q, s


def _l2_touch(q: I64, s: I64, b: int) -> list[int]:
    """Touch of book ``b`` as ``l2_apply_bbo`` writes it (bid px, qty, ask px, qty)."""
    n = q.shape[2]
    base, i, j = int(s[b, L2S_BASE]), int(s[b, L2S_BID]), int(s[b, L2S_ASK])
    bid = [base + i, int(q[b, BID_SIDE, i])] if i >= 0 else [0, 0]
    ask = [base + j, int(q[b, ASK_SIDE, j])] if j < n else [0, 0]
    return bid + ask


def l2_reference(q: I64, s: I64, ev: Rows) -> I64:
    """``l2_set``/``l2_clear`` row by row (the complete version); return each row's touch."""
    out = np.zeros((ev.shape[0], 4), np.int64)
    for k, e in enumerate(ev):
        b = int(e["book"])
        if e["kind"] == L2_SET:
            si = BID_SIDE if e["side"] == BUY else ASK_SIDE
            bk.l2_set(q, s, b, si, int(e["px"]), int(e["qty"]))
        elif e["kind"] == L2_CLEAR:
            bk.l2_clear(q, s, b)
        s[b, L2S_TS] = e["ts"]
        out[k] = _l2_touch(q, s, b)
    return out


def l2_apply(q: I64, s: I64, ev: Rows) -> None:
    assert bk.l2_apply(q, s, ev) == ev.shape[0]


def l2_loop(q: I64, s: I64, ev: Rows) -> None:
    """The many-book loop, also for one book (``l2_apply`` takes ``_l2_apply_single`` then)."""
    bk._l2_loop(q, s, ev, np.empty((0, 4), np.int64), False)


def l2_apply_bbo(q: I64, s: I64, ev: Rows) -> I64:
    out = np.zeros((ev.shape[0], 4), np.int64)
    assert bk.l2_apply_bbo(q, s, ev, out, q.shape[0]) == ev.shape[0]
    return out


def l2_apply_row(q: I64, s: I64, ev: Rows) -> I64:
    out = np.zeros((ev.shape[0], 4), np.int64)
    for k in range(ev.shape[0]):
        assert bk.l2_apply_row(q, s, ev[k : k + 1], out[k : k + 1]) == ev[k]["kind"]
    return out


def l2_replay_own(q: I64, s: I64, ev: Rows) -> None:
    """The matching replay with no own order: its book steps alone."""
    rs = np.zeros(mk.RS_N, np.int64)
    rs[mk.RS_CANCEL_TS] = _NEVER
    ox = np.empty((q.shape[0], 2), np.int64)
    ox[:, 0], ox[:, 1] = _NO_BID, _NEVER
    own = np.zeros(0, OWN_ORDER_DTYPE)
    act = np.zeros(0, np.int64)
    fills = np.zeros(1, FILL_DTYPE)
    assert mk.l2_replay_own(q, s, ev, 0, own, act, rs, ox, fills, 0, 0.0) == ev.shape[0]


def l2_apply_one(q: I64, s: I64, ev: Rows) -> None:
    """Book 0 from columns: runs of level rows, ``l2_clear`` between them, time set here."""
    assert q.shape[0] == 1
    kinds = ev["kind"]
    k = 0
    while k < ev.shape[0]:
        if kinds[k] == L2_CLEAR:
            bk.l2_clear(q, s, 0)
            k += 1
            continue
        end = k
        while end < ev.shape[0] and kinds[end] != L2_CLEAR:
            end += 1
        run = ev[k:end][kinds[k:end] == L2_SET]
        px, qty = np.ascontiguousarray(run["px"]), np.ascontiguousarray(run["qty"])
        assert bk.l2_apply_one(q, s, px, qty, np.ascontiguousarray(run["side"])) == run.shape[0]
        k = end
    if ev.shape[0]:
        s[0, L2S_TS] = ev[-1]["ts"]  # (columns carry no time)


def l2_book_state(q: I64, s: I64, ev: Rows) -> npt.NDArray[np.uint8]:
    """The backtest's market-rules pass (book 0); its per-row states."""
    out = np.zeros(ev.shape[0], np.uint8)
    btk.l2_book_state(q, s, ev, out)
    return out


class _GivenBooks(FastBacktest):
    """A fast backtest on books the test made (so that their state can be read after)."""

    def __init__(self, books: L2Books | L3Arrays, strategy: QuotingStrategy, **kw: object):
        level = "l2" if isinstance(books, L2Books) else "l3"
        super().__init__(strategy, INST, level=level, **kw)  # type: ignore[arg-type]
        self.books = books

    def _books(self, ev: Rows) -> L2Books | L3Arrays:
        return self.books


def _far_maker() -> CompiledMarketMaker:
    """A market maker quoting 1,000 ticks away: outside every window here, so it never sends."""
    return CompiledMarketMaker(1, ["T"], half_spread_ticks=1000, skew_ticks_per_lot=0.0)


def bt_l2_quote(ev: Rows, n_levels: int = NL, centre: int = CENTRE) -> tuple[L2Books, FastResult]:
    """Replay book 0 through ``bt_l2_quote`` (rows before the live market via ``l2_apply``)."""
    books = L2Books(1, n_levels, centre=centre)
    fb = _GivenBooks(books, _far_maker(), n_levels=n_levels)
    res = fb.run(ev)
    assert res.events == ev.shape[0]
    assert res.orders.shape[0] == 0
    return books, res


def _l2_rows(rows: list[tuple[int, int, int, int, int]]) -> Rows:
    """Rows ``(book, kind, side, px, qty)``, ``ts`` 10, 20, 30, ..."""
    ev = np.zeros(len(rows), L2_EVENT_DTYPE)
    for k, (b, kind, side, px, qty) in enumerate(rows):
        ev[k] = (10 * (k + 1), px, qty, b, side, kind)
    return ev


#: A two-sided book and a trade: the backtest's market is live from the next row on.
_L2_OPEN = [
    (0, L2_SET, BUY, CENTRE - 1, 5),
    (0, L2_SET, SELL, CENTRE + 1, 5),
    (0, L2_TRADE, BUY, CENTRE + 1, 1),
]


def _assert_l2_same(name: str, ref: tuple[I64, I64], got: tuple[Arr, Arr]) -> None:
    np.testing.assert_array_equal(got[0], ref[0], err_msg=f"{name}: levels")
    np.testing.assert_array_equal(got[1], ref[1], err_msg=f"{name}: state")


def check_l2_copies(ev: Rows, n_books: int) -> None:
    """Run every L2 copy on ``ev``; assert the same levels, state and touches everywhere."""
    ref = _l2_arrays(n_books)
    touch = l2_reference(*ref, ev)
    runs: dict[str, Callable[[I64, I64, Rows], object]] = {
        "l2_apply": l2_apply,
        "_l2_loop": l2_loop,
        "l2_apply_bbo": l2_apply_bbo,
        "l2_apply_row": l2_apply_row,
        "l2_replay_own": l2_replay_own,
    }
    if n_books == 1:
        runs |= {"l2_apply_one": l2_apply_one, "l2_book_state": l2_book_state}
    for name, run in runs.items():
        got = _l2_arrays(n_books)
        out = run(*got, ev)
        _assert_l2_same(name, ref, got)
        if name in ("l2_apply_bbo", "l2_apply_row"):
            np.testing.assert_array_equal(out, touch, err_msg=f"{name}: touch per row")
        if name == "l2_book_state":
            state = np.zeros(ev.shape[0], np.uint8)
            btk.touch_state(touch, state)
            np.testing.assert_array_equal(out, state, err_msg=f"{name}: state per row")
    if n_books == 1:
        books, res = bt_l2_quote(ev)
        assert res.calls > 0  # the compiled loop replayed the live rows
        _assert_l2_same("bt_l2_quote", ref, (books.levels, books.state))


_l2_row = st.tuples(
    st.sampled_from([L2_SET] * 8 + [L2_TRADE, L2_CLEAR]),
    st.sampled_from([BUY, SELL]),
    st.integers(CENTRE - 3 * NL, CENTRE + 3 * NL),  # three windows wide: re-centres and drops
    st.sampled_from([0, 0, 1, 2, 7]),  # zero deletes a level (or is ignored outside)
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(_l2_row, min_size=1, max_size=80),
    books=st.lists(st.integers(0, 2), min_size=80, max_size=80),
)
def test_l2_copies_agree_on_many_books(
    rows: list[tuple[int, int, int, int]], books: list[int]
) -> None:
    ev = _l2_rows([(books[k], *r) for k, r in enumerate(rows)])
    check_l2_copies(ev, 3)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(_l2_row, min_size=1, max_size=80))
def test_l2_copies_agree_on_one_book(rows: list[tuple[int, int, int, int]]) -> None:
    check_l2_copies(_l2_rows(_L2_OPEN + [(0, *r) for r in rows]), 1)


# hand-made: (book, kind, side, px, qty)
_L2_CASES = {
    "crossing and locking levels": [
        (0, L2_SET, BUY, CENTRE + 2, 3),  # bid above the ask: crossed
        (0, L2_SET, SELL, CENTRE + 2, 4),  # locked
        (0, L2_SET, BUY, CENTRE + 2, 0),
        (0, L2_SET, SELL, CENTRE - 1, 0),  # deletes the opening bid's price on the ask side
    ],
    "walks away beyond the window, both ways": [
        (0, L2_SET, SELL, CENTRE + 1, 0),
        (0, L2_SET, BUY, CENTRE - 1, 0),
        (0, L2_SET, BUY, CENTRE + 40, 2),  # an empty side: re-centres on it
        (0, L2_SET, SELL, CENTRE + 41, 2),
        (0, L2_SET, BUY, CENTRE - 40, 9),  # deep below the best bid: dropped
        (0, L2_SET, SELL, CENTRE + 90, 9),  # deep above the best ask: dropped
        (0, L2_SET, BUY, CENTRE + 40, 0),
        (0, L2_SET, SELL, CENTRE + 41, 0),
        (0, L2_SET, SELL, CENTRE - 60, 1),  # empty book: re-centres far down
    ],
    "zero sizes outside the window, clears, trades": [
        (0, L2_SET, BUY, CENTRE - 500, 0),
        (0, L2_SET, SELL, CENTRE + 500, 0),
        (0, L2_TRADE, SELL, CENTRE - 1, 3),
        (0, L2_CLEAR, BUY, 0, 0),
        (0, L2_SET, SELL, CENTRE, 1),
        (0, L2_CLEAR, SELL, 0, 0),
        (0, L2_CLEAR, SELL, 0, 0),
    ],
    "every level of the window, then one beyond": [
        *[(0, L2_SET, BUY, CENTRE - NL // 2 + i, 1 + i) for i in range(NL // 2)],
        *[(0, L2_SET, SELL, CENTRE + i, 1 + i) for i in range(NL // 2)],
        (0, L2_SET, SELL, CENTRE + NL // 2, 5),  # beyond the top: dropped (an ask rests)
        (0, L2_SET, BUY, CENTRE - NL // 2 - 1, 5),  # below the bottom: dropped
        (0, L2_SET, BUY, CENTRE - NL // 2, 0),
    ],
}


@pytest.mark.parametrize("case", sorted(_L2_CASES))
def test_l2_copies_agree_on_edge_cases(case: str) -> None:
    check_l2_copies(_l2_rows(_L2_OPEN + _L2_CASES[case]), 1)
    many = [(k % 3, *r[1:]) for k, r in enumerate(_L2_OPEN + _L2_CASES[case])]
    check_l2_copies(_l2_rows(many), 3)


# ============================================================================ L3 copies
Arr3 = L3Arrays
L3Run = Callable[[Arr3, Rows, int], int]


def _l3_state(a: Arr3) -> dict[str, I64]:
    return {
        "o": a.o.copy(),
        "lv": a.lv.copy(),
        "st": a.st.copy(),
        "keys": a.keys.copy(),
        "vals": a.vals.copy(),
        "free": a.free.copy(),
    }


def _assert_l3_same(name: str, ref: dict[str, I64], got: dict[str, I64]) -> None:
    for key, want in ref.items():
        np.testing.assert_array_equal(got[key], want, err_msg=f"{name}: {key}")


def _l3_touch(a: Arr3) -> list[int]:
    n = a.lv.shape[1]
    base, i, j = int(a.st[L3S_BASE]), int(a.st[L3S_BID]), int(a.st[L3S_ASK])
    bid = [base + i, int(a.lv[BID_SIDE, i, LV_QTY])] if i >= 0 else [0, 0]
    ask = [base + j, int(a.lv[ASK_SIDE, j, LV_QTY])] if j < n else [0, 0]
    return bid + ask


def l3_reference(a: Arr3, ev: Rows, start: int, touch: I64 | None = None) -> int:
    """``l3_apply_slow`` (the general ``l3_apply_event``) row by row; return the next row."""
    for k in range(start, ev.shape[0]):
        e = ev[k]
        if e["action"] == L3_ADD and a.st[L3S_FREE] == 0:
            return k
        bk.l3_apply_slow(
            a.o,
            a.lv,
            a.st,
            a.keys,
            a.vals,
            a.free,
            int(e["action"]),
            int(e["order_id"]),
            int(e["side"]),
            int(e["px"]),
            int(e["qty"]),
        )
        a.st[L3S_TS] = e["ts"]
        if touch is not None:
            touch[k] = _l3_touch(a)
    return int(ev.shape[0])


def l3_apply(a: Arr3, ev: Rows, start: int) -> int:
    return start + int(bk.l3_apply(a.o, a.lv, a.st, a.keys, a.vals, a.free, ev[start:]))


def l3_apply_bbo(a: Arr3, ev: Rows, start: int, touch: I64 | None = None) -> int:
    out = np.zeros((ev.shape[0] - start, 4), np.int64)
    k = int(bk.l3_apply_bbo(a.o, a.lv, a.st, a.keys, a.vals, a.free, ev[start:], out))
    if touch is not None:
        touch[start : start + k] = out[:k]
    return start + k


def l3_replay_own(a: Arr3, ev: Rows, start: int) -> int:
    """The matching replay with no own order: its book steps alone."""
    rs = np.zeros(mk.RS_N, np.int64)
    rs[mk.RS_CANCEL_TS] = _NEVER
    ox = np.array([[_NO_BID, _NEVER]], np.int64)
    own = np.zeros(0, OWN_ORDER_DTYPE)
    args = (a.o, a.lv, a.st, a.keys, a.vals, a.free, ev, start, own, np.zeros(0, np.int64))
    return int(mk.l3_replay_own(*args, rs, ox, np.zeros(1, FILL_DTYPE)))


L3_COPIES: dict[str, L3Run] = {
    "l3_apply": l3_apply,
    "l3_apply_bbo": l3_apply_bbo,
    "l3_replay_own": l3_replay_own,
}


def _grown(run: L3Run, a: Arr3, ev: Rows) -> None:
    """Run to the end, doubling the capacity whenever an add finds no free slot."""
    k = 0
    while k < ev.shape[0]:
        k = run(a, ev, k)
        if k < ev.shape[0]:
            assert a.st[L3S_FREE] == 0
            assert ev[k]["action"] == L3_ADD
            a.grow()


def bt_l3_quote(ev: Rows, capacity: int, px_min: int = PX_MIN, n: int = N3) -> Arr3:
    """Replay through ``bt_l3_quote`` (rows before the live market via ``l3_apply``)."""
    a = L3Arrays(px_min, n, capacity, PRIO_DEFAULT)
    res = _GivenBooks(a, _far_maker()).run(ev)
    assert res.events == ev.shape[0]
    assert res.orders.shape[0] == 0
    assert res.calls > 0
    return a


def check_l3_copies(ev: Rows, capacity: int, policy: int = PRIO_DEFAULT) -> None:
    """Run every L3 copy on ``ev``; assert the same arrays (whole), stops and touches.

    With a small ``capacity`` the copies first run until an add finds the book full: each
    must stop at the same row with the same state. Then each runs to the end, growing.
    """
    ref = L3Arrays(PX_MIN, N3, capacity, policy)
    stop = l3_reference(ref, ev, 0)
    at_stop = _l3_state(ref)
    for name, run in L3_COPIES.items():
        a = L3Arrays(PX_MIN, N3, capacity, policy)
        assert run(a, ev, 0) == stop, name
        _assert_l3_same(f"{name} (stopped full at row {stop})", at_stop, _l3_state(a))
    touch = np.zeros((ev.shape[0], 4), np.int64)
    ref = L3Arrays(PX_MIN, N3, capacity, policy)
    _grown(lambda a, e, k: l3_reference(a, e, k, touch), ref, ev)
    want = _l3_state(ref)
    for name, run in L3_COPIES.items():
        a = L3Arrays(PX_MIN, N3, capacity, policy)
        _grown(run, a, ev)
        _assert_l3_same(name, want, _l3_state(a))
    got = np.zeros_like(touch)
    _grown(lambda a, e, k: l3_apply_bbo(a, e, k, got), L3Arrays(PX_MIN, N3, capacity, policy), ev)
    np.testing.assert_array_equal(got, touch, err_msg="l3_apply_bbo: touch per row")
    if policy == PRIO_DEFAULT:  # (the fast backtest's books have the default policy)
        _assert_l3_same("bt_l3_quote", want, _l3_state(bt_l3_quote(ev, capacity)))


def _l3_rows(rows: list[tuple[int, int, int, int, int]]) -> Rows:
    """Rows ``(action, order_id, side, px, qty)``, ``ts`` 10, 20, 30, ..."""
    ev = np.zeros(len(rows), L3_EVENT_DTYPE)
    for k, (action, oid, side, px, qty) in enumerate(rows):
        ev[k] = (10 * (k + 1), oid, px, qty, side, action)
    return ev


#: Two-sided, then an execution: the backtest's market is live from the next row on.
_L3_OPEN = [
    (L3_ADD, 1001, BUY, PX_MIN + 4, 5),
    (L3_ADD, 1002, SELL, PX_MIN + 6, 5),
    (L3_EXECUTE, 1002, SELL, PX_MIN + 6, 1),
]


@st.composite
def _l3_row(draw: st.DrawFn) -> tuple[int, int, int, int, int]:
    action = draw(st.sampled_from([L3_ADD] * 5 + [L3_MODIFY, L3_CANCEL, L3_EXECUTE] * 2))
    action = draw(st.sampled_from([action] * 30 + [L3_CLEAR]))
    oid = draw(st.integers(0, 11)) * 0x9E3779B1 - 5  # a small pool: duplicates, unknown ids
    side = draw(st.sampled_from([BUY, SELL]))
    px = draw(st.integers(PX_MIN, PX_MIN + N3 - 1))
    # modify to <= 0 removes the order, a cancel of <= 0 removes all of it
    qty = draw(st.integers(1, 5) if action in (L3_ADD, L3_EXECUTE) else st.integers(-1, 5))
    return action, oid, side, px, qty


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(_l3_row(), min_size=1, max_size=80),
    capacity=st.sampled_from([1, 2, 3, 8, 64]),
    policy=st.sampled_from([PRIO_DEFAULT, 1, 1 | 4, 1 | 2 | 4]),
)
def test_l3_copies_agree(
    rows: list[tuple[int, int, int, int, int]], capacity: int, policy: int
) -> None:
    check_l3_copies(_l3_rows(_L3_OPEN + rows), capacity, policy)


_L3_CASES = {
    "unknown ids and duplicates": [
        (L3_CANCEL, 77, BUY, PX_MIN, 0),
        (L3_EXECUTE, 78, SELL, PX_MIN, 2),
        (L3_MODIFY, 79, SELL, PX_MIN + 3, 2),
        (L3_ADD, 1001, SELL, PX_MIN + 9, 1),  # already resting (a bid): counted, ignored
        (L3_ADD, 5, BUY, PX_MIN + 4, 2),
        (L3_CANCEL, 5, BUY, PX_MIN + 4, 0),
        (L3_CANCEL, 5, BUY, PX_MIN + 4, 0),  # gone now: unknown
    ],
    "zero and oversized quantities": [
        (L3_ADD, 5, BUY, PX_MIN + 3, 4),
        (L3_CANCEL, 5, BUY, PX_MIN + 3, 9),  # more than it has: removed
        (L3_ADD, 6, SELL, PX_MIN + 7, 4),
        (L3_EXECUTE, 6, SELL, PX_MIN + 7, 9),
        (L3_ADD, 7, SELL, PX_MIN + 7, 4),
        (L3_MODIFY, 7, SELL, PX_MIN + 7, 0),  # modify to zero: removed
        (L3_ADD, 8, BUY, PX_MIN + 4, 4),
        (L3_CANCEL, 8, BUY, PX_MIN + 4, -3),  # a negative reduction removes it too
    ],
    "crossing adds and moves across the book": [
        (L3_ADD, 5, BUY, PX_MIN + 8, 2),  # above the best ask: the book crosses
        (L3_ADD, 6, SELL, PX_MIN + 1, 2),
        (L3_MODIFY, 1001, BUY, PX_MIN + 11, 3),  # to the top level
        (L3_MODIFY, 1002, SELL, PX_MIN, 6),  # to the bottom level, larger
        (L3_MODIFY, 5, BUY, PX_MIN + 8, 1),  # smaller: keeps its place
        (L3_EXECUTE, 1001, BUY, PX_MIN + 11, 3),
        (L3_CLEAR, 0, BUY, 0, 0),
        (L3_ADD, 1001, BUY, PX_MIN + 2, 1),  # its id is free again after the clear
    ],
    "more orders than slots": [
        *[
            (L3_ADD, 10 + i, BUY if i % 2 else SELL, PX_MIN + (i % N3), 1 + i % 3)
            for i in range(20)
        ],
        *[(L3_EXECUTE, 10 + i, BUY, PX_MIN, 1) for i in range(0, 20, 3)],
        *[(L3_ADD, 40 + i, SELL, PX_MIN + N3 - 1, 1) for i in range(6)],
    ],
}


@pytest.mark.parametrize("case", sorted(_L3_CASES))
@pytest.mark.parametrize("capacity", [2, 5, 64])
def test_l3_copies_agree_on_edge_cases(case: str, capacity: int) -> None:
    check_l3_copies(_l3_rows(_L3_OPEN + _L3_CASES[case]), capacity)


# ====================================================== the benchmarks' synthetic market
NT = 512  # the generator's window (its prices are window indices: base 0)


def _generated(n: int, seed: int) -> tuple[Rows, Rows, L3Arrays]:
    """The benchmarks' market: its L3 rows, the L2 rows they imply, and its own book."""
    a = L3Arrays(0, NT, 4096, PRIO_DEFAULT)
    l3 = np.zeros(n, L3_EVENT_DTYPE)
    l2 = np.zeros(n + n // 2 + 16, L2_EVENT_DTYPE)
    m = gen.generate(n, seed, 200, 0.06, 1000.0, a.o, a.lv, a.st, a.keys, a.vals, a.free, l3, l2)
    return l3, l2[:m].copy(), a


@pytest.mark.parametrize("seed", [1, 2])
def test_generated_market_builds_the_same_books_everywhere(seed: int) -> None:
    """The generator keeps its book with the helper kernels (``l3_new_order``, ``l3_reduce``,
    ``l3_remove``); every flat L3 copy rebuilds it from the stream, and every L2 copy turns
    the implied L2 stream into the same level sizes (and the naive baselines agree)."""
    l3, l2, made = _generated(3000, seed)
    assert l2.shape[0] > l3.shape[0]  # (each execution adds a trade row)
    want = _l3_state(made)
    want["o"][:, OR_OWNER] = 0  # (the generator keeps its dense ids there; the copies -1)
    for name, run in {"l3_reference": l3_reference, **L3_COPIES}.items():
        a = L3Arrays(0, NT, 4096, PRIO_DEFAULT)
        assert run(a, l3, 0) == l3.shape[0]
        got = _l3_state(a)
        assert got["st"][L3S_TS] == l3[-1]["ts"]
        got["st"][L3S_TS] = 0  # (the generator sets no time)
        got["o"][:, OR_OWNER] = 0
        _assert_l3_same(name, want, got)
    got = _l3_state(bt_l3_quote(l3, 4096, 0, NT))
    got["o"][:, OR_OWNER] = 0
    want["st"][L3S_TS] = l3[-1]["ts"]
    _assert_l3_same("bt_l3_quote", want, got)
    # L2: the level sizes are those of the L3 book (a window of NT levels from 0)
    q, s = _l2_arrays(1, NT, NT // 2)
    l2_reference(q, s, l2)
    np.testing.assert_array_equal(q[0], made.lv[:, :, LV_QTY])
    assert (s[0, L2S_BID], s[0, L2S_ASK]) == (made.st[L3S_BID], made.st[L3S_ASK])
    assert s[0, L2S_DROPPED] == 0
    assert s[0, L2S_RECENTRES] == 0
    for name, run_l2 in {"l2_apply": l2_apply, "l2_apply_one": l2_apply_one}.items():
        q2, s2 = _l2_arrays(1, NT, NT // 2)
        run_l2(q2, s2, l2)
        _assert_l2_same(name, (q, s), (q2, s2))
    # the benchmarks' naive baselines (dense arrays, no window) end on the same books
    qty = np.zeros((2, NT), np.int64)
    bbo = np.array([-1, NT], np.int64)
    side = np.ascontiguousarray(l2["side"])
    gen.naive_l2(side, l2["px"].copy(), l2["qty"].copy(), l2["kind"].copy(), qty, bbo)
    np.testing.assert_array_equal(qty, q[0])
    assert bbo.tolist() == [s[0, L2S_BID], s[0, L2S_ASK]]
    dense = ((l3["order_id"] ^ gen.KEY_XOR) // gen.KEY_MUL).astype(np.int64)
    o = np.zeros((int(dense.max()) + 1, 4), np.int64)
    lv = np.zeros((2, NT, 4), np.int64)
    lv[:, :, :2] = -1
    bbo = np.array([-1, NT], np.int64)
    gen.naive_l3(l3, dense, o, lv, bbo)
    np.testing.assert_array_equal(lv[:, :, 2:], made.lv[:, :, 2:])
    assert bbo.tolist() == [made.st[L3S_BID], made.st[L3S_ASK]]


# ============================================================================= matching
def match_flat(a: Arr3, cmds: Rows, start: int, out: Rows, k: int, stp: int) -> tuple[int, int]:
    """``match_batch`` from command ``start``; return (next command, next event row)."""
    done, m = mk.match_batch(a.o, a.lv, a.st, a.keys, a.vals, a.free, cmds[start:], out[k:], stp)
    out[k : k + m]["cmd"] += start
    return start + int(done), k + int(m)


def match_general(a: Arr3, cmds: Rows, start: int, out: Rows, k: int, stp: int) -> tuple[int, int]:
    """The general helpers one command at a time (``match_batch`` takes them out of line)."""
    for c in range(start, cmds.shape[0]):
        m = cmds[c]
        act, oid, ts, sd = int(m["action"]), int(m["order_id"]), int(m["ts"]), int(m["side"])
        arrays = (a.o, a.lv, a.st, a.keys, a.vals, a.free, out)
        if act == CMD_CANCEL:
            k = mk._cancel(*arrays, k, ts, c, oid, sd)
        elif act == CMD_REPLACE:
            k = mk._replace(*arrays, k, ts, c, oid, sd, int(m["px"]), int(m["qty"]), stp)
        else:
            if a.st[L3S_FREE] == 0:
                return c, k
            k = mk._new(
                *arrays,
                k,
                ts,
                c,
                oid,
                sd,
                int(m["px"]),
                int(m["qty"]),
                int(m["owner"]),
                int(m["ord_type"]),
                int(m["tif"]),
                stp,
            )
    return int(cmds.shape[0]), int(k)


def _run_matcher(
    run: Callable[[Arr3, Rows, int, Rows, int, int], tuple[int, int]],
    cmds: Rows,
    capacity: int,
    stp: int,
    grow: bool,
) -> tuple[int, Rows, dict[str, I64]]:
    a = L3Arrays(PX_MIN, N3, capacity, PRIO_DEFAULT)
    out = np.zeros(8 * cmds.shape[0] + 3 * 4096 + 16, EXEC_EVENT_DTYPE)
    c, k = run(a, cmds, 0, out, 0, stp)
    while grow and c < cmds.shape[0]:
        a.grow()
        c, k = run(a, cmds, c, out, k, stp)
    return c, out[:k].copy(), _l3_state(a)


def check_matching_copies(cmds: Rows, capacity: int, stp: int) -> None:
    for grow in (False, True):
        c0, ev0, s0 = _run_matcher(match_general, cmds, capacity, stp, grow)
        c1, ev1, s1 = _run_matcher(match_flat, cmds, capacity, stp, grow)
        assert c1 == c0, f"stopped at command {c1}, the general helpers at {c0}"
        np.testing.assert_array_equal(ev1, ev0, err_msg="match_batch: events")
        _assert_l3_same("match_batch", s0, s1)


@st.composite
def _cmd(draw: st.DrawFn) -> tuple[int, ...]:
    action = draw(st.sampled_from([CMD_NEW] * 6 + [CMD_CANCEL, CMD_CANCEL, CMD_REPLACE]))
    oid = draw(st.integers(1, 14))  # reused ids: duplicates, cancels of unknown or done orders
    px = draw(st.integers(PX_MIN - 2, PX_MIN + N3 + 1))  # a few beyond the price range
    qty = draw(st.integers(1, 6))
    owner = draw(st.sampled_from([-1, -1, 0, 1]))
    side = draw(st.sampled_from([BUY, SELL]))
    ord_type = draw(st.sampled_from([ORD_LIMIT] * 5 + [ORD_MARKET]))
    tif = draw(st.sampled_from([TIF_DAY, TIF_GTC, TIF_IOC, TIF_FOK, TIF_DAY]))
    return oid, px, qty, owner, side, action, ord_type, tif


def _cmd_rows(rows: Sequence[tuple[int, ...]]) -> Rows:
    """Rows ``(order_id, px, qty, owner, side, action, ord_type, tif)``, ``ts`` 10, 20, ..."""
    cmds = np.zeros(len(rows), ORDER_CMD_DTYPE)
    for k, r in enumerate(rows):
        cmds[k] = (10 * (k + 1), *r)
    return cmds


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(_cmd(), min_size=1, max_size=60),
    capacity=st.sampled_from([1, 3, 64]),
    stp=st.sampled_from([STP_NONE, STP_CANCEL_TAKER, STP_CANCEL_MAKER, STP_CANCEL_BOTH]),
)
def test_match_batch_flat_path_agrees_with_the_general_helpers(
    rows: list[tuple[int, ...]], capacity: int, stp: int
) -> None:
    check_matching_copies(_cmd_rows(rows), capacity, stp)


def test_matching_edge_cases_agree() -> None:
    lo, hi = PX_MIN, PX_MIN + N3 - 1
    rows = [  # (order_id, px, qty, owner, side, action, ord_type, tif)
        (1, lo + 3, 5, -1, BUY, CMD_NEW, ORD_LIMIT, TIF_DAY),
        (2, lo + 3, 2, -1, BUY, CMD_NEW, ORD_LIMIT, TIF_GTC),
        (3, lo + 2, 4, -1, SELL, CMD_NEW, ORD_LIMIT, TIF_DAY),  # crosses: sweeps 1 then 2
        (9, 0, 0, -1, BUY, CMD_CANCEL, ORD_LIMIT, TIF_DAY),  # unknown id
        (4, hi + 1, 1, -1, SELL, CMD_NEW, ORD_LIMIT, TIF_DAY),  # beyond the price range
        (4, lo - 1, 1, -1, BUY, CMD_NEW, ORD_LIMIT, TIF_IOC),
        (5, hi, 3, -1, SELL, CMD_NEW, ORD_LIMIT, TIF_DAY),
        (5, hi, 3, -1, SELL, CMD_NEW, ORD_LIMIT, TIF_DAY),  # duplicate id
        (6, hi, 9, -1, BUY, CMD_NEW, ORD_LIMIT, TIF_IOC),  # sweeps the book, rest expires
        (7, lo, 2, -1, BUY, CMD_NEW, ORD_LIMIT, TIF_DAY),
        (1, lo, 0, -1, BUY, CMD_CANCEL, ORD_LIMIT, TIF_DAY),  # done already: unknown
        (7, lo, 0, -1, SELL, CMD_CANCEL, ORD_LIMIT, TIF_DAY),  # side from the book, not the row
        *[(20 + i, lo + i % 4, 1, -1, BUY, CMD_NEW, ORD_LIMIT, TIF_DAY) for i in range(8)],
        (30, lo, 20, -1, SELL, CMD_NEW, ORD_LIMIT, TIF_DAY),  # takes all eight, rests
    ]
    for stp in (STP_NONE, STP_CANCEL_MAKER):
        for capacity in (1, 2, 64):
            check_matching_copies(_cmd_rows(rows), capacity, stp)


# ======================================================================= queue position
def _replay_own_l2(ev: Rows, orders: Rows, model: QueueModel, n: int, centre: int) -> Rows:
    """The orders a fast backtest sent, replayed through the matching copy; its fills."""
    q, s = _l2_arrays(1, n, centre)
    own = _fresh_own(orders)
    rs = np.zeros(mk.RS_N, np.int64)
    rs[mk.RS_CANCEL_TS] = _NEVER
    ox = np.array([[_NO_BID, _NEVER]], np.int64)
    fills = np.zeros(int(own["qty"].sum()) + 1, FILL_DTYPE)
    code, param = model.code
    act = np.zeros(own.shape[0], np.int64)
    assert mk.l2_replay_own(q, s, ev, 0, own, act, rs, ox, fills, code, param) == ev.shape[0]
    return fills[: rs[mk.RS_NFILLS]]


def _replay_own_l3(ev: Rows, orders: Rows, px_min: int, n: int) -> Rows:
    a = L3Arrays(px_min, n, 4096, PRIO_DEFAULT)
    own = _fresh_own(orders)
    rs = np.zeros(mk.RS_N, np.int64)
    rs[mk.RS_CANCEL_TS] = _NEVER
    ox = np.array([[_NO_BID, _NEVER]], np.int64)
    fills = np.zeros(int(own["qty"].sum()) + 1, FILL_DTYPE)
    act = np.zeros(own.shape[0], np.int64)
    args = (a.o, a.lv, a.st, a.keys, a.vals, a.free, ev, 0, own, act, rs, ox, fills)
    assert mk.l3_replay_own(*args) == ev.shape[0]
    return fills[: rs[mk.RS_NFILLS]]


def _fresh_own(orders: Rows) -> Rows:
    """The orders as they were sent: at the venue at ``ts``, canceled at ``cancel_ts``."""
    own = orders.copy()
    own["status"] = OWN_PENDING
    own["leaves"] = own["qty"]
    own["ahead"] = 0.0
    own["pending"] = 0.0
    own["seq"] = 0
    return own


_FILL_FIELDS = ["ts", "order_id", "px", "qty", "side", "liquidity", "instrument"]


def _assert_same_fills(fast: Rows, replay: Rows, last_ts: int) -> None:
    fast = fast[fast["ts"] <= last_ts]  # (the fast path also takes orders after the end)
    assert fast.shape[0] >= 5  # (the comparison has something to compare)
    for f in _FILL_FIELDS:
        np.testing.assert_array_equal(fast[f], replay[f], err_msg=f"fills: {f}")


@quote_rule
def join_touch_rule(
    now: int, bid: int, ask: int, position: int, quotes: I64, params: F64, state: F64
) -> int:
    """Quote ``params[0]`` lots at the touch on each side; pull a side at ``params[1]`` lots."""
    qty = int(params[0])
    if position < params[1]:
        quotes[BID_PX] = bid
        quotes[BID_QTY] = qty
    if position > -params[1]:
        quotes[ASK_PX] = ask
        quotes[ASK_QTY] = qty
    return 0


class JoinTouch(QuotingStrategy):
    """Joins the touch on both sides and follows it (a replace whenever it moves)."""

    name = "join the touch"
    params = (
        Param(name="qty_lots", kind=int, default=2, min=1, max=100, help="quote size"),
        Param(name="max_position_lots", kind=int, default=4, min=1, max=100, help="limit"),
        MIN_INTERVAL,
    )
    rule = join_touch_rule


@pytest.mark.parametrize(
    ("seed", "model", "qty"),
    [(3, ConservativeQueue(), 1), (4, PowerProbQueue(2.0), 3), (5, LogProbQueue(), 2)],
)
def test_backtest_l2_own_orders_fill_as_in_the_matching_replay(
    seed: int, model: QueueModel, qty: int
) -> None:
    out = np.zeros(4 * 3000 + 2 * 8, L2_EVENT_DTYPE)
    m = btk.random_walk_l2(out, 3000, seed, 8, 0.05, 0.3, 1000, 1_000_000, 5000.0)
    ev = out[:m].copy()
    n, centre = 64, 1000
    books = L2Books(1, n, centre=centre)
    mm = JoinTouch(1, ["T"], qty_lots=qty)
    res = _GivenBooks(
        books, mm, n_levels=n, queue=model, latency=ConstantLatency(order_ns=1, response_ns=7)
    ).run(ev)
    assert res.orders.shape[0] > 50
    replay = _replay_own_l2(ev, res.orders, model, n, centre)
    _assert_same_fills(res.fills, replay, int(ev["ts"][-1]))


@pytest.mark.parametrize("seed", [6, 7])
def test_backtest_l3_own_orders_fill_as_in_the_matching_replay(seed: int) -> None:
    l3, _l2, _made = _generated(4000, seed)
    a = L3Arrays(0, NT, 4096, PRIO_DEFAULT)
    mm = JoinTouch(1, ["T"], max_position_lots=50)
    res = _GivenBooks(a, mm, latency=ConstantLatency(order_ns=1, response_ns=7)).run(l3)
    assert res.orders.shape[0] > 10
    replay = _replay_own_l3(l3, res.orders, 0, NT)
    _assert_same_fills(res.fills, replay, int(l3["ts"][-1]))
