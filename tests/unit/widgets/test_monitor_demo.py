# SPDX-License-Identifier: MIT
"""The Trade Monitor driven like a trader would, against the running demo (FIX on loopback).

One session, in the order a trader works: an order from the ticket reaches the blotter and
the ladder, is moved to the touch and fills; the position and its P&L appear; selecting the
execution shows LastPx <31> and LastQty <32> by name in the FIX detail, and selecting the
order lists its FIX chain; a strategy parameter is edited while the strategy runs (and a value
beyond its bound is refused); the strategy is paused and resumed; each kill-switch level is
armed, confirmed and followed by the engine.
"""

import functools
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from app.controller import Controller
from app.main_window import MainWindow
from app.settings import AppSettings
from engine.demo import DEMO_STRATEGY_ID, build_demo
from engine.embedded import EmbeddedEngineClient
from engine.enums import KillLevel, OrdStatus, StrategyState
from engine.events import OrderView
from engine.warmup import warm_up
from widgets.ladder import MY_BIDS
from widgets.monitor.context import MANUAL_STRATEGY_ID
from widgets.monitor.workspace import MonitorWorkspace

pytestmark = [pytest.mark.gui, pytest.mark.integration, pytest.mark.slow]

#: Generous: the demo trades within a second, but CI machines are shared.
WAIT_MS = 20_000


@pytest.fixture
def monitor(qtbot: object, tmp_path: Path) -> Iterator[MonitorWorkspace]:
    warm_up()  # kernels loaded from the cache before the engine's clock starts
    demo = functools.partial(
        build_demo, journal_dir=tmp_path / "journal", store_dir=tmp_path / "fix"
    )
    controller = Controller(EmbeddedEngineClient(configure=demo, warm_up=warm_up))
    controller.start()
    window = MainWindow(controller, AppSettings(tmp_path / "qwconsole.ini"))
    qtbot.addWidget(window)  # type: ignore[attr-defined]
    window.resize(1600, 1000)
    window.show()
    qtbot.waitExposed(window)  # type: ignore[attr-defined]
    yield window.monitor
    window.shutdown()


def wait(qtbot: object, pred: Callable[[], object], what: str) -> None:
    """Wait for ``pred`` (the GUI keeps running), failing with ``what``."""
    try:
        qtbot.waitUntil(lambda: bool(pred()), timeout=WAIT_MS)  # type: ignore[attr-defined]
    except AssertionError as e:  # pytest-qt's TimeoutError is an AssertionError
        raise AssertionError(f"timed out waiting for {what}") from e


def manual_order(ws: MonitorWorkspace) -> OrderView | None:
    orders = [o for o in ws.orders_view.all_model.records() if o.strategy_id == MANUAL_STRATEGY_ID]
    return orders[0] if orders else None


