# SPDX-License-Identifier: MIT
"""The production SBE encoder (:mod:`engine.feeds.sbe.encoder`) against real CME bytes.

Every message of every shared CME capture, decoded and encoded again from its decoded values
with :class:`SbeEncoder`, gives back its own bytes, and every packet its own payload
(:func:`mdp3_packet`); values the schema cannot carry are refused by name; and
:func:`pack_mdp3` fills packets up to the payload limit, numbering them.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from engine.feeds.pcap import udp_payloads
from engine.feeds.sbe.decoder import MDP3_FRAMING, SbeDecoder, pack_packets
from engine.feeds.sbe.encoder import EncodeError, SbeEncoder, mdp3_packet, pack_mdp3
from engine.feeds.sbe.mdp3 import decode_capture
from engine.feeds.sbe.schema_xml import load_schema
from tests.conftest import SHARED
from tests.unit.engine.feeds.sbe.encode import values_of

DATA = SHARED / "data/cme_mdp3_sbe"
SCHEMAS = {v: DATA / f"schema/Cme.Futures.Mdp3.Sbe.v1.{v}.xml" for v in (8, 9, 13)}
CAPTURES = sorted((DATA / "pcap").glob("*.pcap"))


def _schema(v: int) -> Path:
    if not SCHEMAS[v].is_file():
        pytest.skip("the shared CME schemas are absent")
    return SCHEMAS[v]


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name[-45:])
def test_every_captured_message_encodes_back_to_its_own_bytes(capture: Path) -> None:
    version = 8 if ".v1.8__" in capture.name else 9
    cap = decode_capture(capture, _schema(version))
    dec = cap.decoded
    enc = SbeEncoder(dec.schema)
    assert dec.n_decoded == dec.n_messages > 0
    encoded: dict[int, list[bytes]] = {}
    for m in dec.messages:
        assert int(m["version"]) == version  # sent with this schema: the encoder's layout
        tid, row = int(m["template_id"]), int(m["row"])
        root, groups = values_of(dec, dec.templates[tid], row)
        got = enc.encode(tid, root, groups)
        start = int(m["offset"]) + 2  # after MsgSize
        assert got == dec.buffer[start : int(m["offset"]) + int(m["size"])].tobytes(), (
            f"message {int(m['packet'])}/{row} template {tid}"
        )
        encoded.setdefault(int(m["packet"]), []).append(got)
    for p, payload in enumerate(udp_payloads(capture)):
        pk = cap.packets[p]
        assert mdp3_packet(int(pk["seq"]), int(pk["sending_time"]), encoded[p]) == payload


def test_messages_by_name_with_absent_columns_null_decode_back() -> None:
    schema = load_schema(_schema(13))
    enc = SbeEncoder(schema)
    assert enc.template_id("SecurityStatus") == enc.template_id("SecurityStatus30") == 30
    msg = enc.encode(
        "MDIncrementalRefreshOrderBook",
        {"TransactTime": 77, "MatchEventIndicator": 0x80},
        {
            "NoMDEntries": [
                {
                    "OrderID": 9,
                    "MDOrderPriority": 3,
                    "MDEntryPx.mantissa": 4_500_250_000_000,
                    "MDDisplayQty": 5,
                    "SecurityID": 42,
                    "MDUpdateAction": 0,
                    "MDEntryType": "1",
                }
            ]
        },
    )
    dec = SbeDecoder(schema, MDP3_FRAMING).decode(*pack_packets([mdp3_packet(7, 8, [msg])]))
    t = dec.template(47)
    assert len(t) == 1
    assert int(t.rows["TransactTime"][0]) == 77
    e = t.groups["NoMDEntries"].rows
    assert e["OrderID"].tolist() == [9]
    assert e["MDEntryType"].tolist() == [b"1"]
    assert t.groups["NoMDEntries"].decimal("MDEntryPx").tolist() == [4500.25]
    status = enc.encode(30, {"TransactTime": 1, "SecurityGroup": "ES", "SecurityTradingStatus": 2})
    st = SbeDecoder(schema, MDP3_FRAMING).decode(*pack_packets([mdp3_packet(1, 1, [status])]))
    rows = st.template(30)
    assert rows.is_null("SecurityID").tolist() == [True]  # left out: null
    assert rows.value(0, "SecurityGroup") == "ES"
    assert rows.value(0, "SecurityTradingStatus") == 2


def test_what_the_schema_cannot_carry_is_refused_by_name() -> None:
    enc = SbeEncoder(load_schema(_schema(9)))
    with pytest.raises(EncodeError, match=r"SecurityStatus30 has no column 'Nope'"):
        enc.encode(30, {"Nope": 1})
    with pytest.raises(EncodeError, match=r"SecurityStatus30.SecurityGroup: .* longer than 6"):
        enc.encode(30, {"SecurityGroup": "TOOLONGGROUP"})
    with pytest.raises(EncodeError, match=r"MDIncrementalRefreshBook46.NoMDEntries.MDPriceLevel"):
        enc.encode(46, {}, {"NoMDEntries": [{"MDPriceLevel": 300}]})  # uint8
    with pytest.raises(EncodeError, match=r"NoMDEntries: 256 entries do not fit"):
        enc.encode(47, {}, {"NoMDEntries": [{}] * 256})  # numInGroup is a uint8
    with pytest.raises(EncodeError, match=r"has no group 'NoSuch'"):
        enc.encode(46, {}, {"NoSuch": []})
    with pytest.raises(KeyError, match=r"has no message 999"):
        enc.encode(999, {})


def test_pack_mdp3_fills_packets_to_the_limit_and_numbers_them() -> None:
    msgs = [bytes([i]) * 100 for i in range(30)]
    packets = pack_mdp3(msgs, 1_472, 41, 5)
    # 12-byte header, then 102 bytes a message: 14 fit in 1,472 bytes
    assert [len(p) for p in packets] == [12 + 14 * 102, 12 + 14 * 102, 12 + 2 * 102]
    assert [struct.unpack_from("<IQ", p) for p in packets] == [(41, 5), (42, 5), (43, 5)]
    again = []
    for p in packets:
        at = 12
        while at < len(p):
            (size,) = struct.unpack_from("<H", p, at)
            again.append(p[at + 2 : at + size])
            at += size
    assert again == msgs
    big = pack_mdp3([b"x" * 2_000], 1_472, 1, 0)  # too big for one: alone in its packet
    assert len(big) == 1
    assert len(big[0]) == 12 + 2 + 2_000
    with pytest.raises(EncodeError, match="does not fit MsgSize"):
        mdp3_packet(1, 1, [b"x" * 70_000])
