# SPDX-License-Identifier: MIT
"""The depth ladder: price levels with bid and ask size, own orders and their queue position.

:class:`PriceLadder` follows one instrument's :class:`engine.events.DepthChanged` feed. Each row
is one price tick (highest at the top); the window re-centres only when the touch walks out of
its middle half, so the rows a trader is looking at do not jump on every tick. Own working
orders show at their level with a state glyph and the estimated lots ahead of them.

Click a Bid cell to buy (or an Ask cell to sell) the ticket quantity at that price; click an own
order to cancel it; with an own-order cell selected, Up/Down move that order by one row.

The Volume column adds up the market's trades at each price since the ladder followed the
instrument; the last trade's row shows its quantity too. For instruments whose tick is tiny
against their price (BTC in 0.01 steps showed one level per side) rows can group several ticks:
bids go to the row at or below their price, asks to the row at or above, so a row never shows
a better price than the book has.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QColor, QFont, QKeyEvent
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSpinBox,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from engine.enums import OrdStatus, Side
from engine.events import (
    DepthChanged,
    Event,
    EventRecord,
    InstrumentAdded,
    OwnQuote,
    TradeReported,
)
from widgets.monitor.formats import InstrumentFormats

_Index = QModelIndex | QPersistentModelIndex

COLUMNS = ("My bids", "Bid", "Price", "Ask", "My asks", "Volume")
MY_BIDS, BID, PRICE, ASK, MY_ASKS, VOLUME = range(6)
#: Ticks per row the grouping box offers.
GROUPINGS = (1, 2, 5, 10, 25, 50, 100, 250, 1000)

#: State glyphs of own orders: working, pending new/replace, pending cancel.
GLYPH = {"working": "●", "pending": "◐", "cancel": "✕"}

_BID_BG = QColor(63, 185, 80, 46)
_ASK_BG = QColor(248, 81, 73, 46)
_LAST_BG = QColor(210, 153, 34, 70)
_OWN_BG = QColor(47, 111, 235, 60)


def glyph(quote: OwnQuote) -> str:
    """Return the state glyph of an own order."""
    if quote.pending == "cancel" or quote.status is OrdStatus.PENDING_CANCEL:
        return GLYPH["cancel"]
    if quote.pending or quote.status in (OrdStatus.PENDING_NEW, OrdStatus.PENDING_REPLACE):
        return GLYPH["pending"]
    return GLYPH["working"]


@dataclass
class _Depth:
    bids: dict[int, int] = field(default_factory=dict)
    asks: dict[int, int] = field(default_factory=dict)
    own: dict[tuple[Side, int], list[OwnQuote]] = field(default_factory=dict)
    last_trade: int = 0
    last_qty: int = 0
    volume: dict[int, int] = field(default_factory=dict)  # row price -> lots traded


class LadderModel(QAbstractTableModel):
    """``rows`` price ticks of one instrument, best prices near the middle."""

    def __init__(self, formats: InstrumentFormats, rows: int = 25, parent: Any = None) -> None:
        super().__init__(parent)
        if rows < 5:
            raise ValueError(f"a ladder needs at least 5 rows, got {rows}")
        self.formats = formats
        self.rows = rows
        self.symbol = ""
        self.top_px = 0  # price of row 0
        self.group = 1  # ticks per row
        self._d = _Depth()
        self._raw: DepthChanged | None = None
        self._trades: dict[int, int] = {}  # tick price -> lots traded
        self._last_qty = 0
        self._bold = QFont()
        self._bold.setBold(True)

    # ------------------------------------------------------------------ Qt model
    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        """Return the number of price rows (0 until the first depth arrives)."""
        return 0 if parent.isValid() or not self.symbol else self.rows

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        """Return the number of columns."""
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        """Return the column titles."""
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def px_at(self, row: int) -> int:
        """Return the price in ticks of ``row``."""
        return self.top_px - row * self.group

    def row_px(self, px: int, side: Side | None = None) -> int:
        """Return the row price of a tick price: bids round down, asks (and trades) up."""
        g = self.group
        return px // g * g if side is Side.BUY else -(-px // g) * g

    def own_at(self, row: int, column: int) -> list[OwnQuote]:
        """Return the own orders shown in a cell (own-order columns only)."""
        side = Side.BUY if column == MY_BIDS else Side.SELL if column == MY_ASKS else None
        return [] if side is None else self._d.own.get((side, self.px_at(row)), [])

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """Return text, alignment and colours of a cell."""
        if not index.isValid():
            return None
        row, col = index.row(), index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self._text(row, col)
        if role == Qt.ItemDataRole.TextAlignmentRole:
            if col in (PRICE, VOLUME):
                return int(Qt.AlignmentFlag.AlignCenter)
            left = col in (ASK, MY_ASKS)
            side = Qt.AlignmentFlag.AlignLeft if left else Qt.AlignmentFlag.AlignRight
            return int(side | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.BackgroundRole:
            return self._background(row, col)
        if role == Qt.ItemDataRole.FontRole and col == PRICE:
            return self._bold if self.px_at(row) == self._d.last_trade else None
        if role == Qt.ItemDataRole.ToolTipRole and col in (MY_BIDS, MY_ASKS):
            return self._tooltip(self.own_at(row, col))
        return None

    def _text(self, row: int, col: int) -> str:
        px, d = self.px_at(row), self._d
        if col == PRICE:
            return self.formats.price(self.symbol, px)
        if col in (BID, ASK):
            qty = (d.bids if col == BID else d.asks).get(px, 0)
            return self.formats.qty(self.symbol, qty) if qty else ""
        if col == VOLUME:
            vol = d.volume.get(px, 0)
            text = self.formats.qty(self.symbol, vol) if vol else ""
            if px == d.last_trade and d.last_qty:
                text += f" ◂{self.formats.qty(self.symbol, d.last_qty)}"
            return text
        return self._own_text(self.own_at(row, col))

    def _background(self, row: int, col: int) -> QColor | None:
        px, d = self.px_at(row), self._d
        if col == BID and d.bids.get(px):
            return _BID_BG
        if col == ASK and d.asks.get(px):
            return _ASK_BG
        if col == PRICE and px == d.last_trade:
            return _LAST_BG
        if col in (MY_BIDS, MY_ASKS) and self.own_at(row, col):
            return _OWN_BG
        return None

    def _tooltip(self, quotes: Sequence[OwnQuote]) -> str | None:
        lines = [
            f"order {q.order_id}: {q.status.name.lower().replace('_', ' ')}, "
            f"{q.leaves_qty_lots} lots"
            + (f", ~{q.ahead_lots:,.0f} lots ahead" if q.ahead_lots is not None else "")
            for q in quotes
        ]
        return "\n".join(lines) or None

    def _own_text(self, quotes: Sequence[OwnQuote]) -> str:
        if not quotes:
            return ""
        leaves = sum(q.leaves_qty_lots for q in quotes)
        ahead = [q.ahead_lots for q in quotes if q.ahead_lots is not None]
        text = f"{glyph(quotes[0])}{self.formats.qty(self.symbol, leaves)}"
        if len(quotes) > 1:
            text += f"×{len(quotes)}"
        if ahead:
            text += f" [{min(ahead):,.0f}]"
        return text

    # ------------------------------------------------------------------ updates
    def set_symbol(self, symbol: str) -> None:
        """Follow another instrument (clears the ladder until its depth arrives)."""
        self.beginResetModel()
        self.symbol = symbol
        self._d = _Depth()
        self._raw = None
        self._trades = {}
        self._last_qty = 0
        self.top_px = 0
        self.endResetModel()

    def set_group(self, ticks: int) -> None:
        """Show ``ticks`` price ticks per row (1: every tick)."""
        if ticks < 1:
            raise ValueError(f"ticks per row must be >= 1, got {ticks}")
        self.group = ticks
        self.top_px = 0
        if self._raw is not None:
            self.set_depth(self._raw)  # the first depth at this grouping: a model reset
        else:
            self.beginResetModel()
            self.endResetModel()

    def add_trade(self, px_ticks: int, qty_lots: int) -> None:
        """Count a market trade of the followed instrument (shown with the next depth)."""
        self._trades[px_ticks] = self._trades.get(px_ticks, 0) + qty_lots
        self._last_qty = qty_lots

    def set_depth(self, ev: DepthChanged) -> None:
        """Show a depth event of the followed instrument."""
        if ev.symbol != self.symbol:
            return
        self._raw = ev
        d = _Depth(last_trade=self.row_px(ev.last_trade_px_ticks), last_qty=self._last_qty)
        for px, qty in ev.bids:
            r = self.row_px(px, Side.BUY)
            d.bids[r] = d.bids.get(r, 0) + qty
        for px, qty in ev.asks:
            r = self.row_px(px, Side.SELL)
            d.asks[r] = d.asks.get(r, 0) + qty
        for px, qty in self._trades.items():
            r = self.row_px(px)
            d.volume[r] = d.volume.get(r, 0) + qty
        for q in ev.own:
            d.own.setdefault((q.side, self.row_px(q.px_ticks, q.side)), []).append(q)
        first = self.top_px == 0
        self._d = d
        self._recentre(force=first)
        if first:
            self.beginResetModel()
            self.endResetModel()
        else:
            self.dataChanged.emit(self.index(0, 0), self.index(self.rows - 1, len(COLUMNS) - 1))

    def centre(self) -> None:
        """Put the touch in the middle of the ladder now."""
        self._recentre(force=True)
        self.dataChanged.emit(self.index(0, 0), self.index(self.rows - 1, len(COLUMNS) - 1))

    def _recentre(self, *, force: bool) -> None:
        d = self._d
        best_bid = max(d.bids) if d.bids else None
        best_ask = min(d.asks) if d.asks else None
        if best_bid is None and best_ask is None:
            mid = d.last_trade
        elif best_bid is None or best_ask is None:
            mid = best_bid if best_bid is not None else best_ask  # type: ignore[assignment]
        else:
            mid = (best_bid + best_ask) // 2
        if not mid:
            return
        g = self.group
        mid = mid // g * g
        quarter = self.rows // 4
        row_of_mid = (self.top_px - mid) // g
        if force or not quarter <= row_of_mid < self.rows - quarter:
            self.top_px = mid + self.rows // 2 * g


class _LadderTable(QTableView):
    """The ladder's table: Up/Down move the selected own order instead of the cursor."""

    move_key = Signal(int)  # +1 up a tick, -1 down

    def keyPressEvent(self, event: QKeyEvent) -> None:
        """Turn Up/Down on an own-order cell into a move; keep Qt's keys otherwise."""
        index = self.currentIndex()
        if index.isValid() and index.column() in (MY_BIDS, MY_ASKS):
            if event.key() == Qt.Key.Key_Up:
                self.move_key.emit(1)
                return
            if event.key() == Qt.Key.Key_Down:
                self.move_key.emit(-1)
                return
        super().keyPressEvent(event)


