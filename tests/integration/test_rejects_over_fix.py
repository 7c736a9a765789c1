# SPDX-License-Identifier: MIT
"""Every reject accounted for, over real FIX 4.4 sessions on 127.0.0.1 against the simulator.

A session Reject <3> of a new order, cancel or replace; a BusinessMessageReject <j> with and
without BusinessRejectRefID <379>; a venue that never answers a new order, cancel or replace.
Each resolves the order (nothing stays pending, counted against risk) and raises an alert that
names the order and the reason. Both sessions validate with their data dictionaries, as a
production initiator does.
"""

from collections.abc import Callable

import pytest

from engine.enums import AlertLevel, OrdStatus, Side
from engine.events import Alert
from engine.fix.application import SessionID
from engine.fix.message import FixMessage, OutMessage
from engine.oms.order import Order, PendingRequest
from engine.sim.fix_app import SimFixApplication
from engine.venues.fix.adapter import FixVenue
from tests.integration.test_oms_over_fix import Rig, fix_rig

pytestmark = pytest.mark.integration


def alerts(rig: Rig) -> list[Alert]:
    return [e for e in rig.events if isinstance(e, Alert)]


def alert_about(rig: Rig, *words: str) -> Alert:
    """Return the one alert whose text has every word (fail naming the alerts there are)."""
    found = [a for a in alerts(rig) if all(w in a.text for w in words)]
    assert len(found) == 1, f"alerts with {words}: {[a.text for a in alerts(rig)]}"
    return found[0]


# ---------------------------------------------------------------------- session Reject <3>
class SloppyVenue(FixVenue):
    """Order messages the counterparty's dictionary refuses, each for its own reason.

    NewOrderSingle without Side <54> (required); OrderCancelRequest with Side <54> "Z" (not a
    value of the field); OrderCancelReplaceRequest without OrdType <40> (required).
    """

    sloppy = ""

    def submit(self, order: Order) -> None:
        if self.sloppy != "D":
            super().submit(order)
            return
        msg = OutMessage(
            b"D",
            [
                (11, order.client_order_id.encode()),
                (21, b"1"),
                (38, b"1"),
                (40, b"2"),
                (44, b"6000"),
                (55, b"ESZ6"),
                (59, b"0"),
                (60, self._now_text()),
            ],
        )
        self.send_order_message(msg, order.client_order_id, order.symbol)

    def cancel(self, order: Order, request: PendingRequest) -> None:
        if self.sloppy != "F":
            super().cancel(order, request)
            return
        msg = OutMessage(
            b"F",
            [(11, request.client_order_id.encode()), (38, b"1"),
             (41, order.client_order_id.encode()), (54, b"Z"), (55, b"ESZ6"),
             (60, self._now_text())],
        )  # fmt: skip
        self.send_order_message(msg, request.client_order_id, order.symbol)

    def replace(self, order: Order, request: PendingRequest) -> None:
        if self.sloppy != "G":
            super().replace(order, request)
            return
        msg = OutMessage(
            b"G",
            [(11, request.client_order_id.encode()), (21, b"1"), (38, b"2"),
             (41, order.client_order_id.encode()), (44, b"5999.75"), (54, b"1"), (55, b"ESZ6"),
             (60, self._now_text())],
        )  # fmt: skip
        self.send_order_message(msg, request.client_order_id, order.symbol)


async def test_session_reject_of_a_new_order_rejects_it_with_an_alert() -> None:
    async with fix_rig(SloppyVenue) as rig:
        assert isinstance(rig.venue, SloppyVenue)
        rig.venue.sloppy = "D"
        order = rig.router.send(
            symbol="ESZ6", strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=24_000
        )
        await rig.until(lambda: order.is_terminal)
        assert order.status is OrdStatus.REJECTED
        assert order.text == "session reject: Required tag missing"
        assert rig.router.risk.open_orders() == 0
        a = alert_about(rig, "session reject of NewOrderSingle <D>", order.client_order_id)
        assert a.level is AlertLevel.WARNING
        assert "(BUY 1 ESZ6 at 24000 ticks, strategy 1)" in a.text
        assert "SessionRejectReason 1 (Required tag missing)" in a.text
        assert "RefTagID 54 (Side)" in a.text
        assert a.text.endswith("the order is REJECTED")


