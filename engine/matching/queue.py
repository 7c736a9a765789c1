# SPDX-License-Identifier: MIT
"""Queue position of own orders: exact in an L3 book, modelled in an L2 book.

Both trackers have the same interface, so the backtester (replaying history) and the live
ladder (fed the live stream) run the same code: ``add`` an own order when it reaches the
venue, ``cancel`` it, ``apply`` market events in order, read ``ahead`` (lots in front of the
order) and collect the simulated fills that ``apply`` returns.
"""

import numpy as np
import numpy.typing as npt

from engine.book.l2 import L2Books
from engine.book.l3 import L3Book
from engine.matching import _kernels as k
from engine.matching.models import ConservativeQueue, QueueModel
from engine.types import (
    BUY,
    FILL_DTYPE,
    OWN_ACTIVE,
    OWN_CANCELED,
    OWN_FILLED,
    OWN_ORDER_DTYPE,
    OWN_PENDING,
    SELL,
)

_NEVER = int(np.iinfo(np.int64).max)
_STATUS = {
    OWN_PENDING: "pending",
    OWN_ACTIVE: "active",
    OWN_FILLED: "filled",
    OWN_CANCELED: "canceled",
}


class _OwnOrders:
    """Own-order arrays shared by both trackers (rows in arrival order)."""

    __slots__ = ("_act", "_compact", "_fills", "_n", "_own", "_ox", "_row", "_rs")

    def __init__(self, capacity: int, n_books: int = 1, *, compact: bool = False) -> None:
        cap = max(int(capacity), 4)
        self._own = np.zeros(cap, OWN_ORDER_DTYPE)
        self._act = np.zeros(cap, np.int64)
        self._rs = np.zeros(k.RS_N, np.int64)
        self._rs[k.RS_CANCEL_TS] = _NEVER
        self._fills = np.zeros(1024, FILL_DTYPE)
        self._ox = np.empty((n_books, 2), np.int64)  # highest own bid, lowest own ask per book
        self._ox[:, 0] = np.iinfo(np.int64).min
        self._ox[:, 1] = _NEVER
        self._n = 0
        self._row: dict[int, int] = {}
        self._compact = compact

    @property
    def orders(self) -> npt.NDArray[np.void]:
        """Read-only ``OWN_ORDER_DTYPE`` rows of every own order added so far."""
        v = self._own[: self._n].view()
        v.flags.writeable = False
        return v

    def _add(self, order_id: int, book: int, side: int, px: int, qty: int, ts: int) -> None:
        if side not in (BUY, SELL):
            raise ValueError(f"side: must be BUY (1) or SELL (-1), got {side!r}")
        if qty <= 0:
            raise ValueError(f"qty: must be > 0, got {qty}")
        if order_id in self._row:
            raise ValueError(f"order_id: {order_id} was already added")
        if self._n and ts < int(self._own[self._n - 1]["ts"]):
            last = int(self._own[self._n - 1]["ts"])
            raise ValueError(f"ts: own orders must arrive in time order, got {ts} after {last}")
        if self._n == self._own.shape[0] and self._compact:
            self._forget_done()
        if self._n == self._own.shape[0]:
            grown = np.zeros(2 * self._n, OWN_ORDER_DTYPE)
            grown[: self._n] = self._own
            act = np.zeros(2 * self._n, np.int64)
            act[: self._n] = self._act
            self._own, self._act = grown, act
        r = self._own[self._n]
        r["order_id"] = order_id
        r["ts"] = ts
        r["px"] = px
        r["qty"] = qty
        r["leaves"] = qty
        r["cancel_ts"] = _NEVER
        r["book"] = book
        r["side"] = side
        r["status"] = OWN_PENDING
        self._row[int(order_id)] = self._n
        self._n += 1

    def _forget_done(self) -> None:
        """Drop the rows of orders canceled by the caller and done (a compacting tracker).

        Memory and the per-batch work then follow the open own orders, not every order of the
        day; the rows kept stay in arrival order and the active list points at their new rows.
        """
        n = self._n
        own = self._own[:n]
        st = own["status"]
        keep = (st == OWN_PENDING) | (st == OWN_ACTIVE) | (own["cancel_ts"] == _NEVER)
        nact = int(self._rs[k.RS_NACT])
        keep[self._act[:nact]] = True
        idx = np.flatnonzero(keep)
        if idx.size == n:
            return
        new_row = np.full(n, -1, np.int64)
        new_row[idx] = np.arange(idx.size)
        self._act[:nact] = new_row[self._act[:nact]]
        self._rs[k.RS_NEXT] = int(keep[: int(self._rs[k.RS_NEXT])].sum())
        self._own[: idx.size] = own[idx]
        self._own[idx.size : n] = np.zeros(n - idx.size, OWN_ORDER_DTYPE)
        self._n = int(idx.size)
        ids = self._own["order_id"][: self._n].tolist()
        self._row = {int(o): i for i, o in enumerate(ids)}

    def cancel(self, order_id: int, ts: int) -> None:
        """Cancel an own order from time ``ts`` on (when the cancel reaches the venue).

        A compacting tracker may have forgotten an order canceled before: nothing to do then.

        Raises
        ------
        KeyError
            If the order was never added.
        """
        j = self._row.get(int(order_id))
        if j is None:
            if self._compact:
                return
            raise KeyError(order_id)
        r = self._own[j]
        r["cancel_ts"] = min(int(r["cancel_ts"]), int(ts))
        if r["status"] == OWN_ACTIVE and ts < self._rs[k.RS_CANCEL_TS]:
            self._rs[k.RS_CANCEL_TS] = ts

    def ahead(self, order_id: int) -> float:
        """Lots ahead of an own order in its queue (estimated in L2, exact in L3)."""
        return float(self._own[self._row[int(order_id)]]["ahead"])

    def status(self, order_id: int) -> str:
        """Return ``"pending"``, ``"active"``, ``"filled"`` or ``"canceled"``."""
        return _STATUS[int(self._own[self._row[int(order_id)]]["status"])]

    def leaves(self, order_id: int) -> int:
        """Open quantity of an own order, lots."""
        return int(self._own[self._row[int(order_id)]]["leaves"])

    def _take_fills(self) -> npt.NDArray[np.void]:
        n = int(self._rs[k.RS_NFILLS])
        out = self._fills[:n].copy()
        self._rs[k.RS_NFILLS] = 0
        return out

    def _room_for_fills(self) -> None:
        # every fill takes at least one lot: the open quantity bounds the rows still to come
        own = self._own[: self._n]
        live = (own["status"] == OWN_PENDING) | (own["status"] == OWN_ACTIVE)
        need = int(self._rs[k.RS_NFILLS]) + int(own["leaves"][live].sum()) + 1
        if self._fills.shape[0] < need:
            grown = np.zeros(max(need, 2 * self._fills.shape[0]), FILL_DTYPE)
            n = int(self._rs[k.RS_NFILLS])
            grown[:n] = self._fills[:n]
            self._fills = grown


