# SPDX-License-Identifier: MIT
"""Tests for engine.fix.edit (cfgeditor, keys, preview, logon): the .cfg editor."""

from __future__ import annotations

import asyncio
import datetime as dt
import zoneinfo
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.fix.acceptance_app import AcceptanceApplication
from engine.fix.cli import build_session
from engine.fix.edit.cfgeditor import CfgEditor
from engine.fix.edit.keys import KEY_GROUPS, key_info
from engine.fix.edit.logon import try_logon
from engine.fix.edit.preview import reset_explanation, schedule_preview
from engine.fix.settings import KEYS, load_settings
from engine.fix.transport import SocketAcceptor

ROOT = Path(__file__).resolve().parents[5]
SHIPPED_CFGS = sorted((ROOT / "resources" / "fix").glob("*.cfg"))

ODD = (
    "; QuickFIX/J style comment\r\n"
    "  # indented comment with trailing spaces   \r\n"
    "\r\n"
    "[default]\r\n"
    "  ConnectionType =  initiator  \r\n"
    "heartbtint=30\r\n"
    "StartTime = 00:00:00\r\n"
    "EndTime=00:00:00\r\n"
    "UnknownKey=kept as is\r\n"
    "\r\n"
    "   [ SESSION ]   \r\n"
    "BeginString=FIX.4.4\r\n"
    "SenderCompID = ME\t\r\n"
    "TargetCompID=THEM\r\n"
    "SocketConnectHost=127.0.0.1\r\n"
    "SocketConnectPort=5001\r\n"
    "# no final newline after the last key\r\n"
    "SocketNodelay=Y"
)

BASE = """\
# sessions for the tests
[DEFAULT]
ConnectionType=initiator
HeartBtInt=30
StartTime=00:00:00
EndTime=00:00:00
SocketNodelay=Y

# first session
[SESSION]
BeginString=FIX.4.4
SenderCompID=ME
TargetCompID=THEM
SocketConnectHost=127.0.0.1
SocketConnectPort=5001

# second session
[SESSION]
BeginString=FIX.4.2
SenderCompID=ME
TargetCompID=OTHER
SocketConnectHost=127.0.0.1
SocketConnectPort=5002
"""


@pytest.mark.parametrize("path", SHIPPED_CFGS, ids=lambda p: p.name)
def test_shipped_cfg_round_trips_byte_for_byte(path: Path, tmp_path: Path) -> None:
    ed = CfgEditor.load(path)
    out = ed.save(tmp_path / path.name)
    assert out.read_bytes() == path.read_bytes()
    assert not ed.modified


def test_odd_spacing_comments_crlf_and_no_final_newline_round_trip(tmp_path: Path) -> None:
    src = tmp_path / "odd.cfg"
    src.write_bytes(ODD.encode())
    ed = CfgEditor.load(src)
    assert ed.errors() == []
    ed.save(tmp_path / "copy.cfg")
    assert (tmp_path / "copy.cfg").read_bytes() == ODD.encode()


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("[]=#; \t\r\nABCx01:.")), max_size=200))
def test_any_text_round_trips(text: str) -> None:
    assert CfgEditor(text).text() == text


def test_changing_heartbeat_rewrites_only_that_line() -> None:
    ed = CfgEditor(ODD, "odd.cfg")
    d = ed.default_section()
    assert d == 0
    ed.set(d, "HeartBtInt", "45")
    before, after = ODD.split("\r\n"), ed.text().split("\r\n")
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert changed == [("heartbtint=30", "heartbtint=45")]
    assert ed.modified
    s = ed.session_settings(ed.session_sections()[0])
    assert s is not None
    assert s.heart_bt_int == 45


