# SPDX-License-Identifier: MIT
"""The strategy's view of a backtest's book: :class:`L2View` and :class:`L3View`.

Each is an :class:`engine.strategy.base.BookView` over the book the generic backtest
(:mod:`engine.backtest.generic`) keeps for the strategy: book 0 of an
:class:`engine.book.l2.L2Books`, or an :class:`engine.book.l3.L3Book` with its levels
aggregated.
"""

import numpy as np
import numpy.typing as npt

from engine.book.l2 import L2Books
from engine.book.l3 import L3Book


class L2View:
    """A :class:`engine.strategy.base.BookView` over book 0 of an :class:`L2Books`.

    With ``held`` the touch is read once per change of the book (:meth:`refresh`, called by
    whoever applies rows to it) instead of on every question.
    """

    def __init__(self, books: L2Books, symbol: str, *, held: bool = False) -> None:
        self._books = books
        self._symbol = symbol
        self._held = held
        self._bid: tuple[int, int] | None = None
        self._ask: tuple[int, int] | None = None
        if held:
            self.refresh()

    def refresh(self) -> None:
        """Read the touch again after rows were applied to the book."""
        self._bid, self._ask = self._books.touch(0)

    @property
    def symbol(self) -> str:
        """Return the instrument's symbol."""
        return self._symbol

    def best_bid(self) -> tuple[int, int] | None:
        """Return the best bid ``(px_ticks, qty_lots)``."""
        return self._bid if self._held else self._books.best_bid(0)

    def best_ask(self) -> tuple[int, int] | None:
        """Return the best ask ``(px_ticks, qty_lots)``."""
        return self._ask if self._held else self._books.best_ask(0)

    def top(self, depth: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Return the best ``depth`` levels per side, ``(m, 2)`` arrays of (px, qty)."""
        return self._books.top(0, depth)


class L3View:
    """A :class:`engine.strategy.base.BookView` over an :class:`L3Book` (levels aggregated)."""

    def __init__(self, book: L3Book, symbol: str) -> None:
        self._book = book
        self._symbol = symbol

    @property
    def symbol(self) -> str:
        """Return the instrument's symbol."""
        return self._symbol

    def best_bid(self) -> tuple[int, int] | None:
        """Return the best bid ``(px_ticks, qty_lots)``."""
        return self._book.best_bid()

    def best_ask(self) -> tuple[int, int] | None:
        """Return the best ask ``(px_ticks, qty_lots)``."""
        return self._book.best_ask()

    def top(self, depth: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Return the best ``depth`` levels per side, ``(m, 2)`` arrays of (px, qty)."""
        lq = self._book.level_qty
        lo = self._book.px_min
        bi = np.flatnonzero(lq[0] > 0)[::-1][:depth]
        ai = np.flatnonzero(lq[1] > 0)[:depth]
        bids = np.stack([bi + lo, lq[0][bi]], axis=1).astype(np.int64)
        asks = np.stack([ai + lo, lq[1][ai]], axis=1).astype(np.int64)
        return bids, asks
