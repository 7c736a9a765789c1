# SPDX-License-Identifier: MIT
"""Book kernels: L2 (price levels, re-centring window) and L3 (market by order).

All functions assume valid input (the wrappers in ``engine.book.l2`` and ``engine.book.l3``
check it). Side codes in event arrays are ``BUY``/``SELL``; inside the arrays a side is an
index, ``BID_SIDE`` (0) or ``ASK_SIDE`` (1).

L2 layout
    ``q``: ``int64[n_books, 2, n_levels]`` level sizes in lots over a window of prices;
    ``st``: ``int64[n_books, L2_NSTATE]`` (``L2S_*`` columns: window base, best indices,
    counters).

L3 layout
    ``o``: ``int64[cap, ORDER_WIDTH]`` one packed 64-byte record per order (``OR_*`` fields);
    ``lv``: ``int64[2, n_levels, LEVEL_WIDTH]`` FIFO head/tail, size and count per level;
    ``st``: ``int64[L3_NSTATE]`` (``L3S_*``); ``free``: ``int64[cap]`` stack of free slots;
    ``keys``/``vals``: ``int64[2**k]`` open-addressing table order id -> slot (linear probing,
    backward-shift deletion, ``ID_EMPTY`` marks a free bucket).

Why one long module: both books' hot loops (``_l2_loop``, ``l3_apply``) are written flat, their
helper steps copied into the loop by hand because numba reference-counts every array passed to
a helper that loops or calls (``docs/kernels.md``, "Rules learnt while making it fast"); the
helpers stay here beside those copies, which ``tests/unit/engine/test_kernel_copies.py``
checks against each other.
"""

import numpy as np
import numpy.typing as npt

from engine.jit import kernel, kernel_inline
from engine.types import (
    ASK_SIDE,
    BID_SIDE,
    BUY,
    ID_EMPTY,
    L2_CLEAR,
    L2_SET,
    L2S_ASK,
    L2S_BASE,
    L2S_BID,
    L2S_DROPPED,
    L2S_RECENTRES,
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
    PRIO_LOSE_ON_DECREASE,
    PRIO_LOSE_ON_INCREASE,
)

I64 = npt.NDArray[np.int64]
Rec = npt.NDArray[np.void]


@kernel_inline
def side_index(side: int) -> int:
    """Map ``BUY`` (1) to ``BID_SIDE`` (0) and ``SELL`` (-1) to ``ASK_SIDE`` (1)."""
    return (1 - side) >> 1


# ==================================================================================== L2
@kernel
def l2_clear(q: I64, st: I64, b: int) -> None:
    """Empty book ``b`` (``q[b]`` zeroed, no best bid/ask); the window base is kept."""
    n = q.shape[2]
    for s in range(2):
        for i in range(n):
            q[b, s, i] = 0
    st[b, L2S_BID] = -1
    st[b, L2S_ASK] = n


@kernel
def l2_rescan(q: I64, st: I64, b: int) -> None:
    """Recompute the best bid/ask indices of book ``b`` by scanning its window."""
    n = q.shape[2]
    i = n - 1
    while i >= 0 and q[b, BID_SIDE, i] == 0:
        i -= 1
    st[b, L2S_BID] = i
    j = 0
    while j < n and q[b, ASK_SIDE, j] == 0:
        j += 1
    st[b, L2S_ASK] = j


@kernel_inline
def _l2_shift_side(q: I64, st: I64, b: int, s: int, shift: int) -> None:
    """Move side ``s`` of book ``b`` down by ``shift`` indices, counting lost levels."""
    n = q.shape[2]
    if shift >= n or shift <= -n:
        st[b, L2S_DROPPED] += np.count_nonzero(q[b, s])
        q[b, s, :] = 0
    elif shift > 0:
        for i in range(shift):
            if q[b, s, i] != 0:
                st[b, L2S_DROPPED] += 1
        for i in range(n - shift):
            q[b, s, i] = q[b, s, i + shift]
        for i in range(n - shift, n):
            q[b, s, i] = 0
    else:
        m = -shift
        for i in range(n - m, n):
            if q[b, s, i] != 0:
                st[b, L2S_DROPPED] += 1
        for i in range(n - 1, m - 1, -1):
            q[b, s, i] = q[b, s, i - m]
        for i in range(m):
            q[b, s, i] = 0


