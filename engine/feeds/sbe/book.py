# SPDX-License-Identifier: MIT
"""MDP 3.0 market-by-price books from a decoded capture, into :class:`~engine.book.l2.L2Books`.

:func:`build_mbp_books` takes the entries of every ``MDIncrementalRefreshBook`` message
(template 32 in schema v8, 46 from v9: :func:`book_template`) of one feed (A and B copies
of a packet arbitrated by sequence number: the first to arrive is used), keeps the outright
book (bids and offers; implied entries are excluded and counted), turns the level-indexed
MBP updates into price level sets (:func:`engine.feeds.sbe._kernels.mbp_events`), one L2
book per SecurityID, and applies them to :class:`L2Books` with the touch after every event.
It reports the books' crossings at the end of each message (:func:`crossed_while_open`:
those after the groups opened, when there must be none), and :func:`check_trades` checks
the trade and volume summaries against each other (and the per-instrument ``RptSeq``
sequence).

Prices are integer ticks: each instrument's tick is the greatest common divisor of the
prices it was quoted at in the capture (no instrument definitions are needed), its
``px`` is ``MDEntryPx.mantissa // tick``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from engine.book.l2 import L2Books
from engine.feeds.sbe import _kernels as k
from engine.feeds.sbe.decoder import TemplateRows
from engine.feeds.sbe.mdp3 import DecodedCapture
from engine.types import BUY, L2_CLEAR, L2_EVENT_DTYPE, L2_SET, SELL

I64 = npt.NDArray[np.int64]
BOOL = npt.NDArray[np.bool_]


#: How the snapshot templates' descriptions start (52/53, 38/44, v13's 59/61/68/69): the
#: recovery loop, numbered apart from the incremental feed.
SNAPSHOT_PREFIX = "Snapshot"


def snapshot_packets(cap: DecodedCapture) -> BOOL:
    """Return the mask of packets that carry a snapshot message."""
    ids = [
        tid
        for tid, m in cap.schema.messages.items()
        if (m.description or m.name).startswith(SNAPSHOT_PREFIX)
    ]
    out = np.zeros(cap.packets.shape[0], dtype=np.bool_)
    msgs = cap.messages
    if ids and msgs.shape[0]:
        hit = np.isin(msgs["template_id"], ids)
        out[msgs["packet"][hit]] = True
    return out


def first_arrivals(cap: DecodedCapture) -> BOOL:
    """Return the mask of packets that are the first arrival of their sequence number.

    Every channel of the capture is taken as a copy (A or B feed) of one sequence of packets;
    packets without a sequence number are kept, and so are the snapshot loop's (they are
    numbered apart, from 1 each loop: :func:`snapshot_packets`).
    """
    seq = cap.packets["seq"]
    keep = np.ones(seq.size, dtype=np.bool_)
    has = np.flatnonzero((seq >= 0) & ~snapshot_packets(cap))
    _, first = np.unique(seq[has], return_index=True)
    keep[has] = False
    keep[has[first]] = True
    return keep


def book_template(cap: DecodedCapture) -> TemplateRows:
    """Return the rows of the capture's ``MDIncrementalRefreshBook`` messages.

    Schema v9 defines two (32, and 46 which may carry order entries); the one the capture
    holds (the one with more rows) is used, so a v9 capture of 46 messages is not read as
    an empty 32.
    """
    found = [
        t
        for t in cap.decoded.templates.values()
        if "MDIncrementalRefreshBook" in (t.message.name, t.message.description)
    ]
    if not found:
        return cap.template("MDIncrementalRefreshBook")  # KeyError naming the schema
    return max(found, key=lambda t: (len(t), t.message.id))


def _kept_messages(cap: DecodedCapture, rows: npt.NDArray[np.void], keep: BOOL) -> BOOL:
    return np.asarray(keep[rows["_packet"]], dtype=np.bool_)


@dataclass
class MbpBooks:
    """The books built from a capture, with what was done to get them."""

    books: L2Books
    security_ids: I64  # book index -> SecurityID
    ticks: I64  # book index -> price mantissa of one tick
    events: npt.NDArray[np.void]  # L2_EVENT_DTYPE, in feed order
    touch: I64  # int64[len(events), 4]: bid px, bid qty, ask px, ask qty after each event
    event_index: I64  # the capture message index (``_index``) each event came from
    entries: int  # outright entries applied
    implied: int  # implied entries left out
    bad_levels: int  # entries whose price level was outside the book's depth
    crossed: I64  # rows of ``events`` after which their book was crossed or locked

    def book_of(self, security_id: int) -> int:
        """Return the book index of a SecurityID (KeyError if it had no book entries)."""
        i = int(np.searchsorted(self.security_ids, security_id))
        if i >= self.security_ids.size or self.security_ids[i] != security_id:
            raise KeyError(f"no book for SecurityID {security_id}")
        return i


def build_mbp_books(cap: DecodedCapture, depth: int = 10, n_levels: int = 4096) -> MbpBooks:
    """Build one outright MBP book per SecurityID from the capture's book messages.

    Parameters
    ----------
    cap
        The decoded capture.
    depth
        Price levels a side of the MDP 3.0 book (10 for CME futures outrights).
    n_levels
        Window of each :class:`L2Books` book, ticks per side.

    Returns
    -------
    MbpBooks
        The books after the last message, each event applied, and the touch after each.
    """
    book_msg = book_template(cap)
    msgs = book_msg.rows
    group = book_msg.groups["NoMDEntries"]
    e = group.rows
    keep = _kept_messages(cap, msgs, first_arrivals(cap))[e["_msg"]]
    etype = e["MDEntryType"].view(np.uint8)
    outright = keep & ((etype == ord("0")) | (etype == ord("1")) | (etype == ord("J")))
    implied = int(np.count_nonzero(keep & ((etype == ord("E")) | (etype == ord("F")))))
    e = e[outright]
    etype = etype[outright]
    sec = e["SecurityID"].astype(np.int64)
    mantissa = e["MDEntryPx.mantissa"].astype(np.int64)
    is_reset = etype == ord("J")
    priced = ~is_reset & ~group.column("MDEntryPx.mantissa").is_null(e["MDEntryPx.mantissa"])
    ids = np.unique(sec[~is_reset])
    book = np.searchsorted(ids, sec).clip(0, max(ids.size - 1, 0)).astype(np.int64)
    ticks = np.zeros(ids.size, dtype=np.int64)
    np.gcd.at(ticks, book[priced], np.abs(mantissa[priced]))
    ticks[ticks == 0] = 1
    px = np.where(priced, mantissa // ticks[book], 0)
    size = np.where(e["MDEntrySize"] == group.column("MDEntrySize").null, 0, e["MDEntrySize"])
    side = np.where(is_reset, k.MBP_RESET, (etype == ord("1")).astype(np.int64))
    n = e.size
    lv_px = np.zeros((max(ids.size, 1), 2, depth), dtype=np.int64)
    lv_qty = np.zeros_like(lv_px)
    out = np.zeros((n * (depth + 1) + 1, k.EV_COLUMNS), dtype=np.int64)
    bad = np.zeros(2, dtype=np.int64)
    m = k.mbp_events(
        np.ascontiguousarray(book),
        np.ascontiguousarray(side.astype(np.int64)),
        e["MDUpdateAction"].astype(np.int64),
        e["MDPriceLevel"].astype(np.int64),
        np.ascontiguousarray(px, dtype=np.int64),
        np.ascontiguousarray(size, dtype=np.int64),
        lv_px,
        lv_qty,
        out,
        bad,
    )
    ev = out[:m]
    msg_row = e["_msg"][ev[:, k.EV_ENTRY]]
    events = np.zeros(m, dtype=L2_EVENT_DTYPE)
    events["ts"] = msgs["TransactTime"][msg_row].astype(np.int64)
    events["px"] = ev[:, k.EV_PX]
    events["qty"] = ev[:, k.EV_QTY]
    events["book"] = ev[:, k.EV_BOOK]
    events["side"] = np.where(ev[:, k.EV_SIDE] == k.MBP_OFFER, SELL, BUY)
    events["kind"] = np.where(ev[:, k.EV_CLEAR] == 1, L2_CLEAR, L2_SET)
    first_px = np.zeros(max(ids.size, 1), dtype=np.int64)
    first_px[book[priced][::-1]] = px[priced][::-1]  # each book's first quoted price
    books = L2Books(max(ids.size, 1), n_levels, centre=first_px)
    touch = np.zeros((m, 4), dtype=np.int64)
    if m:
        books.apply(events, touch)
    index = msgs["_index"][msg_row].astype(np.int64)
    # the touch at the end of each message, per book: the last event of each (message, book)
    key = index * max(ids.size, 1) + events["book"].astype(np.int64)
    last = np.flatnonzero(np.append(key[1:] != key[:-1], True)) if m else np.zeros(0, np.int64)
    t = touch[last]
    crossed = last[(t[:, 1] > 0) & (t[:, 3] > 0) & (t[:, 0] >= t[:, 2])]
    return MbpBooks(
        books=books,
        security_ids=ids,
        ticks=ticks,
        events=events,
        touch=touch,
        event_index=index,
        entries=int(n - np.count_nonzero(is_reset)),
        implied=implied,
        bad_levels=int(bad[0]),
        crossed=crossed,
    )


@dataclass(frozen=True)
class TradeCheck:
    """Trade summaries against volume updates and each instrument's RptSeq."""

    trades: int  # trade summary entries (first arrivals)
    with_fills: int  # trade summary messages that list their order fills
    traded: int  # their total size
    volume_steps: int  # consecutive volume updates of an instrument compared
    volume_mismatches: int  # steps whose volume change differs from the trades between
    fill_mismatches: int  # trade summaries whose order fills do not add up to 2x their size
    rptseq_gaps: int  # places where an instrument's RptSeq does not go up by one
    instruments: int


