# SPDX-License-Identifier: MIT
"""Identity of executions and resent reports (issue 15): applied once, never backwards."""

import dataclasses

from engine.bus import MessageBus
from engine.clock import TestClock
from engine.enums import AlertLevel, ExecType, OrdStatus, OrdType, Side, TimeInForce
from engine.events import OrderChanged, OrderFilled, OrderView
from engine.oms.manager import OrderManager
from engine.oms.risk import RiskChecker
from tests.factories import RecordingVenue, make_instrument, make_oms, report

S, E = OrdStatus, ExecType


def _acked(rig, qty: int = 3):  # type: ignore[no-untyped-def]
    order = rig.oms.send(strategy_id=7, side=Side.BUY, qty_lots=qty, px_ticks=100)
    rig.oms.on_execution_report(report(order, E.NEW, S.NEW, exec_id="A0"))
    return order


def test_resent_fill_already_applied_is_ignored_and_counted() -> None:
    rig = make_oms()
    order = _acked(rig)
    fill = report(order, E.TRADE, S.PARTIALLY_FILLED, last_qty=1, last_px=100, exec_id="F1")
    rig.oms.on_execution_report(fill)
    resent = report(
        order,
        E.TRADE,
        S.PARTIALLY_FILLED,
        cum=1,
        leaves=2,
        last_qty=1,
        last_px=100,
        exec_id="F1",
        poss_dup=True,
    )
    rig.oms.on_execution_report(resent)
    assert [f.exec_id for f in rig.fills] == ["F1"]
    assert order.cum_qty_lots == 1
    assert rig.oms.duplicates_ignored == 1
    assert rig.risk.position("ESZ6") == 1
    assert not [a for a in rig.alerts if a.level >= AlertLevel.WARNING]


def test_resent_fill_new_to_us_is_applied_once() -> None:
    rig = make_oms()
    order = _acked(rig)
    # F1 was lost (the engine died before journaling it); the venue resends it after F2.
    f2 = report(
        order, E.TRADE, S.PARTIALLY_FILLED, cum=2, leaves=1, last_qty=1, last_px=101, exec_id="F2"
    )
    rig.oms.on_execution_report(f2)
    f1 = report(
        order,
        E.TRADE,
        S.PARTIALLY_FILLED,
        cum=1,
        leaves=2,
        last_qty=1,
        last_px=100,
        exec_id="F1",
        poss_dup=True,
    )
    rig.oms.on_execution_report(f1)
    rig.oms.on_execution_report(f1)  # and once more: a duplicate now
    assert sorted(f.exec_id for f in rig.fills) == ["F1", "F2"]
    assert rig.risk.position("ESZ6") == 2
    # The late report is older than the order's state: CumQty does not go back.
    assert (order.status, order.cum_qty_lots, order.leaves_qty_lots) == (
        S.PARTIALLY_FILLED,
        2,
        1,
    )
    assert order.notional_ticks_lots == 201
    assert rig.oms.duplicates_ignored == 1


def test_resent_non_fill_report_never_moves_the_state_backwards() -> None:
    rig = make_oms()
    order = _acked(rig, qty=1)
    rig.oms.on_execution_report(
        report(order, E.TRADE, S.FILLED, last_qty=1, last_px=100, exec_id="F1")
    )
    changes = len(rig.changes)
    ack = report(order, E.NEW, S.NEW, cum=0, leaves=1, exec_id="A0", poss_dup=True)
    rig.oms.on_execution_report(ack)
    assert (order.status, order.cum_qty_lots, order.leaves_qty_lots) == (S.FILLED, 1, 0)
    assert len(rig.changes) == changes
    assert rig.oms.duplicates_ignored == 1
    # A resend is expected to be old news: no alert, no "unsolicited" anything.
    assert not [a for a in rig.alerts if a.level >= AlertLevel.WARNING]


def test_resent_cancel_new_to_us_is_applied_once_without_an_unsolicited_alert() -> None:
    rig = make_oms()
    order = _acked(rig)
    # Restarted: the cancel request was forgotten; the venue resends its answer.
    cxl = report(order, E.CANCELED, S.CANCELED, cum=0, leaves=0, exec_id="C1", poss_dup=True)
    rig.oms.on_execution_report(cxl)
    rig.oms.on_execution_report(cxl)
    assert order.status is S.CANCELED
    assert [c.change for c in rig.changes if c.order.status is S.CANCELED] == ["canceled (resent)"]
    assert rig.oms.duplicates_ignored == 1
    assert not [a for a in rig.alerts if "unsolicited" in a.text]


def test_out_of_order_reports_keep_the_furthest_state() -> None:
    rig = make_oms()
    order = _acked(rig, qty=2)
    rig.oms.on_execution_report(
        report(order, E.TRADE, S.FILLED, cum=2, leaves=0, last_qty=2, last_px=100, exec_id="F1")
    )
    # An older ack (not resent) arriving after the fill: refused, alerted, not applied.
    late = report(order, E.NEW, S.NEW, cum=0, leaves=2, exec_id="A1")
    rig.oms.on_execution_report(late)
    assert (order.status, order.cum_qty_lots) == (S.FILLED, 2)
    assert rig.oms.transitions_refused == 1
    assert rig.alerts[-1].level is AlertLevel.ERROR