@kernel
def l2_recentre(q: I64, st: I64, b: int, new_base: int) -> None:
    """Move the window of book ``b`` so that index 0 is price ``new_base`` (ticks).

    Levels that fall outside the new window are lost and counted in ``L2S_DROPPED``.
    Mutates ``q[b]`` and ``st[b]`` in place.
    """
    shift = new_base - st[b, L2S_BASE]
    if shift == 0:
        return
    _l2_shift_side(q, st, b, BID_SIDE, shift)
    _l2_shift_side(q, st, b, ASK_SIDE, shift)
    st[b, L2S_BASE] = new_base
    st[b, L2S_RECENTRES] += 1
    l2_rescan(q, st, b)


@kernel
def _l2_outside(q: I64, st: I64, b: int, si: int, i: int) -> bool:
    """Handle an update at window index ``i`` outside the window; True if it is dropped.

    An update that would become the best of its side re-centres the window on it. (A
    separate, non-inlined kernel: it runs rarely, and keeping its loops out of the callers
    keeps their hot path free of reference counting.)
    """
    n = q.shape[2]
    deep = (i < 0 and st[b, L2S_BID] >= 0) if si == BID_SIDE else (i >= n and st[b, L2S_ASK] < n)
    if deep:
        st[b, L2S_DROPPED] += 1
        return True
    l2_recentre(q, st, b, st[b, L2S_BASE] + i - (n >> 1))
    return False


@kernel
def _l2_scan(q: I64, b: int, si: int, j: int) -> int:
    """Return the first non-empty index of side ``si`` from ``j`` away from the touch.

    Bids scan down (-1 when none is left), asks scan up (``n_levels`` when none is left).
    """
    n = q.shape[2]
    if si == BID_SIDE:
        while j >= 0 and q[b, BID_SIDE, j] == 0:
            j -= 1
    else:
        while j < n and q[b, ASK_SIDE, j] == 0:
            j += 1
    return int(j)


@kernel
def l2_set(q: I64, st: I64, b: int, si: int, px: int, v: int) -> int:
    """Set the level ``px`` (ticks) of side index ``si`` of book ``b`` to ``v`` lots.

    Returns the previous size at the level, or -1 if the update fell outside the window
    and was dropped. An update outside the window that would become the best price of its
    side (the price walked away) re-centres the window on ``px``; a deeper one is dropped.

    This is the complete version. The hot loops below repeat its in-window part inline and
    call it only for updates outside the window: with numba, loops or array-passing calls
    on every event's path (even through inlined helpers) cost reference counting, about
    2x on this kernel.
    """
    n = q.shape[2]
    i = px - st[b, L2S_BASE]
    if i < 0 or i >= n:
        if v == 0:
            return 0
        if _l2_outside(q, st, b, si, i):
            return -1
        i = px - st[b, L2S_BASE]
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
    return int(prev)


@kernel
def l2_apply(q: I64, st: I64, ev: Rec) -> int:
    """Apply a stream of ``L2_EVENT_DTYPE`` rows to the books in ``q``/``st`` (in place).

    ``L2_SET`` rows set a level, ``L2_CLEAR`` rows empty their book, ``L2_TRADE`` rows do not
    change the book. Returns the number of rows processed.
    """
    if q.shape[0] == 1:
        return _l2_apply_single(q, st, ev)
    _l2_loop(q, st, ev, np.empty((0, 4), np.int64), False)
    return int(ev.shape[0])


