# SPDX-License-Identifier: MIT
"""The depth ladder: levels, own orders with queue position, recentring, click intents."""

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from engine.enums import OrdStatus, Side
from engine.events import DepthChanged, EventRecord, InstrumentAdded, OwnQuote
from widgets.ladder import ASK, BID, MY_ASKS, MY_BIDS, PRICE, PriceLadder

pytestmark = pytest.mark.gui

ES = InstrumentAdded(
    ts_event=1,
    symbol="ESZ6",
    tick_size="0.25",
    lot_size="1",
    multiplier="50",
    currency="USD",
    venue="SIM",
)


def depth(bid: int, ask: int, own: tuple[OwnQuote, ...] = (), last: int = 0) -> DepthChanged:
    return DepthChanged(
        ts_event=2,
        symbol="ESZ6",
        bids=tuple((bid - i, 10 + i) for i in range(5)),
        asks=tuple((ask + i, 20 + i) for i in range(5)),
        last_trade_px_ticks=last,
        own=own,
    )


def feed(ladder: PriceLadder, *events: object) -> None:
    ladder.on_events([EventRecord(i + 1, e) for i, e in enumerate(events)])  # type: ignore[arg-type]


def cell(ladder: PriceLadder, px: int, col: int) -> str:
    row = ladder.model.top_px - px
    return str(ladder.model.index(row, col).data() or "")


def test_levels_own_orders_and_queue_position(qtbot: object) -> None:
    ladder = PriceLadder(rows=21)
    qtbot.addWidget(ladder)  # type: ignore[attr-defined]
    mine = OwnQuote(
        order_id=7,
        side=Side.BUY,
        px_ticks=23_999,
        leaves_qty_lots=2,
        status=OrdStatus.NEW,
        pending="",
        ahead_lots=35.0,
    )
    leaving = OwnQuote(
        order_id=8,
        side=Side.SELL,
        px_ticks=24_002,
        leaves_qty_lots=1,
        status=OrdStatus.PENDING_CANCEL,
        pending="cancel",
        ahead_lots=None,
    )
    feed(ladder, ES, depth(23_999, 24_001, (mine, leaving), last=24_001))
    assert ladder.model.rowCount() == 21
    assert cell(ladder, 24_000, PRICE) == "6,000.00"
    assert cell(ladder, 23_999, BID) == "10"
    assert cell(ladder, 24_001, ASK) == "20"
    assert cell(ladder, 24_000, BID) == ""
    assert cell(ladder, 23_999, MY_BIDS) == "●2 [35]"
    assert cell(ladder, 24_002, MY_ASKS) == "✕1"
    row = ladder.model.top_px - 24_001
    assert ladder.model.index(row, PRICE).data(Qt.ItemDataRole.FontRole).bold()


def test_window_recentres_only_when_the_touch_leaves_the_middle(qtbot: object) -> None:
    ladder = PriceLadder(rows=21)
    qtbot.addWidget(ladder)  # type: ignore[attr-defined]
    feed(ladder, ES, depth(23_999, 24_001))
    top = ladder.model.top_px
    assert top - 24_000 == 10  # mid in the middle row
    feed(ladder, depth(24_002, 24_004))
    assert ladder.model.top_px == top  # small move: rows stay put
    feed(ladder, depth(24_020, 24_022))
    assert ladder.model.top_px == 24_021 + 10


