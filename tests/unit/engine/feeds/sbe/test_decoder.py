# SPDX-License-Identifier: MIT
"""The decoder on packets built by hand: extension rules, nested groups, var data, bad input.

A small schema written here (id 7, version 3) has what CME's lack (a nested group, var data,
fields and groups added in later versions); the CME v8 schema is used for real layouts.
"""

from __future__ import annotations

import binascii
import struct
from pathlib import Path

import numpy as np
import pytest

from engine.feeds.pcap import udp_payloads
from engine.feeds.sbe import _kernels as k
from engine.feeds.sbe.decoder import MDP3_FRAMING, Framing, SbeDecoder, pack_packets
from engine.feeds.sbe.mdp3 import decode_payloads
from engine.feeds.sbe.schema import Schema
from engine.feeds.sbe.schema_xml import load_schema
from tests.conftest import SHARED

DATA = SHARED / "data/cme_mdp3_sbe"
V8 = DATA / "schema/Cme.Futures.Mdp3.Sbe.v1.8.xml"

SCHEMA_XML = """<?xml version="1.0" encoding="UTF-8"?>
<sbe:messageSchema xmlns:sbe="http://fixprotocol.io/2016/sbe" package="t" id="7" version="3"
                   byteOrder="littleEndian">
  <types>
    <composite name="messageHeader">
      <type name="blockLength" primitiveType="uint16"/>
      <type name="templateId" primitiveType="uint16"/>
      <type name="schemaId" primitiveType="uint16"/>
      <type name="version" primitiveType="uint16"/>
    </composite>
    <composite name="groupSizeEncoding">
      <type name="blockLength" primitiveType="uint16"/>
      <type name="numInGroup" primitiveType="uint16"/>
    </composite>
    <composite name="varDataEncoding">
      <type name="length" primitiveType="uint16"/>
      <type name="varData" primitiveType="uint8" length="0"/>
    </composite>
    <type name="Qty" primitiveType="int32" presence="optional" nullValue="-1"/>
    <composite name="Price">
      <type name="mantissa" primitiveType="int64"/>
      <type name="exponent" primitiveType="int8" presence="constant">-2</type>
    </composite>
    <enum name="Side" encodingType="uint8">
      <validValue name="Buy">1</validValue>
      <validValue name="Sell">2</validValue>
    </enum>
    <set name="Flags" encodingType="uint8">
      <choice name="A">0</choice>
      <choice name="B">3</choice>
    </set>
  </types>
  <sbe:message name="Order" id="1">
    <field name="Id" id="1" type="uint64"/>
    <field name="Px" id="2" type="Price"/>
    <field name="Side" id="3" type="Side"/>
    <field name="Flags" id="4" type="Flags"/>
    <field name="Qty" id="5" type="Qty" sinceVersion="2"/>
    <group name="Legs" id="10">
      <field name="LegId" id="11" type="uint32"/>
      <field name="Ratio" id="12" type="int16" sinceVersion="3"/>
      <group name="Fills" id="13">
        <field name="FillQty" id="14" type="int32"/>
      </group>
    </group>
    <group name="Notes" id="20" sinceVersion="3">
      <field name="Code" id="21" type="uint8"/>
    </group>
    <data name="Text" id="30" type="varDataEncoding"/>
  </sbe:message>
  <sbe:message name="Ping" id="2" blockLength="4">
    <field name="N" id="1" type="uint32"/>
  </sbe:message>
</sbe:messageSchema>
"""


@pytest.fixture(scope="module")
def schema(tmp_path_factory: pytest.TempPathFactory) -> Schema:
    path = tmp_path_factory.mktemp("sbe") / "t.xml"
    path.write_text(SCHEMA_XML)
    return load_schema(path)


def header(block: int, template: int, version: int, schema_id: int = 7) -> bytes:
    return struct.pack("<HHHH", block, template, schema_id, version)