@kernel
def _l2_loop(q: I64, st: I64, ev: Rec, out: I64, touch: bool) -> None:  # noqa: C901
    """Apply rows of any books; with ``touch``, write each row's book touch into ``out``.

    The loop of :func:`l2_apply` and :func:`l2_apply_bbo`. The current book's window base,
    best indices and time live in locals while its rows come (written back when another
    book's row comes, around the rare calls that read them, and at the end): loads and stores
    of ``st`` on every row were a quarter of the kernel's time. A row's side picks the array
    row and, for a size > 0, the new best through selects (both candidates computed, one
    kept), not through a branch: sides come in no order a CPU can predict, and the
    mispredicted branch was half the kernel's time (2.0x the rows/s once removed).
    """
    n = q.shape[2]
    cur = -1
    base = 0
    bid = 0
    ask = 0
    ts = 0
    for k in range(ev.shape[0]):
        e = ev[k]
        b = e["book"]
        if b != cur:
            if cur >= 0:
                st[cur, L2S_BID] = bid
                st[cur, L2S_ASK] = ask
                st[cur, L2S_TS] = ts
            cur = b
            base = st[b, L2S_BASE]
            bid = st[b, L2S_BID]
            ask = st[b, L2S_ASK]
        ts = e["ts"]
        kind = e["kind"]
        if kind == L2_SET:
            v = e["qty"]
            i = e["px"] - base
            if i >= 0 and i < n:
                si = BID_SIDE if e["side"] == BUY else ASK_SIDE
                q[b, si, i] = v
                if v > 0:
                    nb = max(bid, i)
                    na = min(ask, i)
                    bid = nb if si == BID_SIDE else bid
                    ask = na if si == ASK_SIDE else ask
                elif si == BID_SIDE:
                    if i == bid:
                        bid = _l2_scan(q, b, BID_SIDE, i - 1)
                elif i == ask:
                    ask = _l2_scan(q, b, ASK_SIDE, i + 1)
            else:
                st[b, L2S_BID] = bid
                st[b, L2S_ASK] = ask
                l2_set(q, st, b, side_index(int(e["side"])), e["px"], v)
                base = st[b, L2S_BASE]
                bid = st[b, L2S_BID]
                ask = st[b, L2S_ASK]
        elif kind == L2_CLEAR:
            l2_clear(q, st, b)
            bid = st[b, L2S_BID]
            ask = st[b, L2S_ASK]
        if touch:
            out[k, 0] = base + bid if bid >= 0 else 0
            out[k, 1] = q[b, BID_SIDE, bid] if bid >= 0 else 0
            out[k, 2] = base + ask if ask < n else 0
            out[k, 3] = q[b, ASK_SIDE, ask] if ask < n else 0
    if cur >= 0:
        st[cur, L2S_BID] = bid
        st[cur, L2S_ASK] = ask
        st[cur, L2S_TS] = ts


@kernel
def _l2_apply_single(q: I64, st: I64, ev: Rec) -> int:
    """:func:`l2_apply` for one book (every row's ``book`` is 0): no book or time per row.

    The loop of one instrument's replay; the book's time is the last row's, set at the end.
    """
    n = q.shape[2]
    base = st[0, L2S_BASE]
    bid = st[0, L2S_BID]
    ask = st[0, L2S_ASK]
    for k in range(ev.shape[0]):
        e = ev[k]
        kind = e["kind"]
        if kind == L2_SET:
            v = e["qty"]
            i = e["px"] - base
            if i >= 0 and i < n:
                si = BID_SIDE if e["side"] == BUY else ASK_SIDE
                q[0, si, i] = v
                if v > 0:  # selects, not branches on the side (see _l2_loop)
                    nb = max(bid, i)
                    na = min(ask, i)
                    bid = nb if si == BID_SIDE else bid
                    ask = na if si == ASK_SIDE else ask
                elif si == BID_SIDE:
                    if i == bid:
                        bid = _l2_scan(q, 0, BID_SIDE, i - 1)
                elif i == ask:
                    ask = _l2_scan(q, 0, ASK_SIDE, i + 1)
            else:
                st[0, L2S_BID] = bid
                st[0, L2S_ASK] = ask
                l2_set(q, st, 0, side_index(int(e["side"])), e["px"], v)
                base = st[0, L2S_BASE]
                bid = st[0, L2S_BID]
                ask = st[0, L2S_ASK]
        elif kind == L2_CLEAR:
            l2_clear(q, st, 0)
            bid = st[0, L2S_BID]
            ask = st[0, L2S_ASK]
    st[0, L2S_BID] = bid
    st[0, L2S_ASK] = ask
    if ev.shape[0] > 0:
        st[0, L2S_TS] = ev[ev.shape[0] - 1]["ts"]
    return int(ev.shape[0])


@kernel
def l2_check(ev: Rec, n_books: int) -> int:
    """Return the first row of ``L2_EVENT_DTYPE`` rows that is invalid, or -1.

    Invalid: a ``book`` outside ``[0, n_books)``, an unknown ``kind``, a ``side`` other than
    ``BUY``/``SELL`` on a set or trade, or a negative ``qty``. One pass; the wrapper builds
    the error message from the row.
    """
    for k in range(ev.shape[0]):
        e = ev[k]
        b = e["book"]
        kind = e["kind"]
        sd = e["side"]
        if b < 0 or b >= n_books or kind > L2_CLEAR or e["qty"] < 0:
            return k
        if kind != L2_CLEAR and sd != 1 and sd != -1:
            return k
    return -1


