# SPDX-License-Identifier: MIT
"""A strategy loaded into the running engine, and parameters set at run time, survive a restart.

The demo engine (in-process venue, real journal on disk) runs on the test's asyncio loop; the
strategy is a file outside the project, added with ``AddStrategy`` as the console's *Load
strategy…* sends it, and the restart is a new engine on the same journal.
"""

import asyncio
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest

from engine.commands import AddStrategy, CommandAck, SetStrategyParameters
from engine.demo import DEMO_STRATEGY_ID
from engine.enums import StrategyState
from engine.events import Alert, StrategyAdded
from engine.journal import recover
from engine.journal.component import journal_path
from tests.demo_engine import RunningDemo, running_demo

pytestmark = pytest.mark.integration

ADDED_ID = 4242

QUOTER = '''
from engine.strategy.base import Strategy
from engine.strategy.params import Param


class FarBid(Strategy):
    """Rests one bid offset_ticks under the best bid."""

    name = "far-bid"
    params = (Param(name="offset_ticks", kind=int, default=10, min=1, max=1000),)

    def on_book(self, book):
        bid = book.best_bid()
        if bid is not None and not self.working_orders(book.symbol):
            self.buy(book.symbol, 1, bid[0] - self.p["offset_ticks"])
'''


def engine_on(journal: Path) -> AbstractAsyncContextManager[RunningDemo]:
    return running_demo(journal, "addtest")


async def test_an_added_strategy_and_changed_parameters_come_back_after_a_restart(
    tmp_path: Path,
) -> None:
    source = tmp_path / "user" / "far_bid.py"
    source.parent.mkdir()
    source.write_text(QUOTER, encoding="utf-8")
    journal = tmp_path / "journal"
    async with engine_on(journal) as r:
        ack = r.engine.handle(
            AddStrategy(
                class_path=f"{source}:FarBid",
                strategy_id=ADDED_ID,
                symbols=("ESZ6",),
                parameters=(("offset_ticks", 30),),
                autostart=True,
            )
        )
        assert isinstance(ack, CommandAck), ack
        await r.until(
            lambda: any(o.strategy_id == ADDED_ID for o in r.desk.router.working()),
            "the added strategy's bid",
        )
        for sid, values in (
            (ADDED_ID, (("offset_ticks", 40),)),
            (DEMO_STRATEGY_ID, (("half_spread_ticks", 4),)),
        ):
            done = r.engine.handle(SetStrategyParameters(strategy_id=sid, values=values))
            assert isinstance(done, CommandAck), done
        assert [e.strategy_id for e in r.of(StrategyAdded)] == [ADDED_ID]
    state = recover(journal_path(journal, "addtest", r.engine.clock.now_ns()))
    assert [(e.class_path, e.symbols) for e in state.added_strategies] == [
        (f"{source}:FarBid", ("ESZ6",))
    ]
    # Restarted: loaded again with the parameters set last, running; the demo's change kept.
    async with engine_on(journal) as r:
        strategies = r.desk.runner.strategies
        assert strategies[ADDED_ID].p["offset_ticks"] == 40
        assert strategies[DEMO_STRATEGY_ID].p["half_spread_ticks"] == 4
        await r.until(lambda: strategies[ADDED_ID].state is StrategyState.RUNNING, "it runs")
        # Its orders of the first run are its own again (not manual orders').
        restored = [
            o
            for m in r.desk.router.managers.values()
            for o in (*m.orders.values(), *m.archive.values())
            if o.strategy_id == ADDED_ID
        ]
        assert restored
    # The file gone: the engine starts without it and says why.
    source.unlink()
    async with engine_on(journal) as r:
        assert ADDED_ID not in r.desk.runner.strategies
        texts = [a.text for a in r.of(Alert)]
        assert any(
            f"far-bid ({ADDED_ID}), added before the restart, was not loaded again" in t
            and "far_bid.py" in t
            for t in texts
        ), texts
        assert r.desk.runner.strategies[DEMO_STRATEGY_ID].p["half_spread_ticks"] == 4
        await asyncio.sleep(0.3)  # the market maker quotes again
        # Started within a second of the last run: its ClOrdIDs are still new (they were
        # numbered per second, and the order manager refused the repeats).
        assert not [t for t in (a.text for a in r.of(Alert)) if "duplicate ClOrdID" in t]


def test_clordid_prefixes_differ_by_the_millisecond_and_repeat_for_the_same_clock() -> None:
    from engine.oms.venue import clordid_prefix

    t = 1_764_000_000_123_000_000
    assert clordid_prefix("F", t) == clordid_prefix("F", t + 999_999)
    assert clordid_prefix("F", t) != clordid_prefix("F", t + 1_000_000)
    assert len(clordid_prefix("Q", t)) == 8
