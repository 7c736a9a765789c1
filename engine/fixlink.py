# SPDX-License-Identifier: MIT
"""FIX sessions as an engine component: lifecycle, status events, every message as an event.

:class:`FixLink` starts and stops the engine's acceptors and initiators on the engine loop,
publishes :class:`engine.events.SessionStatusChanged` whenever a session's state or sequence
numbers change, and — through :class:`BusLog` — one :class:`engine.events.FixMessageSeen` per
message in either direction, so the console can show every field of every message.
"""

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from engine.bus import MessageBus
from engine.clock import Clock
from engine.commands import Command, CommandAck, CommandError, CommandResult, ControlSession
from engine.core import Engine
from engine.enums import SessionState
from engine.events import Event, FixMessageSeen, SessionStatusChanged
from engine.fix.log import NullLog, SessionLog
from engine.fix.session import FixSession
from engine.fix.transport import SocketAcceptor, SocketInitiator

log = logging.getLogger(__name__)

#: How often session states are polled for changes, seconds.
STATUS_INTERVAL_S = 0.2


def _field(raw: bytes, tag: bytes) -> bytes:
    start = raw.find(b"\x01" + tag + b"=")
    if start < 0:
        return b""
    start += len(tag) + 2
    end = raw.find(b"\x01", start)
    return raw[start : end if end >= 0 else len(raw)]


class BusLog:
    """A session log that publishes every message on the bus (and passes it to ``inner``)."""

    def __init__(
        self, bus: MessageBus, clock: Clock, session_id: str, inner: SessionLog | None = None
    ) -> None:
        self.bus = bus
        self.clock = clock
        self.session_id = session_id
        self.inner: SessionLog = inner or NullLog(session_id)

    def _publish(self, raw: bytes, now_ns: int, outbound: bool) -> None:
        seq = _field(raw, b"34")
        self.bus.publish(
            FixMessageSeen(
                ts_event=self.clock.now_ns(),
                session_id=self.session_id,
                outbound=outbound,
                msg_type=_field(raw, b"35").decode("latin-1"),
                seq_num=int(seq) if seq.isdigit() else 0,
                raw=raw,
                ts_created=now_ns,
                ts_wire=now_ns,
            )
        )

    def on_incoming(self, message: bytes, now_ns: int) -> None:
        """Publish and log an inbound message."""
        self.inner.on_incoming(message, now_ns)
        self._publish(message, now_ns, outbound=False)

    def on_outgoing(self, message: bytes, now_ns: int) -> None:
        """Publish and log an outbound message."""
        self.inner.on_outgoing(message, now_ns)
        self._publish(message, now_ns, outbound=True)

    def on_event(self, text: str, now_ns: int) -> None:
        """Log a session event."""
        self.inner.on_event(text, now_ns)

    def flush(self) -> None:
        """Flush the inner log."""
        self.inner.flush()

    def close(self) -> None:
        """Close the inner log."""
        self.inner.close()


def _set_seq(session: FixSession, command: ControlSession) -> str:
    out_seq, in_seq = command.next_sender_seq_num, command.next_target_seq_num
    if out_seq is None and in_seq is None:
        raise ValueError("set_seq needs next_sender_seq_num and/or next_target_seq_num")
    for name, value in (("next_sender_seq_num", out_seq), ("next_target_seq_num", in_seq)):
        if value is not None and value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    if out_seq is not None:
        session.set_next_sender_seq_num(out_seq)
    if in_seq is not None:
        session.set_next_target_seq_num(in_seq)
    return f"next out {session.next_sender_seq_num}, next in {session.next_target_seq_num}"


@dataclass
class _Sender:
    """Write bytes a session produced outside an entry point to its live connection."""

    endpoint: SocketAcceptor | SocketInitiator

    def send_for(self, session: FixSession, data: list[bytes]) -> None:
        conn = self.endpoint.active.get(session)
        if conn is not None and data:
            conn._write(data)


@dataclass
class _Tracked:
    session: FixSession
    last: tuple[SessionState, int, int] | None = None


