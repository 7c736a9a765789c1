# SPDX-License-Identifier: MIT
"""What a relay relays: a tick store, another relay, an ITCH feed, FIX market data, an engine.

Every source applies ``L2_EVENT_DTYPE`` rows to the relay's market (``relay.market.apply``,
which publishes them), with ``book`` the relay's index of the instrument.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from engine.clock import Clock
from engine.fastlog import get_log
from engine.feeds.multicast import FeedReceiver, Group
from engine.fix.application import Application, DoNotSend, IncorrectTagValue, SessionID
from engine.fix.message import FixMessage, OutMessage
from engine.fix.session import FixSession
from engine.instruments import Instrument
from engine.marketdata import MarketData
from engine.relay.client import RelayClient
from engine.remote.tls import PinStore
from engine.tickstore.schema import to_l2_events
from engine.tickstore.store import TickStore
from engine.types import BUY, L2_EVENT_DTYPE, L2_SET, L2_TRADE, SELL
from engine.venues.fix.codes import FixValueError
from engine.venues.fix.feed import MARKET_DATA_TYPES, FixMarketData
from engine.venues.itch.feed import ItchMarketData

log = get_log(__name__)


class Source(Protocol):
    """A running source of rows (``kind``, ``symbols`` and ``state`` are for the status)."""

    name: str
    kind: str

    @property
    def symbols(self) -> Sequence[str]:
        """Return the instruments it feeds."""
        ...

    def state(self) -> str:
        """Return the source's state in a word or two."""
        ...

    async def start(self) -> None:
        """Start delivering rows."""
        ...

    async def stop(self) -> None:
        """Stop delivering rows."""
        ...


def load_day(path: Path, day: str, symbols: Sequence[str], index: dict[str, int]) -> np.ndarray:
    """Return every ``l2`` and ``trades`` row of ``symbols`` on ``day`` as L2 rows, by time.

    Raises
    ------
    ValueError
        If the store does not hold ``day`` for one of ``symbols`` (names the file).
    """
    parts = []
    with TickStore(path) as store:
        for s in symbols:
            if day not in store.days(s):
                raise ValueError(
                    f"{path}: holds no day {day} of {s} "
                    f"(days: {', '.join(store.days(s)) or 'none'})"
                )
            parts.append(
                to_l2_events(store.read(s, day, "l2"), store.read(s, day, "trades"), book=index[s])
            )
    rows = np.concatenate(parts) if parts else np.zeros(0, L2_EVENT_DTYPE)
    order = np.argsort(rows["ts"], kind="stable")
    out: np.ndarray = rows[order]
    return out


class TickStoreSource:
    """Replay a tick-store day into the relay at ``speed`` × real time (0: as fast as it goes).

    Rows go out every ``tick_ms`` in one batch: those whose venue time has come.
    """

    def __init__(
        self,
        market: MarketData,
        path: Path,
        day: str,
        symbols: Sequence[str],
        *,
        speed: float = 1.0,
        tick_ms: float = 1.0,
        batch_rows: int = 2000,
        name: str = "tickstore",
    ) -> None:
        self.market = market
        self.path = path
        self.day = day
        self.symbols = list(symbols)
        self.speed = speed
        self.tick_s = tick_ms / 1000
        self.batch_rows = batch_rows
        self.name = name
        self.kind = "tickstore"
        self.rows_sent = 0
        #: Set once every row was sent.
        self.done = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Read the day and start replaying it."""
        rows = load_day(self.path, self.day, self.symbols, self.market.index)
        self._task = asyncio.get_running_loop().create_task(self._run(rows), name=self.name)

    async def _run(self, rows: np.ndarray) -> None:
        n = rows.shape[0]
        i = 0
        if n == 0:
            self.done.set()
            return
        ts = rows["ts"]
        t0_venue = int(ts[0])
        t0 = time.perf_counter()
        while i < n:
            if self.speed > 0:
                now_venue = t0_venue + int((time.perf_counter() - t0) * self.speed * 1e9)
                j = int(np.searchsorted(ts, now_venue, side="right"))
                j = min(max(j, i), i + self.batch_rows * 50)
            else:
                j = min(n, i + self.batch_rows)
            if j > i:
                self.market.apply(rows[i:j])
                self.rows_sent += j - i
                i = j
            await asyncio.sleep(self.tick_s if self.speed > 0 else 0)
        log.info("tick-store source %s: %d rows replayed", self.name, n)
        self.done.set()

    def state(self) -> str:
        """Return ``replaying``, ``replayed`` or ``not started``."""
        if self.done.is_set():
            return "replayed"
        return "replaying" if self._task is not None else "not started"

    async def stop(self) -> None:
        """Stop replaying."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


