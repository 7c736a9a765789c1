# SPDX-License-Identifier: MIT
"""The backtester and the playback on real recordings imported into the tick store.

Data by path from ``../shared/data`` (skipped where absent): Binance BTCUSDT spot depth,
quotes and trades, imported with the engine's importer.
"""

import dataclasses
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from engine.backtest.runner import BacktestJob, load_events, run_job
from engine.enums import OrdType, Side, TimeInForce
from engine.instruments import Instrument
from engine.posttrade import load_day
from engine.sim.exchange import SimExchange
from engine.sim.playback import TickPlayback, load_recorded, playback_listing
from engine.tickstore.binance import import_binance

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[4]
SRC = ROOT.parent / "shared" / "data" / "binance_spot_btcusdt_2024-08-08" / "btcusdt_20240808.gz"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not SRC.exists():
        pytest.skip(f"real data not available: {SRC}")
    path = tmp_path_factory.mktemp("real") / "btc.h5"
    import_binance([SRC], path, "BTCUSDT", tick_size="0.01", lot_size="0.00000001")
    return path


def _job(store: Path, out: Path, **kw: object) -> BacktestJob:
    base = BacktestJob(
        events=str(store),
        journal=str(out),
        symbol="BTCUSDT",
        day="20240808",
        tick_size="0.01",
        params=(
            ("qty_lots", 1000),
            ("half_spread_ticks", 1),
            ("skew_ticks_per_lot", 0.001),
            ("max_position_lots", 10_000),
        ),
    )
    return dataclasses.replace(base, **kw)  # type: ignore[arg-type]


def test_store_day_replays_with_recorded_latency_deterministically(
    store: Path, tmp_path: Path
) -> None:
    ev, recv = load_events(_job(store, tmp_path / "x.qwj"))
    assert recv is not None
    assert recv.shape == ev["ts"].shape
    assert (np.diff(ev["ts"]) >= 0).all()
    a = run_job(_job(store, tmp_path / "a.qwj", recorded_latency=True))
    b = run_job(_job(store, tmp_path / "b.qwj", recorded_latency=True))
    assert a.events == ev.shape[0]
    assert a.journal_sha256 == b.journal_sha256
    day = load_day(tmp_path / "a.qwj")
    assert len(day.orders) == a.orders > 10
    assert len(day.executions) == a.fills > 0


def test_cli_backtests_a_stored_day(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "cli.qwj"
    proc = subprocess.run(
        [sys.executable, "-m", "app", "backtest", str(store), "--symbol", "BTCUSDT",
         "--day", "20240808", "--recorded-latency", "--out", str(out), "--quiet",
         "--param", "qty_lots=100"],
        capture_output=True, text=True, check=False, cwd=ROOT, timeout=240,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert out.exists()
    missing = subprocess.run(
        [sys.executable, "-m", "app", "backtest", str(store), "--symbol", "ETHUSDT", "--quiet"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=240,
    )
    assert missing.returncode == 2
    assert "no days stored for 'ETHUSDT'" in missing.stderr


def test_playback_of_a_stored_day_rebuilds_the_recorded_touch(store: Path) -> None:
    ev = load_recorded(store, "BTCUSDT", "20240808")
    ev = ev[ev["kind"] != 2]  # the opening clear: the exchange starts empty anyway
    inst = Instrument(symbol="BTCUSDT", tick_size=Decimal("0.01"), lot_size=Decimal("0.00000001"))
    near = ev[np.abs(ev["px"] - np.median(ev["px"])) < 20_000]  # the levels near the touch
    ex = SimExchange([playback_listing(inst, near, margin_ticks=100)])
    pb = TickPlayback(ex, "BTCUSDT", near, start_ns=0)
    ex.attach_playback(pb)
    ex.step(0)
    t_half = int(near["ts"][near.shape[0] // 2] - near["ts"][0])
    ex.step(t_half)
    bids, asks = ex.depth("BTCUSDT", 1)
    assert bids
    assert asks
    assert bids[0][0] < asks[0][0]
    # a client bid at the touch trades once the recorded sells reach it
    ex.submit(5, "C1", "BTCUSDT", Side.BUY, 1, bids[0][0], OrdType.LIMIT, TimeInForce.DAY, t_half)
    reps = ex.step(int(near["ts"][-1] - near["ts"][0]))
    assert pb.done
    assert [(r.client, r.last_qty_lots, r.last_px_ticks) for r in reps] == [(5, 1, bids[0][0])]


ES = ROOT.parent / "shared" / "data" / "cme_globex_esh4_mbo_2023-12-25"


def test_cme_mbo_day_backtests_at_exact_queue_positions(tmp_path: Path) -> None:
    src = ES / "esh4-glbx-mdp3-20231225.mbo.dbn.zst"
    if not src.exists():
        pytest.skip(f"real data not available: {src}")
    from engine.tickstore.dbn import import_dbn

    store = tmp_path / "es.h5"
    import_dbn([src], store, tick_size="0.25")
    out: dict[bool, int] = {}
    for generic in (False, True):
        job = BacktestJob(
            events=str(store),
            journal=str(tmp_path / f"{generic}.qwj"),
            symbol="ESH4",
            level="l3",
            tick_size="0.25",
            recorded_latency=True,
            generic=generic,
            params=(("half_spread_ticks", 1),),
        )
        a, b = run_job(job), run_job(dataclasses.replace(job, journal=str(tmp_path / "again")))
        assert a.journal_sha256 == b.journal_sha256
        assert a.events == 59_448
        out[generic] = a.fills
    # The compiled step and the Python strategy through the OMS trade the same day alike.
    # Only 2 fills: nothing trades before the 23:00 open (the 1,324 fills there were the
    # snapshot and the crossed pre-open book), and the MBO rows carry no executions (F
    # records are not stored), so a quote fills only when the touch crosses it.
    assert out[False] == out[True] == 2


def test_pnl_in_currency_uses_the_stored_lot_and_the_multiplier(
    store: Path, tmp_path: Path
) -> None:
    # The store recorded BTCUSDT with 0.01 USDT ticks and 1e-8 BTC lots: a tick-lot is 1e-10.
    plain = run_job(_job(store, tmp_path / "a.qwj", currency="USDT"))
    assert plain.fills > 0
    assert plain.pnl_ticks != 0
    assert plain.pnl == pytest.approx(plain.pnl_ticks * 1e-10)
    assert plain.currency == "USDT"
    scaled = run_job(_job(store, tmp_path / "b.qwj", multiplier="1000", currency="USDT"))
    assert scaled.pnl_ticks == plain.pnl_ticks  # the same trading
    assert scaled.pnl == pytest.approx(plain.pnl * 1000)
