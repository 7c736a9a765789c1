# SPDX-License-Identifier: MIT
# numba supports only the legacy np.random API; the baselines are deliberately one flat loop.
# ruff: noqa: NPY002, C901
"""Synthetic streams and naive baselines for ``bench_kernels`` (benchmark scaffolding).

The generator keeps a consistent market-by-order book (adds near the touch, random cancels,
executions at the touch) and writes the L3 stream plus the L2 stream it implies (a trade
row before the level change of each execution). The baselines are the straightforward
numba kernels ``peers.md`` measured (dense arrays, dense order ids), re-run in the same
process for same-run ratios.
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt
from llvmlite import ir as llvmir
from numba.core import cgutils
from numba.extending import intrinsic

from engine.book._kernels import ht_find, l3_new_order, l3_reduce, l3_remove
from engine.jit import kernel
from engine.matching._kernels import match_flat
from engine.types import (
    BUY,
    L2_SET,
    L2_TRADE,
    L3_ADD,
    L3_CANCEL,
    L3_EXECUTE,
    L3S_ASK,
    L3S_BID,
    LV_HEAD,
    LV_QTY,
    OR_OWNER,
    OR_PX,
    OR_QTY,
    OR_SIDE,
    SELL,
)

I64 = npt.NDArray[np.int64]
Rec = npt.NDArray[np.void]

KEY_MUL = 0x9E3779B1  # scrambles dense ids into sparse 64-bit-looking exchange ids
KEY_XOR = 0x5DEECE66D


@kernel
def generate(
    n: int,
    seed: int,
    target_live: int,
    p_exec: float,
    mean_gap_ns: float,
    o: I64,
    lv: I64,
    st: I64,
    keys: I64,
    vals: I64,
    free: I64,
    l3: Rec,
    l2: Rec,
) -> int:
    """Fill ``l3`` (n rows) and ``l2`` (n + executions rows); return the L2 row count.

    The book arrays must be empty, with capacity for every live order and levels around the
    middle of the window. Order ids are ``dense * KEY_MUL ^ KEY_XOR``.
    """
    np.random.seed(seed)
    nt = lv.shape[1]
    pool = np.empty(n, np.int64)
    pos = np.full(n, -1, np.int64)
    npool = 0
    nxt = 0
    m = 0
    ts = np.int64(1_700_000_000_000_000_000)
    mid = nt // 2
    for i in range(n):
        ts += 1 + np.int64(np.random.exponential(mean_gap_ns))
        r = np.random.random()
        both = st[L3S_BID] >= 0 and st[L3S_ASK] < nt
        p_cancel = min(0.5 * npool / target_live, 0.9)
        if both:
            mid = (st[L3S_BID] + st[L3S_ASK]) // 2
        if r < p_exec and both:
            si = 0 if np.random.random() < 0.5 else 1
            idx = st[L3S_BID] if si == 0 else st[L3S_ASK]
            slot = lv[si, idx, LV_HEAD]
            dense = o[slot, OR_OWNER]  # the generator keeps the dense id in the owner field
            key = dense * KEY_MUL ^ KEY_XOR
            q = min(o[slot, OR_QTY], np.random.geometric(0.2))
            b = ht_find(keys, key)
            left = l3_reduce(o, lv, st, keys, vals, free, b, slot, q)
            if left == 0:
                j = pos[dense]
                last = pool[npool - 1]
                pool[j] = last
                pos[last] = j
                npool -= 1
            action = L3_EXECUTE
            sd = BUY if si == 0 else SELL
            px = idx
            t = l2[m]
            t["ts"] = ts
            t["px"] = px
            t["qty"] = q
            t["side"] = -sd  # the aggressor hits the resting side
            t["kind"] = L2_TRADE
            m += 1
        elif r < p_exec + p_cancel and npool > 0:
            j = np.random.randint(npool)
            dense = pool[j]
            key = dense * KEY_MUL ^ KEY_XOR
            b = ht_find(keys, key)
            slot = vals[b]
            si = o[slot, OR_SIDE]
            px = o[slot, OR_PX]
            q = o[slot, OR_QTY]
            l3_remove(o, lv, st, keys, vals, free, b, slot)
            last = pool[npool - 1]
            pool[j] = last
            pos[last] = j
            npool -= 1
            action = L3_CANCEL
            sd = BUY if si == 0 else SELL
            q = 0
        else:
            si = 0 if np.random.random() < 0.5 else 1
            d = np.random.geometric(0.15) - 1
            if si == 0:
                ref = st[L3S_ASK] if st[L3S_ASK] < nt else mid + 1
                px = ref - 1 - d
            else:
                ref = st[L3S_BID] if st[L3S_BID] >= 0 else mid - 1
                px = ref + 1 + d
            px = min(max(px, 1), nt - 2)
            q = np.random.geometric(0.1)
            dense = nxt
            nxt += 1
            key = dense * KEY_MUL ^ KEY_XOR
            slot = l3_new_order(o, lv, st, keys, vals, free, key, si, px, q, dense)
            pool[npool] = dense
            pos[dense] = npool
            npool += 1
            action = L3_ADD
            sd = BUY if si == 0 else SELL
        e = l3[i]
        e["ts"] = ts
        e["order_id"] = dense * KEY_MUL ^ KEY_XOR
        e["px"] = px
        e["qty"] = q
        e["side"] = sd
        e["action"] = action
        t = l2[m]
        t["ts"] = ts
        t["px"] = px
        t["qty"] = lv[si, px, LV_QTY]
        t["side"] = sd
        t["kind"] = L2_SET
        m += 1
    return m


# ------------------------------------------------------------------------ naive baselines
@kernel
def naive_l2(
    side: npt.NDArray[np.int8],
    pxs: I64,
    qtys: I64,
    kinds: npt.NDArray[np.uint8],
    qty: I64,
    bbo: I64,
) -> int:
    """Dense two-sided level array, no window, no validation (the peers.md L2 baseline)."""
    nt = qty.shape[1]
    acc = 0
    for i in range(pxs.shape[0]):
        if kinds[i] != L2_SET:
            continue
        s = 0 if side[i] == BUY else 1
        px = pxs[i]
        q = qtys[i]
        qty[s, px] = q
        if q > 0:
            if s == 0:
                bbo[0] = max(bbo[0], px)
            elif px < bbo[1]:
                bbo[1] = px
        elif s == 0:
            if px == bbo[0]:
                p = px - 1
                while p >= 0 and qty[0, p] == 0:
                    p -= 1
                bbo[0] = p
        elif px == bbo[1]:
            p = px + 1
            while p < nt and qty[1, p] == 0:
                p += 1
            bbo[1] = p
        acc += bbo[1] - bbo[0]
    return acc


@kernel
def naive_l2_records(ev: Rec, qty: I64, bbo: I64) -> int:
    """:func:`naive_l2` reading the engine's ``L2_EVENT_DTYPE`` rows themselves (one book)."""
    nt = qty.shape[1]
    acc = 0
    for i in range(ev.shape[0]):
        e = ev[i]
        if e["kind"] != L2_SET:
            continue
        s = 0 if e["side"] == BUY else 1
        px = e["px"]
        q = e["qty"]
        qty[s, px] = q
        if q > 0:
            if s == 0:
                bbo[0] = max(bbo[0], px)
            elif px < bbo[1]:
                bbo[1] = px
        elif s == 0:
            if px == bbo[0]:
                p = px - 1
                while p >= 0 and qty[0, p] == 0:
                    p -= 1
                bbo[0] = p
        elif px == bbo[1]:
            p = px + 1
            while p < nt and qty[1, p] == 0:
                p += 1
            bbo[1] = p
        acc += bbo[1] - bbo[0]
    return acc


