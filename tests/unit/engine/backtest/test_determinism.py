# SPDX-License-Identifier: MIT
"""The same backtest twice gives byte-identical journals, which post-trade reads back."""

from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from engine.backtest.fast import FastBacktest, write_journal
from engine.backtest.generic import GenericBacktest
from engine.backtest.journal import BacktestJournal
from engine.backtest.models import ConstantLatency, RecordedLatency
from engine.backtest.runner import BacktestJob, run_job, run_sweep, sweep_jobs
from engine.backtest.synthetic import random_walk_l2
from engine.enums import OrdStatus
from engine.instruments import Instrument
from engine.journal import JournalReader
from engine.matching.models import PowerProbQueue
from engine.posttrade import load_day
from engine.strategy.examples import CompiledMarketMaker, MarketMaker, Taker

INST = Instrument(symbol="RW", tick_size=Decimal("0.01"))
LAT = ConstantLatency(feed_ns=50_000, order_ns=200_000, response_ns=200_000)


@pytest.fixture(scope="module")
def events() -> np.ndarray:
    return random_walk_l2(20_000, seed=3)


def _fast_journal(ev: np.ndarray, path: Path) -> bytes:
    mm = CompiledMarketMaker(7, ["RW"], half_spread_ticks=1, skew_ticks_per_lot=0.2)
    res = FastBacktest(mm, INST, queue=PowerProbQueue(3.0), latency=LAT).run(ev)
    with BacktestJournal(path, int(ev["ts"][0])) as jr:
        write_journal(jr, res, mm, INST)
    return path.read_bytes()


def _generic_journal(ev: np.ndarray, path: Path) -> bytes:
    mm = MarketMaker(7, ["RW"], half_spread_ticks=1, skew_ticks_per_lot=0.2)
    tk = Taker(8, ["RW"], cooldown_ms=20)
    GenericBacktest([mm, tk], INST, queue=PowerProbQueue(3.0), latency=LAT).run(ev, path)
    return path.read_bytes()


def test_fast_backtest_twice_gives_byte_identical_journals(
    events: np.ndarray, tmp_path: Path
) -> None:
    a = _fast_journal(events, tmp_path / "a.qwj")
    b = _fast_journal(events, tmp_path / "b.qwj")
    assert a == b
    day = load_day(tmp_path / "a.qwj")
    assert len(day.executions) > 10
    assert set(day.orders["status"].tolist()) <= {
        int(OrdStatus.FILLED), int(OrdStatus.CANCELED), int(OrdStatus.NEW),
        int(OrdStatus.PARTIALLY_FILLED),
        int(OrdStatus.REJECTED),  # a re-quote whose order filled first (as the OMS refuses it)
    }  # fmt: skip
    # every fill of an order adds up to its cumulative quantity
    for o in day.orders:
        ex = day.executions[day.executions["order_id"] == o["order_id"]]
        assert int(ex["qty"].sum()) == int(o["cum_qty"])


def test_generic_backtest_twice_gives_byte_identical_journals(
    events: np.ndarray, tmp_path: Path
) -> None:
    ev = events[:6000]
    a = _generic_journal(ev, tmp_path / "a.qwj")
    b = _generic_journal(ev, tmp_path / "b.qwj")
    assert a == b
    day = load_day(tmp_path / "a.qwj")
    assert len(day.orders) > 5
    assert sorted(set(day.orders["strategy"].tolist())) == [7, 8]
    assert JournalReader(tmp_path / "a.qwj").torn_tail is None


def test_journal_has_no_wall_clock_or_pid(events: np.ndarray, tmp_path: Path) -> None:
    _fast_journal(events[:3000], tmp_path / "a.qwj")
    recs = list(JournalReader(tmp_path / "a.qwj").records())
    opened = recs[0]
    assert opened.pid == 0  # type: ignore[union-attr]
    assert opened.ts == int(events["ts"][0])  # type: ignore[union-attr]


def test_recorded_latency_must_match_the_events(events: np.ndarray) -> None:
    lat = RecordedLatency(np.zeros(5, np.int64))
    mm = CompiledMarketMaker(1, ["RW"])
    with pytest.raises(ValueError, match="5 latencies for"):
        FastBacktest(mm, INST, latency=lat).run(events)
    with pytest.raises(ValueError, match="row 1 is -3 ns"):
        RecordedLatency(np.array([0, -3]))


