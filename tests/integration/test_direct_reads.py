# SPDX-License-Identifier: MIT
"""Direct reads while a loop busy-polls (``engine.busypoll.SocketReader``): a FIX connection on
a plain TCP socket reads its socket itself while the loop spins, loses and reorders nothing
(bursts bigger than one read included), hands the socket back to the loop when the spin
ends, still sees its peer go away, and never reads a TLS socket's ciphertext. Real sessions
on 127.0.0.1, on asyncio's own loop and on uvloop (the engine's)."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from engine.busypoll import READ_SIZE, busy_poll_for
from engine.fix import benchtables as bt
from engine.fix.application import Application
from engine.fix.message import OutMessage
from engine.fix.session import FixSession
from engine.fix.settings import SessionSettings
from engine.fix.store import MemoryStore
from engine.fix.transport import SocketAcceptor, SocketInitiator
from tests.factories import AckingVenue, ReportQueue, socket_pair, tls_contexts

pytestmark = pytest.mark.integration

T = TypeVar("T")
WINDOW_US = 150_000  # BusyPollMicroseconds of both ends


def _run_on(kind: str, coro: Callable[[], Coroutine[Any, Any, T]]) -> T:
    if kind == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(coro())
    return asyncio.run(coro())


LOOPS = ["asyncio", "uvloop"]


def _order(clordid: bytes) -> OutMessage:
    return OutMessage(b"D", [(11, clordid), (38, b"100"), (54, b"1"), (55, b"X" * 40)])


async def _answers(app: ReportQueue, n: int) -> list[bytes]:
    return [await asyncio.wait_for(app.got.get(), 10) for _ in range(n)]


async def _client_of(port: int, app: Application, spin_us: int) -> tuple[FixSession, Any]:
    """A FIX 4.4 client session of the benchmark's venue (a child process), logged on."""
    me, them = bt._ids("4.4")
    session = FixSession(bt._config("4.4", me, them, initiator=True, busy_poll_us=spin_us),
                         MemoryStore(), app)  # fmt: skip
    initiator = SocketInitiator(session, [("127.0.0.1", port)], reconnect_interval=0.2)
    await initiator.start()
    await initiator.wait_logged_on(10)
    return session, initiator


