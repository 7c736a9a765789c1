# SPDX-License-Identifier: MIT
"""Messages of the remote monitor/control protocol and their MessagePack codec (msgspec).

Every WebSocket frame is one binary MessagePack map with a ``type`` tag naming its type (the
msgspec tagged-union convention). Engine events and commands travel as ``[seq, kind, body]`` /
``[kind, body]`` where ``kind`` is the class name in :mod:`engine.events` /
:mod:`engine.commands` and ``body`` the dataclass's fields as a map, so adding an optional field
to an event keeps older consoles working. ``docs/remote-protocol.md`` is the specification.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any, Final

import msgspec

from engine.commands import Command
from engine.enums import EngineState
from engine.events import EngineHeartbeat, EngineSnapshot, Event, EventRecord

#: Bumped on any change a peer of the previous version would misread.
PROTOCOL_VERSION: Final = 1

#: Largest frame a server accepts from a console, bytes (commands are small).
MAX_CLIENT_FRAME = 1 << 20

#: Largest frame a console accepts (a snapshot of a busy engine is large).
MAX_SERVER_FRAME = 256 << 20

#: WebSocket close codes of this protocol (4000-4999 are application codes, RFC 6455).
CLOSE_VERSION = 4000
CLOSE_AUTH = 4001
CLOSE_PROTOCOL = 4002
CLOSE_SHUTDOWN = 4003


class ProtocolError(ValueError):
    """A frame broke the protocol; the message says which rule."""


#: Why a frame nested deeper than the decoder recurses is refused (msgspec raises
#: ``RecursionError`` at about 1,000 levels; no message of the protocol nests past 6).
TOO_DEEP = "nested too deeply (arrays or maps inside each other past the recursion limit)"


# ----------------------------------------------------------------------------- console -> engine


class Hello(msgspec.Struct, tag="hello", frozen=True):
    """First frame of a console: protocol version and a name for logs."""

    version: int
    client: str = ""


class Auth(msgspec.Struct, tag="auth", frozen=True):
    """Second frame: the token, and where to resume the stream (``resume_run`` ``""``: fresh)."""

    token: str
    resume_run: str = ""
    resume_seq: int = 0


class Cmd(msgspec.Struct, tag="cmd", frozen=True):
    """A command: ``kind`` is the class name in ``engine.commands``, ``body`` its fields."""

    rid: int
    kind: str
    body: msgspec.Raw


class SnapReq(msgspec.Struct, tag="snap?", frozen=True):
    """Ask for a snapshot at the current point of the stream."""

    rid: int


class Beat(msgspec.Struct, tag="hb", frozen=True):
    """A heartbeat (both directions); ``head`` is the engine's last sequence number."""

    ts: int
    head: int = 0


ClientMessage = Hello | Auth | Cmd | SnapReq | Beat

# ----------------------------------------------------------------------------- engine -> console


class Welcome(msgspec.Struct, tag="welcome", frozen=True):
    """Answer to :class:`Hello`: the engine and the run its sequence numbers belong to."""

    version: int
    engine_id: str
    run_id: str


class AuthOk(msgspec.Struct, tag="auth-ok", frozen=True):
    """The token was accepted: who the console is and what it may do."""

    user: str
    role: str
    commands: list[str]


class Resumed(msgspec.Struct, tag="resumed", frozen=True):
    """The stream continues right after the console's ``resume_seq``: no snapshot follows."""

    from_seq: int


class Snapshot(msgspec.Struct, tag="snap", frozen=True):
    """The engine's state; events with ``seq`` greater than this one follow.

    ``rid`` answers a :class:`SnapReq` (0: sent by the engine on connect or to resynchronise a
    lagging console, see ``reason``). ``recent`` holds records ``[seq, kind, body]``,
    ``state_events`` events ``[kind, body]``.
    """

    rid: int
    reason: str
    run_id: str
    seq: int
    engine_id: str
    state: int
    ts_started: int
    ts_snapshot: int
    heartbeat_interval_ns: int
    heartbeats: int
    last_heartbeat: msgspec.Raw  # nil when the engine has not beaten yet
    recent: list[msgspec.Raw]
    state_events: list[msgspec.Raw]


