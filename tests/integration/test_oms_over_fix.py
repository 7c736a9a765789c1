# SPDX-License-Identifier: MIT
"""The order manager trading the simulator over real FIX sessions on 127.0.0.1."""

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest

from engine.bus import MessageBus
from engine.clock import LiveClock
from engine.enums import KillLevel, OrdStatus, OrdType, Side, TimeInForce
from engine.events import Alert, Event, OrderChanged
from engine.fix.log import NullLog
from engine.fix.message import OutMessage
from engine.fix.session import FixSession
from engine.fix.settings import SessionSettings
from engine.fix.store import FileStore, MemoryStore, MessageStore
from engine.fix.transport import SocketAcceptor, SocketInitiator
from engine.instruments import Instrument
from engine.oms.order import Order
from engine.oms.router import OrderRouter
from engine.sim.exchange import FlowConfig, SimExchange, SimInstrument
from engine.sim.fix_app import SimFixApplication
from engine.venues.fix.adapter import FixVenue

pytestmark = pytest.mark.integration

ES = Instrument(symbol="ESZ6", tick_size=Decimal("0.25"), multiplier=Decimal(50))


@dataclass
class Rig:
    router: OrderRouter
    exchange: SimExchange
    app: SimFixApplication
    events: list[Event]
    venue: FixVenue
    sim_session: FixSession

    async def until(self, pred: Callable[[], bool], within: float = 5.0) -> None:
        async with asyncio.timeout(within):
            while not pred():  # noqa: ASYNC110  (the sessions run on this loop)
                await asyncio.sleep(0.005)


