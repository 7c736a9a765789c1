# SPDX-License-Identifier: MIT
"""Log records become LogRecorded events on the engine loop, from any thread, rate-limited."""

import asyncio
import logging
import threading

from engine.clock import LiveClock
from engine.core import Engine
from engine.events import EventRecord, LogRecorded
from engine.logfeed import LogFeed


async def test_warnings_from_any_thread_reach_the_bus_in_order() -> None:
    engine = Engine(LiveClock())
    feed = LogFeed()
    engine.add_component(feed)
    records: list[EventRecord] = []
    got_three = asyncio.Event()

    def sink(r: EventRecord) -> None:
        records.append(r)
        if sum(isinstance(x.event, LogRecorded) for x in records) >= 3:
            got_three.set()

    engine.add_sink(sink)
    task = asyncio.create_task(engine.run())
    await asyncio.sleep(0.01)
    log = logging.getLogger("engine.test")
    log.info("not published: below WARNING")
    log.warning("on the loop %d", 1)
    worker = threading.Thread(target=lambda: log.error("from a thread"))
    worker.start()
    worker.join()
    log.critical("again on the loop")
    await asyncio.wait_for(got_three.wait(), 5)
    engine.request_stop()
    await task
    logs = [r.event for r in records if isinstance(r.event, LogRecorded)]
    assert [(e.level, e.text) for e in logs][:3] == [
        (logging.WARNING, "on the loop 1"),
        (logging.CRITICAL, "again on the loop"),
        (logging.ERROR, "from a thread"),
    ]
    assert all(e.source == "engine.test" for e in logs[:3])
    assert feed.handler is None  # detached at stop


async def test_a_burst_is_capped_and_summarized() -> None:
    engine = Engine(LiveClock())
    feed = LogFeed()
    engine.add_component(feed)
    records: list[EventRecord] = []
    engine.add_sink(records.append)
    task = asyncio.create_task(engine.run())
    await asyncio.sleep(0.01)
    assert feed.handler is not None
    feed.handler.max_per_second = 5
    log = logging.getLogger("engine.burst")
    for i in range(50):
        log.warning("burst %d", i)
    engine.request_stop()
    await task
    logs = [r.event for r in records if isinstance(r.event, LogRecorded)]
    assert 1 <= len(logs) <= 11  # at most 5 per second (the burst may straddle a second)


async def test_records_already_published_as_alerts_are_not_repeated() -> None:
    from engine.events import ALERTED

    engine = Engine(LiveClock())
    engine.add_component(LogFeed())
    records: list[EventRecord] = []
    engine.add_sink(records.append)
    task = asyncio.create_task(engine.run())
    await asyncio.sleep(0.01)
    log = logging.getLogger("engine.oms.test")
    log.warning("cancel of X rejected", extra=ALERTED)
    log.warning("plain warning")
    engine.request_stop()
    await task
    texts = [r.event.text for r in records if isinstance(r.event, LogRecorded)]
    assert texts == ["plain warning"]
