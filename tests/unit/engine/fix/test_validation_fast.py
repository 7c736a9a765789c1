# SPDX-License-Identifier: MIT
"""validate()'s precompiled fast path agrees with the full walk on every message.

Messages are built from the dictionaries the project ships (resources/fix/): well-formed ones
(every required field, random optional fields, repeating groups with nested groups, values of
the right type) and the same messages damaged (fields dropped, repeated, moved, emptied, given
bad values, unknown tags, wrong counts, wrong BeginString or MsgType). For each, validate() must
return exactly what the straightforward walk (``_validate_reference``) returns, under random
options; and a message the walk accepts must be accepted by the fast path itself, so that the
comparison is not won by always falling back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.fix.dictionary import DataDictionary, FieldDef, GroupDef, MessageDef
from engine.fix.fields import check_format, parse_utc_timestamp
from engine.fix.message import FixMessage
from engine.fix.validation.formats import float_ok, int_ok, timestamp_ok
from engine.fix.validation.issues import DEFAULT_OPTIONS, ValidationOptions
from engine.fix.validation.plans import plan_accepts, plan_for
from engine.fix.validation.validator import validate, validate_message
from engine.fix.validation.walk import _validate_reference

RESOURCES = Path(__file__).resolve().parents[4] / "resources" / "fix"
Pairs = list[tuple[int, bytes]]
Draw = Callable[..., Any]

_dd: dict[str, DataDictionary] = {}


def dd(name: str) -> DataDictionary:
    if name not in _dd:
        _dd[name] = DataDictionary.load(RESOURCES / f"{name}.xml")
    return _dd[name]


#: (session dictionary, application dictionary or None) pairs to test.
SETUPS = [
    ("FIX40", None),
    ("FIX41", None),
    ("FIX42", None),
    ("FIX43", None),
    ("FIX44", None),
    ("FIXT11", "FIX50SP2"),
    ("FIXT11", "FIX50"),
]

GARBAGE = [
    b"x", b"-", b"--1", b"1.2.3", b".", b"-.5", b"+1", b"1e5", b" 1", b"Z", b"YN", b"99",
    b"-0", b"0", b"\xe9", b"20241301-10:00:00", b"20240230-10:00:00", b"20240102-24:00:00",
    b"20240102-10:00:00.", b"20240102-10:00:00.1234567890", b"00000102-10:00:00",
    b"20240102-10:00:60.5", b"10:00:00", b"25:00:00", b"20240102", b"20240100", b"1 2", b"1  2",
    b"A B", b"FIX.4.4", b"FIXT.1.1", b"D", b"8",
]  # fmt: skip


# ----------------------------------------------------------------------------- building


def _value(draw: Draw, fd: FieldDef, char_is_string: bool) -> bytes:
    t = fd.type
    if fd.enums and not fd.allow_other_values:
        ok = [
            e.encode("latin-1")
            for e in fd.enums
            if e and e.isascii() and check_format(t, e.encode(), char_is_string=char_is_string)
        ]
        if ok:
            if t.startswith("MULTIPLE"):
                items = draw(st.lists(st.sampled_from(ok), min_size=1, max_size=3))
                return b" ".join(items)
            chosen: bytes = draw(st.sampled_from(ok))
            return chosen
    choices: dict[str, list[bytes]] = {
        "INT": [b"1", b"0", b"-12", b"123456"],
        "LENGTH": [b"5", b"0"],
        "NUMINGROUP": [b"1", b"0"],
        "SEQNUM": [b"2", b"17", b"18446744073709551615"],  # 2**64 - 1: one more is refused
        "TAGNUM": [b"55"],
        "DAYOFMONTH": [b"1", b"31"],
        "FLOAT": [b"1.5", b"-2", b".25", b"7.", b"-0.5"],
        "PRICE": [b"6000.25", b"100", b"-1.5"],
        "QTY": [b"200.00", b"1"],
        "AMT": [b"10.5"],
        "PRICEOFFSET": [b"-0.25"],
        "PERCENTAGE": [b"0.5"],
        "CHAR": [b"A", b"1"],
        "BOOLEAN": [b"Y", b"N"],
        "UTCTIMESTAMP": [
            b"20240102-10:00:00",
            b"20240229-23:59:60.123",
            b"20240102-10:00:00.123456789",
            b"19991231-00:00:00.5",
        ],
        "TIME": [b"20240102-10:00:00", b"20240229-23:59:60"],  # FIX.4.0/4.1: a timestamp
        "UTCTIMEONLY": [b"10:00:00", b"23:59:59.999"],
        "UTCDATEONLY": [b"20240102"],
        "UTCDATE": [b"20240102"],
    }
    value: bytes = draw(st.sampled_from(choices.get(t, [b"abc", b"A B", b"x"])))
    assert check_format(t, value, char_is_string=char_is_string), (t, value)
    return value


def _fields(
    draw: Draw, defn: MessageDef | GroupDef, d: DataDictionary, skip: frozenset[int], depth: int
) -> Pairs:
    cis = d.spec.major == 4 and d.spec.minor < 2
    out: Pairs = []
    first = True
    for ref in defn.fields:
        if ref.tag in skip:
            continue
        lead = first and isinstance(defn, GroupDef)  # an entry starts with its delimiter
        first = False
        if not (ref.required or lead or draw(st.integers(0, 3)) == 0):
            continue
        fd = d.field(ref.tag)
        if fd is None:
            continue
        gdef = defn.groups.get(ref.tag)
        if gdef is None:
            out.append((ref.tag, _value(draw, fd, cis)))
            continue
        counts = [
            c for c in (0, 1, 2) if fd.allow_other_values or not fd.enums or str(c) in fd.enums
        ]
        n = draw(st.sampled_from(counts[: 1 if depth >= 3 else 3] or [1]))  # NoSides <552>: 1, 2
        out.append((ref.tag, b"%d" % n))
        for _ in range(n):
            out.extend(_fields(draw, gdef, d, frozenset(), depth + 1))
    return out


@st.composite
def messages(draw: Draw, setup: tuple[str, str | None]) -> tuple[Pairs, Pairs, bool]:
    sdd = dd(setup[0])
    app = dd(setup[1]) if setup[1] else None
    body_dd = app or sdd
    types = sorted(set(sdd.messages) | (set(app.messages) if app else set()))
    mt = draw(st.sampled_from(types))
    mdef = sdd.message(mt) if sdd.is_msg_type(mt) else body_dd.message(mt)
    assert mdef is not None
    head = frozenset({8, 9, 35})
    header = _fields(draw, sdd.header, sdd, head, 0)
    body = _fields(draw, mdef, sdd if sdd.is_msg_type(mt) else body_dd, head, 0)
    trailer = _fields(draw, sdd.trailer, sdd, frozenset({10}), 0)
    pairs: Pairs = [
        (8, sdd.begin_string.encode()),
        (9, b"100"),
        (35, mt.encode()),
        *header,
        *body,
        *trailer,
        (10, b"000"),
    ]
    base = list(pairs)
    damaged = draw(st.integers(0, 2)) > 0
    if damaged:
        for _ in range(draw(st.integers(1, 3))):
            _damage(draw, pairs, sdd, types)
    return base, pairs, damaged


def _damage(draw: Draw, pairs: Pairs, sdd: DataDictionary, types: list[str]) -> None:
    kind = draw(st.integers(0, 9))
    i = draw(st.integers(0, len(pairs) - 1))
    j = draw(st.integers(0, len(pairs)))
    tag, value = pairs[i]
    if kind == 0 and len(pairs) > 1:
        del pairs[i]
    elif kind == 1:
        pairs.insert(j, (tag, value))
    elif kind == 2:
        pairs.insert(j, pairs.pop(i))
    elif kind == 3:
        pairs[i] = (tag, b"")
    elif kind == 4:
        pairs[i] = (tag, draw(st.sampled_from(GARBAGE)))
    elif kind == 5:
        unknown = draw(st.sampled_from([9999, 5001, 20000, 0, -1, 44, 453, 448, 268, 10, 34]))
        pairs.insert(j, (unknown, draw(st.sampled_from([b"1", b"x", b"2"]))))
    elif kind == 6:
        pairs.insert(j, (draw(st.sampled_from(sorted(sdd.fields))), b"1"))
    elif kind == 7:
        pairs[0] = (8, draw(st.sampled_from([b"FIX.4.2", b"FIX.4.4", b"FIXT.1.1", b"FIX.4.0"])))
    elif kind == 8:
        mt = draw(st.sampled_from([*types, "*", "ZZ", ""]))
        pairs[2] = (35, mt.encode())
    elif value.isdigit():
        pairs[i] = (tag, b"%d" % (int(value) + draw(st.sampled_from([-1, 1]))))


OPTIONS = st.builds(
    ValidationOptions, st.booleans(), st.booleans(), st.booleans(), st.booleans(), st.booleans()
)


@pytest.mark.parametrize("setup", SETUPS, ids=lambda s: "+".join(filter(None, s)))
def test_fast_validate_equals_reference(setup: tuple[str, str | None]) -> None:
    sdd = dd(setup[0])
    app = dd(setup[1]) if setup[1] else None

    @settings(
        max_examples=150,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(case=messages(setup), options=OPTIONS, default=st.booleans())
    def check(case: tuple[Pairs, Pairs, bool], options: ValidationOptions, default: bool) -> None:
        base, pairs, damaged = case
        opts = DEFAULT_OPTIONS if default else options
        # The undamaged message first: its layout is then known, and a damaged message of the
        # same layout (a value emptied or changed, a count off by one) takes the value checks.
        assert validate(base, sdd, app, opts) == _validate_reference(base, sdd, app, opts)
        expected = _validate_reference(pairs, sdd, app, opts)
        assert validate(pairs, sdd, app, opts) == expected
        assert validate(pairs, sdd, app, opts) == expected  # and again, from the cached plan
        # A decoded message, its values checked in place once the layout is known.
        want = _validate_reference(base, sdd, app, opts)
        assert validate_message(FixMessage.from_pairs(base), sdd, app, opts) == want
        assert validate_message(FixMessage.from_pairs(pairs), sdd, app, opts) == expected
        standard = [t for t, _ in pairs[:3]] == [8, 9, 35]  # the layout the fast path takes
        if expected is None and opts == DEFAULT_OPTIONS and standard:
            plan = plan_for(sdd, app, pairs[2][1])
            assert plan is not None
            assert plan_accepts(plan, pairs, []), "the fast path gave up on a valid message"
        if not damaged:
            assert _validate_reference(pairs, sdd, app) is None, "generator built a bad message"

    check()


# ----------------------------------------------------------------------------- value checks


@settings(max_examples=500)
@given(st.one_of(st.binary(max_size=12), st.text("0123456789.-+e ", max_size=8).map(str.encode)))
def test_number_checks_equal_check_format(value: bytes) -> None:
    if not value:
        return  # the fast path never checks an empty value (it is an issue of its own)
    assert int_ok(value) == check_format("INT", value)
    assert float_ok(value) == check_format("PRICE", value)


@settings(max_examples=1000)
@given(
    st.one_of(
        st.binary(max_size=28),
        st.text("0123456789-:.", min_size=15, max_size=28).map(str.encode),
        st.datetimes().map(lambda t: t.strftime("%Y%m%d-%H:%M:%S.%f").encode()),
        st.from_regex(rb"\A[0-9]{8}-[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{0,10})?\Z", fullmatch=True),
    )
)
def test_timestamp_check_equals_parse(value: bytes) -> None:
    if not value:
        return
    expected = parse_utc_timestamp(value) is not None
    assert timestamp_ok(value) == expected
    assert timestamp_ok(value) == expected  # once more, from the memory of good values


def test_common_messages_take_the_fast_path() -> None:
    d = dd("FIX44")
    er = [
        (8, b"FIX.4.4"), (9, b"200"), (35, b"8"), (34, b"12"), (49, b"S"),
        (52, b"20240102-10:00:00.123"), (56, b"C"), (6, b"0"), (11, b"F1-17"), (14, b"0"),
        (17, b"E1"), (37, b"O1"), (38, b"1"), (39, b"0"), (40, b"2"), (44, b"6000.25"),
        (54, b"1"), (55, b"ESZ6"), (59, b"0"), (60, b"20240102-10:00:00.123"), (150, b"0"),
        (151, b"1"), (10, b"123"),
    ]  # fmt: skip
    md = [
        (8, b"FIX.4.4"), (9, b"200"), (35, b"X"), (34, b"12"), (49, b"S"),
        (52, b"20240102-10:00:00.123"), (56, b"C"), (268, b"2"),
        (279, b"0"), (269, b"0"), (55, b"ESZ6"), (270, b"6000.25"), (271, b"5"),
        (279, b"2"), (269, b"1"), (55, b"ESZ6"), (270, b"6000.5"), (271, b"0"),
        (10, b"000"),
    ]  # fmt: skip
    for pairs in (er, md):
        assert _validate_reference(pairs, d) is None
        plan = plan_for(d, None, pairs[2][1])
        assert plan is not None
        assert plan_accepts(plan, pairs, [])
        assert validate(pairs, d) is None


def test_known_layout_with_bad_values_gives_the_full_walks_issue() -> None:
    d = dd("FIX44")
    good = [
        (8, b"FIX.4.4"), (9, b"200"), (35, b"X"), (34, b"12"), (49, b"S"),
        (52, b"20240102-10:00:00.123"), (56, b"C"), (268, b"2"),
        (279, b"0"), (269, b"0"), (55, b"ESZ6"), (270, b"6000.25"), (271, b"5"),
        (279, b"2"), (269, b"1"), (55, b"ESZ6"), (270, b"6000.5"), (271, b"0"),
        (10, b"000"),
    ]  # fmt: skip
    assert validate(good, d) is None
    plan = d._derived[None][b"X"]  # the plan validate() built and keeps
    assert tuple(t for t, _ in good) in plan.shapes
    for i, bad in [
        (7, b"3"),
        (7, b"1"),
        (7, b"x"),
        (9, b"@"),
        (11, b"1.2.3"),
        (12, b""),
        (5, b"20241302-10:00:00"),
        (0, b"FIX.4.2"),
        (2, b"X"),
    ]:
        pairs = list(good)
        pairs[i] = (pairs[i][0], bad)
        assert validate(pairs, d) == _validate_reference(pairs, d)
        assert (validate(pairs, d) is None) == (i == 2)


def test_remembered_layouts_stay_within_their_tag_budget() -> None:
    # A day of market data: every X message with another number of entries is a new layout.
    # Kept: at most ~70,000 tags' checks (a few megabytes) per message type, not 256 layouts
    # of any length (399 entries here: 2,000 tags each).
    sdd = dd("FIX44")
    head = [
        (8, b"FIX.4.4"),
        (9, b"0"),
        (35, b"X"),
        (34, b"2"),
        (49, b"S"),
        (52, b"20261203-10:00:00.000"),
        (56, b"T"),
    ]
    plan = None
    for n in range(1, 400):
        entries: Pairs = []
        for i in range(n):
            entries += [
                (279, b"0"),
                (269, b"0"),
                (55, b"ES"),
                (270, b"%d" % (100 + i)),
                (271, b"1"),
            ]
        pairs = [*head, (268, b"%d" % n), *entries, (10, b"000")]
        assert validate(pairs, sdd) is None
        plan = sdd._derived[None][b"X"]  # the plan validate() made and keeps
        assert plan.tags_kept == sum(map(len, plan.shapes)) <= 70_000
    assert plan is not None
    assert plan.shapes  # still remembering the recent layouts
    assert max(map(len, plan.shapes)) == len(head) + 2 + 5 * 399
