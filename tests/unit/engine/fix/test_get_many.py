# SPDX-License-Identifier: MIT
"""``FixMessage.get_many``: the values of several tags in one call, exactly what ``get`` says.

``get_many`` compiles a plan per layout (keyed by a block's tag codes or by the tag array's
bytes) and falls back to ``get`` per tag for long messages and beyond its caches' caps; every
way of making a message and every kind of tag must give ``tuple(get(t) for t in tags)``.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.fix import message as fix_message
from engine.fix.codec import FixDecoder, encode
from engine.fix.message import MESSAGES_PER_BLOCK, FixMessage
from tests.unit.engine.fix.test_message_blocks import _LOOKUPS, TS, _frame, _message, _wire, field

#: Tags to ask for: the ones the messages hold (small, large, odd) and some they never hold.
_ASK = st.lists(st.sampled_from([*_LOOKUPS, 8, 9, 10, 35, 34, 2**70, -(2**70)]), max_size=12)


def _expected(m: FixMessage, tags: tuple[int, ...]) -> tuple[bytes | None, ...]:
    return tuple(m.get(t) for t in tags)


def _ask_all(msgs: list[FixMessage], asks: list[tuple[int, ...]]) -> None:
    # Twice: the first message of a layout compiles its plan, the later ones run it.
    for _ in range(2):
        for m in msgs:
            for tags in asks:
                assert m.get_many(tags) == _expected(m, tags), (m, tags)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(field, max_size=30), min_size=1, max_size=12),
    st.sampled_from([0, 1, 7, 500]),
    st.booleans(),
    st.lists(_ASK, min_size=1, max_size=4),
)
def test_decoded_messages_answer_as_get_does(
    bodies: list[list[tuple[tuple[bytes, int], bytes]]],
    chunk: int,
    garble: bool,
    asks: list[list[int]],
) -> None:
    """Every way the decoder makes messages (many per read with tag codes, a few without,
    one block per message after a dropped frame): get_many is get per tag, for repeated,
    large, negative and absent tags, whatever order and repeats the tuple has."""
    n = 3 * MESSAGES_PER_BLOCK + 5 if chunk == 0 else len(bodies)
    frames = [_message(bodies[i % len(bodies)], i + 1) for i in range(n)]
    stream = b"".join(raw for raw, _ in frames)
    if garble:
        bad = frames[len(frames) // 2][0]
        stream += bad[:-4] + (b"000" if bad[-4:-1] != b"000" else b"001") + b"\x01"
        stream += frames[0][0]
    dec = FixDecoder()
    got: list[FixMessage] = []
    step = chunk or len(stream)
    for i in range(0, len(stream), step):
        got += dec.feed(stream[i : i + step])
    _ask_all(got, [tuple(a) for a in asks])
    for m, (_, read) in zip(got, frames, strict=False):
        for tags in asks:
            want = []
            for t in tags:
                values = [v for tag, v in read if tag == t]
                want.append(values[0] if values else None)
            assert m.get_many(tuple(tags)) == tuple(want)


_pair = st.tuples(
    st.one_of(st.integers(-3, 300), st.sampled_from([448, 9999, 2**40, -(2**40)])),
    st.binary(max_size=6).map(lambda v: v.replace(b"\x01", b"x")),
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(_pair, max_size=20), min_size=1, max_size=6),
    st.lists(
        st.lists(
            st.one_of(st.integers(-3, 300), st.sampled_from([448, 9999, 2**40, -(2**40)])),
            max_size=10,
        ),
        min_size=1,
        max_size=4,
    ),
    st.integers(0, 5),
)
def test_messages_from_pairs_and_arrays_answer_as_get_does(
    messages: list[list[tuple[int, bytes]]], asks: list[list[int]], skip: int
) -> None:
    """from_pairs (fields in any order, any int tags, empty values) and from_arrays (the
    message's fields in the middle of longer arrays): no tag codes, plans keyed by tags."""
    made: list[FixMessage] = []
    for pairs in messages:
        paired = FixMessage.from_pairs(pairs)
        made.append(paired)
        # The same fields at [skip, skip + n) of arrays with other entries around them.
        n = len(pairs)
        tags, starts, ends = array("q", [7] * skip), array("q", [0] * skip), array("q", [0] * skip)
        tags += array("q", paired.tags)
        pos = 0
        raw = paired.raw
        for _, value in pairs:
            pos = raw.index(b"=", pos) + 1
            starts.append(pos)
            ends.append(pos + len(value))
            pos += len(value) + 1
        tags += array("q", [11, 39])
        starts += array("q", [0, 0])
        ends += array("q", [1, 1])
        made.append(FixMessage.from_arrays(raw, tags, starts, ends, skip, skip + n))
        assert made[-1].pairs == paired.pairs
    _ask_all(made, [tuple(a) for a in asks])
    for m, pairs in zip(made[::2], messages, strict=True):
        for ask in asks:
            want = []
            for t in ask:
                values = [v for tag, v in pairs if tag == t]
                want.append(values[0] if values else None)
            assert m.get_many(tuple(ask)) == tuple(want)


def test_a_long_message_is_answered_tag_by_tag() -> None:
    """More fields than a plan is compiled for, with a DATA field holding SOH and ``39=``."""
    body: list[tuple[int, bytes]] = [(95, b"9"), (96, b"a\x0139=9\x01b")]
    body += [(1000 + i, b"v%d" % i) for i in range(100)]
    body += [(39, b"1"), (1000, b"dup")]
    raw = encode(b"FIX.4.4", b"B", [(34, b"2"), (49, b"A"), (52, TS), (56, b"B")], body,
                 sort_body=False)  # fmt: skip
    tags = (96, 39, 1000, 1099, 1100, 35, 58)
    for data in (raw * 40, raw):  # many per read (codes), one (no codes)
        for m in FixDecoder().feed(data):
            assert len(m) > fix_message._PLAN_FIELDS
            assert m.get_many(tags) == (b"a\x0139=9\x01b", b"1", b"v0", b"v99", None, b"B", None)


@pytest.fixture
def no_plans() -> Iterator[None]:
    """Start with no plans kept (earlier tests may have filled the cache up to its caps), and
    leave none (the tests here fill it)."""
    fix_message._PLANS.clear()
    fix_message._plan_count = 0
    yield
    fix_message._PLANS.clear()
    fix_message._plan_count = 0


@pytest.mark.usefixtures("no_plans")
def test_layouts_beyond_the_cap_are_still_answered() -> None:
    """More layouts of one tuple of tags than get keeps plans for: the later ones answer by
    get per tag, and the earlier ones keep their plans."""
    tags = (11, 58, 39)
    frames = []
    for i in range(fix_message._PLAN_LAYOUTS + 10):
        # Layout i: i fields of tag 448 (a repeating group), then ClOrdID and OrdStatus.
        fields = [(b"35", b"8"), (b"34", b"%d" % (i + 1)), (b"49", b"EX"), (b"52", TS)]
        fields += [(b"56", b"CL")] + [(b"448", b"P%d" % j) for j in range(i)]
        fields += [(b"11", b"C%d" % i), (b"39", b"%d" % (i % 3))]
        frames.append(_frame(_wire(fields)))
    msgs = FixDecoder().feed(b"".join(frames) * 2)
    assert msgs[0]._b.codes is not None
    for m in msgs:
        i = int(m.get(34) or b"0") - 1
        assert m.get_many(tags) == (b"C%d" % i, None, b"%d" % (i % 3))
    plans = fix_message._PLANS[tags]
    assert len(plans.by_codes) == fix_message._PLAN_LAYOUTS


def test_the_same_layout_with_and_without_codes() -> None:
    """One tuple asked of messages of one layout decoded with tag codes and without."""
    raw, _ = _message([((b"11", 11), b"c1"), ((b"448", 448), b"P"), ((b"39", 39), b"2")], 1)
    many = FixDecoder().feed(raw * 40)
    (one,) = FixDecoder().feed(raw)
    assert many[0]._b.codes is not None
    assert one._b.codes is None
    tags = (39, 448, 11, 60)
    for m in [*many, one, *many, one]:
        assert m.get_many(tags) == (b"2", b"P", b"c1", None)


def test_nothing_and_repeats() -> None:
    m = FixMessage.from_pairs([(35, b"D"), (11, b"a"), (11, b"b")])
    assert m.get_many(()) == ()
    assert m.get_many((11, 11, 35, 11)) == (b"a", b"a", b"D", b"a")
    empty = FixMessage.from_pairs([])
    assert empty.get_many((8, 35)) == (None, None)


def test_bad_tags_are_refused_clearly() -> None:
    m = FixMessage.from_pairs([(35, b"D"), (11, b"a")])
    with pytest.raises(TypeError, match="get_many takes a tuple of tags, not list"):
        m.get_many([11, 35])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="get_many: tag '11' is not an integer"):
        m.get_many(("11",))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"get_many: tag 1\.5 is not an integer"):
        m.get_many((35, 1.5))  # type: ignore[arg-type]
    assert m.get_many((35, 11)) == (b"D", b"a")


@pytest.mark.usefixtures("no_plans")
def test_beyond_the_total_cap_every_tuple_is_still_answered() -> None:
    """Once the cache holds its most plans, new tuples and layouts are answered by get per
    tag and the cache stops growing."""
    msgs = FixDecoder().feed(
        b"".join(
            _message([((b"11", 11), b"c%d" % i), ((b"39", 39), b"0")], i)[0] for i in range(40)
        )
    )
    total = fix_message._PLAN_TOTAL
    for n in range(total + 50):
        tags = (11, 39, 1000 + n)  # a new tuple each time: a new plan until the cap
        for m in msgs[:2]:
            assert m.get_many(tags) == (m.get(11), b"0", None)
    assert fix_message._plan_count == total
    assert len(fix_message._PLANS) == total
    for m in msgs:
        assert m.get_many((39, 11, 5000)) == (b"0", m.get(11), None)
        assert m.get_many((11, 39, 1000)) == (m.get(11), b"0", None)  # kept from before
    assert fix_message._plan_count == total
