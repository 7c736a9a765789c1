# SPDX-License-Identifier: MIT
"""One instrument-day opened for charting: pyramids, windows of rows, quotes and depth.

:func:`open_day` reads a :class:`analyzer.source.DaySource` once, in chunks, reporting progress
and checking for cancellation between chunks (it runs on a worker thread; nothing here touches
Qt). It builds the min/max pyramids of the quotes and the trades (or loads them, memory-mapped,
from the store's ``.lod`` folder where an earlier open kept them) and, for a day of at most
``in_memory_rows`` rows, keeps the shown columns in memory. A longer day keeps only its
pyramids: the chart draws from them and reads rows from the store only for a span narrow enough
to show single ticks (:class:`InstrumentDay` caches the last such window).

Prices and sizes here are floats in display units (``px * tick_size``, ``qty * lot_size``);
a missing side of the book is NaN.

Why one long module: it is one pipeline, a day read once into pyramids and windows, and most
of the length is :class:`InstrumentDay`'s reads. The row-to-pyramid steps (column builders,
:class:`BucketCutter`, :func:`feed_rows`, :func:`new_builder`) are :func:`open_day`'s, which
:mod:`analyzer.summary` reuses; they are the seam to cut along if the module grows (a new
analyzer module also goes on the Qt-free contract's list in ``pyproject.toml``).
"""

import logging
import math
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from analyzer._kernels import QUOTE_COLUMNS, TRADE_COLUMNS, bucket_quotes, bucket_trades
from analyzer.pyramid import (
    Pyramid,
    PyramidBuilder,
    PyramidFormatError,
    bin_many,
    pixel_envelope,
)
from analyzer.source import DaySource, Rows
from analyzer.stats import RangeStats, SpreadSums, TradeSums, spread_sums, trade_sums
from engine.tickstore.schema import BBO_DTYPE
from engine.types import BUY, L2_CLEAR, L3_ADD, L3_MODIFY, SELL

log = logging.getLogger(__name__)

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

#: A day with at most this many rows per kind keeps its shown columns in memory.
IN_MEMORY_ROWS: Final[int] = 2_000_000
#: Pauses shorter than this are never drawn as gaps; the pyramid lists the longer ones.
MIN_GAP_NS: Final[int] = 1_000_000_000
#: Pauses longer than this are always drawn as gaps.
MAX_GAP_NS: Final[int] = 60_000_000_000
#: Otherwise a pause is a gap when it lasts this many typical intervals between quotes.
GAP_INTERVALS: Final[int] = 1000
#: Trades are drawn one marker each when the view holds at most this many.
MAX_MARKERS: Final[int] = 6_000

#: Widest price window (ticks) of the book that rebuilds quotes from MBO.
MBO_MAX_LEVELS: Final[int] = 1 << 20
#: Ticks beyond the prices seen so far that the depth ladder's MBO book can hold.
MBO_MARGIN_LEVELS: Final[int] = 2_000


#: ``progress(fraction, text)``: called from the loading thread.
Progress = Callable[[float, str], None]


class Cancelled(Exception):
    """Loading was cancelled by the user."""


