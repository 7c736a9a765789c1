# SPDX-License-Identifier: MIT
"""The send path's shortcuts give what the general code gives (issue 18).

``MessageTemplate.encode2`` (its CheckSum from kept byte sums, the message in one join) and the
body format of ``MessageTemplate.pieces`` (constants holding ``%``) against the generic
:func:`~engine.fix.codec.encode`, across the 256-byte bound where it falls back;
``send_template``'s SendingTime test (a range, not a division) against ``format_timestamp`` of
the clock, with the clock going back and forth; ``send_template`` against ``send``.
"""

from __future__ import annotations

import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.clock import TestClock
from engine.fix.codec import FixDecoder, MessageTemplate, decode_one, encode, format_timestamp
from engine.fix.message import OutMessage
from tests.factories import fix_pair

S = 1_000_000_000
T0 = 1_700_000_000 * S

_values = st.binary(min_size=1, max_size=120).map(
    lambda b: b.replace(b"\x01", b"x").replace(b"=", b"y") or b"z"
)


@settings(max_examples=300, deadline=None)
@given(
    begin=st.sampled_from([b"FIX.4.2", b"FIX.4.4", b"FIXT.1.1"]),
    msg_type=st.sampled_from([b"D", b"8", b"AE"]),
    constants=st.lists(
        st.tuples(
            st.integers(1, 9999),
            st.one_of(_values, st.sampled_from([b"%", b"%d", b"%%b", b"5% off", b"%s%b"])),
        ),
        max_size=6,
    ),
    slot_tags=st.lists(st.integers(1, 9999), max_size=6),
    data=st.data(),
)
def test_encode2_equals_the_generic_encoder(
    begin: bytes,
    msg_type: bytes,
    constants: list[tuple[int, bytes]],
    slot_tags: list[int],
    data: st.DataObject,
) -> None:
    # Header slots 34 and 52 as a session template has them, then the body in any mix of
    # constants and slots; bodies from a few bytes to well past 256 (the fallback).
    body: list[tuple[int, bytes | None]] = [*constants, *((t, None) for t in slot_tags)]
    body = data.draw(st.permutations(body))
    fields: list[tuple[int, bytes | None]] = [(34, None), (49, b"S"), (52, None), (56, b"T")]
    fields.extend(body)
    tmpl = MessageTemplate(begin, msg_type, fields)
    seq = b"%d" % data.draw(st.integers(1, 10**12))
    ts = format_timestamp(T0 + data.draw(st.integers(0, 10**15)), 3)
    rest = [data.draw(_values) for _ in slot_tags]
    it = iter([seq, ts, *rest])
    filled = [(t, next(it) if v is None else v) for t, v in fields]
    ref = encode(begin, msg_type, filled[:4], filled[4:], sort_body=False)
    got = tmpl.encode2(seq, ts, rest)
    assert got == ref
    assert got == tmpl.encode([seq, ts, *rest])
    assert decode_one(got) is not None
    # What send_template() builds a short message from.
    body_format, heads, sums, trailers = tmpl.pieces()
    short = body_format % (int(seq), ts, *rest)
    n = len(short)
    if n <= 256:
        assert heads[n] + short + trailers[(sums[n] + zlib.adler32(short)) & 255] == ref
    else:
        assert ref.endswith(short + ref[-7:])


class _WallClock(TestClock):
    """A wall clock that may be stepped back (as a live one is, by NTP)."""

    __slots__ = ()

    def jump(self, now_ns: int) -> None:
        self._now_ns = now_ns


@settings(max_examples=60, deadline=None)
@given(
    precision=st.sampled_from([0, 3, 6, 9]),
    steps=st.lists(
        st.one_of(
            st.integers(-2 * S, 2 * S),
            st.sampled_from([0, 1, -1, 999, 1_000, 999_999, 1_000_000, S - 1, S, -S]),
        ),
        min_size=1,
        max_size=30,
    ),
    outside=st.booleans(),
)
def test_send_template_stamps_the_time_of_each_send(
    precision: int, steps: list[int], outside: bool
) -> None:
    # Each send's SendingTime is format_timestamp of its own time, the clock going back and
    # forth across the precision's units; and the bytes are the ones send() writes.
    clock = _WallClock(T0 + 123_456_789)
    s, theirs, out = fix_pair(None, clock, precision=precision)
    ref, ref_theirs, ref_out = fix_pair(None, clock, precision=precision)
    theirs.close()
    ref_theirs.close()
    try:
        fields: list[tuple[int, bytes | None]] = [(11, None), (55, b"AAPL"), (54, b"1")]
        tmpl = s.template(b"D", fields)
        now = clock.now_ns()
        for k, step in enumerate(steps):
            now += step
            clordid = b"c%d" % k
            if outside:
                assert s.send_template(tmpl, (clordid,), now_ns=now)
            else:
                clock.jump(now)
                assert s.send_template(tmpl, (clordid,))
            ref.send(OutMessage(b"D", [(11, clordid), (55, b"AAPL"), (54, b"1")]), now_ns=now)
            sent = dict(FixDecoder().feed(out[-1])[0].pairs)
            assert sent[52] == format_timestamp(now, precision)
        assert out == ref_out
    finally:
        s.close()
        ref.close()
