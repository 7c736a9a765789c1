# SPDX-License-Identifier: MIT
"""The demo engine on the test's asyncio loop: in-process venue, a real journal on disk.

``running_demo(journal, engine_id)`` builds it (``configure(desk)`` adds strategies before the
start), runs it until the block ends, and yields a :class:`RunningDemo` holding the engine's
numbered stream; a second block on the same journal folder is a restart.
"""

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

from engine.clock import LiveClock
from engine.core import Engine
from engine.demo import build_demo
from engine.desk import TradingDesk
from engine.enums import EngineState
from engine.events import EventRecord


class RunningDemo:
    """The engine, its trading desk and every event record it numbered, in order."""

    def __init__(self, engine: Engine, desk: TradingDesk) -> None:
        self.engine = engine
        self.desk = desk
        self.records: list[EventRecord] = []
        engine.add_sink(self.records.append)

    def of(self, kind: type, since: int = 0) -> list[Any]:
        """Return the events of type ``kind`` numbered after ``since``."""
        return [r.event for r in self.records if r.seq > since and isinstance(r.event, kind)]

    async def until(self, pred: Callable[[], object], what: str, timeout_s: float = 10.0) -> None:
        """Wait (polling the loop) until ``pred()`` holds; fail naming ``what`` after a while."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not pred():
            if loop.time() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            await asyncio.sleep(0.01)


D = TypeVar("D", bound=RunningDemo)


@asynccontextmanager
async def running_demo(
    journal: Path,
    engine_id: str,
    configure: Callable[[TradingDesk], None] | None = None,
    kind: Callable[[Engine, TradingDesk], D] = RunningDemo,  # type: ignore[assignment]
) -> AsyncIterator[D]:
    """Run the demo engine journaling into ``journal`` while the block runs."""
    engine = Engine(LiveClock(), engine_id=engine_id)
    desk = build_demo(engine, transport="inprocess", journal_dir=journal)
    if configure is not None:
        configure(desk)
    d = kind(engine, desk)
    task = asyncio.create_task(engine.run())
    try:
        await d.until(lambda: engine.state is EngineState.RUNNING, "the engine")
        yield d
    finally:
        engine.request_stop()
        await task
