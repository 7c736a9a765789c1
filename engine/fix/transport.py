# SPDX-License-Identifier: MIT
"""asyncio transport for FIX sessions: acceptor and initiator.

The only FIX code that touches sockets. Each connection is an :class:`asyncio.Protocol` (cheaper
per message than streams): received bytes go through one :class:`FixDecoder` call
(``decode_message``: a read of one good message or of a few comes as the message or their list,
no batch), every verified message is handed to the session with ``clock.now_ns()``, and what the
session returns is written out every :data:`WRITE_EVERY` messages (a burst's first answers go
while the rest are made); sends from outside a read are gathered until the loop comes round (a
batch of orders is one write). The first answer to a read of one message (the ping-pong of a
trading application: a report in, an order out) is written the moment it is made
(``FixSession.answer_now``), before the rest of the callback and the session's bookkeeping: each
side of a round trip answers ~0.55 µs sooner (batch 1 of ``qwconsole bench fix``: 16.5 -> 14.8
µs a round trip, +10 % orders/s). Answers to a read of several stay gathered: written one by
one, the peer would read and answer them one by one too (measured: the first report of a read of
two orders written at once cut an order's average latency, 23 -> 19 µs, but batch 2 went 5-8 %
slower in orders/s). A timer task drives :meth:`FixSession.on_timer` (heartbeats, TestRequests,
timeouts) and flushes the logs.

* :class:`SocketAcceptor` serves many sessions on one port; a connection is bound to a session
  by its first message, which must be a Logon for a configured session that is not already
  connected (otherwise the connection is dropped without an answer, as QuickFIX does).
* :class:`SocketInitiator` connects one session, tries its hosts in turn (fail-over) and
  reconnects after ``reconnect_interval`` seconds.

Both accept an optional :class:`ssl.SSLContext`. :func:`install_uvloop` switches the event loop
policy to uvloop when it is installed. A session with ``BusyPollMicroseconds`` keeps the loop
polling instead of sleeping for that long after each read and write (:mod:`engine.busypoll`).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import socket
import ssl as _ssl
from collections.abc import Iterable, Sequence
from typing import cast

from engine.busypoll import BusyPoll, SocketReader, busy_poll_for
from engine.clock import Clock, LiveClock
from engine.fastlog import get_log
from engine.fix.codec import FRAME_REASONS, DecodedBatch, FixDecoder
from engine.fix.message import FixMessage
from engine.fix.session import FixSession

_log = get_log(__name__)

#: Gathered output goes out once this many messages wait (a burst's first answers reach the
#: peer while the rest are made: both processes work at once instead of in turn).
WRITE_EVERY = 32


def install_uvloop() -> str | None:
    """Use uvloop's event loop policy when uvloop is installed; return its version or None."""
    try:
        import uvloop  # optional dependency
    except ImportError:
        return None
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return importlib.metadata.version("uvloop")


