# SPDX-License-Identifier: MIT
"""Strategy API: parameters, lifecycle, dispatch, and the two example strategies."""

from typing import Any

import pytest

from engine.bus import MessageBus
from engine.clock import TestClock
from engine.enums import ExecType, OrdStatus, Side, StrategyState, TimeInForce
from engine.events import (
    Alert,
    BookUpdated,
    Event,
    OrderView,
    StrategyStatusChanged,
    TradeReported,
)
from engine.oms.router import OrderRouter
from engine.strategy.base import Strategy
from engine.strategy.examples import MarketMaker, Taker
from engine.strategy.params import Param, ParameterError
from engine.strategy.runner import LiveContext, StrategyRunner
from tests.factories import RecordingVenue, StaticBook, make_instrument, report


class Rig:
    def __init__(self) -> None:
        self.clock = TestClock()
        self.bus = MessageBus()
        self.events: list[Event] = []
        self.bus.subscribe(Event, self.events.append)
        self.router = OrderRouter(self.bus, self.clock)
        self.venue = RecordingVenue()
        self.oms = self.router.add_instrument(make_instrument("ESZ6"), self.venue)
        self.books: dict[str, StaticBook] = {}
        self.runner = StrategyRunner(
            self.bus, self.clock, LiveContext(self.router, self.clock, self.books.get)
        )

    def book(self, bids: list[tuple[int, int]], asks: list[tuple[int, int]]) -> None:
        self.books["ESZ6"] = StaticBook("ESZ6", bids, asks)
        self.bus.publish(
            BookUpdated(
                ts_event=self.clock.now_ns(),
                symbol="ESZ6",
                bid_px_ticks=bids[0][0],
                bid_qty_lots=bids[0][1],
                ask_px_ticks=asks[0][0],
                ask_qty_lots=asks[0][1],
            )
        )

    def ack_all(self) -> None:
        for order in list(self.oms.working()):
            if order.status is OrdStatus.PENDING_NEW:
                self.oms.on_execution_report(report(order, ExecType.NEW, OrdStatus.NEW))

    def quotes(self) -> dict[Side, int]:
        return {o.side: o.px_ticks for o in self.oms.working()}


class Recorder(Strategy):
    name = "recorder"
    params = (Param(name="size", kind=int, default=1, min=1, max=5),)
    timer_interval_ms = 100

    def __init__(self, *a: Any, **k: Any) -> None:
        super().__init__(*a, **k)
        self.calls: list[str] = []

    def on_start(self) -> None:
        self.calls.append("start")

    def on_stop(self) -> None:
        self.calls.append("stop")

    def on_book(self, book: Any) -> None:
        self.calls.append(f"book {book.best_bid()[0]}")

    def on_trade(self, trade: TradeReported) -> None:
        self.calls.append(f"trade {trade.px_ticks}")

    def on_order(self, order: OrderView) -> None:
        self.calls.append(f"order {order.status.name}")

    def on_timer(self, now_ns: int) -> None:
        self.calls.append("timer")

    def on_parameters(self, changed: dict[str, Any]) -> None:
        self.calls.append(f"params {changed}")


def test_params_are_typed_bounded_and_named_in_errors() -> None:
    p = Param(name="spread", kind=int, default=2, min=1, max=10)
    assert p.coerce("3") == 3
    with pytest.raises(ParameterError, match="parameter 'spread': 11 is above the maximum 10"):
        p.coerce(11)
    with pytest.raises(ParameterError, match="parameter 'spread': 'x' is not a valid int"):
        p.coerce("x")
    with pytest.raises(ParameterError, match=r"2\.5 is not a valid int"):
        p.coerce(2.5)
    assert Param(name="on", kind=bool, default=False).coerce("yes") is True
    with pytest.raises(ParameterError, match="below the minimum"):
        Param(name="bad", kind=float, default=-1.0, min=0.0)
    with pytest.raises(ParameterError, match="unknown parameter 'nope'; declared: size"):
        Recorder(1, ["ESZ6"], nope=1)