class RelaySource:
    """Another relay (``qwconsole relay``) as a source: its rows, re-served here."""

    def __init__(
        self,
        market: MarketData,
        host: str,
        port: int,
        token: str,
        symbols: Sequence[str],
        *,
        tls: bool = False,
        pins: PinStore | None = None,
        name: str = "relay",
    ) -> None:
        self.name = name
        self.kind = "relay"
        self.symbols = list(symbols)
        self.client = RelayClient(
            host,
            port,
            token,
            symbols,
            market=market,
            tls=tls,
            pins=pins,
            name=f"relay-source {name}",
        )

    async def start(self) -> None:
        """Connect and subscribe (waits for the first books)."""
        await self.client.start()

    def state(self) -> str:
        """Return ``up`` or ``down: <why>``."""
        c = self.client
        return "up" if c.connected else f"down: {c.last_error or 'connecting'}"

    async def stop(self) -> None:
        """Close the link."""
        await self.client.close()


class ItchSource:
    """An ITCH 5.0 MoldUDP64 multicast feed (A/B, re-requests) into the relay's books."""

    def __init__(
        self,
        market: MarketData,
        clock: Clock,
        instruments: Sequence[Instrument],
        a: Group,
        b: Group | None,
        *,
        session: bytes = b"",
        recovery: tuple[str, int] | None = None,
        name: str = "itch",
    ) -> None:
        self.name = name
        self.kind = "itch"
        self.symbols = [ins.symbol for ins in instruments]
        self._joined = False
        self.itch = ItchMarketData(market, clock)
        for ins in instruments:
            self.itch.add_instrument(ins)
        self.receiver = FeedReceiver(
            a,
            b,
            self.itch.on_packets,
            session=session,
            recovery=recovery,
            name=name,
            on_lost=self.itch.on_lost,
        )

    async def start(self) -> None:
        """Join the groups."""
        await self.receiver.start()
        self._joined = True

    def state(self) -> str:
        """Return ``listening`` once the groups are joined."""
        return "listening" if self._joined else "not started"

    async def stop(self) -> None:
        """Leave the groups."""
        self._joined = False
        self.receiver.close()


class _FeedApplication(Application):
    """The FIX callbacks of a market-data-only session: everything goes to the feed."""

    def __init__(self, feed: FixMarketData) -> None:
        self.feed = feed
        self.session: FixSession | None = None
        self.logons = 0
        self.logged_out = ""
        self.rejected = 0

    def on_logon(self, session_id: SessionID) -> None:
        """Subscribe every instrument (one MarketDataRequest <V> each)."""
        self.logons += 1
        self.logged_out = ""
        if self.session is not None:
            self.feed.on_logon(self.session)

    def on_logout(self, session_id: SessionID) -> None:
        """Remember the session is down."""
        self.logged_out = "logged out"

    def resend_app(self, message: OutMessage, session_id: SessionID) -> None:
        """Gap-fill instead of resending a stale MarketDataRequest (the next logon asks again)."""
        raise DoNotSend

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        """Hand W, X and Y to the feed; a field it cannot read rejects the message (tag named)."""
        if message.msg_type not in MARKET_DATA_TYPES:
            return
        if message.msg_type == b"Y":
            self.rejected += 1
        try:
            self.feed.on_message(message, session_id)
        except FixValueError as e:
            log.warning("%s: %s", session_id, e)
            raise IncorrectTagValue(e.tag) from e


