# SPDX-License-Identifier: MIT
"""Decoded messages as positions in shared blocks: lookups, validity, what a kept one keeps.

The decoder makes its messages three ways (many frames of one read: columns from numpy and tag
codes for ``get``; a few frames: from the row lists, no codes; a read with a dropped frame: one
block per message). Each way must answer every lookup as the message's own fields say, and a
message must stay what it was whatever the decoder decodes next.
"""

from __future__ import annotations

import gc
import random
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.fix.codec import FixDecoder, checksum, encode
from engine.fix.message import MESSAGES_PER_BLOCK, Block, FixMessage

TS = b"20240102-03:04:05.678"


def _frame(body: bytes) -> bytes:
    """Wrap ``body`` (fields after 9, each with its SOH) with 8, 9 and 10."""
    head = b"8=FIX.4.4\x019=%d\x01" % len(body)
    return head + body + b"10=%03d\x01" % checksum(head + body)


def _wire(fields: list[tuple[bytes, bytes]]) -> bytes:
    return b"".join(t + b"=" + v + b"\x01" for t, v in fields)


#: Tags as written on the wire, with the number the decoder reads: small and large, repeated,
#: a leading zero and a minus sign (read as -39: no lookup of 39 finds it).
_TAGS = [
    (b"11", 11), (b"39", 39), (b"55", 55), (b"150", 150), (b"254", 254), (b"255", 255),
    (b"256", 256), (b"448", 448), (b"9999", 9999), (b"039", 39), (b"-39", -39),
    (b"0", 0), (b"123456789", 123456789),
]  # fmt: skip
_LOOKUPS = [0, 11, 39, 55, 150, 254, 255, 256, 448, 9999, 123456789, 58, 300, -39]

field = st.tuples(st.sampled_from(_TAGS), st.binary(min_size=1, max_size=12).map(
    lambda v: v.replace(b"\x01", b"x") or b"x"
))  # fmt: skip


def _message(
    fields: list[tuple[tuple[bytes, int], bytes]], seq: int
) -> tuple[bytes, list[tuple[int, bytes]]]:
    """Return a frame and its fields as the decoder should read them (tag number, value)."""
    wire = [(b"35", b"8"), (b"34", b"%d" % seq), (b"49", b"EX"), (b"52", TS), (b"56", b"CL")]
    wire += [(t, v) for (t, _), v in fields]
    raw = _frame(_wire(wire))
    read = [(8, b"FIX.4.4"), (9, raw.split(b"\x01")[1][2:])]
    read += [(int(t), v) for t, v in wire[:5]] + [(n, v) for (_, n), v in fields]
    read.append((10, raw[-4:-1]))
    return raw, read


