# SPDX-License-Identifier: MIT
"""FixVenue sends order messages through session templates: the same bytes as before.

The reference for every message is the body FixVenue used to build as an ``OutMessage`` (the
fields and order of the previous implementation), sent through ``FixSession.send`` under the same
MsgSeqNum and clock; the template path must write exactly those bytes. Rejects still map back to
their orders by MsgSeqNum, without ``to_app``.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import pytest

from engine.clock import TestClock
from engine.enums import OrdStatus, OrdType, Side, TimeInForce
from engine.fix.application import Application
from engine.fix.codec import FixDecoder, format_timestamp
from engine.fix.log import NullLog
from engine.fix.message import FixMessage, OutMessage
from engine.fix.session import FixSession
from engine.fix.settings import SessionSettings
from engine.fix.store import MemoryStore
from engine.instruments import Instrument
from engine.oms.order import Order, PendingRequest
from engine.oms.venue import CancelReject, ExecutionReport, RejectReason, Request
from engine.venues.fix.adapter import FixVenue
from engine.venues.fix.codes import ORD_TYPE_TO_FIX, SIDE_TO_FIX, TIF_TO_FIX, px_text, qty_text
from tests.factories import fix_pair

ES = Instrument(symbol="ESZ6", tick_size=Decimal("0.25"), multiplier=Decimal(50))


class Sink:
    def __init__(self) -> None:
        self.rejected: list[tuple[str, str, str, bool]] = []
        self.details: list[tuple[str, bool]] = []  # (detail, alert) of each reject

    def on_execution_report(self, rep: ExecutionReport) -> object:
        return None

    def on_cancel_reject(self, rej: CancelReject) -> object:
        return None

    def on_request_rejected(
        self,
        request: Request | None,
        client_order_id: str,
        text: str,
        *,
        reason: RejectReason,
        detail: str = "",
    ) -> object:
        # Recorded as the FIX message it was (the adapter maps MsgTypes to requests).
        letter = {
            Request.NEW: "D",
            Request.CANCEL: "F",
            Request.REPLACE: "G",
            Request.STATUS: "H",
            None: "",
        }[request]
        self.rejected.append((letter, client_order_id, text, reason is RejectReason.BUSINESS))
        self.details.append((detail, reason is not RejectReason.NOT_SENT))
        return None


def logged_on(
    app: Application, clock: TestClock, begin: str = "FIX.4.4", sender: str = "C"
) -> tuple[FixSession, list[bytes]]:
    ours, _theirs, out = fix_pair(app, clock, begin=begin, sender=sender, validate=True)
    return ours, out


def order(
    ord_type: OrdType = OrdType.LIMIT, venue_order_id: str = "", side: Side = Side.SELL
) -> Order:
    return Order(
        order_id=1,
        client_order_id="F1-7",
        strategy_id=1,
        symbol="ESZ6",
        side=side,
        ord_type=ord_type,
        time_in_force=TimeInForce.IOC,
        qty_lots=3,
        px_ticks=24_001,
        ts_created=0,
        status=OrdStatus.NEW,
        venue_order_id=venue_order_id,
    )


def legacy(msg_type: bytes, o: Order, req: PendingRequest | None, now: bytes) -> OutMessage:
    # The bodies of the previous FixVenue, field for field.
    vid = [(37, o.venue_order_id.encode())] if o.venue_order_id else []
    if msg_type == b"D":
        body = [(11, o.client_order_id.encode()), (21, b"1"), (38, qty_text(ES, o.qty_lots)),
                (40, ORD_TYPE_TO_FIX[o.ord_type]), (54, SIDE_TO_FIX[o.side]),
                (55, o.symbol.encode()), (59, TIF_TO_FIX[o.time_in_force]), (60, now)]  # fmt: skip
        if o.ord_type is OrdType.LIMIT:
            body.append((44, px_text(ES, o.px_ticks)))
    elif msg_type == b"F":
        assert req is not None
        body = [(11, req.client_order_id.encode()), (38, qty_text(ES, o.qty_lots)),
                (41, o.client_order_id.encode()), (54, SIDE_TO_FIX[o.side]),
                (55, o.symbol.encode()), (60, now), *vid]  # fmt: skip
    elif msg_type == b"G":
        assert req is not None
        body = [(11, req.client_order_id.encode()), (21, b"1"), (38, qty_text(ES, req.qty_lots)),
                (40, ORD_TYPE_TO_FIX[o.ord_type]), (41, o.client_order_id.encode()),
                (54, SIDE_TO_FIX[o.side]), (55, o.symbol.encode()),
                (59, TIF_TO_FIX[o.time_in_force]), (60, now)]  # fmt: skip
        if o.ord_type is OrdType.LIMIT:
            body.append((44, px_text(ES, req.px_ticks)))
        body += vid
    else:
        body = [
            (11, o.client_order_id.encode()),
            (54, SIDE_TO_FIX[o.side]),
            (55, o.symbol.encode()),
            *vid,
        ]
    return OutMessage(msg_type, body)


REQ = PendingRequest(
    kind="replace", client_order_id="F1-8", prev_status=OrdStatus.NEW, qty_lots=5, px_ticks=23_990
)

CASES: list[tuple[bytes, Order, Callable[[FixVenue, Order], None]]] = [
    (b"D", order(), lambda v, o: v.submit(o)),
    (b"D", order(OrdType.MARKET, side=Side.BUY), lambda v, o: v.submit(o)),
    (b"F", order(), lambda v, o: v.cancel(o, REQ)),
    (b"F", order(venue_order_id="V9"), lambda v, o: v.cancel(o, REQ)),
    (b"G", order(), lambda v, o: v.replace(o, REQ)),
    (b"G", order(venue_order_id="V9"), lambda v, o: v.replace(o, REQ)),
    (b"G", order(OrdType.MARKET), lambda v, o: v.replace(o, REQ)),
    (b"G", order(OrdType.MARKET, venue_order_id="V9"), lambda v, o: v.replace(o, REQ)),
    (b"H", order(), lambda v, o: v.request_status(o)),
    (b"H", order(venue_order_id="V9"), lambda v, o: v.request_status(o)),
]


@pytest.mark.parametrize("begin", ["FIX.4.4", "FIX.4.2", "FIX.4.1"])
@pytest.mark.parametrize(("msg_type", "o", "send"), CASES)
def test_order_messages_have_the_bytes_of_the_generic_path(
    begin: str, msg_type: bytes, o: Order, send: Callable[[FixVenue, Order], None]
) -> None:
    clock = TestClock()
    venue = FixVenue(clock)
    session, out = logged_on(venue, clock, begin)
    venue.bind(session)
    venue.route(ES, Sink())
    seq = session.next_sender_seq_num
    for i in range(3):  # a cached template, then a new millisecond
        send(venue, o)
        assert len(out) == i + 1
        session.set_next_sender_seq_num(seq + i)
        now = format_timestamp(clock.now_ns(), 0 if begin < "FIX.4.2" else 3)
        assert session.send(legacy(msg_type, o, REQ, now))
        assert out[-1] == out[-2]
        del out[-1]
        clock.advance(1_500_000)
    assert session.next_sender_seq_num == seq + 3


def test_venue_leaves_to_app_alone_so_the_session_takes_the_template_path() -> None:
    assert FixVenue.to_app is Application.to_app


def test_reject_maps_back_to_the_order_by_msg_seq_num() -> None:
    clock = TestClock()
    venue = FixVenue(clock)
    session, out = logged_on(venue, clock)
    venue.bind(session)
    sink = Sink()
    venue.route(ES, sink)
    o = order()
    venue.submit(o)
    venue.cancel(o, REQ)
    first, second = (FixDecoder().feed(raw)[0] for raw in out)
    reject = FixMessage.from_pairs(
        [(8, b"FIX.4.4"), (35, b"3"), (45, second.get(34) or b""), (58, b"Bad cancel")]
    )
    venue.from_admin(reject, session.session_id)
    assert sink.rejected == [("F", "F1-8", "Bad cancel", False)]
    reject = FixMessage.from_pairs([(8, b"FIX.4.4"), (35, b"3"), (45, first.get(34) or b"")])
    venue.from_admin(reject, session.session_id)
    assert sink.rejected[-1] == ("D", "F1-7", "rejected by the session", False)
    assert sink.details[-1] == (f"RefSeqNum {int(first.get(34) or b'0')}", True)
    reject = FixMessage.from_pairs(
        [(8, b"FIX.4.4"), (35, b"3"), (45, first.get(34) or b""), (371, b"44"), (373, b"5")]
    )
    venue.from_admin(reject, session.session_id)
    assert sink.rejected[-1] == (
        "D",
        "F1-7",
        "Value is incorrect (out of range) for this tag",
        False,
    )
    assert sink.details[-1][0].endswith(
        "SessionRejectReason 5 (Value is incorrect (out of range) for this tag), "
        "RefTagID 44 (Price)"
    )


def test_request_is_refused_at_once_when_not_logged_on() -> None:
    clock = TestClock()
    deferred: list[Callable[[], None]] = []
    venue = FixVenue(clock, defer=deferred.append)
    session = FixSession(
        SessionSettings(
            begin_string="FIX.4.4",
            sender_comp_id="C",
            target_comp_id="S",
            connection_type="initiator",
            heart_bt_int=30,
        ),
        MemoryStore(),
        venue,
        NullLog(),
        clock,
    )
    venue.bind(session)
    sink = Sink()
    venue.route(ES, sink)
    seq = session.next_sender_seq_num
    venue.submit(order())
    assert sink.rejected == []  # deferred, never inside the caller
    assert len(deferred) == 1
    deferred[0]()
    assert sink.rejected == [
        ("D", "F1-7", f"not sent: FIX session {session.session_id} is not logged on", False)
    ]
    assert sink.details == [("", False)]  # the engine's own refusal: no alert
    assert session.next_sender_seq_num == seq  # nothing consumed a sequence number
    assert session.drain() == []


def test_rebinding_uses_the_new_sessions_templates() -> None:
    clock = TestClock()
    venue = FixVenue(clock)
    venue.route(ES, Sink())
    first, out1 = logged_on(venue, clock, sender="C1")
    venue.bind(first)
    venue.submit(order())
    second, out2 = logged_on(venue, clock, sender="C2")
    venue.bind(second)
    venue.submit(order())
    assert b"\x0149=C1\x01" in out1[0]
    assert len(out2) == 1
    assert b"\x0149=C2\x01" in out2[0]
    # Assigned without bind(): the templates follow the session all the same.
    venue.session = first
    venue.submit(order())
    assert len(out1) == 2
    assert b"\x0149=C1\x01" in out1[1]


def test_new_order_transact_time_is_when_the_order_manager_sent_it() -> None:
    clock = TestClock()
    venue = FixVenue(clock)
    session, out = logged_on(venue, clock)
    venue.bind(session)
    venue.route(ES, Sink())
    o = order()
    o.ts_sent = clock.now_ns() - 2_000_000_000  # stamped earlier than the clock now says
    venue.submit(o)
    sent = FixDecoder().feed(out[-1])[0]
    assert sent.get(60) == format_timestamp(o.ts_sent, 3)
    o.ts_sent = 0  # never stamped (not from an order manager): the clock's time
    venue.submit(o)
    sent = FixDecoder().feed(out[-1])[0]
    assert sent.get(60) == format_timestamp(clock.now_ns(), 3)