def test_a_trader_session_on_the_demo(qtbot: object, monitor: MonitorWorkspace) -> None:
    ws = monitor
    ticket, ladder, formats = ws.ticket, ws.ladder, ws.ctx.formats
    ws.ticket_dock.show()
    ws.ladder_dock.show()
    ws.ladder_dock.raise_()

    # The market: ESZ6 quoted, its depth on the ladder.
    wait(qtbot, lambda: ticket.symbol_combo.findText("ESZ6") >= 0, "the demo's instruments")
    ticket.symbol_combo.setCurrentText("ESZ6")
    ladder.symbol_box.setCurrentText("ESZ6")
    wait(qtbot, lambda: ticket.books.get("ESZ6") and ticket.books["ESZ6"].bid_px_ticks, "a book")
    wait(qtbot, lambda: ladder.model.rowCount() > 0, "the ladder's depth")

    # 1. A passive buy from the ticket: ten ticks under the bid, 2 lots (far enough that the
    # simulated market does not reach it before step 2 moves it; two ticks were, on a slow host).
    bid = ticket.books["ESZ6"].bid_px_ticks
    px = bid - 10
    ticket.buy_button.click()
    ticket.qty_edit.setText("2")
    ticket.price_edit.setText(formats.price("ESZ6", px).replace(",", ""))
    qtbot.keyClick(ticket.price_edit, Qt.Key.Key_Return)  # type: ignore[attr-defined]
    wait(qtbot, lambda: (o := manual_order(ws)) and o.status is OrdStatus.NEW, "the order's ack")
    order = manual_order(ws)
    assert order is not None
    assert (order.symbol, order.qty_lots, order.px_ticks) == ("ESZ6", 2, px)
    assert order.order_id in ws.orders_view.working_model
    row = ws.orders_view.all_model.row_of(order.order_id)
    assert ws.orders_view.all_model.cell_text(row, "strategy") == "manual"
    assert ws.orders_view.all_model.cell_text(row, "latency").endswith("s")  # send→ack shown

    # ... and it sits on the ladder at its price, in my-bids, with its state glyph. (Its row
    # is shown once the ladder's window holds its price: the market may move the window.)
    def on_ladder() -> bool:
        m = ladder.model
        return any(q.order_id == order.order_id for q in m.own_at(m.top_px - px, MY_BIDS))

    def cell() -> str:
        m = ladder.model
        return m.data(m.index(m.top_px - px, MY_BIDS)) or ""

    wait(qtbot, lambda: on_ladder() and cell() != "", "the order on the ladder")
    assert "2" in cell()

    # 2. Move it through the touch from the ticket (a replace): it fills. The venue prevents
    # self-trades (cancel taker) and the demo's market maker quotes at the touch under the
    # same account, so it is paused first: its quotes are canceled and the replace trades
    # with the other participants.
    sv = ws.strategies_view
    wait(qtbot, lambda: sv.model.rowCount() > 0, "the strategies")

    def state() -> StrategyState:
        return next(x.state for x in sv.model.records() if x.strategy_id == DEMO_STRATEGY_ID)

    def mm_quotes() -> int:
        wm = ws.orders_view.working_model
        return sum(1 for o in wm.records() if o.strategy_id == DEMO_STRATEGY_ID)

    sv.select(DEMO_STRATEGY_ID)
    sv.buttons["pause"].click()
    wait(qtbot, lambda: state() is StrategyState.PAUSED and mm_quotes() == 0, "quotes pulled")
    ws.orders_view.set_working_only(False)
    ws.orders_view.table.selectRow(ws.orders_view.all_model.row_of(order.order_id))
    assert ticket.order is not None
    assert ticket.order.order_id == order.order_id
    ask = ticket.books["ESZ6"].ask_px_ticks
    ticket.price_edit.setText(formats.price("ESZ6", ask + 4).replace(",", ""))
    ticket.replace_button.click()
    wait(qtbot, lambda: (o := manual_order(ws)) and o.status is OrdStatus.FILLED, "the fill")
    filled = manual_order(ws)
    assert filled is not None
    assert filled.cum_qty_lots == 2
    assert filled.orig_client_order_ids == (order.client_order_id,)
    sv.buttons["start"].click()
    wait(qtbot, lambda: state() is StrategyState.RUNNING, "the market maker back")

    # 3. The position and its P&L.
    key = (MANUAL_STRATEGY_ID, "ESZ6")
    wait(qtbot, lambda: key in ws.positions_view.positions, "the manual position")
    position = ws.positions_view.positions[key]
    assert position.qty_lots == 2
    assert position.avg_px_ticks == pytest.approx(filled.avg_px_ticks)
    pm = ws.positions_view.model
    prow = next(
        r
        for r in range(pm.rowCount())
        if (pm.record(r).strategy, pm.record(r).symbol) == ("manual", "ESZ6")
    )
    assert pm.cell_text(prow, "position") == "2"
    assert pm.cell_text(prow, "total") != ""

    # 4. Selecting the execution shows its ExecutionReport: LastPx <31>, LastQty <32> named.
    em = ws.executions_view.model
    wait(
        qtbot,
        lambda: any(e.client_order_id == filled.client_order_id for e in em.records()),
        "the execution",
    )
    fill = next(e for e in em.records() if e.client_order_id == filled.client_order_id)
    needle = f"\x0117={fill.exec_id}\x01".encode()
    wait(qtbot, lambda: any(needle in r.ev.raw for r in ws.fix_view.model.records()), "its report")
    ws.executions_dock.raise_()
    ws.executions_view.table.selectRow(ws.executions_view.row_of_fill(fill.order_id, fill.exec_id))
    assert ws.fix_view.current is not None
    assert needle in ws.fix_view.current.raw
    fields = {r[1]: r for r in ws.fix_view.detail_rows()}
    last_px = formats.price("ESZ6", fill.last_px_ticks).replace(",", "")
    assert fields["31"][2] == "LastPx"
    assert Decimal(fields["31"][3]) == Decimal(last_px)
    assert fields["32"][2:4] == ("LastQty", str(fill.last_qty_lots))
    assert fields["35"][3:5] == ("8", "Execution report")
    assert "fail" not in ws.fix_view.check_label.text()

    # 5. Selecting the order lists its whole FIX chain, oldest first.
    ws.orders_view.table.clearSelection()
    ws.orders_view.table.selectRow(ws.orders_view.all_model.row_of(order.order_id))
    chain = [(r.ev.msg_type, r.ev.outbound) for r in ws.fix_view.visible_rows()]
    assert chain[:2] == [("D", True), ("8", False)]  # the new order, then its ack
    assert ("G", True) in chain  # the replace
    assert chain[-1] == ("8", False)
    assert ws.fix_view.chain == (order.client_order_id, filled.client_order_id)

    # 6. Edit a parameter of the running market maker; a value beyond its bound is refused.
    sv.select(DEMO_STRATEGY_ID)
    params = sv.params_model
    names = [params.data(params.index(r, 0)) for r in range(params.rowCount())]
    r = names.index("half_spread_ticks")
    params.setData(params.index(r, 1), "3")
    wait(qtbot, lambda: params.data(params.index(r, 1)) == "3", "the new half spread")
    params.setData(params.index(r, 1), "5000")
    wait(qtbot, lambda: sv.message.startswith("Refused"), "the refusal of 5000")
    assert "5000" in sv.message
    assert "1000" in sv.message.replace(",", "")
    assert params.data(params.index(r, 1)) == "3"

    # 7. Pause and resume.
    assert state() is StrategyState.RUNNING
    sv.buttons["pause"].click()
    wait(qtbot, lambda: state() is StrategyState.PAUSED, "the pause")
    sv.buttons["start"].click()
    wait(qtbot, lambda: state() is StrategyState.RUNNING, "the resume")

    # 8. Each kill-switch level: armed by one click, sent by the second, followed.
    ks = ws.kill_switch
    for level in (KillLevel.BLOCK_NEW, KillLevel.CANCEL_ALL, KillLevel.FLATTEN, KillLevel.OFF):
        ks.buttons[level].click()
        assert ks.armed is level
        ks.buttons[level].click()
        wait(qtbot, functools.partial(lambda lv: ks.level is lv, level), f"kill {level.name}")
        if level is not KillLevel.OFF:  # every level halts the strategies at once
            wait(qtbot, lambda: state() is StrategyState.HALTED, "the market maker halted")
            assert not sv.buttons["start"].isEnabled()  # no resume while engaged
        if level is KillLevel.BLOCK_NEW:
            ticket.price_edit.setText(formats.price("ESZ6", bid - 10).replace(",", ""))
            ticket.submit_button.click()
            wait(qtbot, lambda: "Refused" in ticket.message, "the blocked order's refusal")
        elif level is KillLevel.CANCEL_ALL:
            wait(qtbot, lambda: len(ws.orders_view.working_model) == 0, "every order canceled")
        elif level is KillLevel.FLATTEN:
            wait(qtbot, lambda: ws.positions_view.positions[key].qty_lots == 0, "flat manual")
    assert ks.level is KillLevel.OFF
    # Released: the market maker stays halted until it is resumed.
    assert state() is StrategyState.HALTED
    assert sv.buttons["start"].text() == "Resume"
    wait(qtbot, sv.buttons["start"].isEnabled, "Resume offered once the switch is released")
    sv.buttons["start"].click()
    wait(qtbot, lambda: state() is StrategyState.RUNNING, "the market maker resumed")
    QApplication.processEvents()
