# SPDX-License-Identifier: MIT
# numba supports only the legacy np.random API (the synthetic stream generator at the end).
# ruff: noqa: NPY002
"""Compiled backtest loops: book replay, queue model, latency and a strategy step in one pass.

The fast path of the backtester. Each loop is the replay of :mod:`engine.matching._kernels`
(``l2_replay_own`` / ``l3_replay_own``, copied flat for the reasons given in
``docs/kernels.md``) with a compiled quoting strategy (:mod:`engine.strategy.quoting`: its
rule is a C callback passed in, so one cached loop serves every strategy) called after every
event. The strategy step is two comparisons per event; the decision itself
(:func:`quote_decide`, which calls the rule) runs out of line
only when the touch moved, the strategy's position changed or an answer it waits for is due.

Time model (all ns): the market event ``k`` happens at the venue at ``ts[k]``; the strategy
sees it at ``tl = ts[k] + feed[k]``; an order or cancel it sends then reaches the venue at
``tl + order[k]`` (never earlier than the previous request: the venue sees requests in the
order they were sent); the venue's answers (acks, fills, cancels) reach the strategy
``resp[k]`` after they happen. ``feed``, ``order`` and ``resp`` are int64 arrays of length
1 (constant) or ``len(ev)`` (recorded, e.g. ``ts_recv - ts``).

Own orders are ``OWN_ORDER_DTYPE`` rows in send order, their ``order_id`` is row + 1; ``t0``
holds the send time and ``tc`` the time a cancel was sent (0: never). Fills go to ``log``
(``FILL_DTYPE``). The loops stop early (returning the next row) when ``own`` or ``log`` is
nearly full; the wrapper grows them and calls again.

Why one long module: ``bt_l2_quote`` and ``bt_l3_quote`` are single flat loops (book replay,
queue model, latency and strategy step hand-inlined together for speed, ``docs/kernels.md``)
and the out-of-line steps they call (``_drain_l2``, ``_decide_at``, ``quote_decide``) share
their ``SS_*`` state layout; ``tests/unit/engine/test_kernel_copies.py`` checks the copies.
"""

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from engine.book._kernels import _l2_scan, l2_clear, l2_set, l3_apply_slow, l3_scan_best
from engine.jit import kernel, kernel_inline
from engine.matching._kernels import (
    RS_CANCEL_TS,
    RS_NACT,
    RS_NEXT,
    _cancel_due,
    _l2_arrive,
    _l2_own_on_set,
    _l2_own_on_trade,
    _l3_arrive,
    _l3_own_before,
)
from engine.types import (
    ASK_SIDE,
    BID_SIDE,
    BUY,
    ID_EMPTY,
    L2_CLEAR,
    L2_SET,
    L2_TRADE,
    L2S_ASK,
    L2S_BASE,
    L2S_BID,
    L2S_TS,
    L3_ADD,
    L3_CLEAR,
    L3_EXECUTE,
    L3_MODIFY,
    L3S_ASK,
    L3S_BASE,
    L3S_BID,
    L3S_DUPLICATE,
    L3S_FREE,
    L3S_NORDERS,
    L3S_SEQ,
    L3S_TS,
    L3S_UNKNOWN,
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
    OWN_ACTIVE,
    OWN_PENDING,
    SELL,
)

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
F64 = npt.NDArray[np.float64]
Rec = npt.NDArray[np.void]
Rule = Callable[..., int]  # a compiled quoting rule (engine.strategy.quoting.RULE_SIGNATURE)

_NEVER = np.iinfo(np.int64).max

# ------------------------------------------------------------------ strategy state columns
SS_BID_J = 0  # own row of the working bid quote, -1 when none
SS_ASK_J = 1  # own row of the working ask quote, -1 when none
SS_BUSY_BID = 2  # local time until which the bid side waits for the venue's answer
SS_BUSY_ASK = 3
SS_NOWN = 4  # own rows used
SS_LAST_ARRIVE = 5  # venue time of the latest request (requests arrive in send order)
SS_POS = 6  # position at the venue, lots
SS_POS_SEEN = 7  # position as the strategy knows it (fills after the response latency)
SS_NLOG = 8  # fill log rows written
SS_HEAD = 9  # ring of fills on their way to the strategy: first unread
SS_TAIL = 10  # next free
SS_WAKE = 11  # earliest local time at which something becomes visible to the strategy
SS_LAST_BB = 12  # touch at the last decision, ticks
SS_LAST_BA = 13
SS_NEXT_CALL = 14  # local time from which the strategy may act again (min interval)
SS_DECISIONS = 15  # decision steps run (out of line)
SS_CALLS = 16  # strategy calls (every event with a two-sided book)
SS_WAIT_BID = 17  # own row whose answer the bid side waits for (-1: none)
SS_WAIT_ASK = 18
SS_ARR_BID = 19  # venue time the bid side's last request arrives (_NEVER: answered)
SS_ARR_ASK = 20
SS_LAST_ANS = 21  # local time the latest answer reaches the strategy (answers keep order)
SS_PHEAD = 22  # queue of strategy calls waiting for their local time (feed latency > 0)
SS_PTAIL = 23
SS_NOW = 24  # local time of the latest step carried out (the generic path's clock)
SS_N = 28

#: Columns of a waiting strategy call: local time, touch, and the latencies of its event.
PD_TL, PD_BB, PD_BA, PD_OLAT, PD_RLAT = range(5)

# ------------------------------------------------------------------ parameter columns
P_INTERVAL = 0  # minimum local time between two strategy calls, ns (0: every event)

# The quotes array of a rule (engine.strategy.quoting: the same slots)
Q_NONE = np.iinfo(np.int64).min  # no working quote on that side
Q_WORKING_BID = 0
Q_BID_PX = 2
Q_BID_QTY = 3
Q_N = 8

#: Ring of fills in flight to the strategy: ``int64[RING, 4]`` (visible at, signed lots, own
#: row, leaves after the fill).
RING = 1 << 14


