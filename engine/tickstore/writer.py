# SPDX-License-Identifier: MIT
"""Appending an instrument-day to the tick store: :class:`DayWriter`.

Appends in batches, keeps the chunk index next to each dataset, and checks every batch (row
type, ``ts`` order, day) before anything reaches the file.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Protocol

import h5py
import numpy as np
import numpy.typing as npt

from engine.fastlog import get_log
from engine.tickstore.days import (
    ALL_KINDS,
    DAY_NS,
    INDEX_SUFFIX,
    TickStoreError,
    day_of,
    day_start_ns,
    kind_dtype,
)
from engine.tickstore.hdf5 import compression
from engine.tickstore.schema import L2_SNAPSHOT_KIND
from engine.tickstore.summaries import DaySummary, day_summaries


class DayStore(Protocol):
    """What a day writer needs of its store (:class:`~engine.tickstore.store.TickStore`).

    A protocol, not the class: the store imports this module to make its writers.
    """

    @property
    def path(self) -> Path:
        """The store's file."""
        ...

    @property
    def chunk_rows(self) -> int:
        """Rows per chunk of the datasets it creates."""
        ...

    def flush(self) -> None:
        """Write what is buffered to the file."""
        ...


log = get_log(__name__)
Rows = npt.NDArray[np.void]


