# SPDX-License-Identifier: MIT
"""The simulator's market as CME MDP 3.0 SBE messages: incremental and snapshot (issue 20).

:class:`SimMdp3Feed` watches every command the :class:`~engine.sim.exchange.SimExchange`
matches (``exchange.order_feed``, like :class:`~engine.sim.itch_feed.SimItchFeed`) and says
what changed as CME's incremental channel does, encoded from the schema XML
(:class:`~engine.feeds.sbe.encoder.SbeEncoder`):

* ``MDIncrementalRefreshTradeSummary`` (48): one entry per resting order a command traded
  with (price, size, aggressor side, the instrument's ``RptSeq``), and both orders' fills in
  ``NoOrderIDEntries``;
* ``MDIncrementalRefreshOrderBook`` (47): market by order: an order that rests is a New
  with the next ``MDOrderPriority``; one reduced in place a Change keeping its priority; one
  whose price changes or whose size grows a Change with a new priority (it goes to the back of
  the queue); one filled, canceled or expired a Delete;
* ``MDIncrementalRefreshBook`` (46): the ``depth``-level market by price that follows, as
  New / Change / Delete entries by ``MDPriceLevel`` (each side replayed level by level from
  what was published before, so a receiver applying them in order holds the same levels);
* ``SecurityStatus`` (30): :meth:`SimMdp3Feed.security_status` (per instrument or per
  ``SecurityGroup``); the feed starts with a ``MDInstrumentDefinitionFuture`` (54) and a
  ReadyToTrade status per instrument.

:meth:`SimMdp3Feed.snapshot` is one pass of the snapshot loop, CME's recovery channel: the
definitions, then per instrument a ``SnapshotFullRefresh`` (52: its levels, ``RptSeq``,
trading status) and its orders in ``SnapshotFullRefreshOrderBook`` (53) chunks, each with
``LastMsgSeqNumProcessed`` = the incremental packet they include.

Each instrument's ``SecurityID`` is :data:`SECURITY_ID_BASE` + its book index, its
``SecurityGroup`` and ``Asset`` the first two characters of its symbol unless given. Prices
are the instrument's ticks times its tick size, as the schema's price mantissa (``PRICE9``:
10⁻⁹); a tick that is not a whole number of mantissa units is refused at construction.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from engine.clock import Clock
from engine.feeds.multicast import Group
from engine.feeds.sbe.encoder import SbeEncoder
from engine.feeds.sbe.live import Mdp3Publisher
from engine.feeds.sbe.schema import Schema
from engine.feeds.sbe.schema_xml import load_schema

if TYPE_CHECKING:
    from engine.sim.exchange import OrderFeed, SimExchange

#: SecurityID of book 0 (book ``i`` has ``SECURITY_ID_BASE + i``).
SECURITY_ID_BASE = 100_001
#: SecurityTradingStatus values (CME's enum).
TRADING_HALT, CLOSE, READY_TO_TRADE, NOT_AVAILABLE, PRE_OPEN = 2, 4, 17, 18, 21
#: MDUpdateAction.
NEW, CHANGE, DELETE = 0, 1, 2
#: MatchEventIndicator bits.
LAST_TRADE, LAST_QUOTE, END_OF_EVENT = 0x01, 0x04, 0x80
#: Entries per message, so that one message fits one packet of 1,472 bytes.
MAX_ENTRIES = 30

_SIDE_TYPE = {1: "0", -1: "1"}  # BUY -> Bid, SELL -> Offer
_NS_PER_DAY = 86_400_000_000_000


class SimMdp3Feed:
    """Turn a simulator's matched commands into MDP 3.0 messages (see the module).

    Parameters
    ----------
    exchange : SimExchange
        The simulator; set ``exchange.order_feed`` to this feed.
    schema : Schema
        The MDP 3.0 schema (``templates_FixBinary.xml``, version 9 or later: templates 46, 47,
        48, 30, 52, 53, 54).
    ts : int
        Exchange time of the feed's start (ns since the epoch).
    depth : int
        Price levels a side of the market by price (CME futures: 10).
    groups : Mapping[str, str], optional
        ``SecurityGroup`` of each symbol (default: its first two characters).
    """

    def __init__(
        self,
        exchange: SimExchange,
        schema: Schema,
        ts: int,
        *,
        depth: int = 10,
        groups: Mapping[str, str] | None = None,
    ) -> None:
        if depth < 1:
            raise ValueError(f"depth: must be >= 1, got {depth}")
        self.exchange = exchange
        self.encoder = SbeEncoder(schema)
        for tid in (30, 46, 47, 48, 52, 53, 54):
            if tid not in schema.messages:
                raise ValueError(
                    f"{schema.path.name} (v{schema.version}) has no template {tid}: "
                    "the simulator's MDP 3.0 feed needs schema version 9 or later"
                )
        self.depth = depth
        exponent = schema.message(46).group("NoMDEntries").column("MDEntryPx.mantissa").exponent
        unit = Decimal(10) ** (exponent if exponent is not None else -9)
        self.symbols = exchange.symbols
        n = len(self.symbols)
        self.security_ids = [SECURITY_ID_BASE + i for i in range(n)]
        self.groups = [(groups or {}).get(s, s[:2]) for s in self.symbols]
        self._mantissa: list[int] = []  # mantissa units per tick, per book
        self._tick: list[Decimal] = []
        for book in exchange.books.values():
            tick = Decimal(book.listing.instrument.tick_size)
            per = tick / unit
            if per != per.to_integral_value() or per <= 0:
                raise ValueError(
                    f"{book.symbol}: tick size {tick} is not a whole number of the "
                    f"schema's price unit {unit}"
                )
            self._mantissa.append(int(per))
            self._tick.append(tick)
        self._messages: list[bytes] = []
        #: order id -> [book, side, px, qty, priority], as published (market by order)
        self._orders: dict[int, list[int]] = {}
        #: per book and side (0 bid, 1 offer): px -> [qty, orders], every published level
        self._levels: list[tuple[dict[int, list[int]], dict[int, list[int]]]] = [
            ({}, {}) for _ in range(n)
        ]
        #: per book and side: the top ``depth`` levels as published, [(px, qty, orders)]
        self._top: list[list[list[tuple[int, int, int]]]] = [[[], []] for _ in range(n)]
        self._rpt = [0] * n  # RptSeq per book
        self.status = [READY_TO_TRADE] * n
        self._priority = 0
        self._trade_id = 0
        self.trade_date = ts // _NS_PER_DAY  # days since the epoch (CME's LocalMktDate)
        self.messages_made = 0
        self._messages += self.definitions(ts)
        for b in range(n):
            self._status_message(ts, b, READY_TO_TRADE)

    # ------------------------------------------------------------------ out
    def take(self) -> list[bytes]:
        """Return the messages made since the last call (each once)."""
        out, self._messages = self._messages, []
        return out

    def put_back(self, messages: list[bytes]) -> None:
        """Keep ``messages`` (taken, not sent) ahead of the ones made since."""
        self._messages[:0] = messages

    def _add(self, template: int, root: dict[str, Any], groups: dict[str, Any] | None) -> None:
        self._messages.append(self.encoder.encode(template, root, groups))
        self.messages_made += 1

    def book_index(self, symbol: str) -> int:
        """Return the book index of ``symbol`` (KeyError naming the listed ones)."""
        try:
            return self.symbols.index(symbol)
        except ValueError:
            raise KeyError(
                f"{symbol!r} is not listed (listed: {', '.join(self.symbols)})"
            ) from None

    # ------------------------------------------------------------------ definitions, status
    def definitions(self, ts: int) -> list[bytes]:
        """Return a ``MDInstrumentDefinitionFuture`` (54) per instrument."""
        out = []
        n = len(self.symbols)
        for b, sym in enumerate(self.symbols):
            ins = self.exchange.books[sym].listing.instrument
            out.append(
                self.encoder.encode(
                    54,
                    {
                        "MatchEventIndicator": END_OF_EVENT,
                        "TotNumReports": n,
                        "SecurityUpdateAction": "A",
                        "LastUpdateTime": ts,
                        "MDSecurityTradingStatus": self.status[b],
                        "ApplID": 1,
                        "MarketSegmentID": 1,
                        "UnderlyingProduct": 14,
                        "SecurityExchange": "XCME",
                        "SecurityGroup": self.groups[b],
                        "Asset": self.groups[b],
                        "Symbol": sym[:20],
                        "SecurityID": self.security_ids[b],
                        "SecurityType": "FUT",
                        "CFICode": "FFIXSX",
                        "Currency": "USD",
                        "SettlCurrency": "USD",
                        "MatchAlgorithm": "F",
                        "MinTradeVol": 1,
                        "MaxTradeVol": 10_000,
                        "MinPriceIncrement.mantissa": self._mantissa[b],
                        "DisplayFactor.mantissa": 1_000_000_000,
                        "ContractMultiplier": int(ins.multiplier),
                        "UnitOfMeasureQty.mantissa": int(ins.multiplier) * 1_000_000_000,
                    },
                    {"NoMDFeedTypes": [{"MDFeedType": "GBX", "MarketDepth": self.depth}]},
                )
            )
        return out

    def security_status(
        self, ts: int, status: int, *, symbol: str | None = None, group: str | None = None
    ) -> None:
        """Publish a ``SecurityStatus`` (30) for one instrument or a whole ``SecurityGroup``.

        Raises
        ------
        ValueError
            Unless exactly one of ``symbol`` and ``group`` is given, or for a group no
            instrument is in.
        """
        if (symbol is None) == (group is None):
            raise ValueError("security_status: give a symbol or a group")
        if symbol is not None:
            self._status_message(ts, self.book_index(symbol), status)
            return
        books = [b for b, g in enumerate(self.groups) if g == group]
        if not books:
            raise ValueError(f"no instrument is in SecurityGroup {group!r}")
        for b in books:
            self.status[b] = status
        self._add(
            30,
            {
                "TransactTime": ts,
                "SecurityGroup": group,
                "Asset": group,
                "TradeDate": self.trade_date,
                "MatchEventIndicator": END_OF_EVENT,
                "SecurityTradingStatus": status,
                "HaltReason": 0,
                "SecurityTradingEvent": 0,
            },
            None,
        )

    def _status_message(self, ts: int, b: int, status: int) -> None:
        self.status[b] = status
        self._add(
            30,
            {
                "TransactTime": ts,
                "SecurityGroup": self.groups[b],
                "Asset": self.groups[b],
                "SecurityID": self.security_ids[b],
                "TradeDate": self.trade_date,
                "MatchEventIndicator": END_OF_EVENT,
                "SecurityTradingStatus": status,
                "HaltReason": 0,
                "SecurityTradingEvent": 0,
            },
            None,
        )

    # ------------------------------------------------------------------ the exchange's hook
    def on_command(self, locate: int, ts: int, oid: int, events: Sequence[Sequence[int]]) -> None:
        """Publish what one matched command changed (called by the exchange after it)."""
        from engine.matching.matcher import EV_KIND, EV_LIQUIDITY, EV_ORDER_ID, EV_PX, EV_QTY
        from engine.types import EXEC_TRADE, LIQ_MAKER

        b = locate - 1
        sid = self.security_ids[b]
        mant = self._mantissa[b]
        trades: list[dict[str, Any]] = []
        fills: list[dict[str, Any]] = []
        touched = [oid]
        for ev in events:
            order_id = int(ev[EV_ORDER_ID])
            if order_id != oid:
                touched.append(order_id)
            if ev[EV_KIND] == EXEC_TRADE and ev[EV_LIQUIDITY] == LIQ_MAKER:
                pub = self._orders.get(order_id)
                if pub is None:  # a maker never shown (cannot happen)
                    continue
                qty = int(ev[EV_QTY])
                self._rpt[b] += 1
                self._trade_id += 1
                trades.append(
                    {
                        "MDEntryPx.mantissa": int(ev[EV_PX]) * mant,
                        "MDEntrySize": qty,
                        "SecurityID": sid,
                        "RptSeq": self._rpt[b],
                        "NumberOfOrders": 2,
                        "AggressorSide": 1 if pub[1] < 0 else 2,  # the taker's: 1 buy, 2 sell
                        "MDUpdateAction": NEW,
                        "MDTradeEntryID": self._trade_id,
                    }
                )
                fills.append({"OrderID": order_id, "LastQty": qty})
                fills.append({"OrderID": oid, "LastQty": qty})
        orders: list[dict[str, Any]] = []
        seen: set[int] = set()
        for order_id in touched:
            if order_id not in seen:
                seen.add(order_id)
                self._reconcile(order_id, b, orders)
        levels = self._book_entries(b)
        self._event(ts, trades, fills, orders, levels)

    def _event(
        self,
        ts: int,
        trades: list[dict[str, Any]],
        fills: list[dict[str, Any]],
        orders: list[dict[str, Any]],
        levels: list[dict[str, Any]],
    ) -> None:
        """Add the messages of one event: trades, then orders, then levels, in chunks."""
        parts: list[tuple[int, dict[str, Any], int]] = []
        for i in range(0, len(trades), MAX_ENTRIES):
            # each trade's two order fills go with it
            chunk = {
                "NoMDEntries": trades[i : i + MAX_ENTRIES],
                "NoOrderIDEntries": fills[2 * i : 2 * (i + MAX_ENTRIES)],
            }
            parts.append((48, chunk, LAST_TRADE))
        parts += [
            (47, {"NoMDEntries": orders[i : i + MAX_ENTRIES]}, LAST_QUOTE)
            for i in range(0, len(orders), MAX_ENTRIES)
        ]
        parts += [
            (46, {"NoMDEntries": levels[i : i + MAX_ENTRIES], "NoOrderIDEntries": []}, LAST_QUOTE)
            for i in range(0, len(levels), MAX_ENTRIES)
        ]
        for k, (tid, groups, bit) in enumerate(parts):
            indicator = bit | (END_OF_EVENT if k == len(parts) - 1 else 0)
            self._add(tid, {"TransactTime": ts, "MatchEventIndicator": indicator}, groups)

    def _reconcile(self, order_id: int, b: int, out: list[dict[str, Any]]) -> None:
        pub = self._orders.get(order_id)
        now = self.exchange.resting(order_id)
        if now is None:
            if pub is not None:
                ob, side, px, qty, prio = pub
                self._level_add(ob, side, px, -qty, -1)
                out.append(self._order_entry(order_id, ob, side, px, 0, prio, DELETE))
                del self._orders[order_id]
            return
        side, px, leaves = now
        if pub is None:
            self._priority += 1
            self._orders[order_id] = [b, side, px, leaves, self._priority]
            self._level_add(b, side, px, leaves, 1)
            out.append(self._order_entry(order_id, b, side, px, leaves, self._priority, NEW))
            return
        _ob, _side, old_px, old_qty, prio = pub
        if px == old_px and leaves == old_qty:
            return
        if px != old_px or leaves > old_qty:  # loses its place
            self._priority += 1
            prio = self._priority
        self._level_add(b, side, old_px, -old_qty, -1)
        self._level_add(b, side, px, leaves, 1)
        self._orders[order_id] = [b, side, px, leaves, prio]
        out.append(self._order_entry(order_id, b, side, px, leaves, prio, CHANGE))

    def _order_entry(
        self, order_id: int, b: int, side: int, px: int, qty: int, prio: int, action: int
    ) -> dict[str, Any]:
        return {
            "OrderID": order_id,
            "MDOrderPriority": prio,
            "MDEntryPx.mantissa": px * self._mantissa[b],
            "MDDisplayQty": qty,
            "SecurityID": self.security_ids[b],
            "MDUpdateAction": action,
            "MDEntryType": _SIDE_TYPE[side],
        }

    def _level_add(self, b: int, side: int, px: int, qty: int, orders: int) -> None:
        lv = self._levels[b][0 if side > 0 else 1]
        cur = lv.get(px)
        if cur is None:
            cur = lv[px] = [0, 0]
        cur[0] += qty
        cur[1] += orders
        if cur[0] <= 0 and cur[1] <= 0:
            del lv[px]

    def levels(self, b: int, s: int) -> list[tuple[int, int, int]]:
        """Return the top ``depth`` levels ``(px, qty, orders)`` of book ``b``, side ``s``.

        ``s`` is 0 for bids (best first: highest), 1 for offers (lowest first).
        """
        lv = self._levels[b][s]
        pxs = sorted(lv, reverse=s == 0)[: self.depth]
        return [(p, lv[p][0], lv[p][1]) for p in pxs]

    def _book_entries(self, b: int) -> list[dict[str, Any]]:
        """Return the MBP entries that turn the published top levels of book ``b`` into today's."""
        out: list[dict[str, Any]] = []
        for s in (0, 1):
            new = self.levels(b, s)
            old = self._top[b][s]
            if new == old:
                continue
            keep = {p for p, _q, _n in new}
            cur = list(old)
            # Deletes first (deepest first, so the levels named are still where they were)
            for i in range(len(cur) - 1, -1, -1):
                if cur[i][0] not in keep:
                    out.append(self._level_entry(b, s, i + 1, cur[i], DELETE))
                    del cur[i]
            # then, level by level, a Change where the price is already there, else a New
            for i, lv in enumerate(new):
                if i < len(cur) and cur[i][0] == lv[0]:
                    if cur[i] != lv:
                        out.append(self._level_entry(b, s, i + 1, lv, CHANGE))
                        cur[i] = lv
                else:
                    out.append(self._level_entry(b, s, i + 1, lv, NEW))
                    cur.insert(i, lv)
                    del cur[self.depth :]
            self._top[b][s] = new
        return out

    def _level_entry(
        self, b: int, s: int, level: int, lv: tuple[int, int, int], action: int
    ) -> dict[str, Any]:
        self._rpt[b] += 1
        return {
            "MDEntryPx.mantissa": lv[0] * self._mantissa[b],
            "MDEntrySize": lv[1] if action != DELETE else 0,
            "SecurityID": self.security_ids[b],
            "RptSeq": self._rpt[b],
            "NumberOfOrders": lv[2] if action != DELETE else 0,
            "MDPriceLevel": level,
            "MDUpdateAction": action,
            "MDEntryType": "0" if s == 0 else "1",
        }

    # ------------------------------------------------------------------ the snapshot loop
    def snapshot(self, ts: int, last_seq: int) -> list[bytes]:
        """Return one pass of the snapshot loop, as of incremental packet ``last_seq``.

        The definitions, then per instrument its ``SnapshotFullRefresh`` (52) and its orders
        in ``SnapshotFullRefreshOrderBook`` (53) chunks (an empty book: one chunk of none).
        Call it after every incremental message made so far was sent, in packets up to
        ``last_seq``.
        """
        out = self.definitions(ts)
        n = len(self.symbols)
        enc = self.encoder
        by_book: list[list[tuple[int, list[int]]]] = [[] for _ in range(n)]
        for order_id, o in self._orders.items():
            by_book[o[0]].append((order_id, o))
        for b in range(n):
            mant = self._mantissa[b]
            entries = []
            for s in (0, 1):
                for i, (px, qty, cnt) in enumerate(self.levels(b, s)):
                    entries.append(
                        {
                            "MDEntryPx.mantissa": px * mant,
                            "MDEntrySize": qty,
                            "NumberOfOrders": cnt,
                            "MDPriceLevel": i + 1,
                            "MDEntryType": "0" if s == 0 else "1",
                        }
                    )
            out.append(
                enc.encode(
                    52,
                    {
                        "LastMsgSeqNumProcessed": last_seq,
                        "TotNumReports": n,
                        "SecurityID": self.security_ids[b],
                        "RptSeq": self._rpt[b],
                        "TransactTime": ts,
                        "LastUpdateTime": ts,
                        "TradeDate": self.trade_date,
                        "MDSecurityTradingStatus": self.status[b],
                    },
                    {"NoMDEntries": entries},
                )
            )
            orders = sorted(by_book[b], key=lambda x: x[1][4])  # by priority
            chunks = [orders[i : i + MAX_ENTRIES] for i in range(0, len(orders), MAX_ENTRIES)]
            chunks = chunks or [[]]
            for c, chunk in enumerate(chunks):
                out.append(
                    enc.encode(
                        53,
                        {
                            "LastMsgSeqNumProcessed": last_seq,
                            "TotNumReports": n,
                            "SecurityID": self.security_ids[b],
                            "NoChunks": len(chunks),
                            "CurrentChunk": c + 1,
                            "TransactTime": ts,
                        },
                        {
                            "NoMDEntries": [
                                {
                                    "OrderID": order_id,
                                    "MDOrderPriority": o[4],
                                    "MDEntryPx.mantissa": o[2] * mant,
                                    "MDDisplayQty": o[3],
                                    "MDEntryType": _SIDE_TYPE[o[1]],
                                }
                                for order_id, o in chunk
                            ]
                        },
                    )
                )
        return out

    def heartbeat(self) -> bytes:
        """Return an ``AdminHeartbeat`` (12) message."""
        return self.encoder.encode(12, {})

    def orders(self, b: int) -> dict[int, tuple[int, int, int]]:
        """Return the published orders of book ``b``: order id -> (side, px, qty)."""
        return {k: (o[1], o[2], o[3]) for k, o in self._orders.items() if o[0] == b}


