# SPDX-License-Identifier: MIT
"""The last conformance points of issue 18, each as QuickFIX (or the spec) answers it.

* FIX.4.0/4.1 ``TIME`` fields are UTCTimestamps: ``126=20040415`` is "Incorrect data format";
* an undefined header tag is reported before a bad body value (QuickFIX's fixed header list);
* sequence numbers past 64 bits are refused, never a ResendRequest;
* a BusinessMessageReject under FIXT.1.1 carries DefaultApplVerID <1137> in its body;
* a Logon with ResetSeqNumFlag <141> = Y must be MsgSeqNum <34> = 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from engine.clock import TestClock
from engine.fix.application import Application, SessionID, UnsupportedMessageType
from engine.fix.codec import decode_one, encode, format_timestamp
from engine.fix.dictionary import DataDictionary
from engine.fix.log import MemoryLog
from engine.fix.message import FixMessage
from engine.fix.session import SEQNUM_MAX, FixSession
from engine.fix.settings import SessionSettings
from engine.fix.store import MemoryStore
from engine.fix.validation.issues import SessionRejectReason
from engine.fix.validation.validator import validate

RESOURCES = Path(__file__).resolve().parents[4] / "resources" / "fix"
TS0 = b"20040415-10:00:00"
TS3 = b"20240102-10:00:00.000"
ER = [
    (37, b"id"),
    (17, b"id"),
    (150, b"0"),
    (39, b"0"),
    (55, b"WLRI"),
    (54, b"1"),
    (151, b"100"),
    (14, b"0"),
    (6, b"0.0"),
]


def _dd(name: str) -> DataDictionary:
    return DataDictionary.load(RESOURCES / f"{name}.xml")


def _pairs(begin: str, text: str) -> list[tuple[int, bytes]]:
    body = [(int(t), v.encode()) for t, _, v in (p.partition("=") for p in text.split("|"))]
    return [(8, begin.encode()), (9, b"0"), *body, (10, b"000")]


def _nos40(extra: str = "", ord_type: str = "1") -> str:
    head = f"35=D|34=2|49=TW|52={TS0.decode()}|56=ISLD"
    return f"{head}{extra}|11=ID|21=3|38=100|40={ord_type}|54=1|55=IVP"


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize("version", ["FIX40", "FIX41"])
def test_fix40_41_time_field_must_be_a_timestamp(version: str) -> None:
    begin = f"FIX.{version[3]}.{version[4]}"
    d = _dd(version)
    bad = validate(_pairs(begin, _nos40() + "|126=20040415"), d)
    assert bad is not None
    assert (bad.reason, bad.ref_tag) == (SessionRejectReason.INCORRECT_DATA_FORMAT, 126)
    assert bad.text_for(begin) == "Incorrect data format for value (126)"
    assert validate(_pairs(begin, _nos40() + f"|126={TS0.decode()}"), d) is None
    # SendingTime <52> is TIME too: a date alone is refused there as well
    late = validate(_pairs(begin, _nos40().replace(TS0.decode(), "20040415")), d)
    assert late is not None
    assert late.ref_tag == 52


def test_undefined_header_tag_comes_before_a_bad_body_value() -> None:
    # OnBehalfOfLocationID <144> is not in FIX.4.0, but QuickFIX files it in the header by its
    # fixed list, and the header is checked before the body's 40=w.
    d = _dd("FIX40")
    issue = validate(_pairs("FIX.4.0", _nos40("|115=JCD|116=CS|144=CHI", ord_type="w")), d)
    assert issue is not None
    assert (issue.reason, issue.ref_tag) == (SessionRejectReason.INVALID_TAG_NUMBER, 144)
    assert issue.text_for("FIX.4.0") == "Invalid tag number (144)"
    without = validate(_pairs("FIX.4.0", _nos40("|115=JCD|116=CS", ord_type="w")), d)
    assert without is not None
    assert without.ref_tag == 40


@pytest.mark.parametrize(("version", "begin"), [("FIX42", "FIX.4.2"), ("FIX44", "FIX.4.4")])
def test_sequence_number_past_64_bits_is_incorrect_data_format(version: str, begin: str) -> None:
    d = _dd(version)
    hb = "35=0|34={}|49=TW|52=" + TS3.decode() + "|56=ISLD"
    assert validate(_pairs(begin, hb.format(SEQNUM_MAX)), d) is None
    for seq in (SEQNUM_MAX + 1, 99999999999999999999999):
        issue = validate(_pairs(begin, hb.format(seq)), d)
        assert issue is not None
        assert (issue.reason, issue.ref_tag) == (SessionRejectReason.INCORRECT_DATA_FORMAT, 34)
    # NewSeqNo <36> of a SequenceReset likewise
    reset = validate(_pairs(begin, hb.format(2) + f"|36={SEQNUM_MAX + 1}"), _dd(version))
    assert reset is not None  # 36 is not a Heartbeat field, but its format is checked first
    assert reset.ref_tag == 36


# ----------------------------------------------------------------------------- session


class Refuser(Application):
    """Refuses every application message as unsupported; counts logons."""

    def __init__(self) -> None:
        self.logons = 0

    def on_logon(self, session_id: SessionID) -> None:
        self.logons += 1

    def from_app(self, message: FixMessage, session_id: SessionID) -> None:
        raise UnsupportedMessageType


def _session(clock: TestClock, begin: str = "FIX.4.4", **kw: object) -> tuple[FixSession, Refuser]:
    app = Refuser()
    cfg = SessionSettings(begin_string=begin, sender_comp_id="ISLD", target_comp_id="TW", **kw)  # type: ignore[arg-type]
    return FixSession(cfg, MemoryStore(clock.now_ns()), app, MemoryLog(), clock), app


def _msg(
    clock: TestClock,
    mt: str,
    seq: int,
    body: Sequence[tuple[int, bytes]] = (),
    begin: bytes = b"FIX.4.4",
) -> FixMessage:
    header = [
        (34, b"%d" % seq),
        (49, b"TW"),
        (52, format_timestamp(clock.now_ns(), 3)),
        (56, b"ISLD"),
    ]
    m = decode_one(encode(begin, mt.encode(), header, list(body)))
    assert m is not None
    return m


def _fields(raw: bytes) -> dict[int, bytes]:
    m = decode_one(raw)
    assert m is not None
    return dict(m.pairs)


@pytest.mark.parametrize("dictionary", [None, "FIX44.xml"])
def test_session_refuses_sequence_number_past_64_bits(
    test_clock: TestClock, dictionary: str | None
) -> None:
    s, _ = _session(
        test_clock,
        use_data_dictionary=dictionary is not None,
        data_dictionary=str(RESOURCES / dictionary) if dictionary else None,
    )
    s.on_connected(test_clock.now_ns())
    s.on_message(_msg(test_clock, "A", 1, [(98, b"0"), (108, b"30")]), test_clock.now_ns())
    assert s.is_logged_on
    huge = 99999999999999999999999
    out = s.on_message(_msg(test_clock, "0", huge), test_clock.now_ns())
    (rj,) = [_fields(o) for o in out]
    assert (rj[35], rj[45], rj[371], rj[373]) == (b"3", b"%d" % huge, b"34", b"6")
    assert rj[58] == b"Incorrect data format for value"
    assert s.next_target_seq_num == 2  # nothing counted, no ResendRequest, still logged on
    assert s.is_logged_on
    assert not s.wants_disconnect
    (hb,) = s.on_message(_msg(test_clock, "1", 2, [(112, b"T")]), test_clock.now_ns())
    assert _fields(hb)[35] == b"0"
    assert s.next_target_seq_num == 3


@pytest.mark.parametrize(("appl", "code"), [("FIX.5.0", b"7"), ("FIX.5.0SP2", b"9")])
def test_fixt_business_reject_carries_default_appl_ver_id(
    test_clock: TestClock, appl: str, code: bytes
) -> None:
    s, _ = _session(
        test_clock,
        "FIXT.1.1",
        transport_data_dictionary=str(RESOURCES / "FIXT11.xml"),
        app_data_dictionary=str(RESOURCES / ("FIX50.xml" if code == b"7" else "FIX50SP2.xml")),
        default_appl_ver_id=appl,
    )
    s.on_connected(test_clock.now_ns())
    logon = [(98, b"0"), (108, b"30"), (1137, code)]
    s.on_message(_msg(test_clock, "A", 1, logon, b"FIXT.1.1"), test_clock.now_ns())
    assert s.is_logged_on
    # an ExecutionReport: valid, but the application does not handle it
    (raw,) = s.on_message(_msg(test_clock, "8", 2, ER, b"FIXT.1.1"), test_clock.now_ns())
    m = decode_one(raw)
    assert m is not None
    tags = [t for t, _ in m.pairs]
    # QuickFIX's generateBusinessReject: 1137 is a body field, after 380 in tag order; no 371
    assert tags[-6:] == [45, 58, 372, 380, 1137, 10]
    f = dict(m.pairs)
    assert (f[35], f[45], f[58], f[372], f[380], f[1137]) == (
        b"j",
        b"2",
        b"Unsupported Message Type",
        b"8",
        b"3",
        code,
    )


def test_fix44_business_reject_has_no_appl_ver_id(test_clock: TestClock) -> None:
    s, _ = _session(test_clock, data_dictionary=str(RESOURCES / "FIX44.xml"))
    s.on_connected(test_clock.now_ns())
    s.on_message(_msg(test_clock, "A", 1, [(98, b"0"), (108, b"30")]), test_clock.now_ns())
    (raw,) = s.on_message(_msg(test_clock, "8", 2, ER), test_clock.now_ns())
    f = _fields(raw)
    assert f[35] == b"j"
    assert f[380] == b"3"
    assert 1137 not in f
    assert 371 not in f


def test_logon_with_reset_flag_must_be_seq_1(test_clock: TestClock) -> None:
    s, app = _session(test_clock)
    s.store.set_next_target_seq_num(7)
    s.store.set_next_sender_seq_num(9)
    s.on_connected(test_clock.now_ns())
    bad = [(98, b"0"), (108, b"30"), (141, b"Y")]
    (lo,) = s.on_message(_msg(test_clock, "A", 5, bad), test_clock.now_ns())
    f = _fields(lo)
    assert f[35] == b"5"
    assert f[58] == b"MsgSeqNum must be 1 in a Logon with ResetSeqNumFlag=Y, received 5"
    assert s.wants_disconnect
    assert not s.is_logged_on
    assert app.logons == 0
    assert s.next_target_seq_num == 7  # nothing was reset


def test_logon_with_reset_flag_and_seq_1_resets_both_sides(test_clock: TestClock) -> None:
    s, app = _session(test_clock)
    s.store.set_next_target_seq_num(7)
    s.store.set_next_sender_seq_num(9)
    s.on_connected(test_clock.now_ns())
    ok = [(98, b"0"), (108, b"30"), (141, b"Y")]
    (answer,) = s.on_message(_msg(test_clock, "A", 1, ok), test_clock.now_ns())
    f = _fields(answer)
    assert (f[35], f[34], f[141]) == (b"A", b"1", b"Y")
    assert s.is_logged_on
    assert app.logons == 1
    assert s.next_target_seq_num == 2


# ----------------------------------------------------------------------------- missing header


def _without_52(
    clock: TestClock, mt: str, seq: int, body: Sequence[tuple[int, bytes]], begin: bytes
) -> FixMessage:
    header = [(34, b"%d" % seq), (49, b"TW"), (56, b"ISLD")]
    m = decode_one(encode(begin, mt.encode(), header, list(body)))
    assert m is not None
    return m


def test_fixt_application_message_without_sending_time_is_the_sessions_verdict() -> None:
    # QuickFIX checks required header fields with the body's dictionary: FIX 5.x defines none,
    # so validation passes and the session's FieldNotFound answers (BusinessMessageReject 5).
    fixt, fix50 = _dd("FIXT11"), _dd("FIX50SP2")
    er = "|".join(f"{t}={v.decode()}" for t, v in ER)
    app_msg = _pairs("FIXT.1.1", "35=8|34=2|49=TW|56=ISLD|" + er)
    assert validate(app_msg, fixt, fix50) is None
    admin = validate(_pairs("FIXT.1.1", "35=0|34=2|49=TW|56=ISLD"), fixt, fix50)
    assert admin is not None
    assert (admin.reason, admin.ref_tag) == (SessionRejectReason.REQUIRED_TAG_MISSING, 52)


def test_fixt_session_answers_missing_sending_time_with_business_reject(
    test_clock: TestClock,
) -> None:
    s, _ = _session(
        test_clock,
        "FIXT.1.1",
        transport_data_dictionary=str(RESOURCES / "FIXT11.xml"),
        app_data_dictionary=str(RESOURCES / "FIX50SP2.xml"),
        default_appl_ver_id="FIX.5.0SP2",
    )
    s.on_connected(test_clock.now_ns())
    logon = [(98, b"0"), (108, b"30"), (1137, b"9")]
    s.on_message(_msg(test_clock, "A", 1, logon, b"FIXT.1.1"), test_clock.now_ns())
    (raw,) = s.on_message(_without_52(test_clock, "8", 2, ER, b"FIXT.1.1"), test_clock.now_ns())
    f = _fields(raw)
    assert (f[35], f[45], f[380], f[1137]) == (b"j", b"2", b"5", b"9")
    assert f[58] == b"Conditionally Required Field Missing (52)"
    assert s.next_target_seq_num == 3
    assert s.is_logged_on


def test_session_without_dictionary_rejects_missing_sending_time(test_clock: TestClock) -> None:
    # QuickFIX with UseDataDictionary=N: FieldNotFound from verify, not a disconnect.
    s, _ = _session(test_clock, use_data_dictionary=False)
    s.on_connected(test_clock.now_ns())
    s.on_message(_msg(test_clock, "A", 1, [(98, b"0"), (108, b"30")]), test_clock.now_ns())
    (rj,) = s.on_message(_without_52(test_clock, "0", 2, [], b"FIX.4.4"), test_clock.now_ns())
    f = _fields(rj)
    assert (f[35], f[45], f[371], f[373], f[58]) == (
        b"3",
        b"2",
        b"52",
        b"1",
        b"Required tag missing",
    )
    (bmr,) = s.on_message(_without_52(test_clock, "8", 3, ER, b"FIX.4.4"), test_clock.now_ns())
    assert (_fields(bmr)[35], _fields(bmr)[380]) == (b"j", b"5")
    assert s.next_target_seq_num == 4
    assert not s.wants_disconnect
