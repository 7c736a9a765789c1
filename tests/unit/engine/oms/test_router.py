# SPDX-License-Identifier: MIT
"""The order router across instruments, and every level of the kill switch."""

import pytest

from engine.bus import MessageBus
from engine.clock import TestClock
from engine.enums import ExecType, KillLevel, OrdStatus, OrdType, Side
from engine.events import Event, KillSwitchChanged
from engine.oms.request import OrderRequest
from engine.oms.router import OrderRouter
from tests.factories import RecordingVenue, make_instrument, report


def make_router() -> tuple[OrderRouter, list[Event], dict[str, RecordingVenue]]:
    bus = MessageBus()
    events: list[Event] = []
    bus.subscribe(Event, events.append)
    router = OrderRouter(bus, TestClock())
    venues = {}
    for sym in ("ESZ6", "NQZ6"):
        venues[sym] = RecordingVenue(name=sym)
        router.add_instrument(make_instrument(sym), venues[sym])
    return router, events, venues


def test_portfolio_goes_to_each_instrument_with_unique_order_ids() -> None:
    router, _events, venues = make_router()
    orders = router.send_many(
        [
            OrderRequest(symbol="ESZ6", strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=10),
            OrderRequest(symbol="NQZ6", strategy_id=1, side=Side.SELL, qty_lots=2, px_ticks=20),
        ]
    )
    assert [o.symbol for o in orders] == ["ESZ6", "NQZ6"]
    assert len({o.order_id for o in orders}) == 2
    assert venues["ESZ6"].sent == [("new", "T1", "")]
    assert venues["NQZ6"].sent == [("new", "T1", "")]
    with pytest.raises(KeyError, match="no order manager for 'CLZ6'; routed: ESZ6, NQZ6"):
        router.send(symbol="CLZ6", strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=1)
    with pytest.raises(ValueError, match="already routed"):
        router.add_instrument(make_instrument("ESZ6"), venues["ESZ6"])


def fill(router: OrderRouter, symbol: str, strategy: int, side: Side, qty: int) -> None:
    order = router.send(symbol=symbol, strategy_id=strategy, side=side, qty_lots=qty, px_ticks=100)
    router.manager(symbol).on_execution_report(
        report(
            order,
            ExecType.TRADE,
            OrdStatus.FILLED,
            last_qty=qty,
            last_px=100,
            exec_id=f"{symbol}{order.order_id}",
        )
    )


def test_block_new_refuses_orders_and_is_published_with_actor_and_reason() -> None:
    router, events, _v = make_router()
    router.kill(KillLevel.BLOCK_NEW, actor="desk", reason="test")
    assert (
        router.send(symbol="ESZ6", strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=10).status
        is OrdStatus.REJECTED
    )
    change = [e for e in events if isinstance(e, KillSwitchChanged)]
    assert [(c.level, c.actor, c.reason) for c in change] == [(KillLevel.BLOCK_NEW, "desk", "test")]
    router.kill(KillLevel.OFF, actor="desk", reason="resume")
    assert (
        router.send(symbol="ESZ6", strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=10).status
        is OrdStatus.PENDING_NEW
    )


def test_cancel_all_level_cancels_every_working_order() -> None:
    router, _events, venues = make_router()
    router.send(symbol="ESZ6", strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=10)
    router.send(symbol="NQZ6", strategy_id=2, side=Side.SELL, qty_lots=1, px_ticks=10)
    assert router.kill(KillLevel.CANCEL_ALL, actor="desk", reason="runaway") == 2
    assert [k for k, *_ in venues["ESZ6"].sent] == ["new", "cancel"]
    assert [k for k, *_ in venues["NQZ6"].sent] == ["new", "cancel"]
    assert (
        router.send(symbol="ESZ6", strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=10).status
        is OrdStatus.REJECTED
    )


def test_flatten_level_closes_every_position_with_market_orders_despite_the_block() -> None:
    router, _events, _v = make_router()
    fill(router, "ESZ6", 1, Side.BUY, 3)
    fill(router, "ESZ6", 2, Side.SELL, 5)
    fill(router, "NQZ6", 1, Side.SELL, 2)
    router.send(
        symbol="NQZ6", strategy_id=1, side=Side.BUY, qty_lots=1, px_ticks=90
    )  # working, gets canceled
    router.kill(KillLevel.FLATTEN, actor="risk", reason="loss limit")
    flat = [o for o in router.working() if o.ord_type is OrdType.MARKET]
    assert sorted((o.symbol, o.strategy_id, o.side, o.qty_lots) for o in flat) == [
        ("ESZ6", 1, Side.SELL, 3),
        ("ESZ6", 2, Side.BUY, 5),
        ("NQZ6", 1, Side.BUY, 2),
    ]
    assert all(o.status is OrdStatus.PENDING_NEW for o in flat)


def test_flatten_one_strategy_leaves_the_others_alone() -> None:
    router, _events, _v = make_router()
    fill(router, "ESZ6", 1, Side.BUY, 3)
    fill(router, "ESZ6", 2, Side.BUY, 4)
    orders = router.flatten(strategy_id=2)
    assert [(o.strategy_id, o.side, o.qty_lots) for o in orders] == [(2, Side.SELL, 4)]


def test_order_ids_continue_after_a_restored_one_in_every_order_manager() -> None:
    router, _events, _venues = make_router()
    symbols = list(router.managers)
    first = router.send(symbol=symbols[0], side=Side.BUY, qty_lots=1, px_ticks=100)
    router.continue_order_ids_after(41)  # the journal's last order (a restart)
    ids = [
        router.send(symbol=s, side=Side.SELL, qty_lots=1, px_ticks=100).order_id
        for s in (symbols[1], symbols[0], symbols[1])
    ]
    assert first.order_id == 1
    assert ids == [42, 43, 44]  # one sequence across instruments, above the restored ids
