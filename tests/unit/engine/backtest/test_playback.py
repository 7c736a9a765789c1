# SPDX-License-Identifier: MIT
"""Recorded ticks as the simulator's market (``engine.sim.playback``)."""

from decimal import Decimal

import numpy as np
import pytest

from engine.enums import ExecType, OrdType, Side, TimeInForce
from engine.instruments import Instrument
from engine.sim.exchange import SimExchange
from engine.sim.playback import TickPlayback, playback_listing
from engine.types import BUY, L2_EVENT_DTYPE, L2_SET, L2_TRADE, SELL

INST = Instrument(symbol="PB", tick_size=Decimal("0.25"))


def l2(rows: list[tuple[int, int, int, int, int]]) -> np.ndarray:
    """Rows ``(ts, kind, side, px, qty)``."""
    a = np.zeros(len(rows), L2_EVENT_DTYPE)
    for i, (ts, kind, side, px, qty) in enumerate(rows):
        a[i] = (ts, px, qty, 0, side, kind)
    return a


RECORDED = l2(
    [
        (0, L2_SET, BUY, 100, 5),
        (0, L2_SET, SELL, 102, 5),
        (10, L2_TRADE, SELL, 100, 3),
        (10, L2_SET, BUY, 100, 2),
        (20, L2_TRADE, SELL, 100, 2),
        (20, L2_SET, BUY, 100, 0),
        (25, L2_SET, SELL, 102, 7),
        (30, L2_TRADE, SELL, 100, 1),
    ]
)


def _exchange() -> tuple[SimExchange, TickPlayback]:
    ex = SimExchange([playback_listing(INST, RECORDED)])
    pb = TickPlayback(ex, "PB", RECORDED, start_ns=1000)
    ex.attach_playback(pb)
    ex.step(999)
    return ex, pb


def test_playback_builds_the_recorded_book() -> None:
    ex, pb = _exchange()
    ex.step(1000)
    assert ex.depth("PB", 2) == ([(100, 5)], [(102, 5)])
    assert pb.played == 2
    ex.step(1025)
    assert ex.depth("PB", 2) == ([], [(102, 7)])
    md = ex.drain_market_events()
    assert md["qty"][md["kind"] == L2_TRADE].tolist() == [3, 2]


def test_client_order_fills_only_after_the_recorded_quantity_ahead_traded() -> None:
    ex, pb = _exchange()
    ex.step(1000)
    acks = ex.submit(7, "C1", "PB", Side.BUY, 1, 100, OrdType.LIMIT, TimeInForce.DAY, ts=1005)
    assert [r.exec_type for r in acks] == [ExecType.NEW]
    assert ex.step(1010) == []  # 3 of the 5 lots ahead traded
    assert ex.step(1020) == []  # the other 2
    reps = ex.step(1030)  # the next recorded sell reaches us
    assert [(r.exec_type, r.last_qty_lots, r.last_px_ticks) for r in reps] == [
        (ExecType.TRADE, 1, 100)
    ]
    assert pb.done


def test_playback_speed_and_offset_map_times_and_prices() -> None:
    ex = SimExchange([playback_listing(INST, RECORDED, margin_ticks=50)])
    pb = TickPlayback(ex, "PB", RECORDED, start_ns=0, speed=2.0, px_offset=10)
    ex.attach_playback(pb)
    ex.step(0)
    ex.step(6)  # recorded 12 ns at twice the speed: the first trade has played
    assert ex.depth("PB", 1) == ([(110, 2)], [(112, 5)])


def test_playback_refuses_bad_input() -> None:
    ex = SimExchange([playback_listing(INST, RECORDED)])
    with pytest.raises(ValueError, match="not listed"):
        TickPlayback(ex, "XX", RECORDED, start_ns=0)
    with pytest.raises(ValueError, match="row 1 is earlier"):
        TickPlayback(ex, "PB", RECORDED[::-1].copy(), start_ns=0)
