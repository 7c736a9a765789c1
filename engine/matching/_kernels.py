# SPDX-License-Identifier: MIT
"""Matching kernels: price-time priority over the L3 book arrays of ``engine.book``.

The matcher consumes ``ORDER_CMD_DTYPE`` rows and writes ``EXEC_EVENT_DTYPE`` rows into a
preallocated array (the wrapper sizes it from a bound: at most ``8 * n_cmds + 3 * resting``
events per batch). Book arrays are those of ``engine.book.l3.L3Arrays``; the order record's
``OR_OWNER`` field is the self-trade group.

Why one long module: the matcher (``match_batch``) and the own-order replays
(``l2_replay_own``, ``l3_replay_own``) are flat hot loops with the book steps copied in by hand
(numba reference-counts arrays passed to helpers that loop or call, ``docs/kernels.md``); the
queue-model and own-order helpers they share live beside them, and
``tests/unit/engine/test_kernel_copies.py`` checks every copy against the others.
"""

import numpy as np
import numpy.typing as npt

from engine.book._kernels import (
    _l2_scan,
    ht_find,
    l2_clear,
    l2_set,
    l3_apply_slow,
    l3_new_order,
    l3_remove,
    l3_scan_best,
    side_index,
)
from engine.jit import kernel, kernel_inline, kernel_keep_gil
from engine.types import (
    ASK_SIDE,
    BID_SIDE,
    BUY,
    CMD_CANCEL,
    CMD_NEW,
    CMD_REPLACE,
    EXEC_CANCELED,
    EXEC_EVENT_DTYPE,
    EXEC_EXPIRED,
    EXEC_NEW,
    EXEC_REJECTED,
    EXEC_REPLACED,
    EXEC_TRADE,
    ID_EMPTY,
    L2_SET,
    L2_TRADE,
    L2S_ASK,
    L2S_BASE,
    L2S_BID,
    L2S_TS,
    L3_ADD,
    L3_CANCEL,
    L3_CLEAR,
    L3_EXECUTE,
    L3_MODIFY,
    L3S_ASK,
    L3S_BASE,
    L3S_BID,
    L3S_DUPLICATE,
    L3S_FREE,
    L3S_NORDERS,
    L3S_POLICY,
    L3S_SEQ,
    L3S_TS,
    L3S_UNKNOWN,
    LIQ_MAKER,
    LIQ_NONE,
    LIQ_TAKER,
    LV_CNT,
    LV_HEAD,
    LV_QTY,
    LV_TAIL,
    OR_ID,
    OR_NEXT,
    OR_OWNER,
    OR_PREV,
    OR_PX,
    OR_QTY,
    OR_SEQ,
    OR_SIDE,
    ORD_LIMIT,
    ORD_MARKET,
    ORDER_CMD_DTYPE,
    OWN_ACTIVE,
    OWN_CANCELED,
    OWN_FILLED,
    OWN_PENDING,
    PRIO_LOSE_ON_DECREASE,
    PRIO_LOSE_ON_INCREASE,
    QM_LOG,
    QM_POWER,
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
    TIF_FOK,
    TIF_IOC,
)

I64 = npt.NDArray[np.int64]
Rec = npt.NDArray[np.void]


@kernel_inline
def _emit(
    out: Rec,
    k: int,
    ts: int,
    cmd: int,
    kind: int,
    oid: int,
    other: int,
    px: int,
    qty: int,
    leaves: int,
    side: int,
    liq: int,
    reason: int,
) -> int:
    """Write one ``EXEC_EVENT_DTYPE`` row at ``out[k]``; return ``k + 1``."""
    r = out[k]
    r["ts"] = ts
    r["cmd"] = cmd
    r["kind"] = kind
    r["order_id"] = oid
    r["other_id"] = other
    r["px"] = px
    r["qty"] = qty
    r["leaves"] = leaves
    r["side"] = side
    r["liquidity"] = liq
    r["reason"] = reason
    return k + 1


@kernel_inline
def _can_fill(o: I64, lv: I64, st: I64, si: int, lim: int, qty: int, owner: int, stp: int) -> bool:
    """Whether ``qty`` can trade at once up to level ``lim`` (fill-or-kill check).

    With self-trade prevention, own resting orders provide nothing; under
    ``STP_CANCEL_TAKER``/``STP_CANCEL_BOTH`` the walk stops at the first one.
    """
    n = lv.shape[1]
    need = qty
    check_self = stp != STP_NONE and owner >= 0
    if si == BID_SIDE:
        osi = ASK_SIDE
        lvl = st[L3S_ASK]
        step = 1
    else:
        osi = BID_SIDE
        lvl = st[L3S_BID]
        step = -1
    while (
        lvl >= 0
        and lvl < n
        and ((si == BID_SIDE and lvl <= lim) or (si == ASK_SIDE and lvl >= lim))
    ):
        if lv[osi, lvl, LV_CNT] > 0:
            if not check_self:
                need -= lv[osi, lvl, LV_QTY]
                if need <= 0:
                    return True
            else:
                h = lv[osi, lvl, LV_HEAD]
                while h >= 0:
                    if o[h, OR_OWNER] == owner:
                        if stp != STP_CANCEL_MAKER:
                            return False
                    else:
                        need -= o[h, OR_QTY]
                        if need <= 0:
                            return True
                    h = o[h, OR_NEXT]
        lvl += step
    return False


@kernel_inline
def _take(
    o: I64,
    lv: I64,
    st: I64,
    keys: I64,
    vals: I64,
    free: I64,
    out: Rec,
    k: int,
    ts: int,
    c: int,
    oid: int,
    sd: int,
    lim: int,
    qty: int,
    owner: int,
    stp: int,
) -> tuple[int, int, bool]:
    """Match an incoming order against the opposite side up to level index ``lim``.

    Returns ``(k, remaining, stopped)``: the next free event row, the unfilled quantity and
    whether self-trade prevention stopped the incoming order.
    """
    si = side_index(sd)
    n = lv.shape[1]
    base = st[L3S_BASE]
    rem = qty
    stopped = False
    check_self = stp != STP_NONE and owner >= 0
    osi = ASK_SIDE if si == BID_SIDE else BID_SIDE
    while rem > 0:
        if si == BID_SIDE:
            lvl = st[L3S_ASK]
            if lvl >= n or lvl > lim:
                break
        else:
            lvl = st[L3S_BID]
            if lvl < 0 or lvl < lim:
                break
        h = lv[osi, lvl, LV_HEAD]
        mid = o[h, OR_ID]
        mq = o[h, OR_QTY]
        if check_self and o[h, OR_OWNER] == owner:
            if stp == STP_CANCEL_TAKER:
                stopped = True
                break
            l3_remove(o, lv, st, keys, vals, free, ht_find(keys, mid), h)
            k = _emit(
                out,
                k,
                ts,
                c,
                EXEC_CANCELED,
                mid,
                oid,
                base + lvl,
                mq,
                0,
                -sd,
                LIQ_NONE,
                REASON_SELF_TRADE,
            )
            if stp == STP_CANCEL_BOTH:
                stopped = True
                break
            continue
        q = min(rem, mq)
        rem -= q
        px = base + lvl
        k = _emit(out, k, ts, c, EXEC_TRADE, oid, mid, px, q, rem, sd, LIQ_TAKER, REASON_NONE)
        k = _emit(out, k, ts, c, EXEC_TRADE, mid, oid, px, q, mq - q, -sd, LIQ_MAKER, REASON_NONE)
        if q == mq:
            l3_remove(o, lv, st, keys, vals, free, ht_find(keys, mid), h)
        else:
            o[h, OR_QTY] = mq - q
            lv[osi, lvl, LV_QTY] -= q
    return k, rem, stopped


