# SPDX-License-Identifier: MIT
"""A kill switch that stops: every level halts every strategy at once, and it stays halted.

The demo engine (in-process venue, real journal on disk) runs on the test's asyncio loop; the
kill switch is sent as a command the way a client sends it, and what the engine's numbered
stream (the journal's and every client's view) carries is checked.
"""

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from engine.commands import CommandAck, CommandError, ControlStrategy, SetKillSwitch, SubmitOrder
from engine.demo import DEMO_STRATEGY_ID
from engine.desk import TradingDesk
from engine.enums import KillLevel, OrdStatus, Side, StrategyState
from engine.events import (
    Alert,
    KillSwitchChanged,
    OrderChanged,
    StrategyStatusChanged,
)
from engine.journal import recover
from engine.journal.component import journal_path
from engine.strategy.base import BookView, Strategy
from engine.strategy.examples import MarketMaker
from tests.demo_engine import RunningDemo, running_demo

pytestmark = pytest.mark.integration

PAUSED_ID = 31
STUBBORN_ID = 32


class Stubborn(Strategy):
    """Rests a bid; whenever one of its orders is canceled it tries ten new ones at once."""

    name = "stubborn"

    def __init__(self, strategy_id: int) -> None:
        super().__init__(strategy_id, ["ESZ6"])
        self.refused: list[str] = []
        self.resting = False

    def on_book(self, book: BookView) -> None:
        bid = book.best_bid()
        if not self.resting and bid is not None:
            self.resting = self.buy("ESZ6", 1, bid[0] - 20).status is not OrdStatus.REJECTED

    def on_order(self, order: object) -> None:
        assert hasattr(order, "status")
        if order.status is OrdStatus.CANCELED:
            self.resting = False
            for _ in range(10):
                view = self.buy("ESZ6", 1, order.px_ticks)  # type: ignore[attr-defined]
                if view.status is OrdStatus.REJECTED:
                    self.refused.append(view.text)


class Demo(RunningDemo):
    """The demo engine with three strategies, its numbered stream kept in order."""

    stubborn: Stubborn | None = None

    def states(self) -> dict[int, StrategyState]:
        return {sid: s.state for sid, s in self.desk.runner.strategies.items()}

    def orders(self) -> int:
        return sum(m.created for m in self.desk.router.managers.values())  # done ones too


@asynccontextmanager
async def demo(journal: Path, *, extra: bool = True) -> AsyncIterator[Demo]:
    stubborn = Stubborn(STUBBORN_ID) if extra else None

    def configure(desk: TradingDesk) -> None:
        if stubborn is not None:
            desk.add_strategy(stubborn, autostart=True)
            desk.add_strategy(MarketMaker(PAUSED_ID, ["NQZ6"]), autostart=True)

    async with running_demo(journal, "killtest", configure, Demo) as d:
        d.stubborn = stubborn
        yield d


