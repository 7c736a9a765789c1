# SPDX-License-Identifier: MIT
"""Alerts folded per cause on their way into the engine's stream; refusals counted."""

import asyncio

import pytest

from engine.alerts import AlertAggregator, RefusalCounter, cause_of
from engine.bus import MessageBus
from engine.clock import LiveClock, TestClock
from engine.core import Engine
from engine.enums import AlertLevel
from engine.events import Alert, Event, EventRecord

MS = 1_000_000
S = 1_000 * MS


class Rig:
    def __init__(self, **kw: int) -> None:
        self.clock = TestClock()
        self.out: list[Alert] = []
        self.agg = AlertAggregator(self.clock, self.emit, self.next_seq, **kw)
        self.seq = 0

    def next_seq(self) -> int:
        return self.seq + 1

    def emit(self, alert: Alert) -> None:
        self.seq += 1
        self.out.append(alert)

    def raise_(self, text: str, source: str = "oms", cause: str = "") -> None:
        alert = Alert(
            ts_event=self.clock.now_ns(),
            level=AlertLevel.WARNING,
            source=source,
            text=text,
            cause=cause,
        )
        admitted = self.agg.admit(alert)
        if admitted is not None:
            self.emit(admitted)


def test_repeats_fold_into_one_aggregate_updated_once_per_window() -> None:
    rig = Rig(window_ns=S, quiet_ns=10 * S)
    t0 = rig.clock.now_ns()
    for n in range(100):  # the ids and prices differ: the cause is the same
        rig.raise_(f"order refused (QW-{n}): price {100 + n} outside the band")
        rig.clock.advance(5 * MS)
    assert [(a.count, a.aggregate, a.ts_first) for a in rig.out] == [(1, 1, t0)]
    assert rig.out[0].text == "order refused (QW-0): price 100 outside the band"
    rig.clock.advance(S)  # the window passed: the next repeat publishes the aggregate
    rig.raise_("order refused (QW-100): price 200 outside the band")
    assert len(rig.out) == 2
    update = rig.out[1]
    assert (update.count, update.aggregate, update.ts_first) == (101, 1, t0)
    assert update.text == "order refused (QW-100): price 200 outside the band"
    assert update.ts_event == rig.clock.now_ns()
    assert rig.agg.folded == 99


def test_flush_publishes_held_repeats_and_a_quiet_cause_starts_afresh() -> None:
    rig = Rig(window_ns=S, quiet_ns=10 * S)
    rig.raise_("venue down 1")
    rig.raise_("venue down 2")
    rig.raise_("venue down 3")
    assert len(rig.out) == 1
    assert rig.agg.flush() == 1
    assert [a.count for a in rig.out] == [1, 3]
    assert rig.agg.flush() == 0  # nothing new
    rig.clock.advance(11 * S)  # quiet longer than the quiet period: a new aggregate
    rig.raise_("venue down 4")
    assert (rig.out[-1].count, rig.out[-1].aggregate) == (1, 3)


def test_cause_source_and_explicit_cause_separate_aggregates() -> None:
    rig = Rig()
    rig.raise_("cancel of 12 rejected", source="oms")
    rig.raise_("cancel of 12 rejected", source="fix")  # another source
    rig.raise_("cancel of 13 rejected", source="oms")  # a repeat of the first
    rig.raise_("kill switch: 1 order refused", source="oms", cause="kill")
    rig.raise_("kill switch: 2 orders refused, other words", source="oms", cause="kill")
    assert [(a.source, a.aggregate) for a in rig.out] == [("oms", 1), ("fix", 2), ("oms", 3)]
    assert cause_of(rig.out[0]) == "cancel of # rejected"
    assert cause_of(rig.out[2]) == "kill"


def test_causes_beyond_the_limit_forget_the_longest_quiet_one() -> None:
    rig = Rig(window_ns=S, quiet_ns=10 * S, max_causes=2)
    rig.raise_("a")
    rig.clock.advance(MS)
    rig.raise_("b")
    rig.raise_("b")  # held back
    rig.clock.advance(MS)
    rig.raise_("a")  # held back; "b" is now the longest quiet
    rig.raise_("c")  # "b" is forgotten: its held repeat is published first
    assert [(a.text, a.count) for a in rig.out] == [("a", 1), ("b", 1), ("b", 2), ("c", 1)]
    assert rig.out[-1].aggregate == 4  # numbered after the flushed update
    rig.raise_("b")  # a new aggregate; "a" (held repeat published) is forgotten for it
    assert [(a.text, a.count, a.aggregate) for a in rig.out[4:]] == [("a", 2, 1), ("b", 1, 6)]


def test_bad_windows_are_refused() -> None:
    with pytest.raises(ValueError, match="0 < window"):
        AlertAggregator(TestClock(), print, lambda: 1, window_ns=2 * S, quiet_ns=S)


def test_refusal_counter_counts_per_cause_since_a_time_and_resets() -> None:
    bus, clock = MessageBus(), TestClock(start_ns=1_765_000_000 * S)  # 05:46:40 UTC
    alerts: list[Alert] = []
    bus.subscribe(Alert, alerts.append)
    counter = RefusalCounter(bus, clock, "kill switch")
    for _ in range(1234):
        counter.refuse("kill switch BLOCK_NEW", detail="last: ESZ6, manual")
    counter.refuse("halted", since_ns=clock.now_ns() - 60 * S)
    assert counter.count("kill switch BLOCK_NEW") == 1234
    assert counter.count() == 1235
    assert alerts[0].text == (
        "kill switch BLOCK_NEW: 1 order refused since 05:46:40 UTC (last: ESZ6, manual)"
    )
    assert alerts[1233].text.startswith("kill switch BLOCK_NEW: 1,234 orders refused since")
    assert alerts[-1].text == "halted: 1 order refused since 05:45:40 UTC"
    assert {a.cause for a in alerts} == {"kill switch BLOCK_NEW", "halted"}
    counter.reset()
    assert counter.count() == 0


async def test_the_engine_stream_carries_aggregates_and_the_last_count_at_stop() -> None:
    engine = Engine(LiveClock())
    records: list[EventRecord] = []
    raw: list[Event] = []
    running = asyncio.Event()

    def sink(record: EventRecord) -> None:
        records.append(record)
        running.set()

    engine.add_sink(sink)
    engine.bus.subscribe(Alert, raw.append)
    task = asyncio.create_task(engine.run())
    await running.wait()
    for n in range(1000):
        engine.bus.publish(
            Alert(ts_event=n, level=AlertLevel.ERROR, source="fix", text=f"resend {n} failed")
        )
    engine.request_stop()
    await task
    alerts = [r for r in records if isinstance(r.event, Alert)]
    assert len(raw) == 1000  # in-process subscribers see every occurrence
    assert [(r.event.count, r.event.aggregate) for r in alerts] == [
        (1, alerts[0].seq),
        (1000, alerts[0].seq),
    ]
    assert [r.seq for r in records] == list(range(1, len(records) + 1))
