# SPDX-License-Identifier: MIT
"""A kernel warm-up reports each compiled kernel, and never holds up a stop (issue 21)."""

import threading
import time
from collections.abc import Callable

from engine.core import COMPILING_STAGE, warm_up_running
from engine.embedded import EmbeddedEngineClient
from engine.enums import EngineState
from engine.events import EngineStartProgress, EngineStateChanged, EventRecord


def _wait_for(cond: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_each_compiled_kernel_is_reported_before_the_engine_runs() -> None:
    def warm_up(progress: Callable[[int, int], None]) -> None:
        for done in range(1, 4):
            time.sleep(0.02)  # a compilation
            progress(done, 3)

    client = EmbeddedEngineClient(heartbeat_interval_ms=50, warm_up=warm_up)
    records: list[EventRecord] = []
    client.start()
    try:
        _wait_for(lambda: client.snapshot().state is EngineState.RUNNING)
        records = client.drain()
    finally:
        client.close()
    events = [r.event for r in records]
    compiling = [
        e for e in events if isinstance(e, EngineStartProgress) and e.stage == COMPILING_STAGE
    ]
    assert [(e.done, e.total) for e in compiling] == [(1, 3), (2, 3), (3, 3)]
    running = next(
        i
        for i, e in enumerate(events)
        if isinstance(e, EngineStateChanged) and e.state is EngineState.RUNNING
    )
    assert all(events.index(e) < running for e in compiling)


def test_closing_while_kernels_compile_does_not_wait_for_the_compiler() -> None:
    release = threading.Event()
    started = threading.Event()

    def warm_up(progress: Callable[[int, int], None]) -> None:
        started.set()
        progress(1, 63)
        release.wait(30)  # a compilation nothing can interrupt

    client = EmbeddedEngineClient(heartbeat_interval_ms=50, warm_up=warm_up)
    errors: list[Exception] = []

    def start() -> None:
        try:
            client.start()
        except Exception as e:  # EngineStartError: closed before it ran, as expected
            errors.append(e)

    starter = threading.Thread(target=start, daemon=True)
    starter.start()
    try:
        assert started.wait(10)
        _wait_for(
            lambda: any(
                isinstance(e, EngineStartProgress) and e.stage == COMPILING_STAGE
                for e in client.snapshot().state_events
            )
        )
        t0 = time.monotonic()
        client.close()
        assert time.monotonic() - t0 < 2.0
        starter.join(2)
        assert not starter.is_alive()
        # The compiling thread lives on as a daemon: it never keeps the process alive, and the
        # console ends with os._exit when it sees one (app.cli._exit_if_compiling).
        assert warm_up_running()
        assert all(t.daemon for t in threading.enumerate() if t.name == "kernel-warm-up")
    finally:
        release.set()
        client.close()
    _wait_for(lambda: not warm_up_running())