@kernel_inline
def _pick(a: I64, k: int) -> int:
    return int(a[k] if a.shape[0] > 1 else a[0])


@kernel
def _send(own: Rec, t0: I64, ss: I64, side: int, px: int, qty: int, tl: int, arrive: int) -> int:
    """Append an own order sent at ``tl`` reaching the venue at ``arrive``; return its row."""
    j = ss[SS_NOWN]
    ss[SS_NOWN] = j + 1
    r = own[j]
    r["order_id"] = j + 1
    r["ts"] = arrive
    r["px"] = px
    r["qty"] = qty
    r["leaves"] = qty
    r["ahead"] = 0.0
    r["pending"] = 0.0
    r["seq"] = 0
    r["cancel_ts"] = _NEVER
    r["book"] = 0
    r["side"] = side
    r["status"] = OWN_PENDING
    t0[j] = tl
    return int(j)


@kernel
def _cancel(own: Rec, tc: I64, rs: I64, j: int, tl: int, arrive: int) -> None:
    """Send a cancel of own row ``j`` at ``tl``; it reaches the venue at ``arrive``."""
    r = own[j]
    if r["status"] != OWN_PENDING and r["status"] != OWN_ACTIVE:
        return
    if tc[j] == 0:
        tc[j] = tl
    if arrive < r["cancel_ts"]:
        r["cancel_ts"] = arrive
    if r["status"] == OWN_ACTIVE and arrive < rs[RS_CANCEL_TS]:
        rs[RS_CANCEL_TS] = arrive


@kernel
def quote_decide(  # noqa: C901 (both sides' rules in one place, as in QuotingStrategy)
    rule: Rule,
    own: Rec,
    t0: I64,
    tc: I64,
    rs: I64,
    ss: I64,
    pp: F64,
    ust: F64,
    qo: I64,
    ring: I64,
    tl: int,
    bb: int,
    ba: int,
    lo: int,
    hi: int,
    olat: int,
    resp: int,
    rep: I64,
) -> None:
    """One decision of a quoting strategy at local time ``tl``, touch ``bb``/``ba``.

    Runs the strategy's compiled ``rule`` (:mod:`engine.strategy.quoting`; its parameters are
    ``pp[1:]``, its state ``ust``, ``qo`` the quotes array it reads and writes) and carries
    its answer out as :meth:`~engine.strategy.quoting.QuotingStrategy.on_book` does through
    the order manager. A move is a replace, as the generic path's order manager sends it: a
    cancel of the row and a new row (a new queue position) linked to it by ``rep``, which the
    venue refuses if the old row is done when it arrives (:func:`_replacement`). A side waits
    for the venue's answer to its last cancel or replace before it acts again (not for a new
    order's: the order manager lets a pending new order be replaced), unless the order is
    done first (its last fill seen). Quotes are only placed at prices in ``[lo, hi)`` (the
    book's window). Mutates ``own``, ``t0``, ``tc``, ``rs``, ``ss``, ``ust``, ``qo``,
    ``ring`` and ``rep``.
    """
    # fills that reached the strategy by now
    h = ss[SS_HEAD]
    while h < ss[SS_TAIL] and ring[h & (RING - 1), 0] <= tl:
        e = ring[h & (RING - 1)]
        ss[SS_POS_SEEN] += e[1]
        j = e[2]
        if e[3] == 0:  # its last fill (or a refused replacement): the order is done
            for s in range(2):
                c = ss[SS_BID_J + s]
                if c >= 0 and (c == j or rep[c] == j):
                    ss[SS_BID_J + s] = -1
                w = ss[SS_WAIT_BID + s]
                if w >= 0 and (w == j or rep[w] == j):  # nothing more to wait for
                    ss[SS_BUSY_BID + s] = 0
                    ss[SS_WAIT_BID + s] = -1
        h += 1
    ss[SS_HEAD] = h
    ss[SS_LAST_BB] = bb
    ss[SS_LAST_BA] = ba
    ss[SS_DECISIONS] += 1
    for s in range(2):
        j = ss[SS_BID_J + s]
        qo[Q_WORKING_BID + s] = own[j]["px"] if j >= 0 else Q_NONE
    for i in range(Q_BID_PX, qo.shape[0]):
        qo[i] = 0
    asked = rule(tl, bb, ba, ss[SS_POS_SEEN], qo, pp[1:], ust)
    arrive = max(tl + olat, ss[SS_LAST_ARRIVE])
    for s in range(2):
        col = SS_BID_J + s
        busy = SS_BUSY_BID + s
        if tl < ss[busy]:
            continue
        px = qo[Q_BID_PX + 2 * s]
        qty = qo[Q_BID_QTY + 2 * s]
        want = qty > 0 and lo <= px < hi
        j = ss[col]
        if j >= 0:
            if want and own[j]["px"] == px:
                continue
            _cancel(own, tc, rs, j, tl, arrive)
            ss[col] = -1
            ss[busy] = _NEVER  # until the answer: see _answers
            ss[SS_ARR_BID + s] = arrive
            ss[SS_LAST_ARRIVE] = arrive
            ss[SS_WAIT_BID + s] = j
            if want:  # a replace keeps the quote's size
                qty = own[j]["qty"]
        if want:
            new = _send(own, t0, ss, BUY if s == 0 else SELL, int(px), int(qty), tl, arrive)
            rep[new] = j  # -1: a new order; else it replaces row j
            ss[col] = new
            ss[SS_LAST_ARRIVE] = arrive
            if j >= 0:  # a replace waits for its answer; a new order does not (as in the OMS)
                ss[busy] = _NEVER
                ss[SS_ARR_BID + s] = arrive
                ss[SS_WAIT_BID + s] = new
    wake = _NEVER
    if asked > tl:
        wake = asked
    for busy in (ss[SS_BUSY_BID], ss[SS_BUSY_ASK]):
        if tl < busy < wake:
            wake = busy
    if ss[SS_HEAD] < ss[SS_TAIL]:
        wake = min(wake, ring[ss[SS_HEAD] & (RING - 1), 0])
    ss[SS_WAKE] = wake