def test_exec_id_reused_for_another_fill_is_booked_with_an_alert() -> None:
    rig = make_oms()
    a = _acked(rig)
    b = rig.oms.send(strategy_id=7, side=Side.SELL, qty_lots=3, px_ticks=105)
    rig.oms.on_execution_report(report(b, E.NEW, S.NEW))
    rig.oms.on_execution_report(
        report(a, E.TRADE, S.PARTIALLY_FILLED, last_qty=1, last_px=100, exec_id="X22")
    )
    rig.oms.on_execution_report(
        report(b, E.TRADE, S.PARTIALLY_FILLED, last_qty=2, last_px=105, exec_id="X22")
    )
    assert [(f.order_id, f.last_qty_lots) for f in rig.fills] == [
        (a.order_id, 1),
        (b.order_id, 2),
    ]
    assert rig.risk.position("ESZ6") == -1
    assert "ExecID 'X22' reused" in rig.alerts[-1].text


def test_restored_fills_are_recognised_when_the_venue_resends_them() -> None:
    rig = make_oms()
    view = OrderView(
        order_id=41,
        client_order_id="R1",
        orig_client_order_ids=(),
        strategy_id=7,
        symbol="ESZ6",
        side=Side.BUY,
        ord_type=OrdType.LIMIT,
        time_in_force=TimeInForce.DAY,
        qty_lots=2,
        px_ticks=100,
        status=S.PARTIALLY_FILLED,
        venue_order_id="V41",
        cum_qty_lots=1,
        leaves_qty_lots=1,
        avg_px_ticks=100.0,
        pending="",
        text="",
        ts_created=1,
        ts_sent=1,
        ts_acked=1,
        ts_last=1,
    )
    journaled = OrderFilled(
        ts_event=1,
        order_id=41,
        client_order_id="R1",
        venue_order_id="V41",
        exec_id="F9",
        strategy_id=7,
        symbol="ESZ6",
        side=Side.BUY,
        last_px_ticks=100,
        last_qty_lots=1,
        leaves_qty_lots=1,
        ts_recv=1,
    )
    order = rig.oms.restore(view, [journaled])
    before = len(rig.fills)
    rig.oms.on_execution_report(
        report(
            order,
            E.TRADE,
            S.PARTIALLY_FILLED,
            cum=1,
            leaves=1,
            last_qty=1,
            last_px=100,
            exec_id="F9",
            poss_dup=True,
        )
    )
    assert len(rig.fills) == before
    rig.oms.on_execution_report(
        report(
            order,
            E.TRADE,
            S.FILLED,
            cum=2,
            leaves=0,
            last_qty=1,
            last_px=100,
            exec_id="F10",
            poss_dup=True,
        )
    )
    assert [f.exec_id for f in rig.fills[before:]] == ["F10"]
    assert order.status is S.FILLED


def test_status_answer_unknown_order_for_an_acked_order_cancels_it() -> None:
    rig = make_oms()
    order = _acked(rig)
    answer = report(order, E.ORDER_STATUS, S.REJECTED, cum=0, leaves=0, text="unknown order")
    rig.oms.on_execution_report(answer)
    assert order.status is S.CANCELED
    assert rig.risk.open_orders() == 0
    assert "no longer knows" in rig.alerts[-1].text
    last = rig.changes[-1]
    assert isinstance(last, OrderChanged)
    assert last.order.status is S.CANCELED


def test_fill_event_has_every_field_of_the_fill() -> None:
    # The order manager builds OrderFilled positionally: each value in its field.
    rig = make_oms()
    order = _acked(rig)
    rig.clock.advance(5)
    fill = dataclasses.replace(
        report(order, E.TRADE, S.PARTIALLY_FILLED, last_qty=2, last_px=101, exec_id="F9"),
        ts_event=1_700_000_000_000_000_111,
        ts_recv=1_700_000_000_000_000_222,
    )
    rig.oms.on_execution_report(fill)
    assert rig.fills == [
        OrderFilled(
            ts_event=1_700_000_000_000_000_111,
            order_id=order.order_id,
            client_order_id=order.client_order_id,
            venue_order_id=f"V{order.order_id}",
            exec_id="F9",
            strategy_id=7,
            symbol="ESZ6",
            side=Side.BUY,
            last_px_ticks=101,
            last_qty_lots=2,
            leaves_qty_lots=1,
            ts_recv=1_700_000_000_000_000_222,
        )
    ]
    # Without a TransactTime the event is stamped with the engine's clock.
    rig.oms.on_execution_report(
        report(order, E.TRADE, S.FILLED, last_qty=1, last_px=100, exec_id="F10")
    )
    assert rig.fills[-1].ts_event == rig.clock.now_ns()


def test_no_fill_event_is_built_when_nobody_listens_but_the_fill_is_booked() -> None:
    bus = MessageBus()
    clock = TestClock()
    risk = RiskChecker(clock)
    oms = OrderManager(make_instrument(), RecordingVenue(), bus, clock, risk)
    order = oms.send(strategy_id=7, side=Side.SELL, qty_lots=3, px_ticks=100)
    oms.on_execution_report(report(order, E.NEW, S.NEW, exec_id="A0"))
    oms.on_execution_report(
        report(order, E.TRADE, S.PARTIALLY_FILLED, last_qty=2, last_px=100, exec_id="F1")
    )
    assert order.cum_qty_lots == 2
    assert risk.position("ESZ6", 7) == -2
    fills: list[OrderFilled] = []
    bus.subscribe(OrderFilled, fills.append)  # a listener from now on gets every fill
    oms.on_execution_report(report(order, E.TRADE, S.FILLED, last_qty=1, last_px=99, exec_id="F2"))
    assert [(f.exec_id, f.last_qty_lots, f.side) for f in fills] == [("F2", 1, Side.SELL)]
    assert risk.position("ESZ6", 7) == -3
