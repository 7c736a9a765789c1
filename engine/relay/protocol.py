# SPDX-License-Identifier: MIT
"""Messages of the market-data relay protocol (``docs/relay.md``).

The transport is the remote protocol's: one binary MessagePack map per WebSocket frame,
tagged by ``type`` (msgspec).

The handshake is the remote protocol's own (:class:`~engine.remote.protocol.Hello`,
:class:`~engine.remote.protocol.Welcome`, :class:`~engine.remote.protocol.Auth`,
:class:`~engine.remote.protocol.AuthOk`, :class:`~engine.remote.protocol.Error`,
:class:`~engine.remote.protocol.Beat`); ``Hello.version`` carries :data:`RELAY_VERSION`. After
it, a subscriber sends :class:`Subscribe` and the relay answers per instrument with a
:class:`BookSnap` (the whole book at its sequence number) or a resumption
(:class:`SubAck`), then :class:`Updates`: runs of consecutive L2 rows of each instrument.
A watcher (the console's Monitor) sends :class:`StatusRequest` and gets :class:`RelayStatus`.
Any subscriber may send :class:`CatalogRequest` and gets :class:`Catalog`: the instruments the
relay carries with their tick and lot sizes (rows carry ticks and lots only), what a chart
needs before it subscribes.

Rows travel as the raw bytes of ``engine.types.L2_EVENT_DTYPE`` rows (32 bytes each, little
endian); their ``book`` field means nothing on the wire (the receiver sets its own).
Every instrument numbers its rows from 1, per relay run (``Welcome.run_id``).
"""

from __future__ import annotations

from typing import Final

import msgspec

from engine.remote.protocol import (
    TOO_DEEP,
    Auth,
    AuthOk,
    Beat,
    Error,
    Hello,
    ProtocolError,
    Welcome,
)

#: Version of the relay protocol (sent in ``Hello.version``).
RELAY_VERSION: Final = 1


class Subscribe(msgspec.Struct, tag="sub", frozen=True):
    """Follow ``symbols``; ``resume[i]`` is the last row number held of ``symbols[i]`` (0: none).

    Resumption needs the same relay run (``Auth.resume_run``); otherwise, or when the rows
    after ``resume[i]`` are no longer cached, a :class:`BookSnap` comes instead.
    """

    rid: int
    symbols: list[str]
    resume: list[int] = []


class Unsubscribe(msgspec.Struct, tag="unsub", frozen=True):
    """Stop following ``symbols``."""

    rid: int
    symbols: list[str]


class SubAck(msgspec.Struct, tag="sub-ok", frozen=True):
    """Answer to :class:`Subscribe`: which instruments resume, which get a snapshot, unknown."""

    rid: int
    resumed: list[str]
    snapshots: list[str]
    unknown: list[str]


class BookSnap(msgspec.Struct, tag="book", frozen=True):
    """The whole book of ``symbol`` after its row ``seq``: ``rows`` are ``L2_SET`` rows.

    ``reason``: ``subscribed``, ``resume-not-possible``, ``conflated`` (the subscriber fell
    more than the relay's ``max_lag_rows`` behind: the latest book instead of the rows missed)
    or ``requested``. Rows after ``seq`` follow in :class:`Updates`.
    """

    symbol: str
    seq: int
    ts: int
    reason: str
    rows: bytes


class Updates(msgspec.Struct, tag="md", frozen=True):
    """Runs of rows: ``(symbol, first_seq, rows)`` with rows ``first_seq, first_seq + 1, …``."""

    items: list[tuple[str, int, bytes]]
    ts_sent: int = 0


class StatusRequest(msgspec.Struct, tag="status", frozen=True):
    """Ask for the relay's :class:`RelayStatus` (needs the relay's ``status_role`` or higher).

    A link that only watches the relay sends this and never subscribes; a refused request is
    answered with ``Error(code="forbidden")`` and the link stays open.
    """

    rid: int


class CatalogRequest(msgspec.Struct, tag="catalog", frozen=True):
    """Ask which instruments the relay carries (any role may)."""

    rid: int


class InstrumentInfo(msgspec.Struct, frozen=True):
    """One instrument a relay carries: prices are ``ticks * tick_size``, sizes ``lots * lot_size``.

    Sizes are decimal strings (exact); ``""`` when the relay was not told them.
    """

    symbol: str
    tick_size: str = ""
    lot_size: str = ""


