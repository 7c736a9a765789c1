# SPDX-License-Identifier: MIT
"""The HDF5 tick store: one file, a group per instrument and UTC day, a dataset per kind.

Layout (schema version :data:`engine.tickstore.schema.SCHEMA_VERSION`, ``docs/tickstore.md``)::

    /                         attrs: format, schema_version
    /<symbol key>/            attrs: symbol (the real name; "/" and "%" are %-escaped in the key)
    /<symbol key>/<YYYYMMDD>/ attrs: symbol, day, tick_size, lot_size, venue
        trades | bbo | l2 | mbo | l2_snap   1-D chunked datasets of the schema's row types

Every dataset is sorted by ``ts`` and compressed with Blosc-lz4 + shuffle; next to it,
``<kind>.chunk_ts`` holds the first ``ts`` of each chunk (the chunk index). A
:class:`TickStore` opened for reading finds the bounds of a time range in that index (one
chunk decompressed per bound), or, in a file without it, by bisecting the on-disk ``ts``
column (no full column load). It reads the stored chunks raw and decompresses them straight
into the result, in several threads while cores are idle, and iterates in chunks of bounded
size. A :class:`DayWriter` appends in batches, keeps the chunk index, and checks every batch
(row type, ``ts`` order, day) before anything reaches the file. A store opened with
``swmr=True`` for writing is readable by other processes while it grows (HDF5
single-writer/multiple-reader): readers open it with ``TickStore(path)`` (SWMR reading,
without the file lock, so that a writer may open the file while it is read) and call
:meth:`refresh` to see rows appended since; instrument-days created since appear after
reopening.

The store's parts, one per module: :mod:`engine.tickstore.days` (names, days, constants,
:class:`~engine.tickstore.days.DayInfo`, :class:`~engine.tickstore.days.TickStoreError`),
:mod:`engine.tickstore.hdf5` (Blosc, SWMR reading, truncation checks),
:mod:`engine.tickstore.chunks` (range reads, raw chunks, the decompressing threads),
:mod:`engine.tickstore.writer` (:class:`~engine.tickstore.writer.DayWriter`); this module
holds :class:`TickStore`, the file.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from types import TracebackType
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar

import h5py
import numpy as np
import numpy.typing as npt

from engine.fastlog import get_log
from engine.tickstore.chunks import ChunkReader, RawFile, bisect_ts
from engine.tickstore.days import (
    ALL_KINDS,
    CHUNK_CACHE_BYTES,
    CHUNK_ROWS,
    FORMAT_NAME,
    INDEX_SUFFIX,
    DayInfo,
    TickStoreError,
    check_decimal,
    day_of,
    day_start_ns,
    kind_dtype,
    symbol_key,
)
from engine.tickstore.hdf5 import open_swmr_read, truncation
from engine.tickstore.schema import L2_SNAPSHOT_KIND, SCHEMA_VERSION
from engine.tickstore.writer import DayWriter

log = get_log(__name__)
Rows = npt.NDArray[np.void]
_P = ParamSpec("_P")
_R = TypeVar("_R")


def _reads(
    method: Callable[Concatenate[TickStore, _P], _R],
) -> Callable[Concatenate[TickStore, _P], _R]:
    """Turn HDF5's errors in a read of a damaged file into :class:`TickStoreError`."""

    @functools.wraps(method)
    def wrapper(self: TickStore, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except (OSError, RuntimeError) as e:
            raise self._damaged(e) from e
        except KeyError as e:  # h5py's, when an object's header cannot be read
            if str(e.args[0] if e.args else "").startswith("Unable to") or truncation(self.path):
                raise self._damaged(e) from e
            raise

    return wrapper


class TickStore:
    """An HDF5 tick-store file.

    Parameters
    ----------
    path : str | Path
        The file.
    mode : "r" | "a"
        ``"r"`` reads (also a file another process is writing with SWMR); ``"a"`` reads and
        writes, creating the file if needed.
    swmr : bool
        With ``mode="a"``: switch the file to SWMR writing once opened, so that readers in
        other processes can follow it while it grows (and a killed writer leaves a readable
        file). New instrument-days are created before the switch or through :meth:`writer`.
    chunk_rows : int
        Rows per chunk of datasets created through this store.
    """

    def __init__(
        self,
        path: str | Path,
        mode: Literal["r", "a"] = "r",
        *,
        swmr: bool = False,
        chunk_rows: int = CHUNK_ROWS,
    ) -> None:
        if mode not in ("r", "a"):
            raise ValueError(f"mode: must be 'r' or 'a', got {mode!r}")
        if chunk_rows < 1:
            raise ValueError(f"chunk_rows: must be >= 1, got {chunk_rows}")
        self.path = Path(path)
        self.mode = mode
        self.chunk_rows = chunk_rows
        self._swmr_read = False
        self._writers: list[DayWriter] = []
        self._indexes: dict[str, npt.NDArray[np.int64]] = {}
        self._blosc_datasets: dict[str, bool] = {}
        self.file = self._open(swmr)
        self._raw: RawFile | None = None
        if mode == "r":
            try:
                userblock = int(self.file.id.get_create_plist().get_userblock())
                self._raw = RawFile(self.path, userblock)
            except OSError:  # HDF5 has it open: its own reads still work
                self._raw = None

    def _open(self, swmr: bool) -> h5py.File:
        cache: dict[str, Any] = {"rdcc_nbytes": CHUNK_CACHE_BYTES, "rdcc_nslots": 10007}
        if self.mode == "r":
            return self._open_read(cache)
        new = not self.path.exists() or self.path.stat().st_size == 0
        try:
            f = h5py.File(self.path, "a", libver="latest", **cache)
        except OSError as e:
            hint = ""
            if "already open for write" in str(e):
                hint = (
                    " (a writer was killed: run TickStore.recover(path) or "
                    "'qwconsole import recover PATH')"
                )
            elif "unable to lock file" in str(e):
                hint = " (another process is writing it)"
            elif (cut := truncation(self.path)) is not None:
                raise TickStoreError(f"{self.path}: damaged file ({cut})") from e
            raise TickStoreError(f"{self.path}: cannot open for writing ({e}){hint}") from e
        if new:
            f.attrs["format"] = FORMAT_NAME
            f.attrs["schema_version"] = SCHEMA_VERSION
        else:
            self._check_format(f)
        if swmr:
            f.swmr_mode = True
        return f

    def _open_read(self, cache: dict[str, Any]) -> h5py.File:
        if not self.path.exists():
            raise TickStoreError(f"{self.path}: no such tick store")
        try:
            # SWMR reading without the file lock: a recorder or an import may open the file
            # for writing while it is read (they write SWMR-safely).
            f = open_swmr_read(self.path, cache)
            self._swmr_read = True
        except OSError:
            try:
                f = h5py.File(self.path, "r", **cache)  # an older-format HDF5 file
            except OSError as e:
                if "unable to lock file" in str(e):
                    raise TickStoreError(
                        f"{self.path}: another process is writing it (not in SWMR mode); "
                        "open it when that is done"
                    ) from e
                raise self._damaged(e, "not a readable HDF5 file") from e
        try:
            self._check_format(f)
        except (OSError, RuntimeError, KeyError) as e:
            f.close()
            raise self._damaged(e) from e
        return f

    def _damaged(self, error: BaseException, what: str = "damaged file") -> TickStoreError:
        """Return the error for a store HDF5 failed to read: truncated, or HDF5's reason."""
        cut = truncation(self.path)
        if cut is not None:
            return TickStoreError(f"{self.path}: damaged file ({cut})")
        if isinstance(error, TickStoreError):
            return error
        text = str(error)
        reason = text[text.find("(") + 1 : text.rfind(")")] if text.endswith(")") else text
        return TickStoreError(f"{self.path}: {what} (HDF5: {reason})")

    def _check_format(self, f: h5py.File) -> None:
        if f.attrs.get("format") != FORMAT_NAME:
            f.close()
            raise TickStoreError(f"{self.path}: not a tick store (no format={FORMAT_NAME!r})")
        version = int(f.attrs.get("schema_version", -1))
        if version != SCHEMA_VERSION:
            f.close()
            raise TickStoreError(
                f"{self.path}: schema version {version}, this build reads {SCHEMA_VERSION}"
            )

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> TickStore:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Flush open writers and close the file."""
        if self.file.id.valid:
            for w in self._writers:
                w.close()
            self.file.close()
        if self._raw is not None:
            self._raw.close()
            self._raw = None

    def flush(self) -> None:
        """Push everything written so far to disk (readers see it after :meth:`refresh`)."""
        if self.mode == "a":
            self.file.flush()

    @_reads
    def refresh(self) -> None:
        """See rows a SWMR writer appended since the file was opened.

        Instrument-days created after the file was opened appear after reopening it.
        """
        self._indexes.clear()
        if self._swmr_read:
            for sym in self.file.values():
                for day in sym.values():
                    for ds in day.values():
                        ds.refresh()

    @staticmethod
    def recover(path: str | Path) -> int:
        """Make the file of a killed SWMR writer writable again; return its instrument-days.

        HDF5 marks a file open for SWMR writing in its superblock; a killed writer leaves the
        mark, which refuses further writers. The file is read (it is consistent) and copied
        into a fresh file that replaces it atomically.
        """
        src_path = Path(path)
        tmp = src_path.with_name(src_path.name + ".recover.tmp")
        tmp.unlink(missing_ok=True)
        copied = 0
        cache: dict[str, Any] = {"rdcc_nbytes": CHUNK_CACHE_BYTES, "rdcc_nslots": 10007}
        cut = truncation(src_path)
        if cut is not None:  # HDF5 would copy the missing chunks as zeros, without a word
            raise TickStoreError(f"{src_path}: cannot be recovered ({cut})")
        try:
            with (
                open_swmr_read(src_path, cache) as src,
                h5py.File(tmp, "w", libver="latest") as dst,
            ):
                for k, v in src.attrs.items():
                    dst.attrs[k] = v
                for name in src:
                    src.copy(src[name], dst, name=name)
                    copied += len(src[name])
        except (OSError, RuntimeError, KeyError) as e:
            tmp.unlink(missing_ok=True)
            if not src_path.exists():
                raise TickStoreError(f"{src_path}: no such tick store") from e
            cut = truncation(src_path)
            text = str(e.args[0] if isinstance(e, KeyError) and e.args else e)
            reason = cut or f"HDF5: {text[text.find('(') + 1 : text.rfind(')')] or text}"
            raise TickStoreError(f"{src_path}: cannot be recovered ({reason})") from e
        tmp.replace(src_path)
        return copied

    # ------------------------------------------------------------------ catalogue
    @_reads
    def instruments(self) -> list[str]:
        """Return the symbols with at least one stored day, sorted."""
        return sorted(
            str(g.attrs.get("symbol", k))
            for k, g in self.file.items()
            if any(len(d) == 8 and d.isdigit() for d in g)
        )

    @_reads
    def days(self, symbol: str) -> list[str]:
        """Return the days (``YYYYMMDD``, ascending) stored for ``symbol`` ([] if none)."""
        key = symbol_key(symbol)
        if key not in self.file:
            return []
        return sorted(k for k in self.file[key] if len(k) == 8 and k.isdigit())

    def _day(self, symbol: str, day: str) -> h5py.Group:
        key = symbol_key(symbol)
        if key not in self.file or day not in self.file[key]:
            raise KeyError(f"{symbol}/{day}: not in {self.path}")
        g: h5py.Group = self.file[key][day]
        return g

    @_reads
    def kinds(self, symbol: str, day: str) -> list[str]:
        """Return the kinds stored for one instrument-day."""
        return [k for k in ALL_KINDS if k in self._day(symbol, day)]

    @_reads
    def increments(self, symbol: str, day: str) -> tuple[str, str]:
        """Return the ``(tick_size, lot_size)`` an instrument-day was stored with (no rows read)."""
        g = self._day(symbol, day)
        return str(g.attrs["tick_size"]), str(g.attrs["lot_size"])

    @_reads
    def info(self, symbol: str, day: str) -> DayInfo:
        """Describe one instrument-day; ``KeyError`` if it is not stored."""
        g = self._day(symbol, day)
        rows: dict[str, int] = {}
        first, last = math.inf, -math.inf
        n_levels = 0
        for kind in ALL_KINDS:
            if kind not in g:
                continue
            ds = g[kind]
            n = int(ds.shape[0])
            rows[kind] = n
            if kind == L2_SNAPSHOT_KIND:
                n_levels = int(ds.attrs["n_levels"])
            if n:
                # the first time from the chunk index when there is one (no chunk to inflate)
                idx = g.get(kind + INDEX_SUFFIX)
                ts = ds.fields("ts")
                first = min(first, int(idx[0]) if idx is not None and idx.shape[0] else int(ts[0]))
                last = max(last, int(ts[n - 1]))
        return DayInfo(
            symbol=symbol,
            day=day,
            tick_size=str(g.attrs["tick_size"]),
            lot_size=str(g.attrs["lot_size"]),
            venue=str(g.attrs["venue"]),
            rows=rows,
            first_ts=0 if first == math.inf else int(first),
            last_ts=0 if last == -math.inf else int(last),
            n_levels=n_levels,
        )

    # ---------------------------------------------------------------------- reads
    def _dataset(self, symbol: str, day: str, kind: str) -> h5py.Dataset | None:
        if kind not in ALL_KINDS:
            raise ValueError(f"kind: {kind!r} is not one of {', '.join(ALL_KINDS)}")
        g = self._day(symbol, day)
        ds: h5py.Dataset | None = g.get(kind)
        return ds

    @_reads
    def dtype(self, symbol: str, day: str, kind: str) -> np.dtype[np.void]:
        """Return the row type of ``kind`` in one instrument-day."""
        ds = self._dataset(symbol, day, kind)
        if ds is None:
            return kind_dtype(kind, 1)
        dt: np.dtype[np.void] = np.dtype(ds.dtype)
        return dt

    def _index(self, ds: h5py.Dataset, n: int) -> npt.NDArray[np.int64]:
        """Return the first ``ts`` of each chunk of ``ds`` that holds rows of the first ``n``.

        Empty when the file has no usable index for ``ds`` (written before it existed). It
        may cover fewer chunks: a writer of an older version appended. A store opened for
        reading keeps each index it loaded (entries never change; a longer one is loaded
        when the dataset has grown past it, and :meth:`refresh` drops them).
        """
        rows = ds.chunks[0] if ds.chunks else 0
        need = -(-n // rows) if rows else 0
        got = self._indexes.get(ds.name)
        if got is None or got.shape[0] < need:
            got = np.empty(0, np.int64)
            idx = ds.parent.get(ds.name.rsplit("/", 1)[-1] + INDEX_SUFFIX)
            usable = isinstance(idx, h5py.Dataset) and idx.dtype == np.int64 and rows > 0
            if usable and int(idx.attrs.get("chunk_rows", 0)) == rows:
                got = idx[:]
            if self.mode == "r":
                self._indexes[ds.name] = got
        return got[:need]

    def _reader(self, ds: h5py.Dataset) -> ChunkReader | None:
        blosc = self._blosc_datasets.get(ds.name)
        reader = ChunkReader.of(ds, self._raw) if blosc is None or blosc else None
        if self.mode == "r":
            self._blosc_datasets[ds.name] = reader is not None
        return reader

    def _locate(
        self, ds: h5py.Dataset, t0: int | None, t1: int | None
    ) -> tuple[int, int, ChunkReader | None]:
        n = int(ds.shape[0])
        reader = self._reader(ds)
        index = self._index(ds, n) if reader is not None else np.empty(0, np.int64)
        if reader is None or index.shape[0] == 0:
            i0 = 0 if t0 is None else bisect_ts(ds, t0, 0, n)
            i1 = n if t1 is None else bisect_ts(ds, t1, i0, n)
        else:
            i0 = 0 if t0 is None else reader.find(t0, index, n)
            i1 = n if t1 is None else reader.find(t1, index, n)
        return i0, max(i0, i1), reader

    @_reads
    def row_range(
        self, symbol: str, day: str, kind: str, t0: int | None = None, t1: int | None = None
    ) -> tuple[int, int]:
        """Return the rows ``[i0, i1)`` of ``kind`` with ``t0 <= ts < t1``.

        The bounds come from the chunk index (one chunk decompressed per bound), or by
        bisecting the ``ts`` column on disk in a file without one.
        """
        ds = self._dataset(symbol, day, kind)
        if ds is None:
            return 0, 0
        i0, i1, _ = self._locate(ds, t0, t1)
        return i0, i1

    @_reads
    def read(
        self,
        symbol: str,
        day: str,
        kind: str,
        t0: int | None = None,
        t1: int | None = None,
        *,
        out: Rows | None = None,
    ) -> Rows:
        """Return the rows of ``kind`` with ``t0 <= ts < t1`` (all rows by default).

        A kind the day does not hold gives an empty array of its row type. ``out`` (a 1-D
        C-contiguous array of the row type, long enough) receives the rows instead of a new
        array, and the filled part of it is returned: a caller reading many ranges saves the
        page faults of a fresh array each time.
        """
        ds = self._dataset(symbol, day, kind)
        if ds is None:
            return np.empty(0, kind_dtype(kind, 1)) if out is None else out[:0]
        i0, i1, reader = self._locate(ds, t0, t1)
        if out is not None:
            if out.dtype != ds.dtype or out.ndim != 1 or not out.flags.c_contiguous:
                raise ValueError(f"out: must be a 1-D C-contiguous {ds.dtype} array")
            if out.shape[0] < i1 - i0:
                raise ValueError(f"out: holds {out.shape[0]} rows, the range has {i1 - i0}")
        return self._read_rows(ds, i0, i1, out, reader)

    @_reads
    def read_rows(self, symbol: str, day: str, kind: str, i0: int, i1: int) -> Rows:
        """Return rows ``[i0, i1)`` of ``kind`` by position (clipped to the rows there are).

        The bisection of times that :meth:`read` does is skipped: for callers that number
        rows themselves (the Analyzer's pyramid buckets).
        """
        ds = self._dataset(symbol, day, kind)
        if ds is None:
            return np.empty(0, kind_dtype(kind, 1))
        n = int(ds.shape[0])
        i0, i1 = min(max(i0, 0), n), min(max(i1, 0), n)
        return self._read_rows(ds, i0, max(i0, i1), None, self._reader(ds))

    @staticmethod
    def _read_rows(
        ds: h5py.Dataset,
        i0: int,
        i1: int,
        out: Rows | None = None,
        reader: ChunkReader | None = None,
    ) -> Rows:
        dest = np.empty(i1 - i0, ds.dtype) if out is None else out[: i1 - i0]
        if i1 > i0:
            if reader is not None:
                reader.read(i0, i1, dest)
            else:
                ds.read_direct(dest, np.s_[i0:i1])
        return dest

    def iter_chunks(
        self,
        symbol: str,
        day: str,
        kind: str,
        t0: int | None = None,
        t1: int | None = None,
        rows: int = 1 << 20,
    ) -> Iterator[Rows]:
        """Yield the rows of :meth:`read` as arrays of at most ``rows`` rows, in order."""
        if rows < 1:
            raise ValueError(f"rows: must be >= 1, got {rows}")
        try:
            ds = self._dataset(symbol, day, kind)
            if ds is None:
                return
            i0, i1, reader = self._locate(ds, t0, t1)
            for a in range(i0, i1, rows):
                part = self._read_rows(ds, a, min(a + rows, i1), None, reader)
                yield part
        except (OSError, RuntimeError) as e:
            raise self._damaged(e) from e

    # --------------------------------------------------------------------- writes
    def writer(
        self,
        symbol: str,
        day: str,
        *,
        tick_size: str,
        lot_size: str,
        venue: str = "",
        n_levels: int = 0,
        batch_rows: int | None = None,
    ) -> DayWriter:
        """Return a writer appending to ``symbol``'s ``day`` (created if missing).

        ``tick_size`` and ``lot_size`` are decimal text (price = px * tick_size); an existing
        day must have the same ones. ``n_levels`` is the depth of ``l2_snap`` rows, if any.
        """
        if self.mode != "a":
            raise TickStoreError(f"{self.path}: opened read-only")
        check_decimal("tick_size", tick_size)
        check_decimal("lot_size", lot_size)
        day_start_ns(day)
        key = symbol_key(symbol)
        sym = self.file.require_group(key)
        sym.attrs["symbol"] = symbol
        if day in sym:
            g = sym[day]
            for name, want in (("tick_size", tick_size), ("lot_size", lot_size)):
                have = str(g.attrs[name])
                if Decimal(have) != Decimal(want):
                    raise ValueError(f"{symbol}/{day}: {name} is {have} in the store, not {want}")
            if L2_SNAPSHOT_KIND in g:
                stored = int(g[L2_SNAPSHOT_KIND].attrs["n_levels"])
                if n_levels and n_levels != stored:
                    raise ValueError(f"{symbol}/{day}: l2_snap has {stored} levels, not {n_levels}")
                n_levels = stored
        else:
            g = sym.create_group(day)
            g.attrs.update(
                {
                    "symbol": symbol,
                    "day": day,
                    "tick_size": tick_size,
                    "lot_size": lot_size,
                    "venue": venue,
                }
            )
        w = DayWriter(self, g, n_levels, batch_rows or self.chunk_rows)
        self._writers.append(w)
        return w

    def delete_day(self, symbol: str, day: str) -> None:
        """Remove one instrument-day (its space is reused by later writes, not returned)."""
        g = self._day(symbol, day)
        parent = g.parent
        del parent[day]
        if len(parent) == 0:
            del self.file[symbol_key(symbol)]


__all__ = [
    "ALL_KINDS",
    "CHUNK_ROWS",
    "DayInfo",
    "DayWriter",
    "TickStore",
    "TickStoreError",
    "day_of",
    "day_start_ns",
    "symbol_key",
]