@kernel
def l2_apply_bbo(q: I64, st: I64, ev: Rec, out: I64, n_books: int) -> int:
    """Check the rows, then apply like :func:`l2_apply` and record each row's book touch.

    The rows are checked first as :func:`l2_check` does, in the same call (one dispatch per
    book update instead of two): for a bad row nothing is applied and ``-1 - row`` is returned.
    ``out`` is ``int64[len(ev), 4]``: bid px, bid qty, ask px, ask qty (ticks, lots; a
    missing side is ``(0, 0)``). Returns the number of rows processed.
    """
    bad = l2_check(ev, n_books)
    if bad >= 0:
        return -1 - bad
    _l2_loop(q, st, ev, out, True)
    return int(ev.shape[0])


@kernel
def l2_apply_row(q: I64, st: I64, ev: Rec, out: I64) -> int:
    """Apply one row as :func:`l2_apply_bbo` does; return its kind, or -1 for a bad row.

    ``ev`` has one row and ``out`` is ``int64[1, 4]``; nothing is applied for a bad row. A lone
    tick's call: its caller needs nothing else from the row unless it publishes.
    """
    if l2_apply_bbo(q, st, ev, out, q.shape[0]) < 0:
        return -1
    return int(ev[0]["kind"])


@kernel
def l2_apply_one(q: I64, st: I64, px: I64, qty: I64, side: npt.NDArray[np.int8]) -> int:
    """Apply level updates for book 0 given as columns (``px``, ``qty``, ``side``).

    The fastest path for a single book (its window base and best indices in locals, as in
    :func:`l2_apply`). Returns the number of updates applied.
    """
    n = q.shape[2]
    base = st[0, L2S_BASE]
    bid = st[0, L2S_BID]
    ask = st[0, L2S_ASK]
    for k in range(px.shape[0]):
        v = qty[k]
        i = px[k] - base
        if i >= 0 and i < n:
            si = BID_SIDE if side[k] == BUY else ASK_SIDE
            q[0, si, i] = v
            if v > 0:  # selects, not branches on the side (see _l2_loop)
                nb = max(bid, i)
                na = min(ask, i)
                bid = nb if si == BID_SIDE else bid
                ask = na if si == ASK_SIDE else ask
            elif si == BID_SIDE:
                if i == bid:
                    bid = _l2_scan(q, 0, BID_SIDE, i - 1)
            elif i == ask:
                ask = _l2_scan(q, 0, ASK_SIDE, i + 1)
        else:
            st[0, L2S_BID] = bid
            st[0, L2S_ASK] = ask
            l2_set(q, st, 0, side_index(int(side[k])), px[k], v)
            base = st[0, L2S_BASE]
            bid = st[0, L2S_BID]
            ask = st[0, L2S_ASK]
    st[0, L2S_BID] = bid
    st[0, L2S_ASK] = ask
    return int(px.shape[0])


@kernel
def l2_snapshot(q: I64, st: I64, b: int, side: npt.NDArray[np.int8], px: I64, qty: I64) -> int:
    """Replace book ``b`` by a snapshot given as columns; returns the levels kept.

    The window is centred on the snapshot's mid price (or its only side); levels outside it
    are dropped and counted. Rows with ``qty <= 0`` are ignored.
    """
    n = q.shape[2]
    l2_clear(q, st, b)
    have_b = False
    have_a = False
    bb = np.int64(0)
    ba = np.int64(0)
    for k in range(px.shape[0]):
        if qty[k] <= 0:
            continue
        if side[k] > 0:
            if not have_b or px[k] > bb:
                bb = px[k]
                have_b = True
        elif not have_a or px[k] < ba:
            ba = px[k]
            have_a = True
    if have_b and have_a:
        centre = (bb + ba) >> 1
    elif have_b:
        centre = bb
    elif have_a:
        centre = ba
    else:
        return 0
    st[b, L2S_BASE] = centre - (n >> 1)
    kept = 0
    for k in range(px.shape[0]):
        if qty[k] <= 0:
            continue
        i = px[k] - st[b, L2S_BASE]
        if i < 0 or i >= n:
            st[b, L2S_DROPPED] += 1
            continue
        q[b, side_index(int(side[k])), i] = qty[k]
        kept += 1
    l2_rescan(q, st, b)
    return kept


