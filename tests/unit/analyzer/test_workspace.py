# SPDX-License-Identifier: MIT
"""The Trade Analyzer workspace, offscreen: linked charts, crosshair, overlay, replay.

Generated days (``conftest.synthetic_store``) run everywhere; the real Binance recordings in
``../shared/data`` are imported into a temporary store and skipped cleanly when absent.
"""

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from analyzer.views.workspace import AnalyzerWorkspace
from tests.unit.analyzer.conftest import SHARED_DATA, quotes_of

pytestmark = pytest.mark.gui


def _workspace(qtbot: Any) -> AnalyzerWorkspace:
    ws = AnalyzerWorkspace()
    qtbot.addWidget(ws)
    ws.resize(1500, 900)
    ws.show()
    qtbot.waitExposed(ws)
    return ws


def _open_all(qtbot: Any, ws: AnalyzerWorkspace, *stores: Path) -> None:
    for store in stores:
        assert ws.open_store(store)
    for e in list(ws.browser.entries):
        with qtbot.waitSignal(ws.day_opened, timeout=30_000):
            assert ws.open_day(e.symbol, e.day, e.store) is not None
    qtbot.waitUntil(lambda: not ws.progress_row.isVisible(), timeout=5_000)


def _move_mouse_to(qtbot: Any, chart: Any, ts: int) -> None:
    qtbot.wait(50)  # let the layout settle before aiming
    vb = chart.getPlotItem().getViewBox()
    scene = vb.mapViewToScene(QPointF(chart.to_x(ts), sum(vb.viewRange()[1]) / 2))
    pos = QPointF(chart.mapFromScene(scene))
    viewport = chart.viewport()
    event = QMouseEvent(
        QEvent.Type.MouseMove,
        pos,
        viewport.mapToGlobal(pos),
        Qt.MouseButton.NoButton,
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
    )
    QApplication.sendEvent(viewport, event)
    qtbot.wait(20)


def test_two_instruments_linked_and_the_crosshair_shows_both(
    qtbot: Any, synthetic_store: Path
) -> None:
    ws = _workspace(qtbot)
    _open_all(qtbot, ws, synthetic_store)
    es, nq = ws.chart("ESZ6"), ws.chart("NQZ6")
    assert len(ws.stack.charts) == 2
    # Linked x axes: zooming one shows the same span on the other.
    t0, t1 = es.day.span
    mid = (t0 + t1) // 2
    es.getPlotItem().getViewBox().setXRange(
        es.to_x(mid - 2 * 10**9), es.to_x(mid + 2 * 10**9), padding=0
    )
    qtbot.waitUntil(lambda: abs(nq.view_ns()[0] - es.view_ns()[0]) < 1000)
    assert nq.view_ns() == pytest.approx(es.view_ns(), abs=1000)
    # The real mouse over the lower chart moves both crosshairs to the same instant.
    target = mid + 123_456_789
    _move_mouse_to(qtbot, nq, target)
    cursor = ws.stack.cursor_ns
    v0, v1 = nq.view_ns()
    pixel = (v1 - v0) / nq.getPlotItem().getViewBox().width()
    assert cursor is not None
    assert abs(cursor - target) < 2 * pixel
    for chart, symbol in ((es, "ESZ6"), (nq, "NQZ6")):
        assert chart.cursor.value() == pytest.approx(chart.to_x(cursor))
        rows = quotes_of(synthetic_store, symbol)
        i = int(np.searchsorted(rows["ts"], cursor, side="right")) - 1
        bid = f"{rows['bid_px'][i] * 0.25:,.2f}"
        ask = f"{rows['ask_px'][i] * 0.25:,.2f}"
        text = chart.readout
        assert text.startswith(symbol)
        assert f"bid {bid} × {rows['bid_qty'][i]}" in text
        assert f"ask {ask} × {rows['ask_qty'][i]}" in text
    # NQZ6's two-second hole is a gap in its lines, not a straight stroke across it.
    ws.fit()
    qtbot.waitUntil(lambda: not nq._redraw.isActive())
    nq.refresh()
    _, y = nq.bid.getData()
    assert np.isnan(y).any()
    # Different rates on one axis: ESZ6 has three times NQZ6's rate (less NQZ6's hole).
    assert es.day.counts["bbo"] == 30_000
    assert nq.day.counts["bbo"] < 10_000
    # Time zone switch relabels the axis.
    ws.zone_box.setCurrentText("America/Chicago")
    assert nq.axis.labelText == "Time (America/Chicago)"


