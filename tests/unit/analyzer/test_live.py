# SPDX-License-Identifier: MIT
"""Live engine data for the Analyzer (no Qt): bounded buffers, envelopes, the event feed.

The events are the engine's own dataclasses, built as the engine would publish them.
"""

import math

import numpy as np
import pytest

from analyzer.live import (
    LIVE_PREFIX,
    LiveFeed,
    RowBuffer,
    pixel_envelope,
)
from engine.enums import OrdStatus, OrdType, Side, TimeInForce
from engine.events import (
    BookUpdated,
    DepthChanged,
    EventRecord,
    FixMessageSeen,
    InstrumentAdded,
    OrderChanged,
    OrderFilled,
    OrderView,
    TradeReported,
)
from engine.tickstore.schema import BBO_DTYPE
from engine.types import BUY, SELL

T0 = 1_790_000_000_000_000_000
MS = 1_000_000


def _bbo(ts: list[int]) -> np.ndarray:
    rows = np.zeros(len(ts), BBO_DTYPE)
    rows["ts"] = ts
    rows["bid_px"] = np.arange(len(ts)) + 100
    return rows


def test_row_buffer_over_its_limit_keeps_the_newest_rows_and_earlier_views() -> None:
    buf = RowBuffer(BBO_DTYPE, 100)
    buf.append(_bbo(list(range(0, 60))))
    held = buf.rows()
    held_copy = held.copy()
    for start in range(60, 1020, 30):
        buf.append(_bbo(list(range(start, start + 30))))
        assert len(buf) <= 100
    rows = buf.rows()
    assert rows["ts"][-1] == 1019
    assert np.all(np.diff(rows["ts"]) == 1)  # the newest rows, contiguous
    assert buf.dropped + len(buf) == 1020
    assert buf.nbytes <= 100 * BBO_DTYPE.itemsize
    np.testing.assert_array_equal(held, held_copy)  # a reader's view is never overwritten


def test_row_buffer_copies_the_kept_rows_ahead_so_a_drop_only_switches_arrays() -> None:
    buf = RowBuffer(BBO_DTYPE, 4096, align=64)
    t = 0
    views = []
    switches = 0
    while switches < 3:
        before = buf.dropped
        n = len(buf)
        nxt = buf._next
        buf.append(_bbo(list(range(t, t + 50))))
        t += 50
        if buf.dropped != before:  # this append dropped the oldest rows
            switches += 1
            # The next array was ready: every kept row had been copied before this append.
            assert nxt is not None
            assert nxt[2] == n
            assert buf._state[0] is nxt[0]
            assert (buf.dropped - before) % 64 == 0
        if t % 1000 == 0:
            views.append((buf.rows(), buf.rows().copy()))
        rows = buf.rows()
        assert len(buf) <= 4096
        assert rows["ts"][-1] == t - 1
        assert np.all(np.diff(rows["ts"]) == 1)
        assert buf.dropped + len(buf) == t
    for view, copy in views:  # no reader's view was ever written over
        np.testing.assert_array_equal(view, copy)


def test_row_buffer_clamps_a_clock_stepping_back_so_rows_stay_sorted() -> None:
    buf = RowBuffer(BBO_DTYPE, 16)
    buf.append(_bbo([10, 20, 30]))
    buf.append(_bbo([25, 40, 35]))
    assert buf.rows()["ts"].tolist() == [10, 20, 30, 30, 40, 40]


def test_row_buffer_resize_keeps_the_newest_and_refuses_a_silly_limit() -> None:
    buf = RowBuffer(BBO_DTYPE, 64)
    buf.append(_bbo(list(range(50))))
    buf.resize(10)
    assert buf.rows()["ts"].tolist() == list(range(40, 50))
    with pytest.raises(ValueError, match="at least 4 rows, not 2"):
        buf.resize(2)