@kernel
def l2_top(q: I64, st: I64, b: int, depth: int, out: I64) -> int:
    """Write the best ``depth`` levels of book ``b`` into ``out`` (``int64[2, depth, 2]``).

    ``out[s, k] = (px_ticks, qty_lots)`` for side index ``s`` (0 bids from the best down, 1
    asks from the best up); unused rows are ``(0, 0)``. Returns the larger row count.
    """
    n = q.shape[2]
    base = st[b, L2S_BASE]
    for s in range(2):
        for k in range(depth):
            out[s, k, 0] = 0
            out[s, k, 1] = 0
    nb = 0
    i = st[b, L2S_BID]
    while i >= 0 and nb < depth:
        if q[b, BID_SIDE, i] != 0:
            out[BID_SIDE, nb, 0] = base + i
            out[BID_SIDE, nb, 1] = q[b, BID_SIDE, i]
            nb += 1
        i -= 1
    na = 0
    j = st[b, L2S_ASK]
    while j < n and na < depth:
        if q[b, ASK_SIDE, j] != 0:
            out[ASK_SIDE, na, 0] = base + j
            out[ASK_SIDE, na, 1] = q[b, ASK_SIDE, j]
            na += 1
        j += 1
    return max(nb, na)


# ============================================================================= id table
@kernel_inline
def ht_home(key: int, mask: int) -> int:
    """Home bucket of ``key``: xor-folded high bits, masked (no overflowing multiply)."""
    return (key ^ (key >> 17) ^ (key >> 31) ^ (key >> 47)) & mask


@kernel_inline
def ht_find(keys: I64, key: int) -> int:
    """Bucket holding ``key``, or -1."""
    mask = keys.shape[0] - 1
    i = ht_home(key, mask)
    while True:
        k = keys[i]
        if k == key:
            return i
        if k == ID_EMPTY:
            return -1
        i = (i + 1) & mask


@kernel_inline
def ht_insert(keys: I64, vals: I64, key: int, val: int) -> None:
    """Insert ``key -> val``; ``key`` must not be present and the table not full."""
    mask = keys.shape[0] - 1
    i = ht_home(key, mask)
    while keys[i] != ID_EMPTY:
        i = (i + 1) & mask
    keys[i] = key
    vals[i] = val


@kernel_inline
def ht_delete_at(keys: I64, vals: I64, i: int) -> None:
    """Delete the entry in bucket ``i`` by shifting later entries of its cluster back."""
    mask = keys.shape[0] - 1
    j = i
    while True:
        j = (j + 1) & mask
        k = keys[j]
        if k == ID_EMPTY:
            break
        h = ht_home(k, mask)
        # k may move into the hole at i unless its home lies cyclically in (i, j]
        stay = (i < h and h <= j) if i <= j else (h > i or h <= j)
        if not stay:
            keys[i] = k
            vals[i] = vals[j]
            i = j
    keys[i] = ID_EMPTY


@kernel
def ht_rebuild(keys: I64, vals: I64, old_keys: I64, old_vals: I64) -> None:
    """Insert every ``old_keys[i] -> old_vals[i]`` into the (empty, larger) table."""
    for i in range(old_keys.shape[0]):
        ht_insert(keys, vals, old_keys[i], old_vals[i])


# ==================================================================================== L3
@kernel_inline
def l3_link(o: I64, lv: I64, st: I64, slot: int) -> None:
    """Append the order in ``slot`` (fields set) at the tail of its level; update the best."""
    si = o[slot, OR_SIDE]
    i = o[slot, OR_PX]
    tail = lv[si, i, LV_TAIL]
    o[slot, OR_PREV] = tail
    o[slot, OR_NEXT] = -1
    if tail >= 0:
        o[tail, OR_NEXT] = slot
    else:
        lv[si, i, LV_HEAD] = slot
    lv[si, i, LV_TAIL] = slot
    lv[si, i, LV_QTY] += o[slot, OR_QTY]
    lv[si, i, LV_CNT] += 1
    st[L3S_SEQ] += 1
    o[slot, OR_SEQ] = st[L3S_SEQ]
    if si == BID_SIDE:
        if i > st[L3S_BID]:
            st[L3S_BID] = i
    elif i < st[L3S_ASK]:
        st[L3S_ASK] = i


