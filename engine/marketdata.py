# SPDX-License-Identifier: MIT
"""In-process market data: the L2 books of the engine's instruments and their events.

:class:`MarketData` applies batches of ``L2_EVENT_DTYPE`` rows (from a FIX market-data
session, the exchange simulator or a recorded day) to one :class:`engine.book.l2.L2Books`, then
publishes one :class:`engine.events.BookUpdated` per book that changed and one
:class:`engine.events.TradeReported` per trade — the events strategies and the console follow.
"""

import itertools

import numpy as np
import numpy.typing as npt

from engine.book.l2 import L2Books
from engine.bus import MessageBus
from engine.clock import Clock
from engine.enums import Side
from engine.events import BookUpdated, TradeReported, fast_constructor
from engine.matching.models import ConservativeQueue, QueueModel
from engine.matching.queue import L2QueuePositions
from engine.types import (
    ASK_SIDE,
    BID_SIDE,
    BUY,
    L2_EVENT_DTYPE,
    L2_TRADE,
    L2S_ASK,
    L2S_BASE,
    L2S_BID,
    SELL,
)

I64 = npt.NDArray[np.int64]

#: Batches up to this many rows are handled row by row in Python (cheaper than numpy calls).
SMALL_BATCH = 32

#: Built per book update: the fast constructor (engine.events.fast_constructor).
_book_updated = fast_constructor(BookUpdated)
_book_updated_of = fast_constructor(BookUpdated, positional=True)  # a tick's, in field order


class L2BookView:
    """Read-only :class:`engine.strategy.base.BookView` of one book of an :class:`L2Books`.

    The touch is read straight from the books' arrays (memoryviews of their read-only views,
    which follow every update: an element of a memoryview is a quarter of the cost of
    ``ndarray.item``): a strategy asks for it on every book update.
    """

    __slots__ = ("_books", "_index", "_levels", "_n", "_state", "_symbol")

    def __init__(self, books: L2Books, index: int, symbol: str) -> None:
        self._books = books
        self._index = index
        self._symbol = symbol
        self._levels = books.levels.data  # int64[book, side, level], read-only
        self._state = books.state.data  # int64[book, L2S_*], read-only
        self._n = books.n_levels

    @property
    def symbol(self) -> str:
        """Return the instrument's symbol."""
        return self._symbol

    def best_bid(self) -> tuple[int, int] | None:
        """Return ``(px_ticks, qty_lots)`` of the best bid, or ``None``."""
        st, b = self._state, self._index
        i: int = st[b, L2S_BID]
        if i < 0:
            return None
        return st[b, L2S_BASE] + i, self._levels[b, BID_SIDE, i]

    def best_ask(self) -> tuple[int, int] | None:
        """Return ``(px_ticks, qty_lots)`` of the best ask, or ``None``."""
        st, b = self._state, self._index
        i: int = st[b, L2S_ASK]
        if i >= self._n:
            return None
        return st[b, L2S_BASE] + i, self._levels[b, ASK_SIDE, i]

    def depth_at(self, side: Side, px_ticks: int) -> int:
        """Return the size in lots at a price on one side."""
        return self._books.depth_at(self._index, int(side), px_ticks)

    def top(self, depth: int) -> tuple[I64, I64]:
        """Return the best ``depth`` levels as ``(bids, asks)`` of (px_ticks, qty_lots) rows."""
        return self._books.top(self._index, depth)


