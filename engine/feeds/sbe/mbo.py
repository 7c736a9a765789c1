# SPDX-License-Identifier: MIT
"""MDP 3.0 market by order (MBO) into ``L3_EVENT_DTYPE`` rows and :class:`L3Book` s.

CME sends the orders of a book two ways, both read here from a decoded capture:

* ``MDIncrementalRefreshOrderBook`` (template 47 from schema v9, 43 before): each
  ``NoMDEntries`` entry is one order event, with ``OrderID``, ``MDOrderPriority``,
  ``MDEntryPx``, ``MDDisplayQty``, ``SecurityID``, ``MDUpdateAction`` (New, Change, Delete)
  and ``MDEntryType`` (Bid, Offer);
* ``MDIncrementalRefreshBook`` (template 46, the combined book): after its price levels, the
  ``NoOrderIDEntries`` group lists orders with ``OrderID``, ``MDOrderPriority``,
  ``MDDisplayQty``, ``OrderUpdateAction`` (New, Update, Delete) and ``ReferenceID``: the
  1-based number of the ``NoMDEntries`` entry of the same message that gives the order's
  price, side and SecurityID.

Templates are found by their groups' columns, not by number, so any schema version that
carries them works. A and B copies of a packet count once (the first to arrive). Events are
in feed order: message by message, entry by entry.

Each event becomes one row (two for a Change that loses priority):

========================  ===================================================================
New                       ``L3_ADD`` (order id, side, price, display quantity)
Change, same priority     ``L3_MODIFY`` (new price and quantity; the book keeps its place)
Change, priority lost     ``L3_CANCEL`` (quantity 0: removed), then ``L3_ADD`` (back of the
                          queue at the new price). Priority is lost when ``MDOrderPriority``
                          changed or the price did (CME's rule), against the order's last
                          event in the capture
Delete                    ``L3_CANCEL`` with quantity 0 (the order is removed)
Book reset (``J``)        ``L3_CLEAR`` of that SecurityID's book (only for instruments that
                          have order entries)
========================  ===================================================================

so a book applying them in order holds every order in ``MDOrderPriority`` order at its level
(CME's priorities only grow).

A capture of the snapshot loop too (``SnapshotFullRefreshOrderBook``, 53 from v9, 44 before)
seeds the books of a capture that starts mid-session, as CME's recovery does: once every
chunk of an instrument's snapshot (``NoChunks``, ``CurrentChunk``; a given
``LastMsgSeqNumProcessed`` once, however many loops or feeds repeat it) has arrived, its book
is cleared (``L3_CLEAR``) and its orders added in ``MDOrderPriority`` order, at the place of
its last chunk in feed order; the incremental entries of that instrument that arrive after
it from packets it already includes (``MsgSeqNum`` <= its ``LastMsgSeqNumProcessed``) are
left out and counted. Prices are integer ticks: the mantissas are brought to the
finest exponent of the price composites involved (``PRICE9``/``PRICENULL9``: -9; v8's
``PRICENULL``: -7), then divided by one tick: ``tick_size`` if given (every price must lie on
it), else each instrument's greatest common divisor of its prices.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

import numpy as np
import numpy.typing as npt

from engine.book.l3 import L3Book
from engine.feeds.sbe.book import first_arrivals
from engine.feeds.sbe.decoder import GroupRows, TemplateRows
from engine.feeds.sbe.mdp3 import DecodedCapture
from engine.types import BUY, L3_ADD, L3_CANCEL, L3_CLEAR, L3_EVENT_DTYPE, L3_MODIFY, SELL

I64 = npt.NDArray[np.int64]
BOOL = npt.NDArray[np.bool_]

#: The feed's actions (``MDUpdateAction`` and ``OrderUpdateAction`` share these numbers).
NEW, CHANGE, DELETE = 0, 1, 2
_RESET = -1  # a book reset entry ('J'), internal
_BAD_REF = -2  # an order entry whose ReferenceID names no price entry, internal

#: Columns an order-book group must have (``NoMDEntries`` of templates 43 and 47).
ORDER_COLUMNS = (
    "OrderID",
    "MDOrderPriority",
    "MDEntryPx.mantissa",
    "MDDisplayQty",
    "SecurityID",
    "MDUpdateAction",
    "MDEntryType",
)
#: Columns of the order entries of the combined book message (``NoOrderIDEntries`` of 46).
ORDER_ID_COLUMNS = (
    "OrderID",
    "MDOrderPriority",
    "MDDisplayQty",
    "ReferenceID",
    "OrderUpdateAction",
)
#: Columns of the price entries they refer to (``NoMDEntries`` of 46).
LEVEL_COLUMNS = ("MDEntryPx.mantissa", "SecurityID", "MDEntryType")


class MboError(ValueError):
    """Market-by-order entries that cannot be turned into book events (e.g. an off-tick price)."""


@dataclass
class MboEvents:
    """The capture's order events as ``L3_EVENT_DTYPE`` rows, with where each came from."""

    security_ids: I64  # book index -> SecurityID (sorted)
    ticks: I64  # book index -> one tick, in mantissa units at ``exponent``
    exponent: int  # of ``mantissa`` (the finest of the price composites read)
    events: npt.NDArray[np.void]  # L3_EVENT_DTYPE, feed order; ``px`` in ticks
    book: I64  # book index of each event
    mantissa: I64  # each event's price at ``exponent`` (0 when the feed gave none)
    priority: I64  # MDOrderPriority of each event (-1: none)
    event_index: I64  # capture message index (``_index``) each event came from
    template_id: I64  # template each event came from
    entries: int  # order entries used
    skipped: Counter[str] = field(default_factory=Counter)  # entries left out, by reason

    def book_of(self, security_id: int) -> int:
        """Return the book index of a SecurityID (KeyError if it had no order entries)."""
        i = int(np.searchsorted(self.security_ids, security_id))
        if i >= self.security_ids.size or self.security_ids[i] != security_id:
            raise KeyError(f"no order entries for SecurityID {security_id}")
        return i

    def of(self, security_id: int) -> npt.NDArray[np.void]:
        """Return the events of one SecurityID, in feed order."""
        out: npt.NDArray[np.void] = self.events[self.book == self.book_of(security_id)]
        return out


