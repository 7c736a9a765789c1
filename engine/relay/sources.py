# SPDX-License-Identifier: MIT
"""What a relay relays: a tick store, another relay, an ITCH feed, a FIX market-data session.

Every source applies ``L2_EVENT_DTYPE`` rows to the relay's market (``relay.market.apply``,
which publishes them), with ``book`` the relay's index of the instrument.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
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
from engine.types import L2_EVENT_DTYPE
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
                raise ValueError(f"{path}: holds no day {day} of {s} "
                                 f"(days: {', '.join(store.days(s)) or 'none'})")  # fmt: skip
            parts.append(to_l2_events(store.read(s, day, "l2"), store.read(s, day, "trades"),
                                      book=index[s]))  # fmt: skip
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
        self.client = RelayClient(host, port, token, symbols, market=market, tls=tls,
                                  pins=pins, name=f"relay-source {name}")  # fmt: skip

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
        self.receiver = FeedReceiver(a, b, self.itch.on_packets, session=session,
                                     recovery=recovery, name=name,
                                     on_lost=self.itch.on_lost)  # fmt: skip

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
        self.initiator = SocketInitiator(self.session, settings.connect_addresses(),
                                         reconnect_interval=float(settings.reconnect_interval),
                                         clock=clock)  # fmt: skip
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
        raise ValueError(f"{sessions_file}: no initiator sessions (the relay connects out "
                         "to the venue)")  # fmt: skip
    if not session_id:
        return initiators[0]
    for s in initiators:
        if str(s.session_id) == session_id:
            return s
    raise ValueError(f"{sessions_file}: no initiator session {session_id!r} "
                     f"(there: {', '.join(str(s.session_id) for s in initiators)})")  # fmt: skip
