# SPDX-License-Identifier: MIT
"""Restarting the engine mid-day: orders and positions come back from the journal, FIX
sequence numbers and the OUCH session (its sequence number and UserRefNum) resume from the
file stores."""

import functools
import time
from pathlib import Path

import pytest

from engine.demo import build_demo
from engine.embedded import EmbeddedEngineClient
from engine.enums import SessionState
from engine.events import (
    EventRecord,
    OrderChanged,
    OrderFilled,
    PositionChanged,
    SessionStatusChanged,
    VenueLinkChanged,
)
from engine.warmup import warm_up

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def run(tmp: Path, seconds: float) -> list[EventRecord]:
    client = EmbeddedEngineClient(
        configure=functools.partial(build_demo, journal_dir=tmp / "journal", store_dir=tmp / "fix")
    )
    client.start()
    events: list[EventRecord] = []
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            events += client.drain()
            time.sleep(0.05)
    finally:
        client.close()
    return events + client.drain()


def of(events: list[EventRecord], kind: type) -> list:
    return [r.event for r in events if isinstance(r.event, kind)]


def test_restart_rebuilds_orders_and_positions_and_resumes_sequence_numbers(
    tmp_path: Path,
) -> None:
    warm_up()
    first = run(tmp_path, 2.5)
    assert of(first, OrderFilled)
    last_view = {e.order.order_id: e.order for e in of(first, OrderChanged)}
    # Position, average price and realized P&L, as the first run last published them.
    positions = {
        (p.strategy_id, p.symbol): (p.qty_lots, p.avg_px_ticks, p.realized_pnl)
        for p in of(first, PositionChanged)
    }
    ours = [s for s in of(first, SessionStatusChanged) if s.session_id.startswith("FIX.4.4:QWC")]
    out_seq = max(s.next_sender_seq_num for s in ours)
    assert out_seq > 10
    assert list((tmp_path / "journal").glob("*.qwj"))

    second = run(tmp_path, 1.5)
    recovered = [e for e in of(second, OrderChanged) if e.change == "recovered"]
    assert {e.order.order_id for e in recovered} == set(last_view)
    for e in recovered:
        before = last_view[e.order.order_id]
        assert (e.order.client_order_id, e.order.cum_qty_lots) == (
            before.client_order_id,
            before.cum_qty_lots,
        )
    first_positions = {}
    for p in of(second, PositionChanged):
        first_positions.setdefault(
            (p.strategy_id, p.symbol), (p.qty_lots, p.avg_px_ticks, p.realized_pnl)
        )
    for key, booked in positions.items():
        assert first_positions.get(key, (0, 0.0, 0.0)) == pytest.approx(booked), key
    new_ids = {e.order.order_id for e in of(second, OrderChanged) if e.change == "new"}
    assert new_ids
    assert min(new_ids) > max(last_view)
    logged_on = [
        s
        for s in of(second, SessionStatusChanged)
        if s.session_id.startswith("FIX.4.4:QWC") and s.state is SessionState.LOGGED_ON
    ]
    assert logged_on
    assert logged_on[0].next_sender_seq_num > out_seq  # resumed, not reset to 1

    # CLF7 trades over OUCH: the session resumes where it was, UserRefNums go on rising.
    ouch_first = [e for e in of(first, VenueLinkChanged) if e.protocol == "OUCH"]
    ouch_second = [e for e in of(second, VenueLinkChanged) if e.protocol == "OUCH"]
    assert ouch_first[0].up
    assert ouch_second[0].up
    assert ouch_second[0].next_in >= ouch_first[-1].next_in > 1  # not replayed from 1
    assert ouch_second[0].next_out >= ouch_first[-1].next_out
    refs_before = [int(o.client_order_id[1:]) for o in last_view.values() if o.symbol == "CLF7"]
    refs_after = [
        int(e.order.client_order_id[1:])
        for e in of(second, OrderChanged)
        if e.order.symbol == "CLF7" and e.change == "new"
    ]
    assert refs_before
    assert refs_after
    assert min(refs_after) > max(refs_before)
