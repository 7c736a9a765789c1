# SPDX-License-Identifier: MIT
"""A day of orders in bounded memory (issue 16): done orders leave the hot structures.

The CI guard of the soak benchmark (``tests/benchmarks/bench_soak.py``): the memory the order
manager holds per order retired does not grow when the number of orders doubles (tracemalloc of
the engine's own allocations, not RSS), and reports of retired orders are still recognised.
"""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import numpy as np

from engine.book.l2 import L2Books
from engine.enums import AlertLevel, ExecType, OrdStatus, Side
from engine.journal import Journal, recover
from engine.matching.queue import L2QueuePositions
from engine.oms.manager import OrderManager
from engine.oms.order import Order
from engine.types import BUY, L2_EVENT_DTYPE, L2_SET, SELL
from tests.factories import OmsRig, make_instrument, make_oms, report

S, E = OrdStatus, ExecType


def _small(rig: OmsRig, archive: int = 200, retired: int = 5_000) -> OrderManager:
    oms = OrderManager(
        make_instrument(),
        rig.venue,
        rig.bus,
        rig.clock,
        rig.risk,
        archive_orders=archive,
        retired_memory=retired,
    )
    rig.oms = oms
    return oms


def _cycle(rig: OmsRig, i: int) -> Order:
    """One order through its life: rests and is canceled (even i), or is filled (odd i).

    A millisecond passes per order, so time-windowed state (the order-rate window) must forget.
    """
    oms = rig.oms
    rig.clock.advance(1_000_000)
    order = oms.send(
        strategy_id=7, side=Side.BUY if i % 2 else Side.SELL, qty_lots=1, px_ticks=100 + i % 5
    )
    oms.on_execution_report(report(order, E.NEW, S.NEW, exec_id=f"A{i}"))
    if i % 2:
        oms.on_execution_report(
            report(order, E.TRADE, S.FILLED, last_qty=1, last_px=100, exec_id=f"F{i}")
        )
    else:
        oms.cancel(order)
        assert order.pending is not None
        oms.on_execution_report(
            report(
                order,
                E.CANCELED,
                S.CANCELED,
                leaves=0,
                exec_id=f"C{i}",
                clordid=order.pending.client_order_id,
                orig=order.client_order_id,
            )
        )
    return order


def _run(rig: OmsRig, start: int, n: int) -> None:
    for i in range(start, start + n):
        _cycle(rig, i)
        if i % 500 == 0:  # the test's own records, not the engine's
            rig.events.clear()
            rig.venue.sent.clear()
    rig.events.clear()
    rig.venue.sent.clear()


def test_memory_per_order_retired_stays_bounded_when_the_orders_double() -> None:
    rig = make_oms()
    oms = _small(rig)
    n = 3_000
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        _run(rig, 0, n)
        gc.collect()
        after_n = tracemalloc.get_traced_memory()[0] - base
        _run(rig, n, n)
        gc.collect()
        after_2n = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert not oms.orders  # nothing open: nothing hot
    assert len(oms.archive) == 200
    per_n, per_2n = after_n / n, after_2n / (2 * n)
    # Everything the manager keeps is bounded: twice the orders, half the bytes per order.
    assert per_2n < 0.6 * per_n, (per_n, per_2n)
    assert after_2n - after_n < 40 * n, (after_n, after_2n)  # < 40 bytes per extra order