class FixLink:
    """The engine's FIX acceptors and initiators.

    Parameters
    ----------
    bus : MessageBus
        Where status and message events go.
    clock : Clock
        Time source.
    """

    name = "fix"

    def __init__(self, bus: MessageBus, clock: Clock) -> None:
        self.bus = bus
        self.clock = clock
        self.acceptors: list[SocketAcceptor] = []
        self.initiators: list[SocketInitiator] = []
        self._tracked: list[_Tracked] = []
        self._startup: list[Callable[[], Awaitable[None]]] = []
        self._tasks: list[asyncio.Task[None]] = []

    def track(self, session: FixSession) -> None:
        """Publish status changes of ``session``."""
        self._tracked.append(_Tracked(session))

    def add_acceptor(self, acceptor: SocketAcceptor, *, track: bool = True) -> None:
        """Serve ``acceptor``'s sessions (started with the engine).

        ``track=False`` keeps its sessions out of the status events (the built-in simulator's
        side of the demo session is the exchange's business, not the trader's).
        """
        self.acceptors.append(acceptor)
        if track:
            for session in acceptor.sessions.values():
                self.track(session)
        self._startup.append(acceptor.start)

    def add_initiator(self, initiator: SocketInitiator) -> None:
        """Connect ``initiator`` (started with the engine, after the acceptors)."""
        self.initiators.append(initiator)
        self.track(initiator.session)
        self._startup.append(initiator.start)

    def add_startup(self, step: Callable[[], Awaitable[None]]) -> None:
        """Run ``step`` at start, in order with the acceptors and initiators."""
        self._startup.append(step)

    # ------------------------------------------------------------------ Component
    def start(self, engine: Engine) -> None:
        """Start the endpoints in order and begin publishing session status."""
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._start_all(), name="fix-start"),
            loop.create_task(self._watch(), name="fix-status"),
        ]

    async def _start_all(self) -> None:
        for step in self._startup:
            try:
                await step()
            except Exception:
                log.exception("FIX start-up step %r failed", step)

    async def _watch(self) -> None:
        while True:
            self.publish_status()
            await asyncio.sleep(STATUS_INTERVAL_S)

    def publish_status(self, *, force: bool = False) -> None:
        """Publish a SessionStatusChanged for every session whose state moved."""
        for t in self._tracked:
            state = self._state(t.session)
            now = (state, t.session.next_sender_seq_num, t.session.next_target_seq_num)
            if force or now != t.last:
                t.last = now
                self.bus.publish(self._status_event(t.session, state))

    def _state(self, s: FixSession) -> SessionState:
        st = s.state
        if s.is_logged_on:
            return SessionState.LOGOUT_SENT if st.sent_logout else SessionState.LOGGED_ON
        if st.sent_logon:
            return SessionState.LOGON_SENT
        if st.connected:
            return SessionState.CONNECTING
        return SessionState.DISCONNECTED

    def _status_event(self, s: FixSession, state: SessionState) -> SessionStatusChanged:
        return SessionStatusChanged(
            ts_event=self.clock.now_ns(),
            session_id=str(s.session_id),
            state=state,
            next_sender_seq_num=s.next_sender_seq_num,
            next_target_seq_num=s.next_target_seq_num,
        )

    async def stop(self) -> None:
        """Log out the initiators, stop the acceptors, close the stores and logs."""
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for initiator in self.initiators:
            await initiator.stop()
        for acceptor in self.acceptors:
            await acceptor.stop()
        self.publish_status()
        for t in self._tracked:
            t.session.close()
        for acceptor in self.acceptors:
            for session in acceptor.sessions.values():
                session.close()

    def handle(self, command: Command) -> CommandResult | None:
        """Answer :class:`engine.commands.ControlSession` for the sessions this link tracks."""
        if not isinstance(command, ControlSession):
            return None
        now = self.clock.now_ns()
        session = next(
            (t.session for t in self._tracked if str(t.session.session_id) == command.session_id),
            None,
        )
        if session is None:
            known = ", ".join(str(t.session.session_id) for t in self._tracked) or "none"
            return CommandError(
                command=command, ts_handled=now,
                reason=f"no FIX session {command.session_id!r}; sessions: {known}",
            )  # fmt: skip
        try:
            detail = self._control(session, command)
        except ValueError as e:
            return CommandError(command=command, ts_handled=now, reason=str(e))
        self.publish_status(force=True)
        return CommandAck(command=command, ts_handled=now, detail=detail)

    def _control(self, session: FixSession, command: ControlSession) -> str:
        endpoint = self._endpoint_of(session)
        match command.action:
            case "logout":
                if not session.is_logged_on:
                    raise ValueError(f"{session.session_id} is not logged on")
                session.enabled = False
                if endpoint is not None:
                    endpoint.send_for(session, session.logout("logout requested by the console"))
                return "Logout sent"
            case "logon":
                session.enabled = True
                return "logon enabled: the initiator connects at its next attempt"
            case "reset":
                out = session.reset(self.clock.now_ns())
                if endpoint is not None:
                    endpoint.send_for(session, out)
                return "session reset: sequence numbers are 1"
            case "set_seq":
                return _set_seq(session, command)
        raise ValueError(
            f"unknown session action {command.action!r}; use logon, logout, reset or set_seq"
        )

    def _endpoint_of(self, session: FixSession) -> _Sender | None:
        endpoints: list[SocketAcceptor | SocketInitiator] = [*self.initiators, *self.acceptors]
        for endpoint in endpoints:
            if session in endpoint.active:
                return _Sender(endpoint)
        return None

    def state_events(self) -> list[Event]:
        """Describe every session's status."""
        return [self._status_event(t.session, self._state(t.session)) for t in self._tracked]
