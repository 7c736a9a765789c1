# SPDX-License-Identifier: MIT
"""A table model whose rows are keyed records, updated in batches.

Each row is one record (an engine event's payload, usually a frozen dataclass) found through a
key (``order_id`` → storage index), so an update is O(1). A batch costs one
``beginInsertRows``/``endInsertRows`` for all new rows, one ``dataChanged`` over the changed
range and, when rows leave, one layout change. Display texts of painted rows are cached and
dropped when a row changes.
"""

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, Generic, TypeVar

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
)
from PySide6.QtGui import QColor, QFont

from widgets.tables.columns import Column

K = TypeVar("K", bound=Hashable)
R = TypeVar("R")
_Index = QModelIndex | QPersistentModelIndex

_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
_LEFT = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
# Plain ints: ``data`` runs for every role of every painted cell, and comparing ints is the
# cheapest way to turn away the roles it does not answer.
_DISPLAY = int(Qt.ItemDataRole.DisplayRole)
_ALIGN = int(Qt.ItemDataRole.TextAlignmentRole)
_FOREGROUND = int(Qt.ItemDataRole.ForegroundRole)
_TOOLTIP = int(Qt.ItemDataRole.ToolTipRole)
_FONT = int(Qt.ItemDataRole.FontRole)

#: Custom role: the record behind a row.
RecordRole = int(Qt.ItemDataRole.UserRole) + 1
#: Custom role: the key of a row.
KeyRole = int(Qt.ItemDataRole.UserRole) + 2

#: Rows whose texts stay cached; the cache is dropped beyond this (a few screens' worth).
_TEXT_CACHE_ROWS = 4096


class RowTableModel(QAbstractTableModel, Generic[R]):
    """What every table model of declared columns shares, whatever stores its rows.

    Columns, header, alignment, tone colours and the bold font live here; a subclass stores the
    rows and answers :meth:`paint_row`, :meth:`record`, :meth:`cell_text` and ``data``. The
    view (:class:`widgets.tables.view.DataTableView`) paints any subclass directly.

    Parameters
    ----------
    columns : Sequence[Column[R]]
        The columns, in display order.
    parent : QObject | None
        Qt parent.
    """

    def __init__(self, columns: Sequence[Column[R]], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.columns: tuple[Column[R], ...] = tuple(columns)
        #: Colour of each tone name; filled by the view from the theme.
        self.tone_colors: dict[str, QColor] = {}
        self._align = tuple(_RIGHT if c.numeric else _LEFT for c in self.columns)
        self._tones = tuple(c.tone for c in self.columns)
        self._bold_font = QFont()
        self._bold_font.setBold(True)
        #: Model updates (batches applied) so far; the benchmark counts them.
        self.updates = 0

    def set_font(self, font: QFont) -> None:
        """Make bold rows use ``font`` (the view's family and size) in bold."""
        self._bold_font = QFont(font)
        self._bold_font.setBold(True)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        """Return the number of columns."""
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = _DISPLAY) -> Any:
        """Return the column titles (and their alignment)."""
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == _DISPLAY:
            return self.columns[section].title
        if role == _TOOLTIP:
            return self.columns[section].title
        if role == _ALIGN:
            return self._align[section]
        return None

    @property
    def alignments(self) -> tuple[int, ...]:
        """Return each column's alignment flags."""
        return self._align

    def column_index(self, key: str) -> int:
        """Return the index of the column named ``key``."""
        for n, c in enumerate(self.columns):
            if c.key == key:
                return n
        raise KeyError(f"no column {key!r}; columns are {[c.key for c in self.columns]}")

    def paint_row(self, row: int) -> tuple[tuple[str, ...], tuple[QColor | None, ...], bool]:
        """Return what a view paints for display row ``row``: texts, colours, bold.

        A colour is ``None`` where the column has no tone (the view's text colour). One call
        per painted row replaces the seven ``data()`` calls per cell a delegate makes.
        """
        raise NotImplementedError

    def record(self, row: int) -> R:
        """Return the record shown in display row ``row``."""
        raise NotImplementedError

    def cell_text(self, row: int, column: int | str) -> str:
        """Return the display text of a cell (by column index or key)."""
        raise NotImplementedError


