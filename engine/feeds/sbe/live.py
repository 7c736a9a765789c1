# SPDX-License-Identifier: MIT
"""Live CME MDP 3.0: books from the incremental channel, recovered from the snapshot loop.

CME publishes each channel's market on an *incremental* feed (A and B copies of every
packet, numbered by ``MsgSeqNum``) and loops a *snapshot* feed: per instrument its whole book
(``SnapshotFullRefresh`` 52, market by order in ``SnapshotFullRefreshOrderBook`` 53 chunks),
each saying the last incremental packet it includes (``LastMsgSeqNumProcessed``, tag 369).

:class:`Mdp3Books` (sans-IO) keeps the books of one channel:

* **In sync**, every incremental packet (in sequence order, once: the A/B arbitration is
  :class:`~engine.feeds.arbiter.Arbiter`'s) is decoded with the schema
  (:class:`~engine.feeds.sbe.decoder.SbeDecoder`) and applied: ``MDIncrementalRefreshBook``
  price levels (New / Change / Delete / DeleteThru / DeleteFrom / Overlay by
  ``MDPriceLevel``, book resets; implied entries left out), ``MDIncrementalRefreshOrderBook``
  orders, trades, ``SecurityStatus`` (per instrument or per ``SecurityGroup``, mapped to
  instruments through their definitions), ``MDInstrumentDefinitionFuture``.
* **Recovering** (at the start: a late joiner; after packets were lost on both feeds: CME's
  gap recovery), incremental packets are buffered, not applied, and the snapshot loop is
  read (:attr:`Mdp3Books.wants_snapshots`). An instrument's snapshot is usable once the
  buffer holds every packet after its ``LastMsgSeqNumProcessed`` (the buffer starts at or
  before the packet after it). When the loop gave a usable snapshot of every instrument
  (``TotNumReports`` of them), each book is set from its snapshot and the buffered packets
  after its own ``LastMsgSeqNumProcessed`` are applied to it; packets that arrive later and
  that a snapshot already included are skipped for that instrument. The books are in sync
  again.

Books are market by price ``depth`` levels a side (as CME sends), and market by order when
``mbo`` is set (then a snapshot needs its 53 chunks too). Changes go to a
:class:`~engine.marketdata.MarketData` as ``L2_EVENT_DTYPE`` rows, as the ITCH receiver's do
(the levels an update touched, trades with the aggressor's side, a clear and the snapshot's
levels after a recovery). Instruments are the ones added with :meth:`Mdp3Books.add_instrument`,
matched by the definitions' ``Symbol``, or by SecurityID with :meth:`Mdp3Books.add_security`.

:class:`Mdp3Receiver` is the asyncio side: it joins the incremental A and B groups, declares a
gap lost after ``gap_timeout_ns`` (the other feed usually fills it first) and joins the
snapshot group while the books recover, leaving it once they are in sync.
:class:`Mdp3Publisher` is the sending side: it numbers and packs messages into MDP 3.0 packets
for the incremental A and B groups, and sends snapshot loops (numbered from 1 each loop, as
CME does) to the snapshot group.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import partial
from typing import Any

import numpy as np

from engine.clock import Clock
from engine.fastlog import get_log
from engine.feeds.arbiter import FEED_NAMES, Arbiter, Mdp3Packets
from engine.feeds.multicast import MAX_PAYLOAD, Group, open_receiver, open_sender
from engine.feeds.sbe import _kernels as k
from engine.feeds.sbe.decoder import MDP3_FRAMING, Decoded, DecodeIssue, SbeDecoder, pack_packets
from engine.feeds.sbe.encoder import pack_mdp3
from engine.feeds.sbe.schema import Schema
from engine.instruments import Instrument
from engine.marketdata import MarketData
from engine.types import BUY, L2_CLEAR, L2_EVENT_DTYPE, L2_SET, L2_TRADE, SELL

log = get_log(__name__)

#: What each template is, by its ``description`` in CME's schemas (any version).
KINDS = {
    "MDIncrementalRefreshBook": "book",
    "MDIncrementalRefreshOrderBook": "orders",
    "MDIncrementalRefreshTradeSummary": "trades",
    "SecurityStatus": "status",
    "MDInstrumentDefinitionFuture": "definition",
    "MDInstrumentDefinitionSpread": "definition",
    "MDInstrumentDefinitionOption": "definition",
    "SnapshotFullRefresh": "snapshot",
    "SnapshotFullRefreshOrderBook": "snapshot_orders",
    "ChannelReset": "reset",
}
#: MDUpdateAction values.
NEW, CHANGE, DELETE, DELETE_THRU, DELETE_FROM, OVERLAY = 0, 1, 2, 3, 4, 5
#: SecurityTradingStatus: the values in which the market matches orders.
TRADING_STATUSES = frozenset({17})  # ReadyToTrade
_BID, _OFFER, _RESET = b"0", b"1", b"J"
_PX = "NoMDEntries:MDEntryPx.mantissa"
_NULL_I64, _NULL_I32 = -(2**63), -(2**31)

Entry = dict[str, Any]
Level = list[int]  # [px_ticks, qty, orders]


@dataclass(slots=True)
class _Message:
    index: int
    seq: int  # MsgSeqNum of its packet
    kind: str
    root: Entry
    groups: dict[str, list[Entry]]


@dataclass(slots=True)
class _Snapshot:
    last_seq: int
    total: int
    rpt_seq: int
    status: int | None
    levels: tuple[list[Level], list[Level]]  # [MDPriceLevel, px, qty, orders] by level
    orders: dict[int, tuple[int, int, int, int]] | None = None  # id -> side, px, qty, priority
    chunks: dict[int, list[Entry]] = field(default_factory=dict)
    n_chunks: int = 0


@dataclass(slots=True)
class _Security:
    """One followed instrument: its books (MBP levels, MBO orders) and status."""

    security_id: int
    book: int  # index in the MarketData (-1: none)
    tick9: int  # one tick in 10^-9 price units
    symbol: str = ""
    group: str = ""
    levels: tuple[list[Level], list[Level]] = field(default_factory=lambda: ([], []))  # slots
    orders: dict[int, tuple[int, int, int, int]] = field(default_factory=dict)
    applied: int = -1  # its book includes every incremental packet up to this one
    status: int | None = None
    rpt_seq: int = 0


@dataclass(slots=True)
class Mdp3Stats:
    """What :class:`Mdp3Books` did."""

    packets: int = 0  # incremental packets applied or buffered
    messages: int = 0
    recoveries: int = 0  # times the books were set from the snapshot loop
    snapshots_used: int = 0
    stale_snapshots: int = 0  # snapshots older than the buffered packets (waited for newer)
    skipped_entries: int = 0  # entries a snapshot already included
    off_grid: int = 0  # prices not on the instrument's tick
    bad_levels: int = 0  # MBP entries whose level is outside 1..depth
    implied: int = 0  # implied entries left out
    decode_issues: int = 0
    dropped_buffered: int = 0  # buffered packets dropped (the buffer was full)


def _templates(schema: Schema) -> dict[int, str]:
    return {
        tid: KINDS[m.description] for tid, m in schema.messages.items() if m.description in KINDS
    }


def _exponents(schema: Schema, wanted: dict[int, str]) -> dict[tuple[int, str], int]:
    """Exponent (to 10^-9 units: ``mantissa * 10**(exp + 9)``) of each price column."""
    out: dict[tuple[int, str], int] = {}
    for tid in wanted:
        msg = schema.messages[tid]
        for blk, path in [(msg, "")] + [(g, g.name) for g in msg.groups]:
            for c in blk.columns:
                if c.name.endswith(".mantissa") and c.exponent is not None:
                    out[(tid, f"{path}:{c.name}")] = c.exponent + 9
    return out


#: The columns read of each kind of message: (root, NoMDEntries), ``None``: all of them.
_COLUMNS: dict[str, tuple[tuple[str, ...] | None, tuple[str, ...] | None]] = {
    "book": (
        ("TransactTime",),
        (
            "MDEntryPx.mantissa",
            "MDEntrySize",
            "SecurityID",
            "NumberOfOrders",
            "MDPriceLevel",
            "MDUpdateAction",
            "MDEntryType",
        ),
    ),
    "orders": (
        ("TransactTime",),
        (
            "OrderID",
            "MDOrderPriority",
            "MDEntryPx.mantissa",
            "MDDisplayQty",
            "SecurityID",
            "MDUpdateAction",
            "MDEntryType",
        ),
    ),
    "trades": (
        ("TransactTime",),
        ("MDEntryPx.mantissa", "MDEntrySize", "SecurityID", "AggressorSide", "MDUpdateAction"),
    ),
}


def _pick(rows: np.ndarray, wanted: tuple[str, ...] | None, meta: tuple[str, ...]) -> list[Entry]:
    """Return rows as dicts of the ``wanted`` columns (all: None) and the ``meta`` ones."""
    names = rows.dtype.names or ()
    if wanted is not None:
        names = tuple(n for n in (*wanted, *meta) if n in names)
    cols = [rows[n].tolist() for n in names]
    return [dict(zip(names, r, strict=True)) for r in zip(*cols, strict=True)]


def decode_messages(
    decoder: SbeDecoder, packets: Sequence[bytes], wanted: dict[int, str]
) -> tuple[list[_Message], list[DecodeIssue]]:
    """Decode MDP 3.0 packets; return the wanted messages in wire order and the issues."""
    buf, starts, lengths = pack_packets(list(packets))
    dec: Decoded = decoder.decode(buf, starts, lengths)
    seqs = dec.packets[:, k.PK_SEQ].tolist()
    out: list[_Message] = []
    for tid, kind in wanted.items():
        t = dec.templates.get(tid)
        if t is None or not len(t):
            continue
        root_cols, entry_cols = _COLUMNS.get(kind, (None, None))
        groups: list[tuple[str, list[Entry], list[int]]] = []
        for gname, g in t.groups.items():
            if "." in gname or (entry_cols is not None and gname != "NoMDEntries"):
                continue  # nested groups, or groups not read: none is used here
            entries = _pick(g.rows, entry_cols, ())
            bounds = np.searchsorted(g.rows["_msg"], np.arange(len(t) + 1)).tolist()
            groups.append((gname, entries, bounds))
        for i, root in enumerate(_pick(t.rows, root_cols, ("_index", "_packet"))):
            root["_tid"] = tid
            gs = {gname: ent[b[i] : b[i + 1]] for gname, ent, b in groups}
            out.append(_Message(root["_index"], seqs[root["_packet"]], kind, root, gs))
    out.sort(key=lambda m: m.index)
    return out, dec.issues


class Mdp3Books:
    """The books of one MDP 3.0 channel, kept in sync through gaps (see the module).

    Parameters
    ----------
    schema : Schema
        The channel's schema.
    market : MarketData, optional
        Where book changes and trades go (``L2_EVENT_DTYPE`` rows); None keeps them here only.
    clock : Clock, optional
        Stamps the rows given to ``market`` with their receive time (0 without a clock).
    depth : int
        Price levels a side of the market by price.
    mbo : bool
        Keep market by order too (templates 47/43 and 53); snapshots then need their orders.
    on_status : Callable[[int, int, int], None], optional
        Told ``(security_id, status, transact_time)`` of every trading status change.
    from_start : bool
        The first incremental packet given is the channel's first (the books start empty
        and in sync); by default they start recovering, as a late joiner does.
    max_buffer : int
        Incremental packets kept while recovering; beyond it the oldest are dropped (a
        snapshot must then be newer than what is left).
    """

    def __init__(
        self,
        schema: Schema,
        market: MarketData | None = None,
        clock: Clock | None = None,
        *,
        depth: int = 10,
        mbo: bool = True,
        on_status: Callable[[int, int, int], None] | None = None,
        from_start: bool = False,
        max_buffer: int = 1 << 18,
    ) -> None:
        if max_buffer < 1:
            raise ValueError(f"max_buffer: must be >= 1, got {max_buffer}")
        if depth < 1:
            raise ValueError(f"depth: must be >= 1, got {depth}")
        self.max_buffer = max_buffer
        self.schema = schema
        self.market = market
        self.clock = clock
        self.depth = depth
        self.mbo = mbo
        self.on_status = on_status
        self.decoder = SbeDecoder(schema, MDP3_FRAMING)
        self.wanted = _templates(schema)
        self._exp = _exponents(schema, self.wanted)
        self._ticks: dict[str, Decimal] = {}  # symbol -> tick size, of instruments followed
        self.securities: dict[int, _Security] = {}
        self.groups: dict[int, str] = {}  # SecurityID -> SecurityGroup of every definition seen
        self.stats = Mdp3Stats()
        self.synced = from_start
        self._buffer: list[bytes] = []
        self._first: int | None = None  # MsgSeqNum of the buffer's first packet
        self._snaps: dict[int, _Snapshot] = {}
        self._rows: list[tuple[int, int, int, int, int, int]] = []
        #: Every status change: (transact time, SecurityID, SecurityTradingStatus).
        self.status_log: list[tuple[int, int, int]] = []
        #: MsgSeqNum of the last incremental packet taken (applied, or buffered); 0: none.
        self.last_seq = 0

    # ------------------------------------------------------------------ instruments
    def add_instrument(self, instrument: Instrument) -> None:
        """Follow ``instrument``: its definition's ``Symbol`` names it on the feed.

        Raises
        ------
        ValueError
            If its tick is not a whole number of 10^-9 (the finest MDP 3.0 price).
        """
        tick = Decimal(instrument.tick_size)
        units = tick.scaleb(9)
        if units != units.to_integral_value() or units <= 0:
            raise ValueError(f"{instrument.symbol}: tick {tick} is finer than MDP 3.0's 10^-9")
        self._ticks[instrument.symbol] = tick

    def add_security(self, security_id: int, instrument: Instrument) -> None:
        """Follow ``instrument`` as ``security_id`` (a feed whose definitions are not read).

        Raises
        ------
        ValueError
            As :meth:`add_instrument`.
        """
        self.add_instrument(instrument)
        self._follow(security_id, instrument.symbol, "")

    def _follow(self, security_id: int, symbol: str, group: str) -> None:
        sec = self.securities.get(security_id)
        if sec is not None:
            sec.group = group or sec.group
            return
        tick = self._ticks[symbol].scaleb(9)  # whole: add_instrument checked it
        book = -1
        if self.market is not None:
            book = self.market.index.get(symbol, -1)
        sec = _Security(security_id, book, int(tick), symbol, group)
        for side in sec.levels:
            side[:] = [[0, 0, 0] for _ in range(self.depth)]
        self.securities[security_id] = sec

    @property
    def wants_snapshots(self) -> bool:
        """Whether the snapshot loop is needed (the books are recovering)."""
        return not self.synced

    def levels(self, security_id: int, side: int) -> list[tuple[int, int, int]]:
        """Return ``(px_ticks, qty, orders)`` of each level of one side (BUY or SELL).

        Best first.
        """
        sec = self.securities[security_id]
        return [(p, q, n) for p, q, n in sec.levels[0 if side == BUY else 1] if q > 0]

    def orders(self, security_id: int) -> dict[int, tuple[int, int, int]]:
        """Return the resting orders of an instrument: order id -> (side, px_ticks, qty)."""
        return {o: (s, p, q) for o, (s, p, q, _pr) in self.securities[security_id].orders.items()}

    def status(self, security_id: int) -> int | None:
        """Return the instrument's SecurityTradingStatus (None: none seen yet)."""
        return self.securities[security_id].status

    def security_id(self, symbol: str) -> int:
        """Return the SecurityID of a followed symbol (KeyError before its definition)."""
        for sid, sec in self.securities.items():
            if sec.symbol == symbol:
                return sid
        raise KeyError(f"{symbol!r}: no definition seen yet")

    # ------------------------------------------------------------------ incremental
    def on_packets(self, packets: Sequence[bytes], now_ns: int = 0) -> None:
        """Take incremental packets, in sequence order and each once (as the arbiter gives)."""
        if not packets:
            return
        self.stats.packets += len(packets)
        self.last_seq = int.from_bytes(packets[-1][:4], "little")
        if not self.synced:
            if self._first is None:
                self._first = int.from_bytes(packets[0][:4], "little")
            self._buffer.extend(packets)
            over = len(self._buffer) - self.max_buffer
            if over > 0:  # no usable snapshot for this long: keep the newest packets only
                del self._buffer[:over]
                self._first = int.from_bytes(self._buffer[0][:4], "little")
                self.stats.dropped_buffered += over
            return
        self._apply(packets)
        self._flush()

    def on_lost(self, count: int = 0) -> None:
        """Incremental packets were lost on both feeds: recover from the snapshot loop."""
        if self.synced:
            log.warning("MDP 3.0: %d packets lost: recovering from the snapshot loop", count)
        self.synced = False
        self._buffer.clear()
        self._first = None
        self._snaps.clear()

    def _apply(self, packets: Sequence[bytes]) -> None:
        msgs, issues = decode_messages(self.decoder, packets, self.wanted)
        self._issues(issues, "incremental")
        self.stats.messages += len(msgs)
        for m in msgs:
            self._incremental(m)

    def _issues(self, issues: list[DecodeIssue], feed: str) -> None:
        if issues:
            self.stats.decode_issues += len(issues)
            log.warning(
                "MDP 3.0 %s feed: %d packets or messages skipped; the first: %s",
                feed,
                len(issues),
                issues[0],
            )

    def _incremental(self, m: _Message) -> None:
        kind = m.kind
        ts = int(m.root.get("TransactTime", 0))
        if kind == "book":
            for e in m.groups.get("NoMDEntries", ()):
                self._book_entry(m, e, ts)
        elif kind == "orders":
            if self.mbo:
                for e in m.groups.get("NoMDEntries", ()):
                    self._order_entry(m, e)
        elif kind == "trades":
            for e in m.groups.get("NoMDEntries", ()):
                self._trade_entry(m, e, ts)
        elif kind == "status":
            self._status_message(m.root, ts)
        elif kind == "definition":
            self._definition(m.root)
        elif kind == "reset":
            for sec in self.securities.values():
                self._clear(sec, ts)

    def _trade_entry(self, m: _Message, e: Entry, ts: int) -> None:
        sec = self._sec(e["SecurityID"], m.seq)
        if sec is None or e["MDUpdateAction"] != NEW:
            return
        px = self._px(sec, m, _PX, e["MDEntryPx.mantissa"])
        if px is not None:
            side = {1: BUY, 2: SELL}.get(e.get("AggressorSide", 0), 0)
            self._rows.append((ts, px, int(e["MDEntrySize"]), sec.book, side, L2_TRADE))

    def _sec(self, security_id: int, seq: int) -> _Security | None:
        sec = self.securities.get(int(security_id))
        if sec is None:
            return None
        if seq <= sec.applied:  # the snapshot it was set from included this packet
            self.stats.skipped_entries += 1
            return None
        return sec

    def _px(self, sec: _Security, m: _Message, column: str, mantissa: int) -> int | None:
        """Return a price mantissa of ``column`` in ticks (None, counted, if off the grid)."""
        if mantissa in (_NULL_I64, _NULL_I32):
            return None
        exp = self._exp.get((int(m.root["_tid"]), column), 0)
        v = mantissa
        if exp >= 0:
            v = mantissa * 10**exp
        else:
            v, r = divmod(mantissa, 10**-exp)
            if r:
                self.stats.off_grid += 1
                return None
        px, r = divmod(v, sec.tick9)
        if r:
            self.stats.off_grid += 1
            return None
        return int(px)

    def _book_entry(self, m: _Message, e: Entry, ts: int) -> None:
        etype = e["MDEntryType"]
        if etype in (b"E", b"F"):
            self.stats.implied += 1
            return
        sec = self._sec(e["SecurityID"], m.seq)
        if sec is None:
            return
        if etype == _RESET:
            self._clear(sec, ts)
            return
        if etype not in (_BID, _OFFER):
            return
        self._level_entry(sec, 0 if etype == _BID else 1, m, e, ts)

    def _level_entry(self, sec: _Security, s: int, m: _Message, e: Entry, ts: int) -> None:
        """Apply one MBP entry of side ``s`` (0 bid, 1 offer) by CME's level rules.

        The side is ``depth`` slots (an empty one has quantity 0), as
        :func:`engine.feeds.sbe._kernels.mbp_events` keeps them for a capture: the entry's own
        price is always what is set or removed, and a slot found holding another price where
        the entry says it is is emptied too (a book joined mid-session knows only the levels
        updated since).
        """
        side = BUY if s == 0 else SELL
        lv = sec.levels[s]
        depth = self.depth
        action = int(e["MDUpdateAction"])
        at = depth - 1 if action == DELETE_THRU else int(e["MDPriceLevel"]) - 1
        if not 0 <= at < depth:
            self.stats.bad_levels += 1
            return
        rows = self._rows
        book = sec.book
        if action in (DELETE_THRU, DELETE_FROM):
            for p, q, _n in lv[: at + 1]:
                if q > 0:
                    rows.append((ts, p, 0, book, side, L2_SET))
            lv[:] = lv[at + 1 :] + [[0, 0, 0] for _ in range(at + 1)]
            return
        px = self._px(sec, m, _PX, int(e["MDEntryPx.mantissa"]))
        if px is None:
            return
        qty = int(e["MDEntrySize"])
        n = int(e["NumberOfOrders"]) if e.get("NumberOfOrders") not in (None, 2**31 - 1) else 0
        if action == NEW:
            gone = lv.pop()
            if gone[1] > 0:
                rows.append((ts, gone[0], 0, book, side, L2_SET))
            lv.insert(at, [px, qty, n])
            rows.append((ts, px, qty, book, side, L2_SET))
        elif action in (CHANGE, OVERLAY):
            if lv[at][1] > 0 and lv[at][0] != px:
                rows.append((ts, lv[at][0], 0, book, side, L2_SET))
            lv[at] = [px, qty, n]
            rows.append((ts, px, qty, book, side, L2_SET))
        elif action == DELETE:
            where = next((i for i, x in enumerate(lv) if x[1] > 0 and x[0] == px), at)
            if lv[where][1] > 0 and lv[where][0] != px:
                rows.append((ts, lv[where][0], 0, book, side, L2_SET))
            rows.append((ts, px, 0, book, side, L2_SET))
            del lv[where]
            lv.append([0, 0, 0])

    def _order_entry(self, m: _Message, e: Entry) -> None:
        sec = self._sec(e["SecurityID"], m.seq)
        if sec is None:
            return
        oid = int(e["OrderID"])
        action = int(e["MDUpdateAction"])
        if action == DELETE:
            sec.orders.pop(oid, None)
            return
        etype = e["MDEntryType"]
        if etype not in (_BID, _OFFER):
            return
        px = self._px(sec, m, _PX, int(e["MDEntryPx.mantissa"]))
        if px is None:
            return
        side = BUY if etype == _BID else SELL
        sec.orders[oid] = (side, px, int(e["MDDisplayQty"]), int(e["MDOrderPriority"]))

    def _status_message(self, root: Entry, ts: int) -> None:
        status = int(root["SecurityTradingStatus"])
        if status == 103:  # NoChange
            return
        sid = root.get("SecurityID")
        null_sid = self.schema.message("SecurityStatus").column("SecurityID").null
        if sid is not None and sid != null_sid:
            targets = [int(sid)]
        else:
            group = _text(root.get("SecurityGroup", b""))
            targets = [s for s, g in self.groups.items() if g == group]
            targets += [
                s for s, sec in self.securities.items() if sec.group == group and s not in targets
            ]
        for s in targets:
            self._set_status(s, status, ts)

    def _set_status(self, security_id: int, status: int, ts: int) -> None:
        sec = self.securities.get(security_id)
        if sec is not None:
            if sec.status == status:
                return
            sec.status = status
        self.status_log.append((ts, security_id, status))
        if self.on_status is not None:
            self.on_status(security_id, status, ts)

    def _definition(self, root: Entry) -> None:
        sid = int(root["SecurityID"])
        group = _text(root.get("SecurityGroup", b""))
        self.groups[sid] = group
        symbol = _text(root.get("Symbol", b""))
        if symbol in self._ticks:
            self._follow(sid, symbol, group)
        st = root.get("MDSecurityTradingStatus")
        if st is not None and sid in self.securities and self.securities[sid].status is None:
            null = self.schema.message(int(root["_tid"])).column("MDSecurityTradingStatus").null
            if st != null:
                self._set_status(sid, int(st), int(root.get("LastUpdateTime", 0)))

    def _clear(self, sec: _Security, ts: int) -> None:
        for side in sec.levels:
            side[:] = [[0, 0, 0] for _ in range(self.depth)]
        sec.orders.clear()
        self._rows.append((ts, 0, 0, sec.book, 0, L2_CLEAR))

    # ------------------------------------------------------------------ snapshot loop
    def on_snapshot_packets(self, packets: Sequence[bytes]) -> None:
        """Take packets of the snapshot loop (ignored while in sync)."""
        if self.synced or not packets:
            return
        msgs, issues = decode_messages(self.decoder, packets, self.wanted)
        self._issues(issues, "snapshot")
        for m in msgs:
            if m.kind == "definition":
                self._definition(m.root)
            elif m.kind == "snapshot":
                self._snapshot(m)
            elif m.kind == "snapshot_orders" and self.mbo:
                self._snapshot_orders(m)
        self._try_finish()

    def _snap_of(self, sec: _Security, r: Entry) -> _Snapshot:
        """Return the snapshot of ``sec`` being collected as of ``r``'s LastMsgSeqNumProcessed."""
        last = int(r["LastMsgSeqNumProcessed"])
        snap = self._snaps.get(sec.security_id)
        if snap is None or snap.last_seq != last:
            snap = _Snapshot(last, int(r["TotNumReports"]), -1, None, ([], []))
            self._snaps[sec.security_id] = snap
        return snap

    def _snapshot(self, m: _Message) -> None:
        r = m.root
        sec = self.securities.get(int(r["SecurityID"]))
        if sec is None:
            return
        found: tuple[list[list[int]], list[list[int]]] = ([], [])
        for e in m.groups.get("NoMDEntries", ()):
            etype = e["MDEntryType"]
            if etype not in (_BID, _OFFER):
                continue
            px = self._px(sec, m, _PX, int(e["MDEntryPx.mantissa"]))
            lvl = int(e["MDPriceLevel"])
            if px is None or not 1 <= lvl <= self.depth:
                continue
            n = int(e["NumberOfOrders"])
            found[0 if etype == _BID else 1].append([lvl, px, int(e["MDEntrySize"]), n])
        snap = self._snap_of(sec, r)
        if self._first is not None and snap.last_seq + 1 < self._first:
            self.stats.stale_snapshots += 1
        snap.levels = (sorted(found[0]), sorted(found[1]))
        snap.rpt_seq = int(r["RptSeq"])
        st = r.get("MDSecurityTradingStatus")
        null = self.schema.message(int(r["_tid"])).column("MDSecurityTradingStatus").null
        snap.status = None if st is None or st == null else int(st)

    def _snapshot_orders(self, m: _Message) -> None:
        r = m.root
        sec = self.securities.get(int(r["SecurityID"]))
        if sec is None:
            return
        snap = self._snap_of(sec, r)
        snap.n_chunks = int(r["NoChunks"])
        snap.chunks[int(r["CurrentChunk"])] = m.groups.get("NoMDEntries", [])
        if set(snap.chunks) != set(range(1, snap.n_chunks + 1)):
            return
        orders: dict[int, tuple[int, int, int, int]] = {}
        for c in range(1, snap.n_chunks + 1):
            for e in snap.chunks[c]:
                px = self._px(sec, m, _PX, int(e["MDEntryPx.mantissa"]))
                if px is None or e["MDEntryType"] not in (_BID, _OFFER):
                    continue
                side = BUY if e["MDEntryType"] == _BID else SELL
                qty, prio = int(e["MDDisplayQty"]), int(e["MDOrderPriority"])
                orders[int(e["OrderID"])] = (side, px, qty, prio)
        snap.orders = orders
        snap.chunks = {}

    def _try_finish(self) -> None:
        first = self._first
        if first is None or not self._snaps:
            return
        ready: dict[int, _Snapshot] = {}
        for sid, snap in self._snaps.items():
            if snap.rpt_seq < 0 or (self.mbo and snap.orders is None):
                continue  # half a snapshot so far
            if snap.last_seq + 1 < first:
                continue  # older than what is buffered: wait for the next loop's
            ready[sid] = snap
        if not self.securities or any(sid not in ready for sid in self.securities):
            return
        ts = self.clock.now_ns() if self.clock is not None else 0
        for sid, snap in ready.items():
            self._set_from(self.securities[sid], snap, ts)
        self.stats.recoveries += 1
        self.synced = True
        buffered, self._buffer = self._buffer, []
        self._first = None
        self._snaps.clear()
        if buffered:
            self._apply(buffered)
        self._flush()

    def _set_from(self, sec: _Security, snap: _Snapshot, ts: int) -> None:
        """Set an instrument's books from its snapshot (a clear, then its levels)."""
        self._clear(sec, ts)
        for s, side in ((0, BUY), (1, SELL)):
            slots = [[0, 0, 0] for _ in range(self.depth)]
            for lvl, p, q, n in snap.levels[s]:
                slots[lvl - 1] = [p, q, n]
            sec.levels[s][:] = slots
            for _lvl, p, q, _n in snap.levels[s]:
                self._rows.append((ts, p, q, sec.book, side, L2_SET))
        if snap.orders is not None:
            sec.orders = dict(snap.orders)
        sec.applied = snap.last_seq
        sec.rpt_seq = snap.rpt_seq
        if snap.status is not None:
            self._set_status(sec.security_id, snap.status, ts)
        self.stats.snapshots_used += 1

    # ------------------------------------------------------------------ out
    def _flush(self) -> None:
        rows, self._rows = self._rows, []
        if self.market is None or not rows:
            return
        ts = self.clock.now_ns() if self.clock is not None else 0
        out = np.array(
            [(ts, p, q, b, s, kd) for _t, p, q, b, s, kd in rows if b >= 0], L2_EVENT_DTYPE
        )
        if out.shape[0]:
            self.market.apply(out)