def test_effective_values_show_where_they_come_from() -> None:
    ed = CfgEditor(BASE)
    first = ed.session_sections()[0]
    assert ed.effective(first, "TargetCompID") == ("THEM", "session")
    assert ed.effective(first, "HeartBtInt") == ("30", "default")
    assert ed.effective(first, "ReconnectInterval") == ("30", "engine")
    assert ed.effective(first, "DataDictionary") == (None, "engine")
    ed.set(first, "HeartBtInt", "10")
    assert ed.effective(first, "HeartBtInt") == ("10", "session")
    ed.remove(first, "HeartBtInt")
    assert ed.effective(first, "HeartBtInt") == ("30", "default")


def test_fixt_rules_are_errors_naming_line_and_key() -> None:
    ed = CfgEditor(BASE, "t.cfg")
    first = ed.session_sections()[0]
    ed.set(first, "BeginString", "FIXT.1.1")
    errors = [str(p) for p in ed.errors()]
    assert "t.cfg:10: DefaultApplVerID: required for FIXT.1.1 sessions" in errors
    assert any("TransportDataDictionary: required for FIXT.1.1" in e for e in errors)
    ed.set(first, "DefaultApplVerID", "FIX.5.0SP2")
    ed.set(first, "DataDictionary", str(ROOT / "resources" / "fix" / "FIX44.xml"))
    # QuickFIX ignores DataDictionary under FIXT: a warning on its line, not an error.
    assert not [p for p in ed.errors() if p.key == "DataDictionary"]
    assert [(p.severity, p.line) for p in ed.problems() if p.key == "DataDictionary"] == [
        ("warning", 17)
    ]
    assert all(p.section == first for p in ed.errors())


def test_missing_dictionary_file_is_an_error(tmp_path: Path) -> None:
    ed = CfgEditor(BASE, str(tmp_path / "s.cfg"))
    first = ed.session_sections()[0]
    ed.set(first, "DataDictionary", "nowhere/FIX44.xml")
    [p] = [p for p in ed.errors() if p.key == "DataDictionary"]
    assert "file not found" in p.reason
    assert str(tmp_path / "nowhere" / "FIX44.xml") in p.reason


def test_bad_values_and_logon_outside_window_are_located() -> None:
    ed = CfgEditor(BASE, "t.cfg")
    second = ed.session_sections()[1]
    ed.set(second, "SocketConnectPort", "70000")
    ed.set(second, "StartTime", "08:00:00")
    ed.set(second, "EndTime", "17:00:00")
    ed.set(second, "LogonTime", "18:00:00")
    [port] = ed.errors()
    assert (
        str(port)
        == "t.cfg:23: SocketConnectPort: 70000 is out of range (must be between 1 and 65535)"
    )
    ed.set(second, "SocketConnectPort", "7000")
    [logon] = ed.errors()
    assert (logon.key, logon.reason, logon.line) == (
        "LogonTime",
        "must lie between StartTime and EndTime",
        26,
    )


def test_warnings_for_risky_switches_and_weekly_sessions() -> None:
    ed = CfgEditor(BASE)
    first = ed.session_sections()[0]
    ed.set(first, "SocketNodelay", "N")
    ed.set(first, "CheckLatency", "N")
    ed.set(first, "StartDay", "Sun")
    ed.set(first, "EndDay", "Fri")
    keys = {p.key for p in ed.problems() if p.severity == "warning" and p.section == first}
    assert {"SocketNodelay", "CheckLatency", "StartDay"} <= keys


def test_new_clone_and_delete_session() -> None:
    ed = CfgEditor(BASE)
    new = ed.add_session(
        {
            "BeginString": "FIX.4.4",
            "SenderCompID": "ME",
            "TargetCompID": "NEWCP",
            "SocketConnectHost": "127.0.0.1",
            "SocketConnectPort": "6000",
        }
    )
    assert ed.title(new) == "FIX.4.4:ME->NEWCP"
    assert ed.errors() == []
    clone = ed.clone_session(ed.session_sections()[0])
    assert ed.title(clone) == "FIX.4.4:ME->THEM_COPY"
    assert ed.errors() == []
    again = ed.clone_session(ed.session_sections()[0])
    assert ed.title(again) == "FIX.4.4:ME->THEM_COPY2"
    ed.delete_section(clone)
    ed.delete_section(ed.session_sections()[-1])
    ed.delete_section(new)
    assert ed.text() == BASE