class FixSource:
    """A FIX market-data session (an initiator of a QuickFIX-style ``.cfg``) as a source.

    The session logs on, asks for each instrument with a MarketDataRequest <V> (snapshot plus
    updates, full depth) and the venue's snapshots <W> and incremental refreshes <X> become L2
    rows (:class:`engine.venues.fix.feed.FixMarketData`, the engine's own FIX market-data
    decoder). It reconnects every ``ReconnectInterval`` and subscribes again at each logon; a
    snapshot replaces the book, so nothing stale survives a reconnection.

    Parameters
    ----------
    market : MarketData
        The relay's books.
    clock : Clock
        Receive time of the rows.
    instruments : Sequence[Instrument]
        What to subscribe to (tick and lot sizes convert prices and sizes).
    sessions_file : Path
        QuickFIX-style settings; relative dictionary paths are taken from its folder.
    session_id : str
        The initiator session to use (``FIX.4.4:RELAY->VENUE``); ``""``: the file's first.
    name : str
        The source's name in the status.

    Raises
    ------
    ValueError
        The file has no such initiator session (``SettingsError`` for a malformed file).
    """

    def __init__(
        self,
        market: MarketData,
        clock: Clock,
        instruments: Sequence[Instrument],
        sessions_file: Path,
        *,
        session_id: str = "",
        name: str = "fix",
    ) -> None:
        from engine.fix.cli import build_session
        from engine.fix.transport import SocketInitiator

        self.name = name
        self.kind = "fix"
        self.symbols = [ins.symbol for ins in instruments]
        settings = pick_fix_session(sessions_file, session_id)
        self.session_id = str(settings.session_id)
        self.feed = FixMarketData(market, clock)
        for ins in instruments:
            self.feed.add_instrument(ins)
        self.app = _FeedApplication(self.feed)
        self.session = build_session(settings, self.app, sessions_file.parent, None)
        self.app.session = self.session
        self.initiator = SocketInitiator(
            self.session,
            settings.connect_addresses(),
            reconnect_interval=float(settings.reconnect_interval),
            clock=clock,
        )
        self._started = False

    async def start(self) -> None:
        """Start connecting (it logs on and subscribes when the venue answers)."""
        await self.initiator.start()
        self._started = True

    async def wait_logged_on(self, within: float = 10.0) -> None:
        """Return once the session is logged on; ``TimeoutError`` after ``within`` s."""
        await self.initiator.wait_logged_on(within)

    def state(self) -> str:
        """Return ``up``, ``down: connecting``, ``down: logged out``; rejected requests too."""
        if not self._started:
            return "not started"
        up = self.session.is_logged_on
        word = "up" if up else f"down: {self.app.logged_out or 'connecting'}"
        if self.app.rejected:
            word += f" ({self.app.rejected} requests rejected)"
        return word

    async def stop(self) -> None:
        """Log out and close the connection."""
        self._started = False
        await self.initiator.stop()
        self.session.close()


def pick_fix_session(sessions_file: Path, session_id: str = "") -> Any:
    """Return the settings of initiator ``session_id`` of ``sessions_file`` (``""``: the first).

    Raises
    ------
    ValueError
        No initiator session, or none with that id (the message names the file and the ids).
    """
    from engine.fix.settings import load_settings

    initiators = [s for s in load_settings(sessions_file).sessions if s.is_initiator]
    if not initiators:
        raise ValueError(
            f"{sessions_file}: no initiator sessions (the relay connects out to the venue)"
        )
    if not session_id:
        return initiators[0]
    for s in initiators:
        if str(s.session_id) == session_id:
            return s
    raise ValueError(
        f"{sessions_file}: no initiator session {session_id!r} "
        f"(there: {', '.join(str(s.session_id) for s in initiators)})"
    )


class EngineBooks:
    """An engine's displayed market data as L2 rows: books that show what the engine shows.

    An engine's remote server publishes the touch of a book on every change (``BookUpdated``),
    its top levels at most ~10 times a second (``DepthChanged``, ``engine.desk.DEPTH_LEVELS``)
    and every trade (``TradeReported``), not its full depth row by row. The rows made here keep
    a book per instrument equal to the last thing the engine said: a ``DepthChanged`` replaces
    both sides with its levels; a ``BookUpdated`` sets the touch and removes the levels better
    than it (they are gone); a trade is a trade row (its aggressor, else by the quote rule).

    Parameters
    ----------
    index : dict[str, int]
        Book index of each followed symbol (others are ignored).
    """

    def __init__(self, index: dict[str, int]) -> None:
        self.index = index
        self._levels: dict[str, tuple[dict[int, int], dict[int, int]]] = {
            s: ({}, {}) for s in index
        }

    def rows(self, events: Sequence[object]) -> np.ndarray:
        """Return the ``L2_EVENT_DTYPE`` rows of ``events`` (others are skipped), in order."""
        from engine.events import BookUpdated, DepthChanged, TradeReported

        out: list[tuple[int, int, int, int, int, int]] = []
        for e in events:
            symbol = getattr(e, "symbol", None)
            if symbol not in self.index:
                continue
            book = self.index[symbol]
            bids, asks = self._levels[symbol]
            if isinstance(e, BookUpdated):
                ts = e.ts_event
                self._touch(out, ts, book, BUY, bids, e.bid_px_ticks, e.bid_qty_lots)
                self._touch(out, ts, book, SELL, asks, e.ask_px_ticks, e.ask_qty_lots)
            elif isinstance(e, DepthChanged):
                self._replace(out, e.ts_event, book, BUY, bids, e.bids)
                self._replace(out, e.ts_event, book, SELL, asks, e.asks)
            elif isinstance(e, TradeReported):
                if e.aggressor is not None:
                    side = int(e.aggressor)
                else:
                    side = BUY if asks and e.px_ticks >= min(asks) else SELL
                out.append((e.ts_event, e.px_ticks, e.qty_lots, book, side, L2_TRADE))
        rows = np.zeros(len(out), L2_EVENT_DTYPE)
        for i, r in enumerate(out):
            rows[i] = r
        return rows

    @staticmethod
    def _touch(
        out: list[tuple[int, int, int, int, int, int]],
        ts: int,
        book: int,
        side: int,
        levels: dict[int, int],
        px: int,
        qty: int,
    ) -> None:
        gone = [p for p in levels if qty <= 0 or (p > px if side == BUY else p < px)]
        for p in gone:
            del levels[p]
            out.append((ts, p, 0, book, side, L2_SET))
        if qty > 0 and levels.get(px) != qty:
            levels[px] = qty
            out.append((ts, px, qty, book, side, L2_SET))

    @staticmethod
    def _replace(
        out: list[tuple[int, int, int, int, int, int]],
        ts: int,
        book: int,
        side: int,
        levels: dict[int, int],
        shown: Sequence[tuple[int, int]],
    ) -> None:
        new = {int(p): int(q) for p, q in shown if q > 0}
        for p in [p for p in levels if p not in new]:
            del levels[p]
            out.append((ts, p, 0, book, side, L2_SET))
        for p, q in new.items():
            if levels.get(p) != q:
                levels[p] = q
                out.append((ts, p, q, book, side, L2_SET))