@pytest.mark.parametrize(
    ("msg_type", "reason", "tag"),
    [
        (
            "F",
            "SessionRejectReason 5 (Value is incorrect (out of range) for this tag)",
            "RefTagID 54 (Side)",
        ),
        ("G", "SessionRejectReason 1 (Required tag missing)", "RefTagID 40 (OrdType)"),
    ],
)
async def test_session_reject_of_a_cancel_or_replace_ends_it_with_an_alert(
    msg_type: str, reason: str, tag: str
) -> None:
    async with fix_rig(SloppyVenue) as rig:
        assert isinstance(rig.venue, SloppyVenue)
        order = rig.router.send(
            symbol="ESZ6", strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=23_990
        )
        await rig.until(lambda: order.status is OrdStatus.NEW)
        rig.venue.sloppy = msg_type
        m = rig.router.manager("ESZ6")
        assert m.cancel(order) if msg_type == "F" else m.replace(order, qty_lots=2)
        request = order.pending
        assert request is not None
        await rig.until(lambda: order.pending is None)
        assert order.status is OrdStatus.NEW
        assert order.qty_lots == 1
        name = "OrderCancelRequest <F>" if msg_type == "F" else "OrderCancelReplaceRequest <G>"
        a = alert_about(rig, f"session reject of {name} {request.client_order_id}")
        assert f"of order {order.client_order_id} (BUY 1 ESZ6" in a.text
        assert reason in a.text
        assert tag in a.text
        kind = "cancel" if msg_type == "F" else "replace"
        assert a.text.endswith(f"the {kind} ended, the order stays NEW")
        # The order still trades normally: a well-formed cancel goes through.
        rig.venue.sloppy = ""
        assert m.cancel(order)
        await rig.until(lambda: order.status is OrdStatus.CANCELED)
        assert rig.router.risk.open_orders() == 0


# ---------------------------------------------------------------------- BusinessMessageReject <j>
class NoPriceVenue(FixVenue):
    """Sends limit orders without Price <44>: valid for the dictionary (44 is optional), but the
    simulator's application needs it and its session answers with a BusinessMessageReject
    (380=5, without 379, as QuickFIX's does)."""

    def submit(self, order: Order) -> None:
        msg = OutMessage(
            b"D",
            [
                (11, order.client_order_id.encode()),
                (21, b"1"),
                (38, b"1"),
                (40, b"2"),
                (54, b"1"),
                (55, b"ESZ6"),
                (59, b"0"),
                (60, self._now_text()),
            ],
        )
        self.send_order_message(msg, order.client_order_id, order.symbol)


async def test_business_reject_without_379_is_matched_by_ref_seq_num() -> None:
    async with fix_rig(NoPriceVenue) as rig:
        order = rig.router.send(
            symbol="ESZ6", strategy_id=7, side=Side.BUY, qty_lots=1, px_ticks=24_000
        )
        await rig.until(lambda: order.is_terminal)
        assert order.status is OrdStatus.REJECTED
        assert rig.router.risk.open_orders() == 0
        a = alert_about(rig, "business message reject of NewOrderSingle <D>", order.client_order_id)
        assert "Conditionally Required Field Missing (44)" in a.text
        assert "BusinessRejectReason 5 (Conditionally Required Field Missing)" in a.text
        assert "BusinessRejectRefID" not in a.text  # matched by RefSeqNum <45>
        # Our engine's 35=j follows QuickFIX: no RefTagID <371> (not a field of j): the tag is
        # in the text, and our validating initiator accepted it.
        (raw,) = [r for _s, r in rig.sim_session.store.get_range(1, 1_000) if b"\x0135=j\x01" in r]
        assert b"\x01371=" not in raw
        assert b"\x0158=Conditionally Required Field Missing (44)\x01" in raw


class RefusingApp(SimFixApplication):
    """Refuses orders above 5 lots with a BusinessMessageReject naming the ClOrdID in 379 and
    no RefSeqNum <45> (so only 379 can match it); cancels of them likewise."""

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        mt = message.msg_type
        qty = int(message.get(38) or b"0")
        if mt in (b"D", b"G") and qty > 5:
            client = self._clients[session_id]
            self._send(client, OutMessage(b"j", [
                (58, b"not authorized above 5 lots"), (372, mt), (379, message.get(11) or b""),
                (380, b"6"),
            ]))  # fmt: skip
            return
        super().from_app(message, session_id)