def test_delete_middle_session_takes_its_comment_and_keeps_the_next() -> None:
    ed = CfgEditor(BASE)
    ed.delete_section(ed.session_sections()[0])
    text = ed.text()
    assert "# first session" not in text
    assert "TargetCompID=THEM\n" not in text
    assert "\n\n# second session\n[SESSION]\nBeginString=FIX.4.2" in text
    assert ed.errors() == []


def test_duplicate_session_is_an_error() -> None:
    ed = CfgEditor(BASE, "t.cfg")
    second = ed.session_sections()[1]
    ed.set(second, "BeginString", "FIX.4.4")
    ed.set(second, "TargetCompID", "THEM")
    assert any("already defined" in p.reason for p in ed.errors())


def test_every_key_is_in_exactly_one_group() -> None:
    grouped = [name.upper() for _, names in KEY_GROUPS for name in names]
    assert len(grouped) == len(set(grouped))
    assert set(grouped) == set(KEYS)
    info = key_info("heartbtint")
    assert info is not None
    assert (info.name, info.group, info.kind) == ("HeartBtInt", "Behaviour", "int")
    bool_info = key_info("ResetOnLogon")
    assert bool_info is not None
    assert bool_info.kind == "bool"
    assert bool_info.default == "N"


def _ns(y: int, mo: int, d: int, h: int, mi: int = 0) -> int:
    return int(dt.datetime(y, mo, d, h, mi, tzinfo=dt.UTC).timestamp()) * 1_000_000_000


def test_schedule_preview_in_plain_words() -> None:
    ed = CfgEditor.load(ROOT / "resources" / "fix" / "sessions.cfg")
    fixt = ed.session_sections()[2]
    s = ed.session_settings(fixt)
    assert s is not None
    # Wednesday 2026-12-02 12:00 UTC = 07:00 New York: before the 08:00 start.
    lines = schedule_preview(s, _ns(2026, 12, 2, 12), zoneinfo.ZoneInfo("Europe/Paris"))
    assert lines[0].startswith("Daily session on Mon, Tue, Wed, Thu, Fri, 08:00:00 to 17:00:00")
    assert lines[1] == "Not in session now."
    assert lines[2] == (
        "Next reset and logon: Wed 2026-12-02 08:00:00 EST = Wed 2026-12-02 14:00:00 CET "
        "(in 60 min)."
    )
    window_lines = [x for x in lines if "→" in x]
    assert len(window_lines) == 5  # weekdays only over the next 7 days
    assert window_lines[0] == ("  Wed 12-02 08:00 → 17:00 EST   (Wed 12-02 14:00 → 23:00 CET)")
    assert all("Sat" not in x and "Sun" not in x for x in window_lines)
    inside = schedule_preview(s, _ns(2026, 12, 2, 15), zoneinfo.ZoneInfo("UTC"))
    assert inside[1] == "In session now until Wed 2026-12-02 17:00:00 EST."


def test_schedule_preview_24h_and_non_stop() -> None:
    ed = CfgEditor(BASE)
    s = ed.session_settings(ed.session_sections()[0])
    assert s is not None
    lines = schedule_preview(s, _ns(2026, 12, 2, 12), dt.UTC)
    assert lines[0].startswith("24-hour daily session")
    assert lines[1].startswith("In session now until Thu 2026-12-03 00:00:00 UTC")
    ed.set(0, "NonStopSession", "Y")
    s2 = ed.session_settings(ed.session_sections()[0])
    assert s2 is not None
    assert schedule_preview(s2, 0, dt.UTC)[0].startswith("Non-stop session")


