# SPDX-License-Identifier: MIT
"""The order state machine, table-driven, through the order manager's public API."""

import dataclasses

import pytest

from engine.enums import AlertLevel, ExecType, OrdStatus, OrdType, Side, TimeInForce
from engine.events import OrderView
from engine.oms.order import ORDER_STATE_TABLE, TERMINAL, Order, is_allowed
from engine.oms.venue import CancelReject, RejectReason, Request
from tests.factories import make_oms, report

S, E = OrdStatus, ExecType


def test_every_status_has_a_row_and_terminal_states_only_repeat() -> None:
    assert set(ORDER_STATE_TABLE) == set(OrdStatus)
    for status in TERMINAL:
        assert ORDER_STATE_TABLE[status] == {status}


@pytest.mark.parametrize(
    ("current", "new", "allowed"),
    [
        (S.PENDING_NEW, S.NEW, True),
        (S.PENDING_NEW, S.REJECTED, True),
        (S.NEW, S.REJECTED, False),
        (S.NEW, S.PARTIALLY_FILLED, True),
        (S.PARTIALLY_FILLED, S.NEW, False),
        (S.PARTIALLY_FILLED, S.FILLED, True),
        (S.PENDING_CANCEL, S.CANCELED, True),
        (S.PENDING_CANCEL, S.FILLED, True),
        (S.PENDING_REPLACE, S.NEW, True),
        (S.FILLED, S.CANCELED, False),
        (S.CANCELED, S.NEW, False),
        (S.REJECTED, S.NEW, False),
        (S.DONE_FOR_DAY, S.EXPIRED, True),
        (S.EXPIRED, S.PARTIALLY_FILLED, False),
    ],
)
def test_transition_table(current: OrdStatus, new: OrdStatus, allowed: bool) -> None:
    assert is_allowed(current, new) is allowed


def test_new_order_is_pending_new_then_acked_then_partially_and_fully_filled() -> None:
    rig = make_oms()
    order = rig.oms.send(strategy_id=20170101, side=Side.BUY, qty_lots=10, px_ticks=4000)
    assert order.status is S.PENDING_NEW
    assert rig.venue.sent == [("new", "T1", "")]
    rig.oms.on_execution_report(report(order, E.NEW, S.NEW, exec_id="e0"))
    assert order.status is S.NEW
    assert order.venue_order_id == f"V{order.order_id}"
    assert order.ts_acked > 0
    rig.oms.on_execution_report(
        report(order, E.TRADE, S.PARTIALLY_FILLED, last_qty=4, last_px=4000, exec_id="e1")
    )
    assert (order.status, order.cum_qty_lots, order.leaves_qty_lots) == (S.PARTIALLY_FILLED, 4, 6)
    rig.oms.on_execution_report(
        report(order, E.TRADE, S.FILLED, last_qty=6, last_px=3998, exec_id="e2")
    )
    assert (order.status, order.cum_qty_lots, order.leaves_qty_lots) == (S.FILLED, 10, 0)
    assert order.avg_px_ticks == pytest.approx((4 * 4000 + 6 * 3998) / 10)
    assert [f.last_qty_lots for f in rig.fills] == [4, 6]
    assert [c.change for c in rig.changes] == ["new", "ack", "fill", "fill"]
    assert rig.risk.open_orders() == 0
    assert rig.risk.position("ESZ6", 20170101) == 10
    assert rig.alerts == []


def test_duplicate_exec_id_is_applied_once() -> None:
    rig = make_oms()
    order = rig.oms.send(strategy_id=1, side=Side.SELL, qty_lots=5, px_ticks=100)
    fill = report(order, E.TRADE, S.PARTIALLY_FILLED, last_qty=2, last_px=100, exec_id="X")
    rig.oms.on_execution_report(fill)
    rig.oms.on_execution_report(fill)
    assert order.cum_qty_lots == 2
    assert len(rig.fills) == 1
    assert rig.risk.position("ESZ6") == -2


