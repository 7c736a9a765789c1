# SPDX-License-Identifier: MIT
"""``PositionBook``: positions and P&L per strategy and instrument.

Average-cost realized P&L, unrealized P&L marked to market, fees; booked in batches over
``FILL_DTYPE`` arrays or one fill at a time, with the same kernel arithmetic.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from engine.instruments import Instrument
from engine.portfolio import _kernels as k
from engine.types import BUY, FILL_DTYPE, POSITION_DTYPE, SELL


@dataclass(frozen=True, slots=True, kw_only=True)
class Position:
    """Position and P&L of one strategy in one instrument.

    ``avg_px`` is in ticks (NaN when flat); money amounts are in the instrument's quote
    currency.
    """

    strategy: int
    instrument: int
    qty: int  # signed lots
    avg_px: float  # ticks
    realized: float  # before fees
    fees: float
    unrealized: float  # at the mark passed to ``position``; 0.0 without one
    volume: int  # lots traded
    n_fills: int

    @property
    def net(self) -> float:
        """Realized plus unrealized minus fees."""
        return self.realized + self.unrealized - self.fees


def _first_bad(
    field: str, mask: npt.NDArray[np.bool_], values: npt.NDArray[np.generic], why: str
) -> None:
    if np.any(mask):
        i = int(np.flatnonzero(mask)[0])
        raise ValueError(f"fills[{i}].{field}: {why}, got {values[i].item()!r}")


class PositionBook:
    """Positions and P&L of ``n_strategies`` strategies over a list of instruments.

    Parameters
    ----------
    n_strategies : int
        Strategies, indexed ``0 .. n_strategies - 1``.
    instruments : sequence of Instrument
        Instruments, indexed by position in the sequence; their ``tick_value`` converts
        ticks*lots to money.
    """

    __slots__ = ("_instruments", "_pos", "_tv")

    def __init__(self, n_strategies: int, instruments: Sequence[Instrument]) -> None:
        if n_strategies < 1:
            raise ValueError(f"n_strategies: must be >= 1, got {n_strategies}")
        if not instruments:
            raise ValueError("instruments: must not be empty")
        self._instruments = tuple(instruments)
        self._tv = np.array([float(ins.tick_value) for ins in self._instruments], np.float64)
        self._pos = np.zeros((n_strategies, len(self._instruments)), POSITION_DTYPE)

    @property
    def n_strategies(self) -> int:
        """Number of strategies."""
        return int(self._pos.shape[0])

    def grow(self, n_strategies: int) -> None:
        """Make room for at least ``n_strategies`` strategies; positions held are kept.

        Rows are added in chunks (at least doubling), so adding strategies one at a time costs
        amortised constant time. Never shrinks.
        """
        have = self._pos.shape[0]
        if n_strategies <= have:
            return
        pos = np.zeros((max(n_strategies, 2 * have), self._pos.shape[1]), POSITION_DTYPE)
        pos[:have] = self._pos
        self._pos = pos

    @property
    def instruments(self) -> tuple[Instrument, ...]:
        """The instruments, in index order."""
        return self._instruments

    @property
    def state(self) -> npt.NDArray[np.void]:
        """Read-only ``POSITION_DTYPE[n_strategies, n_instruments]`` view."""
        v = self._pos.view()
        v.flags.writeable = False
        return v

    def _check(self, strategy: int, instrument: int) -> None:
        if not 0 <= strategy < self._pos.shape[0]:
            raise ValueError(f"strategy: must be in [0, {self._pos.shape[0]}), got {strategy}")
        if not 0 <= instrument < self._pos.shape[1]:
            raise ValueError(f"instrument: must be in [0, {self._pos.shape[1]}), got {instrument}")

    def apply(self, fills: npt.NDArray[np.void]) -> int:
        """Book ``FILL_DTYPE`` rows in order; return the count.

        Raises
        ------
        ValueError
            Naming the first bad row and field (dtype, strategy, instrument, side, qty, fee);
            nothing is booked then.
        """
        if fills.dtype != FILL_DTYPE:
            raise ValueError(f"fills: dtype must be FILL_DTYPE, got {fills.dtype}")
        s = fills["strategy"]
        _first_bad(
            "strategy",
            (s < 0) | (s >= self._pos.shape[0]),
            s,
            f"must be in [0, {self._pos.shape[0]})",
        )
        i = fills["instrument"]
        _first_bad(
            "instrument",
            (i < 0) | (i >= self._pos.shape[1]),
            i,
            f"must be in [0, {self._pos.shape[1]})",
        )
        sd = fills["side"]
        _first_bad("side", (sd != BUY) & (sd != SELL), sd, "must be BUY (1) or SELL (-1)")
        q = fills["qty"]
        _first_bad("qty", q <= 0, q, "must be > 0")
        fee = fills["fee"]
        _first_bad("fee", ~np.isfinite(fee), fee, "must be finite")
        return int(k.apply_fills(self._pos, np.ascontiguousarray(fills), self._tv))

    def on_fill(
        self,
        strategy: int,
        instrument: int,
        side: int,
        px: int,
        qty: int,
        fee: float = 0.0,
        ts: int = 0,
    ) -> None:
        """Book one fill (ticks, lots, quote-currency fee).

        Raises
        ------
        ValueError
            If an index, the side, the quantity or the fee is invalid.
        """
        self._check(strategy, instrument)
        if side not in (BUY, SELL):
            raise ValueError(f"side: must be BUY (1) or SELL (-1), got {side!r}")
        if qty <= 0:
            raise ValueError(f"qty: must be > 0, got {qty}")
        if not math.isfinite(fee):
            raise ValueError(f"fee: must be finite, got {fee!r}")
        k.apply_fill(
            self._pos,
            strategy,
            instrument,
            side,
            int(px),
            int(qty),
            float(fee),
            int(ts),
            float(self._tv[instrument]),
        )

    def unrealized(self, marks: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Return mark-to-market P&L, ``float64[n_strategies, n_instruments]``.

        ``marks`` holds one price per instrument in ticks (floats allowed: mids).
        """
        m = np.ascontiguousarray(marks, np.float64)
        if m.shape != (self._pos.shape[1],):
            raise ValueError(f"marks: must have shape ({self._pos.shape[1]},), got {m.shape}")
        if not np.all(np.isfinite(m)):
            raise ValueError("marks: must be finite")
        out = np.zeros(self._pos.shape, np.float64)
        k.unrealized(self._pos, m, self._tv, out)
        return out

    def position(self, strategy: int, instrument: int, mark: float | None = None) -> Position:
        """Return the position of one strategy in one instrument (marked at ``mark`` ticks)."""
        self._check(strategy, instrument)
        p = self._pos[strategy, instrument]
        qty = int(p["qty"])
        cost = float(p["cost"])
        unreal = 0.0
        if mark is not None and qty != 0:
            unreal = (float(mark) * qty - cost) * float(self._tv[instrument])
        return Position(
            strategy=strategy,
            instrument=instrument,
            qty=qty,
            avg_px=cost / qty if qty else float("nan"),
            realized=float(p["realized"]),
            fees=float(p["fees"]),
            unrealized=unreal,
            volume=int(p["volume"]),
            n_fills=int(p["n_fills"]),
        )

    def realized(self) -> npt.NDArray[np.float64]:
        """Realized P&L before fees, ``float64[n_strategies, n_instruments]`` (a copy)."""
        return np.array(self._pos["realized"])

    def fees(self) -> npt.NDArray[np.float64]:
        """Fees, ``float64[n_strategies, n_instruments]`` (a copy)."""
        return np.array(self._pos["fees"])
