# SPDX-License-Identifier: MIT
"""The FIX sessions panel: rows per session, armed confirmations, the commands it emits."""

import pytest
from PySide6.QtCore import Qt

from engine.commands import ControlSession
from engine.enums import SessionState
from engine.events import EventRecord, SessionStatusChanged, VenueLinkChanged
from widgets.sessions_panel import SessionsPanel

pytestmark = pytest.mark.gui

SID = "FIX.4.4:QWCONSOLE->QWSIM"


def status(state: SessionState, out: int, inn: int, sid: str = SID) -> EventRecord:
    return EventRecord(
        1,
        SessionStatusChanged(
            ts_event=1_700_000_000_000_000_000,
            session_id=sid,
            state=state,
            next_sender_seq_num=out,
            next_target_seq_num=inn,
        ),
    )


def test_rows_update_by_session_and_actions_need_confirmation(qtbot: object) -> None:
    panel = SessionsPanel()
    qtbot.addWidget(panel)  # type: ignore[attr-defined]
    panel.on_events([status(SessionState.LOGON_SENT, 1, 1)])
    panel.on_events(
        [
            status(SessionState.LOGGED_ON, 42, 17),
            status(SessionState.LOGGED_ON, 5, 5, "FIX.4.2:A->B"),
        ]
    )
    model = panel.model
    assert model.rowCount() == 2
    assert [model.index(0, c).data() for c in range(4)] == [SID, "Logged on", "42", "17"]
    assert (panel.out_seq.value(), panel.in_seq.value()) == (42, 17)
    sent: list[ControlSession] = []
    panel.command_requested.connect(sent.append)
    qtbot.mouseClick(panel.reset, Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
    assert sent == []
    assert panel.reset.text() == "Confirm reset?"
    qtbot.mouseClick(panel.reset, Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
    assert [(c.session_id, c.action) for c in sent] == [(SID, "reset")]
    assert panel.reset.text() == "Reset"
    panel.out_seq.setValue(100)
    qtbot.mouseClick(panel.set_seq, Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
    qtbot.mouseClick(panel.logout, Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
    assert len(sent) == 1  # arming logout disarmed set_seq
    qtbot.mouseClick(panel.logout, Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
    qtbot.mouseClick(panel.logon, Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
    assert [c.action for c in sent] == ["reset", "logout", "logon"]
    qtbot.mouseClick(panel.set_seq, Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
    qtbot.mouseClick(panel.set_seq, Qt.MouseButton.LeftButton)  # type: ignore[attr-defined]
    assert (sent[-1].action, sent[-1].next_sender_seq_num, sent[-1].next_target_seq_num) == (
        "set_seq", 100, 17,
    )  # fmt: skip


def test_the_dictionary_column_names_the_sessions_own_files(qtbot: object) -> None:
    panel = SessionsPanel()
    qtbot.addWidget(panel)  # type: ignore[attr-defined]
    own = SessionStatusChanged(
        ts_event=1,
        session_id="FIXT.1.1:A->B",
        state=SessionState.LOGGED_ON,
        next_sender_seq_num=1,
        next_target_seq_num=1,
        dictionary="/etc/venue/FIXT11.xml",
        app_dictionary="/etc/venue/FIX50SP2-venue.xml",
    )
    panel.on_events([status(SessionState.LOGGED_ON, 1, 1), EventRecord(2, own)])
    model = panel.model
    col = model.columnCount() - 1
    assert model.headerData(col, Qt.Orientation.Horizontal) == "Dictionary"
    assert model.index(0, col).data() == "shipped"
    assert model.index(1, col).data() == "FIXT11.xml + FIX50SP2-venue.xml"
    assert model.index(1, col).data(Qt.ItemDataRole.ToolTipRole) == (
        "/etc/venue/FIXT11.xml\n/etc/venue/FIX50SP2-venue.xml"
    )


def test_an_ouch_link_is_a_row_of_its_own_and_the_fix_controls_leave_it_alone(
    qtbot: object,
) -> None:
    panel = SessionsPanel()
    qtbot.addWidget(panel)  # type: ignore[attr-defined]
    link = VenueLinkChanged(
        ts_event=1_700_000_000_000_000_000,
        venue="SIM-OUCH",
        protocol="OUCH",
        up=True,
        detail="QWC1@127.0.0.1:5002",
        state="Logged in",
        next_out=7,
        next_in=1_234,
    )
    fix_twin = VenueLinkChanged(ts_event=1, venue="SIM-FIX", protocol="FIX", up=True, detail=SID)
    panel.on_events(
        [status(SessionState.LOGGED_ON, 42, 17), EventRecord(2, link), EventRecord(3, fix_twin)]
    )
    model = panel.model
    assert model.rowCount() == 2  # the FIX session's VenueLinkChanged adds no row
    assert [model.index(1, c).data() for c in (0, 1, 2, 3, 5)] == [
        "OUCH QWC1@127.0.0.1:5002", "Logged in", "7", "1,234", "OUCH",
    ]  # fmt: skip
    panel.table.selectRow(1)
    assert not panel.reset.isEnabled()
    assert not panel.logon.isEnabled()
    assert "OUCH link of SIM-OUCH" in panel.message.text()
    down = VenueLinkChanged(
        ts_event=2, venue="SIM-OUCH", protocol="OUCH", up=False, detail="QWC1@127.0.0.1:5002"
    )
    panel.on_events([EventRecord(4, down)])
    assert model.rowCount() == 2
    assert model.index(1, 1).data() == "Disconnected"
    panel.table.selectRow(0)
    assert panel.reset.isEnabled()
    assert panel.message.text() == ""
