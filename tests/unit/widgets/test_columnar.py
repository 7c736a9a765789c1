# SPDX-License-Identifier: MIT
"""The column-wise blotter: key index, live and bulk updates, capacity, widths, selection."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from engine.enums import OrdStatus, Side
from engine.events import OrderView
from tests.unit.widgets.builders import bump, changed, instrument, order, records, strategy
from widgets.monitor.context import MonitorContext
from widgets.monitor.orders import ORDER_ROW_DTYPE, OrderColumns, OrdersView
from widgets.tables import DataTableView
from widgets.tables.columnar import ColumnarTableModel
from widgets.tables.keys import IntSet, KeyIndex

pytestmark = pytest.mark.gui


def test_key_index_maps_dense_and_far_keys() -> None:
    ix = KeyIndex()
    ix.set_many(np.arange(1, 1001, dtype=np.int64), np.arange(1000, dtype=np.int64) + 7)
    ix.set(10**15, 3)  # far from the others: the dict part
    ix.set(-5, 4)
    assert len(ix) == 1002
    assert ix.get(1) == 7
    assert ix.get(1000) == 1006
    assert ix.get(10**15) == 3
    assert ix.get(-5) == 4
    assert ix.get(1001) == -1
    keys = np.array([1, 10**15, 5000, -5], np.int64)
    assert ix.get_many(keys).tolist() == [7, 3, -1, 4]
    ix.pop_many(np.array([1, 10**15], np.int64))
    ix.pop(-5)
    assert ix.get_many(keys).tolist() == [-1, -1, -1, -1]
    assert len(ix) == 999
    ix.trim_below(900)
    assert ix.get(900) == 906
    assert ix.get(1000) == 1006
    ix.set(1001, 1)  # grows at the top
    assert ix.get(1001) == 1


def test_int_set_answers_like_a_set_through_merges_and_removals() -> None:
    rng = np.random.default_rng(5)
    members = IntSet(merge_at=64)
    reference: set[int] = set()
    for _ in range(40):
        new = rng.integers(-(2**62), 2**62, 50).tolist() + rng.integers(0, 40, 5).tolist()
        members.add_many(new)
        reference.update(new)
        gone = np.array([*list(reference)[:7], 123_456_789], np.int64)
        members.discard_many(gone)
        reference.difference_update(gone.tolist())
        probe = np.array(list(reference)[:30] + rng.integers(0, 60, 30).tolist(), np.int64)
        assert members.contains_many(probe).tolist() == [int(v) in reference for v in probe]
        assert len(members) == len(reference)
    assert all(v in members for v in reference)
    assert 10**18 not in members
    assert members.nbytes <= 8 * len(reference)  # the merged members, 8 bytes each
    members.clear()
    assert len(members) == 0
    assert members.contains_many(np.array([1, 2], np.int64)).tolist() == [False, False]


def test_working_index_stays_the_size_of_the_working_orders(qtbot: object) -> None:
    view = OrdersView(MonitorContext())
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    for base in range(1, 400_001, 20_000):
        fresh = [order(i) for i in range(base, base + 20_000, 500)]
        view.apply_orders(fresh)
        view.apply_orders([bump(o, status=OrdStatus.CANCELED, leaves_qty_lots=0) for o in fresh])
    assert len(view.working_model) == 0
    view.apply_orders([order(400_001)])
    assert view.working_model.nbytes < 1_000_000  # not 8 bytes for each of 400,000 ids
    assert view.working_model.get(400_001) == order(400_001)


def blotter(ctx: MonitorContext) -> OrdersView:
    view = OrdersView(ctx)
    ctx.on_events(records([instrument(), strategy(1, "mm-es")]))
    return view


def cells(view: OrdersView, working: bool = False) -> list[list[str]]:
    m = view.working_model if working else view.all_model
    return [[m.cell_text(r, c) for c in range(m.columnCount())] for r in range(m.rowCount())]


def history() -> list[OrderView]:
    """Orders in every state, a replace chain, texts and a pending cancel."""
    o1 = order(1, px=18_050, qty=10)
    o2 = order(2, side=Side.SELL, px=18_052, status=OrdStatus.FILLED, cum=10, avg=18_052.0)
    o3 = order(3, status=OrdStatus.REJECTED, text="risk: max position")
    o4 = order(4, strategy_id=20170101, orig=("C4",), px=18_001)
    o5 = dataclasses.replace(
        order(5, qty=8, cum=3, status=OrdStatus.PARTIALLY_FILLED), pending="cancel"
    )
    o6 = order(6, status=OrdStatus.PENDING_NEW)
    return [o1, o2, o3, o4, o5, o6, bump(o1, status=OrdStatus.CANCELED, leaves_qty_lots=0)]


def test_bulk_load_matches_the_live_path(qtbot: object) -> None:
    live, bulk = blotter(MonitorContext()), blotter(MonitorContext())
    qtbot.addWidget(live)  # type: ignore[attr-defined]
    qtbot.addWidget(bulk)  # type: ignore[attr-defined]
    orders = history()
    live.on_events(records([changed(o) for o in orders]))
    bulk.load_orders(OrderColumns.from_views(orders))
    assert cells(bulk) == cells(live)
    assert cells(bulk, working=True) == cells(live, working=True)
    assert bulk.counts == live.counts
    assert bulk.count_label.text() == live.count_label.text() == "3 working · 6 orders"
    assert bulk.all_model.records() == live.all_model.records()
    assert bulk.all_model.get(4) == orders[3]  # chain, int64 strategy id, texts round-trip
    assert bulk.all_model.get(5) == orders[4]
    # A second bulk load updates known orders in place: one filled, one replaced.
    later = [bump(orders[3], status=OrdStatus.FILLED, cum_qty_lots=10, leaves_qty_lots=0),
             bump(orders[4], client_order_id="C5.1", orig_client_order_ids=("C5",)),
             bump(orders[5], client_order_id="C6.2",
                  orig_client_order_ids=("C6", "C6.1"))]  # fmt: skip
    live.apply_orders(later)
    bulk.load_orders(OrderColumns.from_views(later))
    assert cells(bulk) == cells(live)
    assert cells(bulk, working=True) == cells(live, working=True)
    assert bulk.counts == live.counts
    assert bulk.all_model.cell_text(bulk.all_model.row_of(5), "chain") == "C5 → C5.1"
    # One step in the row, longer chains aside: both come back whole.
    assert bulk.all_model.cell_text(bulk.all_model.row_of(6), "chain") == "C6 → C6.1 → C6.2"
    assert bulk.all_model.records() == live.all_model.records()


def test_bulk_load_keeps_the_last_row_of_an_order_listed_twice(qtbot: object) -> None:
    view = blotter(MonitorContext())
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    o = order(9, qty=10)
    done = bump(o, status=OrdStatus.FILLED, cum_qty_lots=10, leaves_qty_lots=0)
    view.load_orders(OrderColumns.from_views([o, order(8), done]))
    assert len(view.all_model) == 2
    assert view.all_model.get(9) == done
    assert 9 not in view.working_model
    assert (view.counts[1].orders, view.counts[1].working, view.counts[1].filled) == (2, 1, 1)


def test_a_longer_clordid_widens_the_column_without_losing_others(qtbot: object) -> None:
    view = blotter(MonitorContext())
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    view.apply_orders([order(1), order(2)])
    long_id = "QW-20251204-ESZ6-000000000042-é"
    view.apply_orders([bump(order(2), client_order_id=long_id), order(3)])
    m = view.all_model
    assert [m.cell_text(r, "client_order_id") for r in range(3)] == ["C3", long_id, "C1"]
    assert m.dtype["client_order_id"].itemsize >= len(long_id.encode())


def test_the_clordid_column_widens_rarely_not_per_digit(qtbot: object) -> None:
    # Every widening copies the table on the GUI thread: the engine's ClOrdIDs ("F" + 6 + "-"
    # + a counter) fit from the start, and a longer one at least doubles the width.
    view = blotter(MonitorContext())
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    m = view.all_model
    view.apply_orders([bump(order(1), client_order_id="F0A1B2C-" + "9" * 16)])  # 24 bytes
    assert m.dtype["client_order_id"].itemsize == 24
    buffer = m._buf
    view.apply_orders([bump(order(2), client_order_id="X" * 25)])
    assert m.dtype["client_order_id"].itemsize == 48
    assert m._buf is not buffer  # widened once, by copying ...
    buffer = m._buf
    for n, width in enumerate(range(26, 49), start=3):
        view.apply_orders([bump(order(n), client_order_id="Y" * width)])
    assert m._buf is buffer  # ... and not again for each longer ID up to twice the width
    assert m.cell_text(0, "client_order_id") == "Y" * 48


def test_capacity_drops_the_oldest_and_chains_leave_with_the_last_model(qtbot: object) -> None:
    view = blotter(MonitorContext())
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    view.all_model.capacity = 100
    # Chains of two steps and more are kept aside; one step is in the row.
    view.apply_orders([order(1, orig=("A1", "C1"))])  # working: stays in "Working"
    done = [
        bump(order(i, orig=(f"A{i}", f"C{i}")), status=OrdStatus.CANCELED, leaves_qty_lots=0)
        for i in range(2, 81)
    ]
    view.apply_orders(done)
    view.apply_orders([order(i, orig=(f"C{i}",) if i % 2 else ()) for i in range(81, 130)])
    m = view.all_model
    assert len(m) == 129 - (129 - 100 + 100 // 20)  # a twentieth more than needed went
    assert 2 not in m
    assert m.get(2) is None
    assert 34 not in m
    assert 35 in m
    assert 2 not in view.codec.chains  # gone from both models
    assert view.codec.chains[35] == ("A35", "C35")
    assert m.get(127) == order(127, orig=("C127",))
    assert 127 not in view.codec.chains
    # Order 1 left "All" but still works: its row and its chain stay in "Working".
    assert 1 not in m
    assert view.working_model.get(1) == order(1, orig=("A1", "C1"))
    assert m.get(128) == order(128)
    assert m.row_of(129) == 0
    assert [m.record(r).order_id for r in range(3)] == [129, 128, 127]
    # Re-sent, it is new to "All" but not a new order; "Working" reads it from "All" again.
    again = bump(order(1, orig=("A1", "C1")), cum_qty_lots=1, leaves_qty_lots=9)
    view.apply_orders([again])
    assert m.row_of(1) == 0
    assert view.counts[1].orders == 129
    assert view.working_model.get(1) == again
    assert view.working_model.cell_text(view.working_model.row_of(1), "filled") == "1"
    view.apply_orders([bump(again, status=OrdStatus.CANCELED, leaves_qty_lots=0)])
    assert 1 not in view.working_model
    assert view.codec.chains[1] == ("A1", "C1")  # still in "All"


def test_a_working_order_beyond_all_s_capacity_at_once_still_shows(qtbot: object) -> None:
    view = blotter(MonitorContext())
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    view.all_model.capacity = 10
    view.load_orders(OrderColumns.from_views([order(i) for i in range(1, 31)]))
    assert len(view.all_model) == 10 - 10 // 20
    assert len(view.working_model) == 30
    assert view.working_model.get(1) == order(1)
    assert view.working_model.cell_text(view.working_model.row_of(1), "client_order_id") == "C1"


def test_removing_working_orders_keeps_the_selection(qtbot: object) -> None:
    view = blotter(MonitorContext())
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    view.apply_orders([order(i) for i in range(1, 11)])
    table = view.table
    assert table.model() is view.working_model
    table.selectRow(view.working_model.row_of(4))
    gone = [bump(order(i), status=OrdStatus.CANCELED, leaves_qty_lots=0) for i in (9, 2, 5)]
    view.apply_orders(gone)
    assert len(view.working_model) == 7
    assert [o.order_id for o in view.selected_orders()] == [4]


def test_csv_export_and_paint_work_on_the_columnar_model(qtbot: object, tmp_path: object) -> None:
    view = blotter(MonitorContext())
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    view.apply_orders(history())
    view.set_working_only(False)
    view.resize(1200, 300)
    view.show()
    view.table.viewport().repaint()
    assert isinstance(view.all_model, ColumnarTableModel)
    path = Path(f"{tmp_path}/orders.csv")
    assert view.table.export_csv(path) == 6
    text = path.read_text(encoding="utf-8")
    assert "risk: max position" in text
    assert "4513.00" in text  # numeric columns without thousands separators


def test_an_empty_model_has_no_rows_and_clears(qtbot: object) -> None:
    view = blotter(MonitorContext())
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    view.load_orders(OrderColumns(np.zeros(0, ORDER_ROW_DTYPE), ("ESZ6",)))
    assert view.all_model.rowCount() == 0
    view.apply_orders(history())
    view.all_model.clear()
    assert view.all_model.rowCount() == 0
    assert view.all_model.get(4) is None
    view.apply_orders([order(4, orig=("C4",))])
    assert view.all_model.cell_text(0, "chain") == "C4 → C4.1"


def test_data_table_view_paints_any_row_table_model(qtbot: object) -> None:
    table = DataTableView("t")
    qtbot.addWidget(table)  # type: ignore[attr-defined]
    view = blotter(MonitorContext())
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    view.apply_orders(history())
    table.setModel(view.all_model)
    assert table.columnWidth(0) == 110  # widths from the column specs
    assert view.all_model.tone_colors  # tones handed over


def test_key_ranges_far_apart_stay_an_array_and_a_dict() -> None:
    """Two engines' order ids (the second offset by 10^12) in one batch: no terabyte index."""
    from widgets.tables.keys import KeyIndex

    index = KeyIndex()
    keys = np.array([*range(1, 1001), *range(10**12 + 1, 10**12 + 11)], np.int64)
    index.set_many(keys, np.arange(keys.shape[0], dtype=np.int64))
    assert index.nbytes < 1_000_000
    assert len(index) == 1010
    assert index.get_many(keys).tolist() == list(range(1010))
    assert index.get(10**12 + 5) == 1004
    index.pop_many(keys[-3:])
    assert len(index) == 1007
    assert index.get(10**12 + 10) == -1
