# SPDX-License-Identifier: MIT
"""Import Binance market-data recordings: depth snapshot + diffs, ``bookTicker`` and trades.

Input: text (or gzip) with one message per line, ``<receive time, ns> <JSON>``, the JSON being
a combined-stream envelope ``{"stream": ..., "data": ...}`` of ``<sym>@depth[@100ms|@0ms]``,
``<sym>@bookTicker`` or ``<sym>@trade``, or a REST depth snapshot
``{"lastUpdateId": ..., "bids": [...], "asks": [...]}`` (the format of hftbacktest's collector
and of most home-made recorders).

Book sequencing follows Binance's documented rules for a local order book, which differ
between spot and USD-M futures (``docs/tickstore.md`` lists them with their tests). With
snapshot ``lastUpdateId`` L, first/last update ids ``U``/``u`` and, on futures, ``pu`` (the
previous event's ``u``):

* diffs arriving before the snapshot are kept; once it is in, diffs it already covers are
  discarded (``u <= L`` spot, ``u < L`` futures): that is normal, counted as *covered*;
* the first diff applied must bridge the snapshot: ``U <= L + 1 <= u`` on spot,
  ``U <= L <= u`` on futures (``u == L`` included), or ``pu == L`` (nothing missing);
* after it, every diff must follow the previous one: ``U == previous u + 1`` on spot,
  ``pu == previous u`` on futures. A repeat of the diff just applied is skipped (counted).

Anything else is a *gap*: updates the store would never see. A gap fails the import
(:class:`SequenceGapError`, one line naming the file, line, update ids and why) unless
``allow_gaps``; then diffs are dropped until the next snapshot, and each gap is listed in
:attr:`BinanceStats.gap_list` and in the day's ``l2_gaps`` attribute. Which rules apply is
told by the diffs themselves (futures diffs carry ``pu``): a recording that does not match
``futures`` is refused.

What is stored: the snapshot becomes an ``L2_CLEAR`` row and one ``L2_SET`` row per level, then
each applied diff one ``L2_SET`` row per level (``qty`` 0 deletes). ``seq`` holds the update
id ``u`` (the snapshot's rows hold L), so a reader can line the book up with ``bookTicker``
quotes, whose ``seq`` is their own ``u``. Every UTC day starts with a full book (a CLEAR and
the levels held at midnight) so that each day replays on its own. Every ``snapshot_interval_ms``
of event time (1 s) the top ``snapshot_levels`` (20) levels go to ``l2_snap``.

Times: ``ts`` is Binance's event time ``E`` (trades: trade time ``T``), ``ts_recv`` the
recorder's receive time. Spot ``bookTicker`` messages carry no event time, so their ``ts`` is
the receive time. A time that goes backwards in a stream is raised to the previous one (the
stream's order is the venue's order); such rows are counted.
"""

from __future__ import annotations

import gzip
import heapq
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

import numpy as np

from engine.tickstore.days import DAY_NS, day_of
from engine.tickstore.importing import (
    GAPS_ATTR,
    Grid,
    ImportResult,
    Progress,
    Rejects,
    Sink,
    Staging,
    refuse_other,
)
from engine.tickstore.schema import BBO_DTYPE, L2_DELTA_DTYPE, TRADE_DTYPE, l2_snapshot_dtype
from engine.types import BUY, L2_CLEAR, L2_SET, SELL

#: Rows buffered per kind before they go to the store.
BATCH_ROWS = 65536


@dataclass(frozen=True, slots=True)
class SequenceGap:
    """One break in the depth stream: where, between which update ids, why, what was lost."""

    file: str
    line: int
    ts: int  # event time of the diff that broke the sequence (ns)
    after: int  # last update id in the book (the snapshot's L before the first diff)
    first: int  # U of the diff
    last: int  # u of the diff
    prev: int  # pu of the diff (futures), -1 on spot
    reason: str

    def __str__(self) -> str:
        pu = f" pu={self.prev}" if self.prev >= 0 else ""
        ids = f"U={self.first} u={self.last}{pu}"
        return f"{self.file}:{self.line}: depth diff {ids}: {self.reason}"

    def as_dict(self, until: int = 0) -> dict[str, object]:
        """Return the gap as plain values (the ``l2_gaps`` attribute holds a JSON list).

        ``until`` is when the book is whole again (the next snapshot; 0: never in the input).
        """
        return {
            "ts": self.ts, "until": until, "after": self.after, "U": self.first,
            "u": self.last, "pu": self.prev, "reason": self.reason, "file": self.file,
            "line": self.line,
        }  # fmt: skip