# ----------------------------------------------------------------------------- serving


@dataclass(frozen=True, slots=True)
class Mdp3FeedOptions:
    """The simulator's market published as MDP 3.0: incremental A (and B), snapshot loop."""

    a: Group  # incremental feed A
    b: Group | None  # incremental feed B (the same packets)
    snapshot: Group  # the snapshot loop (recovery)
    schema: Path  # CME's templates_FixBinary.xml, version 9 or later
    heartbeat_s: float = 1.0  # an AdminHeartbeat after this long without a packet
    snapshot_interval_s: float = 0.25  # a pass of the snapshot loop this often


class _Fanout:
    """Several order feeds on the exchange's one hook (ITCH and MDP 3.0 both)."""

    def __init__(self, feeds: list[OrderFeed]) -> None:
        self.feeds = feeds

    def on_command(self, locate: int, ts: int, oid: int, events: Sequence[Sequence[int]]) -> None:
        """Tell every feed."""
        for f in self.feeds:
            f.on_command(locate, ts, oid, events)


class Mdp3Serving:
    """The MDP 3.0 feed while the simulator serves: the exchange's messages, the publisher.

    Raises
    ------
    engine.feeds.sbe.schema.SchemaError
        If the schema file cannot be read (a ``ValueError``).
    ValueError
        If it lacks a template the feed needs, or a tick does not fit its prices.
    OSError
        If the sending socket cannot be opened.
    """

    def __init__(self, exchange: SimExchange, clock: Clock, options: Mdp3FeedOptions) -> None:
        self.options = options
        self.clock = clock
        self.feed = SimMdp3Feed(exchange, load_schema(options.schema), clock.now_ns())
        hook = exchange.order_feed
        exchange.order_feed = self.feed if hook is None else _Fanout([hook, self.feed])
        self.publisher = Mdp3Publisher(options.a, options.b, options.snapshot)
        self._last_sent = 0.0
        self._task: asyncio.Task[None] | None = None

    def describe(self) -> str:
        """Return the line that says where the feed goes."""
        feeds = " and ".join(str(g) for g in self.publisher.groups)
        sch = self.feed.encoder.schema
        return (
            f"MDP 3.0 incremental on {feeds}; snapshot loop on {self.options.snapshot} "
            f"(schema {sch.id} v{sch.version}, SecurityIDs from {SECURITY_ID_BASE})"
        )

    async def start(self, out: TextIO) -> None:
        """Say where the feed goes, send what is due, and keep the loop and heartbeats going."""
        print(f"sim: {self.describe()}", file=out, flush=True)
        self.flush()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="mdp3-feed")

    def flush(self) -> None:
        """Send the messages the exchange made since the last call."""
        msgs = self.feed.take()
        if msgs:
            self.publisher.publish(msgs, self.clock.now_ns())
            self._last_sent = time.monotonic()

    def send_snapshot_loop(self) -> None:
        """Send one pass of the snapshot loop (after every incremental message made so far)."""
        self.flush()
        now = self.clock.now_ns()
        self.publisher.send_snapshot_loop(self.feed.snapshot(now, self.publisher.last_seq), now)

    async def _run(self) -> None:
        opts = self.options
        tick = min(opts.heartbeat_s / 4, opts.snapshot_interval_s)
        next_loop = time.monotonic()
        while True:
            await asyncio.sleep(tick)
            self.flush()
            now = time.monotonic()
            if now >= next_loop:
                self.send_snapshot_loop()
                next_loop = now + opts.snapshot_interval_s
            if now - self._last_sent >= opts.heartbeat_s:
                self.publisher.publish([self.feed.heartbeat()], self.clock.now_ns())
                self._last_sent = now

    async def stop(self) -> None:
        """Send what is left and close."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.flush()
        self.publisher.close()


__all__ = [
    "CLOSE",
    "NOT_AVAILABLE",
    "PRE_OPEN",
    "READY_TO_TRADE",
    "SECURITY_ID_BASE",
    "TRADING_HALT",
    "Mdp3FeedOptions",
    "Mdp3Serving",
    "SimMdp3Feed",
]