@pytest.mark.parametrize("level", [KillLevel.BLOCK_NEW, KillLevel.CANCEL_ALL, KillLevel.FLATTEN])
async def test_each_level_halts_every_strategy_in_the_same_turn(
    tmp_path: Path, level: KillLevel
) -> None:
    async with demo(tmp_path) as d:
        d.engine.handle(ControlStrategy(strategy_id=PAUSED_ID, action="pause"))
        await d.until(lambda: d.stubborn and d.stubborn.resting, "the stubborn bid")
        await d.until(
            lambda: any(o.strategy_id == DEMO_STRATEGY_ID for o in d.desk.router.working()),
            "the market maker's quotes",
        )
        assert d.states() == {
            DEMO_STRATEGY_ID: StrategyState.RUNNING,
            STUBBORN_ID: StrategyState.RUNNING,
            PAUSED_ID: StrategyState.PAUSED,
        }
        mark = d.records[-1].seq

        ack = d.engine.handle(SetKillSwitch(level=level, reason="test", actor="risk desk"))

        # No await since the command: all three are halted in this very turn.
        assert isinstance(ack, CommandAck)
        assert ack.detail.startswith(f"kill switch {level.name}: ")
        assert ack.detail.endswith(", 3 halted")
        assert set(d.states().values()) == {StrategyState.HALTED}
        # The stream says so right after the switch, one status per strategy.
        after = [r.event for r in d.records if r.seq > mark]
        assert isinstance(after[0], KillSwitchChanged)
        halted = [e for e in after if isinstance(e, StrategyStatusChanged)]
        assert sorted(e.strategy_id for e in halted) == sorted(
            [DEMO_STRATEGY_ID, STUBBORN_ID, PAUSED_ID]
        )
        assert {(e.state, e.change) for e in halted} == {
            (StrategyState.HALTED, f"halted by kill switch {level.name}")
        }
        # Every strategy order is being canceled (BLOCK_NEW too: a halt pulls the quotes).
        strategy_ids = {DEMO_STRATEGY_ID, STUBBORN_ID, PAUSED_ID}
        assert all(
            o.status is OrdStatus.PENDING_CANCEL
            for o in d.desk.router.working()
            if o.strategy_id in strategy_ids
        )
        orders = d.orders()
        await d.until(lambda: d.stubborn and len(d.stubborn.refused) >= 10, "the stubborn retries")
        await asyncio.sleep(0.3)  # the market keeps moving: nobody quotes into it
        assert set(d.states().values()) == {StrategyState.HALTED}
        # The retries were refused before any order existed: the blotter did not grow
        # (FLATTEN's closing orders, exempt from the switch, apart).
        new = [e.order for e in d.of(OrderChanged, mark) if e.change == "new" and e.order.px_ticks]
        assert new == []
        if level is not KillLevel.FLATTEN:
            assert d.orders() == orders
        assert d.stubborn is not None
        assert set(d.stubborn.refused) == {
            f"kill switch is at {level.name}: new orders are blocked"
        }


async def test_refusals_are_counted_in_one_aggregated_alert(tmp_path: Path) -> None:
    async with demo(tmp_path, extra=False) as d:
        d.engine.handle(SetKillSwitch(level=KillLevel.BLOCK_NEW, reason="storm", actor="t"))
        mark, orders = d.records[-1].seq, d.orders()
        for _ in range(500):
            refused = d.engine.handle(
                SubmitOrder(symbol="CLF7", side=Side.BUY, qty_lots=1, px_ticks=6_700)
            )
            assert isinstance(refused, CommandError)  # one answer per order, nothing else
            assert refused.reason == "kill switch is at BLOCK_NEW: new orders are blocked"
        assert d.orders() == orders  # no refused order in the blotter
        assert d.desk.router.refusals.count("kill switch BLOCK_NEW") == 500
        cause = "kill switch BLOCK_NEW"
        alerts = [a for a in d.of(Alert, mark) if a.cause == cause]
        assert len(alerts) == 1  # the first passed at once, 499 repeats held back
        first = alerts[0]
        assert first.count == 1
        assert first.text.startswith("kill switch BLOCK_NEW: 1 order refused since ")
        await d.until(
            lambda: len([a for a in d.of(Alert, mark) if a.cause == cause]) == 2,
            "the aggregate's update",
            timeout_s=3.0,
        )
        update = [a for a in d.of(Alert, mark) if a.cause == cause][1]
        assert (update.count, update.aggregate, update.ts_first) == (
            500,
            first.aggregate,
            first.ts_event,
        )
        assert update.text.startswith("kill switch BLOCK_NEW: 500 orders refused since ")
        assert update.text.endswith("(last: CLF7, manual)")
        assert d.engine.alerts.folded == 499  # repeats that did not get a record of their own
    # The journal holds the two, not five hundred.
    state_path = journal_path(tmp_path, "killtest", d.engine.clock.now_ns())
    from engine.journal import JournalReader
    from engine.journal.format import KIND_EVENT, JournalEvent

    journaled = [
        r.event
        for r in JournalReader(state_path).records([KIND_EVENT])
        if isinstance(r, JournalEvent) and isinstance(r.event, Alert) and r.event.cause == cause
    ]
    assert [a.count for a in journaled] == [1, 500]


