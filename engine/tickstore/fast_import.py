# SPDX-License-Identifier: MIT
"""FAST market-data captures (FIX semantics, pcap/pcapng) into the tick store (issue 20).

``qwconsole import pcap FILE --protocol fast --templates templates.xml --tick-size 0.25``. The
capture is decoded with the FAST templates (:func:`engine.feeds.fast.mdimport.read_capture`:
MarketDataIncrementalRefresh X and MarketDataSnapshotFullRefresh W, fields found by FIX tag).
Every instrument becomes an instrument-day named ``SECID<id>`` (or as ``--symbol ID=NAME``
says; an instrument named only by Symbol (55) keeps that name) with:

* ``l2``: the bid and offer entries as level deltas. With MDPriceLevel (1023) the book is
  level-indexed like MDP 3.0's (New, Change, Delete, DeleteThru, DeleteFrom, Overlay, through
  :func:`engine.feeds.sbe._kernels.mbp_events` with ``--depth`` levels a side); without it,
  keyed by price (New/Change/Overlay set the price's size, Delete removes it, DeleteThru
  empties the side). A snapshot (W) and an MDEntryType J clear the book first; a snapshot
  whose RptSeq the book has already reached is left out. ``seq`` is
  the entry's RptSeq (-1 without);
* ``bbo``: the top of that book after each message that changed it;
* ``trades``: MDEntryType 2 entries of incremental messages, with the aggressor side where
  the template has one (5797 or 2446; 0 otherwise) and TradeID (1003) as the trade id.

``ts`` is the entry's (else the message's) TransactTime, else SendingTime, else the capture
time; ``ts_recv`` the capture time. Prices must lie on ``--tick-size`` and sizes on
``--lot-size``: a row that does not is reported (file, message, field, value, why) and, with
``--skip-bad-rows``, skipped. A gap in the MsgSeqNum (or packet) sequence stops the import
unless ``--allow-gaps``, which imports it and lists the gaps in each day's ``l2_gaps``.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from engine.book.l2 import L2Books
from engine.feeds.fast.mdimport import (
    E_BOOK,
    E_CLEAR,
    E_TRADE,
    SIDE_OFFER,
    MdCapture,
    MdLayout,
    SequenceReport,
    read_capture,
)
from engine.feeds.fast.templates import TemplateSet
from engine.feeds.sbe import _kernels as k
from engine.tickstore.importing import (
    GAPS_ATTR,
    Grid,
    ImportResult,
    Progress,
    Rejects,
    Sink,
    Staging,
    grid_steps,
    monotonic_times,
)
from engine.tickstore.schema import BBO_DTYPE, L2_DELTA_DTYPE, TRADE_DTYPE
from engine.types import BUY, L2_CLEAR, L2_EVENT_DTYPE, L2_SET, SELL

I64 = npt.NDArray[np.int64]
BOOL = npt.NDArray[np.bool_]


class FastGapError(ValueError):
    """The capture misses messages (and gaps were not allowed)."""


@dataclass
class FastStats:
    """What the import saw besides the rows it wrote."""

    datagrams: int = 0
    messages: dict[str, int] = field(default_factory=dict)
    skipped_types: dict[str, int] = field(default_factory=dict)
    no_security: int = 0
    stale_snapshots: int = 0
    undecodable: int = 0
    bad_levels: int = 0
    other_destinations: Counter[str] = field(default_factory=Counter)  # not in --channel
    message_seq: list[SequenceReport] = field(default_factory=list)
    packet_seq: list[SequenceReport] = field(default_factory=list)

    @property
    def gaps(self) -> list[tuple[str, int, int]]:
        """Return every gap: ``("message" | "packet", first, last)``."""
        out = [("message", a, b) for r in self.message_seq for a, b in r.gaps]
        return out + [("packet", a, b) for r in self.packet_seq for a, b in r.gaps]


class FastImporter:
    """Turn the FAST market data of captures into ``l2``, ``bbo`` and ``trades`` rows."""

    def __init__(
        self,
        staging: Staging,
        *,
        templates: TemplateSet,
        tick_size: str,
        lot_size: str = "1",
        venue: str = "",
        symbols: dict[int, str] | None = None,
        framing: str = "none",
        reset: str = "none",
        depth: int = 10,
        channels: frozenset[str] | None = None,
        skip_bad_rows: bool = False,
    ) -> None:
        if not 1 <= depth <= 1000:
            raise ValueError(f"--depth {depth}: give 1 to 1000 levels a side")
        self.staging = staging
        self.templates = templates
        self.layout = MdLayout.of(templates)
        self.tick_size, self.lot_size, self.venue = tick_size, lot_size, venue
        self.symbols = symbols or {}
        self.framing, self.reset, self.depth = framing, reset, depth
        self.channels = channels
        self.px = Grid("tick size", tick_size)
        self.qty = Grid("lot size", lot_size)
        self.result = ImportResult()
        self.rejects = Rejects(skip_bad_rows, self.result)
        self.stats = FastStats()

    def import_file(
        self, path: Path, *, allow_gaps: bool = False, progress: Progress | None = None
    ) -> None:
        """Import one capture (raises :class:`FastGapError` on a gap unless allowed)."""
        total = path.stat().st_size
        if progress is not None:
            progress(0, total, 0)
        cap = read_capture(
            path,
            self.templates,
            framing=self.framing,
            reset=self.reset,
            layout=self.layout,
            channels=self.channels,
        )
        st = self.stats
        st.datagrams += cap.datagrams
        for name, n in cap.messages.items():
            st.messages[name] = st.messages.get(name, 0) + n
        for name, n in cap.skipped_types.items():
            st.skipped_types[name] = st.skipped_types.get(name, 0) + n
        st.no_security += cap.no_security
        st.stale_snapshots += cap.stale_snapshots
        st.undecodable += cap.undecodable
        st.other_destinations.update(cap.other_destinations)
        st.message_seq.append(cap.message_seq)
        if cap.packet_seq is not None:
            st.packet_seq.append(cap.packet_seq)
        gaps = _gaps(cap)
        if gaps and not allow_gaps:
            shown = ", ".join(f"{w}s {a}-{b}" for w, a, b in gaps[:5])
            raise FastGapError(
                f"{path}: the capture misses {shown}{' ...' if len(gaps) > 5 else ''}; "
                "--allow-gaps imports it anyway and lists the gaps in each day's l2_gaps "
                "attribute"
            )
        if progress is not None:
            progress(total // 2, total, 0)
        written = self._book(str(path), cap) + self._trades(str(path), cap)
        if gaps:
            self._record_gaps(cap, gaps)
        if progress is not None:
            progress(total, total, written)

    def _record_gaps(self, cap: MdCapture, gaps: list[tuple[str, int, int]]) -> None:
        """Set the ``l2_gaps`` attribute of every day of the capture's instruments."""
        text = json.dumps(
            [
                {"sequence": w, "first_seq": a, "last_seq": b, "missing": b - a + 1}
                for w, a, b in gaps
            ]
        )
        for inst in range(len(cap.instruments)):
            sink = self._sink(cap, inst)
            for sym, day in list(self.result.days):
                if sym == sink.symbol:
                    sink.set_attr(day, GAPS_ATTR, text)

    # --- conversions ------------------------------------------------------------------------

    def _ticks(self, file: str, e: npt.NDArray[np.void], column: str) -> tuple[I64, BOOL]:
        def bad(i: int) -> None:
            self.rejects.bad(
                file,
                int(e["msg"][i]),
                column,
                f"{int(e['px'][i]) / 1e9:g}",
                f"is not a multiple of the tick size {self.tick_size}",
            )

        q, ok = grid_steps(e["px"].astype(np.int64), self.px, bad)
        fine = np.flatnonzero(e["px_fine"] & ok)
        for i in fine[:1000].tolist():
            bad(i)
        ok[fine] = False
        return q, ok

    def _lots(self, file: str, e: npt.NDArray[np.void], column: str) -> tuple[I64, BOOL]:
        def bad(i: int) -> None:
            self.rejects.bad(
                file,
                int(e["msg"][i]),
                column,
                f"{int(e['qty'][i]) / 1e9:g}",
                f"is not a multiple of the lot size {self.lot_size}",
            )

        return grid_steps(e["qty"].astype(np.int64), self.qty, bad)

    def _sink(self, cap: MdCapture, inst: int) -> Sink:
        key = cap.instruments[inst]
        if cap.keyed_by_symbol[inst]:
            name = key
        else:
            sid = int(key) if key.lstrip("-").isdigit() else None
            name = self.symbols.get(sid, f"SECID{key}") if sid is not None else f"SECID{key}"
        return Sink(
            self.staging,
            self.result,
            name,
            tick_size=self.tick_size,
            lot_size=self.lot_size,
            venue=self.venue,
        )

    # --- book -------------------------------------------------------------------------------

    def _book(self, file: str, cap: MdCapture) -> int:
        e = cap.entries
        e = e[(e["kind"] == E_BOOK) | (e["kind"] == E_CLEAR)]
        if not e.shape[0]:
            return 0
        clear = e["kind"] == E_CLEAR
        px, px_ok = self._ticks(file, e, "MDEntryPx")
        qty, qty_ok = self._lots(file, e, "MDEntrySize")
        ok = clear | (px_ok & qty_ok)
        e, px, qty = e[ok], px[ok], qty[ok]
        if self.layout.by_level:
            ev, entry = self._level_events(e, px, qty)
        else:
            ev, entry = _price_events(e, px, qty)
        n = 0
        n_inst = len(cap.instruments)
        if not ev.shape[0]:
            return 0
        first_px = np.zeros(max(n_inst, 1), np.int64)
        priced = ev["kind"] == L2_SET
        first_px[ev["book"][priced][::-1]] = ev["px"][priced][::-1]
        books = L2Books(max(n_inst, 1), 4096, centre=first_px)
        touch = np.zeros((ev.shape[0], 4), np.int64)
        books.apply(ev, touch)
        msg = e["msg"][entry]
        for b in range(n_inst):
            sel = np.flatnonzero(ev["book"] == b)
            if not sel.size:
                continue
            rows = np.zeros(sel.size, L2_DELTA_DTYPE)
            rows["ts"] = ev["ts"][sel]
            rows["ts_recv"] = e["ts_recv"][entry[sel]]
            rows["px"], rows["qty"] = ev["px"][sel], ev["qty"][sel]
            rows["side"], rows["kind"] = ev["side"][sel], ev["kind"][sel]
            rows["seq"] = e["rpt_seq"][entry[sel]]
            monotonic_times(rows)
            sink = self._sink(cap, b)
            sink.append("l2", rows)
            n += sel.size
            # the top after the last event of each message that changed it
            m = msg[sel]
            last = np.append(m[1:] != m[:-1], True)
            t = touch[sel][last]
            changed = np.append(True, (t[1:] != t[:-1]).any(axis=1))
            keep = np.flatnonzero(last)[changed]
            top = touch[sel][keep]
            bbo = np.zeros(keep.size, BBO_DTYPE)
            bbo["ts"] = rows["ts"][keep]
            bbo["ts_recv"] = rows["ts_recv"][keep]
            bbo["bid_px"], bbo["bid_qty"] = top[:, 0], top[:, 1]
            bbo["ask_px"], bbo["ask_qty"] = top[:, 2], top[:, 3]
            bbo["seq"] = rows["seq"][keep]
            sink.append("bbo", bbo)
            n += keep.size
        return n

    def _level_events(
        self, e: npt.NDArray[np.void], px: I64, qty: I64
    ) -> tuple[npt.NDArray[np.void], I64]:
        n_inst = int(e["instrument"].max()) + 1
        clear = e["kind"] == E_CLEAR
        side = np.where(clear, k.MBP_RESET, e["side"].astype(np.int64))
        lv_px = np.zeros((n_inst, 2, self.depth), np.int64)
        lv_qty = np.zeros_like(lv_px)
        out = np.zeros((e.shape[0] * (self.depth + 1) + 1, k.EV_COLUMNS), np.int64)
        bad = np.zeros(2, np.int64)
        m = k.mbp_events(
            np.ascontiguousarray(e["instrument"], dtype=np.int64),
            np.ascontiguousarray(side, dtype=np.int64),
            np.ascontiguousarray(e["action"], dtype=np.int64),
            np.ascontiguousarray(e["level"], dtype=np.int64),
            np.ascontiguousarray(px, dtype=np.int64),
            np.ascontiguousarray(qty, dtype=np.int64),
            lv_px,
            lv_qty,
            out,
            bad,
        )
        self.stats.bad_levels += int(bad[0])
        o = out[:m]
        entry = o[:, k.EV_ENTRY]
        ev = np.zeros(m, L2_EVENT_DTYPE)
        ev["ts"] = e["ts"][entry]
        ev["px"], ev["qty"], ev["book"] = o[:, k.EV_PX], o[:, k.EV_QTY], o[:, k.EV_BOOK]
        ev["side"] = np.where(o[:, k.EV_SIDE] == k.MBP_OFFER, SELL, BUY)
        ev["kind"] = np.where(o[:, k.EV_CLEAR] == 1, L2_CLEAR, L2_SET)
        return ev, entry

    # --- trades -----------------------------------------------------------------------------

    def _trades(self, file: str, cap: MdCapture) -> int:
        e = cap.entries[cap.entries["kind"] == E_TRADE]
        if not e.shape[0]:
            return 0
        px, px_ok = self._ticks(file, e, "MDEntryPx")
        qty, qty_ok = self._lots(file, e, "MDEntrySize")
        ok = px_ok & qty_ok
        side = np.select([e["side"] == 1, e["side"] == 2], [BUY, SELL], 0)
        n = 0
        for inst in np.unique(e["instrument"][ok]).tolist():
            sel = np.flatnonzero(ok & (e["instrument"] == inst))
            rows = np.zeros(sel.size, TRADE_DTYPE)
            rows["ts"], rows["ts_recv"] = e["ts"][sel], e["ts_recv"][sel]
            rows["px"], rows["qty"] = px[sel], qty[sel]
            rows["trade_id"], rows["side"] = e["trade_id"][sel], side[sel]
            monotonic_times(rows)
            self._sink(cap, int(inst)).append("trades", rows)
            n += sel.size
        return n

    def finish(self) -> ImportResult:
        """Return the result."""
        return self.result


