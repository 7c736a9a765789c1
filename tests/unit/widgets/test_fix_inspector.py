# SPDX-License-Identifier: MIT
"""The FIX inspector: filters, the detail pane with names from an injected dictionary."""

from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication

from engine.enums import SessionState
from engine.events import SessionStatusChanged
from engine.fix.dictionary import default_dictionary_path
from engine.fix.edit.describe import FieldDescriber
from engine.fix.edit.splitting import split_fields
from tests.unit.widgets.builders import T0, fix_message, records
from widgets.fix_inspector import FixInspector, field_value

pytestmark = pytest.mark.gui

NAMES = {8: "BeginString", 35: "MsgType", 11: "ClOrdID", 54: "Side", 55: "Symbol", 39: "OrdStatus"}
MEANINGS = {
    (35, b"D"): "NewOrderSingle",
    (35, b"8"): "ExecutionReport",
    (54, b"1"): "Buy",
    (39, b"0"): "New",
}


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
    rows = view.detail_rows()
    assert rows[1] == (0, "35", "MsgType", "8", "ExecutionReport", "")
    assert rows[4] == (0, "39", "OrdStatus", "0", "New", "")
    assert len(rows) == 7
    assert view.check_label.text() == "Not checked: no FIX dictionary"
    assert view.raw_edit.toPlainText() == "8=FIX.4.4|35=8|34=3|11=A1|39=0|55=ESZ6|10=000|"
    assert "+4.5 µs → received 14:30:00.001004" in view.times_label.text()
    assert view.copy_raw() == view.raw_edit.toPlainText()
    assert QApplication.clipboard().text() == view.raw_edit.toPlainText()


NOS_WITH_PARTIES = (
    "8=FIX.4.4|9=120|35=D|34=2|49=CL|52=20261202-14:30:00.000|56=EX|11=A1|453=2|448=P1|447=D|"
    "452=1|448=P2|447=D|452=3|21=1|55=ESZ6|54=Z|60=20261202-14:30:00.000|44=abc|10=000|"
)


@pytest.fixture(scope="module")
def describer() -> FieldDescriber:
    return FieldDescriber(preload=False)


def test_detail_pane_shows_sections_groups_as_a_tree_and_fields_failing_validation(
    qtbot: object, describer: FieldDescriber
) -> None:
    v = FixInspector(describer)
    qtbot.addWidget(v)  # type: ignore[attr-defined]
    v.on_events(records([fix_message(NOS_WITH_PARTIES, seq=2)]))
    v.table.selectRow(0)
    rows = v.detail_rows()
    sections = [r for r in rows if r[0] == 0]
    assert [r[2] for r in sections] == ["Header", "Body", "Trailer"]
    assert sections[0][3] == "7 fields"
    # NoPartyIDs <453> holds two entries of three named fields each.
    i = next(n for n, r in enumerate(rows) if r[1] == "453")
    assert rows[i][:4] == (1, "453", "NoPartyIDs", "2")
    assert rows[i + 1][:4] == (2, "", "Entry 1", "3 fields")
    assert rows[i + 2][:5] == (3, "448", "PartyID", "P1", "")
    assert rows[i + 4][1:5] == ("452", "PartyRole", "1", "Executing firm")
    assert rows[i + 5][2] == "Entry 2"
    # The bad enum, the bad price and the missing OrdType are marked with QuickFIX's reasons.
    failing = {r[1]: r[5] for r in rows if r[5] and r[1]}
    assert failing == {
        "54": "⚠ Value is incorrect (out of range) for this tag",
        "44": "⚠ Incorrect data format for value",
        "40": "⚠ Required tag missing",
    }
    assert next(r for r in rows if r[1] == "40")[3] == "(missing)"
    assert sections[1][5] == "⚠ 3 failing below"
    assert v.check_label.text() == (
        "⚠ 3 fields fail validation against the shipped FIX.4.4 dictionary: "
        "Side <54>, Price <44>, OrdType <40>"
    )
    body = v.fields_tree.topLevelItem(1)
    assert body is not None
    items = [body.child(n) for n in range(body.childCount())]
    side = next(i for i in items if i is not None and i.text(1) == "54")
    assert side.foreground(2).color() == v.table.tone_color("bad")
    assert side.toolTip(2) == "Value is incorrect (out of range) for this tag"
    assert v.raw_edit.toPlainText() == NOS_WITH_PARTIES