class MarketData:
    """The books of a fixed set of instruments, fed in batches.

    Parameters
    ----------
    symbols : list[str]
        Instruments; book ``i`` of every event batch is ``symbols[i]``.
    bus : MessageBus
        Where ``BookUpdated`` and ``TradeReported`` go.
    clock : Clock
        Receive-time source.
    n_levels : int
        Width of each book's price window, in ticks per side.
    centres : list[int] | None
        Initial window centre of each book, ticks.
    """

    def __init__(
        self,
        symbols: list[str],
        bus: MessageBus,
        clock: Clock,
        *,
        n_levels: int = 2000,
        centres: list[int] | None = None,
    ) -> None:
        if len(set(symbols)) != len(symbols):
            raise ValueError(f"symbols must be unique, got {symbols}")
        self.symbols = list(symbols)
        self.index = {s: i for i, s in enumerate(symbols)}
        self.bus = bus
        self.clock = clock
        self.books = L2Books(len(symbols), n_levels, centres if centres is not None else 0)
        self.views = {s: L2BookView(self.books, i, s) for s, i in self.index.items()}
        self.last_trade_px: dict[str, int] = {}
        self._bbo = np.zeros((0, 4), np.int64)
        self._touch = np.zeros((1, 4), np.int64)  # a lone row's book touch after it
        self._touch_row = self._touch[0]
        self._apply_row = self.books.row_applier(self._touch)
        self._wants = bus.wants  # (the bus is this object's for its life)
        self._book_updated = bus.interest(BookUpdated)  # .wanted: wants(BookUpdated), current
        self._publish_event = bus.publish
        self.queue: L2QueuePositions | None = None
        self._queue_keys = itertools.count(1)
        self._queue_key: dict[int, int] = {}  # caller's id -> tracker key (ids never reused)

    # ------------------------------------------------------------------ own orders
    def track_queue(self, model: QueueModel | None = None) -> None:
        """Estimate the queue position of own orders with ``model`` (conservative default).

        The same :class:`engine.matching.queue.L2QueuePositions` the backtester uses; from now
        on every batch goes through it.
        """
        # Compacting: a day of own orders must not grow the tracker (issue 16).
        self.queue = L2QueuePositions(self.books, model or ConservativeQueue(), compact=True)

    def add_own(self, own_id: int, symbol: str, side: Side, px_ticks: int, qty_lots: int) -> None:
        """Start estimating the queue position of an own order resting at ``px_ticks``."""
        if self.queue is None or symbol not in self.index:
            return
        self.remove_own(own_id)
        key = next(self._queue_keys)
        self._queue_key[own_id] = key
        self.queue.add(
            key, self.index[symbol], int(side), px_ticks, qty_lots, ts=self.clock.now_ns()
        )

    def remove_own(self, own_id: int) -> None:
        """Stop estimating an own order's queue position (canceled, filled or moved)."""
        key = self._queue_key.pop(own_id, None)
        if key is not None and self.queue is not None:
            self.queue.cancel(key, self.clock.now_ns())

    def ahead(self, own_id: int) -> float | None:
        """Return the estimated lots ahead of an own order, or ``None`` if not tracked."""
        key = self._queue_key.get(own_id)
        if key is None or self.queue is None:
            return None
        return self.queue.ahead(key)

    def book(self, symbol: str) -> L2BookView | None:
        """Return the view of ``symbol``'s book, or ``None`` if it is not followed here."""
        return self.views.get(symbol)

    def reference_px(self, symbol: str) -> int | None:
        """Return the last trade price, else the mid of the touch, else ``None``."""
        if symbol in self.last_trade_px:
            return self.last_trade_px[symbol]
        view = self.views.get(symbol)
        if view is None:
            return None
        bid, ask = view.best_bid(), view.best_ask()
        if bid and ask:
            return (bid[0] + ask[0]) // 2
        return None

    def apply(self, events: npt.NDArray[np.void]) -> int:
        """Apply a batch of ``L2_EVENT_DTYPE`` rows and publish the resulting events.

        Returns the number of rows applied. Raises ``ValueError`` naming row and field for bad
        input, before anything is applied.
        """
        dtype = events.dtype
        n = events.shape[0]
        if n == 1 and dtype is L2_EVENT_DTYPE and self.queue is None:
            # A row that comes alone (a tick): one kernel call, the touch and the row's kind
            # from one small array; the row itself is read only for a trade or an event.
            kind = self._apply_row(events)
            if kind == L2_TRADE or self._book_updated.wanted:
                self._one_row_events(events, kind != L2_TRADE)  # (a trade asks again)
            return 1
        if dtype is not L2_EVENT_DTYPE and dtype != L2_EVENT_DTYPE:
            raise ValueError(f"events: dtype must be L2_EVENT_DTYPE, got {dtype}")
        if n == 0:
            return 0
        if self._bbo.shape[0] < n:
            self._bbo = np.zeros((max(n, 2 * self._bbo.shape[0]), 4), np.int64)
        bbo = self._bbo[:n]
        if n <= SMALL_BATCH:
            # A tick or a FIX message's worth: rows as Python tuples beat numpy calls per row.
            return self._apply_small(events, bbo)
        if self.queue is not None:
            self.queue.apply(events)  # books and own-order queues, one pass
            applied = n
            for b in np.unique(events["book"]):
                bid, ask = self.books.best_bid(int(b)), self.books.best_ask(int(b))
                last = int(np.flatnonzero(events["book"] == b)[-1])
                bbo[last] = (*(bid or (0, 0)), *(ask or (0, 0)))
        else:
            applied = self.books.apply(events, bbo)
        ts_recv = self.clock.now_ns()
        kinds, books = events["kind"], events["book"]
        for i in np.flatnonzero(kinds == L2_TRADE):
            self._publish_trade(
                int(events["ts"][i]) or ts_recv,
                int(books[i]),
                int(events["px"][i]),
                int(events["qty"][i]),
                int(events["side"][i]),
            )
        if not self.bus.wants(BookUpdated):  # nobody listens: build no event
            return int(applied)
        # One BookUpdated per touched book, with its touch after the last row of the batch.
        _, last_rows = np.unique(books[::-1], return_index=True)
        for j in sorted(n - 1 - last_rows):
            bid_px, bid_qty, ask_px, ask_qty = bbo[j].tolist()
            self.bus.publish(
                _book_updated(
                    ts_event=int(events["ts"][j]) or ts_recv,
                    symbol=self.symbols[int(books[j])],
                    bid_px_ticks=bid_px,
                    bid_qty_lots=bid_qty,
                    ask_px_ticks=ask_px,
                    ask_qty_lots=ask_qty,
                )
            )
        return int(applied)

    def _one_row_events(self, events: npt.NDArray[np.void], wanted: bool) -> None:
        # The events of a lone row apply() took: its trade, then its BookUpdated if wanted
        # (``wanted``: someone listened to BookUpdated when apply() asked).
        bid_px, bid_qty, ask_px, ask_qty = self._touch_row.tolist()
        ts, px, qty, book, side, kind = events.item(0)
        ts = ts or self.clock.now_ns()
        if kind == L2_TRADE:
            self._publish_trade(ts, book, px, qty, side)
            wanted = self._wants(BookUpdated)  # (a TradeReported handler may have subscribed)
        if wanted:
            # BookUpdated(ts_event, symbol, bid px, bid qty, ask px, ask qty), positionally.
            self._publish_event(
                _book_updated_of(ts, self.symbols[book], bid_px, bid_qty, ask_px, ask_qty)
            )

    def _apply_small(self, events: npt.NDArray[np.void], bbo: I64) -> int:
        # apply() for a few rows: the same books, events and order of events.
        books = self.books
        if self.queue is not None:
            self.queue.apply(events)
            applied = events.shape[0]
        else:
            applied = books.apply(events, bbo)
        ts_recv = self.clock.now_ns()
        rows = events.tolist()  # (ts, px, qty, book, side, kind) per row
        last: dict[int, int] = {}  # book -> its last row
        for i, (ts, px, qty, book, side, kind) in enumerate(rows):
            last[book] = i
            if kind == L2_TRADE:
                self._publish_trade(ts or ts_recv, book, px, qty, side)
        if not self.bus.wants(BookUpdated):  # nobody listens: build no event
            return int(applied)
        for j in sorted(last.values()):
            book = rows[j][3]
            if self.queue is not None:
                bid, ask = books.best_bid(book), books.best_ask(book)
                bid_px, bid_qty = bid or (0, 0)
                ask_px, ask_qty = ask or (0, 0)
            else:
                bid_px, bid_qty, ask_px, ask_qty = bbo[j].tolist()
            self.bus.publish(
                _book_updated(
                    ts_event=rows[j][0] or ts_recv,
                    symbol=self.symbols[book],
                    bid_px_ticks=bid_px,
                    bid_qty_lots=bid_qty,
                    ask_px_ticks=ask_px,
                    ask_qty_lots=ask_qty,
                )
            )
        return int(applied)

    def _publish_trade(self, ts: int, book: int, px: int, qty: int, side: int) -> None:
        symbol = self.symbols[book]
        self.last_trade_px[symbol] = px
        if not self.bus.wants(TradeReported):
            return
        aggressor = Side.BUY if side == BUY else Side.SELL if side == SELL else None
        self.bus.publish(
            TradeReported(
                ts_event=ts, symbol=symbol, px_ticks=px, qty_lots=qty, aggressor=aggressor
            )
        )