@kernel
def _book_fills(own: Rec, scratch: Rec, nf: int, log: Rec, ss: I64, ring: I64, resp: int) -> None:
    """Move this event's fills from ``scratch`` to the log, the position and the ring."""
    for i in range(nf):
        f = scratch[i]
        seen = max(f["ts"] + resp, ss[SS_LAST_ANS])  # answers reach the strategy in order
        ss[SS_LAST_ANS] = seen
        n = ss[SS_NLOG]
        log[n] = f
        ss[SS_NLOG] = n + 1
        dq = f["qty"] * f["side"]
        ss[SS_POS] += dq
        t = ss[SS_TAIL]
        e = ring[t & (RING - 1)]
        e[0] = seen
        e[1] = dq
        e[2] = f["order_id"] - 1
        e[3] = own[e[2]]["leaves"]  # one fill per order and event: leaves after this one
        ss[SS_TAIL] = t + 1
        if e[0] < ss[SS_WAKE]:
            ss[SS_WAKE] = e[0]


@kernel_inline
def _answers(ss: I64, ts: int, resp: int) -> None:
    """Answer the requests that reached the venue by ``ts``: each side waits ``resp`` more.

    The venue answers when a request arrives, at the response latency of its last event,
    and answers reach the strategy in the order they were sent (as in the generic path).
    """
    for s in range(2):
        arr = ss[SS_ARR_BID + s]
        if arr <= ts:
            seen = max(arr + resp, ss[SS_LAST_ANS])
            ss[SS_LAST_ANS] = seen
            ss[SS_BUSY_BID + s] = seen
            ss[SS_ARR_BID + s] = _NEVER
            if seen < ss[SS_WAKE]:
                ss[SS_WAKE] = seen


@kernel_inline
def _replacement(own: Rec, rep: I64, ss: I64, ring: I64, j: int, resp: int) -> None:
    """Refuse row ``j`` on arrival if it replaces a row that is done by then.

    The generic path's venue refuses a cancel/replace of an order that filled before the
    request arrived (a cancel reject, "too late to replace"), and a replace of a partly
    filled order keeps only its open lots. Here the new row is canceled on arrival and the
    strategy learns it ``resp`` later (a ring entry with no lots and no leaves); a partly
    filled old row passes its leaves on.
    """
    p = rep[j]
    if p < 0:
        return
    r = own[j]
    old = own[p]
    if old["status"] != OWN_ACTIVE or old["leaves"] <= 0:
        r["cancel_ts"] = r["ts"]
        t = ss[SS_TAIL]
        e = ring[t & (RING - 1)]
        e[0] = max(r["ts"] + resp, ss[SS_LAST_ANS])
        ss[SS_LAST_ANS] = e[0]
        e[1] = 0
        e[2] = j
        e[3] = 0
        ss[SS_TAIL] = t + 1
        if e[0] < ss[SS_WAKE]:
            ss[SS_WAKE] = e[0]
    elif old["leaves"] < old["qty"]:
        r["qty"] = old["leaves"]
        r["leaves"] = old["leaves"]


@kernel
def _arrive_l2(
    q: I64,
    st: I64,
    own: Rec,
    nown: int,
    act: I64,
    rs: I64,
    ox: I64,
    rep: I64,
    ss: I64,
    ring: I64,
    until: int,
    scratch: Rec,
    nf: int,
    resp: int,
) -> int:
    """Bring own rows reaching the venue by ``until`` in, one at a time; return fill rows.

    One at a time, so that a replacement sees the row it replaces already in the book.
    """
    while rs[RS_NEXT] < nown and own[rs[RS_NEXT]]["ts"] <= until:
        j = rs[RS_NEXT]
        _replacement(own, rep, ss, ring, j, resp)
        nf = _l2_arrive(q, st, own[: j + 1], act, rs, ox, until, scratch, nf)
    return nf


@kernel
def _arrive_l3(
    lv: I64,
    st: I64,
    own: Rec,
    nown: int,
    act: I64,
    rs: I64,
    ox: I64,
    rep: I64,
    ss: I64,
    ring: I64,
    until: int,
    scratch: Rec,
    nf: int,
    resp: int,
) -> int:
    """:func:`_arrive_l2` for the L3 book."""
    while rs[RS_NEXT] < nown and own[rs[RS_NEXT]]["ts"] <= until:
        j = rs[RS_NEXT]
        _replacement(own, rep, ss, ring, j, resp)
        nf = _l3_arrive(lv, st, own[: j + 1], act, rs, ox, until, scratch, nf)
    return nf


@kernel_inline
def _room(own: Rec, rs: I64, ss: I64, log: Rec, pend: I64) -> bool:
    # Fills per event are bounded by the live own orders; each decision adds at most 2 rows.
    live = rs[RS_NACT] + ss[SS_NOWN] - rs[RS_NEXT] + 4
    return bool(
        ss[SS_NOWN] + 4 <= own.shape[0]
        and ss[SS_NLOG] + live <= log.shape[0]
        and ss[SS_TAIL] - ss[SS_HEAD] + live <= RING
        and ss[SS_PTAIL] - ss[SS_PHEAD] + 1 < pend.shape[0]
    )


@kernel_inline
def _call_due(pend: I64, ss: I64, until: int) -> bool:
    """Whether the first waiting strategy call comes before venue time ``until``."""
    h = ss[SS_PHEAD]
    return bool(h < ss[SS_PTAIL] and pend[h & (pend.shape[0] - 1), PD_TL] < until)