def _price_events(e: npt.NDArray[np.void], px: I64, qty: I64) -> tuple[npt.NDArray[np.void], I64]:
    """Return level events of a price-keyed book (no MDPriceLevel), and their entries."""
    levels: dict[tuple[int, int], set[int]] = {}
    rows: list[tuple[int, int, int, int, int, int]] = []  # ts, px, qty, book, side, kind
    entry: list[int] = []
    for i in range(e.shape[0]):
        b, ts = int(e["instrument"][i]), int(e["ts"][i])
        if e["kind"][i] == E_CLEAR:
            levels.pop((b, 0), None)
            levels.pop((b, 1), None)
            rows.append((ts, 0, 0, b, BUY, L2_CLEAR))
            entry.append(i)
            continue
        s = int(e["side"][i])
        side = SELL if s == SIDE_OFFER else BUY
        have = levels.setdefault((b, s), set())
        action, p, q = int(e["action"][i]), int(px[i]), int(qty[i])
        if action == 3:  # DeleteThru: the whole side
            for lp in sorted(have):
                rows.append((ts, lp, 0, b, side, L2_SET))
                entry.append(i)
            have.clear()
            continue
        if action == 2 or q == 0:
            have.discard(p)
            q = 0
        else:
            have.add(p)
        rows.append((ts, p, q, b, side, L2_SET))
        entry.append(i)
    ev = np.zeros(len(rows), L2_EVENT_DTYPE)
    if rows:
        a = np.array(rows, np.int64)
        ev["ts"], ev["px"], ev["qty"] = a[:, 0], a[:, 1], a[:, 2]
        ev["book"], ev["side"], ev["kind"] = a[:, 3], a[:, 4], a[:, 5]
    return ev, np.array(entry, np.int64)


