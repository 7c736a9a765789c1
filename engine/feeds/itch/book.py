# SPDX-License-Identifier: MIT
"""The order-level (L3) books of every stock of an ITCH 5.0 feed, maintained by one kernel.

:class:`ItchBooks` applies raw ITCH streams or MoldUDP64 packets to the books of all stocks
at once: Add Order (A, F) rests an order at the back of its price level; Order Executed
(E, C) and Order Cancel (X) reduce it (keeping its place); Order Delete (D) removes it; Order
Replace (U) removes it and rests the new ref, with the old order's side and stock, at the back
of its new level. Executions (E, C), non-cross trades (P) and cross trades (Q) are kept as
trades (:data:`ITCH_TRADE_DTYPE`); Stock Trading Actions (H) and System Events (S) are logged
and set each stock's trading state and the feed's last event.

Why not ``engine.book.L3Arrays``: its books hold prices in a fixed window of levels per
book, one book per set of arrays, applied one book per kernel call. ITCH prices run from
$0.0001 to $200,000 in 0.0001 steps (2e9 ticks), a day has about 8,000 stocks whose messages
interleave one by one, so a window per book cannot span a stock's prices and a call per
message per book would cost more than the decoding. Here every book shares one order table
and one level table (levels hashed by stock, side and price): any price, any number of
stocks, one kernel pass over the feed. Order refs are handed out in sequence and most orders
die young, so a young order's record is indexed by its ref itself (a window of the last
``2**window_bits`` refs); older orders still resting move to overflow records found through
a hash of their refs (see :mod:`engine.feeds.itch._kernels`).

Messages that refer to an order not in the book (a feed joined late, a gap) and adds of a ref
already resting are counted (:meth:`ItchBooks.counters`), never raised.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from engine.feeds.itch import _kernels as k
from engine.feeds.itch.decode import _TABLES as _TAB
from engine.feeds.itch.decode import Decoded, ItchDecodeError, as_bytes, error_text
from engine.feeds.itch.messages import MESSAGE_DTYPES, MESSAGE_TYPES
from engine.feeds.itch.moldudp64 import MoldBatch
from engine.types import BUY, SELL

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]

#: One trade kept from the feed: an execution of a resting order (E, C), a non-cross trade
#: of a hidden order (P) or a cross (Q).
ITCH_TRADE_DTYPE: Final = np.dtype(
    [
        ("seq", "i8"),  # message sequence number
        ("timestamp", "i8"),  # ns since midnight
        ("price", "i8"),  # ticks of 0.0001 USD (E: the resting order's price)
        ("shares", "i8"),
        ("match_number", "i8"),
        ("order_reference_number", "i8"),  # the resting order (E, C), the hidden one (P), 0 (Q)
        ("stock_locate", "i4"),
        ("kind", "u1"),  # message type byte: 'E', 'C', 'P', 'Q'
        ("side", "i1"),  # BUY/SELL: the resting order's side (E, C), P's indicator; 0 for Q
        ("printable", "u1"),  # 'Y' or 'N' (C); 'Y' otherwise
        ("cross_type", "u1"),  # Q's cross type byte, 0 otherwise
    ],
    align=True,
)

#: One Stock Trading Action (H) as the books applied it.
TRADING_ACTION_DTYPE: Final = np.dtype(
    [
        ("seq", "i8"),
        ("timestamp", "i8"),
        ("stock_locate", "i4"),
        ("reason", "u4"),  # the 4 reason bytes, first byte lowest (``.view("S4")`` reads it)
        ("trading_state", "u1"),  # 'H' halted, 'P' paused, 'Q' quotation only, 'T' trading
    ],
    align=True,
)

#: One System Event (S).
SYSTEM_EVENT_LOG_DTYPE: Final = np.dtype(
    [("seq", "i8"), ("timestamp", "i8"), ("event_code", "u1")], align=True
)

_N_STOCKS = 1 << 16
#: log2 of the window of order records indexed by ref: the last 2**20 refs (16 MB of
#: address space, touched as refs come) are found without hashing.
RING_BITS = 20


def _table_size(capacity: int) -> int:
    return 1 << max(4, int(2 * capacity - 1).bit_length())


@dataclass(frozen=True, slots=True)
class BookCounters:
    """Facts about the feed met while applying it (none of them stop the books).

    ``unknown`` counts, per message type ('E', 'C', 'X', 'D', 'U'), messages whose order ref
    was not resting.
    """

    unknown: dict[str, int]
    duplicate_adds: int
    duplicate_replaces: int
    over_executions: int
    over_cancels: int
    zero_share_adds: int
    broken_trades: int


class _Levels:
    """Level records kept in the buckets of their own hash table (key -> bucket).

    Open addressing by (stock, side, price), linear probing; an emptied level keeps its
    bucket (its price often comes back) until the table is rebuilt, which drops the levels
    without orders: ``budget`` buckets may be taken before that.
    """

    __slots__ = ("rec",)

    def __init__(self, capacity: int) -> None:
        self.rec: I64 = _empty_levels(_table_size(capacity))

    def budget(self, n_levels: int) -> int:
        """Return the buckets new levels may take before the table must be rebuilt."""
        return int(self.rec.shape[0] * _LEVEL_LOAD) - n_levels

    def rebuild(self, orders: npt.NDArray[np.int32], n_levels: int) -> int:
        """Rebuild (doubled while over a quarter full of levels); return the budget."""
        nb = int(self.rec.shape[0])
        while 4 * n_levels > nb:
            nb *= 2
        new = _empty_levels(nb)
        k.levels_rebuild(self.rec, new, orders, _level_shift(new))
        self.rec = new
        return self.budget(n_levels)


#: Most buckets of the level table in use (levels, with or without orders) before a rebuild.
_LEVEL_LOAD = 0.625


def _empty_levels(buckets: int) -> I64:
    rec = np.zeros((buckets, k.LW), np.int64)
    rec[:, k.L_KEY] = k.HT_EMPTY
    rec[:, k.L_HEAD] = -1
    rec[:, k.L_TAIL] = -1
    return rec


def _level_shift(levels: I64) -> int:
    # 64 - log2(buckets)
    return 64 - int(levels.shape[0]).bit_length() + 1


class _Orders:
    """Order records: a window indexed by ref, then overflow records for older orders.

    ``rec`` holds the ``window`` records of the window, then ``cap`` overflow records, with
    their free-slot stack, their refs and the hash of their refs (ref -> slot).
    """

    __slots__ = ("free", "rec", "refs", "tab", "window")

    def __init__(self, window: int, capacity: int) -> None:
        self.window = window
        self.rec: npt.NDArray[np.int32] = np.zeros((window + capacity, k.OW), np.int32)
        self.refs: I64 = np.zeros(capacity, np.int64)
        self.free: I64 = np.arange(window + capacity - 1, window - 1, -1, dtype=np.int64)
        self.tab: I64 = np.full(2 * _table_size(capacity), k.HT_EMPTY, np.int64)

    def grow(self, nfree: int) -> int:
        """Double the overflow records; return the new free-slot count."""
        w, cap = self.window, int(self.refs.shape[0])
        rec = np.zeros((w + 2 * cap, k.OW), np.int32)
        rec[: w + cap] = self.rec
        refs = np.zeros(2 * cap, np.int64)
        refs[:cap] = self.refs
        free = np.zeros(2 * cap, np.int64)
        free[:cap] = np.arange(w + 2 * cap - 1, w + cap - 1, -1, dtype=np.int64)
        free[cap : cap + nfree] = self.free[:nfree]
        tab = np.full(2 * _table_size(2 * cap), k.HT_EMPTY, np.int64)
        k.ht_rebuild(tab, self.tab, _shift(tab))
        self.rec, self.refs, self.free, self.tab = rec, refs, free, tab
        return nfree + cap


def _shift(tab: I64) -> int:
    # 64 - log2(buckets) of an interleaved table of 2 * buckets int64
    return 64 - int(tab.shape[0] // 2).bit_length() + 1


def _grown(a: npt.NDArray[np.void], n: int) -> npt.NDArray[np.void]:
    out = np.zeros(max(16, 2 * a.shape[0]), a.dtype)
    out[:n] = a[:n]
    return out


class ItchBooks:
    """The L3 books of every stock of one ITCH 5.0 feed.

    Parameters
    ----------
    capacity : int
        Initial overflow order records (orders older than the window, all stocks); the
        tables double when full.
    level_capacity : int
        Initial price levels (all stocks, both sides): the level table starts with twice
        as many buckets (or more) and is rebuilt, doubled as needed, when it fills.
    window_bits : int
        log2 of the window of order records indexed by ref: the youngest ``2**window_bits``
        refs are found without hashing (refs are handed out in sequence; most orders die
        young). 16 bytes of address space per ref.
    """

    def __init__(
        self, capacity: int = 1 << 16, level_capacity: int = 1 << 14, window_bits: int = RING_BITS
    ) -> None:
        if capacity < 1 or level_capacity < 1:
            raise ValueError(
                f"capacity, level_capacity: must be >= 1, got {capacity}, {level_capacity}"
            )
        if not 0 <= window_bits <= 30:
            raise ValueError(f"window_bits: must be in [0, 30], got {window_bits}")
        self._o = _Orders(1 << window_bits, capacity)
        self._l = _Levels(level_capacity)
        self._st = np.zeros(k.NST, np.int64)
        self._st[k.S_NFREE_O] = capacity
        self._st[k.S_NFREE_L] = self._l.budget(0)
        self._st[k.S_WINDOW] = 1 << window_bits
        self._stocks = np.zeros((_N_STOCKS, k.SW), np.int64)
        self._symbols = np.zeros((_N_STOCKS, 8), np.uint8)
        self._counts = np.zeros(256, np.int64)
        self._trades = np.zeros(1024, ITCH_TRADE_DTYPE)
        self._actions = np.zeros(64, TRADING_ACTION_DTYPE)
        self._events = np.zeros(16, SYSTEM_EVENT_LOG_DTYPE)
        self._next_seq = 1

    # ------------------------------------------------------------------------- input
    def apply_raw(
        self,
        data: bytes | bytearray | memoryview | U8,
        *,
        first_seq: int | None = None,
        source: str = "<buffer>",
    ) -> int:
        """Apply a raw ITCH stream (``u16`` length + message, repeated); return messages.

        ``first_seq`` numbers the first message (``seq`` of the trades and logs); by default
        the numbering goes on from the previous raw stream (1 for the first), so a day
        applied in pieces numbers its messages as in one piece.

        Raises
        ------
        ItchDecodeError
            At the first bad message; every message before it is applied.
        """
        buf = as_bytes(data)
        st, en = np.array([0], np.int64), np.array([buf.shape[0]], np.int64)
        seq = self._next_seq if first_seq is None else first_seq
        n = self._apply(buf, st, en, k.MODE_RAW, None, seq, source)
        self._next_seq = seq + int(self._st[k.S_G])
        return n

    def apply_file(self, path: str | Path) -> int:
        """Apply a raw ITCH day file (memory-mapped); return the messages applied."""
        p = Path(path)
        if p.stat().st_size == 0:
            return 0
        return self.apply_raw(np.asarray(np.memmap(p, np.uint8, mode="r")), source=str(p))

    def apply_packets(
        self,
        buf: U8,
        pk_start: I64,
        pk_end: I64,
        keep: U8 | None = None,
        *,
        source: str = "<packets>",
    ) -> int:
        """Apply MoldUDP64 packets (``keep``: per-message flags from the sequence tracker).

        Raises
        ------
        ItchDecodeError
            At the first bad packet or message; every message before it is applied.
        """
        return self._apply(buf, pk_start, pk_end, k.MODE_MOLD, keep, 1, source)

    def apply_batch(self, batch: MoldBatch) -> int:
        """Apply the messages of a :class:`MoldUDP64Stream` batch (each message once).

        Returns the messages applied; a message of a duplicate packet is skipped as the
        stream's decoder skipped it.
        """
        buf, starts, ends = batch.packets
        return self.apply_packets(buf, starts, ends, batch.keep)

    def _apply(
        self,
        buf: U8,
        pk_start: I64,
        pk_end: I64,
        mode: int,
        keep: U8 | None,
        first_seq: int,
        source: str,
    ) -> int:
        err = np.zeros(k.E_WIDTH, np.int64)
        kp = np.zeros(0, np.uint8) if keep is None else np.ascontiguousarray(keep, np.uint8)
        scratch = np.zeros(len(MESSAGE_TYPES), np.int64)
        framed = int(
            k.frame_messages(buf, pk_start, pk_end, mode, kp, _TAB.index, _TAB.length, scratch, err)
        )
        if keep is not None and kp.shape[0] < framed:
            raise ValueError(f"keep: {kp.shape[0]} flags for {framed} messages")
        st = self._st
        st[k.S_PK], st[k.S_I], st[k.S_POS], st[k.S_G] = 0, 0, -1, 0
        before = int(self._counts.sum())
        while True:
            o, lv = self._o, self._l
            st[k.S_OSHIFT], st[k.S_LSHIFT] = _shift(o.tab), _level_shift(lv.rec)
            stop = int(
                k.book_apply(
                    buf,
                    pk_start,
                    pk_end,
                    mode,
                    kp,
                    framed,
                    first_seq,
                    o.rec,
                    o.refs,
                    o.tab,
                    o.free,
                    lv.rec,
                    st,
                    self._stocks,
                    self._symbols,
                    self._counts,
                    self._trades,
                    self._actions,
                    self._events,
                )
            )
            if stop == k.STOP_DONE:
                break
            self._grow(stop)
        applied = int(self._counts.sum()) - before
        if int(err[k.E_CODE]) != k.ERR_NONE:
            empty = {t: np.zeros(0, MESSAGE_DTYPES[t]) for t in MESSAGE_TYPES}
            raise ItchDecodeError(
                f"{error_text(err, source, mode == k.MODE_MOLD)}; "
                f"the {framed} messages before it were applied to the books",
                Decoded(empty, framed, int(err[k.E_OFFSET])),
                int(err[k.E_CODE]),
                int(err[k.E_PACKET]),
                int(err[k.E_OFFSET]),
            )
        return applied

    def _grow(self, stop: int) -> None:
        st = self._st
        if stop == k.STOP_ORDERS:
            st[k.S_NFREE_O] = self._o.grow(int(st[k.S_NFREE_O]))
        elif stop == k.STOP_LEVELS:
            st[k.S_NFREE_L] = self._l.rebuild(self._o.rec, self.n_levels)
        elif stop == k.STOP_TRADES:
            self._trades = _grown(self._trades, int(st[k.S_NTRADES]))
        elif stop == k.STOP_ACTIONS:
            self._actions = _grown(self._actions, int(st[k.S_NACTIONS]))
        else:
            self._events = _grown(self._events, int(st[k.S_NEVENTS]))

    # ------------------------------------------------------------------------ output
    @property
    def n_orders(self) -> int:
        """Orders resting, all stocks."""
        return int(self._st[k.S_ORDERS])

    @property
    def n_levels(self) -> int:
        """Price levels in use, all stocks and sides."""
        return int(self._st[k.S_LEVELS])

    def counts(self) -> dict[str, int]:
        """Return the messages applied per type byte (types seen only)."""
        return {chr(i): int(c) for i, c in enumerate(self._counts) if c}

    def counters(self) -> BookCounters:
        """Return the feed facts counted so far (unknown refs, duplicates ...)."""
        st = self._st
        unknown = {
            "E": int(st[k.S_UNKNOWN_E]),
            "C": int(st[k.S_UNKNOWN_C]),
            "X": int(st[k.S_UNKNOWN_X]),
            "D": int(st[k.S_UNKNOWN_D]),
            "U": int(st[k.S_UNKNOWN_U]),
        }
        return BookCounters(
            unknown=unknown,
            duplicate_adds=int(st[k.S_DUP_ADD]),
            duplicate_replaces=int(st[k.S_DUP_REPLACE]),
            over_executions=int(st[k.S_OVER_EXEC]),
            over_cancels=int(st[k.S_OVER_CANCEL]),
            zero_share_adds=int(st[k.S_ZERO_ADD]),
            broken_trades=int(st[k.S_BROKEN]),
        )

    @property
    def trades(self) -> npt.NDArray[np.void]:
        """Trades kept so far (``ITCH_TRADE_DTYPE``), in feed order (a read-only view)."""
        return _readonly(self._trades[: int(self._st[k.S_NTRADES])])

    @property
    def trading_actions(self) -> npt.NDArray[np.void]:
        """Stock Trading Actions so far (``TRADING_ACTION_DTYPE``), a read-only view."""
        return _readonly(self._actions[: int(self._st[k.S_NACTIONS])])

    @property
    def system_events(self) -> npt.NDArray[np.void]:
        """System Events so far (``SYSTEM_EVENT_LOG_DTYPE``), a read-only view."""
        return _readonly(self._events[: int(self._st[k.S_NEVENTS])])

    @property
    def last_system_event(self) -> str:
        """The last System Event code ('O', 'S', 'Q', 'M', 'E', 'C'), '' before any."""
        c = int(self._st[k.S_LAST_EVENT])
        return chr(c) if c else ""

    def trading_state(self, stock_locate: int) -> str:
        """Return the stock's trading state ('H', 'P', 'Q', 'T'), '' before any action."""
        c = int(self._stocks[_locate(stock_locate), k.SW_STATE])
        return chr(c) if c else ""

    def trading_reason(self, stock_locate: int) -> str:
        """Return the reason of the stock's last trading action (stripped)."""
        r = int(self._stocks[_locate(stock_locate), k.SW_REASON])
        return r.to_bytes(4, "little").decode("ascii", "replace").strip("\x00 ")

    def reg_sho(self, stock_locate: int) -> str:
        """Return the stock's last Reg SHO action ('0', '1', '2'), '' before any."""
        c = int(self._stocks[_locate(stock_locate), k.SW_REG_SHO])
        return chr(c) if c else ""

    def volume(self, stock_locate: int) -> int:
        """Return the printable shares traded in the stock so far (E, C, P, Q)."""
        return int(self._stocks[_locate(stock_locate), k.SW_VOLUME])

    def orders_of(self, stock_locate: int) -> int:
        """Return the orders resting in the stock's book (a scan: not for hot paths)."""
        o = self._o.rec
        keys = self._l.rec[o[o[:, k.O_QTY] > 0, k.O_LEVEL], k.L_KEY]
        return int((keys >> 33 == _locate(stock_locate)).sum())

    def symbol(self, stock_locate: int) -> str:
        """Return the stock's symbol (from its Stock Directory or first add), stripped."""
        return bytes(self._symbols[_locate(stock_locate)]).decode("ascii", "replace").strip("\x00 ")

    def _live_levels(self) -> tuple[I64, I64, I64, I64, I64]:
        # slot, stock, side, price, shares of every level holding orders
        lv = self._l.rec
        slot = np.flatnonzero(lv[:, k.L_QTY] > 0)
        key = lv[slot, k.L_KEY]
        return slot, key >> 33, (key >> 32) & 1, key & 0xFFFFFFFF, lv[slot, k.L_QTY]

    def _orders_per_level(self) -> I64:
        o = self._o.rec
        lvl = o[o[:, k.O_QTY] > 0, k.O_LEVEL]
        return np.bincount(lvl, minlength=self._l.rec.shape[0]).astype(np.int64)

    def levels(self, stock_locate: int, side: int) -> I64:
        """Return ``int64[n, 3]`` rows ``(price, shares, orders)`` of one side, best first.

        ``side`` is ``BUY`` (bids, highest first) or ``SELL`` (asks, lowest first). A scan
        of the tables: for inspection, not for a hot path.
        """
        si = _side(side)
        slot, stock, sd, px, qty = self._live_levels()
        mine = (stock == _locate(stock_locate)) & (sd == si)
        counts = self._orders_per_level()[slot[mine]]
        rows = np.stack([px[mine], qty[mine], counts], axis=1).astype(np.int64)
        order = np.argsort(rows[:, 0], kind="stable")
        out: I64 = rows[order[::-1]] if si == 0 else rows[order]
        return out

    def queue(self, stock_locate: int, side: int, price: int) -> I64:
        """Return ``int64[n, 2]`` rows ``(order_reference_number, shares)`` at one level.

        Rows are in time priority; empty if the level holds nothing.
        """
        key = (_locate(stock_locate) << 33) | (_side(side) << 32) | int(price)
        lvl = int(k.level_slot(self._l.rec, key, _level_shift(self._l.rec)))
        if lvl < 0:
            return np.zeros((0, 2), np.int64)
        out = np.zeros((int(self._orders_per_level()[lvl]), 2), np.int64)
        k.level_orders(self._o.rec, self._o.refs, self._st, self._l.rec, lvl, out)
        return out

    def order(self, order_reference_number: int) -> tuple[int, int, int, int] | None:
        """Return ``(stock_locate, side, price, shares)`` of a resting order, or None."""
        self._st[k.S_OSHIFT] = _shift(self._o.tab)
        o = int(k.order_slot(self._o.rec, self._o.tab, self._st, int(order_reference_number)))
        if o < 0:
            return None
        key = int(self._l.rec[self._o.rec[o, k.O_LEVEL], k.L_KEY])
        side = BUY if (key >> 32) & 1 == 0 else SELL
        return key >> 33, side, key & 0xFFFFFFFF, int(self._o.rec[o, k.O_QTY])

    def best_bid(self, stock_locate: int) -> tuple[int, int] | None:
        """Return ``(price, shares)`` of the stock's best bid, or None."""
        rows = self.levels(stock_locate, BUY)
        return (int(rows[0, 0]), int(rows[0, 1])) if rows.shape[0] else None

    def best_ask(self, stock_locate: int) -> tuple[int, int] | None:
        """Return ``(price, shares)`` of the stock's best ask, or None."""
        rows = self.levels(stock_locate, SELL)
        return (int(rows[0, 0]), int(rows[0, 1])) if rows.shape[0] else None

    def crossed_stocks(self) -> npt.NDArray[np.int64]:
        """Return the stock locates whose best bid is at or above their best ask."""
        _, stock, side, px, _ = self._live_levels()
        bid = np.full(_N_STOCKS, -1, np.int64)
        ask = np.full(_N_STOCKS, np.iinfo(np.int64).max, np.int64)
        np.maximum.at(bid, stock[side == 0], px[side == 0])
        np.minimum.at(ask, stock[side == 1], px[side == 1])
        return np.flatnonzero(bid >= ask).astype(np.int64)

    def check(self) -> list[str]:
        """Return every inconsistency between the order and level tables (empty: none).

        Each level's FIFO must link its orders both ways and end at its tail; its shares
        must equal the sum over its orders, its order count the orders that name it; every
        order moved out of the window must be found by its ref (and the hash of their refs
        hold nothing else); the order and level counts must match.
        """
        o, lv = self._o.rec, self._l.rec
        live = o[:, k.O_QTY] > 0
        lvl = o[live, k.O_LEVEL]
        n = lv.shape[0]
        qty = np.bincount(lvl, weights=o[live, k.O_QTY], minlength=n).astype(np.int64)
        cnt = np.bincount(lvl, minlength=n).astype(np.int64)
        fifo = np.zeros(n, np.int64)
        problems = []
        broken = int(k.fifo_lengths(o, lv, fifo))
        if broken >= 0:
            problems.append(f"level slot {broken}: its FIFO's links are broken")
        bad = np.flatnonzero((qty != lv[:, k.L_QTY]) | (cnt != fifo))
        problems += [f"level slot {int(i)}: shares/orders do not add up" for i in bad[:10]]
        if int(live.sum()) != self.n_orders:
            problems.append(f"{int(live.sum())} order slots in use, {self.n_orders} counted")
        self._st[k.S_OSHIFT] = _shift(self._o.tab)
        lost = int(k.lost_orders(o, self._o.refs, self._o.tab, self._st))
        if 0 <= lost < o.shape[0]:
            problems.append(f"order slot {lost}: not found by its ref")
        elif lost >= 0:
            problems.append("the hash of old order refs holds refs of no resting order")
        if int((lv[:, k.L_QTY] > 0).sum()) != self.n_levels:
            problems.append("level count does not add up")
        return problems


def _readonly(a: npt.NDArray[np.void]) -> npt.NDArray[np.void]:
    v = a.view()
    v.flags.writeable = False
    return v


def _locate(stock_locate: int) -> int:
    if not 0 <= int(stock_locate) < _N_STOCKS:
        raise ValueError(f"stock_locate: must be in [0, 65536), got {stock_locate}")
    return int(stock_locate)


def _side(side: int) -> int:
    if side == BUY:
        return 0
    if side == SELL:
        return 1
    raise ValueError(f"side: must be BUY ({BUY}) or SELL ({SELL}), got {side}")


__all__ = [
    "ITCH_TRADE_DTYPE",
    "SYSTEM_EVENT_LOG_DTYPE",
    "TRADING_ACTION_DTYPE",
    "BookCounters",
    "ItchBooks",
]
