# SPDX-License-Identifier: MIT
"""ITCH 5.0 decoding against itchfeed: the shared real captures, every field of every message,
and the eight types the captures lack, written by itchfeed's own encoder."""

import struct
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
from itch.messages import create_message
from itch.parser import MessageParser

from engine.feeds.itch import _kernels as k
from engine.feeds.itch.decode import ItchDecodeError, decode_file, decode_raw
from engine.feeds.itch.messages import (
    LAYOUTS,
    MESSAGE_DTYPES,
    MESSAGE_LENGTHS,
    MESSAGE_TYPES,
    PRICE,
    TIME,
)
from engine.feeds.itch.moldudp64 import decode_packets
from engine.feeds.pcap import udp_payloads
from tests.conftest import SHARED

ITCH = SHARED / "data/nasdaq_itch_ouch/itch"
CAPTURES = sorted(ITCH.glob("*.pcap")) if ITCH.is_dir() else []

#: Where itchfeed's attribute name differs from the spec's (ours).
ITCHFEED_NAME = {
    ("R", "luld_reference_price_tier"): "luld_ref",
    ("V", "level_1"): "level1_price",
    ("V", "level_2"): "level2_price",
    ("V", "level_3"): "level3_price",
    ("K", "ipo_quotation_release_time"): "ipo_release_time",
    ("K", "ipo_quotation_release_qualifier"): "ipo_release_qualifier",
    ("J", "auction_collar_extension"): "auction_collar_extention",
    ("U", "original_order_reference_number"): "order_reference_number",
    ("I", "price_variation_indicator"): "variation_indicator",
}


def _py(kernel: object) -> Any:
    """The plain-Python function behind a compiled kernel."""
    return cast(Any, kernel).py_func


def _messages_of(payload: bytes) -> list[bytes]:
    # MoldUDP64 framing written out again independently of the kernels, for the reference
    n = struct.unpack_from(">H", payload, 18)[0]
    off, out = 20, []
    for _ in range(n):
        ln = struct.unpack_from(">H", payload, off)[0]
        out.append(payload[off + 2 : off + 2 + ln])
        off += 2 + ln
    return out


def _assert_row_equals_itchfeed(t: str, row: np.void, ref: object) -> None:
    assert ref.message_type == t.encode()  # type: ignore[attr-defined]
    for f in LAYOUTS[t]:
        theirs = getattr(ref, ITCHFEED_NAME.get((t, f.name), f.name))
        ours = row[f.name]
        if f.kind in (PRICE, TIME):
            assert isinstance(ours, np.int64), (t, f.name)
        got = ours.item() if isinstance(ours, np.generic) else ours
        assert got == theirs, f"{t}.{f.name}: ours {got!r}, itchfeed {theirs!r}"


@pytest.mark.parametrize("path", CAPTURES, ids=[p.name.split("__")[-1] for p in CAPTURES])
def test_every_message_of_the_shared_captures_equals_itchfeed_field_for_field(path: Path) -> None:
    payloads = udp_payloads(path)
    raw = [m for p in payloads for m in _messages_of(p)]
    decoded = decode_packets(payloads, source=str(path))
    assert decoded.n_messages == len(raw) > 0
    parser = MessageParser()
    seen = dict.fromkeys(MESSAGE_TYPES, 0)
    for msg in raw:
        t = chr(msg[0])
        _assert_row_equals_itchfeed(t, decoded[t][seen[t]], parser.get_message_type(msg))
        seen[t] += 1
    assert seen == {t: decoded[t].shape[0] for t in MESSAGE_TYPES}


def test_the_shared_captures_hold_fifteen_message_types() -> None:
    if not CAPTURES:
        pytest.skip(f"{ITCH} is absent")
    types = {t for p in CAPTURES for t in decode_packets(udp_payloads(p)).counts()}
    assert types == set("AFQJLIPXDECUYHS")


def _sample(t: str, i: int) -> dict[str, object]:
    # a message of type t with every field set to a distinct non-trivial value
    vals: dict[str, object] = {"timestamp": 0x123456789ABC - i, "stock_locate": 7 + i}
    vals["tracking_number"] = 3
    for j, f in enumerate(LAYOUTS[t][3:]):
        name = ITCHFEED_NAME.get((t, f.name), f.name)
        if f.kind == "a":
            text = (chr(ord("A") + (i + j) % 26) * f.size).encode()
            vals[name] = text if f.size > 1 else text[:1]
        else:
            top = (1 << (8 * f.size)) - 1
            vals[name] = (0x0102030405060708 * (j + 1) + i) & top
    return vals