@kernel
def naive_l3(ev: Rec, dense_of: I64, o: I64, lv: I64, bbo: I64) -> int:
    """32-byte records ``[px*2+side, qty, prev, next]`` over dense ids (the peers.md L3 baseline).

    ``dense_of`` maps each row to a dense id (precomputed: the baseline gets ids for free).
    """
    nt = lv.shape[1]
    acc = 0
    for i in range(ev.shape[0]):
        e = ev[i]
        oid = dense_of[i]
        a = e["action"]
        if a == L3_ADD:
            side = 0 if e["side"] == BUY else 1
            px = e["px"]
            tail = lv[side, px, 1]
            o[oid, 0] = px * 2 + side
            o[oid, 1] = e["qty"]
            o[oid, 2] = tail
            o[oid, 3] = -1
            if tail >= 0:
                o[tail, 3] = oid
            else:
                lv[side, px, 0] = oid
            lv[side, px, 1] = oid
            lv[side, px, 2] += e["qty"]
            lv[side, px, 3] += 1
            if side == 0:
                if px > bbo[0]:
                    bbo[0] = px
            elif px < bbo[1]:
                bbo[1] = px
        else:
            q = o[oid, 1] if a == L3_CANCEL else e["qty"]
            ps = o[oid, 0]
            px = ps >> 1
            side = ps & 1
            if q < o[oid, 1]:
                o[oid, 1] -= q
                lv[side, px, 2] -= q
            else:
                prv = o[oid, 2]
                nx = o[oid, 3]
                if prv >= 0:
                    o[prv, 3] = nx
                else:
                    lv[side, px, 0] = nx
                if nx >= 0:
                    o[nx, 2] = prv
                else:
                    lv[side, px, 1] = prv
                lv[side, px, 2] -= o[oid, 1]
                o[oid, 1] = 0
                lv[side, px, 3] -= 1
                if lv[side, px, 3] == 0:
                    if side == 0 and px == bbo[0]:
                        p = px - 1
                        while p >= 0 and lv[0, p, 3] == 0:
                            p -= 1
                        bbo[0] = p
                    elif side == 1 and px == bbo[1]:
                        p = px + 1
                        while p < nt and lv[1, p, 3] == 0:
                            p += 1
                        bbo[1] = p
        acc += bbo[1] - bbo[0]
    return acc