@kernel_inline
def _finish(
    o: I64,
    lv: I64,
    st: I64,
    keys: I64,
    vals: I64,
    free: I64,
    out: Rec,
    k: int,
    ts: int,
    c: int,
    oid: int,
    sd: int,
    px: int,
    idx: int,
    rem: int,
    owner: int,
    stopped: bool,
    rest: bool,
) -> int:
    """Rest or end the unfilled part ``rem`` of an incoming order; return the next row."""
    if rem <= 0:
        return k
    if stopped:
        return _emit(
            out, k, ts, c, EXEC_CANCELED, oid, -1, px, rem, 0, sd, LIQ_NONE, REASON_SELF_TRADE
        )
    if not rest:
        return _emit(
            out, k, ts, c, EXEC_EXPIRED, oid, -1, px, rem, 0, sd, LIQ_NONE, REASON_IOC_REMAINDER
        )
    if st[L3S_FREE] == 0:
        return _emit(
            out, k, ts, c, EXEC_CANCELED, oid, -1, px, rem, 0, sd, LIQ_NONE, REASON_BOOK_FULL
        )
    l3_new_order(o, lv, st, keys, vals, free, oid, side_index(sd), idx, rem, owner)
    return k


@kernel_inline
def _cancel(
    o: I64,
    lv: I64,
    st: I64,
    keys: I64,
    vals: I64,
    free: I64,
    out: Rec,
    k: int,
    ts: int,
    c: int,
    oid: int,
    sd: int,
) -> int:
    """Cancel a resting order on request (or reject an unknown id)."""
    b = ht_find(keys, oid)
    if b < 0:
        return _emit(
            out, k, ts, c, EXEC_REJECTED, oid, -1, 0, 0, 0, sd, LIQ_NONE, REASON_UNKNOWN_ORDER
        )
    slot = vals[b]
    q = o[slot, OR_QTY]
    px = st[L3S_BASE] + o[slot, OR_PX]
    rsd = BUY if o[slot, OR_SIDE] == BID_SIDE else SELL
    l3_remove(o, lv, st, keys, vals, free, b, slot)
    return _emit(out, k, ts, c, EXEC_CANCELED, oid, -1, px, q, 0, rsd, LIQ_NONE, REASON_REQUESTED)


@kernel_inline
def _replace(
    o: I64,
    lv: I64,
    st: I64,
    keys: I64,
    vals: I64,
    free: I64,
    out: Rec,
    k: int,
    ts: int,
    c: int,
    oid: int,
    sd: int,
    px: int,
    qty: int,
    stp: int,
) -> int:
    """Give a resting order a new price and leaves quantity.

    Priority is kept only when the price is unchanged and the size does not grow; otherwise
    the order leaves the book, may trade as a taker at its new price, and rests at the back.
    """
    n = lv.shape[1]
    b = ht_find(keys, oid)
    if b < 0:
        return _emit(
            out, k, ts, c, EXEC_REJECTED, oid, -1, px, qty, 0, sd, LIQ_NONE, REASON_UNKNOWN_ORDER
        )
    slot = vals[b]
    si = o[slot, OR_SIDE]
    rsd = BUY if si == BID_SIDE else SELL
    idx = px - st[L3S_BASE]
    old_q = o[slot, OR_QTY]
    if idx < 0 or idx >= n:
        return _emit(
            out,
            k,
            ts,
            c,
            EXEC_REJECTED,
            oid,
            -1,
            px,
            qty,
            old_q,
            rsd,
            LIQ_NONE,
            REASON_PRICE_RANGE,
        )
    if idx == o[slot, OR_PX] and qty <= old_q:
        lv[si, idx, LV_QTY] -= old_q - qty
        o[slot, OR_QTY] = qty
        return _emit(
            out, k, ts, c, EXEC_REPLACED, oid, -1, px, qty, qty, rsd, LIQ_NONE, REASON_NONE
        )
    owner = o[slot, OR_OWNER]
    l3_remove(o, lv, st, keys, vals, free, b, slot)
    k = _emit(out, k, ts, c, EXEC_REPLACED, oid, -1, px, qty, qty, rsd, LIQ_NONE, REASON_NONE)
    k, rem, stopped = _take(
        o, lv, st, keys, vals, free, out, k, ts, c, oid, rsd, idx, qty, owner, stp
    )
    return _finish(
        o, lv, st, keys, vals, free, out, k, ts, c, oid, rsd, px, idx, rem, owner, stopped, True
    )


@kernel_inline
def _new(
    o: I64,
    lv: I64,
    st: I64,
    keys: I64,
    vals: I64,
    free: I64,
    out: Rec,
    k: int,
    ts: int,
    c: int,
    oid: int,
    sd: int,
    px: int,
    qty: int,
    owner: int,
    ord_type: int,
    tif: int,
    stp: int,
) -> int:
    """Accept (or reject) a new order, match it and rest, expire or cancel the remainder."""
    n = lv.shape[1]
    if ht_find(keys, oid) >= 0:
        return _emit(
            out, k, ts, c, EXEC_REJECTED, oid, -1, px, qty, 0, sd, LIQ_NONE, REASON_DUPLICATE_ID
        )
    si = side_index(sd)
    market = ord_type == ORD_MARKET
    if market:
        idx = n if si == BID_SIDE else -1
    else:
        idx = px - st[L3S_BASE]
        if idx < 0 or idx >= n:
            return _emit(
                out, k, ts, c, EXEC_REJECTED, oid, -1, px, qty, 0, sd, LIQ_NONE, REASON_PRICE_RANGE
            )
    k = _emit(out, k, ts, c, EXEC_NEW, oid, -1, px, qty, qty, sd, LIQ_NONE, REASON_NONE)
    if tif == TIF_FOK and not _can_fill(o, lv, st, si, idx, qty, owner, stp):
        return _emit(
            out, k, ts, c, EXEC_EXPIRED, oid, -1, px, qty, 0, sd, LIQ_NONE, REASON_FOK_UNFILLABLE
        )
    k, rem, stopped = _take(
        o, lv, st, keys, vals, free, out, k, ts, c, oid, sd, idx, qty, owner, stp
    )
    rest = not market and tif != TIF_IOC and tif != TIF_FOK
    return _finish(
        o, lv, st, keys, vals, free, out, k, ts, c, oid, sd, px, idx, rem, owner, stopped, rest
    )


