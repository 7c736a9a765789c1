# SPDX-License-Identifier: MIT
"""What every importer shares: bad-row reports, decimal scaling and the all-or-nothing commit.

An import writes into a *staging* store next to the target (``.<name>.import-<pid>.tmp``).
Only when every input file went through does :meth:`Staging.commit` move the new
instrument-days into the target: a new target is the staging file renamed (atomic), an
existing one receives each day by an HDF5 object copy under a hidden name followed by a rename
of that link (readers that hold the file see the new days after reopening it). An error, a bad
row or Ctrl+C before that point deletes the staging file and leaves the target exactly as it
was.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Final

import h5py
import numpy as np
import numpy.typing as npt

from engine.tickstore.days import DAY_NS, INDEX_SUFFIX, TickStoreError, day_of, symbol_key
from engine.tickstore.store import TickStore
from engine.tickstore.summaries import move_summaries, summaries_root
from engine.tickstore.writer import DayWriter

#: Decimal places kept when text is scaled to integers (nano-units).
SCALE_DIGITS: Final[int] = 9
_SCALE: Final[int] = 10**SCALE_DIGITS

#: Attribute of an instrument-day listing the breaks in its depth stream (JSON list of objects
#: ``{"ts", "until", "after", "U", "u", "pu", "reason", "file", "line"}``; ``until`` 0: the
#: book was not whole again in the input), written only by an import
#: run with ``--allow-gaps``. A day without it had none.
GAPS_ATTR: Final[str] = "l2_gaps"

#: ``progress(bytes_done, bytes_total, rows_done)``: called now and then during an import.
Progress = Callable[[int, int, int], None]


@dataclass(frozen=True, slots=True)
class BadRow:
    """One input row an importer refused: where, which column, what value and why."""

    file: str
    line: int
    column: str
    value: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: column {self.column}: {self.value!r} {self.reason}"


class ImportRowError(ValueError):
    """A bad input row stopped the import; :attr:`bad` says where and why."""

    def __init__(self, bad: BadRow) -> None:
        super().__init__(str(bad))
        self.bad = bad


class ImportConflictError(TickStoreError):
    """The import would overwrite instrument-days already in the target store."""


@dataclass
class ImportResult:
    """What an import wrote: rows per ``(symbol, day, kind)`` and the rows it skipped."""

    rows: dict[tuple[str, str, str], int] = field(default_factory=dict)
    skipped: list[BadRow] = field(default_factory=list)
    days: list[tuple[str, str]] = field(default_factory=list)

    @property
    def total_rows(self) -> int:
        """Return the number of rows written."""
        return sum(self.rows.values())

    def add(self, symbol: str, day: str, kind: str, n: int) -> None:
        """Count ``n`` rows written to one dataset."""
        key = (symbol, day, kind)
        self.rows[key] = self.rows.get(key, 0) + n


class Rejects:
    """Collect bad rows: stop at the first (``skip=False``) or keep going and list them."""

    def __init__(self, skip: bool, result: ImportResult) -> None:
        self.skip = skip
        self.result = result

    def bad(self, file: str, line: int, column: str, value: str, reason: str) -> None:
        """Report a bad row; raises :class:`ImportRowError` unless skipping."""
        row = BadRow(file, line, column, value, reason)
        if not self.skip:
            raise ImportRowError(row)
        self.result.skipped.append(row)


def day_gaps(store: TickStore, symbol: str, day: str) -> list[dict[str, object]]:
    """Return the depth-stream gaps recorded for one instrument-day (``[]`` when none)."""
    import json

    text = store.file[symbol_key(symbol)][day].attrs.get(GAPS_ATTR)
    if text is None:
        return []
    gaps: list[dict[str, object]] = json.loads(str(text))
    return gaps


#: What :func:`sniff` recognises, and how to import it.
FORMATS: Final[dict[str, str]] = {
    "parquet": "a Parquet file; use `qwconsole import parquet` (same mapping as CSV)",
    "dbn": "a Databento DBN file; use `qwconsole import dbn`",
    "zstd": "zstd-compressed data (a .dbn.zst?); use `qwconsole import dbn`",
    "zip": "a zip archive (Bybit's zipped depth is not supported yet; unzip other files first)",
    "hdf5": "an HDF5 file (a tick store?), not an input to import",
    "bybit": "Bybit JSON lines (topic/type/data), which are not supported yet",
    "recording": "a recording of JSON messages (<receive ns> <JSON> lines); use "
    "`qwconsole import binance`",
    "csv": "delimited text; use `qwconsole import csv` (or `import lobster` for LOBSTER pairs)",
}


def sniff(path: Path) -> str | None:
    """Return what ``path`` holds when it is one of :data:`FORMATS`, else ``None``.

    Looks at the first bytes (inside gzip when the file is gzip data).
    """
    import gzip
    import zlib

    with path.open("rb") as fh:
        head = fh.read(4096)
    if head[:2] == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as g:
                head = g.read(4096)
        except (OSError, EOFError, zlib.error):
            return None
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"DBN"):
        return "dbn"
    if head.startswith(b"\x28\xb5\x2f\xfd"):
        return "zstd"
    if head.startswith(b"PK\x03\x04"):
        return "zip"
    if head.startswith(b"\x89HDF"):
        return "hdf5"
    first = head.split(b"\n", 1)[0].strip()
    body = first.partition(b" ")[2] if first[:1].isdigit() else first
    if body.startswith(b"{"):
        return "bybit" if b'"topic"' in body else "recording"
    if b"," in first or b";" in first or b"\t" in first:
        return "csv"
    return None


def refuse_other(path: Path, accepted: tuple[str, ...]) -> None:
    """Raise ``ValueError`` (one line) when ``path`` is a known format not in ``accepted``."""
    kind = sniff(path)
    if kind is not None and kind not in accepted:
        raise ValueError(f"{path}: this is {FORMATS[kind]}")


def write_report(path: Path, skipped: list[BadRow]) -> None:
    """Write skipped rows as CSV: ``file,line,column,value,reason``."""
    import csv

    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["file", "line", "column", "value", "reason"])
        for b in skipped:
            w.writerow([b.file, b.line, b.column, b.value, b.reason])


def units(name: str, step: str) -> int:
    """Return ``step`` (decimal text, e.g. a tick size) in nano-units; ``ValueError`` if inexact."""
    n = scaled(step)
    if n is None or n <= 0:
        raise ValueError(f"{name}: {step!r} must be a positive decimal with at most 9 places")
    return n


def scaled(text: str) -> int | None:
    """Return decimal ``text`` times 10**9 as an exact int, or ``None`` if it is not one."""
    s = text.strip()
    neg = s.startswith("-")
    if neg or s.startswith("+"):
        s = s[1:]
    whole, _dot, frac = s.partition(".")
    if not (whole or frac) or (whole and not whole.isdigit()) or (frac and not frac.isdigit()):
        return None
    if len(frac) > SCALE_DIGITS:
        if frac[SCALE_DIGITS:].strip("0"):
            return None
        frac = frac[:SCALE_DIGITS]
    v = int(whole or "0") * _SCALE + int(frac.ljust(SCALE_DIGITS, "0") or "0")
    return -v if neg else v


class Grid:
    """Convert decimal text to integer steps of ``step`` (ticks or lots), exactly."""

    __slots__ = ("name", "step", "units")

    def __init__(self, name: str, step: str) -> None:
        self.name = name
        self.step = step
        self.units = units(name, step)

    def __call__(self, text: str) -> int:
        """Return ``text`` in steps; ``ValueError`` saying why if it is not on the grid."""
        v = scaled(text)
        if v is None:
            raise ValueError("is not a decimal number")
        q, r = divmod(v, self.units)
        if r:
            raise ValueError(f"is not a multiple of the {self.name} {self.step}")
        return q


def monotonic_times(rows: npt.NDArray[np.void]) -> None:
    """Make ``rows["ts"]`` non-decreasing in place (a time that steps back takes the last one).

    Captures are written in sequence order; a sender's clock that steps back must not make the
    day's rows out of time order, which the store refuses.
    """
    np.maximum.accumulate(rows["ts"], out=rows["ts"])


def grid_steps(
    values: npt.NDArray[np.int64], grid: Grid, report: Callable[[int], None]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """Return ``values`` (in the grid's 1e-9 units) in steps of ``grid``, and which are on it.

    ``report(i)`` is called for each row ``i`` off the grid (the first 1,000 of them): an
    importer's :meth:`Rejects.bad`, which raises unless bad rows are skipped.
    """
    steps, rest = np.divmod(values, grid.units)
    bad = np.flatnonzero(rest)
    for i in bad[:1000].tolist():
        report(i)
    on_grid = np.ones(values.shape[0], np.bool_)
    on_grid[bad] = False
    return steps, on_grid


class Staging:
    """Write an import into a temporary store and move it into ``target`` on success.

    Parameters
    ----------
    target : Path
        The tick store to import into (created if missing).
    replace : bool
        Replace the kinds an instrument-day already holds; otherwise they are a conflict,
        found before the first row of the kind is staged. New kinds are added to a stored
        day, whose other kinds are left as they are.
    """

    def __init__(self, target: Path, *, replace: bool = False) -> None:
        self.target = Path(target)
        self.replace = replace
        self.tmp = self.target.with_name(f".{self.target.name}.import-{os.getpid()}.tmp")
        self.tmp.unlink(missing_ok=True)
        self.store = TickStore(self.tmp, "a")
        self._writers: dict[tuple[str, str], DayWriter] = {}
        self._checked: set[tuple[str, str, str]] = set()
        self._done = False

    def __enter__(self) -> Staging:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if et is None and not self._done:
                self.commit()
        finally:
            self.abort()

    def _stored(self, symbol: str, day: str) -> tuple[list[str], tuple[str, str]] | None:
        """Return the kinds and (tick, lot) sizes of ``symbol``/``day`` in the target, if any."""
        if not self.target.exists():
            return None
        with TickStore(self.target) as t:
            if day not in t.days(symbol):
                return None
            info = t.info(symbol, day)
            return list(info.rows), (info.tick_size, info.lot_size)

    def check_free(
        self,
        symbol: str,
        day: str,
        kinds: tuple[str, ...] = (),
        steps: tuple[str, str] | None = None,
    ) -> None:
        """Raise :class:`ImportConflictError` if the import cannot go into ``symbol``/``day``.

        A day already stored takes new kinds (the others are left as they are); a kind it
        already holds is a conflict unless ``replace``, and so are other tick or lot sizes.
        """
        stored = self._stored(symbol, day)
        if stored is None:
            return
        have, (tick, lot) = stored
        if steps is not None and steps != (tick, lot):
            raise ImportConflictError(
                f"{self.target}: {symbol}/{day} is stored with tick size {tick} and lot size "
                f"{lot}, not {steps[0]} and {steps[1]}"
            )
        clash = [k for k in kinds if k in have]
        if clash and not self.replace:
            them = "it" if len(clash) == 1 else "them"
            raise ImportConflictError(
                f"{self.target}: {symbol}/{day} already holds {', '.join(clash)} (use --replace "
                f"to overwrite {them}; other kinds are added to the day)"
            )

    def check_kind(self, symbol: str, day: str, kind: str) -> None:
        """Check ``kind`` of ``symbol``/``day`` against the target once (before any row)."""
        key = (symbol, day, kind)
        if key not in self._checked:
            self.check_free(symbol, day, (kind,))
            self._checked.add(key)

    def writer(
        self, symbol: str, day: str, *, tick_size: str, lot_size: str, venue: str, n_levels: int = 0
    ) -> DayWriter:
        """Return the staging writer of one instrument-day (checked against the target once)."""
        key = (symbol, day)
        w = self._writers.get(key)
        if w is None:
            self.check_free(symbol, day, steps=(tick_size, lot_size))
            w = self.store.writer(
                symbol, day, tick_size=tick_size, lot_size=lot_size, venue=venue, n_levels=n_levels
            )
            self._writers[key] = w
        return w

    def commit(self) -> list[tuple[str, str]]:
        """Move every staged instrument-day (or its kinds) into the target; return them."""
        days = sorted(self._writers)
        for w in self._writers.values():
            w.flush()
        staged = {
            (symbol, day): (tuple(self.store.kinds(symbol, day)), (
                str(self.store.file[symbol_key(symbol)][day].attrs["tick_size"]),
                str(self.store.file[symbol_key(symbol)][day].attrs["lot_size"])))
            for symbol, day in days
        }  # fmt: skip
        self.store.close()
        self._done = True
        if not days:
            self.tmp.unlink(missing_ok=True)
            shutil.rmtree(summaries_root(self.tmp), ignore_errors=True)
            return []
        if not self.target.exists():
            self.tmp.replace(self.target)
            move_summaries(self.tmp, self.target, days)
            return days
        merge = {key: self._stored(*key) is not None for key in days}
        for (symbol, day), (kinds, steps) in staged.items():
            self.check_free(symbol, day, kinds, steps)
        with TickStore(self.tmp) as src, TickStore(self.target, "a") as dst:
            for symbol, day in days:
                key = symbol_key(symbol)
                sym = dst.file.require_group(key)
                sym.attrs["symbol"] = symbol
                if merge[(symbol, day)]:
                    self._merge(src.file[key][day], sym[day], staged[(symbol, day)][0])
                    continue
                hidden = f".{day}.importing"
                if hidden in sym:
                    del sym[hidden]
                src.file.copy(src.file[key][day], sym, name=hidden)
                if day in sym:
                    del sym[day]
                sym.move(hidden, day)
        self.tmp.unlink(missing_ok=True)
        move_summaries(self.tmp, self.target, days)
        return days

    @staticmethod
    def _merge(src: h5py.Group, dst: h5py.Group, kinds: tuple[str, ...]) -> None:
        """Put the staged ``kinds`` (and their chunk indexes) into a stored day's group.

        Each dataset is copied under a hidden name, then the stored one (``--replace``) is
        deleted and the copy renamed: a kind is either the old or the new one. The other kinds
        of the day are not touched; the day's gap list is the import's when it has one.
        """
        for kind in kinds:
            for name in (kind, kind + INDEX_SUFFIX):
                if name not in src:
                    if name in dst:  # a stale index of the replaced kind
                        del dst[name]
                    continue
                hidden = f".{name}.importing"
                if hidden in dst:
                    del dst[hidden]
                src.file.copy(src[name], dst, name=hidden)
                if name in dst:
                    del dst[name]
                dst.move(hidden, name)
        if GAPS_ATTR in src.attrs:
            dst.attrs[GAPS_ATTR] = src.attrs[GAPS_ATTR]

    def abort(self) -> None:
        """Drop the staging file (nothing reaches the target)."""
        self.store.close()
        self.tmp.unlink(missing_ok=True)
        shutil.rmtree(summaries_root(self.tmp), ignore_errors=True)


class Sink:
    """Append rows of one instrument to the staging store, split by UTC day of ``ts``.

    ``on_new_day(day)`` (optional) is called before the first row of each further day, so an
    importer can start that day with a full book.
    """

    def __init__(
        self,
        staging: Staging,
        result: ImportResult,
        symbol: str,
        *,
        tick_size: str,
        lot_size: str,
        venue: str,
        n_levels: int = 0,
    ) -> None:
        self.staging = staging
        self.result = result
        self.symbol = symbol
        self._attrs = {"tick_size": tick_size, "lot_size": lot_size, "venue": venue}
        self._n_levels = n_levels

    def writer(self, day: str) -> DayWriter:
        """Return the staging writer of ``day``."""
        w = self.staging.writer(self.symbol, day, n_levels=self._n_levels, **self._attrs)
        if (self.symbol, day) not in self.result.days:
            self.result.days.append((self.symbol, day))
        return w

    def set_attr(self, day: str, name: str, value: str) -> None:
        """Set an attribute of the staged instrument-day ``day`` (created if new)."""
        self.writer(day)
        self.staging.store.file[symbol_key(self.symbol)][day].attrs[name] = value

    def append(self, kind: str, rows: npt.NDArray[np.void]) -> None:
        """Append ``rows`` (sorted by ``ts``) to the days they fall on."""
        if rows.shape[0] == 0:
            return
        d = rows["ts"] // DAY_NS
        cuts = np.flatnonzero(d[1:] != d[:-1]) + 1
        for a, b in zip(
            np.concatenate(([0], cuts)), np.concatenate((cuts, [rows.shape[0]])), strict=True
        ):
            part = rows[a:b]
            day = day_of(int(part["ts"][0]))
            w = self.writer(day)
            self.staging.check_kind(self.symbol, day, kind)
            w.append(kind, part)
            self.result.add(self.symbol, day, kind, int(b - a))
