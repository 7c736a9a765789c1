# SPDX-License-Identifier: MIT
"""MDP 3.0 SecurityStatus as the backtester's trading status.

* A real CME capture (schema v8) whose statuses are all per SecurityGroup (PreOpen,
  NewPriceIndication, ReadyToTrade) gives an instrument its pre-open once its group is known,
  and says clearly when it is not.
* The simulator's MDP 3.0 feed halts a whole group and resumes it; the instruments'
  definitions on the same feed map the group to its instruments, in a decoded stream and in
  live books alike.
* The generic backtest with that status fills no own order while the market is halted and
  rejects the orders and replaces that arrive then (the same run without the status does
  fill then); the fast path starts after a recorded pre-open and refuses a mid-run halt.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.backtest.fast import FastBacktest
from engine.backtest.generic import GenericBacktest
from engine.backtest.models import ConstantLatency
from engine.backtest.rules import TradingStatus
from engine.backtest.synthetic import random_walk_l2
from engine.events import OrderFilled, OrderView
from engine.feeds.sbe.encoder import pack_mdp3
from engine.feeds.sbe.live import Mdp3Books
from engine.feeds.sbe.mdp3 import decode_capture, decode_payloads
from engine.feeds.sbe.schema_xml import load_schema
from engine.feeds.sbe.status import status_from_log, trading_status
from engine.instruments import Instrument
from engine.posttrade import load_day
from engine.sim.exchange import FlowConfig, SimExchange, SimInstrument
from engine.sim.mdp3_feed import READY_TO_TRADE, TRADING_HALT, SimMdp3Feed
from engine.strategy.examples import CompiledMarketMaker, MarketMaker
from tests.conftest import SHARED
from tests.factories import make_instrument

DATA = SHARED / "data/cme_mdp3_sbe"
V8 = DATA / "schema/Cme.Futures.Mdp3.Sbe.v1.8.xml"
V9 = DATA / "schema/Cme.Futures.Mdp3.Sbe.v1.9.xml"
CAPTURE = DATA / "pcap/Mdp3.Sbe.v1.8__Cme.Mdp3.Sbe.v8.1.Example.pcap"
INST = Instrument(symbol="T", tick_size=Decimal("1"))


def _need(*paths: Any) -> None:
    for p in paths:
        if not p.is_file():
            pytest.skip(f"{p} is not here")


def test_group_statuses_of_a_real_capture_reach_an_instrument_through_its_group() -> None:
    _need(V8, CAPTURE)
    cap = decode_capture(CAPTURE, V8)
    rows = cap.template("SecurityStatus").rows
    assert bool((rows["SecurityID"] == 2**31 - 1).all())  # group-wide only, no definitions
    with pytest.raises(ValueError, match=r"SecurityID 4418: .* no definition of its Security"):
        trading_status(cap, 4418)
    st = trading_status(cap, 4418, groups={4418: "6E"})
    mine = rows[rows["SecurityGroup"] == b"6E"]
    ts = {
        code: int(mine["TransactTime"][mine["SecurityTradingStatus"] == code].min())
        for code in (21, 17)
    }
    assert [st.names[0], st.names[-1]] == ["PreOpen", "ReadyToTrade"]
    assert st.halts().tolist() == [[ts[21], ts[17]]]  # pre-open until ReadyToTrade
    assert st.at(ts[21]) == (False, "PreOpen")
    assert st.at(ts[17])[0]
    other = trading_status(cap, 4418, groups={4418: "NO"})  # another group: other times
    assert other.halts().shape[0] == 1
    assert trading_status(cap, 4418, groups={4418: "ZZ"}).ts.shape[0] == 0  # no status at all


def _sim_feed_with_a_group_halt(t0: int, t1: int, t2: int) -> tuple[SimMdp3Feed, list[bytes]]:
    schema = load_schema(V9)
    flow = FlowConfig(events_per_second=2_000)
    ex = SimExchange(
        [
            SimInstrument(instrument=make_instrument("ESZ6"), start_px_ticks=20_000, flow=flow),
            SimInstrument(instrument=make_instrument("ESH7"), start_px_ticks=20_100, flow=flow),
            SimInstrument(instrument=make_instrument("NQZ6"), start_px_ticks=80_000, flow=flow),
        ],
        seed=3,
    )
    feed = SimMdp3Feed(ex, schema, t0, groups={"ESZ6": "ES", "ESH7": "ES", "NQZ6": "NQ"})
    ex.order_feed = feed
    ex.seed_books(t0)
    ex.step(t0 + 1)
    ex.step(t1 - 1)
    feed.security_status(t1, TRADING_HALT, group="ES")
    ex.step(t2 - 1)
    feed.security_status(t2, READY_TO_TRADE, group="ES")
    ex.step(t2 + 1_000_000)
    return feed, pack_mdp3(feed.take(), 1_472, 1, t2)


def test_a_group_halt_on_the_simulators_feed_reaches_its_instruments_only() -> None:
    _need(V9)
    t0, t1, t2 = 1_000_000_000, 2_000_000_000, 3_000_000_000
    feed, packets = _sim_feed_with_a_group_halt(t0, t1, t2)
    es, esh, nq = feed.security_ids
    # decoded whole: the stream's own definitions map the group to its instruments
    cap = decode_payloads(packets, load_schema(V9))
    for sid in (es, esh):
        st = trading_status(cap, sid)
        assert st.halts().tolist() == [[t1, t2]]
        assert st.at(t1) == (False, "TradingHalt")
    assert trading_status(cap, nq).halts().shape[0] == 0
    # and live: what the books saw gives the same
    books = Mdp3Books(load_schema(V9), from_start=True)
    for s in ("ESZ6", "ESH7", "NQZ6"):
        books.add_instrument(make_instrument(s))
    books.on_packets(packets)
    for sid in (es, esh):
        assert status_from_log(books.status_log, sid).halts().tolist() == [[t1, t2]]
    assert status_from_log(books.status_log, nq).halts().shape[0] == 0


class _Recorder(MarketMaker):
    """The market maker, keeping its fills' venue times and the texts of its orders."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.fill_ts: list[int] = []
        self.texts: list[str] = []

    def on_fill(self, fill: OrderFilled) -> None:
        self.fill_ts.append(fill.ts_event)
        super().on_fill(fill)

    def on_order(self, order: OrderView) -> None:
        if order.text:
            self.texts.append(order.text)
        super().on_order(order)


