# SPDX-License-Identifier: MIT
"""Tests for engine.fix.validation: QuickFIX's reject reasons, texts and precedence."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.fix.dictionary import DataDictionary
from engine.fix.validation.issues import (
    REJECT_TEXTS,
    IssueKind,
    SessionRejectReason,
    ValidationIssue,
    ValidationOptions,
    unsupported_message_type,
)
from engine.fix.validation.validator import validate
from engine.fix.validation.walk import find_issues

ROOT = Path(__file__).resolve().parents[4]
RESOURCES = ROOT / "resources" / "fix"
ACCEPTANCE = ROOT.parent / "shared" / "fix-acceptance" / "server"
TIME = b"20240102-10:00:00.000"

_dd: dict[str, DataDictionary] = {}


def dd(name: str) -> DataDictionary:
    if name not in _dd:
        _dd[name] = DataDictionary.load(RESOURCES / f"{name}.xml")
    return _dd[name]


def msg(text: str, begin: str = "FIX.4.4") -> list[tuple[int, bytes]]:
    """Build pairs from ``35=D|11=x`` style text, adding 8, 9, the standard header and 10."""
    body: list[tuple[int, bytes]] = []
    for part in text.split("|"):
        tag, _, value = part.partition("=")
        body.append((int(tag), value.encode()))
    return [(8, begin.encode()), (9, b"0"), *body, (10, b"000")]


HB = "35=0|34=2|49=TW|52=20240102-10:00:00.000|56=ISLD"
NOS = (
    "35=D|34=2|49=TW|52=20240102-10:00:00.000|56=ISLD|11=ID|21=1|40=1|54=1|38=200.00|55=INTC"
    "|60=20240102-10:00:00"
)


# ----------------------------------------------------------------------------- acceptance


def _acceptance_cases() -> list[tuple[str, str, int]]:
    cases: list[tuple[str, str, int]] = []
    for ver in ("fix42", "fix44"):
        folder = ACCEPTANCE / ver
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.def")):
            if not path.name.startswith(("14", "15", "2q", "21")):
                continue
            lines = [ln for ln in path.read_text().splitlines() if ln[:1] in ("I", "E")]
            for i, line in enumerate(lines):
                if line.startswith("I8=") and "\x0135=A\x01" not in line:
                    cases.append((ver, f"{path.name}:{i}", i))
    return cases


def _load_case(ver: str, name: str, index: int) -> tuple[list[tuple[int, bytes]], str | None]:
    path = ACCEPTANCE / ver / name.split(":")[0]
    lines = [ln for ln in path.read_text().splitlines() if ln[:1] in ("I", "E")]
    pairs: list[tuple[int, bytes]] = []
    for field in lines[index][1:].split("\x01"):
        if field:
            tag, _, value = field.partition("=")
            pairs.append((int(tag), value.replace("<TIME>", TIME.decode()).encode()))
    pairs.insert(1, (9, b"0"))
    pairs.append((10, b"000"))
    expected = lines[index + 1] if index + 1 < len(lines) else ""
    return pairs, expected


@pytest.mark.parametrize(("ver", "name", "index"), _acceptance_cases())
def test_acceptance_script_rejects_match_quickfix(ver: str, name: str, index: int) -> None:
    pairs, expected = _load_case(ver, name, index)
    issue = validate(pairs, dd("FIX42" if ver == "fix42" else "FIX44"))
    assert expected is not None
    fields = dict(f.split("=", 1) for f in expected[1:].split("\x01") if "=" in f)
    if fields.get("35") == "3":
        assert issue is not None
        assert issue.text == fields["58"]
        assert issue.ref_msg_type == fields["372"]
        assert (str(issue.ref_tag) if issue.ref_tag is not None else None) == fields.get("371")
        begin = "FIX.4.2" if ver == "fix42" else "FIX.4.4"
        reason = issue.reject_reason_for(begin)
        assert (str(reason) if reason is not None else None) == fields.get("373")
    elif fields.get("35") in ("D", "d", "5", "0"):
        assert issue is None, issue


def test_acceptance_cases_were_found() -> None:
    if not ACCEPTANCE.is_dir():
        pytest.skip("acceptance scripts not available")
    assert len(_acceptance_cases()) > 20


# ----------------------------------------------------------------------------- each reason


def test_valid_messages_have_no_issue() -> None:
    assert validate(msg(HB), dd("FIX44")) is None
    assert validate(msg(NOS), dd("FIX44")) is None
    assert find_issues(msg(NOS), dd("FIX44")) == []


@pytest.mark.parametrize(
    ("text", "reason", "ref_tag"),
    [
        (HB + "|999=HI", 0, 999),
        (HB + "|0=HI", 0, 0),
        (HB + "|-1=HI", 0, -1),
        (HB + "|5000=HI", 0, 5000),
        ("35=0|34=2|49=TW|52=20240102-10:00:00.000", 1, 56),
        (NOS.replace("|11=ID", ""), 1, 11),
        (HB + "|55=MSFT", 2, 55),
        (HB.replace("56=ISLD", "56="), 4, 56),
        (NOS.replace("21=1", "21=4"), 5, 21),
        (NOS + "|167=BOO", 5, 167),
        (NOS.replace("38=200.00", "38=+200.00"), 6, 38),
        (NOS.replace("38=200.00", "38=1e5"), 6, 38),
        (NOS.replace("54=1", "54=12"), 6, 54),
        (NOS.replace("|60=20240102-10:00:00", "|60=20241302-10:00:00"), 6, 60),
        (HB + "|43=X", 6, 43),
        (NOS.replace("40=1", "40=1|40=2"), 13, 40),
        ("35=D|11=ID|34=2|49=TW|52=X|56=ISLD", 14, 34),
        (NOS + "|386=3|336=PRE-OPEN|336=AFTER-HOURS", 16, 386),
        (NOS + "|386=x|336=A", 6, 386),
        (NOS + "|453=1|447=D|448=P", 15, 447),
        (NOS + "|453=1|448=P|452=1|447=D", 15, 447),
    ],
)
def test_reject_reason_and_text(text: str, reason: int, ref_tag: int) -> None:
    issue = validate(msg(text), dd("FIX44"))
    assert issue is not None
    assert issue.reason == reason
    assert issue.ref_tag == ref_tag
    assert issue.text == REJECT_TEXTS[reason]
    assert issue.kind is IssueKind.SESSION_REJECT


def test_invalid_msg_type_has_no_ref_tag() -> None:
    issue = validate(msg(HB.replace("35=0", "35=*")), dd("FIX44"))
    assert issue == ValidationIssue(11, None, "Invalid MsgType", "*")


def test_incorrect_begin_string_is_a_logout_issue() -> None:
    issue = validate(msg(HB, begin="FIX.4.2"), dd("FIX44"))
    assert issue is not None
    assert issue.kind is IssueKind.INCORRECT_BEGIN_STRING
    assert issue.text == "Incorrect BeginString"


def test_missing_msg_type_and_begin_string_are_required_tags() -> None:
    issue = validate([(8, b"FIX.4.4"), (9, b"5"), (10, b"000")], dd("FIX44"))
    assert issue is not None
    assert (issue.reason, issue.ref_tag) == (1, 35)
    issue = validate([(35, b"0"), (10, b"000")], dd("FIX44"))
    assert issue is not None
    assert (issue.reason, issue.ref_tag) == (1, 8)


def test_precedence_out_of_order_before_msg_type_before_required() -> None:
    # Out-of-order header field and unknown MsgType: structure wins (QuickFIX order).
    issue = validate(msg("35=*|11=x|34=2|49=TW|52=X|56=ISLD"), dd("FIX44"))
    assert issue is not None
    assert issue.reason == SessionRejectReason.TAG_SPECIFIED_OUT_OF_REQUIRED_ORDER
    # Unknown MsgType and a missing header field: MsgType wins.
    issue = validate(msg("35=*|34=2|49=TW|52=X"), dd("FIX44"))
    assert issue is not None
    assert issue.reason == SessionRejectReason.INVALID_MSGTYPE
    # Missing required body field and an unknown tag: required wins.
    issue = validate(msg(NOS.replace("|11=ID", "") + "|999=x"), dd("FIX44"))
    assert issue is not None
    assert (issue.reason, issue.ref_tag) == (1, 11)
    # Header problems come before body problems; body fields in ascending tag order.
    issue = validate(msg(NOS.replace("49=TW", "49=") + "|999=x"), dd("FIX44"))
    assert issue is not None
    assert (issue.reason, issue.ref_tag) == (4, 49)
    issue = validate(msg(NOS + "|999=x|998=y"), dd("FIX44"))
    assert issue is not None
    assert issue.ref_tag == 998


def test_find_issues_lists_every_problem_in_order() -> None:
    issues = find_issues(msg(NOS + "|999=x|167=BOO|58="), dd("FIX44"))
    assert [(i.reason, i.ref_tag) for i in issues] == [(4, 58), (5, 167), (0, 999)]


def test_body_field_after_trailer_is_out_of_order() -> None:
    pairs = msg(NOS)
    pairs.insert(len(pairs) - 1, (93, b"1"))
    pairs.insert(len(pairs) - 1, (58, b"late"))
    issue = validate(pairs, dd("FIX44"))
    assert issue is not None
    assert (issue.reason, issue.ref_tag) == (14, 58)


def test_required_field_in_group_entry() -> None:
    issue = validate(msg(NOS + "|453=1|452=1"), dd("FIX44"), options=ValidationOptions())
    # 452 without the delimiter 448 starts an entry out of order first.
    assert issue is not None
    assert issue.reason == 15
    issue = validate(
        msg(NOS + "|453=1|452=1"),
        dd("FIX44"),
        options=ValidationOptions(validate_unordered_group_fields=False),
    )
    assert issue is None  # PartyID is optional in FIX 4.4's Parties


def test_nested_group_count_is_checked() -> None:
    good = NOS + "|453=1|448=P|452=1|802=2|523=a|523=b"
    assert validate(msg(good), dd("FIX44")) is None
    issue = validate(msg(NOS + "|453=1|448=P|452=1|802=3|523=a|523=b"), dd("FIX44"))
    assert issue is not None
    assert (issue.reason, issue.ref_tag) == (16, 802)
    issue = validate(msg(NOS + "|453=2|448=P|452=1|802=1|523=a"), dd("FIX44"))
    assert issue is not None
    assert (issue.reason, issue.ref_tag) == (16, 453)


def test_multiple_value_string_checks_each_value() -> None:
    assert validate(msg(NOS + "|18=1 2"), dd("FIX44")) is None
    issue = validate(msg(NOS + "|18=1 @"), dd("FIX44"))
    assert issue is not None
    assert (issue.reason, issue.ref_tag) == (5, 18)


# ----------------------------------------------------------------------------- switches


def test_switch_fields_out_of_order() -> None:
    text = "35=D|11=ID|21=1|40=1|54=1|38=200.00|55=INTC|60=20240102-10:00:00|34=2|49=TW|52=X|56=I"
    on = validate(msg(text), dd("FIX44"))
    assert on is not None
    assert on.reason == 14
    off = validate(msg(text), dd("FIX44"), options=ValidationOptions(False))
    assert off is not None
    assert off.reason == 6  # 52=X is now the first problem


def test_switch_fields_have_values() -> None:
    text = HB + "|112="
    assert validate(msg(text), dd("FIX44")) is not None
    opts = ValidationOptions(validate_fields_have_values=False)
    assert validate(msg(text), dd("FIX44"), options=opts) is None


def test_switch_user_defined_fields() -> None:
    opts = ValidationOptions(validate_user_defined_fields=False)
    assert validate(msg(HB + "|5000=HI"), dd("FIX44"), options=opts) is None
    issue = validate(msg(HB + "|999=HI"), dd("FIX44"), options=opts)
    assert issue is not None
    assert issue.reason == 0


def test_switch_allow_unknown_msg_fields() -> None:
    opts = ValidationOptions(allow_unknown_msg_fields=True)
    assert validate(msg(HB + "|999=HI"), dd("FIX44"), options=opts) is None
    assert validate(msg(HB + "|55=MSFT"), dd("FIX44"), options=opts) is None
    issue = validate(msg(HB + "|5000=HI"), dd("FIX44"), options=opts)
    assert issue is not None
    assert issue.reason == 0
    # Values of known fields are still checked.
    issue = validate(msg(HB + "|43=X"), dd("FIX44"), options=opts)
    assert issue is not None
    assert issue.reason == 6


def test_options_from_settings() -> None:
    from engine.fix.settings import parse_settings

    text = (
        "[SESSION]\nBeginString=FIX.4.4\nSenderCompID=A\nTargetCompID=B\n"
        "ConnectionType=acceptor\nSocketAcceptPort=5000\nNonStopSession=Y\n"
        "ValidateUserDefinedFields=N\nCheckFieldsOutOfOrder=N\nAllowUnknownMsgFields=Y\n"
    )
    s = parse_settings(text).sessions[0]
    opts = ValidationOptions.from_settings(s)
    assert opts == ValidationOptions(
        validate_fields_out_of_order=False,
        validate_user_defined_fields=False,
        allow_unknown_msg_fields=True,
    )


# ----------------------------------------------------------------------------- versions


def test_fix40_text_carries_the_tag_and_no_reason_field() -> None:
    issue = validate(msg(HB + "|999=HI", begin="FIX.4.0"), dd("FIX40"))
    assert issue is not None
    assert issue.text_for("FIX.4.0") == "Invalid tag number (999)"
    assert issue.text_for("FIX.4.2") == "Invalid tag number"
    assert issue.reject_reason_for("FIX.4.0") is None
    assert issue.reject_reason_for("FIX.4.2") == 0


def test_fix42_omits_reason_codes_above_11() -> None:
    issue = ValidationIssue(13, 40, REJECT_TEXTS[13], "D")
    assert issue.reject_reason_for("FIX.4.2") is None
    assert issue.reject_reason_for("FIX.4.4") == 13
    assert issue.reject_reason_for("FIXT.1.1") == 13


def test_unsupported_message_type_by_version() -> None:
    bmr = unsupported_message_type("FIX.4.2", "8")
    assert bmr.is_business_reject
    assert (bmr.reason, bmr.text, bmr.ref_msg_type) == (3, "Unsupported Message Type", "8")
    rej = unsupported_message_type("FIX.4.1", "8")
    assert not rej.is_business_reject
    assert rej.text == "Unsupported message type"


def test_fix40_char_fields_are_strings() -> None:
    # FIX 4.0/4.1 CHAR fields are validated as STRING by QuickFIX.
    # ClOrdID <11> is a CHAR in FIX 4.0.
    text = "35=D|34=2|49=TW|52=20240102-10:00:00|56=ISLD|11=LONGID|21=1|40=1|54=1|38=200|55=INTC"
    assert validate(msg(text, begin="FIX.4.0"), dd("FIX40")) is None
    assert validate(msg(text.replace("54=1", "54=12"), begin="FIX.4.0"), dd("FIX40")) is not None


def test_fixt_session_uses_transport_for_admin_and_app_for_body() -> None:
    transport, app = dd("FIXT11"), dd("FIX50SP2")
    logon = msg("35=A|34=1|49=TW|52=20240102-10:00:00.000|56=ISLD|98=0|108=30|1137=9", "FIXT.1.1")
    assert validate(logon, transport, app) is None
    nos = msg(NOS.replace("35=D|", "35=D|1128=9|"), "FIXT.1.1")
    assert validate(nos, transport, app) is None
    issue = validate(msg(NOS + "|98=0", "FIXT.1.1"), transport, app)
    assert issue is not None
    assert (issue.reason, issue.ref_tag) == (2, 98)
    issue = validate(msg(NOS, "FIX.4.4"), transport, app)
    assert issue is not None
    assert issue.kind is IssueKind.INCORRECT_BEGIN_STRING


# ----------------------------------------------------------------------------- fuzzing

_KNOWN_TAGS = [
    8,
    9,
    35,
    34,
    49,
    52,
    56,
    10,
    11,
    21,
    38,
    40,
    44,
    54,
    55,
    60,
    453,
    448,
    452,
    802,
    523,
]
_tags = st.one_of(st.sampled_from(_KNOWN_TAGS), st.integers(-5, 10_000))
_values = st.one_of(
    st.sampled_from([b"", b"D", b"0", b"1", b"2", b"FIX.4.4", b"-1", b"x", b"20240102-10:00:00"]),
    st.binary(max_size=12),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_tags, _values), max_size=30))
def test_fuzz_garbage_never_raises(pairs: list[tuple[int, bytes]]) -> None:
    for issue in find_issues(pairs, dd("FIX44")):
        assert isinstance(issue, ValidationIssue)
        if issue.kind is IssueKind.SESSION_REJECT:
            assert issue.text == REJECT_TEXTS[issue.reason]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_fuzz_mutated_valid_message_gets_issue_or_none(data: st.DataObject) -> None:
    pairs = msg(NOS + "|453=1|448=P|452=1|802=1|523=a")
    n = data.draw(st.integers(0, 4))
    for _ in range(n):
        op = data.draw(st.sampled_from(["drop", "dup", "swap", "set"]))
        i = data.draw(st.integers(0, len(pairs) - 1))
        if op == "drop" and len(pairs) > 1:
            del pairs[i]
        elif op == "dup":
            pairs.insert(i, pairs[i])
        elif op == "swap":
            j = data.draw(st.integers(0, len(pairs) - 1))
            pairs[i], pairs[j] = pairs[j], pairs[i]
        else:
            pairs[i] = (pairs[i][0], data.draw(_values))
    issue = validate(pairs, dd("FIX44"))
    assert issue is None or issue.text in (*REJECT_TEXTS.values(), "Incorrect BeginString")
    if n == 0:
        assert issue is None
    # The same garbage through a FIXT pair of dictionaries must not raise either.
    fixt = validate(pairs, dd("FIXT11"), dd("FIX50SP2"))
    assert fixt is not None  # BeginString FIX.4.4 on a FIXT session
