# SPDX-License-Identifier: MIT
"""Import Databento DBN files (``.dbn``, ``.dbn.zst``): market by order, MBP-1 and trades.

Decoded by ``databento_dbn.DBNDecoder`` in blocks (zstd through ``zstandard``), so memory stays
bounded. What each record becomes:

* ``mbo`` records: ``A`` add, ``C`` cancel (reduce by ``size``), ``M`` modify and ``R`` clear
  go to ``mbo`` (``L3_ADD``/``L3_CANCEL``/``L3_MODIFY``/``L3_CLEAR``); ``T`` trades go to
  ``trades`` with the aggressor's side. ``F`` fills are not stored: on Databento MBO the
  resting order's reduction arrives as a ``C`` as well, and storing both would count it twice.
* ``mbp-1`` records: the top of book after the event goes to ``bbo`` when it changed; ``T``
  records also go to ``trades``.
* ``trades`` records: ``trades``.

Times: ``ts`` is ``ts_event``, except for records flagged ``F_SNAPSHOT`` (the resting book at
the start of a file, stamped with the time the order was entered), which take ``ts_recv``: the
time the snapshot describes. ``ts`` never goes backwards per dataset (raised to the previous
one; counted). ``seq`` / ``trade_id`` hold the venue ``sequence``. Prices are Databento's fixed
1e-9 units divided exactly by the tick size; an undefined price is 0.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import databento_dbn as dbn
import numpy as np
import zstandard

from engine.tickstore.importing import (
    Grid,
    ImportResult,
    ImportRowError,
    Progress,
    Rejects,
    Sink,
    Staging,
    refuse_other,
)
from engine.tickstore.schema import BBO_DTYPE, MBO_DTYPE, TRADE_DTYPE
from engine.types import BUY, L3_ADD, L3_CANCEL, L3_CLEAR, L3_MODIFY, SELL

#: Bytes fed to the decoder at a time, and rows buffered per dataset.
READ_BYTES = 4 << 20
BATCH_ROWS = 65536

_SIDE = {"B": BUY, "A": SELL, "N": 0}
_MBO_ACTION = {"A": L3_ADD, "C": L3_CANCEL, "M": L3_MODIFY, "R": L3_CLEAR}


def _code(v: Any) -> str:
    return str(getattr(v, "value", v))


class _Instrument:
    """Row buffers of one instrument (one :class:`Sink`)."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.rows: dict[str, list[tuple[int, ...]]] = {"mbo": [], "bbo": [], "trades": []}
        self.last_ts: dict[str, int] = {}
        self.last_top: tuple[int, int, int, int] | None = None
        self.raised = 0

    def ts(self, kind: str, t: int) -> int:
        last = self.last_ts.get(kind, t)
        if t < last:
            self.raised += 1
            return last
        self.last_ts[kind] = t
        return t

    def add(self, kind: str, row: tuple[int, ...]) -> None:
        rows = self.rows[kind]
        rows.append(row)
        if len(rows) >= BATCH_ROWS:
            self.flush(kind)

    def flush(self, kind: str) -> None:
        rows = self.rows[kind]
        if rows:
            dtype = {"mbo": MBO_DTYPE, "bbo": BBO_DTYPE, "trades": TRADE_DTYPE}[kind]
            self.sink.append(kind, np.array(rows, dtype))
            self.rows[kind] = []