def test_overlay_a_journal_and_click_an_execution(
    qtbot: Any, synthetic_store: Path, demo_journal: Path
) -> None:
    ws = _workspace(qtbot)
    _open_all(qtbot, ws, synthetic_store)
    with qtbot.waitSignal(ws.overlay_loaded, timeout=30_000) as sig:
        ws.load_journal(demo_journal)
    assert sig.args[0] > 0
    es = ws.chart("ESZ6")
    fills = es._fill_rows
    assert fills is not None
    assert fills.shape[0] > 0
    own_x, _own_y = es.own.getData()
    assert own_x is not None
    assert own_x.shape[0] > 0
    # Zoom on the first fill and click its star with the mouse.
    ex = fills[0]
    ts = int(ex["ts"])
    es.getPlotItem().getViewBox().setXRange(es.to_x(ts - 10**8), es.to_x(ts + 10**8), padding=0)
    es.getPlotItem().getViewBox().setYRange(ex["px"] * 0.25 - 3, ex["px"] * 0.25 + 3, padding=0)
    qtbot.wait(50)
    scene = es.getPlotItem().getViewBox().mapViewToScene(QPointF(es.to_x(ts), ex["px"] * 0.25))
    pos = es.mapFromScene(scene)
    with qtbot.waitSignal(es.execution_clicked, timeout=3_000):
        QTest.mouseClick(es.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(pos.x(), pos.y()))
    # The FIX chain of the order is listed with the execution's report selected.
    chain = ws.fix_chain
    assert chain
    assert chain[0].raw.split(b"\x01")[2] == b"35=D"
    exec_id = ws.overlay.exec_id(ws.clicked_execution)  # type: ignore[union-attr]
    assert ws.clicked_execution["ts"] == ts
    current = ws.fix.table.currentIndex()
    assert current.isValid()
    row = ws.fix.proxy.mapToSource(current).row()
    assert f"\x0117={exec_id}\x01".encode() in ws.fix.model.record(row).ev.raw
    assert ws.fix.model.rowCount() == len(chain)
    # The cursor went to the execution and the ladder shows the book at that instant.
    assert ws.stack.cursor_ns == ts
    qtbot.waitUntil(lambda: ws.last_depth is not None and ws.last_depth.ts == ts, timeout=3_000)
    rows = quotes_of(synthetic_store, "ESZ6")
    i = int(np.searchsorted(rows["ts"], ts, side="right")) - 1
    assert ws.last_depth.bids[0] == (int(rows["bid_px"][i]), int(rows["bid_qty"][i]))  # type: ignore[union-attr]
    assert ws.depth_pane.model.symbol == "ESZ6"
    # Clicking an order line: its chain and its history, the cursor at the clicked time.
    seg = ws.overlay.segments("ESZ6")  # type: ignore[union-attr]
    done = seg.t1 > 0
    k = int(np.argmax(np.where(done, seg.t1 - seg.t0, -1)))
    a, b, px = int(seg.t0[k]), int(seg.t1[k]), float(seg.px[k]) * 0.25
    vb = es.getPlotItem().getViewBox()
    vb.setXRange(es.to_x(a - (b - a)), es.to_x(b + (b - a)), padding=0)
    vb.setYRange(px - 5, px + 5, padding=0)
    qtbot.wait(50)
    mid = (a + b) // 2
    scene = vb.mapViewToScene(QPointF(es.to_x(mid), px))
    pos = es.mapFromScene(scene)
    with qtbot.waitSignal(es.order_clicked, timeout=3_000) as clicked:
        QTest.mouseClick(es.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(pos.x(), pos.y()))
    symbol, order_id, at = clicked.args
    assert symbol == "ESZ6"
    assert abs(at - mid) < (b - a) // 10
    assert ws.stack.cursor_ns == at
    clordid = ws.overlay.client_order_id(order_id)  # type: ignore[union-attr]
    assert ws.fix_chain
    assert any(f"\x0111={clordid}\x01".encode() in m.raw for m in ws.fix_chain)
    assert ws.history.rowCount() >= 2
    assert str(order_id) in ws.history_dock.windowTitle()


