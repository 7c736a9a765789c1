# SPDX-License-Identifier: MIT
"""Codec: decoder framing and verification, encoder field order, timestamps, fuzzing."""

from __future__ import annotations

import random

import pytest
import simplefix
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.fix.codec import (
    FixDecoder,
    MessageTemplate,
    checksum,
    decode_one,
    encode,
    format_timestamp,
    parse_timestamp,
)
from engine.fix.message import FixMessage, Group, OutMessage


def _sf(*pairs: tuple[int, str]) -> bytes:
    m = simplefix.FixMessage()
    for tag, value in pairs:
        m.append_pair(tag, value)
    return bytes(m.encode())


ER = _sf(
    (8, "FIX.4.4"),
    (35, "8"),
    (34, "7"),
    (49, "EX"),
    (52, "20240101-12:00:00.123"),
    (56, "CL"),
    (6, "101.5"),
    (11, "ord-1"),
    (14, "100"),
    (17, "exec-1"),
    (31, "101.5"),
    (32, "100"),
    (37, "o-1"),
    (38, "100"),
    (39, "2"),
    (40, "2"),
    (44, "101.5"),
    (54, "1"),
    (55, "AAPL"),
    (59, "0"),
    (60, "20240101-12:00:00.123"),
    (150, "F"),
    (151, "0"),
)


def test_decoder_with_simplefix_message_gives_same_fields() -> None:
    parser = simplefix.FixParser()
    parser.append_buffer(ER)
    ref = parser.get_message()
    msg = decode_one(ER)
    assert msg is not None
    assert [(t, v) for t, v in msg.pairs] == [(int(t), v) for t, v in ref.pairs]
    assert msg.msg_type == b"8"
    assert msg.seq_num == 7
    assert msg.get(55) == b"AAPL"
    assert msg.raw == ER


def test_decoder_fed_byte_by_byte_returns_each_message_once() -> None:
    dec = FixDecoder()
    got: list[FixMessage] = []
    for b in ER * 3:
        got.extend(dec.feed(bytes([b])))
    assert [m.raw for m in got] == [ER] * 3
    assert dec.pending == 0
    assert dec.garbled == 0


def test_decoder_with_bad_checksum_drops_counts_and_keeps_going() -> None:
    seen: list[str] = []
    dec = FixDecoder(on_garbled=lambda f: seen.append(f.reason))
    bad = ER[:-4] + b"000\x01" if not ER.endswith(b"=000\x01") else ER[:-4] + b"001\x01"
    msgs = dec.feed(bad + ER)
    assert [m.raw for m in msgs] == [ER]
    assert dec.garbled == 1
    assert seen == ["CheckSum does not match"]


def test_decoder_with_wrong_body_length_drops_message() -> None:
    bad = ER.replace(b"\x019=", b"\x019=1", 1)
    dec = FixDecoder()
    assert dec.feed(bad + ER) == [] or dec.garbled == 1


def test_encode_sorts_header_and_body_and_matches_simplefix() -> None:
    raw = encode(
        b"FIX.4.4",
        b"D",
        [(56, b"B"), (52, b"20240101-00:00:00.000"), (49, b"A"), (34, b"3")],
        [(55, b"MSFT"), (11, b"id"), (40, b"1"), (21, b"3"), (54, b"1")],
    )
    ref = _sf(
        (8, "FIX.4.4"),
        (35, "D"),
        (34, "3"),
        (49, "A"),
        (52, "20240101-00:00:00.000"),
        (56, "B"),
        (11, "id"),
        (21, "3"),
        (40, "1"),
        (54, "1"),
        (55, "MSFT"),
    )
    assert raw == ref


def test_encode_keeps_group_members_in_given_order_at_count_tag() -> None:
    body = [(55, b"X"), Group(453, [[(448, b"P1"), (447, b"D"), (452, b"1")]]), (11, b"c")]
    raw = encode(b"FIX.4.4", b"D", [(34, b"1")], body)
    assert b"\x0111=c\x0155=X\x01453=1\x01448=P1\x01447=D\x01452=1\x0110=" in raw


def test_out_message_from_message_rebuilds_groups() -> None:
    msg = FixMessage.from_pairs(
        [(8, "FIX.4.4"), (35, "D"), (453, "2"), (448, "A"), (447, "D"), (448, "B"), (11, "x")]
    )
    out = OutMessage.from_message(msg, {453: (448, 447, 452)})
    group = out.body[0]
    assert isinstance(group, Group)
    assert group.entries == [[(448, b"A"), (447, b"D")], [(448, b"B")]]
    assert out.body[1] == (11, b"x")


def test_template_encode_equals_generic_encode() -> None:
    tmpl = MessageTemplate(
        b"FIX.4.4",
        b"D",
        [(34, None), (49, b"A"), (52, None), (56, b"B"), (11, None), (38, None), (55, b"X")],
    )
    vals = [b"12", b"20240101-00:00:00.000", b"ord", b"100"]
    ref = encode(
        b"FIX.4.4",
        b"D",
        [(34, b"12"), (49, b"A"), (52, vals[1]), (56, b"B")],
        [(11, b"ord"), (38, b"100"), (55, b"X")],
    )
    assert tmpl.encode(vals) == ref
    assert decode_one(ref) is not None


