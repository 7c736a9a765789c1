# SPDX-License-Identifier: MIT
"""A transport's read of a few good frames comes as their messages alone; they are what the
batch gives.

:meth:`FixDecoder.decode_message` (a receive time given) returns the list of the messages of a
read of 2 to ``MESSAGES_PER_BLOCK`` good frames, back to back, and their rows as ``heads``;
no :class:`DecodedBatch` is made. Covered, against :meth:`FixDecoder.decode_batch` of a second
decoder fed the same reads: the same messages with the read's receive time, sharing one block;
they stay valid while the decoder goes on; a read of more frames than a block holds, or with a
garbled frame, still comes as the batch (#18).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.fix.codec import DecodedBatch
from engine.fix.message import MESSAGES_PER_BLOCK, FixMessage
from tests.unit.engine.fix.test_few_frames import _decoder, _reads, _seen
from tests.unit.engine.fix.test_read_path import T0, _nos, _raw


@settings(max_examples=200, deadline=None)
@given(reads=_reads(), layouts=st.booleans(), ts=st.integers(min_value=0, max_value=2**62))
def test_the_messages_of_a_few_frames_are_the_batch_paths(
    reads: list[bytes], layouts: bool, ts: int
) -> None:
    mine, s1 = _decoder(layouts)
    theirs, s2 = _decoder(layouts)
    try:
        kept: list[tuple[FixMessage, tuple[object, ...]]] = []
        for raw in reads:
            got = mine.decode_message(raw, ts)
            ref = theirs.decode_batch(raw)
            if not isinstance(got, list):
                continue  # one message or a batch: test_decode_message's cases
            assert mine.heads == ref.rows
            expected = ref.messages(ts)
            assert [_seen(m) for m in got] == [_seen(m) for m in expected]
            assert {id(m._b) for m in got} == {id(got[0]._b)}  # one block
            assert all(m.ts_recv == ts for m in got)
            kept += [(m, _seen(m)) for m in got]
        # Every message handed out is unchanged by the reads decoded after it.
        assert [_seen(m) for m, _ in kept] == [seen for _, seen in kept]
    finally:
        s1.close()  # type: ignore[attr-defined]
        s2.close()  # type: ignore[attr-defined]


def test_a_read_of_a_few_good_frames_comes_as_their_messages() -> None:
    dec, s = _decoder(True)
    try:
        raw = b"".join(_raw(b"D", 2 + i, T0, _nos(b"c%d" % i)) for i in range(5))
        got = dec.decode_message(raw, 7)
        assert isinstance(got, list)
        assert [m.get(11) for m in got] == [b"c%d" % i for i in range(5)]
        assert [m.ts_recv for m in got] == [7] * 5
        assert [row[6] for row in dec.heads] == [2, 3, 4, 5, 6]  # MsgSeqNum, read by the kernel
        assert s.layouts is not None  # type: ignore[attr-defined]
        assert all(m.checked == s.layouts.valid for m in got)  # type: ignore[attr-defined]
        # decode_batch (no receive time) still makes the batch
        other = dec.decode_batch(raw)
        assert isinstance(other, DecodedBatch)
        assert [m.get(11) if m else None for m in other.messages(1)] == [
            b"c%d" % i for i in range(5)
        ]
    finally:
        s.close()  # type: ignore[attr-defined]


def test_more_frames_than_a_block_or_a_garbled_one_come_as_the_batch() -> None:
    dec, s = _decoder(True)
    try:
        many = b"".join(
            _raw(b"D", 2 + i, T0, _nos(b"m%d" % i)) for i in range(MESSAGES_PER_BLOCK + 1)
        )
        got = dec.decode_message(many, 7)
        assert isinstance(got, DecodedBatch)
        assert len(got.messages(7)) == MESSAGES_PER_BLOCK + 1
        good = _raw(b"D", 40, T0, _nos(b"g"))
        bad = bytearray(_raw(b"D", 41, T0, _nos(b"b")))
        bad[-3] = ord("0") if bad[-3] != ord("0") else ord("1")  # a wrong CheckSum
        got = dec.decode_message(good + bytes(bad), 8)
        assert isinstance(got, DecodedBatch)
        msgs = got.messages(8)
        assert msgs[0] is not None
        assert msgs[0].get(11) == b"g"
        assert msgs[1] is None
    finally:
        s.close()  # type: ignore[attr-defined]