def order(
    version: int,
    *,
    legs: list[tuple[int, int, list[int]]],
    notes: list[int],
    text: bytes,
    block: int | None = None,
    leg_block: int | None = None,
    tail: bytes = b"",
    leg_tail: bytes = b"",
) -> bytes:
    """An Order as a sender of ``version`` writes it (fields it does not know left out)."""
    root = struct.pack("<QqBB", 1001, 12345, 2, 0b1001)
    if version >= 2:
        root += struct.pack("<i", 7)
    root += tail
    bl = len(root) if block is None else block
    body = root
    leg_fmt = "<Ih" if version >= 3 else "<I"
    lbl = struct.calcsize(leg_fmt) + len(leg_tail) if leg_block is None else leg_block
    body += struct.pack("<HH", lbl, len(legs))
    for leg_id, ratio, fills in legs:
        body += (
            struct.pack(leg_fmt, leg_id, ratio) if version >= 3 else struct.pack(leg_fmt, leg_id)
        )
        body += leg_tail
        body += struct.pack("<HH", 4, len(fills)) + b"".join(struct.pack("<i", f) for f in fills)
    if version >= 3:
        body += struct.pack("<HH", 1, len(notes)) + bytes(notes)
    body += struct.pack("<H", len(text)) + text
    return header(bl, 1, version) + body


def packet(seq: int, *messages: bytes) -> bytes:
    out = struct.pack("<IQ", seq, 1_500_000_000_000_000_000 + seq)
    for m in messages:
        out += struct.pack("<H", len(m) + 2) + m
    return out


def test_the_block_layout_comes_from_the_schema(schema: Schema) -> None:
    m = schema.message("Order")
    assert m.block_length == 22
    assert [(c.name, c.offset, c.size) for c in m.columns] == [
        ("Id", 0, 8), ("Px.mantissa", 8, 8), ("Side", 16, 1), ("Flags", 17, 1), ("Qty", 18, 4)
    ]  # fmt: skip
    assert m.column("Px.mantissa").exponent == -2
    assert m.column("Qty").since_version == 2
    legs = m.group("Legs")
    assert legs.block_length == 6
    assert legs.dimension_size == 4
    assert legs.group("Fills").block_length == 4
    assert m.group("Notes").since_version == 3
    assert m.data[0].name == "Text"
    assert m.data[0].data_offset == 2


def test_a_current_message_decodes_with_nested_groups_and_var_data(schema: Schema) -> None:
    msg = order(3, legs=[(1, -1, [5, 6]), (2, 3, []), (3, 4, [9])], notes=[8, 9], text=b"hello")
    cap = decode_payloads([packet(1, msg, msg)], schema)
    assert not cap.issues
    assert cap.decoded.n_messages == 2
    o = cap.template("Order")
    assert list(o.rows["Id"]) == [1001, 1001]
    assert list(o.decimal("Px")) == [123.45, 123.45]
    assert list(o.rows["Side"]) == [2, 2]
    assert list(o.rows["Flags"]) == [9, 9]
    assert o.column("Flags").set is not None
    assert o.column("Flags").set.names_of(9) == ["A", "B"]  # type: ignore[union-attr]
    assert list(o.rows["Qty"]) == [7, 7]
    assert not o.is_null("Qty").any()
    legs = o.groups["Legs"]
    assert list(legs.rows["LegId"]) == [1, 2, 3, 1, 2, 3]
    assert list(legs.rows["Ratio"]) == [-1, 3, 4, -1, 3, 4]
    assert list(legs.rows["_msg"]) == [0, 0, 0, 1, 1, 1]
    fills = o.groups["Legs.Fills"]
    assert fills.parent == "Legs"
    assert list(fills.rows["FillQty"]) == [5, 6, 9, 5, 6, 9]
    assert list(fills.rows["_parent"]) == [0, 0, 2, 3, 3, 5]  # rows of their legs
    assert list(fills.rows["_msg"]) == [0, 0, 0, 1, 1, 1]
    assert list(o.groups["Notes"].rows["Code"]) == [8, 9, 8, 9]
    assert [cap.decoded.data(o, "Text", r) for r in (0, 1)] == [b"hello", b"hello"]