class CancelToken:
    """A flag the GUI sets and the loading thread polls between chunks."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        """Ask the loading to stop at the next chunk."""
        self._event.set()

    @property
    def cancelled(self) -> bool:
        """Return whether :meth:`cancel` was called."""
        return self._event.is_set()


@dataclass(frozen=True, slots=True)
class Quote:
    """The top of book and the last trade in force at an instant (NaN: none)."""

    ts: int
    bid: float
    bid_qty: float
    ask: float
    ask_qty: float
    last_px: float
    last_qty: float
    last_side: int


@dataclass(frozen=True, slots=True)
class Depth:
    """Price levels at an instant, best first: ``(px_ticks, qty_lots)`` per level."""

    ts: int
    bids: list[tuple[int, int]]
    asks: list[tuple[int, int]]
    source: str  # the kind it was rebuilt from: "l2", "mbo" or "bbo"


@dataclass(slots=True)
class _Cols:
    """Shown columns of some rows of one kind (display units)."""

    ts: I64
    values: dict[str, npt.NDArray[np.generic]] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.ts.shape[0])

    @property
    def nbytes(self) -> int:
        return int(self.ts.nbytes) + sum(int(v.nbytes) for v in self.values.values())

    def slice(self, i0: int, i1: int) -> "_Cols":
        return _Cols(self.ts[i0:i1], {k: v[i0:i1] for k, v in self.values.items()})


def _side_px(px: I64, qty: I64, tick: float) -> F64:
    out = px.astype(np.float64) * tick
    out[(px == 0) & (qty == 0)] = np.nan
    return out


def quote_columns(rows: Rows, tick: float, lot: float) -> _Cols:
    """Return the shown columns of BBO rows."""
    bid = _side_px(rows["bid_px"], rows["bid_qty"], tick)
    ask = _side_px(rows["ask_px"], rows["ask_qty"], tick)
    return _Cols(
        np.ascontiguousarray(rows["ts"]),
        {
            "bid": bid,
            "ask": ask,
            "bid_qty": rows["bid_qty"] * lot,
            "ask_qty": rows["ask_qty"] * lot,
        },
    )


def trade_columns(rows: Rows, tick: float, lot: float) -> _Cols:
    """Return the shown columns of trade rows."""
    return _Cols(
        np.ascontiguousarray(rows["ts"]),
        {
            "px": rows["px"] * tick,
            "qty": rows["qty"] * lot,
            "side": np.ascontiguousarray(rows["side"]),
        },
    )


class BucketCutter:
    """Re-cut rows arriving in any sizes into whole buckets of ``base`` rows.

    :meth:`push` returns the whole buckets it can (``None``: none yet) and keeps the rest for
    the next rows; :meth:`rest` returns what is left at the end (the short last bucket).
    """

    def __init__(self, base: int) -> None:
        self.base = base
        self._carry: Rows | None = None

    def push(self, chunk: Rows) -> Rows | None:
        """Return the whole buckets of the rows so far, keeping the remainder."""
        carry = self._carry
        rows = chunk if carry is None else np.concatenate([carry, chunk])
        whole = rows.shape[0] - rows.shape[0] % self.base
        # A copy: the caller's buffer may be reused before the next rows arrive.
        self._carry = np.array(rows[whole:], copy=True) if whole < rows.shape[0] else None
        return rows[:whole] if whole else None

    def rest(self) -> Rows | None:
        """Return the rows left over (fewer than ``base``), once."""
        carry, self._carry = self._carry, None
        return carry


def whole_buckets(chunks: Iterable[Rows], base: int) -> Iterator[Rows]:
    """Re-cut ``chunks`` so that each holds whole buckets of ``base`` rows (the last: any)."""
    cutter = BucketCutter(base)
    for chunk in chunks:
        rows = cutter.push(chunk)
        if rows is not None:
            yield rows
    last = cutter.rest()
    if last is not None:
        yield last


def new_builder(kind: str, gap_ns: int = MIN_GAP_NS) -> PyramidBuilder:
    """Return the pyramid builder of ``kind`` (``"bbo"`` or ``"trades"``).

    :func:`feed_rows` feeds it on the day's first open, or while the day is written
    (``analyzer.summary``).
    """
    if kind == "bbo":
        return PyramidBuilder(QUOTE_COLUMNS, sums=("spread", "two_sided"), gap_ns=gap_ns)
    return PyramidBuilder(TRADE_COLUMNS, sums=("qty", "notional", "buy_qty"), gap_ns=gap_ns)


def feed_rows(builder: PyramidBuilder, kind: str, rows: Rows, tick: float, lot: float) -> None:
    """Summarize store rows of ``kind`` into level-0 buckets with the pyramid kernels."""
    n = rows.shape[0]
    if n == 0:
        return
    nb = -(-n // builder.base)
    t_first = np.empty(nb, np.int64)
    t_last = np.empty(nb, np.int64)
    lo = np.empty((nb, 4))
    hi = np.empty((nb, 4))
    sums = np.empty((nb, 4))
    ts = np.ascontiguousarray(rows["ts"])
    if kind == "bbo":
        names = QUOTE_COLUMNS
        bucket_quotes(
            ts,
            rows["bid_px"],
            rows["bid_qty"],
            rows["ask_px"],
            rows["ask_qty"],
            tick,
            builder.base,
            t_first,
            t_last,
            lo,
            hi,
            sums,
        )
    else:
        names = TRADE_COLUMNS
        bucket_trades(
            ts,
            rows["px"],
            rows["qty"],
            rows["side"],
            tick,
            lot,
            builder.base,
            t_first,
            t_last,
            lo,
            hi,
            sums,
        )
    builder.feed_buckets(
        ts,
        t_first,
        t_last,
        {c: np.ascontiguousarray(lo[:, j]) for j, c in enumerate(names)},
        {c: np.ascontiguousarray(hi[:, j]) for j, c in enumerate(names)},
        {c: np.ascontiguousarray(sums[:, j]) for j, c in enumerate(names)},
    )


@dataclass(slots=True)
class Series:
    """One charted kind of a day: its pyramid and, for a short day, its rows in memory."""

    kind: str
    n_rows: int
    pyramid: Pyramid
    rows: _Cols | None  # shown columns of every row, or None (read windows from the store)


class InstrumentDay:
    """An opened instrument-day: what the chart, the crosshair, the ladder and the stats read.

    Build it with :func:`open_day`.
    """

    def __init__(
        self,
        source: DaySource,
        quotes: Series | None,
        trades: Series | None,
        *,
        gap_ns: int | None = None,
    ) -> None:
        self.source = source
        self.symbol = source.symbol
        self.day = source.day
        #: Name on charts and menus: the symbol, or "symbol (store)" when two stores hold it.
        self.label = source.symbol
        self.quotes = quotes
        self.trades = trades
        #: Pauses longer than this are drawn as gaps (ns): by default a thousand typical
        #: intervals between quotes, within ``[MIN_GAP_NS, MAX_GAP_NS]``.
        self.gap_ns = gap_ns if gap_ns is not None else self._typical_gap()
        self.counts = source.counts()
        self._windows: dict[str, tuple[int, int, _Cols]] = {}
        self._lock = threading.Lock()
        # The book rebuilt last (L2 levels / MBO book): a later instant goes on from it.
        self._depth_lock = threading.Lock()
        self._l2_state: tuple[int, Rows] | None = None
        self._mbo_state: tuple[int, Any, int, int] | None = None

    def _typical_gap(self) -> int:
        s = self.quotes if self.quotes is not None and self.quotes.n_rows else self.trades
        if s is None or s.n_rows < 2:
            return MAX_GAP_NS
        lv = s.pyramid.levels[0]
        per_row = (lv.t_last - lv.t_first)[: lv.n - 1] / max(lv.rows - 1, 1)
        typical = float(np.median(per_row)) if per_row.shape[0] else 0.0
        return int(min(max(typical * GAP_INTERVALS, MIN_GAP_NS), MAX_GAP_NS))

    # ------------------------------------------------------------------ shape
    @property
    def span(self) -> tuple[int, int]:
        """Return the first and last time over quotes and trades (ns)."""
        spans = [s.pyramid.span for s in (self.quotes, self.trades) if s and s.n_rows]
        if not spans:
            return (0, 0)
        return min(s[0] for s in spans), max(s[1] for s in spans)

    @property
    def nbytes(self) -> int:
        """Return the memory this day holds: rows kept plus pyramids (memory-mapped or not)."""
        total = 0
        for s in (self.quotes, self.trades):
            if s is not None:
                total += s.pyramid.nbytes + (s.rows.nbytes if s.rows is not None else 0)
        return total

    @property
    def shown_nbytes(self) -> int:
        """Return the size of the shown columns of every row (the memory yardstick)."""
        per_row = {"bbo": 5 * 8, "trades": 3 * 8 + 1}
        return sum(s.n_rows * per_row[s.kind] for s in (self.quotes, self.trades) if s is not None)

    # ------------------------------------------------------------------ rows
    def _series(self, kind: str) -> Series | None:
        return self.quotes if kind == "bbo" else self.trades

    def rows(self, kind: str, t0: int, t1: int, *, margin: int = 1) -> _Cols:
        """Return the shown columns of ``kind`` in ``[t0, t1]`` plus ``margin`` rows either side."""
        s = self._series(kind)
        if s is None or s.n_rows == 0:
            return _Cols(np.empty(0, np.int64))
        if s.rows is not None:
            ts = s.rows.ts
            i0 = max(0, int(np.searchsorted(ts, t0, side="left")) - margin)
            i1 = min(s.rows.n, int(np.searchsorted(ts, t1, side="right")) + margin)
            return s.rows.slice(i0, i1)
        return self._window(s, t0, t1, margin)

    def _window(self, s: Series, t0: int, t1: int, margin: int) -> _Cols:
        """Rows of a day too long for memory: read from the store, one window cached."""
        lv = s.pyramid.levels[0]
        # Widen to whole level-0 buckets (so the margin rows are included), then cache a
        # window three spans wide so that panning reads nothing.
        width = max(t1 - t0, 1)
        b0 = max(0, int(np.searchsorted(lv.t_last, t0 - width, side="left")) - 1)
        b1 = min(lv.n - 1, int(np.searchsorted(lv.t_first, t1 + width, side="right")))
        w0, w1 = int(lv.t_first[b0]), int(lv.t_last[b1])
        with self._lock:
            hit = self._windows.get(s.kind)
        if hit is None or not _covers(hit, s, t0, t1):
            # By row number (bucket b holds rows [b * rows, (b + 1) * rows)): no bisection of
            # the on-disk times. The lock is not held meanwhile: the GUI thread asks
            # has_rows() every frame and must not wait for a worker's read.
            rows = self.source.read_rows(s.kind, b0 * lv.rows, min((b1 + 1) * lv.rows, s.n_rows))
            hit = (w0, w1, self._columns(s.kind, rows))
            with self._lock:
                self._windows[s.kind] = hit
        cols = hit[2]
        i0 = max(0, int(np.searchsorted(cols.ts, t0, side="left")) - margin)
        i1 = min(cols.n, int(np.searchsorted(cols.ts, t1, side="right")) + margin)
        return cols.slice(i0, i1)

    def has_rows(self, kind: str, t0: int, t1: int) -> bool:
        """Return whether the rows of ``[t0, t1]`` are at hand (no store read needed)."""
        s = self._series(kind)
        if s is None or s.rows is not None or s.n_rows == 0:
            return True
        with self._lock:
            hit = self._windows.get(kind)
        return _covers(hit, s, t0, t1)

    def needs_read(self, t0: int, t1: int, width: int) -> bool:
        """Return whether drawing ``[t0, t1]`` exactly needs rows not yet read from the store.

        The chart then draws the finest pyramid level at once and calls :meth:`prefetch` on a
        worker thread, so that no frame waits for the disk.
        """
        for kind in ("bbo", "trades"):
            s = self._series(kind)
            if s is None or s.rows is not None or s.n_rows == 0:
                continue
            if kind == "trades":
                fine = s.pyramid.count_in(t0, t1) <= 4 * MAX_MARKERS
            else:
                fine = s.pyramid.level_for(t0, t1, width) is None
            if fine and not self.has_rows(kind, t0, t1):
                return True
        return False

    def prefetch(self, t0: int, t1: int) -> None:
        """Read the windows of rows that drawing ``[t0, t1]`` needs (worker thread)."""
        for kind in ("bbo", "trades"):
            s = self._series(kind)
            if s is not None and s.rows is None and s.n_rows:
                self._window(s, t0, t1, 0)

    def _finest(self, s: Series, column: str, t0: int, t1: int, width: int) -> tuple[I64, F64]:
        """Return the level-0 envelope of ``[t0, t1]`` (``BASE`` rows a bucket) on ``width`` px.

        Drawn while the rows of a span too fine for the pyramid are being read.
        """
        env = s.pyramid.envelope(column, t0, t1, width, gap_ns=self.gap_ns, level=0)
        if env is None:
            return np.empty(0, np.int64), np.empty(0)
        return env

    def _columns(self, kind: str, rows: Rows) -> _Cols:
        tick, lot = self.source.tick_size, self.source.lot_size
        return quote_columns(rows, tick, lot) if kind == "bbo" else trade_columns(rows, tick, lot)

    # ------------------------------------------------------------------ drawing
    def quote_lines(
        self, t0: int, t1: int, width: int, *, read: bool = True
    ) -> tuple[I64, F64, F64, bool]:
        """Return ``(x, bid, ask, exact)`` to draw over ``[t0, t1]`` on ``width`` pixels.

        ``exact``: drawn from the quotes themselves, as step lines (each value held until
        the next quote), or, with more quotes than twice the pixels, as their min/max per
        pixel column (the same pixels, a fraction of the points); otherwise the min/max
        envelope of the pyramid. Gaps longer than
        :attr:`gap_ns` and missing sides are NaN (the line breaks). With ``read=False``
        rows not at hand are not read: the finest pyramid level stands in for them.
        """
        s = self.quotes
        if s is None or s.n_rows == 0:
            e = np.empty(0)
            return np.empty(0, np.int64), e, e, True
        sides = ("bid", "ask")
        env = s.pyramid.envelopes(sides, t0, t1, width, gap_ns=self.gap_ns)
        if env is not None:
            return env[0], env[1][0], env[1][1], False
        if not read and not self.has_rows("bbo", t0, t1):
            env = s.pyramid.envelopes(sides, t0, t1, width, gap_ns=self.gap_ns, level=0)
            if env is None:  # (a pyramid without levels)
                e = np.empty(0)
                return np.empty(0, np.int64), e, e, False
            return env[0], env[1][0], env[1][1], False
        c = self.rows("bbo", t0, t1)
        if c.n > 2 * width:  # denser than the pixels: their min/max per pixel column
            sides_v: list[F64] = [c.values["bid"], c.values["ask"]]  # type: ignore[list-item]
            x, (bid, ask) = bin_many(c.ts, c.ts, sides_v, sides_v, t0, t1, width, self.gap_ns)
            return x, bid, ask, True
        x, bid = step(c.ts, c.values["bid"], self.gap_ns)  # type: ignore[arg-type]
        _, ask = step(c.ts, c.values["ask"], self.gap_ns)  # type: ignore[arg-type]
        return x, bid, ask, True

    def trade_marks(
        self, t0: int, t1: int, limit: int = MAX_MARKERS, *, read: bool = True
    ) -> _Cols | None:
        """Return the trades in ``[t0, t1]`` (ts, px, qty, side), or ``None`` if over ``limit``.

        With ``read=False`` and the rows not at hand: ``None`` too (draw the envelope).
        """
        s = self.trades
        if s is None or s.n_rows == 0:
            return _Cols(np.empty(0, np.int64))
        if s.pyramid.count_in(t0, t1) > 4 * limit:
            return None
        if not read and not self.has_rows("trades", t0, t1):
            return None
        c = self.rows("trades", t0, t1, margin=0)
        return c if c.n <= limit else None

    def trade_envelope(self, t0: int, t1: int, width: int, *, read: bool = True) -> tuple[I64, F64]:
        """Return the min/max polyline of trade prices (drawn when markers are too many)."""
        s = self.trades
        if s is None or s.n_rows == 0:
            return np.empty(0, np.int64), np.empty(0)
        env = s.pyramid.envelope("px", t0, t1, width, gap_ns=self.gap_ns)
        if env is not None:
            return env
        if not read and not self.has_rows("trades", t0, t1):
            return self._finest(s, "px", t0, t1, width)
        c = self.rows("trades", t0, t1, margin=0)
        if c.n > 2 * width:
            return pixel_envelope(c.ts, c.values["px"], t0, t1, width, self.gap_ns)  # type: ignore[arg-type]
        return c.ts, c.values["px"]  # type: ignore[return-value]

    # ------------------------------------------------------------------ instants
    def quote_at(self, ts: int) -> Quote:
        """Return the top of book and the last trade in force at ``ts``."""
        bid = bid_qty = ask = ask_qty = px = qty = float("nan")
        side = 0
        q = self._last_row("bbo", ts)
        if q is not None:
            bid, bid_qty = float(q.values["bid"][-1]), float(q.values["bid_qty"][-1])
            ask, ask_qty = float(q.values["ask"][-1]), float(q.values["ask_qty"][-1])
        t = self._last_row("trades", ts)
        if t is not None:
            px, qty = float(t.values["px"][-1]), float(t.values["qty"][-1])
            side = int(t.values["side"][-1])
        return Quote(ts, bid, bid_qty, ask, ask_qty, px, qty, side)

    def _last_row(self, kind: str, ts: int) -> _Cols | None:
        s = self._series(kind)
        if s is None or s.n_rows == 0:
            return None
        if s.rows is not None:
            i = int(np.searchsorted(s.rows.ts, ts, side="right"))
            return s.rows.slice(i - 1, i) if i else None
        lv = s.pyramid.levels[0]
        b = int(np.searchsorted(lv.t_first, ts, side="right")) - 1
        if b < 0:
            return None
        c = self._window(s, int(lv.t_first[b]), ts, 0)
        i = int(np.searchsorted(c.ts, ts, side="right"))
        return c.slice(i - 1, i) if i else None

    def next_event(self, ts: int) -> int | None:
        """Return the time of the first quote or trade after ``ts`` (``None``: none left)."""
        best: int | None = None
        for kind in ("bbo", "trades"):
            s = self._series(kind)
            if s is None or s.n_rows == 0:
                continue
            lv = s.pyramid.levels[0]
            b = int(np.searchsorted(lv.t_last, ts, side="right"))
            if b >= lv.n:
                continue
            c = self.rows(kind, int(lv.t_first[b]), int(lv.t_last[b]), margin=0)
            i = int(np.searchsorted(c.ts, ts, side="right"))
            if i < c.n:
                t = int(c.ts[i])
                best = t if best is None else min(best, t)
        return best

    def depth_at(self, ts: int, levels: int = 10) -> Depth:
        """Return the book at ``ts``, rebuilt from L2 deltas or MBO if the day has them.

        Without depth data the top of book is the only level.
        """
        if self.counts.get("l2", 0):
            return self._patch_touch(self._depth_l2(ts, levels + 1), levels)
        if self.counts.get("mbo", 0):
            return self._depth_mbo(ts, levels)
        q = self.quote_at(ts)
        tick, lot = self.source.tick_size, self.source.lot_size
        bids = [] if np.isnan(q.bid) else [(round(q.bid / tick), round(q.bid_qty / lot))]
        asks = [] if np.isnan(q.ask) else [(round(q.ask / tick), round(q.ask_qty / lot))]
        return Depth(ts, bids, asks, "bbo")

    def _patch_touch(self, depth: Depth, levels: int) -> Depth:
        """Put the quote stream's touch on an L2 book (venues often send it sooner).

        Binance's ``bookTicker`` runs tens of ms ahead of its depth diffs: at an instant the
        rebuilt depth may still hold levels the touch has already crossed. Those levels go and
        the best level on each side takes the quote's price and size.
        """
        if self.quotes is None or not self.quotes.n_rows:
            return Depth(depth.ts, depth.bids[:levels], depth.asks[:levels], depth.source)
        q = self.quote_at(depth.ts)
        tick, lot = self.source.tick_size, self.source.lot_size
        bids, asks = depth.bids, depth.asks
        if not math.isnan(q.bid):
            bid = round(q.bid / tick)
            bids = [(bid, round(q.bid_qty / lot)), *((p, v) for p, v in bids if p < bid)]
        if not math.isnan(q.ask):
            ask = round(q.ask / tick)
            asks = [(ask, round(q.ask_qty / lot)), *((p, v) for p, v in asks if p > ask)]
        return Depth(depth.ts, bids[:levels], asks[:levels], f"{depth.source} + bbo")

    def _depth_l2(self, ts: int, levels: int) -> Depth:
        """Rebuild the L2 book at ``ts``: from the last one rebuilt if it is earlier."""
        with self._depth_lock:
            prev = self._l2_state
            if prev is not None and prev[0] <= ts:
                base, rows = prev[1], self.source.read("l2", prev[0] + 1, ts)
            else:
                base, rows = None, self.source.read("l2", None, ts)
            clears = np.flatnonzero(rows["kind"] == L2_CLEAR)
            if clears.size:
                base, rows = None, rows[clears[-1] + 1 :]
            if base is not None:  # the levels held so far, as if written first
                rows = np.concatenate([base, rows])
            # The last size written at every (side, price) is the level's size at ts.
            key = rows["px"] * 2 + (rows["side"] == BUY)
            _, last = np.unique(key[::-1], return_index=True)
            lv = rows[rows.shape[0] - 1 - last]
            lv = lv[lv["qty"] > 0]
            self._l2_state = (ts, lv)
        return self._depth_from(ts, lv["px"], lv["qty"], lv["side"], levels, "l2")

    def _depth_mbo(self, ts: int, levels: int) -> Depth:
        """Replay MBO rows into an ``L3Book`` up to ``ts`` (onwards from the last replay)."""
        from engine.book.l3 import L3Book
        from engine.tickstore.schema import to_l3_events

        with self._depth_lock:
            prev = self._mbo_state
            if prev is not None and prev[0] <= ts:
                _, book, lo, hi = prev
                ev = to_l3_events(self.source.read("mbo", prev[0] + 1, ts))
            else:
                ev = to_l3_events(self.source.read("mbo", None, ts))
                live = ev["px"][ev["px"] > 0]
                if live.shape[0] == 0:
                    return Depth(ts, [], [], "mbo")
                # Room for the price to walk after ts (later calls go on from this book).
                lo = max(int(live.min()) - MBO_MARGIN_LEVELS, 1)
                hi = min(int(live.max()) + MBO_MARGIN_LEVELS, lo + MBO_MAX_LEVELS - 1)
                book = L3Book(lo, hi - lo + 1, capacity=1 << 14)
            sets = (ev["action"] == L3_ADD) | (ev["action"] == L3_MODIFY)
            book.apply(ev[~(sets & ((ev["px"] < lo) | (ev["px"] > hi)))])
            self._mbo_state = (ts, book, lo, hi)
            qty = book.level_qty.copy()  # [side, level]: 0 bids, 1 asks
        pxs = np.arange(lo, hi + 1, dtype=np.int64)
        bid_i = np.flatnonzero(qty[0] > 0)
        ask_i = np.flatnonzero(qty[1] > 0)
        px = np.concatenate([pxs[bid_i], pxs[ask_i]])
        q = np.concatenate([qty[0][bid_i], qty[1][ask_i]])
        side = np.concatenate(
            [np.full(bid_i.shape[0], BUY, np.int8), np.full(ask_i.shape[0], SELL, np.int8)]
        )
        return self._depth_from(ts, px, q, side, levels, "mbo")

    def _depth_from(
        self, ts: int, px: I64, qty: I64, side: npt.NDArray[np.int8], levels: int, src: str
    ) -> Depth:
        b = side == BUY
        bo = np.argsort(-px[b])[:levels]
        ao = np.argsort(px[~b])[:levels]
        bids = [(int(p), int(q)) for p, q in zip(px[b][bo], qty[b][bo], strict=True)]
        asks = [(int(p), int(q)) for p, q in zip(px[~b][ao], qty[~b][ao], strict=True)]
        return Depth(ts, bids, asks, src)

    # ------------------------------------------------------------------ statistics
    def range_stats(self, t0: int, t1: int) -> RangeStats:
        """Return the statistics of ``[t0, t1]``: whole pyramid buckets plus rows at the edges."""
        trades = TradeSums()
        if self.trades is not None and self.trades.n_rows:
            trades = self._trade_stats(self.trades, t0, t1)
        spread = SpreadSums()
        if self.quotes is not None and self.quotes.n_rows:
            spread = self._spread_stats(self.quotes, t0, t1)
        return RangeStats(self.symbol, t0, t1, trades.trades + spread.quotes, trades, spread)

    @staticmethod
    def _inner(s: Series, t0: int, t1: int) -> tuple[int, int]:
        """Return level-0 buckets ``[b0, b1)`` lying wholly inside ``[t0, t1]``."""
        lv = s.pyramid.levels[0]
        b0 = int(np.searchsorted(lv.t_first, t0, side="left"))
        b1 = int(np.searchsorted(lv.t_last, t1, side="right"))
        # A tie across a bucket boundary: leave that bucket to the row reads.
        while b0 < b1 and b0 > 0 and lv.t_last[b0 - 1] == lv.t_first[b0]:
            b0 += 1
        while b1 > b0 and b1 < lv.n and lv.t_first[b1] == lv.t_last[b1 - 1]:
            b1 -= 1
        return b0, max(b0, b1)

    def _edges(self, kind: str, s: Series, t0: int, t1: int, b0: int, b1: int) -> list[_Cols]:
        lv = s.pyramid.levels[0]
        if b1 <= b0:
            return [self.rows(kind, t0, t1, margin=0)]
        left = self.rows(kind, t0, int(lv.t_first[b0]) - 1, margin=0)
        right = self.rows(kind, int(lv.t_last[b1 - 1]) + 1, t1, margin=0)
        return [left, right]

    def _trade_stats(self, s: Series, t0: int, t1: int) -> TradeSums:
        b0, b1 = self._inner(s, t0, t1)
        total = TradeSums()
        if b1 > b0:
            lv = s.pyramid.levels[0]
            rows = min(b1 * lv.rows, s.n_rows) - b0 * lv.rows
            vol = float(lv.sums["qty"][b0:b1].sum())
            buy = float(lv.sums["buy_qty"][b0:b1].sum())
            total = TradeSums(
                rows,
                vol,
                float(lv.sums["notional"][b0:b1].sum()),
                buy,
                vol - buy,
                float(np.fmin.reduce(lv.lo["px"][b0:b1])),
                float(np.fmax.reduce(lv.hi["px"][b0:b1])),
            )
        for c in self._edges("trades", s, t0, t1, b0, b1):
            v = c.values
            if c.n:
                total = total + trade_sums(v["px"], v["qty"], v["side"])  # type: ignore[arg-type]
        return total

    def _spread_stats(self, s: Series, t0: int, t1: int) -> SpreadSums:
        b0, b1 = self._inner(s, t0, t1)
        total = SpreadSums()
        if b1 > b0:
            lv = s.pyramid.levels[0]
            rows = min(b1 * lv.rows, s.n_rows) - b0 * lv.rows
            spread_sum = float(lv.sums["spread"][b0:b1].sum())
            count = float(lv.sums["two_sided"][b0:b1].sum())
            total = SpreadSums(
                rows,
                int(count),
                spread_sum,
                float(np.fmin.reduce(lv.lo["spread"][b0:b1])),
                float(np.fmax.reduce(lv.hi["spread"][b0:b1])),
            )
        for c in self._edges("bbo", s, t0, t1, b0, b1):
            if c.n:
                total = total + spread_sums(c.values["bid"], c.values["ask"])  # type: ignore[arg-type]
        return total


def _covers(hit: tuple[int, int, _Cols] | None, s: Series, t0: int, t1: int) -> bool:
    """Return whether a cached window holds ``[t0, t1]`` and a row beyond either end.

    Beyond the series' first or last row there is nothing to hold: the ends are clipped.
    """
    if hit is None:
        return False
    first, last = s.pyramid.span
    lo = t0 - 1 if t0 > first else first
    hi = t1 + 1 if t1 < last else last
    return hit[0] <= lo and hi <= hit[1]


def step(ts: I64, v: F64, gap_ns: int = 0) -> tuple[I64, F64]:
    """Return the points of a step line: each value held until the next row's time.

    Where two rows are more than ``gap_ns`` apart (``0``: never) the line breaks (NaN).
    """
    n = ts.shape[0]
    if n == 0:
        return ts, v
    x = np.empty(2 * n - 1, dtype=np.int64)
    y = np.empty(2 * n - 1, dtype=np.float64)
    x[0::2] = ts
    x[1::2] = ts[1:]
    y[0::2] = v
    y[1::2] = v[:-1]
    if gap_ns > 0 and n > 1:
        gaps = np.flatnonzero(np.diff(ts) > gap_ns)
        y[2 * gaps + 1] = np.nan
    return x, y


def mbo_quotes(source: DaySource, cancel: CancelToken) -> Iterator[Rows]:
    """Yield the top of book after every change, rebuilt from the day's MBO rows (BBO rows).

    Two passes over ``mbo``: the price range of the orders sizes an :class:`L3Book` (at most
    :data:`MBO_MAX_LEVELS` ticks around the median price: orders resting further away never
    make the touch), then every event is applied and the touch recorded; of several events
    with one timestamp only the touch after the last is kept.
    """
    from engine.book.l3 import L3Book
    from engine.tickstore.schema import to_l3_events

    pxs: list[I64] = []
    for chunk in source.chunks("mbo"):
        if cancel.cancelled:
            raise Cancelled(f"opening {source.symbol} {source.day} was cancelled")
        sets = (chunk["action"] == L3_ADD) | (chunk["action"] == L3_MODIFY)
        px = chunk["px"][sets & (chunk["px"] > 0)]
        if px.shape[0]:
            pxs.append(np.array([px.min(), np.median(px), px.max()], dtype=np.int64))
    if not pxs:
        return
    stats = np.stack(pxs)
    lo, hi = int(stats[:, 0].min()), int(stats[:, 2].max())
    if hi - lo + 1 > MBO_MAX_LEVELS:
        mid = int(np.median(stats[:, 1]))
        lo, hi = mid - MBO_MAX_LEVELS // 2, mid + MBO_MAX_LEVELS // 2 - 1
    book = L3Book(lo, hi - lo + 1, capacity=1 << 14)
    last = np.zeros(4, np.int64)
    for chunk in source.chunks("mbo"):
        if cancel.cancelled:
            raise Cancelled(f"opening {source.symbol} {source.day} was cancelled")
        ev = to_l3_events(chunk)
        sets = (ev["action"] == L3_ADD) | (ev["action"] == L3_MODIFY)
        ev = ev[~(sets & ((ev["px"] < lo) | (ev["px"] > hi)))]
        n = ev.shape[0]
        if n == 0:
            continue
        touch = np.zeros((n, 4), np.int64)
        book.apply(ev, touch)
        ts = ev["ts"]
        final = np.ones(n, bool)
        final[:-1] = ts[1:] != ts[:-1]  # the touch after the last event of each instant
        # Compare each instant's final touch with the previous instant's.
        idx = np.flatnonzero(final)
        t = touch[idx]
        before = np.vstack([last[None, :], t[:-1]])
        changed = (t != before).any(axis=1)
        idx = idx[changed]
        if idx.shape[0] == 0:
            continue
        rows = np.zeros(idx.shape[0], dtype=BBO_DTYPE)
        rows["ts"] = ts[idx]
        rows["ts_recv"] = chunk["ts_recv"][0] if chunk.shape[0] else 0
        for j, name in enumerate(("bid_px", "bid_qty", "ask_px", "ask_qty")):
            rows[name] = touch[idx, j]
        last = touch[idx[-1]].copy()
        yield rows


def _build_series(
    source: DaySource,
    kind: str,
    n_rows: int,
    *,
    in_memory_rows: int,
    gap_ns: int,
    progress: Progress,
    cancel: CancelToken,
    done: int,
    total: int,
    from_mbo: bool = False,
) -> Series:
    """Read ``kind`` once: build (or load) its pyramid, keep its rows if short enough.

    ``from_mbo``: the quotes are rebuilt from the day's MBO rows (:func:`mbo_quotes`) and
    always kept in memory (the store has no quote rows to read windows from).
    """
    cache = None if from_mbo else source.cache_dir()
    stamp = source.stamp("mbo" if from_mbo else kind)
    pyramid = _cached_pyramid(source, kind, cache, stamp)
    keep = n_rows <= in_memory_rows or from_mbo
    if pyramid is not None and not keep:
        progress((done + n_rows) / max(total, 1), f"{source.symbol} {kind}: summary loaded")
        return Series(kind, n_rows, pyramid, None)
    builder = new_builder(kind, gap_ns)
    parts: list[_Cols] = []
    read = 0
    tick, lot = source.tick_size, source.lot_size
    chunks = mbo_quotes(source, cancel) if from_mbo else source.chunks(kind)
    for chunk in whole_buckets(chunks, builder.base):
        if cancel.cancelled:
            raise Cancelled(f"opening {source.symbol} {source.day} was cancelled")
        if pyramid is None:
            feed_rows(builder, kind, chunk, tick, lot)
        if keep:
            parts.append(
                quote_columns(chunk, tick, lot)
                if kind == "bbo"
                else trade_columns(chunk, tick, lot)
            )
        read += chunk.shape[0]
        if from_mbo:
            progress(done / max(total, 1), f"{source.symbol}: {read:,} quotes rebuilt from MBO")
        else:
            progress((done + read) / max(total, 1), f"{source.symbol} {kind}: {read:,} rows")
    if pyramid is None:
        pyramid = builder.finish()
        if cache is not None and pyramid.n_rows:
            try:
                pyramid.save(cache / kind, stamp=stamp)
            except OSError as e:
                log.warning("cannot keep the %s summary in %s: %s", kind, cache, e)
    rows = _concat(parts) if keep else None
    return Series(kind, pyramid.n_rows if from_mbo else n_rows, pyramid, rows)


def _cached_pyramid(
    source: DaySource, kind: str, cache: Path | None, stamp: dict[str, int | str]
) -> Pyramid | None:
    """Return the pyramid an earlier open kept beside the store, if it is still current."""
    if cache is None:
        return None
    try:
        return Pyramid.load(cache / kind, stamp=stamp)
    except PyramidFormatError as e:
        log.debug("building the %s pyramid of %s %s: %s", kind, source.symbol, source.day, e)
        return None


def _concat(parts: list[_Cols]) -> _Cols:
    if not parts:
        return _Cols(np.empty(0, np.int64))
    return _Cols(
        np.concatenate([p.ts for p in parts]),
        {k: np.concatenate([p.values[k] for p in parts]) for k in parts[0].values},
    )


def open_day(
    source: DaySource,
    *,
    progress: Progress | None = None,
    cancel: CancelToken | None = None,
    in_memory_rows: int = IN_MEMORY_ROWS,
    gap_ns: int | None = None,
) -> InstrumentDay:
    """Open one instrument-day for charting (call on a worker thread).

    Raises
    ------
    Cancelled
        ``cancel`` was set; nothing is kept.
    """
    progress = progress or (lambda _f, _t: None)
    cancel = cancel or CancelToken()
    counts = source.counts()
    from_mbo = counts.get("bbo", 0) == 0 and counts.get("mbo", 0) > 0
    total = counts.get("bbo", 0) + counts.get("trades", 0) + (counts["mbo"] if from_mbo else 0)
    series: dict[str, Series] = {}
    done = 0
    for kind in ("bbo", "trades"):
        n = counts.get(kind, 0)
        if kind == "bbo" and from_mbo:
            series[kind] = _build_series(
                source,
                kind,
                0,
                in_memory_rows=in_memory_rows,
                gap_ns=MIN_GAP_NS,
                progress=progress,
                cancel=cancel,
                done=0,
                total=total,
                from_mbo=True,
            )
            done += counts["mbo"]
            continue
        if n == 0:
            continue
        series[kind] = _build_series(
            source,
            kind,
            n,
            in_memory_rows=in_memory_rows,
            gap_ns=MIN_GAP_NS if gap_ns is None else min(gap_ns, MIN_GAP_NS),
            progress=progress,
            cancel=cancel,
            done=done,
            total=total,
        )
        done += n
    progress(1.0, f"{source.symbol} {source.day}: open")
    return InstrumentDay(source, series.get("bbo"), series.get("trades"), gap_ns=gap_ns)