def test_reset_explanation_depends_on_role() -> None:
    ed = CfgEditor(BASE)
    first = ed.session_sections()[0]
    ed.set(first, "ResetOnLogon", "Y")
    s = ed.session_settings(first)
    assert s is not None
    words = " ".join(reset_explanation(s))
    assert "we send 141=Y" in words
    assert "never resent" in words
    ed.set(first, "ConnectionType", "acceptor")
    ed.set(first, "SocketAcceptPort", "7001")
    s2 = ed.session_settings(first)
    assert s2 is not None
    assert "answered with 141=Y" in " ".join(reset_explanation(s2))


ACCEPTOR_CFG = """\
[DEFAULT]
ConnectionType=acceptor
StartTime=00:00:00
EndTime=00:00:00
SocketAcceptHost=127.0.0.1
SocketAcceptPort=1
SocketNodelay=Y

[SESSION]
BeginString=FIX.4.4
SenderCompID=THEM
TargetCompID=ME
"""


async def test_saved_cfg_logs_on_with_the_edited_heartbeat(tmp_path: Path) -> None:
    # The acceptor is the engine's own, started from a file; the initiator is started from the
    # edited and saved settings: its Logon carries the new HeartBtInt.
    acc_path = tmp_path / "acceptor.cfg"
    acc_path.write_text(ACCEPTOR_CFG)
    acc_settings = load_settings(acc_path)
    sessions = [build_session(s, AcceptanceApplication(), tmp_path) for s in acc_settings.sessions]
    acceptor = SocketAcceptor(sessions, host="127.0.0.1", port=0)
    await acceptor.start()
    try:
        ed = CfgEditor(BASE, str(tmp_path / "sessions.cfg"))
        first = ed.session_sections()[0]
        ed.set(first, "SocketConnectPort", str(acceptor.port))
        ed.set(first, "HeartBtInt", "17")
        saved = ed.save()
        [s, _] = load_settings(saved).sessions
        outcome = await try_logon(s, tmp_path, timeout_s=5.0)
        assert outcome.ok, outcome.summary
        assert outcome.summary.startswith(f"Logged on to 127.0.0.1:{acceptor.port} in ")
        logon = outcome.sent[0]
        assert "|35=A|" in logon
        assert "|108=17|" in logon
        assert any("|35=A|" in m for m in outcome.received)
    finally:
        await acceptor.stop()


async def test_try_logon_reports_refused_connection(tmp_path: Path) -> None:
    ed = CfgEditor(BASE, str(tmp_path / "s.cfg"))
    first = ed.session_sections()[0]
    # A port nobody listens on: bind one, close it, use it.
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    ed.set(first, "SocketConnectPort", str(port))
    s = ed.session_settings(first)
    assert s is not None
    outcome = await try_logon(s, tmp_path, timeout_s=0.5)
    assert not outcome.ok
    assert "connection refused or unreachable" in outcome.summary


def test_a_default_problem_is_listed_once_and_shown_with_each_session_inheriting_it() -> None:
    # A dictionary path in [DEFAULT] that does not exist: one problem, on the [DEFAULT] line,
    # not one per session; each session that inherits the key shows it, one that sets its own
    # path does not.
    text = BASE.replace("SocketNodelay=Y\n", "DataDictionary=missing/FIX44.xml\n")
    ed = CfgEditor(text)
    first, second = ed.session_sections()
    missing = [p for p in ed.problems() if p.key == "DataDictionary"]
    assert len(missing) == 1, missing
    assert missing[0].line == text.splitlines().index("DataDictionary=missing/FIX44.xml") + 1
    assert missing[0].section == ed.default_section()
    assert missing[0] in ed.problems_for(first)
    assert missing[0] in ed.problems_for(second)
    ed.set(second, "DataDictionary", "other/FIX42.xml")
    own = [p for p in ed.problems_for(second) if p.key == "DataDictionary"]
    assert [p.reason.split(":")[0] for p in own] == ["file not found"]
    assert own[0].section == second


