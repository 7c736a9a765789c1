# SPDX-License-Identifier: MIT
"""Position and P&L kernels: average-cost accounting over fill arrays.

``pos`` is a ``POSITION_DTYPE[n_strategies, n_instruments]`` array mutated in place; fills
are ``FILL_DTYPE`` rows; ``tick_value`` is ``float64[n_instruments]``, the quote-currency
value of one tick on one lot. The cost basis is kept in ticks*lots (``avg_px * qty``), so
realized P&L = closed lots * (exit - average) * tick_value.
"""

import numpy as np
import numpy.typing as npt

from engine.jit import kernel, kernel_inline

F64 = npt.NDArray[np.float64]
Rec = npt.NDArray[np.void]


@kernel_inline
def book_fill(
    pos: Rec, s: int, i: int, side: int, px: int, qty: int, fee: float, ts: int, tv: float
) -> None:
    """Book one fill into ``pos[s, i]`` (average cost; a reversal opens at the fill price)."""
    p = pos[s, i]
    q0 = p["qty"]
    c0 = p["cost"]
    dq = side * qty
    if q0 == 0 or (q0 > 0) == (dq > 0):
        p["qty"] = q0 + dq
        p["cost"] = c0 + dq * px
    else:
        close = min(qty, abs(q0))
        avg = c0 / q0
        sgn = 1 if q0 > 0 else -1
        p["realized"] += sgn * close * (px - avg) * tv
        q1 = q0 + dq
        if q1 == 0:
            p["cost"] = 0.0
        elif (q1 > 0) == (q0 > 0):
            p["cost"] = avg * q1
        else:
            p["cost"] = float(q1 * px)
        p["qty"] = q1
    p["fees"] += fee
    p["volume"] += qty
    p["n_fills"] += 1
    p["last_ts"] = ts


@kernel
def apply_fills(pos: Rec, fills: Rec, tick_value: F64) -> int:
    """Book ``FILL_DTYPE`` rows in order into ``pos`` (in place); return the count."""
    for k in range(fills.shape[0]):
        f = fills[k]
        ins = f["instrument"]
        book_fill(
            pos,
            f["strategy"],
            ins,
            int(f["side"]),
            f["px"],
            f["qty"],
            f["fee"],
            f["ts"],
            tick_value[ins],
        )
    return int(fills.shape[0])


@kernel
def apply_fill(
    pos: Rec, s: int, i: int, side: int, px: int, qty: int, fee: float, ts: int, tv: float
) -> None:
    """Book a single fill (the incremental path; same arithmetic as :func:`apply_fills`)."""
    book_fill(pos, s, i, side, px, qty, fee, ts, tv)


@kernel
def unrealized(pos: Rec, marks: F64, tick_value: F64, out: F64) -> float:
    """Write mark-to-market P&L per (strategy, instrument) into ``out``; return the total.

    ``marks`` holds one price per instrument in ticks (float: a mid may be half a tick);
    ``out`` is ``float64[n_strategies, n_instruments]``.
    """
    total = 0.0
    for s in range(pos.shape[0]):
        for i in range(pos.shape[1]):
            p = pos[s, i]
            u = (marks[i] * p["qty"] - p["cost"]) * tick_value[i]
            out[s, i] = u
            total += u
    return total
