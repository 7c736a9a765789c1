# SPDX-License-Identifier: MIT
"""Synthetic tick days (quotes and trades on a random walk) for tests, benchmarks and demos.

:func:`synthetic_day` yields a day in chunks of store rows (``BBO_DTYPE``, ``TRADE_DTYPE``), so
that a 100M-row day can be written to a tick store without being in memory at once. The
series is reproducible from ``seed``.
"""

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from engine.tickstore.schema import BBO_DTYPE, TRADE_DTYPE
from engine.types import BUY, SELL

NS = 1_000_000_000


@dataclass(frozen=True, slots=True)
class SyntheticSpec:
    """What to generate: rows, time span, start price (ticks), trade share, an optional gap."""

    quotes: int
    start_ns: int
    span_ns: int = 8 * 3600 * NS
    px0: int = 400_000
    trade_every: int = 8  # about one trade per this many quotes
    gap: tuple[float, float] | None = None  # fractions of the span without data
    seed: int = 1


def synthetic_day(
    spec: SyntheticSpec, chunk: int = 1 << 21
) -> Iterator[tuple[npt.NDArray[np.void], npt.NDArray[np.void]]]:
    """Yield ``(bbo_rows, trade_rows)`` chunks of a synthetic day, in time order."""
    rng = np.random.default_rng(spec.seed)
    step_ns = spec.span_ns / max(spec.quotes, 1)
    mid = spec.px0
    for i0 in range(0, spec.quotes, chunk):
        n = min(chunk, spec.quotes - i0)
        idx = np.arange(i0, i0 + n, dtype=np.float64)
        ts = spec.start_ns + (idx * step_ns).astype(np.int64)
        if spec.gap is not None:
            g0 = spec.start_ns + int(spec.gap[0] * spec.span_ns)
            g1 = spec.start_ns + int(spec.gap[1] * spec.span_ns)
            ts = ts[(ts < g0) | (ts >= g1)]
            n = ts.shape[0]
        moves = rng.integers(-1, 2, n, dtype=np.int64) * (rng.random(n) < 0.2)
        mids = mid + np.cumsum(moves)
        mid = int(mids[-1]) if n else mid
        spread = 1 + (rng.random(n) < 0.15)
        bbo = np.zeros(n, dtype=BBO_DTYPE)
        bbo["ts"] = ts
        bbo["ts_recv"] = ts + 20_000
        bbo["bid_px"] = mids
        bbo["ask_px"] = mids + spread
        bbo["bid_qty"] = rng.integers(1, 60, n)
        bbo["ask_qty"] = rng.integers(1, 60, n)
        pick = np.flatnonzero(rng.random(n) < 1.0 / spec.trade_every)
        trades = np.zeros(pick.shape[0], dtype=TRADE_DTYPE)
        side = np.where(rng.random(pick.shape[0]) < 0.5, BUY, SELL).astype(np.int8)
        trades["ts"] = ts[pick] + 1
        trades["ts_recv"] = ts[pick] + 20_001
        trades["px"] = np.where(side == BUY, bbo["ask_px"][pick], bbo["bid_px"][pick])
        trades["qty"] = np.maximum(1, rng.geometric(0.3, pick.shape[0]))
        trades["trade_id"] = i0 + pick
        trades["side"] = side
        # The trade at t+1 ns may pass the next quote's time only when quotes are 1 ns
        # apart; keep trades sorted regardless.
        trades = trades[np.argsort(trades["ts"], kind="stable")]
        yield bbo, trades
