# SPDX-License-Identifier: MIT
"""Direct reads while a loop busy-polls (``engine.busypoll.SocketReader``): a FIX connection on
a plain TCP socket reads its socket itself while the loop spins, loses and reorders nothing
(bursts bigger than one read included), hands the socket back to the loop when the spin
ends, still sees its peer go away, and never reads a TLS socket's ciphertext. Real sessions
on 127.0.0.1, on asyncio's own loop and on uvloop (the engine's)."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from engine.busypoll import READ_SIZE, busy_poll_for
from engine.fix.application import Application, SessionID
from engine.fix.message import FixMessage, OutMessage
from engine.fix.session import FixSession, lookup_session
from engine.fix.settings import SessionSettings
from engine.fix.store import MemoryStore
from engine.fix.transport import SocketAcceptor, SocketInitiator
from tests.factories import socket_pair

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


class _Venue(Application):
    """Answers every NewOrderSingle with an ExecutionReport carrying its ClOrdID."""

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        s = lookup_session(session_id)
        assert s is not None
        clordid = message.get(11) or b""
        s.send(OutMessage(b"8", [(11, clordid), (17, b"E" + clordid), (150, b"0")]))


class _Client(Application):
    def __init__(self) -> None:
        self.got: asyncio.Queue[bytes] = asyncio.Queue()

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        self.got.put_nowait(message.get(11) or b"")


def _order(clordid: bytes) -> OutMessage:
    return OutMessage(b"D", [(11, clordid), (38, b"100"), (54, b"1"), (55, b"X" * 40)])


async def _answers(app: _Client, n: int) -> list[bytes]:
    return [await asyncio.wait_for(app.got.get(), 10) for _ in range(n)]


@pytest.mark.parametrize("kind", LOOPS)
def test_a_spinning_loop_reads_its_sockets_itself_and_loses_nothing(kind: str) -> None:
    async def trade() -> None:
        app = _Client()
        async with socket_pair(
            _Venue(), app, use_data_dictionary=False, busy_poll_microseconds=WINDOW_US
        ) as pair:
            bp = busy_poll_for(asyncio.get_running_loop())
            # One at a time: every answer arrives, in order.
            for i in range(30):
                pair.client.send(_order(b"p%d" % i))
                assert await _answers(app, 1) == [b"p%d" % i]
            assert bp.direct_reads >= 30, "the spinning loop did not read the sockets itself"
            # A burst far bigger than one direct read: cut between reads, nothing lost or
            # reordered (a gap would make the sessions ask for a resend, a loss time out).
            burst = [b"b%d" % i for i in range(3 * READ_SIZE // 100)]  # > 100 bytes each
            for c in burst:
                pair.client.send(_order(c))
            assert await _answers(app, len(burst)) == burst
            assert pair.client.next_target_seq_num == pair.venue.next_sender_seq_num
            assert pair.venue.next_target_seq_num == pair.client.next_sender_seq_num
            # The window ends: the loop reads the sockets again and sleeps on them; an order
            # sent then is read by the loop (which starts a new spin) and answered.
            await asyncio.sleep(WINDOW_US / 1e6 * 2)
            assert not bp.spinning
            readers = [c._reader for c in pair.acceptor.connections | pair.initiator.connections]
            assert readers
            assert all(r is not None and not r.reading for r in readers)
            pair.client.send(_order(b"after"))
            assert await _answers(app, 1) == [b"after"]
            assert pair.client.is_logged_on
            assert pair.venue.is_logged_on

    _run_on(kind, trade)


@pytest.mark.parametrize("kind", LOOPS)
def test_a_peer_that_goes_away_while_the_loop_spins_is_seen(kind: str) -> None:
    async def trade() -> None:
        app = _Client()
        # A window of 10 s: a reader that missed the end of the stream would only hand the
        # socket back to the loop when the spin ends, long after the 2 s allowed below.
        async with socket_pair(
            _Venue(), app, use_data_dictionary=False, busy_poll_microseconds=10_000_000
        ) as pair:
            pair.client.send(_order(b"x1"))
            assert await _answers(app, 1) == [b"x1"]
            bp = busy_poll_for(asyncio.get_running_loop())
            assert bp.spinning
            assert bp.direct_reads > 0
            # The venue's connection dropped without a Logout while the client's socket is read
            # directly: the end of the stream must reach the client's session (a reader that
            # kept reading b"" would leave it logged on forever).
            (venue_conn,) = pair.acceptor.connections
            assert venue_conn._transport is not None
            venue_conn._transport.abort()
            for _ in range(200):
                if not pair.client.is_logged_on:
                    break
                await asyncio.sleep(0.01)
            assert not pair.client.is_logged_on
            assert not pair.initiator.connections or all(
                c.is_closing() for c in pair.initiator.connections
            )

    _run_on(kind, trade)


def _tls_contexts(tmp: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    cert, key = tmp / "cert.pem", tmp / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert, key)
    return server, ssl.create_default_context(cafile=str(cert))


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl CLI not available")
@pytest.mark.parametrize("kind", LOOPS)
def test_tls_connections_spin_but_leave_reading_to_the_transport(kind: str, tmp_path: Path) -> None:
    server_ctx, client_ctx = _tls_contexts(tmp_path)

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
        app = _Client()
        venue = FixSession(settings("EXCH", "ME", "acceptor"), MemoryStore(), _Venue())
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
            # ... but their sockets carry ciphertext: read by the TLS transport only.
            assert bp.direct_reads == 0
            assert all(c._reader is None for c in acceptor.connections | initiator.connections)
        finally:
            await initiator.stop()
            await acceptor.stop()
            client.close()
            venue.close()

    _run_on(kind, trade)