def test_lifecycle_dispatch_and_timer() -> None:
    rig = Rig()
    s = Recorder(20170101, ["ESZ6"])
    rig.runner.add(s)
    rig.book([(100, 5)], [(102, 5)])
    assert s.calls == []  # stopped: no market data
    rig.runner.start(20170101)
    rig.book([(101, 5)], [(102, 5)])
    rig.bus.publish(
        TradeReported(ts_event=1, symbol="ESZ6", px_ticks=101, qty_lots=1, aggressor=Side.SELL)
    )
    rig.bus.publish(
        TradeReported(ts_event=1, symbol="NQZ6", px_ticks=1, qty_lots=1, aggressor=None)
    )
    rig.runner.on_timer()
    rig.runner.on_timer()  # not due again yet
    rig.clock.advance(100_000_000)
    rig.runner.on_timer()
    assert s.calls == ["start", "book 101", "trade 101", "timer", "timer"]
    s.buy("ESZ6", 1, 100)
    rig.runner.pause(20170101)
    assert s.state is StrategyState.PAUSED
    assert [k for k, *_ in rig.venue.sent] == ["new", "cancel"]
    rig.book([(99, 5)], [(102, 5)])
    assert "book 99" not in s.calls
    rig.runner.start(20170101)  # resume: no second on_start
    assert s.calls.count("start") == 1
    rig.runner.set_parameters(20170101, {"size": 3})
    assert s.p["size"] == 3
    assert s.calls[-1] == "params {'size': 3}"
    with pytest.raises(ParameterError, match="above the maximum 5"):
        rig.runner.set_parameters(20170101, {"size": 9})
    assert s.p["size"] == 3
    rig.runner.stop(20170101)
    assert s.calls[-1] == "stop"
    changes = [e.change for e in rig.events if isinstance(e, StrategyStatusChanged)]
    assert changes == ["added", "started", "paused", "resumed", "parameters", "stopped"]


def test_failing_strategy_is_stopped_with_an_alert_and_others_keep_running() -> None:
    class Broken(Recorder):
        name = "broken"

        def on_book(self, book: Any) -> None:
            raise ZeroDivisionError("oops")

    rig = Rig()
    bad, good = Broken(1, ["ESZ6"]), Recorder(2, ["ESZ6"])
    rig.runner.add(bad)
    rig.runner.add(good)
    rig.runner.start(1)
    rig.runner.start(2)
    rig.book([(100, 1)], [(101, 1)])
    assert bad.state is StrategyState.STOPPED
    assert good.calls[-1] == "book 100"
    alert = [e for e in rig.events if isinstance(e, Alert)][-1]
    assert alert.text == "strategy broken (1) failed and was stopped: ZeroDivisionError: oops"
    with pytest.raises(ValueError, match="strategy id 2 is already in use"):
        rig.runner.add(Recorder(2, ["ESZ6"]))


def test_market_maker_quotes_around_mid_and_skews_with_inventory() -> None:
    rig = Rig()
    mm = MarketMaker(
        20170101, ["ESZ6"], half_spread_ticks=2, skew_ticks_per_lot=1.0, max_position_lots=3
    )
    rig.runner.add(mm)
    rig.runner.start(20170101)
    rig.book([(100, 5)], [(102, 5)])
    assert rig.quotes() == {Side.BUY: 99, Side.SELL: 103}
    rig.ack_all()
    # Our bid is hit for 2 lots: fair drops by 2 ticks, so both quotes move down.
    bid = next(o for o in rig.oms.working() if o.side is Side.BUY)
    rig.oms.on_execution_report(
        report(
            bid,
            ExecType.TRADE,
            OrdStatus.PARTIALLY_FILLED,
            cum=1,
            leaves=0,
            last_qty=1,
            last_px=99,
            exec_id="f1",
        )
    )
    rig.oms.on_execution_report(
        report(
            bid,
            ExecType.TRADE,
            OrdStatus.FILLED,
            cum=2,
            leaves=0,
            last_qty=1,
            last_px=99,
            exec_id="f2",
        )
    )
    assert mm.position("ESZ6") == 2
    rig.book([(100, 5)], [(102, 5)])
    working = {o.side: o for o in rig.oms.working()}
    assert working[Side.BUY].px_ticks == 97  # a new bid
    ask = working[Side.SELL]
    assert ask.pending is not None  # the ask is moved, not re-sent
    assert (ask.pending.kind, ask.pending.px_ticks) == ("replace", 101)
    assert rig.venue.sent[-1] == ("replace", ask.pending.client_order_id, ask.client_order_id)


