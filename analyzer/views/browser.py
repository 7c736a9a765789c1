# SPDX-License-Identifier: MIT
"""The Analyzer's browser: the instruments and days of the open tick stores (and live rows)."""

from collections.abc import Sequence
from pathlib import Path
from typing import Final

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from analyzer.live import LIVE_PREFIX
from analyzer.source import DayEntry
from widgets.fmt import fmt_ts_utc

BROWSER_COLUMNS: Final[tuple[str, ...]] = (
    "Symbol", "Day", "Quotes", "Trades", "Depth", "From (UTC)", "To (UTC)", "Store",
)  # fmt: skip


def _count(n: int) -> str:
    return f"{n:,}" if n else "—"


def _store_name(store: str) -> str:
    """Return the browser's Store cell: the file's name, or "● live · engine"."""
    if store.startswith(LIVE_PREFIX):
        return f"● live · {store.removeprefix(LIVE_PREFIX)}"
    return Path(store).name


class DayBrowser(QTableWidget):
    """Instruments and days of a tick store with their row counts and time spans.

    Signals
    -------
    open_requested(str, str, str)
        Chart this symbol and day of this store (double click).
    """

    open_requested = Signal(str, str, str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, len(BROWSER_COLUMNS), parent)
        self.setObjectName("analyzerBrowser")
        self.setHorizontalHeaderLabels(list(BROWSER_COLUMNS))
        self.verticalHeader().hide()
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.entries: list[DayEntry] = []
        self.itemDoubleClicked.connect(lambda item: self._open_row(item.row()))

    def add_entries(self, entries: Sequence[DayEntry]) -> None:
        """List ``entries`` too (replacing those of the same store)."""
        stores = {e.store for e in entries}
        before = self.entries
        self.entries = [e for e in self.entries if e.store not in stores] + list(entries)
        self.setRowCount(len(self.entries))
        right = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
        for r, e in enumerate(self.entries):
            if r < len(before) and before[r] == e and self.item(r, 0) is not None:
                continue  # unchanged (live rows are listed again every second)
            depth = e.counts.get("l2", 0) + e.counts.get("mbo", 0)
            cells = (
                (e.symbol, None),
                (f"{e.day[:4]}-{e.day[4:6]}-{e.day[6:]}", None),
                (_count(e.counts.get("bbo", 0)), right),
                (_count(e.counts.get("trades", 0)), right),
                (_count(depth), right),
                (fmt_ts_utc(e.t_first) if e.t_first else "—", right),
                (fmt_ts_utc(e.t_last) if e.t_last else "—", right),
                (_store_name(e.store), None),
            )
            for c, (text, align) in enumerate(cells):
                item = QTableWidgetItem(text)
                if align is not None:
                    item.setTextAlignment(align)
                self.setItem(r, c, item)
        self.resizeColumnsToContents()

    def selected(self) -> list[DayEntry]:
        """Return the selected entries, top to bottom."""
        rows = sorted({i.row() for i in self.selectedIndexes()})
        return [self.entries[r] for r in rows]

    def _open_row(self, row: int) -> None:
        e = self.entries[row]
        self.open_requested.emit(e.symbol, e.day, e.store)
