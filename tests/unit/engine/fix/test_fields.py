# SPDX-License-Identifier: MIT
"""Tests for engine.fix.fields: message structure with groups and typed values."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest

from engine.fix.dictionary import DataDictionary
from engine.fix.fields import (
    FieldConversionError,
    convert_value,
    parse_message,
    parse_utc_timestamp,
)

ROOT = Path(__file__).resolve().parents[4]
RESOURCES = ROOT / "resources" / "fix"


@pytest.fixture(scope="module")
def fix44() -> DataDictionary:
    return DataDictionary.load(RESOURCES / "FIX44.xml")


def pairs(text: str) -> list[tuple[int, bytes]]:
    out = []
    for part in text.split("|"):
        tag, _, value = part.partition("=")
        out.append((int(tag), value.encode()))
    return out


@pytest.mark.parametrize(
    ("tag", "raw", "expected"),
    [
        (34, b"12", 12),  # SEQNUM
        (38, b"-5", Decimal(-5)),  # QTY
        (44, b"101.250", Decimal("101.250")),  # PRICE keeps its scale
        (44, b".5", Decimal("0.5")),
        (54, b"1", "1"),  # CHAR
        (43, b"Y", True),  # BOOLEAN
        (43, b"N", False),
        (453, b"2", 2),  # NUMINGROUP
        (52, b"19700101-00:00:01", 1_000_000_000),
        (52, b"19700101-00:00:01.5", 1_500_000_000),
        (52, b"20240102-10:00:00.123456789", 1_704_189_600_123_456_789),
        (75, b"20240229", dt.date(2024, 2, 29)),  # LOCALMKTDATE
        (200, b"202412", "202412"),  # MONTHYEAR
        (200, b"202412w2", "202412w2"),
        (18, b"1 2 G", ("1", "2", "G")),  # MULTIPLEVALUESTRING
        (96, b"\x01\x02=", b"\x01\x02="),  # DATA
        (55, b"MSFT", "MSFT"),
        (15, b"EUR", "EUR"),  # CURRENCY
        (99999, b"abc", "abc"),  # unknown tag: string
    ],
)
def test_convert_value_by_type(
    fix44: DataDictionary, tag: int, raw: bytes, expected: object
) -> None:
    assert convert_value(tag, raw, fix44) == expected


@pytest.mark.parametrize(
    ("tag", "raw", "reason"),
    [
        (34, b"1.5", "not an integer"),
        (34, b"+1", "not an integer"),
        (44, b"1e5", "not a decimal"),
        (44, b"", "not a decimal"),
        (54, b"12", "exactly one character"),
        (43, b"y", "Y or N"),
        (52, b"20241301-00:00:00", "UTCTIMESTAMP"),
        (52, b"20240101-24:00:00", "UTCTIMESTAMP"),
        (52, b"20240101-00:00:00.1234567890", "UTCTIMESTAMP"),
        (75, b"20230229", "LOCALMKTDATE"),
        (200, b"202413", "MONTHYEAR"),
    ],
)
def test_convert_value_errors_name_tag_field_value(
    fix44: DataDictionary, tag: int, raw: bytes, reason: str
) -> None:
    with pytest.raises(FieldConversionError) as e:
        convert_value(tag, raw, fix44)
    assert e.value.tag == tag
    assert e.value.value == raw
    name = fix44.field_name(tag)
    assert name is not None
    assert e.value.name == name
    assert reason in str(e.value)
    assert f"{name} <{tag}>" in str(e.value)


def test_parse_utc_timestamp_leap_second_and_garbage() -> None:
    assert parse_utc_timestamp(b"19700101-00:00:60") == 60_000_000_000
    assert parse_utc_timestamp(b"garbage") is None


def test_parse_message_splits_parts_and_builds_nested_groups(fix44: DataDictionary) -> None:
    text = (
        "8=FIX.4.4|9=100|35=D|34=2|49=TW|52=20240102-10:00:00.000|56=ISLD|11=ID|"
        "453=2|448=P1|452=1|802=2|523=a|803=1|523=b|448=P2|447=D|"
        "54=1|55=MSFT|38=100|40=2|44=10.5|60=20240102-10:00:00|10=000"
    )
    m = parse_message(pairs(text), fix44)
    assert m.msg_type == "D"
    assert m.begin_string == "FIX.4.4"
    assert m.out_of_order_tag is None
    assert [t for t, _ in m.header] == [8, 9, 35, 34, 49, 52, 56]
    assert [t for t, _ in m.trailer] == [10]
    assert [t for t, _ in m.body] == [11, 453, 54, 55, 38, 40, 44, 60]
    parties = m.body.group(453)
    assert len(parties) == 2
    assert parties[0].get(448) == "P1"
    assert parties[0].get(452) == 1
    subs = parties[0].group(802)
    assert [s.get(523) for s in subs] == ["a", "b"]
    assert subs[0].get(803) == 1
    assert parties[1].get(447) == "D"
    assert parties[1].group(802) == []
    # Party 2 lists 447 after 448, in order; the parser saw no group disorder.
    assert m.unordered_group_tag is None
    assert m.body.get(44) == Decimal("10.5")
    assert m.body.get(60) == 1_704_189_600_000_000_000
    assert m.header.get(34) == 2
    assert m.body.get(999) is None
    assert 453 in m.body
    d = m.body.to_dict()
    assert d["Price"] == Decimal("10.5")
    assert d["NoPartyIDs[]"][0]["NoPartySubIDs[]"][1] == {"PartySubID": "b"}  # type: ignore[index]


def test_parse_message_repeated_group_field_starts_new_entry(fix44: DataDictionary) -> None:
    text = "8=FIX.4.4|35=D|11=x|386=3|336=A|336=B|60=20240102-10:00:00|10=0"
    m = parse_message(pairs(text), fix44)
    assert [e.get(336) for e in m.body.group(386)] == ["A", "B"]
    assert [t for t, _ in m.body] == [11, 386, 60]


def test_parse_message_records_disorder(fix44: DataDictionary) -> None:
    m = parse_message(pairs("8=FIX.4.4|35=D|11=x|34=2|453=1|452=1|448=P|10=0"), fix44)
    assert m.out_of_order_tag == 34
    # 452 starts the entry instead of the delimiter 448 (which then starts a second entry).
    assert m.unordered_group_tag == 452
    assert len(m.body.group(453)) == 2


def test_parse_message_with_bad_value_reports_on_get(fix44: DataDictionary) -> None:
    m = parse_message(pairs("8=FIX.4.4|35=D|44=abc|10=0"), fix44)
    with pytest.raises(FieldConversionError, match="Price <44>"):
        m.body.get(44)
    assert m.body.to_dict()["Price"] == b"abc"
