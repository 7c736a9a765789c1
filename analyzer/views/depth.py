# SPDX-License-Identifier: MIT
"""The book at the cursor: a depth ladder over one charted instrument, with its caption.

:meth:`DepthPane.depth_at` reads the book of an instrument-day at a time (it runs off the GUI
thread, through :class:`analyzer.views.jobs.Latest`); :meth:`DepthPane.show_depth` shows what
it read. The ladder is the Monitor's :class:`widgets.ladder.LadderModel`, without the columns
of own orders (history has none working at the cursor).
"""

import math
from decimal import Decimal

from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHeaderView,
    QLabel,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from analyzer.dataset import Depth, InstrumentDay
from analyzer.views.timeaxis import NS, format_ns, zone
from engine.events import DepthChanged, InstrumentAdded
from widgets.ladder import LadderModel
from widgets.monitor.formats import InstrumentFormats


def _decimal(x: float) -> str:
    """Return a tick or lot size as the decimal text the formats read (1e-08 -> 0.00000001)."""
    return format(Decimal(repr(x)).normalize(), "f")


class DepthPane(QWidget):
    """The instrument chooser, the ladder of its book at the cursor and a caption.

    Attributes
    ----------
    symbols : QComboBox
        The charted instruments by label; the one shown is the current text.
    model : LadderModel
        The ladder's model.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.formats = InstrumentFormats()
        self.model = LadderModel(self.formats, rows=11, parent=self)
        self.table = QTableView()
        self.table.setObjectName("analyzerLadder")
        self.table.setModel(self.model)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(19)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        for column in (0, 4):  # own orders: history has none working at the cursor
            self.table.setColumnHidden(column, True)
        self.symbols = QComboBox()
        self.symbols.setToolTip("Instrument whose book the ladder shows")
        self.symbols.currentTextChanged.connect(self.model.set_symbol)
        self.caption = QLabel("Book at the cursor")
        self.caption.setProperty("state", "muted")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.symbols)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.caption)

    def add(self, day: InstrumentDay) -> None:
        """Offer ``day`` (by its label), priced with its own tick and lot sizes."""
        self.formats.add(
            InstrumentAdded(
                ts_event=0,
                symbol=day.label,
                tick_size=_decimal(day.source.tick_size),
                lot_size=_decimal(day.source.lot_size),
                multiplier="1",
                currency="",
                venue="",
            )
        )
        self.symbols.addItem(day.label)

    def clear(self) -> None:
        """Forget every instrument (the charts were closed)."""
        self.symbols.clear()
        self.model.set_symbol("")

    @staticmethod
    def depth_at(arg: tuple[InstrumentDay, int]) -> tuple[str, Depth, int]:
        """Return the label, the book (10 levels) and the last trade price (ticks) at a time.

        ``arg`` is ``(day, ts)``. Runs on a worker thread.
        """
        day, ts = arg
        last = day.quote_at(ts)
        tick = day.source.tick_size
        last_ticks = 0 if math.isnan(last.last_px) else round(last.last_px / tick)
        return day.label, day.depth_at(ts, 10), last_ticks

    def show_depth(self, symbol: str, depth: Depth, last: int, tz: str) -> None:
        """Show ``depth`` of ``symbol`` in the ladder, the time in the caption in zone ``tz``."""
        self.model.set_depth(
            DepthChanged(
                ts_event=depth.ts,
                symbol=symbol,
                bids=tuple(depth.bids),
                asks=tuple(depth.asks),
                last_trade_px_ticks=last,
                own=(),
            )
        )
        self.model.centre()
        at = f"{format_ns(depth.ts, zone(tz), 1.0)}.{depth.ts % NS:09d}"[:-3]
        self.caption.setText(f"{symbol} at {at} {tz} · from {depth.source}")
