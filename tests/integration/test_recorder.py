# SPDX-License-Identifier: MIT
"""The recorder: market data into the tick store while the engine trades, and kill -9.

* In process: batches fed to the engine's books are stored exactly (depth, trades, touch),
  each day starts with the whole book, and the recent-rows cache answers.
* A real child process runs the demo engine with the recorder; it is killed with SIGKILL in
  the middle of trading. The file opens, holds at least every batch the child reported
  flushed, and replaying its depth rows through the L2 kernel gives the last stored touch.
  A new recorder then repairs the file and appends to it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from engine.book.l2 import L2Books
from engine.clock import TestClock
from engine.core import Engine
from engine.events import TradeReported
from engine.instruments import Instrument
from engine.marketdata import MarketData
from engine.tickstore.days import day_start_ns
from engine.tickstore.recorder import Recorder
from engine.tickstore.schema import to_l2_events
from engine.tickstore.store import TickStore
from engine.types import BUY, L2_CLEAR, L2_EVENT_DTYPE, L2_SET, L2_TRADE, SELL

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
DAY = "20261202"
T0 = day_start_ns(DAY) + 9 * 3600 * 10**9
INSTRUMENTS = [
    Instrument(symbol="AAA", tick_size=Decimal("0.25")),
    Instrument(symbol="BBB", tick_size=Decimal("0.01"), lot_size=Decimal("0.1")),
]


def batch(rows: list[tuple[int, int, int, int, int, int]]) -> np.ndarray:
    """L2_EVENT_DTYPE rows from (ts, book, side, px, qty, kind)."""
    ev = np.zeros(len(rows), L2_EVENT_DTYPE)
    for i, (ts, book, side, px, qty, kind) in enumerate(rows):
        ev[i] = (ts, px, qty, book, side, kind)
    return ev


async def test_batches_are_stored_exactly_and_cached(tmp_path: Path) -> None:
    clock = TestClock(T0 + 5)
    engine = Engine(clock)
    market = MarketData(
        ["AAA", "BBB", "ZZZ"], engine.bus, clock, n_levels=200, centres=[400, 10_000, 50]
    )
    rec = Recorder(
        tmp_path / "rec.h5", clock, INSTRUMENTS, venue="TEST", flush_interval_ms=5, cache_rows=3
    )
    rec.attach(market)
    engine.add_component(rec)
    market.apply(batch([(T0, 0, BUY, 399, 5, L2_SET)]))  # before start: the book's start
    run = asyncio.create_task(engine.run())
    await asyncio.sleep(0.05)
    market.apply(batch([
        (T0 + 10, 0, BUY, 400, 7, L2_SET), (T0 + 11, 0, SELL, 402, 3, L2_SET),
        (T0 + 12, 1, SELL, 10_001, 9, L2_SET), (T0 + 13, 0, BUY, 402, 2, L2_TRADE),
        (T0 + 9, 0, SELL, 402, 1, L2_SET),  # venue time goes back: raised to T0 + 11
        (T0 + 14, 2, BUY, 50, 1, L2_SET),  # ZZZ is not recorded
    ]))  # fmt: skip
    clock.advance(1000)
    market.apply(batch([(0, 1, BUY, 9_999, 4, L2_SET)]))  # no venue time: receive time
    await asyncio.sleep(0.05)
    with TickStore(tmp_path / "rec.h5") as s:  # a reader while the engine records
        assert s.instruments() == ["AAA", "BBB"]
        l2 = s.read("AAA", DAY, "l2")
        assert l2["kind"].tolist() == [L2_CLEAR, L2_SET, L2_SET, L2_SET, L2_SET]
        assert l2["px"].tolist() == [0, 399, 400, 402, 402]
        assert l2["qty"].tolist() == [0, 5, 7, 3, 1]
    engine.request_stop()
    await run
    with TickStore(tmp_path / "rec.h5") as s:
        a = s.read("AAA", DAY, "l2")
        assert a["ts"].tolist() == [T0, T0, T0 + 10, T0 + 11, T0 + 11]
        assert (a["side"][1:].tolist(), a["qty"][-1]) == ([BUY, BUY, SELL, SELL], 1)
        t = s.read("AAA", DAY, "trades")
        assert t[["ts", "px", "qty", "side", "trade_id"]].tolist() == [(T0 + 13, 402, 2, BUY, -1)]
        b = s.read("BBB", DAY, "l2")
        assert b["kind"].tolist() == [L2_CLEAR, L2_SET, L2_SET]
        assert b["ts"].tolist() == [T0 + 12, T0 + 12, T0 + 1005]
        bbo = s.read("AAA", DAY, "bbo")
        assert bbo[["bid_px", "bid_qty", "ask_px", "ask_qty"]].tolist()[-1] == (400, 7, 402, 1)
        info = s.info("BBB", DAY)
        assert (info.tick_size, info.lot_size, info.venue) == ("0.01", "0.1", "TEST")
        snap = s.read("AAA", DAY, "l2_snap")  # one periodic snapshot: the clock barely moved
        assert snap.shape == (1,)
        assert (snap["bid_px"][0, :2].tolist(), snap["bid_qty"][0, :2].tolist()) == (
            [399, 0],
            [5, 0],
        )
        assert not snap["ask_px"].any()
        assert s.info("AAA", DAY).n_levels == 10
    assert rec.times_raised == 1
    cached = rec.recent("AAA", "l2")
    assert cached.shape[0] >= 3
    assert cached["px"].tolist()[-3:] == [400, 402, 402]
    assert rec.recent("AAA", "l2", rows=1)["px"].tolist() == [402]
    assert rec.recent("AAA", "trades", since_ts=T0 + 13).shape == (1,)
    assert rec.recent("ZZZ", "bbo").shape == (0,)


#: The demo engine with a recorder, in-process venue; prints rows written after each flush.
CHILD = r"""
import asyncio, sys
from pathlib import Path
from engine.clock import LiveClock
from engine.core import Engine
from engine.demo import build_demo
from engine.tickstore.recorder import Recorder