def test_a_valid_execution_report_passes_and_names_last_px_and_last_qty(
    qtbot: object, describer: FieldDescriber
) -> None:
    v = FixInspector(describer)
    qtbot.addWidget(v)  # type: ignore[attr-defined]
    v.on_events(
        records(
            [
                fix_message(
                    "8=FIX.4.4|9=120|35=8|34=3|49=EX|52=20261202-14:30:00.000|56=CL|37=O1|11=A1|17=X1|"
                    "150=F|39=2|55=ESZ6|54=1|151=0|14=5|6=4510.25|31=4510.25|32=5|10=000|",
                    outbound=False,
                )
            ]
        )
    )
    v.table.selectRow(0)
    by_tag = {r[1]: r for r in v.detail_rows()}
    assert by_tag["31"][2:4] == ("LastPx", "4510.25")
    assert by_tag["32"][2:4] == ("LastQty", "5")
    assert by_tag["150"][2:5] == ("ExecType", "F", "Trade")
    assert v.check_label.text() == "✓ Every field passes the shipped FIX.4.4 dictionary"


VENUE_REPORT = (
    "8=FIX.4.4|9=120|35=8|34=3|49=EX|52=20261202-14:30:00.000|56=CL|37=O1|11=A1|17=X1|"
    "150=F|39=2|55=ESZ6|54=1|151=0|14=5|6=4510.25|31=4510.25|32=5|5001=RL|10=000|"
)


def test_a_session_is_checked_against_its_own_dictionary_file(
    qtbot: object, tmp_path: Path
) -> None:
    # The venue's dictionary: the shipped FIX 4.4 plus a liquidity code <5001> on reports.
    text = default_dictionary_path("FIX.4.4").read_text()
    text = text.replace(
        "<fields>",
        '<fields>\n  <field number="5001" name="VenueLiquidity" '
        'type="CHAR">\n   <value enum="R" description="REMOVED"/>\n  </field>',
        1,
    )
    report_at = text.index("<message name='ExecutionReport'")
    at = text.index(">", report_at) + 1
    text = text[:at] + '\n   <field name="VenueLiquidity" required="N"/>' + text[at:]
    venue = tmp_path / "FIX44-venue.xml"
    venue.write_text(text)
    describer = FieldDescriber(preload=False)
    v = FixInspector(describer)
    qtbot.addWidget(v)  # type: ignore[attr-defined]
    venue_sid, plain_sid = "FIX.4.4:CL->VENUE", "FIX.4.4:CL->OTHER"
    report = VENUE_REPORT.replace("5001=RL", "5001=R")
    on_venue = fix_message(report, outbound=False, seq=3, session=venue_sid)
    on_plain = fix_message(report, outbound=False, seq=3, session=plain_sid)
    v.on_events(records([
        SessionStatusChanged(ts_event=T0, session_id=venue_sid, state=SessionState.LOGGED_ON,
                             next_sender_seq_num=2, next_target_seq_num=2,
                             dictionary=str(venue)),
        on_venue,
        on_plain,
    ]))  # fmt: skip
    qtbot.waitUntil(lambda: describer.file_loaded(str(venue)), timeout=10_000)  # type: ignore[attr-defined]
    v.show_message(on_venue)
    by_tag = {r[1]: r for r in v.detail_rows()}
    assert by_tag["5001"][2:6] == ("VenueLiquidity", "R", "Removed", "")
    assert v.check_label.text() == "✓ Every field passes FIX44-venue.xml"
    # The same report on a session without its own file: checked against the shipped one.
    v.show_message(on_plain)
    by_tag = {r[1]: r for r in v.detail_rows()}
    assert by_tag["5001"][5] == "⚠ Invalid tag number"  # unknown to FIX 4.4
    assert "against the shipped FIX.4.4 dictionary" in v.check_label.text()
    # A file the console cannot read (a remote engine's path) is said so, not hidden.
    describer.note_session(venue_sid, "/nowhere/FIX44-remote.xml")
    qtbot.waitUntil(lambda: describer.file_loaded("/nowhere/FIX44-remote.xml"), timeout=10_000)  # type: ignore[attr-defined]
    v.show_message(on_venue)
    assert "the shipped FIX.4.4 dictionary (the session's FIX44-remote.xml not readable here" in (
        v.check_label.text()
    )


def test_an_order_chain_lists_its_messages_oldest_first(view: FixInspector) -> None:
    view.on_events(records([
        fix_message("8=FIX.4.4|35=G|34=5|11=A1.1|41=A1|55=ESZ6|10=000|", seq=5),
        fix_message("8=FIX.4.4|35=8|34=6|11=A1.1|41=A1|17=E9|39=5|10=000|", outbound=False,
                    seq=6),
        fix_message("8=FIX.4.4|35=D|34=6|11=Z9|55=ESZ6|10=000|", seq=6),
    ]))  # fmt: skip
    view.set_filter(direction="in")  # the chain ignores the filters
    view.show_chain(("A1", "A1.1"), "A1.1")
    shown = view.visible_rows()
    assert [(r.ev.msg_type, r.ev.seq_num) for r in shown] == [
        ("D", 2), ("8", 3), ("G", 5), ("8", 6)
    ]  # fmt: skip
    assert view.chain_label.text() == "Order A1.1 (A1 → A1.1): 4 messages, oldest first"
    assert view.current is shown[0].ev
    assert view.session_combo.isHidden()
    assert view.show_execution(("A1", "A1.1"), "E9")
    assert view.current is shown[3].ev
    # A report asked for before it arrived is selected when it does.
    assert not view.show_execution(("A1", "A1.1"), "E10")
    late = fix_message(
        "8=FIX.4.4|35=8|34=7|11=A1.1|41=A1|17=E10|39=2|10=000|", outbound=False, seq=7
    )
    view.on_events(records([late]))
    assert view.current == late  # rebuilt from the list's stored bytes
    view.show_all_button.click()
    assert view.chain == ()
    # The direction filter is back, newest first.
    assert [r.ev.seq_num for r in view.visible_rows()] == [7, 6, 3]
    assert not view.session_combo.isHidden()