class SloppyVenue(FixVenue):
    """A venue whose NewOrderSingle lacks Side <54>: the counterparty must reject it."""

    def submit(self, order: Order) -> None:
        if order.client_order_id.endswith("-1"):
            msg = OutMessage(
                b"D",
                [
                    (11, order.client_order_id),
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
        else:
            super().submit(order)


@asynccontextmanager
async def fix_rig(
    venue_cls: type[FixVenue] = FixVenue,
    client_store: MessageStore | None = None,
    app_cls: type[SimFixApplication] = SimFixApplication,
) -> AsyncIterator[Rig]:
    clock = LiveClock()
    loop = asyncio.get_running_loop()
    exchange = SimExchange(
        [SimInstrument(instrument=ES, start_px_ticks=24_000, flow=FlowConfig(events_per_second=0))],
        seed=1,
    )
    exchange.seed_books(clock.now_ns())
    exchange.drain_market_events()
    app = app_cls(exchange, clock)
    sim = FixSession(
        SessionSettings(
            begin_string="FIX.4.4",
            sender_comp_id="SIM",
            target_comp_id="CLIENT",
            reset_on_logon=True,
        ),
        MemoryStore(),
        app,
        NullLog("sim"),
        clock,
    )
    acceptor = SocketAcceptor([sim], port=0, clock=clock)
    await acceptor.start()
    venue = venue_cls(clock, defer=loop.call_soon)
    session = FixSession(
        SessionSettings(
            begin_string="FIX.4.4",
            sender_comp_id="CLIENT",
            target_comp_id="SIM",
            connection_type="initiator",
            heart_bt_int=5,
            reset_on_logon=True,
        ),
        client_store or MemoryStore(),
        venue,
        NullLog("client"),
        clock,
    )
    venue.bind(session)
    bus = MessageBus()
    events: list[Event] = []
    bus.subscribe(Event, events.append)
    router = OrderRouter(bus, clock)
    manager = router.add_instrument(ES, venue)
    venue.route(ES, manager)
    initiator = SocketInitiator(
        session, [("127.0.0.1", acceptor.port)], reconnect_interval=0.2, clock=clock
    )
    await initiator.start()
    await initiator.wait_logged_on(5.0)
    try:
        yield Rig(router, exchange, app, events, venue, sim)
    finally:
        await initiator.stop()
        await acceptor.stop()
        session.close()
        sim.close()


async def test_order_ack_cancel_and_replace_chain_over_fix() -> None:
    async with fix_rig() as rig:
        order = rig.router.send(
            symbol="ESZ6", strategy_id=1, side=Side.BUY, qty_lots=2, px_ticks=23_990
        )
        await rig.until(lambda: order.status is OrdStatus.NEW)
        assert order.venue_order_id
        m = rig.router.manager("ESZ6")
        assert m.replace(order, px_ticks=23_991)
        await rig.until(lambda: order.pending is None and order.px_ticks == 23_991)
        assert m.replace(order, qty_lots=5)
        await rig.until(lambda: order.pending is None and order.qty_lots == 5)
        assert len(order.chain) == 2
        assert rig.exchange.depth("ESZ6", 20)[0].count((23_991, 5)) == 1
        assert m.cancel(order)
        await rig.until(lambda: order.status is OrdStatus.CANCELED)
        assert rig.router.risk.open_orders() == 0


async def test_fill_against_the_book_and_cancel_reject_when_too_late() -> None:
    async with fix_rig() as rig:
        # Seeded asks: 5 lots at 24_001 .. 24_005; buy 7 IOC up to 24_002.
        order = rig.router.send(
            symbol="ESZ6",
            strategy_id=1,
            side=Side.BUY,
            qty_lots=7,
            px_ticks=24_002,
            ord_type=OrdType.LIMIT,
            time_in_force=TimeInForce.IOC,
        )
        await rig.until(lambda: order.is_terminal)
        assert order.status is OrdStatus.FILLED
        assert order.cum_qty_lots == 7
        assert order.avg_px_ticks == pytest.approx((5 * 24_001 + 2 * 24_002) / 7)
        assert rig.router.risk.position("ESZ6", 1) == 7
        resting = rig.router.send(
            symbol="ESZ6", strategy_id=1, side=Side.SELL, qty_lots=1, px_ticks=24_010
        )
        await rig.until(lambda: resting.status is OrdStatus.NEW)
        # Another client lifts it before our cancel arrives.
        rig.app.dispatch(
            rig.exchange.submit(
                999, "X", "ESZ6", Side.BUY, 50, 24_010, OrdType.LIMIT, TimeInForce.IOC, ts=1
            )
        )
        m = rig.router.manager("ESZ6")
        assert m.cancel(resting)
        await rig.until(lambda: resting.pending is None and resting.is_terminal)
        assert resting.status is OrdStatus.FILLED
        # The fill can end the order before the venue's OrderCancelReject comes in (a loaded
        # machine): wait for the reject's alert, which must come.
        await rig.until(
            lambda: any(
                "cancel of" in a.text and "rejected" in a.text
                for a in rig.events
                if isinstance(a, Alert)
            )
        )
        assert resting.status is OrdStatus.FILLED


async def test_session_reject_sets_the_order_rejected_with_its_own_event() -> None:
    async with fix_rig(SloppyVenue) as rig:
        order = rig.router.send(
            symbol="ESZ6", strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=24_000
        )
        await rig.until(lambda: order.is_terminal)
        assert order.status is OrdStatus.REJECTED
        assert order.text == "session reject: Required tag missing"
        change = [e for e in rig.events if isinstance(e, OrderChanged)][-1]
        assert (change.change, change.order.status) == ("rejected", OrdStatus.REJECTED)
        # The session stays up and the next (well-formed) order goes through.
        good = rig.router.send(
            symbol="ESZ6", strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=23_900
        )
        await rig.until(lambda: good.status is OrdStatus.NEW)


async def test_kill_switch_levels_over_fix() -> None:
    async with fix_rig() as rig:
        buy = rig.router.send(
            symbol="ESZ6",
            strategy_id=1,
            side=Side.BUY,
            qty_lots=3,
            px_ticks=24_001,
            ord_type=OrdType.LIMIT,
            time_in_force=TimeInForce.IOC,
        )
        await rig.until(lambda: buy.is_terminal)
        working = [
            rig.router.send(
                symbol="ESZ6", strategy_id=2, side=Side.SELL, qty_lots=1, px_ticks=24_020 + i
            )
            for i in range(3)
        ]
        await rig.until(lambda: all(o.status is OrdStatus.NEW for o in working))
        rig.router.kill(KillLevel.BLOCK_NEW, actor="test", reason="block")
        assert (
            rig.router.send(
                symbol="ESZ6", strategy_id=2, side=Side.SELL, qty_lots=1, px_ticks=24_030
            ).status
            is OrdStatus.REJECTED
        )
        rig.router.kill(KillLevel.CANCEL_ALL, actor="test", reason="cancel")
        await rig.until(lambda: all(o.status is OrdStatus.CANCELED for o in working))
        rig.router.kill(KillLevel.FLATTEN, actor="test", reason="flatten")
        await rig.until(lambda: rig.router.risk.position("ESZ6", 1) == 0)
        assert rig.router.risk.position("ESZ6") == 0


async def test_a_sent_order_the_journal_never_got_comes_back_from_the_fix_store(
    tmp_path: Path,
) -> None:
    store = FileStore(tmp_path, "client")
    async with fix_rig(client_store=store) as rig:
        order = rig.router.send(
            symbol="ESZ6", strategy_id=20170101, side=Side.BUY, qty_lots=2, px_ticks=23_990
        )
        other = rig.router.send(
            symbol="ESZ6",
            strategy_id=42,
            side=Side.SELL,
            qty_lots=1,
            px_ticks=24_050,
            ord_type=OrdType.LIMIT,
        )
        await rig.until(lambda: order.status is OrdStatus.NEW and other.status is OrdStatus.NEW)
        # What a restart finds in the store: both orders, with strategy and engine order id.
        found = rig.venue.unjournaled_orders(lambda _c: False, 0, 0)
        assert [(v.client_order_id, v.strategy_id, v.order_id) for v in found] == [
            (order.client_order_id, 20170101, order.order_id),
            (other.client_order_id, 42, other.order_id),
        ]
        first = found[0]
        assert (first.side, first.qty_lots, first.px_ticks, first.status) == (
            Side.BUY, 2, 23_990, OrdStatus.PENDING_NEW,
        )  # fmt: skip
        # The journal had the first order (known, or an id at or below its last): only the other.
        assert [
            v.order_id
            for v in rig.venue.unjournaled_orders(lambda c: c == order.client_order_id, 0, 0)
        ] == [other.order_id]
        assert rig.venue.unjournaled_orders(lambda _c: False, other.order_id, 0) == []
        assert rig.venue.unjournaled_orders(lambda _c: False, 0, 2**62) == []
    # The notes survive the process: a store opened again (after a kill -9) has them.
    again = FileStore(tmp_path, "client")
    try:
        notes = [note for _seq, note, _raw in again.annotated()]
        assert notes == [b"20170101 %d" % order.order_id, b"42 %d" % other.order_id]
    finally:
        again.close()


async def test_an_order_message_the_venue_asks_again_for_is_gap_filled_and_resolved() -> None:
    async with fix_rig() as rig:
        first = rig.router.send(
            symbol="ESZ6", strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=23_990
        )
        await rig.until(lambda: first.status is OrdStatus.NEW)
        # The venue "lost" the last message it got (the first order): the next one is too high
        # for it, so it asks for a resend from there.
        rig.sim_session.set_next_target_seq_num(rig.sim_session.next_target_seq_num - 1)
        second = rig.router.send(
            symbol="ESZ6", strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=23_989
        )
        await rig.until(lambda: second.is_terminal)
        # Never resent (a stale order must not surprise the market): gap-filled, and the order
        # manager knows the order did not arrive.
        assert second.status is OrdStatus.REJECTED
        assert "not delivered" in second.text
        assert first.status is OrdStatus.NEW  # acknowledged before: the venue has it
        assert rig.exchange.depth("ESZ6", 20)[0].count((23_989, 1)) == 0
        assert rig.router.risk.open_orders() == 1
        # The session goes on in step: a new order after the gap fill trades normally.
        third = rig.router.send(
            symbol="ESZ6", strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=23_988
        )
        await rig.until(lambda: third.status is OrdStatus.NEW)
