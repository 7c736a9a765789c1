# SPDX-License-Identifier: MIT
"""A keyed table model whose rows live in one numpy structured array, not as objects.

For tables of a million rows (the order blotter) a Python object per row costs kilobytes and
seconds: here a row is one record of a structured array (numbers, small codes, interned-string
indices and fixed-width byte strings), found by an integer key through :class:`KeyIndex`.
A :class:`RowCodec` turns records into rows and back; records are rebuilt only for the rows
a view paints (their texts are cached like :class:`~widgets.tables.model.KeyedTableModel`'s).

Updates come as rows (:meth:`ColumnarTableModel.apply_rows`, vectorized: a batch of live
events encoded once, or a bulk load) or as records (:meth:`~ColumnarTableModel.apply`); each
row costs O(1): a key lookup and a copy. Rows are stored oldest first in ``[start, start + n)``
of a buffer that grows by doubling; dropping the oldest advances ``start``, so only a rare
compaction moves rows. The key index holds a row's *global position* (``buffer index + g0``),
which neither dropping nor compaction changes. :class:`SubsetTableModel` shows some rows of a
columnar model (by key) without copying them. The indexes, sets and string pools the models
use are in :mod:`widgets.tables.keys`.
"""

from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter
from typing import Any, Generic, Protocol, TypeVar

import numpy as np
import numpy.typing as npt
from PySide6.QtCore import QModelIndex, QObject

from widgets.tables.columns import Column
from widgets.tables.keys import DENSE_SLACK, KeyIndex, SortedIndex
from widgets.tables.model import (
    _ALIGN,
    _DISPLAY,
    _FOREGROUND,
    _TOOLTIP,
    KeyRole,
    RecordRole,
    RowTableModel,
    _Index,
)

R = TypeVar("R")
Rows = npt.NDArray[np.void]
Ints = npt.NDArray[np.int64]

#: Rows whose texts (and rebuilt record) stay cached: a few screens' worth; each costs 1-2 KB.
#: A live table's top rows are new every batch, so a cache fills and is dropped every second
#: or two: its size is memory's high-water mark, not a saving.
_TEXT_CACHE_ROWS = 256
#: Smallest buffer a model allocates, rows.
_MIN_ROWS = 1024


class RowCodec(Protocol[R]):
    """Turns records into rows of a structured dtype and back.

    ``dtype`` has an int64 field named by ``key_field``; its ``S`` fields (byte strings) widen
    as longer values arrive. ``encode`` returns one row as a tuple in field order; ``decode``
    takes a row as ``ndarray.item()`` returns it. ``forget`` is told the keys of rows that
    left (a codec keeping side tables, such as rare long values, drops theirs).
    """

    dtype: np.dtype[np.void]
    key_field: str

    def key(self, record: R) -> int:
        """Return the key of ``record``."""
        ...

    def encode(self, record: R) -> tuple[Any, ...]:
        """Return ``record`` as a row tuple."""
        ...

    def decode(self, row: tuple[Any, ...]) -> R:
        """Return the record of a row tuple."""
        ...

    def forget(self, keys: Ints) -> None:
        """Drop side data of the rows with ``keys``."""
        ...


def move_persistent_rows(
    model: "ColumnarTableModel[R] | SubsetTableModel[R]",
    old_n: int,
    new_n: int,
    first: int,
    keep: npt.NDArray[np.bool_],
) -> None:
    """Point the model's persistent indexes (selection, current row) at their rows' new places.

    Rows ``first`` and on were filtered by ``keep`` (the rest left), rows before ``first``
    stayed; the model shows ``old_n`` rows before and ``new_n`` after.
    """
    old_list = model.persistentIndexList()
    if not old_list:
        return
    new_of_old = np.full(old_n, -1, np.int64)
    new_of_old[:first] = np.arange(first)
    new_of_old[first:][keep] = np.arange(first, new_n)
    new_list = []
    for idx in old_list:
        old_i = old_n - 1 - idx.row() if model.newest_first else idx.row()
        new_i = int(new_of_old[old_i]) if 0 <= old_i < old_n else -1
        if new_i < 0:
            new_list.append(QModelIndex())
        else:
            row = new_n - 1 - new_i if model.newest_first else new_i
            new_list.append(model.index(row, idx.column()))
    model.changePersistentIndexList(old_list, new_list)