class PriceLadder(QWidget):
    """Depth-of-market view of one instrument; emits order intents.

    Signals
    -------
    order_requested(str, object, int, int)
        Place an order: symbol, ``Side``, price in ticks, quantity in lots.
    cancel_requested(int)
        Cancel the own order with this id.
    move_requested(int, int)
        Replace the own order with this id at a new price (ticks).
    """

    #: Engine event types :meth:`on_events` reads (the workspace hands it only these).
    EVENT_TYPES: ClassVar[tuple[type[Event], ...]] = (InstrumentAdded, DepthChanged, TradeReported)

    order_requested = Signal(str, object, int, int)
    cancel_requested = Signal(int)
    move_requested = Signal(int, int)

    def __init__(self, parent: QWidget | None = None, rows: int = 25) -> None:
        super().__init__(parent)
        self.formats = InstrumentFormats()
        self.model = LadderModel(self.formats, rows, self)
        self.symbol_box = QComboBox()
        self.symbol_box.setToolTip("Instrument")
        self.symbol_box.currentTextChanged.connect(self._on_symbol)
        self.qty = QSpinBox()
        self.qty.setRange(1, 1_000_000)
        self.qty.setValue(1)
        self.qty.setPrefix("Qty ")
        self.qty.setToolTip("Quantity (lots) of orders placed by clicking a Bid or Ask cell")
        self.group_box = QComboBox()
        self.group_box.setObjectName("ladderGrouping")
        self.group_box.setToolTip("Price ticks per row (group a fine-tick instrument's levels)")
        for g in GROUPINGS:
            self.group_box.addItem("1 tick" if g == 1 else f"{g} ticks", g)
        self.group_box.currentIndexChanged.connect(
            lambda i: self.model.set_group(int(self.group_box.itemData(i)))
        )
        centre = QPushButton("Centre")
        centre.setToolTip("Put the touch in the middle of the ladder")
        centre.clicked.connect(self.model.centre)
        self.table = _LadderTable()
        self.table.setModel(self.model)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(20)
        self.table.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectItems)
        self.table.setEditTriggers(QTableView.EditTrigger.NoEditTriggers)
        header = self.table.horizontalHeader()
        header.setMinimumSectionSize(40)
        # Sizes and prices take what their digits need; own orders (glyph, size, queue
        # position) share the rest.
        header.setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        fm = self.table.fontMetrics()
        size, price = fm.horizontalAdvance("00,000") + 12, fm.horizontalAdvance("000,000.00") + 12
        for col, width in ((BID, size), (PRICE, price), (ASK, size), (VOLUME, size + 16)):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
            self.table.setColumnWidth(col, width)
        self.table.clicked.connect(self._on_clicked)
        self.table.move_key.connect(self._on_move_key)
        self.empty = QLabel("Waiting for market data…")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setProperty("state", "muted")
        bar = QHBoxLayout()
        bar.setContentsMargins(4, 2, 4, 2)
        bar.addWidget(self.symbol_box, 1)
        bar.addWidget(self.qty)
        bar.addWidget(self.group_box)
        bar.addWidget(centre)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(bar)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.empty)
        self.table.hide()

    def on_events(self, batch: Sequence[EventRecord]) -> None:
        """Learn instruments and show the newest depth of the followed one."""
        latest: DepthChanged | None = None
        for record in batch:
            ev = record.event
            if isinstance(ev, InstrumentAdded):
                self.formats.add(ev)
                if self.symbol_box.findText(ev.symbol) < 0:
                    self.symbol_box.addItem(ev.symbol)
            elif isinstance(ev, DepthChanged) and ev.symbol == self.model.symbol:
                latest = ev
            elif isinstance(ev, TradeReported) and ev.symbol == self.model.symbol:
                self.model.add_trade(ev.px_ticks, ev.qty_lots)
        if latest is not None:
            self.model.set_depth(latest)
            if self.table.isHidden():
                self.empty.hide()
                self.table.show()

    def _on_symbol(self, symbol: str) -> None:
        self.model.set_symbol(symbol)
        self.table.hide()
        self.empty.show()

    def _on_clicked(self, index: QModelIndex) -> None:
        col, px = index.column(), self.model.px_at(index.row())
        if col in (BID, ASK):
            side = Side.BUY if col == BID else Side.SELL
            self.order_requested.emit(self.model.symbol, side, px, self.qty.value())
        elif col in (MY_BIDS, MY_ASKS):
            quotes = self.model.own_at(index.row(), col)
            if quotes:
                self.cancel_requested.emit(quotes[0].order_id)

    def _on_move_key(self, step: int) -> None:
        index = self.table.currentIndex()
        quotes = self.model.own_at(index.row(), index.column())
        if quotes:
            self.move_requested.emit(
                quotes[0].order_id, quotes[0].px_ticks + step * self.model.group
            )
            self.table.setCurrentIndex(self.model.index(index.row() - step, index.column()))
