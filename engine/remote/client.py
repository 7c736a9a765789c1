# SPDX-License-Identifier: MIT
"""``RemoteEngineClient``: the ``EngineClient`` interface over the remote protocol.

The client runs its own thread with a plain asyncio loop (like the embedded engine), so the
GUI thread only drains a queue. It connects, checks the server certificate against the pinned
fingerprint *before* sending the token, authenticates, and then keeps the link: when the link
drops it reconnects with exponential backoff and resumes right after the last event it
received, or takes a fresh snapshot when the engine restarted or it fell too far behind.

The stream it hands out is numbered by the client and never has a gap or a duplicate: after a
fresh snapshot the client first delivers the snapshot's state events (what a view needs to
rebuild itself), then the engine's events, renumbered to follow on. Those numbers are what
:meth:`snapshot` uses too.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import random
import ssl
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import (
    ConnectionClosed,
    ConnectionClosedOK,
    InvalidHandshake,
    InvalidURI,
)

from engine.client import ClientState, EngineStartError, EventInbox
from engine.commands import Command, CommandAck, CommandError, CommandResult
from engine.embedded import new_event_loop
from engine.events import EngineSnapshot, EngineStateChanged, Event, EventRecord
from engine.fastlog import get_log
from engine.remote.protocol import (
    MAX_SERVER_FRAME,
    PROTOCOL_VERSION,
    Ack,
    Auth,
    AuthOk,
    Error,
    Events,
    Hello,
    Nak,
    ProtocolError,
    Resumed,
    SnapReq,
    Snapshot,
    Welcome,
    decode_record,
    decode_server,
    encode,
    encode_command,
    snapshot_of,
)
from engine.remote.tls import PinStore, client_context, fingerprint

log = get_log(__name__)


class _Fatal(Exception):
    """A refusal that retrying cannot cure (token, version, certificate)."""


@dataclass(frozen=True, slots=True)
class Backoff:
    """Reconnection delays: ``initial_s`` doubling up to ``max_s``, with ±``jitter`` spread."""

    initial_s: float = 0.25
    max_s: float = 10.0
    jitter: float = 0.2

    def delay(self, attempt: int) -> float:
        """Return the delay before reconnection attempt ``attempt`` (from 0)."""
        base = min(self.max_s, self.initial_s * float(2 ** min(attempt, 30)))
        spread: float = self.jitter * (2 * random.random() - 1)  # not crypto
        return base * (1 + spread)


class RemoteEngineClient:
    """Attach to a remote engine and expose it through the ``EngineClient`` interface.

    Parameters
    ----------
    host, port : str, int
        The engine's remote server.
    token : str
        Access token (``qwconsole engine token add``).
    tls : bool
        Use TLS (``wss://``); the certificate must match the pinned fingerprint.
    pins : PinStore | None
        Pinned fingerprints (trust on first use); required with ``tls``.
    name : str
        Short name for displays (default ``host:port``).
    max_queue : int
        Events kept for a GUI that does not drain; beyond it the oldest are dropped and the
        GUI re-reads a snapshot.
    backoff : Backoff
        Reconnection delays.
    stall_timeout_s : float
        A link silent this long (the engine beats every second) is considered lost.
    """

    def __init__(
        self,
        host: str,
        port: int,
        token: str,
        *,
        tls: bool = True,
        pins: PinStore | None = None,
        name: str = "",
        max_queue: int = 1_000_000,
        backoff: Backoff | None = None,
        stall_timeout_s: float = 5.0,
    ) -> None:
        if tls and pins is None:
            raise ValueError("a TLS connection needs a PinStore to check the certificate")
        self.host = host
        self.port = port
        self._token = token
        self.tls = tls
        self.pins = pins
        self._name = name or f"{host}:{port}"
        self._inbox = EventInbox(max_queue)
        self.backoff = backoff or Backoff()
        self.stall_timeout_s = stall_timeout_s
        self._state = ClientState.IDLE
        self._error = ""
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ws: ClientConnection | None = None
        self._closing: asyncio.Event | None = None
        self._first = threading.Event()
        # Stream position: engine run, last engine seq seen, and the local numbering.
        self._run_id = ""
        self._engine_seq = 0
        self._local_seq = 0
        self._offset = 0
        self._synced = False  # a snapshot was applied: later ones are resynchronisations
        self._last_rx = 0.0  # loop time of the last frame received
        self._stalled = False
        self._rid = 0
        self._pending: dict[int, tuple[Command, Future[CommandResult]]] = {}
        self._snaps: dict[int, Future[EngineSnapshot]] = {}
        #: Who the engine says we are (after login): user name and role.
        self.user = ""
        self.role = ""
        #: The engine's id (after the first connection).
        self.engine_id = ""
        #: Fresh snapshots taken after the first (engine restarts, lagging).
        self.resyncs = 0
        #: Successful connections, the first included.
        self.connects = 0

    # ------------------------------------------------------------------ EngineClient
    @property
    def name(self) -> str:
        """Return the display name."""
        return self._name

    @property
    def state(self) -> ClientState:
        """Return the link state (``DISCONNECTED`` while waiting to reconnect)."""
        return self._state

    @property
    def last_error(self) -> str:
        """Return why the link is down, or ``""``."""
        return self._error

    @property
    def endpoint(self) -> str:
        """Return ``host:port``."""
        return f"{self.host}:{self.port}"

    def start(self, timeout_s: float = 10.0, *, wait: bool = True) -> None:
        """Start connecting; with ``wait``, block until the first snapshot arrived.

        Raises ``EngineStartError`` when the engine refuses (token, version, certificate) or
        cannot be reached within ``timeout_s``. Without ``wait`` it returns at once and
        :attr:`state` shows the progress (for a GUI thread).
        """
        if self._thread is not None:
            raise EngineStartError(f"{self._name}: already started")
        self._state = ClientState.CONNECTING
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._thread_main, args=(ready,), name=f"qw-remote-{self._name}", daemon=True
        )
        self._thread.start()
        ready.wait(5.0)
        if not wait:
            return
        if not self._first.wait(timeout_s) or self._state is not ClientState.CONNECTED:
            error = self._error or f"no answer within {timeout_s:g} s"
            self.close()
            raise EngineStartError(f"cannot attach to engine {self._name}: {error}")

    def snapshot(self, timeout_s: float = 2.0) -> EngineSnapshot:
        """Ask the engine for its state at the current point of the stream (one round trip)."""
        loop, ws = self._loop, self._ws
        if loop is None or ws is None or self._state is not ClientState.CONNECTED:
            raise EngineStartError(f"engine {self._name} is not connected: {self._error}")
        fut: Future[EngineSnapshot] = Future()

        def ask() -> None:
            self._rid += 1
            self._snaps[self._rid] = fut
            loop.create_task(self._send_frame(encode(SnapReq(rid=self._rid))))

        loop.call_soon_threadsafe(ask)
        try:
            return fut.result(timeout_s)
        except TimeoutError:
            raise EngineStartError(
                f"engine {self._name} sent no snapshot within {timeout_s:g} s"
            ) from None

    def drain(self, max_events: int | None = None) -> list[EventRecord]:
        """Return (and forget) the received events, oldest first."""
        return self._inbox.drain(max_events)

    def set_wakeup(self, callback: Callable[[], None] | None) -> None:
        """Call ``callback`` (from the client thread) when events arrive after a drain."""
        self._inbox.set_wakeup(callback)

    @property
    def dropped(self) -> int:
        """Events dropped because the GUI did not drain in time."""
        return self._inbox.dropped

    def send(self, command: Command) -> Future[CommandResult]:
        """Send ``command``; the future resolves to the engine's answer.

        When the link is down the answer is an immediate :class:`CommandError`; when it drops
        while a command is in flight the answer says the outcome is unknown.
        """
        fut: Future[CommandResult] = Future()
        loop = self._loop
        if loop is None or self._ws is None or self._state is not ClientState.CONNECTED:
            fut.set_result(self._not_connected(command))
            return fut

        def go() -> None:
            if self._ws is None:
                fut.set_result(self._not_connected(command))
                return
            self._rid += 1
            self._pending[self._rid] = (command, fut)
            loop.create_task(self._send_frame(encode_command(self._rid, command)))

        try:
            loop.call_soon_threadsafe(go)
        except RuntimeError:
            fut.set_result(self._not_connected(command))
        return fut

    def _not_connected(self, command: Command) -> CommandError:
        why = f": {self._error}" if self._error else ""
        return CommandError(
            command=command, ts_handled=0, reason=f"not connected to engine {self._name}{why}"
        )

    def close(self, timeout_s: float = 5.0) -> None:
        """Detach from the engine and stop the client thread; idempotent."""
        loop, closing, thread = self._loop, self._closing, self._thread
        if loop is not None and closing is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(closing.set)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
        self._state = ClientState.DISCONNECTED

    # ------------------------------------------------------------------ client thread
    def _thread_main(self, ready: threading.Event) -> None:
        loop = new_event_loop()  # uvloop where installed: less CPU per frame
        asyncio.set_event_loop(loop)
        self._loop = loop
        self._closing = asyncio.Event()
        ready.set()
        try:
            loop.run_until_complete(self._main())
        except Exception as e:  # never leave the GUI waiting on a dead thread
            self._error = f"{type(e).__name__}: {e}"
            log.exception("remote client %s failed", self._name)
        finally:
            self._state = ClientState.DISCONNECTED
            self._first.set()
            self._fail_pending("the engine client stopped")
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _main(self) -> None:
        assert self._closing is not None
        attempt = 0
        while not self._closing.is_set():
            self._state = ClientState.CONNECTING
            try:
                await self._session()
                attempt = 0  # the link worked: start the backoff afresh
            except _Fatal as e:
                self._error = str(e)
                log.error("engine %s: %s", self._name, e)
                self._first.set()
                return
            except (
                OSError,
                ConnectionClosed,
                InvalidHandshake,
                InvalidURI,
                TimeoutError,
                ProtocolError,
                ssl.SSLError,
                EOFError,
            ) as e:
                self._error = _describe(e)
            finally:
                self._ws = None
                if self._state is not ClientState.IDLE:
                    self._state = ClientState.DISCONNECTED
                self._fail_pending(
                    "the link to the engine dropped before it answered; "
                    "the command may have been carried out"
                )
            if self._closing.is_set():
                break
            delay = self.backoff.delay(attempt)
            attempt += 1
            self._error = f"{self._error}; retrying in {delay:.1f} s"
            log.warning("engine %s: %s", self._name, self._error)
            if not self._first.is_set() and attempt >= 1:
                self._first.set()  # start() reports the first failure; retries go on
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), delay)

    async def _session(self) -> None:
        assert self._closing is not None
        scheme = "wss" if self.tls else "ws"
        async with connect(
            f"{scheme}://{self.host}:{self.port}/",
            ssl=client_context() if self.tls else None,
            compression=None,
            max_size=MAX_SERVER_FRAME,
            max_queue=256,
            open_timeout=5.0,
            ping_interval=5.0,
            ping_timeout=15.0,
            proxy=None,
            user_agent_header=None,
        ) as ws:
            start = await self._handshake(ws)
            self._ws = ws
            self._error = ""
            self._state = ClientState.CONNECTED
            self.connects += 1
            self._first.set()
            log.info(
                "engine %s: attached as %s (%s)%s",
                self._name,
                self.user,
                self.role,
                " — resumed" if isinstance(start, Resumed) else "",
            )
            watchdog = asyncio.get_running_loop().create_task(self._watch(ws))
            try:
                async for frame in ws:
                    self._last_rx = asyncio.get_running_loop().time()
                    if isinstance(frame, str):
                        raise ProtocolError("text frame from the engine")
                    self._on_message(decode_server(frame))
            except ConnectionClosed:
                if not self._stalled:
                    raise
            finally:
                watchdog.cancel()
            if self._closing.is_set():
                self._state = ClientState.IDLE
                return
            if self._stalled:
                raise TimeoutError(f"engine silent for {self.stall_timeout_s:g} s")
            raise ConnectionClosedOK(None, None)  # the engine closed the link cleanly

    async def _watch(self, ws: ClientConnection) -> None:
        """Close the link when the client is closed or the engine falls silent."""
        assert self._closing is not None
        loop = asyncio.get_running_loop()
        self._last_rx = loop.time()
        self._stalled = False
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), 0.5)
            if self._closing.is_set():
                await ws.close()
                return
            if loop.time() - self._last_rx > self.stall_timeout_s:
                self._stalled = True
                ws.transport.abort()
                return

    async def _handshake(self, ws: ClientConnection) -> Snapshot | Resumed:
        if self.tls:
            self._check_pin(ws)
        await ws.send(encode(Hello(version=PROTOCOL_VERSION, client="qwconsole")))
        welcome = await self._recv(ws, 10.0)
        if isinstance(welcome, Error):
            raise _Fatal(f"engine refused: {welcome.reason}")
        if not isinstance(welcome, Welcome):
            raise ProtocolError(f"expected welcome, got {type(welcome).__name__}")
        await ws.send(
            encode(Auth(token=self._token, resume_run=self._run_id, resume_seq=self._engine_seq))
        )
        ok = await self._recv(ws, 30.0)  # failed logins are answered slowly on purpose
        if isinstance(ok, Error):
            raise _Fatal(f"login refused: {ok.reason}")
        if not isinstance(ok, AuthOk):
            raise ProtocolError(f"expected auth-ok, got {type(ok).__name__}")
        self.user, self.role, self.engine_id = ok.user, ok.role, welcome.engine_id
        if welcome.run_id != self._run_id:
            self._run_id = welcome.run_id
            self._engine_seq = 0
        start = await self._recv(ws, 30.0)
        if isinstance(start, Snapshot):
            self._apply_snapshot(start)
        elif not isinstance(start, Resumed):
            raise ProtocolError(f"expected snapshot or resumed, got {type(start).__name__}")
        return start

    def _check_pin(self, ws: ClientConnection) -> None:
        assert self.pins is not None
        sslobj = ws.transport.get_extra_info("ssl_object")
        der = sslobj.getpeercert(binary_form=True) if sslobj is not None else None
        if not der:
            raise _Fatal("the engine presented no TLS certificate")
        presented = fingerprint(der)
        if not self.pins.check(self.endpoint, presented):
            raise _Fatal(
                f"the certificate of {self.endpoint} changed (now {presented}); if the engine's "
                f"certificate was renewed on purpose, forget the old pin in {self.pins.path}"
            )

    async def _recv(self, ws: ClientConnection, timeout_s: float) -> object:
        frame = await asyncio.wait_for(ws.recv(), timeout_s)
        if isinstance(frame, str):
            raise ProtocolError("text frame from the engine")
        return decode_server(frame)

    async def _send_frame(self, frame: bytes) -> None:
        ws = self._ws
        if ws is None:
            return
        with contextlib.suppress(ConnectionClosed):
            await ws.send(frame)

    # ------------------------------------------------------------------ stream
    def _on_message(self, msg: object) -> None:
        if isinstance(msg, Events):
            self._on_events(msg)
        elif isinstance(msg, Ack | Nak):
            entry = self._pending.pop(msg.rid, None)
            if entry is None:
                log.warning("engine %s answered unknown request %d", self._name, msg.rid)
                return
            command, fut = entry
            if isinstance(msg, Ack):
                fut.set_result(
                    CommandAck(command=command, ts_handled=msg.ts_handled, detail=msg.detail)
                )
            else:
                reason = msg.reason if msg.code == "refused" else f"{msg.code}: {msg.reason}"
                fut.set_result(
                    CommandError(command=command, ts_handled=msg.ts_handled, reason=reason)
                )
        elif isinstance(msg, Snapshot):
            if msg.rid:
                snap_fut = self._snaps.pop(msg.rid, None)
                if snap_fut is not None and not snap_fut.done():
                    snap_fut.set_result(snapshot_of(msg, self._offset))
            else:
                self._apply_snapshot(msg)
        elif isinstance(msg, Error):
            if msg.code == "shutdown":
                self._error = f"engine stopping: {msg.reason}"
            else:
                log.warning("engine %s: %s: %s", self._name, msg.code, msg.reason)
        # Beat: its arrival alone proves the link lives.

    def _on_events(self, msg: Events) -> None:
        batch = []
        expected, offset = self._engine_seq + 1, self._offset
        for raw in msg.records:
            r = decode_record(raw)
            if r.seq != expected:
                raise ProtocolError(f"engine sent event {r.seq} after {expected - 1}")
            expected += 1
            batch.append(EventRecord(r.seq + offset, r.event))
        if batch:
            self._engine_seq = expected - 1
            self._push_many(batch)

    def _apply_snapshot(self, msg: Snapshot) -> None:
        """Deliver the snapshot's state as events, then continue the stream after it."""
        if self._synced:
            self.resyncs += 1
            log.warning("engine %s: fresh snapshot (%s)", self._name, msg.reason)
        self._synced = True
        snap = snapshot_of(msg)
        # The engine's own state first (views learn it from events, e.g. the status bar).
        head: list[Event] = [
            EngineStateChanged(
                ts_event=snap.ts_snapshot,
                engine_id=snap.engine_id,
                state=snap.state,
                reason="snapshot",
            )
        ]
        if snap.last_heartbeat is not None:
            head.append(snap.last_heartbeat)
        for event in [*head, *snap.state_events]:
            self._local_seq += 1
            self._push(EventRecord(self._local_seq, event), count=False)
        self._engine_seq = msg.seq
        self._offset = self._local_seq - msg.seq

    def _push_many(self, records: list[EventRecord]) -> None:
        self._local_seq = records[-1].seq
        # Beyond max_queue the oldest go; the GUI notices the gap and re-reads a snapshot.
        self._inbox.push_many(records)

    def _push(self, record: EventRecord, *, count: bool = True) -> None:
        if count:
            self._local_seq = record.seq
        self._inbox.push(record)

    def _fail_pending(self, reason: str) -> None:
        pending, self._pending = self._pending, {}
        for command, fut in pending.values():
            if not fut.done():
                fut.set_result(CommandError(command=command, ts_handled=0, reason=reason))
        snaps, self._snaps = self._snaps, {}
        for sf in snaps.values():
            if not sf.done():
                sf.set_exception(EngineStartError(reason))


def _describe(e: BaseException) -> str:
    if isinstance(e, ConnectionRefusedError):
        return "connection refused (is the engine running?)"
    if isinstance(e, ConnectionClosed):
        rcvd = e.rcvd
        if rcvd is not None and rcvd.reason:
            return f"link closed by the engine: {rcvd.reason}"
        return "link lost"
    if isinstance(e, TimeoutError):
        return str(e) or "timed out"
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def token_fingerprint(token: str) -> str:
    """Return a short, non-secret label of ``token`` for logs (never log the token)."""
    return hashlib.sha256(token.encode()).hexdigest()[:8]
