# SPDX-License-Identifier: MIT
"""MDP 3.0 decoding against sbedecoder: every field of every message of every shared capture.

Each capture is decoded once by :func:`decode_capture` (two kernel calls) and once, packet by
packet, by sbedecoder (the reference, parsing the same UDP payloads from byte 12). Every
message must be framed the same (template, header), and every field of its root block and of
every entry of its groups must hold the same raw value (composite members one by one, strings
up to their NUL, enums and sets as their encoded values, constants as declared).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sbedecoder import MDPMessageFactory, MDPSchema, SBEParser
from sbedecoder.message import (
    CompositeMessageField,
    EnumMessageField,
    SetMessageField,
)

from engine.feeds.pcap import udp_payloads
from engine.feeds.sbe.decoder import Rows
from engine.feeds.sbe.mdp3 import DecodedCapture, decode_capture
from engine.feeds.sbe.schema import Block, CompositeType
from tests.conftest import SHARED

DATA = SHARED / "data/cme_mdp3_sbe"
CAPTURES = sorted((DATA / "pcap").glob("*.pcap"))

#: The message counts the data's README gives for the 10,000-packet capture (sbedecoder's).
EXAMPLE_COUNTS = {
    "MDIncrementalRefreshBook": 9796,
    "MDIncrementalRefreshSessionStatistics": 358,
    "SecurityStatus": 198,
    "MDIncrementalRefreshTradeSummary": 120,
    "MDIncrementalRefreshVolume": 114,
    "AdminHeartbeat": 12,
}


def schema_for(capture: Path) -> Path:
    version = capture.name.split("__")[0].rsplit(".", 1)[-1]  # Mdp3.Sbe.v1.8 -> 8
    return DATA / f"schema/Cme.Futures.Mdp3.Sbe.v1.{version}.xml"


def _theirs_raw(f: Any) -> Any:
    """sbedecoder's raw value of a non-composite field, normalised (text for chars)."""
    v = f.raw_value
    if isinstance(v, bytes):
        return v.split(b"\0", 1)[0].decode("latin-1")
    return v


def _ours_raw(rows: Rows, row: int, column: str) -> Any:
    v = rows.rows[column][row]
    if isinstance(v, bytes):
        return v.split(b"\0", 1)[0].decode("latin-1")
    return v.item()


def _compare_block(block: Block, rows: Rows, row: int, ref_fields: list[Any], where: str) -> int:
    """Assert every field sbedecoder decoded equals ours; return how many values matched."""
    n = 0
    for f in ref_fields:
        field = block.field(f.original_name)
        if isinstance(f, CompositeMessageField):
            assert isinstance(field.type, CompositeType)
            for part in f.parts:
                name = f"{field.name}.{part.name}"
                if name in block.constants:
                    ours = block.constants[name]
                else:
                    ours = _ours_raw(rows, row, name)
                assert ours == _theirs_raw(part), f"{where}.{name}: {ours!r} != {part.raw_value!r}"
                n += 1
            continue
        ours = field.constant if field.constant is not None else _ours_raw(rows, row, field.name)
        theirs = _theirs_raw(f)
        if isinstance(f, EnumMessageField | SetMessageField):
            theirs = f.raw_value
        assert ours == theirs, f"{where}.{field.name}: ours {ours!r}, sbedecoder {theirs!r}"
        n += 1
    return n


def assert_equals_sbedecoder(cap: DecodedCapture, schema_path: Path, capture: Path) -> int:
    """Walk sbedecoder over the capture's payloads beside ours; return values compared."""
    ref_schema = MDPSchema()
    ref_schema.parse(str(schema_path))
    parser = SBEParser(MDPMessageFactory(ref_schema))
    messages = cap.messages
    g = 0
    compared = 0
    for p, payload in enumerate(udp_payloads(capture)):
        assert cap.packets["seq"][p] == int.from_bytes(payload[:4], "little")
        assert cap.packets["sending_time"][p] == int.from_bytes(payload[4:12], "little")
        for ref in parser.parse(payload, 12):
            m = messages[g]
            where = f"{capture.name} packet {p} message {g} ({ref.name})"
            assert m["packet"] == p, where
            assert m["status"] == 0, where
            assert (m["template_id"], m["version"], m["block_length"], m["size"]) == (
                ref.template_id.value,
                ref.version.value,
                ref.block_length.value,
                ref.message_size.value,
            ), where
            rows = cap.template(int(m["template_id"]))
            r = int(m["row"])
            assert rows.rows["_index"][r] == g
            assert rows.rows["_packet"][r] == p
            compared += _compare_block(rows.block, rows, r, ref.fields[5:], where)
            for container in ref.groups:
                group = rows.groups[container.original_name]
                entries = np.flatnonzero(group.rows["_msg"] == r)
                assert entries.size == container.num_groups, f"{where}.{container.original_name}"
                for e, entry in zip(entries, container.repeating_groups, strict=True):
                    compared += _compare_block(
                        group.block, group, int(e), entry.fields, f"{where}.{group.name}[{e}]"
                    )
                    assert group.rows["_parent"][e] == r
            g += 1
    assert g == cap.decoded.n_messages  # nothing more framed than sbedecoder found
    return compared


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_every_field_of_every_message_equals_sbedecoder(capture: Path) -> None:
    if not capture.is_file():
        pytest.skip(f"{capture} is not there")
    cap = decode_capture(capture, schema_for(capture))
    assert not cap.issues
    assert not cap.skipped
    compared = assert_equals_sbedecoder(cap, schema_for(capture), capture)
    assert compared > 5 * cap.decoded.n_messages  # root fields and group entries compared
    if "Example" in capture.name:
        assert dict(cap.counts()) == EXAMPLE_COUNTS


def test_the_shared_captures_are_there() -> None:
    if not DATA.is_dir():
        pytest.skip(f"{DATA} is not there")
    assert len(CAPTURES) == 7


@pytest.mark.parametrize("capture", [c for c in CAPTURES if "v1.9" in c.name], ids=lambda p: p.name)
def test_v9_senders_read_with_the_v13_schema_keep_their_fields_and_null_the_newer(
    capture: Path,
) -> None:
    v13 = DATA / "schema/Cme.Futures.Mdp3.Sbe.v1.13.xml"
    if not capture.is_file() or not v13.is_file():
        pytest.skip(f"{capture} or {v13} is not there")
    old = decode_capture(capture, schema_for(capture))
    new = decode_capture(capture, v13)
    assert not new.issues
    assert new.decoded.n_decoded == old.decoded.n_decoded
    newer = 0
    for tid, rows in old.decoded.templates.items():
        if not len(rows):
            continue  # (v9 templates that v13 dropped never came)
        assert set(new.decoded.templates[tid].rows["_version"].tolist()) == {9}
        pairs: list[tuple[Rows, Rows]] = [(rows, new.decoded.templates[tid])]
        pairs += [(g, new.decoded.templates[tid].groups[n]) for n, g in rows.groups.items()]
        for a, b in pairs:
            for name in a.rows.dtype.names or ():
                assert np.array_equal(a.rows[name], b.rows[name]), f"{a.name}.{name}"
            for c in b.block.columns:
                if c.since_version > 9 and len(b):
                    assert b.is_null(c.name).all(), f"{b.name}.{c.name}"
                    newer += 1
    if len(old.template("MDIncrementalRefreshBook46")):
        assert newer > 0  # TradeableSize (since v10) of the book entries: null