def _halted_run(status: TradingStatus | None) -> tuple[_Recorder, GenericBacktest]:
    ev = random_walk_l2(20_000, seed=3, levels=6, p_trade=0.15, gap_ns=250_000.0)
    s = _Recorder(1, ["T"], half_spread_ticks=1, requote_ticks=1)
    lat = ConstantLatency(feed_ns=100_000, order_ns=200_000, response_ns=200_000)
    bt = GenericBacktest([s], INST, latency=lat)
    bt.run(ev, status=status)
    return s, bt


def test_the_generic_backtest_fills_nothing_while_the_recorded_status_halts() -> None:
    ev = random_walk_l2(20_000, seed=3, levels=6, p_trade=0.15, gap_ns=250_000.0)
    a, b = int(ev["ts"][0]), int(ev["ts"][-1])
    h0, h1 = a + (b - a) // 3, a + 2 * (b - a) // 3
    status = TradingStatus(
        np.array([h0, h1]),
        np.array([False, True]),
        np.array([2, 17]),
        ("TradingHalt", "ReadyToTrade"),
    )
    free, _ = _halted_run(None)
    held, bt = _halted_run(status)
    inside = [t for t in free.fill_ts if h0 <= t < h1]
    assert len(inside) > 3  # without the status the market maker fills during the halt
    assert [t for t in held.fill_ts if h0 <= t < h1] == []
    assert [t for t in held.fill_ts if t < h0] == [t for t in free.fill_ts if t < h0]
    assert [t for t in held.fill_ts if t >= h1]  # and it trades again after it
    assert bt.halted_requests > 0
    assert any("not open for trading (status TradingHalt)" in x for x in held.texts)


def test_the_fast_path_starts_after_a_pre_open_and_refuses_a_mid_run_halt() -> None:
    ev = random_walk_l2(20_000, seed=5, levels=6, p_trade=0.15, gap_ns=250_000.0)
    a, b = int(ev["ts"][0]), int(ev["ts"][-1])
    open_at = a + (b - a) // 4

    def run(status: TradingStatus | None) -> Any:
        mm = CompiledMarketMaker(1, ["T"], half_spread_ticks=1)
        lat = ConstantLatency(feed_ns=50_000, order_ns=200_000, response_ns=200_000)
        fb = FastBacktest(mm, INST, latency=lat)
        return fb.run(ev, status=status), fb

    pre = TradingStatus(np.array([a, open_at]), np.array([False, True]), np.array([21, 17]))
    got, fb = run(pre)
    assert int(ev["ts"][fb.rules.live_from]) >= open_at
    assert got.fills.shape[0] > 0
    assert bool((got.fills["ts"] >= open_at).all())
    free, fb0 = run(None)
    assert fb0.rules.live_from < fb.rules.live_from
    assert bool((free.fills["ts"] < open_at).any())  # without it, it trades in the pre-open
    mid = TradingStatus(np.array([open_at, b - 10]), np.array([False, True]), np.array([2, 17]))
    with pytest.raises(ValueError, match=r"status: the market halts at event .* run the generic"):
        run(mid)


