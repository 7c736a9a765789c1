# SPDX-License-Identifier: MIT
"""OUCH both ends: the order manager's requests through ``OuchVenue`` as OUCH bytes into the
simulator's OUCH port, and its answers back as the order manager's reports.

The wire here is in-process (every message is encoded to its bytes and decoded on the other
side, in order); the session layer over sockets is tested with ``engine.venues.ouch``'s own
tests and the demo's.
"""

from collections import deque
from collections.abc import Callable
from decimal import Decimal

import pytest

from engine.bus import MessageBus
from engine.clock import TestClock
from engine.enums import OrdStatus, OrdType, Side, TimeInForce
from engine.events import Event, OrderChanged, OrderFilled
from engine.instruments import Instrument
from engine.oms.router import OrderRouter
from engine.sim.exchange import FlowConfig, SimExchange, SimInstrument
from engine.sim.ouch_app import SimOuchApplication
from engine.venues.ouch.adapter import OuchVenue, user_ref_num
from engine.venues.ouch.messages import (
    EnterOrder,
    OuchMessage,
    decode_inbound,
    decode_options,
    decode_outbound,
)

AAPL = Instrument(symbol="AAPL", tick_size=Decimal("0.01"), lot_size=Decimal(100))
START = 20_000  # 200.00


class Wire:
    """Both directions of one account's OUCH session, in process, as bytes."""

    def __init__(self, clock: TestClock) -> None:
        self.clock = clock
        self.inbound: list[bytes] = []
        self.outbound: list[bytes] = []
        self.next_ref = 1
        self.logged_in = True
        self.venue: OuchVenue | None = None
        self.sim: SimOuchApplication | None = None
        self.account = "QWC1"

    # the client's session, as OuchVenue sees it
    def take_user_ref_num(self) -> int:
        ref = self.next_ref
        self.next_ref += 1
        return ref

    def send(self, message: OuchMessage) -> None:
        raw = message.encode()
        self.inbound.append(raw)
        assert self.sim is not None
        self.sim.on_message(self.account, decode_inbound(raw))

    def enter_order(
        self,
        user_ref_num: int,
        *,
        side: str,
        quantity: int,
        symbol: str,
        price: int,
        time_in_force: str,
        cl_ord_id: str,
        appendage: bytes,
    ) -> None:
        self.send(
            EnterOrder(
                user_ref_num=user_ref_num,
                side=side,
                quantity=quantity,
                symbol=symbol,
                price=price,
                time_in_force=time_in_force,
                cl_ord_id=cl_ord_id,
                appendage=decode_options(appendage),
            )
        )

    # the account's sequenced stream, as the simulator sees it
    class Stream:
        def __init__(self, wire: "Wire") -> None:
            self.wire = wire

        def send(self, message: OuchMessage) -> None:
            raw = message.encode()
            self.wire.outbound.append(raw)
            if self.wire.venue is not None:
                self.wire.venue.on_message(decode_outbound(raw))


class Rig:
    def __init__(self) -> None:
        self.clock = TestClock(1_700_000_000_000_000_000)
        self.exchange = SimExchange(
            [
                SimInstrument(
                    instrument=AAPL, start_px_ticks=START, flow=FlowConfig(events_per_second=0)
                )
            ],
            seed=1,
        )
        self.exchange.seed_books(self.clock.now_ns())
        self.exchange.drain_market_events()
        self.wire = Wire(self.clock)
        self.sim = SimOuchApplication(self.exchange, self.clock)
        self.wire.sim = self.sim
        self.sim.attach("QWC1", Wire.Stream(self.wire))
        self.deferred: deque[Callable[[], object]] = deque()
        self.venue = OuchVenue(self.clock, name="SIM-OUCH", defer=self.deferred.append, firm="QWCN")
        self.venue.bind(self.wire)
        self.wire.venue = self.venue
        self.bus = MessageBus()
        self.events: list[Event] = []
        self.bus.subscribe(Event, self.events.append)
        self.router = OrderRouter(self.bus, self.clock)
        self.manager = self.router.add_instrument(AAPL, self.venue)
        self.venue.route(AAPL, self.manager)

    def run_deferred(self) -> None:
        while self.deferred:
            self.deferred.popleft()()

    def changes(self) -> list[str]:
        return [e.change for e in self.events if isinstance(e, OrderChanged)]


@pytest.fixture
def rig() -> Rig:
    return Rig()