def _text(raw: Any) -> str:
    if isinstance(raw, bytes):
        return raw.split(b"\0", 1)[0].decode("latin-1").strip()
    return str(raw).strip()


# ----------------------------------------------------------------------------- publisher


class Mdp3Publisher:
    """Send MDP 3.0 packets: the incremental channel on A (and B), the snapshot loop.

    :meth:`publish` packs messages into packets of up to ``max_payload`` bytes, numbers them
    (``MsgSeqNum`` from ``next_seq``) and sends each to the incremental groups;
    :meth:`send_snapshot_loop` sends one pass of the loop to the snapshot group, numbered
    from 1. ``drop`` (a test hook) decides per ``(feed, MsgSeqNum)`` whether a copy of an
    incremental packet is left unsent, to make gaps.
    """

    def __init__(
        self,
        a: Group,
        b: Group | None,
        snapshot: Group | None,
        *,
        max_payload: int = MAX_PAYLOAD,
        next_seq: int = 1,
    ) -> None:
        self.groups = [a] if b is None else [a, b]
        self.snapshot_group = snapshot
        self.next_seq = next_seq
        self.max_payload = max_payload
        self._sock = open_sender(a.interface)
        self.drop: Callable[[int, int], bool] | None = None
        self.packets_sent = 0
        self.snapshot_packets_sent = 0
        self.loops_sent = 0

    @property
    def last_seq(self) -> int:
        """Return the MsgSeqNum of the last incremental packet sent (0: none yet)."""
        return self.next_seq - 1

    def publish(self, messages: Sequence[bytes], sending_time: int) -> int:
        """Send ``messages`` on the incremental groups; return the last MsgSeqNum used."""
        for p in pack_mdp3(messages, self.max_payload, self.next_seq, sending_time):
            seq = self.next_seq
            self.next_seq += 1
            for feed, g in enumerate(self.groups):
                if self.drop is not None and self.drop(feed, seq):
                    continue
                self._sock.sendto(p, (g.address, g.port))
            self.packets_sent += 1
        return self.next_seq - 1

    def send_snapshot_loop(self, messages: Sequence[bytes], sending_time: int) -> int:
        """Send one pass of the snapshot loop (packets numbered from 1); return the packets."""
        g = self.snapshot_group
        if g is None:
            return 0
        packets = pack_mdp3(messages, self.max_payload, 1, sending_time)
        for p in packets:
            self._sock.sendto(p, (g.address, g.port))
        self.snapshot_packets_sent += len(packets)
        self.loops_sent += 1
        return len(packets)

    def close(self) -> None:
        """Close the socket."""
        self._sock.close()


