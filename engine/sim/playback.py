# SPDX-License-Identifier: MIT
"""Recorded ticks as the simulator's market: L2 history played into a :class:`SimExchange` book.

:class:`TickPlayback` turns a recorded L2 stream (``L2_EVENT_DTYPE`` rows, e.g. a day of the
tick store through ``engine.tickstore.schema.to_l2_events``) into participant orders at the
simulated exchange, in simulated time, so that client orders trade against the recorded
market with price-time priority:

* a level change adds the increase as a new order at the back of the level, or takes a
  decrease from the playback's newest orders at that level (a client order keeps its place:
  recorded cancels are assumed to come from behind it, as the conservative queue model does);
* a recorded trade is replayed as an IOC order of the aggressor's side at the trade price, so
  it reaches resting client orders in their turn;
* a clear removes every playback order.

The playback keeps each level at its recorded size (what client fills took from it is put back
at the next recorded change of that level). It runs besides the random participants or
instead of them (a listing with ``FlowConfig(events_per_second=0)``); attach it with
``SimExchange.attach_playback`` and every ``SimExchange.step`` plays what is due.
"""

from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

from engine.instruments import Instrument
from engine.oms.venue import ExecutionReport
from engine.sim.exchange import FlowConfig, SimExchange, SimInstrument
from engine.types import BUY, L2_CLEAR, L2_EVENT_DTYPE, L2_SET, L2_TRADE, SELL