def test_socket_nodelay_warns_only_when_set_to_n() -> None:
    # The transport always sets TCP_NODELAY, and QuickFIX's default is Y: an unset key is fine.
    ed = CfgEditor(BASE.replace("SocketNodelay=Y\n", ""))
    assert not [p for p in ed.problems() if p.key == "SocketNodelay"]
    ed.set(ed.session_sections()[0], "SocketNodelay", "N")
    [warning] = [p for p in ed.problems() if p.key == "SocketNodelay"]
    assert warning.severity == "warning"
    assert "this engine sets TCP_NODELAY regardless" in warning.reason


# ------------------------------------------------------------------ dialects and base folder
GO_FILE = """\
[DEFAULT]
SenderCompID=ME
UseDataDictionary=false
SQLStoreDriver=sqlite3
[SESSION]
BeginString=FIX.4.4
TargetCompID=EXEC
ConnectionType=initiator
SocketConnectHost=127.0.0.1
SocketConnectPort=5001
HeartBtInt=30
"""


def test_a_quickfix_go_file_is_read_by_go_rules() -> None:
    ed = CfgEditor(GO_FILE, "/nowhere/go.cfg")
    assert ed.dialect == "quickfixgo"
    assert ed.dialect_source() == "inferred from SQLStoreDriver"
    # Go: no session times means always in session; UseDataDictionary is not a Go key.
    assert ed.errors() == []
    [warn] = [p for p in ed.problems() if p.key == "UseDataDictionary"]
    assert warn.severity == "warning"
    assert "QuickFIX/Go does not read" in warn.reason
    s = ed.session_settings(ed.session_sections()[0])
    assert s is not None
    assert s.non_stop_session
    assert not s.use_data_dictionary


def test_stating_a_dialect_changes_the_rules_and_is_a_comment() -> None:
    ed = CfgEditor(GO_FILE, "/nowhere/go.cfg")
    ed.set_dialect("quickfix")
    text = ed.text()
    assert text.splitlines()[0] == "# dialect: quickfix"
    assert text.endswith(GO_FILE)  # nothing else moved
    assert (ed.dialect, ed.dialect_source()) == ("quickfix", "stated in the file")
    assert any("'false' is not Y or N" in p.reason for p in ed.errors())
    ed.set_dialect("quickfixgo")  # replaced in place, not added twice
    assert ed.text() == "# dialect: quickfixgo\n" + GO_FILE
    assert ed.errors() == []
    with pytest.raises(ValueError, match="quickfixj"):
        ed.set_dialect("fix8")
    # Without Go's rules, the missing session times are an error again.
    c = CfgEditor(GO_FILE.replace("UseDataDictionary=false\n", ""), "/nowhere/c.cfg")
    c.set_dialect("quickfix")
    assert {p.key for p in c.errors()} == {"StartTime", "EndTime"}
    # Go requires both times or neither.
    one = CfgEditor(GO_FILE.replace("[SESSION]\n", "[SESSION]\nStartTime=00:00:00\n"), "/x.cfg")
    assert [p.key for p in one.errors()] == ["EndTime"]


def test_relative_paths_resolve_from_a_chosen_folder(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "spec").mkdir(parents=True)
    (run / "spec" / "FIX44.xml").write_text("<fix/>")
    cfg = tmp_path / "conf" / "s.cfg"
    cfg.parent.mkdir()
    cfg.write_text(GO_FILE.replace("[SESSION]\n", "[SESSION]\nDataDictionary=spec/FIX44.xml\n"))
    ed = CfgEditor.load(cfg)
    assert ed.base_dir == cfg.parent
    [missing] = ed.errors()
    assert missing.key == "DataDictionary"
    assert str(cfg.parent / "spec") in missing.reason
    ed.set_base_dir(run)  # where the QuickFIX process runs
    assert ed.base_dir == run
    assert ed.errors() == []
    s = ed.session_settings(ed.session_sections()[0])
    assert s is not None
    assert s.use_data_dictionary