async def test_business_reject_with_379_is_matched_by_the_clordid() -> None:
    async with fix_rig(app_cls=RefusingApp) as rig:
        big = rig.router.send(
            symbol="ESZ6", strategy_id=3, side=Side.SELL, qty_lots=6, px_ticks=24_100
        )
        small = rig.router.send(
            symbol="ESZ6", strategy_id=3, side=Side.SELL, qty_lots=1, px_ticks=24_100
        )
        await rig.until(lambda: big.is_terminal and small.status is OrdStatus.NEW)
        assert big.status is OrdStatus.REJECTED
        a = alert_about(rig, "business message reject of NewOrderSingle <D>", big.client_order_id)
        assert "not authorized above 5 lots" in a.text
        assert f"BusinessRejectRefID {big.client_order_id}" in a.text
        assert "BusinessRejectReason 6 (Not authorized)" in a.text
        # A replace of the small one up to 6 lots: refused, the replace ends.
        m = rig.router.manager("ESZ6")
        assert m.replace(small, qty_lots=6)
        request = small.pending
        assert request is not None
        await rig.until(lambda: small.pending is None)
        assert (small.status, small.qty_lots) == (OrdStatus.NEW, 1)
        a = alert_about(rig, f"OrderCancelReplaceRequest <G> {request.client_order_id}")
        assert a.text.endswith("the replace ended, the order stays NEW")
        assert rig.router.risk.open_orders() == 1


# ---------------------------------------------------------------------- no answer at all
class SwallowingApp(SimFixApplication):
    """Never answers the first message of one type (it is lost inside the venue)."""

    swallow = b"D"

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        if message.msg_type == self.swallow:
            self.swallow = b""
            return
        super().from_app(message, session_id)


class SwallowD(SwallowingApp):
    swallow = b"D"


class SwallowF(SwallowingApp):
    swallow = b"F"


class SwallowG(SwallowingApp):
    swallow = b"G"


TIMEOUT_NS = 300_000_000  # 0.3 s


async def checked_until(rig: Rig, pred: Callable[[], bool]) -> None:
    """Wait for ``pred`` while checking for unanswered requests, as the trading desk does."""
    m = rig.router.manager("ESZ6")

    def check() -> bool:
        m.check_unanswered(TIMEOUT_NS)
        return pred()

    await rig.until(check, within=10.0)


async def test_a_new_order_the_venue_never_answers_is_resolved_by_a_status_request() -> None:
    async with fix_rig(app_cls=SwallowD) as rig:
        order = rig.router.send(
            symbol="ESZ6", strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=23_990
        )
        await checked_until(rig, lambda: order.is_terminal)
        # The venue never had it: its status answer "unknown order" rejects it.
        assert order.status is OrdStatus.REJECTED
        assert order.text == "unknown order"
        assert rig.router.risk.open_orders() == 0
        a = alert_about(rig, "no answer from the venue to the NewOrderSingle <D>")
        assert f"<D> {order.client_order_id} (BUY 1 ESZ6 at 23990 ticks, strategy 1)" in a.text
        assert "within 0.3 s; the order is PENDING_NEW: asking the venue for its status" in a.text
        a = alert_about(rig, "the venue's status of", "resolves the unanswered NewOrderSingle")
        assert "REJECTED (unknown order)" in a.text
        # The next order is answered at once and raises nothing.
        n = len(alerts(rig))
        good = rig.router.send(
            symbol="ESZ6", strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=23_989
        )
        await checked_until(rig, lambda: good.status is OrdStatus.NEW)
        assert len(alerts(rig)) == n


@pytest.mark.parametrize("app_cls", [SwallowF, SwallowG])
async def test_a_cancel_or_replace_the_venue_never_answers_is_resolved(
    app_cls: type[SwallowingApp],
) -> None:
    async with fix_rig(app_cls=app_cls) as rig:
        order = rig.router.send(
            symbol="ESZ6", strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=23_990
        )
        await rig.until(lambda: order.status is OrdStatus.NEW)
        m = rig.router.manager("ESZ6")
        assert m.cancel(order) if app_cls is SwallowF else m.replace(order, px_ticks=23_991)
        request = order.pending
        assert request is not None
        await checked_until(rig, lambda: order.pending is None)
        # The venue still has the order as it was: the request is over, the order NEW.
        assert (order.status, order.px_ticks) == (OrdStatus.NEW, 23_990)
        name = "OrderCancelRequest <F>" if app_cls is SwallowF else "OrderCancelReplaceRequest <G>"
        a = alert_about(rig, f"no answer from the venue to the {name} {request.client_order_id}")
        assert f"of order {order.client_order_id}" in a.text
        a = alert_about(rig, "the venue's status of", f"{name} {request.client_order_id}: NEW")
        assert a.level is AlertLevel.WARNING
        # Asked again, the venue answers this time.
        assert m.cancel(order)
        await rig.until(lambda: order.status is OrdStatus.CANCELED)
        assert rig.router.risk.open_orders() == 0
