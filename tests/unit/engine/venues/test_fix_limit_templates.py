# SPDX-License-Identifier: MIT
"""Limit NewOrderSingles go out through one template per instrument, side and time in force.

Their OrdType <40>, Side <54>, Symbol <55> and TimeInForce <59> are written into the template
(issue 25), so a send fills in ClOrdID, OrderQty, Price and TransactTime only. Every message
must still be the one ``FixSession.send`` writes for the message built field by field, under
the same MsgSeqNum and clock; a template of one session is never used on another; an
application that overrides ``to_app`` still sees the whole message.
"""

from __future__ import annotations

from decimal import Decimal

from hypothesis import example, given, settings
from hypothesis import strategies as st

from engine.clock import TestClock
from engine.enums import OrdType, Side, TimeInForce
from engine.fix.application import SessionID
from engine.fix.codec import FixDecoder, format_timestamp
from engine.fix.message import OutMessage
from engine.fix.session import FixSession
from engine.instruments import Instrument
from engine.oms.order import Order
from engine.venues.fix.adapter import FixVenue
from engine.venues.fix.codes import ORD_TYPE_TO_FIX, SIDE_TO_FIX, TIF_TO_FIX, px_text, qty_text
from tests.factories import fix_pair

ES = Instrument(symbol="ESZ6", tick_size=Decimal("0.25"), multiplier=Decimal(50))
NQ = Instrument(symbol="NQH7", tick_size=Decimal("0.25"), multiplier=Decimal(20))
BY_SYMBOL = {i.symbol: i for i in (ES, NQ)}


class Sink:
    """Report sink of an instrument: remembers the requests refused."""

    def __init__(self) -> None:
        self.refused: list[str] = []

    def on_execution_report(self, rep: object) -> None:
        """Take a report (none is expected here)."""

    def on_cancel_reject(self, rej: object) -> None:
        """Take a cancel reject (none is expected here)."""

    def on_request_rejected(self, request: object, clordid: str, text: str, **_kw: object) -> None:
        """Remember a refused request."""
        self.refused.append(clordid)


def new_order(k: int, symbol: str, side: Side, ot: OrdType, tif: TimeInForce, qty: int,
              px: int, now: int) -> Order:  # fmt: skip
    return Order(
        order_id=k, client_order_id=f"C{k}", strategy_id=1, symbol=symbol, side=side,
        ord_type=ot, time_in_force=tif, qty_lots=qty, px_ticks=px if ot is OrdType.LIMIT else 0,
        ts_created=now, ts_sent=now,
    )  # fmt: skip


def reference(o: Order) -> OutMessage:
    # The NewOrderSingle <D> built field by field, as FixVenue used to.
    inst = BY_SYMBOL[o.symbol]
    fields: list[tuple[int, bytes]] = [(11, o.client_order_id.encode()), (21, b"1")]
    fields += [(38, qty_text(inst, o.qty_lots)), (40, ORD_TYPE_TO_FIX[o.ord_type])]
    if o.ord_type is OrdType.LIMIT:
        fields.append((44, px_text(inst, o.px_ticks)))
    fields += [(54, SIDE_TO_FIX[o.side]), (55, o.symbol.encode())]
    fields += [(59, TIF_TO_FIX[o.time_in_force]), (60, format_timestamp(o.ts_sent, 3))]
    return OutMessage(b"D", fields)


def rig(clock: TestClock, venue: FixVenue) -> tuple[FixSession, list[bytes], dict[str, Sink]]:
    session, _theirs, out = fix_pair(venue, clock)
    venue.bind(session)
    sinks = {s: Sink() for s in BY_SYMBOL}
    for symbol, inst in BY_SYMBOL.items():
        venue.route(inst, sinks[symbol])  # type: ignore[arg-type]
    return session, out, sinks


ORDER = st.tuples(
    st.sampled_from(sorted(BY_SYMBOL)),
    st.sampled_from(list(Side)),
    st.sampled_from([OrdType.LIMIT, OrdType.LIMIT, OrdType.LIMIT, OrdType.MARKET]),
    st.sampled_from(list(TimeInForce)),
    st.integers(1, 10**6),
    st.integers(1, 10**7),
    st.integers(0, 3_000_000_000),
)