def test_an_older_sender_leaves_the_later_fields_and_groups_null_and_absent(
    schema: Schema,
) -> None:
    old = order(1, legs=[(1, 0, [5]), (2, 0, [])], notes=[], text=b"v1")
    assert len(old) == 8 + 18 + 4 + 2 * 4 + 4 + 4 + 4 + 2 + 2  # no Qty, Ratio, Notes
    cap = decode_payloads([packet(1, old)], schema)
    assert not cap.issues
    o = cap.template("Order")
    assert o.rows["_version"][0] == 1
    assert o.rows["_block_length"][0] == 18
    assert o.rows["Id"][0] == 1001
    assert o.rows["Side"][0] == 2
    assert o.is_null("Qty")[0]
    assert o.value(0, "Qty") is None
    legs = o.groups["Legs"]
    assert list(legs.rows["LegId"]) == [1, 2]
    assert list(legs.rows["Ratio"]) == [-32768, -32768]  # int16's SBE null
    assert legs.is_null("Ratio").all()
    assert list(o.groups["Legs.Fills"].rows["FillQty"]) == [5]
    assert len(o.groups["Notes"]) == 0
    assert cap.decoded.data(o, "Text", 0) == b"v1"


def test_a_field_newer_than_the_header_version_is_null_even_inside_the_block(
    schema: Schema,
) -> None:
    msg = bytearray(order(2, legs=[], notes=[], text=b""))  # a 22-byte block, Qty 7 in it
    struct.pack_into("<H", msg, 6, 1)  # but the header says version 1: Qty (since 2) is not
    cap = decode_payloads([packet(1, bytes(msg))], schema)
    assert not cap.issues
    assert cap.template("Order").is_null("Qty")[0]


def test_a_newer_sender_longer_blocks_are_cut_to_the_schema_and_the_rest_skipped(
    schema: Schema,
) -> None:
    new = order(
        4,
        legs=[(1, 2, [5]), (7, 8, [6, 7])],
        notes=[3],
        text=b"v4",
        tail=b"\xee" * 5,
        leg_tail=b"\xdd" * 3,
    )
    cap = decode_payloads([packet(1, new, order(3, legs=[], notes=[], text=b"x"))], schema)
    assert not cap.issues
    o = cap.template("Order")
    assert o.rows["_block_length"][0] == 27
    assert o.rows["_version"][0] == 4
    assert list(o.rows["Qty"]) == [7, 7]
    assert o.rows.dtype.itemsize > 22
    assert o.rows["Id"][0] == 1001
    legs = o.groups["Legs"]
    assert list(legs.rows["LegId"]) == [1, 7]
    assert list(legs.rows["Ratio"]) == [2, 8]
    assert list(o.groups["Legs.Fills"].rows["FillQty"]) == [5, 6, 7]
    assert list(o.groups["Notes"].rows["Code"]) == [3]
    assert [cap.decoded.data(o, "Text", r) for r in (0, 1)] == [b"v4", b"x"]


@pytest.fixture(scope="module")
def v8() -> Schema:
    if not V8.is_file():
        pytest.skip(f"{V8} is not there")
    return load_schema(V8)


#: Two MDIncrementalRefreshBook32 messages of a real ES packet (hex/packets.hex, 5th line).
TWO_BOOKS = binascii.a2b_hex(
    "c90fa9008a15428b069bd91458000b00200001000800e7c43d8b069bd91484000020000180b2654d3602"
    "00008e0000000a610000f62fac003000000007013000000000001800000000000001e44c980a96000000"
    "2b13144401000000010000000101000058000b002000010008006f203f8b069bd9148400002000018017"
    "336b3602000004000000805d0000402d140002000000020131000000000018000000000000016153980a"
    "960000002c131444010000000200000001010000"
)


def test_v8_a_version_6_header_has_no_order_id_group(v8: Schema) -> None:
    first = bytearray(TWO_BOOKS[12 : 12 + 88])
    # a v6 sender: version 6 and no NoOrderIDEntries group (sinceVersion 7) at the end
    struct.pack_into("<H", first, 8, 6)
    first = first[: 10 + 11 + 3 + 32]
    struct.pack_into("<H", first, 0, len(first))
    cap = decode_payloads([TWO_BOOKS[:12] + bytes(first) + TWO_BOOKS[12 + 88 :]], v8)
    assert not cap.issues
    book = cap.template(32)
    assert list(book.rows["_version"]) == [6, 8]
    assert list(book.groups["NoMDEntries"].rows["_msg"]) == [0, 1]
    assert list(book.groups["NoOrderIDEntries"].rows["_msg"]) == [1]