async def main():
    engine = Engine(LiveClock())
    build_demo(engine, transport="inprocess", record_path=Path(sys.argv[1]))
    rec = next(c for c in engine.components if isinstance(c, Recorder))
    rec.flush_interval_s = 0.02
    flush = rec.flush
    def reporting_flush():
        n = flush()
        if n:
            print(rec.rows_written, flush=True)
        return n
    rec.flush = reporting_flush
    await engine.run()

asyncio.run(main())
"""


@pytest.mark.slow
def test_killed_engine_leaves_a_readable_recording(tmp_path: Path) -> None:
    path = tmp_path / "live.h5"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    written = 0
    try:
        assert child.stdout is not None
        for line in child.stdout:
            written = int(line)
            if written > 5000:
                break
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()
    assert written > 5000, "the child recorded too little before the kill"
    with TickStore(path) as s:
        assert s.instruments() == ["CLF7", "ESZ6", "NQZ6"]
        stored = 0
        for sym in s.instruments():
            (day,) = s.days(sym)
            l2, trades, bbo = (s.read(sym, day, k) for k in ("l2", "trades", "bbo"))
            snaps = s.read(sym, day, "l2_snap")
            stored += l2.shape[0] + trades.shape[0] + bbo.shape[0] + snaps.shape[0]
            assert snaps.shape[0] >= 1
            assert l2["kind"][0] == L2_CLEAR
            assert (np.diff(l2["ts"]) >= 0).all()
            centre = int(np.median(l2["px"][1:]))
            books = L2Books(1, 4000, centre)
            touch = np.zeros((l2.shape[0], 4), np.int64)
            books.apply(to_l2_events(l2), touch)
            last = bbo[-1]
            assert touch[-1].tolist() == [
                int(last[f]) for f in ("bid_px", "bid_qty", "ask_px", "ask_qty")
            ]
        assert stored >= written
    # the next recorder repairs the file and goes on appending
    later = "20300101"
    clock = TestClock(s_ns := day_start_ns(later) + 10**9)
    rec = Recorder(path, clock, [Instrument(symbol="ESZ6", tick_size=Decimal("0.25"))])
    rec.open()
    rec.on_trade(
        TradeReported(ts_event=s_ns, symbol="ESZ6", px_ticks=24_000, qty_lots=2, aggressor=None)
    )
    assert rec.flush() == 1
    rec.close()
    with TickStore(path) as s:
        assert later in s.days("ESZ6")
        assert s.read("ESZ6", later, "trades")["qty"].tolist() == [2]