class _Connection(asyncio.Protocol):
    """One TCP connection carrying one FIX session."""

    def __init__(self, owner: _Endpoint, session: FixSession | None = None) -> None:
        self._owner = owner
        self._clock = owner.clock
        self.session = session
        self._transport: asyncio.Transport | None = None
        self._decoder = FixDecoder()
        self._closing = False
        self._logon_timer: asyncio.TimerHandle | None = None
        # Output is gathered while a batch of input is processed (and for sends made outside
        # the session's entry points, until the loop comes round) and written in one call.
        self._pending: list[bytes] = []
        self._batching = False
        self._flush_scheduled = False
        # Busy polling (the session's BusyPollMicroseconds, ns; no spinner when off).
        self._spin_ns = 0
        self._spinner: BusyPoll | None = None
        # While the loop spins, the socket read directly (a plain TCP socket; see busypoll).
        self._reader: SocketReader | None = None
        self._answer = self._answer_now  # (bound once: handed to the session on every read)

    # -------------------------------------------------------------- asyncio callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not subclass asyncio.Transport but have the same API.
        self._transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._owner.connections.add(self)
        if self.session is not None:
            self._bind(self.session)
            self._write(self.session.on_connected(self._clock.now_ns()))
            self._check()
        else:
            loop = asyncio.get_running_loop()
            self._logon_timer = loop.call_later(self._owner.logon_timeout, self._logon_timeout)

    def data_received(self, data: bytes) -> None:  # noqa: C901  (the read path, inlined)
        if self._closing:
            return
        now = self._clock.now_ns()
        spinner = self._spinner
        if spinner is not None:
            if not spinner._running:
                spinner.touch(self._spin_ns)
            elif self._spin_ns > spinner.touched:  # counted from the spin's next iteration
                spinner.touched = self._spin_ns
        session = self.session
        decoder = self._decoder
        rows: list[list[int]] | None = None
        if session is not None:
            # A bound session: a read of one good message comes back as the message itself
            # (no batch), the latency path.
            got = decoder.decode_message(data, now)
        else:
            got = decoder.decode_batch(data)
        many: list[FixMessage] | None = None
        kind = type(got)
        if kind is list:
            # A few good messages for a bound session (decode_message's list), their rows the
            # decoder's heads.
            many = got  # type: ignore[assignment]
            rows = decoder.heads
        elif kind is not FixMessage:
            batch: DecodedBatch = got  # type: ignore[assignment]
            rows = batch._rows  # (batch.rows without the property's call: set for a few)
            if rows is None:
                rows = batch.rows
            if not rows:
                return
        self._batching = True
        try:
            if rows is None:
                # One good message for a bound session: _process(), on_message() and _flush()
                # written out.
                assert session is not None
                if not session.wants_disconnect:  # (what on_message checks first)
                    session.answer_now = self._answer  # its first answer written at once
                    out = session.on_messages((got,), now, (decoder.head,))  # type: ignore[arg-type]
                    session.answer_now = None
                    if out and not self._closing:
                        self._pending.extend(out)
                if session.wants_disconnect and session is self.session:
                    self.close()
            elif len(rows) == 1 and not rows[0][4] and session is not None:
                # One good message and the start of the next one.
                if not session.wants_disconnect:
                    session.answer_now = self._answer
                    out = session.on_messages((batch.single_message(now),), now, rows)
                    session.answer_now = None
                    if out and not self._closing:
                        self._pending.extend(out)
                if session.wants_disconnect and session is self.session:
                    self.close()
            elif many is not None or (
                batch._good and session is not None and len(rows) <= WRITE_EVERY
            ):
                # A few messages, all good, for a bound session (a list has two rows at least,
                # so none above): _process() -> _burst() written out for their one on_messages
                # call.
                assert session is not None
                if many is None:
                    many = batch.messages(now)  # type: ignore[assignment]
                out = session.on_messages(many, now, rows)  # type: ignore[arg-type]
                if not self._closing:
                    if out:
                        self._pending.extend(out)
                    if session.wants_disconnect and session is self.session:
                        self.close()
            else:
                self._process(batch, rows, now)
        finally:
            self._batching = False
            self._flush_scheduled = False  # _flush(), inlined
            pending = self._pending
            t = self._transport
            if pending and t is not None:
                self._pending = []
                t.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def _process(self, batch: DecodedBatch, rows: list[list[int]], now: int) -> None:
        # Per message this loop is on the hot path: locals, no helper calls besides the
        # session's entry point (the equivalent of _write and _check is inlined).
        if len(rows) == 1 and not rows[0][4]:
            # One message per read, the latency path.
            messages: list[FixMessage | None] = [batch.single_message(now)]
        else:
            messages = batch.messages(now)
            if self._burst(messages, rows, now):
                return
        for row, msg in zip(rows, messages, strict=True):
            if self._closing:
                return
            session = self.session
            if msg is None:
                start, end, _, _, status, _, _, _ = row
                reason = FRAME_REASONS.get(status, "garbled")
                if session is None:
                    _log.info("garbled data before logon (%s): disconnecting", reason)
                    self.close()
                    return
                self._write(session.on_garbled(reason, batch.buf[start:end], now))
                self._check()
                continue
            if session is None:
                session = self._owner.route(self, msg)
                if session is None:
                    self.close()
                    return
                self._bind(session)
                self._write(session.on_connected(now))
            out = session.on_message(msg, now, row)
            if out and not self._closing:
                self._pending.extend(out)
            if session.wants_disconnect and session is self.session:
                self.close()

    def _burst(self, messages: list[FixMessage | None], rows: list[list[int]], now: int) -> bool:
        # A burst for a bound session, nothing garbled: the session takes them all in one
        # call (what _process's loop does message by message). False: not such a burst.
        session = self.session
        if session is None or None in messages:
            return False
        msgs = cast(list[FixMessage], messages)
        n = len(msgs)
        for i in range(0, n, WRITE_EVERY):
            if n <= WRITE_EVERY:
                out = session.on_messages(msgs, now, rows)
            else:
                out = session.on_messages(msgs[i : i + WRITE_EVERY], now, rows[i : i + WRITE_EVERY])
            if self._closing:
                break
            if out:
                self._pending.extend(out)
            if session.wants_disconnect:
                if session is self.session:
                    self.close()
                break
            if len(self._pending) >= WRITE_EVERY:
                self._write_pending()
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        self._unbind()
        self._owner.connections.discard(self)
        if self._logon_timer is not None:
            self._logon_timer.cancel()

    # -------------------------------------------------------------- helpers

    def is_closing(self) -> bool:
        """Return True once the connection is being closed."""
        return self._closing

    def _bind(self, session: FixSession) -> None:
        self.session = session
        self._owner.active[session] = self
        session.set_responder(self._write_one)
        self._decoder.layouts = session.layouts
        self._decoder.expect_header(*session.expected_header())
        self._spin_ns = session.config.busy_poll_microseconds * 1000
        self._spinner = None
        if self._spin_ns:
            loop = asyncio.get_running_loop()
            self._spinner = spinner = busy_poll_for(loop)
            t = self._transport
            if self._reader is None and t is not None:  # (_unbind closes any earlier one)
                self._reader = spinner.attach(t, self.data_received)
            spinner.touch(self._spin_ns)
        if self._logon_timer is not None:
            self._logon_timer.cancel()
            self._logon_timer = None

    def _unbind(self) -> None:
        reader = self._reader
        if reader is not None:  # before the transport closes: its descriptor is not read again
            self._reader = None
            reader.close()
        session = self.session
        if session is not None and self._owner.active.get(session) is self:
            del self._owner.active[session]
            session.set_responder(None)
            self._decoder.layouts = None
            self._decoder.expect_header(b"", b"", b"")
            session.on_disconnected(self._clock.now_ns())
            self._owner.on_session_disconnected(session)
        self.session = None

    def _logon_timeout(self) -> None:
        if self.session is None:
            _log.info("no Logon within %ss: disconnecting", self._owner.logon_timeout)
            self.close()

    def _write(self, out: list[bytes]) -> None:
        if out and not self._closing:
            self._pending.extend(out)
            if not self._batching:
                self._flush()

    def _write_one(self, data: bytes) -> None:
        if self._closing:
            return
        if self._batching or self._flush_scheduled:
            pending = self._pending
            pending.append(data)
            if len(pending) >= WRITE_EVERY:
                self._write_pending()
            return
        # Sends made outside the session's entry points (an application's coroutine sending
        # a batch of orders) are gathered until the loop comes round and go out in one write:
        # the peer then reads them in one wake-up, and answers them in one write, instead of
        # reading the first alone (written at once, the first of a batch of two cost both
        # processes a second read, decode and write: 30 % more CPU per order at batches of
        # 2-10, the same at batches of 1). The flush costs one loop iteration.
        self._flush_scheduled = True
        asyncio.get_running_loop().call_soon(self._flush)
        self._pending.append(data)
        spinner = self._spinner
        if spinner is not None:  # an answer may come: poll for it rather than sleep
            spinner.touch(self._spin_ns)

    def _answer_now(self, data: bytes) -> None:
        # The first answer to a read of one message (FixSession.answer_now): written at once,
        # unless something waits to go first.
        if self._closing:
            return
        t = self._transport
        if self._pending or t is None:
            self._pending.append(data)
        else:
            t.write(data)

    def _flush(self) -> None:
        self._flush_scheduled = False
        self._write_pending()

    def _write_pending(self) -> None:
        pending = self._pending
        t = self._transport
        if pending and t is not None:
            self._pending = []
            t.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def _check(self) -> None:
        s = self.session
        if s is not None and s.wants_disconnect:
            self.close()

    def tick(self, now_ns: int) -> None:
        """Run the session timers."""
        s = self.session
        if s is None or self._closing:
            return
        self._write(s.on_timer(now_ns))
        self._check()

    def close(self) -> None:
        """Write what is pending, then close; the session is told at once."""
        if self._closing:
            return
        self._flush()
        self._closing = True
        self._unbind()
        if self._transport is not None:
            self._transport.close()


