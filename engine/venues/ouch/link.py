# SPDX-License-Identifier: MIT
"""asyncio transport for SoupBinTCP sessions: a reconnecting client link and a listener.

The only OUCH code that touches sockets. Each connection is an :class:`asyncio.Protocol`:
received bytes go to the session's ``on_data`` with ``clock.now_ns()`` and whatever it returns
is written at once; a timer task calls ``on_timer`` every ``timer_interval_s`` (heartbeats and
timeouts are the session's decisions, on the time it is given). A session that sets
``wants_disconnect`` has its connection closed after its bytes are written.

* :class:`SoupClientLink` connects one client session (an :class:`OuchClient` or a bare
  :class:`SoupClientSession`), logs in, and reconnects after a drop with exponential backoff
  (``reconnect_min_s`` doubling up to ``reconnect_max_s``, back to the minimum after a login).
  It stops trying after a Login Rejected or an End of Session: both need a person (or a new
  session) to go on.
* :class:`SoupServerListener` serves any number of :class:`SoupServerSession` accounts on one
  port; a connection is bound to the account named by its Login Request (an unknown username
  gets Login Rejected 'A', an account already connected 'S').
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterable
from typing import Protocol, cast

from engine.busypoll import BusyPoll, busy_poll_for
from engine.clock import Clock, LiveClock
from engine.fastlog import get_log
from engine.venues.ouch.soupbin import (
    LOGIN_REQUEST,
    REJECT_NOT_AUTHORIZED,
    REJECT_SESSION_NOT_AVAILABLE,
    ClientStatus,
    FrameReader,
    LoginRequest,
    SoupServerSession,
    login_rejected,
)

log = get_log(__name__)


class ClientSessionLike(Protocol):
    """What :class:`SoupClientLink` drives (:class:`OuchClient`, :class:`SoupClientSession`)."""

    @property
    def wants_disconnect(self) -> bool:
        """Return True when the session wants the connection closed."""
        ...

    @property
    def status(self) -> ClientStatus:
        """Return the SoupBinTCP status."""
        ...

    def on_connected(self, now_ns: int) -> bytes:
        """Start a connection; return the Login Request."""
        ...

    def on_data(self, data: bytes, now_ns: int) -> bytes:
        """Take received bytes."""
        ...

    def on_timer(self, now_ns: int) -> bytes:
        """Drive heartbeats and timeouts."""
        ...

    def logout(self, now_ns: int) -> bytes:
        """Return a Logout Request."""
        ...

    def on_disconnected(self, now_ns: int) -> None:
        """Handle the loss of the connection."""
        ...


def _nodelay(transport: asyncio.BaseTransport) -> None:
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _ClientConnection(asyncio.Protocol):
    def __init__(self, link: SoupClientLink) -> None:
        self.link = link
        self.transport: asyncio.Transport | None = None
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        _nodelay(transport)
        link = self.link
        link._active = self
        self.write(link.session.on_connected(link.clock.now_ns()))

    def data_received(self, data: bytes) -> None:
        link = self.link
        if link._spinner is not None:
            link._spinner.touch(link._spin_ns)
        out = link.session.on_data(data, link.clock.now_ns())
        if out:
            self.write(out)
        if link.session.status is ClientStatus.LOGGED_IN:
            link._on_logged_in()
        if link.session.wants_disconnect:
            self.close()

    def write(self, data: bytes) -> None:
        t = self.transport
        if data and t is not None and not t.is_closing():
            t.write(data)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        link = self.link
        if link._active is self:
            link._active = None
        link.session.on_disconnected(link.clock.now_ns())
        link.logged_in.clear()
        if not self.closed.done():
            self.closed.set_result(None)


class SoupClientLink:
    """Connect a client session to ``host:port``, keep it logged in, reconnect with backoff.

    Parameters
    ----------
    session : ClientSessionLike
        The session (an :class:`OuchClient`).
    host, port : str, int
        Where the server listens.
    clock : Clock, optional
        Time source for the session (default: the live clock).
    reconnect_min_s, reconnect_max_s : float
        Backoff between connection attempts: the minimum, doubled per failure up to the
        maximum.
    timer_interval_s : float
        How often the session's timer runs.
    busy_poll_us : int
        After each packet received or sent, keep the event loop polling instead of sleeping
        for this long (:mod:`engine.busypoll`; 0, the default: off).
    """

    def __init__(
        self,
        session: ClientSessionLike,
        host: str,
        port: int,
        *,
        clock: Clock | None = None,
        reconnect_min_s: float = 0.1,
        reconnect_max_s: float = 5.0,
        timer_interval_s: float = 0.1,
        busy_poll_us: int = 0,
    ) -> None:
        self.session = session
        self.host = host
        self.port = port
        self.clock: Clock = clock or LiveClock()
        self.reconnect_min_s = reconnect_min_s
        self.reconnect_max_s = reconnect_max_s
        self.timer_interval_s = timer_interval_s
        #: Set while the session is logged in.
        self.logged_in = asyncio.Event()
        #: Connections made so far.
        self.connections = 0
        self._active: _ClientConnection | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False
        self._backoff = reconnect_min_s
        self._spin_ns = busy_poll_us * 1000
        self._spinner: BusyPoll | None = None

    async def start(self) -> None:
        """Start connecting (returns at once; see :meth:`wait_logged_in`)."""
        self._stopping = False
        loop = asyncio.get_running_loop()
        if self._spin_ns:
            self._spinner = busy_poll_for(loop)
        self._tasks = [
            loop.create_task(self._run(), name=f"soup-client {self.host}:{self.port}"),
            loop.create_task(self._timer(), name="soup-client timer"),
        ]

    async def wait_logged_in(self, within_s: float = 10.0) -> None:
        """Wait until the session is logged in (raises TimeoutError after ``within_s``)."""
        await asyncio.wait_for(self.logged_in.wait(), within_s)

    def _on_logged_in(self) -> None:
        if not self.logged_in.is_set():
            self.logged_in.set()
            self._backoff = self.reconnect_min_s

    def _should_stop(self) -> bool:
        return self._stopping

    @property
    def connected(self) -> bool:
        """Return True while a connection is open."""
        return self._active is not None

    def send(self, data: bytes) -> None:
        """Write ``data`` (bytes the session returned) to the open connection.

        Raises
        ------
        ConnectionError
            If there is no open connection.
        """
        conn = self._active
        if conn is None:
            raise ConnectionError(f"SoupBinTCP link to {self.host}:{self.port} is not connected")
        conn.write(data)
        if self._spinner is not None:  # an answer may come: poll for it rather than sleep
            self._spinner.touch(self._spin_ns)
        if self.session.wants_disconnect:
            conn.close()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._should_stop():
            try:
                _, conn = await loop.create_connection(
                    lambda: _ClientConnection(self), self.host, self.port
                )
            except OSError as e:
                log.info("SoupBinTCP connect to %s:%d failed: %s", self.host, self.port, e)
            else:
                self.connections += 1
                await conn.closed
                if self.session.status in (ClientStatus.REJECTED, ClientStatus.ENDED):
                    log.info(
                        "SoupBinTCP link to %s:%d stops: %s",
                        self.host,
                        self.port,
                        self.session.status.value,
                    )
                    return
            if self._should_stop():
                return
            await asyncio.sleep(self._backoff)
            self._backoff = min(self._backoff * 2, self.reconnect_max_s)

    async def _timer(self) -> None:
        while True:
            await asyncio.sleep(self.timer_interval_s)
            conn = self._active
            if conn is None:
                continue
            out = self.session.on_timer(self.clock.now_ns())
            if out:
                conn.write(out)
            if self.session.wants_disconnect:
                conn.close()

    def drop(self) -> None:
        """Close the connection without a logout (a network failure; the link reconnects)."""
        conn = self._active
        if conn is not None and conn.transport is not None:
            conn.transport.abort()

    async def stop(self, *, logout: bool = True, within_s: float = 2.0) -> None:
        """Stop reconnecting and close the connection (after a Logout Request by default)."""
        self._stopping = True
        conn = self._active
        if conn is not None:
            if logout and self.session.status is ClientStatus.LOGGED_IN:
                conn.write(self.session.logout(self.clock.now_ns()))
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(conn.closed), within_s)
            conn.close()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(conn.closed), within_s)
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []


# ----------------------------------------------------------------------------- server


class _ServerConnection(asyncio.Protocol):
    def __init__(self, listener: SoupServerListener) -> None:
        self.listener = listener
        self.transport: asyncio.Transport | None = None
        self.session: SoupServerSession | None = None
        self._reader = FrameReader()
        self._head = b""
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        _nodelay(transport)
        self.listener._connections.add(self)
        self._timer = asyncio.get_running_loop().call_later(
            self.listener.login_timeout_s, self._login_timeout
        )

    def _login_timeout(self) -> None:
        if self.session is None:
            log.info("SoupBinTCP: no Login Request in %.1f s", self.listener.login_timeout_s)
            self.close()

    def data_received(self, data: bytes) -> None:
        listener = self.listener
        now = listener.clock.now_ns()
        if listener._spinner is not None:
            listener._spinner.touch(listener._spin_ns)
        session = self.session
        if session is None:
            self._head += data
            packets = self._reader.feed(data)
            if not packets:
                return
            session = self._bind(packets[0][0], packets[0][1])
            if session is None:
                return
            data, self._head = self._head, b""
            self.write(session.on_connected(now))
        self.write(session.on_data(data, now))
        if session.wants_disconnect:
            self.close()

    def _bind(self, ptype: int, payload: bytes) -> SoupServerSession | None:
        reject = REJECT_NOT_AUTHORIZED
        session = None
        if ptype == LOGIN_REQUEST:
            try:
                req = LoginRequest.decode(payload)
            except ValueError as e:
                log.warning("SoupBinTCP: %s", e)
            else:
                session = self.listener.sessions.get(req.username.upper())
                if session is not None and session in self.listener._active:
                    reject, session = REJECT_SESSION_NOT_AVAILABLE, None
        if session is None:
            log.warning("SoupBinTCP: login refused (%s)", reject)
            self.write(login_rejected(reject))
            self.close()
            return None
        self.session = session
        self.listener._active[session] = self
        if self._timer is not None:
            self._timer.cancel()
        return session

    def write(self, data: bytes) -> None:
        t = self.transport
        if data and t is not None and not t.is_closing():
            t.write(data)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        listener = self.listener
        listener._connections.discard(self)
        if self._timer is not None:
            self._timer.cancel()
        session = self.session
        if session is not None and listener._active.get(session) is self:
            del listener._active[session]
            session.on_disconnected(listener.clock.now_ns())


class SoupServerListener:
    """Serve SoupBinTCP server sessions on one port.

    Parameters
    ----------
    sessions : iterable of SoupServerSession
        The accounts, found by username (case-insensitive) at login.
    host : str
        Address to bind (loopback by default).
    port : int
        Port to bind; 0 picks a free one (see :attr:`port` after :meth:`start`).
    clock : Clock, optional
        Time source (default: the live clock).
    timer_interval_s, login_timeout_s : float
        How often the sessions' timers run; how long a connection may stay without a login.
    busy_poll_us : int
        After each packet received, keep the event loop polling instead of sleeping for this
        long (:mod:`engine.busypoll`; 0, the default: off).
    """

    def __init__(
        self,
        sessions: Iterable[SoupServerSession],
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        clock: Clock | None = None,
        timer_interval_s: float = 0.1,
        login_timeout_s: float = 10.0,
        busy_poll_us: int = 0,
    ) -> None:
        self.sessions = {s.username.upper(): s for s in sessions}
        self.host = host
        self.port = port
        self.clock: Clock = clock or LiveClock()
        self.timer_interval_s = timer_interval_s
        self.login_timeout_s = login_timeout_s
        self._server: asyncio.Server | None = None
        self._active: dict[SoupServerSession, _ServerConnection] = {}
        self._connections: set[_ServerConnection] = set()
        self._timer_task: asyncio.Task[None] | None = None
        self._spin_ns = busy_poll_us * 1000
        self._spinner: BusyPoll | None = None

    async def start(self) -> int:
        """Listen; return the port."""
        loop = asyncio.get_running_loop()
        if self._spin_ns:
            self._spinner = busy_poll_for(loop)
        self._server = await loop.create_server(
            lambda: _ServerConnection(self), self.host, self.port
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._timer_task = loop.create_task(self._timer(), name="soup-server timer")
        return self.port

    def is_connected(self, session: SoupServerSession) -> bool:
        """Return True while ``session`` has a connection."""
        return session in self._active

    def send(self, session: SoupServerSession, data: bytes) -> bool:
        """Write ``data`` to ``session``'s connection; return False when it has none."""
        conn = self._active.get(session)
        if conn is None:
            return False
        conn.write(data)
        if session.wants_disconnect:
            conn.close()
        return True

    def send_sequenced(self, session: SoupServerSession, payload: bytes) -> bool:
        """Store ``payload`` as ``session``'s next Sequenced Data and write it if connected."""
        return self.send(session, session.send_sequenced(payload, self.clock.now_ns()))

    def end_session(self, session: SoupServerSession) -> None:
        """Send End of Session to ``session`` (if connected) and refuse its next logins."""
        self.send(session, session.end_session(self.clock.now_ns()))

    def drop(self, session: SoupServerSession) -> None:
        """Abort ``session``'s connection (a network failure)."""
        conn = self._active.get(session)
        if conn is not None and conn.transport is not None:
            conn.transport.abort()

    async def _timer(self) -> None:
        while True:
            await asyncio.sleep(self.timer_interval_s)
            now = self.clock.now_ns()
            for session, conn in list(self._active.items()):
                out = session.on_timer(now)
                if out:
                    conn.write(out)
                if session.wants_disconnect:
                    conn.close()

    async def stop(self) -> None:
        """Close every connection and stop listening."""
        if self._timer_task is not None:
            self._timer_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer_task
        for conn in list(self._connections):
            conn.close()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        await asyncio.sleep(0)
