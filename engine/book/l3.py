# SPDX-License-Identifier: MIT
"""L3 (market-by-order) book: FIFO queues per price level over packed order records.

One 64-byte record per order (``OR_*`` fields of ``engine.types``), doubly linked into its
level's FIFO; order ids map to slots through an open-addressing table (no ``typed.Dict``).
Prices must lie in the window ``[px_min, px_min + n_levels)`` fixed at construction.
"""

import numpy as np
import numpy.typing as npt

from engine.book import _kernels as k
from engine.book.l2 import side_index
from engine.types import (
    BID_SIDE,
    BUY,
    ID_EMPTY,
    L3_ADD,
    L3_CLEAR,
    L3_EVENT_DTYPE,
    L3_EXECUTE,
    L3_MODIFY,
    L3_NSTATE,
    L3S_ASK,
    L3S_BASE,
    L3S_BID,
    L3S_DUPLICATE,
    L3S_FREE,
    L3S_NORDERS,
    L3S_POLICY,
    L3S_UNKNOWN,
    LEVEL_WIDTH,
    LV_CNT,
    LV_QTY,
    OR_ID,
    OR_PX,
    OR_QTY,
    OR_SEQ,
    OR_SIDE,
    ORDER_WIDTH,
    PRIO_DEFAULT,
    SELL,
)

I64 = npt.NDArray[np.int64]

_PRIO_ALL = 7


