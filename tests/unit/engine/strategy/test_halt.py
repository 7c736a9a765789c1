# SPDX-License-Identifier: MIT
"""A halted strategy: nothing it asks for reaches the venue, and it resumes only when told."""

import pytest

from engine.bus import MessageBus
from engine.clock import TestClock
from engine.enums import ExecType, KillLevel, OrdStatus, Side, StrategyState
from engine.events import Alert, Event, OrderChanged, StrategyStatusChanged
from engine.oms.router import OrderRouter
from engine.strategy.base import Strategy
from engine.strategy.runner import HALTED_REFUSALS, LiveContext, StrategyRunner
from tests.factories import RecordingVenue, make_instrument, report


class Recorder(Strategy):
    name = "recorder"

    def __init__(self, strategy_id: int) -> None:
        super().__init__(strategy_id, ["ESZ6"])
        self.calls: list[str] = []

    def on_start(self) -> None:
        self.calls.append("start")

    def on_stop(self) -> None:
        self.calls.append("stop")


class Rig:
    def __init__(self) -> None:
        self.clock = TestClock()
        self.bus = MessageBus()
        self.events: list[Event] = []
        self.bus.subscribe(Event, self.events.append)
        self.router = OrderRouter(self.bus, self.clock)
        self.venue = RecordingVenue()
        self.oms = self.router.add_instrument(make_instrument("ESZ6"), self.venue)
        self.runner = StrategyRunner(
            self.bus, self.clock, LiveContext(self.router, self.clock, lambda _s: None)
        )

    def statuses(self) -> list[tuple[int, StrategyState, str]]:
        return [
            (e.strategy_id, e.state, e.change)
            for e in self.events
            if isinstance(e, StrategyStatusChanged)
        ]


def test_a_halted_strategy_sends_and_replaces_nothing_after_the_release() -> None:
    rig = Rig()
    s = Recorder(7)
    rig.runner.add(s)
    rig.runner.start(7)
    order = rig.oms.orders[s.buy("ESZ6", 1, 100).order_id]
    rig.oms.on_execution_report(report(order, ExecType.NEW, OrdStatus.NEW))
    rig.router.kill(KillLevel.BLOCK_NEW, actor="t", reason="t")
    assert s.state is StrategyState.HALTED
    assert rig.venue.sent[-1] == ("cancel", "T2", "T1")  # its quote pulled by the halt
    rig.router.kill(KillLevel.OFF, actor="t", reason="t")
    sent = len(rig.venue.sent)
    orders = len(rig.oms.orders)

    view = s.buy("ESZ6", 1, 101)
    assert (view.status, view.order_id) == (OrdStatus.REJECTED, 0)
    assert view.text == "strategy 7 is halted by the kill switch: resume it to trade"
    assert not s.replace(order.order_id, px_ticks=99)
    assert (len(rig.venue.sent), len(rig.oms.orders)) == (sent, orders)  # nothing went out
    assert not any(isinstance(e, OrderChanged) and e.order.px_ticks == 101 for e in rig.events)
    assert rig.router.refusals.count(HALTED_REFUSALS) == 2
    counted = [e for e in rig.events if isinstance(e, Alert) and e.cause == HALTED_REFUSALS]
    assert counted[-1].text.startswith(f"{HALTED_REFUSALS}: 2 orders refused since ")
    assert counted[-1].text.endswith(f"(last: replace {order.client_order_id}, ESZ6)")

    rig.runner.start(7)  # the explicit resume
    assert s.state is StrategyState.RUNNING
    assert s.calls == ["start"]  # resumed, not started again
    assert s.buy("ESZ6", 1, 101).status is OrdStatus.PENDING_NEW


def test_halt_and_start_from_stopped_and_the_refusal_while_engaged() -> None:
    rig = Rig()
    s = Recorder(7)
    rig.runner.add(s)
    assert rig.runner.halt(7, "halted by kill switch (kept after restart)")
    assert not rig.runner.halt(7, "again")  # once
    assert rig.venue.sent == []  # a stopped strategy has nothing to cancel
    rig.runner.stop(7)
    assert s.calls == []  # never started: no on_stop
    rig.runner.halt(7, "halted again")
    rig.router.kill(KillLevel.CANCEL_ALL, actor="t", reason="t")
    with pytest.raises(ValueError, match=r"not resumed: the kill switch is at CANCEL_ALL"):
        rig.runner.start(7)
    rig.runner.pause(7)  # nothing to pause
    assert s.state is StrategyState.HALTED
    rig.router.kill(KillLevel.OFF, actor="t", reason="t")
    rig.runner.start(7)
    assert s.calls == ["start"]  # it had never run: on_start
    assert rig.statuses() == [
        (7, StrategyState.STOPPED, "added"),
        (7, StrategyState.HALTED, "halted by kill switch (kept after restart)"),
        (7, StrategyState.STOPPED, "stopped"),
        (7, StrategyState.HALTED, "halted again"),
        (7, StrategyState.RUNNING, "started"),
    ]
    other = Recorder(8)
    rig.runner.add(other)
    rig.router.kill(KillLevel.FLATTEN, actor="t", reason="t")
    assert (s.state, other.state) == (StrategyState.HALTED, StrategyState.STOPPED)
    with pytest.raises(ValueError, match=r"recorder \(8\) not started: the kill switch is at"):
        rig.runner.start(8)
    view = s.sell("ESZ6", 3, 100)
    assert view.text == "kill switch is at FLATTEN: new orders are blocked"
    assert (view.side, view.qty_lots, view.px_ticks, view.strategy_id) == (Side.SELL, 3, 100, 7)
    assert rig.router.refusals.count("kill switch FLATTEN") == 1
