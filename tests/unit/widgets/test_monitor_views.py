# SPDX-License-Identifier: MIT
"""Orders, executions, positions and strategies fed with real engine event batches."""

import dataclasses

import pytest

from engine.commands import CommandError, ControlStrategy, Flatten, SetStrategyParameters
from engine.enums import OrdStatus, Side, StrategyState
from tests.unit.widgets.builders import (
    T0,
    bump,
    changed,
    fill,
    instrument,
    order,
    position,
    records,
    strategy,
)
from widgets.monitor.context import MonitorContext
from widgets.monitor.executions import ExecutionsView
from widgets.monitor.orders import OrderCounts, OrdersView
from widgets.monitor.positions import PositionsView
from widgets.monitor.strategies import StrategiesView, parse_parameter

pytestmark = pytest.mark.gui


def feed(ctx: MonitorContext, view: object, *events: object) -> None:
    batch = records(events)  # type: ignore[arg-type]
    ctx.on_events(batch)
    view.on_events(batch)  # type: ignore[attr-defined]


@pytest.fixture
def ctx() -> MonitorContext:
    return MonitorContext()


def showing_empty(view: OrdersView) -> bool:
    """Read the panel's state afresh (events change it)."""
    return view.panel.showing_empty


def last(sent: list[object]) -> object:
    """Return the newest command sent (read afresh after each click)."""
    return sent[-1]


def test_orders_blotter_shows_all_and_working_orders(qtbot: object, ctx: MonitorContext) -> None:
    view = OrdersView(ctx)
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    assert showing_empty(view)
    o1 = order(1, px=18_050, qty=10)
    o2 = order(2, side=Side.SELL, px=18_052, status=OrdStatus.FILLED, cum=10, avg=18_052.0)
    o3 = order(3, status=OrdStatus.REJECTED, text="risk: max position")
    feed(ctx, view, instrument(), strategy(1, "mm-es"), changed(o1), changed(o2), changed(o3))
    assert not showing_empty(view)
    assert view.working_only
    assert view.working_model.rowCount() == 1
    assert view.all_model.rowCount() == 3
    m = view.all_model
    # Newest first; prices formatted with the instrument's tick size.
    assert m.cell_text(0, "client_order_id") == "C3"
    assert m.cell_text(1, "price") == "4,513.00"
    assert m.cell_text(1, "avg_price") == "4,513.0000"
    assert m.cell_text(1, "status") == "Filled"
    assert m.cell_text(2, "strategy") == "mm-es (1)"  # name and id
    assert m.cell_text(2, "side") == "Buy"
    assert m.cell_text(2, "latency") == "84.5 µs"
    assert m.cell_text(2, "created") == "14:30:00.000000"
    assert m.cell_text(0, "text") == "risk: max position"
    assert view.count_label.text() == "1 working · 3 orders"
    view.set_working_only(False)
    assert view.table.model() is view.all_model


def test_order_update_is_keyed_and_leaves_working_when_done(
    qtbot: object, ctx: MonitorContext
) -> None:
    view = OrdersView(ctx)
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    o = order(7, qty=10)
    feed(ctx, view, instrument(), changed(o))
    partial = bump(
        o,
        status=OrdStatus.PARTIALLY_FILLED,
        cum_qty_lots=4,
        leaves_qty_lots=6,
        avg_px_ticks=18_000.0,
    )
    replaced = bump(partial, client_order_id="C7.1", orig_client_order_ids=("C7",), px_ticks=18_001)
    feed(ctx, view, changed(partial), changed(replaced))
    assert view.all_model.rowCount() == 1
    assert view.working_model.rowCount() == 1
    assert view.all_model.cell_text(0, "filled") == "4"
    assert view.all_model.cell_text(0, "chain") == "C7 → C7.1"
    assert view.all_model.cell_text(0, "price") == "4,500.25"
    assert view.counts[1].working == 1
    feed(ctx, view, changed(bump(replaced, status=OrdStatus.CANCELED, leaves_qty_lots=0)))
    assert view.working_model.rowCount() == 0
    assert view.all_model.cell_text(0, "status") == "Canceled"
    assert (view.counts[1].orders, view.counts[1].working) == (1, 0)


def test_prices_render_once_the_instrument_arrives(qtbot: object, ctx: MonitorContext) -> None:
    view = OrdersView(ctx)
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    feed(ctx, view, changed(order(1, symbol="NQZ6", px=80_000)))
    assert view.all_model.cell_text(0, "price") == "80,000t"
    feed(ctx, view, instrument("NQZ6", tick="0.25"))
    assert view.all_model.cell_text(0, "price") == "20,000.00"


def test_executions_list_fills_newest_first(qtbot: object, ctx: MonitorContext) -> None:
    view = ExecutionsView(ctx)
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    o = order(3, symbol="BTC", qty=2_500)
    feed(
        ctx,
        view,
        instrument("BTC", tick="0.5", lot="0.001"),
        fill(o, 1, 1_000, 190_401),
        fill(o, 2, 1_500, 190_402, ts=T0 + 1_000_000),
    )
    m = view.model
    assert m.rowCount() == 2
    assert m.cell_text(0, "exec_id") == "E3-2"
    assert m.cell_text(0, "qty") == "1.500"
    assert m.cell_text(0, "price") == "95,201.0"
    assert m.cell_text(1, "price") == "95,200.5"
    assert m.cell_text(0, "time") == "14:30:00.001000"
    assert view.count_label.text() == "2 fills"