class TickPlayback:
    """Play a recorded L2 stream of one instrument into a simulated exchange.

    Parameters
    ----------
    exchange : SimExchange
        Where the recorded market is played (the instrument must be listed there).
    symbol : str
        The listed instrument the recording belongs to.
    events : numpy.ndarray
        ``L2_EVENT_DTYPE`` rows of one book, sorted by ``ts``.
    start_ns : int
        Simulated time at which the first recorded event plays.
    speed : float
        Recorded seconds per simulated second (2.0 plays twice as fast).
    px_offset : int
        Ticks added to every recorded price (to move a recording into the listing's range).
    loop : bool
        Start again from the beginning after the last event.
    """

    def __init__(
        self,
        exchange: SimExchange,
        symbol: str,
        events: npt.NDArray[np.void],
        *,
        start_ns: int,
        speed: float = 1.0,
        px_offset: int = 0,
        loop: bool = False,
    ) -> None:
        if events.dtype != L2_EVENT_DTYPE:
            raise ValueError(f"events: dtype must be L2_EVENT_DTYPE, got {events.dtype}")
        if symbol not in exchange.books:
            raise ValueError(
                f"symbol {symbol!r} is not listed (listed: {', '.join(exchange.symbols)})"
            )
        if not speed > 0:
            raise ValueError(f"speed: must be > 0, got {speed}")
        if events.shape[0] and bool((np.diff(events["ts"]) < 0).any()):
            bad = int(np.argmax(np.diff(events["ts"]) < 0)) + 1
            raise ValueError(f"events: row {bad} is earlier than row {bad - 1}; sort by ts")
        self.exchange = exchange
        self.symbol = symbol
        self.speed = speed
        self.px_offset = px_offset
        self.loop = loop
        self._ts = events["ts"].astype(np.int64)
        self._kind = events["kind"].tolist()
        self._side = events["side"].tolist()
        self._px = (events["px"] + px_offset).tolist()
        self._qty = events["qty"].tolist()
        self._t0 = int(self._ts[0]) if events.shape[0] else 0
        self._start = start_ns
        self._next = 0
        self._levels: dict[tuple[int, int], list[int]] = defaultdict(list)  # FIFO of our ids
        #: Recorded events played so far (over every loop).
        self.played = 0

    @property
    def done(self) -> bool:
        """Return whether every recorded event was played (never, when looping)."""
        return self._next >= len(self._kind) and not self.loop

    def due(self, now_ns: int) -> int:
        """Return the index after the last recorded event due by ``now_ns``."""
        recorded = self._t0 + int((now_ns - self._start) * self.speed)
        return int(np.searchsorted(self._ts, recorded, side="right"))

    def step(self, now_ns: int) -> list[ExecutionReport]:
        """Play every recorded event due by ``now_ns``; return the client reports."""
        out: list[ExecutionReport] = []
        n = len(self._kind)
        while n:
            end = self.due(now_ns)
            for i in range(self._next, end):
                out += self._play(i, now_ns)
            self.played += max(0, end - self._next)
            self._next = max(self._next, end)
            if not (self.loop and self._next >= n):
                break
            # start the recording again right after its end
            span = int((int(self._ts[-1]) - self._t0) / self.speed) + 1
            self._start += span
            self._next = 0
            for key in list(self._levels):
                out += self._set(key, 0, now_ns)
        return out

    def _play(self, i: int, ts: int) -> list[ExecutionReport]:
        kind = self._kind[i]
        if kind == L2_SET:
            return self._set((self._side[i], self._px[i]), self._qty[i], ts)
        if kind == L2_TRADE:
            side = self._side[i]
            if side not in (BUY, SELL):
                side = self._aggressor(self._px[i])
            _oid, out = self.exchange.add_flow_order(
                self.symbol, side, self._px[i], self._qty[i], ts, ioc=True
            )
            return out
        if kind == L2_CLEAR:
            out = []
            for key in list(self._levels):
                out += self._set(key, 0, ts)
            return out
        return []

    def _aggressor(self, px: int) -> int:
        bids, asks = self.exchange.depth(self.symbol, 1)
        if asks and px >= asks[0][0]:
            return BUY
        if bids and px <= bids[0][0]:
            return SELL
        return BUY

    def _set(self, key: tuple[int, int], qty: int, ts: int) -> list[ExecutionReport]:
        ex = self.exchange
        ids = [oid for oid in self._levels[key] if ex.flow_leaves(oid) > 0]
        have = sum(ex.flow_leaves(oid) for oid in ids)
        out: list[ExecutionReport] = []
        if qty > have:
            oid, rep = ex.add_flow_order(self.symbol, key[0], key[1], qty - have, ts)
            out += rep
            if ex.flow_leaves(oid) > 0:
                ids.append(oid)
        elif qty < have:
            cut = have - qty
            for oid in reversed(ids):
                if cut <= 0:
                    break
                leaves = ex.flow_leaves(oid)
                take = min(leaves, cut)
                out += ex.reduce_flow_order(oid, leaves - take, ts)
                cut -= take
            ids = [oid for oid in ids if ex.flow_leaves(oid) > 0]
        if ids:
            self._levels[key] = ids
        else:
            self._levels.pop(key, None)
        return out


def playback_listing(
    instrument: Instrument, events: npt.NDArray[np.void], *, margin_ticks: int = 2000
) -> SimInstrument:
    """Return a listing that fits a recording's prices, with no random participants."""
    if events.shape[0] == 0:
        raise ValueError("events: an empty recording has no price range")
    lo, hi = int(events["px"].min()), int(events["px"].max())
    return SimInstrument(
        instrument=instrument,
        start_px_ticks=(lo + hi) // 2,
        n_levels=hi - lo + 1 + 2 * margin_ticks,
        flow=replace(FlowConfig(), events_per_second=0.0),
    )


def load_recorded(
    store_path: str | Path, symbol: str, day: str, t0: int | None = None, t1: int | None = None
) -> npt.NDArray[np.void]:
    """Return the recorded L2 stream (depth deltas with trades merged) of one stored day."""
    from engine.tickstore.schema import to_l2_events
    from engine.tickstore.store import TickStore

    with TickStore(store_path, "r") as store:
        deltas = store.read(symbol, day, "l2", t0, t1)
        trades = store.read(symbol, day, "trades", t0, t1)
    return to_l2_events(deltas, trades)
