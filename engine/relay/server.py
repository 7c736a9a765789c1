# SPDX-License-Identifier: MIT
"""The relay: market data received once, kept as books, re-served to many subscribers.

Sources call :meth:`Relay.publish` (or ``relay.market.apply``, which is the same) with batches
of ``L2_EVENT_DTYPE`` rows whose ``book`` is the relay's index of the instrument. Each batch is
applied to the relay's :class:`~engine.marketdata.MarketData` (the current books, what a
late joiner gets first), optionally recorded to the tick store
(:class:`~engine.tickstore.recorder.Recorder`), and appended, as bytes, to a bounded cache of
recent rows per instrument (:class:`_Ring`), each row numbered from 1 per instrument.

Every subscriber has a cursor per subscribed instrument. Nothing is queued per subscriber:
what it is owed is what lies between its cursors and the heads.

Fan-out has two paths. After a publish (one flush per loop iteration, however many batches
the sources published in it), every subscriber that keeps up gets the new rows at once: the
``md`` message, and its WebSocket frame, are encoded once for every subscriber at the same
position (the common case: all of them at the heads) and the same bytes are written straight
to each link's transport, with no task switch. A subscriber whose transport does not drain
(over the WebSocket's write limit), or that has a control message, a snapshot or more than one
frame's worth due, is handed to its own sender task, which writes and waits for the link to
drain; its cursors fall behind meanwhile, and when it can take data again an instrument more
than ``max_lag_rows`` behind (or out of the cache) gets its current book
(:class:`~engine.relay.protocol.BookSnap`, reason ``conflated``) instead of the rows it
missed. The relay's memory is the books, the caches (``cache_rows`` per instrument) and, per
subscriber, the transport's write limit plus one frame, however many subscribers stall.

A link whose role is ``status_role`` or higher may ask for :meth:`Relay.status` (sources with
their rows in and last row's age, every link with its instruments, rows sent, lag in rows and
ms, conflations, stalled); the console's Relays panel reads it (:mod:`engine.relay.poller`).

Connections, TLS, tokens, the login throttle and the audit log are the remote server's
(:mod:`engine.remote`).
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import dataclasses
import secrets
import socket
import ssl
import struct
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

from engine.clock import Clock
from engine.fastlog import get_log
from engine.marketdata import MarketData
from engine.relay.protocol import (
    RELAY_VERSION,
    Auth,
    AuthOk,
    Beat,
    BookSnap,
    Catalog,
    CatalogRequest,
    Error,
    Hello,
    InstrumentInfo,
    ProtocolError,
    RelayStatus,
    SourceStatus,
    StatusRequest,
    SubAck,
    Subscribe,
    SubscriberStatus,
    Unsubscribe,
    Updates,
    Welcome,
    decode_client,
    encode,
)
from engine.remote.protocol import CLOSE_AUTH, CLOSE_PROTOCOL, CLOSE_SHUTDOWN, CLOSE_VERSION
from engine.remote.server import AuditLog, LoginThrottle
from engine.remote.tokens import ROLES, Identity, TokenStore
from engine.types import BUY, L2_EVENT_DTYPE, L2_SET, SELL

log = get_log(__name__)

#: Row size on the wire and in the caches, bytes.
ROW = L2_EVENT_DTYPE.itemsize
#: Most row bytes in one ``md`` frame (bounds a frame and a sender's time slice).
MAX_FRAME_BYTES = 1 << 20
#: Seconds a subscriber has for ``hello`` and ``auth``.
HANDSHAKE_TIMEOUT_S = 10.0
#: Seconds between heartbeats on an otherwise quiet link.
BEAT_INTERVAL_S = 1.0
#: Malformed frames tolerated (each answered with an error) before the link is closed.
MAX_MALFORMED = 8
#: Answers (status, catalog, sub-ok, errors) a link may leave unread before it is closed.
MAX_UNANSWERED = 64
#: Kernel send buffer of each subscriber's socket, bytes: what a stalled subscriber can hold
#: of the relay's memory beyond the one frame in flight.
SEND_BUFFER = 256 << 10
#: Largest frame a subscriber may send.
MAX_SUBSCRIBER_FRAME = 1 << 20
#: A subscriber whose oldest unsent row is this old (ms) is reported ``stalled``.
STALLED_MS = 1000.0

Rows = npt.NDArray[np.void]

_OPEN = State.OPEN


def ws_binary_frame(payload: bytes) -> bytes:
    """Return ``payload`` as one unmasked, unfragmented WebSocket binary frame (server side).

    The relay encodes a frame once and writes the same bytes to every subscriber at the same
    position (RFC 6455 section 5.2: a server never masks).
    """
    n = len(payload)
    if n < 126:
        head = bytes((0x82, n))
    elif n < 65536:
        head = struct.pack("!BBH", 0x82, 126, n)
    else:
        head = struct.pack("!BBQ", 0x82, 127, n)
    return head + payload


class _Ring:
    """The last ``capacity`` rows (at least) of one instrument, as byte chunks, numbered.

    Each chunk keeps the relay-clock time it was published at (for the lag in ms).
    """

    __slots__ = ("capacity", "chunks", "head", "rows")

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self.chunks: deque[tuple[int, bytes, int]] = deque()  # (first seq, rows, published ns)
        self.head = 0  # last row number
        self.rows = 0  # rows held

    @property
    def first(self) -> int:
        """Return the oldest row number held (``head + 1`` when empty)."""
        return self.chunks[0][0] if self.chunks else self.head + 1

    def append(self, data: bytes, ts: int = 0) -> None:
        n = len(data) // ROW
        self.chunks.append((self.head + 1, data, ts))
        self.head += n
        self.rows += n
        chunks = self.chunks
        while self.rows - len(chunks[0][1]) // ROW >= self.capacity:
            self.rows -= len(chunks.popleft()[1]) // ROW

    def since(self, after: int, budget: int) -> bytes:
        """Return rows ``after + 1 …`` (at most ``budget`` bytes, whole rows); ``after`` held."""
        parts: list[bytes] = []
        for first, data, _ in reversed(self.chunks):
            if first <= after + 1:
                parts.append(data[(after + 1 - first) * ROW :])
                break
            parts.append(data)
        parts.reverse()
        out = b"".join(parts)
        return out[: budget - budget % ROW] if len(out) > budget else out

    def published_ns(self, seq: int) -> int:
        """Return when row ``seq`` was published (the oldest chunk's time if no longer held)."""
        chunks = self.chunks
        if not chunks:
            return 0
        i = bisect.bisect_right(chunks, seq, key=lambda c: c[0]) - 1  # O(log n) probes
        return chunks[max(i, 0)][2]


@dataclasses.dataclass(eq=False)
class _Subscriber:
    """One connected, authenticated subscriber."""

    ws: ServerConnection
    who: Identity
    peer: str
    cursors: dict[int, int] = dataclasses.field(default_factory=dict)  # book -> last row sent
    wake: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    control: deque[bytes] = dataclasses.field(default_factory=deque)  # framed messages
    #: Its sender task owns the link (control, snapshots, catch-up): the flush skips it.
    busy: bool = False
    #: Something was written since the last heartbeat tick.
    wrote: bool = False
    snapshots_due: dict[int, str] = dataclasses.field(default_factory=dict)  # book -> reason
    resume_run: str = ""  # the relay run the subscriber's row numbers belong to
    client: str = ""  # the name it gave in hello
    connected_ns: int = 0
    conflations: int = 0
    rows_sent: int = 0
    frames_sent: int = 0


class SourceInfo(Protocol):
    """What the relay reports of a source (:meth:`Relay.add_source`)."""

    name: str
    kind: str

    @property
    def symbols(self) -> Sequence[str]:
        """Return the instruments it feeds."""
        ...

    def state(self) -> str:
        """Return the source's state in a word or two (``up``, ``down: <why>``, …)."""
        ...


class Relay:
    """Serve the books of ``symbols`` to subscribers (module docstring).

    Parameters
    ----------
    relay_id : str
        Name shown to subscribers.
    market : MarketData
        The relay's books (its ``apply`` is replaced by :meth:`publish`: whoever applies to it
        publishes).
    clock : Clock
        Time source.
    tokens : TokenStore
        Who may subscribe (any role may).
    host, port : str, int
        Where to listen (port 0: any free port, see :attr:`port`).
    ssl_context : ssl.SSLContext | None
        TLS; ``None`` serves plain WebSocket (loopback only).
    audit : AuditLog | None
        Logins, refused logins, subscriptions and disconnects.
    cache_rows : int
        Recent rows kept per instrument, for subscribers that resume.
    max_lag_rows : int
        Rows of one instrument a subscriber may lag behind before it gets the current book
        instead (conflation); at most ``cache_rows``.
    snapshot_depth : int
        Levels per side in a snapshot (0: every level of the book's window).
    status_role : str
        Least role whose token may ask for :class:`~engine.relay.protocol.RelayStatus`
        (``viewer``: any subscriber may; ``admin``: only admins).
    sizes : Mapping[str, tuple[str, str]] | None
        Tick and lot size (decimal strings) of each instrument, for the
        :class:`~engine.relay.protocol.Catalog` (charts need them: rows carry ticks and lots).
    """

    def __init__(
        self,
        relay_id: str,
        market: MarketData,
        clock: Clock,
        tokens: TokenStore,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        ssl_context: ssl.SSLContext | None = None,
        audit: AuditLog | None = None,
        throttle: LoginThrottle | None = None,
        cache_rows: int = 100_000,
        max_lag_rows: int = 20_000,
        snapshot_depth: int = 0,
        status_role: str = "viewer",
        sizes: Mapping[str, tuple[str, str]] | None = None,
    ) -> None:
        if cache_rows < 1:
            raise ValueError(f"cache_rows: must be >= 1, got {cache_rows}")
        if not 1 <= max_lag_rows <= cache_rows:
            raise ValueError(
                f"max_lag_rows: must be in 1..cache_rows ({cache_rows}), got {max_lag_rows}"
            )
        if status_role not in ROLES:
            raise ValueError(f"status_role: must be one of {', '.join(ROLES)}, got {status_role!r}")
        self.relay_id = relay_id
        self.market = market
        self.clock = clock
        self.tokens = tokens
        self.host = host
        self._port = port
        self.ssl_context = ssl_context
        self.audit = audit or AuditLog(None, clock)
        self.throttle = throttle or LoginThrottle(clock)
        self.max_lag_rows = max_lag_rows
        self.snapshot_depth = snapshot_depth or market.books.n_levels
        self.status_role = status_role
        sizes = sizes or {}
        self.catalog = [InstrumentInfo(s, *sizes.get(s, ("", ""))) for s in market.symbols]
        #: Names this relay run: row numbers restart with every run.
        self.run_id = secrets.token_hex(8)
        self.rings = [_Ring(cache_rows) for _ in market.symbols]
        self._watchers: list[set[_Subscriber]] = [set() for _ in market.symbols]
        self._subscribers: set[_Subscriber] = set()
        # Shared encodings: cursors -> (WebSocket frame, rows in it).
        self._frames: dict[tuple[tuple[int, int], ...], tuple[bytes, int]] = {}
        self._flush_due = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: Server | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._apply_books = market.apply
        setattr(market, "apply", self.publish)  # noqa: B010 (an instance attribute on purpose)
        #: Rows published since start.
        self.rows_in = 0
        #: Snapshots sent instead of rows to subscribers that lagged.
        self.conflations = 0
        self._sources: list[SourceInfo] = []
        n = len(market.symbols)
        self._book_rows = [0] * n  # rows published per instrument
        self._book_last_ns = [0] * n  # when its last row was published
        self._started_ns = 0

    @property
    def port(self) -> int:
        """Return the port listened on (after :meth:`open`)."""
        return self._port

    @property
    def subscribers(self) -> int:
        """Return how many subscribers are connected."""
        return len(self._subscribers)

    def cached_bytes(self) -> int:
        """Return the bytes held in the caches of recent rows."""
        return sum(r.rows for r in self.rings) * ROW

    def stats(self) -> dict[str, Any]:
        """Return counters for logs and status displays."""
        return {
            "relay": self.relay_id,
            "subscribers": len(self._subscribers),
            "rows_in": self.rows_in,
            "conflations": self.conflations,
            "cached_rows": sum(r.rows for r in self.rings),
            "lag_rows": {
                s.peer: max((self.rings[b].head - c for b, c in s.cursors.items()), default=0)
                for s in self._subscribers
            },
        }

    def add_source(self, source: SourceInfo) -> None:
        """Report ``source`` in :meth:`status` (its rows are those of its ``symbols``)."""
        unknown = [s for s in source.symbols if s not in self.market.index]
        if unknown:
            raise ValueError(f"source {source.name}: the relay does not carry {unknown}")
        self._sources.append(source)

    def status(self, rid: int = 0) -> RelayStatus:
        """Return the relay, its sources and its connected links now (module docstring)."""
        now = self.clock.now_ns()
        index, symbols = self.market.index, self.market.symbols
        sources = []
        for src in self._sources:
            books = [index[s] for s in src.symbols]
            last = max((self._book_last_ns[b] for b in books), default=0)
            sources.append(
                SourceStatus(
                    name=src.name,
                    kind=src.kind,
                    symbols=list(src.symbols),
                    rows_in=sum(self._book_rows[b] for b in books),
                    last_row_age_ms=(now - last) / 1e6 if last else -1.0,
                    state=src.state(),
                )
            )
        subs = []
        for s in sorted(self._subscribers, key=lambda x: x.connected_ns):
            lag_rows, lag_ms = 0, 0.0
            for b, c in s.cursors.items():
                ring = self.rings[b]
                if ring.head > c:
                    lag_rows = max(lag_rows, ring.head - c)
                    lag_ms = max(lag_ms, (now - ring.published_ns(c + 1)) / 1e6)
            subs.append(
                SubscriberStatus(
                    peer=s.peer,
                    user=s.who.name,
                    role=s.who.role,
                    client=s.client,
                    symbols=[symbols[b] for b in sorted(s.cursors)],
                    rows_sent=s.rows_sent,
                    lag_rows=lag_rows,
                    lag_ms=lag_ms,
                    conflations=s.conflations,
                    stalled=lag_ms >= STALLED_MS,
                    connected_s=(now - s.connected_ns) / 1e9,
                )
            )
        cached = sum(r.rows for r in self.rings)
        capacity = self.rings[0].capacity if self.rings else 0
        return RelayStatus(
            rid=rid,
            relay_id=self.relay_id,
            run_id=self.run_id,
            ts=now,
            uptime_s=(now - self._started_ns) / 1e9 if self._started_ns else 0.0,
            instruments=len(symbols),
            rows_in=self.rows_in,
            conflations=self.conflations,
            cached_rows=cached,
            cached_bytes=cached * ROW,
            cache_rows=capacity,
            max_lag_rows=self.max_lag_rows,
            sources=sources,
            subscribers=subs,
        )

    def _status_frame(self, s: _Subscriber, rid: int) -> bytes:
        if self.may_see_status(s.who.role):
            return encode(self.status(rid))
        why = (
            f"role {s.who.role} may not see the relay's status; it needs "
            f"{self.status_role} or higher (relay.toml status_role)"
        )
        return encode(Error(code="forbidden", reason=why))

    def may_see_status(self, role: str) -> bool:
        """Return whether a token of ``role`` may ask for the relay's status."""
        return role in ROLES and ROLES.index(role) >= ROLES.index(self.status_role)

    # ------------------------------------------------------------------ source side
    def publish(self, rows: Rows) -> int:
        """Apply ``rows`` (``L2_EVENT_DTYPE``, ``book`` = the relay's index) and serve them.

        Returns the rows applied. Raises ``ValueError`` (naming row and field) for bad rows,
        before anything is applied or served.
        """
        n = rows.shape[0]
        if n == 0:
            return 0
        applied = self._apply_books(rows)
        self.rows_in += n
        now = self.clock.now_ns()
        books = rows["book"]
        b0 = int(books[0])
        if n == 1 or not (books != b0).any():
            self._append(b0, rows.tobytes(), now)
        else:  # one run per instrument, rows in their order within it
            order = np.argsort(books, kind="stable")
            ordered = rows[order]
            keys = books[order]
            cuts = np.flatnonzero(keys[1:] != keys[:-1]) + 1
            data = ordered.tobytes()
            starts = [0, *cuts.tolist()]
            ends = [*cuts.tolist(), n]
            for i, j in zip(starts, ends, strict=True):
                self._append(int(keys[i]), data[i * ROW : j * ROW], now)
        self._frames.clear()
        if not self._flush_due and self._subscribers:
            self._flush_due = True
            loop = self._loop
            if loop is None:
                loop = self._loop = asyncio.get_running_loop()
            loop.call_soon(self._flush)
        return int(applied)

    def _append(self, book: int, data: bytes, now: int) -> None:
        self.rings[book].append(data, now)
        self._book_rows[book] += len(data) // ROW
        self._book_last_ns[book] = now

    def _flush(self) -> None:
        """Write the new rows to every subscriber that keeps up (module docstring)."""
        self._flush_due = False
        for s in self._subscribers:
            if s.busy:
                continue
            if s.control or s.snapshots_due or s.ws.paused:
                self._kick(s)
                continue
            out = self._frame(s)
            if out is None:
                continue
            frame, n, complete = out
            if not self._write(s, frame):
                continue
            s.rows_sent += n
            s.frames_sent += 1
            if not complete:
                self._kick(s)

    @staticmethod
    def _kick(s: _Subscriber) -> None:
        """Hand ``s`` to its sender task."""
        s.busy = True
        s.wake.set()

    @staticmethod
    def _write(s: _Subscriber, frame: bytes) -> bool:
        """Write one framed message on ``s``'s link now; False if the link is closing."""
        ws = s.ws
        if ws.protocol.state is not _OPEN or ws.transport.is_closing():
            return False
        ws.transport.write(frame)
        s.wrote = True
        return True

    def book_rows(self, book: int) -> bytes:
        """Return the book ``book`` holds now as ``L2_SET`` rows (bids best first, then asks)."""
        bids, asks = self.market.books.top(book, self.snapshot_depth)
        out = np.zeros(bids.shape[0] + asks.shape[0], L2_EVENT_DTYPE)
        nb = bids.shape[0]
        out["px"][:nb], out["qty"][:nb] = bids[:, 0], bids[:, 1]
        out["px"][nb:], out["qty"][nb:] = asks[:, 0], asks[:, 1]
        out["side"][:nb], out["side"][nb:] = BUY, SELL
        out["kind"] = L2_SET
        out["book"] = book
        out["ts"] = self.clock.now_ns()
        return out.tobytes()

    def _snapshot(self, book: int, reason: str) -> tuple[int, bytes]:
        # Taken and encoded without an await in between: exact at its row number.
        head = self.rings[book].head
        frame = encode(
            BookSnap(
                symbol=self.market.symbols[book],
                seq=head,
                ts=self.clock.now_ns(),
                reason=reason,
                rows=self.book_rows(book),
            )
        )
        return head, ws_binary_frame(frame)

    # ------------------------------------------------------------------ lifecycle
    async def open(self) -> None:
        """Start listening; :attr:`port` then holds the real port."""
        self._server = await serve(
            self._handle,
            self.host,
            self._port,
            ssl=self.ssl_context,
            compression=None,
            max_size=MAX_SUBSCRIBER_FRAME,
            max_queue=64,
            ping_interval=5.0,
            ping_timeout=15.0,
            open_timeout=HANDSHAKE_TIMEOUT_S,
            server_header=None,
        )
        sock = next(iter(self._server.sockets))
        self._port = int(sock.getsockname()[1])
        self._started_ns = self.clock.now_ns()
        self._loop = asyncio.get_running_loop()
        self._tasks.append(self._loop.create_task(self._flush_audit()))
        self._tasks.append(self._loop.create_task(self._beats()))
        log.info(
            "relay %s listening on %s:%d (%s)",
            self.relay_id,
            self.host,
            self._port,
            "TLS" if self.ssl_context else "no TLS, loopback only",
        )

    async def _flush_audit(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            self.audit.flush_due()

    async def _beats(self) -> None:
        """Send a heartbeat to every link that got nothing in the last interval."""
        while True:
            await asyncio.sleep(BEAT_INTERVAL_S)
            head = sum(r.head for r in self.rings)
            for s in list(self._subscribers):
                if not s.wrote and not s.control:  # at most one beat waits
                    s.control.append(
                        ws_binary_frame(encode(Beat(ts=self.clock.now_ns(), head=head)))
                    )
                    self._kick(s)
                s.wrote = False

    async def close(self) -> None:
        """Tell subscribers, close every link, stop listening."""
        for s in list(self._subscribers):
            s.control.append(
                ws_binary_frame(encode(Error(code="shutdown", reason="the relay is stopping")))
            )
            self._kick(s)
        await asyncio.sleep(0)
        if self._server is not None:
            self._server.close(close_connections=False)
            for s in list(self._subscribers):
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(s.ws.close(CLOSE_SHUTDOWN, "relay stopping"), 2.0)
            for s in list(self._subscribers):  # stalled: its close could not get through
                s.ws.transport.abort()
            await self._server.wait_closed()
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.audit.close()

    # ------------------------------------------------------------------ one subscriber
    async def _handle(self, ws: ServerConnection) -> None:
        addr = ws.remote_address
        peer = f"{addr[0]}:{addr[1]}" if addr else "?"
        host = str(addr[0]) if addr else "?"
        sock = ws.transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        try:
            sub = await self._handshake(ws, peer, host)
        except (ConnectionClosed, TimeoutError):
            return
        if sub is None:
            return
        self._subscribers.add(sub)
        sender = asyncio.get_running_loop().create_task(self._send_loop(sub))
        try:
            await self._read_loop(sub)
        except ConnectionClosed:
            pass
        finally:
            self._subscribers.discard(sub)
            for w in self._watchers:
                w.discard(sub)
            sender.cancel()
            await asyncio.gather(sender, return_exceptions=True)
            self.audit.write(
                event="disconnect",
                user=sub.who.name,
                peer=peer,
                conflations=sub.conflations,
                rows=sub.rows_sent,
            )
            log.info("subscriber %s (%s) left", sub.who.name, peer)

    async def _recv(self, ws: ServerConnection) -> Any:
        frame = await asyncio.wait_for(ws.recv(), HANDSHAKE_TIMEOUT_S)
        if isinstance(frame, str):
            raise ProtocolError("text frames are not part of the protocol; send binary frames")
        return decode_client(frame)

    async def _refuse(self, ws: ServerConnection, code: int, error: Error) -> None:
        with contextlib.suppress(ConnectionClosed):
            await ws.send(encode(error))
            await ws.close(code, error.reason[:120])

    async def _handshake(self, ws: ServerConnection, peer: str, host: str) -> _Subscriber | None:
        try:
            hello = await self._recv(ws)
            if not isinstance(hello, Hello):
                raise ProtocolError(f"expected hello first, got {type(hello).__name__.lower()}")
            if hello.version != RELAY_VERSION:
                await self._refuse(
                    ws,
                    CLOSE_VERSION,
                    Error(
                        code="version",
                        reason=(
                            f"relay protocol version {hello.version} is not supported; this relay "
                            f"speaks version {RELAY_VERSION}"
                        ),
                    ),
                )
                return None
            await ws.send(
                encode(Welcome(version=RELAY_VERSION, engine_id=self.relay_id, run_id=self.run_id))
            )
            auth = await self._recv(ws)
            if not isinstance(auth, Auth):
                raise ProtocolError(f"expected auth, got {type(auth).__name__.lower()}")
        except ProtocolError as e:
            await self._refuse(ws, CLOSE_PROTOCOL, Error(code="malformed", reason=str(e)))
            return None
        pause = self.throttle.pause(host)
        if pause:
            await asyncio.sleep(pause)
        who = self.tokens.verify(auth.token, self.clock.now_ns())
        if not isinstance(who, Identity):
            delay = self.throttle.fail(host)
            self.audit.write(event="login-refused", peer=peer, client=hello.client, reason=who)
            log.warning("subscriber login from %s refused: %s", peer, who)
            await asyncio.sleep(delay)
            await self._refuse(ws, CLOSE_AUTH, Error(code="auth", reason=who))
            return None
        self.audit.write(
            event="login", user=who.name, role=who.role, peer=peer, client=hello.client
        )
        commands = ["subscribe", "catalog"]
        if self.may_see_status(who.role):
            commands.append("status")
        await ws.send(encode(AuthOk(user=who.name, role=who.role, commands=commands)))
        return _Subscriber(
            ws=ws,
            who=who,
            peer=peer,
            resume_run=auth.resume_run,
            client=hello.client,
            connected_ns=self.clock.now_ns(),
        )

    def _subscribe(self, s: _Subscriber, msg: Subscribe) -> None:
        resumed: list[str] = []
        snaps: list[str] = []
        unknown: list[str] = []
        same_run = s.resume_run == self.run_id
        for i, symbol in enumerate(msg.symbols):
            b = self.market.index.get(symbol)
            if b is None:
                unknown.append(symbol)
                continue
            ring = self.rings[b]
            want = msg.resume[i] if i < len(msg.resume) else 0
            if (
                same_run
                and want > 0
                and ring.first - 1 <= want <= ring.head
                and ring.head - want <= self.max_lag_rows
            ):
                s.cursors[b] = want
                s.snapshots_due.pop(b, None)
                resumed.append(symbol)
            else:
                s.cursors[b] = ring.head
                s.snapshots_due[b] = "resume-not-possible" if want else "subscribed"
                snaps.append(symbol)
            self._watchers[b].add(s)
        s.control.append(
            ws_binary_frame(
                encode(SubAck(rid=msg.rid, resumed=resumed, snapshots=snaps, unknown=unknown))
            )
        )
        self.audit.write(
            event="subscribe",
            user=s.who.name,
            role=s.who.role,
            peer=s.peer,
            symbols=msg.symbols,
            resumed=resumed,
            unknown=unknown,
        )

    def _unsubscribe(self, s: _Subscriber, msg: Unsubscribe) -> None:
        for symbol in msg.symbols:
            b = self.market.index.get(symbol)
            if b is not None:
                s.cursors.pop(b, None)
                s.snapshots_due.pop(b, None)
                self._watchers[b].discard(s)
        s.control.append(
            ws_binary_frame(encode(SubAck(rid=msg.rid, resumed=[], snapshots=[], unknown=[])))
        )

    def _frame(self, s: _Subscriber) -> tuple[bytes, int, bool] | None:
        """Return the next ``md`` frame for ``s``, its rows and whether it reaches the heads.

        Moves ``s``'s cursors past the rows in it; ``None`` when ``s`` is at the heads.
        """
        rings = self.rings
        key = tuple([(b, c) for b, c in s.cursors.items() if rings[b].head > c])
        if not key:
            return None
        cached = self._frames.get(key)
        if cached is not None:
            for b, _ in key:
                s.cursors[b] = rings[b].head
            return cached[0], cached[1], True
        items: list[tuple[str, int, bytes]] = []
        budget = MAX_FRAME_BYTES
        complete = True
        for b, c in key:
            if budget <= 0:
                complete = False
                break
            data = rings[b].since(c, budget)
            budget -= len(data)
            items.append((self.market.symbols[b], c + 1, data))
            s.cursors[b] = c + len(data) // ROW
            if s.cursors[b] != rings[b].head:
                complete = False
        n = (MAX_FRAME_BYTES - budget) // ROW
        frame = ws_binary_frame(encode(Updates(items=items, ts_sent=self.clock.now_ns())))
        if complete:
            self._frames[key] = (frame, n)
        return frame, n, complete

    async def _send_loop(self, s: _Subscriber) -> None:
        """Serve ``s`` while the flush cannot: control, snapshots, catch-up, a slow link."""
        with contextlib.suppress(ConnectionClosed, OSError):  # the link was lost
            await self._serve_slow(s)

    async def _serve_slow(self, s: _Subscriber) -> None:
        ws, rings = s.ws, self.rings
        while True:
            await s.wake.wait()
            s.wake.clear()
            while True:
                if ws.paused:
                    await ws.drain()  # returns when the link drains, or is lost
                    continue
                if s.control:
                    if not self._write(s, s.control.popleft()):
                        return
                    continue
                # Conflation: an instrument too far behind (or out of the cache) gets its
                # current book instead of the rows it missed.
                for b, c in s.cursors.items():
                    ring = rings[b]
                    if b not in s.snapshots_due and (
                        ring.head - c > self.max_lag_rows or c < ring.first - 1
                    ):
                        s.snapshots_due[b] = "conflated"
                        s.conflations += 1
                        self.conflations += 1
                if s.snapshots_due:
                    b, reason = s.snapshots_due.popitem()
                    s.cursors[b], frame = self._snapshot(b, reason)
                    if not self._write(s, frame):
                        return
                    continue
                out = self._frame(s)
                if out is None:
                    break
                frame, n, _ = out
                if not self._write(s, frame):
                    return
                s.rows_sent += n
                s.frames_sent += 1
                await asyncio.sleep(0)  # a long catch-up shares the loop
            s.busy = False

    async def _read_loop(self, s: _Subscriber) -> None:
        malformed = 0
        async for frame in s.ws:
            if len(s.control) >= MAX_UNANSWERED:
                # It asks and does not read the answers: its link would hold ever more memory.
                await s.ws.close(CLOSE_PROTOCOL, "too many answers unread")
                return
            try:
                if isinstance(frame, str):
                    raise ProtocolError("text frames are not part of the protocol")
                msg = decode_client(frame)
                if isinstance(msg, Subscribe):
                    self._subscribe(s, msg)
                elif isinstance(msg, Unsubscribe):
                    self._unsubscribe(s, msg)
                elif isinstance(msg, CatalogRequest):
                    catalog = Catalog(rid=msg.rid, relay_id=self.relay_id, instruments=self.catalog)
                    s.control.append(ws_binary_frame(encode(catalog)))
                elif isinstance(msg, StatusRequest):
                    s.control.append(ws_binary_frame(self._status_frame(s, msg.rid)))
                elif isinstance(msg, Beat):
                    continue
                else:
                    raise ProtocolError(f"{type(msg).__name__.lower()} is only valid at the start")
            except ProtocolError as e:
                malformed += 1
                s.control.append(ws_binary_frame(encode(Error(code="malformed", reason=str(e)))))
                if malformed >= MAX_MALFORMED:
                    self._kick(s)
                    await asyncio.sleep(0.05)
                    await s.ws.close(CLOSE_PROTOCOL, "too many malformed frames")
                    return
            self._kick(s)