@kernel
def _slow_cmd(
    o: I64,
    lv: I64,
    st: I64,
    keys: I64,
    vals: I64,
    free: I64,
    out: Rec,
    k: int,
    c: int,
    m: np.void,
    stp: int,
) -> int:
    """Run one command the general way (replaces, market, FOK, self-trade groups)."""
    sd = int(m["side"])
    if m["action"] == CMD_REPLACE:
        return _replace(
            o,
            lv,
            st,
            keys,
            vals,
            free,
            out,
            k,
            m["ts"],
            c,
            m["order_id"],
            sd,
            m["px"],
            m["qty"],
            stp,
        )
    return _new(
        o,
        lv,
        st,
        keys,
        vals,
        free,
        out,
        k,
        m["ts"],
        c,
        m["order_id"],
        sd,
        m["px"],
        m["qty"],
        m["owner"],
        int(m["ord_type"]),
        int(m["tif"]),
        stp,
    )


@kernel
def match_batch(
    o: I64, lv: I64, st: I64, keys: I64, vals: I64, free: I64, cmds: Rec, out: Rec, stp: int
) -> tuple[int, int]:
    """Run ``ORDER_CMD_DTYPE`` commands through the matcher.

    Mutates the book arrays and writes ``EXEC_EVENT_DTYPE`` rows into ``out`` (which must
    hold ``8 * len(cmds) + 3 * resting`` rows). ``stp`` is an ``STP_*`` mode. Returns
    ``(commands processed, events written)``; it stops early before a new order when no
    order slot is free (the wrapper grows the arrays and resumes).

    Runs :func:`match_flat` and, for each command it leaves (replaces, market orders, FOK,
    self-trade groups), the general helpers through :func:`_slow_cmd`, then resumes it.
    """
    c, k = match_flat(o, lv, st, keys, vals, free, cmds, 0, out, 0, stp)
    while c < cmds.shape[0]:
        if cmds[c]["action"] == CMD_NEW and st[L3S_FREE] == 0:
            return c, k
        k = _slow_cmd(o, lv, st, keys, vals, free, out, k, c, cmds[c], stp)
        c, k = match_flat(o, lv, st, keys, vals, free, cmds, c + 1, out, k, stp)
    return c, k