def test_pixel_envelope_matches_min_and_max_per_pixel_column() -> None:
    rng = np.random.default_rng(3)
    ts = np.sort(rng.integers(0, 10_000, 5_000)).astype(np.int64)
    v = rng.normal(size=5_000)
    x, y = pixel_envelope(ts, v, 0, 10_000, 100, gap_ns=0)
    assert x.shape[0] <= 2 * 100  # never more points than two per pixel
    col = (ts * 100) // 10_000
    for c in (0, 37, 99):
        m = col == c
        lo = y[0::2][np.flatnonzero(x[0::2] == ts[m][0])[0]]
        hi = y[1::2][np.flatnonzero(x[1::2] == ts[m][-1])[-1]]
        assert lo == v[m].min()
        assert hi == v[m].max()


def test_pixel_envelope_breaks_the_line_at_a_pause() -> None:
    ts = np.array([0, 10, 20, 5_000, 5_010], np.int64)
    x, y = pixel_envelope(ts, np.arange(5.0), 0, 5_010, 1000, gap_ns=1_000)
    assert np.isnan(y).sum() == 1
    gap = int(np.flatnonzero(np.isnan(y))[0])
    assert x[gap - 1] <= 20
    assert x[gap + 1] == 5_000


def _order(
    oid: int, status: OrdStatus, px: int, ts: int, *, side: Side = Side.BUY, cum: int = 0
) -> OrderChanged:
    view = OrderView(
        order_id=oid,
        client_order_id=f"C{oid}",
        orig_client_order_ids=(),
        venue_order_id="",
        strategy_id=7,
        symbol="ESZ6",
        side=side,
        ord_type=OrdType.LIMIT,
        time_in_force=TimeInForce.DAY,
        qty_lots=5,
        px_ticks=px,
        status=status,
        cum_qty_lots=cum,
        leaves_qty_lots=5 - cum,
        avg_px_ticks=float(px),
        pending="",
        text="",
        ts_created=T0,
        ts_sent=T0,
        ts_acked=T0,
        ts_last=ts,
    )
    return OrderChanged(ts_event=ts, order=view, change="test")


def _stream() -> list[EventRecord]:
    events = [
        InstrumentAdded(
            ts_event=T0,
            symbol="ESZ6",
            tick_size="0.25",
            lot_size="1",
            multiplier="50",
            currency="USD",
            venue="SIM",
        ),
        BookUpdated(
            ts_event=T0 + 1 * MS,
            symbol="ESZ6",
            bid_px_ticks=24_000,
            bid_qty_lots=10,
            ask_px_ticks=24_001,
            ask_qty_lots=12,
        ),
        _order(1, OrdStatus.NEW, 23_999, T0 + 2 * MS),
        TradeReported(
            ts_event=T0 + 3 * MS, symbol="ESZ6", px_ticks=24_001, qty_lots=3, aggressor=Side.BUY
        ),
        BookUpdated(
            ts_event=T0 + 4 * MS,
            symbol="ESZ6",
            bid_px_ticks=0,
            bid_qty_lots=0,
            ask_px_ticks=24_002,
            ask_qty_lots=4,
        ),
        DepthChanged(
            ts_event=T0 + 4 * MS,
            symbol="ESZ6",
            bids=(),
            asks=((24_002, 4), (24_003, 9)),
            last_trade_px_ticks=24_001,
            own=(),
        ),
        TradeReported(
            ts_event=T0 + 5 * MS, symbol="ESZ6", px_ticks=23_999, qty_lots=2, aggressor=None
        ),
        OrderFilled(
            ts_event=T0 + 6 * MS,
            order_id=1,
            client_order_id="C1",
            venue_order_id="V1",
            exec_id="E1",
            strategy_id=7,
            symbol="ESZ6",
            side=Side.BUY,
            last_px_ticks=23_999,
            last_qty_lots=5,
            leaves_qty_lots=0,
            ts_recv=T0 + 6 * MS,
        ),
        _order(1, OrdStatus.FILLED, 23_999, T0 + 6 * MS, cum=5),
        FixMessageSeen(
            ts_event=T0 + 6 * MS,
            session_id="FIX.4.4:A->B",
            outbound=False,
            msg_type="8",
            seq_num=3,
            raw=b"8=FIX.4.4\x0135=8\x0111=C1\x0117=E1\x0110=000\x01",
            ts_created=T0 + 6 * MS,
            ts_wire=T0 + 6 * MS,
        ),
        BookUpdated(
            ts_event=T0 + 7 * MS,
            symbol="NQZ6",
            bid_px_ticks=1,
            bid_qty_lots=1,
            ask_px_ticks=2,
            ask_qty_lots=1,
        ),
    ]
    return [EventRecord(i + 1, e) for i, e in enumerate(events)]


