# SPDX-License-Identifier: MIT
"""``send_template`` formats a tuple of values with one concatenation; anything else as before.

The body's arguments are ``(seq, ts) + values`` when the values are a tuple (the usual call);
a list, another sequence, the wrong number of values or a value that is not bytes go to the
general formatting. Whatever the kind of sequence: the same bytes as ``send`` of the
template's message, the same ``ValueError`` for a wrong count (nothing sent, the sequence
number kept), the same ``TypeError`` for a value that is not bytes (#18).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.clock import TestClock
from tests.factories import fix_pair


class _Tuple(tuple[bytes, ...]):
    """A tuple subclass: concatenated as a tuple."""

    __slots__ = ()


def _as_array_like(values: list[bytes]) -> Sequence[bytes]:
    # A sequence that is neither a tuple nor a list.
    class Seq(Sequence[bytes]):
        def __init__(self, items: list[bytes]) -> None:
            self._items = items

        def __len__(self) -> int:
            return len(self._items)

        def __getitem__(self, i: int) -> bytes:  # type: ignore[override]
            return self._items[i]

    return Seq(values)


KINDS: dict[str, Callable[[list[bytes]], Sequence[bytes]]] = {
    "tuple": tuple,
    "list": list,
    "subclass": _Tuple,
    "sequence": _as_array_like,
}

_value = st.binary(min_size=1, max_size=40).filter(lambda b: b"\x01" not in b)
# Body tags (no header or trailer tags), each with a constant value or a slot (None).
_fields = st.lists(
    st.tuples(
        st.sampled_from([1, 11, 15, 37, 38, 40, 44, 54, 55, 58, 59, 60, 100, 207, 9999]),
        st.one_of(st.none(), _value),
    ),
    min_size=1,
    max_size=8,
    unique_by=lambda f: f[0],
)


@settings(max_examples=150, deadline=None)
@given(fields=_fields, data=st.data(), kind=st.sampled_from(sorted(KINDS)))
def test_every_kind_of_sequence_sends_the_bytes_send_writes(
    fields: list[tuple[int, bytes | None]], data: st.DataObject, kind: str
) -> None:
    clock = TestClock()
    session, _theirs, out = fix_pair(None, clock, validate=False)
    tmpl = session.template(b"D", fields)
    values = data.draw(st.lists(_value, min_size=tmpl.slots, max_size=tmpl.slots))
    now = clock.now_ns()
    seq = session.send_template(tmpl, KINDS[kind](values), now_ns=now)
    assert seq
    session.set_next_sender_seq_num(seq)
    assert session.send(tmpl.message(values), now_ns=now)
    assert len(out) == 2
    assert out[0] == out[1]


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize(
    "fields",
    [
        [(11, None), (38, None), (55, b"ESZ6")],  # in tag order
        [(55, None), (11, None), (38, b"5")],  # values reordered to the wire's order
    ],
)
@pytest.mark.parametrize("count", [0, 1, 3, 4])
def test_a_wrong_count_raises_the_same_error_whatever_the_sequence(
    kind: str, fields: list[tuple[int, bytes | None]], count: int
) -> None:
    clock = TestClock()
    session, _theirs, out = fix_pair(None, clock)
    tmpl = session.template(b"D", fields)
    seq = session.next_sender_seq_num
    with pytest.raises(ValueError, match=f"^template takes 2 values, got {count}$") as info:
        session.send_template(tmpl, KINDS[kind]([b"v%d" % k for k in range(count)]))
    # No other exception shown with it (raised ``from None`` or outside a handler, as before).
    assert info.value.__context__ is None or info.value.__suppress_context__
    assert not out
    assert session.next_sender_seq_num == seq
    assert session.send_template(tmpl, KINDS[kind]([b"a", b"b"])) == seq
    assert len(out) == 1


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_value_not_bytes_raises_the_formatting_type_error(kind: str) -> None:
    clock = TestClock()
    session, _theirs, out = fix_pair(None, clock)
    tmpl = session.template(b"D", [(11, None), (38, None), (55, b"ESZ6")])
    seq = session.next_sender_seq_num
    with pytest.raises(TypeError, match="bytes-like object"):
        session.send_template(tmpl, KINDS[kind]([b"a", "not bytes"]))  # type: ignore[list-item]
    assert not out
    assert session.next_sender_seq_num == seq
