# SPDX-License-Identifier: MIT
"""``qwconsole --strategy FILE.py:Class``: the embedded engine runs the strategy, started."""

import asyncio
from pathlib import Path

import pytest

from app.cli import _check_strategy, build_parser
from app.gui import _configure_demo
from engine.clock import LiveClock
from engine.core import Engine
from engine.demo import DEMO_STRATEGY_ID
from engine.desk import TradingDesk
from engine.enums import StrategyState
from tests.integration.test_strategies_doc import blocks


async def test_the_embedded_demo_runs_the_strategy_the_command_line_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    code = next(c for name, _lang, c in blocks() if name == "tinybuy.py")
    (tmp_path / "tinybuy.py").write_text(code, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    parser = build_parser()
    opts = parser.parse_args(
        [
            "--strategy",
            "tinybuy.py:TinyBuy",
            "--strategy-id",
            "7",
            "--symbols",
            "ESZ6",
            "--param",
            "max_age_ms=500",
        ]
    )
    _check_strategy(parser, opts)
    assert opts.strategy == f"{tmp_path / 'tinybuy.py'}:TinyBuy"  # absolute: cwd may change
    engine = Engine(LiveClock(), engine_id="console")
    _configure_demo(engine, opts)
    desk = next(c for c in engine.components if isinstance(c, TradingDesk))
    assert set(desk.runner.strategies) == {DEMO_STRATEGY_ID, 7}
    tiny = desk.runner.get(7)
    assert tiny.symbols == ("ESZ6",)
    assert tiny.p["max_age_ms"] == 500
    task = asyncio.create_task(engine.run())
    try:
        for _ in range(200):
            if tiny.state is StrategyState.RUNNING and getattr(tiny, "sent", 0):
                break
            await asyncio.sleep(0.05)
    finally:
        engine.request_stop()
        await task
    assert getattr(tiny, "sent", 0) > 0  # it bid in the demo market