def cell_data(
    model: RowTableModel[R], entry: tuple[tuple[str, ...], R], index: _Index, role: int
) -> Any:
    """Return what ``role`` asks of a cell whose row is ``entry`` (its texts and its record)."""
    if role == _DISPLAY:
        return entry[0][index.column()]
    if role == _ALIGN:
        return model._align[index.column()]
    if role == _FOREGROUND:
        tone = model._tones[index.column()]
        name = tone(entry[1]) if tone is not None else None
        return model.tone_colors.get(name) if name else None
    if role == _TOOLTIP:
        tip = model.columns[index.column()].tooltip
        return tip(entry[1]) if tip else None
    if role == RecordRole:
        return entry[1]
    return None


class ColumnarTableModel(RowTableModel[R], Generic[R]):
    """Keyed rows stored column-wise, with the API of :class:`KeyedTableModel`.

    Parameters
    ----------
    columns : Sequence[Column[R]]
        The columns, in display order; they format records rebuilt by ``codec.decode``.
    codec : RowCodec[R]
        Records to rows and back.
    newest_first : bool
        Show the most recently inserted row at the top (storage stays append-only).
    capacity : int
        Keep at most this many rows, dropping the oldest (0: unbounded).
    sparse_keys : bool
        Keys are few and far apart (engine sequence numbers of the rare events shown): index
        them with a :class:`SortedIndex`, not a :class:`KeyIndex`.
    parent : QObject | None
        Qt parent.
    """

    def __init__(
        self,
        columns: Sequence[Column[R]],
        codec: RowCodec[R],
        *,
        newest_first: bool = False,
        capacity: int = 0,
        sparse_keys: bool = False,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(columns, parent)
        self.codec = codec
        self.newest_first = newest_first
        self.capacity = capacity
        self._dtype: np.dtype[np.void] = codec.dtype
        self._buf: Rows = np.empty(0, self._dtype)
        self._start = 0  # buffer index of the oldest row
        self._n = 0  # rows stored
        self._g0 = 0  # global position of buffer index 0
        self._index: KeyIndex | SortedIndex = SortedIndex() if sparse_keys else KeyIndex()
        self._keys: Ints = self._buf[codec.key_field]
        # Key -> (texts, record) of recently painted rows (keys survive moves and drops).
        self._texts: dict[int, tuple[tuple[str, ...], R]] = {}
        #: Called with copies of rows about to leave through capacity or :meth:`clear`
        #: (a :class:`SubsetTableModel` over this one keeps its members' rows).
        self.leaving: list[Callable[[Rows], None]] = []
        self._set_strings()

    def _set_strings(self) -> None:
        names = self._dtype.names or ()
        self._strings = [
            (n, name, self._dtype[name].itemsize)
            for n, name in enumerate(names)
            if self._dtype[name].kind == "S"
        ]

    # ------------------------------------------------------------------ Qt model API
    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        """Return the number of rows."""
        return 0 if parent.isValid() else self._n

    def data(self, index: _Index, role: int = _DISPLAY) -> Any:
        """Return a cell's text, alignment, colour, tooltip, record or key."""
        if role == KeyRole:
            return int(self._keys[self._buffer_index(index.row())])
        return cell_data(self, self._cached(self._buffer_index(index.row())), index, role)

    # ------------------------------------------------------------------ rows
    def _buffer_index(self, row: int) -> int:
        return self._start + (self._n - 1 - row if self.newest_first else row)

    def _display(self, b: int) -> int:
        i = b - self._start
        return self._n - 1 - i if self.newest_first else i

    def _cached(self, b: int) -> tuple[tuple[str, ...], R]:
        k: int = self._keys.item(b)
        hit = self._texts.get(k)
        if hit is None:
            if len(self._texts) >= _TEXT_CACHE_ROWS:
                self._texts.clear()
            rec = self.codec.decode(self._buf[b].item())
            hit = (tuple(c.text(rec) for c in self.columns), rec)
            self._texts[k] = hit
        return hit

    def paint_row(self, row: int) -> tuple[tuple[str, ...], tuple[Any, ...], bool]:
        """Return what a view paints for display row ``row``: texts, colours, bold (never)."""
        texts, rec = self._cached(self._buffer_index(row))
        colors = self.tone_colors
        tones = tuple(None if tone is None else colors.get(tone(rec) or "") for tone in self._tones)
        return texts, tones, False

    def record(self, row: int) -> R:
        """Return the record shown in display row ``row`` (rebuilt from its row)."""
        return self._cached(self._buffer_index(row))[1]

    def row_tuple(self, row: int) -> tuple[Any, ...]:
        """Return display row ``row`` as stored, a tuple in field order (nothing rebuilt).

        For a filter that reads a few fields of every row: no record, no cached texts.
        """
        t: tuple[Any, ...] = self._buf[self._buffer_index(row)].item()
        return t

    def position(self, key: int) -> int:
        """Return the buffer index of ``key``'s row (for :meth:`field`), or -1."""
        g = self._index.get(key)
        return -1 if g < 0 else g - self._g0

    def positions(self, keys: Ints) -> Ints:
        """Return the buffer index of each key's row (-1 where absent)."""
        g = self._index.get_many(keys)
        return np.where(g >= 0, g - self._g0, -1)

    @property
    def dtype(self) -> np.dtype[np.void]:
        """Return the rows' dtype as stored now (byte strings as wide as needed so far)."""
        return self._dtype

    def field(self, name: str) -> npt.NDArray[Any]:
        """Return the buffer's column ``name`` (index it with :meth:`position`; read only)."""
        return self._buf[name]

    def get(self, key: int) -> R | None:
        """Return the record with ``key``, or ``None``."""
        b = self.position(key)
        return None if b < 0 else self._cached(b)[1]

    def record_of(self, key: int) -> R | None:
        """Return the record with ``key`` rebuilt from its row (not cached), or ``None``."""
        b = self.position(key)
        return None if b < 0 else self.codec.decode(self._buf[b].item())

    def row_of(self, key: int) -> int:
        """Return the display row of ``key``, or -1."""
        b = self.position(key)
        return -1 if b < 0 else self._display(b)

    def records(self) -> list[R]:
        """Return all records in display order (rebuilds every one: for small tables)."""
        decode = self.codec.decode
        out = [decode(t) for t in self.rows().tolist()]
        return out[::-1] if self.newest_first else out

    def rows(self) -> Rows:
        """Return the stored rows, oldest first (a view into the buffer; read only)."""
        return self._buf[self._start : self._start + self._n]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, int) and self._index.get(key) >= 0

    def __len__(self) -> int:
        return self._n

    @property
    def nbytes(self) -> int:
        """Return the bytes rows and index occupy in memory.

        The buffer's rows up to the last one written (those past it are reserved, not
        resident: see :meth:`_reserve`).
        """
        return (self._start + self._n) * self._buf.dtype.itemsize + self._index.nbytes

    @property
    def index_nbytes(self) -> int:
        """Return the bytes of the key index."""
        return self._index.nbytes

    def cell_text(self, row: int, column: int | str) -> str:
        """Return the display text of a cell (by column index or key)."""
        if isinstance(column, str):
            column = self.column_index(column)
        return self._cached(self._buffer_index(row))[0][column]

    # ------------------------------------------------------------------ storage
    def _reserve(self, extra: int) -> None:
        """Make room for ``extra`` more rows after the last one.

        A model with a capacity reserves all of it at once: ``np.empty`` only maps the pages
        (memory grows as rows are written), and the GUI thread never copies the whole table
        to a bigger buffer in the middle of a storm (a 20 MB copy took 40-80 ms here).
        """
        buf, start, n = self._buf, self._start, self._n
        if start + n + extra <= buf.shape[0]:
            return
        roomy = self.capacity and n + extra <= buf.shape[0] - self.capacity // 20
        if roomy or n + extra <= buf.shape[0] // 2:  # room once the dropped rows' space is reused
            buf[:n] = buf[start : start + n]
            self._g0 += start
            self._start = 0
            return
        size = max(2 * (n + extra), _MIN_ROWS)
        if self.capacity and n + extra <= self.capacity:
            size = max(size, self.capacity + self.capacity // 10)
        grown = np.empty(size, self._dtype)
        grown[:n] = buf[start : start + n]
        self._buf, self._g0, self._start = grown, self._g0 + start, 0
        self._keys = grown[self.codec.key_field]

    def _widen(self, widths: dict[str, int]) -> None:
        """Widen byte-string fields to at least ``widths`` (a rare copy of the rows)."""
        descr = []
        for name in self._dtype.names or ():
            t = self._dtype[name]
            if t.kind == "S" and widths.get(name, 0) > t.itemsize:
                # At least double, rounded up to 8 bytes: every widening copies the table, so
                # IDs that grow a digit at a time widen a few times a day, not per digit.
                t = np.dtype(f"S{max(2 * t.itemsize, -(-widths[name] // 8) * 8)}")
            descr.append((name, t))
        dtype: np.dtype[np.void] = np.dtype(descr)
        if dtype == self._dtype:
            return
        old, s, n = self._buf, self._start, self._n
        self._dtype = dtype
        self._buf = np.empty(max(old.shape[0], _MIN_ROWS) if n else 0, dtype)
        self._g0 += s
        self._start = 0
        self._put(slice(0, n), old[s : s + n])
        self._keys = self._buf[self.codec.key_field]
        self._set_strings()

    def _fit_strings(self, rows: Sequence[tuple[Any, ...]]) -> None:
        need: dict[str, int] = {}
        for n, name, width in self._strings:
            longest = max(map(len, map(itemgetter(n), rows)))
            if longest > width:
                need[name] = longest
        if need:
            self._widen(need)

    # ------------------------------------------------------------------ batch updates
    def apply(self, records: Iterable[R], remove: Iterable[int] = ()) -> None:
        """Insert or replace ``records`` and drop the rows of ``remove``, as one update.

        A key appearing several times in ``records`` keeps its last record. Removal wins over
        an insert or update of the same key in the same batch.
        """
        key, encode = self.codec.key, self.codec.encode
        self.apply_encoded([(key(r), encode(r)) for r in records], remove)

    def apply_encoded(
        self,
        items: Sequence[tuple[int, tuple[Any, ...]]],
        remove: Iterable[int] = (),
        positions: Sequence[int] | None = None,
    ) -> None:
        """:meth:`apply` with records already encoded: ``(key, codec.encode(record))`` pairs.

        For a caller feeding several models the same records (encoded once). ``positions``,
        if given, holds each item's :meth:`position` (-1: new), looked up by the caller in
        bulk (:meth:`positions`); keys must then be distinct.
        """
        removed = set(remove)
        gone = {k for k in removed if self._index.get(k) >= 0}
        new: dict[int, tuple[Any, ...]] = {}
        changed: list[tuple[int, tuple[Any, ...]]] = []
        if positions is None:
            get, g0 = self._index.get, self._g0
            positions = [g if g < 0 else g - g0 for g in (get(k) for k, _t in items)]
        for (k, t), b in zip(items, positions, strict=True):
            if removed and k in removed:
                continue
            if b < 0:
                new[k] = t
            else:
                changed.append((b, t))
        if not gone and not new and not changed:
            return
        self.updates += 1
        key_at = (self._dtype.names or ()).index(self.codec.key_field)
        if changed:
            self._fit_strings([t for _b, t in changed])
            buf, texts = self._buf, self._texts
            lo, hi = buf.shape[0], -1
            for b, t in changed:
                buf[b] = t
                texts.pop(t[key_at], None)
                if b < lo:
                    lo = b
                if b > hi:
                    hi = b
            self._emit_changed(lo, hi)
        if gone:
            self._remove_keys(np.fromiter(gone, np.int64, len(gone)))
        if new:
            rows = list(new.values())
            self._fit_strings(rows)
            self._append(np.array(rows, self._dtype))
        self._enforce_capacity()

    def apply_rows(self, rows: Rows, remove: Ints | None = None) -> None:
        """Insert or replace ``rows`` (of ``codec.dtype``, any byte-string widths), vectorized.

        Keys must be distinct within ``rows`` and not in ``remove`` (keys whose rows go), as
        one update. Rows of exactly :attr:`dtype` are copied whole, others field by field.
        """
        gone = np.empty(0, np.int64)
        if remove is not None and remove.shape[0]:
            gone = remove[self._index.get_many(remove) >= 0]
        if not rows.shape[0] and not gone.shape[0]:
            return
        self.updates += 1
        if rows.shape[0]:
            self._fit_widths(rows)
            keys = rows[self.codec.key_field].astype(np.int64, copy=False)
            g = self._index.get_many(keys)
            known = g >= 0
            if known.any():
                b = g[known] - self._g0
                self._put(b, rows[known])
                self._forget_texts(keys[known])
                self._emit_changed(int(b.min()), int(b.max()))
                rows = rows[~known]
            if rows.shape[0]:
                self._append(rows)
        if gone.shape[0]:
            self._remove_keys(gone)
        self._enforce_capacity()

    def _forget_texts(self, keys: Ints) -> None:
        """Drop the cached texts of the rows with ``keys``."""
        texts = self._texts
        if texts:
            for k in keys.tolist():
                texts.pop(k, None)

    def _fit_widths(self, rows: Rows) -> None:
        need = {
            name: rows.dtype[name].itemsize
            for _n, name, width in self._strings
            if name in (rows.dtype.names or ()) and rows.dtype[name].itemsize > width
        }
        if need:
            # Only as wide as the longest value present, not the incoming field's width.
            need = {k: max(1, int(np.char.str_len(rows[k]).max())) for k in need}
            self._widen(need)

    def _put(self, where: slice | Ints, rows: Rows) -> None:
        """Write ``rows`` at buffer indices ``where``, field by field if the widths differ."""
        if rows.dtype == self._dtype:
            self._buf[where] = rows
            return
        # A structured ``astype`` converts row by row; a copy per field is a few times faster.
        buf = self._buf
        for name in self._dtype.names or ():
            buf[name][where] = rows[name]

    def _emit_changed(self, lo: int, hi: int) -> None:
        a, b = self._display(lo), self._display(hi)
        self.dataChanged.emit(
            self.index(min(a, b), 0), self.index(max(a, b), len(self.columns) - 1)
        )

    def _append(self, rows: Rows) -> None:
        k = rows.shape[0]
        self._reserve(k)
        n0 = self._n
        first, last = (0, k - 1) if self.newest_first else (n0, n0 + k - 1)
        self.beginInsertRows(QModelIndex(), first, last)
        b0 = self._start + n0
        self._put(slice(b0, b0 + k), rows)
        self._n += k
        keys = self._keys[b0 : b0 + k]
        self._index.set_many(keys, np.arange(b0, b0 + k, dtype=np.int64) + self._g0)
        self.endInsertRows()

    def _enforce_capacity(self) -> None:
        if self.capacity and self._n > self.capacity:
            # Drop a twentieth more than needed: one removal per many batches, not per batch.
            self._drop_oldest(min(self._n, self._n - self.capacity + self.capacity // 20))

    def _drop_oldest(self, count: int) -> None:
        n, s = self._n, self._start
        for keep_rows in self.leaving:
            keep_rows(self._buf[s : s + count].copy())
        first, last = (n - count, n - 1) if self.newest_first else (0, count - 1)
        self.beginRemoveRows(QModelIndex(), first, last)
        dropped = self._keys[s : s + count].copy()
        self._index.pop_many(dropped)
        self.codec.forget(dropped)
        self._start += count
        self._n -= count
        for k in dropped.tolist() if count < len(self._texts) else ():
            self._texts.pop(k, None)
        if count >= len(self._texts):
            self._texts.clear()
        if self._n:
            self._index.trim_below(int(self._keys[self._start : self._start + self._n].min()))
        self.endRemoveRows()

    def _remove_keys(self, gone: Ints) -> None:
        self.layoutAboutToBeChanged.emit()
        s, old_n, g0 = self._start, self._n, self._g0
        g = self._index.get_many(gone)
        at = g[g >= 0] - g0 - s  # indices into the live rows
        first = int(at.min())
        # Only the rows after the first one removed move up, in place; only they are
        # re-indexed (a working order book loses a few rows per batch out of thousands).
        keep = np.ones(old_n - first, bool)
        keep[at - first] = False
        live = self._buf[s : s + old_n]
        moved = live[first:][keep]
        new_n = first + moved.shape[0]
        live[first:new_n] = moved
        self._index.pop_many(gone)
        self.codec.forget(gone)
        self._n = new_n
        self._index.set_many(
            self._keys[s + first : s + new_n].copy(),
            np.arange(s + first, s + new_n, dtype=np.int64) + g0,
        )
        for k in gone.tolist():
            self._texts.pop(k, None)
        move_persistent_rows(self, old_n, new_n, first, keep)
        self.layoutChanged.emit()

    def clear(self) -> None:
        """Remove every row."""
        for keep_rows in self.leaving:
            keep_rows(self.rows().copy())
        self.beginResetModel()
        self.codec.forget(self.rows()[self.codec.key_field].astype(np.int64))
        self._buf = np.empty(0, self._dtype)
        self._keys = self._buf[self.codec.key_field]
        self._start = self._n = self._g0 = 0
        self._index.clear()
        self._texts.clear()
        self.endResetModel()

    def refresh(self) -> None:
        """Re-render every cell (after a change to how values are formatted)."""
        self._texts.clear()
        if self._n:
            self.dataChanged.emit(self.index(0, 0), self.index(self._n - 1, len(self.columns) - 1))


class SubsetTableModel(RowTableModel[R], Generic[R]):
    """Some rows of a :class:`ColumnarTableModel`, chosen by key, without copying them.

    The "Working" blotter over "All": this model keeps only its members' keys, in insertion
    order, and reads their rows from ``source``. A member whose row leaves ``source`` (its
    capacity) keeps a copy of that row here. Apply a batch to ``source`` first, then tell
    this model which keys it holds now (:meth:`update`).

    Parameters
    ----------
    columns : Sequence[Column[R]]
        The columns, in display order.
    source : ColumnarTableModel[R]
        Where the rows are.
    newest_first : bool
        Show the most recently added member at the top.
    parent : QObject | None
        Qt parent.
    """

    def __init__(
        self,
        columns: Sequence[Column[R]],
        source: ColumnarTableModel[R],
        *,
        newest_first: bool = False,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(columns, parent)
        self.source = source
        self.codec = source.codec
        self.newest_first = newest_first
        self._ids: Ints = np.empty(0, np.int64)
        self._n = 0
        self._index = KeyIndex()  # key -> index into _ids
        # Rows of members that left the source.
        self._kept: ColumnarTableModel[R] = ColumnarTableModel((), source.codec)
        self._texts: dict[int, tuple[tuple[str, ...], R]] = {}
        source.leaving.append(self._keep_rows)

    # ------------------------------------------------------------------ Qt model API
    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        """Return the number of rows."""
        return 0 if parent.isValid() else self._n

    def data(self, index: _Index, role: int = _DISPLAY) -> Any:
        """Return a cell's text, alignment, colour, tooltip, record or key."""
        if role == KeyRole:
            return self._key_at(index.row())
        return cell_data(self, self._cached(self._key_at(index.row())), index, role)

    # ------------------------------------------------------------------ rows
    def _key_at(self, row: int) -> int:
        k: int = self._ids.item(self._n - 1 - row if self.newest_first else row)
        return k

    def _cached(self, key: int) -> tuple[tuple[str, ...], R]:
        hit = self._texts.get(key)
        if hit is None:
            if len(self._texts) >= _TEXT_CACHE_ROWS:
                self._texts.clear()
            rec = self._record_of(key)
            hit = (tuple(c.text(rec) for c in self.columns), rec)
            self._texts[key] = hit
        return hit

    def _record_of(self, key: int) -> R:
        rec = self.source.record_of(key)
        if rec is None:
            rec = self._kept.record_of(key)
        if rec is None:
            raise KeyError(f"member {key} has no row")
        return rec

    def paint_row(self, row: int) -> tuple[tuple[str, ...], tuple[Any, ...], bool]:
        """Return what a view paints for display row ``row``: texts, colours, bold (never)."""
        texts, rec = self._cached(self._key_at(row))
        colors = self.tone_colors
        tones = tuple(None if tone is None else colors.get(tone(rec) or "") for tone in self._tones)
        return texts, tones, False

    def record(self, row: int) -> R:
        """Return the record shown in display row ``row``."""
        return self._cached(self._key_at(row))[1]

    def get(self, key: int) -> R | None:
        """Return the record with ``key`` if it is a member, or ``None``."""
        return self._cached(key)[1] if key in self else None

    def row_of(self, key: int) -> int:
        """Return the display row of ``key``, or -1."""
        i = self._index.get(key)
        if i < 0:
            return -1
        return self._n - 1 - i if self.newest_first else i

    def records(self) -> list[R]:
        """Return all records in display order."""
        return [self._record_of(k) for k in self.keys().tolist()]

    def keys(self) -> Ints:
        """Return the members' keys in display order."""
        ids = self._ids[: self._n]
        return ids[::-1].copy() if self.newest_first else ids.copy()

    def positions(self, keys: Ints) -> Ints:
        """Return each key's index among the members (-1 for non-members)."""
        return self._index.get_many(keys)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, int) and self._index.get(key) >= 0

    def __len__(self) -> int:
        return self._n

    @property
    def nbytes(self) -> int:
        """Return the bytes held by keys, index and kept rows."""
        return int(self._ids.nbytes) + self._index.nbytes + self._kept.nbytes

    def cell_text(self, row: int, column: int | str) -> str:
        """Return the display text of a cell (by column index or key)."""
        if isinstance(column, str):
            column = self.column_index(column)
        return self._cached(self._key_at(row))[0][column]

    # ------------------------------------------------------------------ updates
    def _keep_rows(self, rows: Rows) -> None:
        keys = rows[self.codec.key_field].astype(np.int64)
        mine = self._index.get_many(keys) >= 0
        if mine.any():
            self._kept.apply_rows(rows[mine])

    def update(self, keys: Ints, rows: Rows | None = None, remove: Ints | None = None) -> None:
        """Make ``keys`` members (new ones added in order) and drop ``remove``, as one update.

        The members' rows changed in ``source`` (apply them there first): their cached texts
        go and their cells are repainted. ``rows`` (the keys' rows, in the same order) are
        kept for new members that are not in ``source`` (gone through its capacity in the same
        batch). Keys must be distinct and not in ``remove``.
        """
        gone = np.empty(0, np.int64)
        if remove is not None and remove.shape[0]:
            gone = remove[self._index.get_many(remove) >= 0]
        if not keys.shape[0] and not gone.shape[0]:
            return
        self.updates += 1
        if self._kept._n and keys.shape[0]:
            # A kept row is stale once its key is back in the source, or newer there.
            back = keys[self.source.positions(keys) >= 0]
            if back.shape[0]:
                self._kept.apply_rows(self._kept.rows()[:0], remove=back)
        at = self._index.get_many(keys)
        known = at >= 0
        texts = self._texts
        if texts:
            for k in keys.tolist():
                texts.pop(k, None)
        if known.any():
            a = at[known]
            lo, hi = int(a.min()), int(a.max())
            r0, r1 = (self._n - 1 - hi, self._n - 1 - lo) if self.newest_first else (lo, hi)
            self.dataChanged.emit(self.index(r0, 0), self.index(r1, len(self.columns) - 1))
        new = keys[~known]
        if new.shape[0]:
            if rows is not None:
                missing = self.source.positions(new) < 0
                if missing.any():
                    self._kept.apply_rows(rows[~known][missing])
            self._append(new)
        if gone.shape[0]:
            self._remove(gone)

    def _append(self, new: Ints) -> None:
        k, n0 = new.shape[0], self._n
        if n0 + k > self._ids.shape[0]:
            grown = np.empty(max(2 * (n0 + k), _MIN_ROWS), np.int64)
            grown[:n0] = self._ids[:n0]
            self._ids = grown
        first, last = (0, k - 1) if self.newest_first else (n0, n0 + k - 1)
        self.beginInsertRows(QModelIndex(), first, last)
        self._ids[n0 : n0 + k] = new
        self._n += k
        self._index.set_many(new, np.arange(n0, n0 + k, dtype=np.int64))
        self.endInsertRows()

    def _remove(self, gone: Ints) -> None:
        self.layoutAboutToBeChanged.emit()
        old_n = self._n
        at = self._index.get_many(gone)
        first = int(at.min())
        keep = np.ones(old_n - first, bool)
        keep[at - first] = False
        ids = self._ids[:old_n]
        moved = ids[first:][keep]
        new_n = first + moved.shape[0]
        ids[first:new_n] = moved
        self._n = new_n
        self._index.pop_many(gone)
        self._index.set_many(moved, np.arange(first, new_n, dtype=np.int64))
        # Members come and go all day: keep the index to the keys of the current ones.
        if not new_n:
            self._index.clear()
        elif self._index.span > 4 * new_n + DENSE_SLACK:
            self._index.trim_below(int(ids[:new_n].min()))
        if self._kept._n:
            self._kept.apply_rows(self._kept.rows()[:0], remove=gone)
        self.codec.forget(gone)
        for k in gone.tolist():
            self._texts.pop(k, None)
        move_persistent_rows(self, old_n, new_n, first, keep)
        self.layoutChanged.emit()

    def clear(self) -> None:
        """Remove every member."""
        self.beginResetModel()
        gone = self._ids[: self._n].copy()
        self._ids = np.empty(0, np.int64)
        self._n = 0
        self._index.clear()
        self._kept.clear()
        self.codec.forget(gone)
        self._texts.clear()
        self.endResetModel()

    def refresh(self) -> None:
        """Re-render every cell (after a change to how values are formatted)."""
        self._texts.clear()
        if self._n:
            self.dataChanged.emit(self.index(0, 0), self.index(self._n - 1, len(self.columns) - 1))
