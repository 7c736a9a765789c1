# SPDX-License-Identifier: MIT
"""A FIX link's start-up steps (acceptors, initiators, the demo's OUCH port and ITCH feed) run
as a task after the engine reports RUNNING; an engine stopped while they still run must not let
one of them open something after the components that own it have stopped. Real engine, real
listening sockets on 127.0.0.1."""

from __future__ import annotations

import asyncio

from engine.clock import LiveClock
from engine.core import Engine
from engine.enums import EngineState
from engine.events import Event
from engine.venues.fix.link import FixLink


class _Port:
    """Closes the servers the start-up opened, as the demo's OUCH port does; meanwhile the
    start-up's slow step ends (a slow disk let it run on into the stop)."""

    name = "port"

    def __init__(self, servers: list[asyncio.AbstractServer], slow: asyncio.Event) -> None:
        self.servers = servers
        self.slow = slow

    def start(self, engine: Engine) -> None:
        """Nothing: the link's start-up opens the server."""

    async def stop(self) -> None:
        for server in self.servers:
            server.close()
        self.slow.set()
        await asyncio.sleep(0.05)  # the loop turns: a start-up still running goes on now

    def handle(self, command: object) -> None:
        return None

    def state_events(self) -> list[Event]:
        return []


async def test_a_stop_cancels_the_start_up_steps_still_under_way() -> None:
    clock = LiveClock()
    engine = Engine(clock)
    link = FixLink(engine.bus, clock)
    slow = asyncio.Event()
    servers: list[asyncio.AbstractServer] = []
    steps: list[str] = []

    async def slow_step() -> None:
        steps.append("slow")
        await slow.wait()

    async def listen() -> None:
        steps.append("listen")
        loop = asyncio.get_running_loop()
        servers.append(await loop.create_server(asyncio.Protocol, "127.0.0.1", 0))

    link.add_startup(slow_step)
    link.add_startup(listen)
    engine.add_component(link)
    engine.add_component(_Port(servers, slow))
    run = asyncio.create_task(engine.run())
    for _ in range(500):
        if engine.state is EngineState.RUNNING and steps:
            break
        await asyncio.sleep(0.002)
    assert engine.state is EngineState.RUNNING
    assert steps == ["slow"]  # the start-up is under way, held by its slow step
    engine.request_stop()
    await asyncio.wait_for(run, 10)
    try:
        # The slow step was cancelled before any component stopped: the server it would have
        # opened next was never opened (without that, it stayed open, owned by nobody).
        assert steps == ["slow"]
        assert servers == []
    finally:
        for server in servers:
            server.close()


async def test_a_finished_start_up_is_left_alone_by_the_stop() -> None:
    clock = LiveClock()
    engine = Engine(clock)
    link = FixLink(engine.bus, clock)
    slow = asyncio.Event()
    slow.set()
    servers: list[asyncio.AbstractServer] = []

    async def listen() -> None:
        loop = asyncio.get_running_loop()
        servers.append(await loop.create_server(asyncio.Protocol, "127.0.0.1", 0))

    link.add_startup(listen)
    engine.add_component(link)
    engine.add_component(_Port(servers, slow))
    run = asyncio.create_task(engine.run())
    for _ in range(500):
        if servers:
            break
        await asyncio.sleep(0.002)
    assert len(servers) == 1
    engine.request_stop()
    await asyncio.wait_for(run, 10)
    assert not servers[0].is_serving()  # closed by its owner's stop, as ever