def _check(m: FixMessage, raw: bytes, read: list[tuple[int, bytes]]) -> None:
    assert m.raw == raw
    assert m.pairs == read
    assert list(m) == read
    assert m.tags == [t for t, _ in read]
    assert len(m) == len(read)
    for tag in _LOOKUPS:
        values = [v for t, v in read if t == tag]
        assert m.get(tag) == (values[0] if values else None), tag
        assert m.get(tag, b"?") == (values[0] if values else b"?")
        assert (tag in m) == bool(values)
        assert m.get_all(tag) == values


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(field, max_size=30), min_size=1, max_size=12),
    st.sampled_from([0, 1, 7, 500]),
    st.booleans(),
)
def test_every_lookup_answers_what_the_message_says(
    bodies: list[list[tuple[tuple[bytes, int], bytes]]], chunk: int, garble: bool
) -> None:
    """Each way of making messages (many per read, a few, a read with a dropped frame) gives
    every message its own fields: first occurrences, repeats, large and odd tags."""
    n = 3 * MESSAGES_PER_BLOCK + 5 if chunk == 0 else len(bodies)  # one read: many frames
    frames = [_message(bodies[i % len(bodies)], i + 1) for i in range(n)]
    stream = b"".join(raw for raw, _ in frames)
    if garble:  # a bad checksum in the middle: that read goes the slow way
        bad = frames[len(frames) // 2][0]
        stream += bad[:-4] + (b"000" if bad[-4:-1] != b"000" else b"001") + b"\x01"
        stream += frames[0][0]
        frames.append(frames[0])
    dec = FixDecoder()
    got: list[FixMessage] = []
    step = chunk or len(stream)
    for i in range(0, len(stream), step):
        got += dec.feed(stream[i : i + step], ts_recv=5)
    assert len(got) == len(frames)
    for m, (raw, read) in zip(got, frames, strict=True):
        _check(m, raw, read)
        assert m.ts_recv == 5
        assert m.checked == 0


@pytest.mark.parametrize("count", [1, 5, 40, 300])
def test_kept_messages_stay_valid_after_the_decoder_moves_on(count: int) -> None:
    """Messages kept from one read are unchanged after the decoder decodes others of the same
    sizes into the same buffers (and after the read's batch is gone)."""
    first = [_message([((b"11", 11), b"A%04d" % i), ((b"39", 39), b"0")], i) for i in range(count)]
    other = [_message([((b"11", 11), b"B%04d" % i), ((b"39", 39), b"2")], i) for i in range(count)]
    dec = FixDecoder()
    kept = dec.feed(b"".join(raw for raw, _ in first))
    batch = dec.decode_batch(b"".join(raw for raw, _ in other))
    again = batch.messages()
    del batch
    dec.feed(b"".join(raw for raw, _ in other) * 2)
    gc.collect()
    for m, (raw, read) in zip(kept, first, strict=True):
        _check(m, raw, read)
    assert [m.get(11) for m in again if m is not None] == [b"B%04d" % i for i in range(count)]


def test_a_kept_message_keeps_only_its_block() -> None:
    """A message holds its block of at most MESSAGES_PER_BLOCK messages, not the whole read."""
    frames = [_message([((b"11", 11), b"x" * 100)], i) for i in range(1000)]
    stream = b"".join(raw for raw, _ in frames)
    msgs = FixDecoder().feed(stream)
    kept = msgs[500]
    del msgs
    gc.collect()
    (block,) = gc.get_referents(kept)[:1]
    assert isinstance(block, Block)
    j = 500 - 500 % MESSAGES_PER_BLOCK
    mine = frames[j : j + MESSAGES_PER_BLOCK]
    assert block.buf == b"".join(raw for raw, _ in mine)
    assert len(block.tags) == sum(len(read) for _, read in mine)
    _check(kept, *frames[500])


def test_messages_are_immutable() -> None:
    raw, read = _message([((b"11", 11), b"c1")], 1)
    (m,) = FixDecoder().feed(raw)
    for name in ("ts_recv", "checked", "raw", "tags", "pairs"):
        with pytest.raises(AttributeError):
            setattr(m, name, 1)
    with pytest.raises(AttributeError):
        m.other = 1  # type: ignore[attr-defined]
    _check(m, raw, read)


def test_from_arrays_and_from_pairs_answer_like_decoded_ones() -> None:
    raw, read = _message([((b"448", 448), b"P1"), ((b"448", 448), b"P2"), ((b"11", 11), b"c")], 3)
    (decoded,) = FixDecoder().feed(raw)
    pos = 0
    tags, ends = array("q"), array("q")
    starts = array("q")
    for t, _ in read:
        eq = raw.index(b"=", pos)
        soh = raw.index(b"\x01", eq)
        tags.append(t)
        starts.append(eq + 1)
        ends.append(soh)
        pos = soh + 1
    made = FixMessage.from_arrays(raw, tags, starts, ends, 0, len(tags), ts_recv=9, checked=3)
    _check(made, raw, read)
    assert (made.ts_recv, made.checked) == (9, 3)
    _check(decoded, raw, read)
    paired = FixMessage.from_pairs(read)
    assert paired.pairs == read
    assert paired.raw == raw
    assert paired.get(448) == b"P1"
    empty = FixMessage.from_pairs([])
    assert (empty.raw, empty.pairs, len(empty), empty.get(8)) == (b"", [], 0, None)


def test_a_long_message_and_raw_data_are_looked_up_right() -> None:
    """More fields than a scan is used for (the index answers then), and a DATA field whose
    value holds SOH and ``39=``: the codes and the scan see fields, not bytes."""
    rng = random.Random(3)
    body: list[tuple[int, bytes]] = [(95, b"9"), (96, b"a\x0139=9\x01b")]
    body += [(1000 + i, b"%d" % rng.randint(0, 99)) for i in range(200)]
    body += [(39, b"1"), (1000, b"dup")]
    raw = encode(b"FIX.4.4", b"B", [(34, b"2"), (49, b"A"), (52, TS), (56, b"B")], body,
                 sort_body=False)  # fmt: skip
    for data in (raw * 40, raw):  # many per read (codes), one (no codes)
        for m in FixDecoder().feed(data):
            assert m.get(96) == b"a\x0139=9\x01b"
            assert m.get(39) == b"1"
            assert m.get(1000) == body[2][1]
            assert m.get_all(1000) == [body[2][1], b"dup"]
            assert m.get(1199) == body[201][1]
            assert m.get(1200) is None
            assert 1199 in m
            assert 1200 not in m
