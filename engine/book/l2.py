# SPDX-License-Identifier: MIT
"""Many L2 (market-by-price) books in one set of arrays.

Each book keeps a window of ``n_levels`` prices per side. When an update arrives outside the
window and it would become the best price of its side (the market walked away), the window
re-centres on it; deeper updates outside the window are dropped and counted. 600 books of
2,000 levels take 19.2 MB.
"""

from collections.abc import Callable
from typing import NoReturn

import numpy as np
import numpy.typing as npt

from engine.book import _kernels as k
from engine.types import (
    ASK_SIDE,
    BID_SIDE,
    BUY,
    L2_CLEAR,
    L2_EVENT_DTYPE,
    L2_NSTATE,
    L2_SET,
    L2_TRADE,
    L2S_ASK,
    L2S_BASE,
    L2S_BID,
    L2S_DROPPED,
    L2S_RECENTRES,
    SELL,
)

_INT64 = np.dtype(np.int64)
I64 = npt.NDArray[np.int64]


def _readonly(a: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
    v = a.view()
    v.flags.writeable = False
    return v


def _first_bad(
    name: str,
    field: str,
    mask: npt.NDArray[np.bool_],
    values: npt.NDArray[np.generic],
    why: str,
    offset: int = 0,
) -> None:
    if np.any(mask):
        i = int(np.flatnonzero(mask)[0])
        raise ValueError(f"{name}[{i + offset}].{field}: {why}, got {values[i].item()!r}")


def side_index(side: int) -> int:
    """Return the array side index (0 bids, 1 asks) of ``BUY``/``SELL``.

    Raises
    ------
    ValueError
        If ``side`` is neither ``BUY`` nor ``SELL``.
    """
    if side == BUY:
        return BID_SIDE
    if side == SELL:
        return ASK_SIDE
    raise ValueError(f"side: must be BUY (1) or SELL (-1), got {side!r}")


class L2Books:
    """A set of L2 books, one per instrument, sharing one level array.

    Parameters
    ----------
    n_books : int
        Number of books (instruments), indexed ``0 .. n_books - 1``.
    n_levels : int
        Width of each book's price window, in ticks, per side.
    centre : int or array of int, optional
        Initial window centre of each book, ticks. Snapshots re-centre anyway.
    """

    __slots__ = ("_q", "_st")

    def __init__(self, n_books: int, n_levels: int, centre: int | npt.ArrayLike = 0) -> None:
        if n_books < 1:
            raise ValueError(f"n_books: must be >= 1, got {n_books}")
        if n_levels < 2:
            raise ValueError(f"n_levels: must be >= 2, got {n_levels}")
        self._q: I64 = np.zeros((n_books, 2, n_levels), np.int64)
        self._st: I64 = np.zeros((n_books, L2_NSTATE), np.int64)
        self._st[:, L2S_BASE] = np.asarray(centre, np.int64) - n_levels // 2
        self._st[:, L2S_BID] = -1
        self._st[:, L2S_ASK] = n_levels

    # ------------------------------------------------------------------ properties
    @property
    def n_books(self) -> int:
        """Number of books."""
        return int(self._q.shape[0])

    @property
    def n_levels(self) -> int:
        """Window width per side, ticks."""
        return int(self._q.shape[2])

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays, bytes."""
        return int(self._q.nbytes + self._st.nbytes)

    @property
    def levels(self) -> npt.NDArray[np.generic]:
        """Read-only ``int64[n_books, 2, n_levels]`` level sizes (index 0 bids, 1 asks)."""
        return _readonly(self._q)

    @property
    def state(self) -> npt.NDArray[np.generic]:
        """Read-only ``int64[n_books, L2_NSTATE]`` state (``L2S_*`` columns)."""
        return _readonly(self._st)

    # ---------------------------------------------------------------------- input
    def _check_book(self, book: int) -> int:
        if not 0 <= book < self._q.shape[0]:
            raise ValueError(f"book: must be in [0, {self._q.shape[0]}), got {book!r}")
        return int(book)

    def validate(self, events: npt.NDArray[np.void]) -> None:
        """Check ``L2_EVENT_DTYPE`` rows without applying them.

        Raises
        ------
        ValueError
            If the dtype is wrong or a row has a bad ``book``, ``side``, ``kind`` or ``qty``;
            the message names the row and field.
        """
        if events.dtype != L2_EVENT_DTYPE:
            raise ValueError(f"events: dtype must be L2_EVENT_DTYPE, got {events.dtype}")
        bad = int(k.l2_check(np.ascontiguousarray(events), self.n_books))
        if bad < 0:
            return
        r = events[bad : bad + 1]
        book = r["book"]
        _first_bad(
            "events",
            "book",
            (book < 0) | (book >= self.n_books),
            book,
            f"must be in [0, {self.n_books})",
            bad,
        )
        kind = r["kind"]
        _first_bad(
            "events",
            "kind",
            (kind != L2_SET) & (kind != L2_TRADE) & (kind != L2_CLEAR),
            kind,
            "must be L2_SET, L2_TRADE or L2_CLEAR",
            bad,
        )
        side = r["side"]
        _first_bad(
            "events",
            "side",
            (kind != L2_CLEAR) & (side != BUY) & (side != SELL),
            side,
            "must be BUY (1) or SELL (-1)",
            bad,
        )
        qty = r["qty"]
        _first_bad("events", "qty", qty < 0, qty, "must be >= 0", bad)

    def apply(self, events: npt.NDArray[np.void], bbo: I64 | None = None) -> int:
        """Apply ``L2_EVENT_DTYPE`` rows in order; return the number applied.

        Parameters
        ----------
        events : ndarray of L2_EVENT_DTYPE
            The rows.
        bbo : ndarray of int64, optional
            ``int64[len(events), 4]`` filled with the event's book touch after each row:
            bid px, bid qty, ask px, ask qty (``(0, 0)`` for a missing side).

        Raises
        ------
        ValueError
            As :meth:`validate`, or on a bad ``bbo`` shape; nothing is applied then.
        """
        if bbo is None:
            self.validate(events)
            return int(k.l2_apply(self._q, self._st, np.ascontiguousarray(events)))
        dtype = events.dtype
        if dtype is not L2_EVENT_DTYPE and dtype != L2_EVENT_DTYPE:
            raise ValueError(f"events: dtype must be L2_EVENT_DTYPE, got {dtype}")
        if (
            bbo.dtype is not _INT64
            or bbo.shape != (events.shape[0], 4)
            or not bbo.flags.c_contiguous
        ):
            raise ValueError(
                f"bbo: must be C-contiguous int64[{events.shape[0]}, 4], got {bbo.dtype}{bbo.shape}"
            )
        if not events.flags.c_contiguous:
            events = np.ascontiguousarray(events)
        # The kernel checks the rows before it applies any (one call per book update).
        applied = int(k.l2_apply_bbo(self._q, self._st, events, bbo, self._q.shape[0]))
        if applied < 0:
            self._refused(events, -1 - applied)
        return applied

    def _refused(self, events: npt.NDArray[np.void], row: int) -> NoReturn:
        # The kernel refused ``row``: validate() says why (naming the row and the field).
        self.validate(events)
        raise AssertionError(f"row {row} refused by the kernel, not by validate()")

    def row_applier(self, out: I64) -> Callable[[npt.NDArray[np.void]], int]:
        """Return ``apply(event)``: one ``L2_EVENT_DTYPE`` row (an array of one), no Python checks.

        The path of a tick that comes alone: the kernel checks the row (a bad one raises as
        :meth:`validate`, nothing applied), writes the book's touch after it into ``out[0]``
        (bid px, bid qty, ask px, ask qty; ``out`` a C-contiguous ``int64[1, 4]``) and
        ``apply`` returns the row's kind. ``event`` must be C-contiguous (an array of one row
        always is).
        """
        kernel, q, st = k.l2_apply_row, self._q, self._st

        def apply(event: npt.NDArray[np.void]) -> int:
            kind = kernel(q, st, event, out)
            if kind < 0:
                self._refused(event, 0)
            return int(kind)

        return apply

    def apply_levels(
        self, book: int, side: npt.ArrayLike, px: npt.ArrayLike, qty: npt.ArrayLike
    ) -> int:
        """Set levels of one book from columns (``qty`` 0 deletes); return the count.

        Raises
        ------
        ValueError
            If the columns differ in length or hold a bad side or a negative size.
        """
        b = self._check_book(book)
        s = np.ascontiguousarray(side, np.int8)
        p = np.ascontiguousarray(px, np.int64)
        v = np.ascontiguousarray(qty, np.int64)
        if not s.shape == p.shape == v.shape or s.ndim != 1:
            raise ValueError(
                f"side, px, qty: must be 1-d of one length, got {s.shape}, {p.shape}, {v.shape}"
            )
        _first_bad("levels", "side", (s != BUY) & (s != SELL), s, "must be BUY (1) or SELL (-1)")
        _first_bad("levels", "qty", v < 0, v, "must be >= 0")
        return int(k.l2_apply_one(self._q[b : b + 1], self._st[b : b + 1], p, v, s))

    def snapshot(
        self, book: int, side: npt.ArrayLike, px: npt.ArrayLike, qty: npt.ArrayLike
    ) -> int:
        """Replace a book by a snapshot (columns); the window centres on its mid.

        Returns the number of levels kept (levels beyond the window are dropped and counted).
        """
        b = self._check_book(book)
        s = np.ascontiguousarray(side, np.int8)
        p = np.ascontiguousarray(px, np.int64)
        v = np.ascontiguousarray(qty, np.int64)
        if not s.shape == p.shape == v.shape or s.ndim != 1:
            raise ValueError(
                f"side, px, qty: must be 1-d of one length, got {s.shape}, {p.shape}, {v.shape}"
            )
        _first_bad("snapshot", "side", (s != BUY) & (s != SELL), s, "must be BUY (1) or SELL (-1)")
        _first_bad("snapshot", "qty", v < 0, v, "must be >= 0")
        return int(k.l2_snapshot(self._q, self._st, b, s, p, v))

    def clear(self, book: int) -> None:
        """Empty one book."""
        k.l2_clear(self._q, self._st, self._check_book(book))

    def recentre(self, book: int, centre: int) -> None:
        """Move a book's window so that it is centred on price ``centre`` (ticks)."""
        b = self._check_book(book)
        k.l2_recentre(self._q, self._st, b, int(centre) - self.n_levels // 2)

    # --------------------------------------------------------------------- output
    def best_bid(self, book: int) -> tuple[int, int] | None:
        """Return ``(px_ticks, qty_lots)`` of the best bid, or None."""
        b = self._check_book(book)
        i = int(self._st[b, L2S_BID])
        if i < 0:
            return None
        return int(self._st[b, L2S_BASE]) + i, int(self._q[b, BID_SIDE, i])

    def best_ask(self, book: int) -> tuple[int, int] | None:
        """Return ``(px_ticks, qty_lots)`` of the best ask, or None."""
        b = self._check_book(book)
        i = int(self._st[b, L2S_ASK])
        if i >= self.n_levels:
            return None
        return int(self._st[b, L2S_BASE]) + i, int(self._q[b, ASK_SIDE, i])

    def touch(self, book: int) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
        """Return ``(best_bid, best_ask)`` in one call (each as :meth:`best_bid` gives it)."""
        b = self._check_book(book)
        st, q = self._st, self._q
        base, i, a = st.item(b, L2S_BASE), st.item(b, L2S_BID), st.item(b, L2S_ASK)
        bid = (base + i, q.item(b, BID_SIDE, i)) if i >= 0 else None
        ask = (base + a, q.item(b, ASK_SIDE, a)) if a < self.n_levels else None
        return bid, ask

    def depth_at(self, book: int, side: int, px: int) -> int:
        """Size in lots at price ``px`` on ``side`` (0 outside the window)."""
        b = self._check_book(book)
        i = int(px) - int(self._st[b, L2S_BASE])
        if not 0 <= i < self.n_levels:
            return 0
        return int(self._q[b, side_index(side), i])

    def top(self, book: int, depth: int) -> tuple[I64, I64]:
        """Return the best ``depth`` levels as ``(bids, asks)``, each ``int64[m, 2]`` (px, qty).

        Bids run from the best down, asks from the best up; only existing levels are returned.
        """
        b = self._check_book(book)
        if depth < 1:
            raise ValueError(f"depth: must be >= 1, got {depth}")
        out = np.zeros((2, depth, 2), np.int64)
        k.l2_top(self._q, self._st, b, depth, out)
        bids = out[BID_SIDE][out[BID_SIDE, :, 1] > 0]
        asks = out[ASK_SIDE][out[ASK_SIDE, :, 1] > 0]
        return bids, asks

    def window(self, book: int) -> tuple[int, int]:
        """Return the price range ``[lo, hi)`` (ticks) the book's window covers."""
        b = self._check_book(book)
        lo = int(self._st[b, L2S_BASE])
        return lo, lo + self.n_levels

    def dropped(self, book: int) -> int:
        """Return how many updates and levels were lost outside the window so far."""
        return int(self._st[self._check_book(book), L2S_DROPPED])

    def recentres(self, book: int) -> int:
        """How often the book's window moved."""
        return int(self._st[self._check_book(book), L2S_RECENTRES])
