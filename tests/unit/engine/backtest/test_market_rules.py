# SPDX-License-Identifier: MIT
"""Market-state rules (engine.backtest.rules) and the two paths agreeing, on real data.

Real recordings by path from ``../shared/data`` (skipped where absent), sliced so that each
case runs in seconds: Binance USD-M and spot (L2, imported with the engine's importer) and
the CME ESH4 market-by-order day (L3: snapshot at midnight, pre-open with a crossed book,
first trade at 23:00). Both paths run the same strategy and settings through
:func:`engine.backtest.runner.run_job`, the ``qwconsole backtest`` entry point.
"""

import gzip
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from engine.backtest.fast import FastBacktest
from engine.backtest.generic import GenericBacktest
from engine.backtest.models import MIN_LATENCY_NS, Level, RecordedLatency
from engine.backtest.rules import book_touch, market_rules
from engine.backtest.runner import BacktestJob, load_events, run_job, session_open
from engine.instruments import Instrument
from engine.posttrade import load_day
from engine.strategy.examples import CompiledMarketMaker
from engine.types import BUY, L2_CLEAR, L2_EVENT_DTYPE, L2_SET, L2_TRADE, OWN_CANCELED, SELL

DATA = Path(__file__).resolve().parents[5] / "shared" / "data"
INST = Instrument(symbol="T", tick_size=Decimal("1"))


def l2(rows: list[tuple[int, int, int, int, int]]) -> npt.NDArray[np.void]:
    """L2 events from ``(ts, kind, side, px, qty)``."""
    ev = np.zeros(len(rows), L2_EVENT_DTYPE)
    for i, (ts, kind, side, px, qty) in enumerate(rows):
        ev[i]["ts"], ev[i]["kind"], ev[i]["side"], ev[i]["px"], ev[i]["qty"] = (
            ts, kind, side, px, qty,
        )  # fmt: skip
    return ev


# A snapshot at t=1000, a pre-open auction (crossed at 2000), the first trade at 4000.
PRE_OPEN = [
    (1000, L2_CLEAR, 0, 0, 0),
    (1000, L2_SET, BUY, 100, 5),
    (1000, L2_SET, SELL, 102, 5),
    (2000, L2_SET, BUY, 103, 2),  # crossed: the auction collects orders
    (3000, L2_SET, BUY, 103, 0),  # uncrossed, still before the open
    (4000, L2_TRADE, SELL, 101, 1),  # the opening trade
    (4000, L2_SET, SELL, 101, 3),
    (5000, L2_SET, BUY, 101, 4),  # locks the book
    (6000, L2_SET, BUY, 101, 0),
    (7000, L2_SET, SELL, 101, 0),
    (8000, L2_TRADE, BUY, 102, 1),
]


def test_rules_warm_up_over_snapshot_and_pre_open_and_whole_updates() -> None:
    ev = l2(PRE_OPEN)
    r = market_rules(ev, "l2")
    assert r.snapshot_rows == 3
    assert r.open_ts == 4000
    assert r.live_from == 5  # the opening update; the book before it was sound (100/102)
    assert r.group_end.tolist() == [0, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1]
    assert r.crossed_after == 1  # the locked book at 5000
    # no crossed book before the first trade: no auction, live after the snapshot
    calm = l2([row for row in PRE_OPEN if row[0] not in (2000, 3000)])
    assert market_rules(calm, "l2").live_from == 3


def test_both_paths_send_nothing_before_the_live_market(tmp_path: Path) -> None:
    ev = l2(PRE_OPEN)
    fast = FastBacktest(CompiledMarketMaker(1, ["T"], half_spread_ticks=1), INST, level="l2")
    res = fast.run(ev)
    assert res.orders.shape[0] > 0
    assert int(res.sent_ns.min()) >= 4000  # the strategy first saw the opening update
    gen = GenericBacktest([CompiledMarketMaker(1, ["T"], half_spread_ticks=1)], INST)
    g = gen.run(ev, tmp_path / "g.qwj")
    created = load_day(tmp_path / "g.qwj").orders["ts_created"]
    assert g.orders == created.shape[0] > 0
    assert int(created.min()) >= 4000


