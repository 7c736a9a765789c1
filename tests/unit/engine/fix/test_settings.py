# SPDX-License-Identifier: MIT
"""Tests for engine.fix.settings: lossless .cfg round trip, typed sessions, located errors."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.fix.edit.document import CfgDocument
from engine.fix.settings import (
    KEYS,
    SessionID,
    SessionSettings,
    SettingsError,
    TimeOfDay,
    load_settings,
    parse_settings,
)
from engine.fix.settings.keys import _check_table

ROOT = Path(__file__).resolve().parents[4]
SAMPLE = ROOT / "resources" / "fix" / "sessions.cfg"

BASE = """\
[DEFAULT]
ConnectionType=initiator
HeartBtInt=30
StartTime=00:00:00
EndTime=00:00:00
SocketConnectHost=127.0.0.1
SocketConnectPort=5001

[SESSION]
BeginString=FIX.4.4
SenderCompID=ME
TargetCompID=THEM
"""


def problems(text: str) -> list[tuple[int, str, str]]:
    with pytest.raises(SettingsError) as e:
        parse_settings(text, "t.cfg")
    assert all(p.source == "t.cfg" for p in e.value.problems)
    return [(p.line, p.key, p.reason) for p in e.value.problems]


# ----------------------------------------------------------------------------- round trip


def test_sample_file_loads_and_round_trips_byte_for_byte(tmp_path: Path) -> None:
    f = load_settings(SAMPLE)
    assert f.warnings == []
    assert len(f.sessions) == 3
    out = tmp_path / "copy.cfg"
    f.save(out)
    assert out.read_bytes() == SAMPLE.read_bytes()


def test_round_trip_keeps_crlf_comments_case_and_missing_final_newline() -> None:
    text = (
        "# top comment\r\n; other comment\r\n\r\n[default]\r\n  heartbtint = 30  \r\n"
        "ConnectionType=acceptor\r\nSocketAcceptPort=5001\r\nNonStopSession=Y\r\n"
        "\r\n[Session]\r\nBeginString=FIX.4.2\r\nSenderCompID=A\r\nTargetCompID=B\r\n"
        "MyCustomKey = some value"
    )
    f = parse_settings(text)
    assert f.to_text() == text
    s = f.sessions[0]
    assert s.heart_bt_int == 30
    assert s.extra == {"MyCustomKey": "some value"}
    assert [w.key for w in f.warnings] == ["MyCustomKey"]
    assert f.warnings[0].line == 14


_line = st.one_of(
    st.just(""),
    st.just("[DEFAULT]"),
    st.just("[SESSION]"),
    st.text(alphabet=" \t#;=[]abcXYZ09:.-/", max_size=20),
    st.builds(
        lambda k, a, b, v: f"{a}{k}{b}={v}",
        st.sampled_from(["HeartBtInt", "heartbtint", "BeginString", "Foo", "StartTime"]),
        st.sampled_from(["", " ", "\t"]),
        st.sampled_from(["", " "]),
        st.text(alphabet="abcXYZ09:. =", max_size=12),
    ),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(_line, st.sampled_from(["\n", "\r\n"])), max_size=25),
    st.booleans(),
)
def test_document_round_trip_is_lossless(lines: list[tuple[str, str]], cut_last: bool) -> None:
    text = "".join(a + b for a, b in lines)
    if cut_last and text:
        text = text.rstrip("\r\n")
    assert CfgDocument(text).to_text() == text
    try:
        f = parse_settings(text)
    except SettingsError as e:
        found = e.problems
        assert found
    else:
        assert f.to_text() == text


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 3600), st.sampled_from(["\n", "\r\n"]))
def test_set_changes_only_that_line(hb: int, eol: str) -> None:
    text = BASE.replace("\n", eol)
    f = parse_settings(text)
    f.set(0, "heartbtint", str(hb))
    before, after = text.split(eol), f.to_text().split(eol)
    assert len(before) == len(after)
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert changed == ([] if hb == 30 else [2])
    assert after[2] == f"HeartBtInt={hb}"
    assert f.sessions[0].heart_bt_int == hb


def test_set_keeps_spacing_and_adds_new_keys_in_section() -> None:
    f = parse_settings(BASE.replace("HeartBtInt=30", "HeartBtInt = 30"))
    f.set(0, "HeartBtInt", "45")
    assert "HeartBtInt = 45\n" in f.to_text()
    f.set(1, "ResetOnLogon", "Y")
    assert f.to_text().endswith("TargetCompID=THEM\nResetOnLogon=Y\n")
    assert f.sessions[0].reset_on_logon is True


def test_set_invalid_value_raises_and_leaves_document_unchanged() -> None:
    f = parse_settings(BASE)
    with pytest.raises(SettingsError, match="HeartBtInt"):
        f.set(0, "HeartBtInt", "abc")
    assert f.to_text() == BASE
    assert f.sessions[0].heart_bt_int == 30


def test_document_add_and_remove() -> None:
    doc = CfgDocument(BASE)
    idx = doc.add_section("SESSION", {"BeginString": "FIX.4.2", "SenderCompID": "X"})
    assert idx == 2
    assert doc.get(2, "senderCompID") == "X"
    assert doc.remove(2, "SenderCompID")
    assert doc.get(2, "SenderCompID") is None
    assert not doc.remove(2, "SenderCompID")
    assert doc.section_lines()[0] == ("DEFAULT", 0)


# ----------------------------------------------------------------------------- typed sessions


def test_session_inherits_default_and_overrides() -> None:
    f = parse_settings(BASE + "HeartBtInt=60\n")
    s = f.sessions[0]
    assert s.heart_bt_int == 60
    assert s.connection_type == "initiator"
    assert s.socket_connect_port == 5001
    assert s.start_time == TimeOfDay(dt.time(0, 0, 0))
    assert s.reconnect_interval == 30  # engine default
    assert s.persist_messages is True
    assert s.session_id == SessionID("FIX.4.4", "ME", "THEM")
    assert str(s.session_id) == "FIX.4.4:ME->THEM"
    assert f.default["HeartBtInt"] == "30"
    assert s.section_line == 9
    assert s.is_initiator


def test_all_value_types_parse() -> None:
    text = BASE + (
        "SessionQualifier=Q\nSenderSubID=S\nTargetLocationID=L\n"
        "StartDay=mon\nEndDay=Friday\nStartTime=08:00:00 America/New_York\n"
        "EndTime=17:00:00 America/New_York\nResetOnLogon=y\nTimestampPrecision=6\n"
        "AllowedRemoteAddresses=10.0.0.1, 10.0.0.2\nSocketConnectHost1=h1\n"
        "SocketConnectPort1=6001\nSocketConnectHost2=h2\nSocketConnectPort2=6002\n"
        "HostSelectionPolicy=priority\nCertificateVerifyLevel=1\nMySQLStorePort=3306\n"
    )
    s = parse_settings(text).sessions[0]
    assert s.start_day == 2
    assert s.end_day == 6
    assert s.start_time == TimeOfDay(dt.time(8), "America/New_York")
    assert str(s.start_time) == "08:00:00 America/New_York"
    assert s.reset_on_logon is True
    assert s.effective_timestamp_precision() == 6
    assert s.allowed_remote_addresses == ("10.0.0.1", "10.0.0.2")
    assert s.connect_addresses() == [("127.0.0.1", 5001), ("h1", 6001), ("h2", 6002)]
    assert s.host_selection_policy == "PRIORITY"
    assert s.certificate_verify_level == 1
    assert s.mysql_store_port == 3306
    assert str(s.session_id) == "FIX.4.4:ME/S->THEM/L:Q"


def test_weekdays_and_time_zone() -> None:
    s = parse_settings(BASE + "Weekdays=Sun,Mon,Tu\nTimeZone=Europe/London\n").sessions[0]
    assert s.weekdays == (1, 2, 3)
    assert s.time_zone == "Europe/London"


@pytest.mark.parametrize(
    ("begin", "ms", "expected"),
    [("FIX.4.0", "Y", 0), ("FIX.4.1", "Y", 0), ("FIX.4.2", "Y", 3), ("FIX.4.4", "N", 0)],
)
def test_effective_timestamp_precision(begin: str, ms: str, expected: int) -> None:
    text = BASE.replace("FIX.4.4", begin) + f"MillisecondsInTimeStamp={ms}\n"
    assert parse_settings(text).sessions[0].effective_timestamp_precision() == expected


def test_fixt_session_needs_both_dictionaries_and_appl_ver_id() -> None:
    text = BASE.replace("FIX.4.4", "FIXT.1.1") + (
        "DefaultApplVerID=FIX.5.0SP2\nTransportDataDictionary=FIXT11.xml\n"
        "AppDataDictionary=FIX50SP2.xml\nAppDataDictionary.FIX.4.4=FIX44.xml\n"
    )
    s = parse_settings(text).sessions[0]
    assert s.default_appl_ver_id_code() == "9"
    assert s.app_data_dictionaries == {"FIX.4.4": "FIX44.xml"}
    assert s.session_id.is_fixt


@pytest.mark.parametrize(
    ("extra", "begin", "key", "reason"),
    [
        ("HeartBtInt=abc\n", "FIX.4.4", "HeartBtInt", "not an integer"),
        ("HeartBtInt=0\n", "FIX.4.4", "HeartBtInt", "out of range"),
        ("SocketConnectPort=70000\n", "FIX.4.4", "SocketConnectPort", "out of range"),
        ("StartTime=25:00:00\n", "FIX.4.4", "StartTime", "not a valid time"),
        ("StartTime=8am\n", "FIX.4.4", "StartTime", "not a time"),
        ("StartTime=08:00:00 Mars/Olympus\n", "FIX.4.4", "StartTime", "time zone"),
        ("TimeZone=Nowhere/Land\n", "FIX.4.4", "TimeZone", "time zone"),
        ("ResetOnLogon=yes\n", "FIX.4.4", "ResetOnLogon", "not Y or N"),
        ("StartDay=Funday\nEndDay=Mon\n", "FIX.4.4", "StartDay", "day of the week"),
        ("StartDay=T\nEndDay=Mon\n", "FIX.4.4", "StartDay", "day of the week"),
        ("Weekdays=Mon,Mon\n", "FIX.4.4", "Weekdays", "twice"),
        ("StartDay=Mon\n", "FIX.4.4", "EndDay", "go together"),
        ("Weekdays=Mon\nStartDay=Mon\nEndDay=Fri\n", "FIX.4.4", "Weekdays", "cannot be"),
        ("", "FIX.9.9", "BeginString", "not one of"),
        ("TimestampPrecision=10\n", "FIX.4.4", "TimestampPrecision", "out of range"),
        ("ConnectionType=both\n", "FIX.4.4", "ConnectionType", "not one of"),
        ("DefaultApplVerID=FIX.5.0SP9\n", "FIXT.1.1", "DefaultApplVerID", "not an ApplVerID"),
        ("DataDictionary=FIX44.xml\n", "FIX.4.4", None, None),
        ("TransportDataDictionary=FIXT11.xml\n", "FIX.4.4", "TransportDataDictionary", "only"),
        ("SocketConnectHost2=h\nSocketConnectPort2=1\n", "FIX.4.4", "SocketConnectHost2", "skips"),
        ("SocketConnectHost1=h\n", "FIX.4.4", "SocketConnectHost1", "Port1 is missing"),
        ("SocketConnectHost1=h\nSocketConnectPort1=0\n", "FIX.4.4", "SocketConnectPort1", "range"),
    ],
)
def test_bad_values_are_errors_with_line_and_key(
    extra: str, begin: str, key: str | None, reason: str | None
) -> None:
    text = BASE.replace("FIX.4.4", begin) + extra
    if key is None:
        assert parse_settings(text).sessions
        return
    found = problems(text)
    assert any(k == key and reason in r for _, k, r in found), found
    for line, k, _ in found:
        if k == key and extra.startswith(key):
            assert line == 13


def test_fixt_rules() -> None:
    text = BASE.replace("FIX.4.4", "FIXT.1.1") + "DataDictionary=FIX44.xml\n"
    found = {k: r for _, k, r in problems(text)}
    assert "DefaultApplVerID" in found
    assert "TransportDataDictionary" in found
    assert "AppDataDictionary" in found
    assert "DataDictionary" not in found  # QuickFIX ignores it under FIXT: so do we
    ok = BASE.replace("FIX.4.4", "FIXT.1.1") + "DefaultApplVerID=9\nUseDataDictionary=N\n"
    assert parse_settings(ok).sessions[0].default_appl_ver_id == "9"
    # A FIXT session that also names DataDictionary (QuickFIX's own examples do): it loads,
    # with one warning naming the line.
    loaded = parse_settings(ok + "DataDictionary=FIX50.xml\n", "t.cfg")
    [warning] = [w for w in loaded.warnings if w.key == "DataDictionary"]
    assert warning.line == len((ok + "DataDictionary=FIX50.xml\n").splitlines())
    assert "ignored for FIXT.1.1 (as QuickFIX does)" in warning.reason


def test_role_rules() -> None:
    text = BASE.replace("SocketConnectHost=127.0.0.1\n", "").replace("HeartBtInt=30\n", "")
    found = {k for _, k, _ in problems(text)}
    assert found == {"SocketConnectHost", "HeartBtInt"}
    acceptor = BASE.replace("initiator", "acceptor")
    assert {k for _, k, _ in problems(acceptor)} == {"SocketAcceptPort"}
    assert (
        parse_settings(acceptor + "SocketAcceptPort=7000\n").sessions[0].socket_accept_port == 7000
    )


def test_missing_identity_and_schedule_are_errors() -> None:
    text = "[SESSION]\nConnectionType=acceptor\nSocketAcceptPort=1\n"
    found = problems(text)
    assert {k for _, k, _ in found} == {"BeginString", "SenderCompID", "TargetCompID"}
    assert all(line == 1 for line, _, _ in found)
    text = BASE.replace("StartTime=00:00:00\n", "")
    assert {k for _, k, _ in problems(text)} == {"StartTime"}
    assert parse_settings(text + "NonStopSession=Y\n").sessions[0].non_stop_session


def test_duplicate_session_is_an_error() -> None:
    text = BASE + "\n[SESSION]\nBeginString=FIX.4.4\nSenderCompID=ME\nTargetCompID=THEM\n"
    found = problems(text)
    assert found[0][0] == 14
    assert "already defined at 9" in found[0][2]
    parse_settings(text + "SessionQualifier=2\n")


def test_warnings_for_tolerated_oddities() -> None:
    text = "Orphan=1\n" + BASE + "HeartBtInt=31\nHeartBtInt=32\n[OTHER]\nX=1\n"
    f = parse_settings(text)
    reasons = [(w.line, w.reason) for w in f.warnings]
    assert (1, "key outside [DEFAULT]/[SESSION] is ignored") in reasons
    assert any("repeated key" in r for _, r in reasons)
    assert any("unknown section [OTHER]" in r for _, r in reasons)
    assert f.sessions[0].heart_bt_int == 32


def test_a_line_without_equals_is_an_error_on_its_own_line() -> None:
    # QuickFIX skips it; the key it meant to set then goes missing, reported at the section.
    text = BASE.replace("HeartBtInt=30", "HeartBtInt 30")
    with pytest.raises(SettingsError) as e:
        parse_settings(text, "my.cfg")
    first = e.value.problems[0]
    assert (first.line, first.reason) == (
        BASE.splitlines().index("HeartBtInt=30") + 1,
        "'HeartBtInt 30' is not key=value, a [section] or a # comment (no '=')",
    )


@pytest.mark.parametrize(
    ("typo", "known"),
    [
        ("ResetOnLogut", "ResetOnLogout"),
        ("HeartBeatInt", "HeartBtInt"),
        ("socketconecthost", "SocketConnectHost"),
    ],
)
def test_a_misspelt_key_is_an_error_naming_the_key_meant(typo: str, known: str) -> None:
    with pytest.raises(SettingsError) as e:
        parse_settings(BASE + f"{typo}=Y\n", "my.cfg")
    line = len(BASE.splitlines()) + 1
    assert str(e.value) == f"my.cfg:{line}: {typo}: unknown key; did you mean {known}?"


def test_errors_name_file_line_and_key() -> None:
    with pytest.raises(SettingsError) as e:
        parse_settings(BASE + "HeartBtInt=abc\n", "my.cfg")
    assert str(e.value) == "my.cfg:13: HeartBtInt: 'abc' is not an integer"


def test_load_missing_file_is_a_settings_error(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"missing\.cfg"):
        load_settings(tmp_path / "missing.cfg")


def test_session_lookup_by_id() -> None:
    f = load_settings(SAMPLE)
    s = f.session(SessionID("FIXT.1.1", "QWCONSOLE", "BROKER"))
    assert s is not None
    assert s.weekdays == (2, 3, 4, 5, 6)
    assert f.session(SessionID("FIX.4.4", "X", "Y")) is None


# ----------------------------------------------------------------------------- key table

#: Every key of fix-notes.md section 8 (QuickFIX C++ 1.16 plus the marked extensions).
_SECTION_8_TEXT = """
BeginString SenderCompID TargetCompID SenderSubID SenderLocationID TargetSubID TargetLocationID
SessionQualifier DefaultApplVerID ConnectionType StartTime EndTime StartDay EndDay LogonTime
LogoutTime LogonDay LogoutDay UseLocalTime NonStopSession TimeZone Weekdays HeartBtInt
ReconnectInterval LogonTimeout LogoutTimeout ResetOnLogon ResetOnLogout ResetOnDisconnect
RefreshOnLogon SendResetSeqNumFlag SendRedundantResendRequests SendNextExpectedMsgSeqNum
PersistMessages MillisecondsInTimeStamp TimestampPrecision CheckCompID CheckLatency MaxLatency
UseDataDictionary DataDictionary TransportDataDictionary AppDataDictionary
ValidateLengthAndChecksum ValidateFieldsOutOfOrder ValidateFieldsHaveValues
ValidateUserDefinedFields AllowUnknownMsgFields PreserveMessageFieldsOrder SocketConnectHost
SocketConnectPort HostSelectionPolicy HostSelectionPolicyPriorityStartOverInterval
SocketConnectSourceHost SocketConnectSourcePort SocketAcceptPort SocketReuseAddress
SocketNodelay SocketSendBufferSize SocketReceiveBufferSize AllowedRemoteAddresses
SocketAcceptHost FileStorePath FileLogPath FileLogBackupPath ScreenLogShowIncoming
ScreenLogShowOutgoing ScreenLogShowEvents MySQLStoreDatabase MySQLStoreUser MySQLStorePassword
MySQLStoreHost MySQLStorePort MySQLStoreUseConnectionPool PostgreSQLStoreDatabase
PostgreSQLStoreUser PostgreSQLStorePassword PostgreSQLStoreHost PostgreSQLStorePort
PostgreSQLStoreUseConnectionPool OdbcStoreUser OdbcStorePassword OdbcStoreConnectionString
MySQLLogDatabase MySQLLogUser MySQLLogPassword MySQLLogHost MySQLLogPort
MySQLLogUseConnectionPool MySQLLogIncomingTable MySQLLogOutgoingTable MySQLLogEventTable
PostgreSQLLogDatabase PostgreSQLLogUser PostgreSQLLogPassword PostgreSQLLogHost
PostgreSQLLogPort PostgreSQLLogUseConnectionPool PostgreSQLLogIncomingTable
PostgreSQLLogOutgoingTable PostgreSQLLogEventTable OdbcLogUser OdbcLogPassword
OdbcLogConnectionString OdbcLogIncomingTable OdbcLogOutgoingTable OdbcLogEventTable SSLProtocol
SSLCipherSuite TLSCipherSuites ServerCertificateFile ServerCertificateKeyFile
ClientCertificateFile ClientCertificateKeyFile CertificationAuthoritiesFile
CertificationAuthoritiesDirectory CertificateRevocationListFile
CertificateRevocationListDirectory CertificateVerifyLevel HttpAcceptPort AcceptorTemplate
DynamicSessions
"""
SECTION_8_KEYS = _SECTION_8_TEXT.split()


def test_every_section_8_key_is_known_and_typed() -> None:
    missing = [k for k in SECTION_8_KEYS if k.upper() not in KEYS]
    assert missing == []
    assert list(_check_table()) == []
    attrs = {f.name for f in dataclasses.fields(SessionSettings)}
    special = {"socket_connect_failover", "app_data_dictionaries", "extra", "section_line"}
    assert attrs - special == {k.attr for k in KEYS.values()}


def test_logon_and_logout_time_must_lie_in_the_window() -> None:
    window = BASE.replace("StartTime=00:00:00", "StartTime=08:00:00").replace(
        "EndTime=00:00:00", "EndTime=17:00:00"
    )
    s = parse_settings(window + "LogonTime=08:30:00\nLogoutTime=16:30:00\n").sessions[0]
    assert s.logon_time == TimeOfDay(dt.time(8, 30))
    found = problems(window + "LogonTime=07:00:00\nLogoutTime=18:00:00\n")
    assert [(line, k) for line, k, _ in found] == [(13, "LogonTime"), (14, "LogoutTime")]
    assert "between StartTime and EndTime" in found[0][2]
    overnight = window.replace("08:00:00", "22:00:00").replace("17:00:00", "06:00:00")
    parse_settings(overnight + "LogonTime=23:00:00\nLogoutTime=05:00:00\n")


def test_dictionary_paths_fall_back_to_shipped_dictionaries(tmp_path: Path) -> None:
    resources = ROOT / "resources" / "fix"
    s = parse_settings(BASE).sessions[0]
    assert s.dictionary_paths() == (resources / "FIX44.xml", {"6": resources / "FIX44.xml"})
    s = parse_settings(BASE + "DataDictionary=my/FIX44.xml\n").sessions[0]
    assert s.dictionary_paths(tmp_path) == (
        tmp_path / "my" / "FIX44.xml",
        {"6": tmp_path / "my" / "FIX44.xml"},
    )
    fixt = BASE.replace("FIX.4.4", "FIXT.1.1") + (
        "DefaultApplVerID=FIX.5.0SP2\nUseDataDictionary=N\nAppDataDictionary.FIX.4.4=/x/44.xml\n"
    )
    session, apps = parse_settings(fixt).sessions[0].dictionary_paths()
    assert session == resources / "FIXT11.xml"
    assert apps == {"9": resources / "FIX50SP2.xml", "6": Path("/x/44.xml")}


def test_settings_file_editing_helpers() -> None:
    f = parse_settings(BASE + "ResetOnLogon=Y\n")
    assert f.session_section(0) == 1
    assert f.value_source(0, "ResetOnLogon") == ("Y", "session")
    assert f.value_source(0, "heartbtint") == ("30", "default")
    assert f.value_source(0, "ReconnectInterval") == ("30", "engine")
    assert f.value_source(0, "PersistMessages") == ("Y", "engine")
    assert f.value_source(0, "FileStorePath") == (None, "engine")
    assert f.remove(1, "ResetOnLogon")
    assert f.sessions[0].reset_on_logon is False
    assert not f.remove(1, "ResetOnLogon")
    s = f.add_session({"BeginString": "FIX.4.2", "SenderCompID": "ME", "TargetCompID": "X"})
    assert s.session_id == SessionID("FIX.4.2", "ME", "X")
    assert len(f.sessions) == 2
    assert f.to_text().endswith(
        "\n\n[SESSION]\nBeginString=FIX.4.2\nSenderCompID=ME\nTargetCompID=X\n"
    )
    before = f.to_text()
    with pytest.raises(SettingsError, match="SenderCompID"):
        f.add_session({"BeginString": "FIX.4.2", "TargetCompID": "Y"})
    with pytest.raises(SettingsError, match="StartTime"):
        f.remove(0, "StartTime")
    assert f.to_text() == before
    assert len(f.sessions) == 2


def test_one_session_id_from_the_file_to_the_running_session() -> None:
    from engine.fix.application import SessionID as AppSessionID
    from engine.fix.session import FixSession

    s = parse_settings(BASE + "SessionQualifier=Q\nSenderSubID=DESK1\nTargetLocationID=NY\n")
    sid = s.sessions[0].session_id
    assert type(sid) is AppSessionID
    running = FixSession(s.sessions[0]).session_id
    assert type(running) is AppSessionID
    assert running == sid
    assert str(running) == f"{sid.begin_string}:ME/DESK1->THEM/NY:Q"


def test_one_settings_model_for_files_and_code() -> None:
    """A session read from a file and the same session written in code are equal objects, the
    file's unset keys take the class's defaults, and the Manager's defaults are those."""
    from engine.fix.validation.issues import ValidationOptions

    read = parse_settings(BASE + "LogonTimeout=5\nValidateUserDefinedFields=N\n").sessions[0]
    written = SessionSettings(
        begin_string="FIX.4.4",
        sender_comp_id="ME",
        target_comp_id="THEM",
        connection_type="initiator",
        heart_bt_int=30,
        logon_timeout=5,
        start_time=TimeOfDay(dt.time(0, 0)),
        end_time=TimeOfDay(dt.time(0, 0)),
        socket_connect_host="127.0.0.1",
        socket_connect_port=5001,
        validate_user_defined_fields=False,
    )
    assert dataclasses.replace(read, section_line=0) == written
    assert (read.is_initiator, read.heart_bt_int, read.logon_timeout) == (True, 30, 5)
    assert read.logout_timeout == 2
    assert not read.validation.validate_user_defined_fields
    assert read.validation.validate_fields_have_values == (
        ValidationOptions().validate_fields_have_values
    )
    defaults = {f.name: f.default for f in dataclasses.fields(SessionSettings)}
    for spec in KEYS.values():
        if spec.name not in ("BeginString", "SenderCompID", "TargetCompID", "ConnectionType"):
            assert spec.default == defaults[spec.attr], spec.name
    assert KEYS["CONNECTIONTYPE"].default is None  # required in a file: no default shown
    assert (
        SessionSettings(
            begin_string="FIX.4.4", sender_comp_id="A", target_comp_id="B"
        ).connection_type
        == "acceptor"
    )


def test_an_initiator_without_a_heartbeat_interval_is_refused() -> None:
    from engine.fix.session import FixSession

    with pytest.raises(ValueError, match="HeartBtInt is required for initiators"):
        FixSession(
            SessionSettings(
                begin_string="FIX.4.4",
                sender_comp_id="A",
                target_comp_id="B",
                connection_type="initiator",
            )
        )
    acceptor = FixSession(
        SessionSettings(begin_string="FIX.4.4", sender_comp_id="A", target_comp_id="C")
    )
    assert acceptor.state.heart_bt_int == 0  # learnt from the counterparty's Logon