class DayWriter:
    """Append rows to one instrument-day group, in batches.

    Rows are buffered per kind and written ``batch_rows`` at a time (and on :meth:`flush`).
    Every :meth:`append` checks the row type, that ``ts`` never decreases (within the batch and
    against what was already appended) and that every ``ts`` falls on the writer's UTC day; a
    bad batch raises ``ValueError`` and nothing of it is kept.
    """

    def __init__(self, store: DayStore, group: h5py.Group, n_levels: int, batch_rows: int):
        self._store = store
        self._group = group
        self.symbol: str = str(group.attrs["symbol"])
        self.day: str = str(group.attrs["day"])
        self._t0 = day_start_ns(self.day)
        self._n_levels = n_levels
        self._batch_rows = batch_rows
        self._pending: dict[str, list[Rows]] = {}
        self._pending_rows: dict[str, int] = {}
        self._last_ts: dict[str, int] = {}
        self._closed = False
        stored: dict[str, int] = {}
        for kind in ALL_KINDS:
            if kind in group:
                ds = group[kind]
                stored[kind] = int(ds.shape[0])
                if ds.shape[0]:
                    self._last_ts[kind] = int(ds.fields("ts")[ds.shape[0] - 1])
        self._summaries: list[DaySummary] = []
        for factory in day_summaries():
            summary = factory(
                store.path,
                self.symbol,
                self.day,
                str(group.attrs["tick_size"]),
                str(group.attrs["lot_size"]),
                stored,
            )
            if summary is not None:
                self._summaries.append(summary)

    def __enter__(self) -> DayWriter:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def dtype(self, kind: str) -> np.dtype[np.void]:
        """Return the row type of ``kind`` in this day."""
        return kind_dtype(kind, self._n_levels)

    def last_ts(self, kind: str) -> int | None:
        """Return the ``ts`` of the last row appended to ``kind`` (``None`` if none yet)."""
        return self._last_ts.get(kind)

    def append(self, kind: str, rows: Rows) -> None:
        """Queue ``rows`` (1-D array of ``kind``'s row type) for writing.

        Raises
        ------
        ValueError
            If the dtype is not the kind's, ``ts`` goes backwards, or a row is off the day;
            the message names the row and the value.
        """
        if self._closed:
            raise TickStoreError(f"{self.symbol}/{self.day}: the writer is closed")
        want = self.dtype(kind)
        if rows.dtype != want:
            raise ValueError(f"{kind}: rows must have dtype {want}, got {rows.dtype}")
        if rows.ndim != 1:
            raise ValueError(f"{kind}: rows must be 1-D, got shape {rows.shape}")
        n = rows.shape[0]
        if n == 0:
            return
        ts = rows["ts"]
        prev = self._last_ts.get(kind)
        if prev is not None and ts[0] < prev:
            raise ValueError(
                f"{self.symbol}/{self.day}/{kind}: row 0 ts {int(ts[0])} is before the last "
                f"stored ts {prev} (rows must be sorted by ts)"
            )
        if n > 1:
            back = np.flatnonzero(ts[1:] < ts[:-1])
            if back.size:
                i = int(back[0]) + 1
                raise ValueError(
                    f"{self.symbol}/{self.day}/{kind}: row {i} ts {int(ts[i])} is before row "
                    f"{i - 1} ts {int(ts[i - 1])} (rows must be sorted by ts)"
                )
        off = np.flatnonzero((ts < self._t0) | (ts >= self._t0 + DAY_NS))
        if off.size:
            i = int(off[0])
            raise ValueError(
                f"{self.symbol}/{self.day}/{kind}: row {i} ts {int(ts[i])} is on day "
                f"{day_of(int(ts[i]))}, not {self.day}"
            )
        self._pending.setdefault(kind, []).append(np.array(rows, copy=True))
        self._pending_rows[kind] = self._pending_rows.get(kind, 0) + n
        self._last_ts[kind] = int(ts[-1])
        if self._pending_rows[kind] >= self._batch_rows:
            self._write(kind)

    def _dataset(self, kind: str) -> h5py.Dataset:
        if kind in self._group:
            ds: h5py.Dataset = self._group[kind]
            return ds
        ds = self._group.create_dataset(
            kind,
            shape=(0,),
            maxshape=(None,),
            dtype=self.dtype(kind),
            chunks=(self._store.chunk_rows,),
            **compression(),
        )
        if kind == L2_SNAPSHOT_KIND:
            ds.attrs["n_levels"] = self._n_levels
        return ds

    def _write(self, kind: str) -> None:
        parts = self._pending.pop(kind, [])
        self._pending_rows.pop(kind, None)
        if not parts:
            return
        rows = parts[0] if len(parts) == 1 else np.concatenate(parts)
        ds = self._dataset(kind)
        n0 = ds.shape[0]
        ds.resize((n0 + rows.shape[0],))
        ds.write_direct(np.ascontiguousarray(rows), dest_sel=np.s_[n0 : n0 + rows.shape[0]])
        self._write_index(kind, ds, n0, rows["ts"])
        for summary in list(self._summaries):
            try:
                summary.append(kind, rows)
            except Exception:  # a cache: the rows are written, the summary is dropped
                log.warning("%s/%s: summary dropped", self.symbol, self.day, exc_info=True)
                self._summaries.remove(summary)

    def _write_index(self, kind: str, ds: h5py.Dataset, n0: int, ts: npt.NDArray[np.int64]) -> None:
        """Append the first ``ts`` of every chunk that rows ``n0 ..`` started to the index.

        The index (``<kind>.chunk_ts``, int64, attribute ``chunk_rows``) lets a range read
        find its bounds without reading chunks. Rows are only ever appended, so an entry never
        changes once written. Entries missing from before (a file written by an older version)
        are read back from the dataset first.
        """
        rows = int(ds.chunks[0])
        name = kind + INDEX_SUFFIX
        idx: h5py.Dataset | None = self._group.get(name)
        if idx is None:
            idx = self._group.create_dataset(
                name, shape=(0,), maxshape=(None,), dtype=np.int64, chunks=(4096,)
            )
            idx.attrs["chunk_rows"] = rows
        elif int(idx.attrs.get("chunk_rows", 0)) != rows:
            return
        have, want = int(idx.shape[0]), -(-(n0 + ts.shape[0]) // rows)
        if want <= have:
            return
        starts = np.arange(have, want, dtype=np.int64) * rows
        first = np.empty(want - have, np.int64)
        mine = starts >= n0
        first[mine] = ts[starts[mine] - n0]
        column = ds.fields("ts")
        for j in np.flatnonzero(~mine):
            first[j] = int(column[int(starts[j])])
        idx.resize((want,))
        idx[have:want] = first

    def flush(self, *, to_disk: bool = True) -> None:
        """Write every queued row; with ``to_disk``, flush the file (readers then see it).

        Several writers of one store may write with ``to_disk=False`` and leave one
        :meth:`TickStore.flush` to the caller.
        """
        for kind in list(self._pending):
            self._write(kind)
        if to_disk:
            self._store.flush()

    def close(self) -> None:
        """Flush and stop accepting rows (the store stays open)."""
        if not self._closed:
            self.flush()
            self._closed = True
            for summary in self._summaries:
                try:
                    summary.close()
                except Exception:  # a cache: the next open builds it from the rows
                    log.warning("%s/%s: summary not kept", self.symbol, self.day, exc_info=True)
            self._summaries.clear()