# ----------------------------------------------------------------------------- receiver


class Mdp3Receiver:
    """Join a channel's incremental A/B groups and, while recovering, its snapshot group.

    Incremental packets go through an :class:`~engine.feeds.arbiter.Arbiter` (each
    MsgSeqNum once, in order); a gap that neither feed fills within ``gap_timeout_ns`` is
    declared lost and the books recover from the snapshot loop (:class:`Mdp3Books`). The
    snapshot group is joined only while they recover.
    """

    def __init__(
        self,
        books: Mdp3Books,
        a: Group,
        b: Group | None,
        snapshot: Group,
        *,
        gap_timeout_ns: int = 2_000_000,
        name: str = "MDP 3.0",
    ) -> None:
        self.books = books
        self.groups = [a] if b is None else [a, b]
        self.snapshot_group = snapshot
        self.arbiter = Arbiter(
            Mdp3Packets(), gap_timeout_ns=gap_timeout_ns, max_retries=0, name=name
        )
        self.snapshot_joins = 0
        self._transports: list[asyncio.DatagramTransport] = []
        self._snapshot: asyncio.DatagramTransport | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._joining = False
        self._join_failed = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._ready: list[bytes] = []  # delivered in order, to apply at the end of this turn
        self._apply_soon = False

    async def start(self) -> None:
        """Join the incremental groups (and the snapshot group: the books start recovering).

        Raises
        ------
        OSError
            If a group cannot be joined (names it).
        """
        loop = self._loop = asyncio.get_running_loop()
        for feed, g in enumerate(self.groups):
            sock = open_receiver(g)
            t, _ = await loop.create_datagram_endpoint(partial(_Protocol, self, feed), sock=sock)
            self._transports.append(t)
        await self._snapshot_membership(strict=True)

    async def _snapshot_membership(self, *, strict: bool = False) -> None:
        """Join the snapshot group while the books recover, leave it once they are in sync.

        A failed join raises with ``strict`` (at start), else is said once and tried again at
        the next packet.
        """
        if self._joining:
            return
        self._joining = True
        try:
            want = self.books.wants_snapshots and not self._closed
            if want and self._snapshot is None:
                assert self._loop is not None
                try:
                    sock = open_receiver(self.snapshot_group)
                except OSError as e:
                    if strict:
                        raise
                    if not self._join_failed:
                        log.error("MDP 3.0: cannot recover: %s (trying again)", e)
                    self._join_failed = True
                    return
                t, _ = await self._loop.create_datagram_endpoint(
                    partial(_Protocol, self, _SNAPSHOT), sock=sock
                )
                self._snapshot = t
                self._join_failed = False
                self.snapshot_joins += 1
            elif not want and self._snapshot is not None:
                self._snapshot.close()  # leave the loop: the books are in sync
                self._snapshot = None
        finally:
            self._joining = False

    def _membership_later(self) -> None:
        want = self.books.wants_snapshots
        if (
            want != (self._snapshot is not None)
            and not self._joining
            and self._loop is not None
            and not self._closed
        ):
            task = self._loop.create_task(self._snapshot_membership())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _received(self, feed: int, data: bytes) -> None:
        now = time.monotonic_ns()
        if feed == _SNAPSHOT:
            self._apply_ready()  # the incrementals before it first
            self.books.on_snapshot_packets([data])
            self._membership_later()
            return
        out = self.arbiter.on_packet(feed, data, now)
        if out:
            # applied together with the packets that arrive in the same turn of the loop:
            # one decode for a burst, not one a packet
            self._ready += out
            if not self._apply_soon and self._loop is not None:
                self._apply_soon = True
                self._loop.call_soon(self._apply_ready)
        if self.arbiter.gap is not None and self._timer is None and self._loop is not None:
            self._timer = self._loop.call_later(self.arbiter.gap_timeout_ns / 1e9, self._check_gaps)

    def _apply_ready(self) -> None:
        self._apply_soon = False
        if self._ready:
            ready, self._ready = self._ready, []
            self.books.on_packets(ready, time.monotonic_ns())
            if self.books.wants_snapshots and self._snapshot is None:
                self._membership_later()  # a join that failed: again

    def _check_gaps(self) -> None:
        self._timer = None
        self._apply_ready()  # what came before the gap, before it is declared lost
        now = time.monotonic_ns()
        arb = self.arbiter
        lost = arb.stats.lost_messages
        arb.due_gaps(now)
        if arb.stats.lost_messages > lost:
            self.books.on_lost(arb.stats.lost_messages - lost)
            self._membership_later()
        released = arb.take_released()
        if released:
            self.books.on_packets(released, now)
        if arb.gap is not None and self._loop is not None:
            self._timer = self._loop.call_later(arb.gap_timeout_ns / 1e9, self._check_gaps)

    def close(self) -> None:
        """Leave every group (what was received is applied first)."""
        self._apply_ready()
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
        for t in self._transports:
            t.close()
        self._transports.clear()
        if self._snapshot is not None:
            self._snapshot.close()
            self._snapshot = None


_SNAPSHOT = 3


class _Protocol(asyncio.DatagramProtocol):
    def __init__(self, receiver: Mdp3Receiver, feed: int) -> None:
        self.receiver = receiver
        self.feed = feed

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        self.receiver._received(self.feed, data)

    def error_received(self, exc: Exception) -> None:
        name = "snapshot" if self.feed == _SNAPSHOT else FEED_NAMES[self.feed]
        log.warning("MDP 3.0 %s feed: %s", name, exc)


__all__ = [
    "KINDS",
    "TRADING_STATUSES",
    "Mdp3Books",
    "Mdp3Publisher",
    "Mdp3Receiver",
    "Mdp3Stats",
    "decode_messages",
]