class L2QueuePositions(_OwnOrders):
    """Own orders in L2 books under a queue model.

    Parameters
    ----------
    books : L2Books
        The books the market events update (shared, mutated by :meth:`apply`).
    model : QueueModel
        :class:`ConservativeQueue`, :class:`PowerProbQueue` or :class:`LogProbQueue`.
    capacity : int
        Initial own-order capacity (grows).
    compact : bool
        Forget orders once the caller canceled them and they are done (a live tracker: memory
        and per-batch work follow the open orders; :attr:`orders` then holds only those).
    """

    __slots__ = ("_books", "_model")

    def __init__(
        self,
        books: L2Books,
        model: QueueModel | None = None,
        capacity: int = 64,
        *,
        compact: bool = False,
    ) -> None:
        super().__init__(capacity, books.n_books, compact=compact)
        self._books = books
        self._model = model if model is not None else ConservativeQueue()

    def add(self, order_id: int, book: int, side: int, px: int, qty: int, ts: int) -> None:
        """Add an own limit order that reaches the venue at ``ts`` (non-decreasing).

        Raises
        ------
        ValueError
            On a bad book, side, quantity, duplicate id or out-of-order time.
        """
        if not 0 <= book < self._books.n_books:
            raise ValueError(f"book: must be in [0, {self._books.n_books}), got {book}")
        self._add(order_id, book, side, px, qty, ts)

    def apply(self, events: npt.NDArray[np.void]) -> npt.NDArray[np.void]:
        """Apply ``L2_EVENT_DTYPE`` rows (books and own orders); return the own fills.

        Raises
        ------
        ValueError
            If the events are malformed (as :meth:`L2Books.apply` checks).
        """
        self._books.validate(events)
        self._room_for_fills()
        code, param = self._model.code
        k.l2_replay_own(
            self._books._q,
            self._books._st,
            np.ascontiguousarray(events),
            0,
            self._own[: self._n],
            self._act,
            self._rs,
            self._ox,
            self._fills,
            code,
            param,
        )
        return self._take_fills()


class L3QueuePositions(_OwnOrders):
    """Own orders at their exact FIFO position in an L3 book.

    Parameters
    ----------
    book : L3Book
        The book the market events update (shared, mutated by :meth:`apply`).
    capacity : int
        Initial own-order capacity (grows).
    """

    __slots__ = ("_book",)

    def __init__(self, book: L3Book, capacity: int = 64) -> None:
        super().__init__(capacity)
        self._book = book

    def add(self, order_id: int, side: int, px: int, qty: int, ts: int) -> None:
        """Add an own limit order that joins its queue at ``ts`` (non-decreasing).

        Raises
        ------
        ValueError
            On a bad side, price, quantity, duplicate id or out-of-order time.
        """
        lo = self._book.px_min
        if not lo <= px < lo + self._book.n_levels:
            raise ValueError(f"px: must be in [{lo}, {lo + self._book.n_levels}), got {px}")
        self._add(order_id, 0, side, px, qty, ts)

    def apply(self, events: npt.NDArray[np.void]) -> npt.NDArray[np.void]:
        """Apply ``L3_EVENT_DTYPE`` rows (book and own orders); return the own fills.

        Raises
        ------
        ValueError
            If the events are malformed (as :meth:`L3Book.apply` checks).
        """
        self._book.validate(events)
        self._room_for_fills()
        ev = np.ascontiguousarray(events)
        pos = 0
        while pos < ev.shape[0]:
            a = self._book.arrays
            pos = int(
                k.l3_replay_own(
                    a.o,
                    a.lv,
                    a.st,
                    a.keys,
                    a.vals,
                    a.free,
                    ev,
                    pos,
                    self._own[: self._n],
                    self._act,
                    self._rs,
                    self._ox,
                    self._fills,
                )
            )
            if pos < ev.shape[0]:
                a.grow()  # the book was full
        return self._take_fills()