@dataclass
class _Part:
    """Entries of one group, in the columns every source shares (before the merge)."""

    index: I64  # message _index
    rank: int  # order of groups within a message
    pos: I64  # entry's row in its group (wire order)
    sec: I64
    oid: I64
    oid_null: BOOL
    prio: I64
    mant: I64  # at the part's own exponent
    px_null: BOOL
    exponent: int
    qty: I64
    side: I64  # BUY, SELL or 0 (entry type other than Bid/Offer)
    action: I64  # NEW, CHANGE, DELETE, _RESET, _BAD_REF or another feed value
    ts: I64
    tid: int


def _has(rows: GroupRows, columns: tuple[str, ...]) -> bool:
    names = rows.rows.dtype.names or ()
    return all(c in names for c in columns)


def _exponent(rows: GroupRows) -> int:
    col = rows.column("MDEntryPx.mantissa")
    if col.exponent is None:
        raise MboError(f"{rows.name}.MDEntryPx has no constant exponent in the schema")
    return int(col.exponent)


def _side(etype: npt.NDArray[np.void]) -> I64:
    t = etype.view(np.uint8)
    return np.select([t == ord("0"), t == ord("1")], [BUY, SELL], 0).astype(np.int64)


def _or_fill(rows: GroupRows, e: npt.NDArray[np.void], name: str, fill: int) -> I64:
    """Return column ``name`` as int64 with its null values replaced by ``fill``."""
    null = rows.column(name).is_null(e[name])
    return np.where(null, fill, e[name].astype(np.int64)).astype(np.int64)