@kernel
def touch_at(l2: Rec, times: I64, nt: int, out: I64) -> None:
    """Best bid/ask index (``out[k] = bid, ask``) of a single L2 stream at each of ``times``."""
    qty = np.zeros((2, nt), np.int64)
    bb = -1
    ba = nt
    k = 0
    for i in range(l2.shape[0]):
        e = l2[i]
        while k < times.shape[0] and times[k] < e["ts"]:
            out[k, 0] = bb
            out[k, 1] = ba
            k += 1
        if e["kind"] != L2_SET:
            continue
        s = 0 if e["side"] == BUY else 1
        px = e["px"]
        qty[s, px] = e["qty"]
        if s == 0:
            if e["qty"] > 0:
                bb = max(bb, px)
            elif px == bb:
                while bb >= 0 and qty[0, bb] == 0:
                    bb -= 1
        else:
            if e["qty"] > 0:
                ba = min(ba, px)
            elif px == ba:
                while ba < nt and qty[1, ba] == 0:
                    ba += 1
    while k < times.shape[0]:
        out[k, 0] = bb
        out[k, 1] = ba
        k += 1


# ------------------------------------------------------------------- per-order timing
@intrinsic
def _rdtsc(typingctx):  # type: ignore[no-untyped-def]
    """The CPU's time-stamp counter (``llvm.readcyclecounter``): cycles, a few ns to read."""

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        fnty = llvmir.FunctionType(llvmir.IntType(64), [])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.readcyclecounter")
        return builder.call(fn, [])

    return numba.types.uint64(), codegen


@numba.njit(cache=True)
def cycles_per_ns_probe(spin: int) -> tuple[int, int]:
    """Return (cycles, loop result) of a busy loop: timed against ``perf_counter`` outside."""
    t0 = _rdtsc()
    acc = 0
    for i in range(spin):
        acc = (acc * 31 + i) & 0xFFFF
    return int(_rdtsc() - t0), acc


@numba.njit(cache=True)
def match_each(
    o: I64,
    lv: I64,
    st: I64,
    keys: I64,
    vals: I64,
    free: I64,
    cmds: Rec,
    out: Rec,
    stp: int,
    cycles: I64,
    empty: I64,
) -> int:
    """Run ``cmds`` through ``match_flat`` one command per call, timing each call (cycles).

    ``match_flat`` is the matcher's loop itself (``match_batch`` runs it and takes the
    general kinds of command out of line; these commands are all of its kind). ``empty[c]``
    times the same call with no command (the call's own cost: its arguments), measured right
    after, so the matching work of command ``c`` is ``cycles[c] - empty[c]``. Stops at the
    first command that finds no free order slot.
    """
    for c in range(cmds.shape[0]):
        t0 = _rdtsc()
        done, _m = match_flat(o, lv, st, keys, vals, free, cmds[c : c + 1], 0, out, 0, stp)
        t1 = _rdtsc()
        _d, _m2 = match_flat(o, lv, st, keys, vals, free, cmds[c:c], 0, out, 0, stp)
        t2 = _rdtsc()
        if done == 0:
            return c
        cycles[c] = t1 - t0
        empty[c] = t2 - t1
    return int(cmds.shape[0])
