# SPDX-License-Identifier: MIT
"""Nasdaq TotalView-ITCH 5.0 captures (MoldUDP64 over UDP, pcap/pcapng) into the tick store.

``qwconsole import pcap FILE --protocol itch`` (issue 20). Every stock of the capture becomes an
instrument-day of market-by-order rows (``mbo``) and trades (``trades``), named by the Stock
Directory <R> message (``LOCATE<n>`` for a stock whose directory message the capture lacks):

========  ==============================================================================
ITCH      rows
========  ==============================================================================
A, F      ``mbo`` add: the order, its side, price and shares
E         ``mbo`` execute (at the order's price) and a trade (aggressor: the other side)
C         ``mbo`` execute (at the order's price) and, when printable, a trade at its price
X         ``mbo`` cancel of the shares cancelled
D         ``mbo`` cancel of the rest (``qty`` 0 removes the order)
U         ``mbo`` cancel of the old order, add of the new one (same side and stock)
P         a trade (a hidden order executed; aggressor: the other side)
Q         a trade of the cross (no side), when it crossed shares
========  ==============================================================================

ITCH times are nanoseconds since midnight, Eastern time, of the trading day (``--day``, or
the day the capture was taken, in New York); the store keeps UTC. Prices (4 implied decimals)
must lie on ``--tick-size`` and shares on ``--lot-size``; a row that does not is reported
(file, message sequence, field, value, why) and, with ``--skip-bad-rows``, skipped. An order
event whose order the capture never added (it started inside the session) is counted, not
stored: a book replays only what it can place.

Packets go through MoldUDP64 sequence tracking: a gap stops the import (all or nothing) unless
``--allow-gaps``, which stores the missing ranges in each day's ``l2_gaps`` attribute. A
capture whose sequence numbers are all 0 (some samples are stripped so) is decoded as is.
"""

from __future__ import annotations

import json
import zoneinfo
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt

from engine.feeds.itch.decode import Decoded
from engine.feeds.itch.moldudp64 import MoldReport, MoldUDP64Stream, decode_packets
from engine.feeds.pcap import UdpCapture
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
from engine.tickstore.schema import MBO_DTYPE, TRADE_DTYPE
from engine.types import BUY, L3_ADD, L3_CANCEL, L3_EXECUTE, SELL

I64 = npt.NDArray[np.int64]
BOOL = npt.NDArray[np.bool_]

NEW_YORK = zoneinfo.ZoneInfo("America/New_York")
#: ITCH prices have 4 implied decimals: one unit is 1e5 of the tick grid's 1e-9 units.
_ITCH_PRICE_UNITS = 100_000


class ItchGapError(ValueError):
    """The capture misses messages (and gaps were not allowed)."""


@dataclass
class ItchStats:
    """What the import saw besides the rows it wrote."""

    packets: int = 0
    messages: dict[str, int] = field(default_factory=dict)
    unknown_orders: int = 0  # order events of orders the capture never added
    report: MoldReport | None = None  # sequence tracking (None: the capture had no numbers)
    day: str = ""


def trading_day_midnight_ns(day: date) -> int:
    """Return midnight of ``day`` in New York as ns since the epoch (UTC)."""
    midnight = datetime(day.year, day.month, day.day, tzinfo=NEW_YORK)
    return int(midnight.timestamp()) * 1_000_000_000


def _day_of_capture(first_ts_ns: int) -> date:
    return datetime.fromtimestamp(first_ts_ns / 1e9, NEW_YORK).date()