class SequenceGapError(ValueError):
    """A depth diff does not follow the book: the import stops (see ``allow_gaps``)."""

    def __init__(self, gap: SequenceGap) -> None:
        super().__init__(f"{gap}; the book would miss updates (--allow-gaps imports it anyway)")
        self.gap = gap


@dataclass
class BinanceStats:
    """Sequencing counts of one import."""

    snapshots: int = 0
    diffs_applied: int = 0
    diffs_covered: int = 0  # before a snapshot and already in it: normal, nothing lost
    duplicates: int = 0  # a repeat of the diff just applied: nothing lost
    diffs_dropped: int = 0  # not applied because of a gap (or no snapshot at all)
    gaps: int = 0
    times_raised: int = 0  # rows whose time went backwards and was raised
    gap_list: list[SequenceGap] = field(default_factory=list)


class _Buffer:
    """Rows of one kind, clamped to non-decreasing ``ts`` and flushed in batches."""

    def __init__(self, sink: Sink, kind: str, dtype: np.dtype[np.void], stats: BinanceStats):
        self.sink, self.kind, self.dtype, self.stats = sink, kind, dtype, stats
        self.rows: list[tuple[Any, ...]] = []
        self.last_ts = -(2**63)

    def ts(self, t: int) -> int:
        """Return ``t`` raised to the last ``ts`` of this kind (counted when raised)."""
        if t < self.last_ts:
            self.stats.times_raised += 1
            return self.last_ts
        self.last_ts = t
        return t

    def add(self, row: tuple[Any, ...]) -> None:
        self.rows.append(row)
        if len(self.rows) >= BATCH_ROWS:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            self.sink.append(self.kind, np.array(self.rows, self.dtype))
            self.rows = []


class _Book:
    """The importer's own copy of the book, for day starts and gap recovery."""

    def __init__(self) -> None:
        self.bids: dict[int, int] = {}
        self.asks: dict[int, int] = {}

    def set(self, side: int, px: int, qty: int) -> None:
        levels = self.bids if side == BUY else self.asks
        if qty:
            levels[px] = qty
        else:
            levels.pop(px, None)


