# SPDX-License-Identifier: MIT
"""The statistics of the selected span, one column per charted instrument."""

import math
from collections.abc import Sequence
from typing import Final

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from analyzer.stats import RangeStats
from widgets.fmt import fmt_duration_ns


class StatsTable(QTableWidget):
    """Range statistics of the selected span, one column per instrument."""

    ROWS: Final[tuple[str, ...]] = (
        "Span", "Events", "Trades", "Volume", "Buy / sell volume", "VWAP", "Low / high",
        "Quotes", "Spread mean", "Spread min / max",
    )  # fmt: skip

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(len(self.ROWS), 0, parent)
        self.setObjectName("analyzerStats")
        self.setVerticalHeaderLabels(list(self.ROWS))
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)

    def show_stats(
        self,
        stats: Sequence[RangeStats],
        decimals: Sequence[int],
        labels: Sequence[str] = (),
    ) -> None:
        """Fill one column per instrument."""
        self.setColumnCount(len(stats))
        self.setHorizontalHeaderLabels(list(labels) if labels else [s.symbol for s in stats])
        right = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
        for c, (s, d) in enumerate(zip(stats, decimals, strict=True)):

            def px(v: float, d: int = d) -> str:
                return "—" if math.isnan(v) else f"{v:,.{d}f}"

            t = s.trades
            values = (
                fmt_duration_ns(s.t1 - s.t0),
                f"{s.events:,}",
                f"{t.trades:,}",
                f"{t.volume:,.8g}",
                f"{t.buy_volume:,.8g} / {t.sell_volume:,.8g}",
                px(s.vwap),
                f"{px(t.px_lo)} / {px(t.px_hi)}",
                f"{s.spread.quotes:,}",
                px(s.spread_mean) if math.isnan(s.spread_mean) else f"{s.spread_mean:,.{d + 2}f}",
                f"{px(s.spread.lo)} / {px(s.spread.hi)}",
            )
            for r, text in enumerate(values):
                item = QTableWidgetItem(text)
                item.setTextAlignment(right)
                self.setItem(r, c, item)

    def value(self, row: str, column: int = 0) -> str:
        """Return the text of a cell (``row`` by its label)."""
        item = self.item(self.ROWS.index(row), column)
        return item.text() if item is not None else ""
