# SPDX-License-Identifier: MIT
"""The halted state and folded alerts on screen, fed by a real engine's numbered stream.

The screenshot of the Monitor with every strategy halted by the kill switch,
``kill-switch-halted.png``, goes to ``$QWC_SCREENSHOTS`` when set, else to the test's temporary
folder; ``QWC_SCREENSHOTS=docs/screenshots`` regenerates the one in the docs. Look at it after
changing the strategies panel, the kill switch or the log.
"""

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication

from app.theme import apply_theme, load_theme
from engine.clock import TestClock
from engine.commands import CommandError, SubmitOrder
from engine.core import Engine
from engine.demo import DEMO_STRATEGY_ID, build_demo
from engine.embedded import EmbeddedEngineClient
from engine.enums import AlertLevel, KillLevel, Side
from engine.events import Alert, EventRecord
from engine.strategy.examples import MarketMaker, Taker
from widgets.log_view import LogView
from widgets.monitor.workspace import MonitorWorkspace

pytestmark = pytest.mark.gui

SHOT = "kill-switch-halted.png"


def test_log_shows_a_storm_as_one_line_with_its_count(qtbot: object) -> None:
    clock = TestClock()
    engine = Engine(clock)
    stream: list[EventRecord] = []
    engine.add_sink(stream.append)

    def storm(first: int, n: int) -> None:
        for i in range(first, first + n):
            engine.bus.publish(
                Alert(
                    ts_event=clock.now_ns(),
                    level=AlertLevel.WARNING,
                    source="oms",
                    text=f"order refused (QW-{i}): risk: max_open_orders: 100 open",
                )
            )
            clock.advance(1_000_000)

    view = LogView()
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    storm(0, 500)
    engine.bus.publish(
        Alert(ts_event=clock.now_ns(), level=AlertLevel.ERROR, source="fix", text="logout")
    )
    engine.alerts.flush()
    assert sum(isinstance(r.event, Alert) for r in stream) == 3  # first, other, the update
    view.on_events(stream)
    assert view.model.rowCount() == 2
    assert view.unread == 2
    top = view.visible_entries()[0]
    assert (top.source, top.count) == ("oms", 500)
    assert view.model.cell_text(0, "text") == (
        "×500  order refused (QW-499): risk: max_open_orders: 100 open"
    )
    tip = view.model.data(view.model.index(0, 3), 3)  # ToolTipRole
    assert tip.startswith("500 times, ")
    # More of the same: the line is replaced and moves back to the top; unread does not grow.
    engine.bus.publish(
        Alert(ts_event=clock.now_ns(), level=AlertLevel.ERROR, source="fix", text="logon")
    )
    view.on_events(stream[-1:])
    assert view.visible_entries()[0].text == "logon"
    mark = len(stream)
    storm(500, 20)
    engine.alerts.flush()
    view.on_events(stream[mark:])
    assert view.model.rowCount() == 3
    assert [e.count for e in view.visible_entries()] == [520, 1, 1]
    assert view.unread == 3


def _configure(engine: Engine) -> None:
    desk = build_demo(engine, transport="inprocess")
    desk.add_strategy(MarketMaker(20170102, ["NQZ6"], half_spread_ticks=2), autostart=True)
    desk.add_strategy(Taker(20170103, ["CLF7"]), autostart=True)