def _readonly(a: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
    v = a.view()
    v.flags.writeable = False
    return v


def aligned_records(n: int, width: int, align: int = 64) -> I64:
    """Return a zeroed ``int64[n, width]`` array whose rows start on ``align``-byte bounds."""
    buf = np.zeros(n * width + align // 8, np.int64)
    off = (-buf.ctypes.data % align) // 8
    return buf[off : off + n * width].reshape(n, width)


def _table_size(capacity: int) -> int:
    return 1 << max(4, int(2 * capacity - 1).bit_length())


class L3Arrays:
    """The arrays of one L3 book (shared by ``L3Book`` and the matching engine).

    Parameters
    ----------
    px_min : int
        Price in ticks of level index 0.
    n_levels : int
        Number of price levels per side.
    capacity : int
        Resting orders the book can hold before it must grow.
    policy : int
        ``PRIO_*`` bits: which modifications lose queue priority.
    """

    __slots__ = ("free", "keys", "lv", "o", "st", "tab", "vals")

    def __init__(self, px_min: int, n_levels: int, capacity: int, policy: int) -> None:
        if n_levels < 1:
            raise ValueError(f"n_levels: must be >= 1, got {n_levels}")
        if capacity < 1:
            raise ValueError(f"capacity: must be >= 1, got {capacity}")
        if not 0 <= policy <= _PRIO_ALL:
            raise ValueError(f"policy: must be a combination of PRIO_* bits, got {policy}")
        self.o: I64 = aligned_records(capacity, ORDER_WIDTH)
        self.lv: I64 = np.zeros((2, n_levels, LEVEL_WIDTH), np.int64)
        self.st: I64 = np.zeros(L3_NSTATE, np.int64)
        # keys and values interleaved: one cache line per probe
        self.tab: I64 = np.full(2 * _table_size(capacity), ID_EMPTY, np.int64)
        self.keys: I64 = self.tab[0::2]
        self.vals: I64 = self.tab[1::2]
        self.free: I64 = np.zeros(capacity, np.int64)
        self.st[L3S_BASE] = px_min
        self.st[L3S_POLICY] = policy
        k.l3_clear(self.o, self.lv, self.st, self.keys, self.vals, self.free)

    @property
    def capacity(self) -> int:
        """Order slots."""
        return int(self.o.shape[0])

    @property
    def n_orders(self) -> int:
        """Resting orders."""
        return int(self.st[L3S_NORDERS])

    def reserve(self, n_orders: int) -> None:
        """Grow (doubling) so that ``n_orders`` orders fit; slots and ids keep their meaning."""
        cap = self.capacity
        if n_orders <= cap:
            return
        new_cap = max(n_orders, 2 * cap)
        o = aligned_records(new_cap, ORDER_WIDTH)
        o[:cap] = self.o
        nfree = int(self.st[L3S_FREE])
        free = np.zeros(new_cap, np.int64)
        extra = np.arange(new_cap - 1, cap - 1, -1, dtype=np.int64)
        free[: extra.shape[0]] = extra
        free[extra.shape[0] : extra.shape[0] + nfree] = self.free[:nfree]
        tab = np.full(2 * _table_size(new_cap), ID_EMPTY, np.int64)
        keys, vals = tab[0::2], tab[1::2]
        live = self.keys != ID_EMPTY
        k.ht_rebuild(keys, vals, self.keys[live].copy(), self.vals[live].copy())
        self.o, self.free, self.tab, self.keys, self.vals = o, free, tab, keys, vals
        self.st[L3S_FREE] = nfree + extra.shape[0]

    def grow(self) -> None:
        """Double the order capacity."""
        self.reserve(2 * self.capacity)

    def run(self, events: npt.NDArray[np.void], bbo: I64 | None = None) -> int:
        """Apply checked ``L3_EVENT_DTYPE`` rows, growing whenever the book is full.

        The kernels stop before an add that finds no free slot; this doubles the capacity
        and resumes, so capacity (and the id table) follows the live order count.
        """
        ev = np.ascontiguousarray(events)
        n = ev.shape[0]
        pos = 0
        while True:
            if bbo is None:
                pos += int(
                    k.l3_apply(self.o, self.lv, self.st, self.keys, self.vals, self.free, ev[pos:])
                )
            else:
                pos += int(
                    k.l3_apply_bbo(
                        self.o,
                        self.lv,
                        self.st,
                        self.keys,
                        self.vals,
                        self.free,
                        ev[pos:],
                        bbo[pos:],
                    )
                )
            if pos >= n:
                return int(n)
            self.grow()

    def px_of(self, idx: int) -> int:
        """Price in ticks of level index ``idx``."""
        return int(self.st[L3S_BASE]) + int(idx)


class L3Book:
    """A market-by-order book.

    Parameters
    ----------
    px_min : int
        Lowest price in ticks the book can hold.
    n_levels : int
        Number of price levels per side (prices ``px_min .. px_min + n_levels - 1``).
    capacity : int
        Initial number of order slots; the book grows when a batch needs more.
    policy : int
        ``PRIO_*`` bits: which modifications lose queue priority (default: price change or
        size increase, as on CME).
    """

    __slots__ = ("_a",)

    def __init__(
        self, px_min: int, n_levels: int, capacity: int = 1 << 12, policy: int = PRIO_DEFAULT
    ) -> None:
        self._a = L3Arrays(px_min, n_levels, capacity, policy)

    @classmethod
    def over(cls, arrays: L3Arrays) -> "L3Book":
        """Return a book view over existing arrays (e.g. a matcher's), sharing them."""
        book = cls.__new__(cls)
        book._a = arrays
        return book

    # ------------------------------------------------------------------ properties
    @property
    def arrays(self) -> L3Arrays:
        """The underlying arrays (for kernels that drive the book, e.g. replays)."""
        return self._a

    @property
    def px_min(self) -> int:
        """Price of level index 0, ticks."""
        return int(self._a.st[L3S_BASE])

    @property
    def n_levels(self) -> int:
        """Price levels per side."""
        return int(self._a.lv.shape[1])

    @property
    def n_orders(self) -> int:
        """Resting orders."""
        return self._a.n_orders

    @property
    def unknown(self) -> int:
        """Events so far that referred to an order id not in the book."""
        return int(self._a.st[L3S_UNKNOWN])

    @property
    def duplicates(self) -> int:
        """Adds so far whose order id was already resting."""
        return int(self._a.st[L3S_DUPLICATE])

    @property
    def levels(self) -> npt.NDArray[np.generic]:
        """Read-only ``int64[2, n_levels, 4]`` (head, tail, qty, count) per level."""
        return _readonly(self._a.lv)

    @property
    def level_qty(self) -> npt.NDArray[np.generic]:
        """Read-only ``int64[2, n_levels]`` size per level (index 0 bids, 1 asks)."""
        return _readonly(self._a.lv[:, :, LV_QTY])

    # ---------------------------------------------------------------------- input
    def validate(self, events: npt.NDArray[np.void]) -> None:
        """Check ``L3_EVENT_DTYPE`` rows without applying them.

        Raises
        ------
        ValueError
            If the dtype is wrong or a row has a bad ``action``, ``side``, ``order_id``,
            ``qty`` or a price outside the book's range.
        """
        if events.dtype != L3_EVENT_DTYPE:
            raise ValueError(f"events: dtype must be L3_EVENT_DTYPE, got {events.dtype}")
        lo = self.px_min
        hi = lo + self.n_levels
        row = int(k.l3_check(np.ascontiguousarray(events), lo, hi))
        if row < 0:
            return
        r = events[row : row + 1]
        act = r["action"]
        bad = (act < L3_ADD) | (act > L3_CLEAR)
        _first_bad("action", bad, act, "must be L3_ADD .. L3_CLEAR", row)
        sets = (act == L3_ADD) | (act == L3_MODIFY)
        side = r["side"]
        _first_bad(
            "side",
            (act == L3_ADD) & (side != BUY) & (side != SELL),
            side,
            "must be BUY or SELL",
            row,
        )
        oid = r["order_id"]
        _first_bad("order_id", oid == ID_EMPTY, oid, "is the reserved empty-bucket marker", row)
        px = r["px"]
        _first_bad("px", sets & ((px < lo) | (px >= hi)), px, f"must be in [{lo}, {hi})", row)
        qty = r["qty"]
        _first_bad("qty", (act == L3_ADD) & (qty <= 0), qty, "must be > 0 on an add", row)
        _first_bad("qty", (act == L3_EXECUTE) & (qty <= 0), qty, "must be > 0 on an execute", row)

    def apply(self, events: npt.NDArray[np.void], bbo: I64 | None = None) -> int:
        """Apply ``L3_EVENT_DTYPE`` rows in order; return the number applied.

        Unknown order ids and duplicate adds are counted (``unknown``, ``duplicates``), not
        raised: they are facts about the feed.

        Parameters
        ----------
        events : ndarray of L3_EVENT_DTYPE
            The rows.
        bbo : ndarray of int64, optional
            ``int64[len(events), 4]`` filled with the touch after each row: bid px, bid qty,
            ask px, ask qty (``(0, 0)`` for a missing side).

        Raises
        ------
        ValueError
            As :meth:`validate`, or on a bad ``bbo`` shape; nothing is applied then.
        """
        if bbo is not None and (
            bbo.dtype != np.int64 or bbo.shape != (events.shape[0], 4) or not bbo.flags.c_contiguous
        ):
            raise ValueError(
                f"bbo: must be C-contiguous int64[{events.shape[0]}, 4], got {bbo.dtype}{bbo.shape}"
            )
        self.validate(events)
        return self._a.run(events, bbo)

    def clear(self) -> None:
        """Remove every order (counters are kept)."""
        a = self._a
        k.l3_clear(a.o, a.lv, a.st, a.keys, a.vals, a.free)

    # --------------------------------------------------------------------- output
    def best_bid(self) -> tuple[int, int] | None:
        """Return ``(px_ticks, qty_lots)`` of the best bid, or None."""
        i = int(self._a.st[L3S_BID])
        if i < 0:
            return None
        return self._a.px_of(i), int(self._a.lv[BID_SIDE, i, LV_QTY])

    def best_ask(self) -> tuple[int, int] | None:
        """Return ``(px_ticks, qty_lots)`` of the best ask, or None."""
        i = int(self._a.st[L3S_ASK])
        if i >= self.n_levels:
            return None
        return self._a.px_of(i), int(self._a.lv[1, i, LV_QTY])

    def is_crossed(self) -> bool:
        """Return True if both sides exist and best bid >= best ask."""
        b = int(self._a.st[L3S_BID])
        a = int(self._a.st[L3S_ASK])
        return b >= 0 and a < self.n_levels and b >= a

    def _idx(self, px: int) -> int:
        i = int(px) - self.px_min
        if not 0 <= i < self.n_levels:
            raise ValueError(
                f"px: must be in [{self.px_min}, {self.px_min + self.n_levels}), got {px}"
            )
        return i

    def depth_at(self, side: int, px: int) -> tuple[int, int]:
        """Return ``(qty_lots, n_orders)`` at price ``px`` on ``side``."""
        rec = self._a.lv[side_index(side), self._idx(px)]
        return int(rec[LV_QTY]), int(rec[LV_CNT])

    def orders_at(self, side: int, px: int) -> I64:
        """Return ``int64[m, 3]`` rows ``(order_id, qty, owner)`` at a level, FIFO order."""
        si = side_index(side)
        i = self._idx(px)
        n = int(self._a.lv[si, i, LV_CNT])
        out = np.zeros((n, 3), np.int64)
        k.l3_level_orders(self._a.o, self._a.lv, si, i, out)
        return out

    def order(self, order_id: int) -> tuple[int, int, int] | None:
        """Return ``(side, px_ticks, qty_lots)`` of a resting order, or None."""
        slot = int(k.l3_lookup(self._a.keys, self._a.vals, int(order_id)))
        if slot < 0:
            return None
        r = self._a.o[slot]
        side = BUY if r[OR_SIDE] == BID_SIDE else SELL
        return side, self._a.px_of(int(r[OR_PX])), int(r[OR_QTY])

    def qty_ahead(self, order_id: int) -> int:
        """Lots ahead of a resting order in its level's FIFO (exact queue position).

        Raises
        ------
        KeyError
            If the order is not resting.
        """
        slot = int(k.l3_lookup(self._a.keys, self._a.vals, int(order_id)))
        if slot < 0:
            raise KeyError(f"order_id: {order_id} is not resting")
        r = self._a.o[slot]
        return int(
            k.l3_qty_ahead(self._a.o, self._a.lv, int(r[OR_SIDE]), int(r[OR_PX]), int(r[OR_SEQ]))
        )

    def resting(self) -> npt.NDArray[np.int64]:
        """All resting orders as ``int64[n, 4]`` rows ``(order_id, side, px, qty)``, by id."""
        o = self._a.o
        live = o[:, OR_QTY] > 0
        rows = np.empty((int(live.sum()), 4), np.int64)
        rows[:, 0] = o[live, OR_ID]
        rows[:, 1] = np.where(o[live, OR_SIDE] == BID_SIDE, BUY, SELL)
        rows[:, 2] = o[live, OR_PX] + self.px_min
        rows[:, 3] = o[live, OR_QTY]
        return rows[np.argsort(rows[:, 0], kind="stable")]

    def fifo_ids(self, side: int, px: int) -> list[int]:
        """Order ids at a level in FIFO order."""
        return [int(x) for x in self.orders_at(side, px)[:, 0]]


def _first_bad(
    field: str,
    mask: npt.NDArray[np.bool_],
    values: npt.NDArray[np.generic],
    why: str,
    offset: int = 0,
) -> None:
    if np.any(mask):
        i = int(np.flatnonzero(mask)[0])
        raise ValueError(f"events[{i + offset}].{field}: {why}, got {values[i].item()!r}")


__all__ = ["L3Arrays", "L3Book", "aligned_records"]
