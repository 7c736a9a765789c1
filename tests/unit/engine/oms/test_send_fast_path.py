# SPDX-License-Identifier: MIT
"""The order create path's fast branches against the general path they replace (issue 25).

``OrderRouter.send`` and the strategy context go through ``OrderManager._send_new``
(positional); an order nothing else decides about is checked and booked by risk in one call
(``RiskChecker.new_order``), built in place and sent by ``FixVenue.submit``. Each order is
compared with the general path's: the ``Order`` the dataclass ``__init__`` builds, the risk
counts of a second ``RiskChecker`` told through ``check_new`` then ``on_new_order_sent``, and
the NewOrderSingle ``FixSession.send`` writes for the message built field by field.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.bus import MessageBus
from engine.clock import TestClock
from engine.enums import KillLevel, OrdStatus, OrdType, Side, TimeInForce
from engine.fix.codec import format_timestamp
from engine.fix.message import OutMessage
from engine.fix.session import FixSession
from engine.instruments import Instrument
from engine.oms.manager import OrderManager
from engine.oms.order import Order
from engine.oms.risk import RiskChecker, RiskLimits, order_problem
from engine.oms.router import OrderRouter
from engine.strategy.runner import LiveContext
from engine.venues.fix.adapter import FixVenue
from engine.venues.fix.codes import ORD_TYPE_TO_FIX, SIDE_TO_FIX, TIF_TO_FIX, px_text, qty_text
from tests.factories import fix_pair

ES = Instrument(symbol="ESZ6", tick_size=Decimal("0.25"), multiplier=Decimal(50))

#: (strategy, side, qty, px, ord_type, tif) of the orders sent; strategy 2 has a quantity
#: limit of 3 and the engine a band of 20 ticks around 24,000: some are refused.
ORDERS = [
    (1, Side.BUY, 1, 24_000, OrdType.LIMIT, TimeInForce.DAY),
    (1, Side.SELL, 2, 24_005, OrdType.LIMIT, TimeInForce.IOC),
    (2, Side.BUY, 5, 24_001, OrdType.LIMIT, TimeInForce.DAY),  # max_order_qty
    (2, Side.SELL, 3, 23_990, OrdType.LIMIT, TimeInForce.GTC),
    (1, Side.BUY, 4, 0, OrdType.MARKET, TimeInForce.IOC),
    (3, Side.SELL, 1, 24_100, OrdType.LIMIT, TimeInForce.DAY),  # price band
    (1, Side.SELL, 7, 24_003, OrdType.LIMIT, TimeInForce.DAY),
]


def rig(clock: TestClock) -> tuple[OrderRouter, OrderManager, FixVenue, FixSession, list[bytes]]:
    venue = FixVenue(clock)
    session, _theirs, out = fix_pair(venue, clock)
    venue.bind(session)
    router = OrderRouter(MessageBus(), clock, RiskLimits(price_band_ticks=20))
    router.set_reference_px("ESZ6", 24_000)
    router.risk.set_limits(RiskLimits(max_order_qty_lots=3), strategy_id=2)
    manager = router.add_instrument(ES, venue)
    manager.stp = None  # the fast branch for every strategy (STP takes the general one)
    venue.route(ES, manager)
    return router, manager, venue, session, out


def reference_risk(clock: TestClock) -> RiskChecker:
    risk = RiskChecker(clock, RiskLimits(price_band_ticks=20), reference_px=lambda _s: 24_000)
    risk.set_limits(RiskLimits(max_order_qty_lots=3), strategy_id=2)
    return risk


def nos(o: Order, transact: bytes) -> OutMessage:
    # The NewOrderSingle <D> as FixVenue used to build it field by field.
    fields: list[tuple[int, bytes]] = [(11, o.client_order_id.encode()), (21, b"1")]
    fields += [(38, qty_text(ES, o.qty_lots)), (40, ORD_TYPE_TO_FIX[o.ord_type])]
    if o.ord_type is OrdType.LIMIT:
        fields.append((44, px_text(ES, o.px_ticks)))
    fields += [(54, SIDE_TO_FIX[o.side]), (55, b"ESZ6"), (59, TIF_TO_FIX[o.time_in_force])]
    fields.append((60, transact))
    return OutMessage(b"D", fields)


def expected_order(o: Order, sid: int, side: Side, qty: int, px: int, ot: OrdType, tif: TimeInForce,
                   now: int, refusal: str | None) -> Order:  # fmt: skip
    # The order the dataclass __init__ builds for what was sent (or refused) at ``now``.
    return Order(
        order_id=o.order_id, client_order_id=o.client_order_id, strategy_id=sid, symbol="ESZ6",
        side=side, ord_type=ot, time_in_force=tif, qty_lots=qty,
        px_ticks=px if ot is OrdType.LIMIT else 0, ts_created=now,
        status=OrdStatus.REJECTED if refusal else OrdStatus.PENDING_NEW,
        leaves_qty_lots=0 if refusal else qty, text=f"risk: {refusal}" if refusal else "",
        ts_sent=0 if refusal else now, ts_last=now,
    )  # fmt: skip


def same_counts(risk: RiskChecker, ref: RiskChecker) -> None:
    for sid in (None, 1, 2, 3):
        assert risk.open_orders(sid) == ref.open_orders(sid), sid
        assert risk.sent_in_window(sid) == ref.sent_in_window(sid), sid
        for side in Side:
            assert risk.working_lots("ESZ6", side, sid) == ref.working_lots("ESZ6", side, sid)


@pytest.mark.parametrize("through", ["router", "context", "manager"])
def test_each_order_is_the_general_paths_order_counts_and_bytes(through: str) -> None:
    clock = TestClock()
    router, manager, _venue, session, out = rig(clock)
    ref = reference_risk(clock)
    ctx = LiveContext(router, clock, lambda _s: None)
    ids = set()
    for sid, side, qty, px, ot, tif in ORDERS:
        now = clock.now_ns()
        sent = len(out)
        if through == "router":
            o = router.send(symbol="ESZ6", side=side, qty_lots=qty, px_ticks=px, ord_type=ot,
                            time_in_force=tif, strategy_id=sid)  # fmt: skip
        elif through == "context":
            view = ctx.send(symbol="ESZ6", side=side, qty_lots=qty, px_ticks=px, ord_type=ot,
                            time_in_force=tif, strategy_id=sid)  # fmt: skip
            o = manager.lookup(view.order_id)  # type: ignore[assignment]
            assert view == o.view()
        else:
            o = manager.send(side=side, qty_lots=qty, px_ticks=px, ord_type=ot,
                             time_in_force=tif, strategy_id=sid)  # fmt: skip
        refusal = ref.check_new(sid, "ESZ6", side, qty, px if ot is OrdType.LIMIT else 0, 12.5)
        if refusal is None:
            ref.on_new_order_sent(sid, "ESZ6", side, qty)
        why = str(refusal) if refusal is not None else None
        want = expected_order(o, sid, side, qty, px, ot, tif, now, why)
        assert type(o) is Order
        for f in dataclasses.fields(Order):
            if f.name != "published":
                assert getattr(o, f.name) == getattr(want, f.name), f.name
        assert o.client_order_id.startswith("F")
        assert o.client_order_id not in ids
        ids.add(o.client_order_id)
        same_counts(router.risk, ref)
        # The open orders each strategy holds, as _hold() counts them (self-trade prevention
        # reads them).
        assert manager._held == Counter(h.strategy_id for h in manager.orders.values())
        if refusal is not None:
            assert len(out) == sent  # nothing went out
        else:
            assert len(out) == sent + 1
            seq = session.next_sender_seq_num
            session.set_next_sender_seq_num(seq - 1)
            assert session.send(nos(o, format_timestamp(now, 3)), now_ns=now)
            assert out[-1] == out[-2]
            del out[-1]
        clock.advance(300_000_000)  # orders leave the rate window too
    assert manager.created == len(ORDERS)
    assert sum(o.status is OrdStatus.REJECTED for o in manager.archive.values()) == 2


def test_malformed_orders_raise_the_same_error_on_every_path() -> None:
    clock = TestClock()
    router, manager, _venue, _session, out = rig(clock)
    ctx = LiveContext(router, clock, lambda _s: None)

    def send(through: str, qty: int, px: int) -> object:
        if through == "router":
            return router.send(symbol="ESZ6", side=Side.BUY, qty_lots=qty, px_ticks=px)
        if through == "manager":
            return manager.send(side=Side.BUY, qty_lots=qty, px_ticks=px)
        return ctx.send(symbol="ESZ6", side=Side.BUY, qty_lots=qty, px_ticks=px,
                        ord_type=OrdType.LIMIT, time_in_force=TimeInForce.DAY,
                        strategy_id=0)  # fmt: skip

    def error(through: str, qty: int, px: int) -> str:
        with pytest.raises(ValueError, match="ESZ6: ") as e:
            send(through, qty, px)
        return str(e.value)

    for qty, px in ((0, 24_000), (1, 0), (1, -5), (2**40, 24_000)):
        assert len({error(t, qty, px) for t in ("router", "manager", "context")}) == 1
    assert manager.created == 0
    assert not out
    assert router.risk.open_orders() == 0


LIMITS = st.none() | st.builds(
    RiskLimits,
    max_order_qty_lots=st.none() | st.integers(1, 4),
    max_position_lots=st.none() | st.integers(0, 6),
    price_band_ticks=st.none() | st.integers(0, 5),
    max_open_orders=st.none() | st.integers(0, 4),
    max_orders_per_second=st.none() | st.integers(0, 4),
)
ORDER = st.tuples(
    st.sampled_from([1, 2]),
    st.sampled_from([Side.BUY, Side.SELL]),
    st.integers(1, 5),
    st.integers(95, 105),
    st.booleans(),
    st.integers(0, 600_000_000),
)


@settings(max_examples=150, deadline=None)
@given(
    glob=LIMITS,
    strategy=LIMITS,
    instrument=LIMITS,
    kill=st.sampled_from([KillLevel.OFF, KillLevel.OFF, KillLevel.BLOCK_NEW]),
    orders=st.lists(ORDER, max_size=12),
)
def test_new_order_is_check_new_then_on_new_order_sent(
    glob: RiskLimits | None,
    strategy: RiskLimits | None,
    instrument: RiskLimits | None,
    kill: KillLevel,
    orders: list[tuple[int, Side, int, int, bool, int]],
) -> None:
    clock = TestClock()
    fast, general = (RiskChecker(clock, glob, reference_px=lambda _s: 100) for _ in range(2))
    for risk in (fast, general):
        if strategy is not None:
            risk.set_limits(strategy, strategy_id=1)
        if instrument is not None and instrument.price_band_ticks is not None:
            risk.set_limits(RiskLimits(price_band_ticks=instrument.price_band_ticks), symbol="X")
        risk.kill_level = kill
    for sid, side, qty, px, override, wait in orders:
        got = fast.new_order(sid, "X", side, qty, px, 12.5, override)
        want = general.check_new(sid, "X", side, qty, px, 12.5, override)
        if want is None:
            general.on_new_order_sent(sid, "X", side, qty)
        assert got == want
        for s in (None, 1, 2):
            assert fast.open_orders(s) == general.open_orders(s)
            assert fast.working_lots("X", side, s) == general.working_lots("X", side, s)
            assert fast.sent_in_window(s) == general.sent_in_window(s)
        clock.advance(wait)


@pytest.mark.parametrize(
    ("qty", "px"),
    [
        (1_000_000_000, 1_000_000_000),  # the plain bounds themselves
        (1_000_000_000, 1_000_000_001),  # a price beyond them, its product still fine
        (1, 2**53),
        (1, 2**53 + 1),
        (2**20, 2**43),  # product 2**63: beyond the notional range
        (1_000_000_001, 1),
        (3, 1.5),
    ],
)
def test_orders_beyond_the_plain_bounds_are_judged_by_order_problem(qty: int, px: int) -> None:
    clock = TestClock()
    venue = FixVenue(clock)
    session, _theirs, out = fix_pair(venue, clock)
    venue.bind(session)
    router = OrderRouter(MessageBus(), clock, RiskLimits())
    manager = router.add_instrument(ES, venue)
    venue.route(ES, manager)
    problem = order_problem(qty, px, limit=True)
    if problem is None:
        o = router.send(symbol="ESZ6", side=Side.BUY, qty_lots=qty, px_ticks=px)
        assert o.status is OrdStatus.PENDING_NEW
        assert len(out) == 1
    else:
        with pytest.raises(ValueError, match=re.escape(f"ESZ6: {problem}")):
            router.send(symbol="ESZ6", side=Side.BUY, qty_lots=qty, px_ticks=px)
        assert not out
