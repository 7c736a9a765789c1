# SPDX-License-Identifier: MIT
from engine.fix.edit.describe import FieldDescriber, FieldNode, humanize
from engine.fix.edit.splitting import split_fields


def test_describer_names_fields_and_values_from_the_shipped_dictionaries() -> None:
    d = FieldDescriber()
    assert d(35, b"8") == ("MsgType", "Execution report")
    assert d(39, b"A") == ("OrdStatus", "Pending new")
    assert d(44, b"6000.25") == ("Price", "")
    assert d(9999, b"x") == ("", "")


def test_humanize_keeps_version_tokens() -> None:
    assert humanize("NEW_ORDER_SINGLE") == "New order single"
    assert humanize("FIX50SP2") == "FIX50SP2"
    assert humanize("") == ""


def _frame(body: bytes) -> bytes:
    head = b"8=FIX.4.4\x019=%d\x01" % len(body)
    return head + body + b"10=%03d\x01" % (sum(head + body) % 256)


NOS = b"35=D\x0149=ME\x0156=THEM\x0134=2\x0152=20260101-00:00:00\x01"


def test_split_fields_marks_malformed_fields_with_tag_minus_one() -> None:
    assert split_fields(b"8=FIX.4.4\x01junk\x01x=1\x0135=D\x01") == [
        (8, b"FIX.4.4"),
        (-1, b"junk"),
        (-1, b"x=1"),
        (35, b"D"),
    ]


def test_explain_checked_splits_sections_and_names_fields() -> None:
    d = FieldDescriber(preload=False)
    raw = _frame(NOS + b"11=A1\x0154=1\x0160=20260101-00:00:00\x0140=2\x0144=10\x01")
    nodes, against = d.explain_checked(raw)
    assert against == "the shipped FIX.4.4 dictionary"
    assert [(n.name, n.value) for n in nodes] == [
        ("Header", "7 fields"),
        ("Body", "5 fields"),
        ("Trailer", "1 field"),
    ]
    side = next(c for c in nodes[1].children if c.tag == 54)
    assert side == FieldNode(54, "Side", "1", "Buy")
    assert not any(c.problem for n in nodes for c in n.children)


def test_explain_checked_shows_a_missing_required_field_with_the_reason() -> None:
    d = FieldDescriber(preload=False)
    raw = _frame(NOS + b"54=1\x0160=20260101-00:00:00\x0140=2\x0144=10\x01")  # no ClOrdID <11>
    nodes, _ = d.explain_checked(raw)
    missing = [c for c in nodes[1].children if c.value == "(missing)"]
    assert [(c.tag, c.name) for c in missing] == [(11, "ClOrdID")]
    assert missing[0].problem