def test_v8_a_longer_root_block_is_skipped_to_find_the_groups(v8: Schema) -> None:
    m = TWO_BOOKS[12 : 12 + 88]
    longer = bytearray(m[: 10 + 11] + b"\x55\x66\x77" + m[10 + 11 :])
    struct.pack_into("<HH", longer, 0, len(longer), 14)
    plain = decode_payloads([TWO_BOOKS], v8).template(32)
    cap = decode_payloads([TWO_BOOKS[:12] + bytes(longer) + TWO_BOOKS[12 + 88 :]], v8)
    assert not cap.issues
    book = cap.template(32)
    assert list(book.rows["_block_length"]) == [14, 11]
    for name in ("TransactTime", "MatchEventIndicator"):
        assert np.array_equal(book.rows[name], plain.rows[name])
    for g in ("NoMDEntries", "NoOrderIDEntries"):
        ours, theirs = book.groups[g].rows, plain.groups[g].rows
        assert np.array_equal(ours, theirs)


def test_bad_messages_are_skipped_and_named_and_everything_else_kept(v8: Schema) -> None:
    good = TWO_BOOKS
    unknown = bytearray(good)
    struct.pack_into("<H", unknown, 12 + 4, 999)  # first message's templateId
    other = bytearray(good)
    struct.pack_into("<H", other, 12 + 88 + 6, 2)  # second message's schemaId
    group_cut = bytearray(good)
    group_cut[12 + 10 + 11 + 2] = 200  # NoMDEntries numInGroup: past the message
    cut = good[: 12 + 88 + 40]  # the packet ends inside its second message
    short = good[:7]
    bad_size = bytearray(good)
    struct.pack_into("<H", bad_size, 12 + 88, 4)
    packets = [
        good,
        bytes(unknown),
        bytes(other),
        bytes(group_cut),
        cut,
        short,
        bytes(bad_size),
        good,
    ]
    cap = decode_payloads(packets, v8)
    assert [str(i) for i in cap.issues] == [
        "packet 1 offset 12: templateId not in the schema, templateId 999 (skipped)",
        "packet 2 offset 100: message of another schema id, schemaId 2 (skipped)",
        "packet 3 offset 12: a group's entries run past the end of the message, "
        "templateId 32 (skipped)",
        "packet 4 offset 100: message runs past the end of the packet, size 88 "
        "(rest of packet skipped)",
        "packet 5 offset 0: packet shorter than its header, length 7 (rest of packet skipped)",
        "packet 6 offset 100: message size smaller than the message header, MsgSize 4 "
        "(rest of packet skipped)",
    ]
    assert cap.skipped["templateId not in the schema"] == 1
    assert sum(cap.skipped.values()) == 6
    book = cap.template(32)
    # packets 0 and 7 whole; 1, 2, 3: the other message; 4 and 6: the first message
    assert list(book.rows["_packet"]) == [0, 0, 1, 2, 3, 4, 6, 7, 7]
    assert list(cap.packets["status"]) == [
        0,
        0,
        0,
        0,
        k.E_MESSAGE_CUT,
        k.E_SHORT_PACKET,
        k.E_BAD_SIZE,
        0,
    ]
    assert list(cap.messages["status"][:8]) == [
        0,
        0,
        k.E_UNKNOWN_TEMPLATE,
        0,
        0,
        k.E_SCHEMA_ID,
        k.E_GROUP_CUT,
        0,
    ]
    assert cap.messages["row"][2] == -1
    whole = decode_payloads([good], v8).template(32)
    for name in ("TransactTime",):
        assert np.array_equal(book.rows[name][-2:], whole.rows[name])
    assert np.array_equal(
        book.groups["NoMDEntries"].rows["RptSeq"][-2:], whole.groups["NoMDEntries"].rows["RptSeq"]
    )
    assert list(book.groups["NoMDEntries"].rows["_msg"]) == list(range(9))


def test_a_packet_outside_the_buffer_is_refused(v8: Schema) -> None:
    dec = SbeDecoder(v8, MDP3_FRAMING)
    buf, starts, lengths = pack_packets([TWO_BOOKS])
    with pytest.raises(
        ValueError, match=r"packet 0 \(0\+189\) lies outside the buffer of 188 bytes"
    ):
        dec.decode(buf, starts, lengths + 1)