@kernel_inline
def l3_unlink(o: I64, lv: I64, st: I64, slot: int) -> None:
    """Take the order in ``slot`` out of its level FIFO; update the level and the best.

    The record keeps its fields (the caller frees or relinks the slot).
    """
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
    if lv[si, i, LV_CNT] == 0:
        if si == BID_SIDE:
            if i == st[L3S_BID]:
                j = i - 1
                while j >= 0 and lv[BID_SIDE, j, LV_CNT] == 0:
                    j -= 1
                st[L3S_BID] = j
        elif i == st[L3S_ASK]:
            n = lv.shape[1]
            j = i + 1
            while j < n and lv[ASK_SIDE, j, LV_CNT] == 0:
                j += 1
            st[L3S_ASK] = j


@kernel_inline
def l3_new_order(
    o: I64,
    lv: I64,
    st: I64,
    keys: I64,
    vals: I64,
    free: I64,
    oid: int,
    si: int,
    idx: int,
    qty: int,
    owner: int,
) -> int:
    """Take a free slot, fill it and link it at the tail of level ``idx``; return the slot."""
    st[L3S_FREE] -= 1
    slot = free[st[L3S_FREE]]
    o[slot, OR_PX] = idx
    o[slot, OR_QTY] = qty
    o[slot, OR_SIDE] = si
    o[slot, OR_ID] = oid
    o[slot, OR_OWNER] = owner
    ht_insert(keys, vals, oid, slot)
    l3_link(o, lv, st, slot)
    st[L3S_NORDERS] += 1
    return int(slot)


@kernel_inline
def l3_remove(
    o: I64, lv: I64, st: I64, keys: I64, vals: I64, free: I64, bucket: int, slot: int
) -> None:
    """Remove the order in ``slot`` (found in id-table ``bucket``) and free its slot."""
    l3_unlink(o, lv, st, slot)
    o[slot, OR_QTY] = 0
    ht_delete_at(keys, vals, bucket)
    free[st[L3S_FREE]] = slot
    st[L3S_FREE] += 1
    st[L3S_NORDERS] -= 1


@kernel_inline
def l3_reduce(
    o: I64, lv: I64, st: I64, keys: I64, vals: I64, free: I64, bucket: int, slot: int, by: int
) -> int:
    """Reduce the order in ``slot`` by ``by`` lots (keeps priority); return its leaves."""
    left = o[slot, OR_QTY] - by
    if left <= 0:
        l3_remove(o, lv, st, keys, vals, free, bucket, slot)
        return 0
    o[slot, OR_QTY] = left
    lv[o[slot, OR_SIDE], o[slot, OR_PX], LV_QTY] -= by
    return int(left)


@kernel_inline
def l3_modify(o: I64, lv: I64, st: I64, slot: int, idx: int, qty: int) -> None:
    """Give the order in ``slot`` price index ``idx`` and size ``qty`` (> 0).

    Whether it keeps its place in the queue follows the ``PRIO_*`` policy in ``st``.
    """
    pol = st[L3S_POLICY]
    old_idx = o[slot, OR_PX]
    old_qty = o[slot, OR_QTY]
    requeue = False
    if idx != old_idx:
        requeue = True  # a new price is a new level: PRIO_LOSE_ON_PRICE always holds
    elif qty > old_qty:
        requeue = (pol & PRIO_LOSE_ON_INCREASE) != 0
    elif qty < old_qty:
        requeue = (pol & PRIO_LOSE_ON_DECREASE) != 0
    if requeue:
        l3_unlink(o, lv, st, slot)
        o[slot, OR_PX] = idx
        o[slot, OR_QTY] = qty
        l3_link(o, lv, st, slot)
    else:
        lv[o[slot, OR_SIDE], old_idx, LV_QTY] += qty - old_qty
        o[slot, OR_QTY] = qty


@kernel
def l3_clear(o: I64, lv: I64, st: I64, keys: I64, vals: I64, free: I64) -> None:
    """Empty the book (all orders removed, slots and id table reset); counters are kept."""
    n = lv.shape[1]
    cap = o.shape[0]
    for s in range(2):
        for i in range(n):
            lv[s, i, LV_HEAD] = -1
            lv[s, i, LV_TAIL] = -1
            lv[s, i, LV_QTY] = 0
            lv[s, i, LV_CNT] = 0
    for k in range(keys.shape[0]):
        keys[k] = ID_EMPTY
    for k in range(cap):
        o[k, OR_QTY] = 0
        free[k] = cap - 1 - k
    st[L3S_FREE] = cap
    st[L3S_NORDERS] = 0
    st[L3S_BID] = -1
    st[L3S_ASK] = n


