# SPDX-License-Identifier: MIT
"""An engine start reports its stages and fails only when something failed (issue 15, item 7).

Real engines on their own threads, real journals on disk. A slow start must never look like a
failed one: the embedded client has no start deadline, its link state is the engine thread's,
and a stop asked for during a long set-up ends it at the next stage.
"""

import logging
import threading
import time
from pathlib import Path

import pytest

from engine.client import ClientState, EngineStartError
from engine.clock import LiveClock
from engine.core import Engine
from engine.demo import build_demo
from engine.embedded import EmbeddedEngineClient
from engine.enums import EngineState
from engine.events import EngineStartProgress, EngineStateChanged, Event, EventRecord
from engine.journal import JournalHandler, recover
from engine.journal.component import JournalComponent
from engine.logfeed import LogFeed
from tests.journal_files import write_day_journal


def _events(records: list[EventRecord]) -> list[Event]:
    return [r.event for r in records]


def _stages(records: list[EventRecord]) -> list[EngineStartProgress]:
    return [e for e in _events(records) if isinstance(e, EngineStartProgress)]


def _states(records: list[EventRecord]) -> list[EngineStateChanged]:
    return [e for e in _events(records) if isinstance(e, EngineStateChanged)]


def _state(client: EmbeddedEngineClient) -> ClientState:
    """Return the link state (a call: mypy would narrow a repeated attribute read)."""
    return client.state


def _drained(got: list[EventRecord], client: EmbeddedEngineClient) -> list[EventRecord]:
    """Add what ``client`` received to ``got``; return ``got``."""
    got.extend(client.drain())
    return got


def _wait_for(pred: object, timeout_s: float = 10.0) -> None:
    assert callable(pred)
    deadline = time.monotonic() + timeout_s
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.005)


