# SPDX-License-Identifier: MIT
"""The generic keyed table model and view: batching, keys, removal, CSV export."""

import csv
from pathlib import Path

import pytest
from PySide6.QtCore import QModelIndex

from widgets.tables import Column, DataTableView, KeyedTableModel

pytestmark = pytest.mark.gui

Row = tuple[int, str, int]
COLUMNS: tuple[Column[Row], ...] = (
    Column("id", "ID", lambda r: str(r[0]), numeric=True),
    Column("name", "Name", lambda r: r[1]),
    Column("qty", "Qty", lambda r: f"{r[2]:,}", numeric=True),
)


def make_model(**kw: object) -> KeyedTableModel[int, Row]:
    return KeyedTableModel(COLUMNS, lambda r: r[0], **kw)  # type: ignore[arg-type]


def test_apply_inserts_a_batch_with_one_insert_and_updates_by_key(qtbot: object) -> None:
    model = make_model()
    inserts: list[tuple[int, int]] = []
    changes: list[tuple[int, int]] = []
    model.rowsInserted.connect(lambda _p, a, b: inserts.append((a, b)))
    model.dataChanged.connect(lambda a, b, _r=(): changes.append((a.row(), b.row())))
    model.apply([(i, f"n{i}", i * 1000) for i in range(100)])
    assert inserts == [(0, 99)]
    assert model.rowCount() == 100
    model.apply([(5, "five", 5), (7, "seven", 7), (200, "new", 1)])
    assert inserts == [(0, 99), (100, 100)]
    assert changes == [(5, 7)]
    assert model.cell_text(5, "name") == "five"
    assert model.cell_text(100, "qty") == "1"
    assert model.updates == 2


def test_newest_first_shows_the_last_insert_on_top(qtbot: object) -> None:
    model = make_model(newest_first=True)
    model.apply([(1, "a", 1), (2, "b", 2)])
    model.apply([(3, "c", 3)])
    assert [model.cell_text(r, "name") for r in range(3)] == ["c", "b", "a"]
    model.apply([(1, "A", 1)])
    assert model.cell_text(2, "name") == "A"
    assert model.row_of(3) == 0


def test_remove_keeps_the_selection_on_the_surviving_rows(qtbot: object) -> None:
    model = make_model()
    view = DataTableView("t")
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    view.setModel(model)
    model.apply([(i, f"n{i}", i) for i in range(10)])
    view.selectRow(6)
    model.apply([], remove=[1, 2, 3])
    assert model.rowCount() == 7
    assert [model.record(r)[0] for r in view.selected_rows()] == [6]
    assert model.row_of(6) == 3


def test_capacity_drops_the_oldest_rows(qtbot: object) -> None:
    model = make_model(capacity=5)
    model.apply([(i, "x", i) for i in range(8)])
    assert model.rowCount() == 5
    assert 2 not in model
    assert model.record(0)[0] == 3


def test_rows_stay_addressable_by_key_after_many_oldest_rows_left(qtbot: object) -> None:
    model = make_model(capacity=100)
    for start in range(0, 1000, 25):  # the oldest leave five more than needed at a time
        model.apply([(i, "x", i) for i in range(start, start + 25)])
        assert model.rowCount() <= 100
        assert model.rowCount() >= min(95, start + 25)
    n = model.rowCount()
    keys = [model.record(r)[0] for r in range(n)]
    assert keys == list(range(1000 - n, 1000))
    assert 1000 - n - 1 not in model
    model.apply([(990, "changed", 1)])  # an update in place after thousands of drops
    assert model.get(990) == (990, "changed", 1)
    assert model.record(model.row_of(990)) == (990, "changed", 1)
    model.apply([], remove=[995, 1000 - n])  # removal rebuilds the index
    assert model.rowCount() == n - 2
    assert model.row_of(996) == model.row_of(994) + 1
    model.apply([(1000, "x", 0)])
    assert model.record(model.rowCount() - 1)[0] == 1000


def test_export_csv_writes_every_row_without_thousands_separators(
    qtbot: object, tmp_path: Path
) -> None:
    model = make_model()
    view = DataTableView("t")
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    view.setModel(model)
    model.apply([(1, "alpha, inc", 1_234_567), (2, "beta", 5)])
    path = tmp_path / "out.csv"
    assert view.export_csv(path) == 2
    with path.open(newline="") as f:
        rows = list(csv.reader(f))
    assert rows == [["ID", "Name", "Qty"], ["1", "alpha, inc", "1234567"], ["2", "beta", "5"]]


def test_context_menu_offers_csv_export_and_copy(qtbot: object) -> None:
    model = make_model()
    view = DataTableView("t")
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    view.setModel(model)
    model.apply([(1, "a", 10), (2, "b", 20)])
    menu = view.build_menu()
    assert [a.text() for a in menu.actions()] == ["Copy rows", "Export to CSV…", "", "Columns"]
    columns = view.build_columns_menu()
    columns.actions()[1].setChecked(False)
    assert view.isColumnHidden(1)
    view.selectRow(1)
    assert view.copy_selection() == "2\tb\t20"
    assert model.rowCount(model.index(0, 0)) == 0
    assert model.rowCount(QModelIndex()) == 2


def test_remove_in_newest_first_order_keeps_selection_and_drops_new_keys(qtbot: object) -> None:
    model = make_model(newest_first=True)
    view = DataTableView("t")
    qtbot.addWidget(view)  # type: ignore[attr-defined]
    view.setModel(model)
    model.apply([(i, f"n{i}", i) for i in range(6)])  # shown 5, 4, 3, 2, 1, 0
    view.selectRow(1)  # key 4
    model.apply([(9, "x", 9)], remove=[5, 3, 9])
    assert [model.record(r)[0] for r in range(model.rowCount())] == [4, 2, 1, 0]
    assert [model.record(r)[0] for r in view.selected_rows()] == [4]