def test_replay_a_span(qtbot: Any, synthetic_store: Path) -> None:
    ws = _workspace(qtbot)
    _open_all(qtbot, ws, synthetic_store)
    es = ws.chart("ESZ6")
    t0, t1 = es.day.span
    start = t0 + (t1 - t0) // 4
    ws.stack.set_cursor(start)
    assert ws.replay.ts == start
    # Step: to the very next quote or trade of either instrument.
    ws.replay.step.click()
    everything = np.concatenate([quotes_of(synthetic_store, s)["ts"] for s in ("ESZ6", "NQZ6")])
    after = everything[everything > start]
    assert ws.replay.ts is not None
    assert ws.replay.ts <= int(after.min())
    assert ws.stack.cursor_ns == ws.replay.ts
    # Play at 10x: time runs, the crosshair and the ladder follow, the view keeps the cursor.
    ws.replay.speed.setCurrentIndex(ws.replay.speed.findData(10.0))
    from_ts = ws.replay.ts
    ws.replay.play.click()
    assert ws.replay.play.text() == "❚❚ Pause"
    qtbot.waitUntil(lambda: ws.replay.ts - from_ts > 2 * 10**9, timeout=5_000)
    ws.replay.play.click()
    stopped = ws.replay.ts
    qtbot.wait(150)
    assert ws.replay.ts == stopped
    assert ws.stack.cursor_ns == stopped
    v0, v1 = ws.stack.view_ns()
    assert v0 <= stopped <= v1
    qtbot.waitUntil(
        lambda: ws.last_depth is not None and ws.last_depth.ts == stopped, timeout=3_000
    )
    # Statistics of the replayed span.
    stats = ws.show_stats(from_ts, stopped)
    es_rows = quotes_of(synthetic_store, "ESZ6")
    m = (es_rows["ts"] >= from_ts) & (es_rows["ts"] <= stopped)
    assert stats[0].spread.quotes == int(m.sum())
    assert ws.stats.value("Quotes", 0) == f"{int(m.sum()):,}"
    # Playing to the end stops by itself.
    ws.replay.seek(t1 - 10**6)
    ws.replay.speed.setCurrentIndex(ws.replay.speed.findData(1000.0))
    ws.replay.play.click()
    qtbot.waitUntil(lambda: not ws.replay.play.isChecked(), timeout=3_000)
    assert ws.replay.ts == ws.replay.end


def test_a_load_can_be_cancelled(qtbot: Any, tmp_path: Path) -> None:
    from analyzer.synthetic import NS, SyntheticSpec
    from tests.unit.analyzer.conftest import write_synthetic

    path = tmp_path / "big.h5"
    write_synthetic(path, "BIG", SyntheticSpec(quotes=6_000_000, start_ns=1_699_920_000 * NS))
    ws = _workspace(qtbot)
    assert ws.open_store(path)
    job = ws.open_day("BIG", "20231114")
    assert job is not None
    assert ws.progress_row.isVisible()
    with qtbot.waitSignal(job.cancelled, timeout=30_000):
        qtbot.mouseClick(ws.progress_row.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not ws.progress_row.isVisible(), timeout=3_000)
    assert ws.stack.charts == []
    assert ws.central.currentWidget() is ws.empty


def test_a_bad_store_is_reported_in_one_line(qtbot: Any, tmp_path: Path) -> None:
    bad = tmp_path / "not.h5"
    bad.write_text("hello")
    ws = _workspace(qtbot)
    with qtbot.waitSignal(ws.error) as sig:
        assert not ws.open_store(bad)
    assert str(bad) in sig.args[0]
    assert "\n" not in sig.args[0]


# ---------------------------------------------------------------------- real data
BINANCE = [
    ("binance_spot_btcusdt_2024-08-08", "0.01", "0.00000001", False),
    ("binance_usdm_btcusdt_2024-08-08", "0.1", "0.001", True),
]


