# SPDX-License-Identifier: MIT
"""Compile (or load from numba's disk cache) every kernel the live engine uses, ahead of time.

The first call of a numba kernel compiles it (seconds) or loads it from the cache (a fraction of
a second). :func:`warm_up` makes those first calls on tiny inputs, so the console can do it in a
worker thread while the window appears, and the first real order does not pay for it.
"""

import logging
import time

import numpy as np

from engine.book.l2 import L2Books
from engine.instruments import Instrument
from engine.matching.matcher import Matcher, make_cmds
from engine.portfolio.positions import PositionBook
from engine.types import BUY, L2_EVENT_DTYPE, L2_SET, SELL

log = logging.getLogger(__name__)


def warm_up() -> float:
    """Run every live-path kernel once; return the seconds it took."""
    t0 = time.perf_counter()
    books = L2Books(1, 16, 100)
    ev = np.zeros(2, L2_EVENT_DTYPE)
    ev["px"] = (99, 101)
    ev["qty"] = (1, 1)
    ev["side"] = (BUY, SELL)
    ev["kind"] = L2_SET
    books.apply(ev)
    books.apply(ev, np.zeros((2, 4), np.int64))
    books.top(0, 2)
    matcher = Matcher(90, 32, capacity=16)
    cmds = make_cmds(2)
    cmds["order_id"] = (1, 2)
    cmds["px"] = (100, 100)
    cmds["qty"] = (1, 1)
    cmds["side"] = (BUY, SELL)
    matcher.submit(cmds)
    pos = PositionBook(1, [Instrument(symbol="WARM", tick_size="1")])  # type: ignore[arg-type]
    pos.on_fill(0, 0, BUY, 100, 1)
    pos.position(0, 0, 101.0)
    seconds = time.perf_counter() - t0
    log.info("kernels ready in %.2f s", seconds)
    return seconds
