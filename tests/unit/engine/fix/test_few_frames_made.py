# SPDX-License-Identifier: MIT
"""A transport's read of a few frames comes with its messages made; they are what the batch gives.

:meth:`FixDecoder.decode_message` (a receive time given) makes the messages of a read of a few
good frames with the batch, and ``messages`` hands them out on its first call. Covered, against
:meth:`FixDecoder.decode_batch` of a second decoder fed the same reads (which makes none): the
same messages whatever is asked first (``messages``, ``good_messages``, ``single_message``),
with the receive time of that first call; a second call makes its own messages with its own
receive time and leaves the first ones as they were (#18).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.fix.codec import DecodedBatch
from engine.fix.message import FixMessage
from tests.unit.engine.fix.test_few_frames import _decoder, _reads, _seen
from tests.unit.engine.fix.test_read_path import T0, _nos, _raw


def _first_call(batch: DecodedBatch, order: str, ts: int) -> list[FixMessage | None]:
    if order == "messages":
        return batch.messages(ts)
    if order == "good":
        return list(batch.good_messages(ts))
    # single_message first (takes the block), then messages (its own blocks)
    return [batch.single_message(ts), *batch.messages(ts)[1:]]


@settings(max_examples=200, deadline=None)
@given(
    reads=_reads(),
    layouts=st.booleans(),
    order=st.sampled_from(["messages", "good", "single"]),
    ts=st.integers(min_value=0, max_value=2**62),
)
def test_the_messages_made_with_the_batch_are_the_batch_paths(
    reads: list[bytes], layouts: bool, order: str, ts: int
) -> None:
    mine, s1 = _decoder(layouts)
    theirs, s2 = _decoder(layouts)
    try:
        for raw in reads:
            got = mine.decode_message(raw, ts)
            ref = theirs.decode_batch(raw)
            if isinstance(got, FixMessage):
                continue  # one message: test_decode_message's case
            assert got.rows == ref.rows
            if order == "single" and not (len(got) and not got.rows[0][4]):
                continue
            first = _first_call(got, order, ts)
            expected = _first_call(ref, order, ts)
            assert [_seen(m) for m in first] == [_seen(m) for m in expected]
            assert all(m is None or m.ts_recv == ts for m in first)
            seen = [_seen(m) for m in first]
            again = got.messages(ts + 1)
            assert [_seen(m) for m in again] == [_seen(m) for m in ref.messages(ts + 1)]
            assert all(m is None or m.ts_recv == ts + 1 for m in again)
            # (both lists alive: an id shared is the same object)
            assert not {id(m) for m in first if m} & {id(m) for m in again if m}
            assert [_seen(m) for m in first] == seen  # the first call's messages unchanged
    finally:
        s1.close()  # type: ignore[attr-defined]
        s2.close()  # type: ignore[attr-defined]


def test_a_read_of_a_few_good_frames_hands_out_the_messages_made_once() -> None:
    dec, s = _decoder(True)
    try:
        raw = b"".join(_raw(b"D", 2 + i, T0, _nos(b"c%d" % i)) for i in range(5))
        batch = dec.decode_message(raw, 7)
        assert isinstance(batch, DecodedBatch)
        made = batch._made
        assert made is not None
        assert len(made) == 5
        msgs = batch.messages(8)
        assert msgs is made  # the list made with the batch, handed out once
        assert batch._made is None
        assert [m.get(11) if m else None for m in msgs] == [b"c%d" % i for i in range(5)]
        assert [m.ts_recv for m in msgs if m is not None] == [8] * 5
        # decode_batch (no receive time) makes no messages with the batch
        other = dec.decode_batch(raw)
        assert other._made is None
        assert [m.get(11) if m else None for m in other.messages(1)] == [
            b"c%d" % i for i in range(5)
        ]
    finally:
        s.close()  # type: ignore[attr-defined]