@kernel_inline
def _idle(
    now: int,
    arr_bid: int,
    arr_ask: int,
    cancel_ts: int,
    arrival: int,
    next_call: int,
    interval: float,
    bb: int,
    ba: int,
    last_bb: int,
    last_ba: int,
    wake: int,
) -> bool:
    """Whether a waiting strategy call at ``now`` would change nothing (most do not).

    Nothing is due (an answer, an arrival, a cancel) and :func:`_decide_at` would return at
    once. Scalars only: the replay loops check this on every event, and a helper taking
    arrays there costs their reference counts each time.
    """
    if arr_bid <= now or arr_ask <= now or now >= cancel_ts or arrival <= now:
        return False
    if now < next_call:
        return True
    return interval <= 0 and bb == last_bb and ba == last_ba and now < wake


@kernel
def _decide_at(
    rule: Rule,
    own: Rec,
    t0: I64,
    tc: I64,
    rs: I64,
    ss: I64,
    pp: F64,
    ust: F64,
    qo: I64,
    ring: I64,
    rep: I64,
    pend: I64,
    i: int,
    now: int,
    lo: int,
    hi: int,
) -> None:
    """Run waiting strategy call ``pend[i]`` at local time ``now`` (gates as on the direct path)."""
    if now < ss[SS_NEXT_CALL]:
        return
    if pp[P_INTERVAL] > 0:
        ss[SS_NEXT_CALL] = now + np.int64(pp[P_INTERVAL])
    bb = pend[i, PD_BB]
    ba = pend[i, PD_BA]
    if bb == ss[SS_LAST_BB] and ba == ss[SS_LAST_BA] and now < ss[SS_WAKE]:
        return
    quote_decide(
        rule,
        own,
        t0,
        tc,
        rs,
        ss,
        pp,
        ust,
        qo,
        ring,
        now,
        bb,
        ba,
        lo,
        hi,
        pend[i, PD_OLAT],
        pend[i, PD_RLAT],
        rep,
    )


@kernel_inline
def _drain_l2(
    rule: Rule,
    q: I64,
    st: I64,
    own: Rec,
    t0: I64,
    tc: I64,
    act: I64,
    rs: I64,
    ox: I64,
    scratch: Rec,
    log: Rec,
    ss: I64,
    pp: F64,
    ust: F64,
    qo: I64,
    ring: I64,
    rep: I64,
    pend: I64,
    until: int,
    resp: int,
) -> bool:
    """Run the strategy calls due before venue time ``until``; False when out of room.

    With feed latency the strategy sees an update at ``ts + feed``; the generic path carries
    out everything due by then first (arrivals, answers, cancels; the venue's book is at the
    state of its last event), and so does this, for the L2 book.
    """
    n = q.shape[2]
    while _call_due(pend, ss, until):
        if not _room(own, rs, ss, log, pend):
            return False
        pi = ss[SS_PHEAD] & (pend.shape[0] - 1)
        ss[SS_PHEAD] += 1
        now = max(pend[pi, PD_TL], ss[SS_NOW])
        ss[SS_NOW] = now
        if ss[SS_ARR_BID] <= now or ss[SS_ARR_ASK] <= now:
            _answers(ss, now, resp)
        nown = ss[SS_NOWN]
        if rs[RS_NEXT] < nown and own[rs[RS_NEXT]]["ts"] <= now:
            nf = _arrive_l2(q, st, own, nown, act, rs, ox, rep, ss, ring, now, scratch, 0, resp)
            if nf > 0:
                _book_fills(own, scratch, nf, log, ss, ring, resp)
        if now >= rs[RS_CANCEL_TS]:
            _cancel_due(own, act, rs, ox, now)
        base = st[0, L2S_BASE]
        _decide_at(rule, own, t0, tc, rs, ss, pp, ust, qo, ring, rep, pend, pi, now, base, base + n)
    return True


@kernel
def _drain_l3(
    rule: Rule,
    lv: I64,
    st: I64,
    own: Rec,
    t0: I64,
    tc: I64,
    act: I64,
    rs: I64,
    ox: I64,
    scratch: Rec,
    log: Rec,
    ss: I64,
    pp: F64,
    ust: F64,
    qo: I64,
    ring: I64,
    rep: I64,
    pend: I64,
    until: int,
    resp: int,
) -> bool:
    """:func:`_drain_l2` for the L3 book."""
    base = st[L3S_BASE]
    n = lv.shape[1]
    while _call_due(pend, ss, until):
        if not _room(own, rs, ss, log, pend):
            return False
        pi = ss[SS_PHEAD] & (pend.shape[0] - 1)
        ss[SS_PHEAD] += 1
        now = max(pend[pi, PD_TL], ss[SS_NOW])
        ss[SS_NOW] = now
        if ss[SS_ARR_BID] <= now or ss[SS_ARR_ASK] <= now:
            _answers(ss, now, resp)
        nown = ss[SS_NOWN]
        if rs[RS_NEXT] < nown and own[rs[RS_NEXT]]["ts"] <= now:
            nf = _arrive_l3(lv, st, own, nown, act, rs, ox, rep, ss, ring, now, scratch, 0, resp)
            if nf > 0:
                _book_fills(own, scratch, nf, log, ss, ring, resp)
        if now >= rs[RS_CANCEL_TS]:
            _cancel_due(own, act, rs, ox, now)
        _decide_at(rule, own, t0, tc, rs, ss, pp, ust, qo, ring, rep, pend, pi, now, base, base + n)
    return True