class KeyedTableModel(RowTableModel[R], Generic[K, R]):
    """Rows of records of type ``R`` keyed by ``key(record)``, with declared columns.

    Parameters
    ----------
    columns : Sequence[Column[R]]
        The columns, in display order.
    key : Callable[[R], K]
        The key of a record; a record with a known key replaces the row in place.
    newest_first : bool
        Show the most recently inserted row at the top (storage stays append-only).
    capacity : int
        Keep at most this many rows, dropping the oldest (0: unbounded).
    bold : Callable[[R], bool] | None
        Rows for which this is true are drawn in bold (totals).
    parent : QObject | None
        Qt parent.
    """

    def __init__(
        self,
        columns: Sequence[Column[R]],
        key: Callable[[R], K],
        *,
        newest_first: bool = False,
        capacity: int = 0,
        bold: Callable[[R], bool] | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(columns, parent)
        self.key = key
        self.newest_first = newest_first
        self.capacity = capacity
        self._rows: list[R] = []
        self._keys: list[K] = []
        # Key -> position counted from the first row ever stored; the storage index is that
        # minus ``_base`` (the rows dropped from the front), so dropping the oldest rows
        # touches only their own keys.
        self._index: dict[K, int] = {}
        self._base = 0
        self._texts: dict[int, tuple[str, ...]] = {}
        self._bold = bold

    # ------------------------------------------------------------------ Qt model API
    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        """Return the number of rows."""
        return 0 if parent.isValid() else len(self._rows)

    def data(self, index: _Index, role: int = _DISPLAY) -> Any:
        """Return a cell's text, alignment, colour, tooltip, record or key."""
        if role == _DISPLAY:
            return self._row_texts(self._storage(index.row()))[index.column()]
        if role == _ALIGN:
            return self._align[index.column()]
        if role == _FOREGROUND:
            tone = self._tones[index.column()]
            if tone is None:
                return None
            name = tone(self._rows[self._storage(index.row())])
            return self.tone_colors.get(name) if name else None
        if role == _FONT:
            if self._bold is not None and self._bold(self._rows[self._storage(index.row())]):
                return self._bold_font
            return None
        if role == _TOOLTIP:
            tip = self.columns[index.column()].tooltip
            return tip(self._rows[self._storage(index.row())]) if tip else None
        if role == RecordRole:
            return self._rows[self._storage(index.row())]
        if role == KeyRole:
            return self._keys[self._storage(index.row())]
        return None

    # ------------------------------------------------------------------ rows
    def _storage(self, row: int) -> int:
        return len(self._rows) - 1 - row if self.newest_first else row

    def _display(self, i: int) -> int:
        return len(self._rows) - 1 - i if self.newest_first else i

    def _row_texts(self, i: int) -> tuple[str, ...]:
        texts = self._texts.get(i)
        if texts is None:
            if len(self._texts) >= _TEXT_CACHE_ROWS:
                self._texts.clear()
            rec = self._rows[i]
            texts = tuple(c.text(rec) for c in self.columns)
            self._texts[i] = texts
        return texts

    def paint_row(self, row: int) -> tuple[tuple[str, ...], tuple[QColor | None, ...], bool]:
        """Return what a view paints for display row ``row``: texts, colours, bold.

        A colour is ``None`` where the column has no tone (the view's text colour). One call
        per painted row replaces the seven ``data()`` calls per cell a delegate makes.
        """
        i = self._storage(row)
        rec = self._rows[i]
        colors = self.tone_colors
        tones = tuple(None if tone is None else colors.get(tone(rec) or "") for tone in self._tones)
        return self._row_texts(i), tones, self._bold is not None and self._bold(rec)

    def record(self, row: int) -> R:
        """Return the record shown in display row ``row``."""
        return self._rows[self._storage(row)]

    def get(self, key: K) -> R | None:
        """Return the record with ``key``, or ``None``."""
        i = self._index.get(key)
        return None if i is None else self._rows[i - self._base]

    def row_of(self, key: K) -> int:
        """Return the display row of ``key``, or -1."""
        i = self._index.get(key)
        return -1 if i is None else self._display(i - self._base)

    def records(self) -> list[R]:
        """Return all records in display order."""
        return self._rows[::-1] if self.newest_first else list(self._rows)

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def __len__(self) -> int:
        return len(self._rows)

    def cell_text(self, row: int, column: int | str) -> str:
        """Return the display text of a cell (by column index or key)."""
        if isinstance(column, str):
            column = self.column_index(column)
        return self._row_texts(self._storage(row))[column]

    # ------------------------------------------------------------------ batch updates
    def apply(self, records: Iterable[R], remove: Iterable[K] = ()) -> None:
        """Insert or replace ``records`` and drop the rows of ``remove``, as one update.

        A key appearing several times in ``records`` keeps its last record. Removal wins over
        an insert or update of the same key in the same batch.
        """
        removed = set(remove)
        gone = {k for k in removed if k in self._index}
        new: dict[K, R] = {}
        lo, hi = len(self._rows), -1
        index, rows, key, base = self._index, self._rows, self.key, self._base
        texts = self._texts
        for rec in records:
            k = key(rec)
            i = index.get(k)
            if i is None:
                new[k] = rec
            else:
                i -= base
                rows[i] = rec
                texts.pop(i, None)
                lo = min(lo, i)
                hi = max(hi, i)
        for k in removed:
            new.pop(k, None)
        if not gone and not new and hi < 0:
            return
        self.updates += 1
        if hi >= 0:
            a, b = self._display(lo), self._display(hi)
            self.dataChanged.emit(
                self.index(min(a, b), 0), self.index(max(a, b), len(self.columns) - 1)
            )
        if gone:
            self._remove_keys(gone)
        if new:
            self._insert(list(new.items()))
        if self.capacity and len(self._rows) > self.capacity:
            # Drop a twentieth more than needed: one removal per many batches, not per batch.
            self._drop_oldest(len(self._rows) - self.capacity + self.capacity // 20)

    def _insert(self, items: list[tuple[K, R]]) -> None:
        n0, n = len(self._rows), len(items)
        first, last = (0, n - 1) if self.newest_first else (n0, n0 + n - 1)
        self.beginInsertRows(QModelIndex(), first, last)
        for k, rec in items:
            self._index[k] = len(self._rows) + self._base
            self._rows.append(rec)
            self._keys.append(k)
        self.endInsertRows()

    def _drop_oldest(self, count: int) -> None:
        n = len(self._rows)
        first, last = (n - count, n - 1) if self.newest_first else (0, count - 1)
        self.beginRemoveRows(QModelIndex(), first, last)
        index = self._index
        for k in self._keys[:count]:
            del index[k]
        del self._rows[:count]
        del self._keys[:count]
        self._base += count
        self._texts.clear()
        self.endRemoveRows()

    def _remove_keys(self, gone: set[K]) -> None:
        self.layoutAboutToBeChanged.emit()
        old_n = len(self._rows)
        keep = [i for i, k in enumerate(self._keys) if k not in gone]
        new_of_old = {old: new for new, old in enumerate(keep)}
        self._rows = [self._rows[i] for i in keep]
        self._keys = [self._keys[i] for i in keep]
        self._index = {k: i for i, k in enumerate(self._keys)}
        self._base = 0
        self._texts.clear()
        new_n = len(self._rows)
        old_list = self.persistentIndexList()
        new_list = []
        for idx in old_list:
            old_i = old_n - 1 - idx.row() if self.newest_first else idx.row()
            new_i = new_of_old.get(old_i)
            if new_i is None:
                new_list.append(QModelIndex())
            else:
                row = new_n - 1 - new_i if self.newest_first else new_i
                new_list.append(self.index(row, idx.column()))
        self.changePersistentIndexList(old_list, new_list)
        self.layoutChanged.emit()

    def clear(self) -> None:
        """Remove every row."""
        self.beginResetModel()
        self._rows.clear()
        self._keys.clear()
        self._index.clear()
        self._base = 0
        self._texts.clear()
        self.endResetModel()

    def refresh(self) -> None:
        """Re-render every cell (after a change to how values are formatted)."""
        self._texts.clear()
        if self._rows:
            self.dataChanged.emit(
                self.index(0, 0), self.index(len(self._rows) - 1, len(self.columns) - 1)
            )