def _gaps(cap: MdCapture) -> list[tuple[str, int, int]]:
    """Return the capture's gaps: ``("message" | "packet", first, last)``."""
    out = [("message", a, b) for a, b in cap.message_seq.gaps]
    if cap.packet_seq is not None:
        out += [("packet", a, b) for a, b in cap.packet_seq.gaps]
    return out


def import_fast(
    files: list[Path],
    store: Path,
    *,
    templates: Path,
    tick_size: str,
    lot_size: str = "1",
    venue: str = "",
    symbols: dict[int, str] | None = None,
    framing: str = "none",
    reset: str = "none",
    depth: int = 10,
    channels: frozenset[str] | None = None,
    allow_gaps: bool = False,
    replace: bool = False,
    skip_bad_rows: bool = False,
    progress: Progress | None = None,
) -> tuple[ImportResult, FastStats]:
    """Import FAST market-data captures into ``store``, all or nothing (see :class:`Staging`).

    Raises
    ------
    engine.feeds.fast.mdimport.FastMdError
        The templates have no market-data messages, or a datagram does not decode.
    FastGapError
        A sequence gap, unless ``allow_gaps``.
    """
    ts = TemplateSet.from_file(templates)
    MdLayout.of(ts)  # a template set without market data fails before the store is touched
    with Staging(store, replace=replace) as staging:
        imp = FastImporter(
            staging,
            templates=ts,
            tick_size=tick_size,
            lot_size=lot_size,
            venue=venue,
            symbols=symbols,
            framing=framing,
            reset=reset,
            depth=depth,
            channels=channels,
            skip_bad_rows=skip_bad_rows,
        )
        for f in files:
            imp.import_file(f, allow_gaps=allow_gaps, progress=progress)
        return imp.finish(), imp.stats


__all__ = ["FastGapError", "FastImporter", "FastStats", "import_fast"]
