# SPDX-License-Identifier: MIT
"""The whole Monitor: batching, docks and saved layout, shortcuts, commands and answers."""

import threading
from concurrent.futures import Future

import pytest
import shiboken6
from PySide6.QtCore import QByteArray, Qt
from PySide6.QtWidgets import QMainWindow

from engine.commands import CancelOrder, Command, CommandAck, CommandResult
from engine.enums import OrdStatus
from tests.unit.widgets.builders import (
    RecordingSink,
    changed,
    demo_events,
    instrument,
    order,
    records,
)
from widgets.monitor.context import CommandChannel
from widgets.monitor.workspace import MonitorWorkspace

pytestmark = pytest.mark.gui


@pytest.fixture
def ws(qtbot: object) -> MonitorWorkspace:
    w = MonitorWorkspace()
    qtbot.addWidget(w)  # type: ignore[attr-defined]
    w.resize(1600, 950)
    return w


def test_batches_are_merged_into_at_most_one_model_update_per_flush(
    qtbot: object, ws: MonitorWorkspace
) -> None:
    events = records(demo_events())
    for n in range(0, len(events), 10):
        ws.on_events(events[n : n + 10])
    assert ws.orders_view.all_model.rowCount() == 0  # nothing applied before the flush
    qtbot.waitUntil(lambda: ws.flushes == 1, timeout=2000)  # type: ignore[attr-defined]
    assert ws.orders_view.all_model.rowCount() == 42
    # The other views follow in turns within 200 ms.
    qtbot.waitUntil(lambda: ws.events_view.model.rowCount() > 0, timeout=2000)  # type: ignore[attr-defined]
    assert ws.fix_view.model.rowCount() == 2
    assert ws.flushes == 1
    assert ws.orders_view.all_model.updates == 1
    assert ws.executions_view.model.rowCount() == 15
    assert ws.positions_view.model.rowCount() == 5
    assert ws.strategies_view.model.rowCount() == 2
    assert ws.fix_view.model.rowCount() == 2
    assert ws.ticket.symbol_combo.count() == 3
    assert ws.log_view.unread == 5  # 2 alerts, 3 rejected orders
    assert ws.alerts_badge.text() == "⚠ 5 unread alerts"
    ws.show_alerts()
    assert ws.alerts_badge.text() == "No unread alerts"


def test_every_dock_has_a_stable_name_and_the_layout_restores(
    qtbot: object, ws: MonitorWorkspace
) -> None:
    names = [d.objectName() for d in ws.docks]
    assert len(names) == 11
    assert len(set(names)) == 11
    assert {
        "monitorLadderDock",
        "monitorSessionsDock",
        "monitorRiskDock",
        "monitorRelaysDock",
    } <= set(names)
    assert all(n.startswith("monitor") and n.endswith("Dock") for n in names)
    assert not ws.kill_bar.isMovable()
    ws.show()
    ws.positions_dock.hide()
    ws.orders_view.table.setColumnWidth(3, 140)
    ws.orders_view.table.setColumnHidden(1, True)
    state = QByteArray(ws.saveState())
    other = MonitorWorkspace()
    qtbot.addWidget(other)  # type: ignore[attr-defined]
    assert other.restoreState(state)
    other.show()
    assert other.positions_dock.isHidden()
    assert not other.executions_dock.isHidden()
    assert other.orders_view.table.columnWidth(3) == 140
    assert other.orders_view.table.isColumnHidden(1)
    # A plain QMainWindow state (saved before columns were kept) still restores.
    third = MonitorWorkspace()
    qtbot.addWidget(third)  # type: ignore[attr-defined]
    assert third.restoreState(QMainWindow.saveState(ws))


def test_delete_cancels_the_selected_working_orders_and_refusals_are_logged(
    qtbot: object, ws: MonitorWorkspace
) -> None:
    def refuse(c: Command) -> str:
        return (
            "order 2 is PENDING_CANCEL: nothing to cancel now"
            if c == CancelOrder(order_id=2)
            else ""
        )

    sink = RecordingSink(refuse=refuse)
    ws.set_command_sink(sink)
    ws.on_events(
        records(
            [
                instrument(),
                changed(order(1)),
                changed(order(2)),
                changed(order(3, status=OrdStatus.FILLED, cum=10)),
            ]
        )
    )
    ws.flush()
    ws.show()
    qtbot.waitExposed(ws)  # type: ignore[attr-defined]
    ws.orders_view.set_working_only(False)
    table = ws.orders_view.table
    table.selectAll()
    table.setFocus()
    qtbot.waitUntil(table.hasFocus, timeout=2000)  # type: ignore[attr-defined]
    qtbot.keyClick(table, Qt.Key.Key_Delete)  # type: ignore[attr-defined]
    assert sink.commands == [CancelOrder(order_id=2), CancelOrder(order_id=1)]  # not the filled
    qtbot.waitUntil(lambda: ws.log_view.model.rowCount() == 1, timeout=2000)  # type: ignore[attr-defined]
    assert ws.log_view.model.cell_text(0, "text") == (
        "CancelOrder refused: order 2 is PENDING_CANCEL: nothing to cancel now"
    )
    assert [a.shortcut().toString() for a in ws.orders_view.table.menu_actions] == [
        "Del",
        "Ctrl+R",
    ]


