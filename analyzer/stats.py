# SPDX-License-Identifier: MIT
"""Statistics of a selected time span: events, trades, volume, VWAP, spread.

:class:`RangeStats` is what the statistics panel shows. :func:`trade_sums` and
:func:`spread_sums` reduce rows; :func:`analyzer.dataset.InstrumentDay.range_stats` combines
them with the pyramids' bucket sums so that a span of a whole 100M-row day costs a few
milliseconds instead of a full read.
"""

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from engine.types import BUY, SELL

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class TradeSums:
    """Additive trade figures of some rows (prices and sizes in display units)."""

    trades: int = 0
    volume: float = 0.0
    notional: float = 0.0
    buy_volume: float = 0.0
    sell_volume: float = 0.0
    px_lo: float = math.nan
    px_hi: float = math.nan

    def __add__(self, other: "TradeSums") -> "TradeSums":
        return TradeSums(
            self.trades + other.trades,
            self.volume + other.volume,
            self.notional + other.notional,
            self.buy_volume + other.buy_volume,
            self.sell_volume + other.sell_volume,
            float(np.fmin(self.px_lo, other.px_lo)),
            float(np.fmax(self.px_hi, other.px_hi)),
        )


@dataclass(frozen=True, slots=True)
class SpreadSums:
    """Additive spread figures of some quote rows (rows with both sides present)."""

    quotes: int = 0
    two_sided: int = 0
    total: float = 0.0
    lo: float = math.nan
    hi: float = math.nan

    def __add__(self, other: "SpreadSums") -> "SpreadSums":
        return SpreadSums(
            self.quotes + other.quotes,
            self.two_sided + other.two_sided,
            self.total + other.total,
            float(np.fmin(self.lo, other.lo)),
            float(np.fmax(self.hi, other.hi)),
        )


@dataclass(frozen=True, slots=True)
class RangeStats:
    """Figures of one instrument over ``[t0, t1]`` (ns)."""

    symbol: str
    t0: int
    t1: int
    events: int  # rows of every kind in the span
    trades: TradeSums
    spread: SpreadSums

    @property
    def vwap(self) -> float:
        """Return the volume-weighted average trade price (NaN without trades)."""
        t = self.trades
        return t.notional / t.volume if t.volume > 0 else math.nan

    @property
    def spread_mean(self) -> float:
        """Return the mean spread over quote updates with both sides (NaN without any)."""
        s = self.spread
        return s.total / s.two_sided if s.two_sided else math.nan


def trade_sums(px: F64, qty: F64, side: npt.NDArray[np.int8]) -> TradeSums:
    """Return the sums of trades with prices ``px``, sizes ``qty`` and aggressor ``side``."""
    if px.shape[0] == 0:
        return TradeSums()
    return TradeSums(
        int(px.shape[0]),
        float(qty.sum()),
        float((px * qty).sum()),
        float(qty[side == BUY].sum()),
        float(qty[side == SELL].sum()),
        float(np.fmin.reduce(px)),
        float(np.fmax.reduce(px)),
    )


def spread_sums(bid: F64, ask: F64) -> SpreadSums:
    """Return the spread sums of quote rows (NaN marks a missing side)."""
    if bid.shape[0] == 0:
        return SpreadSums()
    spread = ask - bid
    ok = ~np.isnan(spread)
    s = spread[ok]
    if s.shape[0] == 0:
        return SpreadSums(int(bid.shape[0]))
    return SpreadSums(
        int(bid.shape[0]), int(s.shape[0]), float(s.sum()), float(s.min()), float(s.max())
    )
