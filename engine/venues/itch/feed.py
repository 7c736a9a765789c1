# SPDX-License-Identifier: MIT
"""Nasdaq TotalView-ITCH 5.0 market data into the engine's books (issue 20).

:class:`ItchMarketData` keeps every order of the instruments the engine follows (ITCH is
market by order) and turns each message into the market-by-price rows of
:class:`engine.marketdata.MarketData`: the new size of each level an order event touched
(``L2_SET``), and trades (``L2_TRADE``, the aggressor being the other side of the order
executed; hidden executions <P> and crosses <Q> too). Instruments are matched by the Stock
Directory <R> symbol; messages of other stocks are skipped in the decoder's arrays, not in
Python. Prices (4 implied decimals) are mapped to each instrument's ticks; a price that is not
on its grid is counted and logged, not applied.

:meth:`ItchMarketData.on_packets` takes MoldUDP64 packets in sequence order, as
:class:`engine.feeds.multicast.FeedReceiver` delivers them (A/B arbitrated, gaps re-requested):
``listen`` wires one up. A book that missed messages for good (the receiver declared them
lost) is cleared and rebuilt from the orders that arrive after.

The books here are kept in Python, message by message (a few µs each: the simulator's feed,
a few stocks of a real one); a whole day goes through the compiled
:class:`engine.feeds.itch.book.ItchBooks` instead (``qwconsole replay``).
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from typing import Any

import numpy as np

from engine.clock import Clock
from engine.fastlog import get_log
from engine.feeds.itch.decode import Decoded
from engine.feeds.itch.moldudp64 import decode_packets
from engine.instruments import Instrument
from engine.marketdata import MarketData
from engine.types import BUY, L2_CLEAR, L2_EVENT_DTYPE, L2_SET, L2_TRADE, SELL

log = get_log(__name__)

_ITCH_UNIT = Decimal("0.0001")
#: The message types that change books or print trades, in the order rows are merged.
_BOOK_TYPES = "RAFECXDUPQ"


class ItchMarketData:
    """ITCH messages into ``market``'s books (see the module docstring)."""

    def __init__(self, market: MarketData, clock: Clock) -> None:
        self.market = market
        self.clock = clock
        self._units: dict[str, int] = {}  # symbol -> ITCH price units per tick
        self._book_of: dict[int, int] = {}  # stock locate -> market book index
        self._scale: dict[int, int] = {}  # stock locate -> ITCH units per tick
        #: order reference number -> [locate, side, price in ITCH units, shares]
        self._orders: dict[int, list[int]] = {}
        #: (locate, side, ITCH price) -> shares resting
        self._levels: defaultdict[tuple[int, int, int], int] = defaultdict(int)
        self.messages = 0
        self.off_grid = 0
        self.unknown_orders = 0

    def add_instrument(self, instrument: Instrument) -> None:
        """Follow ``instrument`` (its Stock Directory message names it on the feed).

        Raises
        ------
        ValueError
            If its tick is not a whole number of ITCH's 0.0001 units.
        """
        units = Decimal(instrument.tick_size) / _ITCH_UNIT
        if units != units.to_integral_value() or units <= 0:
            raise ValueError(f"{instrument.symbol}: tick {instrument.tick_size} is finer than ITCH")
        self._units[instrument.symbol] = int(units)

    # ------------------------------------------------------------------ input
    def on_packets(self, packets: list[bytes], now_ns: int) -> None:
        """Apply MoldUDP64 packets (in sequence order, each message once)."""
        self.apply(decode_packets(packets, source="ITCH feed"))

    def on_lost(self, count: int = 0) -> None:
        """``count`` messages were lost for good: clear every book and forget every order."""
        log.error("ITCH feed: %d messages lost: the books start again from what follows", count)
        self._orders.clear()
        self._levels.clear()
        ts = self.clock.now_ns()
        rows = [(ts, 0, 0, b, 0, L2_CLEAR) for b in sorted(set(self._book_of.values()))]
        if rows:
            self.market.apply(np.array(rows, L2_EVENT_DTYPE))

    def apply(self, dec: Decoded) -> None:
        """Apply decoded messages to the books, in their sequence order."""
        for r in dec["R"].tolist():
            self._directory(r)
        merged: list[tuple[int, str, Any]] = []
        follow = np.fromiter(self._book_of, np.int64, len(self._book_of))
        for t in _BOOK_TYPES[1:]:
            rows = dec[t]
            if rows.shape[0]:
                rows = rows[np.isin(rows["stock_locate"], follow)]  # other stocks: skipped here
            if rows.shape[0]:
                names = rows.dtype.names or ()
                merged += [(row[0], t, dict(zip(names, row, strict=True))) for row in rows.tolist()]
        merged.sort(key=lambda x: x[0])
        self.messages += len(merged)
        out: list[tuple[int, int, int, int, int, int]] = []
        touched: dict[tuple[int, int, int], None] = {}
        ts = self.clock.now_ns()
        for _seq, t, m in merged:
            self._one(t, m, ts, touched, out)
        for key in touched:
            loc, side, px = key
            qty = self._levels.get(key, 0)
            if qty == 0:
                self._levels.pop(key, None)
            out.append((ts, px // self._scale[loc], qty, self._book_of[loc], side, L2_SET))
        if out:
            # Trades first, in the order they printed; then the levels they left.
            self.market.apply(np.array(out, L2_EVENT_DTYPE))

    def _directory(self, r: tuple[Any, ...]) -> None:
        _seq, _ts, locate, _tn, stock = r[:5]
        symbol = bytes(stock).decode("latin-1").strip()
        book = self.market.index.get(symbol)
        units = self._units.get(symbol)
        if book is not None and units is not None:
            self._book_of[int(locate)] = book
            self._scale[int(locate)] = units

    def _one(
        self,
        t: str,
        m: dict[str, Any],
        ts: int,
        touched: dict[tuple[int, int, int], None],
        out: list[tuple[int, int, int, int, int, int]],
    ) -> None:
        orders, levels = self._orders, self._levels
        if t in "AF":
            loc = int(m["stock_locate"])
            px = int(m["price"])
            if px % self._scale[loc]:
                self.off_grid += 1
                return
            side = BUY if m["buy_sell_indicator"] == b"B" else SELL
            shares = int(m["shares"])
            orders[int(m["order_reference_number"])] = [loc, side, px, shares]
            levels[(loc, side, px)] += shares
            touched[(loc, side, px)] = None
            return
        if t in "PQ":
            loc = int(m["stock_locate"])
            px = int(m["price"] if t == "P" else m["cross_price"])
            shares = int(m["shares"])
            if shares == 0 or px % self._scale[loc]:
                return
            side = 0 if t == "Q" else (SELL if m["buy_sell_indicator"] == b"B" else BUY)
            out.append(
                (ts, px // self._scale[loc], shares, self._book_of[loc], side or BUY, L2_TRADE)
            )
            return
        ref = int(m["original_order_reference_number"] if t == "U" else m["order_reference_number"])
        o = orders.get(ref)
        if o is None:
            self.unknown_orders += 1
            return
        loc, side, px, shares = o
        key = (loc, side, px)
        if t in "EC":
            qty = min(int(m["executed_shares"]), shares)
            tpx = px if t == "E" else int(m["execution_price"])
            if t == "E" or (m["printable"] == b"Y" and tpx % self._scale[loc] == 0):
                out.append((ts, tpx // self._scale[loc], qty, self._book_of[loc], -side, L2_TRADE))
        elif t == "X":
            qty = min(int(m["cancelled_shares"]), shares)
        else:  # D, and the old half of U
            qty = shares
        levels[key] -= qty
        touched[key] = None
        if shares - qty > 0:
            o[3] = shares - qty
        else:
            del orders[ref]
        if t == "U":
            npx = int(m["price"])
            if npx % self._scale[loc]:
                self.off_grid += 1
                return
            nshares = int(m["shares"])
            orders[int(m["new_order_reference_number"])] = [loc, side, npx, nshares]
            levels[(loc, side, npx)] += nshares
            touched[(loc, side, npx)] = None
