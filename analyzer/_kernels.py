# SPDX-License-Identifier: MIT
"""Pyramid kernels: level-0 buckets of quotes and trades straight from store rows.

One pass over the raw integer columns of a chunk computes, per bucket of ``width`` rows, the
first and last time and the minimum, maximum and sum of each pyramid column, without the
float copies of the columns the numpy path makes. Columns (in this order):

* quotes: ``bid``, ``ask``, ``spread``, ``two_sided`` (a side with ``px == 0`` and
  ``qty == 0`` is missing: NaN, ignored by min/max, 0 in sums);
* trades: ``px``, ``qty``, ``notional``, ``buy_qty``.

The last bucket may be short. ``analyzer.pyramid.PyramidBuilder.feed_buckets`` takes the
output; ``tests/unit/analyzer/test_data.py`` checks it against the numpy builder.
"""

from typing import Final

import numpy as np
import numpy.typing as npt

from engine.jit import kernel
from engine.types import BUY

I64 = npt.NDArray[np.int64]
I8 = npt.NDArray[np.int8]
F64 = npt.NDArray[np.float64]

#: Pyramid columns the kernels fill, in their output order.
QUOTE_COLUMNS: Final[tuple[str, ...]] = ("bid", "ask", "spread", "two_sided")
TRADE_COLUMNS: Final[tuple[str, ...]] = ("px", "qty", "notional", "buy_qty")


@kernel
def bucket_quotes(
    ts: I64,
    bid_px: I64,
    bid_qty: I64,
    ask_px: I64,
    ask_qty: I64,
    tick: float,
    width: int,
    t_first: I64,
    t_last: I64,
    lo: F64,
    hi: F64,
    sums: F64,
) -> None:
    """Fill ``ceil(n / width)`` buckets of quote rows (``lo``/``hi``/``sums``: ``[nb, 4]``)."""
    n = ts.shape[0]
    nb = (n + width - 1) // width
    for b in range(nb):
        i0 = b * width
        i1 = min(i0 + width, n)
        t_first[b] = ts[i0]
        t_last[b] = ts[i1 - 1]
        for c in range(4):
            lo[b, c] = np.nan
            hi[b, c] = np.nan
            sums[b, c] = 0.0
        for i in range(i0, i1):
            has_bid = bid_px[i] != 0 or bid_qty[i] != 0
            has_ask = ask_px[i] != 0 or ask_qty[i] != 0
            both = has_bid and has_ask
            values = (
                bid_px[i] * tick if has_bid else np.nan,
                ask_px[i] * tick if has_ask else np.nan,
                (ask_px[i] - bid_px[i]) * tick if both else np.nan,
                1.0 if both else 0.0,
            )
            for c in range(4):
                v = values[c]
                if v == v:  # not NaN: a missing side takes no part
                    if not v >= lo[b, c]:  # also true while lo is still NaN
                        lo[b, c] = v
                    if not v <= hi[b, c]:
                        hi[b, c] = v
                    sums[b, c] += v


@kernel
def bucket_trades(
    ts: I64,
    px: I64,
    qty: I64,
    side: I8,
    tick: float,
    lot: float,
    width: int,
    t_first: I64,
    t_last: I64,
    lo: F64,
    hi: F64,
    sums: F64,
) -> None:
    """Fill ``ceil(n / width)`` buckets of trade rows (``lo``/``hi``/``sums``: ``[nb, 4]``)."""
    n = ts.shape[0]
    nb = (n + width - 1) // width
    for b in range(nb):
        i0 = b * width
        i1 = min(i0 + width, n)
        t_first[b] = ts[i0]
        t_last[b] = ts[i1 - 1]
        for c in range(4):
            lo[b, c] = np.inf
            hi[b, c] = -np.inf
            sums[b, c] = 0.0
        for i in range(i0, i1):
            p = px[i] * tick
            q = qty[i] * lot
            values = (p, q, p * q, q if side[i] == BUY else 0.0)
            for c in range(4):
                v = values[c]
                lo[b, c] = min(lo[b, c], v)
                hi[b, c] = max(hi[b, c], v)
                sums[b, c] += v


def warm_up() -> None:
    """Compile (or load from the on-disk cache) both kernels with a few rows."""
    n = 20
    ts = np.arange(n, dtype=np.int64)
    px = np.full(n, 100, np.int64)
    side = np.ones(n, np.int8)
    tf, tl = np.empty(2, np.int64), np.empty(2, np.int64)
    lo, hi, sums = np.empty((2, 4)), np.empty((2, 4)), np.empty((2, 4))
    bucket_quotes(ts, px, px, px, px, 0.25, 16, tf, tl, lo, hi, sums)
    bucket_trades(ts, px, px, side, 0.25, 1.0, 16, tf, tl, lo, hi, sums)