def test_recorded_latency_of_zero_still_takes_time() -> None:
    """A recorder clock behind the venue's gives ts_recv < ts: latency 0 after clipping."""
    lat = RecordedLatency.from_times([10, 20, 30], [5, 20, 29])
    feed, order, resp = lat.arrays(3)
    assert feed.tolist() == [0, 0, 0]
    assert order.tolist() == resp.tolist() == [MIN_LATENCY_NS] * 3


def _binance_slice(tmp: Path, folder: str, lines: int, tick: str, lot: str, fut: bool) -> Path:
    from engine.tickstore.binance import import_binance

    src = DATA / folder / "btcusdt_20240808.gz"
    if not src.exists():
        pytest.skip(f"real data not available: {src}")
    with gzip.open(src, "rb") as fh:
        head = [fh.readline() for _ in range(lines)]
    cut = tmp / "cut.gz"
    with gzip.open(cut, "wb") as fh:
        fh.writelines(head)
    store = tmp / "b.h5"
    import_binance([cut], store, "BTCUSDT", tick_size=tick, lot_size=lot, futures=fut)
    return store


def _esh4(tmp: Path) -> Path:
    from engine.tickstore.dbn import import_dbn

    src = DATA / "cme_globex_esh4_mbo_2023-12-25" / "esh4-glbx-mdp3-20231225.mbo.dbn.zst"
    if not src.exists():
        pytest.skip(f"real data not available: {src}")
    store = tmp / "es.h5"
    import_dbn([src], store, tick_size="0.25")
    return store


def real_day(tmp: Path, name: str) -> tuple[Path, str, str, Level, str]:
    """Return (store, symbol, day, level, tick size) of a shared real day sliced for tests."""
    if name == "usdm":
        store = _binance_slice(tmp, "binance_usdm_btcusdt_2024-08-08", 30_000, "0.1", "0.001", True)
        return store, "BTCUSDT", "20240808", "l2", "0.1"
    if name == "spot":
        store = _binance_slice(
            tmp, "binance_spot_btcusdt_2024-08-08", 20_000, "0.01", "0.00000001", False
        )
        return store, "BTCUSDT", "20240808", "l2", "0.01"
    return _esh4(tmp), "ESH4", "20231225", "l3", "0.25"


REAL = [
    pytest.param("usdm", id="binance-usdm"),
    pytest.param("spot", id="binance-spot"),
    pytest.param("esh4", id="cme-esh4-mbo"),
]
# Recorded latency (Binance: 0 after clipping, so the 1 us floor; ESH4: per event, feed > 0)
# and a constant one with feed latency, where the strategy sees each update 0.5 ms late.
LATENCY = [
    pytest.param({"recorded_latency": True}, id="recorded"),
    pytest.param(
        {"feed_ns": 500_000, "order_ns": 1_000_000, "response_ns": 1_000_000}, id="constant"
    ),
]


@pytest.mark.parametrize("latency", LATENCY)
@pytest.mark.parametrize("name", REAL)
def test_real_day_both_paths_fill_alike_and_never_before_the_open_or_crossed(
    tmp_path: Path, name: str, latency: dict[str, Any]
) -> None:
    store, sym, day, level, tick = real_day(tmp_path, name)
    fills = {}
    summaries = {}
    for generic in (False, True):
        job = BacktestJob(
            events=str(store),
            journal=str(tmp_path / f"{generic}.qwj"),
            symbol=sym,
            day=day,
            level=level,
            tick_size=tick,
            generic=generic,
            params=(("half_spread_ticks", 1),),
            **latency,
        )
        summaries[generic] = run_job(job)
        ex = load_day(job.journal).executions[["ts", "px", "qty", "side"]]
        fills[generic] = np.sort(ex, order=["ts", "side", "px"])
    # one strategy, one answer: the same fills and P&L on both paths
    assert fills[False].shape[0] > 0
    assert fills[False].tolist() == fills[True].tolist()
    assert summaries[False].pnl_ticks == summaries[True].pnl_ticks
    assert summaries[False].position == summaries[True].position
    # no fill before the first live event, none while the book is crossed
    ev, _recv = load_events(job)
    rules = market_rules(ev, level, session_open(job))
    ts = ev["ts"]
    f_ts = fills[False]["ts"]
    assert int(f_ts.min()) > int(ts[rules.live_from])
    touch = book_touch(ev, level)
    at = np.searchsorted(ts, f_ts, side="right") - 1
    crossed = (touch[at, 1] > 0) & (touch[at, 3] > 0) & (touch[at, 0] >= touch[at, 2])
    assert not crossed.any()
    if name == "esh4":  # the snapshot is at 00:00, the open at 23:00 (was 1,324 fills before)
        assert rules.snapshot_rows == 0
        assert rules.open_ts == 1_703_545_200_000_000_000
        assert int(f_ts.min()) >= rules.open_ts