def test_commands_without_an_engine_are_refused_visibly(
    qtbot: object, ws: MonitorWorkspace
) -> None:
    ws.on_events(records([instrument()]))
    ws.flush()
    ws.ticket.qty_edit.setText("1")
    ws.ticket.price_edit.setText("4500")
    assert ws.ticket.submit() is not None
    qtbot.waitUntil(lambda: ws.ticket.message == "Refused: no engine connected", timeout=2000)  # type: ignore[attr-defined]


def test_replace_shortcut_loads_the_selected_order_into_the_ticket(ws: MonitorWorkspace) -> None:
    ws.on_events(records([instrument(), changed(order(1, px=18_001, qty=4))]))
    ws.flush()
    ws.orders_view.table.selectRow(0)
    assert ws.ticket.order is not None
    ws.replace_action.trigger()
    assert ws.ticket.price_edit.text() == "4500.25"
    assert ws.ticket.qty_edit.text() == "4"


def test_a_failing_sink_or_future_becomes_a_visible_refusal(qtbot: object) -> None:
    answers: list[tuple[object, object]] = []

    def broken(_c: Command) -> Future[CommandResult]:
        raise ConnectionError("link down")

    channel = CommandChannel(broken)
    channel.result_received.connect(lambda c, r: answers.append((c, r)))
    channel.send(CancelOrder(order_id=1))
    qtbot.waitUntil(lambda: len(answers) == 1, timeout=2000)  # type: ignore[attr-defined]
    assert answers[0][1].reason == "not sent: link down"  # type: ignore[attr-defined]

    failed: Future[CommandResult] = Future()
    channel.set_sink(lambda _c: failed)
    channel.send(CancelOrder(order_id=2))
    failed.set_exception(TimeoutError("no answer in 2 s"))
    qtbot.waitUntil(lambda: len(answers) == 2, timeout=2000)  # type: ignore[attr-defined]
    assert answers[1][1].reason == "failed: no answer in 2 s"  # type: ignore[attr-defined]
    assert channel.sent == [CancelOrder(order_id=1), CancelOrder(order_id=2)]


def test_ladder_and_sessions_intents_become_engine_commands(qtbot: object) -> None:
    from engine.commands import ControlSession, ReplaceOrder, SubmitOrder
    from engine.enums import Side

    sink = RecordingSink(
        refuse=lambda c: "no such session" if isinstance(c, ControlSession) else ""
    )
    w = MonitorWorkspace(send=sink)
    qtbot.addWidget(w)  # type: ignore[attr-defined]
    w.ladder.order_requested.emit("ESZ6", Side.SELL, 24_010, 2)
    w.ladder.cancel_requested.emit(7)
    w.ladder.move_requested.emit(7, 24_011)
    w.sessions_view.command_requested.emit(ControlSession(session_id="X", action="reset"))
    assert sink.commands[:3] == [
        SubmitOrder(symbol="ESZ6", side=Side.SELL, qty_lots=2, px_ticks=24_010),
        CancelOrder(order_id=7),
        ReplaceOrder(order_id=7, px_ticks=24_011),
    ]
    qtbot.waitUntil(lambda: w.sessions_view.message.text() == "no such session", timeout=2000)  # type: ignore[attr-defined]


def test_answers_resolved_on_another_thread_reach_only_living_channels(
    qtbot: object, caplog: pytest.LogCaptureFixture
) -> None:
    futures: list[Future[CommandResult]] = []

    def sink(_c: Command) -> Future[CommandResult]:
        futures.append(Future())
        return futures[-1]

    alive, doomed = CommandChannel(sink), CommandChannel(sink)
    answers: list[object] = []
    threads: list[str] = []
    alive.result_received.connect(lambda c, r: answers.append(c))
    alive.result_received.connect(lambda c, r: threads.append(threading.current_thread().name))
    doomed.result_received.connect(lambda c, r: pytest.fail("a deleted channel delivered"))
    first, second = CancelOrder(order_id=1), CancelOrder(order_id=2)
    alive.send(first)
    doomed.send(second)
    shiboken6.delete(doomed)  # its workspace closed while the command was in flight

    def engine() -> None:  # the engine thread answers both
        for f, c in zip(futures, (first, second), strict=True):
            f.set_result(CommandAck(command=c, ts_handled=0))

    t = threading.Thread(target=engine, name="engine")
    t.start()
    t.join()
    qtbot.waitUntil(lambda: answers == [first], timeout=2000)  # type: ignore[attr-defined]
    qtbot.wait(50)  # type: ignore[attr-defined]
    assert answers == [first]
    assert threads == ["MainThread"]  # delivered in the GUI thread, not the engine's
    assert not [r for r in caplog.records if r.levelname == "ERROR"]  # no callback failed