def test_executions_keep_each_fill_once_and_rebuild_it_exactly(
    qtbot: object, ctx: MonitorContext
) -> None:
    view = ExecutionsView(ctx)
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    o = order(3, symbol="BTC", qty=2_500)
    f1 = fill(o, 1, 1_000, 190_401)
    f2 = fill(o, 2, 1_500, 190_402, ts=T0 + 1_000_000)
    feed(ctx, view, instrument("BTC", tick="0.5", lot="0.001"), f1, f2)
    feed(ctx, view, f1)  # delivered again (a resumed stream): shown once
    assert view.model.rowCount() == 2
    assert view.count_label.text() == "2 fills"
    # Rows hold the fills column-wise; the records rebuilt from them are the events.
    assert view.model.record(0) == f2
    assert view.model.record(1) == f1
    assert view.row_of_fill(f1.order_id, f1.exec_id) == 1
    assert view.row_of_fill(f1.order_id, "no such") == -1
    long_id = dataclasses.replace(fill(o, 3, 10, 190_403), exec_id="X" * 40)
    feed(ctx, view, long_id)  # a longer ExecID widens the column for every row
    assert view.model.record(0).exec_id == "X" * 40
    assert view.model.record(2) == f1


def test_executions_past_the_capacity_drop_the_oldest_and_forget_them(
    qtbot: object, ctx: MonitorContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    view = ExecutionsView(ctx)
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    view.model.capacity = 100
    o = order(3, symbol="BTC", qty=10_000)
    fills = [fill(o, i, 1, 190_000 + i) for i in range(1, 301)]
    feed(ctx, view, instrument("BTC", tick="0.5", lot="0.001"), *fills)
    kept = view.model.rowCount()
    assert 90 <= kept <= 100
    assert len(view._seen) == kept  # the dropped fills are forgotten, the set stays bounded
    feed(ctx, view, fills[0])  # long gone: shown again, as a new fill
    assert view.model.record(0) == fills[0]


def test_positions_show_totals_and_group_by_instrument(qtbot: object, ctx: MonitorContext) -> None:
    view = PositionsView(ctx)
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    feed(
        ctx,
        view,
        instrument(),
        strategy(1, "a"),
        strategy(2, "b"),
        position(1, "ESZ6", 5, 18_000.0, 18_004, 100.0, 250.0, 2.5),
        position(2, "ESZ6", 3, 18_002.0, 18_004, -40.0, 75.0, 1.0),
    )
    m = view.model
    assert m.rowCount() == 3
    assert m.cell_text(2, "strategy") == "Total"
    assert m.cell_text(2, "realized") == "60.00"
    assert m.cell_text(2, "unrealized") == "325.00"
    assert m.cell_text(2, "total") == "385.00"
    assert m.cell_text(2, "fees") == "3.50"
    assert m.cell_text(0, "position") == "5"
    assert m.cell_text(0, "mark") == "4,501.00"
    # A new mark updates the row in place.
    feed(ctx, view, position(1, "ESZ6", 5, 18_000.0, 18_008, 100.0, 500.0, 2.5))
    assert m.rowCount() == 3
    assert m.cell_text(0, "unrealized") == "500.00"
    assert m.cell_text(2, "total") == "635.00"
    view.set_grouping("symbol")
    assert m.rowCount() == 2
    assert m.cell_text(0, "position") == "8"
    assert m.cell_text(0, "avg_price") == "4,500.1875"  # (5*18000 + 3*18002) / 8 ticks
    assert m.cell_text(1, "total") == "635.00"
    view.set_grouping("strategy")
    assert [m.cell_text(r, "strategy") for r in range(3)] == ["a (1)", "b (2)", "Total"]
    assert view.strategy_pnl(2) == (-40.0, 75.0)


def test_a_flat_leg_shows_the_instruments_newest_mark(qtbot: object, ctx: MonitorContext) -> None:
    view = PositionsView(ctx)
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    feed(
        ctx,
        view,
        instrument(),
        strategy(1, "a"),
        strategy(2, "b"),
        position(1, "ESZ6", 0, 0.0, 18_004, 10.0, 0.0, ts=T0),  # flat since T0
        position(2, "ESZ6", 3, 18_002.0, 18_010, 0.0, 90.0, ts=T0 + 5_000_000_000),
    )
    m = view.model
    assert m.cell_text(0, "mark") == m.cell_text(1, "mark") == "4,502.50"  # 18,010 ticks
    assert m.cell_text(0, "unrealized") == "0.00"


def test_strategies_send_controls_and_parameter_edits(qtbot: object, ctx: MonitorContext) -> None:
    sent: list[object] = []
    view = StrategiesView(ctx, lambda _sid: OrderCounts(3, 1, 2), lambda _sid: (10.0, -2.5))
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    view.command_requested.connect(sent.append)
    feed(ctx, view, strategy(1, "mm-es"), strategy(2, "taker", state=StrategyState.PAUSED))
    m = view.model
    assert m.rowCount() == 2
    assert m.cell_text(0, "state") == "Running"
    assert m.cell_text(0, "total") == "7.50"
    assert m.cell_text(0, "orders") == "3"
    assert view.selected_id == 1
    assert view.params_model.rowCount() == 4
    assert not view.buttons["start"].isEnabled()
    view.buttons["pause"].click()
    view.buttons["flatten"].click()
    assert sent == [ControlStrategy(strategy_id=1, action="pause"), Flatten(strategy_id=1)]
    # Edit a value in the parameters table: converted to the parameter's type and sent.
    pm = view.params_model
    assert pm.data(pm.index(0, 0)) == "spread_ticks"
    pm.setData(pm.index(0, 1), "4")
    assert sent[-1] == SetStrategyParameters(strategy_id=1, values=(("spread_ticks", 4),))
    assert pm.data(pm.index(0, 1)) == "2"  # the engine's value until it reports the new one
    view.on_command_result(
        sent[-1],
        CommandError(
            command=sent[-1], ts_handled=T0, reason="spread_ticks=4 is above its maximum 3"
        ),
    )
    assert view.message == "Refused: spread_ticks=4 is above its maximum 3"
    pm.setData(pm.index(0, 1), "four")
    assert view.message == "spread_ticks not sent: 'four' is not a whole number"
    view.select(2)
    assert view.buttons["start"].isEnabled()
    view.buttons["start"].click()
    assert last(sent) == ControlStrategy(strategy_id=2, action="start")
    feed(ctx, view, strategy(2, "taker", params=(("threshold_ticks", 5),), change="parameters"))
    assert pm.data(pm.index(0, 1)) == "5"


@pytest.mark.parametrize(
    ("text", "current", "value"),
    [("7", 2, 7), ("0.5", 0.25, 0.5), ("off", True, False), ("abc", "x", "abc")],
)
def test_parse_parameter_keeps_the_type(text: str, current: object, value: object) -> None:
    assert parse_parameter(text, current) == value
    assert type(parse_parameter(text, current)) is type(value)


def test_strategy_ids_show_next_to_names_int64_included(
    qtbot: object, ctx: MonitorContext, tmp_path: object
) -> None:
    big = 3_000_000_000
    orders, fills = OrdersView(ctx), ExecutionsView(ctx)
    positions = PositionsView(ctx)
    for v in (orders, fills, positions):
        qtbot.addWidget(v)  # type: ignore[attr-defined]
    o1 = order(1, strategy_id=20170101, status=OrdStatus.FILLED, cum=10, avg=18_000.0)
    o2 = order(2, strategy_id=big)
    o3 = order(3, strategy_id=0)  # manual
    o4 = order(4, strategy_id=77)  # no name known (yet)
    events = [instrument(), strategy(20170101, "market maker"), strategy(big, "tiny buy"),
              changed(o1), changed(o2), changed(o3), changed(o4), fill(o1, 1, 10),
              position(big, "ESZ6", 2, 18_000.0, 18_004, 0.0, 8.0)]  # fmt: skip
    for v in (orders, fills, positions):
        feed(ctx, v, *events)
    m = orders.all_model
    texts = {
        m.cell_text(r, "client_order_id"): m.cell_text(r, "strategy") for r in range(m.rowCount())
    }
    assert texts == dict(
        zip(
            ["C1", "C2", "C3", "C4"],
            ["market maker (20170101)", "tiny buy (3000000000)", "manual", "#77"],
            strict=True,
        )
    )
    assert fills.model.cell_text(0, "strategy") == "market maker (20170101)"
    assert positions.model.cell_text(0, "strategy") == "tiny buy (3000000000)"
    # The name arriving later relabels the rows.
    feed(ctx, orders, strategy(77, "late"))
    assert "late (77)" in [m.cell_text(r, "strategy") for r in range(m.rowCount())]
    orders.resize(1100, 200)
    orders.grab().save(str(tmp_path) + "/orders.png")


def test_engine_events_keep_the_newest_and_format_them_when_shown(qtbot: object) -> None:
    from engine.enums import AlertLevel
    from engine.events import Alert
    from widgets.monitor.engine_events import EngineEventsModel

    model = EngineEventsModel(capacity=50)
    alerts = [
        Alert(
            ts_event=T0 + n * 1_000_000,
            level=AlertLevel.WARNING,
            source="risk",
            text=f"order near limit {n}",
        )
        for n in range(120)
    ]
    batch = records(alerts)
    for i in range(0, 120, 40):
        model.append(batch[i : i + 40])
    assert model.rowCount() == 50
    first = model.row_texts(0)
    assert first[0] == str(batch[70].seq)
    assert first[1:3] == ("14:30:00.070000", "Alert")
    assert "text=order near limit 70" in first[3]
    assert "level=warning" in first[3]
    assert model.data(model.index(49, 3)) == model.row_texts(49)[3]
    assert "order near limit 119" in model.row_texts(49)[3]
