# SPDX-License-Identifier: MIT
"""Instruments: tick size, lot size and the conversions between display units and the core.

The core sees prices as integer ticks and quantities as integer lots; floats and decimal
strings appear only at the display and FIX boundaries, and they are converted here.
"""

from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

import numpy as np
import numpy.typing as npt

_REL_TOL = 1e-6  # how far (in ticks or lots) a float may sit from the grid, plus float noise


def _to_decimal(name: str, value: float | int | str | Decimal) -> Decimal:
    try:
        d = value if isinstance(value, Decimal) else Decimal(str(value))
    except InvalidOperation:
        raise ValueError(f"{name}: not a number: {value!r}") from None
    if not d.is_finite():
        raise ValueError(f"{name}: must be finite, got {value!r}")
    return d


@dataclass(frozen=True, slots=True, kw_only=True)
class Instrument:
    """A tradable instrument and its unit conversions.

    Parameters
    ----------
    symbol : str
        Venue symbol, e.g. ``"ESH4"`` or ``"BTCUSDT"``.
    tick_size : Decimal
        Price increment; price = ticks * tick_size. Given as a string or Decimal for exactness
        (floats are accepted and converted through their shortest repr).
    lot_size : Decimal
        Quantity increment; quantity = lots * lot_size.
    multiplier : Decimal
        Contract multiplier (value of one unit of price per unit of quantity), 1 for spot.
    currency : str
        Quote currency of prices and P&L.
    """

    symbol: str
    tick_size: Decimal
    lot_size: Decimal = Decimal(1)
    multiplier: Decimal = Decimal(1)
    currency: str = "USD"
    _tick_f: float = field(init=False, repr=False, compare=False)
    _lot_f: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.symbol:
            raise ValueError("Instrument.symbol: must not be empty")
        for name in ("tick_size", "lot_size", "multiplier"):
            d = _to_decimal(f"Instrument.{name}", getattr(self, name))
            if d <= 0:
                raise ValueError(f"Instrument.{name}: must be > 0, got {d}")
            object.__setattr__(self, name, d)
        object.__setattr__(self, "_tick_f", float(self.tick_size))
        object.__setattr__(self, "_lot_f", float(self.lot_size))

    @property
    def tick_value(self) -> Decimal:
        """Value of one tick on one lot, in the quote currency (exact)."""
        return self.tick_size * self.lot_size * self.multiplier

    # ------------------------------------------------------------------- scalars
    def price_to_ticks(self, price: float | int | str | Decimal) -> int:
        """Convert a price to integer ticks.

        Raises
        ------
        ValueError
            If the price is not a finite number on the tick grid.
        """
        d = _to_decimal("price", price)
        q = d / self.tick_size
        if q != q.to_integral_value():
            raise ValueError(
                f"price: {price!r} is not a multiple of tick_size {self.tick_size} ({self.symbol})"
            )
        return int(q)

    def ticks_to_price(self, ticks: int) -> Decimal:
        """Convert integer ticks back to an exact decimal price."""
        return int(ticks) * self.tick_size

    def qty_to_lots(self, qty: float | int | str | Decimal) -> int:
        """Convert a quantity to integer lots.

        Raises
        ------
        ValueError
            If the quantity is not a finite number on the lot grid.
        """
        d = _to_decimal("qty", qty)
        q = d / self.lot_size
        if q != q.to_integral_value():
            raise ValueError(
                f"qty: {qty!r} is not a multiple of lot_size {self.lot_size} ({self.symbol})"
            )
        return int(q)

    def lots_to_qty(self, lots: int) -> Decimal:
        """Convert integer lots back to an exact decimal quantity."""
        return int(lots) * self.lot_size

    # -------------------------------------------------------------------- arrays
    def prices_to_ticks(self, prices: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """Convert an array of float prices to int64 ticks (rounding within 1e-6 tick).

        Raises
        ------
        ValueError
            If a price is not finite or lies off the tick grid; the message names the first
            offending index and value.
        """
        return _to_grid("prices", prices, self._tick_f, self.symbol)

    def qtys_to_lots(self, qtys: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """Convert an array of float quantities to int64 lots (rounding within 1e-6 lot).

        Raises
        ------
        ValueError
            If a quantity is not finite or lies off the lot grid.
        """
        return _to_grid("qtys", qtys, self._lot_f, self.symbol)

    def ticks_to_prices(self, ticks: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Convert int ticks to float prices (for display only)."""
        return np.asarray(ticks, dtype=np.float64) * self._tick_f

    def lots_to_qtys(self, lots: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Convert int lots to float quantities (for display only)."""
        return np.asarray(lots, dtype=np.float64) * self._lot_f


def _to_grid(name: str, values: npt.ArrayLike, step: float, symbol: str) -> npt.NDArray[np.int64]:
    a = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(a)):
        i = int(np.flatnonzero(~np.isfinite(a.ravel()))[0])
        raise ValueError(f"{name}[{i}]: must be finite, got {float(a.ravel()[i])!r} ({symbol})")
    x = a / step
    r = np.rint(x)
    bad = np.abs(x - r) > _REL_TOL + 1e-12 * np.abs(r)
    if np.any(bad):
        i = int(np.flatnonzero(bad.ravel())[0])
        raise ValueError(
            f"{name}[{i}]: {float(a.ravel()[i])!r} is not a multiple of {step!r} ({symbol})"
        )
    return r.astype(np.int64)