def test_real_usdm_re_quotes_refused_when_the_quote_filled_first(tmp_path: Path) -> None:
    """The fast path's re-quote is the OMS's replace: refused when the order filled first."""
    store = _binance_slice(
        tmp_path, "binance_usdm_btcusdt_2024-08-08", 30_000, "0.1", "0.001", True
    )
    job = BacktestJob(
        events=str(store),
        journal=str(tmp_path / "x.qwj"),
        symbol="BTCUSDT",
        day="20240808",
        tick_size="0.1",
        recorded_latency=True,
    )
    ev, recv = load_events(job)
    assert recv is not None
    res = FastBacktest(
        CompiledMarketMaker(1, ["BTCUSDT"]),
        Instrument(symbol="BTCUSDT", tick_size=Decimal("0.1")),
        latency=RecordedLatency.from_times(ev["ts"], recv),
    ).run(ev)
    o = res.orders
    refused = (
        (o["status"] == OWN_CANCELED) & (o["cancel_ts"] <= o["ts"]) & (res.cancel_sent_ns == 0)
    )
    assert int(refused.sum()) > 0
    assert not np.isin(np.flatnonzero(refused) + 1, res.fills["order_id"]).any()
    assert (res.fills["ts"] >= res.sent_ns[res.fills["order_id"] - 1] + MIN_LATENCY_NS).all()


def test_simulated_lobster_day_with_executions_fills_alike_on_both_paths(tmp_path: Path) -> None:
    """L3 with executions (LOBSTER type 4): the queue fills of both paths are the same.

    No LOBSTER file is shared, so the pair comes from the importer tests' simulated book.
    """
    from engine.tickstore.lobster import import_lobster
    from tests.unit.engine.tickstore.test_importers import make_lobster

    m, b, _ = make_lobster(tmp_path, 6000)
    store = tmp_path / "l.h5"
    import_lobster([(m, b)], store, "XYZ", tick_size="0.01")
    fills = {}
    for generic in (False, True):
        job = BacktestJob(
            events=str(store),
            journal=str(tmp_path / f"{generic}.qwj"),
            symbol="XYZ",
            day="20120621",
            level="l3",
            tick_size="0.01",
            generic=generic,
            feed_ns=500_000,
            order_ns=1_000_000,
            response_ns=1_000_000,
            params=(("half_spread_ticks", 1),),
        )
        run_job(job)
        ex = load_day(job.journal).executions[["ts", "px", "qty", "side"]]
        fills[generic] = np.sort(ex, order=["ts", "side", "px"]).tolist()
    assert len(fills[False]) > 100
    assert fills[False] == fills[True]


def test_an_mbo_only_day_at_l2_and_several_stores_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from engine.backtest.cli import main

    store = _esh4(tmp_path)
    base = ["--symbol", "ESH4", "--tick-size", "0.25", "--out", str(tmp_path / "x.qwj"), "--quiet"]
    assert main([str(store), *base]) == 2
    assert capsys.readouterr().err == (
        f"qwconsole backtest: error: {store}: ESH4/20231225 holds market-by-order rows and no "
        "L2 depth: use --level l3\n"
    )
    other = tmp_path / "other.h5"
    other.write_bytes(store.read_bytes())
    with pytest.raises(SystemExit) as stop:  # a usage error, as argparse gives them
        main([str(store), str(other), *base])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"qwconsole backtest: error: 2 inputs with a tick store ({store}, ")
    assert "a run reads one store; give its days with --day D1 --day D2" in err
    assert not (tmp_path / "x.qwj").exists()
