# SPDX-License-Identifier: MIT
"""A live engine's market data and own orders, followed through its ``EngineClient`` stream.

:class:`LiveFeed` takes batches of :class:`engine.events.EventRecord` (the console's bridge
delivers them to the GUI thread; the Analyzer never drains the client itself) and keeps, per
instrument the engine lists (``InstrumentAdded``):

* the top of book after every ``BookUpdated`` and every ``TradeReported``, as rows of the
  tick store's ``BBO_DTYPE`` and ``TRADE_DTYPE`` in a :class:`LiveSource` (a
  :class:`analyzer.source.DaySource`), and the book of every ``DepthChanged``;
* a :class:`LiveInstrument`, the :class:`analyzer.dataset.InstrumentDay` the charts, the
  crosshair, the depth ladder and the range statistics read.

Own orders and executions (``OrderChanged``, ``OrderFilled``) and the FIX messages
(``FixMessageSeen``) go to :class:`LiveOrders`, which hands out an
:class:`analyzer.overlay.Overlay` like a journal's.

Memory is bounded: every buffer keeps at most a fixed number of rows and drops the oldest
quarter when full (:class:`RowBuffer`). An instrument nobody charts keeps :data:`IDLE_ROWS`
rows per kind, a charted one :data:`CHART_ROWS`. Min/max summaries of 64-row blocks
(:class:`BlockSummary`) are kept as rows arrive, so wide spans draw from them.

Nothing here touches Qt; everything runs on the thread that feeds it except the reads
(:class:`RowBuffer.rows`), which may run on worker threads (the depth ladder's look-ups).

Why one module: it is the Analyzer's one live path, :class:`LiveFeed` and what it feeds, held
to one memory policy (:data:`IDLE_ROWS` / :data:`CHART_ROWS`, drops aligned to
:data:`BLOCK_ROWS` so the :class:`BlockSummary` blocks stay whole). :class:`RowBuffer` and
:class:`BlockSummary` have no other user; they would move out when one appears (a new
analyzer module also goes on the Qt-free contract's list in ``pyproject.toml``).
"""

import functools
import math
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from analyzer.dataset import MAX_GAP_NS, MAX_MARKERS, Depth, InstrumentDay, Quote, _Cols, step
from analyzer.overlay import Overlay
from analyzer.pyramid import bin_columns, pixel_envelope
from analyzer.source import CHUNK_ROWS, DayEntry, Rows
from analyzer.stats import RangeStats, SpreadSums, TradeSums, spread_sums, trade_sums
from engine.events import (
    BookUpdated,
    DepthChanged,
    EventRecord,
    FixMessageSeen,
    InstrumentAdded,
    OrderChanged,
    OrderFilled,
    TradeReported,
)
from engine.journal.format import FixDirection, FixMessageRecord
from engine.posttrade import TradeDay
from engine.tickstore.days import day_of
from engine.tickstore.schema import BBO_DTYPE, TRADE_DTYPE
from engine.types import EXECUTION_DTYPE, JOURNAL_ORDER_DTYPE, ORDER_EVENT_DTYPE

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

#: ``DayEntry.store`` of a live instrument: this prefix and the engine's name.
LIVE_PREFIX: Final[str] = "live:"
#: Rows per kind a charted live instrument keeps (quotes: 56 bytes a row).
CHART_ROWS: Final[int] = 1 << 20
#: Rows per kind an instrument nobody charts keeps (its recent past, for when it is charted).
IDLE_ROWS: Final[int] = 1 << 16
#: Rows per block of the live min/max summaries (:class:`BlockSummary`).
BLOCK_ROWS: Final[int] = 64
#: Book snapshots (``DepthChanged``, at most ~10 per second) kept per instrument.
DEPTH_ROWS: Final[int] = 1 << 15
#: Levels per side kept of each book snapshot.
DEPTH_LEVELS: Final[int] = 10
#: Own order changes and executions kept; FIX messages kept.
ORDER_ROWS: Final[int] = 1 << 16
FIX_MESSAGES: Final[int] = 1 << 16

#: One book snapshot of ``DepthChanged``: levels best first, unused levels zero.
DEPTH_DTYPE: Final = np.dtype(
    [
        ("ts", "i8"),
        ("bid_px", "i8", (DEPTH_LEVELS,)),
        ("bid_qty", "i8", (DEPTH_LEVELS,)),
        ("ask_px", "i8", (DEPTH_LEVELS,)),
        ("ask_qty", "i8", (DEPTH_LEVELS,)),
    ]
)