def test_recorded_latency_delays_fills_by_the_recorded_amounts(events: np.ndarray) -> None:
    ev = events[:5000]
    mm = CompiledMarketMaker(1, ["RW"], half_spread_ticks=1)
    slow = RecordedLatency(np.full(ev.shape[0], 400_000, np.int64))
    a = FastBacktest(mm, INST, latency=slow).run(ev)
    b = FastBacktest(
        CompiledMarketMaker(1, ["RW"], half_spread_ticks=1),
        INST,
        latency=ConstantLatency(400_000, 400_000, 400_000),
    ).run(ev)
    assert a.fills.tolist() == b.fills.tolist()
    assert a.orders.shape[0] > 0


def test_sweep_on_processes_equals_serial(events: np.ndarray, tmp_path: Path) -> None:
    src = tmp_path / "day.npy"
    np.save(src, events[:8000])
    base = BacktestJob(events=str(src), journal="", symbol="RW", order_ns=100_000)
    grid = [{"half_spread_ticks": 1}, {"half_spread_ticks": 2}]
    par = run_sweep(sweep_jobs(base, [str(src), str(src)], grid, tmp_path / "p"), workers=2)
    ser = run_sweep(sweep_jobs(base, [str(src), str(src)], grid, tmp_path / "s"), mode="serial")
    assert [r.journal_sha256 for r in par] == [r.journal_sha256 for r in ser]
    assert [(r.orders, r.fills, r.position, r.pnl_ticks) for r in par] == [
        (r.orders, r.fills, r.position, r.pnl_ticks) for r in ser
    ]
    assert par[0].journal_sha256 != par[1].journal_sha256  # the parameter mattered
    assert par[0].journal_sha256 == par[2].journal_sha256  # same day file, same parameters


def test_run_job_generic_and_summary(events: np.ndarray, tmp_path: Path) -> None:
    src = tmp_path / "day.npy"
    np.save(src, events[:3000])
    job = BacktestJob(
        events=str(src),
        journal=str(tmp_path / "g.qwj"),
        symbol="RW",
        strategy="taker",
        generic=True,
        params=(("cooldown_ms", 10),),
    )
    s = run_job(job)
    assert s.events == 3000
    assert s.orders == len(load_day(tmp_path / "g.qwj").orders)


def test_fast_journal_decodes_to_the_engine_events(events: np.ndarray, tmp_path: Path) -> None:
    from engine.events import OrderChanged, OrderFilled
    from engine.journal import JournalEvent, read_journal

    _fast_journal(events[:8000], tmp_path / "a.qwj")
    evs = [r.event for r in read_journal(tmp_path / "a.qwj") if isinstance(r, JournalEvent)]
    changes = [e for e in evs if isinstance(e, OrderChanged)]
    fills = [e for e in evs if isinstance(e, OrderFilled)]
    assert changes
    assert fills
    first = changes[0]
    assert (first.change, first.order.status, first.order.client_order_id) == (
        "new",
        OrdStatus.PENDING_NEW,
        "BT1",
    )
    filled = [c.order for c in changes if c.change == "fill"]
    assert filled
    assert all(v.leaves_qty_lots == 0 and v.avg_px_ticks > 0 for v in filled)
    ts = [c.ts_event for c in changes]
    assert ts == sorted(ts)


def test_fast_path_names_the_first_event_out_of_time_order(events: np.ndarray) -> None:
    ev = events[:100].copy()
    ev["ts"][40] = ev["ts"][39] - 1
    with pytest.raises(ValueError, match="row 40 has ts"):
        FastBacktest(CompiledMarketMaker(1, ["RW"]), INST).run(ev)
    with pytest.raises(ValueError, match="needs L3_EVENT_DTYPE"):
        FastBacktest(CompiledMarketMaker(1, ["RW"]), INST, level="l3").run(ev)


def test_fast_path_results_do_not_depend_on_chunks_or_growth() -> None:
    ev = random_walk_l2(120_000, seed=21)

    def run(chunk: int) -> tuple[list[object], list[object], int]:
        mm = CompiledMarketMaker(1, ["RW"], half_spread_ticks=1, skew_ticks_per_lot=0.1)
        r = FastBacktest(mm, INST, latency=LAT, chunk_events=chunk).run(ev)
        return r.fills.tolist(), r.orders.tolist(), r.decisions

    whole, chunked = run(1 << 22), run(7_777)
    assert len(whole[1]) > 4096  # the own-order arrays grew on the way
    assert whole == chunked


def test_trade_analyzer_overlay_reads_backtest_journals(events: np.ndarray, tmp_path: Path) -> None:
    from analyzer.overlay import load_overlay

    _fast_journal(events[:8000], tmp_path / "fast.qwj")
    _generic_journal(events[:3000], tmp_path / "generic.qwj")
    for name in ("fast.qwj", "generic.qwj"):
        ov = load_overlay(tmp_path / name)
        assert ov.symbols == ("RW",)
        day = load_day(tmp_path / name)
        assert len(ov.executions("RW")) == len(day.executions) > 0