@pytest.mark.parametrize("t", list(MESSAGE_TYPES))
def test_every_type_decodes_itchfeeds_encoding_field_for_field(t: str) -> None:
    msgs = [create_message(t.encode(), **_sample(t, i)).to_bytes() for i in range(3)]
    assert all(len(m) == MESSAGE_LENGTHS[t] for m in msgs)
    data = b"".join(struct.pack(">H", len(m)) + m for m in msgs)
    decoded = decode_raw(data, first_seq=10)
    rows = decoded[t]
    assert rows.dtype == MESSAGE_DTYPES[t]
    assert rows["seq"].tolist() == [10, 11, 12]
    parser = MessageParser()
    for row, m in zip(rows, msgs, strict=True):
        _assert_row_equals_itchfeed(t, row, parser.get_message_type(m))
    assert decoded.n_messages == 3


def test_mixed_stream_keeps_order_within_types_and_seq_across_them() -> None:
    msgs = []
    for i in range(40):
        t = MESSAGE_TYPES[(i * 7) % len(MESSAGE_TYPES)]
        msgs.append((t, create_message(t.encode(), **_sample(t, i)).to_bytes()))
    data = b"".join(struct.pack(">H", len(m)) + m for _, m in msgs)
    decoded = decode_raw(data)
    parser = MessageParser()
    for t in MESSAGE_TYPES:
        expected = [(n + 1, m) for n, (tt, m) in enumerate(msgs) if tt == t]
        assert decoded[t]["seq"].tolist() == [s for s, _ in expected]
        for row, (_, m) in zip(decoded[t], expected, strict=True):
            _assert_row_equals_itchfeed(t, row, parser.get_message_type(m))


def test_kernel_and_its_python_function_decode_the_same() -> None:
    t = "C"
    m = create_message(b"C", **_sample(t, 1)).to_bytes()
    buf = np.frombuffer(struct.pack(">H", len(m)) + m, np.uint8)
    from engine.feeds.itch.decode import _TABLES as tab

    st, en = np.array([0], np.int64), np.array([buf.shape[0]], np.int64)
    outs = []
    for fn in (k.decode_messages, _py(k.decode_messages)):
        out = np.zeros(MESSAGE_DTYPES["C"].itemsize, np.uint8)
        base = np.zeros(len(MESSAGE_TYPES), np.int64)
        rows = np.zeros(len(MESSAGE_TYPES), np.int64)
        fn(
            buf,
            st,
            en,
            k.MODE_RAW,
            np.zeros(0, np.uint8),
            1,
            1,
            tab.index,
            tab.ops,
            tab.n_ops,
            tab.itemsize,
            base,
            rows,
            out,
            out.view(np.uint16),
            out.view(np.uint32),
            out.view(np.int64),
        )
        outs.append(out)
    assert outs[0].tobytes() == outs[1].tobytes()
    assert (
        outs[0].view(MESSAGE_DTYPES["C"])["execution_price"][0]
        == _sample("C", 1)["execution_price"]
    )


def _raw(*msgs: bytes) -> bytes:
    return b"".join(struct.pack(">H", len(m)) + m for m in msgs)


def _add(ref: int) -> bytes:
    return struct.pack(">cHHHIQcI8sI", b"A", 1, 0, 0, 5, ref, b"B", 100, b"ZVZZT   ", 10000)


def test_unknown_type_names_offset_type_and_keeps_what_came_before() -> None:
    data = _raw(_add(1), _add(2), b"Z" + bytes(10))
    with pytest.raises(ItchDecodeError, match=r"byte 76 \(message 3\): type byte 90 \('Z'\)") as e:
        decode_raw(data, source="day.itch")
    assert e.value.partial["A"]["order_reference_number"].tolist() == [1, 2]
    assert str(e.value).startswith("day.itch: ")
    assert (e.value.offset, e.value.packet, e.value.code) == (76, 0, k.ERR_UNKNOWN_TYPE)


def test_wrong_length_for_its_type_is_named() -> None:
    bad = _add(3)[:-1]
    with pytest.raises(ItchDecodeError, match=r"type 'A' has length 35, the spec's length is 36"):
        decode_raw(_raw(_add(1), bad))


def test_cut_off_message_and_cut_off_length_prefix() -> None:
    data = _raw(_add(1), _add(2))
    with pytest.raises(ItchDecodeError, match="runs past the end") as e:
        decode_raw(data[:-5])
    assert e.value.partial.n_messages == 1
    with pytest.raises(ItchDecodeError, match="length prefix is cut off"):
        decode_raw(data + b"\x00")


def test_zero_length_message_is_named() -> None:
    with pytest.raises(ItchDecodeError, match="length 0"):
        decode_raw(_raw(_add(1)) + b"\x00\x00")


def test_decode_file_reads_a_raw_day(tmp_path: Path) -> None:
    p = tmp_path / "day.itch"
    p.write_bytes(_raw(_add(1), _add(2), _add(3)))
    assert decode_file(p)["A"]["order_reference_number"].tolist() == [1, 2, 3]
    (tmp_path / "empty.itch").write_bytes(b"")
    assert decode_file(tmp_path / "empty.itch").n_messages == 0