@kernel_inline
def l3_apply_event(
    o: I64,
    lv: I64,
    st: I64,
    keys: I64,
    vals: I64,
    free: I64,
    action: int,
    oid: int,
    side: int,
    px: int,
    qty: int,
) -> int:
    """Apply one market-by-order event; return the slot it touched or -1.

    Unknown ids (modify, cancel, execute) and duplicate adds are counted in ``st`` and
    otherwise ignored; execute and cancel remove the order when it has nothing left.
    """
    if action == L3_ADD:
        if ht_find(keys, oid) >= 0:
            st[L3S_DUPLICATE] += 1
            return -1
        return l3_new_order(
            o, lv, st, keys, vals, free, oid, side_index(side), px - st[L3S_BASE], qty, -1
        )
    if action == L3_CLEAR:
        l3_clear(o, lv, st, keys, vals, free)
        return -1
    bucket = ht_find(keys, oid)
    if bucket < 0:
        st[L3S_UNKNOWN] += 1
        return -1
    slot = vals[bucket]
    if action == L3_MODIFY:
        if qty <= 0:
            l3_remove(o, lv, st, keys, vals, free, bucket, slot)
        else:
            l3_modify(o, lv, st, slot, px - st[L3S_BASE], qty)
    elif action == L3_CANCEL:
        if qty <= 0:
            l3_remove(o, lv, st, keys, vals, free, bucket, slot)
        else:
            l3_reduce(o, lv, st, keys, vals, free, bucket, slot, qty)
    elif action == L3_EXECUTE:
        l3_reduce(o, lv, st, keys, vals, free, bucket, slot, qty)
    return int(slot)


@kernel
def l3_apply_slow(
    o: I64,
    lv: I64,
    st: I64,
    keys: I64,
    vals: I64,
    free: I64,
    action: int,
    oid: int,
    side: int,
    px: int,
    qty: int,
) -> int:
    """Out-of-line :func:`l3_apply_event`, for the rarer actions of the flat loops."""
    return l3_apply_event(o, lv, st, keys, vals, free, action, oid, side, px, qty)


@kernel
def l3_scan_best(lv: I64, st: I64, si: int, i: int) -> None:
    """Find the new best of side ``si`` after its level ``i`` (the best) emptied."""
    n = lv.shape[1]
    if si == BID_SIDE:
        j = i - 1
        while j >= 0 and lv[BID_SIDE, j, LV_CNT] == 0:
            j -= 1
        st[L3S_BID] = j
    else:
        j = i + 1
        while j < n and lv[ASK_SIDE, j, LV_CNT] == 0:
            j += 1
        st[L3S_ASK] = j


@kernel
def l3_apply(o: I64, lv: I64, st: I64, keys: I64, vals: I64, free: I64, ev: Rec) -> int:  # noqa: C901
    """Apply a stream of ``L3_EVENT_DTYPE`` rows to the book (all arrays mutated in place).

    Returns the number of rows processed: fewer than ``len(ev)`` when an add finds no free
    slot (the wrapper grows the arrays and resumes). Prices must lie inside the level
    window (the wrapper checks).

    Adds, cancels and executions run flat in this loop (the same steps as
    :func:`l3_apply_event`): with numba, helpers that loop or call on every event's path cost
    reference counting of every array they take, about 3x here. Modifications and clears go
    through :func:`l3_apply_slow`.
    """
    mask = keys.shape[0] - 1
    base = st[L3S_BASE]
    for k in range(ev.shape[0]):
        e = ev[k]
        action = e["action"]
        oid = e["order_id"]
        if action == L3_ADD and st[L3S_FREE] == 0:
            return k  # full: the wrapper grows the arrays and resumes here (time unchanged)
        st[L3S_TS] = e["ts"]
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
        elif action == L3_CANCEL or action == L3_EXECUTE:  # noqa: SIM109 (numba)
            h = (oid ^ (oid >> 17) ^ (oid >> 31) ^ (oid >> 47)) & mask
            while keys[h] != oid and keys[h] != ID_EMPTY:
                h = (h + 1) & mask
            if keys[h] != oid:
                st[L3S_UNKNOWN] += 1
                continue
            slot = vals[h]
            q = e["qty"]
            si = o[slot, OR_SIDE]
            i = o[slot, OR_PX]
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
            # backward-shift delete of bucket h
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
        else:
            l3_apply_slow(
                o, lv, st, keys, vals, free, int(action), oid, int(e["side"]), e["px"], e["qty"]
            )
    return int(ev.shape[0])


