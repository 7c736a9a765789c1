# SPDX-License-Identifier: MIT
"""No order stays pending silently: unanswered requests raise alerts and ask for the status.

The order manager over a recording venue and a test clock: what it sends (the status requests)
and what it publishes (alerts, order changes) as time passes without an answer.
"""

from engine.enums import AlertLevel, OrdStatus, Side
from engine.enums import ExecType as E
from engine.oms.venue import RejectReason, Request
from tests.factories import make_oms, report

S = OrdStatus
TIMEOUT = 10_000_000_000


def test_an_answered_order_raises_nothing() -> None:
    rig = make_oms()
    order = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100)
    rig.oms.on_execution_report(report(order, E.NEW, S.NEW))
    rig.clock.advance(2 * TIMEOUT)
    assert rig.oms.check_unanswered(TIMEOUT) == 0
    assert rig.alerts == []
    assert [k for k, _c, _o in rig.venue.sent] == ["new"]


def test_an_unanswered_new_order_alerts_once_then_escalates_and_keeps_asking() -> None:
    rig = make_oms()
    order = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=2, px_ticks=100)
    rig.oms.check_unanswered(TIMEOUT)  # the watch starts: nothing yet
    rig.clock.advance(TIMEOUT - 1)
    assert rig.oms.check_unanswered(TIMEOUT) == 0
    rig.clock.advance(1)
    assert rig.oms.check_unanswered(TIMEOUT) == 1
    assert rig.venue.sent[-1] == ("status", "T1", "")
    (a,) = rig.alerts
    assert a.level is AlertLevel.WARNING
    assert a.text == (
        "no answer from the venue to the new order T1 (BUY 2 ESZ6 at 100 ticks, "
        "strategy 1) within 10 s; the order is PENDING_NEW: asking the venue for its status"
    )
    assert rig.oms.check_unanswered(TIMEOUT) == 0  # asked: not again within the period
    assert len(rig.alerts) == 1
    rig.clock.advance(TIMEOUT)
    rig.oms.check_unanswered(TIMEOUT)
    assert rig.alerts[-1].level is AlertLevel.ERROR
    assert "not to the status request either; the order stays PENDING_NEW" in rig.alerts[-1].text
    rig.clock.advance(TIMEOUT)
    rig.oms.check_unanswered(TIMEOUT)  # asked again, quietly
    assert len(rig.alerts) == 2
    assert [k for k, _c, _o in rig.venue.sent] == ["new", "status", "status", "status"]
    assert order.status is S.PENDING_NEW
    assert rig.oms.unanswered_requests == 1
    # The venue finally answers: it has the order.
    rig.oms.on_execution_report(report(order, E.ORDER_STATUS, S.NEW))
    assert order.status is S.NEW
    assert order.ts_acked
    assert "resolves the unanswered new order T1: NEW" in rig.alerts[-1].text


def test_a_status_answer_unknown_order_rejects_an_order_never_acknowledged() -> None:
    rig = make_oms()
    order = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100)
    rig.oms.check_unanswered(TIMEOUT)
    rig.clock.advance(TIMEOUT)
    rig.oms.check_unanswered(TIMEOUT)
    rig.oms.on_execution_report(report(order, E.ORDER_STATUS, S.REJECTED, text="unknown order"))
    # Rejected (it never reached the venue), not "canceled because the venue lost it".
    assert order.status is S.REJECTED
    assert not order.ts_acked
    assert rig.risk.open_orders() == 0
    assert "REJECTED (unknown order)" in rig.alerts[-1].text


def test_an_unanswered_cancel_ends_with_the_status_the_venue_reports() -> None:
    rig = make_oms()
    order = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100)
    rig.oms.on_execution_report(report(order, E.NEW, S.NEW))
    rig.oms.check_unanswered(TIMEOUT)
    rig.clock.advance(TIMEOUT)
    assert rig.oms.cancel(order)
    rig.clock.advance(TIMEOUT)
    assert rig.oms.check_unanswered(TIMEOUT) == 1
    assert "cancel request T2 of order T1" in rig.alerts[-1].text
    rig.oms.on_execution_report(report(order, E.ORDER_STATUS, S.NEW))
    assert (order.status, order.pending) == (S.NEW, None)
    assert any(c.change == "cancel unanswered" for c in rig.changes)
    # A cancel asked again is a new request with its own clock.
    assert rig.oms.cancel(order)
    assert rig.oms.check_unanswered(TIMEOUT) == 0


def test_a_venue_rejecting_status_requests_is_not_asked_again() -> None:
    rig = make_oms()
    order = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100)
    rig.oms.check_unanswered(TIMEOUT)
    rig.clock.advance(TIMEOUT)
    rig.oms.check_unanswered(TIMEOUT)
    rig.oms.on_request_rejected(
        Request.STATUS,
        "T1",
        "Unsupported Message Type",
        reason=RejectReason.BUSINESS,
        detail="BusinessRejectReason 3",
    )
    assert order.status is S.PENDING_NEW
    assert "business message reject of status request T1" in rig.alerts[-1].text
    assert rig.alerts[-1].text.endswith("the order stays PENDING_NEW")
    n_sent, n_alerts = len(rig.venue.sent), len(rig.alerts)
    for _ in range(3):
        rig.clock.advance(TIMEOUT)
        rig.oms.check_unanswered(TIMEOUT)
    assert (len(rig.venue.sent), len(rig.alerts)) == (n_sent, n_alerts)


def test_an_order_restored_long_ago_is_timed_from_the_first_check() -> None:
    rig = make_oms()
    order = rig.oms.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100)
    rig.clock.advance(10 * TIMEOUT)  # e.g. sent before a restart
    assert rig.oms.check_unanswered(TIMEOUT) == 0
    rig.clock.advance(TIMEOUT)
    assert rig.oms.check_unanswered(TIMEOUT) == 1
    assert order.status is S.PENDING_NEW
