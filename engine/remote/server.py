# SPDX-License-Identifier: MIT
"""The remote server: one engine, many consoles, over WebSocket (``docs/remote-protocol.md``).

It runs on the engine's own asyncio loop. The engine's sink puts every event into a ring of
recent records shared by all consoles (each encoded once, when first sent); each console has a
cursor into that ring and a sender task that writes what lies between its cursor and the head.
The engine never waits for a console: a console whose cursor falls more than ``client_queue``
records behind (or out of the ring) gets a fresh snapshot instead of the records it missed,
and a console that reconnects within the ring resumes right after the last record it saw.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import secrets
import ssl
from collections import deque
from pathlib import Path
from typing import Any

import msgspec
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from engine.clock import Clock
from engine.commands import Command, CommandAck, CommandError, SetKillSwitch, SetRiskLimits
from engine.core import Engine
from engine.events import EventRecord
from engine.fastlog import get_log
from engine.remote.protocol import (
    CLOSE_AUTH,
    CLOSE_PROTOCOL,
    CLOSE_SHUTDOWN,
    CLOSE_VERSION,
    MAX_CLIENT_FRAME,
    PROTOCOL_VERSION,
    Ack,
    Auth,
    AuthOk,
    Beat,
    Cmd,
    Error,
    Events,
    Hello,
    Nak,
    ProtocolError,
    Resumed,
    SnapReq,
    Welcome,
    decode_client,
    decode_command,
    encode,
    encode_record,
    snapshot_message,
)
from engine.remote.tokens import ROLE_COMMANDS, ROLES, Identity, TokenStore, may_send, refusal

log = get_log(__name__)

#: Most records in one frame (bounds a frame's size and a sender's time slice).
MAX_BATCH = 2048
#: Seconds a console has for ``hello`` and ``auth``.
HANDSHAKE_TIMEOUT_S = 10.0
#: Seconds between heartbeats on an otherwise quiet link.
BEAT_INTERVAL_S = 1.0
#: Malformed frames tolerated (each answered with an error) before the link is closed.
MAX_MALFORMED = 8


class LoginThrottle:
    """Slow down failed logins per source address, without ever locking a valid token out.

    Failures are counted per address over ``window_s``; a success does not clear them (a
    valid login must not reset the count of someone else's guesses from the same address).
    The n-th failure in the window is answered after ``base_s * 2**(n-1)`` seconds (at most
    ``max_delay_s``). From ``busy_after`` failures on, every login from that address waits
    ``busy_delay_s`` before its token is checked, and then a valid token is accepted: another
    client's failures cost a valid token that short wait, never a refusal (the old lockout let
    50 wrong tokens lock the admin out for 5 minutes). Tokens carry 256 random bits, so the
    throttle's job is to make guessing cost the guesser and the log little, not to keep a
    secret that guessing cannot find.
    """

    #: Addresses remembered at most (the oldest are forgotten first).
    MAX_HOSTS = 10_000

    def __init__(
        self,
        clock: Clock,
        *,
        base_s: float = 0.25,
        max_delay_s: float = 8.0,
        window_s: float = 300.0,
        busy_after: int = 20,
        busy_delay_s: float = 0.5,
    ) -> None:
        self.clock = clock
        self.base_s = base_s
        self.max_delay_s = max_delay_s
        self.window_ns = int(window_s * 1e9)
        self.busy_after = busy_after
        self.busy_delay_s = busy_delay_s
        self._failures: dict[str, deque[int]] = {}

    def _recent(self, host: str) -> deque[int]:
        q = self._failures.pop(host, None)
        if q is None:
            q = deque()
            if len(self._failures) >= self.MAX_HOSTS:
                del self._failures[next(iter(self._failures))]
        self._failures[host] = q  # most recently seen last
        horizon = self.clock.monotonic_ns() - self.window_ns
        while q and q[0] <= horizon:
            q.popleft()
        return q

    def failures(self, host: str) -> int:
        """Return the failed logins of ``host`` within the window."""
        return len(self._recent(host))

    def pause(self, host: str) -> float:
        """Return how long a login from ``host`` waits before its token is checked, seconds."""
        return self.busy_delay_s if self.failures(host) >= self.busy_after else 0.0

    def fail(self, host: str) -> float:
        """Count a failure of ``host``; return how long to wait before answering, seconds."""
        q = self._recent(host)
        q.append(self.clock.monotonic_ns())
        return float(min(self.max_delay_s, self.base_s * 2 ** (len(q) - 1)))


@dataclasses.dataclass(slots=True)
class _Repeats:
    """Records of one kind folded into the audit line that ends their window."""

    event: str  # what is repeated
    fields: dict[str, Any]  # the other fields that make records "the same"
    opened_ns: int  # monotonic: the window started with a record written in full
    count: int = 0
    first_ns: int = 0
    last_ns: int = 0
    reasons: dict[str, int] = dataclasses.field(default_factory=dict)


class AuditLog:
    """Append one JSON line per login and per command, with who sent it and the outcome.

    Refusals are folded: the first refused login of an address, or the first refused,
    forbidden or invalid command of one user of one kind, is written in full; the same again
    within ``repeat_window_s`` is only counted, and one ``"event": "repeated"`` line with the
    count, the first and last times and the reasons (with their counts) closes the window. A
    trader whose orders the risk checks refuse thousands of times a second thus writes a few
    lines a window instead of 114 MB a minute. Accepted commands and logins are always written
    one by one.
    """

    #: Distinct reasons a folded line lists with their counts (the rest are counted as other).
    MAX_REASONS = 8

    def __init__(self, path: Path | None, clock: Clock, *, repeat_window_s: float = 10.0) -> None:
        self.path = path
        self.clock = clock
        self.repeat_window_ns = int(repeat_window_s * 1e9)
        self._file = None
        self._repeats: dict[tuple[Any, ...], _Repeats] = {}
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("a", encoding="utf-8", buffering=1)

    @staticmethod
    def _fold_key(fields: dict[str, Any]) -> tuple[Any, ...] | None:
        event = fields.get("event")
        host = str(fields.get("peer", "")).rpartition(":")[0]
        if event == "login-refused":
            return (event, host)
        if event == "command" and fields.get("result") != "ack":
            return (event, host, fields.get("user"), fields.get("kind"), fields.get("result"))
        return None

    def write(self, **fields: Any) -> None:
        """Write one record (a JSON object with ``ts_ns`` first), or count it as a repeat."""
        if self._file is None:
            return
        now = self.clock.monotonic_ns()
        self.flush_due(now)
        key = self._fold_key(fields)
        if key is not None:
            seen = self._repeats.get(key)
            if seen is not None:
                ts = self.clock.now_ns()
                seen.count += 1
                seen.first_ns = seen.first_ns or ts
                seen.last_ns = ts
                reason = str(fields.get("reason") or fields.get("detail") or "")
                if reason in seen.reasons or len(seen.reasons) < self.MAX_REASONS:
                    seen.reasons[reason] = seen.reasons.get(reason, 0) + 1
                else:
                    seen.reasons["(other reasons)"] = seen.reasons.get("(other reasons)", 0) + 1
                return
            same: dict[str, Any] = {
                k: fields[k] for k in ("user", "role", "kind", "result") if k in fields
            }
            same["peer"] = key[1]
            self._repeats[key] = _Repeats(str(fields.get("event")), same, now)
        self._line(fields)

    def _line(self, fields: dict[str, Any]) -> None:
        assert self._file is not None
        line = json.dumps({"ts_ns": self.clock.now_ns(), **fields}, default=str)
        self._file.write(line + "\n")

    def flush_due(self, now_ns: int | None = None, *, every: bool = False) -> None:
        """Write the folded line of every window that has ended (``every``: of all windows)."""
        now = self.clock.monotonic_ns() if now_ns is None else now_ns
        for key in [
            k
            for k, r in self._repeats.items()
            if every or now - r.opened_ns >= self.repeat_window_ns
        ]:
            r = self._repeats.pop(key)
            if r.count and self._file is not None:
                self._line({"event": "repeated", "of": r.event, **r.fields, "count": r.count,
                            "first_ns": r.first_ns, "last_ns": r.last_ns,
                            "reasons": r.reasons})  # fmt: skip

    def close(self) -> None:
        """Write what is folded and close the file."""
        self.flush_due(every=True)
        if self._file is not None:
            self._file.close()
            self._file = None


class _Ring:
    """The last ``capacity`` records, addressed by sequence number.

    A record is encoded the first time a console needs it, then kept encoded for the others:
    an engine nobody watches pays nothing for encoding.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self._items: list[EventRecord | bytes | None] = [None] * self.capacity
        self.head = 0  # last sequence number stored

    @property
    def first(self) -> int:
        """Return the oldest sequence number still held."""
        return max(1, self.head - self.capacity + 1)

    def append(self, record: EventRecord) -> None:
        self._items[record.seq % self.capacity] = record
        self.head = record.seq

    def slice(self, after: int, count: int) -> list[msgspec.Raw]:
        cap, items = self.capacity, self._items
        out = []
        for s in range(after + 1, after + count + 1):
            item = items[s % cap]
            if isinstance(item, EventRecord):
                item = items[s % cap] = encode_record(item.seq, item.event)
            assert item is not None
            out.append(msgspec.Raw(item))
        return out