@pytest.mark.parametrize(
    ("precision", "text"),
    [
        (0, b"20231114-22:13:20"),
        (3, b"20231114-22:13:20.123"),
        (6, b"20231114-22:13:20.123456"),
        (9, b"20231114-22:13:20.123456789"),
    ],
)
def test_format_timestamp_with_precision_round_trips(precision: int, text: bytes) -> None:
    ns = 1_700_000_000_123_456_789
    assert format_timestamp(ns, precision) == text
    assert parse_timestamp(text) == ns - ns % 10 ** (9 - precision)


@pytest.mark.parametrize(
    "bad",
    [
        b"",
        b"2023111422:13:20",
        b"20231314-22:13:20",
        b"20231114-22:13:2x",
        # Signs and spaces int() would take: the session's SendingTime check and the
        # validator's UTCTIMESTAMP check are one grammar.
        b"20231114-22:+3:20",
        b"20231114-22:13: 2",
        b"2023+114-22:13:20",
        b"20231114-22:13:20.",
        b"20231114-22:13:20.1234567890",
        b"20231114-24:00:00",
    ],
)
def test_parse_timestamp_with_garbage_returns_none(bad: bytes) -> None:
    assert parse_timestamp(bad) is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=8), st.integers(0, 2**32))
def test_decoder_fuzzed_stream_never_raises_and_keeps_valid_messages(
    junk: list[bytes], seed: int
) -> None:
    # Good messages interleaved with garbage, split at random points: every good message that
    # is not glued to garbage comes out intact, nothing raises.
    rnd = random.Random(seed)
    stream = b""
    for j in junk:
        stream += j.replace(b"\x01", b"") + b"\x01" + ER
    dec = FixDecoder()
    out: list[FixMessage] = []
    pos = 0
    while pos < len(stream):
        step = rnd.randint(1, 64)
        out.extend(dec.feed(stream[pos : pos + step]))
        pos += step
    assert len(out) == len(junk)
    assert all(m.raw == ER for m in out)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_decoder_with_random_bytes_never_raises(data: bytes) -> None:
    dec = FixDecoder()
    for m in dec.feed(data):
        assert m.raw.startswith(b"8=")
    dec.feed(ER)


def test_decoder_raw_data_value_keeps_embedded_soh() -> None:
    raw = encode(b"FIX.4.4", b"B", [(34, b"2")], [(95, b"5"), (96, b"x\x01y=z"), (148, b"h")])
    msg = decode_one(raw)
    assert msg is not None
    assert msg.get(96) == b"x\x01y=z"
    assert msg.get(148) == b"h"


def test_decoder_with_more_frames_than_table_rows_scans_in_passes() -> None:
    from engine.fix import _kernels

    dec = FixDecoder()
    dec.feed(ER)
    signatures = list(_kernels.scan_frames.signatures)  # type: ignore[attr-defined]
    # A message first: later passes write their fields after its (the table is then sliced).
    msgs = dec.feed(ER + b"8=A\x01" * 3000 + ER + ER)
    assert [m.raw for m in msgs] == [ER, ER, ER]
    assert dec.garbled == 6000
    assert msgs[2].get(55) == b"AAPL"
    assert msgs[0].pairs == msgs[1].pairs == msgs[2].pairs  # later passes' fields copied in
    # The passes call the kernel with the arguments' usual types: nothing compiled again.
    assert list(_kernels.scan_frames.signatures) == signatures  # type: ignore[attr-defined]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=3000))
def test_checksum_equals_byte_sum_mod_256(data: bytes) -> None:
    assert checksum(data) == sum(data) % 256
    assert checksum(b"\xff" * len(data)) == (255 * len(data)) % 256


def test_messages_sharing_a_block_see_only_their_own_fields() -> None:
    """Messages decoded together share their block's field lists: every lookup stays inside
    the message (a tag of the next message is absent, not found), across block boundaries."""
    rng = random.Random(7)
    msgs: list[list[tuple[int, str]]] = []
    for i in range(53):  # more than three blocks, the last one short
        body = [(11, f"c{i}")] + [(t, str(i)) for t in rng.sample(range(100, 130), i % 6)]
        if i % 2:
            body.append((58, f"text {i}"))
        header = [(8, "FIX.4.4"), (35, "D"), (34, str(i + 1)), (49, "A"), (52, "20240101-00:00:00")]
        if i % 3:
            header.append((56, "B"))  # the others lack TargetCompID: a non-standard header
        msgs.append(header + sorted(body))
    stream = b"".join(_sf(*m) for m in msgs)
    for chunk in (len(stream), 4096, 300):  # one read, a few, and reads of a message or less
        dec = FixDecoder()
        got: list[FixMessage] = []
        for i in range(0, len(stream), chunk):
            got += dec.feed(stream[i : i + chunk])
        assert len(got) == len(msgs)
        for m, fields in zip(got, msgs, strict=True):
            expect = [(t, v.encode()) for t, v in fields]
            assert [p for p in m.pairs if p[0] not in (9, 10)] == expect
            assert len(m) == len(fields) + 2
            assert m.tags == [p[0] for p in m.pairs]
            own = {t for t, _ in fields}
            for tag in (56, 58, *range(100, 130)):
                want = dict(expect).get(tag)
                assert m.get(tag) == want
                assert (tag in m) == (tag in own)
            for _ in range(5):  # past the scans: the index answers
                assert m.get(58) == dict(expect).get(58)
            assert m.get_all(11) == [dict(expect)[11]]
            head = m.session_header()
            if (56, "B") in fields:
                assert head is not None
                assert head[5] == b"B"
            else:
                assert head is None
            assert decode_one(m.raw) is not None
            assert decode_one(m.raw).pairs == m.pairs  # type: ignore[union-attr]
