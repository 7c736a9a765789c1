# SPDX-License-Identifier: MIT
"""The FIX inspector: filters, the detail pane with names from an injected dictionary."""

import pytest
from PySide6.QtWidgets import QApplication

from tests.unit.widgets.builders import T0, fix_message, records
from widgets.fix_inspector import FixInspector, field_value, parse_fields

pytestmark = pytest.mark.gui

NAMES = {8: "BeginString", 35: "MsgType", 11: "ClOrdID", 54: "Side", 55: "Symbol", 39: "OrdStatus"}
MEANINGS = {(35, b"D"): "NewOrderSingle", (35, b"8"): "ExecutionReport", (54, b"1"): "Buy",
            (39, b"0"): "New"}  # fmt: skip


def describe(tag: int, value: bytes) -> tuple[str, str]:
    return NAMES.get(tag, ""), MEANINGS.get((tag, value), "")


@pytest.fixture
def view(qtbot: object) -> FixInspector:
    v = FixInspector(describe)
    qtbot.addWidget(v)  # type: ignore[attr-defined]
    v.on_events(records([
        fix_message("8=FIX.4.4|35=D|34=2|11=A1|55=ESZ6|54=1|10=000|", seq=2),
        fix_message("8=FIX.4.4|35=8|34=3|11=A1|39=0|55=ESZ6|10=000|", outbound=False, seq=3,
                    ts=T0 + 1_000_000),
        fix_message("8=FIX.4.4|35=D|34=3|11=B7|55=NQZ6|54=2|10=000|", seq=3,
                    session="FIX.4.4:CLIENT->OTHER"),
        fix_message("8=FIX.4.4|35=0|34=4|10=000|", seq=4),
    ]))  # fmt: skip
    return v


def test_fix_messages_filter_by_session_direction_type_clordid_and_text(view: FixInspector) -> None:
    assert view.proxy.rowCount() == 4
    assert view.model.cell_text(3, "msg_type") == "D NewOrderSingle"
    view.set_filter(direction="in")
    assert [r.ev.msg_type for r in view.visible_rows()] == ["8"]
    view.set_filter(session="FIX.4.4:CLIENT->OTHER")
    assert [r.client_order_id for r in view.visible_rows()] == ["B7"]
    view.set_filter(msg_types="D, 8")
    assert len(view.visible_rows()) == 3
    view.set_filter(client_order_id="A1")
    assert len(view.visible_rows()) == 2
    view.set_filter(text="55=nqz6")
    assert [r.client_order_id for r in view.visible_rows()] == ["B7"]
    view.set_filter(text="39=0|55=ESZ6")
    assert [r.ev.msg_type for r in view.visible_rows()] == ["8"]
    view.set_filter()
    assert view.proxy.rowCount() == 4


def test_detail_pane_names_every_field_and_shows_timestamps_and_raw(view: FixInspector) -> None:
    view.set_filter(direction="in")
    view.table.selectRow(0)
    fm = view.fields_model
    assert fm.rows[1] == ("35", "MsgType", "8", "ExecutionReport")
    assert fm.rows[4] == ("39", "OrdStatus", "0", "New")
    assert len(fm.rows) == 7
    assert view.raw_edit.toPlainText() == "8=FIX.4.4|35=8|34=3|11=A1|39=0|55=ESZ6|10=000|"
    assert "+4.5 µs → received 14:30:00.001004" in view.times_label.text()
    assert view.copy_raw() == view.raw_edit.toPlainText()
    assert QApplication.clipboard().text() == view.raw_edit.toPlainText()


def test_parse_fields_marks_malformed_fields() -> None:
    assert parse_fields(b"8=FIX.4.4\x01junk\x0135=0\x01") == [(8, b"FIX.4.4"), (-1, b"junk"),
                                                            (35, b"0")]  # fmt: skip
    assert field_value(b"8=FIX.4.4\x0111=X\x01", 11) == "X"
    assert field_value(b"8=FIX.4.4\x01", 11) == ""
