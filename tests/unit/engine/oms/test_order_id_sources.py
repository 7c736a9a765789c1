# SPDX-License-Identifier: MIT
"""Order ids and ClOrdIDs come from the router's counter and the venue, as before (issue 25).

The order manager reads both through ``next()`` of an iterator: the iterator itself when the
source it was given is an iterator's ``__next__`` (the router's counter, ``FixVenue``'s
ClOrdIDs), else a call of the source per id. Either way each order gets exactly what a call of
the source would have given, in order, on every manager of the router, and after
``continue_order_ids_after``.
"""

from __future__ import annotations

import itertools
from decimal import Decimal

from engine.bus import MessageBus
from engine.clock import TestClock
from engine.enums import Side
from engine.instruments import Instrument
from engine.oms.manager import _iterator_of
from engine.oms.router import OrderRouter
from engine.venues.fix.adapter import FixVenue
from tests.factories import fix_pair

ES = Instrument(symbol="ESZ6", tick_size=Decimal("0.25"), multiplier=Decimal(50))
NQ = Instrument(symbol="NQH7", tick_size=Decimal("0.25"), multiplier=Decimal(20))


class NamingVenue(FixVenue):
    """A FIX venue whose ClOrdIDs come from a Python method."""

    def __init__(self, clock: TestClock) -> None:
        super().__init__(clock)
        self.asked = 0

    def new_client_order_id(self) -> str:
        """Return the next ClOrdID of this venue's own scheme."""
        self.asked += 1
        return f"N-{self.asked:04d}"


def test_an_iterators_next_is_the_iterator_and_anything_else_is_called() -> None:
    count = itertools.count(5)
    assert _iterator_of(count.__next__) is count
    calls: list[int] = []

    def source() -> int:
        calls.append(1)
        return len(calls) * 10

    it = _iterator_of(source)
    assert [next(it) for _ in range(3)] == [10, 20, 30]
    assert len(calls) == 3
    other = itertools.count(1)
    assert next(_iterator_of(other.__next__)) == 1  # not another iterator's


def test_ids_are_the_routers_count_and_the_venues_names_on_every_manager() -> None:
    clock = TestClock()
    fix, named = FixVenue(clock), NamingVenue(clock)
    router = OrderRouter(MessageBus(), clock)
    for venue, inst in ((fix, ES), (named, NQ)):
        session, _theirs, _out = fix_pair(venue, clock)
        venue.bind(session)
        venue.route(inst, router.add_instrument(inst, venue))
    prefix = fix._prefix
    sent = [
        router.send(symbol=s, side=Side.BUY, qty_lots=1, px_ticks=100 + k)
        for k, s in enumerate(["ESZ6", "NQH7", "ESZ6", "ESZ6", "NQH7"])
    ]
    assert [o.order_id for o in sent] == [1, 2, 3, 4, 5]
    assert [o.client_order_id for o in sent] == [
        f"{prefix}1",
        "N-0001",
        f"{prefix}2",
        f"{prefix}3",
        "N-0002",
    ]
    router.continue_order_ids_after(100)
    more = [
        router.send(symbol=s, side=Side.SELL, qty_lots=1, px_ticks=99) for s in ("NQH7", "ESZ6")
    ]
    assert [o.order_id for o in more] == [101, 102]
    assert [o.client_order_id for o in more] == ["N-0003", f"{prefix}4"]
    assert named.asked == 3
