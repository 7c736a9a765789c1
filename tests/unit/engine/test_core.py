# SPDX-License-Identifier: MIT
import asyncio
import threading
import time

import pytest

from engine.client import ClientState, EngineStartError
from engine.clock import LiveClock
from engine.commands import CommandAck, CommandError, Ping, SetHeartbeatInterval
from engine.core import Engine
from engine.embedded import EmbeddedEngineClient
from engine.enums import EngineState
from engine.events import EngineHeartbeat, EngineStateChanged, EventRecord


async def test_engine_numbers_events_and_heartbeats_on_its_loop() -> None:
    engine = Engine(LiveClock(), heartbeat_interval_ms=10)
    records: list[EventRecord] = []
    five_beats = asyncio.Event()

    def sink(record: EventRecord) -> None:
        records.append(record)
        if sum(isinstance(r.event, EngineHeartbeat) for r in records) >= 5:
            five_beats.set()

    engine.add_sink(sink)
    task = asyncio.create_task(engine.run())
    await five_beats.wait()
    engine.request_stop()
    await task
    assert [r.seq for r in records] == list(range(1, len(records) + 1))
    states = [r.event.state for r in records if isinstance(r.event, EngineStateChanged)]
    assert states == [
        EngineState.STARTING,
        EngineState.RUNNING,
        EngineState.STOPPING,
        EngineState.STOPPED,
    ]
    beats = [r.event for r in records if isinstance(r.event, EngineHeartbeat)]
    assert [b.counter for b in beats] == list(range(1, len(beats) + 1))
    assert all(b.interval_ns == 10_000_000 for b in beats)
    assert beats[-1].uptime_ns >= 3 * 10_000_000  # the first beat goes out at start
    assert engine.snapshot().seq == records[-1].seq


async def test_engine_refuses_bad_and_unknown_commands_with_reasons() -> None:
    engine = Engine(LiveClock())
    refused = engine.handle(Ping(payload="x"))
    assert isinstance(refused, CommandError)
    assert refused.reason == "engine is stopped"
    task = asyncio.create_task(engine.run())
    await asyncio.sleep(0)
    ack = engine.handle(Ping(payload="hello"))
    assert isinstance(ack, CommandAck)
    assert ack.detail == "hello"
    bad = engine.handle(SetHeartbeatInterval(interval_ms=5))
    assert isinstance(bad, CommandError)
    assert bad.reason == "heartbeat interval 5 ms is outside 10..60000 ms"
    engine.request_stop()
    await task


def test_heartbeat_interval_is_validated_at_construction() -> None:
    with pytest.raises(ValueError, match="70000 ms is outside"):
        Engine(LiveClock(), heartbeat_interval_ms=70_000)


def _wait_for(pred: object, timeout_s: float = 5.0) -> None:
    assert callable(pred)
    deadline = time.monotonic() + timeout_s
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.002)


def test_embedded_client_runs_engine_on_its_own_thread_and_stops_it() -> None:
    client = EmbeddedEngineClient(heartbeat_interval_ms=10)
    woken: list[str] = []
    client.set_wakeup(lambda: woken.append(threading.current_thread().name))
    client.start()
    try:
        assert client.state is ClientState.CONNECTED
        assert client.thread is not None
        assert client.thread.is_alive()
        assert client.thread is not threading.current_thread()
        got: list[EventRecord] = []
        _wait_for(lambda: got.extend(client.drain()) or len(got) >= 6)
        assert [r.seq for r in got] == list(range(1, len(got) + 1))
        assert woken
        assert set(woken) == {"qw-engine"}
        snap = client.snapshot()
        assert snap.state is EngineState.RUNNING
        assert snap.seq >= got[-1].seq
        assert snap.heartbeats >= 1
        result = client.send(Ping(payload="rt")).result(2)
        assert isinstance(result, CommandAck)
        assert result.detail == "rt"
    finally:
        client.close()
    assert not client.thread.is_alive()
    assert client.state is ClientState.DISCONNECTED
    tail = [r.event for r in client.drain() if isinstance(r.event, EngineStateChanged)]
    assert tail[-1].state is EngineState.STOPPED
    late = client.send(Ping()).result(1)
    assert isinstance(late, CommandError)
    assert late.reason == "the engine is not running"
    with pytest.raises(EngineStartError, match="not running"):
        client.snapshot()


def test_embedded_client_wakes_once_per_drain_not_per_event() -> None:
    client = EmbeddedEngineClient(heartbeat_interval_ms=10)
    wakes: list[int] = []
    client.set_wakeup(lambda: wakes.append(1))
    client.start()
    try:
        _wait_for(lambda: len(client.drain(max_events=0)) == 0 and len(wakes) >= 1)
        time.sleep(0.1)  # ~10 heartbeats arrive, nobody drains
        assert len(wakes) == 1
        events = client.drain()
        assert len(events) >= 5
        _wait_for(lambda: len(wakes) == 2)
    finally:
        client.close()


def test_embedded_client_cannot_start_twice() -> None:
    client = EmbeddedEngineClient()
    client.start()
    try:
        with pytest.raises(EngineStartError, match="already started"):
            client.start()
    finally:
        client.close()