def test_monitor_shows_strategies_halted_by_the_kill_switch(
    qtbot: object, qapp: QApplication, tmp_path: Path
) -> None:
    palette, sheet = qapp.palette(), qapp.styleSheet()
    apply_theme(qapp, load_theme("dark"))
    client = EmbeddedEngineClient(configure=_configure)
    client.start()
    ws = MonitorWorkspace(send=client.send)
    qtbot.addWidget(ws)  # type: ignore[attr-defined]
    ws.resize(1600, 1000)
    ws.show()
    qtbot.waitExposed(ws)  # type: ignore[attr-defined]
    sv, ks = ws.strategies_view, ws.kill_switch
    got: list[EventRecord] = []

    def until(pred: Callable[[], object], what: str) -> None:
        def fed() -> bool:
            batch = client.drain()
            got.extend(batch)
            ws.on_events(batch)
            ws.flush()
            return bool(pred())

        try:
            qtbot.waitUntil(fed, timeout=10_000)  # type: ignore[attr-defined]
        except AssertionError as e:
            raise AssertionError(f"timed out waiting for {what}") from e

    try:
        until(lambda: len(ws.orders_view.all_model) > 60, "the demo's orders")
        start = time.monotonic()
        until(lambda: time.monotonic() - start > 0.5, "some fills and positions")
        ks.reason_edit.setText("P&L drawdown")
        ks.press(KillLevel.CANCEL_ALL)
        ks.press(KillLevel.CANCEL_ALL)  # confirmed: sent
        until(lambda: ks.level is KillLevel.CANCEL_ALL and len(sv.halted) == 3, "the halt")
        for px in range(6_700, 6_740):  # a trader insists: refused, counted, no blotter rows
            refused = client.send(
                SubmitOrder(symbol="CLF7", side=Side.BUY, qty_lots=1, px_ticks=px)
            ).result(2)
            assert isinstance(refused, CommandError)

        def refusals() -> list:
            return [
                e
                for e in ws.log_view.visible_entries()
                if e.source == "kill switch" and e.text.startswith("kill switch CANCEL_ALL: ")
            ]

        # The refusal alert's aggregate is updated within a second.
        until(lambda: [e.count for e in refusals()] == [40], "one line counting 40 refusals")
        assert refusals()[0].text.startswith("kill switch CANCEL_ALL: 40 orders refused since ")
        ws.strategies_dock.raise_()
        ws.logs_dock.raise_()
        ws.orders_view.set_working_only(False)  # the canceled quotes, newest first
        sv.select(DEMO_STRATEGY_ID)
        qtbot.wait(50)  # type: ignore[attr-defined]

        assert ks.state_label.text() == "● CANCEL ALL"
        assert sorted(sv.halted) == [DEMO_STRATEGY_ID, 20170102, 20170103]
        row = sv.model.row_of(DEMO_STRATEGY_ID)
        assert sv.model.cell_text(row, "state") == "Halted"
        assert sv.model.cell_text(row, "change").startswith("halted by kill switch CANCEL_ALL ")
        assert sv.halt_banner.isVisible()
        assert sv.halt_banner.text() == (
            "Kill switch CANCEL ALL engaged: 3 strategies halted. Release the switch, then "
            "resume each strategy."
        )
        assert sv.buttons["start"].text() == "Resume"
        assert not sv.buttons["start"].isEnabled()
        assert sv.buttons["stop"].isEnabled()
        assert not any(o.strategy_id == 0 for o in ws.orders_view.all_model.records())
        image = ws.grab()
        assert image.width() == 1600
        out = Path(os.environ.get("QWC_SCREENSHOTS") or tmp_path)
        out.mkdir(parents=True, exist_ok=True)
        assert image.save(str(out / SHOT))

        # Released: every strategy stays halted until resumed, and Resume is offered.
        ks.press(KillLevel.OFF)
        ks.press(KillLevel.OFF)
        until(lambda: ks.level is sv.kill_level is KillLevel.OFF, "the release")
        assert sorted(sv.halted) == [DEMO_STRATEGY_ID, 20170102, 20170103]
        assert sv.buttons["start"].isEnabled()
        assert sv.halt_banner.text() == (
            "3 strategies halted by the kill switch, now released: select one and press "
            "Resume to trade again."
        )
        sv.buttons["start"].click()
        until(lambda: sv.model.cell_text(row, "state") == "Running", "the resume")
        until(lambda: sv.message.startswith("Done"), "the answer")
        assert sorted(sv.halted) == [20170102, 20170103]
        assert sv.halt_banner.text().startswith("2 strategies halted by the kill switch")
    finally:
        client.close()
        qapp.setStyleSheet(sheet)
        qapp.setPalette(palette)