def best(rig: Rig, side: Side) -> int:
    bids, asks = rig.exchange.depth("AAPL", 1)
    return (bids if side is Side.BUY else asks)[0][0]


def test_a_resting_order_is_entered_accepted_replaced_and_canceled(rig: Rig) -> None:
    px = best(rig, Side.BUY) - 5
    order = rig.manager.send(strategy_id=1, side=Side.BUY, qty_lots=3, px_ticks=px)
    assert user_ref_num(order.client_order_id) == 1
    enter = decode_inbound(rig.wire.inbound[0])
    assert dict(enter.fields())["ClOrdID"] == order.client_order_id
    assert (enter.TYPE, enter.quantity, enter.symbol, enter.price, enter.options()) == (  # type: ignore[attr-defined]
        b"O", 300, "AAPL", px * 100, {"Firm": "QWCN"},
    )  # fmt: skip
    assert order.status is OrdStatus.NEW  # OrderAccepted came back on the same call
    accepted = decode_outbound(rig.wire.outbound[0])
    assert accepted.NAME == "OrderAccepted"
    assert order.venue_order_id == str(accepted.order_reference_number)  # type: ignore[attr-defined]

    assert rig.manager.replace(order, qty_lots=5, px_ticks=px - 1)
    replace = decode_inbound(rig.wire.inbound[1])
    assert (replace.NAME, replace.orig_user_ref_num, replace.quantity) == ("ReplaceOrder", 1, 500)  # type: ignore[attr-defined]
    assert order.client_order_id == f"O{replace.user_ref_num}"  # type: ignore[attr-defined]
    assert (order.qty_lots, order.px_ticks, order.status) == (5, px - 1, OrdStatus.NEW)

    assert rig.manager.cancel(order)
    assert decode_inbound(rig.wire.inbound[-1]).NAME == "CancelOrder"
    assert order.status is OrdStatus.CANCELED
    assert decode_outbound(rig.wire.outbound[-1]).fields()[-1] == ("Reason", "U")
    assert rig.changes() == ["new", "ack", "replace sent", "replaced", "cancel sent", "canceled"]


def test_an_order_that_crosses_is_executed_in_lots_at_the_venues_price(rig: Rig) -> None:
    ask = best(rig, Side.SELL)
    order = rig.manager.send(
        strategy_id=1, side=Side.BUY, qty_lots=2, px_ticks=ask + 3, time_in_force=TimeInForce.IOC
    )
    fills = [e for e in rig.events if isinstance(e, OrderFilled)]
    names = [decode_outbound(b).NAME for b in rig.wire.outbound]
    assert names[0] == "OrderAccepted"
    assert "OrderExecuted" in names
    assert sum(f.last_qty_lots for f in fills) == order.cum_qty_lots > 0
    assert all(ask <= f.last_px_ticks <= ask + 3 for f in fills)
    executed = [decode_outbound(b) for b in rig.wire.outbound if b[:1] == b"E"]
    assert [e.quantity for e in executed] == [f.last_qty_lots * 100 for f in fills]  # type: ignore[attr-defined]
    assert order.is_terminal
    assert order.status in (OrdStatus.FILLED, OrdStatus.EXPIRED)


def test_a_market_order_and_a_sell_round_trip_through_the_codes(rig: Rig) -> None:
    order = rig.manager.send(
        strategy_id=1,
        side=Side.SELL,
        qty_lots=1,
        ord_type=OrdType.MARKET,
        time_in_force=TimeInForce.IOC,
    )
    enter = decode_inbound(rig.wire.inbound[0])
    assert (enter.side, enter.price, enter.time_in_force) == ("S", 0x7FFFFFFF, "3")  # type: ignore[attr-defined]
    assert order.status is OrdStatus.FILLED
    assert order.cum_qty_lots == 1


def test_a_price_off_the_grid_is_rejected_by_the_venue_with_its_reason(rig: Rig) -> None:
    order = rig.manager.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=10**9)
    assert order.status is OrdStatus.REJECTED
    rejected = decode_outbound(rig.wire.outbound[-1])
    assert rejected.NAME == "Rejected"
    assert "rejected by the venue" in order.text


def test_a_request_while_the_session_is_down_is_refused_not_queued(rig: Rig) -> None:
    rig.wire.logged_in = False
    order = rig.manager.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=START - 10)
    assert rig.wire.inbound == []
    rig.run_deferred()
    assert order.status is OrdStatus.REJECTED
    assert "not logged in" in order.text