class BinanceImporter:
    """Import Binance recordings of one instrument into a :class:`Staging` store.

    Parameters
    ----------
    staging : Staging
        Where the rows go.
    symbol : str
        Name stored (messages of other symbols are bad rows).
    tick_size, lot_size : str
        Price and quantity steps, decimal text (e.g. ``"0.01"`` and ``"0.00000001"``).
    futures : bool
        USD-M futures sequencing (``pu``) instead of spot's.
    skip_bad_rows : bool
        List bad lines in the result instead of stopping at the first.
    allow_gaps : bool
        Import a depth stream with gaps (listed in :attr:`stats` and the days' ``l2_gaps``
        attribute) instead of stopping at the first with :class:`SequenceGapError`.
    """

    def __init__(
        self,
        staging: Staging,
        symbol: str,
        *,
        tick_size: str,
        lot_size: str,
        futures: bool = False,
        venue: str = "BINANCE",
        skip_bad_rows: bool = False,
        allow_gaps: bool = False,
        snapshot_levels: int = 20,
        snapshot_interval_ms: int = 1000,
    ) -> None:
        if not 0 <= snapshot_levels <= 1000:
            raise ValueError(f"snapshot_levels: must be in 0..1000, got {snapshot_levels}")
        self.result = ImportResult()
        self.stats = BinanceStats()
        self.symbol = symbol
        self.futures = futures
        self.allow_gaps = allow_gaps
        self.px = Grid("tick size", tick_size)
        self.qty = Grid("lot size", lot_size)
        self.rejects = Rejects(skip_bad_rows, self.result)
        self.sink = Sink(
            staging,
            self.result,
            symbol,
            tick_size=tick_size,
            lot_size=lot_size,
            venue=venue,
            n_levels=snapshot_levels,
        )
        self.snapshot_levels = snapshot_levels
        self.snapshot_interval_ns = snapshot_interval_ms * 1_000_000
        self._next_snap = 0
        self.snaps = _Buffer(
            self.sink, "l2_snap", l2_snapshot_dtype(max(1, snapshot_levels)), self.stats
        )
        self.l2 = _Buffer(self.sink, "l2", L2_DELTA_DTYPE, self.stats)
        self.bbo = _Buffer(self.sink, "bbo", BBO_DTYPE, self.stats)
        self.trades = _Buffer(self.sink, "trades", TRADE_DTYPE, self.stats)
        self.book = _Book()
        self._synced = False  # a snapshot is in and the diffs follow it
        self._bridged = False  # the first diff after the snapshot has been applied
        self._last_u = -1
        self._snapshot_id = -1
        self._last_diff: dict[str, Any] | None = None  # the diff applied last (duplicates)
        self._after_gap = False  # diffs not applied until the next bridge are dropped
        self._gap_until: list[int] = []  # when each gap's book was whole again (0: never)
        self._pending: list[tuple[int, dict[str, Any], str, tuple[str, int]]] = []
        self._l2_day = -1
        self._where = ("", 0)

    # ------------------------------------------------------------------ input
    def import_file(self, path: Path, progress: Progress | None = None) -> None:
        """Import one recording (``.gz`` or plain text)."""
        refuse_other(path, ("recording",))
        total = path.stat().st_size
        line_no = 0
        with path.open("rb") as raw:
            fh: IO[bytes] = (
                cast(IO[bytes], gzip.GzipFile(fileobj=raw)) if path.suffix == ".gz" else raw
            )
            try:
                for line_no, line in enumerate(fh, 1):
                    self._where = (str(path), line_no)
                    self._line(line)
                    if progress is not None and line_no % 4096 == 0:
                        progress(raw.tell(), total, line_no)
            except EOFError:
                raise ValueError(
                    f"{path}:{line_no + 1}: the gzip data ends early (truncated file)"
                ) from None
            except (gzip.BadGzipFile, zlib.error) as e:
                raise ValueError(f"{path}:{line_no + 1}: not gzip data ({e})") from None
        if progress is not None:
            progress(total, total, line_no)  # lines read: rows are counted when written

    def finish(self) -> ImportResult:
        """Write what is buffered; return the result."""
        if self._pending:
            _recv, data, _sym, (file, line) = self._pending[0]
            if not self.stats.snapshots:
                self._gap(
                    data,
                    file,
                    line,
                    -1,
                    f"no depth snapshot in the input: {len(self._pending)} diffs cannot be applied",
                )
            self.stats.diffs_dropped += len(self._pending)  # after a gap, never resynced
            self._pending = []
        for b in (self.l2, self.bbo, self.trades, self.snaps):
            b.flush()
        self._write_gaps()
        return self.result

    def _gap(self, data: dict[str, Any], file: str, line: int, after: int, reason: str) -> None:
        """Record a gap; raise :class:`SequenceGapError` unless gaps are allowed."""
        gap = SequenceGap(
            file,
            line,
            int(data.get("E", 0)) * 1_000_000,
            after,
            int(data["U"]),
            int(data["u"]),
            int(data.get("pu", -1)),
            reason,
        )
        if not self.allow_gaps:
            raise SequenceGapError(gap)
        self.stats.gaps += 1
        self.stats.gap_list.append(gap)
        self._gap_until.append(0)

    def _write_gaps(self) -> None:
        """Put each gap in its UTC day's ``l2_gaps`` attribute (JSON list)."""
        by_day: dict[str, list[dict[str, object]]] = {}
        for g, until in zip(self.stats.gap_list, self._gap_until, strict=True):
            ts = g.ts or max(self.l2.last_ts, self.bbo.last_ts, self.trades.last_ts)
            if ts > 0:
                by_day.setdefault(day_of(ts), []).append(g.as_dict(until))
        for day, gaps in by_day.items():
            self.sink.set_attr(day, GAPS_ATTR, json.dumps(gaps))

    def _bad(self, column: str, value: object, reason: str) -> None:
        file, line = self._where
        self.rejects.bad(file, line, column, str(value)[:80], reason)

    def _line(self, line: bytes) -> None:
        text = line.strip()
        if not text:
            return
        head, _, body = text.partition(b" ")
        try:
            recv = int(head)
        except ValueError:
            self._bad("receive time", head.decode(errors="replace"), "is not an integer (ns)")
            return
        try:
            msg = json.loads(body)
        except json.JSONDecodeError as e:
            self._bad("message", body.decode(errors="replace"), f"is not JSON ({e.msg})")
            return
        except UnicodeDecodeError:
            self._bad("message", body.decode(errors="replace"), "is not UTF-8 text")
            return
        if not isinstance(msg, dict):
            self._bad("message", body.decode(errors="replace"), "is not a JSON object")
            return
        try:
            self._message(recv, msg)
        except (KeyError, TypeError, IndexError) as e:
            self._bad("message", body.decode(errors="replace"), f"lacks a field ({e!r})")
        except _BadValue as e:
            self._bad(e.column, e.value, e.reason)

    def _message(self, recv: int, msg: dict[str, Any]) -> None:
        if "lastUpdateId" in msg:
            self._snapshot(recv, msg)
            return
        stream = str(msg["stream"])
        data = msg["data"]
        sym = str(data.get("s", self.symbol))
        if "@depth" in stream:
            self._diff(recv, data, sym)
        elif stream.endswith("@bookTicker"):
            self._check_symbol(sym)
            ts = self.bbo.ts(int(data["E"]) * 1_000_000 if "E" in data else recv)
            self.bbo.add(
                (
                    ts,
                    recv,
                    self._px(data["b"], "b"),
                    self._qty(data["B"], "B"),
                    self._px(data["a"], "a"),
                    self._qty(data["A"], "A"),
                    int(data["u"]),
                )
            )
        elif stream.endswith("@trade"):
            self._check_symbol(sym)
            ts = self.trades.ts(int(data["T"]) * 1_000_000)
            side = SELL if data["m"] else BUY
            self.trades.add(
                (
                    ts,
                    recv,
                    self._px(data["p"], "p"),
                    self._qty(data["q"], "q"),
                    int(data["t"]),
                    side,
                )
            )
        else:
            raise _BadValue("stream", stream, "is not a depth, bookTicker or trade stream")

    def _check_symbol(self, sym: str) -> None:
        if sym.upper() != self.symbol.upper():
            raise _BadValue("s", sym, f"is not the imported symbol {self.symbol}")

    def _px(self, text: str, column: str) -> int:
        try:
            return self.px(text)
        except ValueError as e:
            raise _BadValue(column, text, str(e)) from None

    def _qty(self, text: str, column: str) -> int:
        try:
            return self.qty(text)
        except ValueError as e:
            raise _BadValue(column, text, str(e)) from None

    # ------------------------------------------------------------------- book
    def _levels(self, levels: list[list[str]], col: str) -> Iterator[tuple[int, int]]:
        for px, qty in levels:
            yield self._px(px, col), self._qty(qty, col)

    def _snapshot(self, recv: int, msg: dict[str, Any]) -> None:
        last_id = int(msg["lastUpdateId"])
        bids = list(self._levels(msg["bids"], "bids"))
        asks = list(self._levels(msg["asks"], "asks"))
        self.stats.snapshots += 1
        pending, self._pending = self._pending, []
        kept = [p for p in pending if not self._covered(p[1], last_id)]
        # The snapshot is the state before its first kept diff: stamp it no later.
        first_e = int(kept[0][1]["E"]) * 1_000_000 if kept else None
        ts = int(msg["E"]) * 1_000_000 if "E" in msg else (first_e or recv)
        if first_e is not None:
            ts = min(ts, first_e)
        ts = self.l2.ts(ts)
        self.book = _Book()
        self.l2.add((ts, recv, 0, 0, 0, L2_CLEAR, last_id))
        self._l2_day = ts // DAY_NS
        for side, levels in ((BUY, bids), (SELL, asks)):
            for px, qty in levels:
                if qty:
                    self.book.set(side, px, qty)
                    self.l2.add((ts, recv, px, qty, side, L2_SET, last_id))
        self._synced = True
        self._bridged = False
        self._last_u = last_id
        self._snapshot_id = last_id
        self._last_diff = None
        where = self._where
        for recv_d, data, sym, at in pending:  # diffs kept from before the snapshot
            self._where = at
            self._diff(recv_d, data, sym)
        self._where = where

    def _covered(self, data: dict[str, Any], last_id: int) -> bool:
        """Whether the snapshot ``last_id`` already holds the whole diff."""
        u = int(data["u"])
        return u < last_id if self.futures else u <= last_id

    def _check_kind(self, data: dict[str, Any]) -> None:
        """Refuse spot diffs under futures rules and the other way round."""
        if ("pu" in data) != self.futures:
            if self.futures:
                raise _BadValue(
                    "pu", "", "is missing: a spot recording? (import it without --futures)"
                )
            raise _BadValue("pu", data["pu"], "is a USD-M futures field: use --futures")

    def _diff(self, recv: int, data: dict[str, Any], sym: str) -> None:
        self._check_symbol(sym)
        self._check_kind(data)
        if not self._synced:
            self._pending.append((recv, data, sym, self._where))
            return
        first, last = int(data["U"]), int(data["u"])
        file, line = self._where
        if not self._bridged:
            L = self._snapshot_id
            if self._covered(data, L):  # wholly before the snapshot
                if self._after_gap:
                    self.stats.diffs_dropped += 1
                else:
                    self.stats.diffs_covered += 1
                return
            need = L if self.futures else L + 1
            # Futures: a diff whose pu is L follows the snapshot with nothing missing, even if
            # the one ending at L (the documented bridge) was not recorded.
            if first > need and not (self.futures and int(data["pu"]) == L):
                rule = "U <= L <= u" if self.futures else "U <= L+1 <= u"
                self._lost(
                    data,
                    file,
                    line,
                    L,
                    f"starts after the snapshot lastUpdateId L={L} "
                    f"(the first diff must have {rule}): updates {need}..{first - 1} "
                    "are missing",
                )
                return
            self._bridged = True
            if self._after_gap and self._gap_until:  # the book is whole again from here
                self._gap_until[-1] = self.l2.last_ts
            self._after_gap = False
            self._apply(recv, data)
            return
        prev = self._last_u
        if self._last_diff is not None and data == self._last_diff:
            self.stats.duplicates += 1
            return
        if self.futures:
            pu = int(data["pu"])
            if pu != prev:
                why = "goes back" if last <= prev else "skips updates"
                self._lost(
                    data, file, line, prev, f"pu {pu} is not the previous diff's u {prev} ({why})"
                )
                return
        elif first != prev + 1:
            why = "goes back" if first <= prev else f"updates {prev + 1}..{first - 1} are missing"
            self._lost(
                data, file, line, prev, f"U is not the previous diff's u + 1 = {prev + 1} ({why})"
            )
            return
        self._apply(recv, data)

    def _lost(self, data: dict[str, Any], file: str, line: int, after: int, reason: str) -> None:
        """Record a gap in the book; stop, or (allowed) drop diffs until the next snapshot."""
        self._gap(data, file, line, after, reason)
        self.stats.diffs_dropped += 1
        self._synced = False
        self._after_gap = True

    def _apply(self, recv: int, data: dict[str, Any]) -> None:
        ts = self.l2.ts(int(data["E"]) * 1_000_000)
        day = ts // DAY_NS
        if day != self._l2_day:
            self._day_start(ts, recv)
        u = int(data["u"])
        for side, key in ((BUY, "b"), (SELL, "a")):
            for px, qty in self._levels(data[key], key):
                self.book.set(side, px, qty)
                self.l2.add((ts, recv, px, qty, side, L2_SET, u))
        self._last_u = u
        self._last_diff = data
        self.stats.diffs_applied += 1
        if self.snapshot_levels and ts >= self._next_snap:
            self._next_snap = (ts // self.snapshot_interval_ns + 1) * self.snapshot_interval_ns
            self._snap(ts, recv)

    def _snap(self, ts: int, recv: int) -> None:
        """Store the top ``snapshot_levels`` levels of the book as an ``l2_snap`` row."""
        n = self.snapshot_levels
        bids = heapq.nlargest(n, self.book.bids.items())
        asks = heapq.nsmallest(n, self.book.asks.items())
        cols = []
        for levels in (bids, asks):
            px = [p for p, _ in levels] + [0] * (n - len(levels))
            qty = [q for _, q in levels] + [0] * (n - len(levels))
            cols += [px, qty]
        self.snaps.add((ts, recv, *cols))

    def _day_start(self, ts: int, recv: int) -> None:
        """Begin a new day's ``l2`` with the whole book (a CLEAR and every level)."""
        self._l2_day = ts // DAY_NS
        u = self._last_u
        self.l2.add((ts, recv, 0, 0, 0, L2_CLEAR, u))
        for side, levels in ((BUY, self.book.bids), (SELL, self.book.asks)):
            for px in sorted(levels):
                self.l2.add((ts, recv, px, levels[px], side, L2_SET, u))


class _BadValue(Exception):
    def __init__(self, column: str, value: object, reason: str) -> None:
        super().__init__(reason)
        self.column, self.value, self.reason = column, str(value), reason


def import_binance(
    files: list[Path],
    store: Path,
    symbol: str,
    *,
    tick_size: str,
    lot_size: str,
    futures: bool = False,
    venue: str = "BINANCE",
    replace: bool = False,
    skip_bad_rows: bool = False,
    allow_gaps: bool = False,
    progress: Progress | None = None,
) -> tuple[ImportResult, BinanceStats]:
    """Import Binance recordings into ``store``, all or nothing (see :class:`Staging`)."""
    with Staging(store, replace=replace) as staging:
        imp = BinanceImporter(
            staging,
            symbol,
            tick_size=tick_size,
            lot_size=lot_size,
            futures=futures,
            venue=venue,
            skip_bad_rows=skip_bad_rows,
            allow_gaps=allow_gaps,
        )
        for f in files:
            imp.import_file(f, progress)
        result = imp.finish()
    return result, imp.stats