@pytest.fixture(scope="module")
def binance_stores(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    from engine.tickstore.binance import import_binance

    out: list[Path] = []
    for folder, tick, lot, futures in BINANCE:
        src = SHARED_DATA / folder / "btcusdt_20240808.gz"
        if not src.exists():
            pytest.skip(f"real data not available: {src}")
        store = tmp_path_factory.mktemp("binance") / f"{'usdm' if futures else 'spot'}.h5"
        import_binance([src], store, "BTCUSDT", tick_size=tick, lot_size=lot, futures=futures)
        out.append(store)
    return out


def test_real_binance_spot_and_perpetual_linked_with_depth_at_the_cursor(
    qtbot: Any, binance_stores: list[Path]
) -> None:
    ws = _workspace(qtbot)
    for store in binance_stores:
        assert ws.open_store(store)
    for e in [e for e in ws.browser.entries if e.day == "20240808"]:
        with qtbot.waitSignal(ws.day_opened, timeout=30_000):
            ws.open_day(e.symbol, e.day, e.store)
    spot, perp = ws.stack.charts
    assert (spot.day.label, perp.day.label) == ("BTCUSDT", "BTCUSDT (usdm)")
    t0, t1 = spot.day.span
    ts = t0 + (t1 - t0) // 2
    _move_mouse_to(qtbot, perp, ts)
    cursor = ws.stack.cursor_ns
    assert cursor is not None
    for chart in (spot, perp):
        q = chart.day.quote_at(cursor)
        assert q.bid < q.ask
        assert f"bid {q.bid:,.{chart.decimals}f}" in chart.readout
    # The ladder rebuilds the spot book from the L2 deltas; its touch is the quote's.
    qtbot.waitUntil(lambda: ws.last_depth is not None and ws.last_depth.ts == cursor, timeout=5_000)
    depth = ws.last_depth
    assert depth is not None
    assert depth.source == "l2 + bbo"
    assert len(depth.bids) == 10
    q = spot.day.quote_at(cursor)
    assert depth.bids[0] == (round(q.bid / 0.01), round(q.bid_qty / 1e-8))
    assert depth.asks[0] == (round(q.ask / 0.01), round(q.ask_qty / 1e-8))
    assert all(a[0] < b[0] for a, b in zip(depth.bids[1:], depth.bids, strict=False))
    assert all(a[0] > b[0] for a, b in zip(depth.asks[1:], depth.asks, strict=False))
    # Replay a few steps: each lands on the next event.
    ws.replay.seek(cursor)
    for _ in range(3):
        before = ws.replay.ts
        ws.replay.step.click()
        assert ws.replay.ts is not None
        assert before is not None
        assert ws.replay.ts > before
    stats = ws.show_stats(t0, t1)
    assert stats[0].trades.trades > 0
    assert not math.isnan(stats[0].vwap)
    assert stats[0].trades.buy_volume + stats[0].trades.sell_volume == pytest.approx(
        stats[0].trades.volume
    )


def test_real_binance_perpetual_with_a_backtest_clicked_and_replayed(
    qtbot: Any, binance_stores: list[Path], tmp_path: Path
) -> None:
    from engine.backtest.runner import BacktestJob, run_job

    spot, usdm = binance_stores
    journal = tmp_path / "bt.qwj"
    run_job(
        BacktestJob(
            events=str(usdm),
            journal=str(journal),
            symbol="BTCUSDT",
            day="20240808",
            tick_size="0.1",
            params=(("half_spread_ticks", 4),),
        )
    )
    ws = _workspace(qtbot)
    for store in (spot, usdm):
        assert ws.open_store(store)
        with qtbot.waitSignal(ws.day_opened, timeout=30_000):
            ws.open_day("BTCUSDT", "20240808", str(store))
    with qtbot.waitSignal(ws.overlay_loaded, timeout=30_000):
        ws.load_journal(journal)
    spot_chart, perp = ws.stack.charts
    assert spot_chart.overlay is None  # the journal's prices are the perpetual's ticks
    assert perp.overlay is not None
    fills = perp._fill_rows
    assert fills is not None
    assert fills.shape[0] > 100
    # A fill with few others within 100 ms (fills come in bursts), clicked with the mouse.
    fts = fills["ts"].astype(np.int64)
    near = np.searchsorted(fts, fts + 10**8) - np.searchsorted(fts, fts - 10**8)
    row = int(np.flatnonzero(near < 20)[len(np.flatnonzero(near < 20)) // 2])
    ts, px = int(fills["ts"][row]), float(fills["px"][row]) * 0.1
    vb = perp.getPlotItem().getViewBox()
    ws.stack.set_view(ts - 10**8, ts + 10**8)
    vb.setYRange(px - 3, px + 3, padding=0)
    qtbot.waitUntil(lambda: not perp.fetching and perp.fills_shown > 0, timeout=5_000)
    qtbot.wait(50)
    pos = perp.mapFromScene(vb.mapViewToScene(QPointF(perp.to_x(ts), px)))
    with qtbot.waitSignal(perp.execution_clicked, timeout=3_000):
        QTest.mouseClick(perp.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(pos.x(), pos.y()))
    clicked = ws.clicked_execution
    assert clicked is not None
    assert abs(int(clicked["ts"]) - ts) < 10**8
    # A backtest journal has no FIX messages: the order history tells the story.
    assert ws.fix_chain == []
    kinds = [ws.history.model().index(r, 1).data() for r in range(ws.history.rowCount())]
    assert kinds[0] == "change"
    assert "fill" in kinds
    assert ws.depth_pane.symbols.currentText() == "BTCUSDT (usdm)"
    at = int(clicked["ts"])
    qtbot.waitUntil(lambda: ws.last_depth is not None and ws.last_depth.ts == at, timeout=5_000)
    # Replay a second of the recording at 10x from the fill.
    ws.replay.speed.setCurrentIndex(ws.replay.speed.findData(10.0))
    ws.replay.play.click()
    qtbot.waitUntil(lambda: ws.replay.ts - at > 10**9, timeout=5_000)  # type: ignore[operator]
    ws.replay.play.click()
    end = ws.replay.ts
    assert end is not None
    assert ws.stack.cursor_ns == end
    v0, v1 = ws.stack.view_ns()
    assert v0 <= end <= v1
    qtbot.waitUntil(lambda: ws.last_depth is not None and ws.last_depth.ts == end, timeout=5_000)
    stats = ws.show_stats(at, end)
    assert stats[1].events > 0


def test_keys_play_and_step_and_charts_close(qtbot: Any, synthetic_store: Path) -> None:
    ws = _workspace(qtbot)
    assert ws.open_store(synthetic_store)
    assert ws.empty.title_label.text() == "No day charted"
    _open_all(qtbot, ws, synthetic_store)
    chart = ws.chart("ESZ6")
    chart.setFocus()
    start = ws.replay.ts
    qtbot.keyClick(chart, Qt.Key.Key_Right)
    assert start is not None
    assert ws.replay.ts is not None
    assert ws.replay.ts > start
    qtbot.keyClick(chart, Qt.Key.Key_Space)
    assert ws.replay.play.isChecked()
    qtbot.keyClick(chart, Qt.Key.Key_Space)
    assert not ws.replay.play.isChecked()
    ws.clear_action.trigger()
    assert ws.stack.charts == []
    assert ws.days == []
    assert ws.central.currentWidget() is ws.empty
    _open_all(qtbot, ws, synthetic_store)  # and charts again
    assert len(ws.stack.charts) == 2


def test_overlay_follows_the_journal_of_a_running_engine(
    qtbot: Any, synthetic_store: Path, tmp_path: Path
) -> None:
    import functools

    from engine.demo import build_demo
    from engine.embedded import EmbeddedEngineClient

    ws = AnalyzerWorkspace(journal_dir=tmp_path)
    qtbot.addWidget(ws)
    with qtbot.waitSignal(ws.error):
        assert ws.overlay_engine_journal() is None  # nothing journaled yet: said so
    client = EmbeddedEngineClient(configure=functools.partial(build_demo, journal_dir=tmp_path))
    client.start()
    try:
        counts: list[int] = []
        for _ in range(2):
            qtbot.wait(3_000)  # the demo trades meanwhile
            client.drain()
            with qtbot.waitSignal(ws.overlay_loaded, timeout=30_000) as sig:
                assert ws.overlay_engine_journal() is not None
            counts.append(sig.args[0])
        assert 0 < counts[0] < counts[1]  # the running engine's fills, re-read as they grow
    finally:
        client.close()