@kernel
def match_flat(  # noqa: C901 (one flat hot loop on purpose, see the docstring)
    o: I64,
    lv: I64,
    st: I64,
    keys: I64,
    vals: I64,
    free: I64,
    cmds: Rec,
    c0: int,
    out: Rec,
    k0: int,
    stp: int,
) -> tuple[int, int]:
    """Run cancels and plain limit orders from ``cmds[c0]`` on; events from ``out[k0]``.

    The matcher's hot loop: cancels and plain limit orders (day, GTC or IOC, no self-trade
    group) run flat in it, with the same results as the general helpers (:func:`_new`,
    :func:`_cancel`): numba helpers that loop or call on every command's path cost reference
    counting of every array they take. Returns ``(next command, next event row)``; it stops
    at the end, before a command of another kind (:func:`match_batch` runs it and resumes)
    and before a new order when no order slot is free.

    It calls nothing that can fail (no helper that may raise or allocate), so numba's
    reference-count pruning removes the increments and decrements of its eight arrays on
    entry and exit: with :func:`_slow_cmd` called from this loop they stayed, sixteen atomic
    operations, ~90 ns a call, which was most of the latency of a one-order call.
    """
    k = k0
    n = lv.shape[1]
    mask = keys.shape[0] - 1
    base = st[L3S_BASE]
    for c in range(c0, cmds.shape[0]):
        m = cmds[c]
        act = m["action"]
        oid = m["order_id"]
        ts = m["ts"]
        sd = int(m["side"])
        h = (oid ^ (oid >> 17) ^ (oid >> 31) ^ (oid >> 47)) & mask
        while keys[h] != oid and keys[h] != ID_EMPTY:
            h = (h + 1) & mask
        if act == CMD_CANCEL:
            if keys[h] != oid:
                k = _emit(
                    out,
                    k,
                    ts,
                    c,
                    EXEC_REJECTED,
                    oid,
                    -1,
                    0,
                    0,
                    0,
                    sd,
                    LIQ_NONE,
                    REASON_UNKNOWN_ORDER,
                )
                continue
            slot = vals[h]
            q = o[slot, OR_QTY]
            si = o[slot, OR_SIDE]
            i = o[slot, OR_PX]
            rsd = BUY if si == BID_SIDE else SELL
            k = _emit(
                out,
                k,
                ts,
                c,
                EXEC_CANCELED,
                oid,
                -1,
                base + i,
                q,
                0,
                rsd,
                LIQ_NONE,
                REASON_REQUESTED,
            )
            # (remove the order: as below for a filled maker)
        elif act == CMD_NEW and (
            m["ord_type"] == ORD_LIMIT
            and m["tif"] != TIF_FOK
            and (stp == STP_NONE or m["owner"] < 0)
        ):
            if st[L3S_FREE] == 0:
                return c, k
            px = m["px"]
            qty = m["qty"]
            if keys[h] == oid:
                k = _emit(
                    out,
                    k,
                    ts,
                    c,
                    EXEC_REJECTED,
                    oid,
                    -1,
                    px,
                    qty,
                    0,
                    sd,
                    LIQ_NONE,
                    REASON_DUPLICATE_ID,
                )
                continue
            idx = px - base
            if idx < 0 or idx >= n:
                k = _emit(
                    out,
                    k,
                    ts,
                    c,
                    EXEC_REJECTED,
                    oid,
                    -1,
                    px,
                    qty,
                    0,
                    sd,
                    LIQ_NONE,
                    REASON_PRICE_RANGE,
                )
                continue
            k = _emit(out, k, ts, c, EXEC_NEW, oid, -1, px, qty, qty, sd, LIQ_NONE, REASON_NONE)
            si = BID_SIDE if sd == BUY else ASK_SIDE
            osi = ASK_SIDE if si == BID_SIDE else BID_SIDE
            rem = qty
            while rem > 0:
                lvl = st[L3S_ASK] if si == BID_SIDE else st[L3S_BID]
                if (si == BID_SIDE and (lvl >= n or lvl > idx)) or (
                    si == ASK_SIDE and (lvl < 0 or lvl < idx)
                ):
                    break
                mk = lv[osi, lvl, LV_HEAD]
                mid = o[mk, OR_ID]
                mq = o[mk, OR_QTY]
                x = min(rem, mq)
                rem -= x
                k = _emit(
                    out,
                    k,
                    ts,
                    c,
                    EXEC_TRADE,
                    oid,
                    mid,
                    base + lvl,
                    x,
                    rem,
                    sd,
                    LIQ_TAKER,
                    REASON_NONE,
                )
                k = _emit(
                    out,
                    k,
                    ts,
                    c,
                    EXEC_TRADE,
                    mid,
                    oid,
                    base + lvl,
                    x,
                    mq - x,
                    -sd,
                    LIQ_MAKER,
                    REASON_NONE,
                )
                if x < mq:
                    o[mk, OR_QTY] = mq - x
                    lv[osi, lvl, LV_QTY] -= x
                    continue
                # the maker is done: unlink it (it is the head) and delete its id
                nxt = o[mk, OR_NEXT]
                lv[osi, lvl, LV_HEAD] = nxt
                if nxt >= 0:
                    o[nxt, OR_PREV] = -1
                else:
                    lv[osi, lvl, LV_TAIL] = -1
                lv[osi, lvl, LV_QTY] -= mq
                lv[osi, lvl, LV_CNT] -= 1
                o[mk, OR_QTY] = 0
                if lv[osi, lvl, LV_CNT] == 0:
                    l3_scan_best(lv, st, osi, lvl)
                g = (mid ^ (mid >> 17) ^ (mid >> 31) ^ (mid >> 47)) & mask
                while keys[g] != mid:
                    g = (g + 1) & mask
                j = g
                while True:
                    j = (j + 1) & mask
                    kj = keys[j]
                    if kj == ID_EMPTY:
                        break
                    hj = (kj ^ (kj >> 17) ^ (kj >> 31) ^ (kj >> 47)) & mask
                    stay = (g < hj and hj <= j) if g <= j else (hj > g or hj <= j)
                    if not stay:
                        keys[g] = kj
                        vals[g] = vals[j]
                        g = j
                keys[g] = ID_EMPTY
                free[st[L3S_FREE]] = mk
                st[L3S_FREE] += 1
                st[L3S_NORDERS] -= 1
            if rem <= 0:
                continue
            if m["tif"] == TIF_IOC:
                k = _emit(
                    out,
                    k,
                    ts,
                    c,
                    EXEC_EXPIRED,
                    oid,
                    -1,
                    px,
                    rem,
                    0,
                    sd,
                    LIQ_NONE,
                    REASON_IOC_REMAINDER,
                )
                continue
            # rest: the id's bucket may have moved while makers were deleted
            h = (oid ^ (oid >> 17) ^ (oid >> 31) ^ (oid >> 47)) & mask
            while keys[h] != ID_EMPTY:
                h = (h + 1) & mask
            st[L3S_FREE] -= 1
            slot = free[st[L3S_FREE]]
            keys[h] = oid
            vals[h] = slot
            tail = lv[si, idx, LV_TAIL]
            o[slot, OR_PX] = idx
            o[slot, OR_QTY] = rem
            o[slot, OR_PREV] = tail
            o[slot, OR_NEXT] = -1
            o[slot, OR_SIDE] = si
            o[slot, OR_ID] = oid
            o[slot, OR_OWNER] = m["owner"]
            if tail >= 0:
                o[tail, OR_NEXT] = slot
            else:
                lv[si, idx, LV_HEAD] = slot
            lv[si, idx, LV_TAIL] = slot
            lv[si, idx, LV_QTY] += rem
            lv[si, idx, LV_CNT] += 1
            st[L3S_SEQ] += 1
            o[slot, OR_SEQ] = st[L3S_SEQ]
            st[L3S_NORDERS] += 1
            if si == BID_SIDE:
                if idx > st[L3S_BID]:
                    st[L3S_BID] = idx
            elif idx < st[L3S_ASK]:
                st[L3S_ASK] = idx
            continue
        else:
            return c, k
        # cancel: remove the order in bucket h / slot
        slot = vals[h]
        si = o[slot, OR_SIDE]
        i = o[slot, OR_PX]
        prv = o[slot, OR_PREV]
        nxt = o[slot, OR_NEXT]
        if prv >= 0:
            o[prv, OR_NEXT] = nxt
        else:
            lv[si, i, LV_HEAD] = nxt
        if nxt >= 0:
            o[nxt, OR_PREV] = prv
        else:
            lv[si, i, LV_TAIL] = prv
        lv[si, i, LV_QTY] -= o[slot, OR_QTY]
        lv[si, i, LV_CNT] -= 1
        o[slot, OR_QTY] = 0
        if lv[si, i, LV_CNT] == 0 and (
            (si == BID_SIDE and i == st[L3S_BID]) or (si == ASK_SIDE and i == st[L3S_ASK])
        ):
            l3_scan_best(lv, st, si, i)
        j = h
        while True:
            j = (j + 1) & mask
            kj = keys[j]
            if kj == ID_EMPTY:
                break
            hj = (kj ^ (kj >> 17) ^ (kj >> 31) ^ (kj >> 47)) & mask
            stay = (h < hj and hj <= j) if h <= j else (hj > h or hj <= j)
            if not stay:
                keys[h] = kj
                vals[h] = vals[j]
                h = j
        keys[h] = ID_EMPTY
        free[st[L3S_FREE]] = slot
        st[L3S_FREE] += 1
        st[L3S_NORDERS] -= 1
    return int(cmds.shape[0]), k