class _Starter:
    """Call ``client.start()`` on a thread (as the console does) and keep its outcome."""

    def __init__(self, client: EmbeddedEngineClient) -> None:
        self.error: EngineStartError | None = None
        self.seconds = 0.0
        self._client = client
        self.thread = threading.Thread(target=self._run, name="test-starter", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        t0 = time.monotonic()
        try:
            self._client.start()
        except EngineStartError as e:
            self.error = e
        self.seconds = time.monotonic() - t0


def test_recovery_reports_reading_and_replaying_in_bytes(tmp_path: Path) -> None:
    path = write_day_journal(tmp_path, "embedded", LiveClock(), 3_000_000)
    size = path.stat().st_size
    calls: list[tuple[str, int, int, str]] = []
    recover(path, lambda stage, done, total, unit: calls.append((stage, done, total, unit)))
    assert {c[0] for c in calls} == {"reading journal", "replaying journal"}
    reading = [c for c in calls if c[0] == "reading journal"]
    replaying = [c for c in calls if c[0] == "replaying journal"]
    assert calls.index(reading[-1]) < calls.index(replaying[0])  # read, then replayed
    for stage in (reading, replaying):
        done = [c[1] for c in stage]
        assert done == sorted(done)
        assert done[-1] == size
        assert all(c[2] == size and c[3] == "bytes" for c in stage)
        assert len(stage) <= 110  # a handful of reports, not one per record
    # Reading checks every record; replaying decodes the orders' last views: none here.
    assert len(reading) >= 5
    assert reading[0][1] < size // 10  # the first report comes at once


def test_engine_reports_each_stage_before_it_runs(tmp_path: Path) -> None:
    def configure(engine: Engine) -> None:
        engine.add_component(LogFeed())
        engine.add_component(JournalComponent(engine, tmp_path, capture_logs=False))

    client = EmbeddedEngineClient(
        heartbeat_interval_ms=50, configure=configure, warm_up=lambda _progress: time.sleep(0.05)
    )
    client.start()
    try:
        records = client.drain()
        snap = client.snapshot()
    finally:
        client.close()
    assert snap.state is EngineState.RUNNING
    assert not any(isinstance(e, EngineStartProgress) for e in snap.state_events)
    stages = [s.stage for s in _stages(records)]
    assert stages == ["compiling kernels", "starting log feed", "starting journal"]
    events = _events(records)
    running = next(
        i
        for i, e in enumerate(events)
        if isinstance(e, EngineStateChanged) and e.state is EngineState.RUNNING
    )
    assert all(events.index(s) < running for s in _stages(records))


def test_a_snapshot_of_a_starting_engine_says_what_it_is_doing() -> None:
    client = EmbeddedEngineClient(heartbeat_interval_ms=50, warm_up=lambda _p: time.sleep(1.0))
    starter = _Starter(client)
    try:
        _wait_for(lambda: _state(client) is ClientState.CONNECTED)  # its loop runs: warm-up
        _wait_for(lambda: client.snapshot().state is EngineState.STARTING)  # run() began
        snap = client.snapshot()
        (now,) = [e for e in snap.state_events if isinstance(e, EngineStartProgress)]
        assert now.stage == "compiling kernels"
        starter.thread.join(10)
        assert starter.error is None
    finally:
        client.close()


def test_a_slow_set_up_is_waited_for_and_reported_not_failed() -> None:
    def slow(engine: Engine) -> None:
        engine.report_progress("loading a slow thing", 0, 3, "parts")
        for part in range(1, 4):
            time.sleep(0.4)
            engine.report_progress("loading a slow thing", part, 3, "parts")

    client = EmbeddedEngineClient(heartbeat_interval_ms=50, configure=slow)
    got: list[EventRecord] = []
    starter = _Starter(client)
    try:
        _wait_for(lambda: _stages(_drained(got, client)))
        assert _state(client) is ClientState.CONNECTING  # still being set up, not failed
        assert starter.thread.is_alive()
        starter.thread.join(15)
        assert starter.error is None
        assert starter.seconds >= 1.2
        assert _state(client) is ClientState.CONNECTED
        assert client.last_error == ""
        assert client.snapshot().state is EngineState.RUNNING
        got.extend(client.drain())
    finally:
        client.close()
    assert [(s.done, s.total) for s in _stages(got)][:4] == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert [s.state for s in _states(got)][:2] == [EngineState.STARTING, EngineState.RUNNING]


@pytest.mark.slow
def test_a_start_longer_than_the_old_ten_second_deadline_runs() -> None:
    """The measured case: a start of 12 s (10 s was the deadline) ran, yet was called failed."""

    def replay(engine: Engine) -> None:
        for half_seconds in range(21):  # 10.5 s of set-up, telling how far it is
            engine.report_progress("replaying journal", half_seconds, 21, "bytes")
            time.sleep(0.5)

    client = EmbeddedEngineClient(heartbeat_interval_ms=100, configure=replay)
    starter = _Starter(client)
    try:
        time.sleep(10.2)
        assert starter.thread.is_alive()  # still waiting: no deadline expired
        assert _state(client) is ClientState.CONNECTING
        starter.thread.join(10)
        assert starter.error is None
        assert starter.seconds > 10.0
        assert _state(client) is ClientState.CONNECTED
        assert client.snapshot().state is EngineState.RUNNING
    finally:
        client.close()


def test_a_set_up_that_raises_fails_the_start_with_its_reason(tmp_path: Path) -> None:
    def broken(engine: Engine) -> None:
        engine.add_component(JournalComponent(engine, tmp_path))  # it captures log records
        engine.report_progress("reading settings")
        raise ValueError("demo.toml line 3: port 99999 is out of range")

    before = set(logging.getLogger().handlers)  # other tests' engines may still hold theirs
    client = EmbeddedEngineClient(configure=broken)
    with pytest.raises(EngineStartError, match="port 99999 is out of range"):
        client.start()
    assert _state(client) is ClientState.DISCONNECTED
    assert "port 99999 is out of range" in client.last_error
    last = _states(client.drain())[-1]
    assert last.state is EngineState.FAILED
    assert last.reason == "ValueError: demo.toml line 3: port 99999 is out of range"
    assert client.thread is not None
    client.thread.join(5)
    assert not client.thread.is_alive()
    # The journal the set-up opened was closed: another writer may open the file at once,
    # and no log record goes to the closed one.
    added = set(logging.getLogger().handlers) - before
    assert not any(isinstance(h, JournalHandler) for h in added)
    JournalComponent(Engine(LiveClock()), tmp_path, capture_logs=False).close()
    assert not list(tmp_path.glob("*-[0-9]*-[0-9]*.qwj"))  # no "taken" fallback file


class _RefusingComponent:
    """A component whose start raises, as a listener on a port already taken would."""

    name = "listener"

    def start(self, engine: Engine) -> None:
        raise OSError("127.0.0.1:9878: address already in use")

    async def stop(self) -> None:
        pass

    def handle(self, command: object) -> None:
        return None

    def state_events(self) -> list[Event]:
        return []


def test_a_component_that_cannot_start_fails_the_start_with_its_reason() -> None:
    client = EmbeddedEngineClient(
        configure=lambda engine: engine.add_component(_RefusingComponent())
    )
    with pytest.raises(EngineStartError, match="address already in use"):
        client.start()
    states = _states(client.drain())
    assert [s.state for s in states] == [
        EngineState.STARTING,
        EngineState.STOPPING,
        EngineState.FAILED,
    ]
    assert states[-1].reason == "OSError: 127.0.0.1:9878: address already in use"
    assert _state(client) is ClientState.DISCONNECTED


def test_close_during_a_long_set_up_ends_it_at_the_next_stage() -> None:
    def endless(engine: Engine) -> None:
        for i in range(1200):  # a minute of "replay" unless stopped
            engine.report_progress("replaying journal", i, 1200, "bytes")
            time.sleep(0.05)

    client = EmbeddedEngineClient(configure=endless)
    got: list[EventRecord] = []
    starter = _Starter(client)
    _wait_for(lambda: len(_stages(_drained(got, client))) >= 3)
    t0 = time.monotonic()
    client.close(timeout_s=5.0)
    assert time.monotonic() - t0 < 2.0
    starter.thread.join(5)
    assert starter.error is not None
    assert "stopped before it ran" in str(starter.error)
    assert client.last_error == ""  # stopped on purpose: not an error
    assert _state(client) is ClientState.DISCONNECTED
    last = _states(got + client.drain())[-1]
    assert (last.state, last.reason) == (EngineState.STOPPED, "stopped while starting")


def test_a_client_closed_before_it_started_refuses_to_start() -> None:
    client = EmbeddedEngineClient()
    client.close()
    assert _state(client) is ClientState.DISCONNECTED
    with pytest.raises(EngineStartError, match="closed before it started"):
        client.start()
    assert client.thread is None


def test_the_demo_reports_its_journal_replay_while_it_starts(tmp_path: Path) -> None:
    journal = write_day_journal(tmp_path / "journal", "embedded", LiveClock(), 3_000_000)
    size = journal.stat().st_size
    client = EmbeddedEngineClient(
        heartbeat_interval_ms=100,
        configure=lambda engine: build_demo(
            engine, journal_dir=tmp_path / "journal", store_dir=tmp_path / "fix"
        ),
    )
    client.start()
    try:
        records = client.drain()
    finally:
        client.close()
    stages = _stages(records)
    replay = [s for s in stages if s.stage == "replaying journal"]
    assert replay[-1].done == replay[-1].total == size
    assert all(s.unit == "bytes" for s in replay)
    names = list(dict.fromkeys(s.stage for s in stages))
    assert names[:3] == ["reading journal", "replaying journal", "restoring orders and positions"]
    assert "starting fix" in names
    assert [s.state for s in _states(records)][:2] == [EngineState.STARTING, EngineState.RUNNING]
