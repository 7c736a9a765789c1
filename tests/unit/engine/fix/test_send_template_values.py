# SPDX-License-Identifier: MIT
"""``send_template`` with the wrong number of values, and with bodies past 256 bytes (issue 25).

The count of values is checked by the slot assignment itself (no separate test per send): a
wrong count must still raise the same ``ValueError`` and send nothing, whatever the order of
the template's fields. A body over 256 bytes goes to ``MessageTemplate.encode2`` (the CheckSum
of the short case is exact up to 256 bytes only): the same bytes as ``send``.
"""

from __future__ import annotations

import pytest

from engine.clock import TestClock
from engine.fix.message import OutMessage
from tests.factories import fix_pair

LAYOUTS: list[list[tuple[int, bytes | None]]] = [
    [(11, None), (38, None), (55, b"ESZ6")],  # in tag order
    [(55, None), (11, None), (38, b"5")],  # values reordered to the wire's order
]


@pytest.mark.parametrize("fields", LAYOUTS)
@pytest.mark.parametrize("count", [0, 1, 3, 4])
def test_a_wrong_count_of_values_raises_and_sends_nothing(
    fields: list[tuple[int, bytes | None]], count: int
) -> None:
    clock = TestClock()
    session, _theirs, out = fix_pair(None, clock)
    tmpl = session.template(b"D", fields)
    seq = session.next_sender_seq_num
    with pytest.raises(ValueError, match=f"^template takes 2 values, got {count}$"):
        session.send_template(tmpl, [b"v%d" % k for k in range(count)])
    assert not out
    assert session.next_sender_seq_num == seq
    assert session.send_template(tmpl, [b"a", b"b"]) == seq  # and it still sends
    assert len(out) == 1


@pytest.mark.parametrize("size", [1, 150, 200, 230, 260, 600, 5000])
def test_short_and_long_bodies_are_the_bytes_send_writes(size: int) -> None:
    clock = TestClock()
    session, _theirs, out = fix_pair(None, clock)
    tmpl = session.template(b"D", [(11, None), (58, None), (55, b"ESZ6")])
    text = b"t" * size
    now = clock.now_ns()
    seq = session.send_template(tmpl, [b"C1", text], now_ns=now)
    session.set_next_sender_seq_num(seq)
    assert session.send(OutMessage(b"D", [(11, b"C1"), (55, b"ESZ6"), (58, text)]), now_ns=now)
    assert out[0] == out[1]


@pytest.mark.parametrize("byte", [b"t", b"\xff"])
def test_bodies_around_the_short_checksums_limit_are_the_bytes_send_writes(byte: bytes) -> None:
    # The short case's CheckSum is Adler-32 started at the head's byte sum (AppTemplate
    # _starts): exact up to _short bytes of body whatever the bytes, the heaviest (0xFF)
    # included; longer bodies go to encode2. Every body length across that limit.
    clock = TestClock()
    session, _theirs, out = fix_pair(None, clock)
    tmpl = session.template(b"D", [(11, None), (58, None), (55, b"ESZ6")])
    # The longest body whose heaviest bytes keep the sum under Adler-32's modulus.
    short, starts = tmpl._short, tmpl._starts
    assert starts[short] + 255 * short < 65_521 <= starts[short + 1] + 255 * (short + 1)
    assert 240 <= short < 256
    lengths = set()
    for size in range(150, 230):
        text = byte * size
        now = clock.now_ns()
        seq = session.send_template(tmpl, (b"C1", text), now_ns=now)
        session.set_next_sender_seq_num(seq)
        assert session.send(OutMessage(b"D", [(11, b"C1"), (55, b"ESZ6"), (58, text)]), now_ns=now)
        assert out[-2] == out[-1], size
        lengths.add(int(out[-1].split(b"\x019=", 1)[1].split(b"\x01", 1)[0]))
    assert min(lengths) < tmpl._short < max(lengths)