def test_after_a_restart_the_adapter_knows_an_order_by_its_clordid(rig: Rig) -> None:
    bid, ask = best(rig, Side.BUY), best(rig, Side.SELL)
    assert ask - bid > 1
    px = bid + 1  # the best bid: the first a sell meets
    order = rig.manager.send(strategy_id=1, side=Side.BUY, qty_lots=3, px_ticks=px)
    assert order.status is OrdStatus.NEW
    # A new adapter (the engine restarted; the order manager restored the order).
    fresh = OuchVenue(rig.clock, name="SIM-OUCH", defer=rig.deferred.append)
    fresh.bind(rig.wire)
    fresh.route(AAPL, rig.manager)
    rig.wire.venue = fresh
    # The venue trades against it: a crossing sell of another account.
    rig.sim.attach("OTHER", Wire.Stream(Wire(rig.clock)))
    sell = EnterOrder(
        user_ref_num=1, side="S", quantity=200, symbol="AAPL", price=px * 100, time_in_force="3"
    )
    rig.sim.on_message("OTHER", sell)
    assert (order.cum_qty_lots, order.leaves_qty_lots) == (2, 1)
    assert order.status is OrdStatus.PARTIALLY_FILLED
    assert fresh.reports_unmatched == 0


def test_a_broken_trade_and_a_self_match_cancel_reach_the_order_manager(rig: Rig) -> None:
    from engine.events import Alert
    from engine.venues.ouch.messages import AiqCanceled, BrokenTrade

    bid, ask = best(rig, Side.BUY), best(rig, Side.SELL)
    order = rig.manager.send(strategy_id=1, side=Side.BUY, qty_lots=3, px_ticks=bid + 1)
    ref = user_ref_num(order.client_order_id)
    assert ref is not None
    aiq = AiqCanceled(
        timestamp=1,
        user_ref_num=ref,
        decrement_shares=100,
        reason="Q",
        quantity_prevented_from_trading=100,
        execution_price=ask * 100,
        liquidity_flag="R",
    )
    rig.venue.on_message(decode_outbound(aiq.encode()))
    assert (order.leaves_qty_lots, order.status) == (2, OrdStatus.NEW)
    broken = BrokenTrade(
        timestamp=2, user_ref_num=ref, match_number=99, reason="E", cl_ord_id=order.client_order_id
    )
    rig.venue.on_message(decode_outbound(broken.encode()))
    alerts = [e.text for e in rig.events if isinstance(e, Alert)]
    assert any(f"trade_cancel on {order.client_order_id}" in t and "M99" in t for t in alerts)


def test_done_orders_leave_the_adapters_working_set_and_late_news_still_finds_them(
    rig: Rig,
) -> None:
    from engine.events import Alert
    from engine.venues.ouch.messages import BrokenTrade

    bid, ask = best(rig, Side.BUY), best(rig, Side.SELL)
    resting = rig.manager.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=bid - 5)
    filled = rig.manager.send(
        strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=ask + 3, time_in_force=TimeInForce.IOC
    )
    refused = rig.manager.send(strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=10**9)
    canceled = rig.manager.send(strategy_id=1, side=Side.SELL, qty_lots=1, px_ticks=ask + 5)
    assert rig.manager.cancel(canceled)
    assert (filled.status, refused.status, canceled.status) == (
        OrdStatus.FILLED,
        OrdStatus.REJECTED,
        OrdStatus.CANCELED,
    )
    # Only the working order is still the adapter's: a day of done orders does not pile up.
    assert set(rig.venue._live) == {user_ref_num(resting.client_order_id)}
    # A trade the venue breaks after the order is done is found through the order manager.
    ref = user_ref_num(filled.client_order_id)
    assert ref is not None
    broken = BrokenTrade(
        timestamp=2, user_ref_num=ref, match_number=7, reason="E", cl_ord_id=filled.client_order_id
    )
    rig.venue.on_message(decode_outbound(broken.encode()))
    alerts = [e.text for e in rig.events if isinstance(e, Alert)]
    assert any(f"trade_cancel on {filled.client_order_id}" in t for t in alerts), alerts
    assert rig.venue.reports_unmatched == 0
    assert set(rig.venue._live) == {user_ref_num(resting.client_order_id)}