def _decode(path: Path, allow_gaps: bool, stats: ItchStats) -> tuple[Decoded, int]:
    capture = UdpCapture(path)
    datagrams = list(capture)
    if not datagrams:
        raise ValueError(f"{path}: no UDP datagrams in the capture ({dict(capture.skipped)})")
    payloads = [d.payload for d in datagrams]
    stats.packets = len(payloads)
    first_ts = datagrams[0].ts_ns
    if all(p[10:18] == bytes(8) for p in payloads if len(p) >= 20):
        return decode_packets(payloads, source=str(path)), first_ts
    stream = MoldUDP64Stream(expected=None)
    batch = stream.feed(payloads, source=str(path))
    report = stats.report = stream.report()
    if report.gaps and not allow_gaps:
        shown = ", ".join(f"{a}-{b}" for a, b in report.gaps[:5])
        raise ItchGapError(
            f"{path}: {report.missing:,} messages missing from the capture (sequence numbers "
            f"{shown}{' ...' if len(report.gaps) > 5 else ''}); --allow-gaps imports it anyway "
            "and lists the gaps in each day's l2_gaps attribute"
        )
    return batch.decoded, first_ts


class ItchImporter:
    """Turn decoded ITCH messages into ``mbo`` and ``trades`` rows, per stock."""

    def __init__(
        self,
        staging: Staging,
        *,
        tick_size: str,
        lot_size: str = "1",
        venue: str = "XNAS",
        skip_bad_rows: bool = False,
    ) -> None:
        self.staging = staging
        self.tick_size, self.lot_size, self.venue = tick_size, lot_size, venue
        self.px = Grid("tick size", tick_size)
        self.qty = Grid("lot size", lot_size)
        self.result = ImportResult()
        self.rejects = Rejects(skip_bad_rows, self.result)
        self.stats = ItchStats()

    # ------------------------------------------------------------------ checks
    def _ticks(self, file: str, rows: npt.NDArray[np.void], column: str) -> tuple[I64, BOOL]:
        """Return prices in ticks and where they are on the grid (the others reported)."""

        def bad(i: int) -> None:
            self.rejects.bad(
                file,
                int(rows["seq"][i]),
                column,
                f"{int(rows[column][i]) / 10_000:.4f}",
                f"is not a multiple of the tick size {self.tick_size}",
            )

        return grid_steps(rows[column].astype(np.int64) * _ITCH_PRICE_UNITS, self.px, bad)

    def _lots(self, file: str, rows: npt.NDArray[np.void], column: str) -> tuple[I64, BOOL]:
        """Return shares in lots and where they are whole lots (the others reported)."""

        def bad(i: int) -> None:
            self.rejects.bad(
                file,
                int(rows["seq"][i]),
                column,
                str(int(rows[column][i])),
                f"is not a multiple of the lot size {self.lot_size}",
            )

        return grid_steps(rows[column].astype(np.int64) * 1_000_000_000, self.qty, bad)

    # ------------------------------------------------------------------ import
    def import_file(
        self,
        path: Path,
        *,
        day: date | None = None,
        allow_gaps: bool = False,
        progress: Progress | None = None,
    ) -> None:
        """Import one capture."""
        file = str(path)
        total = path.stat().st_size
        if progress is not None:
            progress(0, total, 0)
        dec, first_ts = _decode(path, allow_gaps, self.stats)
        self.stats.messages = dec.counts()
        day = day or _day_of_capture(first_ts)
        self.stats.day = day.isoformat()
        midnight = trading_day_midnight_ns(day)
        names = self._names(dec)
        mbo, trades = self._rows(file, dec, midnight)
        if progress is not None:
            progress(total // 2, total, int(mbo.shape[0] + trades.shape[0]))
        self._write(names, mbo, trades)
        if progress is not None:
            progress(total, total, int(mbo.shape[0] + trades.shape[0]))

    @staticmethod
    def _names(dec: Decoded) -> dict[int, str]:
        r = dec["R"]
        return {
            int(loc): sym.decode("latin-1").strip()
            for loc, sym in zip(r["stock_locate"].tolist(), r["stock"].tolist(), strict=True)
        }

    def _rows(
        self, file: str, dec: Decoded, midnight: int
    ) -> tuple[npt.NDArray[np.void], npt.NDArray[np.void]]:
        """Return every stock's ``mbo`` and ``trades`` rows with a ``locate`` and ``seq``."""
        mbo_parts: list[npt.NDArray[np.void]] = []
        trade_parts: list[npt.NDArray[np.void]] = []
        mbo_t = np.dtype([*MBO_DTYPE.descr, ("locate", "i8"), ("seq", "i8")])
        trade_t = np.dtype([*TRADE_DTYPE.descr, ("locate", "i8"), ("seq", "i8")])

        def mbo(
            rows: npt.NDArray[np.void],
            ref: I64,
            px: I64,
            qty: I64,
            side: I64,
            action: int,
            locate: I64,
        ) -> None:
            out = np.zeros(rows.shape[0], mbo_t)
            out["ts"] = out["ts_recv"] = rows["timestamp"] + midnight
            out["order_id"], out["px"], out["qty"], out["side"] = ref, px, qty, side
            out["action"], out["locate"], out["seq"] = action, locate, rows["seq"]
            mbo_parts.append(out)

        def trade(
            rows: npt.NDArray[np.void], px: I64, qty: I64, match: I64, side: I64, locate: I64
        ) -> None:
            out = np.zeros(rows.shape[0], trade_t)
            out["ts"] = out["ts_recv"] = rows["timestamp"] + midnight
            out["px"], out["qty"], out["trade_id"], out["side"] = px, qty, match, side
            out["locate"], out["seq"] = locate, rows["seq"]
            trade_parts.append(out)

        # The orders: added by A and F, re-added under a new number by U (same side, stock).
        adds = np.concatenate([dec["A"][list(_ADD_FIELDS)], dec["F"][list(_ADD_FIELDS)]])
        adds = adds[np.argsort(adds["seq"], kind="stable")]
        a_px, a_ok = self._ticks(file, adds, "price")
        a_qty, q_ok = self._lots(file, adds, "shares")
        keep = a_ok & q_ok
        adds, a_px, a_qty = adds[keep], a_px[keep], a_qty[keep]
        a_side = np.where(adds["buy_sell_indicator"] == b"B", BUY, SELL).astype(np.int64)
        a_ref = adds["order_reference_number"].astype(np.int64)
        a_loc = adds["stock_locate"].astype(np.int64)
        mbo(adds, a_ref, a_px, a_qty, a_side, L3_ADD, a_loc)
        book = _Orders(a_ref, a_px, a_side, a_loc)

        u = dec["U"]
        u = u[np.argsort(u["seq"], kind="stable")]
        if u.shape[0]:
            u_px, p_ok = self._ticks(file, u, "price")
            u_qty, s_ok = self._lots(file, u, "shares")
            keep = p_ok & s_ok
            u, u_px, u_qty = u[keep], u_px[keep], u_qty[keep]
            old = u["original_order_reference_number"].astype(np.int64)
            new = u["new_order_reference_number"].astype(np.int64)
            o_px, o_side, o_loc, known = book.chain(old, new, u_px)
            self.stats.unknown_orders += int((~known).sum())
            uk = u[known]
            mbo(
                uk,
                old[known],
                o_px[known],
                np.zeros(int(known.sum()), np.int64),
                o_side[known],
                L3_CANCEL,
                o_loc[known],
            )
            mbo(uk, new[known], u_px[known], u_qty[known], o_side[known], L3_ADD, o_loc[known])

        for t, qty_field, action in (
            ("E", "executed_shares", L3_EXECUTE),
            ("C", "executed_shares", L3_EXECUTE),
            ("X", "cancelled_shares", L3_CANCEL),
            ("D", "", L3_CANCEL),
        ):
            rows = dec[t]
            if not rows.shape[0]:
                continue
            ref = rows["order_reference_number"].astype(np.int64)
            px, side, loc, known = book.lookup(ref)
            self.stats.unknown_orders += int((~known).sum())
            rows, ref, px, side, loc = rows[known], ref[known], px[known], side[known], loc[known]
            if qty_field:
                qty, ok = self._lots(file, rows, qty_field)
            else:
                qty, ok = np.zeros(rows.shape[0], np.int64), np.ones(rows.shape[0], bool)
            rows, ref, px, side, loc, qty = rows[ok], ref[ok], px[ok], side[ok], loc[ok], qty[ok]
            mbo(rows, ref, px, qty, side, action, loc)
            if t == "E":
                trade(rows, px, qty, rows["match_number"].astype(np.int64), -side, loc)
            elif t == "C":
                printable = rows["printable"] == b"Y"
                pr = rows[printable]
                t_px, ok = self._ticks(file, pr, "execution_price")
                sel = np.flatnonzero(printable)[ok]
                trade(
                    rows[sel],
                    t_px[ok],
                    qty[sel],
                    rows["match_number"][sel].astype(np.int64),
                    -side[sel],
                    loc[sel],
                )

        p = dec["P"]
        if p.shape[0]:
            p_px, p_ok = self._ticks(file, p, "price")
            p_qty, s_ok = self._lots(file, p, "shares")
            ok = p_ok & s_ok
            p_side = np.where(p["buy_sell_indicator"] == b"B", SELL, BUY).astype(np.int64)
            trade(
                p[ok],
                p_px[ok],
                p_qty[ok],
                p["match_number"][ok].astype(np.int64),
                p_side[ok],
                p["stock_locate"][ok].astype(np.int64),
            )
        q = dec["Q"]
        q = q[q["shares"] > 0]
        if q.shape[0]:
            q_px, p_ok = self._ticks(file, q, "cross_price")
            q_qty, s_ok = self._lots(file, q, "shares")
            ok = p_ok & s_ok
            no_side = np.zeros(int(ok.sum()), np.int64)
            trade(
                q[ok],
                q_px[ok],
                q_qty[ok],
                q["match_number"][ok].astype(np.int64),
                no_side,
                q["stock_locate"][ok].astype(np.int64),
            )

        mbo_all = np.concatenate(mbo_parts) if mbo_parts else np.zeros(0, mbo_t)
        trades_all = np.concatenate(trade_parts) if trade_parts else np.zeros(0, trade_t)
        # Stream order: by sequence, a U's cancel before its add (stable sort keeps it so).
        mbo_all = mbo_all[np.lexsort((mbo_all["seq"], mbo_all["locate"]))]
        trades_all = trades_all[np.lexsort((trades_all["seq"], trades_all["locate"]))]
        return mbo_all, trades_all

    def _write(
        self, names: dict[int, str], mbo: npt.NDArray[np.void], trades: npt.NDArray[np.void]
    ) -> None:
        report = self.stats.report
        gaps = (
            []
            if report is None
            else [{"first_seq": a, "last_seq": b, "missing": b - a + 1} for a, b in report.gaps]
        )
        for loc in np.union1d(np.unique(mbo["locate"]), np.unique(trades["locate"])).tolist():
            name = names.get(loc, f"LOCATE{loc}")
            sink = Sink(
                self.staging,
                self.result,
                name,
                tick_size=self.tick_size,
                lot_size=self.lot_size,
                venue=self.venue,
            )
            for kind, rows, dtype in (("mbo", mbo, MBO_DTYPE), ("trades", trades, TRADE_DTYPE)):
                part = rows[rows["locate"] == loc]
                if part.shape[0]:
                    out = np.zeros(part.shape[0], dtype)
                    for f in dtype.names or ():
                        out[f] = part[f]
                    monotonic_times(out)
                    sink.append(kind, out)
            if gaps:
                for _sym, day in [d for d in self.result.days if d[0] == name]:
                    sink.set_attr(day, GAPS_ATTR, json.dumps(gaps))

    def finish(self) -> ImportResult:
        """Return the result."""
        return self.result


_ADD_FIELDS = (
    "seq",
    "timestamp",
    "stock_locate",
    "order_reference_number",
    "buy_sell_indicator",
    "shares",
    "price",
)


class _Orders:
    """Price, side and stock of every order the capture added, by order reference number."""

    def __init__(self, ref: I64, px: I64, side: I64, loc: I64) -> None:
        self._set(ref, px, side, loc)

    def _set(self, ref: I64, px: I64, side: I64, loc: I64) -> None:
        order = np.argsort(ref, kind="stable")
        self.ref, self.px = ref[order], px[order]
        self.side, self.loc = side[order], loc[order]

    def lookup(self, refs: I64) -> tuple[I64, I64, I64, npt.NDArray[np.bool_]]:
        """Return price, side, stock of ``refs`` and which of them are known."""
        i = np.searchsorted(self.ref, refs)
        i = np.minimum(i, max(0, self.ref.shape[0] - 1))
        known = (self.ref[i] == refs) if self.ref.shape[0] else np.zeros(refs.shape[0], bool)
        if not self.ref.shape[0]:
            z = np.zeros(refs.shape[0], np.int64)
            return z, z, z, known
        return self.px[i], self.side[i], self.loc[i], known

    def chain(self, old: I64, new: I64, new_px: I64) -> tuple[I64, I64, I64, npt.NDArray[np.bool_]]:
        """Follow replaces in order: each new number takes the old one's side and stock.

        Returns the old orders' price, side, stock and which were known; the new orders are
        added to the table (a later event may name them).
        """
        n = old.shape[0]
        o_px, o_side, o_loc = (np.zeros(n, np.int64) for _ in range(3))
        known = np.zeros(n, bool)
        extra: dict[int, tuple[int, int, int]] = {}
        px_l, side_l, loc_l, known_l = self.lookup(old)
        for j, (o, nw, npx) in enumerate(
            zip(old.tolist(), new.tolist(), new_px.tolist(), strict=True)
        ):
            hit = extra.get(o)
            if hit is None and known_l[j]:
                hit = (int(px_l[j]), int(side_l[j]), int(loc_l[j]))
            if hit is None:
                continue
            known[j] = True
            o_px[j], o_side[j], o_loc[j] = hit
            extra[nw] = (npx, hit[1], hit[2])
        if extra:
            keys = np.fromiter(extra, np.int64, len(extra))
            vals = np.array(list(extra.values()), np.int64).reshape(-1, 3)
            self._set(
                np.concatenate([self.ref, keys]),
                np.concatenate([self.px, vals[:, 0]]),
                np.concatenate([self.side, vals[:, 1]]),
                np.concatenate([self.loc, vals[:, 2]]),
            )
        return o_px, o_side, o_loc, known


def import_itch(
    files: list[Path],
    store: Path,
    *,
    tick_size: str,
    lot_size: str = "1",
    venue: str = "XNAS",
    day: date | None = None,
    allow_gaps: bool = False,
    replace: bool = False,
    skip_bad_rows: bool = False,
    progress: Progress | None = None,
) -> tuple[ImportResult, ItchStats]:
    """Import ITCH captures into ``store``, all or nothing (see :class:`Staging`)."""
    with Staging(store, replace=replace) as staging:
        imp = ItchImporter(
            staging,
            tick_size=tick_size,
            lot_size=lot_size,
            venue=venue,
            skip_bad_rows=skip_bad_rows,
        )
        for f in files:
            imp.import_file(f, day=day, allow_gaps=allow_gaps, progress=progress)
        return imp.finish(), imp.stats


def parse_day(text: str) -> date:
    """Return ``YYYYMMDD`` (or ``YYYY-MM-DD``) as a date (ValueError naming the text)."""
    try:
        return date.fromisoformat(f"{text[:4]}-{text[4:6]}-{text[6:]}" if "-" not in text else text)
    except ValueError:
        raise ValueError(f"--day {text!r}: expected YYYYMMDD") from None


__all__ = ["ItchGapError", "ItchImporter", "ItchStats", "import_itch", "parse_day"]
