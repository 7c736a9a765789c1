# SPDX-License-Identifier: MIT
"""A read of a few frames (2-32) gives what the general code gives (#18).

Covered: the batch :meth:`FixDecoder.decode_batch` makes for a read whose frames are all good
(rows and layout marks read from memoryviews of its tables, the block of its messages made
with the batch) against the batch the general constructor makes of the same tables, with and
without layouts, across reads that leave a tail for the next one, garbled frames included;
``messages``, ``good_messages`` and ``single_message`` in either order, called twice.
"""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.clock import TestClock
from engine.fix.codec import DecodedBatch, FixDecoder, decode_one
from engine.fix.message import MESSAGES_PER_BLOCK, FixMessage
from engine.fix.validation.plans import layout_program
from engine.fix.validation.validator import validate_message
from tests.unit.engine.fix.test_read_path import T0, Venue, _nos, _raw, _session

#: Tags a message is asked for (present, absent, repeated in the header, beyond 255).
_ASKED = (8, 11, 34, 35, 44, 52, 55, 58, 60, 10, 1000)


def _seen(m: FixMessage | None) -> tuple[object, ...] | None:
    # Everything a message answers (not how its block is laid out: blocks differ by path).
    if m is None:
        return None
    return (
        m.raw,
        m.pairs,
        m.tags,
        m.checked,
        m.ts_recv,
        len(m),
        tuple(m.get(t) for t in _ASKED),
        tuple(t in m for t in _ASKED),
    )


@st.composite
def _reads(draw: st.DrawFn) -> list[bytes]:
    # Up to 20 frames (more than a block's MESSAGES_PER_BLOCK), cut into reads anywhere, some
    # garbled; every read brings at least one byte.
    n = draw(st.integers(min_value=1, max_value=20))
    out = b""
    for i in range(n):
        clordid = draw(st.binary(min_size=1, max_size=12).filter(lambda b: b"\x01" not in b))
        if draw(st.integers(min_value=0, max_value=9)) == 0:  # another layout
            out += _raw(b"D", 2 + i, T0, [*_nos(clordid), (58, b"text")])
        else:
            out += _raw(b"D", 2 + i, T0, _nos(clordid))
    if draw(st.integers(min_value=0, max_value=4)) == 0:
        at = draw(st.integers(min_value=0, max_value=len(out) - 1))
        out = out[:at] + b"\x7f" + out[at + 1 :]
    cuts = sorted(set(draw(st.lists(st.integers(min_value=1, max_value=len(out) - 1), max_size=3))))
    bounds = [0, *cuts, len(out)]
    return [out[a:b] for a, b in itertools.pairwise(bounds)]


def _reference(dec: FixDecoder, batch: DecodedBatch) -> DecodedBatch:
    # The general batch of the same tables (rows made by numpy, messages by the general code).
    return DecodedBatch(
        batch.buf,
        dec._msgs,
        dec._fields,
        None,
        batch.checked,
        frames=len(batch),
        nfields=batch.fields.shape[1],
        views=dec._views,
    )


def _decoder(layouts: bool) -> tuple[FixDecoder, object]:
    s, _ = _session(TestClock(T0), Venue(), dictionary=layouts)
    dec = FixDecoder()
    dec.layouts = s.layouts
    dec.expect_header(*s.expected_header())
    if layouts:  # a layout kept: the framing kernel marks the frames
        msg = decode_one(_raw(b"D", 2, T0, _nos(b"x")))
        assert msg is not None
        assert s.layouts is not None
        assert s._session_dd is not None
        assert validate_message(msg, s._session_dd, None, s._validation) is None
        s.layouts.add(msg.tags, b"D", layout_program(msg, s._session_dd, None))
    return dec, s


@settings(max_examples=200, deadline=None)
@given(reads=_reads(), layouts=st.booleans(), order=st.sampled_from(["all", "good", "single"]))
def test_a_few_frames_read_equals_the_general_batch(
    reads: list[bytes], layouts: bool, order: str
) -> None:
    dec, s = _decoder(layouts)
    try:
        for raw in reads:
            batch = dec.decode_batch(raw)
            ref = _reference(dec, batch)
            assert batch.rows == ref.rows
            assert np.array_equal(batch.msgs, ref.msgs)
            assert [list(a) for a in batch.field_lists()] == [list(a) for a in ref.field_lists()]
            if batch.checked is not None:
                marks = dec._checked[: len(batch)].tolist()
                assert batch.checked == marks
            if order == "single" and len(batch) and not batch.rows[0][4]:
                assert _seen(batch.single_message(3)) == _seen(ref.single_message(3))
            if order == "good":
                mine: list[FixMessage | None] = list(batch.good_messages(5))
                theirs: list[FixMessage | None] = list(ref.good_messages(5))
            else:
                mine = batch.messages(5)
                theirs = ref.messages(5)
            assert [_seen(m) for m in mine] == [_seen(m) for m in theirs]
            # A second call makes its own messages, with its own receive time.
            again = batch.messages(9)
            assert [_seen(m) for m in again] == [_seen(m) for m in ref.messages(9)]
            assert all(m is None or m.ts_recv == 5 for m in mine)
    finally:
        s.close()  # type: ignore[attr-defined]


def test_a_read_of_a_few_good_frames_makes_one_block_for_its_messages() -> None:
    dec, s = _decoder(True)
    try:
        for n in (2, 3, MESSAGES_PER_BLOCK, MESSAGES_PER_BLOCK + 1, 32):
            raw = b"".join(_raw(b"D", 2 + i, T0, _nos(b"c%d" % i)) for i in range(n))
            batch = dec.decode_batch(raw)
            assert len(batch) == n
            msgs = batch.messages(11)
            assert [m.get(11) if m else None for m in msgs] == [b"c%d" % i for i in range(n)]
            blocks = {id(m._b) for m in msgs if m is not None}
            assert len(blocks) == -(-n // MESSAGES_PER_BLOCK)
            first = msgs[0]
            assert first is not None
            if n <= MESSAGES_PER_BLOCK:
                # The decoder's block: the read's bytes and the batch's field arrays as they are.
                assert first._b.buf is raw
                assert first._b.tags is batch.field_lists()[0]
            assert s.layouts is not None  # type: ignore[attr-defined]
            valid = s.layouts.valid  # type: ignore[attr-defined]
            assert [m.checked for m in msgs if m is not None] == [valid] * n
    finally:
        s.close()  # type: ignore[attr-defined]


def test_a_few_frames_read_with_a_garbled_one_reports_it_and_keeps_the_others() -> None:
    dropped: list[str] = []
    dec = FixDecoder(on_garbled=lambda f: dropped.append(f.reason))
    frames = [_raw(b"D", 2 + i, T0, _nos(b"c%d" % i)) for i in range(4)]
    bad = frames[2][:-2] + b"9\x01"  # a wrong CheckSum
    batch = dec.decode_batch(b"".join([frames[0], frames[1], bad, frames[3]]))
    assert dropped == ["CheckSum does not match"]
    msgs = batch.messages()
    assert [m.get(11) if m else None for m in msgs] == [b"c0", b"c1", None, b"c3"]
    assert [m.get(11) for m in dec.decode_batch(frames[0] + frames[1]).good_messages()] == [
        b"c0",
        b"c1",
    ]
