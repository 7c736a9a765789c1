# SPDX-License-Identifier: MIT
"""Risk in the GUI: the ticket asks before sending outside the price band, and the Monitor's
limits view shows what the engine enforces now with what is used of it (real widgets,
offscreen)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from engine.commands import CommandError, ReplaceOrder, SubmitOrder
from engine.enums import OrdStatus, OrdType, Side
from engine.events import BookUpdated, DepthChanged, PositionChanged, RiskLimitsChanged
from tests.unit.widgets.builders import T0, changed, instrument, order, records, strategy
from widgets.monitor.formats import InstrumentFormats
from widgets.monitor.risk import RiskLimitsView
from widgets.order_ticket import OrderTicket

pytestmark = pytest.mark.gui


def limits(
    sid: int | None = None,
    symbol: str = "",
    change: str = "snapshot",
    actor: str = "",
    engine: str = "desk-1",
    **values: object,
) -> RiskLimitsChanged:
    fields = dict.fromkeys(
        (
            "max_order_qty_lots",
            "max_order_notional",
            "max_position_lots",
            "price_band_ticks",
            "price_band_pct",
            "max_open_orders",
            "max_orders_per_second",
        )
    )
    fields.update(values)
    return RiskLimitsChanged(
        ts_event=T0,
        engine_id=engine,
        strategy_id=sid,
        symbol=symbol,
        actor=actor,
        change=change,
        **fields,
    )  # type: ignore[arg-type]


def depth(symbol: str, last: int) -> DepthChanged:
    return DepthChanged(
        ts_event=T0,
        symbol=symbol,
        bids=((last - 1, 5),),
        asks=((last + 1, 5),),
        last_trade_px_ticks=last,
        own=(),
    )


def make_ticket(qtbot: object) -> tuple[OrderTicket, list[object]]:
    formats = InstrumentFormats()
    formats.add(instrument("CLF7", tick="0.01", multiplier="1000"))
    t = OrderTicket(formats)
    qtbot.addWidget(t)  # type: ignore[attr-defined]
    sent: list[object] = []
    t.command_requested.connect(sent.append)
    t.on_events(records([limits(price_band_pct=5.0, change="start"), depth("CLF7", 6851)]))
    return t, sent


def type_order(qtbot: object, t: OrderTicket, qty: str, px: str) -> None:
    t.qty_edit.clear()
    t.price_edit.clear()
    qtbot.keyClicks(t.qty_edit, qty)  # type: ignore[attr-defined]
    qtbot.keyClicks(t.price_edit, px)  # type: ignore[attr-defined]
    qtbot.keyClick(t.price_edit, Qt.Key.Key_Return)  # type: ignore[attr-defined]


def test_ticket_asks_before_sending_outside_the_band_and_marks_the_override(
    qtbot: object,
) -> None:
    t, sent = make_ticket(qtbot)
    type_order(qtbot, t, "1", "80.00")
    box = t.band_dialog
    assert isinstance(box, QMessageBox)
    assert box.isVisible()
    assert box.text() == "Buy 1 CLF7 @ 80.00 is 16.8% above the last trade 68.51 — send anyway?"
    assert "outside the engine-wide price band (±5%)" in box.informativeText()
    assert sent == []  # nothing leaves before the answer
    assert t.message == "Outside the price band: confirm or cancel"
    # Enter does not send a fat finger: the default button is "Don't send".
    assert box.defaultButton().objectName() == "ticketBandCancel"
    send = box.findChild(type(box.defaultButton()), "ticketBandSend")
    qtbot.mouseClick(send, Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: len(sent) == 1, timeout=2000)  # type: ignore[attr-defined]
    assert sent == [
        SubmitOrder(
            symbol="CLF7",
            side=Side.BUY,
            qty_lots=1,
            px_ticks=8000,
            ord_type=OrdType.LIMIT,
            strategy_id=0,
            band_override=True,
        )
    ]
    assert t.message == "Sending buy 1 CLF7 @ 80.00 (outside the price band, confirmed)…"
    assert t.band_dialog is None


def test_ticket_cancelled_band_question_sends_nothing_and_inside_goes_at_once(
    qtbot: object,
) -> None:
    t, sent = make_ticket(qtbot)
    t.set_side(Side.SELL)
    type_order(qtbot, t, "2", "60.00")
    box = t.band_dialog
    assert box is not None
    assert box.text() == "Sell 2 CLF7 @ 60.00 is 12.4% below the last trade 68.51 — send anyway?"
    qtbot.mouseClick(box.defaultButton(), Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: t.band_dialog is None, timeout=2000)  # type: ignore[attr-defined]
    assert sent == []
    assert t.message == "Not sent: the price is outside the band"
    # Inside the band (4.9% below): no question, no override.
    type_order(qtbot, t, "2", "65.15")
    assert t.band_dialog is None
    assert sent == [SubmitOrder(symbol="CLF7", side=Side.SELL, qty_lots=2, px_ticks=6515)]


def test_ticket_uses_the_instruments_own_band_the_mid_and_the_engines_refusal(
    qtbot: object,
) -> None:
    formats = InstrumentFormats()
    formats.add(instrument("CLF7", tick="0.01", multiplier="1000"))
    t = OrderTicket(formats)
    qtbot.addWidget(t)  # type: ignore[attr-defined]
    sent: list[SubmitOrder] = []
    t.command_requested.connect(sent.append)
    book = BookUpdated(
        ts_event=T0,
        symbol="CLF7",
        bid_px_ticks=6848,
        bid_qty_lots=3,
        ask_px_ticks=6852,
        ask_qty_lots=4,
    )
    t.on_events(
        records([limits(price_band_pct=5.0), limits(symbol="CLF7", price_band_ticks=10), book])
    )
    type_order(qtbot, t, "1", "68.70")  # 20 ticks above the mid 68.50: inside 5%, not 10 ticks
    assert t.band_dialog is not None
    assert t.band_dialog.text() == ("Buy 1 CLF7 @ 68.70 is 0.3% above the mid 68.50 — send anyway?")
    assert "CLF7's price band (±10 ticks)" in t.band_dialog.informativeText()
    t.band_dialog.reject()
    qtbot.waitUntil(lambda: t.band_dialog is None, timeout=2000)  # type: ignore[attr-defined]
    # Without a known band the ticket sends; the engine's band refusal then asks.
    t.limits.clear()
    type_order(qtbot, t, "1", "68.70")
    (cmd,) = sent
    reason = (
        "risk: price_band: buy at 6870 ticks is 20 ticks (0.3%) above the reference 6850, "
        "beyond ±10 ticks (CLF7's own band)"
    )
    t.on_command_result(cmd, CommandError(command=cmd, ts_handled=T0, reason=reason))
    assert t.band_dialog is not None
    assert "buy at 6870 ticks is 20 ticks (0.3%) above" in t.band_dialog.informativeText()
    send = t.band_dialog.findChild(type(t.band_dialog.defaultButton()), "ticketBandSend")
    qtbot.mouseClick(send, Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: len(sent) == 2, timeout=2000)  # type: ignore[attr-defined]
    assert sent[1] == SubmitOrder(
        symbol="CLF7", side=Side.BUY, qty_lots=1, px_ticks=6870, band_override=True
    )


def test_ticket_asks_before_moving_a_manual_order_outside_the_band(qtbot: object) -> None:
    t, sent = make_ticket(qtbot)
    mine = order(5, symbol="CLF7", qty=2, px=6840, strategy_id=0)
    t.load_order(mine)
    t.price_edit.setText("75.00")
    assert t.replace() is None
    box = t.band_dialog
    assert box is not None
    assert box.text() == (
        "Replace: Buy 2 CLF7 @ 75.00 is 9.5% above the last trade 68.51 — send anyway?"
    )
    send = box.findChild(type(box.defaultButton()), "ticketBandSend")
    qtbot.mouseClick(send, Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: len(sent) == 1, timeout=2000)  # type: ignore[attr-defined]
    assert sent == [ReplaceOrder(order_id=5, px_ticks=7500, band_override=True)]
    assert t.message == "Replacing C5 (outside the price band, confirmed)…"
    # A strategy's order is not the ticket's to override: sent as it is, the engine decides.
    theirs = order(6, symbol="CLF7", qty=2, px=6840, strategy_id=7)
    t.load_order(theirs)
    t.price_edit.setText("75.00")
    assert t.replace() == ReplaceOrder(order_id=6, px_ticks=7500)
    assert t.band_dialog is None


def test_limits_view_lists_every_scope_with_usage_and_the_last_change(qtbot: object) -> None:
    view = RiskLimitsView()
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    view.resize(900, 240)
    view.show()
    assert view.panel._stack.currentWidget() is view.panel.empty  # nothing known yet
    working = [order(i, symbol="CLF7", strategy_id=7 if i < 4 else 0) for i in range(1, 6)]
    done = order(6, symbol="CLF7", strategy_id=7, status=OrdStatus.FILLED, cum=10)
    view.on_events(records([
        strategy(7, "mm"),
        limits(max_order_qty_lots=50, max_position_lots=25, max_open_orders=5,
               max_orders_per_second=500, price_band_pct=5.0, change="start", actor="config"),
        limits(sid=7, max_open_orders=3, change="start", actor="config"),
        limits(symbol="CLF7", price_band_ticks=40, change="start", actor="config"),
        *(changed(o) for o in working), changed(done, "fill"),
        PositionChanged(ts_event=T0, strategy_id=7, symbol="CLF7", qty_lots=-21,
                        avg_px_ticks=6850.0, mark_px_ticks=6851, realized_pnl=0.0,
                        unrealized_pnl=0.0, fees=0.0),
        PositionChanged(ts_event=T0, strategy_id=0, symbol="CLF7", qty_lots=2,
                        avg_px_ticks=6850.0, mark_px_ticks=6851, realized_pnl=0.0,
                        unrealized_pnl=0.0, fees=0.0),
    ]))  # fmt: skip
    assert [r.scope for r in view.model.records()] == [
        "Engine-wide", "mm (7)", "CLF7 (instrument)",
    ]  # fmt: skip
    eng, mm = (None, ""), (7, "")
    assert view.cell(eng, "max_order_qty") == "50"
    assert view.cell(eng, "max_notional") == "off"
    assert view.cell(eng, "open_orders") == "5 / 5"  # all working orders against the engine's
    assert view.cell(eng, "max_position") == "19 / 25"  # net CLF7: -21 + 2
    assert view.cell(eng, "price_band") == "±5%"
    assert view.cell(mm, "open_orders") == "3 / 3"
    assert view.cell(mm, "max_position") == "off"  # no position limit of its own
    assert view.model.record(view.model.row_of(("desk-1", *mm))).position == (21, "CLF7")
    assert view.cell((None, "CLF7"), "price_band") == "±40 ticks"
    assert view.last_change.text() == ""  # start and snapshot are no news
    view.on_events(
        records(
            [
                limits(
                    max_order_qty_lots=50,
                    max_position_lots=25,
                    max_open_orders=8,
                    max_orders_per_second=500,
                    price_band_pct=5.0,
                    actor="alice@10.0.0.7",
                    change="max_open_orders 5 -> 8",
                ),
            ]
        )
    )
    assert view.cell(eng, "open_orders") == "5 / 8"
    assert view.last_change.text().endswith(
        " by alice@10.0.0.7 — Engine-wide: max_open_orders 5 -> 8"
    )
    # Usage tones: at the limit is bad, off is muted.
    col = view.model.column_index("open_orders")
    _texts, colors, _bold = view.model.paint_row(view.model.row_of(("desk-1", *mm)))
    assert colors[col] is not None


def test_the_monitor_feeds_its_risk_dock_and_ticket_the_engines_limits(qtbot: object) -> None:
    from widgets.monitor.workspace import MonitorWorkspace

    ws = MonitorWorkspace()
    qtbot.addWidget(ws)  # type: ignore[attr-defined]
    ws.on_events(records([instrument("CLF7", tick="0.01", multiplier="1000"),
                          limits(price_band_pct=5.0, max_open_orders=100, change="snapshot"),
                          depth("CLF7", 6851)]))  # fmt: skip
    ws.flush()
    assert ws.risk_dock.objectName() == "monitorRiskDock"
    assert ws.risk_view.cell((None, ""), "open_orders") == "0 / 100"
    assert ws.ticket.limits["desk-1", None, ""].price_band_pct == 5.0
    assert ws.ticket.reference("CLF7") == (6851, "the last trade")


def test_several_engines_keep_their_own_limits_apart(qtbot: object) -> None:
    view = RiskLimitsView()
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    other = limits(max_open_orders=7, engine="ny4-2", change="max_open_orders 9 -> 7", actor="bob")
    view.on_events(records([limits(max_open_orders=5, engine="desk-1"), other]))
    assert [r.scope for r in view.model.records()] == [
        "desk-1: Engine-wide", "ny4-2: Engine-wide",
    ]  # fmt: skip
    assert view.cell(("ny4-2", None, ""), "open_orders") == "0 / 7"
    assert view.last_change.text().endswith(" by bob — ny4-2: Engine-wide: max_open_orders 9 -> 7")
    # The ticket asks when any attached engine's band would refuse (it cannot tell which
    # engine trades an unqualified symbol).
    t, sent = make_ticket(qtbot)
    t.on_events(records([limits(price_band_pct=20.0, change="start", engine="ny4-2")]))
    type_order(qtbot, t, "1", "74.00")  # 8.0% above 68.51: inside 20%, outside 5%
    assert t.band_dialog is not None
    assert "engine-wide price band (±5%)" in t.band_dialog.informativeText()
    t.band_dialog.reject()
    qtbot.waitUntil(lambda: t.band_dialog is None, timeout=2000)  # type: ignore[attr-defined]
    assert sent == []