@kernel
def bt_l2_quote(  # noqa: C901 (one flat hot loop on purpose, see the module docstring)
    rule: Rule,
    q: I64,
    st: I64,
    ev: Rec,
    start: int,
    own: Rec,
    t0: I64,
    tc: I64,
    act: I64,
    rs: I64,
    ox: I64,
    scratch: Rec,
    log: Rec,
    ss: I64,
    pp: F64,
    ust: F64,
    qo: I64,
    ring: I64,
    feed: I64,
    olat: I64,
    rlat: I64,
    model: int,
    param: float,
    gend: U8,
    rep: I64,
    pend: I64,
    final: bool,
) -> int:
    """Replay L2 events of book 0 from row ``start`` with a compiled quoting strategy.

    Book, queue model and own-order steps are those of
    :func:`engine.matching._kernels.l2_replay_own`; after each event the strategy is
    called (see :func:`quote_decide`) when the row ends a venue update (``gend``, see
    :mod:`engine.backtest.rules`). Every array argument but ``ev``, ``feed``, ``olat``,
    ``rlat``, ``pp`` and ``gend`` is mutated; ``rule`` is the strategy's compiled rule.
    Returns the next row to replay (``len(ev)`` when done).
    """
    n = q.shape[2]
    b = 0
    nf = 0
    k = start
    check = True  # own rows or fills changed: is there room for the next event?
    fvar = feed.shape[0] > 1
    f0 = feed[0]
    defer = fvar or f0 != 0  # calls wait for their local time (see _drain_l2)
    pmask = pend.shape[0] - 1
    while k < ev.shape[0]:
        if check:
            if not _room(own, rs, ss, log, pend):
                break
            check = False
        e = ev[k]
        ts = e["ts"]
        # (the per-event steps on pend are written out here: a helper taking the arrays
        # costs their reference counts on every event in a loop this size)
        full = False
        h = ss[SS_PHEAD]
        while defer and h < ss[SS_PTAIL] and pend[h & pmask, PD_TL] < ts:
            pi = h & pmask
            now = max(pend[pi, PD_TL], ss[SS_NOW])
            nx = rs[RS_NEXT]
            if _idle(
                now,
                ss[SS_ARR_BID],
                ss[SS_ARR_ASK],
                rs[RS_CANCEL_TS],
                own[nx]["ts"] if nx < ss[SS_NOWN] else _NEVER,
                ss[SS_NEXT_CALL],
                pp[P_INTERVAL],
                pend[pi, PD_BB],
                pend[pi, PD_BA],
                ss[SS_LAST_BB],
                ss[SS_LAST_BA],
                ss[SS_WAKE],
            ):
                h += 1
                ss[SS_PHEAD] = h
                ss[SS_NOW] = now
                continue
            full = not _drain_l2(
                rule,
                q,
                st,
                own,
                t0,
                tc,
                act,
                rs,
                ox,
                scratch,
                log,
                ss,
                pp,
                ust,
                qo,
                ring,
                rep,
                pend,
                ts,
                _pick(rlat, max(k - 1, 0)),
            ) or not _room(own, rs, ss, log, pend)
            break
        if full:
            break  # (k not advanced: the wrapper makes room and resumes here)
        if ss[SS_NOW] < ts:
            ss[SS_NOW] = ts
        if ss[SS_ARR_BID] <= ts or ss[SS_ARR_ASK] <= ts:
            _answers(ss, ts, _pick(rlat, max(k - 1, 0)))
        nown = ss[SS_NOWN]
        if rs[RS_NEXT] < nown and own[rs[RS_NEXT]]["ts"] <= ts:
            nf = _arrive_l2(
                q,
                st,
                own,
                nown,
                act,
                rs,
                ox,
                rep,
                ss,
                ring,
                ts,
                scratch,
                nf,
                _pick(rlat, max(k - 1, 0)),
            )
            if nf > 0:  # taken on arrival: answered at the latency before this event
                _book_fills(own, scratch, nf, log, ss, ring, _pick(rlat, max(k - 1, 0)))
                nf = 0
                check = True
        if ts >= rs[RS_CANCEL_TS]:
            _cancel_due(own, act, rs, ox, ts)
        kind = e["kind"]
        px = e["px"]
        sd = int(e["side"])
        if kind == L2_SET:
            si = BID_SIDE if sd == BUY else ASK_SIDE
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
                        if r["px"] == px and r["side"] == sd:  # (all own orders are book 0)
                            hit = True
                            break
                if hit:
                    nf = _l2_own_on_set(
                        q, st, own, act, rs, ox, b, sd, px, prev, v, ts, scratch, nf, model, param
                    )
        elif kind == L2_TRADE:
            if rs[RS_NACT] > 0 and (
                (sd == SELL and ox[b, 0] >= px) or (sd == BUY and ox[b, 1] <= px)
            ):
                nf = _l2_own_on_trade(own, act, rs, ox, b, sd, px, e["qty"], ts, scratch, nf)
        else:
            l2_clear(q, st, b)
        st[b, L2S_TS] = ts
        k += 1
        if nf > 0:
            _book_fills(own, scratch, nf, log, ss, ring, _pick(rlat, k - 1))
            nf = 0
            check = True
        # the strategy, called after every venue update with a two-sided book
        if gend[k - 1] == 0:
            continue
        ib = st[b, L2S_BID]
        ia = st[b, L2S_ASK]
        if ib < 0 or ia >= n:
            continue
        ss[SS_CALLS] += 1
        tl = ts + (feed[k - 1] if fvar else f0)
        base = st[b, L2S_BASE]
        bb = base + ib
        ba = base + ia
        if defer:
            t = ss[SS_PTAIL]
            pi = t & pmask
            pend[pi, PD_TL] = tl
            pend[pi, PD_BB] = bb
            pend[pi, PD_BA] = ba
            pend[pi, PD_OLAT] = olat[k - 1] if olat.shape[0] > 1 else olat[0]
            pend[pi, PD_RLAT] = rlat[k - 1] if rlat.shape[0] > 1 else rlat[0]
            ss[SS_PTAIL] = t + 1
            if t + 2 - ss[SS_PHEAD] >= pend.shape[0]:  # as _room: the queue is full
                check = True
            continue
        if tl < ss[SS_NEXT_CALL]:
            continue
        if pp[P_INTERVAL] > 0:
            ss[SS_NEXT_CALL] = tl + np.int64(pp[P_INTERVAL])
        if bb == ss[SS_LAST_BB] and ba == ss[SS_LAST_BA] and tl < ss[SS_WAKE]:
            continue
        quote_decide(
            rule,
            own,
            t0,
            tc,
            rs,
            ss,
            pp,
            ust,
            qo,
            ring,
            tl,
            bb,
            ba,
            base,
            base + n,
            _pick(olat, k - 1),
            _pick(rlat, k - 1),
            rep,
        )
        check = True
    if final and k >= ev.shape[0]:  # the end: calls still waiting, then the last arrivals
        resp = _pick(rlat, max(k - 1, 0))
        done = _drain_l2(
            rule,
            q,
            st,
            own,
            t0,
            tc,
            act,
            rs,
            ox,
            scratch,
            log,
            ss,
            pp,
            ust,
            qo,
            ring,
            rep,
            pend,
            _NEVER,
            resp,
        )
        nown = ss[SS_NOWN]
        if done and rs[RS_NEXT] < nown and _room(own, rs, ss, log, pend):
            nf = _arrive_l2(q, st, own, nown, act, rs, ox, rep, ss, ring, _NEVER, scratch, 0, resp)
            if nf > 0:
                _book_fills(own, scratch, nf, log, ss, ring, resp)
    return k


