# SPDX-License-Identifier: MIT
"""FixVenue's TransactTime <60> text, formatted once per unit of the precision (issue 25).

The adapter keeps the text of one unit of time (a millisecond, a second before FIX 4.2) and
the unit's bounds; any time outside them, later or earlier (a wall clock stepped back), gets
its own text. Every NewOrderSingle's TransactTime must be ``format_timestamp`` of its
``ts_sent``.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from engine.bus import MessageBus
from engine.clock import TestClock
from engine.enums import OrdType, Side, TimeInForce
from engine.fix.codec import FixDecoder, format_timestamp
from engine.instruments import Instrument
from engine.oms.order import Order
from engine.oms.router import OrderRouter
from engine.venues.fix.adapter import FixVenue
from tests.factories import fix_pair

ES_SYMBOL = "ESZ6"
ES = Instrument(symbol=ES_SYMBOL, tick_size=Decimal("0.25"), multiplier=Decimal(50))

#: Offsets (ns) of successive orders' ts_sent from a whole second: within a millisecond,
#: across one, back before the first, the same again, a second later, back a second.
STEPS = [0, 400_000, 999_999, 1_000_000, 1_000_001, -1, -1, 0, 1_000_000_000, 999_999_999]


@pytest.mark.parametrize(("begin", "precision"), [("FIX.4.4", 3), ("FIX.4.1", 0)])
def test_each_transact_time_is_the_text_of_its_send_time(begin: str, precision: int) -> None:
    clock = TestClock()
    venue = FixVenue(clock)
    session, _theirs, out = fix_pair(venue, clock, begin=begin)
    venue.bind(session)
    venue.route(ES, OrderRouter(MessageBus(), clock).add_instrument(ES, venue))
    base = clock.now_ns() // 1_000_000_000 * 1_000_000_000
    decoder = FixDecoder()
    for i, step in enumerate(STEPS):
        o = Order(
            order_id=i + 1, client_order_id=f"X{i}", strategy_id=1, symbol=ES_SYMBOL,
            side=Side.BUY, ord_type=OrdType.LIMIT, time_in_force=TimeInForce.DAY, qty_lots=1,
            px_ticks=24_000, ts_created=base + step, ts_sent=base + step,
        )  # fmt: skip
        venue.submit(o)
        sent = decoder.feed(out[-1])[0]
        assert sent.get(60) == format_timestamp(base + step, precision), step
    assert len(out) == len(STEPS)
