# SPDX-License-Identifier: MIT
"""Matching engine: kernels (compiled and ``.py_func``) against a plain-Python matcher,
plus the invariants (filled + leaves == qty, never crossed, never worse than the limit)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.matching import _kernels as k
from engine.matching.matcher import Matcher, make_cmds
from engine.types import (
    BUY,
    CMD_CANCEL,
    CMD_NEW,
    CMD_REPLACE,
    EXEC_CANCELED,
    EXEC_EXPIRED,
    EXEC_NEW,
    EXEC_REJECTED,
    EXEC_REPLACED,
    EXEC_TRADE,
    ID_EMPTY,
    LIQ_MAKER,
    LIQ_NONE,
    LIQ_TAKER,
    ORD_LIMIT,
    ORD_MARKET,
    REASON_BOOK_FULL,
    REASON_DUPLICATE_ID,
    REASON_FOK_UNFILLABLE,
    REASON_IOC_REMAINDER,
    REASON_NONE,
    REASON_PRICE_RANGE,
    REASON_REQUESTED,
    REASON_SELF_TRADE,
    REASON_UNKNOWN_ORDER,
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

PX_MIN = 100
N = 10

Event = tuple[int, ...]


class RefMatcher:
    """Price-time priority with lists of [id, qty, owner] per price level."""

    def __init__(self, stp: int) -> None:
        self.stp = stp
        self.side: dict[int, dict[int, list[list[int]]]] = {BUY: {}, SELL: {}}
        self.where: dict[int, tuple[int, int]] = {}

    def best(self, sd: int) -> int | None:
        lv = [p for p, q in self.side[sd].items() if q]
        if not lv:
            return None
        return max(lv) if sd == BUY else min(lv)

    def _find(self, oid: int) -> list[int] | None:
        if oid not in self.where:
            return None
        sd, px = self.where[oid]
        return next(r for r in self.side[sd][px] if r[0] == oid)

    def _remove(self, oid: int) -> None:
        sd, px = self.where.pop(oid)
        self.side[sd][px] = [r for r in self.side[sd][px] if r[0] != oid]

    def _rest(self, oid: int, sd: int, px: int, qty: int, owner: int) -> None:
        self.side[sd].setdefault(px, []).append([oid, qty, owner])
        self.where[oid] = (sd, px)

    def _crosses(self, sd: int, lim: int | None, px: int) -> bool:
        return lim is None or (px <= lim if sd == BUY else px >= lim)

    def _can_fill(self, sd: int, lim: int | None, qty: int, owner: int) -> bool:
        need = qty
        osd = -sd
        pxs = sorted(self.side[osd], reverse=(osd == BUY))
        check = self.stp != STP_NONE and owner >= 0
        for px in pxs:
            if not self._crosses(sd, lim, px):
                break
            for _oid, q, ow in self.side[osd][px]:
                if check and ow == owner:
                    if self.stp != STP_CANCEL_MAKER:
                        return False
                    continue
                need -= q
                if need <= 0:
                    return True
        return False

    def _take(
        self,
        ev: list[Event],
        ts: int,
        c: int,
        oid: int,
        sd: int,
        lim: int | None,
        qty: int,
        owner: int,
    ) -> tuple[int, bool]:
        rem = qty
        osd = -sd
        check = self.stp != STP_NONE and owner >= 0
        while rem > 0:
            bpx = self.best(osd)
            if bpx is None or not self._crosses(sd, lim, bpx):
                break
            head = self.side[osd][bpx][0]
            mid, mq, mow = head
            if check and mow == owner:
                if self.stp == STP_CANCEL_TAKER:
                    return rem, True
                self._remove(mid)
                ev.append(
                    (ts, mid, oid, bpx, mq, 0, c, osd, EXEC_CANCELED, LIQ_NONE, REASON_SELF_TRADE)
                )
                if self.stp == STP_CANCEL_BOTH:
                    return rem, True
                continue
            q = min(rem, mq)
            rem -= q
            ev.append((ts, oid, mid, bpx, q, rem, c, sd, EXEC_TRADE, LIQ_TAKER, REASON_NONE))
            ev.append((ts, mid, oid, bpx, q, mq - q, c, osd, EXEC_TRADE, LIQ_MAKER, REASON_NONE))
            if q == mq:
                self._remove(mid)
            else:
                head[1] = mq - q
        return rem, False

    def _finish(
        self,
        ev: list[Event],
        ts: int,
        c: int,
        oid: int,
        sd: int,
        px: int,
        rem: int,
        owner: int,
        stopped: bool,
        rest: bool,
    ) -> None:
        if rem <= 0:
            return
        if stopped:
            ev.append((ts, oid, -1, px, rem, 0, c, sd, EXEC_CANCELED, LIQ_NONE, REASON_SELF_TRADE))
        elif not rest:
            ev.append(
                (ts, oid, -1, px, rem, 0, c, sd, EXEC_EXPIRED, LIQ_NONE, REASON_IOC_REMAINDER)
            )
        else:
            self._rest(oid, sd, px, rem, owner)

    def submit(self, cmd: Any, c: int) -> list[Event]:
        ev: list[Event] = []
        ts, oid, px, qty, owner, sd, act, typ, tif = (int(x) for x in cmd)
        in_range = PX_MIN <= px < PX_MIN + N
        if act == CMD_CANCEL:
            r = self._find(oid)
            if r is None:
                ev.append(
                    (ts, oid, -1, 0, 0, 0, c, sd, EXEC_REJECTED, LIQ_NONE, REASON_UNKNOWN_ORDER)
                )
            else:
                rsd, rpx = self.where[oid]
                self._remove(oid)
                ev.append(
                    (ts, oid, -1, rpx, r[1], 0, c, rsd, EXEC_CANCELED, LIQ_NONE, REASON_REQUESTED)
                )
        elif act == CMD_REPLACE:
            r = self._find(oid)
            if r is None:
                ev.append(
                    (ts, oid, -1, px, qty, 0, c, sd, EXEC_REJECTED, LIQ_NONE, REASON_UNKNOWN_ORDER)
                )
                return ev
            rsd, rpx = self.where[oid]
            if not in_range:
                ev.append(
                    (
                        ts,
                        oid,
                        -1,
                        px,
                        qty,
                        r[1],
                        c,
                        rsd,
                        EXEC_REJECTED,
                        LIQ_NONE,
                        REASON_PRICE_RANGE,
                    )
                )
                return ev
            if px == rpx and qty <= r[1]:
                r[1] = qty
                ev.append((ts, oid, -1, px, qty, qty, c, rsd, EXEC_REPLACED, LIQ_NONE, REASON_NONE))
                return ev
            ow = r[2]
            self._remove(oid)
            ev.append((ts, oid, -1, px, qty, qty, c, rsd, EXEC_REPLACED, LIQ_NONE, REASON_NONE))
            rem, stopped = self._take(ev, ts, c, oid, rsd, px, qty, ow)
            self._finish(ev, ts, c, oid, rsd, px, rem, ow, stopped, True)
        else:
            if oid in self.where:
                ev.append(
                    (ts, oid, -1, px, qty, 0, c, sd, EXEC_REJECTED, LIQ_NONE, REASON_DUPLICATE_ID)
                )
                return ev
            market = typ == ORD_MARKET
            if not market and not in_range:
                ev.append(
                    (ts, oid, -1, px, qty, 0, c, sd, EXEC_REJECTED, LIQ_NONE, REASON_PRICE_RANGE)
                )
                return ev
            lim = None if market else px
            ev.append((ts, oid, -1, px, qty, qty, c, sd, EXEC_NEW, LIQ_NONE, REASON_NONE))
            if tif == TIF_FOK and not self._can_fill(sd, lim, qty, owner):
                ev.append(
                    (ts, oid, -1, px, qty, 0, c, sd, EXEC_EXPIRED, LIQ_NONE, REASON_FOK_UNFILLABLE)
                )
                return ev
            rem, stopped = self._take(ev, ts, c, oid, sd, lim, qty, owner)
            self._finish(
                ev,
                ts,
                c,
                oid,
                sd,
                px,
                rem,
                owner,
                stopped,
                not market and tif not in (TIF_IOC, TIF_FOK),
            )
        return ev

    def resting(self) -> list[tuple[int, int, int, int]]:
        rows = []
        for sd in (BUY, SELL):
            for px, lst in self.side[sd].items():
                rows += [(oid, sd, px, q) for oid, q, _ in lst]
        return sorted(rows)

    def fifo(self, sd: int, px: int) -> list[int]:
        return [r[0] for r in self.side[sd].get(px, [])]


_FIELDS = (
    "ts",
    "order_id",
    "other_id",
    "px",
    "qty",
    "leaves",
    "cmd",
    "side",
    "kind",
    "liquidity",
    "reason",
)


def _rows(out: np.ndarray) -> list[Event]:
    return [tuple(int(r[f]) for f in _FIELDS) for r in out]


def _match_batch_py(a: Any, cmds: np.ndarray, out: np.ndarray, stp: int) -> tuple[int, int]:
    """``match_batch`` with its flat loop run as Python (``match_flat.py_func``)."""
    flat = k.match_flat.py_func
    c, n = flat(a.o, a.lv, a.st, a.keys, a.vals, a.free, cmds, 0, out, 0, stp)
    while c < cmds.shape[0]:
        if cmds[c]["action"] == CMD_NEW and a.st[k.L3S_FREE] == 0:
            break
        n = k._slow_cmd(a.o, a.lv, a.st, a.keys, a.vals, a.free, out, n, c, cmds[c], stp)
        c, n = flat(a.o, a.lv, a.st, a.keys, a.vals, a.free, cmds, c + 1, out, n, stp)
    return int(c), int(n)


def _run(mode: str, m: Matcher, cmds: np.ndarray) -> np.ndarray:
    if mode == "jit":
        return m.submit(cmds)
    parts = []
    pos = 0
    while True:  # as Matcher.submit: grow and resume when the book is full
        a = m.arrays
        out = np.zeros(8 * (cmds.shape[0] - pos) + 3 * a.n_orders + 16, m._out.dtype)
        done, n = _match_batch_py(a, cmds[pos:], out, m._stp)
        part = out[:n].copy()
        part["cmd"] += pos
        parts.append(part)
        pos += done
        if pos >= cmds.shape[0]:
            return np.concatenate(parts)
        a.grow()


_cmd = st.tuples(
    st.sampled_from([CMD_NEW] * 6 + [CMD_CANCEL] * 2 + [CMD_REPLACE] * 2),
    st.integers(0, 11),  # id
    st.sampled_from([BUY, SELL]),
    st.integers(PX_MIN - 1, PX_MIN + N),  # px, includes out of range
    st.integers(1, 8),
    st.sampled_from([ORD_LIMIT] * 5 + [ORD_MARKET]),
    st.sampled_from([TIF_DAY, TIF_GTC, TIF_GTC, TIF_IOC, TIF_FOK]),
    st.sampled_from([-1, 0, 1]),
)


@pytest.mark.parametrize("mode", ["jit", "py"])
@settings(max_examples=150, deadline=None)
@given(
    cmds=st.lists(_cmd, max_size=60),
    stp=st.sampled_from([STP_NONE, STP_CANCEL_TAKER, STP_CANCEL_MAKER, STP_CANCEL_BOTH]),
    batch=st.integers(1, 7),
)
def test_matcher_kernel_matches_reference_and_keeps_invariants(
    mode: str, cmds: list[tuple[int, ...]], stp: int, batch: int
) -> None:
    m = Matcher(PX_MIN, N, capacity=4, stp=stp)
    ref = RefMatcher(stp)
    arr = make_cmds(len(cmds))
    for i, (act, oid, sd, px, qty, typ, tif, owner) in enumerate(cmds):
        arr[i] = (1000 + i, oid, px, qty, owner, sd, act, typ, tif)
    qty_of: dict[int, int] = {}
    filled: dict[int, int] = {}
    for start in range(0, len(cmds), batch):
        chunk = arr[start : start + batch]
        got = _rows(_run(mode, m, chunk))
        want: list[Event] = []
        for j, c in enumerate(chunk):
            want += ref.submit(c, j)
        assert got == want
        # invariants on the events
        for _ts, oid, _other, px, q, leaves, c, sd, kind, liq, _reason in got:
            cmd = chunk[c]
            if kind in (EXEC_NEW, EXEC_REPLACED):
                qty_of[oid] = q
                filled[oid] = 0
            elif kind == EXEC_TRADE:
                filled[oid] += q
                assert filled[oid] + leaves == qty_of[oid]  # filled + leaves == quantity
                if liq == LIQ_TAKER and cmd["ord_type"] == ORD_LIMIT:
                    assert px <= cmd["px"] if sd == BUY else px >= cmd["px"]  # never worse
        bb, ba = m.book.best_bid(), m.book.best_ask()
        assert not m.book.is_crossed()
        assert (bb[0] if bb else None) == ref.best(BUY)
        assert (ba[0] if ba else None) == ref.best(SELL)
        assert [tuple(r) for r in m.book.resting().tolist()] == ref.resting()
    for sd in (BUY, SELL):
        for px in range(PX_MIN, PX_MIN + N):
            assert m.book.fifo_ids(sd, px) == ref.fifo(sd, px)


def _one(m: Matcher, **kw: int) -> list[dict[str, int]]:
    c = make_cmds(1)
    for f, v in kw.items():
        c[f] = v
    return [{f: int(r[f]) for f in _FIELDS} for r in m.submit(c)]


def test_limit_sweeps_levels_in_price_time_order() -> None:
    m = Matcher(PX_MIN, N)
    _one(m, order_id=1, side=SELL, px=103, qty=2)
    _one(m, order_id=2, side=SELL, px=102, qty=2)
    _one(m, order_id=3, side=SELL, px=102, qty=2)
    ev = _one(m, order_id=9, side=BUY, px=103, qty=5)
    trades = [
        (e["order_id"], e["other_id"], e["px"], e["qty"], e["liquidity"])
        for e in ev
        if e["kind"] == EXEC_TRADE
    ]
    assert trades == [
        (9, 2, 102, 2, LIQ_TAKER), (2, 9, 102, 2, LIQ_MAKER),
        (9, 3, 102, 2, LIQ_TAKER), (3, 9, 102, 2, LIQ_MAKER),
        (9, 1, 103, 1, LIQ_TAKER), (1, 9, 103, 1, LIQ_MAKER),
    ]  # fmt: skip
    assert m.book.order(1) == (SELL, 103, 1)
    assert m.book.best_bid() is None


def test_fok_is_all_or_nothing_and_ioc_expires_the_rest() -> None:
    m = Matcher(PX_MIN, N)
    _one(m, order_id=1, side=SELL, px=103, qty=2)
    ev = _one(m, order_id=2, side=BUY, px=103, qty=3, tif=TIF_FOK)
    assert [(e["kind"], e["reason"]) for e in ev] == [
        (EXEC_NEW, 0),
        (EXEC_EXPIRED, REASON_FOK_UNFILLABLE),
    ]
    assert m.book.order(1) == (SELL, 103, 2)
    ev = _one(m, order_id=3, side=BUY, px=103, qty=3, tif=TIF_IOC)
    assert (ev[-1]["kind"], ev[-1]["qty"], ev[-1]["reason"]) == (
        EXEC_EXPIRED,
        1,
        REASON_IOC_REMAINDER,
    )
    assert m.book.n_orders == 0


def test_replace_keeps_priority_only_on_decrease() -> None:
    m = Matcher(PX_MIN, N)
    for oid in (1, 2, 3):
        _one(m, order_id=oid, side=BUY, px=104, qty=5)
    _one(m, order_id=1, action=CMD_REPLACE, px=104, qty=4)
    assert m.book.fifo_ids(BUY, 104) == [1, 2, 3]
    _one(m, order_id=1, action=CMD_REPLACE, px=104, qty=6)
    assert m.book.fifo_ids(BUY, 104) == [2, 3, 1]
    ev = _one(m, order_id=9, action=CMD_CANCEL)
    assert ev[0]["kind"] == EXEC_REJECTED
    assert ev[0]["reason"] == REASON_UNKNOWN_ORDER


def test_self_trade_prevention_cancels_the_resting_order() -> None:
    m = Matcher(PX_MIN, N, stp=STP_CANCEL_MAKER)
    _one(m, order_id=1, side=SELL, px=103, qty=2, owner=7)
    _one(m, order_id=2, side=SELL, px=103, qty=2, owner=8)
    ev = _one(m, order_id=3, side=BUY, px=103, qty=2, owner=7)
    assert [(e["order_id"], e["kind"], e["reason"]) for e in ev] == [
        (3, EXEC_NEW, 0), (1, EXEC_CANCELED, REASON_SELF_TRADE),
        (3, EXEC_TRADE, 0), (2, EXEC_TRADE, 0),
    ]  # fmt: skip


def test_matcher_rejects_bad_commands_naming_field_and_value() -> None:
    m = Matcher(PX_MIN, N)
    c = make_cmds(2)
    c["side"] = BUY
    c["qty"] = [1, 0]
    with pytest.raises(ValueError, match=r"cmds\[1\]\.qty: must be > 0, got 0"):
        m.submit(c)
    c["qty"] = 1
    c["tif"][0] = 2
    with pytest.raises(
        ValueError, match=r"cmds\[0\]\.tif: must be TIF_DAY, TIF_GTC, TIF_IOC or TIF_FOK, got 2"
    ):
        m.submit(c)
    with pytest.raises(ValueError, match="stp: must be one of"):
        Matcher(0, 10, stp=9)
    _ = REASON_BOOK_FULL


_any_cmd = st.tuples(
    st.sampled_from([CMD_NEW] * 6 + [CMD_CANCEL] * 2 + [CMD_REPLACE] * 2 + [0, 4]),
    st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, ID_EMPTY]),
    st.sampled_from([BUY, SELL, 0]),
    st.integers(PX_MIN - 1, PX_MIN + N),
    st.integers(-1, 8),
    st.sampled_from([ORD_LIMIT] * 5 + [ORD_MARKET, 0]),
    st.sampled_from([TIF_DAY, TIF_GTC, TIF_IOC, TIF_FOK, 2]),
    st.sampled_from([-1, 0, 1]),
)


@settings(max_examples=150, deadline=None)
@given(cmds=st.lists(_any_cmd, max_size=40), stp=st.sampled_from([STP_NONE, STP_CANCEL_TAKER]))
def test_submit_one_is_submit_of_one_row(cmds: list[tuple[int, ...]], stp: int) -> None:
    # The simulator's scalar path: same events (as int rows), same refusals with the same text,
    # the same book afterwards; a small capacity makes it grow on the way.
    batch, single = Matcher(PX_MIN, N, capacity=2, stp=stp), Matcher(PX_MIN, N, capacity=2, stp=stp)
    for i, (act, oid, sd, px, qty, typ, tif, owner) in enumerate(cmds):
        row = make_cmds(1)
        row[0] = (1000 + i, oid, px, qty, owner, sd, act, typ, tif)
        try:
            want = [list(r) for r in batch.submit(row).tolist()]
        except ValueError as e:
            with pytest.raises(ValueError, match=re.escape(str(e))):
                single.submit_one(1000 + i, oid, px, qty, owner, sd, act, typ, tif)
            continue
        assert single.submit_one(1000 + i, oid, px, qty, owner, sd, act, typ, tif) == want
    assert single.book.resting().tolist() == batch.book.resting().tolist()


def test_submit_one_grows_its_workspace_when_a_sweep_needs_more_rows() -> None:
    # 500 resting orders need more event rows than the first workspace has (8 + 3 * 500 + 16
    # > 1024): the call grows it and answers as the batch path does, every fill included.
    batch, single = Matcher(PX_MIN, N), Matcher(PX_MIN, N)
    for oid in range(1, 501):
        px = PX_MIN + 1 + oid % (N - 1)
        row = make_cmds(1)
        row[0] = (oid, oid, px, 2, -1, SELL, CMD_NEW, ORD_LIMIT, TIF_DAY)
        want = [list(r) for r in batch.submit(row).tolist()]
        assert single.submit_one(oid, oid, px, 2, -1, SELL, CMD_NEW, ORD_LIMIT, TIF_DAY) == want
    sweep = make_cmds(1)
    sweep[0] = (9000, 9000, 0, 1000, -1, BUY, CMD_NEW, ORD_MARKET, TIF_IOC)
    want = [list(r) for r in batch.submit(sweep).tolist()]
    got = single.submit_one(9000, 9000, 0, 1000, -1, BUY, CMD_NEW, ORD_MARKET, TIF_IOC)
    assert len(got) == 1 + 2 * 500
    assert got == want
    assert single.book.resting().shape[0] == 0


def _flat_rows(rows: list[tuple[int, ...]]) -> np.ndarray:
    """Commands ``(action, order_id, side, px, qty, ord_type, tif, owner)``, ``ts`` 1, 2, ..."""
    cmds = make_cmds(len(rows))
    for i, (action, oid, side, px, qty, ord_type, tif, owner) in enumerate(rows):
        c = cmds[i]
        c["ts"], c["action"], c["order_id"], c["side"] = i + 1, action, oid, side
        c["px"], c["qty"], c["ord_type"], c["tif"], c["owner"] = px, qty, ord_type, tif, owner
    return cmds


@pytest.mark.parametrize(
    ("other", "stp"),
    [
        ((CMD_REPLACE, 1, BUY, PX_MIN + 2, 3, ORD_LIMIT, TIF_DAY, -1), STP_NONE),
        ((CMD_NEW, 3, SELL, PX_MIN, 1, ORD_MARKET, TIF_IOC, -1), STP_NONE),
        ((CMD_NEW, 3, SELL, PX_MIN + 1, 1, ORD_LIMIT, TIF_FOK, -1), STP_NONE),
        ((CMD_NEW, 3, SELL, PX_MIN + 1, 1, ORD_LIMIT, TIF_DAY, 0), STP_CANCEL_TAKER),
    ],
)
def test_match_flat_stops_before_a_command_of_the_general_kind(
    other: tuple[int, ...], stp: int
) -> None:
    """The flat loop runs plain limits and cancels and leaves the rest to ``match_batch``."""
    cmds = _flat_rows(
        [
            (CMD_NEW, 1, BUY, PX_MIN + 1, 2, ORD_LIMIT, TIF_DAY, -1),
            (CMD_NEW, 2, BUY, PX_MIN + 1, 2, ORD_LIMIT, TIF_GTC, -1),
            other,
            (CMD_CANCEL, 2, BUY, 0, 0, ORD_LIMIT, TIF_DAY, -1),
        ]
    )
    m = Matcher(PX_MIN, N, capacity=8, stp=stp)
    a = m.arrays
    out = np.zeros(64, m._out.dtype)
    c, n = k.match_flat(a.o, a.lv, a.st, a.keys, a.vals, a.free, cmds, 0, out, 0, stp)
    assert (c, n) == (2, 2)  # two acks; stopped before the third command
    assert a.n_orders == 2
    c, n = k.match_flat(a.o, a.lv, a.st, a.keys, a.vals, a.free, cmds, 3, out, n, stp)
    assert (c, n) == (4, 3)  # resumed after it: the cancel, with its own command index
    assert (int(out[2]["kind"]), int(out[2]["cmd"]), int(out[2]["order_id"])) == (
        EXEC_CANCELED,
        3,
        2,
    )
    whole = Matcher(PX_MIN, N, capacity=8, stp=stp).submit(cmds)
    assert sorted(set(whole["cmd"].tolist())) == [0, 1, 2, 3]  # match_batch ran all four


def test_match_flat_stops_before_a_new_order_when_no_slot_is_free() -> None:
    cmds = _flat_rows(
        [
            (CMD_NEW, 1, BUY, PX_MIN + 1, 1, ORD_LIMIT, TIF_DAY, -1),
            (CMD_NEW, 2, BUY, PX_MIN + 2, 1, ORD_LIMIT, TIF_DAY, -1),
        ]
    )
    m = Matcher(PX_MIN, N, capacity=1)
    a = m.arrays
    out = np.zeros(64, m._out.dtype)
    assert k.match_flat(a.o, a.lv, a.st, a.keys, a.vals, a.free, cmds, 0, out, 0, 0) == (1, 1)
    assert k.match_batch(a.o, a.lv, a.st, a.keys, a.vals, a.free, cmds[1:], out, 0) == (0, 0)


def test_match_flat_keeps_no_reference_counts() -> None:
    """No increments or decrements of its arrays' reference counts in the compiled loop.

    They are atomic operations, sixteen a call for eight arrays, ~90 ns: most of a one-order
    call. numba prunes them unless the loop calls something that can fail (as calling
    ``_slow_cmd`` from it did); this test fails if such a call comes back.
    """
    import numba

    fresh = numba.njit(k.match_flat.py_func)  # the disk cache keeps no IR: compile it here
    m = Matcher(PX_MIN, N, capacity=4)
    a = m.arrays
    cmds = make_cmds(1)
    fresh(a.o, a.lv, a.st, a.keys, a.vals, a.free, cmds, 0, m._out, 0, 0)
    ir = fresh.inspect_llvm(fresh.signatures[0])
    (body,) = [  # the loop's own function, not its Python or C wrappers
        f
        for f in ir.split("\ndefine ")[1:]
        if "match_flat" in f.splitlines()[0]
        and "cpython" not in f.splitlines()[0]
        and "cfunc" not in f.splitlines()[0]
    ]
    assert "@NRT_incref" not in body
    assert "@NRT_decref" not in body