def test_cancel_goes_pending_then_canceled_with_a_new_clordid() -> None:
    rig = make_oms()
    order = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=3, px_ticks=100)
    rig.oms.on_execution_report(report(order, E.NEW, S.NEW))
    assert rig.oms.cancel(order)
    assert order.status is S.PENDING_CANCEL
    assert rig.venue.sent[-1] == ("cancel", "T2", "T1")
    assert not rig.oms.cancel(order)  # one request at a time
    rig.oms.on_execution_report(
        report(order, E.CANCELED, S.CANCELED, clordid="T2", orig="T1", cum=0, leaves=0)
    )
    assert order.status is S.CANCELED
    assert order.pending is None
    assert rig.risk.open_orders() == 0
    assert not rig.oms.cancel(order)


def test_fill_while_cancel_pending_keeps_the_request_and_a_cancel_reject_restores_status() -> None:
    rig = make_oms()
    order = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=10, px_ticks=100)
    rig.oms.on_execution_report(report(order, E.NEW, S.NEW))
    rig.oms.cancel(order)
    rig.oms.on_execution_report(
        report(order, E.TRADE, S.PARTIALLY_FILLED, last_qty=3, last_px=100, exec_id="f1")
    )
    assert order.status is S.PENDING_CANCEL
    assert order.cum_qty_lots == 3
    rig.oms.on_cancel_reject(
        CancelReject(client_order_id="T2", orig_client_order_id="T1", reason=0, text="too late")
    )
    assert order.status is S.PARTIALLY_FILLED
    assert order.pending is None
    assert order.leaves_qty_lots == 7
    assert rig.alerts[-1].text == "cancel of T1 rejected (CxlRejReason 0): too late"
    assert rig.risk.open_orders() == 1


def test_replace_chain_updates_clordid_quantity_price_and_keeps_the_chain() -> None:
    rig = make_oms()
    order = rig.oms.send(strategy_id=1, side=Side.SELL, qty_lots=10, px_ticks=200)
    rig.oms.on_execution_report(report(order, E.NEW, S.NEW))
    assert rig.oms.replace(order, px_ticks=201)
    assert order.status is S.PENDING_REPLACE
    rig.oms.on_execution_report(report(order, E.REPLACED, S.NEW, clordid="T2", orig="T1"))
    assert (order.client_order_id, order.px_ticks, order.qty_lots) == ("T2", 201, 10)
    assert rig.oms.replace(order, qty_lots=6)
    rig.oms.on_execution_report(
        report(order, E.REPLACED, S.NEW, clordid="T3", orig="T2", cum=0, leaves=6)
    )
    assert order.client_order_id == "T3"
    assert order.chain == ("T1", "T2")
    assert order.view().orig_client_order_ids == ("T1", "T2")
    assert rig.oms.get("T1") is order
    assert rig.oms.get("T3") is order
    # A report quoting any ClOrdID of the chain finds the order.
    rig.oms.on_execution_report(
        report(
            order, E.TRADE, S.PARTIALLY_FILLED, last_qty=1, last_px=201, exec_id="z", clordid="T3"
        )
    )
    assert order.leaves_qty_lots == 5


def test_replace_below_filled_quantity_is_a_caller_error() -> None:
    rig = make_oms()
    order = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=10, px_ticks=100)
    rig.oms.on_execution_report(
        report(order, E.TRADE, S.PARTIALLY_FILLED, last_qty=4, last_px=100, exec_id="a")
    )
    with pytest.raises(ValueError, match="new quantity 4 lots must exceed the 4 lots already"):
        rig.oms.replace(order, qty_lots=4)


def test_venue_reject_of_a_new_order() -> None:
    rig = make_oms()
    order = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100)
    rig.oms.on_execution_report(
        report(order, E.REJECTED, S.REJECTED, cum=0, leaves=0, text="unknown symbol")
    )
    assert order.status is S.REJECTED
    assert order.text == "unknown symbol"
    assert rig.risk.open_orders() == 0


def test_session_reject_of_new_order_rejects_it_with_its_own_event() -> None:
    rig = make_oms()
    order = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100)
    rig.oms.on_request_rejected(
        Request.NEW, "T1", "Required tag missing (44)", reason=RejectReason.SESSION
    )
    assert order.status is S.REJECTED
    assert rig.changes[-1].change == "rejected"
    assert rig.changes[-1].order.status is S.REJECTED
    assert order.text == "session reject: Required tag missing (44)"