def test_messages_without_a_size_prefix_are_framed_by_their_layout(schema: Schema) -> None:
    dec = SbeDecoder(schema, Framing())
    a = order(3, legs=[(1, 2, [3])], notes=[4], text=b"abc")
    ping = header(4, 2, 3) + struct.pack("<I", 77)
    out = dec.decode(*pack_packets([a + ping + a, ping]))
    assert not out.issues
    assert list(out.messages["template_id"]) == [1, 2, 1, 2]
    assert list(out.messages["size"]) == [len(a), len(ping), len(a), len(ping)]
    assert list(out.template("Ping").rows["N"]) == [77, 77]
    bad = dec.decode(*pack_packets([ping + header(4, 9, 3) + b"\0" * 4 + ping, ping]))
    assert [i.code for i in bad.issues] == [k.E_UNKNOWN_TEMPLATE]
    assert list(bad.template("Ping").rows["_packet"]) == [0, 1]  # before it, and next packet


class _Underestimating(SbeDecoder):
    """A decoder whose first guess of the output is one row a level (grown as it goes)."""

    def _estimate(
        self, data: np.ndarray, starts: np.ndarray, lengths: np.ndarray
    ) -> tuple[np.ndarray, int]:
        return np.ones(len(self.levels), dtype=np.int64), 1


def test_output_that_fills_up_grows_and_gives_the_same_rows(v8: Schema) -> None:
    example = DATA / "pcap/Mdp3.Sbe.v1.8__Cme.Mdp3.Sbe.v8.1.Example.pcap"
    if not example.is_file():
        pytest.skip(f"{example} is not there")
    payloads = udp_payloads(example)[:3000]
    exact = SbeDecoder(v8, MDP3_FRAMING)  # 3000 packets: counted exactly
    a = exact.decode(*pack_packets(payloads))
    b = _Underestimating(v8, MDP3_FRAMING).decode(*pack_packets(payloads))
    sampled = SbeDecoder(v8, MDP3_FRAMING)
    sampled.SAMPLE = 30  # counted on every 100th packet, scaled
    c = sampled.decode(*pack_packets(payloads))
    assert a.n_messages == b.n_messages == c.n_messages == 3324
    for other in (b, c):
        assert np.array_equal(a.messages, other.messages)
        assert np.array_equal(a.packets, other.packets)
        for tid, rows in a.templates.items():
            assert np.array_equal(rows.rows, other.templates[tid].rows)
            for name, g in rows.groups.items():
                assert np.array_equal(g.rows, other.templates[tid].groups[name].rows)


def test_nested_groups_and_var_data_survive_the_output_growing(schema: Schema) -> None:
    msgs = [
        order(3, legs=[(i, i, list(range(i % 4)))], notes=[i % 7] * (i % 3), text=b"t" * i)
        for i in range(60)
    ]
    payloads = [packet(i, m) for i, m in enumerate(msgs)]
    a = SbeDecoder(schema, MDP3_FRAMING).decode(*pack_packets(payloads))
    b = _Underestimating(schema, MDP3_FRAMING).decode(*pack_packets(payloads))
    assert not a.issues
    assert not b.issues
    for name in ("", "Legs", "Legs.Fills", "Notes"):
        ours = a.template("Order") if not name else a.template("Order").groups[name]
        theirs = b.template("Order") if not name else b.template("Order").groups[name]
        assert np.array_equal(ours.rows, theirs.rows), name
    o = b.template("Order")
    assert [b.data(o, "Text", r) for r in range(60)] == [b"t" * i for i in range(60)]
    assert len(o.groups["Legs.Fills"]) == sum(i % 4 for i in range(60))


def test_nothing_to_decode_gives_empty_tables(schema: Schema) -> None:
    out = SbeDecoder(schema, MDP3_FRAMING).decode(*pack_packets([]))
    assert out.n_messages == 0
    assert len(out.template("Order")) == 0
    assert len(out.template("Order").groups["Legs.Fills"]) == 0


def test_a_file_that_is_not_a_capture_is_named(tmp_path: Path, v8: Schema) -> None:
    from engine.feeds.pcap import CaptureError
    from engine.feeds.sbe.mdp3 import decode_capture

    bad = tmp_path / "x.pcap"
    bad.write_bytes(b"not a capture at all")
    with pytest.raises(CaptureError, match=r"x\.pcap: not a pcap or pcapng file"):
        decode_capture(bad, v8)