def _selected(t: TemplateRows, g: GroupRows, keep: BOOL) -> tuple[npt.NDArray[np.void], I64, I64]:
    """Return the group's entries of first-arrival packets, their message rows and positions."""
    msg = g.rows["_msg"]
    sel = keep[t.rows["_packet"][msg]]
    return g.rows[sel], msg[sel], np.flatnonzero(sel).astype(np.int64)


def _order_part(t: TemplateRows, g: GroupRows, keep: BOOL, tid: int) -> _Part:
    """Entries of an order-book group (43/47): each one an order event or a book reset."""
    e, msg, pos = _selected(t, g, keep)
    etype = e["MDEntryType"].view(np.uint8)
    return _Part(
        index=t.rows["_index"][msg].astype(np.int64),
        rank=0,
        pos=pos,
        sec=e["SecurityID"].astype(np.int64),
        oid=e["OrderID"].astype(np.int64),
        oid_null=np.asarray(g.column("OrderID").is_null(e["OrderID"]), dtype=np.bool_),
        prio=_or_fill(g, e, "MDOrderPriority", -1),
        mant=_or_fill(g, e, "MDEntryPx.mantissa", 0),
        px_null=np.asarray(g.column("MDEntryPx.mantissa").is_null(e["MDEntryPx.mantissa"])),
        exponent=_exponent(g),
        qty=_or_fill(g, e, "MDDisplayQty", 0),
        side=_side(e["MDEntryType"]),
        action=np.where(etype == ord("J"), _RESET, e["MDUpdateAction"].astype(np.int64)),
        ts=t.rows["TransactTime"][msg].astype(np.int64),
        tid=tid,
    )


def _combined_parts(t: TemplateRows, keep: BOOL, tid: int) -> list[_Part]:
    """Return a combined book message's (46) order entries, priced by the entries they name.

    And its book resets (``J`` entries of ``NoMDEntries``).
    """
    lv = t.groups["NoMDEntries"]
    od = t.groups["NoOrderIDEntries"]
    # ReferenceID n of message m names NoMDEntries row first[m] + n - 1
    n_msg = len(t)
    per_msg = np.bincount(lv.rows["_msg"], minlength=n_msg).astype(np.int64)
    first = np.zeros(n_msg, np.int64)
    if n_msg > 1:
        np.cumsum(per_msg[:-1], out=first[1:])
    e, msg, pos = _selected(t, od, keep)
    ref = e["ReferenceID"].astype(np.int64)
    ok = ~od.column("ReferenceID").is_null(e["ReferenceID"]) & (ref >= 1) & (ref <= per_msg[msg])
    lvl = np.zeros(e.shape[0], lv.rows.dtype)
    lvl[ok] = lv.rows[first[msg[ok]] + ref[ok] - 1]
    px_null = np.asarray(lv.column("MDEntryPx.mantissa").is_null(lvl["MDEntryPx.mantissa"]))
    orders = _Part(
        index=t.rows["_index"][msg].astype(np.int64),
        rank=1,
        pos=pos,
        sec=lvl["SecurityID"].astype(np.int64),
        oid=e["OrderID"].astype(np.int64),
        oid_null=np.asarray(od.column("OrderID").is_null(e["OrderID"]), dtype=np.bool_),
        prio=_or_fill(od, e, "MDOrderPriority", -1),
        mant=np.where(px_null, 0, lvl["MDEntryPx.mantissa"].astype(np.int64)),
        px_null=px_null | ~ok,
        exponent=_exponent(lv),
        qty=_or_fill(od, e, "MDDisplayQty", 0),
        side=_side(lvl["MDEntryType"]),
        action=np.where(ok, e["OrderUpdateAction"].astype(np.int64), _BAD_REF),
        ts=t.rows["TransactTime"][msg].astype(np.int64),
        tid=tid,
    )
    le, lmsg, lpos = _selected(t, lv, keep)
    is_reset = le["MDEntryType"].view(np.uint8) == ord("J")
    r, m = le[is_reset], lmsg[is_reset]
    z = np.zeros(r.shape[0], np.int64)
    resets = _Part(
        index=t.rows["_index"][m].astype(np.int64),
        rank=0,
        pos=lpos[is_reset],
        sec=r["SecurityID"].astype(np.int64),
        oid=z,
        oid_null=z == 1,
        prio=z - 1,
        mant=z,
        px_null=z == 0,
        exponent=_exponent(lv),
        qty=z,
        side=z,
        action=z + _RESET,
        ts=t.rows["TransactTime"][m].astype(np.int64),
        tid=tid,
    )
    return [orders, resets]