@dataclasses.dataclass(eq=False)
class _Console:
    """One connected, authenticated console."""

    ws: ServerConnection
    who: Identity
    peer: str
    cursor: int  # last sequence number sent
    wake: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    control: deque[bytes | int] = dataclasses.field(default_factory=deque)  # frames / snap rids
    resyncs: int = 0
    sent: int = 0


class RemoteServer:
    """Serve ``engine`` to consoles over WebSocket, with token authentication and roles.

    Create it before the engine runs (it numbers nothing itself: it keeps the engine's own
    sequence numbers), then ``await open()`` on the engine loop and ``await close()`` at the
    end.

    Parameters
    ----------
    engine : Engine
        The engine to serve.
    tokens : TokenStore
        Who may connect, with which role.
    host, port : str, int
        Where to listen (port 0: any free port, see :attr:`port`).
    ssl_context : ssl.SSLContext | None
        TLS; ``None`` serves plain WebSocket (loopback only).
    audit : AuditLog | None
        Where logins and commands are recorded.
    client_queue : int
        Records a console may lag behind before it is resynchronised with a snapshot.
    history : int
        Records kept for consoles that reconnect and resume.
    throttle : LoginThrottle | None
        Failed-login policy.
    """

    def __init__(
        self,
        engine: Engine,
        tokens: TokenStore,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        ssl_context: ssl.SSLContext | None = None,
        audit: AuditLog | None = None,
        client_queue: int = 50_000,
        history: int = 200_000,
        throttle: LoginThrottle | None = None,
    ) -> None:
        self.engine = engine
        self.tokens = tokens
        self.host = host
        self._port = port
        self.ssl_context = ssl_context
        self.audit = audit or AuditLog(None, engine.clock)
        self.client_queue = client_queue
        self.throttle = throttle or LoginThrottle(engine.clock)
        #: Identifies this engine run; sequence numbers restart with every run.
        self.run_id = secrets.token_hex(8)
        self._ring = _Ring(max(history, client_queue))
        self._consoles: set[_Console] = set()
        self._server: Server | None = None
        self._audit_flusher: asyncio.Task[None] | None = None
        #: Consoles resynchronised because they lagged, since start.
        self.resyncs = 0
        engine.add_sink(self._on_record)

    @property
    def port(self) -> int:
        """Return the port listened on (after :meth:`open`)."""
        return self._port

    @property
    def consoles(self) -> int:
        """Return how many consoles are attached."""
        return len(self._consoles)

    # ------------------------------------------------------------------ engine side
    def _on_record(self, record: EventRecord) -> None:
        self._ring.append(record)
        for c in self._consoles:
            c.wake.set()

    # ------------------------------------------------------------------ lifecycle
    async def open(self) -> None:
        """Start listening; :attr:`port` then holds the real port."""
        self._server = await serve(
            self._handle,
            self.host,
            self._port,
            ssl=self.ssl_context,
            compression=None,
            max_size=MAX_CLIENT_FRAME,
            max_queue=64,
            ping_interval=5.0,
            ping_timeout=15.0,
            open_timeout=HANDSHAKE_TIMEOUT_S,
            server_header=None,
        )
        sock = next(iter(self._server.sockets))
        self._port = int(sock.getsockname()[1])
        self._audit_flusher = asyncio.get_running_loop().create_task(self._flush_audit())
        log.info(
            "remote server listening on %s:%d (%s)",
            self.host,
            self._port,
            "TLS" if self.ssl_context else "no TLS, loopback only",
        )

    async def _flush_audit(self) -> None:
        """Close the audit log's repeat windows on time, also when nothing else is written."""
        while True:
            await asyncio.sleep(1.0)
            self.audit.flush_due()

    async def close(self) -> None:
        """Send consoles the last records, close every link, stop listening."""
        for c in list(self._consoles):
            c.control.append(encode(Error(code="shutdown", reason="the engine is stopping")))
            c.wake.set()
        await asyncio.sleep(0)
        if self._server is not None:
            self._server.close(close_connections=False)
            for c in list(self._consoles):
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(c.ws.close(CLOSE_SHUTDOWN, "engine stopping"), 2.0)
            await self._server.wait_closed()
        if self._audit_flusher is not None:
            self._audit_flusher.cancel()
            await asyncio.gather(self._audit_flusher, return_exceptions=True)
        self.audit.close()

    # ------------------------------------------------------------------ one console
    async def _handle(self, ws: ServerConnection) -> None:
        addr = ws.remote_address
        peer = f"{addr[0]}:{addr[1]}" if addr else "?"
        host = str(addr[0]) if addr else "?"
        try:
            console = await self._handshake(ws, peer, host)
        except (ConnectionClosed, TimeoutError):
            return
        if console is None:
            return
        self._consoles.add(console)
        sender = asyncio.get_running_loop().create_task(self._send_loop(console))
        try:
            await self._read_loop(console)
        except ConnectionClosed:
            pass
        finally:
            self._consoles.discard(console)
            sender.cancel()
            await asyncio.gather(sender, return_exceptions=True)
            self.audit.write(
                event="disconnect", user=console.who.name, peer=peer, resyncs=console.resyncs
            )
            log.info("console %s (%s) left", console.who.name, peer)

    async def _recv(self, ws: ServerConnection) -> Any:
        frame = await asyncio.wait_for(ws.recv(), HANDSHAKE_TIMEOUT_S)
        if isinstance(frame, str):
            raise ProtocolError("text frames are not part of the protocol; send binary frames")
        return decode_client(frame)

    async def _refuse(self, ws: ServerConnection, code: int, error: Error) -> None:
        with contextlib.suppress(ConnectionClosed):
            await ws.send(encode(error))
            await ws.close(code, error.reason[:120])

    async def _handshake(self, ws: ServerConnection, peer: str, host: str) -> _Console | None:
        try:
            hello = await self._recv(ws)
            if not isinstance(hello, Hello):
                raise ProtocolError(f"expected hello first, got {type(hello).__name__.lower()}")
            if hello.version != PROTOCOL_VERSION:
                await self._refuse(
                    ws,
                    CLOSE_VERSION,
                    Error(
                        code="version",
                        reason=(
                            f"protocol version {hello.version} is not supported; this engine "
                            f"speaks version {PROTOCOL_VERSION}"
                        ),
                    ),
                )
                return None
            await ws.send(
                encode(
                    Welcome(
                        version=PROTOCOL_VERSION,
                        engine_id=self.engine.engine_id,
                        run_id=self.run_id,
                    )
                )
            )
            auth = await self._recv(ws)
            if not isinstance(auth, Auth):
                raise ProtocolError(f"expected auth, got {type(auth).__name__.lower()}")
        except ProtocolError as e:
            await self._refuse(ws, CLOSE_PROTOCOL, Error(code="malformed", reason=str(e)))
            return None
        pause = self.throttle.pause(host)
        if pause:  # this address failed often: every login from it waits a little first
            await asyncio.sleep(pause)
        who = self.tokens.verify(auth.token, self.engine.clock.now_ns())
        if not isinstance(who, Identity):
            delay = self.throttle.fail(host)
            self.audit.write(event="login-refused", peer=peer, client=hello.client, reason=who)
            log.warning("console login from %s refused: %s", peer, who)
            await asyncio.sleep(delay)
            await self._refuse(ws, CLOSE_AUTH, Error(code="auth", reason=who))
            return None
        self.audit.write(
            event="login", user=who.name, role=who.role, peer=peer, client=hello.client
        )
        allowed = (
            sorted(ROLE_COMMANDS.get(who.role, frozenset())) if who.role != ROLES[-1] else ["*"]
        )
        await ws.send(encode(AuthOk(user=who.name, role=who.role, commands=allowed)))
        ring = self._ring
        resume = (
            auth.resume_run == self.run_id
            and ring.first - 1 <= auth.resume_seq <= ring.head
            and ring.head - auth.resume_seq <= self.client_queue
        )
        console = _Console(ws=ws, who=who, peer=peer, cursor=auth.resume_seq)
        if resume:
            await ws.send(encode(Resumed(from_seq=auth.resume_seq + 1)))
        else:
            reason = "first connection" if auth.resume_run != self.run_id else "too far behind"
            if auth.resume_run and auth.resume_run != self.run_id:
                reason = "the engine restarted"
            console.cursor = await self._send_snapshot(console, 0, reason)
        log.info(
            "console %s (%s, %s) attached at %d%s",
            who.name,
            who.role,
            peer,
            console.cursor,
            " (resumed)" if resume else "",
        )
        return console

    async def _send_snapshot(self, console: _Console, rid: int, reason: str) -> int:
        # Taken and encoded without an await in between: it is exact at its sequence number.
        snap = self.engine.snapshot()
        frame = encode(snapshot_message(snap, run_id=self.run_id, rid=rid, reason=reason))
        await console.ws.send(frame)
        return snap.seq

    async def _send_loop(self, c: _Console) -> None:
        ring, ws = self._ring, c.ws
        with contextlib.suppress(ConnectionClosed):
            while True:
                try:
                    await asyncio.wait_for(c.wake.wait(), BEAT_INTERVAL_S)
                except TimeoutError:
                    await ws.send(encode(Beat(ts=self.engine.clock.now_ns(), head=ring.head)))
                    continue
                c.wake.clear()
                while True:
                    behind = ring.head - c.cursor
                    if behind > self.client_queue or c.cursor < ring.first - 1:
                        c.resyncs += 1
                        self.resyncs += 1
                        log.warning(
                            "console %s lags %d events: resynchronising", c.who.name, behind
                        )
                        c.cursor = await self._send_snapshot(c, 0, f"lagged {behind} events")
                    elif behind > 0:
                        n = min(behind, MAX_BATCH)
                        frame = encode(Events(records=ring.slice(c.cursor, n)))
                        c.cursor += n
                        c.sent += n
                        await ws.send(frame)
                    elif c.control:
                        item = c.control.popleft()
                        if isinstance(item, int):
                            c.cursor = await self._send_snapshot(c, item, "requested")
                        else:
                            await ws.send(item)
                    else:
                        break

    async def _read_loop(self, c: _Console) -> None:
        malformed = 0
        async for frame in c.ws:
            try:
                if isinstance(frame, str):
                    raise ProtocolError("text frames are not part of the protocol")
                msg = decode_client(frame)
                if isinstance(msg, Cmd):
                    self._command(c, msg)
                elif isinstance(msg, SnapReq):
                    c.control.append(msg.rid)
                elif isinstance(msg, Beat):
                    continue
                else:
                    raise ProtocolError(f"{type(msg).__name__.lower()} is only valid at the start")
            except ProtocolError as e:
                malformed += 1
                c.control.append(encode(Error(code="malformed", reason=str(e))))
                if malformed >= MAX_MALFORMED:
                    c.wake.set()
                    await asyncio.sleep(0.05)  # let the sender deliver the error
                    await c.ws.close(CLOSE_PROTOCOL, "too many malformed frames")
                    return
            c.wake.set()

    def _command(self, c: _Console, msg: Cmd) -> None:
        who = c.who
        try:
            command = decode_command(msg)
        except ProtocolError as e:
            self.audit.write(
                event="command",
                user=who.name,
                role=who.role,
                peer=c.peer,
                rid=msg.rid,
                kind=msg.kind,
                result="invalid",
                reason=str(e),
            )
            c.control.append(encode(Nak(rid=msg.rid, code="invalid", reason=str(e))))
            return
        reason = (
            f"role {who.role} may not send {msg.kind}"
            if not may_send(who.role, msg.kind)
            else refusal(who.role, command)
        )
        if reason is not None:
            self.audit.write(
                event="command",
                user=who.name,
                role=who.role,
                peer=c.peer,
                rid=msg.rid,
                kind=msg.kind,
                args=_args(command),
                result="forbidden",
            )
            c.control.append(encode(Nak(rid=msg.rid, code="forbidden", reason=reason)))
            return
        if isinstance(command, SetKillSwitch | SetRiskLimits):  # the journal records who did it
            command = dataclasses.replace(command, actor=f"{who.name}@{c.peer}")
        try:
            result = self.engine.handle(command)
        except Exception as e:  # a handler bug must still answer the console
            log.exception("command %r failed", command)
            result = CommandError(command=command, ts_handled=0, reason=f"internal error: {e}")
        if isinstance(result, CommandAck):
            outcome, detail = "ack", result.detail
            frame = encode(Ack(rid=msg.rid, ts_handled=result.ts_handled, detail=detail))
        else:
            outcome, detail = "refused", result.reason
            frame = encode(
                Nak(rid=msg.rid, code="refused", reason=detail, ts_handled=result.ts_handled)
            )
        self.audit.write(
            event="command",
            user=who.name,
            role=who.role,
            peer=c.peer,
            rid=msg.rid,
            kind=msg.kind,
            args=_args(command),
            result=outcome,
            detail=detail,
        )
        c.control.append(frame)


def _args(command: Command) -> dict[str, Any]:
    return {f.name: getattr(command, f.name) for f in dataclasses.fields(command)}
