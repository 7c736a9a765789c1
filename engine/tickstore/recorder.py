# SPDX-License-Identifier: MIT
"""Record the market data the engine receives into the tick store while it trades.

:class:`Recorder` is an engine component. Attached to the engine's
:class:`engine.marketdata.MarketData` (:meth:`Recorder.attach`) it sees every batch of
``L2_EVENT_DTYPE`` rows the books receive — from a FIX market-data session or the simulator's
feed — and records level changes in ``l2`` and trades in ``trades``; from the bus it records
each :class:`engine.events.BookUpdated` touch in ``bbo`` (and, when not attached, each
:class:`engine.events.TradeReported` in ``trades``). Consoles already get those events from
the engine; the recorder keeps the last ``cache_rows`` rows of each instrument and kind in
memory for them (:meth:`Recorder.recent`).

Rows are buffered and written every ``flush_interval_ms`` in one batch per dataset, then the
file is flushed. The store is written in HDF5 SWMR mode: readers (the Trade Analyzer) follow
it while it grows, and an engine killed at any point leaves a readable file holding every
batch flushed before the kill. The next recorder on that file first repairs HDF5's
"open for writing" mark (:meth:`engine.tickstore.store.TickStore.recover`).

Every ``snapshot_interval_ms`` (1 s) the top ``snapshot_levels`` (10) levels of each book go
to ``l2_snap``. Each instrument-day's ``l2`` starts with the whole book (an ``L2_CLEAR`` and
every level the engine's book holds), so a day replays on its own even when recording began
mid-session. Times are the venue's (``ts``) and the engine clock's at receipt (``ts_recv``);
a venue time of 0 or one that goes backwards is replaced by the previous one (counted in
:attr:`Recorder.times_raised`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

from engine.commands import Command, CommandResult
from engine.events import BookUpdated, Event, TradeReported
from engine.fastlog import get_log
from engine.instruments import Instrument
from engine.tickstore.days import DAY_NS, TickStoreError, day_of
from engine.tickstore.schema import (
    BBO_DTYPE,
    KINDS,
    L2_DELTA_DTYPE,
    TRADE_DTYPE,
    l2_snapshot_dtype,
)
from engine.tickstore.store import TickStore
from engine.tickstore.writer import DayWriter
from engine.types import L2_CLEAR, L2_SET, L2_TRADE

if TYPE_CHECKING:
    from engine.clock import Clock
    from engine.core import Engine
    from engine.marketdata import MarketData

log = get_log(__name__)

Rows = npt.NDArray[np.void]

#: Rows per chunk of recorded datasets: small, since each flush rewrites the last chunk.
CHUNK_ROWS: Final[int] = 8192
#: Kinds the recorder writes.
RECORDED_KINDS: Final[tuple[str, ...]] = ("l2", "trades", "bbo", "l2_snap")


class _Cache:
    """The most recent rows of one dataset: whole batches, trimmed to ``cap`` rows."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: deque[Rows] = deque()
        self.rows = 0

    def add(self, rows: Rows) -> None:
        self.parts.append(rows)
        self.rows += rows.shape[0]
        while self.parts and self.rows - self.parts[0].shape[0] >= self.cap:
            self.rows -= self.parts.popleft().shape[0]

    def get(self, dtype: np.dtype[np.void], t0: int | None, n: int | None) -> Rows:
        a = np.concatenate(list(self.parts)) if self.parts else np.empty(0, dtype)
        a = a[-self.cap :]
        if t0 is not None:
            a = a[np.searchsorted(a["ts"], t0, side="left") :]
        if n is not None:
            a = a[max(0, a.shape[0] - n) :]
        return a.copy()


