# SPDX-License-Identifier: MIT
"""The test-side SBE encoder (``encode.py``) against real bytes, and the decoder against it.

The encoder is what the market-by-order tests build their captures with, so it is held to the
real thing first: every message of every shared CME capture, decoded and encoded again from
its decoded values, gives back its own bytes (and every packet its own payload), with the
schema it was sent with and with the newer v13 schema. Then the other way round: random values
for every column of every message and group of CME's schemas v8, v9 and 13 decode back to
the same values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.feeds.pcap import udp_payloads
from engine.feeds.sbe.mdp3 import decode_capture, decode_payloads
from engine.feeds.sbe.schema import Block, Column, Schema
from engine.feeds.sbe.schema_xml import load_schema
from tests.conftest import SHARED
from tests.unit.engine.feeds.sbe.encode import encode_message, mdp3_packet, values_of
from tests.unit.engine.feeds.sbe.test_decoder import SCHEMA_XML, order

DATA = SHARED / "data/cme_mdp3_sbe"
SCHEMAS = {v: DATA / f"schema/Cme.Futures.Mdp3.Sbe.v1.{v}.xml" for v in (8, 9, 13)}
CAPTURES = sorted((DATA / "pcap").glob("*.pcap"))


def _cases() -> list[tuple[Path, int]]:
    out = []
    for c in CAPTURES:
        sent = 8 if ".v1.8__" in c.name else 9
        out += [(c, sent)] + ([(c, 13)] if sent == 9 else [])
    return out


@pytest.mark.parametrize(("capture", "version"), _cases(), ids=lambda x: str(x)[-40:])
def test_every_captured_message_encodes_back_to_its_own_bytes(capture: Path, version: int) -> None:
    if not (capture.is_file() and SCHEMAS[version].is_file()):
        pytest.skip("the shared CME captures are absent")
    cap = decode_capture(capture, SCHEMAS[version])
    dec = cap.decoded
    assert dec.n_decoded == dec.n_messages > 0
    encoded: dict[int, list[bytes]] = {}
    for m in dec.messages:
        tid, row = int(m["template_id"]), int(m["row"])
        root, groups = values_of(dec, dec.templates[tid], row)
        enc = encode_message(
            dec.schema,
            tid,
            root,
            groups,
            version=int(m["version"]),
            block_length=int(m["block_length"]),
        )
        start = int(m["offset"]) + 2  # after MsgSize
        assert enc == dec.buffer[start : int(m["offset"]) + int(m["size"])].tobytes(), (
            f"message {int(m['packet'])}/{row} template {tid}"
        )
        encoded.setdefault(int(m["packet"]), []).append(enc)
    payloads = udp_payloads(capture)
    for p, payload in enumerate(payloads):
        pk = cap.packets[p]
        again = mdp3_packet(int(pk["seq"]), int(pk["sending_time"]), encoded.get(p, []))
        assert again == payload, f"packet {p}"


def test_the_hex_packets_encode_back_to_their_own_bytes() -> None:
    path = DATA / "hex/packets.hex"
    if not (path.is_file() and SCHEMAS[8].is_file()):
        pytest.skip("the shared CME hex packets are absent")
    payloads = [bytes.fromhex(line) for line in path.read_text().split() if line]
    cap = decode_payloads(payloads, SCHEMAS[8])
    dec = cap.decoded
    assert dec.n_decoded == dec.n_messages > 0
    for p, payload in enumerate(payloads):
        msgs = dec.messages[dec.messages["packet"] == p]
        again = []
        for m in msgs:
            tid = int(m["template_id"])
            root, groups = values_of(dec, dec.templates[tid], int(m["row"]))
            again.append(
                encode_message(
                    dec.schema,
                    tid,
                    root,
                    groups,
                    version=int(m["version"]),
                    block_length=int(m["block_length"]),
                )
            )
        pk = cap.packets[p]
        assert mdp3_packet(int(pk["seq"]), int(pk["sending_time"]), again) == payload


def test_the_order_messages_are_among_them() -> None:
    """The v9 captures hold real MBO: one order book entry (47), 16 order entries in a 46."""
    if not SCHEMAS[9].is_file():
        pytest.skip("the shared CME captures are absent")
    cap = decode_capture(
        DATA / "pcap/Mdp3.Sbe.v1.9__MdIncrementalRefreshOrderBook.47.pcap", SCHEMAS[9]
    )
    e = cap.template(47).groups["NoMDEntries"].rows
    assert e["OrderID"].tolist() == [76662054355]
    assert e["MDOrderPriority"].tolist() == [641463012]
    cap = decode_capture(DATA / "pcap/Mdp3.Sbe.v1.9__MdIncrementalRefreshBook.46.pcap", SCHEMAS[9])
    assert len(cap.template(46).groups["NoOrderIDEntries"]) == 16


def test_nested_groups_and_var_data_encode_as_the_hand_built_message(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.xml"
    path.write_text(SCHEMA_XML)
    schema = load_schema(path)
    legs = [(5, -2, [10, 20]), (6, 3, [])]
    want = order(3, legs=legs, notes=[9, 8], text=b"hello")
    got = encode_message(
        schema, "Order", {"Id": 1001, "Px.mantissa": 12345, "Side": 2, "Flags": 0b1001,
                          "Qty": 7, "Text": b"hello"},
        {"Legs": [{"LegId": a, "Ratio": r, "Fills": [{"FillQty": f} for f in fs]}
                  for a, r, fs in legs],
         "Notes": [{"Code": 9}, {"Code": 8}]},
    )  # fmt: skip
    assert got == want


def _random_value(c: Column, rng: np.random.Generator) -> Any:
    fmt = c.numpy_format("<")
    if isinstance(fmt, str) and fmt.startswith("S"):
        n = int(rng.integers(0, c.size + 1))
        return bytes(rng.integers(0x21, 0x7F, n, dtype=np.uint8))
    base = np.dtype(fmt if isinstance(fmt, str) else fmt[0])
    shape = () if c.type.length == 1 else (c.type.length,)
    if base.kind == "f":
        return rng.standard_normal(shape).astype(base)
    info = np.iinfo(base)
    return rng.integers(info.min, info.max, shape, dtype=base, endpoint=True)


def _values(block: Block, rng: np.random.Generator) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for c in block.columns:
        if rng.random() < 0.8:  # the rest left out: null
            out[c.name] = _random_value(c, rng)
    return out


def _same(c: Column, got: Any, want: Any) -> bool:
    if want is None:
        return bool(c.is_null(np.asarray(got)).all()) if c.type.length == 1 else True
    if isinstance(want, bytes):
        return bytes(got) == want.rstrip(b"\0")
    return bool(np.array_equal(np.asarray(got), np.asarray(want)))


@pytest.mark.parametrize("version", [8, 9, 13])
def test_random_values_of_every_template_decode_back(version: int) -> None:
    if not SCHEMAS[version].is_file():
        pytest.skip("the shared CME schemas are absent")
    schema: Schema = load_schema(SCHEMAS[version])
    rng = np.random.default_rng(version)
    sent: list[tuple[int, dict[str, Any], dict[str, list[dict[str, Any]]]]] = []
    packets = []
    for seq, tid in enumerate(sorted(schema.messages), start=1):
        msg = schema.messages[tid]
        for _ in range(2):
            root = _values(msg, rng)
            groups = {
                g.name: [_values(g, rng) for _ in range(int(rng.integers(0, 4)))]
                for g in msg.groups
            }
            sent.append((tid, root, groups))
        packets.append(
            mdp3_packet(
                seq, 10**18 + seq, [encode_message(schema, t, r, g) for t, r, g in sent[-2:]]
            )
        )
    cap = decode_payloads(packets, schema)
    assert cap.decoded.n_decoded == len(sent)
    assert not cap.issues
    assert cap.packets["seq"].tolist() == list(range(1, len(packets) + 1))
    rows_seen: dict[int, int] = {}
    checked = 0
    for tid, root, groups in sent:
        t = cap.template(tid)
        row = rows_seen.get(tid, 0)
        rows_seen[tid] = row + 1
        for c in t.message.columns:
            assert _same(c, t.rows[c.name][row], root.get(c.name)), (tid, c.name)
            checked += 1
        for g in t.message.groups:
            got = t.entries(g.name, row)
            assert got.shape[0] == len(groups[g.name]), (tid, g.name)
            for i, want in enumerate(groups[g.name]):
                for c in g.columns:
                    assert _same(c, got[c.name][i], want.get(c.name)), (tid, g.name, c.name)
                    checked += 1
    assert checked > 500