def ready_to_trade_ns(cap: DecodedCapture) -> int | None:
    """Return when the last instrument group went to ReadyToTrade (SecurityStatus), or None.

    Before it, books may be locked or crossed (pre-open, indicative prices); after it, an
    outright book must not be.
    """
    status = cap.template("SecurityStatus")
    enum = status.column("SecurityTradingStatus").enum
    rows = status.rows[first_arrivals(cap)[status.rows["_packet"]]]
    if enum is None or "ReadyToTrade" not in enum.values:
        return None
    ready = rows[rows["SecurityTradingStatus"] == enum.values["ReadyToTrade"]]
    return int(ready["TransactTime"].max()) if ready.size else None


def crossed_while_open(cap: DecodedCapture, books: MbpBooks) -> I64:
    """Return the rows of ``books.crossed`` after every group was ReadyToTrade.

    All of ``books.crossed`` when the capture shows no ReadyToTrade.
    """
    open_ns = ready_to_trade_ns(cap)
    if open_ns is None:
        return books.crossed
    return books.crossed[books.events["ts"][books.crossed] > open_ns]


def _entries(cap: DecodedCapture, name: str, keep: BOOL) -> npt.NDArray[np.void]:
    t = cap.template(name)
    g = t.groups["NoMDEntries"].rows
    out: npt.NDArray[np.void] = g[keep[t.rows["_packet"][g["_msg"]]]]
    return out


