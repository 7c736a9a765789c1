# SPDX-License-Identifier: MIT
"""A user's compiled quoting strategy (engine.strategy.quoting), written in a file outside the
project, gives the same fills on the fast and the generic path: on a synthetic day and on the
shared real days (skipped where absent)."""

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.backtest.runner import BacktestJob, run_job
from engine.backtest.synthetic import random_walk_l2
from engine.posttrade import load_day
from engine.strategy.loader import load_strategy_class
from engine.strategy.quoting import QuotingStrategy
from tests.unit.engine.backtest.test_market_rules import real_day

#: TinyBuy of docs/strategies.md as a compiled rule: bid at the best bid when the spread is
#: ``spread_ticks``; let the bid go after ``max_age_ms`` (state[0]: when it was asked for).
TINY_QUOTE = """
from engine.strategy.params import Param
from engine.strategy.quoting import (
    BID_PX, BID_QTY, MIN_INTERVAL, NO_QUOTE, WORKING_BID, QuotingStrategy, quote_rule,
)


@quote_rule
def tiny_quote(now, bid, ask, position, quotes, params, state):
    qty = int(params[0])
    max_age = int(params[2]) * 1_000_000
    if quotes[WORKING_BID] != NO_QUOTE:
        placed = int(state[0])
        if now - placed >= max_age:
            return 0  # no bid wanted: the framework cancels it
        quotes[BID_PX] = quotes[WORKING_BID]
        quotes[BID_QTY] = qty
        return placed + max_age  # run again then, even if nothing changes
    if position < params[3] and ask - bid == params[1]:
        quotes[BID_PX] = bid
        quotes[BID_QTY] = qty
        state[0] = now
        return now + max_age
    return 0


class TinyQuote(QuotingStrategy):
    name = "tiny quote"
    params = (
        Param(name="qty_lots", kind=int, default=1, min=1, max=100, help="bid size"),
        Param(name="spread_ticks", kind=int, default=1, min=1, max=100, help="bid at this spread"),
        Param(name="max_age_ms", kind=int, default=1000, min=1, max=60_000, help="bid lifetime"),
        Param(name="max_position_lots", kind=int, default=5, min=1, max=1000, help="stop buying"),
        MIN_INTERVAL,
    )
    rule = tiny_quote
    state_size = 1
"""


@pytest.fixture
def tiny(tmp_path: Path) -> str:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "tinyquote.py").write_text(TINY_QUOTE, encoding="utf-8")
    return f"{folder / 'tinyquote.py'}:TinyQuote"


def _both(tmp: Path, **job: Any) -> dict[bool, list[tuple[int, int, int, int]]]:
    fills = {}
    for generic in (False, True):
        j = BacktestJob(journal=str(tmp / f"{generic}.qwj"), generic=generic, **job)
        s = run_job(j)
        day = load_day(j.journal)
        ex = np.sort(day.executions[["ts", "px", "qty", "side"]], order=["ts", "side", "px"])
        fills[generic] = ex.tolist()
        assert s.fills == len(fills[generic])
    return fills


def test_the_rule_is_a_quoting_strategy_loaded_from_a_file(tiny: str) -> None:
    cls = load_strategy_class(tiny)
    assert issubclass(cls, QuotingStrategy)
    s = cls(5, ["X"], max_age_ms=250)
    assert s.rule_params().tolist() == [0.0, 1.0, 1.0, 250.0, 5.0]
    with pytest.raises(ValueError, match="one instrument"):
        cls(5, ["X", "Y"])


def test_a_user_rule_fills_alike_on_both_paths_on_a_synthetic_day(
    tmp_path: Path, tiny: str
) -> None:
    path = tmp_path / "day.npy"
    np.save(path, random_walk_l2(80_000, seed=3))
    fills = _both(
        tmp_path,
        events=str(path),
        strategy=tiny,
        feed_ns=200_000,
        order_ns=500_000,
        response_ns=500_000,
        params=(("max_age_ms", 200), ("max_position_lots", 1000)),
    )
    assert len(fills[False]) > 20
    assert fills[False] == fills[True]
    # the rule's wake works: bids are canceled after max_age_ms, so not every bid fills
    day = load_day(tmp_path / "False.qwj")
    assert len(day.orders) > len(fills[False])


@pytest.mark.parametrize("name", ["usdm", "spot", "esh4"])
def test_a_user_rule_fills_alike_on_both_paths_on_real_days(
    tmp_path: Path, tiny: str, name: str
) -> None:
    store, sym, day, level, tick = real_day(tmp_path, name)
    fills = _both(
        tmp_path,
        events=str(store),
        symbol=sym,
        day=day,
        level=level,
        tick_size=tick,
        strategy=tiny,
        recorded_latency=True,
        params=(("max_age_ms", 300), ("max_position_lots", 1000)),
    )
    assert len(fills[False]) > 0
    assert fills[False] == fills[True]


async def test_the_same_rule_trades_live_in_the_running_engine(tmp_path: Path, tiny: str) -> None:
    """Loaded into the running demo engine (as the console's Load strategy… sends it), the
    compiled rule quotes through the order manager against the simulator and gets fills."""
    from engine.commands import AddStrategy, CommandAck
    from engine.enums import OrdStatus, Side
    from engine.events import OrderChanged, OrderFilled, OrderView
    from tests.demo_engine import running_demo

    sid = 777
    async with running_demo(tmp_path / "journal", "quoting") as r:
        ack = r.engine.handle(
            AddStrategy(
                class_path=tiny,
                strategy_id=sid,
                symbols=("ESZ6",),
                autostart=True,
                parameters=(("spread_ticks", 1), ("max_age_ms", 300), ("max_position_lots", 1000)),
            )
        )
        assert isinstance(ack, CommandAck), ack

        def mine() -> list[OrderView]:
            return [e.order for e in r.of(OrderChanged) if e.order.strategy_id == sid]

        await r.until(
            lambda: any(f.strategy_id == sid for f in r.of(OrderFilled)), "a fill", timeout_s=30
        )
        # bids older than max_age_ms are let go (a cancel through the OMS)
        await r.until(
            lambda: any(o.status is OrdStatus.CANCELED for o in mine()),
            "a bid canceled after max_age_ms",
            timeout_s=30,
        )
        assert {o.side for o in mine()} == {Side.BUY}  # the rule only bids
