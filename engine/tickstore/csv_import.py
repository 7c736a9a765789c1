# SPDX-License-Identifier: MIT
"""Generic CSV importer: a column mapping turns any delimited text file into store rows.

A mapping names, for each field of the target row type (``trades``, ``bbo`` or ``l2``), the
CSV column it comes from and how to convert it::

    ts=timestamp:iso,bid_px=bid,ask_px=ask          (TrueFX quotes -> bbo)
    ts=trade_ts_ms:ms,ts_recv=timestamp,px=price,qty=size,trade_id,side=buyer_is_maker:maker

``field=column:conversion``; a bare ``field`` reads the column of the same name; ``#3`` is the
fourth column by position; ``field=@5`` is a constant (already in ticks/lots/ns). Conversions:
``ns``/``us``/``ms``/``s`` (epoch number, decimals allowed), ``iso`` (ISO-8601, UTC unless an
offset is given), ``px`` (decimal price -> ticks), ``qty`` (decimal size -> lots), ``int``,
``side`` (B/buy/bid/1 or S/sell/A/ask/-1; N/0/empty = unknown) and ``maker`` (a buyer-is-maker
flag, turned into the aggressor's side). Defaults follow the field: ``ts*`` -> ``ns``,
``*px`` -> ``px``, ``*qty`` -> ``qty``, ``side`` -> ``side``, others ``int``. Fields not
mapped are 0, except ``ts_recv`` (= ``ts``) and ``trade_id``/``seq`` (-1).

The text is parsed by a numba kernel in blocks (``_kernels.csv_parse``): prices and sizes are
exact (a price off the tick grid is an error, not a rounding). Quoted fields are not
supported. Rows must be in time order; a row that goes back in time is a bad row.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Final, cast

import numpy as np
import numpy.typing as npt

from engine.tickstore import _kernels as k
from engine.tickstore.importing import (
    Grid,
    ImportResult,
    Progress,
    Rejects,
    Sink,
    Staging,
    refuse_other,
)
from engine.tickstore.schema import KINDS
from engine.types import L2_SET

#: Bytes of text parsed per kernel call.
BLOCK_BYTES: Final[int] = 8 << 20

_TIME_UNITS: Final[dict[str, int]] = {
    "ns": 1,
    "us": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
}
_CONVS: Final[tuple[str, ...]] = (*_TIME_UNITS, "iso", "px", "qty", "int", "side", "maker")
_REQUIRED: Final[dict[str, tuple[str, ...]]] = {
    "trades": ("ts", "px", "qty"),
    "bbo": ("ts", "bid_px", "ask_px"),
    "l2": ("ts", "px", "qty", "side"),
}
_REASONS: Final[dict[int, str]] = {
    k.ERR_NUMBER: "is not a number",
    k.ERR_GRID: "is not a multiple of the {step}",
    k.ERR_TIME: "is not an ISO-8601 time (YYYY-MM-DD HH:MM:SS[.fff][Z|+HH:MM])",
    k.ERR_MISSING: "is missing (the line has too few columns)",
    k.ERR_SIDE: "is not a side (B/buy/bid/1, S/sell/A/ask/-1, N/0)",
    k.ERR_RANGE: "is out of range (or finer than 1e-9)",
}


@dataclass(frozen=True, slots=True)
class FieldMap:
    """Where one field of the row comes from: a column (name or ``#index``) or a constant."""

    field: str
    column: str | None
    conv: str
    const: int = 0


def _default_conv(field: str) -> str:
    if field.startswith("ts"):
        return "ns"
    if field.endswith("px"):
        return "px"
    if field.endswith("qty"):
        return "qty"
    return "side" if field == "side" else "int"


@dataclass(frozen=True, slots=True)
class CsvMapping:
    """A target row type (``kind``) and the :class:`FieldMap` of each mapped field."""

    kind: str
    fields: tuple[FieldMap, ...]
    delimiter: str = ","
    header: bool = True

    def __post_init__(self) -> None:
        if self.kind not in _REQUIRED:
            raise ValueError(f"kind: {self.kind!r} must be one of {', '.join(_REQUIRED)}")
        names = KINDS[self.kind].names or ()
        mapped = [f.field for f in self.fields]
        for f in self.fields:
            if f.field not in names or f.field == "kind":
                raise ValueError(f"mapping: {self.kind} rows have no field {f.field!r}")
            if f.conv not in _CONVS:
                raise ValueError(
                    f"mapping: {f.field}: conversion {f.conv!r} is not one of {', '.join(_CONVS)}"
                )
        missing = [n for n in _REQUIRED[self.kind] if n not in mapped]
        if missing:
            raise ValueError(f"mapping: {self.kind} rows need {', '.join(missing)}")
        if len(set(mapped)) != len(mapped):
            raise ValueError(f"mapping: a field is mapped twice ({', '.join(mapped)})")
        if len(self.delimiter) != 1:
            raise ValueError(f"delimiter: must be one character, got {self.delimiter!r}")

    @classmethod
    def parse(
        cls, kind: str, text: str, *, delimiter: str = ",", header: bool = True
    ) -> CsvMapping:
        """Build a mapping from ``field=column:conv,...`` text (module docstring)."""
        fields = []
        for item in (p.strip() for p in text.split(",")):
            if not item:
                continue
            field, _eq, source = item.partition("=")
            field = field.strip()
            source = source.strip() or field
            if source.startswith("@"):
                try:
                    fields.append(FieldMap(field, None, "int", int(source[1:])))
                except ValueError:
                    raise ValueError(f"mapping: {item!r}: constant must be an integer") from None
                continue
            column, _colon, conv = source.rpartition(":") if ":" in source else (source, "", "")
            fields.append(FieldMap(field, column.strip(), conv.strip() or _default_conv(field)))
        return cls(kind, tuple(fields), delimiter, header)

    @classmethod
    def load(cls, path: Path) -> CsvMapping:
        """Read a JSON mapping: ``{"kind": ..., "fields": {field: "column:conv"}, ...}``."""
        try:
            spec = json.loads(path.read_text())
            text = ",".join(f"{f}={src}" for f, src in dict(spec["fields"]).items())
            return cls.parse(
                str(spec["kind"]),
                text,
                delimiter=str(spec.get("delimiter", ",")),
                header=bool(spec.get("header", True)),
            )
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ValueError(f"{path}: not a usable mapping ({e})") from None


def warm_parser() -> None:
    """Call the CSV kernel once on one tiny line (with the types imports use).

    Loads the compiled parser from numba's cache, or compiles it on a first run (seconds),
    before any file is read, so the caller can say so instead of a bar standing at 0.
    """
    buf = np.frombuffer(b"1\n", np.uint8)
    one = np.zeros(1, np.int64)
    out = np.empty((1, 2), np.int64)
    k.csv_parse(
        buf,
        44,
        one,
        one.copy(),
        one.copy(),
        out,
        np.empty(2, np.int64),
        1,
        np.zeros((1, 5), np.int64),
    )


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


class CsvImporter:
    """Import CSV files of one instrument into a :class:`Staging` store with a mapping."""

    def __init__(
        self,
        staging: Staging,
        symbol: str,
        mapping: CsvMapping,
        *,
        tick_size: str,
        lot_size: str,
        venue: str = "",
        skip_bad_rows: bool = False,
        round_to_tick: bool = False,
    ) -> None:
        self.mapping = mapping
        self.round_to_tick = round_to_tick
        self.result = ImportResult()
        self.rejects = Rejects(skip_bad_rows, self.result)
        self.sink = Sink(
            staging, self.result, symbol, tick_size=tick_size, lot_size=lot_size, venue=venue
        )
        self.grids = {"px": Grid("tick size", tick_size), "qty": Grid("lot size", lot_size)}
        self.dtype = KINDS[mapping.kind]
        self.cols = [f for f in mapping.fields if f.column is not None]
        dec = k.CONV_DECIMAL_ROUND if round_to_tick else k.CONV_DECIMAL
        conv_code = {
            "iso": k.CONV_TIME_ISO,
            "px": dec,
            "qty": dec,
            "int": k.CONV_INT,
            "side": k.CONV_SIDE,
            "maker": k.CONV_MAKER,
        }
        self.conv = np.array([conv_code.get(f.conv, k.CONV_TIME_NUM) for f in self.cols], np.int64)
        self.param = np.array(
            [
                self.grids[f.conv].units if f.conv in self.grids else _TIME_UNITS.get(f.conv, 0)
                for f in self.cols
            ],
            np.int64,
        )
        self.last_ts = -(2**63)

    def _need(self, path: Path, header: list[str]) -> npt.NDArray[np.int64]:
        index: list[int] = []
        for f in self.cols:
            col = cast(str, f.column)
            if col.startswith("#") and col[1:].isdigit():
                index.append(int(col[1:]))
            elif col in header:
                index.append(header.index(col))
            else:
                self.rejects.skip = False  # a missing column is never a skippable row
                self.rejects.bad(str(path), 1, col, ",".join(header)[:120], "has no such column")
        need = np.full(max(index) + 1, -1, np.int64)
        need[index] = np.arange(len(index))
        return need

    def import_file(
        self, path: Path, progress: Progress | None = None, name: Path | None = None
    ) -> None:
        """Import one file (plain or ``.gz``); ``name`` is the file errors name (default)."""
        if name is None:
            refuse_other(path, ("csv",))
        shown = name or path
        total = path.stat().st_size
        with path.open("rb") as raw:
            fh = cast(IO[bytes], gzip.GzipFile(fileobj=raw)) if path.suffix == ".gz" else raw
            line = 1
            header: list[str] = []
            if self.mapping.header:
                first = fh.readline().decode("utf-8-sig", errors="replace").rstrip("\r\n")
                header = [h.strip() for h in first.split(self.mapping.delimiter)]
                line = 2
            need = self._need(shown, header)
            carry = b""
            while True:
                data = fh.read(BLOCK_BYTES)
                block = carry + data
                if not block:
                    break
                cut = len(block) if not data else block.rfind(b"\n") + 1
                if cut == 0:
                    carry = block
                    continue
                carry = block[cut:]
                line = self._block(shown, np.frombuffer(block[:cut], np.uint8), need, line)
                if progress is not None:
                    progress(raw.tell(), total, self.result.total_rows)

    def _block(
        self, path: Path, buf: npt.NDArray[np.uint8], need: npt.NDArray[np.int64], line: int
    ) -> int:
        cap = int(np.count_nonzero(buf == 10)) + 1  # one row per line at most
        out = np.empty((len(self.cols), cap), np.int64)
        lines = np.empty(cap, np.int64)
        errs = np.zeros((1 if not self.rejects.skip else 4096, 5), np.int64)
        pos = 0
        while pos < buf.shape[0]:
            part = buf[pos:]
            n, n_lines, n_err, used = k.csv_parse(
                part,
                ord(self.mapping.delimiter),
                need,
                self.conv,
                self.param,
                out,
                lines,
                line,
                errs,
            )
            for e in errs[: min(n_err, errs.shape[0])]:
                self._report(path, part, e)
            self._emit(path, out[:, :n], lines[:n])
            line += n_lines
            pos += used
        return line

    def _report(self, path: Path, buf: npt.NDArray[np.uint8], e: npt.NDArray[np.int64]) -> None:
        line, f, s, end, code = (int(x) for x in e)
        fm = self.cols[f]
        value = bytes(buf[s:end]).decode(errors="replace")
        step = "tick size" if fm.conv == "px" else "lot size"
        size = f"{step} {self.grids.get(fm.conv, self.grids['px']).step}"
        reason = _REASONS[code].format(step=size)
        if fm.conv in self.grids:
            if self.round_to_tick and code == k.ERR_GRID:
                reason = f"is more than 1% of the {size} off its grid (not a float artifact)"
            elif not self.round_to_tick and (
                code == k.ERR_RANGE or (code == k.ERR_NUMBER and _is_float(value))
            ):  # too many places, or scientific notation
                reason += " (--round-to-tick rounds float artifacts such as 2e-06)"
        self.rejects.bad(str(path), line, cast(str, fm.column), value, reason)

    def _emit(self, path: Path, cols: npt.NDArray[np.int64], lines: npt.NDArray[np.int64]) -> None:
        n = cols.shape[1]
        if n == 0:
            return
        rows = np.zeros(n, self.dtype)
        names = self.dtype.names or ()
        for name in ("trade_id", "seq"):
            if name in names:
                rows[name] = -1
        for i, f in enumerate(self.cols):
            rows[f.field] = cols[i]
        for f in self.mapping.fields:
            if f.column is None:
                rows[f.field] = f.const
        if "ts_recv" not in {f.field for f in self.mapping.fields}:
            rows["ts_recv"] = rows["ts"]
        if self.mapping.kind == "l2":
            rows["kind"] = L2_SET
        rows = self._in_order(path, rows, lines)
        self.sink.append(self.mapping.kind, rows)
        if rows.shape[0]:
            self.last_ts = int(rows["ts"][-1])

    def _in_order(
        self, path: Path, rows: npt.NDArray[np.void], lines: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.void]:
        ts = rows["ts"]
        prior = np.maximum.accumulate(np.concatenate(([self.last_ts], ts)))[:-1]
        back = np.flatnonzero(ts < prior)
        if back.size == 0:
            return rows
        column = next(f.column for f in self.mapping.fields if f.field == "ts") or "ts"
        for i in back:
            t = int(ts[i])
            when = datetime.fromtimestamp(t // 1_000_000_000, tz=UTC).isoformat()
            self.rejects.bad(
                str(path),
                int(lines[i]),
                column,
                f"{t} ({when})",
                "is before the previous row's time (rows must be in time order)",
            )
        keep = np.ones(rows.shape[0], bool)
        keep[back] = False
        return rows[keep]

    def finish(self) -> ImportResult:
        """Return the result (rows go to the store as they are parsed)."""
        return self.result


def import_csv(
    files: list[Path],
    store: Path,
    symbol: str,
    mapping: CsvMapping,
    *,
    tick_size: str,
    lot_size: str,
    venue: str = "",
    replace: bool = False,
    skip_bad_rows: bool = False,
    progress: Progress | None = None,
    round_to_tick: bool = False,
) -> ImportResult:
    """Import CSV files into ``store``, all or nothing (see :class:`Staging`).

    ``round_to_tick`` reads prices and sizes as decimal or scientific text rounded to the
    nearest tick or lot (float artifacts); one more than 1% of a step off is still a bad row.
    """
    with Staging(store, replace=replace) as staging:
        imp = CsvImporter(
            staging,
            symbol,
            mapping,
            tick_size=tick_size,
            lot_size=lot_size,
            venue=venue,
            skip_bad_rows=skip_bad_rows,
            round_to_tick=round_to_tick,
        )
        for f in files:
            imp.import_file(f, progress)
        return imp.finish()