def test_feed_turns_the_stream_into_quotes_trades_depth_and_own_orders() -> None:
    feed = LiveFeed("embedded")
    update = feed.on_events(_stream())
    assert update.added == ("ESZ6",)
    assert update.symbols == {"ESZ6"}
    assert update.orders
    assert feed.unknown == 1  # NQZ6 was never listed: dropped, counted
    inst = feed.instruments["ESZ6"]
    assert inst.live.counts() == {"bbo": 2, "trades": 2}
    assert inst.now_ns == T0 + 7 * MS

    q = inst.quote_at(T0 + 3 * MS)
    assert (q.bid, q.bid_qty, q.ask, q.ask_qty) == (6000.0, 10, 6000.25, 12)
    assert (q.last_px, q.last_qty, q.last_side) == (6000.25, 3, BUY)
    q = inst.quote_at(T0 + 9 * MS)
    assert math.isnan(q.bid)
    assert q.ask == 6000.5
    assert q.last_side == 0

    # Step lines reach the live edge with the quote still in force.
    x, bid, ask, exact = inst.quote_lines(T0, T0 + 10 * MS, 800)
    assert exact
    assert x[-1] == T0 + 7 * MS
    assert ask[-1] == 6000.5
    assert math.isnan(bid[-1])

    depth = inst.depth_at(T0 + 5 * MS)
    assert depth.asks == [(24_002, 4), (24_003, 9)]
    assert depth.bids == []
    assert depth.source == "engine depth"
    assert inst.depth_at(T0 + 2 * MS).bids == [(24_000, 10)]  # before any depth: the touch

    stats = inst.range_stats(T0, T0 + 10 * MS)
    assert stats.trades.trades == 2
    assert stats.trades.volume == 5
    assert stats.trades.buy_volume == 3
    assert stats.trades.sell_volume == 0
    assert stats.spread.quotes == 2
    assert stats.spread.two_sided == 1
    assert inst.next_event(T0 + 3 * MS) == T0 + 4 * MS

    ov = feed.orders.overlay()
    seg = ov.segments("ESZ6")
    assert seg.n == 1
    assert seg.t0[0] == T0 + 2 * MS
    assert seg.t1[0] == T0 + 6 * MS
    assert seg.px[0] == 23_999
    assert seg.side[0] == BUY
    ex = ov.executions("ESZ6")
    assert ex.shape[0] == 1
    assert ex["px"][0] == 23_999
    assert ex["seq"][0] == 8
    assert ov.exec_id(ex[0]) == "E1"
    chain, pos = ov.execution_chain(1, "E1")
    assert len(chain) == 1
    assert pos == 0
    assert feed.orders.overlay() is ov  # not rebuilt without a change

    (entry,) = feed.entries()
    assert entry.store == LIVE_PREFIX + "embedded"
    assert entry.counts["bbo"] == 2
    assert entry.counts["l2"] == 1
    assert (entry.t_first, entry.t_last) == (T0 + 1 * MS, T0 + 5 * MS)


def test_feed_keeps_few_rows_until_charted_then_more() -> None:
    feed = LiveFeed("e", chart_rows=1_000, idle_rows=8)
    feed.on_events(_stream()[:1])
    books = [
        EventRecord(
            i + 2,
            BookUpdated(
                ts_event=T0 + i,
                symbol="ESZ6",
                bid_px_ticks=100 + i,
                bid_qty_lots=1,
                ask_px_ticks=200 + i,
                ask_qty_lots=1,
            ),
        )
        for i in range(50)
    ]
    feed.on_events(books)
    assert len(feed.instruments["ESZ6"].live.buffers["bbo"]) <= 8
    inst = feed.chart("ESZ6")
    assert inst.charted
    feed.on_events(books)
    assert len(inst.live.buffers["bbo"]) > 8
    with pytest.raises(KeyError, match="XYZ: the engine e does not list it"):
        feed.chart("XYZ")


