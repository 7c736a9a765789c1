# SPDX-License-Identifier: MIT
"""Own orders at the generic backtest's simulated venue: queue positions and fills.

:class:`OwnQueue` keeps the own orders as ``OWN_ORDER_DTYPE`` rows beside the venue's market
book and replays market events over both with the kernels of :mod:`engine.matching`
(exact FIFO in L3, a queue model in L2); :mod:`engine.backtest.generic` turns its fills into
execution reports.
"""

import numpy as np
import numpy.typing as npt

from engine.backtest.models import Level
from engine.book.l2 import L2Books
from engine.book.l3 import L3Book
from engine.matching import _kernels as mk
from engine.matching.models import QueueModel
from engine.types import FILL_DTYPE, OWN_ACTIVE, OWN_ORDER_DTYPE, OWN_PENDING

_NEVER = int(np.iinfo(np.int64).max)


class OwnQueue:
    """Own orders at the simulated venue: queue positions and fills, through the kernels.

    Rows are added when a request reaches the venue (so in time order); ``order_id`` of row
    ``j`` is ``j + 1``. :meth:`replay` replays market events over the book and the own orders
    and returns the fills (``FILL_DTYPE``).
    """

    def __init__(self, level: Level, book: L2Books | L3Book, model: QueueModel) -> None:
        self.level = level
        self.book = book
        self._l2 = isinstance(book, L2Books)
        self._code, self._param = model.code
        self.own = np.zeros(256, OWN_ORDER_DTYPE)
        self.n = 0
        self.act = np.zeros(256, np.int64)
        self.rs = np.zeros(mk.RS_N, np.int64)
        self.rs[mk.RS_CANCEL_TS] = _NEVER
        self.ox = np.empty((1, 2), np.int64)
        self.ox[0, 0] = np.iinfo(np.int64).min
        self.ox[0, 1] = _NEVER
        self.fills = np.zeros(256, FILL_DTYPE)

    def add(self, side: int, px: int, qty: int, ts: int) -> int:
        """Add an own limit order reaching the venue at ``ts``; return its row."""
        if self.n == self.own.shape[0]:
            grown = np.zeros(2 * self.n, OWN_ORDER_DTYPE)
            grown[: self.n] = self.own
            act = np.zeros(2 * self.n, np.int64)
            act[: self.n] = self.act
            self.own, self.act = grown, act
        j = self.n
        r = self.own[j]
        r["order_id"] = j + 1
        r["ts"] = ts
        r["px"] = px
        r["qty"] = qty
        r["leaves"] = qty
        r["cancel_ts"] = _NEVER
        r["side"] = side
        r["status"] = OWN_PENDING
        self.n += 1
        return j

    def cancel(self, j: int, ts: int) -> None:
        """Cancel row ``j`` from venue time ``ts`` on."""
        r = self.own[j]
        r["cancel_ts"] = min(int(r["cancel_ts"]), ts)
        if r["status"] == OWN_ACTIVE and ts < self.rs[mk.RS_CANCEL_TS]:
            self.rs[mk.RS_CANCEL_TS] = ts

    def settle(self, ts: int) -> npt.NDArray[np.void]:
        """Carry out the arrivals and cancels due by ``ts`` without a market event.

        Returns the fills of orders that took liquidity on arrival.
        """
        self._room(1)
        nf = 0
        own = self.own[: self.n]
        nxt = int(self.rs[mk.RS_NEXT])
        if nxt < self.n and int(own[nxt]["ts"]) <= ts:
            if isinstance(self.book, L2Books):
                nf = mk._l2_arrive(
                    self.book._q,
                    self.book._st,
                    own,
                    self.act,
                    self.rs,
                    self.ox,
                    ts,
                    self.fills,
                    0,
                )
            else:
                a = self.book.arrays
                nf = mk._l3_arrive(a.lv, a.st, own, self.act, self.rs, self.ox, ts, self.fills, 0)
        if ts >= self.rs[mk.RS_CANCEL_TS]:
            mk._cancel_due(own, self.act, self.rs, self.ox, ts)
        return self.fills[: int(nf)]

    def _room(self, n_events: int) -> None:
        # each event (or settlement) fills each live row at most once
        live = int(self.rs[mk.RS_NACT]) + self.n - int(self.rs[mk.RS_NEXT])
        need = live * n_events + 1
        if self.fills.shape[0] < need:
            self.fills = np.zeros(max(need, 2 * self.fills.shape[0]), FILL_DTYPE)

    def status(self, j: int) -> int:
        """Return the ``OWN_*`` status of row ``j``."""
        return int(self.own[j]["status"])

    def leaves(self, j: int) -> int:
        """Return the open lots of row ``j``."""
        return int(self.own[j]["leaves"])

    def replay(
        self, ev: npt.NDArray[np.void], *, stop_at_fill: bool
    ) -> tuple[npt.NDArray[np.void], int]:
        """Replay ``ev``; return the fills and the rows replayed.

        With ``stop_at_fill`` the replay returns after the first row that filled an own
        order, so that the fills are answered before the market moves on.
        """
        rs = self.rs
        if stop_at_fill:  # _room(1), inline: this runs once per venue step
            if self.fills.shape[0] <= rs.item(mk.RS_NACT) + self.n - rs.item(mk.RS_NEXT):
                self._room(1)
        else:
            self._room(int(ev.shape[0]))
        rs[mk.RS_NFILLS] = 0
        rs[mk.RS_STOP] = stop_at_fill
        own = self.own[: self.n]
        if self._l2:
            pos = mk.l2_replay_own(
                self.book._q,  # type: ignore[union-attr]
                self.book._st,  # type: ignore[union-attr]
                ev,
                0,
                own,
                self.act,
                rs,
                self.ox,
                self.fills,
                self._code,
                self._param,
            )
        else:
            pos = 0
            while True:
                a = self.book.arrays  # type: ignore[union-attr]
                pos = int(
                    mk.l3_replay_own(
                        a.o,
                        a.lv,
                        a.st,
                        a.keys,
                        a.vals,
                        a.free,
                        ev,
                        pos,
                        own,
                        self.act,
                        rs,
                        self.ox,
                        self.fills,
                    )
                )
                if pos >= ev.shape[0] or (stop_at_fill and rs[mk.RS_NFILLS]):
                    break
                a.grow()
        return self.fills[: rs.item(mk.RS_NFILLS)], int(pos)