@pytest.mark.parametrize("kind", LOOPS)
def test_a_spinning_loop_reads_its_socket_itself_and_loses_nothing(kind: str) -> None:
    async def trade(port: int) -> None:
        app = ReportQueue()
        session, initiator = await _client_of(port, app, WINDOW_US)
        try:
            nos = session.template(b"D", bt.nos_fields("4.4"))
            bp = busy_poll_for(asyncio.get_running_loop())
            # One at a time: every answer arrives, in order, read by the client's own reads.
            for i in range(30):
                session.send_template(nos, (b"p%d" % i,))
                assert await _answers(app, 1) == [b"p%d" % i]
            assert bp.direct_reads >= 30, "the spinning loop did not read its socket itself"
            # A burst of reports far bigger than one direct read: cut between reads, nothing
            # lost or reordered (a gap would make the session ask for a resend, a loss time
            # out).
            burst = [b"b%d" % i for i in range(3 * READ_SIZE // 100)]  # > 100 bytes each
            for c in burst:
                session.send_template(nos, (c,))
            assert await _answers(app, len(burst)) == burst
            assert session.next_target_seq_num == session.next_sender_seq_num
            # The window ends: the loop reads the socket again and sleeps on it; an order
            # sent then is answered (its report read by the loop, which starts a new spin).
            await asyncio.sleep(WINDOW_US / 1e6 * 2)
            assert not bp.spinning
            (conn,) = initiator.connections
            assert conn._reader is not None
            assert not conn._reader.reading
            session.send_template(nos, (b"after",))
            assert await _answers(app, 1) == [b"after"]
            assert session.is_logged_on
        finally:
            await initiator.stop()
            session.close()

    with bt.Venue(busy_poll_us=WINDOW_US) as venue:
        _run_on(kind, lambda: trade(venue.port))


@pytest.mark.parametrize("kind", LOOPS)
def test_a_peer_that_goes_away_while_the_loop_spins_is_seen(kind: str) -> None:
    # A window of 10 s: a reader that missed the end of the stream would only hand the
    # socket back to the loop when the spin ends, long after the 2 s allowed below.
    async def trade(venue: bt.Venue) -> None:
        app = ReportQueue()
        session, initiator = await _client_of(venue.port, app, 10_000_000)
        try:
            nos = session.template(b"D", bt.nos_fields("4.4"))
            session.send_template(nos, (b"x1",))
            assert await _answers(app, 1) == [b"x1"]
            bp = busy_poll_for(asyncio.get_running_loop())
            assert bp.spinning
            assert bp.direct_reads > 0
            venue.proc.kill()  # the venue dies without a Logout while the client spins
            for _ in range(200):
                if not session.is_logged_on:
                    break
                await asyncio.sleep(0.01)
            assert not session.is_logged_on
        finally:
            await initiator.stop(logout=False)
            session.close()

    with bt.Venue(busy_poll_us=WINDOW_US) as venue:
        _run_on(kind, lambda: trade(venue))


@pytest.mark.parametrize("kind", LOOPS)
def test_two_connections_on_one_loop_are_read_by_the_loop(kind: str) -> None:
    # Both ends of a pair on one loop: a read that finds nothing costs as much as the loop's
    # readiness poll of every socket, so the loop keeps reading them (no direct reads).
    async def trade() -> None:
        app = ReportQueue()
        async with socket_pair(
            AckingVenue(), app, use_data_dictionary=False, busy_poll_microseconds=WINDOW_US
        ) as pair:
            for i in range(20):
                pair.client.send(_order(b"t%d" % i))
                assert await _answers(app, 1) == [b"t%d" % i]
            bp = busy_poll_for(asyncio.get_running_loop())
            assert bp.spinning
            assert bp.direct_reads == 0
            conns = pair.acceptor.connections | pair.initiator.connections
            assert len(conns) == 2
            for conn in conns:
                assert conn._reader is not None  # plain TCP: it could read ...
                assert not conn._reader.reading  # ... but the loop does

    _run_on(kind, trade)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl CLI not available")
@pytest.mark.parametrize("kind", LOOPS)
def test_tls_connections_spin_but_leave_reading_to_the_transport(kind: str, tmp_path: Path) -> None:
    server_ctx, client_ctx = tls_contexts(tmp_path)

    def settings(me: str, them: str, role: str) -> SessionSettings:
        return SessionSettings(
            begin_string="FIX.4.4",
            sender_comp_id=me,
            target_comp_id=them,
            connection_type=role,
            heart_bt_int=30,
            use_data_dictionary=False,
            busy_poll_microseconds=WINDOW_US,
        )

    async def trade() -> None:
        app = ReportQueue()
        venue = FixSession(settings("EXCH", "ME", "acceptor"), MemoryStore(), AckingVenue())
        client = FixSession(settings("ME", "EXCH", "initiator"), MemoryStore(), app)
        acceptor = SocketAcceptor([venue], port=0, ssl=server_ctx)
        await acceptor.start()
        initiator = SocketInitiator(
            client, [("127.0.0.1", acceptor.port)], ssl=client_ctx, server_hostname="localhost"
        )
        await initiator.start()
        try:
            await initiator.wait_logged_on(10)
            for i in range(20):
                client.send(_order(b"t%d" % i))
                assert await _answers(app, 1) == [b"t%d" % i]
            bp = busy_poll_for(asyncio.get_running_loop())
            assert bp.iterations > 0  # the loop spins for TLS sessions too
            # ... but their sockets carry ciphertext: never read by a SocketReader.
            conns = acceptor.connections | initiator.connections
            assert len(conns) == 2
            assert all(c._reader is None for c in conns)
            assert bp.direct_reads == 0
        finally:
            await initiator.stop()
            await acceptor.stop()
            client.close()
            venue.close()

    _run_on(kind, trade)