class RowBuffer:
    """Append-only rows of one dtype, sorted by ``ts``, at most ``max_rows`` of them.

    When full, the oldest quarter goes (:attr:`dropped` counts them). A row older than the
    last one gets the last one's time (an engine clock stepping back must not unsort the
    rows the charts bisect). Readers get a consistent view from any thread: appends write
    beyond the rows handed out, and a move to a larger (or trimmed) array leaves earlier
    views intact. Rows are dropped in multiples of ``align`` (so that summaries of blocks of
    ``align`` rows stay aligned).

    The rows kept past a drop are copied to the next array ahead of time: from three quarters
    full on, each append also copies three times its rows there, so the drop itself only
    switches arrays (copying them all at once took 44 ms of one GUI batch at 2^20 rows).
    """

    def __init__(self, dtype: np.dtype[Any], max_rows: int, align: int = 1) -> None:
        if max_rows < 4:
            raise ValueError(f"a live buffer needs room for at least 4 rows, not {max_rows}")
        self.dtype = dtype
        self.max_rows = max_rows
        self.align = align
        self.dropped = 0
        self._state: tuple[Rows, int] = (np.empty(min(1024, max_rows), dtype), 0)
        #: The next array, the first row it starts from and the rows copied so far.
        self._next: tuple[Rows, int, int] | None = None

    def __len__(self) -> int:
        return self._state[1]

    @property
    def nbytes(self) -> int:
        """Return the memory the buffer holds (its capacity)."""
        return int(self._state[0].nbytes)

    def rows(self) -> Rows:
        """Return every row kept, oldest first (a view: do not write to it)."""
        arr, n = self._state
        return arr[:n]

    def last_ts(self) -> int | None:
        """Return the time of the newest row, ``None`` when empty."""
        arr, n = self._state
        return int(arr["ts"][n - 1]) if n else None

    def append(self, rows: Rows) -> None:
        """Add ``rows`` (time order) after the others, dropping the oldest beyond the limit."""
        k = int(rows.shape[0])
        if k == 0:
            return
        rows = rows[-self.max_rows :].copy()
        k = int(rows.shape[0])
        arr, n = self._state
        floor = int(arr["ts"][n - 1]) if n else np.iinfo(np.int64).min
        rows["ts"] = np.maximum.accumulate(np.maximum(rows["ts"], floor))
        if n + k <= min(arr.shape[0], self.max_rows):
            arr[n : n + k] = rows
            self._state = (arr, n + k)
            self._advance(3 * k)
            return
        if n + k <= self.max_rows:
            keep, cap = n, min(max(2 * arr.shape[0], n + k), self.max_rows)
        else:
            nxt = self._next
            if nxt is not None and n - nxt[1] + k <= self.max_rows:
                # Switch to the array prepared ahead: only the rows not yet copied move now.
                new, first, done = nxt
                new[done - first : n - first] = arr[done:n]
                new[n - first : n - first + k] = rows
                self._next = None
                self.dropped += first
                self._state = (new, n - first + k)
                return
            keep = max(0, min(n, self.max_rows * 3 // 4 - k, self.max_rows - k))
            keep = n - min(n, self._aligned(n - keep))
            cap = self.max_rows
        self._next = None
        new = np.empty(cap, self.dtype)
        new[:keep] = arr[n - keep : n]
        new[keep : keep + k] = rows
        self.dropped += n - keep
        self._state = (new, keep + k)

    def _advance(self, budget: int) -> None:
        """Copy up to ``budget`` kept rows to the next array (started at three quarters full)."""
        arr, n = self._state
        if arr.shape[0] < self.max_rows or n < self.max_rows * 3 // 4:
            return
        if self._next is None:
            first = min(n, self._aligned(self.max_rows // 4))
            self._next = (np.empty(self.max_rows, self.dtype), first, first)
        new, first, done = self._next
        upto = min(n, done + max(budget, 1024))
        if upto > done:
            new[done - first : upto - first] = arr[done:upto]
            self._next = (new, first, upto)

    def resize(self, max_rows: int) -> None:
        """Keep at most ``max_rows`` rows from now on (the newest, if fewer than held)."""
        if max_rows < 4:
            raise ValueError(f"a live buffer needs room for at least 4 rows, not {max_rows}")
        arr, n = self._state
        self.max_rows = max_rows
        self._next = None
        if n > max_rows:
            drop = min(n, self._aligned(n - max_rows))
            self._state = (arr[drop:n].copy(), n - drop)
            self.dropped += drop

    def drop_oldest(self, k: int) -> None:
        """Forget the ``k`` oldest rows (without copying the others)."""
        arr, n = self._state
        k = min(k, n)
        self._next = None
        self._state = (arr[k:], n - k)
        self.dropped += k

    def _aligned(self, k: int) -> int:
        return -(-k // self.align) * self.align


def _float(text: str, what: str) -> float:
    try:
        value = float(Decimal(text))
    except (InvalidOperation, ValueError):
        value = math.nan
    if not value > 0 or math.isinf(value):
        raise ValueError(f"{what} {text!r} is not a positive decimal")
    return value


class LiveSource:
    """A :class:`analyzer.source.DaySource` over one instrument's rows received so far.

    Parameters
    ----------
    symbol : str
        Instrument.
    tick_size, lot_size : float
        Price of one tick, size of one lot.
    t_created : int
        When the engine listed it (ns): the span of a source without rows.
    max_rows : int
        Rows kept per kind (see :class:`RowBuffer`).
    depth_label : str
        Where the depth comes from, as the depth ladder names it.
    """

    def __init__(
        self,
        symbol: str,
        tick_size: float,
        lot_size: float,
        t_created: int,
        max_rows: int,
        depth_label: str = "engine depth",
    ) -> None:
        self._symbol = symbol
        self.depth_label = depth_label
        self._tick = tick_size
        self._lot = lot_size
        self.t_created = t_created
        self.buffers: dict[str, RowBuffer] = {
            "bbo": RowBuffer(BBO_DTYPE, max_rows, BLOCK_ROWS),
            "trades": RowBuffer(TRADE_DTYPE, max_rows, BLOCK_ROWS),
        }
        self.depth = RowBuffer(DEPTH_DTYPE, DEPTH_ROWS)

    @property
    def symbol(self) -> str:
        """Instrument symbol."""
        return self._symbol

    @property
    def day(self) -> str:
        """UTC day ``YYYYMMDD`` of the first row (of the listing, before any)."""
        firsts = [int(b.rows()["ts"][0]) for b in self.buffers.values() if len(b)]
        return day_of(min(firsts) if firsts else self.t_created)

    @property
    def tick_size(self) -> float:
        """Price of one tick."""
        return self._tick

    @property
    def lot_size(self) -> float:
        """Size of one lot."""
        return self._lot

    def set_sizes(self, tick_size: float, lot_size: float) -> None:
        """Take the engine's (re-sent) tick and lot sizes."""
        self._tick, self._lot = tick_size, lot_size

    def counts(self) -> dict[str, int]:
        """Return the rows kept of every kind."""
        return {k: len(b) for k, b in self.buffers.items()}

    def read(self, kind: str, t0: int | None = None, t1: int | None = None) -> Rows:
        """Return the rows of ``kind`` with ``t0 <= ts <= t1``."""
        rows = self.buffers[kind].rows()
        i0 = 0 if t0 is None else int(np.searchsorted(rows["ts"], t0, side="left"))
        i1 = rows.shape[0] if t1 is None else int(np.searchsorted(rows["ts"], t1, side="right"))
        return rows[i0:i1]

    def read_rows(self, kind: str, i0: int, i1: int) -> Rows:
        """Return rows ``[i0, i1)`` of ``kind`` (numbered among the rows kept)."""
        return self.buffers[kind].rows()[i0:i1]

    def chunks(self, kind: str, rows: int = CHUNK_ROWS) -> Iterator[Rows]:
        """Yield the rows of ``kind`` ``rows`` at a time."""
        data = self.buffers[kind].rows()
        for i in range(0, data.shape[0], rows):
            yield data[i : i + rows]

    def stamp(self, kind: str) -> dict[str, int | str]:
        """Return the row count and last time of ``kind``."""
        b = self.buffers[kind]
        return {"rows": len(b), "last": b.last_ts() or 0}

    def cache_dir(self) -> Path | None:
        """Return ``None``: nothing of a live source is kept on disk."""
        return None


class BlockSummary:
    """Min and max of shown columns per block of :data:`BLOCK_ROWS` rows of a live buffer.

    Kept up to date as rows arrive (each row is summarized once); when the buffer drops its
    oldest rows the blocks are summarized again from the rows kept. A span of more rows than
    :data:`BLOCK_ROWS` times its pixels is drawn from the blocks, not the rows.
    """

    def __init__(self, kind: str, columns: tuple[str, ...]) -> None:
        self.kind = kind
        self.columns = columns
        fields = [("ts", "i8"), ("t_last", "i8")]
        fields += [(f"{c}_{e}", "f8") for c in columns for e in ("lo", "hi")]
        self.dtype = np.dtype(fields)
        #: Rows of the buffer the blocks cover (from its first row kept).
        self.rows_done = 0
        self._blocks = RowBuffer(self.dtype, 4)
        self._dropped = -1

    def blocks(self) -> Rows:
        """Return the blocks so far, oldest first."""
        return self._blocks.rows()

    def update(self, buf: RowBuffer, to_cols: Callable[[Rows], _Cols]) -> None:
        """Summarize the buffer's whole blocks not summarized yet."""
        room = max(4, buf.max_rows // BLOCK_ROWS + 2)
        gone = buf.dropped - self._dropped
        if gone and self._dropped >= 0 and gone % BLOCK_ROWS == 0 and gone <= self.rows_done:
            # The oldest whole blocks went (the buffer drops in multiples of BLOCK_ROWS).
            self._blocks.drop_oldest(gone // BLOCK_ROWS)
            self.rows_done -= gone
        elif gone:  # anything else: summarize the rows kept again
            self._blocks = RowBuffer(self.dtype, room)
            self.rows_done = 0
        self._dropped = buf.dropped
        if self._blocks.max_rows < room:
            self._blocks.resize(room)
        rows = buf.rows()
        full = rows.shape[0] - rows.shape[0] % BLOCK_ROWS
        if full <= self.rows_done:
            return
        part = rows[self.rows_done : full]
        k = part.shape[0] // BLOCK_ROWS
        cols = to_cols(part)
        out = np.empty(k, self.dtype)
        out["ts"] = part["ts"][::BLOCK_ROWS]
        out["t_last"] = part["ts"][BLOCK_ROWS - 1 :: BLOCK_ROWS]
        for c in self.columns:
            v = np.asarray(cols.values[c], np.float64).reshape(k, BLOCK_ROWS)
            out[f"{c}_lo"] = np.fmin.reduce(v, axis=1)
            out[f"{c}_hi"] = np.fmax.reduce(v, axis=1)
        self._blocks.append(out)
        self.rows_done = full


class LiveInstrument(InstrumentDay):
    """What the charts read of a live instrument: the rows received so far, growing.

    Drawn like a short stored day (every row at hand, nothing read from disk), with one
    difference: the last quote is in force until :attr:`now_ns`, the newest engine time
    the feed has seen, so the step lines reach the live edge. A span holding more rows than
    twice the chart's pixels is drawn as a per-pixel min/max envelope
    (:func:`pixel_envelope`), from the :class:`BlockSummary` of its rows once it holds a
    block per pixel: never more points than pixels, and no pass over a million rows per frame.
    """

    def __init__(self, source: LiveSource) -> None:
        super().__init__(source, None, None, gap_ns=MAX_GAP_NS)
        self.live = source
        #: Newest engine time seen on the stream (ns); the last quote holds until then.
        self.now_ns = source.t_created
        #: Whether a chart shows it (it then keeps :data:`CHART_ROWS` rows per kind).
        self.charted = False
        self.summaries = {
            "bbo": BlockSummary("bbo", ("bid", "ask")),
            "trades": BlockSummary("trades", ("px",)),
        }

    def on_rows(self) -> None:
        """Summarize rows that arrived (call after appending to the buffers)."""
        for kind, summary in self.summaries.items():
            summary.update(self.live.buffers[kind], functools.partial(self._cols, kind))

    def _envelope(
        self, kind: str, columns: tuple[str, ...], t0: int, t1: int, width: int
    ) -> tuple[I64, list[F64]]:
        """Return per-pixel min/max polylines of ``columns`` over ``[t0, t1]``.

        From the blocks when the span holds at least a block per pixel, else from the rows;
        the rows after the last whole block are added either way.
        """
        summary = self.summaries[kind]
        blocks, done = summary.blocks(), summary.rows_done
        rows = self.live.buffers[kind].rows()
        if blocks.shape[0] and self._count(kind, t0, t1) > BLOCK_ROWS * max(width, 1):
            b0 = int(np.searchsorted(blocks["t_last"], t0, side="left"))
            b1 = int(np.searchsorted(blocks["ts"], t1, side="right"))
            b = blocks[b0:b1]
            tail = rows[done:]
            tail = tail[(tail["ts"] >= t0) & (tail["ts"] <= t1)]
        else:
            b = blocks[:0]
            i0 = int(np.searchsorted(rows["ts"], t0, side="left"))
            i1 = int(np.searchsorted(rows["ts"], t1, side="right"))
            tail = rows[i0:i1]
        c = self._cols(kind, tail)
        x = np.empty(0, np.int64)
        ys: list[F64] = []
        for name in columns:
            bx, by = bin_columns(
                b["ts"], b["t_last"], b[f"{name}_lo"], b[f"{name}_hi"], t0, t1, width, self.gap_ns
            )
            v = np.asarray(c.values[name], np.float64)
            rx, ry = pixel_envelope(c.ts, v, t0, t1, width, self.gap_ns)
            x = np.concatenate([bx, rx])
            ys.append(np.concatenate([by, ry]))
        return x, ys

    def _cols(self, kind: str, rows: Rows) -> _Cols:
        return self._columns(kind, rows)

    # ------------------------------------------------------------------ shape
    @property
    def span(self) -> tuple[int, int]:
        """Return the first and last time of the rows kept (the listing time before any)."""
        lasts = [b.last_ts() for b in self.live.buffers.values()]
        firsts = [int(b.rows()["ts"][0]) for b in self.live.buffers.values() if len(b)]
        if not firsts:
            return (self.live.t_created, self.live.t_created)
        return min(firsts), max(t for t in lasts if t is not None)

    @property
    def nbytes(self) -> int:
        """Return the memory the buffers hold."""
        return sum(b.nbytes for b in self.live.buffers.values()) + self.live.depth.nbytes

    @property
    def shown_nbytes(self) -> int:
        """Return the size of the shown columns of the rows kept."""
        c = self.live.counts()
        return c["bbo"] * 5 * 8 + c["trades"] * (3 * 8 + 1)

    # ------------------------------------------------------------------ rows
    def rows(self, kind: str, t0: int, t1: int, *, margin: int = 1) -> _Cols:
        """Return the shown columns of ``kind`` in ``[t0, t1]`` plus ``margin`` rows either side."""
        rows = self.live.buffers[kind].rows()
        ts = rows["ts"]
        i0 = max(0, int(np.searchsorted(ts, t0, side="left")) - margin)
        i1 = min(rows.shape[0], int(np.searchsorted(ts, t1, side="right")) + margin)
        return self._cols(kind, rows[i0:i1])

    def _count(self, kind: str, t0: int, t1: int) -> int:
        ts = self.live.buffers[kind].rows()["ts"]
        return int(np.searchsorted(ts, t1, side="right") - np.searchsorted(ts, t0, side="left"))

    def has_rows(self, kind: str, t0: int, t1: int) -> bool:
        """Return ``True``: every row kept is in memory."""
        return True

    def needs_read(self, t0: int, t1: int, width: int) -> bool:
        """Return ``False``: nothing to read from disk."""
        return False

    def prefetch(self, t0: int, t1: int) -> None:
        """Do nothing: every row kept is in memory."""

    # ------------------------------------------------------------------ drawing
    def quote_lines(
        self, t0: int, t1: int, width: int, *, read: bool = True
    ) -> tuple[I64, F64, F64, bool]:
        """Return ``(x, bid, ask, exact)`` over ``[t0, t1]`` (see ``InstrumentDay``)."""
        if self._count("bbo", t0, t1) > 2 * max(width, 1):
            x, (bid, ask) = self._envelope("bbo", ("bid", "ask"), t0, t1, width)
            return x, bid, ask, False
        c = self.rows("bbo", t0, t1)
        x, bid = step(c.ts, c.values.get("bid", np.empty(0)), self.gap_ns)  # type: ignore[arg-type]
        _, ask = step(c.ts, c.values.get("ask", np.empty(0)), self.gap_ns)  # type: ignore[arg-type]
        if c.n and c.ts[-1] < min(t1, self.now_ns):
            # The last quote is still in force: hold it to the live edge.
            x = np.append(x, min(t1, self.now_ns))
            bid, ask = np.append(bid, bid[-1]), np.append(ask, ask[-1])
        return x, bid, ask, True

    def trade_marks(
        self, t0: int, t1: int, limit: int = MAX_MARKERS, *, read: bool = True
    ) -> _Cols | None:
        """Return the trades in ``[t0, t1]``, or ``None`` if more than ``limit``."""
        if self._count("trades", t0, t1) > limit:
            return None
        return self.rows("trades", t0, t1, margin=0)

    def trade_envelope(self, t0: int, t1: int, width: int, *, read: bool = True) -> tuple[I64, F64]:
        """Return the per-pixel min/max polyline of trade prices."""
        x, (px,) = self._envelope("trades", ("px",), t0, t1, width)
        return x, px

    # ------------------------------------------------------------------ instants
    def _last(self, kind: str, ts: int) -> _Cols | None:
        rows = self.live.buffers[kind].rows()
        i = int(np.searchsorted(rows["ts"], ts, side="right"))
        return self._cols(kind, rows[i - 1 : i]) if i else None

    def quote_at(self, ts: int) -> Quote:
        """Return the top of book and the last trade in force at ``ts``."""
        bid = bid_qty = ask = ask_qty = px = qty = math.nan
        side = 0
        q = self._last("bbo", ts)
        if q is not None:
            bid, bid_qty = float(q.values["bid"][0]), float(q.values["bid_qty"][0])
            ask, ask_qty = float(q.values["ask"][0]), float(q.values["ask_qty"][0])
        t = self._last("trades", ts)
        if t is not None:
            px, qty, side = (
                float(t.values["px"][0]),
                float(t.values["qty"][0]),
                int(t.values["side"][0]),
            )
        return Quote(ts, bid, bid_qty, ask, ask_qty, px, qty, side)

    def next_event(self, ts: int) -> int | None:
        """Return the time of the first quote or trade after ``ts`` (``None``: none yet)."""
        best: int | None = None
        for b in self.live.buffers.values():
            t = b.rows()["ts"]
            i = int(np.searchsorted(t, ts, side="right"))
            if i < t.shape[0]:
                best = int(t[i]) if best is None else min(best, int(t[i]))
        return best

    def depth_at(self, ts: int, levels: int = 10) -> Depth:
        """Return the engine's book at ``ts`` (its last ``DepthChanged`` by then).

        Before the first snapshot, or past its levels, the top of book is all there is.
        """
        rows = self.live.depth.rows()
        i = int(np.searchsorted(rows["ts"], ts, side="right"))
        if i == 0:
            q = self.quote_at(ts)
            tick, lot = self.live.tick_size, self.live.lot_size
            bids = [] if math.isnan(q.bid) else [(round(q.bid / tick), round(q.bid_qty / lot))]
            asks = [] if math.isnan(q.ask) else [(round(q.ask / tick), round(q.ask_qty / lot))]
            return Depth(ts, bids, asks, "bbo")
        r = rows[i - 1]
        n = min(levels, DEPTH_LEVELS)
        bids = [
            (int(p), int(v)) for p, v in zip(r["bid_px"][:n], r["bid_qty"][:n], strict=True) if v
        ]
        asks = [
            (int(p), int(v)) for p, v in zip(r["ask_px"][:n], r["ask_qty"][:n], strict=True) if v
        ]
        return Depth(ts, bids, asks, self.live.depth_label)

    # ------------------------------------------------------------------ statistics
    def range_stats(self, t0: int, t1: int) -> RangeStats:
        """Return the statistics of ``[t0, t1]`` over the rows kept."""
        t = self.rows("trades", t0, t1, margin=0)
        trades = (
            trade_sums(t.values["px"], t.values["qty"], t.values["side"])  # type: ignore[arg-type]
            if t.n
            else TradeSums()
        )
        q = self.rows("bbo", t0, t1, margin=0)
        spread = spread_sums(q.values["bid"], q.values["ask"]) if q.n else SpreadSums()  # type: ignore[arg-type]
        return RangeStats(self.symbol, t0, t1, trades.trades + spread.quotes, trades, spread)


@dataclass(slots=True)
class LiveOrders:
    """Own orders, executions and FIX messages of the stream, as an :class:`Overlay`.

    Rows are the journal post-trade's (``ORDER_EVENT_DTYPE``, ``EXECUTION_DTYPE``), so the
    overlay draws and explains live orders as it does a journal's.
    """

    max_rows: int = ORDER_ROWS
    max_fix: int = FIX_MESSAGES
    symbols: dict[str, int] = field(default_factory=dict)
    events: RowBuffer = field(init=False)
    fills: RowBuffer = field(init=False)
    exec_ids: deque[str] = field(default_factory=deque)
    client_order_ids: dict[int, str] = field(default_factory=dict)
    fix: deque[FixMessageRecord] = field(init=False)
    #: Bumped by every change; :meth:`overlay` is rebuilt only after one.
    version: int = 0
    _built: tuple[int, Overlay] | None = None

    def __post_init__(self) -> None:
        self.events = RowBuffer(ORDER_EVENT_DTYPE, self.max_rows)
        self.fills = RowBuffer(EXECUTION_DTYPE, self.max_rows)
        self.fix = deque(maxlen=self.max_fix)

    def _instrument(self, symbol: str) -> int:
        return self.symbols.setdefault(symbol, len(self.symbols))

    def add(
        self,
        changes: Sequence[tuple[int, OrderChanged]],
        fills: Sequence[tuple[int, OrderFilled]],
        fix: Sequence[FixMessageSeen],
    ) -> None:
        """Add one batch of the stream: order changes and fills with their sequence numbers."""
        if changes:
            rows = np.zeros(len(changes), ORDER_EVENT_DTYPE)
            values = []
            for seq, ev in changes:
                o = ev.order
                self.client_order_ids[o.order_id] = o.client_order_id
                values.append(
                    (
                        ev.ts_event, seq, o.order_id, o.px_ticks, o.qty_lots, o.cum_qty_lots,
                        o.leaves_qty_lots, o.avg_px_ticks, o.strategy_id,
                        self._instrument(o.symbol), int(o.side), int(o.ord_type),
                        int(o.time_in_force), int(o.status),
                    )
                )  # fmt: skip
            rows[:] = values
            self.events.append(rows)
        if fills:
            rows = np.zeros(len(fills), EXECUTION_DTYPE)
            rows[:] = [
                (
                    f.ts_event, f.ts_recv, seq, f.order_id, f.last_px_ticks, f.last_qty_lots,
                    f.leaves_qty_lots, f.strategy_id, self._instrument(f.symbol), int(f.side),
                )
                for seq, f in fills
            ]  # fmt: skip
            self.fills.append(rows)
            self.exec_ids.extend(f.exec_id for _, f in fills)
            while len(self.exec_ids) > len(self.fills):  # the buffer kept the newest
                self.exec_ids.popleft()
        for m in fix:
            self.fix.append(
                FixMessageRecord(
                    session_id=m.session_id,
                    direction=FixDirection.OUTBOUND if m.outbound else FixDirection.INBOUND,
                    raw=m.raw,
                    ts_created=m.ts_created,
                    ts_wire=m.ts_wire,
                    ts_handled=m.ts_event,
                )
            )
        if changes or fills or fix:
            self.version += 1

    def overlay(self) -> Overlay:
        """Return the orders and executions so far as an overlay (rebuilt after a change).

        Its FIX chains are indexed when first asked for (a click), not here.
        """
        if self._built is not None and self._built[0] == self.version:
            return self._built[1]
        # Views, not copies: rows handed out are never written again (RowBuffer).
        fills = self.fills.rows()
        day = TradeDay(
            orders=np.zeros(0, JOURNAL_ORDER_DTYPE),
            order_events=self.events.rows(),
            executions=fills,
            symbols=tuple(self.symbols),
            client_order_ids=dict(self.client_order_ids),
            exec_ids=tuple(self.exec_ids)[-fills.shape[0] :] if fills.shape[0] else (),
        )
        ov = Overlay(day, list(self.fix))
        self._built = (self.version, ov)
        return ov


@dataclass(frozen=True, slots=True)
class LiveUpdate:
    """What one batch of events changed."""

    symbols: frozenset[str]  # instruments with new quotes, trades or depth
    orders: bool  # own orders, fills or FIX messages arrived
    added: tuple[str, ...]  # instruments listed for the first time


@dataclass(slots=True)
class _Batch:
    """One batch of the stream sorted by what it feeds."""

    quotes: dict[str, list[tuple[int, ...]]] = field(default_factory=dict)
    trades: dict[str, list[tuple[int, ...]]] = field(default_factory=dict)
    depth: dict[str, list[DepthChanged]] = field(default_factory=dict)
    changes: list[tuple[int, OrderChanged]] = field(default_factory=list)
    fills: list[tuple[int, OrderFilled]] = field(default_factory=list)
    fix: list[FixMessageSeen] = field(default_factory=list)
    now: int = 0

    def sort(self, records: Sequence[EventRecord]) -> list[InstrumentAdded]:
        """Sort ``records`` into the lists; return the instrument listings among them."""
        listed: list[InstrumentAdded] = []
        for rec in records:
            ev = rec.event
            self.now = max(self.now, ev.ts_event)
            if isinstance(ev, BookUpdated):
                self.quotes.setdefault(ev.symbol, []).append(
                    (
                        ev.ts_event,
                        ev.ts_event,
                        ev.bid_px_ticks,
                        ev.bid_qty_lots,
                        ev.ask_px_ticks,
                        ev.ask_qty_lots,
                        rec.seq,
                    )
                )
            elif isinstance(ev, TradeReported):
                side = int(ev.aggressor) if ev.aggressor is not None else 0
                self.trades.setdefault(ev.symbol, []).append(
                    (ev.ts_event, ev.ts_event, ev.px_ticks, ev.qty_lots, -1, side)
                )
            elif isinstance(ev, DepthChanged):
                self.depth.setdefault(ev.symbol, []).append(ev)
            elif isinstance(ev, OrderChanged):
                self.changes.append((rec.seq, ev))
            elif isinstance(ev, OrderFilled):
                self.fills.append((rec.seq, ev))
            elif isinstance(ev, FixMessageSeen):
                self.fix.append(ev)
            elif isinstance(ev, InstrumentAdded):
                listed.append(ev)
        return listed


class LiveFeed:
    """One engine's event stream as live instrument-days and an own-order overlay.

    Parameters
    ----------
    engine : str
        The engine's name (``EngineClient.name``): the browser's ``store`` column.
    chart_rows, idle_rows : int
        Rows per kind kept of a charted instrument and of one nobody charts.
    depth_label : str
        Where its depth comes from, as the depth ladder names it (a relay's feed says so).
    """

    def __init__(
        self,
        engine: str,
        *,
        chart_rows: int = CHART_ROWS,
        idle_rows: int = IDLE_ROWS,
        depth_label: str = "engine depth",
    ) -> None:
        self.engine = engine
        self.depth_label = depth_label
        self.chart_rows = chart_rows
        self.idle_rows = idle_rows
        self.instruments: dict[str, LiveInstrument] = {}
        self.orders = LiveOrders()
        #: Newest engine time seen (ns), 0 before the first event.
        self.now_ns = 0
        #: Market data events of instruments the engine never listed (dropped).
        self.unknown = 0
        #: Events taken so far.
        self.events = 0

    @property
    def store(self) -> str:
        """Return the ``DayEntry.store`` of this engine's instruments."""
        return LIVE_PREFIX + self.engine

    def on_events(self, records: Sequence[EventRecord]) -> LiveUpdate:
        """Take one batch of the stream (oldest first); return what changed."""
        b = _Batch()
        added = [ev.symbol for ev in b.sort(records) if self._add(ev)]
        self.events += len(records)
        self.now_ns = max(self.now_ns, b.now)
        touched: set[str] = set()
        for kind, per in (("bbo", b.quotes), ("trades", b.trades)):
            dtype = BBO_DTYPE if kind == "bbo" else TRADE_DTYPE
            for symbol, values in per.items():
                inst = self.instruments.get(symbol)
                if inst is None:
                    self.unknown += len(values)
                    continue
                rows = np.zeros(len(values), dtype)
                rows[:] = values
                inst.live.buffers[kind].append(rows)
                touched.add(symbol)
        for symbol in touched:
            self.instruments[symbol].on_rows()
        for symbol, evs in b.depth.items():
            inst = self.instruments.get(symbol)
            if inst is None:
                self.unknown += len(evs)
                continue
            inst.live.depth.append(_depth_rows(evs))
            touched.add(symbol)
        for inst in self.instruments.values():
            inst.now_ns = max(inst.now_ns, self.now_ns)
        self.orders.add(b.changes, b.fills, b.fix)
        return LiveUpdate(frozenset(touched), bool(b.changes or b.fills or b.fix), tuple(added))

    def _add(self, ev: InstrumentAdded) -> bool:
        tick = _float(ev.tick_size, f"{ev.symbol}: tick size")
        lot = _float(ev.lot_size, f"{ev.symbol}: lot size")
        inst = self.instruments.get(ev.symbol)
        if inst is not None:  # listed again (a snapshot after a gap): keep the rows
            inst.live.set_sizes(tick, lot)
            return False
        source = LiveSource(ev.symbol, tick, lot, ev.ts_event, self.idle_rows, self.depth_label)
        self.instruments[ev.symbol] = LiveInstrument(source)
        return True

    def chart(self, symbol: str) -> LiveInstrument:
        """Return ``symbol``'s live instrument, keeping :attr:`chart_rows` rows from now on."""
        try:
            inst = self.instruments[symbol]
        except KeyError:
            raise KeyError(f"{symbol}: the engine {self.engine} does not list it") from None
        inst.charted = True
        for b in inst.live.buffers.values():
            b.resize(max(b.max_rows, self.chart_rows))
        return inst

    def entries(self) -> list[DayEntry]:
        """Return one browser row per instrument: rows kept and their time span."""
        out = []
        for symbol, inst in sorted(self.instruments.items()):
            counts = inst.live.counts()
            counts["l2"] = len(inst.live.depth)
            has_rows = counts["bbo"] or counts["trades"]
            t0, t1 = inst.span if has_rows else (0, 0)
            out.append(DayEntry(symbol, inst.live.day, counts, t0, t1, self.store))
        return out


def _depth_rows(events: Sequence[DepthChanged]) -> Rows:
    rows = np.zeros(len(events), DEPTH_DTYPE)
    for i, ev in enumerate(events):
        r = rows[i]
        r["ts"] = ev.ts_event
        for side, levels in (("bid", ev.bids), ("ask", ev.asks)):
            lv = levels[:DEPTH_LEVELS]
            if lv:
                px, qty = zip(*lv, strict=True)
                r[f"{side}_px"][: len(lv)] = px
                r[f"{side}_qty"][: len(lv)] = qty
    return rows
