# SPDX-License-Identifier: MIT
"""Analyzer data modules (no Qt): pyramid, opened days, statistics, depth, journal overlay."""

import math
from datetime import UTC
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from analyzer.dataset import Cancelled, CancelToken, InstrumentDay, open_day, step
from analyzer.overlay import load_overlay
from analyzer.pyramid import Pyramid, PyramidFormatError
from analyzer.source import ArrayDay, StoreDay, browse
from analyzer.synthetic import NS, SyntheticSpec, synthetic_day
from engine.posttrade import load_day
from engine.tickstore.schema import BBO_DTYPE, L2_DELTA_DTYPE
from engine.tickstore.store import TickStore
from engine.types import BUY, L2_CLEAR, L2_SET, SELL


def _series(n: int, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    ts = np.cumsum(rng.integers(1, 1000, n)).astype(np.int64)
    v = np.cumsum(rng.integers(-2, 3, n)).astype(np.float64)
    return ts, v


def test_envelope_holds_every_extreme_and_never_more_points_than_twice_the_pixels() -> None:
    ts, v = _series(300_000)
    p = Pyramid.build(ts, {"v": v})
    width = 800
    t0, t1 = int(ts[12_345]), int(ts[250_000])
    env = p.envelope("v", t0, t1, width)
    assert env is not None
    x, y = env
    assert x.shape[0] <= 2 * (width + 3)  # two points per pixel column, + the edges
    assert x.shape[0] >= 2 * width * 0.9  # (columns without a bucket's start are few)
    inside = (ts >= t0) & (ts <= t1)
    assert y.min() <= v[inside].min()
    assert y.max() >= v[inside].max()
    assert np.all(np.diff(x) >= 0)
    # Each column's stroke spans the extremes of the rows whose bucket starts in it.
    col = (x[0::2] - t0) * width // (t1 - t0)
    assert np.all(np.diff(col) > 0)  # one pair per column
    for c in (0, width // 3, width - 1):
        k = int(np.flatnonzero(col == c)[0])
        rows = (ts >= x[2 * k]) & (ts <= x[2 * k + 1])
        assert (y[2 * k], y[2 * k + 1]) == (v[rows].min(), v[rows].max())
    # A given level (the finest, drawn while rows are read): still two points per column.
    fine = p.envelope("v", t0, t1, width, level=0)
    assert fine is not None
    assert fine[0].shape[0] <= 2 * (width + 3)
    assert (np.nanmin(fine[1]), np.nanmax(fine[1])) == (y.min(), y.max())
    # A span with fewer rows than pixels is drawn from the rows.
    assert p.envelope("v", int(ts[100]), int(ts[900]), width) is None


def test_gaps_break_the_envelope_and_the_step_line() -> None:
    ts, v = _series(100_000)
    ts[50_000:] += 10 * NS  # a ten-second hole
    p = Pyramid.build(ts, {"v": v}, gap_ns=NS)
    assert p.gaps.tolist() == [[int(ts[49_999]), int(ts[50_000])]]
    env = p.envelope("v", int(ts[0]), int(ts[-1]), 500, gap_ns=5 * NS)
    assert env is not None
    x, y = env
    (nan,) = np.flatnonzero(np.isnan(y))
    assert x[nan - 1] <= ts[49_999] < ts[50_000] <= x[nan + 1]
    assert p.envelope("v", int(ts[0]), int(ts[-1]), 500, gap_ns=20 * NS) is not None
    assert not np.isnan(p.envelope("v", int(ts[0]), int(ts[-1]), 500, gap_ns=20 * NS)[1]).any()  # type: ignore[index]
    sx, sy = step(ts[49_990:50_010], v[49_990:50_010], gap_ns=5 * NS)
    assert np.isnan(sy).sum() == 1
    assert sx.shape[0] == 39


def test_envelopes_of_two_columns_are_each_columns_envelope() -> None:
    # The bid and the ask of a chart are binned together: one x, the same y as alone.
    ts, v = _series(200_000)
    ts[120_000:] += 10 * NS  # a hole: the NaN break lands at the same place in both
    w = v[::-1].copy()
    w[5_000:6_000] = np.nan  # a missing side
    p = Pyramid.build(ts, {"bid": v, "ask": w}, gap_ns=NS)
    for t0, t1, width, level in (
        (int(ts[0]), int(ts[-1]), 700, None),
        (int(ts[4_000]), int(ts[150_000]), 900, None),
        (int(ts[4_000]), int(ts[60_000]), 900, 0),
    ):
        both = p.envelopes(("bid", "ask"), t0, t1, width, gap_ns=5 * NS, level=level)
        bid = p.envelope("bid", t0, t1, width, gap_ns=5 * NS, level=level)
        ask = p.envelope("ask", t0, t1, width, gap_ns=5 * NS, level=level)
        assert both is not None
        assert bid is not None
        assert ask is not None
        assert np.array_equal(both[0], bid[0])
        assert np.array_equal(both[0], ask[0])
        assert np.array_equal(both[1][0], bid[1], equal_nan=True)
        assert np.array_equal(both[1][1], ask[1], equal_nan=True)
    whole = p.envelopes(("bid", "ask"), int(ts[0]), int(ts[-1]), 700, gap_ns=5 * NS)
    assert whole is not None
    assert np.isnan(whole[1][0]).sum() == np.isnan(whole[1][1]).sum() == 1  # the hole
    assert p.envelopes(("bid", "ask"), int(ts[10]), int(ts[300]), 900) is None  # rows


def test_pyramid_saved_and_loaded_memory_mapped_refuses_other_data(tmp_path: Path) -> None:
    ts, v = _series(50_000)
    p = Pyramid.build(ts, {"v": v}, sums=["v"], gap_ns=100)
    p.save(tmp_path / "lod", stamp={"rows": 50_000})
    q = Pyramid.load(tmp_path / "lod", stamp={"rows": 50_000})
    # Memory-mapped, not read: plain arrays over the mapping (cheaper to slice than memmaps).
    lo = q.levels[0].lo["v"]
    assert type(lo) is np.ndarray
    assert isinstance(lo.base, np.memmap)
    assert not lo.flags.owndata
    assert not lo.flags.writeable
    assert [lv.n for lv in q.levels] == [lv.n for lv in p.levels]
    assert np.array_equal(q.levels[-1].hi["v"], p.levels[-1].hi["v"])
    assert np.array_equal(q.gaps, p.gaps)
    with pytest.raises(PyramidFormatError, match="built from other data"):
        Pyramid.load(tmp_path / "lod", stamp={"rows": 49_999})
    (tmp_path / "lod" / "meta.json").write_text("{not json")
    with pytest.raises(PyramidFormatError, match=r"meta\.json: unreadable"):
        Pyramid.load(tmp_path / "lod", stamp={"rows": 50_000})
    with pytest.raises(PyramidFormatError, match="no pyramid saved here"):
        Pyramid.load(tmp_path / "none", stamp={})


def test_builder_refuses_rows_out_of_time_order() -> None:
    from analyzer.pyramid import PyramidBuilder

    b = PyramidBuilder(("v",))
    b.feed(np.array([5, 6], np.int64), {"v": [1.0, 2.0]})
    with pytest.raises(ValueError, match="chunk starts at 4, the previous one ended at 6"):
        b.feed(np.array([4], np.int64), {"v": [1.0]})


def _store_day(tmp_path: Path, quotes: int = 120_000) -> tuple[Path, np.ndarray, np.ndarray]:
    spec = SyntheticSpec(quotes=quotes, start_ns=1_700_000_000 * NS, span_ns=600 * NS, seed=5)
    parts = list(synthetic_day(spec, chunk=50_000))
    path = tmp_path / "s.h5"
    with (
        TickStore(path, "a") as st,
        st.writer("ESZ6", "20231114", tick_size="0.25", lot_size="1") as w,
    ):
        for bbo, tr in parts:
            w.append("bbo", bbo)
            w.append("trades", tr)
    return path, np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


@pytest.mark.parametrize("in_memory", [True, False], ids=["rows-in-memory", "windows-from-store"])
def test_range_statistics_equal_a_full_scan(tmp_path: Path, in_memory: bool) -> None:
    path, bbo, tr = _store_day(tmp_path)
    with TickStore(path) as st:
        day = open_day(StoreDay(st, "ESZ6", "20231114"), in_memory_rows=10**9 if in_memory else 0)
        assert (day.quotes is not None and day.quotes.rows is not None) is in_memory
        t0 = int(bbo["ts"][777]) + 3
        t1 = int(bbo["ts"][101_234])
        s = day.range_stats(t0, t1)
    m = (tr["ts"] >= t0) & (tr["ts"] <= t1)
    q = (bbo["ts"] >= t0) & (bbo["ts"] <= t1)
    px, qty = tr["px"][m] * 0.25, tr["qty"][m].astype(float)
    assert s.trades.trades == int(m.sum())
    assert s.trades.volume == qty.sum()
    assert s.trades.buy_volume == qty[tr["side"][m] == BUY].sum()
    assert s.trades.sell_volume == qty[tr["side"][m] == SELL].sum()
    assert s.vwap == pytest.approx((px * qty).sum() / qty.sum(), rel=1e-12)
    spread = (bbo["ask_px"][q] - bbo["bid_px"][q]) * 0.25
    assert s.spread.quotes == int(q.sum())
    assert s.events == int(q.sum() + m.sum())
    assert s.spread_mean == pytest.approx(spread.mean(), rel=1e-12)
    assert (s.spread.lo, s.spread.hi) == (spread.min(), spread.max())
    assert (s.trades.px_lo, s.trades.px_hi) == (px.min(), px.max())


def test_store_backed_day_draws_from_the_pyramid_and_reads_rows_only_when_zoomed_in(
    tmp_path: Path,
) -> None:
    path, bbo, tr = _store_day(tmp_path)
    with TickStore(path) as st:
        day = open_day(StoreDay(st, "ESZ6", "20231114"), in_memory_rows=0)
        t0, t1 = day.span
        assert (t0, t1) == (int(bbo["ts"][0]), max(int(bbo["ts"][-1]), int(tr["ts"][-1])))
        x, _bid, _ask, exact = day.quote_lines(t0, t1, 1000)
        assert not exact
        assert x.shape[0] <= 2 * 4 * 1000 + 4
        # Zoomed in to 2000 quotes on 1000 pixels: the quotes themselves, as steps.
        a, b = int(bbo["ts"][5000]), int(bbo["ts"][7000])
        x, bid, _ask, exact = day.quote_lines(a, b, 1000)
        assert exact
        m = (bbo["ts"] >= a) & (bbo["ts"] <= b)
        assert set(bid[~np.isnan(bid)]) == set(bbo["bid_px"][m] * 0.25) | {
            bbo["bid_px"][4999] * 0.25,
            bbo["bid_px"][7001] * 0.25,
        } - {np.nan}
        q = day.quote_at(int(bbo["ts"][6000]) + 1)
        assert (q.bid, q.ask) == (bbo["bid_px"][6000] * 0.25, bbo["ask_px"][6000] * 0.25)
        marks = day.trade_marks(a, b)
        assert marks is not None
        assert marks.n == int(((tr["ts"] >= a) & (tr["ts"] <= b)).sum())
        assert day.trade_marks(t0, t1) is None  # too many to draw one by one
        nxt = day.next_event(int(bbo["ts"][6000]))
        later = np.concatenate(
            [bbo["ts"][bbo["ts"] > bbo["ts"][6000]], tr["ts"][tr["ts"] > bbo["ts"][6000]]]
        )
        assert nxt == int(later.min())
    # The pyramid was kept beside the store: a second open loads it instead of rebuilding.
    assert (path.with_name("s.h5.lod") / "ESZ6" / "20231114" / "bbo" / "meta.json").exists()
    with TickStore(path) as st:
        seen: list[str] = []
        open_day(
            StoreDay(st, "ESZ6", "20231114"), in_memory_rows=0, progress=lambda f, t: seen.append(t)
        )
    assert any("summary loaded" in t for t in seen)


def test_opening_reports_progress_and_can_be_cancelled(tmp_path: Path) -> None:
    path, _, _ = _store_day(tmp_path, quotes=3_000_000)
    token = CancelToken()
    fractions: list[float] = []

    def progress(f: float, _text: str) -> None:
        fractions.append(f)
        if len(fractions) == 2:
            token.cancel()

    with TickStore(path) as st:
        with pytest.raises(Cancelled, match="opening ESZ6 20231114 was cancelled"):
            open_day(StoreDay(st, "ESZ6", "20231114"), progress=progress, cancel=token)
        assert fractions == sorted(fractions)
        assert 0 < fractions[-1] < 1
        done: list[float] = []
        open_day(StoreDay(st, "ESZ6", "20231114"), progress=lambda f, _t: done.append(f))
        assert done[-1] == 1.0
        assert done == sorted(done)
        entries = browse(st)
    assert [(e.symbol, e.day, e.counts["bbo"]) for e in entries] == [
        ("ESZ6", "20231114", 3_000_000)
    ]


def test_depth_at_an_instant_from_l2_deltas() -> None:
    rows = np.zeros(7, L2_DELTA_DTYPE)
    data = [
        (1, 100, 5, BUY, L2_SET), (2, 101, 7, SELL, L2_SET), (3, 99, 4, BUY, L2_SET),
        (4, 100, 0, BUY, L2_SET), (5, 102, 9, SELL, L2_SET), (6, 0, 0, 0, L2_CLEAR),
        (7, 200, 1, BUY, L2_SET),
    ]  # fmt: skip
    for i, (t, px, qty, side, kind) in enumerate(data):
        rows[i]["ts"], rows[i]["px"], rows[i]["qty"] = t, px, qty
        rows[i]["side"], rows[i]["kind"] = side, kind
    bbo = np.zeros(1, BBO_DTYPE)
    src = ArrayDay("X", "20240101", {"l2": rows, "bbo": bbo}, tick_size=0.5)
    day = InstrumentDay(src, None, None)
    d = day.depth_at(5)
    assert (d.bids, d.asks, d.source) == ([(99, 4)], [(101, 7), (102, 9)], "l2")
    assert day.depth_at(6).bids == []  # cleared
    assert day.depth_at(7).bids == [(200, 1)]
    assert day.depth_at(5).asks == [(101, 7), (102, 9)]  # backwards: rebuilt from the start


def test_mbo_depth_onwards_from_the_last_instant_equals_a_fresh_replay() -> None:
    from engine.tickstore.schema import MBO_DTYPE
    from engine.types import L3_ADD, L3_CANCEL

    rng = np.random.default_rng(4)
    n = 4000
    rows = np.zeros(n, MBO_DTYPE)
    rows["ts"] = np.arange(n) * 1000
    live: list[int] = []
    for i in range(n):
        if live and rng.random() < 0.4:
            oid = live.pop(int(rng.integers(len(live))))
            rows[i]["order_id"], rows[i]["action"], rows[i]["qty"] = oid, L3_CANCEL, 10**6
        else:
            side = BUY if rng.random() < 0.5 else SELL
            px = 1000 - int(rng.integers(1, 20)) if side == BUY else 1000 + int(rng.integers(0, 20))
            rows[i]["order_id"], rows[i]["action"], rows[i]["px"] = i + 1, L3_ADD, px
            rows[i]["qty"], rows[i]["side"] = int(rng.integers(1, 9)), side
            live.append(i + 1)
    src = ArrayDay("X", "20240101", {"mbo": rows})
    walking = InstrumentDay(src, None, None)
    for t in (500_000, 1_700_000, 3_999_000, 2_000_000):
        fresh = InstrumentDay(src, None, None).depth_at(t, 50)
        assert walking.depth_at(t, 50) == fresh
        assert fresh.source == "mbo"
        assert fresh.bids
        assert fresh.asks


def test_l2_depth_takes_the_touch_of_the_quotes_that_run_ahead_of_it() -> None:
    rows = np.zeros(4, L2_DELTA_DTYPE)
    for i, (px, qty, side) in enumerate(
        [(100, 5, BUY), (99, 3, BUY), (101, 7, SELL), (102, 2, SELL)]
    ):
        rows[i]["ts"], rows[i]["px"], rows[i]["qty"], rows[i]["side"] = 1, px, qty, side
        rows[i]["kind"] = L2_SET
    bbo = np.zeros(1, BBO_DTYPE)  # at t=2 the bid moved down to 99 (the depth has not yet)
    bbo[0]["ts"], bbo[0]["bid_px"], bbo[0]["bid_qty"], bbo[0]["ask_px"], bbo[0]["ask_qty"] = (
        2, 99, 4, 101, 6,
    )  # fmt: skip
    day = open_day(ArrayDay("X", "20240101", {"l2": rows, "bbo": bbo}))
    d = day.depth_at(2)
    assert (d.bids, d.asks, d.source) == ([(99, 4)], [(101, 6), (102, 2)], "l2 + bbo")


def test_overlay_of_a_demo_journal(demo_journal: Path) -> None:
    ov = load_overlay(demo_journal)
    day = load_day(demo_journal)
    assert set(ov.symbols) == {"ESZ6", "NQZ6", "CLF7"}
    seg = ov.segments("ESZ6")
    assert seg.n > 0
    closed = seg.t1 >= 0
    assert (seg.t1[closed] >= seg.t0[closed]).all()
    ex = ov.executions("ESZ6")
    assert ex.shape[0] == int((day.executions["instrument"] == day.instrument("ESZ6")).sum())
    filled = int(ex[0]["order_id"])
    # The filled order's line ends at (or before) its fill.
    assert seg.t0[seg.order_id == filled].min() <= int(ex[0]["ts"])
    exec_id = ov.exec_id(ex[0])
    chain, pos = ov.execution_chain(filled, exec_id)
    assert pos >= 0
    assert f"\x0117={exec_id}\x01".encode() in chain[pos].raw
    assert chain[0].raw.split(b"\x01")[2] == b"35=D"  # the chain starts with the order
    assert [m.ts_handled for m in chain] == sorted(m.ts_handled for m in chain)
    assert ov.segments("NOPE").n == 0


def test_time_labels_in_a_time_zone() -> None:
    from analyzer.views.timeaxis import format_ns

    ts = 1_719_878_400 * NS + 123_456_789  # 2024-07-02 00:00:00.123456789 UTC
    assert format_ns(ts, UTC, 60) == "00:00"
    assert format_ns(ts, ZoneInfo("America/Chicago"), 1) == "19:00:00"
    assert format_ns(ts, UTC, 0.001) == "00:00:00.123"
    assert format_ns(ts, UTC, 5e-9) == "…00.123456789"
    assert not math.isnan(ts)


def test_pyramid_kernels_equal_the_numpy_builder() -> None:
    from analyzer.dataset import feed_rows, quote_columns, trade_columns, whole_buckets
    from analyzer.pyramid import PyramidBuilder

    spec = SyntheticSpec(quotes=50_003, start_ns=1_700_000_000 * NS, span_ns=60 * NS, seed=9)
    ((bbo, tr),) = list(synthetic_day(spec, chunk=10**6))
    bbo["bid_px"][::97] = 0  # missing bids
    bbo["bid_qty"][::97] = 0
    for kind, rows, names, sums in (
        ("bbo", bbo, ("bid", "ask", "spread", "two_sided"), ("spread", "two_sided")),
        ("trades", tr, ("px", "qty", "notional", "buy_qty"), ("qty", "notional", "buy_qty")),
    ):
        fast = PyramidBuilder(names, sums=sums, gap_ns=NS)
        chunks = list(whole_buckets([rows[:777], rows[777:5000], rows[5000:]], fast.base))
        assert [c.shape[0] % fast.base for c in chunks[:-1]] == [0] * (len(chunks) - 1)
        assert sum(c.shape[0] for c in chunks) == rows.shape[0]
        for chunk in chunks:
            feed_rows(fast, kind, chunk, 0.25, 2.0)
        got = fast.finish()
        if kind == "bbo":
            c: dict[str, Any] = quote_columns(rows, 0.25, 2.0).values
            spread = c["ask"] - c["bid"]
            cols = {"bid": c["bid"], "ask": c["ask"], "spread": spread}
            cols["two_sided"] = (~np.isnan(spread)).astype(float)
        else:
            c = trade_columns(rows, 0.25, 2.0).values
            qty = np.asarray(c["qty"], dtype=float)
            cols = {
                "px": c["px"], "qty": qty, "notional": c["px"] * qty,
                "buy_qty": np.where(c["side"] == BUY, qty, 0.0),
            }  # fmt: skip
        want = Pyramid.build(rows["ts"], cols, sums=sums, gap_ns=NS)
        assert got.n_rows == want.n_rows == rows.shape[0]
        assert [lv.n for lv in got.levels] == [lv.n for lv in want.levels]
        for g, w in zip(got.levels, want.levels, strict=True):
            assert np.array_equal(g.t_first, w.t_first)
            assert np.array_equal(g.t_last, w.t_last)
            for name in names:
                assert np.array_equal(g.lo[name], w.lo[name], equal_nan=True), name
                assert np.array_equal(g.hi[name], w.hi[name], equal_nan=True), name
            for name in sums:
                assert np.allclose(g.sums[name], w.sums[name], rtol=1e-12), name
        assert np.array_equal(got.gaps, want.gaps)


@pytest.mark.gui
def test_price_axis_labels_whole_ticks_and_grid_lines_are_opaque(qapp: object) -> None:
    import pyqtgraph as pg
    from PySide6.QtGui import QColor, QImage, QPainter

    from analyzer.views.timeaxis import PriceAxis, price_steps

    assert price_steps(0.25)[:6] == [0.25, 0.5, 1.0, 2.0, 2.5, 5.0]
    assert 0.025 not in price_steps(0.01)  # two and a half ticks: not a label step
    axis = PriceAxis(0.25, 2)
    for lo, hi, px in ((5528.3, 5529.7, 500), (4785.0, 4811.0, 500), (100.0, 100.6, 300)):
        for spacing, values in axis.tickValues(lo, hi, px):
            assert spacing / 0.25 == pytest.approx(round(spacing / 0.25))
            assert all(v / 0.25 == pytest.approx(round(v / 0.25)) for v in values)
    assert axis.tickStrings([5528.5, 12345.0], 1.0, 0.5) == ["5,528.50", "12,345.00"]
    # Translucent grid pens come out opaque, mixed with the background by their alpha.
    plot = pg.PlotWidget(axisItems={"left": axis})
    plot.resize(400, 400)
    plot.getPlotItem().showGrid(y=True, alpha=0.5)
    plot.getPlotItem().getViewBox().setYRange(5528.0, 5530.0, padding=0)
    axis.set_background("#000000")
    img = QImage(80, 400, QImage.Format.Format_ARGB32)
    painter = QPainter(img)
    specs = axis.generateDrawSpecs(painter)
    painter.end()
    assert specs is not None
    pens = [pen for pen, _, _ in specs[1]]
    assert pens
    assert all(pen.color().alpha() == 255 for pen in pens)
    c = QColor(axis.pen().color())
    assert any(pen.color().red() < c.red() for pen in pens)  # darkened towards black