class EngineSource:
    """A running engine's market data, over its remote server (``qwconsole engine --config``).

    A :class:`engine.remote.client.RemoteEngineClient` (its own thread, TLS, pinned
    certificate, token, reconnection) receives the engine's events; :class:`EngineBooks`
    turns its ``BookUpdated``, ``DepthChanged`` and ``TradeReported`` into rows on the relay's
    loop. The books are the engine's top levels (see :class:`EngineBooks`), not its full
    depth. An instrument whose tick size the engine gives otherwise than the relay's
    ``[[instruments]]`` is not relayed (the state says so).
    """

    def __init__(
        self,
        market: MarketData,
        instruments: Sequence[Instrument],
        host: str,
        port: int,
        token: str,
        *,
        tls: bool = True,
        pins: PinStore | None = None,
        name: str = "engine",
    ) -> None:
        from engine.remote.client import RemoteEngineClient

        self.name = name
        self.kind = "engine"
        self.market = market
        self.symbols = [i.symbol for i in instruments]
        self._ticks = {i.symbol: i.tick_size for i in instruments}
        self.books = EngineBooks({s: market.index[s] for s in self.symbols})
        self.client = RemoteEngineClient(
            host, port, token, tls=tls, pins=pins, name=f"relay {name}"
        )
        #: Instruments not relayed, with why.
        self.refused: dict[str, str] = {}
        self.rows_sent = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending = False

    async def start(self) -> None:
        """Attach to the engine (waits for its snapshot).

        Raises
        ------
        RelayError
            The engine refused (token, certificate, version) or did not answer.
        """
        from engine.client import EngineStartError
        from engine.relay.client import RelayError

        loop = asyncio.get_running_loop()
        self._loop = loop
        self.client.set_wakeup(self._wake)
        try:
            await loop.run_in_executor(None, self.client.start)
        except EngineStartError as e:
            raise RelayError(str(e)) from None
        self._pump()

    def _wake(self) -> None:
        """Have the relay's loop pump the events (called on the client's thread)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._pump)

    def _pump(self) -> None:
        from engine.events import InstrumentAdded

        events = [r.event for r in self.client.drain()]
        for e in events:
            if isinstance(e, InstrumentAdded) and e.symbol in self._ticks:
                mine = self._ticks[e.symbol]
                if Decimal(e.tick_size) != mine:
                    why = f"the engine's tick size is {e.tick_size}, the relay's {mine}"
                    if self.refused.get(e.symbol) != why:
                        log.error("engine source %s: %s not relayed: %s", self.name, e.symbol, why)
                    self.refused[e.symbol] = why
                    self.books.index.pop(e.symbol, None)
        rows = self.books.rows(events)
        if rows.shape[0]:
            self.market.apply(rows)
            self.rows_sent += rows.shape[0]

    def state(self) -> str:
        """Return ``up`` or ``down: <why>``, and instruments not relayed."""
        from engine.client import ClientState

        c = self.client
        word = "up" if c.state is ClientState.CONNECTED else f"down: {c.last_error or 'connecting'}"
        if self.refused:
            word += "; not relayed: " + "; ".join(f"{s} ({w})" for s, w in self.refused.items())
        return word

    async def stop(self) -> None:
        """Detach from the engine."""
        self.client.set_wakeup(None)
        if self._loop is not None:
            await self._loop.run_in_executor(None, self.client.close)