def test_reports_of_retired_orders_are_recognised_without_unknown_order_alerts() -> None:
    rig = make_oms()
    oms = _small(rig, archive=10)
    old = [_cycle(rig, i) for i in range(40)]  # the first 30 are beyond the archive
    rig.events.clear()
    filled, canceled = old[1], old[0]
    assert oms.get(filled.client_order_id) is None
    assert filled.order_id not in oms.archive
    # A resent fill and a resent cancel of orders retired long ago: quiet, counted.
    before = oms.duplicates_ignored
    oms.on_execution_report(
        report(
            filled,
            E.TRADE,
            S.FILLED,
            cum=1,
            leaves=0,
            last_qty=1,
            last_px=100,
            exec_id="F1",
            poss_dup=True,
        )
    )
    oms.on_execution_report(
        report(canceled, E.CANCELED, S.CANCELED, cum=0, leaves=0, exec_id="C0", poss_dup=True)
    )
    assert oms.duplicates_ignored == before + 2
    assert not rig.alerts
    assert not rig.fills
    # A resent fill of an order still in the archive is a duplicate by its ExecID.
    recent = old[-1]
    assert recent.order_id in oms.archive
    oms.on_execution_report(
        report(
            recent,
            E.TRADE,
            S.FILLED,
            cum=1,
            leaves=0,
            last_qty=1,
            last_px=100,
            exec_id="F39",
            poss_dup=True,
        )
    )
    assert not rig.fills
    assert not rig.alerts
    # A fill nobody flagged as resent, for an order beyond the horizon: booked, with an alert.
    oms.on_execution_report(
        report(
            filled, E.TRADE, S.FILLED, cum=1, leaves=0, last_qty=1, last_px=100, exec_id="F1-again"
        )
    )
    assert [(f.order_id, f.strategy_id, f.side) for f in rig.fills] == [
        (filled.order_id, 7, filled.side)
    ]
    assert [a.level for a in rig.alerts] == [AlertLevel.ERROR]
    # A ClOrdID the engine never had is still an unknown order.
    rig.events.clear()
    oms.on_execution_report(report(filled, E.NEW, S.NEW, clordid="NEVER-SENT"))
    assert [a.level for a in rig.alerts] == [AlertLevel.WARNING]
    assert "unknown order" in rig.alerts[0].text


def test_cancel_of_a_done_order_in_the_archive_is_answered_by_its_state() -> None:
    rig = make_oms()
    oms = _small(rig, archive=10)
    done = [_cycle(rig, i) for i in range(5)]
    assert oms.lookup(done[0].order_id) is done[0]
    assert oms.cancel(done[0]) is False  # done: nothing to cancel
    assert [o.order_id for o in oms.archived(2)] == [done[4].order_id, done[3].order_id]
    page2 = oms.archived(2, before_order_id=done[3].order_id)
    assert [o.order_id for o in page2] == [done[2].order_id, done[1].order_id]


def test_engine_recovery_keeps_open_orders_and_only_the_newest_done_ones(tmp_path: Path) -> None:
    path = tmp_path / "day.qwj"
    rig = make_oms()
    with Journal(path, rig.clock, sync="none") as j:
        j.subscribe(rig.bus)
        done = [_cycle(rig, i) for i in range(30)]
        working = rig.oms.send(strategy_id=7, side=Side.BUY, qty_lots=2, px_ticks=99)
        rig.oms.on_execution_report(report(working, E.NEW, S.NEW, exec_id="W"))
    full = recover(path)
    assert len(full.orders) == 31
    state = recover(path, done_orders=5)
    assert sorted(state.orders) == sorted([working.order_id, *(o.order_id for o in done[-5:])])
    assert state.last_order_id == working.order_id
    # Positions need every fill (as columns); fill events only of the orders kept.
    assert len(state.fill_columns) == len(full.fills) == 15
    assert state.position_lots(7) == full.position_lots(7) != {}
    assert state.fills == tuple(f for f in full.fills if f.order_id in state.orders)
    assert 0 < len(state.fills) < len(full.fills)
    # The restored managers hold the open order hot and the done ones in the archive.
    again = make_oms()
    for view in state.orders.values():
        again.oms.restore(view, [f for f in state.fills if f.order_id == view.order_id])
    assert list(again.oms.orders) == [working.order_id]
    assert len(again.oms.archive) == 5


def test_live_queue_tracker_forgets_canceled_orders() -> None:
    books = L2Books(1, 64, centre=100)
    queue = L2QueuePositions(books, capacity=8, compact=True)
    seed = np.zeros(2, L2_EVENT_DTYPE)
    seed["px"], seed["qty"], seed["side"], seed["kind"] = (99, 101), (5, 5), (BUY, SELL), L2_SET
    queue.apply(seed)
    for i in range(1, 2_001):  # the live stream's events carry the time: cancels take effect
        queue.add(i, 0, BUY, 95, 1, ts=i)
        seed["ts"] = i
        queue.apply(seed)
        queue.cancel(i, ts=i)
    queue.add(5_000, 0, BUY, 95, 1, ts=3_000)
    seed["ts"] = 3_000
    queue.apply(seed)
    assert len(queue.orders) <= 16  # open orders only, not every order of the run
    assert queue.status(5_000) == "active"
    queue.cancel(3, ts=3_001)  # forgotten already: nothing to do