@settings(max_examples=120, deadline=None)
@given(orders=st.lists(ORDER, min_size=1, max_size=25))
# Texts converted before or not: both, the quantity's only, the price's only, both again.
@example(
    [
        ("ESZ6", Side.BUY, OrdType.LIMIT, TimeInForce.DAY, 1, 100, 0),
        ("ESZ6", Side.BUY, OrdType.LIMIT, TimeInForce.DAY, 1, 101, 1),
        ("ESZ6", Side.SELL, OrdType.LIMIT, TimeInForce.DAY, 2, 100, 1),
        ("ESZ6", Side.BUY, OrdType.LIMIT, TimeInForce.DAY, 1, 100, 1),
        ("NQH7", Side.BUY, OrdType.LIMIT, TimeInForce.DAY, 1, 100, 1),
    ]
)
def test_each_new_order_is_the_message_send_writes(
    orders: list[tuple[str, Side, OrdType, TimeInForce, int, int, int]],
) -> None:
    clock = TestClock()
    venue = FixVenue(clock)
    session, out, _sinks = rig(clock, venue)
    now = clock.now_ns()
    for k, (symbol, side, ot, tif, qty, px, step) in enumerate(orders):
        now += step
        o = new_order(k, symbol, side, ot, tif, qty, px, now)
        seq = session.next_sender_seq_num
        venue.submit(o)
        assert len(out) == 1
        session.set_next_sender_seq_num(seq)
        assert session.send(reference(o), now_ns=now)
        assert out[1] == out[0], (symbol, side, ot, tif)
        out.clear()
    made = [t for by_side in venue._new_limit.values() for d in by_side.values() for t in d]
    assert len(made) <= len({(s, d, t) for s, d, _o, t, *_r in orders})


def test_templates_of_one_session_are_not_used_on_another() -> None:
    clock = TestClock()
    venue = FixVenue(clock)
    first, out1, _sinks = rig(clock, venue)
    now = clock.now_ns()
    venue.submit(new_order(1, "ESZ6", Side.BUY, OrdType.LIMIT, TimeInForce.DAY, 1, 9, now))
    second, _theirs, out2 = fix_pair(venue, clock, sender="D")
    for how in ("bind", "assign"):  # bind(), or the attribute set without it
        if how == "bind":
            venue.bind(second)
        else:  # a template of the first session made, then the attribute set
            venue.bind(first)
            venue.submit(new_order(3, "ESZ6", Side.BUY, OrdType.LIMIT, TimeInForce.DAY, 1, 9, now))
            venue.session = second
        seq = second.next_sender_seq_num
        o = new_order(2, "ESZ6", Side.BUY, OrdType.LIMIT, TimeInForce.DAY, 1, 9, now)
        venue.submit(o)
        assert len(out2) == 1
        assert FixDecoder().feed(out2[0])[0].get(49) == b"D"
        second.set_next_sender_seq_num(seq)
        assert second.send(reference(o), now_ns=now)
        assert out2[1] == out2[0]
        out2.clear()
    assert len(out1) == 2


def test_an_order_is_refused_without_a_logged_on_session() -> None:
    clock = TestClock()
    venue = FixVenue(clock)
    session, out, sinks = rig(clock, venue)
    now = clock.now_ns()
    venue.submit(new_order(1, "NQH7", Side.SELL, OrdType.LIMIT, TimeInForce.IOC, 2, 5, now))
    session.state.received_logon = False
    venue.submit(new_order(2, "NQH7", Side.SELL, OrdType.LIMIT, TimeInForce.IOC, 2, 5, now))
    venue.session = None
    venue.submit(new_order(3, "NQH7", Side.BUY, OrdType.LIMIT, TimeInForce.GTC, 2, 5, now))
    assert len(out) == 1
    assert sinks["NQH7"].refused == ["C2", "C3"]


class Watching(FixVenue):
    """A venue whose ``to_app`` sees (and counts) every application message."""

    def __init__(self, clock: TestClock) -> None:
        super().__init__(clock)
        self.seen: list[dict[int, bytes]] = []

    def to_app(self, message: OutMessage, session_id: SessionID) -> None:
        """Remember the message's fields."""
        self.seen.append(dict(message.body))  # type: ignore[arg-type]


def test_to_app_sees_the_side_symbol_and_time_in_force_written_into_the_template() -> None:
    clock = TestClock()
    venue = Watching(clock)
    session, out, _sinks = rig(clock, venue)
    now = clock.now_ns()
    o = new_order(1, "NQH7", Side.SELL, OrdType.LIMIT, TimeInForce.GTC, 3, 17, now)
    seq = session.next_sender_seq_num
    venue.submit(o)
    want = dict(reference(o).body)  # type: ignore[arg-type]
    assert venue.seen == [want]
    session.set_next_sender_seq_num(seq)
    assert session.send(reference(o), now_ns=now)
    assert out[1] == out[0]


def test_client_order_ids_are_the_prefix_and_the_count_from_one() -> None:
    # Made ten at a time from the text of the tens (issue 25): the same texts as
    # f"{prefix}{n}", across the first batches and the carries of the tens.
    venue = FixVenue(TestClock())
    prefix = venue._prefix
    got = [venue.new_client_order_id() for _ in range(12_345)]
    assert got == [f"{prefix}{n}" for n in range(1, 12_346)]
    other = FixVenue(TestClock())
    assert other.new_client_order_id() == f"{prefix}1"  # each venue counts on its own