@kernel
def bt_l3_quote(  # noqa: C901 (one flat hot loop on purpose, see engine.book._kernels.l3_apply)
    rule: Rule,
    o: I64,
    lv: I64,
    st: I64,
    keys: I64,
    vals: I64,
    free: I64,
    ev: Rec,
    start: int,
    own: Rec,
    t0: I64,
    tc: I64,
    act: I64,
    rs: I64,
    ox: I64,
    scratch: Rec,
    log: Rec,
    ss: I64,
    pp: F64,
    ust: F64,
    qo: I64,
    ring: I64,
    feed: I64,
    olat: I64,
    rlat: I64,
    gend: U8,
    rep: I64,
    pend: I64,
    final: bool,
) -> int:
    """Replay L3 events from row ``start`` with exact queue positions and a quoting strategy.

    Book and own-order steps are those of :func:`engine.matching._kernels.l3_replay_own`;
    after each venue update (``gend``) the strategy is called (see :func:`quote_decide`). Stops
    early when an add finds the book full or ``own``/``log`` need room; returns the next row.
    """
    nf = 0
    base = st[L3S_BASE]
    n = lv.shape[1]
    mask = keys.shape[0] - 1
    k = start
    check = True  # own rows or fills changed: is there room for the next event?
    fvar = feed.shape[0] > 1
    f0 = feed[0]
    defer = fvar or f0 != 0  # calls wait for their local time (see _drain_l2)
    pmask = pend.shape[0] - 1
    while k < ev.shape[0]:
        if check:
            if not _room(own, rs, ss, log, pend):
                break
            check = False
        e = ev[k]
        ts = e["ts"]
        full = False  # the waiting calls due, as in bt_l2_quote
        h = ss[SS_PHEAD]
        while defer and h < ss[SS_PTAIL] and pend[h & pmask, PD_TL] < ts:
            pi = h & pmask
            now = max(pend[pi, PD_TL], ss[SS_NOW])
            nx = rs[RS_NEXT]
            if _idle(
                now,
                ss[SS_ARR_BID],
                ss[SS_ARR_ASK],
                rs[RS_CANCEL_TS],
                own[nx]["ts"] if nx < ss[SS_NOWN] else _NEVER,
                ss[SS_NEXT_CALL],
                pp[P_INTERVAL],
                pend[pi, PD_BB],
                pend[pi, PD_BA],
                ss[SS_LAST_BB],
                ss[SS_LAST_BA],
                ss[SS_WAKE],
            ):
                h += 1
                ss[SS_PHEAD] = h
                ss[SS_NOW] = now
                continue
            full = not _drain_l3(
                rule,
                lv,
                st,
                own,
                t0,
                tc,
                act,
                rs,
                ox,
                scratch,
                log,
                ss,
                pp,
                ust,
                qo,
                ring,
                rep,
                pend,
                ts,
                _pick(rlat, max(k - 1, 0)),
            ) or not _room(own, rs, ss, log, pend)
            break
        if full:
            break  # (k not advanced: the wrapper makes room and resumes here)
        action = int(e["action"])
        if action == L3_ADD and st[L3S_FREE] == 0:
            break  # full: the wrapper grows the arrays and resumes here
        if ss[SS_NOW] < ts:
            ss[SS_NOW] = ts
        if ss[SS_ARR_BID] <= ts or ss[SS_ARR_ASK] <= ts:
            _answers(ss, ts, _pick(rlat, max(k - 1, 0)))
        nown = ss[SS_NOWN]
        if rs[RS_NEXT] < nown and own[rs[RS_NEXT]]["ts"] <= ts:
            nf = _arrive_l3(
                lv,
                st,
                own,
                nown,
                act,
                rs,
                ox,
                rep,
                ss,
                ring,
                ts,
                scratch,
                nf,
                _pick(rlat, max(k - 1, 0)),
            )
            if nf > 0:  # taken on arrival: answered at the latency before this event
                _book_fills(own, scratch, nf, log, ss, ring, _pick(rlat, max(k - 1, 0)))
                nf = 0
                check = True
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
            else:
                st[L3S_FREE] -= 1
                slot = free[st[L3S_FREE]]
                keys[h] = oid
                vals[h] = slot
                si = BID_SIDE if e["side"] == BUY else ASK_SIDE
                i = e["px"] - base
                qq = e["qty"]
                tail = lv[si, i, LV_TAIL]
                o[slot, OR_PX] = i
                o[slot, OR_QTY] = qq
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
                lv[si, i, LV_QTY] += qq
                lv[si, i, LV_CNT] += 1
                st[L3S_SEQ] += 1
                o[slot, OR_SEQ] = st[L3S_SEQ]
                st[L3S_NORDERS] += 1
                if si == BID_SIDE:
                    if i > st[L3S_BID]:
                        st[L3S_BID] = i
                elif i < st[L3S_ASK]:
                    st[L3S_ASK] = i
        elif action == L3_CLEAR:
            l3_apply_slow(
                o, lv, st, keys, vals, free, action, oid, int(e["side"]), e["px"], e["qty"]
            )
        else:
            h = (oid ^ (oid >> 17) ^ (oid >> 31) ^ (oid >> 47)) & mask
            while keys[h] != oid and keys[h] != ID_EMPTY:
                h = (h + 1) & mask
            if keys[h] != oid:
                st[L3S_UNKNOWN] += 1
            else:
                slot = vals[h]
                si = o[slot, OR_SIDE]
                i = o[slot, OR_PX]
                qq = e["qty"]
                if rs[RS_NACT] > 0 and (
                    (si == BID_SIDE and ox[0, 0] >= base + i)
                    or (si == ASK_SIDE and ox[0, 1] <= base + i)
                ):
                    nf = _l3_own_before(
                        o, st, own, act, rs, ox, slot, action, e["px"], qq, ts, scratch, nf
                    )
                if action == L3_MODIFY:
                    l3_apply_slow(
                        o, lv, st, keys, vals, free, action, oid, int(e["side"]), e["px"], qq
                    )
                else:
                    left = o[slot, OR_QTY] - qq if (action == L3_EXECUTE or qq > 0) else 0
                    if left > 0:
                        o[slot, OR_QTY] = left
                        lv[si, i, LV_QTY] -= qq
                    else:
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
                            (si == BID_SIDE and i == st[L3S_BID])
                            or (si == ASK_SIDE and i == st[L3S_ASK])
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
        if nf > 0:
            _book_fills(own, scratch, nf, log, ss, ring, _pick(rlat, k - 1))
            nf = 0
            check = True
        if gend[k - 1] == 0:
            continue
        ib = st[L3S_BID]
        ia = st[L3S_ASK]
        if ib < 0 or ia >= n:
            continue
        ss[SS_CALLS] += 1
        tl = ts + (feed[k - 1] if fvar else f0)
        bb = base + ib
        ba = base + ia
        if defer:
            t = ss[SS_PTAIL]  # _push_call, written out (see bt_l2_quote)
            pi = t & pmask
            pend[pi, PD_TL] = tl
            pend[pi, PD_BB] = bb
            pend[pi, PD_BA] = ba
            pend[pi, PD_OLAT] = olat[k - 1] if olat.shape[0] > 1 else olat[0]
            pend[pi, PD_RLAT] = rlat[k - 1] if rlat.shape[0] > 1 else rlat[0]
            ss[SS_PTAIL] = t + 1
            if t + 2 - ss[SS_PHEAD] >= pend.shape[0]:  # as _room: the queue is full
                check = True
            continue
        if tl < ss[SS_NEXT_CALL]:
            continue
        if pp[P_INTERVAL] > 0:
            ss[SS_NEXT_CALL] = tl + np.int64(pp[P_INTERVAL])
        if bb == ss[SS_LAST_BB] and ba == ss[SS_LAST_BA] and tl < ss[SS_WAKE]:
            continue
        quote_decide(
            rule,
            own,
            t0,
            tc,
            rs,
            ss,
            pp,
            ust,
            qo,
            ring,
            tl,
            bb,
            ba,
            base,
            base + n,
            _pick(olat, k - 1),
            _pick(rlat, k - 1),
            rep,
        )
        check = True
    if final and k >= ev.shape[0]:  # the end: calls still waiting, then the last arrivals
        resp = _pick(rlat, max(k - 1, 0))
        done = _drain_l3(
            rule,
            lv,
            st,
            own,
            t0,
            tc,
            act,
            rs,
            ox,
            scratch,
            log,
            ss,
            pp,
            ust,
            qo,
            ring,
            rep,
            pend,
            _NEVER,
            resp,
        )
        nown = ss[SS_NOWN]
        if done and rs[RS_NEXT] < nown and _room(own, rs, ss, log, pend):
            nf = _arrive_l3(lv, st, own, nown, act, rs, ox, rep, ss, ring, _NEVER, scratch, 0, resp)
            if nf > 0:
                _book_fills(own, scratch, nf, log, ss, ring, resp)
    return k