class Recorder:
    """Engine component that records market data into a tick store (module docstring).

    Parameters
    ----------
    path : Path
        The tick store (created if missing; a file left by a killed recorder is repaired).
    clock : Clock
        Receive times.
    instruments : Sequence[Instrument]
        What may be recorded (tick and lot sizes go into each day's attributes); data of other
        symbols is ignored.
    venue : str
        Venue attribute of the days written.
    flush_interval_ms : int
        How often buffered rows are written and flushed.
    cache_rows : int
        Recent rows kept in memory per instrument and kind.
    """

    name = "recorder"

    def __init__(
        self,
        path: Path,
        clock: Clock,
        instruments: Sequence[Instrument],
        *,
        venue: str = "",
        flush_interval_ms: int = 250,
        cache_rows: int = 100_000,
        snapshot_levels: int = 10,
        snapshot_interval_ms: int = 1000,
    ) -> None:
        if flush_interval_ms < 1:
            raise ValueError(f"flush_interval_ms: must be >= 1, got {flush_interval_ms}")
        if cache_rows < 1:
            raise ValueError(f"cache_rows: must be >= 1, got {cache_rows}")
        if not 0 <= snapshot_levels <= 1000:
            raise ValueError(f"snapshot_levels: must be in 0..1000, got {snapshot_levels}")
        self.path = Path(path)
        self.clock = clock
        self.instruments = {i.symbol: i for i in instruments}
        self.venue = venue
        self.flush_interval_s = flush_interval_ms / 1000
        self.cache_rows = cache_rows
        self.snapshot_levels = snapshot_levels
        self.snapshot_interval_ns = snapshot_interval_ms * 1_000_000
        self._next_snapshot = 0
        self.store: TickStore | None = None
        self.market: MarketData | None = None
        self.rows_written = 0
        self.times_raised = 0
        self._pending: dict[tuple[str, str], list[Rows]] = {}
        self._cache: dict[tuple[str, str], _Cache] = {}
        self._writers: dict[tuple[str, str], DayWriter] = {}
        self._last_ts: dict[tuple[str, str], int] = {}
        self._started: dict[int, int] = {}  # book -> UTC day whose l2 has its starting book
        self._inbox: list[tuple[int, Rows] | tuple[str, Rows]] = []  # batches, starting books
        self._quotes: list[tuple[str, int, int, int, int, int, int]] = []
        self._prints: list[tuple[str, int, int, int, int, int]] = []
        self._task: asyncio.Task[None] | None = None
        self._engine: Engine | None = None

    # ----------------------------------------------------------------- lifecycle
    def open(self) -> None:
        """Open the store for SWMR writing (repairing a file left by a killed writer)."""
        if self.store is not None:
            return
        try:
            self.store = TickStore(self.path, "a", swmr=True, chunk_rows=CHUNK_ROWS)
        except TickStoreError as e:
            if "already open for write" not in str(e):
                raise
            n = TickStore.recover(self.path)
            log.warning(
                "tick store %s was left open by a killed writer; recovered %d days", self.path, n
            )
            self.store = TickStore(self.path, "a", swmr=True, chunk_rows=CHUNK_ROWS)

    def start(self, engine: Engine) -> None:
        """Open the store, follow the bus and start the periodic flush."""
        self._engine = engine
        self.open()
        engine.bus.subscribe(BookUpdated, self.on_book)
        engine.bus.subscribe(TradeReported, self.on_trade)
        self._task = asyncio.get_running_loop().create_task(self._run(), name="recorder")

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.flush_interval_s)
            try:
                self.flush()
            except Exception:
                log.exception("recording to %s failed", self.path)

    async def stop(self) -> None:
        """Stop the periodic flush and write what is buffered."""
        if self._engine is not None:
            self._engine.bus.unsubscribe(BookUpdated, self.on_book)
            self._engine.bus.unsubscribe(TradeReported, self.on_trade)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.flush()

    def close(self) -> None:
        """Flush and close the file."""
        self.flush()
        if self.store is not None:
            self.store.close()
            self.store = None

    def handle(self, command: Command) -> CommandResult | None:
        """Own no commands."""
        return None

    def state_events(self) -> list[Event]:
        """Have no state to show."""
        return []

    # -------------------------------------------------------------------- input
    def attach(self, market: MarketData) -> None:
        """Record every batch ``market`` applies, before it is applied.

        The market's ``apply`` is wrapped on the instance: whoever calls ``market.apply``
        (a FIX market-data session, the simulator's pump) is recorded. Attach before handing
        ``market.apply`` to anyone as a callback.
        """
        if self.market is not None:
            raise ValueError("recorder: already attached to a market")
        self.market = market
        inner: Callable[[Rows], int] = market.apply

        def apply(events: Rows) -> int:
            try:
                self.on_l2_batch(events)
            except Exception:  # recording must never stop the books
                log.exception("recording a market-data batch failed")
            return inner(events)

        setattr(market, "apply", apply)  # noqa: B010 (an instance attribute on purpose)

    def on_l2_batch(self, events: Rows) -> None:
        """Take a batch of ``L2_EVENT_DTYPE`` rows (level changes, clears and trades).

        Cheap on the market-data path: the batch is copied and converted at the next
        :meth:`flush`. Only a book's first batch of a day costs more: the book as it stands
        (before the batch) is taken then, to start that day's ``l2``.
        """
        market = self.market
        n = events.shape[0]
        if market is None or n == 0:
            return
        recv = self.clock.now_ns()
        t0 = int(events["ts"][0]) or recv
        day = t0 // DAY_NS
        books = set(events["book"].tolist()) if n <= 64 else set(np.unique(events["book"]).tolist())
        for b in books:
            if self._started.get(b) != day:
                self._started[b] = day
                first = int(events["ts"][np.argmax(events["book"] == b)])
                self._take_book(b, first or recv, recv)
        self._inbox.append((recv, events.copy()))

    def _take_book(self, book: int, ts: int, recv: int) -> None:
        """Queue the whole book ``book`` holds now as the start of a day's ``l2``."""
        market = self.market
        if market is None or not 0 <= book < len(market.symbols):
            return
        symbol = market.symbols[book]
        if symbol not in self.instruments:
            return
        bids, asks = market.books.top(book, market.books.n_levels)
        rows = np.zeros(1 + bids.shape[0] + asks.shape[0], L2_DELTA_DTYPE)
        rows["ts"], rows["ts_recv"], rows["seq"] = ts, recv, -1
        rows["kind"] = L2_SET
        rows["kind"][0] = L2_CLEAR
        nb = bids.shape[0]
        rows["px"][1 : 1 + nb], rows["qty"][1 : 1 + nb], rows["side"][1 : 1 + nb] = (
            bids[:, 0], bids[:, 1], 1,
        )  # fmt: skip
        rows["px"][1 + nb :], rows["qty"][1 + nb :], rows["side"][1 + nb :] = (
            asks[:, 0], asks[:, 1], -1,
        )  # fmt: skip
        self._inbox.append((symbol, rows))

    def _convert_batches(self, batches: list[tuple[int, Rows]]) -> None:
        """Turn queued market-data batches into ``l2`` and ``trades`` rows per symbol."""
        market = self.market
        if not batches or market is None:
            return
        ev = np.concatenate([e for _r, e in batches])
        recv = np.repeat(
            np.array([r for r, _e in batches], np.int64), [e.shape[0] for _r, e in batches]
        )
        books = ev["book"]
        for b in np.unique(books).tolist():
            if not 0 <= b < len(market.symbols) or market.symbols[b] not in self.instruments:
                continue
            symbol = market.symbols[b]
            mine = books == b
            e, r = ev[mine], recv[mine]
            trade = e["kind"] == L2_TRADE
            deltas = np.zeros(int((~trade).sum()), L2_DELTA_DTYPE)
            deltas["ts"] = self._times(symbol, "l2", e["ts"][~trade], r[~trade])
            deltas["ts_recv"] = r[~trade]
            for name in ("px", "qty", "side", "kind"):
                deltas[name] = e[name][~trade]
            deltas["seq"] = -1
            self._add(symbol, "l2", deltas)
            trades = np.zeros(int(trade.sum()), TRADE_DTYPE)
            trades["ts"] = self._times(symbol, "trades", e["ts"][trade], r[trade])
            trades["ts_recv"] = r[trade]
            for name in ("px", "qty", "side"):
                trades[name] = e[name][trade]
            trades["trade_id"] = -1
            self._add(symbol, "trades", trades)

    def _convert(self) -> None:
        """Convert everything queued since the last flush into rows, in arrival order."""
        inbox, self._inbox = self._inbox, []
        batches: list[tuple[int, Rows]] = []
        for item in inbox:
            if isinstance(item[0], str):  # a day's starting book: after the batches before it
                self._convert_batches(batches)
                batches = []
                symbol, rows = item
                rows["ts"] = self._times(symbol, "l2", rows["ts"], rows["ts_recv"])
                self._add(symbol, "l2", rows)
            else:
                batches.append(item)
        self._convert_batches(batches)
        quotes, self._quotes = self._quotes, []
        for symbol in sorted({q[0] for q in quotes}):
            mine: list[tuple[int, ...]] = [q[1:] for q in quotes if q[0] == symbol]
            rows = np.zeros(len(mine), BBO_DTYPE)
            cols = np.array(mine, np.int64)
            rows["ts"] = self._times(symbol, "bbo", cols[:, 0], cols[:, 1])
            for j, name in enumerate(("ts_recv", "bid_px", "bid_qty", "ask_px", "ask_qty"), 1):
                rows[name] = cols[:, j]
            rows["seq"] = -1
            self._add(symbol, "bbo", rows)
        prints, self._prints = self._prints, []
        for symbol in sorted({t[0] for t in prints}):
            mine = [t[1:] for t in prints if t[0] == symbol]
            rows = np.zeros(len(mine), TRADE_DTYPE)
            cols = np.array(mine, np.int64)
            rows["ts"] = self._times(symbol, "trades", cols[:, 0], cols[:, 1])
            for j, name in enumerate(("ts_recv", "px", "qty", "side"), 1):
                rows[name] = cols[:, j]
            rows["trade_id"] = -1
            self._add(symbol, "trades", rows)

    def on_book(self, ev: BookUpdated) -> None:
        """Take the touch of a :class:`BookUpdated` (converted at the next flush)."""
        if ev.symbol in self.instruments:
            self._quotes.append(
                (
                    ev.symbol,
                    ev.ts_event,
                    self.clock.now_ns(),
                    ev.bid_px_ticks,
                    ev.bid_qty_lots,
                    ev.ask_px_ticks,
                    ev.ask_qty_lots,
                )
            )

    def on_trade(self, ev: TradeReported) -> None:
        """Take a :class:`TradeReported` (only when no market is attached: no duplicates)."""
        if self.market is None and ev.symbol in self.instruments:
            side = 0 if ev.aggressor is None else int(ev.aggressor)
            self._prints.append(
                (ev.symbol, ev.ts_event, self.clock.now_ns(), ev.px_ticks, ev.qty_lots, side)
            )

    def _times(
        self, symbol: str, kind: str, ts: npt.NDArray[np.int64], recv: npt.ArrayLike
    ) -> npt.NDArray[np.int64]:
        """Return venue times, 0 replaced by ``recv`` and never below the last one."""
        key = (symbol, kind)
        t = np.where(ts > 0, ts, recv).astype(np.int64)
        if t.shape[0] == 0:
            return t
        last = self._last_ts.get(key, int(t[0]))
        out = np.maximum.accumulate(np.concatenate(([last], t)))[1:]
        self.times_raised += int((out != t).sum())
        self._last_ts[key] = int(out[-1])
        return out

    def _add(self, symbol: str, kind: str, rows: Rows) -> None:
        if rows.shape[0] == 0:
            return
        key = (symbol, kind)
        self._pending.setdefault(key, []).append(rows)
        cache = self._cache.get(key)
        if cache is None:
            cache = self._cache[key] = _Cache(self.cache_rows)
        cache.add(rows)

    # ------------------------------------------------------------------- output
    def snapshot(self) -> None:
        """Record an ``l2_snap`` row of every attached book (``snapshot_levels`` deep)."""
        market = self.market
        n = self.snapshot_levels
        if market is None or n == 0:
            return
        now = self.clock.now_ns()
        dtype = l2_snapshot_dtype(n)
        for b, symbol in enumerate(market.symbols):
            if symbol not in self.instruments or (symbol, "l2") not in self._last_ts:
                continue  # nothing received yet: no book to show
            bids, asks = market.books.top(b, n)
            row = np.zeros(1, dtype)
            row["ts"] = self._times(symbol, "l2_snap", np.array([now], np.int64), now)
            row["ts_recv"] = now
            row["bid_px"][0, : bids.shape[0]], row["bid_qty"][0, : bids.shape[0]] = bids.T
            row["ask_px"][0, : asks.shape[0]], row["ask_qty"][0, : asks.shape[0]] = asks.T
            self._add(symbol, "l2_snap", row)

    def flush(self) -> int:
        """Write every buffered row and flush the file; return the rows written.

        Takes the periodic ``l2_snap`` snapshot first when it is due.
        """
        self._convert()
        now = self.clock.now_ns()
        if now >= self._next_snapshot:
            self._next_snapshot = now + self.snapshot_interval_ns
            self.snapshot()
        if self.store is None or not self._pending:
            return 0
        pending, self._pending = self._pending, {}
        n = 0
        for (symbol, kind), parts in pending.items():
            rows = parts[0] if len(parts) == 1 else np.concatenate(parts)
            d = rows["ts"] // DAY_NS
            cuts = np.flatnonzero(d[1:] != d[:-1]) + 1
            for part in np.split(rows, cuts):
                self._writer(symbol, day_of(int(part["ts"][0]))).append(kind, part)
                n += part.shape[0]
        for w in self._writers.values():
            w.flush(to_disk=False)
        self.store.flush()
        self.rows_written += n
        return n

    def _writer(self, symbol: str, day: str) -> DayWriter:
        w = self._writers.get((symbol, day))
        if w is None:
            assert self.store is not None
            ins = self.instruments[symbol]
            w = self.store.writer(
                symbol,
                day,
                tick_size=str(ins.tick_size),
                lot_size=str(ins.lot_size),
                venue=self.venue,
                n_levels=self.snapshot_levels,
                batch_rows=1 << 30,
            )
            self._writers[(symbol, day)] = w
        return w

    def recent(
        self, symbol: str, kind: str, *, since_ts: int | None = None, rows: int | None = None
    ) -> Rows:
        """Return cached recent rows of one instrument and kind, oldest first.

        ``since_ts`` keeps rows at ``ts >= since_ts``, ``rows`` the last so many of them;
        empty when nothing was recorded.
        """
        if kind not in RECORDED_KINDS:
            raise ValueError(f"kind: {kind!r} is not one of {', '.join(RECORDED_KINDS)}")
        dtype = (
            l2_snapshot_dtype(max(1, self.snapshot_levels)) if kind == "l2_snap" else KINDS[kind]
        )
        cache = self._cache.get((symbol, kind))
        if cache is None:
            return np.empty(0, dtype)
        return cache.get(dtype, since_ts, rows)

    def stats(self) -> dict[str, Any]:
        """Return counters for logs and status displays."""
        return {
            "path": str(self.path),
            "rows_written": self.rows_written,
            "times_raised": self.times_raised,
            "cached": {f"{s}/{k}": c.rows for (s, k), c in self._cache.items()},
        }