class Events(msgspec.Struct, tag="ev", frozen=True):
    """Consecutive records ``[seq, kind, body]`` of the engine's event stream."""

    records: list[msgspec.Raw]


class Ack(msgspec.Struct, tag="ack", frozen=True):
    """The engine carried out command ``rid``."""

    rid: int
    ts_handled: int
    detail: str = ""


class Nak(msgspec.Struct, tag="nak", frozen=True):
    """The engine refused command ``rid`` (``code``: ``refused``, ``forbidden``, ``invalid``)."""

    rid: int
    code: str
    reason: str
    ts_handled: int = 0


class Error(msgspec.Struct, tag="error", frozen=True):
    """A connection-level problem; ``code`` is ``version``, ``auth``, ``malformed``, ``order``."""

    code: str
    reason: str


ServerMessage = Welcome | AuthOk | Resumed | Snapshot | Events | Ack | Nak | Error | Beat

# ----------------------------------------------------------------------------- codec

_encoder = msgspec.msgpack.Encoder()
_NIL = b"\xc0"  # MessagePack nil
_client_decoder = msgspec.msgpack.Decoder(ClientMessage)
_server_decoder = msgspec.msgpack.Decoder(ServerMessage)
_record_decoder = msgspec.msgpack.Decoder(tuple[int, str, msgspec.Raw])
_kind_decoder = msgspec.msgpack.Decoder(tuple[str, msgspec.Raw])


def encode(message: msgspec.Struct) -> bytes:
    """Return the frame of one protocol message."""
    return _encoder.encode(message)


def decode_client(frame: bytes) -> ClientMessage:
    """Return the console message in ``frame``; raise :class:`ProtocolError` if malformed."""
    try:
        return _client_decoder.decode(frame)
    except msgspec.DecodeError as e:
        raise ProtocolError(f"malformed frame: {e}") from None
    except RecursionError:
        raise ProtocolError(f"malformed frame: {TOO_DEEP}") from None


def decode_server(frame: bytes) -> ServerMessage:
    """Return the engine message in ``frame``; raise :class:`ProtocolError` if malformed."""
    try:
        return _server_decoder.decode(frame)
    except msgspec.DecodeError as e:
        raise ProtocolError(f"malformed frame: {e}") from None
    except RecursionError:
        raise ProtocolError(f"malformed frame: {TOO_DEEP}") from None


def _subclasses(base: type) -> dict[str, type]:
    out: dict[str, type] = {}
    todo: list[type] = [base]
    while todo:
        sub: type
        for sub in todo.pop().__subclasses__():
            # ``dataclass(slots=True)`` replaces the class it decorates; the discarded original
            # lingers among the subclasses until collected. Keep the one its module exports.
            module = sys.modules.get(sub.__module__)
            if getattr(module, sub.__name__, None) is sub and dataclasses.is_dataclass(sub):
                out.setdefault(sub.__name__, sub)
            todo.append(sub)
    return out


class _Registry:
    """Dataclass types by class name, with a cached decoder each; re-scanned on a miss."""

    def __init__(self, base: type) -> None:
        self._base = base
        self._types: dict[str, type] = {}
        self._decoders: dict[str, msgspec.msgpack.Decoder[Any]] = {}

    def type_of(self, kind: str) -> type | None:
        t = self._types.get(kind)
        if t is None:
            self._types = _subclasses(self._base)
            t = self._types.get(kind)
        return t

    def decode(self, kind: str, body: bytes | msgspec.Raw) -> Any:
        dec = self._decoders.get(kind)
        if dec is None:
            t = self.type_of(kind)
            if t is None:
                raise ProtocolError(f"unknown {self._base.__name__.lower()} kind {kind!r}")
            dec = self._decoders[kind] = msgspec.msgpack.Decoder(t)
        try:
            return dec.decode(body)
        except msgspec.DecodeError as e:
            raise ProtocolError(f"{kind}: {e}") from None
        except RecursionError:
            raise ProtocolError(f"{kind}: {TOO_DEEP}") from None

    def names(self) -> list[str]:
        self._types = _subclasses(self._base)
        return sorted(self._types)