# ------------------------------------------------------------------------ synthetic data
@kernel
def random_walk_l2(
    out: Rec,
    n_steps: int,
    seed: int,
    levels: int,
    p_move: float,
    p_trade: float,
    start_px: int,
    t0: int,
    gap_ns: float,
) -> int:
    """Write a random-walk L2 stream of ``n_steps`` steps into ``out``; return the row count.

    A one-tick market ``levels`` deep on each side: each step either moves the touch one tick
    (the far touch trades out and the book shifts), trades part of a touch level, or resizes a
    random level. ``out`` needs ``4 * n_steps + 2 * levels`` rows. Deterministic in ``seed``.
    """
    np.random.seed(seed)
    sz = np.zeros((2, levels), np.int64)  # sizes of the levels, touch first
    bid = start_px
    ts = np.int64(t0)
    m = 0
    for s in range(2):
        for lv in range(levels):
            sz[s, lv] = 1 + np.random.randint(0, 20)
            r = out[m]
            r["ts"] = ts
            r["px"] = bid - lv if s == 0 else bid + 1 + lv
            r["qty"] = sz[s, lv]
            r["side"] = BUY if s == 0 else SELL
            r["kind"] = L2_SET
            m += 1
    for _ in range(n_steps):
        ts += 1 + np.int64(np.random.exponential(gap_ns))
        u = np.random.random()
        if u < p_move:
            up = np.random.random() < 0.5
            s = 1 if up else 0  # the side that trades out
            tpx = bid + 1 if up else bid
            r = out[m]
            r["ts"], r["px"], r["qty"] = ts, tpx, sz[s, 0]
            r["side"], r["kind"] = (BUY if up else SELL), L2_TRADE
            m += 1
            r = out[m]
            r["ts"], r["px"], r["qty"], r["kind"] = ts, tpx, 0, L2_SET
            r["side"] = SELL if up else BUY
            m += 1
            # shift: the traded side loses its touch, the other side gains a new one
            o = 1 - s
            far = (bid - (levels - 1)) if o == 0 else (bid + levels)
            for lv in range(levels - 1):
                sz[s, lv] = sz[s, lv + 1]
            sz[s, levels - 1] = 1 + np.random.randint(0, 20)
            for lv in range(levels - 1, 0, -1):
                sz[o, lv] = sz[o, lv - 1]
            sz[o, 0] = 1 + np.random.randint(0, 20)
            bid = bid + 1 if up else bid - 1
            r = out[m]  # the new touch of the other side
            r["ts"], r["qty"], r["kind"] = ts, sz[o, 0], L2_SET
            r["px"] = bid if o == 0 else bid + 1
            r["side"] = BUY if o == 0 else SELL
            m += 1
            r = out[m]  # the far level of the other side drops out of the window we keep
            r["ts"], r["qty"], r["kind"] = ts, 0, L2_SET
            r["px"] = far
            r["side"] = BUY if o == 0 else SELL
            m += 1
            r = out[m]  # a new far level on the traded side
            r["ts"], r["qty"], r["kind"] = ts, sz[s, levels - 1], L2_SET
            r["px"] = (bid - (levels - 1)) if s == 0 else (bid + levels)
            r["side"] = BUY if s == 0 else SELL
            m += 1
        elif u < p_move + p_trade:
            s = 0 if np.random.random() < 0.5 else 1
            q = 1 + np.random.randint(0, max(sz[s, 0] - 1, 1))
            q = min(q, sz[s, 0] - 1) if sz[s, 0] > 1 else 0
            if q <= 0:
                continue
            px = bid if s == 0 else bid + 1
            r = out[m]
            r["ts"], r["px"], r["qty"], r["kind"] = ts, px, q, L2_TRADE
            r["side"] = SELL if s == 0 else BUY  # the aggressor hits the other side
            m += 1
            sz[s, 0] -= q
            r = out[m]
            r["ts"], r["px"], r["qty"], r["kind"] = ts, px, sz[s, 0], L2_SET
            r["side"] = BUY if s == 0 else SELL
            m += 1
        else:
            s = 0 if np.random.random() < 0.5 else 1
            lv = np.random.randint(0, levels)
            sz[s, lv] = 1 + np.random.randint(0, 20)
            r = out[m]
            r["ts"], r["qty"], r["kind"] = ts, sz[s, lv], L2_SET
            r["px"] = (bid - lv) if s == 0 else (bid + 1 + lv)
            r["side"] = BUY if s == 0 else SELL
            m += 1
    return m


