# SPDX-License-Identifier: MIT
"""Market data: batches of L2 events become books, BookUpdated and TradeReported events."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import marketdata
from engine.bus import MessageBus
from engine.clock import TestClock
from engine.enums import Side
from engine.events import BookUpdated, Event, TradeReported
from engine.marketdata import MarketData
from engine.types import BUY, L2_EVENT_DTYPE, L2_SET, L2_TRADE, SELL


def rows(*items: tuple[int, int, int, int, int]) -> np.ndarray:
    out = np.zeros(len(items), L2_EVENT_DTYPE)
    for i, (book, side, px, qty, kind) in enumerate(items):
        out[i] = (1000 + i, px, qty, book, side, kind)
    return out


#: Rows of two books: (book, side, px offset, qty, kind, ts or 0), a third of them trades.
_ROWS = st.lists(
    st.tuples(
        st.integers(0, 1),
        st.sampled_from([BUY, SELL]),
        st.integers(-20, 20),
        st.integers(0, 9),
        st.sampled_from([L2_SET, L2_SET, L2_TRADE]),
        st.sampled_from([0, 5]),
    ),
    min_size=1,
    max_size=40,
)


def make() -> tuple[MarketData, list[Event]]:
    bus = MessageBus()
    events: list[Event] = []
    bus.subscribe(Event, events.append)
    return MarketData(["ESZ6", "NQZ6"], bus, TestClock(), n_levels=64, centres=[100, 500]), events


def test_batch_builds_books_and_publishes_one_update_per_touched_book() -> None:
    md, events = make()
    md.apply(
        rows(
            (0, BUY, 99, 5, L2_SET),
            (0, SELL, 101, 7, L2_SET),
            (1, BUY, 499, 1, L2_SET),
            (0, BUY, 100, 2, L2_SET),
            (0, SELL, 101, 3, L2_TRADE),
        )
    )
    es = md.book("ESZ6")
    assert es is not None
    assert es.best_bid() == (100, 2)
    assert es.best_ask() == (101, 7)
    assert es.depth_at(Side.BUY, 99) == 5
    updates = [e for e in events if isinstance(e, BookUpdated)]
    assert [(u.symbol, u.bid_px_ticks, u.ask_px_ticks) for u in updates] == [
        ("NQZ6", 499, 0),
        ("ESZ6", 100, 101),
    ]
    trades = [e for e in events if isinstance(e, TradeReported)]
    assert [(t.symbol, t.px_ticks, t.qty_lots, t.aggressor) for t in trades] == [
        ("ESZ6", 101, 3, Side.SELL)
    ]
    assert md.reference_px("ESZ6") == 101  # the last trade
    assert md.reference_px("NQZ6") is None  # one-sided, never traded
    bids, asks = es.top(2)
    assert bids.tolist() == [[100, 2], [99, 5]]
    assert asks.tolist() == [[101, 7]]


def test_bad_rows_are_refused_before_anything_is_applied() -> None:
    md, events = make()
    bad = rows((0, BUY, 99, 5, L2_SET), (2, BUY, 99, 5, L2_SET))
    with pytest.raises(ValueError, match="book"):
        md.apply(bad)
    assert md.book("ESZ6").best_bid() is None  # type: ignore[union-attr]
    assert events == []
    with pytest.raises(ValueError, match="symbols must be unique"):
        MarketData(["A", "A"], MessageBus(), TestClock())


@pytest.mark.parametrize("track_queue", [False, True])
@settings(max_examples=60, deadline=None)
@given(batch=_ROWS)
def test_small_batches_row_by_row_give_the_events_of_the_array_path(
    track_queue: bool, batch: list[tuple[int, ...]]
) -> None:
    # Batches up to SMALL_BATCH rows go row by row in Python; every size must give the same
    # books and the same events, in the same order, as the array path.
    got = []
    for small in (0, 1_000):
        md, events = make()
        if track_queue:
            md.track_queue()
        arr = np.zeros(len(batch), L2_EVENT_DTYPE)
        for i, (book, side, dpx, qty, kind, ts) in enumerate(batch):
            arr[i] = (ts and 1000 + i, (100, 500)[book] + dpx, qty, book, side, kind)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(marketdata, "SMALL_BATCH", small)
            md.apply(arr)
        got.append((events, [md.books.top(b, 5)[0].tolist() for b in (0, 1)], md.last_trade_px))
    assert got[0] == got[1]


_DTYPE_SPEC = {
    "names": list(L2_EVENT_DTYPE.names or ()),
    "formats": [L2_EVENT_DTYPE.fields[n][0] for n in L2_EVENT_DTYPE.names or ()],
    "offsets": [L2_EVENT_DTYPE.fields[n][1] for n in L2_EVENT_DTYPE.names or ()],
    "itemsize": L2_EVENT_DTYPE.itemsize,
}


@pytest.mark.parametrize("listening", [True, False])
@settings(max_examples=60, deadline=None)
@given(batch=_ROWS)
def test_rows_that_come_alone_give_the_events_of_the_batch_path(
    listening: bool, batch: list[tuple[int, ...]]
) -> None:
    # A lone row takes its own path (one kernel call, touch and kind from the kernel): the
    # books, events, trade prices and book times must be those of the same rows as a batch.
    got = []
    for alone in (False, True):
        bus = MessageBus()
        events: list[Event] = []
        if listening:
            bus.subscribe(Event, events.append)
        clock = TestClock()
        md = MarketData(["ESZ6", "NQZ6"], bus, clock, n_levels=64, centres=[100, 500])
        arr = np.zeros(len(batch), L2_EVENT_DTYPE)
        for i, (book, side, dpx, qty, kind, ts) in enumerate(batch):
            arr[i] = (ts and 1000 + i, (100, 500)[book] + dpx, qty, book, side, kind)
        # An equal dtype that is not the engine's object takes the path of batches.
        equal = np.dtype(_DTYPE_SPEC)  # type: ignore[call-overload]
        assert equal == L2_EVENT_DTYPE
        assert equal is not L2_EVENT_DTYPE
        for i in range(len(arr)):
            row = arr[i : i + 1]
            assert md.apply(row if alone else row.view(equal)) == 1
        got.append((events, [md.books.top(b, 5)[0].tolist() for b in (0, 1)], md.last_trade_px))
    assert got[0] == got[1]


def test_a_bad_row_alone_is_refused_naming_the_field_and_nothing_applied() -> None:
    md, events = make()
    bad = rows((0, BUY, 100, -3, L2_SET))
    with pytest.raises(ValueError, match="qty"):
        md.apply(bad)
    assert md.books.best_bid(0) is None
    assert events == []


def test_the_book_view_reads_the_touch_the_books_hold() -> None:
    md = MarketData(["ESZ6", "NQZ6"], MessageBus(), TestClock(), n_levels=64, centres=[100, 500])
    view = md.book("NQZ6")
    assert view is not None
    assert view.best_bid() is None  # empty sides
    assert view.best_ask() is None
    rng = np.random.default_rng(7)
    for _ in range(300):
        row = np.zeros(1, L2_EVENT_DTYPE)
        side = BUY if rng.random() < 0.5 else SELL
        row["book"], row["side"], row["kind"] = 1, side, L2_SET
        row["px"] = 500 + (-int(rng.integers(1, 20)) if side == BUY else int(rng.integers(1, 20)))
        row["qty"] = int(rng.integers(0, 4))  # 0 deletes the level: sides empty now and then
        md.apply(row)
        assert view.best_bid() == md.books.best_bid(1)
        assert view.best_ask() == md.books.best_ask(1)
    assert md.book("ESZ6").best_bid() is None  # type: ignore[union-attr]  # the other book


def test_the_book_view_follows_the_window_when_the_books_recentre() -> None:
    # Prices walk far beyond the 32-tick window: the books move it (their base changes); the
    # view, reading the books' memory, answers as the books do after every row.
    md = MarketData(["ESZ6"], MessageBus(), TestClock(), n_levels=32, centres=[1_000])
    view = md.book("ESZ6")
    assert view is not None
    rng = np.random.default_rng(11)
    mid = 1_000
    for _ in range(400):
        mid += int(rng.integers(-6, 7))
        row = np.zeros(1, L2_EVENT_DTYPE)
        side = BUY if rng.random() < 0.5 else SELL
        row["side"], row["kind"] = side, L2_SET
        row["px"] = mid - int(rng.integers(1, 4)) if side == BUY else mid + int(rng.integers(1, 4))
        row["qty"] = int(rng.integers(0, 4))
        md.apply(row)
        assert view.best_bid() == md.books.best_bid(0)
        assert view.best_ask() == md.books.best_ask(0)
    assert md.books.recentres(0) > 0