async def test_release_keeps_strategies_halted_and_start_is_refused_while_engaged(
    tmp_path: Path,
) -> None:
    async with demo(tmp_path, extra=False) as d:
        d.engine.handle(SetKillSwitch(level=KillLevel.CANCEL_ALL, reason="t", actor="t"))
        refused = d.engine.handle(ControlStrategy(strategy_id=DEMO_STRATEGY_ID, action="start"))
        assert isinstance(refused, CommandError)
        assert refused.reason == (
            f"strategy market maker ({DEMO_STRATEGY_ID}) not resumed: the kill switch is at "
            "CANCEL_ALL; release it first, then resume"
        )
        released = d.engine.handle(SetKillSwitch(level=KillLevel.OFF, reason="t", actor="t"))
        assert isinstance(released, CommandAck)
        assert released.detail == "kill switch OFF; 1 halted strategy stays halted until resumed"
        await asyncio.sleep(0.3)
        assert d.states() == {DEMO_STRATEGY_ID: StrategyState.HALTED}
        mark = d.records[-1].seq
        resumed = d.engine.handle(ControlStrategy(strategy_id=DEMO_STRATEGY_ID, action="start"))
        assert isinstance(resumed, CommandAck)
        assert d.states() == {DEMO_STRATEGY_ID: StrategyState.RUNNING}
        assert [e.change for e in d.of(StrategyStatusChanged, mark)] == ["resumed"]
        await d.until(
            lambda: any(o.strategy_id == DEMO_STRATEGY_ID for o in d.desk.router.working()),
            "quotes again",
        )


async def test_strategies_stay_halted_across_restarts_until_resumed(tmp_path: Path) -> None:
    # 1. Halted by CANCEL_ALL, the switch released, the engine stopped.
    async with demo(tmp_path, extra=False) as d:
        await d.until(lambda: d.orders() > 0, "the market maker's orders")
        d.engine.handle(SetKillSwitch(level=KillLevel.CANCEL_ALL, reason="t", actor="t"))
        d.engine.handle(SetKillSwitch(level=KillLevel.OFF, reason="t", actor="t"))
    assert recover(journal_path(tmp_path, "killtest", d.engine.clock.now_ns())).halted_strategies
    # 2. A new engine on the same journal: the switch is off, the strategy still halted.
    async with demo(tmp_path, extra=False) as d:
        assert d.states() == {DEMO_STRATEGY_ID: StrategyState.HALTED}
        status = d.of(StrategyStatusChanged)
        assert [(e.state, e.change) for e in status][-1] == (
            StrategyState.HALTED,
            "halted by kill switch (kept after restart)",
        )
        orders = d.orders()
        await asyncio.sleep(0.5)
        assert d.orders() == orders  # it does not trade
        # Engaged again, and stopped with the switch engaged.
        d.engine.handle(SetKillSwitch(level=KillLevel.BLOCK_NEW, reason="t", actor="t"))
    # 3. Restarted with the switch engaged: halted, and start is refused.
    async with demo(tmp_path, extra=False) as d:
        assert d.desk.router.kill_level is KillLevel.BLOCK_NEW
        assert d.states() == {DEMO_STRATEGY_ID: StrategyState.HALTED}
        assert d.of(StrategyStatusChanged)[-1].change == (
            "halted by kill switch BLOCK_NEW (kept after restart)"
        )
        refused = d.engine.handle(ControlStrategy(strategy_id=DEMO_STRATEGY_ID, action="start"))
        assert isinstance(refused, CommandError)
        assert "the kill switch is at BLOCK_NEW" in refused.reason
        d.engine.handle(SetKillSwitch(level=KillLevel.OFF, reason="t", actor="t"))
        started = d.engine.handle(ControlStrategy(strategy_id=DEMO_STRATEGY_ID, action="start"))
        assert isinstance(started, CommandAck)
        # Never started in this process: it starts (on_start), not "resumed".
        assert d.of(StrategyStatusChanged)[-1].change == "started"
        await d.until(lambda: d.orders() > orders, "it trades again")
    # 4. Resumed before the stop: the next start trades by itself again.
    async with demo(tmp_path, extra=False) as d:
        assert d.states() == {DEMO_STRATEGY_ID: StrategyState.RUNNING}