class DbnImporter:
    """Import DBN files into a :class:`Staging` store (one store symbol per instrument)."""

    def __init__(
        self,
        staging: Staging,
        *,
        symbol: str | None,
        tick_size: str,
        lot_size: str = "1",
        venue: str = "",
        skip_bad_rows: bool = False,
    ) -> None:
        self.staging = staging
        self.symbol = symbol
        self.tick_size, self.lot_size, self.venue = tick_size, lot_size, venue
        self.px = Grid("tick size", tick_size)
        self.qty = Grid("lot size", lot_size)
        self.result = ImportResult()
        self.rejects = Rejects(skip_bad_rows, self.result)
        self.instruments: dict[int, _Instrument] = {}
        self.names: dict[int, str] = {}
        self.ignored = 0  # records of other types (status, definitions, ...)
        self.fills = 0
        self._where = ("", 0)

    @staticmethod
    def _chunks(path: Path) -> Iterator[tuple[bytes, int]]:
        """Yield the decompressed bytes of ``path`` and the file position, block by block.

        A zstd frame cut short raises ``ValueError`` (zstandard itself returns nothing).
        """
        with path.open("rb") as raw:
            if path.suffix != ".zst":
                while data := raw.read(READ_BYTES):
                    yield data, raw.tell()
                return
            dctx = zstandard.ZstdDecompressor()
            frame = dctx.decompressobj()
            started = False
            while chunk := raw.read(READ_BYTES):
                while chunk:
                    started = True
                    out = frame.decompress(chunk)
                    if out:
                        yield out, raw.tell()
                    chunk = b""
                    if frame.eof:  # a file may hold several frames
                        chunk, frame, started = frame.unused_data, dctx.decompressobj(), False
            if started:
                raise ValueError("the zstd data ends inside a frame (truncated file)")

    def import_file(self, path: Path, progress: Progress | None = None) -> None:
        """Import one DBN file."""
        refuse_other(path, ("dbn", "zstd"))
        total = path.stat().st_size
        dec = dbn.DBNDecoder()
        n = 0
        try:
            for data, done in self._chunks(path):
                dec.write(data)
                for rec in dec.decode():
                    n += 1
                    self._where = (str(path), n)
                    self._record(rec)
                if progress is not None:  # records read: rows are written in batches
                    progress(done, total, n)
            if dec.buffer():
                raise ValueError(f"the file ends inside a record ({len(dec.buffer())} bytes left)")
        except ImportRowError:
            raise
        except (zstandard.ZstdError, ValueError, dbn.DBNError) as e:
            self.rejects.skip = False
            self.rejects.bad(str(path), n + 1, "record", "", f"cannot be decoded ({e})")

    def _record(self, rec: Any) -> None:
        if isinstance(rec, dbn.Metadata):
            self.names = {}
            for raw_symbol, intervals in rec.mappings.items():
                for iv in intervals:
                    if str(iv["symbol"]).isdigit():
                        self.names[int(iv["symbol"])] = str(raw_symbol)
            return
        if isinstance(rec, dbn.MBOMsg):
            self._mbo(rec)
        elif isinstance(rec, dbn.MBP1Msg):
            self._mbp1(rec)
        elif isinstance(rec, dbn.TradeMsg):
            self._trade(self._instrument(rec), rec)
        else:
            self.ignored += 1

    def _instrument(self, rec: Any) -> _Instrument:
        iid = int(rec.instrument_id)
        ins = self.instruments.get(iid)
        if ins is None:
            name = self.names.get(iid, str(iid))
            if self.symbol is not None:
                if self.instruments:
                    self._bad("instrument_id", iid, "is a second instrument: drop --symbol")
                name = self.symbol
            sink = Sink(
                self.staging,
                self.result,
                name,
                tick_size=self.tick_size,
                lot_size=self.lot_size,
                venue=self.venue,
            )
            ins = self.instruments[iid] = _Instrument(sink)
        return ins

    def _bad(self, column: str, value: object, reason: str) -> NoReturn:
        file, n = self._where
        self.rejects.bad(file, n, column, str(value), reason)
        raise _Bad

    def _price(self, p: int, column: str) -> int:
        if p == dbn.UNDEF_PRICE:
            return 0
        q, r = divmod(int(p), self.px.units)
        if r:
            self._bad(
                column, p, f"(1e-9 units) is not a multiple of the tick size {self.tick_size}"
            )
        return q

    def _size(self, s: int, column: str) -> int:
        q, r = divmod(int(s) * 1_000_000_000, self.qty.units)
        if r:
            self._bad(column, s, f"is not a multiple of the lot size {self.lot_size}")
        return q

    def _ts(self, ins: _Instrument, kind: str, rec: Any) -> int:
        t = rec.ts_recv if rec.flags & dbn.F_SNAPSHOT else rec.ts_event
        return ins.ts(kind, int(t))

    def _mbo(self, rec: Any) -> None:
        try:
            ins = self._instrument(rec)
            action = _code(rec.action)
            if action == "T":
                self._trade(ins, rec)
                return
            if action == "F":
                self.fills += 1
                return
            code = _MBO_ACTION.get(action)
            if code is None:
                self._bad("action", action, "is not an MBO action (A, C, M, R, T, F)")
            side = _SIDE.get(_code(rec.side), 0)
            if code != L3_CLEAR and side == 0:
                self._bad("side", _code(rec.side), "must be B or A for an order")
            ins.add(
                "mbo",
                (
                    self._ts(ins, "mbo", rec),
                    int(rec.ts_recv),
                    int(rec.order_id),
                    self._price(rec.price, "price"),
                    self._size(rec.size, "size"),
                    side,
                    code,
                ),
            )
        except _Bad:
            return

    def _mbp1(self, rec: Any) -> None:
        try:
            ins = self._instrument(rec)
            if _code(rec.action) == "T":
                self._trade(ins, rec)
            level = rec.levels[0]
            top = (
                self._price(level.bid_px, "bid_px_00"), self._size(level.bid_sz, "bid_sz_00"),
                self._price(level.ask_px, "ask_px_00"), self._size(level.ask_sz, "ask_sz_00"),
            )  # fmt: skip
            if top != ins.last_top:
                ins.last_top = top
                ts = self._ts(ins, "bbo", rec)
                ins.add("bbo", (ts, int(rec.ts_recv), *top, int(rec.sequence)))
        except _Bad:
            return

    def _trade(self, ins: _Instrument, rec: Any) -> None:
        try:
            ins.add(
                "trades",
                (
                    self._ts(ins, "trades", rec),
                    int(rec.ts_recv),
                    self._price(rec.price, "price"),
                    self._size(rec.size, "size"),
                    int(rec.sequence),
                    _SIDE.get(_code(rec.side), 0),
                ),
            )
        except _Bad:
            return

    def finish(self) -> ImportResult:
        """Write what is buffered; return the result."""
        for ins in self.instruments.values():
            for kind in ("mbo", "bbo", "trades"):
                ins.flush(kind)
        return self.result


class _Bad(ValueError):
    """A record was reported bad and skipped (raised only to leave the record's handler)."""


def import_dbn(
    files: list[Path],
    store: Path,
    *,
    symbol: str | None = None,
    tick_size: str,
    lot_size: str = "1",
    venue: str = "",
    replace: bool = False,
    skip_bad_rows: bool = False,
    progress: Progress | None = None,
) -> ImportResult:
    """Import DBN files into ``store``, all or nothing (see :class:`Staging`)."""
    with Staging(store, replace=replace) as staging:
        imp = DbnImporter(
            staging,
            symbol=symbol,
            tick_size=tick_size,
            lot_size=lot_size,
            venue=venue,
            skip_bad_rows=skip_bad_rows,
        )
        for f in files:
            imp.import_file(f, progress)
        return imp.finish()
