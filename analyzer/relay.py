# SPDX-License-Identifier: MIT
"""A market-data relay as the Analyzer's live source, without Qt (``docs/relay.md``).

:class:`RelayStream` runs a :class:`engine.relay.client.RelayClient` on an asyncio loop of its
own thread, keeps the relayed books in a :class:`engine.marketdata.MarketData` there, and hands
the GUI thread what :class:`analyzer.live.LiveFeed` takes from an engine: ``EventRecord`` s of
``InstrumentAdded`` (first, one per instrument), ``BookUpdated`` and ``TradeReported`` as they
happen, and a ``DepthChanged`` of each changed book every ``depth_interval_s`` (the depth
ladder's feed, as an engine's desk publishes it).

The hand-over is the console's :class:`engine.client.EventInbox`: bounded (``max_records``;
beyond it the oldest go and :attr:`RelayStream.dropped` counts them), with a wake-up called
from the stream's thread when records arrive after a drain. Only that inbox is shared: the
client, the books and the loop belong to the stream's thread, so a GUI that stops draining
costs the relay nothing (its link keeps up; the books stay current) and the memory stays
bounded.

Typical use on the GUI thread::

    stream = RelayStream("10.0.4.30", 7350, token, instruments, pins=PinStore(path))
    stream.set_wakeup(lambda: QMetaObject.invokeMethod(..., Qt.QueuedConnection))
    stream.start()                      # returns once every book came from the relay
    feed = LiveFeed(stream.name)
    update = feed.on_events(stream.drain())   # on each wake-up
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Sequence
from typing import Final

from engine.bus import MessageBus
from engine.client import EventInbox
from engine.clock import LiveClock
from engine.events import (
    BookUpdated,
    DepthChanged,
    Event,
    EventRecord,
    InstrumentAdded,
    TradeReported,
)
from engine.instruments import Instrument
from engine.marketdata import MarketData
from engine.relay.client import RelayClient, RelayError
from engine.remote.tls import PinStore

#: Levels per side of the ``DepthChanged`` records (what the Analyzer keeps of a book).
DEPTH_LEVELS: Final[int] = 10


class RelayStream:
    """Follow ``instruments`` on a relay from a thread of its own (module docstring).

    Parameters
    ----------
    host, port : str, int
        The relay.
    token : str
        A token of the relay's token store (any role).
    instruments : Sequence[Instrument]
        What to follow, with the tick and lot sizes displays need (the relay carries rows in
        ticks and lots only).
    tls : bool
        ``wss://``; the certificate must match the pin in ``pins`` (trust on first use).
    pins : PinStore | None
        Pinned fingerprints; required with ``tls``.
    name : str
        The stream's name (``LiveFeed``'s engine name; the link's name in the relay's status).
    max_records : int
        Records kept for a GUI that does not drain.
    depth_interval_s : float
        Period of the ``DepthChanged`` records of changed books; 0: none.
    n_levels : int
        Price window of each book, ticks per side.
    """

    def __init__(
        self,
        host: str,
        port: int,
        token: str,
        instruments: Sequence[Instrument],
        *,
        tls: bool = True,
        pins: PinStore | None = None,
        name: str = "",
        max_records: int = 200_000,
        depth_interval_s: float = 0.1,
        n_levels: int = 2000,
    ) -> None:
        if tls and pins is None:
            raise ValueError("a TLS connection needs a PinStore to check the certificate")
        if not instruments:
            raise ValueError("follow at least one instrument")
        symbols = [i.symbol for i in instruments]
        if len(set(symbols)) != len(symbols):
            raise ValueError(f"instruments listed twice: {symbols}")
        if depth_interval_s < 0:
            raise ValueError(f"depth_interval_s must be >= 0, got {depth_interval_s}")
        self.host = host
        self.port = port
        self._token = token
        self.instruments = list(instruments)
        self.tls = tls
        self.pins = pins
        self.name = name or f"relay {host}:{port}"
        self.depth_interval_s = depth_interval_s
        self.n_levels = n_levels
        self._inbox = EventInbox(max_records)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._client: RelayClient | None = None
        self._ready = threading.Event()
        self._error = ""
        self._closed = False
        # Owned by the stream's thread:
        self._seq = 0
        self._changed: set[str] = set()

    # ------------------------------------------------------------------ GUI thread
    @property
    def endpoint(self) -> str:
        """Return ``host:port``."""
        return f"{self.host}:{self.port}"

    @property
    def dropped(self) -> int:
        """Return how many records went because the GUI did not drain in time."""
        return self._inbox.dropped

    @property
    def state(self) -> str:
        """Return ``idle``, ``connecting``, ``up``, ``down: <why>``, ``failed: <why>``, ``closed``.

        ``down``: the link dropped and is being re-established; ``failed``: it never came up.
        """
        if self._closed:
            return "closed"
        if self._error:
            return f"failed: {self._error}"
        c = self._client
        if self._thread is None:
            return "idle"
        if c is None or not self._ready.is_set():
            return "connecting"
        return "up" if c.connected else f"down: {c.last_error or 'reconnecting'}"

    def start(self, timeout_s: float = 10.0) -> None:
        """Start the thread; return once every book came from the relay.

        Raises
        ------
        RelayError
            The relay refused (token, certificate, an instrument it does not carry) or did not
            synchronise in ``timeout_s``; the thread has stopped.
        """
        if self._thread is not None:
            raise RelayError(f"{self.name}: already started")
        self._thread = threading.Thread(
            target=self._main, args=(timeout_s,), name=f"qw-relay-{self.endpoint}", daemon=True
        )
        self._thread.start()
        if not self._ready.wait(timeout_s + 5.0):
            self.close()
            raise RelayError(f"{self.endpoint}: not synchronised within {timeout_s:g} s")
        if self._error:
            self._thread.join(5.0)
            raise RelayError(self._error)

    def drain(self, max_records: int | None = None) -> list[EventRecord]:
        """Return (and forget) the records received, oldest first."""
        return self._inbox.drain(max_records)

    def set_wakeup(self, callback: Callable[[], None] | None) -> None:
        """Call ``callback`` (from the stream's thread; it must not block) when records arrive."""
        self._inbox.set_wakeup(callback)

    def close(self, timeout_s: float = 5.0) -> None:
        """Close the link and stop the thread."""
        self._closed = True
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(stop.set)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    # ------------------------------------------------------------------ the stream's thread
    def _main(self, timeout_s: float) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._run(timeout_s))
        finally:
            loop.close()

    def _push(self, event: Event) -> None:
        self._seq += 1
        self._inbox.push(EventRecord(seq=self._seq, event=event))

    def _on_book(self, event: BookUpdated) -> None:
        self._changed.add(event.symbol)
        self._push(event)

    async def _run(self, timeout_s: float) -> None:
        self._stop = asyncio.Event()
        clock = LiveClock()
        bus = MessageBus()
        symbols = [i.symbol for i in self.instruments]
        market = MarketData(symbols, bus, clock, n_levels=self.n_levels)
        now = clock.now_ns()
        for i in self.instruments:
            self._push(
                InstrumentAdded(
                    ts_event=now,
                    symbol=i.symbol,
                    tick_size=str(i.tick_size),
                    lot_size=str(i.lot_size),
                    multiplier=str(i.multiplier),
                    currency=i.currency,
                    venue=self.name,
                )
            )
        bus.subscribe(BookUpdated, self._on_book)
        bus.subscribe(TradeReported, self._push)
        client = RelayClient(
            self.host,
            self.port,
            self._token,
            symbols,
            market=market,
            tls=self.tls,
            pins=self.pins,
            name=self.name,
        )
        self._client = client
        try:
            await client.start(timeout_s)
        except RelayError as e:
            self._error = str(e)
            self._ready.set()
            return
        self._ready.set()
        depth = None
        if self.depth_interval_s > 0:
            depth = asyncio.get_running_loop().create_task(self._depth(market, clock))
        try:
            await self._stop.wait()
        finally:
            if depth is not None:
                depth.cancel()
                await asyncio.gather(depth, return_exceptions=True)
            await client.close()

    async def _depth(self, market: MarketData, clock: LiveClock) -> None:
        """Publish the top levels of each book that changed, every ``depth_interval_s``."""
        while True:
            await asyncio.sleep(self.depth_interval_s)
            changed, self._changed = self._changed, set()
            now = clock.now_ns()
            for symbol in sorted(changed):
                bids, asks = market.books.top(market.index[symbol], DEPTH_LEVELS)
                self._push(
                    DepthChanged(
                        ts_event=now,
                        symbol=symbol,
                        bids=tuple((int(p), int(q)) for p, q in bids),
                        asks=tuple((int(p), int(q)) for p, q in asks),
                        last_trade_px_ticks=market.last_trade_px.get(symbol, 0),
                        own=(),
                    )
                )