def _snapshot_parts(cap: DecodedCapture) -> tuple[list[_Part], dict[int, list[tuple[int, int]]]]:
    """Return the complete order snapshots as parts, and per SecurityID (index, last seq).

    Each snapshot is a reset of its instrument's book (rank 0) then its orders by priority
    (rank 1), at the message index of its last chunk to arrive.
    """
    parts: list[_Part] = []
    points: dict[int, list[tuple[int, int]]] = {}
    for tid, t in sorted(cap.decoded.templates.items()):
        desc = t.message.description or t.message.name
        if desc != "SnapshotFullRefreshOrderBook" or not len(t):
            continue
        g = t.groups["NoMDEntries"]
        r = t.rows
        bounds = np.searchsorted(g.rows["_msg"], np.arange(len(t) + 1))
        pending: dict[tuple[int, int], dict[int, int]] = {}  # (sid, last seq) -> chunk -> row
        done: set[tuple[int, int]] = set()
        for i in np.argsort(r["_index"], kind="stable").tolist():
            key = (int(r["SecurityID"][i]), int(r["LastMsgSeqNumProcessed"][i]))
            if key in done:
                continue  # the same snapshot again (another loop, the other feed)
            chunks = pending.setdefault(key, {})
            chunks[int(r["CurrentChunk"][i])] = i
            n_chunks = int(r["NoChunks"][i])
            if set(chunks) != set(range(1, n_chunks + 1)):
                continue
            done.add(key)
            del pending[key]
            rows = np.concatenate([np.arange(bounds[j], bounds[j + 1]) for j in chunks.values()])
            e = g.rows[rows]
            e = e[np.argsort(e["MDOrderPriority"], kind="stable")]
            at, ts = int(r["_index"][i]), int(r["TransactTime"][i])
            n = e.shape[0]
            z = np.zeros(n, np.int64)
            parts.append(
                _Part(
                    index=z + at,
                    rank=1,
                    pos=np.arange(n, dtype=np.int64),
                    sec=z + key[0],
                    oid=e["OrderID"].astype(np.int64),
                    oid_null=np.asarray(g.column("OrderID").is_null(e["OrderID"]), np.bool_),
                    prio=_or_fill(g, e, "MDOrderPriority", -1),
                    mant=_or_fill(g, e, "MDEntryPx.mantissa", 0),
                    px_null=np.asarray(
                        g.column("MDEntryPx.mantissa").is_null(e["MDEntryPx.mantissa"])
                    ),
                    exponent=_exponent(g),
                    qty=_or_fill(g, e, "MDDisplayQty", 0),
                    side=_side(e["MDEntryType"]),
                    action=z + NEW,
                    ts=z + ts,
                    tid=tid,
                )
            )
            one = np.zeros(1, np.int64)
            parts.append(
                _Part(
                    index=one + at,
                    rank=0,
                    pos=one,
                    sec=one + key[0],
                    oid=one,
                    oid_null=one == 1,
                    prio=one - 1,
                    mant=one,
                    px_null=one == 0,
                    exponent=_exponent(g),
                    qty=one,
                    side=one,
                    action=one + _RESET,
                    ts=one + ts,
                    tid=tid,
                )
            )
            points.setdefault(key[0], []).append((at, key[1]))
    return parts, points


