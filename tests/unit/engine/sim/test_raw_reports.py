# SPDX-License-Identifier: MIT
"""Raw reports (``SimExchange.submit_raw``, ``SimFixApplication.dispatch_raw``): the simulator's
fast path answers exactly as its ``ExecutionReport`` path, report for report and byte for byte.

Two twin exchanges (same seed, same listings) take the same random orders: one through
``submit`` and ``dispatch``, the other through ``submit_raw`` and ``dispatch_raw``; participants
trade between the orders, so there are acks, partial and full fills (maker and taker), IOC and
FOK expiries, market-order remainders, self-trade cancels and rejects.
"""

from decimal import Decimal

import numpy as np
import pytest

from engine.clock import TestClock
from engine.enums import ExecType, OrdType, Side, TimeInForce
from engine.instruments import Instrument
from engine.oms.venue import ExecutionReport
from engine.sim.exchange import FlowConfig, SimExchange, SimInstrument
from engine.sim.fix_app import SimFixApplication
from tests.factories import fix_pair

TIFS = (TimeInForce.DAY, TimeInForce.GTC, TimeInForce.IOC, TimeInForce.FOK)
#: Prices with an odd tick size, so average prices come out with decimals.
ES = Instrument(symbol="ESZ6", tick_size=Decimal("0.25"), multiplier=Decimal(50))
NQ = Instrument(symbol="NQZ6", tick_size=Decimal("0.1"), multiplier=Decimal(20))


def twin(epoch: str) -> SimExchange:
    flow = FlowConfig(events_per_second=400.0, volatility_ticks=2.0)
    return SimExchange(
        [
            SimInstrument(instrument=ES, start_px_ticks=20_000, n_levels=400, flow=flow),
            SimInstrument(instrument=NQ, start_px_ticks=80_000, flow=flow),
        ],
        seed=3,
        epoch=epoch,
    )


@pytest.mark.parametrize(("begin", "epoch"), [("FIX.4.4", "K7"), ("FIX.4.2", ""), ("FIX.4.0", "")])
def test_raw_reports_are_the_execution_reports_and_their_bytes(begin: str, epoch: str) -> None:
    clock = TestClock()
    made, fast = twin(epoch), twin(epoch)
    app_made, app_fast = SimFixApplication(made, clock), SimFixApplication(fast, clock)
    # Two clients CA and CB (sessions are found by their ids): the same bytes but 49= and 10=.
    _, _, out_made = fix_pair(app_made, clock, begin=begin, sender="CA", validate=False)
    _, _, out_fast = fix_pair(app_fast, clock, begin=begin, sender="CB", validate=False)
    us = 100  # the first client the application registers; 7 is another (not connected)
    for ex, app in ((made, app_made), (fast, app_fast)):
        app.dispatch(ex.seed_books(ts=1))
    rng = np.random.default_rng(5)
    ts = clock.now_ns()
    kinds: set[tuple[ExecType, str]] = set()
    for i in range(1000):
        ts += int(rng.integers(1, 20_000_000))
        owner = us if rng.random() < 0.8 else 7
        symbol, base = ("ESZ6", 20_000) if rng.random() < 0.7 else ("NQZ6", 80_000)
        if rng.random() < 0.01:
            symbol = "ZZZ"
        typ = OrdType.MARKET if rng.random() < 0.07 else OrdType.LIMIT
        args = (
            owner,
            f"C{i}" if rng.random() > 0.01 else "C1",  # a few duplicate ClOrdIDs
            symbol,
            Side.BUY if rng.random() < 0.5 else Side.SELL,
            int(rng.integers(1, 12)) if rng.random() > 0.2 else 400,  # some sweep the book
            base + int(rng.integers(-12, 13)) + (999 if rng.random() < 0.01 else 0),
            typ,
            TIFS[int(rng.choice(4, p=[0.5, 0.2, 0.2, 0.1]))],
        )
        expected = made.submit(*args, ts=ts)
        raws = fast.submit_raw(*args, ts=ts)
        if isinstance(raws, ExecutionReport):
            assert [raws] == expected
            app_fast.dispatch([raws])
        else:
            assert [fast.report_of(r, ts) for r in raws] == expected
            app_fast.dispatch_raw(raws, ts)
        app_made.dispatch(expected)
        kinds |= {(r.exec_type, r.text) for r in expected}
        if i % 3 == 0:  # the participants act (and fill resting client orders)
            for ex, app in ((made, app_made), (fast, app_fast)):
                app.dispatch(ex.step(ts + 1))
    assert [raw.replace(b"\x0149=CB\x01", b"\x0149=CA\x01")[:-7] for raw in out_fast] == [
        raw[:-7]
        for raw in out_made  # without CheckSum <10>
    ]
    assert len(out_made) > 1000
    assert {k for k, _ in kinds} >= {
        ExecType.NEW,
        ExecType.TRADE,
        ExecType.EXPIRED,
        ExecType.CANCELED,
        ExecType.REJECTED,
    }
    texts = {t for _, t in kinds}
    assert "market order remainder canceled: no more liquidity on the other side" in texts
    assert "FOK could not be filled in full" in texts
    assert any(t.startswith("canceled by self-trade prevention") for t in texts)
    # Average prices between ticks (fills at several prices) are written as the reports say.
    avg = [raw.split(b"\x016=")[1].split(b"\x01")[0] for raw in out_made]
    assert any(len(v.partition(b".")[2]) > 2 for v in avg), sorted(set(avg))[:20]


def test_a_client_away_gets_raw_reports_stored_and_resent_as_the_made_ones() -> None:
    clock = TestClock()
    ex = twin("")
    app = SimFixApplication(ex, clock)
    ours, _, out = fix_pair(app, clock, validate=False)
    raws = ex.submit_raw(100, "A1", "ESZ6", Side.BUY, 2, 19_990, OrdType.LIMIT, TimeInForce.DAY, 5)
    assert not isinstance(raws, ExecutionReport)
    ours.on_disconnected(clock.now_ns())
    seq = ours.next_sender_seq_num
    app.dispatch_raw(raws, 5)  # not logged on: numbered and kept for the resend
    assert ours.next_sender_seq_num == seq + 1
    assert out == []
    ((n, stored),) = ours.store.get_range(seq, seq)
    assert n == seq
    assert b"\x0111=A1\x01" in stored
    assert b"\x01150=0\x01" in stored
