# SPDX-License-Identifier: MIT
"""The order manager books an order no risk rule applies to itself (issue 25).

``OrderManager._send_new`` does ``RiskChecker.new_order``'s booking in place when no rule can
apply (kill switch off, no engine-wide, instrument or strategy limits), and calls it
otherwise. Against a second ``RiskChecker`` told every order through ``check_new`` then
``on_new_order_sent``, with the kill switch and the limits switched on and off between
orders and the clock moving across the rate window: the same refusals, open orders, working
lots and sends in the window after every order.
"""

from __future__ import annotations

from decimal import Decimal

from hypothesis import example, given, settings
from hypothesis import strategies as st

from engine.bus import MessageBus
from engine.clock import TestClock
from engine.enums import KillLevel, OrdStatus, Side
from engine.instruments import Instrument
from engine.oms.risk import RiskChecker, RiskLimits
from engine.oms.router import OrderRouter
from engine.venues.fix.adapter import FixVenue
from tests.factories import fix_pair

ES = Instrument(symbol="ESZ6", tick_size=Decimal("0.25"), multiplier=Decimal(50))

SEND = st.tuples(
    st.just("send"),
    st.sampled_from([1, 2, 3]),
    st.sampled_from([Side.BUY, Side.SELL]),
    st.integers(1, 6),
    st.integers(95, 105),
    st.integers(0, 700_000_000),
)
SWITCH = st.one_of(
    st.tuples(st.just("kill"), st.sampled_from([KillLevel.OFF, KillLevel.BLOCK_NEW])),
    st.tuples(st.just("strategy"), st.sampled_from([1, 2]), st.none() | st.integers(1, 4)),
    st.tuples(st.just("global"), st.none() | st.integers(0, 5)),
    st.tuples(st.just("band"), st.none() | st.integers(0, 5)),
)


def apply(risk: RiskChecker, step: tuple[object, ...]) -> None:
    kind, *args = step
    value = args[-1]
    assert value is None or isinstance(value, int)
    if kind == "kill":
        assert isinstance(value, KillLevel)
        risk.kill_level = value
    elif kind == "strategy":
        sid = args[0]
        assert isinstance(sid, int)
        if value is None:
            risk.strategy_limits.pop(sid, None)
        else:
            risk.set_limits(RiskLimits(max_order_qty_lots=value), strategy_id=sid)
    elif kind == "global":
        risk.global_limits = RiskLimits(price_band_ticks=value)
    elif value is None:  # "band": the instrument's price band
        risk.instrument_limits.pop("ESZ6", None)
    else:
        risk.set_limits(RiskLimits(price_band_ticks=value), symbol="ESZ6")


B, S = Side.BUY, Side.SELL


@settings(max_examples=150, deadline=None)
@given(steps=st.lists(st.one_of(SEND, SEND, SEND, SWITCH), max_size=30))
# Each rule switched on after an order of the usual branch, then off again.
@example(
    [
        ("send", 1, B, 5, 100, 0),
        ("strategy", 1, 2),
        ("send", 1, B, 5, 100, 0),
        ("send", 2, S, 5, 100, 0),
        ("strategy", 1, None),
        ("send", 1, S, 5, 100, 0),
    ]
)
@example(
    [
        ("send", 1, B, 1, 100, 0),
        ("kill", KillLevel.BLOCK_NEW),
        ("send", 1, B, 1, 100, 0),
        ("send", 1, B, 1, 100, 0),
        ("kill", KillLevel.OFF),
        ("send", 3, S, 2, 100, 0),
    ]
)
@example(
    [
        ("send", 2, B, 1, 103, 0),
        ("global", 2),
        ("send", 2, B, 1, 103, 0),
        ("send", 2, B, 1, 103, 0),
        ("global", None),
        ("send", 2, B, 1, 103, 0),
    ]
)
@example(
    [
        ("send", 3, S, 1, 97, 0),
        ("band", 1),
        ("send", 3, S, 1, 97, 0),
        ("send", 3, S, 1, 97, 0),
        ("band", None),
        ("send", 3, S, 1, 97, 0),
    ]
)
@example(
    [
        ("send", 1, B, 1, 100, 600_000_000),
        ("send", 1, B, 1, 100, 600_000_000),
        ("send", 1, S, 2, 100, 0),
        ("send", 2, S, 1, 100, 0),
    ]
)  # the rate window
def test_orders_are_booked_as_check_new_then_on_new_order_sent(
    steps: list[tuple[object, ...]],
) -> None:
    clock = TestClock()
    venue = FixVenue(clock)
    session, _theirs, out = fix_pair(venue, clock)
    venue.bind(session)
    router = OrderRouter(MessageBus(), clock)
    router.set_reference_px("ESZ6", 100)
    manager = router.add_instrument(ES, venue)
    manager.stp = None  # every strategy on the usual branch (STP takes the general one)
    venue.route(ES, manager)
    ref = RiskChecker(clock, reference_px=lambda _s: 100)
    for step in steps:
        if step[0] != "send":
            apply(router.risk, step)
            apply(ref, step)
            continue
        _kind, sid, side, qty, px, wait = step
        assert isinstance(side, Side)
        assert isinstance(sid, int)
        assert isinstance(qty, int)
        assert isinstance(px, int)
        assert isinstance(wait, int)
        o = router.send(symbol="ESZ6", strategy_id=sid, side=side, qty_lots=qty, px_ticks=px)
        refusal = ref.check_new(sid, "ESZ6", side, qty, px, 12.5)
        if refusal is None:
            ref.on_new_order_sent(sid, "ESZ6", side, qty)
            assert o.status is OrdStatus.PENDING_NEW
            assert o.ts_sent == o.ts_created
        else:
            assert o.status is OrdStatus.REJECTED
            assert o.text == f"risk: {refusal}"
        for s in (None, 1, 2, 3):
            assert router.risk.open_orders(s) == ref.open_orders(s), s
            assert router.risk.sent_in_window(s) == ref.sent_in_window(s), s
            for d in Side:
                assert router.risk.working_lots("ESZ6", d, s) == ref.working_lots("ESZ6", d, s)
        clock.advance(wait)
    assert len(out) == sum(o.status is OrdStatus.PENDING_NEW for o in manager.orders.values())