class _Endpoint:
    """What acceptor and initiator share: clock, timer task, live connections."""

    def __init__(self, clock: Clock | None, timer_interval: float, logon_timeout: float) -> None:
        self.clock: Clock = clock or LiveClock()
        self.timer_interval = timer_interval
        self.logon_timeout = logon_timeout
        self.connections: set[_Connection] = set()
        self.active: dict[FixSession, _Connection] = {}
        self._timer_task: asyncio.Task[None] | None = None

    def route(self, conn: _Connection, msg: FixMessage) -> FixSession | None:
        return None

    def on_session_disconnected(self, session: FixSession) -> None:
        """Call when a session lost its connection."""

    def _start_timer(self) -> None:
        if self._timer_task is None:
            self._timer_task = asyncio.get_running_loop().create_task(self._timer_loop())

    async def _timer_loop(self) -> None:
        while True:
            await asyncio.sleep(self.timer_interval)
            now = self.clock.now_ns()
            for conn in list(self.connections):
                try:
                    conn.tick(now)
                except Exception:  # one broken session must not stop the others' timers
                    _log.exception("session timer failed")
            for session in list(self.active):
                session.log.flush()

    async def _stop_timer(self) -> None:
        if self._timer_task is not None:
            self._timer_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer_task
            self._timer_task = None


