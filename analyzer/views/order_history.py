# SPDX-License-Identifier: MIT
"""The clicked order's story: its changes and fills, and its FIX messages in the inspector.

:class:`OrderHistory` lists an order's changes and fills from an overlay (every journal has
them, backtests too); :func:`show_fix_chain` puts the order's FIX messages into a
:class:`widgets.fix_inspector.FixInspector` and selects the clicked one.
"""

from typing import Final

from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtWidgets import QAbstractItemView, QTableWidget, QTableWidgetItem, QWidget

from analyzer.overlay import Overlay
from engine.enums import OrdStatus
from engine.events import EventRecord, FixMessageSeen
from engine.journal.format import FixDirection, FixMessageRecord
from engine.types import BUY, SELL
from widgets.fix_inspector import FixInspector, field_value
from widgets.fmt import fmt_ts_utc

HISTORY_COLUMNS: Final[tuple[str, ...]] = (
    "Time (UTC)", "Event", "Side", "Price", "Qty", "Filled", "Leaves", "Status",
)  # fmt: skip


def _side(side: int) -> str:
    return {BUY: "buy", SELL: "sell"}.get(side, "")


class OrderHistory(QTableWidget):
    """One order's changes and fills, oldest first; the clicked fill in bold."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, len(HISTORY_COLUMNS), parent)
        self.setObjectName("analyzerOrderHistory")
        self.setHorizontalHeaderLabels(list(HISTORY_COLUMNS))
        self.verticalHeader().hide()
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.horizontalHeader().setStretchLastSection(True)

    def show_order(
        self, overlay: Overlay, order_id: int, at_ts: int, tick: float, decimals: int
    ) -> None:
        """List order ``order_id`` of ``overlay``; prices are ticks times ``tick``.

        A fill at ``at_ts`` (the one clicked) is shown in bold.
        """
        events, fills = overlay.order_history(order_id)
        rows: list[tuple[int, tuple[str, ...]]] = []
        for e in events:
            status = OrdStatus(int(e["status"])).name.replace("_", " ").lower()
            rows.append(
                (
                    int(e["ts"]),
                    (
                        "change", _side(int(e["side"])), f"{e['px'] * tick:,.{decimals}f}",
                        f"{e['qty']:,}", f"{e['cum_qty']:,}", f"{e['leaves_qty']:,}", status,
                    ),
                )
            )  # fmt: skip
        rows.extend(
            (
                int(f["ts"]),
                (
                    "fill", _side(int(f["side"])), f"{f['px'] * tick:,.{decimals}f}",
                    f"{f['qty']:,}", "", f"{f['leaves_qty']:,}", "",
                ),
            )
            for f in fills
        )  # fmt: skip
        rows.sort(key=lambda r: r[0])
        self.setRowCount(len(rows))
        right = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
        for r, (ts, cells) in enumerate(rows):
            for c, text in enumerate((fmt_ts_utc(ts, precision=6), *cells)):
                item = QTableWidgetItem(text)
                if 3 <= c <= 6:
                    item.setTextAlignment(right)
                if ts == at_ts and cells[0] == "fill":
                    font = item.font()
                    font.setBold(True)
                    item.setFont(font)
                self.setItem(r, c, item)
        self.resizeColumnsToContents()


def show_fix_chain(inspector: FixInspector, chain: list[FixMessageRecord], pos: int) -> None:
    """Show the FIX messages ``chain`` in ``inspector`` and select the one at ``pos`` (-1: none).

    The inspector is cleared first; an empty chain (a backtest's journal) leaves it empty.
    """
    inspector.model.clear()
    if not chain:
        return
    records = [
        EventRecord(
            seq=i + 1,
            event=FixMessageSeen(
                ts_event=m.ts_handled,
                session_id=m.session_id,
                outbound=m.direction is FixDirection.OUTBOUND,
                msg_type=field_value(m.raw, 35),
                seq_num=int(field_value(m.raw, 34) or 0),
                raw=m.raw,
                ts_created=m.ts_created,
                ts_wire=m.ts_wire,
            ),
        )
        for i, m in enumerate(chain)
    ]
    inspector.on_events(records)
    if 0 <= pos < len(records):
        row = inspector.model.row_of(pos + 1)
        index = inspector.proxy.mapFromSource(inspector.model.index(row, 0))
        inspector.table.selectionModel().setCurrentIndex(
            index,
            QItemSelectionModel.SelectionFlag.ClearAndSelect
            | QItemSelectionModel.SelectionFlag.Rows,
        )