def test_session_reject_of_cancel_leaves_the_pending_state() -> None:
    rig = make_oms()
    order = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100)
    rig.oms.on_execution_report(report(order, E.NEW, S.NEW))
    rig.oms.cancel(order)
    rig.oms.on_request_rejected(
        Request.CANCEL, "T2", "Value is incorrect", reason=RejectReason.SESSION
    )
    assert order.status is S.NEW
    assert order.pending is None
    assert rig.changes[-1].change == "cancel rejected"


def test_business_reject_raises_an_alert_and_rejects_the_new_order() -> None:
    rig = make_oms()
    order = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100)
    rig.oms.on_request_rejected(
        Request.NEW, "T1", "Unsupported Message Type", reason=RejectReason.BUSINESS
    )
    assert order.status is S.REJECTED
    assert rig.alerts[-1].level is AlertLevel.WARNING
    assert rig.alerts[-1].text == (
        "business message reject of new order T1 (BUY 1 ESZ6 at 100 ticks, strategy 1)"
        ": Unsupported Message Type; the order is REJECTED"
    )


def test_report_for_unknown_order_raises_an_alert() -> None:
    rig = make_oms()
    order = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100)
    rep = report(order, E.TRADE, S.FILLED, last_qty=1, exec_id="q", clordid="NOPE")
    rig.oms._by_venue_id.clear()
    assert rig.oms.on_execution_report(rep) is None
    assert "execution report for an unknown order: ClOrdID='NOPE'" in rig.alerts[-1].text


def test_unsolicited_cancel_and_done_for_day_and_expiry() -> None:
    rig = make_oms()
    a = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100)
    rig.oms.on_execution_report(report(a, E.NEW, S.NEW))
    rig.oms.on_execution_report(report(a, E.CANCELED, S.CANCELED, cum=0, leaves=0, text="halt"))
    assert a.status is S.CANCELED
    assert rig.alerts[-1].text == "unsolicited cancel of T1: halt"
    b = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100)
    rig.oms.on_execution_report(report(b, E.NEW, S.NEW))
    rig.oms.on_execution_report(report(b, E.DONE_FOR_DAY, S.DONE_FOR_DAY, cum=0, leaves=1))
    assert b.status is S.DONE_FOR_DAY
    rig.oms.on_execution_report(report(b, E.EXPIRED, S.EXPIRED, cum=0, leaves=0))
    assert b.status is S.EXPIRED
    assert rig.risk.open_orders() == 0


def test_illegal_move_is_refused_and_alerted_never_applied() -> None:
    rig = make_oms()
    order = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=2, px_ticks=100)
    rig.oms.on_execution_report(report(order, E.TRADE, S.FILLED, last_qty=2, exec_id="1"))
    changes = len(rig.changes)
    rig.oms.on_execution_report(report(order, E.NEW, S.NEW, cum=2, leaves=0))
    assert (order.status, order.cum_qty_lots, order.leaves_qty_lots) == (S.FILLED, 2, 0)
    assert rig.alerts[-1].level is AlertLevel.ERROR
    assert "from FILLED (CumQty 2) to NEW" in rig.alerts[-1].text
    assert "not applied" in rig.alerts[-1].text
    assert rig.oms.transitions_refused == 1
    assert len(rig.changes) == changes  # nothing published: the order did not change


def test_duplicate_clordid_is_refused() -> None:
    rig = make_oms()
    rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100, client_order_id="MINE")
    dup = rig.oms.send(
        strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100, client_order_id="MINE"
    )
    assert dup.status is S.REJECTED
    assert dup.text == "duplicate ClOrdID 'MINE': already used today"
    assert len(rig.venue.sent) == 1


@pytest.mark.parametrize(
    ("clordid", "message"),
    [
        ("", "ClOrdID <11> is empty"),
        ("A" * 37, "has 37 characters \\(at most 36\\)"),
        ("MY ORDER", "only printable ASCII without spaces"),
        ("A\x01B", "only printable ASCII without spaces"),
    ],
)
def test_a_clordid_no_venue_takes_is_refused_before_it_exists(clordid: str, message: str) -> None:
    rig = make_oms()
    with pytest.raises(ValueError, match=message):
        rig.oms.send(
            strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100, client_order_id=clordid
        )
    assert rig.venue.sent == []
    assert rig.oms.created == 0


