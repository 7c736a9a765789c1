# SPDX-License-Identifier: MIT
"""The Enterprise Manager workspace, driven as a user would: real files, real engine sockets.

Screenshots go to ``$QWC_SCREENSHOTS`` when set (``docs/screenshots`` for the docs), else to the
test's temporary folder.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

from app.theme import apply_theme, load_theme
from engine.clock import TestClock
from engine.commands import CommandAck, CommandError
from engine.config.reader import load_config
from engine.demo import build_demo
from engine.embedded import EmbeddedEngineClient
from engine.fix.acceptance_app import AcceptanceApplication
from engine.fix.cli import build_session
from engine.fix.dictionary import DataDictionary
from engine.fix.edit.services import EditorServices
from engine.fix.settings import load_settings
from engine.fix.transport import SocketAcceptor
from engine.headless import build_from_config
from tests.unit.engine.fix.edit.test_cfgeditor import GO_FILE
from widgets.manager.workspace import ManagerWorkspace

pytestmark = pytest.mark.gui

ROOT = Path(__file__).resolve().parents[4]
FIX = ROOT / "resources" / "fix"
# Wednesday 2026-12-02 13:30 UTC: inside the sample FIXT session's New York hours.
NOW_NS = int(dt.datetime(2026, 12, 2, 13, 30, tzinfo=dt.UTC).timestamp()) * 1_000_000_000


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    target = os.environ.get("QWC_SCREENSHOTS")
    path = Path(target) if target else tmp_path / "shots"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def themed_app(qapp: QApplication) -> Iterator[QApplication]:
    palette, sheet, style = QPalette(qapp.palette()), qapp.styleSheet(), qapp.style().name()
    apply_theme(qapp, load_theme("dark"))
    yield qapp
    qapp.setStyleSheet(sheet)
    qapp.setPalette(palette)
    qapp.setStyle(style)


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """A working folder with the sample session file and the dictionaries it names."""
    (tmp_path / "resources" / "fix").mkdir(parents=True)
    for name in ("sessions.cfg", "FIX44.xml", "FIXT11.xml", "FIX50SP2.xml"):
        shutil.copy(FIX / name, tmp_path / "resources" / "fix" / name)
    shutil.copy(FIX / "sessions.cfg", tmp_path / "sessions.cfg")
    return tmp_path


@pytest.fixture
def ws(qtbot, themed_app: QApplication) -> ManagerWorkspace:  # type: ignore[no-untyped-def]
    services = EditorServices(TestClock(NOW_NS), dt.UTC)
    w = ManagerWorkspace(services)
    w.ask_on_close = False  # pytest-qt closes the window at teardown; nobody answers there
    qtbot.addWidget(w)
    w.resize(1800, 1000)
    w.show()
    qtbot.waitExposed(w)
    return w


def shot(widget: QWidget, out: Path, name: str) -> None:
    QApplication.processEvents()
    widget.grab().save(str(out / name))


def type_into(qtbot, widget: QWidget, text: str) -> None:  # type: ignore[no-untyped-def]
    widget.setFocus()
    widget.clear()  # type: ignore[attr-defined]
    qtbot.keyClicks(widget, text)
    qtbot.keyClick(widget, Qt.Key.Key_Return)


# ----------------------------------------------------------------------------- sessions


def test_unchanged_session_file_saves_byte_for_byte(ws: ManagerWorkspace, files: Path) -> None:
    cfg = files / "sessions.cfg"
    original = cfg.read_bytes()
    assert ws.open_path(cfg)
    assert not ws.sessions.modified
    ws.sessions.save(files / "copy.cfg")
    assert (files / "copy.cfg").read_bytes() == original


def test_change_heartbeat_undo_redo_and_save(  # type: ignore[no-untyped-def]
    qtbot, ws: ManagerWorkspace, files: Path, out_dir: Path
) -> None:
    cfg = files / "sessions.cfg"
    original = cfg.read_text()
    ws.open_path(cfg)
    ed = ws.sessions
    ed.select_section(0)  # [DEFAULT]
    row = ed.rows["HEARTBTINT"]
    assert row.line is not None
    assert row.line.text() == "30"
    type_into(qtbot, row.line, "45")
    assert ed.modified
    assert ws.tabs.tabText(0) == "Sessions — sessions.cfg ●"
    assert ed.raw.toPlainText() == original.replace("HeartBtInt=30", "HeartBtInt=45")
    # An initiator that inherits it shows the new value as inherited.
    ed.select_section(1)
    assert ed.rows["HEARTBTINT"].line.placeholderText() == "45"  # type: ignore[union-attr]
    assert ed.rows["HEARTBTINT"].source.text() == "from [DEFAULT]"
    ws.undo_action.trigger()
    assert ed.raw.toPlainText() == original
    assert not ed.modified
    assert ws.tabs.tabText(0) == "Sessions — sessions.cfg"
    ws.redo_action.trigger()
    ws.save()
    assert cfg.read_text() == original.replace("HeartBtInt=30", "HeartBtInt=45")
    assert [s.heart_bt_int for s in load_settings(cfg).sessions] == [45, 45, 45]
    shot(ws, out_dir, "manager-sessions.png")


def test_new_session_dialog_adds_a_valid_initiator(  # type: ignore[no-untyped-def]
    qtbot, ws: ManagerWorkspace, files: Path, out_dir: Path
) -> None:
    ws.open_path(files / "sessions.cfg")
    ed = ws.sessions
    assert ed.cfg is not None
    before = len(ed.cfg.session_sections())
    ed.select_section(0)  # [DEFAULT]: nothing to clone
    qtbot.mouseClick(ed.new_button, Qt.MouseButton.LeftButton)
    dialog = ed.new_dialog
    assert dialog is not None
    qtbot.waitExposed(dialog)
    assert not dialog.clone.isVisible()
    assert dialog.role.currentText() == "initiator"  # what [DEFAULT] says
    assert not dialog.ok_button.isEnabled()
    assert dialog.problem.text() == "SenderCompID and TargetCompID are required."
    qtbot.keyClicks(dialog.sender_id, "QWCONSOLE")
    qtbot.keyClicks(dialog.target_id, "SIMULATOR")
    assert dialog.problem.text() == "FIX.4.4:QWCONSOLE->SIMULATOR is already in this file."
    dialog.target_id.clear()
    qtbot.keyClicks(dialog.target_id, "BROKER2")
    assert dialog.problem.text() == "SocketConnectPort: a port from 1 to 65535 is required."
    qtbot.keyClicks(dialog.port, "70000")
    assert not dialog.ok_button.isEnabled()
    dialog.port.clear()
    qtbot.keyClicks(dialog.port, "5010")
    assert dialog.ok_button.isEnabled()
    assert dialog.preview.text().splitlines() == [
        "Adds to the file:",
        "[SESSION]",
        "ConnectionType=initiator",
        "BeginString=FIX.4.4",
        "SenderCompID=QWCONSOLE",
        "TargetCompID=BROKER2",
        "SocketConnectHost=127.0.0.1",
        "SocketConnectPort=5010",
    ]
    dialog.grab().save(str(out_dir / "manager-new-session.png"))
    qtbot.mouseClick(dialog.ok_button, Qt.MouseButton.LeftButton)
    sections = ed.cfg.session_sections()
    assert len(sections) == before + 1
    assert ed.section == sections[-1]
    assert ed.cfg.title(ed.section) == "FIX.4.4:QWCONSOLE->BROKER2"
    assert ed.cfg.errors() == []
    ws.undo_action.trigger()
    assert len(ed.cfg.session_sections()) == before
    ws.redo_action.trigger()
    ed.save()
    new = load_settings(files / "sessions.cfg").sessions[-1]
    assert str(new.session_id) == "FIX.4.4:QWCONSOLE->BROKER2"
    assert new.connect_addresses() == [("127.0.0.1", 5010)]
    assert new.heart_bt_int == 30  # inherited from [DEFAULT]


def test_new_session_dialog_fixt_acceptor_and_clone(  # type: ignore[no-untyped-def]
    qtbot, ws: ManagerWorkspace, files: Path, out_dir: Path
) -> None:
    ws.open_path(files / "sessions.cfg")
    ed = ws.sessions
    assert ed.cfg is not None
    # A FIXT.1.1 acceptor from scratch: DefaultApplVerID and both dictionaries are asked for.
    ed.select_section(0)
    dialog = ed.ask_new_session()
    assert dialog is not None
    qtbot.waitExposed(dialog)
    assert not dialog.appl_ver.isVisible()
    dialog.role.setCurrentText("acceptor")
    dialog.begin.setCurrentText("FIXT.1.1")
    assert dialog.appl_ver.isVisible()
    assert dialog.port_label.text() == "SocketAcceptPort"
    dialog.appl_ver.setCurrentText("FIX.5.0SP1")
    # Prefilled from the file's FIXT session; a shipped one follows the version chosen.
    assert dialog.transport_dd.text() == "resources/fix/FIXT11.xml"
    assert dialog.app_dd.text() == "resources/fix/FIX50SP2.xml"
    for edit, text in (
        (dialog.sender_id, "EXCH"),
        (dialog.target_id, "MEMBER1"),
        (dialog.port, "6001"),
    ):
        qtbot.keyClicks(edit, text)
    dialog.host.clear()
    assert dialog.problem_text() == ""
    dialog.grab().save(str(out_dir / "manager-new-session-fixt.png"))
    dialog.accept()
    sec = ed.section
    assert ed.cfg.title(sec) == "FIXT.1.1:EXCH->MEMBER1"
    assert ed.cfg.errors() == []
    assert ed.cfg.get(sec, "DefaultApplVerID") == "FIX.5.0SP1"
    assert ed.cfg.get(sec, "SocketAcceptHost") is None
    # Clone the FIXT initiator under a new TargetCompID: its other keys come along.
    ed.select_section(3)  # FIXT.1.1:QWCONSOLE->BROKER
    dialog = ed.ask_new_session()
    assert dialog is not None
    assert dialog.clone.isChecked()
    assert (dialog.begin.currentText(), dialog.sender_id.text()) == ("FIXT.1.1", "QWCONSOLE")
    assert (dialog.host.text(), dialog.port.text()) == ("127.0.0.1", "5002")
    qtbot.keyClicks(dialog.target_id, "BROKER_B")
    dialog.port.clear()
    qtbot.keyClicks(dialog.port, "5012")
    assert dialog.preview.text().endswith("… and 7 more keys of FIXT.1.1:QWCONSOLE->BROKER")
    dialog.grab().save(str(out_dir / "manager-new-session-clone.png"))
    dialog.accept()
    assert ed.cfg.errors() == []
    ed.save()
    clone = load_settings(files / "sessions.cfg").sessions[-1]
    assert str(clone.session_id) == "FIXT.1.1:QWCONSOLE->BROKER_B"
    assert clone.connect_addresses() == [("127.0.0.1", 5012), ("127.0.0.1", 5003)]
    assert (clone.time_zone, clone.reset_on_logon) == ("America/New_York", True)
    # A FIXT session inheriting DataDictionary from [DEFAULT] (QuickFIX's own examples do):
    # QuickFIX ignores it there, so the dialog lets it through and the file warns once.
    ed.set_value(0, "DataDictionary", "resources/fix/FIX44.xml")
    dialog = ed.ask_new_session()
    assert dialog is not None
    dialog.begin.setCurrentText("FIXT.1.1")
    for edit, text in ((dialog.sender_id, "A"), (dialog.target_id, "B"), (dialog.port, "1")):
        qtbot.keyClicks(edit, text)
    assert dialog.problem_text() == ""
    assert dialog.ok_button.isEnabled()
    dialog.reject()


def test_breaking_fixt_settings_shows_the_error(  # type: ignore[no-untyped-def]
    qtbot, ws: ManagerWorkspace, files: Path, out_dir: Path
) -> None:
    ws.open_path(files / "sessions.cfg")
    ed = ws.sessions
    ed.select_section(1)  # FIX.4.4:QWCONSOLE->SIMULATOR
    combo = ed.rows["BEGINSTRING"].combo
    assert combo is not None
    combo.setCurrentIndex(combo.findText("FIXT.1.1"))
    combo.activated.emit(combo.currentIndex())
    problems = [ed.problems_list.item(i).text() for i in range(ed.problems_list.count())]
    assert "sessions.cfg:21  DefaultApplVerID: required for FIXT.1.1 sessions" in problems
    assert (
        "sessions.cfg:27  DataDictionary: ignored for FIXT.1.1 (as QuickFIX does): "
        "TransportDataDictionary and AppDataDictionary apply"
    ) in problems
    row = ed.rows["DATADICTIONARY"]
    assert row.problem.isVisibleTo(ed)
    assert "ignored for FIXT.1.1" in row.problem.text()
    item = ed.sections_list.item(1)
    assert "3 errors" in item.text()
    assert ed.schedule_label.text() == "Fix this session's errors to see its schedule."
    shot(ws, out_dir, "manager-sessions-errors.png")
    # Clicking a problem selects the key's field.
    ed.center_tabs.setCurrentIndex(1)
    shot(ws, out_dir, "manager-sessions-raw.png")
    ed._on_problem_activated(ed.problems_list.item(0))
    assert ed.center_tabs.currentIndex() == 0


def test_raw_text_edit_updates_the_form_and_is_one_undo_step(  # type: ignore[no-untyped-def]
    qtbot, ws: ManagerWorkspace, files: Path
) -> None:
    ws.open_path(files / "sessions.cfg")
    ed = ws.sessions
    ed.center_tabs.setCurrentIndex(1)
    text = ed.raw.toPlainText().replace("ReconnectInterval=5", "ReconnectInterval=7")
    ed.raw.setPlainText(text)
    qtbot.waitUntil(lambda: ed.cfg.get(0, "ReconnectInterval") == "7", timeout=3000)  # type: ignore[union-attr]
    ed.select_section(0)
    assert ed.rows["RECONNECTINTERVAL"].line.text() == "7"  # type: ignore[union-attr]
    ws.undo_action.trigger()
    assert ed.cfg.get(0, "ReconnectInterval") == "5"  # type: ignore[union-attr]


def test_schedule_and_reset_explained_in_plain_words(ws: ManagerWorkspace, files: Path) -> None:
    ws.open_path(files / "sessions.cfg")
    ed = ws.sessions
    ed.select_section(3)  # the FIXT.1.1 session, New York hours
    text = ed.schedule_label.text()
    assert "Daily session on Mon, Tue, Wed, Thu, Fri, 08:00:00 to 17:00:00" in text
    assert "In session now until Wed 2026-12-02 17:00:00 EST." in text
    assert "ResetOnLogon=Y: both sequence numbers go back to 1" in ed.reset_label.text()


class _Acceptor:
    """The engine's own acceptor, on 127.0.0.1, in a thread with its own event loop."""

    def __init__(self, cfg: Path) -> None:
        self.loop = asyncio.new_event_loop()
        settings = load_settings(cfg)
        sessions = [
            build_session(s, AcceptanceApplication(), cfg.parent) for s in settings.sessions
        ]
        self.acceptor = SocketAcceptor(sessions, host="127.0.0.1", port=0)
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.acceptor.start(), self.loop).result(5)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.acceptor.stop(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


def test_test_connection_logs_on_with_the_edited_heartbeat(  # type: ignore[no-untyped-def]
    qtbot, ws: ManagerWorkspace, files: Path, out_dir: Path
) -> None:
    acc_cfg = files / "acceptor.cfg"
    acc_cfg.write_text(
        "[DEFAULT]\nConnectionType=acceptor\nStartTime=00:00:00\nEndTime=00:00:00\n"
        "SocketAcceptPort=1\n\n[SESSION]\nBeginString=FIX.4.4\nSenderCompID=SIMULATOR\n"
        "TargetCompID=QWCONSOLE\n"
    )
    acceptor = _Acceptor(acc_cfg)
    try:
        ws.open_path(files / "sessions.cfg")
        ed = ws.sessions
        ed.select_section(1)
        type_into(qtbot, ed.rows["SOCKETCONNECTPORT"].line, str(acceptor.acceptor.port))
        type_into(qtbot, ed.rows["HEARTBTINT"].line, "12")
        ed.save()
        qtbot.mouseClick(ed.test_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: ed.last_outcome is not None, timeout=10_000)
        outcome = ed.last_outcome
        assert outcome is not None
        assert outcome.ok, outcome.summary
        assert "|108=12|" in outcome.sent[0]
        assert ed.test_label.text().startswith("✔ Logged on to 127.0.0.1:")
        # The engine started from the saved file runs the edited session.
        saved = load_settings(files / "sessions.cfg").sessions[0]
        assert (saved.heart_bt_int, saved.socket_connect_port) == (12, acceptor.acceptor.port)
        shot(ws, out_dir, "manager-sessions-test-connection.png")
    finally:
        acceptor.close()


RELOAD_CFG = """\
[DEFAULT]
ConnectionType=initiator
NonStopSession=Y
ReconnectInterval=1
FileLogPath={logs}

[SESSION]
BeginString=FIX.4.4
SenderCompID=QW
TargetCompID=EXCH
SocketConnectHost=127.0.0.1
SocketConnectPort={port}
HeartBtInt=30
"""

RELOAD_TOML = """\
[engine]
id = "manager-reload"

[sessions]
file = "sessions.cfg"

[[instruments]]
symbol = "ESZ6"
tick_size = "0.25"
session = "FIX.4.4:QW->EXCH"
"""


def test_reload_session_in_the_running_engine(  # type: ignore[no-untyped-def]
    qtbot, themed_app: QApplication, tmp_path: Path, out_dir: Path
) -> None:
    acc_cfg = tmp_path / "acceptor.cfg"
    acc_cfg.write_text(
        "[DEFAULT]\nConnectionType=acceptor\nNonStopSession=Y\nSocketAcceptPort=1\n\n"
        "[SESSION]\nBeginString=FIX.4.4\nSenderCompID=EXCH\nTargetCompID=QW\n"
    )
    acceptor = _Acceptor(acc_cfg)
    cfg_path = tmp_path / "sessions.cfg"
    cfg_path.write_text(RELOAD_CFG.format(logs=tmp_path / "logs", port=acceptor.acceptor.port))
    (tmp_path / "engine.toml").write_text(RELOAD_TOML)
    engine_cfg = load_config(tmp_path / "engine.toml")
    outgoing = tmp_path / "logs" / "FIX.4.4-QW-EXCH.outgoing.log"

    def logons() -> list[str]:
        text = outgoing.read_bytes().decode() if outgoing.exists() else ""
        return [m for m in text.replace("\x01", "|").splitlines() if "|35=A|" in m]

    client = EmbeddedEngineClient(configure=lambda e: build_from_config(e, engine_cfg))
    client.start()
    try:
        qtbot.waitUntil(lambda: len(logons()) == 1, timeout=15_000)
        w = ManagerWorkspace(EditorServices(TestClock(NOW_NS), dt.UTC), client=client)
        qtbot.addWidget(w)
        w.ask_on_close = False
        w.resize(1800, 1000)
        w.show()
        assert w.open_path(cfg_path)
        ed = w.sessions
        ed.select_section(1)
        assert ed.reload_button.isEnabled()
        assert ed.reload_label.text().startswith("Attached to engine “embedded”: reloading")
        heartbeat = ed.rows["HEARTBTINT"].line
        assert heartbeat is not None
        type_into(qtbot, heartbeat, "7")
        assert ed.modified
        qtbot.mouseClick(ed.reload_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: ed.last_reload is not None, timeout=5000)
        assert isinstance(ed.last_reload, CommandAck), ed.last_reload
        assert not ed.modified  # saved first
        assert ed.reload_label.text() == (
            f"✔ FIX.4.4:QW-&gt;EXCH reloaded from {cfg_path} ([SESSION] at line 7): "
            "HeartBtInt 30 → 7<br>logging out, then on again to "
            f"127.0.0.1:{acceptor.acceptor.port}"
        )
        qtbot.waitUntil(lambda: len(logons()) == 2, timeout=15_000)
        assert "|108=7|" in logons()[1]
        shot(w, out_dir, "manager-sessions-reload.png")
        # A broken value is saved, sent, and refused by the engine; the session keeps running.
        type_into(qtbot, heartbeat, "often")
        qtbot.mouseClick(ed.reload_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: isinstance(ed.last_reload, CommandError), timeout=5000)
        assert ed.reload_label.text() == (
            "✖ The engine refused to reload FIX.4.4:QW-&gt;EXCH:<br>"
            f"{cfg_path}:13: HeartBtInt: 'often' is not an integer<br>"
            "FIX.4.4:QW-&gt;EXCH keeps running unchanged"
        )
        shot(w, out_dir, "manager-sessions-reload-refused.png")
        assert len(logons()) == 2
        # Saved elsewhere: the engine still reads its own file, and the answer says so.
        type_into(qtbot, heartbeat, "7")
        ed.save()
        elsewhere = tmp_path / "elsewhere.cfg"
        ed.save(elsewhere)
        ed.last_reload = None
        qtbot.mouseClick(ed.reload_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: ed.last_reload is not None, timeout=5000)
        assert isinstance(ed.last_reload, CommandAck)
        assert "no setting changed" in ed.reload_label.text()
        assert ed.reload_label.text().endswith(
            f"<br>⚠ The engine read {cfg_path}, not {elsewhere} saved here: edit the "
            "engine's own file for the change to apply."
        )
        qtbot.waitUntil(lambda: len(logons()) == 3, timeout=15_000)
        w.close()
    finally:
        client.close()
        acceptor.close()


def test_new_file_clone_delete_and_other_keys(  # type: ignore[no-untyped-def]
    qtbot, ws: ManagerWorkspace, tmp_path: Path
) -> None:
    ed = ws.sessions
    target = tmp_path / "new.cfg"
    ed.new_file(target)
    ed.new_session(
        {
            "BeginString": "FIX.4.2",
            "SenderCompID": "ME",
            "TargetCompID": "BROKER",
            "SocketConnectHost": "127.0.0.1",
            "SocketConnectPort": "6001",
            "SocketConnectHost1": "127.0.0.2",
            "SocketConnectPort1": "6002",
            "VendorKey": "kept",
        }
    )
    assert ed.cfg is not None
    assert ed.cfg.errors() == []
    # Keys without a form field are listed as written, and editable.
    assert sorted(ed.extra_rows) == ["SocketConnectHost1", "SocketConnectPort1", "VendorKey"]
    type_into(qtbot, ed.extra_rows["VendorKey"], "changed")
    assert ed.cfg.get(ed.section, "VendorKey") == "changed"
    qtbot.mouseClick(ed.clone_button, Qt.MouseButton.LeftButton)
    assert [ed.cfg.title(s) for s in ed.cfg.session_sections()] == [
        "FIX.4.2:ME->BROKER",
        "FIX.4.2:ME->BROKER_COPY",
    ]
    qtbot.mouseClick(ed.delete_button, Qt.MouseButton.LeftButton)
    assert [ed.cfg.title(s) for s in ed.cfg.session_sections()] == ["FIX.4.2:ME->BROKER"]
    ws.undo_action.trigger()  # the delete
    ws.undo_action.trigger()  # the clone
    assert len(ed.cfg.session_sections()) == 1
    ed.save()
    [s] = load_settings(target).sessions
    assert s.connect_addresses() == [("127.0.0.1", 6001), ("127.0.0.2", 6002)]
    assert s.extra == {"VendorKey": "changed"}
    assert target.read_text().startswith("# FIX session settings (QuickFIX format)")


def test_close_with_unsaved_changes_asks_first(  # type: ignore[no-untyped-def]
    qtbot, ws: ManagerWorkspace, files: Path
) -> None:
    ws.open_path(files / "sessions.cfg")
    ws.sessions.set_value(0, "HeartBtInt", "20")
    assert ws.unsaved() == ["session file sessions.cfg"]
    ws.ask_on_close = True

    def answer(button: QMessageBox.StandardButton) -> None:
        box = QApplication.activeModalWidget()
        assert isinstance(box, QMessageBox)
        assert "session file sessions.cfg" in box.text()
        box.button(button).click()

    QTimer.singleShot(50, lambda: answer(QMessageBox.StandardButton.Cancel))
    assert not ws.close()
    assert ws.isVisible()
    QTimer.singleShot(50, lambda: answer(QMessageBox.StandardButton.Discard))
    assert ws.close()


def test_open_error_names_file_line_and_element(  # type: ignore[no-untyped-def]
    qtbot, ws: ManagerWorkspace, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.xml"
    bad.write_text((ROOT / "tests" / "data" / "fix" / "bad_field.xml").read_text())
    ws.tabs.setCurrentIndex(1)
    assert not ws.open_path(bad)
    qtbot.waitUntil(lambda: isinstance(QApplication.activeModalWidget(), QMessageBox))
    box = QApplication.activeModalWidget()
    assert isinstance(box, QMessageBox)
    assert "bad.xml:" in box.text()
    box.close()


# ----------------------------------------------------------------------------- dictionaries


NOS = (
    "8=FIX.4.4|9={n}|35=D|49=ME|56=THEM|34=2|52=20261202-12:00:00.000|11=ORD-1|21=1|"
    "55=EURUSD|54=1|60=20261202-12:00:00.000|38=100|40=2|44=1.2345|5001=A|10={c}|"
)


def framed(template: str) -> str:
    body = template.split("|", 2)[2].rsplit("10=", 1)[0].replace("|", "\x01")
    head = f"8=FIX.4.4\x019={len(body)}\x01"
    total = sum((head + body).encode()) % 256
    return (head + body + f"10={total:03d}\x01").replace("\x01", "|")


def test_custom_field_added_to_new_order_single_validates(  # type: ignore[no-untyped-def]
    qtbot, ws: ManagerWorkspace, files: Path, out_dir: Path
) -> None:
    ws.tabs.setCurrentIndex(1)
    dd = ws.dictionaries
    assert ws.open_path(files / "resources" / "fix" / "FIX44.xml")
    dd.nf_tag.setValue(5001)
    type_into(qtbot, dd.nf_name, "VenueTag")
    dd.nf_type.setCurrentText("CHAR")
    dd.nf_enums.setPlainText("A=AGGRESSIVE\nP=PASSIVE")
    dd.nf_message.setCurrentIndex(dd.nf_message.findData("D"))
    dd.nf_required.setChecked(True)
    qtbot.mouseClick(dd.nf_add, Qt.MouseButton.LeftButton)
    assert dd.status.text() == "Add field VenueTag (5001) to D"
    dd.side.setCurrentIndex(1)  # Differences
    diff = [dd.diff_list.item(i).text() for i in range(dd.diff_list.count())]
    assert diff == [
        "+ field VenueTag (5001, CHAR) with values A=AGGRESSIVE, P=PASSIVE",
        "+ message NewOrderSingle (35=D): field VenueTag (required)",
    ]
    assert ws.tabs.tabText(1) == "Dictionaries — FIX44.xml ●"
    # Browse to the message: the new member is at the end, required.
    type_into(qtbot, dd.search, "35=D")
    dd.select("message", ("message", "D"), "NewOrderSingle")
    last = dd.members.rowCount() - 1
    assert [dd.members.item(last, c).text() for c in range(4)] == [
        "field",
        "VenueTag",
        "5001",
        "CHAR",
    ]
    assert dd.members.item(last, 4).checkState() == Qt.CheckState.Checked
    # Paste a message that uses it and check it field by field.
    dd.side.setCurrentIndex(2)
    dd.check_input.setPlainText(framed(NOS))
    qtbot.mouseClick(dd.check_button, Qt.MouseButton.LeftButton)
    assert dd.check_summary.text() == "17 fields: the dictionary accepts it."
    row = next(
        r for r in range(dd.check_table.rowCount()) if dd.check_table.item(r, 1).text() == "5001"
    )
    assert [dd.check_table.item(row, c).text() for c in (2, 3, 4, 5)] == [
        "VenueTag",
        "A",
        "AGGRESSIVE",
        "✔ ok",
    ]
    shot(ws, out_dir, "manager-dictionary-check.png")
    # Save both ways; the engine loads what was saved.
    full = dd.save_full(files / "FIX44-venue.xml")
    overlay = dd.save_overlay(files / "FIX44-overlay.xml")
    base = DataDictionary.load(FIX / "FIX44.xml")
    assert DataDictionary.load(full).spec == base.with_overlay(overlay).spec
    assert DataDictionary.load(full).message("D").required_tags[-1] == 5001  # type: ignore[union-attr]
    assert not dd.modified
    # Undo: the field is gone and the message is refused for its unknown tag.
    ws.undo_action.trigger()
    qtbot.mouseClick(dd.check_button, Qt.MouseButton.LeftButton)
    assert dd.check_summary.text() == "17 fields: 1 rejected, see Result."


def test_edit_enums_and_required_flag(  # type: ignore[no-untyped-def]
    qtbot, ws: ManagerWorkspace, files: Path, out_dir: Path
) -> None:
    ws.tabs.setCurrentIndex(1)
    dd = ws.dictionaries
    ws.open_path(files / "resources" / "fix" / "FIX44.xml")
    dd.select("field", (), "HandlInst")
    assert dd.pages.currentIndex() == 2
    n = dd.enums.rowCount()
    qtbot.mouseClick(dd.add_enum_button, Qt.MouseButton.LeftButton)
    dd.enums.item(n, 0).setText("4")
    dd.enums.item(n, 1).setText("VENUE_ALGO")
    qtbot.mouseClick(dd.apply_enums_button, Qt.MouseButton.LeftButton)
    assert dd.ed.field("HandlInst").enums["4"] == "VENUE_ALGO"  # type: ignore[union-attr]
    dd.select("message", ("message", "D"), "NewOrderSingle")
    row = next(r for r in range(dd.members.rowCount()) if dd.members.item(r, 1).text() == "Account")
    dd.members.item(row, 4).setCheckState(Qt.CheckState.Checked)
    assert dd.ed.diff() == [  # type: ignore[union-attr]
        "+ values of HandlInst: 4=VENUE_ALGO",
        "~ message NewOrderSingle (35=D): Account optional → required",
    ]
    dd.side.setCurrentIndex(1)
    shot(ws, out_dir, "manager-dictionary.png")
    ws.undo_action.trigger()
    ws.undo_action.trigger()
    assert not dd.modified


def test_log_scan_lists_unknown_tags_ready_to_add(  # type: ignore[no-untyped-def]
    qtbot, ws: ManagerWorkspace, files: Path, out_dir: Path
) -> None:
    log = files / "FIX.4.4-ME-THEM.messages.log"
    log.write_text(
        "20261202-12:00:00.000000000 : 8=FIX.4.4\x0135=8\x0155=EURUSD\x015001=A\x019001=1.5\x01\n"
        "20261202-12:00:01.000000000 : 8=FIX.4.4\x0135=8\x015001=P\x019001=2\x01\n",
        encoding="latin-1",
    )
    ws.tabs.setCurrentIndex(1)
    dd = ws.dictionaries
    ws.open_path(files / "resources" / "fix" / "FIX44.xml")
    dd.side.setCurrentIndex(3)
    dd.scan_path.setText(str(log))
    qtbot.mouseClick(dd.scan_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dd.last_scan is not None, timeout=5000)
    table = dd.scan_table
    assert [[table.item(r, c).text() for c in range(6)] for r in range(table.rowCount())] == [
        ["5001", "2", "A, P", "8", "CHAR", "Custom5001"],
        ["9001", "2", "1.5, 2", "8", "FLOAT", "Custom9001"],
    ]
    shot(ws, out_dir, "manager-dictionary-logscan.png")
    table.item(0, 5).setText("VenueTag")
    table.selectAll()
    qtbot.mouseClick(dd.scan_add, Qt.MouseButton.LeftButton)
    assert dd.ed.field(5001).name == "VenueTag"  # type: ignore[union-attr]
    assert dd.ed.field(9001).type == "FLOAT"  # type: ignore[union-attr]
    assert table.rowCount() == 0


def test_large_dictionary_opens_off_the_gui_thread(  # type: ignore[no-untyped-def]
    qtbot, ws: ManagerWorkspace, tmp_path: Path
) -> None:
    dd = ws.dictionaries
    ws.tabs.setCurrentIndex(1)
    dd.open_in_background(FIX / "FIX50SP2.xml")
    assert dd.loading
    assert dd.status.text().startswith("Loading ")
    qtbot.waitUntil(lambda: not dd.loading, timeout=10_000)
    assert dd.file_name == "FIX50SP2.xml"
    assert ws.tabs.tabText(1) == "Dictionaries — FIX50SP2.xml"
    # The Fields branch fills when it is opened (thousands of items).
    top = dd._fields_top
    assert top is not None
    assert top.childCount() == 1
    top.setExpanded(True)
    assert top.childCount() > 4000
    failed: list[tuple[str, str]] = []
    dd.open_failed.connect(lambda p, r: failed.append((p, r)))
    bad = tmp_path / "broken.xml"
    bad.write_text("<fix type='FIX' major='4' minor='4'>\n <fields>\n")
    dd.open_in_background(bad)
    qtbot.waitUntil(lambda: bool(failed), timeout=10_000)
    assert failed[0][0] == str(bad)
    assert "broken.xml:" in failed[0][1]
    assert dd.file_name == "FIX50SP2.xml"  # what was open stays open


# ----------------------------------------------------------------------------- engine settings


ENGINE_TOML = """\
# Desk 1: what runs at the open.
[engine]
id = "desk-1"
heartbeat_interval_ms = 1000

[files]
journal_dir = "journal"
logs_dir = "logs"

[risk]
max_order_qty_lots = 50  # agreed with the risk desk
max_position_lots = 25

[[strategies]]
id = 20170101
class = "engine.strategy.examples:MarketMaker"
symbols = ["ESZ6"]
autostart = true
[strategies.parameters]
qty_lots = 1

[remote]
enabled = false
bind = "127.0.0.1"
port = 7341
"""


def test_engine_settings_edit_save_and_apply_to_a_running_engine(  # type: ignore[no-untyped-def]
    qtbot, themed_app: QApplication, tmp_path: Path, out_dir: Path
) -> None:
    path = tmp_path / "engine.toml"
    path.write_text(ENGINE_TOML)
    client = EmbeddedEngineClient(configure=build_demo)
    client.start()
    try:
        w = ManagerWorkspace(EditorServices(TestClock(NOW_NS), dt.UTC), client=client)
        qtbot.addWidget(w)
        w.ask_on_close = False
        w.resize(1800, 1000)
        w.show()
        w.tabs.setCurrentIndex(2)
        es = w.engine_settings
        assert w.open_path(path)
        assert es.risk.edits["max_order_qty_lots"].text() == "50"
        type_into(qtbot, es.risk.edits["max_order_qty_lots"], "20")
        type_into(qtbot, es.edits["port"], "7400")
        assert es.modified
        assert w.tabs.tabText(2) == "Engine settings — engine.toml ●"
        w.save()
        cfg = load_config(path)
        assert (cfg.risk.max_order_qty_lots, cfg.remote.port) == (20, 7400)
        # Only the edited lines changed: comments and the rest stay as written.
        assert path.read_text() == ENGINE_TOML.replace(
            "max_order_qty_lots = 50 ", "max_order_qty_lots = 20 "
        ).replace("port = 7341", "port = 7400")
        # Applied to the running engine: the answer is shown.
        # A patch: the form's limits with a value are set, its empty ones cleared by name, and
        # the engine answers with what moved.
        es.apply_engine_risk()
        qtbot.waitUntil(lambda: "engine-wide limits:" in es.answers[-1], timeout=5000)
        assert es.answers[-1] == (
            "Engine-wide risk limits: engine-wide limits: max_order_qty_lots 50 -> 20; "
            "max_open_orders 100 -> off; max_orders_per_second 500 -> off"
        )

        # The Manager shows what the engine enforces now, from the engine's own events.
        def engine_has_20() -> bool:
            es.on_events(client.drain())
            now = next((v for k, v in es.enforced.limits.items() if k[1:] == (None, "")), None)
            return now is not None and now.max_order_qty_lots == 20

        qtbot.waitUntil(engine_has_20, timeout=5000)
        assert es.enforced.cell((None, ""), "max_order_qty") == "20"
        assert es.enforced.cell((None, ""), "open_orders").startswith("off")
        assert es.enforced.cell((None, ""), "price_band") == "±5%"
        es.session_id.setEditText("FIX.4.2:A->B")
        es.control_session("logout")
        qtbot.waitUntil(lambda: "refused" in es.answers[-1], timeout=5000)
        assert es.answers[-1].startswith("Session FIX.4.2:A->B: logout: refused — no FIX session")
        # The demo's session is built in code: there is no file to reload it from.
        es.session_id.setEditText("FIX.4.4:QWCONSOLE->QWSIM")
        es.control_session("reload")
        qtbot.waitUntil(lambda: "reload: refused" in es.answers[-1], timeout=5000)
        assert es.answers[-1] == (
            "Session FIX.4.4:QWCONSOLE->QWSIM: reload: refused — FIX.4.4:QWCONSOLE->QWSIM was "
            "built by the engine itself, not from a settings file: there is nothing to reload "
            "it from"
        )
        # A bad value in the raw TOML is reported with its file, line and key.
        es.center.setCurrentIndex(1)
        es.raw.setPlainText(es.raw.toPlainText().replace("port = 7400", "port = 99999"))
        qtbot.waitUntil(lambda: es.config is None, timeout=3000)
        assert es.problems[0].startswith(f"{path}:")
        assert "remote.port" in es.problems[0]
        w.undo_action.trigger()
        assert es.config is not None
        es.center.setCurrentIndex(0)
        # Strategies: add one, give it a parameter, save; the file has both.
        es.add_strategy("engine.strategy.examples:Taker")
        es.param_name.setText("qty_lots")
        es.param_value.setText("3")
        es._on_add_param()
        es.strategies.item(1, 2).setText("ESZ6, NQZ6")
        es.strategies.item(1, 3).setCheckState(Qt.CheckState.Checked)
        w.save()
        strategies = load_config(path).strategies
        assert [(s.strategy_id, s.class_path, s.parameters) for s in strategies] == [
            (20170101, "engine.strategy.examples:MarketMaker", (("qty_lots", 1),)),
            (20170102, "engine.strategy.examples:Taker", (("qty_lots", 3),)),
        ]
        assert (strategies[1].symbols, strategies[1].autostart) == (("ESZ6", "NQZ6"), True)
        shot(w, out_dir, "manager-engine-settings.png")
        w.close()
    finally:
        client.close()


# A QuickFIX/Go file that says nothing of its dialect (no Go-only key), naming a dictionary.
GO_CFG = GO_FILE.replace("SQLStoreDriver=sqlite3\n", "") + "DataDictionary=spec/FIX44.xml\n"


def test_dialect_and_base_folder_of_a_quickfix_go_file(  # type: ignore[no-untyped-def]
    ws: ManagerWorkspace, tmp_path: Path, out_dir: Path
) -> None:
    (tmp_path / "run" / "spec").mkdir(parents=True)
    shutil.copy(FIX / "FIX44.xml", tmp_path / "run" / "spec" / "FIX44.xml")
    cfg = tmp_path / "conf" / "go.cfg"
    cfg.parent.mkdir()
    cfg.write_text(GO_CFG)
    assert ws.open_path(cfg)
    s = ws.sessions
    assert s.dialect_combo.currentData() == "quickfix"  # nothing says otherwise
    assert s.base_label.text() == str(cfg.parent)
    keys = {p.key for p in s.cfg.errors()}  # type: ignore[union-attr]
    assert "UseDataDictionary" in keys
    # The user says it is a QuickFIX/Go file: Go's rules, one undo step, a comment in the file.
    s.dialect_combo.setCurrentIndex(s.dialect_combo.findData("quickfixgo"))
    s.dialect_combo.activated.emit(s.dialect_combo.currentIndex())
    assert s.cfg.text().startswith("# dialect: quickfixgo\n")  # type: ignore[union-attr]
    assert s.dialect_note.text() == "stated in the file"
    assert [p.key for p in s.cfg.errors()] == ["DataDictionary"]  # type: ignore[union-attr]
    # The dictionary is where the Go process runs, not next to the file.
    s.set_base_dir(tmp_path / "run")
    assert s.base_label.text() == str(tmp_path / "run")
    assert s.cfg.errors() == []  # type: ignore[union-attr]
    shot(ws, out_dir, "manager-dialect.png")
    s.undo_stack.undo()
    assert s.cfg.text() == GO_CFG  # type: ignore[union-attr]
    assert s.dialect_combo.currentData() == "quickfix"


def test_the_running_engines_session_file_opens_by_default(  # type: ignore[no-untyped-def]
    ws: ManagerWorkspace, files: Path
) -> None:
    from engine.enums import SessionState
    from engine.events import EventRecord, SessionStatusChanged

    def status(path: Path) -> list[EventRecord]:
        return [
            EventRecord(
                1,
                SessionStatusChanged(
                    ts_event=1,
                    session_id="FIX.4.4:QW->EXCH",
                    state=SessionState.LOGGED_ON,
                    next_sender_seq_num=2,
                    next_target_seq_num=2,
                    settings_file=str(path),
                ),
            )
        ]

    cfg = files / "sessions.cfg"
    ws.follow_engine(status(cfg))
    assert ws.sessions.cfg is not None
    assert Path(ws.sessions.cfg.source) == cfg
    # Once: a later event (another file) never replaces what the user has open.
    other = files / "other.cfg"
    other.write_text(cfg.read_text())
    ws.follow_engine(status(other))
    assert Path(ws.sessions.cfg.source) == cfg