def check_trades(cap: DecodedCapture) -> TradeCheck:
    """Check that each instrument's volume goes up by the trades reported in between.

    For consecutive ``MDIncrementalRefreshVolume`` entries of an instrument (by RptSeq), the
    change of its cumulative volume must equal the size of the
    ``MDIncrementalRefreshTradeSummary`` entries whose RptSeq lies between them; a trade
    summary's order fills (``NoOrderIDEntries.LastQty``, buyers' and sellers') must add up
    to twice its size. Also counts where an instrument's RptSeq, over every incremental
    entry that carries one, does not go up by exactly one.
    """
    keep = first_arrivals(cap)
    summary = cap.template("MDIncrementalRefreshTradeSummary")
    trades = _entries(cap, "MDIncrementalRefreshTradeSummary", keep)
    # each trade has a buyer's and a seller's order fills: they add up to twice its size
    fills = fill_mismatches = 0
    if "NoOrderIDEntries" in summary.groups and len(summary):
        md = summary.groups["NoMDEntries"].rows
        od = summary.groups["NoOrderIDEntries"].rows
        size = np.bincount(md["_msg"], weights=md["MDEntrySize"], minlength=len(summary))
        filled = np.bincount(od["_msg"], weights=od["LastQty"], minlength=len(summary))
        with_fills = keep[summary.rows["_packet"]] & (
            np.bincount(od["_msg"], minlength=len(summary)) > 0
        )
        fills = int(np.count_nonzero(with_fills))
        fill_mismatches = int(np.count_nonzero(with_fills & (filled != 2 * size)))
    volume = _entries(cap, "MDIncrementalRefreshVolume", keep)
    steps = mismatches = 0
    for sid in np.unique(volume["SecurityID"]):
        v = volume[volume["SecurityID"] == sid]
        v = v[np.argsort(v["RptSeq"], kind="stable")]
        tr = trades[trades["SecurityID"] == sid]
        seq = tr["RptSeq"].astype(np.int64)
        cum = np.concatenate(([0], np.cumsum(tr["MDEntrySize"][np.argsort(seq)].astype(np.int64))))
        seq = np.sort(seq)
        lo = np.searchsorted(seq, v["RptSeq"][:-1].astype(np.int64), side="right")
        hi = np.searchsorted(seq, v["RptSeq"][1:].astype(np.int64), side="left")
        traded_between = cum[hi] - cum[lo]
        change = np.diff(v["MDEntrySize"].astype(np.int64))
        steps += int(change.size)
        mismatches += int(np.count_nonzero(change != traded_between))
    # RptSeq: every entry of every template with a SecurityID and an RptSeq
    sids: list[I64] = []
    seqs: list[I64] = []
    order: list[I64] = []
    for tid, t in cap.decoded.templates.items():
        del tid
        for g in t.groups.values():
            names = g.rows.dtype.names or ()
            if "SecurityID" in names and "RptSeq" in names and len(g):
                rows = g.rows[keep[t.rows["_packet"][g.rows["_msg"]]]]
                sids.append(rows["SecurityID"].astype(np.int64))
                seqs.append(rows["RptSeq"].astype(np.int64))
                order.append(t.rows["_index"][rows["_msg"]].astype(np.int64))
    gaps = 0
    instruments = 0
    if sids:
        sid_all, seq_all, at = np.concatenate(sids), np.concatenate(seqs), np.concatenate(order)
        o = np.lexsort((seq_all, at, sid_all))  # by instrument, then arrival
        sid_all, seq_all = sid_all[o], seq_all[o]
        same = sid_all[1:] == sid_all[:-1]
        gaps = int(np.count_nonzero(same & (np.diff(seq_all) != 1)))
        instruments = int(np.unique(sid_all).size)
    return TradeCheck(
        trades=int(trades.size),
        with_fills=fills,
        traded=int(trades["MDEntrySize"].astype(np.int64).sum()),
        volume_steps=steps,
        volume_mismatches=mismatches,
        fill_mismatches=fill_mismatches,
        rptseq_gaps=gaps,
        instruments=instruments,
    )
