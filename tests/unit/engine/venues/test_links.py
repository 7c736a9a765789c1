# SPDX-License-Identifier: MIT
"""Venue links, venue-neutral: a FIX venue's logon and logout become ``VenueLinkChanged``, and
the trading desk asks that venue (and only that one) for the status of its working orders when
its link comes back up."""

from engine.bus import MessageBus
from engine.clock import TestClock
from engine.desk import TradingDesk
from engine.enums import ExecType, OrdStatus, Side
from engine.events import Event, VenueLinkChanged
from engine.fix.codec import decode_one, encode
from engine.marketdata import MarketData
from engine.oms.venue import ExecutionReport
from engine.venues.fix.adapter import FixVenue
from engine.venues.fix.feed import FixMarketData
from tests.factories import RecordingVenue, fix_pair, make_instrument


def test_a_fix_venue_says_when_its_link_comes_up_and_goes_down() -> None:
    clock = TestClock(1_700_000_000_000_000_000)
    seen: list[VenueLinkChanged] = []

    def publish(ev: Event) -> None:
        assert isinstance(ev, VenueLinkChanged)
        seen.append(ev)

    venue = FixVenue(clock, name="EXCH-A", publish=publish)
    ours, _theirs, _out = fix_pair(venue, clock)
    venue.bind(ours)
    assert [(e.venue, e.protocol, e.up, e.detail) for e in seen] == [
        ("EXCH-A", "FIX", True, str(ours.session_id))
    ]
    venue.on_logout(ours.session_id)
    assert [e.up for e in seen] == [True, False]
    assert seen[-1].ts_event == clock.now_ns()


def test_the_desk_reconciles_only_the_venue_whose_link_came_up() -> None:
    clock = TestClock(1_700_000_000_000_000_000)
    bus = MessageBus()
    desk = TradingDesk(bus, clock)
    a, b = RecordingVenue(name="A"), RecordingVenue(name="B")
    desk.add_instrument(make_instrument("ESZ6"), a)
    desk.add_instrument(make_instrument("NQZ6"), b)
    for symbol, venue in (("ESZ6", a), ("NQZ6", b)):
        manager = desk.router.manager(symbol)
        order = manager.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=100)
        manager.on_execution_report(
            ExecutionReport(
                client_order_id=order.client_order_id,
                exec_type=ExecType.NEW,
                ord_status=OrdStatus.NEW,
                leaves_qty_lots=1,
                cum_qty_lots=0,
            )
        )
        venue.sent.clear()
    bus.publish(VenueLinkChanged(ts_event=clock.now_ns(), venue="B", protocol="FIX", up=True))
    assert a.sent == []
    assert b.sent == [("status", "T1", "")]
    bus.publish(VenueLinkChanged(ts_event=clock.now_ns(), venue="A", protocol="FIX", up=False))
    assert a.sent == []  # a link going down asks nothing


class Sink:
    """A report sink that takes nothing (the feed test routes an instrument only)."""

    def on_execution_report(self, rep: ExecutionReport) -> object:
        return None

    def on_cancel_reject(self, rej: object) -> object:
        return None

    def on_request_rejected(self, *args: object, **kw: object) -> object:
        return None


def test_the_fix_market_data_feed_subscribes_at_logon_and_fills_the_books() -> None:
    """The feed rides on the order-entry adapter's session but is its own object."""
    clock = TestClock(1_700_000_000_000_000_000)
    market = MarketData(["ESZ6", "NQZ6"], MessageBus(), clock, centres=[24_000, 84_000])
    venue = FixVenue(clock, name="EXCH")
    venue.route(make_instrument("ESZ6"), Sink())
    venue.set_feed(FixMarketData(market, clock))
    ours, _theirs, out = fix_pair(venue, clock, validate=False)
    venue.bind(ours)
    venue.on_logon(ours.session_id)  # (fix_pair logs on before the venue is bound to it)
    sent = [decode_one(raw) for raw in out]
    # Subscribed at logon: routed and in the books (NQZ6 is in the books, not routed here).
    assert [m.get(55) for m in sent if m is not None and m.msg_type == b"V"] == [b"ESZ6"]
    raw = encode(
        b"FIX.4.4",
        b"W",
        [(34, b"2"), (49, b"S"), (52, b"20231114-00:00:00"), (56, b"C")],
        [
            (55, b"ESZ6"),
            (268, b"2"),
            (269, b"0"),
            (270, b"6000.00"),
            (271, b"3"),
            (269, b"1"),
            (270, b"6000.25"),
            (271, b"4"),
        ],
        sort_body=False,
    )
    snapshot = decode_one(raw)
    assert snapshot is not None
    venue.from_app(snapshot, ours.session_id)
    book = market.book("ESZ6")
    assert book is not None
    assert (book.best_bid(), book.best_ask()) == ((24_000, 3), (24_001, 4))
