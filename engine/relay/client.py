# SPDX-License-Identifier: MIT
"""``RelayClient``: subscribe to a relay and keep books from it (a market-data source).

The client runs on the caller's asyncio loop (an engine's, or a relay's when it relays
another relay). It connects, checks the relay's certificate against the pinned fingerprint
*before* sending the token, authenticates, subscribes, and applies what arrives as
``L2_EVENT_DTYPE`` rows: a snapshot as a clear of the book followed by its levels, increments
as they are. When the link drops it reconnects with exponential backoff and asks to resume
each instrument right after the last row it applied; the relay resumes it (no gap, no
duplicate) or, when that is no longer possible, sends the current book.

Rows go to ``market.apply`` (a :class:`~engine.marketdata.MarketData`, its ``BookUpdated`` and
``TradeReported`` events included) or to an ``on_rows`` callable, with ``book`` set to
``index[symbol]``: one call per message the relay sends (an ``md`` message holds the new rows
of every instrument that changed, instrument after instrument; a snapshot is one call of its
own), so the per-call cost is paid once per message rather than once per instrument.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

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
    ProtocolError,
    RelayServerMessage,
    SubAck,
    Subscribe,
    Updates,
    Welcome,
    decode_server,
    encode,
)
from engine.remote.client import Backoff
from engine.remote.protocol import MAX_SERVER_FRAME
from engine.remote.tls import PinStore, client_context, fingerprint
from engine.types import L2_CLEAR, L2_EVENT_DTYPE

log = get_log(__name__)

#: Bytes of one row on the wire.
ROW = L2_EVENT_DTYPE.itemsize

Rows = npt.NDArray[np.void]


class RelayError(RuntimeError):
    """The relay refused the client for good (token, version, certificate), or never answered."""


class _Fatal(Exception):
    """A refusal that retrying cannot cure."""


class RelayClient:
    """Follow ``symbols`` on a relay and apply them (module docstring).

    Parameters
    ----------
    host, port : str, int
        The relay.
    token : str
        Access token (any role).
    symbols : Sequence[str]
        Instruments to follow.
    market : MarketData | None
        Where rows are applied (``index`` defaults to its ``index``).
    on_rows : Callable[[Rows], Any] | None
        Instead of ``market.apply``: called with each batch of rows.
    index : Mapping[str, int] | None
        Book index of each symbol in the rows handed out.
    tls : bool
        ``wss://``; the certificate must match the pin in ``pins``.
    pins : PinStore | None
        Pinned fingerprints (trust on first use); required with ``tls``.
    backoff : Backoff | None
        Reconnection delays.
    stall_timeout_s : float
        A link silent this long (the relay beats every second) is considered lost.
    """

    def __init__(
        self,
        host: str,
        port: int,
        token: str,
        symbols: Sequence[str],
        *,
        market: MarketData | None = None,
        on_rows: Callable[[Rows], Any] | None = None,
        index: Mapping[str, int] | None = None,
        tls: bool = False,
        pins: PinStore | None = None,
        name: str = "relay-client",
        backoff: Backoff | None = None,
        stall_timeout_s: float = 5.0,
    ) -> None:
        if tls and pins is None:
            raise ValueError("a TLS connection needs a PinStore to check the certificate")
        if on_rows is None and market is None:
            raise ValueError("give market or on_rows: where the rows go")
        self.host = host
        self.port = port
        self._token = token
        self.symbols = list(symbols)
        self.index: dict[str, int] = dict(
            index if index is not None else market.index if market is not None else {}
        )
        missing = [s for s in self.symbols if s not in self.index]
        if missing:
            raise ValueError(f"symbols {missing} have no book index here")
        self._apply: Callable[[Rows], Any] = on_rows if on_rows is not None else market.apply  # type: ignore[union-attr]
        self.tls = tls
        self.pins = pins
        self.name = name
        self.backoff = backoff or Backoff()
        self.stall_timeout_s = stall_timeout_s
        #: The relay run the row numbers below belong to.
        self.run_id = ""
        #: Last row number applied, per symbol.
        self.seq: dict[str, int] = dict.fromkeys(self.symbols, 0)
        #: Why the link is down, or ``""``.
        self.last_error = ""
        self.connects = 0
        self.snapshots = 0
        self.conflated = 0
        self.resumed = 0
        self.rows = 0
        #: Increments whose first row did not follow the last one applied (0 unless broken).
        self.gaps = 0
        self._ws: ClientConnection | None = None
        self._task: asyncio.Task[None] | None = None
        self._synced: set[str] = set()
        self._ready: asyncio.Event | None = None
        self._closing = False
        self._rid = 0

    @property
    def endpoint(self) -> str:
        """Return ``host:port``."""
        return f"{self.host}:{self.port}"

    @property
    def connected(self) -> bool:
        """Return whether the link is up and subscribed."""
        return self._ws is not None

    async def start(self, timeout_s: float = 10.0) -> None:
        """Connect and wait until every symbol is synchronised (snapshot or resumption).

        Raises ``RelayError`` when the relay refuses or does not answer in ``timeout_s``.
        """
        self._ready = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)
        try:
            await asyncio.wait_for(self._ready.wait(), timeout_s)
        except TimeoutError:
            await self.close()
            raise RelayError(
                f"{self.endpoint}: not synchronised within {timeout_s:g} s "
                f"({self.last_error or 'no answer'})"
            ) from None
        if self._task.done():
            raise RelayError(f"{self.endpoint}: {self.last_error}")

    async def close(self) -> None:
        """Close the link and stop reconnecting."""
        self._closing = True
        if self._ws is not None:
            with contextlib.suppress(Exception):
                await self._ws.close()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def _stopping(self) -> bool:
        return self._closing

    def drop(self) -> None:
        """Cut the link abruptly (as a network failure would); the client reconnects."""
        if self._ws is not None:
            self._ws.transport.abort()

    # ------------------------------------------------------------------ the link
    async def _run(self) -> None:
        attempt = 0
        while not self._closing:
            connects = self.connects
            try:
                await self._session()
            except _Fatal as e:
                self.last_error = str(e)
                log.error("relay %s: %s", self.endpoint, e)
                if self._ready is not None:
                    self._ready.set()
                return
            except Exception as e:
                if not isinstance(
                    e,
                    OSError
                    | ConnectionClosed
                    | InvalidHandshake
                    | InvalidURI
                    | TimeoutError
                    | ProtocolError,
                ):
                    self.last_error = f"{type(e).__name__}: {e}"
                    log.exception("relay %s: applying what arrived failed", self.endpoint)
                    if self._ready is not None:
                        self._ready.set()
                    return
                self.last_error = str(e) or type(e).__name__
            finally:
                self._ws = None
            if self.connects > connects:
                attempt = 0  # it was up: the first retry comes soon again
            if self._stopping():
                return
            delay = self.backoff.delay(attempt)
            attempt += 1
            log.warning(
                "relay %s: link lost (%s); reconnecting in %.2f s",
                self.endpoint,
                self.last_error,
                delay,
            )
            await asyncio.sleep(delay)

    async def _recv(self, ws: ClientConnection, timeout_s: float) -> RelayServerMessage:
        frame = await asyncio.wait_for(ws.recv(), timeout_s)
        if isinstance(frame, str):
            raise ProtocolError("text frame from the relay")
        return decode_server(frame)

    async def _session(self) -> None:
        uri = f"{'wss' if self.tls else 'ws'}://{self.host}:{self.port}/"
        async with connect(
            uri,
            ssl=client_context() if self.tls else None,
            compression=None,
            max_size=MAX_SERVER_FRAME,
            open_timeout=10.0,
            ping_interval=5.0,
            ping_timeout=15.0,
            max_queue=256,
        ) as ws:
            if self.tls:
                self._check_pin(ws)
            await ws.send(encode(Hello(version=RELAY_VERSION, client=self.name)))
            welcome = await self._recv(ws, 10.0)
            if isinstance(welcome, Error):
                raise _Fatal(f"relay refused: {welcome.reason}")
            if not isinstance(welcome, Welcome):
                raise ProtocolError(f"expected welcome, got {type(welcome).__name__}")
            await ws.send(encode(Auth(token=self._token, resume_run=self.run_id)))
            ok = await self._recv(ws, 30.0)
            if isinstance(ok, Error):
                raise _Fatal(f"login refused: {ok.reason}")
            if not isinstance(ok, AuthOk):
                raise ProtocolError(f"expected auth-ok, got {type(ok).__name__}")
            same = welcome.run_id == self.run_id
            self.run_id = welcome.run_id
            self._rid += 1
            resume = [self.seq[s] if same else 0 for s in self.symbols]
            self._synced = set()
            await ws.send(encode(Subscribe(rid=self._rid, symbols=self.symbols, resume=resume)))
            self._ws = ws
            self.connects += 1
            self.last_error = ""
            # One deadline for the link, pushed back by every message (a wait_for per message
            # would cost a task each).
            loop = asyncio.get_running_loop()
            stall = self.stall_timeout_s
            async with asyncio.timeout(loop.time() + stall) as deadline:
                while True:
                    frame = await ws.recv()
                    deadline.reschedule(loop.time() + stall)
                    if isinstance(frame, str):
                        raise ProtocolError("text frame from the relay")
                    self._on(decode_server(frame))

    def _check_pin(self, ws: ClientConnection) -> None:
        assert self.pins is not None
        sslobj = ws.transport.get_extra_info("ssl_object")
        der = sslobj.getpeercert(binary_form=True) if sslobj is not None else None
        if not der:
            raise _Fatal("the relay presented no TLS certificate")
        presented = fingerprint(der)
        if not self.pins.check(self.endpoint, presented):
            raise _Fatal(
                f"the certificate of {self.endpoint} changed (now {presented}); if the relay's "
                f"certificate was renewed on purpose, forget the old pin in {self.pins.path}"
            )

    # ------------------------------------------------------------------ what arrives
    def _synchronised(self, symbol: str) -> None:
        self._synced.add(symbol)
        if self._ready is not None and len(self._synced) == len(self.symbols):
            self._ready.set()

    def _on(self, msg: RelayServerMessage) -> None:
        if isinstance(msg, Updates):
            self._updates(msg.items)
        elif isinstance(msg, BookSnap):
            self._snapshot(msg)
        elif isinstance(msg, SubAck):
            for s in msg.resumed:
                self.resumed += 1
                self._synchronised(s)
            if msg.unknown:
                raise _Fatal(f"the relay does not carry {', '.join(msg.unknown)}")
        elif isinstance(msg, Error):
            if msg.code == "shutdown":
                raise ConnectionClosedByRelay(msg.reason)
            log.warning("relay %s: error %s: %s", self.endpoint, msg.code, msg.reason)
        elif not isinstance(msg, Beat):
            raise ProtocolError(f"unexpected {type(msg).__name__} after login")

    def _rows(self, symbol: str, data: bytes) -> Rows:
        rows = np.frombuffer(data, L2_EVENT_DTYPE).copy()
        rows["book"] = self.index[symbol]
        return rows

    def _updates(self, items: list[tuple[str, int, bytes]]) -> None:
        """Check the runs of one ``md`` message follow on, then apply them in one call."""
        seq, index = self.seq, self.index
        parts: list[bytes] = []
        books: list[int] = []
        counts: list[int] = []
        after: dict[str, int] = {}  # applied only once every run is known to follow on
        for symbol, first, data in items:
            last = after.get(symbol, seq.get(symbol))
            if last is None:
                continue  # unsubscribed meanwhile
            if first != last + 1:
                # Never expected: the relay numbers rows without gaps. Resynchronise.
                self.gaps += 1
                log.error(
                    "relay %s: %s jumped from row %d to %d; asking for its book",
                    self.endpoint,
                    symbol,
                    last,
                    first,
                )
                raise ProtocolError(f"{symbol}: row {first} after {last}")
            n = len(data) // ROW
            after[symbol] = last + n
            parts.append(data)
            books.append(index[symbol])
            counts.append(n)
        if not parts:
            return
        seq.update(after)
        rows = np.frombuffer(b"".join(parts) if len(parts) > 1 else parts[0], L2_EVENT_DTYPE)
        rows = rows.copy()
        if len(books) == 1:
            rows["book"] = books[0]
        else:
            rows["book"] = np.array(books, np.int32).repeat(counts)
        self.rows += rows.shape[0]
        self._apply(rows)

    def _snapshot(self, msg: BookSnap) -> None:
        if msg.symbol not in self.seq:
            return
        levels = self._rows(msg.symbol, msg.rows)
        rows = np.zeros(levels.shape[0] + 1, L2_EVENT_DTYPE)
        rows[0]["ts"], rows[0]["book"], rows[0]["kind"] = msg.ts, self.index[msg.symbol], L2_CLEAR
        rows[1:] = levels
        self._apply(rows)
        self.seq[msg.symbol] = msg.seq
        self.snapshots += 1
        if msg.reason == "conflated":
            self.conflated += 1
        self._synchronised(msg.symbol)


async def _ask_catalog(probe: RelayClient, name: str, token: str, timeout_s: float) -> Catalog:
    host, port, tls = probe.host, probe.port, probe.tls
    uri = f"{'wss' if tls else 'ws'}://{host}:{port}/"
    async with connect(
        uri,
        ssl=client_context() if tls else None,
        compression=None,
        max_size=MAX_SERVER_FRAME,
        open_timeout=timeout_s,
        max_queue=16,
    ) as ws:
        if tls:
            probe._check_pin(ws)
        await ws.send(encode(Hello(version=RELAY_VERSION, client=name)))
        welcome = await probe._recv(ws, timeout_s)
        if isinstance(welcome, Error):
            raise _Fatal(f"relay refused: {welcome.reason}")
        await ws.send(encode(Auth(token=token)))
        ok = await probe._recv(ws, timeout_s + 30.0)  # a throttled login waits
        if isinstance(ok, Error):
            raise _Fatal(f"login refused: {ok.reason}")
        if not isinstance(ok, AuthOk):
            raise ProtocolError(f"expected auth-ok, got {type(ok).__name__}")
        if "catalog" not in ok.commands:
            raise _Fatal("this relay does not list its instruments (an older version)")
        await ws.send(encode(CatalogRequest(rid=1)))
        while True:
            msg = await probe._recv(ws, timeout_s)
            if isinstance(msg, Catalog):
                return msg
            if isinstance(msg, Error):
                raise _Fatal(f"{msg.code}: {msg.reason}")


async def fetch_catalog(
    host: str,
    port: int,
    token: str,
    *,
    tls: bool = False,
    pins: PinStore | None = None,
    name: str = "relay-catalog",
    timeout_s: float = 10.0,
) -> Catalog:
    """Return the instruments the relay at ``host:port`` carries (one short-lived link).

    The certificate is checked against ``pins`` before the token is sent, as a subscriber's.

    Raises
    ------
    RelayError
        One line saying why: unreachable, not a relay, refused (token, certificate,
        version), no answer within ``timeout_s``, or a relay too old to list its instruments.
    """
    from engine.relay.poller import describe_failure

    if tls and pins is None:
        raise ValueError("a TLS connection needs a PinStore to check the certificate")
    endpoint = f"{host}:{port}"
    probe = RelayClient(host, port, token, [], index={}, on_rows=lambda _: None, tls=tls, pins=pins)

    try:
        return await _ask_catalog(probe, name, token, timeout_s)
    except _Fatal as e:
        raise RelayError(f"{endpoint}: {e}") from None
    except (OSError, ConnectionClosed, InvalidHandshake, InvalidURI, TimeoutError) as e:
        raise RelayError(f"{endpoint}: {describe_failure(e, timeout_s)}") from None
    except ProtocolError as e:
        raise RelayError(f"{endpoint}: not a relay ({e})") from None


class ConnectionClosedByRelay(OSError):
    """The relay said it is stopping; the client reconnects later."""
