# SPDX-License-Identifier: MIT
"""CME MDP 3.0 captures (SBE over UDP, pcap/pcapng) into the tick store (issue 20).

``qwconsole import pcap FILE --protocol mdp3 --schema templates_FixBinary.xml``. The capture is
decoded with its schema (:func:`engine.feeds.sbe.mdp3.decode_capture`); A and B copies of a
packet count once (the first to arrive). Every instrument (SecurityID) with book entries
becomes an instrument-day named ``SECID<id>`` (or as ``--symbol ID=NAME`` says) with:

* ``l2``: the outright market-by-price book (MDIncrementalRefreshBook: New, Change, Delete,
  DeleteThru, DeleteFrom, Overlay, book reset; implied entries left out and counted) as level
  deltas, built by :func:`engine.feeds.sbe.book.build_mbp_books`;
* ``bbo``: the top of that book after each message that changed it;
* ``trades``: MDIncrementalRefreshTradeSummary entries, the aggressor side as CME gives it
  (0 when it gives none) and MDTradeEntryID as the trade id;
* ``mbo``, when the capture carries market by order (MDIncrementalRefreshOrderBook, or the
  order entries of the combined MDIncrementalRefreshBook 46): one row per order event in
  feed order, made by :func:`engine.feeds.sbe.mbo.mbo_events` (New an add, Delete a cancel
  of the rest, Change a modify, or a cancel then an add when the order lost its queue
  priority; a book reset a clear), ``qty`` the display quantity.

Times are each message's TransactTime (UTC ns). Prices (mantissa × 10^exponent of the schema)
must lie on ``--tick-size`` and sizes on ``--lot-size``: a row that does not is reported (file,
message, field, value, why) and, with ``--skip-bad-rows``, skipped. A sequence number missing
from every channel stops the import unless ``--allow-gaps`` (then each day's ``l2_gaps``
attribute lists them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from engine.feeds.sbe.book import book_template, build_mbp_books, first_arrivals
from engine.feeds.sbe.mbo import mbo_events
from engine.feeds.sbe.mdp3 import DecodedCapture, decode_capture
from engine.feeds.sbe.schema import Schema
from engine.feeds.sbe.schema_xml import load_schema
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
from engine.tickstore.schema import BBO_DTYPE, L2_DELTA_DTYPE, MBO_DTYPE, TRADE_DTYPE
from engine.types import BUY, L2_CLEAR, SELL

I64 = npt.NDArray[np.int64]
BOOL = npt.NDArray[np.bool_]


class Mdp3GapError(ValueError):
    """The capture misses packets on every channel (and gaps were not allowed)."""


@dataclass
class Mdp3Stats:
    """What the import saw besides the rows it wrote."""

    packets: int = 0
    messages: dict[str, int] = field(default_factory=dict)
    implied_entries: int = 0
    bad_levels: int = 0
    gaps: list[tuple[int, int]] = field(default_factory=list)
    issues: list[str] = field(default_factory=list)
    mbo_entries: int = 0  # market-by-order entries read
    mbo_skipped: dict[str, int] = field(default_factory=dict)  # entries left out, by reason


def merged_gaps(cap: DecodedCapture) -> list[tuple[int, int]]:
    """Return the sequence numbers missing from every channel, as ``(first, last)`` ranges."""
    seq = np.unique(cap.packets["seq"][cap.packets["seq"] >= 0])
    if seq.size < 2:
        return []
    jumps = np.flatnonzero(np.diff(seq) > 1)
    return [(int(seq[j]) + 1, int(seq[j + 1]) - 1) for j in jumps.tolist()]


class Mdp3Importer:
    """Turn one decoded capture into ``l2``, ``bbo`` and ``trades`` rows per SecurityID."""

    def __init__(
        self,
        staging: Staging,
        *,
        schema: Schema,
        tick_size: str,
        lot_size: str = "1",
        venue: str = "XCME",
        symbols: dict[int, str] | None = None,
        skip_bad_rows: bool = False,
    ) -> None:
        self.staging = staging
        self.schema = schema
        self.tick_size, self.lot_size, self.venue = tick_size, lot_size, venue
        self.symbols = symbols or {}
        self.px = Grid("tick size", tick_size)
        self.qty = Grid("lot size", lot_size)
        self.result = ImportResult()
        self.rejects = Rejects(skip_bad_rows, self.result)
        self.stats = Mdp3Stats()

    def _ticks(
        self, file: str, mantissa: I64, exponent: int, where: I64, column: str
    ) -> tuple[I64, BOOL]:
        """Return prices in ticks (negative for spreads) and where they are on the grid.

        Off-grid rows are reported (raised unless skipping).
        """
        shift = exponent + 9  # to the grid's 1e-9 units
        finer = None
        if shift >= 0:
            units = mantissa * 10**shift
        else:
            units, finer = np.divmod(mantissa, 10**-shift)

        def bad(i: int) -> None:
            self.rejects.bad(
                file,
                int(where[i]),
                column,
                f"{int(mantissa[i]) * 10.0**exponent:g}",
                f"is not a multiple of the tick size {self.tick_size}",
            )

        q, ok = grid_steps(units, self.px, bad)
        if finer is not None:  # digits finer than 1e-9: off any grid the store holds
            off = np.flatnonzero((finer != 0) & ok)
            for i in off[:1000].tolist():
                bad(i)
            ok[off] = False
        return q, ok

    def _lots(self, file: str, size: I64, where: I64, column: str) -> tuple[I64, BOOL]:
        """Return sizes in lots and where they are whole lots (the others reported)."""

        def bad(i: int) -> None:
            self.rejects.bad(
                file,
                int(where[i]),
                column,
                str(int(size[i])),
                f"is not a multiple of the lot size {self.lot_size}",
            )

        return grid_steps(size * 1_000_000_000, self.qty, bad)

    def import_file(
        self, path: Path, *, allow_gaps: bool = False, progress: Progress | None = None
    ) -> None:
        """Import one capture."""
        file = str(path)
        total = path.stat().st_size
        if progress is not None:
            progress(0, total, 0)
        cap = decode_capture(path, self.schema)
        st = self.stats
        st.packets += int(cap.packets.shape[0])
        for name, n in cap.counts().items():
            st.messages[name] = st.messages.get(name, 0) + n
        st.issues += [str(i) for i in cap.issues[:20]]
        gaps = merged_gaps(cap)
        st.gaps += gaps
        if gaps and not allow_gaps:
            missing = sum(b - a + 1 for a, b in gaps)
            shown = ", ".join(f"{a}-{b}" for a, b in gaps[:5])
            raise Mdp3GapError(
                f"{path}: {missing:,} packets missing from every channel (sequence numbers "
                f"{shown}{' ...' if len(gaps) > 5 else ''}); --allow-gaps imports it anyway "
                "and lists the gaps in each day's l2_gaps attribute"
            )
        if progress is not None:
            progress(total // 2, total, 0)
        written = self._book(file, cap) + self._trades(file, cap) + self._mbo(file, cap)
        if gaps:
            text = json.dumps(
                [{"first_seq": a, "last_seq": b, "missing": b - a + 1} for a, b in gaps]
            )
            for sym, day in self.result.days:
                sink = Sink(
                    self.staging,
                    self.result,
                    sym,
                    tick_size=self.tick_size,
                    lot_size=self.lot_size,
                    venue=self.venue,
                )
                sink.set_attr(day, GAPS_ATTR, text)
        if progress is not None:
            progress(total, total, written)

    def _sink(self, security_id: int) -> Sink:
        name = self.symbols.get(security_id, f"SECID{security_id}")
        return Sink(
            self.staging,
            self.result,
            name,
            tick_size=self.tick_size,
            lot_size=self.lot_size,
            venue=self.venue,
        )

    def _book(self, file: str, cap: DecodedCapture) -> int:
        if "MDIncrementalRefreshBook" not in cap.counts():
            return 0
        books = build_mbp_books(cap)
        self.stats.implied_entries += books.implied
        self.stats.bad_levels += books.bad_levels
        ev = books.events
        if not ev.shape[0]:
            return 0
        px_col = book_template(cap).groups["NoMDEntries"].column("MDEntryPx.mantissa")
        if px_col.exponent is None:
            raise ValueError("MDIncrementalRefreshBook: MDEntryPx has no exponent in the schema")
        exponent = int(px_col.exponent)
        book = ev["book"].astype(np.int64)
        mantissa = ev["px"].astype(np.int64) * books.ticks[book]
        where = books.event_index
        clear = ev["kind"] == L2_CLEAR
        px, px_ok = self._ticks(file, np.where(clear, 0, mantissa), exponent, where, "MDEntryPx")
        qty, qty_ok = self._lots(file, ev["qty"].astype(np.int64), where, "MDEntrySize")
        ok = px_ok & qty_ok
        n = 0
        touch = books.touch
        for b, sec in enumerate(books.security_ids.tolist()):
            sel = np.flatnonzero((book == b) & ok)
            if not sel.size:
                continue
            rows = np.zeros(sel.size, L2_DELTA_DTYPE)
            rows["ts"] = rows["ts_recv"] = ev["ts"][sel]
            rows["px"], rows["qty"] = px[sel], qty[sel]
            rows["side"], rows["kind"], rows["seq"] = ev["side"][sel], ev["kind"][sel], -1
            monotonic_times(rows)
            sink = self._sink(sec)
            sink.append("l2", rows)
            n += sel.size
            # The top after the last event of each message that changed it.
            last = np.append(where[sel][1:] != where[sel][:-1], True)
            t = touch[sel][last]
            changed = np.append(True, (t[1:] != t[:-1]).any(axis=1))
            keep = np.flatnonzero(last)[changed]
            top = touch[sel][keep]
            scale = books.ticks[b]
            bbo = np.zeros(keep.size, BBO_DTYPE)
            bbo["ts"] = bbo["ts_recv"] = ev["ts"][sel][keep]
            at = where[sel][keep]
            for col, j in (("bid_px", 0), ("ask_px", 2)):
                ticks, _on_grid = self._ticks(file, top[:, j] * scale, exponent, at, col)
                bbo[col] = np.where(top[:, j + 1] > 0, ticks, 0)
            bbo["bid_qty"], bbo["ask_qty"], bbo["seq"] = top[:, 1], top[:, 3], -1
            monotonic_times(bbo)
            sink.append("bbo", bbo)
            n += keep.size
        return n

    def _trades(self, file: str, cap: DecodedCapture) -> int:
        name = "MDIncrementalRefreshTradeSummary"
        if name not in cap.counts():
            return 0
        t = cap.template(name)
        g = t.groups["NoMDEntries"]
        keep = first_arrivals(cap)
        e = g.rows[keep[t.rows["_packet"][g.rows["_msg"]]]]
        if not e.shape[0]:
            return 0
        exponent = self._exponent(cap, name)
        where = t.rows["_index"][e["_msg"]].astype(np.int64)
        px, px_ok = self._ticks(
            file, e["MDEntryPx.mantissa"].astype(np.int64), exponent, where, "MDEntryPx"
        )
        qty, qty_ok = self._lots(file, e["MDEntrySize"].astype(np.int64), where, "MDEntrySize")
        ts = t.rows["TransactTime"][e["_msg"]].astype(np.int64)
        null_id = g.column("MDTradeEntryID").null
        trade_id = np.where(e["MDTradeEntryID"] == null_id, -1, e["MDTradeEntryID"]).astype(
            np.int64
        )
        side = np.select([e["AggressorSide"] == 1, e["AggressorSide"] == 2], [BUY, SELL], 0)
        ok = px_ok & qty_ok
        sec = e["SecurityID"].astype(np.int64)
        n = 0
        for s in np.unique(sec[ok]).tolist():
            sel = np.flatnonzero(ok & (sec == s))
            rows = np.zeros(sel.size, TRADE_DTYPE)
            rows["ts"] = rows["ts_recv"] = ts[sel]
            rows["px"], rows["qty"], rows["trade_id"], rows["side"] = (
                px[sel], qty[sel], trade_id[sel], side[sel],
            )  # fmt: skip
            monotonic_times(rows)
            self._sink(int(s)).append("trades", rows)
            n += sel.size
        return n

    def _mbo(self, file: str, cap: DecodedCapture) -> int:
        ev = mbo_events(cap)
        st = self.stats
        st.mbo_entries += ev.entries
        for why, k in ev.skipped.items():
            st.mbo_skipped[why] = st.mbo_skipped.get(why, 0) + k
        rows = ev.events
        if not rows.shape[0]:
            return 0
        where = ev.event_index
        px, px_ok = self._ticks(file, ev.mantissa, ev.exponent, where, "MDEntryPx")
        qty, qty_ok = self._lots(file, rows["qty"].astype(np.int64), where, "MDDisplayQty")
        ok = px_ok & qty_ok
        n = 0
        for b, sec in enumerate(ev.security_ids.tolist()):
            sel = np.flatnonzero((ev.book == b) & ok)
            if not sel.size:
                continue
            out = np.zeros(sel.size, MBO_DTYPE)
            out["ts"] = out["ts_recv"] = rows["ts"][sel]
            out["order_id"], out["px"], out["qty"] = rows["order_id"][sel], px[sel], qty[sel]
            out["side"], out["action"] = rows["side"][sel], rows["action"][sel]
            monotonic_times(out)
            self._sink(sec).append("mbo", out)
            n += sel.size
        return n

    @staticmethod
    def _exponent(cap: DecodedCapture, template: str) -> int:
        col = cap.template(template).groups["NoMDEntries"].column("MDEntryPx.mantissa")
        if col.exponent is None:
            raise ValueError(f"{template}: MDEntryPx has no exponent in the schema")
        return int(col.exponent)

    def finish(self) -> ImportResult:
        """Return the result."""
        return self.result


def parse_symbols(pairs: list[str]) -> dict[int, str]:
    """Return ``ID=NAME`` pairs as a SecurityID -> name map (ValueError naming a bad pair)."""
    out: dict[int, str] = {}
    for p in pairs:
        sid, sep, name = p.partition("=")
        if not sep or not sid.strip().isdigit() or not name.strip():
            raise ValueError(f"--symbol {p!r}: give SECURITYID=NAME (e.g. 174969=ESZ6)")
        out[int(sid)] = name.strip()
    return out


def import_mdp3(
    files: list[Path],
    store: Path,
    *,
    schema: Path,
    tick_size: str,
    lot_size: str = "1",
    venue: str = "XCME",
    symbols: dict[int, str] | None = None,
    allow_gaps: bool = False,
    replace: bool = False,
    skip_bad_rows: bool = False,
    progress: Progress | None = None,
) -> tuple[ImportResult, Mdp3Stats]:
    """Import MDP 3.0 captures into ``store``, all or nothing (see :class:`Staging`)."""
    sch = load_schema(schema)
    with Staging(store, replace=replace) as staging:
        imp = Mdp3Importer(
            staging,
            schema=sch,
            tick_size=tick_size,
            lot_size=lot_size,
            venue=venue,
            symbols=symbols,
            skip_bad_rows=skip_bad_rows,
        )
        for f in files:
            imp.import_file(f, allow_gaps=allow_gaps, progress=progress)
        return imp.finish(), imp.stats


__all__ = ["Mdp3GapError", "Mdp3Importer", "Mdp3Stats", "import_mdp3", "merged_gaps"]