def test_feed_refuses_a_listing_with_a_bad_tick_size() -> None:
    bad = InstrumentAdded(
        ts_event=T0,
        symbol="ESZ6",
        tick_size="zero",
        lot_size="1",
        multiplier="1",
        currency="",
        venue="",
    )
    with pytest.raises(ValueError, match="ESZ6: tick size 'zero' is not a positive decimal"):
        LiveFeed("e").on_events([EventRecord(1, bad)])


def test_live_orders_keep_exec_ids_aligned_when_old_fills_go() -> None:
    feed = LiveFeed("e")
    feed.orders.fills.resize(8)
    feed.on_events(_stream()[:1])
    fills = [
        EventRecord(
            i + 2,
            OrderFilled(
                ts_event=T0 + i,
                order_id=i,
                client_order_id=f"C{i}",
                venue_order_id="",
                exec_id=f"E{i}",
                strategy_id=1,
                symbol="ESZ6",
                side=Side.SELL if i % 2 else Side.BUY,
                last_px_ticks=100 + i,
                last_qty_lots=1,
                leaves_qty_lots=0,
                ts_recv=T0 + i,
            ),
        )
        for i in range(30)
    ]
    for i in range(0, 30, 7):
        feed.on_events(fills[i : i + 7])
    ov = feed.orders.overlay()
    ex = ov.executions("ESZ6")
    assert ex.shape[0] <= 8
    for row in ex:
        assert ov.exec_id(row) == f"E{int(row['order_id'])}"
    assert ex["side"][-1] == SELL  # order 29


def test_a_wide_live_span_is_drawn_from_block_summaries_that_match_the_rows() -> None:
    feed = LiveFeed("e", chart_rows=40_000, idle_rows=40_000)
    feed.on_events(_stream()[:1])
    inst = feed.chart("ESZ6")
    rng = np.random.default_rng(5)
    seq = 2
    for b in range(12):  # 60k quotes: the buffer drops its oldest rows on the way
        px = 24_000 + np.cumsum(rng.integers(-1, 2, 5_000))
        records = []
        for i in range(5_000):
            ev = BookUpdated(
                ts_event=T0 + (b * 5_000 + i) * 1_000,
                symbol="ESZ6",
                bid_px_ticks=int(px[i]),
                bid_qty_lots=0 if i % 997 == 0 else 3,  # an empty bid now and then
                ask_px_ticks=int(px[i]) + 1,
                ask_qty_lots=4,
            )
            if i % 997 == 0:
                ev = BookUpdated(
                    ts_event=ev.ts_event,
                    symbol="ESZ6",
                    bid_px_ticks=0,
                    bid_qty_lots=0,
                    ask_px_ticks=ev.ask_px_ticks,
                    ask_qty_lots=4,
                )
            records.append(EventRecord(seq, ev))
            seq += 1
        feed.on_events(records)
    buf = inst.live.buffers["bbo"]
    assert buf.dropped > 0
    summary = inst.summaries["bbo"]
    assert summary.rows_done == len(buf) - len(buf) % 64
    t0, t1 = inst.span
    width = 300  # 40k rows > 64 rows per pixel: the blocks draw it
    x, bid, ask, exact = inst.quote_lines(t0, t1, width)
    assert not exact
    assert x.shape[0] <= 2 * width + 2 * 64 + 4  # the blocks' points plus the tail's
    assert np.all(np.diff(x) >= 0)
    rows = inst.rows("bbo", t0, t1, margin=0)
    assert np.nanmin(bid) == np.nanmin(rows.values["bid"])
    assert np.nanmax(ask) == np.nanmax(rows.values["ask"])
    # Narrower: straight from the rows, same extremes.
    mid = (t0 + t1) // 2
    _x2, bid2, _, _ = inst.quote_lines(mid, mid + 2_000_000, width)
    part = inst.rows("bbo", mid, mid + 2_000_000, margin=0)
    assert np.nanmax(bid2) == np.nanmax(part.values["bid"])