def test_market_maker_pulls_the_adding_side_at_max_position() -> None:
    rig = Rig()
    mm = MarketMaker(7, ["ESZ6"], max_position_lots=1, skew_ticks_per_lot=0.0)
    rig.runner.add(mm)
    rig.runner.start(7)
    rig.book([(100, 5)], [(102, 5)])
    bid = next(o for o in rig.oms.working() if o.side is Side.BUY)
    rig.oms.on_execution_report(
        report(bid, ExecType.TRADE, OrdStatus.FILLED, last_qty=1, last_px=99, exec_id="x")
    )
    rig.book([(100, 5)], [(102, 5)])
    assert set(rig.quotes()) == {Side.SELL}


def test_taker_crosses_on_imbalance_with_ioc_and_cooldown() -> None:
    rig = Rig()
    taker = Taker(9, ["ESZ6"], imbalance=0.7, cooldown_ms=1000)
    rig.runner.add(taker)
    rig.runner.start(9)
    rig.book([(100, 1)], [(101, 1)])
    assert rig.venue.sent == []
    rig.book([(100, 9)], [(101, 1)])
    order = next(rig.oms.working())
    assert (order.side, order.px_ticks, order.time_in_force) == (Side.BUY, 101, TimeInForce.IOC)
    rig.book([(100, 1)], [(101, 9)])
    assert len(rig.venue.sent) == 1  # cooling down
    rig.clock.advance(1_000_000_000)
    rig.book([(100, 1)], [(101, 9)])
    assert [o.side for o in rig.oms.working()][-1] is Side.SELL


def test_order_changes_reach_only_strategies_with_their_own_on_order() -> None:
    rig = Rig()
    recorder = Recorder(1, ["ESZ6"])
    plain = Taker(2, ["ESZ6"], imbalance=0.6, cooldown_ms=0)
    late: list[str] = []
    per_instance = Taker(3, ["ESZ6"], imbalance=0.6, cooldown_ms=0)
    per_instance.on_order = lambda o: late.append(o.status.name)  # type: ignore[method-assign]
    for s in (recorder, plain, per_instance):
        rig.runner.add(s)
        rig.runner.start(s.strategy_id)
    rig.book([(23_999, 9)], [(24_001, 1)])  # the takers buy
    recorder.buy("ESZ6", 1, 23_990)
    assert recorder.calls[-1] == "order PENDING_NEW"
    assert late == ["PENDING_NEW"]  # its own order only; the other taker's went nowhere
    assert {o.strategy_id for o in rig.oms.working()} == {1, 2, 3}


def test_book_updates_reach_the_running_strategies_of_the_symbol_in_order() -> None:
    rig = Rig()
    first, other, second = Recorder(1, ["ESZ6"]), Recorder(2, ["NQZ6"]), Recorder(3, ["ESZ6"])
    for s in (first, other, second):
        rig.runner.add(s)
        rig.runner.start(s.strategy_id)
    rig.runner.pause(3)
    rig.book([(23_999, 9)], [(24_001, 1)])
    assert first.calls[-1] == "book 23999"
    assert not any(c.startswith("book") for c in other.calls + second.calls)
    rig.runner.start(3)
    rig.book([(23_998, 9)], [(24_001, 1)])
    assert first.calls[-1] == second.calls[-1] == "book 23998"