@kernel
def l3_apply_bbo(
    o: I64, lv: I64, st: I64, keys: I64, vals: I64, free: I64, ev: Rec, out: I64
) -> int:
    """Apply like :func:`l3_apply` and record the touch after each row.

    ``out`` is ``int64[len(ev), 4]``: bid px, bid qty, ask px, ask qty (ticks, lots; a
    missing side is ``(0, 0)``). Returns the number of rows processed.
    """
    n = lv.shape[1]
    for k in range(ev.shape[0]):
        e = ev[k]
        if e["action"] == L3_ADD and st[L3S_FREE] == 0:
            return k  # full: the wrapper grows the arrays and resumes here
        l3_apply_event(
            o,
            lv,
            st,
            keys,
            vals,
            free,
            int(e["action"]),
            e["order_id"],
            int(e["side"]),
            e["px"],
            e["qty"],
        )
        st[L3S_TS] = e["ts"]
        base = st[L3S_BASE]
        i = st[L3S_BID]
        j = st[L3S_ASK]
        out[k, 0] = base + i if i >= 0 else 0
        out[k, 1] = lv[BID_SIDE, i, LV_QTY] if i >= 0 else 0
        out[k, 2] = base + j if j < n else 0
        out[k, 3] = lv[ASK_SIDE, j, LV_QTY] if j < n else 0
    return int(ev.shape[0])


@kernel
def l3_check(ev: Rec, px_lo: int, px_hi: int) -> int:
    """Return the first row of ``L3_EVENT_DTYPE`` rows that is invalid, or -1.

    Invalid: an unknown ``action``; the reserved ``order_id`` ``ID_EMPTY``; on an add, a
    ``side`` other than ``BUY``/``SELL`` or a ``qty <= 0``; on an add or modify, a price
    outside ``[px_lo, px_hi)``; on an execute, a ``qty <= 0``.
    """
    for k in range(ev.shape[0]):
        e = ev[k]
        a = e["action"]
        if a < L3_ADD or a > L3_CLEAR or e["order_id"] == ID_EMPTY:
            return k
        if a == L3_ADD or a == L3_MODIFY:  # noqa: SIM109 (numba)
            if e["px"] < px_lo or e["px"] >= px_hi:
                return k
            if a == L3_ADD and ((e["side"] != 1 and e["side"] != -1) or e["qty"] <= 0):
                return k
        elif a == L3_EXECUTE and e["qty"] <= 0:
            return k
    return -1


@kernel
def l3_level_orders(o: I64, lv: I64, si: int, idx: int, out: I64) -> int:
    """Write ``(order_id, qty, owner)`` of the orders at a level, FIFO order, into ``out``.

    ``out`` is ``int64[m, 3]``; returns how many orders the level holds (rows written are
    capped at ``m``).
    """
    slot = lv[si, idx, LV_HEAD]
    k = 0
    while slot >= 0:
        if k < out.shape[0]:
            out[k, 0] = o[slot, OR_ID]
            out[k, 1] = o[slot, OR_QTY]
            out[k, 2] = o[slot, OR_OWNER]
        k += 1
        slot = o[slot, OR_NEXT]
    return k


@kernel
def l3_qty_ahead(o: I64, lv: I64, si: int, idx: int, seq: int) -> int:
    """Lots resting at a level ahead of sequence number ``seq`` (exact FIFO position)."""
    slot = lv[si, idx, LV_HEAD]
    ahead = 0
    while slot >= 0 and o[slot, OR_SEQ] < seq:
        ahead += o[slot, OR_QTY]
        slot = o[slot, OR_NEXT]
    return ahead


@kernel
def l3_lookup(keys: I64, vals: I64, oid: int) -> int:
    """Slot of order ``oid`` or -1."""
    b = ht_find(keys, oid)
    if b < 0:
        return -1
    return int(vals[b])