class Catalog(msgspec.Struct, tag="catalog-ok", frozen=True):
    """Answer to :class:`CatalogRequest`: every instrument carried, in the relay's book order."""

    rid: int
    relay_id: str
    instruments: list[InstrumentInfo]


class SourceStatus(msgspec.Struct, frozen=True):
    """One source of a relay, as :class:`RelayStatus` reports it.

    ``rows_in`` counts the rows published for the source's instruments since the relay
    started (instruments fed by two sources count for both); ``last_row_age_ms`` is how long
    ago the last of them arrived (relay clock; ``-1``: none yet); ``state`` is the source's own
    word (``replaying``, ``replayed``, ``up``, ``down: <why>``, ``listening``).
    """

    name: str
    kind: str
    symbols: list[str]
    rows_in: int
    last_row_age_ms: float
    state: str


class SubscriberStatus(msgspec.Struct, frozen=True):
    """One connected link of a relay, as :class:`RelayStatus` reports it.

    ``lag_rows`` and ``lag_ms`` are those of its furthest-behind instrument: rows published
    and not yet sent to it, and how long ago the oldest of them was published. ``stalled``:
    it is :data:`~engine.relay.server.STALLED_MS` or more behind (its socket does not drain).
    ``conflations``: books it got instead of rows it fell too far behind on.
    """

    peer: str
    user: str
    role: str
    client: str
    symbols: list[str]
    rows_sent: int
    lag_rows: int
    lag_ms: float
    conflations: int
    stalled: bool
    connected_s: float


class RelayStatus(msgspec.Struct, tag="status-ok", frozen=True):
    """Answer to :class:`StatusRequest`: the relay, its sources and its links, at ``ts``.

    Counters are totals since the relay started; a watcher gets rates from two answers
    (``ts`` is the relay's clock, ns).
    """

    rid: int
    relay_id: str
    run_id: str
    ts: int
    uptime_s: float
    instruments: int
    rows_in: int
    conflations: int
    cached_rows: int
    cached_bytes: int
    cache_rows: int
    max_lag_rows: int
    sources: list[SourceStatus]
    subscribers: list[SubscriberStatus]


RelayClientMessage = Hello | Auth | Beat | Subscribe | Unsubscribe | StatusRequest | CatalogRequest
RelayServerMessage = (
    Welcome | AuthOk | Error | Beat | SubAck | BookSnap | Updates | RelayStatus | Catalog
)

_encoder = msgspec.msgpack.Encoder()
_client_decoder = msgspec.msgpack.Decoder(RelayClientMessage)
_server_decoder = msgspec.msgpack.Decoder(RelayServerMessage)


def encode(message: msgspec.Struct) -> bytes:
    """Return the frame of one relay message."""
    return _encoder.encode(message)


def decode_client(frame: bytes) -> RelayClientMessage:
    """Return the subscriber message in ``frame``; raise ``ProtocolError`` if malformed."""
    try:
        return _client_decoder.decode(frame)
    except msgspec.DecodeError as e:
        raise ProtocolError(f"malformed frame: {e}") from None
    except RecursionError:
        raise ProtocolError(f"malformed frame: {TOO_DEEP}") from None


def decode_server(frame: bytes) -> RelayServerMessage:
    """Return the relay message in ``frame``; raise ``ProtocolError`` if malformed."""
    try:
        return _server_decoder.decode(frame)
    except msgspec.DecodeError as e:
        raise ProtocolError(f"malformed frame: {e}") from None
    except RecursionError:
        raise ProtocolError(f"malformed frame: {TOO_DEEP}") from None


__all__ = [
    "RELAY_VERSION",
    "Auth",
    "AuthOk",
    "Beat",
    "BookSnap",
    "Catalog",
    "CatalogRequest",
    "Error",
    "Hello",
    "InstrumentInfo",
    "ProtocolError",
    "RelayClientMessage",
    "RelayServerMessage",
    "RelayStatus",
    "SourceStatus",
    "StatusRequest",
    "SubAck",
    "Subscribe",
    "SubscriberStatus",
    "Unsubscribe",
    "Updates",
    "Welcome",
    "decode_client",
    "decode_server",
    "encode",
]
