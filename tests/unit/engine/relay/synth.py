# SPDX-License-Identifier: MIT
"""Synthetic market data for the relay's tests and benchmark: L2 rows and a tick-store day."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.tickstore.days import day_start_ns
from engine.tickstore.schema import L2_DELTA_DTYPE, TRADE_DTYPE
from engine.tickstore.store import TickStore
from engine.types import BUY, L2_EVENT_DTYPE, L2_SET, L2_TRADE, SELL

DAY = "20261204"
MID = 10_000


def l2_rows(n: int, n_books: int, *, seed: int = 1, t0: int | None = None) -> np.ndarray:
    """Return ``n`` L2 rows over ``n_books`` books: level sets either side of a mid, trades."""
    rng = np.random.default_rng(seed)
    rows = np.zeros(n, L2_EVENT_DTYPE)
    start = day_start_ns(DAY) + 34_200 * 10**9 if t0 is None else t0
    rows["ts"] = start + np.arange(n, dtype=np.int64) * 10_000
    rows["book"] = rng.integers(0, n_books, n)
    off = rng.integers(1, 40, n)
    side = np.where(rng.random(n) < 0.5, BUY, SELL).astype(np.int8)
    rows["side"] = side
    rows["px"] = np.where(side == BUY, MID - off, MID + off)
    rows["qty"] = np.where(rng.random(n) < 0.2, 0, rng.integers(1, 50, n))
    trade = rng.random(n) < 0.05
    rows["kind"] = np.where(trade, L2_TRADE, L2_SET)
    rows["qty"][trade] = rng.integers(1, 5, int(trade.sum()))
    return rows


def write_day(path: Path, symbols: list[str], n: int, *, seed: int = 1) -> np.ndarray:
    """Write ``n`` rows over ``symbols`` as a tick-store day; return them as L2 rows."""
    rows = l2_rows(n, len(symbols), seed=seed)
    with TickStore(path, "a") as store:
        for b, s in enumerate(symbols):
            mine = rows[rows["book"] == b]
            sets = mine[mine["kind"] == L2_SET]
            trades = mine[mine["kind"] == L2_TRADE]
            d = np.zeros(sets.shape[0], L2_DELTA_DTYPE)
            for f in ("ts", "px", "qty", "side", "kind"):
                d[f] = sets[f]
            d["ts_recv"], d["seq"] = sets["ts"], -1
            t = np.zeros(trades.shape[0], TRADE_DTYPE)
            for f in ("ts", "px", "qty", "side"):
                t[f] = trades[f]
            t["ts_recv"], t["trade_id"] = trades["ts"], -1
            with store.writer(s, DAY, tick_size="0.01", lot_size="1") as w:
                w.append("l2", d)
                w.append("trades", t)
    return rows