def test_clicks_and_keys_emit_order_intents(qtbot: object) -> None:
    ladder = PriceLadder(rows=21)
    qtbot.addWidget(ladder)  # type: ignore[attr-defined]
    ladder.resize(420, 520)
    ladder.show()
    mine = OwnQuote(
        order_id=7,
        side=Side.SELL,
        px_ticks=24_001,
        leaves_qty_lots=1,
        status=OrdStatus.NEW,
        pending="",
        ahead_lots=3.0,
    )
    feed(ladder, ES, depth(23_999, 24_001, (mine,)))
    ladder.qty.setValue(3)
    orders: list[tuple[object, ...]] = []
    cancels: list[int] = []
    moves: list[tuple[int, int]] = []
    ladder.order_requested.connect(lambda *a: orders.append(a))
    ladder.cancel_requested.connect(cancels.append)
    ladder.move_requested.connect(lambda *a: moves.append(a))
    table, model = ladder.table, ladder.model

    def click(px: int, col: int) -> None:
        rect = table.visualRect(model.index(model.top_px - px, col))
        qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())  # type: ignore[attr-defined]

    click(23_998, BID)
    assert orders == [("ESZ6", Side.BUY, 23_998, 3)]
    click(24_005, ASK)
    assert orders[-1] == ("ESZ6", Side.SELL, 24_005, 3)
    click(24_001, MY_ASKS)
    assert cancels == [7]
    qtbot.keyClick(table, Qt.Key.Key_Up)  # type: ignore[attr-defined]
    assert moves == [(7, 24_002)]


def test_ladder_renders_legibly(qtbot: object, tmp_path: Path) -> None:
    ladder = PriceLadder(rows=21)
    qtbot.addWidget(ladder)  # type: ignore[attr-defined]
    ladder.resize(420, 520)
    mine = OwnQuote(
        order_id=7,
        side=Side.BUY,
        px_ticks=23_998,
        leaves_qty_lots=2,
        status=OrdStatus.NEW,
        pending="",
        ahead_lots=12.0,
    )
    feed(ladder, ES, depth(23_999, 24_001, (mine,), last=23_999))
    image = ladder.grab()
    assert image.save(str(tmp_path / "ladder.png"))
    assert image.width() == 420


def test_volume_at_price_last_trade_and_grouped_rows(qtbot: object) -> None:
    from engine.events import TradeReported
    from widgets.ladder import VOLUME

    ladder = PriceLadder(rows=21)
    qtbot.addWidget(ladder)  # type: ignore[attr-defined]
    mine = OwnQuote(
        order_id=9,
        side=Side.BUY,
        px_ticks=23_997,
        leaves_qty_lots=1,
        status=OrdStatus.NEW,
        pending="",
        ahead_lots=4.0,
    )

    def trade(px: int, qty: int) -> TradeReported:
        return TradeReported(
            ts_event=3, symbol="ESZ6", px_ticks=px, qty_lots=qty, aggressor=Side.BUY
        )

    feed(
        ladder,
        ES,
        trade(24_001, 3),
        trade(24_001, 2),
        trade(24_000, 7),
        depth(23_999, 24_001, (mine,), last=24_000),
    )
    assert cell(ladder, 24_001, VOLUME) == "5"
    assert cell(ladder, 24_000, VOLUME) == "7 ◂7"  # the last trade: 7 lots at 6,000.00
    # Five ticks a row: bids go down to their row, asks up to theirs, volume adds up.
    ladder.group_box.setCurrentIndex(ladder.group_box.findData(5))
    m = ladder.model
    assert m.group == 5
    rows = {m.px_at(r): r for r in range(m.rowCount())}
    assert all(px % 5 == 0 for px in rows)

    def at(px: int, col: int) -> str:
        return str(m.index(rows[px], col).data() or "")

    assert at(23_995, BID) == str(10 + 11 + 12 + 13 + 14)  # 23,999 .. 23,995
    assert at(24_005, ASK) == str(20 + 21 + 22 + 23 + 24)  # 24,001 .. 24,005
    assert at(24_005, VOLUME) == "5"  # 24,001 rounds up to 24,005
    assert at(24_000, VOLUME) == "7 ◂7"
    assert at(23_995, MY_BIDS) == "●1 [4]"
    # A move from a grouped row is one row: five ticks.
    moves: list[tuple[int, int]] = []
    ladder.move_requested.connect(lambda oid, px: moves.append((oid, px)))
    ladder.table.setCurrentIndex(m.index(rows[23_995], MY_BIDS))
    ladder._on_move_key(1)
    assert moves == [(9, 24_002)]