#: ``match_one``'s workspace (``int64[8 + 18 * rows]``): a header, the command, then the
#: scratch events as records and the events as int rows, each of ``rows`` rows.
MW_STP = 0  # the self-trade prevention mode (fixed per matcher)
MW_ROWS = 1  # rows of each event region
MW_CMD = 2  # one ORDER_CMD_DTYPE row
MW_OUT = MW_CMD + -(-ORDER_CMD_DTYPE.itemsize // 8)  # EXEC_EVENT_DTYPE rows, then int rows
MW_OUT_WIDTH = EXEC_EVENT_DTYPE.itemsize // 8  # int64 slots of one event record
MW_EV_WIDTH = len(EXEC_EVENT_DTYPE.names or ())  # one column per event field


@kernel_keep_gil
def match_one(
    o: I64,
    lv: I64,
    st: I64,
    tab: I64,
    free: I64,
    ws: I64,
    ts: int,
    order_id: int,
    px: int,
    qty: int,
    owner: int,
    side: int,
    action: int,
    ord_type: int,
    tif: int,
) -> int:
    """Run one command given field by field through :func:`match_batch`; events as int rows.

    Everything else the call needs is in one workspace ``ws`` (the ``MW_*`` layout): each
    array passed costs the call ~50 ns to unbox, a record array ~200 ns, a third of the
    call once the matching itself is done. ``tab`` is the book's interleaved hash table
    (keys at even, values at odd positions). The events are written as int rows (columns in
    ``EXEC_EVENT_DTYPE`` field order) at ``ws[MW_OUT + 7 * rows:]`` for a caller that reads
    them in Python (plain int rows convert to lists far faster than records). Returns the
    number of events, ``-1`` when no order slot was free (nothing done: grow the arrays and
    call again) or ``-2`` when the workspace has fewer rows than
    ``8 + 3 * resting + 16`` (nothing done).
    """
    rows = ws[MW_ROWS]
    if rows < 8 + 3 * st[L3S_NORDERS] + 16:
        return -2
    cmd = ws[MW_CMD:MW_OUT].view(ORDER_CMD_DTYPE)
    ev_at = MW_OUT + MW_OUT_WIDTH * rows
    out = ws[MW_OUT:ev_at].view(EXEC_EVENT_DTYPE)
    ev = ws[ev_at : ev_at + MW_EV_WIDTH * rows].reshape((rows, MW_EV_WIDTH))
    c = cmd[0]
    c["ts"] = ts
    c["order_id"] = order_id
    c["px"] = px
    c["qty"] = qty
    c["owner"] = owner
    c["side"] = side
    c["action"] = action
    c["ord_type"] = ord_type
    c["tif"] = tif
    done, m = match_batch(o, lv, st, tab[0::2], tab[1::2], free, cmd, out, ws[MW_STP])
    if done == 0:
        return -1
    for i in range(m):
        r = out[i]
        ev[i, 0] = r["ts"]
        ev[i, 1] = r["order_id"]
        ev[i, 2] = r["other_id"]
        ev[i, 3] = r["px"]
        ev[i, 4] = r["qty"]
        ev[i, 5] = r["leaves"]
        ev[i, 6] = r["cmd"]
        ev[i, 7] = r["side"]
        ev[i, 8] = r["kind"]
        ev[i, 9] = r["liquidity"]
        ev[i, 10] = r["reason"]
    return m


# ======================================================================== queue position
#: Replay state columns (``int64[RS_N]``) shared by the L2 and L3 own-order replays.
RS_NEXT = 0  # next own order (by arrival) not yet at the venue
RS_NACT = 1  # number of active own orders (indices in ``act[:RS_NACT]``)
RS_NFILLS = 2  # fill rows written so far
RS_CANCEL_TS = 3  # earliest cancel time among active own orders
RS_STOP = 4  # nonzero: the replays return after the first event that filled an own order
RS_N = 5
_NEVER = np.iinfo(np.int64).max
_NO_BID = np.iinfo(np.int64).min


@kernel_inline
def qm_prob(model: int, param: float, front: float, back: float) -> float:
    """Share of a level decrease that a probabilistic model puts behind the own order.

    ``QM_POWER``: ``f(x) = x**param``; ``QM_LOG``: ``f(x) = log(1 + x)``; the share is
    ``f(back) / (f(back) + f(front))``. ``QM_CONSERVATIVE`` puts every cancel behind (1.0).
    """
    if model == QM_POWER:
        fb = max(back, 0.0) ** param
        ff = max(front, 0.0) ** param
    elif model == QM_LOG:
        fb = np.log1p(max(back, 0.0))
        ff = np.log1p(max(front, 0.0))
    else:
        return 1.0
    d = fb + ff
    if d <= 0.0:
        return 1.0
    return float(fb / d)


@kernel_inline
def qm_depth(own: Rec, j: int, prev: int, new: int, model: int, param: float) -> None:
    """Update the queue estimate of own order ``j`` after its level went ``prev -> new`` lots.

    Trades already seen at the price (``pending``) explain part of a decrease; the rest is
    cancels, split between front and back by the model.
    """
    r = own[j]
    chg = float(prev - new) - r["pending"]
    r["pending"] = 0.0
    front = r["ahead"]
    if chg <= 0.0:
        r["ahead"] = min(front, float(new))
        return
    back = float(prev) - front
    p = qm_prob(model, param, front, back)
    est = front - (1.0 - p) * chg + min(back - p * chg, 0.0)
    r["ahead"] = max(min(est, float(new)), 0.0)


@kernel_inline
def _own_fill(own: Rec, j: int, qty: int, px: int, ts: int, liq: int, fills: Rec, nf: int) -> int:
    """Fill ``qty`` lots of own order ``j`` at ``px``; write a fill row; return the row count."""
    r = own[j]
    r["leaves"] -= qty
    if r["leaves"] <= 0:
        r["status"] = OWN_FILLED
    f = fills[nf]
    f["ts"] = ts
    f["order_id"] = r["order_id"]
    f["px"] = px
    f["qty"] = qty
    f["fee"] = 0.0
    f["strategy"] = 0
    f["instrument"] = r["book"]
    f["side"] = r["side"]
    f["liquidity"] = liq
    return nf + 1


@kernel_inline
def qm_trade(own: Rec, j: int, qty: int, px: int, ts: int, fills: Rec, nf: int) -> int:
    """Advance own order ``j``'s queue after a trade of ``qty`` lots at its price; maybe fill.

    Returns the new fill row count.
    """
    r = own[j]
    r["ahead"] -= qty
    r["pending"] += qty
    if r["ahead"] < 0.0:
        x = min(r["leaves"], np.int64(-r["ahead"] + 1e-9))
        r["ahead"] = 0.0
        if x > 0:
            nf = _own_fill(own, j, x, px, ts, LIQ_MAKER, fills, nf)
    return nf


@kernel_inline
def _extend(own: Rec, ox: I64, j: int) -> None:
    """Widen the own-price extremes of own order ``j``'s book to include it."""
    r = own[j]
    b = r["book"]
    if r["side"] == BUY:
        if r["px"] > ox[b, 0]:
            ox[b, 0] = r["px"]
    elif r["px"] < ox[b, 1]:
        ox[b, 1] = r["px"]


@kernel
def _drop_inactive(own: Rec, act: I64, rs: I64, ox: I64) -> None:
    """Compact the active list (filled/canceled removed); refresh cancel time and extremes.

    ``ox`` is ``int64[n_books, 2]``: the highest active own bid and lowest active own ask
    per book (``INT64_MIN`` / ``INT64_MAX`` when none), the replays' cheap relevance test.
    """
    n = rs[RS_NACT]
    for a in range(n):
        b = own[act[a]]["book"]
        ox[b, 0] = _NO_BID
        ox[b, 1] = _NEVER
    w = 0
    nxt = _NEVER
    for a in range(n):
        j = act[a]
        if own[j]["status"] == OWN_ACTIVE:
            act[w] = j
            w += 1
            nxt = min(nxt, own[j]["cancel_ts"])
            _extend(own, ox, j)
    rs[RS_NACT] = w
    rs[RS_CANCEL_TS] = nxt


@kernel
def _cancel_due(own: Rec, act: I64, rs: I64, ox: I64, ts: int) -> None:
    """Cancel active own orders whose cancel has reached the venue by ``ts``."""
    for a in range(rs[RS_NACT]):
        j = act[a]
        if own[j]["cancel_ts"] <= ts:
            own[j]["status"] = OWN_CANCELED
    _drop_inactive(own, act, rs, ox)


@kernel_inline
def _activate(own: Rec, act: I64, rs: I64, ox: I64, j: int) -> None:
    n = rs[RS_NACT]
    act[n] = j
    rs[RS_NACT] = n + 1
    own[j]["status"] = OWN_ACTIVE
    rs[RS_CANCEL_TS] = min(rs[RS_CANCEL_TS], own[j]["cancel_ts"])
    _extend(own, ox, j)


@kernel
def _l2_arrive(
    q: I64, st: I64, own: Rec, act: I64, rs: I64, ox: I64, ts: int, fills: Rec, nf: int
) -> int:
    """Bring own orders that reach the venue by ``ts`` into the book; return fill rows."""
    n = q.shape[2]
    while rs[RS_NEXT] < own.shape[0] and own[rs[RS_NEXT]]["ts"] <= ts:
        j = rs[RS_NEXT]
        rs[RS_NEXT] = j + 1
        r = own[j]
        if r["status"] != OWN_PENDING or r["cancel_ts"] <= r["ts"]:
            r["status"] = OWN_CANCELED
            continue
        b = r["book"]
        base = st[b, L2S_BASE]
        i = r["px"] - base
        if r["side"] == BUY:
            ba = st[b, L2S_ASK]
            if ba < n and base + ba <= r["px"]:  # marketable: take the best ask
                nf = _own_fill(own, j, r["leaves"], base + ba, r["ts"], LIQ_TAKER, fills, nf)
                continue
            si = BID_SIDE
        else:
            bb = st[b, L2S_BID]
            if bb >= 0 and base + bb >= r["px"]:
                nf = _own_fill(own, j, r["leaves"], base + bb, r["ts"], LIQ_TAKER, fills, nf)
                continue
            si = ASK_SIDE
        r["ahead"] = float(q[b, si, i]) if 0 <= i < n else 0.0
        r["pending"] = 0.0
        _activate(own, act, rs, ox, j)
    return nf


@kernel
def _l2_own_on_set(
    q: I64,
    st: I64,
    own: Rec,
    act: I64,
    rs: I64,
    ox: I64,
    b: int,
    sd: int,
    px: int,
    prev: int,
    new: int,
    ts: int,
    fills: Rec,
    nf: int,
    model: int,
    param: float,
) -> int:
    """Update own orders after level ``px`` of side ``sd`` of book ``b`` went ``prev -> new``.

    Own orders at that level move in the queue; own orders that the opposite best now
    crosses fill in full at their price.
    """
    n = q.shape[2]
    base = st[b, L2S_BASE]
    filled = False
    for a in range(rs[RS_NACT]):
        j = act[a]
        r = own[j]
        if r["book"] != b:
            continue
        if r["side"] == sd:
            if r["px"] == px and prev >= 0:
                qm_depth(own, j, prev, new, model, param)
            continue
        if sd == SELL:
            ba = st[b, L2S_ASK]
            cross = ba < n and base + ba <= r["px"]
        else:
            bb = st[b, L2S_BID]
            cross = bb >= 0 and base + bb >= r["px"]
        if cross:
            nf = _own_fill(own, j, r["leaves"], r["px"], ts, LIQ_MAKER, fills, nf)
            filled = True
    if filled:
        _drop_inactive(own, act, rs, ox)
    return nf


@kernel
def _l2_own_on_trade(
    own: Rec,
    act: I64,
    rs: I64,
    ox: I64,
    b: int,
    sd: int,
    px: int,
    qty: int,
    ts: int,
    fills: Rec,
    nf: int,
) -> int:
    """Update own orders after a trade (aggressor side ``sd``) of ``qty`` at ``px``."""
    filled = False
    for a in range(rs[RS_NACT]):
        j = act[a]
        r = own[j]
        if r["book"] != b or r["side"] == sd:
            continue
        opx = r["px"]
        if (sd == SELL and px < opx) or (sd == BUY and px > opx):  # traded through
            nf = _own_fill(own, j, r["leaves"], opx, ts, LIQ_MAKER, fills, nf)
            filled = True
        elif px == opx:
            nf = qm_trade(own, j, qty, opx, ts, fills, nf)
            filled = filled or own[j]["status"] == OWN_FILLED
    if filled:
        _drop_inactive(own, act, rs, ox)
    return nf


@kernel
def l2_replay_own(  # noqa: C901 (one flat hot loop on purpose, see the docstring)
    q: I64,
    st: I64,
    ev: Rec,
    start: int,
    own: Rec,
    act: I64,
    rs: I64,
    ox: I64,
    fills: Rec,
    model: int,
    param: float,
) -> int:
    """Replay L2 events from row ``start`` with own orders under a queue model.

    Applies ``L2_EVENT_DTYPE`` rows to the books (as ``engine.book`` does), brings own orders
    (``OWN_ORDER_DTYPE``, sorted by ``ts``) to the venue at their ``ts``, cancels them at
    ``cancel_ts`` and fills them: at the front of the queue when trades at their price
    exhaust the estimated quantity ahead, fully when a trade goes through their price or
    the opposite side crosses it. Fills are ``FILL_DTYPE`` rows in ``fills``, which must
    have room for the open quantity of every pending and active own order (each fill is at
    least one lot). ``own``, ``act`` (``int64[len(own)]``), ``rs`` (``int64[RS_N]``), ``ox``
    (``int64[n_books, 2]``, see :func:`_drop_inactive`), ``q``, ``st`` and ``fills`` are
    mutated. Returns the next row to replay: ``len(ev)``, or with ``rs[RS_STOP]`` set the row
    after the first one that filled an own order (a caller that must answer fills before
    the market moves on replays in batches this way).

    Own-order work runs out of line and only for events that can concern an own order (its
    level, a trade at or through its price, a touch that crosses it), so the per-event cost
    stays that of the book update.
    """
    n = q.shape[2]
    n_own = own.shape[0]
    nf = rs[RS_NFILLS]
    nf0 = nf
    stop = rs[RS_STOP] != 0
    end = ev.shape[0]
    for k in range(start, ev.shape[0]):
        if stop and nf > nf0:
            end = k
            break
        e = ev[k]
        ts = e["ts"]
        b = e["book"]
        if rs[RS_NEXT] < n_own and own[rs[RS_NEXT]]["ts"] <= ts:
            nf = _l2_arrive(q, st, own, act, rs, ox, ts, fills, nf)
        if ts >= rs[RS_CANCEL_TS]:
            _cancel_due(own, act, rs, ox, ts)
        kind = e["kind"]
        px = e["px"]
        sd = int(e["side"])
        if kind == L2_SET:
            si = side_index(sd)
            v = e["qty"]
            i = px - st[b, L2S_BASE]
            if i >= 0 and i < n:
                prev = q[b, si, i]
                q[b, si, i] = v
                if si == BID_SIDE:
                    if v > 0:
                        if i > st[b, L2S_BID]:
                            st[b, L2S_BID] = i
                    elif i == st[b, L2S_BID]:
                        st[b, L2S_BID] = _l2_scan(q, b, BID_SIDE, i - 1)
                elif v > 0:
                    if i < st[b, L2S_ASK]:
                        st[b, L2S_ASK] = i
                elif i == st[b, L2S_ASK]:
                    st[b, L2S_ASK] = _l2_scan(q, b, ASK_SIDE, i + 1)
            else:
                prev = l2_set(q, st, b, si, px, v)
            if rs[RS_NACT] > 0:
                base = st[b, L2S_BASE]
                ba = st[b, L2S_ASK]
                bb = st[b, L2S_BID]
                hit = (ba < n and base + ba <= ox[b, 0]) or (bb >= 0 and base + bb >= ox[b, 1])
                if not hit and prev >= 0:
                    for a in range(rs[RS_NACT]):
                        r = own[act[a]]
                        if r["px"] == px and r["side"] == sd and r["book"] == b:
                            hit = True
                            break
                if hit:
                    nf = _l2_own_on_set(
                        q, st, own, act, rs, ox, b, sd, px, prev, v, ts, fills, nf, model, param
                    )
        elif kind == L2_TRADE:
            if rs[RS_NACT] > 0 and (
                (sd == SELL and ox[b, 0] >= px) or (sd == BUY and ox[b, 1] <= px)
            ):
                nf = _l2_own_on_trade(own, act, rs, ox, b, sd, px, e["qty"], ts, fills, nf)
        else:
            l2_clear(q, st, b)
        st[b, L2S_TS] = ts
    rs[RS_NFILLS] = nf
    return int(end)


# ----------------------------------------------------------------------- L3, exact FIFO
@kernel
def _l3_arrive(
    lv: I64, st: I64, own: Rec, act: I64, rs: I64, ox: I64, ts: int, fills: Rec, nf: int
) -> int:
    """Bring own orders that reach the venue by ``ts`` to the back of their L3 queue."""
    n = lv.shape[1]
    base = st[L3S_BASE]
    while rs[RS_NEXT] < own.shape[0] and own[rs[RS_NEXT]]["ts"] <= ts:
        j = rs[RS_NEXT]
        rs[RS_NEXT] = j + 1
        r = own[j]
        if r["status"] != OWN_PENDING or r["cancel_ts"] <= r["ts"]:
            r["status"] = OWN_CANCELED
            continue
        i = r["px"] - base
        if r["side"] == BUY:
            ba = st[L3S_ASK]
            if ba < n and ba <= i:
                nf = _own_fill(own, j, r["leaves"], base + ba, r["ts"], LIQ_TAKER, fills, nf)
                continue
            si = BID_SIDE
        else:
            bb = st[L3S_BID]
            if bb >= 0 and bb >= i:
                nf = _own_fill(own, j, r["leaves"], base + bb, r["ts"], LIQ_TAKER, fills, nf)
                continue
            si = ASK_SIDE
        st[L3S_SEQ] += 1
        r["seq"] = st[L3S_SEQ]
        r["ahead"] = float(lv[si, i, LV_QTY])  # everyone resting there is ahead
        _activate(own, act, rs, ox, j)
    return nf


@kernel_inline
def _l3_ahead_drop(pol: int, action: int, lpx: int, oq: int, px: int, qty: int) -> int:
    """Return the lots that leave the front of a queue by an event on an order ahead.

    The order ahead has ``oq`` lots at ``lpx`` and is canceled or modified to ``px``/``qty``.
    """
    if action == L3_CANCEL:
        return oq if qty <= 0 else min(qty, oq)
    if action != L3_MODIFY:
        return 0
    if qty <= 0 or px != lpx:
        return oq
    if qty > oq:
        return oq if (pol & PRIO_LOSE_ON_INCREASE) != 0 else oq - qty
    if qty < oq:
        return oq if (pol & PRIO_LOSE_ON_DECREASE) != 0 else oq - qty
    return 0


@kernel
def _l3_own_before(
    o: I64,
    st: I64,
    own: Rec,
    act: I64,
    rs: I64,
    ox: I64,
    slot: int,
    action: int,
    px: int,
    qty: int,
    ts: int,
    fills: Rec,
    nf: int,
) -> int:
    """Adjust own orders for an event on resting order ``slot`` before the book applies it.

    Keeps ``ahead`` exact (lots of earlier-sequence orders at the own order's level) and
    fills own orders that an execution reaches first: an execution of an order behind an
    own order at its level, or one at a worse price on its side.
    """
    si = o[slot, OR_SIDE]
    sd = BUY if si == BID_SIDE else SELL
    idx = o[slot, OR_PX]
    seq = o[slot, OR_SEQ]
    oq = o[slot, OR_QTY]
    base = st[L3S_BASE]
    lpx = base + idx
    filled = False
    for a in range(rs[RS_NACT]):
        j = act[a]
        r = own[j]
        if r["side"] != sd:
            continue
        at_level = r["px"] == lpx
        if action == L3_EXECUTE:
            worse = (sd == BUY and lpx < r["px"]) or (sd == SELL and lpx > r["px"])
            if worse:
                nf = _own_fill(own, j, r["leaves"], r["px"], ts, LIQ_MAKER, fills, nf)
                filled = True
            elif at_level:
                if seq < r["seq"]:
                    r["ahead"] -= min(qty, oq)
                else:
                    nf = _own_fill(own, j, min(r["leaves"], qty), r["px"], ts, LIQ_MAKER, fills, nf)
                    filled = filled or r["status"] == OWN_FILLED
        elif at_level and seq < r["seq"]:
            r["ahead"] -= _l3_ahead_drop(st[L3S_POLICY], action, lpx, oq, px, qty)
    if filled:
        _drop_inactive(own, act, rs, ox)
    return nf


@kernel
def l3_replay_own(  # noqa: C901 (one flat hot loop on purpose, see engine.book._kernels.l3_apply)
    o: I64,
    lv: I64,
    st: I64,
    keys: I64,
    vals: I64,
    free: I64,
    ev: Rec,
    start: int,
    own: Rec,
    act: I64,
    rs: I64,
    ox: I64,
    fills: Rec,
) -> int:
    """Replay L3 events from row ``start`` with own orders at their exact FIFO position.

    Own orders (``OWN_ORDER_DTYPE``, sorted by ``ts``) join the back of their level's queue
    when they reach the venue; ``ahead`` stays the exact number of lots in front of them.
    They fill when an execution reaches past them in the queue or trades through their
    price. The book arrays, ``own``, ``act``, ``rs``, ``ox`` (``int64[1, 2]``) and
    ``fills`` (room for the open quantity of every pending and active own order) are
    mutated. Stops early when an add finds the book full, or (``rs[RS_STOP]`` set) after the
    first event that filled an own order; returns the next row.

    The book steps are those of :func:`engine.book._kernels.l3_apply`, kept flat in this
    loop for the same reason; own-order work runs out of line, only for events on an order
    at or beyond an own order's price.
    """
    n_own = own.shape[0]
    nf = rs[RS_NFILLS]
    nf0 = nf
    stop = rs[RS_STOP] != 0
    base = st[L3S_BASE]
    mask = keys.shape[0] - 1
    k = start
    while k < ev.shape[0]:
        if stop and nf > nf0:
            break
        e = ev[k]
        ts = e["ts"]
        action = int(e["action"])
        if action == L3_ADD and st[L3S_FREE] == 0:
            break  # full: the wrapper grows the arrays and resumes here
        if rs[RS_NEXT] < n_own and own[rs[RS_NEXT]]["ts"] <= ts:
            nf = _l3_arrive(lv, st, own, act, rs, ox, ts, fills, nf)
        if ts >= rs[RS_CANCEL_TS]:
            _cancel_due(own, act, rs, ox, ts)
        st[L3S_TS] = ts
        k += 1
        oid = e["order_id"]
        if action == L3_ADD:
            h = (oid ^ (oid >> 17) ^ (oid >> 31) ^ (oid >> 47)) & mask
            while keys[h] != ID_EMPTY and keys[h] != oid:
                h = (h + 1) & mask
            if keys[h] == oid:
                st[L3S_DUPLICATE] += 1
                continue
            st[L3S_FREE] -= 1
            slot = free[st[L3S_FREE]]
            keys[h] = oid
            vals[h] = slot
            si = side_index(int(e["side"]))
            i = e["px"] - base
            q = e["qty"]
            tail = lv[si, i, LV_TAIL]
            o[slot, OR_PX] = i
            o[slot, OR_QTY] = q
            o[slot, OR_PREV] = tail
            o[slot, OR_NEXT] = -1
            o[slot, OR_SIDE] = si
            o[slot, OR_ID] = oid
            o[slot, OR_OWNER] = -1
            if tail >= 0:
                o[tail, OR_NEXT] = slot
            else:
                lv[si, i, LV_HEAD] = slot
            lv[si, i, LV_TAIL] = slot
            lv[si, i, LV_QTY] += q
            lv[si, i, LV_CNT] += 1
            st[L3S_SEQ] += 1
            o[slot, OR_SEQ] = st[L3S_SEQ]
            st[L3S_NORDERS] += 1
            if si == BID_SIDE:
                if i > st[L3S_BID]:
                    st[L3S_BID] = i
            elif i < st[L3S_ASK]:
                st[L3S_ASK] = i
            continue
        if action == L3_CLEAR:
            l3_apply_slow(
                o, lv, st, keys, vals, free, action, oid, int(e["side"]), e["px"], e["qty"]
            )
            continue
        h = (oid ^ (oid >> 17) ^ (oid >> 31) ^ (oid >> 47)) & mask
        while keys[h] != oid and keys[h] != ID_EMPTY:
            h = (h + 1) & mask
        if keys[h] != oid:
            st[L3S_UNKNOWN] += 1
            continue
        slot = vals[h]
        si = o[slot, OR_SIDE]
        i = o[slot, OR_PX]
        q = e["qty"]
        if rs[RS_NACT] > 0 and (
            (si == BID_SIDE and ox[0, 0] >= base + i) or (si == ASK_SIDE and ox[0, 1] <= base + i)
        ):
            nf = _l3_own_before(o, st, own, act, rs, ox, slot, action, e["px"], q, ts, fills, nf)
        if action == L3_MODIFY:
            l3_apply_slow(o, lv, st, keys, vals, free, action, oid, int(e["side"]), e["px"], q)
            continue
        left = o[slot, OR_QTY] - q if (action == L3_EXECUTE or q > 0) else 0
        if left > 0:
            o[slot, OR_QTY] = left
            lv[si, i, LV_QTY] -= q
            continue
        prv = o[slot, OR_PREV]
        nxt = o[slot, OR_NEXT]
        if prv >= 0:
            o[prv, OR_NEXT] = nxt
        else:
            lv[si, i, LV_HEAD] = nxt
        if nxt >= 0:
            o[nxt, OR_PREV] = prv
        else:
            lv[si, i, LV_TAIL] = prv
        lv[si, i, LV_QTY] -= o[slot, OR_QTY]
        lv[si, i, LV_CNT] -= 1
        o[slot, OR_QTY] = 0
        if lv[si, i, LV_CNT] == 0 and (
            (si == BID_SIDE and i == st[L3S_BID]) or (si == ASK_SIDE and i == st[L3S_ASK])
        ):
            l3_scan_best(lv, st, si, i)
        j = h
        while True:
            j = (j + 1) & mask
            kj = keys[j]
            if kj == ID_EMPTY:
                break
            hj = (kj ^ (kj >> 17) ^ (kj >> 31) ^ (kj >> 47)) & mask
            stay = (h < hj and hj <= j) if h <= j else (hj > h or hj <= j)
            if not stay:
                keys[h] = kj
                vals[h] = vals[j]
                h = j
        keys[h] = ID_EMPTY
        free[st[L3S_FREE]] = slot
        st[L3S_FREE] += 1
        st[L3S_NORDERS] -= 1
    rs[RS_NFILLS] = nf
    return k