EVENTS = _Registry(Event)
COMMANDS = _Registry(Command)


def encode_record(seq: int, event: Event) -> bytes:
    """Return ``[seq, kind, body]`` of one event record (encoded once, sent to every console)."""
    return _encoder.encode((seq, type(event).__name__, event))


def decode_record(raw: bytes | msgspec.Raw) -> EventRecord:
    """Return the :class:`EventRecord` in ``[seq, kind, body]``."""
    try:
        seq, kind, body = _record_decoder.decode(raw)
    except msgspec.DecodeError as e:
        raise ProtocolError(f"malformed event record: {e}") from None
    except RecursionError:
        raise ProtocolError(f"malformed event record: {TOO_DEEP}") from None
    return EventRecord(seq, EVENTS.decode(kind, body))


def encode_event(event: Event) -> bytes:
    """Return ``[kind, body]`` of one event (state events of a snapshot)."""
    return _encoder.encode((type(event).__name__, event))


def decode_event(raw: bytes | msgspec.Raw) -> Event:
    """Return the event in ``[kind, body]``."""
    try:
        kind, body = _kind_decoder.decode(raw)
    except msgspec.DecodeError as e:
        raise ProtocolError(f"malformed event: {e}") from None
    except RecursionError:
        raise ProtocolError(f"malformed event: {TOO_DEEP}") from None
    event: Event = EVENTS.decode(kind, body)
    return event


def encode_command(rid: int, command: Command) -> bytes:
    """Return the :class:`Cmd` frame of ``command``."""
    body = msgspec.Raw(_encoder.encode(command))
    return _encoder.encode(Cmd(rid=rid, kind=type(command).__name__, body=body))


def decode_command(cmd: Cmd) -> Command:
    """Return the command in ``cmd``; raise :class:`ProtocolError` if unknown or invalid."""
    command: Command = COMMANDS.decode(cmd.kind, cmd.body)
    return command


def snapshot_message(
    snap: EngineSnapshot, *, run_id: str, rid: int = 0, reason: str = ""
) -> Snapshot:
    """Return the :class:`Snapshot` message of an engine snapshot."""
    hb = snap.last_heartbeat
    return Snapshot(
        rid=rid,
        reason=reason,
        run_id=run_id,
        seq=snap.seq,
        engine_id=snap.engine_id,
        state=int(snap.state),
        ts_started=snap.ts_started,
        ts_snapshot=snap.ts_snapshot,
        heartbeat_interval_ns=snap.heartbeat_interval_ns,
        heartbeats=snap.heartbeats,
        last_heartbeat=msgspec.Raw(_encoder.encode(hb)),
        recent=[msgspec.Raw(encode_record(r.seq, r.event)) for r in snap.recent],
        state_events=[msgspec.Raw(encode_event(e)) for e in snap.state_events],
    )


def snapshot_of(msg: Snapshot, seq_offset: int = 0) -> EngineSnapshot:
    """Return the :class:`EngineSnapshot` in ``msg``, sequence numbers shifted by ``seq_offset``."""
    hb = None
    if bytes(msg.last_heartbeat) != _NIL:
        hb = EVENTS.decode("EngineHeartbeat", msg.last_heartbeat)
        if not isinstance(hb, EngineHeartbeat):
            raise ProtocolError(f"last_heartbeat is not a heartbeat: {hb!r}")
    recent = []
    for raw in msg.recent:
        r = decode_record(raw)
        recent.append(EventRecord(r.seq + seq_offset, r.event))
    return EngineSnapshot(
        seq=msg.seq + seq_offset,
        engine_id=msg.engine_id,
        state=EngineState(msg.state),
        ts_started=msg.ts_started,
        ts_snapshot=msg.ts_snapshot,
        heartbeat_interval_ns=msg.heartbeat_interval_ns,
        heartbeats=msg.heartbeats,
        last_heartbeat=hb,
        recent=tuple(recent),
        state_events=tuple(decode_event(raw) for raw in msg.state_events),
    )