def test_qwconsole_backtest_takes_a_saved_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from engine.backtest.cli import main

    ev = random_walk_l2(20_000, seed=3, levels=6, p_trade=0.15, gap_ns=250_000.0)
    events = tmp_path / "ev.npy"
    np.save(events, ev)
    a, b = int(ev["ts"][0]), int(ev["ts"][-1])
    halt = TradingStatus(
        np.array([a + (b - a) // 3, a + 2 * (b - a) // 3]),
        np.array([False, True]),
        np.array([2, 17]),
    )
    status = tmp_path / "status.npy"
    halt.save(status)
    again = TradingStatus.load(status)
    assert again.halts().tolist() == halt.halts().tolist()
    common = [str(events), "--tick-size", "1", "--quiet", "--feed-ns", "100000"]
    common += ["--order-ns", "200000", "--response-ns", "200000"]

    h0, h1 = (int(x) for x in halt.halts()[0])
    params = ["--param", "half_spread_ticks=1", "--param", "requote_ticks=1"]

    def fill_times(*more: str) -> list[int]:
        out = tmp_path / f"j{len(list(tmp_path.iterdir()))}.qwj"
        assert main([*common, "--out", str(out), "--strategy", "market-maker", *params, *more]) == 0
        assert " fills, " in capsys.readouterr().out
        return [int(t) for t in load_day(out).executions["ts"].tolist()]

    free = fill_times()
    held = fill_times("--status", str(status))
    assert [t for t in free if h0 <= t < h1]  # without the status it fills in the halt
    assert [t for t in held if h0 <= t < h1] == []
    assert [t for t in held if t < h0] == [t for t in free if t < h0]
    # the fast path cannot hold its compiled strategy: one line, exit 2
    out = tmp_path / "fast.qwj"
    assert main([*common, "--out", str(out), "--strategy", "mm", "--status", str(status)]) == 2
    assert "the market halts at event" in capsys.readouterr().err
    bad = tmp_path / "bad.npy"
    np.save(bad, np.zeros(3, np.int64))
    assert main([*common, "--out", str(out), "--status", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.npy: expected trading status rows" in err
    assert "Traceback" not in err
    assert main([*common, "--out", str(out), "--status", str(tmp_path / "none.npy")]) == 2
    assert "none.npy: No such file" in capsys.readouterr().err


def _halt(a: int, b: int) -> TradingStatus:
    return TradingStatus(np.array([a, b]), np.array([False, True]), np.array([2, 17]))


def test_a_crossed_book_while_halted_fills_no_resting_order() -> None:
    """L2: the offer comes down onto our resting bid in a pre-open; no fill until it opens."""
    from engine.types import BUY, L2_SET, SELL
    from tests.unit.engine.backtest.test_queue_fills import INST as Q_INST
    from tests.unit.engine.backtest.test_queue_fills import OneBid, l2

    rows = l2(
        [
            (1000, L2_SET, BUY, 100, 5),
            (1000, L2_SET, SELL, 102, 5),
            (2000, L2_SET, SELL, 100, 3),  # crossed onto our bid at 100
            (3000, L2_SET, SELL, 100, 0),
            (3000, L2_SET, SELL, 103, 4),
            (4000, L2_SET, SELL, 102, 2),
        ]
    )
    free = OneBid(1, ["T"])
    GenericBacktest([free], Q_INST, level="l2").run(rows)
    assert free.fills == [(2000, 100, 1)]
    held = OneBid(1, ["T"])
    GenericBacktest([held], Q_INST, level="l2").run(rows, status=_halt(1500, 3500))
    assert held.fills == []


def test_l3_queue_positions_move_through_a_halt_and_executions_then_fill_nothing() -> None:
    from tests.unit.engine.backtest.test_queue_fills import INST as Q_INST
    from tests.unit.engine.backtest.test_queue_fills import L3_STREAM, OneBid, l3

    ev = l3(L3_STREAM)  # we fill at 6000, once the orders ahead have left
    runs = {}
    for name, status in (
        ("free", None),
        ("cancel ahead while halted", _halt(1500, 2500)),  # still counts: we move up
        ("fill time halted", _halt(5500, 6500)),
    ):
        s = OneBid(1, ["T"])
        GenericBacktest([s], Q_INST, level="l3").run(ev, status=status)
        runs[name] = s.fills
    assert runs == {
        "free": [(6000, 100, 1)],
        "cancel ahead while halted": [(6000, 100, 1)],
        "fill time halted": [],
    }
