# SPDX-License-Identifier: MIT
"""Logs & alerts, the kill switch and the order ticket, fed with real events."""

import pytest
from PySide6.QtCore import Qt

from engine.commands import (
    CancelOrder,
    CommandAck,
    CommandError,
    ReplaceOrder,
    SetKillSwitch,
    SubmitOrder,
)
from engine.enums import AlertLevel, KillLevel, OrdStatus, OrdType, SessionState, Side, TimeInForce
from engine.events import BookUpdated, KillSwitchChanged, SessionStatusChanged
from tests.unit.widgets.builders import T0, alert, changed, instrument, order, records, strategy
from widgets.kill_switch import KillSwitch
from widgets.log_view import LogView
from widgets.monitor.formats import InstrumentFormats
from widgets.order_ticket import OrderTicket

pytestmark = pytest.mark.gui


# ---------------------------------------------------------------------- logs & alerts
def test_log_filters_by_level_and_search_and_counts_unread(qtbot: object) -> None:
    view = LogView()
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    assert view.panel.showing_empty
    unread: list[int] = []
    view.unread_changed.connect(unread.append)
    view.on_events(records([
        alert("session logged on", AlertLevel.INFO, "fix"),
        alert("order C6 refused: max position", AlertLevel.WARNING, "risk"),
        alert("unknown ExecID E9", AlertLevel.ERROR, "oms"),
        changed(order(4, status=OrdStatus.REJECTED, text="price out of band")),
    ]))  # fmt: skip
    assert view.proxy.rowCount() == 4
    assert view.unread == 3
    assert unread == [3]
    assert view.unread_button.text() == "3 unread"
    texts = [e.text for e in view.visible_entries()]
    assert texts[0] == "order C4 ESZ6 rejected: price out of band"
    view.set_level(int(AlertLevel.ERROR))
    assert [e.text for e in view.visible_entries()] == ["unknown ExecID E9"]
    view.set_level(0)
    qtbot.keyClicks(view.search_edit, "RISK")  # type: ignore[attr-defined]
    assert [e.source for e in view.visible_entries()] == ["risk"]
    view.search_edit.clear()
    assert view.proxy.rowCount() == 4
    qtbot.mouseClick(view.unread_button, Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
    assert view.unread == 0
    assert unread == [3, 0]
    assert view.model.cell_text(3, "level") == "INFO"


# ---------------------------------------------------------------------- kill switch
def armed(ks: KillSwitch) -> KillLevel | None:
    """Read the armed level afresh (each click changes it)."""
    return ks.armed


def test_kill_switch_needs_a_second_click_to_send(qtbot: object) -> None:
    ks = KillSwitch()
    qtbot.addWidget(ks)  # type: ignore[attr-defined]
    sent: list[object] = []
    ks.command_requested.connect(sent.append)
    flatten = ks.buttons[KillLevel.FLATTEN]
    qtbot.mouseClick(flatten, Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
    assert sent == []
    assert armed(ks) is KillLevel.FLATTEN
    assert flatten.text() == "Flatten?"
    # Another level disarms the first.
    qtbot.mouseClick(ks.buttons[KillLevel.BLOCK_NEW], Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
    assert flatten.text() == "Flatten"
    assert armed(ks) is KillLevel.BLOCK_NEW
    ks.reason_edit.setText("venue unstable")
    qtbot.mouseClick(ks.buttons[KillLevel.BLOCK_NEW], Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
    assert sent == [
        SetKillSwitch(level=KillLevel.BLOCK_NEW, reason="venue unstable", actor="console")
    ]
    assert armed(ks) is None
    ks.on_command_result(
        sent[0],
        CommandError(
            command=sent[0],
            ts_handled=T0,  # type: ignore[arg-type]
            reason="not allowed",
        ),
    )
    assert ks.message_label.text() == "Refused: not allowed"


def test_kill_switch_follows_the_engine_and_arming_times_out(qtbot: object) -> None:
    ks = KillSwitch()
    qtbot.addWidget(ks)  # type: ignore[attr-defined]
    assert not ks.buttons[KillLevel.OFF].isEnabled()
    ks.on_events(
        records(
            [
                KillSwitchChanged(
                    ts_event=T0, level=KillLevel.CANCEL_ALL, actor="risk", reason="loss limit"
                )
            ]
        )
    )
    assert ks.state_label.text() == "● CANCEL ALL"
    assert ks.state_label.property("state") == "bad"
    assert ks.buttons[KillLevel.OFF].isEnabled()
    ks._disarm_timer.setInterval(20)
    ks.press(KillLevel.OFF)
    qtbot.waitUntil(lambda: ks.armed is None, timeout=2000)  # type: ignore[attr-defined]
    assert ks.buttons[KillLevel.OFF].text() == "Release"


# ---------------------------------------------------------------------- order ticket
@pytest.fixture
def ticket(qtbot: object) -> OrderTicket:
    formats = InstrumentFormats()
    formats.add(instrument("ESZ6", tick="0.25"))
    formats.add(instrument("BTC", tick="0.5", lot="0.001"))
    t = OrderTicket(formats)
    qtbot.addWidget(t)  # type: ignore[attr-defined]
    return t


def test_ticket_refuses_invalid_orders_before_sending(ticket: OrderTicket) -> None:
    sent: list[object] = []
    ticket.command_requested.connect(sent.append)
    assert [ticket.symbol_combo.itemText(i) for i in range(2)] == ["BTC", "ESZ6"]
    ticket.symbol_combo.setCurrentText("ESZ6")
    ticket.qty_edit.setText("0")
    ticket.price_edit.setText("4512.25")
    assert ticket.submit() is None
    assert ticket.message == "Not sent: quantity must be greater than 0 (got 0)"
    ticket.qty_edit.setText("3")
    ticket.price_edit.setText("4512.30")
    assert ticket.submit() is None
    assert "not on the tick grid of ESZ6 (tick size 0.25)" in ticket.message
    ticket.symbol_combo.clear()
    assert ticket.submit() is None
    assert ticket.message == "Not sent: choose an instrument first"
    assert sent == []


def test_ticket_sends_a_checked_order_and_shows_the_refusal(
    qtbot: object, ticket: OrderTicket
) -> None:
    sent: list[object] = []
    ticket.command_requested.connect(sent.append)
    ticket.symbol_combo.setCurrentText("BTC")
    qtbot.mouseClick(ticket.sell_button, Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
    qtbot.keyClicks(ticket.qty_edit, "1.5")  # type: ignore[attr-defined]
    qtbot.keyClicks(ticket.price_edit, "95,200.5")  # type: ignore[attr-defined]
    ticket.tif_combo.setCurrentIndex(ticket.tif_combo.findData(TimeInForce.IOC))
    qtbot.keyClick(ticket.price_edit, Qt.Key.Key_Return)  # type: ignore[attr-defined]
    assert sent == [
        SubmitOrder(
            symbol="BTC",
            side=Side.SELL,
            qty_lots=1_500,
            px_ticks=190_401,
            ord_type=OrdType.LIMIT,
            time_in_force=TimeInForce.IOC,
            strategy_id=0,
        )
    ]
    assert ticket.message == "Sending sell 1.500 BTC @ 95,200.5…"
    cmd = sent[0]
    ticket.on_command_result(
        cmd,
        CommandError(
            command=cmd,
            ts_handled=T0,  # type: ignore[arg-type]
            reason="kill switch BLOCK_NEW is on",
        ),
    )
    assert ticket.message == "Refused: kill switch BLOCK_NEW is on"
    # The venue rejects a hand-sent order later: its text is shown.
    rejected = order(
        9, symbol="BTC", strategy_id=0, status=OrdStatus.REJECTED, text="price outside the collar"
    )
    ticket.on_events(records([changed(rejected, "reject")]))
    assert ticket.message == "Rejected C9 BTC: price outside the collar"


def test_ticket_cancels_and_replaces_the_selected_order(ticket: OrderTicket) -> None:
    sent: list[object] = []
    ticket.command_requested.connect(sent.append)
    assert not ticket.cancel_button.isEnabled()
    o = order(5, symbol="ESZ6", qty=10, px=18_000)
    ticket.load_order(o)
    assert ticket.cancel_button.isEnabled()
    assert ticket.qty_edit.text() == "10"
    assert ticket.price_edit.text() == "4500.00"
    assert ticket.replace() is None
    assert ticket.message == "Not sent: nothing to replace: quantity and price are unchanged"
    ticket.price_edit.setText("4500.75")
    ticket.replace_button.click()
    assert sent == [ReplaceOrder(order_id=5, qty_lots=None, px_ticks=18_003)]
    ticket.on_command_result(sent[0], CommandAck(command=sent[0], ts_handled=T0))  # type: ignore[arg-type]
    assert ticket.message == "Replace accepted by the engine"
    ticket.cancel_button.click()
    assert sent[-1] == CancelOrder(order_id=5)
    # The order is canceled by the venue: the ticket follows and disables its buttons.
    done = order(5, symbol="ESZ6", qty=10, px=18_000, status=OrdStatus.CANCELED)
    ticket.on_events(records([changed(done, "cancel")]))
    assert not ticket.cancel_button.isEnabled()
    assert ticket.order_label.text().endswith("Canceled")


def test_ticket_shows_the_top_of_book_and_copies_its_price(ticket: OrderTicket) -> None:
    ticket.symbol_combo.setCurrentText("ESZ6")
    assert ticket.bid_button.text() == "Bid —"
    assert not ticket.bid_button.isEnabled()
    ticket.on_events(
        records(
            [
                BookUpdated(
                    ts_event=T0,
                    symbol="ESZ6",
                    bid_px_ticks=18_049,
                    bid_qty_lots=12,
                    ask_px_ticks=18_050,
                    ask_qty_lots=3,
                )
            ]
        )
    )
    assert ticket.bid_button.text() == "Bid 4,512.25 × 12"
    assert ticket.ask_button.text() == "Ask 4,512.50 × 3"
    ticket.ask_button.click()
    assert ticket.price_edit.text() == "4512.50"
    ticket.symbol_combo.setCurrentText("BTC")
    assert ticket.ask_button.text() == "Ask —"


def test_log_lines_for_kill_switch_sessions_and_strategies(qtbot: object) -> None:
    view = LogView()
    qtbot.addWidget(view)  # type: ignore[attr-defined]

    def session(state: SessionState, out: int, text: str = "") -> SessionStatusChanged:
        return SessionStatusChanged(
            ts_event=T0,
            session_id="FIX.4.4:A->B",
            state=state,
            next_sender_seq_num=out,
            next_target_seq_num=5,
            text=text,
        )

    view.on_events(records([
        session(SessionState.DISCONNECTED, 1),  # before the first logon: not an alert
        KillSwitchChanged(ts_event=T0, level=KillLevel.FLATTEN, actor="jane", reason="runaway"),
        session(SessionState.LOGGED_ON, 2),
        session(SessionState.LOGGED_ON, 7),  # only the sequence numbers moved: no line
        session(SessionState.DISCONNECTED, 8, "peer closed"),
        strategy(1, "mm", change="failed: ZeroDivisionError"),
    ]))  # fmt: skip
    lines = [(e.level, e.source, e.text) for e in reversed(view.visible_entries())]
    assert lines == [
        (int(AlertLevel.INFO), "fix", "FIX.4.4:A->B disconnected (next out 1, in 5)"),
        (int(AlertLevel.CRITICAL), "kill switch", "kill switch flatten by jane: runaway"),
        (int(AlertLevel.INFO), "fix", "FIX.4.4:A->B logged on (next out 2, in 5)"),
        (int(AlertLevel.WARNING), "fix",
         "FIX.4.4:A->B disconnected (next out 8, in 5) peer closed"),
        (int(AlertLevel.ERROR), "mm", "strategy failed: ZeroDivisionError"),
    ]  # fmt: skip
    assert view.unread == 3
