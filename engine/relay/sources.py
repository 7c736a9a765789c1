# SPDX-License-Identifier: MIT
"""What a relay relays: a tick store replayed at a speed, another relay, an ITCH multicast feed.

Every source applies ``L2_EVENT_DTYPE`` rows to the relay's market (``relay.market.apply``,
which publishes them), with ``book`` the relay's index of the instrument.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from engine.clock import Clock
from engine.fastlog import get_log
from engine.feeds.multicast import FeedReceiver, Group
from engine.instruments import Instrument
from engine.marketdata import MarketData
from engine.relay.client import RelayClient
from engine.remote.tls import PinStore
from engine.tickstore.schema import to_l2_events
from engine.tickstore.store import TickStore
from engine.types import L2_EVENT_DTYPE
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