class SocketAcceptor(_Endpoint):
    """Accept FIX connections for many sessions on one port.

    Parameters
    ----------
    sessions : iterable of FixSession
        Acceptor sessions; a connection's Logon picks one by BeginString and CompIDs.
    host : str
        Address to listen on (loopback by default).
    port : int
        Port; 0 picks a free one (see :attr:`port` after :meth:`start`).
    clock : Clock, optional
        Time source.
    ssl : ssl.SSLContext, optional
        TLS server context.
    timer_interval : float
        Seconds between timer ticks.
    logon_timeout : float
        Seconds a new connection may take to send its Logon.
    """

    def __init__(
        self,
        sessions: Iterable[FixSession],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Clock | None = None,
        ssl: _ssl.SSLContext | None = None,
        timer_interval: float = 0.2,
        logon_timeout: float = 10.0,
    ) -> None:
        super().__init__(clock, timer_interval, logon_timeout)
        self.sessions: dict[tuple[bytes, bytes, bytes], FixSession] = {}
        for s in sessions:
            cfg = s.config
            key = (
                cfg.begin_string.encode(),
                cfg.sender_comp_id.encode(),
                cfg.target_comp_id.encode(),
            )
            self.sessions[key] = s
        self.host = host
        self._port = port
        self._ssl = ssl
        self._server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        """Return the listening port."""
        if self._server is not None and self._server.sockets:
            return int(self._server.sockets[0].getsockname()[1])
        return self._port

    async def start(self) -> None:
        """Start listening."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _Connection(self), self.host, self._port, ssl=self._ssl, reuse_address=True
        )
        self._start_timer()

    async def serve_forever(self) -> None:
        """Run until cancelled."""
        if self._server is None:
            await self.start()
        assert self._server is not None
        await self._server.serve_forever()

    def route(self, conn: _Connection, msg: FixMessage) -> FixSession | None:
        """Return the session a first message opens, or None to drop the connection."""
        if msg.msg_type != b"A":
            _log.info("first message is not a Logon: disconnecting")
            return None
        key = (msg.get(8) or b"", msg.get(56) or b"", msg.get(49) or b"")
        session = self.sessions.get(key)
        if session is None:
            _log.info("Logon for unknown session %r: disconnecting", key)
            return None
        if session in self.active:
            session.log.on_event(
                "Refused a second Logon for a session that is already connected",
                self.clock.now_ns(),
            )
            return None
        return session

    async def stop(self, logout: bool = True) -> None:
        """Log out connected sessions, close connections and stop listening."""
        if logout:
            for session, conn in list(self.active.items()):
                conn._write(session.logout())
            if self.active:
                await asyncio.sleep(0.05)
        for conn in list(self.connections):
            conn.close()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        await self._stop_timer()
        for s in self.sessions.values():
            s.log.flush()


class SocketInitiator(_Endpoint):
    """Connect one FIX session to its counterparty, with fail-over and reconnects.

    Parameters
    ----------
    session : FixSession
        An initiator session.
    hosts : sequence of (host, port)
        Targets tried in turn (``SocketConnectHost``/``Port``, then ``<n>`` fail-overs).
    reconnect_interval : float
        Seconds between connection attempts.
    clock : Clock, optional
        Time source.
    ssl : ssl.SSLContext, optional
        TLS client context.
    server_hostname : str, optional
        Name to verify the TLS certificate against.
    timer_interval : float
        Seconds between timer ticks.
    """

    def __init__(
        self,
        session: FixSession,
        hosts: Sequence[tuple[str, int]],
        *,
        reconnect_interval: float = 30.0,
        clock: Clock | None = None,
        ssl: _ssl.SSLContext | None = None,
        server_hostname: str | None = None,
        timer_interval: float = 0.2,
    ) -> None:
        super().__init__(clock, timer_interval, session.config.logon_timeout)
        if not hosts:
            raise ValueError("SocketInitiator needs at least one (host, port)")
        self.session = session
        self.hosts = list(hosts)
        self.reconnect_interval = reconnect_interval
        self._ssl = ssl
        self._server_hostname = server_hostname
        self._task: asyncio.Task[None] | None = None
        self._lost: asyncio.Event | None = None
        self._next_host = 0
        #: How many connections were made so far.
        self.connects = 0

    async def start(self) -> None:
        """Start connecting in the background."""
        self._lost = asyncio.Event()
        self._start_timer()
        self._task = asyncio.get_running_loop().create_task(self._run())

    def on_session_disconnected(self, session: FixSession) -> None:
        """Wake the reconnect loop."""
        if self._lost is not None:
            self._lost.set()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        assert self._lost is not None
        while True:
            host, port = self.hosts[self._next_host % len(self.hosts)]
            self._next_host += 1
            self._lost.clear()
            try:
                await loop.create_connection(
                    lambda: _Connection(self, self.session),
                    host,
                    port,
                    ssl=self._ssl,
                    server_hostname=self._server_hostname if self._ssl else None,
                )
            except OSError as e:
                _log.info(
                    "%s: cannot connect to %s:%s (%s)", self.session.session_id, host, port, e
                )
                await asyncio.sleep(self.reconnect_interval)
                continue
            self.connects += 1
            await self._lost.wait()
            await asyncio.sleep(self.reconnect_interval)

    async def wait_logged_on(self, within: float = 10.0) -> None:
        """Wait until the session is logged on.

        Raises
        ------
        TimeoutError
            If it is not logged on within ``within`` seconds.
        """
        async with asyncio.timeout(within):
            # The sans-IO session has no change notification; polling costs nothing here.
            while not self.session.is_logged_on:  # noqa: ASYNC110
                await asyncio.sleep(0.005)

    def send(self, data: list[bytes]) -> None:
        """Write bytes produced by the session outside an entry point."""
        conn = self.active.get(self.session)
        if conn is not None:
            conn._write(data)

    async def stop(self, logout: bool = True) -> None:
        """Log out (waiting briefly for the answer), then disconnect and stop reconnecting."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        conn = self.active.get(self.session)
        if conn is not None and logout and self.session.is_logged_on:
            conn._write(self.session.logout())
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(2.0):
                    while self.session in self.active:  # noqa: ASYNC110  (see above)
                        await asyncio.sleep(0.01)
        for c in list(self.connections):
            c.close()
        await self._stop_timer()
        self.session.log.flush()
