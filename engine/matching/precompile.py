# SPDX-License-Identifier: MIT
"""Precompile the core kernels: one call through every book, matching, queue and P&L wrapper.

The engine's one warm-up, :func:`engine.warmup.warm_up`, calls :func:`warm_up` on its
``kernel-warm-up`` thread before the components start; with ``cache=True`` this loads the
kernels from the numba cache (or compiles them once on a fresh install). It lives here, above
the book kernels the matcher runs on, because it crosses packages: ``engine.book`` (L2 and L3),
``engine.matching`` (matcher, queue positions) and ``engine.portfolio`` (positions and P&L). A
warm-up that stays inside one module is a ``warm_up()`` of that module instead
(``engine.fix.layouts``, ``engine.journal.recovery``, ``engine.feeds.fast.columnar``).
"""

from decimal import Decimal

import numpy as np

from engine.book.l2 import L2Books
from engine.book.l3 import L3Book
from engine.instruments import Instrument
from engine.matching.matcher import Matcher, make_cmds
from engine.matching.models import PowerProbQueue
from engine.matching.queue import L2QueuePositions, L3QueuePositions
from engine.portfolio.positions import PositionBook
from engine.types import (
    BUY,
    FILL_DTYPE,
    L2_EVENT_DTYPE,
    L2_SET,
    L2_TRADE,
    L3_ADD,
    L3_EVENT_DTYPE,
    L3_EXECUTE,
    SELL,
)


def warm_up() -> int:
    """Run every book, matching, queue and P&L kernel once on tiny inputs.

    Returns
    -------
    int
        A checksum of the results (so the calls cannot be optimised away).
    """
    acc = 0
    books = L2Books(2, 16, centre=100)
    acc += books.apply_levels(0, [BUY, SELL], [99, 101], [1, 1])
    acc += books.snapshot(1, [BUY, SELL], [99, 101], [1, 1])
    ev2 = np.zeros(2, L2_EVENT_DTYPE)
    ev2["px"] = [99, 99]
    ev2["qty"] = [2, 1]
    ev2["side"] = [BUY, SELL]
    ev2["kind"] = [L2_SET, L2_TRADE]
    acc += books.apply(ev2)
    acc += books.apply(ev2, bbo=np.zeros((2, 4), np.int64))
    acc += books.row_applier(np.zeros((1, 4), np.int64))(ev2[:1])  # a lone tick
    acc += int(books.top(0, 2)[0].sum())
    books.recentre(0, 130)
    books.clear(0)
    tracker = L2QueuePositions(books, PowerProbQueue(2.0))
    tracker.add(1, 1, BUY, 99, 1, ts=0)
    acc += int(tracker.apply(ev2).shape[0])

    book = L3Book(90, 20, 4)
    ev3 = np.zeros(2, L3_EVENT_DTYPE)
    ev3[0] = (1, 1, 99, 2, BUY, L3_ADD)
    ev3[1] = (2, 1, 99, 1, BUY, L3_EXECUTE)
    acc += book.apply(ev3[:1])
    acc += book.apply(ev3[1:], bbo=np.zeros((1, 4), np.int64))
    acc += int(book.orders_at(BUY, 99).sum()) + book.qty_ahead(1)
    l3q = L3QueuePositions(book)
    l3q.add(7, BUY, 99, 1, ts=0)
    ev3[0] = (3, 2, 99, 2, BUY, L3_ADD)
    acc += int(l3q.apply(ev3[:1]).shape[0])
    book.clear()

    m = Matcher(90, 20, 4)
    cmds = make_cmds(2)
    cmds["order_id"] = [1, 2]
    cmds["side"] = [BUY, SELL]
    cmds["px"] = 99
    cmds["qty"] = 1
    acc += int(m.submit(cmds).shape[0])
    acc += len(m.submit_one(0, 3, 98, 1, -1, BUY, 1, 2, 1))  # a new GTC limit order, field by field

    pos = PositionBook(1, [Instrument(symbol="X", tick_size=Decimal(1))])
    fills = np.zeros(1, FILL_DTYPE)
    fills[0] = (0, 1, 99, 1, 0.0, 0, 0, BUY, 0)
    acc += pos.apply(fills)
    pos.on_fill(0, 0, SELL, 100, 1)
    acc += int(pos.unrealized([100.0]).sum())
    return acc
