# SPDX-License-Identifier: MIT
"""FIX market data into the engine's books, separate from order entry.

:class:`FixMarketData` subscribes to its instruments with a MarketDataRequest <V> at each
logon of the session that carries it — one request per symbol: a venue rejects a whole request
for one symbol it does not publish (MarketDataRequestReject <Y>), which must not starve the
others — and turns MarketDataSnapshotFullRefresh <W> and MarketDataIncrementalRefresh <X> into
L2 rows for :class:`engine.marketdata.MarketData`: bids and offers as levels, trades (269=2)
with their aggressor by the quote rule. The order-entry adapter of the same session
(:class:`engine.venues.fix.adapter.FixVenue`, ``set_feed``) hands it the session's market-data
messages; it knows nothing of orders.
"""

import itertools

import numpy as np

from engine.clock import Clock
from engine.fastlog import get_log
from engine.fix.application import SessionID
from engine.fix.message import FixMessage, OutMessage
from engine.fix.session import FixSession
from engine.instruments import Instrument
from engine.marketdata import MarketData
from engine.types import BUY, L2_CLEAR, L2_EVENT_DTYPE, L2_SET, L2_TRADE, SELL
from engine.venues.fix.codes import FixNumbers, FixValueError

log = get_log(__name__)

#: The MsgTypes <35> a feed takes: snapshot, incremental refresh, request reject.
MARKET_DATA_TYPES = frozenset({b"W", b"X", b"Y"})


class FixMarketData:
    """The market data of one FIX session for ``market`` (see the module docstring).

    Parameters
    ----------
    market : MarketData
        The engine's books (only its symbols are subscribed to).
    clock : Clock
        Receive time of the rows.
    """

    def __init__(self, market: MarketData, clock: Clock) -> None:
        self.market = market
        self.clock = clock
        self._numbers: dict[str, FixNumbers] = {}
        self._md_req = itertools.count(1)

    def add_instrument(self, instrument: Instrument) -> None:
        """Follow ``instrument`` (subscribed at the next logon if ``market`` has it)."""
        self._numbers[instrument.symbol] = FixNumbers(instrument)

    def on_logon(self, session: FixSession) -> None:
        """Subscribe to every followed instrument the books hold, one request each."""
        for symbol in [s for s in self.market.symbols if s in self._numbers]:
            session.send(self._request([symbol]))

    def on_message(self, message: FixMessage, session_id: SessionID) -> None:
        """Apply a W or X to the books; log a Y.

        Raises
        ------
        FixValueError
            A field cannot be read (the session rejects the message, naming the tag).
        """
        if message.msg_type == b"Y":
            log.warning(
                "%s: market data request %s rejected: %s",
                session_id,
                (message.get(262) or b"").decode("latin-1"),
                (message.get(58) or b"no reason given").decode("latin-1"),
            )
            return
        self._apply(message)

    def _request(self, symbols: list[str]) -> OutMessage:
        msg = OutMessage(
            b"V",
            [(262, b"MD%d" % next(self._md_req)), (263, b"1"), (264, b"0"), (265, b"1")],
        )
        msg.add_group(267, [[(269, b"0")], [(269, b"1")], [(269, b"2")]])
        msg.add_group(146, [[(55, s.encode())] for s in symbols])
        return msg

    def _apply(self, m: FixMessage) -> None:
        market = self.market
        snapshot = m.msg_type == b"W"
        rows: list[tuple[int, int, int, int, int, int]] = []
        ts = self.clock.now_ns()
        symbol = (m.get(55) or b"").decode("latin-1") if snapshot else ""
        if snapshot:
            if symbol not in market.index:
                raise FixValueError(55, symbol.encode(), "is not an instrument this engine follows")
            rows.append((ts, 0, 0, market.index[symbol], 0, L2_CLEAR))
        for e in group_entries(m, 268, 269 if snapshot else 279):
            sym = e.get(55, b"").decode("latin-1") or symbol
            book = market.index.get(sym)
            if book is None:
                continue
            nums = self._numbers.get(sym)
            if nums is None:
                continue
            px = nums.px_ticks(270, e.get(270))
            qty = nums.qty_lots(271, e.get(271)) if e.get(271) else 0
            kind = e.get(269)
            if kind in (b"0", b"1"):
                side = BUY if kind == b"0" else SELL
                rows.append((ts, px, 0 if e.get(279) == b"2" else qty, book, side, L2_SET))
            elif kind == b"2":
                ask = market.books.best_ask(book)
                side = BUY if ask is not None and px >= ask[0] else SELL  # quote rule
                rows.append((ts, px, qty, book, side, L2_TRADE))
        if rows:
            arr = np.zeros(len(rows), L2_EVENT_DTYPE)
            for i, row in enumerate(rows):
                arr[i] = row
            market.apply(arr)


def group_entries(m: FixMessage, count_tag: int, delimiter: int) -> list[dict[int, bytes]]:
    """Return the entries of a flat (non-nested) repeating group as tag -> value dicts."""
    entries: list[dict[int, bytes]] = []
    entry: dict[int, bytes] = {}
    in_group = False
    for tag, value in m.pairs:
        if tag == count_tag:
            in_group = True
        elif in_group:
            if tag == delimiter and entry:
                entries.append(entry)
                entry = {}
            entry[tag] = value
    if entry:
        entries.append(entry)
    return entries
