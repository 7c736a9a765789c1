# SPDX-License-Identifier: MIT
"""Read bursts of a spinning loop's direct reader (``engine.busypoll``): while its reads find
nothing it reads on instead of handing the loop an iteration, but only while the loop has
nothing else to do. Real sockets on 127.0.0.1 (and socket pairs for the loop's other
descriptors), on asyncio's own loop and on uvloop (the engine's)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Callable
from typing import cast

import pytest

from engine.busypoll import BusyPoll, SocketReader, busy_poll_for
from engine.fix import benchtables as bt
from tests.integration.test_direct_reads import LOOPS, _run_on

pytestmark = pytest.mark.integration

WINDOW_NS = 5_000_000_000  # longer than any test: the loop spins throughout


class _Sink(asyncio.Protocol):
    def __init__(self) -> None:
        self.got = bytearray()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.got += data


@contextlib.asynccontextmanager
async def _spinning_reader() -> AsyncIterator[tuple[BusyPoll, SocketReader, _Sink, socket.socket]]:
    """A TCP connection on 127.0.0.1 read directly by this loop's spin; its peer's socket."""
    loop = asyncio.get_running_loop()
    with socket.create_server(("127.0.0.1", 0)) as srv:
        peer = socket.create_connection(srv.getsockname())
        ours, _ = srv.accept()
    _, sink = await loop.connect_accepted_socket(_Sink, ours)
    bp = busy_poll_for(loop)
    reader = bp.attach(sink.transport, sink.data_received)
    assert reader is not None
    try:
        bp.touch(WINDOW_NS)
        for _ in range(100):  # the spin starts on the next iteration and pauses the transport
            await asyncio.sleep(0)
        assert reader.reading
        yield bp, reader, sink, peer
    finally:
        reader.close()
        peer.close()
        sink.transport.close()


async def _until(test: Callable[[], bool], within: float = 5.0) -> None:
    for _ in range(int(within / 0.001)):
        if test():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("condition not met in time")


@pytest.mark.parametrize("kind", LOOPS)
def test_a_spinning_reader_reads_on_in_bursts_and_loses_nothing(kind: str) -> None:
    async def run() -> None:
        async with _spinning_reader() as (bp, _reader, sink, peer):
            await asyncio.sleep(0.05)  # nothing arrives: the reads go on in bursts
            assert bp.bursts > 0
            sent = b""
            for i in range(50):  # whatever arrives, burst or not, is read whole and in order
                chunk = b"%d;" % i
                peer.sendall(chunk)
                sent += chunk
                want = len(sent)
                await _until(lambda: len(sink.got) >= want)  # noqa: B023  (awaited here)
            assert bytes(sink.got) == sent
            assert bp.direct_reads >= 1

    _run_on(kind, run)


@pytest.mark.parametrize("kind", LOOPS)
def test_a_burst_stops_at_once_when_another_socket_of_the_loop_has_bytes(kind: str) -> None:
    # What a burst looks at between its reads: the loop's own poller, readable exactly when
    # one of the loop's descriptors has something (here a socket pair the loop reads).
    async def run() -> None:
        loop = asyncio.get_running_loop()
        a, b = socket.socketpair()
        a.setblocking(False)
        seen = bytearray()
        async with _spinning_reader() as (bp, reader, _sink, _peer):
            loop.add_reader(a.fileno(), lambda: seen.extend(a.recv(100)))
            try:
                await asyncio.sleep(0.01)  # the loop has registered ``a`` with its poller
                loop_io = bp._loop_io
                assert loop_io is not None
                assert not loop_io(0)
                b.send(b"md")
                assert loop_io(0)  # a burst running now stops after its current reads
                assert reader._burst(reader._read_fd) is None  # and none starts meanwhile
                await _until(lambda: bytes(seen) == b"md")  # the loop serves the socket
                assert not loop_io(0)
            finally:
                loop.remove_reader(a.fileno())
                a.close()
                b.close()

    _run_on(kind, run)


def test_no_burst_while_asyncio_has_callbacks_queued() -> None:
    # asyncio shows its queue of callbacks: a chain of callbacks that keeps one queued at every
    # spin iteration gets no burst in its way; once it ends, the bursts come back.
    async def run() -> None:
        loop = asyncio.get_running_loop()
        async with _spinning_reader() as (bp, _reader, _sink, _peer):
            done = loop.create_future()
            hops = [0]

            def hop() -> None:
                hops[0] += 1
                if hops[0] < 20_000:
                    loop.call_soon(hop)
                else:
                    done.set_result(bp.bursts)

            await asyncio.sleep(0.01)
            loop.call_soon(hop)
            before = bp.bursts
            during = await done
            # (at most the burst under way when the chain began)
            assert during - before <= 1
            await asyncio.sleep(0.05)
            assert bp.bursts > during

    asyncio.run(run())


@pytest.mark.parametrize("kind", LOOPS)
def test_a_touch_from_outside_a_read_skips_the_next_burst(kind: str) -> None:
    # touch() is what a send from outside a read does (its flush is a callback of the loop):
    # the reader makes no burst until the spin's next iteration.
    async def run() -> None:
        async with _spinning_reader() as (bp, reader, _sink, _peer):
            bp.touch(WINDOW_NS)
            before = bp.bursts
            assert reader._burst(reader._read_fd) is None
            assert bp.bursts == before
            await _until(lambda: not bp.hurry)  # cleared by the spin's next iteration ...
            after = bp.bursts
            await _until(lambda: bp.bursts > after)  # ... and its bursts resume

    _run_on(kind, run)


@pytest.mark.parametrize("kind", LOOPS)
def test_a_fix_round_trip_with_bursts_on_both_ends(kind: str) -> None:
    # The benchmark's venue in a child process and a client here, both busy polling: every
    # report arrives, and the client's waits were read in bursts.
    async def trade(port: int) -> None:
        link = await bt._connect("4.4", port, 150_000)
        try:
            got: list[int] = []
            done = asyncio.get_running_loop().create_future()

            def on_report(_arrived: int) -> None:
                got.append(1)
                if len(got) < 200:
                    link.send()
                elif not done.done():
                    done.set_result(None)

            link.app.on_report = on_report
            link.send()
            await asyncio.wait_for(done, 20)
            assert len(got) == 200
            assert busy_poll_for(asyncio.get_running_loop()).bursts > 0
        finally:
            await bt._close(link)

    with bt.Venue(busy_poll_us=150_000) as venue:
        _run_on(kind, lambda: trade(venue.port))