def test_send_many_and_cancel_all_by_strategy_and_side() -> None:
    from engine.oms.request import OrderRequest

    rig = make_oms()
    sym = rig.oms.symbol
    orders = rig.oms.send_many(
        [
            OrderRequest(symbol=sym, strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=99),
            OrderRequest(symbol=sym, strategy_id=1, side=Side.SELL, qty_lots=1, px_ticks=101),
            OrderRequest(symbol=sym, strategy_id=2, side=Side.BUY, qty_lots=1, px_ticks=98),
        ]
    )
    with pytest.raises(ValueError, match="order request for 'NQZ6' sent to the order manager"):
        rig.oms.submit(OrderRequest(symbol="NQZ6", side=Side.BUY, qty_lots=1, px_ticks=98))
    assert [o.status for o in orders] == [S.PENDING_NEW] * 3
    assert rig.oms.cancel_all(strategy_id=1, side=Side.SELL) == 1
    assert rig.oms.cancel_all(strategy_id=1) == 1  # the sell already has a pending cancel
    assert rig.oms.cancel_all() == 1
    assert [k for k, _c, _o in rig.venue.sent].count("cancel") == 3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"qty_lots": 0, "px_ticks": 1}, "order quantity must be > 0 lots, got 0"),
        ({"qty_lots": 1, "px_ticks": 0}, "a limit order needs a price"),
    ],
)
def test_malformed_requests_raise_value_error(kwargs: dict[str, int], message: str) -> None:
    rig = make_oms()
    with pytest.raises(ValueError, match=message):
        rig.oms.send(strategy_id=1, side=Side.BUY, **kwargs)


def test_pending_new_is_the_dataclass_order_with_every_field_set() -> None:
    fast = Order.pending_new(
        7, "T7", 20170101, "ESZ6", Side.SELL, OrdType.LIMIT, TimeInForce.IOC, 3, 24_001, 1_000
    )
    slow = Order(
        order_id=7,
        client_order_id="T7",
        strategy_id=20170101,
        symbol="ESZ6",
        side=Side.SELL,
        ord_type=OrdType.LIMIT,
        time_in_force=TimeInForce.IOC,
        qty_lots=3,
        px_ticks=24_001,
        ts_created=1_000,
        ts_last=1_000,
        leaves_qty_lots=3,
    )
    for f in dataclasses.fields(Order):  # a field added to Order but not to pending_new fails
        assert getattr(fast, f.name) == getattr(slow, f.name), f.name
    assert fast == slow
    assert fast.view() == slow.view()


def test_view_is_the_dataclass_view_of_every_field() -> None:
    rig = make_oms()
    order = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=4, px_ticks=24_000)
    rig.oms.on_execution_report(
        report(order, ExecType.PARTIAL_FILL, OrdStatus.PARTIALLY_FILLED, last_qty=1, last_px=24_000)
    )
    rig.oms.on_execution_report(
        report(order, ExecType.PARTIAL_FILL, OrdStatus.PARTIALLY_FILLED, last_qty=2, last_px=24_003)
    )
    assert rig.oms.cancel(order)
    expected = OrderView(
        order_id=order.order_id,
        client_order_id=order.client_order_id,
        orig_client_order_ids=order.chain,
        venue_order_id=order.venue_order_id,
        strategy_id=1,
        symbol=order.symbol,
        side=Side.BUY,
        ord_type=OrdType.LIMIT,
        time_in_force=TimeInForce.DAY,
        qty_lots=4,
        px_ticks=24_000,
        status=OrdStatus.PENDING_CANCEL,
        cum_qty_lots=3,
        leaves_qty_lots=1,
        avg_px_ticks=(24_000 + 2 * 24_003) / 3,
        pending="cancel",
        text=order.text,
        ts_created=order.ts_created,
        ts_sent=order.ts_sent,
        ts_acked=order.ts_acked,
        ts_last=order.ts_last,
    )
    assert order.view() == expected
    assert order.ts_sent == order.ts_created > 0  # stamped once: created and sent together
