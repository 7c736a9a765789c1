# SPDX-License-Identifier: MIT
"""Venue links, venue-neutral: a FIX venue's logon and logout become ``VenueLinkChanged``, and
the trading desk asks that venue (and only that one) for the status of its working orders when
its link comes back up."""

from engine.bus import MessageBus
from engine.clock import TestClock
from engine.enums import ExecType, OrdStatus, Side
from engine.events import Event, VenueLinkChanged
from engine.oms.venue import ExecutionReport
from engine.trading import TradingDesk
from engine.venues.fix.adapter import FixVenue
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
        order = manager.send(1, Side.BUY, 1, 100)
        manager.on_execution_report(ExecutionReport(
            client_order_id=order.client_order_id, exec_type=ExecType.NEW,
            ord_status=OrdStatus.NEW, leaves_qty_lots=1, cum_qty_lots=0,
        ))  # fmt: skip
        venue.sent.clear()
    bus.publish(VenueLinkChanged(ts_event=clock.now_ns(), venue="B", protocol="FIX", up=True))
    assert a.sent == []
    assert b.sent == [("status", "T1", "")]
    bus.publish(VenueLinkChanged(ts_event=clock.now_ns(), venue="A", protocol="FIX", up=False))
    assert a.sent == []  # a link going down asks nothing