@kernel
def first_unsorted(ts: I64) -> int:
    """Return the first row whose ``ts`` is earlier than the row before, or -1 if sorted."""
    for i in range(1, ts.shape[0]):
        if ts[i] < ts[i - 1]:
            return i
    return -1


@kernel
def touch_state(touch: I64, out: U8) -> None:
    """Write each row's book state: 0 a side missing, 1 two-sided, 2 crossed or locked.

    ``touch`` as :func:`engine.book._kernels.l2_apply_bbo` writes it.
    """
    for k in range(touch.shape[0]):
        if touch[k, 1] > 0 and touch[k, 3] > 0:
            out[k] = 1 if touch[k, 0] < touch[k, 2] else 2
        else:
            out[k] = 0


@kernel
def trade_range(ev: Rec) -> tuple[int, int, int]:
    """Return ``(trades, lowest, highest)`` trade price of ``L2_EVENT_DTYPE`` rows, one pass."""
    m = 0
    lo = 0
    hi = 0
    for k in range(ev.shape[0]):
        if ev[k]["kind"] == L2_TRADE:
            px = ev[k]["px"]
            if m == 0 or px < lo:
                lo = px
            if m == 0 or px > hi:
                hi = px
            m += 1
    return m, lo, hi


@kernel
def l2_book_state(q: I64, st: I64, ev: Rec, out: U8) -> None:  # noqa: C901 (flat on purpose)
    """Apply checked ``L2_EVENT_DTYPE`` rows to book 0; write each row's book state to ``out``.

    The states of :func:`touch_state` (0 a side missing, 1 two-sided, 2 crossed or locked),
    without a touch per row: the market rules' pass over a whole day.
    """
    n = q.shape[2]
    b = 0
    for k in range(ev.shape[0]):
        e = ev[k]
        kind = e["kind"]
        if kind == L2_SET:
            si = BID_SIDE if e["side"] == BUY else ASK_SIDE
            v = e["qty"]
            i = e["px"] - st[b, L2S_BASE]
            if i >= 0 and i < n:
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
                l2_set(q, st, b, si, e["px"], v)
        elif kind == L2_CLEAR:
            l2_clear(q, st, b)
        st[b, L2S_TS] = e["ts"]
        ib = st[b, L2S_BID]
        ia = st[b, L2S_ASK]
        if ib < 0 or ia >= n:
            out[k] = 0
        else:
            out[k] = 1 if ib < ia else 2


@kernel
def order_px_range(ev: Rec) -> tuple[int, int, int]:
    """Return ``(rows, lowest, highest)`` price of the adds and modifies of L3 rows, one pass."""
    m = 0
    lo = 0
    hi = 0
    for k in range(ev.shape[0]):
        a = ev[k]["action"]
        if a in (L3_ADD, L3_MODIFY):
            px = ev[k]["px"]
            if m == 0 or px < lo:
                lo = px
            if m == 0 or px > hi:
                hi = px
            m += 1
    return m, lo, hi