def _sources(cap: DecodedCapture, keep: BOOL) -> list[_Part]:
    """Return the entries of every order-book group and combined book message."""
    parts: list[_Part] = []
    for tid, t in sorted(cap.decoded.templates.items()):
        if not len(t) or "TransactTime" not in (t.rows.dtype.names or ()):
            continue
        g = t.groups.get("NoMDEntries")
        if g is not None and _has(g, ORDER_COLUMNS):
            parts.append(_order_part(t, g, keep, tid))
        od = t.groups.get("NoOrderIDEntries")
        if (
            g is not None
            and od is not None
            and _has(od, ORDER_ID_COLUMNS)
            and _has(g, LEVEL_COLUMNS)
        ):
            parts += _combined_parts(t, keep, tid)
    return parts


def _tick_mantissa(tick_size: str, exponent: int) -> int:
    try:
        d = Decimal(tick_size)
    except InvalidOperation:
        raise MboError(f"tick size {tick_size!r}: not a decimal number") from None
    units = d.scaleb(-exponent)
    if d <= 0 or units != units.to_integral_value():
        raise MboError(
            f"tick size {tick_size}: must be a positive multiple of the price unit 1e{exponent}"
        )
    return int(units)


def mbo_events(cap: DecodedCapture, *, tick_size: str | None = None) -> MboEvents:
    """Return the capture's market-by-order entries as ``L3_EVENT_DTYPE`` rows, in feed order.

    Parameters
    ----------
    cap
        The decoded capture.
    tick_size
        One tick, as a decimal (``"0.25"``): prices are ``price / tick_size`` and must be
        whole. Default: per instrument, the greatest common divisor of its prices.

    Returns
    -------
    MboEvents
        The rows (``ts`` is the message's TransactTime), each row's book (one per
        SecurityID), raw price and priority, and the entries left out by reason: an entry
        type other than Bid/Offer, a null OrderID, an action MBO does not use, a New without
        a quantity, a ReferenceID naming no entry of its message.

    Raises
    ------
    MboError
        If a price is off ``tick_size``, or a price composite has no constant exponent.
    """
    parts = _sources(cap, first_arrivals(cap))
    n_incremental = sum(p.pos.size for p in parts)
    snaps, points = _snapshot_parts(cap)
    parts += snaps
    exponent = min((p.exponent for p in parts), default=-9)

    def cat(name: str) -> I64:
        arrs = [np.asarray(getattr(p, name), dtype=np.int64) for p in parts]
        return np.concatenate(arrs) if arrs else np.zeros(0, np.int64)

    def cat_b(name: str) -> BOOL:
        arrs = [np.asarray(getattr(p, name), dtype=np.bool_) for p in parts]
        return np.concatenate(arrs) if arrs else np.zeros(0, np.bool_)

    for part in parts:
        part.mant = part.mant * 10 ** (part.exponent - exponent)
    index, pos, sec, oid, prio = cat("index"), cat("pos"), cat("sec"), cat("oid"), cat("prio")
    qty, side, action, ts, mant = cat("qty"), cat("side"), cat("action"), cat("ts"), cat("mant")
    oid_null, px_null = cat_b("oid_null"), cat_b("px_null")
    rank = np.concatenate([np.full(p.pos.size, p.rank, np.int64) for p in parts] or [pos])
    tid = np.concatenate([np.full(p.pos.size, p.tid, np.int64) for p in parts] or [pos])
    order = np.lexsort((pos, rank, index))  # feed order: message, group, entry

    reset = action[order] == _RESET
    skipped: Counter[str] = Counter()
    use = np.ones(order.size, np.bool_)

    def drop(mask: BOOL, why: str) -> None:
        m = np.asarray(mask, dtype=np.bool_)[order] & use
        n = int(np.count_nonzero(m))
        if n:
            skipped[why] += n
        use[m] = False

    orderly = action != _RESET
    if points:  # incremental entries a snapshot before them already holds
        seq = cap.packets["seq"][cap.messages["packet"][index]].astype(np.int64)
        held = np.zeros(index.size, np.bool_)
        incremental = np.arange(index.size) < n_incremental
        for sid, pts in points.items():
            pts.sort()
            at = np.array([p[0] for p in pts], np.int64)
            last = np.array([p[1] for p in pts], np.int64)
            mine = np.flatnonzero(incremental & (sec == sid))
            j = np.searchsorted(at, index[mine], side="right") - 1
            held[mine] = (j >= 0) & (seq[mine] <= last[np.maximum(j, 0)])
        drop(held, "already in the snapshot before it")
    drop(action == _BAD_REF, "ReferenceID names no entry of its message")
    drop(orderly & (side == 0), "entry type other than Bid or Offer")
    drop(orderly & ~np.isin(action, (NEW, CHANGE, DELETE)), "action other than New, Change, Delete")
    drop(orderly & oid_null, "no OrderID")
    drop(orderly & (action == NEW) & (qty <= 0), "New without a quantity")
    drop(orderly & (action != DELETE) & px_null, "New or Change without a price")
    ids = np.unique(sec[order][use & ~reset])
    use &= ~reset | np.isin(sec[order], ids)  # resets of instruments without orders: not ours
    order = order[use]
    index, sec, oid, prio, qty = index[order], sec[order], oid[order], prio[order], qty[order]
    side, action, ts, tid = side[order], action[order], ts[order], tid[order]
    mant, px_null, reset = mant[order], px_null[order], action == _RESET
    entries = int(np.count_nonzero(~reset))

    # which Changes lose priority: against the order's previous event in the feed
    n = index.size
    lose = np.zeros(n, np.bool_)
    live = np.flatnonzero(~reset)
    if live.size:
        by = live[np.lexsort((live, oid[live]))]
        same = np.zeros(by.size, np.bool_)
        same[1:] = oid[by[1:]] == oid[by[:-1]]
        prev = np.full(n, -1, np.int64)
        prev[by[1:][same[1:]]] = by[:-1][same[1:]]
        ch = np.flatnonzero((action == CHANGE) & (prev >= 0))
        p = prev[ch]
        known = action[p] != DELETE
        moved = mant[ch] != mant[p]
        reprio = (prio[ch] >= 0) & (prio[p] >= 0) & (prio[ch] != prio[p])
        lose[ch[known & (moved | reprio) & (qty[ch] > 0)]] = True

    book = np.searchsorted(ids, sec).clip(0, max(ids.size - 1, 0)).astype(np.int64)
    ticks = np.zeros(max(ids.size, 1), dtype=np.int64)
    priced = ~reset & ~px_null
    if tick_size is not None:
        ticks[:] = _tick_mantissa(tick_size, exponent)
        off = np.flatnonzero(priced & (mant % ticks[book] != 0))
        if off.size:
            i = int(off[0])
            raise MboError(
                f"message {int(index[i])}: SecurityID {int(sec[i])} OrderID {int(oid[i])}: "
                f"price {int(mant[i])}e{exponent} is not a multiple of the tick size {tick_size}"
                f" ({off.size:,} such entries)"
            )
    else:
        np.gcd.at(ticks, book[priced], np.abs(mant[priced]))
        ticks[ticks == 0] = 1
    ticks = ticks[: ids.size] if ids.size else ticks[:0]
    px = np.where(priced, mant // np.maximum(ticks[book] if ids.size else 1, 1), 0)

    # one row per event, two for a Change that loses priority (cancel, then add)
    reps = 1 + lose.astype(np.int64)
    src = np.repeat(np.arange(n), reps)
    second = np.zeros(src.size, np.bool_)
    second[np.cumsum(reps) - 1] = lose
    first_of_two = np.repeat(lose, reps) & ~second
    ev = np.zeros(src.size, L3_EVENT_DTYPE)
    ev["ts"] = ts[src]
    ev["order_id"] = np.where(reset[src], 0, oid[src])
    ev["px"] = px[src]
    ev["side"] = side[src]
    a = action[src]
    act = np.select(
        [reset[src], a == NEW, first_of_two, second, a == CHANGE, a == DELETE],
        [L3_CLEAR, L3_ADD, L3_CANCEL, L3_ADD, L3_MODIFY, L3_CANCEL],
        0,
    )
    ev["action"] = act
    ev["qty"] = np.where((act == L3_CANCEL) | (act == L3_CLEAR), 0, qty[src])
    return MboEvents(
        security_ids=ids,
        ticks=ticks,
        exponent=exponent,
        events=ev,
        book=book[src],
        mantissa=np.where(priced, mant, 0)[src],
        priority=prio[src],
        event_index=index[src],
        template_id=tid[src],
        entries=entries,
        skipped=skipped,
    )


@dataclass
class MboBooks:
    """One :class:`L3Book` per SecurityID, built from a capture's order events."""

    books: dict[int, L3Book]  # SecurityID -> its book after the last event
    events: MboEvents
    touch: I64  # int64[len(events), 4]: bid px, bid qty, ask px, ask qty after each event

    @property
    def unknown(self) -> int:
        """Events that named an order not in its book (added before the capture began)."""
        return sum(b.unknown for b in self.books.values())

    @property
    def duplicates(self) -> int:
        """New orders whose OrderID was already resting."""
        return sum(b.duplicates for b in self.books.values())


def build_l3_books(
    cap: DecodedCapture,
    *,
    tick_size: str | None = None,
    events: MboEvents | None = None,
    max_levels: int = 1 << 20,
) -> MboBooks:
    """Build one market-by-order book per SecurityID from a capture's order entries.

    Parameters
    ----------
    cap
        The decoded capture.
    tick_size
        One tick, as a decimal (see :func:`mbo_events`).
    events
        The capture's events already made by :func:`mbo_events` (saves making them again).
    max_levels
        Widest price range (ticks) a book may span; each book holds every price its orders
        used in the capture.

    Returns
    -------
    MboBooks
        The books after the last event (each over the price range its orders used, CME's
        priority policy), and the touch after every event.

    Raises
    ------
    MboError
        As :func:`mbo_events`, or if an instrument's prices span more than ``max_levels``
        ticks (a wrong ``tick_size``, or a stray price).
    """
    ev = events if events is not None else mbo_events(cap, tick_size=tick_size)
    rows = ev.events
    touch = np.zeros((rows.shape[0], 4), dtype=np.int64)
    books: dict[int, L3Book] = {}
    sets = (rows["action"] == L3_ADD) | (rows["action"] == L3_MODIFY)
    for b, sid in enumerate(ev.security_ids.tolist()):
        sel = np.flatnonzero(ev.book == b)
        px = rows["px"][sel][sets[sel]]
        lo = int(px.min()) if px.size else 0
        hi = int(px.max()) if px.size else 0
        if hi - lo + 1 > max_levels:
            raise MboError(
                f"SecurityID {sid}: prices span {hi - lo + 1:,} ticks ({lo} to {hi}), more than "
                f"max_levels {max_levels:,}; check the tick size"
            )
        adds = int(np.count_nonzero(rows["action"][sel] == L3_ADD))
        book = L3Book(lo, hi - lo + 1, capacity=max(16, min(adds, 1 << 16)))
        t = np.zeros((sel.size, 4), dtype=np.int64)
        book.apply(np.ascontiguousarray(rows[sel]), t)
        touch[sel] = t
        books[int(sid)] = book
    return MboBooks(books=books, events=ev, touch=touch)


__all__ = [
    "CHANGE",
    "DELETE",
    "NEW",
    "MboBooks",
    "MboError",
    "MboEvents",
    "build_l3_books",
    "mbo_events",
]