def test_split_fields_marks_malformed_fields() -> None:
    assert split_fields(b"8=FIX.4.4\x01junk\x0135=0\x01") == [
        (8, b"FIX.4.4"),
        (-1, b"junk"),
        (35, b"0"),
    ]
    assert field_value(b"8=FIX.4.4\x0111=X\x01", 11) == "X"
    assert field_value(b"8=FIX.4.4\x01", 11) == ""


def test_ouch_messages_share_the_list_with_every_field_named_and_their_bytes_in_hex(
    view: FixInspector,
) -> None:
    from engine.venues.ouch.messages import EnterOrder, OrderExecuted, TagValue
    from engine.venues.ouch.session import message_seen

    enter = EnterOrder(
        user_ref_num=12,
        side="B",
        quantity=300,
        symbol="CLF7",
        price=685_000,
        cl_ord_id="O12",
        appendage=(TagValue.of("Firm", "QWCN"),),
    )
    executed = OrderExecuted(
        timestamp=5,
        user_ref_num=12,
        quantity=100,
        price=685_000,
        liquidity_flag="R",
        match_number=77,
    )
    link = "QWC1@127.0.0.1:5002"
    view.on_events(records([
        message_seen(enter, enter.encode(), link=link, outbound=True, seq=0,
                     now_ns=T0 + 5_000_000),
        message_seen(executed, executed.encode(), link=link, outbound=False, seq=9,
                     now_ns=T0 + 6_000_000),
    ]))  # fmt: skip
    assert view.proxy.rowCount() == 6
    view.set_filter(session=f"OUCH {link}")
    rows = view.visible_rows()
    assert [r.ev.msg_type for r in rows] == ["E OrderExecuted", "O EnterOrder"]
    assert {r.client_order_id for r in rows} == {"O12"}
    view.set_filter(text="Firm=QWCN")
    assert [r.ev.msg_type for r in view.visible_rows()] == ["O EnterOrder"]
    view.table.selectRow(0)
    detail = {(name, value) for _d, _tag, name, value, _m, _c in view.detail_rows()}
    meanings = {name: m for _d, _tag, name, _v, m, _c in view.detail_rows()}
    assert (meanings["Side"], meanings["TimeInForce"]) == ("buy", "day (market hours)")
    assert {
        ("UserRefNum", "12"),
        ("Symbol", "CLF7"),
        ("Price", "68.5000"),
        ("Firm", "QWCN"),
        ("AppendageLength", "6"),
    } <= detail
    assert "OUCH: fields as its specification names them" in view.check_label.text()
    hex_dump = view.raw_edit.toPlainText()
    # 'O', UserRefNum 12, 'B', Quantity 300, "CL"...
    assert hex_dump.startswith("0000  4f000000 0c420000 012c434c")
    dumped = "".join(line[6:] for line in hex_dump.splitlines()).replace(" ", "")
    assert bytes.fromhex(dumped) == enter.encode()
    # The order chain of O12 holds both, oldest first.
    view.set_filter()
    view.show_chain(["O12"])
    assert [r.ev.msg_type for r in view.visible_rows()] == ["O EnterOrder", "E OrderExecuted"]


def test_ouch_bytes_that_are_no_message_show_why_instead_of_failing(view: FixInspector) -> None:
    from engine.events import VenueMessageSeen

    link = "QWC1@127.0.0.1:5002"
    bad = VenueMessageSeen(
        ts_event=T0,
        session_id=f"OUCH {link}",
        protocol="OUCH",
        outbound=False,
        msg_type="? unknown",
        seq_num=4,
        raw=b"Zjunk",
        fields=(),
        ts_created=T0,
        ts_wire=T0,
    )
    view.on_events(records([bad]))
    view.set_filter(session=f"OUCH {link}")
    assert [r.ev.seq_num for r in view.visible_rows()] == [4]
    view.table.selectRow(0)
    rows = view.detail_rows()
    assert [name for _d, _tag, name, _v, _m, _c in rows] == ["error"]
    assert "Z" in rows[0][3]  # the unknown message type is named
